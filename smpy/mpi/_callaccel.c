/* The compiled fast path of the MPI facade's call wrapper (issue 24, item 1).
 *
 * ``MpiCall`` is a line-by-line C translation of the wrapper that
 * smpy.mpi._call.mpicall puts around every public MPI call, which stays the reference (the
 * pure path, used when this file cannot be compiled): find the running rank, count the
 * call, check the integer arguments, call the method with depth + 1, hand an MPIException of
 * an outermost call to the error hook. A call watched only by the timing of the compute bursts
 * (the default run) flushes the burst before and restarts it after, as _hooked does (the
 * flush itself, Timing.flush, in C when no memory sampler or folder watches it either; with
 * folded memory's page-fault count, the flush is Timing.flush(proc, False) and the restart is
 * Timing.mark_faults); an outermost
 * call that another feature watches (tracer, regions, sampling, smpy/probe-sees:polled), and
 * a nested one the tracer watches, goes to the Python _hooked path;
 * so do the after-MPI_Finalize error and the conversion of non-int integer arguments.
 * The method is called with the caller's argument vector as it is (no tuple, no dict).
 *
 * Also the facade's Comm._send and Comm._irecv (their common case: int ranks and tags in
 * range, not PROC_NULL; anything else calls the Python method before doing anything) and
 * COMM_WORLD's _impl getter.
 *
 * And msgspec's parse_send/parse_recv (_parse_message): the two fast paths (a whole
 * C-contiguous numpy array, alone or as [array, Datatype]) and _simple's first step, _counted
 * ([buffer, count, Datatype], the OSU demos' form) in C, everything else through the
 * Python _simple, with the same memoryview kept alive as in the Python function.
 *
 * Built on first use by smpy/mpi/_call.py (smpy/support/cext.py) and put in place by
 * smpy.kernel.accel with the kernel's compiled functions (smpy/kernel/_accel.c).
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

static PyObject *actors_dict;  /* smpy.kernel.actors.__dict__ (its _current global) */
static dict_memo current_memo;  /* _actors._current (dict_memo_get) */
static PyObject *s_current, *s_data, *s_depth, *s_world, *s_finalized, *s_mpi_calls, *s_bench,
    *s_sampling, *s_tracer, *s_probe_polled, *s_timing, *s_measure, *s_error_hook, *i_one, *s_regions,
    *s_count_faults, *s_flush, *s_thread_time, *s_start, *s_mark_faults;

static PyObject *ProcessType, *current_fn, *call_dict, *hooked_fn, *coerce_fn, *MPIException, *after_finalize_fn;

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_a_data, c_actor_data, c_dt_size, c_dtype_impl, c_impl_rsize,
    c_msgspec_mod_parse_recv, c_msgspec_mod_parse_send, c_p_comm_world, c_self__impl, c_spec_count,
    c_spec_datatype, c_world_timing;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn, *name, *ints, *wrapper;
    PyObject *body;  /* the method's compiled body for the fast path (set_body), or NULL */
    int after_ok;
} MpiCall;

/* slots of the running rank's Process and of its Actor, read at their offsets when the object
 * is of exactly that class (-1: the attribute protocol) */
static Py_ssize_t pr_depth = -1, pr_world = -1, pr_finalized = -1, pr_mpi_calls = -1, pr_bench = -1, at_data = -1;
static PyTypeObject *ActorTypeC;

static inline PyObject *
pget(PyObject *proc, Py_ssize_t off, PyObject *name)
{
    if (off >= 0 && Py_TYPE(proc) == (PyTypeObject *)ProcessType)
        return slot_get(proc, off, name);
    return attr_get(proc, name);
}

static inline int
pset(PyObject *proc, Py_ssize_t off, PyObject *name, PyObject *v)
{
    if (off >= 0 && Py_TYPE(proc) == (PyTypeObject *)ProcessType) {
        slot_set(proc, off, v);
        return 0;
    }
    return attr_set(proc, name, v);
}

/* bool(proc.<slot>) */
static inline int
attr_true_slot(PyObject *proc, Py_ssize_t off, PyObject *name)
{
    return truth_of(pget(proc, off, name));
}

/* actor.data */
static inline PyObject *
actor_data(PyObject *actor)
{
    if (at_data >= 0 && Py_TYPE(actor) == ActorTypeC)
        return slot_get(actor, at_data, s_data);
    return cached_get(actor, &c_actor_data, s_data);
}

static PyObject *
mpicall_hooked(MpiCall *self, PyObject *proc, PyObject *depth, PyObject *const *args, size_t nargsf,
               PyObject *kwnames)
{
    /* _hooked(fn, name, ints, proc, depth, args, kwargs): the calls some feature watches */
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *tup = PyTuple_New(nargs);
    PyObject *kw = tup == NULL ? NULL : PyDict_New();
    PyObject *r = NULL;
    if (kw == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tup, i, args[i]);
    }
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
            goto out;
    PyObject *hargs[7] = {self->fn, self->name, self->ints, proc, depth, tup, kw};
    r = PyObject_Vectorcall(hooked_fn, hargs, 7, NULL);
out:
    Py_XDECREF(kw);
    Py_XDECREF(tup);
    return r;
}

/* the error hook (smpy.mpi.errhandler) on an MPIException of an outermost call: 1 the
   handler ran (the call returns None), 0 re-raise, -1 error (set) */
static int
error_hooked(PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *hook = PyDict_GetItemWithError(call_dict, s_error_hook);
    if (hook == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (hook == Py_None)
        return 0;
    Py_INCREF(hook);
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyErr_NormalizeException(&et, &ev, &etb);
    if (etb != NULL)
        PyException_SetTraceback(ev, etb);
    PyObject *tup = PyTuple_New(nargs);
    if (tup == NULL) {
        Py_DECREF(hook);
        PyErr_Restore(et, ev, etb);
        return 0;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tup, i, args[i]);
    }
    /* the handler runs with the exception caught (as in an except block) */
    PyObject *ot, *ov, *otb;
    PyErr_GetExcInfo(&ot, &ov, &otb);
    Py_XINCREF(et);
    Py_XINCREF(ev);
    Py_XINCREF(etb);
    PyErr_SetExcInfo(et, ev, etb);
    PyObject *r = PyObject_CallFunctionObjArgs(hook, tup, ev, NULL);
    PyErr_SetExcInfo(ot, ov, otb);
    Py_DECREF(tup);
    Py_DECREF(hook);
    if (r == NULL) {
        _PyErr_ChainExceptions(et, ev, etb);
        return -1;
    }
    int yes = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (yes < 0) {
        _PyErr_ChainExceptions(et, ev, etb);
        return -1;
    }
    if (yes) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
        return 1;
    }
    PyErr_Restore(et, ev, etb);
    return 0;
}

static int
attr_not_none(PyObject *o, PyObject *name)
{
    PyObject *v = attr_get(o, name);
    if (v == NULL)
        return -1;
    int r = v != Py_None;
    Py_DECREF(v);
    return r;
}

/* attr_not_none and attr_true at a site of their own (cached_get: a slot, a module's
 * attribute read at once) */
static slot_cache c_bench_sampling, c_world_tracer, c_world_probe_polled, c_timing_measure, c_timing_regions,
    c_p2p_isend, c_p2p_wait_s, c_p2p_irecv;

static inline int
site_not_none(PyObject *o, slot_cache *c, PyObject *name)
{
    PyObject *v = cached_get(o, c, name);
    if (v == NULL)
        return -1;
    int r = v != Py_None;
    Py_DECREF(v);
    return r;
}

static inline int
site_true(PyObject *o, slot_cache *c, PyObject *name)
{
    PyObject *v = cached_get(o, c, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* v + 1 for the call depth and count: an exact int of at most one digit in C (the same
 * value; the small ints are CPython's own), else the number protocol (in-place for +=) */
static inline PyObject *
int_plus_one(PyObject *v, int inplace)
{
    long x;
    if (cext_small_int(v, &x))
        return PyLong_FromLong(x + 1);
    return inplace ? PyNumber_InPlaceAdd(v, i_one) : PyNumber_Add(v, i_one);
}

/* whether an int-annotated parameter is not an int (coerce_ints must convert it) */
static int
ints_need_coercion(PyObject *ints, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t n = PyTuple_GET_SIZE(ints);
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *pair = PyTuple_GET_ITEM(ints, j);
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < nargs) {
            if (!PyLong_CheckExact(args[i]))
                return 1;
            continue;
        }
        PyObject *pname = PyTuple_GET_ITEM(pair, 1);
        Py_ssize_t k = 0;
        while (k < nkw && PyTuple_GET_ITEM(kwnames, k) != pname)  /* interned: identity first */
            k++;
        if (k == nkw)
            for (k = 0; k < nkw && PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, k), pname) != 0; k++)
                ;
        if (k < nkw && !PyLong_CheckExact(args[nargs + k]))
            return 1;
    }
    return 0;
}

/* -- timing.flush(proc), compiled for the default run (smpy/timing/bench.py, Timing.flush) --
 * The caller ruled out sampling, regions and page-fault counts; with no memory sampler
 * (world.memory) and no memory folder (timing._folder) either, flush is:
 *     now = _thread_time(); dt = now - b.start
 *     if dt > 0.0:
 *         b.measured_s += dt
 *         if self.simulate and dt >= self.threshold:
 *             if self._burst(proc, dt, 0.0): now = _thread_time()
 *     b.start = now
 * done here in C with bench.py's own _thread_time; anything else calls the method. */
static PyObject *bench_dict;  /* smpy.timing.bench.__dict__, on first use */
static PyObject *s_memory, *s__folder, *s_measured_s, *s_simulate, *s_threshold, *s__burst, *f_zero,
    *s_untimed;

