/*
 * Statement binding: the AST of one query -> an unoptimized logical plan.
 *
 * A SELECT is bound in the order SQL defines its meaning:
 *   FROM (tables, views, CTEs, subqueries, joins; comma = cross join)
 *   -> WHERE -> GROUP BY / aggregates -> HAVING -> SELECT list
 *   -> DISTINCT -> ORDER BY -> LIMIT/OFFSET.
 * ORDER BY may name output aliases, positions, or expressions over the
 * input; the latter are computed as hidden extra projection columns that a
 * final projection removes.  Aggregation is two-phase: first every
 * aggregate call in SELECT/HAVING/ORDER BY is collected (arguments bound
 * over the FROM scope), then the expressions are bound over the aggregate's
 * output (sql_bind_expr.c).
 *
 * Views registered with a plan are used as shared subtrees (their
 * container is kept alive); views registered as SQL text are parsed and
 * bound at each use, at most DF_SQL_MAX_VIEW_DEPTH levels deep.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_binder.h"
#include "sql/sql_lexer.h"

#define DF_SQL_MAX_VIEW_DEPTH 16

/* A bound FROM item: its plan and per-column hidden flags (USING duplicates). */
typedef struct bfrom {
    df_lnode *node;     /* plan producing the columns */
    bool *hidden;       /* per column (arena), or NULL */
} bfrom;

static df_lnode *bind_setexpr(binder *b, const ast_setexpr *s);
static df_errkind bind_tableref(binder *b, const ast_tableref *r, bfrom *out);

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static df_errkind add_dep(binder *b, const char *name) {
    if (b->view_depth > 0) return DF_OK;
    for (int32_t i = 0; i < b->ndeps; i++)
        if (df_ascii_casecmp(b->deps[i], name) == 0) return DF_OK;
    if (b->ndeps == b->cap_deps) {
        int32_t ncap = b->cap_deps ? b->cap_deps * 2 : 8;
        const char **n = df__lplan_alloc(b->plan, (size_t)ncap * sizeof *n);
        if (!n) return DF_OOM(b->err);
        if (b->ndeps) df__memcpy(n, b->deps, (size_t)b->ndeps * sizeof *n);
        b->deps = n;
        b->cap_deps = ncap;
    }
    const char *c = df__bind_strdup(b, name);
    if (!c) return DF_ERR_OUT_OF_MEMORY;
    b->deps[b->ndeps++] = c;
    return DF_OK;
}

static df_lnode *new_node(binder *b, df_lnode_kind kind, int32_t nin, df_lnode *const *in, int32_t ncols) {
    return df__lnode_new(b->plan, kind, nin, in, ncols, b->err);
}

/* A projection of column refs renaming qualifier and/or names (subquery aliases). */
static df_lnode *rename_node(binder *b, df_lnode *in, const char *qualifier, int32_t nnames, char *const *names,
                             int32_t pos) {
    if (nnames > 0 && nnames != in->ncols) { /* DataFusion: one alias per column */
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "%d column aliases given for %d columns", nnames, in->ncols);
        return NULL;
    }
    df_lnode *p = new_node(b, DF_LN_PROJECT, 1, &in, in->ncols);
    if (!p) return NULL;
    p->u.project.exprs = df__lplan_alloc(b->plan, (size_t)(in->ncols ? in->ncols : 1) * sizeof(df_expr *));
    if (!p->u.project.exprs) return df__bind_oom(b);
    for (int32_t i = 0; i < in->ncols; i++) {
        p->u.project.exprs[i] = df__expr_column(b->plan, i, &in->cols[i], b->err);
        if (!p->u.project.exprs[i]) return NULL;
        p->cols[i] = in->cols[i];
        p->cols[i].qualifier = qualifier;
        if (i < nnames) p->cols[i].name = names[i];
    }
    return p;
}

static df_lnode *make_scan(binder *b, df_table_provider *prov, const char *table, const char *qualifier) {
    const df_schema *s = prov->schema;
    df_lnode *n = new_node(b, DF_LN_SCAN, 0, NULL, s->nfields);
    if (!n) return NULL;
    n->u.scan.provider = prov;
    n->u.scan.table = df__bind_strdup(b, table);
    n->u.scan.nproj = s->nfields;
    n->u.scan.proj = df__lplan_alloc(b->plan, (size_t)(s->nfields ? s->nfields : 1) * sizeof(int32_t));
    n->u.scan.fetch = -1;
    if (!n->u.scan.table || !n->u.scan.proj) return df__bind_oom(b);
    for (int32_t i = 0; i < s->nfields; i++) {
        n->u.scan.proj[i] = i;
        n->cols[i].name = df__bind_strdup(b, s->fields[i].name);
        n->cols[i].qualifier = qualifier;
        n->cols[i].type = df__bind_keep(b, df_type_retain(s->fields[i].type));
        n->cols[i].nullable = s->fields[i].nullable;
        if (!n->cols[i].name || !n->cols[i].type) return NULL;
    }
    return n;
}

static void release_provider(void *p) { df_table_provider_release(p); }

/* Evaluates a LIMIT/OFFSET expression to a non-negative integer (-1 for NULL / ALL). */
static df_errkind bind_count(binder *b, const ast_expr *e, const char *what, int64_t *out) {
    bscope empty = {0};
    bctx ctx = {.scope = &empty, .clause = what};
    df_expr *x = df__bind_expr(b, e, &ctx);
    if (!x) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    if (!df_type_is_integer(x->type) && x->type->id != DF_TYPE_NULL)
        return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s must be an integer", what);
    df_scalar v = {0};
    DF_TRY(df__bind_eval_const(b, x, &v));
    bool null = v.is_null || v.type->id == DF_TYPE_NULL;
    int64_t n = df_type_is_unsigned_integer(v.type) ? (int64_t)DF_MIN(v.v.u64, (uint64_t)INT64_MAX) : v.v.i64;
    df_scalar_clear(&v);
    if (null) {
        *out = -1;
        return DF_OK;
    }
    if (n < 0) return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s must not be negative", what);
    *out = n;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* FROM                                                                      */

/*
 * A CTE reference or a view binds its query where it is named, so chains of
 * them (c2 reads c1, c1 reads c0, ...) nest in the binder's recursion and in
 * the plan although the parser saw them side by side: their heights add up
 * and are held to DF_SQL_MAX_HEIGHT.  When it returns true the caller binds
 * and then takes q->height off b->nest again; on false nothing was added.
 */
static bool enter_nested(binder *b, const ast_query *q, int32_t pos) {
    if ((int64_t)b->nest + q->height > DF_SQL_MAX_HEIGHT) {
        df__bind_error(b, DF_ERR_SQL_TOO_COMPLEX, pos, "CTEs or views are nested more than %d levels deep",
                       DF_SQL_MAX_HEIGHT);
        return false;
    }
    b->nest += q->height;
    return true;
}

static df_errkind bind_view_sql(binder *b, const df_catalog_ref *ref, int32_t pos, df_lnode **out) {
    if (b->view_depth >= DF_SQL_MAX_VIEW_DEPTH)
        return df__bind_error(b, DF_ERR_LIMIT_EXCEEDED, pos, "views are nested more than %d levels deep (a cycle?)",
                          DF_SQL_MAX_VIEW_DEPTH);
    ast_query *q;
    const char *save_text = b->text;
    int32_t save_len = b->text_len;
    bcte *save_ctes = b->ctes;
    char *sql = df__bind_strdup(b, ref->sql);
    if (!sql) return DF_ERR_OUT_OF_MEMORY;
    df_errkind k = df__sql_parse(sql, strlen(sql), &b->plan->arena, &q, b->err);
    if (!k) {
        b->text = sql;
        b->text_len = (int32_t)strlen(sql);
        b->ctes = NULL;
        b->view_depth++;
        bool entered = enter_nested(b, q, pos);
        *out = entered ? df__bind_query(b, q) : NULL;
        if (entered) b->nest -= q->height;
        b->view_depth--;
        b->text = save_text;
        b->text_len = save_len;
        b->ctes = save_ctes;
        if (!*out) k = b->err ? b->err->kind : DF_ERR_INTERNAL;
    }
    if (k && b->err) {
        df_error_prefix(b->err, "in view `%.100s`", ref->name);
        df_error_set_offset(b->err, -1);
    }
    return k;
}

static df_lnode *cast_columns(binder *b, df_lnode *in, df_type *const *types, const df_lcol *names, int32_t pos);

/*
 * A CTE of WITH RECURSIVE whose body is `static UNION [ALL] recursive`: the
 * static term is bound first, then the recursive term with references to
 * the CTE reading a work table of the static term's columns.  *done is
 * false when the recursive term never names the CTE (then it is an ordinary
 * CTE).  b->ctes is the scope after the CTE itself.
 */
static df_errkind berr_of(binder *b) { return b->err && b->err->kind ? b->err->kind : DF_ERR_INTERNAL; }

static df_errkind bind_recursive_cte(binder *b, bcte *f, df_lnode **out) {
    const ast_query *q = f->cte->query;
    const ast_setexpr *u = q->body;
    *out = NULL;
    df_lnode *st = bind_setexpr(b, u->left);
    if (!st) return berr_of(b);
    int32_t n = st->ncols;
    if (f->cte->ncols > n) {
        return df__bind_error(b, DF_ERR_SQL_TYPE, f->cte->pos,
                              "source table contains %d columns but %d names given as column alias", n, f->cte->ncols);
    }
    df_lnode *wt = new_node(b, DF_LN_WORKTABLE, 0, NULL, n);
    if (!wt) return berr_of(b);
    for (int32_t i = 0; i < n; i++) {
        wt->cols[i] = st->cols[i];
        wt->cols[i].qualifier = NULL;
        wt->cols[i].nullable = true; /* later iterations may produce NULLs */
        if (i < f->cte->ncols) wt->cols[i].name = f->cte->cols[i];
    }
    wt->u.recursive.id = ++b->nrec;
    f->worktable = wt;
    f->worktable_refs = 0;
    df_lnode *rt = bind_setexpr(b, u->right);
    f->worktable = NULL;
    if (!rt) return berr_of(b);
    if (f->worktable_refs == 0) return DF_OK;
    if (rt->ncols != n)
        return df__bind_error(b, DF_ERR_SQL_TYPE, u->pos, "the terms of a recursive CTE have %d and %d columns", n,
                              rt->ncols);
    df_type **types = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof *types);
    if (!types) return DF_OOM(b->err);
    for (int32_t i = 0; i < n; i++) types[i] = wt->cols[i].type;
    st = cast_columns(b, st, types, wt->cols, u->pos);
    rt = st ? cast_columns(b, rt, types, wt->cols, u->pos) : NULL;
    if (!rt) return berr_of(b);
    df_lnode *ins[2] = {st, rt};
    df_lnode *r = new_node(b, DF_LN_RECURSIVE, 2, ins, n);
    if (!r) return berr_of(b);
    for (int32_t i = 0; i < n; i++) {
        r->cols[i] = wt->cols[i];
        r->cols[i].nullable = st->cols[i].nullable || rt->cols[i].nullable;
    }
    r->u.recursive.id = wt->u.recursive.id;
    r->u.recursive.distinct = !u->all;
    *out = r;
    return DF_OK;
}

