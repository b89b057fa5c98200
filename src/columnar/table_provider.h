/*
 * Table providers: how the executor reads a registered source without
 * knowing its format.  This contract sits on the columnar layer so that
 * readers (delta/) implement it without depending on the executor (exec/).
 *
 * A provider has a schema (partition columns included, as plain typed
 * columns) and a list of scan units (for Delta: one data file each).  Every
 * unit carries what pruning needs: its row count, partition values and
 * column statistics.  The executor plans a scan in three steps:
 *
 *   1. plan_scan(request) -> df_scan_plan: the provider keeps only the
 *      units that may contain matching rows, using the request's pushed
 *      predicates (a conjunction of simple column-vs-literal tests, see
 *      df_scan_predicate) against partition values and file statistics;
 *   2. the executor spreads the plan's units over its workers;
 *   3. open_unit(plan, i) -> a batch stream of the projected columns, read
 *      lazily: a consumer that stops early (LIMIT) reads no further pages.
 *      Inside a unit the reader may skip row groups whose statistics prove
 *      that no row matches the predicates.
 *
 * Predicates are hints for skipping: streams may still return rows that do
 * not match, and the executor always applies the full filter afterwards.
 * Streams may also drop rows where a predicate is false or NULL (the Delta
 * provider evaluates them inside the Parquet scan with
 * df_scan_predicate_eval, before decoding the other columns), never rows
 * where every predicate holds.
 *
 * Counters (df_scan_metrics) are shared by every stream of a plan and
 * updated with relaxed atomics; previews expose them in execution_profile.
 */
#ifndef DF_COLUMNAR_TABLE_PROVIDER_H
#define DF_COLUMNAR_TABLE_PROVIDER_H

#include "columnar/columnar.h"

/* ------------------------------------------------------------------------ */
/* Pushed-down predicates                                                    */

typedef enum df_pred_op {
    DF_PRED_EQ,
    DF_PRED_NE,
    DF_PRED_LT,
    DF_PRED_LE,
    DF_PRED_GT,
    DF_PRED_GE,
    DF_PRED_IS_NULL,
    DF_PRED_IS_NOT_NULL,
    DF_PRED_IN,             /* column IN (values...) */
} df_pred_op;

typedef struct df_scan_predicate {
    int32_t column;         /* index into the provider schema */
    df_pred_op op;
    int32_t nvalues;        /* 1 for comparisons, n for IN, 0 for null tests */
    df_scalar *values;      /* literals already cast to the column's type; owned by the request */
} df_scan_predicate;

/* Statistics of one column in one unit or row group.  Unknown parts have has_* false. */
typedef struct df_column_stats {
    bool has_min, has_max, has_null_count;
    bool min_exact, max_exact;  /* false when truncated (strings) */
    df_scalar min, max;         /* typed as the provider column */
    int64_t null_count;
} df_column_stats;

/*
 * True unless the statistics prove that no row of a unit with `row_count`
 * rows (-1 = unknown) satisfies the predicate.  Never wrong in the "false"
 * direction: unknown statistics, type mismatches and NaNs all give true.
 */
bool df_scan_predicate_may_match(const df_scan_predicate *p, const df_column_stats *stats, int64_t row_count);
/* Same test against a single known value (a partition value; is_null for NULL partitions). */
bool df_scan_predicate_matches_value(const df_scan_predicate *p, const df_scalar *value);

/*
 * True when df_scan_predicate_eval can evaluate `p` row by row on vectors of
 * type `t`: null tests always; comparisons and IN lists when every literal
 * has exactly type `t` and `t` is boolean, integer, floating, decimal128,
 * temporal, string, binary or fixed binary.
 */
bool df_scan_predicate_evaluable(const df_scan_predicate *p, const df_type *t);
/*
 * Row-level evaluation: clears bit i of `sel` (bits [0, v->length), LSB
 * first) for every row i of `v` where `p` is false or NULL, that is where a
 * SQL filter holding the predicate drops the row; other bits are left as
 * they are, so several predicates AND into one selection.  Comparisons
 * follow the executor's: floats in IEEE total order (NaN equals NaN and
 * sorts last, -0 < +0), strings and binaries bytewise.  Returns false,
 * leaving `sel` untouched, when the predicate is not evaluable on v's type.
 */
