/*
 * One SQL Server output: planning, the query stream, and the load-mode
 * lifecycle (docs/writes.md has the SQL of every step and what each mode
 * guarantees).
 *
 * Nothing becomes visible in the target before the final `swap_target`
 * step, in every mode:
 *
 *   append_existing  BEGIN TRANSACTION; [pre-count]; INSERT BULK into the
 *                    target; post-count; COMMIT (the swap).  Any failure
 *                    rolls the transaction back: the target is as before.
 *   create_and_load  CREATE TABLE staging (<t>__df_load_<n>); INSERT BULK
 *                    WITH (TABLOCK); count; in one transaction holding an
 *                    application lock: the target must still be absent,
 *                    sp_rename staging -> target.  Failure: DROP staging.
 *   replace          CREATE TABLE staging (<t>__df_replace_<n>); INSERT BULK
 *                    WITH (TABLOCK); count; in one transaction holding the
 *                    lock (waiting up to 60 s for concurrent replaces):
 *                    when the target exists with the same columns,
 *                    TRUNCATE + INSERT ... SELECT into it (indexes,
 *                    constraints, triggers and permissions stay); else
 *                    rename the old table away, rename staging in, drop
 *                    the old one.  Failure: DROP staging; the target is
 *                    untouched unless the COMMIT succeeded.
 *
 * Each step is a diagnostics stage of the operation (owner = output), so
 * the report's phase timings and the trace come from the same spans.
 * Output failures are returned as DF_ERR_MSSQL_WRITE_PHASE with the
 * reference's failure context (core-spec 5.5).
 */
#include "load/write_int.h"

#include <stdio.h>

#define APPLOCK_TIMEOUT_MS 60000
#define MAX_NAME_TRIES 100

/* ------------------------------------------------------------------------ */
/* Output specs                                                              */

static bool blank(const char *s) {
    for (; s && *s; s++)
        if (!(*s == ' ' || (*s >= '\t' && *s <= '\r'))) return false;
    return true;
}

static df_errkind target_config_error(df_error *err, const char *option, const char *what) {
    df_error_set(err, DF_ERR_MSSQL_TARGET_CONFIG, "MSSQL target configuration error for option `%s`: %s", option, what);
    df_error_set_phase(err, "mssql_target_config");
    return DF_ERR_MSSQL_TARGET_CONFIG;
}

df_errkind df_table_to_mssql(df_table *table, const char *schema, const char *target, const char *load_mode,
                             const char *name, const char *connection_string, df_output_spec **out, df_error *err) {
    *out = NULL;
    if (strchr(schema, '.')) {
        df_error_set(err, DF_ERR_DOTTED_TARGET_NAME, "`schema` must be passed separately and must not contain `.`");
        df_error_set_phase(err, "config");
        return DF_ERR_DOTTED_TARGET_NAME;
    }
    if (strchr(target, '.')) {
        df_error_set(err, DF_ERR_DOTTED_TARGET_NAME, "`table` must be passed separately and must not contain `.`");
        df_error_set_phase(err, "config");
        return DF_ERR_DOTTED_TARGET_NAME;
    }
    if (blank(schema)) return target_config_error(err, "target.schema", "schema must not be empty");
    if (blank(target)) return target_config_error(err, "target.table", "table must not be empty");
    df_load_mode mode;
    if (!strcmp(load_mode, "append_existing"))
        mode = DF_LOAD_APPEND_EXISTING;
    else if (!strcmp(load_mode, "create_and_load"))
        mode = DF_LOAD_CREATE_AND_LOAD;
    else if (!strcmp(load_mode, "replace"))
        mode = DF_LOAD_REPLACE;
    else {
        char shown[120];
        df__session_escape_into(shown, sizeof shown, load_mode);
        df_error_set(err, DF_ERR_INVALID_LOAD_MODE, "invalid `load_mode` value `%s`", shown);
        df_error_set_phase(err, "config");
        return DF_ERR_INVALID_LOAD_MODE;
    }
    if (connection_string && blank(connection_string))
        return target_config_error(err, "connection.connection_string", "connection string must not be empty");
    df_output_spec *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    s->schema = df_strdup(schema);
    s->target = df_strdup(target);
    s->name = df_strdup(name ? name : target);
    s->connection_string = connection_string ? df_strdup(connection_string) : NULL;
    s->mode = mode;
    if (!s->schema || !s->target || !s->name || (connection_string && !s->connection_string)) {
        s->table = NULL;
        df_output_spec_free(s);
        return DF_OOM(err);
    }
    s->table = df_table_retain(table);
    *out = s;
    return DF_OK;
}

void df_output_spec_free(df_output_spec *s) {
    if (!s) return;
    if (s->connection_string) {
        memset(s->connection_string, 0, strlen(s->connection_string));
        df_free(s->connection_string);
    }
    df_free(s->schema);
    df_free(s->target);
    df_free(s->name);
    if (s->table) df_table_release(s->table);
    df_free(s);
}

const char *df_output_spec_name(const df_output_spec *s) { return s->name; }

bool df_output_spec_in_session(const df_output_spec *s, const df_session *session) {
    return df_table_in_session(s->table, session);
}

