/*
 * capture-workload: records a whole workload process into a Perfetto trace
 * and reports on it (the reference implementation's command, with the
 * in-process capture: no tracebox, no perf, no sudo).
 *
 *   capture-workload [--mode short|streaming|deep-system] [--sample-hz 100|1000]
 *                    --output TRACE.pftrace -- COMMAND [ARG...]
 *
 * 1. Preflight (exit 64/73/126/127 before anything runs, no status line):
 *    arguments, the output directory (created), no existing trace or
 *    sibling report (lstat: a dangling symlink counts), the command.
 * 2. A private run folder (mkdtemp, 0700) holds the start gate (a UNIX
 *    socket) and the trace the workload writes.  The workload runs in its
 *    own session with the settings in DELTA_FUNNEL_PERFETTO_* variables;
 *    its init_perfetto_diagnostics() joins the gate (both ends check the
 *    other's pid with SO_PEERCRED), starts the capture in-process, says
 *    "started ...", and at exit "finalized ..." once the trace is complete
 *    (protocol: src/session/profile.c).
 * 3. After the workload: the trace is linked (or copied) to TRACE without
 *    ever replacing a file, its health row is printed (CSV), the sibling
 *    HTML report is generated (no clobber), and one status line ends the
 *    output:
 *      workload_status=W tracebox_status=T health_status=H report_status=R sample_hz=HZ trace=PATH [report=PATH]
 *    (T keeps its historical name: it reports capture finalization.)
 *    125 = the stage did not run.  The exit status is W; an interrupted
 *    wrapper stops the workload's process group and exits 128+signal.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "diag/capture.h"

#define NOT_RUN 125
/* T when the workload started the capture but never finalized it (died, os._exit). */
#define T_NOT_FINALIZED 70
#define STREAMING_FILE_CAP ((int64_t)512 << 20)
/* How long a stopping workload group gets before SIGKILL, and the wait for its last gate lines. */
#define STOP_GRACE_MS 2000
#define DRAIN_MS 2000

static const char CAPTURE_HELP[] =
    "Usage: capture-workload [--mode short|streaming|deep-system] [--sample-hz 100|1000] --output TRACE.pftrace "
    "-- COMMAND [ARG...]\n"
    "\n"
    "Runs COMMAND with Delta Funnel diagnostics armed and records every Delta Funnel operation it runs after\n"
    "calling deltafunnel.init_perfetto_diagnostics() into a Perfetto trace, with native CPU samples.  Then checks\n"
    "the trace's health, writes the sibling ranked HTML report and prints one status line:\n"
    "\n"
    "  workload_status=W tracebox_status=T health_status=H report_status=R sample_hz=HZ trace=PATH [report=PATH]\n"
    "\n"
    "W is the workload's own status (the exit status of this command); T the capture finalization, H the trace\n"
    "health (0 complete, 65 incomplete), R the report (0 when a complete report exists); 125 = did not run.\n"
    "Existing traces and reports are never overwritten.\n"
    "\n"
    "Options:\n"
    "  --mode short          in memory, written when the workload exits; 1000 Hz; 2-minute safety bound (default)\n"
    "  --mode streaming      written to disk every second, 512 MiB cap; 100 Hz; 12-minute safety bound\n"
    "  --mode deep-system    short, plus off-CPU intervals from context switches where the host allows them; 100 Hz\n"
    "  --sample-hz 100|1000  override the sampling rate of the mode\n"
    "  --output TRACE        trace to create (the report goes to TRACE with .pftrace replaced by .profile.html)\n"
    "  -h, --help            print this help\n";

/* ------------------------------------------------------------------------ */
/* Arguments and preflight.                                                  */

typedef struct capture_args {
    const char *mode;         /* short | streaming | deep-system */
    unsigned hz;              /* 100 | 1000 */
    const char *output;       /* --output */
    char **command;           /* argv after "--" */
    bool help;                /* -h / --help */
} capture_args;

static int usage_error(const char *msg) {
    fprintf(stderr, "capture-workload: %s\nRun capture-workload --help for usage.\n", msg);
    return CLI_ARGUMENT;
}

