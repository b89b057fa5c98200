/*
 * Private structures of the diagnostics module: span frames, thread state,
 * event records, operations and queries, and the process-wide runtime
 * (thread registry, event chunk pool, capture generation).
 *
 * Why process-wide state: the span stack is per thread and the sampler is
 * per process (signals, perf events), so the registry of threads, the pool
 * of event chunks and the "capture active" generation are necessarily
 * global.  Everything else hangs off an operation or a capture.
 */
#ifndef DF_DIAG_DIAG_INT_H
#define DF_DIAG_DIAG_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "diag/capture.h"
#include "diag/diag.h"

/* Depth of a thread's span stack; deeper spans are not recorded (counted). */
#define DF_DIAG_MAX_DEPTH 128
/* Bytes of one event chunk (a thread fills one, hands it to the collector). */
#define DF_DIAG_CHUNK_BYTES (64u * 1024u)
/* Default operator-activity budget: activities one operation records before only task roots are kept. */
#define DF_DIAG_DEFAULT_MAX_SPANS 100000u
/* Maximum interned names and their length. */
#define DF_DIAG_MAX_NAMES 65536u
#define DF_DIAG_MAX_NAME_LEN 255u

/* What a frame / span record is. */
typedef enum df_diag_span_kind {
    DF_DIAG_SK_OPERATION = 1, /* operation root */
    DF_DIAG_SK_PHASE = 2,     /* Planning / Execution / Finalization */
    DF_DIAG_SK_STAGE = 3,     /* named stage */
    DF_DIAG_SK_PLANNING = 4,  /* DataFusion query planning */
    DF_DIAG_SK_TASK = 5,      /* task context (partition task or entered context) */
    DF_DIAG_SK_ACTIVITY = 6,  /* operator activity */
    DF_DIAG_SK_DETAIL = 7,    /* dependency span */
    DF_DIAG_SK_AWAIT = 8,     /* Await Delta scan output (async, not on a stack) */
} df_diag_span_kind;

/* Semantic tracks (each comment gives the track's name).  NONE = context-only (thread track). */
typedef enum df_diag_track_kind {
    DF_DIAG_TK_NONE = 0,
    DF_DIAG_TK_DIAGNOSTICS = 1, /* "Delta Funnel diagnostics" */
    DF_DIAG_TK_OPERATION = 2,   /* "Operation [op-N]" */
    DF_DIAG_TK_PHASES = 3,      /* "Operation [op-N] / phases" */
    DF_DIAG_TK_PLANNING = 4,    /* "Operation [op-N] / query [q-N] / planning" */
    DF_DIAG_TK_QUERY = 5,       /* "Operation [op-N] / query [q-N]" */
    DF_DIAG_TK_WORKER = 6,      /* ".../ worker [w-N]" */
    DF_DIAG_TK_STREAM = 7,      /* ".../ Delta scan output [s-N]" */
    DF_DIAG_TK_OWNER = 8,       /* "Operation [op-N] / owner [o-N]" */
} df_diag_track_kind;

/*
 * Worker lane kinds (df_diag_worker_kind, DF_DIAG_WK_*), time semantics
 * (DF_DIAG_TS_*) and diag's own activities (DF_DIAG_ACTIVITY_AWAIT_OUTPUT,
 * DF_DIAG_ACTIVITY_SPAWNED_TASK) are in diag/names.h.
 */

/* Identifies a semantic track; the writer derives its name and UUID. */
typedef struct df_diag_track_key {
    uint8_t kind;      /* df_diag_track_kind */
    uint8_t pad[7];    /* zero */
    uint64_t op_id;    /* operation id (all kinds but DIAGNOSTICS) */
    uint64_t query_id; /* query_execution_id (PLANNING, QUERY, WORKER, STREAM) */
    uint64_t sub_id;   /* worker lane (WORKER), stream id (STREAM), owner id (OWNER) */
} df_diag_track_key;

