/*
 * df_error: fixed-buffer error records.  Nothing here allocates except the
 * optional context copy, whose failure is tolerated.
 */
#include "common/common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/*
 * The test-only message hook (common.h).  Atomic because bulk sender and
 * pool threads raise errors while a test's main thread may have set it.
 */
static _Atomic(df__error_message_scrambler) message_scrambler;

void df__error_set_message_scrambler(df__error_message_scrambler fn) {
    atomic_store_explicit(&message_scrambler, fn, memory_order_relaxed);
}

static void scramble(char *text, size_t size) {
    df__error_message_scrambler fn = atomic_load_explicit(&message_scrambler, memory_order_relaxed);
    if (fn) fn(text, size);
}

static const char *const kind_names[DF_ERRKIND_COUNT_] = {
    [DF_OK] = "ok",
#define X(constant, name, phase, doc) [constant] = name,
#include "deltafunnel/df_errkinds.def"
#undef X
};

static const char *const kind_phases[DF_ERRKIND_COUNT_] = {
    [DF_OK] = "",
#define X(constant, name, phase, doc) [constant] = phase,
#include "deltafunnel/df_errkinds.def"
#undef X
};

const char *df_errkind_name(df_errkind kind) {
    if ((unsigned)kind >= DF_ERRKIND_COUNT_) return "unknown";
    return kind_names[kind];
}

const char *df_errkind_default_phase(df_errkind kind) {
    if ((unsigned)kind >= DF_ERRKIND_COUNT_) return "internal";
    return kind_phases[kind];
}

df_errkind df_errkind_from_name(const char *name) {
    if (!name) return DF_OK;
    for (int k = 1; k < DF_ERRKIND_COUNT_; k++)
        if (strcmp(kind_names[k], name) == 0) return (df_errkind)k;
    return DF_OK;
}

void df_error_clear(df_error *err) {
    if (!err) return;
    df_free(err->context);
    memset(err, 0, sizeof *err);
    err->offset = -1;
}

static void copy_bounded(char *dst, size_t size, const char *src) {
    size_t n = src ? strlen(src) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

df_errkind df_error_setv(df_error *err, df_errkind kind, const char *fmt, va_list ap) {
    if (!err) return kind;
    df_free(err->context);
    err->context = NULL;
    err->kind = kind;
    err->subkind = DF_OK;
    err->code = 0;
    err->offset = -1;
    err->origin[0] = '\0';
    copy_bounded(err->phase, sizeof err->phase, df_errkind_default_phase(kind));
    vsnprintf(err->message, sizeof err->message, fmt ? fmt : "", ap);
    scramble(err->message, sizeof err->message);
    return kind;
}

df_errkind df_error_set(df_error *err, df_errkind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    df_error_setv(err, kind, fmt, ap);
    va_end(ap);
    return kind;
}

void df_error_set_phase(df_error *err, const char *phase) {
    if (err) copy_bounded(err->phase, sizeof err->phase, phase);
}

void df_error_set_origin(df_error *err, const char *origin) {
    if (err) copy_bounded(err->origin, sizeof err->origin, origin);
}

void df_error_set_code(df_error *err, int64_t code) {
    if (err) err->code = code;
}

void df_error_set_offset(df_error *err, int64_t offset) {
    if (err) err->offset = offset;
}

void df_error_set_subkind(df_error *err, df_errkind subkind) {
    if (err) err->subkind = subkind;
}

void df_error_prefix(df_error *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    scramble(prefix, sizeof prefix);
    /* Shift the message right to make room for "prefix: ", dropping its tail if needed. */
    size_t plen = strlen(prefix), cap = sizeof err->message - 1;
    if (plen + 2 > cap) plen = cap - 2;
    size_t mlen = strlen(err->message);
    if (plen + 2 + mlen > cap) mlen = cap - plen - 2;
    memmove(err->message + plen + 2, err->message, mlen);
    memcpy(err->message, prefix, plen);
    err->message[plen] = ':';
    err->message[plen + 1] = ' ';
    err->message[plen + 2 + mlen] = '\0';
}

void df_error_set_context(df_error *err, const char *json) {
    if (!err) return;
    df_free(err->context);
    err->context = json ? df_strdup(json) : NULL;
}

void df_error_move(df_error *dst, df_error *src) {
    if (!dst || !src || dst == src) return;
    df_error_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
    src->offset = -1;
}
