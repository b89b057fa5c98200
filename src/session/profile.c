/*
 * Diagnostics entry points of the public API: operation-scoped ranked
 * profiles (RankedProfileConfig) and the whole-process capture started by
 * init_perfetto_diagnostics() under capture-workload.
 *
 * Ranked profile (the reference implementation's lifecycle, with an
 * in-process capture): check and resolve the outputs, make a private
 * temporary directory beside the report, start an operation-scoped capture (only the
 * calling thread's operations, with a capture_scope_id) writing the raw
 * trace there; at finish stop it, build the ranked model restricted to the
 * scope, write the artifact and the HTML report, remove the raw trace.
 *
 * Whole-process capture (reference 6.4 / 7.2, adapted): the wrapper hands
 * over its settings in DELTA_FUNNEL_PERFETTO_* variables and waits on a
 * private UNIX socket (the start gate) in a 0700 directory.  Protocol, one
 * connection, text lines:
 *
 *   workload connects; each side checks the other's SO_PEERCRED pid
 *   wrapper  -> "R\n"                         may start
 *   workload -> "started backend=B hz=N\n"    capture is recording
 *            or "failed kind=K\n"             (and raises)
 *   wrapper  -> "A\n"                         acknowledged (the workload
 *                                             waits wait_timeout_seconds)
 *   workload -> "finalized ...\n"             at exit, after the trace is
 *                                             complete; then closes
 *
 * A workload that dies never sends "finalized": the wrapper knows the
 * trace is incomplete.  Errors carry the reference's kinds (df_errkinds.def:
 * "profile_already_active", "capture_handshake_failed", ...) as their kind
 * and no context.
 */
#include "session/session_int.h"

#include "diag/capture.h"
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Socket reads and writes of the handshake time out after this long (reference 6.7). */
#define HANDSHAKE_IO_MS 5000
/* Event buffer of a capture at the default budget, and per extra budgeted span. */
#define BASE_BUFFER_BYTES ((size_t)64 << 20)
#define BUFFER_BYTES_PER_SPAN 256u
#define MAX_BUFFER_BYTES ((size_t)1 << 30)

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* Fills err (may be NULL) with `kind` (a specific kind of df_errkinds.def), `phase` and the message; returns kind. */
__attribute__((format(printf, 4, 5))) static df_errkind diag_fail(df_error *err, df_errkind kind, const char *phase,
                                                                  const char *fmt, ...) {
    if (!err) return kind;
    va_list ap;
    va_start(ap, fmt);
    df_error_setv(err, kind, fmt, ap);
    va_end(ap);
    df_error_set_phase(err, phase);
    return kind;
}

/* Re-labels a report or capture error as a ranked_profile error, keeping its specific kind. */
static df_errkind as_ranked(df_error *err, df_errkind k) {
    if (!err || k == DF_OK) return k;
    df_error_set_phase(err, "ranked_profile");
    df_error_set_context(err, NULL); /* diagnostics errors carry no context (reference) */
    return k;
}

/* ------------------------------------------------------------------------ */
/* Output paths                                                              */

/* True when the last component of `path` names a file (not empty, ".", ".."). */
static bool names_file(const char *path) {
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/') n--;
    if (n == 0 || n != strlen(path)) return false; /* empty, or a trailing slash names a directory */
    size_t start = n;
    while (start > 0 && path[start - 1] != '/') start--;
    const char *base = path + start;
    return !(strcmp(base, ".") == 0 || strcmp(base, "..") == 0);
}

/*
 * The canonical form of an absolute path as the kernel would resolve it
 * once missing directories exist: existing components are resolved with
 * realpath (symlinks followed), "." is dropped, ".." goes up (through the
 * real parent for existing parts, lexically for missing ones).  False when
 * it does not fit.
 */
