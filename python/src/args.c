/*
 * Argument binding and value conversion.
 *
 * The binder reproduces the reference's TypeError wording ("Session.delta_lake()
 * takes 1 positional arguments but 2 were given", "... got an unexpected
 * keyword argument 'x'", "... missing 1 required positional argument:
 * 'source_uri'"), so scripts that inspect those messages behave the same.
 * Typed extraction errors read "'int' object is not an instance of 'str'".
 */
#include "module.h"

int df_py_type_error(PyObject *obj, const char *expected) {
    PyErr_Format(PyExc_TypeError, "'%s' object is not an instance of '%s'", Py_TYPE(obj)->tp_name, expected);
    return -1;
}

static int find_param(const df_py_sig *sig, PyObject *key) {
    for (int i = 0; i < sig->nparams; i++)
        if (PyUnicode_CompareWithASCIIString(key, sig->names[i]) == 0) return i;
    return -1;
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'" */
static PyObject *join_names(const df_py_sig *sig, const int *idx, int n) {
    PyObject *parts = PyList_New(0);
    if (!parts) return NULL;
    for (int i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : (i == n - 1 ? (n == 2 ? " and " : ", and ") : ", ");
        PyObject *s = PyUnicode_FromFormat("%s'%s'", sep, sig->names[idx[i]]);
        if (!s || PyList_Append(parts, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *empty = PyUnicode_FromString("");
    PyObject *joined = empty ? PyUnicode_Join(empty, parts) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(parts);
    return joined;
}

static int missing_error(const df_py_sig *sig, const int *idx, int n, const char *what) {
    PyObject *names = join_names(sig, idx, n);
    if (!names) return -1;
    PyErr_Format(PyExc_TypeError, "%s() missing %d required %s argument%s: %U", sig->fname, n, what,
                 n == 1 ? "" : "s", names);
    Py_DECREF(names);
    return -1;
}

/* Checks required parameters once everything is bound. */
static int check_required(const df_py_sig *sig, PyObject **out) {
    int idx[DF_PY_MAX_PARAMS], n = 0;
    for (int i = 0; i < sig->nrequired; i++)
        if (!out[i]) idx[n++] = i;
    if (n) return missing_error(sig, idx, n, "positional");
    for (int i = 0; i < sig->nparams; i++)
        if ((sig->required_kw >> i & 1u) && !out[i]) idx[n++] = i;
    if (n) return missing_error(sig, idx, n, "keyword");
    return 0;
}

static int bind_keyword(const df_py_sig *sig, PyObject *key, PyObject *value, PyObject **out) {
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "%s() keywords must be strings", sig->fname);
        return -1;
    }
    int i = find_param(sig, key);
    if (i < 0) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", sig->fname, key);
        return -1;
    }
    if (out[i]) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", sig->fname, sig->names[i]);
        return -1;
    }
    out[i] = value;
    return 0;
}

static int bind_positional(const df_py_sig *sig, Py_ssize_t nargs, PyObject **out) {
    for (int i = 0; i < sig->nparams; i++) out[i] = NULL;
    if (nargs > sig->npositional) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments but %zd %s given", sig->fname,
                     sig->npositional, nargs, nargs == 1 ? "was" : "were");
        return -1;
    }
    return 0;
}

int df_py_bind(const df_py_sig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out) {
    nargs = PyVectorcall_NARGS(nargs);
    if (bind_positional(sig, nargs, out) < 0) return -1;
    for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (bind_keyword(sig, PyTuple_GET_ITEM(kwnames, k), args[nargs + k], out) < 0) return -1;
    return check_required(sig, out);
}

int df_py_bind_tuple(const df_py_sig *sig, PyObject *args, PyObject *kwargs, PyObject **out) {
    Py_ssize_t nargs = args ? PyTuple_GET_SIZE(args) : 0;
    if (bind_positional(sig, nargs, out) < 0) return -1;
    for (Py_ssize_t i = 0; i < nargs; i++) out[i] = PyTuple_GET_ITEM(args, i);
    if (kwargs) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value))
            if (bind_keyword(sig, key, value, out) < 0) return -1;
    }
    return check_required(sig, out);
}

/* ------------------------------------------------------------------------ */
/* Typed extraction                                                          */

int df_py_opt_bool(PyObject *obj, int *value, int *is_none) {
    *value = 0;
    *is_none = obj == NULL || obj == Py_None;
    if (*is_none) return 0;
    if (!PyBool_Check(obj)) return df_py_type_error(obj, "bool");
    *value = obj == Py_True;
    return 0;
}

int df_py_strict_bool(PyObject *obj, int *value) {
    if (!PyBool_Check(obj)) return df_py_type_error(obj, "bool");
    *value = obj == Py_True;
    return 0;
}

int df_py_opt_str(PyObject *obj, const char **out) {
    *out = NULL;
    if (obj == NULL || obj == Py_None) return 0;
    return df_py_req_str(obj, out);
}

