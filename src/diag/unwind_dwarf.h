/*
 * DWARF unwinding of stack snapshots (see unwind_dwarf.c).  Used by the
 * collector only (one thread), never in a signal handler.
 */
#ifndef DF_DIAG_UNWIND_DWARF_H
#define DF_DIAG_UNWIND_DWARF_H

#include "common/common.h"

/* Registers kept with a snapshot, in DWARF numbering (x86-64: rax..r15 = 0..15, rip = 16). */
#define DF_DIAG_UNWIND_REGS 17
#define DF_DIAG_UNWIND_SP 7
#define DF_DIAG_UNWIND_PC 16

typedef struct df__diag_unwinder df__diag_unwinder;

/*
 * Creates an unwinder over this process's modules.  DF_ERR_NOT_AVAILABLE
 * without libdw (or when libdwfl cannot start); DF_ERR_OUT_OF_MEMORY.
 */
df_errkind df__diag_unwinder_create(df__diag_unwinder **out, df_error *err);
/*
 * Unwinds a snapshot of thread `tid`: `regs` as above, `stack` the
 * `stack_len` bytes that were at the stack pointer (regs[DF_DIAG_UNWIND_SP])
 * when the sample was taken.  Writes at most `max` program counters to out
 * (leaf first; out[0] is the exact PC, the others return addresses) and
 * returns their count (0 when nothing could be unwound).
 */
uint32_t df__diag_unwind(df__diag_unwinder *u, uint32_t tid, const uint64_t *regs, const uint8_t *stack,
                         size_t stack_len, uint64_t *out, uint32_t max);
void df__diag_unwinder_destroy(df__diag_unwinder *u);
/* True when this build can unwind with DWARF. */
bool df__diag_unwinder_available(void);

#endif
