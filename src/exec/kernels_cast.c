/*
 * CAST kernels and the text formats of values.
 *
 * Casts follow arrow/DataFusion rules: integer narrowing, float to integer
 * (truncation) and decimal rescaling check ranges and fail with
 * DF_ERR_CAST (TRY_CAST gives NULL instead); decimal scale reduction rounds
 * half away from zero; strings parse strictly (no surrounding garbage);
 * timestamps convert between units by exact multiplication or flooring
 * division; dates and timestamps meet at midnight UTC.
 *
 * Each cast is one function with a row loop specialised by source and
 * target class; the per-row work is a switch only on slow paths (strings).
 */
#include "exec/exec_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/tzif.h"
#include "sql/sql_types.h"

typedef struct cast_aux {
    df_type *from;          /* source type (reference) */
    df_type *to;            /* target type (reference) */
    bool try_cast;          /* NULL instead of failing */
    df_tz *zone;            /* a zoned timestamp's IANA zone, for text (opened once), or NULL */
    df_i128 mul;            /* decimal/unit rescaling factor */
    int shift;              /* scale difference (target - source) */
} cast_aux;

static void cast_aux_free(void *p) {
    cast_aux *a = p;
    if (!a) return;
    df_type_release(a->from);
    df_type_release(a->to);
    df__tz_free(a->zone);
    df_free(a);
}

static df_i128 p10(int e) {
    df_i128 r = 1;
    for (int i = 0; i < e && i < 38; i++) r *= 10;
    return r;
}

static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};

/* ------------------------------------------------------------------------ */
/* Calendar                                                                  */

static int days_in_month(int64_t y, int m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dm[m - 1];
}

/* Reads exactly `width` digits (or 1..width when !exact). */
static bool digits(const char **p, const char *end, int min, int max, int64_t *v) {
    int n = 0;
    int64_t x = 0;
    while (*p < end && n < max && **p >= '0' && **p <= '9') {
        x = x * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    *v = x;
    return n >= min;
}

/* YYYY-MM-DD at *p (sign allowed, 4..6 year digits). */
static bool parse_ymd(const char **p, const char *end, int64_t *days) {
    bool neg = false;
    if (*p < end && (**p == '-' || **p == '+')) neg = *(*p)++ == '-';
    int64_t y, m, d;
    if (!digits(p, end, 4, 6, &y) || *p >= end || **p != '-') return false;
    (*p)++;
    if (!digits(p, end, 1, 2, &m) || *p >= end || **p != '-') return false;
    (*p)++;
    if (!digits(p, end, 1, 2, &d)) return false;
    if (neg) y = -y;
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, (int)m)) return false;
    *days = df_days_from_civil(y, (int)m, (int)d);
    return true;
}