static int parse_args(int argc, char **argv, capture_args *a) {
    memset(a, 0, sizeof *a);
    bool hz_given = false;
    for (int i = 0; i < argc; i++) {
        const char *t = argv[i];
        if (!strcmp(t, "--")) {
            if (i + 1 >= argc) return usage_error("a workload command is required after --");
            a->command = argv + i + 1;
            break;
        }
        if (!strcmp(t, "-h") || !strcmp(t, "--help")) {
            a->help = true;
            return CLI_OK;
        }
        bool mode = !strcmp(t, "--mode"), hz = !strcmp(t, "--sample-hz"), out = !strcmp(t, "--output");
        if (!mode && !hz && !out) {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown argument: %.100s", t);
            return usage_error(msg);
        }
        if (i + 1 >= argc) return usage_error("option requires a value");
        const char *v = argv[++i];
        if (mode) {
            if (!df_diag_capture_mode_from_name(v))
                return usage_error("unsupported --mode (short, streaming or deep-system)");
            a->mode = v;
        } else if (hz) {
            if (strcmp(v, "100") && strcmp(v, "1000")) return usage_error("--sample-hz accepts only 100 or 1000");
            a->hz = (unsigned)atoi(v);
            hz_given = true;
        } else {
            if (!v[0]) return usage_error("--output must name a file");
            a->output = v;
        }
    }
    if (!a->output) return usage_error("--output is required");
    if (!a->command) return usage_error("a workload command is required after --");
    if (!a->mode) a->mode = df_diag_capture_mode_name(DF_DIAG_MODE_SHORT);
    if (!hz_given) a->hz = df_diag_capture_mode_from_name(a->mode) == DF_DIAG_MODE_SHORT ? 1000 : 100;
    return CLI_OK;
}

/* The sibling report: TRACE with .pftrace replaced by .profile.html, else TRACE.profile.html (malloc'd). */
static char *report_path_for(const char *trace) {
    size_t n = strlen(trace);
    const char *base = strrchr(trace, '/');
    base = base ? base + 1 : trace;
    bool pf = n >= 8 && strcmp(trace + n - 8, ".pftrace") == 0 && (size_t)(trace + n - base) > 8;
    size_t keep = pf ? n - 8 : n;
    char *out = malloc(keep + sizeof ".profile.html");
    if (out) {
        memcpy(out, trace, keep);
        memcpy(out + keep, ".profile.html", sizeof ".profile.html");
    }
    return out;
}

