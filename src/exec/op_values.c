/*
 * ValuesExec (literal rows) and EmptyExec (one row without columns for
 * SELECT without FROM, or no rows at all).
 *
 * VALUES rows are constant expressions; they are evaluated once when the
 * plan is built and kept as ready batches of at most batch_size rows.
 */
#include "exec/exec_int.h"

typedef struct values_priv {
    df_batch **batches;     /* prepared output (references) */
    int32_t nbatches;
} values_priv;

typedef struct values_op {
    df_op base;
    int32_t next;           /* next batch to return */
} values_op;

static df_errkind values_next(df_op *op, df_batch **out, df_error *err) {
    values_op *v = (values_op *)op;
    const values_priv *vp = op->node->priv;
    *out = NULL;
    DF_TRY(df__exec_check_cancel(op->ctx, err));
    if (v->next >= vp->nbatches) return DF_OK;
    *out = df_batch_retain(vp->batches[v->next++]);
    return DF_OK;
}

static void values_close(df_op *op) { df_free(op); }

static const df_op_vt values_op_vt = {values_next, values_close};

static df_errkind values_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    values_op *v = df_calloc(1, sizeof *v);
    if (!v) return DF_OOM(err);
    df__op_init(&v->base, &values_op_vt, n, ctx, p);
    v->base.parent = parent;
    *out = &v->base;
    return DF_OK;
}

static void values_destroy(df_pnode *n) {
    values_priv *vp = n->priv;
    if (!vp) return;
    for (int32_t i = 0; i < vp->nbatches; i++) df_batch_release(vp->batches[i]);
    df_free(vp->batches);
    df_free(vp);
}

static df_errkind values_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const values_priv *vp = n->priv;
    int64_t rows = 0;
    for (int32_t i = 0; i < vp->nbatches; i++) rows += vp->batches[i]->nrows;
    return df_buf_printf(out, err, " rows=%lld", (long long)rows);
}

static const df_pnode_vt values_vt = {"ValuesExec", values_open, values_destroy, values_explain};
static const df_pnode_vt empty_vt = {"EmptyExec", values_open, values_destroy, values_explain};

static df_errkind add_batch(values_priv *vp, df_batch *b, df_error *err) {
    df_batch **nb = df_realloc(vp->batches, (size_t)(vp->nbatches + 1) * sizeof *nb);
    if (!nb) {
        df_batch_release(b);
        return DF_OOM(err);
    }
    vp->batches = nb;
    vp->batches[vp->nbatches++] = b;
    return DF_OK;
}

/* Builds one column from constant expressions rows[r][c]. */
static df_errkind build_column(const df_lnode *values, int32_t c, int32_t from, int32_t to, df_type *type,
                               df_vec **out, df_error *err) {
    int32_t n = to - from;
    df_vec **parts = df_calloc((size_t)(n ? n : 1), sizeof(df_vec *));
    if (!parts) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (int32_t r = 0; r < n && !k; r++) {
        df_scalar s = {0};
        k = df__exec_eval_const(values->u.values.rows[from + r][c], &s, err);
        if (!k && !df_type_equals(s.type, type)) {
            /* NULL literals of the Null type in a typed column. */
            if (s.is_null) {
                df_scalar_clear(&s);
                s.type = df_type_retain(type);
                s.is_null = true;
            } else {
                k = df_error_set(err, DF_ERR_INTERNAL, "VALUES cell has an unexpected type");
            }
        }
        if (!k) k = df_vec_from_scalar(&s, 1, &parts[r], err);
        df_scalar_clear(&s);
    }
    if (!k) k = df__vec_concat(parts, n, out, err);
    for (int32_t r = 0; r < n; r++) df_vec_release(parts[r]);
    df_free(parts);
    return k;
}

df_errkind df__op_values_new(const df_lnode *values, df_schema *schema, df_pnode **out, df_error *err) {
    *out = NULL;
    values_priv *vp = df_calloc(1, sizeof *vp);
    if (!vp) return DF_OOM(err);
    df_errkind k = DF_OK;
    int32_t nrows = values->u.values.nrows, ncols = values->ncols;
    const int32_t chunk = 8192;
    for (int32_t from = 0; from < nrows && !k; from += chunk) {
        int32_t to = DF_MIN(nrows, from + chunk);
        df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
        if (!cols) {
            k = DF_OOM(err);
            break;
        }
        for (int32_t c = 0; c < ncols && !k; c++)
            k = build_column(values, c, from, to, schema->fields[c].type, &cols[c], err);
        df_batch *b = NULL;
        if (!k) {
            k = df_batch_new(schema, cols, to - from, &b, err);
        } else {
            for (int32_t c = 0; c < ncols; c++) df_vec_release(cols[c]);
        }
        df_free(cols);
        if (!k) k = add_batch(vp, b, err);
    }
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&values_vt, schema, 1, 0, &n, err);
    if (k) {
        df_pnode tmp = {.priv = vp};
        values_destroy(&tmp);
        return k;
    }
    n->priv = vp;
    *out = n;
    return DF_OK;
}

df_errkind df__op_empty_new(df_schema *schema, bool one_row, df_pnode **out, df_error *err) {
    *out = NULL;
    values_priv *vp = df_calloc(1, sizeof *vp);
    if (!vp) return DF_OOM(err);
    df_errkind k = DF_OK;
    if (one_row) {
        df_batch *b = NULL;
        k = df_batch_new(schema, NULL, 1, &b, err);
        if (!k) k = add_batch(vp, b, err);
    }
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&empty_vt, schema, 1, 0, &n, err);
    if (k) {
        df_pnode tmp = {.priv = vp};
        values_destroy(&tmp);
        return k;
    }
    n->priv = vp;
    *out = n;
    return DF_OK;
}
