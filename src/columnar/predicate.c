/*
 * Pushed-down scan predicates evaluated against statistics (min/max/null
 * count of a file or row group) and against single partition values.
 *
 * The rule everywhere: answer "may match" unless the statistics prove the
 * opposite.  Min and max are treated as bounds (a truncated or inexact
 * minimum is still a lower bound), so exactness only matters for `<>`.
 */
#include "columnar/table_provider.h"

/*
 * True unless [min, max] proves that no non-null value satisfies `op value`.
 *
 * Floating-point columns: the executor compares floats in IEEE total order,
 * where NaN (which statistics leave out) is above every number and a NaN
 * with its sign bit set below every number, and -0 < +0.  Bounds therefore
 * only answer equality (a NaN never equals a number, and IEEE equality of
 * bounds covers both zeros); ordering and `<>` predicates keep the unit.
 */
static bool range_may_match(df_pred_op op, const df_scalar *value, const df_column_stats *st) {
    if (value->type && df_type_is_floating(value->type) && op != DF_PRED_EQ) return true;
    bool c1 = false, c2 = false;
    int vs_min = st->has_min ? df_scalar_compare(value, &st->min, &c1) : 0;  /* value ? min */
    int vs_max = st->has_max ? df_scalar_compare(value, &st->max, &c2) : 0;  /* value ? max */
    switch (op) {
    case DF_PRED_EQ:
        if (c1 && vs_min < 0) return false;
        if (c2 && vs_max > 0) return false;
        return true;
    case DF_PRED_NE:
        /* Only a unit whose every value equals `value` can be skipped. */
        return !(c1 && c2 && vs_min == 0 && vs_max == 0 && st->min_exact && st->max_exact);
    case DF_PRED_LT: /* x < value is impossible when min >= value */
        return !(c1 && vs_min <= 0);
    case DF_PRED_LE:
        return !(c1 && vs_min < 0);
    case DF_PRED_GT: /* x > value is impossible when max <= value */
        return !(c2 && vs_max >= 0);
    case DF_PRED_GE:
        return !(c2 && vs_max > 0);
    default:
        return true;
    }
}

bool df_scan_predicate_may_match(const df_scan_predicate *p, const df_column_stats *st, int64_t row_count) {
    if (!st) return true;
    bool all_null = st->has_null_count && row_count >= 0 && st->null_count >= row_count;
    switch (p->op) {
    case DF_PRED_IS_NULL:
        return !(st->has_null_count && st->null_count == 0);
    case DF_PRED_IS_NOT_NULL:
        return !all_null;
    case DF_PRED_IN:
        if (all_null) return false;
        for (int32_t i = 0; i < p->nvalues; i++)
            if (!p->values[i].is_null && range_may_match(DF_PRED_EQ, &p->values[i], st)) return true;
        return false; /* no listed value can be present */
    default:
        if (p->nvalues < 1) return true;
        if (p->values[0].is_null) return false; /* comparison with NULL is never true */
        if (all_null) return false;
        return range_may_match(p->op, &p->values[0], st);
    }
}

bool df_scan_predicate_matches_value(const df_scan_predicate *p, const df_scalar *value) {
    switch (p->op) {
    case DF_PRED_IS_NULL:
        return value->is_null;
    case DF_PRED_IS_NOT_NULL:
        return !value->is_null;
    case DF_PRED_IN:
        if (value->is_null) return false;
        for (int32_t i = 0; i < p->nvalues; i++) {
            bool comparable;
            int c = df_scalar_compare(value, &p->values[i], &comparable);
            if (!comparable && !p->values[i].is_null) return true; /* cannot decide: keep */
            if (comparable && c == 0) return true;
        }
        return false;
    default: {
        if (p->nvalues < 1) return true;
        if (value->is_null || p->values[0].is_null) return false;
        bool comparable;
        int c = df_scalar_compare(value, &p->values[0], &comparable);
        if (!comparable) return true;
        switch (p->op) {
        case DF_PRED_EQ: return c == 0;
        case DF_PRED_NE: return c != 0;
        case DF_PRED_LT: return c < 0;
        case DF_PRED_LE: return c <= 0;
        case DF_PRED_GT: return c > 0;
        case DF_PRED_GE: return c >= 0;
        default: return true;
        }
    }
    }
}
