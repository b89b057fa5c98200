/*
 * DWARF call-frame unwinding of stack snapshots, for code built without
 * frame pointers (system libraries, the Python interpreter).
 *
 * The timer sampler's signal handler walks frame pointers; when that walk
 * stops at once (the interrupted code keeps no frame pointer), the handler
 * copies the registers and the top of the stack (a bounded snapshot) into
 * the sample instead.  Here, on the collector thread and never in a signal
 * handler, elfutils' libdwfl unwinds that snapshot with each module's
 * .eh_frame call-frame information: registers come from the snapshot, and
 * every stack read must fall inside it (reads outside end the unwinding,
 * they are never taken from the live stack, which has moved on).
 *
 * Modules are the process's file mappings (/proc/self/maps), re-read (at
 * most every 100 ms) when a program counter lies in none of them.  No
 * debug file is looked for: .eh_frame is in the loaded files themselves.
 *
 * Without libdw (DF_HAVE_LIBDW unset) the unwinder does nothing and the
 * frame-pointer result stays.
 */
#include "diag/unwind_dwarf.h"

#include <string.h>
#include <unistd.h>

#ifdef DF_HAVE_LIBDW
#include <elfutils/libdwfl.h>

#define REPORT_MIN_INTERVAL_NS (100u * 1000u * 1000u)

struct df__diag_unwinder {
    Dwfl *dwfl;                /* the process's modules and unwinding state */
    bool attached;             /* dwfl_attach_state succeeded */
    uint64_t last_report_ns;   /* monotonic time of the last module report */
    /* The sample being unwound (set around dwfl_getthread_frames). */
    const uint64_t *regs;      /* DF_DIAG_UNWIND_REGS registers, DWARF numbering */
    const uint8_t *stack;      /* snapshot bytes */
    uint64_t stack_addr;       /* address of stack[0] (the interrupted stack pointer) */
    size_t stack_len;          /* snapshot length */
    uint64_t *out;             /* frames found, leaf first */
    uint32_t n, max;           /* found / room */
};

/* No separate debug files: .eh_frame of the loaded file is enough to unwind. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name) {
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
    (void)debuglink_crc, (void)debuginfo_file_name;
    return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = no_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp) {
    (void)dwfl, (void)dwfl_arg, (void)thread_argp;
    return 0; /* threads are named explicitly, never iterated */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp) {
    (void)dwfl, (void)tid;
    *thread_argp = dwfl_arg;
    return true;
}

/* Reads one word of the snapshot; anything else is unknown. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg) {
    (void)dwfl;
    const df__diag_unwinder *u = dwfl_arg;
    if (addr < u->stack_addr || addr - u->stack_addr > u->stack_len || u->stack_len - (addr - u->stack_addr) < 8)
        return false;
    memcpy(result, u->stack + (addr - u->stack_addr), sizeof *result);
    return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg) {
    const df__diag_unwinder *u = thread_arg;
    Dwarf_Word regs[DF_DIAG_UNWIND_REGS];
    for (int i = 0; i < DF_DIAG_UNWIND_REGS; i++) regs[i] = u->regs[i];
    return dwfl_thread_state_registers(thread, 0, DF_DIAG_UNWIND_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static int on_frame(Dwfl_Frame *state, void *arg) {
    df__diag_unwinder *u = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation) || pc < 4096) return DWARF_CB_ABORT;
    u->out[u->n++] = pc;
    return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* (Re)reads the process's modules; false when nothing is known. */
static bool report_modules(df__diag_unwinder *u) {
    u->last_report_ns = df_now_ns();
    dwfl_report_begin_add(u->dwfl);
    int rc = dwfl_linux_proc_report(u->dwfl, getpid());
    dwfl_report_end(u->dwfl, NULL, NULL);
    if (rc != 0) return false;
    if (!u->attached) u->attached = dwfl_attach_state(u->dwfl, NULL, getpid(), &thread_callbacks, u);
    return u->attached;
}

df_errkind df__diag_unwinder_create(df__diag_unwinder **out, df_error *err) {
    *out = NULL;
    df__diag_unwinder *u = df_calloc(1, sizeof *u);
    if (!u) return DF_OOM(err);
    u->dwfl = dwfl_begin(&proc_callbacks);
    if (!u->dwfl) {
        df_free(u);
        return df_error_set(err, DF_ERR_NOT_AVAILABLE, "libdwfl cannot be initialised");
    }
    report_modules(u);
    *out = u;
    return DF_OK;
}

uint32_t df__diag_unwind(df__diag_unwinder *u, uint32_t tid, const uint64_t *regs, const uint8_t *stack,
                         size_t stack_len, uint64_t *out, uint32_t max) {
    if (!u || !u->attached || max == 0) return 0;
    uint64_t pc = regs[DF_DIAG_UNWIND_PC];
    if (!dwfl_addrmodule(u->dwfl, pc) && df_now_ns() - u->last_report_ns >= REPORT_MIN_INTERVAL_NS)
        report_modules(u);
    u->regs = regs;
    u->stack = stack;
    u->stack_addr = regs[DF_DIAG_UNWIND_SP];
    u->stack_len = stack_len;
    u->out = out;
    u->n = 0;
    u->max = max;
    (void)dwfl_getthread_frames(u->dwfl, (pid_t)tid, on_frame, u);
    u->regs = NULL;
    u->stack = NULL;
    return u->n;
}

void df__diag_unwinder_destroy(df__diag_unwinder *u) {
    if (!u) return;
    if (u->dwfl) dwfl_end(u->dwfl);
    df_free(u);
}

bool df__diag_unwinder_available(void) { return true; }

#else

struct df__diag_unwinder {
    int unused; /* no libdw: nothing to hold */
};

df_errkind df__diag_unwinder_create(df__diag_unwinder **out, df_error *err) {
    *out = NULL;
    return df_error_set(err, DF_ERR_NOT_AVAILABLE, "built without elfutils libdw: no DWARF unwinding");
}

uint32_t df__diag_unwind(df__diag_unwinder *u, uint32_t tid, const uint64_t *regs, const uint8_t *stack,
                         size_t stack_len, uint64_t *out, uint32_t max) {
    (void)u, (void)tid, (void)regs, (void)stack, (void)stack_len, (void)out, (void)max;
    return 0;
}

void df__diag_unwinder_destroy(df__diag_unwinder *u) { (void)u; }

bool df__diag_unwinder_available(void) { return false; }

#endif
