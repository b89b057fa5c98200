/*
 * Diagnostics through the session and the executor: the spans a traced
 * preview records (query planning, partition tasks on runtime lanes,
 * execute / poll_next activities with node, partition and stream
 * identities, the Delta scan's output waits, the coordinator lane), the
 * activity budget with its truncation marker, nothing recorded without a
 * capture, and the public ranked-profile and whole-process APIs
 * (options, aliases, one profile at a time, handshake validation).
 */
#include "df_test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/capture.h"
#include "diag/diag_int.h"
#include "session/session_int.h"

static df_error fresh_error(void) {
    df_error e;
    memset(&e, 0, sizeof e);
    e.offset = -1;
    return e;
}

/* A datagen table of `rows` rows in `files` files, in a new temporary directory (returns <dir>/t). */
static char *make_table(int64_t rows, int32_t files, char **dir_out) {
    char tmpl[] = "/tmp/df_session_diag_XXXXXX";
    char *dir = mkdtemp(tmpl);
    DF_ASSERT(dir != NULL);
    *dir_out = strdup(dir);
    char *path = malloc(strlen(dir) + 8);
    sprintf(path, "%s/t", dir);
    df_datagen_options o;
    df_datagen_options_init(&o);
    o.output = path;
    o.rows = rows;
    o.files = files;
    o.row_group_rows = 4096;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_datagen_run(&o, NULL, &e), &e);
    return path;
}

/* A session with 2 target partitions over a table, and the full-scan query. */
static df_table *scan_query(df_session **s, const char *uri) {
    df_session_options *so;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_session_options_new(&so, &e), &e);
    df_value two = df_value_int(2);
    DF_ASSERT_OK(df_session_options_set(so, "target_partitions", &two, &e), &e);
    DF_ASSERT_OK(df_session_new(so, s, &e), &e);
    df_session_options_free(so);
    df_delta_source *src;
    DF_ASSERT_OK(df_delta_source_new(uri, NULL, NULL, &src, &e), &e);
    df_table *t, *q;
    DF_ASSERT_OK(df_session_register_delta(*s, src, "t", NULL, &t, &e), &e);
    df_delta_source_free(src);
    DF_ASSERT_OK(df_session_table_from_sql(*s, "SELECT id FROM t WHERE id % 7 = 3", &q, &e), &e);
    df_table_release(t);
    return q;
}

static void preview(df_table *q) {
    df_preview_options po;
    df_preview_options_init(&po);
    df_preview *p;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_table_preview(q, &po, &p, &e), &e);
    df_preview_free(p);
}

/* The records of a memory capture around one preview. */
typedef struct recorded {
    unsigned char *log;  /* copy of the records */
    size_t len;          /* bytes */
} recorded;

static recorded capture_preview(df_table *q, uint64_t max_spans) {
    df_diag_capture_options o = {.max_operator_activity_spans = max_spans, .operation_scoped = true};
    df_diag_capture *c;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_diag_capture_start(&o, &c, &e), &e);
    preview(q);
    DF_ASSERT_OK(df_diag_capture_stop(c, NULL, &e), &e);
    recorded r;
    const unsigned char *log = df_diag_capture_log(c, &r.len);
    r.log = malloc(r.len ? r.len : 1);
    memcpy(r.log, log, r.len);
    df_diag_capture_destroy(c);
    return r;
}

/* Iterates the begin records of a log. */
#define FOR_BEGINS(r, b)                                                                  \
    for (size_t off_ = 0; off_ < (r).len; off_ += ((const df_diag_ev_head *)((r).log + off_))->size) \
        for (const df_diag_ev_begin *b = (const df_diag_ev_begin *)((r).log + off_);       \
             b && b->h.type == DF_DIAG_EV_BEGIN; b = NULL)

