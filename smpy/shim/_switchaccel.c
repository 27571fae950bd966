/* The compiled switch hooks of the rank contexts (issue 24, item 1).
 *
 * Line-by-line C translations of smpy.shim.isolation.RankContext.switch_in and switch_out,
 * which stay the reference (the pure path, used when this file cannot be compiled or
 * smpy/accel is off). They run at every resume of a rank, twice per message. They read the
 * isolation module's globals (rank_heaps, _private_names, _rebind, _streams, state,
 * _getter_cache) at each call, as the Python code does, and call its Python helpers for what
 * is not the common case (_heaps_in, _refresh_missing, _bind, _filters_mutated,
 * _save_private, the asyncio state's switch_in/switch_out).
 *
 * Built on first use by smpy/shim/isolation.py (smpy/support/cext.py) and put in place by
 * smpy.kernel.accel with the kernel's compiled functions.
 *
 * On CPython 3.11 the stores a switch makes into an existing entry (sys.argv, sys.modules's
 * "__main__" and per-rank modules, warnings.filters, the thread-local state.ctx) replace the
 * entry's value in place and give the dict a fresh version (_cext.h's dict_batch_set); what the
 * hooks read of sys, warnings, sys.modules and the isolation module's globals is remembered with
 * the dicts' versions and moved along by those stores (docs/performance.md, "Switch hooks:
 * stores in place").
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_self_aio, c_self_argv, c_self_heap_cell, c_self_heap_owner, c_self_main, c_self_mine_seen,
    c_self_missing, c_self_modules, c_self_names_seen, c_self_warn_filters;
/* the same, for the rank's other attributes read or set at every switch */
static slot_cache c_self_in_warn[3], c_self_in_stream[2], c_self_out_warn[4], c_self_out_stream[2], c_self_set_main,
    c_self_wo[4];

static PyObject *iso_dict;  /* smpy.shim.isolation.__dict__ */
static PyObject *sys_mod, *warnings_mod;
/* their dicts when they are exact modules (a module's dict is fixed for its life) */
static PyObject *sys_dict, *warnings_dict;
static PyObject *s_heap_cell, *s_value, *s_heap_owner, *s_rank_heaps, *s__heaps_in, *s_argv, *s_modules,
    *s_main, *s___main__, *s__private_names, *s_names_seen, *s_mine_seen, *s__refresh_missing, *s_missing,
    *s__rebind, *s__bind, *s_warn_filters, *s_filters, *s__filters_mutated, *s_showwarning, *s_warn_show,
    *s__showwarnmsg_impl, *s_warn_impl, *s_defaultaction, *s_warn_default, *s__streams, *s_stdout,
    *s_stderr, *s_asyncio_events, *s_aio, *s_switch_in, *s_switch_out, *s_state, *s_ctx,
    *s__getter_cache, *s__save_private, *s_update, *s_get, *s_pop;
static PyObject *i_zero;

/* The stores of a switch into module dicts, sys.modules and the thread-local dict are made in
 * place when the key is there (_cext.h's dict_batch_set: CPython 3.11), every store of one hook
 * sharing one fresh dict version; elsewhere, the usual stores. */
#ifndef CEXT_DICT_INPLACE
typedef struct {
    PyObject *group;
} dict_batch;
static inline void dict_batch_init(dict_batch *b) { b->group = NULL; }
static inline void dict_batch_code(dict_batch *b) { (void)b; }
static inline void dict_batch_end(dict_batch *b) { (void)b; }
#endif

/* a module attribute read and set at every switch: for an exact module, its dict's entry (found
 * by index, the index remembered), as the generic getattr and setattr of a module read and
 * store it (ModuleType, immutable, has no descriptor of these names); otherwise cached_get and
 * cached_set */
typedef struct {
    Py_ssize_t hint;
    slot_cache c;
    int j;  /* its place in the module's snapshot */
} mod_attr;

static mod_attr a_sys_argv = {.j = 0}, a_sys_modules = {.j = 1}, a_sys_stream[2] = {{.j = 2}, {.j = 3}},
                a_warn[4] = {{.j = 0}, {.j = 1}, {.j = 2}, {.j = 3}};

/* What an exact module's dict held under these names at one version (values borrowed: the
 * unchanged dict holds them; NULL: not read). PEP 509: while the dict has that version it is
 * unchanged (a version is given to one dict once: dict_batch_set shares one between dicts, never
 * gives it twice to one). The hooks' own stores in place move it to the new version. */
typedef struct {
    uint64_t version;
    PyObject *vals[4];
} mod_snap;
static mod_snap snap_sys, snap_warn;

static inline mod_snap *
snap_of(PyObject *mod)
{
    return mod == sys_mod ? &snap_sys : &snap_warn;
}

static inline PyObject *
mod_dict(PyObject *mod)
{
    return Py_IS_TYPE(mod, &PyModule_Type) ? (mod == sys_mod ? sys_dict : mod == warnings_mod ? warnings_dict : NULL)
                                           : NULL;
}

/* getattr(mod, name), a new reference */
CEXT_INLINE PyObject *
mod_get(PyObject *mod, mod_attr *a, PyObject *name)
{
#ifdef CEXT_DICT_INPLACE
    PyObject *d = mod_dict(mod);
    if (d != NULL) {
        mod_snap *s = snap_of(mod);
        uint64_t version = DICT_VERSION(d);
        if (s->version == version && s->vals[a->j] != NULL)
            return Py_NewRef(s->vals[a->j]);
        PyObject **r = dict_value_ref(d, name, &a->hint);  /* no code runs */
        if (r != NULL) {
            if (s->version != version) {
                memset(s->vals, 0, sizeof s->vals);
                s->version = version;
            }
            s->vals[a->j] = *r;
            return Py_NewRef(*r);
        }
    }
#endif
    return cached_get(mod, &a->c, name);
}

