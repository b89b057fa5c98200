/*
 * Capture control: one active capture per process.  Starting a capture
 * opens a new event generation (so operations begun from now on are
 * traced), starts the sampler if asked, and starts a collector thread that
 * every COLLECT_PERIOD_MS drains full event chunks and sample buffers into
 * the sink: the Perfetto trace writer, or an in-memory log of the raw
 * records.  Stopping ends the generation, stops the sampler, drains every
 * remaining record (including partially filled chunks) and finishes the
 * sink.
 *
 * Modes (options): by default packets are written as they are collected
 * (in 1 MiB batches).  With hold_bytes the trace stays in memory and is
 * written at stop ("short"); with flush_period_ms the collector also reads
 * the records threads have not handed over yet and writes everything at
 * that period ("streaming"), so a process that dies keeps what was flushed.
 * duration_ms is a safety bound: when it elapses the collector stops the
 * capture itself and finishes the trace.
 *
 * Stopping and the collector: df_diag_capture_stop() first asks the
 * collector to quit and joins it without holding capture_mu, then stops
 * under capture_mu; a collector that hits the safety bound stops under
 * capture_mu itself and exits, so the two never wait for each other.
 */
#include "diag/diag_int.h"
#include "diag/sampler.h"
#include "diag/trace_writer.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define COLLECT_PERIOD_MS 20
/* Threads that never use spans are looked for this often (perf_event backend). */
#define RESCAN_PERIOD_NS (100u * 1000u * 1000u)
#define DEFAULT_BUFFER_BYTES (64u * 1024u * 1024u)
#define DEFAULT_LOG_BYTES (256u * 1024u * 1024u)
#define MAX_SAMPLE_HZ 10000u

struct df_diag_capture {
    df_diag_capture_options opts;  /* options (trace_path not owned: copied below) */
    uint64_t started_ns;           /* monotonic start, for duration_ms */
    uint64_t last_flush_ns;        /* monotonic time of the last periodic flush */
    uint64_t last_rescan_ns;       /* monotonic time of the last thread rescan */
    uint64_t generation;           /* event generation of this capture */
    uint64_t scope_id;             /* capture_scope_id or 0 */
    bool stopped;                  /* df_diag_capture_stop has run */
    df_errkind stop_kind;          /* result of the stop, returned again on repeated calls */
    df_diag_capture_stats stats;   /* filled at stop */
    pthread_mutex_t mu;            /* guards quit, and the sink between collector and stop */
    pthread_cond_t cv;             /* wakes the collector early */
    bool quit;                     /* asks the collector to exit */
    bool collector_started;        /* collector thread exists */
    bool collector_joined;         /* it was joined (or never started) */
    pthread_t collector;           /* the collector thread */
    df_error sink_err;             /* first sink error (collector or stop) */
    df_errkind sink_kind;          /* its kind */
    df_buf log;                    /* in-memory log (trace_path == NULL) */
    uint64_t log_lost;             /* records that did not fit in the log */
    df__diag_writer *writer;       /* trace writer, or NULL */
    df__diag_sampler *sampler;     /* sampler, or NULL */
};

static pthread_mutex_t capture_mu = PTHREAD_MUTEX_INITIALIZER; /* start/stop */
static df_diag_capture *active;                                 /* under capture_mu */
static _Atomic uint64_t active_scope;                           /* scope id of the active capture */
static _Atomic uint64_t active_budget;                          /* its activity budget, 0 = none */
static _Atomic(df_diag_thread *) active_scope_thread;           /* operation-scoped: the only traced thread */

uint64_t df__diag_capture_scope_id(void) { return atomic_load(&active_scope); }
uint64_t df__diag_capture_budget(void) { return atomic_load(&active_budget); }
bool df__diag_capture_traces_thread(const df_diag_thread *t) {
    df_diag_thread *only = atomic_load(&active_scope_thread);
    return only == NULL || only == t;
}

bool df_diag_capture_is_active(void) {
    pthread_mutex_lock(&capture_mu);
    bool a = active != NULL;
    pthread_mutex_unlock(&capture_mu);
    return a;
}

/* Sink for event records: the trace writer or the memory log. */
static df_errkind on_record(void *user, const df_diag_ev_head *rec, df_error *err) {
    df_diag_capture *c = user;
    c->stats.events_written++;
    if (c->writer) return df__diag_writer_record(c->writer, rec, err);
    if (c->log.len + rec->size > c->log.limit) {
        c->log_lost++;
        return DF_OK;
    }
    return df_buf_append(&c->log, rec, rec->size, err);
}

/*
 * One collection pass; `final` also reads partially filled chunks.  In
 * streaming mode a pass that is due also reads them and writes the file.
 */
