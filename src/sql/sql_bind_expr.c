/*
 * Expression binding: AST expressions -> typed df_expr trees.
 *
 * Names resolve against a scope (columns of the FROM clause, or of the
 * aggregate output after GROUP BY).  Types are coerced the DataFusion way
 * (sql_types.c) and every coercion becomes an explicit implicit-flagged
 * cast, so kernels see exactly the types they were chosen for.  SQL forms
 * without a node of their own are rewritten: BETWEEN into two
 * comparisons, CASE x WHEN v into CASE WHEN x = v, EXTRACT into date_part,
 * NVL2 into CASE; the rewritten node remembers the original spelling in
 * `display` so that output names read like the SQL.
 *
 * After GROUP BY (ctx->agg set) binding works top down: a subexpression
 * that equals a group key becomes a reference to that key's output
 * column, an aggregate call becomes a reference to its aggregate's output
 * column, and a bare column that is neither is an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_binder.h"
#include "sql/sql_lexer.h"

/* ------------------------------------------------------------------------ */
/* Shared helpers                                                            */

df_errkind df__bind_error(binder *b, df_errkind kind, int32_t pos, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (pos < 0) {
        df_error_set(b->err, kind, "%s", msg);
        df_error_set_origin(b->err, "sql");
        return kind;
    }
    return df__sql_error_at(b->err, kind, b->text, b->text_len, pos, "%s", msg);
}

void *df__bind_oom(binder *b) {
    DF_OOM(b->err);
    return NULL;
}

df_type *df__bind_keep(binder *b, df_type *t) { return df__lplan_keep_type(b->plan, t, b->err); }

char *df__bind_strdup(binder *b, const char *s) {
    char *c = df__lplan_strdup(b->plan, s);
    if (!c && s) df__bind_oom(b);
    return c;
}

char *df__bind_display(binder *b, const df_expr *e) {
    df_buf buf;
    df_buf_init(&buf, 1 << 20);
    if (df__expr_display(e, &buf, b->err)) {
        df_buf_free(&buf);
        return NULL;
    }
    char *s = df__bind_strdup(b, buf.data ? buf.data : "");
    df_buf_free(&buf);
    return s;
}

static char *type_name(const df_type *t, char *buf, size_t size) {
    df_buf tmp;
    df_buf_init(&tmp, 256);
    if (df__sqlt_display(t, &tmp, NULL) == DF_OK && tmp.data)
        snprintf(buf, size, "%s", tmp.data);
    else
        snprintf(buf, size, "?");
    df_buf_free(&tmp);
    return buf;
}

df_expr *df__bind_coerce(binder *b, df_expr *e, df_type *t, int32_t pos) {
    if (df_type_equals(e->type, t)) return e;
    if (e->kind == DF_EX_LITERAL && e->lit->is_null) {
        df_expr *n = df__expr_null(b->plan, t, b->err);
        if (n) n->display = df__bind_display(b, e);
        return n;
    }
    if (!df__sqlt_can_cast(e->type, t)) {
        char a[64], c[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot cast %s to %s", type_name(e->type, a, sizeof a),
                   type_name(t, c, sizeof c));
        return NULL;
    }
    return df__expr_cast(b->plan, e, t, false, true, b->err);
}

df_errkind df__bind_eval_const(binder *b, const df_expr *e, df_scalar *out) {
    if (e->kind == DF_EX_LITERAL) return df_scalar_copy(out, e->lit, b->err);
    if (!b->eval) return df_error_set(b->err, DF_ERR_INTERNAL, "no constant evaluator");
    return b->eval(e, out, b->err);
}

static df_expr *literal(binder *b, const df_scalar *s) { return df__expr_literal(b->plan, s, b->err); }

static df_expr *lit_bool(binder *b, bool v) {
    df_scalar s = {.type = df_type_bool(), .v.b = v};
    return literal(b, &s);
}

static df_expr *lit_utf8(binder *b, const char *text, int32_t len) {
    df_scalar s = {.type = df_type_utf8()};
    s.v.bytes.ptr = (uint8_t *)(uintptr_t)text;
    s.v.bytes.len = len;
    return literal(b, &s);
}

/* ------------------------------------------------------------------------ */
/* Columns                                                                   */

static bool qualifier_matches(const char *have, const char *want) {
    return have && (strcmp(have, want) == 0 || df_ascii_casecmp(have, want) == 0);
}

/* Appends "a, b, c" (up to ~300 bytes) of visible column names for messages. */
static void list_columns(const bscope *s, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < s->ncols && used + 8 < size; i++) {
        if (s->hidden && s->hidden[i]) continue;
        int n = snprintf(buf + used, size - used, "%s%s%s%s", used ? ", " : "",
                         s->cols[i].qualifier ? s->cols[i].qualifier : "", s->cols[i].qualifier ? "." : "",
                         s->cols[i].name);
        if (n < 0 || (size_t)n >= size - used) {
            snprintf(buf + used, size - used, ", ...");
            break;
        }
        used += (size_t)n;
    }
}

static df_expr *bind_column(binder *b, const ast_expr *e, const bctx *ctx) {
    const ast_name *n = &e->name;
    const char *col = n->parts[n->n - 1];
    const char *qual = n->n >= 2 ? n->parts[n->n - 2] : NULL;
    const bscope *s = ctx->scope;
    int32_t found = -1, matches = 0;
    /* With prefer_from, columns from that index on (an inner query's) are searched first. */
    int32_t pass_from[2] = {s && s->prefer_from > 0 ? s->prefer_from : 0, 0};
    int32_t pass_to[2] = {s ? s->ncols : 0, s && s->prefer_from > 0 ? s->prefer_from : 0};
    for (int pass = 0; pass < 2 && matches == 0; pass++) {
        for (int32_t i = pass_from[pass]; s && i < pass_to[pass]; i++) {
            if (strcmp(s->cols[i].name, col) != 0) continue;
            if (qual) {
                if (!qualifier_matches(s->cols[i].qualifier, qual)) continue;
            } else if (s->hidden && s->hidden[i]) {
                continue;
            }
            if (found < 0) found = i;
            matches++;
        }
    }
    if (matches > 1) {
        df__bind_error(b, DF_ERR_SQL_AMBIGUOUS_COLUMN, e->pos, "column reference `%s` is ambiguous", col);
        return NULL;
    }
    if (found < 0) {
        char avail[320];
        if (s) list_columns(s, avail, sizeof avail); else avail[0] = '\0';
        /* Suggest the quoted spelling when only the case differs. */
        for (int32_t i = 0; s && i < s->ncols; i++) {
            if (df_ascii_casecmp(s->cols[i].name, col) == 0 && !n->quoted[n->n - 1]) {
                df__bind_error(b, DF_ERR_SQL_UNKNOWN_COLUMN, e->pos,
                           "column `%s` not found; did you mean \"%s\" (quoted identifiers keep their case)?",
                           col, s->cols[i].name);
                return NULL;
            }
        }
        if (qual)
            df__bind_error(b, DF_ERR_SQL_UNKNOWN_COLUMN, e->pos, "column `%s.%s` not found; valid columns: %s", qual,
                       col, avail[0] ? avail : "(none)");
        else
            df__bind_error(b, DF_ERR_SQL_UNKNOWN_COLUMN, e->pos, "column `%s` not found; valid columns: %s", col,
                       avail[0] ? avail : "(none)");
        return NULL;
    }
    return df__expr_column(b->plan, found, &s->cols[found], b->err);
}

/* ------------------------------------------------------------------------ */
/* Literals                                                                  */

static df_expr *bind_integer(binder *b, const ast_expr *e, bool negative) {
    const char *t = e->text;
    errno = 0;
    char *end;
    unsigned long long u = strtoull(t, &end, 10);
    bool overflow = errno == ERANGE || *end != '\0';
    df_scalar s = {0};
    if (!overflow && !negative && u <= (unsigned long long)INT64_MAX) {
        s.type = df_type_int64();
        s.v.i64 = (int64_t)u;
    } else if (!overflow && negative && u <= (unsigned long long)INT64_MAX + 1ULL) {
        s.type = df_type_int64();
        s.v.i64 = u == (unsigned long long)INT64_MAX + 1ULL ? INT64_MIN : -(int64_t)u;
    } else if (!overflow && !negative) {
        s.type = df_type_uint64();
        s.v.u64 = u;
    } else {
        s.type = df_type_float64();
        s.v.f64 = strtod(t, NULL) * (negative ? -1 : 1);
    }
    return literal(b, &s);
}

static df_expr *bind_number(binder *b, const ast_expr *e, bool negative) {
    df_scalar s = {.type = df_type_float64()};
    s.v.f64 = strtod(e->text, NULL);
    if (negative) s.v.f64 = -s.v.f64;
    return literal(b, &s);
}

