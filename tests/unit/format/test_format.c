/*
 * Preview formatting: value rendering per type, the text grid and the HTML
 * view.  Expected strings were produced by the reference implementation on
 * the same values.
 */
#include "df_test.h"

#include <math.h>

#include "format/format_int.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static char *fmt_float(double v, bool single) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_float(&b, v, single, NULL), (df_error *)NULL);
    return df_buf_take(&b);
}

#define ASSERT_FLOAT(v, single, expect)            \
    do {                                           \
        char *s_ = fmt_float((v), (single));       \
        DF_ASSERT_EQ_STR(s_, expect);              \
        df_free(s_);                               \
    } while (0)

static df_vec *vec_i64(const int64_t *v, const bool *valid, int n) {
    df_vec *x;
    DF_ASSERT_OK(df_vec_new(df_type_int64(), n, 0, &x, NULL), (df_error *)NULL);
    for (int i = 0; i < n; i++) {
        DF_VEC_VALUES(x, int64_t)[i] = v[i];
        if (valid && !valid[i]) DF_ASSERT_OK(df_vec_set_null(x, i, NULL), (df_error *)NULL);
    }
    df_vec_set_length(x, n);
    return x;
}

static df_vec *vec_typed_i64(df_type *t, const int64_t *v, const bool *valid, int n) {
    df_vec *x;
    DF_ASSERT_OK(df_vec_new(t, n, 0, &x, NULL), (df_error *)NULL);
    for (int i = 0; i < n; i++) {
        DF_VEC_VALUES(x, int64_t)[i] = v[i];
        if (valid && !valid[i]) DF_ASSERT_OK(df_vec_set_null(x, i, NULL), (df_error *)NULL);
    }
    df_vec_set_length(x, n);
    return x;
}

static df_vec *vec_bytes(df_type *t, const char *const *v, const int32_t *len, int n) {
    df_vec *x;
    DF_ASSERT_OK(df_vec_new(t, n, 64, &x, NULL), (df_error *)NULL);
    for (int i = 0; i < n; i++)
        DF_ASSERT_OK(df_vec_append_bytes(x, v[i], v[i] ? (len ? len[i] : (int32_t)strlen(v[i])) : 0, NULL),
                     (df_error *)NULL);
    return x;
}

static char *fmt_one(df_vec *v, int64_t i, const char *null_text) {
    df_buf b;
    df_buf_init(&b, 0);
    df_fmt_ctx ctx;
    df__fmt_ctx_init(&ctx, null_text);
    DF_ASSERT_OK(df__fmt_value(&b, &ctx, v, i, NULL), (df_error *)NULL);
    df__fmt_ctx_clear(&ctx);
    return df_buf_take(&b);
}

