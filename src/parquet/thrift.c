/*
 * Thrift compact protocol decoder and encoder (see thrift.h for the wire
 * format and the error-latching convention).
 */
#include "parquet/thrift.h"

#include <stdarg.h>
#include <stdio.h>

void df__parquet_tdec_init(pq_tdec *d, const void *data, size_t len, const char *what, df_error *err) {
    d->start = d->p = data;
    d->end = d->p + len;
    d->depth = 0;
    d->kind = DF_OK;
    d->truncated = false;
    d->err = err;
    d->what = what;
}

/* Fails because the data ends too early (a caller reading a window may retry with more). */
static bool fail_short(pq_tdec *d, const char *what) {
    if (d->kind == DF_OK) d->truncated = true;
    return df__parquet_tdec_fail(d, "%s", what);
}

bool df__parquet_tdec_fail(pq_tdec *d, const char *fmt, ...) {
    if (d->kind != DF_OK) return false;
    d->kind = DF_ERR_PARQUET_FORMAT;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    df_error_set(d->err, DF_ERR_PARQUET_FORMAT, "invalid %s: %s at byte %zu", d->what, msg, df__parquet_tdec_pos(d));
    df_error_set_offset(d->err, (int64_t)df__parquet_tdec_pos(d));
    d->p = d->end;   /* stop every further read */
    return false;
}

/* Unsigned LEB128 varint of at most 10 bytes. */
static uint64_t read_varint(pq_tdec *d) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (d->p >= d->end) {
            fail_short(d, "truncated varint");
            return 0;
        }
        uint8_t b = *d->p++;
        if (shift == 63 && (b & 0x7e)) break;   /* bits beyond 64 */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    df__parquet_tdec_fail(d, "varint longer than 64 bits");
    return 0;
}