/* setattr(mod, name, v) */
static inline int
mod_set(dict_batch *b, PyObject *mod, mod_attr *a, PyObject *name, PyObject *v)
{
#ifdef CEXT_DICT_INPLACE
    PyObject *d = mod_dict(mod);
    if (d != NULL) {
        uint64_t pre = DICT_VERSION(d);
        int r = dict_batch_set(b, d, name, &a->hint, v, 0);
        if (r > 0) {
            mod_snap *s = snap_of(mod);
            if (s->version == pre) {  /* this store is the only change */
                s->version = DICT_VERSION(d);
                s->vals[a->j] = v;
            }
        }
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
#endif
    dict_batch_code(b);  /* the store below may release a value: code may run */
    return cached_set(mod, &a->c, name, v);
}

/* the isolation module's globals read at every switch, as the dict held them at one version
 * (borrowed: the unchanged dict holds them); looked up again once it changed */
enum { G_REBIND, G_PRIVATE_NAMES, G_STREAMS, G_STATE, G_GETTER_CACHE, G_RANK_HEAPS, G_N };
static struct {
    uint64_t version;
    PyObject *vals[G_N];
} iso_snap;

/* dict_global(iso_dict, name): borrowed, or NULL with NameError */
CEXT_INLINE PyObject *
iso_global(int j, PyObject *name)
{
#ifdef CEXT_DICT_VERSIONS
    if (PyDict_CheckExact(iso_dict)) {
        uint64_t version = DICT_VERSION(iso_dict);
        if (iso_snap.version == version && iso_snap.vals[j] != NULL)
            return iso_snap.vals[j];
        PyObject *v = dict_global(iso_dict, name);
        if (v != NULL && DICT_VERSION(iso_dict) == version) {  /* (an exact str key: no code ran) */
            if (iso_snap.version != version) {
                memset(&iso_snap, 0, sizeof iso_snap);
                iso_snap.version = version;
            }
            iso_snap.vals[j] = v;
        }
        return v;
    }
#else
    (void)j;
#endif
    return dict_global(iso_dict, name);
}

/* modules.get("asyncio.events") gave None at this version of modules (held) */
static PyObject *ev_dict;
static uint64_t ev_version;

static PyObject *mget(PyObject *modules, PyObject *key);

/* modules.get("asyncio.events"), a new reference */
CEXT_INLINE PyObject *
events_get(PyObject *modules)
{
#ifdef CEXT_DICT_VERSIONS
    if (modules == ev_dict && DICT_VERSION(modules) == ev_version)
        return Py_NewRef(Py_None);
    PyObject *v = mget(modules, s_asyncio_events);
    if (v == Py_None && PyDict_CheckExact(modules)) {  /* a lookup by an exact str: no code ran */
        if (ev_dict != modules)
            Py_XSETREF(ev_dict, Py_NewRef(modules));
        ev_version = DICT_VERSION(modules);
    }
    return v;
#else
    return mget(modules, s_asyncio_events);
#endif
}

/* a store in place into modules moved it from version pre: the memo follows */
static inline void
modules_moved(PyObject *modules, uint64_t pre)
{
#ifdef CEXT_DICT_VERSIONS
    if (modules == ev_dict && ev_version == pre)
        ev_version = DICT_VERSION(modules);
#else
    (void)modules;
    (void)pre;
#endif
}

/* d[key] = v for an exact dict d (dict_set, or PyDict_SetItem when not remembered) */
static inline int
dict_store(dict_batch *b, PyObject *d, PyObject *key, Py_ssize_t *hint, PyObject *v, int remembered)
{
#ifdef CEXT_DICT_INPLACE
    uint64_t pre = DICT_VERSION(d);
    int r = dict_batch_set(b, d, key, hint, v, 0);
    if (r > 0)
        modules_moved(d, pre);
    if (r != 0)
        return r < 0 ? -1 : 0;
#else
    (void)hint;
#endif
    dict_batch_code(b);
    return remembered ? dict_set(d, key, v) : PyDict_SetItem(d, key, v);
}

/* bool(v) without a call for the exact containers the hooks test */
static inline int
truthy(PyObject *v)
{
    if (PyList_CheckExact(v))
        return PyList_GET_SIZE(v) != 0;
    if (PyTuple_CheckExact(v))
        return PyTuple_GET_SIZE(v) != 0;
    if (PyAnySet_CheckExact(v))
        return PySet_GET_SIZE(v) != 0;
    return v == Py_None || v == Py_False ? 0 : v == Py_True ? 1 : PyObject_IsTrue(v);
}

/* len(o) */
static inline Py_ssize_t
size_of(PyObject *o)
{
    if (PyDict_CheckExact(o))
        return PyDict_GET_SIZE(o);
    if (PyAnySet_CheckExact(o))
        return PySet_GET_SIZE(o);
    return PyObject_Size(o);
}

/* seq[i], a new reference */
static inline PyObject *
item_of(PyObject *seq, Py_ssize_t i)
{
    if (PyList_CheckExact(seq) && i < PyList_GET_SIZE(seq))
        return Py_NewRef(PyList_GET_ITEM(seq, i));
    return PySequence_GetItem(seq, i);
}


/* cell.value = v for the per-rank heaps' owner cell (a ctypes.c_int over the C library's
 * rh_owner), at every switch: through the attribute protocol that is a descriptor lookup on
 * the ctypes class and the c_int setter, which stores (int)v into the cell's buffer when v is
 * an int in int's range. That store is made here directly, into the buffer whose address is
 * taken once per cell (the buffer protocol of the c_int); any other cell or value goes
 * through setattr as before. */
static PyObject *c_int_type;     /* ctypes.c_int, imported on first use */
static PyObject *cell_obj;       /* the cell whose buffer cell_ptr is (held) */
static int *cell_ptr;

/* state.ctx = v, state being the isolation module's threading.local: through the attribute
 * protocol, local's setattr finds the running thread's dict of the local (a lookup keyed by
 * the thread), then the generic setattr looks for a data descriptor "ctx" on the class
 * (there is none: a plain class attribute) and stores into that dict. The dict of (state,
 * thread) is taken once, after a set through the protocol, and kept with the thread's id
 * (never reused by another thread) and the class's version tag (any change to the class
 * looks again); while those match, the store goes into it directly. */
static setattrofunc local_setattro;  /* _thread._local's setattr */
static PyObject *st_obj, *st_dict, *s___dict__;
static PyTypeObject *st_type;
static unsigned int st_version;
static uint64_t st_thread;
static Py_ssize_t st_hint;  /* where "ctx" is in it (dict_store) */

static int
set_state_ctx(dict_batch *b, PyObject *state, PyObject *v)
{
    PyThreadState *ts = PyThreadState_Get();
    PyTypeObject *t = Py_TYPE(state);
    if (state == st_obj && t == st_type && ts->id == st_thread && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) &&
        t->tp_version_tag == st_version)
        return dict_store(b, st_dict, s_ctx, &st_hint, v, 0);
    dict_batch_code(b);
    if (PyObject_SetAttr(state, s_ctx, v) < 0)
        return -1;
    if (local_setattro == NULL) {
        PyObject *th = PyImport_ImportModule("_thread");
        PyObject *loc = th == NULL ? NULL : PyObject_GetAttrString(th, "_local");
        Py_XDECREF(th);
        if (loc == NULL)
            return -1;
        if (PyType_Check(loc))
            local_setattro = ((PyTypeObject *)loc)->tp_setattro;
        Py_DECREF(loc);
        if (local_setattro == NULL)
            return 0;
    }
    if (t->tp_setattro != local_setattro)
        return 0;  /* not a threading.local (or one with its own __setattr__): the protocol */
    PyObject *d = _PyType_Lookup(t, s_ctx);  /* borrowed; gives t a valid version tag */
    if (!(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || (d != NULL && Py_TYPE(d)->tp_descr_set != NULL))
        return 0;
    unsigned int version = t->tp_version_tag;
    PyObject *ld = PyObject_GetAttr(state, s___dict__);  /* the running thread's dict */
    if (ld == NULL)
        return -1;
    PyObject *have = PyDict_CheckExact(ld) ? PyDict_GetItemWithError(ld, s_ctx) : NULL;
    if (have != v) {  /* not the dict the set above went into: keep the protocol */
        Py_DECREF(ld);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_XSETREF(st_dict, ld);
    Py_XSETREF(st_obj, Py_NewRef(state));
    Py_XSETREF(st_type, (PyTypeObject *)Py_NewRef((PyObject *)t));
    st_version = version;
    st_thread = ts->id;
    return 0;
}

static int
set_cell_value(PyObject *cell, PyObject *v)
{
    if (cell != cell_obj) {
        Py_CLEAR(cell_obj);
        cell_ptr = NULL;
        if (c_int_type == NULL) {
            PyObject *ct = PyImport_ImportModule("ctypes");
            c_int_type = ct == NULL ? NULL : PyObject_GetAttrString(ct, "c_int");
            Py_XDECREF(ct);
            if (c_int_type == NULL)
                return -1;
        }
        if ((PyObject *)Py_TYPE(cell) == c_int_type) {
            Py_buffer view;
            if (PyObject_GetBuffer(cell, &view, PyBUF_SIMPLE) < 0)
                return -1;
            if (view.len == (Py_ssize_t)sizeof(int) && view.buf != NULL) {
                cell_ptr = (int *)view.buf;  /* the c_int's own storage: valid while it lives */
                cell_obj = Py_NewRef(cell);
            }
            PyBuffer_Release(&view);
        }
    }
    long small;
    if (cell_ptr != NULL && cext_small_int(v, &small) && small >= INT_MIN && small <= INT_MAX) {
        *cell_ptr = (int)small;
        return 0;
    }
    if (cell_ptr != NULL && PyLong_CheckExact(v)) {
        int overflow;
        long x = PyLong_AsLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (!overflow && x >= INT_MIN && x <= INT_MAX) {
            *cell_ptr = (int)x;
            return 0;
        }
    }
    return PyObject_SetAttr(cell, s_value, v);
}

/* modules.get(key) as a new reference (None when absent) */
static PyObject *
mget(PyObject *modules, PyObject *key)
{
    if (PyDict_CheckExact(modules)) {
        PyObject *v = dict_get(modules, key);
        if (v == NULL)
            return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        return Py_NewRef(v);
    }
    PyObject *args[3] = {modules, key, Py_None};
    return PyObject_VectorcallMethod(s_get, args, 3, NULL);
}

/* what the private-modules step of switch_in left: modules[name] is mine[name] for every
 * name of mine, at these versions of the two dicts (pointers only compared: the versions are
 * never reused). While both are unchanged at switch_out, saving the rank's modules back into
 * mine changes nothing (private_out). */
static int in_ok;
static PyObject *in_mine, *in_modules;
static uint64_t in_mine_version, in_modules_version;

/* what switch_in left of the warnings state: the warnings module's dict at this version
 * holds, as filters, showwarning, _showwarnmsg_impl and defaultaction, these four objects,
 * which were then the rank's own (warn_filters, warn_show, warn_impl, warn_default: switch_in
 * sets each that is not already the rank's). While the dict keeps that version and the rank's
 * four are still these objects, switch_out's saving of the four into the rank would store
 * each where it is, and is skipped (warnings_out). Pointers only compared: the objects are
 * held by the dict, unchanged since. */
static int wo_ok;
static PyObject *wo_vals[4];
static uint64_t wo_version;

/* where the rank's modules were found in sys.modules last, by their place in the rank's dict:
 * the index, the rank's key and modules' own key object (an equal str: passed instead, it is
 * found by identity), both held */
#define MOD_HINTS 16
typedef struct {
    Py_ssize_t ix;
    PyObject *key, *ekey;
} key_hint;
static key_hint mod_hints[MOD_HINTS];

/* PyDict_Next(d, pos, k, v) for an exact dict; a combined table of str keys read directly (the
 * same items in the same order: pos is the entry's index in both) */
static inline int
dict_next(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v)
{
#ifdef CEXT_DICT_INPLACE
    PyDictObject *mp = (PyDictObject *)d;
    cext_dict_keys *keys = (cext_dict_keys *)mp->ma_keys;
    if (dict_inplace_ok == 1 && mp->ma_values == NULL && keys->dk_kind == 1) {
        cext_ukey_entry *ep = dk_uentries(keys);
        Py_ssize_t i = *pos, n = keys->dk_nentries;
        if (i < 0)
            return 0;
        while (i < n && ep[i].me_value == NULL)
            i++;
        if (i >= n)
            return 0;
        *pos = i + 1;
        *k = ep[i].me_key;
        *v = ep[i].me_value;
        return 1;
    }
#endif
    return PyDict_Next(d, pos, k, v);
}

/* the private-modules step of switch_in; -1 on error. The stores into modules are one group of
 * the batch with the store of __main__ made before (no read of modules between them). */
static int
private_in(dict_batch *b, PyObject *self, PyObject *modules, PyObject *names)
{
    in_ok = 0;
    PyObject *mine = cached_get(self, &c_self_modules, s_modules);
    if (mine == NULL)
        return -1;
    int rc = -1;
    PyObject *seen = NULL, *mseen = NULL, *missing = NULL, *rebind = NULL;
    Py_ssize_t nn = size_of(names), nm = size_of(mine);
    if (nn < 0 || nm < 0)
        goto out;
    seen = cached_get(self, &c_self_names_seen, s_names_seen);
    mseen = seen == NULL ? NULL : cached_get(self, &c_self_mine_seen, s_mine_seen);
    if (mseen == NULL)
        goto out;
    Py_ssize_t a = PyLong_AsSsize_t(seen), bb = PyLong_AsSsize_t(mseen);
    if ((a == -1 || bb == -1) && PyErr_Occurred())
        goto out;
    if (a != nn || bb != nm) {
        PyObject *r = call_method0(self, s__refresh_missing);
        dict_batch_code(b);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    }
    /* modules.update(mine): for two exact dicts, modules[name] = module for each item in
     * order, as dict.update stores them (in place, or through dict_set, which keeps modules'
     * other remembered entries); the replaced modules are held by the batch (in place) or
     * until the versions are taken */
    if (PyDict_CheckExact(modules) && PyDict_CheckExact(mine)) {
        Py_ssize_t pos = 0, n = PyDict_GET_SIZE(mine), nh = 0, i = 0;
        PyObject *k, *v, *held[16];
        int bad = 0;
        while (!bad && dict_next(mine, &pos, &k, &v)) {
            Py_INCREF(k);
            Py_INCREF(v);
#ifdef CEXT_DICT_INPLACE
            key_hint *h = i < MOD_HINTS ? &mod_hints[i] : NULL;
            PyObject *kk = h != NULL && h->key == k ? h->ekey : k;
            Py_ssize_t hix = h != NULL ? h->ix : 0;
            uint64_t pre = DICT_VERSION(modules);
            int r = dict_batch_set(b, modules, kk, &hix, v, 0);
            if (r > 0) {
                modules_moved(modules, pre);
                if (h != NULL) {  /* (no code ran: the table is the one the store found) */
                    PyObject *ek = dk_uentries((cext_dict_keys *)((PyDictObject *)modules)->ma_keys)[hix].me_key;
                    h->ix = hix;
                    if (h->key != k)
                        Py_XSETREF(h->key, Py_NewRef(k));
                    if (h->ekey != ek)
                        Py_XSETREF(h->ekey, Py_NewRef(ek));
                }
            }
            bad = r < 0;
            if (r == 0)
#endif
            {
                dict_batch_code(b);
                if (nh < 16) {
                    PyObject *old = dict_get(modules, k);
                    bad = old == NULL && PyErr_Occurred();
                    held[nh++] = Py_XNewRef(old);
                }
                bad = bad || dict_set(modules, k, v) < 0;
            }
            i++;
            Py_DECREF(v);
            Py_DECREF(k);
            if (!bad && PyDict_GET_SIZE(mine) != n) {
                PyErr_SetString(PyExc_RuntimeError, "dict mutated during update");
                bad = 1;
            }
        }
#ifdef CEXT_DICT_VERSIONS
        if (!bad && n <= 16) {  /* every module of mine is now modules' (see private_out) */
            in_ok = 1;
            in_mine = mine;
            in_mine_version = DICT_VERSION(mine);
            in_modules = modules;
            in_modules_version = DICT_VERSION(modules);
        }
#endif
        for (Py_ssize_t j = 0; j < nh; j++)
            Py_XDECREF(held[j]);
        if (bad)
            goto out;
    } else {
        dict_batch_code(b);
        PyObject *r = call_method1(modules, s_update, mine);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    }
    b->group = NULL;  /* the group of stores into modules ends */
    /* for name in self.missing: modules.pop(name, None) */
    missing = cached_get(self, &c_self_missing, s_missing);
    if (missing == NULL)
        goto out;
    seq_iter it;
    PyObject *name;
    if (seq_iter_init(&it, missing) < 0)
        goto out;
    while ((name = seq_iter_next(&it)) != NULL) {
        int bad;
        if (PyDict_CheckExact(modules)) {
            bad = PyDict_DelItem(modules, name) < 0;
            if (bad && PyErr_ExceptionMatches(PyExc_KeyError)) {
                PyErr_Clear();
                bad = 0;
            }
        } else {
            PyObject *pargs[3] = {modules, name, Py_None};
            PyObject *x = PyObject_VectorcallMethod(s_pop, pargs, 3, NULL);
            bad = x == NULL;
            Py_XDECREF(x);
        }
        Py_DECREF(name);
        dict_batch_code(b);  /* a module released */
        if (bad) {
            seq_iter_done(&it);
            goto out;
        }
    }
    seq_iter_done(&it);
    if (PyErr_Occurred())
        goto out;
    /* for name, parent, attr in _rebind: _bind(modules.get(parent), attr, mine.get(name)) */
    rebind = iso_global(G_REBIND, s__rebind);
    if (rebind == NULL)
        goto out;
    Py_INCREF(rebind);
    if (seq_iter_init(&it, rebind) < 0)
        goto out;
    PyObject *entry;
    while ((entry = seq_iter_next(&it)) != NULL) {
        PyObject *t = PySequence_Tuple(entry);
        Py_DECREF(entry);
        if (t == NULL || PyTuple_GET_SIZE(t) != 3) {
            if (t != NULL)
                PyErr_SetString(PyExc_ValueError, "_rebind entries are (name, parent, attr)");
            Py_XDECREF(t);
            seq_iter_done(&it);
            goto out;
        }
        PyObject *parent = mget(modules, PyTuple_GET_ITEM(t, 1));
        PyObject *mod = parent == NULL ? NULL : mget(mine, PyTuple_GET_ITEM(t, 0));
        PyObject *bind = mod == NULL ? NULL : dict_global(iso_dict, s__bind);
        PyObject *x = NULL;
        if (bind != NULL) {
            PyObject *bargs[3] = {parent, PyTuple_GET_ITEM(t, 2), mod};
            x = PyObject_Vectorcall(bind, bargs, 3, NULL);
        }
        Py_XDECREF(mod);
        Py_XDECREF(parent);
        Py_DECREF(t);
        dict_batch_code(b);
        if (x == NULL) {
            seq_iter_done(&it);
            goto out;
        }
        Py_DECREF(x);
    }
    seq_iter_done(&it);
    if (!PyErr_Occurred())
        rc = 0;
out:
    Py_XDECREF(rebind);
    Py_XDECREF(missing);
    Py_XDECREF(mseen);
    Py_XDECREF(seen);
    Py_DECREF(mine);
    return rc;
}

/* current == mine for two exact lists of the same items (each the same object: no code runs,
 * as list comparison finds them equal by identity): 1 equal, 0 not (sizes differ), -1 not
 * known this way */
static int
same_items(PyObject *current, PyObject *mine)
{
    if (!PyList_CheckExact(current) || !PyList_CheckExact(mine))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(current);
    if (n != PyList_GET_SIZE(mine))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(current, i) != PyList_GET_ITEM(mine, i))
            return -1;
    return 1;
}

static int
warnings_in(dict_batch *b, PyObject *self, PyObject **vals)
{
    PyObject *mine = cached_get(self, &c_self_warn_filters, s_warn_filters);
    if (mine == NULL)
        return -1;
    PyObject *current = mod_get(warnings_mod, &a_warn[0], s_filters);
    if (current == NULL) {
        Py_DECREF(mine);
        return -1;
    }
    int rc = 0;
    if (current != mine) {
        rc = mod_set(b, warnings_mod, &a_warn[0], s_filters, mine);
        if (rc == 0) {
            int eq = same_items(current, mine);
            if (eq < 0) {
                eq = PyObject_RichCompareBool(current, mine, Py_EQ);
                dict_batch_code(b);
            }
            if (eq < 0)
                rc = -1;
            else if (!eq) {
                PyObject *fn = dict_global(iso_dict, s__filters_mutated);
                PyObject *x = fn == NULL ? NULL : PyObject_CallNoArgs(fn);
                dict_batch_code(b);
                rc = x == NULL ? -1 : 0;
                Py_XDECREF(x);
            }
        }
    }
    Py_DECREF(current);
    vals[0] = mine;  /* borrowed, compared only (held by the rank's slot and the module) */
    Py_DECREF(mine);
    if (rc < 0)
        return -1;
    PyObject *pairs[3][2] = {{s_showwarning, s_warn_show}, {s__showwarnmsg_impl, s_warn_impl},
                             {s_defaultaction, s_warn_default}};
    for (int i = 0; i < 3; i++) {
        PyObject *v = cached_get(self, &c_self_in_warn[i], pairs[i][1]);
        if (v == NULL)
            return -1;
        /* if getattr(w, name) is not v: setattr(w, name, v) */
        PyObject *cur = mod_get(warnings_mod, &a_warn[i + 1], pairs[i][0]);
        rc = cur == NULL ? -1 : cur == v ? 0 : mod_set(b, warnings_mod, &a_warn[i + 1], pairs[i][0], v);
        Py_XDECREF(cur);
        vals[i + 1] = v;
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* out = self.stdout or streams[0]; if sys.stdout is not out: sys.stdout = out (and stderr) */
static int
streams_in(dict_batch *b, PyObject *self, PyObject *streams)
{
    PyObject *names[2] = {s_stdout, s_stderr};
    for (int i = 0; i < 2; i++) {
        PyObject *v = cached_get(self, &c_self_in_stream[i], names[i]);
        if (v == NULL)
            return -1;
        int t = 0;
        if (v != Py_None) {
            t = truthy(v);
            dict_batch_code(b);  /* its __bool__ or __len__ may have run */
        }
        if (t < 0) {
            Py_DECREF(v);
            return -1;
        }
        if (!t) {
            Py_DECREF(v);
            v = item_of(streams, i);
            if (v == NULL)
                return -1;
        }
        PyObject *cur = mod_get(sys_mod, &a_sys_stream[i], names[i]);
        int rc = cur == NULL ? -1 : cur == v ? 0 : mod_set(b, sys_mod, &a_sys_stream[i], names[i], v);
        Py_XDECREF(cur);
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static Py_ssize_t main_hint;  /* where "__main__" is in sys.modules */

static PyObject *
switch_in(PyObject *self, PyObject *unused)
{
    dict_batch b;
    dict_batch_init(&b);
    PyObject *modules = NULL, *x;
    /* cell = self.heap_cell: the per-rank heaps' owner */
    PyObject *cell = cached_get(self, &c_self_heap_cell, s_heap_cell);
    if (cell == NULL)
        return NULL;
    if (cell != Py_None) {
        PyObject *owner = cached_get(self, &c_self_heap_owner, s_heap_owner);
        int rc = owner == NULL ? -1 : set_cell_value(cell, owner);
        Py_XDECREF(owner);
        Py_DECREF(cell);
        if (rc < 0)
            return NULL;
    } else {
        Py_DECREF(cell);
        PyObject *rh = iso_global(G_RANK_HEAPS, s_rank_heaps);
        if (rh == NULL)
            return NULL;
        if (rh != Py_None) {
            x = call_method0(self, s__heaps_in);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
    }
    /* sys.argv = self.argv; modules = sys.modules; modules["__main__"] = self.main */
    PyObject *argv = cached_get(self, &c_self_argv, s_argv);
    if (argv == NULL || mod_set(&b, sys_mod, &a_sys_argv, s_argv, argv) < 0) {
        Py_XDECREF(argv);
        goto fail;
    }
    Py_DECREF(argv);
    modules = mod_get(sys_mod, &a_sys_modules, s_modules);
    if (modules == NULL)
        goto fail;
    PyObject *main = cached_get(self, &c_self_main, s_main);
    int rc = -1;
    if (main != NULL) {
        if (PyDict_CheckExact(modules)) {
            b.group = modules;  /* with the per-rank modules' stores (private_in) */
            rc = dict_store(&b, modules, s___main__, &main_hint, main, 1);
        } else {
            rc = PyObject_SetItem(modules, s___main__, main);
            dict_batch_code(&b);
        }
    }
    Py_XDECREF(main);
    if (rc < 0)
        goto fail;
    PyObject *names = iso_global(G_PRIVATE_NAMES, s__private_names);
    if (names == NULL)
        goto fail;
    int t = truthy(names);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(names);
        rc = private_in(&b, self, modules, names);
        Py_DECREF(names);
        if (rc < 0)
            goto fail;
    }
    b.group = NULL;
    wo_ok = 0;
    PyObject *wvals[4];
    if (warnings_in(&b, self, wvals) < 0)
        goto fail;
#ifdef CEXT_DICT_VERSIONS
    PyObject *wdict = PyModule_Check(warnings_mod) ? PyModule_GetDict(warnings_mod) : NULL;
    uint64_t wversion = wdict != NULL && PyDict_CheckExact(wdict) ? DICT_VERSION(wdict) : 0;
#endif
    PyObject *streams = iso_global(G_STREAMS, s__streams);
    if (streams == NULL)
        goto fail;
    t = truthy(streams);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(streams);
        rc = streams_in(&b, self, streams);
        Py_DECREF(streams);
        if (rc < 0)
            goto fail;
    }
    /* ev = modules.get("asyncio.events"); if ev is not None: self.aio.switch_in(ev) */
    PyObject *ev = events_get(modules);
    if (ev == NULL)
        goto fail;
    if (ev != Py_None) {
        PyObject *aio = cached_get(self, &c_self_aio, s_aio);
        x = aio == NULL ? NULL : call_method1(aio, s_switch_in, ev);
        dict_batch_code(&b);
        Py_XDECREF(aio);
        if (x == NULL) {
            Py_DECREF(ev);
            goto fail;
        }
        Py_DECREF(x);
    }
    Py_DECREF(ev);
    /* state.ctx = self */
    PyObject *state = iso_global(G_STATE, s_state);
    if (state == NULL || set_state_ctx(&b, state, self) < 0)
        goto fail;
#ifdef CEXT_DICT_VERSIONS
    /* the four values warnings_in left, if nothing changed the warnings dict since */
    if (wdict != NULL && PyDict_CheckExact(wdict) && DICT_VERSION(wdict) == wversion) {
        memcpy(wo_vals, wvals, sizeof wo_vals);
        wo_version = wversion;
        wo_ok = 1;
    }
#endif
    Py_DECREF(modules);
    dict_batch_end(&b);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(modules);
    dict_batch_end(&b);
    return NULL;
}

static int
streams_out(dict_batch *b, PyObject *self, PyObject *streams)
{
    PyObject *out = mod_get(sys_mod, &a_sys_stream[0], s_stdout);
    PyObject *err = out == NULL ? NULL : mod_get(sys_mod, &a_sys_stream[1], s_stderr);
    if (err == NULL) {
        Py_XDECREF(out);
        return -1;
    }
    PyObject *cur[2] = {out, err}, *names[2] = {s_stdout, s_stderr};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        PyObject *mine = item_of(streams, i);
        if (mine == NULL) {
            rc = -1;
            break;
        }
        if (cur[i] == mine) {
            rc = cached_set(self, &c_self_out_stream[i], names[i], Py_None);
            dict_batch_code(b);  /* the rank's stream released */
        } else {
            rc = cached_set(self, &c_self_out_stream[i], names[i], cur[i]);
            dict_batch_code(b);
            if (rc == 0)
                rc = mod_set(b, sys_mod, &a_sys_stream[i], names[i], mine);
        }
        Py_DECREF(mine);
    }
    Py_DECREF(out);
    Py_DECREF(err);
    return rc;
}

/* the private-modules step of switch_out: 0 done, -1 error */
static int
private_out(PyObject *self, PyObject *modules, PyObject *names)
{
    PyObject *cached = iso_global(G_GETTER_CACHE, s__getter_cache);
    if (cached == NULL)
        return -1;
    Py_INCREF(cached);
    PyObject *mine = cached_get(self, &c_self_modules, s_modules);
    if (mine == NULL) {
        Py_DECREF(cached);
        return -1;
    }
    int rc = -1;
    PyObject *c0 = item_of(cached, 0), *c1 = NULL, *c2 = NULL;
    if (c0 == NULL)
        goto out;
    Py_ssize_t nn = size_of(names);
    if (nn < 0)
        goto out;
    int same;
    long c0v;
    if (cext_small_int(c0, &c0v))
        same = c0v == nn;
    else {
        PyObject *nobj = PyLong_FromSsize_t(nn);
        same = nobj == NULL ? -1 : PyObject_RichCompareBool(c0, nobj, Py_EQ);
        Py_XDECREF(nobj);
    }
    if (same < 0)
        goto out;
#ifdef CEXT_DICT_VERSIONS
    /* neither dict changed since switch_in installed mine, nor the per-rank names (their
       cache is current): every name of mine maps to mine's module, every other per-rank
       name is absent (switch_in removed it, else modules changed), so the saving below
       would store each module where it is */
    if (same && in_ok && mine == in_mine && modules == in_modules && DICT_VERSION(mine) == in_mine_version &&
        DICT_VERSION(modules) == in_modules_version) {
        rc = 0;
        goto out;
    }
#endif
    if (same) {
        c1 = PySequence_GetItem(cached, 1);
        /* the common case without the itemgetter's tuple and the zip: every name in
           modules (else the KeyError path below, as in Python), then mine[name] = modules[name]
           in order, skipped where it is that object already (the same dict afterwards);
           cached[2] is itemgetter(*cached[1]), the two set together by _save_private */
        if (c1 != NULL && PyTuple_CheckExact(c1) && PyTuple_GET_SIZE(c1) > 1 &&
            PyDict_CheckExact(modules) && PyDict_CheckExact(mine)) {
            Py_ssize_t n = PyTuple_GET_SIZE(c1), i;
            PyObject *found[16];  /* the first 16 values, held while mine is updated */
            Py_ssize_t nf = 0;
            for (i = 0; i < n; i++) {
                PyObject *v = dict_get(modules, PyTuple_GET_ITEM(c1, i));
                if (v == NULL)
                    break;
                if (i < 16)
                    found[nf++] = Py_NewRef(v);
            }
            int bad = i < n && PyErr_Occurred();
            if (i == n) {
                for (i = 0; i < n && !bad; i++) {
                    PyObject *k = PyTuple_GET_ITEM(c1, i);
                    PyObject *v = i < 16 ? found[i] : dict_get(modules, k);
                    if (v == NULL) {
                        if (!PyErr_Occurred())
                            PyErr_SetObject(PyExc_KeyError, k);
                        bad = 1;
                        break;
                    }
                    /* (a rank's own dict: not remembered, one per rank would crowd out the
                       shared ones) */
                    PyObject *have = PyDict_GetItemWithError(mine, k);
                    if (have != v && ((have == NULL && PyErr_Occurred()) || PyDict_SetItem(mine, k, v) < 0))
                        bad = 1;
                }
            }
            for (Py_ssize_t j = 0; j < nf; j++)
                Py_DECREF(found[j]);
            if (bad)
                goto out;
            if (i == n) {
                rc = 0;
                goto out;
            }
        }
        Py_ssize_t n1 = c1 == NULL ? -1 : PyObject_Size(c1);
        if (n1 < 0)
            goto out;
        if (n1 > 1) {
            /* try: self.modules.update(zip(cached[1], cached[2](modules))); return
               except KeyError: pass */
            c2 = PySequence_GetItem(cached, 2);
            PyObject *found = c2 == NULL ? NULL : PyObject_CallOneArg(c2, modules);
            if (found == NULL) {
                if (c2 == NULL || !PyErr_ExceptionMatches(PyExc_KeyError))
                    goto out;
                PyErr_Clear();
            } else {
                PyObject *z = PyObject_CallFunctionObjArgs((PyObject *)&PyZip_Type, c1, found, NULL);
                Py_DECREF(found);
                PyObject *x = z == NULL ? NULL : call_method1(mine, s_update, z);
                Py_XDECREF(z);
                if (x != NULL) {
                    Py_DECREF(x);
                    rc = 0;
                    goto out;
                }
                if (!PyErr_ExceptionMatches(PyExc_KeyError))
                    goto out;
                PyErr_Clear();
            }
        }
    }
    /* _save_private(modules, self.modules) */
    PyObject *fn = dict_global(iso_dict, s__save_private);
    if (fn != NULL) {
        PyObject *sargs[2] = {modules, mine};
        PyObject *x = PyObject_Vectorcall(fn, sargs, 2, NULL);
        if (x != NULL) {
            Py_DECREF(x);
            rc = 0;
        }
    }
out:
    Py_XDECREF(c2);
    Py_XDECREF(c1);
    Py_XDECREF(c0);
    Py_DECREF(mine);
    Py_DECREF(cached);
    return rc;
}

static PyObject *
switch_out(PyObject *self, PyObject *unused)
{
    dict_batch b;
    dict_batch_init(&b);
    PyObject *x;
    /* state.ctx = None */
    PyObject *state = iso_global(G_STATE, s_state);
    if (state == NULL || set_state_ctx(&b, state, Py_None) < 0) {
        dict_batch_end(&b);
        return NULL;
    }
    PyObject *modules = mod_get(sys_mod, &a_sys_modules, s_modules);
    if (modules == NULL) {
        dict_batch_end(&b);
        return NULL;
    }
    PyObject *ev = events_get(modules);
    if (ev == NULL)
        goto fail;
    if (ev != Py_None) {
        PyObject *aio = cached_get(self, &c_self_aio, s_aio);
        x = aio == NULL ? NULL : call_method1(aio, s_switch_out, ev);
        Py_XDECREF(aio);
        if (x == NULL) {
            Py_DECREF(ev);
            goto fail;
        }
        Py_DECREF(x);
    }
    Py_DECREF(ev);
    PyObject *cell = cached_get(self, &c_self_heap_cell, s_heap_cell);
    if (cell == NULL)
        goto fail;
    if (cell != Py_None) {
        int rc = set_cell_value(cell, i_zero);
        Py_DECREF(cell);
        if (rc < 0)
            goto fail;
    } else {
        Py_DECREF(cell);
        PyObject *rh = iso_global(G_RANK_HEAPS, s_rank_heaps);
        if (rh == NULL)
            goto fail;
        if (rh != Py_None) {
            Py_INCREF(rh);
            x = call_method0(rh, s_switch_out);
            Py_DECREF(rh);
            if (x == NULL)
                goto fail;
            Py_DECREF(x);
        }
    }
    dict_batch_code(&b);  /* (the stores below are into the rank, or rare) */
    /* the rank's warnings state (unless it is in place already: see wo_ok) */
    PyObject *pairs[4][2] = {{s_warn_filters, s_filters}, {s_warn_show, s_showwarning},
                             {s_warn_impl, s__showwarnmsg_impl}, {s_warn_default, s_defaultaction}};
    int in_place = 0;
#ifdef CEXT_DICT_VERSIONS
    if (wo_ok) {
        PyObject *wd = PyModule_Check(warnings_mod) ? PyModule_GetDict(warnings_mod) : NULL;
        in_place = wd != NULL && PyDict_CheckExact(wd) && DICT_VERSION(wd) == wo_version;
        for (int i = 0; i < 4 && in_place; i++) {
            PyObject *v = cached_get(self, &c_self_wo[i], pairs[i][0]);
            if (v == NULL)
                goto fail;
            in_place = v == wo_vals[i];
            Py_DECREF(v);
        }
        wo_ok = 0;
    }
#endif
    for (int i = 0; i < 4 && !in_place; i++) {
        PyObject *v = mod_get(warnings_mod, &a_warn[i], pairs[i][1]);
        int rc = v == NULL ? -1 : cached_set(self, &c_self_out_warn[i], pairs[i][0], v);
        Py_XDECREF(v);
        if (rc < 0)
            goto fail;
    }
    PyObject *streams = iso_global(G_STREAMS, s__streams);
    if (streams == NULL)
        goto fail;
    int t = truthy(streams);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(streams);
        int rc = streams_out(&b, self, streams);
        Py_DECREF(streams);
        if (rc < 0)
            goto fail;
    }
    /* self.main = modules.get("__main__", self.main) */
    {
        PyObject *old = cached_get(self, &c_self_main, s_main);
        if (old == NULL)
            goto fail;
        PyObject *m;
        PyObject **ref = NULL;
#ifdef CEXT_DICT_INPLACE
        if (PyDict_CheckExact(modules))
            ref = dict_value_ref(modules, s___main__, &main_hint);  /* no code runs */
#endif
        if (ref != NULL)
            m = Py_NewRef(*ref);
        else if (PyDict_CheckExact(modules)) {
            m = dict_get(modules, s___main__);
            if (m == NULL && PyErr_Occurred()) {
                Py_DECREF(old);
                goto fail;
            }
            m = Py_NewRef(m != NULL ? m : old);
        } else {
            PyObject *gargs[3] = {modules, s___main__, old};
            m = PyObject_VectorcallMethod(s_get, gargs, 3, NULL);
        }
        Py_DECREF(old);
        int rc = m == NULL ? -1 : cached_set(self, &c_self_set_main, s_main, m);
        Py_XDECREF(m);
        if (rc < 0)
            goto fail;
    }
    PyObject *names = iso_global(G_PRIVATE_NAMES, s__private_names);
    if (names == NULL)
        goto fail;
    t = truthy(names);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(names);
        int rc = private_out(self, modules, names);
        Py_DECREF(names);
        if (rc < 0)
            goto fail;
    }
    Py_DECREF(modules);
    dict_batch_end(&b);
    Py_RETURN_NONE;
fail:
    Py_DECREF(modules);
    dict_batch_end(&b);
    return NULL;
}

static PyMethodDef switch_in_def = {"switch_in", switch_in, METH_NOARGS,
                                    "RankContext.switch_in, compiled (smpy.shim._switchaccel)"};
static PyMethodDef switch_out_def = {"switch_out", switch_out, METH_NOARGS,
                                     "RankContext.switch_out, compiled (smpy.shim._switchaccel)"};

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *d, *cls, *sysm, *warn;
    if (!PyArg_ParseTuple(args, "O!O!OO", &PyDict_Type, &d, &PyType_Type, &cls, &sysm, &warn))
        return NULL;
    Py_XSETREF(iso_dict, Py_NewRef(d));
    Py_XSETREF(sys_mod, Py_NewRef(sysm));
    Py_XSETREF(warnings_mod, Py_NewRef(warn));
    PyObject *sd = PyModule_CheckExact(sysm) ? PyModule_GetDict(sysm) : NULL;
    PyObject *wd = PyModule_CheckExact(warn) ? PyModule_GetDict(warn) : NULL;
    Py_XSETREF(sys_dict, sd != NULL && PyDict_CheckExact(sd) ? Py_NewRef(sd) : NULL);
    Py_XSETREF(warnings_dict, wd != NULL && PyDict_CheckExact(wd) ? Py_NewRef(wd) : NULL);
#ifdef CEXT_DICT_INPLACE
    if (dict_inplace_ok < 0)
        dict_inplace_check();
#endif
    wo_ok = 0;
    memset(&snap_sys, 0, sizeof snap_sys);
    memset(&iso_snap, 0, sizeof iso_snap);
    memset(&snap_warn, 0, sizeof snap_warn);
    Py_CLEAR(ev_dict);
    PyObject *in = PyDescr_NewMethod((PyTypeObject *)cls, &switch_in_def);
    PyObject *out = in == NULL ? NULL : PyDescr_NewMethod((PyTypeObject *)cls, &switch_out_def);
    if (out == NULL) {
        Py_XDECREF(in);
        return NULL;
    }
    return Py_BuildValue("(NN)", in, out);
}

