/*
 * Helpers for executor tests: in-memory tables built from C arrays or from
 * SQL VALUES, and query results rendered as text ("a|b" per row, NULL as
 * "NULL") so tests compare whole results with one string.
 */
#ifndef DF_TEST_EXEC_TEST_UTIL_H
#define DF_TEST_EXEC_TEST_UTIL_H

#include "df_test.h"

#include "exec/exec_int.h"
#include "exec/query.h"

/* Registers `name` as a memory table of the batches produced by `sql` (split into nparts units). */
static void tu_table_from_sql(df_catalog *cat, const char *name, const char *sql, int nparts) {
    df_error err = {0};
    df_error_clear(&err);
    df_query *q = NULL;
    DF_ASSERT_OK(df_query_plan(cat, sql, &q, &err), &err);
    df_exec_options o;
    df_exec_options_init(&o);
    o.target_partitions = 1;
    df_batch_stream *s = NULL;
    DF_ASSERT_OK(df_query_execute(q, &o, &s, &err), &err);
    df_batch *all[256];
    int n = 0;
    for (;;) {
        df_batch *b = NULL;
        DF_ASSERT_OK(df_batch_stream_next(s, &b, &err), &err);
        if (!b) break;
        DF_ASSERT(n < 256);
        all[n++] = b;
    }
    df_batch *one = NULL;
    DF_ASSERT_OK(df__batch_concat(all, n, df_query_schema(q), &one, &err), &err);
    for (int i = 0; i < n; i++) df_batch_release(all[i]);
    /* Split into nparts units. */
    df_batch *units[64];
    int nu = 0;
    int64_t rows = one->nrows, per = nparts > 0 ? (rows + nparts - 1) / nparts : rows;
    if (per == 0) per = 1;
    for (int64_t off = 0; off < rows && nu < 64; off += per) {
        DF_ASSERT_OK(df_batch_slice(one, off, DF_MIN(per, rows - off), &units[nu], &err), &err);
        nu++;
    }
    df_table_provider *p = NULL;
    DF_ASSERT_OK(df_memory_provider_new(df_query_schema(q), units, nu, &p, &err), &err);
    DF_ASSERT_OK(df_catalog_register_table(cat, name, p, &err), &err);
    df_table_provider_release(p);
    for (int i = 0; i < nu; i++) df_batch_release(units[i]);
    df_batch_release(one);
    df_batch_stream_close(s);
    df_query_free(q);
}

static int tu_cmp_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/*
 * Runs sql with `partitions` workers and returns the rows as text (caller
 * frees with df_free); sorted when `sort` (for unordered results).  On a
 * planning or execution error returns "ERROR <kind>".
 */
static char *tu_run_opts(df_catalog *cat, const char *sql, int partitions, bool sort, int batch_size) {
    df_error err = {0};
    df_error_clear(&err);
    df_query *q = NULL;
    df_buf out;
    df_buf_init(&out, 0);
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    df_batch_stream *s = NULL;
    if (!k) {
        df_exec_options o;
        df_exec_options_init(&o);
        o.target_partitions = partitions;
        o.batch_size = batch_size;
        k = df_query_execute(q, &o, &s, &err);
    }
    char **lines = NULL;
    int64_t nlines = 0, cap = 0;
    while (!k) {
        df_batch *b = NULL;
        k = df_batch_stream_next(s, &b, &err);
        if (k || !b) break;
        for (int64_t r = 0; r < b->nrows; r++) {
            df_buf line;
            df_buf_init(&line, 0);
            for (int32_t c = 0; c < b->ncols; c++) {
                if (c) df_buf_append_char(&line, '|', NULL);
                const df_vec *v = b->cols[c];
                if (v->type->id == DF_TYPE_NULL || !df_vec_is_valid(v, r)) df_buf_append_str(&line, "NULL", NULL);
                else DF_ASSERT_OK(df__format_value(v, r, &line, &err), &err);
            }
            if (nlines == cap) {
                cap = cap ? cap * 2 : 64;
                lines = realloc(lines, (size_t)cap * sizeof *lines);
            }
            lines[nlines++] = df_buf_take(&line);
            df_buf_free(&line);
        }
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    df_query_free(q);
    if (k) {
        for (int64_t i = 0; i < nlines; i++) df_free(lines[i]);
        free(lines);
        df_buf_printf(&out, NULL, "ERROR %s", df_errkind_name(k));
        if (getenv("DF_TEST_VERBOSE")) fprintf(stderr, "%s: %s\n", sql, err.message);
        df_error_clear(&err);
        return df_buf_take(&out);
    }
    if (sort && nlines) qsort(lines, (size_t)nlines, sizeof *lines, tu_cmp_lines);
    for (int64_t i = 0; i < nlines; i++) {
        if (i) df_buf_append_char(&out, '\n', NULL);
        df_buf_append_str(&out, lines[i] ? lines[i] : "", NULL);
        df_free(lines[i]);
    }
    free(lines);
    char *r = df_buf_take(&out);
    if (!r) r = df_strdup("");
    return r;
}

static char *tu_run(df_catalog *cat, const char *sql) { return tu_run_opts(cat, sql, 1, false, 8192); }
static char *tu_run_sorted(df_catalog *cat, const char *sql, int partitions) {
    return tu_run_opts(cat, sql, partitions, true, 8192);
}

/* Asserts the text result of a query. */
#define TU_EXPECT(cat, sql, expected)                                                   \
    do {                                                                                \
        char *df_got_ = tu_run((cat), (sql));                                           \
        if (strcmp(df_got_, (expected)) != 0)                                           \
            df_test_fail(__FILE__, __LINE__, "%s\n--- got:\n%s\n--- expected:\n%s", (sql), df_got_, (expected)); \
        df_free(df_got_);                                                               \
    } while (0)

#define TU_EXPECT_SORTED(cat, sql, parts, expected)                                     \
    do {                                                                                \
        char *df_got_ = tu_run_sorted((cat), (sql), (parts));                           \
        if (strcmp(df_got_, (expected)) != 0)                                           \
            df_test_fail(__FILE__, __LINE__, "%s\n--- got:\n%s\n--- expected:\n%s", (sql), df_got_, (expected)); \
        df_free(df_got_);                                                               \
    } while (0)

/* Asserts that planning or execution fails with `kind`. */
#define TU_EXPECT_ERROR(cat, sql, kind)                                                 \
    do {                                                                                \
        char *df_got_ = tu_run((cat), (sql));                                           \
        char df_want_[96];                                                              \
        snprintf(df_want_, sizeof df_want_, "ERROR %s", df_errkind_name(kind));         \
        if (strcmp(df_got_, df_want_) != 0)                                             \
            df_test_fail(__FILE__, __LINE__, "%s\n--- got:\n%s\n--- expected:\n%s", (sql), df_got_, df_want_); \
        df_free(df_got_);                                                               \
    } while (0)

static df_catalog *tu_catalog(void) {
    df_catalog *cat = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_catalog_new(&cat, &err), &err);
    return cat;
}

#endif
