/*
 * deltafunnel.Session and deltafunnel.PendingDeltaSource.
 *
 * Session(...) checks argument types first (TypeErrors, as the reference's
 * binder does), then hands every value to the library, which produces the
 * DeltaFunnelError (phase, kind, message) of each bad option.  Source
 * registration releases the GIL while the snapshot loads; SQL planning and
 * aliasing are quick and keep it.
 */
#include "module.h"

#include <stdatomic.h>

typedef struct {
    PyObject_HEAD
    df_session *session;             /* owned reference */
    PyObject *weakrefs;              /* weak reference list */
} SessionObject;

typedef struct {
    PyObject_HEAD
    PyObject *session;               /* the Session that made it */
    df_delta_source *source;         /* validated arguments, owned */
} PendingObject;

df_session *df_py_session_handle(PyObject *session) { return ((SessionObject *)session)->session; }

/* ------------------------------------------------------------------------ */
/* Session construction                                                      */

static int check_dict(PyObject *obj) {
    if (obj && obj != Py_None && !PyDict_Check(obj)) return df_py_type_error(obj, "dict");
    return 0;
}

/* Sets one option from a Python value; raises on failure. */
static int set_option(df_py_state *st, df_session_options *opts, const char *name, PyObject *obj) {
    df_py_value_pool pool = {{0}, 0};
    df_value v;
    if (df_py_to_value(obj, &v, &pool, 0) < 0) {
        df_py_value_pool_free(&pool);
        return -1;
    }
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_session_options_set(opts, name, &v, &err);
    df_py_value_pool_free(&pool);
    if (k != DF_OK) {
        df_py_raise(st, &err);
        return -1;
    }
    return 0;
}

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static const char *const names[] = {"default_mssql_connection_string", "target_partitions", "output_batch_size",
                                        "provider_scan_options", "validation_options", "schema_options"};
    static const df_py_sig sig = {"Session.__new__", names, 6, 0, 0, 0};
    df_py_state *st = df_py_state_of_type(type);
    PyObject *in[6];
    if (df_py_bind_tuple(&sig, args, kwargs, in) < 0) return NULL;
    const char *conn;
    if (df_py_opt_str(in[0], &conn) < 0) return NULL;
    if (in[3] && in[3] != Py_None && !PyObject_TypeCheck(in[3], st->scan_options_type))
        return (df_py_type_error(in[3], "ProviderScanOptions"), NULL);
    if (check_dict(in[4]) < 0 || check_dict(in[5]) < 0) return NULL;

    df_session_options *opts;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_session_options_new(&opts, &err) != DF_OK) return df_py_raise(st, &err);
    int rc = 0;
    if (in[0]) rc = set_option(st, opts, names[0], in[0]);
    if (rc == 0 && in[1]) rc = set_option(st, opts, names[1], in[1]);
    if (rc == 0 && in[2]) rc = set_option(st, opts, names[2], in[2]);
    if (rc == 0 && in[3] && in[3] != Py_None) rc = df_py_apply_scan_options(st, in[3], opts);
    if (rc == 0 && in[4]) rc = set_option(st, opts, names[4], in[4]);
    if (rc == 0 && in[5]) rc = set_option(st, opts, names[5], in[5]);
    df_session *session = NULL;
    if (rc == 0 && df_session_new(opts, &session, &err) != DF_OK) {
        df_py_raise(st, &err);
        rc = -1;
    }
    df_session_options_free(opts);
    if (rc < 0) return NULL;
    SessionObject *self = (SessionObject *)type->tp_alloc(type, 0);
    if (!self) {
        df_session_free(session);
        return NULL;
    }
    self->session = session;
    return (PyObject *)self;
}

static void session_dealloc(PyObject *obj) {
    SessionObject *self = (SessionObject *)obj;
    PyTypeObject *tp = Py_TYPE(obj);
    PyObject_GC_UnTrack(obj);
    if (self->weakrefs) PyObject_ClearWeakRefs(obj);
    df_session_free(self->session);
    tp->tp_free(obj);
    Py_DECREF(tp);
}

