/*
 * Executor internals: the execution context, physical plan nodes, running
 * operators, compiled expression programs and vector kernels.
 *
 * Plans and states.  A physical plan (df_pnode tree) is built fresh for
 * every execution and is read-only while it runs; each (node, partition)
 * pair that runs gets its own operator state (df_op) created by the node's
 * open(), pulled with df_op_next() and freed with df_op_close().  A node
 * with P output partitions can be opened P times, from different threads.
 *
 * Threads.  Exchange operators (op_exchange.c) are the only place threads
 * appear: they run each input partition as a task on the execution's
 * thread pool, which has one thread per exchange input so that a blocked
 * producer never starves another.  CPU concurrency is bounded separately
 * by `target_partitions` tokens: a pool thread holds a token while it
 * computes and gives it back while it waits (df_exec_block_begin/end).
 * The caller's thread, pulling the result stream, computes without one:
 * above an exchange it mostly hands batches over, and making it queue for
 * a token behind busy producers (which give theirs back only when their
 * queue is full) idled a producer for every batch handed over.
 *
 * Metrics.  With profiling on, df_op_next() times every call and counts
 * output rows and batches per (node, partition); time an operator spends
 * pulling its children or waiting on a queue is subtracted, so
 * elapsed_compute is the operator's own work.
 *
 * Diagnostics.  When the execution belongs to a traced query (ctx->dq),
 * df_pnode_open() records an `execute` activity (with a fresh
 * execution_stream_id for the new operator state), df_op_next() a
 * `poll_next` activity, exchange producers a partition task (a runtime
 * worker lane), and the Delta scan its output waits.  Untraced and
 * unprofiled, df_op_next() and df_pnode_open() cost one predictable branch.
 */
#ifndef DF_EXEC_EXEC_INT_H
#define DF_EXEC_EXEC_INT_H

#include <pthread.h>

#include "common/thread_pool.h"
#include "diag/diag.h"
#include "exec/query.h"
#include "sql/logical_plan.h"

typedef struct df_pnode df_pnode;
typedef struct df_op df_op;

/* ------------------------------------------------------------------------ */
/* Execution context                                                         */

typedef struct df_exec_ctx {
    int32_t batch_size;             /* rows per batch */
    int32_t target_partitions;      /* CPU tokens and default partition count */
    const _Atomic bool *user_cancel;/* caller's flag or NULL */
    _Atomic bool cancel;            /* set when the consumer closes early or a worker fails */
    bool profile;                   /* collect metrics */
    df_thread_pool *pool;           /* exchange workers (NULL when the plan has no exchange) */
    pthread_mutex_t tok_mu;         /* guards tokens */
    pthread_cond_t tok_cv;          /* signalled when a token is returned */
    int32_t tokens;                 /* CPU tokens available */
    _Atomic int64_t mem_used;       /* bytes reserved by hash tables and sorts */
    _Atomic int64_t mem_peak;       /* highest mem_used seen */
    int64_t mem_limit;              /* 0 = unlimited */
    df_diag_query *dq;              /* traced query (spans recorded), or NULL */
    struct df__worktable *worktables; /* planning: work tables of the enclosing recursive queries */
} df_exec_ctx;

/* True when the execution should stop (consumer gone, error elsewhere, or user cancel). */
static inline bool df_exec_cancelled(df_exec_ctx *ctx) {
    return atomic_load_explicit(&ctx->cancel, memory_order_relaxed) ||
           (ctx->user_cancel && atomic_load_explicit(ctx->user_cancel, memory_order_relaxed));
}
/* DF_ERR_CANCELLED when cancelled, else DF_OK. */
df_errkind df__exec_check_cancel(df_exec_ctx *ctx, df_error *err);
/*
 * Takes a CPU token (blocks while none is free).  Both calls do nothing on
 * the thread that currently pulls ctx's result stream (df__exec_caller_enter).
 */