df_errkind df_output_spec_repr(const df_output_spec *s, char **out, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    const char *parts[5][2] = {{"name", s->name},
                               {"source_table", s->table->name},
                               {"schema", s->schema},
                               {"table", s->target},
                               {"load_mode", df__write_mode_name(s->mode)}};
    df_errkind k = df_buf_append_str(&b, "deltafunnel.MssqlOutputSpec(", err);
    for (int i = 0; k == DF_OK && i < 5; i++) {
        k = df_buf_printf(&b, err, "%s%s=\"", i ? ", " : "", parts[i][0]);
        if (k == DF_OK) k = df__session_escape_text(&b, parts[i][1], strlen(parts[i][1]), err);
        if (k == DF_OK) k = df_buf_append_char(&b, '"', err);
    }
    if (k == DF_OK) k = df_buf_append_char(&b, ')', err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

void df_write_options_init(df_write_options *o) { memset(o, 0, sizeof *o); }

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

void df__write_log(const df_write_options *opts, df_log_level level, const char *event, const char *fields_json) {
    if (!opts || !opts->log.fn) return;
    opts->log.fn(opts->log.user, level, "delta_funnel", event, fields_json ? fields_json : "{}");
}

void df__write_progress(const df_write_options *opts, df_progress_kind kind, const char *label,
                        const df_write_ctx *ctx, const char *scope, int64_t rows, int64_t batches, int64_t bytes) {
    if (!opts || !opts->progress.fn) return;
    df_progress_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.label = label;
    ev.rows = rows;
    ev.batches = batches;
    ev.bytes = bytes;
    ev.rows_total = -1;
    ev.output_index = ctx ? ctx->output_index : 0;
    ev.output_count = ctx ? ctx->output_count : 0;
    ev.scope = scope;
    opts->progress.fn(opts->progress.user, &ev);
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

/* Steps of the lifecycle in report order, with their stage. */
enum {
    S_SCHEMA, S_TARGET, S_DATAFRAME, S_PHYSICAL, S_STREAM, S_CONNECT, S_PREPARE, S_INIT, S_POLL, S_VALIDATE_BATCH,
    S_WRITE, S_FINALIZE, S_VALIDATION, S_SWAP, S_CLEANUP, S_COUNT_
};

static const struct {
    df_diag_stage stage;
    const char *timing;              /* phase_timings name */
    const char *phase;               /* failure phase (5.5) */
} steps[S_COUNT_] = {
    {DF_DIAG_STAGE_PLAN_OUTPUT_SCHEMA, "output_schema_planning", "mssql_schema_planning"},
    {DF_DIAG_STAGE_PLAN_SQL_SERVER_TARGET, "sql_target_planning", "mssql_schema_planning"},
    {DF_DIAG_STAGE_BUILD_QUERY_DATAFRAME, "query_dataframe_planning", "query_dataframe_planning"},
    {DF_DIAG_STAGE_BUILD_PHYSICAL_PLAN, "query_physical_planning", "query_physical_planning"},
    {DF_DIAG_STAGE_SET_UP_QUERY_STREAM, "query_stream_setup", "query_stream_setup"},
    {DF_DIAG_STAGE_CONNECT, "sql_server_connection", "connect"},
    {DF_DIAG_STAGE_PREPARE_TARGET_LIFECYCLE, "prepare_target_lifecycle", "prepare_target_lifecycle"},
    {DF_DIAG_STAGE_INITIALIZE_BULK_WRITER, "initialize_writer", "initialize_writer"},
    {DF_DIAG_STAGE_POLL_QUERY_BATCH, "poll_batch_stream", "poll_batch_stream"},
    {DF_DIAG_STAGE_VALIDATE_BATCH_SCHEMA, "validate_batch_schema", "validate_batch_schema"},
    {DF_DIAG_STAGE_WRITE_BATCH, "write_batch", "write_batch"},
    {DF_DIAG_STAGE_FINALIZE_WRITER, "finalize", "finalize"},
    {DF_DIAG_STAGE_VALIDATE_WRITTEN_TARGET, "validation", "validation"},
    {DF_DIAG_STAGE_SWAP_REPLACE_TARGET, "swap_target", "swap_target"},
    {DF_DIAG_STAGE_CLEAN_UP_PREPARED_TARGET, "cleanup", "cleanup"},
};

/* Everything one output's execution holds. */
typedef struct wrun {
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
    const char *val_kind, *val_reason; /* validation_status */
    /* failure */
    int failed_step;                 /* -1 none */
    df_errkind cause_kind;           /* kind of the underlying error */
    char cause[DF_ERROR_MESSAGE_SIZE]; /* escaped underlying message */
    char diagnostics_code[48];       /* diagnostic code for value conversion failures, "" none */
    const char *cleanup;             /* cleanup status */
    char cleanup_error[300];         /* "" none */
    bool partial;                    /* partial_write_possible */
    uint64_t write_ns;               /* sql_write elapsed */
} wrun;

static bool step_active(const wrun *r, int step) {
    df_diag_timing t = df_diag_operation_stage_timing(r->ctx->op, steps[step].stage, r->ctx->owner);
    return t.state != DF_DIAG_TIMING_NOT_STARTED;
}

static df_diag_span step_begin(const wrun *r, int step) {
    return df_diag_stage_begin(r->ctx->op, steps[step].stage, r->ctx->owner);
}

static void step_end(df_diag_span span, df_errkind k) {
    df_diag_span_end(span, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
}

/* Records the failure of `step` with the underlying error in *err. */
static df_errkind fail(wrun *r, int step, df_errkind k, df_error *err) {
    if (r->failed_step < 0) {
        r->failed_step = step;
        r->cause_kind = k;
        df__session_escape_into(r->cause, sizeof r->cause, err ? err->message : df_errkind_name(k));
    }
    return k;
}

static df_errkind fail_msg(wrun *r, int step, df_error *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static df_errkind fail_msg(wrun *r, int step, df_error *err, const char *fmt, ...) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "%s", msg);
    return fail(r, step, DF_ERR_MSSQL_WRITE_PHASE, err);
}

static void progress_phase(const wrun *r, const char *label) {
    df__write_progress(r->opts, DF_PROGRESS_PHASE, label, r->ctx, r->spec->name, r->rows, r->batches, r->bytes);
}

/* ------------------------------------------------------------------------ */
/* SQL helpers                                                               */

/* Runs a statement; server errors become "SQL Server statement execution failed: ...". */
static df_errkind run_sql(wrun *r, const char *sql, df_mssql_result **res, df_error *err) {
    df_mssql_result *tmp = NULL;
    df_errkind k = df_mssql_query(r->conn, sql, &tmp, err);
    if (k == DF_OK) {
        if (res)
            *res = tmp;
        else
            df_mssql_result_free(tmp);
        return DF_OK;
    }
    if (res) *res = NULL;
    if (k == DF_ERR_MSSQL_SERVER_ERROR && err) df_error_prefix(err, "SQL Server statement execution failed");
    return k;
}

/* The first value of the first result set as an integer (bit, ints). */
static bool scalar_i64(const df_mssql_result *res, int64_t *out) {
    if (!res || res->nsets < 1 || res->sets[0]->nrows < 1 || res->sets[0]->ncols < 1) return false;
    const df_vec *v = res->sets[0]->cols[0];
    if (!df_vec_is_valid(v, 0)) return false;
    switch (v->type->id) {
    case DF_TYPE_BOOL: *out = df_vec_bool(v, 0); return true;
    case DF_TYPE_UINT8: *out = DF_VEC_VALUES(v, const uint8_t)[0]; return true;
    case DF_TYPE_INT16: *out = DF_VEC_VALUES(v, const int16_t)[0]; return true;
    case DF_TYPE_INT32: *out = DF_VEC_VALUES(v, const int32_t)[0]; return true;
    case DF_TYPE_INT64: *out = DF_VEC_VALUES(v, const int64_t)[0]; return true;
    default: return false;
    }
}

/* Does table `name` exist in the target schema (user tables only)? */
static df_errkind table_exists(wrun *r, const char *name, bool *exists, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_append_str(&b,
                                      "SELECT CASE WHEN EXISTS (SELECT 1 FROM sys.tables AS t INNER JOIN sys.schemas AS s "
                                      "ON s.schema_id = t.schema_id WHERE t.name = ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, name, err);
    if (k == DF_OK) k = df_buf_append_str(&b, " AND s.name = ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, r->spec->schema, err);
    if (k == DF_OK)
        k = df_buf_append_str(&b, ") THEN CAST(1 AS bit) ELSE CAST(0 AS bit) END AS [exists]", err);
    df_mssql_result *res = NULL;
    if (k == DF_OK) k = run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    int64_t v = 0;
    if (k == DF_OK && !scalar_i64(res, &v))
        k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "the existence probe returned no value");
    *exists = v != 0;
    df_mssql_result_free(res);
    return k;
}

/* COUNT_BIG(*) of a quoted table. */
static df_errkind count_rows(wrun *r, const char *quoted, int64_t *out, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "SELECT COUNT_BIG(*) AS [row_count] FROM %s", quoted);
    df_mssql_result *res = NULL;
    if (k == DF_OK) k = run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    if (k == DF_OK && !scalar_i64(res, out))
        k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "the row count query returned no value");
    df_mssql_result_free(res);
    return k;
}

/* "<base><suffix><n>" with the base cut (at a character boundary) so the name stays <= 128 characters. */
static void derived_name(char *out, size_t size, const char *base, const char *suffix, int n) {
    char tail[48];
    snprintf(tail, sizeof tail, "%s%d", suffix, n);
    size_t keep_chars = 128 - strlen(tail), chars = 0, bytes = 0;
    for (const unsigned char *p = (const unsigned char *)base; *p; p++) {
        if ((*p & 0xC0) != 0x80) {
            if (chars == keep_chars) break;
            chars++;
        }
        bytes++;
    }
    if (bytes + strlen(tail) + 1 > size) bytes = size - strlen(tail) - 1;
    memcpy(out, base, bytes);
    snprintf(out + bytes, size - bytes, "%s", tail);
}

/* The first free "<table><suffix><n>" (n = 0..99). */
static df_errkind free_name(wrun *r, const char *suffix, char *out, size_t size, df_error *err) {
    for (int n = 0; n < MAX_NAME_TRIES; n++) {
        derived_name(out, size, r->spec->target, suffix, n);
        bool exists;
        DF_TRY(table_exists(r, out, &exists, err));
        if (!exists) return DF_OK;
    }
    return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "no free %s name for [%s].[%s] after %d tries", suffix + 2,
                        r->spec->schema, r->spec->target, MAX_NAME_TRIES);
}

static df_errkind quote2(const char *schema, const char *table, char **out, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df__write_quote(&b, schema, err);
    if (k == DF_OK) k = df_buf_append_char(&b, '.', err);
    if (k == DF_OK) k = df__write_quote(&b, table, err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Planning and the query stream                                             */

df_errkind df__write_plan_output(const df_output_spec *spec, const df_schema *schema, df_write_plan *plan,
                                 df_error *err) {
    df_session *s = spec->table->session;
    if (!spec->connection_string && !s->opts->default_connection_string) {
        char o[160];
        df__session_escape_into(o, sizeof o, spec->name);
        df_error_set(err, DF_ERR_MISSING_MSSQL_CONNECTION, "MSSQL target for output `%s` has no effective connection", o);
        df_error_set_phase(err, "mssql_target_config");
        return DF_ERR_MISSING_MSSQL_CONNECTION;
    }
    if (blank(spec->name) || !strcmp(spec->name, "<unnamed>")) {
        df_error_set(err, DF_ERR_INVALID_MSSQL_OUTPUT_IDENTITY,
                     "MSSQL schema planning error: output names must not be blank or `<unnamed>`");
        df_error_set_phase(err, "mssql_schema_planning");
        return DF_ERR_INVALID_MSSQL_OUTPUT_IDENTITY;
    }
    return df__write_plan_build(schema, &s->opts->schema, spec->name, spec->schema, spec->target, spec->mode, plan,
                                err);
}

static df_errkind plan_steps(wrun *r, df_error *err) {
    df_diag_span sp = step_begin(r, S_SCHEMA);
    r->schema = df_query_schema(r->query);
    step_end(sp, DF_OK);
    sp = step_begin(r, S_TARGET);
    df_errkind k = df__write_plan_output(r->spec, r->schema, &r->plan, err);
    step_end(sp, k);
    if (k != DF_OK) return k;
    r->observed = df_calloc((size_t)DF_MAX(r->plan.ncols, 1), sizeof *r->observed);
    return r->observed ? DF_OK : DF_OOM(err);
}

static df_errkind stream_steps(wrun *r, df_error *err) {
    df_diag_span sp = step_begin(r, S_DATAFRAME);
    step_end(sp, DF_OK); /* the query was planned with the table (or replanned against caches) */
    sp = step_begin(r, S_PHYSICAL);
    df_exec_options eo;
    df__session_exec_options(r->s, &eo);
    eo.execution_profile = r->opts->execution_profile;
    eo.cancel = r->opts->cancel;
    /* Traced: the output's query (owner = output name) with its planning span around physical planning. */
    df_diag_query *dq = NULL;
    df_errkind k = df_diag_query_begin(r->ctx->op, DF_DIAG_QUERY_MSSQL_OUTPUT, r->spec->name, &dq, err);
    eo.diag_query = dq;
    df_diag_span planning = df_diag_query_planning_begin(dq);
    if (k == DF_OK) k = df_query_execute(r->query, &eo, &r->stream, err);
    df_diag_span_end(planning, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    step_end(sp, k);
    if (k != DF_OK) return fail(r, S_PHYSICAL, k, err);
    sp = step_begin(r, S_STREAM);
    if (!df_schema_equals(r->stream->schema, r->schema))
        k = df_error_set(err, DF_ERR_DEPENDENCY_COMPATIBILITY, "the stream schema differs from the planned schema");
    if (k == DF_OK && r->opts->execution_profile) r->profile = df_exec_stream_profile(r->stream);
    step_end(sp, k);
    return k == DF_OK ? DF_OK : fail(r, S_STREAM, k, err);
}

/* ------------------------------------------------------------------------ */
/* Connect and prepare                                                       */

static df_errkind connect_step(wrun *r, df_error *err) {
    progress_phase(r, "Connecting to SQL Server");
    df_diag_span sp = step_begin(r, S_CONNECT);
    df_errkind k = df_mssql_connect_string(r->conn_str, &r->conn, err);
    step_end(sp, k);
    if (k == DF_OK) return DF_OK;
    char cause[DF_ERROR_MESSAGE_SIZE];
    df__session_escape_into(cause, sizeof cause, err ? err->message : "");
    if (k == DF_ERR_MSSQL_CONNECTION_STRING)
        df_error_set(err, k, "SQL Server connection string is invalid");
    else if (!strncmp(cause, "TCP connection", 14))
        df_error_set(err, k, "%s", cause);
    else if (k == DF_ERR_MSSQL_CONNECT && strncmp(cause, "SQL Server client setup failed", 30) != 0)
        df_error_set(err, k, "TCP connection to SQL Server failed: %s", cause);
    else if (strncmp(cause, "SQL Server client setup failed", 30) != 0)
        df_error_set(err, k, "SQL Server client setup failed: %s", cause);
    return fail(r, S_CONNECT, k, err);
}

static df_errkind prepare_append(wrun *r, df_error *err) {
    bool exists;
    DF_TRY(table_exists(r, r->spec->target, &exists, err));
    if (!exists)
        return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "append-existing target table %s does not exist",
                            r->plan.quoted_target);
    DF_TRY(df_mssql_begin(r->conn, err));
    r->txn_open = true;
    if (!strcmp(r->vmode, "disabled")) return DF_OK;
    df_diag_span sp = df_diag_stage_begin(r->ctx->op, DF_DIAG_STAGE_READ_PRE_WRITE_ROW_COUNT, r->ctx->owner);
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    df_errkind k = count_rows(r, r->plan.quoted_target, &r->before, &tmp);
    step_end(sp, k);
    if (k == DF_OK) return DF_OK;
    r->before = -1;
    if (k != DF_ERR_MSSQL_SERVER_ERROR) { /* the connection failed, not the permission */
        df_error_move(err, &tmp);
        return k;
    }
    if (!strcmp(r->vmode, "require")) {
        r->val_kind = "required_but_failed";
        r->val_reason = "permission_unavailable";
        df_error_move(err, &tmp);
        return k;
    }
    df_error_clear(&tmp);
    return DF_OK;
}

static df_errkind prepare_staged(wrun *r, df_error *err) {
    bool exists;
    DF_TRY(table_exists(r, r->spec->target, &exists, err));
    if (exists && r->spec->mode == DF_LOAD_CREATE_AND_LOAD)
        return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "create-and-load target table %s already exists",
                            r->plan.quoted_target);
    const char *suffix = r->spec->mode == DF_LOAD_REPLACE ? "__df_replace_" : "__df_load_";
    /*
     * The first free name wins: CREATE TABLE itself is the test, so two
     * concurrent loads never pick the same staging table (2714 = exists).
     */
    for (int n = 0; n < MAX_NAME_TRIES; n++) {
        derived_name(r->staging, sizeof r->staging, r->spec->target, suffix, n);
        df_free(r->q_staging);
        r->q_staging = NULL;
        DF_TRY(quote2(r->spec->schema, r->staging, &r->q_staging, err));
        df_buf ddl;
        df_buf_init(&ddl, 0);
        df_errkind k = df__write_render_ddl(&r->plan, r->spec->schema, r->staging, NULL, &ddl, err);
        if (k == DF_OK) k = run_sql(r, ddl.data, NULL, err);
        df_buf_free(&ddl);
        if (k == DF_OK) {
            r->staging_created = true;
            return DF_OK;
        }
        if (k != DF_ERR_MSSQL_SERVER_ERROR || !err || err->code != 2714) return k;
    }
    r->staging[0] = 0;
    return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "no free staging table name for %s after %d tries",
                        r->plan.quoted_target, MAX_NAME_TRIES);
}

static df_errkind prepare_step(wrun *r, df_error *err) {
    progress_phase(r, "Preparing target table");
    df_diag_span sp = step_begin(r, S_PREPARE);
    df_errkind k = r->spec->mode == DF_LOAD_APPEND_EXISTING ? prepare_append(r, err) : prepare_staged(r, err);
    step_end(sp, k);
    return k == DF_OK ? DF_OK : fail(r, S_PREPARE, k, err);
}

/* ------------------------------------------------------------------------ */
/* Writer initialisation                                                     */

/* The target's updatable columns, parsed into SQL Server types. */
static df_errkind target_columns(wrun *r, df_mssql_column **out, char ***names, int32_t *n, df_error *err) {
    *out = NULL;
    *names = NULL;
    *n = 0;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_append_str(&b,
                                      "SELECT c.name, ty.name AS type_name, c.max_length, c.precision, c.scale, "
                                      "c.is_nullable FROM sys.columns AS c INNER JOIN sys.types AS ty ON "
                                      "ty.user_type_id = c.user_type_id WHERE c.object_id = OBJECT_ID(", err);
    if (k == DF_OK) k = df__write_nliteral(&b, r->plan.quoted_target, err);
    if (k == DF_OK) k = df_buf_append_str(&b, ") AND c.is_identity = 0 AND c.is_computed = 0 ORDER BY c.column_id", err);
    df_mssql_result *res = NULL;
    if (k == DF_OK) k = run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    if (k != DF_OK) return k;
    df_batch *rows = res->nsets ? res->sets[0] : NULL;
    int32_t m = rows ? (int32_t)rows->nrows : 0;
    df_mssql_column *cols = df_calloc((size_t)DF_MAX(m, 1), sizeof *cols);
    char **nm = df_calloc((size_t)DF_MAX(m, 1), sizeof *nm);
    if (!cols || !nm) k = DF_OOM(err);
    for (int32_t i = 0; k == DF_OK && i < m; i++) {
        int32_t len;
        const uint8_t *s = df_vec_bytes(rows->cols[0], i, &len);
        nm[i] = df_calloc((size_t)len + 1, 1);
        if (!nm[i]) {
            k = DF_OOM(err);
            break;
        }
        memcpy(nm[i], s, (size_t)len);
        const uint8_t *ts = df_vec_bytes(rows->cols[1], i, &len);
        char tname[64];
        snprintf(tname, sizeof tname, "%.*s", len, (const char *)ts);
        int64_t maxlen = DF_VEC_VALUES(rows->cols[2], const int16_t)[i];
        int prec = DF_VEC_VALUES(rows->cols[3], const uint8_t)[i];
        int scale = DF_VEC_VALUES(rows->cols[4], const uint8_t)[i];
        bool nullable = df_vec_bool(rows->cols[5], i);
        char text[96];
        bool national = !strcmp(tname, "nvarchar") || !strcmp(tname, "nchar");
        bool sized = national || !strcmp(tname, "varchar") || !strcmp(tname, "char") || !strcmp(tname, "varbinary") ||
                     !strcmp(tname, "binary");
        if (sized && maxlen < 0)
            snprintf(text, sizeof text, "%s(max)", tname);
        else if (sized)
            snprintf(text, sizeof text, "%s(%lld)", tname, (long long)(national ? maxlen / 2 : maxlen));
        else if (!strcmp(tname, "decimal") || !strcmp(tname, "numeric"))
            snprintf(text, sizeof text, "%s(%d,%d)", tname, prec, scale);
        else if (!strcmp(tname, "datetime2") || !strcmp(tname, "time") || !strcmp(tname, "datetimeoffset"))
            snprintf(text, sizeof text, "%s(%d)", tname, scale);
        else if (!strcmp(tname, "float"))
            snprintf(text, sizeof text, "float(%d)", prec > 24 ? 53 : 24);
        else
            snprintf(text, sizeof text, "%s", tname);
        k = df_mssql_type_parse(text, &cols[i], err);
        cols[i].name = nm[i];
        cols[i].nullable = nullable;
    }
    df_mssql_result_free(res);
    if (k != DF_OK) {
        for (int32_t i = 0; nm && i < m; i++) df_free(nm[i]);
        df_free(nm);
        df_free(cols);
        return k;
    }
    *out = cols;
    *names = nm;
    *n = m;
    return DF_OK;
}

static bool same_family(df_mssql_sqltype a, df_mssql_sqltype b) {
    if (a == b) return true;
    if ((a == DF_MSSQL_DECIMAL || a == DF_MSSQL_NUMERIC) && (b == DF_MSSQL_DECIMAL || b == DF_MSSQL_NUMERIC)) return true;
    /* datetime is accepted where datetime2 is planned (the reference's rule) */
    return a == DF_MSSQL_DATETIME2 && (b == DF_MSSQL_DATETIME || b == DF_MSSQL_SMALLDATETIME);
}

/*
 * Compares the plan with the target's columns: same count, same names in
 * order (exact), same type family.  Nullability may differ: values are
 * checked against the target's nullability row by row.  Returns the index
 * of the first mismatch, or -1.
 */
static int32_t compare_columns(const df_write_plan *p, const df_mssql_column *cols, int32_t n, char *why, size_t size) {
    if (n != p->ncols) {
        snprintf(why, size, "the target has %d updatable columns, the output %d", n, p->ncols);
        return DF_MIN(n, p->ncols);
    }
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(cols[i].name, p->cols[i].name) != 0) {
            char a[140], b[140];
            df__session_escape_into(a, sizeof a, p->cols[i].name);
            df__session_escape_into(b, sizeof b, cols[i].name);
            snprintf(why, size, "column %d is `%.100s` in the output but `%.100s` in the target", i, a, b);
            return i;
        }
        if (!same_family(p->cols[i].type, cols[i].type)) {
            df_buf x, y;
            df_buf_init(&x, 32);
            df_buf_init(&y, 32);
            df_mssql_type_render(&p->cols[i], &x, NULL);
            df_mssql_type_render(&cols[i], &y, NULL);
            char a[140];
            df__session_escape_into(a, sizeof a, p->cols[i].name);
            snprintf(why, size, "column `%.100s` is planned as %.40s but the target has %.40s", a, x.data ? x.data : "?",
                     y.data ? y.data : "?");
            df_buf_free(&x);
            df_buf_free(&y);
            return i;
        }
    }
    return -1;
}

