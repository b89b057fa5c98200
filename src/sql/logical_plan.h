/*
 * Bound expressions and logical plans: what the binder produces, the
 * optimizer rewrites and the executor lowers to physical operators.
 *
 * Memory.  Nodes and expressions live in the arena of a df_lplan container
 * together with a list of references to release (types, providers,
 * scalars, other containers).  Nodes are never modified once built: the
 * optimizer creates new nodes and may share unchanged subtrees, also with
 * other containers it holds a reference to (views, df_query_limit).  So a
 * container can be shared freely between queries and threads.
 *
 * Columns.  Every node has an output schema (df_lcol array).  A column
 * reference (DF_EX_COLUMN) is an index into the input of the node that
 * owns the expression: the child's columns, or for joins the left
 * columns followed by the right ones.  Pushed scan filters index the
 * provider's full schema.
 *
 * Types.  Every expression has its result type and nullability.  The
 * binder inserts explicit casts wherever operands are coerced (flagged
 * `implicit` so that names and EXPLAIN read like the SQL), so that every
 * function receives exactly the argument types its kernel expects.
 */
#ifndef DF_SQL_LOGICAL_PLAN_H
#define DF_SQL_LOGICAL_PLAN_H

#include "sql/catalog.h"

/* memcpy that accepts n == 0 with NULL pointers (empty column lists). */
static inline void df__memcpy(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
}

/* ------------------------------------------------------------------------ */
/* Scalar functions and operators                                            */

/*
 * X(ID, "name"): every function and operator an expression can call.  The
 * binder resolves names and argument types (sql_functions.c); the executor
 * maps (id, argument types) to a kernel (exec/kernels.c).
 */
#define DF_FN_LIST(X) \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%") X(NEG, "-") \
    X(EQ, "=") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") \
    X(IS_DISTINCT, "IS DISTINCT FROM") X(IS_NOT_DISTINCT, "IS NOT DISTINCT FROM") \
    X(IS_NULL, "IS NULL") X(IS_NOT_NULL, "IS NOT NULL") X(IS_TRUE, "IS TRUE") X(IS_NOT_TRUE, "IS NOT TRUE") \
    X(IS_FALSE, "IS FALSE") X(IS_NOT_FALSE, "IS NOT FALSE") \
    X(LIKE, "LIKE") X(ILIKE, "ILIKE") X(NOT_LIKE, "NOT LIKE") X(NOT_ILIKE, "NOT ILIKE") \
    X(REGEX_MATCH, "~") X(REGEX_IMATCH, "~*") X(REGEX_NMATCH, "!~") X(REGEX_NIMATCH, "!~*") \
    X(CONCAT_OP, "||") X(BIT_AND, "&") X(BIT_OR, "|") X(BIT_XOR, "#") X(SHL, "<<") X(SHR, ">>") X(BIT_NOT, "~") \
    X(ABS, "abs") X(ROUND, "round") X(TRUNC, "trunc") X(CEIL, "ceil") X(FLOOR, "floor") \
    X(SQRT, "sqrt") X(CBRT, "cbrt") X(POWER, "power") X(EXP, "exp") X(LN, "ln") X(LOG10, "log10") \
    X(LOG2, "log2") X(LOG, "log") X(SIGN, "signum") X(PI, "pi") X(SIN, "sin") X(COS, "cos") X(TAN, "tan") \
    X(ASIN, "asin") X(ACOS, "acos") X(ATAN, "atan") X(ATAN2, "atan2") X(DEGREES, "degrees") \
    X(RADIANS, "radians") X(GCD, "gcd") X(LCM, "lcm") X(FACTORIAL, "factorial") X(ISNAN, "isnan") \
    X(ISZERO, "iszero") X(NANVL, "nanvl") \
    X(LOWER, "lower") X(UPPER, "upper") X(BTRIM, "btrim") X(LTRIM, "ltrim") X(RTRIM, "rtrim") \
    X(SUBSTR, "substr") X(CHAR_LENGTH, "character_length") X(OCTET_LENGTH, "octet_length") \
    X(BIT_LENGTH, "bit_length") X(CONCAT, "concat") X(CONCAT_WS, "concat_ws") X(REPLACE, "replace") \
    X(LEFT, "left") X(RIGHT, "right") X(LPAD, "lpad") X(RPAD, "rpad") X(REVERSE, "reverse") \
    X(REPEAT, "repeat") X(STRPOS, "strpos") X(STARTS_WITH, "starts_with") X(ENDS_WITH, "ends_with") \
    X(INITCAP, "initcap") X(SPLIT_PART, "split_part") X(ASCII, "ascii") X(CHR, "chr") X(TO_HEX, "to_hex") \
    X(TRANSLATE, "translate") X(OVERLAY, "overlay") X(CONTAINS, "contains") X(UUID, "uuid") X(MD5, "md5") \
    X(NULLIF, "nullif") X(GREATEST, "greatest") X(LEAST, "least") \
    X(DATE_PART, "date_part") X(DATE_TRUNC, "date_trunc") X(MAKE_DATE, "make_date") \
    X(TO_TIMESTAMP, "to_timestamp") X(TO_DATE, "to_date") X(TO_UNIXTIME, "to_unixtime") \
    X(FROM_UNIXTIME, "from_unixtime") X(DATE_BIN, "date_bin") \
    X(TO_TIMESTAMP_SECONDS, "to_timestamp_seconds") X(TO_TIMESTAMP_MILLIS, "to_timestamp_millis") \
    X(TO_TIMESTAMP_MICROS, "to_timestamp_micros") X(TO_TIMESTAMP_NANOS, "to_timestamp_nanos") \
    X(SINH, "sinh") X(COSH, "cosh") X(TANH, "tanh") X(ASINH, "asinh") X(ACOSH, "acosh") X(ATANH, "atanh") \
    X(REGEXP_LIKE, "regexp_like") X(REGEXP_COUNT, "regexp_count") X(REGEXP_REPLACE, "regexp_replace") \
    X(ENCODE, "encode") X(DECODE, "decode") X(FIND_IN_SET, "find_in_set") \
    X(SUBSTRING_INDEX, "substr_index") X(LEVENSHTEIN, "levenshtein") \
    X(RANDOM, "random") \
    X(SHA224, "sha224") X(SHA256, "sha256") X(SHA384, "sha384") X(SHA512, "sha512") X(DIGEST, "digest") \
    X(MAKE_TIME, "make_time") X(TO_TIME, "to_time") X(AT_TIME_ZONE, "at_time_zone") X(TO_LOCAL_TIME, "to_local_time") X(TO_CHAR, "to_char") X(REGEXP_INSTR, "regexp_instr")

