/*
 * Date and time kernels: date_part / EXTRACT, date_trunc, make_date,
 * to_timestamp, to_date, to_unixtime, from_unixtime, and arithmetic of
 * dates and timestamps with intervals (calendar months, days, nanoseconds)
 * and with each other.
 *
 * Timestamps with a time zone are stored as UTC instants; fields are
 * computed in local time for fixed offsets ("+05:30") and UTC names
 * ("UTC", "Z"); other zone names are treated as UTC (documented limit: no
 * zone database yet).  Calendar arithmetic clamps the day to the end of
 * the month (Jan 31 + 1 month = Feb 28/29), as arrow and PostgreSQL do.
 */
#include "exec/exec_int.h"
#include "common/tzif.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};

/* Offset in seconds of a fixed-offset or UTC zone name (0 for others). */
static int64_t tz_offset(const char *tz) {
    if (!tz || !*tz) return 0;
    if ((tz[0] == '+' || tz[0] == '-') && strlen(tz) >= 3) {
        int sign = tz[0] == '-' ? -1 : 1;
        int h = (tz[1] - '0') * 10 + (tz[2] - '0');
        int m = 0;
        const char *p = tz + 3;
        if (*p == ':') p++;
        if (p[0] && p[1]) m = (p[0] - '0') * 10 + (p[1] - '0');
        return sign * (h * 3600 + m * 60);
    }
    return 0;
}

/*
 * The calendar DataFusion computes civil fields in (chrono's NaiveDate):
 * years -262143..262142.  make_date refuses dates outside it, and date
 * parts of values outside it are NULL, as there.
 */
#define CIVIL_MIN_YEAR (-262143)
#define CIVIL_MAX_YEAR 262142

/* Nanoseconds per unit of a timestamp unit. */
static int64_t ns_per_unit(df_time_unit unit) { return 1000000000LL / per_sec[unit]; }

/* True when a timestamp of `unit` can be held as nanoseconds, which DataFusion converts to first. */
static bool fits_ns(int64_t x, df_time_unit unit) {
    int64_t r;
    return !__builtin_mul_overflow(x, ns_per_unit(unit), &r);
}

/* Units since the epoch of day number `days` plus `tod` units, shifted back by `off_s` seconds; false on overflow. */
static bool units_from_days(int64_t days, int64_t off_s, int64_t q, int64_t tod, int64_t *out) {
    int64_t s;
    return !__builtin_mul_overflow(days, 86400, &s) && !__builtin_sub_overflow(s, off_s, &s) &&
           !__builtin_mul_overflow(s, q, &s) && !__builtin_add_overflow(s, tod, out);
}

static int days_in_month(int64_t y, int m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dm[m - 1];
}

/* Adds calendar months to a day number (clamping the day of month). */
static int64_t add_months(int64_t days, int64_t months) {
    if (!months) return days;
    int64_t y;
    int m, d;
    df_civil_from_days(days, &y, &m, &d);
    int64_t total = y * 12 + (m - 1) + months;
    int64_t ny = total >= 0 ? total / 12 : -((-total + 11) / 12);
    int nm = (int)(total - ny * 12) + 1;
    int dim = days_in_month(ny, nm);
    return df_days_from_civil(ny, nm, d > dim ? dim : d);
}

/* True when day number d is inside the calendar DataFusion computes dates in. */
static bool civil_day(int64_t d) {
    return d >= df_days_from_civil(CIVIL_MIN_YEAR, 1, 1) && d <= df_days_from_civil(CIVIL_MAX_YEAR, 12, 31);
}

/* Splits units-since-epoch into day number and time of day in nanoseconds. */
static void split_ts(int64_t v, df_time_unit unit, int64_t offset_s, int64_t *days, int64_t *tod_ns) {
    int64_t q = per_sec[unit];
    int64_t secs = v / q, frac = v % q;
    if (frac < 0) frac += q, secs--;
    secs += offset_s;
    int64_t d = secs / 86400, rem = secs % 86400;
    if (rem < 0) rem += 86400, d--;
    *days = d;
    *tod_ns = rem * 1000000000LL + frac * (1000000000LL / q);
}

/*
 * The UTC offset, in seconds, of a timestamp value: the kernel's IANA zone
 * (k->aux, opened once per kernel) at that instant, else the fixed offset.
 */
static int64_t offset_of(const df_kargs *k, int64_t fixed, int64_t v, df_time_unit unit) {
    const df_tz *zone = k->aux;
    if (!zone) return fixed;
    int64_t q = per_sec[unit], secs = v / q - (v % q < 0);
    return df__tz_offset_at(zone, secs);
}

