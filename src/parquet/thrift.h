/*
 * Thrift compact protocol: a decoder for hostile input and a small encoder.
 *
 * The decoder latches its first error: every read function returns a
 * neutral value (0, false, an empty span) once an error is recorded, so
 * parsers can read a whole struct and check `d->kind` once per field loop
 * instead of after every call.  Nesting (structs, lists, maps) is bounded by
 * TDEC_MAX_DEPTH, every length is checked against the bytes left, and
 * unknown fields of any type are skipped.
 *
 * Wire format (Thrift compact protocol): a field header is one byte, the
 * high nibble a field-id delta (0 = an explicit zigzag i16 follows) and the
 * low nibble the type; booleans in fields live in the type nibble; integers
 * are zigzag varints; binary is a varint length and bytes; a list header
 * holds the element type and a size (15 = a varint size follows).
 */
#ifndef DF_PARQUET_THRIFT_H
#define DF_PARQUET_THRIFT_H

#include "common/common.h"

/* Compact protocol type codes. */
enum {
    TC_STOP = 0,
    TC_TRUE = 1,
    TC_FALSE = 2,
    TC_BYTE = 3,
    TC_I16 = 4,
    TC_I32 = 5,
    TC_I64 = 6,
    TC_DOUBLE = 7,
    TC_BINARY = 8,
    TC_LIST = 9,
    TC_SET = 10,
    TC_MAP = 11,
    TC_STRUCT = 12,
};

/* Deepest nesting of structs/lists/maps accepted (the Parquet footer needs 6). */
#define TDEC_MAX_DEPTH 32

typedef struct pq_tdec {
    const uint8_t *start;   /* first byte (offsets in messages are relative to it) */
    const uint8_t *p;       /* next byte to read */
    const uint8_t *end;     /* one past the last readable byte */
    int depth;              /* current nesting */
    df_errkind kind;        /* DF_OK until the first error */
    bool truncated;         /* the first error was running out of bytes */
    df_error *err;          /* receives the first error; may be NULL */
    const char *what;       /* what is being decoded, for messages ("file metadata") */
} pq_tdec;

/* A byte span inside the decoded buffer (not NUL-terminated). */
typedef struct pq_bytes {
    const uint8_t *ptr;
    uint32_t len;
} pq_bytes;

void df__parquet_tdec_init(pq_tdec *d, const void *data, size_t len, const char *what, df_error *err);
/* Records a format error (only the first one is kept); returns false. */
bool df__parquet_tdec_fail(pq_tdec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Struct iteration:
 *   int16_t last = 0; int type;
 *   if (!df__parquet_tdec_struct_begin(d)) ...;
 *   for (int id; (id = df__parquet_tdec_field(d, &last, &type)) >= 0;) { switch (id) ... default: skip }
 *   df__parquet_tdec_struct_end(d);
 * field() returns -1 at the struct's STOP byte or on error.
 */
bool df__parquet_tdec_struct_begin(pq_tdec *d);
int df__parquet_tdec_field(pq_tdec *d, int16_t *last_id, int *type);
void df__parquet_tdec_struct_end(pq_tdec *d);

/* Values of a field (or list element) of wire type `type`.  A type that does
 * not fit is skipped and reported through the return value `ok` = false. */
bool df__parquet_tdec_int(pq_tdec *d, int type, int64_t *out);
bool df__parquet_tdec_i32(pq_tdec *d, int type, int32_t *out);   /* also range-checks */
bool df__parquet_tdec_bool(pq_tdec *d, int type, bool *out);      /* field or list-element bool */
bool df__parquet_tdec_binary(pq_tdec *d, int type, pq_bytes *out);
bool df__parquet_tdec_double(pq_tdec *d, int type, double *out);
/* Reads a list header; the element count is bounded by the bytes left. */
bool df__parquet_tdec_list(pq_tdec *d, int type, int *elem_type, uint32_t *count);
/* Skips one value of wire type `type` (recursively, depth-bounded). */
void df__parquet_tdec_skip(pq_tdec *d, int type);
/* Bytes consumed so far. */
static inline size_t df__parquet_tdec_pos(const pq_tdec *d) { return (size_t)(d->p - d->start); }

/* ------------------------------------------------------------------------ */
/* Encoder (for the writer): appends to a df_buf; errors latch in `kind`.    */

typedef struct pq_tenc {
    df_buf *out;            /* destination */
    int16_t last[TDEC_MAX_DEPTH];  /* last field id per open struct */
    int depth;              /* open structs */
    df_errkind kind;        /* DF_OK until the first error */
    df_error *err;
} pq_tenc;

void df__parquet_tenc_init(pq_tenc *e, df_buf *out, df_error *err);
void df__parquet_tenc_struct_begin(pq_tenc *e);
void df__parquet_tenc_struct_end(pq_tenc *e);   /* writes STOP */
void df__parquet_tenc_field(pq_tenc *e, int16_t id, int type);
void df__parquet_tenc_i32(pq_tenc *e, int16_t id, int32_t v);
void df__parquet_tenc_i64(pq_tenc *e, int16_t id, int64_t v);
void df__parquet_tenc_bool(pq_tenc *e, int16_t id, bool v);
void df__parquet_tenc_binary(pq_tenc *e, int16_t id, const void *p, size_t n);
void df__parquet_tenc_string(pq_tenc *e, int16_t id, const char *s);
/* List header (element values follow with the *_elem writers). */
void df__parquet_tenc_list(pq_tenc *e, int16_t id, int elem_type, uint32_t count);
void df__parquet_tenc_i32_elem(pq_tenc *e, int32_t v);
void df__parquet_tenc_string_elem(pq_tenc *e, const char *s);
/* Starts a struct field (df__parquet_tenc_struct_end closes it). */
void df__parquet_tenc_struct_field(pq_tenc *e, int16_t id);
/* Starts a struct list element. */
void df__parquet_tenc_struct_elem(pq_tenc *e);

#endif
