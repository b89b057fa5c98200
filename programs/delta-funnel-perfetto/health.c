/*
 * capture-health TRACE [CONFIGURED_FILE_CAP_BYTES]: prints the health row
 * of a trace (the reference implementation's columns) as CSV, header and
 * one row.
 * Exit 0 when the row was computed (complete or not), 64 for bad
 * arguments, 66 for an unreadable or malformed trace.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char HEALTH_HELP[] =
    "Usage: delta-funnel-perfetto capture-health <TRACE> [CONFIGURED_FILE_CAP_BYTES]\n"
    "\n"
    "Prints the capture health of a Delta Funnel Perfetto trace as CSV (header and one row): completeness,\n"
    "operation roots, activity counts, truncation markers, identity and nesting faults, sample counts, losses,\n"
    "finalization, duration and file size.  capture_complete=1 means the exact semantic data is complete and the\n"
    "capture was finalized.\n";

/* Parses a positive decimal integer; false otherwise. */
static bool parse_cap(const char *s, int64_t *out) {
    if (!*s) return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return v > 0;
}

int cli_capture_health(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return cli_write(HEALTH_HELP, strlen(HEALTH_HELP)) ? CLI_OK : CLI_OUTPUT;
    if (argc < 1 || argc > 2) return cli_fail("argument", DF_ERR_INVALID_ARGUMENTS, "expected TRACE [CONFIGURED_FILE_CAP_BYTES]");
    int64_t cap = -1;
    if (argc == 2 && !parse_cap(argv[1], &cap))
        return cli_fail("argument", DF_ERR_INVALID_FILE_CAP, "the configured file cap must be a positive integer");
    cli_problem pr;
    char *canon = NULL;
    unsigned char magic[DF_REPORT_MAGIC_LEN];
    size_t ml;
    if (!cli_check_input(argv[0], &canon, magic, &ml, &pr)) return cli_fail(pr.phase, pr.kind, pr.message);
    df_report_health h;
    df_error err = {0};
    df_errkind k = df_report_capture_health_file(canon, NULL, &h, &err);
    free(canon);
    if (k != DF_OK) {
        int rc = cli_fail_error(&err);
        df_error_clear(&err);
        return rc;
    }
    h.configured_file_cap_bytes = cap;
    df_buf out;
    df_buf_init(&out, 0);
    int rc = df_report_health_csv(&h, &out, &err) == DF_OK && cli_write(out.data, out.len)
                 ? CLI_OK
                 : cli_fail("output", DF_ERR_TERMINAL_WRITE_FAILED, "cannot write to standard output");
    df_buf_free(&out);
    df_error_clear(&err);
    return rc;
}
