/*
 * Window functions: binding `f(args) OVER (PARTITION BY .. ORDER BY ..
 * [ROWS|RANGE|GROUPS frame])` calls into a Window plan node.
 *
 * A SELECT's window calls (in its list, ORDER BY and QUALIFY) are bound
 * after aggregation and HAVING, over that scope (so window arguments may
 * be group keys and aggregates), into one DF_LN_WINDOW node whose output
 * is its input's columns followed by one hidden column per distinct call;
 * the calls then read those columns.  Supported: row_number, rank,
 * dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value,
 * last_value, nth_value, and count / sum / avg / min / max over frames.
 *
 * Frames follow SQL: the default is RANGE BETWEEN UNBOUNDED PRECEDING AND
 * CURRENT ROW with ORDER BY (the current row's peers included) and the
 * whole partition without.  RANGE offsets need one ORDER BY key of a
 * numeric, date or timestamp type (intervals for the temporal ones).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_binder.h"

static df_errkind berr(binder *b) { return b->err && b->err->kind ? b->err->kind : DF_ERR_INTERNAL; }


static bool is_window_call(const ast_expr *e) { return e && e->kind == AE_FUNC && e->over; }

static const char *fn_name(const ast_expr *e) { return e->name.n == 1 ? e->name.parts[0] : ""; }

/* The window function id for a call name, or -1 (then it may be an aggregate). */
static int win_fn(const char *n) {
    static const struct {
        const char *name;
        df_win_fn fn;
    } fns[] = {
        {"row_number", DF_WIN_ROW_NUMBER}, {"rank", DF_WIN_RANK}, {"dense_rank", DF_WIN_DENSE_RANK},
        {"percent_rank", DF_WIN_PERCENT_RANK}, {"cume_dist", DF_WIN_CUME_DIST}, {"ntile", DF_WIN_NTILE},
        {"lag", DF_WIN_LAG}, {"lead", DF_WIN_LEAD}, {"first_value", DF_WIN_FIRST_VALUE},
        {"last_value", DF_WIN_LAST_VALUE}, {"nth_value", DF_WIN_NTH_VALUE},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        if (strcmp(fns[i].name, n) == 0) return (int)fns[i].fn;
    return -1;
}

/*
 * A constant integer argument (ntile n, lag offset, nth_value n): unsigned
 * values beyond INT64_MAX clamp to it; *is_null reports a NULL constant
 * (allowed only when is_null is given).
 */
static df_errkind int_param(binder *b, const ast_expr *a, const bctx *ctx, bool allow_negative, int64_t *out,
                            bool *is_null) {
    df_expr *x = df__bind_expr(b, a, ctx);
    if (!x) return berr(b);
    df_scalar v;
    memset(&v, 0, sizeof v);
    bool owned = false;
    if (x->type->id == DF_TYPE_NULL && is_null) {
        /* A NULL-typed expression (NULL, x * NULL) can only be NULL. */
        *is_null = true;
        *out = 0;
        return DF_OK;
    }
    if (x->kind == DF_EX_LITERAL) {
        v = *x->lit;
    } else if (df__bind_eval_const(b, x, &v)) {
        return df__bind_error(b, DF_ERR_SQL_TYPE, a->pos, "this argument must be a constant integer");
    } else {
        owned = true;
    }
    bool null = v.is_null || v.type->id == DF_TYPE_NULL;
    bool ok = !null && df_type_is_integer(v.type);
    int64_t n = 0;
    if (ok) n = df_type_is_unsigned_integer(v.type) ? (v.v.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.v.u64)
                                                    : v.v.i64;
    if (owned) df_scalar_clear(&v);
    if (null && is_null) {
        *is_null = true;
        *out = 0;
        return DF_OK;
    }
    if (!ok || (!allow_negative && n < 0))
        return df__bind_error(b, DF_ERR_SQL_TYPE, a->pos, "this argument must be a %sinteger constant",
                          allow_negative ? "" : "non-negative ");
    if (is_null) *is_null = false;
    *out = n;
    return DF_OK;
}

/* Binds a frame bound's offset (a constant) for the frame units and the ORDER BY key type. */
static df_errkind bind_bound(binder *b, const ast_frame_bound *ab, const bctx *ctx, df_frame_units units,
                             const df_window *w, df_frame_bound *out) {
    static const df_bound_kind kinds[] = {DF_BOUND_UNBOUNDED_PRECEDING, DF_BOUND_PRECEDING, DF_BOUND_CURRENT,
                                          DF_BOUND_FOLLOWING, DF_BOUND_UNBOUNDED_FOLLOWING};
    out->kind = kinds[ab->kind];
    out->offset = NULL;
    if (!ab->offset) return DF_OK;
    df_expr *x = df__bind_expr(b, ab->offset, ctx);
    if (!x) return berr(b);
    if (x->kind != DF_EX_LITERAL || x->lit->is_null)
        return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "a window frame offset must be a non-NULL literal");
    if (x->type->id == DF_TYPE_UTF8) {
        /* A string offset: a count for ROWS / GROUPS, an interval or number for RANGE. */
        char text[128];
        snprintf(text, sizeof text, "%.*s", (int)DF_MIN(x->lit->v.bytes.len, 120), (const char *)x->lit->v.bytes.ptr);
        const df_type *kt = units == DF_FRAME_RANGE && w->norder == 1 ? w->order[0].expr->type : NULL;
        bool temporal = kt && (kt->id == DF_TYPE_DATE32 || kt->id == DF_TYPE_DATE64 || kt->id == DF_TYPE_TIMESTAMP);
        df_scalar v = {0};
        if (temporal) {
            DF_TRY(df__bind_parse_interval(b, text, NULL, ab->pos, &v));
        } else {
            char *end = NULL;
            errno = 0;
            long long n = strtoll(text, &end, 10);
            if (end != text && *end == '\0' && errno == 0) {
                v.type = df_type_int64();
                v.v.i64 = n;
            } else {
                double d = strtod(text, &end);
                if (end == text || *end != '\0' || units != DF_FRAME_RANGE)
                    return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "invalid window frame offset '%s'", text);
                v.type = df_type_float64();
                v.v.f64 = d;
            }
        }
        x = df__expr_literal(b->plan, &v, b->err);
        df_scalar_clear(&v);
        if (!x) return berr(b);
    }
    const df_type *t = x->type;
    if (units != DF_FRAME_RANGE) {
        if (!df_type_is_integer(t) || (df_type_is_signed_integer(t) && x->lit->v.i64 < 0))
            return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "a ROWS / GROUPS frame offset must be a non-negative integer");
    } else {
        if (w->norder != 1)
            return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "a RANGE frame with an offset needs exactly one ORDER BY key");
        const df_type *kt = w->order[0].expr->type;
        bool temporal = kt->id == DF_TYPE_DATE32 || kt->id == DF_TYPE_DATE64 || kt->id == DF_TYPE_TIMESTAMP;
        bool numeric = df_type_is_integer(kt) || df_type_is_floating(kt) || kt->id == DF_TYPE_DECIMAL128;
        if (temporal && t->id != DF_TYPE_INTERVAL_MDN && !(kt->id == DF_TYPE_DATE32 && df_type_is_integer(t)))
            return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "a RANGE offset over dates or timestamps must be an interval");
        if (!temporal && !numeric)
            return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "RANGE frames with offsets need a numeric or temporal ORDER BY key");
        if (numeric && !(df_type_is_integer(t) || df_type_is_floating(t) || t->id == DF_TYPE_DECIMAL128))
            return df__bind_error(b, DF_ERR_SQL_TYPE, ab->pos, "a RANGE offset over numbers must be a number");
    }
    out->offset = x;
    return DF_OK;
}

