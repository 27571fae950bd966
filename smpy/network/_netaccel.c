/* The compiled twin of the network model's per-message path (issue 24, item 1).
 *
 * Line by line translations of
 *   communicate           smpy.network.model.NetworkModel.communicate (the common case: a
 *                         cached route and size, no flow signal, no tracked flows)
 *   _release, _work_done  smpy.network.model.Flow
 *   _start_bandwidth_phase smpy.kernel.sharing.SharedActivity
 *   update                smpy.kernel.sharing.SharingModel
 * The Python methods stay the reference: every case the compiled code does not cover is
 * handed to the Python method before anything is done (communicate), and the rest does the
 * same operations on the same objects in the same order, through the same Python protocols
 * (attribute lookups, method calls, rich comparisons, number protocol), so a run gives the
 * same bytes either way (tests/network/test_netaccel.py). The max-min system is called
 * through its Python API (variable, remove, solve), whatever implements it.
 */
#include "_cext.h"
#undef PyObject_IsTrue
#define PyObject_IsTrue(v) cext_truth(v)  /* exact lists, tuples, dicts by their length */

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_act_rate_factor, c_engine_now, c_f_start_bw, c_m_system, c_model_live,
    c_model_on_flow_end, c_model_system, c_self_engine, c_self_factors, c_self_live, c_self_routes,
    c_self_system, c_v_data, c_v_value;

static PyTypeObject *FlowType, *InfoType;
/* the kernel's bound-method maker (smpy/kernel/_accel.c, bound_new: kept memory), or NULL */
typedef PyObject *(*bound_new_fn)(PyObject *descr, PyObject *obj);
static bound_new_fn bound_new;
static PyObject *model_dict, *py_communicate, *f_zero, *f_minus1, *i_zero;
static Py_ssize_t ac_engine, ac_state, ac_waiters, ac_callbacks, ac_exception, ac_start, ac_finish;
static Py_ssize_t ra_remaining, ra_total, ra_rate, ra_last, ra_done;
static Py_ssize_t sa_model, sa_var, sa_penalty, sa_bound, sa_uses, sa_factor, sa_lat;
static Py_ssize_t fl_route, fl_size, fl_latency;
static Py_ssize_t ri_lat, ri_penalty, ri_bound, ri_uses;
static PyObject *s_routes, *s_factors, *s_on_flow_start, *s_on_flow_end, *s_slots, *s_live, *s_engine,
    *s_now, *s_schedule, *s_start_bw, *s_system, *s_variable, *s_dirty, *s_on_empty, *s_remove, *s_emit,
    *s_pop, *s_release, *s_finish, *s_solve, *s_data, *s_value, *s_rate_factor, *s_set_rate, *s_Flow,
    *s_model, *s_var, *s_state, *s_total, *s_penalty, *s_bound, *s_uses, *s_lat;

