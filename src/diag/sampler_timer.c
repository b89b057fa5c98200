/*
 * Timer sampler backend: one POSIX timer per thread on that thread's CPU-time
 * clock, delivering SIGPROF to that very thread (SIGEV_THREAD_ID), so the
 * handler runs on the sampled thread and samples only CPU time.
 *
 * The handler is async-signal-safe: it reads the interrupted registers from
 * the ucontext, walks the frame-pointer chain only inside the thread's
 * stack bounds (recorded when the thread registered with the span runtime;
 * threads without them get their leaf PC only), and appends the sample to
 * the thread's single-producer ring (the collector is the only consumer).
 * Weight = 1 + si_overrun (timer intervals that expired without a signal).
 *
 * When the frame-pointer walk stops at once (the interrupted code keeps no
 * frame pointer: the Python interpreter, most system libraries), the
 * handler also copies the registers and up to 16 KiB of stack above the
 * stack pointer into a second ring; the collector unwinds that snapshot
 * with DWARF call-frame information (unwind_dwarf.c) and keeps the longer
 * stack.  Copying is plain memory reads inside the thread's stack bounds.
 *
 * The handler finds its attachment through si_value (an index into a table
 * published before the timer is armed) and checks the thread id, so signals
 * it did not arm are ignored.  Stopping deletes the timers, sets SIGPROF to
 * SIG_IGN (which discards pending ones), waits for running handlers, then
 * restores the previous action.
 */
#include "diag/sampler_int.h"
#include "diag/symbolize.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* glibc before 2.35 names the thread-id member only through its union. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static _Atomic(df__diag_sampler *) handler_sampler; /* the sampler the handler serves */
static _Atomic int in_handler;                      /* handlers currently running */

/* The CPU-time clock of thread `tid` of this process (the kernel's thread-clock encoding). */
static clockid_t thread_cpu_clock(uint32_t tid) {
    return (clockid_t)((~(unsigned)tid) << 3) | 6; /* CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED */
}

/* Reads the interrupted PC, frame pointer and stack pointer. */
static bool read_regs(const ucontext_t *uc, uintptr_t *pc, uintptr_t *fp, uintptr_t *sp) {
#if defined(__x86_64__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    return true;
#elif defined(__aarch64__)
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
    *sp = (uintptr_t)uc->uc_mcontext.sp;
    return true;
#else
    (void)uc, (void)pc, (void)fp, (void)sp;
    return false;
#endif
}

/*
 * Walks the frame-pointer chain: each frame record is {saved fp, return
 * address} at fp.  A record must lie inside [lo, hi), be 8-aligned, and the
 * next one must be higher (stacks grow down), so a corrupt chain stops
 * instead of faulting.  Returns the frame count (pcs[0] = the exact PC).
 */
static uint32_t walk_frames(uintptr_t pc, uintptr_t fp, uintptr_t lo, uintptr_t hi, uint64_t *pcs,
                            uint32_t *unwind_error) {
    uint32_t n = 0;
    pcs[n++] = pc;
    if (!hi) {
        *unwind_error = 1; /* no known stack bounds: leaf only */
        return n;
    }
    while (n < DF_DIAG_MAX_FRAMES) {
        if (fp < lo || fp > hi - 16 || (fp & 7) != 0) break;
        const uintptr_t *rec = (const uintptr_t *)fp;
        uintptr_t next = rec[0], ret = rec[1];
        if (ret < 4096) break;
        pcs[n++] = ret;
        if (next <= fp) break;
        lo = fp + 16;
        fp = next;
    }
    return n;
}

/*
 * Copies n bytes (a multiple of 8) of the live stack.  Word by word through
 * volatile reads, so it is never turned into a memcpy call (an intercepted
 * one under sanitizers), and without sanitizer checks: the stack's
 * redzones are poisoned by design, and reading them is the point; and the
 * copy races by design with other threads writing objects that live on
 * this stack (a task group a worker updates), which is harmless since the
 * unwinder reads only return addresses and saved registers from it.
 */
__attribute__((no_sanitize("address", "thread"))) static void copy_stack(uint8_t *dst, uintptr_t src, size_t n) {
    const volatile uint64_t *from = (const volatile uint64_t *)src;
    uint64_t *to = (uint64_t *)(void *)dst;
    for (size_t i = 0; i < n / 8; i++) to[i] = from[i];
}

