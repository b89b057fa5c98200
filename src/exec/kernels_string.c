/*
 * String kernels (UTF-8 aware): lower, upper, initcap, trims, substr, left,
 * right, lengths, concat / || / concat_ws, replace, translate, lpad / rpad,
 * reverse, repeat, strpos, starts_with / ends_with / contains, split_part,
 * overlay, chr, to_hex, ascii.
 *
 * Positions and lengths count characters (code points), as PostgreSQL and
 * DataFusion do.  Case mapping covers ASCII, Latin-1, Latin Extended-A,
 * Greek and Cyrillic, whose upper and lower forms have equal UTF-8 length,
 * so the output never grows; other scripts pass through unchanged.
 *
 * Every kernel writes through the shared string builder (kernels.c): one
 * data buffer per output vector, grown geometrically, no per-value
 * allocation.  NULL arguments give NULL unless the function says
 * otherwise (concat skips them, concat_ws skips NULL values).
 */
#include "exec/exec_int.h"

#include <inttypes.h>
#include <stdio.h>

/* The largest single string value a function may produce (bounds repeat/lpad/rpad). */
#define DF_MAX_STRING_VALUE (256 * 1024 * 1024)

/* ------------------------------------------------------------------------ */
/* UTF-8 helpers                                                             */

/* The common primitives in the int32 lengths of string values. */

/* Length in bytes of the character starting with byte c (1 for invalid bytes). */
static inline int32_t u8len(uint8_t c) { return (int32_t)df_utf8_lead_length(c); }

static inline int64_t char_count(const uint8_t *s, int32_t n) { return (int64_t)df_utf8_count(s, (size_t)n); }

/*
 * Byte offset of character `ci` (0-based) or n when past the end.  It steps
 * by lead lengths (not df_utf8_prefix, which skips continuation bytes) so a
 * stray byte in unvalidated data counts as one character.
 */
static int32_t char_offset(const uint8_t *s, int32_t n, int64_t ci) {
    int32_t i = 0;
    while (i < n && ci > 0) {
        i += u8len(s[i]);
        ci--;
    }
    return i > n ? n : i;
}

/* The code point of a sequence of known length, unchecked (the caller has the length from u8len). */
static uint32_t decode(const uint8_t *s, int32_t len) {
    switch (len) {
    case 2: return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    case 4:
        return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
               (s[3] & 0x3F);
    default: return s[0];
    }
}


/* Case mapping for two-byte scripts with same-length pairs; returns cp when unmapped. */
static uint32_t map_case(uint32_t cp, bool upper) {
    if (upper) {
        if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 0x20;
        if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
            bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
            if (odd_lower ? (cp & 1) == 0 : (cp & 1) == 1) return cp - 1;
            return cp;
        }
        if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 0x20;
        if (cp >= 0x430 && cp <= 0x44F) return cp - 0x20;
        if (cp >= 0x450 && cp <= 0x45F) return cp - 0x50;
        return cp;
    }
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_lower ? (cp & 1) == 1 : (cp & 1) == 0) return cp + 1;
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 0x20;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    return cp;
}

/* Case-converts s into d (same length); mode 0 lower, 1 upper, 2 initcap. */
static void convert_case(const uint8_t *s, int32_t n, uint8_t *d, int mode) {
    bool word_start = true;
    for (int32_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            bool up = mode == 1 || (mode == 2 && word_start);
            if (up && c >= 'a' && c <= 'z') c = (uint8_t)(c - 32);
            else if (!up && c >= 'A' && c <= 'Z') c = (uint8_t)(c + 32);
            d[i++] = c;
            word_start = !alnum;
            continue;
        }
        int32_t len = u8len(c);
        if (i + len > n) len = n - i;
        if (len == 2) {
            uint32_t cp = decode(s + i, 2);
            bool up = mode == 1 || (mode == 2 && word_start);
            uint32_t m = map_case(cp, up);
            if (m >= 0x80 && m < 0x800) {
                df_utf8_encode(m, d + i);
                i += 2;
                word_start = false;
                continue;
            }
        }
        df__memcpy(d + i, s + i, (size_t)len);
        i += len;
        word_start = false;
    }
}

