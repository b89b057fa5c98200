/*
 * HashJoinExec: equi-joins (inner, left/right outer, full outer, semi,
 * anti) with an optional residual condition, and nested-loop joins when
 * there are no equality keys (cross joins, theta joins).
 *
 * Build.  The build input (one partition) is read once, by whichever probe
 * partition opens first; the others wait without holding a CPU token.  Its
 * batches are concatenated, the key expressions evaluated once, and every
 * row with non-NULL keys (NULL-safe keys excepted) is inserted into a group
 * table (hash_table.c) whose group ids chain rows with equal keys
 * (first[group], next[row]).
 *
 * Probe.  Each probe partition streams its batches: keys -> hashes ->
 * group lookup, then walks the chains emitting (probe row, build row)
 * pairs, at most batch_size at a time (the walk resumes where it stopped).
 * Pairs are gathered into a candidate batch (columns in the logical
 * left ++ right order whichever side was built) and the residual condition
 * filters them.  Per probe batch the operator remembers which probe rows
 * matched: outer joins then emit the unmatched ones with NULLs, semi and
 * anti joins emit matched / unmatched probe rows once.  FULL joins also
 * track matched build rows and emit the rest at the end (the planner gives
 * them a single probe partition).
 */
#include "exec/hash_table.h"

typedef enum probe_kind { PK_INNER, PK_OUTER, PK_SEMI, PK_ANTI, PK_FULL, PK_MARK } probe_kind;

typedef struct join_shared {
    pthread_mutex_t mu;     /* guards state */
    pthread_cond_t cv;      /* build finished */
    int state;              /* 0 not started, 1 building, 2 ready, 3 failed */
    df_errkind failed;      /* build error */
    df_error error;
    df_batch *build;        /* all build rows */
    df_group_table gt;      /* build keys -> groups */
    int32_t *first;         /* per group: first build row (-1 none) */
    int32_t *next;          /* per build row: next row with the same key (-1 end) */
    bool unique;            /* every chain has one row (keys unique on the build side) */
    bool null_key;          /* some build row has a NULL (non-NULL-safe) key */
    _Atomic uint8_t *matched;   /* FULL: per build row matched flag */
    int64_t reserved;       /* bytes accounted */
    df_exec_ctx *ctx;       /* accounting */
} join_shared;

typedef struct join_priv {
    probe_kind kind;        /* how probe rows are treated */
    bool build_left;        /* the build side is the logical left input */
    int32_t nkeys;          /* equality keys */
    df_xprog **bkeys;       /* build key programs */
    df_xprog **pkeys;       /* probe key programs */
    bool *null_equal;       /* per key: NULLs match */
    df_xprog *filter;       /* residual over left ++ right, or NULL */
    df_schema *cand_schema; /* left ++ right columns (candidate pairs) */
    int32_t nleft, nright;  /* column counts of the logical sides */
    bool semi_output;       /* output = probe columns only */
    bool null_aware;        /* anti join from NOT IN (see df_lnode join.null_aware) */
    bool single_row;        /* the build side may hold at most one row (scalar subquery) */
    join_shared sh;         /* build state (one per execution) */
    df_join_type type;      /* logical join type (EXPLAIN) */
} join_priv;

typedef struct join_op {
    df_op base;
    df_op *probe;           /* probe input */
    df_xstate **kst;        /* probe key states */
    df_vec **keys;          /* scratch: one probe batch's evaluated keys, nkeys entries */
    df_xstate *fst;         /* filter state */
    df_batch *pb;           /* current probe batch */
    int32_t *pgid;          /* its rows' groups (-1 = no match) */
    uint8_t *pmatched;      /* its rows matched (passing the filter) */
    uint8_t *pnull;         /* its rows have a NULL key (null-aware anti joins), or NULL */
    int64_t prow;           /* next probe row to walk */
    int32_t cur;            /* next build row in the current chain (-1 none) */
    bool unmatched_done;    /* outer/anti rows of pb emitted */
    int32_t *pi, *bi;       /* pair scratch (batch_size) */
    int64_t cap;            /* scratch capacity */
    bool probe_done;        /* probe input exhausted */
    bool full_done;         /* FULL: build leftovers emitted */
} join_op;

