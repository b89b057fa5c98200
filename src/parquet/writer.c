/*
 * Parquet writer: flat schemas, data page v1, PLAIN or dictionary
 * (RLE_DICTIONARY) values, RLE definition levels, optional compression.
 *
 * Rows accumulate per column into the current page (plain bytes, or
 * dictionary indices plus definition levels).  A page is closed when its
 * plain size reaches page_bytes or it holds page_rows rows (20,000 by
 * default, as parquet-java and arrow-rs do: small pages let readers that
 * select rows decompress little more than the pages holding them); closed
 * pages (header + compressed body)
 * collect in the column's chunk buffer.  When the row group is full, each
 * column's chunk is written out in turn: its dictionary page (if any) and
 * its data pages, and the chunk's metadata and statistics are kept for the
 * footer, which close() writes after the last row group.
 *
 * Dictionary policy: every column but booleans starts dictionary-encoded.
 * At the first page of a chunk, a dictionary that does not pay (more than
 * three quarters of the page's values are distinct) is dropped and the
 * page re-encoded as PLAIN.  A dictionary that outgrows
 * dictionary_page_bytes is frozen: pages already written keep using it and
 * the rest of the chunk is PLAIN, as other writers do.
 */
#include "parquet/codec.h"
#include "parquet/metadata.h"
#include "parquet/rle.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#define DEFAULT_ROW_GROUP_ROWS (1 << 20)
#define DEFAULT_PAGE_BYTES (1 << 20)
#define DEFAULT_PAGE_ROWS 20000
#define DEFAULT_DICT_BYTES (1 << 20)
#define FOOTER_STAT_BYTES 64

/* How values are compared for statistics. */
typedef enum stat_kind { SK_NONE, SK_SIGNED, SK_UNSIGNED, SK_FLOAT, SK_HALF, SK_DECIMAL, SK_BYTES, SK_BOOL } stat_kind;

/* Running min/max/null count. */
typedef struct wstats {
    bool has;               /* at least one non-null (non-NaN) value seen */
    int64_t nulls;
    union {
        int64_t i;
        uint64_t u;
        double f;
        df_i128 d;
    } min, max;
    df_buf bmin, bmax;      /* SK_BYTES bounds (full values) */
} wstats;

/* One column of the file. */
typedef struct wcol {
    const df_field *field;  /* borrowed from the writer's schema */
    pq_schema_element elem; /* its schema element (name borrowed from the field) */
    int physical;
    int width;              /* plain value width (0 for BYTE_ARRAY, bits for BOOLEAN: 0) */
    stat_kind sk;
    /* Current page. */
    df_buf plain;           /* PLAIN-encoded values of the page (non-dictionary pages) */
    uint32_t *defs;         /* definition levels of the page (nullable columns) */
    uint32_t *idx;          /* dictionary indices of the page */
    size_t ndefs, nidx, cap_defs, cap_idx;
    int64_t page_rows;      /* entries (rows) in the page */
    int64_t page_raw;       /* plain bytes the page's values take */
    int bool_bits;          /* PLAIN booleans: bits used in the last byte of `plain` */
    bool page_dict;         /* the page's values are dictionary indices */
    /* Dictionary of the chunk. */
    bool dict_on;           /* new values may enter the dictionary */
    bool dict_used;         /* some page of the chunk uses it */
    bool dict_decided;      /* the "does it pay" check ran */
    df_buf dict;            /* PLAIN encoding of the entries */
    int64_t *dict_off;      /* entry i starts at dict_off[i] in `dict` (for BYTE_ARRAY: at its length prefix) */
    int64_t dict_count, dict_cap;
    uint32_t *slots;        /* open-addressing table of entry index + 1 (0 = empty) */
    size_t nslots;
    /* Chunk of the current row group. */
    df_buf pages;           /* data pages with headers */
    int64_t chunk_values;
    int64_t chunk_uncompressed; /* uncompressed bytes including page headers */
    bool used_plain;
    wstats chunk_stats, file_stats;
} wcol;

struct df_parquet_writer {
    char *path;             /* owned */
    int fd;                 /* -1 after close */
    uint64_t offset;        /* bytes written so far */
    df_schema *schema;      /* one reference */
    df_parquet_write_options opts;
    char *created_by;       /* owned */
    wcol *cols;
    int32_t ncols;
    int64_t rg_rows;        /* rows in the current row group */
    int64_t total_rows;
    pq_row_group *groups;   /* footer row groups (arena) */
    uint32_t ngroups, cap_groups;
    df_arena arena;         /* footer structures of written row groups */
    pq_codec_ctx codec;
    df_buf scratch;         /* page body before compression */
    df_buf comp;            /* compressed page body */
    df_buf header;          /* page header bytes */
};

/* ---- types ----------------------------------------------------------------------- */

/* Bytes of a FIXED_LEN_BYTE_ARRAY holding a decimal of this precision. */
static int decimal_bytes(int precision) {
    for (int n = 1; n <= 32; n++) {
        double digits = floor((8.0 * n - 1) * log10(2.0));
        if (digits >= precision) return n;
    }
    return 32;
}

