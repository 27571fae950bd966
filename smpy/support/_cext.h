/* Helpers shared by smpy's optional C extensions (smpy/kernel/_accel.c, smpy/mpi/_callaccel.c,
 * smpy/runtime/_p2paccel.c, smpy/shim/_switchaccel.c). smpy/support/cext.py puts this
 * directory on the include path and hashes this file into each extension's cache key.
 *
 * Slots: the kernel's and the runtime's classes use __slots__; a slot's value lives at a fixed
 * offset in the instance, read from the class's member descriptor once at setup. An unset slot
 * (NULL) falls back to the attribute protocol, so the error is the one Python raises.
 */
#ifndef SMPY_CEXT_H
#define SMPY_CEXT_H

#include <Python.h>
#include <structmember.h>

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* var = the interned string text, in a module init function (returns NULL on failure) */
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

/* a new reference to the slot's value, or AttributeError as Python raises it */
static inline PyObject *
slot_get(PyObject *o, Py_ssize_t off, PyObject *name)
{
    PyObject *v = SLOT(o, off);
    if (v != NULL)
        return Py_NewRef(v);
    return PyObject_GetAttr(o, name);
}

/* o's slot takes a new reference to v (v is not stolen) */
static inline void
slot_set(PyObject *o, Py_ssize_t off, PyObject *v)
{
    PyObject *old = SLOT(o, off);
    Py_INCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* the offset of the object slot ``name`` of ``cls``, or -1 with TypeError */
static inline Py_ssize_t
slot_offset(PyTypeObject *cls, const char *name)
{
    PyObject *d = PyObject_GetAttrString((PyObject *)cls, name);
    if (d == NULL)
        return -1;
    if (Py_TYPE(d) != &PyMemberDescr_Type || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", cls->tp_name, name);
        Py_DECREF(d);
        return -1;
    }
    Py_ssize_t off = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    return off;
}

/* the value of an int object compared with a C long: 1 equal, 0 not, -1 error */
static inline int
int_eq(PyObject *v, long c)
{
    if (PyLong_CheckExact(v)) {
        long x = PyLong_AsLong(v);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return x == c;
    }
    PyObject *cv = PyLong_FromLong(c);
    if (cv == NULL)
        return -1;
    int r = PyObject_RichCompareBool(v, cv, Py_EQ);
    Py_DECREF(cv);
    return r;
}

/* bool(v) of a new reference, which it consumes: 1, 0, or -1 (v NULL, or an error) */
static inline int
truth_of(PyObject *v)
{
    if (v == NULL)
        return -1;
    int r = v == Py_None || v == Py_False ? 0 : v == Py_True ? 1 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* a module global looked up at each call, as Python code does: borrowed, or NULL with
 * NameError */
static inline PyObject *
dict_global(PyObject *dict, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(dict, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_NameError, name);
    return v;
}

/* A per-name cache of where a slot lives: the class it was found on (its version tag) and
 * the offset. cached_get(o, &cache, name) is getattr(o, name): when o's class is the cached
 * one, unchanged since, the slot is read at its offset; otherwise the class's attribute
 * (_PyType_Lookup, the same lookup the generic getattr makes first) is looked at once, and
 * a slot of a class using the generic getattr (so the slot's data descriptor is what
 * Python's lookup finds) is cached. An object with a __dict__ (World, the engine, a
 * module) whose class has no data descriptor of that name is read from, and written to,
 * its dict directly (the generic getattr's second step, after the class lookup this cache
 * stands for); a name not in the dict, and anything else, goes through the attribute
 * protocol. */
typedef struct {
    PyTypeObject *type;
    unsigned int version;
    Py_ssize_t off;
} slot_cache;

/* where an attribute lives, beyond a slot's offset (>= 0) */
#define CACHE_PROTOCOL (-1)  /* the attribute protocol */
#define CACHE_DICT (-2)      /* the instance's __dict__ first (no data descriptor on the class) */

static inline Py_ssize_t
slot_cache_find(PyTypeObject *t, slot_cache *c, PyObject *name)
{
    PyObject *d = _PyType_Lookup(t, name);  /* borrowed; gives t a valid version tag */
    if (!(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return CACHE_PROTOCOL;
    Py_ssize_t off = CACHE_PROTOCOL;  /* not a plain slot: the attribute protocol (remembered too) */
    int generic = t->tp_getattro == PyObject_GenericGetAttr && t->tp_setattro == PyObject_GenericSetAttr;
    if (generic && d != NULL && Py_TYPE(d) == &PyMemberDescr_Type &&
        ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
        !(((PyMemberDescrObject *)d)->d_member->flags & READONLY))
        off = ((PyMemberDescrObject *)d)->d_member->offset;
    /* an instance with a __dict__ (a plain object, or a module: its getattr is the generic
     * one, then __getattr__ when that fails) and no data descriptor of that name on its class:
     * the generic getattr and setattr look in, and store into, the instance's dict first */
    else if ((generic || (t == &PyModule_Type && t->tp_setattro == PyObject_GenericSetAttr)) &&
             t->tp_dictoffset != 0 && (d == NULL || Py_TYPE(d)->tp_descr_set == NULL))
        off = CACHE_DICT;
    Py_INCREF(t);
    Py_XSETREF(c->type, t);
    c->version = t->tp_version_tag;
    c->off = off;
    return off;
}

static inline Py_ssize_t
slot_cache_off(PyObject *o, slot_cache *c, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && t->tp_version_tag == c->version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return c->off;
    return slot_cache_find(t, c, name);
}

/* the instance dict of o, borrowed, or NULL (none yet: the caller uses the protocol) */
static inline PyObject *
instance_dict(PyObject *o)
{
    PyObject **dp = _PyObject_GetDictPtr(o);
    return dp != NULL && *dp != NULL && PyDict_CheckExact(*dp) ? *dp : NULL;
}

#if defined(__GNUC__)
#define CEXT_INLINE static inline __attribute__((always_inline))
#define CEXT_OUTLINE static __attribute__((noinline))
#else
#define CEXT_INLINE static inline
#define CEXT_OUTLINE static
#endif

/* the general case of cached_get: the class looked at again, an instance dict, the protocol */
CEXT_OUTLINE PyObject *
cached_get_slow(PyObject *o, slot_cache *c, PyObject *name)
{
    Py_ssize_t off = slot_cache_off(o, c, name);
    if (off >= 0)
        return slot_get(o, off, name);
    if (off == CACHE_DICT) {
        PyObject *d = instance_dict(o);
        if (d != NULL) {
            PyObject *v = PyDict_GetItemWithError(d, name);
            if (v != NULL)
                return Py_NewRef(v);
            if (PyErr_Occurred())
                return NULL;
        }
    }
    return PyObject_GetAttr(o, name);
}

/* the common case, inline: a set slot of the cached class */
CEXT_INLINE PyObject *
cached_get(PyObject *o, slot_cache *c, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && c->off >= 0 && t->tp_version_tag == c->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject *v = SLOT(o, c->off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return cached_get_slow(o, c, name);
}

/* setattr(o, name, v), the same way; 0 or -1 */
CEXT_OUTLINE int
cached_set_slow(PyObject *o, slot_cache *c, PyObject *name, PyObject *v)
{
    Py_ssize_t off = slot_cache_off(o, c, name);
    if (off >= 0) {
        slot_set(o, off, v);
        return 0;
    }
    if (off == CACHE_DICT) {
        PyObject *d = instance_dict(o);
        if (d != NULL)
            return PyDict_SetItem(d, name, v);
    }
    return PyObject_SetAttr(o, name, v);
}

CEXT_INLINE int
cached_set(PyObject *o, slot_cache *c, PyObject *name, PyObject *v)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && c->off >= 0 && t->tp_version_tag == c->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        slot_set(o, c->off, v);
        return 0;
    }
    return cached_set_slow(o, c, name, v);
}

/* getattr(o, name) and setattr(o, name, v) for helpers that take the name as an argument: the
 * slot_cache of (o's class, name) lives in a small direct-mapped table (one per extension),
 * each entry holding its name; a collision only costs a new lookup. */
typedef struct {
    PyObject *name;
    slot_cache c;
} named_cache;

#define NAMED_CACHES 256
static named_cache named_caches[NAMED_CACHES];

static inline slot_cache *
named_cache_for(PyObject *o, PyObject *name)
{
    uintptr_t h = ((uintptr_t)Py_TYPE(o) >> 4) * 31u + ((uintptr_t)name >> 4);
    named_cache *e = &named_caches[(h ^ (h >> 9)) & (NAMED_CACHES - 1)];
    if (e->name != name) {
        Py_INCREF(name);
        Py_XSETREF(e->name, name);
        Py_CLEAR(e->c.type);  /* found again for this name on the next use */
    }
    return &e->c;
}

static inline PyObject *
attr_get(PyObject *o, PyObject *name)
{
    return cached_get(o, named_cache_for(o, name), name);
}

static inline int
attr_set(PyObject *o, PyObject *name, PyObject *v)
{
    return cached_set(o, named_cache_for(o, name), name, v);
}

/* bool(getattr(o, name)): 1, 0, or -1 (error) */
static inline int
attr_true(PyObject *o, PyObject *name)
{
    return truth_of(attr_get(o, name));
}

/* for item in seq, without an iterator object for an exact list or tuple (the same items:
 * a list is read at the current index against its current size, as list iteration does) */
typedef struct {
    PyObject *seq, *it;
    Py_ssize_t i;
} seq_iter;

static inline int
seq_iter_init(seq_iter *s, PyObject *o)
{
    s->i = 0;
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        s->seq = Py_NewRef(o);
        s->it = NULL;
        return 0;
    }
    s->seq = NULL;
    s->it = PyObject_GetIter(o);
    return s->it == NULL ? -1 : 0;
}

/* the next item (new reference), or NULL: the end, or an error (PyErr_Occurred) */
static inline PyObject *
seq_iter_next(seq_iter *s)
{
    if (s->it != NULL)
        return PyIter_Next(s->it);
    if (s->seq == NULL)
        return NULL;
    PyObject *o = s->seq, *v = NULL;
    if (PyList_CheckExact(o)) {
        if (s->i < PyList_GET_SIZE(o))
            v = Py_NewRef(PyList_GET_ITEM(o, s->i++));
    } else if (s->i < PyTuple_GET_SIZE(o))
        v = Py_NewRef(PyTuple_GET_ITEM(o, s->i++));
    if (v == NULL)
        Py_CLEAR(s->seq);  /* exhausted for good, as a list iterator */
    return v;
}

static inline void
seq_iter_done(seq_iter *s)
{
    Py_CLEAR(s->seq);
    Py_CLEAR(s->it);
}

/* obj.name(...) with args[0] = obj, as PyObject_VectorcallMethod: when obj's class uses the
 * generic getattr and the class attribute is a method descriptor (a Python function, a C
 * method), the lookup finds that descriptor and calls it with obj first, unless obj's own
 * __dict__ (when its class gives it one, not a managed one) holds the name; that descriptor is
 * remembered per (class, name) in a direct-mapped table until the class changes. Anything
 * else goes through PyObject_VectorcallMethod. */
typedef struct {
    PyObject *name;
    PyTypeObject *type;
    unsigned int version;
    PyObject *meth;
} method_cache;

#define METHOD_CACHES 128
static method_cache method_caches[METHOD_CACHES];

/* whether the class's instances have no __dict__ or one at an offset (1), or a managed one
 * (0: not cached) */
static inline int
dict_kind(PyTypeObject *t)
{
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (t->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return 0;
#endif
    return 1;
}

/* 1 when o's own __dict__ (at its class's offset, not a managed one) holds name, 0 when not,
 * -1 error */
static inline int
own_dict_has(PyObject *o, PyObject *name)
{
    if (Py_TYPE(o)->tp_dictoffset == 0)
        return 0;
    PyObject **dp = _PyObject_GetDictPtr(o);
    PyObject *d = dp != NULL ? *dp : NULL;
    if (d == NULL)
        return 0;
    if (!PyDict_CheckExact(d))
        return 1;  /* the protocol decides */
    PyObject *v = PyDict_GetItemWithError(d, name);
    return v != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

CEXT_OUTLINE PyObject *
method_call_slow(method_cache *e, PyObject *name, PyObject *const *args, size_t nargsf)
{
    PyTypeObject *t = Py_TYPE(args[0]);
    int has = t->tp_getattro == PyObject_GenericGetAttr && dict_kind(t) ? own_dict_has(args[0], name) : 1;
    if (has < 0)
        return NULL;
    if (has == 0) {
        PyObject *d = _PyType_Lookup(t, name);  /* borrowed; gives t a valid version tag */
        if (d != NULL && (Py_TYPE(d)->tp_flags & Py_TPFLAGS_METHOD_DESCRIPTOR) &&
            (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
            Py_INCREF(name);
            Py_XSETREF(e->name, name);
            Py_INCREF(t);
            Py_XSETREF(e->type, t);
            e->version = t->tp_version_tag;
            Py_INCREF(d);
            Py_XSETREF(e->meth, d);
            Py_INCREF(d);  /* held across the call (the class may change during it) */
            PyObject *r = PyObject_Vectorcall(d, args, nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            Py_DECREF(d);
            return r;
        }
    }
    return PyObject_VectorcallMethod(name, args, nargsf, NULL);
}

CEXT_INLINE PyObject *
method_call(PyObject *name, PyObject *const *args, size_t nargsf)
{
    PyTypeObject *t = Py_TYPE(args[0]);
    uintptr_t h = ((uintptr_t)t >> 4) * 31u + ((uintptr_t)name >> 4);
    method_cache *e = &method_caches[(h ^ (h >> 9)) & (METHOD_CACHES - 1)];
    if (e->name == name && e->type == t && t->tp_version_tag == e->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        int has = own_dict_has(args[0], name);  /* 0 at once without a __dict__ */
        if (has < 0)
            return NULL;
        if (has)
            return PyObject_VectorcallMethod(name, args, nargsf, NULL);
        PyObject *m = Py_NewRef(e->meth);
        PyObject *r = PyObject_Vectorcall(m, args, nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(m);
        return r;
    }
    return method_call_slow(e, name, args, nargsf);
}

/* obj.name() and obj.name(arg), new references */
static inline PyObject *
call_method0(PyObject *obj, PyObject *name)
{
    PyObject *args[1] = {obj};
    return method_call(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET);
}

static inline PyObject *
call_method1(PyObject *obj, PyObject *name, PyObject *arg)
{
    PyObject *args[2] = {obj, arg};
    return method_call(name, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET);
}

#endif
