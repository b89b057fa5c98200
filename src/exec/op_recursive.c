/*
 * RecursiveQueryExec and WorkTableExec (WITH RECURSIVE).
 *
 * RecursiveQueryExec runs its static term (input 0) once, then its
 * recursive term (input 1) again and again; each run of the recursive
 * term reads, through its WorkTableExec leaf, the rows the previous run
 * (or the static term) produced, until a run produces no rows.  Every row
 * is streamed out as soon as it is produced, so a LIMIT above stops the
 * recursion.  With UNION (not ALL) rows already produced are dropped (a
 * group table over every column remembers them), so a recursion over a
 * finite set of values always ends.
 *
 * Bounds: at most DF_SQL_MAX_RECURSION runs of the recursive term and
 * DF_SQL_MAX_RECURSIVE_ROWS rows kept (the work table plus, for UNION, the
 * rows remembered); past either the query fails with
 * DF_ERR_SQL_RECURSION_LIMIT.  Kept batches are also reserved against the
 * query's memory limit.
 *
 * The work table belongs to the RecursiveQueryExec node and is written
 * only between runs, while no operator of the recursive term is open; the
 * node has one partition and its inputs are planned with one partition.
 */
#include "exec/exec_int.h"
#include "exec/hash_table.h"

/* Rows kept at once, and runs of the recursive term, before the query fails. */
#define DF_SQL_MAX_RECURSION 100000
#define DF_SQL_MAX_RECURSIVE_ROWS (16 * 1024 * 1024)

struct df__worktable {
    int32_t id;                 /* the logical id both nodes carry */
    df_batch **batches;         /* the previous run's rows (references) */
    int32_t n, cap;
    int64_t rows;
    int64_t bytes;              /* reserved against the memory limit */
    bool distinct;              /* UNION */
    struct df__worktable *next; /* planning: enclosing recursive queries */
};

static void wt_clear(df__worktable *w, df_exec_ctx *ctx) {
    for (int32_t i = 0; i < w->n; i++) df_batch_release(w->batches[i]);
    w->n = 0;
    w->rows = 0;
    if (ctx && w->bytes) df__exec_mem_release(ctx, w->bytes);
    w->bytes = 0;
}

static df_errkind wt_push(df__worktable *w, df_batch *b, df_exec_ctx *ctx, df_error *err) {
    if (w->n == w->cap) {
        int32_t nc = w->cap ? w->cap * 2 : 16;
        df_batch **nb = df_realloc(w->batches, (size_t)nc * sizeof *nb);
        if (!nb) return DF_OOM(err);
        w->batches = nb;
        w->cap = nc;
    }
    int64_t bytes = df__batch_bytes(b);
    DF_TRY(df__exec_mem_reserve(ctx, bytes, err));
    w->bytes += bytes;
    w->batches[w->n++] = df_batch_retain(b);
    w->rows += b->nrows;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* WorkTableExec                                                             */

typedef struct wt_op {
    df_op base;
    int32_t next;               /* next batch of the work table */
} wt_op;

static df_errkind wt_next(df_op *op, df_batch **out, df_error *err) {
    wt_op *w = (wt_op *)op;
    const df__worktable *t = op->node->priv;
    *out = NULL;
    DF_TRY(df__exec_check_cancel(op->ctx, err));
    if (w->next >= t->n) return DF_OK;
    return df__batch_rewrap(t->batches[w->next++], op->node->schema, out, err);
}

static void wt_close(df_op *op) { df_free(op); }

static const df_op_vt wt_op_vt = {wt_next, wt_close};

static df_errkind wt_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    wt_op *w = df_calloc(1, sizeof *w);
    if (!w) return DF_OOM(err);
    df__op_init(&w->base, &wt_op_vt, n, ctx, p);
    w->base.parent = parent;
    *out = &w->base;
    return DF_OK;
}

static const df_pnode_vt wt_vt = {"WorkTableExec", wt_open, NULL, NULL};