/* mkdir -p of the directory of `path`; 0 or an errno. */
static int make_parent_dirs(const char *path) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return ENAMETOOLONG;
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    if (slash == dir) return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return errno;
    struct stat st;
    if (stat(dir, &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    return access(dir, W_OK | X_OK) == 0 ? 0 : errno;
}

/* An absolute version of path (malloc'd). */
static char *absolute(const char *path) {
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%s", cwd, path);
    return out;
}

/*
 * Resolves the command like execvp would (bare names on PATH).  Returns 0
 * with *resolved (malloc'd), or 127 (not found) / 126 (not executable).
 */
static int resolve_command(const char *cmd, char **resolved) {
    *resolved = NULL;
    if (strchr(cmd, '/')) {
        struct stat st;
        if (stat(cmd, &st) != 0) return 127;
        if (S_ISDIR(st.st_mode) || access(cmd, X_OK) != 0) return 126;
        *resolved = strdup(cmd);
        return *resolved ? 0 : 127;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    int rc = 127;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        char cand[PATH_MAX];
        int n = snprintf(cand, sizeof cand, "%.*s%s%s", (int)len, len ? path : ".", "/", cmd);
        struct stat st;
        if (n > 0 && (size_t)n < sizeof cand && stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (access(cand, X_OK) == 0) {
                *resolved = strdup(cand);
                return *resolved ? 0 : 127;
            }
            rc = 126;
        }
        path = end ? end + 1 : path + len;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The run.                                                                  */

typedef struct run {
    capture_args a;            /* arguments */
    char *trace;               /* absolute TRACE */
    char *report;              /* absolute sibling report */
    char rundir[128];          /* private run folder, "" if none (short: it holds a socket path) */
    char gate_path[PATH_MAX];  /* its socket */
    char run_trace[PATH_MAX];  /* the trace the workload writes */
    int listen_fd;             /* gate listener, -1 */
    int conn_fd;               /* accepted workload connection, -1 */
    int sig_fd;                /* signalfd of SIGCHLD/INT/TERM/HUP, -1 */
    sigset_t old_mask;         /* mask before blocking */
    pid_t child;               /* workload pid, 0 */
    bool child_done;           /* reaped */
    int workload_status;       /* W */
    int interrupted;           /* signal that interrupted the wrapper, 0 */
    bool activated;            /* "started" received */
    bool finalized;            /* "finalized" received */
    char line[1024];           /* partial gate line */
    size_t line_len;
} run;

/* 0..255 status of a waitpid result (128 + signal when killed). */
static int wait_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

static void msg(const char *fmt, const char *a) {
    fprintf(stderr, "capture-workload: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
}

/* Creates the run folder and the listening gate. */
static bool make_gate(run *r) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/' || strlen(tmp) > 60) tmp = "/tmp";
    snprintf(r->rundir, sizeof r->rundir, "%s/delta-funnel-perfetto.XXXXXX", tmp);
    if (!mkdtemp(r->rundir)) {
        r->rundir[0] = 0;
        return false;
    }
    snprintf(r->gate_path, sizeof r->gate_path, "%s/gate.sock", r->rundir);
    snprintf(r->run_trace, sizeof r->run_trace, "%s/capture.pftrace", r->rundir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(r->gate_path) >= sizeof sa.sun_path) return false;
    memcpy(sa.sun_path, r->gate_path, strlen(r->gate_path) + 1);
    r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (r->listen_fd < 0) return false;
    if (bind(r->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(r->gate_path, 0600) != 0 ||
        listen(r->listen_fd, 4) != 0)
        return false;
    return true;
}

static void remove_rundir(run *r) {
    if (!r->rundir[0]) return;
    unlink(r->gate_path);
    unlink(r->run_trace);
    rmdir(r->rundir);
}

/* Starts the workload in its own session with the capture settings in its environment. */
static bool start_workload(run *r, const char *resolved) {
    char hz[16];
    snprintf(hz, sizeof hz, "%u", r->a.hz);
    char wrapper[32];
    snprintf(wrapper, sizeof wrapper, "%ld", (long)getpid());
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        /* Child: its own session (stopped as a process group), the settings, then the command. */
        char self[32];
        snprintf(self, sizeof self, "%ld", (long)getpid());
        setsid();
        setenv("DELTA_FUNNEL_PERFETTO_GATE_SOCKET", r->gate_path, 1);
        setenv("DELTA_FUNNEL_PERFETTO_WRAPPER_PID", wrapper, 1);
        setenv("DELTA_FUNNEL_PERFETTO_WORKLOAD_PID", self, 1);
        setenv("DELTA_FUNNEL_PERFETTO_TRACE", r->run_trace, 1);
        setenv("DELTA_FUNNEL_PERFETTO_MODE", r->a.mode, 1);
        setenv("DELTA_FUNNEL_PERFETTO_SAMPLE_HZ", hz, 1);
        sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
        execv(resolved, r->a.command);
        _exit(errno == ENOENT ? 127 : 126);
    }
    r->child = pid;
    return true;
}

/* Handles one complete line from the workload. */
static void gate_line(run *r, const char *line) {
    if (!strncmp(line, "started ", 8)) {
        r->activated = true;
        (void)!send(r->conn_fd, "A\n", 2, MSG_NOSIGNAL);
        const char *reason = strstr(line, " reason=");
        char backend[40] = "";
        const char *b = strstr(line, "backend=");
        if (b) sscanf(b + 8, "%39s", backend);
        fprintf(stderr, "capture-workload: capture started in the workload (sampler %s%s%s)\n", backend,
                reason ? ": " : "", reason ? reason + 8 : "");
    } else if (!strncmp(line, "finalized ", 10)) {
        r->finalized = true;
    } else if (!strncmp(line, "failed ", 7)) {
        msg("the workload could not start the capture (%s)", line + 7);
    }
}

/* Reads what the workload sent; returns false at EOF or error (connection closed). */
static bool gate_read(run *r) {
    char buf[512];
    ssize_t n = recv(r->conn_fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) {
        close(r->conn_fd);
        r->conn_fd = -1;
        return false;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            r->line[r->line_len] = 0;
            gate_line(r, r->line);
            r->line_len = 0;
        } else if (r->line_len + 1 < sizeof r->line) {
            r->line[r->line_len++] = buf[i];
        }
    }
    return true;
}

/* Accepts a connection on the gate: only from the workload itself. */
static void gate_accept(run *r) {
    int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (r->conn_fd >= 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != r->child ||
        cred.uid != getuid()) {
        close(fd); /* another process, or a second activation: refused */
        return;
    }
    r->conn_fd = fd;
    (void)!send(fd, "R\n", 2, MSG_NOSIGNAL);
}

/* Reaps the workload if it ended. */
static void reap(run *r) {
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == r->child) {
            r->child_done = true;
            r->workload_status = wait_status(st);
        }
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Signals the workload's process group, waits for it up to the grace, then kills the group. */
static void stop_workload(run *r, int sig) {
    if (r->child_done) return;
    kill(-r->child, sig);
    uint64_t end = now_ms() + STOP_GRACE_MS;
    while (!r->child_done && now_ms() < end) {
        if (r->conn_fd >= 0) gate_read(r);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        reap(r);
    }
    if (!r->child_done) {
        kill(-r->child, SIGKILL);
        int st;
        if (waitpid(r->child, &st, 0) == r->child) r->workload_status = wait_status(st);
        r->child_done = true;
    }
    kill(-r->child, SIGKILL); /* stubborn children of the workload */
}

/* Runs until the workload exits (or the wrapper is interrupted). */
static void supervise(run *r) {
    while (!r->child_done && !r->interrupted) {
        struct pollfd p[3] = {{r->sig_fd, POLLIN, 0}, {r->listen_fd, POLLIN, 0}, {r->conn_fd, POLLIN, 0}};
        int n = poll(p, r->conn_fd >= 0 ? 3 : 2, -1);
        if (n < 0 && errno != EINTR) break;
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(r->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD) r->interrupted = (int)si.ssi_signo;
            reap(r);
        }
        if (p[1].revents & POLLIN) gate_accept(r);
        if (r->conn_fd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) gate_read(r);
    }
    if (r->interrupted) stop_workload(r, r->interrupted);
    /* The workload is gone: collect its last lines (written before it exited). */
    uint64_t end = now_ms() + DRAIN_MS;
    while (r->conn_fd >= 0 && now_ms() < end) {
        struct pollfd p = {r->conn_fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0 && !gate_read(r)) break;
    }
}

/* ------------------------------------------------------------------------ */
/* After the workload: save, check, report, status line.                     */

/* Copies src to a new file dst (O_EXCL, 0600); 0 or an errno. */
static int copy_new(const char *src, const char *dst) {
    /* Without O_NONBLOCK a FIFO in place of the trace would block here; only a regular file is copied. */
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (in < 0) return errno;
    struct stat ist;
    int fl = fstat(in, &ist) == 0 && S_ISREG(ist.st_mode) ? fcntl(in, F_GETFL) : -1;
    if (fl < 0 || fcntl(in, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(in);
        return EINVAL;
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0) {
        int e = errno;
        close(in);
        return e;
    }
    char buf[1 << 16];
    int e = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            e = errno;
            break;
        }
        if (n == 0) break;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                e = w < 0 ? errno : EIO;
                break;
            }
            done += w;
        }
        if (e) break;
    }
    if (!e && fsync(out) != 0) e = errno;
    if (close(out) != 0 && !e) e = errno;
    close(in);
    if (e) unlink(dst);
    return e;
}

