/*
 * More scalar kernels: to_timestamp_<unit>, date_bin, regexp_like /
 * regexp_count / regexp_replace, encode / decode (hex, base64), md5,
 * find_in_set, levenshtein and substr_index.
 *
 * Each kernel runs over the selected rows of its batch, with NULL in ->
 * NULL out (the builder / validity helpers of kernels.c) and errors for
 * values that cannot be computed (bad regular expressions, bad encodings,
 * out-of-range timestamps).
 */
#include <math.h>
#include <pthread.h>
#include <regex.h>

#include "exec/exec_int.h"

#define MAX_TEXT (256 * 1024 * 1024) /* the longest string a kernel builds (as kernels_string.c) */

/* Case-insensitive ASCII comparison of the first n bytes. */
static int casecmp_n(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};

static inline bool row_valid(const df_vec *v, int64_t i) { return !v->validity || df_bit_get(v->validity->data, i); }

/* ------------------------------------------------------------------------ */
/* to_timestamp_<unit>                                                       */

/* Strings parse (then truncate to the unit); integers and floats count the unit; timestamps arrive converted. */
static df_errkind to_ts_unit(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    const df_vec *x = a[0].vec;
    int64_t q = per_sec[v->type->unit];
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int64_t j = a[0].is_const ? 0 : i, r = 0;
        bool ok = true;
        switch (x->type->id) {
        case DF_TYPE_UTF8: {
            int32_t n;
            const uint8_t *s = df_vec_bytes(x, j, &n);
            int64_t ns;
            ok = df__parse_timestamp((const char *)s, (size_t)n, DF_UNIT_NANO, &ns);
            int64_t d = 1000000000LL / q;
            r = ns / d - (ns % d < 0);
            if (!ok) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_CAST, "cannot parse '%.*s' as a timestamp", n > 40 ? 40 : n, s);
            }
            break;
        }
        case DF_TYPE_FLOAT64: {
            double d = trunc(DF_VEC_VALUES(x, double)[j]);
            ok = isfinite(d) && fabs(d) < 9.2e18;
            r = ok ? (int64_t)d : 0;
            break;
        }
        default: r = DF_VEC_VALUES(x, int64_t)[j]; break;
        }
        if (!ok) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_CAST, "value out of range for a timestamp");
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* date_bin                                                                  */

