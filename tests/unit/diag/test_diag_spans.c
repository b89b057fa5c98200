/* Unit tests for the span API: timings, identities, tracks, lanes, budget, misuse. */
#include "diag_test_util.h"

#include <pthread.h>
#include <time.h>

static void spin_ns(uint64_t ns) {
    uint64_t end = df_now_ns() + ns;
    while (df_now_ns() < end) {
    }
}

static df_diag_operation *begin_op(df_diag_op_kind kind) {
    df_diag_operation *op = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_operation_begin(kind, NULL, &op, &err), &err);
    return op;
}

static df_diag_query *begin_query(df_diag_operation *op, df_diag_query_scope scope, const char *owner) {
    df_diag_query *q = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_query_begin(op, scope, owner, &q, &err), &err);
    return q;
}

DF_TEST(vocabulary_uses_reference_spellings) {
    DF_ASSERT_EQ_STR(df_diag_op_span_name(DF_DIAG_OP_PREVIEW), "Delta Funnel preview");
    DF_ASSERT_EQ_STR(df_diag_op_span_name(DF_DIAG_OP_MSSQL_WRITE), "Delta Funnel SQL Server write");
    DF_ASSERT_EQ_STR(df_diag_op_span_name(DF_DIAG_OP_WRITE_ALL), "Delta Funnel SQL Server write_all");
    DF_ASSERT_EQ_STR(df_diag_op_kind_name(DF_DIAG_OP_MSSQL_WRITE), "mssql_write");
    DF_ASSERT_EQ_STR(df_diag_phase_name(DF_DIAG_PHASE_FINALIZATION), "Finalization");
    DF_ASSERT_EQ_STR(df_diag_stage_name(DF_DIAG_STAGE_EXECUTE_AND_COLLECT), "Execute and collect");
    DF_ASSERT_EQ_STR(df_diag_stage_category(DF_DIAG_STAGE_WRITE_BATCH), "delta_funnel.write.batch");
    DF_ASSERT_EQ_STR(df_diag_stage_category(DF_DIAG_STAGE_POLL_QUERY_BATCH), "delta_funnel.write.stream");
    DF_ASSERT_EQ_STR(df_diag_stage_timing_name(DF_DIAG_STAGE_FORMAT_HTML), "preview_format_html");
    DF_ASSERT(df_diag_stage_timing_name(DF_DIAG_STAGE_EXECUTE_OUTPUT) == NULL);
    DF_ASSERT_EQ_STR(df_diag_stage_name(DF_DIAG_STAGE_RESTORE_CACHE_ALIAS_AFTER_INSTALL_FAILURE),
                     "Restore cache alias after install failure");
    DF_ASSERT_EQ_STR(df_diag_detail_name(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT), "Object store transport");
    DF_ASSERT_EQ_STR(df_diag_result_name(DF_DIAG_RESULT_UNSET), "cancelled");
    DF_ASSERT_EQ_STR(df_diag_result_name(DF_DIAG_RESULT_EOF), "eof");
    DF_ASSERT_EQ_STR(df_diag_query_scope_name(DF_DIAG_QUERY_WRITE_ALL_CACHE_ALIAS), "write_all_cache_alias");
    DF_ASSERT_EQ_STR(df_diag_stage_name((df_diag_stage)999), "");
}