static void collect(df_diag_capture *c, bool final) {
    if (c->sink_kind != DF_OK) return;
    df_error err = {0};
    uint64_t now = df_now_ns();
    bool flush = !final && c->writer && c->opts.flush_period_ms && !c->opts.hold_bytes &&
                 now - c->last_flush_ns >= (uint64_t)c->opts.flush_period_ms * 1000000u;
    if (!final && c->sampler && now - c->last_rescan_ns >= RESCAN_PERIOD_NS) {
        df__diag_sampler_rescan(c->sampler);
        c->last_rescan_ns = now;
    }
    df_errkind kind = df__diag_drain(c->generation, final || flush, on_record, c, &err);
    if (kind == DF_OK && c->sampler) kind = df__diag_sampler_drain(c->sampler, c->writer, &err);
    if (kind == DF_OK && flush) {
        kind = df__diag_writer_flush(c->writer, &err);
        c->last_flush_ns = now;
    }
    if (kind != DF_OK) {
        c->sink_kind = kind;
        df_error_move(&c->sink_err, &err);
    }
    df_error_clear(&err);
}

static void stop_locked(df_diag_capture *c);

/* True once the capture's safety bound has elapsed. */
static bool bound_elapsed(const df_diag_capture *c) {
    return c->opts.duration_ms && df_now_ns() - c->started_ns >= (uint64_t)c->opts.duration_ms * 1000000u;
}

static void *collector_main(void *arg) {
    df_diag_capture *c = arg;
    /* Named so its own cost (draining, symbolizing new frames) is told apart in the trace. */
    pthread_setname_np(pthread_self(), "df-diag-collect");
    pthread_mutex_lock(&c->mu);
    bool timed_out = false;
    while (!c->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += COLLECT_PERIOD_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        if (c->quit) break;
        collect(c, false);
        if (bound_elapsed(c)) {
            timed_out = true;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (timed_out) {
        /* Stop from here; df_diag_capture_stop joins this thread before it takes capture_mu. */
        pthread_mutex_lock(&capture_mu);
        if (!c->stopped) {
            c->stats.timed_out = true;
            stop_locked(c);
        }
        pthread_mutex_unlock(&capture_mu);
    }
    return NULL;
}

static df_errkind check_options(const df_diag_capture_options *o, df_error *err) {
    if (o->sample_hz > MAX_SAMPLE_HZ)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "sample rate must be at most %u Hz", MAX_SAMPLE_HZ);
    if (o->backend != DF_DIAG_BACKEND_AUTO && o->backend != DF_DIAG_BACKEND_PERF &&
        o->backend != DF_DIAG_BACKEND_TIMER)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "unknown sampler backend %d", (int)o->backend);
    if (o->trace_path && !o->trace_path[0])
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "trace path must not be empty");
    if ((o->hold_bytes || o->flush_period_ms || o->max_file_bytes) && !o->trace_path)
        DF_FAIL(err, DF_ERR_INVALID_ARGUMENT, "hold, flush and file bounds need a trace file");
    return DF_OK;
}

static void capture_free(df_diag_capture *c) {
    df__diag_writer_destroy(c->writer);
    df__diag_sampler_destroy(c->sampler);
    df_buf_free(&c->log);
    df_error_clear(&c->sink_err);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    df_free(c);
}

/* Creates sink and sampler (before the generation starts).  capture_mu held. */
static df_errkind capture_prepare(df_diag_capture *c, df_error *err) {
    const df_diag_capture_options *o = &c->opts;
    if (o->trace_path) {
        df__diag_writer_limits lim = {.hold_bytes = o->hold_bytes, .max_file_bytes = o->max_file_bytes};
        DF_TRY(df__diag_writer_open(o->trace_path, o->sample_hz, &lim, &c->writer, err));
    }
    df_buf_init(&c->log, o->memory_log_bytes ? o->memory_log_bytes : DEFAULT_LOG_BYTES);
    c->stats.requested_hz = o->sample_hz;
    if (o->sample_hz == 0) {
        snprintf(c->stats.backend_reason, sizeof c->stats.backend_reason, "sampling disabled");
        return DF_OK;
    }
    DF_TRY(df__diag_sampler_create(o->sample_hz, o->backend, &c->sampler, c->stats.backend_reason,
                                   sizeof c->stats.backend_reason, err));
    if (o->scheduler)
        c->stats.scheduler_recorded = df__diag_sampler_enable_switches(c->sampler, c->stats.scheduler_reason,
                                                                       sizeof c->stats.scheduler_reason);
    return DF_OK;
}