/* Copies the registers and the top of the stack for DWARF unwinding; returns 1 + its sequence or 0. */
static uint64_t take_snapshot(df__diag_attach *a, const ucontext_t *uc, uintptr_t sp, uintptr_t hi) {
#if defined(__x86_64__)
    if (!a->snaps) return 0;
    uint64_t head = atomic_load_explicit(&a->snap_head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&a->snap_tail, memory_order_acquire);
    if (head - tail >= DF_DIAG_SNAPSHOTS) return 0; /* collector behind: keep the frame-pointer result */
    df__diag_snapshot *sn = &a->snaps[head % DF_DIAG_SNAPSHOTS];
    static const int map[DF_DIAG_UNWIND_REGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                                 REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                                 REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < DF_DIAG_UNWIND_REGS; i++) sn->regs[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
    size_t len = (hi - sp < DF_DIAG_SNAPSHOT_BYTES ? hi - sp : DF_DIAG_SNAPSHOT_BYTES) & ~(size_t)7;
    copy_stack(sn->stack, sp, len);
    sn->len = (uint32_t)len;
    atomic_store_explicit(&a->snap_head, head + 1, memory_order_release);
    return head + 1;
#else
    (void)a, (void)uc, (void)sp, (void)hi;
    return 0;
#endif
}

static void record_sample(df__diag_attach *a, const siginfo_t *si, const ucontext_t *uc) {
    uint64_t head = atomic_load_explicit(&a->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&a->tail, memory_order_acquire);
    if (head - tail > a->ring_mask) {
        atomic_fetch_add_explicit(&a->dropped, 1, memory_order_relaxed);
        return;
    }
    df__diag_ring_slot *slot = &a->ring[head & a->ring_mask];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    slot->ts = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    int cpu = sched_getcpu();
    slot->cpu = cpu >= 0 ? (uint32_t)cpu : UINT32_MAX;
    slot->weight = 1 + (si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0);
    slot->unwind_error = 0;
    slot->snap = 0;
    uintptr_t pc, fp, sp;
    if (!read_regs(uc, &pc, &fp, &sp)) {
        slot->nframes = 0;
        slot->unwind_error = 1;
    } else {
        const df_diag_thread *t = df__diag_thread_peek();
        uintptr_t hi = t && sp >= t->stack_lo && sp < t->stack_hi ? t->stack_hi : 0;
        if (!hi && sp >= a->stack_lo && sp < a->stack_hi) hi = a->stack_hi; /* main thread before its first span */
        slot->nframes = walk_frames(pc, fp, sp, hi, slot->pcs, &slot->unwind_error);
        if (slot->nframes <= 2 && hi && (sp & 7) == 0) slot->snap = take_snapshot(a, uc, sp, hi);
    }
    atomic_store_explicit(&a->head, head + 1, memory_order_release);
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    int saved_errno = errno;
    atomic_fetch_add(&in_handler, 1);
    df__diag_sampler *s = atomic_load(&handler_sampler);
    if (s && si && si->si_code == SI_TIMER && atomic_load_explicit(&s->running, memory_order_relaxed)) {
        unsigned idx = (unsigned)si->si_value.sival_int;
        df__diag_attach *a = idx < DF_DIAG_MAX_ATTACH ? atomic_load(&s->table[idx]) : NULL;
        if (a && a->tid == (uint32_t)syscall(SYS_gettid)) record_sample(a, si, ucv);
    }
    atomic_fetch_sub(&in_handler, 1);
    errno = saved_errno;
}

df_errkind df__diag_timer_check(char *reason, size_t reason_len, df_error *err) {
    struct sigaction cur;
    if (sigaction(DF_DIAG_TIMER_SIGNAL, NULL, &cur) != 0) {
        snprintf(reason, reason_len, "cannot read the SIGPROF action");
        DF_FAIL(err, DF_ERR_NOT_AVAILABLE, "timer sampler unavailable: %s", reason);
    }
    bool custom = (cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction != NULL
                                              : (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN);
    if (custom || atomic_load(&handler_sampler)) {
        snprintf(reason, reason_len, "SIGPROF already has a handler in this process");
        DF_FAIL(err, DF_ERR_NOT_AVAILABLE, "timer sampler unavailable: %s", reason);
    }
    struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = DF_DIAG_TIMER_SIGNAL};
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    timer_t t;
    if (timer_create(thread_cpu_clock((uint32_t)syscall(SYS_gettid)), &sev, &t) != 0) {
        int e = errno;
        snprintf(reason, reason_len, "timer_create(thread CPU clock) failed: %s", strerror(e));
        df_errkind k = df_error_set(err, DF_ERR_NOT_AVAILABLE, "timer sampler unavailable: %s", reason);
        df_error_set_code(err, e);
        return k;
    }
    timer_delete(t);
    return DF_OK;
}

df_errkind df__diag_timer_install(df__diag_sampler *s, df_error *err) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    atomic_store(&handler_sampler, s);
    if (sigaction(DF_DIAG_TIMER_SIGNAL, &sa, &s->old_action) != 0) {
        atomic_store(&handler_sampler, NULL);
        df_errkind k = df_error_set(err, DF_ERR_NOT_AVAILABLE, "cannot install the SIGPROF handler");
        df_error_set_code(err, errno);
        return k;
    }
    s->handler_installed = true;
    return DF_OK;
}

void df__diag_timer_uninstall(df__diag_sampler *s) {
    if (!s->handler_installed) return;
    atomic_store(&handler_sampler, NULL);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(DF_DIAG_TIMER_SIGNAL, &ign, NULL); /* discards pending SIGPROFs */
    while (atomic_load(&in_handler) != 0) sched_yield();
    sigaction(DF_DIAG_TIMER_SIGNAL, &s->old_action, NULL);
    s->handler_installed = false;
}

