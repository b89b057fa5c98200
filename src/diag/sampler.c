/*
 * Sampler front end: backend choice, thread attachment and draining.
 *
 * Choice: PERF when perf_event_open(cpu-clock) with user callchains works
 * for this process (probed on the calling thread), else TIMER.  The reason
 * (the errno and perf_event_paranoid value, or "requested") is reported in
 * the capture stats.
 *
 * Attachment: at start, every thread listed in /proc/self/task; afterwards,
 * every thread that registers with the span runtime (its first span) while
 * the sampler runs.  Attachments are kept until the sampler is destroyed so
 * the signal handler and the collector never see freed memory; a thread
 * that exits is detached (timer deleted, perf event disabled) and its
 * buffered samples are still drained.
 */
#include "diag/sampler_int.h"
#include "diag/trace_writer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t active_mu = PTHREAD_MUTEX_INITIALIZER; /* guards `active` for hooks */
static df__diag_sampler *active;                               /* the running sampler */

static uint32_t next_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p < v && p < (1u << 30)) p <<= 1;
    return p;
}

df_errkind df__diag_sampler_create(uint32_t hz, df_diag_backend backend, df__diag_sampler **out,
                                   char *reason, size_t reason_len, df_error *err) {
    *out = NULL;
    if (hz == 0) DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "sample rate must be positive");
    df_diag_backend chosen = backend;
    if (backend == DF_DIAG_BACKEND_PERF || backend == DF_DIAG_BACKEND_AUTO) {
        char why[128];
        bool ok = df__diag_perf_probe(why, sizeof why);
        if (ok) {
            chosen = DF_DIAG_BACKEND_PERF;
            snprintf(reason, reason_len, "%s%s", backend == DF_DIAG_BACKEND_PERF ? "requested; " : "", why);
        } else if (backend == DF_DIAG_BACKEND_PERF) {
            snprintf(reason, reason_len, "%s", why);
            DF_FAIL(err, DF_ERR_NOT_AVAILABLE, "perf_event sampler unavailable: %s", why);
        } else {
            chosen = DF_DIAG_BACKEND_TIMER;
            snprintf(reason, reason_len, "%s; using per-thread CPU-time timers", why);
        }
    } else {
        snprintf(reason, reason_len, "per-thread CPU-time timers requested");
    }
    if (chosen == DF_DIAG_BACKEND_TIMER) {
        char why[128];
        if (df__diag_timer_check(why, sizeof why, err) != DF_OK) {
            snprintf(reason, reason_len, "%s", why);
            return DF_ERR_NOT_AVAILABLE;
        }
    }
    df__diag_sampler *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    s->backend = chosen;
    s->hz = hz;
    s->period_ns = 1000000000ULL / hz;
    s->ring_slots = next_pow2(DF_MAX(32u, hz / 5));     /* ~200 ms of samples per thread */
    /*
     * 16 KiB of perf ring per thread at <= 1000 Hz: 20 ms of deep stacks fits,
     * and unprivileged users' locked-memory allowance (perf_event_mlock_kb,
     * then RLIMIT_MEMLOCK) covers many threads.
     */
    s->perf_pages = next_pow2(DF_MAX(4u, hz / 250));
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return DF_OK;
}

df_diag_backend df__diag_sampler_backend(const df__diag_sampler *s) { return s->backend; }

bool df__diag_sampler_enable_switches(df__diag_sampler *s, char *reason, size_t reason_len) {
    if (s->backend != DF_DIAG_BACKEND_PERF) {
        snprintf(reason, reason_len,
                 "not recorded: context-switch records need the perf_event sampler, which this host refuses");
        return false;
    }
    char why[128];
    if (!df__diag_perf_probe_switches(why, sizeof why)) {
        snprintf(reason, reason_len, "not recorded: %s", why);
        return false;
    }
    s->switches = true;
    /* Switch records share the ring with samples: give each thread more room. */
    s->perf_pages = s->perf_pages < 16 ? 16 : s->perf_pages;
    snprintf(reason, reason_len,
             "off-CPU intervals of the sampled threads from perf_event context-switch records "
             "(no wakeup sources, other processes or CPU-wide scheduling)");
    return true;
}

/* Attaches thread `tid` (s->mu held).  `fresh` forces a new attachment for a reused tid. */
static void attach_locked(df__diag_sampler *s, uint32_t tid, bool fresh) {
    for (df__diag_attach *a = s->attached; a; a = a->next) {
        if (a->tid != tid || !a->active) continue;
        if (!fresh) return;
        if (s->backend == DF_DIAG_BACKEND_TIMER) df__diag_timer_detach(a);
        else df__diag_perf_disable(a);
        a->active = false;
    }
    df__diag_attach *a = df_calloc(1, sizeof *a);
    if (!a) {
        s->attach_failures++;
        return;
    }
    a->sampler = s;
    a->tid = tid;
    a->fd = -1;
    bool ok = s->backend == DF_DIAG_BACKEND_TIMER ? df__diag_timer_attach(s, a) : df__diag_perf_attach(s, a);
    if (!ok) {
        s->attach_failures++; /* thread gone, fd or locked-memory limits */
        df_free(a->ring);
        df_free(a->snaps);
        df_free(a);
        return;
    }
    a->active = true;
    a->next = s->attached;
    s->attached = a;
    s->threads++;
}

