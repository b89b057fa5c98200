/*
 * deltafunnel._native: module state, multi-phase initialisation and the
 * module-level functions (logging, diagnostics, a private formatter hook).
 */
#include "module.h"

df_py_state *df_py_state_of_type(PyTypeObject *type) { return PyType_GetModuleState(type); }

df_py_state *df_py_state_of_module(PyObject *module) { return PyModule_GetState(module); }

/*
 * The logging bridge is process-wide, as Python logging is: the first
 * successful init_logging() call installs it, later calls change nothing
 * and return False.
 */
static int logging_installed;

#define DEFAULT_LOG_FILTER "delta_funnel=info,arrow_sql_server=info"

/* Chooses the filter: argument, else $DELTAFUNNEL_LOG, else the default (blank counts as unset). */
static const char *pick_filter(const char *arg) {
    if (arg && arg[strspn(arg, " \t\r\n")]) return arg;
    const char *env = getenv("DELTAFUNNEL_LOG");
    if (env && env[strspn(env, " \t\r\n")]) return env;
    return DEFAULT_LOG_FILTER;
}

static PyObject *validate_filter(df_py_state *st, PyObject *filter_obj, const char **filter) {
    const char *arg;
    if (df_py_opt_str(filter_obj, &arg) < 0) return NULL;
    *filter = pick_filter(arg);
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_log_filter_validate(*filter, &err) != DF_OK) return df_py_raise(st, &err);
    Py_RETURN_NONE;
}

