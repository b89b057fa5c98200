/*
 * The session layer end to end through the public API: registration,
 * derived tables and aliases (ids, names, errors), previews (text, timings,
 * failures), Arrow streams and datagen.  Tables are generated with datagen
 * into a fresh temporary directory per test.
 */
#include "df_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "session/session_int.h"

static df_error fresh_error(void) {
    df_error e;
    memset(&e, 0, sizeof e);
    e.offset = -1;
    return e;
}

/* A temporary directory holding a datagen table of `rows` rows at <dir>/t. */
static char *make_table(int64_t rows, int32_t partitions, int32_t files) {
    char tmpl[] = "/tmp/df_session_test_XXXXXX";
    char *dir = mkdtemp(tmpl);
    DF_ASSERT(dir != NULL);
    char *path = malloc(strlen(dir) + 8);
    sprintf(path, "%s/t", dir);
    df_datagen_options o;
    df_datagen_options_init(&o);
    o.output = path;
    o.rows = rows;
    o.partitions = partitions;
    o.files = files;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_datagen_run(&o, NULL, &e), &e);
    return path;
}

static df_session *new_session(void) {
    df_session *s;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_session_new(NULL, &s, &e), &e);
    return s;
}

static df_table *register_source(df_session *s, const char *uri, const char *name) {
    df_delta_source *src;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_delta_source_new(uri, NULL, NULL, &src, &e), &e);
    df_table *t;
    DF_ASSERT_OK(df_session_register_delta(s, src, name, NULL, &t, &e), &e);
    df_delta_source_free(src);
    return t;
}

static char *repr_of(df_table *t) {
    char *r;
    DF_ASSERT_OK(df_table_repr(t, &r, NULL), (df_error *)NULL);
    return r;
}

DF_TEST(ids_names_and_reprs_follow_the_reference) {
    char *path = make_table(100, 0, 1);
    df_session *s = new_session();
    df_table *orders = register_source(s, path, "orders");
    DF_ASSERT_EQ_INT(df_table_id(orders), 0);
    DF_ASSERT_EQ_STR(df_table_kind_name(df_table_get_kind(orders)), "delta_source");
    DF_ASSERT_EQ_INT(df_table_snapshot_version(orders), 0);
    DF_ASSERT(strncmp(df_table_source_uri(orders), "file:///tmp/df_session_test_", 28) == 0);
    df_error e = fresh_error();
    df_table *q;
    DF_ASSERT_OK(df_session_table_from_sql(s, "SELECT id FROM orders WHERE id > 10", &q, &e), &e);
    DF_ASSERT_EQ_INT(df_table_id(q), 1);
    char *r = repr_of(q);
    DF_ASSERT_EQ_STR(r, "deltafunnel.Table(id=1, kind=\"derived_sql\", name=\"table_1\")");
    df_free(r);
    df_table *alias;
    DF_ASSERT_OK(df_table_alias(q, "recent_orders", &alias, &e), &e);
    DF_ASSERT_EQ_INT(df_table_id(alias), 1);
    r = repr_of(alias);
    DF_ASSERT_EQ_STR(r, "deltafunnel.Table(id=1, kind=\"derived_sql\", name=\"recent_orders\")");
    df_free(r);
    df_table *q2;
    DF_ASSERT_OK(df_session_table_from_sql(s, "select * from recent_orders", &q2, &e), &e);
    DF_ASSERT_EQ_INT(df_table_id(q2), 2);
    DF_ASSERT_EQ_STR(df_table_name(q2), "table_2");
    DF_ASSERT_OK(df_session_repr(s, &r, &e), &e);
    DF_ASSERT_EQ_STR(r, "deltafunnel.Session(sources=[\"orders\"], derived_tables=[\"recent_orders\"])");
    df_free(r);
    df_table_release(q2);
    df_table_release(alias);
    df_table_release(q);
    df_table_release(orders);
    df_session_free(s);
    free(path);
}