/* Result type of an aggregate over a window frame (as for GROUP BY). */
static df_type *win_agg_type(df_agg_fn fn, const df_type *t) {
    int p, s;
    switch (fn) {
    case DF_AGG_COUNT: return df_type_int64();
    case DF_AGG_MIN:
    case DF_AGG_MAX: return df_type_retain((df_type *)t);
    case DF_AGG_SUM:
        if (df_type_is_signed_integer(t) || t->id == DF_TYPE_NULL) return df_type_int64();
        if (df_type_is_unsigned_integer(t)) return df_type_uint64();
        if (df_type_is_floating(t)) return df_type_float64();
        if (t->id == DF_TYPE_DECIMAL128 && df__sqlt_decimal_ps(t, &p, &s)) return df_type_decimal(DF_MIN(p + 10, 38), s);
        return NULL;
    case DF_AGG_AVG:
        if (df_type_is_integer(t) || df_type_is_floating(t) || t->id == DF_TYPE_NULL) return df_type_float64();
        if (t->id == DF_TYPE_DECIMAL128 && df__sqlt_decimal_ps(t, &p, &s))
            return df_type_decimal(DF_MIN(p + 4, 38), DF_MIN(s + 4, 38));
        return NULL;
    default: return NULL;
    }
}

/* Binds the function part of a window call: w->fn/agg/args/param/type. */
static df_errkind bind_win_fn(binder *b, const ast_expr *e, const bctx *ctx, df_window *w) {
    const char *name = fn_name(e);
    int wf = win_fn(name);
    if (e->null_treatment == 1) {
        if (wf != DF_WIN_LAG && wf != DF_WIN_LEAD && wf != DF_WIN_FIRST_VALUE && wf != DF_WIN_LAST_VALUE &&
            wf != DF_WIN_NTH_VALUE)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "IGNORE NULLS is not permitted for %s", name);
        w->ignore_nulls = true;
    }
    if (e->flag || e->norder || (e->filter && wf >= 0))
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "DISTINCT, FILTER and ORDER BY are not supported in window calls");
    int32_t na = e->nlist;
    if (wf < 0) {
        int agg = df__bind_agg_fn(&(ast_expr){.kind = AE_FUNC, .name = e->name});
        if (agg >= 0 && agg != DF_AGG_COUNT && agg != DF_AGG_SUM && agg != DF_AGG_AVG && agg != DF_AGG_MIN &&
            agg != DF_AGG_MAX && df_agg_fn_single_step((df_agg_fn)agg) && !e->filter && agg != DF_AGG_STRING_AGG &&
            agg != DF_AGG_APPROX_DISTINCT) {
            /* Other aggregates recompute each distinct frame (op_window.c). */
            w->fn = DF_WIN_AGG;
            w->agg = agg;
            DF_TRY(df__bind_window_more_agg(b, e, agg, ctx, &w->more));
            df_agg *m = w->more;
            bool two = m->arg2 && agg >= DF_AGG_COVAR_SAMP && agg <= DF_AGG_REGR_SXY;
            w->nargs = two ? 2 : 1;
            w->args = df__lplan_alloc(b->plan, 2 * sizeof(df_expr *));
            if (!w->args) return DF_OOM(b->err);
            w->args[0] = m->arg;
            w->args[1] = two ? m->arg2 : NULL;
            w->type = m->type;
            return DF_OK;
        }
        if (agg != DF_AGG_COUNT && agg != DF_AGG_SUM && agg != DF_AGG_AVG && agg != DF_AGG_MIN && agg != DF_AGG_MAX)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "`%s` is not supported as a window function", name);
        w->fn = DF_WIN_AGG;
        w->agg = agg;
        df_expr *keep = NULL;
        if (e->filter) {
            /* These aggregates skip NULLs, so FILTER (WHERE f) is the input CASE WHEN f THEN x END. */
            bctx fc = *ctx;
            fc.clause = "FILTER";
            if (!(keep = df__bind_condition(b, e->filter, &fc))) return berr(b);
        }
        if (keep && (e->star_arg || na == 0 || (na == 1 && e->list[0]->kind == AE_STAR))) {
            if (agg != DF_AGG_COUNT) return df__bind_error(b, DF_ERR_SQL_SYNTAX, e->pos, "only count accepts `*`");
            df_scalar one = {.type = df_type_int64(), .v.i64 = 1};
            df_expr *args[2] = {keep, df__expr_literal(b->plan, &one, b->err)};
            if (!args[1]) return berr(b);
            w->args = df__lplan_alloc(b->plan, sizeof(df_expr *));
            if (!w->args) return DF_OOM(b->err);
            if (!(w->args[0] = df__expr_new(b->plan, DF_EX_CASE, df_type_int64(), true, 2, args, b->err))) return berr(b);
            w->nargs = 1;
            w->type = df_type_int64();
            return DF_OK;
        }
        if (e->star_arg || (agg == DF_AGG_COUNT && na == 0)) {
            if (agg != DF_AGG_COUNT) return df__bind_error(b, DF_ERR_SQL_SYNTAX, e->pos, "only count accepts `*`");
            w->count_star = true;
            w->type = df_type_int64();
            return DF_OK;
        }
        if (na != 1) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s takes exactly one argument", name);
        if (agg == DF_AGG_COUNT && e->list[0]->kind == AE_STAR) {
            w->count_star = true;
            w->type = df_type_int64();
            return DF_OK;
        }
        df_expr *x = df__bind_expr(b, e->list[0], ctx);
        if (!x) return berr(b);
        if (keep) {
            df_expr *args[2] = {keep, x};
            if (!(x = df__expr_new(b->plan, DF_EX_CASE, x->type, true, 2, args, b->err))) return berr(b);
        }
        if (x->type->id == DF_TYPE_NULL && (agg == DF_AGG_SUM || agg == DF_AGG_AVG)) {
            x = df__bind_coerce(b, x, agg == DF_AGG_SUM ? df_type_int64() : df_type_float64(), e->pos);
            if (!x) return berr(b);
        }
        df_type *rt = win_agg_type((df_agg_fn)agg, x->type);
        if (!rt) {
            df_buf tn;
            df_buf_init(&tn, 256);
            df__sqlt_display(x->type, &tn, NULL);
            df_errkind k = df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s does not accept %s", name, tn.data ? tn.data : "?");
            df_buf_free(&tn);
            return k;
        }
        w->type = df__bind_keep(b, rt);
        w->args = df__lplan_alloc(b->plan, sizeof(df_expr *));
        if (!w->type || !w->args) return DF_OOM(b->err);
        w->args[0] = x;
        w->nargs = 1;
        return DF_OK;
    }
    w->fn = (df_win_fn)wf;
    switch (w->fn) {
    case DF_WIN_ROW_NUMBER: case DF_WIN_RANK: case DF_WIN_DENSE_RANK:
    case DF_WIN_PERCENT_RANK: case DF_WIN_CUME_DIST:
        if (na != 0) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s takes no arguments", name);
        w->type = (w->fn == DF_WIN_PERCENT_RANK || w->fn == DF_WIN_CUME_DIST) ? df_type_float64() : df_type_uint64();
        return DF_OK;
    case DF_WIN_NTILE:
        if (na != 1) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "ntile takes one argument");
        DF_TRY(int_param(b, e->list[0], ctx, false, &w->param, NULL));
        if (w->param < 1) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "ntile needs a positive number of buckets");
        w->type = df_type_uint64();
        return DF_OK;
    default: break;
    }
    /* Value functions: lag/lead(x [, offset [, default]]), first/last_value(x), nth_value(x, n). */
    int32_t max_args = (w->fn == DF_WIN_LAG || w->fn == DF_WIN_LEAD) ? 3 : w->fn == DF_WIN_NTH_VALUE ? 2 : 1;
    int32_t min_args = w->fn == DF_WIN_NTH_VALUE ? 2 : 1;
    if (na < min_args || na > max_args) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "wrong number of arguments to %s", name);
    df_expr *x = df__bind_expr(b, e->list[0], ctx);
    if (!x) return berr(b);
    w->args = df__lplan_alloc(b->plan, 2 * sizeof(df_expr *));
    if (!w->args) return DF_OOM(b->err);
    w->args[0] = x;
    w->nargs = 1;
    w->type = x->type;
    if (w->fn == DF_WIN_LAG || w->fn == DF_WIN_LEAD) {
        w->param = 1;
        if (na >= 2) DF_TRY(int_param(b, e->list[1], ctx, true, &w->param, NULL));
        if (na == 3) {
            df_expr *d = df__bind_expr(b, e->list[2], ctx);
            if (!d) return berr(b);
            if (x->type->id == DF_TYPE_NULL) {
                /* lag(NULL, 1, v): the result takes the default's type. */
                w->type = d->type;
                w->args[0] = df__bind_coerce(b, x, d->type, e->pos);
                if (!w->args[0]) return berr(b);
            } else {
                d = df__bind_coerce(b, d, x->type, e->list[2]->pos);
                if (!d) return berr(b);
            }
            w->args[1] = d;
            w->nargs = 2;
        }
    } else if (w->fn == DF_WIN_NTH_VALUE) {
        bool null = false;
        DF_TRY(int_param(b, e->list[1], ctx, true, &w->param, &null));
        if (null) w->param = 0; /* nth_value(x, NULL) is NULL */
        else if (w->param == 0 || w->param == INT64_MIN)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "nth_value needs n >= 1 (from the first row) or <= -1 (from the last)");
    }
    return DF_OK;
}