/* Days since the epoch plus months, the day clamped to the target month's end. */
static int64_t add_months_days(int64_t days, int64_t months) {
    int64_t y;
    int m, d;
    df_civil_from_days(days, &y, &m, &d);
    int64_t tm = y * 12 + (m - 1) + months;
    int64_t ny = tm >= 0 ? tm / 12 : -((-tm + 11) / 12);
    int nm = (int)(tm - ny * 12) + 1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int dim = mdays[nm - 1] + (nm == 2 && ((ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0));
    return df_days_from_civil(ny, nm, d > dim ? dim : d);
}

static inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/*
 * date_bin(stride, source [, origin]): the start of the stride-sized bin
 * holding source, bins counted from origin (default the epoch).  Strides in
 * months bin by calendar months from origin's day and time of day.
 * DataFusion bins in nanoseconds: a source or origin that does not fit them,
 * or a bin start outside them, gives NULL there, so it does here.
 */
static df_errkind date_bin_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    int64_t q = per_sec[v->type->unit], ns_unit = 1000000000LL / q;
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        const uint8_t *ip = a[0].vec->values->data + (a[0].vec->offset + (a[0].is_const ? 0 : i)) * 16;
        int32_t months, days;
        int64_t nanos;
        df__memcpy(&months, ip, 4);
        df__memcpy(&days, ip + 4, 4);
        df__memcpy(&nanos, ip + 8, 8);
        /* The stride is checked first: a bad stride is an error whatever the values. */
        __int128 stride = 0;
        if (months != 0) {
            if (days != 0 || nanos != 0 || months < 0) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_EXECUTION, "date_bin cannot mix months with days or time");
            }
        } else {
            stride = ((__int128)days * 86400000000000LL + nanos) / ns_unit;
            if (stride <= 0 || stride > INT64_MAX) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_EXECUTION, "date_bin needs a positive stride");
            }
        }
        int64_t src = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
        int64_t origin = na > 2 ? DF_VEC_VALUES(a[2].vec, int64_t)[a[2].is_const ? 0 : i] : 0;
        int64_t r = 0, scratch;
        bool null = __builtin_mul_overflow(src, ns_unit, &scratch) || __builtin_mul_overflow(origin, ns_unit, &scratch);
        if (!null && months != 0) {
            int64_t day_units = 86400 * q;
            int64_t sd = floor_div(src, day_units), od = floor_div(origin, day_units);
            int64_t stod = src - sd * day_units, otod = origin - od * day_units;
            int64_t sy, oy;
            int sm, sdd, om, odd;
            df_civil_from_days(sd, &sy, &sm, &sdd);
            df_civil_from_days(od, &oy, &om, &odd);
            int64_t diff = (sy * 12 + sm) - (oy * 12 + om);
            if (sdd < odd || (sdd == odd && stod < otod)) diff--;
            int64_t bins = floor_div(diff, months) * months;
            null = __builtin_mul_overflow(add_months_days(od, bins), day_units, &r) ||
                   __builtin_add_overflow(r, otod, &r) || __builtin_mul_overflow(r, ns_unit, &scratch);
        } else if (!null) {
            __int128 diff = (__int128)src - origin, st = stride;
            __int128 b = diff / st - ((diff % st != 0) && (diff < 0));
            __int128 res = (__int128)origin + b * st;
            null = res < INT64_MIN || res > INT64_MAX || __builtin_mul_overflow((int64_t)res, ns_unit, &scratch);
            if (!null) r = (int64_t)res;
        }
        if (null) {
            if (df_vec_ensure_validity(v, k->n, k->err)) {
                df_vec_release(v);
                return k->err ? k->err->kind : DF_ERR_OUT_OF_MEMORY;
            }
            df_bit_clear(v->validity->data, i);
            continue;
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Regular expressions                                                       */

/* Per-call state: the pattern compiled once when pattern and flags are literals. */
typedef struct rx_aux {
    df_fn fn;
    regex_t re;
    bool compiled;
    bool global;            /* regexp_replace 'g' */
} rx_aux;

static void rx_free(void *p) {
    rx_aux *r = p;
    if (!r) return;
    if (r->compiled) regfree(&r->re);
    df_free(r);
}

/* regcomp flags from a flags string ('i' case-insensitive, 'g' global replace, 'c' case-sensitive). */
static df_errkind rx_flags(const uint8_t *f, int32_t n, bool allow_g, int *cflags, bool *global, df_error *err) {
    *cflags = REG_EXTENDED;
    *global = false;
    for (int32_t i = 0; i < n; i++) {
        switch (f[i]) {
        case 'i': *cflags |= REG_ICASE; break;
        case 'c': *cflags &= ~REG_ICASE; break;
        case 'g':
            if (!allow_g) return df_error_set(err, DF_ERR_EXECUTION, "the 'g' flag is only for regexp_replace");
            *global = true;
            break;
        case 'm': *cflags |= REG_NEWLINE; break;
        case 's': break;
        default: return df_error_set(err, DF_ERR_EXECUTION, "unsupported regular expression flag '%c'", f[i]);
        }
    }
    return DF_OK;
}

/* Index of the flags argument, or -1. */
static int32_t flags_arg(df_fn fn, int32_t na) {
    if (fn == DF_FN_REGEXP_LIKE) return na > 2 ? 2 : -1;
    if (fn == DF_FN_REGEXP_COUNT) return na > 3 ? 3 : -1;
    return na > 3 ? 3 : -1;
}

/* NUL-terminated copy of bytes into a growable scratch buffer. */
static char *cstr(char **buf, int64_t *cap, const uint8_t *p, int32_t n) {
    if (*cap < n + 1) {
        char *nb = df_realloc(*buf, (size_t)n + 1);
        if (!nb) return NULL;
        *buf = nb;
        *cap = n + 1;
    }
    if (n) df__memcpy(*buf, p, (size_t)n);
    (*buf)[n] = '\0';
    return *buf;
}

/* Appends the replacement for one match: \N and ${N} / $N name groups, \\ is a backslash. */
static df_errkind put_replacement(df_buf *o, const char *subject, const regmatch_t *m, size_t nm, const uint8_t *rep,
                                  int32_t rn) {
    for (int32_t j = 0; j < rn; j++) {
        uint8_t c = rep[j];
        int g = -1;
        if (c == '\\' && j + 1 < rn && rep[j + 1] >= '0' && rep[j + 1] <= '9') {
            g = rep[++j] - '0';
        } else if (c == '\\' && j + 1 < rn && rep[j + 1] == '\\') {
            DF_TRY(df_buf_append_char(o, '\\', NULL));
            j++;
            continue;
        } else if (c == '$' && j + 1 < rn && rep[j + 1] == '{') {
            int32_t e = j + 2, val = 0;
            while (e < rn && rep[e] >= '0' && rep[e] <= '9') val = val * 10 + (rep[e++] - '0');
            if (e < rn && rep[e] == '}' && e > j + 2) {
                g = val;
                j = e;
            }
        } else if (c == '$' && j + 1 < rn && rep[j + 1] >= '0' && rep[j + 1] <= '9') {
            g = rep[++j] - '0';
        }
        if (g < 0) {
            DF_TRY(df_buf_append_char(o, (char)c, NULL));
        } else if ((size_t)g < nm && m[g].rm_so >= 0) {
            DF_TRY(df_buf_append(o, subject + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so), NULL));
        }
    }
    return DF_OK;
}