int df_py_refuse_nul(void) {
    /* The module state is found through the module object of this interpreter, so the callers need
     * not carry it. */
    PyObject *module = PyImport_ImportModule("deltafunnel._native");
    df_py_state *st = module ? df_py_state_of_module(module) : NULL;
    Py_XDECREF(module);
    if (st) df_py_raise_simple(st, DF_ERR_INVALID_ARGUMENT, "a string argument contains a NUL character");
    return -1;
}

int df_py_utf8(PyObject *obj, const char **out) {
    Py_ssize_t len = 0;
    *out = PyUnicode_AsUTF8AndSize(obj, &len);
    if (!*out) return -1;
    /* The library takes NUL-terminated strings: an embedded NUL would cut the value short
     * silently (SQL text, names, modes), so it is refused instead. */
    if (strlen(*out) != (size_t)len) {
        *out = NULL;
        return df_py_refuse_nul();
    }
    return 0;
}

int df_py_req_str(PyObject *obj, const char **out) {
    *out = NULL;
    if (!PyUnicode_Check(obj)) return df_py_type_error(obj, "str");
    return df_py_utf8(obj, out);
}

int df_py_usize(PyObject *obj, int64_t *out) {
    PyObject *index = PyNumber_Index(obj);
    if (!index) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    int negative = overflow < 0 || (overflow == 0 && v < 0);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (negative) {
        PyErr_SetString(PyExc_OverflowError, "can't convert negative int to unsigned");
        return -1;
    }
    if (overflow > 0) {
        /* Fits a 64-bit usize or not: either way more rows than any table holds. */
        PyObject *idx = PyNumber_Index(obj);
        unsigned long long u = idx ? PyLong_AsUnsignedLongLong(idx) : 0;
        Py_XDECREF(idx);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_OverflowError, "int too big to convert");
            return -1;
        }
        (void)u;
        *out = INT64_MAX;
        return 0;
    }
    *out = (int64_t)v;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* df_value conversion                                                       */

static int int_value(PyObject *obj, df_value *out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow == 0) {
        *out = df_value_int(v);
        return 0;
    }
    out->kind = DF_VALUE_BIG_INT;
    if (overflow < 0) {
        out->i = -1;
        return 0;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        out->i = 2;
    } else {
        out->i = 1;
    }
    return 0;
}

int df_py_to_value(PyObject *obj, df_value *out, df_py_value_pool *pool, int depth) {
    *out = df_value_none();
    if (obj == NULL || obj == Py_None) return 0;
    if (PyBool_Check(obj)) {
        *out = df_value_bool(obj == Py_True);
        return 0;
    }
    if (PyLong_Check(obj)) return int_value(obj, out);
    if (PyFloat_Check(obj)) {
        out->kind = DF_VALUE_FLOAT;
        out->f = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        Py_ssize_t len = 0;
        const char *s = PyUnicode_AsUTF8AndSize(obj, &len);
        if (!s) {
            /* Lone surrogates cannot be UTF-8: treat as an unusable value. */
            PyErr_Clear();
            out->kind = DF_VALUE_OTHER;
            return 0;
        }
        /* df_value strings are NUL-terminated: a value with a NUL in it would be read cut short. */
        if (strlen(s) != (size_t)len) return df_py_refuse_nul();
        *out = df_value_str(s);
        return 0;
    }
    if (PyDict_Check(obj) && depth < 3) {
        if (pool->nblocks == (int)(sizeof pool->blocks / sizeof pool->blocks[0])) {
            out->kind = DF_VALUE_OTHER;
            return 0;
        }
        Py_ssize_t n = PyDict_Size(obj);
        df_value_entry *entries = PyMem_Calloc((size_t)(n ? n : 1), sizeof *entries);
        if (!entries) {
            PyErr_NoMemory();
            return -1;
        }
        pool->blocks[pool->nblocks++] = entries;
        PyObject *key, *value;
        Py_ssize_t pos = 0, i = 0;
        while (PyDict_Next(obj, &pos, &key, &value) && i < n) {
            if (df_py_to_value(key, &entries[i].key, pool, depth + 1) < 0) return -1;
            if (df_py_to_value(value, &entries[i].value, pool, depth + 1) < 0) return -1;
            i++;
        }
        *out = df_value_map(entries, (size_t)i);
        return 0;
    }
    if ((PyList_Check(obj) || PyTuple_Check(obj)) && depth < 3) {
        if (pool->nblocks == (int)(sizeof pool->blocks / sizeof pool->blocks[0])) {
            out->kind = DF_VALUE_OTHER;
            return 0;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        df_value_entry *entries = PyMem_Calloc((size_t)(n ? n : 1), sizeof *entries);
        if (!entries) {
            PyErr_NoMemory();
            return -1;
        }
        pool->blocks[pool->nblocks++] = entries;
        for (Py_ssize_t i = 0; i < n; i++)
            if (df_py_to_value(PySequence_Fast_GET_ITEM(obj, i), &entries[i].value, pool, depth + 1) < 0) return -1;
        *out = df_value_list(entries, (size_t)n);
        return 0;
    }
    out->kind = DF_VALUE_OTHER;
    return 0;
}

void df_py_value_pool_free(df_py_value_pool *pool) {
    for (int i = 0; i < pool->nblocks; i++) PyMem_Free(pool->blocks[i]);
    pool->nblocks = 0;
}