static int
flush_plain(PyObject *timing, PyObject *proc, PyObject *world)
{
    if (bench_dict == NULL) {
        PyObject *m = PyImport_ImportModule("smpy.timing.bench");
        if (m == NULL)
            return -1;
        bench_dict = Py_NewRef(PyModule_GetDict(m));
        Py_DECREF(m);
    }
    int other = attr_not_none(world, s_memory);
    if (other == 0)
        other = attr_not_none(timing, s__folder);
    if (other < 0)
        return -1;
    int plain = !other;
    PyObject *tt = plain ? PyDict_GetItemWithError(bench_dict, s_thread_time) : NULL;
    PyObject *bench = tt == NULL ? NULL : pget(proc, pr_bench, s_bench);
    /* inside smpy.untimed() (bench.untimed != 0): the method, which drops the burst */
    PyObject *untimed = bench == NULL ? NULL : PyObject_GetAttr(bench, s_untimed);
    int timed = untimed == NULL ? -1 : (PyLong_CheckExact(untimed) && PyLong_AsLong(untimed) == 0);
    Py_XDECREF(untimed);
    PyObject *start = timed < 0 ? NULL : PyObject_GetAttr(bench, s_start);
    PyObject *simulate = NULL, *thr = NULL, *now = NULL;
    int r = -1;
    if (start == NULL || !timed || !PyFloat_CheckExact(start)) {
        if (PyErr_Occurred())
            goto out;
        /* not the plain case: the method, timing.flush(proc, False) (the exit marks the
           folded page faults, as _hooked's does) */
        PyObject *fargs[3] = {timing, proc, Py_False};
        PyObject *f = PyObject_VectorcallMethod(s_flush, fargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        r = f == NULL ? -1 : 0;
        Py_XDECREF(f);
        goto out;
    }
    now = PyObject_CallNoArgs(tt);
    if (now == NULL)
        goto out;
    if (!PyFloat_CheckExact(now)) {
        PyErr_SetString(PyExc_TypeError, "smpy.timing.bench._thread_time must return a float");
        goto out;
    }
    double dt = PyFloat_AS_DOUBLE(now) - PyFloat_AS_DOUBLE(start);
    if (dt > 0.0) {
        PyObject *ms = PyObject_GetAttr(bench, s_measured_s);
        if (ms == NULL)
            goto out;
        PyObject *pdt = PyFloat_FromDouble(dt);
        PyObject *ms1 = pdt == NULL ? NULL : PyNumber_Add(ms, pdt);
        Py_DECREF(ms);
        int bad = ms1 == NULL || PyObject_SetAttr(bench, s_measured_s, ms1) < 0;
        Py_XDECREF(ms1);
        if (bad) {
            Py_XDECREF(pdt);
            goto out;
        }
        simulate = PyObject_GetAttr(timing, s_simulate);
        int sim = simulate == NULL ? -1 : PyObject_IsTrue(simulate);
        thr = sim > 0 ? PyObject_GetAttr(timing, s_threshold) : NULL;
        int over = sim <= 0 ? sim : (thr == NULL ? -1 : PyObject_RichCompareBool(pdt, thr, Py_GE));
        if (over > 0) {
            PyObject *bargs[4] = {timing, proc, pdt, f_zero};
            PyObject *blocked = PyObject_VectorcallMethod(s__burst, bargs, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            int yes = blocked == NULL ? -1 : PyObject_IsTrue(blocked);
            Py_XDECREF(blocked);
            if (yes > 0) {
                Py_SETREF(now, PyObject_CallNoArgs(tt));
                if (now == NULL)
                    yes = -1;
            }
            over = yes;
        }
        Py_DECREF(pdt);
        if (over < 0)
            goto out;
    }
    r = PyObject_SetAttr(bench, s_start, now);
out:
    Py_XDECREF(now);
    Py_XDECREF(thr);
    Py_XDECREF(simulate);
    Py_XDECREF(start);
    Py_XDECREF(bench);
    return r;
}

/* The wrapper in three parts, so that the C frame that stays on a rank's stack while the
 * method blocks (greenlet copies it out and back at each switch of the rank) is the small
 * mpicall_vectorcall's only: mpicall_enter (everything before the method's call) and
 * mpicall_leave (everything after it) have returned or not yet started then. */
typedef struct {
    PyObject *proc, *world, *depth, *timing;  /* new references (world, depth, timing may be NULL) */
    int outer, measured;
} call_state;

static void
call_state_release(call_state *st)
{
    Py_XDECREF(st->timing);
    Py_XDECREF(st->world);
    Py_XDECREF(st->depth);
    Py_DECREF(st->proc);
}

/* after the method's call (r its result, or NULL): the error hook, then the finally block
 * (proc.depth = depth; the restart of the compute burst's timing); r, or NULL */
CEXT_OUTLINE PyObject *
mpicall_leave(call_state *st, PyObject *r, int coerce, PyObject *coerced, PyObject *const *hook_args,
              Py_ssize_t hook_n)
{
    if (r == NULL && coerce >= 0 && st->outer && PyErr_ExceptionMatches(MPIException)) {
        int handled = error_hooked(hook_args, hook_n);
        if (handled > 0)
            r = Py_NewRef(Py_None);
    }
    Py_XDECREF(coerced);
    /* finally: proc.depth = depth (an exception of it replaces the pending one) */
    PyObject *proc = st->proc, *timing = st->timing;
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    int bad = pset(proc, pr_depth, s_depth, st->depth) < 0;
    if (!bad && st->measured && st->outer) {
        /* if timing.count_faults: timing.mark_faults(proc) (which restarts the timer)
           else: proc.bench.start = _thread_time(): the next burst */
        int faults = attr_true(timing, s_count_faults);
        if (faults > 0) {
            PyObject *m = call_method1(timing, s_mark_faults, proc);
            bad = m == NULL;
            Py_XDECREF(m);
        } else if (faults == 0) {
            PyObject *tt = PyDict_GetItemWithError(call_dict, s_thread_time);
            PyObject *now = tt == NULL ? NULL : PyObject_CallNoArgs(tt);
            PyObject *bench = now == NULL ? NULL : pget(proc, pr_bench, s_bench);
            bad = bench == NULL || PyObject_SetAttr(bench, s_start, now) < 0;
            if (bad && !PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "smpy.mpi._call has no _thread_time");
            Py_XDECREF(bench);
            Py_XDECREF(now);
        } else {
            bad = 1;
        }
    }
    if (bad) {
        Py_CLEAR(r);
        if (et != NULL)
            _PyErr_ChainExceptions(et, ev, etb);
    } else {
        PyErr_Restore(et, ev, etb);
    }
    call_state_release(st);
    return r;
}

/* the path that converts non-int integer arguments (coerce 1), or that failed to tell
 * (coerce -1): args = coerce_ints(ints, args, kwargs); fn(*args, **kwargs); then as
 * mpicall_leave */
CEXT_OUTLINE PyObject *
mpicall_coerced(MpiCall *self, call_state *st, int coerce, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    PyObject *const *hook_args = args;
    Py_ssize_t hook_n = nargs;
    PyObject *coerced = NULL, *r = NULL;
    if (coerce > 0) {
        PyObject *tup = PyTuple_New(nargs);
        PyObject *kw = tup == NULL ? NULL : PyDict_New();
        if (kw != NULL) {
            for (Py_ssize_t i = 0; i < nargs; i++) {
                Py_INCREF(args[i]);
                PyTuple_SET_ITEM(tup, i, args[i]);
            }
            Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
            int bad = 0;
            for (Py_ssize_t i = 0; i < nkw && !bad; i++)
                bad = PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0;
            if (!bad) {
                PyObject *cargs[3] = {self->ints, tup, kw};
                coerced = PyObject_Vectorcall(coerce_fn, cargs, 3, NULL);
                if (coerced != NULL && !PyTuple_Check(coerced)) {
                    PyErr_SetString(PyExc_TypeError, "coerce_ints must return a tuple");
                    Py_CLEAR(coerced);
                }
                if (coerced != NULL) {
                    r = PyObject_Call(self->fn, coerced, kw);
                    hook_args = &PyTuple_GET_ITEM(coerced, 0);
                    hook_n = PyTuple_GET_SIZE(coerced);
                }
            }
        }
        Py_XDECREF(kw);
        Py_XDECREF(tup);
    }
    return mpicall_leave(st, r, coerce, coerced, hook_args, hook_n);
}

/* everything before the method's call: 1 the fast path, proc.depth set to depth + 1 (the
 * caller calls the method, then mpicall_leave); 0 the call is done, *res its result (or NULL
 * with an error set), st released */
CEXT_OUTLINE int
mpicall_enter(MpiCall *self, PyObject *const *args, size_t nargsf, PyObject *kwnames, call_state *st,
              PyObject **res)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *proc = NULL, *world = NULL, *depth = NULL, *r = NULL, *timing = NULL;
    int measured = 0, outer = 0;
    PyObject *actor = dict_memo_get(&current_memo, actors_dict, s_current);
    if (actor == NULL && PyErr_Occurred()) {
        *res = NULL;
        return 0;
    }
    if (actor != NULL && actor != Py_None)
        proc = actor_data(actor);
    if (proc == NULL || Py_TYPE(proc) != (PyTypeObject *)ProcessType) {
        PyErr_Clear();
        Py_XDECREF(proc);
        proc = PyObject_CallNoArgs(current_fn);
        if (proc == NULL) {
            *res = NULL;
            return 0;
        }
    }
    depth = pget(proc, pr_depth, s_depth);
    world = depth == NULL ? NULL : pget(proc, pr_world, s_world);
    if (world == NULL)
        goto out;
    outer = int_eq(depth, 0);
    if (outer < 0)
        goto out;
    if (outer) {
        if (!self->after_ok) {
            int fin = attr_true_slot(proc, pr_finalized, s_finalized);
            if (fin < 0)
                goto out;
            if (fin) {
                r = PyObject_CallOneArg(after_finalize_fn, self->fn);
                goto out;
            }
        }
        /* proc.mpi_calls += 1: in place when only the slot holds the count (_cext.h) */
        if (!(pr_mpi_calls >= 0 && Py_TYPE(proc) == (PyTypeObject *)ProcessType &&
              incr_in_place(SLOT(proc, pr_mpi_calls)))) {
            PyObject *n = pget(proc, pr_mpi_calls, s_mpi_calls);
            PyObject *n1 = n == NULL ? NULL : int_plus_one(n, 1);
            Py_XDECREF(n);
            if (n1 == NULL)
                goto out;
            int rc = pset(proc, pr_mpi_calls, s_mpi_calls, n1);
            Py_DECREF(n1);
            if (rc < 0)
                goto out;
        }
        PyObject *bench = pget(proc, pr_bench, s_bench);
        int sampling = bench == NULL ? -1 : site_not_none(bench, &c_bench_sampling, s_sampling);
        Py_XDECREF(bench);
        if (sampling < 0)
            goto out;
        if (sampling) {
            r = mpicall_hooked(self, proc, depth, args, nargsf, kwnames);
            goto out;
        }
    }
    /* the tracer watches every call; smpy/probe-sees:polled, the regions and the timing of
       the compute bursts only the outermost ones (_hooked does nothing for them at depth > 0
       but what the fast path does) */
    int watched = site_not_none(world, &c_world_tracer, s_tracer);
    if (watched == 0 && outer)
        watched = site_true(world, &c_world_probe_polled, s_probe_polled);
    if (watched == 0 && outer) {
        timing = cached_get(world, &c_world_timing, s_timing);
        watched = timing == NULL ? -1 : site_true(timing, &c_timing_measure, s_measure);
        if (watched == 1) {
            /* only the timing of the compute bursts watches the call (the default run): _hooked's
               flush before and restart after are done here (with the page-fault count, the
               flush is Timing.flush(proc, False) and the restart Timing.mark_faults, as _hooked
               does),
               unless the regions need its frame */
            int other = site_not_none(timing, &c_timing_regions, s_regions);
            watched = other;
            measured = other == 0;
        }
    }
    if (watched < 0)
        goto out;
    if (watched) {
        r = mpicall_hooked(self, proc, depth, args, nargsf, kwnames);
        goto out;
    }
    if (measured && outer && flush_plain(timing, proc, world) < 0)  /* timing.flush(proc) */
        goto out;
    /* fast path: proc.depth = depth + 1; try: fn(*args, **kwargs) finally: proc.depth = depth */
    PyObject *d1 = int_plus_one(depth, 0);
    if (d1 == NULL)
        goto out;
    int rc = pset(proc, pr_depth, s_depth, d1);
    Py_DECREF(d1);
    if (rc < 0)
        goto out;
    st->proc = proc;
    st->world = world;
    st->depth = depth;
    st->timing = timing;
    st->outer = outer;
    st->measured = measured;
    int coerce = PyTuple_GET_SIZE(self->ints) ? ints_need_coercion(self->ints, args, nargs, kwnames) : 0;
    if (coerce == 0)
        return 1;
    *res = mpicall_coerced(self, st, coerce, args, nargs, kwnames);
    return 0;
out:
    Py_XDECREF(timing);
    Py_XDECREF(world);
    Py_XDECREF(depth);
    Py_DECREF(proc);
    *res = r;
    return 0;
}

static PyObject *
mpicall_vectorcall(MpiCall *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    call_state st;
    PyObject *r;
    if (!mpicall_enter(self, args, nargsf, kwnames, &st, &r))
        return r;
    r = call_direct(self->body != NULL ? self->body : self->fn, args, nargsf, kwnames);
    return mpicall_leave(&st, r, 0, NULL, args, PyVectorcall_NARGS(nargsf));
}

static void
mpicall_dealloc(MpiCall *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->fn);
    Py_CLEAR(self->name);
    Py_CLEAR(self->ints);
    Py_CLEAR(self->wrapper);
    Py_CLEAR(self->body);
    PyObject_GC_Del(self);
}

static int
mpicall_traverse(MpiCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->name);
    Py_VISIT(self->ints);
    Py_VISIT(self->wrapper);
    Py_VISIT(self->body);
    return 0;
}

static PyObject *
mpicall_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* the Python wrapper's attributes (__name__, __doc__, __wrapped__, ...) */
static PyObject *
mpicall_getattro(MpiCall *self, PyObject *name)
{
    PyObject *v = PyObject_GenericGetAttr((PyObject *)self, name);
    if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return v;
    PyErr_Clear();
    return PyObject_GetAttr(self->wrapper, name);
}

static PyObject *
mpicall_doc(MpiCall *self, void *closure)
{
    return PyObject_GetAttrString(self->wrapper, "__doc__");
}

