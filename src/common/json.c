/*
 * JSON parser (RFC 8259, strict) and writer.
 *
 * Parsing is recursive descent with an explicit depth bound.  To avoid one
 * allocation per node, the elements of an array (members of an object) are
 * first pushed on a scratch stack shared by the whole parse; when the
 * container closes, its slice of the stack is copied into the arena as one
 * contiguous block and the stack is popped back.  The DOM therefore costs
 * one arena allocation per container and per string/number, and the scratch
 * stacks are freed when the parse ends.
 *
 * Strings are scanned eight bytes at a time for the quote, the backslash and
 * control characters; UTF-8 is validated only for strings that contain
 * non-ASCII bytes.  Escape decoding never expands text (an escape is longer
 * than what it encodes), so the decoded string fits in an arena block the
 * size of the raw one.
 *
 * Numbers keep their text.  Significant digits are accumulated into a
 * uint64 mantissa with a decimal exponent; from that we derive the exact
 * integer (when the value is integral and fits), the double (exactly for
 * mantissas up to 2^53 and exponents up to 22, by Clinger's fast path; by
 * strtod otherwise) and whether the double is exact.
 */
#include "common/json.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_MAX_BYTES ((size_t)1 << 30)
#define DEFAULT_MAX_DEPTH 256
#define HARD_MAX_DEPTH 4096

typedef struct parser {
    const char *start;      /* first byte of the text (for offsets) */
    const char *p;          /* cursor */
    const char *end;        /* one past the last byte */
    df_arena *arena;        /* destination of nodes and strings */
    int32_t depth;          /* containers currently open */
    int32_t max_depth;      /* bound on depth */
    df_json_value *vals;    /* scratch stack of array elements */
    size_t nvals, cap_vals; /* used / allocated slots of vals */
    df_json_member *mems;   /* scratch stack of object members */
    size_t nmems, cap_mems; /* used / allocated slots of mems */
    df_error *err;          /* caller's error (may be NULL) */
} parser;

static df_errkind fail_at(parser *ps, const char *at, const char *what) {
    df_error_set(ps->err, DF_ERR_JSON_FORMAT, "invalid JSON at offset %td: %s", at - ps->start, what);
    df_error_set_offset(ps->err, at - ps->start);
    return DF_ERR_JSON_FORMAT;
}

static df_errkind oom(parser *ps) {
    return DF_OOM(ps->err);
}

static inline void skip_ws(parser *ps) {
    const char *p = ps->p, *end = ps->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    ps->p = p;
}

/* ------------------------------------------------------------------------ */
/* Strings                                                                   */

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* True if some byte of w is zero. */
static inline uint64_t has_zero(uint64_t w) { return (w - ONES) & ~w & HIGHS; }

/* Reads the 4 hex digits after "\u" at p (p points at 'u'); -1 when malformed or truncated. */
static int32_t read_u4(const char *p, const char *end) {
    if (end - p < 5) return -1;
    int32_t v = 0;
    for (int i = 1; i <= 4; i++) {
        int h = df_hex_value(p[i]);
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

/*
 * Decodes the escapes of the raw string [s, q) into dst (at least q - s + 1
 * bytes); returns the decoded length or -1 after recording an error.
 */
static ptrdiff_t decode_escapes(parser *ps, const char *s, const char *q, char *dst) {
    char *d = dst;
    while (s < q) {
        const char *bs = memchr(s, '\\', (size_t)(q - s));
        if (!bs) bs = q;
        memcpy(d, s, (size_t)(bs - s));
        d += bs - s;
        s = bs;
        if (s >= q) break;
        char c = s[1];
        switch (c) {
        case '"': *d++ = '"'; s += 2; continue;
        case '\\': *d++ = '\\'; s += 2; continue;
        case '/': *d++ = '/'; s += 2; continue;
        case 'b': *d++ = '\b'; s += 2; continue;
        case 'f': *d++ = '\f'; s += 2; continue;
        case 'n': *d++ = '\n'; s += 2; continue;
        case 'r': *d++ = '\r'; s += 2; continue;
        case 't': *d++ = '\t'; s += 2; continue;
        case 'u': break;
        default: fail_at(ps, s, "invalid escape"); return -1;
        }
        int32_t cp = read_u4(s + 1, q);
        if (cp < 0) { fail_at(ps, s, "invalid \\u escape"); return -1; }
        if (cp >= 0xDC00 && cp <= 0xDFFF) { fail_at(ps, s, "unpaired low surrogate"); return -1; }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int32_t lo = (q - s >= 12 && s[6] == '\\' && s[7] == 'u') ? read_u4(s + 7, q) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) { fail_at(ps, s, "unpaired high surrogate"); return -1; }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            s += 12;
        } else {
            s += 6;
        }
        d += df_utf8_encode((uint32_t)cp, (uint8_t *)d);   /* surrogates were paired or refused above */
    }
    *d = '\0';
    return d - dst;
}