/* Identity arguments of a span (written as debug annotations); "absent" values noted. */
typedef struct df_diag_ident {
    uint64_t operation_id;        /* always set for traced spans */
    uint64_t capture_scope_id;    /* 0 = absent */
    uint64_t query_execution_id;  /* 0 = absent */
    uint64_t worker_lane_id;      /* meaningful when worker_kind != 0 */
    int64_t node_id;              /* -1 = absent */
    int64_t parent_node_id;       /* -1 = absent */
    int64_t operator_partition;   /* -1 = absent */
    uint64_t execution_stream_id; /* 0 = absent */
    uint64_t stage_owner_id;      /* 0 = absent */
    uint64_t profile_context_id;  /* 0 = absent (set on task contexts) */
    uint32_t query_owner_id;      /* interned query owner, 0 = absent */
    uint8_t query_scope;          /* df_diag_query_scope, 0 = absent */
    uint8_t worker_kind;          /* df_diag_worker_kind */
    uint8_t activity;             /* df_diag_activity or internal value, 0 = absent */
    uint8_t op_kind;              /* operation_kind (roots and stages), 0 = absent */
    uint16_t stage;               /* df_diag_stage (stage_name + stage_category), 0 = absent */
    uint8_t time_semantics;       /* DF_DIAG_TS_* */
    uint8_t phase;                /* df_diag_phase on phase spans, 0 otherwise */
} df_diag_ident;

/* Event record types. */
enum { DF_DIAG_EV_BEGIN = 1, DF_DIAG_EV_END = 2, DF_DIAG_EV_INSTANT = 3 };
/* Instant kinds. */
enum {
    DF_DIAG_IK_DIAGNOSTIC_GROUP = 1, /* "Delta Funnel diagnostic group" on diagnostics */
    DF_DIAG_IK_TRUNCATED = 2,        /* "Operator activity trace truncated" on the operation */
    DF_DIAG_IK_QUERY = 3,            /* "DataFusion query" on the query track */
};
/* Flags of begin/end records. */
enum {
    DF_DIAG_EVF_CONTEXT = 1,     /* also a context slice on the writing thread's track */
    DF_DIAG_EVF_PARENT_NODE = 2, /* end: parent_node_id is set */
    DF_DIAG_EVF_OWNER = 4,       /* end: query_owner_id is set */
};

/* Common prefix of every record; records are 8-byte aligned in chunks. */
typedef struct df_diag_ev_head {
    uint16_t size; /* bytes of the whole record */
    uint8_t type;  /* DF_DIAG_EV_* */
    uint8_t kind;  /* span kind (begin/end) or instant kind */
    uint32_t tid;  /* writing thread */
} df_diag_ev_head;

typedef struct df_diag_ev_begin {
    df_diag_ev_head h;       /* type BEGIN, kind = span kind */
    uint32_t name_id;        /* operator name id (activities), detail (details), else 0 */
    uint32_t flags;          /* DF_DIAG_EVF_* */
    uint64_t serial;         /* span serial, matches the end record */
    uint64_t ts;             /* CLOCK_MONOTONIC ns */
    df_diag_track_key track; /* semantic track; kind NONE = context only */
    df_diag_ident ident;     /* identity arguments */
} df_diag_ev_begin;

typedef struct df_diag_ev_end {
    df_diag_ev_head h;       /* type END, kind = span kind */
    uint8_t result;          /* df_diag_result (UNSET recorded as cancelled) */
    uint8_t pad[3];          /* zero */
    uint32_t flags;          /* DF_DIAG_EVF_* */
    uint32_t query_owner_id; /* late query owner (EVF_OWNER) */
    uint64_t serial;         /* span serial */
    uint64_t ts;             /* CLOCK_MONOTONIC ns */
    int64_t parent_node_id;  /* late parent node (EVF_PARENT_NODE) */
    df_diag_track_key track; /* same track as the begin record */
} df_diag_ev_end;

typedef struct df_diag_ev_instant {
    df_diag_ev_head h;       /* type INSTANT, kind = instant kind */
    uint64_t ts;             /* CLOCK_MONOTONIC ns */
    uint64_t maximum_spans;  /* TRUNCATED: the budget */
    df_diag_track_key track; /* where it goes */
    df_diag_ident ident;     /* args (QUERY: query identity; others: operation id only) */
} df_diag_ev_instant;

struct df_diag_timing_slot;
struct df_diag_thread;

