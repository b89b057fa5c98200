/* SQL front end tests: lexer, parser (errors and positions), binder (names, types), optimizer rules. */
#include "df_test.h"

#include "exec/exec_int.h"
#include "exec/query.h"
#include "sql/sql_ast.h"
#include "sql/sql_lexer.h"
#include "sql/sql_types.h"

/* ------------------------------------------------------------------------ */
/* Lexer                                                                     */

DF_TEST(lexer_tokens_and_positions) {
    const char *sql = "SELECT a1, \"Mixed\"\"Q\", 'it''s', 1.5e3, 42, x::int -- comment\n/* c /* nested */ */ <> || !=";
    sql_tokens t;
    df_error err = {0};
    DF_ASSERT_OK(df__sql_lex(sql, strlen(sql), &t, &err), &err);
    sql_tok want[] = {TK_WORD, TK_WORD, TK_COMMA, TK_QIDENT, TK_COMMA, TK_STRING, TK_COMMA, TK_NUMBER, TK_COMMA,
                      TK_INTEGER, TK_COMMA, TK_WORD, TK_DCOLON, TK_WORD, TK_NE, TK_CONCAT, TK_NE, TK_EOF};
    DF_ASSERT_EQ_INT(t.n, (int)DF_ARRAY_LEN(want));
    for (int i = 0; i < t.n; i++) DF_ASSERT_EQ_INT(t.toks[i].type, want[i]);
    DF_ASSERT_EQ_INT(t.toks[0].kw, KW_SELECT);
    DF_ASSERT_EQ_INT(t.toks[1].kw, KW_NONE);
    DF_ASSERT_EQ_INT(t.toks[3].start, 11);
    df__sql_tokens_free(&t);
}

DF_TEST(lexer_rejects_unterminated_input) {
    df_error err = {0};
    sql_tokens t;
    DF_ASSERT_KIND(df__sql_lex("SELECT 'abc", 11, &t, &err), DF_ERR_SQL_SYNTAX);
    DF_ASSERT_EQ_INT(err.offset, 7);
    DF_ASSERT_KIND(df__sql_lex("SELECT /* x", 11, &t, &err), DF_ERR_SQL_SYNTAX);
    DF_ASSERT_KIND(df__sql_lex("SELECT \"\"", 9, &t, &err), DF_ERR_SQL_SYNTAX);
    DF_ASSERT_KIND(df__sql_lex("SELECT 1\x01", 9, &t, &err), DF_ERR_SQL_SYNTAX);
    df_error_clear(&err);
}

DF_TEST(positions_count_characters_not_bytes) {
    int32_t line, col;
    int64_t off;
    const char *s = "SELECT 'h\xC3\xA9llo',\n  bad";
    df__sql_lexer_position(s, (int32_t)strlen(s), (int32_t)(strstr(s, "bad") - s), &line, &col, &off);
    DF_ASSERT_EQ_INT(line, 2);
    DF_ASSERT_EQ_INT(col, 3);
    DF_ASSERT_EQ_INT(off, 18);
}

/* ------------------------------------------------------------------------ */
/* Parser                                                                    */

static df_errkind parse(const char *sql, ast_query **q, df_arena *a, df_error *err) {
    return df__sql_parse(sql, strlen(sql), a, q, err);
}

DF_TEST(parser_accepts_the_everyday_set) {
    const char *ok[] = {
        "SELECT 1",
        "select a, b as c, t.* from t where a > 1 and not b is null order by 1 desc nulls last limit 10 offset 2;",
        "SELECT DISTINCT a FROM t1 JOIN t2 USING (id) LEFT JOIN t3 ON t3.x = t1.x",
        "WITH x AS (SELECT 1 AS a), y(b) AS (SELECT a FROM x) SELECT * FROM y",
        "SELECT CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END, CAST(a AS DECIMAL(10, 2)), a::bigint FROM t",
        "SELECT count(*), count(DISTINCT a), sum(b) FILTER (WHERE c) FROM t GROUP BY d HAVING count(*) > 1",
        "SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT c FROM v",
        "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(x, y)",
        "SELECT extract(year FROM d), substring(s FROM 2 FOR 3), trim(both 'x' FROM s), position('a' IN s) FROM t",
        "SELECT date '2020-01-01', timestamp '2020-01-01 00:00:00', interval '1' day, E'a\\nb', x'ff'",
        "SELECT a IN (1, 2), a NOT BETWEEN 1 AND 2, s LIKE 'a%' ESCAPE '!', s NOT ILIKE 'b'",
        "SELECT -9223372036854775808, 1e10, .5, 1_000",
        "(SELECT 1) UNION ALL (SELECT 2) ORDER BY 1",
        "SELECT left(s, 2), right(s, 1) FROM t",
        "SELECT a FROM t FETCH FIRST 3 ROWS ONLY",
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(ok); i++) {
        df_arena a;
        df_arena_init(&a, 4096, 0);
        ast_query *q = NULL;
        df_error err = {0};
        df_errkind k = parse(ok[i], &q, &a, &err);
        if (k) df_test_fail(__FILE__, __LINE__, "%s: %s", ok[i], err.message);
        df_arena_destroy(&a);
    }
}

