/*
 * Test-only entry points for the SQL Server client, called from pytest via
 * ctypes (tests/python/test_mssql_*.py).  Every function returns 0 or the
 * df_errkind, and writes "kind|code|message" into errbuf on failure so the
 * tests can assert on stable kinds and SQL Server error numbers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "columnar/columnar.h"
#include "mssql/mssql.h"

int dftest_mssql_exec(const char *conn_str, const char *sql, uint32_t timeout_ms, int64_t *rows, char *errbuf, size_t errlen);
int dftest_mssql_query(const char *conn_str, const char *sql, int set_index, struct ArrowArrayStream *out, char *errbuf,
                       size_t errlen);
int dftest_mssql_connect_info(const char *conn_str, char *info, size_t infolen, char *errbuf, size_t errlen);
int dftest_mssql_bulk_load(const char *conn_str, const char *table, const char *columns, const char *options,
                           struct ArrowArrayStream *in, int64_t *rows, char *errbuf, size_t errlen);
int dftest_mssql_session(const char *conn_str, const char *script, char *out, size_t outlen, char *errbuf, size_t errlen);

static int report(df_errkind k, const df_error *err, char *errbuf, size_t errlen) {
    if (k != DF_OK && errbuf && errlen)
        snprintf(errbuf, errlen, "%s|%lld|%s", df_errkind_name(k), (long long)err->code, err->message);
    return (int)k;
}

int dftest_mssql_exec(const char *conn_str, const char *sql, uint32_t timeout_ms, int64_t *rows, char *errbuf, size_t errlen) {
    df_error err = {0};
    df_mssql_conn *c;
    df_errkind k = df_mssql_connect_string(conn_str, &c, &err);
    if (k == DF_OK) {
        if (timeout_ms) df_mssql_set_command_timeout(c, timeout_ms);
        k = df_mssql_exec(c, sql, rows, &err);
        df_mssql_close(c);
    }
    int r = report(k, &err, errbuf, errlen);
    df_error_clear(&err);
    return r;
}

/* A batch stream over a result's sets (one set exported). */
typedef struct one_batch_stream {
    df_batch_stream base;
    df_batch *batch;        /* handed out once */
} one_batch_stream;

static df_errkind one_next(df_batch_stream *s, df_batch **out, df_error *err) {
    one_batch_stream *o = (one_batch_stream *)s;
    (void)err;
    *out = o->batch;
    o->batch = NULL;
    return DF_OK;
}

static void one_close(df_batch_stream *s) {
    one_batch_stream *o = (one_batch_stream *)s;
    if (o->batch) df_batch_release(o->batch);
    df_schema_release(o->base.schema);
    df_free(o);
}

static const df_batch_stream_vt one_vt = {one_next, one_close};

int dftest_mssql_query(const char *conn_str, const char *sql, int set_index, struct ArrowArrayStream *out, char *errbuf,
                       size_t errlen) {
    df_error err = {0};
    df_mssql_conn *c;
    df_mssql_result *res = NULL;
    df_errkind k = df_mssql_connect_string(conn_str, &c, &err);
    if (k == DF_OK) {
        k = df_mssql_query(c, sql, &res, &err);
        df_mssql_close(c);
    }
    if (k == DF_OK && (set_index < 0 || set_index >= res->nsets))
        k = df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "result has %d sets", res->nsets);
    if (k == DF_OK) {
        one_batch_stream *s = df_calloc(1, sizeof *s);
        if (!s) k = DF_OOM(&err);
        else {
            s->base.vt = &one_vt;
            s->batch = df_batch_retain(res->sets[set_index]);
            s->base.schema = df_schema_retain(s->batch->schema);
            k = df_arrow_export_stream(&s->base, out, &err);
        }
    }
    df_mssql_result_free(res);
    int r = report(k, &err, errbuf, errlen);
    df_error_clear(&err);
    return r;
}

