/*
 * A TOML reader for job files: TOML text -> the equivalent JSON text, so
 * one interpreter (job.c) serves TOML and JSON jobs.
 *
 * Supported (TOML 1.0 minus dates and times): comments, bare and quoted
 * keys, dotted keys, [tables], [[arrays of tables]], basic "..." and
 * literal '...' strings with their multi-line forms, integers (decimal,
 * 0x/0o/0b, underscores), floats (incl. inf/nan), booleans, arrays
 * (multi-line, trailing comma) and inline tables.  Dates and times are
 * rejected with a clear message.
 *
 * The input is untrusted: every read is bounds-checked, nesting of arrays
 * and inline tables is limited (MAX_DEPTH), the document size is capped
 * (MAX_BYTES), redefinitions are errors, and errors name the line (never
 * the value: a job file may hold a connection string).
 */
#include "load/job_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DEPTH 32
#define MAX_BYTES ((size_t)16 << 20)

typedef enum tkind { T_TABLE, T_ARRAY, T_STRING, T_INT, T_FLOAT, T_BOOL } tkind;

/* One TOML value; tables and arrays hold children. */
typedef struct tnode {
    tkind kind;                      /* value kind */
    const char *key;                 /* key within the parent table (NULL for array items) */
    const char *str;                 /* T_STRING (NUL-terminated, may hold no NUL) */
    size_t len;                      /* T_STRING length */
    int64_t i;                       /* T_INT */
    double f;                        /* T_FLOAT */
    bool b;                          /* T_BOOL */
    struct tnode **items;            /* children in order */
    int32_t n, cap;                  /* children used / allocated */
    bool header_defined;             /* a [table] header defined this table */
    bool sealed;                     /* inline table or static array: cannot be extended */
    bool aot;                        /* array of tables ([[x]]) */
    bool implicit;                   /* created by a dotted key or header path */
} tnode;

typedef struct parser {
    const char *p, *end;             /* cursor over the text */
    int line;                        /* 1-based line of the cursor */
    df_arena *arena;                 /* node storage */
    df_error *err;                   /* error out */
    tnode *root;                     /* the document table */
    tnode *current;                  /* table receiving key/value pairs */
} parser;

static df_errkind perr(parser *ps, const char *what) {
    df_error_set(ps->err, DF_ERR_CONFIG, "job file line %d: %s", ps->line, what);
    df_error_set_phase(ps->err, "config");
    df_error_set_offset(ps->err, ps->line);
    return DF_ERR_CONFIG;
}

static tnode *node_new(parser *ps, tkind kind) {
    tnode *n = df_arena_calloc(ps->arena, 1, sizeof *n);
    if (n) n->kind = kind;
    return n;
}

static df_errkind add_child(parser *ps, tnode *parent, tnode *child) {
    if (parent->n == parent->cap) {
        int32_t cap = parent->cap ? parent->cap * 2 : 4;
        if (cap > (1 << 20)) return perr(ps, "too many entries");
        tnode **items = df_arena_alloc(ps->arena, sizeof *items * (size_t)cap);
        if (!items) return DF_OOM(ps->err);
        if (parent->n) memcpy(items, parent->items, sizeof *items * (size_t)parent->n);
        parent->items = items;
        parent->cap = cap;
    }
    parent->items[parent->n++] = child;
    return DF_OK;
}