typedef enum df_fn {
#define DF_FN_ENUM(id, name) DF_FN_##id,
    DF_FN_LIST(DF_FN_ENUM)
#undef DF_FN_ENUM
    DF_FN_COUNT_
} df_fn;

/* The display name of a function ("+", "lower"). */
const char *df_fn_name(df_fn fn);

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */

typedef enum df_expr_kind {
    DF_EX_COLUMN,       /* column = index into the input */
    DF_EX_LITERAL,      /* lit */
    DF_EX_CAST,         /* args[0] -> type; flag = TRY_CAST (NULL on failure) */
    DF_EX_FUNC,         /* fn(args) */
    DF_EX_AND,          /* args[0] AND args[1] AND ... (three-valued) */
    DF_EX_OR,           /* args[0] OR ... */
    DF_EX_NOT,          /* NOT args[0] */
    DF_EX_CASE,         /* args = when0, then0, when1, then1, ... [, else]; has_else */
    DF_EX_COALESCE,     /* first non-null of args (lazy) */
    DF_EX_IN_LIST,      /* args[0] [NOT] IN (args[1..]); flag = NOT IN */
} df_expr_kind;

typedef struct df_expr df_expr;
struct df_expr {
    df_expr_kind kind;      /* what the node is */
    df_type *type;          /* result type (reference held by the container) */
    bool nullable;          /* may produce NULL */
    bool flag;              /* TRY_CAST; NOT IN */
    bool implicit;          /* a cast inserted by type coercion (hidden from names) */
    bool has_else;          /* CASE: the last arg is the ELSE result */
    df_fn fn;               /* DF_EX_FUNC */
    int32_t column;         /* DF_EX_COLUMN */
    int32_t nargs;          /* operands */
    df_expr **args;
    df_scalar *lit;         /* DF_EX_LITERAL (cleared by the container) */
    const char *name;       /* DF_EX_COLUMN: the referenced column's name (for display) */
    const char *qualifier;  /* DF_EX_COLUMN: its qualifier or NULL */
    const char *display;    /* how the SQL spelled a rewritten construct (BETWEEN, ...), or NULL */
};

