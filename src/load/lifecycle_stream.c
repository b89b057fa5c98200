/*
 * Planning and streaming for one output: the plan steps, the query's
 * physical plan and stream, and the loop that pulls batches, observes
 * value lengths and hands them to the bulk writer (or to the parallel
 * bulk pool).
 */
#include "load/write_run_int.h"

#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Planning and the query stream                                             */

df_errkind df__wrun_plan_steps(df_wrun *r, df_error *err) {
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_SCHEMA);
    r->schema = df_query_schema(r->query);
    df__stage_end(sp, DF_OK);
    sp = df__wrun_step_begin(r, WSTEP_TARGET);
    df_errkind k = df__write_plan_output(r->spec, r->schema, &r->plan, err);
    df__stage_end(sp, k);
    if (k != DF_OK) return k;
    r->observed = df_calloc((size_t)DF_MAX(r->plan.ncols, 1), sizeof *r->observed);
    return r->observed ? DF_OK : DF_OOM(err);
}

df_errkind df__wrun_stream_steps(df_wrun *r, df_error *err) {
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_DATAFRAME);
    df__stage_end(sp, DF_OK); /* the query was planned with the table (or replanned against caches) */
    sp = df__wrun_step_begin(r, WSTEP_PHYSICAL);
    df_exec_options eo;
    df__session_exec_options(r->s, &eo);
    eo.execution_profile = r->opts->execution_profile;
    eo.cancel = r->opts->cancel;
    /* Traced: the output's query (owner = output name) with its planning span around physical planning. */
    df_diag_query *dq = NULL;
    df_errkind k = df_diag_query_begin(r->ctx->op, DF_DIAG_QUERY_MSSQL_OUTPUT, r->spec->name, &dq, err);
    eo.diag_query = dq;
    df_diag_span planning = df_diag_query_planning_begin(dq);
    if (k == DF_OK) k = df_query_execute(r->query, &eo, &r->stream, err);
    df_diag_span_end(planning, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    df__stage_end(sp, k);
    if (k != DF_OK) return df__stage_run_fail(&r->stages, WSTEP_PHYSICAL, k, err);
    /* Execution starts with the query stream's setup. */
    df__stage_run_phase(&r->stages, DF_DIAG_PHASE_EXECUTION, DF_OK);
    sp = df__wrun_step_begin(r, WSTEP_STREAM);
    if (!df_schema_equals(r->stream->schema, r->schema))
        k = df_error_set(err, DF_ERR_DEPENDENCY_COMPATIBILITY, "the stream schema differs from the planned schema");
    if (k == DF_OK && r->opts->execution_profile) r->profile = df_exec_stream_profile(r->stream);
    df__stage_end(sp, k);
    return k == DF_OK ? DF_OK : df__stage_run_fail(&r->stages, WSTEP_STREAM, k, err);
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */

/* Longest value of a string (UTF-16 units) or binary (bytes) column in this batch. */
static int64_t longest(const df_vec *v, df_observe how) {
    int64_t best = 0;
    const int32_t *off = DF_VEC_VALUES(v, const int32_t);
    const uint8_t *data = v->data ? v->data->data : NULL;
    for (int64_t i = 0; i < v->length; i++) {
        int64_t a = off[i], b = off[i + 1];
        if (b - a <= best && how == DF_OBSERVE_VARBINARY) continue;
        if (how == DF_OBSERVE_VARBINARY) {
            best = b - a;
            continue;
        }
        if (b - a <= best) continue; /* UTF-16 units never exceed UTF-8 bytes */
        int64_t units = 0;
        for (int64_t j = a; j < b; j++) units += ((data[j] & 0xC0) != 0x80) + (data[j] >= 0xF0);
        if (units > best) best = units;
    }
    return best;
}

static void observe_batch(df_wrun *r, const df_batch *b) {
    if (!r->plan.any_observed) return;
    for (int32_t j = 0; j < r->plan.ncols; j++) {
        if (r->plan.observe[j] == DF_OBSERVE_NONE) continue;
        int64_t m = longest(b->cols[j], r->plan.observe[j]);
        if (m > r->observed[j]) r->observed[j] = m;
    }
}

/*
 * The diagnostics code of a value conversion failure of the bulk writer: the
 * name of the subkind it carries (bulk.c sets one of these for every
 * value), never anything read from its message.
 */
const char *df__wrun_conversion_code(const df_error *err) {
    switch (err ? err->subkind : DF_OK) {
    case DF_ERR_VALUE_TOO_LONG:
    case DF_ERR_NULL_IN_NON_NULLABLE_COLUMN:
    case DF_ERR_NON_FINITE_FLOAT:
    case DF_ERR_DECIMAL_OUT_OF_RANGE:
    case DF_ERR_INTEGER_OUT_OF_RANGE:
    case DF_ERR_TIMESTAMP_OUT_OF_RANGE:
    case DF_ERR_LOSSY_CONVERSION:
        return df_errkind_name(err->subkind);
    default:
        return df_errkind_name(DF_ERR_VALUE_CONVERSION_UNSUPPORTED);
    }
}

static df_errkind write_one(df_wrun *r, df_batch *b, df_error *err) {
    df_diag_span sp = df__wrun_step_begin(r, WSTEP_VALIDATE_BATCH);
    df_errkind k = DF_OK;
    if (b->schema != r->schema && !df_schema_equals(b->schema, r->schema)) {
        k = df_error_set(err, DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION,
                         "MSSQL batch schema validation error for output `%s`: the batch schema differs from the "
                         "planned output schema", r->spec->name);
        snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "schema_mismatch");
    }
    df__stage_end(sp, k);
    if (k != DF_OK) return df__stage_run_fail(&r->stages, WSTEP_VALIDATE_BATCH, k, err);
    observe_batch(r, b);
    sp = df__wrun_step_begin(r, WSTEP_WRITE);
    uint64_t before = r->pool ? 0 : df_mssql_bulk_bytes(r->bulk);
    /* With a pool, write_batch times the hand-over (which waits while every connection is busy). */
    k = r->pool ? df__wpool_push(r->pool, b, err) : df_mssql_bulk_write(r->bulk, b, err);
    df__stage_end(sp, k);
    if (k != DF_OK) {
        if (k == DF_ERR_VALUE_CONVERSION && err) {
            const char *code = df__wrun_conversion_code(err);
            char msg[DF_ERROR_MESSAGE_SIZE];
            df__session_escape_into(msg, sizeof msg, err->message);
            snprintf(r->diagnostics_code, sizeof r->diagnostics_code, "%s", code);
            df_error_set(err, DF_ERR_MSSQL_WRITE_PHASE, "arrow-sql-server write_batch failed: %s (%s)", msg, code);
        }
        return df__stage_run_fail(&r->stages, WSTEP_WRITE, k, err);
    }
    r->rows += b->nrows;
    r->batches++;
    r->bytes = r->pool ? df__wpool_bytes(r->pool) : r->bytes + (int64_t)(df_mssql_bulk_bytes(r->bulk) - before);
    df__write_progress_rows(r->opts, r->ctx, r->spec->name, r->rows, r->batches, r->bytes, r->stream);
    return DF_OK;
}

