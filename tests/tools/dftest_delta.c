/*
 * Test-only entry points into the Delta reader for pytest (loaded with
 * ctypes).  A table is read through its df_table_provider exactly as the
 * executor does: plan (projection, optional predicate), then every unit in
 * plan order, concatenated into one Arrow C stream.  Errors are returned as
 * the df_errkind value with "kind: message" in errbuf.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "columnar/columnar.h"
#include "delta/delta.h"
#include "delta/delta_int.h"

#define EXPORT __attribute__((visibility("default")))

static int fail(df_error *e, char *errbuf, size_t errlen) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "%s: %s", df_errkind_name(e->kind), e->message);
    int k = (int)e->kind;
    df_error_clear(e);
    return k ? k : (int)DF_ERR_INTERNAL;
}

/* A stream over every unit of a plan, in order; owns the plan and the provider reference. */
typedef struct plan_stream {
    df_batch_stream base;       /* vtable + schema */
    df_table_provider *provider;/* one reference */
    df_scan_plan *plan;         /* owned */
    int64_t next_unit;          /* next unit to open */
    df_batch_stream *cur;       /* current unit stream or NULL */
} plan_stream;

static df_errkind plan_next(df_batch_stream *bs, df_batch **out, df_error *err) {
    plan_stream *p = (plan_stream *)bs;
    *out = NULL;
    for (;;) {
        if (!p->cur) {
            if (p->next_unit >= p->plan->nunits) return DF_OK;
            DF_TRY(p->provider->vt->open_unit(p->provider, p->plan, p->next_unit++, &p->cur, err));
        }
        DF_TRY(df_batch_stream_next(p->cur, out, err));
        if (*out) return DF_OK;
        df_batch_stream_close(p->cur);
        p->cur = NULL;
    }
}

static void plan_close(df_batch_stream *bs) {
    plan_stream *p = (plan_stream *)bs;
    df_batch_stream_close(p->cur);
    p->provider->vt->free_plan(p->provider, p->plan);
    df_table_provider_release(p->provider);
    df_schema_release(p->base.schema);
    df_free(p);
}

static const df_batch_stream_vt plan_vt = {plan_next, plan_close};

static const struct {
    const char *name;
    df_pred_op op;
} ops[] = {{"=", DF_PRED_EQ},  {"!=", DF_PRED_NE},          {"<", DF_PRED_LT},
           {"<=", DF_PRED_LE}, {">", DF_PRED_GT},           {">=", DF_PRED_GE},
           {"is_null", DF_PRED_IS_NULL}, {"is_not_null", DF_PRED_IS_NOT_NULL}};

/* Resolves "a,b" to column indices (NULL csv: all columns). */
static df_errkind parse_columns(const df_schema *schema, const char *csv, int32_t **out, int32_t *n, df_error *err) {
    *out = NULL;
    *n = 0;
    if (!csv) return DF_OK;
    int32_t *arr = df_calloc(strlen(csv) + 1, sizeof *arr);
    char *copy = df_strdup(csv);
    if (!arr || !copy) {
        df_free(arr);
        df_free(copy);
        return DF_OOM(err);
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int32_t f = df_schema_find(schema, tok);
        if (f < 0) {
            df_free(copy);
            df_free(arr);
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no column named %s", tok);
        }
        arr[(*n)++] = f;
    }
    df_free(copy);
    *out = arr;
    return DF_OK;
}

/* Builds the optional single predicate "column op literal" (literal typed by the column). */
static df_errkind parse_predicate(const df_schema *schema, const char *column, const char *op, const char *literal,
                                  df_scan_predicate *pred, df_scalar *value, df_error *err) {
    memset(pred, 0, sizeof *pred);
    int32_t f = df_schema_find(schema, column);
    if (f < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no column named %s", column);
    pred->column = f;
    size_t i = 0;
    while (i < DF_ARRAY_LEN(ops) && strcmp(ops[i].name, op) != 0) i++;
    if (i == DF_ARRAY_LEN(ops)) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "unknown operator %s", op);
    pred->op = ops[i].op;
    if (pred->op == DF_PRED_IS_NULL || pred->op == DF_PRED_IS_NOT_NULL) return DF_OK;
    DF_TRY(df__delta_value_parse(literal, strlen(literal), schema->fields[f].type, value, err));
    pred->nvalues = 1;
    pred->values = value;
    return DF_OK;
}

/* Opens snapshot + provider + plan as one stream. */
static df_errkind open_scan(const char *uri, int64_t version, const char *columns, const char *pred_column,
                            const char *pred_op, const char *pred_literal, int32_t batch_size, plan_stream **out,
                            df_error *err) {
    *out = NULL;
    df_delta_snapshot *snap = NULL;
    df_table_provider *prov = NULL;
    int32_t *proj = NULL, nproj = 0;
    df_scan_predicate pred;
    df_scalar value = {0};
    df_errkind k = df_delta_snapshot_open(uri, version, NULL, NULL, 0, &snap, err);
    if (k == DF_OK) k = df_delta_provider_new(snap, &prov, err);
    df_delta_snapshot_close(snap);
    if (k == DF_OK) k = parse_columns(prov->schema, columns, &proj, &nproj, err);
    bool has_pred = pred_column && pred_column[0];
    if (k == DF_OK && has_pred) k = parse_predicate(prov->schema, pred_column, pred_op, pred_literal, &pred, &value, err);
    df_scan_plan *plan = NULL;
    if (k == DF_OK) {
        df_scan_request req = {columns ? proj : NULL, nproj, has_pred ? &pred : NULL, has_pred ? 1 : 0, -1,
                               batch_size > 0 ? batch_size : 8192};
        k = prov->vt->plan_scan(prov, &req, &plan, err);
    }
    df_scalar_clear(&value);
    df_free(proj);
    plan_stream *p = NULL;
    if (k == DF_OK && !(p = df_calloc(1, sizeof *p))) k = DF_OOM(err);
    if (k != DF_OK) {
        if (plan) prov->vt->free_plan(prov, plan);
        df_table_provider_release(prov);
        return k;
    }
    p->base.vt = &plan_vt;
    p->base.schema = df_schema_retain(plan->schema);
    p->provider = prov;
    p->plan = plan;
    *out = p;
    return DF_OK;
}

