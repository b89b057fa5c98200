/*
 * Vectors: allocation, growth, nulls, slicing, gathering (take/filter),
 * concatenation and validation, for every type of columnar.h.
 *
 * Builders own their vectors exclusively (refs == 1, offset 0) and may
 * write into the buffers; once a vector is shared it is immutable.
 */
#include "columnar/columnar.h"

/* ------------------------------------------------------------------------ */
/* Creation and lifetime                                                     */

static bool has_offsets(df_type_id id) {
    return id == DF_TYPE_UTF8 || id == DF_TYPE_BINARY || id == DF_TYPE_LIST || id == DF_TYPE_MAP;
}

/* Bytes of the values buffer for `n` elements. */
static int64_t values_bytes(const df_type *t, int64_t n) {
    if (t->id == DF_TYPE_BOOL) return df_bitmap_bytes(n);
    if (has_offsets(t->id)) return (n + 1) * (int64_t)sizeof(int32_t);
    return n * df_type_width(t);
}

static bool has_values_buffer(const df_type *t) {
    return t->id != DF_TYPE_NULL && t->id != DF_TYPE_STRUCT;
}

df_errkind df_vec_new(df_type *type, int64_t capacity, int64_t data_capacity, df_vec **out, df_error *err) {
    *out = NULL;
    if (capacity < 0 || capacity > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "vector capacity %lld out of range", (long long)capacity);
    df_vec *v = df_calloc(1, sizeof *v);
    if (!v) return DF_OOM(err);
    atomic_init(&v->refs, 1);
    v->type = df_type_retain(type);
    v->null_count = 0;
    if (has_values_buffer(type)) {
        v->values = df_buffer_new(values_bytes(type, capacity));
        if (!v->values) goto oom;
        if (has_offsets(type->id)) {
            memset(v->values->data, 0, sizeof(int32_t));
            v->values->size = sizeof(int32_t);
        }
    }
    if (df_type_is_varlen(type)) {
        v->data = df_buffer_new(data_capacity > 0 ? data_capacity : 64);
        if (!v->data) goto oom;
    }
    if (type->nchildren > 0) {
        v->children = df_calloc((size_t)type->nchildren, sizeof(df_vec *));
        if (!v->children) goto oom;
        v->nchildren = type->nchildren;
        for (int32_t i = 0; i < type->nchildren; i++) {
            df_errkind k = df_vec_new(type->children[i].type, capacity, data_capacity, &v->children[i], err);
            if (k != DF_OK) {
                df_vec_release(v);
                return k;
            }
        }
    }
    *out = v;
    return DF_OK;
oom:
    df_vec_release(v);
    return DF_OOM(err);
}

df_errkind df_vec_new_nulls(df_type *type, int64_t length, df_vec **out, df_error *err) {
    df_vec *v;
    DF_TRY(df_vec_new(type, length, 0, &v, err));
    if (type->id != DF_TYPE_NULL) {
        v->validity = df_buffer_new_zeroed(df_bitmap_bytes(length));
        if (!v->validity) {
            df_vec_release(v);
            return DF_OOM(err);
        }
    }
    if (v->values) {
        memset(v->values->data, 0, (size_t)values_bytes(type, length));
        v->values->size = values_bytes(type, length);
    }
    /* Struct children must have the parent's length; they are null too. */
    if (type->id == DF_TYPE_STRUCT) {
        for (int32_t i = 0; i < v->nchildren; i++) {
            df_vec_release(v->children[i]);
            v->children[i] = NULL;
            df_errkind k = df_vec_new_nulls(type->children[i].type, length, &v->children[i], err);
            if (k != DF_OK) {
                df_vec_release(v);
                return k;
            }
        }
    }
    v->length = length;
    v->null_count = length;
    *out = v;
    return DF_OK;
}

df_vec *df_vec_retain(df_vec *v) {
    if (v) atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    return v;
}

