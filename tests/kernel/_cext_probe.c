/* A probe of smpy/support/_cext.h's caches for tests/kernel/test_cext_caches.py: each function
 * gives what the header's helper reads or writes, to compare with what Python gives. */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

static PyObject *absent;  /* returned for a name a dict does not hold */
static slot_cache c_site_x, c_site_y;
static PyObject *s_x, *s_y;

static PyObject *
or_absent(PyObject *v)
{
    if (v == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(absent);
    return Py_NewRef(v);
}

/* dict_get(d, name) */
static PyObject *
p_dict_get(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    return n == 2 ? or_absent(dict_get(args[0], args[1])) : NULL;
}

/* dict_set(d, name, v) */
static PyObject *
p_dict_set(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n != 3 || dict_set(args[0], args[1], args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* attr_get(o, name): the per-(class, name) table */
static PyObject *
p_attr_get(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    return n == 2 ? attr_get(args[0], args[1]) : NULL;
}

static PyObject *
p_attr_set(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (n != 3 || attr_set(args[0], args[1], args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* o.x and o.y, each read at its own site (one slot_cache per site) */
static PyObject *
p_site_x(PyObject *m, PyObject *o)
{
    return cached_get(o, &c_site_x, s_x);
}

static PyObject *
p_site_y(PyObject *m, PyObject *o)
{
    return cached_get(o, &c_site_y, s_y);
}

/* o.x() through call_method0 (the per-class method cache) */
static PyObject *
p_call_x(PyObject *m, PyObject *o)
{
    return call_method0(o, s_x);
}

static PyObject *
p_versions(PyObject *m, PyObject *unused)
{
#ifdef CEXT_DICT_VERSIONS
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* dict_memo_get(d, name) through one memo (the running actor's read) */
static dict_memo memo;
static PyObject *
p_dict_memo_get(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    return n == 2 ? or_absent(dict_memo_get(&memo, args[0], args[1])) : NULL;
}

/* (PyLong_AsLong(v), PyLong_AsSsize_t(v)) through the header's inline cases, None for an error
   (the error's class name instead) */
static PyObject *
p_as_long(PyObject *m, PyObject *v)
{
    long a = PyLong_AsLong(v);
    if (a == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t b = PyLong_AsSsize_t(v);
    if (b == -1 && PyErr_Occurred())
        return NULL;
    return Py_BuildValue("(ln)", a, b);
}

static PyObject *
p_is_true(PyObject *m, PyObject *v)
{
    int t = PyObject_IsTrue(v);
    return t < 0 ? NULL : PyBool_FromLong(t);
}

/* incr_in_place(v): whether it was done (then v's value is one more) */
static PyObject *
p_incr_in_place(PyObject *m, PyObject *v)
{
    return PyBool_FromLong(incr_in_place(v));
}

static PyMethodDef methods[] = {
    {"dict_memo_get", (PyCFunction)(void (*)(void))p_dict_memo_get, METH_FASTCALL, NULL},
    {"as_long", p_as_long, METH_O, NULL},
    {"is_true", p_is_true, METH_O, NULL},
    {"incr_in_place", p_incr_in_place, METH_O, NULL},
    {"dict_get", (PyCFunction)(void (*)(void))p_dict_get, METH_FASTCALL, NULL},
    {"dict_set", (PyCFunction)(void (*)(void))p_dict_set, METH_FASTCALL, NULL},
    {"attr_get", (PyCFunction)(void (*)(void))p_attr_get, METH_FASTCALL, NULL},
    {"attr_set", (PyCFunction)(void (*)(void))p_attr_set, METH_FASTCALL, NULL},
    {"site_x", p_site_x, METH_O, NULL},
    {"site_y", p_site_y, METH_O, NULL},
    {"call_x", p_call_x, METH_O, "o.x() through call_method0"},
    {"versions", p_versions, METH_NOARGS, "whether dict versions are used (CPython < 3.12)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, .m_name = "_cext_probe", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC
PyInit__cext_probe(void)
{
    INTERN(s_x, "x");
    INTERN(s_y, "y");
    PyObject *mod = PyModule_Create(&moddef);
    if (mod == NULL)
        return NULL;
    absent = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (absent == NULL || PyModule_AddObjectRef(mod, "ABSENT", absent) < 0)
        return NULL;
    return mod;
}
