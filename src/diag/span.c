/*
 * Spans: operations, phases, stages, queries, tasks, operator activities,
 * await spans, details and context propagation, plus the phase-timing
 * recorder.
 *
 * Begin = push a frame on the calling thread's stack (identity, track,
 * begin time), then, if the operation is traced in the current capture
 * generation, append a begin record.  End = pop frames down to the span
 * (higher ones end as cancelled), append the end record, fold the elapsed
 * time into the operation's timing slot, release a worker lane the frame
 * held.
 *
 * Sample attribution needs no correlation step: samples and span bounds are
 * read from the same CLOCK_MONOTONIC on the same thread, so a sample belongs
 * to the innermost span of its thread whose [begin, end) contains it.  Only
 * the few nanoseconds between a clock read and the push/pop of a frame go
 * to the enclosing span.
 *
 * Locks: the operation mutex guards timing slots and the query list (taken
 * by phases and stages only, which are coarse); a query mutex guards its
 * worker lanes (taken when a task starts or an external lane is needed).
 * Activities, details and ends of activities take no lock.
 */
#include "diag/diag_int.h"

_Static_assert(sizeof(df_diag_ev_begin) % 8 == 0, "records are 8-byte multiples");
_Static_assert(sizeof(df_diag_ev_end) % 8 == 0, "records are 8-byte multiples");
_Static_assert(sizeof(df_diag_ev_instant) % 8 == 0, "records are 8-byte multiples");

/* Below this budget, units are reserved one by one so the limit is exact. */
#define BUDGET_BATCH_MIN_LIMIT 65536u
#define BUDGET_BATCH 32u

static inline bool traced_now(const df_diag_operation *op) {
    return op->generation != 0 &&
           op->generation == atomic_load_explicit(&df__diag_generation, memory_order_relaxed);
}

static df_diag_track_key track(uint8_t kind, uint64_t op, uint64_t q, uint64_t sub) {
    return (df_diag_track_key){.kind = kind, .op_id = op, .query_id = q, .sub_id = sub};
}

/* An identity with only the operation set, every optional field absent. */
static df_diag_ident base_ident(const df_diag_operation *op, uint8_t time_semantics) {
    return (df_diag_ident){
        .operation_id = op->id,
        .node_id = -1,
        .parent_node_id = -1,
        .operator_partition = -1,
        .time_semantics = time_semantics,
    };
}

/* ------------------------------------------------------------------------ */
/* Records.                                                                  */

static bool write_begin(df_diag_thread *t, const df_diag_frame *f, uint32_t flags) {
    df_diag_ev_begin *e = df__diag_event_reserve(t, f->op->generation, sizeof *e);
    if (!e) return false;
    *e = (df_diag_ev_begin){
        .h = {.size = sizeof *e, .type = DF_DIAG_EV_BEGIN, .kind = f->kind, .tid = t->tid},
        .name_id = f->name_id,
        .flags = flags,
        .serial = f->serial,
        .ts = f->begin_ns,
        .track = f->track,
        .ident = f->ident,
    };
    df__diag_event_commit(t, sizeof *e);
    return true;
}

static void write_end(df_diag_thread *t, const df_diag_operation *op, uint8_t kind, uint64_t serial,
                      uint64_t ts, df_diag_result result, const df_diag_track_key *trk,
                      uint32_t flags, int64_t parent_node, uint32_t owner) {
    df_diag_ev_end *e = df__diag_event_reserve(t, op->generation, sizeof *e);
    if (!e) return;
    *e = (df_diag_ev_end){
        .h = {.size = sizeof *e, .type = DF_DIAG_EV_END, .kind = kind, .tid = t->tid},
        .result = (uint8_t)(result == DF_DIAG_RESULT_UNSET ? DF_DIAG_RESULT_CANCELLED : result),
        .flags = flags,
        .query_owner_id = owner,
        .serial = serial,
        .ts = ts,
        .parent_node_id = parent_node,
        .track = *trk,
    };
    df__diag_event_commit(t, sizeof *e);
}