static df_errkind map_type(wcol *c, df_error *err) {
    const df_type *t = c->field->type;
    pq_schema_element *e = &c->elem;
    e->type_length = e->num_children = e->converted_type = e->scale = e->precision = e->field_id = -1;
    memset(&e->logical, 0, sizeof e->logical);
    pq_logical_type *lt = &e->logical;
    c->sk = SK_SIGNED;
    switch (t->id) {
    case DF_TYPE_BOOL: c->physical = DF_PARQUET_BOOLEAN; c->sk = SK_BOOL; break;
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32:
        c->physical = DF_PARQUET_INT32;
        lt->kind = PQ_LT_INTEGER;
        lt->bit_width = (int8_t)(8 * df_type_width(t));
        lt->is_signed = df_type_is_signed_integer(t);
        e->converted_type = (lt->is_signed ? PQ_CT_INT_8 : PQ_CT_UINT_8) + (lt->bit_width == 8 ? 0 : lt->bit_width == 16 ? 1 : 2);
        if (!lt->is_signed) c->sk = SK_UNSIGNED;
        break;
    case DF_TYPE_INT32: c->physical = DF_PARQUET_INT32; break;
    case DF_TYPE_INT64: c->physical = DF_PARQUET_INT64; break;
    case DF_TYPE_UINT64:
        c->physical = DF_PARQUET_INT64;
        lt->kind = PQ_LT_INTEGER;
        lt->bit_width = 64;
        e->converted_type = PQ_CT_UINT_64;
        c->sk = SK_UNSIGNED;
        break;
    case DF_TYPE_FLOAT32: c->physical = DF_PARQUET_FLOAT; c->sk = SK_FLOAT; break;
    case DF_TYPE_FLOAT64: c->physical = DF_PARQUET_DOUBLE; c->sk = SK_FLOAT; break;
    case DF_TYPE_FLOAT16:
        c->physical = DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
        e->type_length = 2;
        lt->kind = PQ_LT_FLOAT16;
        c->sk = SK_HALF;
        break;
    case DF_TYPE_DECIMAL128:
        lt->kind = PQ_LT_DECIMAL;
        lt->precision = e->precision = t->precision;
        lt->scale = e->scale = t->scale;
        e->converted_type = PQ_CT_DECIMAL;
        c->sk = SK_DECIMAL;
        if (t->precision <= 9) c->physical = DF_PARQUET_INT32;
        else if (t->precision <= 18) c->physical = DF_PARQUET_INT64;
        else {
            c->physical = DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
            e->type_length = decimal_bytes(t->precision);
        }
        if (t->scale < 0) return df_error_set(err, DF_ERR_UNSUPPORTED, "negative decimal scale cannot be written to Parquet");
        break;
    case DF_TYPE_DATE32: c->physical = DF_PARQUET_INT32; lt->kind = PQ_LT_DATE; e->converted_type = PQ_CT_DATE; break;
    case DF_TYPE_TIME32:
        c->physical = DF_PARQUET_INT32;
        lt->kind = PQ_LT_TIME;
        lt->utc = true;
        lt->unit = DF_UNIT_MILLI;   /* seconds are written as milliseconds */
        e->converted_type = PQ_CT_TIME_MILLIS;
        break;
    case DF_TYPE_TIME64:
        c->physical = DF_PARQUET_INT64;
        lt->kind = PQ_LT_TIME;
        lt->utc = true;
        lt->unit = t->unit;
        if (t->unit == DF_UNIT_MICRO) e->converted_type = PQ_CT_TIME_MICROS;
        break;
    case DF_TYPE_TIMESTAMP:
        c->physical = DF_PARQUET_INT64;
        lt->kind = PQ_LT_TIMESTAMP;
        lt->utc = t->timezone != NULL;
        lt->unit = t->unit == DF_UNIT_SECOND ? DF_UNIT_MILLI : t->unit;   /* seconds become milliseconds */
        if (lt->utc && lt->unit == DF_UNIT_MILLI) e->converted_type = PQ_CT_TIMESTAMP_MILLIS;
        if (lt->utc && lt->unit == DF_UNIT_MICRO) e->converted_type = PQ_CT_TIMESTAMP_MICROS;
        break;
    case DF_TYPE_UTF8:
        c->physical = DF_PARQUET_BYTE_ARRAY;
        lt->kind = PQ_LT_STRING;
        e->converted_type = PQ_CT_UTF8;
        c->sk = SK_BYTES;
        break;
    case DF_TYPE_BINARY: c->physical = DF_PARQUET_BYTE_ARRAY; c->sk = SK_BYTES; break;
    case DF_TYPE_FIXED_BINARY:
        c->physical = DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
        e->type_length = t->byte_width;
        c->sk = SK_BYTES;
        if (t->byte_width <= 0) return df_error_set(err, DF_ERR_UNSUPPORTED, "zero-width binary cannot be written");
        break;
    default:
        return df_error_set(err, DF_ERR_UNSUPPORTED, "column '%s': writing this type to Parquet is not supported",
                            c->field->name);
    }
    e->name = c->field->name;
    e->type = c->physical;
    e->repetition = c->field->nullable ? PQ_OPTIONAL : PQ_REQUIRED;
    c->width = c->physical == DF_PARQUET_INT32 || c->physical == DF_PARQUET_FLOAT ? 4
               : c->physical == DF_PARQUET_INT64 || c->physical == DF_PARQUET_DOUBLE ? 8
               : c->physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY ? e->type_length : 0;
    return DF_OK;
}

/* ---- statistics ------------------------------------------------------------------ */

static double half_value(uint16_t h) {
    int ex = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = ex == 0 ? ldexp(m, -24) : ex == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, ex - 25);
    return (h & 0x8000) ? -v : v;
}

static df_i128 be_to_i128(const uint8_t *p, int n) {
    df_i128 v = (p[0] & 0x80) ? -1 : 0;
    for (int i = 0; i < n; i++) v = (df_i128)(((df_u128)v << 8) | p[i]);
    return v;
}

static int bytes_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    int c = memcmp(a, b, DF_MIN(al, bl));
    return c ? c : (al > bl) - (al < bl);
}

/* Folds one plain-encoded non-null value into the statistics. */
static df_errkind stats_add(wstats *s, stat_kind sk, int physical, const uint8_t *v, size_t len, df_error *err) {
    switch (sk) {
    case SK_BOOL:
    case SK_SIGNED: {
        int64_t x = sk == SK_BOOL ? v[0] : physical == DF_PARQUET_INT32 ? (int32_t)df_load_le32(v) : (int64_t)df_load_le64(v);
        if (!s->has || x < s->min.i) s->min.i = x;
        if (!s->has || x > s->max.i) s->max.i = x;
        break;
    }
    case SK_UNSIGNED: {
        uint64_t x = physical == DF_PARQUET_INT32 ? df_load_le32(v) : df_load_le64(v);
        if (!s->has || x < s->min.u) s->min.u = x;
        if (!s->has || x > s->max.u) s->max.u = x;
        break;
    }
    case SK_FLOAT:
    case SK_HALF: {
        double x;
        if (sk == SK_HALF) {
            x = half_value(df_load_le16(v));
        } else if (physical == DF_PARQUET_FLOAT) {
            uint32_t u = df_load_le32(v);
            float f;
            memcpy(&f, &u, 4);
            x = f;
        } else {
            uint64_t u = df_load_le64(v);
            memcpy(&x, &u, 8);
        }
        if (isnan(x)) return DF_OK;   /* NaN never enters the bounds */
        if (!s->has || x < s->min.f) s->min.f = x;
        if (!s->has || x > s->max.f) s->max.f = x;
        break;
    }
    case SK_DECIMAL: {
        df_i128 x = physical == DF_PARQUET_INT32 ? (int32_t)df_load_le32(v)
                  : physical == DF_PARQUET_INT64 ? (int64_t)df_load_le64(v)
                                                 : be_to_i128(v, (int)len);
        if (!s->has || x < s->min.d) s->min.d = x;
        if (!s->has || x > s->max.d) s->max.d = x;
        break;
    }
    case SK_BYTES:
        if (!s->has || bytes_cmp(v, len, (const uint8_t *)s->bmin.data, s->bmin.len) < 0) {
            df_buf_reset(&s->bmin);
            DF_TRY(df_buf_append(&s->bmin, v, len, err));
        }
        if (!s->has || bytes_cmp(v, len, (const uint8_t *)s->bmax.data, s->bmax.len) > 0) {
            df_buf_reset(&s->bmax);
            DF_TRY(df_buf_append(&s->bmax, v, len, err));
        }
        break;
    default: break;
    }
    s->has = true;
    return DF_OK;
}

