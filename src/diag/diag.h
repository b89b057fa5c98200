/*
 * diag: semantic spans, phase timings and (when a capture is running)
 * Perfetto traces with native CPU samples.
 *
 * The model (reference diagnostics-spec section 1):
 *
 *   operation  (Delta Funnel preview | SQL Server write | SQL Server write_all)
 *     phase    (Planning -> Execution -> Finalization)
 *       stage  (exact stage names, e.g. "DataFrame planning", optional owner)
 *     query    (one per planned query: planning span, worker lanes)
 *       task   (a partition task entered on a pool thread: one worker lane)
 *         activity (operator execute / poll_next, nested)
 *           detail   (reader / protocol sub-steps, inherit the parent identity)
 *
 * Threads keep a stack of active spans in thread-local storage.  Beginning a
 * span pushes a frame, ending it pops the frame; nothing is locked and, in
 * steady state, nothing is allocated.  The stack is what the native sampler
 * reads when a sample is taken, so every sample is attributed to the span
 * that was current on its thread at that instant.
 *
 * Costs:
 *   - Operations, phases and stages are always timed (they feed
 *     Preview.phase_timings and write reports): a clock read per begin/end.
 *   - Queries, tasks, activities, await spans and details are recorded only
 *     when a capture was active when the operation began.  Otherwise
 *     df_diag_query_begin() yields a NULL query and every call taking a query
 *     is an inline NULL test: one predictable branch.  Details and context
 *     propagation test one process-wide flag.
 *
 * Usage from the session (preview):
 *
 *   df_diag_operation *op;
 *   DF_TRY(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, err));
 *   df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_PLANNING);
 *   df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
 *   ...
 *   df_diag_span_end(st, DF_DIAG_RESULT_OK);
 *   df_diag_span_end(ph, DF_DIAG_RESULT_OK);
 *   ...
 *   df_diag_operation_end(op, DF_DIAG_RESULT_OK);
 *   df_diag_timing t = df_diag_operation_stage_timing(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
 *   df_diag_operation_destroy(op);
 *
 * Usage from the executor (per query; q may be NULL = not recorded):
 *
 *   df_diag_query *q;  df_diag_query_begin(op, DF_DIAG_QUERY_PREVIEW, NULL, &q, err);
 *   df_diag_span pl = df_diag_query_planning_begin(q);  ... df_diag_span_end(pl, OK);
 *   uint32_t name = df_diag_name_intern("FilterExec");          (at plan time)
 *   on a pool thread, when partition task p starts:
 *     df_diag_span task = df_diag_task_begin(q, p);
 *     df_diag_span a = df_diag_activity_begin(q, &node, DF_DIAG_ACTIVITY_POLL_NEXT, p, stream_id);
 *     ... df_diag_span_end(a, DF_DIAG_RESULT_BATCH);
 *     df_diag_span_end(task, DF_DIAG_RESULT_OK);
 *
 * Rules every caller must follow:
 *   - A span returned by a *_begin function that returns df_diag_span is
 *     ended on the thread that began it, in LIFO order.  Ending a span that
 *     is not on top first ends the spans above it as `cancelled`.  A span
 *     ended on the wrong thread, twice, or after its operation was destroyed
 *     is ignored (no crash; counted in df_diag_misuse_count()).
 *   - Spans of an operation are ended before df_diag_operation_destroy();
 *     tasks that captured a df_diag_context finish before it too.
 *   - Names passed to df_diag_name_intern() and query owners must not carry
 *     secrets (no SQL text, paths with credentials, connection strings).
 *
 * Nothing here prints, exits or aborts.  Functions that can fail return a
 * df_errkind; span functions cannot fail (when a span cannot be recorded it
 * is the empty span, which every function accepts).
 */
#ifndef DF_DIAG_DIAG_H
#define DF_DIAG_DIAG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* Vocabulary.                                                               */

/*
 * Operation kinds (df_diag_op_kind: DF_DIAG_OP_PREVIEW, ...), phases,
 * results, query scopes, activities, stages (DF_DIAG_STAGE_*), details
 * (DF_DIAG_DETAIL_*) and their exact names (df_diag_stage_name(), ...) come
 * from the one list, diag/diag_names.def, through diag/names.h.
 */
#include "diag/names.h"

/* ------------------------------------------------------------------------ */
/* Spans.                                                                    */

struct df_diag_frame;

