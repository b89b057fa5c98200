/*
 * Progress displays behind progress=True/None.
 *
 * progress=False shows nothing; None shows progress when stderr is an
 * interactive terminal or when running under Jupyter; True always shows it.
 *
 *   terminal  one line on sys.stderr rewritten in place:
 *             "Output 1/2 - Writing to SQL Server: orders - 12.50K rows, 2 batches
 *              | 3.1 MB | 250.00K rows/s | 0.050s"  (ETA when the total is known)
 *   pipes     (logs, CI) one line per phase and per throttled update
 *   Jupyter   an IPython display object (display_id) updated in place with
 *             the same text; no ipywidgets needed.
 *
 * Events arrive on the thread running the native operation with the GIL
 * released, so the callback takes the GIL to write.  A failing write
 * disables the display for the rest of the operation; it never fails the
 * operation.  Labels are the library's fixed phase names and output names:
 * no locations, SQL, credentials or row values.
 */
#include "module.h"

#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "999 rows", "12.50K rows", "3.25M rows" (rows/1000 half-up to two decimals below 1000.00K). */
static void format_rows(int64_t rows, char *buf, size_t size) {
    const char *unit = rows == 1 ? "row" : "rows";
    if (rows < 1000) {
        snprintf(buf, size, "%lld %s", (long long)rows, unit);
        return;
    }
    int64_t hundredths = (rows + 5) / 10; /* rows/1000 with two decimals, half up */
    if (hundredths < 100000) {
        snprintf(buf, size, "%lld.%02lldK %s", (long long)(hundredths / 100), (long long)(hundredths % 100), unit);
        return;
    }
    int64_t m = (rows + 5000) / 10000;
    snprintf(buf, size, "%lld.%02lldM %s", (long long)(m / 100), (long long)(m % 100), unit);
}