/* ------------------------------------------------------------------------ */
/* Build                                                                     */

static df_errkind eval_keys(df_xprog **progs, df_xstate **st, int32_t n, const df_batch *b, df_vec **keys,
                            df_error *err) {
    for (int32_t k = 0; k < n; k++) {
        df_errkind e = df__xprog_eval_vec(progs[k], st[k], b, &keys[k], err);
        if (e) {
            for (int32_t j = 0; j < k; j++) df_vec_release(keys[j]);
            return e;
        }
    }
    df_errkind e = df__gt_canon_keys(keys, n, err);
    if (e)
        for (int32_t j = 0; j < n; j++) df_vec_release(keys[j]);
    return e;
}

/* Rows whose non-NULL-safe keys contain a NULL never match: skip[i] = 1. */
static void null_skip(const join_priv *jp, df_vec *const *keys, int64_t n, uint8_t *skip) {
    memset(skip, 0, (size_t)n);
    for (int32_t k = 0; k < jp->nkeys; k++) {
        if (jp->null_equal[k]) continue;
        const df_vec *v = keys[k];
        if (v->type->id == DF_TYPE_NULL) {
            memset(skip, 1, (size_t)n);
            return;
        }
        if (!v->validity) continue;
        for (int64_t i = 0; i < n; i++)
            if (!df_bit_get(v->validity->data, v->offset + i)) skip[i] = 1;
    }
}

static df_errkind do_build(join_priv *jp, df_pnode *node, df_exec_ctx *ctx, df_op *owner, df_error *err) {
    join_shared *sh = &jp->sh;
    df_pnode *in = node->inputs[0];
    df_op *op = NULL;
    df_batch **bs = NULL;
    int32_t nb = 0, cap = 0;
    df_errkind k = df_pnode_open(in, ctx, 0, owner, &op, err);
    while (!k) {
        df_batch *b = NULL;
        k = df_op_next(op, &b, err);
        if (k || !b) break;
        int64_t bytes = df__batch_bytes(b);
        k = df__exec_mem_reserve(ctx, bytes, err);
        if (k) {
            df_batch_release(b);
            break;
        }
        sh->reserved += bytes;
        k = DF_ARRAY_RESERVE(bs, cap, nb + 1, 16, err);
        if (k) {
            df_batch_release(b);
            break;
        }
        bs[nb++] = b;
    }
    df_op_close(op);
    if (!k) k = df__batch_concat(bs, nb, in->schema, &sh->build, err);
    for (int32_t i = 0; i < nb; i++) df_batch_release(bs[i]);
    df_free(bs);
    if (k) return k;
    int64_t n = sh->build->nrows;
    if (n > INT32_MAX - 1) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "build side has more than 2^31 rows");
    if (jp->single_row && jp->nkeys == 0 && !jp->filter && n > 1)
        return df_error_set(err, DF_ERR_EXECUTION, "a scalar subquery returned more than one row");
    sh->next = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!sh->next) return DF_OOM(err);
    if (jp->kind == PK_FULL) {
        sh->matched = df_calloc((size_t)(n ? n : 1), 1);
        if (!sh->matched) return DF_OOM(err);
    }
    if (jp->nkeys == 0) {
        /* Every build row is a candidate for every probe row: one chain of all rows. */
        sh->first = df_malloc(sizeof(int32_t));
        if (!sh->first) return DF_OOM(err);
        sh->first[0] = n ? 0 : -1;
        for (int64_t i = 0; i < n; i++) sh->next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        return DF_OK;
    }
    df_xstate **st = df_calloc((size_t)jp->nkeys, sizeof(df_xstate *));
    df_vec **keys = df_calloc((size_t)jp->nkeys, sizeof(df_vec *));
    uint64_t *h = df_malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    int32_t *gid = df_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    uint8_t *skip = df_malloc((size_t)(n ? n : 1));
    k = (st && keys && h && gid && skip) ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < jp->nkeys && !k; c++) k = df__xstate_new(jp->bkeys[c], &st[c], err);
    bool have_keys = false;
    if (!k) k = eval_keys(jp->bkeys, st, jp->nkeys, sh->build, keys, err);
    if (!k) {
        have_keys = true;
        null_skip(jp, keys, n, skip);
        for (int64_t i = 0; i < n && !sh->null_key; i++) sh->null_key = skip[i] != 0;
        df__gt_hash(&sh->gt, keys, n, h);
        k = df__gt_find_or_insert(&sh->gt, keys, h, n, skip, gid, err);
    }
    if (!k) {
        int64_t ng = sh->gt.ngroups;
        sh->first = df_malloc((size_t)(ng ? ng : 1) * sizeof(int32_t));
        if (!sh->first) k = DF_OOM(err);
        for (int64_t g = 0; !k && g < ng; g++) sh->first[g] = -1;
        /* Insert backwards so chains list rows in input order. */
        bool unique = true;
        for (int64_t i = n - 1; !k && i >= 0; i--) {
            sh->next[i] = -1;
            if (gid[i] < 0) continue;
            sh->next[i] = sh->first[gid[i]];
            unique &= sh->next[i] < 0;
            sh->first[gid[i]] = (int32_t)i;
        }
        sh->unique = unique;
    }
    if (have_keys)
        for (int32_t c = 0; c < jp->nkeys; c++) df_vec_release(keys[c]);
    if (st)
        for (int32_t c = 0; c < jp->nkeys; c++) df__xstate_free(st[c]);
    df_free(st);
    df_free(keys);
    df_free(h);
    df_free(gid);
    df_free(skip);
    return k;
}

