/*
 * JSON: a strict RFC 8259 parser into an arena-allocated DOM, and a
 * streaming writer over df_buf.
 *
 * Parser.  The whole text is parsed at once into df_json_value nodes that
 * live in a caller-supplied arena (they die with it; nothing is freed one by
 * one).  Objects keep their members in text order; when a key repeats,
 * lookups return the last occurrence.  Strings are fully validated (UTF-8,
 * escapes, surrogate pairs) and stored decoded and NUL-terminated (they may
 * contain U+0000, hence the explicit length).  Numbers keep their source text
 * beside the parsed int64 / uint64 / double and flags telling which of those
 * are exact, so callers that need exact big integers or decimals (Delta
 * statistics) read the text.  Nesting depth and input size are bounded; a
 * syntax error reports DF_ERR_JSON_FORMAT with the byte offset of the
 * offending character in df_error.offset.
 *
 * Writer.  df_json_writer appends compact (or indented) JSON to a df_buf.
 * Errors are sticky: after the first failure every call is a no-op that
 * returns the same kind, so a report can be written as a straight sequence
 * of calls and checked once with df_json_writer_finish().
 */
#ifndef DF_COMMON_JSON_H
#define DF_COMMON_JSON_H

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* DOM                                                                       */

typedef enum df_json_type {
    DF_JSON_NULL = 0,
    DF_JSON_BOOL,
    DF_JSON_NUMBER,
    DF_JSON_STRING,
    DF_JSON_ARRAY,
    DF_JSON_OBJECT,
} df_json_type;

/* Exactness flags of a number (df_json_value.flags). */
enum {
    DF_JSON_NUM_INTEGER = 1u << 0,   /* the text has no fraction and no exponent */
    DF_JSON_NUM_I64 = 1u << 1,       /* num.i64 holds the exact value (an integral value in int64 range) */
    DF_JSON_NUM_U64 = 1u << 2,       /* num.u64 holds the exact value (an integral value in uint64 range) */
    DF_JSON_NUM_F64_EXACT = 1u << 3, /* num.f64 equals the decimal value exactly (else it is correctly rounded) */
};

typedef struct df_json_value df_json_value;
typedef struct df_json_member df_json_member;

struct df_json_value {
    df_json_type type;   /* which union member is meaningful */
    uint32_t flags;      /* DF_JSON_NUM_* for numbers; 0 otherwise */
    union {
        bool b;          /* DF_JSON_BOOL */
        struct {
            const char *ptr;  /* decoded UTF-8, NUL-terminated, in the arena */
            size_t len;       /* bytes, excluding the terminator */
        } str;           /* DF_JSON_STRING */
        struct {
            const char *text; /* source text of the number, NUL-terminated, in the arena */
            size_t len;       /* bytes of text */
            int64_t i64;      /* exact when DF_JSON_NUM_I64 */
            uint64_t u64;     /* exact when DF_JSON_NUM_U64 */
            double f64;       /* nearest double (correctly rounded; +-inf on overflow) */
        } num;           /* DF_JSON_NUMBER */
        struct {
            df_json_value *items; /* contiguous array of n values */
            size_t n;             /* number of elements */
        } arr;           /* DF_JSON_ARRAY */
        struct {
            df_json_member *members; /* contiguous array in text order */
            size_t n;                /* number of members (duplicates included) */
        } obj;           /* DF_JSON_OBJECT */
    } u;
};

struct df_json_member {
    const char *key;     /* decoded key, NUL-terminated, in the arena */
    size_t key_len;      /* bytes of key */
    df_json_value value; /* the member's value (stored inline) */
};

/* Parser bounds; a zero field means "use the default". */
typedef struct df_json_options {
    size_t max_bytes;    /* longest accepted text (default 1 GiB) */
    int32_t max_depth;   /* deepest accepted nesting of arrays/objects (default 256, max 4096) */
} df_json_options;

/*
 * Parses exactly one JSON value (surrounded by optional whitespace) from
 * text[0..len).  Nodes and strings are allocated from `arena` (options may be
 * NULL for the defaults).  Returns DF_OK and *out, or on failure
 * DF_ERR_JSON_FORMAT (syntax, bad UTF-8, trailing data; err->offset is the
 * byte offset), DF_ERR_LIMIT_EXCEEDED (size or depth) or DF_ERR_OUT_OF_MEMORY,
 * with *out = NULL.  On failure the arena may hold garbage from the attempt;
 * it is released with the arena.
 */
df_errkind df_json_parse(const char *text, size_t len, df_arena *arena, const df_json_options *options,
                         df_json_value **out, df_error *err);

/* Type predicates (accept NULL: false). */
static inline bool df_json_is_null(const df_json_value *v) { return v && v->type == DF_JSON_NULL; }
static inline bool df_json_is_bool(const df_json_value *v) { return v && v->type == DF_JSON_BOOL; }
static inline bool df_json_is_number(const df_json_value *v) { return v && v->type == DF_JSON_NUMBER; }
static inline bool df_json_is_string(const df_json_value *v) { return v && v->type == DF_JSON_STRING; }
static inline bool df_json_is_array(const df_json_value *v) { return v && v->type == DF_JSON_ARRAY; }
static inline bool df_json_is_object(const df_json_value *v) { return v && v->type == DF_JSON_OBJECT; }

