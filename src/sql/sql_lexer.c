/*
 * SQL lexer.  One pass over the text producing tokens with byte offsets.
 *
 * Recognised: unquoted words ([A-Za-z_][A-Za-z0-9_$]*, and any non-ASCII
 * UTF-8 letter bytes), "quoted" and `backquoted` identifiers with doubled
 * quotes as escapes, 'strings' with '' escapes (adjacent literals separated
 * by a newline are not concatenated), E'...' strings with backslash escapes,
 * X'..' hex strings, integers, decimals and exponents, $1 parameters,
 * operators, -- line comments and nested block comments.
 *
 * Nothing is copied: tokens are byte ranges; the parser decodes the text it
 * needs (sql_parser.c).  Every loop is bounded by the text length.
 */
#include "sql/sql_lexer.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const kw_names[KW_COUNT_] = {
    [KW_NONE] = "",
#define DF_SQL_KW_NAME(name) [KW_##name] = #name,
    DF_SQL_KEYWORDS(DF_SQL_KW_NAME)
#undef DF_SQL_KW_NAME
};

const char *df__sql_kw_name(sql_kw kw) { return (unsigned)kw < KW_COUNT_ ? kw_names[kw] : ""; }

bool df__sql_kw_reserved(sql_kw kw) {
    switch (kw) {
    case KW_ALL: case KW_AND: case KW_AS: case KW_BETWEEN: case KW_BY: case KW_CASE: case KW_CROSS:
    case KW_DISTINCT: case KW_ELSE: case KW_END: case KW_EXCEPT: case KW_FALSE: case KW_FETCH:
    case KW_FROM: case KW_FULL: case KW_GROUP: case KW_HAVING: case KW_ILIKE: case KW_IN: case KW_INNER:
    case KW_INTERSECT: case KW_IS: case KW_JOIN: case KW_LEFT: case KW_LIKE: case KW_LIMIT:
    case KW_NATURAL: case KW_NOT: case KW_NULL: case KW_OFFSET: case KW_ON: case KW_OR: case KW_ORDER:
    case KW_OUTER: case KW_QUALIFY: case KW_RIGHT: case KW_SELECT: case KW_SIMILAR: case KW_THEN:
    case KW_TRUE: case KW_UNION: case KW_USING: case KW_WHEN: case KW_WHERE: case KW_WINDOW:
    case KW_WITH: case KW_LATERAL: case KW_SEMI: case KW_ANTI:
        return true;
    default:
        return false;
    }
}

/* Keyword id of an unquoted word, or KW_NONE.  Keywords are at most 17 bytes. */
static sql_kw keyword_of(const char *s, int32_t len) {
    if (len < 2 || len > 17) return KW_NONE;
    char up[18];
    for (int32_t i = 0; i < len; i++) {
        char c = s[i];
        up[i] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
    }
    for (int k = 1; k < KW_COUNT_; k++) {
        const char *name = kw_names[k];
        if ((int32_t)strlen(name) == len && memcmp(name, up, (size_t)len) == 0) return (sql_kw)k;
    }
    return KW_NONE;
}

void df__sql_lexer_position(const char *text, int32_t text_len, int32_t pos, int32_t *line, int32_t *column,
                        int64_t *char_offset) {
    int32_t ln = 1, col = 1;
    int64_t chars = 0;
    if (pos > text_len) pos = text_len;
    for (int32_t i = 0; i < pos; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c & 0xC0) == 0x80) continue; /* UTF-8 continuation byte */
        chars++;
        if (c == '\n') {
            ln++;
            col = 1;
        } else {
            col++;
        }
    }
    if (line) *line = ln;
    if (column) *column = col;
    if (char_offset) *char_offset = chars;
}

df_errkind df__sql_error_at(df_error *err, df_errkind kind, const char *text, int32_t text_len, int32_t pos,
                        const char *fmt, ...) {
    if (!err) return kind;
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int32_t line, col;
    int64_t off;
    df__sql_lexer_position(text, text_len, pos, &line, &col, &off);
    const char *what = kind == DF_ERR_SQL_SYNTAX ? "syntax error" : "error";
    df_error_set(err, kind, "%s at line %d, column %d: %s", what, line, col, msg);
    df_error_set_offset(err, off);
    df_error_set_origin(err, "sql");
    return kind;
}