static df_errkind init_step(wrun *r, df_error *err) {
    df_diag_span sp = step_begin(r, S_INIT);
    df_mssql_bulk_options bo;
    memset(&bo, 0, sizeof bo);
    bo.nanos = r->plan.nanos;
    df_errkind k = DF_OK;
    const char *table;
    r->bulk_cols = df_calloc((size_t)DF_MAX(r->plan.ncols, 1), sizeof *r->bulk_cols);
    if (!r->bulk_cols) k = DF_OOM(err);
    if (k == DF_OK && r->spec->mode == DF_LOAD_APPEND_EXISTING) {
        df_mssql_column *cols = NULL;
        char **names = NULL;
        int32_t n = 0;
        k = target_columns(r, &cols, &names, &n, err);
        char why[300];
        if (k == DF_OK && compare_columns(&r->plan, cols, n, why, sizeof why) >= 0) {
            k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE,
                             "arrow-sql-server initialize_writer failed: target schema does not match the planned "
                             "output: %s (schema_mismatch)", why);
            snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "schema_mismatch");
        }
        /* The target's exact types (lengths, precisions, nullability) drive the encoding. */
        for (int32_t i = 0; k == DF_OK && i < n; i++) {
            r->bulk_cols[i] = cols[i];
            r->bulk_cols[i].name = r->plan.cols[i].name;
            r->observed[i] = 0;
        }
        for (int32_t i = 0; names && i < n; i++) df_free(names[i]);
        df_free(names);
        df_free(cols);
        table = r->plan.quoted_target;
    } else {
        if (k == DF_OK) memcpy(r->bulk_cols, r->plan.cols, sizeof *r->bulk_cols * (size_t)r->plan.ncols);
        bo.tablock = true; /* a heap we created: bulk-update locks, minimal logging */
        table = r->q_staging;
    }
    if (k == DF_OK) k = df_mssql_bulk_begin(r->conn, table, r->bulk_cols, r->plan.ncols, &bo, &r->bulk, err);
    /* Staging heaps only: more connections load the same heap concurrently (never the target itself). */
    int n = r->opts->parallel_connections;
    if (k == DF_OK && bo.tablock && n > 1) {
        df_mssql_bulk *b0 = r->bulk;
        r->bulk = NULL; /* the pool owns it now */
        k = df__wpool_start(r->conn, b0, r->conn_str, DF_MIN(n, 16), table, r->bulk_cols, r->plan.ncols, &bo,
                            &r->pool, err);
    }
    step_end(sp, k);
    return k == DF_OK ? DF_OK : fail(r, S_INIT, k, err);
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */

/* Longest value of a string (UTF-16 units) or binary (bytes) column in this batch. */
static int64_t longest(const df_vec *v, df_observe how) {
    int64_t best = 0;
    const int32_t *off = DF_VEC_VALUES(v, const int32_t);
    const uint8_t *data = v->data ? v->data->data : NULL;
    for (int64_t i = 0; i < v->length; i++) {
        int64_t a = off[i], b = off[i + 1];
        if (b - a <= best && how == DF_OBSERVE_VARBINARY) continue;
        if (how == DF_OBSERVE_VARBINARY) {
            best = b - a;
            continue;
        }
        if (b - a <= best) continue; /* UTF-16 units never exceed UTF-8 bytes */
        int64_t units = 0;
        for (int64_t j = a; j < b; j++) units += ((data[j] & 0xC0) != 0x80) + (data[j] >= 0xF0);
        if (units > best) best = units;
    }
    return best;
}

static void observe_batch(wrun *r, const df_batch *b) {
    if (!r->plan.any_observed) return;
    for (int32_t j = 0; j < r->plan.ncols; j++) {
        if (r->plan.observe[j] == DF_OBSERVE_NONE) continue;
        int64_t m = longest(b->cols[j], r->plan.observe[j]);
        if (m > r->observed[j]) r->observed[j] = m;
    }
}

/* A short diagnostics code for a value conversion message of the bulk writer. */
static const char *conversion_code(const char *msg) {
    static const struct {
        const char *needle, *code;
    } map[] = {
        {"too long", "value_too_long"},         {"NOT NULL", "null_in_non_nullable_column"},
        {"non-ASCII", "value_too_long"},        {"NaN", "non_finite_float"},
        {"finite", "non_finite_float"},         {"decimal", "decimal_out_of_range"},
        {"100 ns", "lossy_conversion_requires_policy"}, {"timestamp out of range", "timestamp_out_of_range"},
        {"date out of range", "timestamp_out_of_range"}, {"out of range", "integer_out_of_range"},
        {"time zone", "timezone_unsupported"},  {"time of day", "lossy_conversion_requires_policy"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(map); i++)
        if (strstr(msg, map[i].needle)) return map[i].code;
    return "value_conversion_unsupported";
}

static df_errkind write_one(wrun *r, df_batch *b, df_error *err) {
    df_diag_span sp = step_begin(r, S_VALIDATE_BATCH);
    df_errkind k = DF_OK;
    if (b->schema != r->schema && !df_schema_equals(b->schema, r->schema)) {
        k = df_error_set(err, DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION,
                         "MSSQL batch schema validation error for output `%s`: the batch schema differs from the "
                         "planned output schema", r->spec->name);
        snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "schema_mismatch");
    }
    step_end(sp, k);
    if (k != DF_OK) return fail(r, S_VALIDATE_BATCH, k, err);
    observe_batch(r, b);
    sp = step_begin(r, S_WRITE);
    uint64_t before = r->pool ? 0 : df_mssql_bulk_bytes(r->bulk);
    /* With a pool, write_batch times the hand-over (which waits while every connection is busy). */
    k = r->pool ? df__wpool_push(r->pool, b, err) : df_mssql_bulk_write(r->bulk, b, err);
    step_end(sp, k);
    if (k != DF_OK) {
        if (k == DF_ERR_VALUE_CONVERSION && err) {
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err->message);
            const char *code = conversion_code(msg);
            snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "%s", code);
            df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "arrow-sql-server write_batch failed: %s (%s)", msg, code);
        }
        return fail(r, S_WRITE, k, err);
    }
    r->rows += b->nrows;
    r->batches++;
    r->bytes = r->pool ? df__wpool_bytes(r->pool) : r->bytes + (int64_t)(df_mssql_bulk_bytes(r->bulk) - before);
    df__write_progress(r->opts, DF_PROGRESS_ROWS, NULL, r->ctx, r->spec->name, r->rows, r->batches, r->bytes);
    return DF_OK;
}

