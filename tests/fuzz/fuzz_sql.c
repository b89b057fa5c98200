/*
 * libFuzzer target for the SQL front end (lexer, parser, binder, optimizer)
 * and, for inputs that plan, the executor: the input bytes are the query
 * text.  The catalog and the checks are in sql_harness.h;
 * fuzz_sql_grammar.c feeds the same harness queries built from a grammar.
 */
#include <stddef.h>
#include <stdint.h>

#include "sql_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *sql = df_malloc(size + 1);
    if (!sql) return 0;
    memcpy(sql, data, size);
    sql[size] = '\0';
    sql_harness_run(sql);
    df_free(sql);
    return 0;
}
