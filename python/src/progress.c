/*
 * A minimal progress display on sys.stderr.
 *
 * progress=False shows nothing; None shows progress only when stderr is an
 * interactive terminal; True always shows it.  On a terminal one line is
 * rewritten in place; elsewhere (logs, CI) each step is one line.  Events
 * arrive on the thread running the native operation with the GIL released,
 * so the callback takes the GIL to write.  A failing write disables the
 * display for the rest of the operation; it never fails the operation.
 * Labels are the library's fixed phase names: no locations, SQL or rows.
 */
#include "module.h"

#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "999 rows", "12.50K rows", "3.25M rows" */
static void format_rows(int64_t rows, char *buf, size_t size) {
    const char *unit = rows == 1 ? "row" : "rows";
    if (rows < 1000) {
        snprintf(buf, size, "%lld %s", (long long)rows, unit);
        return;
    }
    double k = (double)rows / 1000.0;
    if (k < 999.995)
        snprintf(buf, size, "%.2fK %s", k, unit);
    else
        snprintf(buf, size, "%.2fM %s", (double)rows / 1e6, unit);
}

static int write_stderr(const char *text) {
    PyObject *err = PySys_GetObject("stderr");   /* borrowed */
    if (!err || err == Py_None) return -1;
    PyObject *r = PyObject_CallMethod(err, "write", "s", text);
    if (!r) return -1;
    Py_DECREF(r);
    r = PyObject_CallMethod(err, "flush", NULL);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* Numeric updates (files, rows) show at most four times a second; phases and the end always. */
static int throttled(df_py_progress *p, const df_progress_event *ev) {
    if (ev->kind != DF_PROGRESS_FILES && ev->kind != DF_PROGRESS_ROWS) return 0;
    double now = now_seconds();
    if (now - p->last_update < 0.25) return 1;
    p->last_update = now;
    return 0;
}

static void on_event(void *user, const df_progress_event *ev) {
    df_py_progress *p = user;
    if (!p->enabled || p->broken || throttled(p, ev)) return;
    char line[256], detail[64];
    const char *op = p->operation[0] ? p->operation : "Working";
    int final = 0;
    switch (ev->kind) {
    case DF_PROGRESS_STARTED:
        snprintf(p->operation, sizeof p->operation, "%s", ev->label ? ev->label : "Working");
        p->started = now_seconds();
        snprintf(line, sizeof line, "%s", p->operation);
        break;
    case DF_PROGRESS_PHASE:
        snprintf(line, sizeof line, "%s - %s", op, ev->label ? ev->label : "");
        break;
    case DF_PROGRESS_FILES:
        snprintf(line, sizeof line, "%s - Delta files %lld/%lld", op, (long long)ev->files_done,
                 (long long)ev->files_total);
        break;
    case DF_PROGRESS_ROWS:
        format_rows(ev->rows, detail, sizeof detail);
        snprintf(line, sizeof line, "%s - %s, %lld batch%s", op, detail, (long long)ev->batches,
                 ev->batches == 1 ? "" : "es");
        break;
    case DF_PROGRESS_FINISHED:
        snprintf(line, sizeof line, "%s - %s %.3fs", op, ev->label ? ev->label : "Completed",
                 now_seconds() - p->started);
        final = 1;
        break;
    default:
        return;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    char out[300];
    if (p->interactive)
        snprintf(out, sizeof out, "\r\x1b[2K%s%s", line, final ? "\n" : "");
    else
        snprintf(out, sizeof out, "%s\n", line);
    if (write_stderr(out) < 0) {
        PyErr_Clear();
        p->broken = 1;
    }
    PyErr_Restore(type, value, tb);
    PyGILState_Release(g);
}

static int stderr_is_terminal(void) {
    PyObject *err = PySys_GetObject("stderr");
    if (!err || err == Py_None) return 0;
    PyObject *r = PyObject_CallMethod(err, "isatty", NULL);
    if (!r) {
        PyErr_Clear();
        return 0;
    }
    int tty = PyObject_IsTrue(r) == 1;
    Py_DECREF(r);
    return tty;
}

void df_py_progress_init(df_py_progress *p, int mode, df_progress *sink) {
    memset(p, 0, sizeof *p);
    sink->fn = NULL;
    sink->user = p;
    if (mode == 0) return;
    p->interactive = stderr_is_terminal();
    if (mode == 1 && !p->interactive) return;
    p->enabled = 1;
    sink->fn = on_event;
}