static PyObject *
mpicall_repr(MpiCall *self)
{
    return PyUnicode_FromFormat("<compiled MPI call %R>", self->wrapper);
}

static PyGetSetDef mpicall_getset[] = {
    {"__doc__", (getter)mpicall_doc, NULL, NULL, NULL},
    {NULL},
};

static PyMemberDef mpicall_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(MpiCall, vectorcall), READONLY, NULL},
    {"python_wrapper", T_OBJECT, offsetof(MpiCall, wrapper), READONLY, NULL},
    {NULL},
};

static PyTypeObject MpiCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "smpy.mpi._callaccel.MpiCall",
    .tp_basicsize = sizeof(MpiCall),
    .tp_dealloc = (destructor)mpicall_dealloc,
    .tp_vectorcall_offset = offsetof(MpiCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)mpicall_repr,
    .tp_getattro = (getattrofunc)mpicall_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_traverse = (traverseproc)mpicall_traverse,
    .tp_descr_get = mpicall_get,
    .tp_getset = mpicall_getset,
    .tp_members = mpicall_members,
};

static PyObject *
make_mpicall(PyObject *module, PyObject *args)
{
    PyObject *wrapper, *fn, *name, *ints;
    int after_ok;
    if (!PyArg_ParseTuple(args, "OOUO!p", &wrapper, &fn, &name, &PyTuple_Type, &ints, &after_ok))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ints);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyTuple_GET_ITEM(ints, i);
        if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2 || !PyLong_Check(PyTuple_GET_ITEM(p, 0)) ||
            !PyUnicode_Check(PyTuple_GET_ITEM(p, 1))) {
            PyErr_SetString(PyExc_TypeError, "ints must be (index, name) pairs");
            return NULL;
        }
    }
    MpiCall *self = PyObject_GC_New(MpiCall, &MpiCallType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)mpicall_vectorcall;
    self->wrapper = Py_NewRef(wrapper);
    self->fn = Py_NewRef(fn);
    self->body = NULL;
    self->name = Py_NewRef(name);
    self->ints = Py_NewRef(ints);
    self->after_ok = after_ok;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
setup_calls(PyObject *module, PyObject *args)
{
    PyObject *a[8];
    if (!PyArg_ParseTuple(args, "OOO!OOOOO!", &a[0], &a[1], &PyDict_Type, &a[2], &a[3], &a[4], &a[5], &a[6],
                          &PyDict_Type, &a[7]))
        return NULL;
    Py_XSETREF(actors_dict, Py_NewRef(a[7]));
    Py_XSETREF(ProcessType, Py_NewRef(a[0]));
    Py_XSETREF(current_fn, Py_NewRef(a[1]));
    Py_XSETREF(call_dict, Py_NewRef(a[2]));
    Py_XSETREF(hooked_fn, Py_NewRef(a[3]));
    Py_XSETREF(coerce_fn, Py_NewRef(a[4]));
    Py_XSETREF(MPIException, Py_NewRef(a[5]));
    Py_XSETREF(after_finalize_fn, Py_NewRef(a[6]));
    /* the slots' offsets; a class without them keeps the attribute protocol */
    pr_depth = pr_world = pr_finalized = pr_mpi_calls = pr_bench = at_data = -1;
    if (PyType_Check(a[0])) {
        PyTypeObject *pt = (PyTypeObject *)a[0];
        if ((pr_depth = slot_offset(pt, "depth")) < 0 || (pr_world = slot_offset(pt, "world")) < 0 ||
            (pr_finalized = slot_offset(pt, "finalized")) < 0 || (pr_mpi_calls = slot_offset(pt, "mpi_calls")) < 0 ||
            (pr_bench = slot_offset(pt, "bench")) < 0) {
            PyErr_Clear();
            pr_depth = pr_world = pr_finalized = pr_mpi_calls = pr_bench = -1;
        }
    }
    PyObject *actor_cls = PyDict_GetItemString(a[7], "Actor");
    if (actor_cls != NULL && PyType_Check(actor_cls)) {
        Py_XSETREF(ActorTypeC, (PyTypeObject *)Py_NewRef(actor_cls));
        if ((at_data = slot_offset(ActorTypeC, "data")) < 0) {
            PyErr_Clear();
            at_data = -1;
        }
    }
    Py_RETURN_NONE;
}

/* -- message parsing: smpy.mpi.msgspec.parse_send / parse_recv (_parse_message) ---------- */
static PyObject *ndarray_type, *datatype_type, *dt_null, *from_typechar_fn, *simple_fn, *py_parse_send,
    *py_parse_recv, *s_impl, *s_extent, *s_size, *s_cast, *s_B, *s_blocks;
static PyTypeObject *BufSpecType;
static Py_ssize_t bs_obj, bs_mem, bs_offset, bs_count, bs_datatype;

