/*
 * Model builder: semantic nodes, parents, kinds, display names, sample
 * classification and attribution, native stack classes, function trees,
 * compaction, lanes, capture health and scope selection, from
 * deterministic synthetic traces whose expected models are spelled out.
 */
#include "report_test_util.h"

DF_TEST(preview_nodes_parents_and_kinds) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    DF_ASSERT_EQ_UINT(p->nsems, 10);
    const char *names[] = {"Delta Funnel preview", "Planning", "DataFrame planning", "DataFusion query",
                           "DataFusion query planning", "Delta scan planning", "Execution", "Execute and collect",
                           "Await Delta scan output", "Finalization"};
    const char *kinds[] = {"operation", "phase", "stage", "query", "query_planning", "semantic", "phase", "stage",
                           "activity", "phase"};
    const int64_t parents[] = {0, 1, 2, 3, 3, 5, 1, 7, 8, 1};
    for (int64_t id = 1; id <= 10; id++) {
        const df_report_semantic *s = rt_sem(p, id);
        DF_ASSERT_EQ_STR(rt_name(p, id), names[id - 1]);
        DF_ASSERT_EQ_STR(df__report_sem_str(p, s, DF_REPORT_S_KIND), kinds[id - 1]);
        if (parents[id - 1]) {
            DF_ASSERT(s->flags & DF_REPORT_SEM_HAS_PARENT);
            DF_ASSERT_EQ_INT(s->parent_semantic_id, parents[id - 1]);
        } else {
            DF_ASSERT(!(s->flags & DF_REPORT_SEM_HAS_PARENT));
        }
        DF_ASSERT_EQ_INT(s->operation_id, 1);
    }
    DF_ASSERT_EQ_STR(df__report_sem_display(p, (size_t)df__report_find_semantic(p, 1)), "Delta Funnel preview (operation 1)");
    const df_report_semantic *root = rt_sem(p, 1);
    DF_ASSERT_EQ_INT(root->start_ns, 1000);
    DF_ASSERT_EQ_INT(root->end_ns, 3000);
    DF_ASSERT_EQ_INT(root->duration_ns, 2000);
    DF_ASSERT_EQ_STR(df__report_sem_str(p, root, DF_REPORT_S_RESULT), "ok");
    DF_ASSERT_EQ_STR(df__report_sem_str(p, root, DF_REPORT_S_OPERATION_KIND), "preview");
    const df_report_semantic *q = rt_sem(p, 4);
    DF_ASSERT_EQ_INT(q->duration_ns, 0);
    DF_ASSERT(q->flags & DF_REPORT_SEM_HAS_ID(DF_REPORT_ID_QUERY));
    const df_report_semantic *aw = rt_sem(p, 9);
    DF_ASSERT_EQ_INT(aw->ident[DF_REPORT_ID_STREAM], 2);
    DF_ASSERT_EQ_STR(df__report_sem_str(p, aw, DF_REPORT_S_ACTIVITY), "await_output");
    DF_ASSERT(p->meta.capture_complete && p->meta.semantic_complete && p->meta.finalization_observed);
    DF_ASSERT_EQ_UINT(p->meta.sample_frequency_hz, 1000);
    df_report_profile_destroy(p);
}

