/*
 * SortExec and SortPreservingMergeExec.
 *
 * SortExec (per partition) buffers its input, concatenates it, evaluates
 * the key expressions once over the whole buffer and sorts an index array
 * with a stable bottom-up merge sort, then emits the rows in batches of
 * batch_size.  With a fetch (ORDER BY ... LIMIT k) it keeps memory bounded:
 * whenever the buffer grows past a few times k rows it is sorted and cut
 * back to the best k (top-k by periodic compaction).  Buffered bytes are
 * accounted against the query's memory limit.
 *
 * SortPreservingMergeExec merges the sorted partitions: each runs on a
 * worker into its own queue (df__xfer in per-partition mode) and the
 * consumer repeatedly takes the smallest head row among the partitions.
 *
 * Ordering: NULLs sort as the key says (default: last for ASC, first for
 * DESC), floats in IEEE total order, strings bytewise.  Ties keep input
 * order, so sorts are deterministic for a given input order.
 */
#include "exec/exec_int.h"

/* ------------------------------------------------------------------------ */
/* Sort specifications                                                       */

df_errkind df__sortspec_init(df__sortspec *sp, const df_sort_key *keys, int32_t nkeys, df_error *err) {
    memset(sp, 0, sizeof *sp);
    sp->progs = df_calloc((size_t)(nkeys ? nkeys : 1), sizeof(df_xprog *));
    sp->desc = df_calloc((size_t)(nkeys ? nkeys : 1), sizeof(bool));
    sp->nulls_first = df_calloc((size_t)(nkeys ? nkeys : 1), sizeof(bool));
    if (!sp->progs || !sp->desc || !sp->nulls_first) {
        df__sortspec_clear(sp);
        return DF_OOM(err);
    }
    for (int32_t k = 0; k < nkeys; k++) {
        df_errkind e = df__xprog_compile(keys[k].expr, &sp->progs[k], err);
        if (e) {
            df__sortspec_clear(sp);
            return e;
        }
        sp->nkeys = k + 1;
        sp->desc[k] = keys[k].desc;
        sp->nulls_first[k] = keys[k].nulls_first;
    }
    return DF_OK;
}

void df__sortspec_clear(df__sortspec *sp) {
    if (sp->progs)
        for (int32_t k = 0; k < sp->nkeys; k++) df__xprog_free(sp->progs[k]);
    df_free(sp->progs);
    df_free(sp->desc);
    df_free(sp->nulls_first);
    memset(sp, 0, sizeof *sp);
}

df_errkind df__sortspec_eval(const df__sortspec *sp, df_xstate **st, const df_batch *b, df_vec **keys,
                             df_error *err) {
    for (int32_t k = 0; k < sp->nkeys; k++) {
        df_errkind e = df__xprog_eval_vec(sp->progs[k], st[k], b, &keys[k], err);
        if (e) {
            for (int32_t j = 0; j < k; j++) {
                df_vec_release(keys[j]);
                keys[j] = NULL;
            }
            return e;
        }
    }
    return DF_OK;
}

static inline bool key_valid(const df_vec *v, int64_t i) {
    return v->type->id != DF_TYPE_NULL && df_vec_is_valid(v, i);
}

int df__sortspec_cmp(const df__sortspec *sp, df_vec *const *a, int64_t i, df_vec *const *b, int64_t j) {
    for (int32_t k = 0; k < sp->nkeys; k++) {
        bool va = key_valid(a[k], i), vb = key_valid(b[k], j);
        if (!va || !vb) {
            if (va == vb) continue;
            return (!va) == sp->nulls_first[k] ? -1 : 1;
        }
        int c = df__cmp_values(a[k], i, b[k], j);
        if (c) return sp->desc[k] ? -c : c;
    }
    return 0;
}

static df_errkind states_new(const df__sortspec *sp, df_xstate ***out, df_error *err) {
    df_xstate **st = df_calloc((size_t)(sp->nkeys ? sp->nkeys : 1), sizeof(df_xstate *));
    if (!st) return DF_OOM(err);
    for (int32_t k = 0; k < sp->nkeys; k++) {
        df_errkind e = df__xstate_new(sp->progs[k], &st[k], err);
        if (e) {
            for (int32_t j = 0; j < k; j++) df__xstate_free(st[j]);
            df_free(st);
            return e;
        }
    }
    *out = st;
    return DF_OK;
}

