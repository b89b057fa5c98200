/*
 * Helpers shared by the report unit tests: build a model from a scenario,
 * look records up, render views into strings.
 */
#ifndef DF_REPORT_TEST_UTIL_H
#define DF_REPORT_TEST_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "df_test.h"
#include "report/report_int.h"
#include "report_scenarios.h"

/* Builds the model of a scenario (freed by the caller); asserts success. */
static inline df_report_profile *rt_build(synth *s, uint64_t scope) {
    size_t len;
    const uint8_t *bytes = synth_bytes(s, &len);
    df_report_build_options o = {.capture_scope_id = scope};
    df_report_profile *p = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_report_build_from_trace(bytes, len, &o, &p, &err), &err);
    df_error_clear(&err);
    synth_free(s);
    return p;
}

/* Builds and expects a failure; returns the kind and copies its name (the error's kind must match the return). */
static inline df_errkind rt_build_fail(synth *s, char *reason, size_t cap, char *message, size_t mcap) {
    size_t len;
    const uint8_t *bytes = synth_bytes(s, &len);
    df_report_profile *p = NULL;
    df_error err = {0};
    df_errkind k = df_report_build_from_trace(bytes, len, NULL, &p, &err);
    DF_ASSERT(p == NULL);
    DF_ASSERT_EQ_INT(err.kind, k);
    DF_ASSERT(err.context == NULL);
    snprintf(reason, cap, "%s", df_errkind_name(err.kind));
    if (message && mcap) { /* bounded copy: the message may be longer than the caller's buffer */
        size_t n = strnlen(err.message, mcap - 1);
        memcpy(message, err.message, n);
        message[n] = '\0';
    }
    df_error_clear(&err);
    synth_free(s);
    return k;
}

static inline const df_report_semantic *rt_sem(const df_report_profile *p, int64_t id) {
    int32_t i = df__report_find_semantic(p, id);
    if (i < 0) df_test_fail(__FILE__, __LINE__, "semantic %lld not found", (long long)id);
    return &p->sems[i];
}

static inline const char *rt_name(const df_report_profile *p, int64_t id) {
    return df__report_sem_str(p, rt_sem(p, id), DF_REPORT_S_NAME);
}

/* The semantic id of the first node named `name` (asserts it exists). */
static inline int64_t rt_id_of(const df_report_profile *p, const char *name) {
    for (size_t i = 0; i < p->nsems; i++)
        if (!strcmp(df__report_sem_str(p, &p->sems[i], DF_REPORT_S_NAME), name)) return p->sems[i].semantic_id;
    df_test_fail(__FILE__, __LINE__, "no semantic named %s", name);
}

/* The function of semantic `sid` whose full name is `name`, or NULL. */
static inline const df_report_function *rt_fn(const df_report_profile *p, int64_t sid, const char *name) {
    for (size_t i = 0; i < p->nfns; i++)
        if (p->fns[i].semantic_id == sid && !strcmp(df__report_str(&p->strings, p->fns[i].name), name)) return &p->fns[i];
    return NULL;
}

/* Renders an inspector view (options as given) into a malloc'd string. */
static inline char *rt_inspect(const df_report_profile *p, const df_report_inspect_options *o) {
    df_report_inspector *in = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_report_inspector_create(p, o, &in, &err), &err);
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_report_inspector_render(in, &b, &err), &err);
    df_report_inspector_destroy(in);
    char *s = df_buf_take(&b);
    return s ? s : df_strdup("");
}

/* True if `hay` contains the line `line` exactly. */
static inline bool rt_has_line(const char *hay, const char *line) {
    size_t n = strlen(line);
    for (const char *p = hay; (p = strstr(p, line)) != NULL; p++)
        if ((p == hay || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0)) return true;
    return false;
}

#endif
