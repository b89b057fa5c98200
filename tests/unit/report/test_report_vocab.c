/*
 * The diagnostics vocabulary (src/diag/diag_names.def) round-trips: every
 * name of every list is found again by its recogniser, and a trace the real
 * writer records with every operation kind, phase, allowed stage, detail,
 * query scope and activity is read back by the report with the same names
 * (roots, phases, stages with their categories and kinds, details, query
 * spans, the await span) and a clean capture health.
 */
#include "report_test_util.h"

#include <unistd.h>

#include "diag/capture.h"
#include "diag/diag.h"

/* Names of one list: non-empty, distinct. */
static void check_distinct(const char *const *names, size_t n, const char *list) {
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !names[i][0]) df_test_fail(__FILE__, __LINE__, "%s: entry %zu has no name", list, i + 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) df_test_fail(__FILE__, __LINE__, "%s: %s appears twice", list, names[i]);
    }
}

#define NAMES_OF(list, lookup, count)                                                 \
    do {                                                                              \
        const char *names[count];                                                     \
        for (unsigned i = 1; i < (unsigned)(count); i++) names[i - 1] = lookup(i);     \
        check_distinct(names, (count) - 1u, #list);                                   \
    } while (0)

DF_TEST(every_list_has_distinct_nonempty_names) {
    NAMES_OF(DF_DIAG_OPERATIONS, df_diag_op_kind_name, DF_DIAG_OP_COUNT_);
    NAMES_OF(DF_DIAG_OPERATIONS, df_diag_op_span_name, DF_DIAG_OP_COUNT_);
    NAMES_OF(DF_DIAG_PHASES, df_diag_phase_name, DF_DIAG_PHASE_COUNT_);
    NAMES_OF(DF_DIAG_RESULTS, df_diag_result_name, DF_DIAG_RESULT_COUNT_);
    NAMES_OF(DF_DIAG_QUERY_SCOPES, df_diag_query_scope_name, DF_DIAG_QUERY_COUNT_);
    NAMES_OF(DF_DIAG_ACTIVITIES, df_diag_activity_value_name, DF_DIAG_ACTIVITY_COUNT_);
    NAMES_OF(DF_DIAG_WORKER_KINDS, df_diag_worker_kind_name, DF_DIAG_WK_COUNT_);
    NAMES_OF(DF_DIAG_TIME_SEMANTICS, df_diag_time_semantics_name, DF_DIAG_TS_COUNT_);
    NAMES_OF(DF_DIAG_TIMINGS, df_diag_timing_name_of, DF_DIAG_TN_COUNT_);
    NAMES_OF(DF_DIAG_STAGE_CATEGORIES, df_diag_stage_category_name, DF_DIAG_SC_COUNT_);
    NAMES_OF(DF_DIAG_STAGES, df_diag_stage_name, DF_DIAG_STAGE_COUNT_);
    NAMES_OF(DF_DIAG_DETAILS, df_diag_detail_name, DF_DIAG_DETAIL_COUNT_);
    NAMES_OF(DF_DIAG_TITLES, df_diag_title_name, DF_DIAG_TITLE_COUNT_);
    NAMES_OF(DF_DIAG_TRACK_PARTS, df_diag_track_part_name, DF_DIAG_TRACK_PART_COUNT_);
    NAMES_OF(DF_DIAG_CATEGORIES, df_diag_category_name, DF_DIAG_CAT_COUNT_);
    NAMES_OF(DF_DIAG_SEMANTIC_KINDS, df_diag_semantic_kind_name, DF_DIAG_SEM_COUNT_);
    NAMES_OF(DF_DIAG_CAPTURE_MODES, df_diag_capture_mode_name, DF_DIAG_MODE_COUNT_);
    /* Annotation names are distinct across the three lists: the reader matches them by name alone. */
    const char *args[DF_DIAG_NARG_COUNT_ + DF_DIAG_SARG_COUNT_ + DF_DIAG_WARG_COUNT_];
    size_t n = 0;
    for (unsigned i = 1; i < DF_DIAG_NARG_COUNT_; i++) args[n++] = df_diag_num_arg_name(i);
    for (unsigned i = 1; i < DF_DIAG_SARG_COUNT_; i++) args[n++] = df_diag_str_arg_name(i);
    for (unsigned i = 1; i < DF_DIAG_WARG_COUNT_; i++) args[n++] = df_diag_writer_arg_name(i);
    check_distinct(args, n, "debug annotations");
    const char *backends[DF_DIAG_BACKEND_COUNT_];
    for (unsigned i = 0; i < DF_DIAG_BACKEND_COUNT_; i++) backends[i] = df_diag_backend_name(i);
    check_distinct(backends, DF_DIAG_BACKEND_COUNT_, "DF_DIAG_BACKENDS");
}

DF_TEST(every_name_is_found_by_its_recogniser) {
    for (unsigned k = 1; k < DF_DIAG_OP_COUNT_; k++)
        DF_ASSERT_EQ_INT(df_diag_op_kind_from_span_name(df_diag_op_span_name(k)), k);
    for (unsigned i = 1; i < DF_DIAG_PHASE_COUNT_; i++) DF_ASSERT_EQ_INT(df_diag_phase_from_name(df_diag_phase_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_RESULT_COUNT_; i++)
        DF_ASSERT_EQ_INT(df_diag_result_from_name(df_diag_result_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_TS_COUNT_; i++)
        DF_ASSERT_EQ_INT(df_diag_time_semantics_from_name(df_diag_time_semantics_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_DETAIL_COUNT_; i++)
        DF_ASSERT_EQ_INT(df_diag_detail_from_name(df_diag_detail_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_TITLE_COUNT_; i++) DF_ASSERT_EQ_INT(df_diag_title_from_name(df_diag_title_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_SEM_COUNT_; i++)
        DF_ASSERT_EQ_INT(df_diag_semantic_kind_from_name(df_diag_semantic_kind_name(i)), i);
    for (unsigned i = 1; i < DF_DIAG_MODE_COUNT_; i++)
        DF_ASSERT_EQ_INT(df_diag_capture_mode_from_name(df_diag_capture_mode_name(i)), i);
    for (unsigned i = 0; i < DF_DIAG_BACKEND_COUNT_; i++) {
        df_diag_backend b = DF_DIAG_BACKEND_COUNT_;
        DF_ASSERT(df_diag_backend_from_name(df_diag_backend_name(i), &b));
        DF_ASSERT_EQ_INT(b, i);
    }
    for (unsigned s = 1; s < DF_DIAG_STAGE_COUNT_; s++) {
        DF_ASSERT_EQ_INT(df_diag_stage_from_name(df_diag_stage_name(s)), s);
        DF_ASSERT(df_diag_stage_category(s)[0] != 0);
        DF_ASSERT(df_diag_stage_row(s)->kinds != 0);
    }
    /* Nothing outside the lists is recognised. */
    DF_ASSERT_EQ_INT(df_diag_op_kind_from_span_name("Delta Funnel"), DF_DIAG_OP_NONE_);
    DF_ASSERT_EQ_INT(df_diag_phase_from_name(NULL), DF_DIAG_PHASE_NONE_);
    DF_ASSERT_EQ_INT(df_diag_stage_from_name("planning"), DF_DIAG_STAGE_NONE_);
    /* Out-of-range values and the unset result keep their documented names. */
    DF_ASSERT_EQ_STR(df_diag_result_name(DF_DIAG_RESULT_UNSET), "cancelled");
    DF_ASSERT_EQ_STR(df_diag_stage_name(DF_DIAG_STAGE_COUNT_), "");
    DF_ASSERT(df_diag_stage_timing_name(DF_DIAG_STAGE_EXECUTE_OUTPUT) == NULL);
    DF_ASSERT(df_diag_track_part_numbered(DF_DIAG_TRACK_PART_OPERATION));
    DF_ASSERT(!df_diag_track_part_numbered(DF_DIAG_TRACK_PART_PHASES));
}

/* The scope and owner of the query of each operation kind. */
static df_diag_query_scope query_scope_of(df_diag_op_kind k) {
    return k == DF_DIAG_OP_PREVIEW ? DF_DIAG_QUERY_PREVIEW
           : k == DF_DIAG_OP_MSSQL_WRITE ? DF_DIAG_QUERY_MSSQL_OUTPUT
                                         : DF_DIAG_QUERY_WRITE_ALL_CACHE_ALIAS;
}

/* Records one operation of kind `k` with every phase, every allowed stage, details and a query. */
static void record_operation(df_diag_op_kind k, unsigned *next_detail) {
    df_error err = {0};
    df_diag_operation *op = NULL;
    DF_ASSERT_OK(df_diag_operation_begin(k, NULL, &op, &err), &err);
    uint64_t owner = k == DF_DIAG_OP_PREVIEW ? 0 : 1; /* phases track and an owner track */
    for (unsigned ph = 1; ph < DF_DIAG_PHASE_COUNT_; ph++) {
        df_diag_span phase = df_diag_phase_begin(op, ph);
        /* The stages are spread over the phases; which phase holds which does not matter here. */
        for (unsigned s = ph; s < DF_DIAG_STAGE_COUNT_; s += DF_DIAG_PHASE_COUNT_ - 1) {
            if (!df_diag_stage_allowed(s, k)) continue;
            df_diag_span st = df_diag_stage_begin(op, s, owner);
            DF_ASSERT(df_diag_span_active(st));
            unsigned d = (*next_detail)++ % (DF_DIAG_DETAIL_COUNT_ - 1) + 1;
            df_diag_span_end(df_diag_detail_begin(d), DF_DIAG_RESULT_OK);
            df_diag_span_end(st, DF_DIAG_RESULT_OK);
        }
        if (ph == DF_DIAG_PHASE_EXECUTION) {
            df_diag_query *q = NULL;
            DF_ASSERT_OK(df_diag_query_begin(op, query_scope_of(k), k == DF_DIAG_OP_PREVIEW ? NULL : "orders", &q, &err),
                         &err);
            DF_ASSERT(q != NULL);
            df_diag_span_end(df_diag_query_planning_begin(q), DF_DIAG_RESULT_OK);
            df_diag_node scan = {0, -1, df_diag_name_intern("DeltaScanExec")};
            uint64_t stream = df_diag_query_next_stream_id(q);
            df_diag_span task = df_diag_task_begin(q, 1);
            df_diag_span_end(df_diag_activity_begin(q, &scan, DF_DIAG_ACTIVITY_EXECUTE, 1, stream),
                             DF_DIAG_RESULT_STREAM);
            df_diag_span poll = df_diag_activity_begin(q, &scan, DF_DIAG_ACTIVITY_POLL_NEXT, 1, stream);
            df_diag_async_span aw = df_diag_await_output_begin(q, scan.node_id, 1, stream);
            df_diag_span_end(df_diag_detail_begin(DF_DIAG_DETAIL_OBJECT_STORE_TRANSPORT), DF_DIAG_RESULT_OK);
            df_diag_async_span_end(&aw, DF_DIAG_RESULT_OK);
            df_diag_span_end(poll, DF_DIAG_RESULT_BATCH);
            df_diag_span_end(task, DF_DIAG_RESULT_OK);
        }
        df_diag_span_end(phase, DF_DIAG_RESULT_OK);
    }
    df_diag_operation_end(op, DF_DIAG_RESULT_OK);
    df_diag_operation_destroy(op);
}

/* The first semantic node of operation `op_id` with `name` and `kind`, or NULL. */
static const df_report_semantic *find_node(const df_report_profile *p, int64_t op_id, const char *name,
                                           const char *kind) {
    for (size_t i = 0; i < p->nsems; i++) {
        const df_report_semantic *s = &p->sems[i];
        if (s->operation_id == op_id && !strcmp(df__report_sem_str(p, s, DF_REPORT_S_NAME), name) &&
            !strcmp(df__report_sem_str(p, s, DF_REPORT_S_KIND), kind))
            return s;
    }
    return NULL;
}

static const char *field(const df_report_profile *p, const df_report_semantic *s, int f) {
    const char *v = df__report_sem_str(p, s, f);
    return v ? v : "(null)";
}

DF_TEST(a_trace_of_every_name_reads_back_with_the_same_names) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/df-report-vocab-%d.pftrace", (int)getpid());
    unlink(path);
    df_diag_capture_options o = {.trace_path = path};
    df_diag_capture *c = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &err), &err);
    unsigned next_detail = 0;
    for (unsigned k = 1; k < DF_DIAG_OP_COUNT_; k++) record_operation(k, &next_detail);
    DF_ASSERT(next_detail >= DF_DIAG_DETAIL_COUNT_ - 1); /* every detail was recorded at least once */
    df_diag_capture_stats stats;
    DF_ASSERT_OK(df_diag_capture_stop(c, &stats, &err), &err);
    df_diag_capture_destroy(c);

    df_report_profile *p = NULL;
    DF_ASSERT_OK(df_report_build_from_trace_file(path, NULL, &p, &err), &err);
    DF_ASSERT_EQ_UINT(p->ix.nroots, DF_DIAG_OP_COUNT_ - 1);
    const char *sem_stage = df_diag_semantic_kind_name(DF_DIAG_SEM_STAGE);
    for (uint32_t r = 0; r < p->ix.nroots; r++) {
        const df_report_semantic *root = &p->sems[p->ix.roots[r]];
        df_diag_op_kind k = df_diag_op_kind_from_span_name(field(p, root, DF_REPORT_S_NAME));
        DF_ASSERT(k != DF_DIAG_OP_NONE_);
        DF_ASSERT_EQ_STR(field(p, root, DF_REPORT_S_KIND), df_diag_semantic_kind_name(DF_DIAG_SEM_OPERATION));
        DF_ASSERT_EQ_STR(field(p, root, DF_REPORT_S_OPERATION_KIND), df_diag_op_kind_name(k));
        DF_ASSERT_EQ_STR(field(p, root, DF_REPORT_S_RESULT), df_diag_result_name(DF_DIAG_RESULT_OK));
        DF_ASSERT_EQ_STR(field(p, root, DF_REPORT_S_TIME_SEMANTICS),
                         df_diag_time_semantics_name(DF_DIAG_TS_WALL_CLOCK));
        int64_t op = root->operation_id;
        for (unsigned ph = 1; ph < DF_DIAG_PHASE_COUNT_; ph++)
            DF_ASSERT(find_node(p, op, df_diag_phase_name(ph), df_diag_semantic_kind_name(DF_DIAG_SEM_PHASE)));
        for (unsigned s = 1; s < DF_DIAG_STAGE_COUNT_; s++) {
            const df_report_semantic *n = find_node(p, op, df_diag_stage_name(s), sem_stage);
            if (!df_diag_stage_allowed(s, k)) {
                DF_ASSERT(n == NULL);
                continue;
            }
            if (!n) df_test_fail(__FILE__, __LINE__, "stage %s of %s not read back", df_diag_stage_name(s),
                                 df_diag_op_kind_name(k));
            DF_ASSERT_EQ_STR(field(p, n, DF_REPORT_S_STAGE_NAME), df_diag_stage_name(s));
            DF_ASSERT_EQ_STR(field(p, n, DF_REPORT_S_STAGE_CATEGORY), df_diag_stage_category(s));
            DF_ASSERT_EQ_STR(field(p, n, DF_REPORT_S_OPERATION_KIND), df_diag_op_kind_name(k));
        }
        const df_report_semantic *plan = find_node(p, op, df_diag_title_name(DF_DIAG_TITLE_QUERY_PLANNING),
                                                   df_diag_semantic_kind_name(DF_DIAG_SEM_QUERY_PLANNING));
        DF_ASSERT(plan != NULL);
        DF_ASSERT_EQ_STR(field(p, plan, DF_REPORT_S_QUERY_SCOPE), df_diag_query_scope_name(query_scope_of(k)));
        DF_ASSERT(find_node(p, op, df_diag_title_name(DF_DIAG_TITLE_QUERY),
                            df_diag_semantic_kind_name(DF_DIAG_SEM_QUERY)));
        const df_report_semantic *aw = find_node(p, op, df_diag_title_name(DF_DIAG_TITLE_AWAIT_OUTPUT),
                                                 df_diag_semantic_kind_name(DF_DIAG_SEM_ACTIVITY));
        DF_ASSERT(aw != NULL);
        DF_ASSERT_EQ_STR(field(p, aw, DF_REPORT_S_ACTIVITY),
                         df_diag_activity_value_name(DF_DIAG_ACTIVITY_AWAIT_OUTPUT));
    }
    /* Details under stages inherit the stage's fields, so they are stage nodes named after the detail. */
    for (unsigned d = 1; d < DF_DIAG_DETAIL_COUNT_; d++) {
        bool found = false;
        for (uint32_t r = 0; r < p->ix.nroots && !found; r++)
            found = find_node(p, p->sems[p->ix.roots[r]].operation_id, df_diag_detail_name(d), sem_stage) != NULL;
        if (!found) df_test_fail(__FILE__, __LINE__, "detail %s not read back", df_diag_detail_name(d));
    }
    df_report_profile_destroy(p);

    /* The health recognisers see every activity of the writer, with its identity. */
    df_report_health h;
    DF_ASSERT_OK(df_report_capture_health_file(path, NULL, &h, &err), &err);
    DF_ASSERT(h.semantic_complete);
    DF_ASSERT_EQ_INT(h.operation_root_count, DF_DIAG_OP_COUNT_ - 1);
    /* Per operation: execute, poll_next, and the detail under poll_next (it inherits the worker identity). */
    DF_ASSERT_EQ_INT(h.operator_slice_count, 3 * (DF_DIAG_OP_COUNT_ - 1));
    DF_ASSERT_EQ_INT(h.execution_activity_slice_count, DF_DIAG_OP_COUNT_ - 1);
    DF_ASSERT_EQ_INT(h.invalid_execution_activity_hierarchy_count, 0);
    DF_ASSERT_EQ_INT(h.missing_identity_field_count, 0);
    DF_ASSERT_EQ_INT(h.missing_terminal_result_count, 0);
    DF_ASSERT_EQ_INT(h.truncation_marker_count, 0);
    unlink(path);
}
