/*
 * deltafunnel: the command-line program.
 *
 *   deltafunnel preview --source NAME=URI [--source ...] [--sql SQL] [--limit N]
 *                       [--target-partitions N] [--batch-size N] [--profile]
 *   deltafunnel datagen --output DIR --rows N [--files F] [--partitions P] [--seed S]
 *                       [--codec none|snappy|zstd] [--shape mixed|narrow|wide|events]
 *                       [--row-group-rows N]
 *   deltafunnel load JOB [--dry-run] [--progress] [--log LEVEL]
 *   deltafunnel --version | --help | help [COMMAND] | COMMAND --help
 *
 * Results go to stdout; each error is one line "error: <phase>/<kind>:
 * <message>" on stderr.  Exit codes: 0 success, 1 the operation failed,
 * 2 usage error, 3 invalid job file, 4 some outputs failed (load), 70 out
 * of memory or an internal error, 130 / 143 stopped by SIGINT / SIGTERM.
 *
 * SIGINT and SIGTERM (what batch schedulers send) only set the running
 * operation's cancel flag: the preview or load stops within a batch, a
 * load rolls back and drops its staging table, and the program prints
 * "cancelled" on stderr and exits with 128 + the signal number.
 *
 * Only the public API (include/deltafunnel/deltafunnel.h) is used.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deltafunnel/deltafunnel.h"

#define EXIT_OPERATION 1
#define EXIT_USAGE 2
#define EXIT_JOB_FILE 3
#define EXIT_OUTPUTS_FAILED 4
#define EXIT_INTERNAL 70
#define MAX_SOURCES 64

static const char main_usage[] =
    "usage: deltafunnel <command> [options]\n"
    "\n"
    "Read Delta Lake tables, transform them with SQL, preview the results.\n"
    "\n"
    "commands:\n"
    "  preview   run SQL over Delta tables and print the first rows\n"
    "  datagen   write a deterministic synthetic Delta table\n"
    "  load      run a job file: load query results into SQL Server\n"
    "  help      show help for a command\n"
    "\n"
    "options:\n"
    "  --version   print the version and exit\n"
    "  --help      print this help and exit\n"
    "\n"
    "Exit codes: 0 success, 1 operation failed, 2 usage error, 3 invalid job file,\n"
    "4 some outputs failed (load), 70 internal error, 130/143 stopped by SIGINT/SIGTERM.\n";

static const char load_usage[] =
    "usage: deltafunnel load JOB [options]\n"
    "\n"
    "Runs a job file (TOML, or JSON when it ends in .json or starts with '{'): registers its\n"
    "Delta sources, plans its SQL tables and aliases, and writes its outputs to SQL Server in\n"
    "order with write_all semantics (docs/jobs.md).  The JSON report goes to stdout; a failed\n"
    "run that raises prints {\"error\": {...}} on stdout too.  Connection strings may be\n"
    "written \"env:NAME\" to read them from the environment.\n"
    "\n"
    "options:\n"
    "  --dry-run                plan every output without contacting SQL Server\n"
    "  --progress               show progress on stderr\n"
    "  --log LEVEL              write events at LEVEL or above (error, warn, info, debug) to\n"
    "                           stderr as JSON lines\n"
    "  --help                   print this help\n"
    "\n"
    "Exit codes: 0 every output succeeded (or the dry run planned), 1 the run failed before\n"
    "or outside the outputs (planning, caches), 2 usage error, 3 invalid job file, 4 some\n"
    "outputs failed or were skipped (see the report), 70 internal error.\n";

static const char preview_usage[] =
    "usage: deltafunnel preview --source NAME=URI [--source NAME=URI ...] [--sql SQL] [options]\n"
    "\n"
    "Registers each Delta table under NAME, plans SQL over the registered names and prints\n"
    "the first rows as a text grid followed by the phase timings.  Without --sql the only\n"
    "registered source is previewed.\n"
    "\n"
    "options:\n"
    "  --source NAME=URI        a Delta table (local path or file:// URI); repeatable\n"
    "  --sql SQL                a read-only query over the registered names\n"
    "  --limit N                rows to show (default 20)\n"
    "  --target-partitions N    worker partitions (default: CPU count)\n"
    "  --batch-size N           rows per batch (default 8192)\n"
    "  --profile                also print the execution profile (JSON)\n"
    "  --help                   print this help\n";

static const char datagen_usage[] =
    "usage: deltafunnel datagen --output DIR --rows N [options]\n"
    "\n"
    "Writes a deterministic synthetic Delta table (Parquet data files and one commit whose\n"
    "add actions carry statistics), streaming in bounded memory.  The same seed gives the\n"
    "same bytes.\n"
    "\n"
    "options:\n"
    "  --output DIR             table directory (must not hold a Delta table yet)\n"
    "  --rows N                 total rows\n"
    "  --files F                data files per partition (default 1)\n"
    "  --partitions P           partition values (default 0: unpartitioned)\n"
    "  --seed S                 generator seed (default 42)\n"
    "  --codec C                none, snappy (default) or zstd\n"
    "  --shape S                mixed (default), narrow, wide or events\n"
    "  --row-group-rows N       rows per Parquet row group (default 131072)\n"
    "  --help                   print this help\n";

/* The cancel flag of the running operation and the signal that set it (written only by the handler). */
static _Atomic bool cancel_flag;
static volatile sig_atomic_t cancel_signal;