static void tz_aux_free(void *p) { df__tz_free(p); }

/* ------------------------------------------------------------------------ */
/* date_part                                                                 */

typedef enum part {
    P_YEAR, P_QUARTER, P_MONTH, P_WEEK, P_DAY, P_DOW, P_DOY, P_HOUR, P_MINUTE, P_SECOND, P_MILLI, P_MICRO,
    P_NANO, P_EPOCH, P_ISODOW, P_ISOYEAR, P_CENTURY, P_DECADE, P_MILLENNIUM, P_UNKNOWN
} part;

static part parse_part(const uint8_t *s, int64_t n) {
    static const struct {
        const char *name;
        part p;
    } names[] = {
        {"year", P_YEAR}, {"years", P_YEAR}, {"y", P_YEAR}, {"quarter", P_QUARTER}, {"month", P_MONTH},
        {"months", P_MONTH}, {"mon", P_MONTH}, {"week", P_WEEK}, {"weeks", P_WEEK}, {"day", P_DAY},
        {"days", P_DAY}, {"d", P_DAY}, {"dow", P_DOW}, {"doy", P_DOY}, {"hour", P_HOUR}, {"hours", P_HOUR},
        {"h", P_HOUR}, {"minute", P_MINUTE}, {"minutes", P_MINUTE}, {"m", P_MINUTE}, {"second", P_SECOND},
        {"seconds", P_SECOND}, {"s", P_SECOND}, {"millisecond", P_MILLI}, {"milliseconds", P_MILLI},
        {"ms", P_MILLI}, {"microsecond", P_MICRO}, {"microseconds", P_MICRO}, {"us", P_MICRO},
        {"nanosecond", P_NANO}, {"nanoseconds", P_NANO}, {"ns", P_NANO}, {"epoch", P_EPOCH},
        {"isodow", P_ISODOW}, {"isoyear", P_ISOYEAR}, {"century", P_CENTURY}, {"decade", P_DECADE},
        {"millennium", P_MILLENNIUM},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(names); i++)
        if ((int64_t)strlen(names[i].name) == n && df_ascii_ncasecmp((const char *)s, names[i].name, (size_t)n) == 0)
            return names[i].p;
    return P_UNKNOWN;
}

/* ISO-8601 week number and year of a day. */
static void iso_week(int64_t days, int64_t *week, int64_t *iso_year) {
    int64_t dow = ((days % 7) + 7 + 3) % 7; /* Monday = 0 (1970-01-01 was a Thursday) */
    int64_t thursday = days - dow + 3;
    int64_t y;
    int m, d;
    df_civil_from_days(thursday, &y, &m, &d);
    int64_t jan1 = df_days_from_civil(y, 1, 1);
    *week = (thursday - jan1) / 7 + 1;
    *iso_year = y;
}

/* One field value; `is_date` means no time of day. */
static double part_value(part p, int64_t days, int64_t tod_ns, int64_t epoch_units, df_time_unit unit) {
    int64_t y;
    int m, d;
    df_civil_from_days(days, &y, &m, &d);
    int64_t sec_of_min = tod_ns / 1000000000LL % 60, sub_ns = tod_ns % 1000000000LL;
    switch (p) {
    case P_YEAR: return (double)y;
    case P_QUARTER: return (m - 1) / 3 + 1;
    case P_MONTH: return m;
    case P_DAY: return d;
    case P_DOW: return (double)(((days % 7) + 7 + 4) % 7); /* Sunday = 0 */
    case P_ISODOW: return (double)((((days % 7) + 7 + 3) % 7) + 1);
    case P_DOY: return (double)(days - df_days_from_civil(y, 1, 1) + 1);
    case P_WEEK: {
        int64_t w, iy;
        iso_week(days, &w, &iy);
        return (double)w;
    }
    case P_ISOYEAR: {
        int64_t w, iy;
        iso_week(days, &w, &iy);
        return (double)iy;
    }
    case P_HOUR: return (double)(tod_ns / 3600000000000LL);
    case P_MINUTE: return (double)(tod_ns / 60000000000LL % 60);
    case P_SECOND: return (double)sec_of_min;
    case P_MILLI: return (double)(sec_of_min * 1000 + sub_ns / 1000000);
    case P_MICRO: return (double)(sec_of_min * 1000000 + sub_ns / 1000);
    case P_NANO: return (double)(sec_of_min * 1000000000LL + sub_ns);
    case P_EPOCH: return (double)epoch_units / (double)per_sec[unit];
    case P_CENTURY: return (double)(y > 0 ? (y + 99) / 100 : -((-y + 99) / 100));
    case P_DECADE: return (double)(y >= 0 ? y / 10 : -((-y + 9) / 10));
    case P_MILLENNIUM: return (double)(y > 0 ? (y + 999) / 1000 : -((-y + 999) / 1000));
    default: return NAN;
    }
}