DF_TEST(preview_phase_timings_come_from_spans) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    DF_ASSERT(!df_diag_operation_traced(op));
    DF_ASSERT_EQ_UINT(df_diag_operation_id(op), 0);
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_PLANNING);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
    DF_ASSERT(df_diag_span_active(st));
    spin_ns(200000);
    df_diag_timing running = df_diag_operation_stage_timing(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
    DF_ASSERT_EQ_INT(running.state, DF_DIAG_TIMING_RUNNING);
    uint64_t e = df_diag_span_end(st, DF_DIAG_RESULT_OK);
    DF_ASSERT(e >= 200000);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    df_diag_timing t = df_diag_operation_stage_timing(op, DF_DIAG_STAGE_DATAFRAME_PLANNING, 0);
    DF_ASSERT_EQ_INT(t.state, DF_DIAG_TIMING_COMPLETED);
    DF_ASSERT_EQ_UINT(t.elapsed_ns, e);
    DF_ASSERT_EQ_UINT(t.count, 1);
    DF_ASSERT_EQ_INT(df_diag_operation_stage_timing(op, DF_DIAG_STAGE_FORMAT_TEXT, 0).state,
                     DF_DIAG_TIMING_NOT_STARTED);
    /* A write stage does not belong to a preview. */
    DF_ASSERT(!df_diag_span_active(df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 1)));
    df_diag_span fail = df_diag_stage_begin(op, DF_DIAG_STAGE_FORMAT_TEXT, 0);
    df_diag_span_end(fail, DF_DIAG_RESULT_ERROR);
    DF_ASSERT_EQ_INT(df_diag_operation_stage_timing(op, DF_DIAG_STAGE_FORMAT_TEXT, 0).state,
                     DF_DIAG_TIMING_FAILED);
    uint64_t total = df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    DF_ASSERT(total >= e);
    DF_ASSERT_EQ_UINT(df_diag_operation_end(op, DF_DIAG_RESULT_ERROR), total);
    df_diag_timing tt = df_diag_operation_total_timing(op);
    DF_ASSERT_EQ_INT(tt.state, DF_DIAG_TIMING_COMPLETED);
    DF_ASSERT_EQ_UINT(tt.elapsed_ns, total);
    DF_ASSERT_EQ_INT(df_diag_operation_phase_timing(op, DF_DIAG_PHASE_PLANNING).state,
                     DF_DIAG_TIMING_COMPLETED);
    df_diag_operation_destroy(op);
}

DF_TEST(loop_stages_accumulate_per_owner) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_WRITE_ALL);
    uint64_t sum1 = 0, sum2 = 0;
    for (int i = 0; i < 5; i++) {
        sum1 += df_diag_span_end(df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 1), DF_DIAG_RESULT_OK);
        sum2 += df_diag_span_end(df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 2), DF_DIAG_RESULT_OK);
    }
    df_diag_timing t1 = df_diag_operation_stage_timing(op, DF_DIAG_STAGE_WRITE_BATCH, 1);
    df_diag_timing t2 = df_diag_operation_stage_timing(op, DF_DIAG_STAGE_WRITE_BATCH, 2);
    DF_ASSERT_EQ_UINT(t1.count, 5);
    DF_ASSERT_EQ_UINT(t1.elapsed_ns, sum1);
    DF_ASSERT_EQ_UINT(t2.elapsed_ns, sum2);
    DF_ASSERT(t1.first_begin_ns > 0 && t1.last_end_ns >= t1.first_begin_ns);
    df_diag_operation_destroy(op); /* not ended: ends as cancelled */
}

DF_TEST(ending_a_lower_span_cancels_the_ones_above) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_EXECUTION);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_STREAM_SETUP, 0);
    df_diag_span_end(ph, DF_DIAG_RESULT_ERROR);
    DF_ASSERT_EQ_INT(df_diag_operation_stage_timing(op, DF_DIAG_STAGE_STREAM_SETUP, 0).state,
                     DF_DIAG_TIMING_CANCELLED);
    uint64_t misuse = df_diag_misuse_count();
    DF_ASSERT_EQ_UINT(df_diag_span_end(st, DF_DIAG_RESULT_OK), 0); /* already ended */
    DF_ASSERT_EQ_UINT(df_diag_misuse_count(), misuse + 1);
    df_diag_operation_end(op, DF_DIAG_RESULT_ERROR);
    DF_ASSERT_EQ_INT(df_diag_operation_total_timing(op).state, DF_DIAG_TIMING_FAILED);
    df_diag_operation_destroy(op);
}

static void *end_elsewhere(void *arg) {
    df_diag_span *s = arg;
    return (void *)(uintptr_t)df_diag_span_end(*s, DF_DIAG_RESULT_OK);
}

DF_TEST(ending_on_another_thread_is_ignored) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_FORMAT_TEXT, 0);
    uint64_t misuse = df_diag_misuse_count();
    pthread_t th;
    void *ret = NULL;
    pthread_create(&th, NULL, end_elsewhere, &st);
    pthread_join(th, &ret);
    DF_ASSERT(ret == NULL);
    DF_ASSERT_EQ_UINT(df_diag_misuse_count(), misuse + 1);
    DF_ASSERT(df_diag_span_end(st, DF_DIAG_RESULT_OK) > 0);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
}

