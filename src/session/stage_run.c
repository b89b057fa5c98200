/*
 * The stage runner: one diagnostics operation's semantic stages run in
 * sequence, each a timed span, grouped under the operation's phases, with
 * a progress label where the user sees one and the first failure recorded.
 *
 * Previews, the SQL Server write lifecycle and write_all's cache
 * materialisation all run this way; before it each kept its own copy of
 * the span, phase and failure bookkeeping, and a single write had no
 * Planning or Finalization phase.
 */
#include "session/session.h"

void df__stage_run_init(df_stage_run *sr, df_diag_operation *op, uint64_t owner, bool owns_phases) {
    memset(sr, 0, sizeof *sr);
    sr->op = op;
    sr->owner = owner;
    sr->owns_phases = owns_phases;
    sr->failed = -1;
}

void df__stage_run_set_progress(df_stage_run *sr, df_stage_progress_fn fn, const void *user) {
    sr->progress = fn;
    sr->progress_user = user;
}

static df_diag_result result_of(df_errkind k) { return k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR; }

void df__stage_run_phase(df_stage_run *sr, df_diag_phase phase, df_errkind previous) {
    if (!sr->owns_phases || sr->phase_id == phase) return;
    if (sr->phase_id) df_diag_span_end(sr->phase, result_of(previous));
    sr->phase = phase ? df_diag_phase_begin(sr->op, phase) : DF_DIAG_SPAN_NONE;
    sr->phase_id = phase;
}

void df__stage_run_label(const df_stage_run *sr, const char *label) {
    if (label && sr->progress) sr->progress(sr->progress_user, label);
}

df_diag_span df__stage_begin(const df_stage_run *sr, df_diag_stage stage, const char *label) {
    df__stage_run_label(sr, label);
    return df_diag_stage_begin(sr->op, stage, sr->owner);
}

df_errkind df__stage_end(df_diag_span span, df_errkind k) {
    df_diag_span_end(span, result_of(k));
    return k;
}

df_errkind df__stage_run_fail(df_stage_run *sr, int index, df_errkind k, const df_error *err) {
    if (sr->failed >= 0) return k;
    sr->failed = index;
    sr->failed_kind = k;
    /*
     * Kept on one line: the cause is shown in reports and messages, never
     * parsed.  Only control characters are escaped, so text a lower layer
     * escaped (names in its own message) is not escaped a second time and
     * a server's message keeps its quotes.
     */
    df__session_escape_controls_into(sr->cause, sizeof sr->cause, err ? err->message : df_errkind_name(k));
    return k;
}

void df__stage_run_end(df_stage_run *sr, df_errkind k) { df__stage_run_phase(sr, 0, k); }

df_errkind df__stage_run_all(df_stage_run *sr, const df_stage_def *defs, int n, void *ctx, df_error *err) {
    df_errkind k = DF_OK;
    for (int i = 0; i < n && k == DF_OK; i++) {
        if (defs[i].phase) df__stage_run_phase(sr, defs[i].phase, DF_OK);
        df_diag_span span = df__stage_begin(sr, defs[i].stage, defs[i].label);
        k = df__stage_end(span, defs[i].fn(ctx, err));
        if (k != DF_OK) df__stage_run_fail(sr, defs[i].id, k, err);
    }
    return k;
}
