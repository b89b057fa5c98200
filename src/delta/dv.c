/*
 * Deletion vectors: Z85 text, the RoaringBitmapArray serialisation and the
 * DV file format.
 *
 * A deletion vector descriptor names its bitmap in one of three ways: 'u'
 * (a random directory prefix followed by a Z85-encoded UUID; the file is
 * <root>/<prefix>/deletion_vector_<uuid>.bin), 'p' (an absolute URI) or 'i'
 * (the Z85-encoded bitmap itself, inline in the log).  DV files start with
 * a version byte (1); at the descriptor's offset sit a big-endian 4-byte
 * size, the bitmap, and a big-endian CRC-32 of the bitmap.
 *
 * A bitmap is the magic number 1681511377 (little endian) followed by the
 * portable 64-bit RoaringBitmap format: a count of buckets, then per bucket
 * a 32-bit high key and a standard 32-bit RoaringBitmap.  A 32-bit bitmap
 * starts with a cookie: 12346 (no run containers; the container count
 * follows) or 12347 in the low 16 bits (run containers; count - 1 in the
 * high 16 bits, then a bitset saying which containers are runs).  Then come
 * per container a 16-bit key and cardinality - 1, the 32-bit offsets (always
 * for 12346, for 12347 only when there are at least 4 containers), and the
 * containers: arrays of 16-bit values (cardinality <= 4096), 8 KiB bitsets,
 * or run lists of (start, length - 1) pairs.
 *
 * Decoding is a single bounds-checked pass that appends the row indexes in
 * order; keys must ascend strictly, so the output is sorted and free of
 * duplicates by construction (checked, never assumed).
 */
#include "delta/delta_int.h"

#include <zlib.h>

#define DV_MAGIC 1681511377u
#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u

/* ------------------------------------------------------------------------ */
/* Z85                                                                       */

static const char z85_chars[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/* Value of a Z85 character, or -1. */
static int z85_value(unsigned char c) {
    const char *p = c ? strchr(z85_chars, c) : NULL;
    return p ? (int)(p - z85_chars) : -1;
}

df_errkind df__delta_z85_decode(const char *text, size_t len, uint8_t *out, df_error *err) {
    if (len % 5 != 0) DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "Z85 text length %zu is not a multiple of 5", len);
    for (size_t i = 0, o = 0; i < len; i += 5, o += 4) {
        uint64_t v = 0;
        for (size_t k = 0; k < 5; k++) {
            int d = z85_value((unsigned char)text[i + k]);
            if (d < 0) {
                df_error_set(err, DF_ERR_DELTA_LOG_FORMAT, "invalid Z85 character at offset %zu", i + k);
                df_error_set_offset(err, (int64_t)(i + k));
                return DF_ERR_DELTA_LOG_FORMAT;
            }
            v = v * 85 + (uint64_t)d;
        }
        /* Blocks above 2^32 - 1 wrap, as in the reference codec (writers rely on it for padding). */
        v &= 0xFFFFFFFFu;
        out[o] = (uint8_t)(v >> 24);
        out[o + 1] = (uint8_t)(v >> 16);
        out[o + 2] = (uint8_t)(v >> 8);
        out[o + 3] = (uint8_t)v;
    }
    return DF_OK;
}

df_errkind df__delta_dv_relative_path(const char *path_or_inline, char **out, df_error *err) {
    *out = NULL;
    size_t n = strlen(path_or_inline);
    if (n < 20) DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "deletion vector path `%s` is too short", path_or_inline);
    uint8_t u[16];
    DF_TRY(df__delta_z85_decode(path_or_inline + n - 20, 20, u, err));
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    if (n > 20) {
        k = df_buf_append(&b, path_or_inline, n - 20, err);
        if (k == DF_OK) k = df_buf_append_char(&b, '/', err);
    }
    if (k == DF_OK)
        k = df_buf_printf(&b, err,
                          "deletion_vector_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x.bin",
                          u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                          u[14], u[15]);
    if (k != DF_OK) {
        df_buf_free(&b);
        return k;
    }
    *out = df_buf_take(&b);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Roaring                                                                   */

typedef struct reader {
    const uint8_t *p;       /* cursor */
    const uint8_t *end;     /* end of the bitmap bytes */
    const uint8_t *start;   /* first byte (for offsets in messages) */
} reader;

typedef struct row_sink {
    uint64_t *rows;         /* output array (df_malloc) */
    int64_t n, cap;         /* used / allocated */
    int64_t max;            /* bound on n */
    uint64_t last;          /* last appended value (order check) */
} row_sink;

