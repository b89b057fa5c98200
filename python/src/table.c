/*
 * deltafunnel.Table, deltafunnel.Preview and deltafunnel.MssqlOutputSpec.
 *
 * Tables are lazy: previews and Arrow streams run the table's query with
 * the GIL released.  Beyond the reference, Table.schema describes the
 * output columns without pyarrow, and Table.__arrow_c_stream__ (the Arrow
 * PyCapsule interface) hands batches to pyarrow, polars or pandas without
 * copies; Table.to_arrow() wraps it for pyarrow users.
 *
 * SQL Server outputs: to_mssql makes an MssqlOutputSpec for
 * Session.write_all; write_to_mssql runs one output (GIL released for
 * executes) and returns the report as a dict.
 */
#include "module.h"

#include <stdatomic.h>

typedef struct {
    PyObject_HEAD
    PyObject *session;               /* the Session that made it */
    df_table *table;                 /* owned handle */
} TableObject;

typedef struct {
    PyObject_HEAD
    PyObject *text;                  /* str */
    PyObject *html;                  /* str */
    PyObject *timings;               /* list of dicts */
    PyObject *profile;               /* dict or None */
} PreviewObject;

PyObject *df_py_table_new(df_py_state *st, PyObject *session, df_table *table) {
    TableObject *t = PyObject_GC_New(TableObject, st->table_type);
    if (!t) {
        df_table_release(table);
        return NULL;
    }
    t->session = Py_NewRef(session);
    t->table = table;
    PyObject_GC_Track(t);
    return (PyObject *)t;
}