static void write_instant(df_diag_thread *t, const df_diag_operation *op, uint8_t kind,
                          df_diag_track_key trk, const df_diag_ident *ident, uint64_t max_spans) {
    df_diag_ev_instant *e = df__diag_event_reserve(t, op->generation, sizeof *e);
    if (!e) return;
    *e = (df_diag_ev_instant){
        .h = {.size = sizeof *e, .type = DF_DIAG_EV_INSTANT, .kind = kind, .tid = t->tid},
        .ts = df_now_ns(),
        .maximum_spans = max_spans,
        .track = trk,
        .ident = *ident,
    };
    df__diag_event_commit(t, sizeof *e);
}

/* ------------------------------------------------------------------------ */
/* Frames.                                                                   */

/* The next free frame of t, or NULL (counted) when the stack is full. */
static df_diag_frame *frame_next(df_diag_thread *t) {
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    if (DF_UNLIKELY(d >= DF_DIAG_MAX_DEPTH)) {
        df__diag_count_overflow();
        return NULL;
    }
    df_diag_frame *f = &t->frames[d];
    f->slot = NULL;
    f->query = NULL;
    f->name_id = 0;
    f->traced = 0;
    f->lane_acquired = 0;
    f->pad = 0;
    f->late_parent_node = INT64_MIN;
    return f;
}

/*
 * Makes the filled frame current (visible to the sampler), stamps its begin
 * time and writes its begin record when `traced`.
 */
