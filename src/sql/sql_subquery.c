/*
 * Subqueries in expressions, bound as joins (decorrelation).
 *
 * WHERE conjuncts (NOT over an OR holding subqueries is first distributed,
 * as DataFusion's simplifier does: NOT (x IN (q) OR c) is x NOT IN (q) AND NOT c):
 *   EXISTS (q)            -> LEFT SEMI join with q
 *   NOT EXISTS (q)        -> LEFT ANTI join
 *   x IN (q)              -> LEFT SEMI join on x = q's column
 *   x NOT IN (q)          -> null-aware LEFT ANTI join (correlated: anti join on
 *                            x = v OR x IS NULL OR v IS NULL, plus the correlation)
 * Anywhere else (SELECT, HAVING, ORDER BY, under OR / NOT / CASE):
 *   (q)                   -> LEFT join with q, whose value becomes a hidden column; an
 *                            uncorrelated q must return at most one row (checked when run)
 *   EXISTS (q), x IN (q)  -> LEFT MARK join: a hidden Boolean column, true when the
 *                            row has a match; for IN NULL when a NULL leaves it unknown
 *                            (SQL's three values, where DataFusion's marks say false)
 *
 * Correlation.  q's FROM is bound first; then each conjunct of q's WHERE
 * is classified by the columns it names: inner (q's FROM), outer (the
 * enclosing query) or both.  Conjuncts naming outer columns become the join
 * condition, bound over outer ++ inner columns with inner names shadowing
 * outer ones; the rest stay inside q (bound with the normal WHERE path, so
 * subqueries nest).  A correlated scalar subquery must correlate through
 * equalities `inner = outer`; with an aggregate it is rewritten to `SELECT
 * inner keys, value FROM .. WHERE rest GROUP BY inner keys` and left-joined
 * on the keys, outer rows without a group taking the value over no rows
 * (count() = 0); without one each outer row may match at most one row.
 *
 * In aggregating queries, subqueries in GROUP BY keys and aggregate
 * arguments are joined below the aggregation, the others above it.
 *
 * Not supported (clear errors): correlation inside q's SELECT list or in
 * derived tables of q, correlated subqueries with GROUP BY / DISTINCT /
 * HAVING / LIMIT / set operations, correlated EXISTS over aggregates.
 */
#include <stdio.h>

#include "sql/sql_binder.h"
#include "sql/sql_lexer.h"

static df_errkind berr(binder *b) { return b->err && b->err->kind ? b->err->kind : DF_ERR_INTERNAL; }

/* ------------------------------------------------------------------------ */
/* AST helpers                                                               */

bool df__ast_has_subquery(const ast_expr *e) {
    if (!e) return false;
    if (e->kind == AE_SUBQUERY || e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY || e->kind == AE_QUANTIFIED)
        return true;
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++)
        if (df__ast_has_subquery(ops[k])) return true;
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list && df__ast_has_subquery(e->list[i])) return true;
        if (e->list2 && df__ast_has_subquery(e->list2[i])) return true;
    }
    return false;
}

/* True when the name resolves in scope s (same matching rules as bind_column). */
static bool scope_resolves(const bscope *s, const ast_name *n) {
    const char *col = n->parts[n->n - 1];
    const char *qual = n->n >= 2 ? n->parts[n->n - 2] : NULL;
    for (int32_t i = 0; i < s->ncols; i++) {
        if (strcmp(s->cols[i].name, col) != 0) continue;
        if (qual) {
            const char *q = s->cols[i].qualifier;
            if (q && (strcmp(q, qual) == 0 || df_ascii_casecmp(q, qual) == 0)) return true;
        } else if (!(s->hidden && s->hidden[i])) {
            return true;
        }
    }
    return false;
}

enum { SIDE_INNER = 1, SIDE_OUTER = 2 };

/* Which scopes the columns of e come from (SIDE_* bits); names found in neither count as inner. */
static int sides(const ast_expr *e, const bscope *inner, const bscope *outer) {
    if (!e) return 0;
    if (e->kind == AE_COLUMN) {
        if (scope_resolves(inner, &e->name)) return SIDE_INNER;
        return outer && scope_resolves(outer, &e->name) ? SIDE_OUTER : SIDE_INNER;
    }
    int r = 0;
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++) r |= sides(ops[k], inner, outer);
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list) r |= sides(e->list[i], inner, outer);
        if (e->list2) r |= sides(e->list2[i], inner, outer);
    }
    return r;
}

/* Top-level conjuncts of a WHERE clause. */
static void conjuncts(const ast_expr *w, ast_expr *const **list, int32_t *n, ast_expr **one) {
    if (w->kind == AE_AND) {
        *list = w->list;
        *n = w->nlist;
    } else {
        *one = (ast_expr *)w;
        *list = one;
        *n = 1;
    }
}

/* An AND of the given conjuncts as a new AST node (NULL for none). */
static ast_expr *ast_and(binder *b, ast_expr **items, int32_t n) {
    if (n == 0) return NULL;
    if (n == 1) return items[0];
    ast_expr *e = df__lplan_alloc(b->plan, sizeof *e);
    ast_expr **l = df__lplan_alloc(b->plan, (size_t)n * sizeof *l);
    if (!e || !l) return df__bind_oom(b);
    memset(e, 0, sizeof *e);
    e->kind = AE_AND;
    e->pos = items[0]->pos;
    df__memcpy(l, items, (size_t)n * sizeof *l);
    e->list = l;
    e->nlist = n;
    for (int32_t i = 0; i < n; i++) e->height = DF_MAX(e->height, items[i]->height + 1);
    return e;
}

/* ------------------------------------------------------------------------ */
/* Plans                                                                     */

static df_lnode *filter_node(binder *b, df_lnode *in, df_expr *pred) {
    df_lnode *f = df__lnode_new(b->plan, DF_LN_FILTER, 1, &in, in->ncols, b->err);
    if (!f) return NULL;
    df__memcpy(f->cols, in->cols, (size_t)in->ncols * sizeof(df_lcol));
    f->u.filter.pred = pred;
    return f;
}

/* Binds a list of conjunct ASTs (possibly with subqueries) as the WHERE of *node. */
static df_errkind apply_conjuncts(binder *b, ast_expr **items, int32_t n, df_lnode **node, bool **hidden) {
    ast_expr *w = ast_and(b, items, n);
    if (n && !w) return berr(b);
    return w ? df__bind_where(b, w, node, hidden) : DF_OK;
}

/* Hidden flags for a plan that appends `extra` hidden columns to one with flags h over n columns. */
static bool *extend_hidden(binder *b, const bool *h, int32_t n, int32_t extra) {
    bool *nh = df__lplan_alloc(b->plan, (size_t)(n + extra) + 1);
    if (!nh) return df__bind_oom(b);
    for (int32_t i = 0; i < n; i++) nh[i] = h && h[i];
    for (int32_t i = 0; i < extra; i++) nh[n + i] = true;
    return nh;
}

/* The scope of outer ++ inner columns with inner names preferred. */
static df_errkind combined_scope(binder *b, const df_lnode *outer, const bool *oh, const df_lnode *inner,
                                 const bool *ih, bscope *out) {
    int32_t no = outer->ncols, ni = inner->ncols;
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(no + ni) * sizeof(df_lcol) + 1);
    bool *hid = df__lplan_alloc(b->plan, (size_t)(no + ni) + 1);
    if (!cols || !hid) return DF_OOM(b->err);
    df__memcpy(cols, outer->cols, (size_t)no * sizeof(df_lcol));
    df__memcpy(cols + no, inner->cols, (size_t)ni * sizeof(df_lcol));
    for (int32_t i = 0; i < no; i++) hid[i] = oh && oh[i];
    for (int32_t i = 0; i < ni; i++) hid[no + i] = ih && ih[i];
    *out = (bscope){.ncols = no + ni, .cols = cols, .hidden = hid, .prefer_from = no};
    return DF_OK;
}

/* a = b with both sides coerced to their comparison type. */
static df_expr *equality(binder *b, df_expr *x, df_expr *y, int32_t pos) {
    df_type *ct = df__bind_keep(b, df__sqlt_comparison(x->type, y->type));
    if (!ct) {
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "the subquery's values cannot be compared with the left side");
        return NULL;
    }
    df_expr *args[2] = {df__bind_coerce(b, x, ct, pos), df__bind_coerce(b, y, ct, pos)};
    if (!args[0] || !args[1]) return NULL;
    return df__expr_func(b->plan, DF_FN_EQ, df_type_bool(), true, 2, args, b->err);
}

/*
 * Joins *node (outer) with inner using type t and the condition made of
 * the correlated conjunct ASTs `corr` (bound over outer ++ inner) and the
 * already bound `extra` conjuncts (over outer ++ inner too).
 */