static df_errkind regexp_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const rx_aux *ra = k->aux;
    df_fn fn = ra->fn;
    df_vec *v = NULL;
    df__sbuilder sb;
    bool strings = fn == DF_FN_REGEXP_REPLACE;
    if (strings) DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 16));
    else {
        DF_TRY(df__kernel_out(k, 0, &v));
        df_errkind e0 = df__kernel_and_validity(k, a, na, v);
        if (e0) {
            df_vec_release(v);
            return e0;
        }
        if (fn == DF_FN_REGEXP_LIKE) memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    }
    const df_vec *valid_v = strings ? sb.v : v;
    char *buf = NULL, *pbuf = NULL;
    int64_t cap = 0, pcap = 0;
    df_buf o;
    df_buf_init(&o, MAX_TEXT);
    df_errkind e = DF_OK;
    int32_t fa = flags_arg(fn, na);
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(valid_v, i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        char *subject = cstr(&buf, &cap, s, n);
        if (!subject) {
            e = DF_OOM(k->err);
            break;
        }
        regex_t row_re;
        const regex_t *re = &ra->re;
        bool global = ra->global;
        if (!ra->compiled) {
            int cflags;
            int32_t fn_len = 0;
            const uint8_t *f = fa >= 0 ? df_vec_bytes(a[fa].vec, a[fa].is_const ? 0 : i, &fn_len) : NULL;
            e = rx_flags(f, fn_len, fn == DF_FN_REGEXP_REPLACE, &cflags, &global, k->err);
            int32_t pn;
            const uint8_t *p = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &pn);
            if (!e) e = df__regex_compile(&row_re, p, pn, cflags, k->err);
            if (e) break;
            re = &row_re;
        }
        regmatch_t m[10];
        if (fn == DF_FN_REGEXP_LIKE) {
            if (regexec(re, subject, 0, NULL, 0) == 0) df_bit_set(v->values->data, i);
        } else if (fn == DF_FN_REGEXP_COUNT) {
            int64_t start = na > 2 ? DF_VEC_VALUES(a[2].vec, int64_t)[a[2].is_const ? 0 : i] : 1;
            if (start < 1) {
                e = df_error_set(k->err, DF_ERR_EXECUTION, "regexp_count start must be at least 1");
            } else {
                /* start counts characters; skip to its byte. */
                int64_t off = 0, ch = 1;
                while (off < n && ch < start) {
                    off++;
                    while (off < n && (s[off] & 0xC0) == 0x80) off++;
                    ch++;
                }
                int64_t count = 0;
                while (ch == start && off <= n && regexec(re, subject + off, 1, m, off ? REG_NOTBOL : 0) == 0) {
                    count++;
                    off += m[0].rm_eo > m[0].rm_so ? m[0].rm_eo : m[0].rm_eo + 1;
                    if (off > n) break;
                }
                DF_VEC_VALUES(v, int64_t)[i] = count;
            }
        } else {
            int32_t rn;
            const uint8_t *rep = df_vec_bytes(a[2].vec, a[2].is_const ? 0 : i, &rn);
            o.len = 0;
            int64_t off = 0;
            while (!e && off <= n && regexec(re, subject + off, 10, m, off ? REG_NOTBOL : 0) == 0) {
                e = df_buf_append(&o, subject + off, (size_t)m[0].rm_so, k->err);
                if (!e) e = put_replacement(&o, subject + off, m, 10, rep, rn);
                if (e) break;
                int64_t adv = m[0].rm_eo;
                if (m[0].rm_eo == m[0].rm_so) {
                    /* An empty match: copy one character and move on. */
                    if (off + adv < n) e = df_buf_append(&o, subject + off + adv, 1, k->err);
                    adv++;
                }
                off += adv;
                if (!global) break;
            }
            if (!e && off < n) e = df_buf_append(&o, subject + off, (size_t)(n - off), k->err);
            if (e == DF_ERR_LIMIT_EXCEEDED || e == DF_ERR_OUT_OF_MEMORY) e = e == DF_ERR_OUT_OF_MEMORY ? DF_OOM(k->err) : df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "regexp_replace result too long");
            if (!e) e = df__sb_put(&sb, i, o.data ? o.data : "", (int64_t)o.len);
        }
        if (!ra->compiled) regfree(&row_re);
        (void)pbuf;
        (void)pcap;
    });
    df_free(buf);
    df_buf_free(&o);
    if (e) {
        if (strings) df__sb_abort(&sb);
        else df_vec_release(v);
        return e;
    }
    if (strings) df__sb_finish(&sb, out);
    else df__kernel_done(k, v, out);
    return DF_OK;
}