static df_diag_span frame_push(df_diag_thread *t, df_diag_frame *f, bool traced, uint32_t flags) {
    f->serial = df__diag_serial(t);
    f->begin_ns = df_now_ns();
    atomic_signal_fence(memory_order_release);
    atomic_store_explicit(&t->depth, atomic_load_explicit(&t->depth, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (traced) f->traced = write_begin(t, f, flags);
    return (df_diag_span){f, f->serial};
}

static void slot_end(df_diag_operation *op, df_diag_timing_slot *s, uint64_t elapsed, uint64_t now,
                     df_diag_result result) {
    pthread_mutex_lock(&op->mu);
    if (s->open) s->open--;
    s->count++;
    s->elapsed_ns += elapsed;
    s->last_end_ns = now;
    if (result == DF_DIAG_RESULT_ERROR)
        s->errors++;
    else if (result == DF_DIAG_RESULT_CANCELLED || result == DF_DIAG_RESULT_UNSET)
        s->cancels++;
    pthread_mutex_unlock(&op->mu);
}

static void lane_release(df_diag_query *q, uint64_t lane) {
    pthread_mutex_lock(&q->lane_mu);
    if (lane >= 1 && lane <= q->nlanes) q->lanes[lane - 1].busy = 0;
    pthread_mutex_unlock(&q->lane_mu);
}

/* Pops the top frame of t with `result`; returns its elapsed nanoseconds. */
static uint64_t frame_pop(df_diag_thread *t, df_diag_result result) {
    uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
    df_diag_frame *f = &t->frames[d - 1];
    uint64_t now = df_now_ns();
    uint64_t elapsed = now - f->begin_ns;
    if (f->traced && traced_now(f->op)) {
        uint32_t flags = DF_DIAG_EVF_CONTEXT;
        uint32_t owner = 0;
        if (f->late_parent_node != INT64_MIN) flags |= DF_DIAG_EVF_PARENT_NODE;
        if (f->kind == DF_DIAG_SK_PLANNING && f->query) {
            owner = atomic_load_explicit(&f->query->owner_id, memory_order_relaxed);
            if (owner) flags |= DF_DIAG_EVF_OWNER;
        }
        write_end(t, f->op, f->kind, f->serial, now, result, &f->track, flags, f->late_parent_node,
                  owner);
    }
    if (f->slot) slot_end(f->op, f->slot, elapsed, now, result);
    if (f->lane_acquired) lane_release(f->query, f->ident.worker_lane_id);
    f->serial = 0;
    atomic_signal_fence(memory_order_release);
    atomic_store_explicit(&t->depth, d - 1, memory_order_relaxed);
    return elapsed;
}

/* The frame of `span` on the calling thread, or NULL (misuse counted). */
static df_diag_frame *own_frame(df_diag_span span) {
    df_diag_thread *t = df__diag_thread_peek();
    if (t) {
        uint32_t d = atomic_load_explicit(&t->depth, memory_order_relaxed);
        if (span.frame >= t->frames && span.frame < t->frames + d && span.frame->serial == span.serial)
            return span.frame;
    }
    df__diag_count_misuse();
    return NULL;
}

uint64_t df__diag_span_end(df_diag_span span, df_diag_result result) {
    df_diag_frame *f = own_frame(span);
    if (!f) return 0;
    df_diag_thread *t = df__diag_thread_peek();
    uint32_t idx = (uint32_t)(f - t->frames);
    while (atomic_load_explicit(&t->depth, memory_order_relaxed) - 1 > idx)
        frame_pop(t, DF_DIAG_RESULT_CANCELLED);
    return frame_pop(t, result);
}

void df_diag_span_set_parent_node(df_diag_span span, int64_t parent_node_id) {
    if (!span.frame) return;
    df_diag_frame *f = own_frame(span);
    if (f) f->late_parent_node = parent_node_id;
}

/* ------------------------------------------------------------------------ */
/* Operations, phases, stages and timings.                                   */

/* Finds or creates the timing slot of (kind, which, owner); NULL on OOM. */
static df_diag_timing_slot *slot_get(df_diag_operation *op, uint8_t kind, uint16_t which,
                                     uint64_t owner) {
    pthread_mutex_lock(&op->mu);
    df_diag_timing_slot *s = op->slots;
    while (s && !(s->kind == kind && s->which == which && s->owner_id == owner)) s = s->next;
    if (!s && (s = df_calloc(1, sizeof *s)) != NULL) {
        s->kind = kind;
        s->which = which;
        s->owner_id = owner;
        s->next = op->slots;
        op->slots = s;
    }
    pthread_mutex_unlock(&op->mu);
    return s;
}

static void slot_begin(df_diag_operation *op, df_diag_timing_slot *s, uint64_t now) {
    pthread_mutex_lock(&op->mu);
    s->open++;
    if (!s->first_begin_ns) s->first_begin_ns = now;
    pthread_mutex_unlock(&op->mu);
}

/* Attaches the operation to the current capture generation, if any. */
static void attach_capture(df_diag_operation *op, const df_diag_operation_options *opts,
                           const df_diag_thread *t) {
    op->budget = opts && opts->max_operator_activity_spans ? opts->max_operator_activity_spans
                                                           : DF_DIAG_DEFAULT_MAX_SPANS;
    uint64_t gen = atomic_load(&df__diag_generation);
    if (!gen || !df__diag_capture_traces_thread(t)) return;
    uint64_t id = df__diag_next_operation_id();
    if (!id) return; /* identities exhausted: not traced */
    op->id = id;
    op->generation = gen;
    op->scope_id = df__diag_capture_scope_id();
    uint64_t cap_budget = df__diag_capture_budget();
    if (cap_budget) op->budget = cap_budget;
}

df_errkind df_diag_operation_begin(df_diag_op_kind kind, const df_diag_operation_options *opts,
                                   df_diag_operation **out, df_error *err) {
    *out = NULL;
    if (kind <= DF_DIAG_OP_NONE_ || kind >= DF_DIAG_OP_COUNT_)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "unknown diagnostics operation kind %d", (int)kind);
    df_diag_thread *t = df__diag_thread_get();
    df_diag_operation *op = t ? df_calloc(1, sizeof *op) : NULL;
    if (!op) return DF_OOM(err);
    op->kind = kind;
    op->uid = df__diag_serial(t);
    pthread_mutex_init(&op->mu, NULL);
    atomic_init(&op->next_query, 1);
    op->root_slot = slot_get(op, DF_DIAG_SK_OPERATION, 0, 0);
    df_diag_frame *f = op->root_slot ? frame_next(t) : NULL;
    if (!f) {
        bool full = op->root_slot != NULL;
        df_free(op->root_slot);
        pthread_mutex_destroy(&op->mu);
        df_free(op);
        if (full) DF_FAIL(err, DF_ERR_LIMIT_EXCEEDED, "diagnostics span stack is full");
        return DF_OOM(err);
    }
    attach_capture(op, opts, t);
    bool traced = op->generation != 0;
    f->kind = DF_DIAG_SK_OPERATION;
    f->op = op;
    f->slot = op->root_slot;
    f->track = track(DF_DIAG_TK_OPERATION, op->id, 0, 0);
    f->ident = base_ident(op, DF_DIAG_TS_WALL_CLOCK);
    f->ident.capture_scope_id = op->scope_id;
    f->ident.op_kind = (uint8_t)kind;
    if (traced) {
        df_diag_ident none = {0};
        write_instant(t, op, DF_DIAG_IK_DIAGNOSTIC_GROUP, track(DF_DIAG_TK_DIAGNOSTICS, 0, 0, 0), &none, 0);
    }
    op->root = frame_push(t, f, traced, DF_DIAG_EVF_CONTEXT);
    slot_begin(op, op->root_slot, f->begin_ns);
    *out = op;
    return DF_OK;
}

uint64_t df_diag_operation_end(df_diag_operation *op, df_diag_result result) {
    if (!op) return 0;
    if (op->ended) return op->elapsed_ns;
    op->ended = true;
    op->elapsed_ns = df__diag_span_end(op->root, result);
    return op->elapsed_ns;
}

void df_diag_operation_destroy(df_diag_operation *op) {
    if (!op) return;
    df_diag_operation_end(op, DF_DIAG_RESULT_CANCELLED);
    for (df_diag_query *q = op->queries, *next; q; q = next) {
        next = q->next;
        pthread_mutex_destroy(&q->lane_mu);
        df_free(q->lanes);
        df_free(q);
    }
    for (df_diag_timing_slot *s = op->slots, *next; s; s = next) {
        next = s->next;
        df_free(s);
    }
    pthread_mutex_destroy(&op->mu);
    df_free(op);
}

uint64_t df_diag_operation_id(const df_diag_operation *op) { return op ? op->id : 0; }
bool df_diag_operation_traced(const df_diag_operation *op) { return op && op->generation != 0; }
df_diag_op_kind df_diag_operation_kind(const df_diag_operation *op) {
    return op ? op->kind : (df_diag_op_kind)0;
}

/* Shared part of phase and stage begins: a timed wall-clock frame. */
static df_diag_span timed_begin(df_diag_operation *op, uint8_t kind, uint16_t which, uint64_t owner) {
    df_diag_thread *t = df__diag_thread_get();
    if (!t) return DF_DIAG_SPAN_NONE;
    df_diag_timing_slot *s = slot_get(op, kind, which, owner);
    df_diag_frame *f = s ? frame_next(t) : NULL;
    if (!f) return DF_DIAG_SPAN_NONE;
    f->kind = kind;
    f->op = op;
    f->slot = s;
    f->ident = base_ident(op, DF_DIAG_TS_WALL_CLOCK);
    if (kind == DF_DIAG_SK_PHASE) {
        f->ident.phase = (uint8_t)which;
        f->track = track(DF_DIAG_TK_PHASES, op->id, 0, 0);
    } else {
        f->ident.stage = which;
        f->ident.op_kind = (uint8_t)op->kind;
        f->ident.stage_owner_id = owner;
        f->track = owner ? track(DF_DIAG_TK_OWNER, op->id, 0, owner) : track(DF_DIAG_TK_PHASES, op->id, 0, 0);
    }
    df_diag_span span = frame_push(t, f, traced_now(op), DF_DIAG_EVF_CONTEXT);
    slot_begin(op, s, f->begin_ns);
    return span;
}

df_diag_span df_diag_phase_begin(df_diag_operation *op, df_diag_phase phase) {
    if (!op || phase <= DF_DIAG_PHASE_NONE_ || phase >= DF_DIAG_PHASE_COUNT_) return DF_DIAG_SPAN_NONE;
    return timed_begin(op, DF_DIAG_SK_PHASE, (uint16_t)phase, 0);
}

df_diag_span df_diag_stage_begin(df_diag_operation *op, df_diag_stage stage, uint64_t owner_id) {
    if (!op || !df_diag_stage_allowed(stage, op->kind)) return DF_DIAG_SPAN_NONE;
    return timed_begin(op, DF_DIAG_SK_STAGE, (uint16_t)stage, owner_id);
}

static df_diag_timing timing_of(const df_diag_operation *op, uint8_t kind, uint16_t which, uint64_t owner) {
    df_diag_timing out = {0};
    if (!op) return out;
    df_diag_operation *m = (df_diag_operation *)op; /* the mutex is not part of the value */
    pthread_mutex_lock(&m->mu);
    for (const df_diag_timing_slot *s = op->slots; s; s = s->next) {
        if (s->kind != kind || s->which != which || s->owner_id != owner) continue;
        out.count = s->count;
        out.open = s->open;
        out.elapsed_ns = s->elapsed_ns;
        out.first_begin_ns = s->first_begin_ns;
        out.last_end_ns = s->last_end_ns;
        if (s->open) out.state = DF_DIAG_TIMING_RUNNING;
        else if (s->errors) out.state = DF_DIAG_TIMING_FAILED;
        else if (s->cancels) out.state = DF_DIAG_TIMING_CANCELLED;
        else if (s->count) out.state = DF_DIAG_TIMING_COMPLETED;
        break;
    }
    pthread_mutex_unlock(&m->mu);
    return out;
}

df_diag_timing df_diag_operation_total_timing(const df_diag_operation *op) {
    return timing_of(op, DF_DIAG_SK_OPERATION, 0, 0);
}

df_diag_timing df_diag_operation_phase_timing(const df_diag_operation *op, df_diag_phase phase) {
    return timing_of(op, DF_DIAG_SK_PHASE, (uint16_t)phase, 0);
}

df_diag_timing df_diag_operation_stage_timing(const df_diag_operation *op, df_diag_stage stage,
                                              uint64_t owner_id) {
    return timing_of(op, DF_DIAG_SK_STAGE, (uint16_t)stage, owner_id);
}

/* ------------------------------------------------------------------------ */
/* Queries and worker lanes.                                                 */

df_errkind df_diag_query_begin(df_diag_operation *op, df_diag_query_scope scope, const char *owner,
                               df_diag_query **out, df_error *err) {
    *out = NULL;
    if (scope <= DF_DIAG_QUERY_NONE_ || scope >= DF_DIAG_QUERY_COUNT_)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "unknown query scope %d", (int)scope);
    if (!op || !traced_now(op)) return DF_OK;
    df_diag_query *q = df_calloc(1, sizeof *q);
    if (!q) return DF_OOM(err);
    q->op = op;
    q->scope = (uint8_t)scope;
    q->id = atomic_fetch_add(&op->next_query, 1);
    atomic_init(&q->owner_id, owner ? df_diag_name_intern(owner) : 0);
    atomic_init(&q->next_stream, 1);
    pthread_mutex_init(&q->lane_mu, NULL);
    pthread_mutex_lock(&op->mu);
    q->next = op->queries;
    op->queries = q;
    pthread_mutex_unlock(&op->mu);
    *out = q;
    return DF_OK;
}