static df_errkind corrupt(const reader *r, df_error *err, const char *what) {
    df_error_set(err, DF_ERR_DELTA_LOG_FORMAT, "corrupt deletion vector at byte %td: %s", r->p - r->start, what);
    df_error_set_offset(err, r->p - r->start);
    return DF_ERR_DELTA_LOG_FORMAT;
}

static bool need(const reader *r, size_t n) {
    return (size_t)(r->end - r->p) >= n;
}

static df_errkind sink_reserve(row_sink *s, int64_t extra, df_error *err) {
    if (extra > s->max - s->n) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "deletion vector holds more than %lld rows", (long long)s->max);
    return DF_ARRAY_RESERVE(s->rows, s->cap, s->n + extra, 1024, err);
}

/* Appends a value that was checked to ascend. */
static inline void sink_put(row_sink *s, uint64_t v) {
    s->rows[s->n++] = v;
    s->last = v;
}

/* Decodes one container whose values go to base | low16. */
static df_errkind read_container(reader *r, row_sink *s, uint64_t base, bool is_run, uint32_t card, df_error *err) {
    if (is_run) {
        if (!need(r, 2)) return corrupt(r, err, "truncated run container");
        uint16_t nruns = df_load_le16(r->p);
        r->p += 2;
        if (!need(r, (size_t)nruns * 4)) return corrupt(r, err, "truncated run list");
        int64_t prev_end = -1, total = 0;
        for (uint32_t i = 0; i < nruns; i++) {
            uint32_t start = df_load_le16(r->p + 4 * i), len = (uint32_t)df_load_le16(r->p + 4 * i + 2) + 1;
            if ((int64_t)start <= prev_end || start + len > 65536) return corrupt(r, err, "overlapping or unordered runs");
            prev_end = start + len - 1;
            total += len;
        }
        DF_TRY(sink_reserve(s, total, err));
        for (uint32_t i = 0; i < nruns; i++) {
            uint32_t start = df_load_le16(r->p + 4 * i), len = (uint32_t)df_load_le16(r->p + 4 * i + 2) + 1;
            for (uint32_t k = 0; k < len; k++) sink_put(s, base | (start + k));
        }
        r->p += (size_t)nruns * 4;
        return DF_OK;
    }
    if (card <= 4096) {
        if (!need(r, (size_t)card * 2)) return corrupt(r, err, "truncated array container");
        DF_TRY(sink_reserve(s, card, err));
        int64_t prev = -1;
        for (uint32_t i = 0; i < card; i++) {
            uint16_t v = df_load_le16(r->p + 2 * i);
            if ((int64_t)v <= prev) return corrupt(r, err, "array container not strictly ascending");
            prev = v;
            sink_put(s, base | v);
        }
        r->p += (size_t)card * 2;
        return DF_OK;
    }
    if (!need(r, 8192)) return corrupt(r, err, "truncated bitset container");
    DF_TRY(sink_reserve(s, card, err));
    int64_t before = s->n;
    for (uint32_t w = 0; w < 1024; w++) {
        uint64_t word = df_load_le64(r->p + 8 * w);
        while (word) {
            if (s->n - before >= card) return corrupt(r, err, "bitset holds more values than its cardinality");
            sink_put(s, base | (w * 64 + (uint32_t)__builtin_ctzll(word)));
            word &= word - 1;
        }
    }
    if (s->n - before != card) return corrupt(r, err, "bitset cardinality mismatch");
    r->p += 8192;
    return DF_OK;
}

