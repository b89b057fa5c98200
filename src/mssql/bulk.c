/*
 * Bulk load: INSERT BULK, then one BULK_LOAD message of COLMETADATA, ROW*
 * and DONE, encoded straight from column vectors.
 *
 * TDS rows are row-major while our batches are columnar, so each batch is
 * encoded in two column-at-a-time passes over a per-row cursor array:
 *   1. sizes: every column adds its encoded size for each row (strings
 *      count their UTF-16 units or bytes once and remember them);
 *   2. prefix sums give each row's start; every column then writes its
 *      values at its rows' cursors and advances them.
 * Both passes are tight loops over one source vector with one target
 * format, with no per-value allocation, and the batch lands in one
 * contiguous buffer that is cut into packets by the transport.  All value
 * checks happen before the first byte of a batch is sent, so a conversion
 * error leaves the stream consistent (the caller aborts it).
 *
 * Sending overlaps encoding: encoded batches go to a sender thread through
 * a ring of NBUFS reused buffers (one being encoded, the others queued or
 * on the wire), so batch N+1 is encoded while batch N is written to the
 * socket.  The connection's transport belongs to the sender from the first
 * batch until finish/abort joins it; a send failure is recorded and
 * returned by the next bulk_write or by finish.
 */
#include "mssql/mssql_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

/* Encoded-batch buffers: one being encoded, up to NBUFS - 1 queued or being sent. */
#define NBUFS 3

/* The sender thread and its queue of encoded batches. */
typedef struct sender {
    pthread_t thread;           /* the thread, valid while started */
    bool started;               /* the thread runs (started at the first batch) */
    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t cv;          /* a batch was queued, a buffer was freed, or stop was asked */
    df_buf bufs[NBUFS];         /* encoded batches, a ring reused for the whole load */
    int head;                   /* oldest queued buffer (the one on the wire) */
    int count;                  /* queued buffers; the encoder fills bufs[(head + count) % NBUFS] */
    bool stop;                  /* finish: exit once the queue is empty */
    bool discard;               /* abort: exit without sending what is queued */
    df_errkind failed;          /* first send failure, DF_OK while healthy */
    df_error error;             /* its details */
} sender;

struct df_mssql_bulk {
    df_mssql_conn *c;           /* connection (borrowed; bulk_open set while we live) */
    int32_t ncols;              /* target columns */
    df_mssql_column *cols;      /* copies; names owned */
    df__tds_typeinfo *ti;       /* bulk TYPE_INFO per column */
    df_mssql_nanos_policy nanos;/* nanosecond handling */
    int64_t rows;               /* rows encoded */
    bool stream_open;           /* the BULK_LOAD message has started */
    /* per-batch scratch, grown to the largest batch */
    int64_t cap_rows;           /* capacity of the arrays below */
    uint64_t *cursor;           /* write position per row */
    int64_t *tmp;               /* converted values per row */
    uint32_t **lens;            /* per column: payload bytes per row (strings/binary), lazily allocated */
    bool *nulls;                /* per column: the current batch's vector holds NULLs */
    uint8_t *lenbyte;           /* per column: 1 when values carry a length byte, 0 for fixed types (NOT NULL) */
    uint64_t bytes;             /* payload bytes handed to the transport (COLMETADATA included) */
    sender snd;                 /* the sender thread and its buffers */
};

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/*
 * A value that cannot be converted.  `subkind` (a value conversion kind of
 * df_errkinds.def) is what callers classify by, e.g. the write diagnostics
 * code; `why` is only the message.  The subkinds keep the codes values have
 * always been reported with, loose fits included: a real overflow, a time
 * of day or a 100 ns count that does not fit is integer_out_of_range,
 * non-ASCII varchar text value_too_long, the datetime and smalldatetime
 * ranges value_conversion_unsupported.
 */
static df_errkind conv_err(df_error *err, const df_mssql_bulk *b, int32_t col, int64_t row, df_errkind subkind,
                           const char *why) {
    df_error_set(err, DF_ERR_VALUE_CONVERSION, "column %s row %lld: %s", b->cols[col].name, (long long)row, why);
    df_error_set_phase(err, "write_batch");
    df_error_set_offset(err, row);
    df_error_set_subkind(err, subkind);
    return DF_ERR_VALUE_CONVERSION;
}

static df_errkind type_err(df_error *err, const df_mssql_bulk *b, int32_t col, const df_type *src) {
    df_buf t;
    df_buf_init(&t, 256);
    df_type_display(src, &t, NULL);
    df_error_set(err, DF_ERR_VALUE_CONVERSION, "column %s: a %s source cannot be loaded into this SQL Server type",
                 b->cols[col].name, t.data ? t.data : "?");
    df_buf_free(&t);
    df_error_set_phase(err, "write_batch");
    df_error_set_subkind(err, DF_ERR_VALUE_CONVERSION_UNSUPPORTED);
    return DF_ERR_VALUE_CONVERSION;
}

/* ------------------------------------------------------------------------ */
/* Source conversion helpers                                                 */

/* Loads integer-like sources as int64; returns the first row that does not fit (uint64 > INT64_MAX) or -1. */
static int64_t load_ints(const df_vec *v, int64_t n, int64_t *dst) {
    switch (v->type->id) {
#define LOAD(ID, CT) case ID: { const CT *s = DF_VEC_VALUES(v, const CT); for (int64_t i = 0; i < n; i++) dst[i] = (int64_t)s[i]; return -1; }
    LOAD(DF_TYPE_INT8, int8_t) LOAD(DF_TYPE_INT16, int16_t) LOAD(DF_TYPE_INT32, int32_t) LOAD(DF_TYPE_INT64, int64_t)
    LOAD(DF_TYPE_UINT8, uint8_t) LOAD(DF_TYPE_UINT16, uint16_t) LOAD(DF_TYPE_UINT32, uint32_t)
#undef LOAD
    case DF_TYPE_UINT64: {
        const uint64_t *s = DF_VEC_VALUES(v, const uint64_t);
        int64_t bad = -1;
        for (int64_t i = 0; i < n; i++) {
            dst[i] = (int64_t)s[i];
            if (s[i] > INT64_MAX && bad < 0 && df_vec_is_valid(v, i)) bad = i;
        }
        return bad;
    }
    case DF_TYPE_BOOL:
        for (int64_t i = 0; i < n; i++) dst[i] = df_vec_bool(v, i);
        return -1;
    default:
        return -1;
    }
}

static bool is_int_source(df_type_id id) {
    return (id >= DF_TYPE_INT8 && id <= DF_TYPE_UINT64) || id == DF_TYPE_BOOL;
}

/* IEEE half → float. */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) { mant <<= 1; exp--; }
            bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Floor division and modulo for negative values. */