void df__exec_token_acquire(df_exec_ctx *ctx);
void df__exec_token_release(df_exec_ctx *ctx);
/*
 * Marks the calling thread as ctx's caller (it computes without a token)
 * until df__exec_caller_leave; returns the previous mark, to hand back to
 * df__exec_caller_leave (streams of several executions may nest).
 */
const df_exec_ctx *df__exec_caller_enter(const df_exec_ctx *ctx);
void df__exec_caller_leave(const df_exec_ctx *prev);
/* Reserves / returns memory against the limit; DF_ERR_OUT_OF_MEMORY over the limit. */
df_errkind df__exec_mem_reserve(df_exec_ctx *ctx, int64_t bytes, df_error *err);
void df__exec_mem_release(df_exec_ctx *ctx, int64_t bytes);

/* ------------------------------------------------------------------------ */
/* Metrics                                                                   */

typedef struct df_op_metrics {
    int64_t output_rows;            /* rows returned by next() */
    int64_t output_batches;         /* batches returned */
    int64_t elapsed_compute;        /* ns of own work */
    int64_t start_ns;               /* first open (monotonic), 0 if never opened */
    int64_t end_ns;                 /* close */
    bool opened;                    /* the partition ran */
} df_op_metrics;

/* ------------------------------------------------------------------------ */
/* Operators                                                                 */

typedef struct df_op_vt {
    /* Next batch (*out NULL at end).  Never returns empty batches. */
    df_errkind (*next)(df_op *op, df_batch **out, df_error *err);
    /* Frees the state and closes children; safe at any point. */
    void (*close)(df_op *op);
} df_op_vt;

struct df_op {
    const df_op_vt *vt;             /* behaviour */
    df_pnode *node;                 /* the plan node it runs */
    int32_t partition;              /* which output partition */
    df_exec_ctx *ctx;               /* execution */
    df_op_metrics *m;               /* this partition's metrics (NULL without profiling) */
    df_op *parent;                  /* operator that pulls this one in the same thread, or NULL */
    int64_t child_ns;               /* time spent in children / waiting during the current call */
    bool instrumented;              /* metrics or spans: next() goes through df__op_next_instrumented */
    uint64_t stream_id;             /* execution_stream_id of the execute() that made it (traced), 0 */
};

/* df_op_next for profiled or traced operators: metrics and the poll_next activity. */
df_errkind df__op_next_instrumented(df_op *op, df_batch **out, df_error *err);

/*
 * Pulls one batch, timing and counting it when profiling, recording it when
 * traced.  The caller's cancel flag is polled here, once per batch and
 * operator, so every pipeline (and every pool task, which is a pipeline)
 * stops within a batch of the flag being set; only the caller's flag:
 * ctx->cancel also marks a consumer that closed early, which must not fail
 * operators still draining above a closed LIMIT input.
 */
static inline df_errkind df_op_next(df_op *op, df_batch **out, df_error *err) {
    const _Atomic bool *cancel = op->ctx->user_cancel;
    if (DF_UNLIKELY(cancel && atomic_load_explicit(cancel, memory_order_relaxed))) {
        *out = NULL;
        return df__exec_check_cancel(op->ctx, err);
    }
    if (DF_LIKELY(!op->instrumented)) return op->vt->next(op, out, err);
    return df__op_next_instrumented(op, out, err);
}

static inline void df_op_close(df_op *op) {
    if (!op) return;
    if (op->m) op->m->end_ns = (int64_t)df_now_ns();
    op->vt->close(op);
}

/* Fills the common fields of a new operator state (and marks its metrics opened). */
void df__op_init(df_op *op, const df_op_vt *vt, df_pnode *node, df_exec_ctx *ctx, int32_t partition);

/* ------------------------------------------------------------------------ */
/* Physical plan nodes                                                       */

typedef struct df_pnode_vt {
    const char *name;               /* profile / EXPLAIN name ("FilterExec") */
    /* Creates the state of one output partition; `parent` is the operator pulling it in this thread. */
    df_errkind (*open)(df_pnode *n, df_exec_ctx *ctx, int32_t partition, df_op *parent, df_op **out,
                       df_error *err);
    /* Frees node-private data. */
    void (*destroy)(df_pnode *n);
    /* Appends node details for EXPLAIN (after the name); may be NULL. */
    df_errkind (*explain)(const df_pnode *n, df_buf *out, df_error *err);
} df_pnode_vt;

