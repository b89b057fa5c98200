/*
 * Span overhead micro-benchmark: nanoseconds per begin+end pair for
 *   - an operator activity of an untraced operation (the executor's hot
 *     path when no capture runs: one inline NULL test),
 *   - a detail with no capture (one relaxed flag load),
 *   - a timed stage of an untraced operation (clock reads + timing slot),
 *   - a traced operator activity (records written, collector draining),
 *   - a traced activity on min(4, CPUs) threads in parallel (per-thread cost).
 * Prints one line per case; ratios matter, not absolute numbers.
 *
 *   bench/diag/run.sh [BUILD_DIR]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/thread_pool.h"
#include "diag/capture.h"
#include "diag/diag.h"

#define N 2000000

static double per_span(uint64_t t0, uint64_t t1, long n) { return (double)(t1 - t0) / (double)n; }

static void die(const char *what, const df_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, err->message);
    exit(1);
}

static double bench_activity(df_diag_query *q, long n) {
    df_diag_node node = {1, 0, df_diag_name_intern("FilterExec")};
    uint64_t t0 = df_now_ns();
    for (long i = 0; i < n; i++) {
        df_diag_span s = df_diag_activity_begin(q, &node, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1);
        __asm__ volatile("" ::: "memory");
        df_diag_span_end(s, DF_DIAG_RESULT_BATCH);
    }
    return per_span(t0, df_now_ns(), n);
}

static double bench_detail(long n) {
    uint64_t t0 = df_now_ns();
    for (long i = 0; i < n; i++) {
        df_diag_span s = df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT);
        __asm__ volatile("" ::: "memory");
        df_diag_span_end(s, DF_DIAG_RESULT_OK);
    }
    return per_span(t0, df_now_ns(), n);
}

static double bench_stage(df_diag_operation *op, long n) {
    uint64_t t0 = df_now_ns();
    for (long i = 0; i < n; i++)
        df_diag_span_end(df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 1), DF_DIAG_RESULT_OK);
    return per_span(t0, df_now_ns(), n);
}

typedef struct worker_arg {
    df_diag_query *q; /* traced query */
    double ns;        /* result */
} worker_arg;

static void *worker(void *p) {
    worker_arg *a = p;
    df_diag_span task = df_diag_task_begin(a->q, 1);
    a->ns = bench_activity(a->q, N / 4);
    df_diag_span_end(task, DF_DIAG_RESULT_OK);
    return NULL;
}

int main(void) {
    df_error err = {0};
    df_diag_operation *op = NULL;
    df_diag_query *q = NULL;
    if (df_diag_operation_begin(DF_DIAG_OP_WRITE_ALL, NULL, &op, &err)) die("operation", &err);
    if (df_diag_query_begin(op, DF_DIAG_QUERY_MSSQL_OUTPUT, "out", &q, &err)) die("query", &err);
    bench_activity(q, N / 10); /* warm-up */
    printf("activity_untraced_ns %.2f\n", bench_activity(q, N * 10L));
    printf("detail_no_capture_ns %.2f\n", bench_detail(N * 10L));
    printf("stage_timed_ns %.2f\n", bench_stage(op, N));
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);

    df_diag_capture_options o = {.max_operator_activity_spans = UINT64_MAX, .memory_log_bytes = 1 << 20};
    df_diag_capture *c = NULL;
    if (df_diag_capture_start(&o, &c, &err)) die("capture", &err);
    if (df_diag_operation_begin(DF_DIAG_OP_WRITE_ALL, NULL, &op, &err)) die("operation", &err);
    if (df_diag_query_begin(op, DF_DIAG_QUERY_MSSQL_OUTPUT, "out", &q, &err)) die("query", &err);
    printf("activity_traced_ns %.2f\n", bench_activity(q, N));
    int nth = DF_MIN(4, df_cpu_count());
    pthread_t th[4];
    worker_arg args[4];
    for (int i = 0; i < nth; i++) {
        args[i] = (worker_arg){q, 0};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    double sum = 0;
    for (int i = 0; i < nth; i++) {
        pthread_join(th[i], NULL);
        sum += args[i].ns;
    }
    printf("activity_traced_parallel_ns %.2f threads %d\n", sum / nth, nth);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_diag_capture_stats st;
    if (df_diag_capture_stop(c, &st, &err)) die("stop", &err);
    printf("records_written %llu records_lost %llu\n", (unsigned long long)st.events_written,
           (unsigned long long)st.events_lost);
    df_diag_capture_destroy(c);

    /* Trace-file throughput: spans recorded and written as Perfetto packets. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/df_bench_spans_%d.pftrace", (int)getpid());
    unlink(path);
    df_diag_capture_options fo = {.trace_path = path, .max_operator_activity_spans = UINT64_MAX};
    if (df_diag_capture_start(&fo, &c, &err)) die("file capture", &err);
    if (df_diag_operation_begin(DF_DIAG_OP_WRITE_ALL, NULL, &op, &err)) die("operation", &err);
    if (df_diag_query_begin(op, DF_DIAG_QUERY_MSSQL_OUTPUT, "out", &q, &err)) die("query", &err);
    uint64_t t0 = df_now_ns();
    printf("activity_traced_to_file_ns %.2f\n", bench_activity(q, N / 10));
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    if (df_diag_capture_stop(c, &st, &err)) die("stop", &err);
    double secs = (double)(df_now_ns() - t0) / 1e9;
    printf("file_records_written %llu lost %llu bytes %llu records_per_s %.0f\n",
           (unsigned long long)st.events_written, (unsigned long long)st.events_lost,
           (unsigned long long)st.trace_bytes, (double)st.events_written / secs);
    df_diag_capture_destroy(c);
    unlink(path);
    return 0;
}