/* TYPE 'text': DATE/TIMESTAMP/TIME/... literals are casts of the string (folded later). */
static df_expr *bind_typed_string(binder *b, const ast_expr *e) {
    if (strcmp(e->type->name, "interval") == 0) {
        df_scalar s = {0};
        if (df__bind_parse_interval(b, e->text, NULL, e->pos, &s)) return NULL;
        df_expr *r = literal(b, &s);
        df_scalar_clear(&s);
        return r;
    }
    df_type *t = df__bind_keep(b, df__sql_type_from_ast(e->type, b->text, b->text_len, b->err));
    if (!t) return NULL;
    df_expr *str = lit_utf8(b, e->text, e->len);
    if (!str) return NULL;
    if (!df__sqlt_can_cast(str->type, t)) {
        df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "cannot write a literal of type %s as a string", e->type->name);
        return NULL;
    }
    return df__expr_cast(b->plan, str, t, false, false, b->err);
}

/* ------------------------------------------------------------------------ */
/* Intervals                                                                 */

df_errkind df__bind_parse_interval(binder *b, const char *text, const char *unit, int32_t pos, df_scalar *out) {
    int32_t months, days;
    int64_t nanos;
    int r = df__sqlt_parse_interval(text, strlen(text), unit, &months, &days, &nanos);
    if (r == 1) return df__bind_error(b, DF_ERR_SQL_TYPE, pos, "interval `%.100s` is out of range", text);
    if (r) return df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot parse interval `%.100s`", text);
    memset(out, 0, sizeof *out);
    out->type = df_type_interval_mdn();
    out->v.interval.months = months;
    out->v.interval.days = days;
    out->v.interval.nanos = nanos;
    return DF_OK;
}

static df_expr *bind_interval(binder *b, const ast_expr *e) {
    df_scalar s = {0};
    if (df__bind_parse_interval(b, e->text, e->name.n ? e->name.parts[0] : NULL, e->pos, &s)) return NULL;
    df_expr *r = literal(b, &s);
    df_scalar_clear(&s);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Operators                                                                 */

df_expr *df__bind_condition(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *x = df__bind_expr(b, e, ctx);
    if (!x) return NULL;
    if (x->type->id == DF_TYPE_BOOL) return x;
    if (x->type->id == DF_TYPE_NULL) return df__bind_coerce(b, x, df_type_bool(), e->pos);
    char t[64];
    df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "%s must be a boolean expression, not %s",
               ctx->clause ? ctx->clause : "condition", type_name(x->type, t, sizeof t));
    return NULL;
}

static df_fn arith_fn(int tok) {
    switch (tok) {
    case TK_PLUS: return DF_FN_ADD;
    case TK_MINUS: return DF_FN_SUB;
    case TK_STAR: return DF_FN_MUL;
    case TK_SLASH: return DF_FN_DIV;
    default: return DF_FN_MOD;
    }
}

static df_fn cmp_fn(int tok) {
    switch (tok) {
    case TK_EQ: return DF_FN_EQ;
    case TK_NE: return DF_FN_NE;
    case TK_LT: return DF_FN_LT;
    case TK_LE: return DF_FN_LE;
    case TK_GT: return DF_FN_GT;
    case TK_GE: return DF_FN_GE;
    default: return DF_FN_IS_NOT_DISTINCT;
    }
}

/* l op r for a comparison function, coercing both sides. */
static df_expr *make_comparison(binder *b, df_fn fn, df_expr *l, df_expr *r, int32_t pos) {
    df_type *t = df__bind_keep(b, df__sqlt_comparison(l->type, r->type));
    if (!t) {
        if (b->err && b->err->kind == DF_ERR_OUT_OF_MEMORY) return NULL;
        char x[64], y[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot compare %s with %s", type_name(l->type, x, sizeof x),
                   type_name(r->type, y, sizeof y));
        return NULL;
    }
    df_expr *args[2] = {df__bind_coerce(b, l, t, pos), df__bind_coerce(b, r, t, pos)};
    if (!args[0] || !args[1]) return NULL;
    bool nullable = l->nullable || r->nullable;
    if (fn == DF_FN_IS_DISTINCT || fn == DF_FN_IS_NOT_DISTINCT) nullable = false;
    return df__expr_func(b->plan, fn, df_type_bool(), nullable, 2, args, b->err);
}

static df_expr *make_arith(binder *b, df_fn fn, df_expr *l, df_expr *r, int32_t pos) {
    static const sqlt_arith_op ops[] = {[DF_FN_ADD] = SQLT_ADD, [DF_FN_SUB] = SQLT_SUB, [DF_FN_MUL] = SQLT_MUL,
                                        [DF_FN_DIV] = SQLT_DIV, [DF_FN_MOD] = SQLT_MOD};
    df_type *lt, *rt, *ret;
    if (!df__sqlt_arith(ops[fn], l->type, r->type, &lt, &rt, &ret)) {
        char x[64], y[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot apply `%s` to %s and %s", df_fn_name(fn),
                   type_name(l->type, x, sizeof x), type_name(r->type, y, sizeof y));
        return NULL;
    }
    lt = df__bind_keep(b, lt);
    rt = df__bind_keep(b, rt);
    ret = df__bind_keep(b, ret);
    if (!lt || !rt || !ret) return NULL;
    df_expr *args[2] = {df__bind_coerce(b, l, lt, pos), df__bind_coerce(b, r, rt, pos)};
    if (!args[0] || !args[1]) return NULL;
    return df__expr_func(b->plan, fn, ret, l->nullable || r->nullable, 2, args, b->err);
}

static df_expr *make_concat_op(binder *b, df_expr *l, df_expr *r, int32_t pos) {
    df_type *s = df_type_utf8();
    if (l->type->id != DF_TYPE_UTF8 && r->type->id != DF_TYPE_UTF8 && l->type->id != DF_TYPE_NULL &&
        r->type->id != DF_TYPE_NULL) {
        char x[64], y[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot apply `||` to %s and %s", type_name(l->type, x, sizeof x),
                   type_name(r->type, y, sizeof y));
        return NULL;
    }
    df_expr *args[2] = {df__bind_coerce(b, l, s, pos), df__bind_coerce(b, r, s, pos)};
    if (!args[0] || !args[1]) return NULL;
    return df__expr_func(b->plan, DF_FN_CONCAT_OP, s, l->nullable || r->nullable, 2, args, b->err);
}

static df_expr *make_bitwise(binder *b, df_fn fn, df_expr *l, df_expr *r, int32_t pos) {
    df_type *lt, *rt, *ret;
    if (!df_type_is_integer(l->type) && l->type->id != DF_TYPE_NULL) goto bad;
    if (!df_type_is_integer(r->type) && r->type->id != DF_TYPE_NULL) goto bad;
    if (!df__sqlt_arith(SQLT_ADD, l->type, r->type, &lt, &rt, &ret)) goto bad;
    df_type_release(lt);
    df_type_release(rt);
    ret = df__bind_keep(b, ret);
    if (!ret) return NULL;
    df_expr *args[2] = {df__bind_coerce(b, l, ret, pos), df__bind_coerce(b, r, ret, pos)};
    if (!args[0] || !args[1]) return NULL;
    return df__expr_func(b->plan, fn, ret, l->nullable || r->nullable, 2, args, b->err);
bad:;
    char x[64], y[64];
    df__bind_error(b, DF_ERR_SQL_TYPE, pos, "cannot apply `%s` to %s and %s", df_fn_name(fn),
               type_name(l->type, x, sizeof x), type_name(r->type, y, sizeof y));
    return NULL;
}

static df_expr *bind_binop(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *l = df__bind_expr(b, e->a, ctx);
    if (!l) return NULL;
    df_expr *r = df__bind_expr(b, e->b, ctx);
    if (!r) return NULL;
    switch (e->op) {
    case TK_PLUS: case TK_MINUS: case TK_STAR: case TK_SLASH: case TK_PERCENT:
        return make_arith(b, arith_fn(e->op), l, r, e->pos);
    case TK_EQ: case TK_NE: case TK_LT: case TK_LE: case TK_GT: case TK_GE: case TK_SPACESHIP:
        return make_comparison(b, cmp_fn(e->op), l, r, e->pos);
    case TK_CONCAT: return make_concat_op(b, l, r, e->pos);
    case TK_AMP: return make_bitwise(b, DF_FN_BIT_AND, l, r, e->pos);
    case TK_PIPE: return make_bitwise(b, DF_FN_BIT_OR, l, r, e->pos);
    case TK_HASH: case TK_CARET: return make_bitwise(b, DF_FN_BIT_XOR, l, r, e->pos);
    case TK_SHL: return make_bitwise(b, DF_FN_SHL, l, r, e->pos);
    case TK_SHR: return make_bitwise(b, DF_FN_SHR, l, r, e->pos);
    default:
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "this operator is not supported");
        return NULL;
    }
}

