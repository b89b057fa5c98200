/*
 * Errors by kind, not by message text: every classified failure of a write
 * (value conversions turned into diagnostics codes, connect failures whose
 * message names the failed step) runs twice against the loopback peer
 * (programs/mssql-peer, path in $MSSQL_PEER): once plainly and once with
 * every message text scrambled (tests/unit/df_scramble.h).  The public
 * (phase, kind), the diagnostics code and the shape of the message (the
 * scrambled run's message, unscrambled layer by layer) must be the same.
 */
#include "df_test.h"
#include "df_scramble.h"
#include "tds_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deltafunnel/deltafunnel.h"
#include "mssql/mssql.h"
#include "mssql/tds.h"

#define LOGIN "user id=sa;password=Secret123!;encrypt=DANGER_PLAINTEXT"

/* ------------------------------------------------------------------------ */
/* The loopback peer, a process of its own                                   */

typedef struct peer {
    pid_t pid;
    int port;
} peer;

/* Starts mssql-peer with `fault` (an option such as "--fault-refuse-logins", or NULL). */
static peer peer_start(const char *fault) {
    const char *path = getenv("MSSQL_PEER");
    if (!path || !*path) df_test_fail(__FILE__, __LINE__, "MSSQL_PEER must name the mssql-peer program");
    int out[2];
    DF_ASSERT(pipe(out) == 0);
    pid_t pid = fork();
    DF_ASSERT(pid >= 0);
    if (pid == 0) {
        /* A failed assertion ends the test process at once: the peer must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        char *argv[] = {(char *)path, "--port", "0", "--tls", "off", "--login", "sa:Secret123!", "--max-seconds",
                        "120", (char *)fault, NULL};
        execv(path, argv);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[128] = "";
    if (!f || !fgets(line, sizeof line, f)) df_test_fail(__FILE__, __LINE__, "mssql-peer did not start");
    fclose(f);
    const char *colon = strrchr(line, ':');
    if (strncmp(line, "listening ", 10) != 0 || !colon)
        df_test_fail(__FILE__, __LINE__, "mssql-peer said `%s`", line);
    return (peer){.pid = pid, .port = atoi(colon + 1)};
}

static void peer_stop(peer *p) {
    kill(p->pid, SIGTERM);
    waitpid(p->pid, NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* A server that does not host the requested instance (no peer fault for it) */

typedef struct instance_server {
    int listen_fd;
    int port;
    int connections;        /* PRELOGINs to answer */
} instance_server;

static void *instance_server_run(void *arg) {
    instance_server *is = arg;
    for (int i = 0; i < is->connections; i++) {
        int fd = accept(is->listen_fd, NULL, NULL);
        df__tds_io *io;
        if (fd < 0 || df__tds_io_new(fd, 10000, &io, NULL) != DF_OK) return NULL;
        df_test_tds_refuse_instance(io);
    }
    return NULL;
}

static int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    DF_ASSERT(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    DF_ASSERT(listen(fd, 4) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

/* ------------------------------------------------------------------------ */
/* One write and what a user sees of its failure                            */

typedef struct outcome {
    df_errkind kind;
    char phase[DF_ERROR_PHASE_SIZE];
    int64_t code;                           /* df_error.code: the SQL Server number or errno */
    char diagnostics_code[64];              /* of the failure context, "" none */
    char message[DF_ERROR_MESSAGE_SIZE];    /* unscrambled */
} outcome;

/* The first "code" of the context's "diagnostics" list. */
static void diagnostics_code(const char *context, char *out, size_t size) {
    out[0] = '\0';
    const char *d = context ? strstr(context, "\"diagnostics\":[") : NULL;
    const char *c = d ? strstr(d, "\"code\":\"") : NULL;
    if (!c) return;
    c += 8;
    size_t n = strcspn(c, "\"");
    if (n >= size) n = size - 1;
    memcpy(out, c, n);
    out[n] = '\0';
}

static void exec_sql(const char *conn, const char *sql) {
    df_mssql_conn *c;
    df_error err = {0};
    DF_ASSERT_OK(df_mssql_connect_string(conn, &c, &err), &err);
    DF_ASSERT_OK(df_mssql_exec(c, sql, NULL, &err), &err);
    df_mssql_close(c);
}

/*
 * Writes `sql` to dbo.`table` with `load_mode` over `conn` (creating the
 * table first from `ddl` when given) and returns the failure as a user sees
 * it.  The write must fail.
 */
static outcome write_failure(const char *conn, const char *table, const char *ddl, const char *sql,
                             const char *load_mode, int parallel) {
    df_error err = {0};
    if (ddl) {
        char create[512];
        snprintf(create, sizeof create, "CREATE TABLE dbo.%s (%s)", table, ddl);
        exec_sql(conn, create);
    }
    df_session_options *so;
    DF_ASSERT_OK(df_session_options_new(&so, &err), &err);
    df_value_entry policy = {df_value_str("uint64_policy"), df_value_str("checked_bigint")};
    df_value schema = df_value_map(&policy, 1), one = df_value_int(1);
    DF_ASSERT_OK(df_session_options_set(so, "schema_options", &schema, &err), &err);
    DF_ASSERT_OK(df_session_options_set(so, "target_partitions", &one, &err), &err);
    df_session *s;
    DF_ASSERT_OK(df_session_new(so, &s, &err), &err);
    df_table *t;
    DF_ASSERT_OK(df_session_table_from_sql(s, sql, &t, &err), &err);
    df_output_spec *spec;
    DF_ASSERT_OK(df_table_to_mssql(t, "dbo", table, load_mode, NULL, conn, &spec, &err), &err);
    df_write_options wo;
    df_write_options_init(&wo);
    wo.parallel_connections = parallel;
    char *report = NULL;
    df_errkind k = df_output_write(spec, &wo, &report, &err);
    if (k == DF_OK) df_test_fail(__FILE__, __LINE__, "writing `%s` to %s succeeded", sql, table);
    outcome o;
    memset(&o, 0, sizeof o);
    o.kind = k;
    snprintf(o.phase, sizeof o.phase, "%s", err.phase);
    o.code = err.code;
    diagnostics_code(err.context, o.diagnostics_code, sizeof o.diagnostics_code);
    df_test_unscramble(err.message, o.message, sizeof o.message);
    df_free(report);
    df_error_clear(&err);
    df_output_spec_free(spec);
    df_table_release(t);
    df_session_free(s);
    df_session_options_free(so);
    return o;
}

/* The same failure with plain and with scrambled messages: the same for a user, word for word. */
static outcome same_either_way(const char *what, const char *conn, const char *table, const char *ddl,
                               const char *sql, const char *load_mode, int parallel) {
    char name[128];
    snprintf(name, sizeof name, "%s_plain", table);
    outcome plain = write_failure(conn, name, ddl, sql, load_mode, parallel);
    df_test_scramble_messages(true);
    snprintf(name, sizeof name, "%s_scrambled", table);
    outcome scrambled = write_failure(conn, name, ddl, sql, load_mode, parallel);
    df_test_scramble_messages(false);
    /* The table name is part of some messages: compare with it spelled alike. */
    char *m = strstr(scrambled.message, "_scrambled");
    if (m) memmove(m + 6, m + 10, strlen(m + 10) + 1), memcpy(m, "_plain", 6);
    if (plain.kind != scrambled.kind || strcmp(plain.phase, scrambled.phase) != 0 || plain.code != scrambled.code ||
        strcmp(plain.diagnostics_code, scrambled.diagnostics_code) != 0 || strcmp(plain.message, scrambled.message) != 0)
        df_test_fail(__FILE__, __LINE__,
                     "%s: plain %s/%s code %lld `%s` \"%s\", with scrambled messages %s/%s code %lld `%s` \"%s\"", what,
                     plain.phase, df_errkind_name(plain.kind), (long long)plain.code, plain.diagnostics_code,
                     plain.message, scrambled.phase, df_errkind_name(scrambled.kind), (long long)scrambled.code,
                     scrambled.diagnostics_code, scrambled.message);
    return plain;
}

/* Occurrences of `needle` in `text`. */
static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

/* Each value conversion failure keeps its diagnostics code (docs/writes.md) whatever the messages say. */
DF_TEST(value_conversion_codes_do_not_depend_on_message_text) {
    peer p = peer_start(NULL);
    char conn[160];
    snprintf(conn, sizeof conn, "server=tcp:127.0.0.1,%d;" LOGIN, p.port);
    static const struct {
        const char *table, *ddl, *sql, *code;
    } cases[] = {
        {"too_long", "s nvarchar(3)", "SELECT 'abcd' AS s", "value_too_long"},
        {"not_null", "s nvarchar(10) NOT NULL", "SELECT CAST(NULL AS VARCHAR) AS s", "null_in_non_nullable_column"},
        {"int_range", "i bigint", "SELECT CAST('18446744073709551615' AS BIGINT UNSIGNED) AS i", "integer_out_of_range"},
        {"dec_range", "d decimal(3,2)", "SELECT CAST(123.45 AS DECIMAL(10,2)) AS d", "decimal_out_of_range"},
        {"nan", "f float", "SELECT CAST('NaN' AS DOUBLE) AS f", "non_finite_float"},
        {"lossy_ns", "t datetime2(7)", "SELECT CAST('2024-01-01 00:00:00.000000001' AS TIMESTAMP) AS t",
         "lossy_conversion_requires_policy"},
        {"date_range", "d date", "SELECT DATE '0000-12-31' AS d", "timestamp_out_of_range"},
        {"datetime_range", "t datetime", "SELECT CAST('1700-01-01' AS TIMESTAMP) AS t", "value_conversion_unsupported"},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(cases); i++) {
        outcome o = same_either_way(cases[i].table, conn, cases[i].table, cases[i].ddl, cases[i].sql,
                                    "append_existing", 1);
        DF_ASSERT_EQ_STR(o.phase, "write_batch");
        DF_ASSERT_EQ_STR(df_errkind_name(o.kind), "mssql_write_phase");
        DF_ASSERT_EQ_STR(o.diagnostics_code, cases[i].code);
    }
    /* Through the pool of parallel bulk connections (the worker's error reaches the writer). */
    outcome o = same_either_way("parallel", conn, "par", NULL,
                                "SELECT CAST('2024-01-01 00:00:00.000000001' AS TIMESTAMP) AS t", "create_and_load", 2);
    DF_ASSERT_EQ_STR(o.phase, "write_batch");
    DF_ASSERT_EQ_STR(o.diagnostics_code, "lossy_conversion_requires_policy");
    peer_stop(&p);
}

/* The connect step names the failed step exactly once, from the failure's kind, not from its message. */
DF_TEST(connect_failures_name_their_step_once_whatever_the_messages_say) {
    static const char tcp[] = "TCP connection to SQL Server failed: ", setup[] = "SQL Server client setup failed: ";
    char conn[160];
    /* Nobody listens. */
    int port;
    close(listen_loopback(&port));
    snprintf(conn, sizeof conn, "server=tcp:127.0.0.1,%d;" LOGIN, port);
    outcome o = same_either_way("refused", conn, "t", NULL, "SELECT 1 AS x", "create_and_load", 1);
    DF_ASSERT_EQ_STR(o.phase, "connect");
    DF_ASSERT_EQ_INT(count_of(o.message, tcp), 1);
    DF_ASSERT_EQ_INT(count_of(o.message, setup), 0);
    /* The server drops the connection after LOGIN7. */
    peer p = peer_start("--fault-drop-after-login7");
    snprintf(conn, sizeof conn, "server=tcp:127.0.0.1,%d;" LOGIN, p.port);
    o = same_either_way("dropped", conn, "t", NULL, "SELECT 1 AS x", "create_and_load", 1);
    DF_ASSERT_EQ_STR(o.phase, "connect");
    DF_ASSERT_EQ_INT(count_of(o.message, setup), 1);
    DF_ASSERT_EQ_INT(count_of(o.message, tcp), 0);
    peer_stop(&p);
    /* The server refuses the login (18456 stays in df_error.code). */
    p = peer_start("--fault-refuse-logins");
    snprintf(conn, sizeof conn, "server=tcp:127.0.0.1,%d;" LOGIN, p.port);
    o = same_either_way("refused login", conn, "t", NULL, "SELECT 1 AS x", "create_and_load", 1);
    DF_ASSERT_EQ_STR(o.phase, "connect");
    DF_ASSERT_EQ_INT(count_of(o.message, setup), 1);
    DF_ASSERT_EQ_INT(count_of(o.message, tcp), 0);
    peer_stop(&p);
    /* The server does not host the instance: reported like a TCP failure, as it always was. */
    instance_server is = {.connections = 2};
    is.listen_fd = listen_loopback(&is.port);
    pthread_t th;
    pthread_create(&th, NULL, instance_server_run, &is);
    snprintf(conn, sizeof conn, "server=tcp:127.0.0.1,%d;" LOGIN, is.port);
    o = same_either_way("instance", conn, "t", NULL, "SELECT 1 AS x", "create_and_load", 1);
    pthread_join(th, NULL);
    close(is.listen_fd);
    DF_ASSERT_EQ_STR(o.phase, "connect");
    DF_ASSERT_EQ_INT(count_of(o.message, tcp), 1);
    DF_ASSERT_EQ_INT(count_of(o.message, setup), 0);
    /* A connection string that cannot be parsed is never echoed. */
    o = same_either_way("bad string", "server=h,99999;password=hunter2", "t", NULL, "SELECT 1 AS x",
                        "create_and_load", 1);
    DF_ASSERT(strstr(o.message, "hunter2") == NULL);
    DF_ASSERT_EQ_INT(count_of(o.message, tcp) + count_of(o.message, setup), 0);
}