static inline int64_t floor_div(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
static inline int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

/*
 * Converts time-unit values to 100 ns ticks with the nanosecond policy.
 * Returns the first failing row or -1; *subkind and *why say what failed.
 */
static int64_t to_ticks100(const df_vec *v, df_time_unit unit, int64_t n, df_mssql_nanos_policy pol, int64_t *dst,
                           df_errkind *subkind, const char **why) {
    bool is32 = v->type->id == DF_TYPE_TIME32 || v->type->id == DF_TYPE_DATE32;
    const int32_t *s32 = is32 ? DF_VEC_VALUES(v, const int32_t) : NULL;
    const int64_t *s64 = is32 ? NULL : DF_VEC_VALUES(v, const int64_t);
    int64_t mult = unit == DF_UNIT_SECOND ? 10000000 : unit == DF_UNIT_MILLI ? 10000 : unit == DF_UNIT_MICRO ? 10 : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = is32 ? s32[i] : s64[i];
        if (mult) {
            if (__builtin_mul_overflow(x, mult, &dst[i]) && df_vec_is_valid(v, i)) {
                *subkind = DF_ERR_INTEGER_OUT_OF_RANGE;
                *why = "value out of range";
                return i;
            }
            continue;
        }
        int64_t q = floor_div(x, 100), r = floor_mod(x, 100);
        if (r != 0) {
            if (pol == DF_MSSQL_NANOS_REJECT) {
                if (df_vec_is_valid(v, i)) {
                    *subkind = DF_ERR_LOSSY_CONVERSION;
                    *why = "nanoseconds below 100 ns would be lost (nanosecond policy reject)";
                    return i;
                }
            } else if (pol == DF_MSSQL_NANOS_ROUND && r >= 50) {
                q++;
            }
        }
        dst[i] = q;
    }
    return -1;
}

/* Rounds 100 ns ticks to 10^-scale s units, half up on the Euclidean remainder. */
static inline int64_t round_scale(int64_t t, unsigned scale) {
    if (scale >= 7) return t;
    int64_t q = (int64_t)df__tds_pow10_u64[7 - scale];
    return floor_div(t + q / 2, q);
}

/* Parses a fixed time-zone name into an offset in minutes; false for named zones. */
static bool tz_offset(const char *tz, int *minutes) {
    if (!tz || !*tz || !strcmp(tz, "UTC") || !strcmp(tz, "Z") || !strcmp(tz, "Etc/UTC") || !strcmp(tz, "GMT") ||
        !strcmp(tz, "Etc/GMT") || !strcmp(tz, "+00:00") || !strcmp(tz, "utc")) {
        *minutes = 0;
        return true;
    }
    if ((tz[0] != '+' && tz[0] != '-') || strlen(tz) < 3) return false;
    int h, m = 0;
    if (strlen(tz) == 6 && tz[3] == ':') { if (sscanf(tz + 1, "%2d:%2d", &h, &m) != 2) return false; }
    else if (strlen(tz) == 5) { if (sscanf(tz + 1, "%2d%2d", &h, &m) != 2) return false; }
    else if (strlen(tz) == 3) { if (sscanf(tz + 1, "%2d", &h) != 1) return false; }
    else return false;
    int off = h * 60 + m;
    if (off > 840 || m > 59) return false;
    *minutes = tz[0] == '-' ? -off : off;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Scratch                                                                   */

static df_errkind ensure_rows(df_mssql_bulk *b, int64_t n, df_error *err) {
    if (n <= b->cap_rows) return DF_OK;
    int64_t cap = DF_MAX(n, b->cap_rows * 2);
    uint64_t *c = df_realloc(b->cursor, (size_t)cap * sizeof *c);
    if (!c) return DF_OOM(err);
    b->cursor = c;
    int64_t *t = df_realloc(b->tmp, (size_t)cap * sizeof *t);
    if (!t) return DF_OOM(err);
    b->tmp = t;
    for (int32_t j = 0; j < b->ncols; j++) {
        if (!b->lens[j]) continue;
        uint32_t *l = df_realloc(b->lens[j], (size_t)cap * sizeof *l);
        if (!l) return DF_OOM(err);
        b->lens[j] = l;
    }
    b->cap_rows = cap;
    return DF_OK;
}

static df_errkind col_lens(df_mssql_bulk *b, int32_t j, df_error *err) {
    if (b->lens[j]) return DF_OK;
    b->lens[j] = df_malloc((size_t)(b->cap_rows ? b->cap_rows : 1) * sizeof(uint32_t));
    return b->lens[j] ? DF_OK : DF_OOM(err);
}

/* ------------------------------------------------------------------------ */
/* Pass 1: sizes                                                             */

static bool is_char_target(df_mssql_sqltype t) {
    return t == DF_MSSQL_CHAR || t == DF_MSSQL_VARCHAR || t == DF_MSSQL_NCHAR || t == DF_MSSQL_NVARCHAR;
}
static bool is_bin_target(df_mssql_sqltype t) { return t == DF_MSSQL_BINARY || t == DF_MSSQL_VARBINARY; }

static bool utf8_collation(const df__tds_typeinfo *ti) { return (df_load_le32(ti->collation) >> 26) & 1; }

/* Variable-length column: payload lengths (bytes on the wire) and limits. */
static df_errkind size_varlen(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, df_error *err) {
    const df_mssql_column *col = &b->cols[j];
    const df__tds_typeinfo *ti = &b->ti[j];
    DF_TRY(col_lens(b, j, err));
    uint32_t *lens = b->lens[j];
    bool national = col->type == DF_MSSQL_NCHAR || col->type == DF_MSSQL_NVARCHAR;
    bool ascii_only = col->type == DF_MSSQL_CHAR || col->type == DF_MSSQL_VARCHAR ? !utf8_collation(ti) : false;
    df_type_id id = v->type->id;
    bool fixed_src = id == DF_TYPE_FIXED_BINARY;
    if (is_char_target(col->type) && id != DF_TYPE_UTF8) return type_err(err, b, j, v->type);
    if (is_bin_target(col->type) && id != DF_TYPE_BINARY && id != DF_TYPE_FIXED_BINARY) return type_err(err, b, j, v->type);
    uint64_t limit = col->length < 0 ? (uint64_t)0x7FFFFFFF : (uint64_t)col->length;
    bool plp = ti->plp;
    int32_t width = fixed_src ? v->type->byte_width : 0;
    for (int64_t i = 0; i < n; i++) {
        bool valid = df_vec_is_valid(v, i);
        if (!valid) {
            if (!col->nullable) return conv_err(err, b, j, b->rows + i, DF_ERR_NULL_IN_NON_NULLABLE_COLUMN, "NULL in a NOT NULL column");
            lens[i] = UINT32_MAX;
            b->cursor[i] += plp ? 8 : 2;
            continue;
        }
        int32_t len;
        const uint8_t *s = fixed_src ? v->values->data + (size_t)(v->offset + i) * (size_t)width : df_vec_bytes(v, i, &len);
        if (fixed_src) len = width;
        uint64_t units = (uint64_t)len, bytes = (uint64_t)len;
        if (national) {
            size_t u = df__tds_utf16_len(s, (size_t)len);
            if (u == SIZE_MAX) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_CONVERSION_UNSUPPORTED, "invalid UTF-8");
            units = u;
            bytes = 2 * (uint64_t)u;
        } else if (ascii_only) {
            for (int32_t k = 0; k < len; k++)
                if (s[k] & 0x80) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_TOO_LONG, "non-ASCII text in a varchar column without a UTF-8 collation");
        }
        if (units > limit) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_TOO_LONG, "value too long for the column");
        if (bytes > 0x7FFFFFF0u) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_CONVERSION_UNSUPPORTED, "value larger than 2 GiB");
        lens[i] = (uint32_t)bytes;
        b->cursor[i] += plp ? 8 + (bytes ? 4 + bytes : 0) + 4 : 2 + bytes;
    }
    return DF_OK;
}

/* Encoded size of a non-NULL value of a fixed-size target (length byte if any + body), 0 for strings/binary. */
static uint64_t fixed_size(const df_mssql_bulk *b, int32_t j) {
    if (is_char_target(b->cols[j].type) || is_bin_target(b->cols[j].type)) return 0;
    return b->lenbyte[j] + (uint64_t)b->ti[j].max_len;
}

