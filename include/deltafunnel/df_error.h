/*
 * df_error: the one error value of Delta Funnel.
 *
 * Every fallible function returns a df_errkind (0 = success) and takes an
 * optional `df_error *err` out-parameter that receives the details.  Filling
 * the fixed-size fields never allocates, so an out-of-memory error can always
 * be reported.  `context` is an optional JSON object text owned by the error;
 * df_error_clear() frees it.
 *
 * Kinds come from df_errkinds.def; their numbers and strings never change.
 * The message is for people and may be reworded at any time: decide nothing
 * by its text.  Where one kind covers failures a caller must tell apart,
 * `subkind` (set where the failure happens) does.
 */
#ifndef DELTAFUNNEL_DF_ERROR_H
#define DELTAFUNNEL_DF_ERROR_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum df_errkind {
    DF_OK = 0,
#define X(constant, name, phase, doc) constant,
#include "df_errkinds.def"
#undef X
    DF_ERRKIND_COUNT_
} df_errkind;

#define DF_ERROR_PHASE_SIZE 48
#define DF_ERROR_ORIGIN_SIZE 32
#define DF_ERROR_MESSAGE_SIZE 480

typedef struct df_error {
    df_errkind kind;                    /* DF_OK when no error is recorded */
    df_errkind subkind;                 /* a finer kind under `kind` (df_errkinds.def, "finer kinds") that
                                           callers classify by instead of the message; DF_OK if none */
    char phase[DF_ERROR_PHASE_SIZE];    /* stable phase string, e.g. "sql_table" */
    int64_t code;                       /* numeric detail: SQL Server error number, errno, ...; 0 if none */
    int64_t offset;                     /* character/byte offset into the input; -1 if none */
    char origin[DF_ERROR_ORIGIN_SIZE];  /* component that raised it: "parquet", "sql", ... */
    char message[DF_ERROR_MESSAGE_SIZE];/* one short factual line, never secrets */
    char *context;                      /* optional JSON object text, owned; NULL if none */
} df_error;

/* Returns the stable string of a kind ("sql_table"), or "unknown". */
const char *df_errkind_name(df_errkind kind);
/* Returns the phase used when the raiser names none. */
const char *df_errkind_default_phase(df_errkind kind);
/* Looks a kind up by its string; returns DF_OK if none matches. */
df_errkind df_errkind_from_name(const char *name);

/* Resets an error to "no error", freeing its context.  Accepts NULL. */
void df_error_clear(df_error *err);

/*
 * Records an error: kind, default phase, formatted message (truncated to fit);
 * code, offset, origin and subkind are reset.  Any previous context is
 * freed.  Accepts err == NULL.  Returns `kind`, so
 * `return df_error_set(err, DF_ERR_X, "...")` reads naturally.
 */
df_errkind df_error_set(df_error *err, df_errkind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
df_errkind df_error_setv(df_error *err, df_errkind kind, const char *fmt, va_list ap);

/* Overrides the phase / origin / code / offset / subkind of a recorded error.  Accept NULL. */
void df_error_set_phase(df_error *err, const char *phase);
void df_error_set_origin(df_error *err, const char *origin);
void df_error_set_code(df_error *err, int64_t code);
void df_error_set_offset(df_error *err, int64_t offset);
void df_error_set_subkind(df_error *err, df_errkind subkind);
/* Prepends "prefix: " to the message (truncating the tail).  Accepts NULL. */
void df_error_prefix(df_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Replaces the context with a copy of `json` (a JSON object text).  If the copy
 * cannot be allocated the context is left NULL: the error itself stays intact.
 */
void df_error_set_context(df_error *err, const char *json);
/* Moves `src` into `dst` (dst's previous content is cleared; src is reset). */
void df_error_move(df_error *dst, df_error *src);

/*
 * Propagation helpers: DF_TRY returns a failed call's kind unchanged (the
 * callee filled err); DF_FAIL records an error and returns its kind.
 */
#define DF_TRY(expr)                              \
    do {                                          \
        df_errkind df_try_kind_ = (expr);         \
        if (df_try_kind_ != DF_OK) return df_try_kind_; \
    } while (0)

#define DF_FAIL(err, kind, ...) return df_error_set((err), (kind), __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
