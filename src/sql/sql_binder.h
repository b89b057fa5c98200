/*
 * Binder internals shared by the statement binder (sql_binder.c), the
 * expression binder (sql_bind_expr.c) and function resolution
 * (sql_functions.c).
 */
#ifndef DF_SQL_SQL_BINDER_H
#define DF_SQL_SQL_BINDER_H

#include "sql/logical_plan.h"
#include "sql/sql_ast.h"
#include "sql/sql_types.h"

/* Columns visible to name resolution. */
typedef struct bscope {
    int32_t ncols;              /* visible columns */
    const df_lcol *cols;        /* their names, qualifiers and types */
    const bool *hidden;         /* per column: skipped by unqualified names and `*` (USING duplicates) or NULL */
    int32_t prefer_from;        /* > 0: a name matching columns at or after this index resolves there even if
                                   earlier columns match too (join conditions of decorrelated subqueries bind
                                   over outer ++ inner columns, and inner names shadow outer ones) */
} bscope;

/* A scalar subquery that was turned into a join: its value is column `col` of the joined plan. */
typedef struct bsubq {
    const ast_expr *e;          /* the AE_SUBQUERY node */
    const char *col;            /* the (hidden) column holding its value */
    const char *mark;           /* correlated: column that is non-NULL when a group matched, or NULL */
    const char *dflt;           /* correlated: column with the value over no rows (count() = 0, ...) */
    bool negate;                /* EXISTS / IN marks: the expression is NOT mark */
    const char *unknown;        /* correlated IN marks: column true where an unmatched IN is NULL, else NULL */
    const char **quant;         /* ANY / ALL by aggregates: columns min, max, count(v), count(*), else NULL */
    struct bsubq *next;
} bsubq;

/* Aggregation state of one SELECT. */
typedef struct bagg {
    const bscope *input;        /* the FROM scope aggregates and keys are bound against */
    int32_t ngroup;             /* group keys (bound over input) */
    df_expr **group;
    df_lcol *group_cols;        /* their output columns */
    int32_t naggs, cap;         /* distinct aggregate calls found so far */
    df_agg *aggs;
    bool collecting;            /* phase 1: record aggregates; phase 2: map to output columns */
    int32_t nkeys;              /* GROUPING SETS: the keys grouping() may name (group[0..nkeys)) */
    int32_t grouping_id;        /* GROUPING SETS: output column of the set's mask (bit k: key k absent) */
    int32_t nsets;              /* GROUPING SETS: the sets (0 without GROUPING SETS) */
    const uint64_t *masks;
} bagg;

/* One SELECT item's alias, for ORDER BY / GROUP BY / HAVING references. */
typedef struct balias {
    const char *name;           /* alias */
    const ast_expr *expr;       /* the aliased expression */
} balias;

/* Where an expression is bound. */
typedef struct bctx {
    const bscope *scope;        /* columns visible */
    bagg *agg;                  /* non-NULL: bind over the aggregate output (phase 2) or collect (phase 1) */
    bool allow_agg;             /* aggregate calls are allowed here */
    bool in_agg;                /* inside an aggregate's argument */
    const char *clause;         /* "WHERE", "GROUP BY", ... for messages */
} bctx;

/* A WITH item visible while binding (innermost first). */
typedef struct bcte {
    const ast_cte *cte;         /* its definition */
    struct bcte *next;          /* enclosing definitions */
    bool binding;               /* being bound (a reference now would be recursive) */
    bool recursive;             /* defined in WITH RECURSIVE */
    df_lnode *worktable;        /* while its recursive term is bound: the work table a reference reads */
    int32_t worktable_refs;     /* references to it so far */
} bcte;

/* A window call bound into a Window node: its value is column `col`. */
typedef struct bwin {
    const ast_expr *e;          /* the window call */
    const char *col;            /* its output column */
    struct bwin *next;
} bwin;

typedef struct binder {
    df_catalog *cat;            /* names */
    df_lplan *plan;             /* container everything is allocated in */
    const char *text;           /* SQL text being bound (positions refer to it) */
    int32_t text_len;
    df_error *err;              /* caller's error */
    df_const_eval_fn eval;      /* constant evaluation (LIMIT expressions, folding) */
    bcte *ctes;                 /* WITH scope */
    int32_t view_depth;         /* nested view expansions */
    int32_t nest;               /* heights of the CTE bodies and views being expanded (<= DF_SQL_MAX_HEIGHT) */
    int32_t ndeps, cap_deps;    /* direct dependencies so far */
    const char **deps;
    int64_t now_ns;             /* statement time for now() / current_date */
    bsubq *subqs;               /* scalar subqueries bound as joins so far */
    int32_t nsubq;              /* counter for their column names */
    bwin *wins;                 /* window calls bound so far */
    int32_t nwin;               /* counter for their column names */
    const ast_select *pre_sel;  /* this SELECT's FROM is already bound as pre_node / pre_hidden (LATERAL) */
    df_lnode *pre_node;
    bool *pre_hidden;
    int32_t nrec;               /* recursive CTEs bound (work table ids) */
} binder;