static df_errkind bind_cte_ref(binder *b, bcte *f, const ast_tableref *r, bfrom *out) {
    if (f->binding && f->worktable) {
        if (f->worktable_refs++)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, r->pos,
                                  "multiple recursive references to the same CTE are not supported");
        const char *qual = r->alias ? r->alias : f->cte->name;
        df_lnode *n = rename_node(b, f->worktable, qual, 0, NULL, r->pos);
        if (n && r->ncol_aliases) n = rename_node(b, n, qual, r->ncol_aliases, r->col_aliases, r->pos);
        if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
        out->node = n;
        return DF_OK;
    }
    if (f->binding)
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, r->pos,
                              f->recursive ? "a recursive CTE may name itself only in the recursive term of a UNION"
                                           : "a CTE cannot name itself outside WITH RECURSIVE");
    bcte *save = b->ctes;
    b->ctes = f->next;
    f->binding = true;
    bool entered = enter_nested(b, f->cte->query, r->pos);
    df_lnode *n = NULL;
    const ast_query *cq = f->cte->query;
    df_errkind rk = DF_OK;
    if (entered && f->recursive && cq->body->kind == AS_SETOP && cq->body->op == ASO_UNION && !cq->nctes &&
        !cq->norder && !cq->limit && !cq->offset) {
        /* The CTE is visible to its own recursive term. */
        b->ctes = f;
        rk = bind_recursive_cte(b, f, &n);
        b->ctes = f->next;
    }
    if (entered && !rk && !n) n = df__bind_query(b, f->cte->query);
    if (entered) b->nest -= f->cte->query->height;
    f->binding = false;
    b->ctes = save;
    if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    if (f->cte->ncols && f->cte->ncols < n->ncols)
        return df__bind_error(b, DF_ERR_SQL_TYPE, f->cte->pos,
                              "source table contains %d columns but only %d names given as column alias", n->ncols,
                              f->cte->ncols);
    const char *qual = r->alias ? r->alias : f->cte->name;
    n = rename_node(b, n, qual, f->cte->ncols, f->cte->cols, r->pos);
    if (n && r->ncol_aliases) n = rename_node(b, n, qual, r->ncol_aliases, r->col_aliases, r->pos);
    if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    out->node = n;
    return DF_OK;
}

static df_errkind bind_named(binder *b, const ast_tableref *r, bfrom *out) {
    const ast_name *nm = &r->name;
    const char *table = nm->parts[nm->n - 1];
    if (nm->n == 1) {
        for (bcte *f = b->ctes; f; f = f->next)
            if (strcmp(f->cte->name, table) == 0) return bind_cte_ref(b, f, r, out);
    } else {
        /* Only the default catalog/schema qualifiers are accepted. */
        bool ok = (nm->n == 2 && strcmp(nm->parts[0], "public") == 0) ||
                  (nm->n == 3 && strcmp(nm->parts[0], "datafusion") == 0 && strcmp(nm->parts[1], "public") == 0);
        if (!ok)
            return df__bind_error(b, DF_ERR_SQL_UNKNOWN_TABLE, r->pos, "table `%s.%s` not found", nm->parts[nm->n - 2],
                              table);
    }
    df_catalog_ref ref;
    DF_TRY(df_catalog_lookup(b->cat, table, &ref, b->err));
    if (ref.kind == DF_CATALOG_NONE) return df__bind_error(b, DF_ERR_SQL_UNKNOWN_TABLE, r->pos, "table `%s` not found", table);
    df_errkind k = add_dep(b, ref.name);
    const char *qual = r->alias ? r->alias : table;
    df_lnode *n = NULL;
    if (!k && ref.kind == DF_CATALOG_TABLE) {
        df_table_provider *prov = ref.provider;
        ref.provider = NULL;
        k = df__lplan_defer(b->plan, release_provider, prov, b->err);
        if (!k) {
            n = make_scan(b, prov, ref.name, qual);
            if (!n) k = b->err ? b->err->kind : DF_ERR_INTERNAL;
        }
    } else if (!k && ref.plan) {
        k = df__lplan_depend(b->plan, ref.plan, b->err);
        if (!k) n = ref.plan->root;
    } else if (!k) {
        k = bind_view_sql(b, &ref, r->pos, &n);
    }
    df_catalog_ref_clear(&ref);
    if (k) return k;
    n = rename_node(b, n, df__bind_strdup(b, qual), r->ncol_aliases, r->col_aliases, r->pos);
    if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    out->node = n;
    return DF_OK;
}

static df_errkind bind_subquery_ref(binder *b, const ast_tableref *r, bfrom *out) {
    bcte *save = b->ctes;
    df_lnode *n = df__bind_query(b, r->query);
    b->ctes = save;
    if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    n = rename_node(b, n, r->alias, r->ncol_aliases, r->col_aliases, r->pos);
    if (!n) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    out->node = n;
    return DF_OK;
}

/* Splits a bound ON condition into equi-keys and a residual over left ++ right. */
static df_errkind split_join_condition(binder *b, df_expr *cond, int32_t nleft, int32_t nright, df_lnode *j) {
    int32_t width = nleft + nright;
    df_expr **conj = &cond;
    int32_t nconj = 1;
    if (cond->kind == DF_EX_AND) {
        conj = cond->args;
        nconj = cond->nargs;
    }
    j->u.join.lkeys = df__lplan_alloc(b->plan, (size_t)nconj * sizeof(df_expr *));
    j->u.join.rkeys = df__lplan_alloc(b->plan, (size_t)nconj * sizeof(df_expr *));
    j->u.join.null_equal = df__lplan_alloc(b->plan, (size_t)nconj * sizeof(bool));
    df_expr **rest = df__lplan_alloc(b->plan, (size_t)nconj * sizeof(df_expr *));
    bool *used = df__lplan_alloc(b->plan, (size_t)width + 1);
    int32_t *rmap = df__lplan_alloc(b->plan, (size_t)width * sizeof(int32_t) + 1);
    if (!j->u.join.lkeys || !j->u.join.rkeys || !j->u.join.null_equal || !rest || !used || !rmap)
        return DF_OOM(b->err);
    for (int32_t i = 0; i < width; i++) rmap[i] = i < nleft ? -1 : i - nleft;
    int32_t nrest = 0;
    for (int32_t c = 0; c < nconj; c++) {
        df_expr *e = conj[c];
        bool eq = e->kind == DF_EX_FUNC && (e->fn == DF_FN_EQ || e->fn == DF_FN_IS_NOT_DISTINCT);
        if (eq) {
            bool sides[2][2] = {{false, false}, {false, false}}; /* [arg][left,right] */
            for (int a = 0; a < 2; a++) {
                memset(used, 0, (size_t)width);
                df__expr_columns(e->args[a], used, width);
                for (int32_t i = 0; i < width; i++)
                    if (used[i]) sides[a][i < nleft ? 0 : 1] = true;
            }
            int l = -1;
            if (sides[0][0] && !sides[0][1] && sides[1][1] && !sides[1][0]) l = 0;
            if (sides[1][0] && !sides[1][1] && sides[0][1] && !sides[0][0]) l = 1;
            if (l >= 0) {
                int32_t k = j->u.join.nkeys++;
                j->u.join.lkeys[k] = e->args[l];
                j->u.join.rkeys[k] = df__expr_remap(b->plan, e->args[1 - l], rmap, width, b->err);
                if (!j->u.join.rkeys[k]) return b->err->kind;
                j->u.join.null_equal[k] = e->fn == DF_FN_IS_NOT_DISTINCT;
                continue;
            }
        }
        rest[nrest++] = e;
    }
    if (nrest == 1) j->u.join.filter = rest[0];
    if (nrest > 1) {
        j->u.join.filter = df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, nrest, rest, b->err);
        if (!j->u.join.filter) return b->err->kind;
    }
    return DF_OK;
}

df_errkind df__bind_join_condition(binder *b, df_expr *cond, int32_t nleft, int32_t nright, df_lnode *j) {
    return split_join_condition(b, cond, nleft, nright, j);
}