static void states_free(const df__sortspec *sp, df_xstate **st) {
    if (!st) return;
    for (int32_t k = 0; k < sp->nkeys; k++) df__xstate_free(st[k]);
    df_free(st);
}

df_errkind df__sort_indices(const df__sortspec *sp, df_vec *const *keys, int32_t *idx, int64_t n, df_error *err) {
    return df__sort_indices_in(NULL, sp, keys, idx, n, err);
}

/* Stable bottom-up merge sort of idx[0..n) by the keys. */
df_errkind df__sort_indices_in(df_exec_ctx *ctx, const df__sortspec *sp, df_vec *const *keys, int32_t *idx, int64_t n,
                               df_error *err) {
    int32_t *tmp = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!tmp) return DF_OOM(err);
    /* Insertion sort runs of 16, then merge. */
    const int64_t run = 16;
    for (int64_t s = 0; s < n; s += run) {
        if (ctx && (s & 65535) == 0 && df_exec_cancelled(ctx)) {
            df_free(tmp);
            return df__exec_check_cancel(ctx, err);
        }
        int64_t e = DF_MIN(s + run, n);
        for (int64_t i = s + 1; i < e; i++) {
            int32_t x = idx[i];
            int64_t j = i - 1;
            while (j >= s && df__sortspec_cmp(sp, keys, idx[j], keys, x) > 0) {
                idx[j + 1] = idx[j];
                j--;
            }
            idx[j + 1] = x;
        }
    }
    int32_t *src = idx, *dst = tmp;
    for (int64_t width = run; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = DF_MIN(lo + width, n), hi = DF_MIN(lo + 2 * width, n);
            int64_t a = lo, b = mid, o = lo;
            if (mid < hi && df__sortspec_cmp(sp, keys, src[mid - 1], keys, src[mid]) <= 0) {
                df__memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(int32_t)); /* already ordered */
                continue;
            }
            while (a < mid && b < hi) {
                /* In slices of 64 Ki rows, so a cancel is seen within one. */
                for (int64_t end = o + 65536; a < mid && b < hi && o < end;)
                    dst[o++] = df__sortspec_cmp(sp, keys, src[b], keys, src[a]) < 0 ? src[b++] : src[a++];
                if (ctx && df_exec_cancelled(ctx)) {
                    df_free(tmp);
                    return df__exec_check_cancel(ctx, err);
                }
            }
            while (a < mid) dst[o++] = src[a++];
            while (b < hi) dst[o++] = src[b++];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) df__memcpy(idx, src, (size_t)n * sizeof(int32_t));
    df_free(tmp);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* SortExec                                                                  */

typedef struct sort_priv {
    df__sortspec spec;      /* keys */
    int64_t fetch;          /* rows needed (-1 = all) */
} sort_priv;

typedef struct sort_op {
    df_op base;
    df_op *child;           /* input (NULL once consumed) */
    df_xstate **st;         /* key evaluation states */
    df_batch **buf;         /* buffered input */
    int32_t nbuf, cap;
    int64_t buf_rows;
    int64_t reserved;       /* bytes accounted */
    df_batch *sorted;       /* all rows, concatenated */
    int32_t *order;         /* sorted row order */
    int64_t norder;         /* rows to emit */
    int64_t emitted;        /* rows emitted so far */
    df_vec **keys;          /* scratch for one evaluation of the keys, nkeys entries */
    df_vec **bound;         /* top-k: key vectors of the buffered best rows, nkeys entries */
    int64_t bound_row;      /* top-k: row of bound[] that is the k-th best (-1 = none yet) */
    int32_t *sel;           /* top-k: scratch row selection, batch_size entries */
} sort_op;

static df_errkind buf_push(sort_op *s, df_batch *b, df_error *err) {
    int64_t bytes = df__batch_bytes(b);
    df_errkind k = DF_ARRAY_RESERVE(s->buf, s->cap, s->nbuf + 1, 16, err);
    if (!k) k = df__exec_mem_reserve(s->base.ctx, bytes, err);
    if (k) {
        df_batch_release(b);
        return k;
    }
    s->reserved += bytes;
    s->buf[s->nbuf++] = b;
    s->buf_rows += b->nrows;
    return DF_OK;
}