DF_TEST(a_traced_preview_records_tasks_activities_and_scan_waits) {
    char *dir;
    char *uri = make_table(60000, 3, &dir);
    df_session *s;
    df_table *q = scan_query(&s, uri);
    recorded r = capture_preview(q, 0);
    int planning = 0, tasks = 0, execute = 0, poll = 0, waits = 0, coordinator = 0, runtime = 0;
    uint64_t max_lane = 0;
    bool scan_named = false;
    FOR_BEGINS(r, b) {
        const df_diag_ident *id = &b->ident;
        switch (b->h.kind) {
        case DF_DIAG_SK_PLANNING: planning++; break;
        case DF_DIAG_SK_TASK:
            tasks++;
            DF_ASSERT_EQ_INT(id->worker_kind, DF_DIAG_WK_RUNTIME);
            DF_ASSERT(id->worker_lane_id >= 1 && id->operator_partition >= 0);
            break;
        case DF_DIAG_SK_ACTIVITY:
            DF_ASSERT(id->query_execution_id == 1 && id->node_id >= 0 && id->execution_stream_id >= 1);
            DF_ASSERT_EQ_INT(b->track.kind, DF_DIAG_TK_WORKER);
            if (id->activity == DF_DIAG_ACTIVITY_EXECUTE) execute++;
            if (id->activity == DF_DIAG_ACTIVITY_POLL_NEXT) poll++;
            coordinator += id->worker_kind == DF_DIAG_WK_COORDINATOR;
            runtime += id->worker_kind == DF_DIAG_WK_RUNTIME;
            if (id->worker_kind == DF_DIAG_WK_COORDINATOR) DF_ASSERT_EQ_UINT(id->worker_lane_id, 0);
            max_lane = DF_MAX(max_lane, id->worker_lane_id);
            if (!strcmp(df_diag_name_get(b->name_id), "DeltaScanExec")) scan_named = true;
            if (id->node_id == 0) DF_ASSERT_EQ_INT(id->parent_node_id, -1);
            else DF_ASSERT(id->parent_node_id >= 0 && id->parent_node_id < id->node_id);
            break;
        case DF_DIAG_SK_AWAIT:
            waits++;
            DF_ASSERT_EQ_INT(b->track.kind, DF_DIAG_TK_STREAM);
            DF_ASSERT(b->ident.execution_stream_id >= 1 && b->ident.node_id >= 0);
            break;
        default: break;
        }
    }
    DF_ASSERT_EQ_INT(planning, 1);
    DF_ASSERT(tasks >= 2);                      /* the scan's partitions run as tasks */
    DF_ASSERT(execute >= 3 && poll > execute);  /* every operator state executes once, polls many times */
    DF_ASSERT(coordinator > 0 && runtime > 0);  /* the consumer on lane 0, workers on runtime lanes */
    DF_ASSERT(max_lane >= 1 && max_lane <= 2);  /* lanes are bounded by the concurrent tasks */
    DF_ASSERT(scan_named);
    DF_ASSERT(waits >= 5);                      /* 60,000 rows in 4,096-row row groups */
    free(r.log);
    /* Without a capture the same preview records nothing and runs unchanged. */
    preview(q);
    df_table_release(q);
    df_session_free(s);
    free(uri);
    free(dir);
}

DF_TEST(the_activity_budget_keeps_task_roots_and_marks_truncation) {
    char *dir;
    char *uri = make_table(60000, 3, &dir);
    df_session *s;
    df_table *q = scan_query(&s, uri);
    recorded r = capture_preview(q, 8);
    int markers = 0, activities = 0, roots = 0, nested = 0, waits = 0;
    for (size_t off = 0; off < r.len; off += ((const df_diag_ev_head *)(r.log + off))->size) {
        const df_diag_ev_head *h = (const df_diag_ev_head *)(r.log + off);
        if (h->type == DF_DIAG_EV_INSTANT && h->kind == DF_DIAG_IK_TRUNCATED) {
            markers++;
            DF_ASSERT_EQ_UINT(((const df_diag_ev_instant *)h)->maximum_spans, 8);
        }
        if (h->type != DF_DIAG_EV_BEGIN) continue;
        if (h->kind == DF_DIAG_SK_AWAIT) waits++;
        if (h->kind == DF_DIAG_SK_ACTIVITY) activities++;
    }
    DF_ASSERT_EQ_INT(markers, 1);
    DF_ASSERT(activities > 8); /* task roots stay recorded past the budget */
    DF_ASSERT(waits <= 8);
    (void)roots, (void)nested;
    free(r.log);
    df_table_release(q);
    df_session_free(s);
    free(uri);
    free(dir);
}