static df_errkind date_part_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    const df_vec *x = a[1].vec;
    const df_type *t = x->type;
    int64_t off = t->id == DF_TYPE_TIMESTAMP ? tz_offset(t->timezone) : 0;
    part cached = P_UNKNOWN;
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int32_t pn;
        const uint8_t *ps = df_vec_bytes(a[0].vec, a[0].is_const ? 0 : i, &pn);
        part p = a[0].is_const && cached != P_UNKNOWN ? cached : parse_part(ps, pn);
        cached = p;
        if (p == P_UNKNOWN) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "unknown date part '%.*s'", pn > 32 ? 32 : pn, ps);
        }
        /* Calendar parts of spans without a calendar, which arrow refuses (isoyear of an interval;
         * a duration's years, quarters and months). */
        if ((t->id == DF_TYPE_INTERVAL_MDN && p == P_ISOYEAR) ||
            (t->id == DF_TYPE_DURATION && p != P_WEEK && p != P_DAY && p != P_HOUR && p != P_MINUTE &&
             p != P_SECOND && p != P_MILLI && p != P_MICRO && p != P_NANO && p != P_EPOCH)) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "%.*s does not support: %s", pn > 32 ? 32 : pn, ps,
                                t->id == DF_TYPE_DURATION ? "Duration" : "Interval");
        }
        int64_t j = a[1].is_const ? 0 : i;
        int64_t days = 0, tod = 0, epoch = 0;
        df_time_unit unit = DF_UNIT_SECOND;
        switch (t->id) {
        case DF_TYPE_DATE32:
            days = DF_VEC_VALUES(x, int32_t)[j];
            epoch = days * 86400;
            break;
        case DF_TYPE_DATE64: {
            int64_t ms = DF_VEC_VALUES(x, int64_t)[j];
            split_ts(ms, DF_UNIT_MILLI, 0, &days, &tod);
            epoch = ms;
            unit = DF_UNIT_MILLI;
            break;
        }
        case DF_TYPE_TIMESTAMP:
            epoch = DF_VEC_VALUES(x, int64_t)[j];
            unit = t->unit;
            split_ts(epoch, t->unit, offset_of(k, off, epoch, t->unit), &days, &tod);
            break;
        case DF_TYPE_TIME32:
        case DF_TYPE_TIME64: {
            int64_t tv = t->id == DF_TYPE_TIME32 ? DF_VEC_VALUES(x, int32_t)[j] : DF_VEC_VALUES(x, int64_t)[j];
            tod = tv * (1000000000LL / per_sec[t->unit]);
            epoch = tv;
            unit = t->unit;
            break;
        }
        case DF_TYPE_DURATION: {
            /* A duration's parts are its whole length in that unit, truncated (arrow's date_part). */
            int64_t d = DF_VEC_VALUES(x, int64_t)[j], ps_ = per_sec[t->unit], sec = d / ps_;
            __int128 ns = (__int128)d * (1000000000LL / ps_);
            __int128 r;
            switch (p) {
            case P_WEEK: r = sec / 604800; break;
            case P_DAY: r = sec / 86400; break;
            case P_HOUR: r = sec / 3600; break;
            case P_MINUTE: r = sec / 60; break;
            case P_SECOND: r = sec; break;
            case P_MILLI: r = ns / 1000000; break;
            case P_MICRO: r = ns / 1000; break;
            default: r = ns; break; /* P_NANO; P_EPOCH below */
            }
            /* Integer results wrap as arrow's do (microseconds of a long duration overflow Int32). */
            if (k->type->id == DF_TYPE_INT32) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)(uint32_t)(unsigned __int128)r;
            else if (k->type->id == DF_TYPE_INT64) DF_VEC_VALUES(v, int64_t)[i] = (int64_t)(uint64_t)(unsigned __int128)r;
            else DF_VEC_VALUES(v, double)[i] = p == P_EPOCH ? (double)d / (double)ps_ : (double)r;
            continue;
        }
        case DF_TYPE_INTERVAL_MDN: {
            const uint8_t *pp = x->values->data + (x->offset + j) * 16;
            int32_t mo, da;
            int64_t ns;
            df__memcpy(&mo, pp, 4), df__memcpy(&da, pp + 4, 4), df__memcpy(&ns, pp + 8, 8);
            double r;
            switch (p) {
            case P_YEAR: r = mo / 12; break;
            case P_MONTH: r = mo % 12; break;
            case P_DAY: r = da; break;
            case P_HOUR: r = (double)(ns / 3600000000000LL); break;
            case P_MINUTE: r = (double)(ns / 60000000000LL % 60); break;
            case P_SECOND: r = (double)(ns / 1000000000LL % 60); break;
            case P_MILLI: r = (double)(ns / 1000000 % 60000); break;
            case P_MICRO: r = (double)(ns / 1000 % 60000000); break;
            case P_NANO: r = (double)(ns % 60000000000LL); break;
            case P_EPOCH: r = mo * 30.0 * 86400 + da * 86400.0 + (double)ns / 1e9; break;
            default: r = 0;
            }
            if (k->type->id == DF_TYPE_INT32) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)r;
            else if (k->type->id == DF_TYPE_INT64) DF_VEC_VALUES(v, int64_t)[i] = (int64_t)r;
            else DF_VEC_VALUES(v, double)[i] = r;
            continue;
        }
        default: break;
        }
        bool civil = t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64 || t->id == DF_TYPE_TIMESTAMP;
        double r = NAN;
        if (civil && p != P_EPOCH) {
            int64_t y;
            int mo, da;
            df_civil_from_days(days, &y, &mo, &da);
            if (y >= CIVIL_MIN_YEAR && y <= CIVIL_MAX_YEAR) r = part_value(p, days, tod, epoch, unit);
        } else {
            r = part_value(p, days, tod, epoch, unit);
        }
        /* Outside the civil calendar (or not a number an integer result holds): NULL, as DataFusion gives. */
        bool fits = k->type->id == DF_TYPE_INT32   ? (r >= INT32_MIN && r <= INT32_MAX)
                    : k->type->id == DF_TYPE_INT64 ? (r >= -9223372036854775808.0 && r < 9223372036854775808.0)
                                                   : !(civil && p != P_EPOCH && isnan(r));
        if (!fits) {
            if (df_vec_ensure_validity(v, k->n, k->err)) {
                df_vec_release(v);
                return k->err ? k->err->kind : DF_ERR_OUT_OF_MEMORY;
            }
            df_bit_clear(v->validity->data, i);
            continue;
        }
        if (k->type->id == DF_TYPE_INT32) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)r;
        else if (k->type->id == DF_TYPE_INT64) DF_VEC_VALUES(v, int64_t)[i] = (int64_t)r;
        else DF_VEC_VALUES(v, double)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* date_trunc                                                                */