/* Binds one window call into w. */
static df_errkind bind_window(binder *b, const ast_expr *e, const bctx *ctx, df_window *w) {
    const ast_window *ov = e->over;
    if (ov->name) return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "named windows are not supported");
    if (ov->exclude) return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "EXCLUDE in window frames is not supported");
    memset(w, 0, sizeof *w);
    bctx in = *ctx;
    in.clause = "window function";
    DF_TRY(bind_win_fn(b, e, &in, w));
    w->npart = ov->npartition;
    w->part = df__lplan_alloc(b->plan, (size_t)(w->npart + 1) * sizeof(df_expr *));
    w->norder = ov->norder;
    w->order = df__lplan_alloc(b->plan, (size_t)(w->norder + 1) * sizeof(df_sort_key));
    if (!w->part || !w->order) return DF_OOM(b->err);
    for (int32_t i = 0; i < w->npart; i++) {
        w->part[i] = df__bind_expr(b, ov->partition[i], &in);
        if (!w->part[i]) return berr(b);
    }
    for (int32_t i = 0; i < w->norder; i++) {
        const ast_order *o = &ov->order[i];
        w->order[i].expr = df__bind_expr(b, o->expr, &in);
        if (!w->order[i].expr) return berr(b);
        w->order[i].desc = o->desc;
        w->order[i].nulls_first = o->nulls == 1 || (o->nulls == 0 && o->desc);
    }
    if (ov->has_frame) {
        w->units = (df_frame_units)ov->frame_units;
        if (w->units == DF_FRAME_GROUPS && w->norder == 0)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "a GROUPS frame needs an ORDER BY");
        DF_TRY(bind_bound(b, &ov->start, &in, w->units, w, &w->start));
        DF_TRY(bind_bound(b, &ov->end, &in, w->units, w, &w->end));
        if (w->start.kind == DF_BOUND_UNBOUNDED_FOLLOWING || w->end.kind == DF_BOUND_UNBOUNDED_PRECEDING ||
            w->start.kind > w->end.kind)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "the window frame starts after it ends");
    } else {
        w->units = DF_FRAME_RANGE;
        w->start.kind = DF_BOUND_UNBOUNDED_PRECEDING;
        w->end.kind = w->norder ? DF_BOUND_CURRENT : DF_BOUND_UNBOUNDED_FOLLOWING;
    }
    return DF_OK;
}

