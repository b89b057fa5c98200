/*
 * Text rules shared by the session layer: the reference's escaping of
 * free text in messages (Rust char::escape_default), location sanitizing,
 * HTML escaping, and the source/alias name rules.
 *
 * Escaping walks UTF-8 by code point; bytes that are not valid UTF-8 are
 * shown as \u{fffd} so a message can never carry raw control bytes.  The
 * control-only form keeps a message on one line without touching what
 * reads fine (quotes, backslashes, accented letters): it is what a failed
 * stage's cause gets, once, whatever layers it went through.
 */
#include "session/session_int.h"

#include <stdio.h>

df_errkind df__session_escape_text(df_buf *out, const char *text, size_t n, df_error *err) {
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = df_utf8_decode(s + i, n - i, &cp);
        i += len;
        switch (cp) {
        case '\t': DF_TRY(df_buf_append(out, "\\t", 2, err)); continue;
        case '\r': DF_TRY(df_buf_append(out, "\\r", 2, err)); continue;
        case '\n': DF_TRY(df_buf_append(out, "\\n", 2, err)); continue;
        case '\'': DF_TRY(df_buf_append(out, "\\'", 2, err)); continue;
        case '"': DF_TRY(df_buf_append(out, "\\\"", 2, err)); continue;
        case '\\': DF_TRY(df_buf_append(out, "\\\\", 2, err)); continue;
        default: break;
        }
        if (cp >= 0x20 && cp <= 0x7E)
            DF_TRY(df_buf_append_char(out, (char)cp, err));
        else
            DF_TRY(df_buf_printf(out, err, "\\u{%x}", (unsigned)cp));
    }
    return DF_OK;
}

void df__session_escape_controls_into(char *dst, size_t size, const char *text) {
    if (size == 0) return;
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text), i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = df_utf8_decode(s + i, n - i, &cp);
        char esc[16];
        const char *piece = (const char *)s + i;
        size_t plen = len;
        if (cp == '\t' || cp == '\r' || cp == '\n') {
            snprintf(esc, sizeof esc, "\\%c", cp == '\t' ? 't' : cp == '\r' ? 'r' : 'n');
            piece = esc, plen = 2;
        } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xFFFD) {
            /* control characters, and bytes that are not UTF-8 (decoded as U+FFFD) */
            plen = (size_t)snprintf(esc, sizeof esc, "\\u{%x}", (unsigned)cp);
            piece = esc;
        }
        if (o + plen >= size) break; /* what fits is kept, never half a character */
        memcpy(dst + o, piece, plen);
        o += plen;
        i += len;
    }
    dst[o] = '\0';
}

void df__session_escape_into(char *dst, size_t size, const char *text) {
    df_buf b;
    df_buf_init(&b, size > 1 ? size - 1 : 1);
    if (size == 0) return;
    dst[0] = '\0';
    /* A full buffer stops the escape early; what fits is kept. */
    (void)df__session_escape_text(&b, text, strlen(text), NULL);
    if (b.data) {
        size_t n = DF_MIN(b.len, size - 1);
        memcpy(dst, b.data, n);
        dst[n] = '\0';
    }
    df_buf_free(&b);
}

/*
 * Sanitizing: cut at the first '?' or '#'; inside the authority (after
 * "scheme://" up to the next '/'), drop everything up to the last '@'.
 */
df_errkind df__session_sanitize_uri(df_buf *out, const char *uri, df_error *err) {
    size_t n = strcspn(uri, "?#");
    const char *sep = NULL;
    for (size_t i = 0; i + 2 < n; i++) {
        if (uri[i] == ':' && uri[i + 1] == '/' && uri[i + 2] == '/') {
            sep = uri + i + 3;
            break;
        }
        if (uri[i] == '/') break;   /* a path before any scheme separator */
    }
    if (!sep) return df__session_escape_text(out, uri, n, err);
    size_t scheme_len = (size_t)(sep - uri);
    size_t rest = n - scheme_len;
    size_t auth_len = 0;
    while (auth_len < rest && sep[auth_len] != '/') auth_len++;
    size_t host_start = 0;
    for (size_t i = 0; i < auth_len; i++)
        if (sep[i] == '@') host_start = i + 1;
    DF_TRY(df__session_escape_text(out, uri, scheme_len, err));
    return df__session_escape_text(out, sep + host_start, rest - host_start, err);
}

/* Words that may not name a source or alias (compared case-insensitively), sorted. */
static const char *const reserved_words[] = {
    "all", "alter", "analyze", "and", "anti", "as", "asof", "by", "case", "connect", "cross",
    "delete", "distinct", "distribute", "drop", "else", "end", "except", "exists", "explain",
    "false", "fetch", "for", "format", "from", "full", "global", "group", "having", "in",
    "inner", "insert", "intersect", "into", "is", "join", "lateral", "left", "like", "limit",
    "minus", "natural", "not", "null", "offset", "on", "open", "or", "order", "outer",
    "partition", "pivot", "prewhere", "qualify", "returning", "right", "sample", "select",
    "semi", "set", "settings", "sort", "start", "table", "tablesample", "then", "top", "true",
    "union", "unpivot", "update", "using", "values", "view", "when", "where", "window", "with",
};

bool df__session_is_reserved_word(const char *name) {
    size_t lo = 0, hi = DF_ARRAY_LEN(reserved_words);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = df_ascii_casecmp(name, reserved_words[mid]);
        if (c == 0) return true;
        if (c < 0) hi = mid; else lo = mid + 1;
    }
    return false;
}

static bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

df_errkind df__session_check_name(const char *name, df_error *err) {
    const char *reason = NULL;
    if (!name || !*name) {
        reason = "source names must not be empty";
    } else if (!is_ascii_alpha(name[0]) && name[0] != '_') {
        reason = "source names must start with an ASCII letter or underscore";
    } else {
        for (const char *p = name + 1; *p; p++) {
            if (!is_ascii_alpha(*p) && !is_ascii_digit(*p) && *p != '_') {
                reason = "source names may contain only ASCII letters, digits, and underscores";
                break;
            }
        }
        if (!reason && df__session_is_reserved_word(name)) reason = "source names must not be SQL keywords";
    }
    if (!reason) return DF_OK;
    char shown[160];
    df__session_escape_into(shown, sizeof shown, name ? name : "");
    df_error_set(err, DF_ERR_INVALID_SOURCE_NAME, "invalid Delta source name `%s`: %s", shown, reason);
    df_error_set_origin(err, "session");
    return DF_ERR_INVALID_SOURCE_NAME;
}