/*
 * A span begun on the calling thread.  Small, passed by value.  The empty
 * span (frame == NULL) is returned whenever nothing is recorded; ending it
 * costs one branch.
 */
typedef struct df_diag_span {
    struct df_diag_frame *frame; /* slot on the beginning thread's stack; NULL = empty span */
    uint64_t serial;             /* process-unique span serial; detects stale or foreign ends */
} df_diag_span;

#define DF_DIAG_SPAN_NONE ((df_diag_span){NULL, 0})

uint64_t df__diag_span_end(df_diag_span span, df_diag_result result);

/*
 * Ends a span with a result.  Returns its elapsed monotonic nanoseconds (0
 * for the empty span or an ignored misuse).  Spans above it on the thread's
 * stack are ended first as `cancelled`.
 */
static inline uint64_t df_diag_span_end(df_diag_span span, df_diag_result result) {
    if (DF_LIKELY(span.frame == NULL)) return 0;
    return df__diag_span_end(span, result);
}

/* True if the span records something. */
static inline bool df_diag_span_active(df_diag_span span) { return span.frame != NULL; }

/* ------------------------------------------------------------------------ */
/* Operations.                                                               */

typedef struct df_diag_operation df_diag_operation;

typedef struct df_diag_operation_options {
    /*
     * Operator-activity budget (spec 1.5) when the active capture does not
     * set one; 0 = the default 100,000.
     */
    uint64_t max_operator_activity_spans;
} df_diag_operation_options;

/*
 * Begins an operation: allocates its timing recorder and pushes the root span
 * on the calling thread.  When a capture is active the operation is traced:
 * it gets an operation id (process-wide, from 1, never wrapping) and the
 * capture's scope id and budget.  `opts` may be NULL.
 * On success *out owns the operation (free with df_diag_operation_destroy).
 * Fails with DF_ERR_INVALID_ARGUMENT (unknown kind) or DF_ERR_OUT_OF_MEMORY;
 * then *out is NULL.
 */
df_errkind df_diag_operation_begin(df_diag_op_kind kind, const df_diag_operation_options *opts,
                                   df_diag_operation **out, df_error *err);

/*
 * Ends the root span (on the thread that began the operation) with `result`;
 * open phases and stages of this thread above it end as cancelled.  Returns
 * the elapsed nanoseconds.  Later calls return the same value and record
 * nothing.  Accepts NULL (returns 0).
 */
uint64_t df_diag_operation_end(df_diag_operation *op, df_diag_result result);

/*
 * Frees the operation and its queries.  Ends it as cancelled first if it was
 * not ended.  Accepts NULL.  Every span of the operation must have ended.
 */
void df_diag_operation_destroy(df_diag_operation *op);

/* The trace identity (0 when the operation is not traced).  Accepts NULL. */
uint64_t df_diag_operation_id(const df_diag_operation *op);
/* True if a capture records this operation. */
bool df_diag_operation_traced(const df_diag_operation *op);
df_diag_op_kind df_diag_operation_kind(const df_diag_operation *op);

/* Begins a phase on the calling thread ("Planning", ...). */
df_diag_span df_diag_phase_begin(df_diag_operation *op, df_diag_phase phase);

/*
 * Begins a stage on the calling thread.  owner_id 0 puts it on the phases
 * track; otherwise on "Operation [op-...] / owner [o-...]" (single write:
 * owner 1; write_all: the 1-based output index).  A stage that does not
 * belong to the operation kind returns the empty span.
 */
df_diag_span df_diag_stage_begin(df_diag_operation *op, df_diag_stage stage, uint64_t owner_id);

/* ------------------------------------------------------------------------ */
/* Phase timings: what the session reports, from the same spans.            */

typedef enum df_diag_timing_state {
    DF_DIAG_TIMING_NOT_STARTED = 0, /* never begun */
    DF_DIAG_TIMING_RUNNING = 1,     /* an instance is still open */
    DF_DIAG_TIMING_COMPLETED = 2,   /* every instance ended ok (or a non-error result) */
    DF_DIAG_TIMING_FAILED = 3,      /* some instance ended with error */
    DF_DIAG_TIMING_CANCELLED = 4,   /* no error, but some instance ended cancelled/unset */
} df_diag_timing_state;