static void buf_clear(sort_op *s) {
    for (int32_t i = 0; i < s->nbuf; i++) df_batch_release(s->buf[i]);
    s->nbuf = 0;
    s->buf_rows = 0;
    df__exec_mem_release(s->base.ctx, s->reserved);
    s->reserved = 0;
}

/* Concatenates the buffer, sorts it; leaves s->sorted / s->order (keeping at most `keep` rows). */
static df_errkind sort_buffer(sort_op *s, int64_t keep, df_error *err) {
    const sort_priv *sp = s->base.node->priv;
    df_batch *all = NULL;
    DF_TRY(df__batch_concat(s->buf, s->nbuf, s->base.node->schema, &all, err));
    int64_t n = all->nrows;
    df_vec **keys = s->keys;
    df_errkind k = df__sortspec_eval(&sp->spec, s->st, all, keys, err);
    int32_t *order = NULL;
    if (!k) {
        order = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
        if (!order) k = DF_OOM(err);
        for (int64_t i = 0; !k && i < n; i++) order[i] = (int32_t)i;
        if (!k) k = df__sort_indices_in(s->base.ctx, &sp->spec, keys, order, n, err);
        for (int32_t j = 0; j < sp->spec.nkeys; j++) df_vec_release(keys[j]);
    }
    if (k) {
        df_free(order);
        df_batch_release(all);
        return k;
    }
    df_batch_release(s->sorted);
    df_free(s->order);
    s->sorted = all;
    s->order = order;
    s->norder = keep >= 0 ? DF_MIN(keep, n) : n;
    return DF_OK;
}

static void bound_clear(sort_op *s) {
    const sort_priv *sp = s->base.node->priv;
    if (!s->bound) return;
    for (int32_t k = 0; k < sp->spec.nkeys; k++) {
        df_vec_release(s->bound[k]);
        s->bound[k] = NULL;
    }
    s->bound_row = -1;
}

/* Top-k compaction: keep only the best `fetch` rows as one buffered batch,
 * and remember their keys so later rows can be screened against the k-th. */
static df_errkind compact(sort_op *s, int64_t fetch, df_error *err) {
    const sort_priv *sp = s->base.node->priv;
    DF_TRY(sort_buffer(s, fetch, err));
    df_batch *best = NULL;
    DF_TRY(df__batch_take(s->sorted, s->order, s->norder, s->base.node->schema, &best, err));
    df_batch_release(s->sorted);
    s->sorted = NULL;
    df_free(s->order);
    s->order = NULL;
    buf_clear(s);
    bound_clear(s);
    if (best->nrows == fetch && fetch > 0) {
        df_errkind k = df__sortspec_eval(&sp->spec, s->st, best, s->bound, err);
        if (k) {
            df_batch_release(best);
            return k;
        }
        s->bound_row = fetch - 1;
    }
    return buf_push(s, best, err);
}

/* Top-k screening: with k rows already buffered, a row can only enter the
 * result when it sorts strictly before the k-th best (a tie loses, because
 * the buffered row came first and the sort is stable).  Replaces *b by the
 * qualifying rows, or by NULL when none qualify. */
static df_errkind screen(sort_op *s, df_batch **b, df_error *err) {
    const sort_priv *sp = s->base.node->priv;
    df_vec **keys = s->keys;
    df_batch *in = *b;
    DF_TRY(df__sortspec_eval(&sp->spec, s->st, in, keys, err));
    if (!s->sel) s->sel = df_malloc((size_t)s->base.ctx->batch_size * sizeof(int32_t));
    df_errkind k = DF_OK;
    int32_t *sel = s->sel;
    if (!sel || in->nrows > s->base.ctx->batch_size) {
        /* Unusually large batch: screen in a private array. */
        sel = df_malloc((size_t)(in->nrows ? in->nrows : 1) * sizeof(int32_t));
        if (!sel) k = DF_OOM(err);
    }
    int64_t n = 0;
    for (int64_t i = 0; !k && i < in->nrows; i++) {
        sel[n] = (int32_t)i;
        n += df__sortspec_cmp(&sp->spec, keys, i, s->bound, s->bound_row) < 0;
    }
    for (int32_t j = 0; j < sp->spec.nkeys; j++) df_vec_release(keys[j]);
    *b = NULL;
    if (!k && n == in->nrows) *b = in, in = NULL;
    else if (!k && n > 0) k = df__batch_take(in, sel, n, s->base.node->schema, b, err);
    if (sel != s->sel) df_free(sel);
    df_batch_release(in);
    return k;
}

