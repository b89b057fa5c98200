/*
 * Store locations and the local file-system store.
 *
 * df_store_open parses a location: "file:" URIs (percent-decoded, host empty
 * or "localhost"), absolute paths and relative paths select the local store;
 * any other scheme ("s3://", "abfss://", ...) is recognised and refused with
 * DF_ERR_DELTA_SOURCE_ENGINE until remote stores exist.
 *
 * Paths given to a store are relative to its root.  Delta logs may also carry
 * absolute locations (an `add` of a shallow clone), so a path that is itself
 * a "file:" URI or starts with '/' is used as is.
 */
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

typedef struct local_store {
    df_store base;          /* vtable and the normalised root (a local path, no trailing '/') */
} local_store;

/* ---- percent-decoding and URI parsing --------------------------------- */

df_errkind df_uri_decode_path(const char *in, char **out, df_error *err) {
    *out = NULL;
    if (!in) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no path to decode");
    size_t n = strlen(in);
    char *d = df_malloc(n + 1);
    if (!d) return DF_OOM(err);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] != '%') {
            d[j++] = in[i];
            continue;
        }
        int hi = i + 1 < n ? df_hex_value(in[i + 1]) : -1;
        int lo = i + 2 < n ? df_hex_value(in[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            df_free(d);
            df_error_set(err, DF_ERR_INVALID_ARGUMENT, "bad percent escape in path at offset %zu", i);
            df_error_set_offset(err, (int64_t)i);
            return DF_ERR_INVALID_ARGUMENT;
        }
        d[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    d[j] = '\0';
    *out = d;
    return DF_OK;
}

/*
 * Length of a URI scheme at the start of `s` ("s3" in "s3://b"), or 0 when
 * `s` has none.  A scheme is ALPHA *(ALPHA / DIGIT / "+" / "-" / ".")
 * followed by ':'; single letters are refused so that "C:/x" stays a path.
 */
static size_t scheme_length(const char *s) {
    size_t i = 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
    while (s[i] && (((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                    s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    return s[i] == ':' && i >= 2 ? i : 0;
}

/*
 * Converts a local location (file URI or path) to a file-system path: a new
 * string without trailing slashes (except for "/").  Remote schemes and
 * malformed file URIs fail.
 */
static df_errkind location_to_path(const char *location, char **out, df_error *err) {
    *out = NULL;
    size_t slen = scheme_length(location);
    char *path = NULL;
    if (slen == 0) {
        path = df_strdup(location);
        if (!path) return DF_OOM(err);
    } else if (slen == 4 && df_ascii_ncasecmp(location, "file", 4) == 0) {
        const char *rest = location + 5;
        if (rest[0] == '/' && rest[1] == '/') {
            /* file://host/path: only an empty host or localhost is local. */
            const char *host = rest + 2;
            const char *slash = strchr(host, '/');
            size_t hlen = slash ? (size_t)(slash - host) : strlen(host);
            if (!slash || (hlen != 0 && !(hlen == 9 && df_ascii_ncasecmp(host, "localhost", 9) == 0)))
                return df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "file URI must name a local absolute path: %s",
                                    location);
            rest = slash;
        } else if (rest[0] != '/') {
            return df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "file URI must name an absolute path: %s", location);
        }
        df_errkind k = df_uri_decode_path(rest, &path, err);
        if (k != DF_OK) {
            df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "file URI has a bad percent escape: %s", location);
            return DF_ERR_INVALID_SOURCE_URI;
        }
    } else {
        char scheme[32];
        size_t n = DF_MIN(slen, sizeof scheme - 1);
        for (size_t i = 0; i < n; i++) scheme[i] = (char)(location[i] | 0x20);
        scheme[n] = '\0';
        return df_error_set(err, DF_ERR_DELTA_SOURCE_ENGINE, "object store scheme `%s` is not supported yet", scheme);
    }
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') path[--len] = '\0';
    if (len == 0) {
        df_free(path);
        return df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "empty source location");
    }
    *out = path;
    return DF_OK;
}

/* Resolves a store-relative path (or an absolute location) to a file-system path. */
static df_errkind resolve(const df_store *s, const char *path, char **out, df_error *err) {
    *out = NULL;
    if (!path) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no path");
    if (path[0] == '/' || scheme_length(path) > 0) return location_to_path(path, out, err);
    while (path[0] == '.' && path[1] == '/') path += 2;
    if (path[0] == '\0') {
        *out = df_strdup(s->root);
        return *out ? DF_OK : DF_OOM(err);
    }
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = df_buf_printf(&b, err, "%s%s%s", s->root, strcmp(s->root, "/") == 0 ? "" : "/", path);
    if (k != DF_OK) {
        df_buf_free(&b);
        return k;
    }
    *out = df_buf_take(&b);
    return DF_OK;
}

/* ---- local store operations -------------------------------------------- */

static df_errkind local_open_input(df_store *s, const char *path, df_input **out, df_error *err) {
    *out = NULL;
    char *full;
    DF_TRY(resolve(s, path, &full, err));
    df_errkind k = df_input_open_file(full, out, err);
    df_free(full);
    return k;
}

static df_errkind local_read_all(df_store *s, const char *path, size_t max_bytes, uint8_t **data, size_t *len,
                                 df_error *err) {
    *data = NULL;
    *len = 0;
    df_input *in;
    DF_TRY(local_open_input(s, path, &in, err));
    df_errkind k = DF_OK;
    if (in->size > max_bytes) {
        k = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "%s is %llu bytes, more than the limit of %zu", path,
                         (unsigned long long)in->size, max_bytes);
    } else {
        uint8_t *buf = df_malloc((size_t)in->size + 1);
        if (!buf) {
            k = DF_OOM(err);
        } else if ((k = df_input_read_at(in, 0, buf, (size_t)in->size, err)) != DF_OK) {
            df_free(buf);
        } else {
            buf[in->size] = '\0';   /* convenience for text readers; not counted in *len */
            *data = buf;
            *len = (size_t)in->size;
        }
    }
    df_input_close(in);
    return k;
}

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const df_store_entry *)a)->path, ((const df_store_entry *)b)->path);
}

