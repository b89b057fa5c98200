/*
 * Trace scenarios for the report tests (see report_scenarios.h).  Spans are
 * written the way the diag writer writes them: a semantic-track event plus
 * a context slice on the thread's track with the same name, time and
 * identity, except await spans (semantic only) and task contexts (context
 * only).
 */
#include "report_scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Tracks of one operation. */
typedef struct optracks {
    uint64_t op;        /* operation id */
    uint64_t diag;      /* "Delta Funnel diagnostics" */
    uint64_t optrack;   /* "Operation [op-N]" */
    uint64_t phases;    /* ".../ phases" */
    uint64_t query;     /* ".../ query [q-1]" */
    uint64_t planning;  /* ".../ query [q-1] / planning" */
} optracks;

static optracks op_tracks(synth *s, uint64_t diag, uint64_t op) {
    optracks t = {.op = op, .diag = diag};
    t.optrack = synth_op_track(s, diag, op);
    t.phases = synth_phases_track(s, t.optrack, op);
    t.query = synth_query_track(s, t.optrack, op, 1);
    t.planning = synth_planning_track(s, t.phases, op, 1);
    return t;
}

/* A span on a semantic track mirrored on a thread track (ctx = 0: semantic only). */
static void span_begin(synth *s, uint64_t track, uint64_t ctx, uint64_t ts, const char *name, const synth_arg *a,
                       size_t n) {
    synth_begin(s, track, ts, SYNTH_PROFILE, name, a, n);
    if (ctx) synth_begin(s, ctx, ts, SYNTH_CONTEXT, name, a, n);
}

static void span_end(synth *s, uint64_t track, uint64_t ctx, uint64_t ts, const char *result) {
    synth_arg r[] = {SS("result", result)};
    synth_end(s, track, ts, SYNTH_PROFILE, result ? r : NULL, result ? 1 : 0);
    if (ctx) synth_end(s, ctx, ts, SYNTH_CONTEXT, result ? r : NULL, result ? 1 : 0);
}

static void root_begin(synth *s, const optracks *t, uint64_t ctx, uint64_t ts, const char *name, const char *kind,
                       int64_t scope) {
    synth_arg a[] = {SI("operation_id", t->op), SS("operation_kind", kind), SS("time_semantics", "wall_clock"),
                     SI("capture_scope_id", scope)};
    synth_instant(s, t->diag, ts, SYNTH_PROFILE, "Delta Funnel diagnostic group", NULL, 0);
    span_begin(s, t->optrack, ctx, ts, name, a, scope ? 4 : 3);
}

static void phase_begin(synth *s, const optracks *t, uint64_t ctx, uint64_t ts, const char *name) {
    synth_arg a[] = {SI("operation_id", t->op), SS("time_semantics", "wall_clock")};
    span_begin(s, t->phases, ctx, ts, name, a, N(a));
}

static void stage_begin(synth *s, const optracks *t, uint64_t track, uint64_t ctx, uint64_t ts, const char *name,
                        const char *category, const char *kind, int64_t owner) {
    synth_arg a[] = {SI("operation_id", t->op), SS("operation_kind", kind), SS("stage_name", name),
                     SS("stage_category", category), SS("time_semantics", "wall_clock"), SI("stage_owner_id", owner)};
    span_begin(s, track, ctx, ts, name, a, owner ? N(a) : N(a) - 1);
}

/* Query instant + planning span (and a planning detail). */
static void query_planning(synth *s, const optracks *t, uint64_t ctx, uint64_t ts, const char *scope, const char *owner) {
    synth_arg a[] = {SI("operation_id", t->op), SI("query_execution_id", 1), SS("query_scope", scope),
                     SS("time_semantics", "wall_clock"), SS("query_owner", owner)};
    size_t n = owner ? N(a) : N(a) - 1;
    synth_instant(s, t->query, ts, SYNTH_PROFILE, "DataFusion query", a, n);
    span_begin(s, t->planning, ctx, ts, "DataFusion query planning", a, N(a) - 1);
    span_begin(s, t->planning, ctx, ts + 100, "Delta scan planning", a, N(a) - 1);
    span_end(s, t->planning, ctx, ts + 200, NULL);
    if (owner) {
        synth_arg r[] = {SS("query_owner", owner), SS("result", "ok")};
        synth_end(s, t->planning, ts + 300, SYNTH_PROFILE, r, N(r));
        synth_end(s, ctx, ts + 300, SYNTH_CONTEXT, r, N(r));
    } else {
        span_end(s, t->planning, ctx, ts + 300, "ok");
    }
}