static df_join_type join_type(ast_join_type t) {
    switch (t) {
    case AJ_LEFT: return DF_JOIN_LEFT;
    case AJ_RIGHT: return DF_JOIN_RIGHT;
    case AJ_FULL: return DF_JOIN_FULL;
    case AJ_LEFT_SEMI: return DF_JOIN_LEFT_SEMI;
    case AJ_LEFT_ANTI: return DF_JOIN_LEFT_ANTI;
    case AJ_RIGHT_SEMI: return DF_JOIN_RIGHT_SEMI;
    case AJ_RIGHT_ANTI: return DF_JOIN_RIGHT_ANTI;
    default: return DF_JOIN_INNER;
    }
}

/* Creates the join node's output columns from its inputs. */
static df_lnode *make_join_node(binder *b, df_join_type t, df_lnode *l, df_lnode *r) {
    df_lnode *in[2] = {l, r};
    int32_t ncols = t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_LEFT_ANTI     ? l->ncols
                    : t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI ? r->ncols
                    : t == DF_JOIN_LEFT_MARK                             ? l->ncols + 1
                                                                         : l->ncols + r->ncols;
    df_lnode *j = new_node(b, DF_LN_JOIN, 2, in, ncols);
    if (!j) return NULL;
    j->u.join.type = t;
    if (t == DF_JOIN_LEFT_MARK) {
        df__memcpy(j->cols, l->cols, (size_t)l->ncols * sizeof(df_lcol));
        j->cols[l->ncols] = (df_lcol){.name = "mark", .type = df_type_bool(), .nullable = true};
        return j;
    }
    if (t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI) {
        df__memcpy(j->cols, r->cols, (size_t)r->ncols * sizeof(df_lcol));
        return j;
    }
    df__memcpy(j->cols, l->cols, (size_t)l->ncols * sizeof(df_lcol));
    if (ncols > l->ncols) df__memcpy(j->cols + l->ncols, r->cols, (size_t)r->ncols * sizeof(df_lcol));
    for (int32_t i = 0; i < ncols; i++) {
        bool left = i < l->ncols;
        if ((left && (t == DF_JOIN_RIGHT || t == DF_JOIN_FULL)) || (!left && (t == DF_JOIN_LEFT || t == DF_JOIN_FULL)))
            j->cols[i].nullable = true;
    }
    return j;
}

df_lnode *df__bind_join_node(binder *b, df_join_type t, df_lnode *l, df_lnode *r) { return make_join_node(b, t, l, r); }

static int32_t find_visible(const df_lnode *n, const bool *hidden, const char *name) {
    int32_t found = -1;
    for (int32_t i = 0; i < n->ncols; i++) {
        if (hidden && hidden[i]) continue;
        if (strcmp(n->cols[i].name, name) == 0) {
            if (found >= 0) return -2;
            found = i;
        }
    }
    return found;
}

static df_errkind bind_join(binder *b, const ast_tableref *r, bfrom *out) {
    bfrom L = {0}, R = {0};
    DF_TRY(bind_tableref(b, r->left, &L));
    if (r->right->kind == AT_SUBQUERY && r->right->lateral) {
        if (r->nusing || r->natural)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, r->pos, "LATERAL joins need an ON condition");
        DF_TRY(df__bind_lateral(b, join_type(r->join), r->right, r->on, &L.node, &L.hidden));
        *out = L;
        return DF_OK;
    }
    DF_TRY(bind_tableref(b, r->right, &R));
    if (r->on && df__ast_has_subquery(r->on)) {
        /* Subqueries in ON are joined onto the left input (hidden columns) before the join. */
        ast_expr *on = r->on;
        DF_TRY(df__bind_scalar_subqueries(b, &on, 1, &L.node, &L.hidden));
    }
    df_join_type t = join_type(r->join);
    int32_t nl = L.node->ncols, nr = R.node->ncols, width = nl + nr;
    df_lnode *j = make_join_node(b, t, L.node, R.node);
    bool *hidden = df__lplan_alloc(b->plan, (size_t)width + 1);
    if (!j || !hidden) return b->err && b->err->kind ? b->err->kind : DF_OOM(b->err);
    for (int32_t i = 0; i < nl; i++) hidden[i] = L.hidden && L.hidden[i];
    for (int32_t i = 0; i < nr; i++) hidden[nl + i] = R.hidden && R.hidden[i];
    /* Combined scope for ON: every column of both sides. */
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)width * sizeof(df_lcol) + 1);
    if (!cols) return DF_OOM(b->err);
    df__memcpy(cols, L.node->cols, (size_t)nl * sizeof(df_lcol));
    df__memcpy(cols + nl, R.node->cols, (size_t)nr * sizeof(df_lcol));
    bscope scope = {.ncols = width, .cols = cols, .hidden = hidden};
    int32_t nusing = r->nusing;
    char **using_cols = r->using_cols;
    if (r->natural) {
        using_cols = df__lplan_alloc(b->plan, (size_t)(nl ? nl : 1) * sizeof(char *));
        if (!using_cols) return DF_OOM(b->err);
        nusing = 0;
        for (int32_t i = 0; i < nl; i++)
            if (!hidden[i] && find_visible(R.node, R.hidden, L.node->cols[i].name) >= 0)
                using_cols[nusing++] = (char *)L.node->cols[i].name;
    }
    if (nusing > 0) {
        df_expr **eqs = df__lplan_alloc(b->plan, (size_t)nusing * sizeof(df_expr *));
        if (!eqs) return DF_OOM(b->err);
        for (int32_t u = 0; u < nusing; u++) {
            int32_t li = find_visible(L.node, L.hidden, using_cols[u]);
            int32_t ri = find_visible(R.node, R.hidden, using_cols[u]);
            if (li < 0 || ri < 0)
                return df__bind_error(b, DF_ERR_SQL_UNKNOWN_COLUMN, r->pos, "USING column `%s` is not on both sides",
                                  using_cols[u]);
            df_expr *le = df__expr_column(b->plan, li, &cols[li], b->err);
            df_expr *re = df__expr_column(b->plan, nl + ri, &cols[nl + ri], b->err);
            if (!le || !re) return b->err->kind;
            df_type *ct = df__bind_keep(b, df__sqlt_comparison(le->type, re->type));
            if (!ct) return df__bind_error(b, DF_ERR_SQL_TYPE, r->pos, "USING column `%s` types differ", using_cols[u]);
            df_expr *args[2] = {df__bind_coerce(b, le, ct, r->pos), df__bind_coerce(b, re, ct, r->pos)};
            if (!args[0] || !args[1]) return b->err->kind;
            eqs[u] = df__expr_func(b->plan, DF_FN_EQ, df_type_bool(), true, 2, args, b->err);
            if (!eqs[u]) return b->err->kind;
            if (t != DF_JOIN_RIGHT_SEMI && t != DF_JOIN_RIGHT_ANTI) hidden[nl + ri] = true;
        }
        df_expr *cond = nusing == 1 ? eqs[0] : df__expr_new(b->plan, DF_EX_AND, df_type_bool(), true, nusing, eqs, b->err);
        if (!cond) return b->err->kind;
        DF_TRY(split_join_condition(b, cond, nl, nr, j));
    } else if (r->on) {
        bctx ctx = {.scope = &scope, .clause = "JOIN condition"};
        df_expr *cond = df__bind_condition(b, r->on, &ctx);
        if (!cond) return b->err->kind;
        DF_TRY(split_join_condition(b, cond, nl, nr, j));
    } else if (t != DF_JOIN_INNER) {
        return df__bind_error(b, DF_ERR_SQL_SYNTAX, r->pos, "this join needs an ON or USING condition");
    }
    out->node = j;
    if (t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_LEFT_ANTI)
        out->hidden = L.hidden;
    else if (t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI)
        out->hidden = R.hidden;
    else
        out->hidden = hidden;
    return DF_OK;
}

static df_errkind bind_tableref(binder *b, const ast_tableref *r, bfrom *out) {
    memset(out, 0, sizeof *out);
    switch (r->kind) {
    case AT_NAMED: return bind_named(b, r, out);
    case AT_SUBQUERY: return bind_subquery_ref(b, r, out);
    case AT_JOIN: return bind_join(b, r, out);
    case AT_FUNCTION:
        return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, r->pos, "table functions are not supported yet");
    }
    return df__bind_error(b, DF_ERR_INTERNAL, r->pos, "unknown FROM item");
}

/* FROM a, b, c: left-deep cross joins. */
static df_errkind bind_from(binder *b, const ast_select *s, bfrom *out) {
    memset(out, 0, sizeof *out);
    if (s->nfrom == 0) {
        out->node = new_node(b, DF_LN_EMPTY, 0, NULL, 0);
        if (!out->node) return b->err->kind;
        out->node->u.empty.one_row = true;
        return DF_OK;
    }
    DF_TRY(bind_tableref(b, s->from[0], out));
    for (int32_t i = 1; i < s->nfrom; i++) {
        bfrom next;
        if (s->from[i]->kind == AT_SUBQUERY && s->from[i]->lateral) {
            DF_TRY(df__bind_lateral(b, DF_JOIN_INNER, s->from[i], NULL, &out->node, &out->hidden));
            continue;
        }
        DF_TRY(bind_tableref(b, s->from[i], &next));
        df_lnode *j = make_join_node(b, DF_JOIN_INNER, out->node, next.node);
        int32_t nl = out->node->ncols, nr = next.node->ncols;
        bool *hidden = df__lplan_alloc(b->plan, (size_t)(nl + nr) + 1);
        if (!j || !hidden) return b->err && b->err->kind ? b->err->kind : DF_OOM(b->err);
        for (int32_t c = 0; c < nl; c++) hidden[c] = out->hidden && out->hidden[c];
        for (int32_t c = 0; c < nr; c++) hidden[nl + c] = next.hidden && next.hidden[c];
        out->node = j;
        out->hidden = hidden;
    }
    return DF_OK;
}

