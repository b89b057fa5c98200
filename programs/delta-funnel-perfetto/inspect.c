/*
 * `inspect`: terminal views of a .dfprofile artifact and the line-oriented
 * interactive mode.
 *
 * Options are parsed left to right; each may appear once; a flag that
 * takes a value consumes the next token whatever it looks like, and
 * `--name=value` is accepted too.  The artifact is loaded once; a raw trace
 * is refused (convert it with `report --artifact-output`).
 *
 * Interactive protocol: after the initial view and after every command,
 * stdout receives the response followed by the line `-- end --` (also when
 * the command failed; the error goes to stderr as `error: MESSAGE`).  A
 * `profile> ` prompt is written only when stdin and stdout are terminals.
 * Lines are read in bounded chunks: anything past 1024 bytes is discarded
 * up to the newline and the line is rejected.  EOF ends the session.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINE 1024

static const char INSPECT_HELP[] =
    "Usage: delta-funnel-perfetto inspect <INPUT.dfprofile> [OPTIONS]\n"
    "\n"
    "Prints bounded ranked views of a .dfprofile artifact (never a raw trace; convert one with\n"
    "`report --artifact-output`).\n"
    "\n"
    "Arguments:\n"
    "  <INPUT.dfprofile>  ranked profile artifact\n"
    "\n"
    "Options:\n"
    "  --limit <LIMIT>                         rows to show, 1-200 (default 20)\n"
    "  --semantic <ID>                         select semantic:ID and list its children and native function roots\n"
    "  --function <SEMANTIC_ID:FUNCTION_ID>    select a native function node and list its callees\n"
    "  --filter <TEXT>                         keep rows containing TEXT (1-128 characters, case-sensitive;\n"
    "                                          semantic:ID and function:S:F match one identity exactly)\n"
    "  --sort <SORT>                           duration, inclusive-cpu, self-cpu or name\n"
    "  --depth <DEPTH>                         levels below the selection, 0-32 (default 0 at the roots, 1 otherwise)\n"
    "  --interactive                           read commands from standard input (help lists them)\n"
    "  --full-symbols                          print complete native symbols instead of compact names\n"
    "  --all-frames                            show every native frame (no chain compaction)\n"
    "  -h, --help                              print this help\n";

int cli_print_inspect_help(void) {
    if (!cli_write(INSPECT_HELP, strlen(INSPECT_HELP)))
        return cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
    return CLI_OK;
}

/* Parses a whole string as a signed 64-bit integer. */
static bool parse_i64(const char *s, int64_t *out) {
    char *end;
    if (!*s || (*s != '-' && (*s < '0' || *s > '9'))) return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

typedef struct inspect_args {
    const char *input;               /* positional */
    df_report_inspect_options o;     /* view options */
    bool interactive;                /* --interactive */
    bool help;                       /* -h / --help */
    unsigned seen;                   /* options already given (bit per option) */
} inspect_args;

enum { O_LIMIT, O_SEMANTIC, O_FUNCTION, O_FILTER, O_SORT, O_DEPTH, O_INTERACTIVE, O_FULL, O_ALL, O_COUNT };
static const char *const OPTION_NAMES[O_COUNT] = {"--limit", "--semantic", "--function", "--filter", "--sort",
                                                  "--depth", "--interactive", "--full-symbols", "--all-frames"};

/* Applies one option value; returns 0 or an exit code. */
static int apply_value(inspect_args *a, int opt, const char *v) {
    int64_t n;
    switch (opt) {
    case O_LIMIT:
        if (!v || !parse_i64(v, &n) || n < 1 || n > 200) return cli_fail("argument", DF_ERR_INVALID_LIMIT, "limit must be between 1 and 200");
        a->o.limit = (uint32_t)n;
        return CLI_OK;
    case O_DEPTH:
        if (!v || !parse_i64(v, &n) || n < 0 || n > 32) return cli_fail("argument", DF_ERR_INVALID_DEPTH, "depth must be between 0 and 32");
        a->o.depth = (int32_t)n;
        return CLI_OK;
    case O_SEMANTIC:
        if (!v || !parse_i64(v, &n)) return cli_fail("argument", DF_ERR_INVALID_SEMANTIC_ID, "semantic ID must be a signed integer");
        a->o.has_semantic = true;
        a->o.semantic_id = n;
        return CLI_OK;
    case O_FUNCTION: {
        const char *colon = v ? strchr(v, ':') : NULL;
        char left[32];
        int64_t s, f;
        if (!colon || (size_t)(colon - v) >= sizeof left)
            return cli_fail("argument", DF_ERR_INVALID_FUNCTION_ID, "function ID must use SEMANTIC_ID:FUNCTION_ID signed integers");
        memcpy(left, v, (size_t)(colon - v));
        left[colon - v] = 0;
        if (!parse_i64(left, &s) || !parse_i64(colon + 1, &f))
            return cli_fail("argument", DF_ERR_INVALID_FUNCTION_ID, "function ID must use SEMANTIC_ID:FUNCTION_ID signed integers");
        a->o.has_function = true;
        a->o.function_semantic_id = s;
        a->o.function_id = f;
        return CLI_OK;
    }
    case O_FILTER: {
        size_t chars = 0;
        for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) chars += (*p & 0xC0) != 0x80;
        if (!v || chars < 1 || chars > 128)
            return cli_fail("argument", DF_ERR_INVALID_FILTER, "filter must contain between 1 and 128 characters");
        a->o.filter = v;
        return CLI_OK;
    }
    case O_SORT:
        if (v && !strcmp(v, "duration")) a->o.sort = DF_REPORT_SORT_DURATION;
        else if (v && !strcmp(v, "inclusive-cpu")) a->o.sort = DF_REPORT_SORT_INCLUSIVE;
        else if (v && !strcmp(v, "self-cpu")) a->o.sort = DF_REPORT_SORT_SELF;
        else if (v && !strcmp(v, "name")) a->o.sort = DF_REPORT_SORT_NAME;
        else return cli_fail("argument", DF_ERR_INVALID_SORT, "sort must be duration, inclusive-cpu, self-cpu, or name");
        return CLI_OK;
    default:
        return CLI_OK;
    }
}

