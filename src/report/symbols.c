/*
 * View helpers over names: compact native symbols, mapping basenames and
 * source-path normalisation, and the three
 * escapings the renderers need (terminal, JSON inside <script>, HTML).
 *
 * Compact symbols.  A demangled symbol is scanned once, left to right, with
 * one nesting depth for <>, (), [] and {}.  `<` does not nest when it is
 * part of an `operator<`, `operator<<`, `operator<=` or `operator<=>` token,
 * and `>` does not close after `-` or `=` (`->`, `=>`), so C++ operators
 * and Rust closures' `fn() -> T` do not derail the depth.  The last `::` at
 * depth 0 that is not a turbofish (`::<`) separates the owner from the
 * method; the method loses its generic arguments and parameter list, the
 * owner keeps only its last path segment (the inside of `<T as Trait>` up
 * to ` as `), so `<tokio::...::BlockingTask<F> as Future>::poll` reads
 * `BlockingTask::poll`.  GCC clone suffixes (`.constprop.0`, `.isra.0`,
 * `.part.1`, `.cold`) and LLVM's `.llvm.N` are dropped first.
 */
#include "report/report_int.h"

#include "report/utf8.h"

#include <stdarg.h>
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Compact symbols.                                                          */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/*
 * If s[i] == '<' starts an operator token (the text from `seg` to i is
 * "operator" followed only by '<'), returns the index after the run of
 * '<'; else returns 0.
 */
static size_t operator_lt_end(const char *s, size_t n, size_t seg, size_t i) {
    if (i < seg + 8 || memcmp(s + seg, "operator", 8) != 0) return 0;
    for (size_t k = seg + 8; k < i; k++)
        if (s[k] != '<') return 0;
    size_t j = i;
    while (j < n && s[j] == '<') j++;
    if (j == n || is_space(s[j]) || s[j] == '=' || s[j] == '(') return j;
    return 0;
}

/* Returns true when s[0..n) starts with `word`. */
static bool starts_with(const char *s, size_t n, const char *word) {
    size_t m = strlen(word);
    return n >= m && memcmp(s, word, m) == 0;
}

/*
 * Position of the last top-level `::` that is not a turbofish, or SIZE_MAX.
 * Also tracks operator tokens relative to the current path segment.
 */
static size_t last_separator(const char *s, size_t n) {
    size_t depth = 0, seg = 0, last = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<') {
            size_t end = depth == 0 ? operator_lt_end(s, n, seg, i) : 0;
            if (end) {
                i = end - 1;
                continue;
            }
            depth++;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if (c == '>') {
            if (i > 0 && (s[i - 1] == '-' || s[i - 1] == '=')) continue;
            if (depth) depth--;
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth) depth--;
        } else if (c == ':' && depth == 0 && i + 1 < n && s[i + 1] == ':') {
            if (!(i + 2 < n && s[i + 2] == '<')) {
                last = i;
                seg = i + 2;
            }
            i++;
        }
    }
    return last;
}

/*
 * Strips generic arguments and parameters from a method or bare name: cut
 * at the first '<' outside ()/[]/{} that is not an operator token
 * (trimming a trailing "::"), or at the first top-level '(' that is not the
 * "()" of `operator()`.  Returns the kept length.
 */
static size_t strip_details(const char *s, size_t n) {
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<' && depth == 0) {
            size_t end = operator_lt_end(s, n, 0, i);
            if (end) {
                i = end - 1;
                continue;
            }
            size_t k = i;
            if (k >= 2 && s[k - 1] == ':' && s[k - 2] == ':') k -= 2;
            return k;
        }
        if (c == '(' && depth == 0) {
            if (i >= 8 && i + 1 < n && s[i + 1] == ')' && memcmp(s + i - 8, "operator", 8) == 0) {
                i++;
                continue;
            }
            return i;
        }
        if (c == '[' || c == '{' || c == '(') depth++;
        else if ((c == ']' || c == '}' || c == ')') && depth) depth--;
    }
    return n;
}

