/*
 * LimitExec: OFFSET / LIMIT.  The global form runs on one partition and
 * applies skip and fetch; the local form (one per input partition) keeps
 * at most skip + fetch rows of each partition so that producers stop early.
 * When the fetch is reached the input is closed at once, which cancels
 * work below (scans stop reading, exchanges stop their workers).
 */
#include "exec/exec_int.h"

typedef struct limit_priv {
    int64_t skip;           /* rows to drop first */
    int64_t fetch;          /* rows to return at most (-1 = all) */
} limit_priv;

typedef struct limit_op {
    df_op base;
    df_op *child;           /* input (NULL once closed) */
    int64_t skipped;        /* rows dropped so far */
    int64_t returned;       /* rows returned so far */
} limit_op;

static df_errkind limit_next(df_op *op, df_batch **out, df_error *err) {
    limit_op *l = (limit_op *)op;
    const limit_priv *lp = op->node->priv;
    *out = NULL;
    while (l->child) {
        if (lp->fetch >= 0 && l->returned >= lp->fetch) {
            df_op_close(l->child);
            l->child = NULL;
            return DF_OK;
        }
        df_batch *in = NULL;
        DF_TRY(df_op_next(l->child, &in, err));
        if (!in) {
            df_op_close(l->child);
            l->child = NULL;
            return DF_OK;
        }
        int64_t off = 0, n = in->nrows;
        if (l->skipped < lp->skip) {
            int64_t drop = DF_MIN(lp->skip - l->skipped, n);
            l->skipped += drop;
            off = drop;
            n -= drop;
        }
        if (lp->fetch >= 0) n = DF_MIN(n, lp->fetch - l->returned);
        if (n <= 0) {
            df_batch_release(in);
            continue;
        }
        l->returned += n;
        df_errkind k;
        if (off == 0 && n == in->nrows) {
            *out = in;
            k = DF_OK;
        } else {
            k = df_batch_slice(in, off, n, out, err);
            df_batch_release(in);
        }
        return k;
    }
    return DF_OK;
}

static void limit_close(df_op *op) {
    limit_op *l = (limit_op *)op;
    df_op_close(l->child);
    df_free(l);
}

static const df_op_vt limit_op_vt = {limit_next, limit_close};

static df_errkind limit_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    limit_op *l = df_calloc(1, sizeof *l);
    if (!l) return DF_OOM(err);
    df__op_init(&l->base, &limit_op_vt, n, ctx, p);
    l->base.parent = parent;
    df_errkind k = df_pnode_open(n->inputs[0], ctx, p, &l->base, &l->child, err);
    if (k) {
        df_free(l);
        return k;
    }
    *out = &l->base;
    return DF_OK;
}

static void limit_destroy(df_pnode *n) { df_free(n->priv); }

static df_errkind limit_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const limit_priv *lp = n->priv;
    return df_buf_printf(out, err, " skip=%lld fetch=%lld", (long long)lp->skip, (long long)lp->fetch);
}

static const df_pnode_vt global_vt = {"GlobalLimitExec", limit_open, limit_destroy, limit_explain};
static const df_pnode_vt local_vt = {"LocalLimitExec", limit_open, limit_destroy, limit_explain};

df_errkind df__op_limit_new(df_pnode *input, int64_t skip, int64_t fetch, bool global, df_pnode **out,
                           df_error *err) {
    *out = NULL;
    limit_priv *lp = df_calloc(1, sizeof *lp);
    df_pnode *n = NULL;
    df_errkind k = lp ? df__pnode_new(global ? &global_vt : &local_vt, input->schema, global ? 1 : input->partitions,
                                     1, &n, err)
                      : DF_OOM(err);
    if (k) {
        df_free(lp);
        df__pnode_free(input);
        return k;
    }
    lp->skip = global ? skip : 0;
    lp->fetch = global ? fetch : (fetch < 0 ? -1 : skip + fetch);
    n->inputs[0] = input;
    n->priv = lp;
    *out = n;
    return DF_OK;
}