void df_diag_query_set_owner(df_diag_query *q, const char *owner) {
    if (q) atomic_store(&q->owner_id, owner ? df_diag_name_intern(owner) : 0);
}

uint64_t df_diag_query_id(const df_diag_query *q) { return q ? q->id : 0; }

uint64_t df_diag_query_next_stream_id(df_diag_query *q) {
    return q ? atomic_fetch_add_explicit(&q->next_stream, 1, memory_order_relaxed) : 0;
}

/*
 * Takes the lowest-listed free lane of `kind`, else a new lane with the
 * next id.  Returns the lane id, or 0 when out of memory.
 */
static uint64_t lane_acquire(df_diag_query *q, uint8_t kind) {
    uint64_t id = 0;
    pthread_mutex_lock(&q->lane_mu);
    for (uint32_t i = 0; i < q->nlanes && !id; i++) {
        if (q->lanes[i].kind == kind && !q->lanes[i].busy) {
            q->lanes[i].busy = 1;
            id = q->lanes[i].id;
        }
    }
    if (!id) {
        if (DF_ARRAY_RESERVE(q->lanes, q->lanes_cap, q->nlanes + 1, 8, NULL) == DF_OK) {
            id = q->nlanes + 1;
            q->lanes[q->nlanes++] = (df_diag_lane){.id = id, .kind = kind, .busy = 1};
        }
    }
    pthread_mutex_unlock(&q->lane_mu);
    return id;
}

