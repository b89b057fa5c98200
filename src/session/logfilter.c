/*
 * Logging filters in the reference syntax (tracing's EnvFilter):
 *
 *   filter    = directive ("," directive)*
 *   directive = level | target | target "=" level | target "[" spans "]" ("=" level)?
 *   level     = off | error | warn | info | debug | trace | 0..5   (any case)
 *
 * Targets are Rust-like module paths ("delta_funnel", "object_store",
 * "tiberius_raw_bulk::protocol").  Only validation lives here: the filter
 * text decides which native events reach Python logging.
 */
#include "session/session_int.h"

static const char level_error[] =
    "invalid DeltaFunnel logging filter: error parsing level filter: expected one of \"off\", \"error\", \"warn\", "
    "\"info\", \"debug\", \"trace\", or a number 0-5";

static bool is_level(const char *s, size_t n) {
    static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};
    if (n == 1 && s[0] >= '0' && s[0] <= '5') return true;
    for (size_t i = 0; i < DF_ARRAY_LEN(names); i++)
        if (strlen(names[i]) == n && df_ascii_ncasecmp(s, names[i], n) == 0) return true;
    return false;
}

static bool is_target(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == ':' || c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

/* Validates one directive s[0..n) (already trimmed, non-empty). */
static df_errkind check_directive(const char *s, size_t n, df_error *err) {
    /* A span filter "[...]" may itself hold '=': the level separator comes after its ']'. */
    const char *br = memchr(s, '[', n);
    const char *eq = memchr(s, '=', n);
    size_t tlen;
    if (br && (!eq || br < eq)) {
        const char *close = memchr(br, ']', n - (size_t)(br - s));
        if (!close) goto invalid;
        size_t after = (size_t)(close - s) + 1;
        if (after < n && s[after] != '=') goto invalid;
        eq = after < n ? s + after : NULL;
        tlen = (size_t)(br - s);
        if (tlen == 0 && !eq) goto invalid;
    } else {
        tlen = eq ? (size_t)(eq - s) : n;
    }
    if (eq) {
        if (tlen > 0 && !is_target(s, tlen)) goto invalid;
        if (!is_level(eq + 1, n - (size_t)(eq - s) - 1)) {
            df_error_set(err, DF_ERR_INVALID_LOGGING_FILTER, "%s", level_error);
            df_error_set_origin(err, "session");
            return DF_ERR_INVALID_LOGGING_FILTER;
        }
        return DF_OK;
    }
    if (is_level(s, n) || (tlen > 0 && is_target(s, tlen))) return DF_OK;
invalid:
    df_error_set(err, DF_ERR_INVALID_LOGGING_FILTER, "invalid DeltaFunnel logging filter: invalid filter directive");
    df_error_set_origin(err, "session");
    return DF_ERR_INVALID_LOGGING_FILTER;
}

df_errkind df_log_filter_validate(const char *filter, df_error *err) {
    if (!filter) return DF_OK;
    const char *p = filter;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *s = p;
        size_t len = n;
        while (len > 0 && (*s == ' ' || *s == '\t')) s++, len--;
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
        if (len > 0) DF_TRY(check_directive(s, len, err));
        p += n;
        if (*p == ',') p++;
    }
    return DF_OK;
}
