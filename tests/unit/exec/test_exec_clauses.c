/* Query clauses: WITH RECURSIVE, DISTINCT ON, aliases in HAVING / QUALIFY, `*` under GROUP BY. */
#include "exec_test_util.h"

DF_TEST(recursive_cte) {
    df_catalog *cat = tu_catalog();
    tu_table_from_sql(cat, "edges", "SELECT * FROM (VALUES (1, 2), (2, 3), (3, 1), (4, 4)) AS e(src, dst)", 2);
    TU_EXPECT(cat, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT sum(n), count(*) FROM r",
              "15|5");
    /* UNION drops rows already produced, so a cycle ends. */
    TU_EXPECT(cat,
              "WITH RECURSIVE reach AS (SELECT src, dst FROM edges UNION SELECT r.src, e.dst FROM reach AS r "
              "JOIN edges AS e ON r.dst = e.src) SELECT count(*) FROM reach",
              "10");
    /* Rows stream out: a LIMIT stops a recursion that would never end. */
    TU_EXPECT(cat, "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT n FROM r LIMIT 3",
              "1\n2\n3");
    /* Column types come from the static term; nullability from both. */
    TU_EXPECT(cat,
              "WITH RECURSIVE t(a) AS (SELECT 1 UNION ALL SELECT CAST(NULL AS INT) FROM t WHERE a IS NOT NULL) "
              "SELECT count(*), count(a) FROM t",
              "2|1");
    /* Without a self-reference it is an ordinary CTE. */
    TU_EXPECT(cat, "WITH RECURSIVE c AS (SELECT 2 UNION SELECT 2) SELECT * FROM c", "2");
    /* The same recursive CTE used twice runs twice. */
    TU_EXPECT(cat,
              "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
              "SELECT count(*) FROM r AS a, r AS b",
              "9");
    TU_EXPECT_ERROR(cat, "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT r.n FROM r JOIN r AS q ON r.n = q.n) SELECT * FROM r",
                    DF_ERR_SQL_UNSUPPORTED);
    /* Without RECURSIVE the name is not visible in its own definition. */
    TU_EXPECT_ERROR(cat, "WITH r AS (SELECT 1 AS n UNION ALL SELECT n FROM r) SELECT * FROM r", DF_ERR_SQL_UNKNOWN_TABLE);
    TU_EXPECT_ERROR(cat, "WITH c(a) AS (SELECT 1, 2) SELECT * FROM c", DF_ERR_SQL_TYPE);
    /* A recursion that never ends fails at the iteration bound instead of hanging. */
    TU_EXPECT_ERROR(cat, "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n FROM r) SELECT count(*) FROM r",
                    DF_ERR_SQL_RECURSION_LIMIT);
    /* ... and one that doubles its rows fails at the row bound. */
    TU_EXPECT_ERROR(cat,
                    "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n FROM r CROSS JOIN (VALUES (1), (2)) v(x)) "
                    "SELECT count(*) FROM r",
                    DF_ERR_SQL_RECURSION_LIMIT);
    df_catalog_free(cat);
}

DF_TEST(distinct_on) {
    df_catalog *cat = tu_catalog();
    tu_table_from_sql(cat, "t", "SELECT * FROM (VALUES ('a', 1, 10), ('a', 2, 30), ('b', 3, 20), ('b', 4, 5)) AS t(g, x, y)",
                      2);
    TU_EXPECT(cat, "SELECT DISTINCT ON (g) g, x FROM t ORDER BY g, y DESC", "a|2\nb|3");
    TU_EXPECT(cat, "SELECT DISTINCT ON (g) x FROM t ORDER BY g DESC, x", "3\n1");
    TU_EXPECT(cat, "SELECT DISTINCT ON (g) g, sum(y) AS s FROM t GROUP BY g, x ORDER BY g, s", "a|10\nb|5");
    TU_EXPECT_SORTED(cat, "SELECT DISTINCT ON (g) g FROM t", 2, "a\nb");
    TU_EXPECT_ERROR(cat, "SELECT DISTINCT ON (x) g FROM t ORDER BY g", DF_ERR_SQL_TYPE);
    df_catalog_free(cat);
}

