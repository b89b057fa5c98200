/*
 * Unit tests of whole files: our writer's files read back by our reader
 * (every supported type, codecs, dictionary on/off, row groups, pages),
 * projection, row-group selection, limits and laziness, statistics and
 * row-group pruning, the Delta statistics summary, and hostile files
 * (truncated, bad magic, huge or negative lengths).
 */
#include "df_test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "parquet/parquet.h"
#include "parquet_test_util.h"

#define NROWS 5000

static const char *tmp_file(void) {
    return tmp_file_named("/tmp/dfpqXXXXXX");
}

/* The test schema: one column per writable type, nullable ones with nulls. */
static df_schema *make_schema(void) {
    df_error e_ = {0}, *err = &e_;
    df_field f[12];
    df_type *ts = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    df_type *ntz = df_type_timestamp(DF_UNIT_MILLI, NULL);
    df_type *dec = df_type_decimal(20, 4);
    df_type *dec9 = df_type_decimal(9, 2);
    df_type *fx = df_type_fixed_binary(5);
    memset(f, 0, sizeof f);
    const char *names[12] = {"i32", "i64", "s", "b", "d", "dec", "ts", "date", "u8", "fx", "ntz", "dec9"};
    df_type *types[12] = {df_type_int32(), df_type_int64(), df_type_utf8(), df_type_bool(), df_type_float64(), dec,
                          ts, df_type_date32(), df_type_uint8(), fx, ntz, dec9};
    bool nullable[12] = {true, false, true, true, true, true, true, false, true, true, false, true};
    for (int i = 0; i < 12; i++) DF_ASSERT_OK(df_field_init(&f[i], names[i], types[i], nullable[i], err), err);
    df_schema *s;
    DF_ASSERT_OK(df_schema_new(f, 12, &s, err), err);
    for (int i = 0; i < 12; i++) df_field_clear(&f[i]);
    df_type_release(ts);
    df_type_release(ntz);
    df_type_release(dec);
    df_type_release(dec9);
    df_type_release(fx);
    return s;
}

static bool is_null_at(int col, int64_t r) {
    switch (col) {
    case 0: return r % 7 == 3;
    case 2: return r % 5 == 0;
    case 3: return r % 11 == 0;
    case 4: return r % 13 == 1;
    case 5: return r >= 1000 && r < 2000;   /* an all-null row group */
    case 6: return r % 3 == 0;
    case 8: return r % 17 == 0;
    case 9: return r % 2 == 0;
    case 11: return r % 4 == 2;
    default: return false;
    }
}

/* Rows [start, start + n) of the test data. */
static df_batch *make_batch(df_schema *schema, int64_t start, int64_t n) {
    df_error e_ = {0}, *err = &e_;
    df_vec *cols[12];
    for (int c = 0; c < 12; c++) {
        df_type *t = schema->fields[c].type;
        DF_ASSERT_OK(df_vec_new(t, n, n * 8, &cols[c], err), err);
        df_vec *v = cols[c];
        for (int64_t i = 0; i < n; i++) {
            int64_t r = start + i;
            if (t->id == DF_TYPE_UTF8) {
                char tmp[64];
                int len = snprintf(tmp, sizeof tmp, "value-%lld-%s", (long long)(r % 300), r % 2 ? "odd" : "even");
                DF_ASSERT_OK(df_vec_append_bytes(v, is_null_at(c, r) ? NULL : tmp, len, err), err);
                continue;
            }
            switch (c) {
            case 0: DF_VEC_VALUES(v, int32_t)[i] = (int32_t)(r * 3 - 7000); break;
            case 1: DF_VEC_VALUES(v, int64_t)[i] = r * 1000003LL - (1LL << 40); break;
            case 3: df_bit_put(v->values->data, i, r % 3 == 1); break;
            case 4: DF_VEC_VALUES(v, double)[i] = r % 100 == 50 ? NAN : (double)r / 8.0 - 100; break;
            case 5: DF_VEC_VALUES(v, df_i128)[i] = (df_i128)(r - 2500) * (df_i128)1000000007 * 1000; break;
            case 6: DF_VEC_VALUES(v, int64_t)[i] = 1600000000000000LL + r * 1234567; break;
            case 7: DF_VEC_VALUES(v, int32_t)[i] = (int32_t)(18000 + r % 400); break;
            case 8: DF_VEC_VALUES(v, uint8_t)[i] = (uint8_t)(r * 7); break;
            case 9: memcpy(DF_VEC_VALUES(v, uint8_t) + i * 5, (const uint8_t[]){(uint8_t)r, 1, 2, 3, (uint8_t)(r >> 8)}, 5); break;
            case 10: DF_VEC_VALUES(v, int64_t)[i] = -86400000LL + r * 60000; break;
            case 11: DF_VEC_VALUES(v, df_i128)[i] = r % 999 - 400; break;
            }
        }
        if (t->id != DF_TYPE_UTF8) {
            df_vec_set_length(v, n);
            for (int64_t i = 0; i < n; i++)
                if (is_null_at(c, start + i)) DF_ASSERT_OK(df_vec_set_null(v, i, err), err);
        }
    }
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(schema, cols, n, &b, err), err);
    return b;
}