DF_TEST(preview_sample_classes_and_attribution) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    const df_report_metadata *m = &p->meta;
    DF_ASSERT_EQ_INT(m->eligible_sample_count, 7);
    DF_ASSERT_EQ_INT(m->direct_sample_count, 6);
    DF_ASSERT_EQ_INT(m->ambiguous_sample_count, 0);
    DF_ASSERT_EQ_INT(m->unattributed_sample_count, 1);
    DF_ASSERT_EQ_INT(m->exact_context_sample_count, 1);
    DF_ASSERT_EQ_INT(m->resolved_function_sample_count, 3);
    DF_ASSERT_EQ_INT(m->unresolved_function_sample_count, 1);
    DF_ASSERT_EQ_INT(m->unwind_error_sample_count, 1);
    DF_ASSERT_EQ_INT(m->missing_callstack_sample_count, 1);
    /* Samples of the profiled process, with or without a callstack (the other process is not counted). */
    DF_ASSERT_EQ_INT(m->perf_sample_without_callsite_count, 1);
    DF_ASSERT_EQ_UINT(m->sampled_cpu_count, 3);
    const df_report_semantic *ec = rt_sem(p, 8);
    DF_ASSERT_EQ_INT(ec->direct_samples, 6);
    DF_ASSERT_EQ_INT(ec->inclusive_samples, 6);
    DF_ASSERT_EQ_INT(ec->stack[DF_REPORT_STACK_RESOLVED], 3);
    DF_ASSERT_EQ_INT(ec->stack[DF_REPORT_STACK_UNRESOLVED], 1);
    DF_ASSERT_EQ_INT(ec->stack[DF_REPORT_STACK_UNWIND_ERROR], 1);
    DF_ASSERT_EQ_INT(ec->stack[DF_REPORT_STACK_MISSING], 1);
    DF_ASSERT_EQ_INT(rt_sem(p, 1)->inclusive_samples, 6);
    DF_ASSERT_EQ_INT(rt_sem(p, 1)->direct_samples, 0);
    DF_ASSERT_EQ_INT(rt_sem(p, 7)->inclusive_samples, 6);
    DF_ASSERT_EQ_INT(rt_sem(p, 9)->direct_samples, 0); /* await spans never own samples */
    df_report_profile_destroy(p);
}

DF_TEST(preview_function_tree_ids_counts_and_compaction) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    DF_ASSERT_EQ_UINT(p->nfns, 8);
    /* Depth-first ids with name-sorted children: main < start_thread; "[unresolved]" sorts first (empty name). */
    const struct { const char *name; int64_t id, parent, self, incl; } want[] = {
        {"main", 1, 0, 0, 1},
        {"run_preview", 2, 1, 0, 1},
        {"coalesce_next", 3, 2, 1, 1},
        {"start_thread", 4, 0, 0, 3},
        {"<tokio::runtime::blocking::task::BlockingTask<F> as core::future::Future>::poll", 5, 4, 0, 3},
        {"[unresolved]", 6, 5, 1, 1},
        {"df_scan_next", 7, 5, 1, 2},
        {"decode_plain.constprop.0", 8, 7, 1, 1},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(want); i++) {
        const df_report_function *f = rt_fn(p, 8, want[i].name);
        DF_ASSERT(f != NULL);
        DF_ASSERT_EQ_INT(f->function_id, want[i].id);
        DF_ASSERT_EQ_INT(f->self_samples, want[i].self);
        DF_ASSERT_EQ_INT(f->inclusive_samples, want[i].incl);
        if (want[i].parent) DF_ASSERT_EQ_INT(f->parent_function_id, want[i].parent);
        else DF_ASSERT(!(f->flags & DF_REPORT_FN_HAS_PARENT));
    }
    const df_report_function *dec = rt_fn(p, 8, "decode_plain.constprop.0");
    DF_ASSERT_EQ_STR(df__report_str(&p->strings, dec->module_name), "dfapp");
    DF_ASSERT_EQ_STR(df__report_str(&p->strings, dec->source_file), "src/decode.c");
    DF_ASSERT_EQ_INT(dec->line_number, 50);
    DF_ASSERT_EQ_STR(df__report_fn_compact(p, dec), "decode_plain");
    const df_report_function *poll = rt_fn(p, 8, want[4].name);
    DF_ASSERT_EQ_STR(df__report_fn_compact(p, poll), "BlockingTask::poll");
    DF_ASSERT(!(poll->flags & DF_REPORT_FN_HAS_LINE));
    DF_ASSERT_EQ_STR(df__report_str(&p->strings, rt_fn(p, 8, "start_thread")->module_name), "libc.so.6");
    /* Compaction: main and run_preview collapse into coalesce_next; start_thread into the poll frame. */
    const df_report_index *ix = &p->ix;
    for (size_t i = 0; i < p->nfns; i++) {
        const char *n = df__report_str(&p->strings, p->fns[i].name);
        bool hidden = !strcmp(n, "main") || !strcmp(n, "run_preview") || !strcmp(n, "start_thread");
        DF_ASSERT_EQ_INT(ix->fn_hidden[i], hidden);
        if (!strcmp(n, "coalesce_next") || !strcmp(n, want[4].name)) DF_ASSERT_EQ_INT(ix->fn_compact_parent[i], -1);
        if (!strcmp(n, "df_scan_next")) DF_ASSERT_EQ_INT(p->fns[ix->fn_compact_parent[i]].function_id, 5);
    }
    df_report_profile_destroy(p);
}

