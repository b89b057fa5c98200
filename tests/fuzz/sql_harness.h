/*
 * The SQL fuzz targets' shared harness: a catalog of two small in-memory
 * tables (built once per process) and one run of a query text, which must
 * either plan or fail with a clear error kind; planned queries must run to
 * the end or fail cleanly, never crash or leak.
 *
 *   t(a BIGINT, b VARCHAR, c DOUBLE, d DECIMAL(10,2), e BOOLEAN, f DATE)
 *   u(k INT, v VARCHAR)
 *
 * Queries run under LIMIT 64 with tiny batches and two workers, so every
 * input finishes quickly.
 */
#ifndef DF_FUZZ_SQL_HARNESS_H
#define DF_FUZZ_SQL_HARNESS_H

#include <stdint.h>
#include <string.h>

#include "exec/query.h"

static df_catalog *catalog;

static void add_table(const char *name, const char *sql) {
    df_query *q = NULL;
    df_batch_stream *s = NULL;
    df_batch *b = NULL;
    if (df_query_plan(catalog, sql, &q, NULL) || df_query_execute(q, NULL, &s, NULL) ||
        df_batch_stream_next(s, &b, NULL) || !b)
        __builtin_trap();
    df_table_provider *p = NULL;
    if (df_memory_provider_new(df_query_schema(q), &b, 1, &p, NULL) ||
        df_catalog_register_table(catalog, name, p, NULL))
        __builtin_trap();
    df_table_provider_release(p);
    df_batch_release(b);
    df_batch_stream_close(s);
    df_query_free(q);
}

static void setup(void) {
    if (catalog) return;
    if (df_catalog_new(&catalog, NULL)) __builtin_trap();
    add_table("t", "SELECT CAST(column1 AS BIGINT) AS a, column2 AS b, column3 AS c, "
                   "CAST(column4 AS DECIMAL(10,2)) AS d, column5 AS e, CAST(column6 AS DATE) AS f FROM (VALUES "
                   "(1, 'x', 1.5, 1.25, true, '2020-01-01'), (2, NULL, -0.5, NULL, false, '2021-06-30'), "
                   "(NULL, 'yz', NULL, 3.5, NULL, NULL), (4, '', 1e10, -7.75, true, '1999-12-31'), "
                   "(5, 'x', 0.0, 0.01, false, '2024-02-29'))");
    add_table("u", "SELECT CAST(column1 AS INT) AS k, column2 AS v FROM (VALUES (1, 'one'), (2, 'two'), "
                   "(2, 'deux'), (NULL, 'none'))");
}

/* Plans, explains and runs `sql` (NUL-terminated). */
static void sql_harness_run(const char *sql) {
    setup();
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df_query *q = NULL, *limited = NULL;
    df_errkind k = df_query_plan(catalog, sql, &q, &err);
    if (k) {
        /* A failure must name a kind and never leave a query behind. */
        if (q || err.kind != k || err.message[0] == '\0') __builtin_trap();
    } else {
        df_buf explain;
        df_buf_init(&explain, 0);
        (void)df_query_explain(q, &explain, NULL);
        df_buf_free(&explain);
        if (df_query_limit(q, 64, &limited, NULL) == DF_OK) {
            df_exec_options o;
            df_exec_options_init(&o);
            o.target_partitions = 2;
            o.batch_size = 3;
            o.memory_limit = 64 << 20;
            df_batch_stream *s = NULL;
            if (df_query_execute(limited, &o, &s, NULL) == DF_OK) {
                for (int i = 0; i < 1000; i++) {
                    df_batch *b = NULL;
                    if (df_batch_stream_next(s, &b, NULL) != DF_OK || !b) break;
                    if (b->ncols != df_query_schema(limited)->nfields) __builtin_trap();
                    df_batch_release(b);
                }
                df_batch_stream_close(s);
            }
            df_query_free(limited);
        }
        df_query_free(q);
    }
    df_error_clear(&err);
}

#endif