/* One active span on a thread's stack. */
struct df_diag_frame {
    uint64_t serial;                   /* span serial; 0 while the slot is free */
    uint64_t begin_ns;                 /* monotonic begin */
    df_diag_operation *op;             /* owning operation */
    df_diag_query *query;              /* query, or NULL */
    struct df_diag_timing_slot *slot;  /* timing slot (operation, phase, stage), or NULL */
    uint8_t kind;                      /* df_diag_span_kind */
    uint8_t traced;                    /* begin record written: write the end record */
    uint8_t lane_acquired;             /* this frame owns `ident.worker_lane_id` and releases it */
    uint8_t pad;                       /* zero */
    uint32_t name_id;                  /* as in the begin record */
    df_diag_track_key track;           /* semantic track */
    df_diag_ident ident;               /* identity (inherited by details and contexts) */
    int64_t late_parent_node;          /* parent_node_id set after begin, or INT64_MIN */
};
typedef struct df_diag_frame df_diag_frame;

/* Per-thread state; allocated on a thread's first span, freed at thread exit. */
typedef struct df_diag_thread {
    _Atomic uint32_t depth;            /* frames in use; the signal handler reads it */
    uint32_t tid;                      /* kernel thread id */
    uintptr_t stack_lo, stack_hi;      /* stack bounds for unwinding (0 if unknown) */
    struct df_diag_chunk *chunk;       /* current event chunk, or NULL */
    uint64_t serial_next, serial_end;  /* block of span serials reserved from the runtime */
    uint64_t budget_uid;               /* uid of the operation whose budget units are cached */
    uint64_t budget_units;             /* units of budget_op reserved and not yet used */
    struct df_diag_thread *next, *prev;/* registry links (runtime registry lock) */
    void *sampler;                     /* per-thread sampler state (sampler.c), or NULL */
    df_diag_frame frames[DF_DIAG_MAX_DEPTH]; /* the span stack */
} df_diag_thread;

/* An event chunk: one writer thread appends, the collector reads. */
typedef struct df_diag_chunk {
    struct df_diag_chunk *next;  /* queue / free-list link (pool lock) */
    uint64_t generation;         /* capture generation the records belong to */
    uint32_t tid;                /* writer thread */
    _Atomic uint32_t committed;  /* bytes published by the writer (release) */
    uint32_t read_pos;           /* bytes already consumed by the collector */
    uint32_t cap;                /* bytes of data[] */
    _Alignas(8) unsigned char data[]; /* records */
} df_diag_chunk;

/* Timing accumulator of one (span kind, stage/phase, owner). */
typedef struct df_diag_timing_slot {
    struct df_diag_timing_slot *next; /* operation's slot list */
    uint8_t kind;                     /* span kind: OPERATION, PHASE or STAGE */
    uint16_t which;                   /* phase or stage */
    uint64_t owner_id;                /* stage owner */
    uint32_t open;                    /* begun, not ended */
    uint32_t count;                   /* ended */
    uint32_t errors;                  /* ended with error */
    uint32_t cancels;                 /* ended cancelled / unset */
    uint64_t elapsed_ns;              /* sum of ended durations */
    uint64_t first_begin_ns;          /* first begin, 0 if none */
    uint64_t last_end_ns;             /* last end, 0 if none */
} df_diag_timing_slot;

/* A worker lane of a query: tasks and activities run on lanes, which never overlap in time. */
typedef struct df_diag_lane {
    uint64_t id;   /* from 1 */
    uint8_t kind;  /* RUNTIME or EXTERNAL */
    uint8_t busy;  /* held by an active task/activity */
} df_diag_lane;

struct df_diag_query {
    df_diag_operation *op;          /* owner */
    struct df_diag_query *next;     /* operation's list */
    uint64_t id;                    /* query_execution_id */
    uint8_t scope;                  /* df_diag_query_scope */
    _Atomic uint32_t owner_id;      /* interned owner, 0 = none */
    _Atomic uint64_t next_stream;   /* execution_stream_id counter */
    pthread_mutex_t lane_mu;        /* guards lanes */
    df_diag_lane *lanes;            /* lanes in id order */
    uint32_t nlanes, lanes_cap;     /* used / allocated */
};

