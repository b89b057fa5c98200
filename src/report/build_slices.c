/*
 * Model builder, first half: from decoded track events to semantic nodes.
 *
 *  1. Tracks: descriptors get a role from their exact names and ancestry
 *     (diagnostics -> "Operation [op-N]" -> phases / query / owner ...), the
 *     operation id parsed from the 20-digit token, and their process.
 *  2. Slices: events are sorted by (timestamp, file order) and replayed per
 *     track with a stack, as Perfetto does: a begin opens a slice under the
 *     open one, an end closes the innermost, an instant is a zero-length
 *     slice; slices never closed are incomplete (analysis end = trace end).
 *  3. Operations: root slices with one of the three operation names on an
 *     operation track (optionally only one capture scope).
 *  4. Semantic nodes: profile-category slices of a selected
 *     operation with wall_clock or lifecycle time semantics.
 *  5. Parents, ranked by relation: enclosing slice on the same
 *     track; tightest container on the nearest ancestor track below the
 *     operation track; tightest strictly containing stage with compatible
 *     identity; the operation root.  Ties of the stage relation are broken
 *     by id and counted (metadata ambiguous_parent_count).
 *  6. Capture health over the selected operations' tracks.
 * build_samples.c then attributes samples; this file assembles the model.
 */
#include "report/build_int.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_TRACK_DEPTH 256

static df_errkind oom(df_error *err) {
    return df__report_fail(err, DF_ERR_OUT_OF_MEMORY, "aggregate_validation",
                           "out of memory while building the profile");
}

static const char *tstr(const df__build *b, uint32_t id) {
    const char *s = df__report_str(&b->tr.strings, id);
    return s ? s : "";
}

/* ------------------------------------------------------------------------ */
/* Tracks.                                                                   */

/* The index + 1 of the track with `uuid`, or 0. */
static uint32_t track_lookup(const df__build *b, uint64_t uuid) {
    uint64_t v = 0;
    df_u64map_get(&b->tmap, uuid, &v);
    return (uint32_t)v;
}

/* Adds a track (uuid not present yet).  Returns its index + 1, 0 on OOM. */
static uint32_t track_add(df__build *b, uint64_t uuid, size_t *cap) {
    if (DF_ARRAY_RESERVE(b->tracks, *cap, b->ntracks + 1, 64, NULL)) return 0;
    if (df_u64map_put(&b->tmap, uuid, b->ntracks + 1, NULL)) return 0;
    b->tracks[b->ntracks] = (df__btrack){.uuid = uuid, .parent = -1, .op_track = -1};
    return (uint32_t)++b->ntracks;
}