static df_expr *bind_unary(binder *b, const ast_expr *e, const bctx *ctx) {
    if (e->op == TK_MINUS && e->a->kind == AE_INTEGER) return bind_integer(b, e->a, true);
    if (e->op == TK_MINUS && e->a->kind == AE_NUMBER) return bind_number(b, e->a, true);
    df_expr *a = df__bind_expr(b, e->a, ctx);
    if (!a) return NULL;
    if (e->op == TK_PLUS) {
        /* unary plus is the operand itself, for numbers, intervals, durations and timestamps (DataFusion) */
        df_type_id t = a->type->id;
        if (!df_type_is_numeric(a->type) && t != DF_TYPE_INTERVAL_MDN && t != DF_TYPE_TIMESTAMP) {
            char tn[64];
            df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "unary `+` does not apply to %s", type_name(a->type, tn, sizeof tn));
            return NULL;
        }
        return a;
    }
    if (e->op == TK_TILDE) {
        if (!df_type_is_integer(a->type)) {
            df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "`~` needs an integer operand");
            return NULL;
        }
        return df__expr_func(b->plan, DF_FN_BIT_NOT, a->type, a->nullable, 1, &a, b->err);
    }
    if (a->type->id == DF_TYPE_NULL) return a;
    if (!df_type_is_numeric(a->type) && a->type->id != DF_TYPE_INTERVAL_MDN && a->type->id != DF_TYPE_DURATION) {
        char t[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "cannot negate %s", type_name(a->type, t, sizeof t));
        return NULL;
    }
    return df__expr_func(b->plan, DF_FN_NEG, a->type, a->nullable, 1, &a, b->err);
}

static df_expr *make_logic(binder *b, df_expr_kind kind, df_expr **args, int32_t n) {
    bool nullable = false;
    for (int32_t i = 0; i < n; i++) nullable |= args[i]->nullable;
    return df__expr_new(b->plan, kind, df_type_bool(), nullable, n, args, b->err);
}

static df_expr *bind_logic(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr **args = df__lplan_alloc(b->plan, (size_t)e->nlist * sizeof *args);
    if (!args) return df__bind_oom(b);
    bctx c = *ctx;
    c.clause = e->kind == AE_AND ? "AND operand" : "OR operand";
    for (int32_t i = 0; i < e->nlist; i++) {
        args[i] = df__bind_condition(b, e->list[i], &c);
        if (!args[i]) return NULL;
    }
    return make_logic(b, e->kind == AE_AND ? DF_EX_AND : DF_EX_OR, args, e->nlist);
}

static df_expr *bind_not(binder *b, const ast_expr *e, const bctx *ctx) {
    bctx c = *ctx;
    c.clause = "NOT operand";
    df_expr *a = df__bind_condition(b, e->a, &c);
    if (!a) return NULL;
    return df__expr_new(b->plan, DF_EX_NOT, df_type_bool(), a->nullable, 1, &a, b->err);
}

static df_expr *bind_is(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *a = df__bind_expr(b, e->a, ctx);
    if (!a) return NULL;
    df_fn fn;
    if (e->op == AIS_NULL) {
        fn = e->negated ? DF_FN_IS_NOT_NULL : DF_FN_IS_NULL;
    } else {
        if (a->type->id != DF_TYPE_BOOL) {
            a = df__bind_coerce(b, a, df_type_bool(), e->pos);
            if (!a) return NULL;
        }
        if (e->op == AIS_TRUE) fn = e->negated ? DF_FN_IS_NOT_TRUE : DF_FN_IS_TRUE;
        else if (e->op == AIS_FALSE) fn = e->negated ? DF_FN_IS_NOT_FALSE : DF_FN_IS_FALSE;
        else fn = e->negated ? DF_FN_IS_NOT_NULL : DF_FN_IS_NULL;
    }
    return df__expr_func(b->plan, fn, df_type_bool(), false, 1, &a, b->err);
}

static df_expr *bind_distinct_from(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *l = df__bind_expr(b, e->a, ctx);
    df_expr *r = l ? df__bind_expr(b, e->b, ctx) : NULL;
    if (!r) return NULL;
    return make_comparison(b, e->negated ? DF_FN_IS_NOT_DISTINCT : DF_FN_IS_DISTINCT, l, r, e->pos);
}

static df_expr *set_display_from(binder *b, df_expr *x, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static df_expr *set_display_from(binder *b, df_expr *x, const char *fmt, ...) {
    if (!x) return NULL;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    x->display = df__bind_strdup(b, buf);
    return x->display ? x : NULL;
}

static df_expr *bind_between(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *a = df__bind_expr(b, e->a, ctx);
    df_expr *lo = a ? df__bind_expr(b, e->b, ctx) : NULL;
    df_expr *hi = lo ? df__bind_expr(b, e->c, ctx) : NULL;
    if (!hi) return NULL;
    char *da = df__bind_display(b, a), *dl = df__bind_display(b, lo), *dh = df__bind_display(b, hi);
    if (!da || !dl || !dh) return NULL;
    df_expr *x, *y;
    if (e->flag) {
        /* SYMMETRIC: (a BETWEEN lo AND hi) OR (a BETWEEN hi AND lo) via least/greatest. */
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "BETWEEN SYMMETRIC is not supported");
        return NULL;
    }
    if (!e->negated) {
        x = make_comparison(b, DF_FN_GE, a, lo, e->pos);
        y = x ? make_comparison(b, DF_FN_LE, a, hi, e->pos) : NULL;
    } else {
        x = make_comparison(b, DF_FN_LT, a, lo, e->pos);
        y = x ? make_comparison(b, DF_FN_GT, a, hi, e->pos) : NULL;
    }
    if (!y) return NULL;
    df_expr *args[2] = {x, y};
    df_expr *r = make_logic(b, e->negated ? DF_EX_OR : DF_EX_AND, args, 2);
    return set_display_from(b, r, "%s %sBETWEEN %s AND %s", da, e->negated ? "NOT " : "", dl, dh);
}

static df_expr *bind_in_list(binder *b, const ast_expr *e, const bctx *ctx) {
    if (e->nlist == 0) {
        df__bind_error(b, DF_ERR_SQL_SYNTAX, e->pos, "IN list must not be empty");
        return NULL;
    }
    int32_t n = e->nlist + 1;
    df_expr **args = df__lplan_alloc(b->plan, (size_t)n * sizeof *args);
    if (!args) return df__bind_oom(b);
    args[0] = df__bind_expr(b, e->a, ctx);
    if (!args[0]) return NULL;
    df_type *t = df_type_retain(args[0]->type);
    bool nullable = args[0]->nullable;
    for (int32_t i = 1; i < n; i++) {
        args[i] = df__bind_expr(b, e->list[i - 1], ctx);
        if (!args[i]) {
            df_type_release(t);
            return NULL;
        }
        nullable |= args[i]->nullable;
        df_type *c = df__sqlt_comparison(t, args[i]->type);
        if (!c) {
            char x[64], y[64];
            df__bind_error(b, DF_ERR_SQL_TYPE, e->list[i - 1]->pos, "cannot compare %s with %s in IN list",
                       type_name(t, x, sizeof x), type_name(args[i]->type, y, sizeof y));
            df_type_release(t);
            return NULL;
        }
        df_type_release(t);
        t = c;
    }
    t = df__bind_keep(b, t);
    if (!t) return NULL;
    for (int32_t i = 0; i < n; i++) {
        args[i] = df__bind_coerce(b, args[i], t, i ? e->list[i - 1]->pos : e->pos);
        if (!args[i]) return NULL;
    }
    df_expr *r = df__expr_new(b->plan, DF_EX_IN_LIST, df_type_bool(), nullable, n, args, b->err);
    if (r) r->flag = e->negated;
    return r;
}

static df_expr *bind_like(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *a = df__bind_expr(b, e->a, ctx);
    df_expr *p = a ? df__bind_expr(b, e->b, ctx) : NULL;
    if (!p) return NULL;
    df_type *s = df_type_utf8();
    for (int k = 0; k < 2; k++) {
        df_expr *x = k ? p : a;
        if (x->type->id != DF_TYPE_UTF8 && x->type->id != DF_TYPE_NULL && x->type->id != DF_TYPE_BINARY) {
            char t[64];
            df__bind_error(b, DF_ERR_SQL_TYPE, k ? e->b->pos : e->a->pos, "LIKE needs string operands, not %s",
                       type_name(x->type, t, sizeof t));
            return NULL;
        }
    }
    df_expr *args[3] = {df__bind_coerce(b, a, s, e->pos), df__bind_coerce(b, p, s, e->pos), NULL};
    if (!args[0] || !args[1]) return NULL;
    int32_t nargs = 2;
    if (e->c) {
        df_expr *esc = df__bind_expr(b, e->c, ctx);
        if (!esc) return NULL;
        if (esc->kind != DF_EX_LITERAL || esc->type->id != DF_TYPE_UTF8 || esc->lit->is_null ||
            esc->lit->v.bytes.len > 1) {
            df__bind_error(b, DF_ERR_SQL_TYPE, e->c->pos, "ESCAPE must be a single-character string literal");
            return NULL;
        }
        if (esc->lit->v.bytes.len == 1 && esc->lit->v.bytes.ptr[0] != '\\') {
            /* DataFusion matches with backslash escapes only and refuses any other character. */
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->c->pos,
                           "LIKE does not support escape_char other than the backslash (\\)");
            return NULL;
        }
        args[2] = esc;
        nargs = 3;
    }
    df_fn fn = e->flag ? (e->negated ? DF_FN_NOT_ILIKE : DF_FN_ILIKE) : (e->negated ? DF_FN_NOT_LIKE : DF_FN_LIKE);
    return df__expr_func(b->plan, fn, df_type_bool(), a->nullable || p->nullable, nargs, args, b->err);
}

