/*
 * Terminal inspector: the exact one-shot layout, health block,
 * selections, function views, limits with the reserved function row,
 * filters, sorts, escaping of hostile names, option validation, and the
 * interactive commands.
 */
#include "report_test_util.h"

static const char HEALTHY_HEADER[] =
    "view: ranked-profile\n"
    "context: operation-roots\n"
    "sort: duration\n"
    "filter: none\n"
    "depth: 0\n"
    "showing: 1 of 1; truncated: false\n"
    "time_unit: nanoseconds\n"
    "sample_unit: samples\n"
    "symbol_format: compact\n"
    "frame_view: compact\n"
    "sampled_cpu_count: 3\n"
    "native_stack_samples_captured: 4\n"
    "native_leaf_symbols_resolved: 3\n"
    "native_leaf_symbols_unresolved: 1\n"
    "native_unwind_failures: 1\n"
    "native_callstacks_missing: 1\n"
    "trace_profiler_samples_dropped: 0\n";

DF_TEST(root_view_exact_layout) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspect_options o = {.depth = -1};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(strncmp(out, HEALTHY_HEADER, strlen(HEALTHY_HEADER)) == 0);
    DF_ASSERT_EQ_STR(out + strlen(HEALTHY_HEADER),
                     "semantic depth=0 id=semantic:1 name=\"Delta Funnel preview (operation 1)\" kind=\"operation\" "
                     "duration_ns=2000 time_basis=exact:wall_clock operation_wall_percent=100.00% complete=true "
                     "result=\"ok\" direct_cpu_samples=0 inclusive_cpu_samples=6 native_stack_samples_captured=0 "
                     "native_leaf_symbols_resolved=0 native_leaf_symbols_unresolved=0 native_unwind_failures=0 "
                     "native_callstacks_missing=0\n");
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(health_block_only_when_unhealthy) {
    df_report_profile *p = rt_build(scenario_incomplete(), 0);
    df_report_inspect_options o = {.depth = -1};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "capture_complete: false"));
    DF_ASSERT(rt_has_line(out, "incomplete_operation_root_count: 1"));
    DF_ASSERT(rt_has_line(out, "flush_failure_count: 0"));
    DF_ASSERT(strstr(out, "capture_complete: false\nsemantic_complete: false\nfinalization_observed: false\n"
                          "incomplete_operation_root_count: 1\n") != NULL);
    DF_ASSERT(strstr(out, "flush_failure_count: 0\nsort: duration\n") != NULL);
    DF_ASSERT(strstr(out, "duration_ns=n/a time_basis=exact:wall_clock operation_wall_percent=n/a complete=false result=null") != NULL);
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(selected_semantic_lists_children_then_function_roots) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspect_options o = {.depth = -1, .has_semantic = true, .semantic_id = 8};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "context: semantic:8"));
    DF_ASSERT(rt_has_line(out, "depth: 1"));
    DF_ASSERT(rt_has_line(out, "showing: 3 of 3; truncated: false"));
    DF_ASSERT(strstr(out, "semantic depth=1 id=semantic:9 name=\"Await Delta scan output\" kind=\"activity\" duration_ns=50 ") != NULL);
    DF_ASSERT(strstr(out, "operation_wall_percent=2.50%") != NULL);
    DF_ASSERT(rt_has_line(out, "transition: semantic:8 -> function-roots; sort: inclusive-cpu; showing: 2 of 2; "
                               "truncated: false; sample_basis: sampled-cpu"));
    DF_ASSERT(rt_has_line(out, "function depth=1 id=function:8:5 symbol=\"BlockingTask::poll\" module=\"dfapp\" source=null "
                               "line=null inclusive_cpu_samples=3 inclusive_context_percent=50.00% self_cpu_samples=0 "
                               "self_context_percent=0.00%"));
    DF_ASSERT(rt_has_line(out, "function depth=1 id=function:8:3 symbol=\"coalesce_next\" module=\"dfapp\" "
                               "source=\"src/exec/coalesce.c\" line=30 inclusive_cpu_samples=1 "
                               "inclusive_context_percent=16.67% self_cpu_samples=1 self_context_percent=16.67%"));
    /* The poll frame (inclusive 3) sorts before coalesce (1). */
    DF_ASSERT(strstr(out, "function:8:5") < strstr(out, "function:8:3"));
    df_free(out);
    /* All frames: the full roots main and start_thread. */
    o.all_frames = true;
    out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "frame_view: all"));
    DF_ASSERT(strstr(out, "id=function:8:4 symbol=\"start_thread\"") != NULL);
    DF_ASSERT(strstr(out, "id=function:8:1 symbol=\"main\"") != NULL);
    DF_ASSERT(strstr(out, "function:8:5") == NULL);
    df_free(out);
    /* Depth 0 hides functions and the transition. */
    o.all_frames = false;
    o.depth = 0;
    out = rt_inspect(p, &o);
    DF_ASSERT(strstr(out, "transition:") == NULL && strstr(out, "function depth") == NULL);
    DF_ASSERT(rt_has_line(out, "showing: 0 of 0; truncated: false"));
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(function_view_and_symbols) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspect_options o = {.depth = 2, .has_function = true, .function_semantic_id = 8, .function_id = 5};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "context: function:8:5"));
    DF_ASSERT(strstr(out, "time_unit:") == NULL);
    DF_ASSERT(rt_has_line(out, "metric_basis: sampled-cpu; exact_wall_time: not-applicable"));
    DF_ASSERT(rt_has_line(out, "sort: inclusive-cpu"));
    DF_ASSERT(rt_has_line(out, "showing: 3 of 3; truncated: false"));
    DF_ASSERT(strstr(out, "function depth=1 id=function:8:7 symbol=\"df_scan_next\"") != NULL);
    DF_ASSERT(strstr(out, "inclusive_cpu_samples=2 inclusive_context_percent=66.67%") != NULL);
    DF_ASSERT(strstr(out, "function depth=2 id=function:8:8 symbol=\"decode_plain\"") != NULL);
    DF_ASSERT(strstr(out, "function depth=1 id=function:8:6 symbol=\"[unresolved]\" module=\"libz.so.1\"") != NULL);
    df_free(out);
    o.full_symbols = true;
    out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "symbol_format: full"));
    DF_ASSERT(strstr(out, "symbol=\"decode_plain.constprop.0\"") != NULL);
    df_free(out);
    /* Exact function filter. */
    o.full_symbols = false;
    o.filter = "function:8:8";
    out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "showing: 2 of 2; truncated: false")); /* the match and its ancestor */
    DF_ASSERT(strstr(out, "function:8:6") == NULL);
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(filters_and_sorts) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspect_options o = {.depth = 3, .filter = "Delta scan"};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "filter: \"Delta scan\""));
    /* The match (depth 3) with its ancestors Planning, DataFrame planning, query planning, root. */
    DF_ASSERT(rt_has_line(out, "showing: 4 of 4; truncated: false"));
    DF_ASSERT(strstr(out, "id=semantic:6") == NULL); /* depth 4: outside the bound */
    df_free(out);
    o.depth = 4;
    out = rt_inspect(p, &o);
    DF_ASSERT(strstr(out, "semantic depth=4 id=semantic:6 name=\"Delta scan planning\"") != NULL);
    df_free(out);
    o.filter = "semantic:1";
    o.depth = 2;
    out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "showing: 1 of 1; truncated: false"));
    df_free(out);
    /* name sort (code points) of the phases */
    df_report_inspect_options s = {.depth = 1, .sort = DF_REPORT_SORT_NAME, .has_semantic = true, .semantic_id = 1};
    out = rt_inspect(p, &s);
    const char *e = strstr(out, "name=\"Execution\""), *f = strstr(out, "name=\"Finalization\""), *pl = strstr(out, "name=\"Planning\"");
    DF_ASSERT(e && f && pl && e < f && f < pl);
    df_free(out);
    s.sort = DF_REPORT_SORT_DEFAULT;
    out = rt_inspect(p, &s);
    e = strstr(out, "name=\"Execution\""), f = strstr(out, "name=\"Finalization\""), pl = strstr(out, "name=\"Planning\"");
    DF_ASSERT(e && f && pl && e < pl && pl < f); /* duration desc: Execution 800, Planning 700, Finalization 50 */
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(limit_reserves_one_row_for_function_roots) {
    df_report_profile *p = rt_build(scenario_wide(NULL), 0);
    df_report_inspect_options o = {.depth = -1, .limit = 200, .has_semantic = true, .semantic_id = 2};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(rt_has_line(out, "showing: 200 of 204; truncated: true"));
    size_t sem = 0, fn = 0;
    for (const char *q = out; (q = strstr(q, "\nsemantic depth=1")) != NULL; q++) sem++;
    for (const char *q = out; (q = strstr(q, "\nfunction depth=1")) != NULL; q++) fn++;
    DF_ASSERT_EQ_UINT(sem, 199);
    DF_ASSERT_EQ_UINT(fn, 1);
    DF_ASSERT(rt_has_line(out, "transition: semantic:2 -> function-roots; sort: inclusive-cpu; showing: 1 of 2; "
                               "truncated: true; sample_basis: sampled-cpu"));
    df_free(out);
    df_report_profile_destroy(p);
}

