/*
 * Delta source arguments and locations.
 *
 * df_delta_source holds what Session.delta_lake was given, checked without
 * any I/O.  At registration the location is resolved: local paths (plain,
 * relative, or file: URIs) become absolute canonical directories, other
 * schemes are passed to the storage layer unchanged.  A local path that
 * cannot be resolved is invalid_source_uri, as in the reference, with a
 * message that says why (it does not exist, it is a symlink loop,
 * permission is denied).  The display form shown in reprs and messages
 * never carries userinfo, queries or fragments.
 */
#include "session/session_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

struct df_delta_source {
    char *uri;          /* as given, owned */
    char *display;      /* sanitized and escaped, owned */
    int64_t version;    /* -1 = latest */
    size_t nopts;       /* storage options */
    char **keys;        /* owned strings */
    char **values;      /* owned strings; secrets: never printed */
};

void df_delta_source_free(df_delta_source *src) {
    if (!src) return;
    for (size_t i = 0; i < src->nopts; i++) {
        df_free(src->keys[i]);
        if (src->values[i]) {
            volatile char *p = src->values[i];
            while (*p) *p++ = '\0';
            df_free(src->values[i]);
        }
    }
    df_free(src->keys);
    df_free(src->values);
    df_free(src->uri);
    df_free(src->display);
    df_free(src);
}

static df_errkind source_error(df_error *err, df_errkind kind, const char *msg) {
    df_error_set(err, kind, "%s", msg);
    df_error_set_origin(err, "session");
    return kind;
}

static df_errkind copy_options(df_delta_source *src, const df_value *opts, df_error *err) {
    if (!opts || opts->kind == DF_VALUE_NONE) return DF_OK;
    if (opts->kind != DF_VALUE_MAP)
        return source_error(err, DF_ERR_INVALID_STORAGE_OPTIONS, "`storage_options` must map strings to strings");
    for (size_t i = 0; i < opts->nentries; i++) {
        if (opts->entries[i].key.kind != DF_VALUE_STRING)
            return source_error(err, DF_ERR_INVALID_STORAGE_OPTIONS, "`storage_options` keys must be strings");
        if (opts->entries[i].value.kind != DF_VALUE_STRING)
            return source_error(err, DF_ERR_INVALID_STORAGE_OPTIONS, "`storage_options` values must be strings");
    }
    size_t n = opts->nentries;
    src->keys = df_calloc(n ? n : 1, sizeof(char *));
    src->values = df_calloc(n ? n : 1, sizeof(char *));
    if (!src->keys || !src->values) return DF_OOM(err);
    for (size_t i = 0; i < n; i++) {
        src->keys[i] = df_strdup(opts->entries[i].key.s);
        src->values[i] = df_strdup(opts->entries[i].value.s);
        src->nopts = i + 1;
        if (!src->keys[i] || !src->values[i]) return DF_OOM(err);
    }
    return DF_OK;
}

df_errkind df_delta_source_new(const char *uri, const df_value *version, const df_value *storage_options,
                               df_delta_source **out, df_error *err) {
    *out = NULL;
    if (!uri || !*uri) return source_error(err, DF_ERR_INVALID_SOURCE_URI, "`source_uri` must not be empty");
    int64_t v = -1;
    if (version && version->kind != DF_VALUE_NONE) {
        if (version->kind != DF_VALUE_INT || version->i < 0)
            return source_error(err, DF_ERR_INVALID_VERSION, "`version` must be a non-negative integer");
        v = version->i;
    }
    df_delta_source *src = df_calloc(1, sizeof *src);
    if (!src) return DF_OOM(err);
    src->version = v;
    df_errkind k = copy_options(src, storage_options, err);
    if (k == DF_OK) {
        src->uri = df_strdup(uri);
        if (!src->uri) k = DF_OOM(err);
    }
    if (k == DF_OK) {
        df_buf b;
        df_buf_init(&b, 0);
        k = df__session_sanitize_uri(&b, uri, err);
        if (k == DF_OK) k = df_buf_take_text(&b, &src->display, NULL, err);
        df_buf_free(&b);
    }
    if (k != DF_OK) {
        df_delta_source_free(src);
        return k;
    }
    *out = src;
    return DF_OK;
}

const char *df_delta_source_display_uri(const df_delta_source *src) { return src->display; }

int64_t df_delta_source_version(const df_delta_source *src) { return src->version; }

df_errkind df_delta_source_repr(const df_delta_source *src, char **out, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "deltafunnel.PendingDeltaSource(source_uri=\"%s\", snapshot_version=",
                                 src->display);
    if (k == DF_OK)
        k = src->version < 0 ? df_buf_append_str(&b, "None)", err)
                             : df_buf_printf(&b, err, "%lld)", (long long)src->version);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

void df__session_source_options(const df_delta_source *src, const char *const **keys,
                                const char *const **values, size_t *n) {
    *keys = (const char *const *)src->keys;
    *values = (const char *const *)src->values;
    *n = src->nopts;
}

const char *df__session_source_uri(const df_delta_source *src) { return src->uri; }

/* ------------------------------------------------------------------------ */
/* Location resolution                                                       */

