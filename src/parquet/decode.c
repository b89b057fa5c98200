/*
 * Value decoding of data and dictionary pages: PLAIN, dictionary indices
 * (PLAIN_DICTIONARY / RLE_DICTIONARY), RLE booleans, DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT.
 *
 * Decoders append dense values to a pq_leaf_out in the physical
 * representation described in column_reader.h.  Space is reserved once per
 * call (byte arrays: from exact or page-bounded sizes), never per value.
 * Every length and index read from the page is checked before use.
 */
#include "parquet/column_reader.h"

#include <stdarg.h>
#include <stdio.h>


/* Days between the Julian day origin and 1970-01-01, and nanoseconds per day. */
#define JULIAN_EPOCH_DAY 2440588
#define MICROS_PER_DAY INT64_C(86400000000)

static df_errkind page_error(pq_column_reader *cr, df_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static df_errkind page_error(pq_column_reader *cr, df_error *err, const char *fmt, ...) {
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet data in column '%s' (row group %d, page %lld): %s",
                        cr->leaf->path, cr->rg, (long long)cr->pages, msg);
}

/* Makes room for `extra` more bytes after `used` in a buffer (creating it when absent). */
static df_errkind reserve(df_buffer **b, int64_t used, int64_t extra, df_error *err) {
    int64_t need;
    if (__builtin_add_overflow(used, extra, &need) || need > ((int64_t)1 << 40))
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "column batch would exceed the buffer limit");
    if (!*b) {
        *b = df_buffer_new(DF_MAX(need, 64));
        return *b ? DF_OK : DF_OOM(err);
    }
    /* df_buffer_reserve keeps only `size` bytes when it moves the data. */
    (*b)->size = used;
    if ((*b)->capacity >= need) return DF_OK;
    return df_buffer_reserve(*b, DF_MAX(need, (*b)->capacity * 2), err);
}

/* Offsets of BYTE_ARRAY output: ensures offsets[0] exists and room for n more. */
static df_errkind reserve_offsets(pq_leaf_out *out, int64_t n, df_error *err) {
    bool fresh = !out->values;
    DF_TRY(reserve(&out->values, (out->nvalues + 1) * 4, n * 4, err));
    if (fresh || out->nvalues == 0) ((int32_t *)(void *)out->values->data)[0] = 0;
    return DF_OK;
}

static inline int32_t *offsets_of(pq_leaf_out *out) {
    return (int32_t *)(void *)out->values->data;
}

/* Current byte length of BYTE_ARRAY output data. */
static inline int64_t data_len(pq_leaf_out *out) {
    return out->nvalues ? offsets_of(out)[out->nvalues] : 0;
}

static df_errkind check_data_total(pq_column_reader *cr, int64_t total, df_error *err) {
    if (total > INT32_MAX)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED,
                            "column '%s': more than 2 GiB of string data in one batch; use a smaller batch size",
                            cr->leaf->path);
    return DF_OK;
}

/*
 * Copies one byte-array value.  Most values are short: a value of up to 64
 * bytes moves as whole 16-byte blocks (fixed moves the compiler inlines, no
 * memcpy call per value) when the rounded-up length can be read from `src`
 * (before src_end) and the destination has 15 bytes of slack (callers
 * reserve VALUE_SLACK more); the bytes written past the value are
 * overwritten by the next one or lie in the slack.
 */
#define VALUE_SLACK 16
static inline void copy_value(uint8_t *dst, const uint8_t *src, uint32_t len, const uint8_t *src_end) {
    uint32_t blocks = (len + 15) & ~15u;
    if (len <= 64 && src_end - src >= (ptrdiff_t)blocks) {
        /* Whole 16-byte blocks: short strings (names, codes, sentences) never call memcpy. */
        for (uint32_t i = 0; i < blocks; i += 16) {
            uint64_t a, b;
            memcpy(&a, src + i, 8);
            memcpy(&b, src + i + 8, 8);
            memcpy(dst + i, &a, 8);
            memcpy(dst + i + 8, &b, 8);
        }
    } else if (len) {
        memcpy(dst, src, len);
    }
}

/*
 * INT96 timestamps (Impala, Hive, old Spark): 8 bytes of nanoseconds within
 * the day (signed, little-endian) then 4 bytes of Julian day (unsigned, as
 * Arrow reads it).  They become microseconds since the epoch: in
 * nanoseconds only 1677-09-21..2262-04-11 fit in 64 bits, and real files
 * hold dates far outside that (0001-01-01 placeholders, 9999-12-31 "open
 * ended" ranges).  Sub-microsecond digits are floored (toward negative
 * infinity), so a value and its microsecond agree on the calendar instant
 * below it.  All arithmetic is checked: false when the value does not fit
 * in int64 microseconds (beyond about 292,000 years from 1970).
 */
static inline bool int96_to_micros(const uint8_t *p, int64_t *out) {
    int64_t nanos = (int64_t)df_load_le64(p);
    int64_t days = (int64_t)df_load_le32(p + 8) - JULIAN_EPOCH_DAY;
    int64_t micros = nanos / 1000;
    if (nanos % 1000 < 0) micros--;
    int64_t day_micros;
    return !__builtin_mul_overflow(days, MICROS_PER_DAY, &day_micros) &&
           !__builtin_add_overflow(day_micros, micros, out);
}