/* Runs on a thread that registers with the span runtime. */
static void thread_started(df_diag_thread *t) {
    pthread_mutex_lock(&active_mu);
    df__diag_sampler *s = active;
    if (s) {
        pthread_mutex_lock(&s->mu);
        attach_locked(s, t->tid, true);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&active_mu);
}

/* Runs on a registered thread that exits. */
static void thread_exiting(df_diag_thread *t) {
    pthread_mutex_lock(&active_mu);
    df__diag_sampler *s = active;
    if (s) {
        pthread_mutex_lock(&s->mu);
        for (df__diag_attach *a = s->attached; a; a = a->next) {
            if (a->tid != t->tid || !a->active) continue;
            if (s->backend == DF_DIAG_BACKEND_TIMER) df__diag_timer_detach(a);
            else df__diag_perf_disable(a);
            a->active = false;
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&active_mu);
}

static void attach_existing_threads(df__diag_sampler *s) {
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        attach_locked(s, (uint32_t)syscall(SYS_gettid), false);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end = NULL;
        unsigned long tid = strtoul(de->d_name, &end, 10);
        if (end && *end == 0 && tid > 0 && tid <= UINT32_MAX) attach_locked(s, (uint32_t)tid, false);
    }
    closedir(d);
}

void df__diag_sampler_rescan(df__diag_sampler *s) {
    if (s->backend != DF_DIAG_BACKEND_PERF || !atomic_load(&s->running)) return;
    pthread_mutex_lock(&active_mu);
    if (active == s) {
        pthread_mutex_lock(&s->mu);
        attach_existing_threads(s);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&active_mu);
}

void df__diag_sampler_start(df__diag_sampler *s) {
    df_error err = {0};
    if (s->backend == DF_DIAG_BACKEND_TIMER && df__diag_timer_install(s, &err) != DF_OK) {
        df_error_clear(&err);
        return; /* no samples; the stats show zero threads */
    }
    atomic_store(&df__diag_thread_start_hook, thread_started);
    atomic_store(&df__diag_thread_exit_hook, thread_exiting);
    pthread_mutex_lock(&active_mu);
    atomic_store(&s->running, true);
    active = s;
    pthread_mutex_lock(&s->mu);
    attach_existing_threads(s);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&active_mu);
}

void df__diag_sampler_stop(df__diag_sampler *s) {
    pthread_mutex_lock(&active_mu);
    if (active == s) active = NULL;
    atomic_store(&s->running, false);
    pthread_mutex_lock(&s->mu);
    for (df__diag_attach *a = s->attached; a; a = a->next) {
        if (!a->active) continue;
        if (s->backend == DF_DIAG_BACKEND_TIMER) df__diag_timer_detach(a);
        else df__diag_perf_disable(a);
        a->active = false;
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&active_mu);
    if (s->backend == DF_DIAG_BACKEND_TIMER) df__diag_timer_uninstall(s);
}

df_errkind df__diag_sampler_emit(df__diag_sampler *s, const df__diag_sample *smp, struct df__diag_writer *w,
                                 df_error *err) {
    s->samples++;
    s->weight += smp->weight; /* 1 + overruns: intervals this sample stands for */
    if (smp->nframes > 1) s->unwound++;
    return w ? df__diag_writer_sample(w, smp, err) : DF_OK;
}

df_errkind df__diag_sampler_drain(df__diag_sampler *s, struct df__diag_writer *w, df_error *err) {
    df_errkind k = DF_OK;
    pthread_mutex_lock(&s->mu);
    for (df__diag_attach *a = s->attached; a && k == DF_OK; a = a->next)
        k = s->backend == DF_DIAG_BACKEND_TIMER ? df__diag_timer_drain(s, a, w, err)
                                                : df__diag_perf_drain(s, a, w, err);
    if (k == DF_OK && w && s->lost > s->lost_reported) {
        k = df__diag_writer_samples_lost(w, s->lost - s->lost_reported, err);
        s->lost_reported = s->lost;
    }
    pthread_mutex_unlock(&s->mu);
    return k;
}

void df__diag_sampler_stats(const df__diag_sampler *s, df_diag_capture_stats *st) {
    df__diag_sampler *m = (df__diag_sampler *)s; /* the mutex is not part of the value */
    pthread_mutex_lock(&m->mu);
    st->backend = s->backend;
    st->samples = s->samples;
    st->sample_weight = s->weight;
    st->samples_lost = s->lost;
    st->samples_unwound = s->unwound;
    st->samples_dwarf_unwound = s->dwarf_unwound;
    st->threads_sampled = s->threads;
    st->threads_not_sampled = s->attach_failures;
    /* Intervals that elapsed = weighted samples + lost ones; distinct samples per interval. */
    uint64_t total = s->weight + s->lost;
    st->effective_hz = total ? (double)s->hz * (double)s->samples / (double)total : 0.0;
    pthread_mutex_unlock(&m->mu);
}

void df__diag_sampler_destroy(df__diag_sampler *s) {
    if (!s) return;
    if (atomic_load(&s->running)) df__diag_sampler_stop(s);
    for (df__diag_attach *a = s->attached, *next; a; a = next) {
        next = a->next;
        df__diag_perf_close(a);
        df_free(a->ring);
        df_free(a->snaps);
        df_free(a);
    }
    df__diag_unwinder_destroy(s->unwinder);
    pthread_mutex_destroy(&s->mu);
    df_free(s);
}