static void on_stop_signal(int signo) {
    cancel_signal = signo;
    atomic_store(&cancel_flag, true); /* lock-free: safe in a handler */
}

/* SIGINT / SIGTERM set the cancel flag (and nothing else) from now on. */
static void install_stop_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* After an operation: when a stop signal arrived, says so and returns 128 + its number, else `rc`. */
static int stopped_or(int rc) {
    int signo = cancel_signal;
    if (!signo) return rc;
    fprintf(stderr, "cancelled (%s)\n", signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : "signal");
    return 128 + signo;
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "error: usage: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return EXIT_USAGE;
}

/* Prints a library error as one line and returns the exit code for it. */
static int report_error(df_error *err) {
    const char *phase = err->phase[0] ? err->phase : df_errkind_default_phase(err->kind);
    fprintf(stderr, "error: %s/%s: %s\n", phase, df_errkind_name(err->kind), err->message);
    int code = err->kind == DF_ERR_OUT_OF_MEMORY || err->kind == DF_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_OPERATION;
    df_error_clear(err);
    return code;
}

/* Parses a non-negative integer; false when s is not one. */
static bool parse_count(const char *s, int64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > INT64_MAX) return false;
    *out = (int64_t)v;
    return true;
}

/* The value of option argv[*i] (advancing *i); NULL when missing. */
static const char *option_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

/* ------------------------------------------------------------------------ */
/* preview                                                                   */

typedef struct preview_args {
    char name_store[MAX_SOURCES][256]; /* copies of the NAME parts */
    const char *names[MAX_SOURCES];  /* source names */
    const char *uris[MAX_SOURCES];   /* source locations */
    int nsources;
    const char *sql;                 /* NULL: preview the only source */
    int64_t limit;
    int64_t target_partitions;       /* -1 = default */
    int64_t batch_size;              /* -1 = default */
    bool profile;
} preview_args;