static df_expr *bind_regex(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *a = df__bind_expr(b, e->a, ctx);
    df_expr *p = a ? df__bind_expr(b, e->b, ctx) : NULL;
    if (!p) return NULL;
    df_fn fn;
    switch (e->op) {
    case TK_REGEX_MATCH: fn = DF_FN_REGEX_MATCH; break;
    case TK_REGEX_IMATCH: fn = DF_FN_REGEX_IMATCH; break;
    case TK_REGEX_NMATCH: fn = DF_FN_REGEX_NMATCH; break;
    case TK_REGEX_NIMATCH: fn = DF_FN_REGEX_NIMATCH; break;
    case TK_LIKE_OP: fn = DF_FN_LIKE; break;
    case TK_ILIKE_OP: fn = DF_FN_ILIKE; break;
    case TK_NLIKE_OP: fn = DF_FN_NOT_LIKE; break;
    default: fn = DF_FN_NOT_ILIKE; break;
    }
    df_type *s = df_type_utf8();
    if ((a->type->id != DF_TYPE_UTF8 && a->type->id != DF_TYPE_NULL) ||
        (p->type->id != DF_TYPE_UTF8 && p->type->id != DF_TYPE_NULL)) {
        df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "pattern matching needs string operands");
        return NULL;
    }
    df_expr *args[2] = {df__bind_coerce(b, a, s, e->pos), df__bind_coerce(b, p, s, e->pos)};
    if (!args[0] || !args[1]) return NULL;
    return df__expr_func(b->plan, fn, df_type_bool(), a->nullable || p->nullable, 2, args, b->err);
}

static df_expr *bind_case(binder *b, const ast_expr *e, const bctx *ctx) {
    int32_t n = e->nlist;
    bool has_else = e->b != NULL;
    int32_t nargs = 2 * n + (has_else ? 1 : 0);
    df_expr **args = df__lplan_alloc(b->plan, (size_t)nargs * sizeof *args);
    const df_type **types = df__lplan_alloc(b->plan, (size_t)(n + 1) * sizeof *types);
    if (!args || !types) return df__bind_oom(b);
    df_expr *operand = NULL;
    if (e->a) {
        operand = df__bind_expr(b, e->a, ctx);
        if (!operand) return NULL;
    }
    bctx c = *ctx;
    c.clause = "CASE WHEN condition";
    int32_t ntypes = 0;
    for (int32_t i = 0; i < n; i++) {
        if (operand) {
            df_expr *w = df__bind_expr(b, e->list[i], ctx);
            if (!w) return NULL;
            args[2 * i] = make_comparison(b, DF_FN_EQ, operand, w, e->list[i]->pos);
        } else {
            args[2 * i] = df__bind_condition(b, e->list[i], &c);
        }
        if (!args[2 * i]) return NULL;
        args[2 * i + 1] = df__bind_expr(b, e->list2[i], ctx);
        if (!args[2 * i + 1]) return NULL;
        types[ntypes++] = args[2 * i + 1]->type;
    }
    if (has_else) {
        args[nargs - 1] = df__bind_expr(b, e->b, ctx);
        if (!args[nargs - 1]) return NULL;
        types[ntypes++] = args[nargs - 1]->type;
    }
    df_type *t = df__bind_keep(b, df__sqlt_union_text(types, ntypes));
    if (!t) {
        if (b->err && b->err->kind == DF_ERR_OUT_OF_MEMORY) return NULL;
        df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "CASE results have incompatible types");
        return NULL;
    }
    bool nullable = !has_else;
    for (int32_t i = 0; i < n; i++) {
        args[2 * i + 1] = df__bind_coerce(b, args[2 * i + 1], t, e->list2[i]->pos);
        if (!args[2 * i + 1]) return NULL;
        nullable |= args[2 * i + 1]->nullable;
    }
    if (has_else) {
        args[nargs - 1] = df__bind_coerce(b, args[nargs - 1], t, e->b->pos);
        if (!args[nargs - 1]) return NULL;
        nullable |= args[nargs - 1]->nullable;
    }
    df_expr *r = df__expr_new(b->plan, DF_EX_CASE, t, nullable, nargs, args, b->err);
    if (!r) return NULL;
    r->has_else = has_else;
    if (operand) {
        /* Display like DataFusion: CASE x WHEN v THEN r ... END */
        df_buf buf;
        df_buf_init(&buf, 1 << 16);
        df_errkind k = df_buf_append_str(&buf, "CASE ", NULL);
        if (!k) k = df__expr_display(operand, &buf, NULL);
        for (int32_t i = 0; !k && i < n; i++) {
            k = df_buf_append_str(&buf, " WHEN ", NULL);
            if (!k) k = df__expr_display(args[2 * i]->args[1], &buf, NULL);
            if (!k) k = df_buf_append_str(&buf, " THEN ", NULL);
            if (!k) k = df__expr_display(args[2 * i + 1], &buf, NULL);
        }
        if (!k && has_else) {
            k = df_buf_append_str(&buf, " ELSE ", NULL);
            if (!k) k = df__expr_display(args[nargs - 1], &buf, NULL);
        }
        if (!k) k = df_buf_append_str(&buf, " END", NULL);
        if (!k) r->display = df__bind_strdup(b, buf.data);
        df_buf_free(&buf);
    }
    return r;
}

static df_expr *bind_cast(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *a = df__bind_expr(b, e->a, ctx);
    if (!a) return NULL;
    df_type *t = df__bind_keep(b, df__sql_type_from_ast(e->type, b->text, b->text_len, b->err));
    if (!t) return NULL;
    if (!df__sqlt_can_cast(a->type, t)) {
        char x[64], y[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "cannot cast %s to %s", type_name(a->type, x, sizeof x),
                   type_name(t, y, sizeof y));
        return NULL;
    }
    if (a->type->id == DF_TYPE_INT64 && t->id == DF_TYPE_TIMESTAMP && t->unit == DF_UNIT_NANO) {
        /* As DataFusion's SQL planner: a BIGINT cast to TIMESTAMP counts seconds (PostgreSQL / DuckDB
         * semantics), so it goes through Timestamp(s) first. */
        df_type *secs = df__bind_keep(b, df_type_timestamp(DF_UNIT_SECOND, t->timezone));
        if (!secs) return NULL;
        a = df__expr_new(b->plan, DF_EX_CAST, secs, a->nullable || e->flag, 1, &a, b->err);
        if (!a) return NULL;
        a->flag = e->flag;
    }
    df_expr *r = df__expr_new(b->plan, DF_EX_CAST, t, a->nullable || e->flag, 1, &a, b->err);
    if (r) r->flag = e->flag;
    return r;
}

static df_expr *bind_extract(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *args[2];
    args[0] = lit_utf8(b, e->text, (int32_t)strlen(e->text));
    args[1] = args[0] ? df__bind_expr(b, e->a, ctx) : NULL;
    if (!args[1]) return NULL;
    return df__bind_resolve_fn(b, DF_FN_DATE_PART, args, 2, e->pos);
}

static df_expr *bind_substring(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *args[3];
    int32_t n = 0;
    args[n++] = df__bind_expr(b, e->a, ctx);
    if (!args[0]) return NULL;
    if (e->b) {
        args[n] = df__bind_expr(b, e->b, ctx);
        if (!args[n++]) return NULL;
    } else {
        df_scalar one = {.type = df_type_int64(), .v.i64 = 1};
        args[n] = literal(b, &one);
        if (!args[n++]) return NULL;
    }
    if (e->c) {
        args[n] = df__bind_expr(b, e->c, ctx);
        if (!args[n++]) return NULL;
    }
    return df__bind_resolve_fn(b, DF_FN_SUBSTR, args, n, e->pos);
}

