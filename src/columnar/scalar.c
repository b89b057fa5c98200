/*
 * Scalars: one typed value, used for literals, partition values and
 * statistics, and broadcast into vectors.
 */
#include "columnar/columnar.h"

static bool scalar_owns_bytes(const df_type *t) {
    return t && (t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY || t->id == DF_TYPE_FIXED_BINARY);
}

void df_scalar_clear(df_scalar *s) {
    if (!s) return;
    if (scalar_owns_bytes(s->type) && !s->is_null) df_free(s->v.bytes.ptr);
    df_type_release(s->type);
    memset(s, 0, sizeof *s);
}

df_errkind df_scalar_copy(df_scalar *dst, const df_scalar *src, df_error *err) {
    *dst = *src;
    dst->type = df_type_retain(src->type);
    if (scalar_owns_bytes(src->type) && !src->is_null) {
        dst->v.bytes.ptr = df_malloc((size_t)src->v.bytes.len + 1);
        if (!dst->v.bytes.ptr) {
            df_type_release(dst->type);
            memset(dst, 0, sizeof *dst);
            return DF_OOM(err);
        }
        if (src->v.bytes.len) memcpy(dst->v.bytes.ptr, src->v.bytes.ptr, (size_t)src->v.bytes.len);
        dst->v.bytes.ptr[src->v.bytes.len] = '\0';
    }
    return DF_OK;
}

df_errkind df_scalar_from_vec(df_scalar *dst, const df_vec *v, int64_t i, df_error *err) {
    memset(dst, 0, sizeof *dst);
    if (i < 0 || i >= v->length) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "scalar index out of range");
    if (df_type_is_nested(v->type))
        return df_error_set(err, DF_ERR_UNSUPPORTED, "nested values cannot be read as scalars");
    dst->type = df_type_retain(v->type);
    if (v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, i)) {
        dst->is_null = true;
        return DF_OK;
    }
    const uint8_t *p = v->values ? v->values->data : NULL;
    int64_t at = v->offset + i;
    switch (v->type->id) {
    case DF_TYPE_BOOL: dst->v.b = df_vec_bool(v, i); break;
    case DF_TYPE_INT8: dst->v.i64 = ((const int8_t *)p)[at]; break;
    case DF_TYPE_INT16: dst->v.i64 = ((const int16_t *)(const void *)p)[at]; break;
    case DF_TYPE_INT32:
    case DF_TYPE_DATE32:
    case DF_TYPE_TIME32: dst->v.i64 = ((const int32_t *)(const void *)p)[at]; break;
    case DF_TYPE_INT64:
    case DF_TYPE_DATE64:
    case DF_TYPE_TIME64:
    case DF_TYPE_TIMESTAMP:
    case DF_TYPE_DURATION: dst->v.i64 = ((const int64_t *)(const void *)p)[at]; break;
    case DF_TYPE_UINT8: dst->v.u64 = p[at]; break;
    case DF_TYPE_UINT16:
    case DF_TYPE_FLOAT16: dst->v.u64 = ((const uint16_t *)(const void *)p)[at]; break;
    case DF_TYPE_UINT32: dst->v.u64 = ((const uint32_t *)(const void *)p)[at]; break;
    case DF_TYPE_UINT64: dst->v.u64 = ((const uint64_t *)(const void *)p)[at]; break;
    case DF_TYPE_FLOAT32: dst->v.f64 = ((const float *)(const void *)p)[at]; break;
    case DF_TYPE_FLOAT64: dst->v.f64 = ((const double *)(const void *)p)[at]; break;
    case DF_TYPE_DECIMAL128: memcpy(&dst->v.i128, p + at * 16, 16); break;
    case DF_TYPE_DECIMAL256: memcpy(dst->v.d256, p + at * 32, 32); break;
    case DF_TYPE_INTERVAL_MDN:
        memcpy(&dst->v.interval.months, p + at * 16, 4);
        memcpy(&dst->v.interval.days, p + at * 16 + 4, 4);
        memcpy(&dst->v.interval.nanos, p + at * 16 + 8, 8);
        break;
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY:
    case DF_TYPE_FIXED_BINARY: {
        const uint8_t *src;
        int32_t len;
        if (v->type->id == DF_TYPE_FIXED_BINARY) {
            len = v->type->byte_width;
            src = p + at * len;
        } else {
            src = df_vec_bytes(v, i, &len);
        }
        dst->v.bytes.ptr = df_malloc((size_t)len + 1);
        if (!dst->v.bytes.ptr) {
            df_scalar_clear(dst);
            return DF_OOM(err);
        }
        if (len) memcpy(dst->v.bytes.ptr, src, (size_t)len);
        dst->v.bytes.ptr[len] = '\0';
        dst->v.bytes.len = len;
        break;
    }
    default:
        df_scalar_clear(dst);
        return df_error_set(err, DF_ERR_UNSUPPORTED, "scalar of this type is not supported");
    }
    return DF_OK;
}