/* ------------------------------------------------------------------------ */
/* Aggregates                                                                */

typedef enum df_agg_fn {
    DF_AGG_COUNT,       /* count(x): non-null values; count(*) has arg NULL */
    DF_AGG_SUM,
    DF_AGG_MIN,
    DF_AGG_MAX,
    DF_AGG_AVG,
    DF_AGG_BOOL_AND,
    DF_AGG_BOOL_OR,
    DF_AGG_FIRST,       /* first_value without ORDER BY: any value */
    /* The aggregates below run in a single aggregation step (no partial states). */
    DF_AGG_LAST,        /* last_value without ORDER BY: the last value read */
    DF_AGG_BIT_AND,     /* bitwise AND of integer values */
    DF_AGG_BIT_OR,
    DF_AGG_BIT_XOR,
    DF_AGG_VAR_SAMP,    /* sample variance (var, variance, var_samp) */
    DF_AGG_VAR_POP,
    DF_AGG_STDDEV_SAMP, /* stddev, stddev_samp */
    DF_AGG_STDDEV_POP,
    DF_AGG_COVAR_SAMP,  /* two arguments (y, x) from here ... */
    DF_AGG_COVAR_POP,
    DF_AGG_CORR,
    DF_AGG_REGR_SLOPE,
    DF_AGG_REGR_INTERCEPT,
    DF_AGG_REGR_COUNT,
    DF_AGG_REGR_R2,
    DF_AGG_REGR_AVGX,
    DF_AGG_REGR_AVGY,
    DF_AGG_REGR_SXX,
    DF_AGG_REGR_SYY,
    DF_AGG_REGR_SXY,    /* ... to here */
    DF_AGG_MEDIAN,      /* exact median (integer midpoints truncate) */
    DF_AGG_PERCENTILE,  /* exact continuous percentile; arg2 = the fraction literal */
    DF_AGG_STRING_AGG,  /* concatenation in input order; arg2 = the delimiter literal */
    DF_AGG_APPROX_DISTINCT, /* HyperLogLog estimate of the distinct non-NULL values (UInt64) */
    DF_AGG_COUNT_ID_,
} df_agg_fn;

typedef struct df_agg {
    df_agg_fn fn;           /* which aggregate */
    df_expr *arg;           /* input expression (NULL for count(*)) */
    df_expr *arg2;          /* second input (covariance family: x) or parameter literal, else NULL */
    bool distinct;          /* aggregate over distinct values */
    df_expr *filter;        /* FILTER (WHERE ..) or NULL */
    int32_t norder;         /* ORDER BY keys inside the call (over the input) */
    struct df_sort_key *order;
    bool ignore_nulls;      /* first_value / last_value IGNORE NULLS */
    df_type *type;          /* result type */
    bool nullable;          /* result may be NULL (count never is) */
    const char *name;       /* display name, e.g. "sum(t.a)" */
    df_type *shown_as;      /* binder: the type SQL sees, cast from `type` (avg of durations), or NULL */
} df_agg;

const char *df_agg_fn_name(df_agg_fn fn);
/* True for aggregates whose states cannot be split into partial + final steps here. */
bool df_agg_fn_single_step(df_agg_fn fn);
/* True for aggregates whose result depends on the order of their input (ORDER BY inside the call matters). */
bool df_agg_fn_order_sensitive(df_agg_fn fn);
/* True when `a` must run in a single aggregation step (no partial states). */
bool df_agg_single_step(const df_agg *a);

/* ------------------------------------------------------------------------ */
/* Plan nodes                                                                */

typedef enum df_lnode_kind {
    DF_LN_SCAN,         /* a table provider */
    DF_LN_VALUES,       /* literal rows */
    DF_LN_EMPTY,        /* one row without columns (SELECT 1) or no rows */
    DF_LN_FILTER,
    DF_LN_PROJECT,
    DF_LN_AGGREGATE,    /* group keys then aggregates */
    DF_LN_JOIN,
    DF_LN_SORT,
    DF_LN_LIMIT,
    DF_LN_UNION,        /* UNION ALL of n inputs with equal column types */
    DF_LN_WINDOW,       /* input columns ++ one column per window function */
    DF_LN_RECURSIVE,    /* WITH RECURSIVE: inputs[0] static term, inputs[1] recursive term (reads the work table) */
    DF_LN_WORKTABLE,    /* the previous iteration's rows of the enclosing DF_LN_RECURSIVE with the same id */
} df_lnode_kind;

