/*
 * The first lifecycle steps of one output: connect, prepare the target
 * (a transaction for append_existing, a staging heap for create_and_load
 * and replace) and initialise the bulk writer against the columns it will
 * load, with the SQL helpers the later steps share.
 */
#include "load/write_run_int.h"

#include <stdio.h>

#define MAX_NAME_TRIES 100

/* ------------------------------------------------------------------------ */
/* SQL helpers                                                               */

/* Runs a statement; server errors become "SQL Server statement execution failed: ...". */
df_errkind df__wrun_run_sql(df_wrun *r, const char *sql, df_mssql_result **res, df_error *err) {
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
df_errkind df__wrun_table_exists(df_wrun *r, const char *name, bool *exists, df_error *err) {
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
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, &res, err);
    df_buf_free(&b);
    int64_t v = 0;
    if (k == DF_OK && !scalar_i64(res, &v))
        k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "the existence probe returned no value");
    *exists = v != 0;
    df_mssql_result_free(res);
    return k;
}

/* COUNT_BIG(*) of a quoted table. */
df_errkind df__wrun_count_rows(df_wrun *r, const char *quoted, int64_t *out, df_error *err) {
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "SELECT COUNT_BIG(*) AS [row_count] FROM %s", quoted);
    df_mssql_result *res = NULL;
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, &res, err);
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
df_errkind df__wrun_free_name(df_wrun *r, const char *suffix, char *out, size_t size, df_error *err) {
    for (int n = 0; n < MAX_NAME_TRIES; n++) {
        derived_name(out, size, r->spec->target, suffix, n);
        bool exists;
        DF_TRY(df__wrun_table_exists(r, out, &exists, err));
        if (!exists) return DF_OK;
    }
    return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "no free %s name for [%s].[%s] after %d tries", suffix + 2,
                        r->spec->schema, r->spec->target, MAX_NAME_TRIES);
}

df_errkind df__wrun_quote2(const char *schema, const char *table, char **out, df_error *err) {
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
/* Connect and prepare                                                       */

/* Warns once per output about connection-string keys that were accepted but have no effect (names only). */
static void log_ignored_keys(const df_wrun *r, const df_mssql_conninfo *ci) {
    const char *keys = df_mssql_conninfo_ignored_keys(ci);
    if (!keys[0] || !r->opts->log.fn) return;
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_kv_string(&w, "keys", keys);
    df_json_object_end(&w);
    if (df_json_writer_finish(&w, NULL) == DF_OK)
        df__write_log(r->opts, DF_LOG_WARN, "connection_string.keys_ignored", b.data);
    df_buf_free(&b);
}

df_errkind df__wrun_connect_step(df_wrun *r, df_error *err) {
    df__stage_run_label(&r->stages, "Connecting to SQL Server");
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_CONNECT);
    df_mssql_conninfo *ci = NULL;
    df_errkind k = df_mssql_conninfo_parse(r->conn_str, &ci, err);
    if (k == DF_OK) {
        log_ignored_keys(r, ci);
        k = df_mssql_connect(ci, &r->conn, err);
        df_mssql_conninfo_free(ci); /* wipes the password */
    }
    df__stage_end(sp, k);
    if (k == DF_OK) return DF_OK;
    /*
     * The message names the failed step once.  The client already names it
     * for the failures it gives a step subkind (TCP connect; dropped or
     * silent during setup); any other DF_ERR_MSSQL_CONNECT (the instance is
     * not hosted) is reported as a TCP failure, everything else (TLS, login,
     * protocol) as client setup.  The cause is not escaped here: the stage
     * runner escapes it once, so a server's "Login failed for user 'sa'."
     * reaches the user as the server wrote it.  A connection-string error
     * keeps the parser's message, which names the key and never a value.
     */
    char cause[DF_ERROR_MESSAGE_SIZE];
    snprintf(cause, sizeof cause, "%s", err ? err->message : "");
    df_errkind step = err ? err->subkind : DF_OK;
    if (k == DF_ERR_MSSQL_CONNECTION_STRING)
        df_error_set(err, k, "%s", cause);
    else if (k == DF_ERR_MSSQL_CONNECT && (step == DF_ERR_MSSQL_TCP_CONNECT || step == DF_ERR_MSSQL_CLIENT_SETUP))
        df_error_set(err, k, "%s", cause);
    else if (k == DF_ERR_MSSQL_CONNECT)
        df_error_set(err, k, "TCP connection to SQL Server failed: %s", cause);
    else
        df_error_set(err, k, "SQL Server client setup failed: %s", cause);
    df_error_set_subkind(err, step);
    return df__stage_run_fail(&r->stages, WSTEP_CONNECT, k, err);
}

