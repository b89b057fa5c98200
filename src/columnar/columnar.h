/*
 * Typed column vectors and batches in the Arrow memory layout.
 *
 * Types (df_type) are immutable and reference counted; the primitive ones
 * are static and never freed.  Buffers (df_buffer) are reference counted,
 * 64-byte aligned and padded; a buffer may be written only while its owner
 * holds the only reference.  Vectors (df_vec) follow Arrow exactly:
 *
 *   type             validity      values                 data      children
 *   null             -             -                      -         -
 *   bool             bitmap        bitmap                 -         -
 *   ints/floats,     bitmap        element array          -         -
 *   decimal, date,
 *   time, timestamp,
 *   duration
 *   interval_mdn     bitmap        {i32 months, i32 days, i64 nanos}
 *   fixed_binary(w)  bitmap        w bytes per element    -         -
 *   utf8, binary     bitmap        int32 offsets[len+1]   bytes     -
 *   list             bitmap        int32 offsets[len+1]   -         [element]
 *   struct           bitmap        -                      -         one per field
 *   map              bitmap        int32 offsets[len+1]   -         [entries: struct<key, value>]
 *
 * A NULL validity buffer means "no nulls".  Bitmaps are LSB-first.  Vectors
 * we build have offset 0; slices share buffers and carry an element offset.
 * Batches (df_batch) are a schema plus one vector per field, all of the same
 * length, and leave the library through the Arrow C Data Interface without
 * copies (columnar/arrow_export.c).
 */
#ifndef DF_COLUMNAR_COLUMNAR_H
#define DF_COLUMNAR_COLUMNAR_H

#include <stdatomic.h>

#include "common/common.h"
#include "deltafunnel/df_arrow_abi.h"

/* ------------------------------------------------------------------------ */
/* Types                                                                     */

typedef enum df_type_id {
    DF_TYPE_NULL = 0,
    DF_TYPE_BOOL,
    DF_TYPE_INT8,
    DF_TYPE_INT16,
    DF_TYPE_INT32,
    DF_TYPE_INT64,
    DF_TYPE_UINT8,
    DF_TYPE_UINT16,
    DF_TYPE_UINT32,
    DF_TYPE_UINT64,
    DF_TYPE_FLOAT16,      /* IEEE half, stored as uint16 bits */
    DF_TYPE_FLOAT32,
    DF_TYPE_FLOAT64,
    DF_TYPE_DECIMAL128,   /* precision 1..38, scale; values df_i128 */
    DF_TYPE_DECIMAL256,   /* precision 1..76; values 32-byte little-endian two's complement */
    DF_TYPE_DATE32,       /* days since 1970-01-01, int32 */
    DF_TYPE_DATE64,       /* milliseconds since epoch, int64 */
    DF_TYPE_TIME32,       /* unit second or milli, int32 since midnight */
    DF_TYPE_TIME64,       /* unit micro or nano, int64 since midnight */
    DF_TYPE_TIMESTAMP,    /* int64 since epoch in `unit`; timezone NULL = naive (timestamp_ntz) */
    DF_TYPE_DURATION,     /* int64 in `unit` */
    DF_TYPE_INTERVAL_MDN, /* months, days, nanoseconds */
    DF_TYPE_UTF8,
    DF_TYPE_BINARY,
    DF_TYPE_FIXED_BINARY, /* byte_width bytes */
    DF_TYPE_LIST,
    DF_TYPE_STRUCT,
    DF_TYPE_MAP,
    DF_TYPE_ID_COUNT_
} df_type_id;

typedef enum df_time_unit {
    DF_UNIT_SECOND = 0,
    DF_UNIT_MILLI,
    DF_UNIT_MICRO,
    DF_UNIT_NANO,
} df_time_unit;

typedef struct df_type df_type;
typedef struct df_field df_field;

struct df_type {
    df_type_id id;
    _Atomic int32_t refs;   /* < 0: static, never freed */
    df_time_unit unit;      /* time32/time64/timestamp/duration */
    int16_t precision;      /* decimals */
    int16_t scale;          /* decimals (may be negative) */
    int32_t byte_width;     /* fixed_binary; element size of fixed-width types */
    char *timezone;         /* timestamp: IANA name or "+HH:MM"; NULL = naive */
    int32_t nchildren;      /* list: 1, map: 1 (entries), struct: n */
    df_field *children;     /* owned array */
    bool keys_sorted;       /* map */
};