static void stats_reset(wstats *s) {
    s->has = false;
    s->nulls = 0;
    df_buf_reset(&s->bmin);
    df_buf_reset(&s->bmax);
}

static df_errkind stats_merge(wstats *into, const wstats *from, stat_kind sk, df_error *err) {
    into->nulls += from->nulls;
    if (!from->has) return DF_OK;
    bool first = !into->has;
    switch (sk) {
    case SK_BOOL:
    case SK_SIGNED:
        if (first || from->min.i < into->min.i) into->min.i = from->min.i;
        if (first || from->max.i > into->max.i) into->max.i = from->max.i;
        break;
    case SK_UNSIGNED:
        if (first || from->min.u < into->min.u) into->min.u = from->min.u;
        if (first || from->max.u > into->max.u) into->max.u = from->max.u;
        break;
    case SK_FLOAT:
    case SK_HALF:
        if (first || from->min.f < into->min.f) into->min.f = from->min.f;
        if (first || from->max.f > into->max.f) into->max.f = from->max.f;
        break;
    case SK_DECIMAL:
        if (first || from->min.d < into->min.d) into->min.d = from->min.d;
        if (first || from->max.d > into->max.d) into->max.d = from->max.d;
        break;
    case SK_BYTES:
        if (first || bytes_cmp((const uint8_t *)from->bmin.data, from->bmin.len, (const uint8_t *)into->bmin.data,
                               into->bmin.len) < 0) {
            df_buf_reset(&into->bmin);
            DF_TRY(df_buf_append(&into->bmin, from->bmin.data, from->bmin.len, err));
        }
        if (first || bytes_cmp((const uint8_t *)from->bmax.data, from->bmax.len, (const uint8_t *)into->bmax.data,
                               into->bmax.len) > 0) {
            df_buf_reset(&into->bmax);
            DF_TRY(df_buf_append(&into->bmax, from->bmax.data, from->bmax.len, err));
        }
        break;
    default: break;
    }
    into->has = true;
    return DF_OK;
}

/* ---- values ------------------------------------------------------------------------- */

/*
 * The PLAIN bytes of element i of a column vector (already known valid):
 * either in `tmp` or pointing into the vector.  Returns the length.
 */
static size_t value_of(const wcol *c, const df_vec *v, int64_t i, uint8_t *tmp, const uint8_t **out) {
    const df_type *t = v->type;
    int64_t at = v->offset + i;
    const uint8_t *p = v->values ? v->values->data : NULL;
    *out = tmp;
    switch (t->id) {
    case DF_TYPE_BOOL: tmp[0] = df_bit_get(p, at); return 1;
    case DF_TYPE_INT8: df_store_le32(tmp, (uint32_t)(int32_t)((const int8_t *)p)[at]); return 4;
    case DF_TYPE_UINT8: df_store_le32(tmp, p[at]); return 4;
    case DF_TYPE_INT16: df_store_le32(tmp, (uint32_t)(int32_t)((const int16_t *)(const void *)p)[at]); return 4;
    case DF_TYPE_UINT16: df_store_le32(tmp, ((const uint16_t *)(const void *)p)[at]); return 4;
    case DF_TYPE_TIME32:
        if (t->unit == DF_UNIT_SECOND) {
            df_store_le32(tmp, (uint32_t)(((const int32_t *)(const void *)p)[at] * 1000));
            return 4;
        }
        *out = p + at * 4;
        return 4;
    case DF_TYPE_TIMESTAMP:
        if (t->unit == DF_UNIT_SECOND) {
            df_store_le64(tmp, (uint64_t)((const int64_t *)(const void *)p)[at] * 1000u);
            return 8;
        }
        *out = p + at * 8;
        return 8;
    case DF_TYPE_DECIMAL128: {
        df_i128 x;
        memcpy(&x, p + at * 16, 16);
        if (c->physical == DF_PARQUET_INT32) {
            df_store_le32(tmp, (uint32_t)(int32_t)x);
            return 4;
        }
        if (c->physical == DF_PARQUET_INT64) {
            df_store_le64(tmp, (uint64_t)(int64_t)x);
            return 8;
        }
        int n = c->width;
        for (int b = 0; b < n; b++) tmp[n - 1 - b] = b < 16 ? (uint8_t)((df_u128)x >> (8 * b)) : (x < 0 ? 0xff : 0);
        return (size_t)n;
    }
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t len;
        *out = df_vec_bytes(v, i, &len);
        return (size_t)len;
    }
    default:
        *out = p + at * c->width;
        return (size_t)c->width;
    }
}

static df_errkind push_u32(uint32_t **arr, size_t *n, size_t *cap, uint32_t v, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(*arr, *cap, *n + 1, 1024, err));
    (*arr)[(*n)++] = v;
    return DF_OK;
}

/* Bytes of dictionary entry e (its PLAIN value without the length prefix). */
static const uint8_t *dict_entry(const wcol *c, int64_t e, size_t *len) {
    const uint8_t *p = (const uint8_t *)c->dict.data + c->dict_off[e];
    if (c->physical == DF_PARQUET_BYTE_ARRAY) {
        *len = df_load_le32(p);
        return p + 4;
    }
    *len = (size_t)c->width;
    return p;
}

static df_errkind dict_rehash(wcol *c, size_t nslots, df_error *err) {
    uint32_t *slots = df_calloc(nslots, sizeof *slots);
    if (!slots) return DF_OOM(err);
    for (int64_t e = 0; e < c->dict_count; e++) {
        size_t len;
        const uint8_t *p = dict_entry(c, e, &len);
        size_t h = (size_t)df_hash_bytes(p, len, 0x9e37) & (nslots - 1);
        while (slots[h]) h = (h + 1) & (nslots - 1);
        slots[h] = (uint32_t)e + 1;
    }
    df_free(c->slots);
    c->slots = slots;
    c->nslots = nslots;
    return DF_OK;
}

