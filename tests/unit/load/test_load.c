/*
 * Unit tests of the SQL Server write planner (type mapping per
 * schema_options, DDL text, identifier checks), the job-file TOML reader,
 * and the write_all cache that spills beyond its memory budget.
 */
#include "df_test.h"

#include <stdlib.h>

#include "common/json.h"
#include "load/job_int.h"
#include "load/write_cache_int.h"
#include "load/write_int.h"

static df_error fresh(void) {
    df_error e;
    memset(&e, 0, sizeof e);
    e.offset = -1;
    return e;
}

static df_schema *schema_of(const df_field *fields, int32_t n) {
    df_schema *s = NULL;
    df_error e = fresh();
    DF_ASSERT_OK(df_schema_new(fields, n, &s, &e), &e);
    return s;
}

static df_schema_opts default_policies(void) {
    struct df_session_options o;
    df__session_options_defaults(&o);
    return o.schema;
}

static char *render(const df_mssql_column *c) {
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_mssql_type_render(c, &b, NULL), NULL);
    return df_buf_take(&b);
}

DF_TEST(default_policies_map_like_the_reference) {
    df_type *dec = df_type_decimal(12, 2), *ts = df_type_timestamp(DF_UNIT_MICRO, NULL),
            *t64 = df_type_time(DF_UNIT_NANO), *fb = df_type_fixed_binary(16);
    df_field f[] = {{"b", df_type_bool(), true},     {"i8", df_type_int8(), true},   {"i32", df_type_int32(), false},
                    {"u8", df_type_uint8(), true},    {"u16", df_type_uint16(), true}, {"u32", df_type_uint32(), true},
                    {"f32", df_type_float32(), true}, {"f64", df_type_float64(), true}, {"dec", dec, true},
                    {"d", df_type_date32(), true},    {"ts", ts, true},            {"t", t64, true},
                    {"s", df_type_utf8(), true},      {"bin", df_type_binary(), true}, {"fb", fb, true}};
    const char *expect[] = {"bit", "smallint", "int", "tinyint", "int", "bigint", "real", "float(53)",
                            "decimal(12,2)", "date", "datetime2(7)", "time(7)", "nvarchar(max)", "varbinary(max)",
                            "binary(16)"};
    df_schema *s = schema_of(f, 15);
    df_schema_opts so = default_policies();
    df_write_plan p;
    df_error e = fresh();
    DF_ASSERT_OK(df__write_plan_build(s, &so, "out", "dbo", "t", DF_LOAD_CREATE_AND_LOAD, &p, &e), &e);
    for (int i = 0; i < 15; i++) {
        char *r = render(&p.cols[i]);
        DF_ASSERT_EQ_STR(r, expect[i]);
        df_free(r);
    }
    DF_ASSERT(!p.cols[2].nullable);
    DF_ASSERT_EQ_STR(p.quoted_target, "[dbo].[t]");
    DF_ASSERT(strncmp(p.ddl, "CREATE TABLE [dbo].[t] (\n    [b] bit NULL,\n    [i8] smallint NULL,\n    [i32] int NOT NULL,", 80) == 0);
    DF_ASSERT(strstr(p.ddl, "[fb] binary(16) NULL\n);") != NULL);
    df__write_plan_clear(&p);
    df_schema_release(s);
    df_type_release(dec);
    df_type_release(ts);
    df_type_release(t64);
    df_type_release(fb);
}

