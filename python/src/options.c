/*
 * Frozen option classes: ProviderScanOptions, FileRepartitioning and
 * RankedProfileConfig.
 *
 * ProviderScanOptions validates through the library's session options (so
 * the messages are the library's), keeps the given values and hands them
 * to sessions.  FileRepartitioning is a two-member enumeration whose
 * members live on the class.  RankedProfileConfig is validated and kept;
 * operations given one run inside an operation-scoped ranked profile
 * (df_py_ranked_begin / df_py_ranked_end).
 */
#include "module.h"

/* ------------------------------------------------------------------------ */
/* FileRepartitioning                                                        */

typedef struct {
    PyObject_HEAD
    int value;                       /* 0 = FILL_MISSING_PARALLELISM, 1 = REBALANCE */
} RepartObject;

static PyObject *repart_repr(PyObject *self) {
    return PyUnicode_FromString(((RepartObject *)self)->value ? "FileRepartitioning.REBALANCE"
                                                              : "FileRepartitioning.FILL_MISSING_PARALLELISM");
}

static PyObject *repart_int(PyObject *self) { return PyLong_FromLong(((RepartObject *)self)->value); }

/* Instances of a heap type hold a reference to it. */
static void repart_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot repart_slots[] = {
    {Py_tp_repr, repart_repr},
    {Py_tp_str, repart_repr},
    {Py_nb_int, repart_int},
    {Py_tp_dealloc, repart_dealloc},
    {Py_tp_doc, "How Parquet files are split into ranged scan tasks.\n\n"
                "FILL_MISSING_PARALLELISM splits files only when whole-file grouping yields too few\n"
                "partitions; REBALANCE also rebalances groups that are already sufficient."},
    {0, NULL},
};