/* Converts n INT96 values at `src` into int64 microseconds at `dst`; an error names the first that does not fit. */
static df_errkind int96_run(pq_column_reader *cr, const uint8_t *src, int64_t n, int64_t *dst, df_error *err) {
    for (int64_t i = 0; i < n; i++)
        if (!int96_to_micros(src + 12 * i, &dst[i]))
            return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED,
                                "Parquet column '%s' (row group %d): INT96 timestamp (Julian day %u) is outside the "
                                "range of timestamp(us)",
                                cr->leaf->path, cr->rg, (unsigned)df_load_le32(src + 12 * i + 8));
    return DF_OK;
}

/* ---- DELTA_BINARY_PACKED -------------------------------------------------- */

static bool read_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return false;
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

static bool read_zigzag(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t u;
    if (!read_uvarint(p, end, &u)) return false;
    *v = (u >> 1) ^ (uint64_t)(-(int64_t)(u & 1));
    return true;
}

df_errkind df__parquet_dbp_init(pq_dbp *d, const uint8_t *data, size_t len, bool is32, uint64_t max_values,
                                df_error *err) {
    uint64_t *buf = d->buf, cap = d->buf_cap;
    memset(d, 0, sizeof *d);
    d->buf = buf;
    d->buf_cap = cap;
    d->p = data;
    d->end = data + len;
    d->is32 = is32;
    uint64_t first;
    if (!read_uvarint(&d->p, d->end, &d->block_size) || !read_uvarint(&d->p, d->end, &d->nmini) ||
        !read_uvarint(&d->p, d->end, &d->total) || !read_zigzag(&d->p, d->end, &first))
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "truncated DELTA_BINARY_PACKED header");
    if (d->block_size == 0 || d->block_size % 128 != 0 || d->block_size > (1u << 20) || d->nmini == 0 ||
        d->block_size % d->nmini != 0 || (d->block_size / d->nmini) % 8 != 0)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "invalid DELTA_BINARY_PACKED header: block size %llu with %llu miniblocks",
                            (unsigned long long)d->block_size, (unsigned long long)d->nmini);
    if (d->total > max_values)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "DELTA_BINARY_PACKED stream claims %llu values, more than the page holds (%llu)",
                            (unsigned long long)d->total, (unsigned long long)max_values);
    d->per_mini = d->block_size / d->nmini;
    d->last = first;
    d->mini = d->nmini;   /* forces a block header before the first delta */
    if (d->buf_cap < d->per_mini) {
        uint64_t *nb = df_realloc(d->buf, d->per_mini * sizeof *nb);
        if (!nb) return DF_OOM(err);
        d->buf = nb;
        d->buf_cap = d->per_mini;
    }
    return DF_OK;
}

void df__parquet_dbp_clear(pq_dbp *d) {
    df_free(d->buf);
    memset(d, 0, sizeof *d);
}

/* Loads the next miniblock (reading a block header when one starts). */
static df_errkind dbp_next_mini(pq_dbp *d, df_error *err) {
    if (d->mini >= d->nmini) {
        if (!read_zigzag(&d->p, d->end, &d->min_delta))
            return df_error_set(err, DF_ERR_PARQUET_FORMAT, "truncated DELTA_BINARY_PACKED block header");
        if ((uint64_t)(d->end - d->p) < d->nmini)
            return df_error_set(err, DF_ERR_PARQUET_FORMAT, "truncated DELTA_BINARY_PACKED bit widths");
        d->widths = d->p;
        d->p += d->nmini;
        d->mini = 0;
    }
    int w = d->widths[d->mini++];
    if (w > (d->is32 ? 32 : 64))
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid DELTA_BINARY_PACKED bit width %d", w);
    uint64_t need = DF_MIN(d->per_mini, d->total - d->emitted);
    size_t avail = (size_t)(d->end - d->p);
    size_t full = (size_t)(d->per_mini * (uint64_t)w / 8);
    if (full <= avail) {
        df__parquet_unpack64(d->p, avail, w, d->buf, need);
        d->p += full;
    } else {
        /* The last miniblock may be cut short after its last value. */
        size_t bytes = (size_t)((need * (uint64_t)w + 7) / 8);
        if (bytes > avail) return df_error_set(err, DF_ERR_PARQUET_FORMAT, "truncated DELTA_BINARY_PACKED miniblock");
        df__parquet_unpack64(d->p, avail, w, d->buf, need);
        d->p = d->end;
    }
    d->mini_left = need;
    d->buf_pos = 0;
    return DF_OK;
}

df_errkind df__parquet_dbp_get(pq_dbp *d, uint64_t *out, uint64_t n, df_error *err) {
    if (n > d->total - d->emitted)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "DELTA_BINARY_PACKED stream holds fewer values than needed");
    uint64_t i = 0;
    if (n > 0 && d->emitted == 0) {
        out[i++] = d->last;
        d->emitted = 1;
    }
    while (i < n) {
        if (d->mini_left == 0) DF_TRY(dbp_next_mini(d, err));
        uint64_t m = DF_MIN(n - i, d->mini_left);
        uint64_t last = d->last, md = d->min_delta;
        const uint64_t *src = d->buf + d->buf_pos;
        for (uint64_t j = 0; j < m; j++) {
            last += md + src[j];
            out[i + j] = last;
        }
        d->last = last;
        d->buf_pos += m;
        d->mini_left -= m;
        d->emitted += m;
        i += m;
    }
    return DF_OK;
}