int dftest_mssql_connect_info(const char *conn_str, char *info, size_t infolen, char *errbuf, size_t errlen) {
    df_error err = {0};
    df_mssql_conn *c;
    df_errkind k = df_mssql_connect_string(conn_str, &c, &err);
    if (k == DF_OK) {
        snprintf(info, infolen, "encryption=%s;packet_size=%u;database=%s;server_version=%s;tds=%08x",
                 df_mssql_encryption(c), df_mssql_packet_size(c), df_mssql_current_database(c), df_mssql_server_version(c),
                 df_mssql_tds_version(c));
        df_mssql_close(c);
    }
    int r = report(k, &err, errbuf, errlen);
    df_error_clear(&err);
    return r;
}

/* Parses "name type [NOT NULL]" entries separated by ';'. */
static df_errkind parse_columns(const char *spec, df_mssql_column **out, char ***names, int *n, df_error *err) {
    *out = NULL;
    *names = NULL;
    *n = 0;
    char *copy = df_strdup(spec);
    if (!copy) return DF_OOM(err);
    df_errkind k = DF_OK;
    int cap = 0;
    for (char *save = NULL, *item = strtok_r(copy, ";", &save); item && k == DF_OK; item = strtok_r(NULL, ";", &save)) {
        while (*item == ' ') item++;
        if (!*item) continue;
        char *sp = strchr(item, ' ');
        if (!sp) { k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column spec '%s' has no type", item); break; }
        *sp = '\0';
        char *type = sp + 1;
        bool nullable = true;
        char *nn = strstr(type, " NOT NULL");
        if (nn) { *nn = '\0'; nullable = false; }
        char *nl = strstr(type, " NULL");
        if (nl) *nl = '\0';
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            df_mssql_column *nc = df_realloc(*out, sizeof **out * (size_t)cap);
            char **nn2 = df_realloc(*names, sizeof **names * (size_t)cap);
            if (nc) *out = nc;
            if (nn2) *names = nn2;
            if (!nc || !nn2) { k = DF_OOM(err); break; }
        }
        df_mssql_column *col = &(*out)[*n];
        memset(col, 0, sizeof *col);
        k = df_mssql_type_parse(type, col, err);
        if (k != DF_OK) break;
        (*names)[*n] = df_strdup(item);
        col->name = (*names)[*n];
        col->nullable = nullable;
        (*n)++;
    }
    df_free(copy);
    return k;
}

static bool has_opt(const char *opts, const char *name) {
    if (!opts) return false;
    size_t n = strlen(name);
    for (const char *p = opts; (p = strstr(p, name)); p += n)
        if ((p == opts || p[-1] == ',') && (p[n] == ',' || p[n] == '=' || p[n] == '\0')) return true;
    return false;
}

static long opt_value(const char *opts, const char *name, long dflt) {
    if (!opts) return dflt;
    const char *p = strstr(opts, name);
    if (!p || p[strlen(name)] != '=') return dflt;
    return strtol(p + strlen(name) + 1, NULL, 10);
}

/*
 * Loads every batch of an Arrow stream with one bulk load.  Options
 * (comma-separated): tablock, keep_nulls, check_constraints, fire_triggers,
 * nanos=truncate|round, chunk=N (re-slice batches to N rows),
 * abort_after=N (abort the load after N batches), txn (wrap in a
 * transaction and roll back when rollback is also given).
 */