static void write_file(const char *path, df_parquet_codec codec, bool dictionary, int64_t rg_rows,
                       df_parquet_file_summary *summary) {
    df_error e_ = {0}, *err = &e_;
    df_schema *schema = make_schema();
    df_parquet_write_options o = {0};
    o.codec = codec;
    o.row_group_rows = rg_rows;
    o.page_bytes = 2048;
    o.disable_dictionary = !dictionary;
    df_parquet_writer *w;
    DF_ASSERT_OK(df_parquet_writer_open(path, schema, &o, &w, err), err);
    for (int64_t start = 0; start < NROWS; start += 777) {
        df_batch *b = make_batch(schema, start, DF_MIN(777, NROWS - start));
        DF_ASSERT_OK(df_parquet_writer_write(w, b, err), err);
        df_batch_release(b);
    }
    DF_ASSERT_OK(df_parquet_writer_close(w, summary, err), err);
    df_schema_release(schema);
}

/* Compares row r of the expected data with element i of a read vector. */
static void check_value(const df_vec *got, int col, int64_t r, int64_t i) {
    df_error e_ = {0}, *err = &e_;
    static df_schema *schema;
    if (!schema) schema = make_schema();
    df_batch *exp = make_batch(schema, r, 1);
    df_scalar a, b;
    DF_ASSERT_OK(df_scalar_from_vec(&a, exp->cols[col], 0, err), err);
    DF_ASSERT_OK(df_scalar_from_vec(&b, got, i, err), err);
    if (a.is_null || b.is_null) {
        if (a.is_null != b.is_null) df_test_fail(__FILE__, __LINE__, "column %d row %lld: null mismatch", col, (long long)r);
    } else if (a.type->id == DF_TYPE_FLOAT64 && isnan(a.v.f64)) {
        DF_ASSERT(isnan(b.v.f64));
    } else {
        bool comparable;
        int c = df_scalar_compare(&a, &b, &comparable);
        if (!comparable || c != 0) df_test_fail(__FILE__, __LINE__, "column %d row %lld differs", col, (long long)r);
    }
    df_scalar_clear(&a);
    df_scalar_clear(&b);
    df_batch_release(exp);
}

/* Reads a file with options and checks every value against the generator. */
static int64_t read_and_check(const char *path, const df_parquet_read_options *o, const int32_t *col_of_output,
                              int64_t first_row) {
    df_error e_ = {0}, *err = &e_;
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, o, &s, err), err);
    df_parquet_file_close(f);   /* the stream keeps the file */
    int64_t row = first_row;
    for (;;) {
        df_batch *b;
        DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
        if (!b) break;
        for (int32_t c = 0; c < b->ncols; c++) {
            DF_ASSERT_OK(df_vec_validate(b->cols[c], true, err), err);
            for (int64_t i = 0; i < b->nrows; i += 1 + (i % 3))
                check_value(b->cols[c], col_of_output ? col_of_output[c] : c, row + i, i);
        }
        row += b->nrows;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    return row - first_row;
}