static df_errkind join_with(binder *b, df_join_type t, df_lnode **node, bool **hidden, df_lnode *inner,
                            const bool *inner_hidden, ast_expr **corr, int32_t ncorr, df_expr **extra,
                            int32_t nextra, bool null_aware, bool single_row, const char *mark_name) {
    bscope cs;
    DF_TRY(combined_scope(b, *node, *hidden, inner, inner_hidden, &cs));
    int32_t n = ncorr + nextra;
    df_expr **conds = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(df_expr *));
    if (!conds) return DF_OOM(b->err);
    bctx ctx = {.scope = &cs, .clause = "subquery condition"};
    for (int32_t i = 0; i < ncorr; i++) {
        conds[i] = df__bind_condition(b, corr[i], &ctx);
        if (!conds[i]) return berr(b);
    }
    for (int32_t i = 0; i < nextra; i++) conds[ncorr + i] = extra[i];
    df_lnode *j = df__bind_join_node(b, t, *node, inner);
    if (!j) return berr(b);
    j->u.join.null_aware = null_aware;
    j->u.join.single_row = single_row;
    if (n) {
        df_expr *cond = n == 1 ? conds[0] : df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, n, conds, b->err);
        if (!cond) return berr(b);
        DF_TRY(df__bind_join_condition(b, cond, (*node)->ncols, inner->ncols, j));
    }
    if (t == DF_JOIN_LEFT || t == DF_JOIN_INNER || t == DF_JOIN_LEFT_MARK) {
        *hidden = extend_hidden(b, *hidden, (*node)->ncols, t == DF_JOIN_LEFT_MARK ? 1 : inner->ncols);
        if (!*hidden) return berr(b);
    }
    if (t == DF_JOIN_LEFT_MARK) j->cols[j->ncols - 1].name = mark_name;
    *node = j;
    return DF_OK;
}

/*
 * q's SELECT when q is a plain SELECT (no set operation, CTEs, ORDER BY,
 * LIMIT / OFFSET), else NULL.  `allow_limit` accepts LIMIT n with n >= 1
 * (EXISTS does not care how many rows there are).
 */
static const ast_select *plain_select(const ast_query *q, bool allow_limit) {
    if (q->nctes || q->body->kind != AS_SELECT || q->offset) return NULL;
    if (q->limit && !(allow_limit && q->limit->kind == AE_INTEGER && strcmp(q->limit->text, "0") != 0)) return NULL;
    return q->body->select;
}

/* Splits q's WHERE into correlated and inner conjuncts; binds FROM + inner conjuncts into *inner. */
typedef struct corr_split {
    df_lnode *inner;            /* FROM filtered by the inner conjuncts */
    bool *inner_hidden;         /* its hidden flags */
    ast_expr **corr;            /* conjuncts naming outer columns */
    int32_t ncorr;
    ast_expr **rest;            /* the other conjuncts */
    int32_t nrest;
} corr_split;

static df_errkind split_correlated(binder *b, const ast_select *s, const bscope *outer, bool bind_rest,
                                   corr_split *out) {
    memset(out, 0, sizeof *out);
    DF_TRY(df__bind_from_items(b, s, &out->inner, &out->inner_hidden));
    if (!s->where) return DF_OK;
    bscope is = {.ncols = out->inner->ncols, .cols = out->inner->cols, .hidden = out->inner_hidden};
    ast_expr *const *list;
    ast_expr *one;
    int32_t n;
    conjuncts(s->where, &list, &n, &one);
    out->corr = df__lplan_alloc(b->plan, (size_t)n * sizeof(ast_expr *));
    out->rest = df__lplan_alloc(b->plan, (size_t)n * sizeof(ast_expr *));
    if (!out->corr || !out->rest) return DF_OOM(b->err);
    for (int32_t i = 0; i < n; i++) {
        if (sides(list[i], &is, outer) & SIDE_OUTER) out->corr[out->ncorr++] = list[i];
        else out->rest[out->nrest++] = list[i];
    }
    if (bind_rest) return apply_conjuncts(b, out->rest, out->nrest, &out->inner, &out->inner_hidden);
    return DF_OK;
}

static bool select_aggregates(const ast_select *s) {
    if (s->ngroup || s->group_all || s->having) return true;
    for (int32_t i = 0; i < s->nitems; i++)
        if (df__ast_has_aggregate(s->items[i].expr)) return true;
    return false;
}

/* Binds a whole (uncorrelated) query; q's columns must number `want` (0 = any). */
static df_lnode *bind_whole(binder *b, const ast_query *q, int32_t want, int32_t pos) {
    bcte *save = b->ctes;
    df_lnode *n = df__bind_query(b, q);
    b->ctes = save;
    if (n && want && n->ncols != want) {
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "the subquery returns %d columns where 1 is expected", n->ncols);
        return NULL;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* EXISTS and IN                                                             */

/*
 * [NOT] EXISTS (q) onto *node: a semi / anti join, or with mark_name a
 * LEFT MARK join whose Boolean column mark_name tells whether rows exist.
 */
static df_errkind exists_join(binder *b, const ast_expr *e, bool negated, const char *mark_name, df_lnode **node,
                              bool **hidden) {
    df_join_type t = mark_name ? DF_JOIN_LEFT_MARK : negated ? DF_JOIN_LEFT_ANTI : DF_JOIN_LEFT_SEMI;
    const ast_query *q = e->query;
    if (q->limit && q->limit->kind == AE_INTEGER && strcmp(q->limit->text, "0") == 0 && !q->offset && !mark_name) {
        /* LIMIT 0: no rows, so EXISTS is false and NOT EXISTS true. */
        if (negated) return DF_OK;
        df_scalar f = {.type = df_type_bool(), .v.b = false};
        df_expr *pred = df__expr_literal(b->plan, &f, b->err);
        df_lnode *fl = pred ? filter_node(b, *node, pred) : NULL;
        if (!fl) return berr(b);
        *node = fl;
        return DF_OK;
    }
    const ast_select *s = plain_select(q, true);
    bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    if (s) {
        corr_split cs;
        DF_TRY(split_correlated(b, s, &outer, true, &cs));
        /* Without aggregation the SELECT list, DISTINCT and LIMIT n > 0 cannot change whether rows exist. */
        if (!select_aggregates(s))
            return join_with(b, t, node, hidden, cs.inner, cs.inner_hidden, cs.corr, cs.ncorr, NULL, 0, false, false,
                             mark_name);
        if (cs.ncorr > 0)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos,
                              "correlated EXISTS subqueries with aggregates are not supported");
    }
    df_lnode *inner = bind_whole(b, q, 0, e->pos);
    if (!inner) return berr(b);
    return join_with(b, t, node, hidden, inner, NULL, NULL, 0, NULL, 0, false, false, mark_name);
}

/* x IS NULL */
static df_expr *is_null(binder *b, df_expr *x) {
    return df__expr_func(b->plan, DF_FN_IS_NULL, df_type_bool(), false, 1, &x, b->err);
}

/*
 * Correlated x [NOT] IN (q) onto *node, when q is a plain one-column SELECT
 * whose WHERE names outer columns (*done tells; otherwise nothing is joined).
 * The inner side is q's FROM and inner conjuncts with q's value appended; the
 * condition is the correlation AND, by `cond`:
 *   IN_MATCH    x = v (a semi join, or the mark of a match)
 *   IN_ANTI     x = v OR x IS NULL OR v IS NULL (the anti join of NOT IN:
 *               exactly NOT IN's three-valued meaning per outer row)
 *   IN_UNKNOWN  x IS NULL OR v IS NULL (the mark of a row whose IN is NULL
 *               unless it matched)
 */
typedef enum in_cond { IN_MATCH, IN_ANTI, IN_UNKNOWN } in_cond;

static df_errkind corr_in_join(binder *b, const ast_expr *e, const ast_select *s, in_cond cond,
                               const char *mark_name, df_lnode **node, bool **hidden, bool *done) {
    *done = false;
    bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    corr_split cs;
    DF_TRY(split_correlated(b, s, &outer, true, &cs));
    if (cs.ncorr == 0) return DF_OK;
    bctx octx = {.scope = &outer, .clause = "IN"};
    df_expr *x = df__bind_expr(b, e->a, &octx);
    if (!x) return berr(b);
    bscope is = {.ncols = cs.inner->ncols, .cols = cs.inner->cols, .hidden = cs.inner_hidden};
    bctx ictx = {.scope = &is, .clause = "subquery SELECT"};
    df_expr *v = df__bind_expr(b, s->items[0].expr, &ictx);
    if (!v) return berr(b);
    int32_t ni = cs.inner->ncols;
    df_expr **ex = df__lplan_alloc(b->plan, (size_t)(ni + 1) * sizeof(df_expr *));
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(ni + 1) * sizeof(df_lcol));
    if (!ex || !cols) return DF_OOM(b->err);
    for (int32_t i = 0; i < ni; i++) {
        ex[i] = df__expr_column(b->plan, i, &cs.inner->cols[i], b->err);
        if (!ex[i]) return berr(b);
        cols[i] = cs.inner->cols[i];
    }
    ex[ni] = v;
    cols[ni] = (df_lcol){.name = "__in_value", .type = v->type, .nullable = true};
    df_lnode *inner = df__bind_project_node(b, cs.inner, ex, cols, ni + 1);
    bool *ih = extend_hidden(b, cs.inner_hidden, ni, 1);
    if (!inner || !ih) return berr(b);
    df_expr *vc = df__expr_column(b->plan, (*node)->ncols + ni, &cols[ni], b->err);
    df_expr *eq = vc ? equality(b, x, vc, e->pos) : NULL;
    if (!eq) return berr(b);
    if (cond != IN_MATCH) {
        df_expr *alts[3] = {eq, is_null(b, x), is_null(b, vc)};
        if (!alts[1] || !alts[2]) return berr(b);
        /* IN_UNKNOWN leaves out the equality (alts + 1). */
        eq = cond == IN_ANTI ? df__expr_new(b->plan, DF_EX_OR, df_type_bool(), true, 3, alts, b->err)
                             : df__expr_new(b->plan, DF_EX_OR, df_type_bool(), true, 2, alts + 1, b->err);
        if (!eq) return berr(b);
    }
    df_join_type t = mark_name ? DF_JOIN_LEFT_MARK : cond == IN_ANTI ? DF_JOIN_LEFT_ANTI : DF_JOIN_LEFT_SEMI;
    *done = true;
    return join_with(b, t, node, hidden, inner, ih, cs.corr, cs.ncorr, &eq, 1, false, false, mark_name);
}