DF_TEST(untraced_operations_record_no_queries) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_PREVIEW, NULL);
    DF_ASSERT(q == NULL);
    df_diag_node node = {0, -1, df_diag_name_intern("ProjectionExec")};
    DF_ASSERT(!df_diag_span_active(df_diag_activity_begin(q, &node, DF_DIAG_ACTIVITY_EXECUTE, 0, 1)));
    DF_ASSERT(!df_diag_span_active(df_diag_task_begin(q, 0)));
    DF_ASSERT(!df_diag_span_active(df_diag_detail_begin(DF_DIAG_DETAIL_DELTA_SCAN_PLANNING)));
    df_diag_context ctx = df_diag_context_capture();
    DF_ASSERT(ctx.op == NULL);
    DF_ASSERT(!df_diag_span_active(df_diag_context_enter(&ctx)));
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_error err = {0};
    DF_ASSERT_KIND(df_diag_operation_begin((df_diag_op_kind)9, NULL, &op, &err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(op == NULL);
}

DF_TEST(name_interning_is_stable_and_bounded) {
    uint32_t a = df_diag_name_intern("FilterExec");
    DF_ASSERT(a != 0);
    DF_ASSERT_EQ_UINT(df_diag_name_intern("FilterExec"), a);
    DF_ASSERT(df_diag_name_intern("ProjectionExec") != a);
    DF_ASSERT_EQ_STR(df_diag_name_get(a), "FilterExec");
    DF_ASSERT_EQ_UINT(df_diag_name_intern(""), 0);
    DF_ASSERT_EQ_UINT(df_diag_name_intern(NULL), 0);
    DF_ASSERT_EQ_STR(df_diag_name_get(0), "unknown");
    DF_ASSERT_EQ_STR(df_diag_name_get(4000000000u), "unknown");
    char long_name[600];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    long_name[254] = (char)0xC3; /* a two-byte character straddling the cap */
    long_name[255] = (char)0xA9;
    uint32_t l = df_diag_name_intern(long_name);
    DF_ASSERT_EQ_UINT(strlen(df_diag_name_get(l)), 254);
}

DF_TEST(traced_operation_records_root_group_and_phases) {
    df_diag_capture *c = test_capture_start(0, true);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    DF_ASSERT(df_diag_operation_traced(op));
    uint64_t id = df_diag_operation_id(op);
    DF_ASSERT(id >= 1);
    df_diag_span ph = df_diag_phase_begin(op, DF_DIAG_PHASE_PLANNING);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_PHYSICAL_PLANNING, 0);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_span_end(ph, DF_DIAG_RESULT_OK);
    df_diag_span fin = df_diag_phase_begin(op, DF_DIAG_PHASE_FINALIZATION);
    (void)fin; /* dropped: ended by the root -> cancelled */
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    DF_ASSERT_EQ_UINT(log.unmatched_ends, 0);
    DF_ASSERT_EQ_UINT(log.ninstants, 1);
    DF_ASSERT_EQ_INT(log.instants[0].h.kind, DF_DIAG_IK_DIAGNOSTIC_GROUP);
    DF_ASSERT_EQ_INT(log.instants[0].track.kind, DF_DIAG_TK_DIAGNOSTICS);
    const test_span *root = test_span_of(&log, DF_DIAG_SK_OPERATION, 0);
    DF_ASSERT(root && root->ended);
    DF_ASSERT_EQ_STR(test_span_name(root), "Delta Funnel preview");
    DF_ASSERT_EQ_UINT(root->begin.ident.operation_id, id);
    DF_ASSERT(root->begin.ident.capture_scope_id >= 1);
    DF_ASSERT_EQ_INT(root->begin.ident.time_semantics, DF_DIAG_TS_WALL_CLOCK);
    DF_ASSERT_EQ_INT(root->begin.track.kind, DF_DIAG_TK_OPERATION);
    DF_ASSERT_EQ_INT(root->end.result, DF_DIAG_RESULT_OK);
    DF_ASSERT(root->begin.flags & DF_DIAG_EVF_CONTEXT);
    const test_span *plan = test_span_of(&log, DF_DIAG_SK_PHASE, 0);
    DF_ASSERT_EQ_STR(test_span_name(plan), "Planning");
    DF_ASSERT_EQ_INT(plan->begin.track.kind, DF_DIAG_TK_PHASES);
    DF_ASSERT_EQ_UINT(plan->begin.ident.capture_scope_id, 0);
    const test_span *fin_s = test_span_of(&log, DF_DIAG_SK_PHASE, 1);
    DF_ASSERT_EQ_STR(test_span_name(fin_s), "Finalization");
    DF_ASSERT_EQ_INT(fin_s->end.result, DF_DIAG_RESULT_CANCELLED);
    const test_span *stage = test_span_of(&log, DF_DIAG_SK_STAGE, 0);
    DF_ASSERT_EQ_STR(test_span_name(stage), "Physical planning");
    DF_ASSERT_EQ_INT(stage->begin.ident.op_kind, DF_DIAG_OP_PREVIEW);
    DF_ASSERT_EQ_UINT(stage->begin.ident.stage_owner_id, 0);
    DF_ASSERT(stage->begin.ts >= plan->begin.ts && stage->end.ts <= plan->end.ts);
    test_log_free(&log);
}

