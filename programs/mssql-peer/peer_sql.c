/*
 * The peer's T-SQL mini-interpreter.
 *
 * A batch is tokenized (identifiers, [quoted] and "quoted" names, N'...'
 * strings, numbers, @variables, operators; comments dropped), split into
 * statements at `;` and at statement keywords (SQL Server allows
 * `SET FMTONLY ON select * from t SET FMTONLY OFF` without separators), and
 * each statement is dispatched on its first keywords:
 *   SET, USE, CREATE TABLE/SCHEMA, DROP TABLE, TRUNCATE TABLE, ALTER TABLE ALTER COLUMN, BEGIN TRAN,
 *   COMMIT, ROLLBACK, EXEC (sp_rename, sp_tableoption, sp_getapplock,
 *   sp_releaseapplock, sp_tablecollations_100), INSERT BULK, IF <cond>
 *   <statement>, and SELECT/INSERT/UPDATE/DELETE, which are translated to
 *   SQLite (names → "schema.table", TOP n → LIMIT n, COUNT_BIG → COUNT,
 *   @@variables → literals, CAST types → SQLite affinities) and run there.
 * Result columns take their SQL Server types from the SQLite declared
 * types, from CAST(... AS type) in the select list, or from the values.
 * Anything else gets a SQL Server-style error; the first error ends the
 * batch.
 */
#include "peer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mssql/mssql_int.h"

typedef enum { TK_WORD, TK_QIDENT, TK_STRING, TK_NUMBER, TK_VAR, TK_OP, TK_HEX } tkind;

typedef struct tok {
    tkind kind;
    char *text;             /* identifier (unquoted), string value, number, variable or operator */
    int depth;              /* parenthesis depth before the token */
} tok;

typedef struct stmt_ctx {
    peer_conn *c;
    tok *t;                 /* tokens of the batch */
    int b, e;               /* the statement's range [b, e) */
    bool more;              /* statements follow: DONE carries MORE */
} stmt_ctx;

#define MAX_TOKENS 200000

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

static df_errkind push(tok **v, int *n, int *cap, tkind k, const char *s, size_t len, int depth, df_error *err) {
    if (*n >= MAX_TOKENS) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "batch has too many tokens");
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 256;
        tok *nv = df_realloc(*v, sizeof *nv * (size_t)nc);
        if (!nv) return DF_OOM(err);
        *v = nv;
        *cap = nc;
    }
    char *t = df_strndup(s, len);
    if (!t) return DF_OOM(err);
    (*v)[*n] = (tok){.kind = k, .text = t, .depth = depth};
    (*n)++;
    return DF_OK;
}

static bool is_ident_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '#' ||
           ch == '$' || (unsigned char)ch >= 0x80;
}

/* Reads a delimited token body with doubled-delimiter escapes into buf. */
static const char *read_delim(const char *p, char close, df_buf *buf, df_error *err, df_errkind *k) {
    df_buf_reset(buf);
    for (;;) {
        if (!*p) { *k = df_error_set(err, DF_ERR_SQL_SYNTAX, "unterminated quoted text"); return p; }
        if (*p == close) {
            if (p[1] == close) { df_buf_append_char(buf, close, NULL); p += 2; continue; }
            return p + 1;
        }
        df_buf_append_char(buf, *p++, NULL);
    }
}

static df_errkind tokenize(const char *sql, tok **out, int *nout, df_error *err) {
    tok *v = NULL;
    int n = 0, cap = 0, depth = 0;
    df_buf buf;
    df_buf_init(&buf, 64u << 20);
    df_errkind k = DF_OK;
    const char *p = sql;
    while (k == DF_OK && *p) {
        char ch = *p;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') { p++; continue; }
        if (ch == '-' && p[1] == '-') { while (*p && *p != '\n') p++; continue; }
        if (ch == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) p++;
            if (*p) p += 2;
            continue;
        }
        if ((ch == 'N' || ch == 'n') && p[1] == '\'') p++, ch = '\'';
        if (ch == '\'' || ch == '[' || ch == '"') {
            p = read_delim(p + 1, ch == '[' ? ']' : ch, &buf, err, &k);
            if (k == DF_OK) k = push(&v, &n, &cap, ch == '\'' ? TK_STRING : TK_QIDENT, buf.data ? buf.data : "", buf.len, depth, err);
            continue;
        }
        if (ch == '@') {
            const char *s = p++;
            if (*p == '@') p++;
            while (is_ident_char(*p)) p++;
            k = push(&v, &n, &cap, TK_VAR, s, (size_t)(p - s), depth, err);
            continue;
        }
        if (ch == '0' && (p[1] == 'x' || p[1] == 'X')) {
            const char *s = p + 2;
            p += 2;
            while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')) p++;
            k = push(&v, &n, &cap, TK_HEX, s, (size_t)(p - s), depth, err);
            continue;
        }
        if ((ch >= '0' && ch <= '9') || (ch == '.' && p[1] >= '0' && p[1] <= '9')) {
            const char *s = p;
            while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' ||
                   ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
                p++;
            k = push(&v, &n, &cap, TK_NUMBER, s, (size_t)(p - s), depth, err);
            continue;
        }
        if (is_ident_char(ch)) {
            const char *s = p;
            while (is_ident_char(*p)) p++;
            k = push(&v, &n, &cap, TK_WORD, s, (size_t)(p - s), depth, err);
            continue;
        }
        size_t len = 1;
        if ((ch == '<' && (p[1] == '>' || p[1] == '=')) || (ch == '>' && p[1] == '=') || (ch == '!' && p[1] == '=') ||
            (ch == '|' && p[1] == '|'))
            len = 2;
        if (ch == ')') depth--;
        k = push(&v, &n, &cap, TK_OP, p, len, depth < 0 ? 0 : depth, err);
        if (ch == '(') depth++;
        p += len;
    }
    df_buf_free(&buf);
    if (k != DF_OK) {
        for (int i = 0; i < n; i++) df_free(v[i].text);
        df_free(v);
        return k;
    }
    *out = v;
    *nout = n;
    return DF_OK;
}

static bool is_word(const tok *t, const char *w) { return t->kind == TK_WORD && !df_ascii_casecmp(t->text, w); }
static bool is_op(const tok *t, const char *o) { return t->kind == TK_OP && !strcmp(t->text, o); }
static bool is_ident(const tok *t) { return t->kind == TK_WORD || t->kind == TK_QIDENT; }

static const char *starters[] = {"SELECT", "INSERT", "UPDATE", "DELETE", "SET", "CREATE", "DROP", "TRUNCATE", "EXEC",
                                 "EXECUTE", "BEGIN", "COMMIT", "ROLLBACK", "IF", "USE", "ALTER", "DECLARE", "SAVE",
                                 "PRINT", "RAISERROR", "THROW", "WAITFOR", "GO", "MERGE", "WITH"};

static bool is_starter(const tok *t) {
    if (t->kind != TK_WORD) return false;
    for (size_t i = 0; i < DF_ARRAY_LEN(starters); i++)
        if (!df_ascii_casecmp(t->text, starters[i])) return true;
    return false;
}