static void
bs_put(PyObject *o, Py_ssize_t off, PyObject *v)
{
    PyObject *old = SLOT(o, off);
    Py_INCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* BufSpec(obj, mem, 0, count, dt) */
static PyObject *
bufspec(PyObject *obj, PyObject *mem, Py_ssize_t count, PyObject *dt)
{
    PyObject *c = PyLong_FromSsize_t(count);
    if (c == NULL)
        return NULL;
    PyObject *b = BufSpecType->tp_alloc(BufSpecType, 0);
    if (b == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0);
    bs_put(b, bs_obj, obj);
    bs_put(b, bs_mem, mem);
    bs_put(b, bs_offset, zero);
    bs_put(b, bs_count, c);
    bs_put(b, bs_datatype, dt);
    Py_DECREF(zero);
    Py_DECREF(c);
    return b;
}

static inline const char *
view_format(const Py_buffer *v)
{
    return v->format != NULL ? v->format : "B";
}

/* memoryview(o) of a message buffer, without the memoryview object when o is an exact numpy
 * array: its buffer export (the one memoryview(o) makes, PyBUF_FULL_RO) held in ``v``, and the
 * memoryview made only for the message, already as bytes (byte_mem). Any other object: the
 * memoryview itself in ``m`` (a memoryview of a memoryview shares its managed buffer, which
 * an export would not). Either way ``view`` is the buffer that memoryview(o) would hold. */
typedef struct {
    Py_buffer v;
    PyObject *m;
    Py_buffer *view;
} msgbuf;

/* 0, or -1 with the error memoryview(o) raises */
static int
msgbuf_get(msgbuf *b, PyObject *o)
{
    b->m = NULL;
    b->v.obj = NULL;
    if ((PyObject *)Py_TYPE(o) == ndarray_type) {
        if (PyObject_GetBuffer(o, &b->v, PyBUF_FULL_RO) < 0)
            return -1;
        if (b->v.ndim <= PyBUF_MAX_NDIM && b->v.ndim >= 0 && b->v.itemsize > 0 && b->v.buf != NULL) {
            b->view = &b->v;
            return 0;
        }
        PyBuffer_Release(&b->v);  /* what memoryview() refuses or rebuilds: memoryview() */
    }
    b->m = PyMemoryView_FromObject(o);
    if (b->m == NULL)
        return -1;
    b->view = PyMemoryView_GET_BUFFER(b->m);
    return 0;
}

static void
msgbuf_release(msgbuf *b)
{
    if (b->m != NULL)
        Py_CLEAR(b->m);
    else if (b->v.obj != NULL)
        PyBuffer_Release(&b->v);
}

/* memoryview(o).c_contiguous: the memoryview's flags (memoryobject.c's init_flags, on the
 * shape and strides the memoryview rebuilds when the exporter gives none) */
static int
msgbuf_c_contiguous(const msgbuf *b)
{
    if (b->m != NULL)
        return (((PyMemoryViewObject *)b->m)->flags & (_Py_MEMORYVIEW_SCALAR | _Py_MEMORYVIEW_C)) != 0;
    const Py_buffer *v = b->view;
    if (v->suboffsets != NULL)
        return v->ndim == 0;
    if (v->ndim == 0)
        return 1;
    if (v->ndim == 1) {
        Py_ssize_t shape = v->shape != NULL ? v->shape[0] : v->len / v->itemsize;
        Py_ssize_t stride = v->strides != NULL ? v->strides[0] : v->itemsize;
        return shape == 1 || stride == v->itemsize;
    }
    return PyBuffer_IsContiguous(v, 'C');
}

/* m.cast("B") if m.ndim != 1 or m.format != "B" else m, for m = memoryview(o) (new
 * reference). Without m, the memoryview is made from the export, which it takes over: the
 * same view the cast gives (format "B", item size 1, one dimension of len bytes, stride 1,
 * the exporter's buf, len, readonly and obj), or memoryview(o)'s own when no cast is made,
 * over a managed buffer that holds the export, as memoryview(o)'s does. */
static PyObject *
byte_mem(msgbuf *b)
{
    if (b->m != NULL) {
        Py_buffer *v = b->view;
        if (v->ndim != 1 || strcmp(view_format(v), "B") != 0) {
            PyObject *args[2] = {b->m, s_B};
            return PyObject_VectorcallMethod(s_cast, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        }
        return Py_NewRef(b->m);
    }
    Py_buffer info = b->v;
    Py_ssize_t shape = b->v.len, stride = 1;
    if (b->v.ndim != 1 || strcmp(view_format(&b->v), "B") != 0) {
        info.format = "B";
        info.itemsize = 1;
        info.ndim = 1;
        info.shape = &shape;
        info.strides = &stride;
        info.suboffsets = NULL;
    }
    PyObject *mv = PyMemoryView_FromBuffer(&info);  /* a managed buffer without an owner */
    if (mv == NULL)
        return NULL;
    PyMemoryViewObject *m = (PyMemoryViewObject *)mv;
    m->mbuf->master = b->v;  /* the export: released with the managed buffer */
    m->view.obj = b->v.obj;  /* borrowed from the master, as in every memoryview */
    b->v.obj = NULL;
    return mv;
}

/* m.c_contiguous and n and (readonly or not m.readonly): 1, 0 */
static int
usable(const msgbuf *b, int readonly)
{
    return b->view->len && msgbuf_c_contiguous(b) && (readonly || !b->view->readonly);
}

/* an int attribute as a C long; 0 on error with *err set, or when it is no exact int (*odd) */
static long
long_attr(PyObject *o, PyObject *name, int *err, int *odd)
{
    PyObject *v = attr_get(o, name);
    if (v == NULL) {
        *err = 1;
        return 0;
    }
    long x = 0;
    if (PyLong_CheckExact(v)) {
        x = PyLong_AsLong(v);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            *odd = 1;
        }
    } else {
        *odd = 1;
    }
    Py_DECREF(v);
    return x;
}

/* msgspec._counted(o_buf, count, dt, readonly), the [buffer, count, MPI.Datatype] form: a
 * BufSpec, NULL with no error when it is not the common case (then _simple parses it all, and
 * runs _counted again: errors and odd cases behave as in Python), NULL with an error. */
static PyObject *msgspec_sentinels[3];  /* BOTTOM, IN_PLACE, BUFFER_AUTOMATIC */
static PyObject *s_committed, *s_true_lb, *s_true_extent;

static PyObject *
counted(PyObject *o_buf, long long count, PyObject *dt, int readonly)
{
    if (msgspec_sentinels[0] == NULL) {
        PyObject *g = PyFunction_Check(simple_fn) ? PyFunction_GetGlobals(simple_fn) : NULL;
        const char *names[3] = {"BOTTOM", "IN_PLACE", "BUFFER_AUTOMATIC"};
        for (int i = 0; i < 3; i++) {
            PyObject *v = g == NULL ? NULL : PyDict_GetItemString(g, names[i]);
            if (v == NULL)
                return NULL;  /* no error set: the Python path */
            msgspec_sentinels[i] = Py_NewRef(v);
        }
    }
    if (o_buf == msgspec_sentinels[0] || o_buf == msgspec_sentinels[1] || o_buf == msgspec_sentinels[2] ||
        dt == dt_null)
        return NULL;
    PyObject *c = attr_get(dt, s_committed);
    if (c == NULL) {
        PyErr_Clear();
        return NULL;
    }
    int committed = c == Py_True;
    Py_DECREF(c);
    if (!committed)
        return NULL;
    msgbuf mb;
    if (msgbuf_get(&mb, o_buf) < 0) {  /* not a buffer, or it raised: _simple says what (as mpi4py would) */
        PyErr_Clear();
        return NULL;
    }
    PyObject *r = NULL;
    if (!usable(&mb, readonly))
        goto out;
    Py_ssize_t n = mb.view->len;
    int err = 0, odd = 0;
    long size = long_attr(dt, s_size, &err, &odd);
    if (err || odd) {
        PyErr_Clear();
        goto out;
    }
    if (count && size) {  /* lo, hi = data_bounds(dt, count); the data must lie in [0, n) */
        long extent = long_attr(dt, s_extent, &err, &odd);
        long tlb = long_attr(dt, s_true_lb, &err, &odd);
        long text = long_attr(dt, s_true_extent, &err, &odd);
        if (err || odd) {
            PyErr_Clear();
            goto out;
        }
        long long reach, lo, hi;
        if (__builtin_mul_overflow(count - 1, (long long)extent, &reach) ||
            __builtin_add_overflow((long long)tlb, reach < 0 ? reach : 0, &lo) ||
            __builtin_add_overflow((long long)tlb + (long long)text, reach > 0 ? reach : 0, &hi))
            goto out;
        if (lo < 0 || hi > (long long)n)
            goto out;
    }
    PyObject *mem = byte_mem(&mb);
    r = mem == NULL ? NULL : bufspec(o_buf, mem, (Py_ssize_t)count, dt);
    Py_XDECREF(mem);
out:
    msgbuf_release(&mb);
    return r;
}

static PyObject *
parse(PyObject *spec, PyObject *blocks_o, int readonly, PyObject *const *args, Py_ssize_t nargs,
      PyObject *kwnames)
{
    PyObject *py = readonly ? py_parse_send : py_parse_recv;
    long blocks = 1;
    if (blocks_o != NULL) {
        if (!PyLong_CheckExact(blocks_o))
            return PyObject_Vectorcall(py, args, nargs, kwnames);
        blocks = PyLong_AsLong(blocks_o);
        if (blocks == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return PyObject_Vectorcall(py, args, nargs, kwnames);
        }
    }
    PyTypeObject *t = Py_TYPE(spec);
    msgbuf mb = {.m = NULL, .v = {.obj = NULL}};  /* memoryview(buf), alive until _simple returns */
    PyObject *r = NULL, *mem = NULL;  /* and the bytes made of it, as in the Python function */
    if (t == &PyList_Type || t == &PyTuple_Type) {
        Py_ssize_t len = PySequence_Size(spec);
        if (len < 0)
            return NULL;
        if (blocks < 2 && len == 3) {  /* _simple's first step: _counted */
            PyObject *const *it = t == &PyList_Type ? ((PyListObject *)spec)->ob_item
                                                    : ((PyTupleObject *)spec)->ob_item;
            PyObject *o_buf = it[0], *o_count = it[1], *o_type = it[2];
            if (PyLong_CheckExact(o_count) && (PyObject *)Py_TYPE(o_type) == datatype_type) {
                long long count = PyLong_AsLongLong(o_count);
                if (count == -1 && PyErr_Occurred())
                    PyErr_Clear();
                else if (count >= 0) {
                    Py_INCREF(o_buf);
                    PyObject *dt = cached_get(o_type, &c_dtype_impl, s_impl);
                    r = dt == NULL ? NULL : counted(o_buf, count, dt, readonly);
                    Py_XDECREF(dt);
                    Py_DECREF(o_buf);
                    if (r != NULL || PyErr_Occurred())
                        return r;
                }
            }
        }
        if (blocks < 2 && len == 2) {
            PyObject *buf = PySequence_GetItem(spec, 0);
            PyObject *dtype = buf == NULL ? NULL : PySequence_GetItem(spec, 1);
            if (dtype == NULL) {
                Py_XDECREF(buf);
                return NULL;
            }
            if ((PyObject *)Py_TYPE(buf) == ndarray_type && (PyObject *)Py_TYPE(dtype) == datatype_type) {
                int ok = msgbuf_get(&mb, buf) < 0 ? -1 : usable(&mb, readonly);
                PyObject *dt = ok > 0 ? cached_get(dtype, &c_dtype_impl, s_impl) : NULL;
                if (ok > 0 && dt == NULL)
                    ok = -1;
                if (ok > 0) {
                    int err = 0, odd = 0;
                    long extent = long_attr(dt, s_extent, &err, &odd);
                    Py_ssize_t n = mb.view->len;
                    if (err)
                        ok = -1;
                    else if (odd) {  /* not a C long: the Python path */
                        ok = 0;
                    } else if (dt != dt_null && extent > 0 && n % extent == 0) {
                        PyObject *mem = byte_mem(&mb);
                        r = mem == NULL ? NULL : bufspec(buf, mem, n / extent, dt);
                        Py_XDECREF(mem);
                        ok = r == NULL ? -1 : 2;
                    }
                }
                Py_XDECREF(dt);
                if (ok != 0 && ok != 1) {  /* done, or an error */
                    msgbuf_release(&mb);
                    Py_DECREF(buf);
                    Py_DECREF(dtype);
                    return r;
                }
            }
            Py_DECREF(buf);
            Py_DECREF(dtype);
        }
    } else if ((PyObject *)t == ndarray_type) {
        if (msgbuf_get(&mb, spec) < 0)
            return NULL;
        if (usable(&mb, readonly)) {
            PyObject *fmt = PyUnicode_FromString(view_format(mb.view));
            PyObject *dt = fmt == NULL ? NULL : PyObject_CallOneArg(from_typechar_fn, fmt);
            Py_XDECREF(fmt);
            mem = dt == NULL ? NULL : byte_mem(&mb);
            if (mem == NULL) {
                Py_XDECREF(dt);
                msgbuf_release(&mb);
                return NULL;
            }
            Py_ssize_t n = PyMemoryView_GET_BUFFER(mem)->len;
            int err = 0, odd = 0;
            long size = long_attr(dt, s_size, &err, &odd);
            if (err) {
                Py_DECREF(dt);
                Py_DECREF(mem);
                msgbuf_release(&mb);
                return NULL;
            }
            if (!odd && blocks < 2 && size && n % size == 0)
                r = bufspec(spec, mem, n / size, dt);
            Py_DECREF(dt);
            if (r != NULL || PyErr_Occurred()) {  /* done, or an error */
                Py_DECREF(mem);
                msgbuf_release(&mb);
                return r;
            }
        }
    }
    /* return _simple(spec, readonly, blocks) (memoryview(buf) still alive, as in the Python function) */
    PyObject *bl = blocks_o != NULL ? Py_NewRef(blocks_o) : PyLong_FromLong(1);
    if (bl != NULL) {
        PyObject *sargs[3] = {spec, readonly ? Py_True : Py_False, bl};
        r = PyObject_Vectorcall(simple_fn, sargs, 3, NULL);
        Py_DECREF(bl);
    }
    Py_XDECREF(mem);
    msgbuf_release(&mb);
    return r;
}

static PyObject *
parse_entry(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int readonly)
{
    PyObject *py = readonly ? py_parse_send : py_parse_recv;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *blocks = NULL;
    if (nargs < 1 || nargs > 2 || nkw > 1)
        return PyObject_Vectorcall(py, args, nargs, kwnames);
    if (nargs == 2)
        blocks = args[1];
    if (nkw == 1) {
        if (nargs == 2 || PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_blocks) != 0)
            return PyObject_Vectorcall(py, args, nargs, kwnames);
        blocks = args[1];
    }
    return parse(args[0], blocks, readonly, args, nargs, kwnames);
}

static PyObject *
parse_send(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return parse_entry(args, nargs, kwnames, 1);
}

static PyObject *
parse_recv(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return parse_entry(args, nargs, kwnames, 0);
}

static PyObject *
setup_parse(PyObject *module, PyObject *args)
{
    PyObject *nd, *dtt, *null, *ftc, *simple, *ps, *pr, *bs;
    if (!PyArg_ParseTuple(args, "OOOOOOOO!", &nd, &dtt, &null, &ftc, &simple, &ps, &pr, &PyType_Type, &bs))
        return NULL;
    Py_XSETREF(BufSpecType, (PyTypeObject *)Py_NewRef(bs));
    if ((bs_obj = slot_offset(BufSpecType, "obj")) < 0 || (bs_mem = slot_offset(BufSpecType, "mem")) < 0 ||
        (bs_offset = slot_offset(BufSpecType, "offset")) < 0 ||
        (bs_count = slot_offset(BufSpecType, "count")) < 0 ||
        (bs_datatype = slot_offset(BufSpecType, "datatype")) < 0)
        return NULL;
    Py_XSETREF(ndarray_type, Py_NewRef(nd));
    Py_XSETREF(datatype_type, Py_NewRef(dtt));
    Py_XSETREF(dt_null, Py_NewRef(null));
    Py_XSETREF(from_typechar_fn, Py_NewRef(ftc));
    Py_XSETREF(simple_fn, Py_NewRef(simple));
    Py_XSETREF(py_parse_send, Py_NewRef(ps));
    Py_XSETREF(py_parse_recv, Py_NewRef(pr));
    if (s_impl == NULL && ((s_impl = PyUnicode_InternFromString("_impl")) == NULL ||
                           (s_extent = PyUnicode_InternFromString("extent")) == NULL ||
                           (s_size = PyUnicode_InternFromString("size")) == NULL ||
                           (s_cast = PyUnicode_InternFromString("cast")) == NULL ||
                           (s_B = PyUnicode_InternFromString("B")) == NULL ||
                           (s_blocks = PyUnicode_InternFromString("blocks")) == NULL ||
                           (s_committed = PyUnicode_InternFromString("committed")) == NULL ||
                           (s_true_lb = PyUnicode_InternFromString("true_lb")) == NULL ||
                           (s_true_extent = PyUnicode_InternFromString("true_extent")) == NULL))
        return NULL;
    Py_RETURN_NONE;
}

/* -- the facade's point-to-point helpers: Comm._send, Comm._irecv, COMM_WORLD._impl --------- */
static PyObject *py_send, *py_irecv_m, *py_world_impl, *comm_dict, *msgspec_mod, *p2p_mod, *comm_world_obj,
    *s__impl, *s_rsize, *s_parse_send, *s_parse_recv, *s_pack_message, *s_count, *s_datatype, *s_isend,
    *s_irecv, *s_wait, *s_comm_world, *s_blocking_kw;
static long TAG_UB_C, PROC_NULL_C, P2P_C;
static PyObject *p2p_const;

