/*
 * SQL Server writes: internals shared by the planner (write_plan.c), the
 * single-output lifecycle (write.c), reports (write_report.c), write_all
 * with its caches (write_all.c, write_cache.c) and job files (job.c).
 * Nothing here is visible outside src/load/ (and its tests).
 */
#ifndef DF_LOAD_WRITE_INT_H
#define DF_LOAD_WRITE_INT_H

#include "diag/diag.h"
#include "mssql/mssql.h"
#include "session/session.h"

/* ------------------------------------------------------------------------ */
/* Output specs                                                              */

typedef enum df_load_mode {
    DF_LOAD_APPEND_EXISTING = 1,  /* "append_existing" */
    DF_LOAD_CREATE_AND_LOAD = 2,  /* "create_and_load" */
    DF_LOAD_REPLACE = 3,          /* "replace" */
} df_load_mode;

struct df_output_spec {
    df_table *table;                 /* one table reference (keeps the session alive) */
    char *name;                      /* output name (defaults to the target table) */
    char *schema;                    /* target schema */
    char *target;                    /* target table */
    df_load_mode mode;               /* load mode */
    char *connection_string;         /* override (secret; never printed) or NULL */
};

/* "append_existing", ... (static). */
const char *df__write_mode_name(df_load_mode mode);

/* ------------------------------------------------------------------------ */
/* Planning (write_plan.c)                                                   */

/* How a column's length is chosen. */
typedef enum df_observe {
    DF_OBSERVE_NONE = 0,             /* the planned type is final */
    DF_OBSERVE_NVARCHAR = 1,         /* observed_nvarchar: max UTF-16 length while streaming */
    DF_OBSERVE_VARBINARY = 2,        /* observed_varbinary: max byte length while streaming */
} df_observe;

/* The SQL Server side of one output: columns, DDL, policies. */
typedef struct df_write_plan {
    int32_t ncols;                   /* output columns */
    df_mssql_column *cols;           /* planned target columns (names point into `names`) */
    char **names;                    /* owned column names */
    df_observe *observe;             /* per column */
    bool any_observed;               /* some column has an observed length */
    df_mssql_nanos_policy nanos;     /* nanosecond policy for the bulk writer */
    char *quoted_target;             /* "[schema].[table]" (owned) */
    char *ddl;                       /* CREATE TABLE for the final table (create_and_load) or NULL */
    int32_t diagnostic_count;        /* warnings kept (errors fail planning) */
} df_write_plan;

/*
 * Maps an output schema to SQL Server columns with the session's schema
 * policies and renders the DDL for `mode`.  Errors are the
 * reference's planning errors: DF_ERR_MSSQL_SCHEMA_PLANNING (with context
 * {"diagnostics": [...]}), DF_ERR_DUPLICATE_MSSQL_OUTPUT_FIELD,
 * DF_ERR_MSSQL_DDL_PLANNING (no columns), DF_ERR_MSSQL_DDL_TARGET_IDENTIFIER.
 * On failure *plan is cleared.
 */
df_errkind df__write_plan_build(const df_schema *schema, const df_schema_opts *so, const char *output_name,
                                const char *schema_name, const char *table, df_load_mode mode, df_write_plan *plan,
                                df_error *err);
void df__write_plan_clear(df_write_plan *plan);

/* Appends "[name]" with ']' doubled. */
df_errkind df__write_quote(df_buf *out, const char *name, df_error *err);
/* Appends N'text' with ' doubled. */
df_errkind df__write_nliteral(df_buf *out, const char *text, df_error *err);
/*
 * Renders CREATE TABLE [schema].[table] ( ... ); for the plan's columns
 * (observed columns take `lengths` when given, else their (max) type).
 */
df_errkind df__write_render_ddl(const df_write_plan *plan, const char *schema_name, const char *table,
                                const int64_t *lengths, df_buf *out, df_error *err);
/* Checks a target identifier: not empty, no control characters, at most 128 characters. */
df_errkind df__write_check_identifier(const char *what, const char *name, const char *output_name, df_error *err);

