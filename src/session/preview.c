/*
 * Previews: run a table with LIMIT n, collect the rows, format them.
 *
 * The lifecycle is one diagnostics operation ("Delta Funnel preview") with
 * three phases and six stages, each feeding one of the seven reported
 * phase timings:
 *
 *   Planning       DataFrame planning   preview_dataframe_planning   df_query_limit
 *                  Physical planning    preview_physical_planning    df_query_execute (builds the
 *                                                                    physical plan and a lazy stream)
 *   Execution      Stream setup         preview_stream_setup         stream checks, profile handle
 *                  Execute and collect  preview_execute_collect      pull every batch
 *   Finalization   Format text          preview_format_text
 *                  Format HTML          preview_format_html
 *   (the operation)                     preview_total
 *
 * The first failing stage stops the preview; the error is preview_failed
 * with context {"execution_profile", "failed_phase", "phase_timings"}
 * (stages after the failure are not_started / prior_failure).  Keys are
 * written in sorted order, as the reference's reports are.
 */
#include "format/format.h"
#include "session/session_int.h"

#include "diag/diag.h"

#define NTIMINGS 7

struct df_preview {
    df_phase_timing timing[NTIMINGS];   /* the phase timings (static strings) */
    char *text;             /* text grid, owned */
    size_t text_len;        /* bytes of text */
    char *html;             /* HTML, owned */
    size_t html_len;        /* bytes of html */
    char *timings;          /* phase timings JSON array, owned */
    char *profile;          /* execution profile JSON object or NULL, owned */
    int64_t rows;           /* rows shown */
    int64_t cols;           /* columns */
};

void df_preview_options_init(df_preview_options *o) {
    memset(o, 0, sizeof *o);
    o->limit = 20;
}

void df_preview_free(df_preview *p) {
    if (!p) return;
    df_free(p->text);
    df_free(p->html);
    df_free(p->timings);
    df_free(p->profile);
    df_free(p);
}

const char *df_preview_text(const df_preview *p) { return p->text; }
const char *df_preview_html(const df_preview *p) { return p->html; }
size_t df_preview_text_length(const df_preview *p) { return p->text_len; }
size_t df_preview_html_length(const df_preview *p) { return p->html_len; }
const char *df_preview_phase_timings_json(const df_preview *p) { return p->timings; }
const char *df_preview_execution_profile_json(const df_preview *p) { return p->profile; }
int64_t df_preview_num_rows(const df_preview *p) { return p->rows; }
int64_t df_preview_num_columns(const df_preview *p) { return p->cols; }
int32_t df_preview_num_phase_timings(const df_preview *p) { return NTIMINGS; }

bool df_preview_phase_timing(const df_preview *p, int32_t i, df_phase_timing *out) {
    if (i < 0 || i >= NTIMINGS) return false;
    *out = p->timing[i];
    return true;
}

/* The six stages in lifecycle order, with their phase; each feeds its phase timing (df_diag_stage_timing_name). */
static const struct {
    df_diag_stage stage;
    df_diag_phase phase;
} stages[] = {
    {DF_DIAG_STAGE_DATAFRAME_PLANNING, DF_DIAG_PHASE_PLANNING},
    {DF_DIAG_STAGE_PHYSICAL_PLANNING, DF_DIAG_PHASE_PLANNING},
    {DF_DIAG_STAGE_STREAM_SETUP, DF_DIAG_PHASE_EXECUTION},
    {DF_DIAG_STAGE_EXECUTE_AND_COLLECT, DF_DIAG_PHASE_EXECUTION},
    {DF_DIAG_STAGE_FORMAT_TEXT, DF_DIAG_PHASE_FINALIZATION},
    {DF_DIAG_STAGE_FORMAT_HTML, DF_DIAG_PHASE_FINALIZATION},
};
#define NSTAGES ((int)DF_ARRAY_LEN(stages))

/* The phase_timings name of stage i ("preview_dataframe_planning", ...). */
static const char *stage_timing(int i) { return df_diag_stage_timing_name(stages[i].stage); }

/* Everything one preview run holds. */
typedef struct preview_run {
    df_table *table;             /* borrowed */
    df_preview_options opts;     /* copy */
    df_diag_operation *op;       /* timings */
    df_diag_query *dq;           /* the traced query (NULL when no capture records the preview) */
    df_stage_run stages;         /* spans, phases, the failed stage */
    df_query *limited;           /* LIMIT query, owned */
    df_batch_stream *stream;     /* owned until closed */
    df_exec_profile *profile;    /* owned reference or NULL */
    df_exec_profile *execution;  /* owned reference while a log sink wants the terminal summaries */
    df_batch **batches;          /* collected, owned references */
    int64_t nbatches, cap;
    int64_t rows;                /* rows collected */
    df_preview *result;          /* being filled */
} preview_run;