/* (the layout check's result, the counter's state) for the tests: 1 yes, 0 no, -1 not done (None
 * where this build has neither) */
static PyObject *
inplace_state(PyObject *module, PyObject *unused)
{
#ifdef CEXT_DICT_INPLACE
#ifdef CEXT_DICT_COUNTER
    if (dict_counter_state < 0)
        dict_counter_find();
    int counter = dict_counter_state;
#else
    int counter = 0;
#endif
    if (dict_inplace_ok < 0)
        dict_inplace_check();
    return Py_BuildValue("(ii)", dict_inplace_ok, counter);
#else
    Py_RETURN_NONE;
#endif
}

/* use_counter(flag): for the tests, fresh versions from the counter (when found) or from the
 * private dict's store; returns the previous setting */
static PyObject *
use_counter(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
#ifdef CEXT_DICT_COUNTER
    int was = dict_counter_state == 1;
    if (dict_counter != NULL)
        dict_counter_state = on;
    return PyBool_FromLong(was);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"use_counter", use_counter, METH_O, "use_counter(flag) -> previous: fresh versions from the counter or not"},
    {"inplace_state", inplace_state, METH_NOARGS, "(entries found in place, the dict version counter found)"},
    {"setup", setup, METH_VARARGS, "setup(isolation.__dict__, RankContext, sys, warnings) -> "
     "(switch_in, switch_out) descriptors"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_switchaccel", .m_doc = "smpy's compiled rank switch hooks",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__switchaccel(void)
{
    INTERN(s_heap_cell, "heap_cell"); INTERN(s_value, "value"); INTERN(s_heap_owner, "heap_owner");
    INTERN(s_rank_heaps, "rank_heaps"); INTERN(s__heaps_in, "_heaps_in"); INTERN(s_argv, "argv");
    INTERN(s_modules, "modules"); INTERN(s_main, "main"); INTERN(s___main__, "__main__");
    INTERN(s__private_names, "_private_names"); INTERN(s_names_seen, "names_seen");
    INTERN(s_mine_seen, "mine_seen"); INTERN(s__refresh_missing, "_refresh_missing");
    INTERN(s_missing, "missing"); INTERN(s__rebind, "_rebind"); INTERN(s__bind, "_bind");
    INTERN(s_warn_filters, "warn_filters"); INTERN(s_filters, "filters");
    INTERN(s__filters_mutated, "_filters_mutated"); INTERN(s_showwarning, "showwarning");
    INTERN(s_warn_show, "warn_show"); INTERN(s__showwarnmsg_impl, "_showwarnmsg_impl");
    INTERN(s_warn_impl, "warn_impl"); INTERN(s_defaultaction, "defaultaction");
    INTERN(s_warn_default, "warn_default"); INTERN(s__streams, "_streams"); INTERN(s_stdout, "stdout");
    INTERN(s_stderr, "stderr"); INTERN(s_asyncio_events, "asyncio.events"); INTERN(s_aio, "aio");
    INTERN(s_switch_in, "switch_in"); INTERN(s_switch_out, "switch_out"); INTERN(s_state, "state");
    INTERN(s_ctx, "ctx"); INTERN(s__getter_cache, "_getter_cache");
    INTERN(s__save_private, "_save_private"); INTERN(s_update, "update");
    INTERN(s_get, "get"); INTERN(s_pop, "pop"); INTERN(s___dict__, "__dict__");
    if ((i_zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    return PyModule_Create(&moddef);
}
