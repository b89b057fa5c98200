/*
 * doctor: what this host lets a Delta Funnel capture do, checked the way a
 * capture would do it (the reference's manual tracebox / symbolizer /
 * sysctl checks, replaced by facts).  One "name: status - detail" line per
 * check, then a summary.  Exit 0 when a capture with native samples can
 * run, 69 when no sampler works (spans can still be captured).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "diag/capture.h"

static const char DOCTOR_HELP[] =
    "Usage: delta-funnel-perfetto doctor\n"
    "\n"
    "Reports what this host allows a Delta Funnel capture to do: the native sampler backend and why, symbol and\n"
    "source-line resolution, debuginfod, and deep-system scheduler context.  Needs no privileges.\n";

static void line(const char *name, const char *status, const char *detail) {
    printf("%-22s %-14s %s\n", name, status, detail);
}

int cli_doctor(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return cli_write(DOCTOR_HELP, strlen(DOCTOR_HELP)) ? CLI_OK : CLI_OUTPUT;
        return cli_fail("argument", DF_ERR_UNKNOWN_OPTION, "doctor takes no arguments");
    }
    df_diag_host_report h;
    df_error err = {0};
    if (df_diag_probe_host(&h, &err) != DF_OK) {
        int rc = cli_fail_error(&err);
        df_error_clear(&err);
        return rc;
    }
    char detail[512];
    printf("Delta Funnel diagnostics on this host (no privileges, no downloads needed)\n\n");
    snprintf(detail, sizeof detail, "%s", h.perf_reason);
    line("sampler perf_event", h.perf_available ? "available" : "unavailable", detail);
    line("sampler cpu timers", h.timer_available ? "available" : "unavailable", h.timer_reason);
    snprintf(detail, sizeof detail, "%s (perf_event_paranoid=%s)",
             h.auto_backend == DF_DIAG_BACKEND_PERF    ? "perf_event: kernel-collected user call chains"
             : h.auto_backend == DF_DIAG_BACKEND_TIMER ? "thread_cpu_timer: in-process frame-pointer unwinding, "
                                                         "samples weighted by timer overruns"
                                                       : "none: captures record spans only",
             h.perf_event_paranoid);
    line("sampler chosen", h.auto_backend == DF_DIAG_BACKEND_AUTO ? DF_DIAG_NO_BACKEND_NAME : df_diag_backend_name(h.auto_backend),
         detail);
    snprintf(detail, sizeof detail, "%s in %s", h.symbol_probe, h.module_probe);
    line("symbols (ELF)", h.symbols_resolved ? "ok" : "missing", detail);
    line("source lines (DWARF)", h.lines_resolved ? "ok" : h.libdw ? "no line tables" : "unavailable", h.line_probe);
    snprintf(detail, sizeof detail, "%s; %s",
             h.debuginfod_configured ? "DEBUGINFOD_URLS is set: missing debug files are fetched"
                                     : "DEBUGINFOD_URLS is not set: never consulted",
             h.debuginfod_client ? "libdebuginfod is installed" : "libdebuginfod is not installed");
    line("debuginfod", h.debuginfod_configured && h.debuginfod_client ? "enabled" : "off", detail);
    line(df_diag_capture_mode_name(DF_DIAG_MODE_DEEP_SYSTEM), h.switches_available ? "partial" : "unavailable",
         h.switches_available ? "off-CPU intervals of sampled threads from context-switch records; no wakeups, other "
                                "processes or CPU-wide scheduling"
                              : h.switches_reason);
    printf("\n");
    if (h.auto_backend == DF_DIAG_BACKEND_AUTO) {
        printf("summary: native CPU sampling is not possible here; captures still record exact spans\n");
        fflush(stdout);
        return CLI_UNAVAILABLE;
    }
    printf("summary: ranked profiles and capture-workload can run with native CPU samples (%s)\n",
           df_diag_backend_name(h.auto_backend));
    return cli_write("", 0) ? CLI_OK : CLI_OUTPUT;
}