/* the Python method with self prepended (every case the compiled one does not cover) */
static PyObject *
python(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8], **all = small;
    if (nargs + nkw + 1 > 8 && (all = PyMem_Malloc((nargs + nkw + 1) * sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    all[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        all[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(fn, all, nargs + 1, kwnames);
    if (all != small)
        PyMem_Free(all);
    return r;
}

/* o > 0.0 (op Py_GT) or o <= 0.0 (Py_LE): a float or an int compared in C as Python compares
   them (an int by its sign, exactly; NaN neither), anything else by the protocol */
static inline int
cmp_zero(PyObject *o, int op)
{
    if (PyFloat_CheckExact(o)) {
        double x = PyFloat_AS_DOUBLE(o);
        return op == Py_GT ? x > 0.0 : x <= 0.0;
    }
    if (PyLong_CheckExact(o)) {
        int sign = _PyLong_Sign(o);
        return op == Py_GT ? sign > 0 : sign <= 0;
    }
    return PyObject_RichCompareBool(o, f_zero, op);
}

/* a * b: two exact floats multiplied in C (float_mul's one IEEE product), anything else by
   the number protocol */
static inline PyObject *
float_mul(PyObject *a, PyObject *b)
{
    if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b))
        return PyFloat_FromDouble(PyFloat_AS_DOUBLE(a) * PyFloat_AS_DOUBLE(b));
    return PyNumber_Multiply(a, b);
}

/* bool(getattr(o, name)) as attr_true, through cext_truth (a signal's list of slots) */
static inline int
attr_truth(PyObject *o, PyObject *name)
{
    PyObject *x = attr_get(o, name);
    if (x == NULL)
        return -1;
    int r = cext_truth(x);
    Py_DECREF(x);
    return r;
}

/* bool(getattr(getattr(o, a), b)): 1, 0, -1 */
static int
attr2_true(PyObject *o, PyObject *a, PyObject *b)
{
    PyObject *x = attr_get(o, a);
    if (x == NULL)
        return -1;
    int r = attr_truth(x, b);
    Py_DECREF(x);
    return r;
}

/* -- NetworkModel.communicate -------------------------------------------------------------- */

/* the flow of Flow.__init__, every field set (tests/kernel/test_flat_inits.py checks them) */
static PyObject *
new_flow(PyObject *model, PyObject *engine, PyObject *route, PyObject *size, PyObject *info,
         PyObject *bwf, PyObject *latf)
{
    PyObject *now = cached_get(engine, &c_engine_now, s_now);
    PyObject *waiters = now == NULL ? NULL : PyList_New(0);
    PyObject *lat = waiters == NULL ? NULL : slot_get(info, ri_lat, s_lat);
    PyObject *latency = lat == NULL ? NULL : float_mul(lat, latf);
    PyObject *f = latency == NULL ? NULL : FlowType->tp_alloc(FlowType, 0);
    if (f != NULL) {
        slot_set(f, ac_engine, engine);
        slot_set(f, ac_state, i_zero);
        slot_set(f, ac_waiters, waiters);
        slot_set(f, ac_callbacks, Py_None);
        slot_set(f, ac_exception, Py_None);
        slot_set(f, ac_start, now);
        slot_set(f, ac_finish, f_minus1);
        slot_set(f, ra_total, size);
        slot_set(f, ra_remaining, size);
        slot_set(f, ra_rate, f_zero);
        slot_set(f, ra_last, now);
        slot_set(f, ra_done, Py_None);
        slot_set(f, sa_model, model);
        slot_set(f, sa_var, Py_None);
        PyObject *v;
        if ((v = slot_get(info, ri_penalty, s_penalty)) == NULL)
            goto fail;
        slot_set(f, sa_penalty, v);
        Py_DECREF(v);
        if ((v = slot_get(info, ri_bound, s_bound)) == NULL)
            goto fail;
        slot_set(f, sa_bound, v);
        Py_DECREF(v);
        if ((v = slot_get(info, ri_uses, s_uses)) == NULL)
            goto fail;
        slot_set(f, sa_uses, v);
        Py_DECREF(v);
        slot_set(f, sa_factor, bwf);
        slot_set(f, sa_lat, Py_None);
        slot_set(f, fl_route, route);
        slot_set(f, fl_size, size);
        slot_set(f, fl_latency, latency);
    }
    goto out;
fail:
    Py_CLEAR(f);
out:
    Py_XDECREF(latency);
    Py_XDECREF(lat);
    Py_XDECREF(waiters);
    Py_XDECREF(now);
    return f;
}

#ifdef CEXT_DICT_VERSIONS
/* The route figures last read from the model's route dict, by the route tuple (the world's
 * cached route: the same object for every message of a pair of hosts), with the dict and its
 * version (PEP 509; see _cext.h): while that dict is unchanged and the tuple the same object,
 * routes[route] is the same entry, found without hashing the tuple of links. The memo holds
 * the tuple, so its address is not reused meanwhile. */
#define ROUTE_MEMOS 1024
typedef struct {
    PyObject *routes; /* compared only */
    uint64_t version;
    PyObject *route, *info; /* held */
} route_memo;
static route_memo route_memos[ROUTE_MEMOS];

/* The size factors last read from the model's factor dict, by the size object (an exact int
 * or float: the same object for every message of a size the caller keeps, a small int), with
 * the dict and its version: while that dict is unchanged, factors[size] is the same entry
 * (an exact int's or float's hash and equality run no code). Held: the size and the pair. */
static struct {
    PyObject *factors; /* compared only */
    uint64_t version;
    PyObject *size, *fl; /* held */
} size_memo;
#endif

/* the cached route figures and size factors of the common case (new references), 1; 0 when
   the Python method must do it (a route or size not seen yet, factors not cached, a flow
   signal or tracked flows, Flow replaced); -1 on error */
static int
common_case(PyObject *self, PyObject *route, PyObject *size, PyObject **info, PyObject **bwf, PyObject **latf)
{
    int r = 0;
    PyObject *routes = NULL, *factors = NULL, *live = NULL;
    *info = NULL;
    if (!PyTuple_CheckExact(route) || dict_global(model_dict, s_Flow) != (PyObject *)FlowType)
        return PyErr_Occurred() ? -1 : 0;
    if ((routes = cached_get(self, &c_self_routes, s_routes)) == NULL || (factors = cached_get(self, &c_self_factors, s_factors)) == NULL ||
        (live = cached_get(self, &c_self_live, s_live)) == NULL) {
        r = -1;
        goto out;
    }
    if (!PyDict_CheckExact(routes) || !PyDict_CheckExact(factors) || live != Py_None)
        goto out;
    int sig = attr2_true(self, s_on_flow_start, s_slots);
    if (sig != 0) {
        r = sig < 0 ? -1 : 0;
        goto out;
    }
    PyObject *inf; /* borrowed: self._routes.get(route) */
#ifdef CEXT_DICT_VERSIONS
    route_memo *m = &route_memos[((uintptr_t)route >> 4) & (ROUTE_MEMOS - 1)];
    if (m->routes == routes && m->version == DICT_VERSION(routes) && m->route == route)
        inf = m->info;
    else if ((inf = PyDict_GetItemWithError(routes, route)) != NULL) {
        Py_INCREF(inf);
        Py_INCREF(route);
        Py_XSETREF(m->info, inf); /* a _RouteInfo and a tuple: their release runs no Python code */
        Py_XSETREF(m->route, route);
        m->routes = routes;
        m->version = DICT_VERSION(routes);
    }
#else
    inf = PyDict_GetItemWithError(routes, route);
#endif
    PyObject *fl = NULL; /* borrowed: self._factors.get(size) */
    if (inf != NULL && Py_TYPE(inf) == InfoType) {
#ifdef CEXT_DICT_VERSIONS
        if (size_memo.size == size && size_memo.factors == factors && size_memo.version == DICT_VERSION(factors))
            fl = size_memo.fl;
        else if ((fl = PyDict_GetItemWithError(factors, size)) != NULL &&
                 (PyLong_CheckExact(size) || PyFloat_CheckExact(size)) && PyTuple_CheckExact(fl) &&
                 PyTuple_GET_SIZE(fl) == 2 && PyFloat_CheckExact(PyTuple_GET_ITEM(fl, 0)) &&
                 PyFloat_CheckExact(PyTuple_GET_ITEM(fl, 1))) {
            Py_INCREF(fl);
            Py_INCREF(size);
            Py_XSETREF(size_memo.fl, fl); /* a tuple of two floats, an int or a float: their release runs no code */
            Py_XSETREF(size_memo.size, size);
            size_memo.factors = factors;
            size_memo.version = DICT_VERSION(factors);
        }
#else
        fl = PyDict_GetItemWithError(factors, size);
#endif
    }
    if (fl == NULL || !PyTuple_CheckExact(fl) || PyTuple_GET_SIZE(fl) != 2) {
        PyErr_Clear();  /* an unhashable route or size: the Python method says what happens */
        goto out;
    }
    *info = Py_NewRef(inf);
    *bwf = Py_NewRef(PyTuple_GET_ITEM(fl, 0));
    *latf = Py_NewRef(PyTuple_GET_ITEM(fl, 1));
    r = 1;
out:
    Py_XDECREF(live);
    Py_XDECREF(factors);
    Py_XDECREF(routes);
    return r;
}

static PyObject *
communicate(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames != NULL || nargs < 2 || nargs > 3)
        return python(py_communicate, self, args, nargs, kwnames);
    PyObject *route = args[0], *size = args[1], *info = NULL, *bwf = NULL, *latf = NULL;
    int ok = common_case(self, route, size, &info, &bwf, &latf);
    if (ok <= 0)
        return ok < 0 ? NULL : python(py_communicate, self, args, nargs, kwnames);
    PyObject *engine = cached_get(self, &c_self_engine, s_engine);
    PyObject *f = engine == NULL ? NULL : new_flow(self, engine, route, size, info, bwf, latf);
    Py_DECREF(info);
    Py_DECREF(bwf);
    Py_DECREF(latf);
    if (f == NULL) {
        Py_XDECREF(engine);
        return NULL;
    }
    /* if f.latency > 0.0: f._lat_event = self.engine.schedule(f.latency, f._start_bandwidth_phase)
       else: f._start_bandwidth_phase() */
    PyObject *latency = SLOT(f, fl_latency), *x = NULL;
    int pos = cmp_zero(latency, Py_GT);
    if (pos > 0) {
        Py_DECREF(engine);
        engine = cached_get(self, &c_self_engine, s_engine);
        PyObject *cb = NULL;
        PyTypeObject *t = Py_TYPE(f);
        slot_cache *c = &c_f_start_bw;
        if (engine == NULL)
            ;
        else if (bound_new != NULL && t == c->type && t->tp_version_tag == c->version &&
                 (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && c->off == CACHE_METHOD &&
                 Py_IS_TYPE(c->getset, &PyMethodDescr_Type))
            cb = bound_new(c->getset, f);  /* f._start_bandwidth_phase, in kept memory */
        else
            cb = cached_get(f, c, s_start_bw);
        if (cb != NULL) {
            PyObject *sargs[3] = {engine, latency, cb};
            x = cmethod_call(s_schedule, sargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET);
            Py_DECREF(cb);
            if (x != NULL)
                slot_set(f, sa_lat, x);
        }
    } else if (pos == 0) {
        x = call_method0(f, s_start_bw);
    }
    Py_XDECREF(engine);
    if (x == NULL) {
        Py_DECREF(f);
        return NULL;
    }
    Py_DECREF(x);
    return f;
}

/* -- SharedActivity._start_bandwidth_phase --------------------------------------------------- */

/* self.last_update = self.engine.now: 0, or -1 with an error */
static int
stamp_now(PyObject *self)
{
    PyObject *engine = slot_get(self, ac_engine, s_engine);
    PyObject *now = engine == NULL ? NULL : cached_get(engine, &c_engine_now, s_now);
    Py_XDECREF(engine);
    if (now == NULL)
        return -1;
    slot_set(self, ra_last, now);
    Py_DECREF(now);
    return 0;
}

static PyObject *
start_bandwidth_phase(PyObject *self, PyObject *unused)
{
    slot_set(self, sa_lat, Py_None);
    PyObject *v = slot_get(self, ac_state, s_state);
    if (v == NULL)
        return NULL;
    int running = int_eq(v, 0);
    Py_DECREF(v);
    if (running <= 0)
        return running < 0 ? NULL : Py_NewRef(Py_None);
    if ((v = slot_get(self, ra_total, s_total)) == NULL)
        return NULL;
    int empty = cmp_zero(v, Py_LE);
    Py_DECREF(v);
    if (empty != 0)
        return empty < 0 ? NULL : call_method0(self, s_on_empty);
    if (stamp_now(self) < 0)
        return NULL;
    PyObject *m = slot_get(self, sa_model, s_model);
    PyObject *system = m == NULL ? NULL : cached_get(m, &c_m_system, s_system);
    PyObject *pen = system == NULL ? NULL : slot_get(self, sa_penalty, s_penalty);
    PyObject *bound = pen == NULL ? NULL : slot_get(self, sa_bound, s_bound);
    PyObject *uses = bound == NULL ? NULL : slot_get(self, sa_uses, s_uses);
    PyObject *var = NULL;
    if (uses != NULL) {
        PyObject *vargs[6] = {system, pen, bound, uses, self, Py_True};
        var = cmethod_call(s_variable, vargs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    }
    Py_XDECREF(uses);
    Py_XDECREF(bound);
    Py_XDECREF(pen);
    Py_XDECREF(system);
    PyObject *r = NULL;
    if (var != NULL) {
        slot_set(self, sa_var, var);
        Py_DECREF(var);
        if (attr_set(m, s_dirty, Py_True) == 0)
            r = Py_NewRef(Py_None);
    }
    Py_XDECREF(m);
    return r;
}

/* -- Flow._release, Flow._work_done ------------------------------------------------------------ */
static PyObject *
flow_release(PyObject *self, PyObject *unused)
{
    PyObject *model = slot_get(self, sa_model, s_model);
    if (model == NULL)
        return NULL;
    PyObject *r = NULL, *x;
    PyObject *live = cached_get(model, &c_model_live, s_live);
    if (live == NULL)
        goto out;
    if (live != Py_None) {  /* model._live.pop(self, None) */
        PyObject *pargs[3] = {live, self, Py_None};
        x = method_call(s_pop, pargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET);
        Py_DECREF(live);
        if (x == NULL)
            goto out;
        Py_DECREF(x);
    } else {
        Py_DECREF(live);
    }
    PyObject *var = slot_get(self, sa_var, s_var);
    if (var == NULL)
        goto out;
    if (var != Py_None) {
        slot_set(self, sa_var, Py_None);
        PyObject *system = cached_get(model, &c_model_system, s_system);
        x = system == NULL ? NULL : direct_method1(system, s_remove, var);
        Py_XDECREF(system);
        int dirty = x == NULL ? -1 : PyObject_IsTrue(x);
        Py_XDECREF(x);
        if (dirty > 0 && attr_set(model, s_dirty, Py_True) < 0)
            dirty = -1;
        if (dirty < 0) {
            Py_DECREF(var);
            goto out;
        }
    }
    Py_DECREF(var);
    PyObject *sig = cached_get(model, &c_model_on_flow_end, s_on_flow_end);
    int emit = sig == NULL ? -1 : attr_truth(sig, s_slots);
    if (emit > 0) {
        x = call_method1(sig, s_emit, self);
        emit = x == NULL ? -1 : 0;
        Py_XDECREF(x);
    }
    Py_XDECREF(sig);
    if (emit == 0)
        r = Py_NewRef(Py_None);
out:
    Py_DECREF(model);
    return r;
}

static PyObject *
flow_work_done(PyObject *self, PyObject *unused)
{
    slot_set(self, ra_done, Py_None);
    slot_set(self, ra_remaining, f_zero);
    if (stamp_now(self) < 0)
        return NULL;
    PyObject *x = direct_method0(self, s_release);
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    return direct_method0(self, s_finish);
}

/* -- SharingModel.update ------------------------------------------------------------------ */
static PyObject *
model_update(PyObject *self, PyObject *unused)
{
    if (attr_set(self, s_dirty, Py_False) < 0)
        return NULL;
    PyObject *system = cached_get(self, &c_self_system, s_system);
    PyObject *changed = system == NULL ? NULL : direct_method0(system, s_solve);
    Py_XDECREF(system);
    seq_iter it;
    int bad = changed == NULL ? -1 : seq_iter_init(&it, changed);
    Py_XDECREF(changed);
    if (bad < 0)
        return NULL;
    PyObject *v;
    int err = 0;
    while (!err && (v = seq_iter_next(&it)) != NULL) {
        PyObject *act = cached_get(v, &c_v_data, s_data);
        if (act == NULL)
            err = 1;
        else if (act != Py_None) {  /* act._set_rate(v.value * act.rate_factor) */
            PyObject *val = cached_get(v, &c_v_value, s_value);
            PyObject *fac = val == NULL ? NULL : cached_get(act, &c_act_rate_factor, s_rate_factor);
            PyObject *rate = fac == NULL ? NULL : float_mul(val, fac);
            PyObject *x = rate == NULL ? NULL : direct_method1(act, s_set_rate, rate);
            err = x == NULL;
            Py_XDECREF(x);
            Py_XDECREF(rate);
            Py_XDECREF(fac);
            Py_XDECREF(val);
        }
        Py_XDECREF(act);
        Py_DECREF(v);
    }
    seq_iter_done(&it);
    if (err || PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* -- setup ------------------------------------------------------------------------------------ */
static PyMethodDef communicate_def = {"communicate", (PyCFunction)(void (*)(void))communicate,
                                      METH_FASTCALL | METH_KEYWORDS,
                                      "NetworkModel.communicate, compiled (smpy.network._netaccel)"};
static PyMethodDef start_bw_def = {"_start_bandwidth_phase", (PyCFunction)start_bandwidth_phase, METH_NOARGS,
                                   "SharedActivity._start_bandwidth_phase, compiled (smpy.network._netaccel)"};
static PyMethodDef release_def = {"_release", (PyCFunction)flow_release, METH_NOARGS,
                                  "Flow._release, compiled (smpy.network._netaccel)"};
static PyMethodDef work_done_def = {"_work_done", (PyCFunction)flow_work_done, METH_NOARGS,
                                    "Flow._work_done, compiled (smpy.network._netaccel)"};
static PyMethodDef update_def = {"update", (PyCFunction)model_update, METH_NOARGS,
                                 "SharingModel.update, compiled (smpy.network._netaccel)"};

static int
intern_all(void)
{
#define I(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return -1
    I(s_routes, "_routes"); I(s_factors, "_factors"); I(s_on_flow_start, "on_flow_start");
    I(s_on_flow_end, "on_flow_end"); I(s_slots, "_slots"); I(s_live, "_live"); I(s_engine, "engine");
    I(s_now, "now"); I(s_schedule, "schedule"); I(s_start_bw, "_start_bandwidth_phase"); I(s_system, "system");
    I(s_variable, "variable"); I(s_dirty, "dirty"); I(s_on_empty, "_on_empty"); I(s_remove, "remove");
    I(s_emit, "emit"); I(s_pop, "pop"); I(s_release, "_release"); I(s_finish, "_finish"); I(s_solve, "solve");
    I(s_data, "data"); I(s_value, "value"); I(s_lat, "lat"); I(s_rate_factor, "rate_factor"); I(s_set_rate, "_set_rate");
    I(s_Flow, "Flow"); I(s_model, "model"); I(s_var, "var"); I(s_state, "state"); I(s_total, "total");
    I(s_penalty, "penalty"); I(s_bound, "bound"); I(s_uses, "uses");
#undef I
    return 0;
}

/* setup(model_globals, Flow, _RouteInfo, SharedActivity, SharingModel, NetworkModel,
         python communicate[, the kernel's bound_api() capsule]) -> {name: compiled method} */
static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *globs, *py, *bound = Py_None;
    PyTypeObject *flow, *info, *shared, *sharing, *net;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O|O", &PyDict_Type, &globs, &PyType_Type, &flow, &PyType_Type, &info,
                          &PyType_Type, &shared, &PyType_Type, &sharing, &PyType_Type, &net, &py, &bound))
        return NULL;
    bound_new = NULL;
    if (bound != Py_None && (bound_new = (bound_new_fn)PyCapsule_GetPointer(bound, "smpy.kernel._accel.bound_new")) == NULL)
        return NULL;
    if (s_routes == NULL && intern_all() < 0)
        return NULL;
    Py_XSETREF(model_dict, Py_NewRef(globs));
    Py_XSETREF(FlowType, (PyTypeObject *)Py_NewRef(flow));
    Py_XSETREF(InfoType, (PyTypeObject *)Py_NewRef(info));
    Py_XSETREF(py_communicate, Py_NewRef(py));
    if (f_zero == NULL && ((f_zero = PyFloat_FromDouble(0.0)) == NULL || (f_minus1 = PyFloat_FromDouble(-1.0)) == NULL ||
                           (i_zero = PyLong_FromLong(0)) == NULL))
        return NULL;
#define OFF(var, tp, name) if ((var = slot_offset(tp, name)) < 0) return NULL
    OFF(ac_engine, flow, "engine"); OFF(ac_state, flow, "state"); OFF(ac_waiters, flow, "waiters");
    OFF(ac_callbacks, flow, "callbacks"); OFF(ac_exception, flow, "exception"); OFF(ac_start, flow, "start_time");
    OFF(ac_finish, flow, "finish_time"); OFF(ra_remaining, flow, "remaining"); OFF(ra_total, flow, "total");
    OFF(ra_rate, flow, "rate"); OFF(ra_last, flow, "last_update"); OFF(ra_done, flow, "_done_event");
    OFF(sa_model, shared, "model"); OFF(sa_var, shared, "var"); OFF(sa_penalty, shared, "penalty");
    OFF(sa_bound, shared, "bound"); OFF(sa_uses, shared, "uses"); OFF(sa_factor, shared, "rate_factor");
    OFF(sa_lat, shared, "_lat_event"); OFF(fl_route, flow, "route"); OFF(fl_size, flow, "size");
    OFF(fl_latency, flow, "latency"); OFF(ri_lat, info, "lat"); OFF(ri_penalty, info, "penalty");
    OFF(ri_bound, info, "bound"); OFF(ri_uses, info, "uses");
#undef OFF
    /* the Activity slots read through SharedActivity's methods must be the Flow's */
    if (slot_offset(shared, "state") != ac_state || slot_offset(shared, "total") != ra_total ||
        slot_offset(shared, "engine") != ac_engine || slot_offset(shared, "last_update") != ra_last) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "SharedActivity and Flow disagree on their slots");
        return NULL;
    }
    PyObject *c = PyDescr_NewMethod(net, &communicate_def);
    PyObject *s = PyDescr_NewMethod(shared, &start_bw_def);
    PyObject *r = PyDescr_NewMethod(flow, &release_def);
    PyObject *w = PyDescr_NewMethod(flow, &work_done_def);
    PyObject *u = PyDescr_NewMethod(sharing, &update_def);
    if (c == NULL || s == NULL || r == NULL || w == NULL || u == NULL) {
        Py_XDECREF(c);
        Py_XDECREF(s);
        Py_XDECREF(r);
        Py_XDECREF(w);
        Py_XDECREF(u);
        return NULL;
    }
    return Py_BuildValue("{sNsNsNsNsN}", "communicate", c, "_start_bandwidth_phase", s, "_release", r,
                         "_work_done", w, "update", u);
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(model globals, Flow, _RouteInfo, SharedActivity, SharingModel, NetworkModel, communicate[, "
     "the kernel's bound_api() capsule])"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_netaccel",
                                       "The compiled twin of the network model's per-message path", -1, methods,
                                       NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__netaccel(void)
{
    return PyModule_Create(&moduledef);
}
