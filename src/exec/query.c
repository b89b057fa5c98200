/*
 * The query API (query.h): planning through the SQL front end, execution
 * streams, views, limits and EXPLAIN.
 *
 * An execution (df_exec_profile, also the profile handle) owns the
 * context, the physical plan, the thread pool and a reference to the
 * logical plan container; the stream and the caller's profile handle each
 * hold a reference, so a profile can be rendered after the stream is
 * closed.  The stream pulls the root operator (one partition) in the
 * caller's thread, which computes without a CPU token (exec_int.h): the
 * tokens bound the pool threads.
 */
#include "exec/exec_int.h"

#include <stdio.h>

#include "common/json.h"

struct df_query {
    df_lplan *plan;             /* bound + optimized plan (reference) */
    df_schema *schema;          /* result schema */
};

typedef enum outcome { OUT_RUNNING, OUT_SUCCESS, OUT_ERROR, OUT_CANCELLED } outcome;

struct df_exec_profile {
    _Atomic int32_t refs;       /* stream + profile handles */
    df_exec_ctx ctx;            /* execution context */
    df_pnode *root;             /* physical plan */
    df_lplan *plan;             /* keeps expressions and providers alive */
    df_schema *schema;          /* result schema */
    _Atomic int outcome;        /* outcome */
    int64_t rows;               /* rows returned */
    uint64_t started_ns;        /* execution start */
    uint64_t finished_ns;       /* end of stream / close */
};

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */

/* Compiles every expression of the plan once, so unsupported functions fail at planning. */
static df_errkind check_expr(const df_expr *e, df_error *err) {
    if (!e) return DF_OK;
    df_xprog *p;
    DF_TRY(df__xprog_compile(e, &p, err));
    df__xprog_free(p);
    return DF_OK;
}

static df_errkind check_plan(const df_lnode *n, int depth, df_error *err) {
    if (depth > 4096) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "plan too deep");
    switch (n->kind) {
    case DF_LN_FILTER: DF_TRY(check_expr(n->u.filter.pred, err)); break;
    case DF_LN_PROJECT:
        for (int32_t i = 0; i < n->ncols; i++) DF_TRY(check_expr(n->u.project.exprs[i], err));
        break;
    case DF_LN_AGGREGATE:
        for (int32_t i = 0; i < n->u.agg.ngroup; i++) DF_TRY(check_expr(n->u.agg.group[i], err));
        for (int32_t i = 0; i < n->u.agg.naggs; i++) {
            DF_TRY(check_expr(n->u.agg.aggs[i].arg, err));
            DF_TRY(check_expr(n->u.agg.aggs[i].filter, err));
            for (int32_t j = 0; j < n->u.agg.aggs[i].norder; j++) DF_TRY(check_expr(n->u.agg.aggs[i].order[j].expr, err));
        }
        break;
    case DF_LN_JOIN:
        for (int32_t i = 0; i < n->u.join.nkeys; i++) {
            DF_TRY(check_expr(n->u.join.lkeys[i], err));
            DF_TRY(check_expr(n->u.join.rkeys[i], err));
        }
        DF_TRY(check_expr(n->u.join.filter, err));
        break;
    case DF_LN_SORT:
        for (int32_t i = 0; i < n->u.sort.nkeys; i++) DF_TRY(check_expr(n->u.sort.keys[i].expr, err));
        break;
    case DF_LN_VALUES:
        for (int32_t r = 0; r < n->u.values.nrows; r++)
            for (int32_t c = 0; c < n->ncols; c++) DF_TRY(check_expr(n->u.values.rows[r][c], err));
        break;
    default: break;
    }
    for (int32_t i = 0; i < n->ninputs; i++) DF_TRY(check_plan(n->inputs[i], depth + 1, err));
    return DF_OK;
}

