/*
 * Time-of-day and formatting kernels: make_time, to_time, to_char /
 * date_format (chrono's strftime syntax, as DataFusion formats), and
 * to_timestamp* / to_date / to_unixtime / to_time with chrono formats
 * (each format tried in turn, the first that parses the whole input wins).
 *
 * Values: Time32(s|ms) and Time64(us|ns) count units since midnight;
 * dates are formatted as midnight of their day; zoned timestamps in their
 * zone's local time (fixed offsets and IANA zones through tzif).
 */
#include <stdio.h>

#include "common/tzif.h"
#include "exec/exec_int.h"

static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};

static inline bool row_valid(const df_vec *v, int64_t i) { return !v->validity || df_bit_get(v->validity->data, i); }

static inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/* ------------------------------------------------------------------------ */
/* make_time                                                                 */

/* make_time(hour, minute, second) -> Time32(s); each field out of range is an error. */
static df_errkind make_time_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    static const char *const names[3] = {"Hour", "Minute", "Second"};
    static const int32_t limits[3] = {23, 59, 59};
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int32_t f[3];
        for (int j = 0; j < 3; j++) {
            f[j] = DF_VEC_VALUES(a[j].vec, int32_t)[a[j].is_const ? 0 : i];
            if (f[j] < 0 || f[j] > limits[j]) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_EXECUTION, "%s value '%d' is out of range", names[j], f[j]);
            }
        }
        DF_VEC_VALUES(v, int32_t)[i] = f[0] * 3600 + f[1] * 60 + f[2];
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* to_time                                                                   */

static bool digits(const char *s, size_t n, size_t at, int count, int *out) {
    if (at + (size_t)count > n) return false;
    int v = 0;
    for (int j = 0; j < count; j++) {
        char c = s[at + (size_t)j];
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

/* HH:MM[:SS[.fraction]] -> nanoseconds since midnight (second 60 is a leap second, as chrono reads it). */
bool df__parse_time_of_day(const char *s, size_t n, int64_t *ns) {
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    int h, m, sec = 0;
    if (!digits(s, n, 0, 2, &h) || n < 5 || s[2] != ':' || !digits(s, n, 3, 2, &m)) return false;
    size_t at = 5;
    int64_t frac = 0;
    if (at < n) {
        if (s[at] != ':' || !digits(s, n, at + 1, 2, &sec)) return false;
        at += 3;
        if (at < n) {
            if (s[at] != '.' || at + 1 >= n) return false;
            at++;
            int64_t scale = 100000000;
            for (; at < n; at++) {
                if (s[at] < '0' || s[at] > '9') return false;
                frac += (s[at] - '0') * scale;
                scale /= 10;
            }
        }
    }
    if (h > 23 || m > 59 || sec > 60) return false;
    *ns = ((int64_t)h * 3600 + m * 60 + sec) * 1000000000LL + frac;
    return true;
}

/* Per-call state of to_time / to_char: the zone of a zoned timestamp argument. */
typedef struct time_aux {
    df_tz *tz;
} time_aux;

static void time_aux_free(void *p) {
    time_aux *t = p;
    if (!t) return;
    df__tz_free(t->tz);
    df_free(t);
}

/* Seconds east of UTC at the instant utc_s of a zoned timestamp (0 without a zone). */
static int64_t local_offset(const time_aux *ta, int64_t utc_s) {
    return ta && ta->tz ? df__tz_offset_at(ta->tz, utc_s) : 0;
}

/* to_time(str | timestamp) -> Time64(ns). */
static df_errkind to_time_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const time_aux *ta = k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, 1, &v));
    (void)na;
    const df_vec *x = a[0].vec;
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int64_t j = a[0].is_const ? 0 : i, r = 0;
        if (x->type->id == DF_TYPE_UTF8) {
            int32_t n;
            const char *s = (const char *)df_vec_bytes(x, j, &n);
            if (!df__parse_time_of_day(s, (size_t)n, &r)) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_EXECUTION, "Error parsing '%.*s' as time", n > 40 ? 40 : n, s);
            }
        } else {
            int64_t q = per_sec[x->type->unit], t = DF_VEC_VALUES(x, int64_t)[j];
            int64_t secs = floor_div(t, q), sub = t - secs * q;
            int64_t local = secs + local_offset(ta, secs);
            r = (local - floor_div(local, 86400) * 86400) * 1000000000LL + sub * (1000000000LL / q);
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* to_char                                                                   */

/* Broken-down value being formatted. */
typedef struct tparts {
    bool has_date, has_time;
    int64_t year, days;         /* days since the epoch */
    int month, day;
    int64_t secs_of_day, nanos; /* time of day */
    bool zoned;
    int64_t offset;             /* seconds east of UTC (zoned values) */
    int64_t epoch;              /* seconds since the epoch (UTC) */
} tparts;

static const char *const month_names[12] = {"January", "February", "March",     "April",   "May",      "June",
                                            "July",    "August",   "September", "October", "November", "December"};
static const char *const day_names[7] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

static int weekday(int64_t days) { /* 0 = Sunday; 1970-01-01 was a Thursday */
    int64_t w = (days + 4) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

static int64_t day_of_year(const tparts *t) { return t->days - df_days_from_civil(t->year, 1, 1) + 1; }

/* ISO 8601 week number and week-based year. */
static void iso_week(int64_t days, int64_t *week, int64_t *iso_year) {
    int wd = (weekday(days) + 6) % 7; /* Monday = 0 */
    int64_t thursday = days - wd + 3, y;
    int m, d;
    df_civil_from_days(thursday, &y, &m, &d);
    *iso_year = y;
    *week = (thursday - df_days_from_civil(y, 1, 1)) / 7 + 1;
}

typedef struct fmt_out {
    char *buf;
    size_t len, cap;
} fmt_out;

static bool put(fmt_out *o, const char *s, size_t n) {
    if (o->len + n > o->cap) return false;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return true;
}

/* A number with chrono's padding: pad '0', ' ' or 0 (none), to width. */
static bool put_num(fmt_out *o, int64_t v, int width, char pad) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)(v < 0 ? -v : v));
    char out[48];
    int w = 0;
    if (v < 0) out[w++] = '-';
    if (pad)
        for (int j = n + (v < 0); j < width; j++) out[w++] = pad;
    memcpy(out + w, tmp, (size_t)n);
    return put(o, out, (size_t)(w + n));
}