/* 0 <= v < hi for exact ints (hi an int object): 1, 0; -1 when not exact ints */
static int
in_range(PyObject *v, PyObject *hi_o)
{
    if (!PyLong_CheckExact(v) || !PyLong_CheckExact(hi_o))
        return -1;
    long x = PyLong_AsLong(v), hi = PyLong_AsLong(hi_o);
    if ((x == -1 || hi == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0 <= x && x < hi;
}

static int
tag_ok(PyObject *tag)
{
    if (!PyLong_CheckExact(tag))
        return -1;
    long t = PyLong_AsLong(tag);
    if (t == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0 <= t && t <= TAG_UB_C;
}

/* the communicator's _impl when (peer, tag) is a plain point-to-point pair: exact ints,
 * 0 <= peer < the remote group's size, 0 <= tag <= TAG_UB (new reference). NULL with no
 * error set: not the common case (wildcards, PROC_NULL, argument errors: the Python method
 * handles it); NULL with an error set: a failure */
/* self._impl: the site's property getter (COMM_WORLD's world_impl, a C function) called
 * directly (call_direct_n), as cached_get calls it */
static inline PyObject *
comm_impl(PyObject *self)
{
    slot_cache *c = &c_self__impl;
    PyTypeObject *t = Py_TYPE(self);
    if (t == c->type && c->off == CACHE_PROPERTY && t->tp_version_tag == c->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject *fget = SLOT(c->getset, prop_fget_off);
        if (fget != NULL) {
            Py_INCREF(fget);
            PyObject *r = call_direct_n(fget, &self, 1);
            Py_DECREF(fget);
            return r;
        }
    }
    return cached_get(self, c, s__impl);
}

static PyObject *
plain_pair_impl(PyObject *self, PyObject *peer, PyObject *tag)
{
    PyObject *impl = comm_impl(self);
    if (impl == NULL)
        return NULL;
    PyObject *rsize = cached_get(impl, &c_impl_rsize, s_rsize);
    if (rsize == NULL) {
        Py_DECREF(impl);
        return NULL;
    }
    int ok = in_range(peer, rsize);
    Py_DECREF(rsize);
    if (ok > 0)
        ok = tag_ok(tag);
    if (ok <= 0) {
        Py_DECREF(impl);
        return NULL;
    }
    return impl;
}

/* the running rank: _actors._current.data (new reference) */
static PyObject *
running_proc(void)
{
    PyObject *a = dict_memo_get(&current_memo, actors_dict, s_current);
    if (a == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_NameError, s_current);
        return NULL;
    }
    return actor_data(a);
}

/* the sending side of a message: spec = msgspec.parse_send(buf), payload =
 * pack_message(spec), nbytes = spec.count * spec.datatype.size (new references; 0, or -1
 * with an error set, what was made left in place for the caller to release) */
static int
send_message(PyObject *buf, PyObject **spec, PyObject **payload, PyObject **nbytes)
{
    PyObject *fn = cached_get(msgspec_mod, &c_msgspec_mod_parse_send, s_parse_send);
    *spec = fn == NULL ? NULL : call_direct_n(fn, &buf, 1);  /* the compiled parse_send called directly */
    Py_XDECREF(fn);
    if (*spec == NULL)
        return -1;
    fn = dict_global(comm_dict, s_pack_message);  /* borrowed */
    *payload = fn == NULL ? NULL : call_direct_n(fn, spec, 1);  /* and pack_message */
    if (*payload == NULL)
        return -1;
    PyObject *count = cached_get(*spec, &c_spec_count, s_count);
    PyObject *dt = count == NULL ? NULL : cached_get(*spec, &c_spec_datatype, s_datatype);
    PyObject *size = dt == NULL ? NULL : cached_get(dt, &c_dt_size, s_size);
    *nbytes = size == NULL ? NULL : int_mul(count, size);
    Py_XDECREF(size);
    Py_XDECREF(dt);
    Py_XDECREF(count);
    return *nbytes == NULL ? -1 : 0;
}

static PyObject *
facade_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* _send(self, buf, dest, tag, call, sync): what is not the common case (argument errors,
       PROC_NULL): the Python method, before anything is done */
    if (nargs != 5)
        goto python;
    PyObject *buf = args[0], *dest = args[1], *tag = args[2], *call = args[3], *sync = args[4];
    if (!PyLong_CheckExact(dest) || !PyLong_CheckExact(tag))
        goto python;
    PyObject *impl = plain_pair_impl(self, dest, tag);
    if (impl == NULL) {  /* the checks raise, or PROC_NULL: Python */
        if (PyErr_Occurred())
            return NULL;
        goto python;
    }
    PyObject *pr = running_proc();
    if (pr == NULL) {
        Py_DECREF(impl);
        return NULL;
    }
    PyObject *r = NULL, *spec = NULL, *payload = NULL, *nbytes = NULL, *req = NULL, *fn;
    if (send_message(buf, &spec, &payload, &nbytes) < 0)
        goto out;
    fn = cached_get(p2p_mod, &c_p2p_isend, s_isend);
    if (fn == NULL)
        goto out;
    {
        PyObject *iargs[11] = {pr, impl, p2p_const, payload, nbytes, dest, tag, call, sync, Py_True};
        req = call_direct(fn, iargs, 9, s_blocking_kw);
        Py_DECREF(fn);
    }
    if (req == NULL)
        goto out;
    fn = cached_get(p2p_mod, &c_p2p_wait_s, s_wait);
    if (fn == NULL)
        goto out;
    {
        PyObject *wargs[2] = {pr, req};
        PyObject *x = call_direct(fn, wargs, 2, NULL);
        Py_DECREF(fn);
        if (x == NULL)
            goto out;
        Py_DECREF(x);
    }
    r = Py_NewRef(Py_None);
out:
    Py_XDECREF(req);
    Py_XDECREF(nbytes);
    Py_XDECREF(payload);
    Py_XDECREF(spec);
    Py_DECREF(pr);
    Py_DECREF(impl);
    return r;
python: {
        PyObject *fargs[6] = {self};
        for (Py_ssize_t i = 0; i < nargs && i < 5; i++)
            fargs[i + 1] = args[i];
        return PyObject_Vectorcall(py_send, fargs, (nargs < 5 ? nargs : 5) + 1, NULL);
    }
}

static PyObject *
facade_irecv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* _irecv(self, buf, source, tag, call) */
    if (nargs != 4)
        goto python;
    PyObject *buf = args[0], *source = args[1], *tag = args[2], *call = args[3];
    if (!PyLong_CheckExact(source) || !PyLong_CheckExact(tag))
        goto python;
    PyObject *impl = plain_pair_impl(self, source, tag);
    if (impl == NULL) {  /* wildcards, PROC_NULL, errors: Python */
        if (PyErr_Occurred())
            return NULL;
        goto python;
    }
    PyObject *fn = cached_get(msgspec_mod, &c_msgspec_mod_parse_recv, s_parse_recv);
    PyObject *spec = fn == NULL ? NULL : call_direct_n(fn, &buf, 1);
    Py_XDECREF(fn);
    PyObject *pr = spec == NULL ? NULL : running_proc();
    fn = pr == NULL ? NULL : cached_get(p2p_mod, &c_p2p_irecv, s_irecv);
    PyObject *r = NULL;
    if (fn != NULL) {
        PyObject *iargs[7] = {pr, impl, p2p_const, source, tag, spec, call};
        r = call_direct(fn, iargs, 7, NULL);
        Py_DECREF(fn);
    }
    Py_XDECREF(pr);
    Py_XDECREF(spec);
    Py_DECREF(impl);
    return r;
python: {
        PyObject *fargs[5] = {self};
        for (Py_ssize_t i = 0; i < nargs && i < 4; i++)
            fargs[i + 1] = args[i];
        return PyObject_Vectorcall(py_irecv_m, fargs, (nargs < 4 ? nargs : 4) + 1, NULL);
    }
}

static PyObject *
world_impl(PyObject *module, PyObject *self)
{
    /* COMM_WORLD._impl: the running rank's world communicator (Process.comm_world) */
    if (self == comm_world_obj) {
        PyObject *a = dict_memo_get(&current_memo, actors_dict, s_current);
        if (a == NULL && PyErr_Occurred())
            return NULL;
        if (a != NULL && a != Py_None) {
            PyObject *p = cached_get(a, &c_a_data, s_data);
            if (p == NULL)
                return NULL;
            if ((PyObject *)Py_TYPE(p) == ProcessType) {
                PyObject *c = cached_get(p, &c_p_comm_world, s_comm_world);
                Py_DECREF(p);
                if (c == NULL || c != Py_None)
                    return c;
                Py_DECREF(c);
            } else {
                Py_DECREF(p);
            }
        }
    }
    return PyObject_CallOneArg(py_world_impl, self);
}

static PyMethodDef facade_send_def = {"_send", (PyCFunction)(void (*)(void))facade_send, METH_FASTCALL,
                                      "Comm._send, compiled (smpy.mpi._callaccel)"};
static PyMethodDef facade_irecv_def = {"_irecv", (PyCFunction)(void (*)(void))facade_irecv, METH_FASTCALL,
                                       "Comm._irecv, compiled (smpy.mpi._callaccel)"};

static PyObject *
setup_facade(PyObject *module, PyObject *args)
{
    PyObject *comm_cls, *ps, *pi, *pw, *cd, *ms, *pm, *cw;
    if (!PyArg_ParseTuple(args, "O!OOOO!OOOlll", &PyType_Type, &comm_cls, &ps, &pi, &pw, &PyDict_Type, &cd, &ms, &pm,
                          &cw, &TAG_UB_C, &PROC_NULL_C, &P2P_C))
        return NULL;
    if (ProcessType == NULL || actors_dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    Py_XSETREF(py_send, Py_NewRef(ps));
    Py_XSETREF(py_irecv_m, Py_NewRef(pi));
    Py_XSETREF(py_world_impl, Py_NewRef(pw));
    Py_XSETREF(comm_dict, Py_NewRef(cd));
    Py_XSETREF(msgspec_mod, Py_NewRef(ms));
    Py_XSETREF(p2p_mod, Py_NewRef(pm));
    Py_XSETREF(comm_world_obj, Py_NewRef(cw));
    Py_XSETREF(p2p_const, PyLong_FromLong(P2P_C));
    if (p2p_const == NULL)
        return NULL;
    if (s__impl == NULL && ((s__impl = PyUnicode_InternFromString("_impl")) == NULL ||
                            (s_rsize = PyUnicode_InternFromString("rsize")) == NULL ||
                            (s_parse_send = PyUnicode_InternFromString("parse_send")) == NULL ||
                            (s_parse_recv = PyUnicode_InternFromString("parse_recv")) == NULL ||
                            (s_pack_message = PyUnicode_InternFromString("pack_message")) == NULL ||
                            (s_count = PyUnicode_InternFromString("count")) == NULL ||
                            (s_datatype = PyUnicode_InternFromString("datatype")) == NULL ||
                            (s_isend = PyUnicode_InternFromString("isend")) == NULL ||
                            (s_irecv = PyUnicode_InternFromString("irecv")) == NULL ||
                            (s_wait = PyUnicode_InternFromString("wait")) == NULL ||
                            (s_comm_world = PyUnicode_InternFromString("comm_world")) == NULL ||
                            (s_blocking_kw = Py_BuildValue("(N)", PyUnicode_InternFromString("blocking"))) == NULL))
        return NULL;
    PyObject *send = PyDescr_NewMethod((PyTypeObject *)comm_cls, &facade_send_def);
    PyObject *irecv = send == NULL ? NULL : PyDescr_NewMethod((PyTypeObject *)comm_cls, &facade_irecv_def);
    if (irecv == NULL) {
        Py_XDECREF(send);
        return NULL;
    }
    return Py_BuildValue("(NN)", send, irecv);
}

/* -- the bodies of Comm.Send and Comm.Recv ------------------------------------------------ */
static PyObject *py_send_body, *py_recv_body, *send_tag_default, *recv_defaults[3], *s_buf, *s_dest, *s_source,
    *s_status, *s_error, *s_tag, *s_MPI_Send, *s_MPI_Recv, *s__send, *s__irecv, *s_Request, *s__wrap, *s__complete;
static slot_cache c_req_error, c_p2p_wait;

/* out[0..n) from the vector (self, positional, keywords named names[1..n)); 1, or 0 when a
 * keyword is unknown or given twice (the Python function raises) */
static int
bind(PyObject *const *args, size_t nargsf, PyObject *kwnames, PyObject *const *names, Py_ssize_t n, PyObject **out)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1 || nargs > n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t j = 1;
        while (j < n && kw != names[j])  /* the names are interned, as a call's keywords are */
            j++;
        if (j == n)
            for (j = 1; j < n && !(PyUnicode_Check(kw) && PyUnicode_Compare(kw, names[j]) == 0); j++)
                ;
        if (j == n || out[j] != NULL)
            return 0;
        out[j] = args[nargs + k];
    }
    return 1;
}