DF_TEST(hostile_names_are_escaped) {
    df_report_profile *p = rt_build(scenario_wide("west\x1b[2J\"\\\xE2\x80\xAE" "evil"), 0);
    df_report_inspect_options o = {.depth = 2, .limit = 200, .filter = "west"};
    char *out = rt_inspect(p, &o);
    DF_ASSERT(strchr(out, 0x1b) == NULL);
    DF_ASSERT(strstr(out, "\xE2\x80\xAE") == NULL);
    DF_ASSERT(strstr(out, "name=\"DataFusion query planning (west\\u{1B}[2J\\\"\\\\\\u{202E}evil)\"") != NULL);
    df_free(out);
    df_report_profile_destroy(p);
}

static void expect_option_error(const df_report_inspect_options *o, const char *reason, const char *message) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspector *in = NULL;
    df_error err = {0};
    df_errkind k = df_report_inspector_create(p, o, &in, &err);
    DF_ASSERT_EQ_STR(df_errkind_name(k), reason);
    DF_ASSERT_EQ_INT(err.kind, k);
    DF_ASSERT(err.context == NULL);
    DF_ASSERT_EQ_STR(err.message, message);
    DF_ASSERT_EQ_STR(err.phase, "argument");
    df_error_clear(&err);
    df_report_profile_destroy(p);
}