static df_errkind date_trunc_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    const df_type *t = a[1].vec->type;
    int64_t off = tz_offset(t->timezone), q = per_sec[t->unit];
    int32_t pn;
    const uint8_t *ps = df_vec_bytes(a[0].vec, 0, &pn);
    part p = parse_part(ps, pn);
    if (p == P_UNKNOWN || p == P_DOW || p == P_DOY || p == P_EPOCH || p == P_ISODOW) {
        df_vec_release(v);
        return df_error_set(k->err, DF_ERR_EXECUTION, "unsupported date_trunc granularity '%.*s'", pn > 32 ? 32 : pn, ps);
    }
    if (t->id == DF_TYPE_TIME64) {
        /* A time of day (nanoseconds) truncates to hours and finer only. */
        int64_t unit_ns = p == P_HOUR     ? 3600000000000LL
                          : p == P_MINUTE ? 60000000000LL
                          : p == P_SECOND ? 1000000000LL
                          : p == P_MILLI  ? 1000000LL
                          : p == P_MICRO  ? 1000LL
                          : p == P_NANO   ? 1
                                          : 0;
        if (!unit_ns) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "date_trunc of a time supports hour to nanosecond, not '%.*s'",
                                pn > 32 ? 32 : pn, ps);
        }
        DF_FOR_SEL(k, i, {
            int64_t x = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
            DF_VEC_VALUES(v, int64_t)[i] = x - (x % unit_ns + unit_ns) % unit_ns;
        });
        df__kernel_done(k, v, out);
        return DF_OK;
    }
    /* Selected rows only: a CASE branch not taken must not fail. */
    DF_FOR_SEL(k, i, {
        int64_t x = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
        if (!fits_ns(x, t->unit)) {
            /* DataFusion truncates in nanoseconds and refuses what does not fit them. */
            if (v->validity && !df_bit_get(v->validity->data, i)) continue;
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "date_trunc input is out of the timestamp range");
        }
        int64_t days, tod, off1 = offset_of(k, off, x, t->unit);
        split_ts(x, t->unit, off1, &days, &tod);
        int64_t y;
        int m, d;
        df_civil_from_days(days, &y, &m, &d);
        switch (p) {
        case P_YEAR: days = df_days_from_civil(y, 1, 1), tod = 0; break;
        case P_QUARTER: days = df_days_from_civil(y, (m - 1) / 3 * 3 + 1, 1), tod = 0; break;
        case P_MONTH: days = df_days_from_civil(y, m, 1), tod = 0; break;
        case P_WEEK: days -= ((days % 7) + 7 + 3) % 7, tod = 0; break;
        case P_DAY: tod = 0; break;
        case P_HOUR: tod -= tod % 3600000000000LL; break;
        case P_MINUTE: tod -= tod % 60000000000LL; break;
        case P_SECOND: tod -= tod % 1000000000LL; break;
        case P_MILLI: tod -= tod % 1000000LL; break;
        case P_MICRO: tod -= tod % 1000LL; break;
        case P_DECADE: days = df_days_from_civil(y - ((y % 10) + 10) % 10, 1, 1), tod = 0; break;
        case P_CENTURY: days = df_days_from_civil(y - ((y - 1) % 100 + 100) % 100, 1, 1), tod = 0; break;
        case P_MILLENNIUM: days = df_days_from_civil(y - ((y - 1) % 1000 + 1000) % 1000, 1, 1), tod = 0; break;
        default: break;
        }
        int64_t r, off2 = off1;
        if (k->aux) {
            /* The truncated local time may lie across a DST change: take the offset in effect there. */
            int64_t local = days * 86400 + tod / 1000000000LL, guess = df__tz_offset_at(k->aux, local - off1);
            if (df__tz_offset_at(k->aux, local - guess) == guess) off2 = guess;
        }
        if (!units_from_days(days, off2, q, tod / (1000000000LL / q), &r)) {
            if (v->validity && !df_bit_get(v->validity->data, i)) continue;
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "date_trunc result is out of the timestamp range");
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Constructors and conversions                                              */

static df_errkind make_date_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int32_t y = DF_VEC_VALUES(a[0].vec, int32_t)[a[0].is_const ? 0 : i];
        int32_t m = DF_VEC_VALUES(a[1].vec, int32_t)[a[1].is_const ? 0 : i];
        int32_t d = DF_VEC_VALUES(a[2].vec, int32_t)[a[2].is_const ? 0 : i];
        if (y < CIVIL_MIN_YEAR || y > CIVIL_MAX_YEAR || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_EXECUTION, "unable to parse date from %d, %d, %d", y, m, d);
        }
        DF_VEC_VALUES(v, int32_t)[i] = (int32_t)df_days_from_civil(y, m, d);
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* to_timestamp / to_date over strings, integers (seconds / days) and floats (seconds). */
static df_errkind convert_k(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_fn fn = (df_fn)(intptr_t)k->aux;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    const df_vec *x = a[0].vec;
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int64_t j = a[0].is_const ? 0 : i;
        bool ok = true;
        if (fn == DF_FN_TO_DATE) {
            if (x->type->id == DF_TYPE_UTF8) {
                int32_t n;
                const uint8_t *s = df_vec_bytes(x, j, &n);
                int32_t d;
                ok = df__parse_date((const char *)s, (size_t)n, &d);
                DF_VEC_VALUES(v, int32_t)[i] = d;
            } else {
                int64_t d = DF_VEC_VALUES(x, int64_t)[j];
                ok = d >= INT32_MIN && d <= INT32_MAX;
                DF_VEC_VALUES(v, int32_t)[i] = (int32_t)d;
            }
        } else if (fn == DF_FN_TO_TIMESTAMP) {
            int64_t r = 0;
            switch (x->type->id) {
            case DF_TYPE_UTF8: {
                int32_t n;
                const uint8_t *s = df_vec_bytes(x, j, &n);
                ok = df__parse_timestamp((const char *)s, (size_t)n, DF_UNIT_NANO, &r);
                break;
            }
            case DF_TYPE_INT64:
                ok = !__builtin_mul_overflow(DF_VEC_VALUES(x, int64_t)[j], 1000000000LL, &r);
                break;
            case DF_TYPE_FLOAT64: {
                double d = DF_VEC_VALUES(x, double)[j] * 1e9;
                ok = isfinite(d) && fabs(d) < 9.2e18;
                r = ok ? (int64_t)llround(d) : 0;
                break;
            }
            default: r = DF_VEC_VALUES(x, int64_t)[j]; break;
            }
            DF_VEC_VALUES(v, int64_t)[i] = r;
        } else {
            /* to_unixtime over Timestamp(s) / from_unixtime over Int64: same numbers */
            DF_VEC_VALUES(v, int64_t)[i] = DF_VEC_VALUES(x, int64_t)[j];
        }
        if (!ok) {
            df_vec_release(v);
            if (x->type->id == DF_TYPE_UTF8) {
                int32_t n;
                const uint8_t *s = df_vec_bytes(x, j, &n);
                return df_error_set(k->err, DF_ERR_CAST, "cannot parse '%.*s' as a %s", n > 40 ? 40 : n, s,
                                    fn == DF_FN_TO_DATE ? "date" : "timestamp");
            }
            return df_error_set(k->err, DF_ERR_CAST, "value out of range for %s", df_fn_name(fn));
        }
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Arithmetic                                                                */

typedef struct mdn {
    int32_t months, days;
    int64_t nanos;
} mdn;

/* date/timestamp +/- interval.  aux: sign (+1/-1) * 2 + (interval on the left). */
static df_errkind temporal_interval(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    intptr_t code = (intptr_t)k->aux;
    int sign = (code & 2) ? -1 : 1;
    bool ileft = code & 1;
    const df_xreg *tv = ileft ? &a[1] : &a[0], *iv = ileft ? &a[0] : &a[1];
    const df_type *t = tv->vec->type;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    int64_t off = t->id == DF_TYPE_TIMESTAMP ? tz_offset(t->timezone) : 0;
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        mdn d = DF_VEC_VALUES(iv->vec, mdn)[iv->is_const ? 0 : i];
        int64_t months = (int64_t)d.months * sign, days_add = (int64_t)d.days * sign, nanos = d.nanos * sign;
        if (t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64) {
            /* Dates move by whole days: the nanoseconds count as days truncated toward zero (chrono). */
            int64_t days, rest = 0;
            if (t->id == DF_TYPE_DATE32) {
                days = DF_VEC_VALUES(tv->vec, int32_t)[tv->is_const ? 0 : i];
            } else {
                int64_t ms = DF_VEC_VALUES(tv->vec, int64_t)[tv->is_const ? 0 : i];
                days = ms / 86400000 - (ms % 86400000 < 0);
                rest = ms - days * 86400000;
            }
            bool ok = civil_day(days);
            if (ok) days = add_months(days, months);
            ok = ok && civil_day(days);
            if (ok) days += days_add + nanos / 86400000000000LL;
            if (!ok || !civil_day(days)) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "date arithmetic overflow");
            }
            if (t->id == DF_TYPE_DATE32) DF_VEC_VALUES(v, int32_t)[i] = (int32_t)days;
            else DF_VEC_VALUES(v, int64_t)[i] = days * 86400000 + rest;
        } else {
            int64_t x = DF_VEC_VALUES(tv->vec, int64_t)[tv->is_const ? 0 : i];
            int64_t q = per_sec[t->unit], days, tod;
            split_ts(x, t->unit, off, &days, &tod);
            days = add_months(days, months) + days_add;
            int64_t r;
            bool ovf = !units_from_days(days, off, q, tod / (1000000000LL / q), &r) ||
                       __builtin_add_overflow(r, nanos / (1000000000LL / q), &r);
            if (ovf) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "timestamp out of range");
            }
            DF_VEC_VALUES(v, int64_t)[i] = r;
        }
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* date - date -> Int64 days; timestamp - timestamp -> Duration(unit). */
static df_errkind temporal_diff(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    bool dates = a[0].vec->type->id == DF_TYPE_DATE32, dates64 = a[0].vec->type->id == DF_TYPE_DATE64;
    DF_FOR_SEL(k, i, {
        int64_t x, y, r;
        if (dates) {
            x = DF_VEC_VALUES(a[0].vec, int32_t)[a[0].is_const ? 0 : i];
            y = DF_VEC_VALUES(a[1].vec, int32_t)[a[1].is_const ? 0 : i];
            r = x - y;
        } else if (dates64) {
            /* whole days between the two dates (truncated toward zero) */
            x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i];
            y = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
            r = x / 86400000 - y / 86400000;
        } else {
            x = DF_VEC_VALUES(a[0].vec, int64_t)[a[0].is_const ? 0 : i];
            y = DF_VEC_VALUES(a[1].vec, int64_t)[a[1].is_const ? 0 : i];
            if (__builtin_sub_overflow(x, y, &r) && (!v->validity || df_bit_get(v->validity->data, i))) {
                df_vec_release(v);
                return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "timestamp difference out of range");
            }
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* Value of a Time32/Time64 as nanoseconds since midnight. */
static int64_t time_ns(const df_xreg *r, int64_t i) {
    const df_type *t = r->vec->type;
    int64_t j = r->is_const ? 0 : i;
    int64_t x = t->id == DF_TYPE_TIME32 ? DF_VEC_VALUES(r->vec, int32_t)[j] : DF_VEC_VALUES(r->vec, int64_t)[j];
    return x * ns_per_unit(t->unit); /* at most a day of nanoseconds for valid times */
}

/* Day number of a Date32/Date64 value. */
static int64_t date_days(const df_xreg *r, int64_t i) {
    int64_t j = r->is_const ? 0 : i;
    if (r->vec->type->id == DF_TYPE_DATE32) return DF_VEC_VALUES(r->vec, int32_t)[j];
    int64_t ms = DF_VEC_VALUES(r->vec, int64_t)[j];
    return ms / 86400000 - (ms % 86400000 < 0);
}

/* date +/- integer days (either side for +).  aux: 1 = subtract. */
static df_errkind date_plus_days(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool sub = k->aux != NULL;
    bool dleft = a[0].vec->type->id == DF_TYPE_DATE32 || a[0].vec->type->id == DF_TYPE_DATE64;
    const df_xreg *dv = dleft ? &a[0] : &a[1], *nv = dleft ? &a[1] : &a[0];
    bool d64 = dv->vec->type->id == DF_TYPE_DATE64;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int64_t n = DF_VEC_VALUES(nv->vec, int64_t)[nv->is_const ? 0 : i];
        int64_t days = date_days(dv, i), r;
        bool ok = !(sub ? __builtin_sub_overflow(days, n, &r) : __builtin_add_overflow(days, n, &r)) && civil_day(r);
        if (!ok) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "date arithmetic overflow");
        }
        if (d64) {
            int64_t ms = DF_VEC_VALUES(dv->vec, int64_t)[dv->is_const ? 0 : i];
            DF_VEC_VALUES(v, int64_t)[i] = r * 86400000 + (ms - days * 86400000);
        } else {
            DF_VEC_VALUES(v, int32_t)[i] = (int32_t)r;
        }
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* date +/- time (time + date): Timestamp(ns).  aux: 1 = subtract. */
static df_errkind date_plus_time(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool sub = k->aux != NULL;
    bool dleft = a[0].vec->type->id == DF_TYPE_DATE32 || a[0].vec->type->id == DF_TYPE_DATE64;
    const df_xreg *dv = dleft ? &a[0] : &a[1], *tv = dleft ? &a[1] : &a[0];
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        int64_t ns = time_ns(tv, i), r;
        bool ok = units_from_days(date_days(dv, i), 0, 1000000000LL, 0, &r) &&
                  !(sub ? __builtin_sub_overflow(r, ns, &r) : __builtin_add_overflow(r, ns, &r));
        if (!ok) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "timestamp out of range");
        }
        DF_VEC_VALUES(v, int64_t)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