static bool canonical_path(const char *abs, char *out, size_t cap) {
    char cur[PATH_MAX] = "/";
    bool exists = true;
    const char *p = abs;
    while (*p) {
        while (*p == '/') p++;
        const char *end = p;
        while (*end && *end != '/') end++;
        size_t n = (size_t)(end - p);
        if (n == 0) break;
        if (n == 1 && p[0] == '.') {
            p = end;
            continue;
        }
        size_t len = strlen(cur);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(cur, '/');
            if (slash == cur) cur[1] = 0; else if (slash) *slash = 0;
            p = end;
            continue;
        }
        if (len + 1 + n >= sizeof cur) return false;
        if (len > 1) cur[len++] = '/';
        memcpy(cur + len, p, n);
        cur[len + n] = 0;
        struct stat st;
        if (exists && lstat(cur, &st) == 0) {
            char real[PATH_MAX];
            if (!S_ISLNK(st.st_mode) || *end == 0) {
                /* a plain component (or the final name, never followed) */
            } else if (realpath(cur, real)) {
                snprintf(cur, sizeof cur, "%s", real);
            } else {
                exists = false; /* a dangling link in the middle: kept as is */
            }
        } else {
            exists = false;
        }
        p = end;
    }
    if (strlen(cur) >= cap) return false;
    snprintf(out, cap, "%s", cur);
    return true;
}

/* A resolved output: absolute path, canonical path of its existing part, identity when it exists. */
typedef struct out_path {
    char abs[PATH_MAX];   /* absolute, as given (for messages and writing) */
    char canon[PATH_MAX]; /* canonical (canonical_path) */
    bool exists;          /* the file exists (lstat) */
    struct stat st;       /* its lstat when it exists */
} out_path;

/*
 * Resolves `path`: makes it absolute, finds the canonical form through its
 * nearest existing ancestor (so symlinked parents and ".." resolve), checks
 * that an existing destination is a regular file (not followed: a symlink
 * is refused) and that the nearest existing ancestor is a writable
 * directory.  Creates nothing.
 */
static df_errkind resolve_output(const char *what, const char *path, out_path *o, df_error *err) {
    memset(o, 0, sizeof *o);
    if (!path || !path[0] || !names_file(path))
        return diag_fail(err, DF_ERR_INVALID_OPTION_VALUE, "config", "`%s` must name a file", what);
    int n;
    if (path[0] == '/') {
        n = snprintf(o->abs, sizeof o->abs, "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile",
                             "cannot resolve `%s`: the working directory is unavailable", what);
        n = snprintf(o->abs, sizeof o->abs, "%s/%s", cwd, path);
    }
    if (n < 0 || (size_t)n >= sizeof o->abs)
        return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile", "`%s` is too long", what);
    if (lstat(o->abs, &o->st) == 0) {
        o->exists = true;
        if (!S_ISREG(o->st.st_mode))
            return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile",
                             "`%s` exists and is not a regular file", what);
    }
    if (!canonical_path(o->abs, o->canon, sizeof o->canon))
        return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile", "cannot resolve `%s`", what);
    /* The nearest existing ancestor must be a writable directory (missing parents are created later). */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->canon);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash) break;
        if (slash == dir) slash[1] = 0; else *slash = 0;
        struct stat st;
        if (stat(dir, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile",
                                 "a parent of `%s` is not a directory", what);
            if (access(dir, W_OK | X_OK) != 0)
                return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile",
                                 "the directory for `%s` is not writable", what);
            break;
        }
        if (strcmp(dir, "/") == 0) break;
    }
    return DF_OK;
}

/* True when two resolved outputs are the same file (same canonical path, or the same existing inode). */
static bool same_output(const out_path *a, const out_path *b) {
    if (strcmp(a->canon, b->canon) == 0) return true;
    return a->exists && b->exists && a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
}