/* Puts the workload's trace at TRACE, never replacing anything; returns T. */
static int save_trace(run *r) {
    struct stat st;
    if (lstat(r->run_trace, &st) != 0) return NOT_RUN;
    int e = link(r->run_trace, r->trace) == 0 ? 0 : errno;
    if (e == EXDEV || e == EPERM || e == EMLINK) e = copy_new(r->run_trace, r->trace);
    if (e) {
        fprintf(stderr, "capture-workload: the trace could not be saved to %s: %s; it is kept in %s\n", r->trace,
                strerror(e), r->run_trace);
        r->rundir[0] = 0; /* keep the evidence */
        return CLI_OUTPUT;
    }
    if (!r->finalized) {
        fprintf(stderr, "capture-workload: the capture was not finalized (the workload was killed, crashed or "
                        "called os._exit): the trace holds what was written before, and its health row says it is "
                        "incomplete; missing time is unknown, not zero\n");
        return T_NOT_FINALIZED;
    }
    return 0;
}

/* Prints the health row of TRACE; returns H. */
static int check_health(run *r) {
    df_report_health h;
    df_error err = {0};
    if (df_report_capture_health_file(r->trace, NULL, &h, &err) != DF_OK) {
        int rc = cli_fail_error(&err);
        df_error_clear(&err);
        return rc;
    }
    if (df_diag_capture_mode_from_name(r->a.mode) == DF_DIAG_MODE_STREAMING)
        h.configured_file_cap_bytes = STREAMING_FILE_CAP;
    df_buf csv;
    df_buf_init(&csv, 0);
    int rc = CLI_OK;
    if (df_report_health_csv(&h, &csv, &err) != DF_OK || !cli_write(csv.data, csv.len)) rc = CLI_SOFTWARE;
    df_buf_free(&csv);
    df_error_clear(&err);
    if (rc != CLI_OK) return rc;
    return h.capture_complete ? 0 : CLI_DATA;
}