/* Writes the scalar's fixed-width value into dst (width bytes). */
static void store_fixed(const df_scalar *s, uint8_t *dst, int32_t w) {
    switch (s->type->id) {
    case DF_TYPE_INT8: { int8_t x = (int8_t)s->v.i64; memcpy(dst, &x, 1); break; }
    case DF_TYPE_INT16: { int16_t x = (int16_t)s->v.i64; memcpy(dst, &x, 2); break; }
    case DF_TYPE_INT32:
    case DF_TYPE_DATE32:
    case DF_TYPE_TIME32: { int32_t x = (int32_t)s->v.i64; memcpy(dst, &x, 4); break; }
    case DF_TYPE_UINT8: { uint8_t x = (uint8_t)s->v.u64; memcpy(dst, &x, 1); break; }
    case DF_TYPE_UINT16:
    case DF_TYPE_FLOAT16: { uint16_t x = (uint16_t)s->v.u64; memcpy(dst, &x, 2); break; }
    case DF_TYPE_UINT32: { uint32_t x = (uint32_t)s->v.u64; memcpy(dst, &x, 4); break; }
    case DF_TYPE_UINT64: memcpy(dst, &s->v.u64, 8); break;
    case DF_TYPE_FLOAT32: { float x = (float)s->v.f64; memcpy(dst, &x, 4); break; }
    case DF_TYPE_FLOAT64: memcpy(dst, &s->v.f64, 8); break;
    case DF_TYPE_DECIMAL128: memcpy(dst, &s->v.i128, 16); break;
    case DF_TYPE_DECIMAL256: memcpy(dst, s->v.d256, 32); break;
    case DF_TYPE_INTERVAL_MDN:
        memcpy(dst, &s->v.interval.months, 4);
        memcpy(dst + 4, &s->v.interval.days, 4);
        memcpy(dst + 8, &s->v.interval.nanos, 8);
        break;
    case DF_TYPE_FIXED_BINARY: memcpy(dst, s->v.bytes.ptr, (size_t)DF_MIN(w, s->v.bytes.len)); break;
    default: memcpy(dst, &s->v.i64, 8); break; /* int64, date64, time64, timestamp, duration */
    }
}