/* ------------------------------------------------------------------------ */
/* The public ranked-profile API.                                            */

/* Copies the kind string of a diagnostics error into buf (64 bytes); such errors carry no context. */
static char kind_of(const df_error *e, char *buf) {
    snprintf(buf, 64, "%s", df_errkind_name(e->kind));
    DF_ASSERT(e->context == NULL);
    return buf[0];
}

DF_TEST(ranked_profile_writes_private_outputs_and_cleans_up) {
    char *dir;
    char *uri = make_table(20000, 2, &dir);
    df_session *s;
    df_table *q = scan_query(&s, uri);
    char report[512], art[512];
    snprintf(report, sizeof report, "%s/out/a/r.html", dir);
    snprintf(art, sizeof art, "%s/out/b/r.dfprofile", dir);
    df_ranked_profile_options o;
    df_ranked_profile_options_init(&o);
    DF_ASSERT_EQ_INT(o.sample_hz, 1000);
    DF_ASSERT_EQ_UINT(o.max_operator_activity_spans, 100000);
    o.report_path = report;
    o.artifact_path = art;
    o.sample_hz = 100;
    df_ranked_profile *rp;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_ranked_profile_start(&o, &rp, &e), &e);
    /* One at a time. */
    df_ranked_profile *second = (df_ranked_profile *)1;
    char k[64];
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &second, &e), DF_ERR_PROFILE_ALREADY_ACTIVE);
    DF_ASSERT(second == NULL);
    kind_of(&e, k);
    DF_ASSERT_EQ_STR(k, "profile_already_active");
    DF_ASSERT_EQ_STR(e.phase, "ranked_profile");
    df_error_clear(&e);
    preview(q);
    df_ranked_profile_result res;
    DF_ASSERT_OK(df_ranked_profile_finish(rp, &res, &e), &e);
    DF_ASSERT(res.capture_scope_id > 0 && res.semantic_nodes >= 10 && res.capture_complete);
    DF_ASSERT(res.backend[0] && res.backend_reason[0]);
    struct stat st;
    DF_ASSERT(stat(report, &st) == 0 && (st.st_mode & 0777) == 0600);
    DF_ASSERT(stat(art, &st) == 0 && (st.st_mode & 0777) == 0600);
    char out_a[512];
    snprintf(out_a, sizeof out_a, "%s/out/a", dir);
    DF_ASSERT(rmdir(out_a) != 0); /* holds the report only: the temporary directory is gone */
    unlink(report);
    DF_ASSERT(rmdir(out_a) == 0);
    /* A second profile may start now. */
    DF_ASSERT_OK(df_ranked_profile_start(&o, &rp, &e), &e);
    preview(q);
    DF_ASSERT_OK(df_ranked_profile_finish(rp, NULL, &e), &e);
    /* Without operations in the scope, the report fails with the report's kind. */
    unlink(report);
    DF_ASSERT_OK(df_ranked_profile_start(&o, &rp, &e), &e);
    DF_ASSERT_KIND(df_ranked_profile_finish(rp, NULL, &e), DF_ERR_INCOMPLETE_CAPTURE);
    kind_of(&e, k);
    DF_ASSERT_EQ_STR(k, "incomplete_capture");
    DF_ASSERT_EQ_STR(e.phase, "ranked_profile");
    df_error_clear(&e);
    DF_ASSERT(stat(report, &st) != 0);
    DF_ASSERT_OK(df_ranked_profile_finish(NULL, NULL, &e), &e);
    df_table_release(q);
    df_session_free(s);
    free(uri);
    free(dir);
}