typedef struct df_diag_timing {
    df_diag_timing_state state; /* see above */
    uint32_t count;             /* ended instances */
    uint32_t open;              /* instances begun and not ended */
    uint64_t elapsed_ns;        /* sum of ended instances' durations (loop stages accumulate) */
    uint64_t first_begin_ns;    /* monotonic begin of the first instance; 0 if none */
    uint64_t last_end_ns;       /* monotonic end of the last ended instance; 0 if none */
} df_diag_timing;

/* Timing of the root span (e.g. preview_total).  Accepts NULL (NOT_STARTED). */
df_diag_timing df_diag_operation_total_timing(const df_diag_operation *op);
df_diag_timing df_diag_operation_phase_timing(const df_diag_operation *op, df_diag_phase phase);
/* Timing of a stage for one owner (0 = owner-less). */
df_diag_timing df_diag_operation_stage_timing(const df_diag_operation *op, df_diag_stage stage,
                                              uint64_t owner_id);

/* ------------------------------------------------------------------------ */
/* Queries, tasks and operator activities (recorded only while traced).      */

typedef struct df_diag_query df_diag_query;

/*
 * Registers a planned query of a traced operation: allocates its
 * query_execution_id (per operation, from 1).  `owner` (output or alias name;
 * NULL for previews) is copied.  When the operation is not traced (or op is
 * NULL) *out is set to NULL and DF_OK is returned: every function taking a
 * query accepts NULL and records nothing.  The query belongs to the operation
 * and is freed with it.  Fails only with DF_ERR_OUT_OF_MEMORY / invalid scope.
 */
df_errkind df_diag_query_begin(df_diag_operation *op, df_diag_query_scope scope, const char *owner,
                               df_diag_query **out, df_error *err);
/* Sets (or replaces) the query owner; recorded on the planning span's end. */
void df_diag_query_set_owner(df_diag_query *q, const char *owner);
/* The query_execution_id, 0 for NULL. */
uint64_t df_diag_query_id(const df_diag_query *q);
/* A fresh execution_stream_id (per query, from 1) for one execute(partition). */
uint64_t df_diag_query_next_stream_id(df_diag_query *q);

/* Begins "DataFusion query planning" (and the "DataFusion query" instant). */
df_diag_span df_diag_query_planning_begin(df_diag_query *q);

/*
 * Enters a partition task of the query on the calling (pool) thread: takes
 * the lowest free `runtime` worker lane and releases it when the span ends.
 * Activities begun inside it use that lane.  End it when the task returns.
 */
df_diag_span df__diag_task_begin(df_diag_query *q, int64_t partition);
static inline df_diag_span df_diag_task_begin(df_diag_query *q, int64_t partition) {
    if (DF_LIKELY(q == NULL)) return DF_DIAG_SPAN_NONE;
    return df__diag_task_begin(q, partition);
}

/* A physical-plan node as the activity spans name it. */
typedef struct df_diag_node {
    int64_t node_id;        /* pre-order id from 0 */
    int64_t parent_node_id; /* -1 for the plan root */
    uint32_t name_id;       /* df_diag_name_intern() of the short operator name ("FilterExec") */
} df_diag_node;

df_diag_span df__diag_activity_begin(df_diag_query *q, const df_diag_node *node,
                                     df_diag_activity activity, int64_t partition,
                                     uint64_t stream_id);
/*
 * Begins an operator activity (execute / poll_next) on the calling thread.
 * Worker lane: the lane of the nearest enclosing activity or task of the same
 * query on this thread; else lane 0 `coordinator` at partition 0; else a
 * lane of kind `external` held until the span ends.  Reserves one unit of
 * the operation's budget; past the budget only task roots are recorded and
 * the first refusal emits the truncation marker (spec 1.5).
 */
static inline df_diag_span df_diag_activity_begin(df_diag_query *q, const df_diag_node *node,
                                                  df_diag_activity activity, int64_t partition,
                                                  uint64_t stream_id) {
    if (DF_LIKELY(q == NULL)) return DF_DIAG_SPAN_NONE;
    return df__diag_activity_begin(q, node, activity, partition, stream_id);
}

/* Records a parent_node_id learnt after begin (sent with the end record). */
void df_diag_span_set_parent_node(df_diag_span span, int64_t parent_node_id);

/*
 * Interns a short name (operator names) for activity spans: returns a
 * process-wide id >= 1, or 0 when the table is full / out of memory / name
 * is NULL or empty (the span is then named "unknown").  Names longer than
 * 255 bytes are truncated at a UTF-8 boundary.  Thread-safe; call at plan
 * time, not per batch.
 */