static int parse_preview(int argc, char **argv, preview_args *a) {
    memset(a, 0, sizeof *a);
    a->limit = 20;
    a->target_partitions = a->batch_size = -1;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        const char *v = NULL;
        if (strcmp(opt, "--profile") == 0) {
            a->profile = true;
            continue;
        }
        if (strncmp(opt, "--", 2) != 0) return usage_error("unexpected argument `%s`", opt);
        v = option_value(argc, argv, &i);
        if (!v) return usage_error("%s needs a value", opt);
        if (strcmp(opt, "--source") == 0) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1]) return usage_error("--source wants NAME=URI, got `%s`", v);
            if (a->nsources == MAX_SOURCES) return usage_error("at most 64 sources%s", "");
            size_t n = (size_t)(eq - v);
            if (n >= sizeof a->name_store[0]) return usage_error("source name too long: `%s`", v);
            memcpy(a->name_store[a->nsources], v, n);
            a->name_store[a->nsources][n] = '\0';
            a->names[a->nsources] = a->name_store[a->nsources];
            a->uris[a->nsources++] = eq + 1;
        } else if (strcmp(opt, "--sql") == 0) {
            a->sql = v;
        } else if (strcmp(opt, "--limit") == 0) {
            if (!parse_count(v, &a->limit)) return usage_error("--limit wants a non-negative integer, got `%s`", v);
        } else if (strcmp(opt, "--target-partitions") == 0) {
            if (!parse_count(v, &a->target_partitions)) return usage_error("--target-partitions wants a count, got `%s`", v);
        } else if (strcmp(opt, "--batch-size") == 0) {
            if (!parse_count(v, &a->batch_size)) return usage_error("--batch-size wants a count, got `%s`", v);
        } else {
            return usage_error("unknown option `%s`", opt);
        }
    }
    if (a->nsources == 0) return usage_error("preview needs at least one --source%s", "");
    if (!a->sql && a->nsources != 1) return usage_error("--sql is required with several sources%s", "");
    return 0;
}

static df_errkind make_session(const preview_args *a, df_session **out, df_error *err) {
    df_session_options *opts;
    df_errkind k = df_session_options_new(&opts, err);
    if (k != DF_OK) return k;
    if (a->target_partitions >= 0) {
        df_value v = df_value_int(a->target_partitions);
        k = df_session_options_set(opts, "target_partitions", &v, err);
    }
    if (k == DF_OK && a->batch_size >= 0) {
        df_value v = df_value_int(a->batch_size);
        k = df_session_options_set(opts, "output_batch_size", &v, err);
    }
    if (k == DF_OK) k = df_session_new(opts, out, err);
    df_session_options_free(opts);
    return k;
}

static void print_timings(const df_preview *p) {
    printf("\nphase timings:\n");
    for (int32_t i = 0; i < df_preview_num_phase_timings(p); i++) {
        df_phase_timing t;
        if (!df_preview_phase_timing(p, i, &t)) break;
        if (t.elapsed_micros >= 0)
            printf("  %-28s %-12s %12" PRId64 " us\n", t.phase_name, t.status, t.elapsed_micros);
        else
            printf("  %-28s %-12s %15s\n", t.phase_name, t.status, "-");
    }
}

static int cmd_preview(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(preview_usage, stdout);
            return 0;
        }
    preview_args a;
    int rc = parse_preview(argc, argv, &a);
    if (rc) return rc;
    install_stop_handlers();
    df_error err;
    memset(&err, 0, sizeof err);
    err.offset = -1;
    df_session *s = NULL;
    df_table *table = NULL;
    df_preview *p = NULL;
    df_errkind k = make_session(&a, &s, &err);
    for (int i = 0; i < a.nsources && k == DF_OK; i++) {
        df_delta_source *src = NULL;
        k = df_delta_source_new(a.uris[i], NULL, NULL, &src, &err);
        df_table *t = NULL;
        if (k == DF_OK) k = df_session_register_delta(s, src, a.names[i], NULL, &t, &err);
        df_delta_source_free(src);
        if (a.sql || !table) {
            df_table_release(table);
            table = t;
        } else {
            df_table_release(t);
        }
    }
    if (k == DF_OK && a.sql) {
        df_table_release(table);
        table = NULL;
        k = df_session_table_from_sql(s, a.sql, &table, &err);
    }
    if (k == DF_OK) {
        df_preview_options po;
        df_preview_options_init(&po);
        po.limit = a.limit;
        po.execution_profile = a.profile;
        po.cancel = &cancel_flag;
        k = df_table_preview(table, &po, &p, &err);
    }
    if (cancel_signal) {
        df_error_clear(&err);
        rc = stopped_or(0);
    } else if (k == DF_OK) {
        fwrite(df_preview_text(p), 1, df_preview_text_length(p), stdout);
        putchar('\n');
        print_timings(p);
        if (a.profile && df_preview_execution_profile_json(p))
            printf("\nexecution profile:\n%s\n", df_preview_execution_profile_json(p));
        rc = fflush(stdout) == 0 ? 0 : EXIT_OPERATION;
    } else {
        rc = report_error(&err);
    }
    df_preview_free(p);
    df_table_release(table);
    df_session_free(s);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* datagen                                                                   */