DF_TEST(syntax_errors_carry_positions) {
    struct {
        const char *sql;
        df_errkind kind;
        int64_t offset;
        const char *fragment;
    } cases[] = {
        {"SELECT a FROM", DF_ERR_SQL_SYNTAX, 13, "found end of input"},
        {"SELECT FROM t", DF_ERR_SQL_SYNTAX, 7, "expected expression, found `FROM`"},
        {"SELECT a,, b FROM t", DF_ERR_SQL_SYNTAX, 9, "line 1, column 10"},
        {"SELECT (1 + 2", DF_ERR_SQL_SYNTAX, 13, "expected `)`"},
        {"SELECT a FROM t WHERE", DF_ERR_SQL_SYNTAX, 21, "expected expression"},
        {"SELECT 1 2", DF_ERR_SQL_SYNTAX, 9, "end of statement"},
        {"INSERT INTO t VALUES (1)", DF_ERR_SQL_NOT_READ_ONLY, 0, "INSERT"},
        {"SELECT 1; DROP TABLE t", DF_ERR_SQL_NOT_READ_ONLY, 10, "only one statement"},
        {"", DF_ERR_SQL_SYNTAX, 0, "empty"},
        {"  \n  ", DF_ERR_SQL_SYNTAX, 0, "empty"},
        {"SELECT\n  a +\n  FROM t", DF_ERR_SQL_SYNTAX, 15, "line 3, column 3"},
        {"SELECT '\xaa'", DF_ERR_SQL_SYNTAX, 8, "not valid UTF-8"},
        {"SELECT E'\\xff'", DF_ERR_SQL_SYNTAX, 7, "valid UTF-8"},
        {"SELECT sum(x) OVER (ROWS BETWEEN 1 PRECEDING AND) FROM t", DF_ERR_SQL_SYNTAX, 48, "expected expression"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        df_arena a;
        df_arena_init(&a, 4096, 0);
        ast_query *q = NULL;
        df_error err = {0};
        df_error_clear(&err);
        df_errkind k = parse(cases[i].sql, &q, &a, &err);
        if (k != cases[i].kind || err.offset != cases[i].offset || !strstr(err.message, cases[i].fragment))
            df_test_fail(__FILE__, __LINE__, "[%s] kind %s offset %lld message %s", cases[i].sql, df_errkind_name(k),
                         (long long)err.offset, err.message);
        DF_ASSERT(q == NULL);
        df_arena_destroy(&a);
    }
}

DF_TEST(parser_bounds_nesting) {
    df_buf b;
    df_buf_init(&b, 0);
    df_buf_append_str(&b, "SELECT ", NULL);
    for (int i = 0; i < 5000; i++) df_buf_append_char(&b, '(', NULL);
    df_buf_append_char(&b, '1', NULL);
    for (int i = 0; i < 5000; i++) df_buf_append_char(&b, ')', NULL);
    df_arena a;
    df_arena_init(&a, 4096, 0);
    ast_query *q;
    df_error err = {0};
    DF_ASSERT_KIND(parse(b.data, &q, &a, &err), DF_ERR_SQL_TOO_COMPLEX);
    df_arena_destroy(&a);
    /* Long flat AND chains are fine (flattened), long + chains are bounded. */
    df_buf_reset(&b);
    df_buf_append_str(&b, "SELECT 1 WHERE true", NULL);
    for (int i = 0; i < 3000; i++) df_buf_append_str(&b, " AND true", NULL);
    df_arena_init(&a, 4096, 0);
    DF_ASSERT_OK(parse(b.data, &q, &a, &err), &err);
    df_arena_destroy(&a);
    df_buf_reset(&b);
    df_buf_append_str(&b, "SELECT 1", NULL);
    for (int i = 0; i < 3000; i++) df_buf_append_str(&b, " + 1", NULL);
    df_arena_init(&a, 4096, 0);
    DF_ASSERT_KIND(parse(b.data, &q, &a, &err), DF_ERR_SQL_TOO_COMPLEX);
    df_arena_destroy(&a);
    df_buf_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Binder                                                                    */

static df_catalog *catalog_with_t(void) {
    df_catalog *cat = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_catalog_new(&cat, &err), &err);
    df_field f[4];
    df_type *dec = df_type_decimal(10, 2);
    df_field_init(&f[0], "a", df_type_int32(), true, &err);
    df_field_init(&f[1], "b", df_type_utf8(), true, &err);
    df_field_init(&f[2], "c", dec, true, &err);
    df_field_init(&f[3], "Mixed", df_type_float64(), true, &err);
    df_type_release(dec);
    df_schema *s = NULL;
    DF_ASSERT_OK(df_schema_new(f, 4, &s, &err), &err);
    for (int i = 0; i < 4; i++) df_field_clear(&f[i]);
    df_table_provider *p = NULL;
    DF_ASSERT_OK(df_memory_provider_new(s, NULL, 0, &p, &err), &err);
    DF_ASSERT_OK(df_catalog_register_table(cat, "T", p, &err), &err);
    df_table_provider_release(p);
    df_schema_release(s);
    return cat;
}

static char *types_of(df_catalog *cat, const char *sql) {
    df_query *q = NULL;
    df_error err = {0};
    df_error_clear(&err);
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_query_plan(cat, sql, &q, &err);
    if (k) {
        df_buf_printf(&b, NULL, "ERROR %s@%lld", df_errkind_name(k), (long long)err.offset);
        df_error_clear(&err);
        return df_buf_take(&b);
    }
    df_schema *s = df_query_schema(q);
    for (int32_t i = 0; i < s->nfields; i++) {
        if (i) df_buf_append_str(&b, ", ", NULL);
        df_buf_printf(&b, NULL, "%s:", s->fields[i].name);
        df__sqlt_display(s->fields[i].type, &b, NULL);
    }
    df_query_free(q);
    return df_buf_take(&b);
}

#define EXPECT_TYPES(cat, sql, want)                                                               \
    do {                                                                                           \
        char *got_ = types_of((cat), (sql));                                                       \
        if (strcmp(got_, (want)) != 0) df_test_fail(__FILE__, __LINE__, "%s\n got %s\nwant %s", (sql), got_, (want)); \
        df_free(got_);                                                                             \
    } while (0)

DF_TEST(binder_names_and_types_follow_datafusion) {
    df_catalog *cat = catalog_with_t();
    EXPECT_TYPES(cat, "SELECT 1, 1.5, 'x', true, NULL", "Int64(1):Int64, Float64(1.5):Float64, Utf8(\"x\"):Utf8, "
                                                       "Boolean(true):Boolean, NULL:Null");
    EXPECT_TYPES(cat, "SELECT a, a + 1, a * a, a / 2 FROM t",
                 "a:Int32, t.a + Int64(1):Int64, t.a * t.a:Int32, t.a / Int64(2):Int64");
    EXPECT_TYPES(cat, "SELECT c + 1, c * c, c / c, c + 1.5 FROM t",
                 "t.c + Int64(1):Decimal128(23, 2), t.c * t.c:Decimal128(21, 4), t.c / t.c:Decimal128(16, 6), "
                 "t.c + Float64(1.5):Float64");
    EXPECT_TYPES(cat, "SELECT sum(a), avg(a), sum(c), avg(c), count(*), min(b) FROM t",
                 "sum(t.a):Int64, avg(t.a):Float64, sum(t.c):Decimal128(20, 2), avg(t.c):Decimal128(14, 6), "
                 "count(*):Int64, min(t.b):Utf8");
    EXPECT_TYPES(cat, "SELECT \"Mixed\", upper(b) AS u, CAST(a AS BIGINT) FROM T t",
                 "Mixed:Float64, u:Utf8, CAST(t.a AS Int64):Int64");
    EXPECT_TYPES(cat, "SELECT date '2020-01-01', timestamp '2020-01-01 10:00', interval '1 day'",
                 "CAST(Utf8(\"2020-01-01\") AS Date32):Date32, "
                 "CAST(Utf8(\"2020-01-01 10:00\") AS Timestamp(ns)):Timestamp(ns), "
                 "0 mons 1 days 0 nanos:Interval(MonthDayNano)");
    EXPECT_TYPES(cat, "SELECT arrow_typeof(c * 2) FROM t", "arrow_typeof(t.c * Int64(2)):Utf8");
    df_catalog_free(cat);
}

DF_TEST(binder_errors_have_kinds_and_offsets) {
    df_catalog *cat = catalog_with_t();
    EXPECT_TYPES(cat, "SELECT nope FROM t", "ERROR sql_unknown_column@7");
    EXPECT_TYPES(cat, "SELECT a FROM missing", "ERROR sql_unknown_table@14");
    EXPECT_TYPES(cat, "SELECT mixed FROM t", "ERROR sql_unknown_column@7");
    EXPECT_TYPES(cat, "SELECT a FROM t x JOIN t y ON x.a = y.a", "ERROR sql_ambiguous_column@7");
    EXPECT_TYPES(cat, "SELECT a + b FROM t", "ERROR sql_type@7");
    EXPECT_TYPES(cat, "SELECT a FROM t WHERE a", "ERROR sql_type@22");
    EXPECT_TYPES(cat, "SELECT no_such_fn(a) FROM t", "ERROR sql_unsupported@7");
    EXPECT_TYPES(cat, "SELECT a, sum(a) FROM t", "ERROR sql_type@7");
    EXPECT_TYPES(cat, "SELECT sum(a) FROM t WHERE sum(a) > 1", "ERROR sql_type@27");
    EXPECT_TYPES(cat, "SELECT a FROM t ORDER BY 3", "ERROR sql_type@25");
    EXPECT_TYPES(cat, "SELECT CAST(a AS whatever) FROM t", "ERROR sql_type@17");
    df_catalog_free(cat);
}

DF_TEST(optimizer_pushes_and_prunes) {
    df_catalog *cat = catalog_with_t();
    df_query *q = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_query_plan(cat, "SELECT b FROM (SELECT a, b, c FROM t WHERE c > 1) s WHERE a = 3 AND 1 + 1 = 2 LIMIT 4",
                               &q, &err),
                 &err);
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_query_explain(q, &b, &err), &err);
    /* Both conjuncts reach the scan, the constant one is folded away, only a and b and c are read. */
    DF_ASSERT(strstr(b.data, "TableScan: T projection=[a, b, c] partial_filters=[") != NULL);
    DF_ASSERT(strstr(b.data, "Int64(1) + Int64(1)") == NULL);
    DF_ASSERT(strstr(b.data, "fetch=4") != NULL);
    df_buf_free(&b);
    df_query_free(q);
    /* Cross join + equality becomes a keyed join. */
    DF_ASSERT_OK(df_query_plan(cat, "SELECT x.a FROM t x, t y WHERE x.a = y.a AND y.b = 'k'", &q, &err), &err);
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_query_explain(q, &b, &err), &err);
    DF_ASSERT(strstr(b.data, "Inner Join: (x.a = y.a)") != NULL);
    DF_ASSERT(strstr(b.data, "HashJoinExec") != NULL);
    df_buf_free(&b);
    df_query_free(q);
    df_catalog_free(cat);
}