/*
 * x [NOT] IN (q) onto *node: a semi join, a null-aware anti join, or with
 * mark_name a LEFT MARK join (e->negated is applied when the mark is read).
 * Marks are three-valued as IN is: true when matched, NULL when not matched
 * but a NULL on either side leaves the answer unknown, false otherwise.  An
 * uncorrelated mark is a null-aware mark join; a correlated one, whose
 * unknown is per outer row, is two marks: the match (mark_name) and
 * *unknown_name (set to NULL when not used), read as
 * CASE WHEN match THEN true WHEN unknown THEN NULL ELSE false END.
 */
static df_errkind in_join(binder *b, const ast_expr *e, const char *mark_name, const char **unknown_name,
                          df_lnode **node, bool **hidden) {
    bool negated = e->negated;
    const ast_select *s = plain_select(e->query, false);
    if (s && !select_aggregates(s) && !s->distinct && s->nitems == 1 && s->items[0].expr->kind != AE_STAR) {
        bool done;
        in_cond cond = negated && !mark_name ? IN_ANTI : IN_MATCH;
        DF_TRY(corr_in_join(b, e, s, cond, mark_name, node, hidden, &done));
        if (done) {
            if (mark_name) DF_TRY(corr_in_join(b, e, s, IN_UNKNOWN, *unknown_name, node, hidden, &done));
            return DF_OK;
        }
    }
    if (unknown_name) *unknown_name = NULL;
    df_join_type t = mark_name ? DF_JOIN_LEFT_MARK : negated ? DF_JOIN_LEFT_ANTI : DF_JOIN_LEFT_SEMI;
    bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    bctx octx = {.scope = &outer, .clause = "IN"};
    df_expr *x = df__bind_expr(b, e->a, &octx);
    if (!x) return berr(b);
    df_lnode *inner = bind_whole(b, e->query, 1, e->pos);
    if (!inner) return berr(b);
    df_expr *vc = df__expr_column(b->plan, (*node)->ncols, &inner->cols[0], b->err);
    df_expr *eq = vc ? equality(b, x, vc, e->pos) : NULL;
    if (!eq) return berr(b);
    return join_with(b, t, node, hidden, inner, NULL, NULL, 0, &eq, 1, negated || mark_name, false, mark_name);
}

/* ------------------------------------------------------------------------ */
/* Scalar subqueries                                                         */

static bsubq *find_subq(binder *b, const ast_expr *e) {
    for (bsubq *s = b->subqs; s; s = s->next)
        if (s->e == e) return s;
    return NULL;
}

/* Records e as joined column `col` (with its match marker and empty-input value when correlated). */
static df_errkind remember(binder *b, const ast_expr *e, const char *col, const char *mark, const char *dflt) {
    bsubq *s = df__lplan_alloc(b->plan, sizeof *s);
    if (!s) return DF_OOM(b->err);
    *s = (bsubq){.e = e, .col = col, .mark = mark, .dflt = dflt, .next = b->subqs};
    s->negate = ((e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY || e->kind == AE_IN_LIST) && e->negated) ||
                (e->kind == AE_QUANTIFIED && e->flag);
    b->subqs = s;
    return DF_OK;
}

/* A fresh hidden column name for a subquery value (suffix distinguishes its helper columns). */
static const char *subq_name(binder *b, int32_t id, const char *suffix) {
    char buf[48];
    snprintf(buf, sizeof buf, "__scalar_subquery_%d%s", id, suffix);
    return df__bind_strdup(b, buf);
}

/* A boolean literal AST. */
static ast_expr *ast_bool(binder *b, bool v, int32_t pos) {
    ast_expr *e = df__lplan_alloc(b->plan, sizeof *e);
    if (!e) return df__bind_oom(b);
    memset(e, 0, sizeof *e);
    e->kind = AE_BOOL;
    e->bval = v;
    e->pos = pos;
    e->height = 1;
    return e;
}

/* Renames the last `nn` columns of plan n to names[] (qualifiers cleared). */
static df_lnode *name_last(binder *b, df_lnode *n, const char *const *names, int32_t nn) {
    df_expr **ex = df__lplan_alloc(b->plan, (size_t)n->ncols * sizeof(df_expr *));
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)n->ncols * sizeof(df_lcol));
    if (!ex || !cols) return df__bind_oom(b);
    for (int32_t i = 0; i < n->ncols; i++) {
        ex[i] = df__expr_column(b->plan, i, &n->cols[i], b->err);
        if (!ex[i]) return NULL;
        cols[i] = n->cols[i];
    }
    for (int32_t i = 0; i < nn; i++) {
        df_lcol *c = &cols[n->ncols - nn + i];
        c->name = names[i];
        c->qualifier = NULL;
        c->nullable = true;
    }
    return df__bind_project_node(b, n, ex, cols, n->ncols);
}

/*
 * A correlated scalar subquery SELECT v FROM .. WHERE rest AND inner_k = outer_k ..:
 * left join with SELECT inner_k.., v, TRUE FROM .. WHERE rest [GROUP BY inner_k..]
 * (grouped when v aggregates; otherwise each outer row may match at most one
 * row, checked when run).  For an aggregate, outer rows without a matching
 * group take v's value over no rows (count() = 0, ...), computed by
 * SELECT v FROM .. WHERE FALSE and selected through the TRUE marker.
 */
static df_errkind scalar_correlated(binder *b, const ast_expr *e, const ast_select *s, corr_split *cs,
                                    df_lnode **node, bool **hidden, int32_t id) {
    bool agg = select_aggregates(s);
    if (s->ngroup || s->group_all || s->distinct || s->having)
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos,
                          "a correlated scalar subquery cannot use GROUP BY, HAVING or DISTINCT");
    bscope is = {.ncols = cs->inner->ncols, .cols = cs->inner->cols, .hidden = cs->inner_hidden};
    bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    int32_t m = cs->ncorr;
    ast_expr **ikeys = df__lplan_alloc(b->plan, (size_t)m * sizeof(ast_expr *));
    ast_expr **okeys = df__lplan_alloc(b->plan, (size_t)m * sizeof(ast_expr *));
    if (!ikeys || !okeys) return DF_OOM(b->err);
    for (int32_t i = 0; i < m; i++) {
        const ast_expr *c = cs->corr[i];
        int sa = c->kind == AE_BINOP && c->op == TK_EQ ? sides(c->a, &is, &outer) : 0;
        int sb = sa ? sides(c->b, &is, &outer) : 0;
        if (sa == SIDE_INNER && sb == SIDE_OUTER) {
            ikeys[i] = c->a;
            okeys[i] = c->b;
        } else if (sa == SIDE_OUTER && sb == SIDE_INNER) {
            ikeys[i] = c->b;
            okeys[i] = c->a;
        } else {
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, c->pos,
                              "a correlated scalar subquery must correlate through `inner = outer` equalities");
        }
    }
    const char *names[2] = {subq_name(b, id, ""), subq_name(b, id, "_matched")};
    const char *dname = agg ? subq_name(b, id, "_empty") : NULL;
    if (!names[0] || !names[1] || (agg && !dname)) return berr(b);
    /* SELECT ikeys.., value, TRUE FROM .. WHERE rest [GROUP BY ikeys..] */
    ast_select *g = df__lplan_alloc(b->plan, sizeof *g);
    ast_select_item *items = df__lplan_alloc(b->plan, (size_t)(m + 2) * sizeof *items);
    ast_expr *t = ast_bool(b, true, e->pos);
    if (!g || !items || !t) return DF_OOM(b->err);
    *g = *s;
    for (int32_t i = 0; i < m; i++) items[i] = (ast_select_item){.expr = ikeys[i]};
    items[m] = s->items[0];
    items[m + 1] = (ast_select_item){.expr = t};
    g->items = items;
    g->nitems = m + 2;
    g->where = ast_and(b, cs->rest, cs->nrest);
    if (cs->nrest && !g->where) return berr(b);
    g->group = agg ? ikeys : NULL;
    g->ngroup = agg ? m : 0;
    df_lnode *inner = df__bind_select_only(b, g);
    if (!inner) return berr(b);
    inner = name_last(b, inner, names, 2);
    if (!inner) return berr(b);
    /* LEFT JOIN ON outer_k = inner_k, each outer row matching at most one inner row. */
    df_expr **eqs = df__lplan_alloc(b->plan, (size_t)m * sizeof(df_expr *));
    if (!eqs) return DF_OOM(b->err);
    bctx octx = {.scope = &outer, .clause = "subquery condition"};
    for (int32_t i = 0; i < m; i++) {
        df_expr *o = df__bind_expr(b, okeys[i], &octx);
        df_expr *k = o ? df__expr_column(b->plan, (*node)->ncols + i, &inner->cols[i], b->err) : NULL;
        eqs[i] = k ? equality(b, o, k, cs->corr[i]->pos) : NULL;
        if (!eqs[i]) return berr(b);
    }
    DF_TRY(join_with(b, DF_JOIN_LEFT, node, hidden, inner, NULL, NULL, 0, eqs, m, false, true, NULL));
    if (agg) {
        /* The value over no rows: SELECT v FROM .. WHERE FALSE (one row, aggregated). */
        ast_select *z = df__lplan_alloc(b->plan, sizeof *z);
        ast_expr *f = ast_bool(b, false, e->pos);
        if (!z || !f) return DF_OOM(b->err);
        *z = *s;
        z->where = f;
        df_lnode *empty = df__bind_select_only(b, z);
        if (!empty) return berr(b);
        empty = name_last(b, empty, &dname, 1);
        if (!empty) return berr(b);
        DF_TRY(join_with(b, DF_JOIN_LEFT, node, hidden, empty, NULL, NULL, 0, NULL, 0, false, true, NULL));
    }
    return remember(b, e, names[0], names[1], dname);
}

