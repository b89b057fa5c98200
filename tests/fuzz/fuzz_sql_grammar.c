/*
 * Grammar-aware libFuzzer target for the SQL engine: the input bytes are
 * not the query but the choices that build one from a grammar of the
 * dialect (SELECT with joins, subqueries, CTEs, set operations, windows,
 * grouping, ordering; expressions with operators, CASE, CAST, IN, BETWEEN,
 * LIKE, functions).  Byte-level mutation of query text mostly exercises the
 * lexer's error paths; choices keep almost every input a query that parses
 * and binds, so the fuzzer spends its time in the binder, the optimizer
 * and the operators.  The query runs through sql_harness.h (the same
 * catalog and checks as fuzz_sql.c).
 *
 * The generator is bounded: nesting depth, list lengths and the text size
 * are capped, and an exhausted input reads as zeros (the first choice), so
 * every input yields one finite query.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_DEPTH = 6, MAX_TEXT = 8192 };

typedef struct gen {
    const uint8_t *data;
    size_t size, pos;
    char text[MAX_TEXT];
    size_t len;
    int depth;
    int scope;              /* the FROM clause being generated: one of the scopes below */
} gen;

/* The next choice in [0, n): one input byte, or 0 once the input is used up. */
static unsigned pick(gen *g, unsigned n) {
    if (n <= 1) return 0;
    unsigned b = g->pos < g->size ? g->data[g->pos++] : 0;
    return b % n;
}

static void put(gen *g, const char *s) {
    size_t n = strlen(s);
    if (g->len + n >= MAX_TEXT) n = MAX_TEXT - 1 - g->len;
    memcpy(g->text + g->len, s, n);
    g->len += n;
    g->text[g->len] = '\0';
}

static void put_one(gen *g, const char *const *choices, unsigned n) { put(g, choices[pick(g, n)]); }
#define PUT_ONE(g, arr) put_one((g), (arr), (unsigned)(sizeof(arr) / sizeof((arr)[0])))

/* What a query's FROM clause makes visible, so that most column references bind. */
static const char *const t_columns[] = {"a", "b", "c", "d", "e", "f", "t.a", "t.b"};
static const char *const u_columns[] = {"k", "v", "u.k", "u.v"};
static const char *const tu_columns[] = {"a", "b", "c", "d", "e", "f", "k", "v", "t.a", "u.k", "u.v"};
static const char *const *const scope_columns[] = {t_columns, u_columns, tu_columns};
static const unsigned scope_ncolumns[] = {8, 4, 11};
static const char *const scope_from[] = {"t", "u", "t"};

static void column(gen *g) { put(g, scope_columns[g->scope][pick(g, scope_ncolumns[g->scope])]); }
static const char *const literals[] = {
    "0", "1", "-1", "2147483647", "-9223372036854775808", "9223372036854775807", "0.0", "-0.0", "1.5",
    "1e308", "'x'", "''", "'yz'", "'%'", "NULL", "TRUE", "FALSE", "DATE '2020-01-01'",
    "TIMESTAMP '2021-06-30 12:34:56'", "INTERVAL '1 month'", "CAST(NULL AS INT)", "'NaN'::double",
    "1.25::decimal(10,2)", "'2001-09-28'::date", "X'00ff'"};
static const char *const binary_ops[] = {"+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "AND", "OR",
                                         "||", "IS DISTINCT FROM", "IS NOT DISTINCT FROM", "&", "|", "#",
                                         "<<", ">>"};
static const char *const unary_fns[] = {"abs", "upper", "lower", "length", "trim", "coalesce", "sqrt", "floor",
                                        "ceil", "round", "sign", "ln", "exp", "reverse", "md5", "isnan",
                                        "to_hex", "ascii", "char_length", "date_trunc('month', f) = ",
                                        "extract(year FROM f) + ", "initcap", "btrim", "cot", "signum"};
static const char *const binary_fns[] = {"coalesce", "nullif", "power", "substr", "left", "right", "repeat",
                                         "strpos", "concat", "greatest", "least", "mod", "atan2", "log",
                                         "starts_with", "ends_with", "split_part(b, ',', 1) || "};
static void expr(gen *g);
static void query(gen *g);

/* Aggregate calls around one argument: the text before it and after it. */
static const char *const aggregates[][2] = {
    {"count(", ")"}, {"sum(", ")"}, {"avg(", ")"}, {"min(", ")"}, {"max(", ")"}, {"count(DISTINCT ", ")"},
    {"bool_and(", ")"}, {"bool_or(", ")"}, {"stddev(", ")"}, {"var_pop(", ")"}, {"median(", ")"},
    {"array_agg(", ")"}, {"approx_distinct(", ")"}, {"string_agg(", ", ',')"}, {"sum(DISTINCT ", ")"}};

static void aggregate(gen *g) {
    unsigned i = pick(g, (unsigned)(sizeof aggregates / sizeof aggregates[0]));
    put(g, aggregates[i][0]);
    expr(g);
    put(g, aggregates[i][1]);
}
static const char *const types[] = {"INT", "BIGINT", "SMALLINT", "TINYINT", "DOUBLE", "REAL", "VARCHAR",
                                    "DECIMAL(10,2)", "DECIMAL(38,10)", "DATE", "TIMESTAMP", "BOOLEAN",
                                    "BYTEA"};
static const char *const windows[] = {"row_number()", "rank()", "dense_rank()", "lag(a)", "lead(a, 2)",
                                      "sum(a)", "count(*)", "first_value(b)", "ntile(3)", "percent_rank()"};


static void expr_list(gen *g, unsigned most) {
    unsigned n = 1 + pick(g, most);
    for (unsigned i = 0; i < n; i++) {
        if (i) put(g, ", ");
        expr(g);
    }
}