static int session_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    return 0;
}

/* Returns a new str from a library-allocated string (freed here), or raises. */
static PyObject *take_string(df_py_state *st, df_errkind k, char *text, df_error *err) {
    if (k != DF_OK) return df_py_raise(st, err);
    PyObject *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
    df_free(text);
    return s;
}

static PyObject *session_repr(PyObject *obj) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(obj));
    char *text = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_session_repr(((SessionObject *)obj)->session, &text, &err);
    return take_string(st, k, text, &err);
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */

/* Registers `source` under `name`, with the GIL released; returns a Table. */
static PyObject *register_source(df_py_state *st, PyObject *session_obj, const df_delta_source *source,
                                 const char *name, int progress_mode) {
    df_py_progress progress;
    df_progress sink;
    df_py_progress_init(&progress, progress_mode, &sink);
    df_table *table = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k;
    df_session *session = df_py_session_handle(session_obj);
    Py_BEGIN_ALLOW_THREADS
    k = df_session_register_delta(session, source, name, &sink, &table, &err);
    Py_END_ALLOW_THREADS
    df_py_progress_done(&progress);
    PyObject *fields = Py_BuildValue("{s:s}", "source_name", name);
    if (k != DF_OK) {
        if (fields) {
            PyObject *phase = PyUnicode_FromString(err.phase), *kind = PyUnicode_FromString(df_errkind_name(err.kind));
            if (phase && kind) {
                PyDict_SetItemString(fields, "error_phase", phase);
                PyDict_SetItemString(fields, "error_kind", kind);
            }
            Py_XDECREF(phase);
            Py_XDECREF(kind);
            df_py_log_event("warn", "source_registration.failed", fields);
        }
        PyErr_Clear();
        Py_XDECREF(fields);
        return df_py_raise(st, &err);
    }
    if (fields) {
        PyObject *v = PyLong_FromLongLong(df_table_snapshot_version(table));
        if (v) PyDict_SetItemString(fields, "snapshot_version", v);
        Py_XDECREF(v);
        df_py_log_event("info", "source_registration.completed", fields);
        Py_DECREF(fields);
    }
    PyErr_Clear();
    return df_py_table_new(st, session_obj, table);
}

static int progress_mode_of(PyObject *obj, int *mode) {
    int value, is_none;
    if (df_py_opt_bool(obj, &value, &is_none) < 0) return -1;
    *mode = is_none ? 1 : (value ? 2 : 0);
    return 0;
}

static PyObject *session_delta_lake(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"source_uri", "version", "storage_options", "name", "progress"};
    static const df_py_sig sig = {"Session.delta_lake", names, 5, 1, 1, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[5];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    const char *uri, *name;
    int mode;
    if (df_py_req_str(in[0], &uri) < 0 || check_dict(in[2]) < 0 || df_py_opt_str(in[3], &name) < 0 ||
        progress_mode_of(in[4], &mode) < 0)
        return NULL;
    df_py_value_pool pool = {{0}, 0};
    df_value version, options;
    if (df_py_to_value(in[1], &version, &pool, 0) < 0 || df_py_to_value(in[2], &options, &pool, 0) < 0) {
        df_py_value_pool_free(&pool);
        return NULL;
    }
    df_delta_source *source = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_delta_source_new(uri, &version, &options, &source, &err);
    df_py_value_pool_free(&pool);
    if (k != DF_OK) return df_py_raise(st, &err);
    if (!name) {
        PendingObject *p = PyObject_GC_New(PendingObject, st->pending_type);
        if (!p) {
            df_delta_source_free(source);
            return NULL;
        }
        p->session = Py_NewRef(self);
        p->source = source;
        PyObject_GC_Track(p);
        return (PyObject *)p;
    }
    PyObject *table = register_source(st, self, source, name, mode);
    df_delta_source_free(source);
    return table;
}

