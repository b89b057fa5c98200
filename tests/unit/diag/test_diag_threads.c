/*
 * Multi-threaded span tests (also run under ThreadSanitizer): partition
 * tasks on a real worker pool, nested activities and details, a coordinator
 * thread that helps with queued tasks, and checks that every span ends,
 * worker lanes never overlap in time and activities sit inside their task.
 */
#include "diag_test_util.h"

#include "common/thread_pool.h"

#define PARTITIONS 48
#define POLLS 150

typedef struct job {
    df_diag_query *q;      /* the query */
    df_diag_node *nodes;   /* three nodes: root, middle, scan */
    int64_t partition;     /* partition index */
} job;

static void partition_task(void *arg) {
    job *j = arg;
    df_diag_span task = df_diag_task_begin(j->q, j->partition);
    uint64_t stream = df_diag_query_next_stream_id(j->q);
    df_diag_span ex = df_diag_activity_begin(j->q, &j->nodes[1], DF_DIAG_ACTIVITY_EXECUTE, j->partition, stream);
    df_diag_span_end(ex, DF_DIAG_RESULT_STREAM);
    for (int i = 0; i < POLLS; i++) {
        df_diag_span a = df_diag_activity_begin(j->q, &j->nodes[1], DF_DIAG_ACTIVITY_POLL_NEXT, j->partition, stream);
        df_diag_span b = df_diag_activity_begin(j->q, &j->nodes[2], DF_DIAG_ACTIVITY_POLL_NEXT, j->partition, stream);
        df_diag_span d = df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT);
        df_diag_span_end(d, DF_DIAG_RESULT_OK);
        df_diag_span_end(b, DF_DIAG_RESULT_BATCH);
        df_diag_span_end(a, i + 1 == POLLS ? DF_DIAG_RESULT_EOF : DF_DIAG_RESULT_BATCH);
    }
    df_diag_span_end(task, DF_DIAG_RESULT_OK);
}

/* Runs one traced preview whose partitions execute on `pool`; returns its log. */
static test_log run_parallel_preview(df_thread_pool *pool, uint64_t budget) {
    df_diag_capture *c = test_capture_start(budget, true);
    df_diag_operation *op = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
    df_diag_span exec = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_AND_COLLECT, 0);
    df_diag_query *q = NULL;
    DF_ASSERT_OK(df_diag_query_begin(op, DF_DIAG_QUERY_PREVIEW, NULL, &q, &err), &err);
    DF_ASSERT(q != NULL);
    df_diag_node nodes[3] = {{0, -1, df_diag_name_intern("CoalescePartitionsExec")},
                             {1, 0, df_diag_name_intern("FilterExec")},
                             {2, 1, df_diag_name_intern("DeltaScan")}};
    job jobs[PARTITIONS];
    df_task_group g;
    df_task_group_init(&g);
    df_diag_span root = df_diag_activity_begin(q, &nodes[0], DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1);
    for (int p = 0; p < PARTITIONS; p++) {
        jobs[p] = (job){q, nodes, p};
        DF_ASSERT_OK(df_thread_pool_submit(pool, &g, partition_task, &jobs[p], &err), &err);
    }
    df_task_group_wait(pool, &g); /* the coordinator helps: tasks nest in its root activity */
    df_task_group_destroy(&g);
    df_diag_span_end(root, DF_DIAG_RESULT_EOF);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_span_end(exec, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    return test_capture_finish(c);
}

static int cmp_begin_ts(const void *a, const void *b) {
    const test_span *x = *(const test_span *const *)a, *y = *(const test_span *const *)b;
    return x->begin.ts < y->begin.ts ? -1 : x->begin.ts > y->begin.ts;
}