/* True when the first n values of v include a NULL (a validity bitmap with all bits set holds none). */
static bool vec_has_nulls(const df_vec *v, int64_t n) {
    return v->validity && df_bitmap_count(v->validity->data, v->offset, n) != n;
}

/*
 * Adds column j's per-row sizes for strings/binary and for fixed-size
 * columns holding NULLs (1 byte for a NULL, fixed_size otherwise, taken
 * from the validity bit without a branch).  NULL-free fixed-size columns
 * are not visited: their constant size is added once per row by the
 * caller.
 */
static df_errkind size_column(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, df_error *err) {
    const df_mssql_column *col = &b->cols[j];
    if (is_char_target(col->type) || is_bin_target(col->type)) return size_varlen(b, j, v, n, err);
    if (!col->nullable) {
        for (int64_t i = 0; i < n; i++)
            if (!df_vec_is_valid(v, i)) return conv_err(err, b, j, b->rows + i, DF_ERR_NULL_IN_NON_NULLABLE_COLUMN, "NULL in a NOT NULL column");
    }
    uint64_t extra = fixed_size(b, j) - 1;
    const uint8_t *bits = v->validity->data;
    uint64_t *cur = b->cursor;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)(v->offset + i);
        cur[i] += 1 + extra * ((bits[k >> 3] >> (k & 7)) & 1u);
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Pass 2: values                                                            */

/* Writes a BYTELEN value: length byte + body. */
#define OUT(i) (base + b->cursor[i])

/* The smallest and largest value of a source integer type (bool: 0..1). */
static void int_source_range(df_type_id id, int64_t *lo, int64_t *hi) {
    switch (id) {
    case DF_TYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case DF_TYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case DF_TYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    case DF_TYPE_UINT8: *lo = 0; *hi = UINT8_MAX; return;
    case DF_TYPE_UINT16: *lo = 0; *hi = UINT16_MAX; return;
    case DF_TYPE_UINT32: *lo = 0; *hi = UINT32_MAX; return;
    case DF_TYPE_BOOL: *lo = 0; *hi = 1; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return; /* int64, and uint64 after load_ints' own check */
    }
}

/*
 * Emits "W, W little-endian bytes" per row (nulls as a zero length byte).
 * W is a constant at each expansion, so the store is one move and the
 * loops carry no per-value type or width branches.
 */
#define EMIT_INTS(W)                                                          \
    do {                                                                      \
        if (!b->lenbyte[j]) { /* fixed type of a NOT NULL column: no NULLs, no length byte */ \
            for (int64_t i = 0; i < n; i++) {                                 \
                memcpy(base + cur[i], &t[i], (W));                            \
                cur[i] += (W);                                                \
            }                                                                 \
        } else if (!b->nulls[j]) {                                            \
            for (int64_t i = 0; i < n; i++) {                                 \
                uint8_t *o = base + cur[i];                                   \
                o[0] = (W);                                                   \
                memcpy(o + 1, &t[i], (W)); /* little-endian host */           \
                cur[i] += 1 + (W);                                            \
            }                                                                 \
        } else {                                                              \
            for (int64_t i = 0; i < n; i++) {                                 \
                uint8_t *o = base + cur[i];                                   \
                if (!df_vec_is_valid(v, i)) {                                 \
                    o[0] = 0;                                                 \
                    cur[i] += 1;                                              \
                    continue;                                                 \
                }                                                             \
                o[0] = (W);                                                   \
                memcpy(o + 1, &t[i], (W));                                    \
                cur[i] += 1 + (W);                                            \
            }                                                                 \
        }                                                                     \
    } while (0)

/* bool → bit/tinyint: the value bit straight from the bitmap (0 and 1 fit both targets). */
static df_errkind write_bools(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base) {
    const uint8_t *bits = v->values->data;
    uint64_t *cur = b->cursor;
    bool nulls = b->nulls[j];
    unsigned h = b->lenbyte[j];
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = base + cur[i];
        uint64_t k = (uint64_t)(v->offset + i);
        if (nulls && !df_vec_is_valid(v, i)) {
            o[0] = 0;
            cur[i] += 1;
            continue;
        }
        o[0] = 1; /* the length byte, overwritten by the value for the fixed type */
        o[h] = (bits[k >> 3] >> (k & 7)) & 1u;
        cur[i] += 1 + h;
    }
    return DF_OK;
}

static df_errkind write_ints(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    const df_mssql_column *col = &b->cols[j];
    if (!is_int_source(v->type->id)) return type_err(err, b, j, v->type);
    if (v->type->id == DF_TYPE_BOOL && b->ti[j].max_len == 1) return write_bools(b, j, v, n, base);
    /* int64 sources are read in place; the others widen into the scratch first. */
    const int64_t *t = b->tmp;
    if (v->type->id == DF_TYPE_INT64) {
        t = DF_VEC_VALUES(v, const int64_t);
    } else {
        int64_t bad = load_ints(v, n, b->tmp);
        if (bad >= 0) return conv_err(err, b, j, b->rows + bad, DF_ERR_INTEGER_OUT_OF_RANGE, "integer out of range");
    }
    unsigned w = b->ti[j].max_len;
    int64_t lo = w == 1 ? 0 : w == 2 ? INT16_MIN : w == 4 ? INT32_MIN : INT64_MIN;
    int64_t hi = w == 1 ? 255 : w == 2 ? INT16_MAX : w == 4 ? INT32_MAX : INT64_MAX;
    if (col->type == DF_MSSQL_BIT) { lo = 0; hi = 1; }
    /* Range checks only when the source type can exceed the target (a separate, branch-light pass). */
    int64_t slo, shi;
    int_source_range(v->type->id, &slo, &shi);
    if (slo < lo || shi > hi) {
        for (int64_t i = 0; i < n; i++)
            if ((t[i] < lo || t[i] > hi) && df_vec_is_valid(v, i))
                return conv_err(err, b, j, b->rows + i, DF_ERR_INTEGER_OUT_OF_RANGE, "integer out of range for the column");
    }
    uint64_t *cur = b->cursor;
    switch (w) {
    case 1: EMIT_INTS(1); break;
    case 2: EMIT_INTS(2); break;
    case 4: EMIT_INTS(4); break;
    default: EMIT_INTS(8); break;
    }
    return DF_OK;
}

#undef EMIT_INTS

/* Loads float-like sources as doubles into dst (reusing the int64 scratch). */
static void load_doubles(df_mssql_bulk *b, const df_vec *v, int64_t n, double *dst) {
    switch (v->type->id) {
    case DF_TYPE_FLOAT64: memcpy(dst, DF_VEC_VALUES(v, const double), (size_t)n * sizeof *dst); return;
    case DF_TYPE_FLOAT32: { const float *s = DF_VEC_VALUES(v, const float); for (int64_t i = 0; i < n; i++) dst[i] = s[i]; return; }
    case DF_TYPE_FLOAT16: { const uint16_t *s = DF_VEC_VALUES(v, const uint16_t); for (int64_t i = 0; i < n; i++) dst[i] = half_to_float(s[i]); return; }
    default: {
        load_ints(v, n, b->tmp);
        const int64_t *s = b->tmp;
        for (int64_t i = 0; i < n; i++) dst[i] = (double)s[i];
        return;
    }
    }
}

