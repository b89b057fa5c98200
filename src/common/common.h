/*
 * Internal foundations shared by every module: allocation, errors, arenas,
 * growable buffers and arrays, string helpers (hex, UTF-8), the calendar,
 * hashing and hash maps, clocks and bit tricks.
 *
 * Threads and the worker pool are in common/thread_pool.h; JSON in
 * common/json.h.
 */
#ifndef DF_COMMON_COMMON_H
#define DF_COMMON_COMMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "deltafunnel/df_alloc.h"
#include "deltafunnel/df_error.h"

#define DF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DF_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define DF_LIKELY(x) __builtin_expect(!!(x), 1)
#define DF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* 128-bit integers carry decimals (Arrow decimal128) and overflow-checked products. */
__extension__ typedef __int128 df_i128;
__extension__ typedef unsigned __int128 df_u128;

/*
 * Test-only: a process-wide hook that rewrites, in place, every message text
 * df_error_set/df_error_setv record and every prefix df_error_prefix adds
 * (`size` is the buffer size, the text stays NUL-terminated).  Tests turn it
 * on to prove that no kind, phase or diagnostics code depends on a
 * message's wording; NULL (the default) turns it off.  Never set outside
 * tests.
 */
typedef void (*df__error_message_scrambler)(char *text, size_t size);
void df__error_set_message_scrambler(df__error_message_scrambler fn);

/* Shorthand for the most common failure. */
#define DF_OOM(err) df_error_set((err), DF_ERR_OUT_OF_MEMORY, "out of memory")

/* ------------------------------------------------------------------------ */
/* Arenas: bump allocation for objects that die together (a query, a page).  */

typedef struct df_arena_chunk df_arena_chunk;

typedef struct df_arena {
    df_arena_chunk *head;   /* current chunk (newest first) */
    size_t chunk_size;      /* default size of new chunks */
    size_t total;           /* bytes obtained from the allocator */
    size_t limit;           /* 0 = unlimited; else allocation fails beyond it */
} df_arena;

/* Initializes an empty arena; nothing is allocated until first use. */
void df_arena_init(df_arena *arena, size_t chunk_size, size_t limit);
/* Returns `size` bytes aligned to 16, or NULL when out of memory or over the limit. */
void *df_arena_alloc(df_arena *arena, size_t size);
void *df_arena_calloc(df_arena *arena, size_t count, size_t size);
char *df_arena_strndup(df_arena *arena, const char *s, size_t n);
/* Frees every chunk but the first, keeps the arena usable. */
void df_arena_reset(df_arena *arena);
/* Frees everything. */
void df_arena_destroy(df_arena *arena);

/* ------------------------------------------------------------------------ */
/* Growable byte buffer with a hard cap (curl's dynbuf idea).                 */

typedef struct df_buf {
    char *data;       /* NUL-terminated when non-NULL */
    size_t len;       /* bytes in use, excluding the terminator */
    size_t cap;       /* bytes allocated */
    size_t limit;     /* maximum len; 0 = SIZE_MAX/2 */
} df_buf;