DF_TEST(parallel_tasks_keep_lanes_exclusive_and_spans_balanced) {
    df_thread_pool *pool = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_thread_pool_create(6, "diagtest", &pool, &err), &err);
    test_log log = run_parallel_preview(pool, 0);
    df_thread_pool_destroy(pool);
    DF_ASSERT_EQ_UINT(log.unmatched_ends, 0);
    for (size_t i = 0; i < log.nspans; i++) DF_ASSERT(log.spans[i].ended);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_TASK), PARTITIONS);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_ACTIVITY), 1 + PARTITIONS * (1 + 2 * POLLS));
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_DETAIL), PARTITIONS * POLLS);
    /* Tasks holding the same lane never overlap; lanes are reused (<= pool size + helper). */
    const test_span *tasks[PARTITIONS];
    size_t nt = 0;
    uint64_t max_lane = 0;
    for (size_t i = 0; i < log.nspans; i++)
        if (log.spans[i].begin.h.kind == DF_DIAG_SK_TASK) {
            tasks[nt++] = &log.spans[i];
            max_lane = DF_MAX(max_lane, log.spans[i].begin.ident.worker_lane_id);
        }
    DF_ASSERT(max_lane >= 1 && max_lane <= 7);
    qsort(tasks, nt, sizeof tasks[0], cmp_begin_ts);
    for (size_t i = 0; i < nt; i++)
        for (size_t j = i + 1; j < nt; j++)
            if (tasks[j]->begin.ident.worker_lane_id == tasks[i]->begin.ident.worker_lane_id)
                DF_ASSERT(tasks[j]->begin.ts >= tasks[i]->end.ts);
    /* Every activity but the coordinator's root lies inside a task of its lane on its thread. */
    for (size_t i = 0; i < log.nspans; i++) {
        const test_span *a = &log.spans[i];
        if (a->begin.h.kind != DF_DIAG_SK_ACTIVITY || a->begin.ident.node_id == 0) continue;
        DF_ASSERT_EQ_INT(a->begin.ident.worker_kind, DF_DIAG_WK_RUNTIME);
        bool inside = false;
        for (size_t k = 0; k < nt && !inside; k++)
            inside = tasks[k]->begin.ident.worker_lane_id == a->begin.ident.worker_lane_id &&
                     tasks[k]->begin.h.tid == a->begin.h.tid && tasks[k]->begin.ts <= a->begin.ts &&
                     a->end.ts <= tasks[k]->end.ts;
        DF_ASSERT(inside);
        DF_ASSERT_EQ_UINT(a->begin.track.sub_id, a->begin.ident.worker_lane_id);
    }
    test_log_free(&log);
}

DF_TEST(parallel_budget_keeps_every_task_root) {
    df_thread_pool *pool = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_thread_pool_create(4, "diagtest", &pool, &err), &err);
    test_log log = run_parallel_preview(pool, 100);
    df_thread_pool_destroy(pool);
    size_t markers = 0;
    for (size_t i = 0; i < log.ninstants; i++) markers += log.instants[i].h.kind == DF_DIAG_IK_TRUNCATED;
    DF_ASSERT_EQ_UINT(markers, 1);
    size_t roots = 0, nested = 0;
    for (size_t i = 0; i < log.nspans; i++) {
        const test_span *a = &log.spans[i];
        if (a->begin.h.kind != DF_DIAG_SK_ACTIVITY) continue;
        if (a->begin.ident.node_id == 2) nested++;
        else roots++;
    }
    /* Task roots (node 1 under a task, plus the coordinator root) all survive. */
    DF_ASSERT_EQ_UINT(roots, 1 + PARTITIONS * (1 + POLLS));
    DF_ASSERT(nested <= 100);
    test_log_free(&log);
}

static void *thread_churn(void *arg) {
    df_diag_operation *op = NULL;
    df_error err = {0};
    (void)arg;
    for (int i = 0; i < 50; i++) {
        DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_MSSQL_WRITE, NULL, &op, &err), &err);
        df_diag_span s = df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 1);
        df_diag_span_end(s, DF_DIAG_RESULT_OK);
        df_diag_operation_end(op, DF_DIAG_RESULT_OK);
        df_diag_operation_destroy(op);
    }
    return NULL;
}

DF_TEST(short_lived_threads_hand_over_their_records) {
    df_diag_capture *c = test_capture_start(0, false);
    pthread_t th[8];
    for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, thread_churn, NULL);
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
    test_log log = test_capture_finish(c);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_OPERATION), 400);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_STAGE), 400);
    for (size_t i = 0; i < log.nspans; i++) DF_ASSERT(log.spans[i].ended);
    test_log_free(&log);
}

static void *stop_while_running(void *arg) {
    _Atomic int *stop = arg;
    df_diag_operation *op = NULL;
    df_error err = {0};
    while (!atomic_load(stop)) {
        DF_ASSERT_OK(df_diag_operation_begin(DF_DIAG_OP_PREVIEW, NULL, &op, &err), &err);
        df_diag_query *q = NULL;
        DF_ASSERT_OK(df_diag_query_begin(op, DF_DIAG_QUERY_PREVIEW, NULL, &q, &err), &err);
        df_diag_node n = {0, -1, 1};
        for (int i = 0; i < 100; i++)
            df_diag_span_end(df_diag_activity_begin(q, &n, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1), DF_DIAG_RESULT_BATCH);
        df_diag_operation_end(op, DF_DIAG_RESULT_OK);
        df_diag_operation_destroy(op);
    }
    return NULL;
}

DF_TEST(captures_start_and_stop_under_load) {
    _Atomic int stop = 0;
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, stop_while_running, (void *)&stop);
    for (int round = 0; round < 10; round++) {
        df_diag_capture *c = test_capture_start(0, round % 2 == 0);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        test_log log = test_capture_finish(c);
        DF_ASSERT_EQ_UINT(log.unmatched_ends, 0); /* operations begun earlier record nothing */
        test_log_free(&log);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
}