/* Decodes all values of a length stream into int32 lengths (checked non-negative); returns their sum. */
static df_errkind dbp_lengths(pq_column_reader *cr, pq_dbp *d, int32_t *out, int64_t n, int64_t *sum, df_error *err) {
    uint64_t tmp[256];
    int64_t total = 0;
    for (int64_t i = 0; i < n;) {
        uint64_t m = (uint64_t)DF_MIN((int64_t)DF_ARRAY_LEN(tmp), n - i);
        DF_TRY(df__parquet_dbp_get(d, tmp, m, err));
        for (uint64_t j = 0; j < m; j++) {
            int32_t v = (int32_t)(uint32_t)tmp[j];
            if (v < 0) return page_error(cr, err, "negative length %d in a delta-encoded length stream", v);
            out[i + (int64_t)j] = v;
            total += v;
        }
        i += (int64_t)m;
    }
    *sum = total;
    return DF_OK;
}

/* ---- page start ----------------------------------------------------------- */

static df_errkind ensure_lengths(pq_decoder *d, int64_t n, df_error *err) {
    if (d->lcap >= n) return DF_OK;
    int64_t cap = DF_MAX(n, 1024);
    int32_t *l = df_realloc(d->lengths, (size_t)cap * sizeof *l);
    if (!l) return DF_OOM(err);
    d->lengths = l;
    int32_t *p = df_realloc(d->prefixes, (size_t)cap * sizeof *p);
    if (!p) return DF_OOM(err);
    d->prefixes = p;
    d->lcap = cap;
    return DF_OK;
}

static bool encoding_fits(int encoding, int physical) {
    switch (encoding) {
    case PQ_ENC_PLAIN:
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: return true;
    case PQ_ENC_RLE: return physical == DF_PARQUET_BOOLEAN;
    case PQ_ENC_DELTA_BINARY_PACKED: return physical == DF_PARQUET_INT32 || physical == DF_PARQUET_INT64;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return physical == DF_PARQUET_BYTE_ARRAY;
    case PQ_ENC_DELTA_BYTE_ARRAY:
        return physical == DF_PARQUET_BYTE_ARRAY || physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return physical == DF_PARQUET_INT32 || physical == DF_PARQUET_INT64 || physical == DF_PARQUET_FLOAT ||
               physical == DF_PARQUET_DOUBLE || physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
    default: return false;
    }
}

df_errkind df__parquet_decoder_start(pq_column_reader *cr, int encoding, const uint8_t *data, size_t len,
                                     int64_t max_values, df_error *err) {
    pq_decoder *d = &cr->dec;
    int64_t nonnull = max_values;
    int physical = cr->leaf->physical;
    d->encoding = encoding;
    d->p = data;
    d->end = data + len;
    d->left = nonnull;
    d->bit = 0;
    d->lpos = d->nlengths = 0;
    if (!encoding_fits(encoding, physical)) {
        if (encoding >= 0 && encoding <= PQ_ENC_BYTE_STREAM_SPLIT && encoding != 1)
            return page_error(cr, err, "encoding %s cannot encode %s values", df__parquet_encoding_name(encoding),
                              df__parquet_physical_name(physical));
        return df_error_set(err, DF_ERR_PARQUET_UNSUPPORTED, "column '%s' uses unsupported encoding %d",
                            cr->leaf->path, encoding);
    }
    if (nonnull == 0) return DF_OK;   /* nothing to decode: the value section may be empty */
    switch (encoding) {
    case PQ_ENC_PLAIN: return DF_OK;   /* lengths are checked value by value */
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
        if (!cr->dict.present) return page_error(cr, err, "dictionary-encoded page without a dictionary page");
        if (len < 1) return page_error(cr, err, "dictionary-encoded page without a bit width");
        int w = data[0];
        if (w > 32) return page_error(cr, err, "invalid dictionary index bit width %d", w);
        df__parquet_rle_init(&d->rle, data + 1, len - 1, w);
        return DF_OK;
    }
    case PQ_ENC_RLE: {
        if (len < 4) return page_error(cr, err, "RLE boolean page without its length prefix");
        uint32_t n = df_load_le32(data);
        if (n > len - 4) return page_error(cr, err, "RLE boolean length %u exceeds the page", n);
        df__parquet_rle_init(&d->rle, data + 4, n, 1);
        return DF_OK;
    }
    case PQ_ENC_DELTA_BINARY_PACKED:
        return df__parquet_dbp_init(&d->dbp, data, len, physical == DF_PARQUET_INT32, (uint64_t)cr->page_values,
                                    err);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: {
        DF_TRY(df__parquet_dbp_init(&d->dbp, data, len, true, (uint64_t)cr->page_values, err));
        int64_t n = (int64_t)d->dbp.total, sum;
        DF_TRY(ensure_lengths(d, n, err));
        DF_TRY(dbp_lengths(cr, &d->dbp, d->lengths, n, &sum, err));
        d->nlengths = n;
        d->p = d->dbp.p;
        if (sum > d->end - d->p) return page_error(cr, err, "DELTA_LENGTH_BYTE_ARRAY lengths exceed the page");
        return DF_OK;
    }
    case PQ_ENC_DELTA_BYTE_ARRAY: {
        DF_TRY(df__parquet_dbp_init(&d->dbp, data, len, true, (uint64_t)cr->page_values, err));
        int64_t n = (int64_t)d->dbp.total, psum, ssum;
        DF_TRY(ensure_lengths(d, n, err));
        DF_TRY(dbp_lengths(cr, &d->dbp, d->prefixes, n, &psum, err));
        const uint8_t *rest = d->dbp.p;
        DF_TRY(df__parquet_dbp_init(&d->dbp, rest, (size_t)(d->end - rest), true, (uint64_t)cr->page_values, err));
        if ((int64_t)d->dbp.total != n)
            return page_error(cr, err, "DELTA_BYTE_ARRAY has %lld prefixes but %llu suffixes", (long long)n,
                              (unsigned long long)d->dbp.total);
        DF_TRY(dbp_lengths(cr, &d->dbp, d->lengths, n, &ssum, err));
        d->nlengths = n;
        d->p = d->dbp.p;
        if (ssum > d->end - d->p) return page_error(cr, err, "DELTA_BYTE_ARRAY suffixes exceed the page");
        if (!d->prev.limit) df_buf_init(&d->prev, 0);
        df_buf_reset(&d->prev);
        return DF_OK;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT: {
        int w = cr->width;
        if (w <= 0 || len % (size_t)w != 0)
            return page_error(cr, err, "BYTE_STREAM_SPLIT section of %zu bytes is not a multiple of %d", len, w);
        d->bss_count = (int64_t)(len / (size_t)w);
        d->bss_pos = 0;
        return DF_OK;
    }
    default: return DF_ERR_INTERNAL;
    }
}