/* Builds once; other partitions wait (without their CPU token). */
static df_errkind ensure_built(join_op *j, df_error *err) {
    join_priv *jp = j->base.node->priv;
    join_shared *sh = &jp->sh;
    pthread_mutex_lock(&sh->mu);
    if (sh->state == 0) {
        sh->state = 1;
        pthread_mutex_unlock(&sh->mu);
        df_error e;
        memset(&e, 0, sizeof e);
        df_error_clear(&e);
        df_errkind k = do_build(jp, j->base.node, j->base.ctx, &j->base, &e);
        pthread_mutex_lock(&sh->mu);
        sh->state = k ? 3 : 2;
        sh->failed = k;
        df_error_move(&sh->error, &e);
        pthread_cond_broadcast(&sh->cv);
    }
    while (sh->state == 1) {
        df__exec_token_release(j->base.ctx);
        pthread_cond_wait(&sh->cv, &sh->mu);
        pthread_mutex_unlock(&sh->mu);
        df__exec_token_acquire(j->base.ctx);
        pthread_mutex_lock(&sh->mu);
    }
    df_errkind k = sh->state == 3 ? sh->failed : DF_OK;
    if (k && err) {
        df_error_clear(err);
        *err = sh->error;
        err->context = sh->error.context ? df_strdup(sh->error.context) : NULL;
    }
    pthread_mutex_unlock(&sh->mu);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Probe                                                                     */

static df_errkind ensure_cap(join_op *j, int64_t n, df_error *err) {
    if (n <= j->cap) return DF_OK;
    int32_t *a = df_realloc(j->pi, (size_t)n * sizeof(int32_t));
    if (!a) return DF_OOM(err);
    j->pi = a;
    int32_t *b = df_realloc(j->bi, (size_t)n * sizeof(int32_t));
    if (!b) return DF_OOM(err);
    j->bi = b;
    j->cap = n;
    return DF_OK;
}

/* Loads the next probe batch and looks its keys up. */
static df_errkind load_probe(join_op *j, df_error *err) {
    join_priv *jp = j->base.node->priv;
    df_batch_release(j->pb);
    j->pb = NULL;
    for (;;) {
        df_batch *b = NULL;
        DF_TRY(df_op_next(j->probe, &b, err));
        if (!b) {
            j->probe_done = true;
            return DF_OK;
        }
        int64_t n = b->nrows;
        int32_t *g = df_realloc(j->pgid, (size_t)(n ? n : 1) * sizeof(int32_t));
        uint8_t *m = g ? df_realloc(j->pmatched, (size_t)(n ? n : 1)) : NULL;
        if (g) j->pgid = g;
        if (m) j->pmatched = m;
        if (!g || !m) {
            df_batch_release(b);
            return DF_OOM(err);
        }
        memset(j->pmatched, 0, (size_t)n);
        if (jp->nkeys == 0) {
            memset(j->pgid, 0, (size_t)n * sizeof(int32_t));
        } else {
            df_vec **keys = j->keys;
            df_errkind k = eval_keys(jp->pkeys, j->kst, jp->nkeys, b, keys, err);
            if (k) {
                df_batch_release(b);
                return k;
            }
            bool need_h = df__gt_find_needs_hashes(&jp->sh.gt);
            uint64_t *h = need_h ? df_malloc((size_t)(n ? n : 1) * sizeof(uint64_t)) : NULL;
            uint8_t *skip = df_malloc((size_t)(n ? n : 1));
            if ((need_h && !h) || !skip) {
                k = DF_OOM(err);
            } else {
                null_skip(jp, keys, n, skip);
                if (need_h) df__gt_hash(&jp->sh.gt, keys, n, h);
                df__gt_find(&jp->sh.gt, keys, h, n, skip, j->pgid);
                if (jp->null_aware) {
                    df_free(j->pnull);
                    j->pnull = skip;
                    skip = NULL;
                }
            }
            for (int32_t c = 0; c < jp->nkeys; c++) df_vec_release(keys[c]);
            df_free(h);
            df_free(skip);
            if (k) {
                df_batch_release(b);
                return k;
            }
        }
        j->pb = b;
        j->prow = 0;
        j->cur = -1;
        j->unmatched_done = false;
        return DF_OK;
    }
}

/*
 * Next up-to-cap candidate pairs from the current probe batch, resuming
 * inside a chain when the last call stopped there.  The cursor lives in
 * locals (the pair arrays could otherwise alias it), and unique build keys
 * take a branch-free loop: at most one pair per probe row.
 */
static int64_t walk(join_op *j, int64_t cap) {
    const join_priv *jp = j->base.node->priv;
    const int32_t *first = jp->sh.first, *next = jp->sh.next, *gid = j->pgid;
    int32_t *pi = j->pi, *bi = j->bi;
    int64_t prow = j->prow, nrows = j->pb->nrows, np = 0;
    int32_t cur = j->cur;
    if (jp->sh.unique && cur < 0) {
        int64_t end = DF_MIN(nrows, prow + cap);
        for (; prow < end; prow++) {
            int32_t g = gid[prow];
            pi[np] = (int32_t)prow;
            bi[np] = g >= 0 ? first[g] : -1;
            np += g >= 0;
        }
        j->prow = prow;
        return np;
    }
    while (np < cap && prow < nrows) {
        if (cur < 0) {
            int32_t g = gid[prow];
            cur = g >= 0 ? first[g] : -1;
            if (cur < 0) {
                prow++;
                continue;
            }
        }
        pi[np] = (int32_t)prow;
        bi[np] = cur;
        np++;
        cur = next[cur];
        if (cur < 0) prow++;
    }
    j->prow = prow;
    j->cur = cur;
    return np;
}

/* Builds a batch in logical left ++ right order from probe rows pidx and build rows bidx (-1 = NULL). */
static df_errkind assemble(join_op *j, const int32_t *pidx, const int32_t *bidx, int64_t n, df_schema *schema,
                           df_batch **out, df_error *err) {
    join_priv *jp = j->base.node->priv;
    const df_batch *build = jp->sh.build, *probe = j->pb;
    int32_t ncols = schema->nfields;
    df_vec **cols = df_calloc((size_t)(ncols ? ncols : 1), sizeof(df_vec *));
    if (!cols) return DF_OOM(err);
    df_errkind k = DF_OK;
    const df_batch *left = jp->build_left ? build : probe, *right = jp->build_left ? probe : build;
    const int32_t *lidx = jp->build_left ? bidx : pidx, *ridx = jp->build_left ? pidx : bidx;
    int32_t c = 0;
    for (int32_t i = 0; i < left->ncols && c < ncols && !k; i++) k = df__vec_gather(left->cols[i], lidx, n, &cols[c++], err);
    for (int32_t i = 0; i < right->ncols && c < ncols && !k; i++)
        k = df__vec_gather(right->cols[i], ridx, n, &cols[c++], err);
    if (!k) {
        k = df_batch_new(schema, cols, n, out, err);
    } else {
        for (int32_t i = 0; i < ncols; i++) df_vec_release(cols[i]);
    }
    df_free(cols);
    return k;
}

/* Applies the residual filter to pairs [0, np); compacts pi/bi to the passing ones. */
static df_errkind filter_pairs(join_op *j, int64_t *np, df_error *err) {
    join_priv *jp = j->base.node->priv;
    if (!jp->filter || *np == 0) return DF_OK;
    df_batch *cand = NULL;
    DF_TRY(assemble(j, j->pi, j->bi, *np, jp->cand_schema, &cand, err));
    df_vec *m = NULL;
    df_errkind k = df__xprog_eval_vec(jp->filter, j->fst, cand, &m, err);
    df_batch_release(cand);
    if (k) return k;
    int64_t w = 0;
    for (int64_t i = 0; i < *np; i++) {
        bool pass = m->type->id == DF_TYPE_BOOL && df_vec_is_valid(m, i) && df_vec_bool(m, i);
        j->pi[w] = j->pi[i];
        j->bi[w] = j->bi[i];
        w += pass;
    }
    df_vec_release(m);
    *np = w;
    return DF_OK;
}

/* Emits probe rows with matched == want (semi/anti/outer leftovers). */
static df_errkind emit_by_match(join_op *j, bool want, bool with_nulls, df_batch **out, df_error *err) {
    join_priv *jp = j->base.node->priv;
    int64_t n = j->pb->nrows, m = 0;
    DF_TRY(ensure_cap(j, n, err));
    /* NOT IN: a NULL in the subquery makes every comparison unknown; a NULL probe key is
     * unknown unless the subquery is empty. */
    bool na = jp->null_aware && !want;
    if (na && jp->sh.null_key) return DF_OK;
    const uint8_t *pnull = na && jp->sh.build->nrows > 0 ? j->pnull : NULL;
    for (int64_t i = 0; i < n; i++) {
        j->pi[m] = (int32_t)i;
        j->bi[m] = -1;
        m += (j->pmatched[i] != 0) == want && !(pnull && pnull[i]);
    }
    if (m == 0) return DF_OK;
    if (!with_nulls) return df__batch_take(j->pb, j->pi, m, j->base.node->schema, out, err);
    (void)jp;
    return assemble(j, j->pi, j->bi, m, j->base.node->schema, out, err);
}

/*
 * MARK: every probe row with a Boolean column: true when it matched; for a
 * null-aware mark (IN) NULL instead of false when the answer is unknown (a
 * NULL probe key against a non-empty build side, or a NULL build key).
 */
static df_errkind emit_marked(join_op *j, df_batch **out, df_error *err) {
    join_priv *jp = j->base.node->priv;
    const df_batch *pb = j->pb;
    int64_t n = pb->nrows;
    if (n == 0) return DF_OK;
    df_vec *m = NULL;
    DF_TRY(df_vec_new(df_type_bool(), n, 0, &m, err));
    df_errkind k = DF_OK;
    memset(m->values->data, 0, (size_t)df_bitmap_bytes(n));
    bool na = jp->null_aware;
    bool unknown_all = na && jp->sh.null_key;
    const uint8_t *pnull = na && jp->sh.build->nrows > 0 ? j->pnull : NULL;
    for (int64_t i = 0; i < n && !k; i++) {
        if (j->pmatched[i]) {
            df_bit_set(m->values->data, i);
        } else if (unknown_all || (pnull && pnull[i])) {
            if (!m->validity) k = df_vec_ensure_validity(m, n, err);
            if (!k) df_bit_clear(m->validity->data, i);
        }
    }
    df_vec **cols = k ? NULL : df_calloc((size_t)pb->ncols + 1, sizeof(df_vec *));
    if (!k && !cols) k = DF_OOM(err);
    if (k) {
        df_vec_release(m);
        return k;
    }
    df_vec_set_length(m, n);
    for (int32_t c = 0; c < pb->ncols; c++) cols[c] = df_vec_retain(pb->cols[c]);
    cols[pb->ncols] = m;
    k = df_batch_new(j->base.node->schema, cols, n, out, err);
    if (k)
        for (int32_t c = 0; c <= pb->ncols; c++) df_vec_release(cols[c]);
    df_free(cols);
    return k;
}

/* FULL: build rows never matched, with NULL probe columns. */
static df_errkind emit_build_leftovers(join_op *j, df_batch **out, df_error *err) {
    join_priv *jp = j->base.node->priv;
    int64_t n = jp->sh.build->nrows, m = 0;
    DF_TRY(ensure_cap(j, n, err));
    for (int64_t i = 0; i < n; i++) {
        j->bi[m] = (int32_t)i;
        j->pi[m] = -1;
        m += !atomic_load_explicit(&jp->sh.matched[i], memory_order_relaxed);
    }
    if (m == 0) return DF_OK;
    /* assemble() gathers probe columns from j->pb: use an empty-typed stand-in via the probe schema. */
    df_batch *empty = NULL;
    df_pnode *pnode = j->base.node->inputs[1];
    int32_t pc = pnode->schema->nfields;
    df_vec **cols = df_calloc((size_t)(pc ? pc : 1), sizeof(df_vec *));
    df_errkind k = cols ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < pc && !k; c++) k = df_vec_new(pnode->schema->fields[c].type, 0, 0, &cols[c], err);
    if (!k) {
        k = df_batch_new(pnode->schema, cols, 0, &empty, err);
    } else if (cols) {
        for (int32_t c = 0; c < pc; c++) df_vec_release(cols[c]);
    }
    df_free(cols);
    if (k) return k;
    df_batch *save = j->pb;
    j->pb = empty;
    k = assemble(j, j->pi, j->bi, m, j->base.node->schema, out, err);
    j->pb = save;
    df_batch_release(empty);
    return k;
}