static PyObject *session_table_from_sql(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames) {
    static const char *const names[] = {"sql"};
    static const df_py_sig sig = {"Session.table_from_sql", names, 1, 1, 1, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[1];
    const char *sql;
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0 || df_py_req_str(in[0], &sql) < 0) return NULL;
    df_table *table = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_session_table_from_sql(((SessionObject *)self)->session, sql, &table, &err) != DF_OK)
        return df_py_raise(st, &err);
    return df_py_table_new(st, self, table);
}

/* One native write_all, run by df_py_run_interruptible. */
typedef struct write_all_call {
    df_session *session;             /* borrowed */
    df_output_spec *const *specs;    /* borrowed */
    int32_t nspecs;                  /* entries of specs */
    const df_write_all_options *opts; /* borrowed */
    char *report;                    /* the report JSON */
    df_error err;                    /* the failure */
    df_errkind k;                    /* df_session_write_all's result */
} write_all_call;

static void write_all_main(void *arg) {
    write_all_call *c = arg;
    c->k = df_session_write_all(c->session, c->specs, c->nspecs, c->opts, &c->report, &c->err);
}

/*
 * write_all / write_all_for_stream_benchmark: Python type checks here
 * (outputs must be MssqlOutputSpec, options a dict, strict bools), every
 * value check in the library; executes run with the GIL released.
 */
static PyObject *write_all_common(PyObject *self, PyObject **in, PyObject *progress, int has_progress, int dry,
                                  int bench) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    if (PyUnicode_Check(in[0]) || PyBytes_Check(in[0])) return (df_py_type_error(in[0], "Sequence"), NULL);
    PyObject *seq = PySequence_Fast(in[0], "'outputs' must be a sequence of MssqlOutputSpec");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyObject_TypeCheck(item, st->output_spec_type)) {
            Py_DECREF(seq);
            return (df_py_type_error(item, "MssqlOutputSpec"), NULL);
        }
    }
    if (check_dict(in[1]) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    int mode = 0, profile = 0;
    if (df_py_check_profile_args(st, has_progress ? progress : NULL, in[has_progress ? 4 : 2],
                                 in[has_progress ? 5 : 3], &mode, &profile) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    df_output_spec **specs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *specs);
    if (!specs) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        specs[i] = df_py_output_spec_handle(item);
        /* Identity of the Session object, as the reference checks it. */
        if (df_py_output_spec_session(item) != self) specs[i] = NULL;
    }
    df_py_value_pool pool;
    memset(&pool, 0, sizeof pool);
    df_value options = df_value_none();
    if (in[1] && df_py_to_value(in[1], &options, &pool, 0) < 0) {
        PyMem_Free(specs);
        Py_DECREF(seq);
        return NULL;
    }
    df_write_all_options opts;
    df_write_all_options_init(&opts);
    opts.write.dry_run = dry != 0;
    opts.write.execution_profile = profile != 0;
    opts.stream_benchmark = bench != 0;
    opts.options = in[1] ? &options : NULL;
    df_py_progress progress_state;
    df_py_progress_init(&progress_state, n ? mode : 0, &opts.write.progress);
    df_py_log_sink_init(st, &opts.write.log);
    df_error err;
    memset(&err, 0, sizeof err);
    char *report = NULL;
    df_errkind k = DF_OK;
    for (Py_ssize_t i = 0; i < n && k == DF_OK; i++)
        if (!specs[i]) {
            df_error_set(&err, DF_ERR_OUTPUT_SESSION_MISMATCH, "all output specs must belong to this Session");
            df_error_set_phase(&err, "config");
            k = DF_ERR_OUTPUT_SESSION_MISMATCH;
        }
    PyObject *ranked = dry ? NULL : in[has_progress ? 5 : 3];
    df_ranked_profile *rp = NULL;
    if (k == DF_OK && df_py_ranked_begin(st, ranked, &rp) < 0) {
        df_py_value_pool_free(&pool);
        PyMem_Free(specs);
        Py_DECREF(seq);
        return df_py_progress_deliver(&progress_state, NULL, "failed");
    }
    _Atomic bool cancel;
    atomic_init(&cancel, false);
    opts.write.cancel = &cancel;
    PyObject *interrupt = NULL;
    if (k == DF_OK) {
        write_all_call c = {((SessionObject *)self)->session, specs, (int32_t)n, &opts, NULL, err, DF_OK};
        if (dry) {
            write_all_main(&c);
        } else if (rp) {
            /* A ranked profile captures the calling thread: the run stays here. */
            Py_BEGIN_ALLOW_THREADS
            write_all_main(&c);
            Py_END_ALLOW_THREADS
        } else {
            df_py_run_interruptible(write_all_main, &c, &cancel, &interrupt);
        }
        report = c.report;
        err = c.err;
        k = c.k;
    }
    df_py_value_pool_free(&pool);
    PyMem_Free(specs);
    Py_DECREF(seq);
    if (interrupt) {
        /* Cancelled: the running output was rolled back, later ones skipped; the report says so. */
        df_py_progress_done(&progress_state);
        Py_CLEAR(progress_state.interrupt);
        return df_py_raise_write_interrupt(st, interrupt, "cancelled", k, &err, report);
    }
    if (k != DF_OK)
        return df_py_progress_deliver(&progress_state,
                                      df_py_ranked_outcome(st, rp, df_py_raise(st, &err), "failed", false), "failed");
    bool failures = report && strstr(report, "\"all_succeeded\":false") != NULL;
    PyObject *out = df_py_json(st, report);
    df_free(report);
    const char *status = failures ? "completed_with_failures" : "completed";
    return df_py_progress_deliver(&progress_state, df_py_ranked_outcome(st, rp, out, status, true), status);
}

