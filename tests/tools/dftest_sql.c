/*
 * Test-only bridge from pytest (ctypes) to the SQL engine: catalogs of
 * in-memory tables filled from Arrow C streams, queries returning Arrow C
 * streams, views, EXPLAIN and profiles.  Errors are written into the
 * caller's buffer as "kind|offset|message" and the call returns the
 * df_errkind (0 on success).
 */
#include <stdio.h>
#include <stdlib.h>

#include "columnar/columnar.h"
#include "exec/query.h"

#define DFTEST_EXPORT __attribute__((visibility("default")))

static int fail(const df_error *e, df_errkind k, char *errbuf, size_t errlen) {
    if (errbuf && errlen) {
        snprintf(errbuf, errlen, "%s|%lld|%s", df_errkind_name(k), (long long)(e ? e->offset : -1),
                 e ? e->message : "");
    }
    return (int)k;
}

DFTEST_EXPORT void *dfsql_catalog_new(void) {
    df_catalog *c = NULL;
    if (df_catalog_new(&c, NULL)) return NULL;
    return c;
}

DFTEST_EXPORT void dfsql_catalog_free(void *cat) { df_catalog_free(cat); }

/* Imports every batch of an Arrow stream (consumed and released). */
static df_errkind import_stream(struct ArrowArrayStream *in, df_schema **schema, df_batch ***batches, int64_t *n,
                                df_error *err) {
    *schema = NULL;
    *batches = NULL;
    *n = 0;
    struct ArrowSchema sch;
    memset(&sch, 0, sizeof sch);
    if (in->get_schema(in, &sch) != 0) {
        const char *m = in->get_last_error ? in->get_last_error(in) : NULL;
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "get_schema failed: %s", m ? m : "?");
    }
    df_errkind k = df_arrow_import_schema(&sch, schema, err);
    if (sch.release) sch.release(&sch);
    int64_t cap = 0;
    while (!k) {
        struct ArrowArray arr;
        memset(&arr, 0, sizeof arr);
        if (in->get_next(in, &arr) != 0) {
            k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "get_next failed");
            break;
        }
        if (!arr.release) break;
        df_batch *b = NULL;
        k = df_arrow_import_batch(&arr, *schema, &b, err);
        if (k) {
            if (arr.release) arr.release(&arr);
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            df_batch **nb = df_realloc(*batches, (size_t)cap * sizeof *nb);
            if (!nb) {
                df_batch_release(b);
                k = DF_OOM(err);
                break;
            }
            *batches = nb;
        }
        (*batches)[(*n)++] = b;
    }
    if (in->release) in->release(in);
    if (k) {
        for (int64_t i = 0; i < *n; i++) df_batch_release((*batches)[i]);
        df_free(*batches);
        df_schema_release(*schema);
        *batches = NULL;
        *schema = NULL;
        *n = 0;
    }
    return k;
}

/*
 * Registers the stream's batches as memory table `name` (each batch one
 * scan unit).  An existing table of that name is replaced.
 */
DFTEST_EXPORT int dfsql_register_stream(void *cat, const char *name, void *stream, char *errbuf, size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_schema *schema;
    df_batch **batches;
    int64_t n;
    df_errkind k = import_stream(stream, &schema, &batches, &n, &err);
    if (k) return fail(&err, k, errbuf, errlen);
    df_table_provider *p = NULL;
    k = df_memory_provider_new(schema, batches, n, &p, &err);
    for (int64_t i = 0; i < n; i++) df_batch_release(batches[i]);
    df_free(batches);
    df_schema_release(schema);
    if (!k && df_catalog_contains(cat, name)) k = df_catalog_unregister(cat, name, &err);
    if (!k) k = df_catalog_register_table(cat, name, p, &err);
    df_table_provider_release(p);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

DFTEST_EXPORT int dfsql_unregister(void *cat, const char *name, char *errbuf, size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_catalog_unregister(cat, name, &err);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

DFTEST_EXPORT int dfsql_contains(void *cat, const char *name) { return df_catalog_contains(cat, name); }

/* Plans `sql` and registers it as view `name` (replacing an existing entry). */
DFTEST_EXPORT int dfsql_register_view(void *cat, const char *name, const char *sql, char *errbuf, size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL;
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (!k && df_catalog_contains(cat, name)) k = df_catalog_unregister(cat, name, &err);
    if (!k) k = df_query_register_as_view(cat, name, q, &err);
    df_query_free(q);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

/*
 * Runs a query and exports its result as an Arrow C stream into `out`
 * (struct ArrowArrayStream *).  partitions/batch_size <= 0 use defaults.
 */
DFTEST_EXPORT int dfsql_query(void *cat, const char *sql, int partitions, int batch_size, void *out, char *errbuf,
                              size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL;
    df_batch_stream *s = NULL;
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (!k) {
        df_exec_options o;
        df_exec_options_init(&o);
        o.target_partitions = partitions;
        o.batch_size = batch_size;
        k = df_query_execute(q, &o, &s, &err);
    }
    df_query_free(q); /* the stream keeps what it needs */
    if (!k) k = df_arrow_export_stream(s, out, &err);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

/* Plans only; fills the result schema's Arrow format strings "name:format;..." into buf. */
DFTEST_EXPORT int dfsql_plan(void *cat, const char *sql, char *buf, size_t buflen, char *errbuf, size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL;
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (!k && buf && buflen) {
        df_buf b;
        df_buf_init(&b, 0);
        const df_schema *s = df_query_schema(q);
        for (int32_t i = 0; i < s->nfields && !k; i++) {
            if (i) k = df_buf_append_char(&b, ';', &err);
            if (!k) k = df_buf_printf(&b, &err, "%s:", s->fields[i].name);
            if (!k) k = df_type_display(s->fields[i].type, &b, &err);
        }
        snprintf(buf, buflen, "%s", b.data ? b.data : "");
        df_buf_free(&b);
    }
    df_query_free(q);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

DFTEST_EXPORT int dfsql_explain(void *cat, const char *sql, char *buf, size_t buflen, char *errbuf, size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (!k) k = df_query_explain(q, &b, &err);
    if (!k) snprintf(buf, buflen, "%s", b.data ? b.data : "");
    df_buf_free(&b);
    df_query_free(q);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}

/* Runs a query to the end with profiling and writes the profile JSON into buf. */
DFTEST_EXPORT int dfsql_profile(void *cat, const char *sql, int partitions, char *buf, size_t buflen, char *errbuf,
                                size_t errlen) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL;
    df_batch_stream *s = NULL;
    df_exec_profile *prof = NULL;
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (!k) {
        df_exec_options o;
        df_exec_options_init(&o);
        o.target_partitions = partitions;
        o.execution_profile = true;
        k = df_query_execute(q, &o, &s, &err);
    }
    if (!k) prof = df_exec_stream_profile(s);
    while (!k) {
        df_batch *b = NULL;
        k = df_batch_stream_next(s, &b, &err);
        if (!b) break;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    if (prof) {
        df_buf b;
        df_buf_init(&b, 0);
        df_profile_meta meta = {.scope = "preview", .row_limit = -1};
        df_error perr;
        memset(&perr, 0, sizeof perr);
        if (df_query_profile_json(prof, &meta, &b, &perr) == DF_OK) snprintf(buf, buflen, "%s", b.data ? b.data : "");
        df_buf_free(&b);
        df_error_clear(&perr);
        df_exec_profile_release(prof);
    }
    df_query_free(q);
    int rc = k ? fail(&err, k, errbuf, errlen) : 0;
    df_error_clear(&err);
    return rc;
}