/* Whether a new statement begins at token i of the current statement [b, i). */
static bool splits_here(const tok *t, int b, int i) {
    if (i == b || t[i].depth != 0 || !is_starter(&t[i])) return false;
    const tok *first = &t[b], *prev = &t[i - 1];
    if (is_word(&t[i], "SELECT")) {
        if (is_word(first, "INSERT") && !is_word(&t[b + 1], "BULK")) {
            bool values = false;
            for (int k = b; k < i; k++) values |= t[k].depth == 0 && is_word(&t[k], "VALUES");
            if (!values) return false;
        }
        if (is_word(prev, "UNION") || is_word(prev, "ALL") || is_word(prev, "EXCEPT") || is_word(prev, "INTERSECT")) return false;
        if (is_word(first, "WITH")) return false;
    }
    if (is_word(&t[i], "SET") && is_word(first, "UPDATE")) return false;
    if (is_word(&t[i], "WITH")) return false; /* table hints, INSERT BULK options */
    if (is_word(&t[i], "IF") && (is_word(prev, "TABLE") || is_word(prev, "SCHEMA"))) return false; /* DROP TABLE IF EXISTS */
    if (is_word(&t[i], "BEGIN") && is_word(prev, "ELSE")) return false;
    if (is_word(&t[i], "ALTER") && is_word(first, "ALTER") && is_word(&t[b + 1], "TABLE"))
        return false; /* ALTER TABLE t ALTER COLUMN c ... */
    return true;
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

static df_errkind txn_end(peer_conn *c, bool commit);

static df_errkind done(stmt_ctx *s, uint16_t status, uint16_t curcmd, uint64_t rows) {
    return peer_done(s->c, TDS_TOK_DONE, (uint16_t)(status | (s->more ? TDS_DONE_MORE : 0)), curcmd, rows);
}

/* Records a SQL error and the final DONE(ERROR); returns DF_ERR_MSSQL_SERVER_ERROR to stop the batch. */
static df_errkind fail(stmt_ctx *s, int32_t number, uint8_t cls, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static df_errkind fail(stmt_ctx *s, int32_t number, uint8_t cls, const char *fmt, ...) {
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    peer_conn *c = s->c;
    peer_error(c, TDS_TOK_ERROR, number, 1, cls, "%s", text);
    if (c->xact_abort && c->trancount > 0) {
        txn_end(c, false);
        peer_envchange_bytes(c, 10, NULL, 0, c->txn, 8);
        memset(c->txn, 0, 8);
        peer_applocks_release(c->cfg, c->spid, true);
    }
    peer_done(c, TDS_TOK_DONE, TDS_DONE_ERROR, 0, 0);
    return DF_ERR_MSSQL_SERVER_ERROR;
}

static df_errkind syntax_near(stmt_ctx *s, int i) {
    const char *near = i < s->e ? s->t[i].text : "end of batch";
    return fail(s, 102, 15, "Incorrect syntax near '%s'.", near);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

typedef struct qname {
    char schema[130];       /* schema ("dbo" when absent) */
    char table[130];        /* object name */
    char sqlite[262];       /* "schema.table" */
} qname;

/* Reads [db.][schema.]name at *i. */
static bool read_name(stmt_ctx *s, int *i, qname *q) {
    const char *parts[3];
    int np = 0, k = *i;
    while (k < s->e && is_ident(&s->t[k]) && np < 3) {
        parts[np++] = s->t[k].text;
        k++;
        if (k + 1 < s->e && is_op(&s->t[k], ".") && is_ident(&s->t[k + 1])) { k++; continue; }
        if (k < s->e && is_op(&s->t[k], ".") && k + 1 < s->e && is_op(&s->t[k + 1], ".")) { k++; continue; } /* db..t */
        break;
    }
    if (np == 0) return false;
    df__tds_strlcpy(q->schema, sizeof q->schema, np >= 2 ? parts[np - 2] : "dbo");
    df__tds_strlcpy(q->table, sizeof q->table, parts[np - 1]);
    snprintf(q->sqlite, sizeof q->sqlite, "%s.%s", q->schema, q->table);
    *i = k;
    return true;
}

/* Parses a multi-part name held in a string literal ("[dbo].[t]"). */
static bool name_from_string(const char *str, qname *q) {
    tok *v;
    int n;
    if (tokenize(str, &v, &n, NULL) != DF_OK) return false;
    stmt_ctx s = {.t = v, .b = 0, .e = n};
    int i = 0;
    bool ok = read_name(&s, &i, q) && i == n;
    for (int j = 0; j < n; j++) df_free(v[j].text);
    df_free(v);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Type text from tokens: name [ ( a [, b] ) ]                               */

static bool read_type(stmt_ctx *s, int *i, df_mssql_column *col, char *text, size_t cap) {
    int k = *i;
    if (k >= s->e || !is_ident(&s->t[k])) return false;
    size_t o = (size_t)snprintf(text, cap, "%s", s->t[k].text);
    k++;
    if (k < s->e && is_op(&s->t[k], "(")) {
        o += (size_t)snprintf(text + o, o < cap ? cap - o : 0, "(");
        k++;
        while (k < s->e && !is_op(&s->t[k], ")")) {
            o += (size_t)snprintf(text + o, o < cap ? cap - o : 0, "%s", s->t[k].text);
            k++;
        }
        if (k >= s->e) return false;
        o += (size_t)snprintf(text + o, o < cap ? cap - o : 0, ")");
        k++;
    }
    memset(col, 0, sizeof *col);
    if (df_mssql_type_parse(text, col, NULL) != DF_OK) return false;
    *i = k;
    return true;
}

/*
 * Inside a parenthesised list whose items sit at `depth`: whether token k
 * ends the current item (a comma at depth, or the list's closing
 * parenthesis, which carries depth - 1).
 */
static bool item_end(const stmt_ctx *s, int k, int depth) {
    return (is_op(&s->t[k], ",") && s->t[k].depth == depth) || (is_op(&s->t[k], ")") && s->t[k].depth == depth - 1);
}

/* Skips tokens to the end of the current list item. */
static int skip_to_comma(stmt_ctx *s, int k, int depth) {
    while (k < s->e && !item_end(s, k, depth)) k++;
    return k;
}

/* ------------------------------------------------------------------------ */
/* DDL                                                                       */

static df_errkind create_table(stmt_ctx *s) {
    peer_conn *c = s->c;
    int i = s->b + 2;
    qname q;
    if (!read_name(s, &i, &q)) return syntax_near(s, i);
    if (i >= s->e || !is_op(&s->t[i], "(")) return syntax_near(s, i);
    int depth = s->t[i].depth + 1;
    i++;
    if (!peer_store_schema_exists(c->db, q.schema))
        return fail(s, 2760, 16, "The specified schema name \"%s\" either does not exist or you do not have permission to use it.", q.schema);
    if (peer_store_table_exists(c->db, q.sqlite))
        return fail(s, 2714, 16, "There is already an object named '%s' in the database.", q.table);
    peer_column *cols = NULL;
    int n = 0;
    df_errkind k = DF_OK;
    while (k == DF_OK && i < s->e && !is_op(&s->t[i], ")")) {
        const tok *t = &s->t[i];
        if (is_word(t, "CONSTRAINT") || is_word(t, "PRIMARY") || is_word(t, "UNIQUE") || is_word(t, "FOREIGN") ||
            is_word(t, "CHECK") || is_word(t, "INDEX")) {
            i = skip_to_comma(s, i, depth);
        } else {
            peer_column col = {.nullable = true};
            if (!is_ident(t)) { k = syntax_near(s, i); break; }
            df__tds_strlcpy(col.name, sizeof col.name, t->text);
            i++;
            char tt[128];
            int ts = i;
            if (!read_type(s, &i, &col.type, tt, sizeof tt)) {
                k = fail(s, 2715, 16, "Column, parameter, or variable #%d: Cannot find data type %s.", n + 1,
                         ts < s->e ? s->t[ts].text : "?");
                break;
            }
            while (i < s->e && !item_end(s, i, depth)) {
                if (is_word(&s->t[i], "NOT") && i + 1 < s->e && is_word(&s->t[i + 1], "NULL")) { col.nullable = false; i += 2; continue; }
                if (is_word(&s->t[i], "NULL")) col.nullable = true;
                if (is_word(&s->t[i], "IDENTITY")) { col.identity = true; col.nullable = false; }
                if (is_word(&s->t[i], "DEFAULT")) col.has_default = true;
                if (is_word(&s->t[i], "PRIMARY")) col.nullable = false;
                i++;
            }
            col.type.nullable = col.nullable;
            peer_column *nc = df_realloc(cols, sizeof *cols * (size_t)(n + 1));
            if (!nc) { k = DF_OOM(NULL); break; }
            cols = nc;
            cols[n++] = col;
        }
        if (i < s->e && is_op(&s->t[i], ",")) i++;
    }
    if (k == DF_OK && n == 0) k = fail(s, 102, 15, "Incorrect syntax near ')'.");
    if (k == DF_OK) {
        df_error e = {0};
        if (peer_store_create_table(c->db, q.schema, q.table, cols, n, &e) != DF_OK) {
            /* Another session created it between our check and SQLite's CREATE: SQL Server's 2714. */
            if (strstr(e.message, "already exists"))
                k = fail(s, 2714, 16, "There is already an object named '%s' in the database.", q.table);
            else
                k = fail(s, 50000, 16, "%s", e.message);
        }
        df_error_clear(&e);
    }
    df_free(cols);
    if (k == DF_OK) k = done(s, 0, 0xC6, 0);
    return k;
}

static df_errkind drop_table(stmt_ctx *s) {
    int i = s->b + 2;
    bool if_exists = false;
    if (i + 1 < s->e && is_word(&s->t[i], "IF") && is_word(&s->t[i + 1], "EXISTS")) { if_exists = true; i += 2; }
    for (;;) {
        qname q;
        if (!read_name(s, &i, &q)) return syntax_near(s, i);
        if (!peer_store_table_exists(s->c->db, q.sqlite)) {
            if (!if_exists)
                return fail(s, 3701, 11, "Cannot drop the table '%s', because it does not exist or you do not have permission.", q.table);
        } else {
            df_error e = {0};
            df_errkind k = peer_store_drop_table(s->c->db, q.sqlite, &e);
            if (k != DF_OK) {
                fail(s, 50000, 16, "%s", e.message);
                df_error_clear(&e);
                return DF_ERR_MSSQL_SERVER_ERROR;
            }
        }
        if (i < s->e && is_op(&s->t[i], ",")) { i++; continue; }
        break;
    }
    if (i != s->e) return syntax_near(s, i);
    return done(s, 0, 0xC7, 0);
}

static df_errkind truncate_table(stmt_ctx *s) {
    int i = s->b + 2;
    qname q;
    if (!read_name(s, &i, &q) || i != s->e) return syntax_near(s, i);
    if (!peer_store_table_exists(s->c->db, q.sqlite))
        return fail(s, 4701, 16, "Cannot find the object \"%s\" because it does not exist or you do not have permissions.", q.table);
    char sql[600];
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\"", q.sqlite);
    if (peer_store_exec(s->c->db, sql, NULL) != DF_OK) return fail(s, 50000, 16, "%s", sqlite3_errmsg(s->c->db));
    return done(s, 0, 0xC4, 0);
}

/*
 * ALTER TABLE t ALTER COLUMN c type [NULL | NOT NULL]: SQL Server checks
 * the stored values against the new type (2628 truncation, 515 NULL) and
 * changes the column in place.  SQLite cannot change a declared type, so
 * the table is rebuilt under a temporary name, filled, and renamed back,
 * all inside the statement's SQLite savepoint.
 */
static df_errkind alter_table(stmt_ctx *s) {
    peer_conn *c = s->c;
    int i = s->b + 2;
    qname q;
    if (!read_name(s, &i, &q)) return syntax_near(s, i);
    if (i + 2 >= s->e || !is_word(&s->t[i], "ALTER") || !is_word(&s->t[i + 1], "COLUMN")) return syntax_near(s, i);
    i += 2;
    if (!peer_store_table_exists(c->db, q.sqlite)) return fail(s, 4902, 16, "Cannot find the object \"%s\" because it does not exist or you do not have permissions.", q.table);
    const char *colname = s->t[i++].text;
    peer_column newcol = {.nullable = true};
    char tt[128];
    if (!read_type(s, &i, &newcol.type, tt, sizeof tt)) return syntax_near(s, i);
    if (i + 1 < s->e && is_word(&s->t[i], "NOT") && is_word(&s->t[i + 1], "NULL")) { newcol.nullable = false; i += 2; }
    else if (i < s->e && is_word(&s->t[i], "NULL")) i++;
    if (i != s->e) return syntax_near(s, i);
    peer_column *cols = NULL;
    int n = 0;
    df_error e = {0};
    if (peer_store_columns(c->db, q.sqlite, &cols, &n, &e) != DF_OK) {
        df_error_clear(&e);
        return fail(s, 50000, 16, "catalog error");
    }
    int at = -1;
    for (int j = 0; j < n; j++)
        if (!df_ascii_casecmp(cols[j].name, colname)) at = j;
    if (at < 0) {
        df_free(cols);
        return fail(s, 4924, 16, "ALTER TABLE ALTER COLUMN failed because column '%s' does not exist in table '%s'.", colname, q.table);
    }
    df__tds_strlcpy(newcol.name, sizeof newcol.name, cols[at].name);
    newcol.type.nullable = newcol.nullable;
    df_buf sql;
    df_buf_init(&sql, 0);
    df_errkind k = DF_OK;
    /* Values that no longer fit. */
    int32_t len = newcol.type.length;
    bool sized = newcol.type.type == DF_MSSQL_NVARCHAR || newcol.type.type == DF_MSSQL_VARCHAR ||
                 newcol.type.type == DF_MSSQL_VARBINARY || newcol.type.type == DF_MSSQL_NCHAR ||
                 newcol.type.type == DF_MSSQL_CHAR || newcol.type.type == DF_MSSQL_BINARY;
    df_buf_printf(&sql, NULL, "SELECT COUNT(*) FROM \"%s\" WHERE (\"%s\" IS NULL AND %d) OR (%d AND length(\"%s\") > %d)",
                  q.sqlite, cols[at].name, newcol.nullable ? 0 : 1, sized && len > 0 ? 1 : 0, cols[at].name, len);
    sqlite3_stmt *st = NULL;
    int bad = 0;
    if (sqlite3_prepare_v2(c->db, sql.data, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        bad = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (bad) {
        k = newcol.nullable || !sized ? fail(s, 515, 16, "Cannot insert the value NULL into column '%s', table '%s'; column does not allow nulls. UPDATE fails.", cols[at].name, q.table)
                                      : fail(s, 2628, 16, "String or binary data would be truncated in table '%s', column '%s'.", q.table, cols[at].name);
    }
    char tmp[160];
    snprintf(tmp, sizeof tmp, "__alter_%d_%s", c->spid, q.table);
    char tmp_sqlite[300];
    snprintf(tmp_sqlite, sizeof tmp_sqlite, "%s.%s", q.schema, tmp);
    if (k == DF_OK) {
        cols[at] = newcol;
        if (peer_store_create_table(c->db, q.schema, tmp, cols, n, &e) != DF_OK) k = fail(s, 50000, 16, "%s", e.message);
    }
    if (k == DF_OK) {
        df_buf_reset(&sql);
        df_buf_printf(&sql, NULL, "INSERT INTO \"%s\" SELECT * FROM \"%s\"", tmp_sqlite, q.sqlite);
        if (peer_store_exec(c->db, sql.data, &e) != DF_OK || peer_store_drop_table(c->db, q.sqlite, &e) != DF_OK ||
            peer_store_rename_table(c->db, tmp_sqlite, q.table, &e) != DF_OK)
            k = fail(s, 50000, 16, "%s", e.message);
    }
    df_error_clear(&e);
    df_buf_free(&sql);
    df_free(cols);
    if (k == DF_OK) k = done(s, 0, 0xAF, 0);
    return k;
}

/* ------------------------------------------------------------------------ */
/* SET / USE / transactions                                                  */

static df_errkind set_stmt(stmt_ctx *s) {
    peer_conn *c = s->c;
    int i = s->b + 1;
    if (i >= s->e) return syntax_near(s, i);
    const char *opt = s->t[i].text;
    bool on = s->e - 1 > i && is_word(&s->t[s->e - 1], "ON");
    if (!df_ascii_casecmp(opt, "FMTONLY")) c->fmtonly = on;
    else if (!df_ascii_casecmp(opt, "XACT_ABORT")) c->xact_abort = on;
    else if (!df_ascii_casecmp(opt, "NOCOUNT")) c->nocount = on;
    else if (s->t[i].kind == TK_VAR) return fail(s, 137, 15, "Must declare the scalar variable \"%s\".", opt);
    return done(s, 0, 0xB9, 0);
}

static bool database_known(peer_config *cfg, const char *name) {
    if (!df_ascii_casecmp(name, "master") || !df_ascii_casecmp(name, "tempdb")) return true;
    for (int i = 0; i < cfg->ndatabases; i++)
        if (!df_ascii_casecmp(cfg->databases[i], name)) return true;
    return false;
}

static df_errkind use_stmt(stmt_ctx *s) {
    peer_conn *c = s->c;
    if (s->e - s->b != 2 || !is_ident(&s->t[s->b + 1])) return syntax_near(s, s->b + 1);
    const char *db = s->t[s->b + 1].text;
    if (!database_known(c->cfg, db))
        return fail(s, 911, 16, "Database '%s' does not exist. Make sure that the name is entered correctly.", db);
    peer_envchange_str(c, 1, db, c->database);
    peer_error(c, TDS_TOK_INFO, 5701, 2, 0, "Changed database context to '%s'.", db);
    df__tds_strlcpy(c->database, sizeof c->database, db);
    return done(s, 0, 0, 0);
}

df_errkind peer_txn_before_write(peer_conn *c, df_error *err) {
    if (c->trancount == 0 || c->sqlite_txn) return DF_OK;
    DF_TRY(peer_store_exec(c->db, "BEGIN IMMEDIATE", err));
    c->sqlite_txn = true;
    return DF_OK;
}

/* Ends the SQLite side of a TDS transaction. */
static df_errkind txn_end(peer_conn *c, bool commit) {
    df_errkind k = DF_OK;
    if (c->sqlite_txn) k = peer_store_exec(c->db, commit ? "COMMIT" : "ROLLBACK", NULL);
    c->sqlite_txn = false;
    c->trancount = 0;
    return k;
}

static df_errkind begin_tran(stmt_ctx *s) {
    peer_conn *c = s->c;
    if (c->trancount == 0) {
        uint64_t d = ((uint64_t)(uint32_t)c->spid << 32) | (++c->txn_seq);
        df_store_le64(c->txn, d);
        peer_envchange_bytes(c, 8, c->txn, 8, NULL, 0);
    }
    c->trancount++;
    return done(s, 0, 0xD4, 0);
}

static df_errkind end_tran(stmt_ctx *s, bool commit) {
    peer_conn *c = s->c;
    if (c->trancount == 0) {
        if (commit) return fail(s, 3902, 16, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.");
        return fail(s, 3903, 16, "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.");
    }
    if (commit && c->trancount > 1) {
        c->trancount--;
        return done(s, 0, 0xD5, 0);
    }
    if (txn_end(c, commit) != DF_OK) return fail(s, 50000, 16, "%s", sqlite3_errmsg(c->db));
    peer_envchange_bytes(c, commit ? 9 : 10, NULL, 0, c->txn, 8);
    memset(c->txn, 0, 8);
    peer_applocks_release(c->cfg, c->spid, true);
    return done(s, 0, commit ? 0xD5 : 0xD6, 0);
}

/* ------------------------------------------------------------------------ */
/* Translation to SQLite and result sets                                     */

/* Maps a CAST target type to a SQLite type name. */
static const char *sqlite_cast_type(const df_mssql_column *col) {
    switch (col->type) {
    case DF_MSSQL_BIT: case DF_MSSQL_TINYINT: case DF_MSSQL_SMALLINT: case DF_MSSQL_INT: case DF_MSSQL_BIGINT: return "INTEGER";
    case DF_MSSQL_REAL: case DF_MSSQL_FLOAT: return "REAL";
    case DF_MSSQL_BINARY: case DF_MSSQL_VARBINARY: return "BLOB";
    default: return "TEXT";
    }
}

static df_errkind emit_str(df_buf *o, const char *s, char q) {
    df_buf_append_char(o, q, NULL);
    for (; *s; s++) {
        df_buf_append_char(o, *s, NULL);
        if (*s == q) df_buf_append_char(o, q, NULL);
    }
    return df_buf_append_char(o, q, NULL);
}

static bool is_table_context_word(const tok *t) {
    return is_word(t, "FROM") || is_word(t, "JOIN") || is_word(t, "INTO") || is_word(t, "UPDATE") || is_word(t, "TABLE");
}

static bool ends_from_list(const tok *t) {
    static const char *w[] = {"WHERE", "GROUP", "ORDER", "HAVING", "UNION", "EXCEPT", "INTERSECT", "ON", "SET", "VALUES",
                              "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER", "SELECT"};
    for (size_t i = 0; i < DF_ARRAY_LEN(w); i++)
        if (is_word(t, w[i])) return true;
    return false;
}

/*
 * Translates tokens [b, e) of a SELECT/INSERT/UPDATE/DELETE to SQLite.
 * Unknown tables fail with 208 (the message is set in *emsg).
 */
static df_errkind translate(stmt_ctx *s, df_buf *o, int *errnum, char *emsg, size_t emcap) {
    peer_conn *c = s->c;
    const tok *t = s->t;
    long limit = -1;
    bool in_from = false, expect_table = false;
    int cast_depth[64], ncast = 0;
    for (int i = s->b; i < s->e; i++) {
        const tok *k = &t[i];
        if (ncast && is_op(k, ")") && k->depth == cast_depth[ncast - 1]) ncast--;
        if (k->kind == TK_WORD && (is_word(k, "TOP")) && i > s->b && (is_word(&t[i - 1], "SELECT") || is_word(&t[i - 1], "DISTINCT"))) {
            int j = i + 1;
            bool paren = j < s->e && is_op(&t[j], "(");
            if (paren) j++;
            if (j >= s->e || t[j].kind != TK_NUMBER) { *errnum = 102; snprintf(emsg, emcap, "Incorrect syntax near 'TOP'."); return DF_ERR_SQL_SYNTAX; }
            limit = strtol(t[j].text, NULL, 10);
            i = j + (paren ? 1 : 0);
            continue;
        }
        if (is_word(k, "CAST") && i + 1 < s->e && is_op(&t[i + 1], "(") && ncast < 64) cast_depth[ncast++] = t[i + 1].depth;
        if (is_word(k, "AS") && ncast && k->depth == cast_depth[ncast - 1] + 1) {
            int j = i + 1;
            df_mssql_column col;
            char tt[128];
            if (read_type(s, &j, &col, tt, sizeof tt)) {
                df_buf_printf(o, NULL, " AS %s", sqlite_cast_type(&col));
                i = j - 1;
                continue;
            }
        }
        if (is_word(k, "COUNT_BIG")) { df_buf_append_str(o, " COUNT", NULL); continue; }
        if (is_word(k, "WITH") && i + 1 < s->e && is_op(&t[i + 1], "(") && i > s->b && is_ident(&t[i - 1])) {
            /* table hints: WITH (NOLOCK, TABLOCK) */
            int j = i + 2;
            while (j < s->e && !(is_op(&t[j], ")") && t[j].depth == k->depth)) j++;
            i = j;
            continue;
        }
        if (is_table_context_word(k)) {
            expect_table = true;
            in_from = is_word(k, "FROM") || is_word(k, "JOIN") || in_from;
            df_buf_printf(o, NULL, " %s", k->text);
            continue;
        }
        if (in_from && is_op(k, ",") ) expect_table = true;
        else if (in_from && ends_from_list(k)) in_from = false;
        if (is_ident(k)) {
            int j = i;
            qname q;
            if (expect_table && read_name(s, &j, &q)) {
                expect_table = false;
                if (!peer_store_table_exists(c->db, q.sqlite)) {
                    *errnum = 208;
                    snprintf(emsg, emcap, "Invalid object name '%s'.", q.table);
                    return DF_ERR_SQL_UNKNOWN_TABLE;
                }
                df_buf_append_char(o, ' ', NULL);
                emit_str(o, q.sqlite, '"');
                i = j - 1;
                continue;
            }
            df_buf_append_char(o, ' ', NULL);
            if (k->kind == TK_QIDENT) emit_str(o, k->text, '"');
            else df_buf_append_str(o, k->text, NULL);
            continue;
        }
        expect_table = false;
        switch (k->kind) {
        case TK_STRING: df_buf_append_char(o, ' ', NULL); emit_str(o, k->text, '\''); break;
        case TK_HEX: df_buf_printf(o, NULL, " X'%s%s'", strlen(k->text) % 2 ? "0" : "", k->text); break;
        case TK_VAR: {
            int pi = -1;
            for (int q = 0; q < c->nparams; q++)
                if (!df_ascii_casecmp(c->param_names[q], k->text)) pi = q;
            if (pi >= 0) {
                df_buf_printf(o, NULL, " %s", c->param_sql[pi]);
                break;
            }
            if (!df_ascii_casecmp(k->text, "@@TRANCOUNT")) df_buf_printf(o, NULL, " %d", c->trancount);
            else if (!df_ascii_casecmp(k->text, "@@SPID")) df_buf_printf(o, NULL, " %d", c->spid);
            else if (!df_ascii_casecmp(k->text, "@@ROWCOUNT")) df_buf_printf(o, NULL, " %lld", (long long)c->last_rowcount);
            else if (!df_ascii_casecmp(k->text, "@@ERROR")) df_buf_append_str(o, " 0", NULL);
            else if (!df_ascii_casecmp(k->text, "@@VERSION"))
                df_buf_append_str(o, " 'Microsoft SQL Server 2019 (RTM) - 15.0.2000.5 (X64) (Delta Funnel loopback peer)'", NULL);
            else if (!df_ascii_casecmp(k->text, "@@SERVERNAME")) df_buf_append_str(o, " 'DFPEER'", NULL);
            else if (!df_ascii_casecmp(k->text, "@@LANGUAGE")) df_buf_append_str(o, " 'us_english'", NULL);
            else {
                *errnum = 137;
                snprintf(emsg, emcap, "Must declare the scalar variable \"%s\".", k->text);
                return DF_ERR_SQL_SYNTAX;
            }
            break;
        }
        default:
            df_buf_printf(o, NULL, " %s", k->text);
        }
    }
    if (limit >= 0) df_buf_printf(o, NULL, " LIMIT %ld", limit);
    return DF_OK;
}

/* Column type hints from the select list: CAST(... AS type), COUNT_BIG, COUNT. */
typedef struct hint { bool set; df_mssql_column col; bool unnamed; } hint;

static int select_hints(stmt_ctx *s, hint *h, int maxh) {
    const tok *t = s->t;
    int i = s->b;
    while (i < s->e && !is_word(&t[i], "SELECT")) i++;
    if (i >= s->e) return 0;
    int depth = t[i].depth;
    i++;
    if (i < s->e && is_word(&t[i], "DISTINCT")) i++;
    if (i < s->e && is_word(&t[i], "TOP")) { i++; if (i < s->e && is_op(&t[i], "(")) i += 3; else i++; }
    int n = 0, start = i;
    for (; i <= s->e && n < maxh; i++) {
        bool end = i == s->e || (t[i].depth == depth && (is_word(&t[i], "FROM") || is_word(&t[i], "WHERE") ||
                                                         is_word(&t[i], "ORDER") || is_word(&t[i], "UNION")));
        if (!end && !(is_op(&t[i], ",") && t[i].depth == depth)) continue;
        hint *hh = &h[n++];
        memset(hh, 0, sizeof *hh);
        bool alias = i - start >= 2 && is_word(&t[i - 2], "AS") && t[i - 2].depth == depth;
        bool simple = (i - start == 1 && is_ident(&t[start])) ||
                      (i - start == 3 && is_ident(&t[start]) && is_op(&t[start + 1], ".") && is_ident(&t[start + 2]));
        hh->unnamed = !alias && !simple;
        if (i - start == 1 && is_op(&t[start], "*")) return -1;
        if (i - start == 3 && is_op(&t[start + 2], "*")) return -1;
        for (int j = start; j < i; j++) {
            if (is_word(&t[j], "CAST") && j + 1 < i && is_op(&t[j + 1], "(")) {
                int cd = t[j + 1].depth, m = j + 2;
                int as = -1;
                while (m < i && !(is_op(&t[m], ")") && t[m].depth == cd)) {
                    if (is_word(&t[m], "AS") && t[m].depth == cd + 1) as = m;
                    m++;
                }
                char tt[128];
                int q = as + 1;
                if (as > 0 && read_type(s, &q, &hh->col, tt, sizeof tt)) hh->set = true;
                break;
            }
            if (j == start && (is_word(&t[j], "COUNT_BIG"))) { hh->set = true; hh->col.type = DF_MSSQL_BIGINT; break; }
            if (j == start && (is_word(&t[j], "COUNT") || is_word(&t[j], "OBJECT_ID") || is_word(&t[j], "LEN") ||
                               is_word(&t[j], "DATALENGTH") || is_word(&t[j], "SCHEMA_ID"))) {
                hh->set = true; hh->col.type = DF_MSSQL_INT; break;
            }
            if (j == start && t[j].kind == TK_VAR && (!df_ascii_casecmp(t[j].text, "@@TRANCOUNT") ||
                                                     !df_ascii_casecmp(t[j].text, "@@SPID") || !df_ascii_casecmp(t[j].text, "@@ROWCOUNT"))) {
                hh->set = true; hh->col.type = t[j].text[2] == 'S' || t[j].text[2] == 's' ? DF_MSSQL_SMALLINT : DF_MSSQL_INT; break;
            }
            if (j == start && (is_word(&t[j], "DB_NAME") || is_word(&t[j], "SCHEMA_NAME") || is_word(&t[j], "USER_NAME") ||
                               is_word(&t[j], "SUSER_SNAME"))) {
                hh->set = true; hh->col.type = DF_MSSQL_NVARCHAR; hh->col.length = 128; break;
            }
        }
        start = i + 1;
        if (end) break;
    }
    return n;
}

/* Decides the SQL Server type of result column i. */
static void column_type(peer_conn *c, sqlite3_stmt *st, int i, const hint *h, int nh, const int *inferred,
                        df__tds_typeinfo *ti) {
    df_mssql_column col = {0};
    const char *decl = sqlite3_column_decltype(st, i);
    bool nullable = true;
    bool have = false;
    if (decl) {
        const char *sp = strchr(decl, ' ');
        if (sp) {
            char tt[128];
            size_t o = 0;
            for (const char *p = sp + 1; *p && o + 5 < sizeof tt; p++) {
                if (p[0] == '-' && p[1] == '1') { memcpy(tt + o, "max", 3); o += 3; p++; continue; }
                tt[o++] = *p;
            }
            tt[o] = '\0';
            have = df_mssql_type_parse(tt, &col, NULL) == DF_OK;
        }
        const char *tbl = sqlite3_column_table_name(st, i), *orig = sqlite3_column_origin_name(st, i);
        int notnull = 0;
        if (have && tbl && orig && sqlite3_table_column_metadata(c->db, NULL, tbl, orig, NULL, NULL, &notnull, NULL, NULL) == SQLITE_OK)
            nullable = !notnull;
    }
    if (!have && h && i < nh && h[i].set) { col = h[i].col; have = true; }
    if (!have) {
        switch (inferred[i]) {
        case SQLITE_INTEGER: col.type = DF_MSSQL_INT; break;
        case SQLITE_INTEGER + 100: col.type = DF_MSSQL_BIGINT; break;
        case SQLITE_FLOAT: col.type = DF_MSSQL_FLOAT; break;
        case SQLITE_BLOB: col.type = DF_MSSQL_VARBINARY; col.length = -1; break;
        case SQLITE_TEXT + 100: col.type = DF_MSSQL_NVARCHAR; col.length = -1; break;
        case SQLITE_TEXT: col.type = DF_MSSQL_NVARCHAR; col.length = 4000; break;
        default: col.type = DF_MSSQL_INT; break;
        }
    }
    peer_result_typeinfo(&col, nullable, ti);
}

/* Infers value classes of expression columns by running the statement once. */
static void infer_types(sqlite3_stmt *st, int ncols, int *inferred) {
    for (int i = 0; i < ncols; i++) inferred[i] = SQLITE_NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < ncols; i++) {
            int ty = sqlite3_column_type(st, i);
            if (ty == SQLITE_NULL) continue;
            if (ty == SQLITE_INTEGER) {
                int64_t v = sqlite3_column_int64(st, i);
                if (inferred[i] == SQLITE_NULL || inferred[i] == SQLITE_INTEGER)
                    inferred[i] = (v < INT32_MIN || v > INT32_MAX) ? SQLITE_INTEGER + 100 : SQLITE_INTEGER;
            } else if (ty == SQLITE_TEXT) {
                if (sqlite3_column_bytes(st, i) > 4000) inferred[i] = SQLITE_TEXT + 100;
                else if (inferred[i] != SQLITE_TEXT + 100) inferred[i] = SQLITE_TEXT;
            } else if (inferred[i] == SQLITE_NULL) {
                inferred[i] = ty;
            }
        }
    }
    sqlite3_reset(st);
}

static df_errkind write_colmetadata(peer_conn *c, sqlite3_stmt *st, int ncols, const hint *h, int nh,
                                    const int *inferred, df__tds_typeinfo *tis) {
    df_buf *r = &c->reply;
    df__tds_put_u8(r, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(r, (uint16_t)ncols, NULL);
    for (int i = 0; i < ncols; i++) {
        column_type(c, st, i, h, nh, inferred, &tis[i]);
        df__tds_put_u32(r, 0, NULL);
        bool nullable = tis[i].size_class != TDS_SC_FIXED;
        df__tds_put_u16(r, (uint16_t)((nullable ? 1 : 0) | 0x08), NULL);
        df__tds_typeinfo_write(r, &tis[i], NULL);
        const char *name = sqlite3_column_name(st, i);
        if (h && i < nh && h[i].unnamed && !sqlite3_column_origin_name(st, i)) name = "";
        df_errkind k = df__tds_put_bvarchar(r, name ? name : "", NULL);
        if (k != DF_OK) return k;
    }
    return DF_OK;
}

/* Streams the rows of a prepared statement as ROW/NBCROW tokens. */
static df_errkind write_rows(peer_conn *c, sqlite3_stmt *st, int ncols, const df__tds_typeinfo *tis, uint64_t *rows,
                             df_error *err) {
    int rc;
    uint8_t bitmap[512];
    *rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bool any_null = false;
        for (int i = 0; i < ncols; i++) any_null |= sqlite3_column_type(st, i) == SQLITE_NULL;
        bool nbc = c->cfg->nbcrow && any_null && ncols <= 4096;
        if (nbc) {
            memset(bitmap, 0, sizeof bitmap);
            for (int i = 0; i < ncols; i++)
                if (sqlite3_column_type(st, i) == SQLITE_NULL) bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
            df__tds_put_u8(&c->reply, TDS_TOK_NBCROW, NULL);
            df_buf_append(&c->reply, bitmap, (size_t)(ncols + 7) / 8, NULL);
        } else {
            df__tds_put_u8(&c->reply, TDS_TOK_ROW, NULL);
        }
        for (int i = 0; i < ncols; i++) {
            if (nbc && sqlite3_column_type(st, i) == SQLITE_NULL) continue;
            DF_TRY(peer_encode_value(&c->reply, &tis[i], st, i, err));
        }
        (*rows)++;
    }
    if (rc != SQLITE_DONE) return df_error_set(err, DF_ERR_EXECUTION, "%s", sqlite3_errmsg(c->db));
    return DF_OK;
}

/* Maps a SQLite failure to a SQL Server error. */
static df_errkind sqlite_error(stmt_ctx *s, sqlite3 *db) {
    const char *m = sqlite3_errmsg(db);
    int ext = sqlite3_extended_errcode(db);
    if (ext == SQLITE_CONSTRAINT_NOTNULL) {
        const char *col = strrchr(m, '.');
        return fail(s, 515, 16, "Cannot insert the value NULL into column '%s'; column does not allow nulls. INSERT fails.", col ? col + 1 : "?");
    }
    if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY)
        return fail(s, 2627, 14, "Violation of PRIMARY KEY or UNIQUE constraint. Cannot insert duplicate key.");
    if (!strncmp(m, "no such column: ", 16)) return fail(s, 207, 16, "Invalid column name '%s'.", m + 16);
    if (!strncmp(m, "no such table: ", 15)) return fail(s, 208, 16, "Invalid object name '%s'.", m + 15);
    if (!strncmp(m, "no such function: ", 18)) return fail(s, 195, 15, "'%s' is not a recognized built-in function name.", m + 18);
    if (strstr(m, "syntax error")) return fail(s, 102, 15, "Incorrect syntax (%s).", m);
    return fail(s, 50000, 16, "%s", m);
}

static df_errkind run_query(stmt_ctx *s, uint16_t curcmd) {
    peer_conn *c = s->c;
    df_buf q;
    df_buf_init(&q, 64u << 20);
    int errnum = 0;
    char emsg[300];
    df_errkind k = translate(s, &q, &errnum, emsg, sizeof emsg);
    if (k != DF_OK) {
        df_buf_free(&q);
        return fail(s, errnum, 16, "%s", emsg);
    }
    peer_trace(c->cfg, c->spid, "sqlite: %s", q.data ? q.data : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, q.data ? q.data : "", -1, &st, NULL) != SQLITE_OK) {
        df_buf_free(&q);
        return sqlite_error(s, c->db);
    }
    df_buf_free(&q);
    int ncols = sqlite3_column_count(st);
    if (ncols == 0) {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) return sqlite_error(s, c->db);
        c->last_rowcount = sqlite3_changes(c->db);
        return done(s, c->nocount ? 0 : TDS_DONE_COUNT, curcmd, (uint64_t)c->last_rowcount);
    }
    hint h[256];
    int nh = select_hints(s, h, 256);
    int *inferred = df_calloc((size_t)ncols, sizeof *inferred);
    df__tds_typeinfo *tis = df_calloc((size_t)ncols, sizeof *tis);
    if (!inferred || !tis) {
        df_free(inferred);
        df_free(tis);
        sqlite3_finalize(st);
        return fail(s, 701, 17, "There is insufficient system memory to run this query.");
    }
    bool need_infer = false;
    for (int i = 0; i < ncols; i++)
        if (!sqlite3_column_decltype(st, i) && !(nh > i && h[i].set)) need_infer = true;
    if (need_infer && !c->fmtonly) infer_types(st, ncols, inferred);
    k = write_colmetadata(c, st, ncols, nh > 0 ? h : NULL, nh > 0 ? nh : 0, inferred, tis);
    uint64_t rows = 0;
    df_error e = {0};
    if (k == DF_OK && !c->fmtonly) k = write_rows(c, st, ncols, tis, &rows, &e);
    sqlite3_finalize(st);
    df_free(inferred);
    df_free(tis);
    if (k != DF_OK) {
        df_errkind r = fail(s, 50000, 16, "%s", e.message);
        df_error_clear(&e);
        return r;
    }
    c->last_rowcount = (int64_t)rows;
    return done(s, TDS_DONE_COUNT, 0xC1, rows);
}

/* ------------------------------------------------------------------------ */
/* Stored procedures                                                         */

typedef struct proc_arg { char name[64]; const tok *value; } proc_arg;

static int read_args(stmt_ctx *s, int i, proc_arg *a, int max) {
    int n = 0;
    while (i < s->e && n < max) {
        proc_arg *p = &a[n];
        p->name[0] = '\0';
        if (s->t[i].kind == TK_VAR && i + 2 < s->e + 1 && i + 1 < s->e && is_op(&s->t[i + 1], "=")) {
            df__tds_strlcpy(p->name, sizeof p->name, s->t[i].text);
            i += 2;
        }
        if (i >= s->e) break;
        p->value = &s->t[i];
        n++;
        i++;
        while (i < s->e && !is_op(&s->t[i], ",")) i++;
        if (i < s->e) i++;
    }
    return n;
}

static const tok *arg_named(proc_arg *a, int n, int pos, const char *name) {
    for (int i = 0; i < n; i++)
        if (a[i].name[0] && !df_ascii_casecmp(a[i].name, name)) return a[i].value;
    return pos < n && !a[pos].name[0] ? a[pos].value : NULL;
}

static df_errkind proc_done(stmt_ctx *s, int32_t status) {
    peer_returnstatus(s->c, status);
    return peer_done(s->c, TDS_TOK_DONEPROC, (uint16_t)(s->more ? TDS_DONE_MORE : 0), 0xE0, 0);
}

/* An nvarchar(n) ROW value: byte length + UTF-16LE. */
static void put_nvarchar(df_buf *r, const char *s) {
    size_t at = r->len, units = 0;
    df__tds_put_u16(r, 0, NULL);
    df__tds_put_utf16(r, s, &units, NULL);
    df_store_le16(r->data + at, (uint16_t)(2 * units));
}

static df_errkind sp_tablecollations(stmt_ctx *s, const tok *arg) {
    peer_conn *c = s->c;
    qname q;
    if (!arg || !name_from_string(arg->text, &q) || !peer_store_table_exists(c->db, q.sqlite))
        return fail(s, 208, 16, "Invalid object name '%s'.", arg ? arg->text : "");
    peer_column *cols;
    int n;
    if (peer_store_columns(c->db, q.sqlite, &cols, &n, NULL) != DF_OK) return fail(s, 50000, 16, "catalog error");
    df_buf *r = &c->reply;
    df__tds_typeinfo ti[4];
    df_mssql_column defs[4] = {{.type = DF_MSSQL_INT}, {.type = DF_MSSQL_NVARCHAR, .length = 128},
                               {.type = DF_MSSQL_BINARY, .length = 5}, {.type = DF_MSSQL_NVARCHAR, .length = 128}};
    const char *names[4] = {"colid", "name", "tds_collation", "collation"};
    df__tds_put_u8(r, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(r, 4, NULL);
    for (int i = 0; i < 4; i++) {
        peer_result_typeinfo(&defs[i], i >= 2, &ti[i]);
        df__tds_put_u32(r, 0, NULL);
        df__tds_put_u16(r, i >= 2 ? 1 : 0, NULL);
        df__tds_typeinfo_write(r, &ti[i], NULL);
        df__tds_put_bvarchar(r, names[i], NULL);
    }
    for (int i = 0; i < n; i++) {
        bool chars = cols[i].type.type >= DF_MSSQL_CHAR && cols[i].type.type <= DF_MSSQL_NVARCHAR;
        df__tds_put_u8(r, TDS_TOK_ROW, NULL);
        df__tds_put_u32(r, (uint32_t)(i + 1), NULL);
        put_nvarchar(r, cols[i].name);
        if (chars) {
            df__tds_put_u16(r, 5, NULL);
            df_buf_append(r, df__mssql_default_collation, 5, NULL);
            put_nvarchar(r, "SQL_Latin1_General_CP1_CI_AS");
        } else {
            df__tds_put_u16(r, 0xFFFF, NULL);
            df__tds_put_u16(r, 0xFFFF, NULL);
        }
    }
    df_free(cols);
    peer_done(c, TDS_TOK_DONEINPROC, TDS_DONE_COUNT | TDS_DONE_MORE, 0xC1, (uint64_t)n);
    return proc_done(s, 0);
}

/* Acquires an application lock; returns the sp_getapplock status. */
static int applock_get(peer_conn *c, const char *res, bool txn_owner, int timeout_ms) {
    peer_config *cfg = c->cfg;
    uint64_t end = df_now_ns() + (uint64_t)(timeout_ms < 0 ? 3600000 : timeout_ms) * 1000000u;
    for (;;) {
        pthread_mutex_lock(&cfg->applock_mu);
        int holder = -1;
        for (int i = 0; i < cfg->napplocks; i++)
            if (!strcmp(cfg->applocks[i].resource, res)) holder = cfg->applocks[i].spid;
        int status = -999;
        if (holder == c->spid) status = 1;
        else if (holder < 0 && cfg->napplocks < 64) {
            struct peer_applock *l = &cfg->applocks[cfg->napplocks++];
            df__tds_strlcpy(l->resource, sizeof l->resource, res);
            l->spid = c->spid;
            l->txn_owner = txn_owner;
            status = 0;
        }
        pthread_mutex_unlock(&cfg->applock_mu);
        if (status != -999 || holder < 0) return status;
        if (df_now_ns() >= end) return -1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

void peer_applocks_release(peer_config *cfg, int spid, bool txn_only) {
    pthread_mutex_lock(&cfg->applock_mu);
    for (int i = 0; i < cfg->napplocks;) {
        if (cfg->applocks[i].spid == spid && (!txn_only || cfg->applocks[i].txn_owner)) cfg->applocks[i] = cfg->applocks[--cfg->napplocks];
        else i++;
    }
    pthread_mutex_unlock(&cfg->applock_mu);
}

static df_errkind exec_stmt(stmt_ctx *s) {
    peer_conn *c = s->c;
    int i = s->b + 1;
    qname pn;
    if (!read_name(s, &i, &pn)) return syntax_near(s, i);
    const char *p = pn.table;
    proc_arg a[16];
    int n = read_args(s, i, a, 16);
    if (!df_ascii_casecmp(p, "sp_rename")) {
        const tok *objname = arg_named(a, n, 0, "@objname"), *newname = arg_named(a, n, 1, "@newname");
        qname q;
        if (!objname || !newname || !name_from_string(objname->text, &q) || !peer_store_table_exists(c->db, q.sqlite))
            return fail(s, 15248, 11, "Either the parameter @objname is ambiguous or the claimed @objtype (OBJECT) is wrong.");
        char target[300];
        snprintf(target, sizeof target, "%s.%s", q.schema, newname->text);
        if (peer_store_table_exists(c->db, target))
            return fail(s, 15335, 11, "Error: The new name '%s' is already in use as a object name and would cause a duplicate that is not permitted.", newname->text);
        if (peer_store_rename_table(c->db, q.sqlite, newname->text, NULL) != DF_OK) return fail(s, 50000, 16, "%s", sqlite3_errmsg(c->db));
        peer_error(c, TDS_TOK_INFO, 15477, 1, 10, "Caution: Changing any part of an object name could break scripts and stored procedures.");
        return proc_done(s, 0);
    }
    if (!df_ascii_casecmp(p, "sp_tableoption")) {
        const tok *tn = arg_named(a, n, 0, "@TableNamePattern"), *opt = arg_named(a, n, 1, "@OptionName"),
                  *val = arg_named(a, n, 2, "@OptionValue");
        qname q;
        if (!tn || !opt || !val || !name_from_string(tn->text, &q) || !peer_store_table_exists(c->db, q.sqlite))
            return fail(s, 15009, 16, "The object '%s' does not exist in database '%s' or is invalid for this operation.", tn ? tn->text : "", c->database);
        bool on = !df_ascii_casecmp(val->text, "ON") || !df_ascii_casecmp(val->text, "1") || !df_ascii_casecmp(val->text, "true");
        if (!df_ascii_casecmp(opt->text, "table lock on bulk load")) peer_store_set_table_lock(c->db, q.sqlite, on, NULL);
        return proc_done(s, 0);
    }
    if (!df_ascii_casecmp(p, "sp_getapplock")) {
        const tok *res = arg_named(a, n, 0, "@Resource"), *owner = arg_named(a, n, 2, "@LockOwner"),
                  *timeout = arg_named(a, n, 3, "@LockTimeout");
        if (!res) return fail(s, 201, 16, "Procedure or function 'sp_getapplock' expects parameter '@Resource', which was not supplied.");
        bool txn_owner = !owner || !df_ascii_casecmp(owner->text, "Transaction");
        if (txn_owner && c->trancount == 0)
            return fail(s, 1223, 16, "Cannot release the application lock (Database Principal: 'public', Resource: '%s') because it is not currently held.", res->text);
        int status = applock_get(c, res->text, txn_owner, timeout ? atoi(timeout->text) : -1);
        return proc_done(s, status);
    }
    if (!df_ascii_casecmp(p, "sp_releaseapplock")) {
        const tok *res = arg_named(a, n, 0, "@Resource");
        if (res) {
            pthread_mutex_lock(&c->cfg->applock_mu);
            for (int k = 0; k < c->cfg->napplocks; k++)
                if (c->cfg->applocks[k].spid == c->spid && !strcmp(c->cfg->applocks[k].resource, res->text)) {
                    c->cfg->applocks[k] = c->cfg->applocks[--c->cfg->napplocks];
                    break;
                }
            pthread_mutex_unlock(&c->cfg->applock_mu);
        }
        return proc_done(s, 0);
    }
    if (!df_ascii_casecmp(p, "sp_tablecollations_100") || !df_ascii_casecmp(p, "sp_tablecollations_90"))
        return sp_tablecollations(s, n ? a[0].value : NULL);
    return fail(s, 2812, 16, "Could not find stored procedure '%s'.", p);
}

/* ------------------------------------------------------------------------ */
/* INSERT BULK                                                               */

static df_errkind insert_bulk(stmt_ctx *s) {
    peer_conn *c = s->c;
    int i = s->b + 2;
    qname q;
    if (!read_name(s, &i, &q)) return syntax_near(s, i);
    if (!peer_store_table_exists(c->db, q.sqlite)) return fail(s, 208, 16, "Invalid object name '%s'.", q.table);
    peer_column *tcols;
    int tn;
    if (peer_store_columns(c->db, q.sqlite, &tcols, &tn, NULL) != DF_OK) return fail(s, 50000, 16, "catalog error");
    peer_column *cols = df_calloc((size_t)(tn ? tn : 1), sizeof *cols);
    int n = 0;
    df_errkind k = DF_OK;
    bool keep_nulls = false;
    if (!cols) k = fail(s, 701, 17, "There is insufficient system memory to run this query.");
    if (k == DF_OK && i < s->e && is_op(&s->t[i], "(")) {
        int depth = s->t[i].depth + 1;
        i++;
        while (k == DF_OK && i < s->e && !is_op(&s->t[i], ")")) {
            if (!is_ident(&s->t[i])) { k = syntax_near(s, i); break; }
            int found = -1;
            for (int j = 0; j < tn; j++)
                if (!df_ascii_casecmp(tcols[j].name, s->t[i].text)) found = j;
            if (found < 0) { k = fail(s, 207, 16, "Invalid column name '%s'.", s->t[i].text); break; }
            if (n >= tn) { k = fail(s, 4819, 16, "Cannot bulk load. The bulk data stream was incorrectly specified as sorted or the data violates a uniqueness constraint."); break; }
            cols[n++] = tcols[found];
            i = skip_to_comma(s, i + 1, depth);
            if (i < s->e && is_op(&s->t[i], ",")) i++;
        }
        if (k == DF_OK) i++;
    } else if (k == DF_OK) {
        memcpy(cols, tcols, sizeof *cols * (size_t)tn);
        n = tn;
    }
    if (k == DF_OK && i < s->e && is_word(&s->t[i], "WITH")) {
        for (int j = i; j < s->e; j++)
            if (is_word(&s->t[j], "KEEP_NULLS")) keep_nulls = true;
        i = s->e;
    }
    if (k == DF_OK && i != s->e) k = syntax_near(s, i);
    df_free(tcols);
    if (k != DF_OK) {
        df_free(cols);
        return k;
    }
    df_free(c->bulk_cols);
    c->bulk_cols = cols;
    c->bulk_ncols = n;
    c->bulk_pending = true;
    c->bulk_keep_nulls = keep_nulls;
    df__tds_strlcpy(c->bulk_table, sizeof c->bulk_table, q.sqlite);
    snprintf(c->bulk_display, sizeof c->bulk_display, "%s.%s.%s", c->database, q.schema, q.table);
    peer_trace(c->cfg, c->spid, "insert bulk %s (%d columns)", q.sqlite, n);
    return done(s, 0, 0xF0, 0);
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

static bool fault_matches(peer_conn *c, stmt_ctx *s, int32_t *number) {
    peer_config *cfg = c->cfg;
    if (!cfg->nfail_rules) return false;
    df_buf text;
    df_buf_init(&text, 0);
    for (int i = s->b; i < s->e; i++) df_buf_printf(&text, NULL, "%s%s", i > s->b ? " " : "", s->t[i].text);
    bool hit = false;
    for (int r = 0; r < cfg->nfail_rules && !hit && text.data; r++) {
        peer_fail_rule *rule = &cfg->fail_rules[r];
        if (!strcasestr(text.data, rule->pattern)) continue;
        int left = atomic_load(&rule->remaining);
        while (left != 0) {
            if (left < 0 || atomic_compare_exchange_weak(&rule->remaining, &left, left - 1)) {
                hit = true;
                *number = rule->number;
                break;
            }
        }
    }
    df_buf_free(&text);
    return hit;
}

static df_errkind if_stmt(stmt_ctx *s, bool *skip_next) {
    /* IF <cond>: evaluate SELECT CASE WHEN <cond> THEN 1 ELSE 0 END. */
    tok *saved = s->t;
    int b = s->b + 1, e = s->e;
    stmt_ctx inner = *s;
    inner.b = b;
    inner.e = e;
    df_buf q;
    df_buf_init(&q, 0);
    df_buf_append_str(&q, "SELECT CASE WHEN (", NULL);
    int errnum = 0;
    char emsg[300];
    df_buf cond;
    df_buf_init(&cond, 0);
    df_errkind k = translate(&inner, &cond, &errnum, emsg, sizeof emsg);
    (void)saved;
    if (k != DF_OK) {
        df_buf_free(&q);
        df_buf_free(&cond);
        return fail(s, errnum, 16, "%s", emsg);
    }
    df_buf_printf(&q, NULL, "%s) THEN 1 ELSE 0 END", cond.data ? cond.data : "");
    df_buf_free(&cond);
    sqlite3_stmt *st = NULL;
    int truth = 0;
    if (sqlite3_prepare_v2(s->c->db, q.data, -1, &st, NULL) != SQLITE_OK) {
        df_buf_free(&q);
        return sqlite_error(s, s->c->db);
    }
    if (sqlite3_step(st) == SQLITE_ROW) truth = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    df_buf_free(&q);
    *skip_next = !truth;
    return DF_OK;
}

static df_errkind dispatch(stmt_ctx *s) {
    peer_conn *c = s->c;
    const tok *t = &s->t[s->b];
    const tok *t2 = s->e - s->b > 1 ? &s->t[s->b + 1] : NULL;
    int32_t fault;
    if (fault_matches(c, s, &fault)) return fail(s, fault, 16, "Injected failure for this statement (peer fault plan).");
    bool write = is_word(t, "INSERT") || is_word(t, "UPDATE") || is_word(t, "DELETE") || is_word(t, "CREATE") ||
                 is_word(t, "DROP") || is_word(t, "TRUNCATE") || is_word(t, "ALTER");
    if ((is_word(t, "EXEC") || is_word(t, "EXECUTE")) && t2) {
        const char *p = t2->text, *dot = strrchr(p, '.');
        if (s->e - s->b > 3 && is_op(t2 + 1, ".")) p = t2[2].text;
        else if (dot) p = dot + 1;
        write = !df_ascii_casecmp(p, "sp_rename") || !df_ascii_casecmp(p, "sp_tableoption");
    }
    if (write && !(t2 && is_word(t2, "BULK")) && peer_txn_before_write(c, NULL) != DF_OK)
        return fail(s, 1222, 16, "Lock request time out period exceeded.");
    if (is_word(t, "SET")) return set_stmt(s);
    if (is_word(t, "USE")) return use_stmt(s);
    if (is_word(t, "SELECT")) return run_query(s, 0xC1);
    if (is_word(t, "INSERT") && t2 && is_word(t2, "BULK")) return insert_bulk(s);
    if (is_word(t, "INSERT")) return run_query(s, 0xC3);
    if (is_word(t, "UPDATE")) return run_query(s, 0xC5);
    if (is_word(t, "DELETE")) return run_query(s, 0xC4);
    if (is_word(t, "CREATE") && t2 && is_word(t2, "TABLE")) return create_table(s);
    if (is_word(t, "CREATE") && t2 && is_word(t2, "SCHEMA")) {
        if (s->e - s->b < 3) return syntax_near(s, s->b + 2);
        const char *name = s->t[s->b + 2].text;
        if (peer_store_schema_exists(c->db, name)) return fail(s, 2714, 16, "There is already an object named '%s' in the database.", name);
        if (peer_store_create_schema(c->db, name, NULL) != DF_OK) return fail(s, 50000, 16, "%s", sqlite3_errmsg(c->db));
        return done(s, 0, 0xC6, 0);
    }
    if (is_word(t, "DROP") && t2 && is_word(t2, "TABLE")) return drop_table(s);
    if (is_word(t, "TRUNCATE") && t2 && is_word(t2, "TABLE")) return truncate_table(s);
    if (is_word(t, "ALTER") && t2 && is_word(t2, "TABLE")) return alter_table(s);
    if (is_word(t, "BEGIN") && t2 && (is_word(t2, "TRAN") || is_word(t2, "TRANSACTION"))) return begin_tran(s);
    if (is_word(t, "COMMIT")) return end_tran(s, true);
    if (is_word(t, "ROLLBACK")) return end_tran(s, false);
    if (is_word(t, "EXEC") || is_word(t, "EXECUTE")) return exec_stmt(s);
    return fail(s, 102, 15, "Incorrect syntax near '%s'.", t->text);
}

/*
 * The metadata batch SqlBulkCopy-style clients (mssql-python's bulk copy)
 * send before INSERT BULK: SELECT @@TRANCOUNT, a DECLARE/sp_executesql
 * block computing the column list, SET FMTONLY ON; EXEC(N'SELECT cols FROM
 * t'); SET FMTONLY OFF; EXEC sp_tablecollations_100 N't'.  The peer has no
 * variables or dynamic SQL, so it recognises this batch as a unit and
 * answers with the three result sets SQL Server produces for it.
 */
static bool is_bulkcopy_probe(const char *sql) {
    return strcasestr(sql, "sp_tablecollations_100") && strcasestr(sql, "@Column_Names") && strcasestr(sql, "FMTONLY");
}

static df_errkind bulkcopy_probe(peer_conn *c, const char *sql) {
    stmt_ctx s = {.c = c, .more = true};
    const char *p = strcasestr(sql, "OBJECT_ID(N'");
    char name[300] = "";
    if (p) {
        p += 12;
        size_t n = 0;
        while (p[n] && !(p[n] == '\'' && p[n + 1] != '\'') && n + 1 < sizeof name) {
            name[n] = p[n];
            n += p[n] == '\'' ? 2 : 1;
        }
        name[n] = '\0';
    }
    qname q;
    if (!name_from_string(name, &q) || !peer_store_table_exists(c->db, q.sqlite))
        return fail(&s, 208, 16, "Invalid object name '%s'.", name);
    /* 1: SELECT @@TRANCOUNT */
    df_buf *r = &c->reply;
    df_mssql_column icol = {.type = DF_MSSQL_INT};
    df__tds_typeinfo ti;
    peer_result_typeinfo(&icol, true, &ti);
    df__tds_put_u8(r, TDS_TOK_COLMETADATA, NULL);
    df__tds_put_u16(r, 1, NULL);
    df__tds_put_u32(r, 0, NULL);
    df__tds_put_u16(r, 0x09, NULL);
    df__tds_typeinfo_write(r, &ti, NULL);
    df__tds_put_bvarchar(r, "", NULL);
    df__tds_put_u8(r, TDS_TOK_ROW, NULL);
    df__tds_put_u8(r, 4, NULL);
    df__tds_put_u32(r, (uint32_t)c->trancount, NULL);
    peer_done(c, TDS_TOK_DONE, TDS_DONE_COUNT | TDS_DONE_MORE, 0xC1, 1);
    /* 2: FMTONLY metadata of every column */
    char sel[600];
    snprintf(sel, sizeof sel, "SELECT * FROM \"%s\"", q.sqlite);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sel, -1, &st, NULL) != SQLITE_OK) return sqlite_error(&s, c->db);
    int ncols = sqlite3_column_count(st);
    int *inferred = df_calloc((size_t)ncols + 1, sizeof *inferred);
    df__tds_typeinfo *tis = df_calloc((size_t)ncols + 1, sizeof *tis);
    df_errkind k = inferred && tis ? write_colmetadata(c, st, ncols, NULL, 0, inferred, tis) : DF_ERR_OUT_OF_MEMORY;
    sqlite3_finalize(st);
    df_free(inferred);
    df_free(tis);
    if (k != DF_OK) return fail(&s, 701, 17, "There is insufficient system memory to run this query.");
    peer_done(c, TDS_TOK_DONE, TDS_DONE_MORE, 0xC1, 0);
    /* 3: sp_tablecollations_100 */
    s.more = false;
    tok arg = {.kind = TK_STRING, .text = name};
    return sp_tablecollations(&s, &arg);
}

df_errkind peer_sql_batch(peer_conn *c, const char *sql, df_error *err) {
    tok *t = NULL;
    int n = 0;
    peer_trace(c->cfg, c->spid, "batch: %s", sql);
    if (is_bulkcopy_probe(sql)) {
        bulkcopy_probe(c, sql);
        return DF_OK;
    }
    df_errkind k = tokenize(sql, &t, &n, err);
    if (k == DF_ERR_SQL_SYNTAX) {
        stmt_ctx s = {.c = c};
        fail(&s, 105, 15, "Unclosed quotation mark after the character string.");
        return DF_OK;
    }
    DF_TRY(k);
    /* Split into statements. */
    int *starts = df_malloc(sizeof(int) * (size_t)(n + 1)), ns = 0;
    if (!starts) k = DF_OOM(err);
    for (int i = 0, b = 0; k == DF_OK && i <= n; i++) {
        if (i == n || is_op(&t[i], ";")) {
            if (i > b) starts[ns++] = b;
            b = i + 1;
            continue;
        }
        if (splits_here(t, b, i)) {
            starts[ns++] = b;
            b = i;
        }
    }
    bool skip_next = false;
    for (int si = 0; k == DF_OK && si < ns; si++) {
        int b = starts[si], e = si + 1 < ns ? starts[si + 1] : n;
        while (e > b && is_op(&t[e - 1], ";")) e--;
        stmt_ctx s = {.c = c, .t = t, .b = b, .e = e, .more = si + 1 < ns};
        if (skip_next) { skip_next = false; if (!s.more) peer_done(c, TDS_TOK_DONE, 0, 0, 0); continue; }
        if (is_word(&t[b], "IF")) {
            df_errkind r = if_stmt(&s, &skip_next);
            if (r == DF_ERR_MSSQL_SERVER_ERROR) break;
            if (!s.more) peer_done(c, TDS_TOK_DONE, 0, 0, 0);
            continue;
        }
        df_errkind r = dispatch(&s);
        if (r == DF_ERR_MSSQL_SERVER_ERROR) break; /* the error and final DONE are in the reply */
        if (r != DF_OK) { k = r; break; }
        if (c->bulk_pending && s.more) {
            /* INSERT BULK must be the last statement of its batch. */
            c->bulk_pending = false;
        }
    }
    if (k == DF_OK && ns == 0) peer_done(c, TDS_TOK_DONE, 0, 0, 0);
    for (int i = 0; i < n; i++) df_free(t[i].text);
    df_free(t);
    df_free(starts);
    return k;
}