df_diag_span df_diag_query_planning_begin(df_diag_query *q) {
    if (!q || !traced_now(q->op)) return DF_DIAG_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_get();
    df_diag_frame *f = t ? frame_next(t) : NULL;
    if (!f) return DF_DIAG_SPAN_NONE;
    df_diag_operation *op = q->op;
    f->kind = DF_DIAG_SK_PLANNING;
    f->op = op;
    f->query = q;
    f->ident = base_ident(op, DF_DIAG_TS_WALL_CLOCK);
    f->ident.query_execution_id = q->id;
    f->ident.query_scope = q->scope;
    f->ident.query_owner_id = atomic_load(&q->owner_id);
    f->track = track(DF_DIAG_TK_PLANNING, op->id, q->id, 0);
    write_instant(t, op, DF_DIAG_IK_QUERY, track(DF_DIAG_TK_QUERY, op->id, q->id, 0), &f->ident, 0);
    return frame_push(t, f, true, DF_DIAG_EVF_CONTEXT);
}

/* Fills a task-context frame holding runtime lane `lane` of q. */
static void task_frame(df_diag_frame *f, df_diag_query *q, uint64_t lane, int64_t partition) {
    f->kind = DF_DIAG_SK_TASK;
    f->op = q->op;
    f->query = q;
    f->lane_acquired = 1;
    f->ident = base_ident(q->op, DF_DIAG_TS_ACTIVE);
    f->ident.query_execution_id = q->id;
    f->ident.worker_lane_id = lane;
    f->ident.worker_kind = DF_DIAG_WK_RUNTIME;
    f->ident.operator_partition = partition;
    f->ident.activity = DF_DIAG_ACTIVITY_SPAWNED_TASK;
    f->ident.profile_context_id = df__diag_next_context_id();
    f->track = track(DF_DIAG_TK_NONE, 0, 0, 0);
}