df_errkind df_vec_from_scalar(const df_scalar *s, int64_t length, df_vec **out, df_error *err) {
    *out = NULL;
    if (!s->type) return df_error_set(err, DF_ERR_INTERNAL, "scalar without type");
    if (s->is_null) return df_vec_new_nulls(s->type, length, out, err);
    if (df_type_is_nested(s->type))
        return df_error_set(err, DF_ERR_UNSUPPORTED, "nested scalars cannot be broadcast");
    df_vec *v;
    int64_t data_bytes = df_type_is_varlen(s->type) ? s->v.bytes.len * length : 0;
    if (data_bytes > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "broadcast string data too large");
    DF_TRY(df_vec_new(s->type, length, data_bytes, &v, err));
    switch (s->type->id) {
    case DF_TYPE_NULL:
        break;
    case DF_TYPE_BOOL:
        df_bitmap_fill(v->values->data, 0, length, s->v.b);
        break;
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t *o = (int32_t *)(void *)v->values->data;
        int32_t len = (int32_t)s->v.bytes.len;
        for (int64_t i = 0; i < length; i++) {
            memcpy(v->data->data + i * len, s->v.bytes.ptr, (size_t)len);
            o[i + 1] = (int32_t)((i + 1) * len);
        }
        break;
    }
    case DF_TYPE_FIXED_BINARY: {
        int32_t w = s->type->byte_width;
        int32_t have = (int32_t)DF_MIN((int64_t)w, s->v.bytes.len);
        for (int64_t i = 0; i < length; i++) {
            memcpy(v->values->data + i * w, s->v.bytes.ptr, (size_t)have);
            memset(v->values->data + i * w + have, 0, (size_t)(w - have));
        }
        break;
    }
    default: {
        int32_t w = df_type_width(s->type);
        uint8_t one[32] = {0};
        store_fixed(s, one, w);
        for (int64_t i = 0; i < length; i++) memcpy(v->values->data + i * w, one, (size_t)w);
    }
    }
    df_vec_set_length(v, length);
    *out = v;
    return DF_OK;
}

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int cmp_d256(const uint8_t *a, const uint8_t *b) {
    /* Two's complement, little-endian: compare the sign first, then bytes from the top. */
    bool na = a[31] & 0x80, nb = b[31] & 0x80;
    if (na != nb) return na ? -1 : 1;
    for (int i = 31; i >= 0; i--)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static double half_to_double(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    double v;
    if (exp == 0)
        v = frac * (1.0 / 16777216.0); /* subnormal: frac * 2^-24 */
    else if (exp == 31)
        v = frac ? __builtin_nan("") : __builtin_inf();
    else
        v = (1.0 + frac / 1024.0) * (double)(1 << exp) / 32768.0; /* 2^(exp-15) */
    return sign ? -v : v;
}

int df_scalar_compare(const df_scalar *a, const df_scalar *b, bool *comparable) {
    *comparable = false;
    if (!a->type || !b->type || a->is_null || b->is_null || !df_type_equals(a->type, b->type)) return 0;
    int r;
    switch (a->type->id) {
    case DF_TYPE_BOOL: r = (int)a->v.b - (int)b->v.b; break;
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
    case DF_TYPE_DATE32: case DF_TYPE_DATE64: case DF_TYPE_TIME32: case DF_TYPE_TIME64:
    case DF_TYPE_TIMESTAMP: case DF_TYPE_DURATION:
        r = cmp_i64(a->v.i64, b->v.i64);
        break;
    case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32: case DF_TYPE_UINT64:
        r = (a->v.u64 > b->v.u64) - (a->v.u64 < b->v.u64);
        break;
    case DF_TYPE_FLOAT16:
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64: {
        double x = a->type->id == DF_TYPE_FLOAT16 ? half_to_double((uint16_t)a->v.u64) : a->v.f64;
        double y = a->type->id == DF_TYPE_FLOAT16 ? half_to_double((uint16_t)b->v.u64) : b->v.f64;
        if (x != x || y != y) return 0;
        r = (x > y) - (x < y);
        break;
    }
    case DF_TYPE_DECIMAL128: r = (a->v.i128 > b->v.i128) - (a->v.i128 < b->v.i128); break;
    case DF_TYPE_DECIMAL256: r = cmp_d256(a->v.d256, b->v.d256); break;
    case DF_TYPE_UTF8: case DF_TYPE_BINARY: case DF_TYPE_FIXED_BINARY: {
        int64_t n = DF_MIN(a->v.bytes.len, b->v.bytes.len);
        r = n ? memcmp(a->v.bytes.ptr, b->v.bytes.ptr, (size_t)n) : 0;
        if (r == 0) r = cmp_i64(a->v.bytes.len, b->v.bytes.len);
        r = (r > 0) - (r < 0);
        break;
    }
    default:
        return 0;
    }
    *comparable = true;
    return r;
}
