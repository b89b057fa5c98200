/*
 * Writes a Perfetto trace of a deterministic synthetic workload, for the
 * pytest checks in tests/python/test_diag_trace.py (which decode it with
 * Perfetto's published protos).
 *
 *   diag_trace_tool OUT.pftrace [--backend auto|perf|timer] [--hz N]
 *                   [--max-spans N] [--partitions N] [--scoped] [--no-sampling]
 *
 * Workload: one preview (phases, the six preview stages, one query with its
 * planning span and details, partition tasks on a 3-thread pool with nested
 * operator activities, await spans and object-store details; the
 * "BurnExec" activities burn CPU in diag_tool_burn(), nothing else does) and
 * one write_all (owner stages, per-batch stages, protocol details under the
 * writer finalization).  Prints one JSON line of capture statistics.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/thread_pool.h"
#include "diag/capture.h"
#include "diag/diag.h"

#define BURN_NS (4u * 1000u * 1000u)

/* Burns `ns` of this thread's CPU time; samples inside it must land in BurnExec activities. */
__attribute__((noinline)) uint64_t diag_tool_burn(uint64_t ns) {
    uint64_t end = df_thread_cpu_ns() + ns, x = 0;
    while (df_thread_cpu_ns() < end)
        for (int i = 0; i < 5000; i++) x += df_hash_u64(x ^ (uint64_t)i);
    return x;
}

typedef struct part {
    df_diag_query *q;         /* traced query */
    const df_diag_node *nodes;/* plan nodes: 0 root, 1 burn, 2 scan */
    int64_t partition;        /* partition index */
} part;

static void run_partition(void *arg) {
    part *p = arg;
    df_diag_span task = df_diag_task_begin(p->q, p->partition);
    uint64_t stream = df_diag_query_next_stream_id(p->q);
    df_diag_span_end(df_diag_activity_begin(p->q, &p->nodes[1], DF_DIAG_ACTIVITY_EXECUTE, p->partition, stream),
                     DF_DIAG_RESULT_STREAM);
    for (int batch = 0; batch < 4; batch++) {
        df_diag_span burn = df_diag_activity_begin(p->q, &p->nodes[1], DF_DIAG_ACTIVITY_POLL_NEXT, p->partition, stream);
        df_diag_span scan = df_diag_activity_begin(p->q, &p->nodes[2], DF_DIAG_ACTIVITY_POLL_NEXT, p->partition, stream);
        df_diag_async_span aw = df_diag_await_output_begin(p->q, p->nodes[2].node_id, p->partition, stream);
        df_diag_span io = df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT);
        df_diag_span_end(io, DF_DIAG_RESULT_OK);
        df_diag_async_span_end(&aw, DF_DIAG_RESULT_OK);
        df_diag_span_end(scan, DF_DIAG_RESULT_BATCH);
        diag_tool_burn(BURN_NS);
        df_diag_span_end(burn, batch == 3 ? DF_DIAG_RESULT_EOF : DF_DIAG_RESULT_BATCH);
    }
    df_diag_span_end(task, DF_DIAG_RESULT_OK);
}

static void stage(df_diag_operation *op, df_diag_stage st, uint64_t owner, df_diag_result r) {
    df_diag_span_end(df_diag_stage_begin(op, st, owner), r);
}