df_errkind df_diag_capture_start(const df_diag_capture_options *opts, df_diag_capture **out,
                                 df_error *err) {
    *out = NULL;
    df_diag_capture_options o = opts ? *opts : (df_diag_capture_options){0};
    DF_TRY(check_options(&o, err));
    df_diag_thread *self = o.operation_scoped ? df__diag_thread_get() : NULL;
    if (o.operation_scoped && !self) return DF_OOM(err);
    df_diag_capture *c = df_calloc(1, sizeof *c);
    if (!c) return DF_OOM(err);
    c->opts = o;
    c->opts.trace_path = NULL; /* not retained */
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_lock(&capture_mu);
    df_errkind kind = DF_OK;
    if (active) kind = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "a diagnostics capture is already active");
    c->opts.trace_path = o.trace_path;
    if (kind == DF_OK) kind = capture_prepare(c, err);
    c->opts.trace_path = NULL;
    if (kind == DF_OK && o.operation_scoped && (c->scope_id = df__diag_next_scope_id()) == 0)
        kind = df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "capture scope identities are exhausted");
    if (kind != DF_OK) {
        pthread_mutex_unlock(&capture_mu);
        if (c->writer) df__diag_writer_abandon(c->writer);
        c->writer = NULL;
        capture_free(c);
        return kind;
    }
    atomic_store(&active_scope, c->scope_id);
    atomic_store(&active_budget, o.max_operator_activity_spans);
    atomic_store(&active_scope_thread, self);
    c->started_ns = c->last_flush_ns = df_now_ns();
    c->generation = df__diag_generation_begin(o.buffer_bytes ? o.buffer_bytes : DEFAULT_BUFFER_BYTES);
    if (c->sampler) df__diag_sampler_start(c->sampler);
    c->collector_started = pthread_create(&c->collector, NULL, collector_main, c) == 0;
    c->collector_joined = !c->collector_started;
    active = c;
    pthread_mutex_unlock(&capture_mu);
    c->stats.capture_scope_id = c->scope_id;
    *out = c;
    return DF_OK;
}

/*
 * Ends the generation, stops the sampler, drains everything and finishes the
 * sink.  capture_mu held; the collector is not collecting (joined, or the
 * caller is the collector itself leaving its loop).
 */
static void stop_locked(df_diag_capture *c) {
    df__diag_generation_end();
    if (c->sampler) df__diag_sampler_stop(c->sampler);
    atomic_store(&active_scope, 0);
    atomic_store(&active_budget, 0);
    atomic_store(&active_scope_thread, NULL);
    if (active == c) active = NULL;
    collect(c, true);
    c->stats.events_lost = df__diag_events_lost() + c->log_lost;
    if (c->sampler) df__diag_sampler_stats(c->sampler, &c->stats);
    if (c->writer && c->sink_kind == DF_OK)
        c->sink_kind = df__diag_writer_finish(c->writer, &c->stats, &c->sink_err);
    if (c->writer) {
        c->stats.trace_bytes = df__diag_writer_bytes(c->writer);
        c->stats.packets_discarded = df__diag_writer_discarded(c->writer);
        c->stats.context_switches = df__diag_writer_switches(c->writer);
    }
    c->stop_kind = c->sink_kind;
    c->stopped = true;
}

df_errkind df_diag_capture_stop(df_diag_capture *c, df_diag_capture_stats *stats, df_error *err) {
    if (!c) return DF_OK;
    pthread_mutex_lock(&c->mu);
    c->quit = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_lock(&capture_mu);
    bool join = !c->collector_joined;
    c->collector_joined = true;
    pthread_mutex_unlock(&capture_mu);
    if (join) pthread_join(c->collector, NULL);
    pthread_mutex_lock(&capture_mu);
    if (!c->stopped) stop_locked(c);
    pthread_mutex_unlock(&capture_mu);
    if (stats) *stats = c->stats;
    if (c->stop_kind != DF_OK && err) {
        df_error_set(err, c->sink_err.kind, "%s", c->sink_err.message);
        df_error_set_code(err, c->sink_err.code);
    }
    return c->stop_kind;
}

df_diag_backend df_diag_capture_backend(df_diag_capture *c, char *reason, size_t cap) {
    if (!c) {
        if (reason && cap) reason[0] = 0;
        return DF_DIAG_BACKEND_AUTO;
    }
    pthread_mutex_lock(&capture_mu);
    if (reason && cap) snprintf(reason, cap, "%s", c->stats.backend_reason);
    df_diag_backend b = c->sampler ? df__diag_sampler_backend(c->sampler) : DF_DIAG_BACKEND_AUTO;
    pthread_mutex_unlock(&capture_mu);
    return b;
}

bool df_diag_capture_stopped(df_diag_capture *c) {
    if (!c) return true;
    pthread_mutex_lock(&capture_mu);
    bool stopped = c->stopped;
    pthread_mutex_unlock(&capture_mu);
    return stopped;
}

void df_diag_capture_destroy(df_diag_capture *c) {
    if (!c) return;
    df_diag_capture_stop(c, NULL, NULL);
    capture_free(c);
}

const unsigned char *df_diag_capture_log(const df_diag_capture *c, size_t *len) {
    if (!c || c->writer || !c->stopped) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = c->log.len;
    return (const unsigned char *)c->log.data;
}
