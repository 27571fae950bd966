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

#if defined(__GNUC__)
#define CEXT_INLINE static inline __attribute__((always_inline))
#define CEXT_OUTLINE static __attribute__((noinline))
#else
#define CEXT_INLINE static inline
#define CEXT_OUTLINE static
#endif

#include <limits.h>

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* PyLong_AsLong, PyLong_AsSsize_t and PyObject_IsTrue with their commonest cases inline (an exact int of at most
 * one digit, CPython < 3.12's layout; True, False, None), the same values; anything else
 * through the functions themselves. The compiled files call them tens of times per message
 * (request states, kinds, tags, ranks, flags). cext_small_int: an exact int of at most one
 * digit gives its value in *out and 1, anything else 0. */
static inline int
cext_small_int(PyObject *v, long *out)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyLong_CheckExact(v)) {
        Py_ssize_t size = Py_SIZE(v);
        if (size >= -1 && size <= 1) {
            *out = size == 0 ? 0 : (long)size * (long)((PyLongObject *)v)->ob_digit[0];
            return 1;
        }
    }
#endif
    (void)v;
    (void)out;
    return 0;
}

static inline long
cext_as_long(PyObject *v)
{
    long small;
    return cext_small_int(v, &small) ? small : PyLong_AsLong(v);
}

static inline Py_ssize_t
cext_as_ssize_t(PyObject *v)
{
    long small;
    return cext_small_int(v, &small) ? (Py_ssize_t)small : PyLong_AsSsize_t(v);
}

static inline int
cext_is_true(PyObject *v)
{
    if (v == Py_True)
        return 1;
    if (v == Py_False || v == Py_None)
        return 0;
    return PyObject_IsTrue(v);
}

#define PyLong_AsLong(v) cext_as_long(v)
#define PyLong_AsSsize_t(v) cext_as_ssize_t(v)
#define PyObject_IsTrue(v) cext_is_true(v)

/* var = the interned string text, in a module init function (returns NULL on failure) */
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

/* v + 1 (``v += 1``) for an exact int within long long's range, without the number protocol's
   dispatch (the same int value; the protocol otherwise) */
static inline PyObject *
plus_one(PyObject *v, PyObject *one)
{
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && x != LLONG_MAX && !(x == -1 && PyErr_Occurred()))
            return PyLong_FromLongLong(x + 1);
        PyErr_Clear();
    }
    return PyNumber_InPlaceAdd(v, one);
}

/* ``v += 1`` done in place on a counter that only its slot holds (reference count 1): an
   exact int of one digit (CPython < 3.12's layout) whose successor stays one digit, beyond the
   small ints; no one else can see the value change (CPython 3.12's float additions reuse an
   operand held nowhere else the same way). 1 done, 0 not this case (then ``plus_one``). */
static inline int
incr_in_place(PyObject *v)
{
#if PY_VERSION_HEX < 0x030C0000
    if (v != NULL && Py_REFCNT(v) == 1 && PyLong_CheckExact(v) && Py_SIZE(v) == 1) {
        digit *d = ((PyLongObject *)v)->ob_digit;
        if (d[0] >= 256 && d[0] + 1 < PyLong_BASE) {
            d[0] += 1;
            return 1;
        }
    }
#else
    (void)v;
#endif
    return 0;
}

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

/* -- dict entries remembered with the dict's version ------------------------------------
 * d[name] read (dict_get) or written (dict_set) by name, for an exact dict and an exact str
 * name, remembered in a small per-extension table: on CPython < 3.12 every change of a dict
 * gives it a new ma_version_tag (PEP 509: a counter shared by all dicts, so a new dict at a
 * freed one's address has a version never seen before either). A dict is tracked with the
 * version it had when its entries were read (dict_track); while its version is that one, the
 * dict is unchanged and an entry read then (its value, or its absence) is still what a lookup
 * gives. The entries of a tracked dict belong to one epoch (a number never reused), so a
 * changed dict drops all of them at once. A write through dict_set keeps the dict's other
 * entries: it is the only change (the replaced value is held until the new version is
 * taken, so no finalizer runs in between, and a dict whose keys are all exact str compares
 * no key with Python code), so the tracked version moves to the new one. Values are
 * borrowed: the unchanged dict holds them. Names are held. Other dicts, other names, and
 * Python 3.12 on (the version tag deprecated there) use PyDict_GetItemWithError and
 * PyDict_SetItem directly. */
#if PY_VERSION_HEX < 0x030C0000
#define CEXT_DICT_VERSIONS 1
#endif

typedef struct {
    PyObject *dict;     /* compared only (borrowed) */
    uint64_t version;   /* the dict's ma_version_tag its entries were read at */
    uint64_t epoch;     /* the epoch of its entries */
    int keys;           /* all keys exact str: 1 yes, 0 no, -1 not known yet */
} dict_track;

typedef struct {
    PyObject *name;     /* held */
    uint64_t epoch;     /* the epoch of the track it was read in */
    PyObject *value;    /* borrowed; NULL: absent */
} dict_entry;

/* direct-mapped, keyed by addresses; sized so that collisions are rare (two ways per set
 * cost more per read than the collisions they saved, docs/performance.md) */
#define DICT_TRACKS 512
#define DICT_ENTRIES 4096
static dict_track dict_tracks[DICT_TRACKS];
static dict_entry dict_entries[DICT_ENTRIES];
static uint64_t dict_epochs;

#ifdef CEXT_DICT_VERSIONS
#define DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)

static inline dict_track *
dict_track_slot(PyObject *d)
{
    uintptr_t h = (uintptr_t)d >> 4;
    return &dict_tracks[(h ^ (h >> 7)) & (DICT_TRACKS - 1)];
}

/* the track of d, its entries dropped when d changed since */
static inline dict_track *
dict_track_of(PyObject *d)
{
    dict_track *t = dict_track_slot(d);
    uint64_t v = DICT_VERSION(d);
    if (t->dict != d || t->version != v) {
        t->dict = d;
        t->version = v;
        t->epoch = ++dict_epochs;
        t->keys = -1;
    }
    return t;
}

static inline dict_entry *
dict_entry_of(PyObject *d, PyObject *name)
{
    uintptr_t h = ((uintptr_t)d >> 4) * 31u + ((uintptr_t)name >> 4);
    return &dict_entries[(h ^ (h >> 10)) & (DICT_ENTRIES - 1)];
}

static inline void
dict_entry_fill(dict_entry *e, PyObject *name, dict_track *t, PyObject *value)
{
    if (e->name != name) {
        Py_INCREF(name);
        Py_XSETREF(e->name, name);
    }
    e->epoch = t->epoch;
    e->value = value;
}

/* whether every key of d is an exact str (then a lookup by a str compares no key with
 * Python code). On CPython 3.11 a dict's keys table says so itself: its kind is "unicode"
 * only while every key is an exact str (any other key converts the table); the kind is read
 * from the table's head (Include/internal/pycore_dict.h: refcount, two size bytes, the
 * kind), once checked on two dicts of known kinds; else the keys are looked at. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
typedef struct {
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;  /* 0 general, 1 unicode, 2 split */
} dict_keys_head;
#define DICT_KIND(d) (((dict_keys_head *)((PyDictObject *)(d))->ma_keys)->dk_kind)
static int dict_kind_known = -1;  /* the head read as above gives the kinds: 1 yes, 0 no */
#endif

static int
dict_keys_exact_str(PyObject *d)
{
#ifdef DICT_KIND
    if (dict_kind_known < 0) {
        PyObject *u = Py_BuildValue("{s:i}", "a", 1), *g = Py_BuildValue("{i:i}", 1, 1);
        dict_kind_known = u != NULL && g != NULL && DICT_KIND(u) == 1 && DICT_KIND(g) == 0;
        Py_XDECREF(u);
        Py_XDECREF(g);
        PyErr_Clear();
    }
    if (dict_kind_known)
        return DICT_KIND(d) == 1;
#endif
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k))
            return 0;
    return 1;
}