static void trim(const char **s, const char **end) {
    while (*s < *end && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) (*s)++;
    while (*end > *s && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\n' || (*end)[-1] == '\r')) (*end)--;
}

bool df__parse_date(const char *s, size_t n, int32_t *out) {
    const char *p = s, *end = s + n;
    trim(&p, &end);
    int64_t days;
    if (!parse_ymd(&p, end, &days)) return false;
    if (p != end && *p != 'T' && *p != ' ') return false;
    if (days < INT32_MIN || days > INT32_MAX) return false;
    *out = (int32_t)days;
    return true;
}

/* HH:MM[:SS[.frac]] -> nanoseconds since midnight. */
static bool parse_clock(const char **p, const char *end, int64_t *nanos) {
    int64_t h, mi, sec = 0, frac = 0;
    if (!digits(p, end, 1, 2, &h) || *p >= end || **p != ':') return false;
    (*p)++;
    if (!digits(p, end, 2, 2, &mi)) return false;
    if (*p < end && **p == ':') {
        (*p)++;
        if (!digits(p, end, 2, 2, &sec)) return false;
        if (*p < end && **p == '.') {
            (*p)++;
            int n = 0;
            while (*p < end && **p >= '0' && **p <= '9') {
                if (n < 9) frac = frac * 10 + (**p - '0');
                n++;
                (*p)++;
            }
            if (n == 0) return false;
            for (int i = n; i < 9; i++) frac *= 10;
        }
    }
    if (h > 24 || mi > 59 || sec > 60) return false;
    *nanos = ((h * 60 + mi) * 60 + sec) * 1000000000LL + frac;
    return true;
}

bool df__parse_timestamp(const char *s, size_t n, df_time_unit unit, int64_t *out) {
    return df__parse_timestamp_zoned(s, n, unit, out, NULL);
}

bool df__parse_timestamp_zoned(const char *s, size_t n, df_time_unit unit, int64_t *out, bool *zoned) {
    if (zoned) *zoned = false;
    const char *p = s, *end = s + n;
    trim(&p, &end);
    int64_t days, nanos = 0, offset_s = 0;
    if (!parse_ymd(&p, end, &days)) return false;
    if (p < end && (*p == 'T' || *p == 't' || *p == ' ')) {
        p++;
        if (!parse_clock(&p, end, &nanos)) return false;
    }
    while (p < end && *p == ' ') p++;
    if (p < end) {
        if (zoned) *zoned = true;
        if ((*p == 'Z' || *p == 'z') && p + 1 == end) {
            p++;
        } else if (end - p == 3 && df_ascii_ncasecmp(p, "UTC", 3) == 0) {
            p += 3;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1;
            int64_t hh, mm = 0;
            if (!digits(&p, end, 2, 2, &hh)) return false;
            if (p < end && *p == ':') p++;
            if (p < end && !digits(&p, end, 2, 2, &mm)) return false;
            if (hh > 23 || mm > 59) return false;
            offset_s = sign * (hh * 3600 + mm * 60);
        }
        if (p != end) return false;
    }
    /* nanos within the day at the unit, then days and offset. */
    int64_t q = per_sec[unit];
    int64_t sub = nanos / (1000000000LL / q);
    int64_t secs_total;
    if (__builtin_mul_overflow(days, 86400, &secs_total) || __builtin_sub_overflow(secs_total, offset_s, &secs_total))
        return false;
    int64_t v;
    if (__builtin_mul_overflow(secs_total, q, &v) || __builtin_add_overflow(v, sub, &v)) return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Formatting (CAST to string)                                               */

static df_errkind fmt_i128(df_buf *out, df_i128 v, int scale, df_error *err) {
    char buf[64];
    int n = 0;
    bool neg = v < 0;
    df_u128 u = neg ? (df_u128)0 - (df_u128)v : (df_u128)v;
    do {
        buf[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (scale > 0 && n <= scale) buf[n++] = '0';
    char o[128];
    int k = 0;
    if (neg) o[k++] = '-';
    for (int i = n - 1; i >= 0; i--) {
        o[k++] = buf[i];
        if (scale > 0 && i == scale) o[k++] = '.';
    }
    /* A negative scale counts tens: 5 in DECIMAL(10, -2) is 500 (at most 38 zeros, within o). */
    for (int z = 0; v && scale < 0 && z < -scale && z < 38; z++) o[k++] = '0';
    return df_buf_append(out, o, (size_t)k, err);
}

/* Shortest round-trip text of a double (at most 17 significant digits). */
static int shortest(double d, char *buf, size_t size) {
    for (int prec = 1; prec <= 17; prec++) {
        int n = snprintf(buf, size, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) return n;
    }
    return snprintf(buf, size, "%.17g", d);
}

static df_errkind fmt_double(df_buf *out, double d, bool is_f32, df_error *err) {
    if (isnan(d)) return df_buf_append_str(out, "NaN", err);
    if (isinf(d)) return df_buf_append_str(out, d < 0 ? "-inf" : "inf", err);
    char buf[40];
    if (is_f32) {
        float f = (float)d;
        int n = 0;
        for (int prec = 1; prec <= 9; prec++) {
            n = snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
            if ((float)strtod(buf, NULL) == f) break;
        }
        (void)n;
    } else {
        shortest(d, buf, sizeof buf);
    }
    /* Plain notation for moderate magnitudes, like arrow's formatter. */
    if (strchr(buf, 'e')) {
        double a = fabs(d);
        if (a >= 1e-7 && a < 1e16) {
            int digits_after = 0;
            char tmp[40];
            for (digits_after = 0; digits_after < 24; digits_after++) {
                snprintf(tmp, sizeof tmp, "%.*f", digits_after, d);
                if (strtod(tmp, NULL) == d) break;
            }
            df__memcpy(buf, tmp, sizeof buf);
        }
    }
    DF_TRY(df_buf_append_str(out, buf, err));
    if (!strchr(buf, '.') && !strchr(buf, 'e') && !strchr(buf, 'n') && !strchr(buf, 'N'))
        DF_TRY(df_buf_append_str(out, ".0", err));
    return DF_OK;
}

static df_errkind fmt_date(df_buf *out, int64_t days, df_error *err) {
    int64_t y;
    int m, d;
    df_civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) return df_buf_printf(out, err, "%+05" PRId64 "-%02d-%02d", y, m, d);
    return df_buf_printf(out, err, "%04" PRId64 "-%02d-%02d", y, m, d);
}

static df_errkind fmt_frac(df_buf *out, int64_t frac_ns, df_error *err) {
    if (frac_ns == 0) return DF_OK;
    if (frac_ns % 1000000 == 0) return df_buf_printf(out, err, ".%03" PRId64, frac_ns / 1000000);
    if (frac_ns % 1000 == 0) return df_buf_printf(out, err, ".%06" PRId64, frac_ns / 1000);
    return df_buf_printf(out, err, ".%09" PRId64, frac_ns);
}

static bool utc_name(const char *tz) { return strcmp(tz, "UTC") == 0 || strcmp(tz, "+00:00") == 0 || strcmp(tz, "Z") == 0; }

/*
 * A timestamp as chrono prints it: a zoned one as its wall time there and the
 * offset (2000-12-01T04:04:12-05:00; UTC as Z).  `zone` is tz opened by the
 * caller once, or NULL to open it here.
 */
static df_errkind fmt_timestamp(df_buf *out, int64_t v, df_time_unit unit, const char *tz, const df_tz *zone,
                                df_error *err) {
    int64_t q = per_sec[unit];
    int64_t secs = v / q, frac = v % q;
    if (frac < 0) frac += q, secs--;
    int64_t off = 0;
    bool known = true;
    if (tz && !utc_name(tz)) {
        df_tz *own = NULL;
        if (!zone && df__tz_open(tz, &own, NULL) == DF_OK) zone = own;
        known = zone != NULL;
        if (zone) off = df__tz_offset_at(zone, secs);
        df__tz_free(own);
        if (__builtin_add_overflow(secs, off, &secs)) secs -= off, off = 0;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) rem += 86400, days--;
    DF_TRY(fmt_date(out, days, err));
    DF_TRY(df_buf_printf(out, err, "T%02d:%02d:%02d", (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60)));
    DF_TRY(fmt_frac(out, frac * (1000000000LL / q), err));
    if (tz) {
        if (utc_name(tz)) return df_buf_append_str(out, "Z", err);
        if (!known) return df_buf_append_str(out, tz, err);
        int64_t a = off < 0 ? -off : off;
        return df_buf_printf(out, err, "%c%02d:%02d", off < 0 ? '-' : '+', (int)(a / 3600), (int)(a / 60 % 60));
    }
    return DF_OK;
}

static df_errkind fmt_time(df_buf *out, int64_t v, df_time_unit unit, df_error *err) {
    int64_t q = per_sec[unit];
    int64_t secs = v / q, frac = v % q;
    DF_TRY(df_buf_printf(out, err, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60)));
    return fmt_frac(out, frac * (1000000000LL / q), err);
}

static df_errkind fmt_interval(df_buf *out, int32_t months, int32_t days, int64_t nanos, df_error *err) {
    bool any = false;
    if (months) {
        DF_TRY(df_buf_printf(out, err, "%d mons", months));
        any = true;
    }
    if (days) {
        DF_TRY(df_buf_printf(out, err, "%s%d days", any ? " " : "", days));
        any = true;
    }
    if (nanos) {
        int64_t a = nanos < 0 ? -nanos : nanos;
        const char *sign = nanos < 0 ? "-" : "";
        int64_t h = a / 3600000000000LL, mi = a / 60000000000LL % 60, s = a / 1000000000LL % 60, f = a % 1000000000LL;
        if (h) {
            DF_TRY(df_buf_printf(out, err, "%s%s%" PRId64 " hours", any ? " " : "", sign, h));
            any = true;
        }
        if (mi) {
            DF_TRY(df_buf_printf(out, err, "%s%s%" PRId64 " mins", any ? " " : "", sign, mi));
            any = true;
        }
        if (s || f) {
            DF_TRY(df_buf_printf(out, err, "%s%s%" PRId64, any ? " " : "", sign, s));
            if (f) {
                char fb[16];
                snprintf(fb, sizeof fb, "%09" PRId64, f);
                int l = 9;
                while (l > 0 && fb[l - 1] == '0') l--;
                DF_TRY(df_buf_printf(out, err, ".%.*s", l, fb));
            }
            DF_TRY(df_buf_append_str(out, " secs", err));
            any = true;
        }
    }
    if (!any) return df_buf_append_str(out, "0 secs", err);
    return DF_OK;
}

df_errkind df__format_value(const df_vec *v, int64_t i, df_buf *out, df_error *err) {
    return df__format_value_zoned(v, i, NULL, out, err);
}

df_errkind df__format_value_zoned(const df_vec *v, int64_t i, const df_tz *zone, df_buf *out, df_error *err) {
    const df_type *t = v->type;
    switch (t->id) {
    case DF_TYPE_BOOL: return df_buf_append_str(out, df_vec_bool(v, i) ? "true" : "false", err);
    case DF_TYPE_INT8: return df_buf_printf(out, err, "%d", DF_VEC_VALUES(v, int8_t)[i]);
    case DF_TYPE_INT16: return df_buf_printf(out, err, "%d", DF_VEC_VALUES(v, int16_t)[i]);
    case DF_TYPE_INT32: return df_buf_printf(out, err, "%" PRId32, DF_VEC_VALUES(v, int32_t)[i]);
    case DF_TYPE_INT64: return df_buf_printf(out, err, "%" PRId64, DF_VEC_VALUES(v, int64_t)[i]);
    case DF_TYPE_UINT8: return df_buf_printf(out, err, "%u", DF_VEC_VALUES(v, uint8_t)[i]);
    case DF_TYPE_UINT16: return df_buf_printf(out, err, "%u", DF_VEC_VALUES(v, uint16_t)[i]);
    case DF_TYPE_UINT32: return df_buf_printf(out, err, "%" PRIu32, DF_VEC_VALUES(v, uint32_t)[i]);
    case DF_TYPE_UINT64: return df_buf_printf(out, err, "%" PRIu64, DF_VEC_VALUES(v, uint64_t)[i]);
    case DF_TYPE_FLOAT32: return fmt_double(out, DF_VEC_VALUES(v, float)[i], true, err);
    case DF_TYPE_FLOAT64: return fmt_double(out, DF_VEC_VALUES(v, double)[i], false, err);
    case DF_TYPE_DECIMAL128: return fmt_i128(out, DF_VEC_VALUES(v, df_i128)[i], t->scale, err);
    case DF_TYPE_DATE32: return fmt_date(out, DF_VEC_VALUES(v, int32_t)[i], err);
    case DF_TYPE_DATE64: {
        int64_t ms = DF_VEC_VALUES(v, int64_t)[i];
        int64_t days = ms / 86400000;
        if (ms % 86400000 < 0) days--;
        return fmt_date(out, days, err);
    }
    case DF_TYPE_TIMESTAMP: return fmt_timestamp(out, DF_VEC_VALUES(v, int64_t)[i], t->unit, t->timezone, zone, err);
    case DF_TYPE_TIME32: return fmt_time(out, DF_VEC_VALUES(v, int32_t)[i], t->unit, err);
    case DF_TYPE_TIME64: return fmt_time(out, DF_VEC_VALUES(v, int64_t)[i], t->unit, err);
    case DF_TYPE_DURATION: {
        int64_t d = DF_VEC_VALUES(v, int64_t)[i];
        return fmt_interval(out, 0, 0, d * (1000000000LL / per_sec[t->unit]), err);
    }
    case DF_TYPE_INTERVAL_MDN: {
        const uint8_t *p = v->values->data + (v->offset + i) * 16;
        int32_t mo, da;
        int64_t na;
        df__memcpy(&mo, p, 4);
        df__memcpy(&da, p + 4, 4);
        df__memcpy(&na, p + 8, 8);
        return fmt_interval(out, mo, da, na, err);
    }
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        int32_t len;
        const uint8_t *p = df_vec_bytes(v, i, &len);
        return df_buf_append(out, p, (size_t)len, err);
    }
    default:
        return df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "cannot format this type as text");
    }
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */

/* Marks row i NULL (TRY_CAST) or fails. */
static df_errkind cast_fail(const df_kargs *k, df_vec *v, int64_t i, const char *what) {
    const cast_aux *a = k->aux;
    if (a->try_cast) {
        DF_TRY(df_vec_ensure_validity(v, k->n, k->err));
        df_bit_clear(v->validity->data, i);
        return DF_OK;
    }
    return df_error_set(k->err, DF_ERR_CAST, "%s", what);
}

static bool out_valid(const df_vec *v, int64_t i) { return !v->validity || df_bit_get(v->validity->data, i); }

/* Reads element i of a numeric/temporal register as int64 (exact for every integer type but uint64 > INT64_MAX). */
static inline int64_t read_i64(const df_vec *v, int64_t i) {
    switch (v->type->id) {
    case DF_TYPE_INT8: return DF_VEC_VALUES(v, int8_t)[i];
    case DF_TYPE_INT16: return DF_VEC_VALUES(v, int16_t)[i];
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: return DF_VEC_VALUES(v, int32_t)[i];
    case DF_TYPE_UINT8: return DF_VEC_VALUES(v, uint8_t)[i];
    case DF_TYPE_UINT16: return DF_VEC_VALUES(v, uint16_t)[i];
    case DF_TYPE_UINT32: return DF_VEC_VALUES(v, uint32_t)[i];
    case DF_TYPE_UINT64: return (int64_t)DF_VEC_VALUES(v, uint64_t)[i];
    case DF_TYPE_BOOL: return df_vec_bool(v, i);
    default: return DF_VEC_VALUES(v, int64_t)[i];
    }
}

static inline bool fits(df_type_id id, df_i128 x) {
    switch (id) {
    case DF_TYPE_INT8: return x >= INT8_MIN && x <= INT8_MAX;
    case DF_TYPE_INT16: return x >= INT16_MIN && x <= INT16_MAX;
    case DF_TYPE_INT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32: return x >= INT32_MIN && x <= INT32_MAX;
    case DF_TYPE_UINT8: return x >= 0 && x <= UINT8_MAX;
    case DF_TYPE_UINT16: return x >= 0 && x <= UINT16_MAX;
    case DF_TYPE_UINT32: return x >= 0 && x <= UINT32_MAX;
    case DF_TYPE_UINT64: return x >= 0 && x <= (df_i128)UINT64_MAX;
    default: return x >= INT64_MIN && x <= INT64_MAX;
    }
}

static inline void write_int(df_vec *v, int64_t i, df_i128 x) {
    uint8_t *d = v->values->data;
    switch (v->type->id) {
    case DF_TYPE_INT8: case DF_TYPE_UINT8: d[i] = (uint8_t)(int64_t)x; break;
    case DF_TYPE_INT16: case DF_TYPE_UINT16: ((uint16_t *)(void *)d)[i] = (uint16_t)(int64_t)x; break;
    case DF_TYPE_INT32: case DF_TYPE_UINT32: case DF_TYPE_DATE32: case DF_TYPE_TIME32:
        ((uint32_t *)(void *)d)[i] = (uint32_t)(int64_t)x;
        break;
    case DF_TYPE_UINT64: ((uint64_t *)(void *)d)[i] = (uint64_t)x; break;
    default: ((int64_t *)(void *)d)[i] = (int64_t)x; break;
    }
}

/* Value of element i of any integer / bool type as i128. */
static inline df_i128 read_int128(const df_vec *v, int64_t i) {
    if (v->type->id == DF_TYPE_UINT64) return (df_i128)DF_VEC_VALUES(v, uint64_t)[i];
    return read_i64(v, i);
}

static inline double read_f64(const df_vec *v, int64_t i) {
    switch (v->type->id) {
    case DF_TYPE_FLOAT32: return DF_VEC_VALUES(v, float)[i];
    case DF_TYPE_FLOAT64: return DF_VEC_VALUES(v, double)[i];
    case DF_TYPE_UINT64: return (double)DF_VEC_VALUES(v, uint64_t)[i];
    case DF_TYPE_DECIMAL128: return (double)DF_VEC_VALUES(v, df_i128)[i] / pow(10, v->type->scale);
    default: return (double)read_i64(v, i);
    }
}

static df_i128 dec_max(int precision) { return p10(precision) - 1; }

/* Divides by 10^e rounding half away from zero. */
static df_i128 div_round(df_i128 x, df_i128 d) {
    df_i128 q = x / d, r = x % d;
    if ((r < 0 ? -r : r) * 2 >= d) q += x < 0 ? -1 : 1;
    return q;
}

/* Numeric -> numeric (ints, floats, decimals, bool in both directions). */
static df_errkind cast_numeric(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    const df_vec *x = a[0].vec;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    df_type_id to = ca->to->id, from = ca->from->id;
    int ps, ss;
    bool to_dec = df__sqlt_decimal_ps(ca->to, &ps, &ss);
    int fp, fs;
    bool from_dec = df__sqlt_decimal_ps(ca->from, &fp, &fs);
    if (to == DF_TYPE_BOOL) memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    DF_FOR_SEL(k, i, {
        if (!out_valid(v, i)) continue;
        int64_t j = a[0].is_const ? 0 : i;
        if (to == DF_TYPE_BOOL) {
            bool b = (from == DF_TYPE_FLOAT32 || from == DF_TYPE_FLOAT64) ? read_f64(x, j) != 0
                     : from_dec                                       ? DF_VEC_VALUES(x, df_i128)[j] != 0
                                                                      : read_int128(x, j) != 0;
            if (b) df_bit_set(v->values->data, i);
        } else if (to == DF_TYPE_FLOAT32 || to == DF_TYPE_FLOAT64) {
            double d = read_f64(x, j);
            if (to == DF_TYPE_FLOAT32) DF_VEC_VALUES(v, float)[i] = (float)d;
            else DF_VEC_VALUES(v, double)[i] = d;
        } else if (to_dec) {
            df_i128 r;
            bool ok = true;
            if (from_dec) {
                df_i128 val = DF_VEC_VALUES(x, df_i128)[j];
                if (ss >= fs) {
                    df_i128 m = p10(ss - fs), lim = dec_max(38) / m;
                    ok = val <= lim && val >= -lim;
                    r = ok ? val * m : 0;
                } else {
                    r = div_round(val, p10(fs - ss));
                }
            } else if (from == DF_TYPE_FLOAT32 || from == DF_TYPE_FLOAT64) {
                double d = read_f64(x, j) * pow(10, ss);
                ok = isfinite(d) && fabs(d) < 0x1p127; /* converts exactly; the precision check follows */
                r = ok ? (df_i128)llround(d) : 0;
                if (ok && fabs(d) >= 9.2e18) r = (df_i128)round(d);
            } else if (ss < 0) {
                /* A negative scale counts tens: 500 in DECIMAL(10, -2) is stored as 5. */
                r = div_round(read_int128(x, j), p10(-ss));
            } else {
                df_i128 val = read_int128(x, j);
                df_i128 m = p10(ss), lim = dec_max(38) / m;
                ok = val <= lim && val >= -lim;
                r = ok ? val * m : 0;
            }
            if (ok && (r > dec_max(ps) || r < -dec_max(ps))) ok = false;
            if (!ok) {
                char msg[96];
                snprintf(msg, sizeof msg, "value does not fit in Decimal128(%d, %d)", ps, ss);
                e = cast_fail(k, v, i, msg);
                if (e) break;
                continue;
            }
            DF_VEC_VALUES(v, df_i128)[i] = r;
        } else {
            /* integer target */
            df_i128 r;
            bool ok = true;
            if (from == DF_TYPE_FLOAT32 || from == DF_TYPE_FLOAT64) {
                double d = trunc(read_f64(x, j));
                ok = isfinite(d) && d >= -9.3e18 && d <= 1.85e19;
                r = ok ? (d < 0 ? (df_i128)(int64_t)d : (df_i128)(uint64_t)d) : 0;
            } else if (from_dec) {
                df_i128 val = DF_VEC_VALUES(x, df_i128)[j], m = p10(fs < 0 ? -fs : 0);
                if (fs >= 0) r = val / p10(fs);
                else ok = !__builtin_mul_overflow(val, m, &r);
            } else {
                r = read_int128(x, j);
            }
            if (!ok || !fits(to, r)) {
                e = cast_fail(k, v, i, "value out of range for the target integer type");
                if (e) break;
                continue;
            }
            write_int(v, i, r);
        }
    });
    return df__kernel_finish(k, v, e, out);
}

/* Anything -> utf8 through df__format_value. */
static df_errkind cast_to_string(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, 1, k->n * 8));
    df_buf tmp;
    df_buf_init(&tmp, 0);
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (!df_xreg_valid(&a[0], i)) continue;
        df_buf_reset(&tmp);
        e = df__format_value_zoned(a[0].vec, a[0].is_const ? 0 : i, ((const cast_aux *)k->aux)->zone, &tmp, k->err);
        if (!e) e = df__sb_put(&sb, i, tmp.data ? tmp.data : "", (int64_t)tmp.len);
        if (e) break;
    });
    df_buf_free(&tmp);
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* Strict integer text: optional sign, digits, nothing else. */
static bool parse_int_text(const char *s, int32_t n, df_i128 *out) {
    int32_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i >= n) return false;
    df_i128 v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
        if (v > (df_i128)UINT64_MAX * 10) return false;
    }
    *out = neg ? -v : v;
    return true;
}