static int run_preview(df_thread_pool *pool, int partitions) {
    df_error err = {0};
    df_diag_operation *op = NULL;
    if (df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err)) return 1;
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_PLANNING);
    df_diag_query *q = NULL;
    if (df_diag_query_begin(op, DF_DIAG_QUERY_PREVIEW, NULL, &q, &err)) return 1;
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
    df_diag_span pl = df_diag_query_planning_begin(q);
    df_diag_span_end(df_diag_detail_begin(DF_DIAG_DETAIL_DELTA_SCAN_PLANNING), DF_DIAG_RESULT_OK);
    df_diag_span_end(pl, DF_DIAG_RESULT_OK);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    stage(op, DF_DIAG_STAGE_PHYSICAL_PLANNING, 0, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    ph = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    stage(op, DF_DIAG_STAGE_STREAM_SETUP, 0, DF_DIAG_RESULT_OK);
    st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    df_diag_node nodes[3] = {{0, -1, df_diag_name_intern("CoalescePartitionsExec")},
                             {1, 0, df_diag_name_intern("BurnExec")},
                             {2, 1, df_diag_name_intern("DeltaScanExec")}};
    part parts[64];
    df_task_group g;
    df_task_group_init(&g);
    df_diag_span root = df_diag_activity_begin(q, &nodes[0], DF_DIAG_ACTIVITY_POLL_NEXT, 0, df_diag_query_next_stream_id(q));
    for (int i = 0; i < partitions && i < 64; i++) {
        parts[i] = (part){q, nodes, i};
        if (df_thread_pool_submit(pool, &g, run_partition, &parts[i], &err)) return 1;
    }
    df_task_group_wait(pool, &g);
    df_task_group_destroy(&g);
    df_diag_span_end(root, DF_DIAG_RESULT_EOF);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    ph = df_diag_phase_begin(op, DF_DIAG_PHASE_FINALIZATION);
    stage(op, DF_DIAG_STAGE_FORMAT_TEXT, 0, DF_DIAG_RESULT_OK);
    stage(op, DF_DIAG_STAGE_FORMAT_HTML, 0, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    printf("\"preview_operation_id\": %llu, ", (unsigned long long)df_diag_operation_id(op));
    df_diag_operation_destroy(op);
    return 0;
}

static int run_write_all(void) {
    df_error err = {0};
    df_diag_operation *op = NULL;
    if (df_diag_operation_begin(DF_DIAG_OP_WRITE_ALL, NULL, &op, &err)) return 1;
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_PLANNING);
    stage(op, DF_DIAG_STAGE_PLAN_OUTPUTS, 0, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    ph = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    df_diag_span wf = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_OUTPUT_WORKFLOW, 0);
    for (uint64_t owner = 1; owner <= 2; owner++) {
        df_diag_span out = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_OUTPUT, owner);
        df_diag_query *q = NULL;
        if (df_diag_query_begin(op, DF_DIAG_QUERY_MSSQL_OUTPUT, owner == 1 ? "orders" : "customers", &q, &err)) return 1;
        df_diag_span_end(df_diag_query_planning_begin(q), DF_DIAG_RESULT_OK);
        stage(op, DF_DIAG_STAGE_CONNECT, owner, DF_DIAG_RESULT_OK);
        for (int b = 0; b < 3; b++) {
            stage(op, DF_DIAG_STAGE_POLL_QUERY_BATCH, owner, DF_DIAG_RESULT_OK);
            stage(op, DF_DIAG_STAGE_WRITE_BATCH, owner, DF_DIAG_RESULT_OK);
        }
        df_diag_span fin = df_diag_stage_begin(op, DF_DIAG_STAGE_FINALIZE_WRITER, owner);
        df_diag_span_end(df_diag_detail_begin(DF_DIAG_DETAIL_FLUSH_SQL_SERVER_CONNECTION), DF_DIAG_RESULT_OK);
        df_diag_span_end(fin, owner == 2 ? DF_DIAG_RESULT_ERROR : DF_DIAG_RESULT_OK);
        df_diag_span_end(out, owner == 2 ? DF_DIAG_RESULT_ERROR : DF_DIAG_RESULT_OK);
    }
    df_diag_span_end(wf, DF_DIAG_RESULT_ERROR);
    df_diag_span_end(ph, DF_DIAG_RESULT_ERROR);
    df_diag_operation_end(op, DF_DIAG_RESULT_ERROR);
    printf("\"write_all_operation_id\": %llu, ", (unsigned long long)df_diag_operation_id(op));
    df_diag_operation_destroy(op);
    return 0;
}

static df_diag_backend parse_backend(const char *s) {
    if (strcmp(s, "perf") == 0) return DF_DIAG_BACKEND_PERF;
    if (strcmp(s, "timer") == 0) return DF_DIAG_BACKEND_TIMER;
    return DF_DIAG_BACKEND_AUTO;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.pftrace [--backend auto|perf|timer] [--hz N] [--max-spans N] "
                        "[--partitions N] [--scoped] [--no-sampling]\n", argv[0]);
        return 64;
    }
    df_diag_capture_options o = {.trace_path = argv[1], .sample_hz = 1000};
    int partitions = 6;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) o.backend = parse_backend(argv[++i]);
        else if (strcmp(argv[i], "--hz") == 0 && i + 1 < argc) o.sample_hz = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--max-spans") == 0 && i + 1 < argc) o.max_operator_activity_spans = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--partitions") == 0 && i + 1 < argc) partitions = atoi(argv[++i]);
        else if (strcmp(argv[i], "--scoped") == 0) o.operation_scoped = true;
        else if (strcmp(argv[i], "--no-sampling") == 0) o.sample_hz = 0;
        else {
            fprintf(stderr, "unknown argument: %s\n", argv[i]);
            return 64;
        }
    }
    df_error err = {0};
    df_thread_pool *pool = NULL;
    if (df_thread_pool_create(3, "dfworker", &pool, &err)) return 70;
    df_diag_capture *c = NULL;
    if (df_diag_capture_start(&o, &c, &err)) {
        fprintf(stderr, "capture: %s: %s\n", df_errkind_name(err.kind), err.message);
        df_thread_pool_destroy(pool);
        return 69;
    }
    printf("{");
    int rc = run_preview(pool, partitions) || run_write_all();
    df_diag_capture_stats st;
    if (df_diag_capture_stop(c, &st, &err)) {
        fprintf(stderr, "stop: %s\n", err.message);
        rc = 1;
    }
    printf("\"backend\": \"%s\", \"backend_reason\": \"%s\", \"requested_hz\": %u, \"effective_hz\": %.3f, "
           "\"samples\": %llu, \"sample_weight\": %llu, \"samples_lost\": %llu, \"threads_sampled\": %llu, "
           "\"threads_not_sampled\": %llu, "
           "\"events_written\": %llu, \"events_lost\": %llu, \"trace_bytes\": %llu, \"capture_scope_id\": %llu}\n",
           df_diag_backend_name(st.backend), st.backend_reason, st.requested_hz, st.effective_hz,
           (unsigned long long)st.samples, (unsigned long long)st.sample_weight, (unsigned long long)st.samples_lost,
           (unsigned long long)st.threads_sampled, (unsigned long long)st.threads_not_sampled,
           (unsigned long long)st.events_written,
           (unsigned long long)st.events_lost, (unsigned long long)st.trace_bytes,
           (unsigned long long)st.capture_scope_id);
    df_diag_capture_destroy(c);
    df_thread_pool_destroy(pool);
    return rc ? 1 : 0;
}
