/*
 * Exchanges: running the partitions of an input on worker threads and
 * handing their batches to one consumer.
 *
 * The transfer component (df__xfer) is shared by CoalescePartitionsExec
 * (batches in arrival order from one shared queue) and
 * SortPreservingMergeExec (one queue per partition, popped by partition).
 * On first use the consumer submits one task per input partition to the
 * execution's thread pool.  A task opens its partition and pushes batches
 * into a bounded queue (QUEUE_DEPTH batches per producer), waiting while it
 * is full.  The depth absorbs the consumer's wake-up latency: on a busy
 * machine the consumer may wait a scheduler slice before it runs, and with
 * two slots per producer the producers stalled for that time.  Every
 * blocking wait gives back the CPU token (exec_ctx.c), so
 * target_partitions bounds the threads that compute, not the ones that
 * wait.
 *
 * Termination.  A producer that fails records the first error and sets
 * `stop`; a real error replaces an earlier "cancelled" (which may just be
 * its echo elsewhere).  The consumer returns it.  Freeing the transfer
 * early (LIMIT reached, stream dropped) sets `stop`, wakes producers
 * waiting for space, waits for every task to finish and releases what is
 * left in the queues: nothing leaks and no thread outlives the operator.
 *
 * Without a pool (more exchange inputs than the plan may start threads
 * for) the transfer opens the partitions in the consumer's thread and
 * pulls them directly: slower, never deadlocked.
 */
#include "exec/exec_int.h"

/* Batches a producer may have queued ahead of the consumer. */
#define QUEUE_DEPTH 4

typedef struct xfer_queue {
    df_batch **items;       /* ring buffer */
    int32_t cap, head, len;
    bool done;              /* its producer finished (per-partition mode) */
} xfer_queue;

typedef struct producer {
    df__xfer *x;            /* owning transfer */
    int32_t partition;      /* input partition it runs */
} producer;

struct df__xfer {
    df_pnode *input;        /* input node */
    df_exec_ctx *ctx;       /* execution */
    df_op *owner;           /* consumer operator (parent of sequential children) */
    int32_t nparts;         /* input partitions */
    bool per_partition;     /* one queue per partition */
    bool started;           /* tasks submitted / children opened */
    bool sequential;        /* no pool: run inputs in the consumer's thread */
    df_op **seq;            /* sequential mode: open children per partition */
    int32_t seq_cur;        /* sequential coalesce: current partition */
    pthread_mutex_t mu;     /* guards everything below */
    pthread_cond_t cv_consumer;  /* data or completion */
    pthread_cond_t cv_producer;  /* space or stop */
    xfer_queue *queues;     /* 1 (shared) or nparts */
    int32_t active;         /* producers still running */
    bool stop;              /* consumer gone or a producer failed */
    df_errkind failed;      /* first failure */
    df_error error;         /* its details */
    df_task_group group;    /* producer tasks */
    producer *producers;    /* task arguments */
};

/* Waits on cv while giving the CPU token back. */
static void blocking_wait(df_exec_ctx *ctx, pthread_cond_t *cv, pthread_mutex_t *mu) {
    df__exec_token_release(ctx);
    pthread_cond_wait(cv, mu);
    pthread_mutex_unlock(mu);
    df__exec_token_acquire(ctx);
    pthread_mutex_lock(mu);
}

static void record_error(df__xfer *x, df_errkind k, df_error *e) {
    pthread_mutex_lock(&x->mu);
    if (!x->failed || (x->failed == DF_ERR_CANCELLED && k != DF_ERR_CANCELLED)) {
        x->failed = k;
        df_error_move(&x->error, e);
    }
    x->stop = true;
    pthread_cond_broadcast(&x->cv_consumer);
    pthread_cond_broadcast(&x->cv_producer);
    pthread_mutex_unlock(&x->mu);
    if (k != DF_ERR_CANCELLED) atomic_store_explicit(&x->ctx->cancel, true, memory_order_relaxed);
}

