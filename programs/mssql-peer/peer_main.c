/*
 * mssql-peer entry point: options, the listening socket and one thread per
 * accepted connection.  The first stdout line is "listening HOST:PORT"
 * (with --port 0 the kernel picks a free port).  SIGINT/SIGTERM end the
 * process and remove a temporary store.
 */
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static const char usage[] =
    "usage: mssql-peer [options]\n"
    "A loopback SQL Server stand-in for tests: TDS 7.4 (+TLS, TDS 8.0 strict), SQLite storage.\n"
    "\n"
    "  --host ADDR                 listen address (default 127.0.0.1)\n"
    "  --port N                    TCP port; 0 picks a free one (default 0)\n"
    "  --login USER:PASSWORD       accepted SQL login (repeatable)\n"
    "  --database NAME             extra database name accepted at login and by USE (repeatable)\n"
    "  --db PATH                   SQLite file to keep tables in (default: a temporary file, removed at exit)\n"
    "  --tls MODE                  optional | required | strict | off (default optional: TLS offered, not forced,\n"
    "                              like SQL Server; off answers ENCRYPT_NOT_SUP and never does TLS)\n"
    "  --cert PEM --key PEM        server certificate chain and private key (default: a self-signed certificate\n"
    "                              for localhost/127.0.0.1 generated at startup)\n"
    "  --tls13-in-7x               allow TLS 1.3 inside the TDS 7.x PRELOGIN handshake (fault)\n"
    "  --discard                   decode and count bulk rows without storing them (benchmarks)\n"
    "  --packet-size N             announce this packet size instead of the client's\n"
    "  --reply-packet-size N       split replies into packets of N bytes (exercises reassembly)\n"
    "  --nbcrow                    send result rows with NULLs as NBCROW\n"
    "  --trace FILE                write statements, sessions and bulk summaries to FILE\n"
    "  --fault-drop-after-rows N   close the socket after N rows of a bulk load\n"
    "  --fault-drop-after-bytes N  close the socket after N bytes of a bulk load\n"
    "  --fault-error-after-rows N  fail a bulk load after N rows (error number below)\n"
    "  --fault-error-number N      error for --fault-error-after-rows (default 4815)\n"
    "  --fault-error-close         after that error, reply at once and close instead of draining the stream\n"
    "  --faults-every-load         bulk faults fire on every load (default: once per process)\n"
    "  --fault-fail-statement PATTERN=NUMBER\n"
    "                              the next statement containing PATTERN (case-insensitive) fails with\n"
    "                              SQL Server error NUMBER (repeatable; add --fault-repeat to fire always)\n"
    "  --fault-repeat              statement faults fire every time\n"
    "  --fault-delay-ms D          wait D ms before every reply (an ATTENTION meanwhile cancels it)\n"
    "  --fault-login-delay-ms D    wait D ms before answering LOGIN7\n"
    "  --fault-refuse-logins       every login fails with error 18456\n"
    "  --fault-drop-after-login7   close the socket after reading LOGIN7\n"
    "  --max-seconds N             exit after N seconds (safety net for test runs)\n"
    "  --help                      this text\n";

static peer_config cfg;
static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static void cleanup(void) {
    if (cfg.cert_temp) {
        unlink(cfg.cert_file);
        unlink(cfg.key_file);
    }
    if (cfg.db_temp && cfg.db_path) {
        unlink(cfg.db_path);
        char j[4200];
        snprintf(j, sizeof j, "%s-journal", cfg.db_path);
        unlink(j);
        snprintf(j, sizeof j, "%s-wal", cfg.db_path);
        unlink(j);
        snprintf(j, sizeof j, "%s-shm", cfg.db_path);
        unlink(j);
    }
}

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "mssql-peer: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    cleanup();
    exit(2);
}

static long num_arg(const char *opt, const char *v, long lo, long hi) {
    char *end;
    long x = strtol(v ? v : "", &end, 10);
    if (!v || *end || x < lo || x > hi) die("bad value for %s", opt);
    return x;
}