/* ------------------------------------------------------------------------ */
/* Kernel frame                                                              */

#define STR(a, i, n) ((const uint8_t *)df_vec_bytes((a).vec, (a).is_const ? 0 : (i), (n)))
#define I64(a, i) (DF_VEC_VALUES((a).vec, int64_t)[(a).is_const ? 0 : (i)])

/* Sum of the byte lengths of string argument `a` over the batch (an output size estimate). */
static int64_t bytes_of(const df_kargs *k, const df_xreg *a) {
    if (a->vec->type->id != DF_TYPE_UTF8 && a->vec->type->id != DF_TYPE_BINARY) return k->n * 8;
    if (a->is_const) {
        int32_t n;
        df_vec_bytes(a->vec, 0, &n);
        return (int64_t)n * k->n;
    }
    const int32_t *o = df_vec_offsets(a->vec);
    return o[a->vec->length] - o[0];
}

typedef df_errkind (*row_fn)(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb);

/* Runs `fn` for every selected row whose arguments are all valid. */
static df_errkind str_map(const df_kargs *k, const df_xreg *a, int32_t na, int64_t estimate, row_fn fn,
                          df_xreg *out) {
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, estimate));
    df_errkind e = DF_OK;
    const uint8_t *valid = sb.v->validity ? sb.v->validity->data : NULL;
    DF_FOR_SEL(k, i, {
        if (valid && !df_bit_get(valid, i)) continue;
        e = fn(k, a, i, &sb);
        if (e) break;
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

static df_errkind row_case(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb, int mode) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    DF_TRY(df__sb_reserve(sb, n));
    convert_case(s, n, sb->v->data->data + sb->pos, mode);
    df__sb_commit(sb, i, n);
    return DF_OK;
}
static df_errkind row_lower(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_case(k, a, i, sb, 0); }
static df_errkind row_upper(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_case(k, a, i, sb, 1); }
static df_errkind row_initcap(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_case(k, a, i, sb, 2); }

/* Is the character at s (len bytes) in the set? */
static bool in_set(const uint8_t *c, int32_t len, const uint8_t *set, int32_t n) {
    for (int32_t j = 0; j < n;) {
        int32_t l = u8len(set[j]);
        if (l == len && memcmp(set + j, c, (size_t)len) == 0) return true;
        j += l;
    }
    return false;
}

static df_errkind row_trim(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb, bool left, bool right,
                           int32_t na) {
    int32_t n, m = 1;
    const uint8_t *s = STR(a[0], i, &n);
    const uint8_t *set = (const uint8_t *)" ";
    if (na > 1) set = STR(a[1], i, &m);
    int32_t b = 0, e = n;
    if (left)
        while (b < e) {
            int32_t l = u8len(s[b]);
            if (!in_set(s + b, l, set, m)) break;
            b += l;
        }
    if (right)
        while (e > b) {
            int32_t st = e - 1;
            while (st > b && (s[st] & 0xC0) == 0x80) st--;
            if (!in_set(s + st, e - st, set, m)) break;
            e = st;
        }
    return df__sb_put(sb, i, s + b, e - b);
}

static df_errkind btrim_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out);
static df_errkind ltrim_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out);
static df_errkind rtrim_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out);

#define DEFINE_TRIM(NAME, L, R)                                                               \
    static df_errkind NAME##_row2(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { \
        return row_trim(k, a, i, sb, L, R, 2);                                               \
    }                                                                                         \
    static df_errkind NAME##_row1(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { \
        return row_trim(k, a, i, sb, L, R, 1);                                               \
    }                                                                                         \
    static df_errkind NAME##_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) { \
        return str_map(k, a, na, bytes_of(k, &a[0]), na > 1 ? NAME##_row2 : NAME##_row1, out); \
    }
