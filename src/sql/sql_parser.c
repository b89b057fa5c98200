/*
 * SQL parser: recursive descent over the token array, building the AST
 * (sql_ast.h) in an arena.
 *
 * Statements: one query (SELECT / VALUES / WITH / parenthesised query, with
 * set operations, ORDER BY, LIMIT, OFFSET, FETCH).  Anything that starts
 * like DDL or DML is refused as DF_ERR_SQL_NOT_READ_ONLY; a second
 * statement after a semicolon too.
 *
 * Expressions use one function per precedence level (PostgreSQL's order,
 * loosest first): OR, AND, NOT, IS, comparison, LIKE/IN/BETWEEN, other
 * operators (||, bit ops), + -, * / %, unary sign, postfix (::type,
 * [index]), primary.  AND/OR chains are flattened into lists, so long
 * generated predicates do not make deep trees.  Recursion is bounded twice:
 * `depth` counts nested parentheses / subqueries / prefix operators
 * (DF_SQL_MAX_DEPTH) and every node's `height` is checked against
 * DF_SQL_MAX_HEIGHT, so later recursive passes are bounded too.  Chains the
 * parser builds in a loop (binary operators, joins, set operations) do not
 * recurse here but do nest in the AST and in the plan, and a subquery nests
 * its whole height under the expression or FROM item holding it, so a
 * query's `height` adds its tallest expression (subqueries included), its
 * longest join chain, its set-operation chain and its number of subquery
 * expressions (each becomes a join stacked on the query's input), and is held to the same
 * bound: the binder, optimizer, expression compiler and plan printers then
 * never recurse deeper than about DF_SQL_MAX_HEIGHT levels.
 *
 * Errors are sticky in the parser state: a failing function returns NULL
 * and records the first error; callers just propagate NULL.
 */
#include "sql/sql_ast.h"
#include "sql/sql_lexer.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct parser {
    const char *text;       /* SQL text */
    int32_t text_len;       /* bytes */
    sql_token *toks;        /* tokens (last is TK_EOF) */
    int32_t ntoks;          /* count */
    int32_t i;              /* current token */
    df_arena *arena;        /* where nodes go */
    df_error *err;          /* caller's error */
    df_errkind status;      /* first failure, DF_OK while healthy */
    int32_t depth;          /* current nesting depth */
    int32_t qexpr;          /* current query: tallest expression (with its subqueries) so far */
    int32_t qjoin;          /* current query: longest FROM chain (items + joins) of one SELECT */
    int32_t qset;           /* current query: longest chain of set operations */
    int32_t qsub;           /* current query: subquery expressions (each binds as one more join on its input) */
    int32_t jnest;          /* joins of the parenthesised join just parsed, for the chain holding it */
} parser;

/* ------------------------------------------------------------------------ */
/* Token helpers                                                             */

static const sql_token *peek(const parser *p) { return &p->toks[p->i]; }
static const sql_token *peek_at(const parser *p, int32_t k) {
    int32_t j = p->i + k;
    return &p->toks[j < p->ntoks ? j : p->ntoks - 1];
}
static const sql_token *advance(parser *p) {
    const sql_token *t = &p->toks[p->i];
    if (p->i < p->ntoks - 1) p->i++;
    return t;
}
static bool is_kw(const sql_token *t, sql_kw kw) { return t->type == TK_WORD && t->kw == kw; }

/* True when the next token is the unquoted non-keyword word `w` (lower-case ASCII), in any case. */
static bool at_word(const parser *p, const char *w) {
    const sql_token *t = peek(p);
    size_t n = strlen(w);
    if (t->type != TK_WORD || t->kw != KW_NONE || (size_t)t->len != n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = p->text[t->start + (int32_t)i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != w[i]) return false;
    }
    return true;
}
static bool at_kw(const parser *p, sql_kw kw) { return is_kw(peek(p), kw); }
static bool at(const parser *p, sql_tok tk) { return peek(p)->type == tk; }
static bool accept_kw(parser *p, sql_kw kw) {
    if (!at_kw(p, kw)) return false;
    advance(p);
    return true;
}
static bool accept(parser *p, sql_tok tk) {
    if (!at(p, tk)) return false;
    advance(p);
    return true;
}
static int32_t prev_end(const parser *p) {
    if (p->i == 0) return 0;
    const sql_token *t = &p->toks[p->i - 1];
    return t->start + t->len;
}

/* Describes a token for messages: `text` (truncated) or "end of input". */
static void describe(const parser *p, const sql_token *t, char *buf, size_t size) {
    if (t->type == TK_EOF) {
        snprintf(buf, size, "end of input");
        return;
    }
    int32_t len = t->len;
    const char *dots = "";
    if (len > 40) {
        len = (int32_t)df_utf8_cut((const uint8_t *)p->text + t->start, (size_t)len, 40);
        dots = "...";
    }
    snprintf(buf, size, "`%.*s%s`", (int)len, p->text + t->start, dots);
}

static void *fail_at(parser *p, df_errkind kind, int32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void *fail_at(parser *p, df_errkind kind, int32_t pos, const char *fmt, ...) {
    if (p->status) return NULL;
    char msg[360];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->status = df__sql_error_at(p->err, kind, p->text, p->text_len, pos, "%s", msg);
    return NULL;
}

/* "expected <what>, found <token>" at the current token. */
static void *expected(parser *p, const char *what) {
    char found[64];
    describe(p, peek(p), found, sizeof found);
    return fail_at(p, DF_ERR_SQL_SYNTAX, peek(p)->start, "expected %s, found %s", what, found);
}

static bool expect(parser *p, sql_tok tk, const char *what) {
    if (accept(p, tk)) return true;
    expected(p, what);
    return false;
}

static bool expect_kw(parser *p, sql_kw kw) {
    if (accept_kw(p, kw)) return true;
    char what[32];
    snprintf(what, sizeof what, "%s", df__sql_kw_name(kw));
    expected(p, what);
    return false;
}

static void *oom(parser *p) {
    if (!p->status) p->status = DF_OOM(p->err);
    return NULL;
}

static void *alloc(parser *p, size_t size) {
    void *m = df_arena_calloc(p->arena, 1, size);
    if (!m) return oom(p);
    return m;
}

static void *alloc_array(parser *p, size_t n, size_t size) {
    if (n == 0) return NULL;
    void *m = df_arena_calloc(p->arena, n, size);
    if (!m) return oom(p);
    return m;
}

/* A growable pointer list in the arena (doubling; old blocks are left in the arena). */
typedef struct plist {
    void **items;   /* elements */
    int32_t n;      /* used */
    int32_t cap;    /* allocated */
} plist;

static bool plist_push(parser *p, plist *l, void *item) {
    if (l->n == l->cap) {
        int32_t ncap = l->cap ? l->cap * 2 : 8;
        if (ncap > 1 << 24) {
            fail_at(p, DF_ERR_SQL_TOO_COMPLEX, peek(p)->start, "list is too long");
            return false;
        }
        void **ni = alloc_array(p, (size_t)ncap, sizeof(void *));
        if (!ni) return false;
        if (l->n) memcpy(ni, l->items, (size_t)l->n * sizeof(void *));
        l->items = ni;
        l->cap = ncap;
    }
    l->items[l->n++] = item;
    return true;
}

static bool enter(parser *p) {
    if (++p->depth > DF_SQL_MAX_DEPTH) {
        fail_at(p, DF_ERR_SQL_TOO_COMPLEX, peek(p)->start, "statement is nested more than %d levels deep",
                DF_SQL_MAX_DEPTH);
        return false;
    }
    return true;
}
static void leave(parser *p) { p->depth--; }

/* ------------------------------------------------------------------------ */
/* Text decoding                                                             */

/* Folds an unquoted word to lower case (ASCII). */
static char *word_text(parser *p, const sql_token *t) {
    char *s = df_arena_strndup(p->arena, p->text + t->start, (size_t)t->len);
    if (!s) return oom(p);
    for (char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c + 32);
    return s;
}

/* Removes the quotes of "x""y" / `x` and un-doubles the quote character. */
static char *unquote(parser *p, const sql_token *t, int32_t skip, int32_t *out_len) {
    const char *s = p->text + t->start + skip;
    char q = s[0];
    int32_t n = t->len - skip - 2;
    char *d = df_arena_alloc(p->arena, (size_t)n + 1);
    if (!d) return oom(p);
    int32_t k = 0;
    for (int32_t j = 1; j <= n; j++) {
        d[k++] = s[j];
        if (s[j] == q) j++; /* doubled quote */
    }
    d[k] = '\0';
    if (out_len) *out_len = k;
    return d;
}

/* Decodes E'...' escapes: \n \t \r \b \f \\ \' \xHH \uXXXX \UXXXXXXXX and octal \ooo. */
static char *unescape_estring(parser *p, const sql_token *t, int32_t *out_len) {
    const char *s = p->text + t->start + 2;
    int32_t n = t->len - 3;
    char *d = df_arena_alloc(p->arena, (size_t)n * 2 + 4);
    if (!d) return oom(p);
    int32_t k = 0;
    for (int32_t j = 0; j < n; j++) {
        char c = s[j];
        if (c == '\'' && j + 1 < n && s[j + 1] == '\'') {
            d[k++] = '\'';
            j++;
            continue;
        }
        if (c != '\\' || j + 1 >= n) {
            d[k++] = c;
            continue;
        }
        char e = s[++j];
        switch (e) {
        case 'n': d[k++] = '\n'; break;
        case 't': d[k++] = '\t'; break;
        case 'r': d[k++] = '\r'; break;
        case 'b': d[k++] = '\b'; break;
        case 'f': d[k++] = '\f'; break;
        case 'x': {
            int v = 0, m = 0;
            while (m < 2 && j + 1 < n && df_hex_value(s[j + 1]) >= 0) v = v * 16 + df_hex_value(s[++j]), m++;
            if (m == 0) return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "invalid \\x escape in string");
            d[k++] = (char)v;
            break;
        }
        case 'u':
        case 'U': {
            int want = e == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int m = 0; m < want; m++) {
                if (j + 1 >= n || df_hex_value(s[j + 1]) < 0)
                    return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "invalid unicode escape in string");
                v = v * 16 + (uint32_t)df_hex_value(s[++j]);
            }
            if (!df_unicode_is_scalar(v)) return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "invalid unicode escape in string");
            k += (int32_t)df_utf8_encode(v, (uint8_t *)d + k);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                int v = e - '0', m = 1;
                while (m < 3 && j + 1 < n && s[j + 1] >= '0' && s[j + 1] <= '7') v = v * 8 + (s[++j] - '0'), m++;
                d[k++] = (char)v;
            } else {
                d[k++] = e;
            }
        }
    }
    d[k] = '\0';
    *out_len = k;
    /* \x and octal escapes can spell bytes that are not UTF-8; a string value must be. */
    if (!df_utf8_valid((const uint8_t *)d, (size_t)k))
        return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "escapes in this string do not form valid UTF-8");
    return d;
}