DF_TEST(catalog_is_case_insensitive) {
    df_catalog *cat = catalog_with_t();
    df_error err = {0};
    DF_ASSERT(df_catalog_contains(cat, "t"));
    df_catalog_ref ref;
    DF_ASSERT_OK(df_catalog_lookup(cat, "t", &ref, &err), &err);
    DF_ASSERT_EQ_INT(ref.kind, DF_CATALOG_TABLE);
    DF_ASSERT_EQ_STR(ref.name, "T");
    DF_ASSERT_KIND(df_catalog_register_table(cat, "t", ref.provider, &err), DF_ERR_DUPLICATE_SOURCE_NAME);
    df_catalog_ref_clear(&ref);
    char **names;
    int32_t n;
    DF_ASSERT_OK(df_catalog_names(cat, &names, &n, &err), &err);
    DF_ASSERT_EQ_INT(n, 1);
    DF_ASSERT_EQ_STR(names[0], "T");
    df_free(names[0]);
    df_free(names);
    DF_ASSERT_OK(df_catalog_unregister(cat, "T", &err), &err);
    DF_ASSERT_KIND(df_catalog_unregister(cat, "T", &err), DF_ERR_NOT_FOUND);
    df_error_clear(&err);
    df_catalog_free(cat);
}

DF_TEST(type_coercion_rules) {
    df_type *i32 = df_type_int32(), *u64 = df_type_uint64(), *i64 = df_type_int64(), *f32 = df_type_float32();
    df_type *d = df_type_decimal(10, 2);
    df_type *r = df__sqlt_comparison(i32, u64);
    DF_ASSERT_EQ_INT(r->id, DF_TYPE_DECIMAL128);
    DF_ASSERT_EQ_INT(r->precision, 20);
    df_type_release(r);
    r = df__sqlt_comparison(i64, f32);
    DF_ASSERT_EQ_INT(r->id, DF_TYPE_FLOAT32);
    df_type_release(r);
    r = df__sqlt_comparison(d, i32);
    DF_ASSERT_EQ_INT(r->precision, 12);
    DF_ASSERT_EQ_INT(r->scale, 2);
    df_type_release(r);
    df_type *lt, *rt, *ret;
    DF_ASSERT(df__sqlt_arith(SQLT_MUL, d, d, &lt, &rt, &ret));
    DF_ASSERT_EQ_INT(ret->precision, 21);
    DF_ASSERT_EQ_INT(ret->scale, 4);
    df_type_release(lt);
    df_type_release(rt);
    df_type_release(ret);
    DF_ASSERT(!df__sqlt_arith(SQLT_ADD, df_type_utf8(), i32, &lt, &rt, &ret));
    df_type_release(d);
}