int df_py_check_profile_args(df_py_state *st, PyObject *progress, PyObject *execution_profile,
                             PyObject *ranked_profile, int *progress_mode, int *profile) {
    int value, is_none;
    if (df_py_opt_bool(progress, &value, &is_none) < 0) return -1;
    *progress_mode = is_none ? 1 : (value ? 2 : 0);
    *profile = 0;
    if (execution_profile && df_py_strict_bool(execution_profile, profile) < 0) return -1;
    if (ranked_profile && ranked_profile != Py_None && !PyObject_TypeCheck(ranked_profile, st->ranked_type))
        return df_py_type_error(ranked_profile, "RankedProfileConfig");
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Previews                                                                  */

static PyObject *decode(const char *s) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* One native preview, run by df_py_run_interruptible. */
typedef struct preview_call {
    df_table *table;                 /* borrowed */
    const df_preview_options *opts;  /* borrowed */
    df_preview *out;                 /* the result */
    df_error err;                    /* the failure */
    df_errkind k;                    /* df_table_preview's result */
} preview_call;

static void preview_main(void *arg) {
    preview_call *c = arg;
    c->k = df_table_preview(c->table, c->opts, &c->out, &c->err);
}

/*
 * Runs a preview with the GIL released (under a ranked profile when
 * `ranked` is a config, on this thread: the capture scope is the calling
 * thread; otherwise interruptible by Ctrl-C); returns a Preview or raises.
 */
static PyObject *run_preview(df_py_state *st, TableObject *t, int64_t limit, int progress_mode, int profile,
                             PyObject *ranked) {
    df_ranked_profile *rp = NULL;
    if (df_py_ranked_begin(st, ranked, &rp) < 0) return NULL;
    df_py_progress progress;
    df_preview_options opts;
    df_preview_options_init(&opts);
    opts.limit = limit;
    opts.execution_profile = profile != 0;
    df_py_progress_init(&progress, progress_mode, &opts.progress);
    df_py_log_sink_init(st, &opts.log);
    _Atomic bool cancel;
    atomic_init(&cancel, false);
    opts.cancel = &cancel;
    preview_call c;
    memset(&c, 0, sizeof c);
    c.table = t->table;
    c.opts = &opts;
    PyObject *interrupt = NULL;
    if (rp) {
        Py_BEGIN_ALLOW_THREADS
        preview_main(&c);
        Py_END_ALLOW_THREADS
    } else {
        df_py_run_interruptible(preview_main, &c, &cancel, &interrupt);
    }
    df_preview *p = c.out;
    df_error err = c.err;
    df_errkind k = c.k;
    df_py_progress_done(&progress);
    if (interrupt) {
        df_preview_free(p);
        Py_CLEAR(progress.interrupt);
        if (k != DF_OK) df_py_raise(st, &err);
        return df_py_raise_interrupt(interrupt, k == DF_OK ? "completed" : "cancelled", NULL);
    }
    if (k != DF_OK) {
        PyObject *fields = Py_BuildValue("{s:s,s:L}", "error_kind", df_errkind_name(err.kind), "row_limit",
                                         (long long)limit);
        if (fields) df_py_log_event("warn", "preview.failed", fields);
        Py_XDECREF(fields);
        PyErr_Clear();
        return df_py_ranked_outcome(st, rp, df_py_raise(st, &err), "failed", false);
    }
    {
        df_phase_timing total;
        df_preview_phase_timing(p, df_preview_num_phase_timings(p) - 1, &total);
        PyObject *fields = Py_BuildValue("{s:L,s:L,s:L}", "row_limit", (long long)limit, "rows",
                                         (long long)df_preview_num_rows(p), "elapsed_micros",
                                         (long long)total.elapsed_micros);
        if (fields) df_py_log_event("info", "preview.completed", fields);
        Py_XDECREF(fields);
        PyErr_Clear();
    }
    PreviewObject *out = PyObject_GC_New(PreviewObject, st->preview_type);
    if (out) {
        out->text = PyUnicode_DecodeUTF8(df_preview_text(p), (Py_ssize_t)df_preview_text_length(p), "replace");
        out->html = PyUnicode_DecodeUTF8(df_preview_html(p), (Py_ssize_t)df_preview_html_length(p), "replace");
        out->timings = df_py_json(st, df_preview_phase_timings_json(p));
        out->profile = df_py_json(st, df_preview_execution_profile_json(p));
        PyObject_GC_Track(out);
        if (!out->text || !out->html || !out->timings || !out->profile) Py_CLEAR(out);
    }
    df_preview_free(p);
    return df_py_ranked_outcome(st, rp, (PyObject *)out, "completed", false);
}

static PyObject *table_preview(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"limit", "progress", "execution_profile", "ranked_profile"};
    static const df_py_sig sig = {"Table.preview", names, 4, 1, 0, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[4];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    int64_t limit = 20;
    if (in[0] && df_py_usize(in[0], &limit) < 0) return NULL;
    int mode, profile;
    if (df_py_check_profile_args(st, in[1], in[2], in[3], &mode, &profile) < 0) return NULL;
    return run_preview(st, (TableObject *)self, limit, mode, profile, in[3]);
}

static PyObject *table_show(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"limit", "progress"};
    static const df_py_sig sig = {"Table.show", names, 2, 1, 0, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[2];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    int64_t limit = 20;
    if (in[0] && df_py_usize(in[0], &limit) < 0) return NULL;
    int mode, profile;
    if (df_py_check_profile_args(st, in[1], NULL, NULL, &mode, &profile) < 0) return NULL;
    PyObject *preview = run_preview(st, (TableObject *)self, limit, mode, 0, NULL);
    if (!preview) return NULL;
    /* Python's print, so redirected or captured stdout sees the table. */
    PyObject *builtins = PyImport_ImportModule("builtins");
    PyObject *r = builtins ? PyObject_CallMethod(builtins, "print", "O", ((PreviewObject *)preview)->text) : NULL;
    Py_XDECREF(builtins);
    Py_DECREF(preview);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* Catalog, Arrow                                                            */

static PyObject *table_alias(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"name"};
    static const df_py_sig sig = {"Table.alias", names, 1, 1, 1, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[1];
    const char *name;
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0 || df_py_req_str(in[0], &name) < 0) return NULL;
    TableObject *t = (TableObject *)self;
    df_table *out = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_table_alias(t->table, name, &out, &err) != DF_OK) return df_py_raise(st, &err);
    return df_py_table_new(st, t->session, out);
}

static void capsule_release(PyObject *capsule) {
    struct ArrowArrayStream *s = PyCapsule_GetPointer(capsule, "arrow_array_stream");
    if (!s) {
        PyErr_Clear();
        return;
    }
    if (s->release) s->release(s);
    PyMem_RawFree(s);
}

/* A capsule holding the table's interruptible stream (df_py_table_stream); *handle as there. */
static PyObject *stream_capsule(df_py_state *st, df_table *table, bool owner_raises, void **handle) {
    struct ArrowArrayStream *s = PyMem_RawCalloc(1, sizeof *s);
    if (!s) return PyErr_NoMemory();
    if (df_py_table_stream(st, table, owner_raises, s, handle) < 0) {
        PyMem_RawFree(s);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(s, "arrow_array_stream", capsule_release);
    if (!capsule) {
        s->release(s);
        PyMem_RawFree(s);
    }
    return capsule;
}

static PyObject *table_arrow_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"requested_schema"};
    static const df_py_sig sig = {"Table.__arrow_c_stream__", names, 1, 1, 0, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[1];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    /* A requested schema is a hint the producer may ignore; batches keep their own schema. */
    void *handle;
    return stream_capsule(st, ((TableObject *)self)->table, false, &handle);
}

