/* A probe of smpy/support/_cext.h's direct calls without keywords (call_direct_n,
 * cmethod_call) for tests/kernel/test_direct_calls_n.py: each gives
 * what the header's helper returns (or raises), to compare with Python's call. */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

/* call_direct_n(f, *args) */
static PyObject *
p_call(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1) {
        PyErr_SetString(PyExc_TypeError, "call(f, *args)");
        return NULL;
    }
    return call_direct_n(args[0], args + 1, n - 1);
}

/* cmethod_call(name, obj, *args): obj.name(*args) */
static PyObject *
p_method_call(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n < 2 || !PyUnicode_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "method_call(name, obj, *args)");
        return NULL;
    }
    PyObject *name = Py_NewRef(args[0]);
    PyUnicode_InternInPlace(&name);
    PyObject *r = cmethod_call(name, args + 1, (size_t)(n - 1));
    Py_DECREF(name);
    return r;
}

/* C functions of each calling convention, to be called: (self, args) as a tuple */
static PyObject *
c_fast(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    return t == NULL ? NULL : Py_BuildValue("(sON)", "fast", self ? self : Py_None, t);
}

static PyObject *
c_fast_kw(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    return t == NULL ? NULL : Py_BuildValue("(sONO)", "fast_kw", self ? self : Py_None, t, kwnames != NULL ? kwnames : Py_None);
}

static PyObject *
c_o(PyObject *self, PyObject *arg)
{
    return Py_BuildValue("(sOO)", "o", self ? self : Py_None, arg);
}

static PyObject *
c_noargs(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(sO)", "noargs", self ? self : Py_None);
}

static PyObject *
c_recurse(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    /* recurse(f): call_direct_n(f, f) forever: the recursion check must stop it */
    if (n != 1)
        return NULL;
    return call_direct_n(args[0], args, 1);
}

static PyMethodDef kinds[] = {
    {"fast", (PyCFunction)(void (*)(void))c_fast, METH_FASTCALL, NULL},
    {"fast_kw", (PyCFunction)(void (*)(void))c_fast_kw, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"o", c_o, METH_O, NULL},
    {"noargs", c_noargs, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

/* methods(cls): {name: method descriptor of cls} for each convention */
static PyObject *
p_methods(PyObject *m, PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "a class");
        return NULL;
    }
    PyObject *d = PyDict_New();
    for (PyMethodDef *k = kinds; d != NULL && k->ml_name != NULL; k++) {
        PyObject *descr = PyDescr_NewMethod((PyTypeObject *)cls, k);
        if (descr == NULL || PyDict_SetItemString(d, k->ml_name, descr) < 0)
            Py_CLEAR(d);
        Py_XDECREF(descr);
    }
    return d;
}

static PyMethodDef methods[] = {
    {"call", (PyCFunction)(void (*)(void))p_call, METH_FASTCALL, "call_direct_n(f, *args)"},
    {"method_call", (PyCFunction)(void (*)(void))p_method_call, METH_FASTCALL, "cmethod_call(name, obj, *args)"},
    {"methods", p_methods, METH_O, "methods(cls): a method descriptor of cls per calling convention"},
    {"fast", (PyCFunction)(void (*)(void))c_fast, METH_FASTCALL, "a METH_FASTCALL function"},
    {"fast_kw", (PyCFunction)(void (*)(void))c_fast_kw, METH_FASTCALL | METH_KEYWORDS, "METH_FASTCALL | METH_KEYWORDS"},
    {"o", c_o, METH_O, "a METH_O function"},
    {"noargs", c_noargs, METH_NOARGS, "a METH_NOARGS function"},
    {"recurse", (PyCFunction)(void (*)(void))c_recurse, METH_FASTCALL, "recurse(f): f(f) through call_direct_n"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_cext_calls_probe", .m_doc = "a probe of _cext.h's direct calls",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__cext_calls_probe(void)
{
    return PyModule_Create(&moddef);
}