#define ASSERT_CELL(v, i, null_text, expect)       \
    do {                                           \
        char *s_ = fmt_one((v), (i), (null_text)); \
        DF_ASSERT_EQ_STR(s_, expect);              \
        df_free(s_);                               \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */

DF_TEST(float64_matches_reference_layout) {
    ASSERT_FLOAT(0.1, false, "0.1");
    ASSERT_FLOAT(1.0, false, "1.0");
    ASSERT_FLOAT(-0.0, false, "-0.0");
    ASSERT_FLOAT(1e-7, false, "1e-7");
    ASSERT_FLOAT(123456789.0, false, "123456789.0");
    ASSERT_FLOAT(1.5e300, false, "1.5e300");
    ASSERT_FLOAT(INFINITY, false, "inf");
    ASSERT_FLOAT(-INFINITY, false, "-inf");
    ASSERT_FLOAT(NAN, false, "NaN");
    ASSERT_FLOAT(3.141592653589793, false, "3.141592653589793");
    ASSERT_FLOAT(1e16, false, "1e16");
    ASSERT_FLOAT(1e15, false, "1000000000000000.0");
    ASSERT_FLOAT(123456789012345680.0, false, "1.2345678901234568e17");
    ASSERT_FLOAT(2.5e-5, false, "0.000025");
    ASSERT_FLOAT(0.001, false, "0.001");
    ASSERT_FLOAT(1e20, false, "1e20");
    ASSERT_FLOAT(1.5, false, "1.5");
    ASSERT_FLOAT(-20.05, false, "-20.05");
    ASSERT_FLOAT(5e-324, false, "5e-324");
}

DF_TEST(float32_uses_shortest_single_digits) {
    ASSERT_FLOAT((float)0.1, true, "0.1");
    ASSERT_FLOAT((float)123456789.0, true, "123456790.0");
    ASSERT_FLOAT((float)3.141592653589793, true, "3.1415927");
    ASSERT_FLOAT((float)1e16, true, "1e16");
    ASSERT_FLOAT((float)1e15, true, "1e15");
    ASSERT_FLOAT((float)123456789012345680.0, true, "1.2345679e17");
    ASSERT_FLOAT((float)1e-7, true, "1e-7");
    ASSERT_FLOAT((float)2.5e-5, true, "0.000025");
    ASSERT_FLOAT(-0.0f, true, "-0.0");
}

DF_TEST(float16_prints_like_rust_display) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_float16(&b, 0x3E00, NULL), (df_error *)NULL);   /* 1.5 */
    DF_ASSERT_EQ_STR(b.data, "1.5");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_float16(&b, 0x3C00, NULL), (df_error *)NULL);   /* 1.0 */
    DF_ASSERT_EQ_STR(b.data, "1");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_float16(&b, 0x7BFF, NULL), (df_error *)NULL);   /* 65504 */
    DF_ASSERT_EQ_STR(b.data, "65504");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_float16(&b, 0xFC00, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-inf");
    df_buf_free(&b);
}