static df_errkind join_next(df_op *op, df_batch **out, df_error *err) {
    join_op *j = (join_op *)op;
    join_priv *jp = op->node->priv;
    *out = NULL;
    DF_TRY(ensure_built(j, err));
    DF_TRY(ensure_cap(j, op->ctx->batch_size, err));
    for (;;) {
        DF_TRY(df__exec_check_cancel(op->ctx, err));
        if (!j->pb) {
            if (!j->probe_done) DF_TRY(load_probe(j, err));
            if (j->probe_done) {
                if (jp->kind == PK_FULL && !j->full_done) {
                    j->full_done = true;
                    DF_TRY(emit_build_leftovers(j, out, err));
                    if (*out) return DF_OK;
                }
                return DF_OK;
            }
        }
        if (j->prow < j->pb->nrows) {
            int64_t np = walk(j, op->ctx->batch_size);
            DF_TRY(filter_pairs(j, &np, err));
            uint8_t *pm = j->pmatched;
            const int32_t *pi = j->pi;
            if (jp->single_row) {
                /* Scalar subquery: a second match for one probe row is an error. */
                for (int64_t i = 0; i < np; i++)
                    if (pm[pi[i]]++)
                        return df_error_set(err, DF_ERR_EXECUTION, "a scalar subquery returned more than one row");
            }
            for (int64_t i = 0; i < np; i++) pm[pi[i]] = 1;
            if (jp->kind == PK_FULL)
                for (int64_t i = 0; i < np; i++)
                    atomic_store_explicit(&jp->sh.matched[j->bi[i]], 1, memory_order_relaxed);
            if (np == 0 || jp->kind == PK_SEMI || jp->kind == PK_ANTI || jp->kind == PK_MARK) continue;
            return assemble(j, j->pi, j->bi, np, op->node->schema, out, err);
        }
        /* The probe batch is fully walked. */
        if (!j->unmatched_done) {
            j->unmatched_done = true;
            if (jp->kind == PK_SEMI) DF_TRY(emit_by_match(j, true, false, out, err));
            else if (jp->kind == PK_ANTI) DF_TRY(emit_by_match(j, false, false, out, err));
            else if (jp->kind == PK_MARK) DF_TRY(emit_marked(j, out, err));
            else if (jp->kind == PK_OUTER || jp->kind == PK_FULL) DF_TRY(emit_by_match(j, false, true, out, err));
            if (*out) return DF_OK;
        }
        df_batch_release(j->pb);
        j->pb = NULL;
    }
}