/* Joins one scalar subquery e onto *node. */
static df_errkind scalar_join(binder *b, const ast_expr *e, df_lnode **node, bool **hidden) {
    int32_t id = ++b->nsubq;
    const ast_select *s = plain_select(e->query, false);
    if (s && s->nitems == 1 && s->items[0].expr->kind != AE_STAR) {
        bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
        corr_split cs;
        DF_TRY(split_correlated(b, s, &outer, false, &cs));
        if (cs.ncorr > 0) return scalar_correlated(b, e, s, &cs, node, hidden, id);
    }
    const char *name = subq_name(b, id, "");
    if (!name) return berr(b);
    df_lnode *inner = bind_whole(b, e->query, 1, e->pos);
    if (!inner) return berr(b);
    inner = name_last(b, inner, &name, 1);
    if (!inner) return berr(b);
    DF_TRY(join_with(b, DF_JOIN_LEFT, node, hidden, inner, NULL, NULL, 0, NULL, 0, false, true, NULL));
    return remember(b, e, name, NULL, NULL);
}

/* EXISTS / IN (q) used as a value: a mark join whose hidden column holds it. */
static df_errkind mark_join(binder *b, const ast_expr *e, df_lnode **node, bool **hidden) {
    int32_t id = ++b->nsubq;
    const char *name = subq_name(b, id, "_mark");
    if (!name) return berr(b);
    if (e->kind == AE_EXISTS) {
        DF_TRY(exists_join(b, e, false, name, node, hidden));
    } else {
        ast_expr as_in = *e;
        if (e->kind == AE_IN_LIST) {
            as_in.kind = AE_IN_SUBQUERY;
            as_in.query = e->list[0]->query;
            as_in.nlist = 0;
        } else if (e->kind == AE_QUANTIFIED) {
            as_in.kind = AE_IN_SUBQUERY;   /* x = ANY (q) is x IN (q), x <> ALL (q) NOT IN */
            as_in.negated = e->flag;
        }
        const char *unknown = subq_name(b, id, "_unknown");
        if (!unknown) return berr(b);
        DF_TRY(in_join(b, &as_in, name, &unknown, node, hidden));
        DF_TRY(remember(b, e, name, NULL, NULL));
        b->subqs->unknown = unknown;
        return DF_OK;
    }
    return remember(b, e, name, NULL, NULL);
}


/* ------------------------------------------------------------------------ */
/* ANY / ALL                                                                 */

/*
 * x = ANY (q) is x IN (q) and x <> ALL (q) is x NOT IN (q).  The other
 * comparisons read four aggregates of q's values v, joined as hidden
 * columns (one row; grouped on the correlation keys and left-joined on them
 * when q correlates through equalities): mn = min(v), mx = max(v),
 * nn = count(v), cnt = count(*).  With `hit` the test below,
 *   x op ANY (q) = CASE WHEN hit THEN true  WHEN cnt > 0 AND (x IS NULL OR nn < cnt) THEN NULL ELSE false END
 *   x op ALL (q) = CASE WHEN hit THEN false WHEN cnt > 0 AND (x IS NULL OR nn < cnt) THEN NULL ELSE true END
 * where hit (some v makes x op v true for ANY, false for ALL) is
 *   ANY: > x > mn, >= x >= mn, < x < mx, <= x <= mx, <> x <> mn OR x <> mx
 *   ALL: > x <= mx, >= x < mx, < x >= mn, <= x > mn, = x <> mn OR x <> mx
 * An empty q (cnt = 0, or no group for the outer row: NULL) makes ANY false and ALL true.
 */
static df_errkind corr_keys(binder *b, const corr_split *cs, const bscope *outer, ast_expr ***ikeys_out,
                            ast_expr ***okeys_out, const char *what);
static df_lnode *select_over(binder *b, const ast_select *s, df_lnode *from, bool *from_hidden);

static bool quant_is_in(const ast_expr *e) {
    return (e->op == TK_EQ && !e->flag) || (e->op == TK_NE && e->flag);
}

/* min / max / count(v) / count(*) of v grouped by keys, over in. */
static df_lnode *quant_agg(binder *b, df_lnode *in, df_expr **keys, int32_t nk, df_expr *v, const char **names) {
    df_lnode *a = df__lnode_new(b->plan, DF_LN_AGGREGATE, 1, &in, nk + 4, b->err);
    df_agg *aggs = df__lplan_alloc(b->plan, 4 * sizeof(df_agg));
    if (!a || !aggs) return df__bind_oom(b);
    static const df_agg_fn fns[4] = {DF_AGG_MIN, DF_AGG_MAX, DF_AGG_COUNT, DF_AGG_COUNT};
    for (int i = 0; i < 4; i++) {
        aggs[i] = (df_agg){.fn = fns[i], .arg = i < 3 ? v : NULL, .type = i < 2 ? v->type : df_type_int64(),
                           .nullable = i < 2, .name = names[i]};
        a->cols[nk + i] = (df_lcol){.name = names[i], .type = aggs[i].type, .nullable = i < 2};
    }
    for (int32_t i = 0; i < nk; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "__quant_key_%d", i);
        a->cols[i] = (df_lcol){.name = df__bind_strdup(b, buf), .type = keys[i]->type, .nullable = true};
        if (!a->cols[i].name) return NULL;
    }
    a->u.agg.ngroup = nk;
    a->u.agg.group = keys;
    a->u.agg.naggs = 4;
    a->u.agg.aggs = aggs;
    return a;
}

static df_errkind quant_join(binder *b, const ast_expr *e, df_lnode **node, bool **hidden) {
    int32_t id = ++b->nsubq;
    const char **names = df__lplan_alloc(b->plan, 4 * sizeof(char *));
    if (!names) return DF_OOM(b->err);
    static const char *const sfx[4] = {"_min", "_max", "_nn", "_cnt"};
    for (int i = 0; i < 4; i++)
        if (!(names[i] = subq_name(b, id, sfx[i]))) return berr(b);
    const ast_select *s = plain_select(e->query, false);
    bscope outer = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    corr_split cs = {0};
    if (s) DF_TRY(split_correlated(b, s, &outer, false, &cs));
    df_lnode *in;
    df_expr *v, **keys = NULL, **eqs = NULL;
    int32_t nk = 0;
    if (!s || cs.ncorr == 0) {
        in = s ? select_over(b, s, cs.inner, cs.inner_hidden) : bind_whole(b, e->query, 1, e->pos);
        if (!in) return berr(b);
        if (in->ncols != 1)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "the subquery returns %d columns where 1 is expected",
                                  in->ncols);
        v = df__expr_column(b->plan, 0, &in->cols[0], b->err);
        if (!v) return berr(b);
    } else {
        if (s->nitems != 1 || s->items[0].expr->kind == AE_STAR || select_aggregates(s) || s->distinct ||
            df__ast_has_window(s->items[0].expr))
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos,
                                  "a correlated ANY / ALL subquery must select one value without aggregates");
        ast_expr **ikeys = NULL, **okeys = NULL;
        DF_TRY(corr_keys(b, &cs, &outer, &ikeys, &okeys, "a correlated ANY / ALL subquery"));
        in = cs.inner;
        bool *ih = cs.inner_hidden;
        DF_TRY(apply_conjuncts(b, cs.rest, cs.nrest, &in, &ih));
        ast_expr *item = s->items[0].expr;
        DF_TRY(df__bind_scalar_subqueries(b, &item, 1, &in, &ih));
        bscope is = {.ncols = in->ncols, .cols = in->cols, .hidden = ih};
        bctx ictx = {.scope = &is, .clause = "subquery SELECT"};
        nk = cs.ncorr;
        keys = df__lplan_alloc(b->plan, (size_t)nk * sizeof(df_expr *));
        eqs = df__lplan_alloc(b->plan, (size_t)nk * sizeof(df_expr *));
        if (!keys || !eqs) return DF_OOM(b->err);
        v = df__bind_expr(b, item, &ictx);
        if (!v) return berr(b);
        for (int32_t i = 0; i < nk; i++)
            if (!(keys[i] = df__bind_expr(b, ikeys[i], &ictx))) return berr(b);
        df_lnode *a = quant_agg(b, in, keys, nk, v, names);
        if (!a) return berr(b);
        bctx octx = {.scope = &outer, .clause = "subquery condition"};
        for (int32_t i = 0; i < nk; i++) {
            df_expr *o = df__bind_expr(b, okeys[i], &octx);
            df_expr *k = o ? df__expr_column(b->plan, (*node)->ncols + i, &a->cols[i], b->err) : NULL;
            eqs[i] = k ? equality(b, o, k, cs.corr[i]->pos) : NULL;
            if (!eqs[i]) return berr(b);
        }
        in = a;
    }
    if (!nk && !(in = quant_agg(b, in, NULL, 0, v, names))) return berr(b);
    DF_TRY(join_with(b, DF_JOIN_LEFT, node, hidden, in, NULL, NULL, 0, eqs, nk, false, true, NULL));
    DF_TRY(remember(b, e, names[0], NULL, NULL));
    b->subqs->quant = names;
    b->subqs->negate = false;
    return DF_OK;
}

/* x fn y with both sides coerced to their comparison type. */
static df_expr *compare(binder *b, df_fn fn, df_expr *x, df_expr *y, int32_t pos) {
    df_expr *eq = equality(b, x, y, pos);
    if (eq) eq->fn = fn;
    return eq;
}