void df_vec_release(df_vec *v) {
    if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1) return;
    df_buffer_release(v->validity);
    df_buffer_release(v->values);
    df_buffer_release(v->data);
    for (int32_t i = 0; i < v->nchildren; i++) df_vec_release(v->children[i]);
    df_free(v->children);
    df_type_release(v->type);
    df_free(v);
}

/* ------------------------------------------------------------------------ */
/* Nulls                                                                     */

df_errkind df_vec_ensure_validity(df_vec *v, int64_t capacity, df_error *err) {
    int64_t need = df_bitmap_bytes(DF_MAX(capacity, v->offset + v->length));
    if (v->validity) {
        if (v->validity->capacity >= need) return DF_OK;
        int64_t old = v->validity->capacity;
        DF_TRY(df_buffer_reserve(v->validity, need, err));
        memset(v->validity->data + old, 0xff, (size_t)(v->validity->capacity - old));
        return DF_OK;
    }
    v->validity = df_buffer_new(need);
    if (!v->validity) return DF_OOM(err);
    memset(v->validity->data, 0xff, (size_t)v->validity->capacity);
    v->validity->size = df_bitmap_bytes(v->offset + v->length);
    return DF_OK;
}

df_errkind df_vec_set_null(df_vec *v, int64_t i, df_error *err) {
    DF_TRY(df_vec_ensure_validity(v, i + 1, err));
    df_bit_clear(v->validity->data, v->offset + i);
    v->null_count = -1;
    return DF_OK;
}

int64_t df_vec_null_count(df_vec *v) {
    if (v->type->id == DF_TYPE_NULL) return v->length;
    if (!v->validity) return 0;
    if (v->null_count < 0) v->null_count = v->length - df_bitmap_count(v->validity->data, v->offset, v->length);
    return v->null_count;
}

/* ------------------------------------------------------------------------ */
/* Growth                                                                    */

df_errkind df_vec_reserve(df_vec *v, int64_t capacity, df_error *err) {
    if (capacity > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "vector longer than 2^31 elements");
    if (v->values) DF_TRY(df_buffer_reserve(v->values, values_bytes(v->type, capacity), err));
    if (v->validity) DF_TRY(df_vec_ensure_validity(v, capacity, err));
    if (v->type->id == DF_TYPE_STRUCT)
        for (int32_t i = 0; i < v->nchildren; i++) DF_TRY(df_vec_reserve(v->children[i], capacity, err));
    return DF_OK;
}

df_errkind df_vec_reserve_data(df_vec *v, int64_t data_bytes, df_error *err) {
    if (!v->data) return df_error_set(err, DF_ERR_INTERNAL, "vector has no data buffer");
    if (data_bytes > INT32_MAX)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2 GiB of string data in one vector");
    return df_buffer_reserve(v->data, data_bytes, err);
}

df_errkind df_vec_append_bytes(df_vec *v, const void *value, int32_t len, df_error *err) {
    int64_t n = v->length;
    DF_TRY(df_vec_reserve(v, n + 1, err));
    int32_t *offsets = (int32_t *)(void *)v->values->data;
    int64_t end = (int64_t)offsets[n] + (value ? len : 0);
    if (value && len > 0) {
        DF_TRY(df_vec_reserve_data(v, end, err));
        memcpy(v->data->data + offsets[n], value, (size_t)len);
    }
    offsets[n + 1] = (int32_t)end;
    v->values->size = (n + 2) * (int64_t)sizeof(int32_t);
    v->data->size = end;
    if (!value) {
        DF_TRY(df_vec_ensure_validity(v, n + 1, err));
        df_bit_clear(v->validity->data, n);
        v->null_count = -1;
    } else if (v->validity) {
        df_bit_set(v->validity->data, n);
    }
    v->length = n + 1;
    if (v->validity) v->validity->size = df_bitmap_bytes(n + 1);
    return DF_OK;
}