DF_TEST(option_validation) {
    expect_option_error(&(df_report_inspect_options){.limit = 201, .depth = -1}, "invalid_limit", "limit must be between 1 and 200");
    expect_option_error(&(df_report_inspect_options){.depth = 33}, "invalid_depth", "depth must be between 0 and 32");
    char f[130];
    memset(f, 'x', 129);
    f[129] = 0;
    expect_option_error(&(df_report_inspect_options){.depth = -1, .filter = f}, "invalid_filter",
                        "filter must contain between 1 and 128 characters");
    expect_option_error(&(df_report_inspect_options){.depth = -1, .filter = ""}, "invalid_filter",
                        "filter must contain between 1 and 128 characters");
    expect_option_error(&(df_report_inspect_options){.depth = -1, .has_semantic = true, .has_function = true},
                        "incompatible_selectors", "--semantic and --function cannot be used together");
    expect_option_error(&(df_report_inspect_options){.depth = -1, .has_function = true, .sort = DF_REPORT_SORT_DURATION},
                        "incompatible_sort", "function callsites cannot be sorted by exact duration");
    expect_option_error(&(df_report_inspect_options){.depth = -1, .has_semantic = true, .semantic_id = 99},
                        "semantic_not_found", "semantic:99 does not exist");
    expect_option_error(&(df_report_inspect_options){.depth = -1, .has_function = true, .function_semantic_id = 2, .function_id = 10},
                        "function_not_found", "function:2:10 does not exist");
}

/* Runs one interactive command; returns its response (caller frees) or NULL on error (message in msg). */
static char *cmd(df_report_inspector *in, const char *line, char *msg, bool *quit) {
    df_buf b;
    df_buf_init(&b, 0);
    df_error err = {0};
    bool q = false;
    df_errkind k = df_report_inspector_command(in, line, strlen(line), &b, &q, &err);
    if (quit) *quit = q;
    if (k != DF_OK) {
        snprintf(msg, 512, "%s", err.message);
        df_error_clear(&err);
        df_buf_free(&b);
        return NULL;
    }
    char *s = df_buf_take(&b);
    return s ? s : df_strdup("");
}

