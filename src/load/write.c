/*
 * One SQL Server output: planning, the query stream, and the load-mode
 * lifecycle (docs/writes.md has the SQL of every step and what each mode
 * guarantees).
 *
 * Nothing becomes visible in the target before the final `swap_target`
 * step, in every mode:
 *
 *   append_existing  BEGIN TRANSACTION; [pre-count]; INSERT BULK into the
 *                    target; post-count; COMMIT (the swap).  Any failure
 *                    rolls the transaction back: the target is as before.
 *   create_and_load  CREATE TABLE staging (<t>__df_load_<n>); INSERT BULK
 *                    WITH (TABLOCK); count; in one transaction holding an
 *                    application lock: the target must still be absent,
 *                    sp_rename staging -> target.  Failure: DROP staging.
 *   replace          CREATE TABLE staging (<t>__df_replace_<n>); INSERT BULK
 *                    WITH (TABLOCK); count; in one transaction holding the
 *                    lock (waiting up to 60 s for concurrent replaces):
 *                    when the target exists with the same columns,
 *                    TRUNCATE + INSERT ... SELECT into it (indexes,
 *                    constraints, triggers and permissions stay); else
 *                    rename the old table away, rename staging in, drop
 *                    the old one.  Failure: DROP staging; the target is
 *                    untouched unless the COMMIT succeeded.
 *
 * Each step is a diagnostics stage of the operation (owner = output), so
 * the report's phase timings and the trace come from the same spans.
 * Output failures are returned as DF_ERR_MSSQL_WRITE_PHASE with the
 * reference implementation's failure context (the partial report inside).
 */
#include "load/write_run_int.h"

#include <stdio.h>


/* ------------------------------------------------------------------------ */
/* The run                                                                   */


/* Stage and failure phase of each step (the stage names the phase timing it feeds). */
const df_wstep_info df__wrun_steps[WSTEP_COUNT_] = {
    {DF_DIAG_STAGE_PLAN_OUTPUT_SCHEMA, "mssql_schema_planning"},
    {DF_DIAG_STAGE_PLAN_SQL_SERVER_TARGET, "mssql_schema_planning"},
    {DF_DIAG_STAGE_BUILD_QUERY_DATAFRAME, "query_dataframe_planning"},
    {DF_DIAG_STAGE_BUILD_PHYSICAL_PLAN, "query_physical_planning"},
    {DF_DIAG_STAGE_SET_UP_QUERY_STREAM, "query_stream_setup"},
    {DF_DIAG_STAGE_CONNECT, "connect"},
    {DF_DIAG_STAGE_PREPARE_TARGET_LIFECYCLE, "prepare_target_lifecycle"},
    {DF_DIAG_STAGE_INITIALIZE_BULK_WRITER, "initialize_writer"},
    {DF_DIAG_STAGE_POLL_QUERY_BATCH, "poll_batch_stream"},
    {DF_DIAG_STAGE_VALIDATE_BATCH_SCHEMA, "validate_batch_schema"},
    {DF_DIAG_STAGE_WRITE_BATCH, "write_batch"},
    {DF_DIAG_STAGE_FINALIZE_WRITER, "finalize"},
    {DF_DIAG_STAGE_VALIDATE_WRITTEN_TARGET, "validation"},
    {DF_DIAG_STAGE_SWAP_REPLACE_TARGET, "swap_target"},
    {DF_DIAG_STAGE_CLEAN_UP_PREPARED_TARGET, "cleanup"},
};

bool df__wrun_step_active(const df_wrun *r, int step) {
    df_diag_timing t = df_diag_operation_stage_timing(r->ctx->op, df__wrun_steps[step].stage, r->ctx->owner);
    return t.state != DF_DIAG_TIMING_NOT_STARTED;
}

df_diag_span df__wrun_step_begin(const df_wrun *r, int step) {
    return df__stage_begin(&r->stages, df__wrun_steps[step].stage, NULL);
}

df_errkind df__wrun_fail_msg(df_wrun *r, int step, df_error *err, const char *fmt, ...) {
    char msg[DF_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "%s", msg);
    return df__stage_run_fail(&r->stages, step, DF_ERR_MSSQL_WRITE_PHASE, err);
}