int dftest_mssql_bulk_load(const char *conn_str, const char *table, const char *columns, const char *options,
                           struct ArrowArrayStream *in, int64_t *rows, char *errbuf, size_t errlen) {
    df_error err = {0};
    df_mssql_column *cols = NULL;
    char **names = NULL;
    int ncols = 0;
    df_mssql_conn *c = NULL;
    df_mssql_bulk *b = NULL;
    df_schema *schema = NULL;
    struct ArrowSchema as = {0};
    *rows = 0;
    df_errkind k = parse_columns(columns, &cols, &names, &ncols, &err);
    if (k == DF_OK && in->get_schema(in, &as) != 0) k = df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "cannot read the stream schema");
    if (k == DF_OK) k = df_arrow_import_schema(&as, &schema, &err);
    if (as.release) as.release(&as);
    if (k == DF_OK) k = df_mssql_connect_string(conn_str, &c, &err);
    bool txn = has_opt(options, "txn");
    if (k == DF_OK && txn) k = df_mssql_begin(c, &err);
    df_mssql_bulk_options o = {
        .tablock = has_opt(options, "tablock"),
        .keep_nulls = has_opt(options, "keep_nulls"),
        .check_constraints = has_opt(options, "check_constraints"),
        .fire_triggers = has_opt(options, "fire_triggers"),
        .nanos = options && strstr(options, "nanos=round") ? DF_MSSQL_NANOS_ROUND
               : options && strstr(options, "nanos=truncate") ? DF_MSSQL_NANOS_TRUNCATE : DF_MSSQL_NANOS_REJECT,
    };
    if (k == DF_OK) k = df_mssql_bulk_begin(c, table, cols, ncols, &o, &b, &err);
    long chunk = opt_value(options, "chunk", 0), abort_after = opt_value(options, "abort_after", -1);
    long batches = 0;
    while (k == DF_OK) {
        struct ArrowArray arr = {0};
        if (in->get_next(in, &arr) != 0) { k = df_error_set(&err, DF_ERR_INVALID_ARGUMENT, "stream failed"); break; }
        if (!arr.release) break;
        df_batch *batch;
        k = df_arrow_import_batch(&arr, schema, &batch, &err);
        if (k != DF_OK) break;
        for (int64_t off = 0; k == DF_OK && off < batch->nrows;) {
            int64_t len = chunk > 0 ? DF_MIN(chunk, batch->nrows - off) : batch->nrows;
            df_batch *part;
            k = df_batch_slice(batch, off, len, &part, &err);
            if (k == DF_OK) {
                k = df_mssql_bulk_write(b, part, &err);
                df_batch_release(part);
            }
            off += len;
        }
        df_batch_release(batch);
        if (++batches == abort_after) {
            df_mssql_bulk_abort(b);
            b = NULL;
            break;
        }
    }
    if (b) {
        if (k == DF_OK) k = df_mssql_bulk_finish(b, rows, &err);
        else df_mssql_bulk_abort(b);
    }
    if (txn && c && k == DF_OK) k = has_opt(options, "rollback") ? df_mssql_rollback(c, &err) : df_mssql_commit(c, &err);
    df_mssql_close(c);
    df_schema_release(schema);
    for (int i = 0; i < ncols; i++) df_free(names[i]);
    df_free(names);
    df_free(cols);
    int r = report(k, &err, errbuf, errlen);
    df_error_clear(&err);
    return r;
}

/*
 * Runs several batches on one connection (script lines separated by "\n;;\n")
 * and writes "rows,in_transaction" per batch into out, for transaction tests.
 */
int dftest_mssql_session(const char *conn_str, const char *script, char *out, size_t outlen, char *errbuf, size_t errlen) {
    df_error err = {0};
    df_mssql_conn *c;
    df_errkind k = df_mssql_connect_string(conn_str, &c, &err);
    size_t o = 0;
    if (outlen) out[0] = '\0';
    if (k == DF_OK) {
        char *copy = df_strdup(script);
        char *p = copy;
        while (k == DF_OK && p && *p) {
            char *sep = strstr(p, "\n;;\n");
            if (sep) *sep = '\0';
            int64_t rows = -1;
            k = df_mssql_exec(c, p, &rows, &err);
            if (k == DF_OK && o < outlen)
                o += (size_t)snprintf(out + o, outlen - o, "%lld,%d;", (long long)rows, df_mssql_in_transaction(c) ? 1 : 0);
            p = sep ? sep + 4 : NULL;
        }
        df_free(copy);
        df_mssql_close(c);
    }
    int r = report(k, &err, errbuf, errlen);
    df_error_clear(&err);
    return r;
}
