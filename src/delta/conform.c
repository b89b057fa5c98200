/*
 * Conforming file data to the table schema.
 *
 * A data file was written under the schema of its commit; the snapshot may
 * have a newer one.  Column mapping renames fields (files hold physical
 * names), type widening changes types (int8 -> int16 -> int32 -> int64,
 * float -> double, integers -> double or decimal, decimal precision/scale
 * increases, date -> timestamp_ntz), and columns added later are absent
 * from old files.  Writers also differ in details: INT96 or millisecond
 * timestamps, strings without the UTF8 annotation.
 *
 * df__delta_conform walks the table column tree and the vector together:
 * nested vectors are rebuilt as views that share the file vector's buffers
 * under the table's type (renamed struct fields, missing fields as nulls),
 * and leaves whose type differs are cast into new buffers with one tight
 * loop per conversion.  Anything else is an error, never a silent
 * reinterpretation.
 */
#include "delta/delta_int.h"

static df_errkind incompatible(const df_type *from, const df__delta_column *col, df_error *err) {
    df_buf a, b;
    df_buf_init(&a, 256);
    df_buf_init(&b, 256);
    df_type_display(from, &a, NULL);
    df_type_display(col->type, &b, NULL);
    df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA, "data file column `%s` has type %s, which cannot be read as %s",
                 col->name, a.data ? a.data : "?", b.data ? b.data : "?");
    df_buf_free(&a);
    df_buf_free(&b);
    return DF_ERR_DELTA_SOURCE_SCHEMA;
}

/*
 * A new vector of type `t` sharing v's buffers, offset and length, with the
 * given children (references taken over, also on failure).
 */