/* Bounds of the process's initial stack ("[stack]" in /proc/self/maps), for the main thread. */
static void main_stack_bounds(df__diag_attach *a) {
    df__diag_map *maps = NULL;
    size_t n = 0;
    df_error err = {0};
    if (df__diag_maps_read_self(&maps, &n, &err) != DF_OK) {
        df_error_clear(&err);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(maps[i].path, "[stack]") == 0) {
            a->stack_lo = (uintptr_t)maps[i].start;
            a->stack_hi = (uintptr_t)maps[i].end;
        }
    df__diag_maps_free(maps, n);
}

bool df__diag_timer_attach(df__diag_sampler *s, df__diag_attach *a) {
    if (s->ntable >= DF_DIAG_MAX_ATTACH) return false;
    if (a->tid == (uint32_t)getpid()) main_stack_bounds(a);
    a->ring = df_calloc(s->ring_slots, sizeof *a->ring);
    if (!a->ring) return false;
    if (df__diag_unwinder_available()) a->snaps = df_calloc(DF_DIAG_SNAPSHOTS, sizeof *a->snaps); /* optional */
    a->ring_mask = s->ring_slots - 1;
    a->slot = s->ntable;
    struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = DF_DIAG_TIMER_SIGNAL};
    sev.sigev_value.sival_int = (int)a->slot;
    sev.sigev_notify_thread_id = (pid_t)a->tid;
    if (timer_create(thread_cpu_clock(a->tid), &sev, &a->timer) != 0) return false; /* thread gone */
    a->has_timer = true;
    atomic_store(&s->table[a->slot], a);
    s->ntable++;
    /* Stagger the first expiry so threads that start together do not fire in lockstep. */
    uint64_t first = s->period_ns / 2 + (df_hash_u64(a->tid) % (s->period_ns / 2 + 1));
    struct itimerspec its = {
        .it_interval = {(time_t)(s->period_ns / 1000000000ULL), (long)(s->period_ns % 1000000000ULL)},
        .it_value = {(time_t)(first / 1000000000ULL), (long)(first % 1000000000ULL)},
    };
    if (timer_settime(a->timer, 0, &its, NULL) != 0) {
        df__diag_timer_detach(a);
        return true; /* the table slot stays used; nothing will be recorded */
    }
    return true;
}

void df__diag_timer_detach(df__diag_attach *a) {
    if (!a->has_timer) return;
    timer_delete(a->timer);
    a->has_timer = false;
}

/* Replaces a frame-pointer stack by the DWARF unwinding of its snapshot when that is longer. */
static uint32_t unwind_snapshot(df__diag_sampler *s, df__diag_attach *a, const df__diag_ring_slot *slot,
                                uint64_t *pcs, bool *unwind_error) {
    df__diag_snapshot *sn = &a->snaps[(slot->snap - 1) % DF_DIAG_SNAPSHOTS];
    uint32_t n = 0;
    if (!s->unwinder && !s->unwinder_failed) {
        df_error err = {0};
        if (df__diag_unwinder_create(&s->unwinder, &err) != DF_OK) s->unwinder_failed = true;
        df_error_clear(&err);
    }
    if (s->unwinder) n = df__diag_unwind(s->unwinder, a->tid, sn->regs, sn->stack, sn->len, pcs, DF_DIAG_MAX_FRAMES);
    atomic_store_explicit(&a->snap_tail, slot->snap, memory_order_release);
    if (n <= slot->nframes) return 0;
    s->dwarf_unwound++;
    *unwind_error = false;
    return n;
}

df_errkind df__diag_timer_drain(df__diag_sampler *s, df__diag_attach *a, struct df__diag_writer *w, df_error *err) {
    if (!a->ring) return DF_OK;
    uint64_t tail = atomic_load_explicit(&a->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&a->head, memory_order_acquire);
    df_errkind k = DF_OK;
    for (; tail != head && k == DF_OK; tail++) {
        const df__diag_ring_slot *slot = &a->ring[tail & a->ring_mask];
        df__diag_sample smp = {
            .ts = slot->ts,
            .tid = a->tid,
            .cpu = slot->cpu,
            .weight = slot->weight,
            .nframes = DF_MIN(slot->nframes, (uint32_t)DF_DIAG_MAX_FRAMES),
            .unwind_error = slot->unwind_error != 0,
            .pcs = slot->pcs,
        };
        if (slot->snap && a->snaps) {
            uint32_t n = unwind_snapshot(s, a, slot, s->pcs, &smp.unwind_error);
            if (n) {
                smp.nframes = n;
                smp.pcs = s->pcs;
            }
        }
        k = df__diag_sampler_emit(s, &smp, w, err);
    }
    atomic_store_explicit(&a->tail, tail, memory_order_release);
    s->lost += atomic_exchange_explicit(&a->dropped, 0, memory_order_relaxed);
    return k;
}
