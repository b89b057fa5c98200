/*
 * Captures: turning spans (and, optionally, native CPU samples) into a
 * Perfetto trace file or an in-memory event log.
 *
 * At most one capture is active in a process.  While it is active, every
 * operation begun gets an operation id and records its queries, tasks,
 * activities and details (see diag.h); threads write fixed-size event
 * records into per-thread chunks that a collector thread drains, so the
 * threads doing the work never block on I/O.  When sampling is requested,
 * the sampler (perf_event_open cpu-clock with user callchains when the
 * kernel allows it, else per-thread CPU-time timers with frame-pointer
 * unwinding in the signal handler) records samples that the collector
 * symbolizes and writes as PerfSample packets.
 *
 * Traces are standard Perfetto protobuf files (.pftrace), created with mode
 * 0600 and never over an existing file.  They contain span names, stage
 * names, operator names, query owners (output/alias names), thread names,
 * the executable's short name, library paths and function names; no SQL
 * text, no command lines, no environment, no connection strings.
 */
#ifndef DF_DIAG_CAPTURE_H
#define DF_DIAG_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "diag/names.h" /* df_diag_backend and df_diag_backend_name() */

typedef struct df_diag_capture df_diag_capture;

typedef struct df_diag_capture_options {
    /* Trace file to create (mode 0600, must not exist); NULL keeps the event log in memory. */
    const char *trace_path;
    /* Samples per CPU-second per thread; 0 disables sampling; at most 10000. */
    uint32_t sample_hz;
    /* Which sampler; AUTO falls back from PERF to TIMER and records why. */
    df_diag_backend backend;
    /* Per-operation operator-activity budget for operations begun during the capture; 0 = 100,000. */
    uint64_t max_operator_activity_spans;
    /*
     * Operation-scoped capture: allocate a capture_scope_id and trace only
     * the operations begun on the thread that starts the capture (the
     * reference's thread-local capture scope).  false = whole process: every
     * operation begun while the capture is active is traced (scope 0).
     */
    bool operation_scoped;
    /* Cap of the event buffer memory in bytes; 0 = 64 MiB.  Events beyond it are lost and counted. */
    size_t buffer_bytes;
    /* Cap of the in-memory event log (trace_path == NULL) in bytes; 0 = 256 MiB. */
    size_t memory_log_bytes;
    /*
     * Safety bound: the capture stops recording by itself (and finishes the
     * trace) this many milliseconds after it started; 0 = no bound.  Spans
     * still open then stay unterminated (their end is unknown, not zero).
     */
    uint32_t duration_ms;
    /*
     * Hold the trace in memory (at most this many bytes) and write it when
     * the capture stops ("short" mode: no disk traffic while the workload
     * runs).  Past the bound every later packet is discarded and counted
     * (the beginning is kept).  0 = write as collected.
     */
    size_t hold_bytes;
    /*
     * Write the trace file in full at least every this many milliseconds,
     * including records still in the threads' partially filled buffers
     * ("streaming" mode: a process that dies keeps what was flushed).
     * 0 = write whenever 1 MiB of packets accumulated.  Ignored with hold_bytes.
     */
    uint32_t flush_period_ms;
    /* Largest trace file in bytes; later packets are discarded and counted.  0 = unbounded. */
    uint64_t max_file_bytes;
    /*
     * Record scheduler context ("deep-system"): off-CPU intervals of every
     * sampled thread from perf_event context-switch records.  Needs the
     * perf_event backend; otherwise the capture runs without it and the
     * stats say why (scheduler_reason).
     */
    bool scheduler;
} df_diag_capture_options;

/* What a capture recorded; filled by df_diag_capture_stop(). */
typedef struct df_diag_capture_stats {
    uint64_t capture_scope_id;      /* 0 for whole-process captures */
    uint64_t events_written;        /* span/instant records delivered to the sink */
    uint64_t events_lost;           /* records dropped because the buffer cap was reached */
    df_diag_backend backend;        /* backend in use (AUTO when sampling was off) */
    char backend_reason[160];       /* why that backend was chosen (or why sampling is off) */
    uint32_t requested_hz;          /* options.sample_hz */
    double effective_hz;            /* requested_hz * samples / (sample_weight + samples_lost) */
    uint64_t samples;               /* sample records delivered */
    uint64_t sample_weight;         /* sum of weights (1 + timer overruns) */
    uint64_t samples_lost;          /* samples dropped: kernel PERF_RECORD_LOST counts, full rings */
    uint64_t samples_unwound;       /* samples with more than the leaf frame */
    uint64_t samples_dwarf_unwound; /* timer samples whose stack came from DWARF unwinding of a snapshot */
    uint64_t threads_sampled;       /* sampler attachments made (a thread may be re-attached) */
    uint64_t threads_not_sampled;   /* attachments that failed (thread gone, fd or memlock limits) */
    uint64_t trace_bytes;           /* bytes written to the trace file */
    bool timed_out;                 /* the duration_ms safety bound stopped the capture */
    uint64_t packets_discarded;     /* trace packets dropped at the hold or file bound */
    bool scheduler_recorded;        /* context switches were recorded (options.scheduler) */
    char scheduler_reason[160];     /* why scheduler context is or is not recorded ("" if not asked) */
    uint64_t context_switches;      /* off-CPU intervals written */
} df_diag_capture_stats;

