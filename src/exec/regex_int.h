/*
 * The executor's regular expression engine (private to src/exec and its
 * tests): the Rust `regex` crate syntax DataFusion's regexp functions take,
 * parsed into a tree, checked against a size and a nesting limit before
 * anything is allocated for the program, compiled into a Thompson NFA
 * program and run by a Pike VM in time linear in the subject's length.
 * Matching is leftmost-first (Perl and Rust semantics, not POSIX
 * leftmost-longest); `.` and classes match code points of UTF-8 text.
 *
 * regex_compile.c parses and compiles, regex_exec.c matches.  A compiled
 * df__regex is immutable and may be shared between threads; each matching
 * thread brings its own df__rx_scratch.
 */
#ifndef DF_EXEC_REGEX_INT_H
#define DF_EXEC_REGEX_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Compile flags, the Rust inline flags of the same letters. */
#define DF__RX_ICASE 0x01u      /* i: simple Unicode case folding */
#define DF__RX_MULTILINE 0x02u  /* m: ^ and $ also match at line boundaries */
#define DF__RX_DOTALL 0x04u     /* s: . matches \n too */
#define DF__RX_SWAP_GREED 0x08u /* U: x* is lazy and x*? greedy */
#define DF__RX_VERBOSE 0x10u    /* x: whitespace and # comments are ignored */
#define DF__RX_ASCII 0x20u      /* -u: \w \d \s \b are ASCII only */

/* The compiled program's size bound (bytes of instructions and class ranges), as Rust's default. */
#define DF__RX_SIZE_LIMIT ((size_t)10 << 20)
/* How deep groups, repetitions and classes may nest, as Rust's default. */
#define DF__RX_NEST_LIMIT 250
/* Matching checks the cancel flag once per this many subject positions. */
#define DF__RX_CANCEL_EVERY 4096

/* Program operations. */
enum {
    DF__RX_OP_CHAR,   /* x = the code point */
    DF__RX_OP_CLASS,  /* ranges[x .. x + y) sorted, disjoint */
    DF__RX_OP_ANY,    /* any code point */
    DF__RX_OP_ANY_NL, /* any code point but \n */
    DF__RX_OP_SPLIT,  /* continue at x (preferred) and y */
    DF__RX_OP_JMP,    /* continue at x */
    DF__RX_OP_SAVE,   /* record the position in capture slot x */
    DF__RX_OP_ASSERT, /* zero-width test x (DF__RX_AS_*) */
    DF__RX_OP_MATCH,  /* a match ends here */
};

/* Zero-width assertions. */
enum {
    DF__RX_AS_TEXT_START,  /* \A, or ^ without m */
    DF__RX_AS_TEXT_END,    /* \z, or $ without m */
    DF__RX_AS_LINE_START,  /* ^ with m */
    DF__RX_AS_LINE_END,    /* $ with m */
    DF__RX_AS_WORD,        /* \b */
    DF__RX_AS_NOT_WORD,    /* \B */
    DF__RX_AS_WORD_START,  /* \< or \b{start} */
    DF__RX_AS_WORD_END,    /* \> or \b{end} */
    DF__RX_AS_ASCII = 16,  /* added to the word kinds under -u */
};

typedef struct df__rx_inst {
    uint8_t op;                 /* DF__RX_OP_* */
    uint32_t x;                 /* first operand (see the ops) */
    uint32_t y;                 /* second operand */
} df__rx_inst;

typedef struct df__rx_range {
    uint32_t lo;                /* first code point */
    uint32_t hi;                /* last code point (inclusive) */
} df__rx_range;

typedef struct df__regex {
    df__rx_inst *prog;          /* the program; starts at 0 */
    uint32_t ninst;             /* instructions */
    df__rx_range *ranges;       /* class ranges the CLASS instructions point into */
    uint32_t nranges;           /* entries in ranges */
    uint32_t ngroups;           /* capture groups including group 0 (the whole match) */
    char *names;                /* per group a NUL-terminated name ("" unnamed), back to back */
    uint32_t *name_off;         /* ngroups offsets into names */
    uint8_t *prefix;            /* literal bytes every match starts with (a search prefilter) */
    uint32_t nprefix;           /* bytes in prefix (0 = none) */
    bool anchored;              /* every match starts at the text start */
} df__regex;

/*
 * Compiles pattern p[0..n) with DF__RX_* flags.  *out receives an owned
 * regex (df__regex_free), NULL on failure.  Errors are DF_ERR_EXECUTION
 * with subkind DF_ERR_REGEX_SYNTAX (the message names the problem and its
 * byte offset) or DF_ERR_REGEX_TOO_BIG (nesting or compiled size over the
 * limits, found before the program is allocated), or out of memory.
 */
df_errkind df__regex_new(const uint8_t *p, size_t n, uint32_t flags, df__regex **out, df_error *err);
/* Frees a regex; accepts NULL. */
void df__regex_free(df__regex *re);
/* Group number of a named group, or -1. */
int32_t df__regex_group_named(const df__regex *re, const uint8_t *name, size_t n);

/* Per-thread matching memory, reused across searches; zero-initialise, free with df__rx_scratch_free. */
typedef struct df__rx_scratch {
    uint32_t cap_inst;          /* instructions the lists are sized for */
    uint32_t cap_slots;         /* slots per thread the capture tables are sized for */
    uint32_t *sparse[2];        /* per list: pc -> dense index */
    uint32_t *dense[2];         /* per list: the pcs in priority order */
    int64_t *slots[2];          /* per list: cap_slots positions per dense entry */
    uint32_t n[2];              /* per list: threads */
    uint32_t *stack;            /* closure work stack (pcs and slot restores) */
    int64_t *stack_val;         /* saved slot values of restore frames */
    uint32_t cap_stack;         /* entries in stack / stack_val */
    int64_t *tmp;               /* the slots of the thread being followed */
} df__rx_scratch;
void df__rx_scratch_free(df__rx_scratch *sc);

/*
 * Finds the leftmost-first match in s[0..n) starting at byte `from` or
 * later (assertions see the bytes before `from`).  slots, when not NULL,
 * receives nslots positions (start and end byte of group g at 2g, 2g+1;
 * -1 for groups that did not take part); nslots may be fewer than
 * 2 * ngroups.  With slots NULL only whether a match exists is computed,
 * which may stop earlier.  *found tells.  `cancel`, when not NULL, names
 * flags read every DF__RX_CANCEL_EVERY positions: DF_ERR_CANCELLED once
 * one is set.
 */
typedef struct df__rx_cancel {
    const _Atomic bool *flag[2];    /* flags to poll (NULL entries are skipped): an execution's own and its caller's */
} df__rx_cancel;
df_errkind df__regex_find(const df__regex *re, df__rx_scratch *sc, const uint8_t *s, size_t n, size_t from,
                          int64_t *slots, uint32_t nslots, const df__rx_cancel *cancel, bool *found, df_error *err);

/* Decodes one code point at s[0..n) (n >= 1) into *cp; returns its length (invalid bytes: U+FFFD, 1). */
uint32_t df__rx_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* True when cp is a word character (\w; ASCII only when `ascii`). */
bool df__rx_is_word(uint32_t cp, bool ascii);

#endif