/* Operator activity identity. */
static size_t activity_args(synth_arg *a, uint64_t op, int64_t lane, const char *kind, int64_t node, int64_t parent,
                            int64_t part, int64_t stream) {
    size_t n = 0;
    a[n++] = SI("operation_id", op);
    a[n++] = SI("query_execution_id", 1);
    a[n++] = SI("worker_lane_id", lane);
    a[n++] = SS("worker_kind", kind);
    a[n++] = SI("node_id", node);
    if (parent >= 0) a[n++] = SI("parent_node_id", parent);
    a[n++] = SI("operator_partition", part);
    a[n++] = SI("execution_stream_id", stream);
    a[n++] = SS("activity", "poll_next");
    a[n++] = SS("time_semantics", "active");
    return n;
}

/* ------------------------------------------------------------------------ */

/* The body of the preview scenario; `finish` ends the root and the trace. */
static synth *preview(bool finish, bool truncated) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 100), t100 = synth_thread(s, 100, 100), t101 = synth_thread(s, 100, 101);
    uint64_t diag = synth_diag_track(s, proc);
    optracks t = op_tracks(s, diag, 1);
    uint64_t w0 = synth_worker_track(s, t.query, 1, 1, 0), w1 = synth_worker_track(s, t.query, 1, 1, 1);
    uint64_t st2 = synth_stream_track(s, t.query, 1, 1, 2);
    root_begin(s, &t, t100, 1000, "Delta Funnel preview", "preview", 0);
    phase_begin(s, &t, t100, 1100, "Planning");
    stage_begin(s, &t, t.phases, t100, 1200, "DataFrame planning", "delta_funnel.preview.phase", "preview", 0);
    query_planning(s, &t, t100, 1300, "preview", NULL);
    span_end(s, t.phases, t100, 1700, "ok");
    span_end(s, t.phases, t100, 1800, "ok");
    phase_begin(s, &t, t100, 2000, "Execution");
    stage_begin(s, &t, t.phases, t100, 2100, "Execute and collect", "delta_funnel.preview.phase", "preview", 0);
    synth_arg a[12];
    size_t n = activity_args(a, 1, 0, "coordinator", 0, -1, 0, 1);
    span_begin(s, w0, t100, 2200, "CoalescePartitionsExec", a, n);
    synth_arg task[] = {SI("operation_id", 1), SI("query_execution_id", 1), SI("worker_lane_id", 1),
                        SS("worker_kind", "runtime"), SI("operator_partition", 1), SS("activity", "spawned_task"),
                        SI("profile_context_id", 7), SS("context_name", "DataFusion task context"),
                        SS("time_semantics", "active")};
    synth_begin(s, t101, 2300, SYNTH_CONTEXT, "DataFusion task context", task, N(task));
    n = activity_args(a, 1, 1, "runtime", 1, 0, 1, 2);
    span_begin(s, w1, t101, 2350, "DeltaScanExec", a, n);
    synth_arg aw[] = {SI("operation_id", 1), SI("query_execution_id", 1), SI("node_id", 1), SI("operator_partition", 1),
                      SI("execution_stream_id", 2), SS("activity", "await_output"),
                      SS("execution_activity_name", "Await Delta scan output"), SS("time_semantics", "wall_clock")};
    span_begin(s, st2, 0, 2400, "Await Delta scan output", aw, N(aw));
    span_end(s, st2, 0, 2450, "ok");
    if (truncated) {
        synth_arg m[] = {SI("maximum_spans", 2)};
        synth_instant(s, t.optrack, 2410, SYNTH_PROFILE, "Operator activity trace truncated", m, N(m));
    }
    /* Frames. */
    uint64_t f_main = synth_frame(s, "main", "/usr/bin/dfapp", "/home/u/repo/src/main.c", 10);
    uint64_t f_run = synth_frame(s, "run_preview", "/usr/bin/dfapp", "/home/u/repo/src/preview.c", 20);
    uint64_t f_coal = synth_frame(s, "coalesce_next", "/usr/bin/dfapp", "/home/u/repo/src/exec/coalesce.c", 30);
    uint64_t f_thr = synth_frame(s, "start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6", NULL, 0);
    uint64_t f_wrk = synth_frame(s, "<tokio::runtime::blocking::task::BlockingTask<F> as core::future::Future>::poll",
                                 "/usr/bin/dfapp", NULL, 0);
    uint64_t f_scan = synth_frame(s, "df_scan_next", "/usr/bin/dfapp", "/home/u/repo/src/scan.c", 40);
    uint64_t f_dec = synth_frame(s, "decode_plain.constprop.0", "/usr/bin/dfapp", "/home/u/repo/src/decode.c", 50);
    uint64_t f_unres = synth_frame(s, NULL, "/usr/lib/x86_64-linux-gnu/libz.so.1", NULL, 0);
    uint64_t st_coal[] = {f_main, f_run, f_coal}, st_scan[] = {f_thr, f_wrk, f_scan};
    uint64_t st_dec[] = {f_thr, f_wrk, f_scan, f_dec}, st_unres[] = {f_thr, f_wrk, f_unres};
    synth_sample(s, 2250, 100, 100, 0, st_coal, 3, false);  /* exact: Execute and collect */
    synth_sample(s, 2360, 100, 101, 1, st_scan, 3, false);  /* identity rule */
    synth_sample(s, 2420, 100, 101, 1, st_dec, 4, false);   /* identity rule (await does not match) */
    synth_sample(s, 2460, 100, 101, 1, st_dec, 4, true);    /* unwind error */
    synth_sample(s, 2470, 100, 101, 1, NULL, 0, false);     /* missing stack */
    synth_sample(s, 2480, 100, 101, 1, st_unres, 3, false); /* unresolved leaf */
    synth_sample(s, 2490, 100, 102, 2, st_scan, 3, false);  /* thread without contexts: unattributed */
    synth_sample(s, 5000, 100, 100, 0, st_coal, 3, false);  /* after the operation: not eligible */
    synth_sample(s, 2300, 999, 999, 3, st_coal, 3, false);  /* another process: ignored */
    span_end(s, w1, t101, 2500, "batch");
    synth_end(s, t101, 2550, SYNTH_CONTEXT, NULL, 0);
    span_end(s, w0, t100, 2600, "eof");
    span_end(s, t.phases, t100, 2700, "ok");
    span_end(s, t.phases, t100, 2800, "ok");
    phase_begin(s, &t, t100, 2900, "Finalization");
    span_end(s, t.phases, t100, 2950, "ok");
    if (finish) {
        span_end(s, t.optrack, t100, 3000, "ok");
        synth_stats(s, 0);
        synth_tracing_disabled(s);
    }
    return s;
}