df_errkind df_vec_append_null(df_vec *v, df_error *err) {
    int64_t n = v->length;
    if (v->type->id == DF_TYPE_NULL) {
        v->length++;
        v->null_count = v->length;
        return DF_OK;
    }
    if (df_type_is_varlen(v->type)) return df_vec_append_bytes(v, NULL, 0, err);
    DF_TRY(df_vec_reserve(v, n + 1, err));
    DF_TRY(df_vec_ensure_validity(v, n + 1, err));
    df_bit_clear(v->validity->data, n);
    if (v->values) {
        if (has_offsets(v->type->id)) {
            int32_t *o = (int32_t *)(void *)v->values->data;
            o[n + 1] = o[n];
        } else if (v->type->id == DF_TYPE_BOOL) {
            df_bit_clear(v->values->data, n);
        } else {
            int32_t w = df_type_width(v->type);
            memset(v->values->data + n * w, 0, (size_t)w);
        }
    }
    if (v->type->id == DF_TYPE_STRUCT)
        for (int32_t i = 0; i < v->nchildren; i++) DF_TRY(df_vec_append_null(v->children[i], err));
    df_vec_set_length(v, n + 1);
    return DF_OK;
}

void df_vec_set_length(df_vec *v, int64_t length) {
    v->length = length;
    if (v->values) v->values->size = values_bytes(v->type, v->offset + length);
    if (v->validity) {
        v->validity->size = df_bitmap_bytes(v->offset + length);
        v->null_count = -1;
    } else {
        v->null_count = v->type->id == DF_TYPE_NULL ? length : 0;
    }
    if (v->data && has_offsets(v->type->id)) {
        const int32_t *o = (const int32_t *)(const void *)v->values->data;
        v->data->size = o[v->offset + length];
    }
}

/* ------------------------------------------------------------------------ */
/* Slices                                                                    */

df_errkind df_vec_slice(df_vec *v, int64_t offset, int64_t length, df_vec **out, df_error *err) {
    *out = NULL;
    if (offset < 0 || length < 0 || offset + length > v->length)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "slice [%lld, +%lld) outside vector of %lld",
                            (long long)offset, (long long)length, (long long)v->length);
    df_vec *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    if (v->nchildren) {
        s->children = df_calloc((size_t)v->nchildren, sizeof(df_vec *));
        if (!s->children) {
            df_free(s);
            return DF_OOM(err);
        }
    }
    atomic_init(&s->refs, 1);
    s->type = df_type_retain(v->type);
    s->length = length;
    s->offset = v->offset + offset;
    s->validity = df_buffer_retain(v->validity);
    s->values = df_buffer_retain(v->values);
    s->data = df_buffer_retain(v->data);
    s->nchildren = v->nchildren;
    /* Children are shared as they are: Arrow offsets apply to the parent. */
    for (int32_t i = 0; i < v->nchildren; i++) s->children[i] = df_vec_retain(v->children[i]);
    s->null_count = (v->type->id == DF_TYPE_NULL) ? length : (v->validity ? -1 : 0);
    *out = s;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Take (gather).  Negative indices produce nulls (outer joins use them).    */

static df_errkind take_validity(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o, df_error *err) {
    if (v->type->id == DF_TYPE_NULL) return DF_OK;
    bool any_null = false;
    for (int64_t i = 0; i < n && !any_null; i++) any_null = idx[i] < 0 || !df_vec_is_valid(v, idx[i]);
    if (!any_null) return DF_OK;
    DF_TRY(df_vec_ensure_validity(o, n, err));
    for (int64_t i = 0; i < n; i++) df_bit_put(o->validity->data, i, idx[i] >= 0 && df_vec_is_valid(v, idx[i]));
    return DF_OK;
}

