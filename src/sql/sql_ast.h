/*
 * The SQL syntax tree produced by the parser and consumed by the binder.
 *
 * Every node lives in the parse arena and carries the byte offset of its
 * first token (`pos`) so that binder errors can point into the text.
 * Identifiers are already folded (unquoted -> lower case) and strings
 * unescaped.  The tree is untyped: names are not resolved here.
 */
#ifndef DF_SQL_SQL_AST_H
#define DF_SQL_SQL_AST_H

#include "common/common.h"

typedef struct ast_expr ast_expr;
typedef struct ast_query ast_query;
typedef struct ast_select ast_select;
typedef struct ast_setexpr ast_setexpr;
typedef struct ast_tableref ast_tableref;
typedef struct ast_type ast_type;

/* A possibly qualified name: parts[0].parts[1]... */
typedef struct ast_name {
    int32_t n;              /* number of parts (>= 1) */
    char **parts;           /* folded identifier text */
    bool *quoted;           /* per part: written in quotes */
} ast_name;

typedef enum ast_expr_kind {
    AE_COLUMN,          /* name */
    AE_STAR,            /* * or t.* (name.n == 0 for bare *) */
    AE_INTEGER,         /* text: digits */
    AE_NUMBER,          /* text: decimal/float literal */
    AE_STRING,          /* text (unescaped), len */
    AE_BINARY,          /* X'..': text holds bytes, len */
    AE_BOOL,            /* bval */
    AE_NULL,
    AE_TYPED_STRING,    /* type 'text': DATE '..', TIMESTAMP '..', INTERVAL '..' */
    AE_INTERVAL,        /* INTERVAL '1' DAY style: text + unit in name */
    AE_UNARY,           /* op, a */
    AE_BINOP,           /* op, a, b */
    AE_AND,             /* list[0] AND list[1] AND ... (flattened) */
    AE_OR,              /* list[0] OR list[1] OR ... (flattened) */
    AE_NOT,             /* NOT a */
    AE_IS,              /* a IS [NOT] NULL/TRUE/FALSE/UNKNOWN: op = AIS_*, negated */
    AE_DISTINCT_FROM,   /* a IS [NOT] DISTINCT FROM b: negated = NOT DISTINCT */
    AE_BETWEEN,         /* a [NOT] BETWEEN b AND c (symmetric flag) */
    AE_IN_LIST,         /* a [NOT] IN (list) */
    AE_IN_SUBQUERY,     /* a [NOT] IN (query) */
    AE_EXISTS,          /* [NOT] EXISTS (query) */
    AE_SUBQUERY,        /* (query) as a scalar */
    AE_QUANTIFIED,      /* a op ANY|SOME|ALL (query): op = comparison token, flag = ALL */
    AE_LIKE,            /* a [NOT] LIKE/ILIKE b [ESCAPE c]: ilike flag */
    AE_SIMILAR,         /* a [NOT] SIMILAR TO b */
    AE_REGEX,           /* a ~ b etc.: op holds the token */
    AE_CASE,            /* [operand] WHEN.. THEN.. [ELSE] */
    AE_CAST,            /* CAST(a AS type), a::type, TRY_CAST */
    AE_FUNC,            /* name(args) [FILTER (WHERE ..)] [OVER (...)] */
    AE_EXTRACT,         /* EXTRACT(field FROM a): field in text */
    AE_POSITION,        /* POSITION(a IN b) */
    AE_SUBSTRING,       /* SUBSTRING(a FROM b FOR c) */
    AE_TRIM,            /* TRIM([BOTH|LEADING|TRAILING] [b] FROM a): op = side */
    AE_OVERLAY,         /* OVERLAY(a PLACING b FROM c [FOR d]) */
    AE_PARAM,           /* $1 or ? placeholders (unsupported at bind) */
    AE_ARRAY,           /* [a, b] or a[i] (unsupported at bind) */
    AE_CURRENT,         /* CURRENT_DATE / CURRENT_TIMESTAMP / CURRENT_TIME: op = keyword */
} ast_expr_kind;

typedef enum ast_is_kind { AIS_NULL, AIS_TRUE, AIS_FALSE, AIS_UNKNOWN } ast_is_kind;
typedef enum ast_trim_side { ATRIM_BOTH, ATRIM_LEADING, ATRIM_TRAILING } ast_trim_side;

/* One end of a window frame: kind as df_bound_kind (logical_plan.h), offset for PRECEDING/FOLLOWING. */
typedef struct ast_frame_bound {
    int kind;               /* 0 UNBOUNDED PRECEDING, 1 PRECEDING, 2 CURRENT ROW, 3 FOLLOWING, 4 UNBOUNDED FOLLOWING */
    ast_expr *offset;       /* the n of n PRECEDING / n FOLLOWING */
    int32_t pos;            /* byte offset */
} ast_frame_bound;