df_errkind df__bind_from_items(binder *b, const ast_select *s, df_lnode **node, bool **hidden) {
    bfrom f;
    DF_TRY(bind_from(b, s, &f));
    *node = f.node;
    *hidden = f.hidden;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* SELECT                                                                    */

/* The select-list item an ORDER BY / GROUP BY position or alias refers to, or NULL. */
static const ast_select_item *item_by_alias(const ast_select *s, const ast_expr *e) {
    if (e->kind != AE_COLUMN || e->name.n != 1) return NULL;
    for (int32_t i = 0; i < s->nitems; i++)
        if (s->items[i].alias && strcmp(s->items[i].alias, e->name.parts[0]) == 0) return &s->items[i];
    return NULL;
}

static bool scope_has_column(const bscope *sc, const char *name) {
    for (int32_t i = 0; i < sc->ncols; i++)
        if (strcmp(sc->cols[i].name, name) == 0 && !(sc->hidden && sc->hidden[i])) return true;
    return false;
}

/*
 * HAVING / QUALIFY may name select-list aliases (as DataFusion: only aliases
 * that are not also columns of the FROM scope).  Returns e with such column
 * references replaced by the aliased expression (the same node, so window
 * calls bound from the select list are found again); unchanged subtrees are
 * shared.  Nested queries are not entered.  NULL on OOM.
 */
static ast_expr *subst_aliases(binder *b, ast_expr *e, const ast_select *s, const bscope *sc, bool *oom) {
    if (!e || *oom) return e;
    if (e->kind == AE_COLUMN && e->name.n == 1 && !scope_has_column(sc, e->name.parts[0])) {
        const ast_select_item *it = item_by_alias(s, e);
        if (it && it->expr->kind != AE_STAR) return it->expr;
        return e;
    }
    ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    ast_expr *nops[4];
    bool changed = false;
    for (int k = 0; k < 4; k++) changed |= (nops[k] = subst_aliases(b, ops[k], s, sc, oom)) != ops[k];
    ast_expr *nf = subst_aliases(b, e->filter, s, sc, oom);
    changed |= nf != e->filter;
    ast_expr **nl = e->list, **nl2 = e->list2;
    for (int32_t i = 0; i < e->nlist; i++) {
        ast_expr *x = e->list ? subst_aliases(b, e->list[i], s, sc, oom) : NULL;
        ast_expr *y = e->list2 ? subst_aliases(b, e->list2[i], s, sc, oom) : NULL;
        if (*oom) return e;
        if (e->list && x != e->list[i]) {
            if (nl == e->list) {
                if (!(nl = df__lplan_alloc(b->plan, (size_t)e->nlist * sizeof *nl))) goto oom;
                df__memcpy(nl, e->list, (size_t)e->nlist * sizeof *nl);
            }
            nl[i] = x;
            changed = true;
        }
        if (e->list2 && y != e->list2[i]) {
            if (nl2 == e->list2) {
                if (!(nl2 = df__lplan_alloc(b->plan, (size_t)e->nlist * sizeof *nl2))) goto oom;
                df__memcpy(nl2, e->list2, (size_t)e->nlist * sizeof *nl2);
            }
            nl2[i] = y;
            changed = true;
        }
    }
    if (!changed || *oom) return e;
    ast_expr *c = df__lplan_alloc(b->plan, sizeof *c);
    if (!c) goto oom;
    *c = *e;
    c->a = nops[0], c->b = nops[1], c->c = nops[2], c->d = nops[3];
    c->filter = nf;
    c->list = nl;
    c->list2 = nl2;
    return c;
oom:
    *oom = true;
    df__bind_oom(b);
    return e;
}

/* Binds the GROUP BY keys (positions, aliases, expressions) over the FROM scope. */
static df_errkind bind_group_keys(binder *b, const ast_select *s, const bscope *scope, bagg *ag, int32_t *key_of) {
    int32_t cap = s->group_all ? s->nitems : s->ngroup;
    ag->group = df__lplan_alloc(b->plan, (size_t)(cap ? cap : 1) * sizeof(df_expr *));
    ag->group_cols = df__lplan_alloc(b->plan, (size_t)(cap ? cap : 1) * sizeof(df_lcol));
    if (!ag->group || !ag->group_cols) return DF_OOM(b->err);
    bctx pre = {.scope = scope, .clause = "GROUP BY"};
    for (int32_t i = 0; i < cap; i++) {
        const ast_expr *e;
        if (key_of) key_of[i] = -1;
        if (s->group_all) {
            e = s->items[i].expr;
            if (e->kind == AE_STAR || df__ast_has_aggregate(e)) continue;
        } else {
            e = s->group[i];
            if (e->kind == AE_INTEGER) {
                int64_t k = strtoll(e->text, NULL, 10);
                if (k < 1 || k > s->nitems || s->items[k - 1].expr->kind == AE_STAR)
                    return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "GROUP BY position %" PRId64 " is not in the select list", k);
                e = s->items[k - 1].expr;
            } else if (e->kind == AE_UNARY && e->op == TK_MINUS && e->a->kind == AE_INTEGER) {
                /* A negative integer is a position too (as DataFusion and DuckDB read it), never in range. */
                return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "GROUP BY position -%s is not in the select list",
                                      e->a->text);
            } else if (e->kind == AE_COLUMN && e->name.n == 1 && !scope_has_column(scope, e->name.parts[0])) {
                const ast_select_item *it = item_by_alias(s, e);
                if (it) e = it->expr;
            }
        }
        if (df__ast_has_aggregate(e))
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "aggregate functions are not allowed in GROUP BY");
        df_expr *x = df__bind_expr(b, e, &pre);
        if (!x) return b->err->kind;
        int32_t dup = -1;
        for (int32_t g = 0; g < ag->ngroup && dup < 0; g++)
            if (df__expr_equal(ag->group[g], x)) dup = g;
        if (key_of) key_of[i] = dup >= 0 ? dup : ag->ngroup;
        if (dup >= 0) continue;
        df_lcol *c = &ag->group_cols[ag->ngroup];
        if (x->kind == DF_EX_COLUMN) {
            *c = scope->cols[x->column];
        } else {
            c->name = df__bind_display(b, x);
            if (!c->name) return b->err->kind;
            c->qualifier = NULL;
            c->type = x->type;
            c->nullable = x->nullable;
        }
        ag->group[ag->ngroup++] = x;
    }
    return DF_OK;
}

/* Phase 1: records every aggregate call (outermost) in e. */
static df_errkind collect_aggs(binder *b, const ast_expr *e, bctx *ctx) {
    if (!e) return DF_OK;
    if (df__bind_agg_fn(e) >= 0) {
        int32_t idx;
        return df__bind_aggregate_call(b, e, ctx, &idx);
    }
    if (e->kind == AE_FUNC && e->over) {
        /* Aggregates inside a window call's arguments, PARTITION BY and ORDER BY (sum(sum(x)) OVER ...). */
        for (int32_t i = 0; i < e->nlist; i++) DF_TRY(collect_aggs(b, e->list[i], ctx));
        for (int32_t i = 0; i < e->over->npartition; i++) DF_TRY(collect_aggs(b, e->over->partition[i], ctx));
        for (int32_t i = 0; i < e->over->norder; i++) DF_TRY(collect_aggs(b, e->over->order[i].expr, ctx));
        return DF_OK;
    }
    const ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    for (int k = 0; k < 4; k++) DF_TRY(collect_aggs(b, ops[k], ctx));
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list) DF_TRY(collect_aggs(b, e->list[i], ctx));
        if (e->list2) DF_TRY(collect_aggs(b, e->list2[i], ctx));
    }
    return DF_OK;
}

typedef struct proj_list {
    int32_t n, cap;         /* expressions */
    df_expr **exprs;
    df_lcol *cols;          /* output columns */
} proj_list;

static df_errkind proj_push(binder *b, proj_list *p, df_expr *e, const char *name, const char *qualifier) {
    if (p->n == p->cap) {
        int32_t ncap = p->cap ? p->cap * 2 : 16;
        df_expr **ne = df__lplan_alloc(b->plan, (size_t)ncap * sizeof *ne);
        df_lcol *nc = df__lplan_alloc(b->plan, (size_t)ncap * sizeof *nc);
        if (!ne || !nc) return DF_OOM(b->err);
        if (p->n) {
            df__memcpy(ne, p->exprs, (size_t)p->n * sizeof *ne);
            df__memcpy(nc, p->cols, (size_t)p->n * sizeof *nc);
        }
        p->exprs = ne;
        p->cols = nc;
        p->cap = ncap;
    }
    p->exprs[p->n] = e;
    p->cols[p->n] = (df_lcol){.name = name, .qualifier = qualifier, .type = e->type, .nullable = e->nullable};
    p->n++;
    return DF_OK;
}

/* Expands `*` / `t.*` over the scope. */
static df_errkind expand_star(binder *b, const ast_expr *e, const bscope *scope, proj_list *p) {
    const char *qual = e->name.n ? e->name.parts[e->name.n - 1] : NULL;
    int32_t added = 0;
    for (int32_t i = 0; i < scope->ncols; i++) {
        if (qual) {
            const char *q = scope->cols[i].qualifier;
            if (!q || (strcmp(q, qual) != 0 && df_ascii_casecmp(q, qual) != 0)) continue;
        } else if (scope->hidden && scope->hidden[i]) {
            continue;
        }
        df_expr *c = df__expr_column(b->plan, i, &scope->cols[i], b->err);
        if (!c) return b->err->kind;
        DF_TRY(proj_push(b, p, c, scope->cols[i].name, scope->cols[i].qualifier));
        added++;
    }
    if (qual && added == 0) return df__bind_error(b, DF_ERR_SQL_UNKNOWN_TABLE, e->pos, "table `%s` is not in FROM", qual);
    return DF_OK;
}