DEFINE_TRIM(btrim, true, true)
DEFINE_TRIM(ltrim, true, false)
DEFINE_TRIM(rtrim, false, true)

/* substr(s, start [, len]) with PostgreSQL semantics (1-based; start < 1 eats into len). */
static df_errkind row_substr(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb, bool has_len) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    int64_t start = I64(a[1], i);
    int64_t from = start - 1, to;
    if (has_len) {
        int64_t len = I64(a[2], i);
        if (len < 0) return df_error_set(k->err, DF_ERR_EXECUTION, "negative substring length not allowed");
        if (__builtin_add_overflow(from, len, &to)) to = INT64_MAX;
    } else {
        to = INT64_MAX;
    }
    if (from < 0) from = 0;
    if (to <= from) return df__sb_put(sb, i, "", 0);
    int32_t b = char_offset(s, n, from);
    int32_t e = to == INT64_MAX ? n : b + char_offset(s + b, n - b, to - from);
    return df__sb_put(sb, i, s + b, e - b);
}
static df_errkind substr2_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_substr(k, a, i, sb, false); }
static df_errkind substr3_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_substr(k, a, i, sb, true); }

static df_errkind row_left(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    int64_t m = I64(a[1], i);
    int64_t chars = m >= 0 ? m : DF_MAX(char_count(s, n) + m, 0);
    return df__sb_put(sb, i, s, char_offset(s, n, chars));
}

static df_errkind row_right(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    int64_t m = I64(a[1], i);
    int64_t total = char_count(s, n);
    int64_t skip = m >= 0 ? DF_MAX(total - m, 0) : m < -total ? total : -m; /* no -m at INT64_MIN */
    int32_t b = char_offset(s, n, skip);
    return df__sb_put(sb, i, s + b, n - b);
}

static df_errkind row_repeat(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    int64_t times = I64(a[1], i);
    if (times <= 0 || n == 0) return df__sb_put(sb, i, "", 0);
    if (times > DF_MAX_STRING_VALUE / (n ? n : 1))
        return df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "repeat result is larger than %d bytes", DF_MAX_STRING_VALUE);
    int64_t total = (int64_t)n * times;
    DF_TRY(df__sb_reserve(sb, total));
    uint8_t *d = sb->v->data->data + sb->pos;
    for (int64_t t = 0; t < times; t++) df__memcpy(d + t * n, s, (size_t)n);
    df__sb_commit(sb, i, total);
    return DF_OK;
}

static df_errkind row_reverse(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    DF_TRY(df__sb_reserve(sb, n));
    uint8_t *d = sb->v->data->data + sb->pos;
    int32_t w = n;
    for (int32_t r = 0; r < n;) {
        int32_t l = u8len(s[r]);
        if (r + l > n) l = n - r;
        w -= l;
        df__memcpy(d + w, s + r, (size_t)l);
        r += l;
    }
    df__sb_commit(sb, i, n);
    return DF_OK;
}