/* ------------------------------------------------------------------------ */
/* Window functions                                                          */

typedef enum df_win_fn {
    DF_WIN_AGG,         /* an aggregate over the frame (agg says which) */
    DF_WIN_ROW_NUMBER,
    DF_WIN_RANK,
    DF_WIN_DENSE_RANK,
    DF_WIN_PERCENT_RANK,
    DF_WIN_CUME_DIST,
    DF_WIN_NTILE,       /* param = buckets */
    DF_WIN_LAG,         /* param = offset; args[1] = default or absent */
    DF_WIN_LEAD,
    DF_WIN_FIRST_VALUE, /* over the frame */
    DF_WIN_LAST_VALUE,
    DF_WIN_NTH_VALUE,   /* param = n (1-based) */
} df_win_fn;

typedef enum df_frame_units { DF_FRAME_ROWS, DF_FRAME_RANGE, DF_FRAME_GROUPS } df_frame_units;

typedef enum df_bound_kind {
    DF_BOUND_UNBOUNDED_PRECEDING,
    DF_BOUND_PRECEDING,         /* offset before the current row / value / peer group */
    DF_BOUND_CURRENT,           /* the current row (ROWS) or its peers (RANGE, GROUPS) */
    DF_BOUND_FOLLOWING,
    DF_BOUND_UNBOUNDED_FOLLOWING,
} df_bound_kind;

typedef struct df_frame_bound {
    df_bound_kind kind;
    struct df_expr *offset;     /* PRECEDING / FOLLOWING: a non-negative literal (integer, or for RANGE the
                                   order key's type or an interval), else NULL */
} df_frame_bound;

typedef struct df_window {
    df_win_fn fn;               /* which function */
    int agg;                    /* DF_WIN_AGG: the df_agg_fn */
    struct df_agg *more;        /* DF_WIN_AGG of a single-step aggregate (median, var_pop, ..), else NULL */
    bool count_star;            /* count(*) */
    int32_t nargs;              /* arguments (value first) */
    struct df_expr **args;
    int64_t param;              /* ntile buckets, lag/lead offset, nth_value n (0: always NULL) */
    bool ignore_nulls;          /* IGNORE NULLS: value functions skip NULL values */
    int32_t npart;              /* PARTITION BY */
    struct df_expr **part;
    int32_t norder;             /* ORDER BY */
    struct df_sort_key *order;
    df_frame_units units;       /* frame */
    df_frame_bound start, end;
    df_type *type;              /* result type */
    const char *name;           /* its output column's name */
} df_window;

/* The SQL name of a window function ("row_number", "sum", ...). */
const char *df_win_fn_name(const df_window *w);

typedef enum df_join_type {
    DF_JOIN_INNER,
    DF_JOIN_LEFT,
    DF_JOIN_RIGHT,
    DF_JOIN_FULL,
    DF_JOIN_LEFT_SEMI,
    DF_JOIN_LEFT_ANTI,
    DF_JOIN_RIGHT_SEMI,
    DF_JOIN_RIGHT_ANTI,
    DF_JOIN_LEFT_MARK,  /* every left row ++ a Boolean `mark`: it has a match (EXISTS / IN as a value) */
} df_join_type;

/* An output column of a node. */
typedef struct df_lcol {
    const char *name;       /* column name */
    const char *qualifier;  /* table name or alias that qualifies it, or NULL */
    df_type *type;          /* type (reference held by the container) */
    bool nullable;          /* may hold NULL */
} df_lcol;

typedef struct df_sort_key {
    df_expr *expr;          /* key over the input */
    bool desc;              /* descending */
    bool nulls_first;       /* NULLs before values */
} df_sort_key;