DF_TEST(name_and_alias_errors_keep_reference_kinds) {
    char *path = make_table(10, 0, 1);
    df_session *s = new_session();
    df_table *orders = register_source(s, path, "orders");
    df_delta_source *src;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_delta_source_new(path, NULL, NULL, &src, &e), &e);
    df_table *t = NULL;
    DF_ASSERT_KIND(df_session_register_delta(s, src, "ORDERS", NULL, &t, &e), DF_ERR_DUPLICATE_SOURCE_NAME);
    DF_ASSERT_EQ_STR(e.message, "duplicate Delta source name `ORDERS`");
    DF_ASSERT(t == NULL);
    DF_ASSERT_KIND(df_session_register_delta(s, src, "select", NULL, &t, &e), DF_ERR_INVALID_SOURCE_NAME);
    DF_ASSERT_EQ_STR(e.phase, "source_config");
    /* Delta sources cannot be aliased. */
    DF_ASSERT_KIND(df_table_alias(orders, "again", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT_EQ_STR(e.message, "SQL table error during derived alias registration: lazy table is not a pending "
                                "SQL-derived table owned by this session");
    /* Failed registrations spend no id. */
    df_table *q;
    DF_ASSERT_OK(df_session_table_from_sql(s, "SELECT 1 AS x", &q, &e), &e);
    DF_ASSERT_EQ_INT(df_table_id(q), 1);
    df_table *a;
    DF_ASSERT_OK(df_table_alias(q, "x1", &a, &e), &e);
    DF_ASSERT_KIND(df_table_alias(q, "x2", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT_KIND(df_table_alias(a, "x3", &t, &e), DF_ERR_SQL_TABLE);
    df_error_clear(&e);
    df_table_release(a);
    df_table_release(q);
    df_delta_source_free(src);
    df_table_release(orders);
    df_session_free(s);
    free(path);
}

DF_TEST(registration_failures_map_to_reference_phases) {
    df_session *s = new_session();
    df_delta_source *src;
    df_error e = fresh_error();
    df_table *t = NULL;
    DF_ASSERT_OK(df_delta_source_new("/nonexistent/df/table", NULL, NULL, &src, &e), &e);
    DF_ASSERT_KIND(df_session_register_delta(s, src, "gone", NULL, &t, &e), DF_ERR_INVALID_SOURCE_URI);
    DF_ASSERT_EQ_STR(e.message, "invalid Delta source URI: table location `/nonexistent/df/table` does not exist");
    DF_ASSERT_EQ_INT(e.subkind, DF_ERR_LOCATION_NOT_FOUND);
    DF_ASSERT_EQ_INT(e.code, ENOENT);
    DF_ASSERT_EQ_STR(e.context, "{\"cause_kind\":\"location_not_found\",\"errno\":2}");
    df_delta_source_free(src);
    char tmpl[] = "/tmp/df_session_empty_XXXXXX";
    char *dir = mkdtemp(tmpl);
    DF_ASSERT_OK(df_delta_source_new(dir, NULL, NULL, &src, &e), &e);
    DF_ASSERT_KIND(df_session_register_delta(s, src, "empty", NULL, &t, &e), DF_ERR_DELTA_SNAPSHOT_LOAD);
    DF_ASSERT_EQ_STR(e.phase, "delta_source");
    DF_ASSERT(strncmp(e.message, "Delta snapshot load error: snapshot could not be loaded: ", 57) == 0);
    DF_ASSERT(e.context != NULL && strstr(e.context, "\"cause\":\"snapshot could not be loaded: ") != NULL);
    df_delta_source_free(src);
    rmdir(dir);
    df_value bad_version = df_value_bool(true);
    DF_ASSERT_KIND(df_delta_source_new("x", &bad_version, NULL, &src, &e), DF_ERR_INVALID_VERSION);
    DF_ASSERT_KIND(df_delta_source_new("", NULL, NULL, &src, &e), DF_ERR_INVALID_SOURCE_URI);
    df_value_entry bad_opts[] = {{df_value_str("k"), df_value_int(1)}};
    df_value opts = df_value_map(bad_opts, 1);
    DF_ASSERT_KIND(df_delta_source_new("x", NULL, &opts, &src, &e), DF_ERR_INVALID_STORAGE_OPTIONS);
    DF_ASSERT_EQ_STR(e.message, "`storage_options` values must be strings");
    df_error_clear(&e);
    df_session_free(s);
}

DF_TEST(pending_sources_show_sanitized_locations) {
    df_delta_source *src;
    df_value v = df_value_int(3);
    DF_ASSERT_OK(df_delta_source_new("s3://user:secret-token@bucket/path?sig=1", &v, NULL, &src, NULL),
                 (df_error *)NULL);
    char *r;
    DF_ASSERT_OK(df_delta_source_repr(src, &r, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_STR(r, "deltafunnel.PendingDeltaSource(source_uri=\"s3://bucket/path\", snapshot_version=3)");
    df_free(r);
    df_delta_source_free(src);
}

DF_TEST(sql_errors_are_sql_table_with_cause_and_offset) {
    df_session *s = new_session();
    df_error e = fresh_error();
    df_table *t = NULL;
    DF_ASSERT_KIND(df_session_table_from_sql(s, "   ", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT_EQ_STR(e.message, "SQL table error during SQL validation: SQL text must not be empty");
    DF_ASSERT_KIND(df_session_table_from_sql(s, "SELEC 1 FROM secret_token_table", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT_EQ_STR(e.phase, "sql_table");
    DF_ASSERT(e.context && strstr(e.context, "\"cause_kind\":\"sql_syntax\""));
    DF_ASSERT(strstr(e.message, "SELEC 1 FROM secret_token_table") == NULL);
    DF_ASSERT_KIND(df_session_table_from_sql(s, "SELECT * FROM nope", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT(e.context && strstr(e.context, "\"cause_kind\":\"sql_unknown_table\""));
    DF_ASSERT_KIND(df_session_table_from_sql(s, "SELECT 1; SELECT 2", &t, &e), DF_ERR_SQL_TABLE);
    DF_ASSERT(strncmp(e.message, "SQL table error during SQL validation: ", 39) == 0);
    df_error_clear(&e);
    DF_ASSERT(t == NULL);
    df_session_free(s);
}

/* Parses the preview's timing JSON and checks names and statuses. */
static void check_timings(const char *json, const char *expect_status) {
    df_arena arena;
    df_arena_init(&arena, 4096, 0);
    df_json_value *v;
    DF_ASSERT_OK(df_json_parse(json, strlen(json), &arena, NULL, &v, NULL), (df_error *)NULL);
    DF_ASSERT_EQ_INT(df_json_array_len(v), 7);
    static const char *const names[] = {"preview_dataframe_planning", "preview_physical_planning",
                                        "preview_stream_setup",       "preview_execute_collect",
                                        "preview_format_text",        "preview_format_html",
                                        "preview_total"};
    for (size_t i = 0; i < 7; i++) {
        const df_json_value *t = df_json_array_at(v, i);
        DF_ASSERT_EQ_STR(df_json_get_string(t, "phase_name"), names[i]);
        DF_ASSERT_EQ_STR(df_json_get_string(df_json_get(t, "status"), "kind"), expect_status);
    }
    df_arena_destroy(&arena);
}

DF_TEST(preview_collects_limit_rows_and_reports_timings) {
    char *path = make_table(5000, 2, 2);
    df_session *s = new_session();
    df_table *t = register_source(s, path, "orders");
    df_preview_options o;
    df_preview_options_init(&o);
    o.limit = 7;
    o.execution_profile = true;
    df_preview *p;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_table_preview(t, &o, &p, &e), &e);
    DF_ASSERT_EQ_INT(df_preview_num_rows(p), 7);
    DF_ASSERT(strncmp(df_preview_text(p), "+----", 5) == 0);
    DF_ASSERT(strstr(df_preview_html(p), "Showing <b>7</b> rows") != NULL);
    check_timings(df_preview_phase_timings_json(p), "completed");
    DF_ASSERT(df_preview_execution_profile_json(p) != NULL);
    DF_ASSERT(strstr(df_preview_execution_profile_json(p), "\"scope\":\"preview\"") != NULL);
    df_phase_timing pt;
    DF_ASSERT(df_preview_phase_timing(p, 6, &pt));
    DF_ASSERT_EQ_STR(pt.phase_name, "preview_total");
    DF_ASSERT(pt.elapsed_micros >= 0);
    df_preview_free(p);
    df_table_release(t);
    df_session_free(s);
    free(path);
}

DF_TEST(preview_failure_reports_failed_phase_context) {
    df_session *s = new_session();
    df_error e = fresh_error();
    df_table *t;
    DF_ASSERT_OK(df_session_table_from_sql(s, "SELECT CAST(1 AS BIGINT) / CAST(0 AS BIGINT) AS x", &t, &e), &e);
    df_preview *p = NULL;
    DF_ASSERT_KIND(df_table_preview(t, NULL, &p, &e), DF_ERR_PREVIEW_FAILED);
    DF_ASSERT(p == NULL);
    DF_ASSERT_EQ_STR(e.phase, "preview");
    DF_ASSERT(strncmp(e.message, "preview failed during preview_execute_collect: ", 47) == 0);
    DF_ASSERT(e.context && strstr(e.context, "\"failed_phase\":\"preview_execute_collect\""));
    DF_ASSERT(strstr(e.context, "\"execution_profile\":null"));
    DF_ASSERT(strstr(e.context, "\"kind\":\"not_started\",\"reason\":\"prior_failure\""));
    df_error_clear(&e);
    df_table_release(t);
    df_session_free(s);
}

DF_TEST(mutations_fail_while_the_session_is_in_use) {
    df_session *s = new_session();
    df__session_read_begin(s);
    df_error e = fresh_error();
    df_table *t = NULL;
    DF_ASSERT_KIND(df_session_table_from_sql(s, "SELECT 1 AS x", &t, &e), DF_ERR_CONCURRENT_SESSION_MUTATION);
    DF_ASSERT_EQ_STR(e.phase, "session_catalog_mutation");
    df__session_read_end(s);
    DF_ASSERT_OK(df_session_table_from_sql(s, "SELECT 1 AS x", &t, &e), &e);
    df_table_release(t);
    df_error_clear(&e);
    df_session_free(s);
}

DF_TEST(arrow_stream_outlives_session_and_tables) {
    char *path = make_table(1000, 0, 1);
    df_session *s = new_session();
    df_table *t = register_source(s, path, "orders");
    struct ArrowArrayStream stream;
    df_error e = fresh_error();
    DF_ASSERT_OK(df_table_execute_arrow(t, 100, &stream, &e), &e);
    df_table_release(t);
    df_session_free(s);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray a;
        DF_ASSERT_EQ_INT(stream.get_next(&stream, &a), 0);
        if (!a.release) break;
        rows += a.length;
        a.release(&a);
    }
    stream.release(&stream);
    DF_ASSERT_EQ_INT(rows, 100);
    free(path);
}

/* Sets *flag after `ms` milliseconds, from its own thread (as a signal-watching host would). */
typedef struct canceller {
    _Atomic bool *flag;
    int ms;
} canceller;

static void *cancel_later(void *arg) {
    canceller *c = arg;
    usleep((useconds_t)c->ms * 1000u);
    atomic_store(c->flag, true);
    return NULL;
}

/* A join whose output is ~1e9 rows before the count: runs for minutes unless cancelled. */
#define SLOW_SQL "SELECT count(*) AS n FROM orders a JOIN orders b ON a.id % 3 = b.id % 3"

DF_TEST(cancel_flag_stops_streams_and_previews_within_a_batch) {
    char *path = make_table(60000, 2, 2);
    df_session *s = new_session();
    df_table *src = register_source(s, path, "orders");
    df_error e = fresh_error();
    df_table *t;
    DF_ASSERT_OK(df_session_table_from_sql(s, SLOW_SQL, &t, &e), &e);
    for (int round = 0; round < 2; round++) {
        _Atomic bool flag;
        atomic_init(&flag, false);
        canceller c = {&flag, 200};
        pthread_t th;
        pthread_create(&th, NULL, cancel_later, &c);
        uint64_t t0 = df_now_ns();
        if (round == 0) {
            struct ArrowArrayStream stream;
            DF_ASSERT_OK(df_table_execute_arrow_cancellable(t, -1, &flag, &stream, &e), &e);
            struct ArrowArray a;
            DF_ASSERT(stream.get_next(&stream, &a) != 0);
            DF_ASSERT(strncmp(stream.get_last_error(&stream), "[execution/cancelled] ", 22) == 0);
            df_error got = fresh_error();
            DF_ASSERT_EQ_INT(df_arrow_stream_error(&stream, &got), DF_ERR_CANCELLED);
            DF_ASSERT_EQ_INT(got.kind, DF_ERR_CANCELLED);
            DF_ASSERT_EQ_STR(got.phase, "execution");
            df_error_clear(&got);
            stream.release(&stream);
        } else {
            df_preview_options po;
            df_preview_options_init(&po);
            po.cancel = &flag;
            df_preview *p = NULL;
            DF_ASSERT_KIND(df_table_preview(t, &po, &p, &e), DF_ERR_PREVIEW_FAILED);
            df_error_clear(&e);
        }
        double waited = (double)(df_now_ns() - t0) / 1e9;
        pthread_join(th, NULL);
        /* 200 ms until the flag, then a batch per operator: far below the minutes the query needs. */
        DF_ASSERT(waited < 5.0);
    }
    df_table_release(t);
    df_table_release(src);
    df_session_free(s);
    free(path);
}

DF_TEST(arrow_stream_error_is_absent_until_a_failure) {
    df_session *s = new_session();
    df_error e = fresh_error();
    df_table *t;
    DF_ASSERT_OK(df_session_table_from_sql(s, "SELECT CAST(1 AS BIGINT) / CAST(0 AS BIGINT) AS x", &t, &e), &e);
    struct ArrowArrayStream stream;
    DF_ASSERT_OK(df_table_execute_arrow(t, -1, &stream, &e), &e);
    df_error got = fresh_error();
    DF_ASSERT_EQ_INT(df_arrow_stream_error(&stream, &got), DF_OK);
    struct ArrowArray a;
    DF_ASSERT(stream.get_next(&stream, &a) != 0);
    DF_ASSERT_EQ_INT(df_arrow_stream_error(&stream, &got), DF_ERR_DIVISION_BY_ZERO);
    DF_ASSERT_EQ_INT(got.kind, DF_ERR_DIVISION_BY_ZERO);
    DF_ASSERT(strncmp(stream.get_last_error(&stream), "[execution/division_by_zero] ", 29) == 0);
    df_error_clear(&got);
    stream.release(&stream);
    df_table_release(t);
    df_session_free(s);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    DF_ASSERT(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    DF_ASSERT(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

DF_TEST(datagen_is_deterministic_and_refuses_to_overwrite) {
    char *a = make_table(3000, 3, 2);
    char *b = make_table(3000, 3, 2);
    char la[4200], lb[4200];
    snprintf(la, sizeof la, "%s/_delta_log/00000000000000000000.json", a);
    snprintf(lb, sizeof lb, "%s/_delta_log/00000000000000000000.json", b);
    size_t na, nb;
    char *ca = slurp(la, &na), *cb = slurp(lb, &nb);
    DF_ASSERT_EQ_UINT(na, nb);
    DF_ASSERT(memcmp(ca, cb, na) == 0);
    DF_ASSERT(strstr(ca, "\"partitionColumns\":[\"region\"]") != NULL);
    DF_ASSERT(strstr(ca, "\\\"numRecords\\\":500,") != NULL);   /* inside the escaped stats string */
    free(ca);
    free(cb);
    df_datagen_options o;
    df_datagen_options_init(&o);
    o.output = a;
    o.rows = 1;
    df_error e = fresh_error();
    DF_ASSERT_KIND(df_datagen_run(&o, NULL, &e), DF_ERR_INVALID_ARGUMENT);
    o.shape = "triangle";
    DF_ASSERT_KIND(df_datagen_run(&o, NULL, &e), DF_ERR_INVALID_ARGUMENT);
    df_error_clear(&e);
    free(a);
    free(b);
}

/* Two threads preview while a third keeps trying to mutate and to print the session. */
typedef struct race_arg {
    df_session *s;               /* shared session */
    df_table *t;                 /* table to preview */
    int rounds;                  /* previews to run */
    int failures;                /* unexpected errors */
    int refused;                 /* mutations refused as concurrent */
    int done;                    /* mutator: stop when set (atomic) */
} race_arg;

static void *preview_loop(void *p) {
    race_arg *a = p;
    for (int i = 0; i < a->rounds; i++) {
        df_preview *pv = NULL;
        df_error e = fresh_error();
        if (df_table_preview(a->t, NULL, &pv, &e) != DF_OK) a->failures++;
        df_error_clear(&e);
        df_preview_free(pv);
    }
    return NULL;
}

static void *mutate_loop(void *p) {
    race_arg *a = p;
    while (!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE)) {
        df_table *t = NULL;
        df_error e = fresh_error();
        df_errkind k = df_session_table_from_sql(a->s, "SELECT id FROM orders WHERE id < 5", &t, &e);
        if (k == DF_ERR_CONCURRENT_SESSION_MUTATION) a->refused++;
        else if (k != DF_OK) a->failures++;
        df_error_clear(&e);
        df_table_release(t);
        char *r = NULL;
        if (df_session_repr(a->s, &r, NULL) == DF_OK) df_free(r);
    }
    return NULL;
}

DF_TEST(previews_and_mutations_race_safely) {
    char *path = make_table(20000, 2, 2);
    df_session *s = new_session();
    df_table *t = register_source(s, path, "orders");
    race_arg readers = {s, t, 30, 0, 0, 0}, readers2 = {s, t, 30, 0, 0, 0}, mut = {s, t, 0, 0, 0, 0};
    pthread_t r1, r2, m;
    pthread_create(&m, NULL, mutate_loop, &mut);
    pthread_create(&r1, NULL, preview_loop, &readers);
    pthread_create(&r2, NULL, preview_loop, &readers2);
    pthread_join(r1, NULL);
    pthread_join(r2, NULL);
    __atomic_store_n(&mut.done, 1, __ATOMIC_RELEASE);
    pthread_join(m, NULL);
    DF_ASSERT_EQ_INT(readers.failures + readers2.failures + mut.failures, 0);
    df_table_release(t);
    df_session_free(s);
    free(path);
}

/* Registers `path` and expects invalid_source_uri with the given finer kind and errno. */
static void expect_location_error(df_session *s, const char *path, df_errkind sub, int code, const char *message) {
    df_delta_source *src;
    df_error e = fresh_error();
    df_table *t = NULL;
    DF_ASSERT_OK(df_delta_source_new(path, NULL, NULL, &src, &e), &e);
    DF_ASSERT_KIND(df_session_register_delta(s, src, "t", NULL, &t, &e), DF_ERR_INVALID_SOURCE_URI);
    DF_ASSERT_EQ_STR(e.phase, "source_config");
    DF_ASSERT_EQ_INT(e.subkind, sub);
    DF_ASSERT_EQ_INT(e.code, code);
    DF_ASSERT_EQ_STR(e.message, message);
    DF_ASSERT(t == NULL);
    df_error_clear(&e);
    df_delta_source_free(src);
}

DF_TEST(unresolvable_locations_say_why) {
    df_session *s = new_session();
    char tmpl[] = "/tmp/df_session_loc_XXXXXX";
    char *dir = mkdtemp(tmpl);
    DF_ASSERT(dir != NULL);
    char a[256], b[256], file[256], under_file[300], msg[600];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    DF_ASSERT_EQ_INT(symlink(b, a), 0);
    DF_ASSERT_EQ_INT(symlink(a, b), 0);
    snprintf(msg, sizeof msg, "invalid Delta source URI: table location `%s` is a symlink loop", a);
    expect_location_error(s, a, DF_ERR_LOCATION_SYMLINK_LOOP, ELOOP, msg);

    /* A path through a regular file: ENOTDIR, reported as not existing. */
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    DF_ASSERT(f != NULL);
    fclose(f);
    snprintf(under_file, sizeof under_file, "%s/t", file);
    snprintf(msg, sizeof msg, "invalid Delta source URI: table location `%s` does not exist", under_file);
    expect_location_error(s, under_file, DF_ERR_LOCATION_NOT_FOUND, ENOTDIR, msg);

    /* Root searches every directory: the permission case only holds for other users. */
    if (geteuid() != 0) {
        char locked[256], inside[300];
        snprintf(locked, sizeof locked, "%s/locked", dir);
        DF_ASSERT_EQ_INT(mkdir(locked, 0700), 0);
        snprintf(inside, sizeof inside, "%s/t", locked);
        DF_ASSERT_EQ_INT(mkdir(inside, 0700), 0);
        DF_ASSERT_EQ_INT(chmod(locked, 0), 0);
        snprintf(msg, sizeof msg, "invalid Delta source URI: table location `%s` cannot be reached: permission denied",
                 inside);
        expect_location_error(s, inside, DF_ERR_LOCATION_PERMISSION_DENIED, EACCES, msg);
        chmod(locked, 0700);
        rmdir(inside);
        rmdir(locked);
    }
    unlink(a);
    unlink(b);
    unlink(file);
    rmdir(dir);
    df_session_free(s);
}