synth *scenario_preview(void) { return preview(true, false); }
synth *scenario_incomplete(void) { return preview(false, false); }
synth *scenario_truncated(void) { return preview(true, true); }

synth *scenario_write_all(void) {
    synth *s = synth_new();
    synth_config(s, 100);
    uint64_t proc = synth_process(s, 200), t200 = synth_thread(s, 200, 200);
    uint64_t diag = synth_diag_track(s, proc);
    optracks t = op_tracks(s, diag, 1);
    uint64_t o1 = synth_owner_track(s, t.optrack, 1, 1), o2 = synth_owner_track(s, t.optrack, 1, 2);
    root_begin(s, &t, t200, 100, "Delta Funnel SQL Server write_all", "write_all", 0);
    phase_begin(s, &t, t200, 200, "Execution");
    stage_begin(s, &t, t.phases, t200, 300, "Execute output workflow", "delta_funnel.write_all.execution", "write_all", 0);
    stage_begin(s, &t, o1, t200, 400, "Execute output", "delta_funnel.write_all.output", "write_all", 1);
    query_planning(s, &t, t200, 500, "mssql_output", "west_orders");
    stage_begin(s, &t, o1, t200, 900, "Write batch to SQL Server", "delta_funnel.write.batch", "write_all", 1);
    uint64_t f1 = synth_frame(s, "tds_write_batch", "/usr/lib/libdf.so", "/build/src/mssql/bulk.c", 77);
    uint64_t st1[] = {f1};
    synth_sample(s, 950, 200, 200, 0, st1, 1, false);
    span_end(s, o1, t200, 1000, "ok");
    span_end(s, o1, t200, 1100, "ok");
    stage_begin(s, &t, o2, t200, 1200, "Execute output", "delta_funnel.write_all.output", "write_all", 2);
    stage_begin(s, &t, o2, t200, 1300, "Connect to SQL Server", "delta_funnel.write.sql_server", "write_all", 2);
    synth_sample(s, 1350, 200, 200, 0, st1, 1, false);
    span_end(s, o2, t200, 1400, "error");
    span_end(s, o2, t200, 1500, "error");
    span_end(s, t.phases, t200, 1600, "error");
    span_end(s, t.phases, t200, 1700, "error");
    span_end(s, t.optrack, t200, 1800, "error");
    synth_tracing_disabled(s);
    return s;
}