static df_expr *bind_trim(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *args[2];
    int32_t n = 0;
    args[n++] = df__bind_expr(b, e->a, ctx);
    if (!args[0]) return NULL;
    if (e->b) {
        args[n] = df__bind_expr(b, e->b, ctx);
        if (!args[n++]) return NULL;
    }
    df_fn fn = e->op == ATRIM_LEADING ? DF_FN_LTRIM : e->op == ATRIM_TRAILING ? DF_FN_RTRIM : DF_FN_BTRIM;
    return df__bind_resolve_fn(b, fn, args, n, e->pos);
}

static df_expr *bind_position(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *args[2] = {df__bind_expr(b, e->b, ctx), NULL};
    if (!args[0] || !(args[1] = df__bind_expr(b, e->a, ctx))) return NULL;
    return df__bind_resolve_fn(b, DF_FN_STRPOS, args, 2, e->pos);
}

static df_expr *bind_overlay(binder *b, const ast_expr *e, const bctx *ctx) {
    df_expr *args[4];
    int32_t n = 0;
    const ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    for (int k = 0; k < 4 && ops[k]; k++) {
        args[n] = df__bind_expr(b, ops[k], ctx);
        if (!args[n++]) return NULL;
    }
    return df__bind_resolve_fn(b, DF_FN_OVERLAY, args, n, e->pos);
}

static df_expr *bind_current(binder *b, const ast_expr *e) {
    df_scalar s = {0};
    if (e->op == KW_CURRENT_DATE) {
        s.type = df_type_date32();
        int64_t days = b->now_ns / 86400000000000LL;
        if (b->now_ns < 0 && b->now_ns % 86400000000000LL) days--;
        s.v.i64 = days;
        return literal(b, &s);
    }
    if (e->op == KW_CURRENT_TIME) {
        s.type = df__bind_keep(b, df_type_time(DF_UNIT_NANO));
        if (!s.type) return NULL;
        int64_t r = b->now_ns % 86400000000000LL;
        s.v.i64 = r < 0 ? r + 86400000000000LL : r;
        return literal(b, &s);
    }
    s.type = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, "+00:00"));
    if (!s.type) return NULL;
    s.v.i64 = b->now_ns;
    return literal(b, &s);
}

/* ------------------------------------------------------------------------ */
/* Aggregates                                                                */

int df__bind_agg_fn(const ast_expr *call) {
    if (call->kind != AE_FUNC || call->over || call->name.n != 1) return -1;
    const char *n = call->name.parts[0];
    if (strcmp(n, "count") == 0) return DF_AGG_COUNT;
    if (strcmp(n, "sum") == 0) return DF_AGG_SUM;
    if (strcmp(n, "min") == 0) return DF_AGG_MIN;
    if (strcmp(n, "max") == 0) return DF_AGG_MAX;
    if (strcmp(n, "avg") == 0 || strcmp(n, "mean") == 0) return DF_AGG_AVG;
    if (strcmp(n, "bool_and") == 0 || strcmp(n, "every") == 0) return DF_AGG_BOOL_AND;
    if (strcmp(n, "bool_or") == 0) return DF_AGG_BOOL_OR;
    if (strcmp(n, "first_value") == 0 || strcmp(n, "any_value") == 0) return DF_AGG_FIRST;
    static const struct {
        const char *name;
        df_agg_fn fn;
    } more[] = {
        {"last_value", DF_AGG_LAST}, {"bit_and", DF_AGG_BIT_AND}, {"bit_or", DF_AGG_BIT_OR},
        {"bit_xor", DF_AGG_BIT_XOR}, {"var", DF_AGG_VAR_SAMP}, {"variance", DF_AGG_VAR_SAMP},
        {"var_samp", DF_AGG_VAR_SAMP}, {"var_pop", DF_AGG_VAR_POP}, {"variance_pop", DF_AGG_VAR_POP},
        {"stddev", DF_AGG_STDDEV_SAMP}, {"stddev_samp", DF_AGG_STDDEV_SAMP}, {"stddev_pop", DF_AGG_STDDEV_POP},
        {"covar", DF_AGG_COVAR_SAMP}, {"covar_samp", DF_AGG_COVAR_SAMP}, {"covar_pop", DF_AGG_COVAR_POP},
        {"corr", DF_AGG_CORR}, {"regr_slope", DF_AGG_REGR_SLOPE}, {"regr_intercept", DF_AGG_REGR_INTERCEPT},
        {"regr_count", DF_AGG_REGR_COUNT}, {"regr_r2", DF_AGG_REGR_R2}, {"regr_avgx", DF_AGG_REGR_AVGX},
        {"regr_avgy", DF_AGG_REGR_AVGY}, {"regr_sxx", DF_AGG_REGR_SXX}, {"regr_syy", DF_AGG_REGR_SYY},
        {"regr_sxy", DF_AGG_REGR_SXY}, {"median", DF_AGG_MEDIAN}, {"approx_median", DF_AGG_MEDIAN}, {"percentile_cont", DF_AGG_PERCENTILE},
        {"quantile_cont", DF_AGG_PERCENTILE}, {"approx_percentile_cont", DF_AGG_PERCENTILE},
        {"string_agg", DF_AGG_STRING_AGG}, {"approx_distinct", DF_AGG_APPROX_DISTINCT},
    };
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        if (strcmp(n, more[i].name) == 0) return (int)more[i].fn;
    return -1;
}

/* Names of aggregate functions we recognise but do not compute yet. */
static bool unsupported_agg_name(const char *n) {
    static const char *const names[] = {"array_agg", "nth_value",
                                        "grouping", "approx_percentile_cont_with_weight", NULL};
    for (const char *const *p = names; *p; p++)
        if (strcmp(*p, n) == 0) return true;
    return false;
}

bool df__ast_has_aggregate(const ast_expr *e) {
    if (!e) return false;
    if (df__bind_agg_fn(e) >= 0) return true;
    if (e->kind == AE_FUNC && !e->over && e->name.n == 1 && unsupported_agg_name(e->name.parts[0])) return true;
    const ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    for (int k = 0; k < 4; k++)
        if (df__ast_has_aggregate(ops[k])) return true;
    for (int32_t i = 0; i < e->nlist; i++) {
        if (e->list && df__ast_has_aggregate(e->list[i])) return true;
        if (e->list2 && df__ast_has_aggregate(e->list2[i])) return true;
    }
    return false;
}

/* Result type of an aggregate over `t` (DataFusion's rules); NULL when not applicable. */
static df_type *agg_result_type(df_agg_fn fn, const df_type *t) {
    int p, s;
    switch (fn) {
    case DF_AGG_COUNT: return df_type_int64();
    case DF_AGG_MIN:
    case DF_AGG_MAX:
    case DF_AGG_FIRST: return df_type_retain((df_type *)t);
    case DF_AGG_BOOL_AND:
    case DF_AGG_BOOL_OR: return (t->id == DF_TYPE_BOOL || t->id == DF_TYPE_NULL) ? df_type_bool() : NULL;
    case DF_AGG_SUM:
        if (df_type_is_signed_integer(t) || t->id == DF_TYPE_NULL) return df_type_int64();
        if (df_type_is_unsigned_integer(t)) return df_type_uint64();
        if (df_type_is_floating(t)) return df_type_float64();
        if (df__sqlt_decimal_ps(t, &p, &s)) return df_type_decimal(DF_MIN(p + 10, t->id == DF_TYPE_DECIMAL256 ? 76 : 38), s);
        if (t->id == DF_TYPE_INTERVAL_MDN || t->id == DF_TYPE_DURATION) return df_type_retain((df_type *)t);
        return NULL;
    case DF_AGG_AVG:
        if (df_type_is_integer(t) || df_type_is_floating(t) || t->id == DF_TYPE_NULL) return df_type_float64();
        if (df__sqlt_decimal_ps(t, &p, &s)) return df_type_decimal(DF_MIN(p + 4, 38), DF_MIN(s + 4, 38));
        return NULL;
    default: return NULL;
    }
}

/* The value of a numeric literal as a double; false when e is not a non-NULL numeric literal. */
static bool literal_number(const df_expr *e, double *out) {
    if (e->kind != DF_EX_LITERAL || e->lit->is_null) return false;
    const df_type *t = e->lit->type;
    int p, s;
    if (df_type_is_floating(t)) *out = e->lit->v.f64;
    else if (df_type_is_signed_integer(t)) *out = (double)e->lit->v.i64;
    else if (df_type_is_unsigned_integer(t)) *out = (double)e->lit->v.u64;
    else if (t->id == DF_TYPE_DECIMAL128 && df__sqlt_decimal_ps(t, &p, &s)) {
        double d = (double)e->lit->v.i128;
        for (int i = 0; i < s; i++) d /= 10;
        *out = d;
    } else {
        return false;
    }
    return true;
}

static bool is_numeric_or_null(const df_type *t) {
    int p, s;
    return t->id == DF_TYPE_NULL || df_type_is_integer(t) || df_type_is_floating(t) || df__sqlt_decimal_ps(t, &p, &s);
}


