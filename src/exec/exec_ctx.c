/*
 * Execution context services (cancellation, CPU tokens, memory accounting)
 * and the plumbing shared by every operator (node allocation, operator
 * state initialisation, the instrumented slow paths of df_op_next and
 * df_pnode_open, schemas from logical columns).
 */
#include "exec/exec_int.h"

df_errkind df__exec_check_cancel(df_exec_ctx *ctx, df_error *err) {
    if (!df_exec_cancelled(ctx)) return DF_OK;
    return df_error_set(err, DF_ERR_CANCELLED, "query cancelled");
}

/* The execution whose result stream this thread is pulling (see exec_int.h), or NULL. */
static _Thread_local const df_exec_ctx *caller_of;

const df_exec_ctx *df__exec_caller_enter(const df_exec_ctx *ctx) {
    const df_exec_ctx *prev = caller_of;
    caller_of = ctx;
    return prev;
}

void df__exec_caller_leave(const df_exec_ctx *prev) { caller_of = prev; }

void df__exec_token_acquire(df_exec_ctx *ctx) {
    if (caller_of == ctx) return;
    pthread_mutex_lock(&ctx->tok_mu);
    while (ctx->tokens <= 0) pthread_cond_wait(&ctx->tok_cv, &ctx->tok_mu);
    ctx->tokens--;
    pthread_mutex_unlock(&ctx->tok_mu);
}

void df__exec_token_release(df_exec_ctx *ctx) {
    if (caller_of == ctx) return;
    pthread_mutex_lock(&ctx->tok_mu);
    ctx->tokens++;
    pthread_cond_signal(&ctx->tok_cv);
    pthread_mutex_unlock(&ctx->tok_mu);
}

df_errkind df__exec_mem_reserve(df_exec_ctx *ctx, int64_t bytes, df_error *err) {
    int64_t now = atomic_fetch_add_explicit(&ctx->mem_used, bytes, memory_order_relaxed) + bytes;
    if (ctx->mem_limit > 0 && now > ctx->mem_limit) {
        atomic_fetch_sub_explicit(&ctx->mem_used, bytes, memory_order_relaxed);
        return df_error_set(err, DF_ERR_OUT_OF_MEMORY, "query memory limit of %lld bytes exceeded",
                            (long long)ctx->mem_limit);
    }
    int64_t peak = atomic_load_explicit(&ctx->mem_peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&ctx->mem_peak, &peak, now, memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    return DF_OK;
}

void df__exec_mem_release(df_exec_ctx *ctx, int64_t bytes) {
    atomic_fetch_sub_explicit(&ctx->mem_used, bytes, memory_order_relaxed);
}

void df__op_init(df_op *op, const df_op_vt *vt, df_pnode *node, df_exec_ctx *ctx, int32_t partition) {
    op->vt = vt;
    op->node = node;
    op->ctx = ctx;
    op->partition = partition;
    op->parent = NULL;
    op->child_ns = 0;
    op->m = NULL;
    op->stream_id = 0;
    if (node->metrics && partition >= 0 && partition < node->partitions) {
        op->m = &node->metrics[partition];
        if (!op->m->opened) {
            op->m->opened = true;
            op->m->start_ns = (int64_t)df_now_ns();
        }
    }
    op->instrumented = op->m != NULL || ctx->dq != NULL;
}

df_errkind df__op_next_instrumented(df_op *op, df_batch **out, df_error *err) {
    df_diag_span act = df_diag_activity_begin(op->ctx->dq, &op->node->dnode, DF_DIAG_ACTIVITY_POLL_NEXT,
                                              op->partition, op->stream_id);
    if (!op->m) {
        df_errkind k = op->vt->next(op, out, err);
        df_diag_span_end(act, k ? DF_DIAG_RESULT_ERROR : *out ? DF_DIAG_RESULT_BATCH : DF_DIAG_RESULT_EOF);
        return k;
    }
    uint64_t t0 = df_now_ns();
    int64_t child0 = op->child_ns;
    df_errkind k = op->vt->next(op, out, err);
    int64_t dt = (int64_t)(df_now_ns() - t0);
    op->m->elapsed_compute += dt - (op->child_ns - child0);
    if (op->parent) op->parent->child_ns += dt;
    if (k == DF_OK && *out) {
        op->m->output_rows += (*out)->nrows;
        op->m->output_batches++;
    }
    df_diag_span_end(act, k ? DF_DIAG_RESULT_ERROR : *out ? DF_DIAG_RESULT_BATCH : DF_DIAG_RESULT_EOF);
    return k;
}

df_errkind df__pnode_open_traced(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out,
                                 df_error *err) {
    uint64_t stream = df_diag_query_next_stream_id(ctx->dq);
    df_diag_span act = df_diag_activity_begin(ctx->dq, &n->dnode, DF_DIAG_ACTIVITY_EXECUTE, p, stream);
    df_errkind k = n->vt->open(n, ctx, p, parent, out, err);
    if (k == DF_OK) (*out)->stream_id = stream;
    df_diag_span_end(act, k ? DF_DIAG_RESULT_ERROR : DF_DIAG_RESULT_STREAM);
    return k;
}

df_errkind df__pnode_new(const df_pnode_vt *vt, df_schema *schema, int32_t partitions, int32_t ninputs,
                        df_pnode **out, df_error *err) {
    *out = NULL;
    df_pnode *n = df_calloc(1, sizeof *n);
    if (!n) return DF_OOM(err);
    if (ninputs > 0) {
        n->inputs = df_calloc((size_t)ninputs, sizeof(df_pnode *));
        if (!n->inputs) {
            df_free(n);
            return DF_OOM(err);
        }
    }
    n->vt = vt;
    n->schema = df_schema_retain(schema);
    n->partitions = partitions < 1 ? 1 : partitions;
    n->ninputs = ninputs;
    *out = n;
    return DF_OK;
}

void df__pnode_free(df_pnode *n) {
    if (!n) return;
    for (int32_t i = 0; i < n->ninputs; i++) df__pnode_free(n->inputs[i]);
    if (n->vt && n->vt->destroy) n->vt->destroy(n);
    df_free(n->inputs);
    df_free(n->metrics);
    df_schema_release(n->schema);
    df_free(n);
}

df_errkind df__exec_schema_from_cols(const df_lcol *cols, int32_t n, df_schema **out, df_error *err) {
    df_schema *s;
    DF_TRY(df_schema_alloc(n, &s, err));
    for (int32_t i = 0; i < n; i++) {
        df_errkind k = df_field_init(&s->fields[i], cols[i].name, cols[i].type, cols[i].nullable, err);
        if (k) {
            df_schema_release(s);
            return k;
        }
    }
    *out = s;
    return DF_OK;
}