/* Output name of a select item. */
static const char *item_name(binder *b, const ast_select_item *it, const df_expr *x) {
    if (it->alias) return it->alias;
    if (x->kind == DF_EX_COLUMN) return x->name;
    return df__bind_display(b, x);
}

/* ORDER BY key over the projection: position, alias/name, select expression, or an extra column. */
static df_errkind bind_order_key(binder *b, const ast_select *s, const ast_order *o, const bctx *in,
                                 proj_list *p, int32_t nvisible, bool distinct, df_sort_key *key) {
    const ast_expr *e = o->expr;
    int32_t col = -1;
    if (e->kind == AE_INTEGER) {
        int64_t k = strtoll(e->text, NULL, 10);
        if (k < 1 || k > nvisible)
            return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "ORDER BY position %" PRId64 " is not in the select list", k);
        col = (int32_t)(k - 1);
    } else if (e->kind == AE_COLUMN && e->name.n == 1) {
        for (int32_t i = 0; i < s->nitems && col < 0; i++)
            if (s->items[i].alias && strcmp(s->items[i].alias, e->name.parts[0]) == 0) {
                /* Find the output column of that item by name. */
                for (int32_t c = 0; c < nvisible; c++)
                    if (strcmp(p->cols[c].name, s->items[i].alias) == 0) {
                        col = c;
                        break;
                    }
            }
    }
    if (col < 0) {
        df_expr *x = df__bind_expr(b, e, in);
        if (!x) return b->err->kind;
        for (int32_t c = 0; c < p->n; c++)
            if (df__expr_equal(p->exprs[c], x)) {
                col = c;
                break;
            }
        if (col < 0) {
            if (distinct)
                return df__bind_error(b, DF_ERR_SQL_TYPE, e->pos,
                                  "for SELECT DISTINCT, ORDER BY expressions must appear in the select list");
            const char *name = x->kind == DF_EX_COLUMN ? x->name : df__bind_display(b, x);
            if (!name) return b->err->kind;
            DF_TRY(proj_push(b, p, x, name, x->kind == DF_EX_COLUMN ? x->qualifier : NULL));
            col = p->n - 1;
        }
    }
    key->desc = o->desc;
    key->nulls_first = o->nulls == 1 || (o->nulls == 0 && o->desc);
    key->expr = (df_expr *)(intptr_t)col; /* resolved to a column reference by the caller */
    return DF_OK;
}

static df_lnode *make_project(binder *b, df_lnode *in, const proj_list *p, int32_t n) {
    df_lnode *node = new_node(b, DF_LN_PROJECT, 1, &in, n);
    if (!node) return NULL;
    node->u.project.exprs = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(df_expr *));
    if (!node->u.project.exprs) return df__bind_oom(b);
    df__memcpy(node->u.project.exprs, p->exprs, (size_t)n * sizeof(df_expr *));
    df__memcpy(node->cols, p->cols, (size_t)n * sizeof(df_lcol));
    return node;
}

/* Aggregate node grouping by every column of `in` (DISTINCT). */
df_lnode *df__bind_project_node(binder *b, df_lnode *in, df_expr **exprs, const df_lcol *cols, int32_t n) {
    df_lnode *p = new_node(b, DF_LN_PROJECT, 1, &in, n);
    if (!p) return NULL;
    p->u.project.exprs = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(df_expr *));
    if (!p->u.project.exprs) return df__bind_oom(b);
    df__memcpy(p->u.project.exprs, exprs, (size_t)n * sizeof(df_expr *));
    df__memcpy(p->cols, cols, (size_t)n * sizeof(df_lcol));
    return p;
}

static df_lnode *make_distinct(binder *b, df_lnode *in) {
    df_lnode *a = new_node(b, DF_LN_AGGREGATE, 1, &in, in->ncols);
    if (!a) return NULL;
    a->u.agg.ngroup = in->ncols;
    a->u.agg.group = df__lplan_alloc(b->plan, (size_t)(in->ncols ? in->ncols : 1) * sizeof(df_expr *));
    if (!a->u.agg.group) return df__bind_oom(b);
    for (int32_t i = 0; i < in->ncols; i++) {
        a->u.agg.group[i] = df__expr_column(b->plan, i, &in->cols[i], b->err);
        if (!a->u.agg.group[i]) return NULL;
        a->cols[i] = in->cols[i];
    }
    return a;
}

static df_lnode *make_sort(binder *b, df_lnode *in, df_sort_key *keys, int32_t nkeys) {
    df_lnode *s = new_node(b, DF_LN_SORT, 1, &in, in->ncols);
    if (!s) return NULL;
    df__memcpy(s->cols, in->cols, (size_t)in->ncols * sizeof(df_lcol));
    s->u.sort.keys = keys;
    s->u.sort.nkeys = nkeys;
    s->u.sort.fetch = -1;
    for (int32_t i = 0; i < nkeys; i++) {
        int32_t col = (int32_t)(intptr_t)keys[i].expr;
        keys[i].expr = df__expr_column(b->plan, col, &in->cols[col], b->err);
        if (!keys[i].expr) return NULL;
    }
    return s;
}

/*
 * GROUPING SETS / ROLLUP / CUBE: the aggregate reads a UNION ALL with one
 * branch per set: the input columns (aggregate arguments see real values),
 * then each key's value or NULL when the set lacks it, then the set's mask
 * (bit k set: key k absent), which is one more group key so that equal
 * keys of different sets stay apart.  ag->group keeps the keys as bound
 * over the input (SELECT expressions match them); *agg_group receives the
 * aggregate's own keys over the union.
 */
static df_errkind bind_grouping_sets(binder *b, const ast_select *s, const int32_t *key_of, bagg *ag,
                                     df_lnode **node, df_expr ***agg_group) {
    df_lnode *in = *node;
    int32_t ni = in->ncols, m = ag->ngroup;
    if (m > 63) return df__bind_error(b, DF_ERR_SQL_TOO_COMPLEX, s->pos, "GROUPING SETS over more than 63 keys");
    uint64_t *masks = df__lplan_alloc(b->plan, (size_t)s->nsets * sizeof *masks);
    df_lnode **branches = df__lplan_alloc(b->plan, (size_t)s->nsets * sizeof *branches);
    if (!masks || !branches) return DF_OOM(b->err);
    uint64_t absent_any = 0;
    for (int32_t k = 0; k < s->nsets; k++) {
        uint64_t present = 0;
        for (int32_t j = 0; j < s->set_len[k]; j++) {
            int32_t g = key_of[s->sets[k][j]];
            if (g >= 0) present |= UINT64_C(1) << g;
        }
        masks[k] = ~present & ((UINT64_C(1) << m) - 1);
        absent_any |= masks[k];
    }
    for (int32_t k = 0; k < s->nsets; k++) {
        proj_list p = {0};
        for (int32_t i = 0; i < ni; i++) {
            df_expr *c = df__expr_column(b->plan, i, &in->cols[i], b->err);
            if (!c) return berr_of(b);
            DF_TRY(proj_push(b, &p, c, in->cols[i].name, in->cols[i].qualifier));
        }
        for (int32_t g = 0; g < m; g++) {
            df_expr *x = (masks[k] >> g) & 1 ? df__expr_null(b->plan, ag->group[g]->type, b->err) : ag->group[g];
            if (!x) return berr_of(b);
            DF_TRY(proj_push(b, &p, x, "__grouping_key", NULL));
            p.cols[p.n - 1].nullable = true;
        }
        df_scalar v = {.type = df_type_uint64(), .v.u64 = masks[k]};
        df_expr *id = df__expr_literal(b->plan, &v, b->err);
        if (!id) return berr_of(b);
        DF_TRY(proj_push(b, &p, id, "__grouping_id", NULL));
        if (!(branches[k] = make_project(b, in, &p, p.n))) return berr_of(b);
    }
    df_lnode *u = branches[0];
    if (s->nsets > 1) {
        u = new_node(b, DF_LN_UNION, s->nsets, branches, ni + m + 1);
        if (!u) return berr_of(b);
        df__memcpy(u->cols, branches[0]->cols, (size_t)(ni + m + 1) * sizeof(df_lcol));
    }
    df_expr **group = df__lplan_alloc(b->plan, (size_t)(m + 1) * sizeof *group);
    df_expr **keys = df__lplan_alloc(b->plan, (size_t)(m + 1) * sizeof *keys);
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(m + 1) * sizeof *cols);
    if (!group || !keys || !cols) return DF_OOM(b->err);
    for (int32_t g = 0; g <= m; g++) {
        if (!(group[g] = df__expr_column(b->plan, ni + g, &u->cols[ni + g], b->err))) return berr_of(b);
        keys[g] = g < m ? ag->group[g] : group[g];
        cols[g] = g < m ? ag->group_cols[g] : u->cols[ni + m];
        if (g < m && ((absent_any >> g) & 1)) cols[g].nullable = true;
    }
    ag->group = keys;
    ag->group_cols = cols;
    ag->nkeys = m;
    ag->grouping_id = m;
    ag->ngroup = m + 1;
    ag->nsets = s->nsets;
    ag->masks = masks;
    *node = u;
    *agg_group = group;
    return DF_OK;
}