DF_TEST(preview_worker_lanes) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    DF_ASSERT_EQ_UINT(p->nlanes, 2);
    DF_ASSERT_EQ_INT(p->lanes[0].worker_lane_id, 0);
    DF_ASSERT_EQ_STR(df__report_str(&p->strings, p->lanes[0].worker_kind), "coordinator");
    DF_ASSERT_EQ_INT(p->lanes[0].busy_ns, 400);
    DF_ASSERT_EQ_UINT(p->lanes[0].interval_count, 1);
    DF_ASSERT_EQ_INT(p->intervals[p->lanes[0].first_interval].start_ns, 2200);
    DF_ASSERT_EQ_INT(p->intervals[p->lanes[0].first_interval].end_ns, 2600);
    DF_ASSERT_EQ_INT(p->lanes[1].worker_lane_id, 1);
    DF_ASSERT_EQ_INT(p->lanes[1].busy_ns, 150);
    df_report_profile_destroy(p);
}

DF_TEST(write_all_owners_and_display_names) {
    df_report_profile *p = rt_build(scenario_write_all(), 0);
    int64_t wf = rt_id_of(p, "Execute output workflow");
    int found = 0;
    for (size_t i = 0; i < p->nsems; i++) {
        const df_report_semantic *s = &p->sems[i];
        const char *disp = df__report_sem_display(p, i);
        if (!strcmp(df__report_sem_str(p, s, DF_REPORT_S_NAME), "Execute output")) {
            /* Owner stages have no ancestor track below the operation: the workflow stage contains them. */
            DF_ASSERT_EQ_INT(s->parent_semantic_id, wf);
            DF_ASSERT(!strcmp(disp, "Execute output (output 1)") || !strcmp(disp, "Execute output (output 2)"));
            found++;
        }
        if (!strcmp(df__report_sem_str(p, s, DF_REPORT_S_KIND), "query_planning"))
            DF_ASSERT_EQ_STR(disp, "DataFusion query planning (west_orders)");
    }
    DF_ASSERT_EQ_INT(found, 2);
    int64_t wb = rt_id_of(p, "Write batch to SQL Server");
    DF_ASSERT_EQ_INT(rt_sem(p, wb)->direct_samples, 1);
    DF_ASSERT_EQ_INT(rt_sem(p, rt_id_of(p, "Connect to SQL Server"))->direct_samples, 1);
    DF_ASSERT_EQ_STR(df__report_sem_str(p, rt_sem(p, 1), DF_REPORT_S_RESULT), "error");
    DF_ASSERT_EQ_STR(df__report_sem_display(p, (size_t)df__report_find_semantic(p, 1)),
                     "Delta Funnel SQL Server write_all (operation 1)");
    DF_ASSERT_EQ_UINT(p->meta.sample_frequency_hz, 100);
    df_report_profile_destroy(p);
}

DF_TEST(incomplete_root_is_reported_not_fabricated) {
    df_report_profile *p = rt_build(scenario_incomplete(), 0);
    const df_report_semantic *root = rt_sem(p, 1);
    DF_ASSERT(!(root->flags & DF_REPORT_SEM_COMPLETE));
    DF_ASSERT_EQ_INT(root->end_ns, 0);
    DF_ASSERT_EQ_INT(root->duration_ns, 0);
    DF_ASSERT(root->str[DF_REPORT_S_RESULT] == 0);
    DF_ASSERT_EQ_INT(p->meta.incomplete_operation_root_count, 1);
    DF_ASSERT_EQ_INT(p->meta.missing_terminal_result_count, 1);
    DF_ASSERT(!p->meta.semantic_complete);
    DF_ASSERT(!p->meta.capture_complete);
    DF_ASSERT(!p->meta.finalization_observed);
    /* The open root extends to the end of the trace: the sample after Finalization is now its own. */
    DF_ASSERT_EQ_INT(p->meta.direct_sample_count, 7);
    DF_ASSERT_EQ_INT(root->direct_samples, 1);
    DF_ASSERT_EQ_INT(rt_sem(p, 8)->direct_samples, 6);
    df_report_profile_destroy(p);
}