static PyObject *
comm_send_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Send(self, buf, dest, tag=0): self._send(buf, dest, tag, "MPI_Send", False) */
    PyObject *names[4] = {NULL, s_buf, s_dest, s_tag}, *a[4];
    if (!bind(args, nargsf, kwnames, names, 4, a) || a[1] == NULL || a[2] == NULL)
        return PyObject_Vectorcall(py_send_body, args, nargsf, kwnames);
    PyObject *margs[6] = {a[0], a[1], a[2], a[3] != NULL ? a[3] : send_tag_default, s_MPI_Send, Py_False};
    PyObject *r = cmethod_call(s__send, margs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* Recv's steps before blocking: the arguments bound, p2p.wait read, the receive posted
 * (self._irecv(buf, source, tag, "MPI_Recv")). 1 with o = {proc, request, wait} (new
 * references) and *status (borrowed); 0 when the Python body must run (an argument it
 * rejects); -1 error. Out of line, so that its frame is gone while the rank blocks. */
CEXT_OUTLINE int
recv_post(PyObject *const *args, size_t nargsf, PyObject *kwnames, PyObject **o, PyObject **status)
{
    PyObject *names[5] = {NULL, s_buf, s_source, s_tag, s_status}, *a[5];
    if (!bind(args, nargsf, kwnames, names, 5, a) || a[1] == NULL)
        return 0;
    for (int i = 2; i < 5; i++)
        if (a[i] == NULL)
            a[i] = recv_defaults[i - 2];
    *status = a[4];
    PyObject *wait = cached_get(p2p_mod, &c_p2p_wait, s_wait);
    if (wait == NULL)
        return -1;
    PyObject *pr = running_proc();
    PyObject *ireq = NULL;
    if (pr != NULL) {
        PyObject *margs[5] = {a[0], a[1], a[2], a[3], s_MPI_Recv};
        ireq = cmethod_call(s__irecv, margs, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    }
    if (ireq == NULL) {
        Py_XDECREF(pr);
        Py_DECREF(wait);
        return -1;
    }
    o[0] = pr;
    o[1] = ireq;
    o[2] = wait;
    return 1;
}

/* Recv's steps after the wait: if status is not None or req.error:
 * Request._wrap(req)._complete(status); None, or NULL */
CEXT_OUTLINE PyObject *
recv_done(PyObject *req, PyObject *status)
{
    PyObject *r = NULL;
    int complete = status != Py_None;
    if (!complete) {
        PyObject *err = cached_get(req, &c_req_error, s_error);
        complete = err == NULL ? -1 : PyObject_IsTrue(err);
        Py_XDECREF(err);
    }
    if (complete > 0) {
        PyObject *request = dict_global(comm_dict, s_Request);
        PyObject *w = request == NULL ? NULL : call_method1(request, s__wrap, req);
        r = w == NULL ? NULL : call_method1(w, s__complete, status);
        Py_XDECREF(w);
        Py_XDECREF(r);
        if (r == NULL)
            complete = -1;
    }
    Py_DECREF(req);
    if (complete < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
comm_recv_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Recv(self, buf, source=ANY_SOURCE, tag=ANY_TAG, status=None):
     *     req = p2p.wait(_actors._current.data, self._irecv(buf, source, tag, "MPI_Recv"))
     *     if status is not None or req.error: Request._wrap(req)._complete(status) */
    PyObject *o[3], *status;
    int k = recv_post(args, nargsf, kwnames, o, &status);
    if (k <= 0)
        return k < 0 ? NULL : PyObject_Vectorcall(py_recv_body, args, nargsf, kwnames);
    PyObject *req = call_direct(o[2], o, 2, NULL);  /* wait(proc, request) */
    Py_DECREF(o[1]);
    Py_DECREF(o[0]);
    Py_DECREF(o[2]);
    if (req == NULL)
        return NULL;
    return recv_done(req, status);
}

static PyMethodDef send_body_def = {"Send", (PyCFunction)(void (*)(void))comm_send_body,
                                    METH_FASTCALL | METH_KEYWORDS, "Comm.Send's body, compiled"};
static PyMethodDef recv_body_def = {"Recv", (PyCFunction)(void (*)(void))comm_recv_body,
                                    METH_FASTCALL | METH_KEYWORDS, "Comm.Recv's body, compiled"};

/* setup_bodies(send_call, Send, recv_call, Recv): the compiled bodies put in the two MpiCall
 * objects (used by their fast path only; the watched calls keep the Python functions) */
static PyObject *
setup_bodies(PyObject *module, PyObject *args)
{
    PyObject *sc, *sf, *rc, *rf;
    if (!PyArg_ParseTuple(args, "O!OO!O", &MpiCallType, &sc, &sf, &MpiCallType, &rc, &rf))
        return NULL;
    PyObject *sd = PyObject_GetAttrString(sf, "__defaults__");
    PyObject *rd = sd == NULL ? NULL : PyObject_GetAttrString(rf, "__defaults__");
    if (rd == NULL || !PyTuple_Check(sd) || PyTuple_GET_SIZE(sd) != 1 || !PyTuple_Check(rd) ||
        PyTuple_GET_SIZE(rd) != 3) {
        Py_XDECREF(sd);
        Py_XDECREF(rd);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Send/Recv do not have the expected defaults");
        return NULL;
    }
#define STR(var, text) if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return NULL
    STR(s_buf, "buf"); STR(s_dest, "dest"); STR(s_source, "source"); STR(s_status, "status"); STR(s_error, "error");
    STR(s_tag, "tag");
    STR(s_MPI_Send, "MPI_Send"); STR(s_MPI_Recv, "MPI_Recv"); STR(s__send, "_send"); STR(s__irecv, "_irecv");
    STR(s_Request, "Request"); STR(s__wrap, "_wrap"); STR(s__complete, "_complete");
#undef STR
    Py_XSETREF(send_tag_default, Py_NewRef(PyTuple_GET_ITEM(sd, 0)));
    for (int i = 0; i < 3; i++)
        Py_XSETREF(recv_defaults[i], Py_NewRef(PyTuple_GET_ITEM(rd, i)));
    Py_DECREF(sd);
    Py_DECREF(rd);
    PyObject *sb = PyCFunction_New(&send_body_def, NULL);
    PyObject *rb = sb == NULL ? NULL : PyCFunction_New(&recv_body_def, NULL);
    if (rb == NULL) {
        Py_XDECREF(sb);
        return NULL;
    }
    Py_XSETREF(py_send_body, Py_NewRef(sf));
    Py_XSETREF(py_recv_body, Py_NewRef(rf));
    Py_XSETREF(((MpiCall *)sc)->body, sb);
    Py_XSETREF(((MpiCall *)rc)->body, rb);
    Py_RETURN_NONE;
}

/* -- the nonblocking path: Comm._isend, the bodies of Comm.Isend, Comm.Irecv, Request.Waitall --
 * What is not the common case goes to the Python function before anything is done: argument
 * errors and PROC_NULL (in _isend, as _send), keywords the body does not know, statuses,
 * requests that are not plain point-to-point ones (persistent, generalized, subclasses), a
 * recorded time-independent trace; after Waitall's blocking, a failed or erroneous request, a
 * receiver overhead (smpi/or) or a traced wait go to request._complete_all. */
static PyObject *py_isend_m, *py_isend_body, *py_irecv_body, *py_waitall_body, *isend_tag_default,
    *irecv_defaults[2], *request_dict, *s_requests, *s_statuses, *s_MPI_Isend, *s_MPI_Irecv, *s__isend,
    *s_ti, *s_o_recv, *s_state, *s_kind, *s_persistent, *s_block_all, *s__complete_all;
static PyTypeObject *RequestType, *SendReqType, *RecvReqType;
static Py_ssize_t rq_impl = -1, rq_obj = -1;

/* Request._wrap(req) (new reference) */
static PyObject *
wrap_request(PyObject *req)
{
    if (rq_impl >= 0 && (Py_TYPE(req) == SendReqType || Py_TYPE(req) == RecvReqType)) {
        PyObject *r = RequestType->tp_alloc(RequestType, 0);
        if (r == NULL)
            return NULL;
        bs_put(r, rq_impl, req);
        bs_put(r, rq_obj, Py_False);
        return r;
    }
    PyObject *request = dict_global(comm_dict, s_Request);
    return request == NULL ? NULL : call_method1(request, s__wrap, req);
}

/* fn(self, *args, **kwargs) from a vectorcall without self */
static PyObject *
call_with_self(PyObject *fn, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[16], **v = small;
    if (nargs + nkw + 1 > 16 && (v = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nargs + nkw + 1))) == NULL)
        return PyErr_NoMemory();
    v[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        v[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(fn, v, (size_t)nargs + 1, kwnames);
    if (v != small)
        PyMem_Free(v);
    return r;
}

static PyObject *
facade_isend(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* _isend(self, buf, dest, tag, call, sync, owned=False): check_dest, check_send_tag,
     * spec = parse_send(buf), Request._wrap(p2p.isend(proc(), impl, P2P, pack_message(spec),
     * spec.nbytes, dest, tag, call, sync)) */
    if (kwnames != NULL || (nargs != 5 && !(nargs == 6 && args[5] == Py_False)))
        return call_with_self(py_isend_m, self, args, nargs, kwnames);
    PyObject *buf = args[0], *dest = args[1], *tag = args[2], *call = args[3], *sync = args[4];
    if (!PyLong_CheckExact(dest) || !PyLong_CheckExact(tag))
        return call_with_self(py_isend_m, self, args, nargs, NULL);
    PyObject *impl = plain_pair_impl(self, dest, tag);
    if (impl == NULL) {  /* the checks raise, or PROC_NULL: Python */
        if (PyErr_Occurred())
            return NULL;
        return call_with_self(py_isend_m, self, args, nargs, NULL);
    }
    PyObject *r = NULL, *spec = NULL, *payload = NULL, *nbytes = NULL, *req = NULL, *pr = NULL, *fn;
    if (send_message(buf, &spec, &payload, &nbytes) < 0)
        goto out;
    pr = running_proc();
    fn = pr == NULL ? NULL : PyObject_GetAttr(p2p_mod, s_isend);
    if (fn == NULL)
        goto out;
    {
        PyObject *iargs[9] = {pr, impl, p2p_const, payload, nbytes, dest, tag, call, sync};
        req = call_direct(fn, iargs, 9, NULL);
        Py_DECREF(fn);
    }
    if (req != NULL)
        r = wrap_request(req);
out:
    Py_XDECREF(req);
    Py_XDECREF(pr);
    Py_XDECREF(nbytes);
    Py_XDECREF(payload);
    Py_XDECREF(spec);
    Py_DECREF(impl);
    return r;
}

static PyMethodDef facade_isend_def = {"_isend", (PyCFunction)(void (*)(void))facade_isend,
                                       METH_FASTCALL | METH_KEYWORDS, "Comm._isend, compiled (smpy.mpi._callaccel)"};

static PyObject *
comm_isend_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Isend(self, buf, dest, tag=0): return self._isend(buf, dest, tag, "MPI_Isend", False) */
    PyObject *names[4] = {NULL, s_buf, s_dest, s_tag}, *a[4];
    if (!bind(args, nargsf, kwnames, names, 4, a) || a[1] == NULL || a[2] == NULL)
        return PyObject_Vectorcall(py_isend_body, args, nargsf, kwnames);
    PyObject *margs[6] = {a[0], a[1], a[2], a[3] != NULL ? a[3] : isend_tag_default, s_MPI_Isend, Py_False};
    return method_call(s__isend, margs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET);
}

static PyObject *
comm_irecv_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Irecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG):
     *     return Request._wrap(self._irecv(buf, source, tag, "MPI_Irecv")) */
    PyObject *names[4] = {NULL, s_buf, s_source, s_tag}, *a[4];
    if (!bind(args, nargsf, kwnames, names, 4, a) || a[1] == NULL)
        return PyObject_Vectorcall(py_irecv_body, args, nargsf, kwnames);
    PyObject *margs[5] = {a[0], a[1], a[2] != NULL ? a[2] : irecv_defaults[0],
                          a[3] != NULL ? a[3] : irecv_defaults[1], s_MPI_Irecv};
    PyObject *req = method_call(s__irecv, margs, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    if (req == NULL)
        return NULL;
    PyObject *r = wrap_request(req);
    Py_DECREF(req);
    return r;
}

/* the plain request's implementation, Py_None, or NULL (not the common case; no error) */
static PyObject *
plain_impl(PyObject *r)
{
    if (Py_TYPE(r) != RequestType)
        return NULL;
    PyObject *impl = SLOT(r, rq_impl);
    if (impl == NULL || (impl != Py_None && Py_TYPE(impl) != SendReqType && Py_TYPE(impl) != RecvReqType))
        return NULL;
    return impl;
}

/* after blocking, the completion of impl has nothing to do but release the handle: 1 yes, 0 no
 * (request._complete_all does it), -1 error */
static int
completes_plainly(PyObject *impl, int o_recv)
{
    if (impl == Py_None)
        return 1;
    PyObject *names[5] = {s_state, s_ti, s_error, s_persistent, s_kind};
    PyObject *v[5] = {NULL};
    int ok = 1;
    for (int i = 0; i < 5 && ok == 1; i++) {
        v[i] = PyObject_GetAttr(impl, names[i]);
        if (v[i] == NULL)
            ok = -1;
    }
    if (ok == 1)  /* state == FAILED (2), ti, error, persistent, receiver overhead */
        ok = !(int_eq(v[0], 2) != 0 || v[1] != Py_None || int_eq(v[2], 0) != 1 || v[3] != Py_False ||
               (o_recv && int_eq(v[4], 1) != 0));
    for (int i = 0; i < 5; i++)
        Py_XDECREF(v[i]);
    return PyErr_Occurred() ? -1 : ok;
}

static PyObject *
request_waitall_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Waitall(cls, requests, statuses=None): _block_all(requests); p2p.ti_waitall(proc(),
     * [r._impl for r in requests]); _complete_all(requests, statuses); return True */
    PyObject *names[3] = {NULL, s_requests, s_statuses}, *a[3];
    if (!bind(args, nargsf, kwnames, names, 3, a) || a[1] == NULL || (a[2] != NULL && a[2] != Py_None) ||
        !(PyList_CheckExact(a[1]) || PyTuple_CheckExact(a[1])) || rq_impl < 0)
        return PyObject_Vectorcall(py_waitall_body, args, nargsf, kwnames);
    PyObject *seq = a[1];
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *impls = PyList_New(n);
    if (impls == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *impl = plain_impl(PySequence_Fast_GET_ITEM(seq, i));
        if (impl == NULL) {
            Py_DECREF(impls);
            return PyObject_Vectorcall(py_waitall_body, args, nargsf, kwnames);
        }
        PyList_SET_ITEM(impls, i, Py_NewRef(impl));
    }
    PyObject *pr = running_proc();
    PyObject *world = pr == NULL ? NULL : pget(pr, pr_world, s_world);
    int traced = world == NULL ? -1 : attr_not_none(world, s_ti);
    int o_recv = traced != 0 ? traced : attr_not_none(pr, s_o_recv);
    Py_XDECREF(world);
    PyObject *r = NULL;
    if (traced != 0 || o_recv < 0) {
        Py_DECREF(impls);
        Py_XDECREF(pr);
        return traced < 0 || o_recv < 0 ? NULL : PyObject_Vectorcall(py_waitall_body, args, nargsf, kwnames);
    }
    /* p2p.block_all(impls) */
    PyObject *fn = PyObject_GetAttr(p2p_mod, s_block_all);
    PyObject *x = fn == NULL ? NULL : PyObject_CallOneArg(fn, impls);
    Py_XDECREF(fn);
    if (x == NULL)
        goto out;
    Py_DECREF(x);
    /* the list may have changed meanwhile (the program's other ranks ran): read it again */
    int plain = PySequence_Fast_GET_SIZE(seq) == n;
    for (Py_ssize_t i = 0; i < n && plain == 1; i++) {
        PyObject *impl = plain_impl(PySequence_Fast_GET_ITEM(seq, i));
        plain = impl == NULL ? 0 : completes_plainly(impl, o_recv);
    }
    if (plain < 0)
        goto out;
    if (plain) {
        for (Py_ssize_t i = 0; i < n; i++)
            bs_put(PySequence_Fast_GET_ITEM(seq, i), rq_impl, Py_None);
    } else {
        PyObject *ca = dict_global(request_dict, s__complete_all);
        PyObject *cargs[2] = {seq, Py_None};
        x = ca == NULL ? NULL : PyObject_Vectorcall(ca, cargs, 2, NULL);
        if (x == NULL)
            goto out;
        Py_DECREF(x);
    }
    r = Py_NewRef(Py_True);
out:
    Py_DECREF(impls);
    Py_DECREF(pr);
    return r;
}

