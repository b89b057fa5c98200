/*
 * Queries: the API the session layer uses to plan and run SQL.
 *
 *   df_query_plan      SQL text -> parsed, bound, optimized read-only query
 *   df_query_execute   query -> pull-based stream of batches, run by
 *                      `target_partitions` workers
 *   df_query_limit     query -> the same query wrapped in LIMIT (previews)
 *   df_query_profile_json / df_query_explain   what ran and how
 *
 * A df_query is immutable once planned: it may be executed any number of
 * times, also concurrently; every execution builds a fresh physical plan.
 * It keeps its table providers alive (references), not the catalog.
 *
 * Errors of df_query_plan carry the character offset of the problem in
 * err->offset (0-based, counted in Unicode characters) when there is one:
 *   DF_ERR_SQL_SYNTAX          cannot be parsed ("syntax error at line 1,
 *                              column 8: expected expression, found `FROM`")
 *   DF_ERR_SQL_UNKNOWN_TABLE   a FROM name is not in the catalog
 *   DF_ERR_SQL_UNKNOWN_COLUMN  a column name does not resolve
 *   DF_ERR_SQL_AMBIGUOUS_COLUMN  it resolves to several columns
 *   DF_ERR_SQL_TYPE            operand types do not fit
 *   DF_ERR_SQL_NOT_READ_ONLY   DDL, DML or several statements
 *   DF_ERR_SQL_UNSUPPORTED     valid SQL we do not run yet
 * Execution errors: DF_ERR_DIVISION_BY_ZERO, DF_ERR_NUMERIC_OVERFLOW,
 * DF_ERR_CAST, DF_ERR_OUT_OF_MEMORY (also a memory limit), DF_ERR_CANCELLED
 * and whatever a table provider reports.
 */
#ifndef DF_EXEC_QUERY_H
#define DF_EXEC_QUERY_H

#include "sql/catalog.h"

typedef struct df_query df_query;
typedef struct df_exec_profile df_exec_profile;

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */

/*
 * Parses, binds and optimizes one read-only query (SELECT, VALUES, WITH,
 * set operations).  A trailing semicolon is allowed.  On success the caller
 * owns *out (free with df_query_free); on failure *out is NULL.
 */
df_errkind df_query_plan(df_catalog *cat, const char *sql, df_query **out, df_error *err);

/* Frees a query.  Accepts NULL.  Running streams keep what they need alive. */
void df_query_free(df_query *q);

/* The result schema (borrowed; valid while q lives). */
df_schema *df_query_schema(const df_query *q);

/* The SQL text the query was planned from (borrowed). */
const char *df_query_sql(const df_query *q);

/*
 * The registered names the SQL reads directly (sources and views, not what
 * views read in turn), deduplicated, in order of first use, spelled as
 * registered.  Returns a borrowed array of *count names valid while q lives.
 */
const char *const *df_query_direct_dependencies(const df_query *q, int32_t *count);

/*
 * Registers the query as a view named `name` in `cat` (the bound plan and the
 * SQL text are kept).  Failures as df_catalog_register_view.
 */
df_errkind df_query_register_as_view(df_catalog *cat, const char *name, const df_query *q, df_error *err);

/*
 * A new query returning at most `limit` rows of q (limit >= 0), re-optimized
 * so the limit reaches the scans.  The caller owns *out.
 */
df_errkind df_query_limit(const df_query *q, int64_t limit, df_query **out, df_error *err);

/*
 * Appends a readable description of the optimized logical plan and of the
 * physical plan (as built for default options) to `out`.
 */