static bwin *find_win(binder *b, const ast_expr *e) {
    for (bwin *w = b->wins; w; w = w->next)
        if (w->e == e) return w;
    return NULL;
}

typedef struct wlist {
    int32_t n, cap;
    const ast_expr **e;
} wlist;

/* Collects window calls in e (not inside nested queries or other window calls). */
static df_errkind collect(binder *b, const ast_expr *e, wlist *l) {
    if (!e || e->kind == AE_SUBQUERY || e->kind == AE_EXISTS) return DF_OK;
    if (is_window_call(e)) {
        if (find_win(b, e)) return DF_OK;
        for (int32_t i = 0; i < l->n; i++)
            if (l->e[i] == e) return DF_OK;
        if (l->n == l->cap) {
            int32_t nc = l->cap ? l->cap * 2 : 8;
            const ast_expr **ne = df__lplan_alloc(b->plan, (size_t)nc * sizeof *ne);
            if (!ne) return DF_OOM(b->err);
            if (l->n) df__memcpy(ne, l->e, (size_t)l->n * sizeof *ne);
            l->e = ne;
            l->cap = nc;
        }
        l->e[l->n++] = e;
        return DF_OK;
    }
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++) DF_TRY(collect(b, ops[k], l));
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list) DF_TRY(collect(b, e->list[i], l));
        if (e->list2) DF_TRY(collect(b, e->list2[i], l));
    }
    return DF_OK;
}