/* Exact decimal text -> unscaled value at `scale` (rounding half away from zero). */
static bool parse_decimal_text(const char *s, int32_t n, int scale, df_i128 *out) {
    int32_t i = 0;
    bool neg = false, any = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    df_i128 v = 0;
    const df_i128 cap = p10(37); /* v * 10 + 9 stays within 38 digits below it */
    int frac = 0, exp10 = 0;
    bool dot = false, round_up = false, more = false;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !dot) {
            dot = true;
            continue;
        }
        if (c == 'e' || c == 'E') break;
        if (c < '0' || c > '9') return false;
        any = true;
        if (dot && frac >= scale) {
            /* Digits beyond the scale only decide rounding. */
            if (frac == scale && !more) round_up = c >= '5';
            more = true;
            continue;
        }
        if (v >= cap) return false; /* a 39th digit: beyond every decimal's 38 */
        v = v * 10 + (c - '0');
        if (dot) frac++;
    }
    if (!any) return false;
    if (i < n) {
        char *end;
        char buf[16];
        int32_t len = n - i - 1;
        if (len <= 0 || len >= (int32_t)sizeof buf) return false;
        df__memcpy(buf, s + i + 1, (size_t)len);
        buf[len] = '\0';
        long e = strtol(buf, &end, 10);
        if (*end || e > 76 || e < -76) return false;
        exp10 = (int)e;
        if (exp10 != 0 && more) return false; /* keep it simple: exponent with excess digits */
    }
    int shift = scale - frac + exp10;
    if (shift >= 0) {
        for (int k = 0; k < shift; k++) {
            if (v >= cap) return false;
            v *= 10;
        }
    } else {
        df_i128 d = p10(-shift);
        v = div_round(v, d);
    }
    if (round_up) v += 1;
    *out = neg ? -v : v;
    return true;
}