/*
 * pyarrow reads the stream with the GIL released on this thread; the
 * stream's get_next watches for Ctrl-C, and a failure is raised as what it
 * was (KeyboardInterrupt, DeltaFunnelError with phase and kind) instead of
 * pyarrow's OSError echo of the message.
 */
static PyObject *table_to_arrow(PyObject *self, PyObject *unused) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *pa = PyImport_ImportModule("pyarrow");
    if (!pa) {
        if (PyErr_ExceptionMatches(PyExc_ImportError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ImportError, "Table.to_arrow() needs pyarrow (pip install pyarrow)");
        }
        return NULL;
    }
    PyObject *reader_type = PyObject_GetAttrString(pa, "RecordBatchReader");
    Py_DECREF(pa);
    if (!reader_type) return NULL;
    void *handle;
    PyObject *capsule = stream_capsule(st, ((TableObject *)self)->table, true, &handle);
    PyObject *reader = capsule ? PyObject_CallMethod(reader_type, "_import_from_c_capsule", "O", capsule) : NULL;
    Py_DECREF(reader_type);
    Py_XDECREF(capsule);
    if (!reader) return NULL;
    PyObject *t = PyObject_CallMethod(reader, "read_all", NULL);
    if (!t) df_py_stream_raise(st, handle);
    Py_DECREF(reader);
    return t;
}

static PyObject *table_schema(PyObject *self, void *unused) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    char *json = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_table_schema_json(((TableObject *)self)->table, &json, &err) != DF_OK) return df_py_raise(st, &err);
    PyObject *out = df_py_json(st, json);
    df_free(json);
    return out;
}

static PyObject *table_repr(PyObject *self) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    char *text = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_table_repr(((TableObject *)self)->table, &text, &err) != DF_OK) return df_py_raise(st, &err);
    PyObject *s = decode(text);
    df_free(text);
    return s;
}

/* ------------------------------------------------------------------------ */
/* SQL Server outputs                                                        */

typedef struct {
    PyObject_HEAD
    PyObject *session;               /* the Session of the spec's table */
    df_output_spec *spec;            /* owned */
} OutputSpecObject;

df_output_spec *df_py_output_spec_handle(PyObject *obj) { return ((OutputSpecObject *)obj)->spec; }
PyObject *df_py_output_spec_session(PyObject *obj) { return ((OutputSpecObject *)obj)->session; }

static int check_target_args(PyObject **in, int n) {
    const char *s;
    for (int i = 0; i < n; i++) {
        if (!in[i]) continue;
        if (i < 3 ? df_py_req_str(in[i], &s) < 0 : df_py_opt_str(in[i], &s) < 0) return -1;
    }
    return 0;
}

/* Builds the native spec from (schema, table, load_mode, name, connection_string). */
static df_output_spec *make_spec(df_py_state *st, TableObject *t, PyObject **in) {
    const char *schema, *table, *mode, *name = NULL, *conn = NULL;
    if (df_py_req_str(in[0], &schema) < 0 || df_py_req_str(in[1], &table) < 0 || df_py_req_str(in[2], &mode) < 0 ||
        (in[3] && df_py_opt_str(in[3], &name) < 0) || (in[4] && df_py_opt_str(in[4], &conn) < 0))
        return NULL;
    df_output_spec *spec = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_table_to_mssql(t->table, schema, table, mode, name, conn, &spec, &err) != DF_OK) {
        df_py_raise(st, &err);
        return NULL;
    }
    return spec;
}

static PyObject *table_to_mssql(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"schema", "table", "load_mode", "name", "connection_string"};
    static const df_py_sig sig = {"Table.to_mssql", names, 5, 0, 0, 0x7u};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[5];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0 || check_target_args(in, 5) < 0) return NULL;
    df_output_spec *spec = make_spec(st, (TableObject *)self, in);
    if (!spec) return NULL;
    OutputSpecObject *o = PyObject_GC_New(OutputSpecObject, st->output_spec_type);
    if (!o) {
        df_output_spec_free(spec);
        return NULL;
    }
    o->session = Py_NewRef(((TableObject *)self)->session);
    o->spec = spec;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