synth *scenario_scoped(void) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 300), th = synth_thread(s, 300, 300);
    uint64_t diag = synth_diag_track(s, proc);
    for (uint64_t op = 1; op <= 2; op++) {
        optracks t = op_tracks(s, diag, op);
        uint64_t base = op * 10000;
        root_begin(s, &t, th, base, "Delta Funnel preview", "preview", (int64_t)(op + 4));
        phase_begin(s, &t, th, base + 100, "Execution");
        uint64_t f = synth_frame(s, op == 1 ? "first_op_work" : "second_op_work", "/usr/bin/app", NULL, 0);
        synth_sample(s, base + 150, 300, 300, 0, &f, 1, false);
        span_end(s, t.phases, th, base + 200, "ok");
        span_end(s, t.optrack, th, base + 300, "ok");
    }
    synth_tracing_disabled(s);
    return s;
}

synth *scenario_ambiguous(void) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 400), ta = synth_thread(s, 400, 401), tb = synth_thread(s, 400, 402);
    uint64_t tc = synth_thread(s, 400, 403);
    uint64_t diag = synth_diag_track(s, proc);
    optracks t1 = op_tracks(s, diag, 1), t2 = op_tracks(s, diag, 2);
    root_begin(s, &t1, ta, 1000, "Delta Funnel preview", "preview", 0);
    root_begin(s, &t2, tb, 1100, "Delta Funnel preview", "preview", 0);
    uint64_t f = synth_frame(s, "work", "/usr/bin/app", NULL, 0);
    /* Thread 403 has no context yet: inside both operations -> ambiguous (2 operations, no leaf). */
    synth_sample(s, 1200, 400, 403, 0, &f, 1, false);
    /* Operation 1: query planning starts before "Execute and collect", so they are sibling branches. */
    phase_begin(s, &t1, ta, 1300, "Execution");
    synth_arg q[] = {SI("operation_id", 1), SI("query_execution_id", 1), SS("query_scope", "preview"),
                     SS("time_semantics", "wall_clock")};
    span_begin(s, t1.planning, 0, 1390, "DataFusion query planning", q, N(q));
    stage_begin(s, &t1, t1.phases, ta, 1400, "Execute and collect", "delta_funnel.preview.phase", "preview", 0);
    synth_arg task[] = {SI("operation_id", 1), SI("query_execution_id", 1), SI("worker_lane_id", 1),
                        SS("worker_kind", "runtime"), SI("operator_partition", 1), SS("activity", "spawned_task"),
                        SI("profile_context_id", 9), SS("context_name", "DataFusion task context"),
                        SS("time_semantics", "active")};
    synth_begin(s, tc, 1420, SYNTH_CONTEXT, "DataFusion task context", task, N(task));
    /* The pool task (query 1) matches the planning node and the stage, on parallel branches. */
    synth_sample(s, 1430, 400, 403, 0, &f, 1, false);
    /* Thread 401 is exactly in "Execute and collect": direct despite the parallel branch. */
    synth_sample(s, 1440, 400, 401, 0, &f, 1, false);
    span_end(s, t1.planning, 0, 1445, "ok");
    synth_end(s, tc, 1450, SYNTH_CONTEXT, NULL, 0);
    span_end(s, t1.phases, ta, 1470, "ok");
    span_end(s, t1.phases, ta, 1480, "ok");
    span_end(s, t2.optrack, tb, 1490, "ok");
    span_end(s, t1.optrack, ta, 1500, "ok");
    synth_tracing_disabled(s);
    return s;
}