df_expr *df__bind_grouping_call(binder *b, const ast_expr *call, const bctx *ctx) {
    bagg *ag = ctx->agg;
    if (call->nlist == 0 || call->star_arg) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "grouping() requires at least one argument (zero arguments given)");
        return NULL;
    }
    if (call->nlist > 31) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "grouping() takes at most 31 arguments");
        return NULL;
    }
    int32_t nkeys = ag->nsets ? ag->nkeys : ag->ngroup;
    int32_t *key = df__lplan_alloc(b->plan, (size_t)call->nlist * sizeof *key);
    if (!key) return df__bind_oom(b);
    bctx in = {.scope = ag->input, .clause = "grouping()"};
    for (int32_t i = 0; i < call->nlist; i++) {
        df_expr *x = df__bind_expr(b, call->list[i], &in);
        if (!x) return NULL;
        key[i] = -1;
        for (int32_t g = 0; g < nkeys && key[i] < 0; g++)
            if (df__expr_equal(ag->group[g], x)) key[i] = g;
        if (key[i] < 0) {
            char *d = df__bind_display(b, x);
            df__bind_error(b, DF_ERR_SQL_TYPE, call->list[i]->pos, "argument `%s` of grouping() is not in grouping columns",
                           d ? d : "?");
            return NULL;
        }
    }
    /* The value of each set: bit (n - 1 - i) set when argument i's key is absent. */
    int32_t nsets = ag->nsets;
    df_expr **args = df__lplan_alloc(b->plan, (size_t)(2 * nsets + 1) * sizeof *args);
    if (!args) return df__bind_oom(b);
    df_expr *id = NULL;
    if (nsets) {
        df_lcol col = ag->group_cols[ag->grouping_id];
        if (!(id = df__expr_column(b->plan, ag->grouping_id, &col, b->err))) return NULL;
    }
    for (int32_t k = 0; k < nsets; k++) {
        int32_t v = 0;
        for (int32_t i = 0; i < call->nlist; i++)
            if ((ag->masks[k] >> key[i]) & 1) v |= 1 << (call->nlist - 1 - i);
        df_scalar mv = {.type = df_type_uint64(), .v.u64 = ag->masks[k]};
        df_scalar vv = {.type = df_type_int32(), .v.i64 = v};
        df_expr *eq[2] = {id, df__expr_literal(b->plan, &mv, b->err)};
        if (!eq[1]) return NULL;
        args[2 * k] = df__expr_func(b->plan, DF_FN_EQ, df_type_bool(), false, 2, eq, b->err);
        args[2 * k + 1] = df__expr_literal(b->plan, &vv, b->err);
        if (!args[2 * k] || !args[2 * k + 1]) return NULL;
    }
    df_scalar zero = {.type = df_type_int32(), .v.i64 = 0};
    args[2 * nsets] = df__expr_literal(b->plan, &zero, b->err);
    if (!args[2 * nsets]) return NULL;
    if (!nsets) return args[0];
    df_expr *r = df__expr_new(b->plan, DF_EX_CASE, df_type_int32(), false, 2 * nsets + 1, args, b->err);
    if (r) r->has_else = true;
    return r;
}

/*
 * DISTINCT ON: of the rows of `in` (the projection, ON keys and ORDER BY keys
 * among its columns), keeps the first of each ON group in ORDER BY order —
 * row_number() over (PARTITION BY on ORDER BY keys) = 1 — then sorts.
 */
static df_lnode *distinct_on(binder *b, df_lnode *in, const df_sort_key *on, int32_t non, df_sort_key *keys,
                             int32_t nkeys) {
    df_window *w = df__lplan_alloc(b->plan, sizeof *w);
    df_expr **part = df__lplan_alloc(b->plan, (size_t)non * sizeof *part);
    df_sort_key *ord = df__lplan_alloc(b->plan, (size_t)(nkeys ? nkeys : 1) * sizeof *ord);
    if (!w || !part || !ord) return df__bind_oom(b);
    for (int32_t i = 0; i < non; i++) {
        int32_t c = (int32_t)(intptr_t)on[i].expr;
        if (!(part[i] = df__expr_column(b->plan, c, &in->cols[c], b->err))) return NULL;
    }
    for (int32_t i = 0; i < nkeys; i++) {
        int32_t c = (int32_t)(intptr_t)keys[i].expr;
        ord[i] = keys[i];
        if (!(ord[i].expr = df__expr_column(b->plan, c, &in->cols[c], b->err))) return NULL;
    }
    *w = (df_window){.fn = DF_WIN_ROW_NUMBER, .npart = non, .part = part, .norder = nkeys, .order = ord,
                     .units = DF_FRAME_ROWS, .start = {.kind = DF_BOUND_UNBOUNDED_PRECEDING},
                     .end = {.kind = DF_BOUND_CURRENT}, .type = df_type_uint64(), .name = "__distinct_on_row"};
    int32_t n = in->ncols;
    df_lnode *wn = new_node(b, DF_LN_WINDOW, 1, &in, n + 1);
    if (!wn) return NULL;
    df__memcpy(wn->cols, in->cols, (size_t)n * sizeof(df_lcol));
    wn->cols[n] = (df_lcol){.name = w->name, .type = w->type};
    wn->u.window.nwin = 1;
    wn->u.window.wins = w;
    df_scalar one = {.type = df_type_uint64(), .v.u64 = 1};
    df_expr *args[2] = {df__expr_column(b->plan, n, &wn->cols[n], b->err), df__expr_literal(b->plan, &one, b->err)};
    if (!args[0] || !args[1]) return NULL;
    df_expr *pred = df__expr_func(b->plan, DF_FN_EQ, df_type_bool(), false, 2, args, b->err);
    df_lnode *f = pred ? new_node(b, DF_LN_FILTER, 1, &wn, n + 1) : NULL;
    if (!f) return NULL;
    df__memcpy(f->cols, wn->cols, (size_t)(n + 1) * sizeof(df_lcol));
    f->u.filter.pred = pred;
    return nkeys ? make_sort(b, f, keys, nkeys) : f;
}

