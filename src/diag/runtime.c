/*
 * The process-wide runtime of the diagnostics module: thread states (the
 * span stacks), the registry of threads, the pool of event chunks, span
 * serials, identity counters and the capture generation.
 *
 * Event flow.  A thread appends fixed-layout records to its current chunk
 * and publishes them by a release store of `committed`.  When the chunk is
 * full it is queued for the collector under the pool lock and a fresh chunk
 * is taken from the free list (or allocated while below the capture's
 * memory cap; past it records are dropped and counted).  The collector takes
 * the whole queue, reads each chunk, and puts it back on the free list.  At
 * the end of a capture it also reads the partially filled chunks threads
 * still hold (`read_pos` keeps it from reading a record twice).  Chunks are
 * never freed while a thread may hold them, so a thread racing with the end
 * of a capture writes into memory that stays valid; its late records carry
 * the old generation and are discarded.
 *
 * Generations.  Every capture gets a new generation number; 0 means "no
 * capture".  A record is written only when the operation's generation is the
 * current one, so nothing leaks from one capture into the next.
 *
 * Thread state lives in heap memory pointed to by an initial-exec TLS
 * pointer, which the sampler's signal handler may read safely.  A pthread
 * key destructor detaches the sampler, hands over the chunk and frees the
 * state when the thread exits.
 */
#include "diag/diag_int.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SERIAL_BLOCK 4096u

_Atomic int df__diag_capture_active;
_Atomic uint64_t df__diag_generation;
void (*_Atomic df__diag_thread_start_hook)(df_diag_thread *t);
void (*_Atomic df__diag_thread_exit_hook)(df_diag_thread *t);

static __thread df_diag_thread *tls_thread __attribute__((tls_model("initial-exec")));

static struct {
    pthread_once_t once;          /* key creation */
    pthread_key_t key;            /* thread-exit destructor */
    bool key_ok;                  /* the key exists */
    pthread_mutex_t reg_mu;       /* registry of threads (taken before pool_mu) */
    df_diag_thread *threads;      /* registered thread states */
    pthread_mutex_t pool_mu;      /* chunk queue, free list, generation changes */
    df_diag_chunk *queue_head;    /* full chunks waiting for the collector */
    df_diag_chunk *queue_tail;    /* last queued chunk */
    df_diag_chunk *free_list;     /* recycled chunks */
    size_t chunk_bytes;           /* bytes of chunks allocated (all generations) */
    size_t chunk_limit;           /* cap for the current generation */
    uint64_t last_generation;     /* last generation handed out */
    _Atomic uint64_t next_serial; /* span serial blocks */
    _Atomic uint64_t next_op;     /* operation ids, 0 = exhausted */
    _Atomic uint64_t next_scope;  /* capture scope ids, 0 = exhausted */
    _Atomic uint64_t next_context;/* profile_context_id */
    _Atomic uint64_t misuse;      /* ignored span-API misuses */
    _Atomic uint64_t overflow;    /* spans dropped for stack depth */
    _Atomic uint64_t lost;        /* records dropped for the memory cap */
    _Atomic int exhausted;        /* the cap was reached and no chunk was freed since */
} rt = {
    .once = PTHREAD_ONCE_INIT,
    .reg_mu = PTHREAD_MUTEX_INITIALIZER,
    .pool_mu = PTHREAD_MUTEX_INITIALIZER,
    .next_serial = 1,
    .next_op = 1,
    .next_scope = 1,
    .next_context = 1,
};

static void thread_exit(void *arg);

/*
 * In a child forked during a capture there is no collector and no sampler:
 * stop recording there (the parent's capture is unaffected).
 */
static void forked_child(void) {
    atomic_store(&df__diag_capture_active, 0);
    atomic_store(&df__diag_generation, 0);
}

static void make_key(void) {
    rt.key_ok = pthread_key_create(&rt.key, thread_exit) == 0;
    pthread_atfork(NULL, NULL, forked_child);
}

/* Records the calling thread's stack bounds for the unwinder (best effort). */
static void read_stack_bounds(df_diag_thread *t) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
        t->stack_lo = (uintptr_t)addr;
        t->stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

df_diag_thread *df__diag_thread_peek(void) { return tls_thread; }

df_diag_thread *df__diag_thread_get(void) {
    df_diag_thread *t = tls_thread;
    if (DF_LIKELY(t != NULL)) return t;
    pthread_once(&rt.once, make_key);
    if (!rt.key_ok) return NULL;
    t = df_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->tid = (uint32_t)syscall(SYS_gettid);
    read_stack_bounds(t);
    if (pthread_setspecific(rt.key, t) != 0) {
        df_free(t);
        return NULL;
    }
    pthread_mutex_lock(&rt.reg_mu);
    t->next = rt.threads;
    if (rt.threads) rt.threads->prev = t;
    rt.threads = t;
    pthread_mutex_unlock(&rt.reg_mu);
    tls_thread = t;
    void (*hook)(df_diag_thread *) = atomic_load(&df__diag_thread_start_hook);
    if (hook) hook(t);
    return t;
}