static void add_str(char ***arr, int *n, const char *s) {
    char **a = realloc(*arr, sizeof *a * (size_t)(*n + 1));
    if (!a) die("%s", "out of memory");
    *arr = a;
    a[(*n)++] = strdup(s);
}

static void parse_args(int argc, char **argv, long *max_seconds) {
    snprintf(cfg.host, sizeof cfg.host, "127.0.0.1");
    cfg.drop_after_rows = cfg.drop_after_bytes = cfg.error_after_rows = -1;
    cfg.error_number = 4815;
    cfg.faults_once = true;
    bool repeat = false;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (!strcmp(o, name))
#define TAKE() (i++, v ? v : (die("%s needs a value", o), ""))
        if (OPT("--help") || OPT("-h")) { fputs(usage, stdout); exit(0); }
        else if (OPT("--host")) snprintf(cfg.host, sizeof cfg.host, "%s", TAKE());
        else if (OPT("--port")) cfg.port = (int)num_arg(o, TAKE(), 0, 65535);
        else if (OPT("--login")) {
            const char *s = TAKE(), *colon = strchr(s, ':');
            if (!colon) die("--login needs USER:PASSWORD, got '%s'", s);
            char user[256];
            snprintf(user, sizeof user, "%.*s", (int)(colon - s), s);
            int n = cfg.nlogins;
            add_str(&cfg.users, &n, user);
            add_str(&cfg.passwords, &cfg.nlogins, colon + 1);
        } else if (OPT("--database")) add_str(&cfg.databases, &cfg.ndatabases, TAKE());
        else if (OPT("--db")) cfg.db_path = strdup(TAKE());
        else if (OPT("--tls")) {
            const char *m = TAKE();
            cfg.tls = !strcmp(m, "off") ? PEER_TLS_OFF : !strcmp(m, "optional") ? PEER_TLS_OPTIONAL
                    : !strcmp(m, "required") ? PEER_TLS_REQUIRED : !strcmp(m, "strict") ? PEER_TLS_STRICT : (die("unknown --tls mode %s", m), PEER_TLS_OFF);
        } else if (OPT("--cert")) cfg.cert_file = strdup(TAKE());
        else if (OPT("--key")) cfg.key_file = strdup(TAKE());
        else if (OPT("--tls13-in-7x")) cfg.tls13_in_7x = true;
        else if (OPT("--discard")) cfg.discard = true;
        else if (OPT("--packet-size")) cfg.force_packet_size = (uint32_t)num_arg(o, TAKE(), 512, 32767);
        else if (OPT("--reply-packet-size")) cfg.reply_packet_size = (uint32_t)num_arg(o, TAKE(), 512, 32767);
        else if (OPT("--nbcrow")) cfg.nbcrow = true;
        else if (OPT("--trace")) {
            const char *path = TAKE();
            cfg.trace = fopen(path, "a");
            if (!cfg.trace) die("cannot open trace file %s", path);
        } else if (OPT("--fault-drop-after-rows")) cfg.drop_after_rows = num_arg(o, TAKE(), 0, INT64_MAX);
        else if (OPT("--fault-drop-after-bytes")) cfg.drop_after_bytes = num_arg(o, TAKE(), 0, INT64_MAX);
        else if (OPT("--fault-error-after-rows")) cfg.error_after_rows = num_arg(o, TAKE(), 0, INT64_MAX);
        else if (OPT("--fault-error-number")) cfg.error_number = (int32_t)num_arg(o, TAKE(), 1, 2147483647);
        else if (OPT("--faults-every-load")) cfg.faults_once = false;
        else if (OPT("--fault-error-close")) cfg.error_close = true;
        else if (OPT("--fault-fail-statement")) {
            const char *s = TAKE(), *eq = strrchr(s, '=');
            if (!eq || eq == s) die("--fault-fail-statement needs PATTERN=NUMBER, got '%s'", s);
            peer_fail_rule *r = realloc(cfg.fail_rules, sizeof *r * (size_t)(cfg.nfail_rules + 1));
            if (!r) die("%s", "out of memory");
            cfg.fail_rules = r;
            r = &cfg.fail_rules[cfg.nfail_rules++];
            r->pattern = strndup(s, (size_t)(eq - s));
            r->number = (int32_t)num_arg(o, eq + 1, 1, 2147483647);
            atomic_init(&r->remaining, 1);
        } else if (OPT("--fault-repeat")) repeat = true;
        else if (OPT("--fault-delay-ms")) cfg.delay_ms = (uint32_t)num_arg(o, TAKE(), 0, 600000);
        else if (OPT("--fault-login-delay-ms")) cfg.login_delay_ms = (uint32_t)num_arg(o, TAKE(), 0, 600000);
        else if (OPT("--fault-refuse-logins")) cfg.refuse_logins = true;
        else if (OPT("--fault-drop-after-login7")) cfg.drop_after_login7 = true;
        else if (OPT("--max-seconds")) *max_seconds = num_arg(o, TAKE(), 1, 86400 * 7);
        else die("unknown option %s (see --help)", o);
#undef OPT
#undef TAKE
    }
    if (repeat)
        for (int r = 0; r < cfg.nfail_rules; r++) atomic_store(&cfg.fail_rules[r].remaining, -1);
    if (!cfg.cert_file != !cfg.key_file) die("%s", "--cert and --key go together");
    if (cfg.nlogins == 0) fprintf(stderr, "mssql-peer: warning: no --login given, every login will fail\n");
}