/* ---- the logging sink: native events -> deltafunnel._logbridge ---- */

static const char *level_name(df_log_level level) {
    switch (level) {
    case DF_LOG_ERROR: return "error";
    case DF_LOG_WARN: return "warn";
    case DF_LOG_INFO: return "info";
    case DF_LOG_DEBUG: return "debug";
    default: return "trace";
    }
}

static void log_sink(void *user, df_log_level level, const char *target, const char *event, const char *fields_json) {
    df_py_state *st = user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *fields = df_py_json(st, fields_json);
    if (fields && PyDict_Check(fields)) df_py_log_event(level_name(level), event, fields);
    Py_XDECREF(fields);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    PyGILState_Release(g);
    (void)target;
}

void df_py_log_sink_init(df_py_state *st, df_log_sink *sink) {
    sink->fn = log_sink;
    sink->user = st;
}

/* One native write, run by df_py_run_interruptible. */
typedef struct write_call {
    const df_output_spec *spec;      /* borrowed */
    const df_write_options *opts;    /* borrowed */
    char *report;                    /* the report JSON */
    df_error err;                    /* the failure */
    df_errkind k;                    /* df_output_write's result */
} write_call;

static void write_main(void *arg) {
    write_call *c = arg;
    c->k = df_output_write(c->spec, c->opts, &c->report, &c->err);
}

PyObject *df_py_raise_write_interrupt(df_py_state *st, PyObject *interrupt, const char *status, df_errkind k,
                                      df_error *err, char *report) {
    PyObject *out = NULL;
    if (k != DF_OK) {
        df_py_raise(st, err);
    } else {
        out = df_py_json(st, report);
        if (!out) PyErr_Clear();
    }
    df_free(report);
    df_py_raise_interrupt(interrupt, status, out);
    Py_XDECREF(out);
    return NULL;
}

/*
 * Runs one output with the GIL released (interruptible by Ctrl-C unless
 * ranked-profiled, which must stay on this thread); returns the report dict
 * or raises.  An interrupted write is cancelled (rolled back by the
 * lifecycle) and KeyboardInterrupt carries the outcome.
 */
static PyObject *run_write(df_py_state *st, df_output_spec *spec, int dry, int progress_mode, int profile,
                           int parallel, PyObject *ranked) {
    df_ranked_profile *rp = NULL;
    if (df_py_ranked_begin(st, ranked, &rp) < 0) return NULL;
    df_py_progress progress;
    df_write_options opts;
    df_write_options_init(&opts);
    opts.dry_run = dry != 0;
    opts.execution_profile = profile != 0;
    opts.parallel_connections = parallel;
    df_py_progress_init(&progress, progress_mode, &opts.progress);
    df_py_log_sink_init(st, &opts.log);
    _Atomic bool cancel;
    atomic_init(&cancel, false);
    opts.cancel = &cancel;
    write_call c;
    memset(&c, 0, sizeof c);
    c.spec = spec;
    c.opts = &opts;
    PyObject *interrupt = NULL;
    if (dry) {
        write_main(&c);
    } else if (rp) {
        Py_BEGIN_ALLOW_THREADS
        write_main(&c);
        Py_END_ALLOW_THREADS
    } else {
        df_py_run_interruptible(write_main, &c, &cancel, &interrupt);
    }
    char *report = c.report;
    df_error err = c.err;
    df_errkind k = c.k;
    if (interrupt) {
        df_py_progress_done(&progress);
        Py_CLEAR(progress.interrupt);
        return df_py_raise_write_interrupt(st, interrupt, k == DF_OK ? "completed" : "cancelled", k, &err, report);
    }
    if (k != DF_OK)
        return df_py_progress_deliver(&progress, df_py_ranked_outcome(st, rp, df_py_raise(st, &err), "failed", false),
                                      "failed");
    PyObject *out = df_py_json(st, report);
    df_free(report);
    return df_py_progress_deliver(&progress, df_py_ranked_outcome(st, rp, out, "completed", true), "completed");
}