static bool put_offset(fmt_out *o, int64_t off, int colons) {
    char tmp[16];
    int64_t a = off < 0 ? -off : off;
    int n;
    if (colons == 2) n = snprintf(tmp, sizeof tmp, "%c%02d:%02d:%02d", off < 0 ? '-' : '+', (int)(a / 3600), (int)(a / 60 % 60), (int)(a % 60));
    else if (colons == 1) n = snprintf(tmp, sizeof tmp, "%c%02d:%02d", off < 0 ? '-' : '+', (int)(a / 3600), (int)(a / 60 % 60));
    else n = snprintf(tmp, sizeof tmp, "%c%02d%02d", off < 0 ? '-' : '+', (int)(a / 3600), (int)(a / 60 % 60));
    return put(o, tmp, (size_t)n);
}

/*
 * Formats t with a chrono format string.  Returns 0 on success, 1 when the
 * format is invalid or asks for a field the value has not (a time's year),
 * 2 when the output is too long.
 */
static int format_parts(const tparts *t, const uint8_t *f, int32_t fn, fmt_out *o) {
    for (int32_t j = 0; j < fn; j++) {
        if (f[j] != '%') {
            if (!put(o, (const char *)f + j, 1)) return 2;
            continue;
        }
        if (++j >= fn) return 1;
        char pad = 0;
        bool padset = false;
        if (f[j] == '-' || f[j] == '_' || f[j] == '0') {
            pad = f[j] == '-' ? 0 : f[j] == '_' ? ' ' : '0';
            padset = true;
            if (++j >= fn) return 1;
        }
#define PAD(def) (padset ? pad : (def))
        char c = (char)f[j];
        bool ok = true;
        bool date_spec = strchr("YCymbhBdeaAwuUWGgVjDxFv", c) != NULL;
        bool time_spec = strchr("HkIlPpMSRTXr", c) != NULL;
        if ((date_spec && !t->has_date) || (time_spec && !t->has_time)) return 1;
        switch (c) {
        case 'Y': ok = put_num(o, t->year, t->year >= 0 && t->year <= 9999 ? 4 : 0, PAD('0')); break;
        case 'C': ok = put_num(o, floor_div(t->year, 100), 2, PAD('0')); break;
        case 'y': ok = put_num(o, t->year - floor_div(t->year, 100) * 100, 2, PAD('0')); break;
        case 'm': ok = put_num(o, t->month, 2, PAD('0')); break;
        case 'b': case 'h': ok = put(o, month_names[t->month - 1], 3); break;
        case 'B': ok = put(o, month_names[t->month - 1], strlen(month_names[t->month - 1])); break;
        case 'd': ok = put_num(o, t->day, 2, PAD('0')); break;
        case 'e': ok = put_num(o, t->day, 2, PAD(' ')); break;
        case 'a': ok = put(o, day_names[weekday(t->days)], 3); break;
        case 'A': ok = put(o, day_names[weekday(t->days)], strlen(day_names[weekday(t->days)])); break;
        case 'w': ok = put_num(o, weekday(t->days), 1, 0); break;
        case 'u': ok = put_num(o, weekday(t->days) == 0 ? 7 : weekday(t->days), 1, 0); break;
        case 'U': case 'W': {
            int64_t yd = day_of_year(t) - 1;
            int wd = weekday(t->days);
            if (c == 'W') wd = (wd + 6) % 7;
            ok = put_num(o, (yd + 7 - wd) / 7, 2, PAD('0'));
            break;
        }
        case 'G': case 'g': case 'V': {
            int64_t wk, iy;
            iso_week(t->days, &wk, &iy);
            if (c == 'G') ok = put_num(o, iy, iy >= 0 && iy <= 9999 ? 4 : 0, PAD('0'));
            else if (c == 'g') ok = put_num(o, iy - floor_div(iy, 100) * 100, 2, PAD('0'));
            else ok = put_num(o, wk, 2, PAD('0'));
            break;
        }
        case 'j': ok = put_num(o, day_of_year(t), 3, PAD('0')); break;
        case 'D': case 'x':
            ok = put_num(o, t->month, 2, '0') && put(o, "/", 1) && put_num(o, t->day, 2, '0') && put(o, "/", 1) &&
                 put_num(o, t->year - floor_div(t->year, 100) * 100, 2, '0');
            break;
        case 'F':
            ok = put_num(o, t->year, 4, '0') && put(o, "-", 1) && put_num(o, t->month, 2, '0') && put(o, "-", 1) &&
                 put_num(o, t->day, 2, '0');
            break;
        case 'v':
            ok = put_num(o, t->day, 2, ' ') && put(o, "-", 1) && put(o, month_names[t->month - 1], 3) &&
                 put(o, "-", 1) && put_num(o, t->year, 4, '0');
            break;
        case 'H': ok = put_num(o, t->secs_of_day / 3600, 2, PAD('0')); break;
        case 'k': ok = put_num(o, t->secs_of_day / 3600, 2, PAD(' ')); break;
        case 'I': case 'l': {
            int64_t h = t->secs_of_day / 3600 % 12;
            ok = put_num(o, h == 0 ? 12 : h, 2, PAD(c == 'I' ? '0' : ' '));
            break;
        }
        case 'P': ok = put(o, t->secs_of_day < 43200 ? "am" : "pm", 2); break;
        case 'p': ok = put(o, t->secs_of_day < 43200 ? "AM" : "PM", 2); break;
        case 'M': ok = put_num(o, t->secs_of_day / 60 % 60, 2, PAD('0')); break;
        case 'S': ok = put_num(o, t->secs_of_day % 60, 2, PAD('0')); break;
        case 'R': case 'T': case 'X':
            ok = put_num(o, t->secs_of_day / 3600, 2, '0') && put(o, ":", 1) &&
                 put_num(o, t->secs_of_day / 60 % 60, 2, '0');
            if (ok && c != 'R') ok = put(o, ":", 1) && put_num(o, t->secs_of_day % 60, 2, '0');
            break;
        case 'r': {
            int64_t h = t->secs_of_day / 3600 % 12;
            ok = put_num(o, h == 0 ? 12 : h, 2, '0') && put(o, ":", 1) && put_num(o, t->secs_of_day / 60 % 60, 2, '0') &&
                 put(o, ":", 1) && put_num(o, t->secs_of_day % 60, 2, '0') &&
                 put(o, t->secs_of_day < 43200 ? " AM" : " PM", 3);
            break;
        }
        case 'f': {
            if (!t->has_time) return 1;
            char tmp[16];
            snprintf(tmp, sizeof tmp, "%09lld", (long long)t->nanos);
            ok = put(o, tmp, 9);
            break;
        }
        case '.': case '3': case '6': case '9': {
            /* %.f %.3f %.6f %.9f %3f %6f %9f */
            bool dot = c == '.';
            int width = -1;
            if (dot) {
                if (j + 1 < fn && (f[j + 1] == '3' || f[j + 1] == '6' || f[j + 1] == '9')) width = f[++j] - '0';
            } else {
                width = c - '0';
            }
            if (j + 1 >= fn || f[j + 1] != 'f' || (!dot && width < 0)) return 1;
            j++;
            if (!t->has_time) return 1;
            char tmp[16];
            snprintf(tmp, sizeof tmp, "%09lld", (long long)t->nanos);
            if (width < 0) width = t->nanos == 0 ? 0 : t->nanos % 1000000 == 0 ? 3 : t->nanos % 1000 == 0 ? 6 : 9;
            if (width == 0) break;
            ok = (!dot || put(o, ".", 1)) && put(o, tmp, (size_t)width);
            break;
        }
        case 'z': ok = t->zoned ? put_offset(o, t->offset, 0) : false; if (!t->zoned) return 1; break;
        case ':': {
            int colons = 1;
            while (j + 1 < fn && f[j + 1] == ':' && colons < 3) j++, colons++;
            if (j + 1 >= fn || f[j + 1] != 'z' || colons > 2 || !t->zoned) return 1;
            j++;
            ok = put_offset(o, t->offset, colons);
            break;
        }
        case '#':
            if (j + 1 >= fn || f[j + 1] != 'z' || !t->zoned) return 1;
            j++;
            ok = put_offset(o, t->offset, 0);
            break;
        case 'Z': if (!t->zoned) return 1; ok = put_offset(o, t->offset, 1); break;
        case 'c':
            if (!t->has_date || !t->has_time) return 1;
            ok = put(o, day_names[weekday(t->days)], 3) && put(o, " ", 1) && put(o, month_names[t->month - 1], 3) &&
                 put(o, " ", 1) && put_num(o, t->day, 2, ' ') && put(o, " ", 1) &&
                 put_num(o, t->secs_of_day / 3600, 2, '0') && put(o, ":", 1) &&
                 put_num(o, t->secs_of_day / 60 % 60, 2, '0') && put(o, ":", 1) &&
                 put_num(o, t->secs_of_day % 60, 2, '0') && put(o, " ", 1) && put_num(o, t->year, 4, '0');
            break;
        case '+': {
            if (!t->has_date || !t->has_time || !t->zoned) return 1;
            char tmp[16];
            snprintf(tmp, sizeof tmp, "%09lld", (long long)t->nanos);
            int width = t->nanos == 0 ? 0 : t->nanos % 1000000 == 0 ? 3 : t->nanos % 1000 == 0 ? 6 : 9;
            ok = put_num(o, t->year, 4, '0') && put(o, "-", 1) && put_num(o, t->month, 2, '0') && put(o, "-", 1) &&
                 put_num(o, t->day, 2, '0') && put(o, "T", 1) && put_num(o, t->secs_of_day / 3600, 2, '0') &&
                 put(o, ":", 1) && put_num(o, t->secs_of_day / 60 % 60, 2, '0') && put(o, ":", 1) &&
                 put_num(o, t->secs_of_day % 60, 2, '0') && (!width || (put(o, ".", 1) && put(o, tmp, (size_t)width))) &&
                 put_offset(o, t->offset, 1);
            break;
        }
        case 's':
            if (!t->has_date || !t->has_time) return 1;
            ok = put_num(o, t->epoch, 1, 0);
            break;
        case 't': ok = put(o, "\t", 1); break;
        case 'n': ok = put(o, "\n", 1); break;
        case '%': ok = put(o, "%", 1); break;
        default: return 1;
        }
#undef PAD
        if (!ok) return 2;
    }
    return 0;
}

