/*
 * Row plans of the bulk decoder (src/mssql/bulk_decode.c): the discard
 * path of the loopback peer.  Every case decodes a bulk message twice, row
 * by row (df__tds_bulk_decode) and through the plan
 * (df__tds_bulk_decode_planned), and requires the same rows and the same
 * error kind and text: valid values of every planned type, every truncation
 * point, malformed lengths, out-of-range values, wrong tokens, and single
 * byte mutations of a mixed message.  The skim itself is checked for where
 * and why it stops.
 */
#include "df_test.h"

#include "mssql/tds.h"

/* ---- message builders ---- */

static void put_col(df_buf *b, const uint8_t *typeinfo, size_t n) {
    df__tds_put_u32(b, 0, NULL);
    df__tds_put_u16(b, 1, NULL);
    df_buf_append(b, typeinfo, n, NULL);
    df__tds_put_bvarchar(b, "c", NULL);
}

/* COLMETADATA for one column of TYPE_INFO ti[0, n). */
static void meta1(df_buf *b, const uint8_t *ti, size_t n) {
    df_buf_reset(b);
    df__tds_put_u8(b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(b, 1, NULL);
    put_col(b, ti, n);
}

static void put_done(df_buf *b) {
    df__tds_put_u8(b, TDS_TOK_DONE, NULL);
    df__tds_put_u16(b, 0, NULL);
    df__tds_put_u16(b, 0, NULL);
    df__tds_put_u64(b, 0, NULL);
}

static void put_row(df_buf *b, const void *value, size_t n) {
    df__tds_put_u8(b, TDS_TOK_ROW, NULL);
    df_buf_append(b, value, n, NULL);
}

/* Decodes p[0, n) both ways; fails the test unless rows, kind and message agree.  Returns the kind. */
static df_errkind same_both_ways(const uint8_t *p, size_t n, int64_t *rows_out) {
    df_error e1 = {0}, e2 = {0};
    int64_t r1 = -1, r2 = -1;
    df_errkind k1 = df__tds_bulk_decode(p, n, -1, &r1, &e1);
    df_errkind k2 = df__tds_bulk_decode_planned(p, n, -1, &r2, &e2);
    if (k1 != k2 || strcmp(e1.message, e2.message) || (k1 == DF_OK && r1 != r2))
        df_test_fail(__FILE__, __LINE__, "row-by-row: %d %lld '%s'; planned: %d %lld '%s' (n=%zu)", (int)k1, (long long)r1,
                     e1.message, (int)k2, (long long)r2, e2.message, n);
    df_error_clear(&e1);
    df_error_clear(&e2);
    if (rows_out) *rows_out = r1;
    return k1;
}

/* Every prefix of the message (every truncation point) decodes the same both ways. */
static void every_prefix_same(const df_buf *b) {
    for (size_t n = 0; n <= b->len; n++) same_both_ways((const uint8_t *)b->data, n, NULL);
}

/* One column of ti, one row of the value bytes, DONE: returns the kind (both decoders agree). */
static df_errkind one_value(const uint8_t *ti, size_t tin, const uint8_t *v, size_t vn, int64_t *rows) {
    df_buf b;
    df_buf_init(&b, 0);
    meta1(&b, ti, tin);
    put_row(&b, v, vn);
    put_row(&b, v, vn);
    put_done(&b);
    df_errkind k = same_both_ways((const uint8_t *)b.data, b.len, rows);
    df_buf_free(&b);
    return k;
}

#define ONE_OK(ti, v)                                                                     \
    do {                                                                                  \
        int64_t rows_ = 0;                                                                \
        DF_ASSERT_EQ_INT(one_value(ti, sizeof ti, v, sizeof v, &rows_), DF_OK);           \
        DF_ASSERT_EQ_INT(rows_, 2);                                                       \
    } while (0)
#define ONE_BAD(ti, v) DF_ASSERT_EQ_INT(one_value(ti, sizeof ti, v, sizeof v, NULL), DF_ERR_TDS_PROTOCOL)

static const uint8_t T_INT8[] = {TDS_T_INT8};
static const uint8_t T_INTN8[] = {TDS_T_INTN, 8};
static const uint8_t T_BITN[] = {TDS_T_BITN, 1};
static const uint8_t T_FLTN8[] = {TDS_T_FLTN, 8};
static const uint8_t T_GUID[] = {TDS_T_GUID, 16};
static const uint8_t T_DATEN[] = {TDS_T_DATEN};
static const uint8_t T_TIME3[] = {TDS_T_TIMEN, 3};
static const uint8_t T_DT2_7[] = {TDS_T_DATETIME2N, 7};
static const uint8_t T_DTO_0[] = {TDS_T_DATETIMEOFFSETN, 0};
static const uint8_t T_DEC_18_4[] = {TDS_T_DECIMALN, 9, 18, 4};
static const uint8_t T_DEC_38_0[] = {TDS_T_NUMERICN, 17, 38, 0};
static const uint8_t T_DATETIME[] = {TDS_T_DATETIME};
static const uint8_t T_DATETIMN[] = {TDS_T_DATETIMN, 8};
static const uint8_t T_NVARCHAR10[] = {TDS_T_NVARCHAR, 10, 0, 0x09, 0x04, 0xD0, 0x00, 0x34};
static const uint8_t T_NVARCHARMAX[] = {TDS_T_NVARCHAR, 0xFF, 0xFF, 0x09, 0x04, 0xD0, 0x00, 0x34};

DF_TEST(plan_accepts_valid_values_of_every_planned_type) {
    ONE_OK(T_INT8, ((uint8_t[]){1, 2, 3, 4, 5, 6, 7, 0x80}));
    ONE_OK(T_INTN8, ((uint8_t[]){8, 1, 2, 3, 4, 5, 6, 7, 8}));
    ONE_OK(T_INTN8, ((uint8_t[]){2, 0xFF, 0x7F}));           /* narrower than declared: accepted */
    ONE_OK(T_INTN8, ((uint8_t[]){0}));                       /* NULL */
    ONE_OK(T_BITN, ((uint8_t[]){1, 7}));
    ONE_OK(T_FLTN8, ((uint8_t[]){4, 0, 0, 0x80, 0x3F}));
    ONE_OK(T_GUID, ((uint8_t[]){16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
    ONE_OK(T_DATEN, ((uint8_t[]){3, 0xDA, 0xB9, 0x37}));      /* 9999-12-31 = day 3652058 */
    ONE_OK(T_TIME3, ((uint8_t[]){4, 0xFF, 0x5B, 0x26, 0x05})); /* 86399999 ms: 23:59:59.999 */
    ONE_OK(T_DT2_7, ((uint8_t[]){8, 0, 0, 0, 0, 0, 0, 0, 0}));
    ONE_OK(T_DTO_0, ((uint8_t[]){8, 0, 0, 0, 1, 0, 0, 0x48, 0x03})); /* +14:00 */
    ONE_OK(T_DTO_0, ((uint8_t[]){8, 0, 0, 0, 1, 0, 0, 0xB8, 0xFC})); /* -14:00 */
    ONE_OK(T_DEC_18_4, ((uint8_t[]){9, 0, 0xFF, 0xFF, 0x63, 0xA7, 0xB3, 0xB6, 0xE0, 0x0D})); /* -(10^18 - 1) */
    ONE_OK(T_DEC_38_0, ((uint8_t[]){17, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F, 0x22, 0x8A, 0x09, 0x7A, 0xC4, 0x86, 0x5A,
                                    0xA8, 0x4C, 0x3B, 0x4B})); /* 10^38 - 1 */
    ONE_OK(T_DEC_38_0, ((uint8_t[]){5, 1, 1, 0, 0, 0}));      /* short form in a wide column */
    ONE_OK(T_DATETIME, ((uint8_t[]){0, 0, 0, 0, 0xFF, 0x81, 0x8B, 0x01})); /* 25919999 ticks */
    ONE_OK(T_DATETIMN, ((uint8_t[]){4, 0, 0, 0x9F, 0x05}));   /* smalldatetime 23:59 */
    ONE_OK(T_NVARCHAR10, ((uint8_t[]){4, 0, 'h', 0, 'i', 0}));
    ONE_OK(T_NVARCHAR10, ((uint8_t[]){0xFF, 0xFF}));
    ONE_OK(T_NVARCHARMAX, ((uint8_t[]){0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0, 'a', 0, 2, 0, 0, 0,
                                       'b', 0, 0, 0, 0, 0}));
    ONE_OK(T_NVARCHARMAX, ((uint8_t[]){4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 'a', 0, 'b', 0, 0, 0, 0, 0}));
    ONE_OK(T_NVARCHARMAX, ((uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
}

DF_TEST(plan_rejects_bad_lengths_and_ranges_with_the_same_errors) {
    ONE_BAD(T_INTN8, ((uint8_t[]){3, 1, 2, 3}));
    ONE_BAD(T_INTN8, ((uint8_t[]){200}));                    /* length beyond the bit mask */
    ONE_BAD(T_BITN, ((uint8_t[]){2, 1, 1}));
    ONE_BAD(T_FLTN8, ((uint8_t[]){2, 1, 1}));
    ONE_BAD(T_GUID, ((uint8_t[]){15, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
    ONE_BAD(T_DATEN, ((uint8_t[]){3, 0xDB, 0xB9, 0x37}));     /* day 3652059 */
    ONE_BAD(T_DATEN, ((uint8_t[]){4, 0, 0, 0, 0}));
    ONE_BAD(T_TIME3, ((uint8_t[]){4, 0x00, 0x5C, 0x26, 0x05})); /* 86400000 ms */
    ONE_BAD(T_TIME3, ((uint8_t[]){5, 0, 0, 0, 0, 0}));
    ONE_BAD(T_DT2_7, ((uint8_t[]){8, 0, 0, 0, 0, 0, 0xDB, 0xB9, 0x37}));
    ONE_BAD(T_DTO_0, ((uint8_t[]){8, 0, 0, 0, 1, 0, 0, 0x49, 0x03})); /* +14:01 */
    ONE_BAD(T_DEC_18_4, ((uint8_t[]){9, 1, 0x00, 0x00, 0x64, 0xA7, 0xB3, 0xB6, 0xE0, 0x0D})); /* 10^18 */
    ONE_BAD(T_DEC_18_4, ((uint8_t[]){9, 2, 0, 0, 0, 0, 0, 0, 0, 0}));                           /* sign byte */
    ONE_BAD(T_DEC_18_4, ((uint8_t[]){1, 1}));
    ONE_BAD(T_DEC_38_0, ((uint8_t[]){18, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    ONE_BAD(T_DEC_38_0, ((uint8_t[]){17, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x4C})); /* > 10^38 */
    ONE_BAD(T_DATETIME, ((uint8_t[]){0, 0, 0, 0, 0x00, 0x82, 0x8B, 0x01}));
    ONE_BAD(T_DATETIMN, ((uint8_t[]){4, 0, 0, 0xA0, 0x05}));
    ONE_BAD(T_DATETIMN, ((uint8_t[]){2, 0, 0}));
    ONE_BAD(T_NVARCHAR10, ((uint8_t[]){12, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
    ONE_BAD(T_NVARCHARMAX, ((uint8_t[]){4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 0, 0, 0, 0})); /* total 4, chunks 2 */
}

/* A message with one column of each planned kind and rows mixing NULLs and values. */
static void mixed_message(df_buf *b, int nrows) {
    static const uint8_t *const tis[] = {T_INT8, T_INTN8, T_BITN, T_GUID, T_DATEN, T_DT2_7, T_DTO_0, T_DEC_18_4,
                                          T_DATETIMN, T_NVARCHAR10, T_NVARCHARMAX};
    static const size_t tin[] = {sizeof T_INT8, sizeof T_INTN8, sizeof T_BITN, sizeof T_GUID, sizeof T_DATEN,
                                 sizeof T_DT2_7, sizeof T_DTO_0, sizeof T_DEC_18_4, sizeof T_DATETIMN,
                                 sizeof T_NVARCHAR10, sizeof T_NVARCHARMAX};
    df_buf_reset(b);
    df__tds_put_u8(b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(b, (uint16_t)DF_ARRAY_LEN(tis), NULL);
    for (size_t i = 0; i < DF_ARRAY_LEN(tis); i++) put_col(b, tis[i], tin[i]);
    for (int r = 0; r < nrows; r++) {
        bool null = r % 3 == 1;
        df__tds_put_u8(b, TDS_TOK_ROW, NULL);
        df__tds_put_u64(b, (uint64_t)r * 77, NULL);
        if (null) df__tds_put_u8(b, 0, NULL);
        else { df__tds_put_u8(b, 4, NULL); df__tds_put_u32(b, (uint32_t)r, NULL); }
        df_buf_append(b, null ? "\0" : "\1\1", null ? 1 : 2, NULL);
        if (null) df__tds_put_u8(b, 0, NULL);
        else { df__tds_put_u8(b, 16, NULL); for (int i = 0; i < 16; i++) df__tds_put_u8(b, (uint8_t)(r + i), NULL); }
        df_buf_append(b, "\3\1\2\3", 4, NULL);
        df_buf_append(b, "\x08\1\2\3\4\5\6\7\0", 9, NULL);
        df_buf_append(b, null ? "\0" : "\x08\0\0\0\1\0\0\x48\x03", null ? 1 : 9, NULL);
        df_buf_append(b, "\x05\1\x39\x30\0\0", 6, NULL);
        df_buf_append(b, "\x04\0\0\x10\0", 5, NULL);
        if (null) df__tds_put_u16(b, 0xFFFF, NULL);
        else df_buf_append(b, "\x04\0x\0y\0", 6, NULL);
        if (null) df__tds_put_u64(b, UINT64_MAX, NULL);
        else df_buf_append(b, "\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x02\0\0\0z\0\0\0\0\0", 18, NULL);
    }
    put_done(b);
}

DF_TEST(plan_matches_row_by_row_at_every_truncation_point) {
    df_buf b;
    df_buf_init(&b, 0);
    mixed_message(&b, 4);
    int64_t rows = 0;
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, &rows), DF_OK);
    DF_ASSERT_EQ_INT(rows, 4);
    every_prefix_same(&b);
    /* fixed-width only: the stride path */
    meta1(&b, T_INT8, sizeof T_INT8);
    for (int i = 0; i < 5; i++) put_row(&b, "\1\2\3\4\5\6\7\x08", 8);
    put_done(&b);
    every_prefix_same(&b);
    df_buf_free(&b);
}

DF_TEST(plan_matches_row_by_row_under_single_byte_mutations) {
    df_buf b;
    df_buf_init(&b, 0);
    mixed_message(&b, 3);
    static const uint8_t repl[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x08, 0x09, 0x10, 0x11, 0x7F, 0x80,
                                   0xD1, 0xD2, 0xFD, 0xFE, 0xFF};
    for (size_t i = 0; i < b.len; i++) {
        uint8_t orig = (uint8_t)b.data[i];
        for (size_t j = 0; j < sizeof repl; j++) {
            b.data[i] = (char)repl[j];
            same_both_ways((const uint8_t *)b.data, b.len, NULL);
        }
        b.data[i] = (char)orig;
    }
    df_buf_free(&b);
}

DF_TEST(plan_leaves_tokens_and_trailing_bytes_to_the_general_reader) {
    df_buf b;
    df_buf_init(&b, 0);
    meta1(&b, T_INTN8, sizeof T_INTN8);
    put_row(&b, "\x01\x05", 2);
    df__tds_put_u8(&b, TDS_TOK_NBCROW, NULL);             /* not allowed in bulk streams */
    df_buf_append(&b, "\x00\x01\x05", 3, NULL);
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, NULL), DF_ERR_TDS_PROTOCOL);
    meta1(&b, T_INTN8, sizeof T_INTN8);
    put_row(&b, "\x01\x05", 2);
    put_done(&b);
    df__tds_put_u8(&b, 0, NULL);                          /* bytes after DONE */
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, NULL), DF_ERR_TDS_PROTOCOL);
    df_buf_free(&b);
}

/* Reads the metadata at b and compiles a plan (nonull may be NULL). */
static void plan_of(const df_buf *b, df__tds_bulk_meta *m, df__tds_bulk_plan *pl, const bool *nonull, size_t *meta_len) {
    df__tds_rd r;
    df_error err = {0};
    df__tds_rd_init(&r, b->data, b->len);
    DF_ASSERT_OK(df__tds_bulk_meta_read(&r, m, &err), &err);
    DF_ASSERT_OK(df__tds_bulk_plan_init(pl, m, nonull, &err), &err);
    *meta_len = (size_t)(r.p - r.start);
}

DF_TEST(skim_stops_at_short_rows_other_tokens_and_forbidden_nulls) {
    df_buf b;
    df_buf_init(&b, 0);
    df__tds_bulk_meta m;
    df__tds_bulk_plan pl;
    size_t off, used;
    df__tds_skim_stop why;
    /* fixed columns merge into one step; rows are a stride */
    df__tds_put_u8(&b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(&b, 3, NULL);
    put_col(&b, T_INT8, sizeof T_INT8);
    put_col(&b, (const uint8_t[]){TDS_T_INT4}, 1);
    put_col(&b, (const uint8_t[]){TDS_T_BIT}, 1);
    for (int i = 0; i < 3; i++) put_row(&b, "\1\2\3\4\5\6\7\x08\1\2\3\4\1", 13);
    plan_of(&b, &m, &pl, NULL, &off);
    DF_ASSERT_EQ_INT(pl.nsteps, 1);
    DF_ASSERT_EQ_UINT(pl.fixed_row, 14);
    const uint8_t *rows = (const uint8_t *)b.data + off;
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, rows, 42, SIZE_MAX, &used, &why), 3);
    DF_ASSERT_EQ_UINT(used, 42);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_END);
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, rows, 41, SIZE_MAX, &used, &why), 2);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_SHORT);
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, rows, 42, 1, &used, &why), 1);
    DF_ASSERT_EQ_UINT(used, 14);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_END);
    b.data[off + 14] = (char)TDS_TOK_DONE;
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, rows, 42, SIZE_MAX, &used, &why), 1);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_OTHER);
    df__tds_bulk_plan_free(&pl);
    df_free(m.ti);

    /* a NULL in a column the caller marks NOT NULL stops the skim */
    meta1(&b, T_INTN8, sizeof T_INTN8);
    put_row(&b, "\x01\x05", 2);
    put_row(&b, "\x00", 1);
    put_row(&b, "\x01\x05", 2);
    bool nonull[1] = {true};
    plan_of(&b, &m, &pl, nonull, &off);
    rows = (const uint8_t *)b.data + off;
    size_t n = b.len - off;
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, rows, n, SIZE_MAX, &used, &why), 1);
    DF_ASSERT_EQ_UINT(used, 3);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_OTHER);
    df__tds_bulk_plan_free(&pl);
    df_free(m.ti);
    df_buf_free(&b);
}

