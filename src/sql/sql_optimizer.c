/*
 * Logical optimizer.  Rules run as whole-tree passes, each building new
 * nodes (plans are immutable; unchanged subtrees are shared):
 *
 *   1. fold      constant folding through the executor's evaluator, boolean
 *                simplification (x AND TRUE, x OR FALSE ...), filters that
 *                are constantly TRUE vanish, FALSE/NULL ones become empty.
 *   2. push      predicate pushdown: conjuncts travel through projections
 *                (substituted), sorts, unions, aggregates (when they only
 *                use group keys) and into join sides; equalities between
 *                the sides of an inner join become join keys (so
 *                FROM a, b WHERE a.x = b.y is a hash join); conjuncts that
 *                reach a scan are also recorded on it as pruning hints,
 *                while the full filter stays above.
 *   3. limit     limit pushdown: LIMIT reaches through projections, sets a
 *                top-k fetch on sorts, a hint on scans, and a copy per
 *                UNION input.
 *   4. prune     projection pruning: every node keeps only the columns
 *                its parent needs, so scans read only what is used.
 *   5. merge     identity projections disappear and stacked projections
 *                merge when that does not duplicate work.
 *
 * Errors during folding (1/0 in a branch never taken) are not errors: the
 * expression is left for execution, which raises it only if it is
 * evaluated.  Recursion follows the plan depth (bounded by the SQL nesting
 * the parser accepts) and the expression height (bounded likewise).
 */
#include "sql/logical_plan.h"

typedef struct opt {
    df_lplan *p;            /* container for new nodes */
    df_const_eval_fn eval;  /* constant evaluator */
    df_error *err;          /* caller's error */
} opt;

static void *oom(opt *o) {
    DF_OOM(o->err);
    return NULL;
}

static df_lnode *clone_lnode(opt *o, const df_lnode *n) {
    df_lnode *c = df__lnode_new(o->p, n->kind, n->ninputs, n->inputs, n->ncols, o->err);
    if (!c) return NULL;
    df__memcpy(c->cols, n->cols, (size_t)n->ncols * sizeof(df_lcol));
    c->u = n->u;
    return c;
}

static df_expr *clone_expr(opt *o, const df_expr *e) {
    df_expr *c = df__lplan_alloc(o->p, sizeof *c);
    df_expr **a = e->nargs ? df__lplan_alloc(o->p, (size_t)e->nargs * sizeof *a) : NULL;
    if (!c || (e->nargs && !a)) return oom(o);
    *c = *e;
    c->args = a;
    if (a) df__memcpy(a, e->args, (size_t)e->nargs * sizeof *a);
    return c;
}

static bool is_bool_lit(const df_expr *e, bool v) {
    return e->kind == DF_EX_LITERAL && e->type->id == DF_TYPE_BOOL && !e->lit->is_null && e->lit->v.b == v;
}
static bool is_null_lit(const df_expr *e) { return e->kind == DF_EX_LITERAL && e->lit->is_null; }

/* ------------------------------------------------------------------------ */
/* 1. Constant folding                                                       */

static df_expr *fold_expr(opt *o, df_expr *e);

/* The result coerced back to e's declared type is not needed: branches already have it. */
static df_expr *fold_branches(opt *o, df_expr *e) {
    if (e->kind == DF_EX_COALESCE) {
        int32_t first = 0;
        while (first < e->nargs - 1 && is_null_lit(e->args[first])) first++;
        if (e->args[first]->kind == DF_EX_LITERAL && !e->args[first]->lit->is_null) return e->args[first];
        if (first == 0) return e;
        if (first == e->nargs - 1) return e->args[first];
        df_expr *c = clone_expr(o, e);
        if (!c) return NULL;
        c->args += first;
        c->nargs -= first;
        return c;
    }
    int32_t pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2, kept = 0;
    df_expr **args = df__lplan_alloc(o->p, (size_t)e->nargs * sizeof(df_expr *) + 1);
    if (!args) return oom(o);
    for (int32_t i = 0; i < pairs; i++) {
        df_expr *w = e->args[2 * i];
        if (is_bool_lit(w, false) || is_null_lit(w)) continue; /* never taken */
        if (is_bool_lit(w, true)) {
            if (kept == 0) return e->args[2 * i + 1]; /* always taken, and first */
            args[2 * kept] = w;
            args[2 * kept + 1] = e->args[2 * i + 1];
            kept++;
            break; /* later branches are never reached */
        }
        args[2 * kept] = w;
        args[2 * kept + 1] = e->args[2 * i + 1];
        kept++;
    }
    if (kept == pairs) return e;
    bool reached_else = kept == 0 || !is_bool_lit(args[2 * kept - 2], true);
    if (kept == 0) return e->has_else ? e->args[e->nargs - 1] : df__expr_null(o->p, e->type, o->err);
    df_expr *c = clone_expr(o, e);
    if (!c) return NULL;
    int32_t n = 2 * kept;
    if (e->has_else && reached_else) args[n++] = e->args[e->nargs - 1];
    c->args = args;
    c->nargs = n;
    c->has_else = e->has_else && reached_else;
    return c;
}

static bool null_propagating(df_fn fn) {
    switch (fn) {
    case DF_FN_ADD: case DF_FN_SUB: case DF_FN_MUL: case DF_FN_DIV: case DF_FN_MOD:
    case DF_FN_EQ: case DF_FN_NE: case DF_FN_LT: case DF_FN_LE: case DF_FN_GT: case DF_FN_GE:
        return true;
    default:
        return false;
    }
}

/* AND/OR simplification after folding operands. */
static df_expr *fold_logic(opt *o, df_expr *e) {
    bool is_and = e->kind == DF_EX_AND;
    df_expr **keep = df__lplan_alloc(o->p, (size_t)e->nargs * sizeof *keep);
    if (!keep) return oom(o);
    int32_t n = 0;
    for (int32_t i = 0; i < e->nargs; i++) {
        df_expr *a = fold_expr(o, e->args[i]);
        if (!a) return NULL;
        if (is_bool_lit(a, !is_and)) return a;   /* x AND FALSE, x OR TRUE */
        if (is_bool_lit(a, is_and)) continue;   /* x AND TRUE, x OR FALSE */
        if (a->kind == e->kind) {               /* flatten */
            /* Room for what is kept, a's operands and the operands still to come. */
            df_expr **nk = df__lplan_alloc(o->p, (size_t)(n + a->nargs + (e->nargs - i - 1)) * sizeof *nk);
            if (!nk) return oom(o);
            df__memcpy(nk, keep, (size_t)n * sizeof *nk);
            keep = nk;
            for (int32_t j = 0; j < a->nargs; j++) keep[n++] = a->args[j];
            continue;
        }
        keep[n++] = a;
    }
    if (n == 0) {
        df_scalar s = {.type = df_type_bool(), .v.b = is_and};
        return df__expr_literal(o->p, &s, o->err);
    }
    if (n == 1) return keep[0];
    df_expr *c = clone_expr(o, e);
    if (!c) return NULL;
    c->args = keep;
    c->nargs = n;
    return c;
}