static void produce(void *arg) {
    producer *pr = arg;
    df__xfer *x = pr->x;
    df_exec_ctx *ctx = x->ctx;
    xfer_queue *q = &x->queues[x->per_partition ? pr->partition : 0];
    df_error err;
    memset(&err, 0, sizeof err);
    df_error_clear(&err);
    df__exec_token_acquire(ctx);
    /* A partition task: this pool thread works on a runtime worker lane of the query until it returns. */
    df_diag_span task = df_diag_task_begin(ctx->dq, pr->partition);
    df_op *child = NULL;
    df_errkind k = df_pnode_open(x->input, ctx, pr->partition, NULL, &child, &err);
    while (!k) {
        pthread_mutex_lock(&x->mu);
        bool stop = x->stop;
        pthread_mutex_unlock(&x->mu);
        if (stop) break;
        df_batch *b = NULL;
        k = df_op_next(child, &b, &err);
        if (k || !b) break;
        pthread_mutex_lock(&x->mu);
        while (q->len == q->cap && !x->stop) blocking_wait(ctx, &x->cv_producer, &x->mu);
        if (x->stop) {
            pthread_mutex_unlock(&x->mu);
            df_batch_release(b);
            break;
        }
        q->items[(q->head + q->len) % q->cap] = b;
        q->len++;
        pthread_cond_broadcast(&x->cv_consumer);
        pthread_mutex_unlock(&x->mu);
    }
    df_op_close(child);
    df_diag_span_end(task, k ? DF_DIAG_RESULT_ERROR : DF_DIAG_RESULT_OK);
    df__exec_token_release(ctx);
    if (k) record_error(x, k, &err);
    df_error_clear(&err);
    pthread_mutex_lock(&x->mu);
    if (x->per_partition) q->done = true;
    x->active--;
    pthread_cond_broadcast(&x->cv_consumer);
    pthread_mutex_unlock(&x->mu);
}

df_errkind df__xfer_new(df_pnode *input, df_exec_ctx *ctx, df_op *owner, bool per_partition, df__xfer **out,
                        df_error *err) {
    *out = NULL;
    df__xfer *x = df_calloc(1, sizeof *x);
    if (!x) return DF_OOM(err);
    x->input = input;
    x->ctx = ctx;
    x->owner = owner;
    x->nparts = input->partitions;
    x->per_partition = per_partition;
    df_error_clear(&x->error);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv_consumer, NULL);
    pthread_cond_init(&x->cv_producer, NULL);
    df_task_group_init(&x->group);
    *out = x;
    return DF_OK;
}

static df_errkind start(df__xfer *x, df_error *err) {
    x->started = true;
    if (!x->ctx->pool) {
        x->sequential = true;
        x->seq = df_calloc((size_t)x->nparts, sizeof(df_op *));
        return x->seq ? DF_OK : DF_OOM(err);
    }
    int32_t nq = x->per_partition ? x->nparts : 1;
    x->queues = df_calloc((size_t)nq, sizeof(xfer_queue));
    x->producers = df_calloc((size_t)x->nparts, sizeof(producer));
    if (!x->queues || !x->producers) return DF_OOM(err);
    for (int32_t i = 0; i < nq; i++) {
        x->queues[i].cap = x->per_partition ? QUEUE_DEPTH : QUEUE_DEPTH * x->nparts;
        x->queues[i].items = df_calloc((size_t)x->queues[i].cap, sizeof(df_batch *));
        if (!x->queues[i].items) return DF_OOM(err);
    }
    for (int32_t p = 0; p < x->nparts; p++) {
        x->producers[p] = (producer){.x = x, .partition = p};
        pthread_mutex_lock(&x->mu);
        x->active++;
        pthread_mutex_unlock(&x->mu);
        df_errkind k = df_thread_pool_submit(x->ctx->pool, &x->group, produce, &x->producers[p], err);
        if (k) {
            pthread_mutex_lock(&x->mu);
            x->active--;
            x->stop = true;
            pthread_cond_broadcast(&x->cv_producer);
            pthread_mutex_unlock(&x->mu);
            return k;
        }
    }
    return DF_OK;
}

/* Sequential mode: next batch of partition p (opening it on first use). */
static df_errkind seq_pull(df__xfer *x, int32_t p, df_batch **out, df_error *err) {
    *out = NULL;
    if (!x->seq[p]) DF_TRY(df_pnode_open(x->input, x->ctx, p, x->owner, &x->seq[p], err));
    DF_TRY(df_op_next(x->seq[p], out, err));
    if (!*out) {
        df_op_close(x->seq[p]);
        x->seq[p] = NULL;
    }
    return DF_OK;
}

static df_errkind take_error(df__xfer *x, df_error *err) {
    if (err) {
        df_error_clear(err);
        *err = x->error;
        err->context = x->error.context ? df_strdup(x->error.context) : NULL;
    }
    return x->failed;
}