/* Puts a chunk the thread no longer uses where it belongs.  Pool lock held. */
static void release_chunk_locked(df_diag_chunk *c) {
    uint64_t gen = atomic_load_explicit(&df__diag_generation, memory_order_relaxed);
    uint32_t committed = atomic_load_explicit(&c->committed, memory_order_relaxed);
    if (gen != 0 && c->generation == gen && committed > c->read_pos) {
        c->next = NULL; /* queued: the collector reads it, then frees it to the list */
        if (rt.queue_tail)
            rt.queue_tail->next = c;
        else
            rt.queue_head = c;
        rt.queue_tail = c;
    } else {
        c->next = rt.free_list;
        rt.free_list = c;
    }
}

static void thread_exit(void *arg) {
    df_diag_thread *t = arg;
    tls_thread = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    void (*hook)(df_diag_thread *) = atomic_load(&df__diag_thread_exit_hook);
    if (hook) hook(t);
    pthread_mutex_lock(&rt.reg_mu);
    pthread_mutex_lock(&rt.pool_mu);
    if (t->chunk) release_chunk_locked(t->chunk);
    t->chunk = NULL;
    if (t->prev)
        t->prev->next = t->next;
    else
        rt.threads = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&rt.pool_mu);
    pthread_mutex_unlock(&rt.reg_mu);
    df_free(t);
}

uint64_t df__diag_serial(df_diag_thread *t) {
    if (DF_UNLIKELY(t->serial_next == t->serial_end)) {
        t->serial_next = atomic_fetch_add_explicit(&rt.next_serial, SERIAL_BLOCK, memory_order_relaxed);
        t->serial_end = t->serial_next + SERIAL_BLOCK;
    }
    return t->serial_next++;
}

/*
 * Slow path of df__diag_event_reserve: retires the current chunk and takes
 * one for generation `gen`.  Returns the record space or NULL (capture over,
 * or memory cap reached: counted as lost).
 */
static void *switch_chunk(df_diag_thread *t, uint64_t gen, size_t size) {
    if (t->chunk == NULL && atomic_load_explicit(&rt.exhausted, memory_order_relaxed)) {
        /* Losing records already: do not contend for the pool lock on every record. */
        atomic_fetch_add_explicit(&rt.lost, 1, memory_order_relaxed);
        return NULL;
    }
    pthread_mutex_lock(&rt.pool_mu);
    df_diag_chunk *c = t->chunk;
    t->chunk = NULL;
    uint64_t cur = atomic_load_explicit(&df__diag_generation, memory_order_relaxed);
    if (cur == 0 || cur != gen) {
        /* The capture ended (or a newer one started) meanwhile: drop the record. */
        if (c) release_chunk_locked(c);
        pthread_mutex_unlock(&rt.pool_mu);
        return NULL;
    }
    if (c && c->generation == gen) {
        release_chunk_locked(c); /* full: queue it */
        c = NULL;
    } /* else: a chunk of a finished generation, reused in place */
    if (!c && rt.free_list) {
        c = rt.free_list;
        rt.free_list = c->next;
    }
    if (!c && rt.chunk_bytes + DF_DIAG_CHUNK_BYTES <= rt.chunk_limit) {
        c = df_malloc(sizeof *c + DF_DIAG_CHUNK_BYTES);
        if (c) rt.chunk_bytes += DF_DIAG_CHUNK_BYTES;
    }
    if (!c) {
        atomic_store_explicit(&rt.exhausted, 1, memory_order_relaxed);
        pthread_mutex_unlock(&rt.pool_mu);
        atomic_fetch_add_explicit(&rt.lost, 1, memory_order_relaxed);
        return NULL;
    }
    c->next = NULL;
    c->generation = gen;
    c->tid = t->tid;
    c->read_pos = 0;
    c->cap = DF_DIAG_CHUNK_BYTES;
    atomic_store_explicit(&c->committed, 0, memory_order_relaxed);
    t->chunk = c;
    pthread_mutex_unlock(&rt.pool_mu);
    return size <= c->cap ? c->data : NULL;
}

void *df__diag_event_reserve(df_diag_thread *t, uint64_t gen, size_t size) {
    df_diag_chunk *c = t->chunk;
    if (DF_LIKELY(c != NULL && c->generation == gen)) {
        uint32_t used = atomic_load_explicit(&c->committed, memory_order_relaxed);
        if (DF_LIKELY(used + size <= c->cap)) return c->data + used;
    }
    return switch_chunk(t, gen, size);
}

void df__diag_event_commit(df_diag_thread *t, size_t size) {
    df_diag_chunk *c = t->chunk;
    uint32_t used = atomic_load_explicit(&c->committed, memory_order_relaxed);
    atomic_store_explicit(&c->committed, used + (uint32_t)size, memory_order_release);
}

void df__diag_count_misuse(void) { atomic_fetch_add_explicit(&rt.misuse, 1, memory_order_relaxed); }
void df__diag_count_overflow(void) { atomic_fetch_add_explicit(&rt.overflow, 1, memory_order_relaxed); }
uint64_t df__diag_events_lost(void) { return atomic_load(&rt.lost); }
uint64_t df_diag_misuse_count(void) { return atomic_load(&rt.misuse); }
uint64_t df_diag_stack_overflow_count(void) { return atomic_load(&rt.overflow); }

