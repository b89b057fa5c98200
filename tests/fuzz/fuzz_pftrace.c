/*
 * Fuzz target: Perfetto trace bytes -> ranked model.  Every input must
 * either fail with an error or build a model that validates, encodes to an
 * artifact that decodes back to the same bytes, and renders every view.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void must(int cond) {
    if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_report_profile *p = NULL;
    df_error err = {0};
    df_report_build_options o = {.max_trace_bytes = 16u << 20};
    if (df_report_build_from_trace(data, size, &o, &p, &err) != DF_OK) {
        must(p == NULL && err.kind != DF_OK);
        df_error_clear(&err);
        return 0;
    }
    must(df_report_validate(p, NULL) == DF_OK);
    df_buf a, b;
    df_buf_init(&a, 0);
    df_buf_init(&b, 0);
    must(df_report_encode_dfprofile(p, &a, NULL) == DF_OK);
    df_report_profile *q = NULL;
    must(df_report_decode_dfprofile(a.data, a.len, &q, NULL) == DF_OK);
    must(df_report_encode_dfprofile(q, &b, NULL) == DF_OK);
    must(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    df_buf_reset(&b);
    must(df_report_render_html(p, &b, NULL) == DF_OK);
    df_report_inspect_options io = {.depth = 32, .limit = 200, .all_frames = size & 1, .full_symbols = size & 2};
    df_report_inspector *in = NULL;
    must(df_report_inspector_create(p, &io, &in, NULL) == DF_OK);
    df_buf_reset(&b);
    must(df_report_inspector_render(in, &b, NULL) == DF_OK);
    df_report_inspector_destroy(in);
    df_buf_free(&a);
    df_buf_free(&b);
    df_report_profile_destroy(p);
    df_report_profile_destroy(q);
    return 0;
}
