/*
 * Fuzz target: Perfetto trace bytes -> capture-health row (the path
 * capture-workload and `delta-funnel-perfetto capture-health` take, which
 * also accepts traces without operations, with missing identities, or cut
 * in the middle of their last packet).  Every input must fail with an
 * error or give a row whose counters are consistent and whose CSV renders
 * with the 25 reference columns.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void must(int cond) {
    if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    df_report_health h;
    df_error err = {0};
    df_report_build_options o = {.max_trace_bytes = 16u << 20, .capture_scope_id = size & 4 ? 1 : 0};
    if (df_report_capture_health(data, size, &o, &h, &err) != DF_OK) {
        must(err.kind != DF_OK);
        df_error_clear(&err);
        return 0;
    }
    must(h.saved_file_bytes == (int64_t)size && h.configured_file_cap_bytes == -1);
    must(h.incomplete_operation_root_count <= h.operation_root_count);
    must(h.perf_sample_without_callsite_count <= h.perf_sample_count);
    must(!h.capture_complete || (h.semantic_complete && h.finalization_observed));
    must(!h.semantic_complete || h.operation_root_count > 0);
    df_buf csv;
    df_buf_init(&csv, 0);
    must(df_report_health_csv(&h, &csv, NULL) == DF_OK);
    int commas = 0, lines = 0;
    for (size_t i = 0; i < csv.len; i++) commas += csv.data[i] == ',', lines += csv.data[i] == '\n';
    must(commas == 48 && lines == 2);
    df_buf_free(&csv);
    return 0;
}