bool df__ast_has_window(const ast_expr *e) {
    if (!e || e->kind == AE_SUBQUERY || e->kind == AE_EXISTS) return false;
    if (is_window_call(e)) return true;
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++)
        if (df__ast_has_window(ops[k])) return true;
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list && df__ast_has_window(e->list[i])) return true;
        if (e->list2 && df__ast_has_window(e->list2[i])) return true;
    }
    return false;
}

/* The display name of a bound window call: `fn(args) OVER (PARTITION BY .. ORDER BY .. [frame])`. */
static const char *win_display(binder *b, const df_window *w, const ast_window *ov) {
    static const char *const units[] = {"ROWS", "RANGE", "GROUPS"};
    static const char *const bounds[] = {"UNBOUNDED PRECEDING", "PRECEDING", "CURRENT ROW", "FOLLOWING",
                                         "UNBOUNDED FOLLOWING"};
    df_buf d;
    df_buf_init(&d, 1 << 20);
    df_errkind k = df_buf_printf(&d, NULL, "%s(%s", df_win_fn_name(w), w->count_star ? "*" : "");
    for (int32_t i = 0; i < w->nargs && !k; i++) {
        if (i) k = df_buf_append_str(&d, ", ", NULL);
        if (!k) k = df__expr_display(w->args[i], &d, NULL);
    }
    if (!k && (w->fn == DF_WIN_NTILE || w->fn == DF_WIN_NTH_VALUE || ((w->fn == DF_WIN_LAG || w->fn == DF_WIN_LEAD) && w->param != 1)))
        k = df_buf_printf(&d, NULL, "%s%" PRId64, w->nargs ? ", " : "", w->param);
    if (!k) k = df_buf_append_str(&d, w->ignore_nulls ? ") IGNORE NULLS OVER (" : ") OVER (", NULL);
    for (int32_t i = 0; i < w->npart && !k; i++) {
        k = df_buf_append_str(&d, i ? ", " : "PARTITION BY ", NULL);
        if (!k) k = df__expr_display(w->part[i], &d, NULL);
    }
    for (int32_t i = 0; i < w->norder && !k; i++) {
        k = df_buf_append_str(&d, i ? ", " : w->npart ? " ORDER BY " : "ORDER BY ", NULL);
        if (!k) k = df__expr_display(w->order[i].expr, &d, NULL);
        if (!k && w->order[i].desc) k = df_buf_append_str(&d, " DESC", NULL);
    }
    if (!k && ov->has_frame) {
        k = df_buf_printf(&d, NULL, "%s%s BETWEEN ", w->npart || w->norder ? " " : "", units[w->units]);
        const df_frame_bound *bs[2] = {&w->start, &w->end};
        for (int e = 0; e < 2 && !k; e++) {
            if (e) k = df_buf_append_str(&d, " AND ", NULL);
            if (!k && bs[e]->offset) {
                k = df__expr_display(bs[e]->offset, &d, NULL);
                if (!k) k = df_buf_append_char(&d, ' ', NULL);
            }
            if (!k) k = df_buf_append_str(&d, bounds[bs[e]->kind], NULL);
        }
    }
    if (!k) k = df_buf_append_char(&d, ')', NULL);
    const char *r = k ? NULL : df__bind_strdup(b, d.data ? d.data : "");
    df_buf_free(&d);
    if (!r && !k) df__bind_oom(b);
    if (k) df__bind_error(b, k, 0, "cannot display a window call");
    return r;
}