static df_expr *bool_lit(binder *b, int v) {
    df_scalar s = {.type = df_type_bool(), .is_null = v < 0, .v.b = v > 0};
    return df__expr_literal(b->plan, &s, b->err);
}

static int32_t scope_find(const bscope *sc, const char *name);

static df_expr *quant_value(binder *b, const ast_expr *e, const bsubq *s, const bctx *ctx) {
    const bscope *sc = ctx->scope;
    df_expr *c[4];
    for (int i = 0; i < 4; i++) {
        int32_t k = scope_find(sc, s->quant[i]);
        if (k < 0) {
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "ANY / ALL subqueries are not supported in %s",
                           ctx->clause ? ctx->clause : "this position");
            return NULL;
        }
        if (!(c[i] = df__expr_column(b->plan, k, &sc->cols[k], b->err))) return NULL;
    }
    df_expr *x = df__bind_expr(b, e->a, ctx);
    if (!x) return NULL;
    bool all = e->flag;
    df_expr *hit;
    if (e->op == TK_EQ || e->op == TK_NE) {
        df_expr *alts[2] = {compare(b, DF_FN_NE, x, c[0], e->pos), compare(b, DF_FN_NE, x, c[1], e->pos)};
        if (!alts[0] || !alts[1]) return NULL;
        hit = df__expr_new(b->plan, DF_EX_OR, df_type_bool(), true, 2, alts, b->err);
    } else {
        df_fn fn;
        bool use_max;
        switch (e->op) {
        case TK_GT: fn = all ? DF_FN_LE : DF_FN_GT; use_max = all; break;
        case TK_GE: fn = all ? DF_FN_LT : DF_FN_GE; use_max = all; break;
        case TK_LT: fn = all ? DF_FN_GE : DF_FN_LT; use_max = !all; break;
        default: fn = all ? DF_FN_GT : DF_FN_LE; use_max = !all; break; /* TK_LE */
        }
        hit = compare(b, fn, x, c[use_max ? 1 : 0], e->pos);
    }
    /* cnt > 0 AND (x IS NULL OR nn < cnt) */
    df_scalar zero = {.type = df_type_int64(), .v.i64 = 0};
    df_expr *z = df__expr_literal(b->plan, &zero, b->err);
    df_expr *some = z ? compare(b, DF_FN_GT, c[3], z, e->pos) : NULL;
    df_expr *nulls[2] = {is_null(b, x), compare(b, DF_FN_LT, c[2], c[3], e->pos)};
    if (!hit || !some || !nulls[0] || !nulls[1]) return NULL;
    df_expr *anynull = df__expr_new(b->plan, DF_EX_OR, df_type_bool(), true, 2, nulls, b->err);
    df_expr *conj[2] = {some, anynull};
    df_expr *unknown = anynull ? df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, 2, conj, b->err) : NULL;
    df_expr *args[5] = {hit, bool_lit(b, all ? 0 : 1), unknown, bool_lit(b, -1), bool_lit(b, all ? 1 : 0)};
    for (int i = 0; i < 5; i++)
        if (!args[i]) return NULL;
    df_expr *r = df__expr_new(b->plan, DF_EX_CASE, df_type_bool(), true, 5, args, b->err);
    if (r) r->has_else = true;
    return r;
}

/* Walks e (not into nested queries) joining every subquery expression not joined yet. */
static df_errkind scalar_walk(binder *b, const ast_expr *e, df_lnode **node, bool **hidden) {
    if (!e) return DF_OK;
    if (e->kind == AE_SUBQUERY) return find_subq(b, e) ? DF_OK : scalar_join(b, e, node, hidden);
    if (e->kind == AE_QUANTIFIED && !quant_is_in(e)) {
        if (!find_subq(b, e)) DF_TRY(quant_join(b, e, node, hidden));
        return scalar_walk(b, e->a, node, hidden);
    }
    if (e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY || e->kind == AE_QUANTIFIED ||
        (e->kind == AE_IN_LIST && e->nlist == 1 && e->list[0]->kind == AE_SUBQUERY)) {
        if (!find_subq(b, e)) DF_TRY(mark_join(b, e, node, hidden));
        return e->kind == AE_EXISTS ? DF_OK : scalar_walk(b, e->a, node, hidden);
    }
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++) DF_TRY(scalar_walk(b, ops[k], node, hidden));
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list) DF_TRY(scalar_walk(b, e->list[i], node, hidden));
        if (e->list2) DF_TRY(scalar_walk(b, e->list2[i], node, hidden));
    }
    return DF_OK;
}

/* Walks e joining the subqueries inside aggregate call arguments only. */
static df_errkind agg_arg_walk(binder *b, const ast_expr *e, df_lnode **node, bool **hidden) {
    if (!e) return DF_OK;
    if (df__bind_agg_fn(e) >= 0) {
        for (int32_t i = 0; i < e->nlist; i++) DF_TRY(scalar_walk(b, e->list[i], node, hidden));
        return scalar_walk(b, e->filter, node, hidden);
    }
    if (e->kind == AE_SUBQUERY || e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY) return DF_OK;
    const ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    for (int k = 0; k < 4; k++) DF_TRY(agg_arg_walk(b, ops[k], node, hidden));
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list) DF_TRY(agg_arg_walk(b, e->list[i], node, hidden));
        if (e->list2) DF_TRY(agg_arg_walk(b, e->list2[i], node, hidden));
    }
    return DF_OK;
}

df_errkind df__bind_agg_arg_subqueries(binder *b, ast_expr *const *exprs, int32_t n, df_lnode **node, bool **hidden) {
    for (int32_t i = 0; i < n; i++) DF_TRY(agg_arg_walk(b, exprs[i], node, hidden));
    return DF_OK;
}

/* True when every subquery expression in e (outside nested queries) has its column in scope sc. */
static int32_t scope_find(const bscope *sc, const char *name);
bool df__bind_subqueries_in_scope(binder *b, const ast_expr *e, const bscope *sc) {
    if (!e) return true;
    if (e->kind == AE_SUBQUERY || e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY || e->kind == AE_QUANTIFIED ||
        (e->kind == AE_IN_LIST && e->nlist == 1 && e->list[0]->kind == AE_SUBQUERY)) {
        bsubq *s = find_subq(b, e);
        if (!s || scope_find(sc, s->col) < 0) return false;
        return e->kind == AE_EXISTS || df__bind_subqueries_in_scope(b, e->a, sc);
    }
    const ast_expr *ops[5] = {e->a, e->b, e->c, e->d, e->filter};
    for (int k = 0; k < 5; k++)
        if (!df__bind_subqueries_in_scope(b, ops[k], sc)) return false;
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list && !df__bind_subqueries_in_scope(b, e->list[i], sc)) return false;
        if (e->list2 && !df__bind_subqueries_in_scope(b, e->list2[i], sc)) return false;
    }
    return true;
}

df_errkind df__bind_scalar_subqueries(binder *b, ast_expr *const *exprs, int32_t n, df_lnode **node, bool **hidden) {
    for (int32_t i = 0; i < n; i++) DF_TRY(scalar_walk(b, exprs[i], node, hidden));
    return DF_OK;
}

/* Index of column `name` in scope sc, or -1. */
static int32_t scope_find(const bscope *sc, const char *name) {
    for (int32_t i = 0; sc && name && i < sc->ncols; i++)
        if (sc->cols[i].name == name || strcmp(sc->cols[i].name, name) == 0) return i;
    return -1;
}

df_expr *df__bind_subquery_column(binder *b, const ast_expr *e, const bctx *ctx) {
    bsubq *s = find_subq(b, e);
    const bscope *sc = ctx->scope;
    if (s && s->quant) return quant_value(b, e, s, ctx);
    int32_t vi = s ? scope_find(sc, s->col) : -1;
    int32_t mi = s && s->mark ? scope_find(sc, s->mark) : -1, di = s && s->dflt ? scope_find(sc, s->dflt) : -1;
    if (vi < 0 || (s->dflt && (mi < 0 || di < 0))) {
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "scalar subqueries are not supported in %s",
                   ctx->clause ? ctx->clause : "this position");
        return NULL;
    }
    df_expr *v = df__expr_column(b->plan, vi, &sc->cols[vi], b->err);
    if (v && s->unknown) {
        /* CASE WHEN matched THEN true WHEN unknown THEN NULL ELSE false END (see in_join) */
        int32_t ui = scope_find(sc, s->unknown);
        if (ui < 0) {
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "IN subqueries are not supported in %s",
                           ctx->clause ? ctx->clause : "this position");
            return NULL;
        }
        df_expr *args[5] = {v, bool_lit(b, 1), df__expr_column(b->plan, ui, &sc->cols[ui], b->err), bool_lit(b, -1),
                            bool_lit(b, 0)};
        for (int i = 0; i < 5; i++)
            if (!args[i]) return NULL;
        v = df__expr_new(b->plan, DF_EX_CASE, df_type_bool(), true, 5, args, b->err);
        if (v) v->has_else = true;
    }
    if (v && s->negate) return df__expr_new(b->plan, DF_EX_NOT, df_type_bool(), true, 1, &v, b->err);
    if (!v || di < 0) return v;
    /* CASE WHEN matched IS NOT NULL THEN value ELSE value-over-no-rows END */
    df_expr *m = df__expr_column(b->plan, mi, &sc->cols[mi], b->err);
    df_expr *d = m ? df__expr_column(b->plan, di, &sc->cols[di], b->err) : NULL;
    df_expr *cond = d ? df__expr_func(b->plan, DF_FN_IS_NOT_NULL, df_type_bool(), false, 1, &m, b->err) : NULL;
    if (!cond) return NULL;
    df_expr *args[3] = {cond, v, d};
    df_expr *r = df__expr_new(b->plan, DF_EX_CASE, v->type, true, 3, args, b->err);
    if (r) r->has_else = true;
    return r;
}