/* Breaks row j of x (date, time, timestamp) into t. */
static void parts_of(const df_vec *x, int64_t j, const time_aux *ta, tparts *t) {
    memset(t, 0, sizeof *t);
    int64_t days = 0, sod = 0, nanos = 0;
    switch (x->type->id) {
    case DF_TYPE_DATE32: days = DF_VEC_VALUES(x, int32_t)[j]; t->has_date = t->has_time = true; break;
    case DF_TYPE_DATE64: days = floor_div(DF_VEC_VALUES(x, int64_t)[j], 86400000); t->has_date = t->has_time = true; break;
    case DF_TYPE_TIME32: case DF_TYPE_TIME64: {
        int64_t q = per_sec[x->type->unit];
        int64_t v = x->type->id == DF_TYPE_TIME32 ? DF_VEC_VALUES(x, int32_t)[j] : DF_VEC_VALUES(x, int64_t)[j];
        sod = floor_div(v, q);
        nanos = (v - sod * q) * (1000000000LL / q);
        t->has_time = true;
        break;
    }
    default: { /* timestamp */
        int64_t q = per_sec[x->type->unit], v = DF_VEC_VALUES(x, int64_t)[j];
        int64_t secs = floor_div(v, q);
        nanos = (v - secs * q) * (1000000000LL / q);
        t->epoch = secs;
        if (x->type->timezone) {
            t->zoned = true;
            t->offset = local_offset(ta, secs);
        }
        int64_t local = secs + t->offset;
        days = floor_div(local, 86400);
        sod = local - days * 86400;
        t->has_date = t->has_time = true;
        break;
    }
    }
    if (x->type->id == DF_TYPE_DATE32 || x->type->id == DF_TYPE_DATE64) t->epoch = days * 86400;
    t->days = days;
    t->secs_of_day = sod;
    t->nanos = nanos;
    df_civil_from_days(days, &t->year, &t->month, &t->day);
}

