/*
 * Preview formatting internals: value rendering (Arrow display rules),
 * display widths, time zones, and the text grid / HTML builders.
 */
#ifndef DF_SESSION_FMT_INT_H
#define DF_SESSION_FMT_INT_H

#include "columnar/columnar.h"
#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* Time zones (fmt_tz.c)                                                     */

typedef struct df_tz df_tz;

/*
 * Resolves an Arrow timezone string: "UTC"/"Z", fixed offsets "+HH:MM",
 * "+HHMM", "+HH", or an IANA name read from the system zoneinfo database
 * (TZif files; a bounded parser).  Unknown names -> DF_ERR_UNSUPPORTED.
 * Free with df__tz_free.
 */
df_errkind df__tz_open(const char *name, df_tz **out, df_error *err);
void df__tz_free(df_tz *tz);
/* Offset from UTC, in seconds, in effect at `utc_seconds`. */
int32_t df__tz_offset_at(const df_tz *tz, int64_t utc_seconds);
/* Parses a TZif image (for the zoneinfo loader and the fuzzer). */
df_errkind df__tz_parse_tzif(const uint8_t *data, size_t len, df_tz **out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Value rendering (fmt_number.c, fmt_time.c, fmt_value.c)                   */

/* Shortest round-trip digits of a positive finite value: value = d.ddd * 10^exp10. */
void df__fmt_shortest(double v, bool single, char *digits, int *ndigits, int *exp10);
df_errkind df__fmt_float(df_buf *out, double v, bool single, df_error *err);
df_errkind df__fmt_float16(df_buf *out, uint16_t bits, df_error *err);
df_errkind df__fmt_decimal128(df_buf *out, df_i128 v, int scale, df_error *err);
df_errkind df__fmt_decimal256(df_buf *out, const uint8_t *le32, int scale, df_error *err);

/* Civil date from days since 1970-01-01. */
void df__fmt_civil(int64_t days, int64_t *year, int *month, int *day);
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

/* A collected result: batches of one schema.  Borrowed by the formatters. */
typedef struct df_fmt_input {
    const df_schema *schema;        /* column names and types */
    df_batch *const *batches;       /* in order */
    int64_t nbatches;
    int64_t max_rows;               /* rows to show; < 0 = all */
} df_fmt_input;

/*
 * The Arrow pretty-printer grid ("++\n++" when there are no rows).  Caller
 * frees *out; *len (may be NULL) is its length: data may contain NUL bytes.
 */
df_errkind df__fmt_text_table(const df_fmt_input *in, char **out, size_t *len, df_error *err);
/* The preview HTML.  Caller frees *out; *len as above. */
df_errkind df__fmt_html_table(const df_fmt_input *in, char **out, size_t *len, df_error *err);

#endif