/* ------------------------------------------------------------------------ */
/* WHERE                                                                     */

/* NOT a as a new AST node. */
static ast_expr *ast_not(binder *b, ast_expr *a) {
    ast_expr *e = df__lplan_alloc(b->plan, sizeof *e);
    if (!e) return df__bind_oom(b);
    memset(e, 0, sizeof *e);
    e->kind = AE_NOT;
    e->pos = a->pos;
    e->a = a;
    e->height = a->height + 1;
    return e;
}

/* Conjuncts a NOT (a OR b ..) conjunct splits into (NOT a, NOT b, ..), NOT NOT x being x; 0 when it does not split. */
static int32_t negated_or_size(const ast_expr *c) {
    if (c->kind != AE_NOT || !c->a || c->a->kind != AE_OR || !df__ast_has_subquery(c->a)) return 0;
    return c->a->nlist;
}

/*
 * The WHERE conjuncts with NOT over an OR holding subqueries distributed
 * (De Morgan, as DataFusion's simplifier does before it decorrelates): the
 * negated disjuncts become conjuncts, so `NOT (x IN (q) OR c)` is the
 * null-aware anti join `x NOT IN (q)` and `NOT c`.  One level: the parts
 * are not split again.
 */
static df_errkind where_conjuncts(binder *b, const ast_expr *where, ast_expr *const **list, int32_t *n,
                                  ast_expr **one) {
    conjuncts(where, list, n, one);
    int32_t total = 0;
    bool split = false;
    for (int32_t i = 0; i < *n; i++) {
        int32_t k = negated_or_size((*list)[i]);
        split |= k > 0;
        total += k ? k : 1;
    }
    if (!split) return DF_OK;
    ast_expr **out = df__lplan_alloc(b->plan, (size_t)total * sizeof *out);
    if (!out) return DF_OOM(b->err);
    int32_t m = 0;
    for (int32_t i = 0; i < *n; i++) {
        const ast_expr *c = (*list)[i];
        if (!negated_or_size(c)) {
            out[m++] = (ast_expr *)c;
            continue;
        }
        for (int32_t j = 0; j < c->a->nlist; j++) {
            ast_expr *d = c->a->list[j];
            ast_expr *x = d->kind == AE_NOT && d->a ? d->a : ast_not(b, d);
            if (!x) return berr(b);
            out[m++] = x;
        }
    }
    *list = out;
    *n = m;
    return DF_OK;
}

df_errkind df__bind_where(binder *b, const ast_expr *where, df_lnode **node, bool **hidden) {
    ast_expr *const *list;
    ast_expr *one;
    int32_t n;
    DF_TRY(where_conjuncts(b, where, &list, &n, &one));
    ast_expr **rest = df__lplan_alloc(b->plan, (size_t)n * sizeof(ast_expr *));
    if (!rest) return DF_OOM(b->err);
    int32_t nrest = 0;
    for (int32_t i = 0; i < n; i++) {
        const ast_expr *c = list[i];
        bool neg = false;
        if (c->kind == AE_NOT && c->a && (c->a->kind == AE_EXISTS || c->a->kind == AE_IN_SUBQUERY)) {
            neg = true;
            c = c->a;
        }
        ast_expr as_in;
        if (c->kind == AE_QUANTIFIED && quant_is_in(c)) {
            /* x = ANY (q): x IN (q); x <> ALL (q): x NOT IN (q) */
            as_in = *c;
            as_in.kind = AE_IN_SUBQUERY;
            as_in.negated = c->flag;
            c = &as_in;
        } else if (c->kind == AE_IN_LIST && c->nlist == 1 && c->list[0]->kind == AE_SUBQUERY) {
            /* x IN ((SELECT ..)): the parenthesised query is the IN subquery. */
            as_in = *c;
            as_in.kind = AE_IN_SUBQUERY;
            as_in.query = c->list[0]->query;
            as_in.nlist = 0;
            c = &as_in;
        }
        if (c->kind == AE_EXISTS) {
            DF_TRY(exists_join(b, c, neg != c->negated, NULL, node, hidden));
        } else if (c->kind == AE_IN_SUBQUERY) {
            ast_expr flipped = *c;
            flipped.negated = neg != c->negated;
            DF_TRY(in_join(b, &flipped, NULL, NULL, node, hidden));
        } else {
            rest[nrest++] = list[i];
        }
    }
    if (nrest == 0) return DF_OK;
    ast_expr *w = ast_and(b, rest, nrest);
    if (!w) return berr(b);
    DF_TRY(scalar_walk(b, w, node, hidden));
    bscope scope = {.ncols = (*node)->ncols, .cols = (*node)->cols, .hidden = *hidden};
    bctx ctx = {.scope = &scope, .clause = "WHERE"};
    df_expr *pred = df__bind_condition(b, w, &ctx);
    if (!pred) return berr(b);
    df_lnode *f = filter_node(b, *node, pred);
    if (!f) return berr(b);
    *node = f;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* LATERAL subqueries                                                        */

/*
 * FROM l, LATERAL (q) alias  /  l [LEFT] JOIN LATERAL (q) alias ON cond,
 * decorrelated like the subqueries above (DataFusion's rules: outer columns
 * only in q's WHERE; in its SELECT list they are an error).
 *
 *   uncorrelated q         -> an ordinary join with q
 *   q without aggregates   -> join l with q' = SELECT items.., <q's FROM columns> FROM .. WHERE rest
 *                             ON correlated conjuncts AND cond, then project l ++ items
 *   q GROUP BY g..         -> join l with SELECT items.., ikeys.. FROM .. WHERE rest GROUP BY g.., ikeys..
 *                             ON okeys = ikeys AND cond (correlation through equalities only)
 *   q aggregating, no      -> every l row gets one row: LEFT join with the groups per ikeys and
 *   GROUP BY                  the value over no rows for l rows without a group (count() = 0);
 *                             then cond filters (inner) or turns the row into NULLs (LEFT)
 *
 * q's FROM is bound once and shared by the plans built from it.
 */

/* A copy of c that no name resolves to (hidden, no qualifier). */
static df_lcol unnamed(const df_lcol *c) {
    df_lcol u = *c;
    u.qualifier = NULL;
    return u;
}

/* Scope over cols with hidden flags: [from, to) visible as given by vis (NULL = all), others unnamed. */
static df_errkind part_scope(binder *b, const df_lcol *cols, int32_t n, const bool *hid, int32_t from, int32_t to,
                             int32_t prefer, bscope *out) {
    df_lcol *c = df__lplan_alloc(b->plan, (size_t)n * sizeof(df_lcol) + 1);
    bool *h = df__lplan_alloc(b->plan, (size_t)n + 1);
    if (!c || !h) return DF_OOM(b->err);
    for (int32_t i = 0; i < n; i++) {
        bool in = i < from || i >= to;
        c[i] = in ? cols[i] : unnamed(&cols[i]);
        h[i] = in ? hid && hid[i] : true;
    }
    *out = (bscope){.ncols = n, .cols = c, .hidden = h, .prefer_from = prefer};
    return DF_OK;
}

/* Splits correlated conjuncts `inner_expr = outer_expr` into their two sides; error for any other form. */
static df_errkind corr_keys(binder *b, const corr_split *cs, const bscope *outer, ast_expr ***ikeys_out,
                            ast_expr ***okeys_out, const char *what) {
    bscope is = {.ncols = cs->inner->ncols, .cols = cs->inner->cols, .hidden = cs->inner_hidden};
    int32_t m = cs->ncorr;
    ast_expr **ikeys = df__lplan_alloc(b->plan, (size_t)m * sizeof(ast_expr *) + 1);
    ast_expr **okeys = df__lplan_alloc(b->plan, (size_t)m * sizeof(ast_expr *) + 1);
    if (!ikeys || !okeys) return DF_OOM(b->err);
    for (int32_t i = 0; i < m; i++) {
        const ast_expr *c = cs->corr[i];
        int sa = c->kind == AE_BINOP && c->op == TK_EQ ? sides(c->a, &is, outer) : 0;
        int sb = sa ? sides(c->b, &is, outer) : 0;
        if (sa == SIDE_INNER && sb == SIDE_OUTER) {
            ikeys[i] = c->a;
            okeys[i] = c->b;
        } else if (sa == SIDE_OUTER && sb == SIDE_INNER) {
            ikeys[i] = c->b;
            okeys[i] = c->a;
        } else {
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, c->pos,
                                  "%s must correlate through `inner = outer` equalities", what);
        }
    }
    *ikeys_out = ikeys;
    *okeys_out = okeys;
    return DF_OK;
}

/* Binds select s over the already bound FROM plan `from`. */
static df_lnode *select_over(binder *b, const ast_select *s, df_lnode *from, bool *from_hidden) {
    b->pre_sel = s;
    b->pre_node = from;
    b->pre_hidden = from_hidden;
    df_lnode *n = df__bind_select_only(b, s);
    b->pre_sel = NULL;
    return n;
}

/* Output name of lateral column i: the column alias, else `dflt`. */
static df_errkind lateral_names(binder *b, const ast_tableref *r, int32_t n) {
    if (r->ncol_aliases > n)
        return df__bind_error(b, DF_ERR_SQL_TYPE, r->pos, "%d column aliases given for %d columns", r->ncol_aliases, n);
    return DF_OK;
}