static df_errkind bind_more_agg_args(binder *b, const ast_expr *call, df_agg_fn fn, const bctx *in, df_agg *a);

/*
 * A single-step aggregate (median, percentile_cont, var_pop, covar_pop,
 * bit_and, ..) called as a window function: its arguments bound over ctx.
 */
df_errkind df__bind_window_more_agg(binder *b, const ast_expr *call, int fn, const bctx *ctx, df_agg **out) {
    df_agg *a = df__lplan_alloc(b->plan, sizeof *a);
    if (!a) return DF_OOM(b->err);
    memset(a, 0, sizeof *a);
    a->fn = (df_agg_fn)fn;
    DF_TRY(bind_more_agg_args(b, call, (df_agg_fn)fn, ctx, a));
    a->nullable = true;
    a->name = df_agg_fn_name((df_agg_fn)fn);
    *out = a;
    return DF_OK;
}

/*
 * An aggregate's input under FILTER (WHERE f) is evaluated only where f holds
 * (as DataFusion does): `sum(1 / x) FILTER (WHERE x <> 0)` must not divide by
 * zero on the rows the filter drops.  CASE WHEN f THEN x END evaluates x only
 * on those rows; its NULLs elsewhere are never aggregated, since the
 * aggregate still skips the rows f rejects.  Columns and literals cannot fail.
 */
static df_expr *filter_guarded(binder *b, df_expr *filter, df_expr *x) {
    if (!filter || !x || x->kind == DF_EX_COLUMN || x->kind == DF_EX_LITERAL) return x;
    df_expr *args[2] = {filter, x};
    return df__expr_new(b->plan, DF_EX_CASE, x->type, true, 2, args, b->err);
}

/*
 * Arguments of the single-step aggregates: the statistics take numbers (as
 * Float64), the covariance family two of them (y, x), bit_* integers,
 * median numbers, percentile_cont a value and a fraction literal (either
 * as (value, fraction) or (fraction) WITHIN GROUP (ORDER BY value)),
 * string_agg a string and a delimiter literal.  Fills a->arg, a->arg2 and
 * a->type.
 */
static df_errkind bind_more_agg_args(binder *b, const ast_expr *call, df_agg_fn fn, const bctx *in, df_agg *a) {
    const char *fname = call->name.parts[0];
    int32_t nargs = call->nlist;
    bool two = fn >= DF_AGG_COVAR_SAMP && fn <= DF_AGG_REGR_SXY;
    ast_expr *const *args = call->list;
    ast_expr *value_ast = NULL, *param_ast = NULL;
    bool desc = false;
    if (fn == DF_AGG_PERCENTILE) {
        if (call->within_group) {
            if (call->norder != 1 || nargs < 1 || nargs > 2)
                return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes a fraction and one WITHIN GROUP key", fname);
            value_ast = call->order[0].expr;
            desc = call->order[0].desc;
            param_ast = args[0];
        } else {
            if (nargs < 2 || nargs > 3)
                return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes a value and a fraction", fname);
            value_ast = args[0];
            param_ast = args[1];
        }
    } else if (call->within_group) {
        return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "WITHIN GROUP is not supported for %s", fname);
    } else if (fn == DF_AGG_STRING_AGG) {
        if (nargs != 2) return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "string_agg takes a value and a delimiter");
        value_ast = args[0];
        param_ast = args[1];
    } else if (nargs != (two ? 2 : 1)) {
        return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes exactly %s", fname, two ? "two arguments" : "one argument");
    } else {
        value_ast = args[0];
        param_ast = two ? args[1] : NULL;
    }
    a->arg = df__bind_expr(b, value_ast, in);
    if (!a->arg) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    df_expr *param = NULL;
    if (param_ast) {
        param = df__bind_expr(b, param_ast, in);
        if (!param) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    }
    const df_type *t = a->arg->type;
    char tn[64];
    df_type *rt = NULL;
    if (fn == DF_AGG_LAST) {
        rt = df_type_retain((df_type *)t);
    } else if (fn == DF_AGG_APPROX_DISTINCT) {
        /* Hashable scalars; floats and decimals are refused as DataFusion does. */
        if (df_type_is_floating(t) || df_type_is_nested(t) || t->id == DF_TYPE_DECIMAL128 ||
            t->id == DF_TYPE_DECIMAL256 || t->id == DF_TYPE_INTERVAL_MDN)
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "approx_distinct does not accept %s",
                                  type_name(t, tn, sizeof tn));
        rt = df_type_uint64();
    } else if (fn >= DF_AGG_BIT_AND && fn <= DF_AGG_BIT_XOR) {
        /* bit_*(NULL) is NULL of type Null */
        if (!df_type_is_integer(t) && t->id != DF_TYPE_NULL)
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s does not accept %s", fname, type_name(t, tn, sizeof tn));
        rt = df_type_retain((df_type *)t);
    } else if (fn == DF_AGG_MEDIAN) {
        /* Integers (and NULL) are taken as Float64; floats and decimals keep their type. */
        if (!is_numeric_or_null(t))
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "median does not accept %s", type_name(t, tn, sizeof tn));
        if (t->id == DF_TYPE_NULL || df_type_is_integer(t)) {
            a->arg = df__bind_coerce(b, a->arg, df_type_float64(), call->pos);
            if (!a->arg) return b->err->kind;
            t = a->arg->type;
        }
        rt = df_type_retain((df_type *)t);
    } else if (fn == DF_AGG_STRING_AGG) {
        if (t->id != DF_TYPE_UTF8) {
            a->arg = df__bind_coerce(b, a->arg, df_type_utf8(), call->pos);
            if (!a->arg) return b->err->kind;
        }
        if (param->kind != DF_EX_LITERAL || (!param->lit->is_null && param->type->id != DF_TYPE_UTF8))
            return df__bind_error(b, DF_ERR_SQL_TYPE, param_ast->pos, "the string_agg delimiter must be a string literal");
        a->arg2 = param;
        rt = df_type_utf8();
    } else if (fn == DF_AGG_PERCENTILE) {
        double frac;
        if (!literal_number(param, &frac) || !(frac >= 0 && frac <= 1))
            return df__bind_error(b, DF_ERR_SQL_TYPE, param_ast->pos, "the %s fraction must be a literal between 0 and 1", fname);
        if (!is_numeric_or_null(t))
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s does not accept %s", fname, type_name(t, tn, sizeof tn));
        df_scalar fs = {.type = df_type_float64(), .is_null = false, .v.f64 = desc ? 1 - frac : frac};
        a->arg2 = literal(b, &fs);
        if (!a->arg2) return b->err->kind;
        /* Float inputs keep their type; integers, decimals and NULL give Float64. */
        rt = df_type_is_floating(t) ? df_type_retain((df_type *)t) : df_type_float64();
    } else {
        /* Statistics over Float64 values. */
        if (!is_numeric_or_null(t))
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s does not accept %s", fname, type_name(t, tn, sizeof tn));
        a->arg = df__bind_coerce(b, a->arg, df_type_float64(), call->pos);
        if (!a->arg) return b->err->kind;
        if (two) {
            if (!is_numeric_or_null(param->type))
                return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s does not accept %s", fname,
                                  type_name(param->type, tn, sizeof tn));
            a->arg2 = df__bind_coerce(b, param, df_type_float64(), call->pos);
            if (!a->arg2) return b->err->kind;
        }
        rt = fn == DF_AGG_REGR_COUNT ? df_type_uint64() : df_type_float64();
    }
    a->type = df__bind_keep(b, rt);
    if (!a->type) return b->err->kind;
    a->nullable = fn != DF_AGG_REGR_COUNT && fn != DF_AGG_APPROX_DISTINCT;
    return DF_OK;
}

