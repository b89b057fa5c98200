/*
 * Cancelling a write while SQL Server is busy.
 *
 * The batch loop polls df_write_options.cancel between batches, and the
 * query stops by itself (the executor polls the same flag).  What neither
 * sees is a statement SQL Server is still running: the target count,
 * finalizing the bulk load, validation.  A watcher thread covers those: while
 * the load runs it polls the caller's flag and, once it is set, asks the
 * load's connection to cancel (df_mssql_cancel: the waiting call sends
 * ATTENTION and returns DF_ERR_CANCELLED once the server acknowledged).  The
 * client clears a connection's cancel request when a statement starts, so
 * the watcher repeats it every poll until it is stopped.  While a bulk load
 * streams on the connection ATTENTION would queue behind every row already
 * sent (megabytes in socket buffers), so then the watcher shuts the socket
 * instead; cleanup reconnects, as after any lost connection.  It is stopped
 * before the swap (a publish is not interrupted halfway) and before cleanup
 * (which must run its ROLLBACK and DROP on the same connection).
 */
#include "load/write_run_int.h"

#include <errno.h>
#include <time.h>

/* How often the watcher looks at the caller's flag. */
#define WATCH_NS 10000000L

static void *watch_main(void *arg) {
    df__wcancel *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (atomic_load_explicit(w->flag, memory_order_relaxed) && w->conn) {
            if (w->bulk) df_mssql_shutdown(w->conn);
            else df_mssql_cancel(w->conn);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += WATCH_NS;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void df__wcancel_start(df__wcancel *w, const _Atomic bool *flag) {
    memset(w, 0, sizeof *w);
    if (!flag) return;
    w->flag = flag;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, watch_main, w) != 0) {
        /* Without the watcher only statements in flight go uncancelled; the batch loop still stops. */
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        w->flag = NULL;
        return;
    }
    w->running = true;
}

void df__wcancel_watch(df__wcancel *w, df_mssql_conn *conn) {
    if (!w->running) return;
    pthread_mutex_lock(&w->mu);
    w->conn = conn;
    pthread_mutex_unlock(&w->mu);
}

void df__wcancel_bulk(df__wcancel *w, bool bulk) {
    if (!w->running) return;
    pthread_mutex_lock(&w->mu);
    w->bulk = bulk;
    pthread_mutex_unlock(&w->mu);
}

void df__wcancel_stop(df__wcancel *w) {
    if (!w->running) return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->running = false;
}

bool df__wrun_cancelled(const df_wrun *r) {
    return r->opts->cancel && atomic_load_explicit(r->opts->cancel, memory_order_relaxed);
}