static void progress(const preview_run *r, df_progress_kind kind, const char *label) {
    if (!r->opts.progress.fn) return;
    df_progress_event ev = {.kind = kind, .label = label, .rows = r->rows, .batches = r->nbatches};
    df_file_progress files;
    if (kind == DF_PROGRESS_ROWS && df_exec_stream_file_progress(r->stream, &files)) {
        ev.files_done = files.done;
        ev.files_total = files.total;
        ev.files_pruned = files.pruned_planning;
    }
    r->opts.progress.fn(r->opts.progress.user, &ev);
}

static void progress_label(const void *user, const char *label) {
    progress(user, DF_PROGRESS_PHASE, label);
}

/* ------------------------------------------------------------------------ */
/* Stages                                                                    */

static df_errkind stage_dataframe(void *ctx, df_error *err) {
    preview_run *r = ctx;
    return df_query_limit(r->table->entry->query, r->opts.limit, &r->limited, err);
}

/* Physical planning is the query's planning span ("DataFusion query planning") when traced. */
static df_errkind stage_physical(void *ctx, df_error *err) {
    preview_run *r = ctx;
    df_exec_options eo;
    df__session_exec_options(r->table->session, &eo);
    eo.execution_profile = r->opts.execution_profile;
    eo.cancel = r->opts.cancel;
    DF_TRY(df_diag_query_begin(r->op, DF_DIAG_QUERY_PREVIEW, NULL, &r->dq, err));
    eo.diag_query = r->dq;
    df_diag_span planning = df_diag_query_planning_begin(r->dq);
    df_errkind k = df_query_execute(r->limited, &eo, &r->stream, err);
    df_diag_span_end(planning, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    return k;
}

static df_errkind stage_stream_setup(void *ctx, df_error *err) {
    preview_run *r = ctx;
    if (!df_schema_equals(r->stream->schema, df_query_schema(r->limited)))
        return df_error_set(err, DF_ERR_DEPENDENCY_COMPATIBILITY, "the stream schema differs from the planned schema");
    if (r->opts.execution_profile) r->profile = df_exec_stream_profile(r->stream);
    if (r->opts.log.fn) r->execution = df_exec_stream_execution(r->stream);
    return DF_OK;
}

static df_errkind stage_collect(void *ctx, df_error *err) {
    preview_run *r = ctx;
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df_batch_stream_next(r->stream, &b, err));
        if (!b) break;
        df_errkind k = DF_ARRAY_RESERVE(r->batches, r->cap, r->nbatches + 1, 8, err);
        if (k) {
            df_batch_release(b);
            return k;
        }
        r->batches[r->nbatches++] = b;
        r->rows += b->nrows;
        progress(r, DF_PROGRESS_ROWS, NULL);
    }
    /* The LIMIT query ends its stream by itself after `limit` rows, so the
     * outcome is success, not cancelled; closing joins the workers so the
     * profile is complete. */
    df_batch_stream_close(r->stream);
    r->stream = NULL;
    return DF_OK;
}

static df_fmt_input fmt_input(const preview_run *r) {
    df_fmt_input in = {df_query_schema(r->limited), r->batches, r->nbatches, r->opts.limit};
    return in;
}

static df_errkind stage_text(void *ctx, df_error *err) {
    preview_run *r = ctx;
    df_fmt_input in = fmt_input(r);
    return df__fmt_text_table(&in, &r->result->text, &r->result->text_len, err);
}

static df_errkind stage_html(void *ctx, df_error *err) {
    preview_run *r = ctx;
    df_fmt_input in = fmt_input(r);
    return df__fmt_html_table(&in, &r->result->html, &r->result->html_len, err);
}


/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

/* The reported status of one diagnostics timing. */
static df_phase_timing make_timing(const char *name, df_diag_timing t, bool after_failure) {
    df_phase_timing out = {name, "completed", NULL, (int64_t)(t.elapsed_ns / 1000)};
    switch (t.state) {
    case DF_DIAG_TIMING_COMPLETED: break;
    case DF_DIAG_TIMING_FAILED:
    case DF_DIAG_TIMING_CANCELLED: out.status = "failed"; break;
    case DF_DIAG_TIMING_RUNNING:
    case DF_DIAG_TIMING_NOT_STARTED:
        out.status = "not_started";
        out.reason = after_failure ? "prior_failure" : "not_executed";
        out.elapsed_micros = -1;
        break;
    }
    return out;
}

static void collect_timings(const preview_run *r, df_phase_timing *out) {
    bool failed = r->stages.failed >= 0;
    for (int i = 0; i < NSTAGES; i++)
        out[i] = make_timing(stage_timing(i), df_diag_operation_stage_timing(r->op, stages[i].stage, 0), failed);
    out[NSTAGES] =
        make_timing(df_diag_timing_name_of(DF_DIAG_TN_PREVIEW_TOTAL), df_diag_operation_total_timing(r->op), failed);
}