static int64_t read_zigzag(pq_tdec *d) {
    uint64_t u = read_varint(d);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static uint8_t read_byte(pq_tdec *d) {
    if (d->p >= d->end) {
        fail_short(d, "truncated data");
        return 0;
    }
    return *d->p++;
}

bool df__parquet_tdec_struct_begin(pq_tdec *d) {
    if (d->kind != DF_OK) return false;
    if (d->depth >= TDEC_MAX_DEPTH) return df__parquet_tdec_fail(d, "nesting deeper than %d", TDEC_MAX_DEPTH);
    d->depth++;
    return true;
}

void df__parquet_tdec_struct_end(pq_tdec *d) {
    if (d->depth > 0) d->depth--;
}

int df__parquet_tdec_field(pq_tdec *d, int16_t *last_id, int *type) {
    if (d->kind != DF_OK) return -1;
    uint8_t b = read_byte(d);
    if (d->kind != DF_OK) return -1;
    int t = b & 0x0f;
    if (t == TC_STOP) return -1;
    int delta = b >> 4;
    int64_t id;
    if (delta) {
        id = *last_id + delta;
    } else {
        id = read_zigzag(d);
        if (d->kind != DF_OK) return -1;
    }
    if (id < 0 || id > INT16_MAX) {
        df__parquet_tdec_fail(d, "field id %lld out of range", (long long)id);
        return -1;
    }
    if (t > TC_STRUCT) {
        df__parquet_tdec_fail(d, "unknown field type %d", t);
        return -1;
    }
    *last_id = (int16_t)id;
    *type = t;
    return (int)id;
}

bool df__parquet_tdec_int(pq_tdec *d, int type, int64_t *out) {
    *out = 0;
    switch (type) {
    case TC_BYTE: *out = (int8_t)read_byte(d); break;
    case TC_I16:
    case TC_I32:
    case TC_I64: *out = read_zigzag(d); break;
    default: df__parquet_tdec_skip(d, type); return false;
    }
    if (d->kind != DF_OK) return false;
    if (type == TC_I16 && (*out < INT16_MIN || *out > INT16_MAX)) return df__parquet_tdec_fail(d, "i16 out of range");
    if (type == TC_I32 && (*out < INT32_MIN || *out > INT32_MAX)) return df__parquet_tdec_fail(d, "i32 out of range");
    return true;
}

bool df__parquet_tdec_i32(pq_tdec *d, int type, int32_t *out) {
    int64_t v;
    *out = 0;
    if (!df__parquet_tdec_int(d, type, &v)) return false;
    if (v < INT32_MIN || v > INT32_MAX) return df__parquet_tdec_fail(d, "integer out of i32 range");
    *out = (int32_t)v;
    return true;
}

bool df__parquet_tdec_bool(pq_tdec *d, int type, bool *out) {
    *out = false;
    if (type == TC_TRUE || type == TC_FALSE) {
        *out = type == TC_TRUE;
        return true;
    }
    df__parquet_tdec_skip(d, type);
    return false;
}

/* A bool stored as a list element: one byte. */
static bool read_elem_bool(pq_tdec *d) {
    return read_byte(d) == 1;
}

bool df__parquet_tdec_binary(pq_tdec *d, int type, pq_bytes *out) {
    out->ptr = NULL;
    out->len = 0;
    if (type != TC_BINARY) {
        df__parquet_tdec_skip(d, type);
        return false;
    }
    uint64_t n = read_varint(d);
    if (d->kind != DF_OK) return false;
    if (n > (uint64_t)(d->end - d->p)) {
        if (d->kind == DF_OK) d->truncated = true;
        return df__parquet_tdec_fail(d, "binary length %llu exceeds the %zu bytes left", (unsigned long long)n,
                                     (size_t)(d->end - d->p));
    }
    if (n > UINT32_MAX) return df__parquet_tdec_fail(d, "binary too long");
    out->ptr = d->p;
    out->len = (uint32_t)n;
    d->p += n;
    return true;
}

bool df__parquet_tdec_double(pq_tdec *d, int type, double *out) {
    *out = 0;
    if (type != TC_DOUBLE) {
        df__parquet_tdec_skip(d, type);
        return false;
    }
    if (d->end - d->p < 8) return fail_short(d, "truncated double");
    uint64_t u = df_load_le64(d->p);
    memcpy(out, &u, 8);
    d->p += 8;
    return true;
}

/* Reads a list/set header without a field type check. */
static bool read_list_header(pq_tdec *d, int *elem_type, uint32_t *count) {
    uint8_t b = read_byte(d);
    if (d->kind != DF_OK) return false;
    uint64_t n = b >> 4;
    if (n == 15) n = read_varint(d);
    int et = b & 0x0f;
    if (et == TC_FALSE) et = TC_TRUE;   /* codes 1 and 2 both denote bool elements */
    *elem_type = et;
    if (d->kind != DF_OK) return false;
    /* Every element takes at least one byte (compact lists store bools as bytes). */
    if (n > (uint64_t)(d->end - d->p)) {
        if (d->kind == DF_OK) d->truncated = true;
        return df__parquet_tdec_fail(d, "list of %llu elements exceeds the bytes left", (unsigned long long)n);
    }
    if ((et == TC_STOP || et > TC_STRUCT) && n > 0)
        return df__parquet_tdec_fail(d, "list has invalid element type %d", et);
    *count = (uint32_t)n;
    return true;
}

bool df__parquet_tdec_list(pq_tdec *d, int type, int *elem_type, uint32_t *count) {
    *count = 0;
    *elem_type = TC_STOP;
    if (type != TC_LIST && type != TC_SET) {
        df__parquet_tdec_skip(d, type);
        return false;
    }
    return read_list_header(d, elem_type, count);
}

/* Skips one list element of type t (bools are one byte). */
static void skip_elem(pq_tdec *d, int t) {
    if (t == TC_TRUE || t == TC_FALSE) (void)read_elem_bool(d);
    else df__parquet_tdec_skip(d, t);
}

void df__parquet_tdec_skip(pq_tdec *d, int type) {
    if (d->kind != DF_OK) return;
    switch (type) {
    case TC_TRUE:
    case TC_FALSE: return;
    case TC_BYTE: (void)read_byte(d); return;
    case TC_I16:
    case TC_I32:
    case TC_I64: (void)read_varint(d); return;
    case TC_DOUBLE:
        if (d->end - d->p < 8) fail_short(d, "truncated double");
        else d->p += 8;
        return;
    case TC_BINARY: {
        pq_bytes b;
        (void)df__parquet_tdec_binary(d, TC_BINARY, &b);
        return;
    }
    case TC_LIST:
    case TC_SET: {
        int et = 0;
        uint32_t n = 0;
        if (!read_list_header(d, &et, &n)) return;
        if (d->depth >= TDEC_MAX_DEPTH) {
            df__parquet_tdec_fail(d, "nesting deeper than %d", TDEC_MAX_DEPTH);
            return;
        }
        d->depth++;
        for (uint32_t i = 0; i < n && d->kind == DF_OK; i++) skip_elem(d, et);
        d->depth--;
        return;
    }
    case TC_MAP: {
        uint64_t n = read_varint(d);
        if (d->kind != DF_OK || n == 0) return;
        uint8_t kv = read_byte(d);
        if (n > (uint64_t)(d->end - d->p)) {
            df__parquet_tdec_fail(d, "map of %llu entries exceeds the bytes left", (unsigned long long)n);
            return;
        }
        if (d->depth >= TDEC_MAX_DEPTH) {
            df__parquet_tdec_fail(d, "nesting deeper than %d", TDEC_MAX_DEPTH);
            return;
        }
        d->depth++;
        for (uint64_t i = 0; i < n && d->kind == DF_OK; i++) {
            skip_elem(d, kv >> 4);
            skip_elem(d, kv & 0x0f);
        }
        d->depth--;
        return;
    }
    case TC_STRUCT: {
        if (!df__parquet_tdec_struct_begin(d)) return;
        int16_t last = 0;
        int t;
        while (df__parquet_tdec_field(d, &last, &t) >= 0) df__parquet_tdec_skip(d, t);
        df__parquet_tdec_struct_end(d);
        return;
    }
    default: df__parquet_tdec_fail(d, "cannot skip unknown type %d", type); return;
    }
}

/* ------------------------------------------------------------------------ */
/* Encoder                                                                   */

void df__parquet_tenc_init(pq_tenc *e, df_buf *out, df_error *err) {
    e->out = out;
    e->depth = 0;
    e->last[0] = 0;
    e->kind = DF_OK;
    e->err = err;
}

static void put(pq_tenc *e, const void *p, size_t n) {
    if (e->kind == DF_OK) e->kind = df_buf_append(e->out, p, n, e->err);
}

static void put_byte(pq_tenc *e, uint8_t b) {
    put(e, &b, 1);
}

static void put_varint(pq_tenc *e, uint64_t v) {
    uint8_t tmp[10];
    int n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    put(e, tmp, (size_t)n);
}

static void put_zigzag(pq_tenc *e, int64_t v) {
    put_varint(e, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void df__parquet_tenc_struct_begin(pq_tenc *e) {
    if (e->depth + 1 >= TDEC_MAX_DEPTH) {
        if (e->kind == DF_OK) e->kind = df_error_set(e->err, DF_ERR_INTERNAL, "thrift encoder nesting too deep");
        return;
    }
    e->last[++e->depth] = 0;
}

void df__parquet_tenc_struct_end(pq_tenc *e) {
    put_byte(e, TC_STOP);
    if (e->depth > 0) e->depth--;
}

void df__parquet_tenc_field(pq_tenc *e, int16_t id, int type) {
    int16_t last = e->last[e->depth];
    if (id > last && id - last <= 15) {
        put_byte(e, (uint8_t)(((id - last) << 4) | type));
    } else {
        put_byte(e, (uint8_t)type);
        put_zigzag(e, id);
    }
    e->last[e->depth] = id;
}

void df__parquet_tenc_i32(pq_tenc *e, int16_t id, int32_t v) {
    df__parquet_tenc_field(e, id, TC_I32);
    put_zigzag(e, v);
}

void df__parquet_tenc_i64(pq_tenc *e, int16_t id, int64_t v) {
    df__parquet_tenc_field(e, id, TC_I64);
    put_zigzag(e, v);
}

void df__parquet_tenc_bool(pq_tenc *e, int16_t id, bool v) {
    df__parquet_tenc_field(e, id, v ? TC_TRUE : TC_FALSE);
}

void df__parquet_tenc_binary(pq_tenc *e, int16_t id, const void *p, size_t n) {
    df__parquet_tenc_field(e, id, TC_BINARY);
    put_varint(e, n);
    put(e, p, n);
}

void df__parquet_tenc_string(pq_tenc *e, int16_t id, const char *s) {
    df__parquet_tenc_binary(e, id, s, strlen(s));
}

void df__parquet_tenc_list(pq_tenc *e, int16_t id, int elem_type, uint32_t count) {
    df__parquet_tenc_field(e, id, TC_LIST);
    if (count < 15) {
        put_byte(e, (uint8_t)((count << 4) | (uint32_t)elem_type));
    } else {
        put_byte(e, (uint8_t)(0xf0 | elem_type));
        put_varint(e, count);
    }
}

void df__parquet_tenc_i32_elem(pq_tenc *e, int32_t v) {
    put_zigzag(e, v);
}

void df__parquet_tenc_string_elem(pq_tenc *e, const char *s) {
    size_t n = strlen(s);
    put_varint(e, n);
    put(e, s, n);
}

void df__parquet_tenc_struct_field(pq_tenc *e, int16_t id) {
    df__parquet_tenc_field(e, id, TC_STRUCT);
    df__parquet_tenc_struct_begin(e);
}

void df__parquet_tenc_struct_elem(pq_tenc *e) {
    df__parquet_tenc_struct_begin(e);
}