/* Parses the string whose opening quote is at ps->p; leaves the cursor after the closing quote. */
static df_errkind parse_string(parser *ps, const char **out, size_t *out_len) {
    const char *open = ps->p, *s = open + 1, *q = s, *end = ps->end;
    bool escapes = false;
    uint64_t high = 0;
    for (;;) {
        /* Skip eight plain bytes at a time: no quote, backslash or control byte. */
        while (end - q >= 8) {
            uint64_t w = df_load_le64(q);
            uint64_t special = has_zero(w ^ (ONES * '"')) | has_zero(w ^ (ONES * '\\')) |
                               ((w - ONES * 0x20) & ~w & HIGHS);
            if (special) break;
            high |= w;
            q += 8;
        }
        if (q >= end) return fail_at(ps, open, "unterminated string");
        unsigned char c = (unsigned char)*q;
        if (c == '"') break;
        if (c == '\\') {
            escapes = true;
            q += 2;
            continue;
        }
        if (c < 0x20) return fail_at(ps, q, "control character in string");
        high |= c;
        q++;
    }
    if ((high & HIGHS) && !df_utf8_valid((const uint8_t *)s, (size_t)(q - s)))
        return fail_at(ps, open, "invalid UTF-8 in string");
    size_t raw = (size_t)(q - s);
    char *dst = df_arena_alloc(ps->arena, raw + 1);
    if (!dst) return oom(ps);
    if (escapes) {
        ptrdiff_t n = decode_escapes(ps, s, q, dst);
        if (n < 0) return DF_ERR_JSON_FORMAT;
        *out_len = (size_t)n;
    } else {
        memcpy(dst, s, raw);
        dst[raw] = '\0';
        *out_len = raw;
    }
    *out = dst;
    ps->p = q + 1;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */

static const double pow10_exact[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

#define TWO53 ((uint64_t)1 << 53)

/* True if the integer m is exactly representable as a double. */
static bool u64_fits_double(uint64_t m) {
    if (m == 0) return true;
    return (m >> __builtin_ctzll(m)) < TWO53;
}

/* Digit accumulator: value = m * 10^dropped (+ lost digits when inexact). */
typedef struct digits {
    uint64_t m;        /* significant digits that fit */
    int64_t dropped;   /* digits that did not fit (they scale m by 10 each) */
    bool lost;         /* a dropped digit was non-zero */
} digits;

static inline void add_digit(digits *d, unsigned dig) {
    if (d->dropped == 0 && d->m <= (UINT64_MAX - dig) / 10) {
        d->m = d->m * 10 + dig;
    } else {
        d->dropped++;
        if (dig) d->lost = true;
    }
}

/* Sets the integer flags: the value is (neg ? -1 : 1) * m * 10^e10 when exact. */
static void set_integer(df_json_value *out, bool neg, uint64_t m, int64_t e10) {
    uint64_t v = m;
    if (e10 > 0) {
        if (m != 0) {
            if (e10 > 19) return;
            for (int64_t i = 0; i < e10; i++) {
                if (v > UINT64_MAX / 10) return;
                v *= 10;
            }
        }
    } else if (e10 < 0) {
        if (m != 0) {
            if (e10 < -19) return;
            uint64_t p = 1;
            for (int64_t i = 0; i < -e10; i++) p *= 10;
            if (m % p) return;
            v = m / p;
        }
    }
    if (!neg) {
        out->flags |= DF_JSON_NUM_U64;
        out->u.num.u64 = v;
        if (v <= (uint64_t)INT64_MAX) {
            out->flags |= DF_JSON_NUM_I64;
            out->u.num.i64 = (int64_t)v;
        }
    } else {
        if (v == 0) {
            out->flags |= DF_JSON_NUM_U64 | DF_JSON_NUM_I64;
            out->u.num.u64 = 0;
            out->u.num.i64 = 0;
        } else if (v <= (uint64_t)INT64_MAX + 1) {
            out->flags |= DF_JSON_NUM_I64;
            out->u.num.i64 = (int64_t)(0 - v);
        }
    }
}

/* Computes the double of an exact decimal m * 10^e10 when it can be done exactly; false otherwise. */
static bool exact_double(uint64_t m, int64_t e10, double *out, bool *exact) {
    if (m == 0) {
        *out = 0.0;
        *exact = true;
        return true;
    }
    if (e10 < 0 && e10 >= -27) {
        /* m / 10^k = (m / 5^k) / 2^k is exact when 5^k divides m and the quotient fits. */
        uint64_t p5 = 1;
        for (int64_t i = 0; i < -e10; i++) p5 *= 5;
        if (m % p5 == 0 && u64_fits_double(m / p5)) {
            *out = ldexp((double)(m / p5), (int)e10);
            *exact = true;
            return true;
        }
    }
    if (m <= TWO53 && e10 >= -22 && e10 <= 22) {
        /* Clinger: both operands exact, so one IEEE operation rounds correctly. */
        *out = e10 >= 0 ? (double)m * pow10_exact[e10] : (double)m / pow10_exact[-e10];
        *exact = false;
        if (e10 >= 0) {
            /* The true product is below 2^127; it is a double when its odd part has <= 53 bits. */
            df_u128 prod = m;
            for (int64_t i = 0; i < e10; i++) prod *= 10;
            while (!(prod & 1)) prod >>= 1;
            *exact = prod < TWO53;
        }
        return true;
    }
    return false;
}

/* strtod on the arena copy, independent of the C locale's decimal point. */
static double parse_double_text(char *text, size_t len) {
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
        char *dot = memchr(text, '.', len);
        if (dot) *dot = dp[0];
        double v = strtod(text, NULL);
        if (dot) *dot = '.';
        return v;
    }
    return strtod(text, NULL);
}

static df_errkind parse_number(parser *ps, df_json_value *out) {
    const char *b = ps->p, *q = b, *end = ps->end;
    bool neg = false, integer = true;
    digits d = {0, 0, false};
    int64_t frac = 0, exp = 0;
    if (*q == '-') {
        neg = true;
        q++;
    }
    if (q >= end || *q < '0' || *q > '9') return fail_at(ps, b, "invalid number");
    if (*q == '0') {
        q++;
        if (q < end && *q >= '0' && *q <= '9') return fail_at(ps, b, "leading zero in number");
    } else {
        while (q < end && *q >= '0' && *q <= '9') add_digit(&d, (unsigned)(*q++ - '0'));
    }
    if (q < end && *q == '.') {
        integer = false;
        q++;
        if (q >= end || *q < '0' || *q > '9') return fail_at(ps, q, "digit expected after decimal point");
        /* value = (all digits as one integer) * 10^(exp - fraction digits) */
        while (q < end && *q >= '0' && *q <= '9') {
            add_digit(&d, (unsigned)(*q++ - '0'));
            frac--;
        }
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        integer = false;
        q++;
        bool eneg = false;
        if (q < end && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (q >= end || *q < '0' || *q > '9') return fail_at(ps, q, "digit expected in exponent");
        while (q < end && *q >= '0' && *q <= '9') {
            if (exp < 1000000000) exp = exp * 10 + (*q - '0');
            q++;
        }
        if (eneg) exp = -exp;
    }
    size_t len = (size_t)(q - b);
    char *text = df_arena_strndup(ps->arena, b, len);
    if (!text) return oom(ps);
    out->type = DF_JSON_NUMBER;
    out->flags = integer ? DF_JSON_NUM_INTEGER : 0;
    out->u.num.text = text;
    out->u.num.len = len;
    out->u.num.i64 = 0;
    out->u.num.u64 = 0;
    int64_t e10 = exp + frac + d.dropped;
    bool exact = false;
    double f;
    if (!d.lost) {
        set_integer(out, neg, d.m, e10);
        if (!exact_double(d.m, e10, &f, &exact)) f = parse_double_text(text, len);
        else if (neg) f = -f;
    } else {
        f = parse_double_text(text, len);
    }
    if (exact) out->flags |= DF_JSON_NUM_F64_EXACT;
    out->u.num.f64 = f;
    ps->p = q;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Values and containers                                                     */

static df_errkind parse_value(parser *ps, df_json_value *out);

static df_errkind enter(parser *ps) {
    if (++ps->depth > ps->max_depth) {
        df_error_set(ps->err, DF_ERR_LIMIT_EXCEEDED, "JSON nesting deeper than %d levels at offset %td",
                     ps->max_depth, ps->p - ps->start);
        df_error_set_offset(ps->err, ps->p - ps->start);
        return DF_ERR_LIMIT_EXCEEDED;
    }
    return DF_OK;
}

static df_errkind parse_array(parser *ps, df_json_value *out) {
    DF_TRY(enter(ps));
    size_t mark = ps->nvals;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
    } else {
        for (;;) {
            df_json_value v;
            DF_TRY(parse_value(ps, &v));
            if (DF_ARRAY_RESERVE(ps->vals, ps->cap_vals, ps->nvals + 1, 64, NULL)) return oom(ps);
            ps->vals[ps->nvals++] = v;
            skip_ws(ps);
            if (ps->p >= ps->end) return fail_at(ps, ps->p, "unterminated array");
            char c = *ps->p++;
            if (c == ']') break;
            if (c != ',') return fail_at(ps, ps->p - 1, "expected ',' or ']'");
        }
    }
    size_t n = ps->nvals - mark;
    out->type = DF_JSON_ARRAY;
    out->flags = 0;
    out->u.arr.n = n;
    out->u.arr.items = NULL;
    if (n) {
        out->u.arr.items = df_arena_alloc(ps->arena, n * sizeof(df_json_value));
        if (!out->u.arr.items) return oom(ps);
        memcpy(out->u.arr.items, ps->vals + mark, n * sizeof(df_json_value));
    }
    ps->nvals = mark;
    ps->depth--;
    return DF_OK;
}

static df_errkind parse_object(parser *ps, df_json_value *out) {
    DF_TRY(enter(ps));
    size_t mark = ps->nmems;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
    } else {
        for (;;) {
            df_json_member m;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"') return fail_at(ps, ps->p, "expected a string key");
            DF_TRY(parse_string(ps, &m.key, &m.key_len));
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return fail_at(ps, ps->p, "expected ':'");
            ps->p++;
            DF_TRY(parse_value(ps, &m.value));
            if (DF_ARRAY_RESERVE(ps->mems, ps->cap_mems, ps->nmems + 1, 64, NULL)) return oom(ps);
            ps->mems[ps->nmems++] = m;
            skip_ws(ps);
            if (ps->p >= ps->end) return fail_at(ps, ps->p, "unterminated object");
            char c = *ps->p++;
            if (c == '}') break;
            if (c != ',') return fail_at(ps, ps->p - 1, "expected ',' or '}'");
        }
    }
    size_t n = ps->nmems - mark;
    out->type = DF_JSON_OBJECT;
    out->flags = 0;
    out->u.obj.n = n;
    out->u.obj.members = NULL;
    if (n) {
        out->u.obj.members = df_arena_alloc(ps->arena, n * sizeof(df_json_member));
        if (!out->u.obj.members) return oom(ps);
        memcpy(out->u.obj.members, ps->mems + mark, n * sizeof(df_json_member));
    }
    ps->nmems = mark;
    ps->depth--;
    return DF_OK;
}

static df_errkind parse_literal(parser *ps, const char *word, size_t n, df_json_value *out,
                                df_json_type type, bool b) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return fail_at(ps, ps->p, "invalid literal");
    ps->p += n;
    out->type = type;
    out->flags = 0;
    out->u.b = b;
    return DF_OK;
}