/* Finds or adds a value in the dictionary; *index receives its entry number. */
static df_errkind dict_lookup(wcol *c, const uint8_t *v, size_t len, uint32_t *index, df_error *err) {
    if ((size_t)c->dict_count * 2 >= c->nslots) DF_TRY(dict_rehash(c, c->nslots ? c->nslots * 2 : 1024, err));
    size_t h = (size_t)df_hash_bytes(v, len, 0x9e37) & (c->nslots - 1);
    while (c->slots[h]) {
        int64_t e = c->slots[h] - 1;
        size_t elen;
        const uint8_t *ep = dict_entry(c, e, &elen);
        if (elen == len && memcmp(ep, v, len) == 0) {
            *index = (uint32_t)e;
            return DF_OK;
        }
        h = (h + 1) & (c->nslots - 1);
    }
    DF_TRY(DF_ARRAY_RESERVE(c->dict_off, c->dict_cap, c->dict_count + 1, 1024, err));
    c->dict_off[c->dict_count] = (int64_t)c->dict.len;
    if (c->physical == DF_PARQUET_BYTE_ARRAY) {
        uint8_t l[4];
        df_store_le32(l, (uint32_t)len);
        DF_TRY(df_buf_append(&c->dict, l, 4, err));
    }
    DF_TRY(df_buf_append(&c->dict, v, len, err));
    c->slots[h] = (uint32_t)c->dict_count + 1;
    *index = (uint32_t)c->dict_count++;
    return DF_OK;
}

static df_errkind plain_append(wcol *c, const uint8_t *v, size_t len, df_error *err) {
    if (c->physical == DF_PARQUET_BOOLEAN) {
        if (c->bool_bits == 0 || c->bool_bits == 8) {
            DF_TRY(df_buf_append_char(&c->plain, 0, err));
            c->bool_bits = 0;
        }
        if (v[0]) c->plain.data[c->plain.len - 1] |= (char)(1 << c->bool_bits);
        c->bool_bits++;
        return DF_OK;
    }
    if (c->physical == DF_PARQUET_BYTE_ARRAY) {
        uint8_t l[4];
        df_store_le32(l, (uint32_t)len);
        DF_TRY(df_buf_append(&c->plain, l, 4, err));
    }
    return df_buf_append(&c->plain, v, len, err);
}

/* ---- pages -------------------------------------------------------------------------- */

static df_errkind write_all(df_parquet_writer *w, const void *data, size_t len, df_error *err) {
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            df_error_set(err, DF_ERR_IO, "cannot write %s: %s", w->path, strerror(errno));
            df_error_set_code(err, errno);
            return DF_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
        w->offset += (uint64_t)n;
    }
    return DF_OK;
}

/*
 * Compresses `body` and appends header + compressed bytes to `dst`; adds
 * the uncompressed size (header included) to *uncompressed.
 */
static df_errkind emit_page(df_parquet_writer *w, pq_page_header *h, const df_buf *body, df_buf *dst,
                            int64_t *uncompressed, df_error *err) {
    df_buf_reset(&w->comp);
    if (body->len > INT32_MAX) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "Parquet page larger than 2 GiB");
    DF_TRY(df__parquet_compress(&w->codec, w->opts.codec, w->opts.compression_level, (const uint8_t *)body->data,
                                body->len, &w->comp, err));
    h->uncompressed_size = (int32_t)body->len;
    h->compressed_size = (int32_t)w->comp.len;
    h->has_crc = true;
    h->crc = df__parquet_crc32((const uint8_t *)w->comp.data, w->comp.len);
    df_buf_reset(&w->header);
    DF_TRY(df__parquet_write_page_header(h, &w->header, err));
    DF_TRY(df_buf_append(dst, w->header.data, w->header.len, err));
    DF_TRY(df_buf_append(dst, w->comp.data, w->comp.len, err));
    *uncompressed += (int64_t)(w->header.len + body->len);
    return DF_OK;
}

static void dict_clear(wcol *c) {
    c->dict_count = 0;
    df_buf_reset(&c->dict);
    if (c->slots) memset(c->slots, 0, c->nslots * sizeof *c->slots);
}

/* Rewrites the current page's dictionary indices as PLAIN values (the dictionary did not pay). */
static df_errkind page_to_plain(wcol *c, df_error *err) {
    df_buf_reset(&c->plain);
    c->bool_bits = 0;
    for (size_t i = 0; i < c->nidx; i++) {
        size_t len;
        const uint8_t *p = dict_entry(c, c->idx[i], &len);
        DF_TRY(plain_append(c, p, len, err));
    }
    c->nidx = 0;
    c->page_dict = false;
    return DF_OK;
}

static df_errkind flush_page(df_parquet_writer *w, wcol *c, df_error *err) {
    if (c->page_rows == 0) return DF_OK;
    /* A page of nulls only has no values: write it PLAIN, so it never needs a dictionary page. */
    if (c->page_dict && c->nidx == 0) c->page_dict = false;
    if (c->page_dict && !c->dict_decided && c->nidx > 0) {
        c->dict_decided = true;
        if ((size_t)c->dict_count * 4 > c->nidx * 3 && !c->dict_used) {
            DF_TRY(page_to_plain(c, err));
            c->dict_on = false;
            dict_clear(c);
        }
    }
    df_buf *body = &w->scratch;
    df_buf_reset(body);
    if (c->field->nullable) {
        DF_TRY(df_buf_append(body, "\0\0\0\0", 4, err));
        size_t at = body->len;
        DF_TRY(df__parquet_rle_encode(c->defs, c->ndefs, 1, body, err));
        df_store_le32(body->data + at - 4, (uint32_t)(body->len - at));
    }
    if (c->page_dict) {
        int width = df__parquet_bit_width(c->dict_count > 0 ? (uint64_t)(c->dict_count - 1) : 0);
        DF_TRY(df_buf_append_char(body, (char)width, err));
        DF_TRY(df__parquet_rle_encode(c->idx, c->nidx, width, body, err));
    } else {
        DF_TRY(df_buf_append(body, c->plain.data, c->plain.len, err));
    }
    pq_page_header h;
    memset(&h, 0, sizeof h);
    h.type = PQ_PAGE_DATA;
    h.has_data = true;
    h.data.num_values = (int32_t)c->page_rows;
    h.data.encoding = c->page_dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN;
    h.data.def_encoding = PQ_ENC_RLE;
    h.data.rep_encoding = PQ_ENC_RLE;
    DF_TRY(emit_page(w, &h, body, &c->pages, &c->chunk_uncompressed, err));
    c->dict_used |= c->page_dict;
    c->used_plain |= !c->page_dict;
    c->chunk_values += c->page_rows;
    c->page_rows = c->page_raw = 0;
    c->ndefs = c->nidx = 0;
    c->bool_bits = 0;
    df_buf_reset(&c->plain);
    c->page_dict = c->dict_on;
    return DF_OK;
}