/* time - time, time +/- interval, interval + time: an interval (a time counts as nanoseconds). aux: 1 = subtract. */
static df_errkind time_interval(const df_kargs *k, const df_xreg *a, int32_t na, df_xreg *out) {
    bool sub = k->aux != NULL;
    df_vec *v;
    DF_TRY(df__kernel_out_valid(k, a, na, &v));
    DF_FOR_SEL(k, i, {
        if (v->validity && !df_bit_get(v->validity->data, i)) continue;
        mdn x = {0, 0, 0}, y = {0, 0, 0}, r;
        if (a[0].vec->type->id == DF_TYPE_INTERVAL_MDN) x = DF_VEC_VALUES(a[0].vec, mdn)[a[0].is_const ? 0 : i];
        else x.nanos = time_ns(&a[0], i);
        if (a[1].vec->type->id == DF_TYPE_INTERVAL_MDN) y = DF_VEC_VALUES(a[1].vec, mdn)[a[1].is_const ? 0 : i];
        else y.nanos = time_ns(&a[1], i);
        bool ovf = sub ? (__builtin_sub_overflow(x.months, y.months, &r.months) |
                          __builtin_sub_overflow(x.days, y.days, &r.days) |
                          __builtin_sub_overflow(x.nanos, y.nanos, &r.nanos))
                       : (__builtin_add_overflow(x.months, y.months, &r.months) |
                          __builtin_add_overflow(x.days, y.days, &r.days) |
                          __builtin_add_overflow(x.nanos, y.nanos, &r.nanos));
        if (ovf) {
            df_vec_release(v);
            return df_error_set(k->err, DF_ERR_NUMERIC_OVERFLOW, "interval arithmetic overflow");
        }
        DF_VEC_VALUES(v, mdn)[i] = r;
    });
    df__kernel_done(k, v, out);
    return DF_OK;
}