/* Window specification of an OVER clause. */
typedef struct ast_window {
    int32_t npartition;     /* PARTITION BY expressions */
    ast_expr **partition;
    int32_t norder;         /* ORDER BY items */
    struct ast_order *order;
    bool has_frame;         /* a ROWS/RANGE/GROUPS clause was present */
    int frame_units;        /* 0 ROWS, 1 RANGE, 2 GROUPS (as df_frame_units) */
    ast_frame_bound start, end; /* frame ends (end = CURRENT ROW when only a start is given) */
    bool exclude;           /* an EXCLUDE clause was present (unsupported) */
    char *name;             /* OVER name: a named window (unsupported), else NULL */
} ast_window;

struct ast_expr {
    ast_expr_kind kind;     /* what the node is */
    int32_t pos;            /* byte offset of its first token */
    int32_t end;            /* byte offset just past its last token */
    int32_t height;         /* 1 + the tallest operand (bounds recursion in later passes) */
    int op;                 /* operator token (sql_tok), AIS_*, trim side, or keyword */
    bool negated;           /* NOT forms; NOT DISTINCT FROM */
    bool flag;              /* ILIKE; TRY_CAST; SYMMETRIC; DISTINCT in calls; `::` cast */
    bool star_arg;          /* count(*) */
    char *text;             /* literal text / EXTRACT field / interval unit */
    int32_t len;            /* bytes of text for strings */
    bool bval;              /* AE_BOOL */
    ast_name name;          /* AE_COLUMN, AE_STAR qualifier, AE_FUNC name */
    ast_expr *a, *b, *c, *d;    /* operands */
    int32_t nlist;          /* IN list, call args, CASE branches */
    ast_expr **list;        /* IN list / call arguments / WHEN conditions */
    ast_expr **list2;       /* CASE THEN results (same count as list) */
    ast_type *type;         /* CAST target / typed string type */
    ast_query *query;       /* subqueries */
    ast_expr *filter;       /* aggregate FILTER (WHERE ..) */
    ast_window *over;       /* OVER (...) */
    int32_t norder;         /* ORDER BY inside an aggregate call (or its WITHIN GROUP clause) */
    struct ast_order *order;
    bool within_group;      /* the ORDER BY came from WITHIN GROUP (ORDER BY ..) */
    int null_treatment;     /* 0 none, 1 IGNORE NULLS, 2 RESPECT NULLS */
};

/* A SQL type name as written. */
struct ast_type {
    int32_t pos;            /* byte offset */
    char *name;             /* lower-case base name ("int", "varchar", "decimal", "timestamp", ...) */
    int32_t nparams;        /* numeric parameters (precision, scale, ...) */
    int64_t params[2];      /* their values */
    bool with_tz;           /* TIMESTAMP WITH TIME ZONE */
    bool is_array;          /* trailing [] */
    bool is_unsigned;       /* INT UNSIGNED */
    char *arrow_text;       /* for arrow_cast: not used by the parser */
};

typedef struct ast_order {
    ast_expr *expr;         /* sort key */
    bool desc;              /* DESC */
    int nulls;              /* 0 default, 1 NULLS FIRST, 2 NULLS LAST */
} ast_order;

typedef struct ast_select_item {
    ast_expr *expr;         /* the expression (AE_STAR for wildcards) */
    char *alias;            /* AS name or NULL */
    int32_t alias_pos;      /* byte offset of the alias */
} ast_select_item;

typedef enum ast_join_type {
    AJ_INNER, AJ_LEFT, AJ_RIGHT, AJ_FULL, AJ_CROSS, AJ_LEFT_SEMI, AJ_LEFT_ANTI, AJ_RIGHT_SEMI,
    AJ_RIGHT_ANTI,
} ast_join_type;

typedef enum ast_tableref_kind { AT_NAMED, AT_SUBQUERY, AT_JOIN, AT_FUNCTION } ast_tableref_kind;

struct ast_tableref {
    ast_tableref_kind kind; /* what kind of FROM item */
    int32_t pos;            /* byte offset */
    ast_name name;          /* AT_NAMED / AT_FUNCTION: table name */
    char *alias;            /* AS alias or NULL */
    int32_t ncol_aliases;   /* alias(c1, c2, ...) */
    char **col_aliases;
    ast_query *query;       /* AT_SUBQUERY */
    bool lateral;           /* LATERAL subquery */
    ast_join_type join;     /* AT_JOIN */
    bool natural;           /* NATURAL JOIN */
    ast_tableref *left, *right;   /* AT_JOIN */
    ast_expr *on;           /* ON condition */
    int32_t nusing;         /* USING (cols) */
    char **using_cols;
    int32_t nargs;          /* AT_FUNCTION arguments */
    ast_expr **args;
};