/* Appends rows [start, start + n) of one column vector to the column's pages. */
static df_errkind append_rows(df_parquet_writer *w, wcol *c, const df_vec *v, int64_t start, int64_t n,
                              df_error *err) {
    uint8_t tmp[32];
    int64_t limit = w->opts.page_bytes, dict_limit = w->opts.dictionary_page_bytes, row_limit = w->opts.page_rows;
    for (int64_t i = start; i < start + n; i++) {
        bool valid = df_vec_is_valid(v, i);
        if (!valid && !c->field->nullable)
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column '%s' is not nullable but holds a null",
                                c->field->name);
        if (c->field->nullable) DF_TRY(push_u32(&c->defs, &c->ndefs, &c->cap_defs, valid ? 1 : 0, err));
        c->page_rows++;
        if (!valid) {
            c->chunk_stats.nulls++;
            continue;
        }
        const uint8_t *p;
        size_t len = value_of(c, v, i, tmp, &p);
        DF_TRY(stats_add(&c->chunk_stats, c->sk, c->physical, p, len, err));
        c->page_raw += (int64_t)len + (c->physical == DF_PARQUET_BYTE_ARRAY ? 4 : 0);
        if (c->page_dict) {
            uint32_t index = 0;
            DF_TRY(dict_lookup(c, p, len, &index, err));
            DF_TRY(push_u32(&c->idx, &c->nidx, &c->cap_idx, index, err));
            if ((int64_t)c->dict.len > dict_limit) {
                /* Too big: freeze it; this page keeps it, the rest of the chunk is PLAIN. */
                c->dict_on = false;
                c->dict_decided = true;
                DF_TRY(flush_page(w, c, err));
                continue;
            }
        } else {
            DF_TRY(plain_append(c, p, len, err));
        }
        if (c->page_raw >= limit || c->page_rows >= row_limit) DF_TRY(flush_page(w, c, err));
    }
    return DF_OK;
}

/* ---- row groups and the footer -------------------------------------------------------- */

/* Copies bytes into the writer's arena (footer lifetime). */
static pq_bytes arena_bytes(df_parquet_writer *w, const void *p, size_t n, df_errkind *k, df_error *err) {
    pq_bytes b = {NULL, 0};
    uint8_t *d = df_arena_alloc(&w->arena, n ? n : 1);
    if (!d) {
        if (*k == DF_OK) *k = DF_OOM(err);
        return b;
    }
    if (n) memcpy(d, p, n);
    b.ptr = d;
    b.len = (uint32_t)n;
    return b;
}

/* PLAIN bytes of a statistics bound. */
static size_t encode_bound(const wcol *c, const wstats *s, bool is_min, uint8_t *out) {
    switch (c->sk) {
    case SK_BOOL: out[0] = (uint8_t)(is_min ? s->min.i : s->max.i); return 1;
    case SK_SIGNED:
    case SK_UNSIGNED: {
        uint64_t v = is_min ? s->min.u : s->max.u;
        if (c->physical == DF_PARQUET_INT32) {
            df_store_le32(out, (uint32_t)v);
            return 4;
        }
        df_store_le64(out, v);
        return 8;
    }
    case SK_FLOAT: {
        double d = is_min ? s->min.f : s->max.f;
        if (d == 0) d = is_min ? -0.0 : 0.0;   /* the format's zero rules */
        if (c->physical == DF_PARQUET_FLOAT) {
            float f = (float)d;
            memcpy(out, &f, 4);
            return 4;
        }
        memcpy(out, &d, 8);
        return 8;
    }
    case SK_DECIMAL: {
        df_i128 x = is_min ? s->min.d : s->max.d;
        if (c->physical == DF_PARQUET_INT32) {
            df_store_le32(out, (uint32_t)(int32_t)x);
            return 4;
        }
        if (c->physical == DF_PARQUET_INT64) {
            df_store_le64(out, (uint64_t)(int64_t)x);
            return 8;
        }
        int n = c->width;
        for (int b = 0; b < n; b++) out[n - 1 - b] = b < 16 ? (uint8_t)((df_u128)x >> (8 * b)) : (x < 0 ? 0xff : 0);
        return (size_t)n;
    }
    default: return 0;
    }
}

static void chunk_statistics(df_parquet_writer *w, const wcol *c, pq_statistics *st, df_errkind *k, df_error *err) {
    memset(st, 0, sizeof *st);
    st->present = true;
    st->has_null_count = true;
    st->null_count = c->chunk_stats.nulls;
    const wstats *s = &c->chunk_stats;
    if (!s->has || c->sk == SK_HALF) return;
    if (c->sk == SK_BYTES) {
        /* Long values: a prefix is still a valid minimum; a cut maximum is not, so omit it. */
        size_t nmin = DF_MIN(s->bmin.len, (size_t)FOOTER_STAT_BYTES);
        st->min_value = arena_bytes(w, s->bmin.data, nmin, k, err);
        st->has_min_value = true;
        st->has_min_exact = true;
        st->is_min_exact = nmin == s->bmin.len;
        if (s->bmax.len <= FOOTER_STAT_BYTES) {
            st->max_value = arena_bytes(w, s->bmax.data, s->bmax.len, k, err);
            st->has_max_value = true;
            st->has_max_exact = true;
            st->is_max_exact = true;
        }
        return;
    }
    uint8_t tmp[32];
    size_t n = encode_bound(c, s, true, tmp);
    st->min_value = arena_bytes(w, tmp, n, k, err);
    n = encode_bound(c, s, false, tmp);
    st->max_value = arena_bytes(w, tmp, n, k, err);
    st->has_min_value = st->has_max_value = true;
    st->has_min_exact = st->has_max_exact = true;
    st->is_min_exact = st->is_max_exact = true;
}

/* Writes one column chunk (dictionary page, then data pages) and fills its footer entry. */
static df_errkind write_chunk(df_parquet_writer *w, wcol *c, pq_column_chunk *cc, df_error *err) {
    DF_TRY(flush_page(w, c, err));
    pq_column_meta *m = &cc->meta;
    memset(cc, 0, sizeof *cc);
    cc->has_meta = true;
    m->dictionary_page_offset = -1;
    int64_t compressed = 0, start = (int64_t)w->offset;
    if (c->dict_used && c->dict_count > 0) {
        df_buf dictpage;
        df_buf_init(&dictpage, 0);
        pq_page_header h;
        memset(&h, 0, sizeof h);
        h.type = PQ_PAGE_DICTIONARY;
        h.has_dict = true;
        h.dict.num_values = (int32_t)c->dict_count;
        h.dict.encoding = PQ_ENC_PLAIN;
        df_errkind k = emit_page(w, &h, &c->dict, &dictpage, &c->chunk_uncompressed, err);
        if (k == DF_OK) k = write_all(w, dictpage.data, dictpage.len, err);
        df_buf_free(&dictpage);
        DF_TRY(k);
        m->dictionary_page_offset = start;
    }
    m->data_page_offset = (int64_t)w->offset;
    DF_TRY(write_all(w, c->pages.data, c->pages.len, err));
    compressed = (int64_t)w->offset - start;
    df_errkind k = DF_OK;
    int32_t *enc = df_arena_alloc(&w->arena, 3 * sizeof *enc);
    const char **path = df_arena_alloc(&w->arena, sizeof *path);
    if (!enc || !path) return DF_OOM(err);
    m->nencodings = 0;
    if (c->used_plain || c->dict_used) enc[m->nencodings++] = PQ_ENC_PLAIN;
    enc[m->nencodings++] = PQ_ENC_RLE;
    if (c->dict_used) enc[m->nencodings++] = PQ_ENC_RLE_DICTIONARY;
    path[0] = df_arena_strndup(&w->arena, c->field->name, strlen(c->field->name));
    if (!path[0]) return DF_OOM(err);
    m->type = c->physical;
    m->encodings = enc;
    m->path = path;
    m->npath = 1;
    m->codec = w->opts.codec;
    m->num_values = c->chunk_values;
    m->total_uncompressed_size = c->chunk_uncompressed;
    m->total_compressed_size = compressed;
    chunk_statistics(w, c, &m->stats, &k, err);
    DF_TRY(k);
    cc->file_offset = start;
    DF_TRY(stats_merge(&c->file_stats, &c->chunk_stats, c->sk, err));
    /* Reset the chunk. */
    stats_reset(&c->chunk_stats);
    df_buf_reset(&c->pages);
    dict_clear(c);
    c->chunk_values = c->chunk_uncompressed = 0;
    c->dict_on = c->physical != DF_PARQUET_BOOLEAN && !w->opts.disable_dictionary;
    c->page_dict = c->dict_on;
    c->dict_used = c->dict_decided = c->used_plain = false;
    return DF_OK;
}