df_errkind df__kernels_datetime(const df_expr *call, df_kernel *out, df_error *err) {
    df_fn fn = call->fn;
    switch (fn) {
    case DF_FN_DATE_PART:
    case DF_FN_DATE_TRUNC: {
        out->fn = call->fn == DF_FN_DATE_PART ? date_part_k : date_trunc_k;
        out->can_error = true;
        /* An IANA zone's offset varies with the instant: open it once for the kernel. */
        const df_type *t = call->nargs > 1 ? call->args[1]->type : NULL;
        if (t && t->id == DF_TYPE_TIMESTAMP && t->timezone && t->timezone[0] != '+' && t->timezone[0] != '-' &&
            strcmp(t->timezone, "UTC") != 0 && strcmp(t->timezone, "Z") != 0) {
            df_tz *zone = NULL;
            DF_TRY(df__tz_open(t->timezone, &zone, err));
            out->aux = zone;
            out->aux_free = tz_aux_free;
        }
        return DF_OK;
    }
    case DF_FN_MAKE_DATE: out->fn = make_date_k; out->can_error = true; return DF_OK;
    case DF_FN_TO_TIMESTAMP: case DF_FN_TO_DATE: case DF_FN_TO_UNIXTIME: case DF_FN_FROM_UNIXTIME:
        out->fn = convert_k;
        out->aux = (void *)(intptr_t)fn;
        out->can_error = true;
        return DF_OK;
    case DF_FN_ADD:
    case DF_FN_SUB: {
        if (call->nargs != 2) return DF_OK;
        df_type_id x = call->args[0]->type->id, y = call->args[1]->type->id;
        bool xd = x == DF_TYPE_DATE32 || x == DF_TYPE_DATE64, yd = y == DF_TYPE_DATE32 || y == DF_TYPE_DATE64;
        bool xtm = x == DF_TYPE_TIME32 || x == DF_TYPE_TIME64, ytm = y == DF_TYPE_TIME32 || y == DF_TYPE_TIME64;
        bool xt = xd || x == DF_TYPE_TIMESTAMP, yt = yd || y == DF_TYPE_TIMESTAMP;
        void *subtract = (void *)(intptr_t)(fn == DF_FN_SUB);
        if ((xd && df_type_is_integer(call->args[1]->type)) || (yd && df_type_is_integer(call->args[0]->type))) {
            out->fn = date_plus_days;
            out->aux = subtract;
            out->can_error = true;
        } else if ((xd && ytm) || (xtm && yd)) {
            out->fn = date_plus_time;
            out->aux = subtract;
            out->can_error = true;
        } else if ((xtm && (ytm || y == DF_TYPE_INTERVAL_MDN)) || (x == DF_TYPE_INTERVAL_MDN && ytm)) {
            out->fn = time_interval;
            out->aux = subtract;
            out->can_error = true;
        } else if (xt && y == DF_TYPE_INTERVAL_MDN) {
            out->fn = temporal_interval;
            out->aux = (void *)(intptr_t)(fn == DF_FN_SUB ? 2 : 0);
            out->can_error = true;
        } else if (fn == DF_FN_ADD && yt && x == DF_TYPE_INTERVAL_MDN) {
            out->fn = temporal_interval;
            out->aux = (void *)(intptr_t)1;
            out->can_error = true;
        } else if (fn == DF_FN_SUB && xt && x == y) {
            out->fn = temporal_diff;
            out->can_error = true;
        }
        return DF_OK;
    }
    default:
        (void)err;
        return DF_OK;
    }
}