/* ---- PLAIN ------------------------------------------------------------------ */

static df_errkind plain_fixed(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    int w = cr->width;
    DF_TRY(reserve(&out->values, out->nvalues * w, n * w, err));
    uint8_t *dst = out->values->data + out->nvalues * w;
    if (cr->leaf->physical == DF_PARQUET_INT96) {
        if ((d->end - d->p) / 12 < n) return page_error(cr, err, "INT96 values run past the page");
        DF_TRY(int96_run(cr, d->p, n, (int64_t *)(void *)dst, err));
        d->p += 12 * n;
    } else {
        if ((d->end - d->p) / (w ? w : 1) < n && w) return page_error(cr, err, "values run past the page");
        memcpy(dst, d->p, (size_t)(n * w));
        d->p += n * w;
    }
    out->nvalues += n;
    return DF_OK;
}

static df_errkind plain_bool(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    if ((uint64_t)(d->end - d->p) * 8 - (uint64_t)d->bit < (uint64_t)n)
        return page_error(cr, err, "boolean values run past the page");
    DF_TRY(reserve(&out->values, df_bitmap_bytes(out->nvalues), df_bitmap_bytes(out->nvalues + n) + 1, err));
    df__parquet_copy_bits(out->values->data, out->nvalues, d->p, d->bit, n);
    int64_t bits = d->bit + n;
    d->p += bits >> 3;
    d->bit = (int)(bits & 7);
    out->nvalues += n;
    return DF_OK;
}

/*
 * PLAIN byte arrays: a first pass checks every length against the page and
 * sums them, so the output grows by exactly the bytes needed (batches keep
 * their buffers; over-reserving would inflate every batch a consumer keeps).
 */
static df_errkind plain_bytes(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    const uint8_t *p = d->p, *end = d->end;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (end - p < 4) return page_error(cr, err, "byte array length runs past the page");
        uint32_t l = df_load_le32(p);
        if (l > (uint64_t)(end - p - 4)) return page_error(cr, err, "byte array of %u bytes runs past the page", l);
        p += 4 + l;
        total += l;
    }
    DF_TRY(reserve_offsets(out, n, err));
    int64_t base = data_len(out);
    DF_TRY(check_data_total(cr, base + total, err));
    DF_TRY(reserve(&out->data, base, total + VALUE_SLACK, err));
    int32_t *off = offsets_of(out) + out->nvalues;
    uint8_t *dst = out->data->data;
    int64_t pos = base;
    p = d->p;
    for (int64_t i = 0; i < n; i++) {
        uint32_t l = df_load_le32(p);
        copy_value(dst + pos, p + 4, l, end);
        p += 4 + l;
        pos += l;
        off[i + 1] = (int32_t)pos;
    }
    d->p = p;
    out->nvalues += n;
    return DF_OK;
}

/* ---- dictionary ------------------------------------------------------------- */

