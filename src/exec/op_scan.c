/*
 * ScanExec / DeltaScanExec: reads a table provider.
 *
 * The scan is planned once when the physical plan is built (the provider
 * prunes units with the pushed predicates), so the partition count is
 * known: min(units, target_partitions).  Partitions do not own fixed units:
 * each claims the next unread unit from a shared counter when it finishes
 * one (dynamic balancing, like morsel-driven schedulers), so a few large
 * files do not leave workers idle.  A fetch hint (LIMIT) stops a partition
 * once it has produced that many rows; the limit above trims the rest.
 *
 * Pushed conjuncts become df_scan_predicate entries when they have the
 * form `column op literal`, `column IN (literals)` or `column IS [NOT]
 * NULL`, possibly with a coercion cast around the column: the literal is
 * then converted to the column's type, and only when the conversion is
 * exact (otherwise the predicate is simply not pushed).
 */
#include "exec/exec_int.h"

typedef struct scan_priv {
    df_table_provider *provider;    /* reference */
    df_scan_plan *plan;             /* provider plan (freed with the node) */
    df_scan_predicate *preds;       /* converted predicates (values owned) */
    int32_t npreds;
    int32_t *proj;                  /* projection (owned copy) */
    int32_t nproj;
    int64_t fetch;                  /* rows wanted per partition at most (-1 = all) */
    _Atomic int64_t next_unit;      /* next unit to claim */
    const char *table;              /* registered name (borrowed from the logical plan) */
    bool delta;                     /* the provider is a Delta table (DeltaScanExec) */
} scan_priv;

typedef struct scan_op {
    df_op base;
    scan_priv *sp;                  /* shared plan data */
    df_batch_stream *cur;           /* current unit stream or NULL */
    int64_t produced;               /* rows returned by this partition */
    int32_t batch_size;
} scan_op;

static df_errkind scan_produce(scan_op *s, df_batch **out, df_error *err);

/*
 * The Delta scan's output waits ("Await Delta scan output", the span name
 * the reference implementation gives them): from asking the Delta reader
 * for the next batch to getting it, end of stream or an error.  Our reader
 * is synchronous (I/O and decoding run in this call), so the wait is this
 * whole call; it is recorded only for Delta providers, only when the
 * execution is traced.
 */
static df_errkind scan_next(df_op *op, df_batch **out, df_error *err) {
    scan_op *s = (scan_op *)op;
    if (DF_LIKELY(!op->ctx->dq || !s->sp->delta)) return scan_produce(s, out, err);
    df_diag_async_span aw = df_diag_await_output_begin(op->ctx->dq, op->node->id, op->partition, op->stream_id);
    df_errkind k = scan_produce(s, out, err);
    df_diag_async_span_end(&aw, k ? DF_DIAG_RESULT_ERROR : DF_DIAG_RESULT_OK);
    return k;
}

static df_errkind scan_produce(scan_op *s, df_batch **out, df_error *err) {
    df_op *op = &s->base;
    *out = NULL;
    for (;;) {
        DF_TRY(df__exec_check_cancel(op->ctx, err));
        if (s->sp->fetch >= 0 && s->produced >= s->sp->fetch) return DF_OK;
        if (!s->cur) {
            int64_t u = atomic_fetch_add_explicit(&s->sp->next_unit, 1, memory_order_relaxed);
            if (u >= s->sp->plan->nunits) return DF_OK;
            DF_TRY(s->sp->provider->vt->open_unit(s->sp->provider, s->sp->plan, u, &s->cur, err));
        }
        df_batch *b = NULL;
        DF_TRY(df_batch_stream_next(s->cur, &b, err));
        if (!b) {
            df_batch_stream_close(s->cur);
            s->cur = NULL;
            continue;
        }
        if (b->nrows == 0) {
            df_batch_release(b);
            continue;
        }
        s->produced += b->nrows;
        df_errkind k = df__batch_rewrap(b, op->node->schema, out, err);
        df_batch_release(b);
        return k;
    }
}

static void scan_close(df_op *op) {
    scan_op *s = (scan_op *)op;
    df_batch_stream_close(s->cur);
    df_free(s);
}