DF_TEST(writer_files_read_back_for_every_codec_and_encoding) {
    const df_parquet_codec codecs[] = {DF_PARQUET_UNCOMPRESSED, DF_PARQUET_SNAPPY, DF_PARQUET_ZSTD, DF_PARQUET_GZIP};
    for (size_t c = 0; c < DF_ARRAY_LEN(codecs); c++) {
        for (int dict = 0; dict <= 1; dict++) {
            const char *path = tmp_file();
            write_file(path, codecs[c], dict, 1000, NULL);
            df_parquet_read_options o = {0};
            o.batch_size = 333;
            DF_ASSERT_EQ_INT(read_and_check(path, &o, NULL, 0), NROWS);
            unlink(path);
        }
    }
}

DF_TEST(schema_of_written_files) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 1000, NULL);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_schema *want = make_schema();
    DF_ASSERT(df_schema_equals(df_parquet_file_schema(f), want));
    DF_ASSERT_EQ_INT(df_parquet_file_num_rows(f), NROWS);
    DF_ASSERT_EQ_INT(df_parquet_file_num_row_groups(f), 5);
    DF_ASSERT_EQ_INT(df_parquet_file_row_group_num_rows(f, 4), 1000);
    DF_ASSERT_EQ_INT(df_parquet_file_row_group_num_rows(f, 5), -1);
    DF_ASSERT_EQ_INT(df_parquet_file_num_leaves(f), 12);
    df_parquet_leaf_info li;
    DF_ASSERT(df_parquet_file_leaf(f, 2, &li));
    DF_ASSERT_EQ_STR(li.path, "s");
    DF_ASSERT_EQ_INT(li.physical, DF_PARQUET_BYTE_ARRAY);
    DF_ASSERT_EQ_INT(li.max_def, 1);
    DF_ASSERT_EQ_INT(df_parquet_file_find_leaf(f, "ts"), 6);
    DF_ASSERT_EQ_INT(df_parquet_file_find_leaf(f, "nope"), -1);
    DF_ASSERT(strstr(df_parquet_file_created_by(f), "deltafunnel") != NULL);
    DF_ASSERT(df_parquet_file_metadata(f, "missing") == NULL);
    df_schema_release(want);
    df_parquet_file_close(f);
    unlink(path);
}

DF_TEST(projection_row_groups_and_limit) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_ZSTD, true, 1000, NULL);
    int32_t cols[3] = {5, 2, 0};
    int32_t rgs[2] = {3, 1};
    df_parquet_read_options o = {0};
    o.columns = cols;
    o.ncolumns = 3;
    o.row_groups = rgs;
    o.nrow_groups = 1;
    o.batch_size = 100;
    DF_ASSERT_EQ_INT(read_and_check(path, &o, cols, 3000), 1000);
    o.row_groups = rgs + 1;
    DF_ASSERT_EQ_INT(read_and_check(path, &o, cols, 1000), 1000);
    o.row_groups = NULL;
    o.limit = 1234;
    DF_ASSERT_EQ_INT(read_and_check(path, &o, cols, 0), 1234);
    /* Leaf projection of a flat file is column projection in file order. */
    int32_t leaves[2] = {6, 1};
    df_parquet_read_options lo = {0};
    lo.leaves = leaves;
    lo.nleaves = 2;
    int32_t map[2] = {1, 6};
    DF_ASSERT_EQ_INT(read_and_check(path, &lo, map, 0), NROWS);
    /* Zero columns still count rows. */
    df_parquet_read_options zo = {0};
    zo.columns = cols;
    zo.ncolumns = 0;
    DF_ASSERT_EQ_INT(read_and_check(path, &zo, NULL, 0), NROWS);
    unlink(path);
}