/* The stage runner's progress labels, with the run's counts so far. */
static void progress_label(const void *user, const char *label) {
    const df_wrun *r = user;
    df__write_progress(r->opts, DF_PROGRESS_PHASE, label, r->ctx, r->spec->name, r->rows, r->batches, r->bytes);
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */

void df__write_result_clear(df_write_result *res) {
    df_free(res->report);
    df_free(res->context);
    df_free(res->summary);
    df_free(res->batch_shaping);
    memset(res, 0, sizeof *res);
}

static void run_free(df_wrun *r) {
    df__wpool_abort(r->pool);
    if (r->bulk) df_mssql_bulk_abort(r->bulk);
    df_mssql_close(r->conn);
    df_batch_stream_close(r->stream);
    if (r->profile) df_exec_profile_release(r->profile);
    df__write_plan_clear(&r->plan);
    df_free(r->bulk_cols);
    df_free(r->q_staging);
    df_free(r->observed);
}

static void log_debug_event(void *user, const char *event, const char *fields_json) {
    df__write_log(user, DF_LOG_DEBUG, event, fields_json);
}

/* A step that was stopped by the caller's cancel flag, or DF_OK when the flag is clear. */
static df_errkind check_cancel(df_wrun *r, int step, df_error *err) {
    if (!df__wrun_cancelled(r)) return DF_OK;
    df_error_set(err, DF_ERR_CANCELLED, "the write was cancelled");
    return df__stage_run_fail(&r->stages, step, DF_ERR_CANCELLED, err);
}

/* The lifecycle after planning; returns the first failure. */
static df_errkind run_lifecycle(df_wrun *r, df_error *err) {
    df__stage_run_label(&r->stages, "Preparing data stream");
    DF_TRY(df__wrun_stream_steps(r, err));
    bool bench = r->ctx->stream_benchmark;
    if (!bench) {
        DF_TRY(df__wrun_connect_step(r, err));
        df__wcancel_watch(&r->watcher, r->conn);
        DF_TRY(df__wrun_prepare_step(r, err));
        DF_TRY(df__wrun_init_step(r, err));
        df__wcancel_bulk(&r->watcher, true);
    }
    df__stage_run_label(&r->stages, bench ? "Preparing data stream" : "Writing to SQL Server");
    df_diag_span sw = df_diag_stage_begin(r->ctx->op, DF_DIAG_STAGE_STREAM_AND_WRITE_BATCHES, r->ctx->owner);
    if (r->pool) df__wpool_enter(r->pool); /* the bulk-load threads work for this stage now */
    uint64_t t0 = df_now_ns();
    df_errkind k = df__wrun_stream_loop(r, bench, err);
    r->write_ns = df_now_ns() - t0;
    df_diag_span_end(sw, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    /* Closing joins the workers so the profile is complete (cancelled when the stream did not end). */
    df_exec_profile *execution = r->opts->log.fn ? df_exec_stream_execution(r->stream) : NULL;
    df_batch_stream_close(r->stream);
    r->stream = NULL;
    if (execution) {
        df_profile_meta meta = {df_diag_query_scope_name(DF_DIAG_QUERY_MSSQL_OUTPUT), -1};
        df_exec_terminal_events(execution, &meta, log_debug_event, (void *)r->opts);
        df_exec_profile_release(execution);
    }
    if (k != DF_OK || bench) return k;
    DF_TRY(check_cancel(r, WSTEP_FINALIZE, err));
    DF_TRY(df__wrun_finalize_step(r, err));
    df__wcancel_bulk(&r->watcher, false); /* the bulk load is done: statements are cancelled with ATTENTION again */
    DF_TRY(df__wrun_validation_step(r, err));
    /* Past this point the load is published as a whole: no cancel halfway through the swap. */
    df__wcancel_stop(&r->watcher);
    DF_TRY(check_cancel(r, WSTEP_SWAP, err));
    return df__wrun_swap_step(r, err);
}

/* Logs output.started / completed / failed. */
static void log_output(const df_wrun *r, const char *event, df_log_level level) {
    if (!r->opts->log.fn) return;
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "load_mode", df__write_mode_name(r->spec->mode));
    df_json_kv_string(&w, "output_name", r->spec->name);
    df_json_kv_string(&w, "target_schema", r->spec->schema);
    df_json_kv_string(&w, "target_table", r->spec->target);
    if (r->stages.failed >= 0) {
        df_json_kv_string(&w, "error_category", "delta_funnel_error");
        df_json_kv_string(&w, "error_summary", r->stages.cause);
        df_json_kv_string(&w, "failed_phase", df__wrun_steps[r->stages.failed].phase);
    } else if (!strcmp(event, "output.completed")) {
        df_json_kv_int(&w, "rows_written", r->rows);
        df_json_kv_int(&w, "batches_written", r->batches);
        if (r->strategy) df_json_kv_string(&w, "swap_strategy", r->strategy);
    }
    df_json_object_end(&w);
    if (df_json_writer_finish(&w, NULL) == DF_OK) df__write_log(r->opts, level, event, b.data);
    df_buf_free(&b);
}

/* Turns the recorded failure into the reference error + context. */
static void failure_error(df_wrun *r, const df_wtimings *ts, df_write_result *res, df_error *err) {
    char out[160];
    df__session_escape_into(out, sizeof out, r->spec->name);
    char phase_display[48];
    snprintf(phase_display, sizeof phase_display, "%s", df__wrun_steps[r->stages.failed].phase);
    for (char *p = phase_display; *p; p++)
        if (*p == '_') *p = ' ';
    df_errkind kind = r->stages.failed_kind == DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION ? DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION
                                                                           : DF_ERR_MSSQL_WRITE_PHASE;
    char msg[DF_ERROR_MESSAGE_SIZE + 512];
    if (kind == DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION)
        snprintf(msg, sizeof msg, "%s", r->stages.cause);
    else
        snprintf(msg, sizeof msg, "MSSQL write error for output `%s` during %s: %s", out, phase_display, r->stages.cause);
    if (r->cleanup_error[0]) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof msg - used, "; cleanup failed: %s", r->cleanup_error);
    }
    df_buf rep, ctx;
    df_buf_init(&rep, 0);
    df_buf_init(&ctx, 0);
    if (df__wrun_build_report(r, true, ts, &rep, NULL) == DF_OK && df__wrun_build_context(r, ts, rep.data, &ctx, NULL) == DF_OK) {
        df_buf_take_text(&rep, &res->report, NULL, NULL);
        res->context = df_strdup(ctx.data);
    }
    df_buf_free(&rep);
    df_buf_free(&ctx);
    res->summary = df_strdup(msg);
    df_error_set(err, kind, "%s", msg);
    df_error_set_phase(err, df__wrun_steps[r->stages.failed].phase);
    df_error_set_origin(err, df_errkind_name(r->stages.failed_kind));
    if (res->context) df_error_set_context(err, res->context);
}