/* Writes the sibling report (never replacing one); returns R. */
static int write_report(run *r) {
    df_report_profile *p = NULL;
    df_error err = {0};
    df_errkind k = df_report_build_from_trace_file(r->trace, NULL, &p, &err);
    if (k == DF_OK) k = df_report_write_html(p, r->report, DF_REPORT_NO_CLOBBER, &err);
    df_report_profile_destroy(p);
    int rc = CLI_OK;
    if (k != DF_OK) {
        rc = cli_fail_error(&err);
        df_error_clear(&err);
    }
    struct stat st;
    if (rc == CLI_OK && (lstat(r->report, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)) {
        fprintf(stderr, "capture-workload: report command produced no complete report\n");
        rc = CLI_OUTPUT;
    }
    return rc;
}

/* Prints a value for a shell (single quotes unless it is plain). */
static void shell_value(const char *s) {
    bool plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("_./:@%+,=-", *p) != NULL;
    if (plain) {
        fputs(s, stdout);
        return;
    }
    putchar('\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') fputs("'\\''", stdout);
        else putchar(*p);
    }
    putchar('\'');
}

static void status_line(const run *r, const char *trace_arg, const char *report_arg, int t, int h, int rep) {
    printf("workload_status=%d tracebox_status=%d health_status=%d report_status=%d sample_hz=%u trace=",
           r->workload_status, t, h, rep, r->a.hz);
    shell_value(trace_arg);
    if (rep == 0) {
        fputs(" report=", stdout);
        shell_value(report_arg);
    }
    putchar('\n');
    fflush(stdout);
}

/*
 * Blocks the signals the wrapper handles and opens their signalfd.  An
 * interruption signal the wrapper was started with ignored (nohup, a
 * background job's SIGINT) stays ignored: it is neither watched nor
 * forwarded, and the workload inherits the same disposition.
 */