DF_TEST(plan_refuses_types_it_does_not_cover) {
    df_buf b;
    df_buf_init(&b, 0);
    static const uint8_t t_text[] = {TDS_T_TEXT, 0xFF, 0xFF, 0xFF, 0x7F, 0x09, 0x04, 0xD0, 0x00, 0x34, 0x01, 0x00, 't', 0};
    meta1(&b, t_text, sizeof t_text);
    df__tds_rd r;
    df_error err = {0};
    df__tds_rd_init(&r, b.data, b.len);
    df__tds_bulk_meta m;
    DF_ASSERT_OK(df__tds_bulk_meta_read(&r, &m, &err), &err);
    df__tds_bulk_plan pl;
    DF_ASSERT_KIND(df__tds_bulk_plan_init(&pl, &m, NULL, &err), DF_ERR_UNSUPPORTED);
    DF_ASSERT(pl.steps == NULL);
    df_free(m.ti);
    /* rows of such columns still decode the same both ways (without a plan) */
    put_row(&b, "\x00", 1);
    put_done(&b);
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, NULL), DF_OK);
    df_buf_free(&b);
}

/* The narrow nullable table as bulk clients send it: bigint, int, float, bit as INTN/FLTN/BITN. */
static void narrow_message(df_buf *b, int nrows) {
    static const uint8_t t_intn4[] = {TDS_T_INTN, 4};
    df_buf_reset(b);
    df__tds_put_u8(b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(b, 4, NULL);
    put_col(b, T_INTN8, sizeof T_INTN8);
    put_col(b, t_intn4, sizeof t_intn4);
    put_col(b, T_FLTN8, sizeof T_FLTN8);
    put_col(b, T_BITN, sizeof T_BITN);
    for (int r = 0; r < nrows; r++) {
        df__tds_put_u8(b, TDS_TOK_ROW, NULL);
        df__tds_put_u8(b, 8, NULL);
        df__tds_put_u64(b, (uint64_t)r, NULL);
        if (r == 2) df__tds_put_u8(b, 0, NULL);                      /* a NULL */
        else if (r == 3) { df__tds_put_u8(b, 2, NULL); df__tds_put_u16(b, 7, NULL); } /* narrower than declared */
        else { df__tds_put_u8(b, 4, NULL); df__tds_put_u32(b, (uint32_t)r, NULL); }
        df__tds_put_u8(b, 8, NULL);
        df__tds_put_u64(b, 0x3FF0000000000000ull, NULL);
        df_buf_append(b, "\1\1", 2, NULL);
    }
    put_done(b);
}

DF_TEST(plan_row_shape_matches_row_by_row) {
    df_buf b;
    df_buf_init(&b, 0);
    narrow_message(&b, 6);
    int64_t rows = 0;
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, &rows), DF_OK);
    DF_ASSERT_EQ_INT(rows, 6);
    every_prefix_same(&b);
    for (size_t i = 0; i < b.len; i++) {
        uint8_t orig = (uint8_t)b.data[i];
        for (unsigned v = 0; v < 256; v += 3) {
            b.data[i] = (char)v;
            same_both_ways((const uint8_t *)b.data, b.len, NULL);
        }
        b.data[i] = (char)orig;
    }
    /* the shape: 1 + 9 + 5 + 9 + 2 bytes, four length bytes */
    df__tds_bulk_meta m;
    df__tds_bulk_plan pl;
    size_t off, used;
    df__tds_skim_stop why;
    bool nonull[4] = {false, true, false, false};
    plan_of(&b, &m, &pl, nonull, &off);
    DF_ASSERT_EQ_UINT(pl.shape_row, 26);
    DF_ASSERT_EQ_INT(pl.nshape, 4);
    /* rows 0 and 1 have the shape, row 2 has a NULL where the caller forbids one */
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, (const uint8_t *)b.data + off, b.len - off, SIZE_MAX, &used, &why), 2);
    DF_ASSERT_EQ_UINT(used, 52);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_OTHER);
    df__tds_bulk_plan_free(&pl);
    df_free(m.ti);
    /* without that rule the NULL row and the narrow row take the steps and pass */
    plan_of(&b, &m, &pl, NULL, &off);
    DF_ASSERT_EQ_UINT(df__tds_bulk_rows_skim(&pl, (const uint8_t *)b.data + off, b.len - off, SIZE_MAX, &used, &why), 6);
    DF_ASSERT_EQ_INT(why, TDS_SKIM_OTHER); /* the DONE token */
    df__tds_bulk_plan_free(&pl);
    df_free(m.ti);
    df_buf_free(&b);
}

