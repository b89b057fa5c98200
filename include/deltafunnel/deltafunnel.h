/*
 * Delta Funnel: the public C API.
 *
 * Programs and the Python extension use only this header.  Everything is
 * an opaque handle with open/close (or new/free) functions; every fallible
 * call returns a df_errkind (DF_OK = 0) and fills an optional df_error.  On
 * failure out-pointers are set to NULL and nothing needs to be destroyed.
 *
 * The objects:
 *
 *   df_session_options  option values for a session, validated as they are
 *                       set (the same messages as the reference Python API)
 *   df_session          a catalog of registered Delta sources and derived
 *                       SQL tables, with its options and worker threads
 *   df_delta_source     a validated, not yet registered Delta source
 *                       (location, snapshot version, storage options)
 *   df_table            a lazy table: a registered Delta source or a
 *                       derived SQL table; reads nothing until executed
 *   df_preview          a bounded, formatted result (text grid, HTML,
 *                       phase timings, optional execution profile)
 *
 * Options and arguments arrive as df_value, a small tagged value that a
 * host (the Python extension, the CLI) fills from its own values, so that
 * type checks and their messages live in one place.
 *
 * Secrets: connection strings and storage-option values are never copied
 * into messages, reprs or reports; locations are shown sanitized (no
 * user:password@, nothing after '?' or '#').
 *
 * Thread safety: a session may be used from several threads.  Previews and
 * other reads run concurrently; catalog mutations (registration, SQL
 * tables, aliases) need the session to themselves and fail with
 * DF_ERR_CONCURRENT_SESSION_MUTATION instead of waiting.
 */
#ifndef DELTAFUNNEL_DELTAFUNNEL_H
#define DELTAFUNNEL_DELTAFUNNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deltafunnel/df_alloc.h"
#include "deltafunnel/df_arrow_abi.h"
#include "deltafunnel/df_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library version ("0.1.0"); a static string. */
const char *df_version(void);

/* ------------------------------------------------------------------------ */
/* Host values                                                               */

typedef enum df_value_kind {
    DF_VALUE_NONE = 0,  /* absent / None: the default */
    DF_VALUE_BOOL,      /* `b` */
    DF_VALUE_INT,       /* `i`: an integer that fits int64 */
    DF_VALUE_BIG_INT,   /* an integer outside int64; `i` is -1 (below int64), 1 (fits
                           uint64) or 2 (beyond uint64) */
    DF_VALUE_FLOAT,     /* `f` */
    DF_VALUE_STRING,    /* `s`: NUL-terminated UTF-8 */
    DF_VALUE_MAP,       /* `entries`/`nentries`: an ordered mapping */
    DF_VALUE_OTHER,     /* any other host value (an object, ...) */
    DF_VALUE_LIST,      /* `entries`/`nentries`: a sequence (only `value` of each entry is used) */
} df_value_kind;

typedef struct df_value_entry df_value_entry;

typedef struct df_value {
    df_value_kind kind;             /* which member below is meaningful */
    bool b;                         /* DF_VALUE_BOOL */
    int64_t i;                      /* DF_VALUE_INT; range class for DF_VALUE_BIG_INT */
    double f;                       /* DF_VALUE_FLOAT */
    const char *s;                  /* DF_VALUE_STRING, borrowed */
    const df_value_entry *entries;  /* DF_VALUE_MAP, borrowed */
    size_t nentries;                /* DF_VALUE_MAP */
} df_value;

struct df_value_entry {
    df_value key;                   /* usually a string; anything else is rejected by name checks */
    df_value value;                 /* the entry's value */
};

/* Convenience constructors (no allocation; strings are borrowed). */
static inline df_value df_value_none(void) { df_value v = {DF_VALUE_NONE, false, 0, 0.0, NULL, NULL, 0}; return v; }
static inline df_value df_value_bool(bool b) { df_value v = df_value_none(); v.kind = DF_VALUE_BOOL; v.b = b; return v; }
static inline df_value df_value_int(int64_t i) { df_value v = df_value_none(); v.kind = DF_VALUE_INT; v.i = i; return v; }
static inline df_value df_value_str(const char *s) { df_value v = df_value_none(); v.kind = DF_VALUE_STRING; v.s = s; return v; }
static inline df_value df_value_map(const df_value_entry *e, size_t n) {
    df_value v = df_value_none(); v.kind = DF_VALUE_MAP; v.entries = e; v.nentries = n; return v;
}
static inline df_value df_value_list(const df_value_entry *e, size_t n) {
    df_value v = df_value_none(); v.kind = DF_VALUE_LIST; v.entries = e; v.nentries = n; return v;
}

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */

typedef enum df_progress_kind {
    DF_PROGRESS_STARTED = 1,  /* `label` names the operation ("Loading Delta source") */
    DF_PROGRESS_PHASE,        /* `label` names the phase ("Collecting preview") */
    DF_PROGRESS_FILES,        /* `files_done` of `files_total` Delta files read */
    DF_PROGRESS_ROWS,         /* cumulative `rows` and `batches` (and the files, as FILES) */
    DF_PROGRESS_FINISHED,     /* `label` is "Completed", "Failed" or "Cancelled" */
} df_progress_kind;

typedef struct df_progress_event {
    df_progress_kind kind;    /* what happened */
    const char *label;        /* STARTED / PHASE / FINISHED text; never holds locations or SQL */
    int64_t files_done;       /* FILES, ROWS: Delta files completed (0 when the query reads none) */
    int64_t files_total;      /* FILES, ROWS: Delta files planned (0 when the query reads none) */
    int64_t rows;             /* ROWS */
    int64_t batches;          /* ROWS */
    int64_t bytes;            /* ROWS: cumulative payload bytes sent (writes), 0 when unknown */
    int64_t rows_total;       /* ROWS: expected rows when known in advance, else -1 (or 0 = unset) */
    int32_t output_index;     /* write_all: 1-based output the event is about, 0 = none */
    int32_t output_count;     /* write_all: number of outputs (0 for single operations) */
    const char *scope;        /* PHASE/ROWS: the output name the event is scoped to, or NULL */
    int64_t files_pruned;     /* FILES, ROWS: Delta files pruned while planning */
} df_progress_event;

/*
 * A progress sink.  Called on the thread that runs the operation, in order;
 * it must not call back into the session.  A NULL `fn` disables progress.
 */
typedef struct df_progress {
    void (*fn)(void *user, const df_progress_event *event);  /* NULL: no progress */
    void *user;                                                /* passed to fn */
} df_progress;

/* ------------------------------------------------------------------------ */
/* Session options                                                           */

typedef struct df_session_options df_session_options;

/* A new option set with every default.  Caller frees with df_session_options_free. */
df_errkind df_session_options_new(df_session_options **out, df_error *err);
void df_session_options_free(df_session_options *opts);
/* A copy (caller frees). */
df_errkind df_session_options_copy(const df_session_options *opts, df_session_options **out, df_error *err);

/*
 * Sets one option, checking the value's type and range now.  Names are the
 * Python keywords:
 *
 *   default_mssql_connection_string   string, not blank (never shown anywhere)
 *   target_partitions                 non-negative integer or NONE (CPU count)
 *   output_batch_size                 non-negative integer or NONE (8192)
 *   validation_options                MAP: target_validation_mode,
 *                                     dry_run_scan_summary_mode,
 *                                     require_successful_planning
 *   schema_options                    MAP: string_policy, binary_policy, ...
 *   provider_scan_options.<field>     one ProviderScanOptions field:
 *                                     max_concurrent_file_reads_per_scan, ...,
 *                                     intra_file_repartitioning (string
 *                                     "fill_missing_parallelism"/"rebalance"),
 *                                     use_view_types
 *
 * Zero counts are accepted here and rejected by df_session_options_validate
 * (and so by df_session_new), as the reference does.  On failure the
 * option keeps its previous value.  Errors: DF_ERR_INVALID_OPTION_VALUE,
 * DF_ERR_INVALID_OPTION_NAME, DF_ERR_UNKNOWN_OPTION, DF_ERR_MSSQL_TARGET_CONFIG.
 */
df_errkind df_session_options_set(df_session_options *opts, const char *name, const df_value *value, df_error *err);