static df_errkind finish_query(df_lplan *plan, df_query **out, df_error *err) {
    df_errkind k = df__sql_optimize(plan, df__exec_eval_const, err);
    if (!k) k = check_plan(plan->optimized, 0, err);
    df_query *q = NULL;
    if (!k) {
        q = df_calloc(1, sizeof *q);
        if (!q) k = DF_OOM(err);
    }
    if (!k) k = df__exec_schema_from_cols(plan->optimized->cols, plan->optimized->ncols, &q->schema, err);
    if (k) {
        df_free(q);
        df__lplan_release(plan);
        if (err && !err->origin[0]) df_error_set_origin(err, "sql");
        return k;
    }
    q->plan = plan;
    *out = q;
    return DF_OK;
}

df_errkind df_query_plan(df_catalog *cat, const char *sql, df_query **out, df_error *err) {
    *out = NULL;
    if (!cat || !sql) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "df_query_plan needs a catalog and SQL text");
    df_lplan *plan;
    DF_TRY(df__sql_bind(cat, sql, df__exec_eval_const, &plan, err));
    return finish_query(plan, out, err);
}

void df_query_free(df_query *q) {
    if (!q) return;
    df__lplan_release(q->plan);
    df_schema_release(q->schema);
    df_free(q);
}

df_schema *df_query_schema(const df_query *q) { return q->schema; }
const char *df_query_sql(const df_query *q) { return q->plan->sql ? q->plan->sql : ""; }

const char *const *df_query_direct_dependencies(const df_query *q, int32_t *count) {
    *count = q->plan->ndeps;
    return q->plan->deps;
}

df_errkind df_query_register_as_view(df_catalog *cat, const char *name, const df_query *q, df_error *err) {
    return df_catalog_register_view(cat, name, q->plan, q->plan->sql, err);
}

df_errkind df_query_limit(const df_query *q, int64_t limit, df_query **out, df_error *err) {
    *out = NULL;
    if (limit < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "limit must not be negative");
    df_lplan *plan;
    DF_TRY(df__lplan_new(&plan, err));
    df_errkind k = df__lplan_depend(plan, q->plan, err);
    df_lnode *root = q->plan->root;
    df_lnode *l = k ? NULL : df__lnode_new(plan, DF_LN_LIMIT, 1, &root, root->ncols, err);
    if (!l) {
        df__lplan_release(plan);
        return err && err->kind ? err->kind : DF_ERR_OUT_OF_MEMORY;
    }
    df__memcpy(l->cols, root->cols, (size_t)root->ncols * sizeof(df_lcol));
    l->u.limit.skip = 0;
    l->u.limit.fetch = limit;
    plan->root = l;
    plan->sql = q->plan->sql;
    plan->deps = q->plan->deps;
    plan->ndeps = q->plan->ndeps;
    return finish_query(plan, out, err);
}

df_errkind df_query_explain(const df_query *q, df_buf *out, df_error *err) {
    DF_TRY(df_buf_append_str(out, "logical_plan\n", err));
    DF_TRY(df__lnode_explain(q->plan->optimized, out, err));
    DF_TRY(df_buf_append_str(out, "physical_plan\n", err));
    df_exec_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.batch_size = 8192;
    ctx.target_partitions = df_cpu_count();
    df_pnode *root;
    DF_TRY(df__exec_plan(q->plan->optimized, &ctx, &root, err));
    df_errkind k = df__pnode_explain(root, out, err);
    df__pnode_free(root);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Execution                                                                 */

void df_exec_options_init(df_exec_options *opts) {
    memset(opts, 0, sizeof *opts);
}

static void execution_release(df_exec_profile *x) {
    if (!x || atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel) != 1) return;
    df__pnode_free(x->root);
    df_thread_pool_destroy(x->ctx.pool);
    pthread_cond_destroy(&x->ctx.tok_cv);
    pthread_mutex_destroy(&x->ctx.tok_mu);
    df_schema_release(x->schema);
    df__lplan_release(x->plan);
    df_free(x);
}

typedef struct exec_stream {
    df_batch_stream base;
    df_exec_profile *x;         /* the execution */
    df_op *root;                /* root operator (opened lazily) */
    bool done;                  /* end of stream or error reached */
} exec_stream;

static void finish(exec_stream *s, outcome o) {
    int expected = OUT_RUNNING;
    atomic_compare_exchange_strong(&s->x->outcome, &expected, (int)o);
    if (s->root) {
        const df_exec_ctx *prev = df__exec_caller_enter(&s->x->ctx);
        df_op_close(s->root);
        df__exec_caller_leave(prev);
        s->root = NULL;
    }
    s->x->finished_ns = df_now_ns();
    s->done = true;
}