static void fill_result(const df_wrun *r, bool failed, df_write_result *res) {
    res->ok = !failed;
    res->output_rows = r->rows;
    res->output_rows_exact = !failed;
    res->target_rows = r->swapped || !failed ? r->after : -1;
    snprintf(res->validation_kind, sizeof res->validation_kind, "%s", r->val_kind);
    snprintf(res->validation_reason, sizeof res->validation_reason, "%s", r->val_reason ? r->val_reason : "");
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df__wrun_batch_shaping(&w, r, failed);
    if (df_json_writer_finish(&w, NULL) == DF_OK) df_buf_take_text(&b, &res->batch_shaping, NULL, NULL);
    df_buf_free(&b);
}

df_errkind df__write_run(const df_output_spec *spec, const df_write_options *opts, const df_write_ctx *ctx,
                         df_write_result *res, df_error *err) {
    memset(res, 0, sizeof *res);
    df_wrun r;
    memset(&r, 0, sizeof r);
    r.spec = spec;
    r.opts = opts;
    r.ctx = ctx;
    r.s = spec->table->session;
    r.e = spec->table->entry;
    r.query = ctx->query ? ctx->query : r.e->query;
    /* A single write's phases are its own; inside write_all they are write_all's. */
    df__stage_run_init(&r.stages, ctx->op, ctx->owner, !ctx->in_write_all);
    df__stage_run_set_progress(&r.stages, progress_label, &r);
    r.before = r.after = -1;
    r.conn_str = spec->connection_string ? spec->connection_string : r.s->opts->default_connection_string;
    r.conn_source = spec->connection_string ? "target_override" : "context_default";
    r.vmode = r.s->opts->validation.target_validation_mode;
    r.val_kind = "skipped";
    r.val_reason = "not_executed";
    r.cleanup = spec->mode == DF_LOAD_APPEND_EXISTING || ctx->stream_benchmark ? "not_applicable" : "not_attempted";
    df__stage_run_phase(&r.stages, DF_DIAG_PHASE_PLANNING, DF_OK);
    df__stage_run_label(&r.stages, "Planning output");
    df_errkind k = df__wrun_plan_steps(&r, err);
    if (k != DF_OK) {
        df__stage_run_end(&r.stages, k);
        run_free(&r);
        return k; /* planning errors are raised as they are */
    }
    log_output(&r, "output.started", DF_LOG_INFO);
    if (!ctx->stream_benchmark) df__wcancel_start(&r.watcher, opts->cancel);
    k = run_lifecycle(&r, err);
    /* Cleanup runs its statements on the load's connection: nothing may cancel them. */
    df__wcancel_stop(&r.watcher);
    r.cancelled = k != DF_OK && df__wrun_cancelled(&r);
    if (ctx->stream_benchmark && k == DF_OK) {
        r.val_kind = "skipped";
        r.val_reason = "not_executed";
    }
    bool failed = k != DF_OK;
    df_wtimings ts;
    if (failed) {
        if (k == DF_ERR_OUT_OF_MEMORY && r.stages.failed < 0) {
            df__stage_run_end(&r.stages, k);
            run_free(&r);
            return k;
        }
        if (r.stages.failed < 0) df__stage_run_fail(&r.stages, WSTEP_POLL, k, err);
        if (!strcmp(r.val_kind, "skipped")) r.val_reason = "not_executed";
        if (!ctx->stream_benchmark) df__wrun_cleanup_step(&r);
        df__stage_run_phase(&r.stages, DF_DIAG_PHASE_FINALIZATION, k);
        df__wrun_collect_timings(&r, &ts, true, false);
        failure_error(&r, &ts, res, err);
        log_output(&r, "output.failed", DF_LOG_ERROR);
    } else {
        df__stage_run_phase(&r.stages, DF_DIAG_PHASE_FINALIZATION, DF_OK);
        df__wrun_collect_timings(&r, &ts, false, false);
        df_buf b;
        df_buf_init(&b, 0);
        k = df__wrun_build_report(&r, false, &ts, &b, err);
        if (k == DF_OK) k = df_buf_take_text(&b, &res->report, NULL, err);
        df_buf_free(&b);
        log_output(&r, "output.completed", DF_LOG_INFO);
    }
    res->timings = ts;
    fill_result(&r, failed, res);
    df__stage_run_end(&r.stages, failed ? DF_OK : k);
    run_free(&r);
    return k == DF_OK || failed ? DF_OK : k;
}