static PyType_Spec repart_spec = {
    .name = "deltafunnel.FileRepartitioning",
    .basicsize = sizeof(RepartObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = repart_slots,
};

/* ------------------------------------------------------------------------ */
/* ProviderScanOptions                                                       */

#define NSCAN 8
static const char *const scan_names[NSCAN] = {
    "max_concurrent_file_reads_per_scan",
    "max_concurrent_file_reads_per_partition",
    "output_buffer_capacity_per_partition",
    "native_async_prefetch_file_count_per_partition",
    "parquet_metadata_size_hint",
    "parquet_full_file_read_threshold",
    "intra_file_repartitioning",
    "use_view_types",
};

typedef struct {
    PyObject_HEAD
    PyObject *values[NSCAN];         /* validated values, in scan_names order */
} ScanObject;

/* The df_value of field i; FileRepartitioning members become their names. */
static int scan_value(df_py_state *st, int i, PyObject *obj, df_value *v, df_py_value_pool *pool) {
    if (i == 6 && obj != Py_None) {
        *v = df_value_none();
        if (obj == st->fill_missing)
            *v = df_value_str("fill_missing_parallelism");
        else if (obj == st->rebalance)
            *v = df_value_str("rebalance");
        else
            v->kind = DF_VALUE_OTHER;
        return 0;
    }
    return df_py_to_value(obj, v, pool, 0);
}

int df_py_apply_scan_options(df_py_state *st, PyObject *obj, df_session_options *opts) {
    ScanObject *so = (ScanObject *)obj;
    for (int i = 0; i < NSCAN; i++) {
        df_py_value_pool pool = {{0}, 0};
        df_value v;
        if (scan_value(st, i, so->values[i], &v, &pool) < 0) return -1;
        char name[96];
        snprintf(name, sizeof name, "provider_scan_options.%s", scan_names[i]);
        df_error err;
        memset(&err, 0, sizeof err);
        df_errkind k = df_session_options_set(opts, name, &v, &err);
        df_py_value_pool_free(&pool);
        if (k != DF_OK) {
            df_py_raise(st, &err);
            return -1;
        }
    }
    return 0;
}

static PyObject *scan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static const df_py_sig sig = {"ProviderScanOptions.__new__", scan_names, NSCAN, 0, 0, 0};
    df_py_state *st = df_py_state_of_type(type);
    PyObject *in[NSCAN];
    if (df_py_bind_tuple(&sig, args, kwargs, in) < 0) return NULL;
    PyObject *defaults[NSCAN] = {Py_None, NULL, NULL, NULL, NULL, Py_None, st->fill_missing, Py_False};
    static const long ints[NSCAN] = {0, 3, 1, 2, 65536, 0, 0, 0};
    ScanObject *self = (ScanObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    for (int i = 0; i < NSCAN; i++) {
        PyObject *v = in[i];
        if (!v) v = defaults[i] ? Py_NewRef(defaults[i]) : PyLong_FromLong(ints[i]);
        else Py_INCREF(v);
        if (!v) {
            Py_DECREF(self);
            return NULL;
        }
        if (i == 6 && v == Py_None) Py_SETREF(v, Py_NewRef(st->fill_missing));
        self->values[i] = v;
    }
    df_session_options *opts;
    df_error err;
    memset(&err, 0, sizeof err);
    if (df_session_options_new(&opts, &err) != DF_OK) {
        Py_DECREF(self);
        return df_py_raise(st, &err);
    }
    int rc = df_py_apply_scan_options(st, (PyObject *)self, opts);
    if (rc == 0 && df_session_options_validate(opts, &err) != DF_OK) {
        df_py_raise(st, &err);
        rc = -1;
    }
    df_session_options_free(opts);
    if (rc < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *scan_get(PyObject *self, void *closure) {
    return Py_NewRef(((ScanObject *)self)->values[(intptr_t)closure]);
}

static int scan_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    for (int i = 0; i < NSCAN; i++) Py_VISIT(((ScanObject *)self)->values[i]);
    return 0;
}

static int scan_clear(PyObject *self) {
    for (int i = 0; i < NSCAN; i++) Py_CLEAR(((ScanObject *)self)->values[i]);
    return 0;
}

static void scan_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    scan_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyGetSetDef scan_getset[] = {
    {"max_concurrent_file_reads_per_scan", scan_get, NULL, "Scan-wide file read cap (None = automatic).", (void *)0},
    {"max_concurrent_file_reads_per_partition", scan_get, NULL, "File reads per partition.", (void *)1},
    {"output_buffer_capacity_per_partition", scan_get, NULL, "Batches buffered per partition.", (void *)2},
    {"native_async_prefetch_file_count_per_partition", scan_get, NULL, "Files prefetched per partition.",
     (void *)3},
    {"parquet_metadata_size_hint", scan_get, NULL, "Footer prefetch bytes (None = no prefetch).", (void *)4},
    {"parquet_full_file_read_threshold", scan_get, NULL, "Files up to this size are read whole (None = never).",
     (void *)5},
    {"intra_file_repartitioning", scan_get, NULL, "A FileRepartitioning member.", (void *)6},
    {"use_view_types", scan_get, NULL, "Accepted for compatibility.", (void *)7},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot scan_slots[] = {
    {Py_tp_new, scan_new},
    {Py_tp_getset, scan_getset},
    {Py_tp_traverse, scan_traverse},
    {Py_tp_clear, scan_clear},
    {Py_tp_dealloc, scan_dealloc},
    {Py_tp_doc, "ProviderScanOptions(*, max_concurrent_file_reads_per_scan=None, "
                "max_concurrent_file_reads_per_partition=3, output_buffer_capacity_per_partition=1, "
                "native_async_prefetch_file_count_per_partition=2, parquet_metadata_size_hint=65536, "
                "parquet_full_file_read_threshold=None, intra_file_repartitioning=None, use_view_types=False)\n"
                "--\n\n"
                "Typed, frozen Delta scan options.  Counts must be non-negative integers (bools are\n"
                "rejected); bounds that must be positive are checked when the object is created.\n"
                "use_view_types is accepted for compatibility: string columns are always plain Utf8."},
    {0, NULL},
};

static PyType_Spec scan_spec = {
    .name = "deltafunnel.ProviderScanOptions",
    .basicsize = sizeof(ScanObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = scan_slots,
};

/* ------------------------------------------------------------------------ */
/* RankedProfileConfig                                                       */

typedef struct {
    PyObject_HEAD
    PyObject *report_path;           /* pathlib.Path */
    PyObject *artifact_path;         /* pathlib.Path or None */
    PyObject *sample_hz;             /* int 100 or 1000 */
    PyObject *max_spans;             /* positive int */
} RankedObject;

/* True when the last component of `path` names a file (not empty, "." or ".."). */
static int names_a_file(const char *path) {
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t len = n - start;
    if (len == 0) return 0;
    if (len == 1 && path[start] == '.') return 0;
    if (len == 2 && path[start] == '.' && path[start + 1] == '.') return 0;
    return 1;
}

/* os.fspath + checks; returns a new pathlib.Path or NULL (exception set). */
static PyObject *file_path(df_py_state *st, PyObject *obj, const char *param) {
    PyObject *fs = PyOS_FSPath(obj);
    if (!fs) return NULL;
    if (PyBytes_Check(fs)) {
        PyObject *dec = PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(fs), PyBytes_GET_SIZE(fs));
        Py_SETREF(fs, dec);
        if (!fs) return NULL;
    }
    const char *s = NULL;
    if (df_py_utf8(fs, &s) < 0) {
        Py_DECREF(fs);
        return NULL;
    }
    if (!names_a_file(s)) {
        Py_DECREF(fs);
        char msg[96];
        snprintf(msg, sizeof msg, "`%s` must name a file", param);
        return df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE, msg);
    }
    PyObject *pathlib = PyImport_ImportModule("pathlib");
    PyObject *path = pathlib ? PyObject_CallMethod(pathlib, "Path", "O", fs) : NULL;
    Py_XDECREF(pathlib);
    Py_DECREF(fs);
    return path;
}

static PyObject *ranked_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static const char *const names[] = {"report_path", "sample_hz", "artifact_path", "max_operator_activity_spans"};
    static const df_py_sig sig = {"RankedProfileConfig.__new__", names, 4, 1, 1, 0};
    df_py_state *st = df_py_state_of_type(type);
    PyObject *in[4];
    if (df_py_bind_tuple(&sig, args, kwargs, in) < 0) return NULL;
    RankedObject *self = (RankedObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->report_path = file_path(st, in[0], "report_path");
    if (!self->report_path) goto fail;
    PyObject *hz = in[1] ? in[1] : NULL;
    long hzv = 1000;
    if (hz) {
        int overflow = 0;
        hzv = PyLong_Check(hz) && !PyBool_Check(hz) ? PyLong_AsLongAndOverflow(hz, &overflow) : -1;
        if (overflow || (hzv != 100 && hzv != 1000)) {
            df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE, "`sample_hz` must be 100 or 1000");
            goto fail;
        }
    }
    self->sample_hz = PyLong_FromLong(hzv);
    if (!self->sample_hz) goto fail;
    if (in[2] && in[2] != Py_None) {
        self->artifact_path = file_path(st, in[2], "artifact_path");
        if (!self->artifact_path) goto fail;
    } else {
        self->artifact_path = Py_NewRef(Py_None);
    }
    if (in[3]) {
        PyObject *m = in[3];
        int ok = PyLong_Check(m) && !PyBool_Check(m);
        if (ok) {
            unsigned long long u = PyLong_AsUnsignedLongLong(m);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                ok = 0;
            } else {
                ok = u > 0;
            }
        }
        if (!ok) {
            df_py_raise_simple(st, DF_ERR_INVALID_OPTION_VALUE,
                               "`max_operator_activity_spans` must be a positive integer");
            goto fail;
        }
        self->max_spans = Py_NewRef(m);
    } else {
        self->max_spans = PyLong_FromLong(100000);
        if (!self->max_spans) goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyObject *ranked_repr(PyObject *self) {
    RankedObject *r = (RankedObject *)self;
    PyObject *report = PyObject_Str(r->report_path);
    PyObject *artifact = r->artifact_path == Py_None ? PyUnicode_FromString("None") : NULL;
    if (!artifact && report) {
        PyObject *s = PyObject_Str(r->artifact_path);
        artifact = s ? PyUnicode_FromFormat("\"%U\"", s) : NULL;
        Py_XDECREF(s);
    }
    PyObject *out = NULL;
    if (report && artifact)
        out = PyUnicode_FromFormat("deltafunnel.RankedProfileConfig(report_path=\"%U\", sample_hz=%S, "
                                   "artifact_path=%U, max_operator_activity_spans=%S)",
                                   report, r->sample_hz, artifact, r->max_spans);
    Py_XDECREF(report);
    Py_XDECREF(artifact);
    return out;
}

static PyObject *ranked_get(PyObject *self, void *closure) {
    RankedObject *r = (RankedObject *)self;
    PyObject *fields[4] = {r->report_path, r->sample_hz, r->artifact_path, r->max_spans};
    return Py_NewRef(fields[(intptr_t)closure]);
}

static int ranked_traverse(PyObject *self, visitproc visit, void *arg) {
    RankedObject *r = (RankedObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(r->report_path);
    Py_VISIT(r->artifact_path);
    Py_VISIT(r->sample_hz);
    Py_VISIT(r->max_spans);
    return 0;
}

static int ranked_clear(PyObject *self) {
    RankedObject *r = (RankedObject *)self;
    Py_CLEAR(r->report_path);
    Py_CLEAR(r->artifact_path);
    Py_CLEAR(r->sample_hz);
    Py_CLEAR(r->max_spans);
    return 0;
}

static void ranked_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ranked_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyGetSetDef ranked_getset[] = {
    {"report_path", ranked_get, NULL, "Where the HTML report goes (pathlib.Path).", (void *)0},
    {"sample_hz", ranked_get, NULL, "Sampling frequency: 100 or 1000.", (void *)1},
    {"artifact_path", ranked_get, NULL, "Where the .dfprofile artifact goes, or None.", (void *)2},
    {"max_operator_activity_spans", ranked_get, NULL, "Operator activity span budget.", (void *)3},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ranked_slots[] = {
    {Py_tp_new, ranked_new},
    {Py_tp_repr, ranked_repr},
    {Py_tp_getset, ranked_getset},
    {Py_tp_traverse, ranked_traverse},
    {Py_tp_clear, ranked_clear},
    {Py_tp_dealloc, ranked_dealloc},
    {Py_tp_doc, "RankedProfileConfig(report_path, *, sample_hz=1000, artifact_path=None, "
                "max_operator_activity_spans=100000)\n--\n\n"
                "Configuration of an operation-scoped ranked profile.  Pass it as ranked_profile= to\n"
                "Table.preview, Table.write_to_mssql, Session.write_all or\n"
                "Session.write_all_for_stream_benchmark: the operation runs under an in-process capture\n"
                "(native CPU samples at sample_hz, 100 or 1000) and the interactive HTML report is written\n"
                "to report_path (and the .dfprofile artifact to artifact_path).  Frozen; validated here."},
    {0, NULL},
};

static PyType_Spec ranked_spec = {
    .name = "deltafunnel.RankedProfileConfig",
    .basicsize = sizeof(RankedObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ranked_slots,
};

/* ------------------------------------------------------------------------ */
/* Running operations under a ranked profile                                 */

/* os.fspath(path) encoded with the file-system encoding; a new bytes object or NULL. */
static PyObject *fs_bytes(PyObject *path) {
    PyObject *fs = PyOS_FSPath(path);
    if (!fs) return NULL;
    if (PyBytes_Check(fs)) return fs;
    PyObject *b = PyUnicode_EncodeFSDefault(fs);
    Py_DECREF(fs);
    return b;
}

int df_py_ranked_begin(df_py_state *st, PyObject *cfg, df_ranked_profile **out) {
    *out = NULL;
    if (!cfg || cfg == Py_None) return 0;
    RankedObject *r = (RankedObject *)cfg;
    PyObject *report = fs_bytes(r->report_path);
    PyObject *artifact = report && r->artifact_path != Py_None ? fs_bytes(r->artifact_path) : NULL;
    if (!report || (r->artifact_path != Py_None && !artifact)) {
        Py_XDECREF(report);
        Py_XDECREF(artifact);
        return -1;
    }
    df_ranked_profile_options o;
    df_ranked_profile_options_init(&o);
    o.report_path = PyBytes_AS_STRING(report);
    o.artifact_path = artifact ? PyBytes_AS_STRING(artifact) : NULL;
    o.sample_hz = (uint32_t)PyLong_AsLong(r->sample_hz);
    o.max_operator_activity_spans = PyLong_AsUnsignedLongLong(r->max_spans);
    df_error err;
    memset(&err, 0, sizeof err);
    df_errkind k = PyErr_Occurred() ? DF_ERR_INVALID_OPTION_VALUE : df_ranked_profile_start(&o, out, &err);
    Py_DECREF(report);
    Py_XDECREF(artifact);
    if (PyErr_Occurred()) return -1;
    if (k != DF_OK) {
        df_py_raise(st, &err);
        return -1;
    }
    return 0;
}

int df_py_ranked_end(df_ranked_profile *rp, df_error *err) {
    if (!rp) return 0;
    df_errkind k;
    Py_BEGIN_ALLOW_THREADS
    k = df_ranked_profile_finish(rp, NULL, err);
    Py_END_ALLOW_THREADS
    return k == DF_OK ? 0 : -1;
}

PyObject *df_py_ranked_outcome(df_py_state *st, df_ranked_profile *rp, PyObject *result, const char *status,
                               bool attach_report) {
    df_error err;
    memset(&err, 0, sizeof err);
    PyObject *t = NULL, *v = NULL, *tb = NULL;
    if (!result) PyErr_Fetch(&t, &v, &tb); /* the operation's own error stays primary */
    int rc = df_py_ranked_end(rp, &err);
    if (!result) {
        df_error_clear(&err);
        PyErr_Restore(t, v, tb);
        return NULL;
    }
    if (rc == 0) return result;
    /* The operation completed; only the report failed.  Say so on the error so nobody retries it. */
    df_py_raise(st, &err);
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *s = PyUnicode_FromString(status);
    if (s && v) {
        if (PyObject_SetAttrString(v, "deltafunnel_operation_status", s) < 0) PyErr_Clear();
        if (attach_report && PyObject_SetAttrString(v, "deltafunnel_operation_report", result) < 0) PyErr_Clear();
    }
    Py_XDECREF(s);
    Py_DECREF(result);
    PyErr_Restore(t, v, tb);
    return NULL;
}

/* ------------------------------------------------------------------------ */

static PyObject *new_member(PyTypeObject *type, int value) {
    RepartObject *o = PyObject_New(RepartObject, type);
    if (o) o->value = value;
    return (PyObject *)o;
}

int df_py_add_option_types(PyObject *module, df_py_state *st) {
    st->repartitioning_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &repart_spec, NULL);
    if (!st->repartitioning_type) return -1;
    st->fill_missing = new_member(st->repartitioning_type, 0);
    st->rebalance = new_member(st->repartitioning_type, 1);
    if (!st->fill_missing || !st->rebalance) return -1;
    if (PyObject_SetAttrString((PyObject *)st->repartitioning_type, "FILL_MISSING_PARALLELISM", st->fill_missing) < 0 ||
        PyObject_SetAttrString((PyObject *)st->repartitioning_type, "REBALANCE", st->rebalance) < 0)
        return -1;
    st->scan_options_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &scan_spec, NULL);
    st->ranked_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &ranked_spec, NULL);
    if (!st->scan_options_type || !st->ranked_type) return -1;
    if (PyModule_AddType(module, st->repartitioning_type) < 0 || PyModule_AddType(module, st->scan_options_type) < 0 ||
        PyModule_AddType(module, st->ranked_type) < 0)
        return -1;
    return 0;
}