static df_expr *fold_expr(opt *o, df_expr *e) {
    if (e->kind == DF_EX_COLUMN || e->kind == DF_EX_LITERAL) return e;
    if (e->kind == DF_EX_AND || e->kind == DF_EX_OR) {
        df_expr *r = fold_logic(o, e);
        if (!r || r == e || r->kind == DF_EX_LITERAL || (r->kind != DF_EX_AND && r->kind != DF_EX_OR)) return r;
        e = r;
    } else {
        df_expr *c = NULL;
        for (int32_t i = 0; i < e->nargs; i++) {
            df_expr *a = fold_expr(o, e->args[i]);
            if (!a) return NULL;
            if (a != e->args[i]) {
                if (!c && !(c = clone_expr(o, e))) return NULL;
                c->args[i] = a;
            }
        }
        if (c) e = c;
    }
    /* Branches decided while planning (as DataFusion's simplifier): a branch never taken is never run. */
    if (e->kind == DF_EX_CASE || e->kind == DF_EX_COALESCE) {
        df_expr *r = fold_branches(o, e);
        if (r != e) return r ? fold_expr(o, r) : NULL;
    }
    /* x op NULL is NULL for comparisons and arithmetic without evaluating x (as DataFusion's simplifier). */
    if (e->kind == DF_EX_FUNC && e->nargs == 2 && (is_null_lit(e->args[0]) || is_null_lit(e->args[1])) &&
        null_propagating(e->fn) && !df__expr_volatile(e)) {
        df_expr *n = df__expr_null(o->p, e->type, o->err);
        if (n) n->display = e->display;
        return n;
    }
    if (!df__expr_is_constant(e) || df__expr_volatile(e)) return e;
    df_scalar v = {0};
    df_error ignored = {0};
    if (o->eval(e, &v, &ignored) != DF_OK) {
        df_error_clear(&ignored);
        return e; /* evaluate (and fail) at run time only if reached */
    }
    bool is_null = v.is_null;
    df_expr *lit = df__expr_literal(o->p, &v, o->err);
    df_scalar_clear(&v);
    if (!lit) return NULL;
    /* The folded value keeps the expression's declared type and name. */
    if (!df_type_equals(lit->type, e->type)) return e;
    lit->display = e->display;
    lit->nullable = is_null;
    return lit;
}

static df_lnode *fold(opt *o, df_lnode *n);

static df_lnode *fold_inputs(opt *o, df_lnode *n) {
    df_lnode *c = NULL;
    for (int32_t i = 0; i < n->ninputs; i++) {
        df_lnode *in = fold(o, n->inputs[i]);
        if (!in) return NULL;
        if (in != n->inputs[i]) {
            if (!c && !(c = clone_lnode(o, n))) return NULL;
            c->inputs[i] = in;
        }
    }
    return c ? c : n;
}

static df_lnode *empty_like(opt *o, const df_lnode *n) {
    df_lnode *e = df__lnode_new(o->p, DF_LN_EMPTY, 0, NULL, n->ncols, o->err);
    if (!e) return NULL;
    df__memcpy(e->cols, n->cols, (size_t)n->ncols * sizeof(df_lcol));
    e->u.empty.one_row = false;
    return e;
}

/* Folds an array of expressions; *changed set when any differs. */
static df_expr **fold_array(opt *o, df_expr **es, int32_t n, bool *changed) {
    df_expr **out = df__lplan_alloc(o->p, (size_t)(n ? n : 1) * sizeof *out);
    if (!out) return oom(o);
    for (int32_t i = 0; i < n; i++) {
        out[i] = fold_expr(o, es[i]);
        if (!out[i]) return NULL;
        if (out[i] != es[i]) *changed = true;
    }
    return out;
}

static bool is_empty(const df_lnode *n) { return n->kind == DF_LN_EMPTY && !n->u.empty.one_row; }

/*
 * Whether n has no rows because an input has none (known while planning,
 * as when a WHERE folds to false).  Its other inputs are then never run, as
 * DataFusion skips them: EXCEPT of an empty left side does not evaluate the
 * right one.
 */
static bool empty_by_input(const df_lnode *n) {
    switch (n->kind) {
    case DF_LN_FILTER:
    case DF_LN_PROJECT:
    case DF_LN_SORT:
    case DF_LN_LIMIT:
    case DF_LN_WINDOW:
        return is_empty(n->inputs[0]);
    case DF_LN_AGGREGATE:
        return n->u.agg.ngroup > 0 && !n->u.agg.has_empty_set && is_empty(n->inputs[0]);
    case DF_LN_JOIN: {
        bool l = is_empty(n->inputs[0]), r = is_empty(n->inputs[1]);
        switch (n->u.join.type) {
        case DF_JOIN_INNER: case DF_JOIN_LEFT_SEMI: case DF_JOIN_RIGHT_SEMI: return l || r;
        case DF_JOIN_LEFT: case DF_JOIN_LEFT_ANTI: case DF_JOIN_LEFT_MARK: return l;
        case DF_JOIN_RIGHT: case DF_JOIN_RIGHT_ANTI: return r;
        default: return l && r;
        }
    }
    default:
        return false;
    }
}

static df_lnode *fold(opt *o, df_lnode *n) {
    n = fold_inputs(o, n);
    if (!n) return NULL;
    if (empty_by_input(n)) return empty_like(o, n);
    bool changed = false;
    switch (n->kind) {
    case DF_LN_FILTER: {
        df_expr *p = fold_expr(o, n->u.filter.pred);
        if (!p) return NULL;
        if (is_bool_lit(p, true)) return n->inputs[0];
        if (is_bool_lit(p, false) || is_null_lit(p)) return empty_like(o, n);
        if (p == n->u.filter.pred) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.filter.pred = p;
        return c;
    }
    case DF_LN_PROJECT: {
        df_expr **es = fold_array(o, n->u.project.exprs, n->ncols, &changed);
        if (!es) return NULL;
        if (!changed) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.project.exprs = es;
        return c;
    }
    case DF_LN_JOIN: {
        if (!n->u.join.filter) return n;
        df_expr *f = fold_expr(o, n->u.join.filter);
        if (!f) return NULL;
        if (f == n->u.join.filter) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.join.filter = is_bool_lit(f, true) ? NULL : f;
        return c;
    }
    case DF_LN_AGGREGATE: {
        /* Aggregate inputs and filters fold like projections (x + NULL must not evaluate x). */
        int32_t na = n->u.agg.naggs;
        df_agg *aggs = df__lplan_alloc(o->p, (size_t)(na ? na : 1) * sizeof *aggs);
        if (!aggs) return oom(o);
        for (int32_t i = 0; i < na; i++) {
            aggs[i] = n->u.agg.aggs[i];
            df_expr **slots[2] = {&aggs[i].arg, &aggs[i].filter};
            for (int j = 0; j < 2; j++) {
                if (!*slots[j]) continue;
                df_expr *f = fold_expr(o, *slots[j]);
                if (!f) return NULL;
                changed |= f != *slots[j];
                *slots[j] = f;
            }
        }
        if (!changed) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.agg.aggs = aggs;
        return c;
    }
    case DF_LN_VALUES: {
        df_expr ***rows = df__lplan_alloc(o->p, (size_t)n->u.values.nrows * sizeof *rows);
        if (!rows) return oom(o);
        for (int32_t r = 0; r < n->u.values.nrows; r++) {
            rows[r] = fold_array(o, n->u.values.rows[r], n->ncols, &changed);
            if (!rows[r]) return NULL;
        }
        if (!changed) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.values.rows = rows;
        return c;
    }
    default:
        return n;
    }
}