static df_errkind write_floats(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    df_type_id id = v->type->id;
    bool real = b->ti[j].max_len == 4;
    if (id != DF_TYPE_FLOAT16 && id != DF_TYPE_FLOAT32 && id != DF_TYPE_FLOAT64 && !is_int_source(id))
        return type_err(err, b, j, v->type);
    /* int64 and double have the same size: the scratch holds the doubles (int sources convert in place). */
    double *d = (double *)(void *)b->tmp;
    const double *src = id == DF_TYPE_FLOAT64 ? DF_VEC_VALUES(v, const double) : d;
    if (id != DF_TYPE_FLOAT64) load_doubles(b, v, n, d);
    /* Checks first (NaN/infinity, real's range), then a store loop without them. */
    for (int64_t i = 0; i < n; i++) {
        bool bad = !isfinite(src[i]) || (real && !isfinite((float)src[i]));
        if (bad && df_vec_is_valid(v, i))
            return isfinite(src[i])
                       ? conv_err(err, b, j, b->rows + i, DF_ERR_INTEGER_OUT_OF_RANGE, "float out of range for real")
                       : conv_err(err, b, j, b->rows + i, DF_ERR_NON_FINITE_FLOAT, "NaN or infinite float");
    }
    uint64_t *cur = b->cursor;
    bool nulls = b->nulls[j];
    unsigned h = b->lenbyte[j]; /* 0: fixed FLT4/FLT8 of a NOT NULL column */
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = base + cur[i];
        if (nulls && !df_vec_is_valid(v, i)) {
            o[0] = 0;
            cur[i] += 1;
        } else if (real) {
            float f = (float)src[i];
            o[0] = 4;
            memcpy(o + h, &f, 4);
            cur[i] += h + 4;
        } else {
            o[0] = 8;
            memcpy(o + h, &src[i], 8);
            cur[i] += h + 8;
        }
    }
    return DF_OK;
}

/* Loads a decimal source value as an unscaled i128 at source scale; false if a decimal256 does not fit. */
static bool load_dec(const df_vec *v, int64_t i, df_i128 *out) {
    if (v->type->id == DF_TYPE_DECIMAL128) {
        memcpy(out, DF_VEC_VALUES(v, const uint8_t) + (size_t)i * 16, 16);
        return true;
    }
    const uint8_t *p = DF_VEC_VALUES(v, const uint8_t) + (size_t)i * 32;
    df_i128 lo;
    memcpy(&lo, p, 16);
    uint8_t ext = lo < 0 ? 0xFF : 0x00;
    for (int k = 16; k < 32; k++)
        if (p[k] != ext) return false;
    *out = lo;
    return true;
}

static df_errkind write_decimals(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    const df__tds_typeinfo *ti = &b->ti[j];
    df_type_id id = v->type->id;
    bool dec_src = id == DF_TYPE_DECIMAL128 || id == DF_TYPE_DECIMAL256;
    if (!dec_src && !is_int_source(id)) return type_err(err, b, j, v->type);
    bool money = ti->type == TDS_T_MONEYN || ti->type == TDS_T_MONEY || ti->type == TDS_T_MONEY4;
    unsigned h = b->lenbyte[j]; /* 0: fixed MONEY/MONEY4 of a NOT NULL column */
    int tscale = money ? 4 : ti->scale;
    int sscale = dec_src ? v->type->scale : 0;
    df_i128 limit = money ? (ti->max_len == 4 ? (df_i128)INT32_MAX + 1 : (df_i128)INT64_MAX + 1) : df__tds_pow10(ti->precision);
    df_i128 up = sscale < tscale ? df__tds_pow10(tscale - sscale) : 1;
    df_i128 down = sscale > tscale ? df__tds_pow10(sscale - tscale) : 1;
    if (!dec_src) load_ints(v, n, b->tmp);
    unsigned mag = money ? 0 : ti->max_len - 1;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = OUT(i);
        if (!df_vec_is_valid(v, i)) { o[0] = 0; b->cursor[i] += 1; continue; }
        df_i128 x;
        if (dec_src) {
            if (!load_dec(v, i, &x)) return conv_err(err, b, j, b->rows + i, DF_ERR_DECIMAL_OUT_OF_RANGE, "decimal out of range for the column");
        } else {
            x = b->tmp[i];
        }
        if (down != 1) {
            if (x % down != 0) return conv_err(err, b, j, b->rows + i, DF_ERR_DECIMAL_OUT_OF_RANGE, "decimal has more fractional digits than the column scale");
            x /= down;
        }
        if (up != 1 && __builtin_mul_overflow(x, up, &x)) return conv_err(err, b, j, b->rows + i, DF_ERR_DECIMAL_OUT_OF_RANGE, "decimal out of range for the column");
        if (x >= limit || x < -limit || (money && x == -limit && 0))
            return conv_err(err, b, j, b->rows + i, DF_ERR_DECIMAL_OUT_OF_RANGE, "decimal out of range for the column");
        if (money) {
            if (ti->max_len == 4) {
                o[0] = 4;
                df_store_le32(o + h, (uint32_t)(int32_t)x);
                b->cursor[i] += h + 4;
            } else {
                uint64_t u = (uint64_t)(int64_t)x;
                o[0] = 8;
                df_store_le32(o + h, (uint32_t)(u >> 32));
                df_store_le32(o + h + 4, (uint32_t)u);
                b->cursor[i] += h + 8;
            }
            continue;
        }
        df_u128 m = x < 0 ? (df_u128)0 - (df_u128)x : (df_u128)x;
        o[0] = (uint8_t)(1 + mag);
        o[1] = x >= 0;
        /* The magnitude's low `mag` bytes, little-endian like the host; fixed sizes become single stores. */
        switch (mag) {
        case 4: { uint32_t u = (uint32_t)m; memcpy(o + 2, &u, 4); break; }
        case 8: { uint64_t u = (uint64_t)m; memcpy(o + 2, &u, 8); break; }
        case 12: { uint64_t u = (uint64_t)m; uint32_t h = (uint32_t)(m >> 64); memcpy(o + 2, &u, 8); memcpy(o + 10, &h, 4); break; }
        case 16: memcpy(o + 2, &m, 16); break;
        default: for (unsigned k = 0; k < mag; k++) { o[2 + k] = (uint8_t)m; m >>= 8; } break;
        }
        b->cursor[i] += 2 + mag;
    }
    return DF_OK;
}

static inline void put_uint(uint8_t *o, uint64_t v, unsigned n) {
    for (unsigned k = 0; k < n; k++) { o[k] = (uint8_t)v; v >>= 8; }
}

/*
 * Date/time targets.  Sources become 100 ns ticks since 1970-01-01 (or
 * days for date32) in b->tmp first, then each target rounds and splits.
 */
static df_errkind temporal_ticks(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, bool *days_only, df_error *err) {
    df_errkind subkind = DF_ERR_INTEGER_OUT_OF_RANGE;
    const char *why = "value out of range";
    int64_t bad = -1;
    df_type_id id = v->type->id;
    *days_only = false;
    if (id == DF_TYPE_DATE32) {
        const int32_t *s = DF_VEC_VALUES(v, const int32_t);
        for (int64_t i = 0; i < n; i++) b->tmp[i] = s[i];
        *days_only = true;
    } else if (id == DF_TYPE_DATE64) {
        bad = to_ticks100(v, DF_UNIT_MILLI, n, b->nanos, b->tmp, &subkind, &why);
    } else if (id == DF_TYPE_TIMESTAMP || id == DF_TYPE_TIME32 || id == DF_TYPE_TIME64) {
        bad = to_ticks100(v, v->type->unit, n, b->nanos, b->tmp, &subkind, &why);
    } else {
        return type_err(err, b, j, v->type);
    }
    if (bad >= 0) return conv_err(err, b, j, b->rows + bad, subkind, why);
    return DF_OK;
}

