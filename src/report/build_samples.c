/*
 * Model builder, second half: CPU samples, native function trees and the
 * worker-lane timeline.
 *
 * Step A: a sample of a profiled process is eligible when an
 * operation of that process contains its timestamp.  Its leaf context is
 * the innermost context slice of its thread (the span current on the
 * thread, which the diag writer mirrors onto the thread's track) whose
 * operation contains the sample: found by a binary search on the thread
 * track and a walk up the enclosing slices.  One leaf -> direct; no leaf
 * and one operation -> unattributed; otherwise ambiguous.
 *
 * Step B: a direct sample belongs to the exact semantic span its thread was
 * in when one exists: the nearest context of its chain whose semantic twin
 * (same operation, name and begin time: the writer emits both from one
 * record) is a node.  Otherwise the reference rule applies: among the
 * nodes of the operation containing the sample whose non-null identity
 * fields all equal the leaf's, the deepest wins, and candidates on a
 * parallel branch make the sample ambiguous.  That rule is evaluated with
 * one sweep over samples and nodes sorted by time.
 *
 * Stacks: every direct sample is classified unwind-error /
 * missing / unresolved / resolved; resolved and unresolved ones walk their
 * callstack through one trace-wide call tree keyed by (parent, frame), the
 * leaf node of each distinct stack memoised, and count into a
 * (semantic node, leaf) map.  Each distinct pair is then expanded up its
 * call path into per-semantic function records (self on the leaf,
 * inclusive on every ancestor), numbered by a depth-first walk of the call
 * tree with name-sorted children so ids are deterministic.
 */
#include "report/build_int.h"

#include <stdlib.h>

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "aggregate_validation",
                           "out of memory while attributing samples");
}

/* ------------------------------------------------------------------------ */
/* u64 -> u32 maps with UINT32_MAX for "absent" and "out of memory".         */

/* Value of key, or UINT32_MAX. */
static uint32_t map_get(const df_u64map *m, uint64_t key) {
    uint64_t v;
    return df_u64map_get(m, key, &v) ? (uint32_t)v : UINT32_MAX;
}

/* Inserts key -> val if absent; returns the stored value, UINT32_MAX on OOM. */
static uint32_t map_put(df_u64map *m, uint64_t key, uint32_t val) {
    uint64_t *slot;
    bool added;
    if (df_u64map_upsert(m, key, &slot, &added, NULL) != DF_OK) return UINT32_MAX;
    if (added) *slot = val;
    return (uint32_t)*slot;
}

/* ------------------------------------------------------------------------ */
/* Sample state.                                                             */

typedef struct opset {
    uint32_t pid;        /* process */
    int64_t *starts;     /* sorted starts of its operations */
    int64_t *ends;       /* sorted analysis ends */
    size_t n;            /* operations */
} opset;

/* Call-tree node: (parent, frame). */
typedef struct cnode {
    int32_t parent;      /* parent node, -1 for roots */
    uint32_t frame;      /* frame index (0-based) */
} cnode;

typedef struct sstate {
    df__build *b;
    opset *pids;             /* one per profiled process, sorted by pid */
    size_t npids;
    df_u64map threads;       /* (pid << 32 | tid) -> thread track index */
    int32_t *ctx_op;         /* per slice: operation of a context slice, -1 */
    uint32_t *ctx_ident;     /* per slice: slice whose arguments give its identity */
    int32_t *ctx_twin;       /* per slice: nearest semantic twin in its chain, -1 */
    cnode *cnodes;           /* call tree */
    size_t ncnodes, cap_cnodes;
    df_u64map cmap;          /* ((parent + 1) << 32 | frame) -> node */
    uint32_t *stack_leaf;    /* per stack id: leaf node + 1, 0 = not computed */
    df_u64map agg;           /* (node << 32 | call node) -> index in agg_count */
    int64_t *agg_count;      /* samples per (semantic node, leaf) */
    uint64_t *agg_key;       /* the pairs */
    size_t nagg, cap_agg;
    uint64_t *cpus;          /* bitmap of CPUs seen (ids < 65536) */
    int64_t eligible, direct, ambiguous, unattributed, exact;
    int64_t classes[DF_REPORT_STACK_CLASSES];
} sstate;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_opset(const void *a, const void *b) {
    uint32_t x = ((const opset *)a)->pid, y = ((const opset *)b)->pid;
    return x < y ? -1 : x > y;
}