DF_TEST(policies_change_the_mapping) {
    df_type *utc = df_type_timestamp(DF_UNIT_NANO, "UTC");
    df_field f[] = {{"u", df_type_uint64(), true}, {"s", df_type_utf8(), true}, {"z", utc, true},
                    {"d64", df_type_date64(), true}, {"bin", df_type_binary(), true}};
    df_schema *s = schema_of(f, 5);
    df_schema_opts so = default_policies();
    df_write_plan p;
    df_error e = fresh();
    /* Defaults: uint64 and zoned timestamps are planning errors with diagnostics. */
    DF_ASSERT_KIND(df__write_plan_build(s, &so, "out", "dbo", "t", DF_LOAD_REPLACE, &p, &e), DF_ERR_MSSQL_SCHEMA_PLANNING);
    DF_ASSERT_EQ_STR(e.message, "MSSQL schema planning error for output `out`: arrow-sql-server returned 2 diagnostic(s)");
    DF_ASSERT(e.context && strstr(e.context, "profile_dependent_conversion"));
    df_error_clear(&e);
    snprintf(so.uint64_policy.name, sizeof so.uint64_policy.name, "decimal20_0");
    snprintf(so.timezone_policy.name, sizeof so.timezone_policy.name, "datetimeoffset");
    snprintf(so.string_policy.name, sizeof so.string_policy.name, "ascii_varchar");
    so.string_policy.bound = 40;
    snprintf(so.date64_policy.name, sizeof so.date64_policy.name, "timestamp_datetime2");
    snprintf(so.binary_policy.name, sizeof so.binary_policy.name, "observed_varbinary");
    DF_ASSERT_OK(df__write_plan_build(s, &so, "out", "dbo", "t", DF_LOAD_REPLACE, &p, &e), &e);
    const char *expect[] = {"decimal(20,0)", "varchar(40)", "datetimeoffset(7)", "datetime2(3)", "varbinary(max)"};
    for (int i = 0; i < 5; i++) {
        char *r = render(&p.cols[i]);
        DF_ASSERT_EQ_STR(r, expect[i]);
        df_free(r);
    }
    DF_ASSERT(p.any_observed && p.observe[4] == DF_OBSERVE_VARBINARY);
    DF_ASSERT(p.ddl == NULL); /* replace renders DDL for its staging table at execution */
    /* Observed lengths narrow the DDL; beyond 8000 bytes the column stays (max). */
    int64_t lengths[5] = {0, 0, 0, 0, 17};
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__write_render_ddl(&p, "dbo", "t", lengths, &b, &e), &e);
    DF_ASSERT(strstr(b.data, "[bin] varbinary(17) NULL") != NULL);
    df_buf_reset(&b);
    lengths[4] = 9000;
    DF_ASSERT_OK(df__write_render_ddl(&p, "dbo", "t", lengths, &b, &e), &e);
    DF_ASSERT(strstr(b.data, "[bin] varbinary(max) NULL") != NULL);
    df_buf_free(&b);
    df__write_plan_clear(&p);
    df_schema_release(s);
    df_type_release(utc);
}

DF_TEST(identifiers_and_duplicates_are_checked) {
    df_field dup[] = {{"a", df_type_int32(), true}, {"a", df_type_int64(), true}};
    df_schema *s = schema_of(dup, 2);
    df_schema_opts so = default_policies();
    df_write_plan p;
    df_error e = fresh();
    DF_ASSERT_KIND(df__write_plan_build(s, &so, "o", "dbo", "t", DF_LOAD_REPLACE, &p, &e), DF_ERR_DUPLICATE_MSSQL_OUTPUT_FIELD);
    df_error_clear(&e);
    df_schema_release(s);
    df_field one[] = {{"a]b", df_type_int32(), true}};
    s = schema_of(one, 1);
    char long_name[200];
    memset(long_name, 'x', 199);
    long_name[199] = 0;
    DF_ASSERT_KIND(df__write_plan_build(s, &so, "o", "dbo", long_name, DF_LOAD_CREATE_AND_LOAD, &p, &e),
                   DF_ERR_MSSQL_DDL_TARGET_IDENTIFIER);
    DF_ASSERT(strstr(e.message, "identifier is 199 characters; maximum is 128") != NULL);
    df_error_clear(&e);
    /* append_existing does not check target identifiers at planning (the reference's rule). */
    DF_ASSERT_OK(df__write_plan_build(s, &so, "o", "dbo", long_name, DF_LOAD_APPEND_EXISTING, &p, &e), &e);
    df__write_plan_clear(&p);
    DF_ASSERT_OK(df__write_plan_build(s, &so, "o", "d]bo", "t'x", DF_LOAD_CREATE_AND_LOAD, &p, &e), &e);
    DF_ASSERT_EQ_STR(p.quoted_target, "[d]]bo].[t'x]");
    DF_ASSERT(strstr(p.ddl, "[a]]b] int NULL") != NULL);
    df__write_plan_clear(&p);
    df_schema_release(s);
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df__write_nliteral(&b, "it's", NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "N'it''s'");
    df_buf_free(&b);
}