static df_errkind flush_row_group(df_parquet_writer *w, df_error *err) {
    if (w->rg_rows == 0) return DF_OK;
    DF_TRY(DF_ARRAY_RESERVE(w->groups, w->cap_groups, w->ngroups + 1, 8, err));
    pq_row_group *g = &w->groups[w->ngroups];
    memset(g, 0, sizeof *g);
    g->columns = df_arena_calloc(&w->arena, (size_t)(w->ncols ? w->ncols : 1), sizeof *g->columns);
    if (!g->columns) return DF_OOM(err);
    g->ncolumns = (uint32_t)w->ncols;
    int64_t start = (int64_t)w->offset, uncompressed = 0;
    for (int32_t i = 0; i < w->ncols; i++) {
        DF_TRY(write_chunk(w, &w->cols[i], &g->columns[i], err));
        uncompressed += g->columns[i].meta.total_uncompressed_size;
    }
    g->num_rows = w->rg_rows;
    g->total_byte_size = uncompressed;
    g->file_offset = start;
    g->total_compressed_size = (int64_t)w->offset - start;
    g->ordinal = w->ngroups < INT16_MAX ? (int32_t)w->ngroups : -1;
    w->ngroups++;
    w->rg_rows = 0;
    return DF_OK;
}

static df_errkind write_footer(df_parquet_writer *w, df_error *err) {
    pq_file_meta m;
    memset(&m, 0, sizeof m);
    m.version = 1;
    m.nschema = (uint32_t)w->ncols + 1;
    m.schema = df_arena_calloc(&w->arena, m.nschema, sizeof *m.schema);
    m.column_orders = df_arena_calloc(&w->arena, (size_t)(w->ncols ? w->ncols : 1), 1);
    if (!m.schema || !m.column_orders) return DF_OOM(err);
    pq_schema_element *root = &m.schema[0];
    root->name = "schema";
    root->type = root->type_length = root->repetition = -1;
    root->converted_type = root->scale = root->precision = root->field_id = -1;
    root->num_children = w->ncols;
    for (int32_t i = 0; i < w->ncols; i++) {
        m.schema[i + 1] = w->cols[i].elem;
        m.column_orders[i] = 1;   /* TYPE_ORDER */
    }
    m.ncolumn_orders = (uint32_t)w->ncols;
    m.num_rows = w->total_rows;
    m.row_groups = w->groups;
    m.nrow_groups = w->ngroups;
    m.created_by = w->created_by;
    df_buf footer;
    df_buf_init(&footer, 0);
    df_errkind k = df__parquet_write_file_meta(&m, &footer, err);
    if (k == DF_OK && footer.len > UINT32_MAX) k = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "Parquet footer too large");
    uint8_t tail[8];
    df_store_le32(tail, (uint32_t)footer.len);
    memcpy(tail + 4, "PAR1", 4);
    if (k == DF_OK) k = write_all(w, footer.data, footer.len, err);
    if (k == DF_OK) k = write_all(w, tail, 8, err);
    df_buf_free(&footer);
    return k;
}

/* ---- public API ------------------------------------------------------------------------ */

static void wcol_free(wcol *c) {
    df_buf_free(&c->plain);
    df_free(c->defs);
    df_free(c->idx);
    df_buf_free(&c->dict);
    df_free(c->dict_off);
    df_free(c->slots);
    df_buf_free(&c->pages);
    df_buf_free(&c->chunk_stats.bmin);
    df_buf_free(&c->chunk_stats.bmax);
    df_buf_free(&c->file_stats.bmin);
    df_buf_free(&c->file_stats.bmax);
}

static void writer_free(df_parquet_writer *w, bool remove_file) {
    if (w->fd >= 0) close(w->fd);
    if (remove_file && w->path) unlink(w->path);
    for (int32_t i = 0; i < w->ncols; i++) wcol_free(&w->cols[i]);
    df_free(w->cols);
    df_free(w->groups);
    df_arena_destroy(&w->arena);
    df__parquet_codec_clear(&w->codec);
    df_buf_free(&w->scratch);
    df_buf_free(&w->comp);
    df_buf_free(&w->header);
    df_schema_release(w->schema);
    df_free(w->created_by);
    df_free(w->path);
    df_free(w);
}

