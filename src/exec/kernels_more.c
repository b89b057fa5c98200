/*
 * More scalar kernels: to_timestamp_<unit>, date_bin, regexp_like /
 * regexp_count / regexp_replace, encode / decode (hex, base64), md5 / sha2 / digest,
 * find_in_set, levenshtein and substr_index.
 *
 * Each kernel runs over the selected rows of its batch, with NULL in ->
 * NULL out (the builder / validity helpers of kernels.c) and errors for
 * values that cannot be computed (bad regular expressions, bad encodings,
 * out-of-range timestamps).
 */
#include <math.h>

#include "exec/exec_int.h"
#include "exec/regex_int.h"
#include "common/digest.h"

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
    bool time_of_day = v->type->id == DF_TYPE_TIME64; /* bins wrap around the day */
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
        if (time_of_day && (months != 0 || stride >= 86400 * (__int128)q)) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "DATE_BIN stride for TIME input must be less than 1 day");
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
            if (time_of_day) {
                __int128 day = 86400 * (__int128)q;
                res = (res % day + day) % day;
            }
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
    df_fn fn;               /* regexp_like / regexp_count / regexp_replace */
    df__regex *re;          /* the compiled literal pattern, or NULL (compiled per row) */
    bool global;            /* regexp_replace 'g' */
} rx_aux;

static void rx_free(void *p) {
    rx_aux *r = p;
    if (!r) return;
    df__regex_free(r->re);
    df_free(r);
}

/*
 * Engine flags from a flags string: the Rust inline flags DataFusion
 * prefixes as (?flags) (i m s U x), 'c' case-sensitive, and 'g' (global
 * replace, regexp_replace only).
 */
static df_errkind rx_flags(const uint8_t *f, int32_t n, bool allow_g, uint32_t *flags, bool *global, df_error *err) {
    *flags = 0;
    *global = false;
    for (int32_t i = 0; i < n; i++) {
        switch (f[i]) {
        case 'i': *flags |= DF__RX_ICASE; break;
        case 'c': *flags &= ~DF__RX_ICASE; break;
        case 'm': *flags |= DF__RX_MULTILINE; break;
        case 's': *flags |= DF__RX_DOTALL; break;
        case 'U': *flags |= DF__RX_SWAP_GREED; break;
        case 'x': *flags |= DF__RX_VERBOSE; break;
        case 'u': *flags &= ~DF__RX_ASCII; break;
        case 'g':
            if (!allow_g) return df_error_set(err, DF_ERR_EXECUTION, "the 'g' flag is only for regexp_replace");
            *global = true;
            break;
        default:
            if (f[i] >= 0x20 && f[i] < 0x7F)
                return df_error_set(err, DF_ERR_EXECUTION, "unsupported regular expression flag '%c'", f[i]);
            return df_error_set(err, DF_ERR_EXECUTION, "unsupported regular expression flag (byte 0x%02x)", f[i]);
        }
    }
    return DF_OK;
}

/* Index of the flags argument, or -1. */
static int32_t flags_arg(df_fn fn, int32_t na) {
    if (fn == DF_FN_REGEXP_LIKE) return na > 2 ? 2 : -1;
    if (fn == DF_FN_REGEXP_COUNT) return na > 3 ? 3 : -1;
    if (fn == DF_FN_REGEXP_INSTR) return na > 4 ? 4 : -1;
    return na > 3 ? 3 : -1;
}

/* Bytes of the UTF-8 character at s[off] (1 past the end or on a broken byte). */
static size_t char_len(const uint8_t *s, size_t n, size_t off) {
    if (off >= n) return 1;
    uint32_t cp;
    return df__rx_utf8_decode(s + off, n - off, &cp);
}

/*
 * The next match of an iteration over s (Rust's find_iter): searches from
 * *off, skips an empty match that touches the end of the previous match
 * (*last_end), and advances *off past the match.  *found false ends it.
 */
static df_errkind rx_next(const df__regex *re, df__rx_scratch *sc, const df__rx_cancel *cancel, const uint8_t *s,
                          size_t n, size_t *off, int64_t *last_end, int64_t *slots, uint32_t nslots, bool *found,
                          df_error *err) {
    for (;;) {
        if (*off > n) {
            *found = false;
            return DF_OK;
        }
        DF_TRY(df__regex_find(re, sc, s, n, *off, slots, nslots, cancel, found, err));
        if (!*found) return DF_OK;
        int64_t ms = slots[0], me = slots[1];
        if (ms == me && ms == *last_end) {
            *off = (size_t)ms + char_len(s, n, (size_t)ms);
            continue;
        }
        *last_end = me;
        *off = me > ms ? (size_t)me : (size_t)me + char_len(s, n, (size_t)me);
        return DF_OK;
    }
}