#define TICKS_PER_DAY 864000000000LL
#define MAX_DAYS 3652058LL

static df_errkind write_temporal(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    const df_mssql_column *col = &b->cols[j];
    df_type_id id = v->type->id;
    bool days_only;
    bool time_target = col->type == DF_MSSQL_TIME;
    if (time_target && id != DF_TYPE_TIME32 && id != DF_TYPE_TIME64) return type_err(err, b, j, v->type);
    if (!time_target && (id == DF_TYPE_TIME32 || id == DF_TYPE_TIME64)) return type_err(err, b, j, v->type);
    DF_TRY(temporal_ticks(b, j, v, n, &days_only, err));
    int off_min = 0;
    if (col->type == DF_MSSQL_DATETIMEOFFSET && id == DF_TYPE_TIMESTAMP && !tz_offset(v->type->timezone, &off_min)) {
        df_error_set(err, DF_ERR_UNSUPPORTED, "column %s: time zone %s is not a fixed offset (named zones are not supported yet)",
                     col->name, v->type->timezone);
        return DF_ERR_UNSUPPORTED;
    }
    unsigned scale = b->ti[j].scale, tl = df__tds_time_len(scale);
    unsigned h = b->lenbyte[j]; /* 0: fixed DATETIME/DATETIM4 of a NOT NULL column */
    int64_t per_day_scaled = 86400LL * (int64_t)df__tds_pow10_u64[scale];
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = OUT(i);
        if (!df_vec_is_valid(v, i)) { o[0] = 0; b->cursor[i] += 1; continue; }
        int64_t t = b->tmp[i];
        switch (col->type) {
        case DF_MSSQL_DATE: {
            int64_t days = days_only ? t : floor_div(t, TICKS_PER_DAY);
            if (!days_only && floor_mod(t, TICKS_PER_DAY) != 0) return conv_err(err, b, j, b->rows + i, DF_ERR_LOSSY_CONVERSION, "value has a time of day but the column is date");
            days += TDS_DAYS_0001_TO_1970;
            if (days < 0 || days > MAX_DAYS) return conv_err(err, b, j, b->rows + i, DF_ERR_TIMESTAMP_OUT_OF_RANGE, "date out of range");
            o[0] = 3;
            put_uint(o + 1, (uint64_t)days, 3);
            b->cursor[i] += 4;
            break;
        }
        case DF_MSSQL_TIME: {
            int64_t s = round_scale(t, scale);
            if (s < 0 || s >= per_day_scaled) return conv_err(err, b, j, b->rows + i, DF_ERR_INTEGER_OUT_OF_RANGE, "time of day out of range");
            o[0] = (uint8_t)tl;
            put_uint(o + 1, (uint64_t)s, tl);
            b->cursor[i] += 1 + tl;
            break;
        }
        case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET: {
            int64_t s = days_only ? 0 : round_scale(t, scale);
            int64_t days = days_only ? t : floor_div(s, per_day_scaled);
            int64_t tod = days_only ? 0 : floor_mod(s, per_day_scaled);
            days += TDS_DAYS_0001_TO_1970;
            if (days < 0 || days > MAX_DAYS) return conv_err(err, b, j, b->rows + i, DF_ERR_TIMESTAMP_OUT_OF_RANGE, "timestamp out of range");
            bool dto = col->type == DF_MSSQL_DATETIMEOFFSET;
            o[0] = (uint8_t)(tl + 3 + (dto ? 2 : 0));
            put_uint(o + 1, (uint64_t)tod, tl);
            put_uint(o + 1 + tl, (uint64_t)days, 3);
            if (dto) df_store_le16(o + 4 + tl, (uint16_t)(int16_t)off_min);
            b->cursor[i] += 1 + tl + 3 + (dto ? 2 : 0);
            break;
        }
        case DF_MSSQL_DATETIME: {
            /* Legacy rounding: to the millisecond (half up), then to 1/300 s (half up). */
            int64_t ms = days_only ? t * 86400000LL : floor_div(t + 5000, 10000);
            int64_t days = floor_div(ms, 86400000LL), msd = floor_mod(ms, 86400000LL);
            int64_t frag = (msd * 300 + 500) / 1000;
            if (frag >= 300LL * 86400) { frag -= 300LL * 86400; days++; }
            days += TDS_DAYS_0001_TO_1970 - TDS_DAYS_0001_TO_1900;
            if (days < -53690 || days > 2958463) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_CONVERSION_UNSUPPORTED, "value out of the datetime range (1753-01-01 to 9999-12-31)");
            o[0] = 8; /* the length byte, overwritten by the value for the fixed type */
            df_store_le32(o + h, (uint32_t)(int32_t)days);
            df_store_le32(o + h + 4, (uint32_t)frag);
            b->cursor[i] += h + 8;
            break;
        }
        case DF_MSSQL_SMALLDATETIME: {
            int64_t mins = days_only ? t * 1440 : floor_div(t + 300000000LL, 600000000LL);
            int64_t days = floor_div(mins, 1440), m = floor_mod(mins, 1440);
            days += TDS_DAYS_0001_TO_1970 - TDS_DAYS_0001_TO_1900;
            if (days < 0 || days > 65535) return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_CONVERSION_UNSUPPORTED, "value out of the smalldatetime range");
            o[0] = 4;
            df_store_le16(o + h, (uint16_t)days);
            df_store_le16(o + h + 2, (uint16_t)m);
            b->cursor[i] += h + 4;
            break;
        }
        default:
            return df_error_set(err, DF_ERR_INTERNAL, "not a temporal target");
        }
    }
    return DF_OK;
}

static df_errkind write_guids(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    df_type_id id = v->type->id;
    if (!(id == DF_TYPE_FIXED_BINARY && v->type->byte_width == 16) && id != DF_TYPE_UTF8) return type_err(err, b, j, v->type);
    static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = OUT(i);
        if (!df_vec_is_valid(v, i)) { o[0] = 0; b->cursor[i] += 1; continue; }
        o[0] = 16;
        if (id == DF_TYPE_UTF8) {
            int32_t len;
            const uint8_t *s = df_vec_bytes(v, i, &len);
            if (!df__tds_parse_guid((const char *)s, (size_t)len, o + 1))
                return conv_err(err, b, j, b->rows + i, DF_ERR_VALUE_CONVERSION_UNSUPPORTED, "text is not a GUID");
        } else {
            const uint8_t *s = v->values->data + (size_t)(v->offset + i) * 16;
            for (int k = 0; k < 16; k++) o[1 + order[k]] = s[k];
        }
        b->cursor[i] += 17;
    }
    return DF_OK;
}

