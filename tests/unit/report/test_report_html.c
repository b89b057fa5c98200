/*
 * HTML report: a self-contained page (no network reference, no HTML
 * parsing of data), the embedded data is valid JSON whose strings cannot
 * close the script element, the summary cards and health findings, the
 * diff page, and the byte budget with its explained omission.
 */
#include "report_test_util.h"

#include "common/json.h"

static char *render(const df_report_profile *p, size_t *len) {
    df_buf b;
    df_buf_init(&b, 0);
    df_error err = {0};
    DF_ASSERT_OK(df_report_render_html(p, &b, &err), &err);
    *len = b.len;
    return df_buf_take(&b);
}

/* The text of <script id="profile-data"> (borrowed, NUL-terminated in place). */
static char *data_of(char *page) {
    char *start = strstr(page, "<script id=\"profile-data\" type=\"application/json\">");
    DF_ASSERT(start != NULL);
    start = strchr(start, '>') + 1;
    char *end = strstr(start, "</script>");
    DF_ASSERT(end != NULL);
    *end = 0;
    return start;
}

static void check_self_contained(const char *page) {
    DF_ASSERT(strncmp(page, "<!doctype html>\n<html lang=\"en\">", 32) == 0);
    DF_ASSERT(strstr(page, "<title>Delta Funnel profile report</title>") != NULL);
    DF_ASSERT(strstr(page, "<link rel=\"icon\" href=\"data:,\">") != NULL);
    DF_ASSERT(strstr(page, "color-scheme: light dark") != NULL);
    DF_ASSERT(strstr(page, "http://") == NULL && strstr(page, "https://") == NULL);
    DF_ASSERT(strstr(page, "innerHTML") == NULL);
    DF_ASSERT(strstr(page, "Function metrics are sampled on-CPU observations") != NULL);
    DF_ASSERT(strstr(page, "How to read these metrics") != NULL);
    DF_ASSERT(strstr(page, "role=\"treegrid\" aria-label=\"Ranked operations\"") != NULL);
    DF_ASSERT(strstr(page, "id=\"profile-filter\"") != NULL && strstr(page, "id=\"show-all-frames\"") != NULL);
    DF_ASSERT(strstr(page, "<div id=\"summary\" role=\"status\"") != NULL);
}

DF_TEST(page_is_self_contained_and_data_is_json) {
    df_report_profile *p = rt_build(scenario_preview(), 0);
    size_t len;
    char *page = render(p, &len);
    check_self_contained(page);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Directly attributed</div><div class=\"card-value\">6 (85.7% of eligible)</div>") != NULL);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Native stacks captured</div><div class=\"card-value\">4 (66.7% of direct)</div>") != NULL);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Sample frequency</div><div class=\"card-value\">1000 Hz</div>") != NULL);
    DF_ASSERT(strstr(page, "card-label\">Capture health") == NULL); /* healthy: no health cards */
    DF_ASSERT(strstr(page, "id=\"bounds-note\"") == NULL);
    char *json = data_of(page);
    df_arena arena;
    df_arena_init(&arena, 1 << 16, 0);
    df_json_value *v = NULL;
    df_error err = {0};
    DF_ASSERT_OK(df_json_parse(json, strlen(json), &arena, NULL, &v, &err), &err);
    const df_json_value *meta = df_json_get(v, "metadata");
    int64_t direct;
    DF_ASSERT(df_json_get_i64(meta, "direct_sample_count", &direct) && direct == 6);
    DF_ASSERT_EQ_UINT(df_json_array_len(df_json_get(v, "semantics")), 10);
    DF_ASSERT_EQ_UINT(df_json_array_len(df_json_get(v, "functions")), 8);
    DF_ASSERT_EQ_UINT(df_json_array_len(df_json_get(v, "lanes")), 2);
    const df_json_value *row = df_json_array_at(df_json_get(v, "semantics"), 0);
    DF_ASSERT(df_json_is_string(df_json_array_at(row, 4)));
    DF_ASSERT_EQ_STR(df_json_array_at(row, 4)->u.str.ptr, "Delta Funnel preview (operation 1)");
    df_arena_destroy(&arena);
    df_free(page);
    df_report_profile_destroy(p);
}

DF_TEST(rendering_is_deterministic) {
    df_report_profile *p = rt_build(scenario_write_all(), 0), *q = rt_build(scenario_write_all(), 0);
    size_t a, b;
    char *x = render(p, &a), *y = render(q, &b);
    DF_ASSERT(a == b && memcmp(x, y, a) == 0);
    df_free(x), df_free(y);
    df_report_profile_destroy(p);
    df_report_profile_destroy(q);
}

DF_TEST(health_cards_for_incomplete_captures) {
    df_report_profile *p = rt_build(scenario_incomplete(), 0);
    size_t len;
    char *page = render(p, &len);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Capture</div><div class=\"card-value\">Incomplete</div>") != NULL);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Capture health</div><div class=\"card-value\">1 incomplete operation "
                           "root, 1 missing terminal result, finalization not observed</div>") != NULL);
    DF_ASSERT(strstr(page, "<div class=\"card-label\">Sampling health</div><div class=\"card-value\">1 perf sample without a "
                           "callsite</div>") != NULL);
    df_free(page);
    df_report_profile_destroy(p);
}