DF_TEST(decimals_are_exact) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_decimal128(&b, -1, 18, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-0.000000000000000001");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_decimal128(&b, -10000000000000000, 18, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-0.010000000000000000");
    df_buf_reset(&b);
    df_i128 big = (df_i128)12345678901234567890ULL * (df_i128)1000000000000000000LL + 123456789012345678LL;
    DF_ASSERT_OK(df__fmt_decimal128(&b, big, 18, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "12345678901234567890.123456789012345678");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_decimal128(&b, 0, 2, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "0.00");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_decimal128(&b, -123, -2, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-12300");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_decimal128(&b, 7, 0, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "7");
    df_buf_reset(&b);
    /* The most negative 128-bit value does not overflow the magnitude. */
    df_i128 min = (df_i128)((df_u128)1 << 127);
    DF_ASSERT_OK(df__fmt_decimal128(&b, min, 0, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-170141183460469231731687303715884105728");
    df_buf_reset(&b);
    uint8_t d256[32];
    memset(d256, 0, sizeof d256);
    d256[0] = 0xE8;
    d256[1] = 0x03;   /* 1000 */
    DF_ASSERT_OK(df__fmt_decimal256(&b, d256, 3, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "1.000");
    df_buf_reset(&b);
    memset(d256, 0xFF, sizeof d256);   /* -1 */
    DF_ASSERT_OK(df__fmt_decimal256(&b, d256, 2, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "-0.01");
    df_buf_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Time                                                                      */

DF_TEST(dates_and_naive_timestamps) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_date(&b, 19724, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-02");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_date(&b, -1, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "1969-12-31");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_date(&b, 11016, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2000-02-29");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_date(&b, 2932897, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "+10000-01-01");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_naive_datetime(&b, -62135596800000000LL, DF_UNIT_MICRO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "0001-01-01T00:00:00");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_naive_datetime(&b, 253402300799999999LL, DF_UNIT_MICRO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "9999-12-31T23:59:59.999999");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_naive_datetime(&b, -999, DF_UNIT_MILLI, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "1969-12-31T23:59:59.001");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_naive_datetime(&b, 1704164645123456000LL, DF_UNIT_NANO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-02T03:04:05.123456");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_naive_datetime(&b, 1704164645123456789LL, DF_UNIT_NANO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-02T03:04:05.123456789");
    df_buf_free(&b);
}

DF_TEST(zoned_timestamps_use_local_time_and_offset) {
    df_buf b;
    df_buf_init(&b, 0);
    df_tz *tz;
    DF_ASSERT_OK(df__tz_open("+02:00", &tz, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, 1704164645123456LL, DF_UNIT_MICRO, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-02T05:04:05.123456+02:00");
    df__tz_free(tz);
    df_buf_reset(&b);
    DF_ASSERT_OK(df__tz_open("-05:30", &tz, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, 1704164645LL, DF_UNIT_SECOND, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-01T21:34:05-05:30");
    df__tz_free(tz);
    df_buf_reset(&b);
    DF_ASSERT_OK(df__tz_open("UTC", &tz, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, -999999, DF_UNIT_MICRO, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "1969-12-31T23:59:59.000001Z");
    df__tz_free(tz);
    df_buf_free(&b);
}

DF_TEST(named_zones_follow_daylight_time) {
    df_tz *tz = NULL;
    if (df__tz_open("America/New_York", &tz, NULL) != DF_OK) {
        fprintf(stderr, "no zoneinfo database; skipped\n");
        return;
    }
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, 1704164645123LL, DF_UNIT_MILLI, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-01-01T22:04:05.123-05:00");
    df_buf_reset(&b);
    /* 2024-07-01T12:00:00Z is daylight time. */
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, 1719835200LL, DF_UNIT_SECOND, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2024-07-01T08:00:00-04:00");
    df_buf_reset(&b);
    /* Far past the table of transitions: the footer rule decides (2100-07-01T12:00:00Z). */
    DF_ASSERT_OK(df__fmt_zoned_datetime(&b, 4118126400LL, DF_UNIT_SECOND, tz, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "2100-07-01T08:00:00-04:00");
    df_buf_free(&b);
    df__tz_free(tz);
}

DF_TEST(tzif_parser_rejects_garbage) {
    df_tz *tz = NULL;
    const uint8_t junk[] = "TZif2 not really a zone file at all, just text that is long enough";
    DF_ASSERT(df__tz_parse_tzif(junk, sizeof junk, &tz, NULL) != DF_OK);
    DF_ASSERT(tz == NULL);
    DF_ASSERT(df__tz_open("../../etc/passwd", &tz, NULL) != DF_OK);
    DF_ASSERT(df__tz_open("Not/AZone", &tz, NULL) != DF_OK);
}

DF_TEST(times_durations_and_intervals) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__fmt_time_of_day(&b, 3723, DF_UNIT_SECOND, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "01:02:03");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_time_of_day(&b, 3723123456789LL, DF_UNIT_NANO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "01:02:03.123456789");
    df_buf_reset(&b);
    DF_ASSERT_OK(df__fmt_time_of_day(&b, 3723123000LL, DF_UNIT_MICRO, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(b.data, "01:02:03.123");
    static const struct {
        int64_t v;
        df_time_unit u;
        const char *s;
    } durations[] = {
        {1234567, DF_UNIT_MILLI, "PT1234.567S"}, {-1, DF_UNIT_SECOND, "-PT1S"},
        {-1500, DF_UNIT_MILLI, "-PT1.5S"},      {86399999, DF_UNIT_NANO, "PT0.086399999S"},
        {0, DF_UNIT_SECOND, "P0D"},              {90061, DF_UNIT_SECOND, "PT90061S"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(durations); i++) {
        df_buf_reset(&b);
        DF_ASSERT_OK(df__fmt_duration(&b, durations[i].v, durations[i].u, NULL), (df_error *)NULL);
        DF_ASSERT_EQ_STR(b.data, durations[i].s);
    }
    static const struct {
        int32_t m, d;
        int64_t ns;
        const char *s;
    } intervals[] = {
        {1, 2, 3 * 3600000000000LL, "1 mons 2 days 3 hours"},
        {-12, 0, -3000000000LL, "-12 mons -3.000000000 secs"},
        {0, 0, 1500000000LL, "1.500000000 secs"},
        {0, 0, 0, "0 secs"},
        {0, 1, 0, "1 days"},
        {0, 0, 25 * 3600000000000LL, "25 hours"},
        {0, 0, 1000000LL, "0.001000000 secs"},
        {24, 0, 1, "24 mons 0.000000001 secs"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(intervals); i++) {
        df_buf_reset(&b);
        DF_ASSERT_OK(df__fmt_interval_mdn(&b, intervals[i].m, intervals[i].d, intervals[i].ns, NULL),
                     (df_error *)NULL);
        DF_ASSERT_EQ_STR(b.data, intervals[i].s);
    }
    df_buf_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Nested values and widths                                                  */

DF_TEST(lists_structs_and_maps_render_like_arrow) {
    df_field elem;
    DF_ASSERT_OK(df_field_init(&elem, "element", df_type_int32(), true, NULL), (df_error *)NULL);
    df_type *lt = df_type_list(&elem);
    df_vec *list;
    DF_ASSERT_OK(df_vec_new(lt, 3, 0, &list, NULL), (df_error *)NULL);
    df_vec *child = list->children[0];
    DF_ASSERT_OK(df_vec_reserve(child, 4, NULL), (df_error *)NULL);
    int32_t *cv = DF_VEC_VALUES(child, int32_t);
    cv[0] = 1;
    cv[1] = 2;
    cv[2] = 0;
    DF_ASSERT_OK(df_vec_set_null(child, 2, NULL), (df_error *)NULL);
    df_vec_set_length(child, 3);
    int32_t *off = (int32_t *)(void *)list->values->data;
    off[0] = 0;
    off[1] = 3;   /* [1, 2, null] */
    off[2] = 3;   /* [] */
    off[3] = 3;   /* null */
    DF_ASSERT_OK(df_vec_set_null(list, 2, NULL), (df_error *)NULL);
    df_vec_set_length(list, 3);
    ASSERT_CELL(list, 0, "", "[1, 2, ]");
    ASSERT_CELL(list, 0, "null", "[1, 2, null]");
    ASSERT_CELL(list, 1, "", "[]");
    ASSERT_CELL(list, 2, "null", "null");
    df_vec_release(list);
    df_type_release(lt);
    df_field_clear(&elem);

    df_field fields[2];
    DF_ASSERT_OK(df_field_init(&fields[0], "a", df_type_int32(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&fields[1], "b", df_type_utf8(), true, NULL), (df_error *)NULL);
    df_type *st = df_type_struct(fields, 2);
    df_vec *sv;
    DF_ASSERT_OK(df_vec_new(st, 2, 16, &sv, NULL), (df_error *)NULL);
    DF_VEC_VALUES(sv->children[0], int32_t)[0] = 1;
    DF_VEC_VALUES(sv->children[0], int32_t)[1] = 0;
    DF_ASSERT_OK(df_vec_set_null(sv->children[0], 1, NULL), (df_error *)NULL);
    df_vec_set_length(sv->children[0], 2);
    DF_ASSERT_OK(df_vec_append_bytes(sv->children[1], "x", 1, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_vec_append_bytes(sv->children[1], NULL, 0, NULL), (df_error *)NULL);
    df_vec_set_length(sv, 2);
    ASSERT_CELL(sv, 0, "", "{a: 1, b: x}");
    ASSERT_CELL(sv, 1, "null", "{a: null, b: null}");
    df_vec_release(sv);
    df_type_release(st);
    df_field_clear(&fields[0]);
    df_field_clear(&fields[1]);

    df_field key, value;
    DF_ASSERT_OK(df_field_init(&key, "key", df_type_utf8(), false, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&value, "value", df_type_int64(), true, NULL), (df_error *)NULL);
    df_type *mt = df_type_map(&key, &value, false);
    df_vec *mv;
    DF_ASSERT_OK(df_vec_new(mt, 2, 16, &mv, NULL), (df_error *)NULL);
    df_vec *entries = mv->children[0];
    DF_ASSERT_OK(df_vec_append_bytes(entries->children[0], "k1", 2, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_vec_append_bytes(entries->children[0], "k2", 2, NULL), (df_error *)NULL);
    DF_VEC_VALUES(entries->children[1], int64_t)[0] = 1;
    DF_ASSERT_OK(df_vec_set_null(entries->children[1], 1, NULL), (df_error *)NULL);
    df_vec_set_length(entries->children[1], 2);
    df_vec_set_length(entries, 2);
    int32_t *mo = (int32_t *)(void *)mv->values->data;
    mo[0] = 0;
    mo[1] = 2;
    mo[2] = 2;
    df_vec_set_length(mv, 2);
    ASSERT_CELL(mv, 0, "", "{k1: 1, k2: }");
    ASSERT_CELL(mv, 1, "", "{}");
    df_vec_release(mv);
    df_type_release(mt);
    df_field_clear(&key);
    df_field_clear(&value);
}

DF_TEST(binary_is_lower_hex) {
    const char *vals[] = {"\x00\xff", "", "abc", NULL};
    int32_t lens[] = {2, 0, 3, 0};
    df_vec *v = vec_bytes(df_type_binary(), vals, lens, 4);
    ASSERT_CELL(v, 0, "", "00ff");
    ASSERT_CELL(v, 1, "null", "");
    ASSERT_CELL(v, 2, "", "616263");
    ASSERT_CELL(v, 3, "null", "null");
    df_vec_release(v);
}

DF_TEST(display_widths_follow_terminal_rules) {
    DF_ASSERT_EQ_INT(df__fmt_text_width("abc", 3), 3);
    DF_ASSERT_EQ_INT(df__fmt_text_width("tab\there", 8), 8);             /* controls count one */
    DF_ASSERT_EQ_INT(df__fmt_text_width("e\0f", 3), 3);
    DF_ASSERT_EQ_INT(df__fmt_text_width("a\xcc\x81" "b", 4), 2);           /* combining acute */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xf0\x9f\x98\x80", 4), 2);        /* emoji */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xe4\xb8\xad\xe6\x96\x87", 6), 4); /* two CJK */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xe2\x80\x8b", 3), 0);            /* zero width space */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xc2\xad", 2), 0);                /* soft hyphen */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xef\xbd\xb1", 3), 1);            /* halfwidth katakana */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", 8), 2); /* thumbs up + tone */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xe3\x80\x80", 3), 2);            /* ideographic space */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xed\x9e\xb0", 3), 0);            /* hangul jungseong */
    DF_ASSERT_EQ_INT(df__fmt_text_width("\xff", 1), 1);                     /* invalid byte */
}

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */

/* The reference's demo table: every common scalar type with nulls. */
static df_batch *demo_batch(void) {
    df_field f[8];
    df_type *dec = df_type_decimal(10, 2);
    df_type *ts = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    DF_ASSERT_OK(df_field_init(&f[0], "id", df_type_int64(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[1], "name", df_type_utf8(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[2], "amount", dec, true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[3], "d", df_type_date32(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[4], "ts", ts, true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[5], "flag", df_type_bool(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[6], "f", df_type_float64(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[7], "bin", df_type_binary(), true, NULL), (df_error *)NULL);
    df_schema *schema;
    DF_ASSERT_OK(df_schema_new(f, 8, &schema, NULL), (df_error *)NULL);
    for (int i = 0; i < 8; i++) df_field_clear(&f[i]);

    df_vec *cols[8];
    int64_t ids[] = {1, 2, 3, 0};
    bool id_valid[] = {true, true, true, false};
    cols[0] = vec_i64(ids, id_valid, 4);
    const char *names[] = {"a", "b<&>\"'", NULL, "\xc3\xbcn\xc3\xaf"};
    cols[1] = vec_bytes(df_type_utf8(), names, NULL, 4);
    DF_ASSERT_OK(df_vec_new(dec, 4, 0, &cols[2], NULL), (df_error *)NULL);
    df_i128 amounts[] = {150, -2005, 0, 0};
    for (int i = 0; i < 4; i++) DF_VEC_VALUES(cols[2], df_i128)[i] = amounts[i];
    DF_ASSERT_OK(df_vec_set_null(cols[2], 2, NULL), (df_error *)NULL);
    df_vec_set_length(cols[2], 4);
    DF_ASSERT_OK(df_vec_new(df_type_date32(), 4, 0, &cols[3], NULL), (df_error *)NULL);
    int32_t days[] = {19724, 0, -1, 11016};
    for (int i = 0; i < 4; i++) DF_VEC_VALUES(cols[3], int32_t)[i] = days[i];
    DF_ASSERT_OK(df_vec_set_null(cols[3], 1, NULL), (df_error *)NULL);
    df_vec_set_length(cols[3], 4);
    int64_t micros[] = {1704164645123456LL, 0, -999999LL, 951782400000000LL};
    bool ts_valid[] = {true, false, true, true};
    cols[4] = vec_typed_i64(ts, micros, ts_valid, 4);
    DF_ASSERT_OK(df_vec_new(df_type_bool(), 4, 0, &cols[5], NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_vec_ensure_validity(cols[5], 4, NULL), (df_error *)NULL);
    uint8_t *bits = cols[5]->values->data;
    bits[0] = 0x9;   /* true, false, false, true */
    DF_ASSERT_OK(df_vec_set_null(cols[5], 2, NULL), (df_error *)NULL);
    df_vec_set_length(cols[5], 4);
    DF_ASSERT_OK(df_vec_new(df_type_float64(), 4, 0, &cols[6], NULL), (df_error *)NULL);
    double fl[] = {1.5, 0, NAN, 1e20};
    for (int i = 0; i < 4; i++) DF_VEC_VALUES(cols[6], double)[i] = fl[i];
    DF_ASSERT_OK(df_vec_set_null(cols[6], 1, NULL), (df_error *)NULL);
    df_vec_set_length(cols[6], 4);
    const char *bins[] = {"\x00\xff", NULL, "", "abc"};
    int32_t blen[] = {2, 0, 0, 3};
    cols[7] = vec_bytes(df_type_binary(), bins, blen, 4);
    df_batch *batch;
    DF_ASSERT_OK(df_batch_new(schema, cols, 4, &batch, NULL), (df_error *)NULL);
    df_schema_release(schema);
    df_type_release(dec);
    df_type_release(ts);
    return batch;
}

static const char demo_text[] =
    "+----+--------+--------+------------+-----------------------------+-------+------+--------+\n"
    "| id | name   | amount | d          | ts                          | flag  | f    | bin    |\n"
    "+----+--------+--------+------------+-----------------------------+-------+------+--------+\n"
    "| 1  | a      | 1.50   | 2024-01-02 | 2024-01-02T03:04:05.123456Z | true  | 1.5  | 00ff   |\n"
    "| 2  | b<&>\"' | -20.05 |            |                             | false |      |        |\n"
    "| 3  |        |        | 1969-12-31 | 1969-12-31T23:59:59.000001Z |       | NaN  |        |\n"
    "|    | \xc3\xbcn\xc3\xaf    | 0.00   | 2000-02-29 | 2000-02-29T00:00:00Z        | true  | 1e20 | 616263 |\n"
    "+----+--------+--------+------------+-----------------------------+-------+------+--------+";

DF_TEST(text_grid_matches_reference) {
    df_batch *b = demo_batch();
    df_fmt_input in = {b->schema, &b, 1, 20};
    char *text;
    DF_ASSERT_OK(df__fmt_text_table(&in, &text, NULL, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(text, demo_text);
    df_free(text);
    /* Two rows only. */
    in.max_rows = 2;
    DF_ASSERT_OK(df__fmt_text_table(&in, &text, NULL, NULL), (df_error *)NULL);
    DF_ASSERT(strstr(text, "1969") == NULL);
    DF_ASSERT(strstr(text, "| 2  | b<&>\"' |") != NULL);
    df_free(text);
    /* No rows: the reference prints an empty frame. */
    in.max_rows = 0;
    DF_ASSERT_OK(df__fmt_text_table(&in, &text, NULL, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(text, "++\n++");
    df_free(text);
    df_batch_release(b);
}

DF_TEST(text_grid_splits_multiline_cells) {
    df_field f[2];
    DF_ASSERT_OK(df_field_init(&f[0], "x\ny", df_type_utf8(), true, NULL), (df_error *)NULL);
    DF_ASSERT_OK(df_field_init(&f[1], "z", df_type_int64(), true, NULL), (df_error *)NULL);
    df_schema *schema;
    DF_ASSERT_OK(df_schema_new(f, 2, &schema, NULL), (df_error *)NULL);
    df_field_clear(&f[0]);
    df_field_clear(&f[1]);
    const char *vals[] = {"a\nb"};
    int64_t one[] = {1};
    df_vec *cols[2] = {vec_bytes(df_type_utf8(), vals, NULL, 1), vec_i64(one, NULL, 1)};
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(schema, cols, 1, &b, NULL), (df_error *)NULL);
    df_schema_release(schema);
    df_fmt_input in = {b->schema, &b, 1, -1};
    char *text;
    DF_ASSERT_OK(df__fmt_text_table(&in, &text, NULL, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(text, "+---+---+\n| x | z |\n| y |   |\n+---+---+\n| a | 1 |\n| b |   |\n+---+---+");
    df_free(text);
    df_batch_release(b);
}

static const char demo_html_body[] =
    "<div class=\"df-wrap\"><table><thead><tr><th class=\"df-num\"><span>id</span><br><span class=\"df-type\">Int64"
    "</span></th><th><span>name</span><br><span class=\"df-type\">Utf8</span></th><th class=\"df-num\"><span>amount"
    "</span><br><span class=\"df-type\">Decimal128(10, 2)</span></th><th><span>d</span><br><span class=\"df-type\">"
    "Date32</span></th>";

static const char demo_html_rows[] =
    "<tbody><tr><td class=\"df-num\">1</td><td>a</td><td class=\"df-num\">1.50</td><td>2024-01-02</td><td>"
    "2024-01-02T03:04:05.123456Z</td><td>true</td><td class=\"df-num\">1.5</td><td>00ff</td></tr><tr><td "
    "class=\"df-num\">2</td><td>b&lt;&amp;&gt;&quot;&#39;</td><td class=\"df-num\">-20.05</td><td>null</td><td>null"
    "</td><td>false</td><td class=\"df-num\">null</td><td>null</td></tr><tr><td class=\"df-num\">3</td><td>null</td>"
    "<td class=\"df-num\">null</td><td>1969-12-31</td><td>1969-12-31T23:59:59.000001Z</td><td>null</td><td class="
    "\"df-num\">NaN</td><td></td></tr><tr><td class=\"df-num\">null</td><td>\xc3\xbcn\xc3\xaf</td><td class=\"df-num"
    "\">0.00</td><td>2000-02-29</td><td>2000-02-29T00:00:00Z</td><td>true</td><td class=\"df-num\">1e20</td><td>"
    "616263</td></tr></tbody></table></div><div class=\"df-footer\">Showing <b>4</b> rows, <b>8</b> columns.</div>"
    "</div>";

DF_TEST(html_matches_reference) {
    df_batch *b = demo_batch();
    df_fmt_input in = {b->schema, &b, 1, 20};
    char *html;
    DF_ASSERT_OK(df__fmt_html_table(&in, &html, NULL, NULL), (df_error *)NULL);
    DF_ASSERT(strncmp(html, "<div class=\"deltafunnel-preview\"><style>.deltafunnel-preview{font-family:", 73) == 0);
    DF_ASSERT(strstr(html, "</style>" "<div class=\"df-wrap\">") != NULL);
    DF_ASSERT(strstr(html, demo_html_body) != NULL);
    DF_ASSERT(strstr(html, demo_html_rows) != NULL);
    df_free(html);
    in.max_rows = 0;
    DF_ASSERT_OK(df__fmt_html_table(&in, &html, NULL, NULL), (df_error *)NULL);
    DF_ASSERT(strstr(html, "<tbody></tbody></table></div><div class=\"df-footer\">Showing <b>0</b> rows, <b>8</b> "
                           "columns.</div></div>") != NULL);
    df_free(html);
    df_batch_release(b);
}