/* dict_get's lookup, and the entry filled */
CEXT_OUTLINE PyObject *
dict_get_miss(PyObject *d, PyObject *name)
{
    dict_track *t = dict_track_of(d);
    uint64_t epoch = t->epoch;
    PyObject *v = PyDict_GetItemWithError(d, name);
    if (v == NULL && PyErr_Occurred())
        return NULL;
    /* kept unless the lookup ran code that changed d (a key's __eq__) */
    if (t->dict == d && t->epoch == epoch && DICT_VERSION(d) == t->version)
        dict_entry_fill(dict_entry_of(d, name), name, t, v);
    return v;
}
#endif

/* d[name], borrowed; NULL when absent (no error set) or on error (set) */
CEXT_INLINE PyObject *
dict_get(PyObject *d, PyObject *name)
{
#ifdef CEXT_DICT_VERSIONS
    if (PyDict_CheckExact(d) && PyUnicode_CheckExact(name)) {
        dict_track *t = dict_track_slot(d);
        if (t->dict == d && t->version == DICT_VERSION(d)) {
            dict_entry *e = dict_entry_of(d, name);
            if (e->name == name && e->epoch == t->epoch)  /* epochs are never reused */
                return e->value;
        }
        return dict_get_miss(d, name);
    }
#endif
    return PyDict_GetItemWithError(d, name);
}

/* One entry of one dict read often between its changes (the running actor,
 * ``smpy.kernel.actors._current``: written at each resume, read several times while the rank
 * runs): the value read last, with the dict's version then. While the version is the same the
 * dict is unchanged and holds the value (borrowed). PyDict_GetItemWithError's result: a
 * borrowed value, or NULL (absent, or an error set). */
typedef struct {
    PyObject *dict;     /* compared only */
    uint64_t version;
    PyObject *value;
} dict_memo;

static inline PyObject *
dict_memo_get(dict_memo *m, PyObject *d, PyObject *name)
{
#ifdef CEXT_DICT_VERSIONS
    if (m->dict == d && m->value != NULL && DICT_VERSION(d) == m->version)
        return m->value;
    PyObject *v = PyDict_GetItemWithError(d, name);
    m->dict = d;
    m->version = DICT_VERSION(d);  /* a lookup by an exact str key runs no code */
    m->value = v;
    return v;
#else
    (void)m;
    return PyDict_GetItemWithError(d, name);
#endif
}

/* d[name] = v; 0 or -1 */
static inline int
dict_set(PyObject *d, PyObject *name, PyObject *v)
{
#ifdef CEXT_DICT_VERSIONS
    if (PyDict_CheckExact(d) && PyUnicode_CheckExact(name)) {
        PyObject *old = dict_get(d, name);
        if (old == NULL && PyErr_Occurred())
            return -1;
        dict_track *t = dict_track_of(d);
        if (old == v)  /* PyDict_SetItem of the same object changes nothing */
            return 0;
        uint64_t epoch = t->epoch;
        if (t->keys < 0)
            t->keys = dict_keys_exact_str(d);
        Py_XINCREF(old);  /* no finalizer before the new version is taken */
        int rc = PyDict_SetItem(d, name, v);
        if (rc == 0 && t->keys == 1 && t->dict == d && t->epoch == epoch) {
            t->version = DICT_VERSION(d);  /* this write is the only change: the entries stay */
            dict_entry_fill(dict_entry_of(d, name), name, t, v);
        }
        Py_XDECREF(old);
        return rc;
    }
#endif
    return PyDict_SetItem(d, name, v);
}

/* a module global looked up at each call, as Python code does: borrowed, or NULL with
 * NameError */
static inline PyObject *
dict_global(PyObject *dict, PyObject *name)
{
    PyObject *v = dict_get(dict, name);
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
#ifdef CEXT_DICT_VERSIONS
    /* a module's attribute (CACHE_DICT): the value last read from its dict, which holds it
     * while the dict's version is the one it was read at (see dict_get) */
    PyObject *mod;      /* held */
    PyObject *mdict;    /* the module's dict (fixed for its life) */
    uint64_t mversion;
    PyObject *mvalue;   /* borrowed */
    dict_track *mtrack; /* and where dict_get keeps that entry: read there while the dict is */
    dict_entry *mentry; /* unchanged but for writes through dict_set */
#endif
    PyObject *getset;   /* held: the class's getset descriptor or property (CACHE_GETSET, CACHE_PROPERTY) */
    /* the slot of the class seen before (a site that sees instances of two classes in turn) */
    PyTypeObject *type2;
    unsigned int version2;
    Py_ssize_t off2;
} slot_cache;

/* where an attribute lives, beyond a slot's offset (>= 0) */
#define CACHE_PROTOCOL (-1)  /* the attribute protocol */
#define CACHE_DICT (-2)      /* the instance's __dict__ first (no data descriptor on the class) */
#define CACHE_GETSET (-3)    /* a C getter of the class (a getset descriptor, a data descriptor:
                                the generic getattr calls its getter before anything else) */
#define CACHE_PROPERTY (-4)  /* a property of the class (a data descriptor too): its fget called
                                with the object, as property.__get__ does */
#define CACHE_METHOD (-5)    /* a non-data descriptor (a function, a C method) of a class whose
                                instances have no __dict__: the generic getattr calls its __get__ */

/* the offset of property's fget (its member descriptor): 0 not known yet, -1 none */
static Py_ssize_t prop_fget_off;

static Py_ssize_t
property_fget_offset(void)
{
    if (prop_fget_off == 0) {
        PyObject *d = PyObject_GetAttrString((PyObject *)&PyProperty_Type, "fget");
        prop_fget_off = -1;
        if (d == NULL)
            PyErr_Clear();
        else if (Py_TYPE(d) == &PyMemberDescr_Type && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT)
            prop_fget_off = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
    }
    return prop_fget_off;
}

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
    else if (t->tp_getattro == PyObject_GenericGetAttr && d != NULL && Py_TYPE(d) == &PyGetSetDescr_Type &&
             ((PyGetSetDescrObject *)d)->d_getset->get != NULL) {
        off = CACHE_GETSET;
        Py_INCREF(d);
        Py_XSETREF(c->getset, d);
    }
    else if (t->tp_getattro == PyObject_GenericGetAttr && d != NULL && Py_TYPE(d) == &PyProperty_Type &&
             property_fget_offset() > 0) {
        off = CACHE_PROPERTY;
        Py_INCREF(d);
        Py_XSETREF(c->getset, d);
    }
    else if (t->tp_getattro == PyObject_GenericGetAttr && d != NULL && Py_TYPE(d)->tp_descr_get != NULL &&
             Py_TYPE(d)->tp_descr_set == NULL && t->tp_dictoffset == 0
#ifdef Py_TPFLAGS_MANAGED_DICT
             && !(t->tp_flags & Py_TPFLAGS_MANAGED_DICT)
#endif
            ) {
        off = CACHE_METHOD;
        Py_INCREF(d);
        Py_XSETREF(c->getset, d);
    }
    /* an instance with a __dict__ (a plain object, or a module: its getattr is the generic
     * one, then __getattr__ when that fails) and no data descriptor of that name on its class:
     * the generic getattr and setattr look in, and store into, the instance's dict first */
    else if ((generic || (t == &PyModule_Type && t->tp_setattro == PyObject_GenericSetAttr)) &&
             t->tp_dictoffset != 0 && (d == NULL || Py_TYPE(d)->tp_descr_set == NULL))
        off = CACHE_DICT;
    if (c->type != NULL && c->type != t && c->off >= 0) {  /* the previous class's slot kept */
        PyTypeObject *old2 = c->type2;
        c->type2 = c->type;  /* its reference moves */
        c->version2 = c->version;
        c->off2 = c->off;
        c->type = NULL;
        Py_XDECREF(old2);
    }
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
    if (t == c->type2 && t->tp_version_tag == c->version2 && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return c->off2;
    return slot_cache_find(t, c, name);
}