#define MAX_FORMATTED 4096

/* to_char(value, format) / date_format: NULL value or format -> NULL. */
static df_errkind to_char_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const time_aux *ta = k->aux;
    df__sbuilder sb;
    DF_TRY(df__sb_begin(&sb, k, a, na, k->n * 24));
    df_errkind e = DF_OK;
    char buf[MAX_FORMATTED];
    DF_FOR_SEL(k, i, {
        if (e) break;
        if (!row_valid(sb.v, i)) continue;
        int32_t fl;
        const uint8_t *f = df_vec_bytes(a[1].vec, a[1].is_const ? 0 : i, &fl);
        if (a[0].vec->type->id == DF_TYPE_DURATION) {
            e = df_error_set(k->err, DF_ERR_UNSUPPORTED, "to_char does not format durations");
            break;
        }
        tparts t;
        parts_of(a[0].vec, a[0].is_const ? 0 : i, ta, &t);
        fmt_out o = {buf, 0, sizeof buf};
        int r = format_parts(&t, f, fl, &o);
        if (r == 1) {
            e = df_error_set(k->err, DF_ERR_CAST, "Cast error: Format error: invalid format '%.*s' for %s", fl > 40 ? 40 : fl,
                             f, t.has_date ? "this value" : "a time");
            break;
        }
        if (r == 2) {
            e = df_error_set(k->err, DF_ERR_LIMIT_EXCEEDED, "to_char result longer than %d bytes", MAX_FORMATTED);
            break;
        }
        e = df__sb_put(&sb, i, buf, (int64_t)o.len);
    });
    if (e) {
        df__sb_abort(&sb);
        return e;
    }
    df__sb_finish(&sb, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Parsing with chrono formats: to_timestamp(s, fmt, ...) and friends        */

/* Fields read from an input string. */
typedef struct pfields {
    bool has_year, has_time, has_offset, has_epoch, pm_set, pm;
    int64_t year, epoch;
    int month, day, hour, minute, second, hour12;
    int64_t nanos;
    int64_t offset; /* seconds east of UTC */
} pfields;

typedef enum { P_OK, P_INVALID, P_SHORT, P_TRAILING, P_RANGE, P_BAD_FORMAT } pstatus;

static const char *const pstatus_text[] = {"", "input contains invalid characters", "premature end of input",
                                           "trailing input", "input is out of range", "bad or unsupported format string"};

/* An unsigned number of min..max digits at s[*at]. */
static pstatus pnum(const uint8_t *s, size_t n, size_t *at, int min, int max, int64_t *out) {
    size_t j = *at;
    int64_t v = 0;
    int c = 0;
    while (j < n && c < max && s[j] >= '0' && s[j] <= '9') v = v * 10 + (s[j++] - '0'), c++;
    if (c < min) return j >= n ? P_SHORT : P_INVALID;
    *at = j;
    *out = v;
    return P_OK;
}

static pstatus pname(const uint8_t *s, size_t n, size_t *at, const char *const *names, int count, bool full, int *out) {
    for (int i = 0; i < count; i++) {
        size_t len = full ? strlen(names[i]) : 3;
        for (int pass = 0; pass < 2; pass++, len = 3) {
            if (*at + len > n) continue;
            size_t q = 0;
            while (q < len && (s[*at + q] | 0x20) == (names[i][q] | 0x20)) q++;
            if (q == len) {
                *at += len;
                *out = i;
                return P_OK;
            }
        }
    }
    return *at >= n ? P_SHORT : P_INVALID;
}

/* +hh[:]mm, +hh (allow_short) or Z (allow_z). */
static pstatus poffset(const uint8_t *s, size_t n, size_t *at, bool allow_short, bool allow_z, pfields *f) {
    if (*at >= n) return P_SHORT;
    if (allow_z && (s[*at] == 'Z' || s[*at] == 'z')) {
        (*at)++;
        f->has_offset = true;
        f->offset = 0;
        return P_OK;
    }
    if (s[*at] != '+' && s[*at] != '-') return P_INVALID;
    int sign = s[*at] == '-' ? -1 : 1;
    (*at)++;
    int64_t h, m = 0;
    pstatus st = pnum(s, n, at, 2, 2, &h);
    if (st) return st;
    if (*at < n && s[*at] == ':') (*at)++;
    if (*at < n && s[*at] >= '0' && s[*at] <= '9') {
        if ((st = pnum(s, n, at, 2, 2, &m))) return st;
    } else if (!allow_short) {
        return *at >= n ? P_SHORT : P_INVALID;
    }
    if (h > 23 || m > 59) return P_RANGE;
    f->has_offset = true;
    f->offset = sign * (h * 3600 + m * 60);
    return P_OK;
}

static pstatus pfrac(const uint8_t *s, size_t n, size_t *at, int max, pfields *f) {
    int64_t v = 0, scale = 100000000;
    int c = 0;
    while (*at < n && s[*at] >= '0' && s[*at] <= '9' && c < max) {
        v += (s[(*at)++] - '0') * scale;
        scale /= 10;
        c++;
    }
    if (c == 0) return *at >= n ? P_SHORT : P_INVALID;
    f->nanos = v;
    return P_OK;
}

/*
 * Parses s from *at with fmt into f (chrono's parsing rules: whitespace in
 * the format skips any whitespace, numbers take up to their width).
 * Composite specifiers (%T, %F, %c, %+ ...) expand one level only, so the
 * work is linear in the lengths.
 */
static pstatus parse_at(const uint8_t *s, size_t n, size_t *at, const uint8_t *fmt, size_t fn, pfields *f, int depth) {
    for (size_t j = 0; j < fn; j++) {
        uint8_t c = fmt[j];
        if (c == ' ' || c == '\t' || c == '\n') {
            while (*at < n && (s[*at] == ' ' || s[*at] == '\t' || s[*at] == '\n')) (*at)++;
            continue;
        }
        if (c != '%') {
            if (*at >= n) return P_SHORT;
            if (s[*at] != c) return P_INVALID;
            (*at)++;
            continue;
        }
        if (++j >= fn) return P_BAD_FORMAT;
        c = fmt[j];
        if (c == '-' || c == '_' || c == '0') {
            if (++j >= fn) return P_BAD_FORMAT;
            c = fmt[j];
        }
        pstatus st = P_OK;
        int64_t v = 0;
        int idx;
        const char *sub = NULL;
        switch (c) {
        case 'Y': {
            int sign = 1;
            if (*at < n && (s[*at] == '+' || s[*at] == '-')) sign = s[(*at)++] == '-' ? -1 : 1;
            if (!(st = pnum(s, n, at, 1, 9, &v))) f->year = sign * v, f->has_year = true;
            break;
        }
        case 'y': if (!(st = pnum(s, n, at, 2, 2, &v))) f->year = v < 70 ? 2000 + v : 1900 + v, f->has_year = true; break;
        case 'm': if (!(st = pnum(s, n, at, 1, 2, &v))) f->month = (int)v; break;
        case 'd': if (!(st = pnum(s, n, at, 1, 2, &v))) f->day = (int)v; break;
        case 'e':
            while (*at < n && s[*at] == ' ') (*at)++;
            if (!(st = pnum(s, n, at, 1, 2, &v))) f->day = (int)v;
            break;
        case 'H': case 'k':
            while (c == 'k' && *at < n && s[*at] == ' ') (*at)++;
            if (!(st = pnum(s, n, at, 1, 2, &v))) f->hour = (int)v, f->has_time = true;
            break;
        case 'I': case 'l':
            while (c == 'l' && *at < n && s[*at] == ' ') (*at)++;
            if (!(st = pnum(s, n, at, 1, 2, &v))) f->hour12 = (int)v, f->has_time = true;
            break;
        case 'M': if (!(st = pnum(s, n, at, 1, 2, &v))) f->minute = (int)v; break;
        case 'S': if (!(st = pnum(s, n, at, 1, 2, &v))) f->second = (int)v; break;
        case 'f': st = pfrac(s, n, at, 9, f); break;
        case '.': case '3': case '6': case '9': {
            int width = 9;
            if (c == '.') {
                if (j + 1 < fn && (fmt[j + 1] == '3' || fmt[j + 1] == '6' || fmt[j + 1] == '9')) width = fmt[++j] - '0';
            } else {
                width = c - '0';
            }
            if (j + 1 >= fn || fmt[j + 1] != 'f') return P_BAD_FORMAT;
            j++;
            if (c == '.') {
                if (*at < n && s[*at] == '.') {
                    (*at)++;
                    st = pfrac(s, n, at, width, f);
                }
            } else {
                st = pfrac(s, n, at, width, f);
            }
            break;
        }
        case 'j': st = pnum(s, n, at, 1, 3, &v); break; /* day of year: read, not used */
        case 'b': case 'h': case 'B':
            if (!(st = pname(s, n, at, month_names, 12, c == 'B', &idx))) f->month = idx + 1;
            break;
        case 'a': case 'A': st = pname(s, n, at, day_names, 7, c == 'A', &idx); break;
        case 'p': case 'P':
            if (*at + 2 > n) return P_SHORT;
            if ((s[*at] | 0x20) != 'a' && (s[*at] | 0x20) != 'p') return P_INVALID;
            if ((s[*at + 1] | 0x20) != 'm') return P_INVALID;
            f->pm_set = true;
            f->pm = (s[*at] | 0x20) == 'p';
            *at += 2;
            break;
        case 'z': st = poffset(s, n, at, false, false, f); break;
        case '#': if (j + 1 >= fn || fmt[j + 1] != 'z') return P_BAD_FORMAT; j++; st = poffset(s, n, at, true, false, f); break;
        case ':':
            if (j + 1 >= fn || fmt[j + 1] != 'z') return P_BAD_FORMAT;
            j++;
            st = poffset(s, n, at, false, false, f);
            break;
        case 's': {
            int sign = 1;
            if (*at < n && s[*at] == '-') sign = -1, (*at)++;
            if (!(st = pnum(s, n, at, 1, 18, &v))) f->epoch = sign * v, f->has_epoch = true;
            break;
        }
        case 'T': sub = "%H:%M:%S"; break;
        case 'R': sub = "%H:%M"; break;
        case 'D': case 'x': sub = "%m/%d/%y"; break;
        case 'F': sub = "%Y-%m-%d"; break;
        case 'X': sub = "%H:%M:%S"; break;
        case 'r': sub = "%I:%M:%S %p"; break;
        case 'c': sub = "%a %b %e %H:%M:%S %Y"; break;
        case '+':
            if (depth > 0) return P_BAD_FORMAT;
            st = parse_at(s, n, at, (const uint8_t *)"%Y-%m-%d", 8, f, depth + 1);
            if (st) break;
            if (*at >= n) return P_SHORT;
            if (s[*at] != 'T' && s[*at] != 't' && s[*at] != ' ') return P_INVALID;
            (*at)++;
            st = parse_at(s, n, at, (const uint8_t *)"%H:%M:%S%.f", 11, f, depth + 1);
            if (!st) st = poffset(s, n, at, false, true, f);
            break;
        case 't': case 'n':
            while (*at < n && (s[*at] == ' ' || s[*at] == '\t' || s[*at] == '\n')) (*at)++;
            break;
        case '%':
            if (*at >= n) return P_SHORT;
            if (s[*at] != '%') return P_INVALID;
            (*at)++;
            break;
        default: return P_BAD_FORMAT;
        }
        if (sub) {
            if (depth > 0) return P_BAD_FORMAT;
            st = parse_at(s, n, at, (const uint8_t *)sub, strlen(sub), f, depth + 1);
        }
        if (st) return st;
    }
    return P_OK;
}

static pstatus parse_with(const uint8_t *s, size_t n, const uint8_t *fmt, size_t fn, pfields *f, int depth) {
    size_t at = 0;
    memset(f, 0, sizeof *f);
    f->month = f->day = 1;
    f->hour12 = -1;
    pstatus st = parse_at(s, n, &at, fmt, fn, f, depth);
    if (!st && at < n) st = P_TRAILING;
    return st;
}

/* UTC nanoseconds since the epoch of parsed fields (no date: the epoch's day); false when out of range. */
static pstatus fields_to_ns(const pfields *f, bool need_date, __int128 *out) {
    if (f->has_epoch) {
        *out = (__int128)f->epoch * 1000000000 + f->nanos;
        return P_OK;
    }
    if (need_date && !f->has_year) return P_SHORT;
    int hour = f->hour;
    if (f->hour12 >= 0) {
        if (f->hour12 < 1 || f->hour12 > 12) return P_RANGE;
        hour = f->hour12 % 12 + (f->pm ? 12 : 0);
    } else if (f->pm_set && hour < 12 && f->pm) {
        hour += 12;
    }
    if (f->month < 1 || f->month > 12 || f->day < 1 || hour > 23 || f->minute > 59 || f->second > 60)
        return P_RANGE;
    int64_t y = f->has_year ? f->year : 1970;
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int dim = dm[f->month - 1] + (f->month == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
    if (f->day > dim || y < -262143 || y > 262142) return P_RANGE;
    int64_t days = f->has_year ? df_days_from_civil(y, f->month, f->day) : 0;
    __int128 secs = (__int128)days * 86400 + hour * 3600 + f->minute * 60 + f->second - f->offset;
    *out = secs * 1000000000 + f->nanos;
    return P_OK;
}

/* to_timestamp*(s, fmt...), to_date, to_unixtime, to_time with formats: the first format that parses wins. */
static df_errkind parse_formats_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, 1, &v));
    const df_type *t = v->type;
    int64_t unit_ns = t->id == DF_TYPE_TIMESTAMP ? 1000000000LL / per_sec[t->unit] : 1;
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int32_t n;
        const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
        pstatus st = P_BAD_FORMAT;
        int32_t last = -1;
        __int128 ns = 0;
        pfields f;
        for (int32_t j = 1; j < na && st != P_OK; j++) {
            if (!df_xreg_valid(&a[j], i)) continue;
            int32_t fl;
            const uint8_t *fmt = df_vec_bytes(a[j].vec, a[j].is_const ? 0 : i, &fl);
            last = j;
            st = parse_with(s, (size_t)n, fmt, (size_t)fl, &f, 0);
            if (!st && fn == DF_FN_TO_TIME) {
                if (f.has_year || f.has_epoch) st = P_INVALID; /* a time of day only */
                else st = fields_to_ns(&f, false, &ns);
            } else if (!st) {
                st = fields_to_ns(&f, true, &ns);
            }
        }
        if (st != P_OK) {
            df_vec_release(v);
            if (last < 0) return df_error_set(k->err, DF_ERR_EXECUTION, "no format to parse '%.*s' with", n > 40 ? 40 : n, s);
            int32_t fl;
            const uint8_t *fmt = df_vec_bytes(a[last].vec, a[last].is_const ? 0 : i, &fl);
            return df_error_set(k->err, DF_ERR_EXECUTION, "Error parsing timestamp from '%.*s' using format '%.*s': %s",
                                n > 60 ? 60 : n, s, fl > 60 ? 60 : fl, fmt, pstatus_text[st]);
        }
        __int128 r;
        if (fn == DF_FN_TO_DATE) r = (ns >= 0 ? ns : ns - 86399999999999LL) / 86400000000000LL;
        else if (fn == DF_FN_TO_UNIXTIME) r = (ns >= 0 ? ns : ns - 999999999) / 1000000000;
        else if (fn == DF_FN_TO_TIME) r = ns;
        else r = (ns >= 0 ? ns : ns - (unit_ns - 1)) / unit_ns;
        /* DataFusion parses to nanoseconds first: instants beyond them are out of range. */
        bool range = ns >= INT64_MIN && ns <= INT64_MAX;
        if (fn == DF_FN_TO_DATE) range = r >= INT32_MIN && r <= INT32_MAX;
        if (!range) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "Error parsing timestamp from '%.*s': %s", n > 60 ? 60 : n, s,
                                pstatus_text[P_RANGE]);
        }
        if (fn == DF_FN_TO_DATE) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)r;
        else DF_VEC_VALUES(v, int64_t)[i] = (int64_t)r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* AT TIME ZONE                                                              */