df_errkind df__xfer_pop(df__xfer *x, int32_t partition, df_batch **out, df_error *err) {
    *out = NULL;
    if (!x->started) DF_TRY(start(x, err));
    if (x->sequential) {
        if (partition >= 0) return seq_pull(x, partition, out, err);
        while (x->seq_cur < x->nparts) {
            DF_TRY(seq_pull(x, x->seq_cur, out, err));
            if (*out) return DF_OK;
            x->seq_cur++;
        }
        return DF_OK;
    }
    df_op *owner = x->owner;
    uint64_t t0 = owner && owner->m ? df_now_ns() : 0;
    xfer_queue *q = &x->queues[x->per_partition ? partition : 0];
    pthread_mutex_lock(&x->mu);
    for (;;) {
        /* A "cancelled" failure waits for the others: one may hold the real error. */
        if (x->failed && (x->failed != DF_ERR_CANCELLED || x->active == 0)) break;
        if (!x->failed && q->len > 0) break;
        if (x->per_partition ? (q->done && q->len == 0) : (x->active == 0 && q->len == 0)) break;
        blocking_wait(x->ctx, &x->cv_consumer, &x->mu);
    }
    df_errkind k = DF_OK;
    if (x->failed) {
        k = take_error(x, err);
    } else if (q->len > 0) {
        *out = q->items[q->head];
        q->items[q->head] = NULL;
        q->head = (q->head + 1) % q->cap;
        q->len--;
        pthread_cond_broadcast(&x->cv_producer);
    }
    pthread_mutex_unlock(&x->mu);
    if (owner && owner->m) owner->child_ns += (int64_t)(df_now_ns() - t0); /* waiting is not compute */
    return k;
}

void df__xfer_free(df__xfer *x) {
    if (!x) return;
    if (x->seq) {
        for (int32_t p = 0; p < x->nparts; p++) df_op_close(x->seq[p]);
        df_free(x->seq);
    }
    if (x->started && !x->sequential) {
        pthread_mutex_lock(&x->mu);
        x->stop = true;
        pthread_cond_broadcast(&x->cv_producer);
        pthread_mutex_unlock(&x->mu);
        df__exec_token_release(x->ctx);
        df_task_group_wait(x->ctx->pool, &x->group);
        df__exec_token_acquire(x->ctx);
    }
    if (x->queues) {
        int32_t nq = x->per_partition ? x->nparts : 1;
        for (int32_t i = 0; i < nq; i++) {
            xfer_queue *q = &x->queues[i];
            for (int32_t j = 0; j < q->len; j++) df_batch_release(q->items[(q->head + j) % q->cap]);
            df_free(q->items);
        }
        df_free(x->queues);
    }
    df_free(x->producers);
    df_error_clear(&x->error);
    df_task_group_destroy(&x->group);
    pthread_cond_destroy(&x->cv_consumer);
    pthread_cond_destroy(&x->cv_producer);
    pthread_mutex_destroy(&x->mu);
    df_free(x);
}

/* ------------------------------------------------------------------------ */
/* CoalescePartitionsExec                                                    */

typedef struct coalesce_op {
    df_op base;
    df__xfer *x;            /* transfer from the input partitions */
} coalesce_op;

static df_errkind coalesce_next(df_op *op, df_batch **out, df_error *err) {
    return df__xfer_pop(((coalesce_op *)op)->x, -1, out, err);
}

static void coalesce_close(df_op *op) {
    coalesce_op *c = (coalesce_op *)op;
    df__xfer_free(c->x);
    df_free(c);
}

static const df_op_vt coalesce_op_vt = {coalesce_next, coalesce_close};

static df_errkind coalesce_open(df_pnode *n, df_exec_ctx *ctx, int32_t p, df_op *parent, df_op **out,
                                df_error *err) {
    coalesce_op *c = df_calloc(1, sizeof *c);
    if (!c) return DF_OOM(err);
    df__op_init(&c->base, &coalesce_op_vt, n, ctx, p);
    c->base.parent = parent;
    df_errkind k = df__xfer_new(n->inputs[0], ctx, &c->base, false, &c->x, err);
    if (k) {
        df_free(c);
        return k;
    }
    *out = &c->base;
    return DF_OK;
}

static const df_pnode_vt coalesce_vt = {"CoalescePartitionsExec", coalesce_open, NULL, NULL};

df_errkind df__op_coalesce_new(df_pnode *input, df_pnode **out, df_error *err) {
    *out = NULL;
    df_pnode *n = NULL;
    df_errkind k = df__pnode_new(&coalesce_vt, input->schema, 1, 1, &n, err);
    if (k) {
        df__pnode_free(input);
        return k;
    }
    n->inputs[0] = input;
    *out = n;
    return DF_OK;
}

bool df__is_exchange(const df_pnode *n) { return n->vt == &coalesce_vt; }
