/*
 * delta-funnel-perfetto: ranked profile reports from Delta Funnel traces.
 *
 *   delta-funnel-perfetto report INPUT [--output X.profile.html] [--artifact-output X.dfprofile] [--no-clobber]
 *   delta-funnel-perfetto inspect INPUT.dfprofile [options]        (see inspect.c)
 *   delta-funnel-perfetto diff A B [--output X.html] [--no-clobber]
 *   delta-funnel-perfetto capture-workload [--mode M] [--sample-hz N] --output TRACE -- COMMAND [ARG...]
 *   delta-funnel-perfetto capture-health TRACE [CAP]
 *   delta-funnel-perfetto doctor
 *
 * Installed a second time as `capture-workload` (in the Python package's
 * perfetto/ directory): invoked under that name it is that command.
 *
 * Every failure prints one JSON line {"phase","kind","message"} on stderr
 * and exits with the phase's code (argument 64; health, query and
 * aggregate_validation 65; input 66; unavailable 69; serialization 70;
 * output 73).  The input is never modified; outputs are written atomically.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char REPORT_HELP[] =
    "Usage: delta-funnel-perfetto report <INPUT> [OPTIONS]\n"
    "\n"
    "Builds the ranked HTML report of a Delta Funnel Perfetto trace (or re-renders a .dfprofile artifact).\n"
    "\n"
    "Arguments:\n"
    "  <INPUT>  raw Perfetto trace (.pftrace) or .dfprofile artifact\n"
    "\n"
    "Options:\n"
    "  --output <OUTPUT.profile.html>     HTML report path (default: INPUT with its extension replaced by .profile.html)\n"
    "  --artifact-output <OUTPUT.dfprofile>  also write the ranked model as a .dfprofile artifact\n"
    "  --no-clobber                       keep existing outputs (fail instead of replacing them)\n"
    "  -h, --help                         print this help\n";

static const char DIFF_HELP[] =
    "Usage: delta-funnel-perfetto diff <A> <B> [OPTIONS]\n"
    "\n"
    "Compares two profiles side by side (exact durations and sampled CPU per matching semantic node and native\n"
    "function) in one self-contained HTML page.\n"
    "\n"
    "Arguments:\n"
    "  <A>  baseline .dfprofile artifact (or raw trace)\n"
    "  <B>  candidate .dfprofile artifact (or raw trace)\n"
    "\n"
    "Options:\n"
    "  --output <OUTPUT.html>  comparison page path (default: A with its extension replaced by .diff.html)\n"
    "  --no-clobber            keep an existing output (fail instead of replacing it)\n"
    "  -h, --help              print this help\n";

static const char MAIN_HELP[] =
    "Usage: delta-funnel-perfetto <COMMAND> [ARGS]\n"
    "\n"
    "Ranked profile reports of Delta Funnel diagnostics traces.\n"
    "\n"
    "Commands:\n"
    "  report   build the ranked HTML report (and optionally a .dfprofile artifact) of a trace\n"
    "  inspect  print ranked views of a .dfprofile artifact in the terminal (one-shot or --interactive)\n"
    "  diff     compare two profiles side by side\n"
    "  capture-workload  run a command under a whole-process capture and report on it\n"
    "  capture-health    print the health row of a trace\n"
    "  doctor   report what this host lets a capture do (sampler, symbols, deep-system)\n"
    "  help     print this help, or the help of a command (help report)\n"
    "\n"
    "Run delta-funnel-perfetto <COMMAND> --help for the options of a command.\n";

/* ------------------------------------------------------------------------ */
/* Failure protocol.                                                         */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7F) fputc(' ', f); /* control characters never reach the terminal */
        else fputc(*p, f);
    }
    fputc('"', f);
}

static int exit_code(const char *phase) {
    if (!strcmp(phase, "argument")) return CLI_ARGUMENT;
    if (!strcmp(phase, "health") || !strcmp(phase, "query") || !strcmp(phase, "aggregate_validation")) return CLI_DATA;
    if (!strcmp(phase, "input")) return CLI_INPUT;
    if (!strcmp(phase, "trace_processor") || !strcmp(phase, "command")) return CLI_UNAVAILABLE;
    if (!strcmp(phase, "output")) return CLI_OUTPUT;
    return CLI_SOFTWARE;
}