df_diag_span df__diag_task_begin(df_diag_query *q, int64_t partition) {
    if (!traced_now(q->op)) return DF_DIAG_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_get();
    df_diag_frame *f = t ? frame_next(t) : NULL;
    if (!f) return DF_DIAG_SPAN_NONE;
    uint64_t lane = lane_acquire(q, DF_DIAG_WK_RUNTIME);
    if (!lane) return DF_DIAG_SPAN_NONE;
    task_frame(f, q, lane, partition);
    return frame_push(t, f, true, DF_DIAG_EVF_CONTEXT);
}

/* ------------------------------------------------------------------------ */
/* Operator activities and the budget.                                       */

/* Takes one budget unit of op (per-thread batches for large budgets). */
static bool budget_reserve(df_diag_thread *t, df_diag_operation *op) {
    if (t->budget_uid == op->uid && t->budget_units > 0) {
        t->budget_units--;
        return true;
    }
    uint64_t batch = op->budget >= BUDGET_BATCH_MIN_LIMIT ? BUDGET_BATCH : 1;
    uint64_t used = atomic_fetch_add_explicit(&op->budget_used, batch, memory_order_relaxed);
    if (used >= op->budget) return false;
    uint64_t got = DF_MIN(batch, op->budget - used);
    t->budget_uid = op->uid;
    t->budget_units = got - 1;
    return true;
}

/* Emits the operation's single truncation marker (first refusal only). */
static void budget_refused(df_diag_thread *t, df_diag_operation *op) {
    if (atomic_exchange(&op->truncated, 1)) return;
    df_diag_ident id = base_ident(op, DF_DIAG_TS_NONE);
    write_instant(t, op, DF_DIAG_IK_TRUNCATED, track(DF_DIAG_TK_OPERATION, op->id, 0, 0), &id, op->budget);
}

/*
 * Resolves the worker lane of a new activity of q on thread t (lanes, not
 * threads, are what activities belong to):
 * the nearest enclosing activity or task of q on this thread lends its lane
 * (*nested tells whether that was an activity).  Returns false when no
 * enclosing frame exists; the caller then picks coordinator or external.
 */
static bool inherit_lane(const df_diag_thread *t, const df_diag_query *q, uint64_t *lane,
                         uint8_t *kind, bool *nested) {
    for (uint32_t i = atomic_load_explicit(&t->depth, memory_order_relaxed); i-- > 0;) {
        const df_diag_frame *f = &t->frames[i];
        if (f->query != q || (f->kind != DF_DIAG_SK_ACTIVITY && f->kind != DF_DIAG_SK_TASK)) continue;
        *lane = f->ident.worker_lane_id;
        *kind = f->ident.worker_kind;
        *nested = f->kind == DF_DIAG_SK_ACTIVITY;
        return true;
    }
    return false;
}