static void write_timing(df_json_writer *w, const df_phase_timing *t) {
    df_json_object_begin(w);
    if (t->elapsed_micros >= 0)
        df_json_kv_int(w, "elapsed_micros", t->elapsed_micros);
    else
        df_json_kv_null(w, "elapsed_micros");
    df_json_kv_string(w, "phase_name", t->phase_name);
    df_json_key(w, "status");
    df_json_object_begin(w);
    df_json_kv_string(w, "kind", t->status);
    if (t->reason)
        df_json_kv_string(w, "reason", t->reason);
    else
        df_json_kv_null(w, "reason");
    df_json_object_end(w);
    df_json_object_end(w);
}

static df_errkind timings_json(const preview_run *r, df_buf *out, df_error *err) {
    df_phase_timing t[NTIMINGS];
    collect_timings(r, t);
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    df_json_array_begin(&w);
    for (int i = 0; i < NTIMINGS; i++) write_timing(&w, &t[i]);
    df_json_array_end(&w);
    return df_json_writer_finish(&w, err);
}

/* The profile JSON (NULL text when none was collected). */
static df_errkind profile_json(const preview_run *r, char **out, df_error *err) {
    *out = NULL;
    if (!r->profile) return DF_OK;
    df_buf b;
    df_buf_init(&b, 0);
    df_profile_meta meta = {df_diag_query_scope_name(DF_DIAG_QUERY_PREVIEW), r->opts.limit};
    df_errkind k = df_query_profile_json(r->profile, &meta, &b, err);
    if (k == DF_OK) return df_buf_take_text(&b, out, NULL, err);
    df_buf_free(&b);
    return k;
}

/* Turns the failure in *err into preview_failed with the reference context. */
static df_errkind failure_error(preview_run *r, df_error *err) {
    if (!err) return DF_ERR_PREVIEW_FAILED;
    char cause[DF_ERROR_MESSAGE_SIZE];
    df__session_escape_into(cause, sizeof cause, err->message);
    df_errkind cause_kind = err->kind;
    char origin[DF_ERROR_ORIGIN_SIZE];
    memcpy(origin, err->origin, sizeof origin);
    df_buf ctx;
    df_buf_init(&ctx, 0);
    char *profile = NULL;
    df_json_writer w;
    df_json_writer_init(&w, &ctx, 0);
    df_json_object_begin(&w);
    if (profile_json(r, &profile, NULL) == DF_OK && profile)
        df_json_kv_raw(&w, "execution_profile", profile);
    else
        df_json_kv_null(&w, "execution_profile");
    df_json_kv_string(&w, "failed_phase", stage_timing(r->stages.failed));
    df_json_key(&w, "phase_timings");
    df_buf timings;
    df_buf_init(&timings, 0);
    if (timings_json(r, &timings, NULL) == DF_OK && timings.data)
        df_json_write_raw(&w, timings.data);
    else
        df_json_write_null(&w);
    df_json_object_end(&w);
    bool ok = df_json_writer_finish(&w, NULL) == DF_OK;
    df_error_set(err, DF_ERR_PREVIEW_FAILED, "preview failed during %s: %s", stage_timing(r->stages.failed), cause);
    df_error_set_origin(err, origin[0] ? origin : df_errkind_name(cause_kind));
    if (ok) df_error_set_context(err, ctx.data);
    df_buf_free(&timings);
    df_buf_free(&ctx);
    df_free(profile);
    return DF_ERR_PREVIEW_FAILED;
}

static void log_debug_event(void *user, const char *event, const char *fields_json) {
    const df_log_sink *sink = user;
    sink->fn(sink->user, DF_LOG_DEBUG, "delta_funnel", event, fields_json);
}

static void run_clear(preview_run *r) {
    df_batch_stream_close(r->stream);
    if (r->execution) {
        df_profile_meta meta = {df_diag_query_scope_name(DF_DIAG_QUERY_PREVIEW), r->opts.limit};
        df_exec_terminal_events(r->execution, &meta, log_debug_event, &r->opts.log);
        df_exec_profile_release(r->execution);
    }
    for (int64_t i = 0; i < r->nbatches; i++) df_batch_release(r->batches[i]);
    df_free(r->batches);
    if (r->profile) df_exec_profile_release(r->profile);
    df_query_free(r->limited);
    df_preview_free(r->result);
    df_diag_operation_destroy(r->op);
}