typedef struct df_lnode df_lnode;
struct df_lnode {
    df_lnode_kind kind;     /* what the node does */
    int32_t ncols;          /* output columns */
    df_lcol *cols;
    int32_t ninputs;        /* children */
    df_lnode **inputs;
    union {
        struct {
            df_table_provider *provider;  /* reference held by the container */
            const char *table;            /* registered name (for EXPLAIN and profiles) */
            int32_t nproj;                /* provider columns read, in output order */
            int32_t *proj;
            int32_t nfilters;             /* pushed conjuncts over the provider schema (hints) */
            df_expr **filters;
            int64_t fetch;                /* rows needed at most (-1 = all) */
        } scan;
        struct {
            int32_t nrows;                /* rows of ncols expressions each */
            df_expr ***rows;
        } values;
        struct {
            bool one_row;                 /* true: one row of no columns; false: no rows */
        } empty;
        struct {
            df_expr *pred;                /* rows where it is TRUE pass */
        } filter;
        struct {
            df_expr **exprs;              /* one per output column */
        } project;
        struct {
            int32_t ngroup;               /* group keys (output columns 0..ngroup-1) */
            df_expr **group;
            int32_t naggs;                /* aggregates (output columns ngroup..) */
            df_agg *aggs;
            /* GROUPING SETS with the empty set (): over no input rows it still gives one row, whose
             * last key (the grouping id) is empty_set_id and whose other keys are NULL. */
            bool has_empty_set;
            uint64_t empty_set_id;
        } agg;
        struct {
            df_join_type type;
            int32_t nkeys;                /* equi-join keys: lkeys over left, rkeys over right */
            df_expr **lkeys;
            df_expr **rkeys;
            bool *null_equal;             /* per key: IS NOT DISTINCT FROM (NULLs match) */
            df_expr *filter;              /* residual condition over left ++ right, or NULL */
            bool null_aware;              /* LEFT ANTI from NOT IN: a NULL key on the right removes every
                                             row; a NULL left key keeps its row only when the right is empty */
            bool single_row;              /* the right side is a scalar subquery: more than one row is an error */
        } join;
        struct {
            int32_t nkeys;
            df_sort_key *keys;
            int64_t fetch;                /* keep only the first fetch rows (-1 = all) */
        } sort;
        struct {
            int64_t skip;                 /* OFFSET */
            int64_t fetch;                /* LIMIT (-1 = none) */
        } limit;
        struct {
            int32_t nwin;                 /* window functions (output columns after the input's) */
            df_window *wins;
        } window;
        struct {
            int32_t id;                   /* DF_LN_RECURSIVE / DF_LN_WORKTABLE: which work table */
            bool distinct;                /* DF_LN_RECURSIVE: UNION (rows already produced are dropped) */
        } recursive;
    } u;
};

/* ------------------------------------------------------------------------ */
/* Containers                                                                */

typedef void (*df_lplan_cleanup_fn)(void *ptr);

typedef struct df_lplan_cleanup {
    df_lplan_cleanup_fn fn;     /* called with ptr when the container dies */
    void *ptr;
} df_lplan_cleanup;

struct df_lplan {
    _Atomic int32_t refs;       /* reference count */
    df_arena arena;             /* nodes, expressions, strings */
    df_lplan_cleanup *cleanups; /* references to release (df_malloc array) */
    int32_t ncleanups, cap_cleanups;
    df_lnode *root;             /* the plan (after binding: unoptimized) */
    df_lnode *optimized;        /* the optimized plan, or NULL before optimizing */
    char *sql;                  /* the SQL text it was bound from (arena) or NULL */
    int32_t ndeps;              /* registered names read directly (arena strings) */
    const char **deps;
};

/* A new empty container (refs = 1). */
df_errkind df__lplan_new(df_lplan **out, df_error *err);
df_lplan *df__lplan_retain(df_lplan *p);
void df__lplan_release(df_lplan *p);
/* Arena allocation; NULL when out of memory. */
void *df__lplan_alloc(df_lplan *p, size_t size);
char *df__lplan_strdup(df_lplan *p, const char *s);
/* Registers fn(ptr) to run when the container dies.  On failure runs it now and returns OOM. */
df_errkind df__lplan_defer(df_lplan *p, df_lplan_cleanup_fn fn, void *ptr, df_error *err);
/* Takes a type reference into the container (for use in nodes); returns t or NULL on OOM (t released). */
df_type *df__lplan_keep_type(df_lplan *p, df_type *t, df_error *err);
/* Keeps `other` alive as long as p (for shared subtrees). */
df_errkind df__lplan_depend(df_lplan *p, df_lplan *other, df_error *err);

