/*
 * Ctrl-C during native operations.
 *
 * Python runs signal handlers only on its main thread, between bytecodes:
 * a native call that runs for minutes with the GIL released would see
 * KeyboardInterrupt only when it returns.  So the main thread does not run
 * the call itself: a helper thread does, and the main thread waits for it
 * in short slices, calling PyErr_CheckSignals() between them.  When a
 * handler raises, the operation's cancel flag is set, the main thread
 * waits for the call to stop (the library polls the flag per batch and in
 * long loops) and the handler's exception is raised.
 *
 * Arrow streams get the same treatment per get_next: a stream made by
 * Table.__arrow_c_stream__ wraps the library's stream and, when pulled on
 * the main thread, runs the library's get_next on its own helper thread.
 * Consumers other than Table.to_arrow (pyarrow readers, DuckDB) see an
 * interrupted get_next as a failure whose message says so; the interrupt
 * is armed again (PyErr_SetInterrupt) so KeyboardInterrupt still follows
 * in Python.  On any other thread there are no signals to check and the
 * call runs directly.
 */
#include "module.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* How long the main thread waits before it checks for signals again. */
#define SLICE_NS 20000000L

/* The ident of Python's main thread (GIL held), or 0 when it cannot be told. */
unsigned long df_py_main_thread_ident(void) {
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
    PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
    unsigned long id = ident && PyLong_Check(ident) ? PyLong_AsUnsignedLong(ident) : 0;
    Py_XDECREF(ident);
    Py_XDECREF(main);
    Py_XDECREF(threading);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        id = 0;
    }
    return id;
}

static void deadline_after(struct timespec *ts, long ns) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += ns;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000L;
    }
}

/* ------------------------------------------------------------------------ */
/* One call                                                                  */

typedef struct call {
    df_py_native_fn fn;         /* the native call */
    void *arg;                  /* its argument */
    pthread_mutex_t mu;         /* guards done */
    pthread_cond_t cv;          /* signalled when done is set */
    bool done;                  /* fn returned */
} call;

static void *call_main(void *p) {
    call *c = p;
    c->fn(c->arg);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Waits (GIL released by the caller) at most one slice for the call; true when it is done. */
static bool wait_slice(call *c, bool forever) {
    pthread_mutex_lock(&c->mu);
    while (!c->done) {
        if (forever) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        struct timespec ts;
        deadline_after(&ts, SLICE_NS);
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) break;
    }
    bool done = c->done;
    pthread_mutex_unlock(&c->mu);
    return done;
}

/* Fetches the pending exception, normalized with its traceback attached (a new reference). */
static PyObject *fetch_exception(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb) PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
}

int df_py_run_interruptible(df_py_native_fn fn, void *arg, _Atomic bool *cancel, PyObject **interrupt) {
    *interrupt = NULL;
    bool on_main = PyThread_get_thread_ident() == df_py_main_thread_ident();
    call c = {.fn = fn, .arg = arg, .done = false};
    pthread_t th;
    bool threaded = false;
    if (on_main) {
        pthread_mutex_init(&c.mu, NULL);
        pthread_cond_init(&c.cv, NULL);
        threaded = pthread_create(&th, NULL, call_main, &c) == 0;
        if (!threaded) {
            pthread_cond_destroy(&c.cv);
            pthread_mutex_destroy(&c.mu);
        }
    }
    if (!threaded) {
        /* No signals reach this thread (or no helper could start): run the call here. */
        Py_BEGIN_ALLOW_THREADS
        fn(arg);
        Py_END_ALLOW_THREADS
        return 0;
    }
    for (;;) {
        bool done;
        Py_BEGIN_ALLOW_THREADS
        done = wait_slice(&c, false);
        Py_END_ALLOW_THREADS
        if (done) break;
        if (PyErr_CheckSignals() < 0) {
            /* A handler raised: stop the operation, wait for it to unwind, then raise. */
            *interrupt = fetch_exception();
            atomic_store(cancel, true);
            Py_BEGIN_ALLOW_THREADS
            wait_slice(&c, true);
            Py_END_ALLOW_THREADS
            break;
        }
    }
    pthread_join(th, NULL);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    return *interrupt ? 1 : 0;
}