static df_errkind regexp_kernel_for(const df_expr *call, df_kernel *out, df_error *err) {
    rx_aux *ra = df_calloc(1, sizeof *ra);
    if (!ra) return DF_OOM(err);
    ra->fn = call->fn;
    int32_t fa = flags_arg(call->fn, call->nargs);
    const df_expr *pat = call->args[1], *fl = fa >= 0 ? call->args[fa] : NULL;
    bool lit = pat->kind == DF_EX_LITERAL && !pat->lit->is_null &&
               (!fl || (fl->kind == DF_EX_LITERAL && !fl->lit->is_null));
    if (lit) {
        int cflags;
        df_errkind k = rx_flags(fl ? fl->lit->v.bytes.ptr : NULL, fl ? (int32_t)fl->lit->v.bytes.len : 0,
                                call->fn == DF_FN_REGEXP_REPLACE, &cflags, &ra->global, err);
        if (!k) k = df__regex_compile(&ra->re, pat->lit->v.bytes.ptr, (int32_t)pat->lit->v.bytes.len, cflags, err);
        if (k) {
            df_free(ra);
            return k;
        }
        ra->compiled = true;
    }
    out->fn = regexp_k;
    out->aux = ra;
    out->aux_free = rx_free;
    out->can_error = true;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* encode / decode / md5                                                     */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* 0 hex, 1 base64 (padded), 2 base64 without padding; -1 unknown. */
static int encoding_of(const uint8_t *f, int32_t n) {
    if (n == 3 && casecmp_n((const char *)f, "hex", 3) == 0) return 0;
    if (n == 6 && casecmp_n((const char *)f, "base64", 6) == 0) return 1;
    if (n == 9 && casecmp_n((const char *)f, "base64pad", 9) == 0) return 1;
    return -1;
}

static df_errkind encode_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 16));
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t n, fn_len;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const uint8_t *f = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &fn_len);
        int enc = encoding_of(f, fn_len);
        if (enc < 0) {
            e = df_error_set(k->err, DF_ERR_EXECUTION, "unsupported encoding '%.*s' (hex, base64)",
                             fn_len > 20 ? 20 : fn_len, f);
            break;
        }
        if (fn == DF_FN_ENCODE) {
            int64_t olen = enc == 0 ? 2 * (int64_t)n : 4 * (((int64_t)n + 2) / 3);
            if ((e = df__sb_reserve(&sb, olen))) break;
            uint8_t *d = sb.v->data->data + sb.pos;
            int64_t w = 0;
            if (enc == 0) {
                df_hex_encode(s, (size_t)n, (char *)d, false);
                w = 2 * (int64_t)n;
            } else {
                for (int32_t j = 0; j < n; j += 3) {
                    uint32_t x = (uint32_t)s[j] << 16 | (j + 1 < n ? (uint32_t)s[j + 1] << 8 : 0) | (j + 2 < n ? s[j + 2] : 0);
                    d[w++] = (uint8_t)b64[x >> 18];
                    d[w++] = (uint8_t)b64[(x >> 12) & 63];
                    d[w++] = j + 1 < n ? (uint8_t)b64[(x >> 6) & 63] : '=';
                    d[w++] = j + 2 < n ? (uint8_t)b64[x & 63] : '=';
                }
            }
            df__sb_commit(&sb, i, w);
        } else {
            if ((e = df__sb_reserve(&sb, n))) break;
            uint8_t *d = sb.v->data->data + sb.pos;
            int64_t w = 0;
            bool bad = false;
            if (enc == 0) {
                bad = !df_hex_decode((const char *)s, (size_t)n, d);
                w = n / 2;
            } else {
                uint32_t acc = 0;
                int bits = 0;
                for (int32_t j = 0; !bad && j < n; j++) {
                    if (s[j] == '=') break;
                    int c = b64val(s[j]);
                    if (c < 0) {
                        bad = true;
                        break;
                    }
                    acc = (acc << 6) | (uint32_t)c;
                    bits += 6;
                    if (bits >= 8) {
                        bits -= 8;
                        d[w++] = (uint8_t)(acc >> bits);
                    }
                }
            }
            if (bad) {
                e = df_error_set(k->err, DF_ERR_EXECUTION, "invalid %s input to decode", enc == 0 ? "hex" : "base64");
                break;
            }
            df__sb_commit(&sb, i, w);
        }
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