static df_errkind stream_next(df_batch_stream *bs, df_batch **out, df_error *err) {
    exec_stream *s = (exec_stream *)bs;
    *out = NULL;
    if (s->done) return DF_OK;
    df_exec_ctx *ctx = &s->x->ctx;
    const df_exec_ctx *prev = df__exec_caller_enter(ctx);
    df_errkind k = DF_OK;
    if (!s->root) k = df_pnode_open(s->x->root, ctx, 0, NULL, &s->root, err);
    df_batch *b = NULL;
    while (!k) {
        k = df_op_next(s->root, &b, err);
        if (k || !b || b->nrows > 0) break;
        df_batch_release(b);
        b = NULL;
    }
    if (!k && b) {
        k = df__batch_rewrap(b, s->base.schema, out, err);
        df_batch_release(b);
        if (!k) s->x->rows += (*out)->nrows;
    }
    df__exec_caller_leave(prev);
    if (k) {
        if (err && !err->origin[0]) df_error_set_origin(err, "execution");
        finish(s, k == DF_ERR_CANCELLED ? OUT_CANCELLED : OUT_ERROR);
    } else if (!*out) {
        finish(s, OUT_SUCCESS);
    }
    return k;
}

static void stream_close(df_batch_stream *bs) {
    exec_stream *s = (exec_stream *)bs;
    if (!s->done) {
        atomic_store(&s->x->ctx.cancel, true);
        finish(s, OUT_CANCELLED);
    }
    execution_release(s->x);
    df_schema_release(s->base.schema);
    df_free(s);
}

static const df_batch_stream_vt exec_stream_vt = {stream_next, stream_close};

df_errkind df_query_execute(const df_query *q, const df_exec_options *opts, df_batch_stream **out, df_error *err) {
    *out = NULL;
    df_exec_options defaults;
    if (!opts) {
        df_exec_options_init(&defaults);
        opts = &defaults;
    }
    df_exec_profile *x = df_calloc(1, sizeof *x);
    if (!x) return DF_OOM(err);
    atomic_init(&x->refs, 1);
    atomic_init(&x->outcome, OUT_RUNNING);
    x->started_ns = df_now_ns();
    df_exec_ctx *ctx = &x->ctx;
    ctx->batch_size = opts->batch_size > 0 ? opts->batch_size : 8192;
    ctx->target_partitions = opts->target_partitions > 0 ? opts->target_partitions : df_cpu_count();
    if (ctx->target_partitions > 256) ctx->target_partitions = 256;
    ctx->user_cancel = opts->cancel;
    ctx->profile = opts->execution_profile;
    ctx->mem_limit = opts->memory_limit > 0 ? opts->memory_limit : 0;
    ctx->dq = opts->diag_query;
    ctx->tokens = ctx->target_partitions;
    pthread_mutex_init(&ctx->tok_mu, NULL);
    pthread_cond_init(&ctx->tok_cv, NULL);
    x->plan = df__lplan_retain(q->plan);
    x->schema = df_schema_retain(q->schema);
    df_errkind k = df__exec_plan(q->plan->optimized, ctx, &x->root, err);
    if (!k) {
        int32_t threads = df__exec_plan_threads(x->root);
        /* Beyond this many exchange inputs, exchanges run their inputs in the consumer's thread. */
        if (threads > 0 && threads <= 512) k = df_thread_pool_create(threads, "df-exec", &ctx->pool, err);
    }
    exec_stream *s = NULL;
    if (!k) {
        s = df_calloc(1, sizeof *s);
        if (!s) k = DF_OOM(err);
    }
    if (k) {
        execution_release(x);
        return k;
    }
    s->base.vt = &exec_stream_vt;
    s->base.schema = df_schema_retain(q->schema);
    s->x = x;
    *out = &s->base;
    return DF_OK;
}