/* ------------------------------------------------------------------------ */
/* write_to_mssql                                                            */

static df_errkind dry_run(const df_output_spec *spec, const df_write_options *opts, char **out, df_error *err) {
    df__write_progress(opts, DF_PROGRESS_STARTED, "Planning SQL Server write", NULL, NULL, 0, 0, 0);
    df__write_progress(opts, DF_PROGRESS_PHASE, "Planning output", NULL, spec->name, 0, 0, 0);
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_errkind k = df__write_dry_run_report(spec, &w, err);
    df_errkind k2 = df_json_writer_finish(&w, k == DF_OK ? err : NULL);
    if (k == DF_OK) k = k2;
    if (k == DF_OK) k = df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    df__write_progress(opts, DF_PROGRESS_FINISHED, k == DF_OK ? "Completed" : "Failed", NULL, NULL, 0, 0, 0);
    return k;
}

df_errkind df_output_write(const df_output_spec *spec, const df_write_options *opts_in, char **report_json,
                           df_error *err) {
    *report_json = NULL;
    df_write_options opts;
    if (opts_in)
        opts = *opts_in;
    else
        df_write_options_init(&opts);
    if (opts.dry_run && opts.execution_profile) {
        df_error_set(err, DF_ERR_INVALID_OPTION_VALUE, "profiling is only supported for execute `write_to_mssql` calls");
        df_error_set_phase(err, "config");
        return DF_ERR_INVALID_OPTION_VALUE;
    }
    df_session *s = spec->table->session;
    df__session_read_begin(s);
    if (opts.dry_run) {
        df_errkind k = dry_run(spec, &opts, report_json, err);
        df__session_read_end(s);
        return k;
    }
    df_write_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.owner = 1;
    df_errkind k = df_diag_operation_begin(DF_DIAG_OP_MSSQL_WRITE, NULL, &ctx.op, err);
    if (k != DF_OK) {
        df__session_read_end(s);
        return k;
    }
    df__write_progress(&opts, DF_PROGRESS_STARTED, "Writing to SQL Server", NULL, NULL, 0, 0, 0);
    df_write_result res;
    df_error tmp;
    memset(&tmp, 0, sizeof tmp);
    k = df__write_run(spec, &opts, &ctx, &res, &tmp);
    bool ok = k == DF_OK && res.ok;
    df_diag_operation_end(ctx.op, ok ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    bool cancelled = !ok && opts.cancel && atomic_load(opts.cancel);
    df__write_progress(&opts, DF_PROGRESS_FINISHED, ok ? "Completed" : cancelled ? "Cancelled" : "Failed", NULL, NULL,
                       0, 0, 0);
    if (ok) {
        *report_json = res.report;
        res.report = NULL;
    } else {
        if (k == DF_OK) k = tmp.kind != DF_OK ? tmp.kind : DF_ERR_MSSQL_WRITE_PHASE;
        if (err) df_error_move(err, &tmp);
    }
    df_error_clear(&tmp);
    df__write_result_clear(&res);
    df_diag_operation_destroy(ctx.op);
    df__session_read_end(s);
    return k;
}