/* mkdir -p of the directory part of `path` (mode 0700 for what it creates); 0 or an errno. */
static int make_parents(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return errno;
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* ------------------------------------------------------------------------ */
/* Capture settings                                                          */

/* The sampler forced by DELTAFUNNEL_PROFILE_SAMPLER (a backend name, or "perf" / "timer"), else AUTO. */
static df_diag_backend env_backend(void) {
    const char *v = getenv("DELTAFUNNEL_PROFILE_SAMPLER");
    df_diag_backend b = DF_DIAG_BACKEND_AUTO;
    if (!v || df_diag_backend_from_name(v, &b)) return b;
    if (strcmp(v, "perf") == 0) return DF_DIAG_BACKEND_PERF;
    if (strcmp(v, "timer") == 0) return DF_DIAG_BACKEND_TIMER;
    return DF_DIAG_BACKEND_AUTO;
}

/* Event buffer for a budget: the default plus room for the extra spans (reference 6.5 scaling). */
static size_t buffer_for(uint64_t max_spans) {
    if (max_spans <= 100000u) return BASE_BUFFER_BYTES;
    uint64_t extra = max_spans - 100000u;
    if (extra > (MAX_BUFFER_BYTES - BASE_BUFFER_BYTES) / BUFFER_BYTES_PER_SPAN) return MAX_BUFFER_BYTES;
    return BASE_BUFFER_BYTES + (size_t)extra * BUFFER_BYTES_PER_SPAN;
}

/* ------------------------------------------------------------------------ */
/* Ranked profiles                                                           */

struct df_ranked_profile {
    df_diag_capture *cap;        /* the running capture */
    char *report_path;           /* absolute HTML path (owned) */
    char *artifact_path;         /* absolute artifact path or NULL (owned) */
    char *tmp_dir;               /* private temporary directory (owned) */
    char *trace_path;            /* raw trace inside it (owned) */
};

static pthread_mutex_t ranked_mu = PTHREAD_MUTEX_INITIALIZER;
static bool ranked_active; /* a ranked profile is between start and finish (ranked_mu) */

void df_ranked_profile_options_init(df_ranked_profile_options *o) {
    memset(o, 0, sizeof *o);
    o->sample_hz = 1000;
    o->max_operator_activity_spans = 100000;
}

static void ranked_free(df_ranked_profile *rp) {
    if (!rp) return;
    df_diag_capture_destroy(rp->cap);
    if (rp->trace_path) unlink(rp->trace_path);
    if (rp->tmp_dir) rmdir(rp->tmp_dir);
    df_free(rp->report_path);
    df_free(rp->artifact_path);
    df_free(rp->tmp_dir);
    df_free(rp->trace_path);
    df_free(rp);
}

/* Checks and resolves the options into rp (paths only; nothing is created). */
static df_errkind ranked_prepare(const df_ranked_profile_options *o, df_ranked_profile *rp, df_error *err) {
    if (o->sample_hz != 100 && o->sample_hz != 1000)
        return diag_fail(err, DF_ERR_INVALID_OPTION_VALUE, "config", "`sample_hz` must be 100 or 1000");
    if (o->max_operator_activity_spans == 0)
        return diag_fail(err, DF_ERR_INVALID_OPTION_VALUE, "config",
                         "`max_operator_activity_spans` must be a positive integer");
    out_path report, artifact;
    DF_TRY(resolve_output("report_path", o->report_path, &report, err));
    if (o->artifact_path) {
        DF_TRY(resolve_output("artifact_path", o->artifact_path, &artifact, err));
        if (same_output(&report, &artifact))
            return diag_fail(err, DF_ERR_INVALID_OPTION_VALUE, "config",
                             "`report_path` and `artifact_path` must name different files");
        if (!(rp->artifact_path = df_strdup(artifact.abs))) return DF_OOM(err);
    }
    if (!(rp->report_path = df_strdup(report.abs))) return DF_OOM(err);
    return DF_OK;
}

/* Creates the report's parents and the private temporary directory beside it. */
static df_errkind ranked_make_dirs(df_ranked_profile *rp, df_error *err) {
    const char *paths[2] = {rp->report_path, rp->artifact_path};
    for (int i = 0; i < 2; i++) {
        int e = paths[i] ? make_parents(paths[i]) : 0;
        if (e)
            return diag_fail(err, DF_ERR_OUTPUT_UNAVAILABLE, "ranked_profile",
                             "cannot create the directory of `%s`: %s", i ? "artifact_path" : "report_path",
                             strerror(e));
    }
    char tmpl[PATH_MAX];
    const char *slash = strrchr(rp->report_path, '/');
    int n = snprintf(tmpl, sizeof tmpl, "%.*s/.delta-funnel-profile.XXXXXX", (int)(slash - rp->report_path),
                     rp->report_path);
    if (n < 0 || (size_t)n >= sizeof tmpl || !mkdtemp(tmpl))
        return diag_fail(err, DF_ERR_TEMPORARY_DIRECTORY_FAILED, "ranked_profile",
                         "cannot create a temporary directory beside the report: %s", strerror(errno));
    if (!(rp->tmp_dir = df_strdup(tmpl))) return DF_OOM(err);
    size_t len = strlen(tmpl) + sizeof "/operation.pftrace";
    if (!(rp->trace_path = df_malloc(len))) return DF_OOM(err);
    snprintf(rp->trace_path, len, "%s/operation.pftrace", tmpl);
    return DF_OK;
}

static df_errkind ranked_capture(df_ranked_profile *rp, const df_ranked_profile_options *o, df_error *err) {
    df_diag_capture_options co = {
        .trace_path = rp->trace_path,
        .sample_hz = o->sample_hz,
        .backend = env_backend(),
        .max_operator_activity_spans = o->max_operator_activity_spans,
        .operation_scoped = true,
        .buffer_bytes = buffer_for(o->max_operator_activity_spans),
    };
    df_error cerr = {0};
    df_errkind k = df_diag_capture_start(&co, &rp->cap, &cerr);
    if (k == DF_OK) return DF_OK;
    /* The sampler reports generic kinds; the reference names each case. */
    k = k == DF_ERR_NOT_AVAILABLE || k == DF_ERR_OUT_OF_MEMORY ? k
        : k == DF_ERR_LIMIT_EXCEEDED                          ? DF_ERR_CAPTURE_SCOPE_UNAVAILABLE
        : k == DF_ERR_INVALID_ARGUMENT                        ? DF_ERR_PROFILE_ALREADY_ACTIVE
                                                              : DF_ERR_CAPTURE_UNAVAILABLE;
    diag_fail(err, k, "ranked_profile", "%s", cerr.message);
    df_error_clear(&cerr);
    return k;
}

df_errkind df_ranked_profile_start(const df_ranked_profile_options *opts, df_ranked_profile **out, df_error *err) {
    *out = NULL;
    df_ranked_profile_options o;
    if (opts) o = *opts; else df_ranked_profile_options_init(&o);
    df_ranked_profile *rp = df_calloc(1, sizeof *rp);
    if (!rp) return DF_OOM(err);
    df_errkind k = ranked_prepare(&o, rp, err);
    if (k != DF_OK) {
        ranked_free(rp);
        return k;
    }
    pthread_mutex_lock(&ranked_mu);
    bool busy = ranked_active || df_diag_capture_is_active();
    if (!busy) ranked_active = true;
    pthread_mutex_unlock(&ranked_mu);
    if (busy) {
        ranked_free(rp);
        return diag_fail(err, DF_ERR_PROFILE_ALREADY_ACTIVE, "ranked_profile",
                         "another ranked profile or diagnostics capture is active in this process");
    }
    k = ranked_make_dirs(rp, err);
    if (k == DF_OK) k = ranked_capture(rp, &o, err);
    if (k != DF_OK) {
        ranked_free(rp);
        pthread_mutex_lock(&ranked_mu);
        ranked_active = false;
        pthread_mutex_unlock(&ranked_mu);
        return k;
    }
    *out = rp;
    return DF_OK;
}

/* Builds the model of the capture scope and writes the outputs. */
static df_errkind ranked_report(df_ranked_profile *rp, const df_diag_capture_stats *st, df_ranked_profile_result *res,
                                df_error *err) {
    df_report_build_options bo = {.capture_scope_id = st->capture_scope_id};
    df_report_profile *p = NULL;
    df_errkind k = df_report_build_from_trace_file(rp->trace_path, &bo, &p, err);
    if (k == DF_OK && rp->artifact_path) k = df_report_write_dfprofile(p, rp->artifact_path, DF_REPORT_REPLACE, err);
    if (k == DF_OK) k = df_report_write_html(p, rp->report_path, DF_REPORT_REPLACE, err);
    if (k == DF_OK && res) {
        res->semantic_nodes = df_report_semantic_count(p);
        res->function_nodes = df_report_function_count(p);
        df_report_health h;
        df_error ignored = {0};
        if (df_report_capture_health_file(rp->trace_path, &bo, &h, &ignored) == DF_OK)
            res->capture_complete = h.capture_complete;
        df_error_clear(&ignored);
    }
    df_report_profile_destroy(p);
    return as_ranked(err, k);
}

df_errkind df_ranked_profile_finish(df_ranked_profile *rp, df_ranked_profile_result *res, df_error *err) {
    if (res) memset(res, 0, sizeof *res);
    if (!rp) return DF_OK;
    df_diag_capture_stats st;
    df_error cerr = {0};
    df_errkind k = df_diag_capture_stop(rp->cap, &st, &cerr);
    if (res) {
        res->capture_scope_id = st.capture_scope_id;
        snprintf(res->backend, sizeof res->backend, "%s", df_diag_backend_name(st.backend));
        snprintf(res->backend_reason, sizeof res->backend_reason, "%s", st.backend_reason);
        res->effective_hz = st.effective_hz;
        res->samples = st.samples;
        res->samples_lost = st.samples_lost;
        res->trace_bytes = st.trace_bytes;
    }
    if (k != DF_OK) {
        k = diag_fail(err, k == DF_ERR_OUT_OF_MEMORY ? k : DF_ERR_CAPTURE_FAILED, "ranked_profile",
                      "the profile capture failed: %s", cerr.message);
    } else {
        k = ranked_report(rp, &st, res, err);
    }
    df_error_clear(&cerr);
    ranked_free(rp);
    pthread_mutex_lock(&ranked_mu);
    ranked_active = false;
    pthread_mutex_unlock(&ranked_mu);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Whole-process capture (capture-workload)                                  */

const char *const df_perfetto_handshake_variables[] = {
    "DELTA_FUNNEL_PERFETTO_GATE_SOCKET", "DELTA_FUNNEL_PERFETTO_WRAPPER_PID", "DELTA_FUNNEL_PERFETTO_WORKLOAD_PID",
    "DELTA_FUNNEL_PERFETTO_TRACE",       "DELTA_FUNNEL_PERFETTO_MODE",        "DELTA_FUNNEL_PERFETTO_SAMPLE_HZ",
    NULL,
};

static struct {
    pthread_mutex_t mu;    /* guards everything below */
    bool attempted;        /* start ran (its result is remembered) */
    df_errkind kind;       /* the first start's result */
    df_error error;        /* its error, returned again to later calls */
    df_diag_capture *cap;  /* the whole-process capture, or NULL */
    int gate_fd;           /* connection to the wrapper, -1 */
    pid_t owner;           /* process that started it (a forked child must not finish it) */
    bool finished;         /* finish ran */
} whole = {PTHREAD_MUTEX_INITIALIZER, false, DF_OK, {0}, NULL, -1, 0, false};

/* Parses a positive pid_t; false otherwise. */
static bool parse_pid(const char *s, pid_t *out) {
    if (!s || !*s) return false;
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (*p - '0');
        if (v > INT_MAX) return false;
    }
    if (v <= 0) return false;
    *out = (pid_t)v;
    return true;
}

static int ms_left(uint64_t deadline_ns) {
    uint64_t now = df_now_ns();
    if (now >= deadline_ns) return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Reads one line (without '\n') into buf before the deadline.  0, or ETIMEDOUT / EPIPE (EOF) / errno. */
static int read_line(int fd, char *buf, size_t cap, uint64_t deadline_ns) {
    size_t n = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = ms_left(deadline_ns);
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return ETIMEDOUT;
        char c;
        ssize_t got = read(fd, &c, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno;
        if (got == 0) return EPIPE;
        if (c == '\n') {
            buf[n] = 0;
            return 0;
        }
        if (n + 1 < cap) buf[n++] = c;
    }
}

static int write_all(int fd, const char *s) {
    size_t len = strlen(s), done = 0;
    while (done < len) {
        ssize_t w = send(fd, s + done, len - done, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EPIPE;
        done += (size_t)w;
    }
    return 0;
}

/* Checks the handshake fields: all absent, partial, malformed, or another process's. */
static df_errkind check_handshake(const df_perfetto_handshake *h, pid_t *wrapper, uint32_t *hz, df_error *err) {
    const char *f[6] = {h->gate_socket, h->wrapper_pid, h->workload_pid, h->trace_path, h->mode, h->sample_hz};
    int present = 0;
    for (int i = 0; i < 6; i++) present += f[i] != NULL;
    if (present == 0)
        return diag_fail(err, DF_ERR_CAPTURE_UNAVAILABLE, "perfetto_diagnostics",
                         "no capture is waiting for this process: run the workload under capture-workload "
                         "(delta-funnel-perfetto capture-workload --output TRACE -- COMMAND)");
    if (present != 6)
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "perfetto_diagnostics",
                         "the Perfetto capture handshake variables are incomplete");
    pid_t workload;
    if (!parse_pid(h->wrapper_pid, wrapper) || !parse_pid(h->workload_pid, &workload))
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "perfetto_diagnostics",
                         "the Perfetto capture handshake pids are not positive process ids");
    if (h->gate_socket[0] != '/' || h->trace_path[0] != '/' ||
        strlen(h->gate_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "perfetto_diagnostics",
                         "the Perfetto capture gate and trace paths must be absolute");
    if (!df_diag_capture_mode_from_name(h->mode))
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "perfetto_diagnostics", "unsupported capture mode");
    if (strcmp(h->sample_hz, "100") && strcmp(h->sample_hz, "1000"))
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_INVALID, "perfetto_diagnostics", "unsupported sample frequency");
    *hz = (uint32_t)atoi(h->sample_hz);
    if (workload != getpid())
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "perfetto_diagnostics",
                         "the Perfetto capture was started for another process");
    return DF_OK;
}

