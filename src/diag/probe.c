/*
 * Host probe: what a capture can do on this machine, checked the way a
 * capture would do it (the same perf_event_open attributes, the same timer,
 * the same symbolizer), so `delta-funnel-perfetto doctor` reports facts,
 * not guesses.  Nothing is left behind: events, timers and the symbolizer
 * are closed again.
 */
#include "diag/sampler_int.h"
#include "diag/symbolize.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static void read_small_file(const char *path, char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    size_t len = strlen(buf);
    if (len >= cap) len = cap - 1;
    memcpy(out, buf, len);
    out[len] = 0;
}

/* Resolves this very function's address: symbols, module and (with libdw) the source line. */
__attribute__((noinline)) static df_errkind probe_symbols(df_diag_host_report *r, df_error *err) {
    df__diag_symbolizer *sym = NULL;
    DF_TRY(df__diag_symbolizer_create(&sym, err));
    df__diag_symbol out;
    df_errkind k = df__diag_symbolize(sym, (uint64_t)(uintptr_t)&probe_symbols, &out, err);
    if (k == DF_OK) {
        r->symbols_resolved = out.function != NULL;
        snprintf(r->symbol_probe, sizeof r->symbol_probe, "%s",
                 out.function ? out.function : "unresolved (no ELF symbol table and no debug file)");
        snprintf(r->module_probe, sizeof r->module_probe, "%s", out.module ? out.module->path : "unknown");
        r->lines_resolved = out.source_file && out.line;
        if (r->lines_resolved)
            snprintf(r->line_probe, sizeof r->line_probe, "%s:%u", out.source_file, out.line);
        else if (!r->libdw)
            snprintf(r->line_probe, sizeof r->line_probe, "not available: built without elfutils libdw");
        else
            snprintf(r->line_probe, sizeof r->line_probe,
                     "no line tables in this build (configure with -Dprofiling=true for line-level symbols)");
    }
    df__diag_symbolizer_destroy(sym);
    return k;
}

df_errkind df_diag_probe_host(df_diag_host_report *r, df_error *err) {
    memset(r, 0, sizeof *r);
    read_small_file("/proc/sys/kernel/perf_event_paranoid", r->perf_event_paranoid, sizeof r->perf_event_paranoid);
    r->perf_available = df__diag_perf_probe(r->perf_reason, sizeof r->perf_reason);
    df_error terr = {0};
    r->timer_available = df__diag_timer_check(r->timer_reason, sizeof r->timer_reason, &terr) == DF_OK;
    df_error_clear(&terr);
    if (r->timer_available)
        snprintf(r->timer_reason, sizeof r->timer_reason, "CLOCK_THREAD_CPUTIME_ID timers delivering SIGPROF work");
    r->auto_backend = r->perf_available ? DF_DIAG_BACKEND_PERF
                      : r->timer_available ? DF_DIAG_BACKEND_TIMER : DF_DIAG_BACKEND_AUTO;
    if (r->perf_available)
        r->switches_available = df__diag_perf_probe_switches(r->switches_reason, sizeof r->switches_reason);
    else
        snprintf(r->switches_reason, sizeof r->switches_reason, "needs the perf_event sampler: %.120s",
                 r->perf_reason);
#ifdef DF_HAVE_LIBDW
    r->libdw = true;
#endif
    r->debuginfod_configured = df__diag_debuginfod_configured();
    r->debuginfod_client = df__diag_debuginfod_client_available();
    return probe_symbols(r, err);
}