static bool parse_bool_text(const char *s, int32_t n, bool *out) {
    static const char *const t[] = {"true", "t", "yes", "y", "on", "1"};
    static const char *const f[] = {"false", "f", "no", "n", "off", "0"};
    for (size_t i = 0; i < DF_ARRAY_LEN(t); i++)
        if ((int32_t)strlen(t[i]) == n && df_ascii_ncasecmp(s, t[i], (size_t)n) == 0) return *out = true, true;
    for (size_t i = 0; i < DF_ARRAY_LEN(f); i++)
        if ((int32_t)strlen(f[i]) == n && df_ascii_ncasecmp(s, f[i], (size_t)n) == 0) return *out = false, true;
    return false;
}

/* utf8 -> numbers, booleans, dates, timestamps, times. */
static df_errkind cast_from_string(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    const df_type *to = ca->to;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    if (to->id == DF_TYPE_BOOL) memset(v->values->data, 0, (size_t)df_bitmap_bytes(k->n));
    char buf[128];
    DF_FOR_SEL(k, i, {
        if (!out_valid(v, i)) continue;
        int32_t n;
        const char *s = (const char *)df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        bool ok = true;
        switch (to->id) {
        case DF_TYPE_BOOL: {
            bool b;
            ok = parse_bool_text(s, n, &b);
            if (ok && b) df_bit_set(v->values->data, i);
            break;
        }
        case DF_TYPE_FLOAT32:
        case DF_TYPE_FLOAT64: {
            if (n <= 0 || n >= (int32_t)sizeof buf) {
                ok = false;
                break;
            }
            df__memcpy(buf, s, (size_t)n);
            buf[n] = '\0';
            char *end;
            double d = strtod(buf, &end);
            ok = *end == '\0' && end != buf && buf[0] != ' ';
            if (to->id == DF_TYPE_FLOAT32) DF_VEC_VALUES(v, float)[i] = (float)d;
            else DF_VEC_VALUES(v, double)[i] = d;
            break;
        }
        case DF_TYPE_DECIMAL128: {
            df_i128 r;
            ok = parse_decimal_text(s, n, to->scale, &r) && r <= dec_max(to->precision) && r >= -dec_max(to->precision);
            if (ok) DF_VEC_VALUES(v, df_i128)[i] = r;
            break;
        }
        case DF_TYPE_DATE32: {
            int32_t d;
            ok = df__parse_date(s, (size_t)n, &d);
            if (ok) DF_VEC_VALUES(v, int32_t)[i] = d;
            break;
        }
        case DF_TYPE_DATE64: {
            /* a date (midnight) or a date and time, as milliseconds */
            int32_t d;
            int64_t t;
            if (df__parse_date(s, (size_t)n, &d)) {
                t = (int64_t)d * 86400000;
                ok = true;
            } else {
                ok = df__parse_timestamp(s, (size_t)n, DF_UNIT_MILLI, &t);
            }
            if (ok) DF_VEC_VALUES(v, int64_t)[i] = t;
            break;
        }
        case DF_TYPE_TIMESTAMP: {
            int64_t t;
            ok = df__parse_timestamp(s, (size_t)n, to->unit, &t);
            if (ok) DF_VEC_VALUES(v, int64_t)[i] = t;
            break;
        }
        case DF_TYPE_TIME32:
        case DF_TYPE_TIME64: {
            const char *p = s, *end = s + n;
            trim(&p, &end);
            int64_t ns;
            ok = parse_clock(&p, end, &ns) && p == end && ns >= 0 && ns < 86400000000000LL; /* hours 0..23 */
            int64_t val = ns / (1000000000LL / per_sec[to->unit]);
            if (ok && to->id == DF_TYPE_TIME32) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)val;
            else if (ok) DF_VEC_VALUES(v, int64_t)[i] = val;
            break;
        }
        default: {
            df_i128 r;
            const char *p = s, *end = s + n;
            ok = parse_int_text(p, (int32_t)(end - p), &r) && fits(to->id, r);
            if (ok) write_int(v, i, r);
            break;
        }
        }
        if (!ok) {
            char msg[160];
            char tn[48];
            df_buf tb;
            df_buf_init(&tb, 64);
            if (df__sqlt_display(to, &tb, NULL) == DF_OK && tb.data) snprintf(tn, sizeof tn, "%s", tb.data);
            else snprintf(tn, sizeof tn, "the target type");
            df_buf_free(&tb);
            snprintf(msg, sizeof msg, "cannot cast string '%.*s' to %s", n > 40 ? 40 : n, s, tn);
            e = cast_fail(k, v, i, msg);
            if (e) break;
        }
    });
    return df__kernel_finish(k, v, e, out);
}

