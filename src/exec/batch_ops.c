/*
 * Batch helpers for operators: fast gathers (filter compaction, join
 * output, sort output), concatenation and schema re-wrapping.
 *
 * The gather is specialised by element width so the inner loop is a plain
 * indexed copy; negative indices produce NULLs (outer joins).  Nested
 * types fall back to df_vec_take.
 */
#include "exec/exec_int.h"

static df_errkind gather_validity(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o, df_error *err) {
    bool src_nulls = v->validity != NULL || v->type->id == DF_TYPE_NULL;
    bool neg = false;
    for (int64_t i = 0; i < n && !neg; i++) neg = idx[i] < 0;
    if (!src_nulls && !neg) return DF_OK;
    DF_TRY(df_vec_ensure_validity(o, n, err));
    uint8_t *dst = o->validity->data;
    memset(dst, 0, (size_t)df_bitmap_bytes(n));
    if (v->type->id == DF_TYPE_NULL) return DF_OK;
    const uint8_t *src = v->validity ? v->validity->data : NULL;
    for (int64_t i = 0; i < n; i++) {
        int32_t j = idx[i];
        if (j >= 0 && (!src || df_bit_get(src, v->offset + j))) df_bit_set(dst, i);
    }
    return DF_OK;
}

df_errkind df__vec_gather(const df_vec *v, const int32_t *idx, int64_t n, df_vec **out, df_error *err) {
    *out = NULL;
    if (n < 0) return df_error_set(err, DF_ERR_INTERNAL, "negative gather length");
    df_type_id id = v->type->id;
    if (df_type_is_nested(v->type) || id == DF_TYPE_NULL) {
        if (id == DF_TYPE_NULL) return df_vec_new_nulls(v->type, n, out, err);
        return df_vec_take(v, idx, n, out, err);
    }
    int64_t data = 0;
    const int32_t *so = NULL;
    if (df_type_is_varlen(v->type)) {
        so = df_vec_offsets(v);
        for (int64_t i = 0; i < n; i++)
            if (idx[i] >= 0) data += so[idx[i] + 1] - so[idx[i]];
        if (data > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "gathered strings exceed 2 GiB");
    }
    df_vec *o;
    DF_TRY(df_vec_new(v->type, n, data, &o, err));
    df_errkind k = gather_validity(v, idx, n, o, err);
    if (k) {
        df_vec_release(o);
        return k;
    }
    if (so) {
        int32_t *oo = (int32_t *)(void *)o->values->data;
        uint8_t *dst = o->data->data;
        const uint8_t *src = v->data->data;
        int64_t pos = 0;
        oo[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            int32_t j = idx[i];
            if (j >= 0) {
                int32_t len = so[j + 1] - so[j];
                df__memcpy(dst + pos, src + so[j], (size_t)len);
                pos += len;
            }
            oo[i + 1] = (int32_t)pos;
        }
    } else if (id == DF_TYPE_BOOL) {
        uint8_t *dst = o->values->data;
        memset(dst, 0, (size_t)df_bitmap_bytes(n));
        for (int64_t i = 0; i < n; i++)
            if (idx[i] >= 0 && df_vec_bool(v, idx[i])) df_bit_set(dst, i);
    } else {
        int32_t w = df_type_width(v->type);
        const uint8_t *src = v->values->data + v->offset * w;
        uint8_t *dst = o->values->data;
        switch (w) {
#define G(W, T)                                                                     \
    case W: {                                                                       \
        const T *s = (const T *)(const void *)src;                                  \
        T *d = (T *)(void *)dst;                                                    \
        for (int64_t i = 0; i < n; i++) d[i] = idx[i] >= 0 ? s[idx[i]] : (T)0;      \
        break;                                                                      \
    }
            G(1, uint8_t)
            G(2, uint16_t)
            G(4, uint32_t)
            G(8, uint64_t)
            G(16, df_u128)
#undef G
        default:
            for (int64_t i = 0; i < n; i++) {
                if (idx[i] >= 0) df__memcpy(dst + i * w, src + (int64_t)idx[i] * w, (size_t)w);
                else memset(dst + i * w, 0, (size_t)w);
            }
        }
    }
    df_vec_set_length(o, n);
    *out = o;
    return DF_OK;
}

