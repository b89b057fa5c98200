/*
 * One output's run (write.c and the lifecycle_*.c steps): the steps in
 * report order, the state a run holds, and the functions the step files
 * share.  Private to src/load.
 */
#ifndef DF_LOAD_WRITE_RUN_INT_H
#define DF_LOAD_WRITE_RUN_INT_H

#include "load/write_int.h"

#include <pthread.h>
#include <stdatomic.h>

/* Steps of the lifecycle in report order, with their stage. */
enum {
    WSTEP_SCHEMA, WSTEP_TARGET, WSTEP_DATAFRAME, WSTEP_PHYSICAL, WSTEP_STREAM, WSTEP_CONNECT, WSTEP_PREPARE, WSTEP_INIT, WSTEP_POLL, WSTEP_VALIDATE_BATCH,
    WSTEP_WRITE, WSTEP_FINALIZE, WSTEP_VALIDATION, WSTEP_SWAP, WSTEP_CLEANUP, WSTEP_COUNT_
};

typedef struct df_wstep_info {
    df_diag_stage stage;
    const char *phase;               /* failure phase of the failure context */
} df_wstep_info;

extern const df_wstep_info df__wrun_steps[WSTEP_COUNT_];

/* The watcher that turns the caller's cancel flag into a cancel of the load's connection (write_cancel.c). */
typedef struct df__wcancel {
    const _Atomic bool *flag;        /* the caller's flag (borrowed), NULL: no watcher */
    bool running;                    /* the thread exists */
    pthread_t th;                    /* the watcher */
    pthread_mutex_t mu;              /* guards conn and stop */
    pthread_cond_t cv;               /* wakes the watcher to stop */
    df_mssql_conn *conn;             /* the connection to cancel (borrowed), NULL before connect */
    bool stop;                       /* the watcher should end */
    bool bulk;                       /* a bulk load streams on conn: shut its socket instead of ATTENTION */
} df__wcancel;

/* Everything one output's execution holds. */
typedef struct df_wrun {
    const df_output_spec *spec;      /* borrowed */
    const df_write_options *opts;    /* borrowed */
    const df_write_ctx *ctx;         /* borrowed */
    df_session *s;                   /* the spec's session (borrowed) */
    const df_entry *e;               /* the spec's table entry (borrowed) */
    const df_query *query;           /* the query streamed (borrowed) */
    const df_schema *schema;         /* its output schema (borrowed) */
    df_write_plan plan;              /* SQL Server plan */
    const char *conn_str;            /* effective connection string (borrowed secret) */
    const char *conn_source;         /* "target_override" / "context_default" */
    const char *vmode;               /* target_validation_mode */
    /* query */
    df_batch_stream *stream;         /* owned until closed */
    df_exec_profile *profile;        /* owned reference or NULL */
    bool stream_done;                /* end of stream reached */
    bool stream_error;               /* the stream failed */
    /* SQL Server */
    df_mssql_conn *conn;             /* owned */
    df_mssql_bulk *bulk;             /* open bulk load or NULL */
    df_wpool *pool;                  /* parallel bulk loads into staging, or NULL */
    df_mssql_column *bulk_cols;      /* columns of the bulk load (target's types for append), owned */
    char staging[400];               /* staging table name (unquoted), "" when none */
    char *q_staging;                 /* "[s].[staging]" owned */
    bool staging_created;            /* CREATE TABLE staging succeeded */
    bool txn_open;                   /* a transaction is open on conn */
    bool commit_unknown;             /* COMMIT was sent and its answer lost */
    bool swapped;                    /* the swap committed */
    const char *strategy;            /* replace: "in_place", "rename", "create" */
    /* counts */
    int64_t rows, batches, bytes;    /* streamed and accepted */
    int64_t *observed;               /* per column longest value (UTF-16 units or bytes) */
    int64_t before, after;           /* target counts, -1 = unavailable */
    int64_t inserted;                /* rows the server reported inserted by this load's bulk loads (DONE counts) */
    const char *val_kind, *val_reason; /* validation_status */
    /* failure */
    df_stage_run stages;             /* step spans, phases, the failed step and its cause */
    char diagnostics_code[48];       /* diagnostic code for value conversion failures, "" none */
    const char *cleanup;             /* cleanup status */
    char cleanup_error[300];         /* "" none */
    bool partial;                    /* partial_write_possible */
    uint64_t write_ns;               /* sql_write elapsed */
    bool cancelled;                  /* it failed because the caller's cancel flag was set */
    df__wcancel watcher;             /* cancels the connection's running statement on the caller's flag */
} df_wrun;