static int cmd_datagen(int argc, char **argv) {
    df_datagen_options o;
    df_datagen_options_init(&o);
    bool have_rows = false;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
            fputs(datagen_usage, stdout);
            return 0;
        }
    }
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strncmp(opt, "--", 2) != 0) return usage_error("unexpected argument `%s`", opt);
        const char *v = option_value(argc, argv, &i);
        if (!v) return usage_error("%s needs a value", opt);
        int64_t n;
        if (strcmp(opt, "--output") == 0) {
            o.output = v;
        } else if (strcmp(opt, "--rows") == 0) {
            if (!parse_count(v, &o.rows)) return usage_error("--rows wants a non-negative integer, got `%s`", v);
            have_rows = true;
        } else if (strcmp(opt, "--files") == 0) {
            if (!parse_count(v, &n) || n < 1 || n > 100000) return usage_error("--files wants 1..100000, got `%s`", v);
            o.files = (int32_t)n;
        } else if (strcmp(opt, "--partitions") == 0) {
            if (!parse_count(v, &n) || n > 10000) return usage_error("--partitions wants 0..10000, got `%s`", v);
            o.partitions = (int32_t)n;
        } else if (strcmp(opt, "--seed") == 0) {
            if (!parse_count(v, &n)) return usage_error("--seed wants a non-negative integer, got `%s`", v);
            o.seed = (uint64_t)n;
        } else if (strcmp(opt, "--codec") == 0) {
            if (strcmp(v, "none") && strcmp(v, "snappy") && strcmp(v, "zstd"))
                return usage_error("--codec wants none, snappy or zstd, got `%s`", v);
            o.codec = v;
        } else if (strcmp(opt, "--shape") == 0) {
            if (strcmp(v, "mixed") && strcmp(v, "narrow") && strcmp(v, "wide") && strcmp(v, "events"))
                return usage_error("--shape wants mixed, narrow, wide or events, got `%s`", v);
            o.shape = v;
        } else if (strcmp(opt, "--row-group-rows") == 0) {
            if (!parse_count(v, &o.row_group_rows) || o.row_group_rows < 1)
                return usage_error("--row-group-rows wants a positive integer, got `%s`", v);
        } else {
            return usage_error("unknown option `%s`", opt);
        }
    }
    if (!o.output) return usage_error("datagen needs --output DIR%s", "");
    if (!have_rows) return usage_error("datagen needs --rows N%s", "");
    df_error err;
    memset(&err, 0, sizeof err);
    err.offset = -1;
    df_datagen_result r;
    if (df_datagen_run(&o, &r, &err) != DF_OK) return report_error(&err);
    printf("wrote %" PRId64 " rows in %" PRId64 " files (%" PRId64 " bytes) to %s\n", r.rows, r.files, r.bytes,
           o.output);
    return fflush(stdout) == 0 ? 0 : EXIT_OPERATION;
}

/* ------------------------------------------------------------------------ */
/* load                                                                      */

/* --progress: one line per event on stderr. */
static void print_progress(void *user, const df_progress_event *ev) {
    (void)user;
    char prefix[32] = "";
    if (ev->output_count > 1 && ev->output_index > 0)
        snprintf(prefix, sizeof prefix, "Output %d/%d - ", ev->output_index, ev->output_count);
    switch (ev->kind) {
    case DF_PROGRESS_STARTED:
    case DF_PROGRESS_PHASE:
    case DF_PROGRESS_FINISHED:
        fprintf(stderr, "%s%s%s%s\n", prefix, ev->label ? ev->label : "", ev->scope ? ": " : "",
                ev->scope ? ev->scope : "");
        break;
    case DF_PROGRESS_ROWS:
        fprintf(stderr, "%s%s - %" PRId64 " rows, %" PRId64 " batches, %" PRId64 " bytes\n", prefix,
                ev->scope ? ev->scope : "", ev->rows, ev->batches, ev->bytes);
        break;
    default:
        break;
    }
}