DF_TEST(owner_stages_go_to_owner_tracks) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_WRITE_ALL);
    df_diag_span out = df_diag_stage_begin(op, DF_DIAG_STAGE_EXECUTE_OUTPUT, 2);
    df_diag_span_end(df_diag_stage_begin(op, DF_DIAG_STAGE_CONNECT, 2), DF_DIAG_RESULT_ERROR);
    df_diag_span_end(out, DF_DIAG_RESULT_ERROR);
    df_diag_operation_end(op, DF_DIAG_RESULT_ERROR);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    const test_span *s = test_span_of(&log, DF_DIAG_SK_STAGE, 1);
    DF_ASSERT_EQ_STR(test_span_name(s), "Connect to SQL Server");
    DF_ASSERT_EQ_INT(s->begin.track.kind, DF_DIAG_TK_OWNER);
    DF_ASSERT_EQ_UINT(s->begin.track.sub_id, 2);
    DF_ASSERT_EQ_UINT(s->begin.ident.stage_owner_id, 2);
    DF_ASSERT_EQ_INT(s->end.result, DF_DIAG_RESULT_ERROR);
    DF_ASSERT_EQ_UINT(test_span_of(&log, DF_DIAG_SK_OPERATION, 0)->begin.ident.capture_scope_id, 0);
    test_log_free(&log);
}