/* Decodes up to `n` indices into cr->idx, checking them against the dictionary size. */
static df_errkind dict_indices(pq_column_reader *cr, int64_t n, df_error *err) {
    if (cr->idx_cap < (size_t)n) {
        uint32_t *p = df_realloc(cr->idx, (size_t)n * sizeof *p);
        if (!p) return DF_OOM(err);
        cr->idx = p;
        cr->idx_cap = (size_t)n;
    }
    size_t got = df__parquet_rle_get_u32(&cr->dec.rle, cr->idx, (size_t)n);
    if ((int64_t)got < n) return page_error(cr, err, "dictionary indices end after %zu of %lld values", got, (long long)n);
    uint32_t count = (uint32_t)cr->dict.count, bad = 0;
    const uint32_t *idx = cr->idx;
    for (int64_t i = 0; i < n; i++) bad |= idx[i] >= count;
    if (bad) {
        for (int64_t i = 0; i < n; i++)
            if (idx[i] >= count)
                return page_error(cr, err, "dictionary index %u out of range (dictionary of %u)", idx[i], count);
    }
    return DF_OK;
}

/* Batches of indices are decoded in chunks to bound the scratch size. */
#define DICT_CHUNK 4096

static df_errkind dict_fixed(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    int w = cr->width;
    DF_TRY(reserve(&out->values, out->nvalues * w, n * w, err));
    for (int64_t done = 0; done < n;) {
        int64_t m = DF_MIN(n - done, DICT_CHUNK);
        DF_TRY(dict_indices(cr, m, err));
        uint8_t *dst = out->values->data + (out->nvalues + done) * w;
        const uint32_t *idx = cr->idx;
        switch (w) {
        case 4: {
            const uint32_t *dict = (const uint32_t *)(const void *)cr->dict.values;
            uint32_t *o = (uint32_t *)(void *)dst;
            for (int64_t i = 0; i < m; i++) o[i] = dict[idx[i]];
            break;
        }
        case 8: {
            const uint64_t *dict = (const uint64_t *)(const void *)cr->dict.values;
            uint64_t *o = (uint64_t *)(void *)dst;
            for (int64_t i = 0; i < m; i++) o[i] = dict[idx[i]];
            break;
        }
        default:
            for (int64_t i = 0; i < m; i++) memcpy(dst + i * w, cr->dict.values + (size_t)idx[i] * (size_t)w, (size_t)w);
            break;
        }
        done += m;
    }
    out->nvalues += n;
    return DF_OK;
}

static df_errkind dict_bytes(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    DF_TRY(reserve_offsets(out, n, err));
    const int32_t *doff = (const int32_t *)(const void *)cr->dict.values;
    for (int64_t done = 0; done < n;) {
        int64_t m = DF_MIN(n - done, DICT_CHUNK);
        DF_TRY(dict_indices(cr, m, err));
        const uint32_t *idx = cr->idx;
        int64_t base = data_len(out), total = 0;
        for (int64_t i = 0; i < m; i++) total += doff[idx[i] + 1] - doff[idx[i]];
        DF_TRY(check_data_total(cr, base + total, err));
        DF_TRY(reserve(&out->data, base, total + VALUE_SLACK, err));
        uint8_t *dst = out->data->data;
        int32_t *off = offsets_of(out) + out->nvalues;
        const uint8_t *dend = cr->dict.data + cr->dict.data_len + VALUE_SLACK;
        int64_t pos = base;
        for (int64_t i = 0; i < m; i++) {
            int32_t s = doff[idx[i]], l = doff[idx[i] + 1] - s;
            copy_value(dst + pos, cr->dict.data + s, (uint32_t)l, dend);
            pos += l;
            off[i + 1] = (int32_t)pos;
        }
        out->nvalues += m;
        done += m;
    }
    return DF_OK;
}

/* ---- RLE booleans ------------------------------------------------------------ */

static df_errkind rle_bool(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    DF_TRY(reserve(&out->values, df_bitmap_bytes(out->nvalues), df_bitmap_bytes(out->nvalues + n) + 1, err));
    size_t got = df__parquet_rle_get_bits(&cr->dec.rle, out->values->data, out->nvalues, (size_t)n);
    if ((int64_t)got < n) return page_error(cr, err, "RLE booleans end early");
    out->nvalues += n;
    return DF_OK;
}

/* ---- DELTA_BINARY_PACKED ------------------------------------------------------ */

static df_errkind delta_ints(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    int w = cr->width;
    DF_TRY(reserve(&out->values, out->nvalues * w, n * w, err));
    uint8_t *dst = out->values->data + out->nvalues * w;
    if (w == 8) {
        DF_TRY(df__parquet_dbp_get(&cr->dec.dbp, (uint64_t *)(void *)dst, (uint64_t)n, err));
    } else {
        uint64_t tmp[512];
        uint32_t *o = (uint32_t *)(void *)dst;
        for (int64_t done = 0; done < n;) {
            uint64_t m = (uint64_t)DF_MIN(n - done, (int64_t)DF_ARRAY_LEN(tmp));
            DF_TRY(df__parquet_dbp_get(&cr->dec.dbp, tmp, m, err));
            for (uint64_t i = 0; i < m; i++) o[done + (int64_t)i] = (uint32_t)tmp[i];
            done += (int64_t)m;
        }
    }
    out->nvalues += n;
    return DF_OK;
}