static const df_op_vt scan_op_vt = {scan_next, scan_close};

static df_errkind scan_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    scan_op *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    df__op_init(&s->base, &scan_op_vt, n, ctx, p);
    s->base.parent = parent;
    s->sp = n->priv;
    s->batch_size = ctx->batch_size;
    *out = &s->base;
    return DF_OK;
}

static void scan_destroy(df_pnode *n) {
    scan_priv *sp = n->priv;
    if (!sp) return;
    if (sp->plan) sp->provider->vt->free_plan(sp->provider, sp->plan);
    for (int32_t i = 0; i < sp->npreds; i++) {
        for (int32_t v = 0; v < sp->preds[i].nvalues; v++) df_scalar_clear(&sp->preds[i].values[v]);
        df_free(sp->preds[i].values);
    }
    df_free(sp->preds);
    df_free(sp->proj);
    df_table_provider_release(sp->provider);
    df_free(sp);
}

static const char *op_name(df_pred_op op) {
    switch (op) {
    case DF_PRED_EQ: return "=";
    case DF_PRED_NE: return "!=";
    case DF_PRED_LT: return "<";
    case DF_PRED_LE: return "<=";
    case DF_PRED_GT: return ">";
    case DF_PRED_GE: return ">=";
    case DF_PRED_IS_NULL: return "IS NULL";
    case DF_PRED_IS_NOT_NULL: return "IS NOT NULL";
    default: return "IN";
    }
}

static df_errkind scan_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const scan_priv *sp = n->priv;
    DF_TRY(df_buf_printf(out, err, " table=%s units=%lld projection=[", sp->table ? sp->table : "?",
                         (long long)sp->plan->nunits));
    for (int32_t i = 0; i < n->schema->nfields; i++)
        DF_TRY(df_buf_printf(out, err, "%s%s", i ? ", " : "", n->schema->fields[i].name));
    DF_TRY(df_buf_append_char(out, ']', err));
    if (sp->npreds) {
        DF_TRY(df_buf_append_str(out, " predicates=[", err));
        const df_schema *ps = sp->provider->schema;
        for (int32_t i = 0; i < sp->npreds; i++)
            DF_TRY(df_buf_printf(out, err, "%s%s %s", i ? ", " : "", ps->fields[sp->preds[i].column].name,
                                 op_name(sp->preds[i].op)));
        DF_TRY(df_buf_append_char(out, ']', err));
    }
    if (sp->fetch >= 0) DF_TRY(df_buf_printf(out, err, " fetch=%lld", (long long)sp->fetch));
    return DF_OK;
}

static const df_pnode_vt scan_vt = {"ScanExec", scan_open, scan_destroy, scan_explain};

/* ------------------------------------------------------------------------ */
/* Predicate conversion                                                      */

/* Casts a scalar to `to` through the cast kernels; false when it fails. */
static bool cast_scalar(const df_scalar *in, df_type *to, df_scalar *out) {
    memset(out, 0, sizeof *out);
    df_kernel k = {0};
    df_vec *v = NULL;
    df_xreg arg = {0}, res = {0};
    bool ok = false;
    if (df__kernel_for_cast(in->type, to, false, &k, NULL)) return false;
    if (df_vec_from_scalar(in, 1, &v, NULL)) goto done;
    arg.vec = v;
    arg.is_const = true;
    df_kargs ka = {.n = 1, .nsel = 1, .type = to, .aux = k.aux, .err = NULL};
    if (k.fn(&ka, &arg, 1, &res)) goto done;
    ok = df_scalar_from_vec(out, res.vec, 0, NULL) == DF_OK;
done:
    df__xreg_clear(&res);
    df_vec_release(v);
    if (k.aux_free) k.aux_free(k.aux);
    return ok;
}

static bool scalars_equal(const df_scalar *a, const df_scalar *b) {
    df_vec *x = NULL, *y = NULL;
    bool eq = false;
    if (!df_vec_from_scalar(a, 1, &x, NULL) && !df_vec_from_scalar(b, 1, &y, NULL))
        eq = df_vec_is_valid(x, 0) && df_vec_is_valid(y, 0) && df__cmp_values(x, 0, y, 0) == 0;
    df_vec_release(x);
    df_vec_release(y);
    return eq;
}