struct df_pnode {
    const df_pnode_vt *vt;          /* behaviour */
    int32_t id;                     /* pre-order node id (profiles) */
    df_schema *schema;              /* output schema (reference) */
    int32_t partitions;             /* output partitions */
    int32_t ninputs;                /* children */
    df_pnode **inputs;
    df_op_metrics *metrics;         /* [partitions] when profiling, else NULL */
    void *priv;                     /* operator-specific plan data */
    const char *display_name;       /* name override (DeltaScanExec / ScanExec), or NULL */
    df_diag_node dnode;             /* identity in diagnostics spans (set when the execution is traced) */
};

/* df_pnode_open of a traced execution: the execute activity and the new state's stream id. */
df_errkind df__pnode_open_traced(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out,
                                 df_error *err);

/* Opens partition p of n as a child of `parent` (which may be NULL). */
static inline df_errkind df_pnode_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out,
                                       df_error *err) {
    if (DF_LIKELY(!ctx->dq)) return n->vt->open(n, ctx, p, parent, out, err);
    return df__pnode_open_traced(n, ctx, p, parent, out, err);
}

/* Allocates a node with `ninputs` children slots and a schema reference. */
df_errkind df__pnode_new(const df_pnode_vt *vt, df_schema *schema, int32_t partitions, int32_t ninputs,
                        df_pnode **out, df_error *err);
/* Frees a node tree (children first).  Accepts NULL. */
void df__pnode_free(df_pnode *n);
/* A scan node's provider metrics (any provider / Delta providers only), or NULL for other nodes. */
const df_scan_metrics *df__scan_metrics(const df_pnode *n);
const df_scan_metrics *df__scan_delta_metrics(const df_pnode *n);
const df_table_provider *df__scan_provider(const df_pnode *n);
const char *df__scan_table(const df_pnode *n);
/* The operator name of a node. */
static inline const char *df_pnode_name(const df_pnode *n) { return n->display_name ? n->display_name : n->vt->name; }