df_exec_profile *df_exec_stream_profile(df_batch_stream *stream) {
    if (!stream || stream->vt != &exec_stream_vt) return NULL;
    exec_stream *s = (exec_stream *)stream;
    if (!s->x->ctx.profile) return NULL;
    atomic_fetch_add_explicit(&s->x->refs, 1, memory_order_relaxed);
    return s->x;
}

void df_exec_profile_release(df_exec_profile *profile) { execution_release(profile); }

df_exec_profile *df_exec_stream_execution(df_batch_stream *stream) {
    if (!stream || stream->vt != &exec_stream_vt) return NULL;
    exec_stream *s = (exec_stream *)stream;
    atomic_fetch_add_explicit(&s->x->refs, 1, memory_order_relaxed);
    return s->x;
}

static void add_file_progress(const df_pnode *n, df_file_progress *fp) {
    const df_scan_metrics *sm = df__scan_delta_metrics(n);
    if (sm) {
        fp->done += atomic_load_explicit(&sm->files_completed, memory_order_relaxed);
        fp->total += atomic_load_explicit(&sm->files_planned, memory_order_relaxed);
        fp->pruned_planning += atomic_load_explicit(&sm->files_pruned, memory_order_relaxed);
    }
    for (int32_t i = 0; i < n->ninputs; i++) add_file_progress(n->inputs[i], fp);
}

bool df_exec_stream_file_progress(df_batch_stream *stream, df_file_progress *out) {
    *out = (df_file_progress){0};
    if (!stream || stream->vt != &exec_stream_vt) return false;
    const exec_stream *s = (const exec_stream *)stream;
    add_file_progress(s->x->root, out);
    return out->total > 0;
}

/* ------------------------------------------------------------------------ */
/* Profiles                                                                  */

static const char *outcome_name(int o) {
    switch (o) {
    case OUT_SUCCESS: return "success";
    case OUT_ERROR: return "error";
    case OUT_CANCELLED: return "cancelled";
    default: return "running";
    }
}

static void metric(df_json_writer *w, const char *name, const char *category, int64_t partition,
                   const char *value_kind, int64_t value) {
    df_json_object_begin(w);
    df_json_kv_string(w, "name", name);
    df_json_kv_string(w, "category", category);
    if (partition >= 0) df_json_kv_int(w, "partition", partition);
    else df_json_kv_null(w, "partition");
    df_json_kv_null(w, "output_partition");
    df_json_kv_string(w, "value_kind", value_kind);
    df_json_kv_int(w, "value", value);
    df_json_kv_null(w, "components");
    df_json_object_end(w);
}

static void scan_stats(df_json_writer *w, const df_scan_metrics *sm) {
    df_json_object_begin(w);
#define SM(field) df_json_kv_int(w, #field, atomic_load_explicit(&sm->field, memory_order_relaxed))
    SM(files_total);
    SM(files_pruned);
    SM(files_planned);
    SM(files_opened);
    SM(files_completed);
    SM(row_groups_total);
    SM(row_groups_pruned);
    SM(row_groups_read);
    SM(pages_read);
    SM(bytes_read);
    SM(rows_produced);
    SM(batches_produced);
    SM(deletion_vectors_applied);
    SM(deletion_vector_rows_deleted);
#undef SM
    df_json_object_end(w);
}