static PyObject *session_write_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"outputs", "options", "dry_run", "progress", "execution_profile",
                                        "ranked_profile"};
    static const df_py_sig sig = {"Session.write_all", names, 6, 1, 1, 0};
    PyObject *in[6];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    int dry, dry_none;
    if (df_py_opt_bool(in[2], &dry, &dry_none) < 0) return NULL;
    if (dry_none) dry = 0;
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    if (dry && ((in[4] && in[4] == Py_True) || (in[5] && in[5] != Py_None)))
        return df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE,
                                  "profiling is only supported for execute `write_all` calls");
    if (dry && in[1] && in[1] != Py_None)
        return df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE,
                                  "`options` is only supported for execute `write_all` calls");
    return write_all_common(self, in, in[3], 1, dry, 0);
}

static PyObject *session_write_all_bench(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames) {
    static const char *const names[] = {"outputs", "options", "execution_profile", "ranked_profile"};
    static const df_py_sig sig = {"Session.write_all_for_stream_benchmark", names, 4, 1, 1, 0};
    PyObject *in[4];
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0) return NULL;
    return write_all_common(self, in, NULL, 0, 0, 1);
}

static PyMethodDef session_methods[] = {
    {"delta_lake", (PyCFunction)(void (*)(void))session_delta_lake, METH_FASTCALL | METH_KEYWORDS,
     "delta_lake($self, /, source_uri, *, version=None, storage_options=None, name=None, progress=None)\n--\n\n"
     "Describes a Delta table.  With `name` the snapshot is loaded and registered at once and a\n"
     "Table is returned; without it a PendingDeltaSource is returned (no I/O) and registered by\n"
     "its alias() method.  `version` pins a snapshot (default: the latest at registration)."},
    {"table_from_sql", (PyCFunction)(void (*)(void))session_table_from_sql, METH_FASTCALL | METH_KEYWORDS,
     "table_from_sql($self, /, sql)\n--\n\n"
     "Plans one read-only SQL query over the registered names and returns a lazy derived Table\n"
     "named table_<id>.  No rows are read."},
    {"write_all", (PyCFunction)(void (*)(void))session_write_all, METH_FASTCALL | METH_KEYWORDS,
     "write_all($self, /, outputs, *, options=None, dry_run=None, progress=None, execution_profile=False, "
     "ranked_profile=None)\n--\n\n"
     "Writes several outputs (made by Table.to_mssql) in order and returns the workflow report.\n"
     "Shared derived aliases are computed once (options: cache_mode auto/explicit/disabled,\n"
     "cache_aliases, cache_memory_budget_bytes, cache_spill_directory); after a failed output\n"
     "the later ones are skipped.  dry_run=True plans every output without I/O."},
    {"write_all_for_stream_benchmark", (PyCFunction)(void (*)(void))session_write_all_bench,
     METH_FASTCALL | METH_KEYWORDS,
     "write_all_for_stream_benchmark($self, /, outputs, *, options=None, execution_profile=False, "
     "ranked_profile=None)\n--\n\n"
     "Runs the write_all planning, caches and query streams, draining each output without\n"
     "contacting SQL Server (for measuring query cost)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef session_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(SessionObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot session_slots[] = {
    {Py_tp_new, session_new},
    {Py_tp_dealloc, session_dealloc},
    {Py_tp_traverse, session_traverse},
    {Py_tp_repr, session_repr},
    {Py_tp_methods, session_methods},
    {Py_tp_members, session_members},
    {Py_tp_doc, "Session(*, default_mssql_connection_string=None, target_partitions=None, output_batch_size=None, "
                "provider_scan_options=None, validation_options=None, schema_options=None)\n--\n\n"
                "A catalog of registered Delta sources and derived SQL tables.\n\n"
                "target_partitions (default: CPU count) and output_batch_size (default 8192) tune\n"
                "execution; provider_scan_options takes a ProviderScanOptions; validation_options and\n"
                "schema_options are stored for SQL Server outputs.  The connection string is never shown."},
    {0, NULL},
};

static PyType_Spec session_spec = {
    .name = "deltafunnel.Session",
    .basicsize = sizeof(SessionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = session_slots,
};

/* ------------------------------------------------------------------------ */
/* PendingDeltaSource                                                        */

static PyObject *pending_alias(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"name", "progress"};
    static const df_py_sig sig = {"PendingDeltaSource.alias", names, 2, 1, 1, 0};
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    PyObject *in[2];
    const char *name;
    int mode;
    if (df_py_bind(&sig, args, nargs, kwnames, in) < 0 || df_py_req_str(in[0], &name) < 0 ||
        progress_mode_of(in[1], &mode) < 0)
        return NULL;
    PendingObject *p = (PendingObject *)self;
    return register_source(st, p->session, p->source, name, mode);
}

static PyObject *pending_repr(PyObject *self) {
    df_py_state *st = df_py_state_of_type(Py_TYPE(self));
    char *text = NULL;
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = df_delta_source_repr(((PendingObject *)self)->source, &text, &err);
    return take_string(st, k, text, &err);
}

static int pending_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((PendingObject *)self)->session);
    return 0;
}