/* Hands out counter values from 1 up to `max`, then 0 forever (never wraps). */
static uint64_t next_id(_Atomic uint64_t *ctr, uint64_t max) {
    uint64_t v = atomic_load(ctr);
    do {
        if (v == 0 || v > max) return 0;
    } while (!atomic_compare_exchange_weak(ctr, &v, v == UINT64_MAX ? 0 : v + 1));
    return v;
}

uint64_t df__diag_next_operation_id(void) { return next_id(&rt.next_op, UINT64_MAX); }
uint64_t df__diag_next_scope_id(void) { return next_id(&rt.next_scope, (uint64_t)INT64_MAX); }
uint64_t df__diag_next_context_id(void) { return next_id(&rt.next_context, UINT64_MAX); }
void df__diag_set_next_operation_id(uint64_t next) { atomic_store(&rt.next_op, next); }

uint64_t df__diag_generation_begin(size_t buffer_bytes) {
    pthread_mutex_lock(&rt.pool_mu);
    uint64_t gen = ++rt.last_generation;
    rt.chunk_limit = buffer_bytes;
    atomic_store(&rt.lost, 0);
    atomic_store(&rt.exhausted, 0);
    atomic_store(&df__diag_generation, gen);
    atomic_store(&df__diag_capture_active, 1);
    pthread_mutex_unlock(&rt.pool_mu);
    return gen;
}

void df__diag_generation_end(void) {
    pthread_mutex_lock(&rt.pool_mu);
    atomic_store(&df__diag_capture_active, 0);
    atomic_store(&df__diag_generation, 0);
    pthread_mutex_unlock(&rt.pool_mu);
}

/* Reads the records of c from read_pos to the committed end and calls fn on each. */
static df_errkind read_chunk(df_diag_chunk *c, df_diag_record_fn fn, void *user, df_error *err) {
    uint32_t end = atomic_load_explicit(&c->committed, memory_order_acquire);
    if (end > c->cap) end = c->cap;
    while (c->read_pos + sizeof(df_diag_ev_head) <= end) {
        const df_diag_ev_head *h = (const df_diag_ev_head *)(c->data + c->read_pos);
        if (h->size < sizeof *h || h->size > end - c->read_pos || (h->size & 7) != 0) {
            c->read_pos = end; /* cannot happen with our writers; never read garbage */
            return df_error_set(err, DF_ERR_INTERNAL, "corrupt diagnostics event chunk");
        }
        c->read_pos += h->size;
        DF_TRY(fn(user, h, err));
    }
    return DF_OK;
}

/* Returns chunks of a drained list to the free list, trimming it when no capture runs. */
static void recycle(df_diag_chunk *list) {
    pthread_mutex_lock(&rt.pool_mu);
    if (list) atomic_store_explicit(&rt.exhausted, 0, memory_order_relaxed);
    while (list) {
        df_diag_chunk *next = list->next;
        list->next = rt.free_list;
        rt.free_list = list;
        list = next;
    }
    if (atomic_load(&df__diag_generation) == 0) {
        while (rt.free_list) {
            df_diag_chunk *c = rt.free_list;
            rt.free_list = c->next;
            rt.chunk_bytes -= DF_DIAG_CHUNK_BYTES;
            df_free(c);
        }
    }
    pthread_mutex_unlock(&rt.pool_mu);
}

static df_errkind drain_queue(uint64_t gen, df_diag_record_fn fn, void *user, df_error *err) {
    pthread_mutex_lock(&rt.pool_mu);
    df_diag_chunk *list = rt.queue_head;
    rt.queue_head = rt.queue_tail = NULL;
    pthread_mutex_unlock(&rt.pool_mu);
    df_errkind kind = DF_OK;
    for (df_diag_chunk *c = list; c && kind == DF_OK; c = c->next)
        if (c->generation == gen) kind = read_chunk(c, fn, user, err);
    recycle(list);
    return kind;
}

df_errkind df__diag_drain(uint64_t gen, bool live, df_diag_record_fn fn, void *user, df_error *err) {
    DF_TRY(drain_queue(gen, fn, user, err));
    if (!live) return DF_OK;
    df_errkind kind = DF_OK;
    pthread_mutex_lock(&rt.reg_mu);
    pthread_mutex_lock(&rt.pool_mu);
    for (df_diag_thread *t = rt.threads; t && kind == DF_OK; t = t->next)
        if (t->chunk && t->chunk->generation == gen) kind = read_chunk(t->chunk, fn, user, err);
    pthread_mutex_unlock(&rt.pool_mu);
    pthread_mutex_unlock(&rt.reg_mu);
    if (kind != DF_OK) return kind;
    return drain_queue(gen, fn, user, err);
}

void df__diag_threads_foreach(void (*fn)(df_diag_thread *t, void *user), void *user) {
    pthread_mutex_lock(&rt.reg_mu);
    for (df_diag_thread *t = rt.threads; t; t = t->next) fn(t, user);
    pthread_mutex_unlock(&rt.reg_mu);
}