bool df_scan_predicate_eval(const df_scan_predicate *p, const df_vec *v, uint8_t *sel);

/* ------------------------------------------------------------------------ */
/* Scan requests, plans and metrics                                          */

typedef struct df_scan_request {
    const int32_t *projection;      /* provider column indices in output order; NULL = all columns */
    int32_t nprojection;
    const df_scan_predicate *predicates;  /* conjunction; may be empty */
    int32_t npredicates;
    int64_t limit;                  /* rows the consumer needs at most (-1 = all); a hint */
    int32_t batch_size;             /* rows per produced batch (> 0) */
} df_scan_request;

typedef struct df_scan_metrics {
    _Atomic int64_t files_total;          /* units in the snapshot */
    _Atomic int64_t files_pruned;         /* removed by partition values or statistics while planning */
    _Atomic int64_t files_planned;        /* units in the plan */
    _Atomic int64_t files_opened;
    _Atomic int64_t files_completed;
    _Atomic int64_t row_groups_total;     /* in opened files */
    _Atomic int64_t row_groups_pruned;    /* skipped by statistics */
    _Atomic int64_t row_groups_read;      /* at least one page decoded */
    _Atomic int64_t pages_read;           /* data pages decompressed and decoded */
    _Atomic int64_t pages_skipped;        /* data pages passed over unread (no selected row in them) */
    _Atomic int64_t rows_filtered;        /* rows dropped inside the scan by row-level predicate evaluation */
    _Atomic int64_t bytes_read;           /* bytes fetched from storage */
    _Atomic int64_t rows_produced;
    _Atomic int64_t batches_produced;
    _Atomic int64_t deletion_vectors_applied;
    _Atomic int64_t deletion_vector_rows_deleted;
} df_scan_metrics;

typedef struct df_scan_plan {
    struct df_table_provider *provider;   /* borrowed; outlives the plan */
    df_schema *schema;                    /* output schema (projected), owned reference */
    int64_t nunits;
    int64_t *units;                       /* provider unit indices kept, in read order; owned */
    int64_t estimated_rows;               /* sum of known unit row counts, -1 if any unknown */
    df_scan_metrics *metrics;             /* owned by the plan, shared by its streams */
    void *provider_state;                 /* provider-private (projection, predicates copy, ...) */
} df_scan_plan;

/* ------------------------------------------------------------------------ */
/* Providers                                                                 */

typedef struct df_table_provider df_table_provider;
typedef struct df_table_provider_vt {
    /* Builds a plan; the request's arrays are copied (the caller may free them after). */
    df_errkind (*plan_scan)(df_table_provider *p, const df_scan_request *req, df_scan_plan **out, df_error *err);
    /* Opens plan->units[i] as a lazy stream of plan->schema batches. Thread-safe for distinct i. */
    df_errkind (*open_unit)(df_table_provider *p, df_scan_plan *plan, int64_t i, df_batch_stream **out, df_error *err);
    /* Frees a plan (after all its streams are closed). */
    void (*free_plan)(df_table_provider *p, df_scan_plan *plan);
    /* Frees the provider (last reference). */
    void (*destroy)(df_table_provider *p);
} df_table_provider_vt;

struct df_table_provider {
    const df_table_provider_vt *vt;
    _Atomic int32_t refs;
    df_schema *schema;        /* full schema, owned reference */
    const char *kind;         /* "delta", "memory", ... (static string) */
    int64_t version;          /* the table version read (Delta snapshots); meaningless for other kinds */
};

static inline df_table_provider *df_table_provider_retain(df_table_provider *p) {
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}
static inline void df_table_provider_release(df_table_provider *p) {
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) p->vt->destroy(p);
}

/*
 * An in-memory provider over batches (each batch one unit); used by tests
 * and write_all caches.  Retains the schema and batches.
 */
df_errkind df_memory_provider_new(df_schema *schema, df_batch *const *batches, int64_t nbatches,
                                  df_table_provider **out, df_error *err);

#endif