/*
 * Reads a Delta table (version < 0: latest) as an Arrow stream.  columns:
 * comma-separated names or NULL (all); the optional predicate is one
 * comparison ("=", "!=", "<", "<=", ">", ">=", "is_null", "is_not_null")
 * with a literal in the Delta text form of the column's type, used for
 * pruning only (rows are not filtered beyond what pruning removes).
 */
EXPORT int dftest_delta_read_ex(const char *uri, int64_t version, const char *columns, const char *pred_column,
                                const char *pred_op, const char *pred_literal, int batch_size,
                                struct ArrowArrayStream *out, char *errbuf, size_t errlen) {
    df_error err = {0};
    plan_stream *p = NULL;
    df_errkind k = open_scan(uri, version, columns, pred_column, pred_op, pred_literal, batch_size, &p, &err);
    if (k == DF_OK) k = df_arrow_export_stream(&p->base, out, &err);
    return k == DF_OK ? 0 : fail(&err, errbuf, errlen);
}

EXPORT int dftest_delta_read(const char *uri, int64_t version, const char *columns, struct ArrowArrayStream *out,
                             char *errbuf, size_t errlen) {
    return dftest_delta_read_ex(uri, version, columns, NULL, NULL, NULL, 0, out, errbuf, errlen);
}

/*
 * Runs a scan to the end and writes {"rows":..,"batches":..,"files_total":..,
 * "files_pruned":..,"files_planned":..,"row_groups_total":..,
 * "row_groups_pruned":..,"deletion_vectors_applied":..,
 * "deletion_vector_rows_deleted":..,"estimated_rows":..} into buf.
 */
EXPORT int dftest_delta_scan_metrics(const char *uri, int64_t version, const char *columns, const char *pred_column,
                                     const char *pred_op, const char *pred_literal, char *buf, size_t buflen,
                                     char *errbuf, size_t errlen) {
    df_error err = {0};
    plan_stream *p = NULL;
    df_errkind k = open_scan(uri, version, columns, pred_column, pred_op, pred_literal, 0, &p, &err);
    int64_t rows = 0;
    while (k == DF_OK) {
        df_batch *b = NULL;
        k = plan_next(&p->base, &b, &err);
        if (k != DF_OK || !b) break;
        rows += b->nrows;
        df_batch_release(b);
    }
    if (k == DF_OK) {
        df_scan_metrics *m = p->plan->metrics;
        snprintf(buf, buflen,
                 "{\"rows\":%" PRId64 ",\"batches\":%" PRId64 ",\"files_total\":%" PRId64 ",\"files_pruned\":%" PRId64
                 ",\"files_planned\":%" PRId64 ",\"files_opened\":%" PRId64 ",\"files_completed\":%" PRId64
                 ",\"row_groups_total\":%" PRId64 ",\"row_groups_pruned\":%" PRId64
                 ",\"deletion_vectors_applied\":%" PRId64 ",\"deletion_vector_rows_deleted\":%" PRId64
                 ",\"rows_produced\":%" PRId64 ",\"estimated_rows\":%" PRId64 "}",
                 rows, (int64_t)m->batches_produced, (int64_t)m->files_total, (int64_t)m->files_pruned,
                 (int64_t)m->files_planned, (int64_t)m->files_opened, (int64_t)m->files_completed,
                 (int64_t)m->row_groups_total, (int64_t)m->row_groups_pruned, (int64_t)m->deletion_vectors_applied,
                 (int64_t)m->deletion_vector_rows_deleted, (int64_t)m->rows_produced, p->plan->estimated_rows);
    }
    if (p) plan_close(&p->base);
    return k == DF_OK ? 0 : fail(&err, errbuf, errlen);
}

/*
 * Writes the snapshot facts JSON (df_delta_snapshot_facts_json) into buf.
 * A buffer that is too small gives DF_ERR_LIMIT_EXCEEDED.
 */
EXPORT int dftest_delta_facts(const char *uri, int64_t version, int include_files, char *buf, size_t buflen,
                              char *errbuf, size_t errlen) {
    df_error err = {0};
    df_delta_snapshot *snap = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_delta_snapshot_open(uri, version, NULL, NULL, 0, &snap, &err);
    if (k == DF_OK) k = df_delta_snapshot_facts_json(snap, include_files != 0, &b, &err);
    if (k == DF_OK && b.len + 1 > buflen)
        k = df_error_set(&err, DF_ERR_LIMIT_EXCEEDED, "facts need %zu bytes", b.len + 1);
    if (k == DF_OK) memcpy(buf, b.data, b.len + 1);
    df_buf_free(&b);
    df_delta_snapshot_close(snap);
    return k == DF_OK ? 0 : fail(&err, errbuf, errlen);
}