static df_errkind parse_value(parser *ps, df_json_value *out) {
    skip_ws(ps);
    if (ps->p >= ps->end) return fail_at(ps, ps->p, "unexpected end of input");
    switch (*ps->p) {
    case '{': return parse_object(ps, out);
    case '[': return parse_array(ps, out);
    case '"':
        out->type = DF_JSON_STRING;
        out->flags = 0;
        return parse_string(ps, &out->u.str.ptr, &out->u.str.len);
    case 't': return parse_literal(ps, "true", 4, out, DF_JSON_BOOL, true);
    case 'f': return parse_literal(ps, "false", 5, out, DF_JSON_BOOL, false);
    case 'n': return parse_literal(ps, "null", 4, out, DF_JSON_NULL, false);
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return parse_number(ps, out);
    default:
        return fail_at(ps, ps->p, "unexpected character");
    }
}

df_errkind df_json_parse(const char *text, size_t len, df_arena *arena, const df_json_options *options,
                         df_json_value **out, df_error *err) {
    *out = NULL;
    size_t max_bytes = options && options->max_bytes ? options->max_bytes : DEFAULT_MAX_BYTES;
    int32_t max_depth = options && options->max_depth > 0 ? options->max_depth : DEFAULT_MAX_DEPTH;
    if (max_depth > HARD_MAX_DEPTH) max_depth = HARD_MAX_DEPTH;
    if (len > max_bytes) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "JSON text of %zu bytes exceeds the limit of %zu", len, max_bytes);
    if (!text && len) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "JSON text is NULL");
    parser ps = {.start = text, .p = text, .end = text + len, .arena = arena, .max_depth = max_depth, .err = err};
    df_json_value *root = df_arena_alloc(arena, sizeof *root);
    df_errkind k = root ? parse_value(&ps, root) : oom(&ps);
    if (k == DF_OK) {
        skip_ws(&ps);
        if (ps.p != ps.end) k = fail_at(&ps, ps.p, "trailing characters after the value");
    }
    df_free(ps.vals);
    df_free(ps.mems);
    if (k == DF_OK) *out = root;
    return k;
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                    */