/* the instance dict of o, borrowed, or NULL (none yet: the caller uses the protocol) */
static inline PyObject *
instance_dict(PyObject *o)
{
    PyObject **dp = _PyObject_GetDictPtr(o);
    return dp != NULL && *dp != NULL && PyDict_CheckExact(*dp) ? *dp : NULL;
}


/* the general case of cached_get: the class looked at again, an instance dict, the protocol */
CEXT_OUTLINE PyObject *
cached_get_slow(PyObject *o, slot_cache *c, PyObject *name)
{
#ifdef CEXT_DICT_VERSIONS
    if (o == c->mod && c->off == CACHE_DICT && c->mentry != NULL) {
        /* the module's entry in dict_get's table, its dict changed by dict_set only since */
        PyTypeObject *t = Py_TYPE(o);
        dict_track *tr = c->mtrack;
        dict_entry *e = c->mentry;
        if (t == c->type && t->tp_version_tag == c->version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) &&
            tr->dict == c->mdict && tr->version == DICT_VERSION(c->mdict) && e->name == name &&
            e->epoch == tr->epoch && e->value != NULL)
            return Py_NewRef(e->value);
    }
#endif
    Py_ssize_t off = slot_cache_off(o, c, name);
    if (off >= 0)
        return slot_get(o, off, name);
    if (off == CACHE_DICT) {
#ifdef CEXT_DICT_VERSIONS
        if (PyModule_CheckExact(o)) {
            /* a module's dict: remembered (dict_get), and the value kept here as well */
            PyObject *d = PyModule_GetDict(o);  /* borrowed */
            if (d != NULL && PyDict_CheckExact(d)) {
                uint64_t version = DICT_VERSION(d);
                PyObject *v = dict_get(d, name);
                if (v != NULL) {
                    if (DICT_VERSION(d) == version) {  /* the lookup ran no code that changed d */
                        c->mtrack = dict_track_slot(d);
                        c->mentry = dict_entry_of(d, name);
                        if (c->mod != o) {
                            Py_INCREF(o);
                            Py_XSETREF(c->mod, o);
                        }
                        c->mdict = d;
                        c->mversion = version;
                        c->mvalue = v;
                    }
                    return Py_NewRef(v);
                }
                if (PyErr_Occurred())
                    return NULL;
                return PyObject_GetAttr(o, name);
            }
        }
#endif
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

/* the common cases, inline: a set slot of the cached class; the module attribute read here
 * last, its dict unchanged since */
CEXT_INLINE PyObject *
cached_get(PyObject *o, slot_cache *c, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && t->tp_version_tag == c->version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        if (c->off >= 0) {
            PyObject *v = SLOT(o, c->off);
            if (v != NULL)
                return Py_NewRef(v);
        }
#ifdef CEXT_DICT_VERSIONS
        else if (c->off == CACHE_DICT && o == c->mod && DICT_VERSION(c->mdict) == c->mversion)
            return Py_NewRef(c->mvalue);
#endif
        else if (c->off == CACHE_GETSET) {
            PyGetSetDef *g = ((PyGetSetDescrObject *)c->getset)->d_getset;
            return g->get(o, g->closure);
        }
        else if (c->off == CACHE_PROPERTY) {
            PyObject *fget = SLOT(c->getset, prop_fget_off);
            if (fget != NULL)
                return PyObject_CallOneArg(fget, o);
        }
        else if (c->off == CACHE_METHOD) {
            PyObject *d = c->getset;
            return Py_TYPE(d)->tp_descr_get(d, o, (PyObject *)t);
        }
    }
    else if (t == c->type2 && t->tp_version_tag == c->version2 && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject *v = SLOT(o, c->off2);
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
        if (d != NULL)  /* a module's dict remembered (dict_set), an instance's (one of many) not */
            return PyModule_CheckExact(o) ? dict_set(d, name, v) : PyDict_SetItem(d, name, v);
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
 * slot_cache of (o's class, name) lives in a small table (one per extension), two ways per
 * set, each entry holding its name (a name is in one way of its set at most); a name not
 * there takes the set's ways in turn. A collision only costs a new lookup; with two ways, two
 * names used in turn at one set no longer displace each other (one way each: which pairs
 * collided moved with the addresses of the classes and names, and the instruction count of
 * a ring message by about 1 000 between builds). */
typedef struct {
    PyObject *name;
    slot_cache c;
} named_cache;

#define NAMED_CACHES 512  /* entries: NAMED_CACHES / 2 sets of two */
static named_cache named_caches[NAMED_CACHES];
static unsigned char named_next[NAMED_CACHES / 2];  /* the way a new name takes next */

static inline named_cache *
named_cache_set(PyTypeObject *t, PyObject *name)
{
    uintptr_t h = ((uintptr_t)t >> 4) * 31u + ((uintptr_t)name >> 4);
    return &named_caches[((h ^ (h >> 10)) << 1) & (NAMED_CACHES - 2)];
}

static inline slot_cache *
named_cache_for(PyObject *o, PyObject *name)
{
    named_cache *s = named_cache_set(Py_TYPE(o), name);
    if (s[0].name == name)
        return &s[0].c;
    if (s[1].name == name)
        return &s[1].c;
    size_t k = (size_t)(s - named_caches) >> 1;
    named_cache *e = &s[named_next[k]];
    named_next[k] ^= 1;
    Py_INCREF(name);
    Py_XSETREF(e->name, name);
    Py_CLEAR(e->c.type);  /* found again for this name on the next use */
    Py_CLEAR(e->c.type2);
#ifdef CEXT_DICT_VERSIONS
    Py_CLEAR(e->c.mod);   /* and the value remembered for the other name dropped */
#endif
    return &e->c;
}

CEXT_OUTLINE PyObject *
attr_get_slow(PyObject *o, PyObject *name)
{
    return cached_get(o, named_cache_for(o, name), name);
}

CEXT_OUTLINE int
attr_set_slow(PyObject *o, PyObject *name, PyObject *v)
{
    return cached_set(o, named_cache_for(o, name), name, v);
}

/* the entry of (t, name) whose cache holds a slot of t, unchanged since, or NULL */
static inline named_cache *
named_slot_entry(PyTypeObject *t, PyObject *name)
{
    named_cache *s = named_cache_set(t, name);
    for (int w = 0; w < 2; w++) {
        named_cache *e = &s[w];
        if (e->name == name && e->c.type == t && e->c.off >= 0 && t->tp_version_tag == e->c.version &&
            (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
            return e;
    }
    return NULL;
}

/* inline: a set slot of the class this name was last found on, unchanged since */
CEXT_INLINE PyObject *
attr_get(PyObject *o, PyObject *name)
{
    named_cache *e = named_slot_entry(Py_TYPE(o), name);
    if (e != NULL) {
        PyObject *v = SLOT(o, e->c.off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return attr_get_slow(o, name);
}

CEXT_INLINE int
attr_set(PyObject *o, PyObject *name, PyObject *v)
{
    named_cache *e = named_slot_entry(Py_TYPE(o), name);
    if (e != NULL) {
        slot_set(o, e->c.off, v);
        return 0;
    }
    return attr_set_slow(o, name, v);
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

#define METHOD_CACHES 512
static method_cache method_caches[METHOD_CACHES];

/* 1 when o's own __dict__ holds name, 0 when not, -1 error. A managed __dict__ (CPython 3.11:
 * a class without __slots__, or with "__dict__" in them) is made a dict object by
 * _PyObject_GetDictPtr the first time (its attributes moved from the inline values into it,
 * as vars(o) does; no attribute changes); if that fails, the protocol decides. */
static inline int
own_dict_has(PyObject *o, PyObject *name)
{
    if (Py_TYPE(o)->tp_dictoffset == 0)
        return 0;
    PyObject **dp = _PyObject_GetDictPtr(o);
    if (dp == NULL)
#ifdef Py_TPFLAGS_MANAGED_DICT
        return (Py_TYPE(o)->tp_flags & Py_TPFLAGS_MANAGED_DICT) ? 1 : 0;
#else
        return 0;
#endif
    PyObject *d = *dp;
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
    int has = t->tp_getattro == PyObject_GenericGetAttr ? own_dict_has(args[0], name) : 1;
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
    method_cache *e = &method_caches[(h ^ (h >> 10)) & (METHOD_CACHES - 1)];
    if (e->name == name && e->type == t && t->tp_version_tag == e->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        int has = own_dict_has(args[0], name);  /* 0 at once without a __dict__ */
        if (has < 0)
            return NULL;
        if (has)
            return PyObject_VectorcallMethod(name, args, nargsf, NULL);
        PyObject *m = Py_NewRef(e->meth);  /* held across the call (the class may change during it) */
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

/* -- direct calls: fewer C frames on a rank's stack ---------------------------------------
 * A rank that blocks keeps the C stack between the program's frame and greenlet's switch
 * while it waits; greenlet copies that part out at each switch away and back at each resume
 * (docs/performance.md, "The C stack copied at each switch"). The calls below make the same
 * call as PyObject_Vectorcall / the method call they replace, without the intermediate C
 * frames (the vectorcall trampolines, the method descriptor's call). */

/* f(*args, **kw) as a vector call. A C function of flags METH_FASTCALL | METH_KEYWORDS (an
 * exact builtin function, as a module's functions and PyCFunction_New's are) is called
 * directly, as cfunction_vectorcall_FASTCALL_KEYWORDS calls it (with its recursion check);
 * anything else through PyObject_Vectorcall. */
CEXT_INLINE PyObject *
call_direct(PyObject *f, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (Py_IS_TYPE(f, &PyCFunction_Type) && PyCFunction_GET_FLAGS(f) == (METH_FASTCALL | METH_KEYWORDS)) {
        _PyCFunctionFastWithKeywords meth = (_PyCFunctionFastWithKeywords)(void (*)(void))PyCFunction_GET_FUNCTION(f);
        if (Py_EnterRecursiveCall(" while calling a Python object"))
            return NULL;
        PyObject *r = meth(PyCFunction_GET_SELF(f), args, PyVectorcall_NARGS(nargsf), kwnames);
        Py_LeaveRecursiveCall();
        return r;
    }
    return PyObject_Vectorcall(f, args, nargsf, kwnames);
}

/* g.switch() for a greenlet: through greenlet's C API (PyGreenlet_Switch, what the method
 * calls with no arguments) when g is an exact greenlet.greenlet and green_api_load() found
 * the API; else the method call. */
typedef PyObject *(*green_switch_fn)(PyObject *, PyObject *, PyObject *);
static PyTypeObject *green_type;
static green_switch_fn green_switch_c;

/* greenlet's C API (the capsule greenlet._C_API: [0] the greenlet type, [6] PyGreenlet_Switch,
 * greenlet.h's numbering since greenlet 0.4), used when its [0] is greenlet.greenlet; 0, or
 * -1 with an exception set */
static inline int
green_api_load(void)
{
    if (green_switch_c != NULL)
        return 0;
    PyObject *mod = PyImport_ImportModule("greenlet");
    if (mod == NULL)
        return -1;
    PyObject *cls = PyObject_GetAttrString(mod, "greenlet");
    Py_DECREF(mod);
    if (cls == NULL)
        return -1;
    void **api = (void **)PyCapsule_Import("greenlet._C_API", 0);
    if (api == NULL) {
        PyErr_Clear();  /* no C API: the method call */
    } else if (api[0] == (void *)cls && PyType_Check(cls)) {
        green_type = (PyTypeObject *)Py_NewRef(cls);
        green_switch_c = (green_switch_fn)api[6];
    }
    Py_DECREF(cls);
    return 0;
}

CEXT_INLINE PyObject *
green_switch0(PyObject *g, PyObject *s_switch_name)
{
    if (green_switch_c != NULL && Py_IS_TYPE(g, green_type)) {
        /* as the method's call does (method_vectorcall_VARARGS_KEYWORDS: the recursion
           check, no arguments: the empty tuple, no keywords) */
        if (Py_EnterRecursiveCall(" while calling a Python object"))
            return NULL;
        PyObject *r = green_switch_c(g, NULL, NULL);
        Py_LeaveRecursiveCall();
        return r;
    }
    return call_method0(g, s_switch_name);
}

/* g.switch(arg), as green_switch0 */
static inline PyObject *
green_switch1(PyObject *g, PyObject *s_switch_name, PyObject *arg)
{
    if (green_switch_c != NULL && Py_IS_TYPE(g, green_type)) {
        PyObject *args = PyTuple_Pack(1, arg);
        if (args == NULL)
            return NULL;
        PyObject *r = NULL;
        if (!Py_EnterRecursiveCall(" while calling a Python object")) {
            r = green_switch_c(g, args, NULL);
            Py_LeaveRecursiveCall();
        }
        Py_DECREF(args);
        return r;
    }
    return call_method1(g, s_switch_name, arg);
}

/* -- direct calls without keywords: builtin functions and method descriptors ----------------
 * The same calls PyObject_Vectorcall makes of an exact builtin function (flags METH_FASTCALL,
 * METH_FASTCALL | METH_KEYWORDS, METH_O) or of a method descriptor (flags METH_NOARGS, METH_O,
 * METH_FASTCALL, METH_FASTCALL | METH_KEYWORDS, the self's class checked as the descriptor's call
 * checks it), without the vectorcall trampolines: the C function called with the recursion
 * check its vectorcall makes. Anything else (a Python function put in the place of a compiled
 * one, a wrong argument count, a self of another class) through PyObject_Vectorcall, which
 * calls it, or raises what it raises. */
/* Py_EnterRecursiveCall / Py_LeaveRecursiveCall, inline on CPython 3.11 (the steps of its
 * _Py_EnterRecursiveCallTstate: the thread state's recursion_remaining taken down by one when
 * above zero; at zero, Py_EnterRecursiveCall itself, which checks and raises RecursionError;
 * the leave gives it back), the functions elsewhere. A greenlet switch during the call keeps
 * the thread state (greenlet saves and restores the count per greenlet). */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define CEXT_ENTER(ts) ((ts) = _PyThreadState_UncheckedGet(), \
                        (ts)->recursion_remaining > 0 ? ((ts)->recursion_remaining--, 0) \
                                                      : Py_EnterRecursiveCall(" while calling a Python object"))
#define CEXT_LEAVE(ts) ((ts)->recursion_remaining++)
#else
#define CEXT_ENTER(ts) ((void)(ts), Py_EnterRecursiveCall(" while calling a Python object"))
#define CEXT_LEAVE(ts) Py_LeaveRecursiveCall()
#endif

CEXT_INLINE PyObject *
cext_c_call(PyCFunction m, int flags, PyObject *self, PyObject *const *args, Py_ssize_t nargs, int *done)
{
    PyObject *r;
    PyThreadState *ts = NULL;
    *done = 1;
    if (flags == METH_FASTCALL) {
        if (CEXT_ENTER(ts))
            return NULL;
        r = ((_PyCFunctionFast)(void (*)(void))m)(self, args, nargs);
    } else if (flags == (METH_FASTCALL | METH_KEYWORDS)) {
        if (CEXT_ENTER(ts))
            return NULL;
        r = ((_PyCFunctionFastWithKeywords)(void (*)(void))m)(self, args, nargs, NULL);
    } else if (flags == METH_O && nargs == 1) {
        if (CEXT_ENTER(ts))
            return NULL;
        r = m(self, args[0]);
    } else if (flags == METH_NOARGS && nargs == 0) {
        if (CEXT_ENTER(ts))
            return NULL;
        r = m(self, NULL);
    } else {
        *done = 0;
        return NULL;
    }
    CEXT_LEAVE(ts);
    return r;
}

/* f(*args), no keywords */
CEXT_INLINE PyObject *
call_direct_n(PyObject *f, PyObject *const *args, Py_ssize_t nargs)
{
    if (Py_IS_TYPE(f, &PyCFunction_Type) && PyCFunction_GET_FLAGS(f) != METH_NOARGS) {
        int done;
        PyObject *r = cext_c_call(PyCFunction_GET_FUNCTION(f), PyCFunction_GET_FLAGS(f), PyCFunction_GET_SELF(f),
                                  args, nargs, &done);
        if (done)
            return r;
    }
    return PyObject_Vectorcall(f, args, nargs, NULL);
}

/* a * b and a + b: exact ints of at most one digit in C (the product or sum, exact in a long
 * long: |a|, |b| < 2**30), anything else by the number protocol; the same int either way */
static inline PyObject *
int_mul(PyObject *a, PyObject *b)
{
    long x, y;
    if (cext_small_int(a, &x) && cext_small_int(b, &y))
        return PyLong_FromLongLong((long long)x * (long long)y);
    return PyNumber_Multiply(a, b);
}

static inline PyObject *
int_add(PyObject *a, PyObject *b)
{
    long x, y;
    if (cext_small_int(a, &x) && cext_small_int(b, &y))
        return PyLong_FromLongLong((long long)x + (long long)y);
    return PyNumber_Add(a, b);
}

/* -- an existing entry's value replaced in place (CPython 3.11) ------------------------------
 * A store d[key] = v into an exact dict that holds key already costs PyDict_SetItem's lookup,
 * its bookkeeping and dict_set's (about 335 instructions); the switch hooks make six or more per
 * resume. What such a store changes in CPython 3.11 is the entry's value and the dict's
 * ma_version_tag (PEP 509): the keys table (its dk_version, which the interpreter's specialized
 * LOAD_GLOBAL and LOAD_ATTR_MODULE check before reading the entry's current value) and the size
 * are unchanged. dict_batch_set makes that store directly into the entry:
 *
 * - the entry is found in a combined table of exact str keys (kind "unicode", no split values),
 *   by a remembered index (the key at that index, and its value, checked) or else by the table's
 *   own probe sequence (key identity, or an equal str: no Python code runs); anything else (a
 *   missing key, another table kind, an untracked dict, which PyDict_SetItem may start tracking)
 *   returns 0 and the caller stores the usual way;
 * - the new ma_version_tag is a value of the global counter never given out before, taken by one
 *   PyDict_SetItem on a private dict (the counter, _pydict_global_version, is not exported) and
 *   shared by the stores of one batch: a version then belongs to several dicts, which the caches
 *   keyed by (dict, version) in these files allow (_cext.h's tables, the memos of _worldaccel.c,
 *   _lmmaccel.c and _netaccel.c all compare the dict too). A dict is not given the batch's
 *   version twice (a cache may have read it in between), except within a group of stores into
 *   one dict made with no reads between them (dict_batch.group); the caller resets the version
 *   (dict_batch_code) whenever other code may have run;
 * - the replaced values are held by the batch and released by dict_batch_end, after every
 *   version is set (no finalizer runs in between, as dict_set does);
 * - dict_get's table follows the store when the dict's track was current (as dict_set does).
 *
 * The table layout (Include/internal/pycore_dict.h of 3.11) is checked once on dicts built for
 * it (dict_inplace_check); if it does not match, no store is made in place. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && defined(CEXT_DICT_VERSIONS)
#define CEXT_DICT_INPLACE 1

typedef struct {
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} cext_dict_keys;

typedef struct {
    PyObject *me_key;
    PyObject *me_value;
} cext_ukey_entry;

static int dict_inplace_ok = -1;  /* the layout checked: 1 matches, 0 not (no store in place) */

static inline cext_ukey_entry *
dk_uentries(cext_dict_keys *k)
{
    return (cext_ukey_entry *)(k->dk_indices + ((size_t)1 << k->dk_log2_index_bytes));
}

static inline Py_ssize_t
dk_index(const cext_dict_keys *k, size_t i)
{
    int log2 = k->dk_log2_size;
    if (log2 < 8)
        return ((const int8_t *)k->dk_indices)[i];
    if (log2 < 16)
        return ((const int16_t *)k->dk_indices)[i];
    if (log2 >= 32)
        return (Py_ssize_t)((const int64_t *)k->dk_indices)[i];
    return ((const int32_t *)k->dk_indices)[i];
}

/* two exact str, a's hash known: equal (no code runs) */
static inline int
ustr_eq(PyObject *a, PyObject *b, Py_hash_t hb)
{
    if (a == b)
        return 1;
    if (a == NULL || ((PyASCIIObject *)a)->hash != hb || PyUnicode_GET_LENGTH(a) != PyUnicode_GET_LENGTH(b) ||
        PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)PyUnicode_GET_LENGTH(a) * PyUnicode_KIND(a)) == 0;
}

/* the index of key's entry in a unicode table by its probe sequence (dictobject.c's
 * unicodekeys_lookup_unicode), or -1 */
CEXT_OUTLINE Py_ssize_t
dk_probe(cext_dict_keys *k, PyObject *key)
{
    Py_hash_t hash = ((PyASCIIObject *)key)->hash;
    if (hash == -1) {
        hash = PyObject_Hash(key);
        if (hash == -1) {
            PyErr_Clear();
            return -1;
        }
    }
    cext_ukey_entry *ep = dk_uentries(k);
    size_t mask = ((size_t)1 << k->dk_log2_size) - 1, perturb = (size_t)hash, i = (size_t)hash & mask;
    for (Py_ssize_t n = 0; n <= (Py_ssize_t)mask; n++) {
        Py_ssize_t ix = dk_index(k, i);
        if (ix >= 0) {
            if (ix >= k->dk_nentries)
                return -1;  /* not a table of this layout */
            if (ustr_eq(ep[ix].me_key, key, hash))
                return ix;
        } else if (ix == -1)
            return -1;
        perturb >>= 5;
        i = mask & (i * 5 + perturb + 1);
    }
    return -1;
}

/* where d's entry of key keeps its value (d an exact dict, key an exact str), or NULL when
 * not found this way (no error set); *hint: the index found last (-1 none) */
CEXT_INLINE PyObject **
dict_value_ref(PyObject *d, PyObject *key, Py_ssize_t *hint)
{
    PyDictObject *mp = (PyDictObject *)d;
    cext_dict_keys *k = (cext_dict_keys *)mp->ma_keys;
    if (mp->ma_values != NULL || k->dk_kind != 1 || dict_inplace_ok != 1)
        return NULL;
    cext_ukey_entry *ep = dk_uentries(k);
    Py_ssize_t ix = *hint;
    if (ix >= 0 && ix < k->dk_nentries && ep[ix].me_value != NULL &&
        (ep[ix].me_key == key || ustr_eq(ep[ix].me_key, key, ((PyASCIIObject *)key)->hash)))
        return &ep[ix].me_value;
    ix = dk_probe(k, key);
    if (ix < 0 || ep[ix].me_value == NULL)
        return NULL;
    *hint = ix;
    return &ep[ix].me_value;
}

#define DICT_BATCH_HELD 24
typedef struct {
    uint64_t version;    /* the batch's fresh version, 0 none yet (or reset: code ran) */
    PyObject *group;     /* a dict that may take several stores at the version (none read between) */
    int n;
    PyObject *held[DICT_BATCH_HELD];  /* the replaced values, released at the end */
} dict_batch;

static PyObject *fresh_dict, *fresh_key;
static int fresh_flip;

/* _PyObject_GC_IS_TRACKED (3.11: the GC head, two words, just before the object; its first word
 * non-zero while tracked), checked by dict_inplace_check against PyObject_GC_IsTracked */
static inline int
dict_gc_tracked(PyObject *d)
{
    return ((const uintptr_t *)d)[-2] != 0;
}

/* The counter itself (CPython's _pydict_global_version, a local symbol of libpython: not
 * exported, but listed in its symbol table unless the library was stripped): its address is
 * read from the ELF symbol table of the object that holds PyDict_New, kept only when it lies in
 * a writable segment of that object as loaded and new dicts then take their versions from it
 * (three checks); a fresh version is then the counter incremented, as DICT_NEXT_VERSION does
 * (about 200 instructions less than a store into a private dict). Not found: that store. */
#if defined(__linux__) && defined(__LP64__)
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#define CEXT_DICT_COUNTER 1

typedef struct {
    const void *base;
    uintptr_t addr;
    int ok;
} dict_counter_seg;

static int
dict_counter_phdr(struct dl_phdr_info *info, size_t size, void *data)
{
    dict_counter_seg *s = (dict_counter_seg *)data;
    (void)size;
    if ((uintptr_t)info->dlpi_addr != (uintptr_t)s->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && s->addr >= lo && s->addr + 8 <= lo + ph->p_memsz &&
            s->addr % 8 == 0)
            s->ok = 1;
    }
    return s->ok;
}

/* the symbol's address in the object holding PyDict_New, or 0 */
static uintptr_t
dict_counter_lookup(void)
{
    Dl_info info;
    if (!dladdr((void *)&PyDict_New, &info) || info.dli_fname == NULL || info.dli_fbase == NULL)
        return 0;
    FILE *f = fopen(info.dli_fname, "rb");
    if (f == NULL)
        return 0;
    uintptr_t found = 0;
    ElfW(Ehdr) eh;
    ElfW(Shdr) *sh = NULL;
    char *names = NULL;
    ElfW(Sym) *syms = NULL;
    if (fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
        eh.e_shnum > 4096)
        goto done;
    sh = (ElfW(Shdr) *)PyMem_RawMalloc(sizeof(ElfW(Shdr)) * eh.e_shnum);
    if (sh == NULL || fseek(f, (long)eh.e_shoff, SEEK_SET) != 0 || fread(sh, sizeof(ElfW(Shdr)), eh.e_shnum, f) != eh.e_shnum)
        goto done;
    for (int i = 0; i < eh.e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum || sh[i].sh_entsize != sizeof(ElfW(Sym)) ||
            sh[i].sh_size > ((size_t)64 << 20) || sh[sh[i].sh_link].sh_size > ((size_t)64 << 20))
            continue;
        ElfW(Shdr) *st = &sh[sh[i].sh_link];
        syms = (ElfW(Sym) *)PyMem_RawMalloc(sh[i].sh_size);
        names = (char *)PyMem_RawMalloc(st->sh_size + 1);
        if (syms == NULL || names == NULL || fseek(f, (long)sh[i].sh_offset, SEEK_SET) != 0 ||
            fread(syms, 1, sh[i].sh_size, f) != sh[i].sh_size || fseek(f, (long)st->sh_offset, SEEK_SET) != 0 ||
            fread(names, 1, st->sh_size, f) != st->sh_size)
            goto done;
        names[st->sh_size] = 0;
        size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
        for (size_t j = 0; j < n; j++) {
            ElfW(Sym) *y = &syms[j];
            if (y->st_name < st->sh_size && y->st_size == 8 && ELF64_ST_TYPE(y->st_info) == STT_OBJECT &&
                y->st_shndx != SHN_UNDEF && strcmp(names + y->st_name, "_pydict_global_version") == 0) {
                found = (eh.e_type == ET_DYN ? (uintptr_t)info.dli_fbase : 0) + (uintptr_t)y->st_value;
                break;
            }
        }
        PyMem_RawFree(syms);
        PyMem_RawFree(names);
        syms = NULL;
        names = NULL;
    }
    if (found) {  /* in a writable segment of that object as loaded */
        dict_counter_seg seg = {eh.e_type == ET_DYN ? info.dli_fbase : NULL, found, 0};
        if (eh.e_type == ET_DYN)
            dl_iterate_phdr(dict_counter_phdr, &seg);
        if (!seg.ok)
            found = 0;
    }
done:
    PyMem_RawFree(syms);
    PyMem_RawFree(names);
    PyMem_RawFree(sh);
    fclose(f);
    return found;
}

static uint64_t *dict_counter;
static int dict_counter_state = -1;  /* 1 found and checked, 0 not (the private dict's store) */

static void
dict_counter_find(void)
{
    dict_counter_state = 0;
    uint64_t *p = (uint64_t *)dict_counter_lookup();
    if (p == NULL)
        return;
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {  /* new dicts take their versions from it */
        uint64_t before = *p;
        PyObject *d = PyDict_New();
        ok = d != NULL && DICT_VERSION(d) == before + 1 && *p == before + 1;
        Py_XDECREF(d);
    }
    PyErr_Clear();
    if (ok) {
        dict_counter = p;
        dict_counter_state = 1;
    }
}
#endif

/* a version of the global counter never given out before: 0, or -1 with an error set. Runs no
 * code and allocates nothing (dict_batch_set calls it with an entry found): the counter, or a
 * store of the other bool into the private dict's one entry; both set up by dict_inplace_check,
 * which dict_batch_set runs first. */
CEXT_OUTLINE int
dict_fresh_version(uint64_t *out)
{
#ifdef CEXT_DICT_COUNTER
    if (dict_counter_state == 1) {
        *out = ++*dict_counter;
        return 0;
    }
#endif
    fresh_flip ^= 1;  /* a value other than the one held: the version changes (bools: no release runs code) */
    if (fresh_dict == NULL || PyDict_SetItem(fresh_dict, fresh_key, fresh_flip ? Py_True : Py_False) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "no source of dict versions");
        return -1;
    }
    *out = DICT_VERSION(fresh_dict);
    return 0;
}

/* whether dict_value_ref reads this build's tables right: on dicts of 1, 8 and 300 keys (indices
 * of 1, 1 and 2 bytes), with a deleted key, and one with a non-str key; 1 or 0 */
static int
dict_inplace_check(void)
{
    static const int sizes[] = {1, 8, 300};
    int ok = 1;
    dict_inplace_ok = 1;  /* for dict_value_ref's use below */
    for (int s = 0; s < 3 && ok; s++) {
        PyObject *d = PyDict_New(), *keys = PyList_New(0);
        ok = d != NULL && keys != NULL;
        for (int i = 0; i < sizes[s] && ok; i++) {
            PyObject *k = PyUnicode_FromFormat("k%d", i);  /* not interned */
            ok = k != NULL && PyList_Append(keys, k) == 0 && PyDict_SetItem(d, k, k) == 0;
            Py_XDECREF(k);
        }
        if (ok && sizes[s] > 2 && PyDict_DelItem(d, PyList_GET_ITEM(keys, 1)) < 0)
            ok = 0;
        for (int i = 0; i < sizes[s] && ok; i++) {
            PyObject *k = PyList_GET_ITEM(keys, i);
            PyObject *eq = PyUnicode_FromFormat("k%d", i);  /* an equal str, another object */
            Py_ssize_t hint = -1, hint2 = -1;
            PyObject **r = dict_value_ref(d, k, &hint), **r2 = eq == NULL ? NULL : dict_value_ref(d, eq, &hint2);
            int gone = sizes[s] > 2 && i == 1;
            ok = eq != NULL && (gone ? r == NULL && r2 == NULL : r != NULL && *r == k && r2 == r && hint == hint2 &&
                                dict_value_ref(d, k, &hint) == r);
            Py_XDECREF(eq);
        }
        Py_XDECREF(keys);
        Py_XDECREF(d);
    }
    if (ok) {  /* the GC head read right: an untracked dict, then tracked */
        PyObject *d = PyDict_New(), *l = PyList_New(0);
        ok = d != NULL && l != NULL && !PyObject_GC_IsTracked(d) && !dict_gc_tracked(d) &&
             PyDict_SetItemString(d, "l", l) == 0 && PyObject_GC_IsTracked(d) && dict_gc_tracked(d);
        Py_XDECREF(l);
        Py_XDECREF(d);
    }
    if (ok) {  /* another kind of table: not found this way */
        PyObject *g = Py_BuildValue("{i:i,s:i}", 1, 1, "a", 2), *a = PyUnicode_InternFromString("a");
        Py_ssize_t hint = -1;
        ok = g != NULL && a != NULL && dict_value_ref(g, a, &hint) == NULL;
        Py_XDECREF(g);
        Py_XDECREF(a);
    }
    /* the source of fresh versions, made ready now (dict_fresh_version then allocates nothing) */
#ifdef CEXT_DICT_COUNTER
    if (ok && dict_counter_state < 0)
        dict_counter_find();
#endif
    if (ok && fresh_dict == NULL) {
        fresh_key = PyUnicode_InternFromString("version");
        fresh_dict = fresh_key == NULL ? NULL : PyDict_New();
        ok = fresh_dict != NULL && PyDict_SetItem(fresh_dict, fresh_key, Py_False) == 0;
    }
    PyErr_Clear();
    dict_inplace_ok = ok;
    return ok;
}

/* the version to give d in this batch; 0, or -1 with an error set */
static inline int
dict_batch_version(dict_batch *b, PyObject *d)
{
    if (b->version == 0 || (DICT_VERSION(d) == b->version && d != b->group))
        return dict_fresh_version(&b->version);
    return 0;
}

static inline void
dict_batch_init(dict_batch *b)
{
    b->version = 0;
    b->group = NULL;
    b->n = 0;
}

/* d[key] = v in place when d holds key (d an exact dict): 1 done, 0 not this case (nothing
 * done: the caller stores the usual way, then calls dict_batch_code), -1 error. follow: keep
 * dict_get's entries of d (for a dict read through dict_get) */
static inline int
dict_batch_set(dict_batch *b, PyObject *d, PyObject *key, Py_ssize_t *hint, PyObject *v, int follow)
{
    if (!PyUnicode_CheckExact(key) || b->n >= DICT_BATCH_HELD)
        return 0;
    if (dict_inplace_ok < 0)
        dict_inplace_check();
    PyObject **ref = dict_value_ref(d, key, hint);
    if (ref == NULL)
        return 0;
    PyObject *old = *ref;
    if (old == v)
        return 1;  /* PyDict_SetItem of the same object changes nothing */
    if (!dict_gc_tracked(d))
        return 0;  /* PyDict_SetItem may start tracking it */
    if (dict_batch_version(b, d) < 0)
        return -1;
    uint64_t pre = DICT_VERSION(d);
    *ref = Py_NewRef(v);
    ((PyDictObject *)d)->ma_version_tag = b->version;
    b->held[b->n++] = old;
    if (follow) {
        dict_track *t = dict_track_slot(d);
        if (t->dict == d && t->version == pre) {  /* this store is the only change: dict_get's entries stay */
            t->version = b->version;
            dict_entry_fill(dict_entry_of(d, key), key, t, v);
        }
    }
    return 1;
}

/* other code may have run (a call, a store that released a value): the next store takes a
 * new version */
static inline void
dict_batch_code(dict_batch *b)
{
    b->version = 0;
}

/* the replaced values released (their finalizers may run now) */
static inline void
dict_batch_end(dict_batch *b)
{
    int n = b->n;
    b->n = 0;
    b->version = 0;
    for (int i = 0; i < n; i++)
        Py_DECREF(b->held[i]);
}
#endif

/* -- method calls without the vectorcall trampolines ---------------------------------------
 * obj.name(...) with args[0] = obj, as method_call (the same lookup: obj's own __dict__ first
 * when its class gives it one, then the class attribute, remembered per (class, name) while
 * the class's version tag is unchanged), when the class attribute is a method descriptor
 * (exact) of a C method of flags METH_NOARGS, METH_O or METH_FASTCALL | METH_KEYWORDS (a
 * compiled method of smpy's extensions, a builtin type's method) and obj is an instance of the
 * descriptor's class: its C function is called as the descriptor's vectorcall calls it
 * (descrobject.c, method_vectorcall_NOARGS, _O, _FASTCALL_KEYWORDS: the recursion check, obj
 * first, the other arguments), without PyObject_Vectorcall, the trampoline and its type
 * check (done once per class and name, and remembered with the entry). obj's own exact
 * __dict__ is looked at through dict_get (its answer remembered with the dict's version), so
 * an instance attribute of that name is still called instead. Anything else, or another
 * number of arguments: method_call. The entries are per call site (two classes each: the
 * macros below give every site its own static direct_site), so that no two sites' classes
 * and names can evict each other, as in a table keyed by addresses. */
typedef struct {
    PyObject *name;      /* held */
    PyTypeObject *type;  /* held */
    unsigned int version;
    PyObject *descr;     /* held (the C function it names lives as long as its extension) */
    PyCFunction meth;
    int flags;
#ifdef CEXT_DICT_VERSIONS
    PyObject *adict;     /* compared only: an instance dict found without the name, */
    uint64_t aversion;   /* at this version (a new version for every change of any dict) */
#endif
} direct_cache;

typedef struct {
    direct_cache way[2];
    int next;            /* the way a miss fills next */
} direct_site;

/* own_dict_has, an exact __dict__'s answer for an exact str name remembered (dict_get) */
static inline int
own_dict_has_v(PyObject *o, PyObject *name)
{
    if (Py_TYPE(o)->tp_dictoffset == 0)
        return 0;
    PyObject **dp = _PyObject_GetDictPtr(o);
    PyObject *d = dp == NULL ? NULL : *dp;
    if (d == NULL || !PyDict_CheckExact(d) || !PyUnicode_CheckExact(name))
        return own_dict_has(o, name);
    PyObject *v = dict_get(d, name);
    return v != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* the entry's C function on args[0 .. n-1] (n checked against its flags by the caller) */
CEXT_INLINE PyObject *
direct_invoke(direct_cache *e, PyObject *const *args, Py_ssize_t n)
{
    PyThreadState *ts = NULL;
    if (CEXT_ENTER(ts))
        return NULL;
    PyObject *r;
    if (e->flags == METH_NOARGS)
        r = e->meth(args[0], NULL);
    else if (e->flags == METH_O)
        r = e->meth(args[0], n > 1 ? args[1] : NULL);  /* n is 2 here (direct_nargs_fit): the test
                                                         * keeps -Warray-bounds quiet on 1-argument sites */
    else
        r = ((_PyCFunctionFastWithKeywords)(void (*)(void))e->meth)(args[0], args + 1, n - 1, NULL);
    CEXT_LEAVE(ts);
    return r;
}

static inline int
direct_nargs_fit(int flags, Py_ssize_t n)
{
    return flags == METH_NOARGS ? n == 1 : flags == METH_O ? n == 2 : n >= 1;
}

CEXT_OUTLINE PyObject *
cmethod_call_slow(direct_cache *e, PyObject *name, PyObject *const *args, size_t nargsf)
{
    PyTypeObject *t = Py_TYPE(args[0]);
    if (t->tp_getattro != PyObject_GenericGetAttr)
        return method_call(name, args, nargsf);
    int has = own_dict_has(args[0], name);
    if (has < 0)
        return NULL;
    PyObject *d = has ? NULL : _PyType_Lookup(t, name);  /* borrowed; gives t a valid version tag */
    if (d == NULL || !Py_IS_TYPE(d, &PyMethodDescr_Type) || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return method_call(name, args, nargsf);
    PyMethodDef *ml = ((PyMethodDescrObject *)d)->d_method;
    int flags = ml->ml_flags;
    if ((flags != METH_NOARGS && flags != METH_O && flags != (METH_FASTCALL | METH_KEYWORDS)) ||
        !PyObject_TypeCheck(args[0], PyDescr_TYPE(d)))
        return method_call(name, args, nargsf);
    Py_INCREF(name);
    Py_XSETREF(e->name, name);
    Py_INCREF(t);
    Py_XSETREF(e->type, t);
    e->version = t->tp_version_tag;
    Py_INCREF(d);
    Py_XSETREF(e->descr, d);
    e->meth = ml->ml_meth;
    e->flags = flags;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (!direct_nargs_fit(flags, n))
        return method_call(name, args, nargsf);
    return direct_invoke(e, args, n);
}

CEXT_INLINE PyObject *
cmethod_call_at(direct_site *site, PyObject *name, PyObject *const *args, size_t nargsf)
{
    PyTypeObject *t = Py_TYPE(args[0]);
    direct_cache *e = &site->way[0];
    if (!(e->type == t && e->name == name && t->tp_version_tag == e->version)) {
        e = &site->way[1];
        if (!(e->type == t && e->name == name && t->tp_version_tag == e->version)) {
            e = &site->way[site->next];
            site->next ^= 1;
            return cmethod_call_slow(e, name, args, nargsf);
        }
    }
    if (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {
        int has = 0;
        if (t->tp_dictoffset != 0) {
#ifdef CEXT_DICT_VERSIONS
            PyObject **dp;
#ifdef Py_TPFLAGS_MANAGED_DICT
            if (!(t->tp_flags & Py_TPFLAGS_MANAGED_DICT) && t->tp_dictoffset > 0)
#else
            if (t->tp_dictoffset > 0)
#endif
                dp = (PyObject **)((char *)args[0] + t->tp_dictoffset);
            else
                dp = _PyObject_GetDictPtr(args[0]);  /* a managed dict: made a dict object, as own_dict_has does */
            PyObject *d = dp == NULL ? NULL : *dp;
            if (d == NULL || d != e->adict || DICT_VERSION(d) != e->aversion) {
                has = own_dict_has_v(args[0], name);
                if (has == 0 && d != NULL && PyDict_CheckExact(d)) {  /* its absence remembered */
                    e->adict = d;
                    e->aversion = DICT_VERSION(d);
                }
            }
#else
            has = own_dict_has(args[0], name);
#endif
        }
        if (has < 0)
            return NULL;
        Py_ssize_t n = PyVectorcall_NARGS(nargsf);
        if (has || !direct_nargs_fit(e->flags, n))
            return method_call(name, args, nargsf);
        return direct_invoke(e, args, n);
    }
    return cmethod_call_slow(e, name, args, nargsf);
}

/* cmethod_call(name, args, nargsf), and obj.name() and obj.name(arg) through it (new
   references), each expansion with its own site */
#define cmethod_call(name, args, nargsf) __extension__({ \
        static direct_site cext_site_; \
        cmethod_call_at(&cext_site_, (name), (args), (nargsf)); })
#define direct_method0(obj, name) __extension__({ \
        static direct_site cext_site_; \
        PyObject *cext_args_[1] = {(obj)}; \
        cmethod_call_at(&cext_site_, (name), cext_args_, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET); })
#define direct_method1(obj, name, arg) __extension__({ \
        static direct_site cext_site_; \
        PyObject *cext_args_[2] = {(obj), (arg)}; \
        cmethod_call_at(&cext_site_, (name), cext_args_, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET); })

/* fn(*a) for an exact tuple a: a builtin function or bound C method (exact PyCFunction) of
 * flags METH_NOARGS with no argument, METH_O with one, METH_FASTCALL | METH_KEYWORDS with any,
 * called as its vectorcall calls it (methodobject.c, cfunction_vectorcall_*: the recursion
 * check, its self, the arguments); anything else: PyObject_Call */
CEXT_INLINE PyObject *
call_tuple_direct(PyObject *fn, PyObject *a)
{
    if (Py_IS_TYPE(fn, &PyCFunction_Type)) {
        int flags = PyCFunction_GET_FLAGS(fn);
        Py_ssize_t n = PyTuple_GET_SIZE(a);
        if ((flags == METH_NOARGS && n == 0) || (flags == METH_O && n == 1) ||
            flags == (METH_FASTCALL | METH_KEYWORDS)) {
            PyThreadState *ts = NULL;
            if (CEXT_ENTER(ts))
                return NULL;
            PyObject *self = PyCFunction_GET_SELF(fn), *r;
            PyCFunction meth = PyCFunction_GET_FUNCTION(fn);
            if (flags == METH_NOARGS)
                r = meth(self, NULL);
            else if (flags == METH_O)
                r = meth(self, PyTuple_GET_ITEM(a, 0));
            else
                r = ((_PyCFunctionFastWithKeywords)(void (*)(void))meth)(self, &PyTuple_GET_ITEM(a, 0), n, NULL);
            CEXT_LEAVE(ts);
            return r;
        }
    }
    return PyObject_Call(fn, a, NULL);
}

/* fn(arg), as call_tuple_direct for one argument; anything else: PyObject_CallOneArg */
CEXT_INLINE PyObject *
call_one_direct(PyObject *fn, PyObject *arg)
{
    if (Py_IS_TYPE(fn, &PyCFunction_Type)) {
        int flags = PyCFunction_GET_FLAGS(fn);
        if (flags == METH_O || flags == (METH_FASTCALL | METH_KEYWORDS) || flags == METH_FASTCALL) {
            PyThreadState *ts = NULL;
            if (CEXT_ENTER(ts))
                return NULL;
            PyObject *self = PyCFunction_GET_SELF(fn), *r;
            PyCFunction meth = PyCFunction_GET_FUNCTION(fn);
            if (flags == METH_O)
                r = meth(self, arg);
            else if (flags == METH_FASTCALL)
                r = ((_PyCFunctionFast)(void (*)(void))meth)(self, &arg, 1);
            else
                r = ((_PyCFunctionFastWithKeywords)(void (*)(void))meth)(self, &arg, 1, NULL);
            CEXT_LEAVE(ts);
            return r;
        }
    }
    return PyObject_CallOneArg(fn, arg);
}

/* bool(v) as cext_is_true, with an exact list's, tuple's or dict's length read in place
 * (list_length, tuplelength, dict_length: their truth); anything else: PyObject_IsTrue.
 * An extension that wants it for all its truth tests defines PyObject_IsTrue as cext_truth. */
static inline int
cext_truth(PyObject *v)
{
    if (v == Py_True)
        return 1;
    if (v == Py_False || v == Py_None)
        return 0;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v))
        return Py_SIZE(v) != 0;
    if (PyDict_CheckExact(v))
        return PyDict_GET_SIZE(v) != 0;
    return cext_is_true(v);
}

#endif