static df_errkind write_varlen(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base) {
    const df_mssql_column *col = &b->cols[j];
    bool national = col->type == DF_MSSQL_NCHAR || col->type == DF_MSSQL_NVARCHAR;
    bool plp = b->ti[j].plp;
    bool fixed_src = v->type->id == DF_TYPE_FIXED_BINARY;
    int32_t width = fixed_src ? v->type->byte_width : 0;
    const uint32_t *lens = b->lens[j];
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o = OUT(i);
        uint32_t bytes = lens[i];
        if (bytes == UINT32_MAX) {
            memset(o, 0xFF, plp ? 8 : 2);
            b->cursor[i] += plp ? 8 : 2;
            continue;
        }
        int32_t len;
        const uint8_t *s = fixed_src ? v->values->data + (size_t)(v->offset + i) * (size_t)width : df_vec_bytes(v, i, &len);
        if (fixed_src) len = width;
        uint8_t *d;
        if (plp) {
            df_store_le64(o, 0xFFFFFFFFFFFFFFFEULL); /* unknown length: always, as SQL Server wants in bulk */
            if (bytes) {
                df_store_le32(o + 8, bytes);
                d = o + 12;
            } else {
                d = o + 8;
            }
        } else {
            df_store_le16(o, (uint16_t)bytes);
            d = o + 2;
        }
        if (national) df__tds_utf8_to_utf16le(s, (size_t)len, d);
        else if (len) memcpy(d, s, (size_t)len);
        d += bytes;
        if (plp) {
            memset(d, 0, 4);
            d += 4;
        }
        b->cursor[i] = (uint64_t)(d - base);
    }
    return DF_OK;
}

static df_errkind write_column(df_mssql_bulk *b, int32_t j, const df_vec *v, int64_t n, uint8_t *base, df_error *err) {
    switch (b->cols[j].type) {
    case DF_MSSQL_BIT: case DF_MSSQL_TINYINT: case DF_MSSQL_SMALLINT: case DF_MSSQL_INT: case DF_MSSQL_BIGINT:
        return write_ints(b, j, v, n, base, err);
    case DF_MSSQL_REAL: case DF_MSSQL_FLOAT:
        return write_floats(b, j, v, n, base, err);
    case DF_MSSQL_DECIMAL: case DF_MSSQL_NUMERIC: case DF_MSSQL_MONEY: case DF_MSSQL_SMALLMONEY:
        return write_decimals(b, j, v, n, base, err);
    case DF_MSSQL_DATE: case DF_MSSQL_TIME: case DF_MSSQL_DATETIME2: case DF_MSSQL_DATETIMEOFFSET:
    case DF_MSSQL_DATETIME: case DF_MSSQL_SMALLDATETIME:
        return write_temporal(b, j, v, n, base, err);
    case DF_MSSQL_UNIQUEIDENTIFIER:
        return write_guids(b, j, v, n, base, err);
    default:
        return write_varlen(b, j, v, n, base);
    }
}

#undef OUT

/*
 * After a send failed mid-load: a server that rejects a bulk stream may
 * answer ERROR + DONE and close before reading the rest, so the reply (if
 * any arrived) tells the real cause.  Reads it with a short timeout and
 * returns DF_ERR_MSSQL_SERVER_ERROR when it holds an error, else `k`.
 */
static df_errkind salvage_server_error(df_mssql_conn *c, df_errkind k, df_error *err) {
    df__tds_io_set_timeout(c->io, 500);
    df__tds_io_set_cancel(c->io, NULL);
    uint8_t type, status;
    df__tds_resp resp;
    df__tds_resp_init(&resp, NULL);
    if (df__tds_io_read_message(c->io, &type, &status, &c->msg, TDS_MAX_MESSAGE, NULL) == DF_OK && type == TDS_PKT_REPLY &&
        df__tds_parse_tokens((const uint8_t *)c->msg.data, c->msg.len, &resp, NULL) == DF_OK && resp.nerrors)
        k = df__mssql_server_error(&resp, DF_ERR_MSSQL_SERVER_ERROR, err);
    c->dead = true;
    return k;
}

/* ------------------------------------------------------------------------ */
/* Sender thread                                                             */

/* Sends queued batches in order until stopped; the first failure empties the queue and ends the thread. */
static void *sender_main(void *arg) {
    df_mssql_bulk *b = arg;
    sender *q = &b->snd;
    pthread_setname_np(pthread_self(), "df-bulk-send"); /* names the thread in profiles and traces */
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->count == 0 && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
        if (q->count == 0 || q->discard) break;
        df_buf *buf = &q->bufs[q->head];
        pthread_mutex_unlock(&q->mu);
        df_error e;
        memset(&e, 0, sizeof e);
        df_errkind k = df__tds_io_stream_write(b->c->io, buf->data, buf->len, &e);
        pthread_mutex_lock(&q->mu);
        q->head = (q->head + 1) % NBUFS;
        q->count--;
        if (k != DF_OK) {
            q->failed = k;
            df_error_move(&q->error, &e);
            q->count = 0;
        }
        pthread_cond_broadcast(&q->cv);
        if (k != DF_OK) break;
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Stops the sender (after it sent the queue, or at once when `discard`) and joins it. */
static void sender_join(df_mssql_bulk *b, bool discard) {
    sender *q = &b->snd;
    if (!q->started) return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    q->discard = discard;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    q->started = false;
}

/*
 * After the sender failed (and was joined): the stream is broken.  Returns
 * the send error, or the server's own error when it answered before
 * closing (see salvage_server_error).
 */
static df_errkind sender_failure(df_mssql_bulk *b, df_error *err) {
    sender *q = &b->snd;
    df_errkind k = q->failed;
    if (err) df_error_move(err, &q->error);
    else df_error_clear(&q->error);
    b->stream_open = false;
    if (k == DF_ERR_MSSQL_CONNECTION_LOST) return salvage_server_error(b->c, k, err);
    return df__mssql_check_dead(b->c, k);
}

/* Waits for a free buffer; returns it (emptied), or NULL when the sender failed. */
static df_buf *sender_slot(df_mssql_bulk *b) {
    sender *q = &b->snd;
    pthread_mutex_lock(&q->mu);
    while (q->count == NBUFS && q->failed == DF_OK) pthread_cond_wait(&q->cv, &q->mu);
    df_buf *buf = q->failed == DF_OK ? &q->bufs[(q->head + q->count) % NBUFS] : NULL;
    pthread_mutex_unlock(&q->mu);
    if (buf) df_buf_reset(buf);
    return buf;
}

/* Queues the buffer sender_slot returned, starting the thread at the first batch. */
static df_errkind sender_push(df_mssql_bulk *b, df_error *err) {
    sender *q = &b->snd;
    if (!q->started) {
        if (pthread_create(&q->thread, NULL, sender_main, b) != 0)
            return df_error_set(err, DF_ERR_INTERNAL, "cannot start the bulk-load sender thread");
        q->started = true;
    }
    pthread_mutex_lock(&q->mu);
    q->count++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

/*
 * Row starts (cursor[i], just past each row's ROW token) and the batch's
 * encoded size.  When every column is fixed-size and NULL-free in this
 * batch, rows have one size and the starts are multiples of it; otherwise
 * each column adds its per-row sizes and a prefix sum places the rows.
 */
static df_errkind place_rows(df_mssql_bulk *b, df_batch *batch, int64_t n, df_buf *out, df_error *err) {
    uint64_t row = 1; /* ROW token */
    bool uniform = true;
    for (int32_t j = 0; j < b->ncols; j++) {
        const df_vec *v = batch->cols[j];
        if (v->length < n) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "column %d is shorter than the batch", j);
        b->nulls[j] = vec_has_nulls(v, n);
        uint64_t f = fixed_size(b, j);
        uniform = uniform && f && !b->nulls[j];
        row += f;
    }
    uint64_t total;
    if (uniform) {
        total = row * (uint64_t)n;
        if (total > ((uint64_t)1 << 40)) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "batch encodes to more than 1 TiB");
        DF_TRY(df_buf_reserve(out, (size_t)total + 1, err));
        uint8_t *base = (uint8_t *)out->data;
        for (int64_t i = 0; i < n; i++) {
            base[(uint64_t)i * row] = TDS_TOK_ROW;
            b->cursor[i] = (uint64_t)i * row + 1;
        }
        out->len = (size_t)total;
        return DF_OK;
    }
    /* `fixed` = ROW token + NULL-free fixed-size columns: the same for every row. */
    uint64_t fixed = 1;
    memset(b->cursor, 0, (size_t)n * sizeof *b->cursor);
    for (int32_t j = 0; j < b->ncols; j++) {
        uint64_t f = fixed_size(b, j);
        if (f && !b->nulls[j]) fixed += f;
        else DF_TRY(size_column(b, j, batch->cols[j], n, err));
    }
    total = fixed * (uint64_t)n;
    for (int64_t i = 0; i < n; i++) total += b->cursor[i];
    if (total > ((uint64_t)1 << 40)) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "batch encodes to more than 1 TiB");
    DF_TRY(df_buf_reserve(out, (size_t)total + 1, err));
    /* Prefix sums with the ROW tokens written on the way: cursor[i] becomes row i's first value byte. */
    uint8_t *base = (uint8_t *)out->data;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t sz = b->cursor[i] + fixed;
        base[pos] = TDS_TOK_ROW;
        b->cursor[i] = pos + 1;
        pos += sz;
    }
    out->len = (size_t)total;
    return DF_OK;
}