static bool watch_signals(run *r) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction cur;
        if (sigaction(stops[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN) sigaddset(&set, stops[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, &r->old_mask) != 0) return false;
    r->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return r->sig_fd >= 0;
}

/* The deep-system mode says what the host lets it record. */
static void explain_mode(const run *r) {
    if (df_diag_capture_mode_from_name(r->a.mode) != DF_DIAG_MODE_DEEP_SYSTEM) return;
    df_diag_host_report h;
    df_error err = {0};
    if (df_diag_probe_host(&h, &err) != DF_OK) {
        df_error_clear(&err);
        return;
    }
    if (h.switches_available)
        fprintf(stderr, "capture-workload: deep-system records off-CPU intervals of the workload's sampled threads "
                        "from context-switch records; wakeup sources, other processes and CPU-wide scheduling are not "
                        "recorded (no tracefs access is used)\n");
    else
        fprintf(stderr, "capture-workload: deep-system scheduler context is not available on this host (%s); the "
                        "capture records spans and CPU samples only\n", h.switches_reason);
}

/* Preflight; returns CLI_OK or the exit code (message printed). */
static int preflight(run *r, char **resolved) {
    r->trace = absolute(r->a.output);
    r->report = r->trace ? report_path_for(r->trace) : NULL;
    if (!r->trace || !r->report) return CLI_SOFTWARE;
    int e = make_parent_dirs(r->trace);
    if (e) {
        fprintf(stderr, "capture-workload: the output directory is not writable: %s\n", strerror(e));
        return CLI_OUTPUT;
    }
    struct stat st;
    if (lstat(r->trace, &st) == 0) {
        fprintf(stderr, "capture-workload: the trace already exists (never overwritten): %s\n", r->trace);
        return CLI_OUTPUT;
    }
    if (lstat(r->report, &st) == 0) {
        fprintf(stderr, "capture-workload: the report already exists (never overwritten): %s\n", r->report);
        return CLI_OUTPUT;
    }
    int rc = resolve_command(r->a.command[0], resolved);
    if (rc) fprintf(stderr, "capture-workload: %s: %s\n", r->a.command[0],
                    rc == 127 ? "command not found" : "not executable");
    return rc;
}

int cli_capture_workload(int argc, char **argv) {
    run r;
    memset(&r, 0, sizeof r);
    r.listen_fd = r.conn_fd = r.sig_fd = -1;
    int rc = parse_args(argc, argv, &r.a);
    if (rc != CLI_OK) return rc;
    if (r.a.help) return cli_write(CAPTURE_HELP, strlen(CAPTURE_HELP)) ? CLI_OK : CLI_OUTPUT;
    char *resolved = NULL;
    rc = preflight(&r, &resolved);
    if (rc == CLI_OK) {
        explain_mode(&r);
        int t = NOT_RUN, h = NOT_RUN, rep = NOT_RUN;
        r.workload_status = NOT_RUN;
        bool ready = watch_signals(&r) && make_gate(&r) && start_workload(&r, resolved);
        if (!ready) {
            fprintf(stderr, "capture-workload: cannot prepare the capture: %s\n", strerror(errno));
            status_line(&r, r.a.output, "", t, h, rep);
            rc = CLI_UNAVAILABLE;
        } else {
            supervise(&r);
            if (!r.activated && !r.interrupted)
                fprintf(stderr, "capture-workload: workload exited before activating Perfetto diagnostics (call "
                                "deltafunnel.init_perfetto_diagnostics() before its first operation)\n");
            t = r.activated ? save_trace(&r) : NOT_RUN;
            if (!r.interrupted && (t == 0 || t == T_NOT_FINALIZED)) h = check_health(&r);
            if (!r.interrupted && (h == 0 || h == CLI_DATA)) rep = write_report(&r);
            char *report_arg = report_path_for(r.a.output);
            status_line(&r, r.a.output, report_arg ? report_arg : r.report, t, h, rep);
            free(report_arg);
            if (r.workload_status == 0 && (t != 0 || h != 0 || rep != 0))
                fprintf(stderr, "capture-workload: workload succeeded; do not retry it because diagnostics failed\n");
            rc = r.interrupted ? 128 + r.interrupted : r.workload_status;
        }
    }
    if (r.conn_fd >= 0) close(r.conn_fd);
    if (r.listen_fd >= 0) close(r.listen_fd);
    if (r.sig_fd >= 0) close(r.sig_fd);
    remove_rundir(&r);
    free(resolved);
    free(r.trace);
    free(r.report);
    return rc;
}