DF_TEST(truncation_marker_makes_semantics_incomplete) {
    df_report_profile *p = rt_build(scenario_truncated(), 0);
    DF_ASSERT_EQ_INT(p->meta.truncation_marker_count, 1);
    DF_ASSERT(!p->meta.semantic_complete);
    DF_ASSERT(!p->meta.capture_complete);
    DF_ASSERT_EQ_UINT(p->nsems, 10); /* the marker is not a semantic node */
    df_report_profile_destroy(p);
}

DF_TEST(capture_scope_selects_one_operation) {
    df_report_profile *all = rt_build(scenario_scoped(), 0);
    DF_ASSERT_EQ_UINT(all->ix.nroots, 2);
    DF_ASSERT_EQ_INT(all->meta.direct_sample_count, 2);
    df_report_profile_destroy(all);
    df_report_profile *p = rt_build(scenario_scoped(), 6);
    DF_ASSERT_EQ_UINT(p->ix.nroots, 1);
    DF_ASSERT_EQ_INT(p->sems[0].operation_id, 2);
    DF_ASSERT_EQ_INT(p->meta.eligible_sample_count, 1);
    DF_ASSERT(rt_fn(p, p->sems[p->ix.roots[0]].semantic_id + 1, "second_op_work") != NULL);
    for (size_t i = 0; i < p->nfns; i++) DF_ASSERT(strcmp(df__report_str(&p->strings, p->fns[i].name), "first_op_work"));
    df_report_profile_destroy(p);
}

DF_TEST(ambiguity_from_overlapping_operations_and_parallel_branches) {
    df_report_profile *p = rt_build(scenario_ambiguous(), 0);
    DF_ASSERT_EQ_INT(p->meta.eligible_sample_count, 3);
    DF_ASSERT_EQ_INT(p->meta.ambiguous_sample_count, 2);
    DF_ASSERT_EQ_INT(p->meta.direct_sample_count, 1);
    DF_ASSERT_EQ_INT(p->meta.unattributed_sample_count, 0);
    DF_ASSERT_EQ_INT(p->meta.exact_context_sample_count, 1);
    DF_ASSERT_EQ_INT(rt_sem(p, rt_id_of(p, "Execute and collect"))->direct_samples, 1);
    /* The planning node started before the stage: its parent is the phase, so the two are siblings. */
    DF_ASSERT_EQ_INT(rt_sem(p, rt_id_of(p, "DataFusion query planning"))->parent_semantic_id, rt_id_of(p, "Execution"));
    df_report_profile_destroy(p);
}

DF_TEST(missing_identity_is_unsafe) {
    char reason[64], msg[256];
    DF_ASSERT_KIND(rt_build_fail(scenario_missing_identity(), reason, sizeof reason, msg, sizeof msg), DF_ERR_UNSAFE_IDENTITY);
    DF_ASSERT_EQ_STR(reason, "unsafe_identity");
    DF_ASSERT(strstr(msg, "identity") != NULL);
}

DF_TEST(trace_without_operation_is_an_incomplete_capture) {
    char reason[64], msg[256];
    DF_ASSERT_KIND(rt_build_fail(scenario_empty(), reason, sizeof reason, msg, sizeof msg), DF_ERR_INCOMPLETE_CAPTURE);
    DF_ASSERT_EQ_STR(reason, "incomplete_capture");
    DF_ASSERT_EQ_STR(msg, "input trace contains no retained Delta Funnel operation");
}