df_errkind df_parquet_writer_open(const char *path, const df_schema *schema, const df_parquet_write_options *opts,
                                  df_parquet_writer **out, df_error *err) {
    *out = NULL;
    if (!path || !schema) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "writer needs a path and a schema");
    df_parquet_writer *w = df_calloc(1, sizeof *w);
    if (!w) return DF_OOM(err);
    w->fd = -1;
    if (opts) w->opts = *opts;
    if (w->opts.row_group_rows <= 0) w->opts.row_group_rows = DEFAULT_ROW_GROUP_ROWS;
    if (w->opts.page_bytes <= 0) w->opts.page_bytes = DEFAULT_PAGE_BYTES;
    if (w->opts.page_rows <= 0) w->opts.page_rows = DEFAULT_PAGE_ROWS;
    if (w->opts.dictionary_page_bytes <= 0) w->opts.dictionary_page_bytes = DEFAULT_DICT_BYTES;
    if (w->opts.stats_truncate <= 0) w->opts.stats_truncate = 32;
    w->opts.created_by = NULL;
    df_arena_init(&w->arena, 64 * 1024, 0);
    df_buf_init(&w->scratch, 0);
    df_buf_init(&w->comp, 0);
    df_buf_init(&w->header, 0);
    w->schema = df_schema_retain((df_schema *)schema);
    w->path = df_strdup(path);
    w->created_by = df_strdup(opts && opts->created_by ? opts->created_by : "deltafunnel version 0.1.0");
    w->ncols = schema->nfields;
    w->cols = df_calloc((size_t)(w->ncols ? w->ncols : 1), sizeof *w->cols);
    df_errkind k = (!w->path || !w->created_by || !w->cols) ? DF_OOM(err) : DF_OK;
    int32_t codec = w->opts.codec;
    if (k == DF_OK && codec != DF_PARQUET_UNCOMPRESSED && codec != DF_PARQUET_SNAPPY && codec != DF_PARQUET_ZSTD &&
        codec != DF_PARQUET_GZIP && codec != DF_PARQUET_LZ4_RAW && codec != DF_PARQUET_BROTLI)
        k = df_error_set(err, DF_ERR_UNSUPPORTED, "writing Parquet codec %s is not supported",
                         df__parquet_codec_name(codec));
    for (int32_t i = 0; k == DF_OK && i < w->ncols; i++) {
        wcol *c = &w->cols[i];
        c->field = &w->schema->fields[i];
        df_buf_init(&c->plain, 0);
        df_buf_init(&c->dict, 0);
        df_buf_init(&c->pages, 0);
        df_buf_init(&c->chunk_stats.bmin, 0);
        df_buf_init(&c->chunk_stats.bmax, 0);
        df_buf_init(&c->file_stats.bmin, 0);
        df_buf_init(&c->file_stats.bmax, 0);
        k = map_type(c, err);
        c->dict_on = c->page_dict = c->physical != DF_PARQUET_BOOLEAN && !w->opts.disable_dictionary;
    }
    if (k == DF_OK) {
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w->fd < 0) {
            k = df_error_set(err, errno == ENOENT ? DF_ERR_NOT_FOUND : DF_ERR_IO, "cannot create %s: %s", path,
                             strerror(errno));
        }
    }
    if (k == DF_OK) k = write_all(w, "PAR1", 4, err);
    if (k != DF_OK) {
        writer_free(w, w->fd >= 0);
        return k;
    }
    *out = w;
    return DF_OK;
}

df_errkind df_parquet_writer_write(df_parquet_writer *w, const df_batch *batch, df_error *err) {
    if (!w || !batch) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no writer or batch");
    if (batch->ncols != w->ncols || !df_schema_equals(batch->schema, w->schema))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "batch schema differs from the writer's schema");
    for (int64_t start = 0; start < batch->nrows;) {
        int64_t n = DF_MIN(batch->nrows - start, w->opts.row_group_rows - w->rg_rows);
        for (int32_t i = 0; i < w->ncols; i++) DF_TRY(append_rows(w, &w->cols[i], batch->cols[i], start, n, err));
        w->rg_rows += n;
        w->total_rows += n;
        start += n;
        if (w->rg_rows >= w->opts.row_group_rows) DF_TRY(flush_row_group(w, err));
    }
    return DF_OK;
}

void df_parquet_writer_abort(df_parquet_writer *w) {
    if (w) writer_free(w, true);
}

/* ---- summary -------------------------------------------------------------------------- */

/* Converts a file-level bound back to a scalar of the column's Arrow type. */
static df_errkind bound_scalar(const df_parquet_writer *w, const wcol *c, bool is_min, df_scalar *out, bool *has,
                               bool *exact, df_error *err) {
    const wstats *s = &c->file_stats;
    const df_type *t = c->field->type;
    *has = false;
    *exact = true;
    memset(out, 0, sizeof *out);
    if (!s->has || c->sk == SK_BOOL || c->sk == SK_HALF) return DF_OK;
    if (c->sk == SK_BYTES && t->id != DF_TYPE_UTF8) return DF_OK;   /* binary bounds are not useful to Delta */
    switch (c->sk) {
    case SK_SIGNED: {
        int64_t v = is_min ? s->min.i : s->max.i;
        /* Seconds were written as milliseconds: round outward back to seconds. */
        if ((t->id == DF_TYPE_TIMESTAMP || t->id == DF_TYPE_TIME32) && t->unit == DF_UNIT_SECOND) {
            int64_t q = v / 1000, r = v % 1000;
            if (is_min && r < 0) q--;
            if (!is_min && r > 0) q++;
            v = q;
        }
        out->v.i64 = v;
        break;
    }
    case SK_UNSIGNED: out->v.u64 = is_min ? s->min.u : s->max.u; break;
    case SK_FLOAT: out->v.f64 = is_min ? s->min.f : s->max.f; break;
    case SK_DECIMAL: out->v.i128 = is_min ? s->min.d : s->max.d; break;
    case SK_BYTES: {
        const df_buf *b = is_min ? &s->bmin : &s->bmax;
        size_t n = df_utf8_prefix((const uint8_t *)b->data, b->len, (size_t)w->opts.stats_truncate);
        if (n < b->len) {
            if (!is_min) return DF_OK;   /* a cut maximum is no upper bound */
            *exact = false;
        }
        out->v.bytes.ptr = df_malloc(n + 1);
        if (!out->v.bytes.ptr) return DF_OOM(err);
        memcpy(out->v.bytes.ptr, b->data, n);
        out->v.bytes.ptr[n] = '\0';
        out->v.bytes.len = (int64_t)n;
        break;
    }
    default: return DF_OK;
    }
    out->type = df_type_retain(c->field->type);
    *has = true;
    return DF_OK;
}

static df_errkind build_summary(df_parquet_writer *w, df_parquet_file_summary *s, df_error *err) {
    memset(s, 0, sizeof *s);
    s->size = w->offset;
    s->num_rows = w->total_rows;
    s->num_row_groups = (int32_t)w->ngroups;
    s->columns = df_calloc((size_t)(w->ncols ? w->ncols : 1), sizeof *s->columns);
    if (!s->columns) return DF_OOM(err);
    s->ncolumns = w->ncols;
    for (int32_t i = 0; i < w->ncols; i++) {
        const wcol *c = &w->cols[i];
        df_parquet_written_column *o = &s->columns[i];
        o->name = df_strdup(c->field->name);
        if (!o->name) return DF_OOM(err);
        o->stats.has_null_count = true;
        o->stats.null_count = c->file_stats.nulls;
        DF_TRY(bound_scalar(w, c, true, &o->stats.min, &o->stats.has_min, &o->stats.min_exact, err));
        DF_TRY(bound_scalar(w, c, false, &o->stats.max, &o->stats.has_max, &o->stats.max_exact, err));
    }
    return DF_OK;
}

