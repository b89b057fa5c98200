/*
 * A fixed pool of worker threads and task groups.
 *
 * The executor runs one task per partition; a task group lets the submitter
 * wait for a set of tasks.  Tasks never block on other tasks of the same
 * group while holding a worker (the submitter helps by running queued tasks
 * itself while it waits), so a pool of any size cannot deadlock on a group.
 */
#ifndef DF_COMMON_THREAD_POOL_H
#define DF_COMMON_THREAD_POOL_H

#include <pthread.h>

#include "common/common.h"

typedef struct df_thread_pool df_thread_pool;
typedef void (*df_task_fn)(void *arg);

typedef struct df_task_group {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    int pending;            /* submitted and not finished */
} df_task_group;

/* Creates `nthreads` workers (>= 1) named "<name>-<i>" (truncated to 15 bytes). */
df_errkind df_thread_pool_create(int nthreads, const char *name, df_thread_pool **out, df_error *err);
/* Waits for queued tasks, joins the workers and frees the pool.  Accepts NULL. */
void df_thread_pool_destroy(df_thread_pool *pool);
int df_thread_pool_size(const df_thread_pool *pool);

void df_task_group_init(df_task_group *g);
void df_task_group_destroy(df_task_group *g);
/* Queues fn(arg) as part of group g.  Fails only when out of memory. */
df_errkind df_thread_pool_submit(df_thread_pool *pool, df_task_group *g, df_task_fn fn, void *arg, df_error *err);
/* Returns when every task of g has finished; runs queued tasks meanwhile. */
void df_task_group_wait(df_thread_pool *pool, df_task_group *g);

/* The number of CPUs this process may run on (>= 1). */
int df_cpu_count(void);

#endif