static int parse_args(int argc, char **argv, inspect_args *a) {
    memset(a, 0, sizeof *a);
    a->o.depth = -1;
    for (int i = 0; i < argc; i++) {
        const char *t = argv[i];
        if (!strcmp(t, "-h") || !strcmp(t, "--help")) {
            a->help = true;
            return CLI_OK;
        }
        if (t[0] != '-') {
            if (a->input) return cli_fail("argument", DF_ERR_MULTIPLE_INPUTS, "only one profile input path may be provided");
            a->input = t;
            continue;
        }
        int opt = -1;
        const char *eq = strchr(t, '=');
        size_t nlen = eq ? (size_t)(eq - t) : strlen(t);
        for (int k = 0; k < O_COUNT; k++)
            if (strlen(OPTION_NAMES[k]) == nlen && !strncmp(t, OPTION_NAMES[k], nlen)) opt = k;
        if (opt < 0) return cli_fail("argument", DF_ERR_UNKNOWN_OPTION, "unknown option");
        if (a->seen & (1u << opt)) return cli_fail("argument", DF_ERR_DUPLICATE_OPTION, "option may be specified only once");
        a->seen |= 1u << opt;
        bool flag = opt == O_INTERACTIVE || opt == O_FULL || opt == O_ALL;
        if (flag) {
            if (eq) return cli_fail("argument", DF_ERR_UNKNOWN_OPTION, "unknown option");
            if (opt == O_INTERACTIVE) a->interactive = true;
            else if (opt == O_FULL) a->o.full_symbols = true;
            else a->o.all_frames = true;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        int rc = apply_value(a, opt, v);
        if (rc != CLI_OK) return rc;
    }
    if (!a->input) return cli_fail("argument", DF_ERR_MISSING_INPUT, "a profile input path is required");
    if (a->o.has_semantic && a->o.has_function)
        return cli_fail("argument", DF_ERR_INCOMPATIBLE_SELECTORS, "--semantic and --function cannot be used together");
    if (a->o.has_function && a->o.sort == DF_REPORT_SORT_DURATION)
        return cli_fail("argument", DF_ERR_INCOMPATIBLE_SORT, "function callsites cannot be sorted by exact duration");
    return CLI_OK;
}

/* ------------------------------------------------------------------------ */
/* Interactive loop.                                                         */

static const char END_MARK[] = "-- end --\n";

/* Writes a response: its text (newline-terminated) and the end marker. */
static bool respond(const df_buf *b) {
    if (b->len && fwrite(b->data, 1, b->len, stdout) != b->len) return false;
    if (b->len && b->data[b->len - 1] != '\n' && fputc('\n', stdout) == EOF) return false;
    return cli_write(END_MARK, sizeof END_MARK - 1);
}

/*
 * Reads one line into buf (at most MAX_LINE bytes kept).  Returns 0 at EOF
 * with nothing read, 1 for a line, 2 for a line that was too long (rest
 * discarded).
 */
static int read_line(char *buf, size_t *len) {
    size_t n = 0;
    bool any = false, too_long = false;
    int c;
    while ((c = getchar()) != EOF) {
        any = true;
        if (c == '\n') break;
        if (n < MAX_LINE) buf[n++] = (char)c;
        else too_long = true;
    }
    *len = n;
    if (!any) return 0;
    return too_long ? 2 : 1;
}

static int interactive(df_report_inspector *in) {
    bool prompt = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    char line[MAX_LINE + 1];
    df_buf out;
    df_buf_init(&out, 0);
    for (;;) {
        if (prompt && !cli_write("profile> ", 9)) break;
        size_t len;
        int r = read_line(line, &len);
        if (r == 0) {
            df_buf_free(&out);
            return CLI_OK;
        }
        df_buf_reset(&out);
        df_error err = {0};
        bool quit = false;
        df_errkind k = r == 2 ? df_error_set(&err, DF_ERR_INTERACTIVE_COMMAND, "interactive command exceeds the 1024-byte limit")
                              : df_report_inspector_command(in, line, len, &out, &quit, &err);
        if (k != DF_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fflush(stderr);
            df_buf_reset(&out);
        }
        df_error_clear(&err);
        if (!respond(&out)) break;
        if (quit) {
            df_buf_free(&out);
            return CLI_OK;
        }
    }
    df_buf_free(&out);
    return cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
}

/* ------------------------------------------------------------------------ */
/* Entry point.                                                              */

int cli_inspect(int argc, char **argv) {
    inspect_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_OK) return rc;
    if (a.help) return cli_print_inspect_help();
    cli_problem pr;
    char *canon = NULL;
    unsigned char magic[DF_REPORT_MAGIC_LEN];
    size_t ml;
    if (!cli_check_input(a.input, &canon, magic, &ml, &pr)) return cli_fail(pr.phase, pr.kind, pr.message);
    if (!cli_is_artifact(a.input, magic, ml)) {
        free(canon);
        return cli_fail("input", DF_ERR_RANKED_ARTIFACT_REQUIRED,
                        "terminal inspection requires a ranked profile artifact; convert a raw trace with `report "
                        "--artifact-output`");
    }
    df_error err = {0};
    df_report_profile *p = NULL;
    df_report_inspector *in = NULL;
    df_errkind k = df_report_read_dfprofile(canon, &p, &err);
    free(canon);
    if (k == DF_OK) k = df_report_inspector_create(p, &a.o, &in, &err);
    if (k != DF_OK) {
        rc = cli_fail_error(&err);
        df_error_clear(&err);
        df_report_profile_destroy(p);
        return rc;
    }
    df_buf out;
    df_buf_init(&out, 0);
    k = df_report_inspector_render(in, &out, &err);
    if (k != DF_OK) {
        rc = cli_fail_error(&err);
    } else if (a.interactive) {
        rc = respond(&out) ? interactive(in) : cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
    } else {
        rc = cli_write(out.data ? out.data : "", out.len) ? CLI_OK
                                                          : cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
    }
    df_error_clear(&err);
    df_buf_free(&out);
    df_report_inspector_destroy(in);
    df_report_profile_destroy(p);
    return rc;
}