/* A NUL byte anywhere in SQL text (given with its length) is a syntax error at its offset, never a cut. */
DF_TEST(lexer_refuses_nul_bytes_with_their_offset) {
    static const struct {
        const char *sql;
        size_t len;
        int64_t offset;
    } cases[] = {
        {"SELECT 1 WHERE id<0\0 OR id>=0", 29, 19},
        {"SELECT 1 AS a\0, 2 AS b", 22, 13},
        {"SELECT 'a\0b'", 12, 9},
        {"SELECT 1 -- c\0omment", 20, 13},
        {"SELECT \"x\0y\"", 12, 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        df_arena a;
        df_arena_init(&a, 4096, 0);
        ast_query *q = NULL;
        df_error err = {0};
        DF_ASSERT_KIND(df__sql_parse(cases[i].sql, cases[i].len, &a, &q, &err), DF_ERR_SQL_SYNTAX);
        DF_ASSERT_EQ_INT(err.offset, cases[i].offset);
        df_error_clear(&err);
        df_arena_destroy(&a);
    }
}

/* The EXPLAIN text of sql over catalog cat, in *b (caller frees). */
static void explain_into(df_catalog *cat, const char *sql, df_buf *b) {
    df_query *q = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_query_plan(cat, sql, &q, &err), &err);
    df_buf_init(b, 0);
    DF_ASSERT_OK(df_query_explain(q, b, &err), &err);
    df_query_free(q);
}