DF_TEST(ranked_profile_options_are_checked_before_anything_exists) {
    char tmpl[] = "/tmp/df_session_diag_XXXXXX";
    char *dir = mkdtemp(tmpl);
    char real[512], link[512], a[512], b[512];
    snprintf(real, sizeof real, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    DF_ASSERT(mkdir(real, 0700) == 0 && symlink(real, link) == 0);
    df_ranked_profile_options o;
    df_ranked_profile_options_init(&o);
    df_ranked_profile *rp;
    df_error e = fresh_error();
    snprintf(a, sizeof a, "%s/real/p.html", dir);
    snprintf(b, sizeof b, "%s/link/./x/../p.html", dir);
    o.report_path = a;
    o.artifact_path = b;
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &rp, &e), DF_ERR_INVALID_OPTION_VALUE);
    DF_ASSERT_EQ_STR(e.phase, "config");
    DF_ASSERT(rp == NULL);
    o.artifact_path = NULL;
    o.sample_hz = 250;
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &rp, &e), DF_ERR_INVALID_OPTION_VALUE);
    o.sample_hz = 1000;
    o.max_operator_activity_spans = 0;
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &rp, &e), DF_ERR_INVALID_OPTION_VALUE);
    o.max_operator_activity_spans = 1;
    o.report_path = "";
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &rp, &e), DF_ERR_INVALID_OPTION_VALUE);
    o.report_path = real; /* a directory */
    DF_ASSERT_KIND(df_ranked_profile_start(&o, &rp, &e), DF_ERR_OUTPUT_UNAVAILABLE);
    char k[64];
    kind_of(&e, k);
    DF_ASSERT_EQ_STR(k, "output_unavailable");
    df_error_clear(&e);
    struct stat st;
    DF_ASSERT(stat(a, &st) != 0);
    unlink(link);
    rmdir(real);
    rmdir(dir);
}

/* Each test runs in its own process, so the remembered first result is per test. */
static void expect_handshake(const df_perfetto_handshake *h, df_errkind kind, const char *specific) {
    df_error e = fresh_error();
    char k[64];
    DF_ASSERT_KIND(df_perfetto_diagnostics_start(h, 1.0, &e), kind);
    kind_of(&e, k);
    DF_ASSERT_EQ_STR(k, specific);
    DF_ASSERT_EQ_STR(e.phase, "perfetto_diagnostics");
    df_error_clear(&e);
    /* Remembered: a second call returns the same result without another attempt. */
    DF_ASSERT_KIND(df_perfetto_diagnostics_start(NULL, 1.0, &e), kind);
    kind_of(&e, k);
    DF_ASSERT_EQ_STR(k, specific);
    df_error_clear(&e);
    DF_ASSERT(!df_perfetto_diagnostics_active());
    df_perfetto_diagnostics_finish(); /* nothing to finish */
}

DF_TEST(whole_process_without_a_wrapper_is_unavailable) {
    expect_handshake(NULL, DF_ERR_CAPTURE_UNAVAILABLE, "capture_unavailable");
    DF_ASSERT_EQ_STR(df_perfetto_handshake_variables[0], "DELTA_FUNNEL_PERFETTO_GATE_SOCKET");
    DF_ASSERT(df_perfetto_handshake_variables[6] == NULL);
}

DF_TEST(whole_process_partial_handshake_is_invalid) {
    df_perfetto_handshake h = {"/tmp/x.sock", "1", NULL, "/tmp/x.pftrace", "short", "1000"};
    expect_handshake(&h, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "capture_handshake_invalid");
}

DF_TEST(whole_process_malformed_handshake_is_invalid) {
    char self[32];
    snprintf(self, sizeof self, "%d", (int)getpid());
    df_perfetto_handshake h = {"relative.sock", "1", self, "/tmp/x.pftrace", "short", "1000"};
    expect_handshake(&h, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "capture_handshake_invalid");
}

DF_TEST(whole_process_bad_pid_is_invalid) {
    df_perfetto_handshake h = {"/tmp/x.sock", "-3", "12", "/tmp/x.pftrace", "short", "1000"};
    expect_handshake(&h, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "capture_handshake_invalid");
}

DF_TEST(whole_process_handshake_of_another_process_fails) {
    char other[32];
    snprintf(other, sizeof other, "%d", (int)getpid() + 1);
    df_perfetto_handshake h = {"/tmp/x.sock", "1", other, "/tmp/x.pftrace", "streaming", "100"};
    expect_handshake(&h, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "capture_handshake_failed");
}

DF_TEST(whole_process_gate_not_held_by_the_wrapper_fails) {
    char self[32];
    snprintf(self, sizeof self, "%d", (int)getpid());
    df_perfetto_handshake h = {"/tmp/df-no-such-gate.sock", "1", self, "/tmp/x.pftrace", "deep-system", "100"};
    expect_handshake(&h, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "capture_handshake_failed");
}