DF_TEST(queries_planning_and_coordinator_lane) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_MSSQL_WRITE);
    df_diag_query *q1 = begin_query(op, DF_DIAG_QUERY_MSSQL_OUTPUT, "orders");
    df_diag_query *q2 = begin_query(op, DF_DIAG_QUERY_MSSQL_OUTPUT, NULL);
    DF_ASSERT_EQ_UINT(df_diag_query_id(q1), 1);
    DF_ASSERT_EQ_UINT(df_diag_query_id(q2), 2);
    df_diag_span pl = df_diag_query_planning_begin(q2);
    df_diag_query_set_owner(q2, "late_owner");
    df_diag_span_end(pl, DF_DIAG_RESULT_OK);
    DF_ASSERT_EQ_UINT(df_diag_query_next_stream_id(q1), 1);
    DF_ASSERT_EQ_UINT(df_diag_query_next_stream_id(q1), 2);
    df_diag_node root = {0, -1, df_diag_name_intern("CoalescePartitionsExec")};
    df_diag_node child = {1, 0, df_diag_name_intern("DeltaScan")};
    df_diag_span a = df_diag_activity_begin(q1, &root, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1);
    df_diag_span b = df_diag_activity_begin(q1, &child, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 2);
    df_diag_span_set_parent_node(b, 7);
    df_diag_span_end(b, DF_DIAG_RESULT_BATCH);
    df_diag_span_end(a, DF_DIAG_RESULT_BATCH);
    df_diag_span ext = df_diag_activity_begin(q1, &child, DF_DIAG_ACTIVITY_EXECUTE, 3, 3);
    df_diag_span_end(ext, DF_DIAG_RESULT_STREAM);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    const test_span *plan = test_span_of(&log, DF_DIAG_SK_PLANNING, 0);
    DF_ASSERT_EQ_STR(test_span_name(plan), "DataFusion query planning");
    DF_ASSERT_EQ_INT(plan->begin.track.kind, DF_DIAG_TK_PLANNING);
    DF_ASSERT_EQ_UINT(plan->begin.ident.query_execution_id, 2);
    DF_ASSERT_EQ_INT(plan->begin.ident.query_scope, DF_DIAG_QUERY_MSSQL_OUTPUT);
    DF_ASSERT_EQ_UINT(plan->begin.ident.query_owner_id, 0);
    DF_ASSERT(plan->end.flags & DF_DIAG_EVF_OWNER);
    DF_ASSERT_EQ_STR(df_diag_name_get(plan->end.query_owner_id), "late_owner");
    int query_instants = 0;
    for (size_t i = 0; i < log.ninstants; i++)
        if (log.instants[i].h.kind == DF_DIAG_IK_QUERY) {
            query_instants++;
            DF_ASSERT_EQ_INT(log.instants[i].track.kind, DF_DIAG_TK_QUERY);
            DF_ASSERT_EQ_UINT(log.instants[i].ident.query_execution_id, 2);
        }
    DF_ASSERT_EQ_INT(query_instants, 1);
    const test_span *a0 = test_span_of(&log, DF_DIAG_SK_ACTIVITY, 0);
    const test_span *a1 = test_span_of(&log, DF_DIAG_SK_ACTIVITY, 1);
    const test_span *a2 = test_span_of(&log, DF_DIAG_SK_ACTIVITY, 2);
    DF_ASSERT_EQ_STR(test_span_name(a0), "CoalescePartitionsExec");
    DF_ASSERT_EQ_INT(a0->begin.ident.worker_kind, DF_DIAG_WK_COORDINATOR);
    DF_ASSERT_EQ_UINT(a0->begin.ident.worker_lane_id, 0);
    DF_ASSERT_EQ_INT(a0->begin.ident.time_semantics, DF_DIAG_TS_ACTIVE);
    DF_ASSERT_EQ_INT(a0->begin.ident.activity, DF_DIAG_ACTIVITY_POLL_NEXT);
    DF_ASSERT_EQ_INT(a0->begin.ident.parent_node_id, -1);
    DF_ASSERT_EQ_INT(a1->begin.ident.worker_kind, DF_DIAG_WK_COORDINATOR);
    DF_ASSERT_EQ_INT(a1->begin.ident.parent_node_id, 0);
    DF_ASSERT(a1->end.flags & DF_DIAG_EVF_PARENT_NODE);
    DF_ASSERT_EQ_INT(a1->end.parent_node_id, 7);
    DF_ASSERT_EQ_INT(a1->end.result, DF_DIAG_RESULT_BATCH);
    DF_ASSERT_EQ_INT(a2->begin.ident.worker_kind, DF_DIAG_WK_EXTERNAL);
    DF_ASSERT_EQ_UINT(a2->begin.ident.worker_lane_id, 1);
    DF_ASSERT_EQ_INT(a2->begin.track.kind, DF_DIAG_TK_WORKER);
    DF_ASSERT_EQ_UINT(a2->begin.track.sub_id, 1);
    DF_ASSERT_EQ_INT(a2->end.result, DF_DIAG_RESULT_STREAM);
    test_log_free(&log);
}

DF_TEST(tasks_take_lowest_free_runtime_lane) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_PREVIEW, NULL);
    df_diag_node n = {2, 1, df_diag_name_intern("FilterExec")};
    /* Nested tasks on one thread model the submitter helping with queued tasks. */
    df_diag_span t1 = df_diag_task_begin(q, 0);
    df_diag_span t2 = df_diag_task_begin(q, 1);
    df_diag_span a = df_diag_activity_begin(q, &n, DF_DIAG_ACTIVITY_POLL_NEXT, 1, 4);
    df_diag_span_end(a, DF_DIAG_RESULT_EOF);
    df_diag_span_end(t2, DF_DIAG_RESULT_OK);
    df_diag_span_end(t1, DF_DIAG_RESULT_OK);
    df_diag_span t3 = df_diag_task_begin(q, 2); /* lane 1 is free again */
    df_diag_span_end(t3, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_TASK), 3);
    const test_span *s1 = test_span_of(&log, DF_DIAG_SK_TASK, 0);
    const test_span *s2 = test_span_of(&log, DF_DIAG_SK_TASK, 1);
    const test_span *s3 = test_span_of(&log, DF_DIAG_SK_TASK, 2);
    DF_ASSERT_EQ_UINT(s1->begin.ident.worker_lane_id, 1);
    DF_ASSERT_EQ_UINT(s2->begin.ident.worker_lane_id, 2);
    DF_ASSERT_EQ_UINT(s3->begin.ident.worker_lane_id, 1);
    DF_ASSERT_EQ_INT(s1->begin.ident.worker_kind, DF_DIAG_WK_RUNTIME);
    DF_ASSERT_EQ_INT(s1->begin.track.kind, DF_DIAG_TK_NONE);
    DF_ASSERT(s1->begin.ident.profile_context_id != s2->begin.ident.profile_context_id);
    DF_ASSERT_EQ_STR(test_span_name(s1), "Delta Funnel execution context");
    const test_span *act = test_span_of(&log, DF_DIAG_SK_ACTIVITY, 0);
    DF_ASSERT_EQ_UINT(act->begin.ident.worker_lane_id, 2);
    DF_ASSERT_EQ_INT(act->begin.ident.worker_kind, DF_DIAG_WK_RUNTIME);
    DF_ASSERT_EQ_UINT(act->begin.track.sub_id, 2);
    test_log_free(&log);
}