/* Trims ASCII whitespace on both ends of [*s, *s+*n). */
static void trim(const char **s, size_t *n) {
    while (*n && is_space(**s)) (*s)++, (*n)--;
    while (*n && is_space((*s)[*n - 1])) (*n)--;
}

/* Reduces an owner to its type name: `<T as Trait>` to T, then without its path, return type or `&`/`*`/`mut`. */
static void owner_name(const char **ps, size_t *pn) {
    const char *s = *ps;
    size_t n = *pn;
    trim(&s, &n);
    if (n >= 2 && s[0] == '<' && s[n - 1] == '>') {
        s++, n -= 2;
        /* Up to a top-level " as ". */
        size_t depth = 0;
        for (size_t i = 0; i + 4 <= n; i++) {
            char c = s[i];
            if (c == '<' || c == '(' || c == '[' || c == '{') depth++;
            else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth &&
                     !(c == '>' && i > 0 && (s[i - 1] == '-' || s[i - 1] == '=')))
                depth--;
            else if (depth == 0 && memcmp(s + i, " as ", 4) == 0) {
                n = i;
                break;
            }
        }
        trim(&s, &n);
    }
    size_t sep = last_separator(s, n);
    if (sep != SIZE_MAX) s += sep + 2, n -= sep + 2;
    /* A return type or qualifier before the name ("void std") keeps only the name. */
    size_t depth = 0, space = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<' || c == '(' || c == '[' || c == '{') depth++;
        else if ((c == '>' || c == ')' || c == ']' || c == '}') && depth) depth--;
        else if (depth == 0 && is_space(c) && i + 1 < n) space = i;
    }
    if (space != SIZE_MAX) s += space + 1, n -= space + 1;
    for (bool again = true; again;) {
        again = false;
        trim(&s, &n);
        if (n && (s[0] == '&' || s[0] == '*')) s++, n--, again = true;
        else if (starts_with(s, n, "mut ")) s += 4, n -= 4, again = true;
        else if (starts_with(s, n, "const ")) s += 6, n -= 6, again = true;
    }
    for (size_t i = 0; i < n; i++)
        if (s[i] == '<') {
            n = i;
            break;
        }
    trim(&s, &n);
    *ps = s;
    *pn = n;
}

/* Drops " (.llvm.N)", ".llvm.N" and GCC clone suffixes from the end. */
static size_t drop_suffixes(const char *s, size_t n) {
    for (bool again = true; again;) {
        again = false;
        size_t k = n;
        while (k && s[k - 1] >= '0' && s[k - 1] <= '9') k--;
        if (n >= 2 && s[n - 1] == ')') {
            size_t d = n - 1;
            while (d && s[d - 1] >= '0' && s[d - 1] <= '9') d--;
            if (d < n - 1 && d >= 8 && memcmp(s + d - 8, " (.llvm.", 8) == 0) {
                n = d - 8;
                again = true;
                continue;
            }
        }
        static const char *const clones[] = {".llvm.", ".constprop.", ".isra.", ".part.", ".lto_priv."};
        for (size_t c = 0; c < DF_ARRAY_LEN(clones); c++) {
            size_t m = strlen(clones[c]);
            if (k < n && k >= m && memcmp(s + k - m, clones[c], m) == 0 && k - m > 0) {
                n = k - m;
                again = true;
                break;
            }
        }
        if (!again && n > 5 && memcmp(s + n - 5, ".cold", 5) == 0) {
            n -= 5;
            again = true;
        }
    }
    return n;
}

df_errkind df__report_compact_symbol(const char *sym, size_t len, df_buf *out) {
    df_buf_reset(out);
    size_t n = drop_suffixes(sym, len);
    size_t sep = last_separator(sym, n);
    if (sep == SIZE_MAX) {
        size_t k = strip_details(sym, n);
        const char *s = sym;
        trim(&s, &k);
        if (k == 0) return df_buf_append(out, sym, len, NULL);
        return df_buf_append(out, s, k, NULL);
    }
    const char *method = sym + sep + 2;
    size_t mlen = strip_details(method, n - sep - 2);
    trim(&method, &mlen);
    const char *owner = sym;
    size_t olen = sep;
    owner_name(&owner, &olen);
    if (mlen == 0 || olen == 0) return df_buf_append(out, sym, len, NULL);
    DF_TRY(df_buf_append(out, owner, olen, NULL));
    DF_TRY(df_buf_append(out, "::", 2, NULL));
    return df_buf_append(out, method, mlen, NULL);
}

df_errkind df_report_compact_symbol(const char *symbol, size_t len, df_buf *out, df_error *err) {
    df_buf tmp;
    df_buf_init(&tmp, 0);
    df_errkind k = df__report_compact_symbol(symbol, len, &tmp);
    if (k == DF_OK && tmp.len) k = df_buf_append(out, tmp.data, tmp.len, err);
    else if (k != DF_OK) df_error_set(err, k, "out of memory");
    df_buf_free(&tmp);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Paths.                                                                    */

/* A path segment that must not appear in a normalised path. */
static bool unsafe_segment(const char *s, size_t n) {
    if (n == 0) return true;
    if (n == 1 && s[0] == '.') return true;
    if (n == 2 && s[0] == '.' && s[1] == '.') return true;
    if (s[0] == '~') return true;
    if (n >= 2 && s[1] == ':' && ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'))) return true;
    return false;
}

/* Last segment of path (after the last '/' or '\\'). */
static void basename_of(const char *path, size_t len, size_t *off, size_t *n) {
    size_t i = len;
    while (i && path[i - 1] != '/' && path[i - 1] != '\\') i--;
    *off = i;
    *n = len - i;
}

void df__report_module_name(const char *path, size_t len, size_t *off, size_t *n) {
    basename_of(path, len, off, n);
    if (*n == 0 || unsafe_segment(path + *off, *n)) {
        *n = 0;
        return;
    }
    *n = df_utf8_cut((const uint8_t *)path + *off, *n, 255);
}

static const char *const MARKERS[] = {"benches", "crates", "examples", "src", "tests", "xtask"};

static bool is_marker(const char *s, size_t n, bool src_only) {
    for (size_t i = 0; i < DF_ARRAY_LEN(MARKERS); i++) {
        if (src_only && strcmp(MARKERS[i], "src") != 0) continue;
        if (strlen(MARKERS[i]) == n && memcmp(MARKERS[i], s, n) == 0) return true;
    }
    return false;
}

/* Appends the basename when it is safe; false when the path must be dropped. */
static bool keep_basename(const char *path, size_t len, df_buf *out) {
    size_t off, n;
    basename_of(path, len, &off, &n);
    if (unsafe_segment(path + off, n) || n > DF_REPORT_MAX_FIELD_CHARS) return false;
    return df_buf_append(out, path + off, n, NULL) == DF_OK;
}

bool df__report_source_path(const char *path, size_t len, df_buf *out) {
    df_buf_reset(out);
    if (len == 0) return false;
    bool absolute = path[0] == '/';
    size_t start = absolute ? 1 : 0;
    /* Scan segments: find "..", the last marker, the last "src", unsafe segments. */
    size_t last_marker = SIZE_MAX, last_src = SIZE_MAX, first_end = SIZE_MAX;
    bool dotdot = false, first_is_marker = false;
    for (size_t i = start; i <= len;) {
        size_t j = i;
        while (j < len && path[j] != '/' && path[j] != '\\') j++;
        const char *seg = path + i;
        size_t n = j - i;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') dotdot = true;
        if (is_marker(seg, n, false)) last_marker = i;
        if (is_marker(seg, n, true)) last_src = i;
        if (first_end == SIZE_MAX) {
            first_end = j;
            first_is_marker = is_marker(seg, n, false);
        }
        if (j == len) break;
        i = j + 1;
    }
    if (dotdot) return keep_basename(path, len, out);
    size_t from;
    if (absolute) from = last_marker;
    else if (first_is_marker) from = 0;
    else from = last_src;
    if (from == SIZE_MAX) return keep_basename(path, len, out);
    /* The kept part must be made of safe segments and fit the field bound. */
    for (size_t i = from; i <= len;) {
        size_t j = i;
        while (j < len && path[j] != '/' && path[j] != '\\') j++;
        if (unsafe_segment(path + i, j - i)) return keep_basename(path, len, out);
        if (j == len) break;
        i = j + 1;
    }
    if (len - from > DF_REPORT_MAX_FIELD_CHARS) return keep_basename(path, len, out);
    return df_buf_append(out, path + from, len - from, NULL) == DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Escaping.                                                                 */

/* Bidi controls and zero-width characters the terminal escaping hides. */
static bool invisible(uint32_t cp) {
    return cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

df_errkind df__report_term_escape(df_buf *out, const char *s, size_t len) {
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, run = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = df_utf8_next(p + i, len - i, &cp);
        bool plain = k && cp != '\\' && cp != '"' && cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp <= 0x9F) &&
                     !invisible(cp);
        if (plain) {
            i += k;
            continue;
        }
        DF_TRY(df_buf_append(out, s + run, i - run, NULL));
        if (!k) {
            DF_TRY(df_buf_printf(out, NULL, "\\u{%X}", (unsigned)0xFFFD));
            k = 1;
        } else if (cp == '\\' || cp == '"') {
            DF_TRY(df_buf_append_char(out, '\\', NULL));
            DF_TRY(df_buf_append_char(out, (char)cp, NULL));
        } else {
            DF_TRY(df_buf_printf(out, NULL, "\\u{%X}", (unsigned)cp));
        }
        i += k;
        run = i;
    }
    return df_buf_append(out, s + run, len - run, NULL);
}

df_errkind df__report_json_string(df_buf *out, const char *s, size_t len) {
    DF_TRY(df_buf_reserve(out, len + 2, NULL));
    DF_TRY(df_buf_append_char(out, '"', NULL));
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[8];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\t') esc = "\\t";
        else if (c == '\r') esc = "\\r";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            esc = tmp;
        } else if (c == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
                   ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
            esc = (unsigned char)s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            DF_TRY(df_buf_append(out, s + run, i - run, NULL));
            DF_TRY(df_buf_append_str(out, esc, NULL));
            i += 2;
            run = i + 1;
            continue;
        }
        if (!esc) continue;
        DF_TRY(df_buf_append(out, s + run, i - run, NULL));
        DF_TRY(df_buf_append_str(out, esc, NULL));
        run = i + 1;
    }
    DF_TRY(df_buf_append(out, s + run, len - run, NULL));
    return df_buf_append_char(out, '"', NULL);
}

df_errkind df__report_html_escape(df_buf *out, const char *s, size_t len) {
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        const char *esc;
        switch (s[i]) {
        case '&': esc = "&amp;"; break;
        case '<': esc = "&lt;"; break;
        case '>': esc = "&gt;"; break;
        case '"': esc = "&quot;"; break;
        case '\'': esc = "&#39;"; break;
        default: continue;
        }
        DF_TRY(df_buf_append(out, s + run, i - run, NULL));
        DF_TRY(df_buf_append_str(out, esc, NULL));
        run = i + 1;
    }
    return df_buf_append(out, s + run, len - run, NULL);
}

/* ------------------------------------------------------------------------ */
/* Errors.                                                                   */

df_errkind df__report_fail(df_error *err, df_errkind kind, const char *phase, const char *fmt, ...) {
    if (!err) return kind;
    va_list ap;
    va_start(ap, fmt);
    df_error_setv(err, kind, fmt, ap);
    va_end(ap);
    df_error_set_phase(err, phase);
    df_error_set_origin(err, "report");
    return kind;
}