/* ------------------------------------------------------------------------ */
/* 2. Predicate pushdown                                                     */

typedef struct preds {
    int32_t n, cap;     /* conjuncts */
    df_expr **e;
} preds;

static bool preds_add(opt *o, preds *ps, df_expr *e) {
    if (e->kind == DF_EX_AND) {
        for (int32_t i = 0; i < e->nargs; i++)
            if (!preds_add(o, ps, e->args[i])) return false;
        return true;
    }
    if (is_bool_lit(e, true)) return true;
    if (ps->n == ps->cap) {
        int32_t ncap = ps->cap ? ps->cap * 2 : 8;
        df_expr **ne = df__lplan_alloc(o->p, (size_t)ncap * sizeof *ne);
        if (!ne) return oom(o) != NULL;
        if (ps->n) df__memcpy(ne, ps->e, (size_t)ps->n * sizeof *ne);
        ps->e = ne;
        ps->cap = ncap;
    }
    ps->e[ps->n++] = e;
    return true;
}

static df_expr *conjunction(opt *o, df_expr *const *es, int32_t n) {
    if (n == 1) return es[0];
    bool nullable = false;
    for (int32_t i = 0; i < n; i++) nullable |= es[i]->nullable;
    return df__expr_new(o->p, DF_EX_AND, df_type_bool(), nullable, n, es, o->err);
}

/* Filter(n, ps) or n when ps is empty. */
static df_lnode *wrap_filter(opt *o, df_lnode *n, const preds *ps) {
    if (ps->n == 0) return n;
    df_expr *pred = conjunction(o, ps->e, ps->n);
    if (!pred) return NULL;
    df_lnode *f = df__lnode_new(o->p, DF_LN_FILTER, 1, &n, n->ncols, o->err);
    if (!f) return NULL;
    df__memcpy(f->cols, n->cols, (size_t)n->ncols * sizeof(df_lcol));
    f->u.filter.pred = pred;
    return f;
}

/* Which input columns e uses: returns a bitmask of [has_left, has_right] for a split at nleft. */
static void sides(const df_expr *e, int32_t nleft, bool *left, bool *right) {
    if (e->kind == DF_EX_COLUMN) {
        if (e->column < nleft) *left = true; else *right = true;
        return;
    }
    for (int32_t i = 0; i < e->nargs; i++) sides(e->args[i], nleft, left, right);
}

static bool uses_only_below(const df_expr *e, int32_t limit) {
    if (e->kind == DF_EX_COLUMN) return e->column < limit;
    for (int32_t i = 0; i < e->nargs; i++)
        if (!uses_only_below(e->args[i], limit)) return false;
    return true;
}

/* Shifts column indices by -delta (right side of a join). */
static df_expr *shift_columns(opt *o, const df_expr *e, int32_t delta, int32_t width) {
    int32_t *map = df__lplan_alloc(o->p, (size_t)(width ? width : 1) * sizeof(int32_t));
    if (!map) return oom(o);
    for (int32_t i = 0; i < width; i++) map[i] = i - delta;
    return df__expr_remap(o->p, e, map, width, o->err);
}

static df_lnode *push(opt *o, df_lnode *n, preds *ps);

/* Pushes with no predicates (optimizes the subtree). */
static df_lnode *push_none(opt *o, df_lnode *n) {
    preds none = {0};
    return push(o, n, &none);
}

static df_lnode *push_project(opt *o, df_lnode *n, preds *ps) {
    preds down = {0}, stay = {0};
    bool volatile_proj = false;
    for (int32_t i = 0; i < n->ncols; i++) volatile_proj |= df__expr_volatile(n->u.project.exprs[i]);
    for (int32_t i = 0; i < ps->n; i++) {
        if (volatile_proj) {
            if (!preds_add(o, &stay, ps->e[i])) return NULL;
            continue;
        }
        df_expr *s = df__expr_substitute(o->p, ps->e[i], n->u.project.exprs, n->ncols, o->err);
        if (!s || !preds_add(o, &down, s)) return NULL;
    }
    df_lnode *in = push(o, n->inputs[0], &down);
    if (!in) return NULL;
    df_lnode *c = n;
    if (in != n->inputs[0]) {
        if (!(c = clone_lnode(o, n))) return NULL;
        c->inputs[0] = in;
    }
    return wrap_filter(o, c, &stay);
}