static void profile_node(df_json_writer *w, const df_pnode *n, int32_t parent) {
    df_json_object_begin(w);
    df_json_kv_int(w, "node_id", n->id);
    if (parent >= 0) df_json_kv_int(w, "parent_node_id", parent);
    else df_json_kv_null(w, "parent_node_id");
    df_json_kv_string(w, "operator_name", df_pnode_name(n));
    df_json_kv_int(w, "output_partition_count", n->partitions);
    df_json_kv_bool(w, "metrics_available", n->metrics != NULL);
    int64_t rows = 0, batches = 0, compute = 0;
    if (n->metrics)
        for (int32_t p = 0; p < n->partitions; p++) {
            rows += n->metrics[p].output_rows;
            batches += n->metrics[p].output_batches;
            compute += n->metrics[p].elapsed_compute;
        }
    df_json_key(w, "aggregated_metrics");
    df_json_array_begin(w);
    if (n->metrics) {
        metric(w, "output_rows", "summary", -1, "count", rows);
        metric(w, "output_batches", "summary", -1, "count", batches);
        metric(w, "elapsed_compute", "summary", -1, "nanoseconds", compute);
    }
    const df_scan_metrics *sm = df__scan_metrics(n);
    if (sm) {
        metric(w, "files_pruned", "summary", -1, "pruning", atomic_load(&sm->files_pruned));
        metric(w, "row_groups_pruned", "summary", -1, "pruning", atomic_load(&sm->row_groups_pruned));
        metric(w, "pages_read", "dev", -1, "count", atomic_load(&sm->pages_read));
        metric(w, "bytes_scanned", "summary", -1, "bytes", atomic_load(&sm->bytes_read));
    }
    df_json_array_end(w);
    df_json_key(w, "metrics");
    df_json_array_begin(w);
    if (n->metrics) {
        for (int32_t p = 0; p < n->partitions; p++) {
            if (!n->metrics[p].opened) continue;
            metric(w, "output_rows", "summary", p, "count", n->metrics[p].output_rows);
            metric(w, "output_batches", "summary", p, "count", n->metrics[p].output_batches);
            metric(w, "elapsed_compute", "summary", p, "nanoseconds", n->metrics[p].elapsed_compute);
        }
    }
    df_json_array_end(w);
    df_json_key(w, "delta_provider_read_stats");
    if (sm) scan_stats(w, sm);
    else df_json_write_null(w);
    df_json_object_end(w);
    for (int32_t i = 0; i < n->ninputs; i++) profile_node(w, n->inputs[i], n->id);
}

/* ------------------------------------------------------------------------ */
/* Terminal log summaries                                                    */

static void emit_fields(df_buf *b, df_json_writer *w, const char *event, df_exec_event_fn emit, void *user) {
    df_json_object_end(w);
    if (df_json_writer_finish(w, NULL) == DF_OK) emit(user, event, b->data);
    df_buf_free(b);
}

/* One delta_provider_parquet_io_summary per Delta scan node under n. */
static void io_summaries(const df_pnode *n, const char *outcome, df_exec_event_fn emit, void *user) {
    const df_scan_metrics *sm = df__scan_delta_metrics(n);
    if (sm) {
        df_buf b;
        df_buf_init(&b, 0);
        df_json_writer w;
        df_json_writer_init(&w, &b, 0);
        df_json_object_begin(&w);
        const char *table = df__scan_table(n);
        if (table) df_json_kv_string(&w, "source_name", table);
        const df_table_provider *tp = df__scan_provider(n);
        if (tp) df_json_kv_int(&w, "snapshot_version", tp->version);
        df_json_kv_string(&w, "reader_backend", "native");
        df_json_kv_string(&w, "outcome", outcome);
        df_json_kv_bool(&w, "metrics_available", true);
        /* Local reads have no GET operations: the counters are the reader's own. */
        df_json_kv_int(&w, "parquet_data_file_bytes_received", atomic_load(&sm->bytes_read));
        df_json_kv_int(&w, "parquet_data_files_opened", atomic_load(&sm->files_opened));
        df_json_kv_int(&w, "parquet_row_groups_read", atomic_load(&sm->row_groups_read));
        df_json_kv_int(&w, "parquet_pages_read", atomic_load(&sm->pages_read));
        emit_fields(&b, &w, "delta_provider_parquet_io_summary", emit, user);
    }
    for (int32_t i = 0; i < n->ninputs; i++) io_summaries(n->inputs[i], outcome, emit, user);
}

typedef struct profile_tally {
    int64_t operators, with_metrics, max_compute;
    const df_pnode *busiest;    /* first node with the largest elapsed_compute */
} profile_tally;

static void tally(const df_pnode *n, profile_tally *t) {
    t->operators++;
    if (n->metrics) {
        t->with_metrics++;
        int64_t compute = 0;
        for (int32_t p = 0; p < n->partitions; p++) compute += n->metrics[p].elapsed_compute;
        if (!t->busiest || compute > t->max_compute) {
            t->busiest = n;
            t->max_compute = compute;
        }
    }
    for (int32_t i = 0; i < n->ninputs; i++) tally(n->inputs[i], t);
}