static uint32_t md5_K[64];
static pthread_once_t md5_once = PTHREAD_ONCE_INIT;

/* K[i] = floor(2^32 * |sin(i + 1)|), the RFC's definition of the round constants. */
static void md5_init(void) {
    for (int i = 0; i < 64; i++) md5_K[i] = (uint32_t)(fabs(sin((double)(i + 1))) * 4294967296.0);
}

/* MD5 (RFC 1321) of p[0..n) into out[16]. */
static void md5(const uint8_t *p, size_t n, uint8_t out[16]) {
    static const int S[16] = {7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21};
    pthread_once(&md5_once, md5_init);
    const uint32_t *K = md5_K;
    uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    uint64_t bits = (uint64_t)n * 8;
    size_t total = ((n + 8) / 64 + 1) * 64;
    for (size_t off = 0; off < total; off += 64) {
        uint8_t blk[64];
        for (int j = 0; j < 64; j++) {
            size_t at = off + (size_t)j;
            blk[j] = at < n ? p[at] : at == n ? 0x80 : 0;
        }
        if (off + 64 == total)
            for (int j = 0; j < 8; j++) blk[56 + j] = (uint8_t)(bits >> (8 * j));
        uint32_t w[16];
        for (int j = 0; j < 16; j++)
            w[j] = (uint32_t)blk[4 * j] | (uint32_t)blk[4 * j + 1] << 8 | (uint32_t)blk[4 * j + 2] << 16 |
                   (uint32_t)blk[4 * j + 3] << 24;
        uint32_t A = h[0], B = h[1], C = h[2], D = h[3];
        for (int i = 0; i < 64; i++) {
            uint32_t F;
            int g;
            if (i < 16) F = (B & C) | (~B & D), g = i;
            else if (i < 32) F = (D & B) | (~D & C), g = (5 * i + 1) % 16;
            else if (i < 48) F = B ^ C ^ D, g = (3 * i + 5) % 16;
            else F = C ^ (B | ~D), g = (7 * i) % 16;
            uint32_t x = A + F + K[i] + w[g];
            int r = S[(i / 16) * 4 + i % 4];
            A = D;
            D = C;
            C = B;
            B = B + ((x << r) | (x >> (32 - r)));
        }
        h[0] += A, h[1] += B, h[2] += C, h[3] += D;
    }
    for (int j = 0; j < 4; j++)
        for (int b = 0; b < 4; b++) out[4 * j + b] = (uint8_t)(h[j] >> (8 * b));
}

/* md5(str) -> lower-case hex text. */
static df_errkind md5_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 32));
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        uint8_t dg[16];
        md5(s, (size_t)n, dg);
        char hex[32];
        df_hex_encode(dg, sizeof dg, hex, false);
        e = df__sb_put(&sb, i, hex, 32);
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* find_in_set, levenshtein, substr_index                                    */

/* find_in_set(s, list): 1-based position of s among the comma-separated items of list, 0 if absent. */
static int32_t find_in_set(const uint8_t *s, int32_t n, const uint8_t *l, int32_t ln) {
    int32_t pos = 1, start = 0;
    for (int32_t j = 0; j <= ln; j++) {
        if (j == ln || l[j] == ',') {
            if (j - start == n && memcmp(l + start, s, (size_t)n) == 0) return pos;
            pos++;
            start = j + 1;
        }
    }
    return 0;
}

