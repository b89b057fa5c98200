/*
 * State shared by the two halves of the model builder:
 *   build_slices.c  - slices from track events, tracks, operations,
 *                     semantic nodes, parent selection, capture health;
 *   build_samples.c - sample classification and attribution, native
 *                     function trees, worker-lane intervals.
 * build_slices.c also owns the entry points and assembles the model.
 */
#ifndef DF_REPORT_BUILD_INT_H
#define DF_REPORT_BUILD_INT_H

#include "report/pftrace.h"

/* A slice reconstructed from begin/end/instant events. */
typedef struct df__bslice {
    int64_t start;          /* begin timestamp */
    int64_t end;            /* analysis end: real end, or the trace end when incomplete */
    int64_t dur;            /* duration, -1 when incomplete (no end event) */
    uint32_t track;         /* track index */
    int32_t parent;         /* enclosing slice on the same track, -1 */
    uint32_t depth;         /* nesting depth on its track */
    uint32_t name;          /* trace string id */
    uint8_t category;       /* DF__PT_CAT_* */
    uint8_t instant;        /* zero-duration instant */
    uint8_t pad[2];         /* zero */
    int32_t snode;          /* semantic node index, -1 */
    df__pt_args args;       /* begin arguments overlaid with the end arguments */
} df__bslice;

/* What a track is to the model. */
enum {
    DF__BT_OTHER = 0,       /* unrelated custom track */
    DF__BT_DIAGNOSTICS,     /* "Delta Funnel diagnostics" */
    DF__BT_OPERATION,       /* "Operation [op-N]" */
    DF__BT_PHASES,          /* "... / phases" */
    DF__BT_PLANNING,        /* "... / query [q-N] / planning" */
    DF__BT_QUERY,           /* "... / query [q-N]" */
    DF__BT_WORKER,          /* "... / worker [w-N]" */
    DF__BT_STREAM,          /* "... / Delta scan output [s-N]" */
    DF__BT_OWNER,           /* "... / owner [o-N]" */
    DF__BT_THREAD,          /* a thread track */
    DF__BT_PROCESS,         /* a process track */
};

/* A track with its derived role. */
typedef struct df__btrack {
    uint64_t uuid;          /* identity */
    int32_t parent;         /* parent track index, -1 */
    int32_t op_track;       /* ancestor-or-self operation track, -1 */
    int64_t op_id;          /* operation id parsed from the operation track's name, 0 */
    uint32_t op_distance;   /* generations below the operation track */
    uint32_t pid, tid;      /* process (all tracks under a process), thread */
    uint32_t name;          /* trace string id */
    uint8_t role;           /* DF__BT_* */
    uint8_t pad[3];         /* zero */
    uint32_t *slices;       /* slice indices on this track in start order (owned by the builder) */
    uint32_t nslices, cap;  /* count, allocated */
} df__btrack;

/* A selected operation. */
typedef struct df__bop {
    int64_t op_id;          /* operation id */
    int64_t start, end;     /* [start, analysis end) */
    uint32_t root_slice;    /* root slice index */
    int32_t root_node;      /* semantic node index of the root */
    uint32_t pid;           /* process of its track */
    int64_t scope;          /* capture_scope_id, 0 */
} df__bop;

/* A semantic node under construction. */
typedef struct df__bnode {
    uint32_t slice;         /* its slice */
    uint32_t op;            /* operation index */
    int32_t parent;         /* parent node, -1 for the root */
    uint32_t depth;         /* semantic depth */
    int64_t id;             /* semantic_id */
    uint32_t kind;          /* semantic_kind string id in the model table */
    uint8_t result_bearing; /* kind is operation/phase/query_planning/activity */
    uint8_t is_stage;       /* stage_category is set */
    uint8_t pad[2];         /* zero */
    int64_t direct;         /* direct samples */
    int64_t inclusive;      /* subtree direct samples */
    int64_t stack[DF_REPORT_STACK_CLASSES]; /* direct samples by stack class */
} df__bnode;

typedef struct df__build {
    df__pt_trace tr;        /* decoded trace */
    df_report_profile *p;   /* model being built */
    uint64_t scope;         /* capture_scope_id filter, 0 = all */
    df__bslice *slices;     /* reconstructed slices */
    size_t nslices;
    df__btrack *tracks;     /* tracks (descriptors + implicit) */
    size_t ntracks;
    df_u64map tmap;         /* uuid -> track index + 1 */
    df__bop *ops;           /* selected operations sorted by op_id */
    size_t nops;
    df__bnode *nodes;       /* semantic nodes in slice order */
    size_t nnodes;
    int64_t trace_end;      /* last timestamp of the trace */
    int64_t ambiguous_parents; /* parent choices decided by the id tie-break */
    uint32_t s_wall_clock, s_lifecycle, s_active; /* trace string ids of time semantics values (0 if absent) */
} df__build;

/* Index of the operation with op_id, or -1. */
int32_t df__build_find_op(const df__build *b, int64_t op_id);
/* Trace string of a slice argument, or NULL. */
static inline const char *df__build_arg_str(const df__build *b, const df__pt_args *a, int i) {
    return (a->str_present & (1u << i)) ? (df__report_str(&b->tr.strings, a->str[i]) ? df__report_str(&b->tr.strings, a->str[i]) : "") : NULL;
}
static inline bool df__build_has_num(const df__pt_args *a, int i) { return (a->num_present >> i) & 1u; }

/* build_samples.c: classify and attribute samples, build function trees and lanes. */
df_errkind df__build_samples(df__build *b, df_error *err);
df_errkind df__build_lanes(df__build *b, df_error *err);

#endif