static PyObject *table_write_to_mssql(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"schema", "table", "load_mode", "dry_run", "name", "connection_string",
                                        "progress", "execution_profile", "ranked_profile", "parallel_connections"};
    static const df_py_sig sig = {"Table.write_to_mssql", names, 10, 0, 0, 0x7u};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[10];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    PyObject *targets[5] = {in[0], in[1], in[2], in[4], in[5]};
    int dry, dry_none, mode, profile;
    if (check_target_args(targets, 5) < 0 || df_py_opt_bool(in[3], &dry, &dry_none) < 0) return NULL;
    if (dry_none) dry = 0;
    if (dry && ((in[7] && in[7] == Py_True) || (in[8] && in[8] != Py_None)))
        return df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE,
                                  "profiling is only supported for execute `write_to_mssql` calls");
    if (df_py_check_profile_args(st, in[6], in[7], in[8], &mode, &profile) < 0) return NULL;
    int64_t parallel = 0;
    if (in[9] && in[9] != Py_None) {
        if (PyBool_Check(in[9]) || !PyLong_Check(in[9])) return (df_py_type_error(in[9], "int"), NULL);
        parallel = PyLong_AsLongLong(in[9]);
        if (parallel == -1 && PyErr_Occurred()) return NULL;
        if (parallel < 1 || parallel > DF_MAX_PARALLEL_CONNECTIONS)
            return df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE,
                                      "`parallel_connections` must be an integer in "
                                      "1..=" Py_STRINGIFY(DF_MAX_PARALLEL_CONNECTIONS));
    }
    df_output_spec *spec = make_spec(st, (TableObject *)self, targets);
    if (!spec) return NULL;
    PyObject *out = run_write(st, spec, dry, mode, profile, (int)parallel, dry ? NULL : in[8]);
    df_output_spec_free(spec);
    return out;
}

static PyObject *output_spec_repr(PyObject *self) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    char *text = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_output_spec_repr(((OutputSpecObject *)self)->spec, &text, &err) != DF_OK) return df_py_raise(st, &err);
    PyObject *s = decode(text);
    df_free(text);
    return s;
}

static int output_spec_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((OutputSpecObject *)self)->session);
    return 0;
}

static int output_spec_clear(PyObject *self) {
    Py_CLEAR(((OutputSpecObject *)self)->session);
    return 0;
}

static void output_spec_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    output_spec_clear(self);
    df_output_spec_free(((OutputSpecObject *)self)->spec);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* ------------------------------------------------------------------------ */
/* Type plumbing                                                             */

static int table_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((TableObject *)self)->session);
    return 0;
}

static int table_clear(PyObject *self) {
    Py_CLEAR(((TableObject *)self)->session);
    return 0;
}

static void table_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    table_clear(self);
    df_table_release(((TableObject *)self)->table);
    tp->tp_free(self);
    Py_DECREF(tp);
}