/* Column index when e is a column or an implicit cast of one; sets *col_type. */
static int32_t column_of(const df_expr *e, const df_schema *ps) {
    if (e->kind == DF_EX_CAST && e->implicit && !e->flag) e = e->args[0];
    if (e->kind != DF_EX_COLUMN || e->column < 0 || e->column >= ps->nfields) return -1;
    return e->column;
}

/* Converts literal to the column type exactly (round trip); false otherwise. */
static bool literal_for_column(const df_scalar *lit, df_type *col_type, df_scalar *out) {
    if (lit->is_null) return false;
    if (df_type_equals(lit->type, col_type)) return df_scalar_copy(out, lit, NULL) == DF_OK;
    df_scalar c, back;
    if (!cast_scalar(lit, col_type, &c)) return false;
    bool exact = cast_scalar(&c, lit->type, &back) && scalars_equal(&back, lit);
    df_scalar_clear(&back);
    if (!exact) {
        df_scalar_clear(&c);
        return false;
    }
    *out = c;
    return true;
}

static df_pred_op flip(df_pred_op op) {
    switch (op) {
    case DF_PRED_LT: return DF_PRED_GT;
    case DF_PRED_LE: return DF_PRED_GE;
    case DF_PRED_GT: return DF_PRED_LT;
    case DF_PRED_GE: return DF_PRED_LE;
    default: return op;
    }
}

/* Tries to turn one conjunct into a predicate; false when it does not fit the forms. */
static bool convert(const df_expr *e, const df_schema *ps, df_scan_predicate *p) {
    memset(p, 0, sizeof *p);
    if (e->kind == DF_EX_FUNC && (e->fn == DF_FN_IS_NULL || e->fn == DF_FN_IS_NOT_NULL)) {
        int32_t c = column_of(e->args[0], ps);
        if (c < 0) return false;
        p->column = c;
        p->op = e->fn == DF_FN_IS_NULL ? DF_PRED_IS_NULL : DF_PRED_IS_NOT_NULL;
        return true;
    }
    if (e->kind == DF_EX_FUNC && e->nargs == 2 && e->fn >= DF_FN_EQ && e->fn <= DF_FN_GE) {
        static const df_pred_op ops[] = {DF_PRED_EQ, DF_PRED_NE, DF_PRED_LT, DF_PRED_LE, DF_PRED_GT, DF_PRED_GE};
        df_pred_op op = ops[e->fn - DF_FN_EQ];
        const df_expr *a = e->args[0], *b = e->args[1];
        if (a->kind == DF_EX_LITERAL) {
            const df_expr *t = a;
            a = b;
            b = t;
            op = flip(op);
        }
        int32_t c = column_of(a, ps);
        if (c < 0 || b->kind != DF_EX_LITERAL) return false;
        p->values = df_calloc(1, sizeof(df_scalar));
        if (!p->values) return false;
        if (!literal_for_column(b->lit, ps->fields[c].type, &p->values[0])) {
            df_free(p->values);
            p->values = NULL;
            return false;
        }
        p->column = c;
        p->op = op;
        p->nvalues = 1;
        return true;
    }
    if (e->kind == DF_EX_IN_LIST && !e->flag) {
        int32_t c = column_of(e->args[0], ps);
        if (c < 0) return false;
        int32_t n = e->nargs - 1;
        p->values = df_calloc((size_t)n, sizeof(df_scalar));
        if (!p->values) return false;
        for (int32_t i = 0; i < n; i++) {
            const df_expr *l = e->args[i + 1];
            if (l->kind != DF_EX_LITERAL || !literal_for_column(l->lit, ps->fields[c].type, &p->values[p->nvalues])) {
                for (int32_t v = 0; v < p->nvalues; v++) df_scalar_clear(&p->values[v]);
                df_free(p->values);
                p->values = NULL;
                p->nvalues = 0;
                return false;
            }
            p->nvalues++;
        }
        p->column = c;
        p->op = DF_PRED_IN;
        return true;
    }
    return false;
}