static df_lnode *push_join(opt *o, df_lnode *n, preds *ps) {
    df_lnode *l = n->inputs[0], *r = n->inputs[1];
    int32_t nl = l->ncols, nr = r->ncols, width = nl + nr;
    df_join_type t = n->u.join.type;
    bool semi_right = t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI;
    bool left_ok = t == DF_JOIN_INNER || t == DF_JOIN_LEFT || t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_LEFT_ANTI ||
                   t == DF_JOIN_LEFT_MARK;
    bool right_ok = t == DF_JOIN_INNER || t == DF_JOIN_RIGHT || semi_right;
    preds lp = {0}, rp = {0}, stay = {0};
    df_expr **keys_l = NULL, **keys_r = NULL;
    bool *null_eq = NULL;
    int32_t nkeys = n->u.join.nkeys;
    int32_t cap_keys = nkeys + ps->n;
    keys_l = df__lplan_alloc(o->p, (size_t)(cap_keys ? cap_keys : 1) * sizeof *keys_l);
    keys_r = df__lplan_alloc(o->p, (size_t)(cap_keys ? cap_keys : 1) * sizeof *keys_r);
    null_eq = df__lplan_alloc(o->p, (size_t)(cap_keys ? cap_keys : 1) * sizeof *null_eq);
    if (!keys_l || !keys_r || !null_eq) return oom(o);
    df__memcpy(keys_l, n->u.join.lkeys, (size_t)nkeys * sizeof *keys_l);
    df__memcpy(keys_r, n->u.join.rkeys, (size_t)nkeys * sizeof *keys_r);
    df__memcpy(null_eq, n->u.join.null_equal, (size_t)nkeys * sizeof *null_eq);
    for (int32_t i = 0; i < ps->n; i++) {
        df_expr *e = ps->e[i];
        if (semi_right) {
            /* Output columns are the right side's: shift onto the right input. */
            if (!preds_add(o, &rp, e)) return NULL;
            continue;
        }
        bool ul = false, ur = false;
        sides(e, nl, &ul, &ur);
        if (ul && !ur && left_ok) {
            if (!preds_add(o, &lp, e)) return NULL;
        } else if (ur && !ul && right_ok) {
            df_expr *s = shift_columns(o, e, nl, width);
            if (!s || !preds_add(o, &rp, s)) return NULL;
        } else if (ul && ur && t == DF_JOIN_INNER && e->kind == DF_EX_FUNC &&
                   (e->fn == DF_FN_EQ || e->fn == DF_FN_IS_NOT_DISTINCT)) {
            bool al = false, ar = false, bl = false, br = false;
            sides(e->args[0], nl, &al, &ar);
            sides(e->args[1], nl, &bl, &br);
            int li = (al && !ar && br && !bl) ? 0 : (bl && !br && ar && !al) ? 1 : -1;
            if (li < 0) {
                if (!preds_add(o, &stay, e)) return NULL;
                continue;
            }
            df_expr *rk = shift_columns(o, e->args[1 - li], nl, width);
            if (!rk) return NULL;
            keys_l[nkeys] = e->args[li];
            keys_r[nkeys] = rk;
            null_eq[nkeys] = e->fn == DF_FN_IS_NOT_DISTINCT;
            nkeys++;
        } else {
            if (!preds_add(o, &stay, e)) return NULL;
        }
    }
    /* ON-clause conjuncts of inner joins that touch one side move into that side. */
    df_expr *jfilter = n->u.join.filter;
    if (jfilter && (t == DF_JOIN_INNER || t == DF_JOIN_LEFT || t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_LEFT_ANTI ||
                    t == DF_JOIN_LEFT_MARK)) {
        preds all = {0}, keep = {0};
        if (!preds_add(o, &all, jfilter)) return NULL;
        for (int32_t i = 0; i < all.n; i++) {
            bool ul = false, ur = false;
            sides(all.e[i], nl, &ul, &ur);
            if (ur && !ul) {
                df_expr *s = shift_columns(o, all.e[i], nl, width);
                if (!s || !preds_add(o, &rp, s)) return NULL;
            } else if (ul && !ur && t == DF_JOIN_INNER) {
                if (!preds_add(o, &lp, all.e[i])) return NULL;
            } else if (!preds_add(o, &keep, all.e[i])) {
                return NULL;
            }
        }
        jfilter = keep.n ? conjunction(o, keep.e, keep.n) : NULL;
        if (keep.n && !jfilter) return NULL;
    }
    df_lnode *nl2 = push(o, l, &lp);
    df_lnode *nr2 = nl2 ? push(o, r, &rp) : NULL;
    if (!nr2) return NULL;
    df_lnode *c = clone_lnode(o, n);
    if (!c) return NULL;
    c->inputs[0] = nl2;
    c->inputs[1] = nr2;
    c->u.join.nkeys = nkeys;
    c->u.join.lkeys = keys_l;
    c->u.join.rkeys = keys_r;
    c->u.join.null_equal = null_eq;
    c->u.join.filter = jfilter;
    return wrap_filter(o, c, &stay);
}

static df_lnode *push_aggregate(opt *o, df_lnode *n, preds *ps) {
    preds down = {0}, stay = {0};
    int32_t ng = n->u.agg.ngroup;
    for (int32_t i = 0; i < ps->n; i++) {
        if (ng > 0 && uses_only_below(ps->e[i], ng) && !df__expr_volatile(ps->e[i])) {
            df_expr *s = df__expr_substitute(o->p, ps->e[i], n->u.agg.group, ng, o->err);
            if (!s || !preds_add(o, &down, s)) return NULL;
        } else if (!preds_add(o, &stay, ps->e[i])) {
            return NULL;
        }
    }
    df_lnode *in = push(o, n->inputs[0], &down);
    if (!in) return NULL;
    df_lnode *c = n;
    if (in != n->inputs[0]) {
        if (!(c = clone_lnode(o, n))) return NULL;
        c->inputs[0] = in;
    }
    return wrap_filter(o, c, &stay);
}

static df_lnode *push_scan(opt *o, df_lnode *n, preds *ps) {
    if (ps->n == 0) return n;
    /* Hints over the provider schema: remap output columns through the projection. */
    int32_t nprov = n->u.scan.provider->schema->nfields;
    int32_t *map = df__lplan_alloc(o->p, (size_t)(n->ncols ? n->ncols : 1) * sizeof(int32_t));
    df_expr **hints = df__lplan_alloc(o->p, (size_t)(n->u.scan.nfilters + ps->n) * sizeof(df_expr *));
    if (!map || !hints) return oom(o);
    for (int32_t i = 0; i < n->ncols; i++) map[i] = n->u.scan.proj[i];
    int32_t nh = n->u.scan.nfilters;
    df__memcpy(hints, n->u.scan.filters, (size_t)nh * sizeof(df_expr *));
    for (int32_t i = 0; i < ps->n; i++) {
        if (df__expr_volatile(ps->e[i])) continue;
        df_expr *h = df__expr_remap(o->p, ps->e[i], map, n->ncols, o->err);
        if (!h) return NULL;
        hints[nh++] = h;
    }
    (void)nprov;
    df_lnode *c = clone_lnode(o, n);
    if (!c) return NULL;
    c->u.scan.filters = hints;
    c->u.scan.nfilters = nh;
    return wrap_filter(o, c, ps);
}

static df_lnode *push(opt *o, df_lnode *n, preds *ps) {
    switch (n->kind) {
    case DF_LN_FILTER: {
        preds all = *ps;
        all.cap = all.n; /* force a copy on growth so the caller's array is untouched */
        if (!preds_add(o, &all, n->u.filter.pred)) return NULL;
        return push(o, n->inputs[0], &all);
    }
    case DF_LN_PROJECT: return push_project(o, n, ps);
    case DF_LN_JOIN: return push_join(o, n, ps);
    case DF_LN_AGGREGATE: return push_aggregate(o, n, ps);
    case DF_LN_SCAN: return push_scan(o, n, ps);
    case DF_LN_SORT: {
        df_lnode *in = push(o, n->inputs[0], ps);
        if (!in) return NULL;
        if (in == n->inputs[0]) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->inputs[0] = in;
        return c;
    }
    case DF_LN_UNION: {
        df_lnode *c = clone_lnode(o, n);
        if (!c) return NULL;
        for (int32_t i = 0; i < n->ninputs; i++) {
            preds copy = *ps;
            copy.cap = copy.n;
            c->inputs[i] = push(o, n->inputs[i], &copy);
            if (!c->inputs[i]) return NULL;
        }
        return c;
    }
    case DF_LN_LIMIT: {
        df_lnode *in = push_none(o, n->inputs[0]);
        if (!in) return NULL;
        df_lnode *c = n;
        if (in != n->inputs[0]) {
            if (!(c = clone_lnode(o, n))) return NULL;
            c->inputs[0] = in;
        }
        return wrap_filter(o, c, ps);
    }
    default:
        return wrap_filter(o, n, ps);
    }
}

/* ------------------------------------------------------------------------ */
/* 3. Limit pushdown                                                         */

static df_lnode *limit_down(opt *o, df_lnode *n, int64_t need);