df_errkind df__op_worktable_new(df__worktable *wt, df_schema *schema, df_pnode **out, df_error *err) {
    DF_TRY(df__pnode_new(&wt_vt, schema, 1, 0, out, err));
    (*out)->priv = wt;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* RecursiveQueryExec                                                        */

typedef struct rec_op {
    df_op base;
    df_op *child;               /* the term running now */
    int32_t phase;              /* 0 static term, 1 recursive term, 2 done */
    int64_t runs;               /* runs of the recursive term so far */
    df__worktable next;         /* rows of the current run */
    df_group_table seen;        /* UNION: every row produced */
    bool seen_init;
    uint64_t *hashes;           /* scratch for one batch */
    int32_t *gids;
    int64_t scratch;
} rec_op;

static df_errkind limit_error(df_error *err, const char *what) {
    df_errkind k = df_error_set(err, DF_ERR_SQL_RECURSION_LIMIT, "a recursive CTE %s", what);
    df_error_set_origin(err, "sql");
    return k;
}

/* UNION: b's rows not produced before (nor earlier in b); *out NULL when none. */
static df_errkind dedup(rec_op *r, df_batch *b, df_batch **out, df_error *err) {
    *out = NULL;
    int64_t n = b->nrows;
    if (n > r->scratch) {
        df_free(r->hashes);
        df_free(r->gids);
        r->hashes = df_malloc((size_t)n * sizeof *r->hashes);
        r->gids = df_malloc((size_t)n * sizeof *r->gids);
        r->scratch = r->hashes && r->gids ? n : 0;
        if (!r->scratch) return DF_OOM(err);
    }
    int64_t before = r->seen.ngroups;
    df__gt_hash(&r->seen, b->cols, n, r->hashes);
    DF_TRY(df__gt_find_or_insert(&r->seen, b->cols, r->hashes, n, NULL, r->gids, err));
    /* New groups get consecutive ids in row order: a row is new when it made the next one. */
    int64_t expect = before, keep = 0;
    for (int64_t i = 0; i < n; i++)
        if (r->gids[i] == expect) {
            r->gids[keep++] = (int32_t)i;
            expect++;
        }
    if (r->seen.ngroups > DF_SQL_MAX_RECURSIVE_ROWS)
        return limit_error(err, "produced more distinct rows than allowed (16777216)");
    if (keep == 0) return DF_OK;
    if (keep == n) {
        *out = df_batch_retain(b);
        return DF_OK;
    }
    return df__batch_take(b, r->gids, keep, NULL, out, err);
}

static df_errkind rec_next(df_op *op, df_batch **out, df_error *err) {
    rec_op *r = (rec_op *)op;
    df__worktable *wt = op->node->priv;
    *out = NULL;
    for (;;) {
        if (r->phase == 2) return DF_OK;
        if (!r->child) {
            /* The previous run is over: its rows become the work table. */
            wt_clear(wt, op->ctx);
            df__worktable t = *wt;
            wt->batches = r->next.batches, wt->n = r->next.n, wt->cap = r->next.cap;
            wt->rows = r->next.rows, wt->bytes = r->next.bytes;
            r->next.batches = t.batches, r->next.n = 0, r->next.cap = t.cap;
            r->next.rows = 0, r->next.bytes = 0;
            if (wt->n == 0) {
                r->phase = 2;
                return DF_OK;
            }
            if (++r->runs > DF_SQL_MAX_RECURSION)
                return limit_error(err, "did not end within 100000 iterations");
            DF_TRY(df__exec_check_cancel(op->ctx, err));
            r->phase = 1;
            DF_TRY(df_pnode_open(op->node->inputs[1], op->ctx, 0, op, &r->child, err));
        }
        df_batch *b = NULL;
        DF_TRY(df_op_next(r->child, &b, err));
        if (!b) {
            df_op_close(r->child);
            r->child = NULL;
            continue;
        }
        df_batch *keep = b;
        if (wt->distinct) {
            df_errkind k = dedup(r, b, &keep, err);
            df_batch_release(b);
            if (k) return k;
            if (!keep) continue;
        }
        df_batch *o = NULL;
        df_errkind k = df__batch_rewrap(keep, op->node->schema, &o, err);
        df_batch_release(keep);
        if (k) return k;
        if (r->next.rows + wt->rows + o->nrows > DF_SQL_MAX_RECURSIVE_ROWS) {
            df_batch_release(o);
            return limit_error(err, "kept more rows than allowed (16777216)");
        }
        k = wt_push(&r->next, o, op->ctx, err);
        if (k) {
            df_batch_release(o);
            return k;
        }
        *out = o;
        return DF_OK;
    }
}

static void rec_close(df_op *op) {
    rec_op *r = (rec_op *)op;
    df_op_close(r->child);
    wt_clear(&r->next, op->ctx);
    df_free(r->next.batches);
    wt_clear(op->node->priv, op->ctx);
    if (r->seen_init) df__gt_free(&r->seen);
    df_free(r->hashes);
    df_free(r->gids);
    df_free(r);
}

static const df_op_vt rec_op_vt = {rec_next, rec_close};

static df_errkind rec_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    df__worktable *wt = n->priv;
    rec_op *r = df_calloc(1, sizeof *r);
    if (!r) return DF_OOM(err);
    df__op_init(&r->base, &rec_op_vt, n, ctx, p);
    r->base.parent = parent;
    wt_clear(wt, ctx);
    df_errkind k = DF_OK;
    if (wt->distinct) {
        const df_schema *s = n->schema;
        df_type **types = df_calloc((size_t)(s->nfields ? s->nfields : 1), sizeof *types);
        if (!types) k = DF_OOM(err);
        for (int32_t i = 0; !k && i < s->nfields; i++) types[i] = s->fields[i].type;
        if (!k) k = df__gt_init(&r->seen, s->nfields, types, ctx, err);
        if (!k) r->seen_init = true;
        df_free(types);
    }
    if (!k) k = df_pnode_open(n->inputs[0], ctx, 0, &r->base, &r->child, err);
    if (k) {
        rec_close(&r->base);
        return k;
    }
    *out = &r->base;
    return DF_OK;
}