static df_errkind build_opsets(sstate *st, df_error *err) {
    df__build *b = st->b;
    st->pids = df_calloc(b->nops, sizeof *st->pids);
    if (!st->pids) return oom(err);
    for (size_t i = 0; i < b->nops; i++) {
        if (!b->ops[i].pid) continue;
        size_t k = 0;
        while (k < st->npids && st->pids[k].pid != b->ops[i].pid) k++;
        if (k == st->npids) st->pids[st->npids++].pid = b->ops[i].pid;
        st->pids[k].n++;
    }
    for (size_t k = 0; k < st->npids; k++) {
        opset *o = &st->pids[k];
        o->starts = df_malloc(o->n * sizeof *o->starts);
        o->ends = df_malloc(o->n * sizeof *o->ends);
        if (!o->starts || !o->ends) return oom(err);
        o->n = 0;
        for (size_t i = 0; i < b->nops; i++)
            if (b->ops[i].pid == o->pid) o->starts[o->n] = b->ops[i].start, o->ends[o->n++] = b->ops[i].end;
        qsort(o->starts, o->n, sizeof *o->starts, cmp_i64);
        qsort(o->ends, o->n, sizeof *o->ends, cmp_i64);
    }
    qsort(st->pids, st->npids, sizeof *st->pids, cmp_opset);
    return DF_OK;
}

static const opset *find_pid(const sstate *st, uint32_t pid) {
    size_t lo = 0, hi = st->npids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->pids[mid].pid < pid) lo = mid + 1;
        else hi = mid;
    }
    return lo < st->npids && st->pids[lo].pid == pid ? &st->pids[lo] : NULL;
}