static df_lnode *limit_inputs(opt *o, df_lnode *n) {
    df_lnode *c = NULL;
    for (int32_t i = 0; i < n->ninputs; i++) {
        df_lnode *in = limit_down(o, n->inputs[i], -1);
        if (!in) return NULL;
        if (in != n->inputs[i]) {
            if (!c && !(c = clone_lnode(o, n))) return NULL;
            c->inputs[i] = in;
        }
    }
    return c ? c : n;
}

/* Rewrites n knowing its consumer reads at most `need` rows (-1 = all). */
static df_lnode *limit_down(opt *o, df_lnode *n, int64_t need) {
    switch (n->kind) {
    case DF_LN_LIMIT: {
        int64_t fetch = n->u.limit.fetch;
        if (need >= 0 && (fetch < 0 || need < fetch)) fetch = need; /* the outer limit is tighter */
        int64_t below = fetch < 0 ? -1 : n->u.limit.skip + fetch;
        df_lnode *in = limit_down(o, n->inputs[0], below);
        if (!in) return NULL;
        if (in->kind == DF_LN_LIMIT && in->u.limit.skip == 0 && n->u.limit.skip == 0) {
            /* LIMIT a over LIMIT b: keep the smaller. */
            int64_t f2 = in->u.limit.fetch;
            if (f2 >= 0 && (fetch < 0 || f2 < fetch)) fetch = f2;
            in = in->inputs[0];
        }
        df_lnode *c = clone_lnode(o, n);
        if (!c) return NULL;
        c->inputs[0] = in;
        c->u.limit.fetch = fetch;
        return c;
    }
    case DF_LN_PROJECT: {
        df_lnode *in = limit_down(o, n->inputs[0], need);
        if (!in || in == n->inputs[0]) return in ? n : NULL;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->inputs[0] = in;
        return c;
    }
    case DF_LN_SORT: {
        df_lnode *in = limit_down(o, n->inputs[0], -1);
        if (!in) return NULL;
        if (in == n->inputs[0] && (need < 0 || (n->u.sort.fetch >= 0 && n->u.sort.fetch <= need))) return n;
        df_lnode *c = clone_lnode(o, n);
        if (!c) return NULL;
        c->inputs[0] = in;
        if (need >= 0 && (c->u.sort.fetch < 0 || need < c->u.sort.fetch)) c->u.sort.fetch = need;
        return c;
    }
    case DF_LN_SCAN: {
        if (need < 0 || (n->u.scan.fetch >= 0 && n->u.scan.fetch <= need)) return n;
        df_lnode *c = clone_lnode(o, n);
        if (c) c->u.scan.fetch = need;
        return c;
    }
    case DF_LN_UNION: {
        if (need < 0) return limit_inputs(o, n);
        df_lnode *c = clone_lnode(o, n);
        if (!c) return NULL;
        for (int32_t i = 0; i < n->ninputs; i++) {
            c->inputs[i] = limit_down(o, n->inputs[i], need);
            if (!c->inputs[i]) return NULL;
        }
        return c;
    }
    default:
        return limit_inputs(o, n);
    }
}

/* ------------------------------------------------------------------------ */
/* 4. Projection pruning                                                     */

static df_lnode *prune(opt *o, df_lnode *n, const bool *req, int32_t *map);

static bool *bools(opt *o, int32_t n) {
    bool *b = df__lplan_alloc(o->p, (size_t)n + 1);
    if (!b) oom(o);
    return b;
}
static int32_t *ints(opt *o, int32_t n) {
    int32_t *v = df__lplan_alloc(o->p, ((size_t)n + 1) * sizeof(int32_t));
    if (!v) oom(o);
    return v;
}

static df_expr *remap(opt *o, const df_expr *e, const int32_t *map, int32_t n) {
    return df__expr_remap(o->p, e, map, n, o->err);
}

static df_lnode *prune_scan(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    int32_t keep = 0;
    for (int32_t i = 0; i < n->ncols; i++) keep += req[i];
    int32_t first = -1;
    if (keep == 0 && n->ncols > 0) {
        /* Some column must be read to know the row count: prefer a narrow fixed-width one. */
        first = 0;
        for (int32_t i = 0; i < n->ncols; i++) {
            int32_t w = df_type_width(n->cols[i].type);
            if (w > 0 && (df_type_width(n->cols[first].type) <= 0 || w < df_type_width(n->cols[first].type)))
                first = i;
        }
        keep = 1;
    }
    if (keep == n->ncols) {
        for (int32_t i = 0; i < n->ncols; i++) map[i] = i;
        return n;
    }
    df_lnode *c = df__lnode_new(o->p, DF_LN_SCAN, 0, NULL, keep, o->err);
    int32_t *proj = ints(o, keep);
    if (!c || !proj) return NULL;
    c->u = n->u;
    int32_t k = 0;
    for (int32_t i = 0; i < n->ncols; i++) {
        if (req[i] || i == first) {
            map[i] = k;
            proj[k] = n->u.scan.proj[i];
            c->cols[k] = n->cols[i];
            k++;
        } else {
            map[i] = -1;
        }
    }
    c->u.scan.proj = proj;
    c->u.scan.nproj = keep;
    return c;
}

static df_lnode *prune_project(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    df_lnode *in = n->inputs[0];
    bool *creq = bools(o, in->ncols);
    int32_t *cmap = ints(o, in->ncols);
    if (!creq || !cmap) return NULL;
    int32_t keep = 0;
    for (int32_t i = 0; i < n->ncols; i++) {
        if (!req[i]) continue;
        keep++;
        df__expr_columns(n->u.project.exprs[i], creq, in->ncols);
    }
    df_lnode *nin = prune(o, in, creq, cmap);
    if (!nin) return NULL;
    df_lnode *c = df__lnode_new(o->p, DF_LN_PROJECT, 1, &nin, keep, o->err);
    df_expr **es = df__lplan_alloc(o->p, (size_t)(keep ? keep : 1) * sizeof *es);
    if (!c || !es) return c ? oom(o) : NULL;
    int32_t k = 0;
    for (int32_t i = 0; i < n->ncols; i++) {
        if (!req[i]) {
            map[i] = -1;
            continue;
        }
        es[k] = remap(o, n->u.project.exprs[i], cmap, in->ncols);
        if (!es[k]) return NULL;
        c->cols[k] = n->cols[i];
        map[i] = k++;
    }
    c->u.project.exprs = es;
    return c;
}

