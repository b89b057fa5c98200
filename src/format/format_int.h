/*
 * Preview formatting internals: value rendering (Arrow display rules),
 * display widths, time zones, and the text grid / HTML builders.
 */
#ifndef DF_FORMAT_FORMAT_INT_H
#define DF_FORMAT_FORMAT_INT_H

#include "columnar/columnar.h"
#include "common/common.h"
#include "common/tzif.h"
#include "format/format.h"

/* ------------------------------------------------------------------------ */
/* Value rendering (fmt_number.c, fmt_time.c, fmt_value.c)                   */

/* Shortest round-trip digits of a positive finite value: value = d.ddd * 10^exp10. */
void df__fmt_shortest(double v, bool single, char *digits, int *ndigits, int *exp10);
df_errkind df__fmt_float(df_buf *out, double v, bool single, df_error *err);
df_errkind df__fmt_float16(df_buf *out, uint16_t bits, df_error *err);
df_errkind df__fmt_decimal128(df_buf *out, df_i128 v, int scale, df_error *err);
df_errkind df__fmt_decimal256(df_buf *out, const uint8_t *le32, int scale, df_error *err);

df_errkind df__fmt_date(df_buf *out, int64_t days, df_error *err);
/* "YYYY-MM-DDTHH:MM:SS[.fff|.ffffff|.fffffffff]" of a naive instant in `unit`. */
df_errkind df__fmt_naive_datetime(df_buf *out, int64_t value, df_time_unit unit, df_error *err);
/* RFC 3339 with the zone's offset ("Z" for zero). */
df_errkind df__fmt_zoned_datetime(df_buf *out, int64_t value, df_time_unit unit, const df_tz *tz, df_error *err);
df_errkind df__fmt_time_of_day(df_buf *out, int64_t value, df_time_unit unit, df_error *err);
df_errkind df__fmt_duration(df_buf *out, int64_t value, df_time_unit unit, df_error *err);
df_errkind df__fmt_interval_mdn(df_buf *out, int32_t months, int32_t days, int64_t nanos, df_error *err);

/* Per-call state: the null text and a small cache of opened time zones. */
#define DF_FMT_TZ_CACHE 8
typedef struct df_fmt_ctx {
    const char *null_text;          /* "" for text grids, "null" for HTML */
    const char *tz_names[DF_FMT_TZ_CACHE];  /* borrowed type timezone strings */
    df_tz *tzs[DF_FMT_TZ_CACHE];    /* owned, parallel to tz_names */
    int ntz;                        /* entries in use */
} df_fmt_ctx;

void df__fmt_ctx_init(df_fmt_ctx *ctx, const char *null_text);
void df__fmt_ctx_clear(df_fmt_ctx *ctx);
/* Appends the display of element i of v (nulls as ctx->null_text). */
df_errkind df__fmt_value(df_buf *out, df_fmt_ctx *ctx, const df_vec *v, int64_t i, df_error *err);

/* ------------------------------------------------------------------------ */
/* Widths and tables (fmt_width.c, fmt_table.c)                              */

/* Display columns of one code point (0, 1 or 2), as terminals count them. */
int df__fmt_char_width(uint32_t cp);
/* Display columns of a UTF-8 line. */
size_t df__fmt_text_width(const char *s, size_t n);
/* Appends `s` with & < > " ' replaced by entities. */
df_errkind df__fmt_html_escape(df_buf *out, const char *s, size_t n, df_error *err);


#endif
