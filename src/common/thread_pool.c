/*
 * Thread pool: one FIFO queue guarded by a mutex.  Partition tasks are
 * coarse (a whole scan partition), so a single queue is not a bottleneck.
 */
#include "common/thread_pool.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

typedef struct task {
    struct task *next;
    df_task_fn fn;
    void *arg;
    df_task_group *group;
} task;

struct df_thread_pool {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    task *head, *tail;      /* queued tasks */
    bool stopping;
    int nthreads;
    pthread_t *threads;
};

static task *pop_locked(df_thread_pool *pool) {
    task *t = pool->head;
    if (t) {
        pool->head = t->next;
        if (!pool->head) pool->tail = NULL;
    }
    return t;
}

static void run_task(task *t) {
    df_task_group *g = t->group;
    t->fn(t->arg);
    df_free(t);
    pthread_mutex_lock(&g->mu);
    if (--g->pending == 0) pthread_cond_broadcast(&g->done_cv);
    pthread_mutex_unlock(&g->mu);
}

static void *worker_main(void *arg) {
    df_thread_pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->mu);
        while (!pool->head && !pool->stopping) pthread_cond_wait(&pool->work_cv, &pool->mu);
        task *t = pop_locked(pool);
        pthread_mutex_unlock(&pool->mu);
        if (!t) return NULL; /* stopping and drained */
        run_task(t);
    }
}

int df_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

df_errkind df_thread_pool_create(int nthreads, const char *name, df_thread_pool **out, df_error *err) {
    *out = NULL;
    if (nthreads < 1) nthreads = 1;
    df_thread_pool *pool = df_calloc(1, sizeof *pool);
    if (!pool) return DF_OOM(err);
    pool->threads = df_calloc((size_t)nthreads, sizeof(pthread_t));
    if (!pool->threads) {
        df_free(pool);
        return DF_OOM(err);
    }
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->work_cv, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
            pool->nthreads = i;
            df_thread_pool_destroy(pool);
            return df_error_set(err, DF_ERR_INTERNAL, "cannot start worker thread %d", i);
        }
        char tname[32];
        snprintf(tname, sizeof tname, "%.10s-%d", name ? name : "df", i % 1000);
        tname[15] = '\0'; /* the kernel limit for thread names */
        pthread_setname_np(pool->threads[i], tname);
        pool->nthreads = i + 1;
    }
    *out = pool;
    return DF_OK;
}

void df_thread_pool_destroy(df_thread_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->nthreads; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->work_cv);
    df_free(pool->threads);
    df_free(pool);
}

int df_thread_pool_size(const df_thread_pool *pool) { return pool ? pool->nthreads : 0; }

void df_task_group_init(df_task_group *g) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->done_cv, NULL);
    g->pending = 0;
}

void df_task_group_destroy(df_task_group *g) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->done_cv);
}

df_errkind df_thread_pool_submit(df_thread_pool *pool, df_task_group *g, df_task_fn fn, void *arg, df_error *err) {
    task *t = df_malloc(sizeof *t);
    if (!t) return DF_OOM(err);
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    t->group = g;
    pthread_mutex_lock(&g->mu);
    g->pending++;
    pthread_mutex_unlock(&g->mu);
    pthread_mutex_lock(&pool->mu);
    if (pool->tail)
        pool->tail->next = t;
    else
        pool->head = t;
    pool->tail = t;
    pthread_cond_signal(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);
    return DF_OK;
}

void df_task_group_wait(df_thread_pool *pool, df_task_group *g) {
    for (;;) {
        pthread_mutex_lock(&g->mu);
        bool done = g->pending == 0;
        pthread_mutex_unlock(&g->mu);
        if (done) return;
        /* Help: run a queued task of this group if there is one. */
        task *mine = NULL;
        pthread_mutex_lock(&pool->mu);
        for (task **pp = &pool->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
            if ((*pp)->group == g) {
                mine = *pp;
                *pp = mine->next;
                if (pool->tail == mine) pool->tail = prev;
                break;
            }
        }
        pthread_mutex_unlock(&pool->mu);
        if (mine) {
            run_task(mine);
            continue;
        }
        pthread_mutex_lock(&g->mu);
        while (g->pending > 0) pthread_cond_wait(&g->done_cv, &g->mu);
        pthread_mutex_unlock(&g->mu);
        return;
    }
}