/* The UTC instant of wall time `local` (seconds) in zone: the offset in effect at that instant. */
static int64_t wall_to_utc(const df_tz *zone, int64_t local) {
    int64_t guess = df__tz_offset_at(zone, local);
    return local - df__tz_offset_at(zone, local - guess);
}

/* x AT TIME ZONE z: zoned input keeps its instant; naive input (timestamp or text) is a wall time in z. */
static df_errkind at_time_zone_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const time_aux *ta = k->aux;
    const df_type *t = a[0].vec->type;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    int64_t q = per_sec[k->type->unit];
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int64_t x;
        bool zoned = t->id == DF_TYPE_TIMESTAMP && t->timezone;
        if (t->id == DF_TYPE_TIMESTAMP) {
            x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i];
        } else {
            int32_t n;
            const uint8_t *s = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &n);
            if (!df__parse_timestamp_zoned((const char *)s, (size_t)n, k->type->unit, &x, &zoned)) {
                e = df_error_set(k->err, DF_ERR_CAST, "cannot parse '%.*s' as a timestamp", n > 40 ? 40 : n, s);
                break;
            }
        }
        if (!zoned) {
            int64_t secs = x / q - (x % q < 0), frac = x - secs * q, u;
            if (__builtin_mul_overflow(wall_to_utc(ta->tz, secs), q, &u) || __builtin_add_overflow(u, frac, &x)) {
                e = df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "timestamp out of range");
                break;
            }
        }
        DF_VEC_VALUES(v, int64_t)[i] = x;
    });
    return df__kernel_finish(k, v, e, out);
}