static int pending_clear(PyObject *self) {
    Py_CLEAR(((PendingObject *)self)->session);
    return 0;
}

static void pending_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    pending_clear(self);
    df_delta_source_free(((PendingObject *)self)->source);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef pending_methods[] = {
    {"alias", (PyCFunction)(void (*)(void))pending_alias, METH_FASTCALL | METH_KEYWORDS,
     "alias($self, /, name, *, progress=None)\n--\n\n"
     "Loads the snapshot and registers the source under `name`; returns its Table."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot pending_slots[] = {
    {Py_tp_repr, pending_repr},
    {Py_tp_methods, pending_methods},
    {Py_tp_traverse, pending_traverse},
    {Py_tp_clear, pending_clear},
    {Py_tp_dealloc, pending_dealloc},
    {Py_tp_doc, "A Delta source that is described but not registered yet (see Session.delta_lake)."},
    {0, NULL},
};

static PyType_Spec pending_spec = {
    .name = "deltafunnel.PendingDeltaSource",
    .basicsize = sizeof(PendingObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = pending_slots,
};

int df_py_add_session_types(PyObject *module, df_py_state *st) {
    st->session_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &session_spec, NULL);
    st->pending_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &pending_spec, NULL);
    if (!st->session_type || !st->pending_type) return -1;
    if (PyModule_AddType(module, st->session_type) < 0 || PyModule_AddType(module, st->pending_type) < 0) return -1;
    return 0;
}