static void take_fixed(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o) {
    int32_t w = df_type_width(v->type);
    const uint8_t *src = v->values->data + v->offset * w;
    uint8_t *dst = o->values->data;
    switch (w) {
#define TAKE_W(W, T)                                                              \
    case W:                                                                       \
        for (int64_t i = 0; i < n; i++) {                                         \
            T x = 0;                                                              \
            if (idx[i] >= 0) memcpy(&x, src + (int64_t)idx[i] * W, W);            \
            memcpy(dst + i * W, &x, W);                                           \
        }                                                                         \
        break;
        TAKE_W(1, uint8_t)
        TAKE_W(2, uint16_t)
        TAKE_W(4, uint32_t)
        TAKE_W(8, uint64_t)
#undef TAKE_W
    default:
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] >= 0)
                memcpy(dst + i * w, src + (int64_t)idx[i] * w, (size_t)w);
            else
                memset(dst + i * w, 0, (size_t)w);
        }
    }
}

static df_errkind take_varlen(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o, df_error *err) {
    const int32_t *so = df_vec_offsets(v);
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] >= 0) total += so[idx[i] + 1] - so[idx[i]];
    DF_TRY(df_vec_reserve_data(o, total, err));
    int32_t *oo = (int32_t *)(void *)o->values->data;
    uint8_t *dst = o->data->data;
    int64_t pos = 0;
    oo[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] >= 0) {
            int32_t len = so[idx[i] + 1] - so[idx[i]];
            memcpy(dst + pos, v->data->data + so[idx[i]], (size_t)len);
            pos += len;
        }
        oo[i + 1] = (int32_t)pos;
    }
    return DF_OK;
}

/* list/map: new offsets, then take the child elements the selected rows cover. */
static df_errkind take_list(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o, df_error *err) {
    const int32_t *so = df_vec_offsets(v);
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] >= 0) total += so[idx[i] + 1] - so[idx[i]];
    if (total > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "list child longer than 2^31 elements");
    int32_t *child_idx = df_malloc((size_t)DF_MAX(total, 1) * sizeof(int32_t));
    if (!child_idx) return DF_OOM(err);
    int32_t *oo = (int32_t *)(void *)o->values->data;
    int64_t pos = 0;
    oo[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] >= 0)
            for (int32_t k = so[idx[i]]; k < so[idx[i] + 1]; k++) child_idx[pos++] = k;
        oo[i + 1] = (int32_t)pos;
    }
    df_vec *child = NULL;
    df_errkind k = df_vec_take(v->children[0], child_idx, total, &child, err);
    df_free(child_idx);
    if (k != DF_OK) return k;
    df_vec_release(o->children[0]);
    o->children[0] = child;
    return DF_OK;
}

static df_errkind take_struct(const df_vec *v, const int32_t *idx, int64_t n, df_vec *o, df_error *err) {
    int32_t *shifted = df_malloc((size_t)DF_MAX(n, 1) * sizeof(int32_t));
    if (!shifted) return DF_OOM(err);
    for (int64_t i = 0; i < n; i++) shifted[i] = idx[i] >= 0 ? (int32_t)(idx[i] + v->offset) : -1;
    for (int32_t c = 0; c < v->nchildren; c++) {
        df_vec *child = NULL;
        df_errkind k = df_vec_take(v->children[c], shifted, n, &child, err);
        if (k != DF_OK) {
            df_free(shifted);
            return k;
        }
        df_vec_release(o->children[c]);
        o->children[c] = child;
    }
    df_free(shifted);
    return DF_OK;
}