DF_TEST(invalid_read_options) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_UNCOMPRESSED, false, 1000, NULL);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_batch_stream *s = (df_batch_stream *)1;
    int32_t bad[1] = {12};
    df_parquet_read_options o = {0};
    o.columns = bad;
    o.ncolumns = 1;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &o, &s, err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(s == NULL);
    int32_t twice[2] = {1, 1};
    o.columns = twice;
    o.ncolumns = 2;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &o, &s, err), DF_ERR_INVALID_ARGUMENT);
    df_parquet_read_options r = {0};
    r.row_groups = bad;
    r.nrow_groups = 1;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &r, &s, err), DF_ERR_INVALID_ARGUMENT);
    df_parquet_read_options l = {0};
    l.leaves = bad;
    l.nleaves = 1;
    DF_ASSERT_KIND(df_parquet_reader_open(f, &l, &s, err), DF_ERR_INVALID_ARGUMENT);
    df_parquet_file_close(f);
    unlink(path);
}

DF_TEST(first_rows_touch_only_the_first_pages) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 1000, NULL);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    df_parquet_read_options o = {0};
    o.batch_size = 20;
    o.limit = 20;
    o.metrics = &m;
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, &o, &s, err), err);
    df_batch *b;
    DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
    DF_ASSERT_EQ_INT(b->nrows, 20);
    df_batch_release(b);
    DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
    DF_ASSERT(b == NULL);
    df_batch_stream_close(s);
    DF_ASSERT_EQ_INT(m.row_groups_read, 1);
    DF_ASSERT_EQ_INT(m.rows_produced, 20);
    DF_ASSERT(m.pages_read <= 2 * 12);   /* a page (plus a dictionary) per column */
    DF_ASSERT((uint64_t)m.bytes_read * 5 < df_parquet_file_size(f));
    df_parquet_file_close(f);
    unlink(path);
}

DF_TEST(row_group_statistics_and_pruning) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 1000, NULL);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    df_column_stats st;
    /* i64 in row group 2: rows 2000..2999. */
    DF_ASSERT_OK(df_parquet_file_column_stats(f, 2, 1, &st, err), err);
    DF_ASSERT(st.has_min && st.has_max && st.has_null_count);
    DF_ASSERT_EQ_INT(st.min.v.i64, 2000 * 1000003LL - (1LL << 40));
    DF_ASSERT_EQ_INT(st.max.v.i64, 2999 * 1000003LL - (1LL << 40));
    DF_ASSERT_EQ_INT(st.null_count, 0);
    df_parquet_column_stats_clear(&st);
    /* Strings: exact byte-wise bounds; NaN never a bound; all-null decimal row group. */
    DF_ASSERT_OK(df_parquet_file_column_stats(f, 0, 2, &st, err), err);
    DF_ASSERT(st.min_exact && st.max_exact);
    DF_ASSERT_EQ_STR((char *)st.min.v.bytes.ptr, "value-1-odd");
    DF_ASSERT_EQ_STR((char *)st.max.v.bytes.ptr, "value-99-odd");
    df_parquet_column_stats_clear(&st);
    DF_ASSERT_OK(df_parquet_file_column_stats(f, 0, 4, &st, err), err);
    DF_ASSERT(st.has_min && !isnan(st.min.v.f64) && !isnan(st.max.v.f64));
    df_parquet_column_stats_clear(&st);
    DF_ASSERT_OK(df_parquet_file_column_stats(f, 1, 5, &st, err), err);
    DF_ASSERT(!st.has_min && st.null_count == 1000);
    df_parquet_column_stats_clear(&st);
    DF_ASSERT_KIND(df_parquet_file_column_stats(f, 9, 0, &st, err), DF_ERR_INVALID_ARGUMENT);

    /* i64 >= value inside row group 3 keeps groups 3 and 4 only. */
    df_scalar v = {0};
    v.type = df_type_int64();
    v.v.i64 = 3500 * 1000003LL - (1LL << 40);
    df_scan_predicate p = {.column = 1, .op = DF_PRED_GE, .nvalues = 1, .values = &v};
    int kept = 0;
    for (int rg = 0; rg < 5; rg++) kept += df_parquet_row_group_may_match(f, rg, &p, 1);
    DF_ASSERT_EQ_INT(kept, 2);
    df_scan_predicate isnull = {.column = 5, .op = DF_PRED_IS_NOT_NULL};
    DF_ASSERT(!df_parquet_row_group_may_match(f, 1, &isnull, 1));
    DF_ASSERT(df_parquet_row_group_may_match(f, 0, &isnull, 1));
    df_parquet_file_close(f);

    /* The reader applies the predicates: rows of groups 3 and 4 only, counted as pruned. */
    df_scan_metrics m;
    memset(&m, 0, sizeof m);
    df_parquet_read_options o = {0};
    o.predicates = &p;
    o.npredicates = 1;
    o.metrics = &m;
    DF_ASSERT_EQ_INT(read_and_check(path, &o, NULL, 3000), 2000);
    (void)m;
    unlink(path);
}

