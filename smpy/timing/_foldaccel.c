/* The compiled twin of smpy.timing.folding._dontneed (issue 23: Figure 12 at 3072 ranks trims
 * the folded page-table entries of hundreds of ranks at a time, one madvise per folded range;
 * through ctypes each call cost about as much as the kernel's work).
 *
 * Python reference (smpy/timing/folding.py):
 *     def _dontneed(ranges):
 *         for start, stop in ranges:
 *             _LIBC.madvise(start, stop - start, _MADV_DONTNEED)
 *
 * The same calls of libc's madvise (MADV_DONTNEED), in the same order, results ignored as
 * the Python function ignores them. From the first range that is not a tuple of two ints
 * (or an int beyond 64 bits) on, the rest goes to the Python function. Registered by smpy.timing.folding
 * (smpy.support.cext.register) and swapped in with the rest of the compiled path
 * (smpy.kernel.accel). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/mman.h>

static PyObject *py_dontneed;  /* the Python function, for what is not plain */

static PyObject *
dontneed(PyObject *Py_UNUSED(module), PyObject *ranges)
{
    if (py_dontneed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "smpy.timing._foldaccel: setup() was not called");
        return NULL;
    }
    if (!PyList_CheckExact(ranges))
        return PyObject_CallOneArg(py_dontneed, ranges);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ranges); i++) {
        PyObject *r = PyList_GET_ITEM(ranges, i);
        unsigned long long start = 0, stop = 0;
        int plain = PyTuple_CheckExact(r) && PyTuple_GET_SIZE(r) == 2 &&
                    PyLong_CheckExact(PyTuple_GET_ITEM(r, 0)) && PyLong_CheckExact(PyTuple_GET_ITEM(r, 1));
        if (plain) {
            start = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(r, 0));
            if (!(start == (unsigned long long)-1 && PyErr_Occurred()))
                stop = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(r, 1));
            if (PyErr_Occurred()) {  /* negative or beyond 64 bits: as Python does it */
                PyErr_Clear();
                plain = 0;
            }
        }
        if (!plain) {
            PyObject *rest = PyList_GetSlice(ranges, i, PyList_GET_SIZE(ranges));
            PyObject *res = rest == NULL ? NULL : PyObject_CallOneArg(py_dontneed, rest);
            Py_XDECREF(rest);
            return res;
        }
        (void)madvise((void *)(uintptr_t)start, (size_t)(stop - start), MADV_DONTNEED);
    }
    Py_RETURN_NONE;
}

static PyObject *
setup(PyObject *Py_UNUSED(module), PyObject *fn)
{
    Py_XSETREF(py_dontneed, Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_dontneed", dontneed, METH_O, "_dontneed(ranges): madvise(MADV_DONTNEED) each (start, stop) range"},
    {"setup", setup, METH_O, "setup(the Python _dontneed)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_foldaccel", .m_doc = "smpy's compiled folded-memory trim",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__foldaccel(void)
{
    return PyModule_Create(&moddef);
}