static void subquery(gen *g) {
    int outer = g->scope;
    put(g, "(");
    query(g);
    put(g, ")");
    g->scope = outer;
}

static void expr(gen *g) {
    /* Deeper levels lean to leaves, so that queries stay readable and bind. */
    if (++g->depth > MAX_DEPTH || g->len > MAX_TEXT - 256 || (g->depth > 2 && pick(g, 3))) {
        if (pick(g, 2)) column(g); else PUT_ONE(g, literals);
        g->depth--;
        return;
    }
    switch (pick(g, 18)) {
    case 0: case 1: column(g); break;
    case 2: case 3: PUT_ONE(g, literals); break;
    case 4: expr(g); put(g, " "); PUT_ONE(g, binary_ops); put(g, " "); expr(g); break;
    case 5: put(g, "("); expr(g); put(g, ")"); break;
    case 6: put(g, pick(g, 2) ? "NOT " : "-"); expr(g); break;
    case 7: PUT_ONE(g, unary_fns); put(g, "("); expr(g); put(g, ")"); break;
    case 8: PUT_ONE(g, binary_fns); put(g, "("); expr(g); put(g, ", "); expr(g); put(g, ")"); break;
    case 9:
        put(g, "CASE");
        if (pick(g, 2)) { put(g, " "); expr(g); }
        for (unsigned i = 0, n = 1 + pick(g, 3); i < n; i++) {
            put(g, " WHEN "); expr(g); put(g, " THEN "); expr(g);
        }
        if (pick(g, 2)) { put(g, " ELSE "); expr(g); }
        put(g, " END");
        break;
    case 10: put(g, pick(g, 2) ? "CAST(" : "TRY_CAST("); expr(g); put(g, " AS "); PUT_ONE(g, types); put(g, ")"); break;
    case 11:
        expr(g); put(g, pick(g, 2) ? " IN (" : " NOT IN (");
        if (pick(g, 3)) expr_list(g, 12); else query(g);
        put(g, ")");
        break;
    case 12: expr(g); put(g, pick(g, 2) ? " BETWEEN " : " NOT BETWEEN "); expr(g); put(g, " AND "); expr(g); break;
    case 13: expr(g); put(g, pick(g, 2) ? " LIKE " : " ILIKE "); PUT_ONE(g, literals); break;
    case 14: expr(g); put(g, pick(g, 2) ? " IS NULL" : " IS NOT TRUE"); break;
    case 15: put(g, pick(g, 2) ? "EXISTS " : ""); subquery(g); break;
    case 16: expr(g); put(g, "::"); PUT_ONE(g, types); break;
    default: put(g, "[1, 2, 3]"); break;
    }
    g->depth--;
}

static const char *const joins[] = {" JOIN ", " LEFT JOIN ", " RIGHT JOIN ", " FULL JOIN ", " CROSS JOIN ",
                                    " INNER JOIN ", " LEFT SEMI JOIN ", " LEFT ANTI JOIN "};

static void select_core(gen *g) {
    g->scope = (int)pick(g, 3);
    put(g, pick(g, 4) ? "SELECT " : "SELECT DISTINCT ");
    bool grouped = pick(g, 3) == 0;
    unsigned n = 1 + pick(g, 4);
    for (unsigned i = 0; i < n; i++) {
        if (i) put(g, ", ");
        switch (pick(g, 6)) {
        case 0: put(g, "*"); continue; /* no alias */
        case 1: aggregate(g); break;
        case 2: PUT_ONE(g, windows); put(g, " OVER (PARTITION BY "); expr(g); put(g, " ORDER BY "); expr(g); put(g, ")"); break;
        default: expr(g); break;
        }
        if (pick(g, 2)) {
            char alias[16];
            snprintf(alias, sizeof alias, " AS c%u", i);
            put(g, alias);
        }
    }
    put(g, " FROM ");
    put(g, scope_from[g->scope]);
    if (g->scope == 2) {
        unsigned kind = pick(g, (unsigned)(sizeof joins / sizeof joins[0]));
        put(g, joins[kind]);
        put(g, "u");
        if (kind != 4) {
            put(g, pick(g, 2) ? " ON a = k" : " ON ");
            if (g->text[g->len - 1] == ' ') expr(g);
        }
    }
    if (pick(g, 2)) { put(g, " WHERE "); expr(g); }
    if (grouped) {
        put(g, " GROUP BY ");
        expr_list(g, 3);
        if (pick(g, 2)) { put(g, " HAVING "); aggregate(g); put(g, " > 0"); }
    }
}

static void query(gen *g) {
    if (++g->depth > MAX_DEPTH) {
        put(g, "SELECT 1");
        g->depth--;
        return;
    }
    if (pick(g, 6) == 0) {
        put(g, "WITH w AS (");
        select_core(g);
        put(g, ") ");
    }
    select_core(g);
    if (pick(g, 5) == 0) {
        static const char *const setops[] = {" UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT "};
        PUT_ONE(g, setops);
        select_core(g);
    }
    if (pick(g, 2)) {
        put(g, " ORDER BY ");
        expr_list(g, 4);
        if (pick(g, 2)) put(g, pick(g, 2) ? " DESC NULLS FIRST" : " ASC NULLS LAST");
    }
    if (pick(g, 3) == 0) put(g, pick(g, 2) ? " LIMIT 3" : " LIMIT 2 OFFSET 1");
    g->depth--;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    gen *g = df_calloc(1, sizeof *g);
    if (!g) return 0;
    g->data = data;
    g->size = size;
    query(g);
    /* DF_FUZZ_PRINT=1 shows the query of each input (to read a finding). */
    if (getenv("DF_FUZZ_PRINT")) fprintf(stderr, "%s\n", g->text);
    sql_harness_run(g->text);
    df_free(g);
    return 0;
}