struct ast_select {
    int32_t pos;            /* byte offset of SELECT */
    bool distinct;          /* SELECT DISTINCT */
    int32_t ndistinct_on;   /* DISTINCT ON (...) expressions */
    ast_expr **distinct_on;
    int32_t nitems;         /* projection */
    ast_select_item *items;
    int32_t nfrom;          /* FROM items (comma = cross join) */
    ast_tableref **from;
    ast_expr *where;
    int32_t ngroup;         /* GROUP BY expressions */
    ast_expr **group;
    bool group_all;         /* GROUP BY ALL */
    bool group_sets;        /* ROLLUP/CUBE/GROUPING SETS were used: the sets below */
    int32_t nsets;          /* grouping sets (expanded: cross product of the items, ROLLUP prefixes, CUBE subsets) */
    int32_t *set_len;       /* per set: its expressions */
    int32_t **sets;         /* per set: indexes into `group` */
    ast_expr *having;
    ast_expr *qualify;      /* QUALIFY (unsupported) */
};

typedef enum ast_set_kind { AS_SELECT, AS_VALUES, AS_QUERY, AS_SETOP } ast_set_kind;
typedef enum ast_setop { ASO_UNION, ASO_INTERSECT, ASO_EXCEPT } ast_setop;

struct ast_setexpr {
    ast_set_kind kind;      /* which arm is set */
    int32_t pos;            /* byte offset */
    ast_select *select;     /* AS_SELECT */
    int32_t nrows;          /* AS_VALUES rows */
    int32_t *row_len;       /* per row: values count */
    ast_expr ***rows;       /* per row: values */
    ast_query *query;       /* AS_QUERY: parenthesised query */
    ast_setop op;           /* AS_SETOP */
    bool all;               /* UNION ALL etc. */
    bool by_name;           /* UNION BY NAME (unsupported) */
    ast_setexpr *left, *right;
};

typedef struct ast_cte {
    char *name;             /* CTE name */
    int32_t pos;            /* byte offset */
    int32_t ncols;          /* optional column list */
    char **cols;
    ast_query *query;       /* its definition */
} ast_cte;

struct ast_query {
    int32_t pos;            /* byte offset of the query */
    bool recursive;         /* WITH RECURSIVE */
    int32_t nctes;          /* WITH items */
    ast_cte *ctes;
    ast_setexpr *body;      /* the set expression */
    int32_t norder;         /* ORDER BY items */
    ast_order *order;
    ast_expr *limit;        /* LIMIT / FETCH FIRST (NULL = none) */
    ast_expr *offset;       /* OFFSET (NULL = none) */
    int32_t height;         /* 1 + its tallest expression, join chain and set-operation chain (<= DF_SQL_MAX_HEIGHT) */
};

/* The most grouping sets one GROUP BY may expand to (CUBE of 12 expressions). */
#define DF_SQL_MAX_GROUPING_SETS 4096

/* The deepest parenthesis / query nesting the parser accepts. */
#define DF_SQL_MAX_DEPTH 200
/* The tallest expression tree or query accepted (AND/OR chains are flattened, so do not count); a
 * subquery counts its own height under the expression holding it, join and set-operation chains one
 * level per join or operation. */
#define DF_SQL_MAX_HEIGHT 1000

/*
 * Parses exactly one read-only statement.  On success *out points into
 * `arena`.  Errors: DF_ERR_SQL_SYNTAX (err->offset = character offset),
 * DF_ERR_SQL_NOT_READ_ONLY (DDL/DML/several statements), DF_ERR_SQL_TOO_COMPLEX
 * (nesting past DF_SQL_MAX_DEPTH or DF_SQL_MAX_HEIGHT), DF_ERR_SQL_UNSUPPORTED (EXPLAIN and
 * other statements we recognise but do not run), DF_ERR_OUT_OF_MEMORY.
 */
df_errkind df__sql_parse(const char *sql, size_t len, df_arena *arena, ast_query **out, df_error *err);

/*
 * Parses a standalone type name ("DECIMAL(10, 2)", "timestamp with time
 * zone") as used in CAST; used for harness conversions.  Same errors.
 */
df_errkind df__sql_parse_type(const char *text, size_t len, df_arena *arena, ast_type **out, df_error *err);

#endif