df_errkind df__op_scan_new(const df_lnode *scan, df_exec_ctx *ctx, df_pnode **out, df_error *err) {
    *out = NULL;
    df_schema *schema;
    DF_TRY(df__exec_schema_from_cols(scan->cols, scan->ncols, &schema, err));
    scan_priv *sp = df_calloc(1, sizeof *sp);
    if (!sp) {
        df_schema_release(schema);
        return DF_OOM(err);
    }
    sp->provider = df_table_provider_retain(scan->u.scan.provider);
    sp->fetch = scan->u.scan.fetch;
    sp->table = scan->u.scan.table;
    df_errkind k = DF_OK;
    sp->nproj = scan->u.scan.nproj;
    sp->proj = df_malloc((size_t)(sp->nproj ? sp->nproj : 1) * sizeof(int32_t));
    sp->preds = df_calloc((size_t)(scan->u.scan.nfilters ? scan->u.scan.nfilters : 1), sizeof(df_scan_predicate));
    if (!sp->proj || !sp->preds) k = DF_OOM(err);
    if (!k) {
        df__memcpy(sp->proj, scan->u.scan.proj, (size_t)sp->nproj * sizeof(int32_t));
        for (int32_t i = 0; i < scan->u.scan.nfilters; i++)
            if (convert(scan->u.scan.filters[i], sp->provider->schema, &sp->preds[sp->npreds])) sp->npreds++;
        df_scan_request req = {.projection = sp->proj, .nprojection = sp->nproj, .predicates = sp->preds,
                               .npredicates = sp->npreds, .limit = sp->fetch, .batch_size = ctx->batch_size};
        k = sp->provider->vt->plan_scan(sp->provider, &req, &sp->plan, err);
    }
    if (!k && sp->plan->schema->nfields != schema->nfields)
        k = df_error_set(err, DF_ERR_DEPENDENCY_COMPATIBILITY, "table provider returned %d columns, expected %d",
                         sp->plan->schema->nfields, schema->nfields);
    for (int32_t i = 0; !k && i < schema->nfields; i++)
        if (!df_type_equals(sp->plan->schema->fields[i].type, schema->fields[i].type))
            k = df_error_set(err, DF_ERR_DEPENDENCY_COMPATIBILITY,
                             "table provider column `%s` changed type since planning", schema->fields[i].name);
    int64_t units = sp->plan ? sp->plan->nunits : 0;
    int32_t parts = (int32_t)DF_MAX(1, DF_MIN(units, (int64_t)ctx->target_partitions));
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(&scan_vt, schema, parts, 0, &n, err);
    df_schema_release(schema);
    if (k) {
        n = NULL;
        df_pnode tmp = {.priv = sp};
        scan_destroy(&tmp);
        return k;
    }
    atomic_init(&sp->next_unit, 0);
    n->priv = sp;
    sp->delta = sp->provider->kind && strcmp(sp->provider->kind, "delta") == 0;
    if (sp->delta) n->display_name = "DeltaScanExec";
    *out = n;
    return DF_OK;
}

/* Scan metrics of a scan node, or NULL for other nodes (profiles). */
const df_scan_metrics *df__scan_metrics(const df_pnode *n) {
    if (n->vt != &scan_vt || !n->priv) return NULL;
    const scan_priv *sp = n->priv;
    return sp->plan ? sp->plan->metrics : NULL;
}

/* The provider and registered table name of a scan node (NULL for other nodes). */
const df_table_provider *df__scan_provider(const df_pnode *n) {
    return n->vt == &scan_vt && n->priv ? ((const scan_priv *)n->priv)->provider : NULL;
}
const char *df__scan_table(const df_pnode *n) {
    return n->vt == &scan_vt && n->priv ? ((const scan_priv *)n->priv)->table : NULL;
}

/* The same for a scan of a Delta table, or NULL (progress counts Delta files only). */
const df_scan_metrics *df__scan_delta_metrics(const df_pnode *n) {
    if (n->vt != &scan_vt || !n->priv || !((const scan_priv *)n->priv)->delta) return NULL;
    return df__scan_metrics(n);
}