/* Decodes one standard 32-bit RoaringBitmap whose values get `high` as their upper 32 bits. */
static df_errkind read_bitmap32(reader *r, row_sink *s, uint64_t high, df_error *err) {
    if (!need(r, 4)) return corrupt(r, err, "truncated bitmap header");
    uint32_t cookie = df_load_le32(r->p);
    r->p += 4;
    uint32_t n;
    const uint8_t *runs = NULL;
    bool offsets;
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        n = (cookie >> 16) + 1;
        size_t rb = (n + 7) / 8;
        if (!need(r, rb)) return corrupt(r, err, "truncated run bitset");
        runs = r->p;
        r->p += rb;
        offsets = n >= 4;
    } else if (cookie == COOKIE_NO_RUN) {
        if (!need(r, 4)) return corrupt(r, err, "truncated container count");
        n = df_load_le32(r->p);
        r->p += 4;
        if (n > 65536) return corrupt(r, err, "too many containers");
        offsets = true;
    } else {
        return corrupt(r, err, "unknown bitmap cookie");
    }
    if (!need(r, (size_t)n * 4)) return corrupt(r, err, "truncated container headers");
    const uint8_t *desc = r->p;
    r->p += (size_t)n * 4;
    if (offsets) {
        if (!need(r, (size_t)n * 4)) return corrupt(r, err, "truncated container offsets");
        r->p += (size_t)n * 4;
    }
    int64_t prev_key = -1;
    for (uint32_t i = 0; i < n; i++) {
        uint16_t key = df_load_le16(desc + 4 * i);
        uint32_t card = (uint32_t)df_load_le16(desc + 4 * i + 2) + 1;
        if ((int64_t)key <= prev_key) return corrupt(r, err, "container keys not ascending");
        prev_key = key;
        bool is_run = runs && ((runs[i / 8] >> (i % 8)) & 1);
        DF_TRY(read_container(r, s, (high << 32) | ((uint64_t)key << 16), is_run, card, err));
    }
    return DF_OK;
}

df_errkind df__delta_dv_decode(const uint8_t *data, size_t len, int64_t max_rows, uint64_t **rows, int64_t *nrows,
                               df_error *err) {
    *rows = NULL;
    *nrows = 0;
    reader r = {data, data + len, data};
    if (!need(&r, 12) || df_load_le32(r.p) != DV_MAGIC) return corrupt(&r, err, "bad magic number");
    r.p += 4;
    uint64_t nbuckets = df_load_le64(r.p);
    r.p += 8;
    /* Each bucket needs at least 12 bytes, which bounds the loop by the input. */
    if (nbuckets > (uint64_t)(r.end - r.p) / 12) return corrupt(&r, err, "bucket count exceeds the data");
    row_sink s = {NULL, 0, 0, max_rows, 0};
    int64_t prev_high = -1;
    df_errkind k = DF_OK;
    for (uint64_t b = 0; b < nbuckets && k == DF_OK; b++) {
        if (!need(&r, 4)) {
            k = corrupt(&r, err, "truncated bucket key");
            break;
        }
        uint32_t high = df_load_le32(r.p);
        r.p += 4;
        if ((int64_t)high <= prev_high || (high & 0x80000000u)) {
            k = corrupt(&r, err, "bucket keys not ascending or negative");
            break;
        }
        prev_high = high;
        k = read_bitmap32(&r, &s, high, err);
    }
    if (k == DF_OK && r.p != r.end) k = corrupt(&r, err, "trailing bytes after the bitmap");
    if (k != DF_OK) {
        df_free(s.rows);
        return k;
    }
    *rows = s.rows;
    *nrows = s.n;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

static df_errkind load_inline(const df__delta_dv *dv, uint64_t **rows, int64_t *nrows, df_error *err) {
    size_t tlen = strlen(dv->path_or_inline);
    size_t blen = tlen / 5 * 4;
    if (dv->size_in_bytes < 0 || (size_t)dv->size_in_bytes > blen || blen - (size_t)dv->size_in_bytes >= 4)
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "inline deletion vector of %zu characters does not hold %d bytes", tlen,
                dv->size_in_bytes);
    uint8_t *buf = df_malloc(blen ? blen : 1);
    if (!buf) return DF_OOM(err);
    df_errkind k = df__delta_z85_decode(dv->path_or_inline, tlen, buf, err);
    if (k == DF_OK) k = df__delta_dv_decode(buf, (size_t)dv->size_in_bytes, DF_DELTA_MAX_DV_ROWS, rows, nrows, err);
    df_free(buf);
    return k;
}

/*
 * Some writers (test configurations of the reference implementation) put a
 * fixed prefix before "deletion_vector_<uuid>.bin" in the file name.  The
 * UUID is unique, so when the canonical name is missing we look in its
 * directory for the one file whose name ends with it.  *path is replaced by
 * the name found.
 */