df_errkind df__bind_windows(binder *b, ast_expr *const *exprs, int32_t n, const bctx *ctx, df_lnode **node, bool **hidden) {
    wlist l = {0};
    for (int32_t i = 0; i < n; i++) DF_TRY(collect(b, exprs[i], &l));
    if (l.n == 0) return DF_OK;
    df_window *wins = df__lplan_alloc(b->plan, (size_t)l.n * sizeof *wins);
    if (!wins) return DF_OOM(b->err);
    for (int32_t i = 0; i < l.n; i++) DF_TRY(bind_window(b, l.e[i], ctx, &wins[i]));
    df_lnode *in = *node;
    int32_t ni = in->ncols;
    df_lnode *w = df__lnode_new(b->plan, DF_LN_WINDOW, 1, &in, ni + l.n, b->err);
    bool *nh = df__lplan_alloc(b->plan, (size_t)(ni + l.n) + 1);
    if (!w || !nh) return berr(b);
    df__memcpy(w->cols, in->cols, (size_t)ni * sizeof(df_lcol));
    for (int32_t i = 0; i < ni; i++) nh[i] = *hidden && (*hidden)[i];
    for (int32_t i = 0; i < l.n; i++) {
        /* Named as displayed; calls spelled alike compute alike, so a lookup by name may find either. */
        const char *col = win_display(b, &wins[i], l.e[i]->over);
        b->nwin++;
        bwin *rec = df__lplan_alloc(b->plan, sizeof *rec);
        if (!col || !rec) return DF_OOM(b->err);
        wins[i].name = col;
        w->cols[ni + i] = (df_lcol){.name = col, .type = wins[i].type, .nullable = true};
        nh[ni + i] = true;
        *rec = (bwin){.e = l.e[i], .col = col, .next = b->wins};
        b->wins = rec;
    }
    w->u.window.nwin = l.n;
    w->u.window.wins = wins;
    *node = w;
    *hidden = nh;
    return DF_OK;
}

df_expr *df__bind_window_column(binder *b, const ast_expr *e, const bctx *ctx) {
    bwin *w = find_win(b, e);
    const bscope *sc = ctx->scope;
    /* The column carries the very name pointer the call was given; equal text is a fallback. */
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; w && sc && i < sc->ncols; i++)
            if (sc->cols[i].name == w->col || (pass == 1 && strcmp(sc->cols[i].name, w->col) == 0))
                return df__expr_column(b->plan, i, &sc->cols[i], b->err);
    df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "window functions are not supported in %s",
               ctx->clause ? ctx->clause : "this position");
    return NULL;
}