/* Builds an output schema from logical columns. */
df_errkind df__exec_schema_from_cols(const df_lcol *cols, int32_t n, df_schema **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Expression programs                                                       */

/* A register: a value vector (maybe a broadcast constant) or a row selection. */
typedef struct df_xreg {
    df_vec *vec;                    /* value (reference) or NULL */
    bool is_const;                  /* vec has one element standing for every row */
    int32_t *sel;                   /* selection: row indices (owned, df_malloc) */
    int64_t nsel;                   /* selected rows */
    bool sel_all;                   /* selection is every row (sel unused) */
} df_xreg;

/* What a kernel receives besides its arguments. */
typedef struct df_kargs {
    int64_t n;                      /* rows of the batch (1 when every argument is constant) */
    const int32_t *sel;             /* rows to compute, ascending; NULL = all n */
    int64_t nsel;                   /* entries in sel */
    df_type *type;                  /* result type */
    const void *aux;                /* kernel data prepared at compile time */
    df_error *err;                  /* where errors go */
    df_exec_ctx *ctx;               /* the execution, for kernels whose rows can run long to poll
                                       df_exec_cancelled (regular expressions); NULL when unknown */
} df_kargs;

/*
 * A vector kernel: computes out->vec (length k->n) from args for the rows
 * in k->sel (others may hold anything, but offsets stay valid).  Errors of
 * rows outside sel or with NULL inputs must not be reported.
 */
typedef df_errkind (*df_kernel_fn)(const df_kargs *k, const df_xreg *args, int32_t nargs, df_xreg *out);

typedef struct df_kernel {
    df_kernel_fn fn;                /* the function */
    void *aux;                      /* data for it (owned when aux_free is set) */
    void (*aux_free)(void *aux);
    bool can_error;                 /* may fail on some inputs (division, casts, overflow) */
} df_kernel;

/*
 * Chooses the kernel for a function call or cast from its argument and
 * result types.  DF_ERR_SQL_UNSUPPORTED when no kernel exists.
 */
df_errkind df__kernel_for_fn(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernel_for_cast(const df_type *from, const df_type *to, bool try_cast, df_kernel *out,
                              df_error *err);

typedef struct df_xprog df_xprog;

/* Compiles a bound expression over an input of `ninputs` columns.  The program is immutable and shareable. */
df_errkind df__xprog_compile(const df_expr *e, df_xprog **out, df_error *err);
void df__xprog_free(df_xprog *p);
/* The result type. */
df_type *df__xprog_type(const df_xprog *p);
/* True when the program's result is a constant (no columns). */
bool df__xprog_is_const(const df_xprog *p);

/* Per-thread evaluation state of a program. */
typedef struct df_xstate df_xstate;
df_errkind df__xstate_new(const df_xprog *p, df_xstate **out, df_error *err);
void df__xstate_free(df_xstate *s);
/* Hands the execution to the kernels the state evaluates (df_kargs.ctx), so long rows can be cancelled. */
void df__xstate_set_ctx(df_xstate *s, df_exec_ctx *ctx);

/*
 * Evaluates the program over `batch`.  *out receives the result (a new
 * reference; is_const results have length 1); release with df__xreg_clear.
 */
df_errkind df__xprog_eval(const df_xprog *p, df_xstate *s, const df_batch *batch, df_xreg *out, df_error *err);
/* Same, always returning a full-length vector (constants are broadcast). */
df_errkind df__xprog_eval_vec(const df_xprog *p, df_xstate *s, const df_batch *batch, df_vec **out,
                             df_error *err);
void df__xreg_clear(df_xreg *r);

/* Evaluates a constant expression to a scalar (the optimizer's folding hook). */
df_errkind df__exec_eval_const(const df_expr *e, df_scalar *out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Kernel helpers (kernels_*.c)                                              */

/* Value pointer of a fixed-width register (already offset). */
#define DF_XV(reg, ctype) ((const ctype *)(const void *)(reg)->vec->values->data + (reg)->vec->offset)

/* True when the constant register is NULL. */
static inline bool df_xreg_const_null(const df_xreg *r) {
    return r->is_const && (r->vec->type->id == DF_TYPE_NULL || !df_vec_is_valid(r->vec, 0));
}
/* Row i of register r is valid (Null-typed vectors never are). */
static inline bool df_xreg_valid(const df_xreg *r, int64_t i) {
    return r->vec->type->id != DF_TYPE_NULL && df_vec_is_valid(r->vec, r->is_const ? 0 : i);
}

/* A new output vector of k->type for k->n rows (values buffer sized; var-len data_cap bytes). */
df_errkind df__kernel_out(const df_kargs *k, int64_t data_cap, df_vec **out);
/*
 * Sets out's validity to the AND of the arguments' validity (all-null when
 * a constant argument is NULL).  Leaves no bitmap when nothing is NULL.
 */
df_errkind df__kernel_and_validity(const df_kargs *k, const df_xreg *args, int32_t nargs, df_vec *out);
/*
 * A fixed-width output (df__kernel_out with no data) whose validity is the AND
 * of the arguments' (df__kernel_and_validity); on failure *out is NULL.
 */
df_errkind df__kernel_out_valid(const df_kargs *k, const df_xreg *args, int32_t nargs, df_vec **out);
/* Finishes a fixed-width output: sets the length, wraps it in out. */
void df__kernel_done(const df_kargs *k, df_vec *v, df_xreg *out);
/* Ends a kernel that computed into v with result e: on failure releases v and
 * returns e, otherwise finishes v into out (df__kernel_done) and returns DF_OK. */
df_errkind df__kernel_finish(const df_kargs *k, df_vec *v, df_errkind e, df_xreg *out);
/*
 * Builds a vector of `type` for n rows where row i takes row i of register
 * srcs[which[i]] (element 0 for constants); which[i] < 0 gives NULL.
 */
df_errkind df__kernel_choose(df_type *type, int64_t n, const df_xreg *const *srcs, const int8_t *which,
                             df_vec **out, df_error *err);
/* A full-length copy of a constant register (or a new reference to a vector register). */
df_errkind df__kernel_materialize(const df_xreg *r, int64_t n, df_vec **out, df_error *err);

/*
 * String output builder: rows are written in increasing order; rows
 * skipped (outside the selection) become empty strings.
 */
typedef struct df__sbuilder {
    df_vec *v;                      /* output (utf8/binary) */
    int32_t *offs;                  /* its offsets */
    int64_t pos;                    /* bytes written */
    int64_t next;                   /* first row whose offset is not yet written */
    int64_t n;                      /* rows */
    df_error *err;                  /* errors */
} df__sbuilder;
/* Starts an output with the AND of the arguments' validity and an initial data capacity. */
df_errkind df__sb_begin(df__sbuilder *sb, const df_kargs *k, const df_xreg *args, int32_t nargs,
                        int64_t data_estimate);
/* Makes room for `extra` more bytes at sb->v->data->data + sb->pos. */
df_errkind df__sb_reserve(df__sbuilder *sb, int64_t extra);
/* Appends row i's value. */
df_errkind df__sb_put(df__sbuilder *sb, int64_t i, const void *p, int64_t len);
/* Declares that len bytes were written in place (after df__sb_reserve) for row i. */
void df__sb_commit(df__sbuilder *sb, int64_t i, int64_t len);
/* Row i is NULL. */
df_errkind df__sb_null(df__sbuilder *sb, int64_t i);
void df__sb_finish(df__sbuilder *sb, df_xreg *out);
void df__sb_abort(df__sbuilder *sb);

/* Iterates i over the selected rows. */
#define DF_FOR_SEL(k, i, ...)                                           \
    do {                                                                \
        if ((k)->sel) {                                                 \
            for (int64_t df_s_ = 0; df_s_ < (k)->nsel; df_s_++) {       \
                int64_t i = (k)->sel[df_s_];                            \
                __VA_ARGS__;                                            \
            }                                                           \
        } else {                                                        \
            for (int64_t i = 0; i < (k)->n; i++) {                      \
                __VA_ARGS__;                                            \
            }                                                           \
        }                                                               \
    } while (0)

/* Kernels by family (each returns NULL fn when it has nothing for the types). */
df_errkind df__kernels_arith(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_compare(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_string(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_math(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_more(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_datetime(const df_expr *call, df_kernel *out, df_error *err);
df_errkind df__kernels_time(const df_expr *call, df_kernel *out, df_error *err);
/* HH:MM[:SS[.fraction]] -> nanoseconds since midnight; false when it is not a time of day. */
bool df__parse_time_of_day(const char *s, size_t n, int64_t *ns);
/* IN-list kernel for a value and constant list (args 1..n literals): hashed lookup. */
df_errkind df__kernel_in_list(const df_expr *e, df_kernel *out, df_error *err);

/*
 * Compares element i of a with element j of b (same type; both non-NULL):
 * <0, 0, >0.  Floats use IEEE total order (NaN largest), strings bytewise.
 */
int df__cmp_values(const df_vec *a, int64_t i, const df_vec *b, int64_t j);
/* Hash of element i (equal values hash equally; NULL hashes to a constant). */
uint64_t df__hash_value(const df_vec *v, int64_t i);

/* Formats one value of a vector as text the way CAST(x AS VARCHAR) does (appends to out). */
df_errkind df__format_value(const df_vec *v, int64_t i, df_buf *out, df_error *err);
struct df_tz;
/* The same with a zoned timestamp's zone already opened (NULL: opened per value). */
df_errkind df__format_value_zoned(const df_vec *v, int64_t i, const struct df_tz *zone, df_buf *out, df_error *err);
/* Civil date helpers shared by casts and date functions. */
/* Parses "YYYY-MM-DD" (with optional time part ignored when allow_time) into days. */
bool df__parse_date(const char *s, size_t n, int32_t *days);
/* Parses a timestamp text into units since the epoch (UTC offsets applied). */
bool df__parse_timestamp(const char *s, size_t n, df_time_unit unit, int64_t *out);
/* The same, telling whether the text carried its own offset (Z, UTC, +hh:mm). */
bool df__parse_timestamp_zoned(const char *s, size_t n, df_time_unit unit, int64_t *out, bool *zoned);

/* ------------------------------------------------------------------------ */
/* Batch helpers (batch_ops.c)                                               */

/* Gathers elements at idx (negative = NULL) into a new vector. */
df_errkind df__vec_gather(const df_vec *v, const int32_t *idx, int64_t n, df_vec **out, df_error *err);
/* Gathers rows of every column; the new batch has `schema` (or b's schema when NULL). */
df_errkind df__batch_take(const df_batch *b, const int32_t *idx, int64_t n, df_schema *schema, df_batch **out,
                          df_error *err);
/* The same columns under another (equal-typed) schema. */
df_errkind df__batch_rewrap(df_batch *b, df_schema *schema, df_batch **out, df_error *err);
/* Concatenates vectors of one type (n >= 1) into a new vector. */
df_errkind df__vec_concat(df_vec *const *vecs, int32_t n, df_vec **out, df_error *err);
/* Concatenates batches of equal column types under `schema` (n >= 0). */
df_errkind df__batch_concat(df_batch *const *bs, int32_t n, df_schema *schema, df_batch **out, df_error *err);

/* Gathers row_of[i] of srcs[src_of[i]] for each output row (all sources of one type). */
df_errkind df__vec_gather_multi(df_type *type, df_vec *const *srcs, const int32_t *src_of, const int32_t *row_of,
                                int64_t n, df_vec **out, df_error *err);
/* Approximate bytes held by a batch's buffers (memory accounting). */
int64_t df__batch_bytes(const df_batch *b);
/* Bytes of buffers held by one vector (and its children). */
int64_t df__vec_bytes(const df_vec *v);

/* Exchange transfer (op_exchange.c): input partitions run on workers, batches handed to one consumer. */
typedef struct df__xfer df__xfer;
/* `owner` is the consuming operator (waiting time is excluded from its compute). */
df_errkind df__xfer_new(df_pnode *input, df_exec_ctx *ctx, df_op *owner, bool per_partition, df__xfer **out,
                        df_error *err);
/* Next batch from `partition` (per-partition mode) or from any (-1); *out NULL when exhausted. */
df_errkind df__xfer_pop(df__xfer *x, int32_t partition, df_batch **out, df_error *err);
/* Stops and joins the producers, releases queued batches.  Accepts NULL. */
void df__xfer_free(df__xfer *x);

/* Sort keys compiled for comparisons (op_sort.c), shared with the merge. */
typedef struct df__sortspec {
    int32_t nkeys;                  /* keys */
    df_xprog **progs;               /* key programs */
    bool *desc;                     /* per key: descending */
    bool *nulls_first;              /* per key: NULLs before values */
} df__sortspec;
df_errkind df__sortspec_init(df__sortspec *sp, const df_sort_key *keys, int32_t nkeys, df_error *err);
void df__sortspec_clear(df__sortspec *sp);
/* Evaluates the keys over a batch into keys[nkeys] (new references). */
df_errkind df__sortspec_eval(const df__sortspec *sp, df_xstate **st, const df_batch *b, df_vec **keys,
                             df_error *err);
/* Compares row i of key vectors a with row j of key vectors b. */
int df__sortspec_cmp(const df__sortspec *sp, df_vec *const *a, int64_t i, df_vec *const *b, int64_t j);

/* Stable sort of the row indices idx[0..n) by evaluated key vectors. */
df_errkind df__sort_indices(const df__sortspec *sp, df_vec *const *keys, int32_t *idx, int64_t n, df_error *err);
/*
 * The same, polling ctx's cancel flags every 64 Ki rows merged: a sort of
 * millions of rows is one long call.  DF_ERR_CANCELLED when cancelled.
 */
df_errkind df__sort_indices_in(df_exec_ctx *ctx, const df__sortspec *sp, df_vec *const *keys, int32_t *idx, int64_t n,
                               df_error *err);

/* ------------------------------------------------------------------------ */
/* Physical planning                                                         */

/* Builds the physical plan of a logical plan for the given options. */
df_errkind df__exec_plan(const df_lnode *root, df_exec_ctx *ctx, df_pnode **out, df_error *err);
/* Number of exchange input tasks the plan can run at once (thread pool size). */
int32_t df__exec_plan_threads(const df_pnode *root);
/* Appends one line per physical node (indented tree) for EXPLAIN. */
df_errkind df__pnode_explain(const df_pnode *root, df_buf *out, df_error *err);

/* Operator constructors (op_*.c); each takes ownership of its inputs (also on failure). */
df_errkind df__op_scan_new(const df_lnode *scan, df_exec_ctx *ctx, df_pnode **out, df_error *err);
df_errkind df__op_values_new(const df_lnode *values, df_schema *schema, df_pnode **out, df_error *err);
df_errkind df__op_empty_new(df_schema *schema, bool one_row, df_pnode **out, df_error *err);
df_errkind df__op_filter_new(df_pnode *input, const df_expr *pred, df_pnode **out, df_error *err);
df_errkind df__op_project_new(df_pnode *input, df_expr *const *exprs, df_schema *schema, df_pnode **out,
                             df_error *err);
df_errkind df__op_limit_new(df_pnode *input, int64_t skip, int64_t fetch, bool global, df_pnode **out,
                           df_error *err);
df_errkind df__op_coalesce_new(df_pnode *input, df_pnode **out, df_error *err);
df_errkind df__op_union_new(df_pnode **inputs, int32_t n, df_schema *schema, df_pnode **out, df_error *err);
df_errkind df__op_sort_new(df_pnode *input, const df_sort_key *keys, int32_t nkeys, int64_t fetch,
                          df_pnode **out, df_error *err);
df_errkind df__op_merge_new(df_pnode *input, const df_sort_key *keys, int32_t nkeys, int64_t fetch,
                           df_pnode **out, df_error *err);

typedef enum df_agg_mode { DF_AGG_MODE_SINGLE, DF_AGG_MODE_PARTIAL, DF_AGG_MODE_FINAL } df_agg_mode;
df_errkind df__op_aggregate_new(df_pnode *input, const df_lnode *agg, df_agg_mode mode, df_schema *schema,
                               df_pnode **out, df_error *err);
df_errkind df__op_hash_join_new(df_pnode *build, df_pnode *probe, const df_lnode *join, df_schema *schema,
                               df_pnode **out, df_error *err);
df_errkind df__op_window_new(df_pnode *input, const df_lnode *window, df_schema *schema, df_pnode **out,
                            df_error *err);
/* WITH RECURSIVE (op_recursive.c): the work table shared by a RecursiveQueryExec and its WorkTableExec. */
typedef struct df__worktable df__worktable;
df_errkind df__worktable_new(int32_t id, bool distinct, df__worktable **out, df_error *err);
void df__worktable_free(df__worktable *wt);
/* The id the work table was made with, and the enclosing one during planning. */
int32_t df__worktable_id(const df__worktable *wt);
df__worktable *df__worktable_outer(const df__worktable *wt);
void df__worktable_set_outer(df__worktable *wt, df__worktable *outer);
/* Takes the terms and the work table (also on failure). */
df_errkind df__op_recursive_new(df__worktable *wt, df_pnode *static_term, df_pnode *recursive_term,
                                df_schema *schema, df_pnode **out, df_error *err);
/* A leaf reading wt (not owned). */
df_errkind df__op_worktable_new(df__worktable *wt, df_schema *schema, df_pnode **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */

/* The stream df_query_execute returns (op_exchange.c owns the machinery). */
df_errkind df_exec_stream_new(df_pnode *root, df_exec_ctx *ctx, df_exec_profile *profile,
                              df_batch_stream **out, df_error *err);

#endif
