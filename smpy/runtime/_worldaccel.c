/* The compiled twin of smpy.runtime.world.World.transfer (issue 24, item 1): the counters
 * (incremented in place when their slot holds the only reference: add_in_place),
 * the two route-cache lookups and the network model's communicate, once per message. The
 * Python method stays the reference: other argument forms go to it, and the rest does the
 * same operations through the same Python protocols (in-place add, dict lookups, method calls),
 * so a run gives the same bytes either way (tests/kernel/test_netaccel.py). */
#include "_cext.h"

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_dst_index, c_self_net, c_self_route_cache, c_src_index, c_self_messages, c_self_bytes_sent;

static PyObject *py_transfer, *i_one, *s_messages, *s_bytes_sent, *s_route_cache, *s_index, *s_route, *s_net,
    *s_communicate;

/* v as the double float's __add__ converts it (an exact float or int); 0, or -1 when v is
   anything else or does not convert (no error left set) */
static inline int
as_double(PyObject *v, double *x)
{
    if (PyFloat_CheckExact(v)) {
        *x = PyFloat_AS_DOUBLE(v);
        return 0;
    }
    if (PyLong_CheckExact(v)) {
        *x = PyLong_AsDouble(v);
        if (*x == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        return 0;
    }
    return -1;
}

/* self.name += v where the counter is a slot that holds the only reference to its value: the
 * value changed in place, as no one else can see it (CPython 3.12's float additions reuse an
 * operand held nowhere else the same way). An exact float plus an exact float or int: the
 * float's sum (float.__add__: the int converted by PyLong_AsDouble); an exact int of one digit
 * plus a non-negative one-digit int, when the sum stays one digit and beyond the small ints:
 * the digit (CPython < 3.12's layout). 1 done, 0 not this case. */
static int
add_in_place(PyObject *self, slot_cache *c, PyObject *name, PyObject *v)
{
    Py_ssize_t off = slot_cache_off(self, c, name);
    if (off < 0)
        return 0;
    PyObject *old = SLOT(self, off);
    if (old == NULL || Py_REFCNT(old) != 1)
        return 0;
    if (PyFloat_CheckExact(old)) {
        double x;
        if (as_double(v, &x) < 0)
            return 0;
        ((PyFloatObject *)old)->ob_fval = PyFloat_AS_DOUBLE(old) + x;
        return 1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyLong_CheckExact(old) && PyLong_CheckExact(v) && Py_SIZE(old) == 1 && Py_SIZE(v) >= 0 && Py_SIZE(v) <= 1) {
        digit *d = ((PyLongObject *)old)->ob_digit;
        unsigned long sum = (unsigned long)d[0] + (Py_SIZE(v) ? (unsigned long)((PyLongObject *)v)->ob_digit[0] : 0);
        if (sum > 256 && sum < (unsigned long)PyLong_BASE) {
            d[0] = (digit)sum;
            return 1;
        }
    }
#endif
    return 0;
}

/* self.name += v */
static int
iadd(PyObject *self, PyObject *name, PyObject *v)
{
    PyObject *old = attr_get(self, name);
    if (old == NULL)
        return -1;
    PyObject *new = PyNumber_InPlaceAdd(old, v);
    Py_DECREF(old);
    if (new == NULL)
        return -1;
    int r = attr_set(self, name, new);
    Py_DECREF(new);
    return r;
}

#ifdef CEXT_DICT_VERSIONS
/* The routes last read from the route cache, by the two host indices (exact ints), with the
 * cache dict and the version it had then (PEP 509; see _cext.h): while the dict is that one,
 * unchanged, cache.get((a, b)) gives that route again, without building and hashing the key
 * tuple. A new route put in the cache changes its version: every memo is read afresh. */
#define ROUTE_MEMOS 1024
typedef struct {
    PyObject *dict; /* compared only (a new dict at a freed one's address has a version never seen) */
    uint64_t version;
    Py_ssize_t a, b;
    PyObject *route; /* held */
} route_memo;
static route_memo route_memos[ROUTE_MEMOS];

/* the memo of (a, b), or NULL when the indices are not plain ints */
static inline route_memo *
route_memo_of(PyObject *ai, PyObject *bi, Py_ssize_t *a, Py_ssize_t *b)
{
    if (!PyLong_CheckExact(ai) || !PyLong_CheckExact(bi))
        return NULL;
    *a = PyLong_AsSsize_t(ai);
    *b = PyLong_AsSsize_t(bi);
    if ((*a == -1 || *b == -1) && PyErr_Occurred()) {
        PyErr_Clear(); /* too large: the dict lookup */
        return NULL;
    }
    return &route_memos[((size_t)*a * 131u + (size_t)*b) & (ROUTE_MEMOS - 1)];
}
#endif

/* host.index, where a host keeps it in its instance dict (Host, a dataclass): the value read
 * last from each dict (a small table keyed by the dict), with the dict's version then; while
 * the version is the same the dict is unchanged and holds the value. The class is the one the
 * site's cache found the name in the instance dict for (no data descriptor ``index``), unchanged
 * since; anything else is read as cached_get reads it. */
#ifdef CEXT_DICT_VERSIONS
#define INDEX_MEMOS 256
static struct {
    PyObject *dict;  /* compared only */
    uint64_t version;
    PyObject *value; /* borrowed: the dict holds it */
} index_memos[INDEX_MEMOS];
#endif

static PyObject *
index_of(PyObject *o, slot_cache *c)
{
#ifdef CEXT_DICT_VERSIONS
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && c->off == CACHE_DICT && t->tp_version_tag == c->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && !PyModule_Check(o)) {
        PyObject *d = instance_dict(o);
        if (d != NULL) {
            uintptr_t h = (uintptr_t)d >> 4;
            size_t i = (h ^ (h >> 8)) & (INDEX_MEMOS - 1);
            if (index_memos[i].dict == d && index_memos[i].version == DICT_VERSION(d))
                return Py_NewRef(index_memos[i].value);
            PyObject *v = PyDict_GetItemWithError(d, s_index);  /* an exact str key: no code runs */
            if (v != NULL) {
                index_memos[i].dict = d;
                index_memos[i].version = DICT_VERSION(d);
                index_memos[i].value = v;
                return Py_NewRef(v);
            }
            if (PyErr_Occurred())
                return NULL;
        }
    }
#endif
    return cached_get(o, c, s_index);
}