df_errkind df_vec_take(const df_vec *v, const int32_t *indices, int64_t n, df_vec **out, df_error *err) {
    *out = NULL;
    for (int64_t i = 0; i < n; i++)
        if (indices[i] >= v->length)
            return df_error_set(err, DF_ERR_INTERNAL, "take index %d out of range %lld", indices[i], (long long)v->length);
    df_vec *o;
    DF_TRY(df_vec_new(v->type, n, 0, &o, err));
    df_errkind k = take_validity(v, indices, n, o, err);
    if (k == DF_OK) {
        switch (v->type->id) {
        case DF_TYPE_NULL:
            break;
        case DF_TYPE_BOOL:
            for (int64_t i = 0; i < n; i++)
                df_bit_put(o->values->data, i, indices[i] >= 0 && df_vec_bool(v, indices[i]));
            break;
        case DF_TYPE_UTF8:
        case DF_TYPE_BINARY:
            k = take_varlen(v, indices, n, o, err);
            break;
        case DF_TYPE_LIST:
        case DF_TYPE_MAP:
            k = take_list(v, indices, n, o, err);
            break;
        case DF_TYPE_STRUCT:
            k = take_struct(v, indices, n, o, err);
            break;
        default:
            take_fixed(v, indices, n, o);
        }
    }
    if (k != DF_OK) {
        df_vec_release(o);
        return k;
    }
    df_vec_set_length(o, n);
    *out = o;
    return DF_OK;
}

df_errkind df_vec_filter(const df_vec *v, const uint8_t *selection, int64_t selected, df_vec **out, df_error *err) {
    *out = NULL;
    int32_t *idx = df_malloc((size_t)DF_MAX(selected, 1) * sizeof(int32_t));
    if (!idx) return DF_OOM(err);
    int64_t n = 0;
    for (int64_t i = 0; i < v->length && n < selected; i++)
        if (df_bit_get(selection, i)) idx[n++] = (int32_t)i;
    df_errkind k = df_vec_take(v, idx, n, out, err);
    df_free(idx);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Concatenation                                                             */

df_errkind df_vec_concat(df_vec *const *vecs, int32_t n, df_vec **out, df_error *err) {
    *out = NULL;
    if (n <= 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "nothing to concatenate");
    if (n == 1) {
        *out = df_vec_retain(vecs[0]);
        return DF_OK;
    }
    /* Gather through (vector, index) pairs: one take per input, then splice. */
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!df_type_equals(vecs[i]->type, vecs[0]->type))
            return df_error_set(err, DF_ERR_INTERNAL, "concatenating vectors of different types");
        total += vecs[i]->length;
    }
    if (total > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "concatenation longer than 2^31 elements");
    df_vec *o;
    DF_TRY(df_vec_new(vecs[0]->type, total, 0, &o, err));
    df_type_id id = o->type->id;
    int64_t pos = 0;
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < n && k == DF_OK; i++) {
        const df_vec *v = vecs[i];
        if (v->validity || id == DF_TYPE_NULL) {
            if (id != DF_TYPE_NULL) {
                k = df_vec_ensure_validity(o, total, err);
                if (k != DF_OK) break;
                df_bitmap_copy(o->validity->data, pos, v->validity->data, v->offset, v->length);
            }
        } else if (o->validity) {
            df_bitmap_fill(o->validity->data, pos, v->length, true);
        }
        if (id == DF_TYPE_BOOL) {
            df_bitmap_copy(o->values->data, pos, v->values->data, v->offset, v->length);
        } else if (id == DF_TYPE_UTF8 || id == DF_TYPE_BINARY) {
            const int32_t *so = df_vec_offsets(v);
            int32_t *oo = (int32_t *)(void *)o->values->data;
            int64_t base = oo[pos], len = so[v->length] - so[0];
            if (base + len > INT32_MAX) {
                k = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "more than 2 GiB of string data in one vector");
                break;
            }
            k = df_vec_reserve_data(o, base + len, err);
            if (k != DF_OK) break;
            memcpy(o->data->data + base, v->data->data + so[0], (size_t)len);
            for (int64_t j = 0; j < v->length; j++) oo[pos + j + 1] = (int32_t)(base + so[j + 1] - so[0]);
        } else if (id != DF_TYPE_NULL && id != DF_TYPE_LIST && id != DF_TYPE_MAP && id != DF_TYPE_STRUCT) {
            int32_t w = df_type_width(o->type);
            memcpy(o->values->data + pos * w, v->values->data + v->offset * w, (size_t)(v->length * w));
        }
        pos += v->length;
    }
    if (k == DF_OK && (id == DF_TYPE_LIST || id == DF_TYPE_MAP || id == DF_TYPE_STRUCT)) {
        /* Nested: concatenate children ranges via take on each input. */
        int32_t nchildren = o->nchildren;
        for (int32_t c = 0; c < nchildren && k == DF_OK; c++) {
            df_vec **parts = df_calloc((size_t)n, sizeof(df_vec *));
            if (!parts) {
                k = DF_OOM(err);
                break;
            }
            int32_t *oo = id == DF_TYPE_STRUCT ? NULL : (int32_t *)(void *)o->values->data;
            int64_t rowpos = 0;
            for (int32_t i = 0; i < n && k == DF_OK; i++) {
                const df_vec *v = vecs[i];
                if (id == DF_TYPE_STRUCT) {
                    k = df_vec_slice(v->children[c], v->offset, v->length, &parts[i], err);
                } else {
                    const int32_t *so = df_vec_offsets(v);
                    k = df_vec_slice(v->children[c], so[0], so[v->length] - so[0], &parts[i], err);
                    if (k == DF_OK) {
                        int64_t base = oo[rowpos];
                        for (int64_t j = 0; j < v->length; j++)
                            oo[rowpos + j + 1] = (int32_t)(base + so[j + 1] - so[0]);
                    }
                }
                rowpos += v->length;
            }
            if (k == DF_OK) {
                df_vec *child;
                k = df_vec_concat(parts, n, &child, err);
                if (k == DF_OK) {
                    df_vec_release(o->children[c]);
                    o->children[c] = child;
                }
            }
            for (int32_t i = 0; i < n; i++) df_vec_release(parts[i]);
            df_free(parts);
        }
    }
    if (k != DF_OK) {
        df_vec_release(o);
        return k;
    }
    df_vec_set_length(o, total);
    *out = o;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Validation                                                                */