static df_lnode *prune_aggregate(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    df_lnode *in = n->inputs[0];
    int32_t ng = n->u.agg.ngroup, na = n->u.agg.naggs;
    bool *creq = bools(o, in->ncols);
    int32_t *cmap = ints(o, in->ncols);
    bool *keep_agg = bools(o, na);
    if (!creq || !cmap || !keep_agg) return NULL;
    int32_t nkeep = 0;
    for (int32_t a = 0; a < na; a++) {
        keep_agg[a] = req[ng + a];
        nkeep += keep_agg[a];
    }
    if (ng == 0 && nkeep == 0 && na > 0) {
        keep_agg[0] = true; /* a global aggregate must still produce its one row */
        nkeep = 1;
    }
    for (int32_t g = 0; g < ng; g++) df__expr_columns(n->u.agg.group[g], creq, in->ncols);
    for (int32_t a = 0; a < na; a++) {
        if (!keep_agg[a]) continue;
        if (n->u.agg.aggs[a].arg) df__expr_columns(n->u.agg.aggs[a].arg, creq, in->ncols);
        if (n->u.agg.aggs[a].arg2) df__expr_columns(n->u.agg.aggs[a].arg2, creq, in->ncols);
        if (n->u.agg.aggs[a].filter) df__expr_columns(n->u.agg.aggs[a].filter, creq, in->ncols);
        for (int32_t j = 0; j < n->u.agg.aggs[a].norder; j++)
            df__expr_columns(n->u.agg.aggs[a].order[j].expr, creq, in->ncols);
    }
    df_lnode *nin = prune(o, in, creq, cmap);
    if (!nin) return NULL;
    df_lnode *c = df__lnode_new(o->p, DF_LN_AGGREGATE, 1, &nin, ng + nkeep, o->err);
    df_expr **group = df__lplan_alloc(o->p, (size_t)(ng ? ng : 1) * sizeof *group);
    df_agg *aggs = df__lplan_alloc(o->p, (size_t)(nkeep ? nkeep : 1) * sizeof *aggs);
    if (!c || !group || !aggs) return c ? oom(o) : NULL;
    c->u.agg.has_empty_set = n->u.agg.has_empty_set;
    c->u.agg.empty_set_id = n->u.agg.empty_set_id;
    for (int32_t g = 0; g < ng; g++) {
        group[g] = remap(o, n->u.agg.group[g], cmap, in->ncols);
        if (!group[g]) return NULL;
        c->cols[g] = n->cols[g];
        map[g] = g;
    }
    int32_t k = 0;
    for (int32_t a = 0; a < na; a++) {
        if (!keep_agg[a]) {
            map[ng + a] = -1;
            continue;
        }
        aggs[k] = n->u.agg.aggs[a];
        if (aggs[k].arg && !(aggs[k].arg = remap(o, aggs[k].arg, cmap, in->ncols))) return NULL;
        if (aggs[k].arg2 && !(aggs[k].arg2 = remap(o, aggs[k].arg2, cmap, in->ncols))) return NULL;
        if (aggs[k].filter && !(aggs[k].filter = remap(o, aggs[k].filter, cmap, in->ncols))) return NULL;
        if (aggs[k].norder) {
            df_sort_key *ok = df__lplan_alloc(o->p, (size_t)aggs[k].norder * sizeof *ok);
            if (!ok) return oom(o);
            for (int32_t j = 0; j < aggs[k].norder; j++) {
                ok[j] = aggs[k].order[j];
                if (!(ok[j].expr = remap(o, ok[j].expr, cmap, in->ncols))) return NULL;
            }
            aggs[k].order = ok;
        }
        c->cols[ng + k] = n->cols[ng + a];
        map[ng + a] = ng + k;
        k++;
    }
    c->u.agg.ngroup = ng;
    c->u.agg.group = group;
    c->u.agg.naggs = nkeep;
    c->u.agg.aggs = aggs;
    return c;
}

static df_lnode *prune_join(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    df_lnode *l = n->inputs[0], *r = n->inputs[1];
    int32_t nl = l->ncols, nr = r->ncols, width = nl + nr;
    df_join_type t = n->u.join.type;
    bool mark = t == DF_JOIN_LEFT_MARK; /* output: left columns ++ the mark (always kept) */
    bool only_left = t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_LEFT_ANTI || mark;
    bool only_right = t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI;
    bool *all = bools(o, width);
    int32_t *lmap = ints(o, nl), *rmap = ints(o, nr), *jmap = ints(o, width);
    if (!all || !lmap || !rmap || !jmap) return NULL;
    for (int32_t i = 0; i < n->ncols; i++) {
        if (!req[i] || (mark && i == nl)) continue;
        all[only_right ? nl + i : i] = true;
    }
    for (int32_t k = 0; k < n->u.join.nkeys; k++) {
        df__expr_columns(n->u.join.lkeys[k], all, nl);
        bool *rpart = all + nl;
        df__expr_columns(n->u.join.rkeys[k], rpart, nr);
    }
    if (n->u.join.filter) df__expr_columns(n->u.join.filter, all, width);
    df_lnode *nl2 = prune(o, l, all, lmap);
    df_lnode *nr2 = nl2 ? prune(o, r, all + nl, rmap) : NULL;
    if (!nr2) return NULL;
    for (int32_t i = 0; i < nl; i++) jmap[i] = lmap[i];
    for (int32_t i = 0; i < nr; i++) jmap[nl + i] = rmap[i] < 0 ? -1 : nl2->ncols + rmap[i];
    int32_t ncols = only_left ? nl2->ncols + mark : only_right ? nr2->ncols : nl2->ncols + nr2->ncols;
    df_lnode *ins[2] = {nl2, nr2};
    df_lnode *c = df__lnode_new(o->p, DF_LN_JOIN, 2, ins, ncols, o->err);
    if (!c) return NULL;
    c->u = n->u;
    int32_t nk = n->u.join.nkeys;
    c->u.join.lkeys = df__lplan_alloc(o->p, (size_t)(nk ? nk : 1) * sizeof(df_expr *));
    c->u.join.rkeys = df__lplan_alloc(o->p, (size_t)(nk ? nk : 1) * sizeof(df_expr *));
    if (!c->u.join.lkeys || !c->u.join.rkeys) return oom(o);
    for (int32_t k = 0; k < nk; k++) {
        c->u.join.lkeys[k] = remap(o, n->u.join.lkeys[k], lmap, nl);
        c->u.join.rkeys[k] = c->u.join.lkeys[k] ? remap(o, n->u.join.rkeys[k], rmap, nr) : NULL;
        if (!c->u.join.rkeys[k]) return NULL;
    }
    if (n->u.join.filter && !(c->u.join.filter = remap(o, n->u.join.filter, jmap, width))) return NULL;
    /* Output columns and the map from old output positions. */
    for (int32_t i = 0; i < n->ncols; i++) {
        if (mark && i == nl) {
            map[i] = nl2->ncols;
            c->cols[nl2->ncols] = n->cols[i];
            continue;
        }
        int32_t src = only_right ? nl + i : i;
        int32_t dst = jmap[src];
        if (dst >= 0 && only_right) dst -= nl2->ncols;
        map[i] = dst;
        if (dst >= 0) c->cols[dst] = n->cols[i];
    }
    /* Columns kept for keys/filters only still need entries. */
    for (int32_t i = 0; i < c->ncols; i++) {
        if (c->cols[i].name) continue;
        bool left = only_left || (!only_right && i < nl2->ncols);
        const df_lnode *side = left ? nl2 : nr2;
        int32_t j = left ? i : (only_right ? i : i - nl2->ncols);
        c->cols[i] = side->cols[j];
        bool outer_null = (left && (t == DF_JOIN_RIGHT || t == DF_JOIN_FULL)) ||
                          (!left && (t == DF_JOIN_LEFT || t == DF_JOIN_FULL));
        if (outer_null) c->cols[i].nullable = true;
    }
    return c;
}