/* cache.get((a.index, b.index)), or self.route(a, b) when that is None (new reference) */
static PyObject *
route_of(PyObject *self, PyObject *cache, PyObject *ai, PyObject *bi, PyObject *a, PyObject *b)
{
#ifdef CEXT_DICT_VERSIONS
    Py_ssize_t x = 0, y = 0;
    route_memo *m = route_memo_of(ai, bi, &x, &y);
    if (m != NULL && m->dict == cache && m->version == DICT_VERSION(cache) && m->a == x && m->b == y)
        return Py_NewRef(m->route);
#endif
    PyObject *key = PyTuple_Pack(2, ai, bi);
    if (key == NULL)
        return NULL;
    PyObject *r = PyDict_GetItemWithError(cache, key);
    Py_DECREF(key);
    if (r != NULL && r != Py_None) {
#ifdef CEXT_DICT_VERSIONS
        if (m != NULL) {
            Py_INCREF(r);
            Py_XSETREF(m->route, r); /* the old route's release runs no Python code (a tuple) */
            m->dict = cache;
            m->version = DICT_VERSION(cache);
            m->a = x;
            m->b = y;
        }
#endif
        return Py_NewRef(r);
    }
    if (PyErr_Occurred())
        return NULL;
    PyObject *args[3] = {self, a, b};
    return method_call(s_route, args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET);
}

static PyObject *
transfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames != NULL || nargs != 3) {
        PyObject *all[4] = {self, NULL, NULL, NULL};
        Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
        if (nargs + nkw > 3) {
            PyErr_Format(PyExc_TypeError, "transfer() takes 4 positional arguments but %zd were given", nargs + nkw + 1);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < nargs + nkw; i++)
            all[i + 1] = args[i];
        return PyObject_Vectorcall(py_transfer, all, nargs + 1, kwnames);
    }
    PyObject *src = args[0], *dst = args[1], *nbytes = args[2];
    PyObject *cache = cached_get(self, &c_self_route_cache, s_route_cache);
    if (cache == NULL)
        return NULL;
    if (!PyDict_CheckExact(cache)) {  /* not the World's own dict: the Python method */
        Py_DECREF(cache);
        PyObject *all[4] = {self, src, dst, nbytes};
        return PyObject_Vectorcall(py_transfer, all, 4, NULL);
    }
    PyObject *si = NULL, *di = NULL, *there = NULL, *back = NULL, *net = NULL, *r = NULL;
    if ((!add_in_place(self, &c_self_messages, s_messages, i_one) && iadd(self, s_messages, i_one) < 0) ||
        (!add_in_place(self, &c_self_bytes_sent, s_bytes_sent, nbytes) && iadd(self, s_bytes_sent, nbytes) < 0))
        goto out;
    /* the cache is read again, as the Python method does after the counters */
    Py_SETREF(cache, cached_get(self, &c_self_route_cache, s_route_cache));
    if (cache == NULL || (si = index_of(src, &c_src_index)) == NULL || (di = index_of(dst, &c_dst_index)) == NULL)
        goto out;
    if (!PyDict_CheckExact(cache)) {
        PyErr_SetString(PyExc_TypeError, "World._route_cache is no longer a dict");
        goto out;
    }
    if ((there = route_of(self, cache, si, di, src, dst)) == NULL || (back = route_of(self, cache, di, si, dst, src)) == NULL ||
        (net = cached_get(self, &c_self_net, s_net)) == NULL)
        goto out;
    PyObject *cargs[4] = {net, there, nbytes, back};
    r = cmethod_call(s_communicate, cargs, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET);  /* a C method: called directly */
out:
    Py_XDECREF(net);
    Py_XDECREF(back);
    Py_XDECREF(there);
    Py_XDECREF(di);
    Py_XDECREF(si);
    Py_XDECREF(cache);
    return r;
}

static PyMethodDef transfer_def = {"transfer", (PyCFunction)(void (*)(void))transfer, METH_FASTCALL | METH_KEYWORDS,
                                   "World.transfer, compiled (smpy.runtime._worldaccel)"};

/* setup(World, python transfer) -> the compiled method */
static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyTypeObject *world;
    PyObject *py;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &world, &py))
        return NULL;
    if (s_messages == NULL) {
#define I(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
        I(s_messages, "messages"); I(s_bytes_sent, "bytes_sent"); I(s_route_cache, "_route_cache");
        I(s_index, "index"); I(s_route, "route"); I(s_net, "net"); I(s_communicate, "communicate");
#undef I
        if ((i_one = PyLong_FromLong(1)) == NULL)
            return NULL;
    }
    Py_XSETREF(py_transfer, Py_NewRef(py));
    return PyDescr_NewMethod(world, &transfer_def);
}

static PyMethodDef methods[] = {{"setup", setup, METH_VARARGS, "setup(World, World.transfer)"}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_worldaccel", "The compiled twin of World.transfer", -1,
                                       methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__worldaccel(void)
{
    return PyModule_Create(&moduledef);
}
