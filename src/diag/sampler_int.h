/*
 * Private structures of the sampler, shared by sampler.c (selection,
 * attachment bookkeeping, draining), sampler_timer.c (CPU-time timers and
 * the signal handler) and sampler_perf.c (perf_event_open ring buffers).
 */
#ifndef DF_DIAG_SAMPLER_INT_H
#define DF_DIAG_SAMPLER_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "diag/sampler.h"
#include "diag/unwind_dwarf.h"

/* One captured sample in a timer ring slot. */
typedef struct df__diag_ring_slot {
    uint64_t ts;                        /* CLOCK_MONOTONIC ns, clamped into the current span */
    uint32_t cpu;                       /* CPU or UINT32_MAX */
    uint32_t weight;                    /* 1 + timer overruns */
    uint32_t nframes;                   /* entries of pcs */
    uint32_t unwind_error;              /* 1 if the stack could not be walked */
    uint64_t snap;                      /* 1 + sequence number of its stack snapshot, 0 = none */
    uint64_t pcs[DF_DIAG_MAX_FRAMES];   /* leaf first */
} df__diag_ring_slot;

/* Bytes of stack copied for DWARF unwinding, and snapshots buffered per thread. */
#define DF_DIAG_SNAPSHOT_BYTES (16u * 1024u)
#define DF_DIAG_SNAPSHOTS 32u

/*
 * Registers and the top of the stack of a sample whose frame-pointer walk
 * stopped at once (code without frame pointers), unwound with DWARF by the
 * collector.  A second SPSC ring, in the same order as the samples.
 */
typedef struct df__diag_snapshot {
    uint64_t regs[DF_DIAG_UNWIND_REGS]; /* DWARF-numbered registers */
    uint32_t len;                       /* bytes of stack copied */
    uint32_t pad;                       /* zero */
    uint8_t stack[DF_DIAG_SNAPSHOT_BYTES]; /* copied from the stack pointer upwards */
} df__diag_snapshot;

/* Maximum threads attached during one capture (timer table size). */
#define DF_DIAG_MAX_ATTACH 4096u

/* One sampled thread. */
typedef struct df__diag_attach {
    struct df__diag_attach *next;       /* sampler's list */
    struct df__diag_sampler *sampler;   /* owner */
    uint32_t tid;                       /* kernel thread id */
    uint32_t slot;                      /* index in the sampler's timer table */
    bool active;                        /* timer armed / perf event enabled */
    /* timer backend */
    timer_t timer;                      /* POSIX timer (valid when has_timer) */
    bool has_timer;                     /* timer_create succeeded and not deleted */
    df__diag_ring_slot *ring;           /* SPSC ring written by the handler on this thread */
    uint32_t ring_mask;                 /* slots - 1 */
    _Atomic uint64_t head;              /* produced (handler) */
    _Atomic uint64_t tail;              /* consumed (collector) */
    _Atomic uint64_t dropped;           /* samples dropped because the ring was full */
    df__diag_snapshot *snaps;           /* DF_DIAG_SNAPSHOTS stack snapshots, or NULL */
    _Atomic uint64_t snap_head;         /* snapshots produced (handler) */
    _Atomic uint64_t snap_tail;         /* snapshots consumed (collector) */
    uintptr_t stack_lo, stack_hi;       /* main thread: its [stack] mapping, for samples taken before it
                                           registers with the span runtime (0 = unknown) */
    /* perf backend */
    int fd;                             /* perf event fd, -1 if none */
    void *mmap_base;                    /* metadata page + data pages */
    size_t mmap_len;                    /* bytes mapped */
    uint64_t data_size;                 /* data area bytes (power of two) */
    bool switched_out;                  /* scheduler context: the thread is off CPU since out_ts */
    bool out_preempted;                 /* it was preempted (still runnable), not waiting */
    uint32_t out_cpu;                   /* CPU it left */
    uint64_t out_ts;                    /* CLOCK_MONOTONIC ns of the switch-out */
} df__diag_attach;

struct df__diag_sampler {
    df_diag_backend backend;            /* PERF or TIMER */
    uint32_t hz;                        /* requested rate */
    uint64_t period_ns;                 /* 1e9 / hz */
    uint32_t ring_slots;                /* timer ring slots per thread (power of two) */
    uint32_t perf_pages;                /* perf data pages per thread (power of two) */
    bool switches;                      /* perf events also record context switches */
    pthread_mutex_t mu;                 /* guards attachments and counters below */
    df__diag_attach *attached;          /* every attachment (freed at destroy) */
    _Atomic bool running;               /* between start and stop */
    _Atomic int in_handler;             /* signal handlers currently running */
    struct sigaction old_action;        /* SIGPROF action before start */
    bool handler_installed;             /* we replaced the SIGPROF action */
    uint64_t samples;                   /* records delivered */
    uint64_t weight;                    /* sum of weights */
    uint64_t lost;                      /* samples lost (full rings, PERF_RECORD_LOST) */
    uint64_t lost_reported;             /* losses already written to the trace */
    uint64_t unwound;                   /* samples with more than one frame */
    uint64_t dwarf_unwound;             /* samples whose stack came from DWARF unwinding */
    df__diag_unwinder *unwinder;        /* DWARF unwinder (collector only), created on first use */
    bool unwinder_failed;               /* creating it failed: do not retry */
    uint64_t threads;                   /* attachments made */
    uint64_t attach_failures;           /* threads that could not be attached */
    uint32_t ntable;                    /* timer table entries used */
    struct df__diag_attach *_Atomic table[DF_DIAG_MAX_ATTACH]; /* sival_int -> attachment (handler) */
    uint64_t pcs[DF_DIAG_MAX_FRAMES];   /* perf decoding scratch (collector only) */
    unsigned char record[65536];        /* one perf record copied out of the ring */
};

/* Cookie in sigev_value identifying our timers' signals. */
#define DF_DIAG_TIMER_SIGNAL SIGPROF

/* Timer backend (sampler_timer.c). */
df_errkind df__diag_timer_check(char *reason, size_t reason_len, df_error *err);
df_errkind df__diag_timer_install(df__diag_sampler *s, df_error *err);
void df__diag_timer_uninstall(df__diag_sampler *s);
bool df__diag_timer_attach(df__diag_sampler *s, df__diag_attach *a);
void df__diag_timer_detach(df__diag_attach *a);
df_errkind df__diag_timer_drain(df__diag_sampler *s, df__diag_attach *a, struct df__diag_writer *w, df_error *err);

/* Perf backend (sampler_perf.c). */
bool df__diag_perf_probe(char *reason, size_t reason_len);
/* True if perf events with context-switch records can be opened for this thread. */
bool df__diag_perf_probe_switches(char *reason, size_t reason_len);
bool df__diag_perf_attach(df__diag_sampler *s, df__diag_attach *a);
void df__diag_perf_disable(df__diag_attach *a);
void df__diag_perf_close(df__diag_attach *a);
df_errkind df__diag_perf_drain(df__diag_sampler *s, df__diag_attach *a, struct df__diag_writer *w, df_error *err);

/* Hands one decoded sample to the writer and counts it (sampler.c). */
df_errkind df__diag_sampler_emit(df__diag_sampler *s, const df__diag_sample *smp, struct df__diag_writer *w,
                                 df_error *err);

#endif