/* ---- DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY -------------------------------- */

static df_errkind delta_length_bytes(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    if (n > d->nlengths - d->lpos) return page_error(cr, err, "DELTA_LENGTH_BYTE_ARRAY holds too few values");
    DF_TRY(reserve_offsets(out, n, err));
    int64_t base = data_len(out), total = 0;
    int32_t *off = offsets_of(out) + out->nvalues;
    const int32_t *len = d->lengths + d->lpos;
    for (int64_t i = 0; i < n; i++) {
        total += len[i];
        off[i + 1] = (int32_t)DF_MIN(base + total, (int64_t)INT32_MAX);
    }
    DF_TRY(check_data_total(cr, base + total, err));
    if (total > d->end - d->p) return page_error(cr, err, "DELTA_LENGTH_BYTE_ARRAY data runs past the page");
    DF_TRY(reserve(&out->data, base, total, err));
    memcpy(out->data->data + base, d->p, (size_t)total);   /* the values are contiguous: one copy */
    d->p += total;
    d->lpos += n;
    out->nvalues += n;
    return DF_OK;
}

static df_errkind delta_bytes(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    if (n > d->nlengths - d->lpos) return page_error(cr, err, "DELTA_BYTE_ARRAY holds too few values");
    bool fixed = cr->leaf->physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY;
    const int32_t *pre = d->prefixes + d->lpos, *suf = d->lengths + d->lpos;
    /* Exact output size and validation of the prefix chain first. */
    int64_t total = 0, prev_len = (int64_t)d->prev.len, sbytes = 0;
    for (int64_t i = 0; i < n; i++) {
        if (pre[i] > prev_len)
            return page_error(cr, err, "DELTA_BYTE_ARRAY prefix %d is longer than the previous value (%lld)", pre[i],
                              (long long)prev_len);
        prev_len = (int64_t)pre[i] + suf[i];
        if (fixed && prev_len != cr->leaf->type_length)
            return page_error(cr, err, "DELTA_BYTE_ARRAY value of %lld bytes in a FIXED_LEN_BYTE_ARRAY(%d) column",
                              (long long)prev_len, cr->leaf->type_length);
        total += prev_len;
        sbytes += suf[i];
    }
    if (sbytes > d->end - d->p) return page_error(cr, err, "DELTA_BYTE_ARRAY suffixes run past the page");
    uint8_t *dst;
    int32_t *off = NULL;
    int64_t base;
    if (fixed) {
        base = out->nvalues * cr->width;
        DF_TRY(reserve(&out->values, base, total, err));
        dst = out->values->data;
    } else {
        DF_TRY(reserve_offsets(out, n, err));
        base = data_len(out);
        DF_TRY(check_data_total(cr, base + total, err));
        DF_TRY(reserve(&out->data, base, total, err));
        dst = out->data->data;
        off = offsets_of(out) + out->nvalues;
    }
    int64_t pos = base;
    for (int64_t i = 0; i < n; i++) {
        /* value = previous[0:prefix] + suffix; the previous value lives in d->prev. */
        uint8_t *v = dst + pos;
        if (pre[i]) memcpy(v, d->prev.data, (size_t)pre[i]);
        if (suf[i]) memcpy(v + pre[i], d->p, (size_t)suf[i]);
        d->p += suf[i];
        int32_t l = pre[i] + suf[i];
        pos += l;
        if (off) off[i + 1] = (int32_t)pos;
        df_buf_reset(&d->prev);
        DF_TRY(df_buf_append(&d->prev, v, (size_t)l, err));
    }
    d->lpos += n;
    out->nvalues += n;
    return DF_OK;
}

/* ---- BYTE_STREAM_SPLIT ---------------------------------------------------------- */

static df_errkind byte_stream_split(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    int w = cr->width;
    if (n > d->bss_count - d->bss_pos) return page_error(cr, err, "BYTE_STREAM_SPLIT holds too few values");
    DF_TRY(reserve(&out->values, out->nvalues * w, n * w, err));
    uint8_t *dst = out->values->data + out->nvalues * w;
    const uint8_t *src = d->p + d->bss_pos;
    int64_t stride = d->bss_count;
    if (w == 4) {
        uint32_t *o = (uint32_t *)(void *)dst;
        for (int64_t i = 0; i < n; i++)
            o[i] = (uint32_t)src[i] | (uint32_t)src[stride + i] << 8 | (uint32_t)src[2 * stride + i] << 16 |
                   (uint32_t)src[3 * stride + i] << 24;
    } else if (w == 8) {
        uint64_t *o = (uint64_t *)(void *)dst;
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = 0;
            for (int b = 0; b < 8; b++) v |= (uint64_t)src[b * stride + i] << (8 * b);
            o[i] = v;
        }
    } else {
        for (int b = 0; b < w; b++) {
            const uint8_t *s = src + b * stride;
            for (int64_t i = 0; i < n; i++) dst[i * w + b] = s[i];
        }
    }
    d->bss_pos += n;
    out->nvalues += n;
    return DF_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