static df_lnode *bind_select(binder *b, const ast_select *s, const ast_order *order, int32_t norder) {
    bfrom from;
    if (b->pre_sel == s) {
        from = (bfrom){.node = b->pre_node, .hidden = b->pre_hidden};
        b->pre_sel = NULL;
    } else if (bind_from(b, s, &from)) {
        return NULL;
    }
    df_lnode *node = from.node;
    bool *hidden = from.hidden;
    bool oom = false;
    bscope from_scope = {.ncols = node->ncols, .cols = node->cols, .hidden = hidden};
    ast_expr *having = subst_aliases(b, s->having, s, &from_scope, &oom);
    ast_expr *qualify = subst_aliases(b, s->qualify, s, &from_scope, &oom);
    if (oom) return NULL;
    if (s->where) {
        if (df__ast_has_aggregate(s->where)) {
            df__bind_error(b, DF_ERR_SQL_TYPE, s->where->pos, "aggregate functions are not allowed in WHERE");
            return NULL;
        }
        if (df__bind_where(b, s->where, &node, &hidden)) return NULL;
    }
    bool has_agg = having != NULL;
    for (int32_t i = 0; i < s->nitems && !has_agg; i++) has_agg = df__ast_has_aggregate(s->items[i].expr);
    for (int32_t i = 0; i < norder && !has_agg; i++) has_agg = df__ast_has_aggregate(order[i].expr);
    bool grouping = has_agg || s->ngroup > 0 || s->group_all;
    /* Subquery expressions of the SELECT list, HAVING and ORDER BY become joins (sql_subquery.c). */
    ast_expr **item_exprs = df__lplan_alloc(b->plan, (size_t)(s->nitems + 1 + norder) * sizeof(ast_expr *));
    if (!item_exprs) return df__bind_oom(b);
    for (int32_t i = 0; i < s->nitems; i++) item_exprs[i] = s->items[i].expr;
    item_exprs[s->nitems] = having;
    for (int32_t i = 0; i < norder; i++) item_exprs[s->nitems + 1 + i] = order[i].expr;
    int32_t nwalk = s->nitems + 1 + norder;
    if (!grouping && df__bind_scalar_subqueries(b, item_exprs, nwalk, &node, &hidden)) return NULL;
    if (grouping) {
        /* Below the aggregation: subqueries in GROUP BY keys (and the items they name) and in aggregate arguments. */
        ast_expr **keys = df__lplan_alloc(b->plan, (size_t)(2 * s->ngroup + 1) * sizeof(ast_expr *));
        if (!keys) return df__bind_oom(b);
        int32_t nk = 0;
        for (int32_t g = 0; g < s->ngroup; g++) {
            keys[nk++] = s->group[g];
            const ast_select_item *it = item_by_alias(s, s->group[g]);
            if (!it && s->group[g]->kind == AE_INTEGER) {
                int64_t pos = strtoll(s->group[g]->text, NULL, 10);
                if (pos >= 1 && pos <= s->nitems) it = &s->items[pos - 1];
            }
            if (it) keys[nk++] = it->expr;
        }
        if (df__bind_scalar_subqueries(b, keys, nk, &node, &hidden)) return NULL;
        if (df__bind_agg_arg_subqueries(b, item_exprs, nwalk, &node, &hidden)) return NULL;
    }
    bscope scope = {.ncols = node->ncols, .cols = node->cols, .hidden = hidden};

    bagg ag = {.input = &scope, .collecting = true};
    bscope agg_scope = {0};
    bool *agg_hidden = NULL;
    bctx ctx = {.scope = &scope, .allow_agg = false, .clause = "SELECT"};
    df_expr **agg_group = NULL;
    if (grouping) {
        /* GROUP BY ALL walks the select items, so size for whichever list is walked. */
        int32_t nkeys = s->group_all ? s->nitems : s->ngroup;
        int32_t *key_of = df__lplan_alloc(b->plan, (size_t)(nkeys + 1) * sizeof *key_of);
        if (!key_of) return df__bind_oom(b);
        if (bind_group_keys(b, s, &scope, &ag, key_of)) return NULL;
        agg_group = ag.group;
        if (s->group_sets && bind_grouping_sets(b, s, key_of, &ag, &node, &agg_group)) return NULL;
        bctx cctx = {.scope = &scope, .agg = &ag, .allow_agg = true};
        for (int32_t i = 0; i < s->nitems; i++)
            if (collect_aggs(b, s->items[i].expr, &cctx)) return NULL;
        if (collect_aggs(b, having, &cctx)) return NULL;
        for (int32_t i = 0; i < norder; i++) {
            if (item_by_alias(s, order[i].expr)) continue;
            if (collect_aggs(b, order[i].expr, &cctx)) return NULL;
        }
        ag.collecting = false;
        df_lnode *a = new_node(b, DF_LN_AGGREGATE, 1, &node, ag.ngroup + ag.naggs);
        if (!a) return NULL;
        a->u.agg.ngroup = ag.ngroup;
        a->u.agg.group = agg_group;
        a->u.agg.naggs = ag.naggs;
        a->u.agg.aggs = ag.aggs;
        for (int32_t k = 0; k < ag.nsets; k++)
            if (ag.masks[k] == (UINT64_C(1) << ag.nkeys) - 1) { /* every key absent: the set () */
                a->u.agg.has_empty_set = true;
                a->u.agg.empty_set_id = ag.masks[k];
            }
        df__memcpy(a->cols, ag.group_cols, (size_t)ag.ngroup * sizeof(df_lcol));
        for (int32_t i = 0; i < ag.naggs; i++)
            a->cols[ag.ngroup + i] = (df_lcol){.name = ag.aggs[i].name, .type = ag.aggs[i].type,
                                               .nullable = ag.aggs[i].nullable};
        node = a;
        agg_hidden = NULL;
        if (df__bind_scalar_subqueries(b, item_exprs, nwalk, &node, &agg_hidden)) return NULL;
        agg_scope = (bscope){.ncols = node->ncols, .cols = node->cols, .hidden = agg_hidden};
        ctx = (bctx){.scope = &agg_scope, .agg = &ag, .allow_agg = true, .clause = "SELECT"};
        if (having) {
            bctx h = ctx;
            h.clause = "HAVING";
            df_expr *pred = df__bind_condition(b, having, &h);
            if (!pred) return NULL;
            df_lnode *f = new_node(b, DF_LN_FILTER, 1, &node, node->ncols);
            if (!f) return NULL;
            df__memcpy(f->cols, node->cols, (size_t)node->ncols * sizeof(df_lcol));
            f->u.filter.pred = pred;
            node = f;
        }
    }
    /* Window functions (after aggregation and HAVING), then QUALIFY over them. */
    item_exprs[s->nitems] = qualify;
    bool *wh = grouping ? agg_hidden : hidden;
    if (df__bind_windows(b, item_exprs, nwalk, &ctx, &node, &wh)) return NULL;
    if (grouping) agg_scope = (bscope){.ncols = node->ncols, .cols = node->cols, .hidden = wh};
    else scope = (bscope){.ncols = node->ncols, .cols = node->cols, .hidden = wh};
    if (qualify) {
        bool any = df__ast_has_window(qualify);
        for (int32_t i = 0; i < s->nitems && !any; i++) any = df__ast_has_window(s->items[i].expr);
        if (!any) {
            df__bind_error(b, DF_ERR_SQL_TYPE, qualify->pos,
                           "QUALIFY clause requires window functions in the SELECT list or QUALIFY clause");
            return NULL;
        }
        bctx q = ctx;
        q.clause = "QUALIFY";
        df_expr *pred = df__bind_condition(b, qualify, &q);
        if (!pred) return NULL;
        df_lnode *f = new_node(b, DF_LN_FILTER, 1, &node, node->ncols);
        if (!f) return NULL;
        df__memcpy(f->cols, node->cols, (size_t)node->ncols * sizeof(df_lcol));
        f->u.filter.pred = pred;
        node = f;
    }
    proj_list p = {0};
    for (int32_t i = 0; i < s->nitems; i++) {
        const ast_select_item *it = &s->items[i];
        if (it->expr->kind == AE_STAR) {
            if (grouping) {
                /* `*` under GROUP BY: each input column it names must be a group key. */
                proj_list in = {0};
                if (expand_star(b, it->expr, &scope, &in)) return NULL;
                for (int32_t k = 0; k < in.n; k++) {
                    int32_t g = 0;
                    while (g < ag.ngroup && !df__expr_equal(ag.group[g], in.exprs[k])) g++;
                    if (g == ag.ngroup) {
                        df__bind_error(b, DF_ERR_SQL_TYPE, it->expr->pos,
                                       "column `%s` must appear in the GROUP BY clause or be used in an aggregate function",
                                       in.cols[k].name);
                        return NULL;
                    }
                    df_expr *c = df__expr_column(b->plan, g, &node->cols[g], b->err);
                    if (!c || proj_push(b, &p, c, in.cols[k].name, in.cols[k].qualifier)) return NULL;
                }
                continue;
            }
            if (expand_star(b, it->expr, &scope, &p)) return NULL;
            continue;
        }
        df_expr *x = df__bind_expr(b, it->expr, &ctx);
        if (!x) return NULL;
        const char *name = item_name(b, it, x);
        if (!name) return NULL;
        if (proj_push(b, &p, x, name, (x->kind == DF_EX_COLUMN && !it->alias) ? x->qualifier : NULL)) return NULL;
    }
    int32_t nvisible = p.n;
    df_sort_key *keys = NULL;
    if (norder) {
        keys = df__lplan_alloc(b->plan, (size_t)norder * sizeof *keys);
        if (!keys) return df__bind_oom(b);
        bctx octx = ctx;
        octx.clause = "ORDER BY";
        for (int32_t i = 0; i < norder; i++)
            if (bind_order_key(b, s, &order[i], &octx, &p, nvisible, s->distinct && !s->ndistinct_on, &keys[i]))
                return NULL;
    }
    df_sort_key *on = NULL;
    if (s->ndistinct_on) {
        on = df__lplan_alloc(b->plan, (size_t)s->ndistinct_on * sizeof *on);
        if (!on) return df__bind_oom(b);
        bctx octx = ctx;
        octx.clause = "DISTINCT ON";
        for (int32_t i = 0; i < s->ndistinct_on; i++) {
            ast_order o = {.expr = s->distinct_on[i]};
            if (bind_order_key(b, s, &o, &octx, &p, nvisible, false, &on[i])) return NULL;
            if (norder && (i >= norder || on[i].expr != keys[i].expr)) {
                df__bind_error(b, DF_ERR_SQL_TYPE, s->distinct_on[i]->pos,
                               "SELECT DISTINCT ON expressions must match initial ORDER BY expressions");
                return NULL;
            }
        }
    }
    node = make_project(b, node, &p, p.n);
    if (!node) return NULL;
    if (s->ndistinct_on) {
        if (!(node = distinct_on(b, node, on, s->ndistinct_on, keys, norder))) return NULL;
    } else {
        if (s->distinct && !(node = make_distinct(b, node))) return NULL;
        if (norder && !(node = make_sort(b, node, keys, norder))) return NULL;
    }
    if (node->ncols > nvisible) {
        proj_list q = {0};
        for (int32_t i = 0; i < nvisible; i++) {
            df_expr *c = df__expr_column(b->plan, i, &node->cols[i], b->err);
            if (!c || proj_push(b, &q, c, node->cols[i].name, node->cols[i].qualifier)) return NULL;
        }
        node = make_project(b, node, &q, nvisible);
    }
    return node;
}

df_lnode *df__bind_select_only(binder *b, const ast_select *s) { return bind_select(b, s, NULL, 0); }

/* ------------------------------------------------------------------------ */
/* VALUES and set operations                                                 */

static df_lnode *bind_values(binder *b, const ast_setexpr *v) {
    int32_t ncols = v->row_len[0];
    for (int32_t r = 1; r < v->nrows; r++)
        if (v->row_len[r] != ncols) {
            df__bind_error(b, DF_ERR_SQL_TYPE, v->pos, "all VALUES rows must have the same number of columns");
            return NULL;
        }
    df_expr ***rows = df__lplan_alloc(b->plan, (size_t)v->nrows * sizeof *rows);
    const df_type **types = df__lplan_alloc(b->plan, (size_t)v->nrows * sizeof *types);
    if (!rows || !types) return df__bind_oom(b);
    bscope empty = {0};
    bctx ctx = {.scope = &empty, .clause = "VALUES"};
    for (int32_t r = 0; r < v->nrows; r++) {
        rows[r] = df__lplan_alloc(b->plan, (size_t)ncols * sizeof(df_expr *));
        if (!rows[r]) return df__bind_oom(b);
        for (int32_t c = 0; c < ncols; c++) {
            rows[r][c] = df__bind_expr(b, v->rows[r][c], &ctx);
            if (!rows[r][c]) return NULL;
        }
    }
    df_lnode *n = new_node(b, DF_LN_VALUES, 0, NULL, ncols);
    if (!n) return NULL;
    for (int32_t c = 0; c < ncols; c++) {
        for (int32_t r = 0; r < v->nrows; r++) types[r] = rows[r][c]->type;
        df_type *t = df__bind_keep(b, df__sqlt_union(types, v->nrows));
        if (!t) {
            if (b->err && b->err->kind == DF_ERR_OUT_OF_MEMORY) return NULL;
            df__bind_error(b, DF_ERR_SQL_TYPE, v->pos, "VALUES column %d has incompatible types", c + 1);
            return NULL;
        }
        bool nullable = false;
        for (int32_t r = 0; r < v->nrows; r++) {
            rows[r][c] = df__bind_coerce(b, rows[r][c], t, v->rows[r][c]->pos);
            if (!rows[r][c]) return NULL;
            nullable |= rows[r][c]->nullable;
        }
        char name[32];
        snprintf(name, sizeof name, "column%d", c + 1);
        n->cols[c] = (df_lcol){.name = df__bind_strdup(b, name), .type = t, .nullable = nullable};
        if (!n->cols[c].name) return NULL;
    }
    n->u.values.nrows = v->nrows;
    n->u.values.rows = rows;
    return n;
}