/* Expression constructors (arena); NULL + err on failure. */
df_expr *df__expr_column(df_lplan *p, int32_t index, const df_lcol *col, df_error *err);
df_expr *df__expr_literal(df_lplan *p, const df_scalar *value, df_error *err);   /* copies */
df_expr *df__expr_null(df_lplan *p, df_type *type, df_error *err);
df_expr *df__expr_cast(df_lplan *p, df_expr *arg, df_type *type, bool try_cast, bool implicit, df_error *err);
df_expr *df__expr_new(df_lplan *p, df_expr_kind kind, df_type *type, bool nullable, int32_t nargs,
                      df_expr *const *args, df_error *err);
df_expr *df__expr_func(df_lplan *p, df_fn fn, df_type *type, bool nullable, int32_t nargs,
                       df_expr *const *args, df_error *err);
/* A copy of e with column references remapped through map[old] -> new (-1 = not available -> NULL). */
df_expr *df__expr_remap(df_lplan *p, const df_expr *e, const int32_t *map, int32_t nmap, df_error *err);
/* A copy of e with column i replaced by a copy of repl[i] (projection inlining). */
df_expr *df__expr_substitute(df_lplan *p, const df_expr *e, df_expr *const *repl, int32_t nrepl, df_error *err);
/* Structural equality (same kinds, functions, columns, literals, types). */
bool df__expr_equal(const df_expr *a, const df_expr *b);
/* True when e references no columns (a constant expression). */
bool df__expr_is_constant(const df_expr *e);
/* Marks used[c] for every column e references (used has at least the input width). */
void df__expr_columns(const df_expr *e, bool *used, int32_t width);
/* True when e contains a volatile function (random). */
bool df__expr_volatile(const df_expr *e);
/*
 * Appends the display form DataFusion uses for output column names
 * ("t.a + Int64(1)", "count(*)", "CAST(t.a AS Int64)").
 */
df_errkind df__expr_display(const df_expr *e, df_buf *out, df_error *err);
/* Appends a literal the way DataFusion displays it: Int64(1), Utf8("x"), NULL, ... */
df_errkind df__scalar_display(const df_scalar *s, df_buf *out, df_error *err);
/* Appends the value alone (1, x, 2020-01-01) for EXPLAIN and messages. */
df_errkind df__scalar_format(const df_scalar *s, df_buf *out, df_error *err);

/* Node constructor: kind, inputs; cols filled by the caller (arena array of ncols). */
df_lnode *df__lnode_new(df_lplan *p, df_lnode_kind kind, int32_t ninputs, df_lnode *const *inputs,
                        int32_t ncols, df_error *err);
/* Multi-line indented description of a plan (EXPLAIN). */
df_errkind df__lnode_explain(const df_lnode *n, df_buf *out, df_error *err);

/* ------------------------------------------------------------------------ */
/* Binding and optimizing                                                    */

/*
 * Evaluates a constant expression (no column references) to a scalar; the
 * executor supplies it so that the front end needs no kernels.  Returns
 * DF_OK and *out (caller clears), or the evaluation error.
 */
typedef df_errkind (*df_const_eval_fn)(const df_expr *e, df_scalar *out, df_error *err);

/*
 * Parses and binds one read-only statement against `cat` into a new
 * container (root = unoptimized plan, sql, deps).  Errors as
 * df_query_plan (exec/query.h).
 */
df_errkind df__sql_bind(df_catalog *cat, const char *sql, df_const_eval_fn eval, df_lplan **out, df_error *err);

/*
 * Optimizes p->root into p->optimized (allocating in p): constant folding,
 * predicate pushdown (through projections, into join sides, into scans as
 * hints), projection pruning, limit pushdown, filter/projection merging.
 */
df_errkind df__sql_optimize(df_lplan *p, df_const_eval_fn eval, df_error *err);

/* Type helpers shared by the binder and the executor (sql_types.c). */
/* DataFusion's name of a SQL type name ("int" -> Int32); NULL + err when unknown. */
struct ast_type;
df_type *df__sql_type_from_ast(const struct ast_type *t, const char *text, int32_t text_len, df_error *err);
/* Parses an Arrow type display string as arrow_cast accepts ("Int32", "Decimal128(10, 2)", "Timestamp(ns)"). */
df_type *df__sql_type_from_arrow_name(const char *s, df_error *err);

#endif