/* in's first nl columns ++ vals (the lateral columns, named by the column aliases or names[]). */
static df_lnode *lateral_project(binder *b, const ast_tableref *r, df_lnode *in, int32_t nl, df_expr **vals,
                                 const char *const *names, int32_t n) {
    if (!vals || !names) return NULL;
    df_expr **ex = df__lplan_alloc(b->plan, (size_t)(nl + n) * sizeof(df_expr *) + 1);
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(nl + n) * sizeof(df_lcol) + 1);
    if (!ex || !cols) return df__bind_oom(b);
    for (int32_t i = 0; i < nl; i++) {
        ex[i] = df__expr_column(b->plan, i, &in->cols[i], b->err);
        if (!ex[i]) return NULL;
        cols[i] = in->cols[i];
    }
    for (int32_t i = 0; i < n; i++) {
        ex[nl + i] = vals[i];
        cols[nl + i] = (df_lcol){.name = i < r->ncol_aliases ? r->col_aliases[i] : names[i],
                                 .qualifier = r->alias, .type = vals[i]->type, .nullable = vals[i]->nullable};
    }
    return df__bind_project_node(b, in, ex, cols, nl + n);
}

/* The names of in's columns [from, from + n). */
static const char **col_names(binder *b, const df_lnode *in, int32_t from, int32_t n) {
    const char **v = df__lplan_alloc(b->plan, (size_t)n * sizeof(char *) + 1);
    if (!v) return df__bind_oom(b);
    for (int32_t i = 0; i < n; i++) v[i] = in->cols[from + i].name;
    return v;
}

/* Column refs to in's columns [from, from + n). */
static df_expr **col_refs(binder *b, const df_lnode *in, int32_t from, int32_t n) {
    df_expr **v = df__lplan_alloc(b->plan, (size_t)n * sizeof(df_expr *) + 1);
    if (!v) return df__bind_oom(b);
    for (int32_t i = 0; i < n; i++) {
        v[i] = df__expr_column(b->plan, from + i, &in->cols[from + i], b->err);
        if (!v[i]) return NULL;
    }
    return v;
}

/* Joins *node with inner by type t on conds (bound over *node ++ inner) and the ON condition bound over sc. */
static df_errkind lateral_join(binder *b, df_join_type t, df_lnode **node, df_lnode *inner, df_expr **conds,
                               int32_t nconds, const ast_expr *on, const bscope *on_scope) {
    df_expr **all = df__lplan_alloc(b->plan, (size_t)(nconds + 1) * sizeof(df_expr *));
    if (!all) return DF_OOM(b->err);
    int32_t n = 0;
    for (int32_t i = 0; i < nconds; i++) all[n++] = conds[i];
    if (on) {
        bctx ctx = {.scope = on_scope, .clause = "JOIN condition"};
        all[n] = df__bind_condition(b, on, &ctx);
        if (!all[n++]) return berr(b);
    }
    df_lnode *j = df__bind_join_node(b, t, *node, inner);
    if (!j) return berr(b);
    if (n) {
        df_expr *cond = n == 1 ? all[0] : df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, n, all, b->err);
        if (!cond) return berr(b);
        DF_TRY(df__bind_join_condition(b, cond, (*node)->ncols, inner->ncols, j));
    }
    *node = j;
    return DF_OK;
}

/* Hidden flags: the first nl from h, then n visible columns. */
static bool *lateral_hidden(binder *b, const bool *h, int32_t nl, int32_t n) {
    bool *nh = df__lplan_alloc(b->plan, (size_t)(nl + n) + 1);
    if (!nh) return df__bind_oom(b);
    for (int32_t i = 0; i < nl + n; i++) nh[i] = i < nl && h && h[i];
    return nh;
}

/* SELECT items of a non-aggregating correlated q, bound over its FROM (`*` expanded). */
static df_errkind lateral_items(binder *b, const ast_select *s, const bscope *is, df_expr ***out,
                                const char ***names_out, int32_t *nout) {
    int32_t cap = 0;
    for (int32_t i = 0; i < s->nitems; i++) cap += s->items[i].expr->kind == AE_STAR ? is->ncols : 1;
    df_expr **v = df__lplan_alloc(b->plan, (size_t)cap * sizeof(df_expr *) + 1);
    const char **names = df__lplan_alloc(b->plan, (size_t)cap * sizeof(char *) + 1);
    if (!v || !names) return DF_OOM(b->err);
    int32_t n = 0;
    bctx ctx = {.scope = is, .clause = "SELECT"};
    for (int32_t i = 0; i < s->nitems; i++) {
        const ast_select_item *it = &s->items[i];
        if (it->expr->kind == AE_STAR) {
            const char *qual = it->expr->name.n ? it->expr->name.parts[it->expr->name.n - 1] : NULL;
            int32_t before = n;
            for (int32_t c = 0; c < is->ncols; c++) {
                const char *q = is->cols[c].qualifier;
                if (qual ? !q || (strcmp(q, qual) != 0 && df_ascii_casecmp(q, qual) != 0)
                         : is->hidden && is->hidden[c])
                    continue;
                names[n] = is->cols[c].name;
                v[n] = df__expr_column(b->plan, c, &is->cols[c], b->err);
                if (!v[n++]) return berr(b);
            }
            if (qual && n == before)
                return df__bind_error(b, DF_ERR_SQL_UNKNOWN_TABLE, it->expr->pos, "table `%s` is not in FROM", qual);
            continue;
        }
        df_expr *x = df__bind_expr(b, it->expr, &ctx);
        if (!x) return berr(b);
        names[n] = it->alias ? it->alias : x->kind == DF_EX_COLUMN ? x->name : df__bind_display(b, x);
        if (!names[n]) return berr(b);
        v[n++] = x;
    }
    *out = v;
    *names_out = names;
    *nout = n;
    return DF_OK;
}