/*
 * Appends the replacement for one match.  Rust's syntax: $N and $name
 * (the longest run of [0-9A-Za-z_]), ${N} / ${name}, $$ for a dollar; and
 * the POSIX-style \N (or \\N) DataFusion turns into ${N}; other backslashes stay.
 * Groups that did not take part, or do not exist, give nothing.
 */
static df_errkind put_replacement(df_buf *o, const df__regex *re, const uint8_t *subject, const int64_t *m,
                                  uint32_t nm, const uint8_t *rep, int32_t rn, df_error *err) {
    for (int32_t j = 0; j < rn; j++) {
        uint8_t c = rep[j];
        int64_t g = -1;
        /* \N, or \\N (one backslash doubled), is group N; other backslashes are kept as they are. */
        if (c == '\\' && j + 2 < rn && rep[j + 1] == '\\' && rep[j + 2] >= '0' && rep[j + 2] <= '9') j++;
        if (c == '\\' && j + 1 < rn && rep[j + 1] >= '0' && rep[j + 1] <= '9') {
            g = 0;
            while (j + 1 < rn && rep[j + 1] >= '0' && rep[j + 1] <= '9' && g < 100000) g = g * 10 + (rep[++j] - '0');
        } else if (c == '$' && j + 1 < rn && rep[j + 1] == '$') {
            DF_TRY(df_buf_append_char(o, '$', err));
            j++;
            continue;
        } else if (c == '$' && j + 1 < rn) {
            bool braced = rep[j + 1] == '{';
            int32_t b = j + 1 + braced, e = b;
            if (braced) {
                while (e < rn && rep[e] != '}') e++;
            } else {
                while (e < rn && ((rep[e] >= '0' && rep[e] <= '9') || (rep[e] >= 'a' && rep[e] <= 'z') ||
                                  (rep[e] >= 'A' && rep[e] <= 'Z') || rep[e] == '_'))
                    e++;
            }
            if (e > b && (!braced || e < rn)) {
                bool digits = true;
                int64_t val = 0;
                for (int32_t q = b; q < e && digits; q++) {
                    digits = rep[q] >= '0' && rep[q] <= '9';
                    if (digits && val < 100000) val = val * 10 + (rep[q] - '0');
                }
                g = digits ? val : df__regex_group_named(re, rep + b, (size_t)(e - b));
                if (g < 0) g = INT32_MAX; /* an unknown name: nothing */
                j = braced ? e : e - 1;
            }
        }
        if (g < 0) {
            DF_TRY(df_buf_append_char(o, (char)c, err));
        } else if ((uint64_t)g < nm / 2 && m[2 * g] >= 0) {
            DF_TRY(df_buf_append(o, subject + m[2 * g], (size_t)(m[2 * g + 1] - m[2 * g]), err));
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
    /* A NULL flags argument (the last one) means no flags, as in DataFusion. */
    int32_t fa = flags_arg(fn, na), nvalid = fa >= 0 && fa == na - 1 && fn != DF_FN_REGEXP_REPLACE ? na - 1 : na;
    if (strings) DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 16));
    else {
        DF_TRY(df__kernel_out(k, 0, &v));
        df_errkind e0 = df__kernel_and_validity(k, a, nvalid, v);
        if (e0) {
            df_vec_release(v);
            return e0;
        }
        if (fn == DF_FN_REGEXP_LIKE) memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    }
    const df_vec *valid_v = strings ? sb.v : v;
    df__rx_scratch sc = {0};
    df__rx_cancel cancel = {{k->ctx ? &k->ctx->cancel : NULL, k->ctx ? k->ctx->user_cancel : NULL}};
    df__regex *row_re = NULL;           /* the last per-row pattern, reused while rows repeat it */
    const uint8_t *row_p = NULL, *row_f = NULL;
    int32_t row_pn = -1, row_fn = -1;
    bool row_global = false;
    int64_t *slots = NULL;
    uint32_t nslots = 0;
    df_buf o;
    df_buf_init(&o, MAX_TEXT);
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(valid_v, i)) {
            if (fn == DF_FN_REGEXP_COUNT) DF_VEC_VALUES(v, int64_t)[i] = 0; /* regexp_count is 0 on NULLs */
            continue;
        }
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const df__regex *re = ra->re;
        bool global = ra->global;
        if (!re) {
            int32_t fl = 0, pn;
            const uint8_t *f = fa >= 0 && df_xreg_valid(&a[fa], i) ? df_vec_bytes(a[fa].vec, a[fa].is_const ? 0 : i, &fl)
                                                                     : NULL;
            const uint8_t *p = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &pn);
            bool same = row_re && pn == row_pn && fl == row_fn && (!pn || memcmp(p, row_p, (size_t)pn) == 0) &&
                        (!fl || memcmp(f, row_f, (size_t)fl) == 0);
            if (!same) {
                df__regex_free(row_re);
                row_re = NULL;
                uint32_t flags;
                e = rx_flags(f, fl, fn == DF_FN_REGEXP_REPLACE, &flags, &row_global, k->err);
                if (!e) e = df__regex_new(p, (size_t)pn, flags, &row_re, k->err);
                if (e) break;
                row_p = p;
                row_pn = pn;
                row_f = f;
                row_fn = fl;
            }
            re = row_re;
            global = row_global;
        }
        uint32_t need = fn == DF_FN_REGEXP_REPLACE || fn == DF_FN_REGEXP_INSTR ? 2 * re->ngroups : 2;
        if (fn != DF_FN_REGEXP_LIKE && need > nslots) {
            int64_t *ns = df_realloc(slots, (size_t)need * sizeof *ns);
            if (!ns) {
                e = DF_OOM(k->err);
                break;
            }
            slots = ns;
            nslots = need;
        }
        if (fn == DF_FN_REGEXP_LIKE) {
            bool m;
            e = df__regex_find(re, &sc, s, (size_t)n, 0, NULL, 0, &cancel, &m, k->err);
            if (!e && m) df_bit_set(v->values->data, i);
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
                int64_t count = 0, last_end = -1;
                size_t at = (size_t)off;
                bool found = ch == start;
                while (found && !e) {
                    e = rx_next(re, &sc, &cancel, s, (size_t)n, &at, &last_end, slots, 2, &found, k->err);
                    if (!e && found) count++;
                }
                DF_VEC_VALUES(v, int64_t)[i] = count;
            }
        } else if (fn == DF_FN_REGEXP_INSTR) {
            /* regexp_instr(s, p [, start [, n [, flags [, group]]]]): the character position of the n-th
             * match (or of its group) in s from character start on, searched as if s began there; 0 if none. */
            int64_t start = na > 2 ? DF_VEC_VALUES(a[2].vec, int64_t)[a[2].is_const ? 0 : i] : 1;
            int64_t nth = na > 3 ? DF_VEC_VALUES(a[3].vec, int64_t)[a[3].is_const ? 0 : i] : 1;
            int64_t group = na > 5 ? DF_VEC_VALUES(a[5].vec, int64_t)[a[5].is_const ? 0 : i] : 0;
            if (start < 1 || nth < 1 || group < 0) {
                e = df_error_set(k->err, DF_ERR_EXECUTION, "regexp_instr %s must be %s",
                                 start < 1 ? "start" : nth < 1 ? "n" : "the subexpression number",
                                 group < 0 && start >= 1 && nth >= 1 ? "non-negative" : "at least 1");
            } else {
                int64_t off = 0, ch = 1, r = 0;
                while (off < n && ch < start) {
                    off++;
                    while (off < n && (s[off] & 0xC0) == 0x80) off++;
                    ch++;
                }
                if (ch == start) {
                    const uint8_t *sub = s + off;
                    size_t subn = (size_t)(n - off), at = 0;
                    int64_t last_end = -1, seen = 0;
                    bool found = true;
                    while (!e && found && seen < nth) {
                        e = rx_next(re, &sc, &cancel, sub, subn, &at, &last_end, slots, need, &found, k->err);
                        if (!e && found) seen++;
                    }
                    if (!e && found && seen == nth && (uint64_t)group < re->ngroups && slots[2 * group] >= 0) {
                        r = start;
                        for (int64_t b = 0; b < slots[2 * group]; b++) r += (sub[b] & 0xC0) != 0x80;
                    }
                }
                DF_VEC_VALUES(v, int64_t)[i] = r;
            }
        } else {
            int32_t rn;
            const uint8_t *rep = df_vec_bytes(a[2].vec, a[2].is_const ? 0 : i, &rn);
            o.len = 0;
            size_t at = 0, copied = 0;
            int64_t last_end = -1;
            bool found = true;
            while (!e && found) {
                e = rx_next(re, &sc, &cancel, s, (size_t)n, &at, &last_end, slots, need, &found, k->err);
                if (e || !found) break;
                e = df_buf_append(&o, (const char *)s + copied, (size_t)slots[0] - copied, k->err);
                if (!e) e = put_replacement(&o, re, s, slots, need, rep, rn, k->err);
                copied = (size_t)slots[1];
                if (!global) break;
            }
            if (!e && copied < (size_t)n) e = df_buf_append(&o, (const char *)s + copied, (size_t)n - copied, k->err);
            if (e == DF_ERR_LIMIT_EXCEEDED || e == DF_ERR_OUT_OF_MEMORY) e = e == DF_ERR_OUT_OF_MEMORY ? DF_OOM(k->err) : df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "regexp_replace result too long");
            if (!e) e = df__sb_put(&sb, i, o.data ? o.data : "", (int64_t)o.len);
        }
    });
    df__regex_free(row_re);
    df__rx_scratch_free(&sc);
    df_free(slots);
    df_buf_free(&o);
    if (e) {
        if (strings) df__sb_abort(&sb);
        else df_vec_release(v);
        return e;
    }
    if (fn == DF_FN_REGEXP_COUNT && v->validity) {
        df_buffer_release(v->validity);
        v->validity = NULL;
        v->null_count = 0;
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
    bool lit = pat->kind == DF_EX_LITERAL && !pat->lit->is_null && (!fl || fl->kind == DF_EX_LITERAL);
    if (fl && fl->kind == DF_EX_LITERAL && fl->lit->is_null) fl = NULL;
    if (lit) {
        uint32_t flags;
        df_errkind k = rx_flags(fl ? fl->lit->v.bytes.ptr : NULL, fl ? (int32_t)fl->lit->v.bytes.len : 0,
                                call->fn == DF_FN_REGEXP_REPLACE, &flags, &ra->global, err);
        if (!k) k = df__regex_new(pat->lit->v.bytes.ptr, pat->lit->v.bytes.len, flags, &ra->re, err);
        if (k) {
            df_free(ra);
            return k;
        }
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

/* 0 hex, 1 base64 (encodes without padding), 2 base64pad (with); -1 unknown.  Both base64s decode either. */
static int encoding_of(const uint8_t *f, int32_t n) {
    if (n == 3 && casecmp_n((const char *)f, "hex", 3) == 0) return 0;
    if (n == 6 && casecmp_n((const char *)f, "base64", 6) == 0) return 1;
    if (n == 9 && casecmp_n((const char *)f, "base64pad", 9) == 0) return 2;
    return -1;
}

static const char *const encoding_names[] = {"hex", "base64", "base64pad"};

static df_errkind encode_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 16));
    df_errkind e = DF_OK;
    if (a[1].is_const && !df_xreg_valid(&a[1], 0)) {
        df__sb_abort(&sb);
        return df_error_set(k->err, DF_ERR_EXECUTION, "Encoding must be a non-null string");
    }
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t n, fn_len;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        const uint8_t *f = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &fn_len);
        int enc = encoding_of(f, fn_len);
        if (enc < 0) {
            e = df_error_set(k->err, DF_ERR_EXECUTION, "unsupported encoding '%.*s' (hex, base64, base64pad)",
                             fn_len > 20 ? 20 : fn_len, f);
            break;
        }
        if (fn == DF_FN_ENCODE) {
            int64_t olen = enc == 0 ? 2 * (int64_t)n : 4 * (((int64_t)n + 2) / 3);
            bool pad = enc == 2;
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
                    if (j + 1 < n || pad) d[w++] = j + 1 < n ? (uint8_t)b64[(x >> 6) & 63] : '=';
                    if (j + 2 < n || pad) d[w++] = j + 2 < n ? (uint8_t)b64[x & 63] : '=';
                }
            }
            df__sb_commit(&sb, i, w);
        } else {
            if ((e = df__sb_reserve(&sb, n))) break;
            uint8_t *d = sb.v->data->data + sb.pos;
            int64_t w = 0;
            const char *why = NULL;
            if (enc == 0) {
                if (n % 2) why = "Odd number of digits";
                else if (!df_hex_decode((const char *)s, (size_t)n, d)) why = "Invalid character";
                w = n / 2;
            } else {
                /* Strict as Rust's base64: a lone final symbol or nonzero leftover bits are errors. */
                uint32_t acc = 0;
                int bits = 0, sym = 0;
                int32_t j = 0;
                for (; !why && j < n && s[j] != '='; j++) {
                    int c = b64val(s[j]);
                    if (c < 0) {
                        why = "Invalid symbol";
                        break;
                    }
                    acc = (acc << 6) | (uint32_t)c;
                    bits += 6;
                    sym++;
                    if (bits >= 8) {
                        bits -= 8;
                        d[w++] = (uint8_t)(acc >> bits);
                    }
                }
                for (int32_t q = j; !why && q < n; q++)
                    if (s[q] != '=' || q - j >= 2) why = "Invalid padding";
                if (!why && sym % 4 == 1) why = "Invalid input length";
                if (!why && bits && (acc & ((1u << bits) - 1))) why = "Invalid last symbol";
            }
            if (why) {
                e = df_error_set(k->err, DF_ERR_EXECUTION, "Failed to decode value using %s: %s",
                                 encoding_names[enc], why);
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

/*
 * md5(str) -> lower-case hex text; sha224 ... sha512(x) and digest(x, algorithm) -> the digest's bytes.
 * aux holds the algorithm + 1 (0 = digest: the algorithm is the second argument, per row).
 */
static df_errkind digest_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    int fixed = (int)(intptr_t)k->aux - 1;
    bool hex = fixed == DF_DIGEST_MD5;
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 32));
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        int algo = fixed;
        if (algo < 0) {
            int32_t an;
            const uint8_t *an_p = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &an);
            algo = df_digest_from_name((const char *)an_p, (size_t)an);
            if (algo < 0) {
                e = df_error_set(k->err, DF_ERR_EXECUTION,
                                 "There is no built-in digest algorithm named '%.*s', currently supported algorithms "
                                 "are: md5, sha224, sha256, sha384, sha512, blake2s, blake2b, blake3",
                                 an > 40 ? 40 : an, an_p);
                break;
            }
        }
        uint8_t dg[DF_DIGEST_MAX_LEN];
        df_digest((df_digest_algo)algo, s, (size_t)n, dg);
        size_t len = df_digest_len((df_digest_algo)algo);
        if (hex) {
            char text[2 * DF_DIGEST_MAX_LEN];
            df_hex_encode(dg, len, text, false);
            e = df__sb_put(&sb, i, text, (int64_t)(2 * len));
        } else {
            e = df__sb_put(&sb, i, dg, (int64_t)len);
        }
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
    case DF_FN_REGEXP_LIKE: case DF_FN_REGEXP_COUNT: case DF_FN_REGEXP_REPLACE: case DF_FN_REGEXP_INSTR: return regexp_kernel_for(call, out, err);
    case DF_FN_ENCODE: case DF_FN_DECODE:
        out->fn = encode_k;
        out->aux = (void *)(intptr_t)call->fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_MD5: case DF_FN_SHA224: case DF_FN_SHA256: case DF_FN_SHA384: case DF_FN_SHA512: case DF_FN_DIGEST:
        out->fn = digest_k;
        out->aux = (void *)(intptr_t)(call->fn == DF_FN_MD5      ? DF_DIGEST_MD5 + 1
                                      : call->fn == DF_FN_SHA224 ? DF_DIGEST_SHA224 + 1
                                      : call->fn == DF_FN_SHA256 ? DF_DIGEST_SHA256 + 1
                                      : call->fn == DF_FN_SHA384 ? DF_DIGEST_SHA384 + 1
                                      : call->fn == DF_FN_SHA512 ? DF_DIGEST_SHA512 + 1
                                                                 : 0);
        out->can_error = call->fn == DF_FN_DIGEST;
        return DF_OK;
    case DF_FN_FIND_IN_SET: case DF_FN_LEVENSHTEIN:
        out->fn = str2_int32_k;
        out->aux = (void *)(intptr_t)call->fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_SUBSTRING_INDEX: out->fn = substr_index_k; return DF_OK;
    default: return DF_OK;
    }
}