/* Appends a PLP value of unknown length in chunks of `chunk` bytes. */
static void put_plp_chunks(df_buf *b, const uint8_t *v, size_t n, size_t chunk) {
    df__tds_put_u64(b, 0xFFFFFFFFFFFFFFFEull, NULL);
    for (size_t o = 0; o < n; o += chunk) {
        size_t c = DF_MIN(chunk, n - o);
        df__tds_put_u32(b, (uint32_t)c, NULL);
        df_buf_append(b, v + o, c, NULL);
    }
    df__tds_put_u32(b, 0, NULL);
}

DF_TEST(row_read_keeps_several_assembled_plp_values_valid) {
    /* Two multi-chunk values: assembling the second grows the scratch buffer under the first. */
    df_buf b;
    df_buf_init(&b, 0);
    df__tds_put_u8(&b, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(&b, 3, NULL);
    put_col(&b, T_NVARCHARMAX, sizeof T_NVARCHARMAX);
    put_col(&b, T_NVARCHARMAX, sizeof T_NVARCHARMAX);
    put_col(&b, T_NVARCHARMAX, sizeof T_NVARCHARMAX);
    uint8_t a[40], z[5000], one[6] = {'o', 0, 'n', 0, 'e', 0};
    for (size_t i = 0; i < sizeof a; i++) a[i] = (uint8_t)('a' + i % 26);
    for (size_t i = 0; i < sizeof z; i++) z[i] = (uint8_t)(i * 7);
    size_t meta_len = b.len;
    df__tds_put_u8(&b, TDS_TOK_ROW, NULL);
    put_plp_chunks(&b, a, sizeof a, 16);
    put_plp_chunks(&b, one, sizeof one, 6);   /* one chunk: points into the message */
    put_plp_chunks(&b, z, sizeof z, 1000);
    df__tds_rd r;
    df_error err = {0};
    df__tds_rd_init(&r, b.data, b.len);
    df__tds_bulk_meta m;
    DF_ASSERT_OK(df__tds_bulk_meta_read(&r, &m, &err), &err);
    DF_ASSERT_EQ_UINT((size_t)(r.p - r.start), meta_len);
    r.p++;
    df_buf scratch;
    df_buf_init(&scratch, TDS_MAX_VALUE);
    df__tds_value vals[3];
    DF_ASSERT_OK(df__tds_bulk_row_read(&r, &m, &scratch, vals, &err), &err);
    DF_ASSERT_EQ_UINT(vals[0].len, sizeof a);
    DF_ASSERT(memcmp(vals[0].bytes, a, sizeof a) == 0);
    DF_ASSERT_EQ_UINT(vals[1].len, sizeof one);
    DF_ASSERT(memcmp(vals[1].bytes, one, sizeof one) == 0);
    DF_ASSERT_EQ_UINT(vals[2].len, sizeof z);
    DF_ASSERT(memcmp(vals[2].bytes, z, sizeof z) == 0);
    DF_ASSERT_EQ_UINT(df__tds_rd_left(&r), 0);
    put_done(&b);
    DF_ASSERT_EQ_INT(same_both_ways((const uint8_t *)b.data, b.len, NULL), DF_OK);
    df_buf_free(&scratch);
    df_free(m.ti);
    df_buf_free(&b);
}