static df_errkind open_prefixed(df_store *store, char **path, df_input **in, df_error *err) {
    const char *slash = strrchr(*path, '/');
    const char *base = slash ? slash + 1 : *path;
    size_t dirlen = slash ? (size_t)(slash - *path) : 0;
    char *dir = df_strndup(*path, dirlen);
    if (!dir) return DF_OOM(err);
    df_store_entry *entries = NULL;
    size_t n = 0, blen = strlen(base);
    df_errkind k = store->vt->list(store, dirlen ? dir : "", &entries, &n, NULL);
    const char *match = NULL;
    for (size_t i = 0; k == DF_OK && i < n; i++) {
        size_t l = strlen(entries[i].path);
        if (!entries[i].is_dir && l > blen && strcmp(entries[i].path + l - blen, base) == 0) {
            if (match) { match = NULL; break; } /* ambiguous: do not guess */
            match = entries[i].path;
        }
    }
    df_errkind result = df_error_set(err, DF_ERR_NOT_FOUND, "deletion vector file %s does not exist", *path);
    if (match) {
        df_buf full;
        df_buf_init(&full, 0);
        result = dirlen ? df_buf_printf(&full, err, "%s/%s", dir, match) : df_buf_append_str(&full, match, err);
        if (result == DF_OK) result = store->vt->open_input(store, full.data, in, err);
        if (result == DF_OK) {
            df_free(*path);
            *path = df_buf_take(&full);
        }
        df_buf_free(&full);
    }
    if (k == DF_OK) df_store_entries_free(entries, n);
    df_free(dir);
    return result;
}

static df_errkind load_file(df_store *store, const df__delta_dv *dv, uint64_t **rows, int64_t *nrows, df_error *err) {
    char *path = NULL;
    if (dv->storage == 'u') {
        DF_TRY(df__delta_dv_relative_path(dv->path_or_inline, &path, err));
    } else {
        path = df_strdup(dv->path_or_inline);
        if (!path) return DF_OOM(err);
    }
    if (dv->size_in_bytes < 0 || dv->size_in_bytes > DF_DELTA_MAX_DV_BYTES) {
        df_free(path);
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "deletion vector size %d out of range", dv->size_in_bytes);
    }
    df_input *in = NULL;
    df_errkind k = store->vt->open_input(store, path, &in, err);
    if (k == DF_ERR_NOT_FOUND && dv->storage == 'u') k = open_prefixed(store, &path, &in, err);
    uint64_t off = dv->offset >= 0 ? (uint64_t)dv->offset : 1;
    size_t size = (size_t)dv->size_in_bytes;
    uint8_t *buf = NULL;
    if (k == DF_OK) {
        if (in->size < off || in->size - off < (uint64_t)size + 8) {
            k = df_error_set(err, DF_ERR_DELTA_LOG_FORMAT, "deletion vector file %s is too short", path);
        } else if (!(buf = df_malloc(size + 8))) {
            k = DF_OOM(err);
        } else {
            k = df_input_read_at(in, off, buf, size + 8, err);
        }
    }
    if (k == DF_OK) {
        uint32_t stored_size = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) | ((uint32_t)buf[2] << 8) | buf[3];
        const uint8_t *c = buf + 4 + size;
        uint32_t stored_crc = ((uint32_t)c[0] << 24) | ((uint32_t)c[1] << 16) | ((uint32_t)c[2] << 8) | c[3];
        if (stored_size != size) {
            k = df_error_set(err, DF_ERR_DELTA_LOG_FORMAT, "deletion vector in %s has size %u, the log says %zu", path,
                             stored_size, size);
        } else if ((uint32_t)crc32(0L, buf + 4, (uInt)size) != stored_crc) {
            k = df_error_set(err, DF_ERR_CHECKSUM, "deletion vector in %s fails its CRC-32 check", path);
        } else {
            k = df__delta_dv_decode(buf + 4, size, DF_DELTA_MAX_DV_ROWS, rows, nrows, err);
        }
    }
    if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) df_error_prefix(err, "deletion vector");
    df_free(buf);
    df_input_close(in);
    df_free(path);
    return k;
}

df_errkind df__delta_dv_load(df_store *store, const df__delta_dv *dv, uint64_t **rows, int64_t *nrows, df_error *err) {
    *rows = NULL;
    *nrows = 0;
    df_errkind k;
    switch (dv->storage) {
    case 'i': k = load_inline(dv, rows, nrows, err); break;
    case 'u':
    case 'p': k = load_file(store, dv, rows, nrows, err); break;
    default: DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "unknown deletion vector storage type `%c`", dv->storage);
    }
    if (k != DF_OK) return k;
    if (*nrows != dv->cardinality) {
        df_free(*rows);
        *rows = NULL;
        int64_t n = *nrows;
        *nrows = 0;
        DF_FAIL(err, DF_ERR_DELTA_LOG_FORMAT, "deletion vector holds %lld rows, the log says %lld", (long long)n,
                (long long)dv->cardinality);
    }
    return DF_OK;
}