int cli_fail(const char *phase, df_errkind kind, const char *message) {
    fputs("{\"phase\":", stderr);
    json_string(stderr, phase);
    fputs(",\"kind\":", stderr);
    json_string(stderr, df_errkind_name(kind));
    fputs(",\"message\":", stderr);
    json_string(stderr, message);
    fputs("}\n", stderr);
    fflush(stderr);
    return exit_code(phase);
}

int cli_fail_error(const df_error *err) {
    const char *phase = err->phase[0] ? err->phase : "internal";
    if (err->kind == DF_ERR_OUT_OF_MEMORY) phase = "internal";
    return cli_fail(phase, err->kind, err->message);
}

bool cli_write(const char *s, size_t n) {
    if (n && fwrite(s, 1, n, stdout) != n) return false;
    return fflush(stdout) == 0 && !ferror(stdout);
}

static int write_help(const char *text) {
    if (!cli_write(text, strlen(text))) return cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
    return CLI_OK;
}

static bool is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

/* ------------------------------------------------------------------------ */
/* Loading.                                                                  */

/* Loads INPUT as an artifact or a trace.  Returns 0 and *out, or an exit code (failure printed). */
static int load_profile(const char *path, bool is_artifact, df_report_profile **out) {
    df_error err = {0};
    df_errkind k = is_artifact ? df_report_read_dfprofile(path, out, &err)
                               : df_report_build_from_trace_file(path, NULL, out, &err);
    if (k == DF_OK) return CLI_OK;
    int rc = cli_fail_error(&err);
    df_error_clear(&err);
    return rc;
}

/* Prints "wrote PATH"; a failed terminal write is 73 but the outputs stay written. */
static int report_written(const char *abs) {
    size_t n = strlen(abs) + 8;
    char *line = malloc(n);
    if (!line) return cli_fail("internal", DF_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(line, n, "wrote %s\n", abs);
    bool ok = cli_write(line, strlen(line));
    free(line);
    return ok ? CLI_OK : cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "outputs were written but standard output failed");
}

/* ------------------------------------------------------------------------ */
/* report                                                                    */

typedef struct report_args {
    const char *input;        /* positional input */
    const char *output;       /* --output */
    const char *artifact;     /* --artifact-output */
    bool no_clobber;          /* --no-clobber */
    bool help;                /* -h / --help seen */
} report_args;

/*
 * The left-to-right pre-scan of `report`'s arguments: help wins at once,
 * each option at most once, one input.  Returns 0 or an exit code.
 */
static int scan_report_args(int argc, char **argv, report_args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *t = argv[i];
        if (is_help(t)) {
            a->help = true;
            return CLI_OK;
        }
        if (!strcmp(t, "--output") || !strcmp(t, "--artifact-output")) {
            bool art = t[2] == 'a';
            if (art ? a->artifact != NULL : a->output != NULL)
                return cli_fail("argument", art ? DF_ERR_DUPLICATE_ARTIFACT_OUTPUT : DF_ERR_DUPLICATE_OUTPUT,
                                art ? "--artifact-output may be specified only once" : "--output may be specified only once");
            if (i + 1 >= argc)
                return cli_fail("argument", art ? DF_ERR_MISSING_ARTIFACT_OUTPUT_VALUE : DF_ERR_MISSING_OUTPUT_VALUE,
                                art ? "--artifact-output requires a path" : "--output requires a path");
            if (art) a->artifact = argv[++i];
            else a->output = argv[++i];
        } else if (!strcmp(t, "--no-clobber")) {
            if (a->no_clobber) return cli_fail("argument", DF_ERR_DUPLICATE_OPTION, "option may be specified only once");
            a->no_clobber = true;
        } else if (t[0] == '-') {
            return cli_fail("argument", DF_ERR_UNKNOWN_OPTION, "unknown option");
        } else if (a->input) {
            return cli_fail("argument", DF_ERR_MULTIPLE_INPUTS, "only one profile input path may be provided");
        } else {
            a->input = t;
        }
    }
    if (!a->input) return cli_fail("argument", DF_ERR_MISSING_INPUT, "a profile input path is required");
    return CLI_OK;
}

