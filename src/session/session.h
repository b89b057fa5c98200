/*
 * The session core as the modules above it see it (src/load): option
 * records, the catalog entries behind df_table handles, read borrows and
 * the escaping rules for free text in messages.  What only the session
 * itself uses lives in session_int.h.
 */
#ifndef DF_SESSION_SESSION_H
#define DF_SESSION_SESSION_H

#include <pthread.h>

#include "common/common.h"
#include "common/json.h"
#include "deltafunnel/deltafunnel.h"
#include "delta/delta.h"
#include "diag/diag.h"
#include "exec/query.h"
#include "sql/catalog.h"

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

/* Provider scan options (ProviderScanOptions); -1 means "None" where allowed. */
typedef struct df_scan_opts {
    int64_t max_concurrent_file_reads_per_scan;      /* -1 = auto */
    int64_t max_concurrent_file_reads_per_partition; /* > 0; default 3 */
    int64_t output_buffer_capacity_per_partition;    /* > 0; default 1 */
    int64_t prefetch_file_count_per_partition;       /* >= 0; default 2 */
    int64_t parquet_metadata_size_hint;              /* -1 = no footer prefetch; default 65536 */
    int64_t parquet_full_file_read_threshold;        /* -1 = disabled (default) */
    bool rebalance;                                  /* intra_file_repartitioning == REBALANCE */
    bool use_view_types;                             /* accepted; our strings are always plain Utf8 */
} df_scan_opts;

/* A string-or-bounded policy of schema_options (e.g. {"nvarchar": 40}). */
typedef struct df_policy {
    char name[32];                                   /* "nvarchar_max", "nvarchar", "datetime2", ... */
    int64_t bound;                                   /* the dict form's N/P; -1 for plain strings */
} df_policy;

/* Schema mapping policies, stored for the SQL Server output issue. */
typedef struct df_schema_opts {
    df_policy string_policy;         /* nvarchar_max | observed_nvarchar | {nvarchar: N} | {ascii_varchar: N} */
    df_policy binary_policy;         /* varbinary_max | observed_varbinary | {varbinary: N} */
    df_policy timezone_policy;       /* reject | datetimeoffset | normalize_utc_datetime2 */
    df_policy timestamp_policy;      /* datetime | datetime2 (P = 7) | {datetime2: P} */
    df_policy nanosecond_policy;     /* reject_non_100ns | round_to_100ns | truncate_to_100ns */
    df_policy uint64_policy;         /* reject | decimal20_0 | checked_bigint */
    df_policy decimal_policy;        /* reject_negative_scale | normalize_negative_scale */
    df_policy decimal256_policy;     /* checked_downcast | reject */
    df_policy float_policy;          /* reject_non_finite */
    df_policy date64_policy;         /* reject_non_midnight | timestamp_datetime2 */
} df_schema_opts;

/* validation_options, stored for the SQL Server output issue. */
typedef struct df_validation_opts {
    char target_validation_mode[32];                 /* disabled / validate_if_possible / require */
    char dry_run_scan_summary_mode[32];              /* metadata_only / exhaust_scan_metadata */
    bool require_successful_planning;                /* accepted and stored (no effect, like the reference) */
} df_validation_opts;

struct df_session_options {
    char *default_connection_string;                 /* owned; never printed; NULL = none */
    int64_t target_partitions;                       /* -1 = CPU count */
    int64_t output_batch_size;                       /* -1 = 8192 */
    df_scan_opts scan;                               /* provider scan options */
    df_validation_opts validation;                   /* validation_options */
    df_schema_opts schema;                           /* schema_options */
};

/* Fills every default. */
void df__session_options_defaults(struct df_session_options *o);

/* ------------------------------------------------------------------------ */
/* Sessions, catalog entries and table handles (session.c)                   */

/*
 * One catalog entry: a registered Delta source or a derived SQL table.
 * Shared by every df_table handle that names it; fields set at creation
 * are immutable, `alias` changes once (under the session's mutation borrow).
 */
typedef struct df_entry {
    _Atomic int32_t refs;            /* handles + the session's list */
    int64_t id;                      /* session-local id */
    df_table_kind kind;              /* source or derived */
    char *name;                      /* source name; NULL for derived tables */
    char *alias;                     /* derived: registered alias, NULL while pending */
    df_query *query;                 /* the table's query (SELECT * FROM name for sources); owned */
    /* Delta sources */
    char *display_uri;               /* sanitized normalized location, "file:///t/" */
    int64_t snapshot_version;        /* pinned version; -1 for derived tables */
    df_delta_snapshot *snapshot;     /* one reference; NULL for derived tables */
    uint64_t step_ns[3];             /* source_loading, protocol_preflight, datafusion_registration */
    /* Derived tables */
    char *sql;                       /* retained SQL text (never printed) */
    char **deps;                     /* direct dependencies as registered; owned */
    int32_t ndeps;                   /* entries of deps */
    bool lineage_complete;           /* every dependency is a registered source or alias */
    uint64_t planning_ns;            /* lazy_sql_planning */
} df_entry;