DF_TEST(sql_hash_is_fnv1a_of_trimmed_sql) {
    char h[17];
    df__write_sql_hash("  SELECT 1 \n", h);
    char h2[17];
    df__write_sql_hash("SELECT 1", h2);
    DF_ASSERT_EQ_STR(h, h2);
    df__write_sql_hash("", h);
    DF_ASSERT_EQ_STR(h, "cbf29ce484222325");
}

static char *toml(const char *text, df_error *e) {
    char *json = NULL;
    df_errkind k = df__job_toml_to_json(text, strlen(text), &json, e);
    return k == DF_OK ? json : NULL;
}

DF_TEST(toml_subset_converts_to_json) {
    df_error e = fresh();
    char *j = toml("# c\na = 1\nb.c = \"x\\ty\"  # tail\n[t]\nk = [1, 2,\n  3,]\n[[arr]]\nv = true\n[[arr]]\nv = 'raw\\n'\n"
                   "[t.sub]\nz = { p = -16, q = 0x1_0 }\nm = \"\"\"\nline\\\n  joined\"\"\"\n", &e);
    DF_ASSERT(j != NULL);
    DF_ASSERT_EQ_STR(j, "{\"a\":1,\"b\":{\"c\":\"x\\ty\"},\"t\":{\"k\":[1,2,3],\"sub\":{\"z\":{\"p\":-16,\"q\":16},"
                        "\"m\":\"linejoined\"}},\"arr\":[{\"v\":true},{\"v\":\"raw\\\\n\"}]}");
    df_free(j);
    static const char *const bad[] = {"a = 1\na = 2\n", "[x]\n[x]\n", "a = \"open\n", "a = [1, 2\n", "a = 01\n",
                                      "a = 1979-05-27\n", "a = {b = 1}\n[a]\n", "= 1\n", "a = 1 b = 2\n",
                                      "a = \"\\q\"\n", "a = 99999999999999999999\n",
                                      /* a NUL escape would cut the value short in the C strings it becomes */
                                      "sql = \"SELECT 1 WHERE id<0\\u0000 OR id>=0\"\n", "mode = \"replace\\U00000000xx\"\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        df_error_clear(&e);
        DF_ASSERT(toml(bad[i], &e) == NULL);
        DF_ASSERT_EQ_INT(e.kind, DF_ERR_CONFIG);
        DF_ASSERT(strncmp(e.message, "job file line ", 14) == 0);
    }
    df_error_clear(&e);
    /* Deep nesting is refused, not recursed into. */
    char deep[400];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "a = ");
    for (int i = 0; i < 100; i++) deep[n++] = '[';
    deep[n] = 0;
    DF_ASSERT(toml(deep, &e) == NULL);
    DF_ASSERT(strstr(e.message, "nested too deeply") != NULL);
    df_error_clear(&e);
}

static df_batch *int_batch(df_schema *schema, int64_t start, int64_t n, bool with_nulls) {
    df_vec *a = NULL, *s = NULL;
    df_error e = fresh();
    DF_ASSERT_OK(df_vec_new(df_type_int64(), n, 0, &a, &e), &e);
    DF_ASSERT_OK(df_vec_new(df_type_utf8(), n, n * 8, &s, &e), &e);
    for (int64_t i = 0; i < n; i++) {
        DF_VEC_VALUES(a, int64_t)[i] = start + i;
        char text[32];
        int len = snprintf(text, sizeof text, "v%lld", (long long)(start + i));
        if (with_nulls && i % 3 == 0)
            DF_ASSERT_OK(df_vec_append_null(s, &e), &e);
        else
            DF_ASSERT_OK(df_vec_append_bytes(s, text, len, &e), &e);
    }
    a->length = n;
    a->values->size = n * 8;
    df_vec *cols[2] = {a, s};
    df_batch *b = NULL;
    DF_ASSERT_OK(df_batch_new(schema, cols, n, &b, &e), &e);
    return b;
}