/*
 * Starts the process's capture.  Fails with DF_ERR_INVALID_ARGUMENT (bad
 * option; a capture is already active), DF_ERR_OUTPUT_UNAVAILABLE (the trace
 * file exists or cannot be created), DF_ERR_NOT_AVAILABLE (sampling was asked
 * for and the forced backend, or with AUTO neither backend, can run here; the
 * message says why), DF_ERR_OUT_OF_MEMORY.  On failure *out is NULL and
 * nothing was created.
 */
df_errkind df_diag_capture_start(const df_diag_capture_options *opts, df_diag_capture **out,
                                 df_error *err);

/*
 * Stops recording, drains every buffer, writes and closes the trace.  Spans
 * still open appear unterminated (Perfetto shows them as incomplete).
 * `stats` may be NULL.  Returns the first write error, if any (the file is
 * then incomplete but still closed).  Calling it twice returns DF_OK and
 * the same stats.
 */
df_errkind df_diag_capture_stop(df_diag_capture *c, df_diag_capture_stats *stats, df_error *err);

/*
 * True once the capture has stopped: df_diag_capture_stop() ran, or the
 * duration_ms safety bound stopped it (the trace is then finished).
 * Accepts NULL (true).
 */
bool df_diag_capture_stopped(df_diag_capture *c);

/* Stops (if needed) and frees.  Accepts NULL. */
void df_diag_capture_destroy(df_diag_capture *c);

/*
 * The in-memory event log of a stopped capture without trace_path: a
 * sequence of records (see diag_int.h, df_diag_ev_*), borrowed until the
 * capture is destroyed.  NULL/0 for file captures.
 */
const unsigned char *df_diag_capture_log(const df_diag_capture *c, size_t *len);

/*
 * The sampler backend of a running (or stopped) capture and why it was
 * chosen (copied into reason[cap]); AUTO when the capture does not sample.
 */
df_diag_backend df_diag_capture_backend(df_diag_capture *c, char *reason, size_t cap);

/* True while a capture is active in this process. */
bool df_diag_capture_is_active(void);

/* What this host allows a capture to do (delta-funnel-perfetto doctor). */
typedef struct df_diag_host_report {
    bool perf_available;          /* perf_event_open cpu-clock with user callchains works */
    char perf_reason[160];        /* why (errno, perf_event_paranoid) */
    bool timer_available;         /* per-thread CPU-time timers with SIGPROF work */
    char timer_reason[160];       /* why not, or "" */
    df_diag_backend auto_backend; /* what AUTO would choose (AUTO if neither works) */
    bool switches_available;      /* context-switch records (deep-system) */
    char switches_reason[160];    /* why */
    char perf_event_paranoid[16]; /* /proc/sys/kernel/perf_event_paranoid, "unknown" */
    bool libdw;                   /* built with elfutils libdw (source lines) */
    bool symbols_resolved;        /* a function of this library resolved by name */
    char symbol_probe[128];       /* its resolved name, or the reason it did not resolve */
    char module_probe[256];       /* the module it lives in */
    bool lines_resolved;          /* it also resolved to file:line */
    char line_probe[320];         /* "src/diag/probe.c:42", or why not */
    bool debuginfod_configured;   /* DEBUGINFOD_URLS is set */
    bool debuginfod_client;       /* libdebuginfod.so.1 can be loaded */
} df_diag_host_report;

/*
 * Probes the host without starting a capture: both sampler backends,
 * context-switch records, symbol and line resolution of one of our own
 * functions, debuginfod.  Only DF_ERR_OUT_OF_MEMORY can fail.
 */
df_errkind df_diag_probe_host(df_diag_host_report *out, df_error *err);

#endif