static char *decode_xstring(parser *p, const sql_token *t, int32_t *out_len) {
    const char *s = p->text + t->start + 2;
    int32_t n = t->len - 3;
    if (n % 2) return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "hex string has an odd number of digits");
    char *d = df_arena_alloc(p->arena, (size_t)n / 2 + 1);
    if (!d) return oom(p);
    if (!df_hex_decode(s, (size_t)n, (uint8_t *)d)) return fail_at(p, DF_ERR_SQL_SYNTAX, t->start, "invalid hex string");
    d[n / 2] = '\0';
    *out_len = n / 2;
    return d;
}

/* Identifier: unquoted word (not reserved) or quoted.  NULL + error otherwise. */
static bool at_identifier(const parser *p) {
    const sql_token *t = peek(p);
    return t->type == TK_QIDENT || (t->type == TK_WORD && !df__sql_kw_reserved(t->kw));
}

static char *parse_ident(parser *p, bool *quoted) {
    const sql_token *t = peek(p);
    if (t->type == TK_QIDENT) {
        advance(p);
        if (quoted) *quoted = true;
        return unquote(p, t, 0, NULL);
    }
    if (t->type == TK_WORD && !df__sql_kw_reserved(t->kw)) {
        advance(p);
        if (quoted) *quoted = false;
        return word_text(p, t);
    }
    return expected(p, "identifier");
}

