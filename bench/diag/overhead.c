/*
 * Capture overhead on a real workload: a full-scan preview of a Delta table
 * (the filter keeps almost nothing, so every row is read, decoded and
 * filtered) measured with diagnostics off, with spans only (a capture
 * without sampling), and with native sampling at 100 Hz and 1000 Hz.
 *
 *   overhead TABLE_DIR [RUNS] [MODES]
 *
 * MODES is a comma list of off,spans,100,1000 (default all).  Each run
 * measures every mode once, rotating the order from run to run
 * (interleaved, so drift and warm-up hit every mode alike); each
 * measurement is one preview in this process, with its own capture
 * started before and stopped (trace written) after it, like a ranked
 * profile.  Prints one JSON object per measurement and, at the end, per
 * mode: median wall and CPU seconds with their spread (min..max), and the
 * ratios of medians against "off" (CPU time resolves small overheads on a
 * machine whose wall times other jobs disturb).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "deltafunnel/deltafunnel.h"
#include "diag/capture.h"

#define MAX_RUNS 200

typedef struct mode {
    const char *name;   /* off | spans | 100 | 1000 */
    bool capture;       /* a capture runs */
    uint32_t hz;        /* sampling rate (0 = spans only) */
    double wall[MAX_RUNS];
    double cpu[MAX_RUNS];
    int n;
} mode;

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n, double *lo, double *hi) {
    double s[MAX_RUNS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    *lo = s[0];
    *hi = s[n - 1];
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int fail(const char *what, const df_error *err) {
    fprintf(stderr, "%s: %s: %s\n", what, df_errkind_name(err->kind), err->message);
    return 1;
}

/* One preview, under a capture of mode m when it asks for one.  Returns 0 or 1. */
static int measure(df_table *t, mode *m, const char *dir, int run) {
    char trace[4096];
    snprintf(trace, sizeof trace, "%s/overhead-%d-%s-%d.pftrace", dir, (int)getpid(), m->name, run);
    df_error err = {0};
    df_diag_capture *c = NULL;
    double c0 = cpu_seconds();
    uint64_t t0 = df_now_ns();
    if (m->capture) {
        df_diag_capture_options o = {.trace_path = trace, .sample_hz = m->hz, .operation_scoped = true};
        if (df_diag_capture_start(&o, &c, &err) != DF_OK) return fail("capture", &err);
    }
    df_preview_options po;
    df_preview_options_init(&po);
    df_preview *p = NULL;
    df_errkind k = df_table_preview(t, &po, &p, &err);
    df_diag_capture_stats st = {0};
    if (c && df_diag_capture_stop(c, &st, &err) != DF_OK) return fail("capture stop", &err);
    uint64_t t1 = df_now_ns();
    double c1 = cpu_seconds();
    df_diag_capture_destroy(c);
    unlink(trace);
    if (k != DF_OK) return fail("preview", &err);
    df_preview_free(p);
    m->wall[m->n] = (double)(t1 - t0) / 1e9;
    m->cpu[m->n] = c1 - c0;
    m->n++;
    printf("{\"run\": %d, \"mode\": \"%s\", \"wall_s\": %.6f, \"cpu_s\": %.6f, \"samples\": %llu, \"events\": %llu, "
           "\"trace_bytes\": %llu}\n",
           run, m->name, (double)(t1 - t0) / 1e9, c1 - c0, (unsigned long long)st.samples,
           (unsigned long long)st.events_written, (unsigned long long)st.trace_bytes);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TABLE_DIR [RUNS] [off,spans,100,1000]\n", argv[0]);
        return 64;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    if (runs < 1 || runs > MAX_RUNS) runs = 10;
    mode all[4] = {{"off", false, 0, {0}, {0}, 0}, {"spans", true, 0, {0}, {0}, 0},
                   {"100", true, 100, {0}, {0}, 0}, {"1000", true, 1000, {0}, {0}, 0}};
    mode *modes[4];
    int nmodes = 0;
    const char *list = argc > 3 ? argv[3] : "off,spans,100,1000";
    for (int i = 0; i < 4; i++) {
        const char *at = strstr(list, all[i].name);
        size_t len = strlen(all[i].name);
        if (at && (at == list || at[-1] == ',') && (at[len] == 0 || at[len] == ',')) modes[nmodes++] = &all[i];
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    df_error err = {0};
    df_session *s = NULL;
    df_delta_source *src = NULL;
    df_table *t = NULL, *q = NULL;
    if (df_session_new(NULL, &s, &err) || df_delta_source_new(argv[1], NULL, NULL, &src, &err) ||
        df_session_register_delta(s, src, "t", NULL, &t, &err) ||
        df_session_table_from_sql(s, "SELECT * FROM t WHERE id % 1000003 = 7", &q, &err))
        return fail("setup", &err);
    df_delta_source_free(src);
    mode warm = {"off", false, 0, {0}, {0}, 0};
    if (measure(q, &warm, dir, -1)) return 1; /* page cache and allocator warm-up */
    for (int r = 0; r < runs; r++)
        for (int i = 0; i < nmodes; i++)
            if (measure(q, modes[(i + r) % nmodes], dir, r)) return 1;
    double lo, hi, base = 0, cbase = 0;
    for (int i = 0; i < nmodes; i++) {
        mode *m = modes[i];
        double med = median(m->wall, m->n, &lo, &hi);
        double clo, chi, cmed = median(m->cpu, m->n, &clo, &chi);
        if (!strcmp(m->name, "off")) base = med, cbase = cmed;
        printf("{\"summary\": \"%s\", \"runs\": %d, \"median_wall_s\": %.6f, \"min_wall_s\": %.6f, "
               "\"max_wall_s\": %.6f, \"median_cpu_s\": %.6f, \"min_cpu_s\": %.6f, \"max_cpu_s\": %.6f, "
               "\"ratio_vs_off\": %.4f, \"cpu_ratio_vs_off\": %.4f}\n",
               m->name, m->n, med, lo, hi, cmed, clo, chi, base > 0 ? med / base : 0.0,
               cbase > 0 ? cmed / cbase : 0.0);
    }
    df_table_release(q);
    df_table_release(t);
    df_session_free(s);
    return 0;
}