static bool is_ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_ident_char(unsigned char c) {
    return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

typedef struct lexer {
    const char *s;      /* text */
    int32_t n;          /* bytes */
    int32_t i;          /* cursor */
    sql_tokens *out;    /* destination */
    int32_t cap;        /* allocated tokens */
} lexer;

static df_errkind push(lexer *lx, sql_tok type, sql_kw kw, int32_t start, int32_t end, df_error *err) {
    sql_tokens *t = lx->out;
    DF_TRY(DF_ARRAY_RESERVE(t->toks, lx->cap, t->n + 1, 64, err));
    t->toks[t->n++] = (sql_token){.type = type, .kw = kw, .start = start, .len = end - start};
    return DF_OK;
}

static df_errkind fail(lexer *lx, int32_t pos, const char *msg, df_error *err) {
    return df__sql_error_at(err, DF_ERR_SQL_SYNTAX, lx->s, lx->n, pos, "%s", msg);
}

/* Skips whitespace and comments; fails on an unterminated block comment. */
static df_errkind skip_space(lexer *lx, df_error *err) {
    const char *s = lx->s;
    for (;;) {
        while (lx->i < lx->n && (s[lx->i] == ' ' || s[lx->i] == '\t' || s[lx->i] == '\n' ||
                                 s[lx->i] == '\r' || s[lx->i] == '\f' || s[lx->i] == '\v'))
            lx->i++;
        if (lx->i + 1 < lx->n && s[lx->i] == '-' && s[lx->i + 1] == '-') {
            while (lx->i < lx->n && s[lx->i] != '\n') lx->i++;
            continue;
        }
        if (lx->i + 1 < lx->n && s[lx->i] == '/' && s[lx->i + 1] == '*') {
            int32_t start = lx->i, depth = 0;
            while (lx->i < lx->n) {
                if (lx->i + 1 < lx->n && s[lx->i] == '/' && s[lx->i + 1] == '*') {
                    depth++;
                    lx->i += 2;
                } else if (lx->i + 1 < lx->n && s[lx->i] == '*' && s[lx->i + 1] == '/') {
                    lx->i += 2;
                    if (--depth == 0) break;
                } else {
                    lx->i++;
                }
            }
            if (depth != 0) return fail(lx, start, "unterminated comment", err);
            continue;
        }
        return DF_OK;
    }
}

/* Scans a quoted run starting at the opening quote q; doubled quotes escape. */
static df_errkind scan_quoted(lexer *lx, char q, bool backslash, int32_t *end, df_error *err) {
    int32_t start = lx->i;
    int32_t i = lx->i + 1;
    while (i < lx->n) {
        char c = lx->s[i];
        if (backslash && c == '\\' && i + 1 < lx->n) {
            i += 2;
            continue;
        }
        if (c == q) {
            if (i + 1 < lx->n && lx->s[i + 1] == q) {
                i += 2;
                continue;
            }
            *end = i + 1;
            return DF_OK;
        }
        i++;
    }
    return fail(lx, start, q == '\'' ? "unterminated string literal" : "unterminated quoted identifier", err);
}

static df_errkind scan_number(lexer *lx, df_error *err) {
    const char *s = lx->s;
    int32_t start = lx->i, i = lx->i;
    bool is_int = true;
    while (i < lx->n && (is_digit((unsigned char)s[i]) || s[i] == '_')) i++;
    if (i < lx->n && s[i] == '.' && !(i + 1 < lx->n && s[i + 1] == '.')) {
        is_int = false;
        i++;
        while (i < lx->n && is_digit((unsigned char)s[i])) i++;
    }
    if (i < lx->n && (s[i] == 'e' || s[i] == 'E')) {
        int32_t j = i + 1;
        if (j < lx->n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < lx->n && is_digit((unsigned char)s[j])) {
            is_int = false;
            i = j;
            while (i < lx->n && is_digit((unsigned char)s[i])) i++;
        }
    }
    if (i < lx->n && is_ident_start((unsigned char)s[i]) && is_int) {
        /* "1abc" is not a number followed by a word; treat as a syntax error. */
        return fail(lx, start, "invalid number literal", err);
    }
    lx->i = i;
    return push(lx, is_int ? TK_INTEGER : TK_NUMBER, KW_NONE, start, i, err);
}

/* Operators and punctuation: longest match first. */
static df_errkind scan_operator(lexer *lx, df_error *err) {
    static const struct {
        const char *text;
        sql_tok tok;
    } ops[] = {
        {"!~~*", TK_NILIKE_OP}, {"~~*", TK_ILIKE_OP}, {"!~~", TK_NLIKE_OP}, {"!~*", TK_REGEX_NIMATCH},
        {"<=>", TK_SPACESHIP}, {"->>", TK_LONG_ARROW}, {"~~", TK_LIKE_OP}, {"~*", TK_REGEX_IMATCH},
        {"!~", TK_REGEX_NMATCH}, {"<=", TK_LE}, {">=", TK_GE}, {"<>", TK_NE}, {"!=", TK_NE},
        {"==", TK_EQ}, {"||", TK_CONCAT}, {"::", TK_DCOLON}, {"<<", TK_SHL}, {">>", TK_SHR},
        {"->", TK_ARROW}, {"(", TK_LPAREN}, {")", TK_RPAREN}, {",", TK_COMMA}, {".", TK_DOT},
        {";", TK_SEMI}, {"[", TK_LBRACKET}, {"]", TK_RBRACKET}, {"+", TK_PLUS}, {"-", TK_MINUS},
        {"*", TK_STAR}, {"/", TK_SLASH}, {"%", TK_PERCENT}, {"^", TK_CARET}, {"=", TK_EQ},
        {"<", TK_LT}, {">", TK_GT}, {":", TK_COLON}, {"&", TK_AMP}, {"|", TK_PIPE}, {"#", TK_HASH},
        {"~", TK_REGEX_MATCH}, {"?", TK_QMARK},
    };
    int32_t rest = lx->n - lx->i;
    for (size_t k = 0; k < DF_ARRAY_LEN(ops); k++) {
        int32_t len = (int32_t)strlen(ops[k].text);
        if (len <= rest && memcmp(lx->s + lx->i, ops[k].text, (size_t)len) == 0) {
            int32_t start = lx->i;
            lx->i += len;
            return push(lx, ops[k].tok, KW_NONE, start, lx->i, err);
        }
    }
    char msg[64];
    unsigned char c = (unsigned char)lx->s[lx->i];
    if (c >= 0x20 && c < 0x7f)
        snprintf(msg, sizeof msg, "unexpected character `%c`", c);
    else
        snprintf(msg, sizeof msg, "unexpected byte 0x%02x", c);
    return fail(lx, lx->i, msg, err);
}

/* One token at lx->i (after whitespace). */
static df_errkind scan_one(lexer *lx, df_error *err) {
    const char *s = lx->s;
    unsigned char c = (unsigned char)s[lx->i];
    int32_t start = lx->i, end;
    if ((c == 'e' || c == 'E') && lx->i + 1 < lx->n && s[lx->i + 1] == '\'') {
        lx->i++;
        DF_TRY(scan_quoted(lx, '\'', true, &end, err));
        lx->i = end;
        return push(lx, TK_ESTRING, KW_NONE, start, end, err);
    }
    if ((c == 'x' || c == 'X') && lx->i + 1 < lx->n && s[lx->i + 1] == '\'') {
        lx->i++;
        DF_TRY(scan_quoted(lx, '\'', false, &end, err));
        lx->i = end;
        return push(lx, TK_XSTRING, KW_NONE, start, end, err);
    }
    if (is_ident_start(c)) {
        int32_t i = lx->i + 1;
        while (i < lx->n && is_ident_char((unsigned char)s[i])) i++;
        lx->i = i;
        return push(lx, TK_WORD, keyword_of(s + start, i - start), start, i, err);
    }
    if (is_digit(c) || (c == '.' && lx->i + 1 < lx->n && is_digit((unsigned char)s[lx->i + 1])))
        return scan_number(lx, err);
    if (c == '\'') {
        DF_TRY(scan_quoted(lx, '\'', false, &end, err));
        lx->i = end;
        return push(lx, TK_STRING, KW_NONE, start, end, err);
    }
    if (c == '"' || c == '`') {
        DF_TRY(scan_quoted(lx, (char)c, false, &end, err));
        if (end - start == 2) return fail(lx, start, "zero-length quoted identifier", err);
        lx->i = end;
        return push(lx, TK_QIDENT, KW_NONE, start, end, err);
    }
    if (c == '$' && lx->i + 1 < lx->n && is_digit((unsigned char)s[lx->i + 1])) {
        int32_t i = lx->i + 1;
        while (i < lx->n && is_digit((unsigned char)s[i])) i++;
        lx->i = i;
        return push(lx, TK_DOLLAR_PARAM, KW_NONE, start, i, err);
    }
    return scan_operator(lx, err);
}

/*
 * Byte offset of the first invalid UTF-8 sequence (overlong, surrogate,
 * beyond U+10FFFF, truncated, stray continuation byte), or -1.  String
 * literals become Utf8 values, which must be valid.
 */
static int32_t first_invalid_utf8(const uint8_t *s, int32_t n) {
    size_t valid = df_utf8_valid_prefix(s, (size_t)n);
    return valid == (size_t)n ? -1 : (int32_t)valid;
}

df_errkind df__sql_lex(const char *text, size_t len, sql_tokens *out, df_error *err) {
    memset(out, 0, sizeof *out);
    if (len > DF_SQL_MAX_TEXT)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "SQL text is longer than %d bytes", DF_SQL_MAX_TEXT);
    out->text = text;
    out->text_len = (int32_t)len;
    lexer lx = {.s = text, .n = (int32_t)len, .i = 0, .out = out, .cap = 0};
    int32_t bad = first_invalid_utf8((const uint8_t *)text, (int32_t)len);
    if (bad >= 0) return fail(&lx, bad, "the SQL text is not valid UTF-8", err);
    /* Anywhere, inside string literals and comments too: token texts become NUL-terminated strings
     * (literals, names, aliases), so a NUL would cut them short. */
    const char *nul = len ? memchr(text, 0, len) : NULL;
    if (nul) return fail(&lx, (int32_t)(nul - text), "unexpected NUL byte", err);
    df_errkind k = DF_OK;
    for (;;) {
        k = skip_space(&lx, err);
        if (k) break;
        if (lx.i >= lx.n) {
            k = push(&lx, TK_EOF, KW_NONE, lx.n, lx.n, err);
            break;
        }
        k = scan_one(&lx, err);
        if (k) break;
    }
    if (k) {
        df__sql_tokens_free(out);
        return k;
    }
    return DF_OK;
}

void df__sql_tokens_free(sql_tokens *t) {
    if (!t) return;
    df_free(t->toks);
    t->toks = NULL;
    t->n = 0;
}