/* Runs the stages; returns the first failure (r->stages.failed set). */
static df_errkind run_stages(preview_run *r, df_error *err) {
    static const char *const labels[NSTAGES] = {"Preparing preview",  NULL, NULL,
                                                "Collecting preview", "Formatting preview", NULL};
    static const df_stage_fn fns[NSTAGES] = {stage_dataframe, stage_physical, stage_stream_setup,
                                             stage_collect,   stage_text,     stage_html};
    df_stage_def defs[NSTAGES];
    for (int i = 0; i < NSTAGES; i++) defs[i] = (df_stage_def){i, stages[i].stage, stages[i].phase, labels[i], fns[i]};
    df__stage_run_init(&r->stages, r->op, 0, true);
    df__stage_run_set_progress(&r->stages, progress_label, r);
    df_errkind k = df__stage_run_all(&r->stages, defs, NSTAGES, r, err);
    df__stage_run_end(&r->stages, k);
    return k;
}

df_errkind df_table_preview(df_table *t, const df_preview_options *opts, df_preview **out, df_error *err) {
    *out = NULL;
    preview_run r;
    memset(&r, 0, sizeof r);
    r.table = t;
    r.stages.failed = -1;
    if (opts) r.opts = *opts; else df_preview_options_init(&r.opts);
    if (r.opts.limit < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "preview limit must not be negative");
    r.result = df_calloc(1, sizeof *r.result);
    if (!r.result) return DF_OOM(err);
    df_errkind k = df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &r.op, err);
    if (k != DF_OK) {
        run_clear(&r);
        return k;
    }
    df__session_read_begin(t->session);
    progress(&r, DF_PROGRESS_STARTED, "Previewing table");
    k = run_stages(&r, err);
    df_diag_operation_end(r.op, k == DF_OK ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
    if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) k = failure_error(&r, err);
    if (k == DF_OK) {
        df_buf timings;
        df_buf_init(&timings, 0);
        k = timings_json(&r, &timings, err);
        if (k == DF_OK) k = df_buf_take_text(&timings, &r.result->timings, NULL, err);
        df_buf_free(&timings);
    }
    if (k == DF_OK) k = profile_json(&r, &r.result->profile, err);
    if (k == DF_OK) collect_timings(&r, r.result->timing);
    bool cancelled = k != DF_OK && r.opts.cancel && atomic_load(r.opts.cancel);
    progress(&r, DF_PROGRESS_FINISHED, k == DF_OK ? "Completed" : cancelled ? "Cancelled" : "Failed");
    df__session_read_end(t->session);
    if (k == DF_OK) {
        r.result->rows = DF_MIN(r.rows, r.opts.limit);
        r.result->cols = df_query_schema(r.limited)->nfields;
        *out = r.result;
        r.result = NULL;
    }
    run_clear(&r);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Formatting foreign Arrow data                                             */

df_errkind df_format_arrow_stream(struct ArrowArrayStream *stream, int64_t max_rows, char **text, size_t *text_len,
                                  char **html, size_t *html_len, df_error *err) {
    if (text) *text = NULL;
    if (html) *html = NULL;
    struct ArrowSchema cs;
    memset(&cs, 0, sizeof cs);
    df_schema *schema = NULL;
    df_batch **batches = NULL;
    int64_t n = 0, cap = 0, rows = 0;
    df_errkind k = DF_OK;
    if (stream->get_schema(stream, &cs) != 0) {
        const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
        k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow stream schema: %s", m ? m : "failed");
    }
    if (k == DF_OK) k = df_arrow_import_schema(&cs, &schema, err);
    if (cs.release) cs.release(&cs);
    while (k == DF_OK && (max_rows < 0 || rows < max_rows)) {
        struct ArrowArray arr;
        memset(&arr, 0, sizeof arr);
        if (stream->get_next(stream, &arr) != 0) {
            const char *m = stream->get_last_error ? stream->get_last_error(stream) : NULL;
            k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow stream: %s", m ? m : "failed");
            break;
        }
        if (!arr.release) break;
        k = DF_ARRAY_RESERVE(batches, cap, n + 1, 8, err);
        if (k) {
            arr.release(&arr);
            break;
        }
        k = df_arrow_import_batch(&arr, schema, &batches[n], err);
        if (k == DF_OK) rows += batches[n++]->nrows;
    }
    if (k == DF_OK) {
        df_fmt_input in = {schema, batches, n, max_rows};
        if (text) k = df__fmt_text_table(&in, text, text_len, err);
        if (k == DF_OK && html) k = df__fmt_html_table(&in, html, html_len, err);
    }
    for (int64_t i = 0; i < n; i++) df_batch_release(batches[i]);
    df_free(batches);
    df_schema_release(schema);
    if (stream->release) stream->release(stream);
    if (k != DF_OK) {
        if (text) {
            df_free(*text);
            *text = NULL;
        }
        if (html) {
            df_free(*html);
            *html = NULL;
        }
    }
    return k;
}