/* Temporal <-> temporal and integer <-> temporal. */
static df_errkind cast_temporal(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    const df_type *from = ca->from, *to = ca->to;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    DF_FOR_SEL(k, i, {
        if (!out_valid(v, i)) continue;
        int64_t x = read_i64(a[0].vec, a[0].is_const ? 0 : i);
        int64_t r = x;
        bool ok = true;
        if (from->id == DF_TYPE_DATE32 && to->id == DF_TYPE_TIMESTAMP) {
            ok = !__builtin_mul_overflow(x, 86400 * per_sec[to->unit], &r);
        } else if (from->id == DF_TYPE_DATE64 && to->id == DF_TYPE_TIMESTAMP) {
            ok = to->unit >= DF_UNIT_MILLI ? !__builtin_mul_overflow(x, per_sec[to->unit] / 1000, &r)
                                           : (r = x / 1000 - (x % 1000 < 0), true);
        } else if (from->id == DF_TYPE_TIMESTAMP && (to->id == DF_TYPE_DATE32 || to->id == DF_TYPE_DATE64)) {
            int64_t q = 86400 * per_sec[from->unit];
            int64_t d = x / q - (x % q < 0);
            r = to->id == DF_TYPE_DATE32 ? d : d * 86400000;
            ok = to->id != DF_TYPE_DATE32 || (d >= INT32_MIN && d <= INT32_MAX);
        } else if (from->id == DF_TYPE_DATE32 && to->id == DF_TYPE_DATE64) {
            r = x * 86400000;
        } else if (from->id == DF_TYPE_DATE64 && to->id == DF_TYPE_DATE32) {
            r = x / 86400000 - (x % 86400000 < 0);
        } else if ((from->id == DF_TYPE_TIMESTAMP || from->id == DF_TYPE_TIME32 || from->id == DF_TYPE_TIME64 ||
                    from->id == DF_TYPE_DURATION) &&
                   (to->id == from->id || (df_type_is_temporal(to) && to->id != DF_TYPE_DATE32 &&
                                           to->id != DF_TYPE_DATE64 && from->id != DF_TYPE_TIMESTAMP &&
                                           to->id != DF_TYPE_TIMESTAMP))) {
            /* unit change */
            int64_t fq = per_sec[from->unit], tq = per_sec[to->unit];
            if (tq >= fq) ok = !__builtin_mul_overflow(x, tq / fq, &r);
            else r = x / (fq / tq) - (x % (fq / tq) < 0);
        } else if (from->id == DF_TYPE_TIMESTAMP && to->id == DF_TYPE_TIMESTAMP) {
            int64_t fq = per_sec[from->unit], tq = per_sec[to->unit];
            if (tq >= fq) ok = !__builtin_mul_overflow(x, tq / fq, &r);
            else r = x / (fq / tq) - (x % (fq / tq) < 0);
        } else if (from->id == DF_TYPE_TIMESTAMP && (to->id == DF_TYPE_TIME64 || to->id == DF_TYPE_TIME32)) {
            int64_t q = 86400 * per_sec[from->unit];
            int64_t rem = x % q;
            if (rem < 0) rem += q;
            int64_t fq = per_sec[from->unit], tq = per_sec[to->unit];
            r = tq >= fq ? rem * (tq / fq) : rem / (fq / tq);
        } else {
            /* integer <-> temporal reinterpretation */
            ok = fits(to->id, x);
        }
        if (!ok) {
            e = cast_fail(k, v, i, "temporal value out of range");
            if (e) break;
            continue;
        }
        write_int(v, i, r);
    });
    return df__kernel_finish(k, v, e, out);
}