df_errkind df__bind_aggregate_call(binder *b, const ast_expr *call, const bctx *ctx, int32_t *index) {
    bagg *ag = ctx->agg;
    df_agg_fn fn = (df_agg_fn)df__bind_agg_fn(call);
    if (call->null_treatment && fn != DF_AGG_FIRST && fn != DF_AGG_LAST)
        return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "[IGNORE | RESPECT] NULLS are not permitted for %s",
                          df_agg_fn_name(fn));
    if (ctx->in_agg) return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "aggregate calls cannot be nested");
    bool more = df_agg_fn_single_step(fn);
    if (call->within_group && !more)
        return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "WITHIN GROUP is not supported for %s", df_agg_fn_name(fn));
    bctx in = {.scope = ag->input, .agg = NULL, .allow_agg = false, .in_agg = true, .clause = "aggregate argument"};
    df_agg a = {.fn = fn, .distinct = call->flag, .ignore_nulls = call->null_treatment == 1};
    if (call->norder && !call->within_group) {
        /* ORDER BY inside the call: kept for every aggregate (it is part of the name); only order-sensitive ones use it. */
        a.order = df__lplan_alloc(b->plan, (size_t)call->norder * sizeof *a.order);
        if (!a.order) return DF_OOM(b->err);
        bctx oc = in;
        oc.clause = "aggregate ORDER BY";
        for (int32_t i = 0; i < call->norder; i++) {
            const ast_order *o = &call->order[i];
            a.order[i].expr = df__bind_expr(b, o->expr, &oc);
            if (!a.order[i].expr) return b->err ? b->err->kind : DF_ERR_INTERNAL;
            a.order[i].desc = o->desc;
            a.order[i].nulls_first = o->nulls == 1 || (o->nulls == 0 && o->desc);
        }
        a.norder = call->norder;
    }
    if (more) {
        if (call->star_arg) return df__bind_error(b, DF_ERR_SQL_SYNTAX, call->pos, "only count accepts `*`");
        DF_TRY(bind_more_agg_args(b, call, fn, &in, &a));
    } else if (call->star_arg) {
        if (fn != DF_AGG_COUNT) return df__bind_error(b, DF_ERR_SQL_SYNTAX, call->pos, "only count accepts `*`");
    } else if (fn == DF_AGG_COUNT && call->nlist == 0) {
        /* count() counts rows like count(*) */
    } else if (fn == DF_AGG_COUNT && call->nlist > 1) {
        /* count(a, b, ..): rows where every argument is non-NULL, as
         * count(CASE WHEN a IS NOT NULL AND b IS NOT NULL .. THEN 1 END). */
        if (a.distinct)
            return df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, call->pos, "count(DISTINCT ..) takes one argument");
        df_expr **tests = df__lplan_alloc(b->plan, (size_t)call->nlist * sizeof(df_expr *));
        if (!tests) return DF_OOM(b->err);
        for (int32_t i = 0; i < call->nlist; i++) {
            df_expr *x = df__bind_expr(b, call->list[i], &in);
            if (!x) return b->err ? b->err->kind : DF_ERR_INTERNAL;
            tests[i] = df__expr_func(b->plan, DF_FN_IS_NOT_NULL, df_type_bool(), false, 1, &x, b->err);
            if (!tests[i]) return b->err->kind;
        }
        df_scalar one = {.type = df_type_int64(), .v.i64 = 1};
        df_expr *cargs[2] = {df__expr_new(b->plan, DF_EX_AND, df_type_bool(), false, call->nlist, tests, b->err),
                             literal(b, &one)};
        if (!cargs[0] || !cargs[1]) return b->err->kind;
        a.arg = df__expr_new(b->plan, DF_EX_CASE, df_type_int64(), true, 2, cargs, b->err);
        if (!a.arg) return b->err->kind;
    } else {
        if (call->nlist != 1)
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes exactly one argument", df_agg_fn_name(fn));
        if (call->list[0]->kind == AE_STAR && fn == DF_AGG_COUNT && call->list[0]->name.n == 0) {
            /* count(*) written with an explicit star argument */
        } else {
            a.arg = df__bind_expr(b, call->list[0], &in);
            if (!a.arg) return b->err ? b->err->kind : DF_ERR_INTERNAL;
            if (fn == DF_AGG_AVG && a.arg->type->id == DF_TYPE_DURATION) {
                /* avg of durations: exactly, as decimals of the unit, shown as a duration (truncated). */
                a.shown_as = a.arg->type;
                df_type *dec = df__bind_keep(b, df_type_decimal(20, 0));
                df_expr *i = dec ? df__expr_cast(b->plan, a.arg, df_type_int64(), false, true, b->err) : NULL;
                a.arg = i ? df__expr_cast(b->plan, i, dec, false, true, b->err) : NULL;
                if (!a.arg) return b->err->kind ? b->err->kind : DF_ERR_INTERNAL;
            }
            if (fn == DF_AGG_COUNT && !a.distinct && a.arg->kind == DF_EX_LITERAL && !a.arg->lit->is_null) {
                a.arg = NULL;  /* count(1) == count(*) */
            }
        }
    }
    if (call->filter) {
        bctx f = in;
        f.clause = "FILTER";
        a.filter = df__bind_condition(b, call->filter, &f);
        if (!a.filter) return b->err ? b->err->kind : DF_ERR_INTERNAL;
    }
    if (more) {
        /* type and nullability set by bind_more_agg_args */
    } else if (a.arg) {
        df_type *rt = agg_result_type(fn, a.arg->type);
        if (!rt) {
            char t[64];
            return df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s does not accept %s", df_agg_fn_name(fn),
                              type_name(a.arg->type, t, sizeof t));
        }
        if (a.arg->type->id == DF_TYPE_NULL && (fn == DF_AGG_SUM)) {
            a.arg = df__bind_coerce(b, a.arg, df_type_int64(), call->pos);
            if (!a.arg) return b->err->kind;
        } else if (a.arg->type->id == DF_TYPE_NULL && fn == DF_AGG_AVG) {
            a.arg = df__bind_coerce(b, a.arg, df_type_float64(), call->pos);
            if (!a.arg) return b->err->kind;
        } else if (a.arg->type->id == DF_TYPE_NULL && (fn == DF_AGG_BOOL_AND || fn == DF_AGG_BOOL_OR)) {
            a.arg = df__bind_coerce(b, a.arg, df_type_bool(), call->pos);
            if (!a.arg) return b->err->kind;
        }
        a.type = df__bind_keep(b, rt);
    } else {
        a.type = df_type_int64();
    }
    if (!a.type) return b->err->kind;
    if (!more) a.nullable = fn != DF_AGG_COUNT;
    /* Name: count(*), sum(t.a), count(DISTINCT t.a) [FILTER (WHERE ...)] */
    df_buf name;
    df_buf_init(&name, 1 << 16);
    df_errkind k = df_buf_printf(&name, b->err, "%s(%s", df_agg_fn_name(fn), a.distinct ? "DISTINCT " : "");
    if (!k) k = a.arg ? df__expr_display(a.arg, &name, b->err)
                      : df_buf_append_str(&name, call->star_arg || fn == DF_AGG_COUNT ? "*" : "", b->err);
    if (!k && a.arg2) {
        k = df_buf_append_str(&name, ", ", b->err);
        if (!k) k = df__expr_display(a.arg2, &name, b->err);
    }
    if (!k) k = df_buf_append_char(&name, ')', b->err);
    if (!k && a.ignore_nulls) k = df_buf_append_str(&name, " IGNORE NULLS", b->err);
    if (!k && a.filter) {
        k = df_buf_append_str(&name, " FILTER (WHERE ", b->err);
        if (!k) k = df__expr_display(a.filter, &name, b->err);
        if (!k) k = df_buf_append_char(&name, ')', b->err);
    }
    for (int32_t i = 0; !k && i < a.norder; i++) {
        k = df_buf_append_str(&name, i ? ", " : " ORDER BY [", b->err);
        if (!k) k = df__expr_display(a.order[i].expr, &name, b->err);
        if (!k) k = df_buf_printf(&name, b->err, " %s NULLS %s", a.order[i].desc ? "DESC" : "ASC",
                                  a.order[i].nulls_first ? "FIRST" : "LAST");
        if (!k && i == a.norder - 1) k = df_buf_append_char(&name, ']', b->err);
    }
    if (!k) {
        a.name = df__bind_strdup(b, name.data);
        if (!a.name) k = DF_ERR_OUT_OF_MEMORY;
    }
    df_buf_free(&name);
    if (k) return k;
    if (a.filter) {
        bool had_arg = a.arg, had_arg2 = a.arg2;
        a.arg = filter_guarded(b, a.filter, a.arg);
        /* Elsewhere arg2 is a parameter literal the aggregate reads once, not an input. */
        if (fn >= DF_AGG_COVAR_SAMP && fn <= DF_AGG_REGR_SXY) a.arg2 = filter_guarded(b, a.filter, a.arg2);
        if ((had_arg && !a.arg) || (had_arg2 && !a.arg2)) return b->err->kind ? b->err->kind : DF_ERR_INTERNAL;
        for (int32_t i = 0; i < a.norder; i++)
            if (!(a.order[i].expr = filter_guarded(b, a.filter, a.order[i].expr)))
                return b->err->kind ? b->err->kind : DF_ERR_INTERNAL;
    }
    for (int32_t i = 0; i < ag->naggs; i++) {
        df_agg *o = &ag->aggs[i];
        bool same_arg = ((!o->arg && !a.arg) || (o->arg && a.arg && df__expr_equal(o->arg, a.arg))) &&
                        ((!o->arg2 && !a.arg2) || (o->arg2 && a.arg2 && df__expr_equal(o->arg2, a.arg2)));
        bool same_filter = (!o->filter && !a.filter) || (o->filter && a.filter && df__expr_equal(o->filter, a.filter));
        bool same_order = o->norder == a.norder && o->ignore_nulls == a.ignore_nulls;
        for (int32_t j = 0; same_order && j < a.norder; j++)
            same_order = o->order[j].desc == a.order[j].desc && o->order[j].nulls_first == a.order[j].nulls_first &&
                         df__expr_equal(o->order[j].expr, a.order[j].expr);
        if (o->fn == a.fn && o->distinct == a.distinct && same_arg && same_filter && same_order) {
            *index = ag->ngroup + i;
            return DF_OK;
        }
    }
    if (!ag->collecting)
        return df__bind_error(b, DF_ERR_INTERNAL, call->pos, "aggregate was not collected before binding");
    if (ag->naggs == ag->cap) {
        int32_t ncap = ag->cap ? ag->cap * 2 : 8;
        df_agg *n = df__lplan_alloc(b->plan, (size_t)ncap * sizeof *n);
        if (!n) return DF_OOM(b->err);
        if (ag->naggs) df__memcpy(n, ag->aggs, (size_t)ag->naggs * sizeof *n);
        ag->aggs = n;
        ag->cap = ncap;
    }
    ag->aggs[ag->naggs] = a;
    *index = ag->ngroup + ag->naggs;
    ag->naggs++;
    return DF_OK;
}