DF_TEST(budget_keeps_task_roots_and_emits_one_marker) {
    df_diag_capture *c = test_capture_start(2, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_PREVIEW, NULL);
    df_diag_node n0 = {0, -1, df_diag_name_intern("A")}, n1 = {1, 0, df_diag_name_intern("B")};
    df_diag_span r = df_diag_activity_begin(q, &n0, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1);
    df_diag_span c1 = df_diag_activity_begin(q, &n1, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 2);
    DF_ASSERT(df_diag_span_active(c1));
    df_diag_span_end(c1, DF_DIAG_RESULT_BATCH);
    df_diag_span c2 = df_diag_activity_begin(q, &n1, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 2);
    DF_ASSERT(!df_diag_span_active(c2)); /* third reservation fails: nested child dropped */
    df_diag_span d = df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT);
    DF_ASSERT(!df_diag_span_active(d)); /* details under activities follow the budget */
    df_diag_async_span aw = df_diag_await_output_begin(q, 1, 0, 2);
    DF_ASSERT(aw.op == NULL);
    df_diag_span_end(r, DF_DIAG_RESULT_BATCH);
    df_diag_span r2 = df_diag_activity_begin(q, &n0, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 1);
    DF_ASSERT(df_diag_span_active(r2)); /* task root survives */
    df_diag_span_end(r2, DF_DIAG_RESULT_EOF);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    size_t markers = 0;
    for (size_t i = 0; i < log.ninstants; i++)
        if (log.instants[i].h.kind == DF_DIAG_IK_TRUNCATED) {
            markers++;
            DF_ASSERT_EQ_UINT(log.instants[i].maximum_spans, 2);
            DF_ASSERT_EQ_INT(log.instants[i].track.kind, DF_DIAG_TK_OPERATION);
        }
    DF_ASSERT_EQ_UINT(markers, 1);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_ACTIVITY), 3);
    test_log_free(&log);
}

DF_TEST(details_inherit_parent_identity_and_track) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_MSSQL_WRITE);
    DF_ASSERT(!df_diag_span_active(df_diag_detail_begin((df_diag_detail)0)));
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_FINALIZE_WRITER, 1);
    df_diag_span d = df_diag_detail_begin(DF_DIAG_DETAIL_FLUSH_SQL_SERVER_CONNECTION);
    df_diag_span_end(d, DF_DIAG_RESULT_OK);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_MSSQL_OUTPUT, "out");
    df_diag_span pl = df_diag_query_planning_begin(q);
    df_diag_span_end(df_diag_detail_begin(DF_DIAG_DETAIL_DELTA_SCAN_PLANNING), DF_DIAG_RESULT_OK);
    df_diag_span_end(pl, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    const test_span *d0 = test_span_of(&log, DF_DIAG_SK_DETAIL, 0);
    DF_ASSERT_EQ_STR(test_span_name(d0), "Flush SQL Server connection");
    DF_ASSERT_EQ_INT(d0->begin.track.kind, DF_DIAG_TK_OWNER);
    DF_ASSERT_EQ_UINT(d0->begin.track.sub_id, 1);
    DF_ASSERT_EQ_INT(d0->begin.ident.stage, DF_DIAG_STAGE_FINALIZE_WRITER);
    DF_ASSERT_EQ_INT(d0->begin.ident.time_semantics, DF_DIAG_TS_WALL_CLOCK);
    const test_span *d1 = test_span_of(&log, DF_DIAG_SK_DETAIL, 1);
    DF_ASSERT_EQ_STR(test_span_name(d1), "Delta scan planning");
    DF_ASSERT_EQ_INT(d1->begin.track.kind, DF_DIAG_TK_PLANNING);
    DF_ASSERT_EQ_UINT(d1->begin.ident.query_execution_id, 1);
    test_log_free(&log);
}