static df_errkind consume_input(sort_op *s, df_error *err) {
    const sort_priv *sp = s->base.node->priv;
    int64_t limit = sp->fetch >= 0 ? DF_MAX(4 * sp->fetch, (int64_t)s->base.ctx->batch_size * 2) : -1;
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df_op_next(s->child, &b, err));
        if (!b) break;
        if (s->bound_row >= 0) {
            DF_TRY(screen(s, &b, err));
            if (!b) continue;
        }
        DF_TRY(buf_push(s, b, err));
        if (limit >= 0 && s->buf_rows > limit) DF_TRY(compact(s, sp->fetch, err));
    }
    df_op_close(s->child);
    s->child = NULL;
    if (s->nbuf == 0) return DF_OK;
    DF_TRY(sort_buffer(s, sp->fetch, err));
    buf_clear(s);
    return DF_OK;
}

static df_errkind sort_next(df_op *op, df_batch **out, df_error *err) {
    sort_op *s = (sort_op *)op;
    *out = NULL;
    if (s->child) DF_TRY(consume_input(s, err));
    if (!s->sorted || s->emitted >= s->norder) return DF_OK;
    DF_TRY(df__exec_check_cancel(op->ctx, err));
    int64_t n = DF_MIN((int64_t)op->ctx->batch_size, s->norder - s->emitted);
    DF_TRY(df__batch_take(s->sorted, s->order + s->emitted, n, op->node->schema, out, err));
    s->emitted += n;
    return DF_OK;
}

static void sort_close(df_op *op) {
    sort_op *s = (sort_op *)op;
    const sort_priv *sp = op->node->priv;
    df_op_close(s->child);
    buf_clear(s);
    bound_clear(s);
    df_free(s->bound);
    df_free(s->keys);
    df_free(s->sel);
    df_free(s->buf);
    df_batch_release(s->sorted);
    df_free(s->order);
    states_free(&sp->spec, s->st);
    df_free(s);
}

static const df_op_vt sort_op_vt = {sort_next, sort_close};

static df_errkind sort_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    const sort_priv *sp = n->priv;
    sort_op *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    df__op_init(&s->base, &sort_op_vt, n, ctx, p);
    s->bound_row = -1;
    s->base.parent = parent;
    /* Key arrays sized by the plan: ORDER BY takes any number of keys. */
    size_t nk = (size_t)(sp->spec.nkeys ? sp->spec.nkeys : 1);
    s->keys = df_calloc(nk, sizeof(df_vec *));
    s->bound = df_calloc(nk, sizeof(df_vec *));
    df_errkind k = (s->keys && s->bound) ? DF_OK : DF_OOM(err);
    if (!k) k = states_new(&sp->spec, &s->st, err);
    if (!k) k = df_pnode_open(n->inputs[0], ctx, p, &s->base, &s->child, err);
    if (k) {
        sort_close(&s->base);
        return k;
    }
    *out = &s->base;
    return DF_OK;
}

static void sort_destroy(df_pnode *n) {
    sort_priv *sp = n->priv;
    if (!sp) return;
    df__sortspec_clear(&sp->spec);
    df_free(sp);
}

static df_errkind sort_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const sort_priv *sp = n->priv;
    DF_TRY(df_buf_printf(out, err, " keys=%d", sp->spec.nkeys));
    if (sp->fetch >= 0) DF_TRY(df_buf_printf(out, err, " fetch=%lld", (long long)sp->fetch));
    return DF_OK;
}

static const df_pnode_vt sort_vt = {"SortExec", sort_open, sort_destroy, sort_explain};

static df_errkind new_priv(const df_sort_key *keys, int32_t nkeys, int64_t fetch, sort_priv **out, df_error *err) {
    sort_priv *sp = df_calloc(1, sizeof *sp);
    if (!sp) return DF_OOM(err);
    df_errkind k = df__sortspec_init(&sp->spec, keys, nkeys, err);
    if (k) {
        df_free(sp);
        return k;
    }
    sp->fetch = fetch;
    *out = sp;
    return DF_OK;
}