static void expect_cmd_error(df_report_inspector *in, const char *line, const char *message) {
    char msg[512] = "";
    char *out = cmd(in, line, msg, NULL);
    if (out) df_test_fail(__FILE__, __LINE__, "command \"%s\" succeeded", line);
    DF_ASSERT_EQ_STR(msg, message);
}

DF_TEST(interactive_commands) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    df_report_inspector *in = NULL;
    DF_ASSERT_OK(df_report_inspector_create(p, &(df_report_inspect_options){.depth = -1}, &in, NULL), NULL);
    char msg[512];
    bool quit = false;
    char *out = cmd(in, "help", msg, NULL);
    DF_ASSERT_EQ_STR(out, "commands: show, open semantic:ID, open function:SEMANTIC_ID:FUNCTION_ID, up, root, sort METRIC, "
                          "filter TEXT, clear, limit N, help, quit\n");
    df_free(out);
    expect_cmd_error(in, "open semantic:8", "semantic target is not an immediate child");
    expect_cmd_error(in, "open semantic:x", "invalid semantic identity; expected semantic:ID");
    expect_cmd_error(in, "open function:1", "invalid function identity; expected function:SEMANTIC_ID:FUNCTION_ID");
    expect_cmd_error(in, "open thing", "invalid open target; expected semantic:ID or function:SEMANTIC_ID:FUNCTION_ID");
    expect_cmd_error(in, "up", "already at operation roots");
    expect_cmd_error(in, "sort", "invalid sort; expected sort METRIC");
    expect_cmd_error(in, "sort fastest", "invalid sort; expected duration, inclusive-cpu, self-cpu, or name");
    expect_cmd_error(in, "limit", "invalid limit; expected limit N");
    expect_cmd_error(in, "limit x", "invalid limit; expected limit N");
    expect_cmd_error(in, "limit 0", "limit must be between 1 and 200");
    expect_cmd_error(in, "filter", "filter must contain between 1 and 128 characters");
    expect_cmd_error(in, "launch", "unknown interactive command");
    expect_cmd_error(in, "show \xff", "interactive command must be valid UTF-8");
    char big[1100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    expect_cmd_error(in, big, "interactive command exceeds the 1024-byte limit");
    /* Navigation: roots -> semantic:1 -> semantic:7 -> semantic:8 -> function -> up -> up. */
    out = cmd(in, "open semantic:1", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: semantic:1"));
    DF_ASSERT(rt_has_line(out, "depth: 1"));
    df_free(out);
    df_free(cmd(in, "open semantic:7", msg, NULL));
    out = cmd(in, "open semantic:8\r", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: semantic:8"));
    df_free(out);
    expect_cmd_error(in, "open function:8:7", "function target is not an immediate child");
    out = cmd(in, "open function:8:5", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: function:8:5"));
    DF_ASSERT(rt_has_line(out, "sort: inclusive-cpu")); /* duration switched to inclusive-cpu */
    df_free(out);
    expect_cmd_error(in, "sort duration", "function callsites cannot be sorted by exact duration");
    df_free(cmd(in, "open function:8:7", msg, NULL));
    out = cmd(in, "up", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: function:8:5"));
    df_free(out);
    out = cmd(in, "up", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: semantic:8"));
    df_free(out);
    out = cmd(in, "limit 1", msg, NULL);
    DF_ASSERT(rt_has_line(out, "showing: 1 of 3; truncated: true"));
    df_free(out);
    out = cmd(in, "  filter Await  ", msg, NULL);
    DF_ASSERT(rt_has_line(out, "filter: \"Await\""));
    DF_ASSERT(rt_has_line(out, "showing: 1 of 1; truncated: false"));
    df_free(out);
    out = cmd(in, "clear", msg, NULL);
    DF_ASSERT(rt_has_line(out, "filter: none"));
    df_free(out);
    out = cmd(in, "root", msg, NULL);
    DF_ASSERT(rt_has_line(out, "context: operation-roots"));
    DF_ASSERT(rt_has_line(out, "showing: 1 of 1; truncated: false"));
    df_free(out);
    out = cmd(in, "", msg, &quit);
    DF_ASSERT_EQ_STR(out, "");
    df_free(out);
    out = cmd(in, "quit", msg, &quit);
    DF_ASSERT(quit);
    df_free(out);
    df_report_inspector_destroy(in);
    df_report_profile_destroy(p);
}