struct df_diag_operation {
    df_diag_op_kind kind;           /* operation kind */
    uint64_t uid;                   /* process-unique (a span serial), for per-thread caches */
    uint64_t id;                    /* operation id, 0 = not traced */
    uint64_t generation;            /* capture generation it is traced in, 0 = none */
    uint64_t scope_id;              /* capture_scope_id, 0 = whole process */
    uint64_t budget;                /* max_operator_activity_spans */
    _Atomic uint64_t budget_used;   /* units handed out */
    _Atomic int truncated;          /* the marker was emitted */
    pthread_mutex_t mu;             /* guards slots, queries */
    df_diag_timing_slot *slots;     /* timing slots */
    df_diag_query *queries;         /* registered queries */
    _Atomic uint64_t next_query;    /* query_execution_id counter */
    df_diag_span root;              /* root span on the beginning thread */
    df_diag_timing_slot *root_slot; /* root timing */
    bool ended;                     /* df_diag_operation_end was called */
    uint64_t elapsed_ns;            /* root elapsed, once ended */
};

/* ------------------------------------------------------------------------ */
/* Runtime (runtime.c).                                                      */

/* The current capture generation (0 = no capture). */
extern _Atomic uint64_t df__diag_generation;

/* Returns the calling thread's state, creating and registering it; NULL on OOM. */
df_diag_thread *df__diag_thread_get(void);
/* Returns the calling thread's state if it exists (async-signal-safe). */
df_diag_thread *df__diag_thread_peek(void);
/* A fresh process-unique span serial (never 0). */
uint64_t df__diag_serial(df_diag_thread *t);
/* Reserves `size` bytes (multiple of 8) for a record in generation `gen`; NULL = lost. */
void *df__diag_event_reserve(df_diag_thread *t, uint64_t gen, size_t size);
/* Publishes the record reserved last. */
void df__diag_event_commit(df_diag_thread *t, size_t size);
/* Counters. */
void df__diag_count_misuse(void);
void df__diag_count_overflow(void);
uint64_t df__diag_events_lost(void);

/*
 * Capture generation control (capture.c): begin a generation with a chunk
 * memory cap; end it.  Drain: calls fn for every record of `gen` published
 * so far (in per-thread order), then recycles fully read chunks.  With
 * `live`, also reads the partially filled chunks threads still hold.
 */
uint64_t df__diag_generation_begin(size_t buffer_bytes);
void df__diag_generation_end(void);
typedef df_errkind (*df_diag_record_fn)(void *user, const df_diag_ev_head *rec, df_error *err);
df_errkind df__diag_drain(uint64_t gen, bool live, df_diag_record_fn fn, void *user, df_error *err);
/* Iterates registered threads under the registry lock (sampler attach). */
void df__diag_threads_foreach(void (*fn)(df_diag_thread *t, void *user), void *user);
/* Hook run by a thread when it registers (sampler attach), under no lock; may be NULL. */
extern void (*_Atomic df__diag_thread_start_hook)(df_diag_thread *t);
/* Hook run by a thread at exit before its state is freed; may be NULL. */
extern void (*_Atomic df__diag_thread_exit_hook)(df_diag_thread *t);

/* Allocation of process-wide identities (never wrap: 0 = exhausted). */
uint64_t df__diag_next_operation_id(void);
uint64_t df__diag_next_scope_id(void);
uint64_t df__diag_next_context_id(void);
/* Test hook: sets the next operation id (to test exhaustion). */
void df__diag_set_next_operation_id(uint64_t next);

/* Capture parameters for operations begun in the active generation (capture.c). */
uint64_t df__diag_capture_scope_id(void);
uint64_t df__diag_capture_budget(void);
/* False when an operation-scoped capture is active and `t` is not the thread that started it. */
bool df__diag_capture_traces_thread(const df_diag_thread *t);

/* Span names (names.c): the exact slice name of a span record. */
const char *df__diag_span_name(uint8_t kind, uint32_t name_id, const df_diag_ident *ident);
const char *df__diag_instant_name(uint8_t kind);

#endif