#define FASTCALL(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef table_methods[] = {
    {"alias", FASTCALL(table_alias),
     "alias($self, /, name)\n--\n\nRegisters this pending SQL-derived table under `name` for later SQL."},
    {"preview", FASTCALL(table_preview),
     "preview($self, /, limit=20, *, progress=None, execution_profile=False, ranked_profile=None)\n--\n\n"
     "Runs the table with LIMIT `limit` and returns a Preview (text, html, phase_timings,\n"
     "execution_profile).  execution_profile=True adds per-operator metrics, including the\n"
     "scan's file, row-group and page counters."},
    {"show", FASTCALL(table_show),
     "show($self, /, limit=20, *, progress=None)\n--\n\nPrints the preview text to stdout."},
    {"to_mssql", FASTCALL(table_to_mssql),
     "to_mssql($self, /, *, schema, table, load_mode, name=None, connection_string=None)\n--\n\n"
     "Describes a SQL Server output for Session.write_all (checks the arguments; no I/O)."},
    {"write_to_mssql", FASTCALL(table_write_to_mssql),
     "write_to_mssql($self, /, *, schema, table, load_mode, dry_run=None, name=None, connection_string=None, "
     "progress=None, execution_profile=False, ranked_profile=None, parallel_connections=None)\n--\n\n"
     "Writes the table to SQL Server and returns the report dict; dry_run=True plans without I/O.\n"
     "Load modes: append_existing (all-or-nothing), create_and_load, replace (atomic).\n"
     "parallel_connections (ours, 1.." Py_STRINGIFY(DF_MAX_PARALLEL_CONNECTIONS)
     ", default 1): bulk connections loading the staging table\n"
     "of create_and_load and replace concurrently."},
    {"to_arrow", table_to_arrow, METH_NOARGS,
     "to_arrow($self, /)\n--\n\nExecutes the table and returns a pyarrow.Table (requires pyarrow)."},
    {"__arrow_c_stream__", FASTCALL(table_arrow_stream),
     "__arrow_c_stream__($self, /, requested_schema=None)\n--\n\n"
     "Executes the table and returns an Arrow C stream capsule (Arrow PyCapsule interface)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef table_getset[] = {
    {"schema", table_schema, NULL,
     "The output columns: a list of {'index', 'name', 'arrow_type', 'nullable'} dicts.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot table_slots[] = {
    {Py_tp_repr, table_repr},
    {Py_tp_methods, table_methods},
    {Py_tp_getset, table_getset},
    {Py_tp_traverse, table_traverse},
    {Py_tp_clear, table_clear},
    {Py_tp_dealloc, table_dealloc},
    {Py_tp_doc, "A lazy table: a registered Delta source or a derived SQL table."},
    {0, NULL},
};

static PyType_Spec table_spec = {
    .name = "deltafunnel.Table",
    .basicsize = sizeof(TableObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = table_slots,
};

static PyObject *preview_get(PyObject *self, void *closure) {
    PreviewObject *p = (PreviewObject *)self;
    PyObject *fields[4] = {p->text, p->html, p->timings, p->profile};
    return Py_NewRef(fields[(intptr_t)closure]);
}

static PyObject *preview_str(PyObject *self) { return Py_NewRef(((PreviewObject *)self)->text); }

static PyObject *preview_repr_html(PyObject *self, PyObject *unused) { return Py_NewRef(((PreviewObject *)self)->html); }

static int preview_traverse(PyObject *self, visitproc visit, void *arg) {
    PreviewObject *p = (PreviewObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(p->text);
    Py_VISIT(p->html);
    Py_VISIT(p->timings);
    Py_VISIT(p->profile);
    return 0;
}

static int preview_clear(PyObject *self) {
    PreviewObject *p = (PreviewObject *)self;
    Py_CLEAR(p->text);
    Py_CLEAR(p->html);
    Py_CLEAR(p->timings);
    Py_CLEAR(p->profile);
    return 0;
}

static void preview_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    preview_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyGetSetDef preview_getset[] = {
    {"text", preview_get, NULL, "The rows as an ASCII grid.", (void *)0},
    {"html", preview_get, NULL, "The rows as an HTML table.", (void *)1},
    {"phase_timings", preview_get, NULL, "The seven preview phase timings.", (void *)2},
    {"execution_profile", preview_get, NULL, "Per-operator metrics, or None.", (void *)3},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef preview_methods[] = {
    {"_repr_html_", preview_repr_html, METH_NOARGS, "_repr_html_($self, /)\n--\n\nThe HTML view (notebooks)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot preview_slots[] = {
    {Py_tp_str, preview_str},
    {Py_tp_repr, preview_str},
    {Py_tp_getset, preview_getset},
    {Py_tp_methods, preview_methods},
    {Py_tp_traverse, preview_traverse},
    {Py_tp_clear, preview_clear},
    {Py_tp_dealloc, preview_dealloc},
    {Py_tp_doc, "The result of Table.preview: read-only text, html, phase_timings and execution_profile."},
    {0, NULL},
};

static PyType_Spec preview_spec = {
    .name = "deltafunnel.Preview",
    .basicsize = sizeof(PreviewObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = preview_slots,
};

static PyType_Slot output_spec_slots[] = {
    {Py_tp_repr, output_spec_repr},
    {Py_tp_traverse, output_spec_traverse},
    {Py_tp_clear, output_spec_clear},
    {Py_tp_dealloc, output_spec_dealloc},
    {Py_tp_doc, "A SQL Server output description made by Table.to_mssql, for Session.write_all."},
    {0, NULL},
};

static PyType_Spec output_spec_spec = {
    .name = "deltafunnel.MssqlOutputSpec",
    .basicsize = sizeof(OutputSpecObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = output_spec_slots,
};

int df_py_add_table_types(PyObject *module, df_py_state *st) {
    st->table_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &table_spec, NULL);
    st->preview_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &preview_spec, NULL);
    st->output_spec_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &output_spec_spec, NULL);
    if (!st->table_type || !st->preview_type || !st->output_spec_type) return -1;
    if (PyModule_AddType(module, st->table_type) < 0 || PyModule_AddType(module, st->preview_type) < 0 ||
        PyModule_AddType(module, st->output_spec_type) < 0)
        return -1;
    return 0;
}