/* lpad/rpad(s, len [, fill]) in characters; longer strings are truncated. */
static df_errkind row_pad(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb, bool left, bool has_fill) {
    int32_t n, fn = 1;
    const uint8_t *s = STR(a[0], i, &n);
    int64_t len = I64(a[1], i);
    const uint8_t *fill = (const uint8_t *)" ";
    if (has_fill) fill = STR(a[2], i, &fn);
    if (len <= 0) return df__sb_put(sb, i, "", 0);
    if (len > DF_MAX_STRING_VALUE / 4)
        return df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "padding length larger than %d", DF_MAX_STRING_VALUE / 4);
    int64_t have = char_count(s, n);
    if (have >= len || fn == 0) return df__sb_put(sb, i, s, char_offset(s, n, DF_MIN(have, len)));
    int64_t need = len - have;
    int64_t fill_chars = char_count(fill, fn);
    if (fill_chars == 0) return df__sb_put(sb, i, s, n); /* no whole character to pad with */
    DF_TRY(df__sb_reserve(sb, n + need * 4));
    uint8_t *d = sb->v->data->data + sb->pos;
    int64_t w = 0;
    if (!left) {
        df__memcpy(d, s, (size_t)n);
        w = n;
    }
    /* Whole repetitions of the fill by doubling the copied region, then a partial one. */
    int64_t reps = need / fill_chars, rest = need % fill_chars;
    if (reps > 0) {
        uint8_t *start = d + w;
        int64_t total = reps * fn, done = fn;
        df__memcpy(start, fill, (size_t)fn);
        while (done < total) {
            int64_t c = DF_MIN(done, total - done);
            df__memcpy(start + done, start, (size_t)c);
            done += c;
        }
        w += total;
    }
    if (rest > 0) {
        int32_t bytes = char_offset(fill, fn, rest);
        df__memcpy(d + w, fill, (size_t)bytes);
        w += bytes;
    }
    if (left) {
        df__memcpy(d + w, s, (size_t)n);
        w += n;
    }
    df__sb_commit(sb, i, w);
    return DF_OK;
}
static df_errkind lpad2_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_pad(k, a, i, sb, true, false); }
static df_errkind lpad3_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_pad(k, a, i, sb, true, true); }
static df_errkind rpad2_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_pad(k, a, i, sb, false, false); }
static df_errkind rpad3_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_pad(k, a, i, sb, false, true); }

static df_errkind row_replace(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n, fn, tn;
    const uint8_t *s = STR(a[0], i, &n), *from = STR(a[1], i, &fn), *to = STR(a[2], i, &tn);
    if (fn == 0) return df__sb_put(sb, i, s, n);
    int64_t w = 0;
    int32_t pos = 0;
    for (;;) {
        const uint8_t *hit = pos <= n ? memmem(s + pos, (size_t)(n - pos), from, (size_t)fn) : NULL;
        int32_t seg = hit ? (int32_t)(hit - (s + pos)) : n - pos;
        DF_TRY(df__sb_reserve(sb, w + seg + (hit ? tn : 0)));
        uint8_t *d = sb->v->data->data + sb->pos;
        df__memcpy(d + w, s + pos, (size_t)seg);
        w += seg;
        if (!hit) break;
        df__memcpy(d + w, to, (size_t)tn);
        w += tn;
        pos += seg + fn;
    }
    df__sb_commit(sb, i, w);
    return DF_OK;
}

static df_errkind row_translate(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n, fn, tn;
    const uint8_t *s = STR(a[0], i, &n), *from = STR(a[1], i, &fn), *to = STR(a[2], i, &tn);
    DF_TRY(df__sb_reserve(sb, (int64_t)n * 4)); /* a character maps to at most 4 bytes */
    int64_t w = 0;
    for (int32_t r = 0; r < n;) {
        int32_t l = u8len(s[r]);
        if (r + l > n) l = n - r;
        /* Index of the character in `from`. */
        int64_t idx = -1, ci = 0;
        for (int32_t j = 0; j < fn; ci++) {
            int32_t fl = u8len(from[j]);
            if (fl == l && memcmp(from + j, s + r, (size_t)l) == 0) {
                idx = ci;
                break;
            }
            j += fl;
        }
        uint8_t *d = sb->v->data->data + sb->pos;
        if (idx < 0) {
            df__memcpy(d + w, s + r, (size_t)l);
            w += l;
        } else {
            int32_t tb = char_offset(to, tn, idx);
            if (tb < tn) {
                int32_t tl = u8len(to[tb]);
                if (tb + tl > tn) tl = tn - tb;
                df__memcpy(d + w, to + tb, (size_t)tl);
                w += tl;
            }
        }
        r += l;
    }
    df__sb_commit(sb, i, w);
    return DF_OK;
}