/* ------------------------------------------------------------------------ */
/* Reports (write_report.c)                                                  */

/* Status values of phase timings. */
typedef struct df_wtiming {
    const char *name;                /* phase_name (static) */
    const char *status;              /* completed / failed / skipped / not_started (static) */
    const char *reason;              /* NULL or a reason code (static) */
    int64_t micros;                  /* elapsed, -1 = null */
} df_wtiming;

#define DF_WRITE_MAX_TIMINGS 24

/* A list of phase timings in report order. */
typedef struct df_wtimings {
    int32_t n;                       /* entries used */
    df_wtiming t[DF_WRITE_MAX_TIMINGS]; /* entries */
} df_wtimings;

/* Adds the phase timing `name` (the vocabulary's, see diag/diag_names.def). */
void df__wtimings_add(df_wtimings *ts, df_diag_timing_name name, const char *status, const char *reason,
                      int64_t micros);
/* Adds the timing a diag stage (owner) feeds, mapping its state; not started -> (not_started, reason). */
void df__wtimings_add_stage(df_wtimings *ts, const df_diag_operation *op, df_diag_stage stage,
                            uint64_t owner, const char *not_started_reason);
void df__json_timings(df_json_writer *w, const df_wtimings *ts);
/* {"kind": kind, "reason": reason|null} */
void df__json_status(df_json_writer *w, const char *kind, const char *reason);
/* {"kind": kind, "value": v|null} (+ "reason" when with_reason) */
void df__json_count(df_json_writer *w, const char *kind, int64_t value, bool has_value, const char *reason,
                    bool with_reason);
/* The output schema array [{index, name, arrow_type, nullable}]. */
df_errkind df__json_output_schema(df_json_writer *w, const df_schema *schema, df_error *err);

/* ------------------------------------------------------------------------ */
/* One output's execution (write.c)                                          */

/* What write_all tells the single-output runner. */
typedef struct df_write_ctx {
    df_diag_operation *op;           /* the operation the stages belong to */
    uint64_t owner;                  /* stage owner (1 for single writes, output index in write_all) */
    int32_t output_index;            /* 1-based in write_all, 0 for single writes */
    int32_t output_count;            /* outputs of the write_all, 0 for single writes */
    const df_query *query;           /* the query to run (replanned against caches) or NULL = the table's */
    bool stream_benchmark;           /* drain only, no SQL Server */
    bool in_write_all;               /* adds output_stream_setup / sql_write timings */
} df_write_ctx;

/* The outcome of one output (write_all keeps these for its report). */
typedef struct df_write_result {
    bool ok;                         /* the output succeeded */
    char *report;                    /* execute report JSON object, owned */
    char *context;                   /* failure context JSON or NULL, owned */
    char *summary;                   /* on failure: the sanitized message, owned */
    df_wtimings timings;             /* the report's phase timings */
    int64_t output_rows;             /* exact rows, or partial count on failure */
    bool output_rows_exact;          /* output_row_count kind exact (else partial) */
    int64_t target_rows;             /* target_row_count value, -1 = unavailable */
    char validation_kind[32];        /* validation_status.kind */
    char validation_reason[40];      /* validation_status.reason or "" */
    char *batch_shaping;             /* batch_shaping JSON object, owned */
} df_write_result;

void df__write_result_clear(df_write_result *r);

/* True for NULL, "" and text of ASCII whitespace only (output_spec.c). */
bool df__write_is_blank(const char *s);

/* Plans one output (no I/O): fills the plan and the planning timings (write_plan.c). */
df_errkind df__write_plan_output(const df_output_spec *spec, const df_schema *schema, df_write_plan *plan,
                                 df_error *err);

/*
 * Runs one output (planning included) inside `ctx`.  Returns DF_OK with
 * *res filled for success and for output failures (res->ok false, err
 * filled with the reference error and context); returns another kind only
 * for planning errors and out-of-memory, which write_all raises.
 */
