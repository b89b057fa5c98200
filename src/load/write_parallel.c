/*
 * Parallel bulk loading: N connections each run one INSERT BULK ... WITH
 * (TABLOCK) into the same staging heap (bulk-update locks are compatible,
 * so SQL Server loads them concurrently).  The writer's thread keeps
 * polling the query stream and hands batches to N worker threads through
 * one bounded queue; each worker encodes and sends on its own connection.
 *
 * Only staging tables are loaded this way (create_and_load and replace), so
 * atomicity is unchanged: the target still appears in one swap.  The first
 * worker error stops everyone; the caller aborts the pool and drops the
 * staging table.
 *
 * Diagnostics: the writer hands its current span's identity to the pool
 * (df__wpool_enter: "Stream and write batches", later "Finalize SQL Server
 * writer"); each worker enters the newest one before its next batch or its
 * final flush, so the CPU of encoding and sending is attributed to the
 * stage the writer is in, on the output's owner track.
 */
#include "load/write_int.h"

#include "diag/diag.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define QUEUE_CAP 8

typedef struct worker {
    struct df_wpool *pool;           /* back pointer */
    df_mssql_conn *conn;             /* its connection (worker 0: borrowed from the writer) */
    bool own_conn;                   /* conn is owned by the pool */
    df_mssql_bulk *bulk;             /* its open bulk load, NULL once finished/aborted */
    pthread_t thread;                /* the worker thread */
    bool started;                    /* thread was created */
    int64_t rows;                    /* rows sent */
    int64_t server_rows;             /* rows the server reported when the load finished */
    bool finished;                   /* the load was finished by the worker */
} worker;

struct df_wpool {
    pthread_mutex_t mu;              /* guards the queue and the flags */
    pthread_cond_t not_empty;        /* a batch arrived or the queue closed */
    pthread_cond_t not_full;         /* a slot freed or a worker failed */
    df_batch *queue[QUEUE_CAP];      /* ring of retained batches */
    int head, count;                 /* ring position and fill */
    bool closed;                     /* no more batches */
    bool failed;                     /* a worker failed: stop */
    df_error error;                  /* the first worker error */
    _Atomic int64_t bytes;           /* payload bytes sent by all workers */
    df_diag_context ctx;             /* identity the workers work for (diagnostics), guarded by mu */
    uint64_t ctx_gen;                /* bumped on each df__wpool_enter */
    int nworkers;                    /* workers */
    worker *w;                       /* owned array */
};

/* Records the first failure and wakes everyone. */
static void worker_fail(df_wpool *p, df_error *err) {
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        df_error_move(&p->error, err);
    }
    pthread_cond_broadcast(&p->not_empty);
    pthread_cond_broadcast(&p->not_full);
    pthread_mutex_unlock(&p->mu);
    df_error_clear(err);
}

/*
 * Ends this worker's load.  Every worker finishes its own load concurrently:
 * a server may make one load's end wait for another's (it commits them one
 * at a time), so finishing them one after the other from a single thread
 * could wait forever.
 */
static void finish_load(worker *w) {
    df_error err;
    memset(&err, 0, sizeof err);
    df_mssql_bulk *b = w->bulk;
    w->bulk = NULL;
    if (df_mssql_bulk_finish(b, &w->server_rows, &err) == DF_OK)
        w->finished = true;
    else
        worker_fail(w->pool, &err);
}

/* A worker's entered diagnostics context: re-entered when the writer moved on. mu held. */
typedef struct entered {
    uint64_t gen;     /* generation entered */
    df_diag_span span;/* the entered context span (empty when none) */
} entered;

static void follow_context(df_wpool *p, entered *e) {
    if (e->gen == p->ctx_gen) return;
    df_diag_context ctx = p->ctx;
    e->gen = p->ctx_gen;
    df_diag_span_end(e->span, DF_DIAG_RESULT_OK);
    e->span = df_diag_context_enter(&ctx);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    df_wpool *p = w->pool;
    entered ent = {0, DF_DIAG_SPAN_NONE};
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->count == 0 && !p->closed && !p->failed) pthread_cond_wait(&p->not_empty, &p->mu);
        follow_context(p, &ent);
        if (p->failed || p->count == 0) {
            bool done = !p->failed;
            pthread_mutex_unlock(&p->mu);
            if (done) finish_load(w);
            df_diag_span_end(ent.span, done ? DF_DIAG_RESULT_OK : DF_DIAG_RESULT_ERROR);
            return NULL;
        }
        df_batch *b = p->queue[p->head];
        p->head = (p->head + 1) % QUEUE_CAP;
        p->count--;
        pthread_cond_signal(&p->not_full);
        pthread_mutex_unlock(&p->mu);
        df_error err;
        memset(&err, 0, sizeof err);
        uint64_t before = df_mssql_bulk_bytes(w->bulk);
        df_errkind k = df_mssql_bulk_write(w->bulk, b, &err);
        if (k == DF_OK) {
            w->rows += b->nrows;
            atomic_fetch_add_explicit(&p->bytes, (int64_t)(df_mssql_bulk_bytes(w->bulk) - before), memory_order_relaxed);
        }
        df_batch_release(b);
        if (k != DF_OK) {
            worker_fail(p, &err);
            df_diag_span_end(ent.span, DF_DIAG_RESULT_ERROR);
            return NULL;
        }
    }
}

void df__wpool_enter(df_wpool *p) {
    if (!p) return;
    df_diag_context ctx = df_diag_context_capture();
    pthread_mutex_lock(&p->mu);
    p->ctx = ctx;
    p->ctx_gen++;
    pthread_mutex_unlock(&p->mu);
}