/* Errors at a byte position of the current text. */
df_errkind df__bind_error(binder *b, df_errkind kind, int32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* OOM shorthand returning NULL. */
void *df__bind_oom(binder *b);
/* Keeps a new type reference in the container; NULL on OOM (reference consumed). */
df_type *df__bind_keep(binder *b, df_type *t);
/* Arena string copy. */
char *df__bind_strdup(binder *b, const char *s);

/* Binds an expression; NULL with the error recorded. */
df_expr *df__bind_expr(binder *b, const ast_expr *e, const bctx *ctx);
/* Binds a boolean condition (NULL literals become boolean). */
df_expr *df__bind_condition(binder *b, const ast_expr *e, const bctx *ctx);
/* A single-step aggregate called as a window function (sql_bind_expr.c). */
df_errkind df__bind_window_more_agg(binder *b, const ast_expr *call, int fn, const bctx *ctx, struct df_agg **out);
/* Casts e to t (implicit coercion); NULL + error when not castable. */
df_expr *df__bind_coerce(binder *b, df_expr *e, df_type *t, int32_t pos);
/* The display name DataFusion would give e (arena string). */
char *df__bind_display(binder *b, const df_expr *e);
/* True when the AST contains an aggregate call (not inside a subquery). */
bool df__ast_has_aggregate(const ast_expr *e);
/* Aggregate function id of a call name, or -1. */
int df__bind_agg_fn(const ast_expr *call);
/* Binds one aggregate call (phase 1 records it; both phases return its output column index). */
df_errkind df__bind_aggregate_call(binder *b, const ast_expr *call, const bctx *ctx, int32_t *index);

/* grouping(keys...) over the aggregate output (sql_binder.c). */
df_expr *df__bind_grouping_call(binder *b, const ast_expr *call, const bctx *ctx);

/* Scalar function call resolution (sql_functions.c). */
df_expr *df__bind_function(binder *b, const ast_expr *call, const bctx *ctx);
/* Builds fn(args) after coercing args per the function's signature. */
df_expr *df__bind_resolve_fn(binder *b, df_fn fn, df_expr **args, int32_t nargs, int32_t pos);

/* Parses an interval text ("1 day 2 hours", "3", "-1 month") with an optional unit word. */
df_errkind df__bind_parse_interval(binder *b, const char *text, const char *unit, int32_t pos, df_scalar *out);

/* Binds a nested query (subquery, view text, CTE) into a plan node. */
df_lnode *df__bind_query(binder *b, const ast_query *q);

/* Statement-binder pieces used by subquery decorrelation (sql_binder.c). */
/* Binds the FROM items of s (cross joins for commas) into *node with per-column hidden flags. */
df_errkind df__bind_from_items(binder *b, const ast_select *s, df_lnode **node, bool **hidden);
/* A join node of type t over l and r (columns and nullability set, no condition yet). */
df_lnode *df__bind_join_node(binder *b, df_join_type t, df_lnode *l, df_lnode *r);
/* Sets j's equi-keys and residual from a condition bound over left ++ right. */
df_errkind df__bind_join_condition(binder *b, df_expr *cond, int32_t nleft, int32_t nright, df_lnode *j);
/* Binds one SELECT without ORDER BY / LIMIT. */
df_lnode *df__bind_select_only(binder *b, const ast_select *s);
/* A projection of `n` expressions with the given output columns. */
df_lnode *df__bind_project_node(binder *b, df_lnode *in, df_expr **exprs, const df_lcol *cols, int32_t n);

/* Subqueries in expressions (sql_subquery.c). */
/*
 * Applies a WHERE clause to *node: top-level [NOT] EXISTS and [NOT] IN
 * (subquery) conjuncts become semi / anti joins (decorrelated), scalar
 * subqueries in the other conjuncts become left joins, and the rest a
 * filter.  *hidden (per column of *node) is updated.
 */
df_errkind df__bind_where(binder *b, const ast_expr *where, df_lnode **node, bool **hidden);
/* Scalar subqueries in exprs (outside nested queries) become left joins onto *node, as hidden columns. */
df_errkind df__bind_scalar_subqueries(binder *b, ast_expr *const *exprs, int32_t n, df_lnode **node, bool **hidden);
/* Like df__bind_scalar_subqueries for the subqueries inside aggregate call arguments only. */
df_errkind df__bind_agg_arg_subqueries(binder *b, ast_expr *const *exprs, int32_t n, df_lnode **node, bool **hidden);
/* True when every subquery expression in e was joined and its column is in scope sc. */
bool df__bind_subqueries_in_scope(binder *b, const ast_expr *e, const bscope *sc);
/* The column a scalar subquery was joined as, in ctx's scope; NULL + error when it was not. */
df_expr *df__bind_subquery_column(binder *b, const ast_expr *e, const bctx *ctx);
/*
 * A LATERAL subquery r joined onto *node (join type t: inner or left, ON
 * condition `on` or NULL), decorrelated; *hidden is updated.
 */
df_errkind df__bind_lateral(binder *b, df_join_type t, const ast_tableref *r, const ast_expr *on, df_lnode **node,
                            bool **hidden);
/* Window functions (sql_window.c). */
/*
 * Binds the window calls found in exprs (over ctx) into one Window node on
 * top of *node (hidden result columns, *hidden extended).  No-op without any.
 */
df_errkind df__bind_windows(binder *b, ast_expr *const *exprs, int32_t n, const bctx *ctx, df_lnode **node, bool **hidden);
/* The column holding a bound window call, in ctx's scope; NULL + error when absent. */
df_expr *df__bind_window_column(binder *b, const ast_expr *e, const bctx *ctx);
/* True when e contains a window call (outside nested queries). */
bool df__ast_has_window(const ast_expr *e);

/* True when e contains a subquery expression (not counting nested queries' insides). */
bool df__ast_has_subquery(const ast_expr *e);
/* Evaluates a constant expression through the executor hook. */
df_errkind df__bind_eval_const(binder *b, const df_expr *e, df_scalar *out);

#endif