df_errkind df__write_run(const df_output_spec *spec, const df_write_options *opts, const df_write_ctx *ctx,
                         df_write_result *res, df_error *err);

/* Dry-run report of one output appended to `w`. */
df_errkind df__write_dry_run_report(const df_output_spec *spec, df_json_writer *w, df_error *err);

/* Emits a log event (no-op without a sink).  fields_json may be NULL. */
void df__write_log(const df_write_options *opts, df_log_level level, const char *event, const char *fields_json);

/* Sends a progress event. */
/* A ROWS event, with the Delta files `stream` has read so far (when it is a query stream). */
void df__write_progress_rows(const df_write_options *opts, const df_write_ctx *ctx, const char *scope,
                             int64_t rows, int64_t batches, int64_t bytes, df_batch_stream *stream);
void df__write_progress(const df_write_options *opts, df_progress_kind kind, const char *label,
                        const df_write_ctx *ctx, const char *scope, int64_t rows, int64_t batches, int64_t bytes);

/* ------------------------------------------------------------------------ */
/* Parallel bulk loading (write_parallel.c)                                  */

typedef struct df_wpool df_wpool;

/*
 * Starts `n` worker threads loading `table` (a staging heap): worker 0 uses
 * (conn0, bulk0) — the pool takes over bulk0 even on failure — and workers
 * 1..n-1 open their own connections and bulk loads.  On failure *out may
 * still be set: abort it.
 */
df_errkind df__wpool_start(df_mssql_conn *conn0, df_mssql_bulk *bulk0, const char *conn_str, int n, const char *table,
                           const df_mssql_column *cols, int32_t ncols, const df_mssql_bulk_options *bo, df_wpool **out,
                           df_error *err);
/* Queues a batch (retained); blocks while the queue is full; fails with the first worker error. */
df_errkind df__wpool_push(df_wpool *p, df_batch *b, df_error *err);
/*
 * Diagnostics: the workers work for the span current on the calling thread
 * from now on (df_diag_context_capture; each worker enters it before its
 * next batch or its final flush).  Nothing when no capture runs.
 */
void df__wpool_enter(df_wpool *p);
/*
 * Waits for the queue to drain, finishes every bulk load (*rows = rows the server reports) and frees the pool.
 * Setting *cancel (optional) while it waits shuts the connections: the loads fail at once.
 */
df_errkind df__wpool_finish(df_wpool *p, const _Atomic bool *cancel, int64_t *rows, df_error *err);
/* Stops the workers, abandons their loads, closes the extra connections and frees the pool.  Accepts NULL. */
void df__wpool_abort(df_wpool *p);
/* As df__wpool_abort; `discard` drops the open loads at once (a cancel: the server need not read what is in flight). */
void df__wpool_stop(df_wpool *p, bool discard);
/* Payload bytes sent so far by all workers. */
int64_t df__wpool_bytes(df_wpool *p);

/* Source reports for every registered source of `s`; `used[i]` lists output names per source. */
typedef struct df_source_usage {
    int32_t nnames;                  /* outputs using the source */
    const char **names;              /* output names (borrowed), owned array */
    bool unknown;                    /* some output's lineage is incomplete */
} df_source_usage;

/* FNV-1a 64 of the trimmed SQL, 16 hex digits. */
void df__write_sql_hash(const char *sql, char out[17]);

/*
 * The registered sources an entry reads (transitively through aliases),
 * as session entries; *complete false when lineage is incomplete.  Caller
 * frees *out (borrowed entries).
 */
df_errkind df__write_used_sources(df_session *s, const df_entry *e, df_entry ***out, int32_t *n, bool *complete,
                                  df_error *err);

/*
 * Appends the sources[] array for `s` (registration order).  `executed`:
 * 0 dry run (metadata only), 1 executed (exact file counts), 2 stream
 * benchmark (executed without provider statistics).
 */
df_errkind df__write_sources_json(df_session *s, df_json_writer *w, const df_output_spec *const *specs, int32_t n,
                                  int executed, df_error *err);

#endif