static tnode *find(const tnode *t, const char *key) {
    for (int32_t i = 0; i < t->n; i++)
        if (t->items[i]->key && !strcmp(t->items[i]->key, key)) return t->items[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Lexing helpers                                                            */

static bool at_end(const parser *ps) { return ps->p >= ps->end; }

static void skip_ws(parser *ps) {
    while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t')) ps->p++;
}

static void skip_comment(parser *ps) {
    if (!at_end(ps) && *ps->p == '#')
        while (!at_end(ps) && *ps->p != '\n') ps->p++;
}

/* Skips whitespace, newlines and comments (inside arrays). */
static void skip_ws_nl(parser *ps) {
    for (;;) {
        skip_ws(ps);
        skip_comment(ps);
        if (at_end(ps)) return;
        if (*ps->p == '\n') {
            ps->line++;
            ps->p++;
        } else if (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n') {
            ps->p++;
        } else {
            return;
        }
    }
}

/* Expects the end of a line (optional comment). */
static df_errkind end_of_line(parser *ps) {
    skip_ws(ps);
    skip_comment(ps);
    if (at_end(ps)) return DF_OK;
    if (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n') ps->p++;
    if (*ps->p != '\n') return perr(ps, "expected the end of the line");
    ps->p++;
    ps->line++;
    return DF_OK;
}

static bool is_bare(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static df_errkind put_utf8(df_buf *b, uint32_t cp, parser *ps) {
    if (!df_unicode_is_scalar(cp)) return perr(ps, "invalid Unicode escape");
    /* Values become NUL-terminated strings (SQL text, names, modes): a NUL would cut them short. */
    if (cp == 0) return perr(ps, "a NUL character (\\u0000) in a string");
    uint8_t u[4];
    return df_buf_append(b, u, df_utf8_encode(cp, u), ps->err);
}

/* A basic string escape after the backslash. */
static df_errkind escape(parser *ps, df_buf *b) {
    if (at_end(ps)) return perr(ps, "unterminated string");
    char c = *ps->p++;
    switch (c) {
    case 'b': return df_buf_append_char(b, '\b', ps->err);
    case 't': return df_buf_append_char(b, '\t', ps->err);
    case 'n': return df_buf_append_char(b, '\n', ps->err);
    case 'f': return df_buf_append_char(b, '\f', ps->err);
    case 'r': return df_buf_append_char(b, '\r', ps->err);
    case 'e': return df_buf_append_char(b, 0x1B, ps->err);
    case '"': return df_buf_append_char(b, '"', ps->err);
    case '\\': return df_buf_append_char(b, '\\', ps->err);
    case 'u':
    case 'U': {
        int digits = c == 'u' ? 4 : 8;
        if (ps->end - ps->p < digits) return perr(ps, "short Unicode escape");
        uint32_t cp = 0;
        for (int i = 0; i < digits; i++) {
            char h = *ps->p++;
            int v = df_hex_value(h);
            if (v < 0) return perr(ps, "invalid Unicode escape");
            cp = cp * 16 + (uint32_t)v;
        }
        return put_utf8(b, cp, ps);
    }
    default: return perr(ps, "invalid escape in a string");
    }
}

/* Parses a string of any of the four forms into the arena. */
static df_errkind read_string(parser *ps, const char **out, size_t *len) {
    char q = *ps->p;
    bool multi = ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q;
    ps->p += multi ? 3 : 1;
    if (multi && !at_end(ps) && *ps->p == '\n') { ps->p++; ps->line++; } /* a newline right after the opener is trimmed */
    else if (multi && ps->end - ps->p >= 2 && ps->p[0] == '\r' && ps->p[1] == '\n') { ps->p += 2; ps->line++; }
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    for (;;) {
        if (at_end(ps)) { k = perr(ps, "unterminated string"); break; }
        char c = *ps->p;
        if (c == q && (!multi || (ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q))) {
            ps->p += multi ? 3 : 1;
            /* Up to two more quotes may end a multi-line string ("""a"""" is a" plus a quote). */
            for (int extra = 0; multi && extra < 2 && !at_end(ps) && *ps->p == q && k == DF_OK; extra++) {
                k = df_buf_append_char(&b, q, ps->err);
                ps->p++;
            }
            break;
        }
        if (c == '\n') {
            if (!multi) { k = perr(ps, "newline in a single-line string"); break; }
            ps->line++;
        }
        ps->p++;
        if (c == '\\' && q == '"') {
            if (multi && !at_end(ps) && (*ps->p == '\n' || *ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')) {
                /* line-ending backslash: drop whitespace and newlines up to the next text */
                while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
                    if (*ps->p == '\n') ps->line++;
                    ps->p++;
                }
                continue;
            }
            k = escape(ps, &b);
        } else if ((unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            k = perr(ps, "control character in a string");
        } else {
            k = df_buf_append_char(&b, c, ps->err);
        }
        if (k != DF_OK) break;
        if (b.len > MAX_BYTES) { k = perr(ps, "string too long"); break; }
    }
    if (k == DF_OK) {
        *out = df_arena_strndup(ps->arena, b.data ? b.data : "", b.len);
        *len = b.len;
        if (!*out) k = DF_OOM(ps->err);
    }
    df_buf_free(&b);
    return k;
}

/* One key part: bare or quoted. */
static df_errkind read_key_part(parser *ps, const char **out) {
    skip_ws(ps);
    if (at_end(ps)) return perr(ps, "expected a key");
    if (*ps->p == '"' || *ps->p == '\'') {
        size_t len;
        if (ps->end - ps->p >= 3 && ps->p[1] == ps->p[0] && ps->p[2] == ps->p[0]) return perr(ps, "multi-line keys are not allowed");
        return read_string(ps, out, &len);
    }
    const char *b = ps->p;
    while (!at_end(ps) && is_bare(*ps->p)) ps->p++;
    if (ps->p == b) return perr(ps, "expected a key");
    *out = df_arena_strndup(ps->arena, b, (size_t)(ps->p - b));
    return *out ? DF_OK : DF_OOM(ps->err);
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

static df_errkind read_value(parser *ps, tnode **out, int depth);

static df_errkind read_number_or_word(parser *ps, tnode **out) {
    const char *b = ps->p;
    while (!at_end(ps) && (is_bare(*ps->p) || *ps->p == '+' || *ps->p == '.' || *ps->p == ':')) ps->p++;
    size_t n = (size_t)(ps->p - b);
    char text[128];
    if (n == 0 || n >= sizeof text) return perr(ps, "expected a value");
    memcpy(text, b, n);
    text[n] = 0;
    tnode *v = NULL;
    if (!strcmp(text, "true") || !strcmp(text, "false")) {
        v = node_new(ps, T_BOOL);
        if (v) v->b = text[0] == 't';
    } else if (!strcmp(text, "inf") || !strcmp(text, "+inf") || !strcmp(text, "-inf") || !strcmp(text, "nan") ||
               !strcmp(text, "+nan") || !strcmp(text, "-nan")) {
        v = node_new(ps, T_FLOAT);
        if (v) v->f = strstr(text, "nan") ? NAN : text[0] == '-' ? -INFINITY : INFINITY;
    } else {
        if (strchr(text, ':') || (n >= 10 && text[4] == '-' && text[7] == '-'))
            return perr(ps, "dates and times are not supported in job files");
        char clean[128];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (text[i] == '_') {
                bool ok = i > 0 && i + 1 < n && text[i - 1] != '_' && text[i + 1] != '_';
                if (!ok) return perr(ps, "misplaced underscore in a number");
                continue;
            }
            clean[m++] = text[i];
        }
        clean[m] = 0;
        bool is_float = strpbrk(clean, ".eE") && !(clean[0] == '0' && (clean[1] == 'x'));
        char *endp = NULL;
        errno = 0;
        if (is_float) {
            v = node_new(ps, T_FLOAT);
            if (v) v->f = strtod(clean, &endp);
        } else {
            int base = 10;
            const char *digits = clean;
            bool neg = false;
            if (*digits == '+' || *digits == '-') neg = *digits++ == '-';
            if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
                base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
                if (neg || clean[0] == '+') return perr(ps, "signed non-decimal integer");
                digits += 2;
            } else if (digits[0] == '0' && digits[1]) {
                return perr(ps, "leading zeros in an integer");
            }
            if (!*digits) return perr(ps, "expected digits");
            v = node_new(ps, T_INT);
            if (v) {
                unsigned long long u = strtoull(digits, &endp, base);
                if (errno == ERANGE || u > (unsigned long long)INT64_MAX + (neg ? 1u : 0u))
                    return perr(ps, "integer out of range");
                v->i = neg ? (int64_t)(0 - u) : (int64_t)u;
            }
        }
        if (v && (!endp || *endp || errno == ERANGE)) return perr(ps, "invalid number");
    }
    if (!v) return DF_OOM(ps->err);
    *out = v;
    return DF_OK;
}

static df_errkind read_array(parser *ps, tnode **out, int depth) {
    ps->p++; /* [ */
    tnode *arr = node_new(ps, T_ARRAY);
    if (!arr) return DF_OOM(ps->err);
    arr->sealed = true;
    for (;;) {
        skip_ws_nl(ps);
        if (at_end(ps)) return perr(ps, "unterminated array");
        if (*ps->p == ']') {
            ps->p++;
            break;
        }
        tnode *item = NULL;
        DF_TRY(read_value(ps, &item, depth + 1));
        DF_TRY(add_child(ps, arr, item));
        skip_ws_nl(ps);
        if (at_end(ps)) return perr(ps, "unterminated array");
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != ']') return perr(ps, "expected `,` or `]` in an array");
    }
    *out = arr;
    return DF_OK;
}

static df_errkind set_dotted(parser *ps, tnode *table, int depth);

static df_errkind read_inline_table(parser *ps, tnode **out, int depth) {
    ps->p++; /* { */
    tnode *t = node_new(ps, T_TABLE);
    if (!t) return DF_OOM(ps->err);
    skip_ws(ps);
    if (!at_end(ps) && *ps->p == '}') {
        ps->p++;
    } else {
        for (;;) {
            DF_TRY(set_dotted(ps, t, depth + 1));
            skip_ws(ps);
            if (at_end(ps)) return perr(ps, "unterminated inline table");
            if (*ps->p == ',') {
                ps->p++;
                continue;
            }
            if (*ps->p == '}') {
                ps->p++;
                break;
            }
            return perr(ps, "expected `,` or `}` in an inline table");
        }
    }
    t->sealed = true;
    for (int32_t i = 0; i < t->n; i++) t->items[i]->sealed = true;
    *out = t;
    return DF_OK;
}

static df_errkind read_value(parser *ps, tnode **out, int depth) {
    if (depth > MAX_DEPTH) return perr(ps, "values nested too deeply");
    skip_ws(ps);
    if (at_end(ps)) return perr(ps, "expected a value");
    char c = *ps->p;
    if (c == '"' || c == '\'') {
        tnode *v = node_new(ps, T_STRING);
        if (!v) return DF_OOM(ps->err);
        DF_TRY(read_string(ps, &v->str, &v->len));
        *out = v;
        return DF_OK;
    }
    if (c == '[') return read_array(ps, out, depth);
    if (c == '{') return read_inline_table(ps, out, depth);
    return read_number_or_word(ps, out);
}

/* key(.key)* into parts[0..*n); `too_deep` names what nests past MAX_DEPTH. */
static df_errkind read_key_path(parser *ps, const char **parts, int *n, const char *too_deep) {
    *n = 0;
    for (;;) {
        if (*n == MAX_DEPTH) return perr(ps, too_deep);
        DF_TRY(read_key_part(ps, &parts[(*n)++]));
        skip_ws(ps);
        if (at_end(ps) || *ps->p != '.') return DF_OK;
        ps->p++;
    }
}

/* key(.key)* = value into `table` (creating implicit sub-tables for dotted keys). */
static df_errkind set_dotted(parser *ps, tnode *table, int depth) {
    const char *parts[MAX_DEPTH];
    int n;
    DF_TRY(read_key_path(ps, parts, &n, "key nested too deeply"));
    if (at_end(ps) || *ps->p != '=') return perr(ps, "expected `=` after a key");
    ps->p++;
    tnode *t = table;
    for (int i = 0; i + 1 < n; i++) {
        tnode *sub = find(t, parts[i]);
        if (!sub) {
            sub = node_new(ps, T_TABLE);
            if (!sub) return DF_OOM(ps->err);
            sub->key = parts[i];
            sub->implicit = true;
            DF_TRY(add_child(ps, t, sub));
        } else if (sub->kind != T_TABLE || sub->sealed || sub->header_defined) {
            return perr(ps, "a dotted key extends a value that is not an open table");
        }
        t = sub;
    }
    if (find(t, parts[n - 1])) return perr(ps, "a key is defined twice");
    tnode *v = NULL;
    DF_TRY(read_value(ps, &v, depth));
    v->key = parts[n - 1];
    return add_child(ps, t, v);
}

/* ------------------------------------------------------------------------ */
/* Headers                                                                   */

static df_errkind header(parser *ps) {
    bool aot = ps->end - ps->p >= 2 && ps->p[1] == '[';
    ps->p += aot ? 2 : 1;
    const char *parts[MAX_DEPTH];
    int n;
    DF_TRY(read_key_path(ps, parts, &n, "table name nested too deeply"));
    if (at_end(ps) || *ps->p != ']' || (aot && (ps->end - ps->p < 2 || ps->p[1] != ']')))
        return perr(ps, aot ? "expected `]]`" : "expected `]`");
    ps->p += aot ? 2 : 1;
    tnode *t = ps->root;
    for (int i = 0; i < n; i++) {
        bool last = i == n - 1;
        tnode *sub = find(t, parts[i]);
        if (last && aot) {
            if (!sub) {
                sub = node_new(ps, T_ARRAY);
                if (!sub) return DF_OOM(ps->err);
                sub->key = parts[i];
                sub->aot = true;
                DF_TRY(add_child(ps, t, sub));
            } else if (sub->kind != T_ARRAY || !sub->aot) {
                return perr(ps, "[[array]] names a value that is not an array of tables");
            }
            tnode *elem = node_new(ps, T_TABLE);
            if (!elem) return DF_OOM(ps->err);
            elem->header_defined = true;
            DF_TRY(add_child(ps, sub, elem));
            ps->current = elem;
            return end_of_line(ps);
        }
        if (!sub) {
            sub = node_new(ps, T_TABLE);
            if (!sub) return DF_OOM(ps->err);
            sub->key = parts[i];
            sub->implicit = !last;
            DF_TRY(add_child(ps, t, sub));
        } else if (sub->kind == T_ARRAY && sub->aot && sub->n > 0) {
            if (last) return perr(ps, "a table header names an array of tables");
            sub = sub->items[sub->n - 1]; /* [a.b] after [[a]] extends the last element */
        } else if (sub->kind != T_TABLE || sub->sealed) {
            return perr(ps, "a table header names a value that is not a table");
        } else if (last) {
            if (sub->header_defined || !sub->implicit) return perr(ps, "a table is defined twice");
            sub->implicit = false;
        }
        if (last) sub->header_defined = true;
        t = sub;
    }
    ps->current = t;
    return end_of_line(ps);
}

/* ------------------------------------------------------------------------ */
/* JSON output                                                               */

static void emit(df_json_writer *w, const tnode *v) {
    switch (v->kind) {
    case T_TABLE:
        df_json_object_begin(w);
        for (int32_t i = 0; i < v->n; i++) {
            df_json_key(w, v->items[i]->key);
            emit(w, v->items[i]);
        }
        df_json_object_end(w);
        break;
    case T_ARRAY:
        df_json_array_begin(w);
        for (int32_t i = 0; i < v->n; i++) emit(w, v->items[i]);
        df_json_array_end(w);
        break;
    case T_STRING: df_json_write_string_n(w, v->str, v->len); break;
    case T_INT: df_json_write_int(w, v->i); break;
    case T_FLOAT:
        if (isfinite(v->f))
            df_json_write_double(w, v->f);
        else
            df_json_write_null(w); /* JSON has no inf/nan; no job key takes a float */
        break;
    case T_BOOL: df_json_write_bool(w, v->b); break;
    }
}

df_errkind df__job_toml_to_json(const char *text, size_t len, char **json, df_error *err) {
    *json = NULL;
    if (len > MAX_BYTES) return df_error_set(err, DF_ERR_CONFIG, "job file larger than 16 MiB");
    df_arena arena;
    df_arena_init(&arena, 64 << 10, MAX_BYTES * 8);
    parser ps = {text, text + len, 1, &arena, err, NULL, NULL};
    df_errkind k = DF_OK;
    ps.root = node_new(&ps, T_TABLE);
    if (!ps.root) k = DF_OOM(err);
    ps.current = ps.root;
    if (k == DF_OK && len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) ps.p += 3; /* BOM */
    while (k == DF_OK) {
        skip_ws_nl(&ps);
        if (at_end(&ps)) break;
        if (memchr(ps.p, 0, (size_t)(ps.end - ps.p)) == ps.p) {
            k = perr(&ps, "NUL byte in the job file");
            break;
        }
        if (*ps.p == '[') {
            k = header(&ps);
        } else {
            k = set_dotted(&ps, ps.current, 0);
            if (k == DF_OK) k = end_of_line(&ps);
        }
    }
    if (k == DF_OK) {
        df_buf out;
        df_buf_init(&out, 0);
        df_json_writer w;
        df_json_writer_init(&w, &out, 0);
        emit(&w, ps.root);
        k = df_json_writer_finish(&w, err);
        if (k == DF_OK) {
            *json = df_buf_take(&out);
            if (!*json) k = DF_OOM(err);
        }
        df_buf_free(&out);
    }
    df_arena_destroy(&arena);
    return k;
}