static df_lnode *prune_union(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    int32_t keep = 0;
    for (int32_t i = 0; i < n->ncols; i++) keep += req[i];
    df_lnode *c = df__lnode_new(o->p, DF_LN_UNION, n->ninputs, n->inputs, keep, o->err);
    if (!c) return NULL;
    int32_t k = 0;
    for (int32_t i = 0; i < n->ncols; i++) {
        map[i] = req[i] ? k : -1;
        if (req[i]) c->cols[k++] = n->cols[i];
    }
    for (int32_t in = 0; in < n->ninputs; in++) {
        df_lnode *child = n->inputs[in];
        int32_t *cmap = ints(o, child->ncols);
        if (!cmap) return NULL;
        df_lnode *pc = prune(o, child, req, cmap);
        if (!pc) return NULL;
        bool exact = pc->ncols == keep;
        for (int32_t i = 0; i < n->ncols && exact; i++)
            if (req[i] && cmap[i] != map[i]) exact = false;
        if (!exact) {
            df_lnode *p = df__lnode_new(o->p, DF_LN_PROJECT, 1, &pc, keep, o->err);
            df_expr **es = df__lplan_alloc(o->p, (size_t)(keep ? keep : 1) * sizeof *es);
            if (!p || !es) return p ? oom(o) : NULL;
            for (int32_t i = 0; i < n->ncols; i++) {
                if (!req[i]) continue;
                es[map[i]] = df__expr_column(o->p, cmap[i], &pc->cols[cmap[i]], o->err);
                if (!es[map[i]]) return NULL;
                p->cols[map[i]] = pc->cols[cmap[i]];
            }
            p->u.project.exprs = es;
            pc = p;
        }
        c->inputs[in] = pc;
    }
    return c;
}

static df_lnode *prune_values(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    int32_t keep = 0;
    for (int32_t i = 0; i < n->ncols; i++) keep += req[i];
    if (keep == n->ncols) {
        for (int32_t i = 0; i < n->ncols; i++) map[i] = i;
        return n;
    }
    df_lnode *c = df__lnode_new(o->p, DF_LN_VALUES, 0, NULL, keep, o->err);
    df_expr ***rows = df__lplan_alloc(o->p, (size_t)n->u.values.nrows * sizeof *rows);
    if (!c || !rows) return c ? oom(o) : NULL;
    for (int32_t r = 0; r < n->u.values.nrows; r++) {
        rows[r] = df__lplan_alloc(o->p, (size_t)(keep ? keep : 1) * sizeof(df_expr *));
        if (!rows[r]) return oom(o);
    }
    int32_t k = 0;
    for (int32_t i = 0; i < n->ncols; i++) {
        map[i] = req[i] ? k : -1;
        if (!req[i]) continue;
        c->cols[k] = n->cols[i];
        for (int32_t r = 0; r < n->u.values.nrows; r++) rows[r][k] = n->u.values.rows[r][i];
        k++;
    }
    c->u.values.nrows = n->u.values.nrows;
    c->u.values.rows = rows;
    return c;
}

/* Remaps every expression of a window function over a pruned input. */
static bool remap_window(opt *o, df_window *w, const int32_t *map, int32_t n) {
    df_expr **args = df__lplan_alloc(o->p, (size_t)(w->nargs + 1) * sizeof(df_expr *));
    df_expr **part = df__lplan_alloc(o->p, (size_t)(w->npart + 1) * sizeof(df_expr *));
    df_sort_key *order = df__lplan_alloc(o->p, (size_t)(w->norder + 1) * sizeof(df_sort_key));
    if (!args || !part || !order) return oom(o) != NULL;
    for (int32_t i = 0; i < w->nargs; i++)
        if (!(args[i] = remap(o, w->args[i], map, n))) return false;
    for (int32_t i = 0; i < w->npart; i++)
        if (!(part[i] = remap(o, w->part[i], map, n))) return false;
    for (int32_t i = 0; i < w->norder; i++) {
        order[i] = w->order[i];
        if (!(order[i].expr = remap(o, w->order[i].expr, map, n))) return false;
    }
    w->args = args;
    w->part = part;
    w->order = order;
    return true;
}

/* Window: the input keeps the required columns and those the functions read; every function stays. */
static df_lnode *prune_window(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    df_lnode *in = n->inputs[0];
    int32_t ni = in->ncols, nw = n->u.window.nwin;
    bool *creq = bools(o, ni);
    int32_t *cmap = ints(o, ni);
    df_window *wins = df__lplan_alloc(o->p, (size_t)nw * sizeof *wins);
    if (!creq || !cmap || !wins) return NULL;
    df__memcpy(creq, req, (size_t)ni);
    for (int32_t k = 0; k < nw; k++) {
        const df_window *w = &n->u.window.wins[k];
        for (int32_t i = 0; i < w->nargs; i++) df__expr_columns(w->args[i], creq, ni);
        for (int32_t i = 0; i < w->npart; i++) df__expr_columns(w->part[i], creq, ni);
        for (int32_t i = 0; i < w->norder; i++) df__expr_columns(w->order[i].expr, creq, ni);
    }
    df_lnode *nin = prune(o, in, creq, cmap);
    if (!nin) return NULL;
    df_lnode *c = df__lnode_new(o->p, DF_LN_WINDOW, 1, &nin, nin->ncols + nw, o->err);
    if (!c) return NULL;
    df__memcpy(c->cols, nin->cols, (size_t)nin->ncols * sizeof(df_lcol));
    for (int32_t i = 0; i < ni; i++) {
        map[i] = cmap[i];
        if (cmap[i] >= 0) c->cols[cmap[i]] = n->cols[i];
    }
    for (int32_t k = 0; k < nw; k++) {
        wins[k] = n->u.window.wins[k];
        if (!remap_window(o, &wins[k], cmap, ni)) return NULL;
        c->cols[nin->ncols + k] = n->cols[ni + k];
        map[ni + k] = nin->ncols + k;
    }
    c->u.window.nwin = nw;
    c->u.window.wins = wins;
    return c;
}