df_diag_span df__diag_activity_begin(df_diag_query *q, const df_diag_node *node,
                                     df_diag_activity activity, int64_t partition,
                                     uint64_t stream_id) {
    df_diag_operation *op = q->op;
    if (!traced_now(op) || !node) return DF_DIAG_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_get();
    df_diag_frame *f = t ? frame_next(t) : NULL;
    if (!f) return DF_DIAG_SPAN_NONE;
    uint64_t lane = 0;
    uint8_t kind = DF_DIAG_WK_COORDINATOR;
    bool nested = false, acquired = false;
    if (!inherit_lane(t, q, &lane, &kind, &nested) && partition != 0) {
        kind = DF_DIAG_WK_EXTERNAL;
        lane = lane_acquire(q, kind);
        if (!lane) return DF_DIAG_SPAN_NONE;
        acquired = true;
    }
    if (!budget_reserve(t, op)) {
        budget_refused(t, op);
        if (nested) return DF_DIAG_SPAN_NONE; /* only task roots survive the budget */
    }
    f->kind = DF_DIAG_SK_ACTIVITY;
    f->op = op;
    f->query = q;
    f->name_id = node->name_id;
    f->lane_acquired = acquired;
    f->ident = base_ident(op, DF_DIAG_TS_ACTIVE);
    f->ident.query_execution_id = q->id;
    f->ident.worker_lane_id = lane;
    f->ident.worker_kind = kind;
    f->ident.node_id = node->node_id;
    f->ident.parent_node_id = node->parent_node_id;
    f->ident.operator_partition = partition;
    f->ident.execution_stream_id = stream_id;
    f->ident.activity = (uint8_t)activity;
    f->track = track(DF_DIAG_TK_WORKER, op->id, q->id, lane);
    return frame_push(t, f, true, DF_DIAG_EVF_CONTEXT);
}

df_diag_async_span df__diag_await_output_begin(df_diag_query *q, int64_t node_id, int64_t partition,
                                               uint64_t stream_id) {
    df_diag_operation *op = q->op;
    if (!traced_now(op) || stream_id == 0) return DF_DIAG_ASYNC_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_get();
    if (!t) return DF_DIAG_ASYNC_SPAN_NONE;
    if (!budget_reserve(t, op)) {
        budget_refused(t, op);
        return DF_DIAG_ASYNC_SPAN_NONE;
    }
    df_diag_frame f = {
        .serial = df__diag_serial(t),
        .begin_ns = df_now_ns(),
        .op = op,
        .query = q,
        .kind = DF_DIAG_SK_AWAIT,
        .track = track(DF_DIAG_TK_STREAM, op->id, q->id, stream_id),
        .ident = base_ident(op, DF_DIAG_TS_WALL_CLOCK),
    };
    f.ident.query_execution_id = q->id;
    f.ident.node_id = node_id;
    f.ident.operator_partition = partition;
    f.ident.execution_stream_id = stream_id;
    f.ident.activity = DF_DIAG_ACTIVITY_AWAIT_OUTPUT;
    if (!write_begin(t, &f, 0)) return DF_DIAG_ASYNC_SPAN_NONE;
    return (df_diag_async_span){op, f.serial, q->id, stream_id};
}

void df_diag_async_span_end(df_diag_async_span *s, df_diag_result result) {
    if (!s || !s->op) return;
    df_diag_operation *op = s->op;
    df_diag_thread *t = traced_now(op) ? df__diag_thread_get() : NULL;
    if (t) {
        df_diag_track_key trk = track(DF_DIAG_TK_STREAM, op->id, s->query_id, s->stream_id);
        write_end(t, op, DF_DIAG_SK_AWAIT, s->serial, df_now_ns(), result, &trk, 0, 0, 0);
    }
    *s = DF_DIAG_ASYNC_SPAN_NONE;
}

/* ------------------------------------------------------------------------ */
/* Details and contexts.                                                     */