/* --log: events as JSON lines on stderr. */
static void print_log(void *user, df_log_level level, const char *target, const char *event, const char *fields) {
    static const char *const names[] = {"", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    if ((int)level > *(int *)user) return;
    fprintf(stderr, "{\"level\":\"%s\",\"target\":\"%s\",\"event\":\"%s\",\"fields\":%s}\n",
            names[level >= 1 && level <= 5 ? level : 0], target, event, fields);
}

static int load_error(df_error *err) {
    /* The error also goes to stdout as JSON, for orchestrators that parse stdout. */
    const char *phase = err->phase[0] ? err->phase : df_errkind_default_phase(err->kind);
    printf("{\"error\":{\"phase\":\"%s\",\"kind\":\"%s\",\"message\":\"", phase, df_errkind_name(err->kind));
    for (const char *p = err->message; *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        if ((unsigned char)*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    printf("\",\"context\":%s}}\n", err->context ? err->context : "null");
    fflush(stdout);
    bool job_file = err->kind == DF_ERR_CONFIG || err->kind == DF_ERR_NOT_FOUND;
    int code = report_error(err);
    return code == EXIT_INTERNAL ? code : job_file ? EXIT_JOB_FILE : EXIT_OPERATION;
}

static int cmd_load(int argc, char **argv) {
    const char *path = NULL;
    bool dry = false, progress = false;
    int log_level = 0;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0) {
            fputs(load_usage, stdout);
            return 0;
        } else if (strcmp(opt, "--dry-run") == 0) {
            dry = true;
        } else if (strcmp(opt, "--progress") == 0) {
            progress = true;
        } else if (strcmp(opt, "--log") == 0) {
            const char *v = option_value(argc, argv, &i);
            if (!v) return usage_error("--log needs a level%s", "");
            static const char *const levels[] = {"error", "warn", "info", "debug", "trace"};
            for (int l = 0; l < 5; l++)
                if (strcmp(v, levels[l]) == 0) log_level = l + 1;
            if (!log_level) return usage_error("--log wants error, warn, info, debug or trace, got `%s`", v);
        } else if (strncmp(opt, "--", 2) == 0) {
            return usage_error("unknown option `%s`", opt);
        } else if (!path) {
            path = opt;
        } else {
            return usage_error("unexpected argument `%s`", opt);
        }
    }
    if (!path) return usage_error("load needs a JOB file%s", "");
    install_stop_handlers();
    df_progress prog = {progress ? print_progress : NULL, NULL};
    df_log_sink log = {log_level ? print_log : NULL, &log_level};
    df_error err;
    memset(&err, 0, sizeof err);
    err.offset = -1;
    char *report = NULL;
    if (df_job_run_cancellable(path, dry, &prog, &log, &cancel_flag, &report, &err) != DF_OK) {
        int code = load_error(&err);
        return stopped_or(code);
    }
    fputs(report, stdout);
    fputc('\n', stdout);
    /* A write_all report with failures: exit 4 (the report says which). */
    bool failures = !dry && strstr(report, "\"all_succeeded\":false") != NULL;
    df_free(report);
    if (fflush(stdout) != 0) return stopped_or(EXIT_OPERATION);
    return stopped_or(failures ? EXIT_OUTPUTS_FAILED : 0);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(main_usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("deltafunnel %s\n", df_version());
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(main_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "help") == 0) {
        const char *topic = argc > 2 ? argv[2] : NULL;
        if (!topic) fputs(main_usage, stdout);
        else if (strcmp(topic, "preview") == 0) fputs(preview_usage, stdout);
        else if (strcmp(topic, "datagen") == 0) fputs(datagen_usage, stdout);
        else if (strcmp(topic, "load") == 0) fputs(load_usage, stdout);
        else return usage_error("unknown command `%s`", topic);
        return 0;
    }
    if (strcmp(cmd, "preview") == 0) return cmd_preview(argc - 2, argv + 2);
    if (strcmp(cmd, "datagen") == 0) return cmd_datagen(argc - 2, argv + 2);
    if (strcmp(cmd, "load") == 0) return cmd_load(argc - 2, argv + 2);
    return usage_error("unknown command `%s`", cmd);
}