static void join_close(df_op *op) {
    join_op *j = (join_op *)op;
    df_free(j->pnull);
    join_priv *jp = op->node->priv;
    df_op_close(j->probe);
    if (j->kst)
        for (int32_t c = 0; c < jp->nkeys; c++) df__xstate_free(j->kst[c]);
    df_free(j->kst);
    df_free(j->keys);
    df__xstate_free(j->fst);
    df_batch_release(j->pb);
    df_free(j->pgid);
    df_free(j->pmatched);
    df_free(j->pi);
    df_free(j->bi);
    df_free(j);
}

static const df_op_vt join_op_vt = {join_next, join_close};

static df_errkind join_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out, df_error *err) {
    join_priv *jp = n->priv;
    join_op *j = df_calloc(1, sizeof *j);
    if (!j) return DF_OOM(err);
    df__op_init(&j->base, &join_op_vt, n, ctx, p);
    j->base.parent = parent;
    j->kst = df_calloc((size_t)(jp->nkeys ? jp->nkeys : 1), sizeof(df_xstate *));
    j->keys = df_calloc((size_t)(jp->nkeys ? jp->nkeys : 1), sizeof(df_vec *));
    df_errkind k = (j->kst && j->keys) ? DF_OK : DF_OOM(err);
    for (int32_t c = 0; c < jp->nkeys && !k; c++) k = df__xstate_new(jp->pkeys[c], &j->kst[c], err);
    if (!k && jp->filter) k = df__xstate_new(jp->filter, &j->fst, err);
    if (!k) {
        pthread_mutex_lock(&jp->sh.mu);
        jp->sh.ctx = ctx;
        pthread_mutex_unlock(&jp->sh.mu);
        k = df_pnode_open(n->inputs[1], ctx, p, &j->base, &j->probe, err);
    }
    if (k) {
        join_close(&j->base);
        return k;
    }
    *out = &j->base;
    return DF_OK;
}

