/*
 * Output specs (`Table.to_mssql`): the target's arguments checked without
 * I/O, their repr, the write options' defaults, and the log and progress
 * events every write emits through the caller's callbacks.
 */
#include "load/write_int.h"

/* ------------------------------------------------------------------------ */
/* Output specs                                                              */

bool df__write_is_blank(const char *s) {
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
    if (df__write_is_blank(schema)) return target_config_error(err, "target.schema", "schema must not be empty");
    if (df__write_is_blank(target)) return target_config_error(err, "target.table", "table must not be empty");
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
    if (connection_string && df__write_is_blank(connection_string))
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

static void send_progress(const df_write_options *opts, df_progress_kind kind, const char *label,
                          const df_write_ctx *ctx, const char *scope, int64_t rows, int64_t batches, int64_t bytes,
                          const df_file_progress *files) {
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
    if (files) {
        ev.files_done = files->done;
        ev.files_total = files->total;
        ev.files_pruned = files->pruned_planning;
    }
    opts->progress.fn(opts->progress.user, &ev);
}

void df__write_progress(const df_write_options *opts, df_progress_kind kind, const char *label,
                        const df_write_ctx *ctx, const char *scope, int64_t rows, int64_t batches, int64_t bytes) {
    send_progress(opts, kind, label, ctx, scope, rows, batches, bytes, NULL);
}

void df__write_progress_rows(const df_write_options *opts, const df_write_ctx *ctx, const char *scope,
                             int64_t rows, int64_t batches, int64_t bytes, df_batch_stream *stream) {
    if (!opts || !opts->progress.fn) return;
    df_file_progress files;
    bool any = df_exec_stream_file_progress(stream, &files);
    send_progress(opts, DF_PROGRESS_ROWS, NULL, ctx, scope, rows, batches, bytes, any ? &files : NULL);
}