/* Encodes the batch's n rows into out (row placement, then the values column by column). */
static df_errkind encode_batch(df_mssql_bulk *b, df_batch *batch, int64_t n, df_buf *out, df_error *err) {
    DF_TRY(ensure_rows(b, n, err));
    DF_TRY(place_rows(b, batch, n, out, err));
    uint8_t *base = (uint8_t *)out->data;
    for (int32_t j = 0; j < b->ncols; j++) DF_TRY(write_column(b, j, batch->cols[j], n, base, err));
    return DF_OK;
}

df_errkind df_mssql_bulk_write(df_mssql_bulk *b, df_batch *batch, df_error *err) {
    if (!b->stream_open || b->c->dead) return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the bulk load is no longer open");
    if (batch->ncols != b->ncols)
        return df_error_set(err, DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION, "batch has %d columns, the bulk load %d", batch->ncols, b->ncols);
    int64_t n = batch->nrows;
    if (n == 0) return DF_OK;
    df_buf *out = sender_slot(b);
    if (!out) {
        sender_join(b, true);
        return sender_failure(b, err);
    }
    DF_TRY(encode_batch(b, batch, n, out, err));
    DF_TRY(sender_push(b, err));
    b->rows += n;
    b->bytes += out->len;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Begin / finish                                                            */

static df_errkind quote_ident(df_buf *out, const char *name, df_error *err) {
    DF_TRY(df_buf_append_char(out, '[', err));
    for (const char *p = name; *p; p++) {
        DF_TRY(df_buf_append_char(out, *p, err));
        if (*p == ']') DF_TRY(df_buf_append_char(out, ']', err));
    }
    return df_buf_append_char(out, ']', err);
}

static df_errkind build_insert_bulk(const df_mssql_bulk *b, const char *table, const df_mssql_bulk_options *o,
                                    df_buf *sql, df_error *err) {
    DF_TRY(df_buf_printf(sql, err, "INSERT BULK %s (", table));
    for (int32_t j = 0; j < b->ncols; j++) {
        if (j) DF_TRY(df_buf_append_str(sql, ", ", err));
        DF_TRY(quote_ident(sql, b->cols[j].name, err));
        DF_TRY(df_buf_append_char(sql, ' ', err));
        DF_TRY(df_mssql_type_render(&b->cols[j], sql, err));
    }
    DF_TRY(df_buf_append_char(sql, ')', err));
    const char *opts[8];
    int no = 0;
    char rows[48] = "", kb[48] = "";
    if (o->check_constraints) opts[no++] = "CHECK_CONSTRAINTS";
    if (o->fire_triggers) opts[no++] = "FIRE_TRIGGERS";
    if (o->keep_nulls) opts[no++] = "KEEP_NULLS";
    if (o->tablock) opts[no++] = "TABLOCK";
    if (o->rows_per_batch > 0) { snprintf(rows, sizeof rows, "ROWS_PER_BATCH = %lld", (long long)o->rows_per_batch); opts[no++] = rows; }
    if (o->kilobytes_per_batch > 0) { snprintf(kb, sizeof kb, "KILOBYTES_PER_BATCH = %lld", (long long)o->kilobytes_per_batch); opts[no++] = kb; }
    if (no || (o->order && *o->order)) {
        DF_TRY(df_buf_append_str(sql, " WITH (", err));
        for (int i = 0; i < no; i++) DF_TRY(df_buf_printf(sql, err, "%s%s", i ? ", " : "", opts[i]));
        if (o->order && *o->order) DF_TRY(df_buf_printf(sql, err, "%sORDER (%s)", no ? ", " : "", o->order));
        DF_TRY(df_buf_append_char(sql, ')', err));
    }
    return DF_OK;
}

static df_errkind write_colmetadata(df_mssql_bulk *b, df_error *err) {
    df_buf m;
    df_buf_init(&m, 0);
    df_errkind k = df__tds_put_u8(&m, TDS_TOK_COLMETADATA, err);
    if (k == DF_OK) k = df__tds_put_u16(&m, (uint16_t)b->ncols, err);
    for (int32_t j = 0; k == DF_OK && j < b->ncols; j++) {
        k = df__tds_put_u32(&m, 0, err);                                         /* UserType */
        if (k == DF_OK) k = df__tds_put_u16(&m, (uint16_t)(0x0004 | (b->cols[j].nullable ? 1 : 0)), err); /* RW + nullable */
        if (k == DF_OK) k = df__tds_typeinfo_write(&m, &b->ti[j], err);
        if (k == DF_OK) k = df__tds_put_bvarchar(&m, b->cols[j].name, err);
    }
    if (k == DF_OK) k = df__tds_io_stream_write(b->c->io, m.data, m.len, err);
    if (k == DF_OK) b->bytes = m.len;
    df_buf_free(&m);
    return k;
}

/*
 * NOT NULL integer, bit, float, money and datetime columns are described
 * with the fixed TDS types (INT1..INT8, BIT, FLT4/FLT8, MONEY4/MONEY,
 * DATETIM4/DATETIME), as SQL Server itself describes them: their values
 * carry no length byte, one byte less per value on the wire and less to
 * decode for the server.  Returns true when ti was switched.
 */
static bool use_fixed_type(const df_mssql_column *col, df__tds_typeinfo *ti) {
    if (col->nullable) return false;
    uint8_t fixed;
    switch (ti->type) {
    case TDS_T_INTN: fixed = ti->max_len == 1 ? TDS_T_INT1 : ti->max_len == 2 ? TDS_T_INT2 : ti->max_len == 4 ? TDS_T_INT4 : TDS_T_INT8; break;
    case TDS_T_BITN: fixed = TDS_T_BIT; break;
    case TDS_T_FLTN: fixed = ti->max_len == 4 ? TDS_T_FLT4 : TDS_T_FLT8; break;
    case TDS_T_MONEYN: fixed = ti->max_len == 4 ? TDS_T_MONEY4 : TDS_T_MONEY; break;
    case TDS_T_DATETIMN: fixed = ti->max_len == 4 ? TDS_T_DATETIM4 : TDS_T_DATETIME; break;
    default: return false;
    }
    ti->type = fixed;
    ti->size_class = TDS_SC_FIXED;
    return true;
}

static void bulk_free(df_mssql_bulk *b) {
    if (!b) return;
    sender_join(b, true);
    if (b->c) b->c->bulk_open = false;
    for (int32_t j = 0; j < b->ncols; j++) {
        if (b->cols) df_free((char *)b->cols[j].name);
        if (b->lens) df_free(b->lens[j]);
    }
    df_free(b->nulls);
    df_free(b->lenbyte);
    df_free(b->cols);
    df_free(b->ti);
    df_free(b->lens);
    df_free(b->cursor);
    df_free(b->tmp);
    for (int i = 0; i < NBUFS; i++) df_buf_free(&b->snd.bufs[i]);
    df_error_clear(&b->snd.error);
    pthread_mutex_destroy(&b->snd.mu);
    pthread_cond_destroy(&b->snd.cv);
    df_free(b);
}

static df_errkind bulk_setup(df_mssql_bulk *b, const df_mssql_column *cols, df_error *err) {
    b->cols = df_calloc((size_t)b->ncols, sizeof *b->cols);
    b->ti = df_calloc((size_t)b->ncols, sizeof *b->ti);
    b->lens = df_calloc((size_t)b->ncols, sizeof *b->lens);
    b->nulls = df_calloc((size_t)b->ncols, sizeof *b->nulls);
    b->lenbyte = df_calloc((size_t)b->ncols, sizeof *b->lenbyte);
    if (!b->cols || !b->ti || !b->lens || !b->nulls || !b->lenbyte) return DF_OOM(err);
    for (int32_t j = 0; j < b->ncols; j++) {
        b->cols[j] = cols[j];
        b->cols[j].name = df_strdup(cols[j].name ? cols[j].name : "");
        if (!b->cols[j].name) return DF_OOM(err);
        if (!b->cols[j].name[0]) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "bulk column %d has no name", j);
        DF_TRY(df__mssql_column_typeinfo(&b->cols[j], &b->ti[j], err));
        b->lenbyte[j] = use_fixed_type(&b->cols[j], &b->ti[j]) ? 0 : 1;
    }
    return DF_OK;
}