/* Levenshtein distance in characters (two rows of the DP table); -1 when the scratch cannot be had. */
static int32_t levenshtein(const uint8_t *a, int32_t an, const uint8_t *b, int32_t bn) {
    /* Work on code point starts so multi-byte characters count once. */
    int32_t *ai = df_malloc(((size_t)an + 1) * sizeof(int32_t)), *bi = df_malloc(((size_t)bn + 1) * sizeof(int32_t));
    int32_t *prev = df_malloc(((size_t)bn + 2) * sizeof(int32_t)), *cur = df_malloc(((size_t)bn + 2) * sizeof(int32_t));
    int32_t r = -1;
    if (ai && bi && prev && cur) {
        int32_t na = 0, nb = 0;
        for (int32_t j = 0; j < an; j++)
            if (!df_utf8_is_continuation(a[j])) ai[na++] = j;
        for (int32_t j = 0; j < bn; j++)
            if (!df_utf8_is_continuation(b[j])) bi[nb++] = j;
        ai[na] = an;
        bi[nb] = bn;
        for (int32_t j = 0; j <= nb; j++) prev[j] = j;
        for (int32_t x = 1; x <= na; x++) {
            cur[0] = x;
            for (int32_t y = 1; y <= nb; y++) {
                int32_t la = ai[x] - ai[x - 1], lb = bi[y] - bi[y - 1];
                int cost = !(la == lb && memcmp(a + ai[x - 1], b + bi[y - 1], (size_t)la) == 0);
                int32_t best = prev[y] + 1;
                if (cur[y - 1] + 1 < best) best = cur[y - 1] + 1;
                if (prev[y - 1] + cost < best) best = prev[y - 1] + cost;
                cur[y] = best;
            }
            int32_t *t = prev;
            prev = cur;
            cur = t;
        }
        r = prev[nb];
    }
    df_free(ai);
    df_free(bi);
    df_free(prev);
    df_free(cur);
    return r;
}

static df_errkind str2_int32_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int32_t n, m;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const uint8_t *t = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &m);
        int32_t r;
        if (fn == DF_FN_FIND_IN_SET) {
            r = find_in_set(s, n, t, m);
        } else {
            if ((int64_t)n * m > (int64_t)1 << 28) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "levenshtein arguments are too long");
            }
            r = levenshtein(s, n, t, m);
            if (r < 0) {
                df_vec_release(v);
                return DF_OOM(k->err);
            }
        }
        DF_VEC_VALUES(v, int32_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* substr_index(s, delim, count): text before the count-th delimiter (count > 0) or after the -count-th from the end. */
static df_errkind substr_index_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 8));
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t n, dn;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const uint8_t *d = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &dn);
        int64_t count = DF_VEC_VALUES(a[2].vec, int64_t)[a[2].is_const ? 0 : i];
        int32_t from = 0, to = n;
        if (dn == 0 || count == 0) {
            to = 0;
        } else if (count > 0) {
            int64_t seen = 0;
            for (int32_t j = 0; j + dn <= n; j++) {
                if (memcmp(s + j, d, (size_t)dn) == 0 && ++seen == count) {
                    to = j;
                    break;
                }
            }
        } else {
            int64_t seen = 0;
            for (int32_t j = n - dn; j >= 0; j--) {
                if (memcmp(s + j, d, (size_t)dn) == 0 && ++seen + count == 0) { /* no -count: INT64_MIN */
                    from = j + dn;
                    break;
                }
            }
        }
        e = df__sb_put(&sb, i, s + from, to - from);
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */

df_errkind df__kernels_more(const df_expr *call, df_kernel *out, df_error *err) {
    switch (call->fn) {
    case DF_FN_TO_TIMESTAMP_SECONDS: case DF_FN_TO_TIMESTAMP_MILLIS: case DF_FN_TO_TIMESTAMP_MICROS:
    case DF_FN_TO_TIMESTAMP_NANOS:
        out->fn = to_ts_unit;
        out->can_error = true;
        return DF_OK;
    case DF_FN_DATE_BIN: out->fn = date_bin_k; out->can_error = true; return DF_OK;
    case DF_FN_REGEXP_LIKE: case DF_FN_REGEXP_COUNT: case DF_FN_REGEXP_REPLACE: return regexp_kernel_for(call, out, err);
    case DF_FN_ENCODE: case DF_FN_DECODE:
        out->fn = encode_k;
        out->aux = (void *)(intptr_t)call->fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_MD5: out->fn = md5_k; return DF_OK;
    case DF_FN_FIND_IN_SET: case DF_FN_LEVENSHTEIN:
        out->fn = str2_int32_k;
        out->aux = (void *)(intptr_t)call->fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_SUBSTRING_INDEX: out->fn = substr_index_k; return DF_OK;
    default: return DF_OK;
    }
}