void df_exec_terminal_events(const df_exec_profile *x, const df_profile_meta *meta, df_exec_event_fn emit,
                             void *user) {
    if (!x || !emit) return;
    int o = atomic_load(&x->outcome);
    const char *outcome = outcome_name(o == OUT_RUNNING ? OUT_CANCELLED : o);
    io_summaries(x->root, outcome, emit, user);
    if (!x->ctx.profile) return;
    profile_tally t = {0};
    tally(x->root, &t);
    int64_t root_rows = 0;
    if (x->root->metrics)
        for (int32_t p = 0; p < x->root->partitions; p++) root_rows += x->root->metrics[p].output_rows;
    df_buf b;
    df_buf_init(&b, 0);
    df_json_writer w;
    df_json_writer_init(&w, &b, 0);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "scope", meta && meta->scope ? meta->scope : df_diag_query_scope_name(DF_DIAG_QUERY_PREVIEW));
    df_json_kv_string(&w, "outcome", outcome);
    df_json_kv_bool(&w, "partial", o != OUT_SUCCESS);
    if (meta && meta->row_limit >= 0) df_json_kv_int(&w, "delta_funnel_row_limit", meta->row_limit);
    df_json_kv_int(&w, "operator_count", t.operators);
    df_json_kv_int(&w, "operators_with_metrics", t.with_metrics);
    df_json_kv_int(&w, "root_output_rows", root_rows);
    if (t.busiest) {
        df_json_kv_string(&w, "max_elapsed_compute_operator", df_pnode_name(t.busiest));
        df_json_kv_int(&w, "max_elapsed_compute_nanos", t.max_compute);
    }
    emit_fields(&b, &w, "query_execution_profile_terminal", emit, user);
}

df_errkind df_query_profile_json(const df_exec_profile *profile, const df_profile_meta *meta, df_buf *out,
                                 df_error *err) {
    if (!profile) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "no profile");
    df_json_writer w;
    df_json_writer_init(&w, out, 0);
    int o = atomic_load(&profile->outcome);
    df_json_object_begin(&w);
    df_json_kv_string(&w, "scope", meta && meta->scope ? meta->scope : df_diag_query_scope_name(DF_DIAG_QUERY_PREVIEW));
    df_json_kv_string(&w, "outcome", outcome_name(o));
    df_json_kv_bool(&w, "partial", o != OUT_SUCCESS);
    if (meta && meta->row_limit >= 0) df_json_kv_int(&w, "delta_funnel_row_limit", meta->row_limit);
    else df_json_kv_null(&w, "delta_funnel_row_limit");
    df_json_kv_int(&w, "output_rows", profile->rows);
    df_json_kv_int(&w, "elapsed_ns", (int64_t)((profile->finished_ns ? profile->finished_ns : df_now_ns()) -
                                               profile->started_ns));
    df_json_kv_int(&w, "target_partitions", profile->ctx.target_partitions);
    df_json_kv_int(&w, "peak_memory_bytes", atomic_load(&profile->ctx.mem_peak));
    df_json_key(&w, "operators");
    df_json_array_begin(&w);
    profile_node(&w, profile->root, -1);
    df_json_array_end(&w);
    df_json_object_end(&w);
    return df_json_writer_finish(&w, err);
}

/* ------------------------------------------------------------------------ */
/* EXPLAIN of physical plans                                                 */

static df_errkind explain_pnode(const df_pnode *n, int depth, df_buf *out, df_error *err) {
    for (int i = 0; i < depth; i++) DF_TRY(df_buf_append_str(out, "  ", err));
    DF_TRY(df_buf_printf(out, err, "%s: partitions=%d", df_pnode_name(n), n->partitions));
    if (n->vt->explain) DF_TRY(n->vt->explain(n, out, err));
    DF_TRY(df_buf_append_char(out, '\n', err));
    for (int32_t i = 0; i < n->ninputs; i++) DF_TRY(explain_pnode(n->inputs[i], depth + 1, out, err));
    return DF_OK;
}

df_errkind df__pnode_explain(const df_pnode *root, df_buf *out, df_error *err) {
    return explain_pnode(root, 0, out, err);
}