void df_py_log_event(const char *level, const char *event, PyObject *fields) {
    if (!logging_installed) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *bridge = PyImport_ImportModule("deltafunnel._logbridge");
    PyObject *r = NULL;
    if (bridge) {
        PyObject *extra = fields ? PyDict_Copy(fields) : PyDict_New();
        PyObject *name = PyUnicode_FromString(event);
        if (extra && name && PyDict_SetItemString(extra, "telemetry_event", name) == 0)
            r = PyObject_CallMethod(bridge, "emit", "sssO", "delta_funnel", level, event, extra);
        Py_XDECREF(extra);
        Py_XDECREF(name);
        Py_DECREF(bridge);
    }
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* Hands the filter and logger name to deltafunnel._logbridge, which routes native events to logging. */
static int install_bridge(const char *filter, PyObject *logger) {
    PyObject *bridge = PyImport_ImportModule("deltafunnel._logbridge");
    if (!bridge) return -1;
    PyObject *r = PyObject_CallMethod(bridge, "install", "sO", filter, logger);
    Py_DECREF(bridge);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *init_logging(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"filter", "logger"};
    static const df_py_sig sig = {"init_logging", names, 2, 2, 0, 0};
    df_py_state *st = df_py_state_of_module(module);
    PyObject *in[2];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    const char *logger_name;
    if (in[1] && df_py_req_str(in[1], &logger_name) < 0) return NULL;
    const char *filter;
    PyObject *ok = validate_filter(st, in[0], &filter);
    if (!ok) return NULL;
    Py_DECREF(ok);
    if (logging_installed) Py_RETURN_FALSE;
    PyObject *logger = in[1] ? Py_NewRef(in[1]) : PyUnicode_FromString("deltafunnel");
    if (!logger) return NULL;
    int rc = install_bridge(filter, logger);
    Py_DECREF(logger);
    if (rc < 0) return NULL;
    logging_installed = 1;
    Py_RETURN_TRUE;
}

/*
 * Reads and removes the capture-workload handshake variables from
 * os.environ (so child processes never see them) into `values` (new
 * references or NULL).  0, or -1 with an exception.
 */
static int take_handshake(PyObject **values) {
    PyObject *os = PyImport_ImportModule("os");
    PyObject *environ = os ? PyObject_GetAttrString(os, "environ") : NULL;
    Py_XDECREF(os);
    if (!environ) return -1;
    int rc = 0;
    for (int i = 0; df_perfetto_handshake_variables[i]; i++) {
        PyObject *v = PyObject_CallMethod(environ, "pop", "sO", df_perfetto_handshake_variables[i], Py_None);
        if (!v) {
            rc = -1;
            break;
        }
        if (v == Py_None) Py_CLEAR(v);
        values[i] = v;
    }
    Py_DECREF(environ);
    return rc;
}

/* Whole-process diagnostics: 0 = not attempted, 1 = activated (the bridge is ours), -1 = failed. */
static int perfetto_state;

static PyObject *perfetto_finish(PyObject *module, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    df_perfetto_diagnostics_finish();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* atexit.register(_native._perfetto_finish): the trace is finished before the interpreter goes. */
static int register_finish(PyObject *module) {
    PyObject *atexit = PyImport_ImportModule("atexit");
    PyObject *fn = PyObject_GetAttrString(module, "_perfetto_finish");
    PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    Py_XDECREF(atexit);
    Py_XDECREF(fn);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *init_perfetto(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"filter", "logger", "wait_timeout_seconds"};
    static const df_py_sig sig = {"init_perfetto_diagnostics", names, 3, 3, 0, 0};
    df_py_state *st = df_py_state_of_module(module);
    PyObject *in[3];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    const char *filter, *logger = "deltafunnel";
    PyObject *ok = validate_filter(st, in[0], &filter);
    if (!ok) return NULL;
    Py_DECREF(ok);
    if (in[1] && df_py_req_str(in[1], &logger) < 0) return NULL;
    if (!logger[strspn(logger, " \t\r\n")])
        return df_py_raise_simple(st, DF_ERR_INVALID_LOGGER,
                                  "Perfetto diagnostics logger name must not be empty");
    double timeout = 10.0;
    if (in[2]) {
        timeout = PyFloat_AsDouble(in[2]);
        if (timeout == -1.0 && PyErr_Occurred()) return NULL;
        if (timeout < 0)
            return df_py_raise_simple(st, DF_ERR_INVALID_WAIT_TIMEOUT,
                                      "invalid Perfetto diagnostics wait timeout: cannot convert float seconds to "
                                      "Duration: value is negative");
        if (!(timeout < 1.8e19))
            return df_py_raise_simple(st, DF_ERR_INVALID_WAIT_TIMEOUT,
                                      "invalid Perfetto diagnostics wait timeout: cannot convert float seconds to "
                                      "Duration: value is either too big or NaN");
    }
    PyObject *values[8] = {NULL};
    if (take_handshake(values) < 0) return NULL;
    /* Another subscriber (init_logging, or an earlier activation) wins: no handshake, no side effects. */
    if (logging_installed && perfetto_state != -1) {
        for (int i = 0; i < 8; i++) Py_XDECREF(values[i]);
        Py_RETURN_FALSE;
    }
    const char *text[6] = {NULL};
    for (int i = 0; i < 6 && !PyErr_Occurred(); i++)
        if (values[i] && df_py_utf8(values[i], &text[i]) < 0) break;
    df_perfetto_handshake h = {text[0], text[1], text[2], text[3], text[4], text[5]};
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = DF_OK;
    if (!PyErr_Occurred()) {
        Py_BEGIN_ALLOW_THREADS
        k = df_perfetto_diagnostics_start(&h, timeout, &err);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 8; i++) Py_XDECREF(values[i]);
    if (PyErr_Occurred()) return NULL;
    if (k != DF_OK) {
        perfetto_state = -1;
        return df_py_raise(st, &err);
    }
    if (register_finish(module) < 0) return NULL;
    PyObject *logger_obj = in[1] ? Py_NewRef(in[1]) : PyUnicode_FromString("deltafunnel");
    if (!logger_obj) return NULL;
    int rc = install_bridge(filter, logger_obj);
    Py_DECREF(logger_obj);
    if (rc < 0) return NULL;
    logging_installed = 1;
    perfetto_state = 1;
    Py_RETURN_TRUE;
}

/*
 * _run_perfetto_cli(): runs the delta-funnel-perfetto program installed
 * with the package (next to the interpreter, else on PATH) with
 * sys.argv[1:], and returns its exit status.
 */
static PyObject *run_perfetto_cli(PyObject *module, PyObject *unused) {
    PyObject *helper = PyImport_ImportModule("deltafunnel._perfetto");
    if (!helper) return NULL;
    PyObject *r = PyObject_CallMethod(helper, "run_cli", NULL);
    Py_DECREF(helper);
    return r;
}

/* _format_arrow(data, max_rows=-1) -> (text, html): formats any Arrow stream producer like a preview. */
static PyObject *format_arrow(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"data", "max_rows"};
    static const df_py_sig sig = {"_format_arrow", names, 2, 2, 1, 0};
    df_py_state *st = df_py_state_of_module(module);
    PyObject *in[2];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    long long max_rows = -1;
    if (in[1]) {
        max_rows = PyLong_AsLongLong(in[1]);
        if (max_rows == -1 && PyErr_Occurred()) return NULL;
    }
    PyObject *capsule = PyObject_CallMethod(in[0], "__arrow_c_stream__", NULL);
    if (!capsule) return NULL;
    struct ArrowArrayStream *s = PyCapsule_GetPointer(capsule, "arrow_array_stream");
    if (!s) {
        Py_DECREF(capsule);
        return NULL;
    }
    /* Move the stream out of the capsule: we release it. */
    struct ArrowArrayStream moved = *s;
    s->release = NULL;
    Py_DECREF(capsule);
    char *text = NULL, *html = NULL;
    size_t text_len = 0, html_len = 0;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k;
    Py_BEGIN_ALLOW_THREADS
    k = df_format_arrow_stream(&moved, max_rows, &text, &text_len, &html, &html_len, &err);
    Py_END_ALLOW_THREADS
    if (k != DF_OK) return df_py_raise(st, &err);
    PyObject *out = Py_BuildValue("(s#,s#)", text, (Py_ssize_t)text_len, html, (Py_ssize_t)html_len);
    df_free(text);
    df_free(html);
    return out;
}

static PyMethodDef module_methods[] = {
    {"init_logging", (PyCFunction)(void (*)(void))init_logging, METH_FASTCALL | METH_KEYWORDS,
     "init_logging(filter=None, logger='deltafunnel')\n--\n\n"
     "Routes Delta Funnel events to Python logging under `logger`.  The filter (argument, else\n"
     "$DELTAFUNNEL_LOG, else 'delta_funnel=info,arrow_sql_server=info') uses 'target=level' directives.\n"
     "Returns True when this call installed the bridge, False when one was installed before."},
    {"init_perfetto_diagnostics", (PyCFunction)(void (*)(void))init_perfetto, METH_FASTCALL | METH_KEYWORDS,
     "init_perfetto_diagnostics(filter=None, logger='deltafunnel', wait_timeout_seconds=10.0)\n--\n\n"
     "Whole-process Perfetto diagnostics for a workload run under capture-workload: joins the\n"
     "wrapper's start gate, starts the in-process capture of every later operation (native CPU\n"
     "samples included) and routes events to Python logging like init_logging().  The trace is\n"
     "finished when the process exits.  Returns False (and does nothing) when a logging bridge\n"
     "is already installed.  Errors: DeltaFunnelError(phase='perfetto_diagnostics') with kinds\n"
     "invalid_logger, invalid_wait_timeout, capture_handshake_invalid, capture_handshake_failed,\n"
     "capture_timeout, capture_unavailable."},
    {"_perfetto_finish", perfetto_finish, METH_NOARGS,
     "_perfetto_finish()\n--\n\nFinishes the whole-process capture (registered with atexit)."},
    {"_run_perfetto_cli", run_perfetto_cli, METH_NOARGS,
     "_run_perfetto_cli()\n--\n\nRuns delta-funnel-perfetto with sys.argv[1:]; returns its exit status."},
    {"_format_arrow", (PyCFunction)(void (*)(void))format_arrow, METH_FASTCALL | METH_KEYWORDS,
     "_format_arrow(data, max_rows=-1)\n--\n\nFormats an Arrow stream producer as preview (text, html)."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    df_py_state *st = df_py_state_of_module(module);
    PyObject *json = PyImport_ImportModule("json");
    if (!json) return -1;
    st->json_loads = PyObject_GetAttrString(json, "loads");
    Py_DECREF(json);
    if (!st->json_loads) return -1;
    st->error_type = PyErr_NewExceptionWithDoc(
        "deltafunnel.DeltaFunnelError",
        "A Delta Funnel failure.  Attributes: phase and kind (stable strings), message, context (a dict\n"
        "or None), offset (character offset into the input, or None) and code (numeric detail, 0 if none).",
        PyExc_Exception, NULL);
    if (!st->error_type || PyModule_AddObjectRef(module, "DeltaFunnelError", st->error_type) < 0) return -1;
    if (df_py_add_option_types(module, st) < 0 || df_py_add_session_types(module, st) < 0 ||
        df_py_add_table_types(module, st) < 0)
        return -1;
    return PyModule_AddStringConstant(module, "__version__", df_version());
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    df_py_state *st = df_py_state_of_module(module);
    Py_VISIT(st->session_type);
    Py_VISIT(st->pending_type);
    Py_VISIT(st->table_type);
    Py_VISIT(st->preview_type);
    Py_VISIT(st->output_spec_type);
    Py_VISIT(st->scan_options_type);
    Py_VISIT(st->repartitioning_type);
    Py_VISIT(st->ranked_type);
    Py_VISIT(st->error_type);
    Py_VISIT(st->fill_missing);
    Py_VISIT(st->rebalance);
    Py_VISIT(st->json_loads);
    return 0;
}

static int module_clear(PyObject *module) {
    df_py_state *st = df_py_state_of_module(module);
    Py_CLEAR(st->session_type);
    Py_CLEAR(st->pending_type);
    Py_CLEAR(st->table_type);
    Py_CLEAR(st->preview_type);
    Py_CLEAR(st->output_spec_type);
    Py_CLEAR(st->scan_options_type);
    Py_CLEAR(st->repartitioning_type);
    Py_CLEAR(st->ranked_type);
    Py_CLEAR(st->error_type);
    Py_CLEAR(st->fill_missing);
    Py_CLEAR(st->rebalance);
    Py_CLEAR(st->json_loads);
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "deltafunnel._native",
    .m_doc = "Native core of deltafunnel (use the deltafunnel package).",
    .m_size = sizeof(df_py_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModuleDef_Init(&module_def); }
