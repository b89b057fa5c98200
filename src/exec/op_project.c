/*
 * ProjectionExec: computes one expression program per output column.
 * Column references cost nothing (the input vector is shared); constants
 * are broadcast to the batch length.
 */
#include "exec/exec_int.h"

typedef struct project_priv {
    int32_t n;              /* output columns */
    df_xprog **progs;       /* one compiled program per column */
} project_priv;

typedef struct project_op {
    df_op base;
    df_op *child;           /* input */
    df_xstate **st;         /* per column evaluation state */
} project_op;

static df_errkind project_next(df_op *op, df_batch **out, df_error *err) {
    project_op *p = (project_op *)op;
    const project_priv *pp = op->node->priv;
    *out = NULL;
    df_batch *in = NULL;
    DF_TRY(df_op_next(p->child, &in, err));
    if (!in) return DF_OK;
    df_vec **cols = df_calloc((size_t)(pp->n ? pp->n : 1), sizeof(df_vec *));
    df_errkind k = cols ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < pp->n && !k; c++) k = df__xprog_eval_vec(pp->progs[c], p->st[c], in, &cols[c], err);
    if (!k) {
        k = df_batch_new(op->node->schema, cols, in->nrows, out, err);
    } else if (cols) {
        for (int32_t c = 0; c < pp->n; c++) df_vec_release(cols[c]);
    }
    df_free(cols);
    df_batch_release(in);
    return k;
}

static void project_close(df_op *op) {
    project_op *p = (project_op *)op;
    const project_priv *pp = op->node->priv;
    df_op_close(p->child);
    if (p->st)
        for (int32_t c = 0; c < pp->n; c++) df__xstate_free(p->st[c]);
    df_free(p->st);
    df_free(p);
}

static const df_op_vt project_op_vt = {project_next, project_close};

static df_errkind project_open(df_pnode *n, df_exec_ctx *ctx, int32_t part, df_op *parent, df_op **out,
                               df_error *err) {
    const project_priv *pp = n->priv;
    project_op *p = df_calloc(1, sizeof *p);
    if (!p) return DF_OOM(err);
    df__op_init(&p->base, &project_op_vt, n, ctx, part);
    p->base.parent = parent;
    p->st = df_calloc((size_t)(pp->n ? pp->n : 1), sizeof(df_xstate *));
    df_errkind k = p->st ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < pp->n && !k; c++) {
        k = df__xstate_new(pp->progs[c], &p->st[c], err);
        if (!k) df__xstate_set_ctx(p->st[c], ctx);
    }
    if (!k) k = df_pnode_open(n->inputs[0], ctx, part, &p->base, &p->child, err);
    if (k) {
        project_close(&p->base);
        return k;
    }
    *out = &p->base;
    return DF_OK;
}

static void project_destroy(df_pnode *n) {
    project_priv *pp = n->priv;
    if (!pp) return;
    for (int32_t c = 0; c < pp->n; c++) df__xprog_free(pp->progs[c]);
    df_free(pp->progs);
    df_free(pp);
}

static df_errkind project_explain(const df_pnode *n, df_buf *out, df_error *err) {
    DF_TRY(df_buf_append_str(out, " [", err));
    for (int32_t i = 0; i < n->schema->nfields; i++)
        DF_TRY(df_buf_printf(out, err, "%s%s", i ? ", " : "", n->schema->fields[i].name));
    return df_buf_append_char(out, ']', err);
}

static const df_pnode_vt project_vt = {"ProjectionExec", project_open, project_destroy, project_explain};

df_errkind df__op_project_new(df_pnode *input, df_expr *const *exprs, df_schema *schema, df_pnode **out,
                             df_error *err) {
    *out = NULL;
    int32_t n = schema->nfields;
    project_priv *pp = df_calloc(1, sizeof *pp);
    df_errkind k = pp ? DF_OK : DF_OOM(err);
    if (!k) {
        pp->progs = df_calloc((size_t)(n ? n : 1), sizeof(df_xprog *));
        if (!pp->progs) k = DF_OOM(err);
    }
    for (int32_t c = 0; c < n && !k; c++) {
        k = df__xprog_compile(exprs[c], &pp->progs[c], err);
        pp->n = c + (k ? 0 : 1);
    }
    df_pnode *node = NULL;
    if (!k) k = df__pnode_new(&project_vt, schema, input->partitions, 1, &node, err);
    if (k) {
        df_pnode tmp = {.priv = pp};
        project_destroy(&tmp);
        df__pnode_free(input);
        return k;
    }
    node->inputs[0] = input;
    node->priv = pp;
    *out = node;
    return DF_OK;
}
