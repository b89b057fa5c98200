/*
 * df_buf: a growable, NUL-terminated byte buffer with a hard cap, so a
 * hostile input can never make it grow without bound.
 */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>

#define DEFAULT_LIMIT (SIZE_MAX / 2)

void df_buf_init(df_buf *b, size_t limit) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit ? limit : DEFAULT_LIMIT;
}

void df_buf_free(df_buf *b) {
    df_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void df_buf_reset(df_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

df_errkind df_buf_reserve(df_buf *b, size_t extra, df_error *err) {
    size_t need;
    if (df_add_overflow_size(b->len, extra, &need) || need > b->limit)
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "buffer would exceed its limit of %zu bytes", b->limit);
    if (need + 1 <= b->cap) return DF_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1) cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    char *p = df_realloc(b->data, cap);
    if (!p) return DF_OOM(err);
    b->data = p;
    b->cap = cap;
    return DF_OK;
}

df_errkind df_buf_append(df_buf *b, const void *data, size_t n, df_error *err) {
    DF_TRY(df_buf_reserve(b, n, err));
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return DF_OK;
}

df_errkind df_buf_append_str(df_buf *b, const char *s, df_error *err) {
    return df_buf_append(b, s, strlen(s), err);
}

df_errkind df_buf_append_char(df_buf *b, char c, df_error *err) {
    return df_buf_append(b, &c, 1, err);
}

df_errkind df_buf_printf(df_buf *b, df_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return df_error_set(err, DF_ERR_INTERNAL, "bad format string");
    DF_TRY(df_buf_reserve(b, (size_t)n, err));
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return DF_OK;
}

char *df_buf_take(df_buf *b) {
    char *d = b->data;
    if (!d) d = df_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

df_errkind df_buf_take_text(df_buf *b, char **out, size_t *len, df_error *err) {
    if (len) *len = b->len;
    char *d = df_buf_take(b);
    if (!d) return DF_OOM(err);
    *out = d;
    return DF_OK;
}