static df_errkind view(const df_vec *v, df_type *t, df_vec **children, int32_t nchildren, df_vec **out, df_error *err) {
    *out = NULL;
    df_vec *o = df_calloc(1, sizeof *o);
    df_vec **ch = nchildren ? df_calloc((size_t)nchildren, sizeof *ch) : NULL;
    if (!o || (nchildren && !ch)) {
        df_free(o);
        df_free(ch);
        for (int32_t i = 0; i < nchildren; i++) df_vec_release(children[i]);
        return DF_OOM(err);
    }
    atomic_init(&o->refs, 1);
    o->type = df_type_retain(t);
    o->length = v->length;
    o->null_count = v->null_count;
    o->offset = v->offset;
    o->validity = v->validity ? df_buffer_retain(v->validity) : NULL;
    o->values = v->values ? df_buffer_retain(v->values) : NULL;
    o->data = v->data ? df_buffer_retain(v->data) : NULL;
    o->nchildren = nchildren;
    o->children = ch;
    for (int32_t i = 0; i < nchildren; i++) ch[i] = children[i];
    *out = o;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Leaf casts                                                                */

static bool is_int(df_type_id id) {
    return id == DF_TYPE_INT8 || id == DF_TYPE_INT16 || id == DF_TYPE_INT32 || id == DF_TYPE_INT64;
}

/* Source integers as int64 (one pass, vectorisable per source width). */
static void load_ints(const df_vec *v, int64_t *dst) {
    int64_t n = v->length;
    switch (v->type->id) {
    case DF_TYPE_INT8: { const int8_t *s = DF_VEC_VALUES(v, int8_t); for (int64_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case DF_TYPE_INT16: { const int16_t *s = DF_VEC_VALUES(v, int16_t); for (int64_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case DF_TYPE_INT32:
    case DF_TYPE_DATE32: { const int32_t *s = DF_VEC_VALUES(v, int32_t); for (int64_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    default: { const int64_t *s = DF_VEC_VALUES(v, int64_t); for (int64_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    }
}

static int64_t unit_per_second(df_time_unit u) {
    return u == DF_UNIT_SECOND ? 1 : u == DF_UNIT_MILLI ? 1000 : u == DF_UNIT_MICRO ? 1000000 : 1000000000;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Checks that valid values lie in [lo, hi]. */
static bool ints_in_range(const df_vec *v, const int64_t *x, int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < v->length; i++)
        if ((x[i] < lo || x[i] > hi) && df_vec_is_valid(v, i)) return false;
    return true;
}

/* Writes int64 values into an integer, timestamp or date vector of the target width. */
static void store_ints(df_vec *o, const int64_t *x, int64_t n) {
    switch (df_type_width(o->type)) {
    case 1: { int8_t *d = DF_VEC_VALUES(o, int8_t); for (int64_t i = 0; i < n; i++) d[i] = (int8_t)x[i]; break; }
    case 2: { int16_t *d = DF_VEC_VALUES(o, int16_t); for (int64_t i = 0; i < n; i++) d[i] = (int16_t)x[i]; break; }
    case 4: { int32_t *d = DF_VEC_VALUES(o, int32_t); for (int64_t i = 0; i < n; i++) d[i] = (int32_t)x[i]; break; }
    default: memcpy(DF_VEC_VALUES(o, int64_t), x, (size_t)n * sizeof(int64_t)); break;
    }
}

static df_i128 pow10_i128(int n) {
    df_i128 p = 1;
    for (int i = 0; i < n; i++) p *= 10;
    return p;
}

/* Decimal rescale (scale up only) with a precision check; src is int64 values or decimal128. */
static bool store_decimal(df_vec *o, const df_vec *v, const int64_t *ints, int from_scale) {
    const df_type *t = o->type;
    df_i128 mul = pow10_i128(t->scale - from_scale), limit = pow10_i128(t->precision);
    df_i128 *d = DF_VEC_VALUES(o, df_i128);
    const df_i128 *src = ints ? NULL : DF_VEC_VALUES(v, df_i128);
    for (int64_t i = 0; i < v->length; i++) {
        df_i128 x = ints ? (df_i128)ints[i] : src[i];
        df_i128 y = x * mul;
        if ((y >= limit || y <= -limit) && df_vec_is_valid(v, i)) return false;
        d[i] = y;
    }
    return true;
}

/* Copies the validity bits of v (offset applied) into o (offset 0). */
static df_errkind copy_validity(df_vec *o, const df_vec *v, df_error *err) {
    if (!v->validity) return DF_OK;
    o->validity = df_buffer_new(df_bitmap_bytes(v->length));
    if (!o->validity) return DF_OOM(err);
    df_bitmap_copy(o->validity->data, 0, v->validity->data, v->offset, v->length);
    o->validity->size = df_bitmap_bytes(v->length);
    return DF_OK;
}

/* Numeric and temporal casts into a new vector of the column's type. */
static df_errkind cast_fixed(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    df_type *t = col->type;
    df_type_id from = v->type->id, to = t->id;
    int64_t n = v->length;
    int64_t *tmp = NULL;
    df_vec *o = NULL;
    df_errkind k = df_vec_new(t, n, 0, &o, err);
    if (k == DF_OK) k = copy_validity(o, v, err);
    if (k != DF_OK) {
        df_vec_release(o);
        return k;
    }
    bool ok = true;
    if ((is_int(from) || from == DF_TYPE_DATE32 || from == DF_TYPE_TIMESTAMP) && to != DF_TYPE_FLOAT64) {
        tmp = df_malloc((size_t)(n ? n : 1) * sizeof *tmp);
        if (!tmp) {
            df_vec_release(o);
            return DF_OOM(err);
        }
        load_ints(v, tmp);
    }
    if (is_int(from) && is_int(to)) {
        int w = df_type_width(t);
        int64_t hi = w == 8 ? INT64_MAX : (int64_t)((1ULL << (8 * w - 1)) - 1), lo = -hi - 1;
        ok = ints_in_range(v, tmp, lo, hi);
        if (ok) store_ints(o, tmp, n);
    } else if (is_int(from) && to == DF_TYPE_DECIMAL128) {
        ok = store_decimal(o, v, tmp, 0);
    } else if (from == DF_TYPE_DECIMAL128 && to == DF_TYPE_DECIMAL128) {
        ok = t->scale >= v->type->scale && store_decimal(o, v, NULL, v->type->scale);
    } else if (to == DF_TYPE_FLOAT64 && (from == DF_TYPE_FLOAT32 || is_int(from))) {
        double *d = DF_VEC_VALUES(o, double);
        if (from == DF_TYPE_FLOAT32) {
            const float *s = DF_VEC_VALUES(v, float);
            for (int64_t i = 0; i < n; i++) d[i] = s[i];
        } else {
            int64_t *x = df_malloc((size_t)(n ? n : 1) * sizeof *x);
            if (!x) ok = false, k = DF_OOM(err);
            else {
                load_ints(v, x);
                for (int64_t i = 0; i < n; i++) d[i] = (double)x[i];
                df_free(x);
            }
        }
    } else if (from == DF_TYPE_DATE32 && to == DF_TYPE_TIMESTAMP) {
        int64_t per_day = 86400 * unit_per_second(t->unit);
        for (int64_t i = 0; i < n; i++) tmp[i] *= per_day;
        store_ints(o, tmp, n);
    } else if (from == DF_TYPE_TIMESTAMP && to == DF_TYPE_TIMESTAMP) {
        int64_t fu = unit_per_second(v->type->unit), tu = unit_per_second(t->unit);
        if (tu >= fu) {
            int64_t m = tu / fu, lim = INT64_MAX / m;
            ok = ints_in_range(v, tmp, -lim, lim);
            for (int64_t i = 0; ok && i < n; i++) tmp[i] *= m;
        } else {
            for (int64_t i = 0; i < n; i++) tmp[i] = floor_div(tmp[i], fu / tu);
        }
        if (ok) store_ints(o, tmp, n);
    } else {
        ok = false;
        k = DF_ERR_DELTA_SOURCE_SCHEMA;
    }
    df_free(tmp);
    if (!ok || k != DF_OK) {
        df_vec_release(o);
        if (k == DF_ERR_OUT_OF_MEMORY) return k;
        if (k == DF_ERR_DELTA_SOURCE_SCHEMA) return incompatible(v->type, col, err);
        return df_error_set(err, DF_ERR_CAST, "a value of data file column `%s` does not fit the table type",
                            col->name);
    }
    df_vec_set_length(o, n);
    *out = o;
    return DF_OK;
}

static df_errkind cast_leaf(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    df_type_id from = v->type->id, to = col->type->id;
    if (from == DF_TYPE_NULL) {
        /* An all-null column of unknown type: nulls over the same index space. */
        df_vec *nulls;
        DF_TRY(df_vec_new_nulls(col->type, v->offset + v->length, &nulls, err));
        if (!v->offset) {
            *out = nulls;
            return DF_OK;
        }
        df_errkind k = df_vec_slice(nulls, v->offset, v->length, out, err);
        df_vec_release(nulls);
        return k;
    }
    if ((from == DF_TYPE_BINARY && to == DF_TYPE_UTF8) || (from == DF_TYPE_UTF8 && to == DF_TYPE_BINARY)) {
        if (to == DF_TYPE_UTF8 && v->length > 0) {
            const int32_t *o = df_vec_offsets(v);
            if (!df_utf8_valid(v->data->data + o[0], (size_t)(o[v->length] - o[0])))
                return df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA,
                                    "data file column `%s` holds bytes that are not UTF-8", col->name);
        }
        return view(v, col->type, NULL, 0, out, err);
    }
    return cast_fixed(v, col, out, err);
}

/* ------------------------------------------------------------------------ */
/* Nested types                                                              */

/* Index of the file struct field matching a table column, or -1. */
static int32_t find_field(const df_type *st, const df__delta_column *c) {
    for (int32_t i = 0; i < st->nchildren; i++)
        if (strcmp(st->children[i].name, c->physical) == 0) return i;
    for (int32_t i = 0; i < st->nchildren; i++)
        if (strcmp(st->children[i].name, c->name) == 0) return i;
    for (int32_t i = 0; i < st->nchildren; i++)
        if (df_ascii_casecmp(st->children[i].name, c->physical) == 0) return i;
    return -1;
}

static df_errkind conform_struct(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    int32_t n = col->nchildren;
    df_vec **ch = df_calloc((size_t)(n ? n : 1), sizeof *ch);
    if (!ch) return DF_OOM(err);
    df_errkind k = DF_OK;
    /* Children are indexed like the parent (parent offset + i), so they span offset + length. */
    int64_t span = v->offset + v->length;
    for (int32_t i = 0; i < n && k == DF_OK; i++) {
        int32_t f = find_field(v->type, &col->children[i]);
        if (f < 0) k = df_vec_new_nulls(col->children[i].type, span, &ch[i], err);
        else k = df__delta_conform(v->children[f], &col->children[i], &ch[i], err);
    }
    if (k != DF_OK) {
        for (int32_t i = 0; i < n; i++) df_vec_release(ch[i]);
        df_free(ch);
        return k;
    }
    k = view(v, col->type, ch, n, out, err);
    df_free(ch);
    return k;
}

static df_errkind conform_list(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    if (v->nchildren != 1) return incompatible(v->type, col, err);
    df_vec *elem;
    DF_TRY(df__delta_conform(v->children[0], &col->children[0], &elem, err));
    return view(v, col->type, &elem, 1, out, err);
}

static df_errkind conform_map(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    df_vec *entries = v->nchildren == 1 ? v->children[0] : NULL;
    if (!entries || entries->nchildren != 2) return incompatible(v->type, col, err);
    df_vec *kv[2] = {NULL, NULL};
    df_errkind k = df__delta_conform(entries->children[0], &col->children[0], &kv[0], err);
    if (k == DF_OK) k = df__delta_conform(entries->children[1], &col->children[1], &kv[1], err);
    if (k != DF_OK) {
        df_vec_release(kv[0]);
        df_vec_release(kv[1]);
        return k;
    }
    df_vec *e;
    DF_TRY(view(entries, col->type->children[0].type, kv, 2, &e, err));
    return view(v, col->type, &e, 1, out, err);
}

df_errkind df__delta_conform(df_vec *v, const df__delta_column *col, df_vec **out, df_error *err) {
    *out = NULL;
    if (df_type_equals(v->type, col->type)) {
        *out = df_vec_retain(v);
        return DF_OK;
    }
    switch (col->type->id) {
    case DF_TYPE_STRUCT:
        if (v->type->id != DF_TYPE_STRUCT) break;
        return conform_struct(v, col, out, err);
    case DF_TYPE_LIST:
        if (v->type->id != DF_TYPE_LIST) break;
        return conform_list(v, col, out, err);
    case DF_TYPE_MAP:
        if (v->type->id != DF_TYPE_MAP) break;
        return conform_map(v, col, out, err);
    default:
        if (df_type_is_nested(v->type)) break;
        return cast_leaf(v, col, out, err);
    }
    if (v->type->id == DF_TYPE_NULL) return cast_leaf(v, col, out, err);
    return incompatible(v->type, col, err);
}

bool df__delta_conform_possible(const df_type *file, const df__delta_column *col) {
    const df_type *t = col->type;
    if (df_type_equals(file, t) || file->id == DF_TYPE_NULL) return true;
    if (df_type_is_nested(t) || df_type_is_nested(file)) return file->id == t->id;
    df_type_id f = file->id, to = t->id;
    if (is_int(f)) return is_int(to) || to == DF_TYPE_DECIMAL128 || to == DF_TYPE_FLOAT64;
    if (f == DF_TYPE_FLOAT32) return to == DF_TYPE_FLOAT64;
    if (f == DF_TYPE_DECIMAL128) return to == DF_TYPE_DECIMAL128 && t->scale >= file->scale;
    if (f == DF_TYPE_DATE32) return to == DF_TYPE_TIMESTAMP;
    if (f == DF_TYPE_TIMESTAMP) return to == DF_TYPE_TIMESTAMP;
    if (f == DF_TYPE_BINARY || f == DF_TYPE_UTF8) return to == DF_TYPE_BINARY || to == DF_TYPE_UTF8;
    return false;
}
