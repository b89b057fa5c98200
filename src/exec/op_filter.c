/*
 * FilterExec: keeps the rows whose predicate is TRUE.
 *
 * The predicate program yields a boolean vector; TRUE-and-valid bits are
 * turned into a row index list and the columns are gathered.  Batches that
 * survive whole pass through untouched.  Small results (selective filters)
 * are buffered and concatenated until they reach half a batch, so
 * operators above see reasonably sized batches (DataFusion's
 * CoalesceBatches, folded into the filter).
 */
#include "exec/exec_int.h"

typedef struct filter_priv {
    df_xprog *pred;         /* compiled predicate */
} filter_priv;

typedef struct filter_op {
    df_op base;
    df_op *child;           /* input */
    df_xstate *st;          /* predicate evaluation state */
    int32_t *idx;           /* selected rows scratch */
    int64_t idx_cap;
    df_batch **pending;     /* small filtered batches awaiting concatenation */
    int32_t npending, cap_pending;
    int64_t pending_rows;
    bool done;              /* input exhausted */
} filter_op;

static df_errkind filter_batch(filter_op *f, df_batch *in, df_batch **out, df_error *err) {
    const filter_priv *fp = f->base.node->priv;
    *out = NULL;
    df_xreg r;
    DF_TRY(df__xprog_eval(fp->pred, f->st, in, &r, err));
    if (r.is_const || r.vec->type->id != DF_TYPE_BOOL) {
        bool keep = r.vec->type->id == DF_TYPE_BOOL && df_vec_is_valid(r.vec, 0) && df_vec_bool(r.vec, 0);
        df__xreg_clear(&r);
        if (keep) *out = df_batch_retain(in);
        return DF_OK;
    }
    int64_t n = in->nrows;
    if (f->idx_cap < n) {
        int32_t *ni = df_realloc(f->idx, (size_t)n * sizeof(int32_t));
        if (!ni) {
            df__xreg_clear(&r);
            return DF_OOM(err);
        }
        f->idx = ni;
        f->idx_cap = n;
    }
    const df_vec *v = r.vec;
    const uint8_t *vals = v->values->data, *valid = v->validity ? v->validity->data : NULL;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = v->offset + i;
        bool keep = ((vals[j >> 3] >> (j & 7)) & 1) && (!valid || ((valid[j >> 3] >> (j & 7)) & 1));
        f->idx[m] = (int32_t)i;
        m += keep;
    }
    df__xreg_clear(&r);
    if (m == n) {
        *out = df_batch_retain(in);
        return DF_OK;
    }
    if (m == 0) return DF_OK;
    return df__batch_take(in, f->idx, m, f->base.node->schema, out, err);
}

static df_errkind flush_pending(filter_op *f, df_batch **out, df_error *err) {
    df_errkind k = df__batch_concat(f->pending, f->npending, f->base.node->schema, out, err);
    for (int32_t i = 0; i < f->npending; i++) df_batch_release(f->pending[i]);
    f->npending = 0;
    f->pending_rows = 0;
    return k;
}

static df_errkind filter_next(df_op *op, df_batch **out, df_error *err) {
    filter_op *f = (filter_op *)op;
    *out = NULL;
    int64_t target = op->ctx->batch_size / 2;
    while (!f->done) {
        df_batch *in = NULL;
        DF_TRY(df_op_next(f->child, &in, err));
        if (!in) {
            f->done = true;
            break;
        }
        df_batch *b = NULL;
        df_errkind k = filter_batch(f, in, &b, err);
        df_batch_release(in);
        if (k) return k;
        if (!b) continue;
        if (b->nrows >= target && f->npending == 0) {
            *out = b;
            return DF_OK;
        }
        k = DF_ARRAY_RESERVE(f->pending, f->cap_pending, f->npending + 1, 8, err);
        if (k) {
            df_batch_release(b);
            return k;
        }
        f->pending[f->npending++] = b;
        f->pending_rows += b->nrows;
        if (f->pending_rows >= target) return flush_pending(f, out, err);
    }
    if (f->npending) return flush_pending(f, out, err);
    return DF_OK;
}

static void filter_close(df_op *op) {
    filter_op *f = (filter_op *)op;
    df_op_close(f->child);
    df__xstate_free(f->st);
    for (int32_t i = 0; i < f->npending; i++) df_batch_release(f->pending[i]);
    df_free(f->pending);
    df_free(f->idx);
    df_free(f);
}

static const df_op_vt filter_op_vt = {filter_next, filter_close};

static df_errkind filter_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    const filter_priv *fp = n->priv;
    filter_op *f = df_calloc(1, sizeof *f);
    if (!f) return DF_OOM(err);
    df__op_init(&f->base, &filter_op_vt, n, ctx, p);
    f->base.parent = parent;
    df_errkind k = df__xstate_new(fp->pred, &f->st, err);
    if (!k) df__xstate_set_ctx(f->st, ctx);
    if (!k) k = df_pnode_open(n->inputs[0], ctx, p, &f->base, &f->child, err);
    if (k) {
        filter_close(&f->base);
        return k;
    }
    *out = &f->base;
    return DF_OK;
}

static void filter_destroy(df_pnode *n) {
    filter_priv *fp = n->priv;
    if (!fp) return;
    df__xprog_free(fp->pred);
    df_free(fp);
}

static const df_pnode_vt filter_vt = {"FilterExec", filter_open, filter_destroy, NULL};

df_errkind df__op_filter_new(df_pnode *input, const df_expr *pred, df_pnode **out, df_error *err) {
    *out = NULL;
    filter_priv *fp = df_calloc(1, sizeof *fp);
    df_errkind k = fp ? df__xprog_compile(pred, &fp->pred, err) : DF_OOM(err);
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&filter_vt, input->schema, input->partitions, 1, &n, err);
    if (k) {
        if (fp) df__xprog_free(fp->pred);
        df_free(fp);
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    n->priv = fp;
    *out = n;
    return DF_OK;
}