/* to_local_time(zoned): the wall time there, as a naive timestamp. */
static df_errkind to_local_time_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    const time_aux *ta = k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    int64_t q = per_sec[k->type->unit];
    df_errkind e = DF_OK;
    DF_FOR_SEL(k, i, {
        if (!row_valid(v, i)) continue;
        int64_t x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i], y = x;
        if (ta && __builtin_add_overflow(x, (int64_t)df__tz_offset_at(ta->tz, x / q - (x % q < 0)) * q, &y)) {
            e = df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "timestamp out of range");
            break;
        }
        DF_VEC_VALUES(v, int64_t)[i] = y;
    });
    return df__kernel_finish(k, v, e, out);
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */

/* Opens the zone of zoned timestamp type t once for the kernel (nothing for other types). */
static df_errkind with_zone(const df_type *t, df_kernel *out, df_error *err) {
    if (t->id != DF_TYPE_TIMESTAMP || !t->timezone) return DF_OK;
    time_aux *ta = df_calloc(1, sizeof *ta);
    if (!ta) return DF_OOM(err);
    df_errkind e = df__tz_open(t->timezone, &ta->tz, err);
    if (e) {
        df_free(ta);
        return e;
    }
    out->aux = ta;
    out->aux_free = time_aux_free;
    return DF_OK;
}