DF_TEST(summary_gives_delta_statistics) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    df_parquet_file_summary s;
    write_file(path, DF_PARQUET_SNAPPY, true, 2000, &s);
    DF_ASSERT_EQ_INT(s.num_rows, NROWS);
    DF_ASSERT_EQ_INT(s.num_row_groups, 3);
    DF_ASSERT_EQ_INT(s.ncolumns, 12);
    DF_ASSERT_EQ_STR(s.columns[0].name, "i32");
    DF_ASSERT_EQ_INT(s.columns[0].stats.min.v.i64, -7000);
    int64_t nulls = 0;
    for (int64_t r = 0; r < NROWS; r++) nulls += is_null_at(0, r);
    DF_ASSERT_EQ_INT(s.columns[0].stats.null_count, nulls);
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_parquet_file_summary_json(&s, &b, err), err);
    DF_ASSERT(strncmp(b.data, "{\"numRecords\":5000,\"minValues\":{\"i32\":-7000,", 44) == 0);
    DF_ASSERT(strstr(b.data, "\"date\":\"2019-04-14\"") != NULL);            /* 18000 days */
    DF_ASSERT(strstr(b.data, "\"ts\":\"2020-09-13T12:26:41.234Z\"") != NULL); /* row 1: 1600000001234567 us */
    DF_ASSERT(strstr(b.data, "\"ntz\":\"1969-12-31T00:00:00.000\"") != NULL);
    DF_ASSERT(strstr(b.data, "\"dec9\":-4.00") != NULL);
    char want[64];
    snprintf(want, sizeof want, "\"nullCount\":{\"i32\":%lld,", (long long)nulls);
    DF_ASSERT(strstr(b.data, want) != NULL);
    DF_ASSERT(strstr(strstr(b.data, "\"maxValues\""), "\"fx\"") > strstr(b.data, "\"nullCount\""));
    DF_ASSERT(s.size > 100);
    df_buf_free(&b);
    df_parquet_file_summary_clear(&s);
    unlink(path);
}

DF_TEST(writer_rejects_nulls_in_required_columns_and_nested_types) {
    df_error e_ = {0}, *err = &e_;
    df_field f;
    DF_ASSERT_OK(df_field_init(&f, "x", df_type_int32(), false, err), err);
    df_schema *s;
    DF_ASSERT_OK(df_schema_new(&f, 1, &s, err), err);
    const char *path = tmp_file();
    df_parquet_writer *w;
    DF_ASSERT_OK(df_parquet_writer_open(path, s, NULL, &w, err), err);
    df_vec *v;
    DF_ASSERT_OK(df_vec_new_nulls(df_type_int32(), 3, &v, err), err);
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(s, &v, 3, &b, err), err);
    DF_ASSERT_KIND(df_parquet_writer_write(w, b, err), DF_ERR_INVALID_ARGUMENT);
    df_batch_release(b);
    df_parquet_writer_abort(w);
    DF_ASSERT(access(path, F_OK) != 0);   /* the partial file is removed */
    df_field_clear(&f);
    df_schema_release(s);
    df_field el;
    DF_ASSERT_OK(df_field_init(&el, "item", df_type_int32(), true, err), err);
    df_type *lt = df_type_list(&el);
    DF_ASSERT_OK(df_field_init(&f, "l", lt, true, err), err);
    DF_ASSERT_OK(df_schema_new(&f, 1, &s, err), err);
    DF_ASSERT_KIND(df_parquet_writer_open(path, s, NULL, &w, err), DF_ERR_UNSUPPORTED);
    DF_ASSERT(w == NULL);
    df_field_clear(&el);
    df_field_clear(&f);
    df_type_release(lt);
    df_schema_release(s);
}