df_errkind df_query_explain(const df_query *q, df_buf *out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Execution                                                                 */

struct df_diag_query;

typedef struct df_exec_options {
    int32_t target_partitions;      /* workers; <= 0 means the number of CPUs */
    int32_t batch_size;             /* rows per batch; <= 0 means 8192 */
    const _Atomic bool *cancel;     /* optional: set to true to cancel (polled per batch) */
    bool execution_profile;         /* collect per-operator metrics (see df_exec_stream_profile) */
    int64_t memory_limit;           /* bytes for hash tables and sort buffers; <= 0 = unlimited */
    /*
     * The traced query this execution belongs to (df_diag_query_begin), or
     * NULL: then the executor records no spans (one predictable branch per
     * batch).  When set, partition tasks, operator execute/poll_next
     * activities and the Delta scan's output waits are recorded (see
     * src/exec/README.md); the query must outlive the stream.
     */
    struct df_diag_query *diag_query;
} df_exec_options;

/* Fills the defaults (all partitions, 8192 rows, no cancel flag, no profile, no limit, not traced). */
void df_exec_options_init(df_exec_options *opts);

/*
 * Starts executing q.  The returned stream (owned by the caller, close with
 * df_batch_stream_close) is pull-based: work happens while the caller
 * pulls; with several partitions, workers run ahead into bounded queues.
 * Closing the stream early cancels and joins the workers.  Batches are never
 * empty; the stream's schema equals df_query_schema(q).  opts may be NULL.
 */
df_errkind df_query_execute(const df_query *q, const df_exec_options *opts, df_batch_stream **out,
                            df_error *err);

/*
 * How far a running query stream is through its Delta files, summed over
 * its Delta scans: files completed of those planned, and those pruned while
 * planning (by partition values or statistics).  Safe to call from the
 * thread that pulls the stream while workers scan.  Returns false when the
 * stream is not a query stream or reads no Delta file (a memory table, a
 * plan with every file pruned): progress then has no file counter to show.
 */
typedef struct df_file_progress {
    int64_t done;             /* files completed */
    int64_t total;            /* files planned */
    int64_t pruned_planning;  /* files removed before execution */
} df_file_progress;
bool df_exec_stream_file_progress(df_batch_stream *stream, df_file_progress *out);

/* ------------------------------------------------------------------------ */
/* Profiles                                                                  */

/*
 * The execution behind a query stream, profiled or not (a new reference;
 * release with df_exec_profile_release), or NULL for any other stream: what
 * df_exec_terminal_events reads once the stream is closed.
 */
df_exec_profile *df_exec_stream_execution(df_batch_stream *stream);

/*
 * The execution profile of a stream returned by df_query_execute (a new
 * reference; release with df_exec_profile_release), or NULL when profiling
 * was off or the stream is not a query stream.  The profile outlives the
 * stream; it is complete once the stream has ended or been closed.
 */
df_exec_profile *df_exec_stream_profile(df_batch_stream *stream);
void df_exec_profile_release(df_exec_profile *profile);

/* What the caller adds to an execution profile (the top-level keys besides the operators). */
typedef struct df_profile_meta {
    const char *scope;              /* "preview", "mssql_output", "write_all_cache_alias" */
    int64_t row_limit;              /* delta_funnel_row_limit; < 0 writes null */
} df_profile_meta;

/*
 * Appends the profile as one JSON object:
 *   {"scope", "outcome": "success"|"error"|"cancelled", "partial",
 *    "delta_funnel_row_limit", "operators": [{node_id, parent_node_id,
 *    operator_name, output_partition_count, metrics_available,
 *    aggregated_metrics: [...], metrics: [...], delta_provider_read_stats}]}
 * Operators are in pre-order; metrics are {name, category, partition,
 * output_partition, value_kind, value, components}.
 */
/*
 * The reference's DEBUG summaries of a finished (closed) execution, as log
 * events: one `delta_provider_parquet_io_summary` per Delta scan (its
 * source, snapshot version, outcome and Parquet I/O counters) and, when the
 * execution was profiled, one `query_execution_profile_terminal` (scope,
 * outcome, operator counts, the root's rows and the busiest operator).
 * `emit` receives each event's name and its fields as a flat JSON object.
 */
typedef void (*df_exec_event_fn)(void *user, const char *event, const char *fields_json);
void df_exec_terminal_events(const df_exec_profile *x, const df_profile_meta *meta, df_exec_event_fn emit,
                             void *user);

df_errkind df_query_profile_json(const df_exec_profile *profile, const df_profile_meta *meta, df_buf *out,
                                 df_error *err);

#endif