static df_errkind fail_invalid(df_error *err, const char *what) {
    return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "invalid vector: %s", what);
}

df_errkind df_vec_validate(const df_vec *v, bool check_utf8, df_error *err) {
    if (v->length < 0 || v->offset < 0) return fail_invalid(err, "negative length or offset");
    int64_t end = v->offset + v->length;
    if (v->validity && v->validity->size < df_bitmap_bytes(end)) return fail_invalid(err, "validity buffer too small");
    if (has_values_buffer(v->type)) {
        if (!v->values) return fail_invalid(err, "missing values buffer");
        if (v->values->size < values_bytes(v->type, end)) return fail_invalid(err, "values buffer too small");
    }
    df_type_id id = v->type->id;
    if (has_offsets(id)) {
        const int32_t *o = df_vec_offsets(v);
        if (o[0] < 0) return fail_invalid(err, "negative offset");
        for (int64_t i = 0; i < v->length; i++)
            if (o[i + 1] < o[i]) return fail_invalid(err, "offsets decrease");
        int64_t limit = (id == DF_TYPE_UTF8 || id == DF_TYPE_BINARY) ? (v->data ? v->data->size : -1)
                                                                      : (v->nchildren ? v->children[0]->length : -1);
        if (o[v->length] > limit) return fail_invalid(err, "offsets beyond data");
        if (check_utf8 && id == DF_TYPE_UTF8 && v->length > 0 &&
            !df_utf8_valid(v->data->data + o[0], (size_t)(o[v->length] - o[0])))
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "invalid vector: string data is not valid UTF-8");
    }
    if (v->nchildren != v->type->nchildren) return fail_invalid(err, "child count differs from type");
    for (int32_t i = 0; i < v->nchildren; i++) {
        if (!df_type_equals(v->children[i]->type, v->type->children[i].type))
            return fail_invalid(err, "child type differs from type");
        if (id == DF_TYPE_STRUCT && v->children[i]->length < end) return fail_invalid(err, "struct child too short");
        DF_TRY(df_vec_validate(v->children[i], check_utf8, err));
    }
    return DF_OK;
}