/* ---- hostile files ------------------------------------------------------------------------ */

static uint8_t *read_whole(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    DF_ASSERT(fp != NULL);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *d = malloc(*n);
    DF_ASSERT(fread(d, 1, *n, fp) == *n);
    fclose(fp);
    return d;
}

/* Opens and drains bytes as a Parquet file; returns the error kind (DF_OK if it read). */
static df_errkind drain_memory(const uint8_t *data, size_t n) {
    df_error e_ = {0}, *err = &e_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_memory(data, n, &in, err), err);
    df_parquet_file *f;
    df_errkind k = df_parquet_file_open(in, &f, err);
    if (k != DF_OK) return k;
    df_batch_stream *s = NULL;
    df_parquet_read_options o = {0};
    o.batch_size = 513;
    k = df_parquet_reader_open(f, &o, &s, err);
    df_parquet_file_close(f);
    while (k == DF_OK) {
        df_batch *b;
        k = df_batch_stream_next(s, &b, err);
        if (k != DF_OK || !b) break;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    df_error_clear(err);
    return k;
}

DF_TEST(hostile_files_fail_with_format_errors) {
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_SNAPPY, true, 1000, NULL);
    size_t n;
    uint8_t *d = read_whole(path, &n);
    unlink(path);
    DF_ASSERT_OK(drain_memory(d, n), NULL);
    /* Every truncation fails (a prefix is never a valid file: the footer is at the end). */
    for (size_t cut = 0; cut < n; cut += 1 + cut / 50) DF_ASSERT(drain_memory(d, cut) != DF_OK);
    uint8_t *m = malloc(n);
    /* Footer length: huge and zero fail; off by a few bytes reads garbage without crashing. */
    uint32_t flen0 = df_load_le32(d + n - 8);
    uint32_t lens[5] = {0xfffffff0u, 0, flen0 + 1, flen0 - 1, flen0 + 100};
    for (int i = 0; i < 5; i++) {
        memcpy(m, d, n);
        df_store_le32(m + n - 8, lens[i]);
        df_errkind k = drain_memory(m, n);
        if (i < 2) DF_ASSERT_KIND(k, DF_ERR_PARQUET_FORMAT);
    }
    /* Magic bytes. */
    memcpy(m, d, n);
    memcpy(m + n - 4, "PARE", 4);
    DF_ASSERT_KIND(drain_memory(m, n), DF_ERR_PARQUET_UNSUPPORTED);
    memcpy(m + n - 4, "PAR2", 4);
    DF_ASSERT_KIND(drain_memory(m, n), DF_ERR_PARQUET_FORMAT);
    memcpy(m, d, n);
    m[0] = 'X';
    DF_ASSERT_KIND(drain_memory(m, n), DF_ERR_PARQUET_FORMAT);
    /* Random single-byte corruption anywhere: an error or values, never a crash. */
    for (int i = 0; i < 3000; i++) {
        memcpy(m, d, n);
        m[rnd() % n] ^= (uint8_t)(1 + rnd() % 255);
        (void)drain_memory(m, n);
    }
    /* Random bytes over the whole footer always fail. */
    uint32_t flen = df_load_le32(d + n - 8);
    for (int i = 0; i < 50; i++) {
        memcpy(m, d, n);
        for (uint32_t j = 0; j < flen; j++) m[n - 8 - flen + j] = (uint8_t)rnd();
        DF_ASSERT(drain_memory(m, n) != DF_OK);
    }
    free(m);
    free(d);
    static const uint8_t tiny[] = "PAR1PAR1";
    DF_ASSERT_KIND(drain_memory(tiny, 8), DF_ERR_PARQUET_FORMAT);
    DF_ASSERT_KIND(drain_memory(tiny, 0), DF_ERR_PARQUET_FORMAT);
}

/* ---- one file, several streams at once ---------------------------------------------------- */

#include <pthread.h>