static void format_bytes(double bytes, char *buf, size_t size) {
    const char *units[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) {
        bytes /= 1000.0;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static int write_stderr(const char *text) {
    PyObject *err = PySys_GetObject("stderr"); /* borrowed */
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

/* "Output i/n - <label>[: <scope>]" */
static void describe(const df_py_progress *p, const df_progress_event *ev, const char *label, char *buf, size_t size) {
    char prefix[32] = "";
    if (ev->output_count > 1 && ev->output_index > 0)
        snprintf(prefix, sizeof prefix, "Output %d/%d - ", ev->output_index, ev->output_count);
    if (ev->scope && ev->scope[0])
        snprintf(buf, size, "%s%s: %.120s", prefix, label, ev->scope);
    else
        snprintf(buf, size, "%s%s", prefix, label);
}

/* The numeric tail of a rows event: rows, batches, bytes, rate, elapsed, ETA. */
static void rows_detail(df_py_progress *p, const df_progress_event *ev, char *buf, size_t size) {
    char rows[48], bytes[32], rate[48] = "", eta[48] = "";
    format_rows(ev->rows, rows, sizeof rows);
    double elapsed = now_seconds() - p->phase_started;
    if (elapsed > 0.001) {
        char r[40];
        format_rows((int64_t)((double)ev->rows / elapsed), r, sizeof r);
        snprintf(rate, sizeof rate, " | %s/s", r);
    }
    if (ev->rows_total > 0 && ev->rows > 0 && ev->rows < ev->rows_total && elapsed > 0.001)
        snprintf(eta, sizeof eta, " | ETA %.1fs", elapsed * (double)(ev->rows_total - ev->rows) / (double)ev->rows);
    bytes[0] = 0;
    if (ev->bytes > 0) {
        char b[24];
        format_bytes((double)ev->bytes, b, sizeof b);
        snprintf(bytes, sizeof bytes, " | %s", b);
    }
    char files[96] = "";
    if (ev->files_total > 0) {
        int n = snprintf(files, sizeof files, " | Delta files %lld/%lld", (long long)ev->files_done,
                         (long long)ev->files_total);
        if (ev->files_pruned > 0 && n > 0 && (size_t)n < sizeof files)
            snprintf(files + n, sizeof files - (size_t)n, " | pruned ~%lld in planning", (long long)ev->files_pruned);
    }
    snprintf(buf, size, " - %s, %lld batch%s%s%s%s%s", rows, (long long)ev->batches, ev->batches == 1 ? "" : "es", bytes,
             rate, eta, files);
}

/* Shows `line` in the notebook display (creating it on first use). */
static int notebook_show(df_py_progress *p, const char *line) {
    int rc = -1;
    PyObject *display_mod = PyImport_ImportModule("IPython.display");
    if (!display_mod) return -1;
    PyObject *text = PyUnicode_FromString(line);
    PyObject *pretty = text ? PyObject_CallMethod(display_mod, "Pretty", "O", text) : NULL;
    if (pretty) {
        PyObject *r = NULL;
        if (!p->handle) {
            PyObject *fn = PyObject_GetAttrString(display_mod, "display");
            PyObject *args = PyTuple_Pack(1, pretty);
            PyObject *kw = Py_BuildValue("{s:O}", "display_id", Py_True);
            if (fn && args && kw) r = PyObject_Call(fn, args, kw);
            Py_XDECREF(fn);
            Py_XDECREF(args);
            Py_XDECREF(kw);
            if (r && r != Py_None) p->handle = Py_NewRef(r);
        } else {
            r = PyObject_CallMethod(p->handle, "update", "O", pretty);
        }
        if (r) rc = 0;
        Py_XDECREF(r);
    }
    Py_XDECREF(pretty);
    Py_XDECREF(text);
    Py_DECREF(display_mod);
    return rc;
}

static void show_event(df_py_progress *p, const df_progress_event *ev);

/*
 * Throttled numeric updates are remembered, and the last one is shown
 * before the next phase or the end, so the final counts always appear.
 */
static void on_event(void *user, const df_progress_event *ev) {
    df_py_progress *p = user;
    if (!p->enabled || p->broken) return;
    if (throttled(p, ev)) {
        if (ev->kind == DF_PROGRESS_ROWS) {
            p->pending = *ev;
            snprintf(p->pending_scope, sizeof p->pending_scope, "%s", ev->scope ? ev->scope : "");
            p->pending.scope = p->pending_scope;
            p->pending.label = NULL;
            p->has_pending = 1;
        }
        return;
    }
    if (ev->kind == DF_PROGRESS_ROWS) p->has_pending = 0;
    if ((ev->kind == DF_PROGRESS_PHASE || ev->kind == DF_PROGRESS_FINISHED) && p->has_pending) {
        p->has_pending = 0;
        show_event(p, &p->pending);
    }
    show_event(p, ev);
}

static void show_event(df_py_progress *p, const df_progress_event *ev) {
    char line[512], desc[256], detail[200] = "";
    int final = 0;
    switch (ev->kind) {
    case DF_PROGRESS_STARTED:
        snprintf(p->operation, sizeof p->operation, "%s", ev->label ? ev->label : "Working");
        p->started = p->phase_started = now_seconds();
        snprintf(p->label, sizeof p->label, "%s", p->operation);
        describe(p, ev, p->label, desc, sizeof desc);
        break;
    case DF_PROGRESS_PHASE:
        snprintf(p->label, sizeof p->label, "%s", ev->label ? ev->label : "");
        if (ev->label && !strcmp(ev->label, "Writing to SQL Server")) p->phase_started = now_seconds();
        p->output_index = ev->output_index;
        p->output_count = ev->output_count;
        describe(p, ev, p->label, desc, sizeof desc);
        break;
    case DF_PROGRESS_FILES:
        describe(p, ev, p->label, desc, sizeof desc);
        snprintf(detail, sizeof detail, " - Delta files %lld/%lld", (long long)ev->files_done, (long long)ev->files_total);
        break;
    case DF_PROGRESS_ROWS:
        describe(p, ev, p->label, desc, sizeof desc);
        rows_detail(p, ev, detail, sizeof detail);
        break;
    case DF_PROGRESS_FINISHED:
        snprintf(desc, sizeof desc, "%s - %s", p->operation[0] ? p->operation : "Working",
                 ev->label ? ev->label : "Completed");
        final = 1;
        break;
    default:
        return;
    }
    snprintf(line, sizeof line, "%s%s %.3fs", desc, detail, now_seconds() - p->started);
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int rc;
    if (p->notebook) {
        rc = notebook_show(p, line);
    } else {
        char out[600];
        if (p->interactive)
            snprintf(out, sizeof out, "\r\x1b[2K%s%s", line, final ? "\n" : "");
        else
            snprintf(out, sizeof out, "%s\n", line);
        rc = write_stderr(out);
    }
    if (rc < 0) {
        /*
         * An interruption (KeyboardInterrupt, SystemExit: BaseException but
         * not Exception) is kept and re-raised once the native action has
         * finished, so the native side always ends cleanly; other display
         * errors only stop the display.
         */
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        if (et && !p->interrupt && !PyErr_GivenExceptionMatches(et, PyExc_Exception)) {
            PyErr_NormalizeException(&et, &ev, &etb);
            if (ev && etb) PyException_SetTraceback(ev, etb);
            p->interrupt = ev;
            ev = NULL;
        }
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
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

/* True inside a Jupyter kernel (an IPython shell with a kernel); IPython is only looked at when already imported. */
static int in_notebook(void) {
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    if (!modules || !PyDict_Check(modules) || !PyDict_GetItemString(modules, "IPython")) return 0;
    PyObject *ipy = PyImport_ImportModule("IPython");
    if (!ipy) {
        PyErr_Clear();
        return 0;
    }
    PyObject *shell = PyObject_CallMethod(ipy, "get_ipython", NULL);
    Py_DECREF(ipy);
    if (!shell) {
        PyErr_Clear();
        return 0;
    }
    int yes = 0;
    if (shell != Py_None) {
        PyObject *kernel = PyObject_GetAttrString(shell, "kernel");
        yes = kernel != NULL && kernel != Py_None;
        Py_XDECREF(kernel);
        PyErr_Clear();
    }
    Py_DECREF(shell);
    return yes;
}

void df_py_progress_init(df_py_progress *p, int mode, df_progress *sink) {
    memset(p, 0, sizeof *p);
    sink->fn = NULL;
    sink->user = p;
    if (mode == 0) return;
    p->notebook = in_notebook();
    p->interactive = !p->notebook && stderr_is_terminal();
    if (mode == 1 && !p->interactive && !p->notebook) return;
    p->enabled = 1;
    sink->fn = on_event;
}

void df_py_progress_done(df_py_progress *p) {
    Py_CLEAR(p->handle);
}

PyObject *df_py_progress_deliver(df_py_progress *p, PyObject *result, const char *status) {
    df_py_progress_done(p);
    if (!p->interrupt) return result;
    PyObject *interrupt = p->interrupt;
    p->interrupt = NULL;
    /* What happened to the action travels on the interruption (best effort: attributes may be refused). */
    PyObject *st = PyUnicode_FromString(status);
    if (st) {
        if (PyObject_SetAttrString(interrupt, "deltafunnel_operation_status", st) < 0) PyErr_Clear();
        Py_DECREF(st);
    }
    if (!result) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (v && PyObject_SetAttrString(interrupt, "deltafunnel_operation_error", v) < 0) PyErr_Clear();
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
    } else if (!strcmp(status, "completed_with_failures")) {
        if (PyObject_SetAttrString(interrupt, "deltafunnel_operation_report", result) < 0) PyErr_Clear();
    }
    Py_XDECREF(result);
    char line[160];
    snprintf(line, sizeof line, "DeltaFunnel action status: %s; the Python result was not delivered.\n", status);
    if (write_stderr(line) < 0) PyErr_Clear();
    PyErr_SetObject((PyObject *)Py_TYPE(interrupt), interrupt);
    Py_DECREF(interrupt);
    return NULL;
}