/* Pulls batches until the stream ends; `sink` NULL drains (stream benchmark). */
static df_errkind stream_loop(wrun *r, bool drain_only, df_error *err) {
    for (;;) {
        if (r->opts->cancel && atomic_load(r->opts->cancel)) {
            df_error_set(err, DF_ERR_CANCELLED, "the write was cancelled");
            return fail(r, S_POLL, DF_ERR_CANCELLED, err);
        }
        df_batch *b = NULL;
        df_diag_span sp = step_begin(r, S_POLL);
        df_errkind k = df_batch_stream_next(r->stream, &b, err);
        step_end(sp, k);
        if (k != DF_OK) {
            r->stream_error = true;
            return fail(r, S_POLL, k, err);
        }
        if (!b) {
            r->stream_done = true;
            return DF_OK;
        }
        if (drain_only) {
            df_diag_span v = step_begin(r, S_VALIDATE_BATCH);
            k = df_schema_equals(b->schema, r->schema) ? DF_OK
                                                         : df_error_set(err, DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION,
                                                                        "the batch schema differs from the plan");
            step_end(v, k);
            if (k == DF_OK) {
                r->rows += b->nrows;
                r->batches++;
                df__write_progress(r->opts, DF_PROGRESS_ROWS, NULL, r->ctx, r->spec->name, r->rows, r->batches, 0);
            } else {
                fail(r, S_VALIDATE_BATCH, k, err);
            }
        } else {
            k = write_one(r, b, err);
        }
        df_batch_release(b);
        if (k != DF_OK) return k;
    }
}

/* ------------------------------------------------------------------------ */
/* Finalize, validate, swap                                                  */

/* Narrows observed columns of the staging table to the longest value seen. */
static df_errkind narrow_observed(wrun *r, df_error *err) {
    if (!r->plan.any_observed || !r->staging_created) return DF_OK;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    for (int32_t i = 0; k == DF_OK && i < r->plan.ncols; i++) {
        if (r->plan.observe[i] == DF_OBSERVE_NONE) continue;
        df_mssql_column c = r->plan.cols[i];
        int64_t cap = r->plan.observe[i] == DF_OBSERVE_NVARCHAR ? 4000 : 8000;
        if (r->observed[i] > cap) continue; /* stays (max) */
        c.length = (int32_t)DF_MAX(r->observed[i], 1);
        df_buf_reset(&b);
        k = df_buf_printf(&b, err, "ALTER TABLE %s ALTER COLUMN ", r->q_staging);
        if (k == DF_OK) k = df__write_quote(&b, c.name, err);
        if (k == DF_OK) k = df_buf_append_char(&b, ' ', err);
        if (k == DF_OK) k = df_mssql_type_render(&c, &b, err);
        if (k == DF_OK) k = df_buf_append_str(&b, c.nullable ? " NULL" : " NOT NULL", err);
        if (k == DF_OK) k = run_sql(r, b.data, NULL, err);
    }
    df_buf_free(&b);
    return k;
}

static df_errkind finalize_step(wrun *r, df_error *err) {
    df_diag_span sp = step_begin(r, S_FINALIZE);
    int64_t server_rows = 0;
    df_errkind k;
    if (r->pool) {
        df_wpool *p = r->pool;
        r->pool = NULL;
        df__wpool_enter(p); /* ... and for the finalization while they finish their loads */
        k = df__wpool_finish(p, &server_rows, err);
        if (k == DF_ERR_VALUE_CONVERSION) {
            /* A worker rejected a value: report it as the batch write it was. */
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err ? err->message : "");
            const char *code = conversion_code(msg);
            snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "%s", code);
            df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "arrow-sql-server write_batch failed: %s (%s)", msg, code);
            step_end(sp, k);
            return fail(r, S_WRITE, k, err);
        }
    } else {
        df_mssql_bulk *b = r->bulk;
        r->bulk = NULL;
        k = df_mssql_bulk_finish(b, &server_rows, err);
    }
    if (k == DF_OK && server_rows != r->rows)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "SQL Server reported %lld rows for a load of %lld rows",
                         (long long)server_rows, (long long)r->rows);
    if (k == DF_OK) k = narrow_observed(r, err);
    step_end(sp, k);
    return k == DF_OK ? DF_OK : fail(r, S_FINALIZE, k, err);
}

/* Target validation (core-spec 3.7); the counts run inside the load's isolation (staging or transaction). */
static df_errkind validation_step(wrun *r, df_error *err) {
    bool replace = r->spec->mode == DF_LOAD_REPLACE;
    if (!strcmp(r->vmode, "disabled")) {
        r->val_kind = "disabled";
        r->val_reason = "validation_disabled";
        if (!replace) return DF_OK;
        df_diag_span sp = step_begin(r, S_VALIDATION);
        step_end(sp, DF_ERR_MSSQL_WRITE_PHASE);
        return fail_msg(r, S_VALIDATION, err, "replace target swap requires target validation");
    }
    progress_phase(r, "Validating write");
    df_diag_span sp = step_begin(r, S_VALIDATION);
    bool append = r->spec->mode == DF_LOAD_APPEND_EXISTING;
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    df_errkind k = DF_OK;
    if (append && r->before < 0) {
        k = DF_ERR_MSSQL_WRITE_PHASE; /* the pre-count was unavailable */
        df_error_set(&tmp, k, "the pre-write row count is unavailable");
    } else {
        k = count_rows(r, append ? r->plan.quoted_target : r->q_staging, &r->after, &tmp);
    }
    if (k != DF_OK) {
        r->after = -1;
        bool must = replace || !strcmp(r->vmode, "require");
        bool server = k == DF_ERR_MSSQL_SERVER_ERROR || (append && r->before < 0);
        if (!must && server) {
            r->val_kind = "unavailable";
            r->val_reason = "permission_unavailable";
            df_error_clear(&tmp);
            step_end(sp, DF_OK);
            return DF_OK;
        }
        r->val_kind = must ? "required_but_failed" : "unavailable";
        r->val_reason = "permission_unavailable";
        df_error_move(err, &tmp);
        step_end(sp, k);
        return fail(r, S_VALIDATION, k, err);
    }
    int64_t delta = append ? r->after - r->before : r->after;
    if (delta != r->rows) {
        r->val_kind = "failed";
        r->val_reason = NULL;
        step_end(sp, DF_ERR_MSSQL_WRITE_PHASE);
        return fail_msg(r, S_VALIDATION, err, append ? "target row-count delta did not match exact output rows"
                                                     : "target row count did not match exact output rows");
    }
    r->val_kind = "passed";
    r->val_reason = NULL;
    step_end(sp, DF_OK);
    return DF_OK;
}

/* The application lock resource of the target (core-spec 3.5 naming). */
static df_errkind lock_sql(wrun *r, df_buf *out, df_error *err) {
    char res[300];
    int n = snprintf(res, sizeof res, "delta-funnel:replace:%s", r->plan.quoted_target);
    if (n < 0 || (size_t)n >= sizeof res || strlen(res) > 255) {
        char hash[17];
        char full[1200];
        snprintf(full, sizeof full, "delta-funnel:replace:%s", r->plan.quoted_target);
        df__write_sql_hash(full, hash);
        snprintf(res, sizeof res, "%.238s:%s", full, hash);
    }
    DF_TRY(df_buf_append_str(out, "EXEC sys.sp_getapplock @Resource = ", err));
    DF_TRY(df__write_nliteral(out, res, err));
    return df_buf_printf(out, err, ", @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = %d;",
                         APPLOCK_TIMEOUT_MS);
}

static df_errkind take_lock(wrun *r, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_mssql_result *res = NULL;
    df_errkind k = lock_sql(r, &b, err);
    if (k == DF_OK) k = run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    if (k == DF_OK && res->return_status < 0)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "replace lock was not acquired within %d s (status %d)",
                         APPLOCK_TIMEOUT_MS / 1000, res->return_status);
    df_mssql_result_free(res);
    return k;
}

static df_errkind rename_table(wrun *r, const char *quoted_from, const char *new_name, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_append_str(&b, "EXEC sys.sp_rename ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, quoted_from, err);
    if (k == DF_OK) k = df_buf_append_str(&b, ", ", err);
    if (k == DF_OK) k = df__write_nliteral(&b, new_name, err);
    if (k == DF_OK) k = df_buf_append_char(&b, ';', err);
    if (k == DF_OK) k = run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    return k;
}

/* replace into an existing table with the same columns: its indexes, constraints and grants stay. */
static df_errkind swap_in_place(wrun *r, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "TRUNCATE TABLE %s;", r->plan.quoted_target);
    if (k == DF_OK) k = run_sql(r, b.data, NULL, err);
    df_buf_reset(&b);
    if (k == DF_OK) k = df_buf_printf(&b, err, "INSERT INTO %s WITH (TABLOCK) (", r->plan.quoted_target);
    for (int pass = 0; pass < 2 && k == DF_OK; pass++) {
        for (int32_t i = 0; k == DF_OK && i < r->plan.ncols; i++) {
            if (i) k = df_buf_append_str(&b, ", ", err);
            if (k == DF_OK) k = df__write_quote(&b, r->plan.cols[i].name, err);
        }
        if (k == DF_OK) k = pass == 0 ? df_buf_append_str(&b, ") SELECT ", err) : df_buf_printf(&b, err, " FROM %s;", r->q_staging);
    }
    int64_t n = -1;
    if (k == DF_OK) k = run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    if (k == DF_OK) k = count_rows(r, r->plan.quoted_target, &n, err);
    if (k == DF_OK && n != r->rows)
        k = df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "target row count did not match exact output rows");
    return k;
}