const df_json_value *df_json_get_n(const df_json_value *obj, const char *key, size_t key_len) {
    if (!df_json_is_object(obj)) return NULL;
    for (size_t i = obj->u.obj.n; i-- > 0;) {
        const df_json_member *m = &obj->u.obj.members[i];
        if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) return &m->value;
    }
    return NULL;
}

const df_json_value *df_json_get(const df_json_value *obj, const char *key) {
    return df_json_get_n(obj, key, strlen(key));
}

const char *df_json_get_string(const df_json_value *obj, const char *key) {
    const df_json_value *v = df_json_get(obj, key);
    return df_json_is_string(v) ? v->u.str.ptr : NULL;
}

bool df_json_get_i64(const df_json_value *obj, const char *key, int64_t *out) {
    return df_json_value_i64(df_json_get(obj, key), out);
}

bool df_json_get_bool(const df_json_value *obj, const char *key, bool *out) {
    const df_json_value *v = df_json_get(obj, key);
    if (!df_json_is_bool(v)) return false;
    *out = v->u.b;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */

void df_json_writer_init(df_json_writer *w, df_buf *out, int32_t indent) {
    memset(w, 0, sizeof *w);
    w->out = out;
    w->indent = indent > 0 ? indent : 0;
    w->first = true;
    w->error.offset = -1;
}

static df_errkind writer_fail(df_json_writer *w, df_errkind kind, const char *msg) {
    if (w->status == DF_OK) {
        w->status = kind;
        df_error_set(&w->error, kind, "%s", msg);
    }
    return w->status;
}

/* Records a failed buffer operation as the sticky error. */
static df_errkind writer_check(df_json_writer *w, df_errkind k) {
    if (k != DF_OK && w->status == DF_OK) w->status = k;
    return w->status;
}

static df_errkind put(df_json_writer *w, const char *s, size_t n) {
    if (w->status) return w->status;
    return writer_check(w, df_buf_append(w->out, s, n, &w->error));
}

static df_errkind newline(df_json_writer *w) {
    if (!w->indent) return w->status;
    size_t n = 1 + (size_t)w->indent * (size_t)w->depth;
    if (writer_check(w, df_buf_reserve(w->out, n, &w->error))) return w->status;
    char *d = w->out->data + w->out->len;
    d[0] = '\n';
    memset(d + 1, ' ', n - 1);
    w->out->len += n;
    w->out->data[w->out->len] = '\0';
    return DF_OK;
}

/* Writes the separator before a value and checks that a value may appear here. */
static df_errkind begin_value(df_json_writer *w) {
    if (w->status) return w->status;
    if (w->depth == 0) {
        if (!w->first) return writer_fail(w, DF_ERR_INTERNAL, "JSON writer: second top-level value");
    } else if (w->stack[w->depth - 1] == 'o') {
        if (!w->after_key) return writer_fail(w, DF_ERR_INTERNAL, "JSON writer: object value without a key");
    } else {
        if (!w->first && put(w, ",", 1)) return w->status;
        if (newline(w)) return w->status;
    }
    w->after_key = false;
    w->first = false;
    return DF_OK;
}

static df_errkind open_container(df_json_writer *w, char kind, char bracket) {
    if (begin_value(w)) return w->status;
    if (w->depth >= DF_JSON_WRITER_MAX_DEPTH) return writer_fail(w, DF_ERR_LIMIT_EXCEEDED, "JSON writer: nesting too deep");
    w->stack[w->depth++] = (uint8_t)kind;
    w->first = true;
    return put(w, &bracket, 1);
}

static df_errkind close_container(df_json_writer *w, char kind, char bracket) {
    if (w->status) return w->status;
    if (w->depth == 0 || w->stack[w->depth - 1] != kind || w->after_key)
        return writer_fail(w, DF_ERR_INTERNAL, "JSON writer: mismatched container end");
    bool empty = w->first;
    w->depth--;
    if (!empty && newline(w)) return w->status;
    w->first = false;
    return put(w, &bracket, 1);
}

df_errkind df_json_object_begin(df_json_writer *w) { return open_container(w, 'o', '{'); }
df_errkind df_json_object_end(df_json_writer *w) { return close_container(w, 'o', '}'); }
df_errkind df_json_array_begin(df_json_writer *w) { return open_container(w, 'a', '['); }
df_errkind df_json_array_end(df_json_writer *w) { return close_container(w, 'a', ']'); }

/* Length of the valid UTF-8 sequence starting at s (n bytes available), or 0. */

static df_errkind put_escaped(df_json_writer *w, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    if (put(w, "\"", 1)) return w->status;
    size_t run = 0, i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t l = df_utf8_next(s + i, n - i, &cp);
            if (l) {
                i += l;
                continue;
            }
        }
        if (put(w, str + run, i - run)) return w->status;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            if (c >= 0x80) { /* invalid UTF-8 byte: U+FFFD */
                memcpy(esc, "\xEF\xBF\xBD", 3);
                elen = 3;
            } else {
                memcpy(esc, "\\u00", 4);
                df_hex_encode(&c, 1, esc + 4, false);
                elen = 6;
            }
        }
        if (put(w, esc, elen)) return w->status;
        i++;
        run = i;
    }
    if (put(w, str + run, n - run)) return w->status;
    return put(w, "\"", 1);
}

