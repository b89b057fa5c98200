/*
 * UnionExec (UNION ALL): its partitions are the concatenation of its
 * inputs' partitions, so partition p runs input i's local partition j.
 * Batches are re-labelled with the union's schema (names may differ; the
 * column types are equal by construction).
 */
#include "exec/exec_int.h"

typedef struct union_op {
    df_op base;
    df_op *child;           /* the input partition this partition runs */
} union_op;

static df_errkind union_next(df_op *op, df_batch **out, df_error *err) {
    union_op *u = (union_op *)op;
    *out = NULL;
    df_batch *b = NULL;
    DF_TRY(df_op_next(u->child, &b, err));
    if (!b) return DF_OK;
    df_errkind k = df__batch_rewrap(b, op->node->schema, out, err);
    df_batch_release(b);
    return k;
}

static void union_close(df_op *op) {
    union_op *u = (union_op *)op;
    df_op_close(u->child);
    df_free(u);
}

static const df_op_vt union_op_vt = {union_next, union_close};

static df_errkind union_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    int32_t local = p, i = 0;
    while (i < n->ninputs && local >= n->inputs[i]->partitions) local -= n->inputs[i++]->partitions;
    if (i >= n->ninputs) return df_error_set(err, DF_ERR_INTERNAL, "union partition %d out of range", p);
    union_op *u = df_calloc(1, sizeof *u);
    if (!u) return DF_OOM(err);
    df__op_init(&u->base, &union_op_vt, n, ctx, p);
    u->base.parent = parent;
    df_errkind k = df_pnode_open(n->inputs[i], ctx, local, &u->base, &u->child, err);
    if (k) {
        df_free(u);
        return k;
    }
    *out = &u->base;
    return DF_OK;
}

static const df_pnode_vt union_vt = {"UnionExec", union_open, NULL, NULL};

df_errkind df__op_union_new(df_pnode **inputs, int32_t n, df_schema *schema, df_pnode **out, df_error *err) {
    *out = NULL;
    int32_t parts = 0;
    for (int32_t i = 0; i < n; i++) parts += inputs[i]->partitions;
    df_pnode *u = NULL;
    df_errkind k = df__pnode_new(&union_vt, schema, parts, n, &u, err);
    if (k) {
        for (int32_t i = 0; i < n; i++) df__pnode_free(inputs[i]);
        return k;
    }
    for (int32_t i = 0; i < n; i++) u->inputs[i] = inputs[i];
    *out = u;
    return DF_OK;
}
