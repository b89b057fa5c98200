/*
 * Text rules shared by the session layer: the reference's escaping of
 * free text in messages (Rust char::escape_default), location sanitizing,
 * HTML escaping, and the source/alias name rules.
 *
 * Escaping walks UTF-8 by code point; bytes that are not valid UTF-8 are
 * shown as \u{fffd} so a message can never carry raw control bytes.
 */
#include "session/session_int.h"

/* Decodes one UTF-8 code point at s[0..n); returns its length (>= 1) and the
 * code point, or length 1 and U+FFFD for an invalid sequence. */
size_t df__session_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2; v = c & 0x1F; min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3; v = c & 0x0F; min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4; v = c & 0x07; min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (len > n) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return len;
}

df_errkind df__session_escape_text(df_buf *out, const char *text, size_t n, df_error *err) {
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = df__session_utf8_decode(s + i, n - i, &cp);
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

df_errkind df__session_html_escape(df_buf *out, const char *s, size_t n, df_error *err) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: continue;
        }
        if (i > run) DF_TRY(df_buf_append(out, s + run, i - run, err));
        DF_TRY(df_buf_append_str(out, rep, err));
        run = i + 1;
    }
    if (n > run) DF_TRY(df_buf_append(out, s + run, n - run, err));
    return DF_OK;
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

df_errkind df__session_buf_take_len(df_buf *b, char **out, size_t *len, df_error *err) {
    if (len) *len = b->len;
    return df__session_buf_take(b, out, err);
}

df_errkind df__session_buf_take(df_buf *b, char **out, df_error *err) {
    if (!b->data) {
        /* An empty result still needs a string the caller can free. */
        *out = df_strdup("");
        if (!*out) return DF_OOM(err);
        return DF_OK;
    }
    *out = df_buf_take(b);
    return DF_OK;
}