typedef struct thread_arg {
    df_parquet_file *file;
    int32_t rg;
    int64_t rows;
    int64_t sum;
    df_errkind kind;
} thread_arg;

static void *read_group(void *p) {
    thread_arg *a = p;
    df_error err = {0};
    df_parquet_read_options o = {0};
    o.row_groups = &a->rg;
    o.nrow_groups = 1;
    o.batch_size = 97;
    df_batch_stream *s;
    a->kind = df_parquet_reader_open(a->file, &o, &s, &err);
    while (a->kind == DF_OK) {
        df_batch *b;
        a->kind = df_batch_stream_next(s, &b, &err);
        if (a->kind != DF_OK || !b) break;
        for (int64_t i = 0; i < b->nrows; i++) a->sum += DF_VEC_VALUES(b->cols[1], int64_t)[i];
        a->rows += b->nrows;
        df_batch_release(b);
    }
    if (a->kind == DF_OK) df_batch_stream_close(s);
    df_parquet_file_close(a->file);   /* this thread's reference */
    return NULL;
}

DF_TEST(streams_on_one_file_run_in_parallel) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_ZSTD, true, 1000, NULL);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open_path(path, &f, err), err);
    pthread_t th[5];
    thread_arg args[5];
    for (int i = 0; i < 5; i++) {
        args[i] = (thread_arg){.file = df_parquet_file_retain(f), .rg = i};
        DF_ASSERT_EQ_INT(pthread_create(&th[i], NULL, read_group, &args[i]), 0);
    }
    df_parquet_file_close(f);   /* the threads hold their own references */
    for (int i = 0; i < 5; i++) {
        DF_ASSERT_EQ_INT(pthread_join(th[i], NULL), 0);
        DF_ASSERT_EQ_INT(args[i].kind, DF_OK);
        DF_ASSERT_EQ_INT(args[i].rows, 1000);
        int64_t want = 0;
        for (int64_t r = i * 1000; r < (i + 1) * 1000; r++) want += r * 1000003LL - (1LL << 40);
        DF_ASSERT_EQ_INT(args[i].sum, want);
    }
    unlink(path);
}

/* ---- inputs without views (pread-style) ---------------------------------------------------- */

/* A memory input that never offers views, so the reader copies every page and header. */
typedef struct copy_input {
    df_input base;
    df_input *inner;
} copy_input;

static df_errkind copy_read(df_input *in, uint64_t off, void *dst, size_t len, df_error *err) {
    copy_input *c = (copy_input *)in;
    return df_input_read_at(c->inner, off, dst, len, err);
}

static df_errkind copy_view(df_input *in, uint64_t off, size_t len, const uint8_t **out, df_error *err) {
    (void)in;
    (void)off;
    (void)len;
    (void)err;
    *out = NULL;
    return DF_OK;
}

static void copy_close(df_input *in) {
    copy_input *c = (copy_input *)in;
    df_input_close(c->inner);
    free(c);
}

static const df_input_vt copy_vt = {copy_read, copy_view, copy_close};

DF_TEST(inputs_without_views_read_the_same) {
    df_error e_ = {0}, *err = &e_;
    const char *path = tmp_file();
    write_file(path, DF_PARQUET_UNCOMPRESSED, true, 1000, NULL);
    copy_input *c = calloc(1, sizeof *c);
    DF_ASSERT_OK(df_input_open_file(path, &c->inner, err), err);
    c->base.vt = &copy_vt;
    c->base.size = c->inner->size;
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open(&c->base, &f, err), err);
    df_batch_stream *s;
    df_parquet_read_options o = {0};
    o.batch_size = 1234;
    DF_ASSERT_OK(df_parquet_reader_open(f, &o, &s, err), err);
    df_parquet_file_close(f);
    int64_t row = 0;
    for (;;) {
        df_batch *b;
        DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
        if (!b) break;
        for (int32_t col = 0; col < b->ncols; col++)
            for (int64_t i = 0; i < b->nrows; i += 7) check_value(b->cols[col], col, row + i, i);
        row += b->nrows;
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    DF_ASSERT_EQ_INT(row, NROWS);
    unlink(path);
}