DF_TEST(subqueries_decorrelate_into_joins) {
    df_catalog *cat = catalog_with_t();
    df_buf b;
    /* A correlated EXISTS is a semi join on the correlation keys, not a nested loop. */
    explain_into(cat, "SELECT a FROM t x WHERE EXISTS (SELECT 1 FROM t y WHERE y.b = x.b AND y.c > 1)", &b);
    DF_ASSERT(strstr(b.data, "LeftSemi Join: (x.b = y.b)") != NULL);
    DF_ASSERT(strstr(b.data, "NestedLoopJoinExec") == NULL);
    df_buf_free(&b);
    /* A correlated LATERAL with an aggregate: grouped on the key and left-joined on it. */
    explain_into(cat, "SELECT x.a, s.n FROM t x, LATERAL (SELECT count(*) AS n FROM t y WHERE y.a = x.a) s", &b);
    DF_ASSERT(strstr(b.data, "Left Join:") != NULL);
    DF_ASSERT(strstr(b.data, "Aggregate") != NULL);
    df_buf_free(&b);
    /* ANY / ALL read aggregates of the subquery. */
    explain_into(cat, "SELECT a FROM t WHERE a > ALL (SELECT a FROM t WHERE c > 1)", &b);
    DF_ASSERT(strstr(b.data, "max(") != NULL || strstr(b.data, "__scalar_subquery_1_max") != NULL);
    df_buf_free(&b);
    explain_into(cat, "SELECT * FROM VALUES (1, 'x'), (2, 'y') AS v(n, s)", &b);
    df_buf_free(&b);
    EXPECT_TYPES(cat, "SELECT * FROM t x FULL JOIN LATERAL (SELECT 1 AS o) s ON true", "ERROR sql_unsupported@28");
    EXPECT_TYPES(cat, "SELECT * FROM t x, LATERAL (SELECT x.a AS o) s", "ERROR sql_unknown_column@35");
    EXPECT_TYPES(cat, "SELECT a FROM t WHERE a > ANY (SELECT a, b FROM t)", "ERROR sql_type@22");
    df_catalog_free(cat);
}