/* Null -> anything: all NULL. */
static df_errkind cast_null(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    return df_vec_new_nulls(k->type, k->n, &out->vec, k->err);
}

/* utf8 <-> binary: same bytes; binary -> utf8 validates. */
static df_errkind cast_bytes(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, 1, k->n * 8));
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (!df_xreg_valid(&a[0], i)) continue;
        int32_t n;
        const uint8_t *p = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        if (ca->to->id == DF_TYPE_UTF8 && !df_utf8_valid(p, (size_t)n)) {
            if (ca->try_cast) e = df__sb_null(&sb, i);
            else e = df_error_set(k->err, DF_ERR_CAST, "binary value is not valid UTF-8");
        } else {
            e = df__sb_put(&sb, i, p, n);
        }
        if (e) break;
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* Duration -> interval (nanoseconds). */
static df_errkind cast_duration_interval(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    int64_t mul = 1000000000LL / per_sec[ca->from->unit];
    /* Selected rows only: a CASE branch not taken must not fail. */
    DF_FOR_SEL(k, i, {
        int64_t x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i], ns = 0;
        if (__builtin_mul_overflow(x, mul, &ns) && out_valid(v, i)) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_CAST, "duration out of range for an interval");
        }
        uint8_t *p = v->values->data + i * 16;
        memset(p, 0, 8);
        df__memcpy(p + 8, &ns, 8);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* Interval -> interval: the same 16 bytes. */