df_errkind df__kernels_time(const df_expr *call, df_kernel *out, df_error *err) {
    switch (call->fn) {
    case DF_FN_TO_TIMESTAMP: case DF_FN_TO_TIMESTAMP_SECONDS: case DF_FN_TO_TIMESTAMP_MILLIS:
    case DF_FN_TO_TIMESTAMP_MICROS: case DF_FN_TO_TIMESTAMP_NANOS: case DF_FN_TO_DATE: case DF_FN_TO_UNIXTIME:
        if (call->nargs < 2) return DF_OK;
        out->fn = parse_formats_k;
        out->aux = (void *)(intptr_t)call->fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_MAKE_TIME: out->fn = make_time_k; out->can_error = true; return DF_OK;
    case DF_FN_AT_TIME_ZONE:
        out->fn = at_time_zone_k;
        out->can_error = true;
        return with_zone(call->type, out, err);
    case DF_FN_TO_LOCAL_TIME:
        out->fn = to_local_time_k;
        out->can_error = true;
        return with_zone(call->args[0]->type, out, err); /* no zone (naive input): the value is its own wall time */
    case DF_FN_TO_TIME:
        if (call->nargs >= 2) {
            out->fn = parse_formats_k;
            out->aux = (void *)(intptr_t)call->fn;
            out->can_error = true;
            return DF_OK;
        }
        out->fn = to_time_k; out->can_error = true; return with_zone(call->args[0]->type, out, err);
    case DF_FN_TO_CHAR: out->fn = to_char_k; out->can_error = true; return with_zone(call->args[0]->type, out, err);
    default: return DF_OK;
    }
}