static int fail_problem(const cli_problem *pr) { return cli_fail(pr->phase, pr->kind, pr->message); }

static int cmd_report(int argc, char **argv) {
    report_args a;
    int rc = scan_report_args(argc, argv, &a);
    if (rc != CLI_OK || a.help) return rc != CLI_OK ? rc : write_help(REPORT_HELP);
    cli_problem pr;
    char *in_canon = NULL, *out_abs = NULL, *out_canon = NULL, *art_abs = NULL, *art_canon = NULL, *def = NULL;
    unsigned char magic[DF_REPORT_MAGIC_LEN];
    size_t magic_len;
    df_report_profile *p = NULL;
    if (!cli_check_input(a.input, &in_canon, magic, &magic_len, &pr)) {
        rc = fail_problem(&pr);
        goto done;
    }
    const char *output = a.output;
    if (!output) output = def = cli_default_output(a.input, "profile.html");
    if (!output || !cli_check_output(output, in_canon, NULL, &out_abs, &out_canon, &pr) ||
        (a.artifact && !cli_check_output(a.artifact, in_canon, out_canon, &art_abs, &art_canon, &pr))) {
        rc = output ? fail_problem(&pr) : cli_fail("internal", DF_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((rc = load_profile(in_canon, cli_is_artifact(a.input, magic, magic_len), &p)) != CLI_OK) goto done;
    df_report_write_policy policy = a.no_clobber ? DF_REPORT_NO_CLOBBER : DF_REPORT_REPLACE;
    df_error err = {0};
    df_buf html;
    df_buf_init(&html, 0);
    df_errkind k = df_report_render_html(p, &html, &err);
    if (k == DF_OK && art_abs) k = df_report_write_dfprofile(p, art_abs, policy, &err);
    if (k == DF_OK) k = df_report_write_file(out_abs, html.data, html.len, policy, &err);
    df_buf_free(&html);
    if (k != DF_OK) {
        rc = cli_fail_error(&err);
        df_error_clear(&err);
        goto done;
    }
    rc = report_written(out_abs);
done:
    df_report_profile_destroy(p);
    free(in_canon);
    free(out_abs);
    free(out_canon);
    free(art_abs);
    free(art_canon);
    free(def);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* diff                                                                      */

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmd_diff(int argc, char **argv) {
    const char *in[2] = {NULL, NULL}, *output = NULL;
    bool no_clobber = false;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *t = argv[i];
        if (is_help(t)) return write_help(DIFF_HELP);
        if (!strcmp(t, "--output")) {
            if (output) return cli_fail("argument", DF_ERR_DUPLICATE_OUTPUT, "--output may be specified only once");
            if (i + 1 >= argc) return cli_fail("argument", DF_ERR_MISSING_OUTPUT_VALUE, "--output requires a path");
            output = argv[++i];
        } else if (!strcmp(t, "--no-clobber")) {
            if (no_clobber) return cli_fail("argument", DF_ERR_DUPLICATE_OPTION, "option may be specified only once");
            no_clobber = true;
        } else if (t[0] == '-') {
            return cli_fail("argument", DF_ERR_UNKNOWN_OPTION, "unknown option");
        } else if (n == 2) {
            return cli_fail("argument", DF_ERR_MULTIPLE_INPUTS, "diff compares exactly two profiles");
        } else {
            in[n++] = t;
        }
    }
    if (n < 2) return cli_fail("argument", DF_ERR_MISSING_INPUT, "diff requires two profile input paths");
    cli_problem pr;
    char *canon[2] = {NULL, NULL}, *out_abs = NULL, *out_canon = NULL, *def = NULL;
    df_report_profile *p[2] = {NULL, NULL};
    int rc = CLI_OK;
    for (int s = 0; s < 2 && rc == CLI_OK; s++) {
        unsigned char magic[DF_REPORT_MAGIC_LEN];
        size_t ml;
        if (!cli_check_input(in[s], &canon[s], magic, &ml, &pr)) rc = fail_problem(&pr);
        else rc = load_profile(canon[s], cli_is_artifact(in[s], magic, ml), &p[s]);
    }
    if (rc == CLI_OK) {
        if (!output) output = def = cli_default_output(in[0], "diff.html");
        if (!output) rc = cli_fail("internal", DF_ERR_OUT_OF_MEMORY, "out of memory");
        else if (!cli_check_output(output, canon[0], NULL, &out_abs, &out_canon, &pr) ||
                 !strcmp(out_canon, canon[1]))
            rc = out_canon ? cli_fail("output", DF_ERR_ALIASES_INPUT, "output must not name an input file") : fail_problem(&pr);
    }
    if (rc == CLI_OK) {
        df_error err = {0};
        df_buf page;
        df_buf_init(&page, 0);
        df_errkind k = df_report_render_diff_html(p[0], p[1], base_name(in[0]), base_name(in[1]), &page, &err);
        if (k == DF_OK)
            k = df_report_write_file(out_abs, page.data, page.len, no_clobber ? DF_REPORT_NO_CLOBBER : DF_REPORT_REPLACE, &err);
        df_buf_free(&page);
        rc = k == DF_OK ? report_written(out_abs) : cli_fail_error(&err);
        df_error_clear(&err);
    }
    for (int s = 0; s < 2; s++) {
        df_report_profile_destroy(p[s]);
        free(canon[s]);
    }
    free(out_abs);
    free(out_canon);
    free(def);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Dispatch.                                                                 */

/* Edit distance of two short ASCII words (bounded, for suggestions). */
static size_t distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), prev[65], cur[65];
    if (la > 64 || lb > 64) return 99;
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof prev);
    }
    return prev[lb];
}