df_errkind df__batch_take(const df_batch *b, const int32_t *idx, int64_t n, df_schema *schema, df_batch **out,
                          df_error *err) {
    *out = NULL;
    df_vec **cols = df_calloc((size_t)(b->ncols ? b->ncols : 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t c = 0; c < b->ncols && !k; c++) k = df__vec_gather(b->cols[c], idx, n, &cols[c], err);
    if (k) {
        for (int32_t c = 0; c < b->ncols; c++) df_vec_release(cols[c]);
        df_free(cols);
        return k;
    }
    k = df_batch_new(schema ? schema : b->schema, cols, n, out, err);
    df_free(cols);
    return k;
}

df_errkind df__batch_rewrap(df_batch *b, df_schema *schema, df_batch **out, df_error *err) {
    *out = NULL;
    if (b->schema == schema) {
        *out = df_batch_retain(b);
        return DF_OK;
    }
    df_vec **cols = df_calloc((size_t)(b->ncols ? b->ncols : 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    for (int32_t c = 0; c < b->ncols; c++) cols[c] = df_vec_retain(b->cols[c]);
    df_errkind k = df_batch_new(schema, cols, b->nrows, out, err);
    df_free(cols);
    return k;
}

df_errkind df__batch_concat(df_batch *const *bs, int32_t n, df_schema *schema, df_batch **out, df_error *err) {
    *out = NULL;
    if (n == 1) return df__batch_rewrap(bs[0], schema, out, err);
    int32_t ncols = schema->nfields;
    int64_t rows = 0;
    for (int32_t i = 0; i < n; i++) rows += bs[i]->nrows;
    df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
    df_vec **parts = df_calloc((size_t)(n ? n : 1), sizeof(df_vec *));
    if (!cols || !parts) {
        df_free(cols);
        df_free(parts);
        return DF_OOM(err);
    }
    df_errkind k = DF_OK;
    for (int32_t c = 0; c < ncols && !k; c++) {
        for (int32_t i = 0; i < n; i++) parts[i] = bs[i]->cols[c];
        if (n == 0) k = df_vec_new(schema->fields[c].type, 0, 0, &cols[c], err);
        else k = df__vec_concat(parts, n, &cols[c], err);
    }
    df_free(parts);
    if (k) {
        for (int32_t c = 0; c < ncols; c++) df_vec_release(cols[c]);
        df_free(cols);
        return k;
    }
    k = df_batch_new(schema, cols, rows, out, err);
    df_free(cols);
    return k;
}

df_errkind df__vec_gather_multi(df_type *type, df_vec *const *srcs, const int32_t *src_of, const int32_t *row_of,
                                int64_t n, df_vec **out, df_error *err) {
    *out = NULL;
    if (type->id == DF_TYPE_NULL) return df_vec_new_nulls(type, n, out, err);
    if (df_type_is_nested(type)) return df_error_set(err, DF_ERR_UNSUPPORTED, "merging nested columns is not supported");
    bool varlen = df_type_is_varlen(type);
    int64_t data = 0;
    bool any_null = false;
    for (int64_t i = 0; i < n; i++) {
        const df_vec *v = srcs[src_of[i]];
        if (!df_vec_is_valid(v, row_of[i])) {
            any_null = true;
            continue;
        }
        if (varlen) {
            const int32_t *o = df_vec_offsets(v);
            data += o[row_of[i] + 1] - o[row_of[i]];
        }
    }
    if (data > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "merged strings exceed 2 GiB");
    df_vec *o;
    DF_TRY(df_vec_new(type, n, data, &o, err));
    if (any_null) {
        df_errkind k = df_vec_ensure_validity(o, n, err);
        if (k) {
            df_vec_release(o);
            return k;
        }
    }
    int32_t w = df_type_width(type);
    int32_t *oo = varlen ? (int32_t *)(void *)o->values->data : NULL;
    if (type->id == DF_TYPE_BOOL) memset(o->values->data, 0, (size_t)df_bitmap_bytes(n));
    int64_t pos = 0;
    for (int64_t i = 0; i < n; i++) {
        const df_vec *v = srcs[src_of[i]];
        int64_t r = row_of[i];
        bool valid = df_vec_is_valid(v, r);
        if (any_null) df_bit_put(o->validity->data, i, valid);
        if (varlen) {
            if (valid) {
                int32_t len;
                const uint8_t *p = df_vec_bytes(v, r, &len);
                df__memcpy(o->data->data + pos, p, (size_t)len);
                pos += len;
            }
            oo[i + 1] = (int32_t)pos;
        } else if (type->id == DF_TYPE_BOOL) {
            if (valid && df_vec_bool(v, r)) df_bit_set(o->values->data, i);
        } else {
            df__memcpy(o->values->data + i * w, v->values->data + (v->offset + r) * w, (size_t)w);
        }
    }
    df_vec_set_length(o, n);
    *out = o;
    return DF_OK;
}

static int64_t vec_bytes(const df_vec *v) {
    int64_t b = 0;
    if (v->validity) b += v->validity->capacity;
    if (v->values) b += v->values->capacity;
    if (v->data) b += v->data->capacity;
    for (int32_t i = 0; i < v->nchildren; i++) b += vec_bytes(v->children[i]);
    return b;
}

int64_t df__vec_bytes(const df_vec *v) { return v ? vec_bytes(v) : 0; }

int64_t df__batch_bytes(const df_batch *b) {
    int64_t t = 0;
    for (int32_t c = 0; c < b->ncols; c++) t += vec_bytes(b->cols[c]);
    return t;
}

df_errkind df__vec_concat(df_vec *const *vecs, int32_t n, df_vec **out, df_error *err) {
    *out = NULL;
    if (n <= 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "nothing to concatenate");
    if (n == 1) {
        *out = df_vec_retain(vecs[0]);
        return DF_OK;
    }
    df_type *type = vecs[0]->type;
    if (df_type_is_nested(type)) return df_vec_concat(vecs, n, out, err);
    int64_t total = 0, data = 0;
    bool any_null = type->id == DF_TYPE_NULL;
    bool varlen = df_type_is_varlen(type);
    for (int32_t i = 0; i < n; i++) {
        const df_vec *v = vecs[i];
        if (!df_type_equals(v->type, type)) return df_error_set(err, DF_ERR_INTERNAL, "concatenating different types");
        total += v->length;
        if (v->validity) any_null = true;
        if (varlen) {
            const int32_t *o = df_vec_offsets(v);
            data += o[v->length] - o[0];
        }
    }
    if (total > INT32_MAX || data > INT32_MAX)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "concatenation larger than 2^31 elements or bytes");
    if (type->id == DF_TYPE_NULL) return df_vec_new_nulls(type, total, out, err);
    df_vec *o;
    DF_TRY(df_vec_new(type, total, data, &o, err));
    if (any_null) {
        df_errkind k = df_vec_ensure_validity(o, total, err);
        if (k) {
            df_vec_release(o);
            return k;
        }
    }
    int32_t w = df_type_width(type);
    int32_t *oo = varlen ? (int32_t *)(void *)o->values->data : NULL;
    int64_t pos = 0, dpos = 0;
    for (int32_t i = 0; i < n; i++) {
        const df_vec *v = vecs[i];
        int64_t len = v->length;
        if (any_null) {
            if (v->validity) df_bitmap_copy(o->validity->data, pos, v->validity->data, v->offset, len);
            else df_bitmap_fill(o->validity->data, pos, len, true);
        }
        if (varlen) {
            const int32_t *so = df_vec_offsets(v);
            int64_t bytes = so[len] - so[0];
            df__memcpy(o->data->data + dpos, v->data->data + so[0], (size_t)bytes);
            for (int64_t j = 0; j < len; j++) oo[pos + j + 1] = (int32_t)(dpos + so[j + 1] - so[0]);
            dpos += bytes;
        } else if (type->id == DF_TYPE_BOOL) {
            df_bitmap_copy(o->values->data, pos, v->values->data, v->offset, len);
        } else {
            df__memcpy(o->values->data + pos * w, v->values->data + v->offset * w, (size_t)(len * w));
        }
        pos += len;
    }
    df_vec_set_length(o, total);
    *out = o;
    return DF_OK;
}