DF_TEST(build_is_deterministic) {
    df_report_profile *a = rt_build(scenario_preview(), 0), *b = rt_build(scenario_preview(), 0);
    df_buf x, y;
    df_buf_init(&x, 0);
    df_buf_init(&y, 0);
    df_error err = {0};
    DF_ASSERT_OK(df_report_encode_dfprofile(a, &x, &err), &err);
    DF_ASSERT_OK(df_report_encode_dfprofile(b, &y, &err), &err);
    DF_ASSERT_EQ_UINT(x.len, y.len);
    DF_ASSERT(memcmp(x.data, y.data, x.len) == 0);
    df_buf_free(&x);
    df_buf_free(&y);
    df_report_profile_destroy(a);
    df_report_profile_destroy(b);
}

DF_TEST(large_model_stays_within_record_limits) {
    synth *s = scenario_large(4, 50, 20000, 4, 12, 200);
    df_report_profile *p = rt_build(s, 0);
    DF_ASSERT_EQ_UINT(p->ix.nroots, 4);
    DF_ASSERT_EQ_INT(p->meta.eligible_sample_count, 20000);
    /* Worker samples between two activities have no context: unattributed, never guessed. */
    DF_ASSERT(p->meta.direct_sample_count > 15000);
    DF_ASSERT_EQ_INT(p->meta.direct_sample_count + p->meta.unattributed_sample_count, 20000);
    DF_ASSERT_EQ_INT(p->meta.ambiguous_sample_count, 0);
    DF_ASSERT(p->nfns > 0 && p->nfns < DF_REPORT_MAX_FUNCTIONS);
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    df_report_profile_destroy(p);
}

/* One operation, optionally with a sampling config and a sample. */
static synth *tiny(bool config, bool sample) {
    synth *s = synth_new();
    if (config) synth_config(s, 250);
    uint64_t proc = synth_process(s, 9), th = synth_thread(s, 9, 9);
    uint64_t diag = synth_diag_track(s, proc), op = synth_op_track(s, diag, 3);
    synth_arg a[] = {SI("operation_id", 3), SS("operation_kind", "preview"), SS("time_semantics", "wall_clock")};
    synth_begin(s, op, 10, SYNTH_PROFILE, "Delta Funnel preview", a, 3);
    synth_begin(s, th, 10, SYNTH_CONTEXT, "Delta Funnel preview", a, 3);
    if (sample) {
        uint64_t f = synth_frame(s, "f", "/bin/x", NULL, 0);
        synth_sample(s, 15, 9, 9, 0, &f, 1, false);
    }
    synth_arg r[] = {SS("result", "ok")};
    synth_end(s, op, 20, SYNTH_PROFILE, r, 1);
    synth_end(s, th, 20, SYNTH_CONTEXT, r, 1);
    synth_tracing_disabled(s);
    return s;
}

DF_TEST(sampling_off_and_missing_frequency) {
    df_report_profile *p = rt_build(tiny(false, false), 0);
    DF_ASSERT_EQ_UINT(p->meta.sample_frequency_hz, 0);
    DF_ASSERT_EQ_INT(p->meta.eligible_sample_count, 0);
    DF_ASSERT(p->meta.capture_complete);
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    df_report_profile_destroy(p);
    p = rt_build(tiny(true, true), 0);
    DF_ASSERT_EQ_UINT(p->meta.sample_frequency_hz, 250);
    DF_ASSERT_EQ_INT(p->meta.direct_sample_count, 1);
    DF_ASSERT_EQ_INT(p->meta.exact_context_sample_count, 1);
    df_report_profile_destroy(p);
    char reason[64], msg[256];
    DF_ASSERT_KIND(rt_build_fail(tiny(false, true), reason, sizeof reason, msg, sizeof msg), DF_ERR_MALFORMED_RESULT);
    DF_ASSERT_EQ_STR(reason, "malformed_result");
}

DF_TEST(four_thousand_operations_validate) {
    df_report_profile *p = rt_build(scenario_large(4096, 1, 8192, 1, 3, 8), 0);
    DF_ASSERT_EQ_UINT(p->ix.nroots, 4096);
    DF_ASSERT_EQ_INT(p->meta.eligible_sample_count, 8192);
    DF_ASSERT_OK(df_report_validate(p, NULL), NULL);
    /* Each operation's display name is distinct. */
    DF_ASSERT_EQ_STR(df__report_sem_display(p, p->ix.roots[4095]), "Delta Funnel preview (operation 4096)");
    df_report_profile_destroy(p);
}