/* Reference to output column `index` of the aggregate node. */
static df_expr *agg_output_ref(binder *b, const bctx *ctx, int32_t index) {
    bagg *ag = ctx->agg;
    df_lcol col;
    if (index < ag->ngroup) {
        col = ag->group_cols[index];
    } else {
        const df_agg *a = &ag->aggs[index - ag->ngroup];
        col = (df_lcol){.name = a->name, .qualifier = NULL, .type = a->type, .nullable = a->nullable};
        if (a->shown_as) {
            df_expr *c = df__expr_column(b->plan, index, &col, b->err);
            df_expr *i = c ? df__expr_cast(b->plan, c, df_type_int64(), false, true, b->err) : NULL;
            df_expr *r = i ? df__expr_cast(b->plan, i, a->shown_as, false, true, b->err) : NULL;
            if (r) r->display = a->name;
            return r;
        }
    }
    return df__expr_column(b->plan, index, &col, b->err);
}

/* ------------------------------------------------------------------------ */
/* Dispatcher                                                                */

static df_expr *bind_expr_inner(binder *b, const ast_expr *e, const bctx *ctx);

df_expr *df__bind_expr(binder *b, const ast_expr *e, const bctx *ctx) {
    if (ctx->agg && !ctx->agg->collecting && !ctx->in_agg) {
        /* After GROUP BY: map aggregate calls and group keys to the aggregate output. */
        bool sub = e->kind == AE_SUBQUERY || e->kind == AE_EXISTS || e->kind == AE_IN_SUBQUERY ||
                   e->kind == AE_QUANTIFIED ||
                   (e->kind == AE_IN_LIST && e->nlist == 1 && e->list[0]->kind == AE_SUBQUERY);
        /* A subquery joined above the aggregation reads its own column; so does a window call. */
        if (sub && !df__bind_subqueries_in_scope(b, e, ctx->agg->input)) return df__bind_subquery_column(b, e, ctx);
        if (e->kind == AE_FUNC && e->over) return df__bind_window_column(b, e, ctx);
        if (df__bind_agg_fn(e) >= 0) {
            if (!ctx->allow_agg) {
                df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "aggregate functions are not allowed in %s",
                           ctx->clause ? ctx->clause : "this clause");
                return NULL;
            }
            int32_t index;
            if (df__bind_aggregate_call(b, e, ctx, &index)) return NULL;
            return agg_output_ref(b, ctx, index);
        }
        bool literal_like = e->kind == AE_INTEGER || e->kind == AE_NUMBER || e->kind == AE_STRING ||
                            e->kind == AE_BOOL || e->kind == AE_NULL || e->kind == AE_BINARY;
        if (!literal_like && !df__ast_has_aggregate(e) && !df__ast_has_window(e) &&
            (!df__ast_has_subquery(e) || df__bind_subqueries_in_scope(b, e, ctx->agg->input))) {
            bctx pre = {.scope = ctx->agg->input, .clause = ctx->clause};
            df_expr *x = bind_expr_inner(b, e, &pre);
            if (!x) return NULL;
            for (int32_t g = 0; g < ctx->agg->ngroup; g++)
                if (df__expr_equal(x, ctx->agg->group[g])) return agg_output_ref(b, ctx, g);
            if (df__expr_is_constant(x)) return x;
            if (e->kind == AE_COLUMN) {
                char name[128];
                snprintf(name, sizeof name, "%s", e->name.parts[e->name.n - 1]);
                df__bind_error(b, DF_ERR_SQL_TYPE, e->pos,
                           "column `%s` must appear in the GROUP BY clause or be used in an aggregate function",
                           name);
                return NULL;
            }
        }
    }
    return bind_expr_inner(b, e, ctx);
}

static df_expr *bind_expr_inner(binder *b, const ast_expr *e, const bctx *ctx) {
    switch (e->kind) {
    case AE_COLUMN: return bind_column(b, e, ctx);
    case AE_INTEGER: return bind_integer(b, e, false);
    case AE_NUMBER: return bind_number(b, e, false);
    case AE_STRING: return lit_utf8(b, e->text, e->len);
    case AE_BINARY: {
        df_scalar s = {.type = df_type_binary()};
        s.v.bytes.ptr = (uint8_t *)e->text;
        s.v.bytes.len = e->len;
        return literal(b, &s);
    }
    case AE_BOOL: return lit_bool(b, e->bval);
    case AE_NULL: return df__expr_null(b->plan, df_type_null(), b->err);
    case AE_TYPED_STRING: return bind_typed_string(b, e);
    case AE_INTERVAL: return bind_interval(b, e);
    case AE_UNARY: return bind_unary(b, e, ctx);
    case AE_BINOP: return bind_binop(b, e, ctx);
    case AE_AND:
    case AE_OR: return bind_logic(b, e, ctx);
    case AE_NOT: return bind_not(b, e, ctx);
    case AE_IS: return bind_is(b, e, ctx);
    case AE_DISTINCT_FROM: return bind_distinct_from(b, e, ctx);
    case AE_BETWEEN: return bind_between(b, e, ctx);
    case AE_IN_LIST:
        if (e->nlist == 1 && e->list[0]->kind == AE_SUBQUERY) return df__bind_subquery_column(b, e, ctx);
        return bind_in_list(b, e, ctx);
    case AE_LIKE: return bind_like(b, e, ctx);
    case AE_REGEX: return bind_regex(b, e, ctx);
    case AE_CASE: return bind_case(b, e, ctx);
    case AE_CAST: return bind_cast(b, e, ctx);
    case AE_EXTRACT: return bind_extract(b, e, ctx);
    case AE_SUBSTRING: return bind_substring(b, e, ctx);
    case AE_TRIM: return bind_trim(b, e, ctx);
    case AE_POSITION: return bind_position(b, e, ctx);
    case AE_OVERLAY: return bind_overlay(b, e, ctx);
    case AE_CURRENT: return bind_current(b, e);
    case AE_FUNC:
        if (e->over) return df__bind_window_column(b, e, ctx);
        if (df__bind_agg_fn(e) >= 0) {
            if (!ctx->agg || !ctx->allow_agg) {
                df__bind_error(b, DF_ERR_SQL_TYPE, e->pos, "aggregate functions are not allowed in %s",
                           ctx->clause ? ctx->clause : "this clause");
                return NULL;
            }
            int32_t index;
            if (df__bind_aggregate_call(b, e, ctx, &index)) return NULL;
            return agg_output_ref(b, ctx, index);
        }
        if (ctx->agg && !ctx->agg->collecting && e->name.n == 1 && strcmp(e->name.parts[0], "grouping") == 0)
            return df__bind_grouping_call(b, e, ctx);
        if (e->name.n == 1 && unsupported_agg_name(e->name.parts[0])) {
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "aggregate function `%s` is not supported yet",
                       e->name.parts[0]);
            return NULL;
        }
        return df__bind_function(b, e, ctx);
    case AE_SIMILAR:
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "SIMILAR TO is not supported");
        return NULL;
    case AE_SUBQUERY:
    case AE_QUANTIFIED:
    case AE_IN_SUBQUERY:
    case AE_EXISTS: return df__bind_subquery_column(b, e, ctx);
    case AE_STAR:
        df__bind_error(b, DF_ERR_SQL_SYNTAX, e->pos, "`*` is only allowed in the SELECT list and count(*)");
        return NULL;
    case AE_PARAM:
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "query parameters are not supported");
        return NULL;
    case AE_ARRAY:
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, e->pos, "arrays are not supported");
        return NULL;
    }
    df__bind_error(b, DF_ERR_INTERNAL, e->pos, "unknown expression kind");
    return NULL;
}