df_errkind df_mssql_bulk_begin(df_mssql_conn *c, const char *table, const df_mssql_column *cols, int32_t ncols,
                               const df_mssql_bulk_options *opts, df_mssql_bulk **out, df_error *err) {
    *out = NULL;
    if (ncols <= 0 || ncols > 4096) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a bulk load needs 1..4096 columns");
    df_mssql_bulk_options defaults = {0};
    if (!opts) opts = &defaults;
    df_mssql_bulk *b = df_calloc(1, sizeof *b);
    if (!b) return DF_OOM(err);
    b->ncols = ncols;
    b->nanos = opts->nanos;
    pthread_mutex_init(&b->snd.mu, NULL);
    pthread_cond_init(&b->snd.cv, NULL);
    for (int i = 0; i < NBUFS; i++) df_buf_init(&b->snd.bufs[i], 0);
    df_buf sql;
    df_buf_init(&sql, 0);
    df_errkind k = bulk_setup(b, cols, err);
    if (k == DF_OK) k = build_insert_bulk(b, table, opts, &sql, err);
    if (k == DF_OK) k = df_mssql_exec(c, sql.data, NULL, err);
    df_buf_free(&sql);
    if (k == DF_OK) {
        k = df__tds_io_stream_begin(c->io, TDS_PKT_BULK, err);
        b->c = c;
        c->bulk_open = true;
        if (k == DF_OK) {
            b->stream_open = true;
            k = write_colmetadata(b, err);
            if (k != DF_OK) df__mssql_check_dead(c, k);
        }
    }
    if (k != DF_OK) {
        if (b->stream_open && !c->dead) {
            df__tds_io_stream_end(c->io, true, NULL);
            df__tds_resp resp;
            df__tds_resp_init(&resp, NULL);
            df__mssql_read_response(c, &resp, NULL);
        }
        bulk_free(b);
        return k;
    }
    *out = b;
    return DF_OK;
}

df_errkind df_mssql_bulk_finish(df_mssql_bulk *b, int64_t *rows, df_error *err) {
    if (rows) *rows = 0;
    df_mssql_conn *c = b->c;
    df_errkind k = DF_OK;
    if (!b->stream_open || c->dead) {
        bulk_free(b);
        return df_error_set(err, DF_ERR_MSSQL_CONNECTION_LOST, "the bulk load is no longer open");
    }
    sender_join(b, false); /* everything queued is on the wire (or the sender failed) */
    if (b->snd.failed != DF_OK) {
        c->bulk_open = false;
        k = sender_failure(b, err);
        bulk_free(b);
        return k;
    }
    static const uint8_t done[13] = {TDS_TOK_DONE, 0};
    k = df__tds_io_stream_write(c->io, done, sizeof done, err);
    if (k == DF_OK) k = df__tds_io_stream_end(c->io, false, err);
    b->stream_open = false;
    c->bulk_open = false;
    if (k != DF_OK) {
        k = k == DF_ERR_MSSQL_CONNECTION_LOST ? salvage_server_error(c, k, err) : df__mssql_check_dead(c, k);
        bulk_free(b);
        return k;
    }
    df__tds_resp resp;
    df__tds_resp_init(&resp, NULL);
    k = df__mssql_read_response(c, &resp, err);
    if (k == DF_OK && resp.nerrors) k = df__mssql_server_error(&resp, DF_ERR_MSSQL_SERVER_ERROR, err);
    if (k == DF_OK && rows) *rows = resp.rows_affected < 0 ? 0 : resp.rows_affected;
    bulk_free(b);
    return k;
}

void df_mssql_bulk_abort(df_mssql_bulk *b) {
    if (!b) return;
    df_mssql_conn *c = b->c;
    sender_join(b, true);
    if (b->snd.failed != DF_OK) df__mssql_check_dead(c, b->snd.failed);
    if (b->stream_open && !c->dead) {
        c->bulk_open = false;
        df_errkind k = df__tds_io_stream_end(c->io, true, NULL);
        if (k == DF_OK) {
            df__tds_resp resp;
            df__tds_resp_init(&resp, NULL);
            df__mssql_read_response(c, &resp, NULL);
        } else {
            c->dead = true;
        }
    }
    bulk_free(b);
}

void df_mssql_shutdown(df_mssql_conn *c) {
    int fd = c && c->io ? df__tds_io_fd(c->io) : -1;
    if (fd < 0) return;
    /* No linger: closing it later resets the connection and drops what is still queued instead of sending it. */
    struct linger no_linger = {1, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof no_linger);
    shutdown(fd, SHUT_RDWR);
}

void df_mssql_bulk_discard(df_mssql_bulk *b) {
    if (!b) return;
    df_mssql_conn *c = b->c;
    /* Shut the socket before joining: a sender blocked on a full send buffer fails now instead of draining it. */
    df_mssql_shutdown(c);
    c->dead = true;
    c->bulk_open = false;
    bulk_free(b);
}

int64_t df_mssql_bulk_rows(const df_mssql_bulk *b) { return b->rows; }
uint64_t df_mssql_bulk_bytes(const df_mssql_bulk *b) { return b->bytes; }