/* name(.name)* */
static bool parse_name(parser *p, ast_name *out) {
    char *parts[8];
    bool quoted[8];
    int32_t n = 0;
    do {
        if (n == 8) {
            fail_at(p, DF_ERR_SQL_SYNTAX, peek(p)->start, "name has too many parts");
            return false;
        }
        parts[n] = parse_ident(p, &quoted[n]);
        if (!parts[n]) return false;
        n++;
    } while (at(p, TK_DOT) && (peek_at(p, 1)->type == TK_WORD || peek_at(p, 1)->type == TK_QIDENT) &&
             advance(p));
    out->n = n;
    out->parts = alloc_array(p, (size_t)n, sizeof(char *));
    out->quoted = alloc_array(p, (size_t)n, sizeof(bool));
    if (!out->parts || !out->quoted) return false;
    memcpy(out->parts, parts, (size_t)n * sizeof(char *));
    memcpy(out->quoted, quoted, (size_t)n * sizeof(bool));
    return true;
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */

static ast_expr *parse_expr(parser *p);
static ast_expr *parse_other(parser *p);
static ast_query *parse_query(parser *p);
static ast_type *parse_type(parser *p);
static bool nest_query(parser *p, const ast_query *q);

static ast_expr *mk(parser *p, ast_expr_kind kind, int32_t pos) {
    ast_expr *e = alloc(p, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->pos = pos;
    e->end = pos;
    e->height = 1;
    return e;
}

/* Fixes end and height once the operands are set; fails when too tall. */
static ast_expr *finish(parser *p, ast_expr *e) {
    if (!e) return NULL;
    int32_t h = 0;
    ast_expr *ops[4] = {e->a, e->b, e->c, e->d};
    for (int k = 0; k < 4; k++)
        if (ops[k] && ops[k]->height > h) h = ops[k]->height;
    for (int32_t k = 0; k < e->nlist; k++) {
        if (e->list && e->list[k] && e->list[k]->height > h) h = e->list[k]->height;
        if (e->list2 && e->list2[k] && e->list2[k]->height > h) h = e->list2[k]->height;
    }
    if (e->kind == AE_AND || e->kind == AE_OR) h -= 1; /* flattened chains do not grow */
    if (e->query && e->query->height > h) h = e->query->height; /* binding recurses through the subquery */
    e->height = h + 1;
    if (e->height > DF_SQL_MAX_HEIGHT)
        return fail_at(p, DF_ERR_SQL_TOO_COMPLEX, e->pos, "expression is nested more than %d levels deep",
                       DF_SQL_MAX_HEIGHT);
    if (e->height > p->qexpr) p->qexpr = e->height;
    if (e->query) p->qsub++;
    e->end = prev_end(p);
    return e;
}

static ast_expr *binop(parser *p, int op, ast_expr *a, ast_expr *b) {
    if (!a || !b) return NULL;
    ast_expr *e = mk(p, AE_BINOP, a->pos);
    if (!e) return NULL;
    e->op = op;
    e->a = a;
    e->b = b;
    return finish(p, e);
}

/* Comma-separated expressions up to (not including) `close`. */
static bool parse_expr_list(parser *p, plist *l) {
    do {
        ast_expr *e = parse_expr(p);
        if (!e || !plist_push(p, l, e)) return false;
    } while (accept(p, TK_COMMA));
    return true;
}

static bool parse_order_items(parser *p, int32_t *n, ast_order **out);

static ast_expr *parse_interval_body(parser *p, int32_t pos);

/* UNBOUNDED PRECEDING | n PRECEDING | CURRENT ROW | n FOLLOWING | UNBOUNDED FOLLOWING */
static bool parse_frame_bound(parser *p, ast_frame_bound *b) {
    b->pos = peek(p)->start;
    if (at_word(p, "unbounded")) {
        advance(p);
        if (at_word(p, "preceding")) b->kind = 0;
        else if (at_word(p, "following")) b->kind = 4;
        else return expected(p, "PRECEDING or FOLLOWING") != NULL;
        advance(p);
        return true;
    }
    if (at_word(p, "current")) {
        advance(p);
        if (!expect_kw(p, KW_ROW)) return false;
        b->kind = 2;
        return true;
    }
    if (peek(p)->type == TK_STRING && peek_at(p, 1)->type == TK_WORD && peek_at(p, 1)->kw == KW_NONE) {
        /* '1' DAY PRECEDING: a string with a unit is an interval here. */
        p->i++;
        bool unit = !at_word(p, "preceding") && !at_word(p, "following");
        p->i--;
        if (unit) {
            b->offset = parse_interval_body(p, peek(p)->start);
            if (!b->offset) return false;
        }
    }
    if (!b->offset) b->offset = parse_expr(p);
    if (!b->offset) return false;
    if (at_word(p, "preceding")) b->kind = 1;
    else if (at_word(p, "following")) b->kind = 3;
    else return expected(p, "PRECEDING or FOLLOWING") != NULL;
    advance(p);
    return true;
}

/* ( [DISTINCT|ALL] args | * [ORDER BY ..] ) [FILTER (WHERE ..)] [OVER (..)] after the name. */
static ast_expr *parse_call(parser *p, ast_expr *e) {
    if (!expect(p, TK_LPAREN, "`(`")) return NULL;
    plist args = {0};
    if (accept_kw(p, KW_DISTINCT))
        e->flag = true;
    else
        accept_kw(p, KW_ALL);
    if (at(p, TK_STAR) && peek_at(p, 1)->type == TK_RPAREN) {
        advance(p);
        e->star_arg = true;
    } else if (!at(p, TK_RPAREN)) {
        if (!parse_expr_list(p, &args)) return NULL;
    }
    if (at_kw(p, KW_ORDER)) {
        advance(p);
        if (!expect_kw(p, KW_BY) || !parse_order_items(p, &e->norder, &e->order)) return NULL;
    }
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    e->nlist = args.n;
    e->list = (ast_expr **)args.items;
    if (at_word(p, "within") && is_kw(peek_at(p, 1), KW_GROUP)) {
        /* Ordered-set aggregate: percentile_cont(0.5) WITHIN GROUP (ORDER BY x). */
        if (e->norder) return fail_at(p, DF_ERR_SQL_SYNTAX, peek(p)->start, "ORDER BY given twice");
        advance(p);
        advance(p);
        if (!expect(p, TK_LPAREN, "`(`") || !expect_kw(p, KW_ORDER) || !expect_kw(p, KW_BY) ||
            !parse_order_items(p, &e->norder, &e->order) || !expect(p, TK_RPAREN, "`)`"))
            return NULL;
        e->within_group = true;
    }
    if ((at_word(p, "ignore") || at_word(p, "respect")) && is_kw(peek_at(p, 1), KW_NULLS)) {
        e->null_treatment = at_word(p, "ignore") ? 1 : 2;
        advance(p);
        advance(p);
    }
    if (at_kw(p, KW_FILTER)) {
        advance(p);
        if (!expect(p, TK_LPAREN, "`(`") || !expect_kw(p, KW_WHERE)) return NULL;
        e->filter = parse_expr(p);
        if (!e->filter || !expect(p, TK_RPAREN, "`)`")) return NULL;
    }
    if (at_kw(p, KW_OVER)) {
        advance(p);
        ast_window *w = alloc(p, sizeof *w);
        if (!w) return NULL;
        e->over = w;
        if (at_identifier(p)) {
            w->name = parse_ident(p, NULL); /* named window: the binder reports it unsupported */
            if (!w->name) return NULL;
            return finish(p, e);
        }
        if (!expect(p, TK_LPAREN, "`(`")) return NULL;
        if (accept_kw(p, KW_PARTITION)) {
            plist parts = {0};
            if (!expect_kw(p, KW_BY) || !parse_expr_list(p, &parts)) return NULL;
            w->npartition = parts.n;
            w->partition = (ast_expr **)parts.items;
        }
        if (accept_kw(p, KW_ORDER)) {
            if (!expect_kw(p, KW_BY) || !parse_order_items(p, &w->norder, &w->order)) return NULL;
        }
        if (at_kw(p, KW_ROWS) || at_word(p, "range") || at_word(p, "groups")) {
            w->has_frame = true;
            w->frame_units = at_kw(p, KW_ROWS) ? 0 : at_word(p, "range") ? 1 : 2;
            advance(p);
            if (accept_kw(p, KW_BETWEEN)) {
                if (!parse_frame_bound(p, &w->start) || !expect_kw(p, KW_AND) || !parse_frame_bound(p, &w->end))
                    return NULL;
            } else {
                if (!parse_frame_bound(p, &w->start)) return NULL;
                w->end = (ast_frame_bound){.kind = 2, .pos = w->start.pos};
            }
            if (at_word(p, "exclude")) {
                /* EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS: recorded, rejected when binding. */
                w->exclude = true;
                while (!at(p, TK_RPAREN) && !at(p, TK_EOF)) advance(p);
            }
        }
        if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    }
    return finish(p, e);
}

static ast_expr *parse_case(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_CASE, pos);
    if (!e) return NULL;
    if (!at_kw(p, KW_WHEN)) {
        e->a = parse_expr(p);
        if (!e->a) return NULL;
    }
    plist whens = {0}, thens = {0};
    while (accept_kw(p, KW_WHEN)) {
        ast_expr *w = parse_expr(p);
        if (!w || !expect_kw(p, KW_THEN)) return NULL;
        ast_expr *t = parse_expr(p);
        if (!t || !plist_push(p, &whens, w) || !plist_push(p, &thens, t)) return NULL;
    }
    if (whens.n == 0) return expected(p, "WHEN");
    if (accept_kw(p, KW_ELSE)) {
        e->b = parse_expr(p);
        if (!e->b) return NULL;
    }
    if (!expect_kw(p, KW_END)) return NULL;
    e->nlist = whens.n;
    e->list = (ast_expr **)whens.items;
    e->list2 = (ast_expr **)thens.items;
    return finish(p, e);
}

static ast_expr *parse_cast(parser *p, bool try_cast) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_CAST, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    e->flag = try_cast;
    e->a = parse_expr(p);
    if (!e->a || !expect_kw(p, KW_AS)) return NULL;
    e->type = parse_type(p);
    if (!e->type || !expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

/* EXTRACT(field FROM expr); field is a word or a string. */
static ast_expr *parse_extract(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_EXTRACT, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    const sql_token *t = peek(p);
    if (t->type == TK_WORD || t->type == TK_QIDENT) {
        advance(p);
        e->text = t->type == TK_WORD ? word_text(p, t) : unquote(p, t, 0, NULL);
    } else if (t->type == TK_STRING) {
        advance(p);
        e->text = unquote(p, t, 0, NULL);
    } else {
        return expected(p, "date part");
    }
    if (!e->text) return NULL;
    if (!accept_kw(p, KW_FROM) && !accept(p, TK_COMMA)) return expected(p, "FROM");
    e->a = parse_expr(p);
    if (!e->a || !expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

/* SUBSTRING(a FROM b [FOR c]) or SUBSTRING(a, b [, c]). */
static ast_expr *parse_substring(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_SUBSTRING, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    e->a = parse_expr(p);
    if (!e->a) return NULL;
    if (accept_kw(p, KW_FROM) || accept(p, TK_COMMA)) {
        e->b = parse_expr(p);
        if (!e->b) return NULL;
    }
    if (accept_kw(p, KW_FOR) || accept(p, TK_COMMA)) {
        e->c = parse_expr(p);
        if (!e->c) return NULL;
    }
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

/* TRIM([BOTH|LEADING|TRAILING] [chars] FROM a) | TRIM(a [, chars]). */
static ast_expr *parse_trim(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_TRIM, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    e->op = ATRIM_BOTH;
    bool side = false;
    if (accept_kw(p, KW_BOTH)) side = true;
    else if (accept_kw(p, KW_LEADING)) e->op = ATRIM_LEADING, side = true;
    else if (accept_kw(p, KW_TRAILING)) e->op = ATRIM_TRAILING, side = true;
    if (side && accept_kw(p, KW_FROM)) {
        e->a = parse_expr(p);
    } else {
        ast_expr *first = parse_expr(p);
        if (!first) return NULL;
        if (accept_kw(p, KW_FROM)) {
            e->b = first;
            e->a = parse_expr(p);
        } else if (!side && accept(p, TK_COMMA)) {
            e->a = first;
            e->b = parse_expr(p);
            if (!e->b) return NULL;
        } else {
            e->a = first;
        }
    }
    if (!e->a || !expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

static ast_expr *parse_position(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_POSITION, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    /* The needle is parsed above IN precedence so that IN is left for us. */
    if (!enter(p)) return NULL;
    e->a = parse_other(p);
    leave(p);
    if (!e->a || !expect_kw(p, KW_IN)) return NULL;
    e->b = parse_expr(p);
    if (!e->b) return NULL;
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

static ast_expr *parse_overlay(parser *p) {
    int32_t pos = advance(p)->start;
    ast_expr *e = mk(p, AE_OVERLAY, pos);
    if (!e || !expect(p, TK_LPAREN, "`(`")) return NULL;
    if (!(e->a = parse_expr(p)) || !expect_kw(p, KW_PLACING) || !(e->b = parse_expr(p)) ||
        !expect_kw(p, KW_FROM) || !(e->c = parse_expr(p)))
        return NULL;
    if (accept_kw(p, KW_FOR) && !(e->d = parse_expr(p))) return NULL;
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

/* INTERVAL '1 day' | INTERVAL '1' DAY [TO SECOND] | INTERVAL 1 DAY */
static ast_expr *parse_interval(parser *p) {
    int32_t pos = advance(p)->start;
    return parse_interval_body(p, pos);
}

/* The interval literal after INTERVAL (or a bare '1' DAY in a window frame). */
static ast_expr *parse_interval_body(parser *p, int32_t pos) {
    ast_expr *e = mk(p, AE_INTERVAL, pos);
    if (!e) return NULL;
    const sql_token *t = peek(p);
    if (t->type == TK_STRING) {
        advance(p);
        e->text = unquote(p, t, 0, &e->len);
    } else if (t->type == TK_INTEGER || t->type == TK_NUMBER) {
        advance(p);
        e->text = df_arena_strndup(p->arena, p->text + t->start, (size_t)t->len);
        if (!e->text) return oom(p);
        e->len = t->len;
    } else if (t->type == TK_MINUS && (peek_at(p, 1)->type == TK_INTEGER || peek_at(p, 1)->type == TK_NUMBER)) {
        advance(p);
        t = advance(p);
        e->text = df_arena_alloc(p->arena, (size_t)t->len + 2);
        if (!e->text) return oom(p);
        e->text[0] = '-';
        memcpy(e->text + 1, p->text + t->start, (size_t)t->len);
        e->text[t->len + 1] = '\0';
        e->len = t->len + 1;
    } else {
        return expected(p, "interval string");
    }
    if (!e->text) return NULL;
    /* Optional unit word (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, ...), not a keyword that ends the expr. */
    if (peek(p)->type == TK_WORD && peek(p)->kw == KW_NONE) {
        static const char *const units[] = {"year", "years", "month", "months", "week", "weeks", "day",
                                            "days", "hour", "hours", "minute", "minutes", "second",
                                            "seconds", "millisecond", "milliseconds", "microsecond",
                                            "microseconds", "nanosecond", "nanoseconds", "decade",
                                            "century", "millennium", "quarter"};
        char *w = word_text(p, peek(p));
        if (!w) return NULL;
        for (size_t k = 0; k < DF_ARRAY_LEN(units); k++) {
            if (strcmp(w, units[k]) == 0) {
                advance(p);
                e->name.n = 1;
                e->name.parts = alloc_array(p, 1, sizeof(char *));
                if (!e->name.parts) return NULL;
                e->name.parts[0] = w;
                if (accept_kw(p, KW_TO)) {
                    if (peek(p)->type != TK_WORD) return expected(p, "interval unit");
                    advance(p); /* DAY TO SECOND: the string carries all parts */
                }
                break;
            }
        }
    }
    return finish(p, e);
}

/* A word followed by a string: DATE '..', TIMESTAMP '..', TIME '..', or type 'text' in general. */
static ast_expr *parse_typed_string(parser *p) {
    int32_t pos = peek(p)->start;
    ast_type *ty = parse_type(p);
    if (!ty) return NULL;
    const sql_token *t = peek(p);
    if (t->type != TK_STRING) return expected(p, "string literal");
    advance(p);
    ast_expr *e = mk(p, AE_TYPED_STRING, pos);
    if (!e) return NULL;
    e->type = ty;
    e->text = unquote(p, t, 0, &e->len);
    if (!e->text) return NULL;
    return finish(p, e);
}

/* ( ... ): subquery, parenthesised expression, or a row (unsupported). */
static ast_expr *parse_paren(parser *p) {
    int32_t pos = peek(p)->start;
    const sql_token *n1 = peek_at(p, 1);
    if (is_kw(n1, KW_SELECT) || is_kw(n1, KW_WITH) || is_kw(n1, KW_VALUES)) {
        advance(p);
        ast_expr *e = mk(p, AE_SUBQUERY, pos);
        if (!e) return NULL;
        e->query = parse_query(p);
        if (!e->query || !expect(p, TK_RPAREN, "`)`")) return NULL;
        return finish(p, e);
    }
    advance(p);
    ast_expr *inner = parse_expr(p);
    if (!inner) return NULL;
    if (at(p, TK_COMMA))
        return fail_at(p, DF_ERR_SQL_UNSUPPORTED, pos, "row values (a, b, ...) are not supported");
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    return inner;
}

static ast_expr *literal_token(parser *p, ast_expr_kind kind, const sql_token *t) {
    ast_expr *e = mk(p, kind, t->start);
    if (!e) return NULL;
    advance(p);
    switch (t->type) {
    case TK_STRING: e->text = unquote(p, t, 0, &e->len); break;
    case TK_ESTRING: e->text = unescape_estring(p, t, &e->len); break;
    case TK_XSTRING: e->text = decode_xstring(p, t, &e->len); break;
    default: {
        /* Numbers: drop '_' digit separators. */
        char *s = df_arena_alloc(p->arena, (size_t)t->len + 1);
        if (!s) return oom(p);
        int32_t k = 0;
        for (int32_t j = 0; j < t->len; j++)
            if (p->text[t->start + j] != '_') s[k++] = p->text[t->start + j];
        s[k] = '\0';
        e->text = s;
        e->len = k;
    }
    }
    if (!e->text) return NULL;
    return finish(p, e);
}

/* Column reference, qualified star, or function call starting with a name. */
static ast_expr *parse_name_expr(parser *p) {
    int32_t pos = peek(p)->start;
    ast_expr *e = mk(p, AE_COLUMN, pos);
    if (!e || !parse_name(p, &e->name)) return NULL;
    if (at(p, TK_DOT) && peek_at(p, 1)->type == TK_STAR) {
        advance(p);
        advance(p);
        e->kind = AE_STAR;
        return finish(p, e);
    }
    if (at(p, TK_LPAREN)) {
        e->kind = AE_FUNC;
        return parse_call(p, e);
    }
    return finish(p, e);
}

static ast_expr *parse_primary(parser *p) {
    const sql_token *t = peek(p);
    switch (t->type) {
    case TK_INTEGER: return literal_token(p, AE_INTEGER, t);
    case TK_NUMBER: return literal_token(p, AE_NUMBER, t);
    case TK_STRING:
    case TK_ESTRING: return literal_token(p, AE_STRING, t);
    case TK_XSTRING: return literal_token(p, AE_BINARY, t);
    case TK_LPAREN: return parse_paren(p);
    case TK_QIDENT: return parse_name_expr(p);
    case TK_DOLLAR_PARAM:
    case TK_QMARK: {
        ast_expr *e = mk(p, AE_PARAM, t->start);
        advance(p);
        return finish(p, e);
    }
    case TK_LBRACKET: {
        ast_expr *e = mk(p, AE_ARRAY, t->start);
        if (!e) return NULL;
        advance(p);
        plist items = {0};
        if (!at(p, TK_RBRACKET) && !parse_expr_list(p, &items)) return NULL;
        if (!expect(p, TK_RBRACKET, "`]`")) return NULL;
        e->nlist = items.n;
        e->list = (ast_expr **)items.items;
        return finish(p, e);
    }
    case TK_STAR: {
        ast_expr *e = mk(p, AE_STAR, t->start);
        advance(p);
        return finish(p, e);
    }
    case TK_WORD: break;
    default: return expected(p, "expression");
    }
    const sql_token *n1 = peek_at(p, 1);
    switch (t->kw) {
    case KW_NULL: {
        ast_expr *e = mk(p, AE_NULL, t->start);
        advance(p);
        return finish(p, e);
    }
    case KW_TRUE:
    case KW_FALSE: {
        ast_expr *e = mk(p, AE_BOOL, t->start);
        if (!e) return NULL;
        e->bval = t->kw == KW_TRUE;
        advance(p);
        return finish(p, e);
    }
    case KW_CASE: return parse_case(p);
    case KW_CAST: if (n1->type == TK_LPAREN) return parse_cast(p, false); break;
    case KW_TRY_CAST: if (n1->type == TK_LPAREN) return parse_cast(p, true); break;
    case KW_EXTRACT: if (n1->type == TK_LPAREN) return parse_extract(p); break;
    case KW_SUBSTRING: if (n1->type == TK_LPAREN) return parse_substring(p); break;
    case KW_TRIM: if (n1->type == TK_LPAREN) return parse_trim(p); break;
    case KW_POSITION: if (n1->type == TK_LPAREN) return parse_position(p); break;
    case KW_OVERLAY: if (n1->type == TK_LPAREN) return parse_overlay(p); break;
    case KW_INTERVAL:
        if (n1->type == TK_STRING || n1->type == TK_INTEGER || n1->type == TK_NUMBER || n1->type == TK_MINUS)
            return parse_interval(p);
        break;
    case KW_EXISTS:
        if (n1->type == TK_LPAREN) {
            ast_expr *e = mk(p, AE_EXISTS, t->start);
            if (!e) return NULL;
            advance(p);
            advance(p);
            e->query = parse_query(p);
            if (!e->query || !expect(p, TK_RPAREN, "`)`")) return NULL;
            return finish(p, e);
        }
        break;
    case KW_DATE:
    case KW_TIMESTAMP:
    case KW_TIME:
        if (n1->type == TK_STRING || (t->kw != KW_DATE && (is_kw(n1, KW_WITH) || is_kw(n1, KW_WITHOUT) ||
                                                           n1->type == TK_LPAREN)))
            return parse_typed_string(p);
        break;
    case KW_CURRENT_DATE:
    case KW_CURRENT_TIMESTAMP:
    case KW_CURRENT_TIME:
        if (n1->type != TK_LPAREN) {
            ast_expr *e = mk(p, AE_CURRENT, t->start);
            if (!e) return NULL;
            e->op = t->kw;
            advance(p);
            return finish(p, e);
        }
        break;
    case KW_LEFT:
    case KW_RIGHT:
    case KW_ANY:
    case KW_SOME:
    case KW_ALL:
        if (n1->type == TK_LPAREN) {
            /* left(s, n), right(s, n): keyword used as a function name. */
            ast_expr *e = mk(p, AE_FUNC, t->start);
            if (!e) return NULL;
            e->name.n = 1;
            e->name.parts = alloc_array(p, 1, sizeof(char *));
            e->name.quoted = alloc_array(p, 1, sizeof(bool));
            if (!e->name.parts || !e->name.quoted) return NULL;
            e->name.parts[0] = word_text(p, t);
            advance(p);
            if (!e->name.parts[0]) return NULL;
            return parse_call(p, e);
        }
        break;
    default: break;
    }
    if (df__sql_kw_reserved(t->kw)) return expected(p, "expression");
    if (n1->type == TK_STRING && t->kw == KW_NONE) {
        /* Other "type 'text'" literals: int '1', varchar 'x', ... */
        return parse_typed_string(p);
    }
    return parse_name_expr(p);
}

/* primary followed by ::type casts and [index] subscripts. */
static ast_expr *parse_postfix(parser *p) {
    ast_expr *e = parse_primary(p);
    while (e) {
        if (at(p, TK_DCOLON)) {
            advance(p);
            ast_expr *c = mk(p, AE_CAST, e->pos);
            if (!c) return NULL;
            c->a = e;
            c->flag = false;
            c->op = TK_DCOLON;
            c->type = parse_type(p);
            if (!c->type) return NULL;
            e = finish(p, c);
        } else if (at_word(p, "at") && is_kw(peek_at(p, 1), KW_TIME) && is_kw(peek_at(p, 2), KW_ZONE)) {
            /* x AT TIME ZONE z: binds tighter than any operator (1 + t AT TIME ZONE z zones t only). */
            advance(p);
            advance(p);
            advance(p);
            ast_expr *c = mk(p, AE_FUNC, e->pos);
            ast_expr *z = c ? parse_primary(p) : NULL;
            if (!z) return NULL;
            c->name.n = 1;
            c->name.parts = alloc_array(p, 1, sizeof(char *));
            c->name.quoted = alloc_array(p, 1, sizeof(bool));
            c->list = alloc_array(p, 2, sizeof(ast_expr *));
            if (!c->name.parts || !c->name.quoted || !c->list) return NULL;
            if (!(c->name.parts[0] = df_arena_strndup(p->arena, "at_time_zone", 12))) return oom(p);
            c->list[0] = e;
            c->list[1] = z;
            c->nlist = 2;
            e = finish(p, c);
        } else if (at(p, TK_LBRACKET)) {
            advance(p);
            ast_expr *s = mk(p, AE_ARRAY, e->pos);
            if (!s) return NULL;
            s->a = e;
            s->b = parse_expr(p);
            if (!s->b || !expect(p, TK_RBRACKET, "`]`")) return NULL;
            e = finish(p, s);
        } else {
            break;
        }
    }
    return e;
}

static ast_expr *parse_unary(parser *p) {
    if (at(p, TK_MINUS) || at(p, TK_PLUS) || at(p, TK_TILDE)) {
        const sql_token *t = advance(p);
        if (!enter(p)) return NULL;
        ast_expr *a = parse_unary(p);
        leave(p);
        if (!a) return NULL;
        ast_expr *e = mk(p, AE_UNARY, t->start);
        if (!e) return NULL;
        e->op = t->type;
        e->a = a;
        return finish(p, e);
    }
    return parse_postfix(p);
}

static ast_expr *parse_mul(parser *p) {
    ast_expr *l = parse_unary(p);
    while (l && (at(p, TK_STAR) || at(p, TK_SLASH) || at(p, TK_PERCENT))) {
        int op = advance(p)->type;
        l = binop(p, op, l, parse_unary(p));
    }
    return l;
}

static ast_expr *parse_add(parser *p) {
    ast_expr *l = parse_mul(p);
    while (l && (at(p, TK_PLUS) || at(p, TK_MINUS))) {
        int op = advance(p)->type;
        l = binop(p, op, l, parse_mul(p));
    }
    return l;
}

/* Other operators: || & | # << >> ^ */
static ast_expr *parse_other(parser *p) {
    ast_expr *l = parse_add(p);
    while (l && (at(p, TK_CONCAT) || at(p, TK_AMP) || at(p, TK_PIPE) || at(p, TK_HASH) || at(p, TK_SHL) ||
                 at(p, TK_SHR) || at(p, TK_CARET) || at(p, TK_ARROW) || at(p, TK_LONG_ARROW))) {
        int op = advance(p)->type;
        l = binop(p, op, l, parse_add(p));
    }
    return l;
}

/* IN (list | query) after the left operand. */
static ast_expr *parse_in(parser *p, ast_expr *l, bool negated) {
    ast_expr *e = mk(p, AE_IN_LIST, l->pos);
    if (!e) return NULL;
    e->a = l;
    e->negated = negated;
    if (!expect(p, TK_LPAREN, "`(`")) return NULL;
    if (at_kw(p, KW_SELECT) || at_kw(p, KW_WITH) || at_kw(p, KW_VALUES)) {
        e->kind = AE_IN_SUBQUERY;
        e->query = parse_query(p);
        if (!e->query) return NULL;
    } else {
        plist items = {0};
        if (!at(p, TK_RPAREN) && !parse_expr_list(p, &items)) return NULL;
        e->nlist = items.n;
        e->list = (ast_expr **)items.items;
    }
    if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    return finish(p, e);
}

/* LIKE / ILIKE / SIMILAR TO / BETWEEN / IN / regex operators. */
static ast_expr *parse_like(parser *p) {
    ast_expr *l = parse_other(p);
    while (l) {
        bool negated = false;
        int32_t save = p->i;
        if (at_kw(p, KW_NOT)) {
            advance(p);
            negated = true;
        }
        if (at_kw(p, KW_LIKE) || at_kw(p, KW_ILIKE)) {
            bool ilike = advance(p)->kw == KW_ILIKE;
            ast_expr *e = mk(p, AE_LIKE, l->pos);
            if (!e) return NULL;
            e->a = l;
            e->flag = ilike;
            e->negated = negated;
            e->b = parse_other(p);
            if (!e->b) return NULL;
            if (accept_kw(p, KW_ESCAPE) && !(e->c = parse_other(p))) return NULL;
            l = finish(p, e);
        } else if (at_kw(p, KW_SIMILAR)) {
            advance(p);
            if (!expect_kw(p, KW_TO)) return NULL;
            ast_expr *e = mk(p, AE_SIMILAR, l->pos);
            if (!e) return NULL;
            e->a = l;
            e->negated = negated;
            e->b = parse_other(p);
            if (!e->b) return NULL;
            if (accept_kw(p, KW_ESCAPE) && !(e->c = parse_other(p))) return NULL;
            l = finish(p, e);
        } else if (at_kw(p, KW_BETWEEN)) {
            advance(p);
            ast_expr *e = mk(p, AE_BETWEEN, l->pos);
            if (!e) return NULL;
            e->a = l;
            e->negated = negated;
            if (peek(p)->type == TK_WORD && peek(p)->len == 9 &&
                df_ascii_ncasecmp(p->text + peek(p)->start, "symmetric", 9) == 0) {
                advance(p);
                e->flag = true;
            }
            e->b = parse_other(p);
            if (!e->b || !expect_kw(p, KW_AND)) return NULL;
            e->c = parse_other(p);
            if (!e->c) return NULL;
            l = finish(p, e);
        } else if (at_kw(p, KW_IN)) {
            advance(p);
            l = parse_in(p, l, negated);
        } else if (!negated && (at(p, TK_REGEX_MATCH) || at(p, TK_REGEX_IMATCH) || at(p, TK_REGEX_NMATCH) ||
                                at(p, TK_REGEX_NIMATCH) || at(p, TK_LIKE_OP) || at(p, TK_ILIKE_OP) ||
                                at(p, TK_NLIKE_OP) || at(p, TK_NILIKE_OP))) {
            int op = advance(p)->type;
            ast_expr *e = mk(p, AE_REGEX, l->pos);
            if (!e) return NULL;
            e->op = op;
            e->a = l;
            e->b = parse_other(p);
            if (!e->b) return NULL;
            l = finish(p, e);
        } else {
            p->i = save; /* a NOT that belongs to an outer level */
            break;
        }
    }
    return l;
}

static bool at_comparison(const parser *p) {
    sql_tok t = peek(p)->type;
    return t == TK_EQ || t == TK_NE || t == TK_LT || t == TK_LE || t == TK_GT || t == TK_GE ||
           t == TK_SPACESHIP;
}

static ast_expr *parse_cmp(parser *p) {
    ast_expr *l = parse_like(p);
    while (l && at_comparison(p)) {
        int op = advance(p)->type;
        if (at_kw(p, KW_ANY) || at_kw(p, KW_ALL) || at_kw(p, KW_SOME)) {
            const sql_token *q1 = peek_at(p, 2);
            if (peek_at(p, 1)->type == TK_LPAREN && op != TK_SPACESHIP && (is_kw(q1, KW_SELECT) || is_kw(q1, KW_WITH))) {
                /* x op ANY / ALL (subquery) */
                ast_expr *e = mk(p, AE_QUANTIFIED, l->pos);
                if (!e) return NULL;
                e->op = op;
                e->flag = advance(p)->kw == KW_ALL;
                advance(p);
                e->a = l;
                e->query = parse_query(p);
                if (!e->query || !expect(p, TK_RPAREN, "`)`")) return NULL;
                l = finish(p, e);
                continue;
            }
            if (peek_at(p, 1)->type == TK_LPAREN)
                return fail_at(p, DF_ERR_SQL_UNSUPPORTED, peek(p)->start,
                               "comparisons with ANY/ALL are not supported");
        }
        l = binop(p, op, l, parse_like(p));
    }
    return l;
}

static ast_expr *parse_is(parser *p) {
    ast_expr *l = parse_cmp(p);
    while (l && at_kw(p, KW_IS)) {
        advance(p);
        bool negated = accept_kw(p, KW_NOT);
        ast_expr *e;
        if (accept_kw(p, KW_DISTINCT)) {
            if (!expect_kw(p, KW_FROM)) return NULL;
            e = mk(p, AE_DISTINCT_FROM, l->pos);
            if (!e) return NULL;
            e->b = parse_cmp(p);
            if (!e->b) return NULL;
        } else {
            e = mk(p, AE_IS, l->pos);
            if (!e) return NULL;
            if (accept_kw(p, KW_NULL)) e->op = AIS_NULL;
            else if (accept_kw(p, KW_TRUE)) e->op = AIS_TRUE;
            else if (accept_kw(p, KW_FALSE)) e->op = AIS_FALSE;
            else if (accept_kw(p, KW_UNKNOWN)) e->op = AIS_UNKNOWN;
            else return expected(p, "NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM");
        }
        e->a = l;
        e->negated = negated;
        l = finish(p, e);
    }
    return l;
}

static ast_expr *parse_not(parser *p) {
    if (at_kw(p, KW_NOT)) {
        int32_t pos = advance(p)->start;
        if (!enter(p)) return NULL;
        ast_expr *a = parse_not(p);
        leave(p);
        if (!a) return NULL;
        ast_expr *e = mk(p, AE_NOT, pos);
        if (!e) return NULL;
        e->a = a;
        return finish(p, e);
    }
    return parse_is(p);
}

/* Flattened AND / OR chains. */
static ast_expr *parse_chain(parser *p, sql_kw kw, ast_expr_kind kind, ast_expr *(*sub)(parser *)) {
    ast_expr *first = sub(p);
    if (!first || !at_kw(p, kw)) return first;
    plist items = {0};
    if (!plist_push(p, &items, first)) return NULL;
    while (accept_kw(p, kw)) {
        ast_expr *e = sub(p);
        if (!e || !plist_push(p, &items, e)) return NULL;
    }
    ast_expr *e = mk(p, kind, first->pos);
    if (!e) return NULL;
    e->nlist = items.n;
    e->list = (ast_expr **)items.items;
    return finish(p, e);
}

static ast_expr *parse_and(parser *p) { return parse_chain(p, KW_AND, AE_AND, parse_not); }

static ast_expr *parse_expr(parser *p) {
    if (p->status || !enter(p)) return NULL;
    ast_expr *e = parse_chain(p, KW_OR, AE_OR, parse_and);
    leave(p);
    return e;
}

/* ------------------------------------------------------------------------ */
/* Types                                                                     */

static bool word_is(const parser *p, const sql_token *t, const char *w) {
    size_t n = strlen(w);
    return t->type == TK_WORD && (size_t)t->len == n && df_ascii_ncasecmp(p->text + t->start, w, n) == 0;
}

/* Type name: words (double precision, character varying, ...) [ (n [, m]) ] [with|without time zone] [[]]. */
static ast_type *parse_type(parser *p) {
    const sql_token *t = peek(p);
    if (t->type != TK_WORD && t->type != TK_QIDENT) return expected(p, "type name");
    ast_type *ty = alloc(p, sizeof *ty);
    if (!ty) return NULL;
    ty->pos = t->start;
    advance(p);
    ty->name = t->type == TK_WORD ? word_text(p, t) : unquote(p, t, 0, NULL);
    if (!ty->name) return NULL;
    if (strcmp(ty->name, "double") == 0 && at_kw(p, KW_PRECISION)) advance(p);
    if ((strcmp(ty->name, "character") == 0 || strcmp(ty->name, "char") == 0) && at_kw(p, KW_VARYING)) {
        advance(p);
        ty->name = "varchar";
    }
    if (strcmp(ty->name, "unsigned") == 0 && peek(p)->type == TK_WORD) {
        /* UNSIGNED INT */
        ty->is_unsigned = true;
        t = advance(p);
        ty->name = word_text(p, t);
        if (!ty->name) return NULL;
    }
    if (accept(p, TK_LPAREN)) {
        do {
            bool neg = accept(p, TK_MINUS);
            const sql_token *n = peek(p);
            if (n->type != TK_INTEGER) return expected(p, "type parameter");
            advance(p);
            if (ty->nparams == 2) return fail_at(p, DF_ERR_SQL_SYNTAX, n->start, "too many type parameters");
            int64_t v = 0;
            for (int32_t j = 0; j < n->len; j++) {
                char c = p->text[n->start + j];
                if (c == '_') continue;
                if (v > 100000000) return fail_at(p, DF_ERR_SQL_SYNTAX, n->start, "type parameter too large");
                v = v * 10 + (c - '0');
            }
            ty->params[ty->nparams++] = neg ? -v : v;
        } while (accept(p, TK_COMMA));
        if (!expect(p, TK_RPAREN, "`)`")) return NULL;
    }
    if (at_kw(p, KW_WITH) || at_kw(p, KW_WITHOUT)) {
        const sql_token *n1 = peek_at(p, 1), *n2 = peek_at(p, 2);
        if (is_kw(n1, KW_TIME) && is_kw(n2, KW_ZONE)) {
            ty->with_tz = at_kw(p, KW_WITH);
            advance(p);
            advance(p);
            advance(p);
        }
    }
    if (at_kw(p, KW_UNSIGNED)) {
        advance(p);
        ty->is_unsigned = true;
    }
    while (at(p, TK_LBRACKET) && peek_at(p, 1)->type == TK_RBRACKET) {
        advance(p);
        advance(p);
        ty->is_array = true;
    }
    return ty;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */

static bool parse_order_items(parser *p, int32_t *n, ast_order **out) {
    plist items = {0};
    do {
        ast_order *o = alloc(p, sizeof *o);
        if (!o) return false;
        o->expr = parse_expr(p);
        if (!o->expr) return false;
        if (accept_kw(p, KW_DESC))
            o->desc = true;
        else
            accept_kw(p, KW_ASC);
        if (accept_kw(p, KW_NULLS)) {
            if (accept_kw(p, KW_FIRST))
                o->nulls = 1;
            else if (accept_kw(p, KW_LAST))
                o->nulls = 2;
            else {
                expected(p, "FIRST or LAST");
                return false;
            }
        }
        if (!plist_push(p, &items, o)) return false;
    } while (accept(p, TK_COMMA));
    ast_order *arr = alloc_array(p, (size_t)items.n, sizeof *arr);
    if (!arr) return false;
    for (int32_t k = 0; k < items.n; k++) arr[k] = *(ast_order *)items.items[k];
    *n = items.n;
    *out = arr;
    return true;
}

/* [AS] alias [(c1, c2)] for FROM items; returns false only on error. */
static bool parse_table_alias(parser *p, ast_tableref *r) {
    bool has_as = accept_kw(p, KW_AS);
    if (has_as || at_identifier(p)) {
        /* Words that start the next clause are not aliases. */
        const sql_token *t = peek(p);
        if (!has_as && t->type == TK_WORD && (t->kw == KW_LIMIT || t->kw == KW_OFFSET || t->kw == KW_FETCH))
            return true;
        r->alias = parse_ident(p, NULL);
        if (!r->alias) return false;
        if (at(p, TK_LPAREN)) {
            advance(p);
            plist cols = {0};
            do {
                char *c = parse_ident(p, NULL);
                if (!c || !plist_push(p, &cols, c)) return false;
            } while (accept(p, TK_COMMA));
            if (!expect(p, TK_RPAREN, "`)`")) return false;
            r->ncol_aliases = cols.n;
            r->col_aliases = (char **)cols.items;
        }
    }
    return true;
}

static ast_tableref *parse_tableref(parser *p);
static ast_setexpr *parse_values(parser *p);

static ast_tableref *parse_table_primary(parser *p) {
    ast_tableref *r = alloc(p, sizeof *r);
    if (!r) return NULL;
    r->pos = peek(p)->start;
    if (at_kw(p, KW_LATERAL)) {
        advance(p);
        r->lateral = true;
        if (!at(p, TK_LPAREN)) return expected(p, "`(`");
    }
    if (at(p, TK_LPAREN)) {
        const sql_token *n1 = peek_at(p, 1);
        advance(p);
        if (!enter(p)) return NULL;
        if (is_kw(n1, KW_SELECT) || is_kw(n1, KW_WITH) || is_kw(n1, KW_VALUES) || n1->type == TK_LPAREN) {
            /* A parenthesised query (or a nested parenthesised join, tried as a query first). */
            int32_t save = p->i;
            if (n1->type == TK_LPAREN) {
                /* ((SELECT ..)) or ((a JOIN b)): decide by the first non-paren token. */
                int32_t j = p->i;
                while (p->toks[j].type == TK_LPAREN && j < p->ntoks - 1) j++;
                const sql_token *first = &p->toks[j];
                if (!(is_kw(first, KW_SELECT) || is_kw(first, KW_WITH) || is_kw(first, KW_VALUES))) {
                    ast_tableref *inner = parse_tableref(p);
                    leave(p);
                    if (!inner || !expect(p, TK_RPAREN, "`)`")) return NULL;
                    if (!parse_table_alias(p, inner)) return NULL;
                    return inner;
                }
            }
            (void)save;
            r->kind = AT_SUBQUERY;
            r->query = parse_query(p);
            leave(p);
            if (!r->query || !nest_query(p, r->query) || !expect(p, TK_RPAREN, "`)`")) return NULL;
            if (!parse_table_alias(p, r)) return NULL;
            return r;
        }
        ast_tableref *inner = parse_tableref(p);
        leave(p);
        if (!inner || !expect(p, TK_RPAREN, "`)`")) return NULL;
        if (!parse_table_alias(p, inner)) return NULL;
        return inner;
    }
    if (at_kw(p, KW_VALUES) && peek_at(p, 1)->type == TK_LPAREN) {
        /* FROM VALUES (..), (..) [AS] alias(cols): a derived table without parentheses. */
        ast_query *q = alloc(p, sizeof *q);
        if (!q) return NULL;
        q->pos = r->pos;
        if (!(q->body = parse_values(p))) return NULL;
        int32_t h = 0;
        for (int32_t i = 0; i < q->body->nrows; i++)
            for (int32_t c = 0; c < q->body->row_len[i]; c++) h = DF_MAX(h, q->body->rows[i][c]->height);
        q->height = h + 1;
        r->kind = AT_SUBQUERY;
        r->query = q;
        if (!nest_query(p, q) || !parse_table_alias(p, r)) return NULL;
        return r;
    }
    r->kind = AT_NAMED;
    if (!parse_name(p, &r->name)) return NULL;
    if (at(p, TK_LPAREN)) {
        r->kind = AT_FUNCTION;
        advance(p);
        plist args = {0};
        if (!at(p, TK_RPAREN) && !parse_expr_list(p, &args)) return NULL;
        if (!expect(p, TK_RPAREN, "`)`")) return NULL;
        r->nargs = args.n;
        r->args = (ast_expr **)args.items;
    }
    if (!parse_table_alias(p, r)) return NULL;
    return r;
}

/* Reads a join operator; returns false when the next tokens are not a join. */
static bool parse_join_kind(parser *p, ast_join_type *type, bool *natural) {
    int32_t save = p->i;
    *natural = accept_kw(p, KW_NATURAL);
    if (accept_kw(p, KW_CROSS)) {
        *type = AJ_CROSS;
    } else if (accept_kw(p, KW_INNER)) {
        *type = AJ_INNER;
    } else if (accept_kw(p, KW_LEFT) || accept_kw(p, KW_RIGHT)) {
        bool left = p->toks[p->i - 1].kw == KW_LEFT;
        if (accept_kw(p, KW_SEMI))
            *type = left ? AJ_LEFT_SEMI : AJ_RIGHT_SEMI;
        else if (accept_kw(p, KW_ANTI))
            *type = left ? AJ_LEFT_ANTI : AJ_RIGHT_ANTI;
        else {
            accept_kw(p, KW_OUTER);
            *type = left ? AJ_LEFT : AJ_RIGHT;
        }
    } else if (accept_kw(p, KW_FULL)) {
        accept_kw(p, KW_OUTER);
        *type = AJ_FULL;
    } else {
        *type = AJ_INNER;
    }
    if (!at_kw(p, KW_JOIN)) {
        if (p->i != save && !p->status) {
            expected(p, "JOIN");
            return false;
        }
        p->i = save;
        return false;
    }
    advance(p);
    return true;
}

/* Parses a FROM item and its joins; `*chain` counts the joins (the left-deep nesting they make). */
static ast_tableref *parse_tableref_chain(parser *p, int32_t *chain) {
    ast_tableref *l = parse_table_primary(p);
    *chain += p->jnest;
    p->jnest = 0;
    while (l && !p->status) {
        ast_join_type type;
        bool natural;
        int32_t pos = peek(p)->start;
        if (!parse_join_kind(p, &type, &natural)) break;
        ast_tableref *j = alloc(p, sizeof *j);
        if (!j) return NULL;
        j->kind = AT_JOIN;
        j->pos = pos;
        j->join = type;
        j->natural = natural;
        j->left = l;
        j->right = parse_table_primary(p);
        if (!j->right) return NULL;
        *chain += 1 + p->jnest;
        p->jnest = 0;
        if (type != AJ_CROSS && !natural) {
            if (accept_kw(p, KW_ON)) {
                j->on = parse_expr(p);
                if (!j->on) return NULL;
            } else if (accept_kw(p, KW_USING)) {
                if (!expect(p, TK_LPAREN, "`(`")) return NULL;
                plist cols = {0};
                do {
                    char *c = parse_ident(p, NULL);
                    if (!c || !plist_push(p, &cols, c)) return NULL;
                } while (accept(p, TK_COMMA));
                if (!expect(p, TK_RPAREN, "`)`")) return NULL;
                j->nusing = cols.n;
                j->using_cols = (char **)cols.items;
            } else if (type != AJ_INNER) {
                return expected(p, "ON or USING");
            }
        }
        l = j;
    }
    return p->status ? NULL : l;
}

/* A parenthesised join: its chain is left in p->jnest for the enclosing chain to count. */
static ast_tableref *parse_tableref(parser *p) {
    int32_t chain = 0;
    ast_tableref *r = parse_tableref_chain(p, &chain);
    p->jnest = chain; /* a parenthesised join nests its chain in the one around it */
    return r;
}

/* Projection item: *, t.*, expr [[AS] alias]. */
static bool parse_select_item(parser *p, ast_select_item *item) {
    item->expr = parse_expr(p);
    if (!item->expr) return false;
    if (item->expr->kind == AE_STAR) {
        if (at_kw(p, KW_EXCEPT) || (peek(p)->type == TK_WORD && (word_is(p, peek(p), "exclude") ||
                                                                 word_is(p, peek(p), "replace") ||
                                                                 word_is(p, peek(p), "rename")))) {
            fail_at(p, DF_ERR_SQL_UNSUPPORTED, peek(p)->start, "wildcard options are not supported");
            return false;
        }
        return true;
    }
    if (accept_kw(p, KW_AS)) {
        item->alias_pos = peek(p)->start;
        if (peek(p)->type == TK_STRING) {
            item->alias = unquote(p, advance(p), 0, NULL);
        } else if (peek(p)->type == TK_WORD) {
            /* After AS any word is an alias, even a keyword. */
            item->alias = word_text(p, advance(p));
        } else {
            item->alias = parse_ident(p, NULL);
        }
        return item->alias != NULL;
    }
    if (at_identifier(p)) {
        item->alias_pos = peek(p)->start;
        item->alias = parse_ident(p, NULL);
        return item->alias != NULL;
    }
    return true;
}

/* A list of grouping sets, each a list of indexes into the GROUP BY expressions. */
typedef struct gsets {
    int32_t n;
    int32_t *len;
    int32_t **idx;
} gsets;

static bool gsets_add(parser *p, gsets *g, const int32_t *idx, int32_t len, int32_t pos) {
    if (g->n >= DF_SQL_MAX_GROUPING_SETS) {
        fail_at(p, DF_ERR_SQL_TOO_COMPLEX, pos, "GROUP BY expands to more than %d grouping sets", DF_SQL_MAX_GROUPING_SETS);
        return false;
    }
    if (g->n % 16 == 0) {
        int32_t *nl = alloc_array(p, (size_t)g->n + 16, sizeof *nl);
        int32_t **ni = alloc_array(p, (size_t)g->n + 16, sizeof *ni);
        if (!nl || !ni) return false;
        if (g->n) {
            memcpy(nl, g->len, (size_t)g->n * sizeof *nl);
            memcpy(ni, g->idx, (size_t)g->n * sizeof *ni);
        }
        g->len = nl;
        g->idx = ni;
    }
    int32_t *c = alloc_array(p, (size_t)len + 1, sizeof *c);
    if (!c) return false;
    if (len) memcpy(c, idx, (size_t)len * sizeof *c);
    g->len[g->n] = len;
    g->idx[g->n++] = c;
    return true;
}

/* `( e, ... )` or `()` or a bare expression, appended to items; their indexes in *first..items->n. */
static bool parse_group_tuple(parser *p, plist *items, bool allow_bare) {
    if (!allow_bare || (at(p, TK_LPAREN) && peek_at(p, 1)->type == TK_RPAREN)) {
        if (!expect(p, TK_LPAREN, "`(`")) return false;
        if (accept(p, TK_RPAREN)) return true;
        do {
            ast_expr *e = parse_expr(p);
            if (!e || !plist_push(p, items, e)) return false;
        } while (accept(p, TK_COMMA));
        return expect(p, TK_RPAREN, "`)`");
    }
    ast_expr *e = parse_expr(p);
    return e && plist_push(p, items, e);
}

/* One GROUP BY item as its grouping sets: e, ROLLUP(..), CUBE(..), GROUPING SETS (..). */
static bool parse_group_item(parser *p, plist *items, gsets *out) {
    const sql_token *t = peek(p);
    int32_t pos = t->start;
    bool rollup = t->type == TK_WORD && word_is(p, t, "rollup") && peek_at(p, 1)->type == TK_LPAREN;
    bool cube = t->type == TK_WORD && word_is(p, t, "cube") && peek_at(p, 1)->type == TK_LPAREN;
    bool sets = t->type == TK_WORD && word_is(p, t, "grouping") && peek_at(p, 1)->type == TK_WORD &&
                word_is(p, peek_at(p, 1), "sets");
    if (!rollup && !cube && !sets) {
        int32_t first = items->n;
        if (!parse_group_tuple(p, items, true)) return false;
        int32_t one[1] = {first};
        return gsets_add(p, out, one, 1, pos);
    }
    advance(p);
    if (sets) {
        advance(p);
        if (!expect(p, TK_LPAREN, "`(`")) return false;
        do {
            int32_t first = items->n;
            if (!parse_group_tuple(p, items, !at(p, TK_LPAREN))) return false;
            int32_t n = items->n - first;
            int32_t *idx = alloc_array(p, (size_t)n + 1, sizeof *idx);
            if (!idx) return false;
            for (int32_t i = 0; i < n; i++) idx[i] = first + i;
            if (!gsets_add(p, out, idx, n, pos)) return false;
        } while (accept(p, TK_COMMA));
        return expect(p, TK_RPAREN, "`)`");
    }
    int32_t first = items->n;
    if (!parse_group_tuple(p, items, false)) return false;
    int32_t n = items->n - first;
    int32_t *idx = alloc_array(p, (size_t)n + 1, sizeof *idx);
    if (!idx) return false;
    if (cube && n > 12) return !!fail_at(p, DF_ERR_SQL_TOO_COMPLEX, pos, "too many expressions in %s", cube ? "CUBE" : "ROLLUP");
    if (rollup) {
        for (int32_t k = n; k >= 0; k--) {
            for (int32_t i = 0; i < k; i++) idx[i] = first + i;
            if (!gsets_add(p, out, idx, k, pos)) return false;
        }
        return true;
    }
    for (int32_t mask = (1 << n) - 1; mask >= 0; mask--) {
        int32_t k = 0;
        for (int32_t i = 0; i < n; i++)
            if (mask & (1 << i)) idx[k++] = first + i;
        if (!gsets_add(p, out, idx, k, pos)) return false;
    }
    return true;
}

static bool parse_group_by(parser *p, ast_select *s) {
    if (accept_kw(p, KW_ALL)) {
        s->group_all = true;
        return true;
    }
    plist items = {0};
    gsets all = {0};
    int32_t pos = peek(p)->start;
    if (!gsets_add(p, &all, NULL, 0, pos)) return false;
    do {
        const sql_token *t = peek(p);
        if (t->type == TK_WORD && (word_is(p, t, "rollup") || word_is(p, t, "cube") || word_is(p, t, "grouping")) &&
            (peek_at(p, 1)->type == TK_LPAREN || peek_at(p, 1)->type == TK_WORD))
            s->group_sets = true;
        gsets one = {0};
        if (!parse_group_item(p, &items, &one)) return false;
        /* Cross product with the sets so far. */
        gsets next = {0};
        for (int32_t a = 0; a < all.n; a++)
            for (int32_t b = 0; b < one.n; b++) {
                int32_t *idx = alloc_array(p, (size_t)(all.len[a] + one.len[b]) + 1, sizeof *idx);
                if (!idx) return false;
                memcpy(idx, all.idx[a], (size_t)all.len[a] * sizeof *idx);
                if (one.len[b]) memcpy(idx + all.len[a], one.idx[b], (size_t)one.len[b] * sizeof *idx);
                if (!gsets_add(p, &next, idx, all.len[a] + one.len[b], pos)) return false;
            }
        all = next;
    } while (accept(p, TK_COMMA));
    s->ngroup = items.n;
    s->group = (ast_expr **)items.items;
    s->nsets = all.n;
    s->set_len = all.len;
    s->sets = all.idx;
    return true;
}

static ast_select *parse_select(parser *p) {
    ast_select *s = alloc(p, sizeof *s);
    if (!s) return NULL;
    s->pos = advance(p)->start; /* SELECT */
    if (accept_kw(p, KW_DISTINCT)) {
        s->distinct = true;
        if (accept_kw(p, KW_ON)) {
            plist on = {0};
            if (!expect(p, TK_LPAREN, "`(`") || !parse_expr_list(p, &on) || !expect(p, TK_RPAREN, "`)`"))
                return NULL;
            s->ndistinct_on = on.n;
            s->distinct_on = (ast_expr **)on.items;
        }
    } else {
        accept_kw(p, KW_ALL);
    }
    plist items = {0};
    if (at_kw(p, KW_FROM) || at(p, TK_EOF) || at(p, TK_SEMI) || at(p, TK_RPAREN)) return expected(p, "expression");
    {
        do {
            ast_select_item *it = alloc(p, sizeof *it);
            if (!it || !parse_select_item(p, it) || !plist_push(p, &items, it)) return NULL;
        } while (accept(p, TK_COMMA) && !at_kw(p, KW_FROM));
    }
    s->nitems = items.n;
    s->items = alloc_array(p, (size_t)items.n, sizeof *s->items);
    if (items.n && !s->items) return NULL;
    for (int32_t k = 0; k < items.n; k++) s->items[k] = *(ast_select_item *)items.items[k];
    if (accept_kw(p, KW_FROM)) {
        plist from = {0};
        int32_t chain = 0; /* FROM a, b JOIN c, ...: one left-deep join tree */
        do {
            ast_tableref *r = parse_tableref_chain(p, &chain);
            if (!r || !plist_push(p, &from, r)) return NULL;
            chain++;
        } while (accept(p, TK_COMMA));
        if (chain > p->qjoin) p->qjoin = chain;
        s->nfrom = from.n;
        s->from = (ast_tableref **)from.items;
    }
    if (accept_kw(p, KW_WHERE) && !(s->where = parse_expr(p))) return NULL;
    if (accept_kw(p, KW_GROUP)) {
        if (!expect_kw(p, KW_BY) || !parse_group_by(p, s)) return NULL;
    }
    if (accept_kw(p, KW_HAVING) && !(s->having = parse_expr(p))) return NULL;
    if (at_kw(p, KW_WINDOW)) return fail_at(p, DF_ERR_SQL_UNSUPPORTED, peek(p)->start, "WINDOW clauses are not supported");
    if (accept_kw(p, KW_QUALIFY) && !(s->qualify = parse_expr(p))) return NULL;
    return s;
}

static ast_setexpr *parse_values(parser *p) {
    ast_setexpr *v = alloc(p, sizeof *v);
    if (!v) return NULL;
    v->kind = AS_VALUES;
    v->pos = advance(p)->start;
    plist rows = {0}, lens = {0};
    do {
        if (!expect(p, TK_LPAREN, "`(`")) return NULL;
        plist vals = {0};
        if (!parse_expr_list(p, &vals) || !expect(p, TK_RPAREN, "`)`")) return NULL;
        int32_t *len = alloc(p, sizeof *len);
        if (!len) return NULL;
        *len = vals.n;
        if (!plist_push(p, &rows, vals.items) || !plist_push(p, &lens, len)) return NULL;
    } while (accept(p, TK_COMMA));
    v->nrows = rows.n;
    v->rows = (ast_expr ***)rows.items;
    v->row_len = alloc_array(p, (size_t)rows.n, sizeof(int32_t));
    if (!v->row_len) return NULL;
    for (int32_t k = 0; k < rows.n; k++) v->row_len[k] = *(int32_t *)lens.items[k];
    return v;
}

static ast_setexpr *parse_set_primary(parser *p) {
    if (at_kw(p, KW_SELECT)) {
        ast_setexpr *s = alloc(p, sizeof *s);
        if (!s) return NULL;
        s->kind = AS_SELECT;
        s->pos = peek(p)->start;
        s->select = parse_select(p);
        return s->select ? s : NULL;
    }
    if (at_kw(p, KW_VALUES)) return parse_values(p);
    if (at(p, TK_LPAREN)) {
        ast_setexpr *s = alloc(p, sizeof *s);
        if (!s) return NULL;
        s->kind = AS_QUERY;
        s->pos = advance(p)->start;
        if (!enter(p)) return NULL;
        s->query = parse_query(p);
        leave(p);
        if (!s->query || !nest_query(p, s->query) || !expect(p, TK_RPAREN, "`)`")) return NULL;
        return s;
    }
    if (at_kw(p, KW_TABLE)) return fail_at(p, DF_ERR_SQL_UNSUPPORTED, peek(p)->start, "TABLE statements are not supported");
    return expected(p, "SELECT, VALUES or `(`");
}

/* Set operations: INTERSECT binds tighter than UNION / EXCEPT. */
static ast_setexpr *parse_setexpr(parser *p, int min_prec) {
    ast_setexpr *l = parse_set_primary(p);
    int32_t chain = 1; /* the left-deep nesting this loop builds */
    while (l) {
        int prec;
        ast_setop op;
        if (at_kw(p, KW_UNION)) op = ASO_UNION, prec = 1;
        else if (at_kw(p, KW_EXCEPT)) op = ASO_EXCEPT, prec = 1;
        else if (at_kw(p, KW_INTERSECT)) op = ASO_INTERSECT, prec = 2;
        else break;
        if (prec < min_prec) break;
        int32_t pos = advance(p)->start;
        ast_setexpr *s = alloc(p, sizeof *s);
        if (!s) return NULL;
        s->kind = AS_SETOP;
        s->pos = pos;
        s->op = op;
        if (accept_kw(p, KW_ALL))
            s->all = true;
        else
            accept_kw(p, KW_DISTINCT);
        if (peek(p)->type == TK_WORD && word_is(p, peek(p), "by")) {
            return fail_at(p, DF_ERR_SQL_UNSUPPORTED, peek(p)->start, "UNION BY NAME is not supported");
        }
        if (!enter(p)) return NULL;
        s->left = l;
        int32_t outer_set = p->qset;
        p->qset = 0;
        s->right = parse_setexpr(p, prec + 1);
        leave(p);
        if (!s->right) return NULL;
        chain = DF_MAX(chain, p->qset) + 1; /* the right operand's own chain nests under this node */
        p->qset = DF_MAX(outer_set, chain);
        if (p->qset > DF_SQL_MAX_HEIGHT)
            return fail_at(p, DF_ERR_SQL_TOO_COMPLEX, pos, "more than %d chained set operations", DF_SQL_MAX_HEIGHT);
        l = s;
    }
    return l;
}

static bool parse_ctes(parser *p, ast_query *q) {
    q->recursive = accept_kw(p, KW_RECURSIVE);
    plist ctes = {0};
    do {
        ast_cte *c = alloc(p, sizeof *c);
        if (!c) return false;
        c->pos = peek(p)->start;
        c->name = parse_ident(p, NULL);
        if (!c->name) return false;
        if (accept(p, TK_LPAREN)) {
            plist cols = {0};
            do {
                char *n = parse_ident(p, NULL);
                if (!n || !plist_push(p, &cols, n)) return false;
            } while (accept(p, TK_COMMA));
            if (!expect(p, TK_RPAREN, "`)`")) return false;
            c->ncols = cols.n;
            c->cols = (char **)cols.items;
        }
        if (!expect_kw(p, KW_AS) || !expect(p, TK_LPAREN, "`(`")) return false;
        c->query = parse_query(p);
        if (!c->query || !nest_query(p, c->query) || !expect(p, TK_RPAREN, "`)`") || !plist_push(p, &ctes, c))
            return false;
    } while (accept(p, TK_COMMA));
    q->nctes = ctes.n;
    q->ctes = alloc_array(p, (size_t)ctes.n, sizeof *q->ctes);
    if (!q->ctes) return false;
    for (int32_t k = 0; k < ctes.n; k++) q->ctes[k] = *(ast_cte *)ctes.items[k];
    return true;
}

/* LIMIT n | LIMIT ALL, OFFSET n [ROWS], FETCH {FIRST|NEXT} n {ROW|ROWS} ONLY, in either order. */
static bool parse_limit_offset(parser *p, ast_query *q) {
    for (;;) {
        if (!q->limit && accept_kw(p, KW_LIMIT)) {
            if (accept_kw(p, KW_ALL)) continue;
            q->limit = parse_expr(p);
            if (!q->limit) return false;
            if (accept(p, TK_COMMA)) {
                /* MySQL LIMIT offset, count */
                q->offset = q->limit;
                q->limit = parse_expr(p);
                if (!q->limit) return false;
            }
        } else if (!q->offset && accept_kw(p, KW_OFFSET)) {
            q->offset = parse_expr(p);
            if (!q->offset) return false;
            if (!accept_kw(p, KW_ROWS)) accept_kw(p, KW_ROW);
        } else if (!q->limit && accept_kw(p, KW_FETCH)) {
            if (!accept_kw(p, KW_FIRST) && !expect_kw(p, KW_NEXT)) return false;
            q->limit = parse_expr(p);
            if (!q->limit) return false;
            if (!accept_kw(p, KW_ROWS) && !expect_kw(p, KW_ROW)) return false;
            if (!expect_kw(p, KW_ONLY)) return false;
        } else {
            return true;
        }
    }
}

/* Counts a query nested in a FROM item, a CTE or a set operand as part of the enclosing query's height. */
static bool nest_query(parser *p, const ast_query *q) {
    if (q->height + 1 > p->qexpr) p->qexpr = q->height + 1;
    if (p->qexpr > DF_SQL_MAX_HEIGHT) {
        fail_at(p, DF_ERR_SQL_TOO_COMPLEX, q->pos, "query is nested more than %d levels deep", DF_SQL_MAX_HEIGHT);
        return false;
    }
    return true;
}

static ast_query *parse_query(parser *p) {
    if (!enter(p)) return NULL;
    ast_query *q = alloc(p, sizeof *q);
    if (!q) return NULL;
    q->pos = peek(p)->start;
    int32_t outer_expr = p->qexpr, outer_join = p->qjoin, outer_set = p->qset, outer_sub = p->qsub;
    p->qexpr = p->qjoin = p->qset = p->qsub = 0;
    if (accept_kw(p, KW_WITH) && !parse_ctes(p, q)) return NULL;
    q->body = parse_setexpr(p, 0);
    if (!q->body) return NULL;
    if (accept_kw(p, KW_ORDER)) {
        if (!expect_kw(p, KW_BY) || !parse_order_items(p, &q->norder, &q->order)) return NULL;
    }
    if (!parse_limit_offset(p, q)) return NULL;
    /* Plan nodes of the join and set-operation chains, and the joins its subqueries bind as, stack on
     * top of the expressions below them. */
    int64_t h = (int64_t)p->qexpr + p->qjoin + p->qset + p->qsub + 1;
    if (h > DF_SQL_MAX_HEIGHT)
        return fail_at(p, DF_ERR_SQL_TOO_COMPLEX, q->pos, "query is nested more than %d levels deep",
                       DF_SQL_MAX_HEIGHT);
    q->height = (int32_t)h;
    p->qexpr = outer_expr;
    p->qjoin = outer_join;
    p->qset = outer_set;
    p->qsub = outer_sub;
    leave(p);
    return q;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                                */

static bool starts_statement(const sql_token *t) {
    if (t->type == TK_LPAREN) return true;
    if (t->type != TK_WORD) return false;
    switch (t->kw) {
    case KW_SELECT: case KW_WITH: case KW_VALUES: case KW_INSERT: case KW_UPDATE: case KW_DELETE:
    case KW_CREATE: case KW_DROP: case KW_ALTER: case KW_TRUNCATE: case KW_MERGE: case KW_COPY:
    case KW_GRANT: case KW_REVOKE: case KW_SET: case KW_RESET: case KW_SHOW: case KW_EXPLAIN:
    case KW_DESCRIBE: case KW_USE: case KW_CALL: case KW_PREPARE: case KW_EXECUTE: case KW_BEGIN:
    case KW_COMMIT: case KW_ROLLBACK: case KW_START: case KW_ANALYZE: case KW_VACUUM: case KW_ATTACH:
    case KW_DETACH: case KW_DEALLOCATE: case KW_REFRESH: case KW_TABLE:
        return true;
    default:
        return false;
    }
}

static bool is_write_keyword(sql_kw kw) {
    switch (kw) {
    case KW_INSERT: case KW_UPDATE: case KW_DELETE: case KW_CREATE: case KW_DROP: case KW_ALTER:
    case KW_TRUNCATE: case KW_MERGE: case KW_COPY: case KW_GRANT: case KW_REVOKE: case KW_SET:
    case KW_RESET: case KW_CALL: case KW_PREPARE: case KW_EXECUTE: case KW_BEGIN: case KW_COMMIT:
    case KW_ROLLBACK: case KW_START: case KW_ANALYZE: case KW_VACUUM: case KW_ATTACH: case KW_DETACH:
    case KW_DEALLOCATE: case KW_REFRESH: case KW_USE:
        return true;
    default:
        return false;
    }
}

static ast_query *parse_statement(parser *p) {
    while (accept(p, TK_SEMI)) {
    }
    const sql_token *t = peek(p);
    if (t->type == TK_EOF) return fail_at(p, DF_ERR_SQL_SYNTAX, 0, "empty SQL statement");
    if (t->type == TK_WORD && is_write_keyword(t->kw))
        return fail_at(p, DF_ERR_SQL_NOT_READ_ONLY, t->start, "only read-only queries are allowed, found %s",
                       df__sql_kw_name(t->kw));
    if (t->type == TK_WORD && (t->kw == KW_EXPLAIN || t->kw == KW_SHOW || t->kw == KW_DESCRIBE))
        return fail_at(p, DF_ERR_SQL_UNSUPPORTED, t->start, "%s statements are not supported", df__sql_kw_name(t->kw));
    if (!(t->type == TK_LPAREN || is_kw(t, KW_SELECT) || is_kw(t, KW_WITH) || is_kw(t, KW_VALUES)))
        return expected(p, "SELECT, VALUES or WITH");
    ast_query *q = parse_query(p);
    if (!q) return NULL;
    bool semi = false;
    while (accept(p, TK_SEMI)) semi = true;
    if (!at(p, TK_EOF)) {
        if (semi && starts_statement(peek(p)))
            return fail_at(p, DF_ERR_SQL_NOT_READ_ONLY, peek(p)->start,
                           "only one statement is allowed");
        return expected(p, semi ? "end of input" : "end of statement");
    }
    return q;
}

df_errkind df__sql_parse(const char *sql, size_t len, df_arena *arena, ast_query **out, df_error *err) {
    *out = NULL;
    sql_tokens toks;
    DF_TRY(df__sql_lex(sql, len, &toks, err));
    parser p = {.text = sql, .text_len = (int32_t)len, .toks = toks.toks, .ntoks = toks.n, .arena = arena,
                .err = err};
    ast_query *q = parse_statement(&p);
    df__sql_tokens_free(&toks);
    if (!q) return p.status ? p.status : df_error_set(err, DF_ERR_INTERNAL, "parser failed without an error");
    *out = q;
    return DF_OK;
}

df_errkind df__sql_parse_type(const char *text, size_t len, df_arena *arena, ast_type **out, df_error *err) {
    *out = NULL;
    sql_tokens toks;
    DF_TRY(df__sql_lex(text, len, &toks, err));
    parser p = {.text = text, .text_len = (int32_t)len, .toks = toks.toks, .ntoks = toks.n, .arena = arena,
                .err = err};
    ast_type *t = parse_type(&p);
    if (t && !at(&p, TK_EOF)) t = expected(&p, "end of type");
    df__sql_tokens_free(&toks);
    if (!t) return p.status ? p.status : df_error_set(err, DF_ERR_INTERNAL, "parser failed without an error");
    *out = t;
    return DF_OK;
}