typedef struct ctx_arg {
    df_diag_context ctx; /* captured on the spawning thread */
} ctx_arg;

static void *enter_context(void *arg) {
    ctx_arg *a = arg;
    df_diag_span s = df_diag_context_enter(&a->ctx);
    DF_ASSERT(df_diag_span_active(s));
    df_diag_span d = df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT);
    DF_ASSERT(df_diag_span_active(d));
    df_diag_span_end(d, DF_DIAG_RESULT_OK);
    df_diag_span_end(s, DF_DIAG_RESULT_OK);
    return NULL;
}

DF_TEST(spawned_contexts_take_runtime_lanes_with_parent_node) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_PREVIEW, NULL);
    df_diag_node n = {3, 2, df_diag_name_intern("DeltaScan")};
    df_diag_span a = df_diag_activity_begin(q, &n, DF_DIAG_ACTIVITY_POLL_NEXT, 0, 5);
    ctx_arg arg = {df_diag_context_capture()};
    DF_ASSERT(arg.ctx.op == op && arg.ctx.query == q);
    pthread_t th;
    pthread_create(&th, NULL, enter_context, &arg);
    pthread_join(th, NULL);
    df_diag_span_end(a, DF_DIAG_RESULT_BATCH);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_FORMAT_TEXT, 0);
    arg.ctx = df_diag_context_capture();
    DF_ASSERT(arg.ctx.query == NULL && arg.ctx.stage == DF_DIAG_STAGE_FORMAT_TEXT);
    pthread_create(&th, NULL, enter_context, &arg);
    pthread_join(th, NULL);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    const test_span *task = test_span_of(&log, DF_DIAG_SK_TASK, 0);
    DF_ASSERT_EQ_INT(task->begin.ident.worker_kind, DF_DIAG_WK_RUNTIME);
    DF_ASSERT_EQ_UINT(task->begin.ident.worker_lane_id, 1);
    DF_ASSERT_EQ_INT(task->begin.ident.parent_node_id, 3);
    DF_ASSERT(task->begin.h.tid != test_span_of(&log, DF_DIAG_SK_ACTIVITY, 0)->begin.h.tid);
    const test_span *d0 = test_span_of(&log, DF_DIAG_SK_DETAIL, 0);
    DF_ASSERT_EQ_INT(d0->begin.track.kind, DF_DIAG_TK_WORKER);
    DF_ASSERT_EQ_UINT(d0->begin.track.sub_id, 1);
    DF_ASSERT_EQ_INT(d0->begin.ident.time_semantics, DF_DIAG_TS_ACTIVE);
    const test_span *d1 = test_span_of(&log, DF_DIAG_SK_DETAIL, 1);
    DF_ASSERT_EQ_INT(d1->begin.track.kind, DF_DIAG_TK_PHASES);
    DF_ASSERT_EQ_INT(d1->begin.ident.stage, DF_DIAG_STAGE_FORMAT_TEXT);
    test_log_free(&log);
}

typedef struct await_arg {
    df_diag_async_span span; /* opened on the main thread */
} await_arg;

static void *end_await(void *arg) {
    df_diag_async_span_end(&((await_arg *)arg)->span, DF_DIAG_RESULT_OK);
    return NULL;
}

DF_TEST(await_spans_cross_threads) {
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_query *q = begin_query(op, DF_DIAG_QUERY_PREVIEW, NULL);
    DF_ASSERT(df_diag_await_output_begin(q, 1, 0, 0).op == NULL); /* stream id required */
    await_arg a = {df_diag_await_output_begin(q, 1, 0, 9)};
    DF_ASSERT(a.span.op == op);
    pthread_t th;
    pthread_create(&th, NULL, end_await, &a);
    pthread_join(th, NULL);
    DF_ASSERT(a.span.op == NULL);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log log = test_capture_finish(c);
    const test_span *s = test_span_of(&log, DF_DIAG_SK_AWAIT, 0);
    DF_ASSERT(s && s->ended);
    DF_ASSERT_EQ_STR(test_span_name(s), "Await Delta scan output");
    DF_ASSERT_EQ_INT(s->begin.track.kind, DF_DIAG_TK_STREAM);
    DF_ASSERT_EQ_UINT(s->begin.track.sub_id, 9);
    DF_ASSERT_EQ_INT(s->begin.ident.activity, DF_DIAG_ACTIVITY_AWAIT_OUTPUT);
    DF_ASSERT_EQ_INT(s->begin.flags & DF_DIAG_EVF_CONTEXT, 0);
    DF_ASSERT(s->begin.h.tid != s->end.h.tid);
    test_log_free(&log);
}