df_errkind df__op_sort_new(df_pnode *input, const df_sort_key *keys, int32_t nkeys, int64_t fetch, df_pnode **out,
                          df_error *err) {
    *out = NULL;
    sort_priv *sp = NULL;
    df_pnode *n = NULL;
    df_errkind k = new_priv(keys, nkeys, fetch, &sp, err);
    if (!k) k = df__pnode_new(&sort_vt, input->schema, input->partitions, 1, &n, err);
    if (k) {
        if (sp) {
            df_pnode tmp = {.priv = sp};
            sort_destroy(&tmp);
        }
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    n->priv = sp;
    *out = n;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* SortPreservingMergeExec                                                   */

typedef struct cursor {
    df_batch *b;            /* current batch of the partition (NULL when done) */
    df_vec **keys;          /* its evaluated keys, nkeys entries of merge_op.keyv */
    int64_t row;            /* next row */
    bool done;              /* partition exhausted */
} cursor;

typedef struct merge_op {
    df_op base;
    df__xfer *x;            /* sorted input partitions */
    int32_t n;              /* partitions */
    cursor *cur;            /* per partition */
    df_vec **keyv;          /* n * nkeys key slots, sliced into the cursors */
    df_xstate **st;         /* key evaluation states */
    bool started;           /* cursors primed */
    int64_t emitted;        /* rows returned */
    df_batch **srcs;        /* batches referenced by the output being built */
    int32_t nsrcs, cap_srcs;
    int32_t *src_of, *row_of;   /* per output row */
} merge_op;

static void cursor_drop(merge_op *m, cursor *c) {
    const sort_priv *sp = m->base.node->priv;
    for (int32_t k = 0; c->keys && k < sp->spec.nkeys; k++) {
        df_vec_release(c->keys[k]);
        c->keys[k] = NULL;
    }
    df_batch_release(c->b);
    c->b = NULL;
}

/* Loads the next batch of partition p into its cursor. */
static df_errkind cursor_load(merge_op *m, int32_t p, df_error *err) {
    const sort_priv *sp = m->base.node->priv;
    cursor *c = &m->cur[p];
    cursor_drop(m, c);
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df__xfer_pop(m->x, p, &b, err));
        if (!b) {
            c->done = true;
            return DF_OK;
        }
        if (b->nrows == 0) {
            df_batch_release(b);
            continue;
        }
        df_errkind k = df__sortspec_eval(&sp->spec, m->st, b, c->keys, err);
        if (k) {
            df_batch_release(b);
            return k;
        }
        c->b = b;
        c->row = 0;
        return DF_OK;
    }
}

static df_errkind src_index(merge_op *m, df_batch *b, int32_t *out, df_error *err) {
    if (m->nsrcs && m->srcs[m->nsrcs - 1] == b) {
        *out = m->nsrcs - 1;
        return DF_OK;
    }
    for (int32_t i = 0; i < m->nsrcs; i++)
        if (m->srcs[i] == b) {
            *out = i;
            return DF_OK;
        }
    DF_TRY(DF_ARRAY_RESERVE(m->srcs, m->cap_srcs, m->nsrcs + 1, 8, err));
    m->srcs[m->nsrcs] = df_batch_retain(b);
    *out = m->nsrcs++;
    return DF_OK;
}

static void srcs_clear(merge_op *m) {
    for (int32_t i = 0; i < m->nsrcs; i++) df_batch_release(m->srcs[i]);
    m->nsrcs = 0;
}