synth *scenario_missing_identity(void) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 500), th = synth_thread(s, 500, 500);
    uint64_t diag = synth_diag_track(s, proc);
    optracks t = op_tracks(s, diag, 1);
    uint64_t w = synth_worker_track(s, t.query, 1, 1, 0);
    root_begin(s, &t, th, 100, "Delta Funnel preview", "preview", 0);
    synth_arg a[] = {SI("operation_id", 1), SI("query_execution_id", 1), SI("node_id", 0), SI("operator_partition", 0),
                     SI("execution_stream_id", 1), SS("activity", "poll_next"), SS("time_semantics", "active")};
    span_begin(s, w, th, 200, "FilterExec", a, N(a)); /* no worker_lane_id / worker_kind */
    span_end(s, w, th, 300, "eof");
    span_end(s, t.optrack, th, 400, "ok");
    synth_tracing_disabled(s);
    return s;
}

synth *scenario_empty(void) {
    synth *s = synth_new();
    synth_config(s, 1000);
    synth_process(s, 600);
    uint64_t th = synth_thread(s, 600, 600);
    synth_begin(s, th, 10, SYNTH_CONTEXT, "unrelated", NULL, 0);
    synth_end(s, th, 20, SYNTH_CONTEXT, NULL, 0);
    uint64_t f = synth_frame(s, "idle", "/usr/bin/app", NULL, 0);
    synth_sample(s, 15, 600, 600, 0, &f, 1, false);
    synth_tracing_disabled(s);
    return s;
}

synth *scenario_wide(const char *owner_name) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 10), th = synth_thread(s, 10, 10);
    uint64_t diag = synth_diag_track(s, proc), op = synth_op_track(s, diag, 1), ph = synth_phases_track(s, op, 1);
    synth_arg root[] = {SI("operation_id", 1), SS("operation_kind", "write_all"), SS("time_semantics", "wall_clock")};
    synth_begin(s, op, 100, SYNTH_PROFILE, "Delta Funnel SQL Server write_all", root, 3);
    synth_begin(s, th, 100, SYNTH_CONTEXT, "Delta Funnel SQL Server write_all", root, 3);
    synth_arg ph_args[] = {SI("operation_id", 1), SS("time_semantics", "wall_clock")};
    synth_begin(s, ph, 200, SYNTH_PROFILE, "Execution", ph_args, 2);
    synth_begin(s, th, 200, SYNTH_CONTEXT, "Execution", ph_args, 2);
    uint64_t f1 = synth_frame(s, "alpha", "/bin/a", NULL, 0), f2 = synth_frame(s, "beta", "/bin/a", NULL, 0);
    synth_sample(s, 250, 10, 10, 0, &f1, 1, false);
    synth_sample(s, 260, 10, 10, 0, &f2, 1, false);
    synth_arg r[] = {SS("result", "ok")};
    for (int i = 0; i < 202; i++) {
        synth_arg st[] = {SI("operation_id", 1), SS("operation_kind", "write_all"), SS("stage_name", "Plan caches"),
                          SS("stage_category", "delta_funnel.write_all.planning"), SS("time_semantics", "wall_clock")};
        synth_begin(s, ph, 300 + (uint64_t)i * 10, SYNTH_PROFILE, "Plan caches", st, 5);
        synth_end(s, ph, 305 + (uint64_t)i * 10, SYNTH_PROFILE, r, 1);
    }
    if (owner_name) {
        uint64_t q = synth_query_track(s, op, 1, 1), pl = synth_planning_track(s, ph, 1, 1);
        synth_arg qa[] = {SI("operation_id", 1), SI("query_execution_id", 1), SS("query_scope", "mssql_output"),
                          SS("time_semantics", "wall_clock"), SS("query_owner", owner_name)};
        synth_instant(s, q, 2300, SYNTH_PROFILE, "DataFusion query", qa, 5);
        synth_begin(s, pl, 2300, SYNTH_PROFILE, "DataFusion query planning", qa, 5);
        synth_end(s, pl, 2310, SYNTH_PROFILE, r, 1);
    }
    synth_end(s, ph, 9000, SYNTH_PROFILE, r, 1);
    synth_end(s, th, 9000, SYNTH_CONTEXT, r, 1);
    synth_end(s, op, 9100, SYNTH_PROFILE, r, 1);
    synth_end(s, th, 9100, SYNTH_CONTEXT, r, 1);
    synth_tracing_disabled(s);
    return s;
}