static df_errkind prepare_append(df_wrun *r, df_error *err) {
    bool exists;
    DF_TRY(df__wrun_table_exists(r, r->spec->target, &exists, err));
    if (!exists)
        return df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "append-existing target table %s does not exist",
                            r->plan.quoted_target);
    DF_TRY(df_mssql_begin(r->conn, err));
    r->txn_open = true;
    if (!strcmp(r->vmode, "disabled")) return DF_OK;
    df_diag_span sp = df_diag_stage_begin(r->ctx->op, DF_DIAG_STAGE_READ_PRE_WRITE_ROW_COUNT, r->ctx->owner);
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    df_errkind k = df__wrun_count_rows(r, r->plan.quoted_target, &r->before, &tmp);
    df__stage_end(sp, k);
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

static df_errkind prepare_staged(df_wrun *r, df_error *err) {
    bool exists;
    DF_TRY(df__wrun_table_exists(r, r->spec->target, &exists, err));
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
        DF_TRY(df__wrun_quote2(r->spec->schema, r->staging, &r->q_staging, err));
        df_buf ddl;
        df_buf_init(&ddl, 0);
        df_errkind k = df__write_render_ddl(&r->plan, r->spec->schema, r->staging, NULL, &ddl, err);
        if (k == DF_OK) k = df__wrun_run_sql(r, ddl.data, NULL, err);
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

df_errkind df__wrun_prepare_step(df_wrun *r, df_error *err) {
    df__stage_run_label(&r->stages, "Preparing target table");
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_PREPARE);
    df_errkind k = r->spec->mode == DF_LOAD_APPEND_EXISTING ? prepare_append(r, err) : prepare_staged(r, err);
    df__stage_end(sp, k);
    return k == DF_OK ? DF_OK : df__stage_run_fail(&r->stages, WSTEP_PREPARE, k, err);
}

/* ------------------------------------------------------------------------ */
/* Writer initialisation                                                     */

/* The target's updatable columns, parsed into SQL Server types. */
df_errkind df__wrun_target_columns(df_wrun *r, df_mssql_column **out, char ***names, int32_t *n, df_error *err) {
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
    if (k == DF_OK) k = df__wrun_run_sql(r, b.data, &res, err);
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
int32_t df__wrun_compare_columns(const df_write_plan *p, const df_mssql_column *cols, int32_t n, char *why, size_t size) {
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

df_errkind df__wrun_init_step(df_wrun *r, df_error *err) {
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_INIT);
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
        k = df__wrun_target_columns(r, &cols, &names, &n, err);
        char why[300];
        if (k == DF_OK && df__wrun_compare_columns(&r->plan, cols, n, why, sizeof why) >= 0) {
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
        k = df__wpool_start(r->conn, b0, r->conn_str, DF_MIN(n, DF_MAX_PARALLEL_CONNECTIONS), table,
                            r->bulk_cols, r->plan.ncols, &bo,
                            &r->pool, err);
    }
    df__stage_end(sp, k);
    return k == DF_OK ? DF_OK : df__stage_run_fail(&r->stages, WSTEP_INIT, k, err);
}