static df_errkind row_split_part(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int32_t n, dn;
    const uint8_t *s = STR(a[0], i, &n), *delim = STR(a[1], i, &dn);
    int64_t field = I64(a[2], i);
    if (field == 0) return df_error_set(k->err, DF_ERR_EXECUTION, "field position must not be zero");
    if (dn == 0) return df__sb_put(sb, i, s, (field == 1 || field == -1) ? n : 0);
    /* Collect field boundaries. */
    int64_t count = 1;
    for (const uint8_t *p = s; (p = memmem(p, (size_t)(s + n - p), delim, (size_t)dn)); p += dn) count++;
    int64_t want = field > 0 ? field - 1 : count + field;
    if (want < 0 || want >= count) return df__sb_put(sb, i, "", 0);
    const uint8_t *b = s;
    for (int64_t f = 0; f < want; f++) b = (const uint8_t *)memmem(b, (size_t)(s + n - b), delim, (size_t)dn) + dn;
    const uint8_t *e = memmem(b, (size_t)(s + n - b), delim, (size_t)dn);
    return df__sb_put(sb, i, b, (e ? e : s + n) - b);
}

static df_errkind row_overlay(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb, bool has_for) {
    int32_t n, pn;
    const uint8_t *s = STR(a[0], i, &n), *p = STR(a[1], i, &pn);
    int64_t from = I64(a[2], i);
    int64_t len = has_for ? I64(a[3], i) : char_count(p, pn);
    int64_t total = char_count(s, n);
    int64_t head = DF_MAX(DF_MIN(from - 1, total), 0);
    int64_t tail_start = DF_MAX(DF_MIN(from - 1 + len, total), 0);
    int32_t hb = char_offset(s, n, head), tb = char_offset(s, n, tail_start);
    int64_t w = hb + pn + (n - tb);
    DF_TRY(df__sb_reserve(sb, w));
    uint8_t *d = sb->v->data->data + sb->pos;
    df__memcpy(d, s, (size_t)hb);
    df__memcpy(d + hb, p, (size_t)pn);
    df__memcpy(d + hb + pn, s + tb, (size_t)(n - tb));
    df__sb_commit(sb, i, w);
    return DF_OK;
}
static df_errkind overlay3_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_overlay(k, a, i, sb, false); }
static df_errkind overlay4_row(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) { return row_overlay(k, a, i, sb, true); }

static df_errkind row_chr(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    int64_t cp = I64(a[0], i);
    if (cp <= 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return df_error_set(k->err, DF_ERR_EXECUTION, "requested character %" PRId64 " is not a valid code point", cp);
    uint8_t buf[4];
    size_t l = df_utf8_encode((uint32_t)cp, buf);
    return df__sb_put(sb, i, buf, (int64_t)l);
}

static df_errkind row_to_hex(const df_kargs *k, const df_xreg *a, int64_t i, df__sbuilder *sb) {
    char buf[24];
    int l = snprintf(buf, sizeof buf, "%" PRIx64, (uint64_t)I64(a[0], i));
    return df__sb_put(sb, i, buf, l);
}

/* concat / ||: NULL-skipping (concat) or NULL-propagating (||, via validity). */
static df_errkind concat_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool skip_nulls = k->aux != NULL;
    int64_t est = 0;
    for (int32_t j = 0; j < na; j++) est += bytes_of(k, &a[j]);
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, skip_nulls ? 0 : na, est));
    const uint8_t *valid = sb.v->validity ? sb.v->validity->data : NULL;
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (valid && !df_bit_get(valid, i)) continue;
        int64_t w = 0;
        for (int32_t j = 0; j < na && !e; j++) {
            if (!df_xreg_valid(&a[j], i)) continue;
            int32_t n;
            const uint8_t *s = STR(a[j], i, &n);
            e = df__sb_reserve(&sb, w + n);
            if (!e) df__memcpy(sb.v->data->data + sb.pos + w, s, (size_t)n);
            w += n;
        }
        if (e) break;
        df__sb_commit(&sb, i, w);
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