/* write.c: the run's helpers */
df_errkind df__wrun_fail_msg(df_wrun *r, int step, df_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
df_diag_span df__wrun_step_begin(const df_wrun *r, int step);
bool df__wrun_step_active(const df_wrun *r, int step);

/* lifecycle_prepare.c: SQL helpers, connect, prepare, writer initialisation */
int32_t df__wrun_compare_columns(const df_write_plan *p, const df_mssql_column *cols, int32_t n, char *why, size_t size);
df_errkind df__wrun_free_name(df_wrun *r, const char *suffix, char *out, size_t size, df_error *err);
df_errkind df__wrun_prepare_step(df_wrun *r, df_error *err);
df_errkind df__wrun_table_exists(df_wrun *r, const char *name, bool *exists, df_error *err);
df_errkind df__wrun_target_columns(df_wrun *r, df_mssql_column **out, char ***names, int32_t *n, df_error *err);
df_errkind df__wrun_init_step(df_wrun *r, df_error *err);
df_errkind df__wrun_count_rows(df_wrun *r, const char *quoted, int64_t *out, df_error *err);
df_errkind df__wrun_connect_step(df_wrun *r, df_error *err);
df_errkind df__wrun_run_sql(df_wrun *r, const char *sql, df_mssql_result **res, df_error *err);
df_errkind df__wrun_quote2(const char *schema, const char *table, char **out, df_error *err);

/* lifecycle_stream.c: planning, the query stream, streaming */
df_errkind df__wrun_stream_loop(df_wrun *r, bool drain_only, df_error *err);
const char *df__wrun_conversion_code(const df_error *err);
df_errkind df__wrun_stream_steps(df_wrun *r, df_error *err);
df_errkind df__wrun_plan_steps(df_wrun *r, df_error *err);

/*
 * write_cancel.c: starts watching `flag` (NULL: nothing to watch), names the
 * connection to cancel, stops (joins; idempotent, also when never started).
 */
void df__wcancel_start(df__wcancel *w, const _Atomic bool *flag);
void df__wcancel_watch(df__wcancel *w, df_mssql_conn *conn);
void df__wcancel_stop(df__wcancel *w);
/* Marks whether a bulk load streams on the watched connection (from writer initialisation to finalize). */
void df__wcancel_bulk(df__wcancel *w, bool bulk);
/* True once the caller's cancel flag is set. */
bool df__wrun_cancelled(const df_wrun *r);

/* lifecycle_publish.c: finalize, validation, swap, cleanup */
df_errkind df__wrun_swap_step(df_wrun *r, df_error *err);
df_errkind df__wrun_validation_step(df_wrun *r, df_error *err);
void df__wrun_cleanup_step(df_wrun *r);
df_errkind df__wrun_finalize_step(df_wrun *r, df_error *err);

/* write_report.c: the run's report and failure context */
df_errkind df__wrun_build_context(df_wrun *r, const df_wtimings *report_ts, const char *report, df_buf *out, df_error *err);
void df__wrun_batch_shaping(df_json_writer *w, const df_wrun *r, bool failed);
void df__wrun_collect_timings(const df_wrun *r, df_wtimings *ts, bool failed, bool writer_only);
df_errkind df__wrun_build_report(df_wrun *r, bool failed, const df_wtimings *ts, df_buf *out, df_error *err);

#endif