static int open_listener(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port)};
    if (inet_pton(AF_INET, cfg.host, &a.sin_addr) != 1) die("--host must be an IPv4 address, got %s", cfg.host);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) die("bind: %s", strerror(errno));
    if (listen(fd, 64) != 0) die("listen: %s", strerror(errno));
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    cfg.port = ntohs(a.sin_port);
    return fd;
}

int main(int argc, char **argv) {
    long max_seconds = 0;
    parse_args(argc, argv, &max_seconds);
    pthread_mutex_init(&cfg.trace_lock, NULL);
    pthread_mutex_init(&cfg.applock_mu, NULL);
    atomic_init(&cfg.next_spid, 51);
    if (!cfg.db_path || !strcmp(cfg.db_path, ":memory:")) {
        char tmpl[] = "/tmp/mssql-peer-XXXXXX";
        int tfd = mkstemp(tmpl);
        if (tfd < 0) die("mkstemp: %s", strerror(errno));
        close(tfd);
        free(cfg.db_path);
        cfg.db_path = strdup(tmpl);
        cfg.db_temp = true;
    }
    sqlite3 *db;
    df_error err = {0};
    if (cfg.tls != PEER_TLS_OFF && !cfg.cert_file) {
        char ct[] = "/tmp/mssql-peer-cert-XXXXXX", kt[] = "/tmp/mssql-peer-key-XXXXXX";
        int a = mkstemp(ct), b = mkstemp(kt);
        if (a < 0 || b < 0) die("mkstemp: %s", strerror(errno));
        close(a);
        close(b);
        cfg.cert_file = strdup(ct);
        cfg.key_file = strdup(kt);
        cfg.cert_temp = true;
        if (peer_cert_generate(cfg.cert_file, cfg.key_file, &err) != DF_OK) die("%s", err.message);
    }
    if (peer_store_open(&cfg, true, &db, &err) != DF_OK) die("%s", err.message);
    sqlite3_close(db);
    int lfd = open_listener();
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    printf("listening %s:%d\n", cfg.host, cfg.port);
    fflush(stdout);
    uint64_t deadline = max_seconds ? df_now_ns() + (uint64_t)max_seconds * 1000000000ull : 0;
    while (!stop_flag) {
        if (deadline && df_now_ns() > deadline) break;
        struct timeval tv = {0, 200000};
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(lfd, &rs);
        if (select(lfd + 1, &rs, NULL, NULL, &tv) <= 0) continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof one);
        peer_accept *a = df_malloc(sizeof *a);
        if (!a) { close(fd); continue; }
        a->cfg = &cfg;
        a->fd = fd;
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 16u << 20);
        if (pthread_create(&th, &at, peer_conn_thread, a) != 0) { close(fd); df_free(a); }
        pthread_attr_destroy(&at);
    }
    close(lfd);
    cleanup();
    return 0;
}