/* Number of values <= x in sorted v[0..n). */
static size_t count_le(const int64_t *v, size_t n, int64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Operations of the process containing ts: [start, end). */
static size_t ops_containing(const opset *o, int64_t ts) {
    return count_le(o->starts, o->n, ts) - count_le(o->ends, o->n, ts);
}

/* ------------------------------------------------------------------------ */
/* Contexts.                                                                 */

/* Key of a semantic twin: (operation, name, begin). */
static uint64_t twin_key(uint32_t op, uint32_t name, int64_t start) {
    return df_hash_combine(df_hash_combine(op, name), (uint64_t)start);
}

/* Builds the twin map (collisions of the hashed key are resolved by comparing the slices). */
static df_errkind build_twins(sstate *st, df_u64map *twins, df_error *err) {
    df__build *b = st->b;
    for (size_t i = 0; i < b->nnodes; i++) {
        const df__bslice *s = &b->slices[b->nodes[i].slice];
        if (s->instant) continue;
        uint64_t key = twin_key(b->nodes[i].op, s->name, s->start);
        uint32_t v = map_put(twins, key, (uint32_t)i);
        if (v == UINT32_MAX) return oom(err);
        if (v != (uint32_t)i && v != UINT32_MAX - 1) {
            /* Two nodes with the same key: neither is an exact twin (replacing a value never allocates). */
            (void)df_u64map_put(twins, key, UINT32_MAX - 1, NULL);
        }
    }
    return DF_OK;
}

/* The semantic twin of context slice c, or -1. */
static int32_t twin_of(const sstate *st, const df_u64map *twins, uint32_t c, int32_t op) {
    const df__build *b = st->b;
    const df__bslice *s = &b->slices[c];
    uint32_t v = map_get(twins, twin_key((uint32_t)op, s->name, s->start));
    if (v == UINT32_MAX || v == UINT32_MAX - 1) return -1;
    const df__bslice *t = &b->slices[b->nodes[v].slice];
    if (t->name != s->name || t->start != s->start || (int32_t)b->nodes[v].op != op) return -1;
    return (int32_t)v;
}

/*
 * Resolves every context slice: its operation (own operation_id, else the
 * identity registered for its profile_context_id in that process, else its
 * capture scope), the slice giving its identity, and its nearest twin.
 */
static df_errkind prepare_contexts(sstate *st, df_error *err) {
    df__build *b = st->b;
    size_t n = b->nslices ? b->nslices : 1;
    st->ctx_op = df_malloc(n * sizeof *st->ctx_op);
    st->ctx_ident = df_malloc(n * sizeof *st->ctx_ident);
    st->ctx_twin = df_malloc(n * sizeof *st->ctx_twin);
    df_u64map registry = {0}, twins = {0};
    if (!st->ctx_op || !st->ctx_ident || !st->ctx_twin) return oom(err);
    df_errkind k = build_twins(st, &twins, err);
    for (size_t i = 0; k == DF_OK && i < b->nslices; i++) {
        const df__bslice *s = &b->slices[i];
        const df__btrack *t = &b->tracks[s->track];
        st->ctx_op[i] = -1, st->ctx_twin[i] = -1, st->ctx_ident[i] = (uint32_t)i;
        if (t->role != DF__BT_THREAD || s->category != DF__PT_CAT_CONTEXT || s->instant) continue;
        const df__pt_args *a = &s->args;
        bool has_ctx = df__build_has_num(a, DF__PT_N_CONTEXT);
        uint64_t rkey = df_hash_combine(t->pid, has_ctx ? (uint64_t)a->num[DF__PT_N_CONTEXT] : 0);
        if (df__build_has_num(a, DF__PT_N_OPERATION)) {
            st->ctx_op[i] = df__build_find_op(b, a->num[DF__PT_N_OPERATION]);
            if (has_ctx && df__build_arg_str(b, a, DF__PT_S_CONTEXT_NAME) && map_put(&registry, rkey, (uint32_t)i) == UINT32_MAX)
                k = oom(err);
        } else if (has_ctx) {
            uint32_t r = map_get(&registry, rkey);
            if (r != UINT32_MAX) {
                st->ctx_ident[i] = r;
                st->ctx_op[i] = st->ctx_op[r];
            }
        } else if (df__build_has_num(a, DF__PT_N_SCOPE)) {
            for (size_t o = 0; o < b->nops; o++)
                if (b->ops[o].scope == a->num[DF__PT_N_SCOPE] && b->ops[o].pid == t->pid) st->ctx_op[i] = (int32_t)o;
        }
        if (st->ctx_op[i] < 0) continue;
        st->ctx_twin[i] = twin_of(st, &twins, (uint32_t)i, st->ctx_op[i]);
        if (st->ctx_twin[i] < 0 && s->parent >= 0 && st->ctx_op[s->parent] == st->ctx_op[i])
            st->ctx_twin[i] = st->ctx_twin[s->parent];
    }
    df_u64map_free(&registry);
    df_u64map_free(&twins);
    return k;
}

/* The leaf context of a sample on thread track t, or -1. */
static int32_t leaf_context(const sstate *st, const df__btrack *t, int64_t ts) {
    const df__build *b = st->b;
    size_t lo = 0, hi = t->nslices;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->slices[t->slices[mid]].start <= ts) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    for (int32_t c = (int32_t)t->slices[lo - 1]; c >= 0; c = b->slices[c].parent) {
        const df__bslice *s = &b->slices[c];
        if (st->ctx_op[c] < 0 || !(s->start <= ts && ts < s->end)) continue;
        const df__bop *op = &b->ops[st->ctx_op[c]];
        if (op->start <= ts && ts < op->end) return c;
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Step B by identity (the reference rule) for samples without an exact twin. */

typedef struct pending {
    int64_t ts;        /* sample time */
    uint32_t sample;   /* sample index */
    uint32_t leaf;     /* leaf context slice */
} pending;

static int cmp_pending(const void *a, const void *b) {
    const pending *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->sample < y->sample ? -1 : x->sample > y->sample;
}

static int cmp_node_by_start(const void *pa, const void *pb, void *ctx) {
    const df__build *b = ctx;
    const df__bslice *x = &b->slices[b->nodes[*(const uint32_t *)pa].slice];
    const df__bslice *y = &b->slices[b->nodes[*(const uint32_t *)pb].slice];
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/* True if node fields are wildcards or equal to the sample's (leaf context) identity. */
static bool identity_matches(const df__build *b, const df__bslice *node, const df__pt_args *leaf) {
    static const int nums[] = {DF__PT_N_QUERY, DF__PT_N_LANE, DF__PT_N_NODE, DF__PT_N_PARENT_NODE,
                               DF__PT_N_PARTITION, DF__PT_N_STREAM, DF__PT_N_OWNER};
    for (size_t i = 0; i < DF_ARRAY_LEN(nums); i++) {
        int f = nums[i];
        if (!df__build_has_num(&node->args, f)) continue;
        if (!df__build_has_num(leaf, f) || leaf->num[f] != node->args.num[f]) return false;
    }
    const char *na = df__build_arg_str(b, &node->args, DF__PT_S_ACTIVITY);
    if (!na) return true;
    const char *la = df__build_arg_str(b, leaf, DF__PT_S_ACTIVITY);
    return la && strcmp(na, la) == 0;
}

static bool is_ancestor(const df__build *b, int32_t anc, int32_t n) {
    uint32_t da = b->nodes[anc].depth;
    while (n >= 0 && b->nodes[n].depth > da) n = b->nodes[n].parent;
    return n == anc;
}

/* Resolves owners of the pending samples (owner[i] = node, or -2 = ambiguous). */
static df_errkind resolve_by_identity(sstate *st, pending *pend, size_t npend, int32_t *owner, df_error *err) {
    df__build *b = st->b;
    if (!npend) return DF_OK;
    uint32_t *order = df_malloc(b->nnodes * sizeof *order), *active = df_malloc(b->nnodes * sizeof *active);
    if (!order || !active) {
        df_free(order);
        df_free(active);
        return oom(err);
    }
    for (size_t i = 0; i < b->nnodes; i++) order[i] = (uint32_t)i;
    qsort_r(order, b->nnodes, sizeof *order, cmp_node_by_start, b);
    qsort(pend, npend, sizeof *pend, cmp_pending);
    size_t next = 0, nact = 0;
    for (size_t i = 0; i < npend; i++) {
        int64_t ts = pend[i].ts;
        while (next < b->nnodes && b->slices[b->nodes[order[next]].slice].start <= ts) active[nact++] = order[next++];
        const df__pt_args *leaf = &b->slices[st->ctx_ident[pend[i].leaf]].args;
        uint32_t op = (uint32_t)st->ctx_op[pend[i].leaf];
        int32_t best = -1;
        size_t keep = 0;
        /* Pass 1: drop ended nodes, find the deepest candidate. */
        for (size_t k = 0; k < nact; k++) {
            const df__bslice *s = &b->slices[b->nodes[active[k]].slice];
            if (s->end <= ts) continue; /* ended: leaves the sweep */
            active[keep++] = active[k];
            if (b->nodes[active[k]].op != op || s->instant) continue;
            if (!identity_matches(b, s, leaf)) continue;
            const df__bnode *c = &b->nodes[active[k]];
            if (best < 0 || c->depth > b->nodes[best].depth ||
                (c->depth == b->nodes[best].depth && c->id < b->nodes[best].id))
                best = (int32_t)active[k];
        }
        nact = keep;
        if (best < 0) {
            owner[pend[i].sample] = -3; /* no candidate: unattributed */
            continue;
        }
        /* Pass 2: every other candidate must be an ancestor of the best. */
        bool conflict = false;
        for (size_t k = 0; k < nact && !conflict; k++) {
            const df__bslice *s = &b->slices[b->nodes[active[k]].slice];
            if ((int32_t)active[k] == best || b->nodes[active[k]].op != op || s->instant) continue;
            if (!(s->start <= ts && ts < s->end) || !identity_matches(b, s, leaf)) continue;
            if (!is_ancestor(b, (int32_t)active[k], best)) conflict = true;
        }
        owner[pend[i].sample] = conflict ? -2 : best;
    }
    df_free(order);
    df_free(active);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Step A: classification.                                                   */

static df_errkind index_threads(sstate *st, df_error *err) {
    df__build *b = st->b;
    for (size_t i = 0; i < b->ntracks; i++) {
        const df__btrack *t = &b->tracks[i];
        if (t->role != DF__BT_THREAD) continue;
        if (map_put(&st->threads, ((uint64_t)t->pid << 32) | t->tid, (uint32_t)i) == UINT32_MAX) return oom(err);
    }
    return DF_OK;
}

/*
 * Classifies every sample; owner[i] = node for direct samples, -1 for
 * samples that are not eligible, -2 ambiguous, -3 unattributed.
 */
static df_errkind classify(sstate *st, int32_t *owner, int64_t *no_callsite, df_error *err) {
    df__build *b = st->b;
    const df__pt_trace *tr = &b->tr;
    pending *pend = NULL;
    size_t npend = 0, cap = 0;
    for (size_t i = 0; i < tr->nsamples; i++) {
        const df__pt_sample *sm = &tr->samples[i];
        owner[i] = -1;
        const opset *o = find_pid(st, sm->pid);
        if (!o) continue;
        if (!sm->stack) (*no_callsite)++;
        if (sm->cpu < 65536) st->cpus[sm->cpu >> 6] |= 1ull << (sm->cpu & 63);
        size_t nops = ops_containing(o, sm->ts);
        if (!nops) continue;
        st->eligible++;
        uint32_t tt = map_get(&st->threads, ((uint64_t)sm->pid << 32) | sm->tid);
        int32_t leaf = tt == UINT32_MAX ? -1 : leaf_context(st, &b->tracks[tt], sm->ts);
        if (leaf < 0) {
            owner[i] = nops == 1 ? -3 : -2;
            continue;
        }
        int32_t twin = st->ctx_twin[leaf];
        if (twin >= 0) {
            const df__bslice *ts = &b->slices[b->nodes[twin].slice];
            if (ts->start <= sm->ts && sm->ts < ts->end) {
                owner[i] = twin;
                st->exact++;
                continue;
            }
        }
        if (DF_ARRAY_RESERVE(pend, cap, npend + 1, 1024, NULL)) {
            df_free(pend);
            return oom(err);
        }
        pend[npend++] = (pending){sm->ts, (uint32_t)i, (uint32_t)leaf};
    }
    df_errkind k = resolve_by_identity(st, pend, npend, owner, err);
    df_free(pend);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Call tree and aggregation.                                                */

/* The call-tree leaf of stack s (1-based), creating nodes as needed; -1 on OOM. */
static int32_t stack_leaf(sstate *st, uint32_t s) {
    if (st->stack_leaf[s]) return (int32_t)st->stack_leaf[s] - 1;
    size_t n;
    const uint32_t *frames = df__pt_stack(&st->b->tr, s, &n);
    int32_t parent = -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = ((uint64_t)(uint32_t)(parent + 1) << 32) | frames[i];
        uint32_t v = map_get(&st->cmap, key);
        if (v == UINT32_MAX) {
            if (st->ncnodes >= INT32_MAX - 1) return -1;
            if (DF_ARRAY_RESERVE(st->cnodes, st->cap_cnodes, st->ncnodes + 1, 1024, NULL)) return -1;
            v = (uint32_t)st->ncnodes;
            st->cnodes[st->ncnodes++] = (cnode){parent, frames[i]};
            if (map_put(&st->cmap, key, v) == UINT32_MAX) return -1;
        }
        parent = (int32_t)v;
    }
    st->stack_leaf[s] = (uint32_t)parent + 1;
    return parent;
}

static bool agg_add(sstate *st, uint32_t node, uint32_t leaf) {
    uint64_t key = ((uint64_t)node << 32) | leaf;
    uint32_t v = map_get(&st->agg, key);
    if (v == UINT32_MAX) {
        if (st->nagg == st->cap_agg) {
            size_t c = st->cap_agg ? st->cap_agg * 2 : 1024;
            int64_t *cnt = df_realloc(st->agg_count, c * sizeof *cnt);
            if (!cnt) return false;
            st->agg_count = cnt;
            uint64_t *keys = df_realloc(st->agg_key, c * sizeof *keys);
            if (!keys) return false;
            st->agg_key = keys;
            st->cap_agg = c;
        }
        v = (uint32_t)st->nagg;
        st->agg_count[v] = 0;
        st->agg_key[st->nagg++] = key;
        if (map_put(&st->agg, key, v) == UINT32_MAX) return false;
    }
    st->agg_count[v]++;
    return true;
}

/* Stack class of a direct sample and its aggregation. */
static df_errkind account_direct(sstate *st, const df__pt_sample *sm, int32_t node, df_error *err) {
    df__build *b = st->b;
    int cls;
    if (sm->unwind_error) {
        cls = DF_REPORT_STACK_UNWIND_ERROR;
    } else if (!sm->stack) {
        cls = DF_REPORT_STACK_MISSING;
    } else {
        size_t n;
        const uint32_t *frames = df__pt_stack(&b->tr, sm->stack, &n);
        const df__pt_frame *leaf = &b->tr.frames[frames[n - 1]];
        const char *name = df__report_str(&b->tr.strings, leaf->name);
        cls = !name || !*name || !strcmp(name, DF_REPORT_UNRESOLVED_FRAME) ? DF_REPORT_STACK_UNRESOLVED : DF_REPORT_STACK_RESOLVED;
    }
    df__bnode *bn = &b->nodes[node];
    bn->direct++;
    bn->stack[cls]++;
    st->classes[cls]++;
    if (cls == DF_REPORT_STACK_UNWIND_ERROR || cls == DF_REPORT_STACK_MISSING) return DF_OK;
    int32_t leaf = stack_leaf(st, sm->stack);
    if (leaf < 0 || !agg_add(st, (uint32_t)node, (uint32_t)leaf)) return oom(err);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Function records.                                                         */

typedef struct fctx {
    sstate *st;
    uint32_t *model_str;   /* trace string id -> model string id + 1 (0 = not yet) */
} fctx;

/* Model string id of trace string `id` (0 -> 0). */
static uint32_t to_model(fctx *f, uint32_t id, bool *failed) {
    if (!id) return 0;
    if (f->model_str[id]) return f->model_str[id] - 1;
    const df_report_strings *ts = &f->st->b->tr.strings;
    uint32_t m = df__report_intern(&f->st->b->p->strings, df__report_str(ts, id), df__report_strlen(ts, id));
    if (!m) *failed = true;
    f->model_str[id] = m + 1;
    return m;
}

static int cmp_children(const void *pa, const void *pb, void *ctx) {
    const sstate *st = ctx;
    const df__pt_trace *tr = &st->b->tr;
    const df__pt_frame *x = &tr->frames[st->cnodes[*(const uint32_t *)pa].frame];
    const df__pt_frame *y = &tr->frames[st->cnodes[*(const uint32_t *)pb].frame];
    const uint32_t kx[3] = {x->name, x->module, x->source}, ky[3] = {y->name, y->module, y->source};
    for (int i = 0; i < 3; i++) {
        const char *a = df__report_str(&tr->strings, kx[i]), *b = df__report_str(&tr->strings, ky[i]);
        int c = strcmp(a ? a : "", b ? b : "");
        if (c) return c;
    }
    return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/* function_id of every call-tree node: depth-first preorder with name-sorted children. */
static df_errkind number_call_tree(sstate *st, int64_t *fid, df_error *err) {
    size_t n = st->ncnodes;
    uint32_t *start = df_calloc(n + 2, sizeof *start), *list = df_malloc((n ? n : 1) * sizeof *list);
    uint32_t *stack = df_malloc((n ? n : 1) * sizeof *stack);
    if (!start || !list || !stack) {
        df_free(start);
        df_free(list);
        df_free(stack);
        return oom(err);
    }
    /* Children CSR with roots under the virtual parent n (slot n + 1). */
    for (size_t i = 0; i < n; i++) start[(st->cnodes[i].parent < 0 ? n : (size_t)st->cnodes[i].parent) + 1]++;
    for (size_t i = 1; i < n + 2; i++) start[i] += start[i - 1];
    uint32_t *fill = df_malloc((n + 1) * sizeof *fill);
    if (!fill) {
        df_free(start);
        df_free(list);
        df_free(stack);
        return oom(err);
    }
    memcpy(fill, start, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) list[fill[st->cnodes[i].parent < 0 ? n : (size_t)st->cnodes[i].parent]++] = (uint32_t)i;
    for (size_t p = 0; p <= n; p++) qsort_r(list + start[p], start[p + 1] - start[p], sizeof *list, cmp_children, st);
    size_t sp = 0;
    int64_t next = 1;
    for (uint32_t k = start[n + 1]; k-- > start[n];) stack[sp++] = list[k];
    while (sp) {
        uint32_t v = stack[--sp];
        fid[v] = next++;
        for (uint32_t k = start[v + 1]; k-- > start[v];) stack[sp++] = list[k];
    }
    df_free(fill);
    df_free(start);
    df_free(list);
    df_free(stack);
    return DF_OK;
}

static int cmp_fn(const void *pa, const void *pb) {
    const df_report_function *a = pa, *b = pb;
    if (a->semantic_id != b->semantic_id) return a->semantic_id < b->semantic_id ? -1 : 1;
    return a->function_id < b->function_id ? -1 : a->function_id > b->function_id;
}

/* Gets or creates the record of (node, call node); returns its index or UINT32_MAX. */
static uint32_t fn_record(sstate *st, df_u64map *recs, size_t *cap, uint32_t node, uint32_t cn) {
    df_report_profile *p = st->b->p;
    uint64_t key = ((uint64_t)node << 32) | cn;
    uint32_t v = map_get(recs, key);
    if (v != UINT32_MAX) return v;
    if (p->nfns >= DF_REPORT_MAX_FUNCTIONS + 1) return UINT32_MAX - 1;
    if (DF_ARRAY_RESERVE(p->fns, *cap, p->nfns + 1, 1024, NULL)) return UINT32_MAX;
    v = (uint32_t)p->nfns;
    p->fns[p->nfns++] = (df_report_function){.semantic_id = (int64_t)node, .function_id = (int64_t)cn};
    return map_put(recs, key, v) == UINT32_MAX ? UINT32_MAX : v;
}

/* Expands every (node, leaf) count up its call path into records (ids filled later). */
static df_errkind expand_records(sstate *st, df_error *err) {
    df_u64map recs = {0};
    size_t cap = 0;
    df_report_profile *p = st->b->p;
    for (size_t i = 0; i < st->nagg; i++) {
        uint32_t node = (uint32_t)(st->agg_key[i] >> 32);
        int32_t cn = (int32_t)(uint32_t)st->agg_key[i];
        bool leaf = true;
        for (; cn >= 0; cn = st->cnodes[cn].parent, leaf = false) {
            uint32_t r = fn_record(st, &recs, &cap, node, (uint32_t)cn);
            if (r == UINT32_MAX - 1) {
                df_u64map_free(&recs);
                return df__report_fail(err, DF_ERR_RECORD_LIMIT, "aggregate_validation",
                                       "profile has more than %u function records", DF_REPORT_MAX_FUNCTIONS);
            }
            if (r == UINT32_MAX) {
                df_u64map_free(&recs);
                return oom(err);
            }
            p->fns[r].inclusive_samples += st->agg_count[i];
            if (leaf) p->fns[r].self_samples += st->agg_count[i];
        }
    }
    df_u64map_free(&recs);
    return DF_OK;
}

/* Turns the records' (node, call node) placeholders into model ids and strings. */
static df_errkind finish_records(sstate *st, df_error *err) {
    df__build *b = st->b;
    df_report_profile *p = b->p;
    int64_t *fid = df_malloc((st->ncnodes ? st->ncnodes : 1) * sizeof *fid);
    fctx f = {st, df_calloc(b->tr.strings.n ? b->tr.strings.n : 1, sizeof(uint32_t))};
    if (!fid || !f.model_str) {
        df_free(fid);
        df_free(f.model_str);
        return oom(err);
    }
    df_errkind k = number_call_tree(st, fid, err);
    uint32_t unresolved = df__report_intern(&p->strings, DF_REPORT_UNRESOLVED_FRAME, strlen(DF_REPORT_UNRESOLVED_FRAME));
    bool failed = !unresolved;
    for (size_t i = 0; k == DF_OK && i < p->nfns; i++) {
        df_report_function *r = &p->fns[i];
        uint32_t cn = (uint32_t)r->function_id;
        const df__pt_frame *fr = &b->tr.frames[st->cnodes[cn].frame];
        r->semantic_id = b->nodes[r->semantic_id].id;
        r->function_id = fid[cn];
        if (st->cnodes[cn].parent >= 0) {
            r->parent_function_id = fid[st->cnodes[cn].parent];
            r->flags |= DF_REPORT_FN_HAS_PARENT;
        }
        const char *name = df__report_str(&b->tr.strings, fr->name);
        r->name = name && *name ? to_model(&f, fr->name, &failed) : unresolved;
        r->module_name = to_model(&f, fr->module, &failed);
        r->source_file = to_model(&f, fr->source, &failed);
        if (fr->line >= 0 && r->source_file) r->line_number = fr->line, r->flags |= DF_REPORT_FN_HAS_LINE;
    }
    if (k == DF_OK && failed) k = oom(err);
    if (k == DF_OK && p->nfns) qsort(p->fns, p->nfns, sizeof *p->fns, cmp_fn);
    df_free(fid);
    df_free(f.model_str);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Entry point.                                                              */

static void sstate_free(sstate *st) {
    for (size_t i = 0; i < st->npids; i++) {
        df_free(st->pids[i].starts);
        df_free(st->pids[i].ends);
    }
    df_free(st->pids);
    df_u64map_free(&st->threads);
    df_free(st->ctx_op);
    df_free(st->ctx_ident);
    df_free(st->ctx_twin);
    df_free(st->cnodes);
    df_u64map_free(&st->cmap);
    df_free(st->stack_leaf);
    df_u64map_free(&st->agg);
    df_free(st->agg_count);
    df_free(st->agg_key);
    df_free(st->cpus);
}

static void fill_coverage(sstate *st, int64_t no_callsite) {
    df_report_metadata *m = &st->b->p->meta;
    m->eligible_sample_count = st->eligible;
    m->direct_sample_count = st->direct;
    m->ambiguous_sample_count = st->ambiguous;
    m->unattributed_sample_count = st->unattributed;
    m->resolved_function_sample_count = st->classes[DF_REPORT_STACK_RESOLVED];
    m->unresolved_function_sample_count = st->classes[DF_REPORT_STACK_UNRESOLVED];
    m->unwind_error_sample_count = st->classes[DF_REPORT_STACK_UNWIND_ERROR];
    m->missing_callstack_sample_count = st->classes[DF_REPORT_STACK_MISSING];
    m->perf_sample_without_callsite_count = no_callsite;
    m->exact_context_sample_count = st->exact;
    m->sample_frequency_hz = st->b->tr.sample_frequency_hz;
    uint32_t cpus = 0;
    for (size_t i = 0; i < 1024; i++) cpus += (uint32_t)__builtin_popcountll(st->cpus[i]);
    m->sampled_cpu_count = cpus;
}

df_errkind df__build_samples(df__build *b, df_error *err) {
    sstate st;
    memset(&st, 0, sizeof st);
    st.b = b;
    int32_t *owner = df_malloc((b->tr.nsamples ? b->tr.nsamples : 1) * sizeof *owner);
    st.stack_leaf = df_calloc(b->tr.nstacks + 1, sizeof *st.stack_leaf);
    st.cpus = df_calloc(1024, sizeof *st.cpus);
    int64_t no_callsite = 0;
    df_errkind k = owner && st.stack_leaf && st.cpus ? DF_OK : oom(err);
    if (k == DF_OK) k = build_opsets(&st, err);
    if (k == DF_OK) k = index_threads(&st, err);
    if (k == DF_OK) k = prepare_contexts(&st, err);
    if (k == DF_OK) k = classify(&st, owner, &no_callsite, err);
    for (size_t i = 0; k == DF_OK && i < b->tr.nsamples; i++) {
        if (owner[i] == -1) continue;
        if (owner[i] == -2) st.ambiguous++;
        else if (owner[i] == -3) st.unattributed++;
        else {
            st.direct++;
            k = account_direct(&st, &b->tr.samples[i], owner[i], err);
        }
    }
    if (k == DF_OK) k = expand_records(&st, err);
    if (k == DF_OK) k = finish_records(&st, err);
    if (k == DF_OK) {
        fill_coverage(&st, no_callsite);
        if (st.eligible > 0 && b->p->meta.sample_frequency_hz == 0)
            k = df__report_fail(err, DF_ERR_MALFORMED_RESULT, "query",
                                "trace has CPU samples but no linux.perf sampling frequency in its trace config");
    }
    df_free(owner);
    sstate_free(&st);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Worker lanes for the timeline.                                            */

static int cmp_lane(const void *pa, const void *pb) {
    const df_report_lane *a = pa, *b = pb;
    if (a->operation_id != b->operation_id) return a->operation_id < b->operation_id ? -1 : 1;
    if (a->query_execution_id != b->query_execution_id) return a->query_execution_id < b->query_execution_id ? -1 : 1;
    return a->worker_lane_id < b->worker_lane_id ? -1 : a->worker_lane_id > b->worker_lane_id;
}

/* Merges the smallest gaps until at most `cap` intervals remain; returns the new count. */
static size_t coalesce(df_report_interval *iv, size_t n, size_t cap, int64_t *gaps) {
    if (n <= cap) return n;
    for (size_t i = 0; i + 1 < n; i++) gaps[i] = iv[i + 1].start_ns - iv[i].end_ns;
    qsort(gaps, n - 1, sizeof *gaps, cmp_i64);
    size_t need = n - cap;          /* gaps to close */
    int64_t thr = gaps[need - 1];   /* close every gap below it, and enough equal to it */
    size_t below = 0;
    for (size_t i = 0; i < need; i++) below += gaps[i] < thr;
    size_t equal_left = need - below, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0) {
            int64_t g = iv[i].start_ns - iv[m - 1].end_ns;
            if (g < thr || (g == thr && equal_left > 0)) {
                if (g == thr) equal_left--;
                iv[m - 1].end_ns = DF_MAX(iv[m - 1].end_ns, iv[i].end_ns);
                continue;
            }
        }
        iv[m++] = iv[i];
    }
    return m;
}

/* Adds the lane of worker track t (outermost activity slices). */
static df_errkind add_lane(df__build *b, const df__btrack *t, size_t *cap_lanes, size_t *cap_iv, int64_t *gaps,
                           df_error *err) {
    df_report_profile *p = b->p;
    const df__bslice *first = NULL;
    size_t base = p->nintervals, n = 0;
    int64_t busy = 0, count = 0;
    for (uint32_t k = 0; k < t->nslices; k++) {
        const df__bslice *s = &b->slices[t->slices[k]];
        if (s->depth != 0 || s->instant || s->category != DF__PT_CAT_PROFILE) continue;
        if (!first) first = s;
        count++;
        busy += s->end - s->start;
        if (DF_ARRAY_RESERVE(p->intervals, *cap_iv, base + n + 1, 1024, NULL)) return oom(err);
        df_report_interval *last = n ? &p->intervals[base + n - 1] : NULL;
        if (last && s->start <= last->end_ns) last->end_ns = DF_MAX(last->end_ns, s->end);
        else p->intervals[base + n++] = (df_report_interval){s->start, s->end};
    }
    if (!first || !df__build_has_num(&first->args, DF__PT_N_QUERY) || !df__build_has_num(&first->args, DF__PT_N_LANE))
        return DF_OK;
    n = coalesce(p->intervals + base, n, DF_REPORT_LANE_INTERVALS, gaps);
    if (DF_ARRAY_RESERVE(p->lanes, *cap_lanes, p->nlanes + 1, 64, NULL)) return oom(err);
    const char *kind = df__build_arg_str(b, &first->args, DF__PT_S_WORKER_KIND);
    uint32_t kid = kind ? df__report_intern(&p->strings, kind, strlen(kind) > 64 ? 64 : strlen(kind)) : 0;
    if (kind && !kid) return oom(err);
    p->lanes[p->nlanes++] = (df_report_lane){
        .operation_id = t->op_id, .query_execution_id = first->args.num[DF__PT_N_QUERY],
        .worker_lane_id = first->args.num[DF__PT_N_LANE], .busy_ns = busy, .activity_count = count,
        .worker_kind = kid, .interval_count = (uint32_t)n, .first_interval = base};
    p->nintervals = base + n;
    return DF_OK;
}

df_errkind df__build_lanes(df__build *b, df_error *err) {
    df_report_profile *p = b->p;
    size_t cap_lanes = 0, cap_iv = 0, maxn = 1;
    for (size_t i = 0; i < b->ntracks; i++) maxn = DF_MAX(maxn, b->tracks[i].nslices);
    int64_t *gaps = df_malloc(maxn * sizeof *gaps);
    if (!gaps) return oom(err);
    df_errkind k = DF_OK;
    for (size_t i = 0; k == DF_OK && i < b->ntracks; i++) {
        const df__btrack *t = &b->tracks[i];
        if (t->role != DF__BT_WORKER || df__build_find_op(b, t->op_id) < 0) continue;
        if (p->nlanes >= DF_REPORT_MAX_LANES || p->nintervals + DF_REPORT_LANE_INTERVALS > DF_REPORT_MAX_INTERVALS) break;
        k = add_lane(b, t, &cap_lanes, &cap_iv, gaps, err);
    }
    df_free(gaps);
    if (k != DF_OK) return k;
    /* Sort lanes (their intervals stay where they are) and drop duplicate keys. */
    if (p->nlanes) qsort(p->lanes, p->nlanes, sizeof *p->lanes, cmp_lane);
    size_t m = 0;
    for (size_t i = 0; i < p->nlanes; i++)
        if (m == 0 || cmp_lane(&p->lanes[m - 1], &p->lanes[i]) != 0) p->lanes[m++] = p->lanes[i];
    p->nlanes = m;
    return DF_OK;
}