/* Parses "Operation [op-" 20 digits "]"; returns the id or 0. */
static int64_t parse_op_name(const char *s) {
    const char *prefix = df_diag_track_part_name(DF_DIAG_TRACK_PART_OPERATION);
    const int digits = DF_DIAG_TRACK_ID_DIGITS;
    if (strncmp(s, prefix, strlen(prefix)) != 0) return 0;
    s += strlen(prefix);
    uint64_t v = 0;
    for (int i = 0; i < digits; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (s[digits] != ']' || s[digits + 1] != 0 || v == 0 || v > (uint64_t)INT64_MAX) return 0;
    return (int64_t)v;
}

/* True if a track-name component is `part` (numbered parts: by prefix, the id is not checked). */
static bool is_track_part(const char *component, df_diag_track_part part) {
    const char *name = df_diag_track_part_name(part);
    return df_diag_track_part_numbered(part) ? strncmp(component, name, strlen(name)) == 0
                                             : strcmp(component, name) == 0;
}

/* Role of a track under an operation, from the last " / " component of its name. */
static uint8_t sub_role(const char *name) {
    static const struct {
        df_diag_track_part part;
        uint8_t role;
    } roles[] = {
        {DF_DIAG_TRACK_PART_PHASES, DF__BT_PHASES}, {DF_DIAG_TRACK_PART_PLANNING, DF__BT_PLANNING},
        {DF_DIAG_TRACK_PART_WORKER, DF__BT_WORKER}, {DF_DIAG_TRACK_PART_STREAM, DF__BT_STREAM},
        {DF_DIAG_TRACK_PART_OWNER, DF__BT_OWNER},   {DF_DIAG_TRACK_PART_QUERY, DF__BT_QUERY},
    };
    const size_t sep = strlen(DF_DIAG_TRACK_SEPARATOR);
    const char *last = name, *p;
    while ((p = strstr(last, DF_DIAG_TRACK_SEPARATOR)) != NULL) last = p + sep;
    if (last == name) return DF__BT_OTHER;
    for (size_t i = 0; i < DF_ARRAY_LEN(roles); i++)
        if (is_track_part(last, roles[i].part)) return roles[i].role;
    return DF__BT_OTHER;
}

/* Resolves role, operation and process of track i from its resolved parent. */
static void resolve_track(df__build *b, size_t i, const uint8_t *resolved) {
    df__btrack *t = &b->tracks[i];
    const df__btrack *par = t->parent >= 0 && resolved[t->parent] ? &b->tracks[t->parent] : NULL;
    const char *name = tstr(b, t->name);
    if (t->role == DF__BT_PROCESS || t->role == DF__BT_THREAD) return;
    if (par) t->pid = par->pid;
    if (is_track_part(name, DF_DIAG_TRACK_PART_DIAGNOSTICS)) {
        t->role = DF__BT_DIAGNOSTICS;
    } else if (par && par->role == DF__BT_DIAGNOSTICS && parse_op_name(name)) {
        t->role = DF__BT_OPERATION;
        t->op_track = (int32_t)i;
        t->op_id = parse_op_name(name);
        t->op_distance = 0;
    } else if (par && par->op_track >= 0) {
        t->op_track = par->op_track;
        t->op_id = par->op_id;
        t->op_distance = par->op_distance + 1;
        t->role = sub_role(name);
    }
}

static df_errkind build_tracks(df__build *b, df_error *err) {
    size_t cap = 0;
    for (size_t i = 0; i < b->tr.ntracks; i++) {
        const df__pt_track *pt = &b->tr.tracks[i];
        uint32_t v = track_add(b, pt->uuid, &cap);
        if (!v) return oom(err);
        df__btrack *t = &b->tracks[v - 1];
        t->name = pt->name;
        t->pid = pt->pid;
        t->tid = pt->tid;
        t->role = pt->kind == DF__PT_TRACK_PROCESS ? DF__BT_PROCESS : pt->kind == DF__PT_TRACK_THREAD ? DF__BT_THREAD : DF__BT_OTHER;
    }
    /* Events may name tracks that have no descriptor: Perfetto makes global tracks of them. */
    for (size_t i = 0; i < b->tr.nevents; i++)
        if (!track_lookup(b, b->tr.events[i].track) && !track_add(b, b->tr.events[i].track, &cap)) return oom(err);
    for (size_t i = 0; i < b->tr.ntracks; i++) {
        uint32_t pv = b->tr.tracks[i].parent ? track_lookup(b, b->tr.tracks[i].parent) : 0;
        if (pv && pv - 1 != i) b->tracks[i].parent = (int32_t)pv - 1;
    }
    /* Resolve top-down: walk each chain up (bounded, cycles stop it), then resolve downwards. */
    uint8_t *resolved = df_calloc(b->ntracks ? b->ntracks : 1, 1);
    uint32_t chain[MAX_TRACK_DEPTH];
    if (!resolved) return oom(err);
    for (size_t i = 0; i < b->ntracks; i++) {
        size_t n = 0;
        for (int32_t c = (int32_t)i; c >= 0 && !resolved[c] && n < MAX_TRACK_DEPTH; c = b->tracks[c].parent) {
            bool seen = false;
            for (size_t k = 0; k < n; k++) seen |= chain[k] == (uint32_t)c;
            if (seen) break;
            chain[n++] = (uint32_t)c;
        }
        while (n--) {
            resolve_track(b, chain[n], resolved);
            resolved[chain[n]] = 1;
        }
    }
    df_free(resolved);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Slices.                                                                   */

static int cmp_events(const void *pa, const void *pb, void *ctx) {
    const df__pt_event *ev = ctx;
    const df__pt_event *a = &ev[*(const uint32_t *)pa], *b = &ev[*(const uint32_t *)pb];
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static bool track_push_slice(df__btrack *t, uint32_t s) {
    if (DF_ARRAY_RESERVE(t->slices, t->cap, t->nslices + 1, 16, NULL)) return false;
    t->slices[t->nslices++] = s;
    return true;
}

/* Overlays the present arguments of `src` on `dst` (end arguments complete the slice). */
static void merge_args(df__pt_args *dst, const df__pt_args *src) {
    for (int i = 0; i < DF__PT_N_COUNT; i++)
        if ((src->num_present | src->num_invalid) & (1u << i)) dst->num[i] = src->num[i];
    dst->num_present = (dst->num_present & ~src->num_invalid) | src->num_present;
    dst->num_invalid = (dst->num_invalid & ~src->num_present) | src->num_invalid;
    for (int i = 0; i < DF__PT_S_COUNT; i++)
        if (src->str_present & (1u << i)) dst->str[i] = src->str[i];
    dst->str_present = (dst->str_present & ~src->str_invalid) | src->str_present;
    dst->str_invalid = (dst->str_invalid & ~src->str_present) | src->str_invalid;
}

static df_errkind build_slices(df__build *b, df_error *err) {
    size_t n = b->tr.nevents;
    uint32_t *order = df_malloc((n ? n : 1) * sizeof *order);
    int32_t *top = df_malloc((b->ntracks ? b->ntracks : 1) * sizeof *top);
    b->slices = df_malloc((n ? n : 1) * sizeof *b->slices);
    if (!order || !top || !b->slices) {
        df_free(order);
        df_free(top);
        return oom(err);
    }
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    qsort_r(order, n, sizeof *order, cmp_events, b->tr.events);
    for (size_t i = 0; i < b->ntracks; i++) top[i] = -1;
    df_errkind k = DF_OK;
    for (size_t i = 0; i < n && k == DF_OK; i++) {
        const df__pt_event *ev = &b->tr.events[order[i]];
        uint32_t ti = track_lookup(b, ev->track) - 1;
        df__btrack *t = &b->tracks[ti];
        if (ev->type == DF__PT_END) {
            if (top[ti] < 0) continue; /* unmatched end: ignored, as Perfetto does */
            df__bslice *s = &b->slices[top[ti]];
            s->dur = ev->ts - s->start;
            s->end = ev->ts;
            merge_args(&s->args, &ev->args);
            top[ti] = s->parent;
            continue;
        }
        uint32_t si = (uint32_t)b->nslices++;
        df__bslice *s = &b->slices[si];
        *s = (df__bslice){.start = ev->ts, .end = ev->ts, .dur = ev->type == DF__PT_INSTANT ? 0 : -1,
                          .track = ti, .parent = top[ti], .name = ev->name, .category = ev->category,
                          .instant = ev->type == DF__PT_INSTANT, .snode = -1, .args = ev->args};
        s->depth = s->parent >= 0 ? b->slices[s->parent].depth + 1 : 0;
        if (!track_push_slice(t, si)) k = oom(err);
        if (ev->type == DF__PT_BEGIN) top[ti] = (int32_t)si;
    }
    /* Incomplete slices extend just past the last timestamp, so the last sample is inside them. */
    int64_t analysis_end = b->trace_end < INT64_MAX ? b->trace_end + 1 : INT64_MAX;
    for (size_t i = 0; i < b->nslices; i++)
        if (b->slices[i].dur < 0) b->slices[i].end = DF_MAX(analysis_end, b->slices[i].start);
    df_free(order);
    df_free(top);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Operations.                                                               */

static int cmp_ops(const void *pa, const void *pb) {
    const df__bop *a = pa, *b = pb;
    return a->op_id < b->op_id ? -1 : a->op_id > b->op_id;
}

int32_t df__build_find_op(const df__build *b, int64_t op_id) {
    size_t lo = 0, hi = b->nops;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->ops[mid].op_id < op_id) lo = mid + 1;
        else hi = mid;
    }
    return lo < b->nops && b->ops[lo].op_id == op_id ? (int32_t)lo : -1;
}

static bool is_op_name(const char *s) { return df_diag_op_kind_from_span_name(s) != DF_DIAG_OP_NONE_; }

static bool is_title(const char *s, df_diag_title title) { return df_diag_name_is(s, df_diag_title_name(title)); }

/* The process of a track: its pid, or the pid of its nearest process ancestor. */
static uint32_t track_pid(const df__build *b, int32_t t) {
    for (int depth = 0; t >= 0 && depth < MAX_TRACK_DEPTH; depth++, t = b->tracks[t].parent)
        if (b->tracks[t].role == DF__BT_PROCESS || b->tracks[t].role == DF__BT_THREAD) return b->tracks[t].pid;
    return 0;
}

static df_errkind select_operations(df__build *b, df_error *err) {
    size_t cap = 0;
    for (size_t i = 0; i < b->nslices; i++) {
        const df__bslice *s = &b->slices[i];
        const df__btrack *t = &b->tracks[s->track];
        if (t->role != DF__BT_OPERATION || s->depth != 0 || s->instant || s->category != DF__PT_CAT_PROFILE ||
            !df__build_has_num(&s->args, DF__PT_N_OPERATION) || !is_op_name(tstr(b, s->name)))
            continue;
        int64_t scope = df__build_has_num(&s->args, DF__PT_N_SCOPE) ? s->args.num[DF__PT_N_SCOPE] : 0;
        if (b->scope && (uint64_t)scope != b->scope) continue;
        if (DF_ARRAY_RESERVE(b->ops, cap, b->nops + 1, 16, NULL)) return oom(err);
        b->ops[b->nops++] = (df__bop){.op_id = s->args.num[DF__PT_N_OPERATION], .start = s->start, .end = s->end,
                                      .root_slice = (uint32_t)i, .root_node = -1,
                                      .pid = track_pid(b, (int32_t)s->track), .scope = scope};
    }
    if (b->nops) qsort(b->ops, b->nops, sizeof *b->ops, cmp_ops);
    for (size_t i = 1; i < b->nops; i++)
        if (b->ops[i].op_id == b->ops[i - 1].op_id)
            return df__report_fail(err, DF_ERR_AUDIT_FAILED, "aggregate_validation",
                                   "operation %lld has more than one root slice", (long long)b->ops[i].op_id);
    return DF_OK;
}

static df_errkind require_operations(const df__build *b, df_error *err) {
    if (b->nops == 0)
        return df__report_fail(err, DF_ERR_INCOMPLETE_CAPTURE, "health",
                               "input trace contains no retained Delta Funnel operation");
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Semantic nodes.                                                           */

/* semantic_kind: the first rule that matches decides. */
static df_diag_semantic_kind semantic_kind(const df__build *b, const df__bslice *s, bool root) {
    const char *name = tstr(b, s->name);
    if (root) return DF_DIAG_SEM_OPERATION;
    if (df__build_arg_str(b, &s->args, DF__PT_S_STAGE_CATEGORY)) return DF_DIAG_SEM_STAGE;
    if (df__build_arg_str(b, &s->args, DF__PT_S_ACTIVITY)) return DF_DIAG_SEM_ACTIVITY;
    if (df_diag_phase_from_name(name)) return DF_DIAG_SEM_PHASE;
    if (is_title(name, DF_DIAG_TITLE_QUERY)) return DF_DIAG_SEM_QUERY;
    if (is_title(name, DF_DIAG_TITLE_QUERY_PLANNING)) return DF_DIAG_SEM_QUERY_PLANNING;
    return DF_DIAG_SEM_SEMANTIC;
}

static bool semantic_time(const df__build *b, const df__bslice *s) {
    return df__report_semantic_time(df__build_arg_str(b, &s->args, DF__PT_S_TIME_SEMANTICS));
}

static df_errkind make_nodes(df__build *b, df_error *err) {
    size_t cap = 0;
    for (size_t i = 0; i < b->nslices; i++) {
        df__bslice *s = &b->slices[i];
        if (s->category != DF__PT_CAT_PROFILE || !df__build_has_num(&s->args, DF__PT_N_OPERATION)) continue;
        int32_t op = df__build_find_op(b, s->args.num[DF__PT_N_OPERATION]);
        if (op < 0 || !semantic_time(b, s)) continue;
        /* Only slices on the operation's own tracks: another operation's track cannot own it. */
        if (b->tracks[s->track].op_track < 0 || b->tracks[s->track].op_id != b->ops[op].op_id) continue;
        if (DF_ARRAY_RESERVE(b->nodes, cap, b->nnodes + 1, 256, NULL)) return oom(err);
        bool root = b->ops[op].root_slice == i;
        df_diag_semantic_kind kind = semantic_kind(b, s, root);
        const char *kind_name = df_diag_semantic_kind_name(kind);
        uint32_t kid = df__report_intern(&b->p->strings, kind_name, strlen(kind_name));
        if (!kid) return oom(err);
        s->snode = (int32_t)b->nnodes;
        if (root) b->ops[op].root_node = (int32_t)b->nnodes;
        b->nodes[b->nnodes] = (df__bnode){
            .slice = (uint32_t)i, .op = (uint32_t)op, .parent = -1, .id = (int64_t)b->nnodes + 1, .kind = kid,
            .result_bearing = df_diag_semantic_kind_result_bearing(kind),
            .is_stage = df__build_arg_str(b, &s->args, DF__PT_S_STAGE_CATEGORY) != NULL,
        };
        b->nnodes++;
    }
    if (b->nnodes > DF_REPORT_MAX_SEMANTICS)
        return df__report_fail(err, DF_ERR_RECORD_LIMIT, "aggregate_validation",
                               "profile has %zu semantic records, exceeding the %u record limit", b->nnodes,
                               DF_REPORT_MAX_SEMANTICS);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Parent selection.                                                         */

/* Relation 0: nearest semantic ancestor slice of the same operation on the same track. */
static int32_t parent_by_slice(const df__build *b, const df__bnode *n) {
    for (int32_t s = b->slices[n->slice].parent; s >= 0; s = b->slices[s].parent) {
        int32_t c = b->slices[s].snode;
        if (c >= 0 && b->nodes[c].op == n->op) return c;
    }
    return -1;
}

/* Index of the last slice of track t starting at or before ts, or -1. */
static int32_t last_started(const df__build *b, const df__btrack *t, int64_t ts) {
    size_t lo = 0, hi = t->nslices;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->slices[t->slices[mid]].start <= ts) lo = mid + 1;
        else hi = mid;
    }
    return lo ? (int32_t)t->slices[lo - 1] : -1;
}

/*
 * Relation 1: on the nearest ancestor track below the operation track that
 * has one, the tightest semantic slice of the same operation containing the
 * node's [start, analysis end].  On a properly nested track every slice
 * containing a point is an ancestor of the last slice started before it.
 */
static int32_t parent_by_track(const df__build *b, const df__bnode *n) {
    const df__bslice *s = &b->slices[n->slice];
    int32_t t = b->tracks[s->track].parent;
    for (int depth = 0; t >= 0 && depth < MAX_TRACK_DEPTH; depth++, t = b->tracks[t].parent) {
        const df__btrack *tr = &b->tracks[t];
        if (tr->role == DF__BT_OPERATION || tr->op_track < 0) break;
        for (int32_t c = last_started(b, tr, s->start); c >= 0; c = b->slices[c].parent) {
            const df__bslice *cs = &b->slices[c];
            if (cs->snode < 0 || b->nodes[cs->snode].op != n->op) continue;
            if (cs->start <= s->start && cs->end >= s->end) return cs->snode;
        }
    }
    return -1;
}

static bool ident_compatible(const df__pt_args *a, const df__pt_args *c) {
    static const int fields[] = {DF__PT_N_QUERY, DF__PT_N_LANE, DF__PT_N_NODE, DF__PT_N_PARENT_NODE,
                                 DF__PT_N_PARTITION, DF__PT_N_STREAM, DF__PT_N_OWNER};
    for (size_t i = 0; i < DF_ARRAY_LEN(fields); i++) {
        int f = fields[i];
        if (df__build_has_num(a, f) && df__build_has_num(c, f) && a->num[f] != c->num[f]) return false;
    }
    return true;
}

static int cmp_node_start(const void *pa, const void *pb, void *ctx) {
    const df__build *b = ctx;
    const df__bnode *x = &b->nodes[*(const uint32_t *)pa], *y = &b->nodes[*(const uint32_t *)pb];
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    int64_t sx = b->slices[x->slice].start, sy = b->slices[y->slice].start;
    if (sx != sy) return sx < sy ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Better stage container: tighter, then deeper slice, then lower id.  0 = tie on (duration, depth). */
static int rank_stage(const df__build *b, int32_t x, int32_t y) {
    const df__bslice *a = &b->slices[b->nodes[x].slice], *c = &b->slices[b->nodes[y].slice];
    int64_t da = a->end - a->start, dc = c->end - c->start;
    if (da != dc) return da < dc ? -1 : 1;
    if (a->depth != c->depth) return a->depth > c->depth ? -1 : 1;
    return 0;
}

/*
 * Relation 2 for the nodes in `need` (sorted by (op, start)): a sweep over
 * the stage nodes in the same order keeps the stages started so far; the
 * tightest one strictly containing the node with compatible identity wins.
 */
static df_errkind parents_by_stage(df__build *b, uint32_t *need, size_t nneed, df_error *err) {
    uint32_t *stages = df_malloc((b->nnodes ? b->nnodes : 1) * sizeof *stages);
    uint32_t *active = df_malloc((b->nnodes ? b->nnodes : 1) * sizeof *active);
    if (!stages || !active) {
        df_free(stages);
        df_free(active);
        return oom(err);
    }
    size_t nst = 0, nact = 0, next = 0;
    for (size_t i = 0; i < b->nnodes; i++)
        if (b->nodes[i].is_stage) stages[nst++] = (uint32_t)i;
    qsort_r(stages, nst, sizeof *stages, cmp_node_start, b);
    uint32_t cur_op = UINT32_MAX;
    for (size_t i = 0; i < nneed; i++) {
        df__bnode *n = &b->nodes[need[i]];
        const df__bslice *s = &b->slices[n->slice];
        if (n->op != cur_op) cur_op = n->op, nact = 0;
        while (next < nst && (b->nodes[stages[next]].op < n->op ||
                              (b->nodes[stages[next]].op == n->op && b->slices[b->nodes[stages[next]].slice].start <= s->start))) {
            if (b->nodes[stages[next]].op == n->op) active[nact++] = stages[next];
            next++;
        }
        int32_t best = -1;
        bool tie = false;
        size_t keep = 0;
        for (size_t k = 0; k < nact; k++) {
            const df__bslice *c = &b->slices[b->nodes[active[k]].slice];
            if (c->end < s->start) continue; /* ended before: drop from the sweep */
            active[keep++] = active[k];
            if ((int32_t)active[k] == (int32_t)need[i] || c->end < s->end) continue;
            if (c->start == s->start && c->end == s->end) continue;
            if (!ident_compatible(&c->args, &s->args)) continue;
            int r = best < 0 ? -1 : rank_stage(b, (int32_t)active[k], best);
            if (r < 0) best = (int32_t)active[k], tie = false;
            else if (r == 0) tie = true, best = DF_MIN(best, (int32_t)active[k]);
        }
        nact = keep;
        if (best >= 0) {
            n->parent = best;
            if (tie) b->ambiguous_parents++;
        }
    }
    df_free(stages);
    df_free(active);
    return DF_OK;
}

static df_errkind choose_parents(df__build *b, df_error *err) {
    uint32_t *need = df_malloc((b->nnodes ? b->nnodes : 1) * sizeof *need);
    if (!need) return oom(err);
    size_t nneed = 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        df__bnode *n = &b->nodes[i];
        if (b->ops[n->op].root_node == (int32_t)i) continue;
        n->parent = parent_by_slice(b, n);
        if (n->parent < 0) n->parent = parent_by_track(b, n);
        if (n->parent < 0) need[nneed++] = (uint32_t)i;
    }
    qsort_r(need, nneed, sizeof *need, cmp_node_start, b);
    df_errkind k = parents_by_stage(b, need, nneed, err);
    for (size_t i = 0; k == DF_OK && i < nneed; i++) {
        df__bnode *n = &b->nodes[need[i]];
        if (n->parent < 0) n->parent = b->ops[n->op].root_node; /* relation 3 */
    }
    df_free(need);
    if (k != DF_OK) return k;
    /* Depths; a cycle (impossible by construction, checked anyway) is an audit failure. */
    for (size_t i = 0; i < b->nnodes; i++) {
        uint32_t d = 0;
        for (int32_t c = b->nodes[i].parent; c >= 0; c = b->nodes[c].parent)
            if (++d > b->nnodes)
                return df__report_fail(err, DF_ERR_INVALID_HIERARCHY, "aggregate_validation",
                                       "semantic hierarchy contains a cycle");
        b->nodes[i].depth = d;
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Capture health over the selected operations' tracks.                     */

typedef struct health {
    int64_t missing_identity, crossing_worker, crossing_planning, crossing_exec, invalid_planning, invalid_exec,
        truncation, incomplete_roots;
    int64_t operator_slices, planning_slices, exec_slices; /* slices by health kind */
} health;

enum { HK_OTHER, HK_EXEC, HK_OPERATOR, HK_PLAN_ACTIVITY, HK_OPERATION, HK_PHASE, HK_QUERY, HK_QUERY_PLANNING };

static int health_kind(const df__build *b, const df__bslice *s) {
    const df__pt_args *a = &s->args;
    const char *name = tstr(b, s->name);
    if (df__build_arg_str(b, a, DF__PT_S_EXEC_ACTIVITY)) return HK_EXEC;
    if ((a->num_present | a->num_invalid) & ((1u << DF__PT_N_LANE) | (1u << DF__PT_N_NODE) |
                                             (1u << DF__PT_N_PARTITION) | (1u << DF__PT_N_STREAM)) ||
        df__build_arg_str(b, a, DF__PT_S_WORKER_KIND))
        return HK_OPERATOR;
    if (df__build_arg_str(b, a, DF__PT_S_PLAN_ACTIVITY)) return HK_PLAN_ACTIVITY;
    if (is_op_name(name)) return HK_OPERATION;
    if (df_diag_phase_from_name(name)) return HK_PHASE;
    if (is_title(name, DF_DIAG_TITLE_QUERY)) return HK_QUERY;
    if (is_title(name, DF_DIAG_TITLE_QUERY_PLANNING)) return HK_QUERY_PLANNING;
    return HK_OTHER;
}

static bool nonempty(const df__build *b, const df__pt_args *a, int i) {
    const char *s = df__build_arg_str(b, a, i);
    return s && *s;
}

/* Missing or invalid identity fields of one semantic-track slice. */
static int64_t missing_identity(const df__build *b, const df__bslice *s, int kind, int64_t track_op) {
    const df__pt_args *a = &s->args;
    int64_t m = 0;
    if (!df__build_has_num(a, DF__PT_N_OPERATION) || a->num[DF__PT_N_OPERATION] != track_op) m++;
    const char *ts = df__build_arg_str(b, a, DF__PT_S_TIME_SEMANTICS);
    bool active = df_diag_time_semantics_from_name(ts) == DF_DIAG_TS_ACTIVE, wall = df__report_semantic_time(ts);
    if (kind == HK_OPERATOR ? !active : !wall) m++;
    bool q = df__build_has_num(a, DF__PT_N_QUERY), node = df__build_has_num(a, DF__PT_N_NODE);
    bool part = df__build_has_num(a, DF__PT_N_PARTITION), stream = df__build_has_num(a, DF__PT_N_STREAM);
    switch (kind) {
    case HK_QUERY:
    case HK_QUERY_PLANNING:
        m += !q + !df__build_arg_str(b, a, DF__PT_S_QUERY_SCOPE);
        break;
    case HK_PLAN_ACTIVITY:
        m += !q + !df__build_arg_str(b, a, DF__PT_S_QUERY_SCOPE) + !nonempty(b, a, DF__PT_S_PLAN_ACTIVITY) +
             !nonempty(b, a, DF__PT_S_ACTIVITY);
        break;
    case HK_EXEC:
        m += !node + !part + !stream + !nonempty(b, a, DF__PT_S_EXEC_ACTIVITY) + !nonempty(b, a, DF__PT_S_ACTIVITY);
        break;
    case HK_OPERATOR:
        m += !df__build_has_num(a, DF__PT_N_LANE) + !df__build_arg_str(b, a, DF__PT_S_WORKER_KIND) + !node + !part +
             !stream + !nonempty(b, a, DF__PT_S_ACTIVITY);
        break;
    default: break;
    }
    return m;
}

/* A positive-duration slice crossing its parent of the same kind or its previous sibling. */
static bool crossing(const df__build *b, const df__bslice *s, int kind, const int64_t *prev_end) {
    if (s->dur <= 0) return false;
    if (s->parent >= 0) {
        const df__bslice *p = &b->slices[s->parent];
        if (health_kind(b, p) == kind && p->dur >= 0 && s->end > p->end) return true;
    }
    return *prev_end > s->start;
}

static bool exec_activity_valid(const df__build *b, const df__bslice *s) {
    const char *name = tstr(b, s->name), *ea = df__build_arg_str(b, &s->args, DF__PT_S_EXEC_ACTIVITY);
    const char *act = df__build_arg_str(b, &s->args, DF__PT_S_ACTIVITY);
    const char *ts = df__build_arg_str(b, &s->args, DF__PT_S_TIME_SEMANTICS);
    const char *res = df__build_arg_str(b, &s->args, DF__PT_S_RESULT);
    if (!is_title(name, DF_DIAG_TITLE_AWAIT_OUTPUT) || !df_diag_name_is(ea, name) ||
        !df_diag_name_is(act, df_diag_activity_value_name(DF_DIAG_ACTIVITY_AWAIT_OUTPUT)))
        return false;
    if (df_diag_time_semantics_from_name(ts) != DF_DIAG_TS_WALL_CLOCK) return false;
    df_diag_result r = df_diag_result_from_name(res);
    if (s->dur >= 0 && r != DF_DIAG_RESULT_OK && r != DF_DIAG_RESULT_ERROR && r != DF_DIAG_RESULT_CANCELLED) return false;
    const df__btrack *t = &b->tracks[s->track];
    if (t->role != DF__BT_STREAM || t->parent < 0 || b->tracks[t->parent].role != DF__BT_QUERY) return false;
    int32_t op = df__build_find_op(b, t->op_id);
    return op >= 0 && s->start >= b->ops[op].start && s->end <= b->ops[op].end;
}

static bool plan_activity_valid(const df__build *b, const df__bslice *s) {
    if (s->parent < 0) return false;
    const df__bslice *p = &b->slices[s->parent];
    int pk = health_kind(b, p);
    if (pk != HK_QUERY_PLANNING && pk != HK_PLAN_ACTIVITY) return false;
    static const int nums[] = {DF__PT_N_OPERATION, DF__PT_N_QUERY};
    for (size_t i = 0; i < DF_ARRAY_LEN(nums); i++)
        if (df__build_has_num(&s->args, nums[i]) != df__build_has_num(&p->args, nums[i]) ||
            s->args.num[nums[i]] != p->args.num[nums[i]])
            return false;
    return s->start >= p->start && s->end <= p->end;
}

static df_errkind compute_health(df__build *b, health *h, df_error *err) {
    memset(h, 0, sizeof *h);
    int64_t *prev_end = df_malloc((b->nslices + b->ntracks + 1) * sizeof *prev_end);
    if (!prev_end) return oom(err);
    /* prev_end[slice] = end of the last child seen; prev_end[nslices + track] = last root's end. */
    for (size_t i = 0; i < b->nslices + b->ntracks + 1; i++) prev_end[i] = INT64_MIN;
    for (size_t i = 0; i < b->nslices; i++) {
        const df__bslice *s = &b->slices[i];
        const df__btrack *t = &b->tracks[s->track];
        if (t->op_track < 0 || s->category != DF__PT_CAT_PROFILE || df__build_find_op(b, t->op_id) < 0) continue;
        const char *name = tstr(b, s->name);
        int64_t *pe = &prev_end[s->parent >= 0 ? (size_t)s->parent : b->nslices + s->track];
        bool truncation = is_title(name, DF_DIAG_TITLE_TRUNCATED);
        if (truncation && s->instant) h->truncation++;
        if (truncation || is_title(name, DF_DIAG_TITLE_DIAGNOSTIC_GROUP)) continue;
        int kind = health_kind(b, s);
        h->operator_slices += kind == HK_OPERATOR;
        h->planning_slices += kind == HK_PLAN_ACTIVITY;
        h->exec_slices += kind == HK_EXEC;
        h->missing_identity += missing_identity(b, s, kind, t->op_id);
        if (kind == HK_OPERATOR && t->role == DF__BT_WORKER && crossing(b, s, kind, pe)) h->crossing_worker++;
        if (kind == HK_EXEC && crossing(b, s, kind, pe)) h->crossing_exec++;
        if (kind == HK_PLAN_ACTIVITY && crossing(b, s, kind, pe)) h->crossing_planning++;
        if (kind == HK_EXEC && !exec_activity_valid(b, s)) h->invalid_exec++;
        if (kind == HK_PLAN_ACTIVITY && !plan_activity_valid(b, s)) h->invalid_planning++;
        if (s->dur > 0) *pe = DF_MAX(*pe, s->end);
    }
    df_free(prev_end);
    for (size_t i = 0; i < b->nops; i++)
        if (b->slices[b->ops[i].root_slice].dur < 0) h->incomplete_roots++;
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Assembling the model.                                                     */

/* Interns a trace string into the model, cut to DF_REPORT_MAX_FIELD_CHARS characters.  0 = null. */
static uint32_t model_str(df__build *b, const char *s, bool *failed) {
    if (!s) return 0;
    size_t i = df_utf8_prefix((const uint8_t *)s, strlen(s), DF_REPORT_MAX_FIELD_CHARS);
    uint32_t id = df__report_intern(&b->p->strings, s, i);
    if (!id) *failed = true;
    return id;
}

static int cmp_sem(const void *pa, const void *pb) {
    const df_report_semantic *a = pa, *b = pb;
    if (a->operation_id != b->operation_id) return a->operation_id < b->operation_id ? -1 : 1;
    return a->semantic_id < b->semantic_id ? -1 : a->semantic_id > b->semantic_id;
}

static df_errkind emit_semantics(df__build *b, df_error *err) {
    static const int idmap[DF_REPORT_ID_COUNT] = {DF__PT_N_QUERY, DF__PT_N_LANE, DF__PT_N_NODE, DF__PT_N_PARENT_NODE,
                                                  DF__PT_N_PARTITION, DF__PT_N_STREAM, DF__PT_N_OWNER};
    static const int strmap[DF_REPORT_S_COUNT] = {-1, -1, DF__PT_S_OPERATION_KIND, DF__PT_S_STAGE_CATEGORY,
                                                  DF__PT_S_STAGE_NAME, DF__PT_S_ACTIVITY, DF__PT_S_TIME_SEMANTICS,
                                                  DF__PT_S_RESULT, DF__PT_S_QUERY_SCOPE, DF__PT_S_QUERY_OWNER,
                                                  DF__PT_S_WORKER_KIND};
    df_report_profile *p = b->p;
    p->sems = df_calloc(b->nnodes ? b->nnodes : 1, sizeof *p->sems);
    if (!p->sems) return oom(err);
    bool failed = false;
    for (size_t i = 0; i < b->nnodes; i++) {
        const df__bnode *n = &b->nodes[i];
        const df__bslice *s = &b->slices[n->slice];
        df_report_semantic *r = &p->sems[i];
        r->semantic_id = n->id;
        r->operation_id = b->ops[n->op].op_id;
        if (n->parent >= 0) r->parent_semantic_id = b->nodes[n->parent].id, r->flags |= DF_REPORT_SEM_HAS_PARENT;
        r->start_ns = s->start;
        if (s->dur >= 0) r->end_ns = s->end, r->duration_ns = s->dur, r->flags |= DF_REPORT_SEM_COMPLETE;
        for (int k = 0; k < DF_REPORT_ID_COUNT; k++)
            if (df__build_has_num(&s->args, idmap[k])) r->ident[k] = s->args.num[idmap[k]], r->flags |= DF_REPORT_SEM_HAS_ID(k);
        r->str[DF_REPORT_S_NAME] = model_str(b, tstr(b, s->name), &failed);
        r->str[DF_REPORT_S_KIND] = n->kind;
        for (int k = 2; k < DF_REPORT_S_COUNT; k++) r->str[k] = model_str(b, df__build_arg_str(b, &s->args, strmap[k]), &failed);
        /* An incomplete node has no result: none is made up for it. */
        if (s->dur < 0) r->str[DF_REPORT_S_RESULT] = 0;
        r->direct_samples = n->direct;
        r->inclusive_samples = n->inclusive;
        memcpy(r->stack, n->stack, sizeof r->stack);
    }
    if (failed) return oom(err);
    p->nsems = b->nnodes;
    qsort(p->sems, p->nsems, sizeof *p->sems, cmp_sem);
    return DF_OK;
}

/* Folds direct counts into inclusive counts (children before parents: depth descending). */
static void fold_inclusive(df__build *b) {
    uint32_t maxd = 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        b->nodes[i].inclusive = b->nodes[i].direct;
        maxd = DF_MAX(maxd, b->nodes[i].depth);
    }
    for (uint32_t d = maxd; d > 0; d--)
        for (size_t i = 0; i < b->nnodes; i++)
            if (b->nodes[i].depth == d && b->nodes[i].parent >= 0)
                b->nodes[b->nodes[i].parent].inclusive += b->nodes[i].inclusive;
}

static void fill_health_metadata(df__build *b, const health *h) {
    df_report_metadata *m = &b->p->meta;
    const df__pt_trace *t = &b->tr;
    m->schema_version = DF_REPORT_SCHEMA_VERSION;
    m->finalization_observed = t->tracing_disabled;
    m->incomplete_operation_root_count = h->incomplete_roots;
    m->truncation_marker_count = h->truncation;
    m->missing_identity_field_count = h->missing_identity;
    int64_t missing_results = 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        const df__bslice *s = &b->slices[b->nodes[i].slice];
        if (b->nodes[i].result_bearing && (s->dur < 0 || !df__build_arg_str(b, &s->args, DF__PT_S_RESULT)))
            missing_results++;
    }
    m->missing_terminal_result_count = missing_results;
    m->crossing_worker_slice_count = h->crossing_worker;
    m->crossing_planning_activity_slice_count = h->crossing_planning;
    m->crossing_execution_activity_slice_count = h->crossing_exec;
    m->invalid_planning_activity_hierarchy_count = h->invalid_planning;
    m->invalid_execution_activity_hierarchy_count = h->invalid_exec;
    m->perf_samples_skipped = t->samples_skipped;
    m->buffer_loss_count = t->buffer_loss;
    m->data_source_loss_count = t->data_source_loss;
    m->flush_failure_count = t->flush_failures;
    m->trace_profiler_dropped_sample_count = t->kernel_records_lost;
    m->ambiguous_parent_count = b->ambiguous_parents;
    m->trace_start_ns = t->min_ts == INT64_MAX ? 0 : t->min_ts;
    m->trace_end_ns = t->max_ts == INT64_MIN ? 0 : t->max_ts;
    m->semantic_complete = b->nops > 0 && m->incomplete_operation_root_count == 0 &&
                           m->truncation_marker_count == 0 && m->missing_identity_field_count == 0 &&
                           missing_results == 0 && m->crossing_worker_slice_count == 0 &&
                           m->crossing_planning_activity_slice_count == 0 &&
                           m->crossing_execution_activity_slice_count == 0 &&
                           m->invalid_planning_activity_hierarchy_count == 0 &&
                           m->invalid_execution_activity_hierarchy_count == 0 && m->buffer_loss_count == 0;
    m->capture_complete = m->semantic_complete && m->finalization_observed && m->flush_failure_count == 0 &&
                          m->buffer_loss_count == 0 && m->data_source_loss_count == 0 &&
                          m->trace_profiler_dropped_sample_count == 0;
}

static void build_free(df__build *b) {
    df__pt_trace_free(&b->tr);
    df_free(b->slices);
    for (size_t i = 0; i < b->ntracks; i++) df_free(b->tracks[i].slices);
    df_free(b->tracks);
    df_u64map_free(&b->tmap);
    df_free(b->ops);
    df_free(b->nodes);
}

/* The steps after decoding; the model is left in b->p. */
static df_errkind build_steps(df__build *b, df_error *err) {
    b->trace_end = b->tr.max_ts == INT64_MIN ? 0 : b->tr.max_ts;
    DF_TRY(build_tracks(b, err));
    DF_TRY(build_slices(b, err));
    DF_TRY(select_operations(b, err));
    DF_TRY(require_operations(b, err));
    DF_TRY(make_nodes(b, err));
    DF_TRY(choose_parents(b, err));
    health h;
    DF_TRY(compute_health(b, &h, err));
    if (h.missing_identity > 0)
        return df__report_fail(err, DF_ERR_UNSAFE_IDENTITY, "aggregate_validation",
                               "trace has %lld missing or invalid identity fields", (long long)h.missing_identity);
    fill_health_metadata(b, &h);
    DF_TRY(df__build_samples(b, err));
    fold_inclusive(b);
    DF_TRY(emit_semantics(b, err));
    DF_TRY(df__build_lanes(b, err));
    uint32_t unit = df__report_intern(&b->p->strings, DF_REPORT_TIME_UNIT, strlen(DF_REPORT_TIME_UNIT));
    uint32_t samples = df__report_intern(&b->p->strings, DF_REPORT_SAMPLE_UNIT, strlen(DF_REPORT_SAMPLE_UNIT));
    if (!unit || !samples) return oom(err);
    b->p->meta.exact_time_unit = unit;
    b->p->meta.sample_unit = samples;
    df__report_strings_seal(&b->p->strings);
    df_errkind k = df__report_index_build(b->p, err);
    if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY) {
        char msg[DF_ERROR_MESSAGE_SIZE];
        snprintf(msg, sizeof msg, "%s", err ? err->message : "");
        k = df__report_fail(err, DF_ERR_INVALID_AGGREGATE, "aggregate_validation", "%s", msg);
    }
    return k;
}

df_errkind df_report_build_from_trace(const void *bytes, size_t len, const df_report_build_options *opts,
                                      df_report_profile **out, df_error *err) {
    *out = NULL;
    df__build b;
    memset(&b, 0, sizeof b);
    b.scope = opts ? opts->capture_scope_id : 0;
    DF_TRY(df__pt_decode(bytes, len, opts ? opts->max_trace_bytes : 0, &b.tr, err));
    b.p = df__report_profile_new();
    if (!b.p) {
        build_free(&b);
        return oom(err);
    }
    df_errkind k = build_steps(&b, err);
    if (k != DF_OK) {
        df_report_profile_destroy(b.p);
        build_free(&b);
        return k;
    }
    *out = b.p;
    build_free(&b);
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Capture health without a model.                                          */

/* Result-bearing semantic slices without a terminal result (the same rule as the model's metadata). */
static int64_t missing_results(const df__build *b) {
    int64_t n = 0;
    for (size_t i = 0; i < b->nnodes; i++) {
        const df__bslice *s = &b->slices[b->nodes[i].slice];
        if (b->nodes[i].result_bearing && (s->dur < 0 || !df__build_arg_str(b, &s->args, DF__PT_S_RESULT))) n++;
    }
    return n;
}

static void fill_health_row(const df__build *b, const health *h, size_t len, df_report_health *out) {
    const df__pt_trace *t = &b->tr;
    memset(out, 0, sizeof *out);
    out->operation_root_count = (int64_t)b->nops;
    out->incomplete_operation_root_count = h->incomplete_roots;
    out->operator_slice_count = h->operator_slices;
    out->planning_activity_slice_count = h->planning_slices;
    out->execution_activity_slice_count = h->exec_slices;
    out->truncation_marker_count = h->truncation;
    out->missing_identity_field_count = h->missing_identity;
    out->missing_terminal_result_count = missing_results(b);
    out->crossing_worker_slice_count = h->crossing_worker;
    out->crossing_planning_activity_slice_count = h->crossing_planning;
    out->crossing_execution_activity_slice_count = h->crossing_exec;
    out->invalid_planning_activity_hierarchy_count = h->invalid_planning;
    out->invalid_execution_activity_hierarchy_count = h->invalid_exec;
    for (size_t i = 0; i < t->nsamples; i++) {
        bool profiled = b->nops == 0;
        for (size_t o = 0; o < b->nops && !profiled; o++) profiled = b->ops[o].pid == t->samples[i].pid;
        if (!profiled) continue;
        out->perf_sample_count++;
        out->perf_sample_without_callsite_count += t->samples[i].stack == 0;
    }
    out->perf_samples_skipped = t->samples_skipped;
    out->buffer_loss_count = t->buffer_loss;
    out->data_source_loss_count = t->data_source_loss;
    out->flush_failure_count = t->flush_failures;
    out->finalization_observed = t->tracing_disabled;
    out->trace_duration_ns = t->min_ts <= t->max_ts ? t->max_ts - t->min_ts : 0;
    out->configured_file_cap_bytes = -1;
    out->saved_file_bytes = (int64_t)DF_MIN(len, (size_t)INT64_MAX);
    out->semantic_complete = b->nops > 0 && h->incomplete_roots == 0 && h->truncation == 0 &&
                             h->missing_identity == 0 && out->missing_terminal_result_count == 0 &&
                             h->crossing_worker == 0 && h->crossing_planning == 0 && h->crossing_exec == 0 &&
                             h->invalid_planning == 0 && h->invalid_exec == 0 && t->buffer_loss == 0;
    out->capture_complete = out->semantic_complete && out->finalization_observed && t->flush_failures == 0 &&
                            t->buffer_loss == 0 && t->data_source_loss == 0;
}

df_errkind df_report_capture_health(const void *bytes, size_t len, const df_report_build_options *opts,
                                    df_report_health *out, df_error *err) {
    memset(out, 0, sizeof *out);
    df__build b;
    memset(&b, 0, sizeof b);
    b.scope = opts ? opts->capture_scope_id : 0;
    DF_TRY(df__pt_decode(bytes, len, opts ? opts->max_trace_bytes : 0, &b.tr, err));
    b.p = df__report_profile_new();
    if (!b.p) {
        build_free(&b);
        return oom(err);
    }
    b.trace_end = b.tr.max_ts == INT64_MIN ? 0 : b.tr.max_ts;
    health h;
    df_errkind k = build_tracks(&b, err);
    if (k == DF_OK) k = build_slices(&b, err);
    if (k == DF_OK) k = select_operations(&b, err);
    if (k == DF_OK) k = make_nodes(&b, err);
    if (k == DF_OK) k = compute_health(&b, &h, err);
    if (k == DF_OK) fill_health_row(&b, &h, len, out);
    df_report_profile_destroy(b.p);
    build_free(&b);
    return k;
}

df_errkind df_report_health_csv(const df_report_health *h, df_buf *out, df_error *err) {
    static const char *const header =
        "capture_complete,semantic_complete,operation_root_count,incomplete_operation_root_count,"
        "operator_slice_count,planning_activity_slice_count,execution_activity_slice_count,"
        "truncation_marker_count,missing_identity_field_count,missing_terminal_result_count,"
        "crossing_worker_slice_count,crossing_planning_activity_slice_count,"
        "crossing_execution_activity_slice_count,invalid_planning_activity_hierarchy_count,"
        "invalid_execution_activity_hierarchy_count,perf_sample_count,perf_sample_without_callsite_count,"
        "perf_samples_skipped,buffer_loss_count,data_source_loss_count,flush_failure_count,"
        "finalization_observed,trace_duration_seconds,configured_file_cap_bytes,saved_file_bytes\n";
    char cap[32] = "";
    if (h->configured_file_cap_bytes >= 0) snprintf(cap, sizeof cap, "%lld", (long long)h->configured_file_cap_bytes);
    DF_TRY(df_buf_append(out, header, strlen(header), err));
    return df_buf_printf(out, err,
                          "%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,"
                          "%lld,%lld,%d,%lld.%06lld,%s,%lld\n",
                          h->capture_complete, h->semantic_complete, (long long)h->operation_root_count,
                          (long long)h->incomplete_operation_root_count, (long long)h->operator_slice_count,
                          (long long)h->planning_activity_slice_count, (long long)h->execution_activity_slice_count,
                          (long long)h->truncation_marker_count, (long long)h->missing_identity_field_count,
                          (long long)h->missing_terminal_result_count, (long long)h->crossing_worker_slice_count,
                          (long long)h->crossing_planning_activity_slice_count,
                          (long long)h->crossing_execution_activity_slice_count,
                          (long long)h->invalid_planning_activity_hierarchy_count,
                          (long long)h->invalid_execution_activity_hierarchy_count, (long long)h->perf_sample_count,
                          (long long)h->perf_sample_without_callsite_count, (long long)h->perf_samples_skipped,
                          (long long)h->buffer_loss_count, (long long)h->data_source_loss_count,
                          (long long)h->flush_failure_count, h->finalization_observed,
                          (long long)(h->trace_duration_ns / 1000000000), (long long)(h->trace_duration_ns % 1000000000 / 1000),
                          cap, (long long)h->saved_file_bytes);
}