/* Whether the existing target keeps its identity: same updatable columns (names, order, type families). */
static df_errkind target_compatible(wrun *r, bool *same, df_error *err) {
    df_mssql_column *cols = NULL;
    char **names = NULL;
    int32_t n = 0;
    DF_TRY(target_columns(r, &cols, &names, &n, err));
    char why[300];
    *same = compare_columns(&r->plan, cols, n, why, sizeof why) < 0;
    for (int32_t i = 0; i < n; i++) df_free(names[i]);
    df_free(names);
    df_free(cols);
    return DF_OK;
}

static df_errkind swap_body(wrun *r, df_error *err) {
    DF_TRY(take_lock(r, err));
    bool exists;
    DF_TRY(table_exists(r, r->spec->target, &exists, err));
    if (r->spec->mode == DF_LOAD_CREATE_AND_LOAD) {
        if (exists)
            return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "create-and-load target table %s already exists",
                                r->plan.quoted_target);
        r->strategy = "create";
        return rename_table(r, r->q_staging, r->spec->target, err);
    }
    if (!exists) {
        r->strategy = "create";
        return rename_table(r, r->q_staging, r->spec->target, err);
    }
    bool same = false;
    DF_TRY(target_compatible(r, &same, err));
    if (same) {
        r->strategy = "in_place";
        return swap_in_place(r, err);
    }
    r->strategy = "rename";
    char backup[400];
    DF_TRY(free_name(r, "__df_backup_", backup, sizeof backup, err));
    char *q_backup = NULL;
    DF_TRY(quote2(r->spec->schema, backup, &q_backup, err));
    df_errkind k = rename_table(r, r->plan.quoted_target, backup, err);
    if (k == DF_OK) k = rename_table(r, r->q_staging, r->spec->target, err);
    df_buf b;
    df_buf_init(&b, 0);
    if (k == DF_OK) k = df_buf_printf(&b, err, "DROP TABLE %s;", q_backup);
    if (k == DF_OK) k = run_sql(r, b.data, NULL, err);
    df_buf_free(&b);
    df_free(q_backup);
    return k;
}

static df_errkind commit(wrun *r, df_error *err) {
    df_errkind k = df_mssql_commit(r->conn, err);
    if (k == DF_OK) {
        r->txn_open = false;
        r->swapped = true;
        return DF_OK;
    }
    /* Without an answer we cannot know whether SQL Server committed. */
    if (k == DF_ERR_MSSQL_CONNECTION_LOST || k == DF_ERR_TIMEOUT || k == DF_ERR_TDS_PROTOCOL) r->commit_unknown = true;
    return k;
}