df_errkind df__bind_lateral(binder *b, df_join_type t, const ast_tableref *r, const ast_expr *on, df_lnode **node,
                            bool **hidden) {
    if (t != DF_JOIN_INNER && t != DF_JOIN_LEFT)
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, r->pos, "only inner and left joins can be LATERAL");
    if (on && on->kind == AE_BOOL && on->bval) on = NULL;
    if (on && df__ast_has_subquery(on))
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, on->pos, "subqueries in the ON condition of a LATERAL join are not supported");
    const ast_select *s = plain_select(r->query, false);
    int32_t nl = (*node)->ncols;
    bscope outer = {.ncols = nl, .cols = (*node)->cols, .hidden = *hidden};
    corr_split cs = {0};
    if (s) DF_TRY(split_correlated(b, s, &outer, false, &cs));
    if (!s || cs.ncorr == 0) {
        /* Not correlated: an ordinary join. */
        if (s) {
            b->pre_sel = s;
            b->pre_node = cs.inner;
            b->pre_hidden = cs.inner_hidden;
        }
        df_lnode *inner = bind_whole(b, r->query, 0, r->pos);
        b->pre_sel = NULL;
        if (!inner) return berr(b);
        DF_TRY(lateral_names(b, r, inner->ncols));
        df_expr **v = col_refs(b, inner, 0, inner->ncols);
        if (!v) return berr(b);
        inner = lateral_project(b, r, inner, 0, v, col_names(b, inner, 0, inner->ncols), inner->ncols);
        bscope sc;
        if (!inner || combined_scope(b, *node, *hidden, inner, NULL, &sc)) return berr(b);
        sc.prefer_from = 0;
        DF_TRY(lateral_join(b, t, node, inner, NULL, 0, on, &sc));
        *hidden = lateral_hidden(b, *hidden, nl, inner->ncols);
        return *hidden ? DF_OK : berr(b);
    }
    for (int32_t i = 0; i < s->nitems; i++)
        if (df__ast_has_window(s->items[i].expr))
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, s->items[i].expr->pos,
                                  "window functions in a correlated LATERAL subquery are not supported");
    if (!select_aggregates(s)) {
        if (s->distinct || s->ndistinct_on)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, s->pos,
                                  "DISTINCT in a correlated LATERAL subquery is not supported");
        df_lnode *in = cs.inner;
        bool *ih = cs.inner_hidden;
        DF_TRY(apply_conjuncts(b, cs.rest, cs.nrest, &in, &ih));
        ast_expr **ie = df__lplan_alloc(b->plan, (size_t)s->nitems * sizeof(ast_expr *) + 1);
        if (!ie) return DF_OOM(b->err);
        for (int32_t i = 0; i < s->nitems; i++) ie[i] = s->items[i].expr;
        DF_TRY(df__bind_scalar_subqueries(b, ie, s->nitems, &in, &ih));
        bscope is = {.ncols = in->ncols, .cols = in->cols, .hidden = ih};
        df_expr **items = NULL;
        const char **names = NULL;
        int32_t ni = 0;
        DF_TRY(lateral_items(b, s, &is, &items, &names, &ni));
        DF_TRY(lateral_names(b, r, ni));
        /* q' = items ++ q's FROM columns */
        int32_t nf = in->ncols;
        df_expr **fc = col_refs(b, in, 0, nf);
        if (!fc) return berr(b);
        df_expr **ex = df__lplan_alloc(b->plan, (size_t)(ni + nf) * sizeof(df_expr *) + 1);
        df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(ni + nf) * sizeof(df_lcol) + 1);
        bool *qh = df__lplan_alloc(b->plan, (size_t)(ni + nf) + 1);
        if (!ex || !cols || !qh) return DF_OOM(b->err);
        for (int32_t i = 0; i < ni; i++) {
            ex[i] = items[i];
            cols[i] = (df_lcol){.name = i < r->ncol_aliases ? r->col_aliases[i] : names[i],
                                .qualifier = r->alias, .type = items[i]->type, .nullable = items[i]->nullable};
            qh[i] = false;
        }
        for (int32_t i = 0; i < nf; i++) {
            ex[ni + i] = fc[i];
            cols[ni + i] = in->cols[i];
            qh[ni + i] = ih && ih[i];
        }
        df_lnode *q2 = df__bind_project_node(b, in, ex, cols, ni + nf);
        if (!q2) return berr(b);
        /* The correlated conjuncts see l ++ q's FROM columns, ON sees l ++ items. */
        df_lnode *j = df__bind_join_node(b, t, *node, q2);
        if (!j) return berr(b);
        bool *jh = df__lplan_alloc(b->plan, (size_t)(nl + ni + nf) + 1);
        if (!jh) return DF_OOM(b->err);
        for (int32_t i = 0; i < nl; i++) jh[i] = *hidden && (*hidden)[i];
        for (int32_t i = 0; i < ni + nf; i++) jh[nl + i] = qh[i];
        bscope corr_sc, on_sc;
        DF_TRY(part_scope(b, j->cols, j->ncols, jh, nl, nl + ni, nl, &corr_sc));
        DF_TRY(part_scope(b, j->cols, j->ncols, jh, nl + ni, nl + ni + nf, 0, &on_sc));
        df_expr **conds = df__lplan_alloc(b->plan, (size_t)cs.ncorr * sizeof(df_expr *));
        if (!conds) return DF_OOM(b->err);
        bctx ctx = {.scope = &corr_sc, .clause = "subquery condition"};
        for (int32_t i = 0; i < cs.ncorr; i++) {
            conds[i] = df__bind_condition(b, cs.corr[i], &ctx);
            if (!conds[i]) return berr(b);
        }
        DF_TRY(lateral_join(b, t, node, q2, conds, cs.ncorr, on, &on_sc));
        df_expr **v = col_refs(b, *node, nl, ni);
        df_lnode *p = v ? lateral_project(b, r, *node, nl, v, col_names(b, *node, nl, ni), ni) : NULL;
        if (!p) return berr(b);
        *node = p;
        *hidden = lateral_hidden(b, *hidden, nl, ni);
        return *hidden ? DF_OK : berr(b);
    }
    /* Aggregating q: grouped on the correlation keys. */
    bool scalar = !(s->ngroup || s->group_all);
    if (scalar && s->having)
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, s->having->pos,
                              "HAVING in a correlated LATERAL subquery without GROUP BY is not supported");
    ast_expr **ikeys = NULL, **okeys = NULL;
    DF_TRY(corr_keys(b, &cs, &outer, &ikeys, &okeys, "an aggregating LATERAL subquery"));
    int32_t m = cs.ncorr, ni = s->nitems;
    ast_select *g = df__lplan_alloc(b->plan, sizeof *g);
    ast_select_item *gi = df__lplan_alloc(b->plan, (size_t)(ni + m + 1) * sizeof *gi);
    ast_expr **gk = df__lplan_alloc(b->plan, (size_t)(s->ngroup + m) * sizeof(ast_expr *) + 1);
    ast_expr *tru = ast_bool(b, true, r->pos);
    if (!g || !gi || !gk || !tru) return DF_OOM(b->err);
    *g = *s;
    for (int32_t i = 0; i < ni; i++) gi[i] = s->items[i];
    for (int32_t i = 0; i < m; i++) gi[ni + i] = (ast_select_item){.expr = ikeys[i]};
    gi[ni + m] = (ast_select_item){.expr = tru};
    g->items = gi;
    g->nitems = ni + m + (scalar ? 1 : 0);
    g->where = ast_and(b, cs.rest, cs.nrest);
    if (cs.nrest && !g->where) return berr(b);
    if (!s->group_all) {
        for (int32_t i = 0; i < s->ngroup; i++) gk[i] = s->group[i];
        for (int32_t i = 0; i < m; i++) gk[s->ngroup + i] = ikeys[i];
        g->group = gk;
        g->ngroup = s->ngroup + m;
    }
    df_lnode *gp = select_over(b, g, cs.inner, cs.inner_hidden);
    if (!gp) return berr(b);
    DF_TRY(lateral_names(b, r, ni));
    /* okeys = ikeys */
    df_expr **eqs = df__lplan_alloc(b->plan, (size_t)m * sizeof(df_expr *));
    if (!eqs) return DF_OOM(b->err);
    bctx octx = {.scope = &outer, .clause = "subquery condition"};
    for (int32_t i = 0; i < m; i++) {
        df_expr *o = df__bind_expr(b, okeys[i], &octx);
        df_expr *k = o ? df__expr_column(b->plan, nl + ni + i, &gp->cols[ni + i], b->err) : NULL;
        eqs[i] = k ? equality(b, o, k, cs.corr[i]->pos) : NULL;
        if (!eqs[i]) return berr(b);
    }
    df_lnode *gq = lateral_project(b, r, gp, 0, col_refs(b, gp, 0, gp->ncols), col_names(b, gp, 0, gp->ncols), gp->ncols);
    if (!gq) return berr(b);
    for (int32_t i = ni; i < gq->ncols; i++) gq->cols[i] = unnamed(&gp->cols[i]);
    if (!scalar) {
        df_lnode *j = df__bind_join_node(b, t, *node, gq);
        if (!j) return berr(b);
        bscope on_sc;
        DF_TRY(part_scope(b, j->cols, j->ncols, NULL, nl + ni, j->ncols, 0, &on_sc));
        DF_TRY(lateral_join(b, t, node, gq, eqs, m, on, &on_sc));
        df_expr **v = col_refs(b, *node, nl, ni);
        df_lnode *p = v ? lateral_project(b, r, *node, nl, v, col_names(b, *node, nl, ni), ni) : NULL;
        if (!p) return berr(b);
        *node = p;
        *hidden = lateral_hidden(b, *hidden, nl, ni);
        return *hidden ? DF_OK : berr(b);
    }
    /* One row per l row: the group's values, or those over no rows (SELECT items .. WHERE FALSE). */
    df_lnode *j = df__bind_join_node(b, DF_JOIN_LEFT, *node, gq);
    if (!j) return berr(b);
    j->u.join.single_row = true;
    DF_TRY(df__bind_join_condition(b, m == 1 ? eqs[0] : df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, m, eqs, b->err),
                                   nl, gq->ncols, j));
    ast_select *z = df__lplan_alloc(b->plan, sizeof *z);
    ast_expr *fls = ast_bool(b, false, r->pos);
    if (!z || !fls) return DF_OOM(b->err);
    *z = *s;
    z->where = fls;
    df_lnode *zp = select_over(b, z, cs.inner, cs.inner_hidden);
    if (!zp) return berr(b);
    df_lnode *jz = df__bind_join_node(b, DF_JOIN_LEFT, j, zp);
    if (!jz) return berr(b);
    jz->u.join.single_row = true;
    int32_t nj = j->ncols;
    df_expr **v = df__lplan_alloc(b->plan, (size_t)ni * sizeof(df_expr *) + 1);
    if (!v) return DF_OOM(b->err);
    df_expr *mk = df__expr_column(b->plan, nl + ni + m, &jz->cols[nl + ni + m], b->err);
    df_expr *matched = mk ? df__expr_func(b->plan, DF_FN_IS_NOT_NULL, df_type_bool(), false, 1, &mk, b->err) : NULL;
    if (!matched) return berr(b);
    for (int32_t i = 0; i < ni; i++) {
        df_expr *args[3] = {matched, df__expr_column(b->plan, nl + i, &jz->cols[nl + i], b->err),
                            df__expr_column(b->plan, nj + i, &jz->cols[nj + i], b->err)};
        if (!args[1] || !args[2]) return berr(b);
        v[i] = df__expr_new(b->plan, DF_EX_CASE, args[1]->type, args[1]->nullable || args[2]->nullable, 3, args,
                            b->err);
        if (!v[i]) return berr(b);
        v[i]->has_else = true;
    }
    df_lnode *p = lateral_project(b, r, jz, nl, v, col_names(b, jz, nl, ni), ni);
    if (!p) return berr(b);
    bool *ph = lateral_hidden(b, *hidden, nl, ni);
    if (!ph) return berr(b);
    if (on) {
        bscope sc = {.ncols = p->ncols, .cols = p->cols, .hidden = ph};
        bctx ctx = {.scope = &sc, .clause = "JOIN condition"};
        df_expr *c = df__bind_condition(b, on, &ctx);
        if (!c) return berr(b);
        if (t == DF_JOIN_INNER) {
            p = filter_node(b, p, c);
        } else {
            /* LEFT: rows failing the condition keep l's columns, the lateral ones become NULL. */
            df_expr **w = df__lplan_alloc(b->plan, (size_t)ni * sizeof(df_expr *) + 1);
            if (!w) return DF_OOM(b->err);
            for (int32_t i = 0; i < ni; i++) {
                df_expr *args[2] = {c, df__expr_column(b->plan, nl + i, &p->cols[nl + i], b->err)};
                if (!args[1]) return berr(b);
                w[i] = df__expr_new(b->plan, DF_EX_CASE, args[1]->type, true, 2, args, b->err);
                if (!w[i]) return berr(b);
            }
            p = lateral_project(b, r, p, nl, w, col_names(b, p, nl, ni), ni);
        }
        if (!p) return berr(b);
    }
    *node = p;
    *hidden = ph;
    return DF_OK;
}
