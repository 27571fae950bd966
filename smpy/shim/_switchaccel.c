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
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_self_aio, c_self_argv, c_self_heap_cell, c_self_heap_owner, c_self_main, c_self_mine_seen,
    c_self_missing, c_self_modules, c_self_names_seen, c_self_warn_filters, c_sys_mod_modules,
    c_sys_mod_stderr, c_sys_mod_stdout, c_warnings_mod_filters;
/* the same, for the other attributes read or set at every switch (a module's are its dict's
 * entries: _cext.h's CACHE_DICT) */
static slot_cache c_sys_argv, c_sys_set_out[2], c_sys_in[2], c_warn_set_filters, c_warn_in_get[3],
    c_warn_in_set[3], c_warn_out[4], c_self_in_warn[3], c_self_in_stream[2], c_self_out_warn[4],
    c_self_out_stream[2], c_self_set_main, c_self_wo[4];

static PyObject *iso_dict;  /* smpy.shim.isolation.__dict__ */
static PyObject *sys_mod, *warnings_mod;

static PyObject *s_heap_cell, *s_value, *s_heap_owner, *s_rank_heaps, *s__heaps_in, *s_argv, *s_modules,
    *s_main, *s___main__, *s__private_names, *s_names_seen, *s_mine_seen, *s__refresh_missing, *s_missing,
    *s__rebind, *s__bind, *s_warn_filters, *s_filters, *s__filters_mutated, *s_showwarning, *s_warn_show,
    *s__showwarnmsg_impl, *s_warn_impl, *s_defaultaction, *s_warn_default, *s__streams, *s_stdout,
    *s_stderr, *s_asyncio_events, *s_aio, *s_switch_in, *s_switch_out, *s_state, *s_ctx,
    *s__getter_cache, *s__save_private, *s_update, *s_get, *s_pop;
static PyObject *i_zero;

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

static int
set_state_ctx(PyObject *state, PyObject *v)
{
    PyThreadState *ts = PyThreadState_Get();
    PyTypeObject *t = Py_TYPE(state);
    if (state == st_obj && t == st_type && ts->id == st_thread && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) &&
        t->tp_version_tag == st_version)
        return PyDict_SetItem(st_dict, s_ctx, v);
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

/* if getattr(mod, name) is not value: setattr(mod, name, value) */
static int
set_if_differs(PyObject *mod, slot_cache *get, slot_cache *set, PyObject *name, PyObject *value)
{
    PyObject *cur = cached_get(mod, get, name);
    if (cur == NULL)
        return -1;
    int same = cur == value;
    Py_DECREF(cur);
    return same ? 0 : cached_set(mod, set, name, value);
}