/* Member lookup: the last member named `key`, or NULL (also when obj is not an object). */
const df_json_value *df_json_get(const df_json_value *obj, const char *key);
const df_json_value *df_json_get_n(const df_json_value *obj, const char *key, size_t key_len);
/* The string value of member `key`, or NULL when absent or not a string. */
const char *df_json_get_string(const df_json_value *obj, const char *key);
/* True and *out when member `key` is a number with an exact int64 value. */
bool df_json_get_i64(const df_json_value *obj, const char *key, int64_t *out);
/* True and *out when member `key` is a boolean. */
bool df_json_get_bool(const df_json_value *obj, const char *key, bool *out);

/* Element count of an array (0 for anything else) and element access (NULL when out of range). */
static inline size_t df_json_array_len(const df_json_value *v) {
    return df_json_is_array(v) ? v->u.arr.n : 0;
}
static inline const df_json_value *df_json_array_at(const df_json_value *v, size_t i) {
    return df_json_is_array(v) && i < v->u.arr.n ? &v->u.arr.items[i] : NULL;
}
/* True and *out when v is a number with an exact int64 value. */
static inline bool df_json_value_i64(const df_json_value *v, int64_t *out) {
    if (!df_json_is_number(v) || !(v->flags & DF_JSON_NUM_I64)) return false;
    *out = v->u.num.i64;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */

#define DF_JSON_WRITER_MAX_DEPTH 64

typedef struct df_json_writer {
    df_buf *out;            /* destination (borrowed); text is appended */
    int32_t indent;         /* spaces per nesting level; 0 = compact single line */
    int32_t depth;          /* open containers */
    bool first;             /* the next value/key is the first of its container */
    bool after_key;         /* a key was written and its value is pending */
    uint8_t stack[DF_JSON_WRITER_MAX_DEPTH]; /* per open container: 'o' object or 'a' array */
    df_errkind status;      /* first error (sticky); DF_OK while healthy */
    df_error error;         /* details of the first error */
} df_json_writer;

/* Prepares a writer appending to `out` (indent 0 = compact).  Never fails. */
void df_json_writer_init(df_json_writer *w, df_buf *out, int32_t indent);
/*
 * Checks that every container was closed and returns the sticky status; on
 * failure copies the first error into `err`.  Releases nothing: the buffer
 * belongs to the caller.
 */
df_errkind df_json_writer_finish(df_json_writer *w, df_error *err);

/* Containers.  Each returns the sticky status. */
df_errkind df_json_object_begin(df_json_writer *w);
df_errkind df_json_object_end(df_json_writer *w);
df_errkind df_json_array_begin(df_json_writer *w);
df_errkind df_json_array_end(df_json_writer *w);
/* Writes an object key (escaped); the next call writes its value. */
df_errkind df_json_key(df_json_writer *w, const char *key);
df_errkind df_json_key_n(df_json_writer *w, const char *key, size_t len);

/* Values.  Strings are escaped; invalid UTF-8 bytes become U+FFFD; NULL strings are written as null. */
df_errkind df_json_write_string(df_json_writer *w, const char *s);
df_errkind df_json_write_string_n(df_json_writer *w, const char *s, size_t len);
df_errkind df_json_write_int(df_json_writer *w, int64_t v);
df_errkind df_json_write_uint(df_json_writer *w, uint64_t v);
/* Shortest text that reads back to the same double; integral values get ".0"; NaN/inf become null. */
df_errkind df_json_write_double(df_json_writer *w, double v);
df_errkind df_json_write_bool(df_json_writer *w, bool v);
df_errkind df_json_write_null(df_json_writer *w);
/* Appends `json` verbatim as one value; the caller guarantees it is valid JSON. */
df_errkind df_json_write_raw(df_json_writer *w, const char *json);
/* Serialises a parsed DOM value (compactly within the writer's layout). */
df_errkind df_json_write_value(df_json_writer *w, const df_json_value *v);

/* Key + value shorthands for objects. */
df_errkind df_json_kv_string(df_json_writer *w, const char *key, const char *s);
df_errkind df_json_kv_int(df_json_writer *w, const char *key, int64_t v);
df_errkind df_json_kv_uint(df_json_writer *w, const char *key, uint64_t v);
df_errkind df_json_kv_double(df_json_writer *w, const char *key, double v);
df_errkind df_json_kv_bool(df_json_writer *w, const char *key, bool v);
df_errkind df_json_kv_null(df_json_writer *w, const char *key);
df_errkind df_json_kv_raw(df_json_writer *w, const char *key, const char *json);

/*
 * Formats a double as the shortest decimal text that parses back to the same
 * value ("0.1", "1e+300", "5.0"); writes at most 32 bytes including the NUL.
 * Non-finite values give "null".  Returns the length.
 */
size_t df_json_format_double(double v, char buf[32]);

#endif