DF_TEST(operation_identity_stops_instead_of_wrapping) {
    df__diag_set_next_operation_id(UINT64_MAX);
    df_diag_capture *c = test_capture_start(0, false);
    df_diag_operation *a = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_operation *b = begin_op(DF_DIAG_OP_PREVIEW);
    DF_ASSERT_EQ_UINT(df_diag_operation_id(a), UINT64_MAX);
    DF_ASSERT_EQ_UINT(df_diag_operation_id(b), 0);
    DF_ASSERT(!df_diag_operation_traced(b));
    df_diag_operation_destroy(b);
    df_diag_operation_destroy(a);
    test_log log = test_capture_finish(c);
    DF_ASSERT_EQ_UINT(test_count(&log, DF_DIAG_SK_OPERATION), 1);
    test_log_free(&log);
    df__diag_set_next_operation_id(1000000); /* later tests in the same process (DF_TEST_NOFORK) */
}

DF_TEST(captures_do_not_leak_into_each_other) {
    df_diag_capture *c1 = test_capture_start(0, false);
    df_diag_capture_options o = {0};
    df_diag_capture *dup = NULL;
    df_error err = {0};
    DF_ASSERT_KIND(df_diag_capture_start(&o, &dup, &err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(dup == NULL);
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    test_log l1 = test_capture_finish(c1);
    DF_ASSERT(!df_diag_capture_is_active());
    df_diag_capture *c2 = test_capture_start(0, false);
    df_diag_span st = df_diag_stage_begin(op, DF_DIAG_STAGE_FORMAT_TEXT, 0);
    df_diag_span_end(st, DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    test_log l2 = test_capture_finish(c2);
    DF_ASSERT_EQ_UINT(l1.nspans, 1);
    DF_ASSERT(!l1.spans[0].ended); /* still open when capture 1 stopped */
    DF_ASSERT_EQ_UINT(l2.nspans, 0);
    DF_ASSERT_EQ_UINT(l2.unmatched_ends, 0);
    test_log_free(&l1);
    test_log_free(&l2);
}

DF_TEST(deep_nesting_is_bounded) {
    df_diag_operation *op = begin_op(DF_DIAG_OP_PREVIEW);
    df_diag_span spans[200];
    uint64_t before = df_diag_stack_overflow_count();
    for (int i = 0; i < 200; i++) spans[i] = df_diag_stage_begin(op, DF_DIAG_STAGE_FORMAT_TEXT, 0);
    DF_ASSERT(df_diag_span_active(spans[DF_DIAG_MAX_DEPTH - 2]));
    DF_ASSERT(!df_diag_span_active(spans[199]));
    DF_ASSERT(df_diag_stack_overflow_count() > before);
    for (int i = 199; i >= 0; i--) df_diag_span_end(spans[i], DF_DIAG_RESULT_OK);
    DF_ASSERT_EQ_INT(df_diag_operation_stage_timing(op, DF_DIAG_STAGE_FORMAT_TEXT, 0).state,
                     DF_DIAG_TIMING_COMPLETED);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
}

DF_TEST(buffer_cap_loses_records_and_counts_them) {
    df_diag_capture_options o = {.buffer_bytes = DF_DIAG_CHUNK_BYTES};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    df_diag_operation *op = begin_op(DF_DIAG_OP_WRITE_ALL);
    for (int i = 0; i < 50000; i++)
        df_diag_span_end(df_diag_stage_begin(op, DF_DIAG_STAGE_WRITE_BATCH, 1), DF_DIAG_RESULT_OK);
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
    df_diag_capture_stats st;
    DF_ASSERT_OK(df_diag_capture_stop(c, &st, &err), &err);
    DF_ASSERT(st.events_lost > 0);
    DF_ASSERT(st.events_written > 0);
    DF_ASSERT(st.events_written < 100002);
    df_diag_capture_destroy(c);
}