PyObject *df_py_raise_interrupt(PyObject *interrupt, const char *status, PyObject *report) {
    /* What happened to the action travels on the interruption (best effort: attributes may be refused). */
    PyObject *error = PyErr_Occurred() ? fetch_exception() : NULL;
    PyObject *st = PyUnicode_FromString(status);
    if (st) {
        if (PyObject_SetAttrString(interrupt, "deltafunnel_operation_status", st) < 0) PyErr_Clear();
        Py_DECREF(st);
    } else {
        PyErr_Clear();
    }
    if (error && PyObject_SetAttrString(interrupt, "deltafunnel_operation_error", error) < 0) PyErr_Clear();
    Py_XDECREF(error);
    if (report && PyObject_SetAttrString(interrupt, "deltafunnel_operation_report", report) < 0) PyErr_Clear();
    PyErr_SetObject((PyObject *)Py_TYPE(interrupt), interrupt);
    Py_DECREF(interrupt);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Arrow streams                                                             */

typedef struct pystream {
    struct ArrowArrayStream inner; /* the library's stream (made with &cancel) */
    _Atomic bool cancel;        /* the inner stream's cancel flag */
    unsigned long main_ident;   /* Python's main thread when the stream was made */
    bool owner_raises;          /* Table.to_arrow raises the interrupt itself: do not re-arm it */
    bool interrupted;           /* a signal handler raised during get_next */
    PyObject *interrupt;        /* that exception (owned) when owner_raises, else NULL */
    char message[160];          /* get_last_error for an interrupted stream */
    /* The helper thread running the inner get_next, started on the first pull from the main thread. */
    bool started;               /* the helper exists */
    pthread_t th;               /* the helper */
    pthread_mutex_t mu;         /* guards the fields below */
    pthread_cond_t cv;          /* signalled on every change of them */
    bool request;               /* a get_next is asked for */
    bool done;                  /* it returned: rc and out are set */
    bool quit;                  /* the stream is being released */
    int rc;                     /* the inner get_next's result */
    struct ArrowArray *out;     /* where the inner get_next writes */
} pystream;

static void *stream_helper(void *p) {
    pystream *s = p;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->request && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
        if (s->quit) break;
        s->request = false;
        struct ArrowArray *out = s->out;
        pthread_mutex_unlock(&s->mu);
        int rc = s->inner.get_next(&s->inner, out);
        pthread_mutex_lock(&s->mu);
        s->rc = rc;
        s->done = true;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int pystream_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    pystream *s = st->private_data;
    return s->inner.get_schema(&s->inner, out);
}

/* Checks for signals with the GIL taken for the moment; true when a handler raised (and the stream is cancelled). */
static bool check_signals(pystream *s) {
    PyGILState_STATE g = PyGILState_Ensure();
    bool raised = PyErr_CheckSignals() < 0;
    if (raised) {
        PyObject *v = fetch_exception();
        bool keyboard = v && PyErr_GivenExceptionMatches(v, PyExc_KeyboardInterrupt);
        if (s->owner_raises) {
            Py_XSETREF(s->interrupt, v);
        } else {
            Py_XDECREF(v);
            /* The consumer only sees a failed get_next; KeyboardInterrupt follows at Python's next check. */
            if (keyboard) PyErr_SetInterrupt();
        }
        s->interrupted = true;
        atomic_store(&s->cancel, true);
    }
    PyGILState_Release(g);
    return raised;
}

static int pystream_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    pystream *s = st->private_data;
    if (s->interrupted) {
        memset(out, 0, sizeof *out);
        return ECANCELED;
    }
    if (PyThread_get_thread_ident() != s->main_ident) return s->inner.get_next(&s->inner, out);
    if (!s->started) {
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);
        if (pthread_create(&s->th, NULL, stream_helper, s) != 0) {
            pthread_cond_destroy(&s->cv);
            pthread_mutex_destroy(&s->mu);
            return s->inner.get_next(&s->inner, out);
        }
        s->started = true;
    }
    pthread_mutex_lock(&s->mu);
    s->out = out;
    s->done = false;
    s->request = true;
    pthread_cond_broadcast(&s->cv);
    bool cancelled = false;
    while (!s->done) {
        struct timespec ts;
        deadline_after(&ts, SLICE_NS);
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT || s->done || cancelled) continue;
        pthread_mutex_unlock(&s->mu);
        cancelled = check_signals(s);
        pthread_mutex_lock(&s->mu);
    }
    int rc = s->rc;
    pthread_mutex_unlock(&s->mu);
    if (s->interrupted) {
        /* A batch that made it before the flag was seen is dropped: the stream ends in failure. */
        if (rc == 0 && out->release) out->release(out);
        memset(out, 0, sizeof *out);
        snprintf(s->message, sizeof s->message, "[%s/%s] the stream was interrupted by a signal",
                 df_errkind_default_phase(DF_ERR_CANCELLED), df_errkind_name(DF_ERR_CANCELLED));
        return ECANCELED;
    }
    return rc;
}

static const char *pystream_get_last_error(struct ArrowArrayStream *st) {
    pystream *s = st->private_data;
    if (s->interrupted) return s->message;
    return s->inner.get_last_error(&s->inner);
}

static void pystream_release(struct ArrowArrayStream *st) {
    if (!st || !st->release) return;
    pystream *s = st->private_data;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->quit = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
    }
    if (s->inner.release) s->inner.release(&s->inner);
    if (s->interrupt) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_CLEAR(s->interrupt);
        PyGILState_Release(g);
    }
    PyMem_RawFree(s);
    st->release = NULL;
}

int df_py_table_stream(df_py_state *st, df_table *table, bool owner_raises, struct ArrowArrayStream *out,
                       void **handle) {
    memset(out, 0, sizeof *out);
    *handle = NULL;
    pystream *s = PyMem_RawCalloc(1, sizeof *s);
    if (!s) return (PyErr_NoMemory(), -1);
    atomic_init(&s->cancel, false);
    s->main_ident = df_py_main_thread_ident();
    s->owner_raises = owner_raises;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k;
    Py_BEGIN_ALLOW_THREADS
    k = df_table_execute_arrow_cancellable(table, -1, &s->cancel, &s->inner, &err);
    Py_END_ALLOW_THREADS
    if (k != DF_OK) {
        PyMem_RawFree(s);
        df_py_raise(st, &err);
        return -1;
    }
    out->get_schema = pystream_get_schema;
    out->get_next = pystream_get_next;
    out->get_last_error = pystream_get_last_error;
    out->release = pystream_release;
    out->private_data = s;
    *handle = s;
    return 0;
}

PyObject *df_py_stream_raise(df_py_state *st, void *handle) {
    pystream *s = handle;
    if (s->interrupt) {
        /* The consumer's own error (pyarrow's) is only the echo of the interrupt. */
        PyErr_Clear();
        PyObject *v = s->interrupt;
        s->interrupt = NULL;
        return df_py_raise_interrupt(v, "cancelled", NULL);
    }
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_arrow_stream_error(&s->inner, &err) == DF_OK) return NULL; /* not ours: the consumer's error stands */
    PyErr_Clear();
    return df_py_raise(st, &err);
}