/* One operation whose single stage owns `n` samples, each in its own function with a long name. */
static synth *long_symbols(uint32_t n, size_t name_len) {
    synth *s = synth_new();
    synth_config(s, 1000);
    uint64_t proc = synth_process(s, 1), th = synth_thread(s, 1, 1);
    uint64_t diag = synth_diag_track(s, proc), op = synth_op_track(s, diag, 1);
    synth_arg root[] = {SI("operation_id", 1), SS("operation_kind", "preview"), SS("time_semantics", "wall_clock")};
    synth_begin(s, op, 10, SYNTH_PROFILE, "Delta Funnel preview", root, 3);
    synth_begin(s, th, 10, SYNTH_CONTEXT, "Delta Funnel preview", root, 3);
    char *name = malloc(name_len + 32);
    for (uint32_t i = 0; i < n; i++) {
        memset(name, 'a' + (char)(i % 26), name_len);
        snprintf(name + name_len, 32, "_%u</script><b>", i);
        uint64_t f = synth_frame(s, name, "/bin/app", NULL, 0);
        synth_sample(s, 20 + i, 1, 1, 0, &f, 1, false);
    }
    free(name);
    synth_arg r[] = {SS("result", "ok")};
    synth_end(s, op, 100000, SYNTH_PROFILE, r, 1);
    synth_end(s, th, 100000, SYNTH_CONTEXT, r, 1);
    synth_tracing_disabled(s);
    return s;
}

DF_TEST(hostile_symbols_cannot_close_the_script) {
    df_report_profile *p = rt_build(long_symbols(3, 8), 0);
    size_t len;
    char *page = render(p, &len);
    char *json = data_of(page);
    DF_ASSERT(strstr(json, "<") == NULL && strstr(json, ">") == NULL);
    DF_ASSERT(strstr(json, "\\u003c/script\\u003e") != NULL);
    df_free(page);
    df_report_profile_destroy(p);
}

DF_TEST(large_profiles_are_bounded_and_say_so) {
    /* 12,000 functions with 2,000-byte names: about 24 MB of symbols, over the data budget. */
    df_report_profile *p = rt_build(long_symbols(12000, 2000), 0);
    DF_ASSERT_EQ_UINT(p->nfns, 12000);
    size_t len;
    char *page = render(p, &len);
    DF_ASSERT(len <= (size_t)20 * 1000 * 1000);
    DF_ASSERT(strstr(page, "id=\"bounds-note\"") != NULL);
    DF_ASSERT(strstr(page, "of 12000 native frames (hottest first)") != NULL);
    char *json = data_of(page);
    df_arena arena;
    df_arena_init(&arena, 1 << 20, 0);
    df_json_value *v = NULL;
    DF_ASSERT_OK(df_json_parse(json, strlen(json), &arena, NULL, &v, NULL), NULL);
    const df_json_value *bounds = df_json_get(v, "bounds");
    int64_t shown, total;
    DF_ASSERT(df_json_get_i64(bounds, "functions_shown", &shown) && df_json_get_i64(bounds, "functions_total", &total));
    DF_ASSERT_EQ_INT(total, 12000);
    DF_ASSERT(shown > 1000 && shown < 12000);
    DF_ASSERT_EQ_UINT(df_json_array_len(df_json_get(v, "functions")), (size_t)shown);
    df_arena_destroy(&arena);
    df_free(page);
    df_report_profile_destroy(p);
}

DF_TEST(diff_page_matches_paths) {
    df_report_profile *a = rt_build(scenario_preview(), 0), *b = rt_build(scenario_incomplete(), 0);
    df_buf out;
    df_buf_init(&out, 0);
    df_error err = {0};
    DF_ASSERT_OK(df_report_render_diff_html(a, b, "base.dfprofile", "new</b>.dfprofile", &out, &err), &err);
    DF_ASSERT(strstr(out.data, "http://") == NULL && strstr(out.data, "https://") == NULL);
    DF_ASSERT(strstr(out.data, "innerHTML") == NULL);
    char *start = strstr(out.data, "<script id=\"diff-data\" type=\"application/json\">");
    DF_ASSERT(start != NULL);
    start = strchr(start, '>') + 1;
    char *end = strstr(start, "</script>");
    *end = 0;
    df_arena arena;
    df_arena_init(&arena, 1 << 16, 0);
    df_json_value *v = NULL;
    DF_ASSERT_OK(df_json_parse(start, strlen(start), &arena, NULL, &v, &err), &err);
    const df_json_value *rows = df_json_get(v, "rows");
    /* Matching paths line up in one row: the root "... #1" appears once, present in both. */
    size_t roots = 0;
    for (size_t i = 0; i < df_json_array_len(rows); i++) {
        const df_json_value *r = df_json_array_at(rows, i);
        if (!strcmp(df_json_array_at(r, 0)->u.str.ptr, "Delta Funnel preview #1")) {
            roots++;
            int64_t ca, cb, da;
            DF_ASSERT(df_json_value_i64(df_json_array_at(r, 3), &ca) && ca == 1);
            DF_ASSERT(df_json_value_i64(df_json_array_at(r, 8), &cb) && cb == 1);
            DF_ASSERT(df_json_value_i64(df_json_array_at(r, 4), &da) && da == 2000);
            int64_t inc_b;
            DF_ASSERT(df_json_value_i64(df_json_array_at(r, 10), &inc_b) && inc_b == 1); /* incomplete in B */
        }
    }
    DF_ASSERT_EQ_UINT(roots, 1);
    df_arena_destroy(&arena);
    df_buf_free(&out);
    df_report_profile_destroy(a);
    df_report_profile_destroy(b);
}