df_errkind df__parquet_decode_values(pq_column_reader *cr, int64_t n, pq_leaf_out *out, df_error *err) {
    pq_decoder *d = &cr->dec;
    if (n == 0) return DF_OK;
    if (n > d->left) return page_error(cr, err, "more values requested than the page holds");
    d->left -= n;
    int physical = cr->leaf->physical;
    switch (d->encoding) {
    case PQ_ENC_PLAIN:
        if (physical == DF_PARQUET_BOOLEAN) return plain_bool(cr, n, out, err);
        if (physical == DF_PARQUET_BYTE_ARRAY) return plain_bytes(cr, n, out, err);
        return plain_fixed(cr, n, out, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        if (physical == DF_PARQUET_BYTE_ARRAY) return dict_bytes(cr, n, out, err);
        return dict_fixed(cr, n, out, err);
    case PQ_ENC_RLE: return rle_bool(cr, n, out, err);
    case PQ_ENC_DELTA_BINARY_PACKED: return delta_ints(cr, n, out, err);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return delta_length_bytes(cr, n, out, err);
    case PQ_ENC_DELTA_BYTE_ARRAY: return delta_bytes(cr, n, out, err);
    case PQ_ENC_BYTE_STREAM_SPLIT: return byte_stream_split(cr, n, out, err);
    default: return DF_ERR_INTERNAL;
    }
}

/* ---- skipping ------------------------------------------------------------------ */

/* Skips n PLAIN byte arrays, checking each length against the page. */
static df_errkind skip_plain_bytes(pq_column_reader *cr, int64_t n, df_error *err) {
    pq_decoder *d = &cr->dec;
    const uint8_t *p = d->p, *end = d->end;
    for (int64_t i = 0; i < n; i++) {
        if (end - p < 4) return page_error(cr, err, "byte array length runs past the page");
        uint32_t l = df_load_le32(p);
        if (l > (uint64_t)(end - p - 4)) return page_error(cr, err, "byte array of %u bytes runs past the page", l);
        p += 4 + l;
    }
    d->p = p;
    return DF_OK;
}

static df_errkind skip_plain(pq_column_reader *cr, int64_t n, df_error *err) {
    pq_decoder *d = &cr->dec;
    switch (cr->leaf->physical) {
    case DF_PARQUET_BOOLEAN: {
        if ((uint64_t)(d->end - d->p) * 8 - (uint64_t)d->bit < (uint64_t)n)
            return page_error(cr, err, "boolean values run past the page");
        int64_t bits = d->bit + n;
        d->p += bits >> 3;
        d->bit = (int)(bits & 7);
        return DF_OK;
    }
    case DF_PARQUET_BYTE_ARRAY: return skip_plain_bytes(cr, n, err);
    default: {
        int64_t w = cr->leaf->physical == DF_PARQUET_INT96 ? 12 : cr->width;
        if (w && (d->end - d->p) / w < n) return page_error(cr, err, "values run past the page");
        d->p += n * w;
        return DF_OK;
    }
    }
}

/* DELTA_BYTE_ARRAY values build on their predecessor: only the last skipped value is kept (in d->prev). */
static df_errkind skip_delta_bytes(pq_column_reader *cr, int64_t n, df_error *err) {
    pq_decoder *d = &cr->dec;
    if (n > d->nlengths - d->lpos) return page_error(cr, err, "DELTA_BYTE_ARRAY holds too few values");
    const int32_t *pre = d->prefixes + d->lpos, *suf = d->lengths + d->lpos;
    for (int64_t i = 0; i < n; i++) {
        if ((size_t)pre[i] > d->prev.len)
            return page_error(cr, err, "DELTA_BYTE_ARRAY prefix %d is longer than the previous value (%zu)", pre[i],
                              d->prev.len);
        if (suf[i] > d->end - d->p) return page_error(cr, err, "DELTA_BYTE_ARRAY suffixes run past the page");
        if (cr->leaf->physical == DF_PARQUET_FIXED_LEN_BYTE_ARRAY && pre[i] + suf[i] != cr->leaf->type_length)
            return page_error(cr, err, "DELTA_BYTE_ARRAY value of %d bytes in a FIXED_LEN_BYTE_ARRAY(%d) column",
                              pre[i] + suf[i], cr->leaf->type_length);
        d->prev.len = (size_t)pre[i];
        DF_TRY(df_buf_append(&d->prev, d->p, (size_t)suf[i], err));
        d->p += suf[i];
    }
    d->lpos += n;
    return DF_OK;
}

df_errkind df__parquet_skip_values(pq_column_reader *cr, int64_t n, df_error *err) {
    pq_decoder *d = &cr->dec;
    if (n == 0) return DF_OK;
    if (n > d->left) return page_error(cr, err, "more values skipped than the page holds");
    d->left -= n;
    switch (d->encoding) {
    case PQ_ENC_PLAIN: return skip_plain(cr, n, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
    case PQ_ENC_RLE:
        /* Skipped dictionary indices are never used, so they need no range check. */
        if ((int64_t)df__parquet_rle_skip(&d->rle, (size_t)n) != n)
            return page_error(cr, err, "%s values end early", d->encoding == PQ_ENC_RLE ? "RLE boolean" : "dictionary index");
        return DF_OK;
    case PQ_ENC_DELTA_BINARY_PACKED: {
        uint64_t tmp[256];
        for (int64_t done = 0; done < n;) {
            uint64_t m = (uint64_t)DF_MIN(n - done, (int64_t)DF_ARRAY_LEN(tmp));
            DF_TRY(df__parquet_dbp_get(&d->dbp, tmp, m, err));
            done += (int64_t)m;
        }
        return DF_OK;
    }
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: {
        if (n > d->nlengths - d->lpos) return page_error(cr, err, "DELTA_LENGTH_BYTE_ARRAY holds too few values");
        int64_t total = 0;
        for (int64_t i = 0; i < n; i++) total += d->lengths[d->lpos + i];
        if (total > d->end - d->p) return page_error(cr, err, "DELTA_LENGTH_BYTE_ARRAY data runs past the page");
        d->p += total;
        d->lpos += n;
        return DF_OK;
    }
    case PQ_ENC_DELTA_BYTE_ARRAY: return skip_delta_bytes(cr, n, err);
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (n > d->bss_count - d->bss_pos) return page_error(cr, err, "BYTE_STREAM_SPLIT holds too few values");
        d->bss_pos += n;
        return DF_OK;
    default: return DF_ERR_INTERNAL;
    }
}

/* ---- dictionary pages ------------------------------------------------------------- */

/* Makes *buf hold at least `need` bytes (contents not kept). */
static df_errkind dict_room(uint8_t **buf, size_t *cap, size_t need, df_error *err) {
    if (*cap >= need && *buf) return DF_OK;
    size_t ncap = DF_MAX(need, *cap + *cap / 2);
    uint8_t *p = df_malloc(ncap ? ncap : 1);
    if (!p) return DF_OOM(err);
    df_free(*buf);
    *buf = p;
    *cap = ncap;
    return DF_OK;
}

df_errkind df__parquet_dict_load(pq_column_reader *cr, const uint8_t *data, size_t len, int64_t count,
                                 df_error *err) {
    pq_dict *dict = &cr->dict;
    int physical = cr->leaf->physical;
    if (dict->present) return page_error(cr, err, "a second dictionary page");
    if (count < 0) return page_error(cr, err, "dictionary page with %lld values", (long long)count);
    if (physical == DF_PARQUET_BOOLEAN) return page_error(cr, err, "dictionary page for a BOOLEAN column");
    if (physical == DF_PARQUET_BYTE_ARRAY) {
        if ((uint64_t)count > len / 4) return page_error(cr, err, "dictionary of %lld byte arrays in %zu bytes", (long long)count, len);
        DF_TRY(dict_room(&dict->values, &dict->values_cap, (size_t)(count + 1) * sizeof(int32_t), err));
        DF_TRY(dict_room(&dict->data, &dict->data_cap, len + VALUE_SLACK, err));   /* slack for copy_value */
        int32_t *off = (int32_t *)(void *)dict->values;
        uint8_t *bytes = dict->data;
        const uint8_t *p = data, *end = data + len;
        int64_t pos = 0;
        off[0] = 0;
        for (int64_t i = 0; i < count; i++) {
            uint32_t l = end - p >= 4 ? df_load_le32(p) : UINT32_MAX;
            if (l == UINT32_MAX || l > (uint64_t)(end - p - 4))
                return page_error(cr, err, "dictionary byte array %lld runs past the page", (long long)i);
            copy_value(bytes + pos, p + 4, l, end);   /* data_cap keeps VALUE_SLACK past the last byte */
            p += 4 + l;
            pos += l;
            off[i + 1] = (int32_t)pos;
        }
        memset(bytes + pos, 0, VALUE_SLACK);   /* copy_value may read (never use) bytes past the last value */
        dict->data_len = pos;
    } else {
        int src_w = physical == DF_PARQUET_INT96 ? 12 : cr->width;
        if (src_w == 0 && count > (1 << 24)) return page_error(cr, err, "oversized dictionary of empty values");
        if (src_w && (uint64_t)count > len / (size_t)src_w)
            return page_error(cr, err, "dictionary of %lld values does not fit %zu bytes", (long long)count, len);
        size_t bytes = (size_t)count * (size_t)cr->width;
        DF_TRY(dict_room(&dict->values, &dict->values_cap, bytes ? bytes : 1, err));
        if (physical == DF_PARQUET_INT96) {
            DF_TRY(int96_run(cr, data, count, (int64_t *)(void *)dict->values, err));
        } else if (bytes) {
            memcpy(dict->values, data, bytes);
        }
    }
    dict->count = count;
    dict->present = true;
    return DF_OK;
}

void df__parquet_dict_clear(pq_dict *d) {
    df_free(d->values);
    df_free(d->data);
    memset(d, 0, sizeof *d);
}

void df__parquet_dict_reset(pq_dict *d) {
    d->present = false;
    d->count = d->data_len = 0;
}

void df__parquet_decoder_clear(pq_decoder *d) {
    df__parquet_dbp_clear(&d->dbp);
    df_free(d->lengths);
    df_free(d->prefixes);
    df_buf_free(&d->prev);
    memset(d, 0, sizeof *d);
}
