/*
 * Logical plan containers, expression constructors and utilities
 * (remapping, substitution, equality, display, EXPLAIN text).
 *
 * Every recursive walk here follows the expression tree, whose height the
 * parser bounds (DF_SQL_MAX_HEIGHT) and the binder/optimizer never grow by
 * more than a small constant, so recursion depth is bounded.
 */
#include "sql/logical_plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "sql/sql_types.h"

static const char *const fn_names[DF_FN_COUNT_] = {
#define DF_FN_NAME(id, name) [DF_FN_##id] = name,
    DF_FN_LIST(DF_FN_NAME)
#undef DF_FN_NAME
};

const char *df_fn_name(df_fn fn) { return (unsigned)fn < DF_FN_COUNT_ ? fn_names[fn] : "?"; }

const char *df_agg_fn_name(df_agg_fn fn) {
    switch (fn) {
    case DF_AGG_COUNT: return "count";
    case DF_AGG_SUM: return "sum";
    case DF_AGG_MIN: return "min";
    case DF_AGG_MAX: return "max";
    case DF_AGG_AVG: return "avg";
    case DF_AGG_BOOL_AND: return "bool_and";
    case DF_AGG_BOOL_OR: return "bool_or";
    case DF_AGG_FIRST: return "first_value";
    case DF_AGG_LAST: return "last_value";
    case DF_AGG_BIT_AND: return "bit_and";
    case DF_AGG_BIT_OR: return "bit_or";
    case DF_AGG_BIT_XOR: return "bit_xor";
    case DF_AGG_VAR_SAMP: return "var";
    case DF_AGG_VAR_POP: return "var_pop";
    case DF_AGG_STDDEV_SAMP: return "stddev";
    case DF_AGG_STDDEV_POP: return "stddev_pop";
    case DF_AGG_COVAR_SAMP: return "covar_samp";
    case DF_AGG_COVAR_POP: return "covar_pop";
    case DF_AGG_CORR: return "corr";
    case DF_AGG_REGR_SLOPE: return "regr_slope";
    case DF_AGG_REGR_INTERCEPT: return "regr_intercept";
    case DF_AGG_REGR_COUNT: return "regr_count";
    case DF_AGG_REGR_R2: return "regr_r2";
    case DF_AGG_REGR_AVGX: return "regr_avgx";
    case DF_AGG_REGR_AVGY: return "regr_avgy";
    case DF_AGG_REGR_SXX: return "regr_sxx";
    case DF_AGG_REGR_SYY: return "regr_syy";
    case DF_AGG_REGR_SXY: return "regr_sxy";
    case DF_AGG_MEDIAN: return "median";
    case DF_AGG_PERCENTILE: return "percentile_cont";
    case DF_AGG_STRING_AGG: return "string_agg";
    case DF_AGG_APPROX_DISTINCT: return "approx_distinct";
    default: return "?";
    }
}

const char *df_win_fn_name(const df_window *w) {
    switch (w->fn) {
    case DF_WIN_AGG: return df_agg_fn_name((df_agg_fn)w->agg);
    case DF_WIN_ROW_NUMBER: return "row_number";
    case DF_WIN_RANK: return "rank";
    case DF_WIN_DENSE_RANK: return "dense_rank";
    case DF_WIN_PERCENT_RANK: return "percent_rank";
    case DF_WIN_CUME_DIST: return "cume_dist";
    case DF_WIN_NTILE: return "ntile";
    case DF_WIN_LAG: return "lag";
    case DF_WIN_LEAD: return "lead";
    case DF_WIN_FIRST_VALUE: return "first_value";
    case DF_WIN_LAST_VALUE: return "last_value";
    case DF_WIN_NTH_VALUE: return "nth_value";
    }
    return "?";
}

bool df_agg_fn_single_step(df_agg_fn fn) { return fn >= DF_AGG_LAST && fn < DF_AGG_COUNT_ID_; }
bool df_agg_fn_order_sensitive(df_agg_fn fn) {
    return fn == DF_AGG_FIRST || fn == DF_AGG_LAST || fn == DF_AGG_STRING_AGG;
}
bool df_agg_single_step(const df_agg *a) {
    return a->distinct || df_agg_fn_single_step(a->fn) || (a->norder > 0 && df_agg_fn_order_sensitive(a->fn)) ||
           (a->fn == DF_AGG_FIRST && !a->ignore_nulls);
}