DF_TEST(cache_spills_beyond_its_budget_and_reads_back) {
    df_field f[] = {{"id", df_type_int64(), true}, {"s", df_type_utf8(), true}};
    df_schema *schema = schema_of(f, 2);
    df_wcache *c = NULL;
    df_error e = fresh();
    DF_ASSERT_OK(df__wcache_new(schema, 20000, NULL, &c, &e), &e);
    int64_t total = 0;
    for (int i = 0; i < 10; i++) {
        df_batch *b = int_batch(schema, total, 1000, i % 2 == 0);
        if (i == 3) {
            /* A slice (non-zero offsets) spills correctly too. */
            df_batch *sl = NULL;
            DF_ASSERT_OK(df_batch_slice(b, 10, 990, &sl, &e), &e);
            df_batch_release(b);
            b = sl;
        }
        DF_ASSERT_OK(df__wcache_add(c, b, &e), &e);
        total += b->nrows;
        df_batch_release(b);
    }
    DF_ASSERT_EQ_INT(df__wcache_rows(c), total);
    DF_ASSERT(df__wcache_spilled_bytes(c) > 0);
    DF_ASSERT(df__wcache_memory_bytes(c) <= 20000);
    df_table_provider *p = NULL;
    DF_ASSERT_OK(df__wcache_provider(c, &p, &e), &e);
    df_scan_request req;
    memset(&req, 0, sizeof req);
    req.limit = -1;
    req.batch_size = 4096;
    df_scan_plan *plan = NULL;
    DF_ASSERT_OK(p->vt->plan_scan(p, &req, &plan, &e), &e);
    DF_ASSERT_EQ_INT(plan->nunits, 10);
    int64_t rows = 0, sum = 0, nulls = 0;
    for (int64_t u = 0; u < plan->nunits; u++) {
        df_batch_stream *st = NULL;
        DF_ASSERT_OK(p->vt->open_unit(p, plan, u, &st, &e), &e);
        for (;;) {
            df_batch *b = NULL;
            DF_ASSERT_OK(df_batch_stream_next(st, &b, &e), &e);
            if (!b) break;
            for (int64_t i = 0; i < b->nrows; i++) {
                int64_t v = DF_VEC_VALUES(b->cols[0], const int64_t)[b->cols[0]->offset + i];
                sum += v;
                if (!df_vec_is_valid(b->cols[1], i)) {
                    nulls++;
                } else {
                    int32_t len;
                    const uint8_t *s = df_vec_bytes(b->cols[1], i, &len);
                    char expect[32];
                    int el = snprintf(expect, sizeof expect, "v%lld", (long long)v);
                    DF_ASSERT(len == el && memcmp(s, expect, (size_t)len) == 0);
                }
            }
            rows += b->nrows;
            df_batch_release(b);
        }
        df_batch_stream_close(st);
    }
    DF_ASSERT_EQ_INT(rows, total);
    DF_ASSERT(nulls > 0);
    /* Rows 0..total-1 minus the 10 sliced away at 3000..3009, shifted: recompute. */
    int64_t expect = 0;
    int64_t start = 0;
    for (int i = 0; i < 10; i++) {
        int64_t n = i == 3 ? 990 : 1000, first = i == 3 ? start + 10 : start;
        for (int64_t k = 0; k < n; k++) expect += first + k;
        start += n;
    }
    DF_ASSERT_EQ_INT(sum, expect);
    p->vt->free_plan(p, plan);
    df_table_provider_release(p);
    df_schema_release(schema);
}

/*
 * The cache provider serves in-memory and spilled units alike: in unit
 * order, projected, in slices of at most batch_size rows, with the plan's
 * counters covering both kinds of unit.  A batch whose schema differs from
 * the cache's in nullability only is accepted.
 */
