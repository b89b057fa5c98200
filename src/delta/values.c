/*
 * Typed values from the text forms Delta logs use: partition values (always
 * strings) and statistics (JSON numbers, or strings for dates, timestamps
 * and text).
 *
 * Everything is parsed by hand, exactly and without locale: decimals are
 * accumulated digit by digit into a 128-bit integer and rescaled to the
 * column's scale only when no digit is lost; dates use the proleptic
 * Gregorian calendar; timestamps accept Spark's "yyyy-MM-dd HH:mm:ss[.f]"
 * and ISO 8601 ("T", optional "Z" or +-HH:MM offset) and become
 * microseconds since the epoch (UTC for zone-aware columns).
 */
#include "delta/delta_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static df_errkind cast_fail(df_error *err, const char *text, size_t len, const df_type *type) {
    df_buf name;
    df_buf_init(&name, 128);
    if (df_type_display(type, &name, NULL) != DF_OK) df_buf_reset(&name);
    df_error_set(err, DF_ERR_CAST, "cannot read `%.*s` as %s", (int)DF_MIN(len, 200), text,
                 name.data ? name.data : "the column type");
    df_buf_free(&name);
    return DF_ERR_CAST;
}

static bool is_leap(int64_t y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Cursor over the text being parsed. */
typedef struct cur {
    const char *p;     /* next byte */
    const char *end;   /* end of text */
} cur;

/* Reads 1..maxd digits (at least mind) into *v. */
static bool digits(cur *c, int mind, int maxd, int64_t *v) {
    int n = 0;
    int64_t x = 0;
    while (c->p < c->end && n < maxd && *c->p >= '0' && *c->p <= '9') {
        x = x * 10 + (*c->p++ - '0');
        n++;
    }
    *v = x;
    return n >= mind;
}

static bool lit(cur *c, char ch) {
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* [+-]yyyy-MM-dd -> days since epoch. */
static bool parse_date(cur *c, int64_t *days) {
    bool neg = false;
    if (c->p < c->end && (*c->p == '-' || *c->p == '+')) neg = *c->p++ == '-';
    int64_t y, m, d;
    if (!digits(c, 4, 9, &y) || !lit(c, '-') || !digits(c, 1, 2, &m) || !lit(c, '-') || !digits(c, 1, 2, &d)) return false;
    if (neg) y = -y;
    static const uint8_t mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1) return false;
    if (d > mdays[m - 1] + (m == 2 && is_leap(y))) return false;
    *days = df_days_from_civil(y, (int)m, (int)d);
    return true;
}

/*
 * Date, optional time and zone -> microseconds since the epoch.  *has_zone
 * tells whether an explicit zone ("Z" or offset) was given.
 */
static bool parse_timestamp(cur *c, int64_t *micros, bool *has_zone) {
    int64_t days;
    *has_zone = false;
    if (!parse_date(c, &days)) return false;
    int64_t h = 0, mi = 0, s = 0, frac = 0;
    if (c->p < c->end && (*c->p == ' ' || *c->p == 'T')) {
        c->p++;
        if (!digits(c, 1, 2, &h) || !lit(c, ':') || !digits(c, 1, 2, &mi)) return false;
        if (lit(c, ':') && !digits(c, 1, 2, &s)) return false;
        if (lit(c, '.')) {
            int n = 0;
            while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                if (n < 6) frac = frac * 10 + (*c->p - '0');
                n++;
                c->p++;
            }
            if (n == 0) return false;
            for (; n < 6; n++) frac *= 10;
        }
        if (h > 23 || mi > 59 || s > 60) return false;
    }
    int64_t offset = 0;
    if (lit(c, 'Z')) {
        *has_zone = true;
    } else if (c->p < c->end && (*c->p == '+' || *c->p == '-')) {
        bool neg = *c->p++ == '-';
        int64_t oh, om = 0;
        if (!digits(c, 2, 2, &oh)) return false;
        if (lit(c, ':')) {
            if (!digits(c, 2, 2, &om)) return false;
        } else {
            digits(c, 0, 2, &om);
        }
        if (oh > 18 || om > 59) return false;
        offset = (oh * 3600 + om * 60) * (neg ? -1 : 1);
        *has_zone = true;
    }
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - offset;
    if (secs > INT64_MAX / 1000000 - 1 || secs < INT64_MIN / 1000000 + 1) return false;
    *micros = secs * 1000000 + frac;
    return true;
}

static const df_i128 I128_POW10_38 = (df_i128)10000000000000000000ULL * (df_i128)10000000000000000000ULL;