static void join_destroy(df_pnode *n) {
    join_priv *jp = n->priv;
    if (!jp) return;
    for (int32_t c = 0; c < jp->nkeys; c++) {
        if (jp->bkeys) df__xprog_free(jp->bkeys[c]);
        if (jp->pkeys) df__xprog_free(jp->pkeys[c]);
    }
    df_free(jp->bkeys);
    df_free(jp->pkeys);
    df_free(jp->null_equal);
    df__xprog_free(jp->filter);
    df_schema_release(jp->cand_schema);
    join_shared *sh = &jp->sh;
    df_batch_release(sh->build);
    df__gt_free(&sh->gt);
    df_free(sh->first);
    df_free(sh->next);
    df_free((void *)sh->matched);
    if (sh->ctx && sh->reserved) df__exec_mem_release(sh->ctx, sh->reserved);
    df_error_clear(&sh->error);
    pthread_cond_destroy(&sh->cv);
    pthread_mutex_destroy(&sh->mu);
    df_free(jp);
}

static df_errkind join_explain(const df_pnode *n, df_buf *out, df_error *err) {
    const join_priv *jp = n->priv;
    static const char *const names[] = {"Inner",    "Left",      "Right",     "Full",    "LeftSemi",
                                        "LeftAnti", "RightSemi", "RightAnti", "LeftMark"};
    const char *name = (unsigned)jp->type < DF_ARRAY_LEN(names) ? names[jp->type] : "?";
    return df_buf_printf(out, err, " type=%s keys=%d build=%s%s%s", name, jp->nkeys, jp->build_left ? "left" : "right",
                         jp->filter ? " filter" : "", jp->null_aware ? " null_aware" : "");
}