df_errkind df_json_key_n(df_json_writer *w, const char *key, size_t len) {
    if (w->status) return w->status;
    if (w->depth == 0 || w->stack[w->depth - 1] != 'o' || w->after_key)
        return writer_fail(w, DF_ERR_INTERNAL, "JSON writer: key outside an object");
    if (!w->first && put(w, ",", 1)) return w->status;
    if (newline(w) || put_escaped(w, key, len)) return w->status;
    if (put(w, w->indent ? ": " : ":", w->indent ? 2 : 1)) return w->status;
    w->after_key = true;
    return DF_OK;
}

df_errkind df_json_key(df_json_writer *w, const char *key) {
    return df_json_key_n(w, key, strlen(key));
}

df_errkind df_json_write_string_n(df_json_writer *w, const char *s, size_t len) {
    if (!s) return df_json_write_null(w);
    if (begin_value(w)) return w->status;
    return put_escaped(w, s, len);
}

df_errkind df_json_write_string(df_json_writer *w, const char *s) {
    return df_json_write_string_n(w, s, s ? strlen(s) : 0);
}

df_errkind df_json_write_int(df_json_writer *w, int64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (begin_value(w)) return w->status;
    return put(w, buf, (size_t)n);
}

df_errkind df_json_write_uint(df_json_writer *w, uint64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    if (begin_value(w)) return w->status;
    return put(w, buf, (size_t)n);
}