df_errkind df__wpool_start(df_mssql_conn *conn0, df_mssql_bulk *bulk0, const char *conn_str, int n, const char *table,
                           const df_mssql_column *cols, int32_t ncols, const df_mssql_bulk_options *bo, df_wpool **out,
                           df_error *err) {
    *out = NULL;
    df_wpool *p = df_calloc(1, sizeof *p);
    if (!p) return DF_OOM(err);
    p->w = df_calloc((size_t)n, sizeof *p->w);
    if (!p->w) {
        df_free(p);
        return DF_OOM(err);
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    pthread_cond_init(&p->not_full, NULL);
    p->nworkers = n;
    p->w[0].conn = conn0;
    p->w[0].bulk = bulk0;
    df_errkind k = DF_OK;
    for (int i = 0; i < n; i++) {
        worker *w = &p->w[i];
        w->pool = p;
        if (i > 0 && k == DF_OK) {
            k = df_mssql_connect_string(conn_str, &w->conn, err);
            w->own_conn = w->conn != NULL;
            if (k == DF_OK) k = df_mssql_bulk_begin(w->conn, table, cols, ncols, bo, &w->bulk, err);
        }
    }
    for (int i = 0; k == DF_OK && i < n; i++) {
        if (pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i]) != 0) {
            k = df_error_set(err, DF_ERR_INTERNAL, "cannot start a bulk load thread");
            break;
        }
        p->w[i].started = true;
    }
    *out = p;
    return k; /* on failure the caller aborts the pool */
}

df_errkind df__wpool_push(df_wpool *p, df_batch *b, df_error *err) {
    pthread_mutex_lock(&p->mu);
    while (p->count == QUEUE_CAP && !p->failed) pthread_cond_wait(&p->not_full, &p->mu);
    if (p->failed) {
        if (err) {
            df_error_clear(err);
            df_error_set(err, p->error.kind, "%s", p->error.message);
            df_error_set_code(err, p->error.code);
            df_error_set_offset(err, p->error.offset);
            df_error_set_subkind(err, p->error.subkind); /* what the writer classifies by */
        }
        df_errkind k = p->error.kind;
        pthread_mutex_unlock(&p->mu);
        return k;
    }
    p->queue[(p->head + p->count) % QUEUE_CAP] = df_batch_retain(b);
    p->count++;
    pthread_cond_signal(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    return DF_OK;
}

/* Closes the queue and joins the workers (they drain it unless one failed). */
static void join(df_wpool *p) {
    pthread_mutex_lock(&p->mu);
    p->closed = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        if (p->w[i].started) {
            pthread_join(p->w[i].thread, NULL);
            p->w[i].started = false;
        }
}

/* Frees the joined pool; `discard`: drop the open loads at once instead of ending them (df_mssql_bulk_discard). */
static void pool_free(df_wpool *p, bool discard) {
    for (int i = 0; i < p->nworkers; i++) {
        if (discard) df_mssql_bulk_discard(p->w[i].bulk);
        else df_mssql_bulk_abort(p->w[i].bulk);
        if (p->w[i].own_conn) df_mssql_close(p->w[i].conn);
    }
    while (p->count) {
        df_batch_release(p->queue[p->head]);
        p->head = (p->head + 1) % QUEUE_CAP;
        p->count--;
    }
    df_error_clear(&p->error);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_empty);
    pthread_cond_destroy(&p->not_full);
    df_free(p->w);
    df_free(p);
}

/*
 * Joins the workers after the queue was closed; once *cancel is set the
 * sockets are shut so that workers waiting for a busy server to take the
 * rows already sent (megabytes sit in socket buffers) fail at once.
 */
static void join_cancellable(df_wpool *p, const _Atomic bool *cancel) {
    pthread_mutex_lock(&p->mu);
    p->closed = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    bool shut = false;
    for (int i = 0; i < p->nworkers; i++) {
        if (!p->w[i].started) continue;
        for (;;) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (pthread_timedjoin_np(p->w[i].thread, NULL, &ts) != ETIMEDOUT) break;
            if (!shut && cancel && atomic_load(cancel)) {
                for (int j = 0; j < p->nworkers; j++) df_mssql_shutdown(p->w[j].conn);
                shut = true;
            }
        }
        p->w[i].started = false;
    }
}

df_errkind df__wpool_finish(df_wpool *p, const _Atomic bool *cancel, int64_t *rows, df_error *err) {
    join_cancellable(p, cancel); /* the workers drain the queue and finish their loads */
    df_errkind k = DF_OK;
    *rows = 0;
    if (p->failed) {
        df_error_set(err, p->error.kind, "%s", p->error.message);
        df_error_set_code(err, p->error.code);
        df_error_set_subkind(err, p->error.subkind);
        k = p->error.kind;
    }
    for (int i = 0; k == DF_OK && i < p->nworkers; i++) *rows += p->w[i].server_rows;
    pool_free(p, false);
    return k;
}

void df__wpool_abort(df_wpool *p) { df__wpool_stop(p, false); }

void df__wpool_stop(df_wpool *p, bool discard) {
    if (!p) return;
    /* Discarding: shut the sockets first, so workers blocked sending to a busy server fail instead of waiting. */
    for (int i = 0; discard && i < p->nworkers; i++) df_mssql_shutdown(p->w[i].conn);
    pthread_mutex_lock(&p->mu);
    p->failed = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_cond_broadcast(&p->not_full);
    pthread_mutex_unlock(&p->mu);
    join(p);
    pool_free(p, discard);
}

int64_t df__wpool_bytes(df_wpool *p) { return atomic_load_explicit(&p->bytes, memory_order_relaxed); }