static df_errkind swap_step(wrun *r, df_error *err) {
    if (r->spec->mode == DF_LOAD_REPLACE) progress_phase(r, "Swapping target table");
    df_diag_span sp = step_begin(r, S_SWAP);
    df_errkind k = DF_OK;
    if (r->spec->mode != DF_LOAD_APPEND_EXISTING) {
        k = df_mssql_begin(r->conn, err);
        if (k == DF_OK) r->txn_open = true;
        if (k == DF_OK) k = swap_body(r, err);
    }
    if (k == DF_OK) k = commit(r, err);
    step_end(sp, k);
    if (k != DF_OK) return fail(r, S_SWAP, k, err);
    if (r->staging_created && r->strategy && !strcmp(r->strategy, "in_place")) {
        /* The rows were copied into the target; the staging table goes.  A failure here leaves only it. */
        df_buf b;
        df_buf_init(&b, 0);
        df_error tmp;
        memset(&tmp, 0, sizeof tmp);
        if (df_buf_printf(&b, NULL, "DROP TABLE %s;", r->q_staging) == DF_OK && run_sql(r, b.data, NULL, &tmp) == DF_OK)
            r->staging_created = false;
        df_buf_free(&b);
    } else {
        r->staging_created = false; /* renamed into place */
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Cleanup                                                                   */

/* A usable connection for cleanup: the load's own, or a new one when it died. */
static df_errkind cleanup_conn(wrun *r, df_error *err) {
    df__wpool_abort(r->pool);
    r->pool = NULL;
    if (r->bulk) {
        df_mssql_bulk_abort(r->bulk);
        r->bulk = NULL;
    }
    if (r->conn) {
        /* A cheap probe tells whether the connection still answers. */
        if (df_mssql_exec(r->conn, "SELECT 1", NULL, NULL) == DF_OK) return DF_OK;
        df_mssql_close(r->conn);
        r->conn = NULL;
        r->txn_open = false; /* SQL Server rolls back a session's open transaction when it ends */
    }
    return df_mssql_connect_string(r->conn_str, &r->conn, err);
}

static void cleanup_step(wrun *r) {
    bool append = r->spec->mode == DF_LOAD_APPEND_EXISTING;
    bool need = r->txn_open || r->staging_created || r->bulk != NULL;
    if (append && !r->txn_open && !r->commit_unknown && r->failed_step <= S_PREPARE) {
        r->cleanup = "not_applicable";
        if (r->failed_step == S_PREPARE && r->conn && df_mssql_in_transaction(r->conn)) need = true;
        else return;
    }
    if (r->commit_unknown) {
        r->cleanup = "failed";
        r->partial = true;
        snprintf(r->cleanup_error, sizeof r->cleanup_error,
                 "the connection was lost while committing: SQL Server may or may not have committed the load");
        return;
    }
    if (!need) {
        r->cleanup = append ? "not_applicable" : "not_attempted";
        if (append && r->failed_step > S_PREPARE) r->cleanup = "succeeded"; /* the server rolled it back */
        return;
    }
    progress_phase(r, "Cleaning up");
    df_diag_span sp = step_begin(r, S_CLEANUP);
    df_error e2;
    memset(&e2, 0, sizeof e2);
    df_errkind k = cleanup_conn(r, &e2);
    if (k == DF_OK && r->txn_open && r->conn && df_mssql_in_transaction(r->conn)) {
        k = df_mssql_rollback(r->conn, &e2);
        if (k == DF_OK) r->txn_open = false;
    }
    r->txn_open = false;
    if (k == DF_OK && r->staging_created) {
        df_buf b;
        df_buf_init(&b, 0);
        k = df_buf_printf(&b, &e2, "DROP TABLE %s;", r->q_staging);
        if (k == DF_OK) k = run_sql(r, b.data, NULL, &e2);
        df_buf_free(&b);
        if (k == DF_OK) r->staging_created = false;
    }
    step_end(sp, k);
    if (k == DF_OK) {
        r->cleanup = "succeeded";
    } else {
        r->cleanup = "failed";
        char msg[160];
        df__session_escape_into(msg, sizeof msg, e2.message);
        char left[140];
        df__session_escape_into(left, sizeof left, r->staging_created ? r->staging : "");
        snprintf(r->cleanup_error, sizeof r->cleanup_error, "%.150s%s%.120s", msg,
                 r->staging_created ? "; left staging table " : "", left);
    }
    df_error_clear(&e2);
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

/*
 * The phase timings of the report, in the reference's order.  Failed runs
 * list only the phases that started; `writer_only` (the failure context
 * inside write_all) starts at the connection, as the reference does.
 */
static void collect_timings(const wrun *r, df_wtimings *ts, bool failed, bool writer_only) {
    ts->n = 0;
    const df_diag_operation *op = r->ctx->op;
    uint64_t owner = r->ctx->owner;
    bool bench = r->ctx->stream_benchmark;
    if (!writer_only) {
        if (r->e->kind == DF_TABLE_DERIVED_SQL)
            df__wtimings_add(ts, "lazy_sql_planning", "completed", NULL, (int64_t)(r->e->planning_ns / 1000));
        for (int s = S_SCHEMA; s <= S_STREAM; s++)
            if (!failed || step_active(r, s))
                df__wtimings_add_stage(ts, steps[s].timing, op, steps[s].stage, owner, "not_executed");
        if (r->ctx->in_write_all) {
            int64_t setup = 0;
            for (int s = S_DATAFRAME; s <= S_STREAM; s++)
                setup += (int64_t)df_diag_operation_stage_timing(op, steps[s].stage, owner).elapsed_ns;
            bool setup_failed = r->failed_step >= S_DATAFRAME && r->failed_step <= S_STREAM;
            df__wtimings_add(ts, "output_stream_setup", setup_failed ? "failed" : "completed", NULL, setup / 1000);
            if (bench)
                df__wtimings_add(ts, "sql_write", "not_started", "not_executed", -1);
            else if (!setup_failed)
                df__wtimings_add(ts, "sql_write", r->failed_step >= S_CONNECT ? "failed" : "completed", NULL,
                                 (int64_t)(r->write_ns / 1000));
            if (failed && !bench) df__wtimings_add(ts, "validation", "not_started", "failure_before_validation", -1);
        }
    }
    if (bench) {
        for (int s = S_POLL; s <= S_VALIDATE_BATCH; s++)
            df__wtimings_add_stage(ts, steps[s].timing, op, steps[s].stage, owner, "not_executed");
        df__wtimings_add(ts, "write_batch", "not_started", "not_executed", -1);
        df__wtimings_add(ts, "finalize", "not_started", "not_executed", -1);
        df__wtimings_add(ts, "validation", "not_started", "not_executed", -1);
        return;
    }
    for (int s = S_CONNECT; s <= S_SWAP; s++) {
        if (s == S_VALIDATION && !step_active(r, s) && !failed) {
            df__wtimings_add(ts, "validation", "skipped", r->val_reason ? r->val_reason : "validation_disabled", -1);
            continue;
        }
        if (!failed || step_active(r, s))
            df__wtimings_add_stage(ts, steps[s].timing, op, steps[s].stage, owner, "not_executed");
    }
    if (failed && step_active(r, S_CLEANUP))
        df__wtimings_add_stage(ts, "cleanup", op, steps[S_CLEANUP].stage, owner, "not_executed");
}

static void count_obj(df_json_writer *w, int64_t v) {
    if (v >= 0)
        df__json_count(w, "exact", v, true, NULL, false);
    else
        df__json_count(w, "unavailable", 0, false, NULL, false);
}

static void batch_shaping(df_json_writer *w, const wrun *r, bool failed) {
    df_json_object_begin(w);
    df_json_kv_int(w, "input_batches", r->batches);
    df_json_kv_int(w, "input_rows", r->rows);
    df_json_kv_int(w, "output_batches", r->batches);
    df_json_kv_int(w, "output_rows", r->rows);
    df_json_key(w, "status");
    df__json_status(w, failed ? "failed" : "completed", NULL);
    df_json_object_end(w);
}

static df_errkind profile_json(wrun *r, char **out, df_error *err) {
    *out = NULL;
    if (!r->profile) return DF_OK;
    df_buf b;
    df_buf_init(&b, 0);
    df_profile_meta meta = {"mssql_output", -1};
    df_errkind k = df_query_profile_json(r->profile, &meta, &b, err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/* The execute report (5.4) of the run so far. */
static df_errkind build_report(wrun *r, bool failed, const df_wtimings *ts, df_buf *out, df_error *err) {
    bool append = r->spec->mode == DF_LOAD_APPEND_EXISTING;
    char *profile = NULL;
    DF_TRY(profile_json(r, &profile, err));
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "batch_shaping");
    batch_shaping(&w, r, failed);
    df_json_kv_string(&w, "cleanup", r->cleanup);
    df_json_key(&w, "connection");
    df_json_object_begin(&w);
    df_json_kv_null(&w, "display_label");
    df_json_object_end(&w);
    df_json_kv_string(&w, "connection_source", r->conn_source);
    if (profile)
        df_json_kv_raw(&w, "execution_profile", profile);
    else
        df_json_kv_null(&w, "execution_profile");
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_key(&w, "output_row_count");
    df__json_count(&w, failed ? "partial" : "exact", r->rows, true, NULL, false);
    df_json_key(&w, "output_schema");
    df_errkind k = df__json_output_schema(&w, r->schema, err);
    df_json_kv_bool(&w, "partial_write_possible", r->partial);
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, ts);
    df_json_kv_string(&w, "run_mode", "execute");
    int64_t target = r->swapped || (!failed && r->after >= 0) ? r->after : -1;
    df_json_key(&w, "target_row_count");
    count_obj(&w, target);
    df_json_key(&w, "target_row_count_after_write");
    count_obj(&w, r->after);
    df_json_key(&w, "target_row_count_before_write");
    count_obj(&w, append ? r->before : -1);
    df_json_key(&w, "target_table");
    df_json_object_begin(&w);
    df_json_kv_string(&w, "schema", r->spec->schema);
    df_json_kv_string(&w, "table", r->spec->target);
    df_json_object_end(&w);
    df_json_key(&w, "validation_status");
    df__json_status(&w, r->val_kind, r->val_reason);
    df_json_key(&w, "write_stats");
    df_json_object_begin(&w);
    df_json_kv_int(&w, "batches_written", r->ctx->stream_benchmark ? 0 : r->batches);
    df_json_kv_int(&w, "elapsed_ms", (int64_t)(r->write_ns / 1000000));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_kv_int(&w, "rows_written", r->ctx->stream_benchmark ? 0 : r->rows);
    df_json_object_end(&w);
    df_json_object_end(&w);
    df_free(profile);
    df_errkind k2 = df_json_writer_finish(&w, err);
    return k != DF_OK ? k : k2;
}

/* The failure context (5.5) embedding the report. */
static df_errkind build_context(wrun *r, const df_wtimings *report_ts, const char *report, df_buf *out,
                                df_error *err) {
    df_wtimings writer_ts;
    const df_wtimings *ts = report_ts;
    if (r->ctx->in_write_all) {
        collect_timings(r, &writer_ts, true, true);
        ts = &writer_ts;
    }
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_object_begin(&w);
    df_json_key(&w, "batch_shaping");
    batch_shaping(&w, r, true);
    df_json_kv_string(&w, "cleanup", r->cleanup);
    if (r->cleanup_error[0])
        df_json_kv_string(&w, "cleanup_error", r->cleanup_error);
    else
        df_json_kv_null(&w, "cleanup_error");
    df_json_key(&w, "connection");
    df_json_object_begin(&w);
    df_json_kv_null(&w, "display_label");
    df_json_object_end(&w);
    df_json_kv_string(&w, "connection_source", r->conn_source);
    df_json_key(&w, "diagnostics");
    df_json_array_begin(&w);
    if (r->diagnostics_code[0]) {
        df_json_object_begin(&w);
        df_json_kv_string(&w, "code", r->diagnostics_code);
        df_json_kv_null(&w, "field");
        df_json_kv_string(&w, "message", r->cause);
        df_json_kv_null(&w, "row");
        df_json_kv_string(&w, "severity", "error");
        df_json_object_end(&w);
    }
    df_json_array_end(&w);
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_key(&w, "output_row_count");
    df__json_count(&w, "partial", r->rows, true, NULL, false);
    df_json_kv_bool(&w, "partial_write_possible", r->partial);
    df_json_kv_string(&w, "phase", steps[r->failed_step].phase);
    df_json_key(&w, "phase_timings");
    df__json_timings(&w, ts);
    df_json_kv_raw(&w, "report", report);
    df_json_key(&w, "target_row_count");
    count_obj(&w, -1);
    df_json_key(&w, "target_row_count_after_write");
    count_obj(&w, r->after);
    df_json_key(&w, "target_row_count_before_write");
    count_obj(&w, r->spec->mode == DF_LOAD_APPEND_EXISTING ? r->before : -1);
    df_json_key(&w, "target_table");
    df_json_object_begin(&w);
    df_json_kv_string(&w, "schema", r->spec->schema);
    df_json_kv_string(&w, "table", r->spec->target);
    df_json_object_end(&w);
    df_json_key(&w, "validation_status");
    df__json_status(&w, r->val_kind, r->val_reason);
    df_json_key(&w, "write_stats");
    df_json_object_begin(&w);
    df_json_kv_int(&w, "batches_written", r->batches);
    df_json_kv_int(&w, "elapsed_ms", (int64_t)(r->write_ns / 1000000));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_kv_int(&w, "rows_written", r->rows);
    df_json_object_end(&w);
    df_json_object_end(&w);
    return df_json_writer_finish(&w, err);
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */

void df__write_result_clear(df_write_result *res) {
    df_free(res->report);
    df_free(res->context);
    df_free(res->summary);
    df_free(res->batch_shaping);
    memset(res, 0, sizeof *res);
}

static void run_free(wrun *r) {
    df__wpool_abort(r->pool);
    if (r->bulk) df_mssql_bulk_abort(r->bulk);
    df_mssql_close(r->conn);
    df_batch_stream_close(r->stream);
    if (r->profile) df_exec_profile_release(r->profile);
    df__write_plan_clear(&r->plan);
    df_free(r->bulk_cols);
    df_free(r->q_staging);
    df_free(r->observed);
}

/* The lifecycle after planning; returns the first failure. */
static df_errkind run_lifecycle(wrun *r, df_error *err) {
    progress_phase(r, "Preparing data stream");
    DF_TRY(stream_steps(r, err));
    bool bench = r->ctx->stream_benchmark;
    if (!bench) {
        DF_TRY(connect_step(r, err));
        DF_TRY(prepare_step(r, err));
        DF_TRY(init_step(r, err));
    }
    progress_phase(r, bench ? "Preparing data stream" : "Writing to SQL Server");
    df_diag_span sw = df_diag_stage_begin(r->ctx->op, DF_DIAG_STAGE_STREAM_AND_WRITE_BATCHES, r->ctx->owner);
    if (r->pool) df__wpool_enter(r->pool); /* the bulk-load threads work for this stage now */
    uint64_t t0 = df_now_ns();
    df_errkind k = stream_loop(r, bench, err);
    r->write_ns = df_now_ns() - t0;
    df_diag_span_end(sw, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    /* Closing joins the workers so the profile is complete (cancelled when the stream did not end). */
    df_batch_stream_close(r->stream);
    r->stream = NULL;
    if (k != DF_OK || bench) return k;
    DF_TRY(finalize_step(r, err));
    DF_TRY(validation_step(r, err));
    return swap_step(r, err);
}

/* Logs output.started / completed / failed. */
static void log_output(const wrun *r, const char *event, df_log_level level) {
    if (!r->opts->log.fn) return;
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_kv_string(&w, "target_schema", r->spec->schema);
    df_json_kv_string(&w, "target_table", r->spec->target);
    if (r->failed_step >= 0) {
        df_json_kv_string(&w, "error_category", "delta_funnel_error");
        df_json_kv_string(&w, "error_summary", r->cause);
        df_json_kv_string(&w, "failed_phase", steps[r->failed_step].phase);
    } else if (!strcmp(event, "output.completed")) {
        df_json_kv_int(&w, "rows_written", r->rows);
        df_json_kv_int(&w, "batches_written", r->batches);
        if (r->strategy) df_json_kv_string(&w, "swap_strategy", r->strategy);
    }
    df_json_object_end(&w);
    if (df_json_writer_finish(&w, NULL) == DF_OK) df__write_log(r->opts, level, event, b.data);
    df_buf_free(&b);
}

/* Turns the recorded failure into the reference error + context. */
static void failure_error(wrun *r, const df_wtimings *ts, df_write_result *res, df_error *err) {
    char out[160];
    df__session_escape_into(out, sizeof out, r->spec->name);
    char phase_display[48];
    snprintf(phase_display, sizeof phase_display, "%s", steps[r->failed_step].phase);
    for (char *p = phase_display; *p; p++)
        if (*p == '_') *p = ' ';
    df_errkind kind = r->cause_kind == DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION ? DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION
                                                                           : DF_ERR_MSSQL_WRITE_PHASE;
    char msg[DF_ERROR_MESSAGE_SIZE + 512];
    if (kind == DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION)
        snprintf(msg, sizeof msg, "%s", r->cause);
    else
        snprintf(msg, sizeof msg, "MSSQL write error for output `%s` during %s: %s", out, phase_display, r->cause);
    if (r->cleanup_error[0]) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof msg - used, "; cleanup failed: %s", r->cleanup_error);
    }
    df_buf rep, ctx;
    df_buf_init(&rep, 0);
    df_buf_init(&ctx, 0);
    if (build_report(r, true, ts, &rep, NULL) == DF_OK && build_context(r, ts, rep.data, &ctx, NULL) == DF_OK) {
        df_buf_take_text(&rep, &res->report, NULL, NULL);
        res->context = df_strdup(ctx.data);
    }
    df_buf_free(&rep);
    df_buf_free(&ctx);
    res->summary = df_strdup(msg);
    df_error_set(err, kind, "%s", msg);
    df_error_set_phase(err, steps[r->failed_step].phase);
    df_error_set_origin(err, df_errkind_name(r->cause_kind));
    if (res->context) df_error_set_context(err, res->context);
}

static void fill_result(const wrun *r, bool failed, df_write_result *res) {
    res->ok = !failed;
    res->output_rows = r->rows;
    res->output_rows_exact = !failed;
    res->target_rows = r->swapped || !failed ? r->after : -1;
    snprintf(res->validation_kind, sizeof res->validation_kind, "%s", r->val_kind);
    snprintf(res->validation_reason, sizeof res->validation_reason, "%s", r->val_reason ? r->val_reason : "");
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    batch_shaping(&w, r, failed);
    if (df_json_writer_finish(&w, NULL) == DF_OK) df_buf_take_text(&b, &res->batch_shaping, NULL, NULL);
    df_buf_free(&b);
}

df_errkind df__write_run(const df_output_spec *spec, const df_write_options *opts, const df_write_ctx *ctx,
                         df_write_result *res, df_error *err) {
    memset(res, 0, sizeof *res);
    wrun r;
    memset(&r, 0, sizeof r);
    r.spec = spec;
    r.opts = opts;
    r.ctx = ctx;
    r.s = spec->table->session;
    r.e = spec->table->entry;
    r.query = ctx->query ? ctx->query : r.e->query;
    r.failed_step = -1;
    r.before = r.after = -1;
    r.conn_str = spec->connection_string ? spec->connection_string : r.s->opts->default_connection_string;
    r.conn_source = spec->connection_string ? "target_override" : "context_default";
    r.vmode = r.s->opts->validation.target_validation_mode;
    r.val_kind = "skipped";
    r.val_reason = "not_executed";
    r.cleanup = spec->mode == DF_LOAD_APPEND_EXISTING || ctx->stream_benchmark ? "not_applicable" : "not_attempted";
    progress_phase(&r, "Planning output");
    df_errkind k = plan_steps(&r, err);
    if (k != DF_OK) {
        run_free(&r);
        return k; /* planning errors are raised as they are */
    }
    log_output(&r, "output.started", DF_LOG_INFO);
    k = run_lifecycle(&r, err);
    if (ctx->stream_benchmark && k == DF_OK) {
        r.val_kind = "skipped";
        r.val_reason = "not_executed";
    }
    bool failed = k != DF_OK;
    df_wtimings ts;
    if (failed) {
        if (k == DF_ERR_OUT_OF_MEMORY && r.failed_step < 0) {
            run_free(&r);
            return k;
        }
        if (r.failed_step < 0) fail(&r, S_POLL, k, err);
        if (!strcmp(r.val_kind, "skipped")) r.val_reason = "not_executed";
        if (!ctx->stream_benchmark) cleanup_step(&r);
        collect_timings(&r, &ts, true, false);
        failure_error(&r, &ts, res, err);
        log_output(&r, "output.failed", DF_LOG_ERROR);
    } else {
        collect_timings(&r, &ts, false, false);
        df_buf b;
        df_buf_init(&b, 0);
        k = build_report(&r, false, &ts, &b, err);
        if (k == DF_OK) k = df_buf_take_text(&b, &res->report, NULL, err);
        df_buf_free(&b);
        log_output(&r, "output.completed", DF_LOG_INFO);
    }
    res->timings = ts;
    fill_result(&r, failed, res);
    run_free(&r);
    return k == DF_OK || failed ? DF_OK : k;
}

/* ------------------------------------------------------------------------ */
/* write_to_mssql                                                            */

static df_errkind dry_run(const df_output_spec *spec, const df_write_options *opts, char **out, df_error *err) {
    df__write_progress(opts, DF_PROGRESS_STARTED, "Planning SQL Server write", NULL, NULL, 0, 0, 0);
    df__write_progress(opts, DF_PROGRESS_PHASE, "Planning output", NULL, spec->name, 0, 0, 0);
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_errkind k = df__write_dry_run_report(spec, &w, err);
    df_errkind k2 = df_json_writer_finish(&w, k == DF_OK ? err : NULL);
    if (k == DF_OK) k = k2;
    if (k == DF_OK) k = df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    df__write_progress(opts, DF_PROGRESS_FINISHED, k == DF_OK ? "Completed" : "Failed", NULL, NULL, 0, 0, 0);
    return k;
}

df_errkind df_output_write(const df_output_spec *spec, const df_write_options *opts_in, char **report_json,
                           df_error *err) {
    *report_json = NULL;
    df_write_options opts;
    if (opts_in)
        opts = *opts_in;
    else
        df_write_options_init(&opts);
    if (opts.dry_run && opts.execution_profile) {
        df_error_set(err, DF_ERR_INVALID_OPTION_VALUE, "profiling is only supported for execute `write_to_mssql` calls");
        df_error_set_phase(err, "config");
        return DF_ERR_INVALID_OPTION_VALUE;
    }
    df_session *s = spec->table->session;
    df__session_read_begin(s);
    if (opts.dry_run) {
        df_errkind k = dry_run(spec, &opts, report_json, err);
        df__session_read_end(s);
        return k;
    }
    df_write_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.owner = 1;
    df_errkind k = df_diag_operation_begin(DF_DIAG_OP_MSSQL_WRITE, NULL, &ctx.op, err);
    if (k != DF_OK) {
        df__session_read_end(s);
        return k;
    }
    df__write_progress(&opts, DF_PROGRESS_STARTED, "Writing to SQL Server", NULL, NULL, 0, 0, 0);
    df_write_result res;
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    df_diag_span ph = df_diag_phase_begin(ctx.op, DF_DIAG_PHASE_EXECUTION);
    k = df__write_run(spec, &opts, &ctx, &res, &tmp);
    bool ok = k == DF_OK && res.ok;
    df_diag_span_end(ph, ok ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    df_diag_operation_end(ctx.op, ok ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    df__write_progress(&opts, DF_PROGRESS_FINISHED, ok ? "Completed" : "Failed", NULL, NULL, 0, 0, 0);
    if (ok) {
        *report_json = res.report;
        res.report = NULL;
    } else {
        if (k == DF_OK) k = tmp.kind != DF_OK ? tmp.kind : DF_ERR_MSSQL_WRITE_PHASE;
        if (err) df_error_move(err, &tmp);
    }
    df_error_clear(&tmp);
    df__write_result_clear(&res);
    df_diag_operation_destroy(ctx.op);
    df__session_read_end(s);
    return k;
}
