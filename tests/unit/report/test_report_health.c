/*
 * Unit tests for the capture-health row:
 * complete, incomplete, truncated and operation-less traces, traces cut
 * short mid-packet, missing identities (counted, not refused) and the CSV
 * layout.
 */
#include "report_test_util.h"

static df_report_health health_of(synth *s, uint64_t scope) {
    size_t len;
    const uint8_t *bytes = synth_bytes(s, &len);
    df_report_build_options o = {.capture_scope_id = scope};
    df_report_health h;
    df_error err = {0};
    DF_ASSERT_OK(df_report_capture_health(bytes, len, &o, &h, &err), &err);
    DF_ASSERT_EQ_INT(h.saved_file_bytes, (int64_t)len);
    DF_ASSERT_EQ_INT(h.configured_file_cap_bytes, -1);
    synth_free(s);
    return h;
}

DF_TEST(complete_preview_is_healthy) {
    df_report_health h = health_of(scenario_preview(), 0);
    DF_ASSERT(h.capture_complete && h.semantic_complete && h.finalization_observed);
    DF_ASSERT_EQ_INT(h.operation_root_count, 1);
    DF_ASSERT_EQ_INT(h.incomplete_operation_root_count, 0);
    DF_ASSERT_EQ_INT(h.operator_slice_count, 2);
    DF_ASSERT_EQ_INT(h.execution_activity_slice_count, 1);
    DF_ASSERT_EQ_INT(h.truncation_marker_count, 0);
    DF_ASSERT_EQ_INT(h.missing_identity_field_count, 0);
    DF_ASSERT_EQ_INT(h.missing_terminal_result_count, 0);
    /* Samples of the profiled process only (the other process's sample is not counted). */
    DF_ASSERT_EQ_INT(h.perf_sample_count, 8);
    DF_ASSERT_EQ_INT(h.perf_sample_without_callsite_count, 1);
    DF_ASSERT(h.trace_duration_ns > 0);
}

DF_TEST(incomplete_and_truncated_captures_say_why) {
    df_report_health h = health_of(scenario_incomplete(), 0);
    DF_ASSERT(!h.capture_complete && !h.semantic_complete && !h.finalization_observed);
    DF_ASSERT_EQ_INT(h.incomplete_operation_root_count, 1);
    DF_ASSERT(h.missing_terminal_result_count >= 1);
    h = health_of(scenario_truncated(), 0);
    DF_ASSERT(!h.capture_complete && !h.semantic_complete && h.finalization_observed);
    DF_ASSERT_EQ_INT(h.truncation_marker_count, 1);
}

DF_TEST(traces_without_operations_or_identity_still_have_a_row) {
    df_report_health h = health_of(scenario_empty(), 0);
    DF_ASSERT_EQ_INT(h.operation_root_count, 0);
    DF_ASSERT(!h.semantic_complete && !h.capture_complete);
    DF_ASSERT(h.perf_sample_count > 0); /* no operation: every sample of the trace counts */
    h = health_of(scenario_missing_identity(), 0);
    DF_ASSERT(h.missing_identity_field_count > 0);
    DF_ASSERT(!h.semantic_complete);
    /* A scope selects its operations only. */
    h = health_of(scenario_scoped(), 5);
    DF_ASSERT_EQ_INT(h.operation_root_count, 1);
    h = health_of(scenario_scoped(), 77);
    DF_ASSERT_EQ_INT(h.operation_root_count, 0);
}

DF_TEST(a_trace_cut_mid_packet_keeps_its_complete_packets) {
    synth *s = scenario_preview();
    size_t len;
    const uint8_t *bytes = synth_bytes(s, &len);
    df_report_health full;
    df_error err = {0};
    DF_ASSERT_OK(df_report_capture_health(bytes, len, NULL, &full, &err), &err);
    /* Every cut inside the last packets: decodable, counted as data-source loss, never complete. */
    int cuts = 0;
    for (size_t cut = len - 1; cut > len - 40; cut--) {
        df_report_health h;
        df_errkind k = df_report_capture_health(bytes, cut, NULL, &h, &err);
        if (k != DF_OK) {
            df_error_clear(&err);
            continue; /* a cut at a packet boundary inside a nested field may still be malformed */
        }
        cuts++;
        DF_ASSERT(!h.capture_complete);
        DF_ASSERT(h.data_source_loss_count >= 1 || !h.finalization_observed);
    }
    DF_ASSERT(cuts > 30);
    /* Garbage is still malformed, not "truncated". */
    uint8_t junk[64];
    memset(junk, 0xFF, sizeof junk);
    df_report_health h;
    DF_ASSERT_KIND(df_report_capture_health(junk, sizeof junk, NULL, &h, &err), DF_ERR_MALFORMED_TRACE);
    DF_ASSERT_EQ_STR(df_errkind_name(err.kind), "malformed_trace");
    df_error_clear(&err);
    synth_free(s);
}

DF_TEST(csv_has_the_reference_columns_in_order) {
    df_report_health h = health_of(scenario_preview(), 0);
    h.configured_file_cap_bytes = 536870912;
    h.trace_duration_ns = 1234567890;
    df_buf out;
    df_buf_init(&out, 0);
    df_error err = {0};
    DF_ASSERT_OK(df_report_health_csv(&h, &out, &err), &err);
    const char *nl = strchr(out.data, '\n');
    DF_ASSERT(nl != NULL);
    DF_ASSERT(!strncmp(out.data, "capture_complete,semantic_complete,operation_root_count,", 56));
    int header_cols = 1, row_cols = 1;
    for (const char *p = out.data; p < nl; p++) header_cols += *p == ',';
    for (const char *p = nl + 1; *p && *p != '\n'; p++) row_cols += *p == ',';
    DF_ASSERT_EQ_INT(header_cols, 25);
    DF_ASSERT_EQ_INT(row_cols, 25);
    DF_ASSERT(strstr(out.data, ",finalization_observed,trace_duration_seconds,configured_file_cap_bytes,saved_file_bytes\n"));
    DF_ASSERT(strstr(nl, ",1,1.234567,536870912,") != NULL);
    DF_ASSERT(!strncmp(nl + 1, "1,1,1,0,", 8));
    df_buf_free(&out);
}
