/*
 * df_error -> deltafunnel.DeltaFunnelError.
 *
 * The exception is constructed with its message as the only argument (so
 * str(exc) is the message) and carries the reference attributes `phase`,
 * `kind`, `message`, `context` (the error's JSON context decoded, or None)
 * plus ours: `offset` (character offset into the input, or None) and `code`
 * (a numeric detail such as an errno, 0 when none).  Out-of-memory errors
 * become MemoryError.
 */
#include "module.h"

PyObject *df_py_json(df_py_state *st, const char *text) {
    if (!text) Py_RETURN_NONE;
    return PyObject_CallFunction(st->json_loads, "s", text);
}

static PyObject *make_error(df_py_state *st, const char *phase, const char *kind, const char *message,
                            PyObject *context, int64_t offset, int64_t code) {
    PyObject *msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
    if (!msg) return NULL;
    PyObject *exc = PyObject_CallOneArg(st->error_type, msg);
    if (!exc) {
        Py_DECREF(msg);
        return NULL;
    }
    PyObject *off = offset >= 0 ? PyLong_FromLongLong(offset) : Py_NewRef(Py_None);
    PyObject *cd = PyLong_FromLongLong(code);
    int rc = (!off || !cd) ? -1 : 0;
    if (rc == 0) {
        PyObject *p = PyUnicode_FromString(phase);
        rc = p ? PyObject_SetAttrString(exc, "phase", p) : -1;
        Py_XDECREF(p);
    }
    if (rc == 0) {
        PyObject *k = PyUnicode_FromString(kind);
        rc = k ? PyObject_SetAttrString(exc, "kind", k) : -1;
        Py_XDECREF(k);
    }
    if (rc == 0) rc = PyObject_SetAttrString(exc, "message", msg);
    if (rc == 0) rc = PyObject_SetAttrString(exc, "context", context ? context : Py_None);
    if (rc == 0) rc = PyObject_SetAttrString(exc, "offset", off);
    if (rc == 0) rc = PyObject_SetAttrString(exc, "code", cd);
    Py_XDECREF(off);
    Py_XDECREF(cd);
    Py_DECREF(msg);
    if (rc < 0) {
        Py_DECREF(exc);
        return NULL;
    }
    return exc;
}

PyObject *df_py_raise_simple(df_py_state *st, df_errkind kind, const char *message) {
    PyObject *exc = make_error(st, df_errkind_default_phase(kind), df_errkind_name(kind), message, NULL, -1, 0);
    if (exc) {
        PyErr_SetObject(st->error_type, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *df_py_raise(df_py_state *st, df_error *err) {
    if (err->kind == DF_ERR_OUT_OF_MEMORY) {
        df_error_clear(err);
        return PyErr_NoMemory();
    }
    PyObject *context = NULL;
    if (err->context) {
        context = df_py_json(st, err->context);
        if (!context) {
            /* A context that does not decode is dropped; the error itself still goes out. */
            PyErr_Clear();
        }
    }
    const char *kind = df_errkind_name(err->kind);
    const char *phase = err->phase[0] ? err->phase : df_errkind_default_phase(err->kind);
    PyObject *exc = make_error(st, phase, kind, err->message, context, err->offset, err->code);
    Py_XDECREF(context);
    df_error_clear(err);
    if (exc) {
        PyErr_SetObject(st->error_type, exc);
        Py_DECREF(exc);
    }
    return NULL;
}