/* Pulls batches until the stream ends; `sink` NULL drains (stream benchmark). */
df_errkind df__wrun_stream_loop(df_wrun *r, bool drain_only, df_error *err) {
    for (;;) {
        if (r->opts->cancel && atomic_load(r->opts->cancel)) {
            df_error_set(err, DF_ERR_CANCELLED, "the write was cancelled");
            return df__stage_run_fail(&r->stages, WSTEP_POLL, DF_ERR_CANCELLED, err);
        }
        df_batch *b = NULL;
        df_diag_span sp = df__wrun_step_begin(r, WSTEP_POLL);
        df_errkind k = df_batch_stream_next(r->stream, &b, err);
        df__stage_end(sp, k);
        if (k != DF_OK) {
            r->stream_error = true;
            return df__stage_run_fail(&r->stages, WSTEP_POLL, k, err);
        }
        if (!b) {
            r->stream_done = true;
            return DF_OK;
        }
        if (drain_only) {
            df_diag_span v = df__wrun_step_begin(r, WSTEP_VALIDATE_BATCH);
            k = df_schema_equals(b->schema, r->schema) ? DF_OK
                                                         : df_error_set(err, DF_ERR_MSSQL_BATCH_SCHEMA_VALIDATION,
                                                                        "the batch schema differs from the plan");
            df__stage_end(v, k);
            if (k == DF_OK) {
                r->rows += b->nrows;
                r->batches++;
                df__write_progress_rows(r->opts, r->ctx, r->spec->name, r->rows, r->batches, 0, r->stream);
            } else {
                df__stage_run_fail(&r->stages, WSTEP_VALIDATE_BATCH, k, err);
            }
        } else {
            k = write_one(r, b, err);
        }
        df_batch_release(b);
        if (k != DF_OK) return k;
    }
}