/* ------------------------------------------------------------------------ */
/* Large deterministic workloads (benchmark and budget tests).               */

static uint64_t lcg(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

/* A pool of stack templates over `functions` names (frames interned once). */
typedef struct stack_pool {
    uint64_t *frames;   /* templates * depth frame iids */
    uint32_t templates; /* count */
    uint32_t depth;     /* frames per template */
} stack_pool;

static stack_pool make_pool(synth *s, uint32_t templates, uint32_t depth, uint32_t functions) {
    stack_pool p = {calloc((size_t)templates * depth, sizeof(uint64_t)), templates, depth};
    uint64_t *fn = calloc(functions, sizeof *fn);
    if (!p.frames || !fn) abort();
    for (uint32_t i = 0; i < functions; i++) {
        char name[96], src[96];
        snprintf(name, sizeof name, "deltafunnel::exec::operator_%u::poll_batch<T%u>", i, i % 7);
        snprintf(src, sizeof src, "/build/deltafunnel/src/exec/op_%u.c", i % 64);
        fn[i] = synth_frame(s, name, i % 5 ? "/usr/lib/libdeltafunnel.so" : "/usr/lib/x86_64-linux-gnu/libc.so.6",
                            src, (int)(10 + i % 300));
    }
    uint64_t st = 42;
    for (uint32_t t = 0; t < templates; t++)
        for (uint32_t d = 0; d < depth; d++)
            /* Shared prefixes (low depths pick from few functions) make a realistic call tree. */
            p.frames[(size_t)t * depth + d] = fn[(d == 0 ? 0 : lcg(&st) % (d < 3 ? 4 : functions))];
    free(fn);
    return p;
}

synth *scenario_large(uint32_t ops, uint32_t stages, uint64_t samples, uint32_t threads, uint32_t depth,
                      uint32_t functions) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 700), tmain = synth_thread(s, 700, 700);
    uint64_t *tw = calloc(threads + 1, sizeof *tw), *wt = calloc(threads + 1, sizeof *wt);
    if (!tw || !wt) abort();
    for (uint32_t i = 1; i <= threads; i++) tw[i] = synth_thread(s, 700, 700 + i);
    uint64_t diag = synth_diag_track(s, proc);
    const uint64_t OPLEN = 100000000; /* 100 ms per operation */
    stack_pool pool = make_pool(s, 1024, depth, functions);
    uint64_t st = 7;
    for (uint32_t k = 0; k < ops; k++) {
        optracks t = op_tracks(s, diag, k + 1);
        uint64_t base = 1000000 + (uint64_t)k * OPLEN;
        uint64_t stream = synth_stream_track(s, t.query, k + 1, 1, 1);
        for (uint32_t i = 1; i <= threads; i++) wt[i] = synth_worker_track(s, t.query, k + 1, 1, i);
        root_begin(s, &t, tmain, base, "Delta Funnel preview", "preview", 0);
        phase_begin(s, &t, tmain, base + 1000, "Planning");
        stage_begin(s, &t, t.phases, tmain, base + 2000, "DataFrame planning", "delta_funnel.preview.phase", "preview", 0);
        query_planning(s, &t, tmain, base + 3000, "preview", NULL);
        span_end(s, t.phases, tmain, base + 4000, "ok");
        span_end(s, t.phases, tmain, base + 5000, "ok");
        phase_begin(s, &t, tmain, base + 10000, "Execution");
        stage_begin(s, &t, t.phases, tmain, base + 20000, "Execute and collect", "delta_funnel.preview.phase", "preview", 0);
        /* `stages` activities per lane: an outer poll_next, a nested scan poll and an await on lane 1's stream. */
        uint64_t span = (OPLEN - 100000) / (stages ? stages : 1);
        for (uint32_t i = 1; i <= threads; i++) {
            for (uint32_t a = 0; a < stages; a++) {
                uint64_t b = base + 30000 + (uint64_t)a * span;
                synth_arg x[12];
                size_t n = activity_args(x, k + 1, i, "runtime", 1, 0, i, i);
                span_begin(s, wt[i], tw[i], b, "ProjectionExec", x, n);
                n = activity_args(x, k + 1, i, "runtime", 2, 1, i, i);
                span_begin(s, wt[i], tw[i], b + span / 8, "DeltaScanExec", x, n);
                if (i == 1) {
                    synth_arg aw[] = {SI("operation_id", k + 1), SI("query_execution_id", 1), SI("node_id", 2),
                                      SI("operator_partition", 1), SI("execution_stream_id", 1),
                                      SS("activity", "await_output"),
                                      SS("execution_activity_name", "Await Delta scan output"),
                                      SS("time_semantics", "wall_clock")};
                    span_begin(s, stream, 0, b + span / 4, "Await Delta scan output", aw, N(aw));
                    span_end(s, stream, 0, b + span / 2, "ok");
                }
                span_end(s, wt[i], tw[i], b + span * 3 / 4, "batch");
                span_end(s, wt[i], tw[i], b + span * 7 / 8, "batch");
            }
        }
        /* Samples of this operation, spread over the main thread and the lanes. */
        uint64_t per_op = samples / ops + (k < samples % ops ? 1 : 0);
        for (uint64_t j = 0; j < per_op; j++) {
            uint32_t th = (uint32_t)(j % (threads + 1));
            uint64_t ts = base + 30000 + lcg(&st) % (OPLEN - 200000);
            const uint64_t *fr = pool.frames + (size_t)(lcg(&st) % pool.templates) * pool.depth;
            synth_sample(s, ts, 700, th ? 700 + th : 700, th % 16, fr, pool.depth, false);
        }
        span_end(s, t.phases, tmain, base + OPLEN - 50000, "ok");
        span_end(s, t.phases, tmain, base + OPLEN - 40000, "ok");
        phase_begin(s, &t, tmain, base + OPLEN - 30000, "Finalization");
        stage_begin(s, &t, t.phases, tmain, base + OPLEN - 20000, "Format text", "delta_funnel.preview.phase", "preview", 0);
        span_end(s, t.phases, tmain, base + OPLEN - 15000, "ok");
        span_end(s, t.phases, tmain, base + OPLEN - 10000, "ok");
        span_end(s, t.optrack, tmain, base + OPLEN - 1000, "ok");
    }
    synth_stats(s, 0);
    synth_tracing_disabled(s);
    free(pool.frames);
    free(tw);
    free(wt);
    return s;
}

synth *scenario_by_name(const char *name) {
    if (!strcmp(name, "preview")) return scenario_preview();
    if (!strcmp(name, "write_all")) return scenario_write_all();
    if (!strcmp(name, "incomplete")) return scenario_incomplete();
    if (!strcmp(name, "scoped")) return scenario_scoped();
    if (!strcmp(name, "ambiguous")) return scenario_ambiguous();
    if (!strcmp(name, "truncated")) return scenario_truncated();
    if (!strcmp(name, "missing_identity")) return scenario_missing_identity();
    if (!strcmp(name, "empty")) return scenario_empty();
    if (!strcmp(name, "wide")) return scenario_wide("west_orders");
    return NULL;
}