DF_TEST(cache_provider_projects_slices_and_counts_every_unit) {
    df_field f[] = {{"id", df_type_int64(), true}, {"s", df_type_utf8(), true}};
    df_field strict[] = {{"id", df_type_int64(), false}, {"s", df_type_utf8(), true}};
    df_schema *schema = schema_of(f, 2);
    df_schema *other = schema_of(strict, 2);
    df_wcache *c = NULL;
    df_error e = fresh();
    DF_ASSERT_OK(df__wcache_new(schema, 40000, NULL, &c, &e), &e);
    const int nbatches = 6;
    for (int i = 0; i < nbatches; i++) {
        df_batch *b = int_batch(i == 1 ? other : schema, (int64_t)i * 1000, 1000, true);
        DF_ASSERT_OK(df__wcache_add(c, b, &e), &e);
        df_batch_release(b);
    }
    DF_ASSERT(df__wcache_memory_bytes(c) > 0);
    DF_ASSERT(df__wcache_spilled_bytes(c) > 0);
    df_table_provider *p = NULL;
    DF_ASSERT_OK(df__wcache_provider(c, &p, &e), &e);
    const int32_t projection[] = {1, 0};
    df_scan_request req;
    memset(&req, 0, sizeof req);
    req.projection = projection;
    req.nprojection = 2;
    req.limit = -1;
    req.batch_size = 300;
    df_scan_plan *plan = NULL;
    DF_ASSERT_OK(p->vt->plan_scan(p, &req, &plan, &e), &e);
    DF_ASSERT_EQ_INT(plan->nunits, nbatches);
    DF_ASSERT_EQ_INT(plan->estimated_rows, nbatches * 1000);
    DF_ASSERT_EQ_INT(plan->schema->nfields, 2);
    DF_ASSERT_EQ_STR(plan->schema->fields[0].name, "s");
    int64_t next = 0, batches = 0;
    for (int64_t u = 0; u < plan->nunits; u++) {
        df_batch_stream *st = NULL;
        DF_ASSERT_OK(p->vt->open_unit(p, plan, u, &st, &e), &e);
        for (;;) {
            df_batch *b = NULL;
            DF_ASSERT_OK(df_batch_stream_next(st, &b, &e), &e);
            if (!b) break;
            DF_ASSERT(b->nrows <= 300);
            DF_ASSERT_EQ_INT(b->ncols, 2);
            DF_ASSERT_EQ_STR(b->schema->fields[1].name, "id");
            for (int64_t i = 0; i < b->nrows; i++) {
                int64_t v = DF_VEC_VALUES(b->cols[1], const int64_t)[i]; /* the macro applies the offset */
                DF_ASSERT_EQ_INT(v, next); /* unit order, rows in order */
                DF_ASSERT_EQ_INT(df_vec_is_valid(b->cols[0], i), v % 1000 % 3 != 0);
                next++;
            }
            batches++;
            df_batch_release(b);
        }
        df_batch_stream_close(st);
    }
    DF_ASSERT_EQ_INT(next, nbatches * 1000);
    DF_ASSERT_EQ_INT(batches, nbatches * 4); /* 300 + 300 + 300 + 100 per unit */
    df_scan_metrics *m = plan->metrics;
    DF_ASSERT_EQ_INT(atomic_load(&m->files_total), nbatches);
    DF_ASSERT_EQ_INT(atomic_load(&m->files_planned), nbatches);
    DF_ASSERT_EQ_INT(atomic_load(&m->files_opened), nbatches);
    DF_ASSERT_EQ_INT(atomic_load(&m->files_completed), nbatches);
    DF_ASSERT_EQ_INT(atomic_load(&m->rows_produced), nbatches * 1000);
    DF_ASSERT_EQ_INT(atomic_load(&m->batches_produced), batches);
    /* Out-of-range units are refused. */
    df_batch_stream *none = (df_batch_stream *)1;
    DF_ASSERT_KIND(p->vt->open_unit(p, plan, nbatches, &none, &e), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(none == NULL);
    df_error_clear(&e);
    p->vt->free_plan(p, plan);
    df_table_provider_release(p);
    df_schema_release(other);
    df_schema_release(schema);
}