struct df_session {
    _Atomic int32_t refs;            /* the caller's reference + one per live table handle */
    df_session_options *opts;        /* owned copy */
    df_catalog *catalog;             /* names visible to SQL */
    pthread_mutex_t mu;              /* guards everything below */
    int32_t readers;                 /* operations using the session (previews, streams setup) */
    bool mutating;                   /* a catalog mutation is running */
    int64_t next_id;                 /* next table id */
    df_entry **entries;              /* every entry, creation order; owned references */
    int64_t nentries;                /* entries in use */
    int64_t cap_entries;             /* entries allocated */
};

struct df_table {
    _Atomic int32_t refs;            /* handle references */
    df_session *session;             /* one session reference */
    df_entry *entry;                 /* one entry reference */
    char *name;                      /* name shown by this handle (table_<id> or the alias) */
};

/* Marks the session as used by a read operation (never fails; mutations then fail). */
void df__session_read_begin(df_session *s);
void df__session_read_end(df_session *s);
/* Batch size and partitions for executions. */
void df__session_exec_options(const df_session *s, df_exec_options *o);

/* ------------------------------------------------------------------------ */
/* Stage runner (stage_run.c)                                                */

/*
 * A sequence of timed semantic stages of one diagnostics operation: each
 * stage is a span on the owner's track (0 = the phases track), the stages
 * are grouped under the operation's phases when the runner owns them (a
 * write inside write_all does not: write_all's phases enclose it), a stage
 * may announce a progress label, and the first failing stage is recorded
 * (`failed` is the caller's index for it, -1 while none failed).
 */
typedef void (*df_stage_progress_fn)(const void *user, const char *label);

typedef struct df_stage_run {
    df_diag_operation *op;           /* borrowed */
    uint64_t owner;                  /* stage owner id, 0 = phases track */
    bool owns_phases;                /* phase transitions are ours to make */
    df_diag_phase phase_id;          /* the open phase, 0 = none */
    df_diag_span phase;              /* its span */
    df_stage_progress_fn progress;   /* progress labels, or NULL */
    const void *progress_user;
    int failed;                      /* the first failed stage's index, -1 = none */
    df_errkind failed_kind;          /* its error kind */
    char cause[DF_ERROR_MESSAGE_SIZE]; /* its message, control characters escaped (one line; quotes kept) */
} df_stage_run;

void df__stage_run_init(df_stage_run *sr, df_diag_operation *op, uint64_t owner, bool owns_phases);
void df__stage_run_set_progress(df_stage_run *sr, df_stage_progress_fn fn, const void *user);
/* Ends the open phase (result from `previous`) and opens `phase` (0 = none); no-op without phases. */
void df__stage_run_phase(df_stage_run *sr, df_diag_phase phase, df_errkind previous);
/* Announces a progress label (NULL = none). */
void df__stage_run_label(const df_stage_run *sr, const char *label);
/* Opens stage `stage`, announcing `label` first when it is not NULL. */
df_diag_span df__stage_begin(const df_stage_run *sr, df_diag_stage stage, const char *label);
/* Ends a stage's span with the result of `k`; returns k. */
df_errkind df__stage_end(df_diag_span span, df_errkind k);
/*
 * Records stage `index` as the failed one, with `k` and the message of
 * `err` (may be NULL) with its control characters escaped (once: the
 * layers below leave server text as it came), unless a stage failed
 * before.  Returns k.
 */
df_errkind df__stage_run_fail(df_stage_run *sr, int index, df_errkind k, const df_error *err);
/* Closes the open phase with the result of `k`. */
void df__stage_run_end(df_stage_run *sr, df_errkind k);

/* One stage of a fixed sequence: its caller-side id, diag stage, phase (0 = unchanged), label, body. */
typedef df_errkind (*df_stage_fn)(void *ctx, df_error *err);
typedef struct df_stage_def {
    int id;                          /* recorded as `failed` when this stage fails */
    df_diag_stage stage;
    df_diag_phase phase;             /* entered before the stage; 0 keeps the open one */
    const char *label;               /* progress label or NULL */
    df_stage_fn fn;
} df_stage_def;

/* Runs `defs` in order until one fails (recorded, with its cause); the open phase stays open. */
df_errkind df__stage_run_all(df_stage_run *sr, const df_stage_def *defs, int n, void *ctx, df_error *err);

/* ------------------------------------------------------------------------ */
/* Text helpers (text.c)                                                     */

/* Appends `text` escaped like Rust char::escape_default. */
df_errkind df__session_escape_text(df_buf *out, const char *text, size_t n, df_error *err);
/* Escapes into a fixed buffer, truncating; never fails. */
void df__session_escape_into(char *dst, size_t size, const char *text);
/*
 * Escapes only control characters (\t \r \n, others and invalid UTF-8 as
 * \u{hex}) into a fixed buffer, truncating at a character; never fails.
 * Idempotent on text it produced, so text escaped by a lower layer is not
 * escaped again.
 */
void df__session_escape_controls_into(char *dst, size_t size, const char *text);
/* Appends a location without userinfo, query or fragment, escaped. */
df_errkind df__session_sanitize_uri(df_buf *out, const char *uri, df_error *err);

#endif