/* Connects to the gate and authenticates both ends; returns the fd or -1 (err filled). */
static int gate_connect(const char *path, pid_t wrapper, df_error *err) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "perfetto_diagnostics", "cannot create a socket: %s",
                  strerror(errno));
        return -1;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int r;
    do r = connect(fd, (struct sockaddr *)&a, sizeof a);
    while (r != 0 && errno == EINTR);
    struct ucred cred;
    socklen_t len = sizeof cred;
    const char *why = NULL;
    if (r != 0) why = strerror(errno);
    else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) why = "cannot read the peer's credentials";
    else if (cred.pid != wrapper || cred.uid != getuid()) why = "the gate is not held by the capture-workload wrapper";
    if (why) {
        close(fd);
        diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "perfetto_diagnostics",
                  "cannot join the capture start gate: %s", why);
        return -1;
    }
    return fd;
}

/* Capture options of a capture-workload mode (reference 6.2, adapted). */
static df_diag_capture_options mode_options(const df_perfetto_handshake *h, uint32_t hz) {
    df_diag_capture_options o = {.trace_path = h->trace_path, .sample_hz = hz, .backend = env_backend()};
    df_diag_capture_mode mode = df_diag_capture_mode_from_name(h->mode);
    if (mode == DF_DIAG_MODE_STREAMING) {
        o.duration_ms = 12u * 60u * 1000u;
        o.flush_period_ms = 1000;
        o.max_file_bytes = (uint64_t)512 << 20;
    } else {
        o.duration_ms = 2u * 60u * 1000u;
        o.hold_bytes = (size_t)256 << 20;
        o.scheduler = mode == DF_DIAG_MODE_DEEP_SYSTEM;
    }
    return o;
}