static int
truthy(PyObject *v)
{
    return v == Py_None || v == Py_False ? 0 : v == Py_True ? 1 : PyObject_IsTrue(v);
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

/* the private-modules step of switch_in; -1 on error */
static int
private_in(PyObject *self, PyObject *modules, PyObject *names)
{
    in_ok = 0;
    PyObject *mine = cached_get(self, &c_self_modules, s_modules);
    if (mine == NULL)
        return -1;
    int rc = -1;
    PyObject *seen = NULL, *mseen = NULL, *missing = NULL, *rebind = NULL;
    Py_ssize_t nn = PyObject_Size(names), nm = PyObject_Size(mine);
    if (nn < 0 || nm < 0)
        goto out;
    seen = cached_get(self, &c_self_names_seen, s_names_seen);
    mseen = seen == NULL ? NULL : cached_get(self, &c_self_mine_seen, s_mine_seen);
    if (mseen == NULL)
        goto out;
    Py_ssize_t a = PyLong_AsSsize_t(seen), b = PyLong_AsSsize_t(mseen);
    if ((a == -1 || b == -1) && PyErr_Occurred())
        goto out;
    if (a != nn || b != nm) {
        PyObject *r = call_method0(self, s__refresh_missing);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    }
    /* modules.update(mine): for two exact dicts, modules[name] = module for each item in
     * order, as dict.update stores them (dict_set keeps modules' other remembered entries) */
    if (PyDict_CheckExact(modules) && PyDict_CheckExact(mine)) {
        Py_ssize_t pos = 0, n = PyDict_GET_SIZE(mine), nh = 0;
        PyObject *k, *v, *held[16];  /* the replaced modules, released once the versions are taken */
        int bad = 0;
        while (!bad && PyDict_Next(mine, &pos, &k, &v)) {
            Py_INCREF(k);
            Py_INCREF(v);
            if (nh < 16) {
                PyObject *old = dict_get(modules, k);
                bad = old == NULL && PyErr_Occurred();
                held[nh++] = Py_XNewRef(old);
            }
            bad = bad || dict_set(modules, k, v) < 0;
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
        PyObject *r = call_method1(modules, s_update, mine);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    }
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
        if (bad) {
            seq_iter_done(&it);
            goto out;
        }
    }
    seq_iter_done(&it);
    if (PyErr_Occurred())
        goto out;
    /* for name, parent, attr in _rebind: _bind(modules.get(parent), attr, mine.get(name)) */
    rebind = dict_global(iso_dict, s__rebind);
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

static int
warnings_in(PyObject *self, PyObject **vals)
{
    PyObject *mine = cached_get(self, &c_self_warn_filters, s_warn_filters);
    if (mine == NULL)
        return -1;
    PyObject *current = cached_get(warnings_mod, &c_warnings_mod_filters, s_filters);
    if (current == NULL) {
        Py_DECREF(mine);
        return -1;
    }
    int rc = 0;
    if (current != mine) {
        rc = cached_set(warnings_mod, &c_warn_set_filters, s_filters, mine);
        if (rc == 0) {
            int eq = PyObject_RichCompareBool(current, mine, Py_EQ);
            if (eq < 0)
                rc = -1;
            else if (!eq) {
                PyObject *fn = dict_global(iso_dict, s__filters_mutated);
                PyObject *x = fn == NULL ? NULL : PyObject_CallNoArgs(fn);
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
        rc = set_if_differs(warnings_mod, &c_warn_in_get[i], &c_warn_in_set[i], pairs[i][0], v);
        vals[i + 1] = v;
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* out = self.stdout or streams[0]; if sys.stdout is not out: sys.stdout = out (and stderr) */
static int
streams_in(PyObject *self, PyObject *streams)
{
    PyObject *names[2][2] = {{s_stdout, s_stdout}, {s_stderr, s_stderr}};
    for (int i = 0; i < 2; i++) {
        PyObject *v = cached_get(self, &c_self_in_stream[i], names[i][0]);
        if (v == NULL)
            return -1;
        int t = truthy(v);
        if (t < 0) {
            Py_DECREF(v);
            return -1;
        }
        if (!t) {
            Py_DECREF(v);
            v = PySequence_GetItem(streams, i);
            if (v == NULL)
                return -1;
        }
        int rc = set_if_differs(sys_mod, i ? &c_sys_mod_stderr : &c_sys_mod_stdout, &c_sys_in[i], names[i][1], v);
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static PyObject *
switch_in(PyObject *self, PyObject *unused)
{
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
        PyObject *rh = dict_global(iso_dict, s_rank_heaps);
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
    if (argv == NULL || cached_set(sys_mod, &c_sys_argv, s_argv, argv) < 0) {
        Py_XDECREF(argv);
        return NULL;
    }
    Py_DECREF(argv);
    modules = cached_get(sys_mod, &c_sys_mod_modules, s_modules);
    if (modules == NULL)
        return NULL;
    PyObject *main = cached_get(self, &c_self_main, s_main);
    if (main == NULL || (PyDict_CheckExact(modules) ? dict_set(modules, s___main__, main)
                                                    : PyObject_SetItem(modules, s___main__, main)) < 0) {
        Py_XDECREF(main);
        goto fail;
    }
    Py_DECREF(main);
    PyObject *names = dict_global(iso_dict, s__private_names);
    if (names == NULL)
        goto fail;
    int t = truthy(names);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(names);
        int rc = private_in(self, modules, names);
        Py_DECREF(names);
        if (rc < 0)
            goto fail;
    }
    wo_ok = 0;
    PyObject *wvals[4];
    if (warnings_in(self, wvals) < 0)
        goto fail;
#ifdef CEXT_DICT_VERSIONS
    PyObject *wdict = PyModule_Check(warnings_mod) ? PyModule_GetDict(warnings_mod) : NULL;
    uint64_t wversion = wdict != NULL && PyDict_CheckExact(wdict) ? DICT_VERSION(wdict) : 0;
#endif
    PyObject *streams = dict_global(iso_dict, s__streams);
    if (streams == NULL)
        goto fail;
    t = truthy(streams);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(streams);
        int rc = streams_in(self, streams);
        Py_DECREF(streams);
        if (rc < 0)
            goto fail;
    }
    /* ev = modules.get("asyncio.events"); if ev is not None: self.aio.switch_in(ev) */
    PyObject *ev = mget(modules, s_asyncio_events);
    if (ev == NULL)
        goto fail;
    if (ev != Py_None) {
        PyObject *aio = cached_get(self, &c_self_aio, s_aio);
        x = aio == NULL ? NULL : call_method1(aio, s_switch_in, ev);
        Py_XDECREF(aio);
        if (x == NULL) {
            Py_DECREF(ev);
            goto fail;
        }
        Py_DECREF(x);
    }
    Py_DECREF(ev);
    /* state.ctx = self */
    PyObject *state = dict_global(iso_dict, s_state);
    if (state == NULL || set_state_ctx(state, self) < 0)
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
    Py_RETURN_NONE;
fail:
    Py_XDECREF(modules);
    return NULL;
}

static int
streams_out(PyObject *self, PyObject *streams)
{
    PyObject *out = cached_get(sys_mod, &c_sys_mod_stdout, s_stdout);
    PyObject *err = out == NULL ? NULL : cached_get(sys_mod, &c_sys_mod_stderr, s_stderr);
    if (err == NULL) {
        Py_XDECREF(out);
        return -1;
    }
    PyObject *cur[2] = {out, err}, *names[2] = {s_stdout, s_stderr};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        PyObject *mine = PySequence_GetItem(streams, i);
        if (mine == NULL) {
            rc = -1;
            break;
        }
        if (cur[i] == mine)
            rc = cached_set(self, &c_self_out_stream[i], names[i], Py_None);
        else {
            rc = cached_set(self, &c_self_out_stream[i], names[i], cur[i]);
            if (rc == 0)
                rc = cached_set(sys_mod, &c_sys_set_out[i], names[i], mine);
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
    PyObject *cached = dict_global(iso_dict, s__getter_cache);
    if (cached == NULL)
        return -1;
    Py_INCREF(cached);
    PyObject *mine = cached_get(self, &c_self_modules, s_modules);
    if (mine == NULL) {
        Py_DECREF(cached);
        return -1;
    }
    int rc = -1;
    PyObject *c0 = PySequence_GetItem(cached, 0), *c1 = NULL, *c2 = NULL;
    if (c0 == NULL)
        goto out;
    Py_ssize_t nn = PyObject_Size(names);
    if (nn < 0)
        goto out;
    PyObject *nobj = PyLong_FromSsize_t(nn);
    int same = nobj == NULL ? -1 : PyObject_RichCompareBool(c0, nobj, Py_EQ);
    Py_XDECREF(nobj);
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
    PyObject *x;
    /* state.ctx = None */
    PyObject *state = dict_global(iso_dict, s_state);
    if (state == NULL || set_state_ctx(state, Py_None) < 0)
        return NULL;
    PyObject *modules = cached_get(sys_mod, &c_sys_mod_modules, s_modules);
    if (modules == NULL)
        return NULL;
    PyObject *ev = mget(modules, s_asyncio_events);
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
        PyObject *rh = dict_global(iso_dict, s_rank_heaps);
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
        PyObject *v = cached_get(warnings_mod, &c_warn_out[i], pairs[i][1]);
        int rc = v == NULL ? -1 : cached_set(self, &c_self_out_warn[i], pairs[i][0], v);
        Py_XDECREF(v);
        if (rc < 0)
            goto fail;
    }
    PyObject *streams = dict_global(iso_dict, s__streams);
    if (streams == NULL)
        goto fail;
    int t = truthy(streams);
    if (t < 0)
        goto fail;
    if (t) {
        Py_INCREF(streams);
        int rc = streams_out(self, streams);
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
        if (PyDict_CheckExact(modules)) {
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
    PyObject *names = dict_global(iso_dict, s__private_names);
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
    Py_RETURN_NONE;
fail:
    Py_DECREF(modules);
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
    wo_ok = 0;
    PyObject *in = PyDescr_NewMethod((PyTypeObject *)cls, &switch_in_def);
    PyObject *out = in == NULL ? NULL : PyDescr_NewMethod((PyTypeObject *)cls, &switch_out_def);
    if (out == NULL) {
        Py_XDECREF(in);
        return NULL;
    }
    return Py_BuildValue("(NN)", in, out);
}

static PyMethodDef methods[] = {
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