static int unknown_command(const char *cmd) {
    static const char *const known[] = {"report", "inspect", "diff", "help", "capture-workload", "capture-health",
                                        "doctor"};
    const char *best = NULL;
    size_t bd = 3;
    bool ascii = strlen(cmd) <= 64;
    for (const unsigned char *p = (const unsigned char *)cmd; *p && ascii; p++) ascii = *p >= 0x20 && *p < 0x7F;
    for (size_t i = 0; ascii && i < sizeof known / sizeof known[0]; i++) {
        size_t d = distance(cmd, known[i]);
        if (d < bd) bd = d, best = known[i];
    }
    char msg[128];
    if (best) snprintf(msg, sizeof msg, "unknown diagnostics command; did you mean %s?", best);
    else snprintf(msg, sizeof msg, "unknown diagnostics command");
    return cli_fail("argument", DF_ERR_UNKNOWN_COMMAND, msg);
}

int main(int argc, char **argv) {
    const char *self = strrchr(argv[0], '/');
    self = self ? self + 1 : argv[0];
    if (!strcmp(self, "capture-workload")) return cli_capture_workload(argc - 1, argv + 1);
    if (argc < 2) return cli_fail("argument", DF_ERR_MISSING_COMMAND, "a diagnostics command is required");
    const char *cmd = argv[1];
    if (is_help(cmd)) return write_help(MAIN_HELP);
    if (!strcmp(cmd, "help")) {
        if (argc < 3) return write_help(MAIN_HELP);
        if (!strcmp(argv[2], "report")) return write_help(REPORT_HELP);
        if (!strcmp(argv[2], "inspect")) return cli_print_inspect_help();
        if (!strcmp(argv[2], "diff")) return write_help(DIFF_HELP);
        char *help[] = {"--help"};
        if (!strcmp(argv[2], "capture-workload")) return cli_capture_workload(1, help);
        if (!strcmp(argv[2], "capture-health")) return cli_capture_health(1, help);
        if (!strcmp(argv[2], "doctor")) return cli_doctor(1, help);
        return unknown_command(argv[2]);
    }
    if (!strcmp(cmd, "report")) return cmd_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cli_inspect(argc - 2, argv + 2);
    if (!strcmp(cmd, "diff")) return cmd_diff(argc - 2, argv + 2);
    if (!strcmp(cmd, "capture-workload")) return cli_capture_workload(argc - 2, argv + 2);
    if (!strcmp(cmd, "capture-health")) return cli_capture_health(argc - 2, argv + 2);
    if (!strcmp(cmd, "doctor")) return cli_doctor(argc - 2, argv + 2);
    return unknown_command(cmd);
}