static void finish_at_exit(void) { df_perfetto_diagnostics_finish(); }

/* The handshake proper: gate, capture, status line, acknowledgement.  whole.mu held. */
static df_errkind whole_start(const df_perfetto_handshake *h, double wait_s, df_error *err) {
    pid_t wrapper = 0;
    uint32_t hz = 0;
    DF_TRY(check_handshake(h, &wrapper, &hz, err));
    int fd = gate_connect(h->gate_socket, wrapper, err);
    if (fd < 0) return DF_ERR_CAPTURE_HANDSHAKE_FAILED; /* err filled by gate_connect */
    char line[256];
    int e = read_line(fd, line, sizeof line, df_now_ns() + (uint64_t)HANDSHAKE_IO_MS * 1000000u);
    if (e || strcmp(line, "R") != 0) {
        close(fd);
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "perfetto_diagnostics",
                         "the capture start gate did not open: %s", e ? strerror(e) : "unexpected message");
    }
    df_diag_capture_options o = mode_options(h, hz);
    df_error cerr = {0};
    df_errkind k = df_diag_capture_start(&o, &whole.cap, &cerr);
    if (k != DF_OK) {
        snprintf(line, sizeof line, "failed kind=capture_unavailable\n");
        write_all(fd, line);
        close(fd);
        k = diag_fail(err, k == DF_ERR_OUT_OF_MEMORY ? k : DF_ERR_CAPTURE_UNAVAILABLE, "perfetto_diagnostics",
                      "the capture cannot start: %s", cerr.message);
        df_error_clear(&cerr);
        return k;
    }
    char reason[160];
    df_diag_backend backend = df_diag_capture_backend(whole.cap, reason, sizeof reason);
    snprintf(line, sizeof line, "started backend=%s hz=%u mode=%s reason=%s\n", df_diag_backend_name(backend), hz,
             h->mode, reason);
    e = write_all(fd, line);
    if (!e && wait_s > 0) {
        double ms = wait_s * 1000.0;
        uint64_t deadline = df_now_ns() + (ms > 1e12 ? (uint64_t)1e18 : (uint64_t)(ms * 1e6));
        e = read_line(fd, line, sizeof line, deadline);
        if (!e && strcmp(line, "A") != 0) e = EPROTO;
    }
    if (e) {
        df_diag_capture_destroy(whole.cap);
        whole.cap = NULL;
        unlink(h->trace_path);
        close(fd);
        if (e == ETIMEDOUT)
            return diag_fail(err, DF_ERR_CAPTURE_TIMEOUT, "perfetto_diagnostics",
                             "the capture-workload wrapper did not acknowledge the capture in time");
        return diag_fail(err, DF_ERR_CAPTURE_HANDSHAKE_FAILED, "perfetto_diagnostics",
                         "the capture-workload wrapper went away: %s", strerror(e));
    }
    whole.gate_fd = fd;
    whole.owner = getpid();
    atexit(finish_at_exit);
    return DF_OK;
}

