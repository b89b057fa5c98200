/*
 * Unit tests for the capture modes behind capture-workload and ranked
 * profiles: thread-scoped operation captures, the safety bound, holding
 * the trace in memory, periodic flushing, the file bound, scheduler
 * context, and the host probe.  Traces are checked through the report
 * module's health row (the same decoder the programs use).
 */
#include "diag_test_util.h"

#include "report/report.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void tmp_path(char *buf, size_t cap, const char *name) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/df_diag_modes_%d_%s", dir && dir[0] ? dir : "/tmp", (int)getpid(), name);
    unlink(buf);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

static df_report_health health_of(const char *path) {
    df_report_health h;
    df_error err = {0};
    DF_ASSERT_OK(df_report_capture_health_file(path, NULL, &h, &err), &err);
    return h;
}

/* One complete preview-shaped operation with a stage, on the calling thread. */
static uint64_t run_operation(uint64_t stage_ns) {
    df_diag_operation *op = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    uint64_t end = df_now_ns() + stage_ns;
    while (df_now_ns() < end) {}
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    uint64_t id = df_diag_operation_id(op);
    df_diag_operation_destroy(op);
    return id;
}

static void *other_thread_operation(void *arg) {
    *(uint64_t *)arg = run_operation(1000000);
    return NULL;
}

DF_TEST(operation_scoped_capture_traces_only_the_starting_thread) {
    df_diag_capture *c = test_capture_start(0, true);
    uint64_t other = 99;
    pthread_t th;
    pthread_create(&th, NULL, other_thread_operation, &other);
    pthread_join(th, NULL);
    uint64_t mine = run_operation(1000000);
    df_diag_capture_stats st;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    DF_ASSERT_EQ_UINT(other, 0); /* not traced: no operation id */
    DF_ASSERT(mine > 0);
    DF_ASSERT(st.capture_scope_id > 0);
    size_t len = 0;
    const unsigned char *records = df_diag_capture_log(c, &len);
    test_log log = test_log_parse(records, len);
    const test_span *root = test_span_of(&log, DF_DIAG_SK_OPERATION, 0);
    DF_ASSERT(root != NULL);
    DF_ASSERT_EQ_UINT(root->begin.ident.capture_scope_id, st.capture_scope_id);
    DF_ASSERT_EQ_INT(test_count(&log, DF_DIAG_SK_OPERATION), 1);
    test_log_free(&log);
    df_diag_capture_destroy(c);
    /* A whole-process capture traces every thread again. */
    c = test_capture_start(0, false);
    pthread_create(&th, NULL, other_thread_operation, &other);
    pthread_join(th, NULL);
    DF_ASSERT(other > 0);
    test_log l2 = test_capture_finish(c);
    test_log_free(&l2);
}

DF_TEST(safety_bound_stops_the_capture_and_finishes_the_trace) {
    char path[256];
    tmp_path(path, sizeof path, "bound.pftrace");
    df_diag_capture_options o = {.trace_path = path, .duration_ms = 150, .hold_bytes = 1u << 20};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    DF_ASSERT(run_operation(1000000) > 0);
    /* An operation left open across the bound stays unterminated. */
    df_diag_operation *op = NULL;
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    for (int i = 0; i < 200 && !df_diag_capture_stopped(c); i++) sleep_ms(10);
    DF_ASSERT(df_diag_capture_stopped(c));
    DF_ASSERT(!df_diag_capture_is_active());
    df_report_health h = health_of(path); /* finished by the collector, before anyone stopped it */
    DF_ASSERT(h.finalization_observed);
    DF_ASSERT_EQ_INT(h.operation_root_count, 2);
    DF_ASSERT_EQ_INT(h.incomplete_operation_root_count, 1);
    DF_ASSERT(!h.capture_complete);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    DF_ASSERT(st.timed_out);
    df_diag_capture_destroy(c);
    unlink(path);
}

DF_TEST(hold_mode_writes_at_stop_and_discards_past_its_bound) {
    char path[256];
    tmp_path(path, sizeof path, "hold.pftrace");
    df_diag_capture_options o = {.trace_path = path, .hold_bytes = 64u << 20};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    uint64_t preamble = file_size(path);
    DF_ASSERT(preamble > 0); /* the preamble is on disk at once */
    for (int i = 0; i < 2000; i++) run_operation(0);
    sleep_ms(60); /* collections ran */
    DF_ASSERT_EQ_UINT(file_size(path), preamble);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    DF_ASSERT(file_size(path) > preamble + 100000);
    DF_ASSERT_EQ_UINT(st.packets_discarded, 0);
    df_report_health h = health_of(path);
    DF_ASSERT(h.capture_complete);
    DF_ASSERT_EQ_INT(h.operation_root_count, 2000);
    unlink(path);
    /* A small bound keeps the beginning and says packets were discarded. */
    o.hold_bytes = 64u << 10;
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    for (int i = 0; i < 2000; i++) run_operation(0);
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    DF_ASSERT(st.packets_discarded > 0);
    DF_ASSERT(file_size(path) <= 64u << 10);
    h = health_of(path);
    DF_ASSERT(h.finalization_observed);
    DF_ASSERT(h.buffer_loss_count > 0);
    DF_ASSERT(!h.capture_complete);
    DF_ASSERT(h.operation_root_count > 10 && h.operation_root_count < 2000);
    unlink(path);
}