struct df_field {
    char *name;             /* owned, UTF-8 */
    df_type *type;          /* one reference owned */
    bool nullable;
};

/* The static primitive types (no reference counting needed). */
df_type *df_type_null(void);
df_type *df_type_bool(void);
df_type *df_type_int8(void);
df_type *df_type_int16(void);
df_type *df_type_int32(void);
df_type *df_type_int64(void);
df_type *df_type_uint8(void);
df_type *df_type_uint16(void);
df_type *df_type_uint32(void);
df_type *df_type_uint64(void);
df_type *df_type_float16(void);
df_type *df_type_float32(void);
df_type *df_type_float64(void);
df_type *df_type_date32(void);
df_type *df_type_date64(void);
df_type *df_type_utf8(void);
df_type *df_type_binary(void);
df_type *df_type_interval_mdn(void);
/* Returns the static type for a parameterless id, or NULL. */
df_type *df_type_primitive(df_type_id id);

/* Parameterised types; each returns a new reference or NULL when out of memory. */
df_type *df_type_decimal(int precision, int scale);   /* decimal128 when precision <= 38 else decimal256 */
df_type *df_type_time(df_time_unit unit);              /* time32 for s/ms, time64 for us/ns */
df_type *df_type_timestamp(df_time_unit unit, const char *timezone);
df_type *df_type_duration(df_time_unit unit);
df_type *df_type_fixed_binary(int32_t byte_width);
/* Nested constructors copy the field names and retain the child types. */
df_type *df_type_list(const df_field *element);
df_type *df_type_struct(const df_field *fields, int32_t nfields);
df_type *df_type_map(const df_field *key, const df_field *value, bool keys_sorted);

df_type *df_type_retain(df_type *t);
void df_type_release(df_type *t);
bool df_type_equals(const df_type *a, const df_type *b);
/* Element width in bytes of fixed-width types (bool: 0, var-len/nested: 0). */
int32_t df_type_width(const df_type *t);
bool df_type_is_integer(const df_type *t);
bool df_type_is_signed_integer(const df_type *t);
bool df_type_is_unsigned_integer(const df_type *t);
bool df_type_is_floating(const df_type *t);
bool df_type_is_decimal(const df_type *t);
bool df_type_is_numeric(const df_type *t);   /* ints, floats, decimals */
bool df_type_is_temporal(const df_type *t);
bool df_type_is_nested(const df_type *t);
bool df_type_is_varlen(const df_type *t);    /* utf8, binary */
/*
 * Writes the Arrow display form of a type ("Int64", "Utf8",
 * "Decimal128(10, 2)", "Timestamp(µs, \"UTC\")", "List(Int32)", "Struct(\"x\": Int64)")
 * as the reference (DataFusion on arrow-rs 57) prints it; used in previews and reports.
 */
df_errkind df_type_display(const df_type *t, df_buf *out, df_error *err);
/* The Arrow C Data Interface format string ("l", "u", "d:10,2", "tsu:UTC", "+s"...). */
df_errkind df_type_arrow_format(const df_type *t, df_buf *out, df_error *err);

/* Fields. */
df_errkind df_field_init(df_field *f, const char *name, df_type *type, bool nullable, df_error *err); /* retains type */
df_errkind df_field_copy(df_field *dst, const df_field *src, df_error *err);
void df_field_clear(df_field *f);

/* ------------------------------------------------------------------------ */
/* Schemas: an ordered list of fields; immutable once shared, ref-counted.   */

typedef struct df_schema {
    _Atomic int32_t refs;
    int32_t nfields;
    df_field *fields;       /* owned */
} df_schema;

