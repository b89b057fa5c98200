/*
 * SQL lexer: turns SQL text into tokens with byte positions.
 *
 * The lexer is a hand-written scanner over the whole text (no copies): a
 * token is a type, a byte range and, for unquoted words, a keyword id.
 * Identifier folding (unquoted -> lower case) and string unescaping happen
 * when the parser asks for a token's text.  Errors (unterminated strings,
 * stray characters) carry the byte offset; df__sql_lexer_position() turns byte
 * offsets into line / column / character offset for messages.
 */
#ifndef DF_SQL_SQL_LEXER_H
#define DF_SQL_SQL_LEXER_H

#include "common/common.h"

/* Keywords: KW(name).  All are recognised case-insensitively. */
#define DF_SQL_KEYWORDS(KW) \
    KW(ALL) KW(ALTER) KW(AND) KW(ANALYZE) KW(ANY) KW(AS) KW(ASC) KW(ATTACH) KW(BETWEEN) KW(BOTH) \
    KW(BY) KW(CALL) KW(CASE) KW(CAST) KW(COPY) KW(CREATE) KW(CROSS) KW(CURRENT_DATE) \
    KW(CURRENT_TIME) KW(CURRENT_TIMESTAMP) KW(DATE) KW(DEALLOCATE) KW(DEFAULT) KW(DELETE) \
    KW(DESC) KW(DESCRIBE) KW(DETACH) KW(DISTINCT) KW(DROP) KW(ELSE) KW(END) KW(ESCAPE) KW(EXCEPT) \
    KW(EXECUTE) KW(EXISTS) KW(EXPLAIN) KW(EXTRACT) KW(FALSE) KW(FETCH) KW(FILTER) KW(FIRST) \
    KW(FOR) KW(FROM) KW(FULL) KW(GRANT) KW(GROUP) KW(HAVING) KW(ILIKE) KW(IN) KW(INNER) \
    KW(INSERT) KW(INTERSECT) KW(INTERVAL) KW(INTO) KW(IS) KW(JOIN) KW(LAST) KW(LATERAL) \
    KW(LEADING) KW(LEFT) KW(LIKE) KW(LIMIT) KW(MERGE) KW(NATURAL) KW(NEXT) KW(NOT) KW(NULL) \
    KW(NULLS) KW(OFFSET) KW(ON) KW(ONLY) KW(OR) KW(ORDER) KW(OUTER) KW(OVER) KW(PARTITION) \
    KW(POSITION) KW(PREPARE) KW(QUALIFY) KW(RECURSIVE) KW(REFRESH) KW(RESET) KW(REVOKE) \
    KW(RIGHT) KW(ROLLBACK) KW(ROW) KW(ROWS) KW(SELECT) KW(SEMI) KW(ANTI) KW(SET) KW(SHOW) \
    KW(SIMILAR) KW(SOME) KW(SUBSTRING) KW(TABLE) KW(THEN) KW(TIME) KW(TIMESTAMP) KW(TO) \
    KW(TRAILING) KW(TRIM) KW(TRUE) KW(TRUNCATE) KW(TRY_CAST) KW(UNION) KW(UNKNOWN) KW(UPDATE) \
    KW(USE) KW(USING) KW(VACUUM) KW(VALUES) KW(WHEN) KW(WHERE) KW(WINDOW) KW(WITH) KW(ZONE) \
    KW(BEGIN) KW(COMMIT) KW(START) KW(DISTRIBUTE) KW(SORT) KW(CLUSTER) KW(OVERLAY) KW(PLACING) \
    KW(VARYING) KW(DOUBLE) KW(PRECISION) KW(WITHOUT) KW(UNSIGNED)

typedef enum sql_kw {
    KW_NONE = 0,
#define DF_SQL_KW_ENUM(name) KW_##name,
    DF_SQL_KEYWORDS(DF_SQL_KW_ENUM)
#undef DF_SQL_KW_ENUM
    KW_COUNT_
} sql_kw;

typedef enum sql_tok {
    TK_EOF = 0,
    TK_WORD,        /* unquoted identifier or keyword (kw set when it is a keyword) */
    TK_QIDENT,      /* "quoted identifier" (or `backticked`) */
    TK_INTEGER,     /* 123 */
    TK_NUMBER,      /* 1.5, .5, 1e3 */
    TK_STRING,      /* 'text' */
    TK_ESTRING,     /* E'text with \n escapes' */
    TK_XSTRING,     /* X'hex' */
    TK_LPAREN, TK_RPAREN, TK_COMMA, TK_DOT, TK_SEMI, TK_LBRACKET, TK_RBRACKET,
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT, TK_CARET,
    TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE,
    TK_CONCAT,      /* || */
    TK_DCOLON,      /* :: */
    TK_COLON,
    TK_AMP, TK_PIPE, TK_HASH, TK_TILDE, TK_SHL, TK_SHR,
    TK_REGEX_MATCH, TK_REGEX_IMATCH, TK_REGEX_NMATCH, TK_REGEX_NIMATCH,  /* ~ ~* !~ !~* */
    TK_LIKE_OP, TK_ILIKE_OP, TK_NLIKE_OP, TK_NILIKE_OP,                  /* ~~ ~~* !~~ !~~* */
    TK_ARROW, TK_LONG_ARROW, TK_SPACESHIP, TK_QMARK, TK_DOLLAR_PARAM,
    TK_COUNT_
} sql_tok;

typedef struct sql_token {
    sql_tok type;       /* token class */
    sql_kw kw;          /* keyword id for TK_WORD, KW_NONE otherwise */
    int32_t start;      /* byte offset of the first byte */
    int32_t len;        /* bytes */
} sql_token;

/* A scanned statement text: every token up to and including TK_EOF. */
typedef struct sql_tokens {
    const char *text;   /* the SQL (borrowed) */
    int32_t text_len;   /* bytes */
    sql_token *toks;    /* owned array (df_malloc) */
    int32_t n;          /* tokens including the final TK_EOF */
} sql_tokens;

/* The longest SQL text accepted (bytes). */
#define DF_SQL_MAX_TEXT (64 * 1024 * 1024)

/*
 * Scans `text` (len bytes, NUL not required) into *out.  Returns DF_OK, or
 * DF_ERR_SQL_SYNTAX with err->offset = character offset of the bad input,
 * DF_ERR_LIMIT_EXCEEDED for oversize text, DF_ERR_OUT_OF_MEMORY.  On
 * failure *out holds nothing.
 */
df_errkind df__sql_lex(const char *text, size_t len, sql_tokens *out, df_error *err);
void df__sql_tokens_free(sql_tokens *t);

/* 1-based line and column (in characters) and 0-based character offset of byte `pos`. */
void df__sql_lexer_position(const char *text, int32_t text_len, int32_t pos, int32_t *line, int32_t *column,
                        int64_t *char_offset);

/*
 * Sets a DF_ERR_SQL_SYNTAX-style error "<what> at line L, column C: <msg>"
 * with err->offset = character offset of byte `pos`.  Returns kind.
 */
df_errkind df__sql_error_at(df_error *err, df_errkind kind, const char *text, int32_t text_len, int32_t pos,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The keyword's upper-case spelling. */
const char *df__sql_kw_name(sql_kw kw);
/* True for keywords that cannot be used as bare identifiers or aliases. */
bool df__sql_kw_reserved(sql_kw kw);

#endif