static void rec_destroy(df_pnode *n) {
    df__worktable *wt = n->priv;
    if (!wt) return;
    wt_clear(wt, NULL);
    df_free(wt->batches);
    df_free(wt);
}

static df_errkind rec_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const df__worktable *wt = n->priv;
    return df_buf_printf(out, err, " is_distinct=%s", wt->distinct ? "true" : "false");
}

static const df_pnode_vt rec_vt = {"RecursiveQueryExec", rec_open, rec_destroy, rec_explain};

df_errkind df__worktable_new(int32_t id, bool distinct, df__worktable **out, df_error *err) {
    *out = df_calloc(1, sizeof **out);
    if (!*out) return DF_OOM(err);
    (*out)->id = id;
    (*out)->distinct = distinct;
    return DF_OK;
}

int32_t df__worktable_id(const df__worktable *wt) { return wt->id; }
df__worktable *df__worktable_outer(const df__worktable *wt) { return wt->next; }
void df__worktable_set_outer(df__worktable *wt, df__worktable *outer) { wt->next = outer; }

void df__worktable_free(df__worktable *wt) {
    if (!wt) return;
    wt_clear(wt, NULL);
    df_free(wt->batches);
    df_free(wt);
}

df_errkind df__op_recursive_new(df__worktable *wt, df_pnode *static_term, df_pnode *recursive_term,
                                df_schema *schema, df_pnode **out, df_error *err) {
    *out = NULL;
    df_pnode *n = NULL;
    df_errkind k = df__pnode_new(&rec_vt, schema, 1, 2, &n, err);
    if (k) {
        df__pnode_free(static_term);
        df__pnode_free(recursive_term);
        df__worktable_free(wt);
        return k;
    }
    n->inputs[0] = static_term;
    n->inputs[1] = recursive_term;
    n->priv = wt;
    *out = n;
    return DF_OK;
}
