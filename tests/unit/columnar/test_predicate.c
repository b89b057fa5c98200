/* Unit tests for scan predicates against statistics and partition values. */
#include "df_test.h"

#include "columnar/table_provider.h"

static df_scalar i64(int64_t v) { return (df_scalar){.type = df_type_int64(), .v.i64 = v}; }

static df_column_stats range(int64_t lo, int64_t hi, int64_t nulls) {
    df_column_stats st = {.has_min = true, .has_max = true, .has_null_count = true, .min_exact = true, .max_exact = true};
    st.min = i64(lo);
    st.max = i64(hi);
    st.null_count = nulls;
    return st;
}

static bool may(df_pred_op op, int64_t v, df_column_stats st, int64_t rows) {
    df_scalar val = i64(v);
    df_scan_predicate p = {.column = 0, .op = op, .nvalues = 1, .values = &val};
    return df_scan_predicate_may_match(&p, &st, rows);
}

DF_TEST(comparisons_prune_only_when_proven) {
    df_column_stats st = range(10, 20, 0);
    DF_ASSERT(!may(DF_PRED_EQ, 5, st, 100));
    DF_ASSERT(may(DF_PRED_EQ, 10, st, 100));
    DF_ASSERT(!may(DF_PRED_EQ, 21, st, 100));
    DF_ASSERT(!may(DF_PRED_LT, 10, st, 100));
    DF_ASSERT(may(DF_PRED_LT, 11, st, 100));
    DF_ASSERT(may(DF_PRED_LE, 10, st, 100));
    DF_ASSERT(!may(DF_PRED_LE, 9, st, 100));
    DF_ASSERT(!may(DF_PRED_GT, 20, st, 100));
    DF_ASSERT(may(DF_PRED_GE, 20, st, 100));
    DF_ASSERT(!may(DF_PRED_GE, 21, st, 100));
    DF_ASSERT(may(DF_PRED_NE, 15, st, 100));
    df_column_stats one = range(7, 7, 0);
    DF_ASSERT(!may(DF_PRED_NE, 7, one, 100));
    one.max_exact = false;
    DF_ASSERT(may(DF_PRED_NE, 7, one, 100));
}

DF_TEST(unknown_stats_never_prune) {
    df_column_stats st = {0};
    DF_ASSERT(may(DF_PRED_EQ, 5, st, 100));
    DF_ASSERT(may(DF_PRED_LT, 5, st, -1));
    df_scan_predicate isnull = {.op = DF_PRED_IS_NULL};
    DF_ASSERT(df_scan_predicate_may_match(&isnull, &st, 100));
    df_column_stats nulls = range(1, 2, 0);
    DF_ASSERT(!df_scan_predicate_may_match(&isnull, &nulls, 100));
}

DF_TEST(all_null_units_match_nothing_but_is_null) {
    df_column_stats st = {.has_null_count = true, .null_count = 50};
    DF_ASSERT(!may(DF_PRED_EQ, 5, st, 50));
    df_scan_predicate notnull = {.op = DF_PRED_IS_NOT_NULL};
    DF_ASSERT(!df_scan_predicate_may_match(&notnull, &st, 50));
    DF_ASSERT(df_scan_predicate_may_match(&notnull, &st, 51));
}

DF_TEST(in_lists_and_partition_values) {
    df_scalar vals[3] = {i64(1), i64(30), i64(40)};
    df_scan_predicate in = {.op = DF_PRED_IN, .nvalues = 3, .values = vals};
    df_column_stats st = range(10, 20, 0);
    DF_ASSERT(!df_scan_predicate_may_match(&in, &st, 10));
    vals[1] = i64(15);
    DF_ASSERT(df_scan_predicate_may_match(&in, &st, 10));
    df_scalar part = i64(40);
    DF_ASSERT(df_scan_predicate_matches_value(&in, &part));
    part = i64(41);
    DF_ASSERT(!df_scan_predicate_matches_value(&in, &part));
    df_scalar null_part = {.type = df_type_int64(), .is_null = true};
    DF_ASSERT(!df_scan_predicate_matches_value(&in, &null_part));
    df_scan_predicate isnull = {.op = DF_PRED_IS_NULL};
    DF_ASSERT(df_scan_predicate_matches_value(&isnull, &null_part));
    df_scalar five = i64(5);
    df_scan_predicate lt = {.op = DF_PRED_LT, .nvalues = 1, .values = &five};
    part = i64(4);
    DF_ASSERT(df_scan_predicate_matches_value(&lt, &part));
    part = i64(5);
    DF_ASSERT(!df_scan_predicate_matches_value(&lt, &part));
}

DF_TEST(strings_compare_bytewise) {
    df_scalar a = {.type = df_type_utf8(), .v.bytes = {(uint8_t *)"abc", 3}};
    df_scalar b = {.type = df_type_utf8(), .v.bytes = {(uint8_t *)"abd", 3}};
    df_scalar c = {.type = df_type_utf8(), .v.bytes = {(uint8_t *)"ab", 2}};
    bool ok;
    DF_ASSERT(df_scalar_compare(&a, &b, &ok) < 0 && ok);
    DF_ASSERT(df_scalar_compare(&c, &a, &ok) < 0 && ok);
    df_column_stats st = {.has_min = true, .has_max = true, .min = a, .max = b};
    df_scan_predicate eq = {.op = DF_PRED_EQ, .nvalues = 1, .values = &c};
    DF_ASSERT(!df_scan_predicate_may_match(&eq, &st, -1));
}