DF_TEST(streaming_mode_flushes_open_records_periodically) {
    char path[256];
    tmp_path(path, sizeof path, "stream.pftrace");
    df_diag_capture_options o = {.trace_path = path, .flush_period_ms = 50};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    run_operation(1000000);
    df_diag_operation *op = NULL;
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    sleep_ms(300);
    /* Before any stop: the first operation and the open one are on disk (a process dying now keeps them). */
    df_report_health h = health_of(path);
    DF_ASSERT(!h.finalization_observed);
    DF_ASSERT_EQ_INT(h.operation_root_count, 2);
    DF_ASSERT_EQ_INT(h.incomplete_operation_root_count, 1);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    h = health_of(path);
    DF_ASSERT(h.capture_complete);
    unlink(path);
}

DF_TEST(file_bound_is_never_exceeded) {
    char path[256];
    tmp_path(path, sizeof path, "cap.pftrace");
    uint64_t cap = 40u << 10;
    df_diag_capture_options o = {.trace_path = path, .flush_period_ms = 20, .max_file_bytes = cap};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    for (int i = 0; i < 3000; i++) run_operation(0);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    DF_ASSERT(file_size(path) <= cap);
    DF_ASSERT(st.packets_discarded > 0);
    df_report_health h = health_of(path);
    DF_ASSERT(h.finalization_observed && h.buffer_loss_count > 0);
    unlink(path);
}

/* Sleeps inside a traced stage on a sampled thread (off-CPU time). */
static void *sleep_in_stage(void *arg) {
    (void)arg;
    df_diag_operation *op = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    for (int i = 0; i < 10; i++) {
        uint64_t end = df_now_ns() + 2000000;
        while (df_now_ns() < end) {}
        sleep_ms(5);
    }
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    return NULL;
}

DF_TEST(scheduler_context_records_off_cpu_intervals_where_allowed) {
    char path[256];
    tmp_path(path, sizeof path, "sched.pftrace");
    df_diag_capture_options o = {.trace_path = path, .sample_hz = 1000, .scheduler = true};
    df_diag_host_report host;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_probe_host(&host, &err), &err);
    df_diag_capture *c = NULL;
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    pthread_t th;
    pthread_create(&th, NULL, sleep_in_stage, NULL);
    pthread_join(th, NULL);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    DF_ASSERT(st.scheduler_reason[0] != 0);
    if (host.switches_available) {
        DF_ASSERT(st.scheduler_recorded);
        DF_ASSERT(st.context_switches >= 5);
    } else {
        DF_ASSERT(!st.scheduler_recorded);
        DF_ASSERT_EQ_UINT(st.context_switches, 0);
        printf("  scheduler context unavailable here: %s\n", st.scheduler_reason);
    }
    df_report_health h = health_of(path); /* off-CPU slices on thread tracks leave the semantics intact */
    DF_ASSERT(h.capture_complete);
    unlink(path);
    /* The timer sampler has no context-switch records: said, not faked. */
    o.backend = DF_DIAG_BACKEND_TIMER;
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    df_diag_capture_destroy(c);
    DF_ASSERT(!st.scheduler_recorded);
    DF_ASSERT(strstr(st.scheduler_reason, "perf_event") != NULL);
    unlink(path);
}

DF_TEST(host_probe_reports_facts) {
    df_diag_host_report h;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_probe_host(&h, &err), &err);
    DF_ASSERT(h.perf_reason[0] != 0);
    DF_ASSERT(h.perf_available || h.timer_available);
    DF_ASSERT(h.auto_backend == (h.perf_available ? DF_DIAG_BACKEND_PERF : DF_DIAG_BACKEND_TIMER));
    DF_ASSERT(h.symbols_resolved);
    DF_ASSERT(strstr(h.symbol_probe, "probe") != NULL);
    DF_ASSERT(h.module_probe[0] == '/');
    DF_ASSERT(h.line_probe[0] != 0);
    if (h.lines_resolved) DF_ASSERT(strstr(h.line_probe, "probe.c:") != NULL);
    DF_ASSERT(!df_diag_capture_is_active());
}

DF_TEST(backend_of_a_running_capture_is_known_while_it_runs) {
    df_diag_capture_options o = {.sample_hz = 100, .backend = DF_DIAG_BACKEND_TIMER};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    char reason[160];
    DF_ASSERT_EQ_INT(df_diag_capture_backend(c, reason, sizeof reason), DF_DIAG_BACKEND_TIMER);
    DF_ASSERT(strstr(reason, "timers") != NULL);
    DF_ASSERT(!df_diag_capture_stopped(c));
    df_diag_capture_destroy(c);
}