static const df_pnode_vt hash_join_vt = {"HashJoinExec", join_open, join_destroy, join_explain};
static const df_pnode_vt nested_loop_vt = {"NestedLoopJoinExec", join_open, join_destroy, join_explain};

/* ------------------------------------------------------------------------ */
/* Construction                                                              */

static df_errkind concat_schemas(const df_schema *a, const df_schema *b, df_schema **out, df_error *err) {
    df_schema *s;
    DF_TRY(df_schema_alloc(a->nfields + b->nfields, &s, err));
    for (int32_t i = 0; i < a->nfields + b->nfields; i++) {
        const df_field *f = i < a->nfields ? &a->fields[i] : &b->fields[i - a->nfields];
        df_errkind k = df_field_init(&s->fields[i], f->name, f->type, true, err);
        if (k) {
            df_schema_release(s);
            return k;
        }
    }
    *out = s;
    return DF_OK;
}

df_errkind df__op_hash_join_new(df_pnode *build, df_pnode *probe, const df_lnode *join, df_schema *schema,
                               df_pnode **out, df_error *err) {
    *out = NULL;
    df_join_type t = join->u.join.type;
    join_priv *jp = df_calloc(1, sizeof *jp);
    df_errkind k = jp ? DF_OK : DF_OOM(err);
    int32_t nk = join->u.join.nkeys;
    if (!k) {
        pthread_mutex_init(&jp->sh.mu, NULL);
        pthread_cond_init(&jp->sh.cv, NULL);
        df_error_clear(&jp->sh.error);
        jp->type = t;
        jp->build_left = t == DF_JOIN_RIGHT || t == DF_JOIN_RIGHT_SEMI || t == DF_JOIN_RIGHT_ANTI;
        jp->kind = (t == DF_JOIN_INNER) ? PK_INNER
                   : (t == DF_JOIN_LEFT || t == DF_JOIN_RIGHT) ? PK_OUTER
                   : (t == DF_JOIN_FULL) ? PK_FULL
                   : (t == DF_JOIN_LEFT_SEMI || t == DF_JOIN_RIGHT_SEMI) ? PK_SEMI
                   : (t == DF_JOIN_LEFT_MARK)                            ? PK_MARK
                                                                        : PK_ANTI;
        jp->semi_output = jp->kind == PK_SEMI || jp->kind == PK_ANTI;
        jp->null_aware = join->u.join.null_aware && (jp->kind == PK_ANTI || jp->kind == PK_MARK) && !jp->build_left;
        jp->single_row = join->u.join.single_row && !jp->build_left;
        jp->nkeys = nk;
        jp->bkeys = df_calloc((size_t)(nk ? nk : 1), sizeof(df_xprog *));
        jp->pkeys = df_calloc((size_t)(nk ? nk : 1), sizeof(df_xprog *));
        jp->null_equal = df_calloc((size_t)(nk ? nk : 1), sizeof(bool));
        if (!jp->bkeys || !jp->pkeys || !jp->null_equal) k = DF_OOM(err);
    }
    /* Join keys are unbounded in number: their types go in a per-plan array. */
    df_type **ktypes = k ? NULL : df_calloc((size_t)(nk ? nk : 1), sizeof(df_type *));
    if (!k && !ktypes) k = DF_OOM(err);
    for (int32_t c = 0; c < nk && !k; c++) {
        const df_expr *lk = join->u.join.lkeys[c], *rk = join->u.join.rkeys[c];
        k = df__xprog_compile(jp->build_left ? lk : rk, &jp->bkeys[c], err);
        if (!k) k = df__xprog_compile(jp->build_left ? rk : lk, &jp->pkeys[c], err);
        jp->null_equal[c] = join->u.join.null_equal[c];
        ktypes[c] = lk->type;
        if (!k && !df_type_equals(lk->type, rk->type))
            k = df_error_set(err, DF_ERR_INTERNAL, "join key %d sides have different types", c);
    }
    if (!k) k = df__gt_init(&jp->sh.gt, nk, ktypes, NULL, err);
    df_free(ktypes);
    df_schema *lsch = jp && jp->build_left ? build->schema : probe->schema;
    df_schema *rsch = jp && jp->build_left ? probe->schema : build->schema;
    if (!k && join->u.join.filter) {
        k = df__xprog_compile(join->u.join.filter, &jp->filter, err);
        if (!k) k = concat_schemas(lsch, rsch, &jp->cand_schema, err);
    }
    df_pnode *n = NULL;
    if (!k) k = df__pnode_new(nk ? &hash_join_vt : &nested_loop_vt, schema, probe->partitions, 2, &n, err);
    if (k) {
        if (jp) {
            df_pnode tmp = {.priv = jp};
            join_destroy(&tmp);
        }
        df__pnode_free(build);
        df__pnode_free(probe);
        return k;
    }
    jp->nleft = lsch->nfields;
    jp->nright = rsch->nfields;
    n->inputs[0] = build;
    n->inputs[1] = probe;
    n->priv = jp;
    *out = n;
    return DF_OK;
}