/* Length of a URI scheme ("s3" in "s3://..."), or 0 when `uri` has none. */
static size_t scheme_length(const char *uri) {
    size_t i = 0;
    if (!((uri[0] >= 'a' && uri[0] <= 'z') || (uri[0] >= 'A' && uri[0] <= 'Z'))) return 0;
    while (uri[i] && uri[i] != ':') {
        char c = uri[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
                  c == '-' || c == '.';
        if (!ok) return 0;
        i++;
    }
    /* One letter before ':' would be a drive letter; we treat it as no scheme. */
    return uri[i] == ':' && i > 1 ? i : 0;
}

/* Appends the path percent-encoded as a URL path (unreserved characters and '/' kept). */
static df_errkind append_url_path(df_buf *b, const char *path, df_error *err) {
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        unsigned char c = *p;
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("/-._~!$&'()*+,;=:@", c) != NULL;
        if (keep)
            DF_TRY(df_buf_append_char(b, (char)c, err));
        else
            DF_TRY(df_buf_printf(b, err, "%%%02X", c));
    }
    return DF_OK;
}

static df_errkind bad_location(df_error *err) {
    return source_error(err, DF_ERR_INVALID_SOURCE_URI,
                        "invalid Delta source URI: table location could not be parsed or normalized");
}

/*
 * A local location realpath could not resolve: the kind stays
 * invalid_source_uri (the reference's pair), the message says what is
 * wrong and names the path (escaped), and the finer kind goes to the
 * subkind, the context (`{"cause_kind": ..., "errno": N}`) and errno to
 * `code`, so callers tell the cases apart without reading the message.
 * Other errno values keep the reference's generic message.
 */
static df_errkind unresolvable_location(df_error *err, const char *path, int e) {
    df_errkind sub;
    const char *what;
    switch (e) {
    case ENOENT:
    case ENOTDIR: sub = DF_ERR_LOCATION_NOT_FOUND; what = "does not exist"; break;
    case ELOOP: sub = DF_ERR_LOCATION_SYMLINK_LOOP; what = "is a symlink loop"; break;
    case EACCES: sub = DF_ERR_LOCATION_PERMISSION_DENIED; what = "cannot be reached: permission denied"; break;
    default: return bad_location(err);
    }
    char shown[512];
    df__session_escape_into(shown, sizeof shown, path);
    df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "invalid Delta source URI: table location `%s` %s", shown, what);
    df_error_set_origin(err, "session");
    df_error_set_subkind(err, sub);
    df_error_set_code(err, e);
    char ctx[128];
    snprintf(ctx, sizeof ctx, "{\"cause_kind\":\"%s\",\"errno\":%d}", df_errkind_name(sub), e);
    df_error_set_context(err, ctx);
    return DF_ERR_INVALID_SOURCE_URI;
}

/* Decodes a file: URI path ("file:///a%20b" -> "/a b"); only an empty or localhost authority. */
static df_errkind file_uri_path(const char *uri, char **out, df_error *err) {
    const char *p = uri + 5;   /* after "file:" */
    if (p[0] == '/' && p[1] == '/') {
        p += 2;
        if (strncmp(p, "localhost", 9) == 0) p += 9;
        if (*p != '/') return bad_location(err);
    }
    size_t n = strcspn(p, "?#");
    char *path = df_malloc(n + 1);
    if (!path) return DF_OOM(err);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '%') {
            int hi = i + 2 < n ? df_hex_value(p[i + 1]) : -1;
            int lo = i + 2 < n ? df_hex_value(p[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                df_free(path);
                return bad_location(err);
            }
            path[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            path[j++] = p[i];
        }
    }
    path[j] = '\0';
    *out = path;
    return DF_OK;
}

df_errkind df__session_resolve_location(const char *uri, char **location, char **display, df_error *err) {
    *location = NULL;
    *display = NULL;
    size_t scheme = scheme_length(uri);
    char *path = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = DF_OK;
    if (scheme == 4 && df_ascii_ncasecmp(uri, "file", 4) == 0) {
        DF_TRY(file_uri_path(uri, &path, err));
    } else if (scheme > 0) {
        /* A remote store: the storage layer interprets it; shown sanitized with a trailing '/'. */
        *location = df_strdup(uri);
        k = *location ? df__session_sanitize_uri(&b, uri, err) : DF_OOM(err);
        if (k == DF_OK && (b.len == 0 || b.data[b.len - 1] != '/')) k = df_buf_append_char(&b, '/', err);
        if (k == DF_OK) k = df_buf_take_text(&b, display, NULL, err);
        goto done;
    } else {
        path = df_strdup(uri);
        if (!path) return DF_OOM(err);
    }
    char resolved[PATH_MAX];
    if (!realpath(path, resolved)) {
        k = unresolvable_location(err, path, errno);
        goto done;
    }
    *location = df_strdup(resolved);
    if (!*location) {
        k = DF_OOM(err);
        goto done;
    }
    k = df_buf_append_str(&b, "file://", err);
    if (k == DF_OK) k = append_url_path(&b, resolved, err);
    if (k == DF_OK && (b.len == 0 || b.data[b.len - 1] != '/')) k = df_buf_append_char(&b, '/', err);
    if (k == DF_OK) k = df_buf_take_text(&b, display, NULL, err);
done:
    df_free(path);
    df_buf_free(&b);
    if (k != DF_OK) {
        df_free(*location);
        df_free(*display);
        *location = *display = NULL;
    }
    return k;
}

bool df__session_is_s3_uri(const char *uri) {
    size_t scheme = scheme_length(uri);
    return (scheme == 2 && df_ascii_ncasecmp(uri, "s3", 2) == 0) ||
           (scheme == 3 && df_ascii_ncasecmp(uri, "s3a", 3) == 0) ||
           (scheme == 5 && df_ascii_ncasecmp(uri, "https", 5) == 0 &&
            (strstr(uri, ".amazonaws.com") || strstr(uri, ".r2.cloudflarestorage.com")));
}
