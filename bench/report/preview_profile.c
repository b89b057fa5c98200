/*
 * A real operation-scoped ranked profile: previews a Delta table under a
 * diagnostics capture with native sampling (what RankedProfileConfig does
 * from Python), then builds the ranked model from the trace and writes the
 * HTML report and the .dfprofile artifact.
 *
 *   preview_profile TABLE_DIR OUT_PREFIX [SQL] [HZ]
 *
 * Writes OUT_PREFIX.pftrace, OUT_PREFIX.profile.html and
 * OUT_PREFIX.dfprofile, and prints the capture statistics and the ranked
 * operation roots.  Used by bench/report/run.sh to check that a full-scan
 * preview's sampled CPU lands in the scan and decoding functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deltafunnel/deltafunnel.h"
#include "diag/capture.h"
#include "report/report.h"

static int fail(const char *what, const df_error *err) {
    fprintf(stderr, "%s: %s: %s\n", what, df_errkind_name(err->kind), err->message);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TABLE_DIR OUT_PREFIX [SQL] [HZ]\n", argv[0]);
        return 64;
    }
    const char *sql = argc > 3 ? argv[3] : "SELECT * FROM t";
    uint32_t hz = argc > 4 ? (uint32_t)atoi(argv[4]) : 1000;
    char trace[4096], html[4096], art[4096];
    snprintf(trace, sizeof trace, "%s.pftrace", argv[2]);
    snprintf(html, sizeof html, "%s.profile.html", argv[2]);
    snprintf(art, sizeof art, "%s.dfprofile", argv[2]);
    df_error err = {0};
    df_session *s = NULL;
    df_delta_source *src = NULL;
    df_table *t = NULL, *q = NULL;
    df_preview *p = NULL;
    if (df_session_new(NULL, &s, &err) || df_delta_source_new(argv[1], NULL, NULL, &src, &err) ||
        df_session_register_delta(s, src, "t", NULL, &t, &err) || df_session_table_from_sql(s, sql, &q, &err))
        return fail("setup", &err);
    df_delta_source_free(src);
    /* A first preview outside the capture starts the worker pool, so its threads are sampled from the start. */
    df_preview_options warm;
    df_preview_options_init(&warm);
    warm.limit = 1;
    df_table *w = NULL;
    if (df_session_table_from_sql(s, "SELECT * FROM t LIMIT 1", &w, &err) || df_table_preview(w, &warm, &p, &err))
        return fail("warm-up", &err);
    df_preview_free(p);
    p = NULL;
    df_table_release(w);
    df_diag_capture_options o = {.trace_path = trace, .sample_hz = hz, .operation_scoped = true};
    df_diag_capture *c = NULL;
    if (df_diag_capture_start(&o, &c, &err)) return fail("capture", &err);
    df_preview_options po;
    df_preview_options_init(&po);
    df_errkind k = df_table_preview(q, &po, &p, &err);
    df_diag_capture_stats st;
    df_error serr = {0};
    if (df_diag_capture_stop(c, &st, &serr)) return fail("capture stop", &serr);
    df_diag_capture_destroy(c);
    if (k) return fail("preview", &err);
    printf("capture: backend=%s samples=%llu lost=%llu effective_hz=%.1f trace_bytes=%llu scope=%llu\n",
           df_diag_backend_name(st.backend), (unsigned long long)st.samples, (unsigned long long)st.samples_lost,
           st.effective_hz, (unsigned long long)st.trace_bytes, (unsigned long long)st.capture_scope_id);
    df_report_build_options bo = {.capture_scope_id = st.capture_scope_id};
    df_report_profile *r = NULL;
    if (df_report_build_from_trace_file(trace, &bo, &r, &err) ||
        df_report_write_dfprofile(r, art, DF_REPORT_REPLACE, &err) ||
        df_report_write_html(r, html, DF_REPORT_REPLACE, &err))
        return fail("report", &err);
    df_report_inspector *in = NULL;
    df_report_inspect_options io = {.depth = 3, .limit = 40};
    df_buf out;
    df_buf_init(&out, 0);
    if (df_report_inspector_create(r, &io, &in, &err) || df_report_inspector_render(in, &out, &err))
        return fail("inspect", &err);
    fwrite(out.data, 1, out.len, stdout);
    df_buf_free(&out);
    df_report_inspector_destroy(in);
    df_report_profile_destroy(r);
    df_preview_free(p);
    df_table_release(q);
    df_table_release(t);
    df_session_free(s);
    return 0;
}