static df_errkind concat_ws_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    int64_t est = 0;
    for (int32_t j = 0; j < na; j++) est += bytes_of(k, &a[j]);
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, 1, est + k->n * na));
    const uint8_t *valid = sb.v->validity ? sb.v->validity->data : NULL;
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (valid && !df_bit_get(valid, i)) continue;
        int32_t sn;
        const uint8_t *sep = STR(a[0], i, &sn);
        int64_t w = 0;
        bool first = true;
        for (int32_t j = 1; j < na && !e; j++) {
            if (!df_xreg_valid(&a[j], i)) continue;
            int32_t n;
            const uint8_t *s = STR(a[j], i, &n);
            e = df__sb_reserve(&sb, w + n + sn);
            if (e) break;
            uint8_t *d = sb.v->data->data + sb.pos;
            if (!first) {
                df__memcpy(d + w, sep, (size_t)sn);
                w += sn;
            }
            df__memcpy(d + w, s, (size_t)n);
            w += n;
            first = false;
        }
        if (e) break;
        df__sb_commit(&sb, i, w);
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Non-string results                                                        */

static df_errkind int32_result(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out,
                               int32_t (*f)(const df_xreg *a, int64_t i)) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    int32_t *o = (int32_t *)(void *)v->values->data;
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) {
            o[i] = 0;
            continue;
        }
        o[i] = f(a, i);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

static int32_t f_char_length(const df_xreg *a, int64_t i) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    return (int32_t)char_count(s, n);
}
static int32_t f_octet_length(const df_xreg *a, int64_t i) {
    int32_t n;
    STR(a[0], i, &n);
    return n;
}
static int32_t f_bit_length(const df_xreg *a, int64_t i) { return f_octet_length(a, i) * 8; }
static int32_t f_ascii(const df_xreg *a, int64_t i) {
    int32_t n;
    const uint8_t *s = STR(a[0], i, &n);
    if (n == 0) return 0;
    int32_t l = u8len(s[0]);
    return (int32_t)decode(s, l <= n ? l : 1);
}
static int32_t f_strpos(const df_xreg *a, int64_t i) {
    int32_t n, m;
    const uint8_t *s = STR(a[0], i, &n), *sub = STR(a[1], i, &m);
    if (m == 0) return 1;
    const uint8_t *hit = memmem(s, (size_t)n, sub, (size_t)m);
    return hit ? (int32_t)char_count(s, (int32_t)(hit - s)) + 1 : 0;
}

#define DEFINE_I32(NAME, F) \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) { return int32_result(k, a, na, out, F); }
DEFINE_I32(char_length_k, f_char_length)
DEFINE_I32(octet_length_k, f_octet_length)
DEFINE_I32(bit_length_k, f_bit_length)
DEFINE_I32(ascii_k, f_ascii)
DEFINE_I32(strpos_k, f_strpos)