size_t df_json_format_double(double v, char buf[32]) {
    if (!isfinite(v)) {
        memcpy(buf, "null", 5);
        return 4;
    }
    /* The 15-digit rounding is the shortest form whenever one of <= 15 digits
     * exists (at most one 15-digit decimal lies within half an ulp); else try
     * 16 and 17 digits, and 17 always reads back exactly. */
    /* Subnormals carry fewer significant bits, so there the search starts at one digit. */
    char tmp[48]; /* %.17g needs at most 24 bytes; the slack keeps the compiler's bound check quiet */
    for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    size_t tlen = strlen(tmp);
    if (tlen > 29) tlen = 29;
    memcpy(buf, tmp, tlen);
    buf[tlen] = '\0';
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
        char *c = strchr(buf, dp[0]);
        if (c) *c = '.';
    }
    size_t n = strlen(buf);
    if (!strpbrk(buf, ".eE") && n + 2 < 32) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return n;
}

df_errkind df_json_write_double(df_json_writer *w, double v) {
    char buf[32];
    size_t n = df_json_format_double(v, buf);
    if (begin_value(w)) return w->status;
    return put(w, buf, n);
}

df_errkind df_json_write_bool(df_json_writer *w, bool v) {
    if (begin_value(w)) return w->status;
    return v ? put(w, "true", 4) : put(w, "false", 5);
}