/*
 * Checks the values that must be positive: provider scan bounds
 * (DF_ERR_CONFIG, "configuration error: <name> must be greater than zero"),
 * then target_partitions and output_batch_size (DF_ERR_BATCH_PIPELINE).
 */
df_errkind df_session_options_validate(const df_session_options *opts, df_error *err);

/*
 * Reads one option back as JSON text (a number, string, bool, null or
 * object); secrets read back as "<redacted>".  Caller frees *out with df_free.
 */
df_errkind df_session_options_get_json(const df_session_options *opts, const char *name, char **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Sessions                                                                  */

typedef struct df_session df_session;
typedef struct df_table df_table;
typedef struct df_delta_source df_delta_source;
typedef struct df_preview df_preview;

/*
 * Creates a session (validates the options first; NULL = defaults).  The
 * options are copied.  Caller frees with df_session_free.
 */
df_errkind df_session_new(const df_session_options *opts, df_session **out, df_error *err);
/*
 * Releases the caller's reference.  Tables keep their session alive, so
 * the memory goes when the last table is released too.  Accepts NULL.
 */
void df_session_free(df_session *session);

/*
 * "deltafunnel.Session(sources=[\"a\"], derived_tables=[\"b\"])": registered
 * source names and registered derived aliases, in registration order.
 * Caller frees *out with df_free.
 */
df_errkind df_session_repr(df_session *session, char **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Delta sources                                                             */

/*
 * Validates source arguments without any I/O: `uri` must be non-empty
 * (DF_ERR_INVALID_SOURCE_URI); `version` NONE or a non-negative INT
 * (DF_ERR_INVALID_VERSION); `storage_options` NONE or a MAP of strings to
 * strings (DF_ERR_INVALID_STORAGE_OPTIONS).  NULL pointers mean NONE.
 * Caller frees with df_delta_source_free.
 */
df_errkind df_delta_source_new(const char *uri, const df_value *version, const df_value *storage_options,
                               df_delta_source **out, df_error *err);
void df_delta_source_free(df_delta_source *src);
/* The sanitized, escaped location as given (for reprs).  Borrowed. */
const char *df_delta_source_display_uri(const df_delta_source *src);
/* The requested snapshot version, or -1 for "latest at registration". */
int64_t df_delta_source_version(const df_delta_source *src);
/* "deltafunnel.PendingDeltaSource(source_uri=\"...\", snapshot_version=N|None)"; caller frees. */
df_errkind df_delta_source_repr(const df_delta_source *src, char **out, df_error *err);

/*
 * Loads the snapshot of `src` and registers it under `name` (steps
 * source_loading, protocol_preflight, datafusion_registration).  Name rules
 * and duplicates are checked first (DF_ERR_INVALID_SOURCE_NAME,
 * DF_ERR_DUPLICATE_SOURCE_NAME); the session changes only if every step
 * succeeds.  *out is a new table reference (release it).  `progress` may
 * be NULL.  Errors keep the reference (phase, kind): source_config,
 * delta_source (context {"cause": ...}), delta_protocol, ...
 */
df_errkind df_session_register_delta(df_session *session, const df_delta_source *src, const char *name,
                                     const df_progress *progress, df_table **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */

typedef enum df_table_kind {
    DF_TABLE_DELTA_SOURCE = 1,  /* a registered Delta source */
    DF_TABLE_DERIVED_SQL = 2,   /* a table defined by SQL over registered names */
} df_table_kind;

df_table *df_table_retain(df_table *table);
void df_table_release(df_table *table);

/* Session-local id (one counter per session, from 0, shared by sources and derived tables). */
int64_t df_table_id(const df_table *table);
/* The table's name ("orders", "table_3" or its alias).  Borrowed, valid while the handle lives. */
const char *df_table_name(const df_table *table);
df_table_kind df_table_get_kind(const df_table *table);
/* "delta_source" or "derived_sql". */
const char *df_table_kind_name(df_table_kind kind);
/* The sanitized normalized location of a Delta source; NULL for derived tables.  Borrowed. */
const char *df_table_source_uri(const df_table *table);
/* The pinned snapshot version of a Delta source; -1 for derived tables. */
int64_t df_table_snapshot_version(const df_table *table);
/* True when the table was made by `session`. */
bool df_table_in_session(const df_table *table, const df_session *session);
/* "deltafunnel.Table(id=1, kind=\"derived_sql\", name=\"table_1\")"; caller frees. */
df_errkind df_table_repr(const df_table *table, char **out, df_error *err);

/*
 * Plans one read-only SQL query over the registered names; reads no rows.
 * Returns a derived table named table_<id>.  Every SQL error is
 * DF_ERR_SQL_TABLE (phase "sql_table") whose context holds the specific
 * cause ({"cause_kind": "sql_syntax", "offset": 7}) and whose `offset`
 * field is the character offset when one is known; messages never echo the
 * SQL text.
 */
df_errkind df_session_table_from_sql(df_session *session, const char *sql, df_table **out, df_error *err);

/*
 * Registers a pending derived table under `name` so later SQL can use it;
 * returns a new handle with the same id and the new name.  Name errors come
 * first (source_config); a Delta source, an already aliased table or a
 * table of another session -> DF_ERR_SQL_TABLE.
 */
df_errkind df_table_alias(df_table *table, const char *name, df_table **out, df_error *err);

/*
 * The output schema as JSON: [{"index":0,"name":"id","arrow_type":"Int64",
 * "nullable":true}, ...].  Caller frees *out.
 */
df_errkind df_table_schema_json(df_table *table, char **out, df_error *err);
/* The output schema through the Arrow C Data Interface (a struct "+s" schema). */
df_errkind df_table_arrow_schema(df_table *table, struct ArrowSchema *out, df_error *err);

/*
 * Executes the table and hands its batches over as an ArrowArrayStream
 * (zero copy).  `limit` < 0 = all rows.  The stream keeps the session
 * alive and may be consumed from any thread.
 */
df_errkind df_table_execute_arrow(df_table *table, int64_t limit, struct ArrowArrayStream *out, df_error *err);
/*
 * After get_next of a stream from df_table_execute_arrow* failed: copies the
 * whole failure (kind, phase, subkind, code, offset, origin, context) into
 * *err and returns its kind, where get_last_error only has text ("[phase/kind]
 * message", for consumers that only see the C stream).  Returns
 * DF_OK, leaving *err alone, when `stream` has not failed, is released or
 * was not made by this library.
 */
df_errkind df_arrow_stream_error(const struct ArrowArrayStream *stream, df_error *err);

/*
 * As df_table_execute_arrow, stoppable from any thread: once *cancel is
 * true the running query stops within a batch (the scheduler, scans and
 * long operators poll it) and get_next fails with DF_ERR_CANCELLED.  The
 * flag is borrowed and must outlive the stream; NULL = not cancellable.
 */
df_errkind df_table_execute_arrow_cancellable(df_table *table, int64_t limit, const _Atomic bool *cancel,
                                              struct ArrowArrayStream *out, df_error *err);


/* ------------------------------------------------------------------------ */
/* Previews                                                                  */

/* Logging levels of df_log_sink events (the reference's tracing levels). */
typedef enum df_log_level {
    DF_LOG_ERROR = 1,
    DF_LOG_WARN = 2,
    DF_LOG_INFO = 3,
    DF_LOG_DEBUG = 4,
    DF_LOG_TRACE = 5,
} df_log_level;

/*
 * A structured event sink (the Python logging bridge, the CLI's --log).
 * `target` is "delta_funnel" or "arrow_sql_server"; `event` the telemetry
 * event name ("output.completed"); `fields_json` a flat JSON object of
 * extra fields (never secrets, SQL text or row values).  Called on the
 * operation's thread; must not call back into the session.
 */
typedef struct df_log_sink {
    void (*fn)(void *user, df_log_level level, const char *target, const char *event, const char *fields_json);
    void *user;                 /* passed to fn */
} df_log_sink;

typedef struct df_preview_options {
    int64_t limit;              /* rows to show (>= 0); default 20 */
    bool execution_profile;     /* build the per-operator execution profile */
    df_progress progress;       /* optional progress sink */
    df_log_sink log;            /* optional event sink (the DEBUG scan and profile summaries) */
    const _Atomic bool *cancel; /* optional: set to true from any thread to stop the preview (DF_ERR_PREVIEW_FAILED
                                   whose cause is DF_ERR_CANCELLED); borrowed for the call */
} df_preview_options;

/* Fills the defaults (limit 20, no profile, no progress, no log, no cancel flag). */
void df_preview_options_init(df_preview_options *opts);

/*
 * Runs the table with LIMIT `limit`, collects the rows and formats them.
 * Failures are DF_ERR_PREVIEW_FAILED (phase "preview") with context
 * {"failed_phase", "phase_timings", "execution_profile"}; the message names
 * the failed phase and the cause.  *out is freed with df_preview_free.
 */
df_errkind df_table_preview(df_table *table, const df_preview_options *opts, df_preview **out, df_error *err);
void df_preview_free(df_preview *preview);
/*
 * The Arrow-style text grid.  Borrowed, NUL-terminated; the length tells
 * where it ends when string data itself holds NUL bytes.
 */
const char *df_preview_text(const df_preview *preview);
size_t df_preview_text_length(const df_preview *preview);
/* The HTML table.  Borrowed, NUL-terminated. */
const char *df_preview_html(const df_preview *preview);
size_t df_preview_html_length(const df_preview *preview);
/* The seven phase timings as a JSON array.  Borrowed. */
const char *df_preview_phase_timings_json(const df_preview *preview);
/* The execution profile as a JSON object, or NULL when not requested.  Borrowed. */
const char *df_preview_execution_profile_json(const df_preview *preview);
int64_t df_preview_num_rows(const df_preview *preview);
int64_t df_preview_num_columns(const df_preview *preview);

/* One phase timing (the same facts as the JSON entries). */
typedef struct df_phase_timing {
    const char *phase_name;     /* "preview_dataframe_planning", ..., "preview_total" (static) */
    const char *status;         /* "completed", "failed" or "not_started" (static) */
    const char *reason;         /* NULL, "prior_failure" or "not_executed" (static) */
    int64_t elapsed_micros;     /* -1 when not measured */
} df_phase_timing;

/* Number of phase timings (7). */
int32_t df_preview_num_phase_timings(const df_preview *preview);
/* Fills *out with timing i; false when i is out of range. */
bool df_preview_phase_timing(const df_preview *preview, int32_t i, df_phase_timing *out);

/*
 * Formats batches read from an Arrow stream exactly as previews do (up to
 * `max_rows` rows; < 0 = all).  Consumes and releases `stream`.  Any output
 * pointer may be NULL; texts are freed with df_free, lengths exclude the
 * terminating NUL.
 */
df_errkind df_format_arrow_stream(struct ArrowArrayStream *stream, int64_t max_rows, char **text, size_t *text_len,
                                  char **html, size_t *html_len, df_error *err);

/* ------------------------------------------------------------------------ */
/* SQL Server outputs                                                        */

/*
 * An output description: a table of a session, a target (schema, table,
 * load mode) and an optional connection string override.  Immutable;
 * holds its table (and so its session) alive.
 */
typedef struct df_output_spec df_output_spec;

/*
 * Checks target arguments without planning or I/O:
 * `schema`/`table` containing '.' -> DF_ERR_DOTTED_TARGET_NAME; blank
 * schema or table -> DF_ERR_MSSQL_TARGET_CONFIG; `load_mode` not one of
 * "append_existing", "create_and_load", "replace" -> DF_ERR_INVALID_LOAD_MODE;
 * an empty `connection_string` -> DF_ERR_MSSQL_TARGET_CONFIG.  `name`
 * (NULL = the table name) and `connection_string` (NULL = the session
 * default) are optional.  Caller frees *out with df_output_spec_free.
 */
df_errkind df_table_to_mssql(df_table *table, const char *schema, const char *target_table, const char *load_mode,
                             const char *name, const char *connection_string, df_output_spec **out, df_error *err);
void df_output_spec_free(df_output_spec *spec);
/* The output name (borrowed). */
const char *df_output_spec_name(const df_output_spec *spec);
/* True when the spec's table belongs to `session`. */
bool df_output_spec_in_session(const df_output_spec *spec, const df_session *session);
/*
 * "deltafunnel.MssqlOutputSpec(name=\"..\", source_table=\"..\", schema=\"..\",
 * table=\"..\", load_mode=\"..\")"; never shows connection data.  Caller frees.
 */
df_errkind df_output_spec_repr(const df_output_spec *spec, char **out, df_error *err);


/*
 * The most bulk connections one staged output loads with: parallel_connections
 * is 1..DF_MAX_PARALLEL_CONNECTIONS everywhere it can be given (write options,
 * write_all options, job files, Python).  The one copy of the limit.
 */
#define DF_MAX_PARALLEL_CONNECTIONS 16

typedef struct df_write_options {
    bool dry_run;               /* plan only: no connection, no rows (returns the dry-run report) */
    bool execution_profile;     /* add the per-operator execution profile to the report */
    df_progress progress;       /* optional progress sink */
    df_log_sink log;            /* optional event sink */
    int32_t parallel_connections; /* bulk connections loading the staging table of create_and_load /
                                     replace (1..DF_MAX_PARALLEL_CONNECTIONS; more are capped);
                                     0 = the default (1, docs/writes.md) */
    const _Atomic bool *cancel; /* optional: set to true to cancel between batches */
} df_write_options;

/* Fills the defaults (execute, no profile, no progress, no log, default parallelism). */
void df_write_options_init(df_write_options *opts);

/*
 * Writes one output (Table.write_to_mssql).  With `dry_run` it plans
 * without I/O and returns the dry-run report; otherwise it runs the
 * load-mode lifecycle (docs/writes.md) and returns the execute report.
 * *report_json is a JSON object (caller frees with df_free).
 * Failures keep the reference (phase, kind): planning errors
 * (mssql_target_config, mssql_schema_planning, mssql_ddl_planning, ...) and
 * DF_ERR_MSSQL_WRITE_PHASE with the failing phase as df_error.phase and the
 * failure context (which embeds the partial report) as df_error.context.
 */
df_errkind df_output_write(const df_output_spec *spec, const df_write_options *opts, char **report_json,
                           df_error *err);

typedef struct df_write_all_options {
    df_write_options write;     /* dry_run, profile, progress, log, parallelism, cancel */
    /*
     * The `options` mapping of write_all (NULL or NONE = defaults): keys
     * cache_mode ("auto" | "explicit" | "disabled"), cache_aliases (a LIST
     * of alias names), and ours: cache_memory_budget_bytes (a non-negative
     * INT; beyond it cached batches spill to disk; default 256 MiB) and
     * cache_spill_directory (a STRING; default $TMPDIR or /tmp).
     */
    const df_value *options;
    bool stream_benchmark;      /* drain the output streams without SQL Server */
} df_write_all_options;

void df_write_all_options_init(df_write_all_options *opts);

/*
 * Plans every output, then runs them in order: a failed
 * output makes the later ones `skipped`; shared derived aliases are cached
 * once per run (spilling to disk beyond the memory budget).  Every spec
 * must belong to `session` (DF_ERR_OUTPUT_SESSION_MISMATCH); output names
 * must be unique (DF_ERR_MSSQL_WORKFLOW_PLANNING).  Output failures are
 * reported in the returned report, not raised; planning and cache errors
 * are raised (DF_ERR_WRITE_ALL_CACHE_FAILED with its context).  *report_json
 * is freed by the caller with df_free.
 */
df_errkind df_session_write_all(df_session *session, df_output_spec *const *specs, int32_t nspecs,
                                const df_write_all_options *opts, char **report_json, df_error *err);

/*
 * Runs a job file (TOML or JSON; docs/jobs.md): registers its sources,
 * plans its SQL tables and aliases, and writes its outputs with
 * write_all semantics (or plans them with `dry_run`).  `path` names the
 * file; relative source locations resolve against its directory.
 * *report_json is the write_all report (caller frees).  Job-file errors are
 * DF_ERR_CONFIG with the line and the key in the message.
 */
df_errkind df_job_run(const char *path, bool dry_run, const df_progress *progress, const df_log_sink *log,
                      char **report_json, df_error *err);
/*
 * As df_job_run; setting *cancel (from any thread or a signal handler; it
 * is only read) stops the running output as df_write_options.cancel does
 * (rolled back, later outputs skipped).  NULL = not cancellable.
 */
df_errkind df_job_run_cancellable(const char *path, bool dry_run, const df_progress *progress, const df_log_sink *log,
                                  const _Atomic bool *cancel, char **report_json, df_error *err);

/* ------------------------------------------------------------------------ */
/* Diagnostics: ranked profiles and whole-process Perfetto captures          */

/*
 * Errors of this section carry the phase "ranked_profile" (or
 * "perfetto_diagnostics", or "config" for argument errors), no context, and
 * the reference's specific kind as df_error.kind (df_errkinds.def), such as
 * DF_ERR_PROFILE_ALREADY_ACTIVE, DF_ERR_OUTPUT_UNAVAILABLE,
 * DF_ERR_CAPTURE_HANDSHAKE_FAILED, or a report kind such as
 * DF_ERR_INCOMPLETE_CAPTURE.
 */

typedef struct df_ranked_profile df_ranked_profile;

typedef struct df_ranked_profile_options {
    const char *report_path;    /* the HTML report to write (required; missing parents are created) */
    const char *artifact_path;  /* the .dfprofile artifact to write, or NULL */
    uint32_t sample_hz;         /* 100 or 1000 CPU samples per CPU-second */
    uint64_t max_operator_activity_spans; /* operator-activity budget of the profiled operations (> 0) */
} df_ranked_profile_options;

/* Fills the defaults: no paths, 1000 Hz, 100,000 spans. */
void df_ranked_profile_options_init(df_ranked_profile_options *opts);

/* What a finished ranked profile recorded. */
typedef struct df_ranked_profile_result {
    uint64_t capture_scope_id;  /* scope of the profiled operations */
    char backend[32];           /* sampler used: "perf_event" or "thread_cpu_timer" */
    char backend_reason[160];   /* why that sampler */
    double effective_hz;        /* distinct samples per sampled CPU-second */
    uint64_t samples;           /* native samples recorded */
    uint64_t samples_lost;      /* samples the sampler could not keep */
    uint64_t trace_bytes;       /* size of the (removed) raw trace */
    uint64_t semantic_nodes;    /* semantic records of the model */
    uint64_t function_nodes;    /* function records of the model */
    bool capture_complete;      /* the model's capture health */
} df_ranked_profile_result;

/*
 * Starts an operation-scoped ranked profile on the calling thread: checks
 * the options (DF_ERR_INVALID_OPTION_VALUE, phase "config": sample rate,
 * budget, paths that do not name files, report and artifact naming the same
 * file through any alias), resolves the outputs (kind "output_unavailable":
 * not regular files, parents not creatable or writable), then starts an
 * in-process capture with native sampling.  Operations the calling thread
 * begins until df_ranked_profile_finish() are profiled; other threads'
 * operations are not.  One ranked profile (or whole-process capture) per
 * process: kind "profile_already_active".  Other kinds:
 * "capture_scope_unavailable", "temporary_directory_failed",
 * "not_available" (no sampler can run on this host; the message says why).
 * The sampler is chosen automatically; DELTAFUNNEL_PROFILE_SAMPLER
 * ("perf_event" / "thread_cpu_timer") forces one.  On failure nothing was
 * created and *out is NULL.
 */
df_errkind df_ranked_profile_start(const df_ranked_profile_options *opts, df_ranked_profile **out, df_error *err);

/*
 * Stops the capture, builds the ranked model of the profiled operations,
 * writes the artifact (when asked) and the HTML report (each atomically,
 * replacing an existing file), removes the temporary raw trace and frees
 * rp, whatever happens.  `result` may be NULL.  Errors: phase
 * "ranked_profile" with the report's kinds ("incomplete_capture",
 * "unsafe_identity", "persist_failed", ...) or "capture_failed".
 * Accepts NULL (DF_OK).
 */
df_errkind df_ranked_profile_finish(df_ranked_profile *rp, df_ranked_profile_result *result, df_error *err);

/*
 * The settings capture-workload hands to its workload (environment
 * variables DELTA_FUNNEL_PERFETTO_*, read and removed by the host, passed
 * here verbatim; NULL = absent).
 */
typedef struct df_perfetto_handshake {
    const char *gate_socket;   /* DELTA_FUNNEL_PERFETTO_GATE_SOCKET: absolute path of the start gate */
    const char *wrapper_pid;   /* DELTA_FUNNEL_PERFETTO_WRAPPER_PID: the wrapper that owns the gate */
    const char *workload_pid;  /* DELTA_FUNNEL_PERFETTO_WORKLOAD_PID: must be this process */
    const char *trace_path;    /* DELTA_FUNNEL_PERFETTO_TRACE: trace file to create (absolute) */
    const char *mode;          /* DELTA_FUNNEL_PERFETTO_MODE: short | streaming | deep-system */
    const char *sample_hz;     /* DELTA_FUNNEL_PERFETTO_SAMPLE_HZ: 100 | 1000 */
} df_perfetto_handshake;

/* Names of the variables, in df_perfetto_handshake order (NULL-terminated). */
extern const char *const df_perfetto_handshake_variables[];

/*
 * Whole-process capture (init_perfetto_diagnostics): validates the
 * handshake (all fields absent: kind "capture_unavailable", there is no
 * capture-workload to record for; some absent, a pid that is not a
 * positive number or a relative path: "capture_handshake_invalid"; a
 * workload pid that is not this process: "capture_handshake_failed"),
 * connects to the gate and checks that its peer is the wrapper
 * ("capture_handshake_failed"; socket reads time out after 5 s), starts the
 * capture of every operation of the process (failures: "capture_unavailable",
 * with the sampler's reason), reports it to the wrapper and waits at most
 * `wait_timeout_seconds` (0 = not at all) for the wrapper to acknowledge
 * ("capture_timeout").  The trace is finished by
 * df_perfetto_diagnostics_finish(), which is also registered with atexit().
 * Phase "perfetto_diagnostics".  Runs once per process: later calls return
 * the first call's result.
 */
df_errkind df_perfetto_diagnostics_start(const df_perfetto_handshake *h, double wait_timeout_seconds, df_error *err);

/*
 * Stops the whole-process capture, finishes its trace and tells the
 * wrapper the capture was finalized.  Idempotent; does nothing without a
 * capture.  Safe to call from an exit handler.
 */
void df_perfetto_diagnostics_finish(void);

/* True while a whole-process capture started by df_perfetto_diagnostics_start records. */
bool df_perfetto_diagnostics_active(void);

/* ------------------------------------------------------------------------ */
/* Logging filters                                                           */

/*
 * Checks a logging filter in the reference syntax ("target=level,level,...";
 * levels off/error/warn/info/debug/trace or 0-5).  DF_ERR_INVALID_LOGGING_FILTER
 * with the reference's message when it does not parse.
 */
df_errkind df_log_filter_validate(const char *filter, df_error *err);

/* ------------------------------------------------------------------------ */
/* Synthetic data                                                            */

typedef struct df_datagen_options {
    const char *output;         /* table directory (created; must not hold a Delta log) */
    int64_t rows;               /* total rows (>= 0) */
    int32_t files;              /* data files per partition (>= 1); default 1 */
    int32_t partitions;         /* partition values (0 = unpartitioned); default 0 */
    uint64_t seed;              /* generator seed; same seed, same bytes */
    const char *codec;          /* "none", "snappy" (default) or "zstd" */
    const char *shape;          /* "mixed" (default), "narrow", "wide" or "events" */
    int64_t row_group_rows;     /* rows per row group (0 = 131072) */
} df_datagen_options;

typedef struct df_datagen_result {
    int64_t rows;               /* rows written */
    int64_t files;              /* data files written */
    int64_t bytes;              /* data bytes written */
} df_datagen_result;

void df_datagen_options_init(df_datagen_options *opts);
/*
 * Writes a deterministic synthetic Delta table (Parquet data files plus one
 * JSON commit whose add actions carry statistics), streaming in bounded
 * memory.  `result` may be NULL.
 */
df_errkind df_datagen_run(const df_datagen_options *opts, df_datagen_result *result, df_error *err);

#ifdef __cplusplus
}
#endif
#endif