static df_errkind str_bool(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    df_errkind e = df__kernel_and_validity(k, a, na, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int32_t n, m;
        const uint8_t *s = STR(a[0], i, &n), *t = STR(a[1], i, &m);
        bool r;
        if (fn == DF_FN_STARTS_WITH) r = m <= n && memcmp(s, t, (size_t)m) == 0;
        else if (fn == DF_FN_ENDS_WITH) r = m <= n && memcmp(s + n - m, t, (size_t)m) == 0;
        else r = m == 0 || memmem(s, (size_t)n, t, (size_t)m) != NULL;
        if (r) df_bit_set(v->values->data, i);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

#define DEFINE_MAP(NAME, ROW, EST)                                                            \
    static df_errkind NAME(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {   \
        return str_map(k, a, na, EST, ROW, out);                                              \
    }
DEFINE_MAP(lower_k, row_lower, bytes_of(k, &a[0]))
DEFINE_MAP(upper_k, row_upper, bytes_of(k, &a[0]))
DEFINE_MAP(initcap_k, row_initcap, bytes_of(k, &a[0]))
DEFINE_MAP(substr2_k, substr2_row, bytes_of(k, &a[0]))
DEFINE_MAP(substr3_k, substr3_row, bytes_of(k, &a[0]))
DEFINE_MAP(left_k, row_left, bytes_of(k, &a[0]))
DEFINE_MAP(right_k, row_right, bytes_of(k, &a[0]))
DEFINE_MAP(repeat_k, row_repeat, bytes_of(k, &a[0]))
DEFINE_MAP(reverse_k, row_reverse, bytes_of(k, &a[0]))
DEFINE_MAP(lpad2_k, lpad2_row, bytes_of(k, &a[0]))
DEFINE_MAP(lpad3_k, lpad3_row, bytes_of(k, &a[0]))
DEFINE_MAP(rpad2_k, rpad2_row, bytes_of(k, &a[0]))
DEFINE_MAP(rpad3_k, rpad3_row, bytes_of(k, &a[0]))
DEFINE_MAP(replace_k, row_replace, bytes_of(k, &a[0]))
DEFINE_MAP(translate_k, row_translate, bytes_of(k, &a[0]))
DEFINE_MAP(split_part_k, row_split_part, bytes_of(k, &a[0]))
DEFINE_MAP(overlay3_k, overlay3_row, bytes_of(k, &a[0]) + bytes_of(k, &a[1]))
DEFINE_MAP(overlay4_k, overlay4_row, bytes_of(k, &a[0]) + bytes_of(k, &a[1]))
DEFINE_MAP(chr_k, row_chr, k->n * 2)
DEFINE_MAP(to_hex_k, row_to_hex, k->n * 8)

df_errkind df__kernels_string(const df_expr *call, df_kernel *out, df_error *err) {
    int32_t n = call->nargs;
    switch (call->fn) {
    case DF_FN_LOWER: out->fn = lower_k; break;
    case DF_FN_UPPER: out->fn = upper_k; break;
    case DF_FN_INITCAP: out->fn = initcap_k; break;
    case DF_FN_BTRIM: out->fn = btrim_k; break;
    case DF_FN_LTRIM: out->fn = ltrim_k; break;
    case DF_FN_RTRIM: out->fn = rtrim_k; break;
    case DF_FN_SUBSTR: out->fn = n == 3 ? substr3_k : substr2_k; out->can_error = n == 3; break;
    case DF_FN_LEFT: out->fn = left_k; break;
    case DF_FN_RIGHT: out->fn = right_k; break;
    case DF_FN_REPEAT: out->fn = repeat_k; out->can_error = true; break;
    case DF_FN_REVERSE: out->fn = reverse_k; break;
    case DF_FN_LPAD: out->fn = n == 3 ? lpad3_k : lpad2_k; out->can_error = true; break;
    case DF_FN_RPAD: out->fn = n == 3 ? rpad3_k : rpad2_k; out->can_error = true; break;
    case DF_FN_REPLACE: out->fn = replace_k; break;
    case DF_FN_TRANSLATE: out->fn = translate_k; break;
    case DF_FN_SPLIT_PART: out->fn = split_part_k; out->can_error = true; break;
    case DF_FN_OVERLAY: out->fn = n == 4 ? overlay4_k : overlay3_k; break;
    case DF_FN_CHR: out->fn = chr_k; out->can_error = true; break;
    case DF_FN_TO_HEX: out->fn = to_hex_k; break;
    case DF_FN_CONCAT: out->fn = concat_k; out->aux = (void *)(intptr_t)1; break;
    case DF_FN_CONCAT_OP: out->fn = concat_k; break;
    case DF_FN_CONCAT_WS: out->fn = concat_ws_k; break;
    case DF_FN_CHAR_LENGTH: out->fn = char_length_k; break;
    case DF_FN_OCTET_LENGTH: out->fn = octet_length_k; break;
    case DF_FN_BIT_LENGTH: out->fn = bit_length_k; break;
    case DF_FN_ASCII: out->fn = ascii_k; break;
    case DF_FN_STRPOS: out->fn = strpos_k; break;
    case DF_FN_STARTS_WITH: case DF_FN_ENDS_WITH: case DF_FN_CONTAINS:
        out->fn = str_bool;
        out->aux = (void *)(intptr_t)call->fn;
        break;
    default: return DF_OK;
    }
    (void)err;
    return DF_OK;
}