/* Creates a schema of copies of `fields`. */
df_errkind df_schema_new(const df_field *fields, int32_t nfields, df_schema **out, df_error *err);
/* Creates a schema with nfields zeroed slots for the caller to fill with df_field_init. */
df_errkind df_schema_alloc(int32_t nfields, df_schema **out, df_error *err);
df_schema *df_schema_retain(df_schema *s);
void df_schema_release(df_schema *s);
/* Index of the field with this exact name, or -1. */
int32_t df_schema_find(const df_schema *s, const char *name);
/* Index of the field whose name equals case-insensitively, or -1; -2 if several match. */
int32_t df_schema_find_ci(const df_schema *s, const char *name);
bool df_schema_equals(const df_schema *a, const df_schema *b);
/* A new schema with the fields at `indices` (projection). */
df_errkind df_schema_project(const df_schema *s, const int32_t *indices, int32_t n, df_schema **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */

typedef struct df_buffer df_buffer;
struct df_buffer {
    _Atomic int64_t refs;
    uint8_t *data;          /* 64-byte aligned when we allocated it */
    int64_t size;           /* bytes holding data */
    int64_t capacity;       /* bytes allocated (multiple of 64 for ours) */
    /* Foreign memory: called with the buffer on last release instead of freeing data. */
    void (*release_foreign)(df_buffer *b);
    void *foreign;          /* context for release_foreign */
};

/* A new buffer of `capacity` bytes (rounded up to 64, padding zeroed), size 0. */
df_buffer *df_buffer_new(int64_t capacity);
/* Same, with all `capacity` bytes zeroed and size = capacity. */
df_buffer *df_buffer_new_zeroed(int64_t capacity);
/* Wraps memory owned elsewhere; `release` runs on the last df_buffer_release. */
df_buffer *df_buffer_wrap(uint8_t *data, int64_t size, void (*release)(df_buffer *), void *ctx);
df_buffer *df_buffer_retain(df_buffer *b);
void df_buffer_release(df_buffer *b);
/* Grows capacity to at least `capacity` bytes (amortised doubling); only for unshared own buffers. */
df_errkind df_buffer_reserve(df_buffer *b, int64_t capacity, df_error *err);

/* ------------------------------------------------------------------------ */
/* Bitmaps                                                                   */

static inline bool df_bit_get(const uint8_t *bits, int64_t i) {
    return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void df_bit_set(uint8_t *bits, int64_t i) {
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}
static inline void df_bit_clear(uint8_t *bits, int64_t i) {
    bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}
static inline void df_bit_put(uint8_t *bits, int64_t i, bool v) {
    if (v) df_bit_set(bits, i); else df_bit_clear(bits, i);
}
static inline int64_t df_bitmap_bytes(int64_t nbits) { return (nbits + 7) >> 3; }
/*
 * Set bits of a word.  Without a POPCNT target the builtin becomes a libgcc
 * call (table lookups per byte); the SWAR sum is a dozen inline operations.
 */
static inline int df_popcount64(uint64_t x) {
#if defined(__POPCNT__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
#endif
}
/* Number of set bits in [offset, offset+length). */
int64_t df_bitmap_count(const uint8_t *bits, int64_t offset, int64_t length);
/* Sets or clears bits [offset, offset+length). */
void df_bitmap_fill(uint8_t *bits, int64_t offset, int64_t length, bool value);
/* Copies `length` bits from src (at src_offset) to dst (at dst_offset). */
void df_bitmap_copy(uint8_t *dst, int64_t dst_offset, const uint8_t *src, int64_t src_offset, int64_t length);

/* ------------------------------------------------------------------------ */
/* Vectors                                                                   */

typedef struct df_vec df_vec;
struct df_vec {
    _Atomic int64_t refs;
    df_type *type;          /* one reference owned */
    int64_t length;         /* elements */
    int64_t null_count;     /* -1 = unknown (computed on demand) */
    int64_t offset;         /* element offset into the buffers (slices) */
    df_buffer *validity;    /* NULL = no nulls */
    df_buffer *values;      /* see the table at the top */
    df_buffer *data;        /* utf8/binary bytes */
    int32_t nchildren;
    df_vec **children;      /* owned references; for structs, element i of the
                               vector is element (offset + i) of each child, as in Arrow */
};

/*
 * Creates an empty vector able to hold `capacity` elements without growing:
 * values buffer sized for fixed-width types, offsets[capacity+1] (offsets[0]
 * = 0) for utf8/binary/list/map, `data_capacity` bytes for utf8/binary, and
 * empty children for nested types (each built with the child's capacity
 * hint equal to `capacity`).  No validity buffer until a null is set.
 * length = 0.
 */
df_errkind df_vec_new(df_type *type, int64_t capacity, int64_t data_capacity, df_vec **out, df_error *err);
/* A vector of `length` nulls (any type; buffers zeroed so consumers may read them). */
df_errkind df_vec_new_nulls(df_type *type, int64_t length, df_vec **out, df_error *err);
df_vec *df_vec_retain(df_vec *v);
void df_vec_release(df_vec *v);

/* Null bookkeeping. */
static inline bool df_vec_is_valid(const df_vec *v, int64_t i) {
    return !v->validity || df_bit_get(v->validity->data, v->offset + i);
}
static inline bool df_vec_is_null(const df_vec *v, int64_t i) { return !df_vec_is_valid(v, i); }
/* Allocates the validity bitmap (all valid so far) for capacity elements if absent. */
df_errkind df_vec_ensure_validity(df_vec *v, int64_t capacity, df_error *err);
/* Marks element i null; allocates the bitmap on first use.  Own vectors only. */
df_errkind df_vec_set_null(df_vec *v, int64_t i, df_error *err);
int64_t df_vec_null_count(df_vec *v);   /* computes and caches when unknown */

/* Typed access to fixed-width values (already offset). */
#define DF_VEC_VALUES(v, ctype) ((ctype *)(void *)((v)->values->data) + (v)->offset)
static inline const int32_t *df_vec_offsets(const df_vec *v) {
    return (const int32_t *)(const void *)v->values->data + v->offset;
}
static inline const uint8_t *df_vec_bytes(const df_vec *v, int64_t i, int32_t *len) {
    const int32_t *o = df_vec_offsets(v);
    *len = o[i + 1] - o[i];
    return v->data->data + o[i];
}
static inline bool df_vec_bool(const df_vec *v, int64_t i) {
    return df_bit_get(v->values->data, v->offset + i);
}

/* Growth for builders (own vectors, offset 0). */
df_errkind df_vec_reserve(df_vec *v, int64_t capacity, df_error *err);
df_errkind df_vec_reserve_data(df_vec *v, int64_t data_bytes, df_error *err);
/* Appends one utf8/binary value (or a null when value == NULL). */
df_errkind df_vec_append_bytes(df_vec *v, const void *value, int32_t len, df_error *err);
/* Appends a null of any type (nested children get a placeholder element for structs). */
df_errkind df_vec_append_null(df_vec *v, df_error *err);
/*
 * Fixes a vector whose buffers were filled directly: sets length and
 * buffer sizes, marks null_count unknown.  Builders that write into
 * DF_VEC_VALUES call this at the end.
 */
void df_vec_set_length(df_vec *v, int64_t length);

/* A zero-copy slice sharing buffers (new reference). */
df_errkind df_vec_slice(df_vec *v, int64_t offset, int64_t length, df_vec **out, df_error *err);
/* A new vector with the elements at `indices` (gather); nested types supported. */
df_errkind df_vec_take(const df_vec *v, const int32_t *indices, int64_t n, df_vec **out, df_error *err);
/* A new vector with the elements whose selection bit is set (filter). */
df_errkind df_vec_filter(const df_vec *v, const uint8_t *selection, int64_t selected, df_vec **out, df_error *err);
/* Concatenates vectors of equal type. */
df_errkind df_vec_concat(df_vec *const *vecs, int32_t n, df_vec **out, df_error *err);
/* Deep validation (offsets monotone and in range, children lengths, UTF-8); for imports and tests. */
df_errkind df_vec_validate(const df_vec *v, bool check_utf8, df_error *err);

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

typedef struct df_batch {
    _Atomic int32_t refs;
    df_schema *schema;      /* one reference owned */
    int64_t nrows;
    int32_t ncols;          /* == schema->nfields */
    df_vec **cols;          /* owned references */
} df_batch;

/* Creates a batch; retains schema, takes ownership of the column references (also on failure). */
df_errkind df_batch_new(df_schema *schema, df_vec **cols, int64_t nrows, df_batch **out, df_error *err);
df_batch *df_batch_retain(df_batch *b);
void df_batch_release(df_batch *b);
df_errkind df_batch_slice(df_batch *b, int64_t offset, int64_t length, df_batch **out, df_error *err);
df_errkind df_batch_project(df_batch *b, const int32_t *indices, int32_t n, df_batch **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Batch streams: the pull interface every producer implements.             */

typedef struct df_batch_stream df_batch_stream;
typedef struct df_batch_stream_vt {
    /*
     * Produces the next batch (a new reference in *out), or *out = NULL at
     * end of stream.  After an error or end of stream, next() must not be
     * called again.
     */
    df_errkind (*next)(df_batch_stream *s, df_batch **out, df_error *err);
    /* Frees the stream; may be called at any time (cancels the producer). */
    void (*close)(df_batch_stream *s);
} df_batch_stream_vt;

struct df_batch_stream {
    const df_batch_stream_vt *vt;
    df_schema *schema;      /* reference owned by the stream; every batch has an equal schema */
};

static inline df_errkind df_batch_stream_next(df_batch_stream *s, df_batch **out, df_error *err) {
    return s->vt->next(s, out, err);
}
static inline void df_batch_stream_close(df_batch_stream *s) {
    if (s) s->vt->close(s);
}

/* ------------------------------------------------------------------------ */
/* Scalars: single typed values (literals, partition values, statistics).   */

typedef struct df_scalar {
    df_type *type;          /* one reference owned; NULL only in a zeroed scalar */
    bool is_null;
    union {
        bool b;
        int64_t i64;        /* all signed ints, date32, date64, time, timestamp, duration */
        uint64_t u64;       /* unsigned ints, float16 bits */
        double f64;         /* float32 and float64 */
        df_i128 i128;       /* decimal128 */
        uint8_t d256[32];   /* decimal256 little-endian */
        struct { int32_t months, days; int64_t nanos; } interval;
        struct { uint8_t *ptr; int64_t len; } bytes;  /* utf8/binary/fixed_binary; owned */
    } v;
} df_scalar;

void df_scalar_clear(df_scalar *s);
df_errkind df_scalar_copy(df_scalar *dst, const df_scalar *src, df_error *err);
/* Reads element i of a vector (nested types unsupported: DF_ERR_UNSUPPORTED). */
df_errkind df_scalar_from_vec(df_scalar *dst, const df_vec *v, int64_t i, df_error *err);
/*
 * Orders two non-null scalars of equal type: <0, 0, >0.  *comparable is
 * false (and 0 returned) when the types differ, a value is NULL or NaN, or
 * the type has no order (nested).  Strings and binaries compare bytewise.
 */
int df_scalar_compare(const df_scalar *a, const df_scalar *b, bool *comparable);
/* A vector of `length` copies of the scalar. */
df_errkind df_vec_from_scalar(const df_scalar *s, int64_t length, df_vec **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Arrow C Data Interface                                                    */

/* Exports a field (name, type, nullability) as an ArrowSchema; the consumer releases it. */
df_errkind df_arrow_export_field(const df_field *field, struct ArrowSchema *out, df_error *err);
/* Exports a schema as a struct-typed ArrowSchema ("+s") with one child per field. */
df_errkind df_arrow_export_schema(const df_schema *schema, struct ArrowSchema *out, df_error *err);
/* Exports a vector; shares buffers (no copy); the ArrowArray holds references. */
df_errkind df_arrow_export_vec(df_vec *v, struct ArrowArray *out, df_error *err);
/* Exports a batch as a struct array (length nrows, one child per column). */
df_errkind df_arrow_export_batch(df_batch *b, struct ArrowArray *out, df_error *err);
/* Wraps a stream as an ArrowArrayStream; takes ownership of `stream` (also on failure). */
df_errkind df_arrow_export_stream(df_batch_stream *stream, struct ArrowArrayStream *out, df_error *err);
/* Imports a schema (consumer side); the ArrowSchema is not released. */
df_errkind df_arrow_import_schema(const struct ArrowSchema *in, df_schema **out, df_error *err);
/* Imports a struct array as a batch of `schema`; moves the array in (it is released when the batch dies). */
df_errkind df_arrow_import_batch(struct ArrowArray *in, df_schema *schema, df_batch **out, df_error *err);

#endif