/* Returns n rewritten to provide at least the req columns; map[old] = new index or -1. */
static df_lnode *prune(opt *o, df_lnode *n, const bool *req, int32_t *map) {
    switch (n->kind) {
    case DF_LN_WINDOW: return prune_window(o, n, req, map);
    case DF_LN_SCAN: return prune_scan(o, n, req, map);
    case DF_LN_PROJECT: return prune_project(o, n, req, map);
    case DF_LN_AGGREGATE: return prune_aggregate(o, n, req, map);
    case DF_LN_JOIN: return prune_join(o, n, req, map);
    case DF_LN_UNION: return prune_union(o, n, req, map);
    case DF_LN_VALUES: return prune_values(o, n, req, map);
    case DF_LN_EMPTY:
    case DF_LN_WORKTABLE:
        for (int32_t i = 0; i < n->ncols; i++) map[i] = i;
        return n;
    case DF_LN_RECURSIVE: {
        /* Every column feeds the next iteration (and UNION's distinctness): the inputs keep theirs. */
        df_lnode *c = NULL;
        for (int32_t k = 0; k < n->ninputs; k++) {
            df_lnode *in = n->inputs[k];
            bool *creq = bools(o, in->ncols);
            int32_t *cmap = ints(o, in->ncols);
            if (!creq || !cmap) return NULL;
            for (int32_t i = 0; i < in->ncols; i++) creq[i] = true;
            df_lnode *nin = prune(o, in, creq, cmap);
            if (!nin) return NULL;
            if (nin != in) {
                if (!c && !(c = clone_lnode(o, n))) return NULL;
                c->inputs[k] = nin;
            }
        }
        for (int32_t i = 0; i < n->ncols; i++) map[i] = i;
        return c ? c : n;
    }
    case DF_LN_FILTER:
    case DF_LN_SORT:
    case DF_LN_LIMIT: {
        df_lnode *in = n->inputs[0];
        bool *creq = bools(o, in->ncols);
        if (!creq) return NULL;
        df__memcpy(creq, req, (size_t)in->ncols);
        if (n->kind == DF_LN_FILTER) df__expr_columns(n->u.filter.pred, creq, in->ncols);
        if (n->kind == DF_LN_SORT)
            for (int32_t k = 0; k < n->u.sort.nkeys; k++) df__expr_columns(n->u.sort.keys[k].expr, creq, in->ncols);
        df_lnode *nin = prune(o, in, creq, map);
        if (!nin) return NULL;
        df_lnode *c = df__lnode_new(o->p, n->kind, 1, &nin, nin->ncols, o->err);
        if (!c) return NULL;
        c->u = n->u;
        df__memcpy(c->cols, nin->cols, (size_t)nin->ncols * sizeof(df_lcol));
        /* Keep the parent's view of names (inputs may be renamed projections). */
        for (int32_t i = 0; i < n->ncols; i++)
            if (map[i] >= 0) c->cols[map[i]] = n->cols[i];
        if (n->kind == DF_LN_FILTER) {
            c->u.filter.pred = remap(o, n->u.filter.pred, map, in->ncols);
            if (!c->u.filter.pred) return NULL;
        }
        if (n->kind == DF_LN_SORT) {
            df_sort_key *keys = df__lplan_alloc(o->p, (size_t)n->u.sort.nkeys * sizeof *keys);
            if (!keys) return oom(o);
            for (int32_t k = 0; k < n->u.sort.nkeys; k++) {
                keys[k] = n->u.sort.keys[k];
                keys[k].expr = remap(o, keys[k].expr, map, in->ncols);
                if (!keys[k].expr) return NULL;
            }
            c->u.sort.keys = keys;
        }
        return c;
    }
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* 5. Projection merging                                                     */

static bool is_identity(const df_lnode *p) {
    const df_lnode *in = p->inputs[0];
    if (p->ncols != in->ncols) return false;
    for (int32_t i = 0; i < p->ncols; i++) {
        const df_expr *e = p->u.project.exprs[i];
        if (e->kind != DF_EX_COLUMN || e->column != i) return false;
    }
    return true;
}

static bool cheap(const df_expr *e) {
    return e->kind == DF_EX_COLUMN || e->kind == DF_EX_LITERAL;
}

static int32_t count_uses(const df_expr *e, int32_t col) {
    if (e->kind == DF_EX_COLUMN) return e->column == col;
    int32_t n = 0;
    for (int32_t i = 0; i < e->nargs; i++) n += count_uses(e->args[i], col);
    return n;
}

static df_lnode *merge(opt *o, df_lnode *n, bool root) {
    df_lnode *c = NULL;
    for (int32_t i = 0; i < n->ninputs; i++) {
        df_lnode *in = merge(o, n->inputs[i], false);
        if (!in) return NULL;
        if (in != n->inputs[i]) {
            if (!c && !(c = clone_lnode(o, n))) return NULL;
            c->inputs[i] = in;
        }
    }
    if (c) n = c;
    if (n->kind != DF_LN_PROJECT) return n;
    if (!root && is_identity(n)) return n->inputs[0];
    df_lnode *in = n->inputs[0];
    if (in->kind != DF_LN_PROJECT) return n;
    /* Inline the inner projection when no non-trivial expression would be computed twice. */
    for (int32_t j = 0; j < in->ncols; j++) {
        if (cheap(in->u.project.exprs[j]) || df__expr_volatile(in->u.project.exprs[j])) {
            if (df__expr_volatile(in->u.project.exprs[j])) return n;
            continue;
        }
        int32_t uses = 0;
        for (int32_t i = 0; i < n->ncols; i++) uses += count_uses(n->u.project.exprs[i], j);
        if (uses > 1) return n;
    }
    df_lnode *m = df__lnode_new(o->p, DF_LN_PROJECT, 1, &in->inputs[0], n->ncols, o->err);
    df_expr **es = df__lplan_alloc(o->p, (size_t)(n->ncols ? n->ncols : 1) * sizeof *es);
    if (!m || !es) return m ? oom(o) : NULL;
    for (int32_t i = 0; i < n->ncols; i++) {
        es[i] = df__expr_substitute(o->p, n->u.project.exprs[i], in->u.project.exprs, in->ncols, o->err);
        if (!es[i]) return NULL;
    }
    df__memcpy(m->cols, n->cols, (size_t)n->ncols * sizeof(df_lcol));
    m->u.project.exprs = es;
    if (!root && is_identity(m)) return m->inputs[0];
    return m;
}

/* ------------------------------------------------------------------------ */

df_errkind df__sql_optimize(df_lplan *p, df_const_eval_fn eval, df_error *err) {
    opt o = {.p = p, .eval = eval, .err = err};
    df_lnode *n = p->root;
    n = fold(&o, n);
    if (n) n = push_none(&o, n);
    if (n) n = fold(&o, n);
    if (n) n = limit_down(&o, n, -1);
    if (n) {
        bool *req = bools(&o, n->ncols);
        int32_t *map = ints(&o, n->ncols);
        if (req && map) {
            for (int32_t i = 0; i < n->ncols; i++) req[i] = true;
            n = prune(&o, n, req, map);
        } else {
            n = NULL;
        }
    }
    if (n) n = merge(&o, n, true);
    if (!n) return err && err->kind ? err->kind : DF_ERR_INTERNAL;
    /* The root must keep the bound output names and types. */
    if (n->ncols != p->root->ncols)
        return df_error_set(err, DF_ERR_INTERNAL, "optimizer changed the output width");
    if (n->cols != p->root->cols) {
        df_lnode *c = clone_lnode(&o, n);
        if (!c) return err->kind;
        df__memcpy(c->cols, p->root->cols, (size_t)n->ncols * sizeof(df_lcol));
        n = c;
    }
    p->optimized = n;
    return DF_OK;
}
