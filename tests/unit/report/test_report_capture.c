/*
 * End to end with the real capture: a traced preview-like workload run
 * under df_diag_capture (native sampling when the host allows it) is
 * written as a .pftrace and turned into a validated ranked model, an
 * artifact and an HTML page.
 */
#include "report_test_util.h"

#include <unistd.h>

#include "diag/capture.h"
#include "diag/diag.h"

__attribute__((noinline)) static uint64_t burn(uint64_t ns) {
    uint64_t end = df_thread_cpu_ns() + ns, x = 0;
    while (df_thread_cpu_ns() < end)
        for (int i = 0; i < 2000; i++) x += df_hash_u64(x ^ (uint64_t)i);
    return x;
}

DF_TEST(real_capture_builds_a_valid_profile) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/df-report-capture-%d.pftrace", (int)getpid());
    unlink(path);
    df_diag_capture_options o = {.trace_path = path, .sample_hz = 1000};
    df_diag_capture *c = NULL;
    df_error err = {0};
    if (df_diag_capture_start(&o, &c, &err) != DF_OK) { /* no sampler here: spans only */
        df_error_clear(&err);
        o.sample_hz = 0;
        DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    }
    df_diag_operation *op = NULL;
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    volatile uint64_t sink = burn(30u * 1000u * 1000u);
    (void)sink;
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_diag_capture_stats stats;
    DF_ASSERT_OK(df_diag_capture_stop(c, &stats, &err), &err);
    df_diag_capture_destroy(c);
    df_report_profile *p = NULL;
    DF_ASSERT_OK(df_report_build_from_trace_file(path, NULL, &p, &err), &err);
    DF_ASSERT_EQ_UINT(p->ix.nroots, 1);
    DF_ASSERT(p->meta.capture_complete);
    int64_t ec = rt_id_of(p, "Execute and collect");
    if (o.sample_hz) {
        /*
         * Everything the stage burnt is attributed to it, exactly: all the
         * direct samples but the rare one taken in the few instructions
         * between the phase's and the stage's clock reads (a preempted
         * thread can be sampled right there on a loaded machine).
         */
        DF_ASSERT(p->meta.eligible_sample_count > 0);
        DF_ASSERT(rt_sem(p, ec)->direct_samples >= p->meta.direct_sample_count - 1);
        DF_ASSERT_EQ_INT(p->meta.exact_context_sample_count, p->meta.direct_sample_count);
        bool found = false;
        for (size_t i = 0; i < p->nfns; i++) found |= strstr(df__report_str(&p->strings, p->fns[i].name), "burn") != NULL;
        DF_ASSERT(found || p->meta.resolved_function_sample_count == 0);
    }
    df_buf b;
    df_buf_init(&b, 0);
    DF_ASSERT_OK(df_report_encode_dfprofile(p, &b, &err), &err);
    df_buf_reset(&b);
    DF_ASSERT_OK(df_report_render_html(p, &b, &err), &err);
    df_buf_free(&b);
    df_report_profile_destroy(p);
    unlink(path);
}