DF_TEST(clause_aliases) {
    df_catalog *cat = tu_catalog();
    tu_table_from_sql(cat, "t", "SELECT * FROM (VALUES ('a', 1), ('a', 2), ('b', 3)) AS t(g, x)", 1);
    TU_EXPECT(cat, "SELECT g, max(x) AS m FROM t GROUP BY g HAVING m > 2", "b|3");
    TU_EXPECT(cat, "SELECT g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC) AS rn FROM t QUALIFY rn = 1 ORDER BY g",
              "a|2|1\nb|3|1");
    /* An alias that is also an input column name means the column. */
    TU_EXPECT(cat, "SELECT g, x * 10 AS x FROM t QUALIFY x = max(x) OVER () ORDER BY g", "b|30");
    TU_EXPECT_ERROR(cat, "SELECT g FROM t QUALIFY x > 1", DF_ERR_SQL_TYPE);
    TU_EXPECT(cat, "SELECT * FROM t GROUP BY g, x ORDER BY x", "a|1\na|2\nb|3");
    TU_EXPECT_ERROR(cat, "SELECT * FROM t GROUP BY g", DF_ERR_SQL_TYPE);
    /* GROUP BY ALL keys on every non-aggregate item; more items than an explicit list would have. */
    TU_EXPECT(cat, "SELECT g, x % 2 AS p, upper(g) AS u, count(*) FROM t GROUP BY ALL ORDER BY g, p", "a|0|A|1\na|1|A|1\nb|1|B|1");
    /* min of untyped NULLs is a Null column, which has no value buffers to fill. */
    TU_EXPECT(cat, "SELECT DISTINCT 'yz', min(NULL) FROM t", "yz|NULL");
    TU_EXPECT(cat, "SELECT g, max(NULL) FROM t GROUP BY g ORDER BY g", "a|NULL\nb|NULL");
    df_catalog_free(cat);
}

DF_TEST(grouping_sets) {
    df_catalog *cat = tu_catalog();
    tu_table_from_sql(cat, "t", "SELECT * FROM (VALUES ('a', 'x', 1), ('a', 'y', 2), ('b', 'x', 3)) AS t(g, h, v)", 2);
    TU_EXPECT(cat, "SELECT g, h, sum(v), grouping(g, h) AS gg FROM t GROUP BY ROLLUP(g, h) ORDER BY g, h",
              "a|x|1|0\na|y|2|0\na|NULL|3|1\nb|x|3|0\nb|NULL|3|1\nNULL|NULL|6|3");
    TU_EXPECT(cat, "SELECT count(*) FROM (SELECT g, h FROM t GROUP BY CUBE(g, h))", "8");
    /* Over no rows the empty set () still gives its row, as a global aggregate does; the others none. */
    TU_EXPECT(cat, "SELECT g, count(*), sum(v), median(v), grouping(g) FROM t WHERE v > 99 GROUP BY ROLLUP(g)",
              "NULL|0|NULL|NULL|1");
    TU_EXPECT(cat, "SELECT count(*) FROM t WHERE 1 = 2 GROUP BY GROUPING SETS ((), (g))", "0");
    TU_EXPECT(cat, "SELECT count(*) FROM t WHERE v > 99 GROUP BY GROUPING SETS ((g), (h))", "");
    TU_EXPECT(cat, "SELECT g, h, count(*) FROM t GROUP BY GROUPING SETS ((g), (h), ()) ORDER BY g, h",
              "a|NULL|2\nb|NULL|1\nNULL|x|2\nNULL|y|1\nNULL|NULL|3");
    /* Aggregate arguments see the real values of keys a set leaves out. */
    TU_EXPECT(cat, "SELECT g, max(h) FROM t GROUP BY g, ROLLUP(h) HAVING grouping(h) = 1 ORDER BY g", "a|y\nb|x");
    TU_EXPECT(cat, "SELECT g, grouping(g) FROM t GROUP BY g ORDER BY g", "a|0\nb|0");
    TU_EXPECT_ERROR(cat, "SELECT g, grouping(h) FROM t GROUP BY g", DF_ERR_SQL_TYPE);
    TU_EXPECT_ERROR(cat, "SELECT grouping() FROM t GROUP BY CUBE(g)", DF_ERR_SQL_TYPE);
    df_catalog_free(cat);
}
