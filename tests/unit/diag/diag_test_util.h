/*
 * Helpers for the diag unit tests: run a memory capture and index its
 * records (begin/end pairs by serial, instants).
 */
#ifndef DIAG_TEST_UTIL_H
#define DIAG_TEST_UTIL_H

#include "df_test.h"

#include "diag/capture.h"
#include "diag/diag_int.h"

typedef struct test_span {
    df_diag_ev_begin begin; /* the begin record */
    df_diag_ev_end end;     /* the end record (valid if ended) */
    bool ended;             /* an end record was seen */
} test_span;

typedef struct test_log {
    test_span *spans;           /* sorted by serial (= begin order per thread) */
    size_t nspans;              /* count */
    df_diag_ev_instant *instants; /* in record order */
    size_t ninstants;           /* count */
    size_t unmatched_ends;      /* end records without a begin */
} test_log;

static inline df_diag_capture *test_capture_start(uint64_t max_spans, bool scoped) {
    df_diag_capture_options o = {.max_operator_activity_spans = max_spans, .operation_scoped = scoped};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    return c;
}

static inline int test_serial_cmp(const void *a, const void *b) {
    uint64_t x = ((const test_span *)a)->begin.serial, y = ((const test_span *)b)->begin.serial;
    return x < y ? -1 : x > y;
}

/* Indexes a raw record log: begins sorted by serial, ends matched to them. */
static inline test_log test_log_parse(const unsigned char *p, size_t len) {
    test_log log = {0};
    log.spans = calloc(len / sizeof(df_diag_ev_end) + 1, sizeof *log.spans);
    log.instants = calloc(len / sizeof(df_diag_ev_instant) + 1, sizeof *log.instants);
    for (size_t off = 0; off < len;) {
        const df_diag_ev_head *h = (const df_diag_ev_head *)(p + off);
        DF_ASSERT(h->size >= sizeof *h && off + h->size <= len);
        if (h->type == DF_DIAG_EV_BEGIN) memcpy(&log.spans[log.nspans++].begin, h, sizeof(df_diag_ev_begin));
        if (h->type == DF_DIAG_EV_INSTANT) memcpy(&log.instants[log.ninstants++], h, sizeof(df_diag_ev_instant));
        off += h->size;
    }
    qsort(log.spans, log.nspans, sizeof *log.spans, test_serial_cmp);
    for (size_t off = 0; off < len;) {
        const df_diag_ev_head *h = (const df_diag_ev_head *)(p + off);
        off += h->size;
        if (h->type != DF_DIAG_EV_END) continue;
        df_diag_ev_end e;
        memcpy(&e, h, sizeof e);
        test_span key = {.begin = {.serial = e.serial}};
        test_span *s = bsearch(&key, log.spans, log.nspans, sizeof *log.spans, test_serial_cmp);
        if (!s) {
            log.unmatched_ends++;
            continue;
        }
        DF_ASSERT(!s->ended);
        s->end = e;
        s->ended = true;
    }
    return log;
}

/* Stops the capture, indexes its log and destroys the capture.  Free with test_log_free. */
static inline test_log test_capture_finish(df_diag_capture *c) {
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_stop(c, NULL, &err), &err);
    size_t len = 0;
    const unsigned char *p = df_diag_capture_log(c, &len);
    test_log log = test_log_parse(p, len);
    df_diag_capture_destroy(c);
    return log;
}

static inline void test_log_free(test_log *log) {
    free(log->spans);
    free(log->instants);
}

/* The n-th (0-based) span of `kind`, or NULL. */
static inline const test_span *test_span_of(const test_log *log, uint8_t kind, size_t n) {
    for (size_t i = 0; i < log->nspans; i++)
        if (log->spans[i].begin.h.kind == kind && n-- == 0) return &log->spans[i];
    return NULL;
}

static inline size_t test_count(const test_log *log, uint8_t kind) {
    size_t n = 0;
    for (size_t i = 0; i < log->nspans; i++) n += log->spans[i].begin.h.kind == kind;
    return n;
}

static inline const char *test_span_name(const test_span *s) {
    return df__diag_span_name(s->begin.h.kind, s->begin.name_id, &s->begin.ident);
}

#endif