df_errkind df_perfetto_diagnostics_start(const df_perfetto_handshake *h, double wait_timeout_seconds, df_error *err) {
    pthread_mutex_lock(&whole.mu);
    if (!whole.attempted) {
        whole.attempted = true;
        df_perfetto_handshake none = {0};
        whole.kind = whole_start(h ? h : &none, wait_timeout_seconds, &whole.error);
    }
    df_errkind k = whole.kind;
    if (k != DF_OK && err) {
        df_error_set(err, whole.error.kind, "%s", whole.error.message);
        df_error_set_phase(err, whole.error.phase);
        df_error_set_context(err, whole.error.context);
    }
    pthread_mutex_unlock(&whole.mu);
    return k;
}

void df_perfetto_diagnostics_finish(void) {
    pthread_mutex_lock(&whole.mu);
    if (!whole.cap || whole.finished || whole.owner != getpid()) {
        pthread_mutex_unlock(&whole.mu);
        return;
    }
    whole.finished = true;
    df_diag_capture_stats st;
    df_error err = {0};
    df_errkind k = df_diag_capture_stop(whole.cap, &st, &err);
    char line[512];
    if (k == DF_OK)
        snprintf(line, sizeof line,
                 "finalized backend=%s samples=%llu samples_lost=%llu events_lost=%llu discarded=%llu "
                 "timed_out=%d trace_bytes=%llu effective_hz=%.1f\n",
                 df_diag_backend_name(st.backend),
                 (unsigned long long)st.samples, (unsigned long long)st.samples_lost,
                 (unsigned long long)st.events_lost, (unsigned long long)st.packets_discarded, st.timed_out ? 1 : 0,
                 (unsigned long long)st.trace_bytes, st.effective_hz);
    else
        snprintf(line, sizeof line, "failed kind=capture_failed\n");
    df_error_clear(&err);
    if (whole.gate_fd >= 0) {
        write_all(whole.gate_fd, line);
        close(whole.gate_fd);
        whole.gate_fd = -1;
    }
    df_diag_capture_destroy(whole.cap);
    whole.cap = NULL;
    pthread_mutex_unlock(&whole.mu);
}

bool df_perfetto_diagnostics_active(void) {
    pthread_mutex_lock(&whole.mu);
    bool a = whole.cap && !whole.finished && !df_diag_capture_stopped(whole.cap);
    pthread_mutex_unlock(&whole.mu);
    return a;
}