/* Exact decimal text -> unscaled value at `scale` with at most `precision` digits. */
static bool parse_decimal(cur *c, int precision, int scale, df_i128 *out) {
    bool neg = false;
    if (c->p < c->end && (*c->p == '-' || *c->p == '+')) neg = *c->p++ == '-';
    df_i128 m = 0;
    int64_t frac = 0, exp = 0;
    bool any = false;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (m >= I128_POW10_38 / 10) return false;
        m = m * 10 + (*c->p++ - '0');
        any = true;
    }
    if (lit(c, '.')) {
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (m >= I128_POW10_38 / 10) {
                if (*c->p != '0') return false;  /* a significant digit would be lost */
                c->p++;
                continue;                        /* trailing zero beyond 38 digits: drop it */
            }
            m = m * 10 + (*c->p++ - '0');
            frac++;
            any = true;
        }
    }
    if (!any) return false;
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        bool eneg = false;
        if (c->p < c->end && (*c->p == '-' || *c->p == '+')) eneg = *c->p++ == '-';
        if (!digits(c, 1, 4, &exp)) return false;
        if (eneg) exp = -exp;
    }
    int64_t shift = scale - frac + exp;
    for (; shift > 0; shift--) {
        if (m >= I128_POW10_38 / 10) return false;
        m *= 10;
    }
    for (; shift < 0; shift++) {
        if (m % 10 != 0) return false;
        m /= 10;
    }
    df_i128 limit = 1;
    for (int i = 0; i < precision; i++) limit *= 10;
    if (m >= limit) return false;
    *out = neg ? -m : m;
    return true;
}

static bool parse_int(cur *c, int64_t lo, int64_t hi, int64_t *out) {
    bool neg = false;
    if (c->p < c->end && (*c->p == '-' || *c->p == '+')) neg = *c->p++ == '-';
    uint64_t v = 0;
    int n = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p++ - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        n++;
    }
    if (!n) return false;
    /* Spark writes integral statistics of float-typed old files as "1.0": accept a zero fraction. */
    if (lit(c, '.')) {
        while (c->p < c->end && *c->p == '0') c->p++;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return false;
    int64_t x = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (x < lo || x > hi) return false;
    *out = x;
    return true;
}

static bool parse_float(const char *text, size_t len, double *out) {
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    const char *s = buf + (buf[0] == '+' || buf[0] == '-');
    bool neg = buf[0] == '-';
    if (df_ascii_casecmp(s, "nan") == 0) {
        *out = NAN;
        return true;
    }
    if (df_ascii_casecmp(s, "infinity") == 0 || df_ascii_casecmp(s, "inf") == 0) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    for (const char *p = buf; *p; p++)
        if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) return false;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len) return false;
    *out = v;
    return true;
}

static int64_t scale_micros(int64_t us, df_time_unit unit) {
    switch (unit) {
    case DF_UNIT_SECOND: return us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
    case DF_UNIT_MILLI: return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    case DF_UNIT_MICRO: return us;
    default: return us * 1000;
    }
}

/* Parses the fixed-width and boolean types. */
static bool parse_fixed(const char *text, size_t len, const df_type *type, df_scalar *out) {
    cur c = {text, text + len};
    int64_t v = 0;
    bool ok = false, zone;
    switch (type->id) {
    case DF_TYPE_INT8: ok = parse_int(&c, INT8_MIN, INT8_MAX, &v); out->v.i64 = v; break;
    case DF_TYPE_INT16: ok = parse_int(&c, INT16_MIN, INT16_MAX, &v); out->v.i64 = v; break;
    case DF_TYPE_INT32: ok = parse_int(&c, INT32_MIN, INT32_MAX, &v); out->v.i64 = v; break;
    case DF_TYPE_INT64: ok = parse_int(&c, INT64_MIN, INT64_MAX, &v); out->v.i64 = v; break;
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64:
        if (!parse_float(text, len, &out->v.f64)) return false;
        if (type->id == DF_TYPE_FLOAT32) out->v.f64 = (double)(float)out->v.f64;
        return true;
    case DF_TYPE_BOOL:
        if (len == 4 && df_ascii_ncasecmp(text, "true", 4) == 0) out->v.b = true;
        else if (len == 5 && df_ascii_ncasecmp(text, "false", 5) == 0) out->v.b = false;
        else return false;
        return true;
    case DF_TYPE_DECIMAL128:
        ok = parse_decimal(&c, type->precision, type->scale, &out->v.i128);
        break;
    case DF_TYPE_DATE32:
        ok = parse_date(&c, &v) && v >= INT32_MIN && v <= INT32_MAX;
        out->v.i64 = v;
        break;
    case DF_TYPE_TIMESTAMP:
        ok = parse_timestamp(&c, &v, &zone);
        out->v.i64 = scale_micros(v, type->unit);
        break;
    default:
        return false;
    }
    return ok && c.p == c.end;
}

df_errkind df__delta_value_parse(const char *text, size_t len, df_type *type, df_scalar *out, df_error *err) {
    memset(out, 0, sizeof *out);
    switch (type->id) {
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY: {
        uint8_t *p = df_malloc(len ? len : 1);
        if (!p) return DF_OOM(err);
        memcpy(p, text, len);
        out->v.bytes.ptr = p;
        out->v.bytes.len = (int64_t)len;
        break;
    }
    case DF_TYPE_NULL:
        out->is_null = true;
        break;
    default:
        if (!parse_fixed(text, len, type, out)) return cast_fail(err, text, len, type);
    }
    out->type = df_type_retain(type);
    return DF_OK;
}

df_errkind df__delta_partition_value(const char *text, df_type *type, df_scalar *out, df_error *err) {
    if (!text || !text[0]) {
        memset(out, 0, sizeof *out);
        out->type = df_type_retain(type);
        out->is_null = true;
        return DF_OK;
    }
    return df__delta_value_parse(text, strlen(text), type, out, err);
}