/* -- the body of Comm.Sendrecv ---------------------------------------------------------------
 * Its common case: both pairs plain (int ranks in range, tags in range: no wildcard, no
 * PROC_NULL), no status, no time-independent trace recorded; the rest goes to the Python
 * function before anything is done. Both messages are completed as Request.Wait completes
 * them, without the nested MPI_Wait wrappers (which do nothing at depth > 0 on the fast path). */
static PyObject *py_sendrecv_body, *sendrecv_defaults[5], *s_sendbuf, *s_sendtag, *s_recvbuf, *s_recvtag,
    *s_MPI_Sendrecv, *s_MPI_Wait, *s_block_on, *s_finish, *wait_label_fn, *partial_type;
static slot_cache c_sreq_state, c_rreq_state;

/* Request._wrap(req).Wait() for a plain point-to-point request: p2p.wait(pr, req, "MPI_Wait")
 * while it is pending (block_on with the label's partial(wait_label, "MPI_Wait", req), then
 * p2p.finish when it has work), then Request._complete(None), done here when it has nothing
 * to do but release the handle (0; -1 with an error set) */
static int
wait_plain(PyObject *pr, PyObject *req, int o_recv, slot_cache *c_state)
{
    PyObject *state = cached_get(req, c_state, s_state);
    int pending = state == NULL ? -1 : int_eq(state, 0);
    Py_XDECREF(state);
    if (pending < 0)
        return -1;
    if (pending) {
        PyObject *p2p_dict = PyModule_GetDict(p2p_mod);  /* borrowed */
        PyObject *block = dict_global(p2p_dict, s_block_on);
        if (block == NULL)
            return -1;
        PyObject *largs[3] = {wait_label_fn, s_MPI_Wait, req};
        PyObject *label = PyObject_Vectorcall(partial_type, largs, 3, NULL);
        if (label == NULL)
            return -1;
        PyObject *bargs[2] = {req, label};
        PyObject *x = call_direct(block, bargs, 2, NULL);
        Py_DECREF(label);
        if (x == NULL)
            return -1;
        Py_DECREF(x);
        /* p2p.wait's finish(proc, req) when it has work: req.state == FAILED, req.ti, or a
           receive with a receiver overhead */
        int plain = completes_plainly(req, o_recv);
        if (plain < 0)
            return -1;
        if (!plain) {
            PyObject *st = cached_get(req, c_state, s_state);
            PyObject *ti = st == NULL ? NULL : PyObject_GetAttr(req, s_ti);
            PyObject *kind = ti == NULL ? NULL : PyObject_GetAttr(req, s_kind);
            int work = kind == NULL ? -1 : int_eq(st, 2);
            if (work == 0)
                work = ti != Py_None;
            if (work == 0 && o_recv)
                work = int_eq(kind, 1);
            Py_XDECREF(st);
            Py_XDECREF(ti);
            Py_XDECREF(kind);
            PyObject *fin = work > 0 ? dict_global(p2p_dict, s_finish) : NULL;
            PyObject *fargs[2] = {pr, req};
            x = fin == NULL ? NULL : PyObject_Vectorcall(fin, fargs, 2, NULL);
            if (work < 0 || (work > 0 && x == NULL))
                return -1;
            Py_XDECREF(x);
        }
    }
    int plain = completes_plainly(req, o_recv);
    if (plain != 0)
        return plain < 0 ? -1 : 0;
    PyObject *w = wrap_request(req);  /* finish, release, raise the request's error */
    PyObject *x = w == NULL ? NULL : call_method1(w, s__complete, Py_None);
    Py_XDECREF(w);
    if (x == NULL)
        return -1;
    Py_DECREF(x);
    return 0;
}

/* 0 <= peer < impl.rsize and 0 <= tag <= TAG_UB, exact ints: 1; 0 otherwise (no error) */
static int
plain_pair_of(PyObject *impl, PyObject *peer, PyObject *tag)
{
    PyObject *rsize = cached_get(impl, &c_impl_rsize, s_rsize);
    if (rsize == NULL)
        return -1;
    int ok = in_range(peer, rsize);
    Py_DECREF(rsize);
    return ok > 0 ? tag_ok(tag) > 0 : 0;
}

static PyObject *
comm_sendrecv_body(PyObject *module, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE, recvtag=ANY_TAG,
     *          status=None):
     *     sspec = msgspec.parse_send(sendbuf)
     *     r = self._irecv(recvbuf, source, recvtag, "MPI_Sendrecv")
     *     s = p2p.isend(proc(), impl, P2P, pack_message(sspec), sspec.nbytes, dest, sendtag,
     *                   "MPI_Sendrecv", False)
     *     Request._wrap(s).Wait(); Request._wrap(r).Wait(status) */
    PyObject *names[8] = {NULL, s_sendbuf, s_dest, s_sendtag, s_recvbuf, s_source, s_recvtag, s_status}, *a[8];
    if (!bind(args, nargsf, kwnames, names, 8, a) || a[1] == NULL || a[2] == NULL)
        return PyObject_Vectorcall(py_sendrecv_body, args, nargsf, kwnames);
    for (int i = 3; i < 8; i++)
        if (a[i] == NULL)
            a[i] = sendrecv_defaults[i - 3];
    if (a[7] != Py_None || !PyLong_CheckExact(a[2]) || !PyLong_CheckExact(a[3]) || !PyLong_CheckExact(a[5]) ||
        !PyLong_CheckExact(a[6]))
        return PyObject_Vectorcall(py_sendrecv_body, args, nargsf, kwnames);
    PyObject *self = a[0], *dest = a[2], *sendtag = a[3], *source = a[5], *recvtag = a[6];
    PyObject *impl = plain_pair_impl(self, dest, sendtag);
    int plain = impl == NULL ? 0 : plain_pair_of(impl, source, recvtag);
    if (plain <= 0) {  /* the checks raise, wildcards, PROC_NULL: Python */
        Py_XDECREF(impl);
        if (plain < 0 || PyErr_Occurred())
            return NULL;
        return PyObject_Vectorcall(py_sendrecv_body, args, nargsf, kwnames);
    }
    PyObject *pr = running_proc();
    PyObject *world = pr == NULL ? NULL : pget(pr, pr_world, s_world);
    int traced = world == NULL ? -1 : attr_not_none(world, s_ti);
    int o_recv = traced != 0 ? traced : attr_not_none(pr, s_o_recv);
    Py_XDECREF(world);
    if (traced != 0 || o_recv < 0) {  /* a time-independent trace records the call: Python */
        Py_DECREF(impl);
        Py_XDECREF(pr);
        return traced < 0 || o_recv < 0 ? NULL : PyObject_Vectorcall(py_sendrecv_body, args, nargsf, kwnames);
    }
    PyObject *r = NULL, *spec = NULL, *payload = NULL, *nbytes = NULL, *rreq = NULL, *sreq = NULL, *fn;
    /* both messages are parsed before anything is posted; the send is packed after the
       receive is posted, as in the Python body */
    fn = cached_get(msgspec_mod, &c_msgspec_mod_parse_send, s_parse_send);
    spec = fn == NULL ? NULL : PyObject_CallOneArg(fn, a[1]);
    Py_XDECREF(fn);
    if (spec == NULL)
        goto out;
    {
        PyObject *margs[5] = {self, a[4], source, recvtag, s_MPI_Sendrecv};
        rreq = method_call(s__irecv, margs, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    }
    if (rreq == NULL)
        goto out;
    fn = dict_global(comm_dict, s_pack_message);  /* borrowed */
    payload = fn == NULL ? NULL : PyObject_CallOneArg(fn, spec);
    if (payload == NULL)
        goto out;
    {
        PyObject *count = cached_get(spec, &c_spec_count, s_count);
        PyObject *dt = count == NULL ? NULL : cached_get(spec, &c_spec_datatype, s_datatype);
        PyObject *size = dt == NULL ? NULL : cached_get(dt, &c_dt_size, s_size);
        nbytes = size == NULL ? NULL : PyNumber_Multiply(count, size);
        Py_XDECREF(size);
        Py_XDECREF(dt);
        Py_XDECREF(count);
    }
    fn = nbytes == NULL ? NULL : PyObject_GetAttr(p2p_mod, s_isend);
    if (fn == NULL)
        goto out;
    {
        PyObject *iargs[9] = {pr, impl, p2p_const, payload, nbytes, dest, sendtag, s_MPI_Sendrecv, Py_False};
        sreq = call_direct(fn, iargs, 9, NULL);
        Py_DECREF(fn);
    }
    if (sreq == NULL || wait_plain(pr, sreq, o_recv, &c_sreq_state) < 0 ||
        wait_plain(pr, rreq, o_recv, &c_rreq_state) < 0)
        goto out;
    r = Py_NewRef(Py_None);
out:
    Py_XDECREF(sreq);
    Py_XDECREF(rreq);
    Py_XDECREF(nbytes);
    Py_XDECREF(payload);
    Py_XDECREF(spec);
    Py_DECREF(pr);
    Py_DECREF(impl);
    return r;
}