/* ------------------------------------------------------------------------ */
/* Containers                                                                */

df_errkind df__lplan_new(df_lplan **out, df_error *err) {
    *out = NULL;
    df_lplan *p = df_calloc(1, sizeof *p);
    if (!p) return DF_OOM(err);
    atomic_init(&p->refs, 1);
    df_arena_init(&p->arena, 16 * 1024, 0);
    *out = p;
    return DF_OK;
}

df_lplan *df__lplan_retain(df_lplan *p) {
    if (p) atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void df__lplan_release(df_lplan *p) {
    if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    /* Release in reverse order: later entries may depend on earlier ones. */
    for (int32_t i = p->ncleanups - 1; i >= 0; i--) p->cleanups[i].fn(p->cleanups[i].ptr);
    df_free(p->cleanups);
    df_arena_destroy(&p->arena);
    df_free(p);
}

void *df__lplan_alloc(df_lplan *p, size_t size) { return df_arena_calloc(&p->arena, 1, size ? size : 1); }

char *df__lplan_strdup(df_lplan *p, const char *s) {
    return s ? df_arena_strndup(&p->arena, s, strlen(s)) : NULL;
}

df_errkind df__lplan_defer(df_lplan *p, df_lplan_cleanup_fn fn, void *ptr, df_error *err) {
    df_errkind k = DF_ARRAY_RESERVE(p->cleanups, p->cap_cleanups, p->ncleanups + 1, 32, err);
    if (k) {
        fn(ptr);
        return k;
    }
    p->cleanups[p->ncleanups++] = (df_lplan_cleanup){fn, ptr};
    return DF_OK;
}

static void release_type(void *t) { df_type_release(t); }
static void release_plan(void *q) { df__lplan_release(q); }
static void clear_scalar(void *s) { df_scalar_clear(s); }

df_type *df__lplan_keep_type(df_lplan *p, df_type *t, df_error *err) {
    if (!t) {
        /* A failed constructor: keep the caller's error if one was recorded, else it was memory. */
        if (err && err->kind == DF_OK) DF_OOM(err);
        return NULL;
    }
    if (atomic_load_explicit(&t->refs, memory_order_relaxed) < 0) return t; /* static */
    if (df__lplan_defer(p, release_type, t, err)) return NULL;
    return t;
}

df_errkind df__lplan_depend(df_lplan *p, df_lplan *other, df_error *err) {
    return df__lplan_defer(p, release_plan, df__lplan_retain(other), err);
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */

df_expr *df__expr_new(df_lplan *p, df_expr_kind kind, df_type *type, bool nullable, int32_t nargs,
                      df_expr *const *args, df_error *err) {
    df_expr *e = df__lplan_alloc(p, sizeof *e);
    df_expr **a = nargs ? df_arena_calloc(&p->arena, (size_t)nargs, sizeof *a) : NULL;
    if (!e || (nargs && !a)) {
        DF_OOM(err);
        return NULL;
    }
    e->kind = kind;
    e->type = df__lplan_keep_type(p, df_type_retain(type), err);
    if (!e->type) return NULL;
    e->nullable = nullable;
    e->nargs = nargs;
    e->args = a;
    for (int32_t i = 0; i < nargs; i++) a[i] = args[i];
    return e;
}

df_expr *df__expr_func(df_lplan *p, df_fn fn, df_type *type, bool nullable, int32_t nargs, df_expr *const *args,
                       df_error *err) {
    df_expr *e = df__expr_new(p, DF_EX_FUNC, type, nullable, nargs, args, err);
    if (e) e->fn = fn;
    return e;
}

df_expr *df__expr_column(df_lplan *p, int32_t index, const df_lcol *col, df_error *err) {
    df_expr *e = df__expr_new(p, DF_EX_COLUMN, col->type, col->nullable, 0, NULL, err);
    if (!e) return NULL;
    e->column = index;
    e->name = col->name;
    e->qualifier = col->qualifier;
    return e;
}

df_expr *df__expr_literal(df_lplan *p, const df_scalar *value, df_error *err) {
    df_expr *e = df__expr_new(p, DF_EX_LITERAL, value->type, value->is_null, 0, NULL, err);
    if (!e) return NULL;
    df_scalar *s = df__lplan_alloc(p, sizeof *s);
    if (!s) {
        DF_OOM(err);
        return NULL;
    }
    if (df_scalar_copy(s, value, err)) return NULL;
    if (df__lplan_defer(p, clear_scalar, s, err)) return NULL;
    e->lit = s;
    return e;
}

df_expr *df__expr_null(df_lplan *p, df_type *type, df_error *err) {
    df_scalar s = {.type = type, .is_null = true};
    return df__expr_literal(p, &s, err);
}

df_expr *df__expr_cast(df_lplan *p, df_expr *arg, df_type *type, bool try_cast, bool implicit, df_error *err) {
    if (df_type_equals(arg->type, type) && !try_cast) return arg;
    df_expr *e = df__expr_new(p, DF_EX_CAST, type, arg->nullable || try_cast, 1, &arg, err);
    if (!e) return NULL;
    e->flag = try_cast;
    e->implicit = implicit;
    return e;
}

/* Shallow copy with fresh args array. */
static df_expr *clone_node(df_lplan *p, const df_expr *e, df_error *err) {
    df_expr *c = df__lplan_alloc(p, sizeof *c);
    df_expr **a = e->nargs ? df_arena_calloc(&p->arena, (size_t)e->nargs, sizeof *a) : NULL;
    if (!c || (e->nargs && !a)) {
        DF_OOM(err);
        return NULL;
    }
    *c = *e;
    c->args = a;
    return c;
}

df_expr *df__expr_remap(df_lplan *p, const df_expr *e, const int32_t *map, int32_t nmap, df_error *err) {
    if (e->kind == DF_EX_COLUMN) {
        if (e->column < 0 || e->column >= nmap || map[e->column] < 0) {
            df_error_set(err, DF_ERR_INTERNAL, "column %d is not available after remapping", e->column);
            return NULL;
        }
        df_expr *c = clone_node(p, e, err);
        if (c) c->column = map[e->column];
        return c;
    }
    df_expr *c = clone_node(p, e, err);
    if (!c) return NULL;
    for (int32_t i = 0; i < e->nargs; i++) {
        c->args[i] = df__expr_remap(p, e->args[i], map, nmap, err);
        if (!c->args[i]) return NULL;
    }
    return c;
}

df_expr *df__expr_substitute(df_lplan *p, const df_expr *e, df_expr *const *repl, int32_t nrepl, df_error *err) {
    if (e->kind == DF_EX_COLUMN) {
        if (e->column < 0 || e->column >= nrepl) {
            df_error_set(err, DF_ERR_INTERNAL, "column %d out of range in substitution", e->column);
            return NULL;
        }
        return repl[e->column];
    }
    if (e->nargs == 0) return (df_expr *)e;
    df_expr *c = clone_node(p, e, err);
    if (!c) return NULL;
    for (int32_t i = 0; i < e->nargs; i++) {
        c->args[i] = df__expr_substitute(p, e->args[i], repl, nrepl, err);
        if (!c->args[i]) return NULL;
    }
    return c;
}

static bool scalar_equal(const df_scalar *a, const df_scalar *b) {
    if (!df_type_equals(a->type, b->type) || a->is_null != b->is_null) return false;
    if (a->is_null) return true;
    switch (a->type->id) {
    case DF_TYPE_BOOL: return a->v.b == b->v.b;
    case DF_TYPE_FLOAT32:
    case DF_TYPE_FLOAT64: return memcmp(&a->v.f64, &b->v.f64, sizeof(double)) == 0;
    case DF_TYPE_DECIMAL128: return a->v.i128 == b->v.i128;
    case DF_TYPE_DECIMAL256: return memcmp(a->v.d256, b->v.d256, 32) == 0;
    case DF_TYPE_INTERVAL_MDN:
        return a->v.interval.months == b->v.interval.months && a->v.interval.days == b->v.interval.days &&
               a->v.interval.nanos == b->v.interval.nanos;
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY:
    case DF_TYPE_FIXED_BINARY:
        return a->v.bytes.len == b->v.bytes.len &&
               (a->v.bytes.len == 0 || memcmp(a->v.bytes.ptr, b->v.bytes.ptr, (size_t)a->v.bytes.len) == 0);
    default: return a->v.u64 == b->v.u64;
    }
}

bool df__expr_equal(const df_expr *a, const df_expr *b) {
    if (a == b) return true;
    if (a->kind != b->kind || a->nargs != b->nargs || a->flag != b->flag || a->has_else != b->has_else ||
        !df_type_equals(a->type, b->type))
        return false;
    switch (a->kind) {
    case DF_EX_COLUMN: return a->column == b->column;
    case DF_EX_LITERAL: return scalar_equal(a->lit, b->lit);
    case DF_EX_FUNC: if (a->fn != b->fn) return false; break;
    default: break;
    }
    for (int32_t i = 0; i < a->nargs; i++)
        if (!df__expr_equal(a->args[i], b->args[i])) return false;
    return true;
}

bool df__expr_is_constant(const df_expr *e) {
    if (e->kind == DF_EX_COLUMN) return false;
    if (e->kind == DF_EX_FUNC && e->fn == DF_FN_RANDOM) return false;
    for (int32_t i = 0; i < e->nargs; i++)
        if (!df__expr_is_constant(e->args[i])) return false;
    return true;
}

void df__expr_columns(const df_expr *e, bool *used, int32_t width) {
    if (e->kind == DF_EX_COLUMN) {
        if (e->column >= 0 && e->column < width) used[e->column] = true;
        return;
    }
    for (int32_t i = 0; i < e->nargs; i++) df__expr_columns(e->args[i], used, width);
}

bool df__expr_volatile(const df_expr *e) {
    if (e->kind == DF_EX_FUNC && (e->fn == DF_FN_RANDOM || e->fn == DF_FN_UUID)) return true;
    for (int32_t i = 0; i < e->nargs; i++)
        if (df__expr_volatile(e->args[i])) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* Display                                                                   */

static df_errkind append_i128(df_buf *out, df_i128 v, df_error *err) {
    char buf[48];
    int n = 0;
    bool neg = v < 0;
    df_u128 u = neg ? (df_u128)0 - (df_u128)v : (df_u128)v;
    do {
        buf[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (neg) buf[n++] = '-';
    char rev[48];
    for (int i = 0; i < n; i++) rev[i] = buf[n - 1 - i];
    return df_buf_append(out, rev, (size_t)n, err);
}

static df_errkind append_decimal(df_buf *out, df_i128 v, int scale, df_error *err) {
    if (scale <= 0) {
        DF_TRY(append_i128(out, v, err));
        for (int i = 0; i < -scale; i++) DF_TRY(df_buf_append_char(out, '0', err));
        return DF_OK;
    }
    df_buf tmp;
    df_buf_init(&tmp, 0);
    bool neg = v < 0;
    df_errkind k = append_i128(&tmp, neg ? -v : v, err);
    if (k) {
        df_buf_free(&tmp);
        return k;
    }
    size_t len = tmp.len;
    if (neg) k = df_buf_append_char(out, '-', err);
    if (!k && len <= (size_t)scale) {
        k = df_buf_append_str(out, "0.", err);
        for (size_t i = len; !k && i < (size_t)scale; i++) k = df_buf_append_char(out, '0', err);
        if (!k) k = df_buf_append(out, tmp.data, len, err);
    } else if (!k) {
        k = df_buf_append(out, tmp.data, len - (size_t)scale, err);
        if (!k) k = df_buf_append_char(out, '.', err);
        if (!k) k = df_buf_append(out, tmp.data + len - scale, (size_t)scale, err);
    }
    df_buf_free(&tmp);
    return k;
}

df_errkind df__scalar_format(const df_scalar *s, df_buf *out, df_error *err) {
    if (s->is_null) return df_buf_append_str(out, "NULL", err);
    switch (s->type->id) {
    case DF_TYPE_BOOL: return df_buf_append_str(out, s->v.b ? "true" : "false", err);
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
        return df_buf_printf(out, err, "%" PRId64, s->v.i64);
    case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32: case DF_TYPE_UINT64:
        return df_buf_printf(out, err, "%" PRIu64, s->v.u64);
    case DF_TYPE_FLOAT32: case DF_TYPE_FLOAT64: {
        double d = s->v.f64;
        if (d == floor(d) && fabs(d) < 1e15) return df_buf_printf(out, err, "%.1f", d);
        return df_buf_printf(out, err, "%.17g", d);
    }
    case DF_TYPE_DECIMAL128: return append_decimal(out, s->v.i128, s->type->scale, err);
    case DF_TYPE_DATE32: {
        int64_t y;
        int m, d;
        df_civil_from_days(s->v.i64, &y, &m, &d);
        return df_buf_printf(out, err, "%04" PRId64 "-%02d-%02d", y, m, d);
    }
    case DF_TYPE_UTF8:
        return df_buf_append(out, s->v.bytes.ptr, (size_t)s->v.bytes.len, err);
    case DF_TYPE_TIMESTAMP: {
        static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};
        int64_t q = per_sec[s->type->unit];
        int64_t v = s->v.i64, secs = v / q, frac = v % q;
        if (frac < 0) frac += q, secs--;
        int64_t days = secs / 86400, rem = secs % 86400;
        if (rem < 0) rem += 86400, days--;
        int64_t y;
        int m, d;
        df_civil_from_days(days, &y, &m, &d);
        DF_TRY(df_buf_printf(out, err, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d", y, m, d, (int)(rem / 3600),
                             (int)(rem / 60 % 60), (int)(rem % 60)));
        if (frac) {
            int digits = s->type->unit == DF_UNIT_MILLI ? 3 : s->type->unit == DF_UNIT_MICRO ? 6 : 9;
            DF_TRY(df_buf_printf(out, err, ".%0*" PRId64, digits, frac));
        }
        return DF_OK;
    }
    case DF_TYPE_INTERVAL_MDN:
        return df_buf_printf(out, err, "%d mons %d days %" PRId64 " nanos", s->v.interval.months,
                             s->v.interval.days, s->v.interval.nanos);
    default: {
        DF_TRY(df_buf_append_char(out, '<', err));
        DF_TRY(df__sqlt_display(s->type, out, err));
        return df_buf_append_char(out, '>', err);
    }
    }
}

df_errkind df__scalar_display(const df_scalar *s, df_buf *out, df_error *err) {
    if (s->type->id == DF_TYPE_NULL || s->is_null) {
        if (s->type->id == DF_TYPE_NULL) return df_buf_append_str(out, "NULL", err);
    }
    switch (s->type->id) {
    case DF_TYPE_UTF8:
        if (s->is_null) return df_buf_append_str(out, "Utf8(NULL)", err);
        DF_TRY(df_buf_append_str(out, "Utf8(\"", err));
        DF_TRY(df_buf_append(out, s->v.bytes.ptr, (size_t)s->v.bytes.len, err));
        return df_buf_append_str(out, "\")", err);
    case DF_TYPE_DECIMAL128:
        if (s->is_null) return df_buf_printf(out, err, "Decimal128(None,%d,%d)", s->type->precision, s->type->scale);
        DF_TRY(df_buf_append_str(out, "Decimal128(Some(", err));
        DF_TRY(append_i128(out, s->v.i128, err));
        return df_buf_printf(out, err, "),%d,%d)", s->type->precision, s->type->scale);
    case DF_TYPE_BOOL:
    case DF_TYPE_INT8: case DF_TYPE_INT16: case DF_TYPE_INT32: case DF_TYPE_INT64:
    case DF_TYPE_UINT8: case DF_TYPE_UINT16: case DF_TYPE_UINT32: case DF_TYPE_UINT64:
    case DF_TYPE_FLOAT32: case DF_TYPE_FLOAT64: {
        DF_TRY(df__sqlt_display(s->type, out, err));
        DF_TRY(df_buf_append_char(out, '(', err));
        DF_TRY(df__scalar_format(s, out, err));
        return df_buf_append_char(out, ')', err);
    }
    case DF_TYPE_DATE32:
        DF_TRY(df_buf_append_str(out, "Date32(\"", err));
        DF_TRY(df__scalar_format(s, out, err));
        return df_buf_append_str(out, "\")", err);
    default:
        return df__scalar_format(s, out, err);
    }
}

df_errkind df__expr_display(const df_expr *e, df_buf *out, df_error *err) {
    if (e->display && e->kind != DF_EX_COLUMN) return df_buf_append_str(out, e->display, err);
    switch (e->kind) {
    case DF_EX_COLUMN:
        if (e->qualifier) {
            DF_TRY(df_buf_append_str(out, e->qualifier, err));
            DF_TRY(df_buf_append_char(out, '.', err));
        }
        if (e->name) return df_buf_append_str(out, e->name, err);
        return df_buf_printf(out, err, "#%d", e->column);
    case DF_EX_LITERAL: return df__scalar_display(e->lit, out, err);
    case DF_EX_CAST:
        if (e->implicit) return df__expr_display(e->args[0], out, err);
        DF_TRY(df_buf_append_str(out, e->flag ? "TRY_CAST(" : "CAST(", err));
        DF_TRY(df__expr_display(e->args[0], out, err));
        DF_TRY(df_buf_append_str(out, " AS ", err));
        DF_TRY(df__sqlt_display(e->type, out, err));
        return df_buf_append_char(out, ')', err);
    case DF_EX_NOT:
        DF_TRY(df_buf_append_str(out, "NOT ", err));
        return df__expr_display(e->args[0], out, err);
    case DF_EX_AND:
    case DF_EX_OR:
        for (int32_t i = 0; i < e->nargs; i++) {
            if (i) DF_TRY(df_buf_append_str(out, e->kind == DF_EX_AND ? " AND " : " OR ", err));
            DF_TRY(df__expr_display(e->args[i], out, err));
        }
        return DF_OK;
    case DF_EX_CASE: {
        DF_TRY(df_buf_append_str(out, "CASE", err));
        int32_t pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2;
        for (int32_t i = 0; i < pairs; i++) {
            DF_TRY(df_buf_append_str(out, " WHEN ", err));
            DF_TRY(df__expr_display(e->args[2 * i], out, err));
            DF_TRY(df_buf_append_str(out, " THEN ", err));
            DF_TRY(df__expr_display(e->args[2 * i + 1], out, err));
        }
        if (e->has_else) {
            DF_TRY(df_buf_append_str(out, " ELSE ", err));
            DF_TRY(df__expr_display(e->args[e->nargs - 1], out, err));
        }
        return df_buf_append_str(out, " END", err);
    }
    case DF_EX_COALESCE:
    case DF_EX_FUNC: {
        if (e->kind == DF_EX_FUNC) {
            df_fn f = e->fn;
            bool infix = f <= DF_FN_SHR && f != DF_FN_NEG && f < DF_FN_IS_NULL;
            bool postfix = f >= DF_FN_IS_NULL && f <= DF_FN_IS_NOT_FALSE;
            if (f >= DF_FN_LIKE && f <= DF_FN_SHR) infix = true;
            if (f == DF_FN_NEG) {
                DF_TRY(df_buf_append_str(out, "(- ", err));
                DF_TRY(df__expr_display(e->args[0], out, err));
                return df_buf_append_char(out, ')', err);
            }
            if (infix && e->nargs == 2) {
                DF_TRY(df__expr_display(e->args[0], out, err));
                DF_TRY(df_buf_printf(out, err, " %s ", df_fn_name(f)));
                return df__expr_display(e->args[1], out, err);
            }
            if (postfix && e->nargs == 1) {
                DF_TRY(df__expr_display(e->args[0], out, err));
                return df_buf_printf(out, err, " %s", df_fn_name(f));
            }
        }
        DF_TRY(df_buf_append_str(out, e->kind == DF_EX_COALESCE ? "coalesce" : df_fn_name(e->fn), err));
        DF_TRY(df_buf_append_char(out, '(', err));
        for (int32_t i = 0; i < e->nargs; i++) {
            if (i) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(df__expr_display(e->args[i], out, err));
        }
        return df_buf_append_char(out, ')', err);
    }
    case DF_EX_IN_LIST:
        DF_TRY(df__expr_display(e->args[0], out, err));
        DF_TRY(df_buf_append_str(out, e->flag ? " NOT IN ([" : " IN ([", err));
        for (int32_t i = 1; i < e->nargs; i++) {
            if (i > 1) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(df__expr_display(e->args[i], out, err));
        }
        return df_buf_append_str(out, "])", err);
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */

df_lnode *df__lnode_new(df_lplan *p, df_lnode_kind kind, int32_t ninputs, df_lnode *const *inputs, int32_t ncols,
                        df_error *err) {
    df_lnode *n = df__lplan_alloc(p, sizeof *n);
    df_lnode **in = ninputs ? df_arena_calloc(&p->arena, (size_t)ninputs, sizeof *in) : NULL;
    df_lcol *cols = ncols ? df_arena_calloc(&p->arena, (size_t)ncols, sizeof *cols) : NULL;
    if (!n || (ninputs && !in) || (ncols && !cols)) {
        DF_OOM(err);
        return NULL;
    }
    n->kind = kind;
    n->ninputs = ninputs;
    n->inputs = in;
    for (int32_t i = 0; i < ninputs; i++) in[i] = inputs[i];
    n->ncols = ncols;
    n->cols = cols;
    return n;
}

static const char *join_name(df_join_type t) {
    switch (t) {
    case DF_JOIN_INNER: return "Inner";
    case DF_JOIN_LEFT: return "Left";
    case DF_JOIN_RIGHT: return "Right";
    case DF_JOIN_FULL: return "Full";
    case DF_JOIN_LEFT_SEMI: return "LeftSemi";
    case DF_JOIN_LEFT_ANTI: return "LeftAnti";
    case DF_JOIN_RIGHT_SEMI: return "RightSemi";
    case DF_JOIN_RIGHT_ANTI: return "RightAnti";
    case DF_JOIN_LEFT_MARK: return "LeftMark";
    }
    return "?";
}

static df_errkind explain_exprs(df_buf *out, const char *sep, df_expr *const *es, int32_t n, df_error *err) {
    for (int32_t i = 0; i < n; i++) {
        if (i) DF_TRY(df_buf_append_str(out, sep, err));
        DF_TRY(df__expr_display(es[i], out, err));
    }
    return DF_OK;
}

static df_errkind explain_node(const df_lnode *n, int depth, df_buf *out, df_error *err) {
    if (depth > 200) return df_buf_append_str(out, "...\n", err);
    for (int i = 0; i < depth; i++) DF_TRY(df_buf_append_str(out, "  ", err));
    switch (n->kind) {
    case DF_LN_SCAN:
        DF_TRY(df_buf_printf(out, err, "TableScan: %s projection=[", n->u.scan.table));
        for (int32_t i = 0; i < n->ncols; i++)
            DF_TRY(df_buf_printf(out, err, "%s%s", i ? ", " : "", n->cols[i].name));
        DF_TRY(df_buf_append_char(out, ']', err));
        if (n->u.scan.nfilters) {
            DF_TRY(df_buf_append_str(out, " partial_filters=[", err));
            DF_TRY(explain_exprs(out, ", ", n->u.scan.filters, n->u.scan.nfilters, err));
            DF_TRY(df_buf_append_char(out, ']', err));
        }
        if (n->u.scan.fetch >= 0) DF_TRY(df_buf_printf(out, err, " fetch=%" PRId64, n->u.scan.fetch));
        break;
    case DF_LN_VALUES: DF_TRY(df_buf_printf(out, err, "Values: %d rows", n->u.values.nrows)); break;
    case DF_LN_EMPTY:
        DF_TRY(df_buf_printf(out, err, "EmptyRelation: rows=%d", n->u.empty.one_row ? 1 : 0));
        break;
    case DF_LN_FILTER:
        DF_TRY(df_buf_append_str(out, "Filter: ", err));
        DF_TRY(df__expr_display(n->u.filter.pred, out, err));
        break;
    case DF_LN_PROJECT:
        DF_TRY(df_buf_append_str(out, "Projection: ", err));
        for (int32_t i = 0; i < n->ncols; i++) {
            if (i) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(df__expr_display(n->u.project.exprs[i], out, err));
            if (n->u.project.exprs[i]->kind != DF_EX_COLUMN ||
                strcmp(n->u.project.exprs[i]->name ? n->u.project.exprs[i]->name : "", n->cols[i].name) != 0)
                DF_TRY(df_buf_printf(out, err, " AS %s", n->cols[i].name));
        }
        break;
    case DF_LN_AGGREGATE:
        DF_TRY(df_buf_append_str(out, "Aggregate: groupBy=[", err));
        DF_TRY(explain_exprs(out, ", ", n->u.agg.group, n->u.agg.ngroup, err));
        DF_TRY(df_buf_append_str(out, "], aggr=[", err));
        for (int32_t i = 0; i < n->u.agg.naggs; i++)
            DF_TRY(df_buf_printf(out, err, "%s%s", i ? ", " : "", n->u.agg.aggs[i].name));
        DF_TRY(df_buf_append_char(out, ']', err));
        break;
    case DF_LN_JOIN:
        DF_TRY(df_buf_printf(out, err, "%s Join: ", join_name(n->u.join.type)));
        for (int32_t i = 0; i < n->u.join.nkeys; i++) {
            if (i) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(df_buf_append_char(out, '(', err));
            DF_TRY(df__expr_display(n->u.join.lkeys[i], out, err));
            DF_TRY(df_buf_append_str(out, n->u.join.null_equal[i] ? " <=> " : " = ", err));
            DF_TRY(df__expr_display(n->u.join.rkeys[i], out, err));
            DF_TRY(df_buf_append_char(out, ')', err));
        }
        if (n->u.join.filter) {
            DF_TRY(df_buf_append_str(out, " Filter: ", err));
            DF_TRY(df__expr_display(n->u.join.filter, out, err));
        }
        break;
    case DF_LN_SORT:
        DF_TRY(df_buf_append_str(out, "Sort: ", err));
        for (int32_t i = 0; i < n->u.sort.nkeys; i++) {
            if (i) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(df__expr_display(n->u.sort.keys[i].expr, out, err));
            DF_TRY(df_buf_printf(out, err, " %s NULLS %s", n->u.sort.keys[i].desc ? "DESC" : "ASC",
                                 n->u.sort.keys[i].nulls_first ? "FIRST" : "LAST"));
        }
        if (n->u.sort.fetch >= 0) DF_TRY(df_buf_printf(out, err, ", fetch=%" PRId64, n->u.sort.fetch));
        break;
    case DF_LN_LIMIT:
        DF_TRY(df_buf_printf(out, err, "Limit: skip=%" PRId64 ", fetch=", n->u.limit.skip));
        if (n->u.limit.fetch >= 0)
            DF_TRY(df_buf_printf(out, err, "%" PRId64, n->u.limit.fetch));
        else
            DF_TRY(df_buf_append_str(out, "None", err));
        break;
    case DF_LN_UNION: DF_TRY(df_buf_append_str(out, "Union", err)); break;
    case DF_LN_RECURSIVE:
        DF_TRY(df_buf_printf(out, err, "RecursiveQuery: is_distinct=%s", n->u.recursive.distinct ? "true" : "false"));
        break;
    case DF_LN_WORKTABLE: DF_TRY(df_buf_append_str(out, "WorkTableScan", err)); break;
    case DF_LN_WINDOW:
        DF_TRY(df_buf_append_str(out, "WindowAggr: windowExpr=[", err));
        for (int32_t i = 0; i < n->u.window.nwin; i++) {
            const df_window *w = &n->u.window.wins[i];
            DF_TRY(df_buf_printf(out, err, "%s%s(", i ? ", " : "", df_win_fn_name(w)));
            DF_TRY(explain_exprs(out, ", ", w->args, w->nargs, err));
            DF_TRY(df_buf_append_str(out, ") PARTITION BY [", err));
            DF_TRY(explain_exprs(out, ", ", w->part, w->npart, err));
            DF_TRY(df_buf_append_str(out, "] ORDER BY [", err));
            for (int32_t k = 0; k < w->norder; k++) {
                if (k) DF_TRY(df_buf_append_str(out, ", ", err));
                DF_TRY(df__expr_display(w->order[k].expr, out, err));
                DF_TRY(df_buf_append_str(out, w->order[k].desc ? " DESC" : " ASC", err));
            }
            DF_TRY(df_buf_append_char(out, ']', err));
        }
        DF_TRY(df_buf_append_char(out, ']', err));
        break;
    }
    DF_TRY(df_buf_append_char(out, '\n', err));
    for (int32_t i = 0; i < n->ninputs; i++) DF_TRY(explain_node(n->inputs[i], depth + 1, out, err));
    return DF_OK;
}

df_errkind df__lnode_explain(const df_lnode *n, df_buf *out, df_error *err) { return explain_node(n, 0, out, err); }