/* The track a detail under frame p goes to: its parent's, else the worker, owner or phases track. */
static df_diag_track_key child_track(const df_diag_frame *p) {
    if (p->track.kind != DF_DIAG_TK_NONE) return p->track;
    uint64_t op = p->ident.operation_id;
    if (p->query) return track(DF_DIAG_TK_WORKER, op, p->query->id, p->ident.worker_lane_id);
    if (p->ident.stage_owner_id) return track(DF_DIAG_TK_OWNER, op, 0, p->ident.stage_owner_id);
    return track(DF_DIAG_TK_PHASES, op, 0, 0);
}

df_diag_span df__diag_detail_begin(df_diag_detail detail) {
    if (detail <= DF_DIAG_DETAIL_NONE_ || detail >= DF_DIAG_DETAIL_COUNT_) return DF_DIAG_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_peek();
    uint32_t d = t ? atomic_load_explicit(&t->depth, memory_order_relaxed) : 0;
    if (d == 0) return DF_DIAG_SPAN_NONE;
    const df_diag_frame *p = &t->frames[d - 1];
    if (!traced_now(p->op)) return DF_DIAG_SPAN_NONE;
    if (p->ident.time_semantics == DF_DIAG_TS_ACTIVE && !budget_reserve(t, p->op)) {
        budget_refused(t, p->op);
        return DF_DIAG_SPAN_NONE;
    }
    df_diag_frame *f = frame_next(t);
    if (!f) return DF_DIAG_SPAN_NONE;
    f->kind = DF_DIAG_SK_DETAIL;
    f->op = p->op;
    f->query = p->query;
    f->name_id = (uint32_t)detail;
    f->ident = p->ident;
    f->ident.profile_context_id = 0;
    f->track = child_track(p);
    return frame_push(t, f, true, DF_DIAG_EVF_CONTEXT);
}

df_diag_context df__diag_context_capture(void) {
    df_diag_context ctx = {0};
    df_diag_thread *t = df__diag_thread_peek();
    uint32_t d = t ? atomic_load_explicit(&t->depth, memory_order_relaxed) : 0;
    if (d == 0) return ctx;
    const df_diag_frame *p = &t->frames[d - 1];
    if (!traced_now(p->op)) return ctx;
    ctx.op = p->op;
    ctx.query = p->query;
    ctx.parent_serial = p->serial;
    ctx.node_id = p->ident.node_id;
    ctx.partition = p->ident.operator_partition;
    ctx.stream_id = p->ident.execution_stream_id;
    ctx.stage = p->ident.stage;
    ctx.phase = p->ident.phase;
    ctx.stage_owner_id = p->ident.stage_owner_id;
    return ctx;
}

df_diag_span df_diag_context_enter(const df_diag_context *ctx) {
    if (!ctx || !ctx->op || !traced_now(ctx->op)) return DF_DIAG_SPAN_NONE;
    df_diag_thread *t = df__diag_thread_get();
    df_diag_frame *f = t ? frame_next(t) : NULL;
    if (!f) return DF_DIAG_SPAN_NONE;
    if (ctx->query) {
        uint64_t lane = lane_acquire(ctx->query, DF_DIAG_WK_RUNTIME);
        if (!lane) return DF_DIAG_SPAN_NONE;
        task_frame(f, ctx->query, lane, ctx->partition);
        f->ident.parent_node_id = ctx->node_id;
        f->ident.execution_stream_id = ctx->stream_id;
    } else {
        f->kind = DF_DIAG_SK_TASK;
        f->op = ctx->op;
        f->ident = base_ident(ctx->op, DF_DIAG_TS_WALL_CLOCK);
        f->ident.stage = ctx->stage;
        f->ident.phase = (uint8_t)ctx->phase;
        f->ident.stage_owner_id = ctx->stage_owner_id;
        f->ident.op_kind = ctx->stage ? (uint8_t)ctx->op->kind : 0;
        f->ident.activity = DF_DIAG_ACTIVITY_SPAWNED_TASK;
        f->ident.profile_context_id = df__diag_next_context_id();
        f->track = track(DF_DIAG_TK_NONE, 0, 0, 0);
    }
    return frame_push(t, f, true, DF_DIAG_EVF_CONTEXT);
}
