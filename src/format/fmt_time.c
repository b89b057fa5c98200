/*
 * Temporal rendering, following Arrow's display (chrono's formats):
 *
 *   Date32          2024-01-02 (years outside 0..9999 get a sign: +10000)
 *   Date64, naive   2024-01-02T03:04:05.123 — the fraction has 3, 6 or 9
 *   Timestamp       digits, whichever shows it exactly; none when zero
 *   Timestamp+tz    RFC 3339 in the zone's local time: ...T05:04:05+02:00,
 *                   "Z" when the offset is zero
 *   Time32/64       01:02:03.123456789
 *   Duration        ISO 8601 seconds: PT1234.567S, -PT1S, P0D
 *   Interval        "1 mons 2 days 3 hours 4 mins 5.000000000 secs"
 *
 * All splits of an instant into seconds and sub-second parts use floor
 * division, so instants before 1970 render like after.
 */
#include "format/format_int.h"

static const int64_t unit_per_second[] = {1, 1000, 1000000, 1000000000};
static const int64_t nanos_per_unit[] = {1000000000, 1000000, 1000, 1};

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

df_errkind df__fmt_date(df_buf *out, int64_t days, df_error *err) {
    int64_t y;
    int m, d;
    df_civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999) return df_buf_printf(out, err, "%04lld-%02d-%02d", (long long)y, m, d);
    return df_buf_printf(out, err, "%+05lld-%02d-%02d", (long long)y, m, d);
}

/* ".fff", ".ffffff" or ".fffffffff": the shortest of the three that is exact. */
static df_errkind write_fraction(df_buf *out, int64_t nanos, df_error *err) {
    if (nanos == 0) return DF_OK;
    if (nanos % 1000000 == 0) return df_buf_printf(out, err, ".%03lld", (long long)(nanos / 1000000));
    if (nanos % 1000 == 0) return df_buf_printf(out, err, ".%06lld", (long long)(nanos / 1000));
    return df_buf_printf(out, err, ".%09lld", (long long)nanos);
}

/* Date, 'T', time of day, fraction for (seconds since epoch, nanos in [0, 1e9)). */
static df_errkind write_datetime(df_buf *out, int64_t secs, int64_t nanos, df_error *err) {
    int64_t days = floor_div(secs, 86400);
    int64_t sod = secs - days * 86400;
    DF_TRY(df__fmt_date(out, days, err));
    DF_TRY(df_buf_printf(out, err, "T%02d:%02d:%02d", (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60)));
    return write_fraction(out, nanos, err);
}

static void split_instant(int64_t value, df_time_unit unit, int64_t *secs, int64_t *nanos) {
    int64_t per = unit_per_second[unit];
    *secs = floor_div(value, per);
    *nanos = (value - *secs * per) * nanos_per_unit[unit];
}

df_errkind df__fmt_naive_datetime(df_buf *out, int64_t value, df_time_unit unit, df_error *err) {
    int64_t secs, nanos;
    split_instant(value, unit, &secs, &nanos);
    return write_datetime(out, secs, nanos, err);
}

df_errkind df__fmt_zoned_datetime(df_buf *out, int64_t value, df_time_unit unit, const df_tz *tz, df_error *err) {
    int64_t secs, nanos;
    split_instant(value, unit, &secs, &nanos);
    int32_t off = df__tz_offset_at(tz, secs);
    int64_t local;
    if (__builtin_add_overflow(secs, (int64_t)off, &local)) {
        local = secs;
        off = 0;
    }
    DF_TRY(write_datetime(out, local, nanos, err));
    if (off == 0) return df_buf_append_char(out, 'Z', err);
    char sign = off < 0 ? '-' : '+';
    int32_t a = off < 0 ? -off : off;
    DF_TRY(df_buf_printf(out, err, "%c%02d:%02d", sign, (int)(a / 3600), (int)(a / 60 % 60)));
    if (a % 60) DF_TRY(df_buf_printf(out, err, ":%02d", (int)(a % 60)));
    return DF_OK;
}

df_errkind df__fmt_time_of_day(df_buf *out, int64_t value, df_time_unit unit, df_error *err) {
    int64_t per = unit_per_second[unit];
    if (value < 0 || value / per >= 86400) {
        /* Not a time of day; show the raw count rather than inventing one. */
        return df_buf_printf(out, err, "%lld", (long long)value);
    }
    int64_t secs = value / per;
    int64_t nanos = (value % per) * nanos_per_unit[unit];
    DF_TRY(df_buf_printf(out, err, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60)));
    return write_fraction(out, nanos, err);
}

df_errkind df__fmt_duration(df_buf *out, int64_t value, df_time_unit unit, df_error *err) {
    df_i128 total = (df_i128)value * nanos_per_unit[unit];
    bool neg = total < 0;
    df_u128 abs = neg ? (df_u128)0 - (df_u128)total : (df_u128)total;
    if (abs == 0) return df_buf_append(out, "P0D", 3, err);
    uint64_t secs = (uint64_t)(abs / 1000000000u);
    uint32_t nanos = (uint32_t)(abs % 1000000000u);
    DF_TRY(df_buf_printf(out, err, "%sPT%llu", neg ? "-" : "", (unsigned long long)secs));
    if (nanos) {
        /* Significant fraction digits only. */
        int figures = 9;
        while (nanos % 10 == 0) {
            nanos /= 10;
            figures--;
        }
        DF_TRY(df_buf_printf(out, err, ".%0*u", figures, nanos));
    }
    return df_buf_append_char(out, 'S', err);
}

df_errkind df__fmt_interval_mdn(df_buf *out, int32_t months, int32_t days, int64_t nanos, df_error *err) {
    const char *sep = "";
    if (months == 0 && days == 0 && nanos == 0) return df_buf_append_str(out, "0 secs", err);
    if (months != 0) {
        DF_TRY(df_buf_printf(out, err, "%d mons", months));
        sep = " ";
    }
    if (days != 0) {
        DF_TRY(df_buf_printf(out, err, "%s%d days", sep, days));
        sep = " ";
    }
    if (nanos == 0) return DF_OK;
    /* Truncating division, as the reference does. */
    int64_t hours = nanos / 3600000000000LL;
    int64_t rest = nanos % 3600000000000LL;
    int64_t mins = rest / 60000000000LL;
    rest %= 60000000000LL;
    int64_t secs = rest / 1000000000LL;
    int64_t frac = rest % 1000000000LL;
    if (hours != 0) {
        DF_TRY(df_buf_printf(out, err, "%s%lld hours", sep, (long long)hours));
        sep = " ";
    }
    if (mins != 0) {
        DF_TRY(df_buf_printf(out, err, "%s%lld mins", sep, (long long)mins));
        sep = " ";
    }
    if (secs != 0 || frac != 0) {
        const char *sign = (secs < 0 || frac < 0) ? "-" : "";
        DF_TRY(df_buf_printf(out, err, "%s%s%lld.%09lld secs", sep, sign, (long long)(secs < 0 ? -secs : secs),
                             (long long)(frac < 0 ? -frac : frac)));
    }
    return DF_OK;
}
