/*
 * delta-funnel-perfetto: shared declarations of the command-line program.
 *
 *   main.c     dispatch, help, the failure protocol, `report`, `diff`
 *   inspect.c  `inspect` (one-shot views and the interactive loop)
 *   paths.c    input/output preflight (regular files, aliases, defaults)
 *   capture.c  `capture-workload` (whole-process capture of a workload)
 *   health.c   `capture-health` (the health row of a trace)
 *   doctor.c   `doctor` (what this host lets a capture do)
 *
 * Failure protocol (the reference implementation's): every failure prints
 * exactly one JSON line {"phase","kind","message"} on stderr and exits with
 * the phase's code.
 */
#ifndef DF_PERFETTO_CLI_H
#define DF_PERFETTO_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "report/report.h"

/* Exit codes by failure phase. */
enum {
    CLI_OK = 0,
    CLI_ARGUMENT = 64,      /* argument */
    CLI_DATA = 65,          /* health, query, aggregate_validation */
    CLI_INPUT = 66,         /* input */
    CLI_UNAVAILABLE = 69,   /* trace_processor / commands not in this build */
    CLI_SOFTWARE = 70,      /* serialization, internal, out of memory */
    CLI_OUTPUT = 73,        /* output */
};

/*
 * Prints the failure line (kind = df_errkind_name(kind), so every kind the
 * program prints is listed in df_errkinds.def) and returns the exit code of
 * `phase`.  The message is sanitised (JSON-escaped, control characters
 * removed).
 */
int cli_fail(const char *phase, df_errkind kind, const char *message);
/* Same from a df_error (its phase, kind and message). */
int cli_fail_error(const df_error *err);

/* Writes all of s to stdout and flushes; false when the terminal write failed. */
bool cli_write(const char *s, size_t n);

/* Entry points of the subcommands; argv excludes the program and command names. */
int cli_inspect(int argc, char **argv);
int cli_print_inspect_help(void);
int cli_capture_workload(int argc, char **argv);   /* capture.c */
int cli_capture_health(int argc, char **argv);     /* health.c */
int cli_doctor(int argc, char **argv);             /* doctor.c */

/* ------------------------------------------------------------------------ */
/* Paths (paths.c).                                                          */

/* Result of a preflight check: NULL on success, or the failure (phase, kind, message). */
typedef struct cli_problem {
    const char *phase;   /* "input" / "output" */
    df_errkind kind;     /* stable kind */
    char message[256];   /* message */
} cli_problem;

/*
 * Checks an input path: opened non-blocking, must be a regular file.  Fills
 * *canon (malloc'd canonical path) and the first DF_REPORT_MAGIC_LEN bytes
 * (*magic, *magic_len).  Returns false and fills *pr on failure.
 */
bool cli_check_input(const char *path, char **canon, unsigned char *magic, size_t *magic_len, cli_problem *pr);

/*
 * Checks an output path without touching the file system: it must name a
 * file, an existing destination must be a regular file, its nearest existing
 * ancestor a directory, and it must not alias `input_canon` (nor, when
 * non-NULL, `other_canon`, reported as profile_outputs_alias).  Fills
 * *absolute (malloc'd absolute path) and *canon (malloc'd canonical path).
 */
bool cli_check_output(const char *path, const char *input_canon, const char *other_canon, char **absolute, char **canon,
                      cli_problem *pr);

/* Default output: the input with its last extension replaced by `ext` ("profile.html"); malloc'd. */
char *cli_default_output(const char *input, const char *ext);

/* True if the path's extension is .dfprofile (any case) or the magic matches. */
bool cli_is_artifact(const char *path, const unsigned char *magic, size_t magic_len);

#endif
