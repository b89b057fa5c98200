/*
 * The native CPU sampler (process-wide, one instance at a time).
 *
 * Backend PERF: one perf_event_open(PERF_COUNT_SW_CPU_CLOCK) event per
 * thread with user-space callchains collected by the kernel (frame
 * pointers), read from per-thread ring buffers by the collector.
 * Backend TIMER: one CLOCK_THREAD_CPUTIME timer per thread delivering
 * SIGPROF to that thread (SIGEV_THREAD_ID); the handler unwinds the frame
 * pointer chain within the thread's known stack bounds and stores the
 * sample in a lock-free ring; weight = 1 + timer overruns.
 *
 * Threads are attached when the sampler starts (every thread of the process
 * listed in /proc/self/task), when a thread first uses the span API during
 * the capture, and (perf_event backend) when the collector rescans the
 * process's threads.
 */
#ifndef DF_DIAG_SAMPLER_H
#define DF_DIAG_SAMPLER_H

#include "diag/diag_int.h"

/* Maximum frames kept per sample (deeper stacks are cut at the root side). */
#define DF_DIAG_MAX_FRAMES 128

typedef struct df__diag_sampler df__diag_sampler;
struct df__diag_writer;

/* One native sample as the collector hands it to the writer. */
typedef struct df__diag_sample {
    uint64_t ts;           /* CLOCK_MONOTONIC ns */
    uint32_t tid;          /* sampled thread */
    uint32_t cpu;          /* CPU, or UINT32_MAX if unknown */
    uint32_t weight;       /* 1 + intervals lost to overrun */
    uint32_t nframes;      /* entries in pcs */
    bool unwind_error;     /* the frame chain ended on an invalid frame pointer */
    const uint64_t *pcs;   /* program counters, leaf first (pcs[0] is the exact sampled PC) */
} df__diag_sample;

/*
 * Creates a sampler at `hz` per CPU-second with `backend` (AUTO tries PERF
 * then TIMER).  Writes the reason for the choice into reason[reason_len].
 * DF_ERR_NOT_AVAILABLE when the requested backend cannot run here.
 */
df_errkind df__diag_sampler_create(uint32_t hz, df_diag_backend backend, df__diag_sampler **out,
                                   char *reason, size_t reason_len, df_error *err);
/*
 * Asks for context-switch records (off-CPU intervals) on every thread the
 * sampler attaches; call before start.  Only the perf_event backend has
 * them: returns false and says why otherwise.
 */
bool df__diag_sampler_enable_switches(df__diag_sampler *s, char *reason, size_t reason_len);
/* The backend the sampler runs. */
df_diag_backend df__diag_sampler_backend(const df__diag_sampler *s);
/* Attaches to every thread and starts sampling. */
void df__diag_sampler_start(df__diag_sampler *s);
/*
 * Attaches threads created since the last scan that never used the span
 * API (perf_event backend only: no signals are sent into foreign threads).
 * Called by the collector every few collections.
 */
void df__diag_sampler_rescan(df__diag_sampler *s);
/* Stops sampling and detaches from every thread (no signal is delivered afterwards). */
void df__diag_sampler_stop(df__diag_sampler *s);
/* Hands collected samples to the writer (or only counts them when w is NULL). */
df_errkind df__diag_sampler_drain(df__diag_sampler *s, struct df__diag_writer *w, df_error *err);
/* Fills the sampler fields of the capture stats. */
void df__diag_sampler_stats(const df__diag_sampler *s, df_diag_capture_stats *st);
/* Frees a stopped sampler.  Accepts NULL. */
void df__diag_sampler_destroy(df__diag_sampler *s);

#endif