/* Appends one directory entry (stat'ed for size and kind) to a growing array. */
static df_errkind add_entry(const char *dir, const char *name, df_store_entry **arr, size_t *n, size_t *cap,
                            df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(*arr, *cap, *n + 1, 16, err));
    df_buf full;
    df_buf_init(&full, 0);
    DF_TRY(df_buf_printf(&full, err, "%s/%s", dir, name));
    struct stat st;
    int rc = stat(full.data, &st);
    int e = errno;
    df_buf_free(&full);
    if (rc != 0) {
        if (e == ENOENT) return DF_OK;   /* vanished or dangling link: skip */
        df_error_set(err, DF_ERR_IO, "cannot stat %s/%s: %s", dir, name, strerror(e));
        df_error_set_code(err, e);
        return DF_ERR_IO;
    }
    df_store_entry *entry = &(*arr)[*n];
    entry->path = df_strdup(name);
    if (!entry->path) return DF_OOM(err);
    entry->is_dir = S_ISDIR(st.st_mode);
    entry->is_special = !entry->is_dir && !S_ISREG(st.st_mode);
    entry->mode = (unsigned)(st.st_mode & S_IFMT);
    entry->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    (*n)++;
    return DF_OK;
}

static df_errkind local_list(df_store *s, const char *dir, df_store_entry **entries, size_t *n, df_error *err) {
    *entries = NULL;
    *n = 0;
    char *full;
    DF_TRY(resolve(s, dir ? dir : "", &full, err));
    DIR *d = opendir(full);
    if (!d) {
        int e = errno;
        df_errkind kind = (e == ENOENT || e == ENOTDIR) ? DF_ERR_NOT_FOUND : DF_ERR_IO;
        df_error_set(err, kind, "cannot list %s: %s", full, strerror(e));
        df_error_set_code(err, e);
        df_free(full);
        return kind;
    }
    df_store_entry *arr = NULL;
    size_t count = 0, cap = 0;
    df_errkind k = DF_OK;
    struct dirent *de;
    while (k == DF_OK && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        k = add_entry(full, de->d_name, &arr, &count, &cap, err);
    }
    closedir(d);
    df_free(full);
    if (k != DF_OK) {
        df_store_entries_free(arr, count);
        return k;
    }
    if (count > 1) qsort(arr, count, sizeof *arr, entry_cmp);
    *entries = arr;
    *n = count;
    return DF_OK;
}

static df_errkind local_exists(df_store *s, const char *path, bool *exists, df_error *err) {
    *exists = false;
    char *full;
    DF_TRY(resolve(s, path, &full, err));
    struct stat st;
    int rc = stat(full, &st);
    int e = errno;
    df_errkind k = DF_OK;
    if (rc == 0) {
        *exists = true;
    } else if (e != ENOENT && e != ENOTDIR) {
        df_error_set(err, DF_ERR_IO, "cannot stat %s: %s", full, strerror(e));
        df_error_set_code(err, e);
        k = DF_ERR_IO;
    }
    df_free(full);
    return k;
}

static void local_close(df_store *s) {
    df_free(s->root);
    df_free(s);
}

static const df_store_vt local_vt = {local_open_input, local_read_all, local_list, local_exists, local_close};

/* ---- public entry points ------------------------------------------------ */

df_errkind df_store_open(const char *location, const char *const *option_keys, const char *const *option_values,
                         size_t noptions, df_store **out, df_error *err) {
    (void)option_keys;
    (void)option_values;
    (void)noptions;
    *out = NULL;
    if (!location || !*location) return df_error_set(err, DF_ERR_INVALID_SOURCE_URI, "empty source location");
    char *root;
    DF_TRY(location_to_path(location, &root, err));
    local_store *s = df_calloc(1, sizeof *s);
    if (!s) {
        df_free(root);
        return DF_OOM(err);
    }
    s->base.vt = &local_vt;
    s->base.root = root;
    *out = &s->base;
    return DF_OK;
}

void df_store_close(df_store *s) {
    if (s) s->vt->close(s);
}

void df_store_entries_free(df_store_entry *entries, size_t n) {
    if (!entries) return;
    for (size_t i = 0; i < n; i++) df_free(entries[i].path);
    df_free(entries);
}