/* Casts the columns of `in` to `types` where they differ (a projection). */
static df_lnode *cast_columns(binder *b, df_lnode *in, df_type *const *types, const df_lcol *names, int32_t pos) {
    bool same = true;
    for (int32_t i = 0; i < in->ncols; i++)
        if (!df_type_equals(in->cols[i].type, types[i])) same = false;
    if (same && names == in->cols) return in;
    proj_list p = {0};
    for (int32_t i = 0; i < in->ncols; i++) {
        df_expr *c = df__expr_column(b->plan, i, &in->cols[i], b->err);
        c = c ? df__bind_coerce(b, c, types[i], pos) : NULL;
        if (!c || proj_push(b, &p, c, names[i].name, names[i].qualifier)) return NULL;
    }
    return make_project(b, in, &p, p.n);
}

static df_lnode *bind_setop(binder *b, const ast_setexpr *s) {
    df_lnode *l = bind_setexpr(b, s->left);
    if (!l) return NULL;
    df_lnode *r = bind_setexpr(b, s->right);
    if (!r) return NULL;
    if (l->ncols != r->ncols) {
        df__bind_error(b, DF_ERR_SQL_TYPE, s->pos, "set operation inputs have %d and %d columns", l->ncols, r->ncols);
        return NULL;
    }
    int32_t n = l->ncols;
    df_type **types = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof *types);
    df_lcol *cols = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof *cols);
    if (!types || !cols) return df__bind_oom(b);
    for (int32_t i = 0; i < n; i++) {
        const df_type *pair[2] = {l->cols[i].type, r->cols[i].type};
        types[i] = df__bind_keep(b, df__sqlt_union_text(pair, 2));
        if (!types[i]) {
            if (b->err && b->err->kind == DF_ERR_OUT_OF_MEMORY) return NULL;
            df__bind_error(b, DF_ERR_SQL_TYPE, s->pos, "set operation column %d has incompatible types", i + 1);
            return NULL;
        }
        cols[i] = (df_lcol){.name = l->cols[i].name, .qualifier = NULL, .type = types[i],
                            .nullable = l->cols[i].nullable || r->cols[i].nullable};
    }
    l = cast_columns(b, l, types, cols, s->pos);
    r = l ? cast_columns(b, r, types, cols, s->pos) : NULL;
    if (!r) return NULL;
    if (s->op == ASO_UNION) {
        /* Flatten UNION ALL chains. */
        df_lnode *ins[2] = {l, r};
        df_lnode *u = new_node(b, DF_LN_UNION, 2, ins, n);
        if (!u) return NULL;
        df__memcpy(u->cols, cols, (size_t)n * sizeof *cols);
        return s->all ? u : make_distinct(b, u);
    }
    if (s->all) {
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, s->pos, "INTERSECT ALL and EXCEPT ALL are not supported");
        return NULL;
    }
    /* INTERSECT / EXCEPT (distinct): semi / anti join on all columns, NULLs equal. */
    df_lnode *dl = make_distinct(b, l);
    if (!dl) return NULL;
    df_lnode *j = make_join_node(b, s->op == ASO_INTERSECT ? DF_JOIN_LEFT_SEMI : DF_JOIN_LEFT_ANTI, dl, r);
    if (!j) return NULL;
    j->u.join.nkeys = n;
    j->u.join.lkeys = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(df_expr *));
    j->u.join.rkeys = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(df_expr *));
    j->u.join.null_equal = df__lplan_alloc(b->plan, (size_t)(n ? n : 1) * sizeof(bool));
    if (!j->u.join.lkeys || !j->u.join.rkeys || !j->u.join.null_equal) return df__bind_oom(b);
    for (int32_t i = 0; i < n; i++) {
        j->u.join.lkeys[i] = df__expr_column(b->plan, i, &dl->cols[i], b->err);
        j->u.join.rkeys[i] = df__expr_column(b->plan, i, &r->cols[i], b->err);
        if (!j->u.join.lkeys[i] || !j->u.join.rkeys[i]) return NULL;
        j->u.join.null_equal[i] = true;
    }
    return j;
}

static df_lnode *bind_setexpr(binder *b, const ast_setexpr *s) {
    switch (s->kind) {
    case AS_SELECT: return bind_select(b, s->select, NULL, 0);
    case AS_VALUES: return bind_values(b, s);
    case AS_QUERY: {
        bcte *save = b->ctes;
        df_lnode *n = df__bind_query(b, s->query);
        b->ctes = save;
        return n;
    }
    case AS_SETOP: return bind_setop(b, s);
    }
    df__bind_error(b, DF_ERR_INTERNAL, s->pos, "unknown set expression");
    return NULL;
}

/* ORDER BY over the output of a set operation / VALUES: positions, names, expressions. */
static df_lnode *bind_outer_order(binder *b, df_lnode *node, const ast_query *q) {
    df_sort_key *keys = df__lplan_alloc(b->plan, (size_t)q->norder * sizeof *keys);
    if (!keys) return df__bind_oom(b);
    bscope scope = {.ncols = node->ncols, .cols = node->cols};
    bctx ctx = {.scope = &scope, .clause = "ORDER BY"};
    for (int32_t i = 0; i < q->norder; i++) {
        const ast_expr *e = q->order[i].expr;
        df_expr *x;
        if (e->kind == AE_INTEGER) {
            int64_t k = strtoll(e->text, NULL, 10);
            if (k < 1 || k > node->ncols) {
                df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "ORDER BY position %" PRId64 " is out of range", k);
                return NULL;
            }
            x = df__expr_column(b->plan, (int32_t)(k - 1), &node->cols[k - 1], b->err);
        } else {
            x = df__bind_expr(b, e, &ctx);
        }
        if (!x) return NULL;
        keys[i].expr = x;
        keys[i].desc = q->order[i].desc;
        keys[i].nulls_first = q->order[i].nulls == 1 || (q->order[i].nulls == 0 && q->order[i].desc);
    }
    df_lnode *s = new_node(b, DF_LN_SORT, 1, &node, node->ncols);
    if (!s) return NULL;
    df__memcpy(s->cols, node->cols, (size_t)node->ncols * sizeof(df_lcol));
    s->u.sort.keys = keys;
    s->u.sort.nkeys = q->norder;
    s->u.sort.fetch = -1;
    return s;
}

df_lnode *df__bind_query(binder *b, const ast_query *q) {
    bcte *save = b->ctes;
    for (int32_t i = 0; i < q->nctes; i++) {
        bcte *f = df__lplan_alloc(b->plan, sizeof *f);
        if (!f) return df__bind_oom(b);
        f->cte = &q->ctes[i];
        f->recursive = q->recursive;
        f->next = b->ctes;
        b->ctes = f;
    }
    df_lnode *node;
    if (q->body->kind == AS_SELECT) {
        node = bind_select(b, q->body->select, q->order, q->norder);
    } else {
        node = bind_setexpr(b, q->body);
        if (node && q->norder) node = bind_outer_order(b, node, q);
    }
    if (node && (q->limit || q->offset)) {
        int64_t fetch = -1, skip = 0;
        if (q->limit && bind_count(b, q->limit, "LIMIT", &fetch)) node = NULL;
        if (node && q->offset && bind_count(b, q->offset, "OFFSET", &skip)) node = NULL;
        if (node) {
            if (skip < 0) skip = 0;
            df_lnode *l = new_node(b, DF_LN_LIMIT, 1, &node, node->ncols);
            if (l) {
                df__memcpy(l->cols, node->cols, (size_t)node->ncols * sizeof(df_lcol));
                l->u.limit.skip = skip;
                l->u.limit.fetch = fetch;
            }
            node = l;
        }
    }
    b->ctes = save;
    return node;
}

/* ------------------------------------------------------------------------ */
/* Entry point                                                               */

df_errkind df__sql_bind(df_catalog *cat, const char *sql, df_const_eval_fn eval, df_lplan **out, df_error *err) {
    *out = NULL;
    if (!sql) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no SQL text");
    df_error_clear(err);
    df_lplan *plan;
    DF_TRY(df__lplan_new(&plan, err));
    size_t len = strlen(sql);
    ast_query *q = NULL;
    df_errkind k = df__sql_parse(sql, len, &plan->arena, &q, err);
    if (!k) {
        binder b = {.cat = cat, .plan = plan, .text = sql, .text_len = (int32_t)len, .err = err, .eval = eval,
                    .now_ns = df_wall_ns()};
        plan->root = df__bind_query(&b, q);
        if (!plan->root) {
            k = err && err->kind ? err->kind : DF_ERR_INTERNAL;
        } else {
            plan->sql = df__lplan_strdup(plan, sql);
            plan->deps = b.deps;
            plan->ndeps = b.ndeps;
            if (!plan->sql) k = DF_OOM(err);
        }
    }
    if (k) {
        df__lplan_release(plan);
        return k;
    }
    *out = plan;
    return DF_OK;
}