void df_parquet_file_summary_clear(df_parquet_file_summary *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->ncolumns; i++) {
        df_free(s->columns[i].name);
        df_parquet_column_stats_clear(&s->columns[i].stats);
    }
    df_free(s->columns);
    memset(s, 0, sizeof *s);
}

df_errkind df_parquet_writer_close(df_parquet_writer *w, df_parquet_file_summary *summary, df_error *err) {
    if (summary) memset(summary, 0, sizeof *summary);
    if (!w) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no writer");
    df_errkind k = flush_row_group(w, err);
    if (k == DF_OK) k = write_footer(w, err);
    if (k == DF_OK && close(w->fd) != 0)
        k = df_error_set(err, DF_ERR_IO, "cannot close %s: %s", w->path, strerror(errno));
    w->fd = -1;
    if (k == DF_OK && summary) {
        k = build_summary(w, summary, err);
        if (k != DF_OK) df_parquet_file_summary_clear(summary);
    }
    writer_free(w, k != DF_OK);
    return k;
}

/* ---- Delta statistics JSON -------------------------------------------------------------- */

static df_errkind json_string(df_buf *b, const char *s, size_t n, df_error *err) {
    DF_TRY(df_buf_append_char(b, '"', err));
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            DF_TRY(df_buf_append_char(b, '\\', err));
            DF_TRY(df_buf_append_char(b, (char)ch, err));
        } else if (ch < 0x20) {
            DF_TRY(df_buf_printf(b, err, "\\u%04x", ch));
        } else {
            DF_TRY(df_buf_append_char(b, (char)ch, err));
        }
    }
    return df_buf_append_char(b, '"', err);
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static df_errkind json_decimal(df_buf *b, df_i128 v, int scale, df_error *err) {
    char digits[64];
    int n = 0;
    bool neg = v < 0;
    df_u128 u = neg ? (df_u128)0 - (df_u128)v : (df_u128)v;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (n <= scale) digits[n++] = '0';
    if (neg) DF_TRY(df_buf_append_char(b, '-', err));
    for (int i = n - 1; i >= 0; i--) {
        DF_TRY(df_buf_append_char(b, digits[i], err));
        if (i == scale && scale > 0) DF_TRY(df_buf_append_char(b, '.', err));
    }
    return DF_OK;
}

/* Appends a bound as a Delta statistics value (types json_representable accepts). */
static df_errkind json_value(df_buf *b, const df_scalar *s, bool is_min, df_error *err) {
    const df_type *t = s->type;
    switch (t->id) {
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
    case DF_TYPE_TIME32: case DF_TYPE_TIME64:
        return df_buf_printf(b, err, "%lld", (long long)s->v.i64);
    case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32: case DF_TYPE_UINT64:
        return df_buf_printf(b, err, "%llu", (unsigned long long)s->v.u64);
    case DF_TYPE_FLOAT32: case DF_TYPE_FLOAT64:
        return df_buf_printf(b, err, "%.17g", s->v.f64);
    case DF_TYPE_DECIMAL128: return json_decimal(b, s->v.i128, t->scale, err);
    case DF_TYPE_DATE32: {
        int64_t y;
        int m, d;
        df_civil_from_days(s->v.i64, &y, &m, &d);
        return df_buf_printf(b, err, "\"%04lld-%02d-%02d\"", (long long)y, m, d);
    }
    case DF_TYPE_TIMESTAMP: {
        static const int64_t per_ms[] = {0, 1, 1000, 1000000};
        int64_t ms;
        if (t->unit == DF_UNIT_SECOND) ms = s->v.i64 * 1000;
        else {
            /* Milliseconds, rounded outward so the bounds stay bounds. */
            int64_t f = per_ms[t->unit];
            ms = floor_div(s->v.i64, f);
            if (!is_min && ms * f != s->v.i64) ms++;
        }
        int64_t days = floor_div(ms, 86400000), rem = ms - days * 86400000;
        int64_t y;
        int m, d;
        df_civil_from_days(days, &y, &m, &d);
        return df_buf_printf(b, err, "\"%04lld-%02d-%02dT%02d:%02d:%02d.%03d%s\"", (long long)y, m, d,
                             (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60), (int)(rem % 1000),
                             t->timezone ? "Z" : "");
    }
    case DF_TYPE_UTF8: return json_string(b, (const char *)s->v.bytes.ptr, (size_t)s->v.bytes.len, err);
    default: return DF_OK;
    }
}

static bool json_representable(const df_scalar *s) {
    if (s->type->id == DF_TYPE_FLOAT32 || s->type->id == DF_TYPE_FLOAT64) return isfinite(s->v.f64);
    switch (s->type->id) {
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64: case DF_TYPE_TIME32:
    case DF_TYPE_TIME64: case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32: case DF_TYPE_UINT64:
    case DF_TYPE_DECIMAL128: case DF_TYPE_DATE32: case DF_TYPE_TIMESTAMP: case DF_TYPE_UTF8: return true;
    default: return false;
    }
}

static df_errkind json_bounds(const df_parquet_file_summary *s, df_buf *out, bool is_min, df_error *err) {
    bool first = true;
    DF_TRY(df_buf_append_char(out, '{', err));
    for (int32_t i = 0; i < s->ncolumns; i++) {
        const df_column_stats *st = &s->columns[i].stats;
        const df_scalar *v = is_min ? &st->min : &st->max;
        if (!(is_min ? st->has_min : st->has_max) || !json_representable(v)) continue;
        if (!first) DF_TRY(df_buf_append_char(out, ',', err));
        first = false;
        DF_TRY(json_string(out, s->columns[i].name, strlen(s->columns[i].name), err));
        DF_TRY(df_buf_append_char(out, ':', err));
        DF_TRY(json_value(out, v, is_min, err));
    }
    return df_buf_append_char(out, '}', err);
}

df_errkind df_parquet_file_summary_json(const df_parquet_file_summary *s, df_buf *out, df_error *err) {
    DF_TRY(df_buf_printf(out, err, "{\"numRecords\":%lld,\"minValues\":", (long long)s->num_rows));
    DF_TRY(json_bounds(s, out, true, err));
    DF_TRY(df_buf_append_str(out, ",\"maxValues\":", err));
    DF_TRY(json_bounds(s, out, false, err));
    DF_TRY(df_buf_append_str(out, ",\"nullCount\":{", err));
    for (int32_t i = 0; i < s->ncolumns; i++) {
        if (i) DF_TRY(df_buf_append_char(out, ',', err));
        DF_TRY(json_string(out, s->columns[i].name, strlen(s->columns[i].name), err));
        DF_TRY(df_buf_printf(out, err, ":%lld", (long long)s->columns[i].stats.null_count));
    }
    return df_buf_append_str(out, "}}", err);
}
