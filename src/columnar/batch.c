/*
 * Batches: a schema plus equally long column vectors.
 */
#include "columnar/columnar.h"

df_errkind df_batch_new(df_schema *schema, df_vec **cols, int64_t nrows, df_batch **out, df_error *err) {
    *out = NULL;
    int32_t n = schema->nfields;
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < n && k == DF_OK; i++) {
        if (!cols[i])
            k = df_error_set(err, DF_ERR_INTERNAL, "batch column %d missing", i);
        else if (cols[i]->length != nrows)
            k = df_error_set(err, DF_ERR_INTERNAL, "batch column %d has %lld rows, expected %lld", i,
                             (long long)cols[i]->length, (long long)nrows);
        else if (!df_type_equals(cols[i]->type, schema->fields[i].type))
            k = df_error_set(err, DF_ERR_INTERNAL, "batch column %d (%s) does not have its schema type", i,
                             schema->fields[i].name);
    }
    df_batch *b = NULL;
    if (k == DF_OK) {
        b = df_calloc(1, sizeof *b);
        if (b && n > 0) {
            b->cols = df_malloc((size_t)n * sizeof(df_vec *));
            if (!b->cols) {
                df_free(b);
                b = NULL;
            }
        }
        if (!b) k = DF_OOM(err);
    }
    if (k != DF_OK) {
        for (int32_t i = 0; i < n; i++) df_vec_release(cols[i]);
        return k;
    }
    atomic_init(&b->refs, 1);
    b->schema = df_schema_retain(schema);
    b->nrows = nrows;
    b->ncols = n;
    if (n > 0) memcpy(b->cols, cols, (size_t)n * sizeof(df_vec *));
    *out = b;
    return DF_OK;
}

df_batch *df_batch_retain(df_batch *b) {
    if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void df_batch_release(df_batch *b) {
    if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    for (int32_t i = 0; i < b->ncols; i++) df_vec_release(b->cols[i]);
    df_free(b->cols);
    df_schema_release(b->schema);
    df_free(b);
}

df_errkind df_batch_slice(df_batch *b, int64_t offset, int64_t length, df_batch **out, df_error *err) {
    *out = NULL;
    df_vec **cols = df_calloc((size_t)DF_MAX(b->ncols, 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    for (int32_t i = 0; i < b->ncols; i++) {
        df_errkind k = df_vec_slice(b->cols[i], offset, length, &cols[i], err);
        if (k != DF_OK) {
            for (int32_t j = 0; j < i; j++) df_vec_release(cols[j]);
            df_free(cols);
            return k;
        }
    }
    df_errkind k = df_batch_new(b->schema, cols, length, out, err);
    df_free(cols);
    return k;
}

df_errkind df_batch_project(df_batch *b, const int32_t *indices, int32_t n, df_batch **out, df_error *err) {
    *out = NULL;
    df_schema *schema;
    DF_TRY(df_schema_project(b->schema, indices, n, &schema, err));
    df_vec **cols = df_calloc((size_t)DF_MAX(n, 1), sizeof(df_vec *));
    if (!cols) {
        df_schema_release(schema);
        return DF_OOM(err);
    }
    for (int32_t i = 0; i < n; i++) cols[i] = df_vec_retain(b->cols[indices[i]]);
    df_errkind k = df_batch_new(schema, cols, b->nrows, out, err);
    df_free(cols);
    df_schema_release(schema);
    return k;
}