static df_errkind merge_next(df_op *op, df_batch **out, df_error *err) {
    merge_op *m = (merge_op *)op;
    const sort_priv *sp = op->node->priv;
    *out = NULL;
    if (!m->started) {
        m->started = true;
        for (int32_t p = 0; p < m->n; p++) DF_TRY(cursor_load(m, p, err));
    }
    int64_t want = op->ctx->batch_size;
    if (sp->fetch >= 0) want = DF_MIN(want, sp->fetch - m->emitted);
    int64_t got = 0;
    srcs_clear(m);
    while (got < want) {
        int32_t best = -1;
        for (int32_t p = 0; p < m->n; p++) {
            cursor *c = &m->cur[p];
            if (c->done) continue;
            if (best < 0 || df__sortspec_cmp(&sp->spec, c->keys, c->row, m->cur[best].keys, m->cur[best].row) < 0)
                best = p;
        }
        if (best < 0) break;
        cursor *c = &m->cur[best];
        int32_t si = 0;
        DF_TRY(src_index(m, c->b, &si, err));
        m->src_of[got] = si;
        m->row_of[got] = (int32_t)c->row;
        got++;
        if (++c->row >= c->b->nrows) DF_TRY(cursor_load(m, best, err));
    }
    if (got == 0) return DF_OK;
    DF_TRY(df__exec_check_cancel(op->ctx, err));
    int32_t ncols = op->node->schema->nfields;
    df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
    df_vec **vs = df_calloc((size_t)(m->nsrcs ? m->nsrcs : 1), sizeof(df_vec *));
    df_errkind k = (cols && vs) ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < ncols && !k; c++) {
        for (int32_t s = 0; s < m->nsrcs; s++) vs[s] = m->srcs[s]->cols[c];
        k = df__vec_gather_multi(op->node->schema->fields[c].type, vs, m->src_of, m->row_of, got, &cols[c], err);
    }
    df_free(vs);
    if (!k) {
        k = df_batch_new(op->node->schema, cols, got, out, err);
    } else if (cols) {
        for (int32_t c = 0; c < ncols; c++) df_vec_release(cols[c]);
    }
    df_free(cols);
    srcs_clear(m);
    if (!k) m->emitted += got;
    return k;
}

static void merge_close(df_op *op) {
    merge_op *m = (merge_op *)op;
    const sort_priv *sp = op->node->priv;
    if (m->cur)
        for (int32_t p = 0; p < m->n; p++) cursor_drop(m, &m->cur[p]);
    df__xfer_free(m->x);
    srcs_clear(m);
    df_free(m->srcs);
    df_free(m->cur);
    df_free(m->keyv);
    df_free(m->src_of);
    df_free(m->row_of);
    states_free(&sp->spec, m->st);
    df_free(m);
}

static const df_op_vt merge_op_vt = {merge_next, merge_close};

static df_errkind merge_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    const sort_priv *sp = n->priv;
    merge_op *m = df_calloc(1, sizeof *m);
    if (!m) return DF_OOM(err);
    df__op_init(&m->base, &merge_op_vt, n, ctx, p);
    m->base.parent = parent;
    m->n = n->inputs[0]->partitions;
    m->cur = df_calloc((size_t)m->n, sizeof(cursor));
    m->keyv = df_calloc((size_t)m->n * (size_t)(sp->spec.nkeys ? sp->spec.nkeys : 1), sizeof(df_vec *));
    m->src_of = df_malloc((size_t)ctx->batch_size * sizeof(int32_t));
    m->row_of = df_malloc((size_t)ctx->batch_size * sizeof(int32_t));
    df_errkind k = (m->cur && m->keyv && m->src_of && m->row_of) ? DF_OK : DF_OOM(err);
    for (int32_t q = 0; !k && q < m->n; q++) m->cur[q].keys = m->keyv + (size_t)q * (size_t)sp->spec.nkeys;
    if (!k) k = states_new(&sp->spec, &m->st, err);
    if (!k) k = df__xfer_new(n->inputs[0], ctx, &m->base, true, &m->x, err);
    if (k) {
        merge_close(&m->base);
        return k;
    }
    *out = &m->base;
    return DF_OK;
}

static const df_pnode_vt merge_vt = {"SortPreservingMergeExec", merge_open, sort_destroy, sort_explain};

df_errkind df__op_merge_new(df_pnode *input, const df_sort_key *keys, int32_t nkeys, int64_t fetch, df_pnode **out,
                           df_error *err) {
    *out = NULL;
    sort_priv *sp = NULL;
    df_pnode *n = NULL;
    df_errkind k = new_priv(keys, nkeys, fetch, &sp, err);
    if (!k) k = df__pnode_new(&merge_vt, input->schema, 1, 1, &n, err);
    if (k) {
        if (sp) {
            df_pnode tmp = {.priv = sp};
            sort_destroy(&tmp);
        }
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    n->priv = sp;
    *out = n;
    return DF_OK;
}

bool df__is_merge(const df_pnode *n) { return n->vt == &merge_vt; }