uint32_t df_diag_name_intern(const char *name);
/* The interned name, or "unknown" for 0 / unknown ids. */
const char *df_diag_name_get(uint32_t name_id);

/* ------------------------------------------------------------------------ */
/* "Await Delta scan output": a span that may begin and end in different     */
/* polls (and threads); not on the thread's stack.                            */

typedef struct df_diag_async_span {
    df_diag_operation *op; /* NULL = empty */
    uint64_t serial;       /* process-unique serial */
    uint64_t query_id;     /* query_execution_id of its track */
    uint64_t stream_id;    /* execution_stream_id of its track */
} df_diag_async_span;

#define DF_DIAG_ASYNC_SPAN_NONE ((df_diag_async_span){NULL, 0, 0, 0})

df_diag_async_span df__diag_await_output_begin(df_diag_query *q, int64_t node_id, int64_t partition,
                                               uint64_t stream_id);
/* Opens the await span of a Delta scan stream (budgeted; dropped past the budget). */
static inline df_diag_async_span df_diag_await_output_begin(df_diag_query *q, int64_t node_id,
                                                            int64_t partition, uint64_t stream_id) {
    if (DF_LIKELY(q == NULL)) return DF_DIAG_ASYNC_SPAN_NONE;
    return df__diag_await_output_begin(q, node_id, partition, stream_id);
}
/* Closes it (ok on a batch or end of stream, error, cancelled on drop).  Resets *s. */
void df_diag_async_span_end(df_diag_async_span *s, df_diag_result result);

/* ------------------------------------------------------------------------ */
/* Details and context propagation (no operation handle needed).             */

/* Non-zero while a capture is active (a hint: read with relaxed ordering). */
extern _Atomic int df__diag_capture_active;
static inline bool df__diag_capturing(void) {
    return atomic_load_explicit(&df__diag_capture_active, memory_order_relaxed) != 0;
}

df_diag_span df__diag_detail_begin(df_diag_detail detail);
/*
 * Begins a dependency span under the span current on the calling thread (its
 * identity, track and time semantics are inherited).  Empty when no traced
 * span is current.  Past the operation's budget, details under operator
 * activities are dropped like nested activities.
 */
static inline df_diag_span df_diag_detail_begin(df_diag_detail detail) {
    if (DF_LIKELY(!df__diag_capturing())) return DF_DIAG_SPAN_NONE;
    return df__diag_detail_begin(detail);
}

/*
 * The identity current on the calling thread, to be entered by a task that
 * runs on another thread (an I/O task spawned by a scan, a TDS writer
 * thread).  Plain data; valid while the current span's operation lives.
 */
typedef struct df_diag_context {
    df_diag_operation *op;   /* NULL: nothing to enter */
    df_diag_query *query;    /* the current query, or NULL for stage/phase contexts */
    uint64_t parent_serial;  /* serial of the span that was current */
    int64_t node_id;         /* current operator node (becomes parent_node_id), -1 if none */
    int64_t partition;       /* current partition, -1 if none */
    uint64_t stream_id;      /* current execution stream, 0 if none */
    uint16_t stage;          /* current stage (df_diag_stage) or 0 */
    uint16_t phase;          /* current phase (df_diag_phase) or 0 */
    uint64_t stage_owner_id; /* current stage owner, 0 if none */
} df_diag_context;

df_diag_context df__diag_context_capture(void);
/* Captures the calling thread's current identity (empty when not traced). */
static inline df_diag_context df_diag_context_capture(void) {
    if (DF_LIKELY(!df__diag_capturing())) return (df_diag_context){0};
    return df__diag_context_capture();
}

/*
 * Enters a captured context on the calling thread ("DataFusion task
 * context"): for a query context, takes a `runtime` lane (never the
 * coordinator lane) and records a fresh profile_context_id; for a
 * stage/phase context, details begun inside land on that stage's track.
 * End the returned span when the task returns.  Empty for an empty context.
 */
df_diag_span df_diag_context_enter(const df_diag_context *ctx);

/* ------------------------------------------------------------------------ */
/* Process-level inspection.                                                  */

/* Span-API misuses ignored so far (wrong-thread / stale / double ends). */
uint64_t df_diag_misuse_count(void);
/* Spans not recorded because a thread's span stack was full (depth 128). */
uint64_t df_diag_stack_overflow_count(void);

#endif