static PyMethodDef sendrecv_body_def = {"Sendrecv", (PyCFunction)(void (*)(void))comm_sendrecv_body,
                                        METH_FASTCALL | METH_KEYWORDS, "Comm.Sendrecv's body, compiled"};

static PyMethodDef isend_body_def = {"Isend", (PyCFunction)(void (*)(void))comm_isend_body,
                                     METH_FASTCALL | METH_KEYWORDS, "Comm.Isend's body, compiled"};
static PyMethodDef irecv_body_def = {"Irecv", (PyCFunction)(void (*)(void))comm_irecv_body,
                                     METH_FASTCALL | METH_KEYWORDS, "Comm.Irecv's body, compiled"};
static PyMethodDef waitall_body_def = {"Waitall", (PyCFunction)(void (*)(void))request_waitall_body,
                                       METH_FASTCALL | METH_KEYWORDS, "Request.Waitall's body, compiled"};

static Py_ssize_t
slot_or_fail(PyTypeObject *t, const char *name)
{
    Py_ssize_t off = slot_offset(t, name);
    if (off < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", t->tp_name, name);
    return off;
}

/* setup_nonblocking(Comm, Comm._isend, isend_call, Isend, irecv_call, Irecv, waitall_call,
 * Waitall, Request, SendRequest, RecvRequest) -> the compiled _isend descriptor; the three
 * bodies are put in their MpiCall objects (after setup_bodies) */
static PyObject *
setup_nonblocking(PyObject *module, PyObject *args)
{
    PyObject *comm_cls, *pi, *ic, *ib, *rc, *rb, *wc, *wb, *rq, *st, *rt;
    if (!PyArg_ParseTuple(args, "O!OO!OO!OO!OO!O!O!", &PyType_Type, &comm_cls, &pi, &MpiCallType, &ic, &ib,
                          &MpiCallType, &rc, &rb, &MpiCallType, &wc, &wb, &PyType_Type, &rq, &PyType_Type, &st,
                          &PyType_Type, &rt))
        return NULL;
    if (comm_dict == NULL || s_buf == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup_facade() and setup_bodies() first");
        return NULL;
    }
    PyObject *idef = PyObject_GetAttrString(ib, "__defaults__");
    PyObject *rdef = idef == NULL ? NULL : PyObject_GetAttrString(rb, "__defaults__");
    PyObject *g = rdef == NULL ? NULL : PyObject_GetAttrString(wb, "__globals__");
    if (g == NULL || !PyTuple_Check(idef) || PyTuple_GET_SIZE(idef) != 1 || !PyTuple_Check(rdef) ||
        PyTuple_GET_SIZE(rdef) != 2 || !PyDict_Check(g)) {
        Py_XDECREF(idef);
        Py_XDECREF(rdef);
        Py_XDECREF(g);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Isend/Irecv/Waitall do not have the expected defaults");
        return NULL;
    }
    Py_XSETREF(isend_tag_default, Py_NewRef(PyTuple_GET_ITEM(idef, 0)));
    for (int i = 0; i < 2; i++)
        Py_XSETREF(irecv_defaults[i], Py_NewRef(PyTuple_GET_ITEM(rdef, i)));
    Py_XSETREF(request_dict, g);
    Py_DECREF(idef);
    Py_DECREF(rdef);
#define STR(var, text) if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return NULL
    STR(s_requests, "requests"); STR(s_statuses, "statuses"); STR(s_MPI_Isend, "MPI_Isend");
    STR(s_MPI_Irecv, "MPI_Irecv"); STR(s__isend, "_isend"); STR(s_ti, "ti"); STR(s_o_recv, "o_recv");
    STR(s_state, "state"); STR(s_kind, "kind"); STR(s_persistent, "persistent"); STR(s_block_all, "block_all");
    STR(s__complete_all, "_complete_all");
#undef STR
    rq_impl = slot_or_fail((PyTypeObject *)rq, "_impl");
    rq_obj = rq_impl < 0 ? -1 : slot_or_fail((PyTypeObject *)rq, "_obj");
    if (rq_obj < 0) {
        rq_impl = -1;
        return NULL;
    }
    Py_XSETREF(RequestType, (PyTypeObject *)Py_NewRef(rq));
    Py_XSETREF(SendReqType, (PyTypeObject *)Py_NewRef(st));
    Py_XSETREF(RecvReqType, (PyTypeObject *)Py_NewRef(rt));
    Py_XSETREF(py_isend_m, Py_NewRef(pi));
    Py_XSETREF(py_isend_body, Py_NewRef(ib));
    Py_XSETREF(py_irecv_body, Py_NewRef(rb));
    Py_XSETREF(py_waitall_body, Py_NewRef(wb));
    PyObject *isb = PyCFunction_New(&isend_body_def, NULL);
    PyObject *irb = isb == NULL ? NULL : PyCFunction_New(&irecv_body_def, NULL);
    PyObject *wab = irb == NULL ? NULL : PyCFunction_New(&waitall_body_def, NULL);
    PyObject *desc = wab == NULL ? NULL : PyDescr_NewMethod((PyTypeObject *)comm_cls, &facade_isend_def);
    if (desc == NULL) {
        Py_XDECREF(isb);
        Py_XDECREF(irb);
        Py_XDECREF(wab);
        return NULL;
    }
    Py_XSETREF(((MpiCall *)ic)->body, isb);
    Py_XSETREF(((MpiCall *)rc)->body, irb);
    Py_XSETREF(((MpiCall *)wc)->body, wab);
    return desc;
}

/* setup_sendrecv(sendrecv_call, Sendrecv, wait_label, functools.partial): the compiled body put
 * in Sendrecv's MpiCall (after setup_nonblocking); wait_label(label, req) is the text of
 * p2p.wait's deadlock label */
static PyObject *
setup_sendrecv(PyObject *module, PyObject *args)
{
    PyObject *sc, *sf, *lf, *pt;
    if (!PyArg_ParseTuple(args, "O!OOO", &MpiCallType, &sc, &sf, &lf, &pt))
        return NULL;
    if (RequestType == NULL || s_ti == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup_nonblocking() first");
        return NULL;
    }
    PyObject *d = PyObject_GetAttrString(sf, "__defaults__");
    if (d == NULL || !PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 5) {
        Py_XDECREF(d);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Sendrecv does not have the expected defaults");
        return NULL;
    }
    for (int i = 0; i < 5; i++)
        Py_XSETREF(sendrecv_defaults[i], Py_NewRef(PyTuple_GET_ITEM(d, i)));
    Py_DECREF(d);
#define STR(var, text) if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return NULL
    STR(s_sendbuf, "sendbuf"); STR(s_sendtag, "sendtag"); STR(s_recvbuf, "recvbuf"); STR(s_recvtag, "recvtag");
    STR(s_MPI_Sendrecv, "MPI_Sendrecv"); STR(s_MPI_Wait, "MPI_Wait"); STR(s_block_on, "block_on");
    STR(s_finish, "finish");
#undef STR
    Py_XSETREF(wait_label_fn, Py_NewRef(lf));
    Py_XSETREF(partial_type, Py_NewRef(pt));
    PyObject *b = PyCFunction_New(&sendrecv_body_def, NULL);
    if (b == NULL)
        return NULL;
    Py_XSETREF(py_sendrecv_body, Py_NewRef(sf));
    Py_XSETREF(((MpiCall *)sc)->body, b);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup_bodies", setup_bodies, METH_VARARGS, "setup_bodies(Send's MpiCall, Send, Recv's MpiCall, Recv)"},
    {"setup_nonblocking", setup_nonblocking, METH_VARARGS, "setup_nonblocking(Comm, Comm._isend, Isend's MpiCall, "
     "Isend, Irecv's MpiCall, Irecv, Waitall's MpiCall, Waitall, Request, SendRequest, RecvRequest) -> _isend"},
    {"setup_sendrecv", setup_sendrecv, METH_VARARGS,
     "setup_sendrecv(Sendrecv's MpiCall, Sendrecv, wait_label, functools.partial)"},
    {"setup", setup_calls, METH_VARARGS, "setup(Process, current, _call.__dict__, _hooked, "
     "coerce_ints, MPIException, after_finalize, smpy.kernel.actors.__dict__)"},
    {"setup_parse", setup_parse, METH_VARARGS, "setup_parse(np.ndarray, Datatype, DATATYPE_NULL impl, "
     "from_typechar, _simple, parse_send, parse_recv, BufSpec)"},
    {"parse_send", (PyCFunction)(void (*)(void))parse_send, METH_FASTCALL | METH_KEYWORDS,
     "smpy.mpi.msgspec.parse_send, compiled"},
    {"parse_recv", (PyCFunction)(void (*)(void))parse_recv, METH_FASTCALL | METH_KEYWORDS,
     "smpy.mpi.msgspec.parse_recv, compiled"},
    {"setup_facade", setup_facade, METH_VARARGS, "setup_facade(Comm, Comm._send, Comm._irecv, "
     "_WorldComm._impl.fget, comm.__dict__, msgspec, p2p, COMM_WORLD, TAG_UB, PROC_NULL, P2P) -> "
     "(_send, _irecv) descriptors (after setup())"},
    {"world_impl", world_impl, METH_O, "_WorldComm._impl's getter, compiled"},
    {"mpicall", make_mpicall, METH_VARARGS, "mpicall(wrapper, fn, name, ints, after_finalize_ok): "
     "the compiled fast path of smpy.mpi._call.mpicall's wrapper"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_callaccel", .m_doc = "smpy's compiled MPI call wrapper", .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__callaccel(void)
{
    INTERN(s_current, "_current"); INTERN(s_data, "data");
    INTERN(s_depth, "depth"); INTERN(s_world, "world"); INTERN(s_finalized, "finalized");
    INTERN(s_mpi_calls, "mpi_calls"); INTERN(s_bench, "bench"); INTERN(s_sampling, "sampling");
    INTERN(s_tracer, "tracer"); INTERN(s_probe_polled, "probe_polled"); INTERN(s_timing, "timing");
    INTERN(s_measure, "measure"); INTERN(s_error_hook, "error_hook");
    INTERN(s_regions, "regions"); INTERN(s_count_faults, "count_faults"); INTERN(s_flush, "flush");
    INTERN(s_mark_faults, "mark_faults");
    INTERN(s_memory, "memory"); INTERN(s_untimed, "untimed"); INTERN(s__folder, "_folder"); INTERN(s_measured_s, "measured_s");
    INTERN(s_simulate, "simulate"); INTERN(s_threshold, "threshold"); INTERN(s__burst, "_burst");
    if ((f_zero = PyFloat_FromDouble(0.0)) == NULL)
        return NULL;
    INTERN(s_thread_time, "_thread_time"); INTERN(s_start, "start");
    if ((i_one = PyLong_FromLong(1)) == NULL)
        return NULL;
    if (PyType_Ready(&MpiCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&MpiCallType);
    if (PyModule_AddObject(m, "MpiCall", (PyObject *)&MpiCallType) < 0) {
        Py_DECREF(&MpiCallType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