df_errkind df_json_write_null(df_json_writer *w) {
    if (begin_value(w)) return w->status;
    return put(w, "null", 4);
}

df_errkind df_json_write_raw(df_json_writer *w, const char *json) {
    if (!json) return df_json_write_null(w);
    if (begin_value(w)) return w->status;
    return put(w, json, strlen(json));
}

df_errkind df_json_write_value(df_json_writer *w, const df_json_value *v) {
    if (!v) return df_json_write_null(w);
    switch (v->type) {
    case DF_JSON_NULL: return df_json_write_null(w);
    case DF_JSON_BOOL: return df_json_write_bool(w, v->u.b);
    case DF_JSON_NUMBER:
        if (begin_value(w)) return w->status;
        return put(w, v->u.num.text, v->u.num.len);
    case DF_JSON_STRING: return df_json_write_string_n(w, v->u.str.ptr, v->u.str.len);
    case DF_JSON_ARRAY:
        df_json_array_begin(w);
        for (size_t i = 0; i < v->u.arr.n && !w->status; i++) df_json_write_value(w, &v->u.arr.items[i]);
        return df_json_array_end(w);
    case DF_JSON_OBJECT:
        df_json_object_begin(w);
        for (size_t i = 0; i < v->u.obj.n && !w->status; i++) {
            df_json_key_n(w, v->u.obj.members[i].key, v->u.obj.members[i].key_len);
            df_json_write_value(w, &v->u.obj.members[i].value);
        }
        return df_json_object_end(w);
    }
    return writer_fail(w, DF_ERR_INTERNAL, "JSON writer: unknown value type");
}

df_errkind df_json_kv_string(df_json_writer *w, const char *key, const char *s) {
    df_json_key(w, key);
    return df_json_write_string(w, s);
}
df_errkind df_json_kv_int(df_json_writer *w, const char *key, int64_t v) {
    df_json_key(w, key);
    return df_json_write_int(w, v);
}
df_errkind df_json_kv_uint(df_json_writer *w, const char *key, uint64_t v) {
    df_json_key(w, key);
    return df_json_write_uint(w, v);
}
df_errkind df_json_kv_double(df_json_writer *w, const char *key, double v) {
    df_json_key(w, key);
    return df_json_write_double(w, v);
}
df_errkind df_json_kv_bool(df_json_writer *w, const char *key, bool v) {
    df_json_key(w, key);
    return df_json_write_bool(w, v);
}
df_errkind df_json_kv_null(df_json_writer *w, const char *key) {
    df_json_key(w, key);
    return df_json_write_null(w);
}
df_errkind df_json_kv_raw(df_json_writer *w, const char *key, const char *json) {
    df_json_key(w, key);
    return df_json_write_raw(w, json);
}

df_errkind df_json_writer_finish(df_json_writer *w, df_error *err) {
    if (w->status == DF_OK && (w->depth != 0 || w->after_key))
        writer_fail(w, DF_ERR_INTERNAL, "JSON writer: unclosed container");
    if (w->status != DF_OK && err) {
        df_error tmp = w->error;
        tmp.context = NULL;
        df_error_clear(err);
        *err = tmp;
    }
    return w->status;
}