void df_buf_init(df_buf *b, size_t limit);
void df_buf_free(df_buf *b);
void df_buf_reset(df_buf *b);
/* Each returns DF_OK, DF_ERR_OUT_OF_MEMORY or DF_ERR_LIMIT_EXCEEDED (err may be NULL). */
df_errkind df_buf_reserve(df_buf *b, size_t extra, df_error *err);
df_errkind df_buf_append(df_buf *b, const void *data, size_t n, df_error *err);
df_errkind df_buf_append_str(df_buf *b, const char *s, df_error *err);
df_errkind df_buf_append_char(df_buf *b, char c, df_error *err);
df_errkind df_buf_printf(df_buf *b, df_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Hands the data to the caller (free with df_free) and resets the buffer. */
char *df_buf_take(df_buf *b);
/*
 * The same as a result that is never NULL: an empty buffer becomes an empty
 * string the caller can free.  *len (may be NULL) receives the length, since
 * text taken from data may hold NUL bytes.
 */
df_errkind df_buf_take_text(df_buf *b, char **out, size_t *len, df_error *err);

/* ------------------------------------------------------------------------ */
/* Growable arrays (array.c).                                                */

/*
 * DF_ARRAY_RESERVE(items, cap, need, first, err) makes the heap array
 * `items` (a `T *` lvalue: NULL or from df_malloc) hold at least `need`
 * elements.  `cap` is its capacity in elements, an lvalue of any standard
 * integer type, so the structs keep their own count and capacity fields.
 * The capacity starts at `first` and doubles, so appending one element at a
 * time costs amortized O(1); elements already there are kept.
 *
 *     DF_TRY(DF_ARRAY_RESERVE(t->toks, t->cap, t->n + 1, 64, err));
 *     t->toks[t->n++] = tok;
 *
 * Returns DF_OK, DF_ERR_LIMIT_EXCEEDED when `need` does not fit the type of
 * `cap`, or DF_ERR_OUT_OF_MEMORY (also when the byte size would overflow
 * size_t); on failure `items` and `cap` are unchanged.  Only the room check
 * is inline, so a hot append loop pays one compare.  DF_ARRAY_RESERVE_ZEROED
 * also zero-fills the elements past the old capacity.
 */
#define DF_ARRAY_RESERVE(items, cap, need, first, err) DF__ARRAY_RESERVE(items, cap, need, first, false, err)
#define DF_ARRAY_RESERVE_ZEROED(items, cap, need, first, err) DF__ARRAY_RESERVE(items, cap, need, first, true, err)

/*
 * The address of the pointer travels as void * and is read and written with
 * memcpy inside, so no `T **` is ever accessed as `void **`.  _Generic picks
 * the wrapper for the capacity's type (and rejects any other type at compile
 * time); each wrapper knows the largest count its type can hold.
 */
#define DF__ARRAY_RESERVE(items, cap, need, first, zero, err)          \
    _Generic(&(cap),                                                  \
        int *: df__array_reserve_int,                                 \
        unsigned *: df__array_reserve_uint,                           \
        long *: df__array_reserve_long,                               \
        unsigned long *: df__array_reserve_ulong,                     \
        long long *: df__array_reserve_llong,                         \
        unsigned long long *: df__array_reserve_ullong)               \
    ((void *)&(items), &(cap), (need), sizeof *(items), (first), (zero), (err))

/* The slow path: grows *cap (never past `max`) and reallocates. */
df_errkind df__array_grow(void *items_addr, size_t *cap, size_t need, size_t elem, size_t first, size_t max,
                          bool zero, df_error *err);

#define DF__ARRAY_RESERVE_FOR(name, type, max)                                                          \
    static inline df_errkind name(void *items_addr, type *cap, size_t need, size_t elem, size_t first,    \
                                  bool zero, df_error *err) {                                           \
        if (DF_LIKELY(need <= (size_t)*cap)) return DF_OK;                                              \
        size_t c = (size_t)*cap;                                                                        \
        df_errkind k = df__array_grow(items_addr, &c, need, elem, first,                                \
                                      (unsigned long long)(max) > SIZE_MAX ? SIZE_MAX : (size_t)(max),  \
                                      zero, err);                                                       \
        if (k == DF_OK) *cap = (type)c;                                                                 \
        return k;                                                                                       \
    }
DF__ARRAY_RESERVE_FOR(df__array_reserve_int, int, INT_MAX)
DF__ARRAY_RESERVE_FOR(df__array_reserve_uint, unsigned, UINT_MAX)
DF__ARRAY_RESERVE_FOR(df__array_reserve_long, long, LONG_MAX)
DF__ARRAY_RESERVE_FOR(df__array_reserve_ulong, unsigned long, ULONG_MAX)
DF__ARRAY_RESERVE_FOR(df__array_reserve_llong, long long, LLONG_MAX)
DF__ARRAY_RESERVE_FOR(df__array_reserve_ullong, unsigned long long, ULLONG_MAX)
#undef DF__ARRAY_RESERVE_FOR

/* ------------------------------------------------------------------------ */
/* Strings.                                                                  */

/* Case-insensitive ASCII comparison. */
int df_ascii_casecmp(const char *a, const char *b);
int df_ascii_ncasecmp(const char *a, const char *b, size_t n);

/*
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF).  The per-character primitives are inline so the loops built on
 * them (here, in exec's string kernels, in the TDS converters) cost what a
 * private copy would.
 */

/* True for a continuation byte (10xxxxxx), which never starts a character. */
static inline bool df_utf8_is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }

/*
 * The length a lead byte announces: 1 for ASCII, 2..4 for a multi-byte lead,
 * and 1 for a byte that cannot start a sequence, so skipping by it always
 * advances.  It does not check the bytes that follow.
 */
static inline size_t df_utf8_lead_length(uint8_t c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

/*
 * Decodes the character at s[0..n) (n >= 1) strictly: returns its byte
 * length and sets *cp, or returns 0 when the bytes are not a valid or
 * complete sequence.
 */
static inline size_t df_utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if (!df_utf8_is_continuation(s[i])) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/*
 * Decodes one code point at s[0..n) (n >= 1); returns the bytes consumed
 * (>= 1).  An invalid or truncated sequence consumes one byte and yields
 * U+FFFD, so a loop over hostile text always advances.
 */
size_t df_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

/* Length of the longest valid UTF-8 prefix of s[0..n): n when all of it is valid. */
size_t df_utf8_valid_prefix(const uint8_t *s, size_t n);
/* True if [s, s+n) is valid UTF-8. */
bool df_utf8_valid(const uint8_t *s, size_t n);

/* True if cp is a Unicode scalar value (at most U+10FFFF, not a surrogate): what UTF-8 can encode. */
static inline bool df_unicode_is_scalar(uint32_t cp) { return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

/* Writes the 1..4 byte UTF-8 form of scalar value cp (see df_unicode_is_scalar) to out; returns its length. */
static inline size_t df_utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Characters in valid UTF-8 s[0..n): the bytes that are not continuation bytes. */
static inline size_t df_utf8_count(const uint8_t *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += !df_utf8_is_continuation(s[i]);
    return c;
}

/* Byte length of the longest prefix of s[0..n) holding at most `chars` characters. */
static inline size_t df_utf8_prefix(const uint8_t *s, size_t n, size_t chars) {
    size_t i = 0;
    for (size_t c = 0; c < chars && i < n; c++) {
        i++;
        while (i < n && df_utf8_is_continuation(s[i])) i++;
    }
    return i;
}

/* The largest m <= cap (and <= n) at which s[0..m) does not end inside a character. */
static inline size_t df_utf8_cut(const uint8_t *s, size_t n, size_t cap) {
    if (n <= cap) return n;
    while (cap && df_utf8_is_continuation(s[cap])) cap--;
    return cap;
}

/* Hex digits (strings.c).  Inline so a decoding loop pays no call per byte. */

/* The value of hex digit c (either case), or -1 for any other character. */
static inline int df_hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
/* Writes the 2 * n hex digits of data[0..n) to out (no terminator), lowercase unless `upper`. */
void df_hex_encode(const void *data, size_t n, char *out, bool upper);
/*
 * Decodes the n hex digits at hex (either case) into n / 2 bytes at out.
 * False when n is odd or a character is not a hex digit.
 */
bool df_hex_decode(const char *hex, size_t n, uint8_t *out);

/* ------------------------------------------------------------------------ */
/* Calendar: proleptic Gregorian days since 1970-01-01 (civil.c).            */

int64_t df_days_from_civil(int64_t year, int month, int day);
void df_civil_from_days(int64_t days, int64_t *year, int *month, int *day);

/* ------------------------------------------------------------------------ */
/* Hashing (non-cryptographic; for hash tables and track ids).               */

uint64_t df_hash_bytes(const void *data, size_t n, uint64_t seed);
static inline uint64_t df_hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
static inline uint64_t df_hash_combine(uint64_t a, uint64_t b) {
    return df_hash_u64(a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
}
uint64_t df_fnv1a64(const void *data, size_t n);

/* ------------------------------------------------------------------------ */
/* Hash maps (map.c): open addressing with linear probing in power-of-two    */
/* tables that grow at half load.  A zeroed map is empty and ready; nothing  */
/* is allocated until the first insert.  The engine's join and aggregate     */
/* tables are exec/hash_table.c; these are for bookkeeping maps.             */

/* uint64 -> uint64. */
typedef struct df_u64map_slot {
    uint64_t key;       /* 0 marks an empty slot */
    uint64_t value;
} df_u64map_slot;

typedef struct df_u64map {
    df_u64map_slot *slots;  /* cap slots */
    size_t cap;             /* power of two; 0 until the first insert */
    size_t n;               /* keys stored, key 0 included */
    bool has_zero;          /* key 0 cannot mark itself, so it lives here */
    uint64_t zero_value;
} df_u64map;

/* Frees the table; the map is empty and usable again. */
void df_u64map_free(df_u64map *m);
/* True (and *value, which may be NULL, set) when key is present. */
bool df_u64map_get(const df_u64map *m, uint64_t key, uint64_t *value);
/* Sets key -> value, replacing any previous value.  DF_OK or DF_ERR_OUT_OF_MEMORY (map unchanged). */
df_errkind df_u64map_put(df_u64map *m, uint64_t key, uint64_t value, df_error *err);
/*
 * Finds key, adding it with value 0 when absent: *value points at its value
 * (valid until the next insert) and *added tells whether it was new.
 */
df_errkind df_u64map_upsert(df_u64map *m, uint64_t key, uint64_t **value, bool *added, df_error *err);

/* Byte string -> uint64.  The map keeps its own copy of every key. */
typedef struct df_strmap_slot {
    uint64_t hash;      /* of the key, never 0; 0 marks an empty slot */
    size_t off, len;    /* the key is keys[off, off + len) */
    uint64_t value;
} df_strmap_slot;

typedef struct df_strmap {
    df_strmap_slot *slots;  /* cap slots */
    size_t cap;             /* power of two; 0 until the first insert */
    size_t n;               /* keys stored */
    char *keys;             /* key bytes, back to back (offsets survive growth) */
    size_t keys_len, keys_cap;
} df_strmap;

void df_strmap_free(df_strmap *m);
bool df_strmap_get(const df_strmap *m, const void *key, size_t len, uint64_t *value);
/* As df_u64map_upsert; a new key's bytes are copied.  DF_OK or DF_ERR_OUT_OF_MEMORY (map unchanged). */
df_errkind df_strmap_upsert(df_strmap *m, const void *key, size_t len, uint64_t **value, bool *added, df_error *err);

/* ------------------------------------------------------------------------ */
/* Clocks.                                                                   */

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
uint64_t df_now_ns(void);
/* Wall-clock nanoseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t df_wall_ns(void);
/* CPU time of the calling thread, nanoseconds. */
uint64_t df_thread_cpu_ns(void);

/* ------------------------------------------------------------------------ */
/* Overflow-checked size arithmetic.                                         */

static inline bool df_mul_overflow_size(size_t a, size_t b, size_t *out) {
    return __builtin_mul_overflow(a, b, out);
}
static inline bool df_add_overflow_size(size_t a, size_t b, size_t *out) {
    return __builtin_add_overflow(a, b, out);
}

/* Little-endian loads/stores that tolerate unaligned pointers. */
static inline uint16_t df_load_le16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t df_load_le32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t df_load_le64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void df_store_le16(void *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void df_store_le32(void *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void df_store_le64(void *p, uint64_t v) { memcpy(p, &v, 8); }

/* ------------------------------------------------------------------------ */
/* Opening input files.                                                      */

/*
 * Opens `path` read-only as a regular file and returns its descriptor in
 * *fd (and its status in *st when `st` is not NULL).  The open uses
 * O_NONBLOCK, so that a FIFO in place of a file cannot wait forever for a
 * writer, plus O_CLOEXEC, O_NOCTTY and `extra_flags` (O_NOFOLLOW where a
 * symlink must not be followed); the descriptor is then fstat'ed, anything
 * but a regular file (FIFO, socket, device, directory) is refused, and
 * O_NONBLOCK is cleared again so later reads behave normally.
 *
 * Returns 0 on success; an errno value when open, fstat or fcntl failed
 * (nothing is left open); or -1 when `path` names something other than a
 * regular file (nothing is left open; *st, when given, says what it is,
 * for df_file_kind_name).  Records no df_error: callers choose the kind
 * and whether the path may be named.
 */
struct stat;
int df_file_open_regular(const char *path, int extra_flags, int *fd, struct stat *st);
/* "a FIFO", "a directory", "a socket", ... for an st_mode (never NULL). */
const char *df_file_kind_name(unsigned mode);

#endif