static df_errkind cast_interval_same(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    for (int64_t i = 0; i < k->n; i++)
        df__memcpy(v->values->data + i * 16, a[0].vec->values->data + (a[0].is_const ? 0 : i) * 16, 16);
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* Utf8 -> interval: "1 day 2 hours", "3 months", "01:30:00" (bare numbers are seconds). */
static df_errkind cast_string_interval(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    DF_FOR_SEL(k, i, {
        if (!out_valid(v, i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        int32_t months = 0, days = 0;
        int64_t nanos = 0;
        if (df__sqlt_parse_interval((const char *)s, (size_t)n, NULL, &months, &days, &nanos)) {
            if (ca->try_cast) {
                DF_TRY(df_vec_ensure_validity(v, k->n, k->err));
                df_bit_clear(v->validity->data, i);
                continue;
            }
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_CAST, "cannot parse '%.*s' as an interval", n > 40 ? 40 : n, s);
        }
        uint8_t *p = v->values->data + i * 16;
        df__memcpy(p, &months, 4);
        df__memcpy(p + 4, &days, 4);
        df__memcpy(p + 8, &nanos, 8);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/*
 * Float / decimal -> timestamp: the number counts the target unit, truncated
 * toward zero (DataFusion: CAST(1.9 AS TIMESTAMP) is 1 ns after the epoch).
 */
static df_errkind cast_number_timestamp(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const cast_aux *ca = k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out(k, 0, &v));
    df_errkind e = df__kernel_and_validity(k, a, 1, v);
    if (e) {
        df_vec_release(v);
        return e;
    }
    const df_vec *x = a[0].vec;
    DF_FOR_SEL(k, i, {
        if (!out_valid(v, i)) continue;
        int64_t j = a[0].is_const ? 0 : i;
        int64_t r = 0;
        bool ok;
        if (x->type->id == DF_TYPE_DECIMAL128) {
            df_i128 q = DF_VEC_VALUES(x, df_i128)[j] / p10(x->type->scale);
            ok = q >= INT64_MIN && q <= INT64_MAX;
            r = ok ? (int64_t)q : 0;
        } else {
            double d = trunc(read_f64(x, j));
            ok = isfinite(d) && d >= -9.2233720368547758e18 && d < 9.2233720368547758e18;
            r = ok ? (int64_t)d : 0;
        }
        if (!ok) {
            if (ca->try_cast) {
                DF_TRY(df_vec_ensure_validity(v, k->n, k->err));
                df_bit_clear(v->validity->data, i);
                continue;
            }
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_CAST, "value out of range for a timestamp");
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

df_errkind df__kernel_for_cast(const df_type *from, const df_type *to, bool try_cast, df_kernel *out, df_error *err) {
    memset(out, 0, sizeof *out);
    df_kernel_fn fn = NULL;
    bool fnum = df_type_is_numeric(from) || from->id == DF_TYPE_BOOL;
    bool tnum = df_type_is_numeric(to) || to->id == DF_TYPE_BOOL;
    bool ftemp = df_type_is_temporal(from), ttemp = df_type_is_temporal(to);
    if (from->id == DF_TYPE_NULL) fn = cast_null;
    else if (to->id == DF_TYPE_UTF8 && from->id == DF_TYPE_BINARY) fn = cast_bytes;
    else if (to->id == DF_TYPE_BINARY && from->id == DF_TYPE_BINARY) fn = cast_bytes;
    else if (to->id == DF_TYPE_BINARY && from->id == DF_TYPE_UTF8) fn = cast_bytes;
    else if (to->id == DF_TYPE_UTF8) fn = cast_to_string;
    else if (from->id == DF_TYPE_UTF8 && (tnum || to->id == DF_TYPE_DATE32 || to->id == DF_TYPE_DATE64 || to->id == DF_TYPE_TIMESTAMP ||
                                          to->id == DF_TYPE_TIME32 || to->id == DF_TYPE_TIME64))
        fn = cast_from_string;
    else if (fnum && tnum && from->id != DF_TYPE_DECIMAL256 && to->id != DF_TYPE_DECIMAL256 &&
             from->id != DF_TYPE_FLOAT16 && to->id != DF_TYPE_FLOAT16)
        fn = cast_numeric;
    else if (from->id == DF_TYPE_DURATION && to->id == DF_TYPE_INTERVAL_MDN)
        fn = cast_duration_interval;
    else if (from->id == DF_TYPE_INTERVAL_MDN && to->id == DF_TYPE_INTERVAL_MDN)
        fn = cast_interval_same;
    else if ((ftemp && ttemp) || (df_type_is_integer(from) && ttemp) || (ftemp && df_type_is_integer(to)))
        fn = cast_temporal;
    else if ((df_type_is_floating(from) || from->id == DF_TYPE_DECIMAL128) && to->id == DF_TYPE_TIMESTAMP)
        fn = cast_number_timestamp;
    else if (from->id == DF_TYPE_UTF8 && to->id == DF_TYPE_INTERVAL_MDN)
        fn = cast_string_interval;
    if (!fn) {
        df_buf a, b;
        df_buf_init(&a, 128);
        df_buf_init(&b, 128);
        df__sqlt_display(from, &a, NULL);
        df__sqlt_display(to, &b, NULL);
        df_errkind k = df_error_set(err, DF_ERR_SQL_UNSUPPORTED, "casting %s to %s is not supported",
                                    a.data ? a.data : "?", b.data ? b.data : "?");
        df_buf_free(&a);
        df_buf_free(&b);
        return k;
    }
    cast_aux *ca = df_calloc(1, sizeof *ca);
    if (!ca) return DF_OOM(err);
    ca->from = df_type_retain((df_type *)from);
    ca->to = df_type_retain((df_type *)to);
    ca->try_cast = try_cast;
    if (fn == cast_to_string && from->id == DF_TYPE_TIMESTAMP && from->timezone && !utc_name(from->timezone) &&
        df__tz_open(from->timezone, &ca->zone, NULL) != DF_OK)
        ca->zone = NULL; /* an unknown zone prints its name */
    out->fn = fn;
    out->aux = ca;
    out->aux_free = cast_aux_free;
    out->can_error = !try_cast;
    return DF_OK;
}
