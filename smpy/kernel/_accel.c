/* The optional compiled accelerator of the per-message path (issue 24, item 1).
 *
 * Each function here is a line-by-line C translation of a Python function that stays the
 * reference (the pure path, always used when this file cannot be compiled):
 *
 *   engine_run       smpy.kernel.engine.Engine.run          (the event loop)
 *   engine_schedule  smpy.kernel.engine.Engine.schedule     (one event)
 *   activity_finish  smpy.kernel.activity.Activity._finish  (completion, wake-ups)
 *   activity_add_callback  smpy.kernel.activity.Activity.add_callback
 *   actor_resume     smpy.kernel.actors.Actor._resume       (switch into an actor)
 *   block_on         smpy.kernel.actors.block_on            (switch out of an actor)
 *   rate_set         smpy.kernel.activity.RateActivity._set_rate (floats: the same IEEE
 *                    operations in the same order; built with -ffp-contract=off)
 *   heap_push/heap_pop  heapq.heappush/heappop on the event heap (heapq's algorithm, the
 *                    (float time, int seq) keys compared in C)
 *
 * and Event objects' memory is kept for reuse (Event's tp_alloc/tp_free, see below).
 *
 * They do the same operations on the same Python objects in the same order, so a run gives
 * the same bytes either way (tests/kernel/test_accel.py checks each function against its
 * reference and whole runs both ways). What they save is the interpreter's work: frames,
 * bytecode dispatch, argument tuples and dicts. Slots of the kernel's classes are read at
 * their offsets (taken from the classes' member descriptors at setup) after a type check;
 * anything unexpected falls back to the generic attribute protocol. Rare paths (deadlock
 * report, daemon events, OS waits, time-advance listeners) call
 * back into the Python code. (The MPI facade's call wrapper has its own extension,
 * smpy/mpi/_callaccel.c: the kernel knows nothing of MPI.)
 *
 * Built on first use by smpy/kernel/accel.py (smpy/support/cext.py) with the system's C compiler and Python's
 * headers, into the user's cache directory; not part of the installed wheel's requirements.
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"
#undef PyObject_IsTrue
#define PyObject_IsTrue(v) cext_truth(v)  /* exact lists, tuples, dicts by their length */
#include <limits.h>

/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_activity_exception, c_activity_state, c_activity_waiters, c_engine_now, c_engine_ready,
    c_engine_stopping, c_ev_args, c_ev_cancelled, c_ev_fn, c_glet_parent, c_osp_waits,
    c_self_work_done, c_sig_slots;
#define M_DIRTY_CACHES 4
static slot_cache c_m_dirty[M_DIRTY_CACHES];

/* -- configuration set by setup() ------------------------------------------------------ */
static PyTypeObject *EventType, *ActivityType, *ActorType;
static PyObject *actors_dict;       /* smpy.kernel.actors.__dict__ (its _current global) */
static PyObject *ActorKilled, *SmpyInternalError, *ActivityFailed;
static PyObject *heappush, *heappop;
static PyObject *resume_descr;      /* the descriptor installed as Actor._resume */
static PyObject *schedule_descr;    /* the descriptor installed as Engine.schedule */
static PyObject *s_schedule;

static Py_ssize_t ev_time, ev_fn, ev_args, ev_cancelled;
static Py_ssize_t ac_engine, ac_state, ac_waiters, ac_callbacks, ac_exception, ac_finish_time;
static Py_ssize_t at_context, at_glet, at_waiting_for, at_wait_label, at_killed, at_engine, at_data, at_started;

static PyObject *s_now, *s_seq, *s_heap, *s_ready, *s_models, *s_stopping, *s_dirty, *s_update,
    *s_os_poller, *s_waits, *s_poll, *s_idle, *s_daemon_heap, *s_run_daemons, *s_advance,
    *s_on_time_advance, *s_slots, *s_rounds, *s_events_processed, *s_deadlock_check, *s_resume,
    *s_switch_in, *s_switch_out, *s_switch, *s_started, *s_parent, *s_popleft, *s_append, *s_current,
    *s_describe, *s_time, *s_fn, *s_args, *s_cancelled, *s_engine, *s_state, *s_waiters,
    *s_callbacks, *s_exception, *s_finish_time, *s_context, *s_glet, *s_waiting_for,
    *s_wait_label, *s_killed, *s_data;
static PyObject *f_zero, *i_one, *i_zero, *i_done, *i_failed, *empty_tuple;

/* attribute access that uses the slot when ``o`` is an instance of ``tp`` */
static inline PyObject *
get(PyObject *o, PyTypeObject *tp, Py_ssize_t off, PyObject *name)
{
    if (PyObject_TypeCheck(o, tp))
        return slot_get(o, off, name);
    return attr_get(o, name);
}

static inline int
set(PyObject *o, PyTypeObject *tp, Py_ssize_t off, PyObject *name, PyObject *v)
{
    if (PyObject_TypeCheck(o, tp)) {
        slot_set(o, off, v);
        return 0;
    }
    return attr_set(o, name, v);
}

/* a > b (op Py_GT) or a <= b (Py_LE), floats compared in C */
static inline int
compare(PyObject *a, PyObject *b, int op)
{
    if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return op == Py_GT ? x > y : x <= y;
    }
    return PyObject_RichCompareBool(a, b, op);
}

/* the engine's attributes: the hot ones are slots, the others in its instance dict. On an
 * Engine itself (not a subclass) whose class still has the member descriptors found at setup
 * (checked again when the class's version tag changes), a slot is read and set at its offset;
 * anything else goes through _cext.h's per-name caches (``d`` below is the engine itself). */
enum { E_now, E_seq, E_heap, E_daemon_heap, E_ready, E_models, E_stopping, E_events_processed, E_rounds,
       E_os_poller, E_on_time_advance, E_compact_at, E_N };
static const char *const engine_slot_names[E_N] = {"now", "_seq", "_heap", "_daemon_heap", "_ready", "_models",
    "stopping", "events_processed", "rounds", "os_poller", "on_time_advance", "_compact_at"};
static PyTypeObject *EngineType;
static Py_ssize_t en_off[E_N];
static PyObject *en_name[E_N], *en_descr[E_N];
static unsigned int en_version;
static int en_version_ok;

/* whether o is an Engine whose slots are read at their offsets: 1 or 0 */
CEXT_INLINE int
engine_plain(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t != EngineType)
        return 0;
    if (en_version_ok && t->tp_version_tag == en_version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return 1;
    for (int i = 0; i < E_N; i++)  /* the class changed (a method replaced): the slots still its? */
        if (_PyType_Lookup(t, en_name[i]) != en_descr[i])
            return en_version_ok = 0;
    en_version = t->tp_version_tag;
    en_version_ok = (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0;
    return 1;
}

CEXT_INLINE PyObject *
eget(PyObject *d, int i, PyObject *name)  /* new reference */
{
    return engine_plain(d) ? slot_get(d, en_off[i], name) : attr_get(d, name);
}

CEXT_INLINE int
etrue(PyObject *d, int i, PyObject *name)  /* bool(d.name) */
{
    if (engine_plain(d)) {
        PyObject *v = SLOT(d, en_off[i]);
        if (v != NULL)
            return v == Py_True ? 1 : v == Py_False || v == Py_None ? 0 : PyObject_IsTrue(v);
    }
    return attr_true(d, name);
}

CEXT_INLINE int
eset(PyObject *d, int i, PyObject *name, PyObject *v)
{
    if (engine_plain(d)) {
        slot_set(d, en_off[i], v);
        return 0;
    }
    return attr_set(d, name, v);
}

#define dget(d, f) eget(d, E_##f, s_##f)
#define dtrue(d, f) etrue(d, E_##f, s_##f)
#define dset(d, f, v) eset(d, E_##f, s_##f, v)

static PyObject *
engine_dict(PyObject *self)
{
    return Py_NewRef(self);
}

static PyObject *actor_resume(PyObject *self, PyObject *unused);

/* -- Event objects kept for reuse ------------------------------------------------------- */
/* Two events are made and released per message. The class's own deallocation runs as
 * before (the slots cleared, the object untracked, the class released); only the memory is
 * kept: Event's tp_free puts it in a small pool instead of freeing it, and Event's tp_alloc
 * takes it from there (zeroed and initialised as PyType_GenericAlloc does) before asking
 * the allocator. An Event subclass has its own tp_alloc and tp_free (set when a class is
 * made), so only exact Events are pooled. Nothing of an event outlives it: its slots were
 * cleared before tp_free. Installed once, by setup(). */
#define EV_POOL_MAX 1024
static PyObject *ev_pool[EV_POOL_MAX];
static int ev_pool_n;
static allocfunc ev_alloc_base;
static freefunc ev_free_base;

static PyObject *
ev_alloc(PyTypeObject *type, Py_ssize_t nitems)
{
    if (type == EventType && nitems == 0 && ev_pool_n > 0) {
        PyObject *o = ev_pool[--ev_pool_n];
        memset(o, 0, (size_t)type->tp_basicsize);
        PyObject_Init(o, type);  /* the class held, one reference */
        PyObject_GC_Track(o);
        return o;
    }
    return ev_alloc_base(type, nitems);
}

static void
ev_free(void *p)
{
    PyObject *o = (PyObject *)p;
    if (ev_pool_n < EV_POOL_MAX && Py_TYPE(o) == EventType && !PyObject_GC_IsTracked(o) &&
        !PyObject_GC_IsFinalized(o)) {
        ev_pool[ev_pool_n++] = o;
        return;
    }
    ev_free_base(p);
}

static void
install_event_pool(void)
{
    if (EventType->tp_alloc == ev_alloc || !(EventType->tp_flags & Py_TPFLAGS_HAVE_GC) ||
        EventType->tp_itemsize != 0 || EventType->tp_free != PyObject_GC_Del)
        return;
    ev_alloc_base = EventType->tp_alloc;
    ev_free_base = EventType->tp_free;
    EventType->tp_alloc = ev_alloc;
    EventType->tp_free = ev_free;
}

/* -- bound C methods kept for reuse ---------------------------------------------------- */
/* The two events of a message call a compiled method bound to the flow (its
 * _start_bandwidth_phase, its _work_done: builtin methods, exact PyCFunction objects made by
 * the method descriptor's __get__, PyCMethod_New). When an event has run and the engine holds
 * the last reference to its callback, the callback is released as meth_dealloc releases it
 * (untracked, its self released) but its memory is kept (bound_release); the next bound
 * method is made in it (bound_new: the fields PyCMethod_New sets, tracked again). Only exact
 * PyCFunction objects of flags METH_NOARGS (so all of the same vectorcall function), without
 * a module or a weak reference, are kept, and made; anything else is released or made as
 * before.
 * smpy/network/_netaccel.c makes its bound methods here too (bound_api's capsule). */
#define BM_POOL_MAX 8
static PyObject *bm_pool[BM_POOL_MAX];
static int bm_pool_n;

static void
bound_release(PyObject *fn)
{
    if (Py_REFCNT(fn) == 1 && Py_IS_TYPE(fn, &PyCFunction_Type) && bm_pool_n < BM_POOL_MAX) {
        PyCFunctionObject *m = (PyCFunctionObject *)fn;
        if (m->m_weakreflist == NULL && m->m_module == NULL && m->m_ml->ml_flags == METH_NOARGS &&
            PyObject_GC_IsTracked(fn)) {
            PyObject_GC_UnTrack(fn);
            PyObject *self = m->m_self;
            m->m_self = NULL;
            bm_pool[bm_pool_n++] = fn;  /* its reference moves to the pool */
            Py_XDECREF(self);
            return;
        }
    }
    Py_DECREF(fn);
}

/* descr.__get__(obj, type(obj)) for an exact method descriptor: the bound method */
static PyObject *
bound_new(PyObject *descr, PyObject *obj)
{
    if (bm_pool_n > 0 && Py_IS_TYPE(descr, &PyMethodDescr_Type)) {
        PyMethodDef *ml = ((PyMethodDescrObject *)descr)->d_method;
        PyCFunctionObject *m = (PyCFunctionObject *)bm_pool[bm_pool_n - 1];
        if (ml->ml_flags == METH_NOARGS && PyObject_TypeCheck(obj, PyDescr_TYPE(descr))) {
            bm_pool_n--;
            m->m_ml = ml;
            m->m_self = Py_NewRef(obj);
            PyObject_GC_Track((PyObject *)m);
            return (PyObject *)m;
        }
    }
    return Py_TYPE(descr)->tp_descr_get(descr, obj, (PyObject *)Py_TYPE(obj));
}

/* cached_get(o, c, name) for a method of o's class (CACHE_METHOD: no instance dict) that is
   a method descriptor: bound_new */
static inline PyObject *
bound_get(PyObject *o, slot_cache *c, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == c->type && t->tp_version_tag == c->version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) &&
        c->off == CACHE_METHOD && Py_IS_TYPE(c->getset, &PyMethodDescr_Type))
        return bound_new(c->getset, o);
    return cached_get(o, c, name);
}

static PyObject *
bound_api(PyObject *module, PyObject *unused)
{
    return PyCapsule_New((void *)bound_new, "smpy.kernel._accel.bound_new", NULL);
}

/* -- the event heap ---------------------------------------------------------------------- */
/* heapq.heappush and heapq.heappop on an exact list, by heapq's own algorithm (its C
 * _siftdown and _siftup, the same moves in the same order), with one difference: two entries
 * (time, seq, event) whose time is an exact float and seq an exact int are compared in C,
 * as tuple comparison compares them (the first items equal when they are the same object or
 * equal floats, then the second ones; seq is unique, so the events are never compared).
 * Anything else is compared by Python's ``<`` as heapq does. The heap is the same list in
 * the same order either way. */
static inline __attribute__((always_inline)) int
entry_lt(PyObject *a, PyObject *b)
{
    if ((PyTuple_CheckExact(a) & PyTuple_CheckExact(b)) && PyTuple_GET_SIZE(a) >= 2 && PyTuple_GET_SIZE(b) >= 2) {
        PyObject *ta = PyTuple_GET_ITEM(a, 0), *tb = PyTuple_GET_ITEM(b, 0);
        if (PyFloat_CheckExact(ta) & PyFloat_CheckExact(tb)) {
            double x = PyFloat_AS_DOUBLE(ta), y = PyFloat_AS_DOUBLE(tb);
            if (ta != tb && x != y)
                return x < y;  /* the seqs are not read (in a large heap, each is a cache miss) */
            PyObject *sa = PyTuple_GET_ITEM(a, 1), *sb = PyTuple_GET_ITEM(b, 1);
            if (sa != sb && PyLong_CheckExact(sa) && PyLong_CheckExact(sb)) {
                int oa = 0, ob = 0;
                long long i = PyLong_AsLongLongAndOverflow(sa, &oa), j = PyLong_AsLongLongAndOverflow(sb, &ob);
                if (!oa && !ob && !((i == -1 || j == -1) && PyErr_Occurred()) && i != j)
                    return i < j;
                PyErr_Clear();
            }
        }
    }
    return PyObject_RichCompareBool(a, b, Py_LT);
}

static int
heap_siftdown(PyObject *heap, Py_ssize_t startpos, Py_ssize_t pos)
{
    Py_ssize_t size = PyList_GET_SIZE(heap);
    while (pos > startpos) {
        Py_ssize_t parentpos = (pos - 1) >> 1;
        PyObject *newitem = Py_NewRef(PyList_GET_ITEM(heap, pos)), *parent = Py_NewRef(PyList_GET_ITEM(heap, parentpos));
        int cmp = entry_lt(newitem, parent);
        Py_DECREF(parent);
        Py_DECREF(newitem);
        if (cmp < 0)
            return -1;
        if (size != PyList_GET_SIZE(heap)) {
            PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
            return -1;
        }
        if (cmp == 0)
            break;
        PyObject **arr = ((PyListObject *)heap)->ob_item;
        parent = arr[parentpos];
        arr[parentpos] = arr[pos];
        arr[pos] = parent;
        pos = parentpos;
    }
    return 0;
}

static int
heap_siftup(PyObject *heap, Py_ssize_t pos)
{
    Py_ssize_t endpos = PyList_GET_SIZE(heap), startpos = pos, limit = endpos >> 1;
    while (pos < limit) {
        Py_ssize_t childpos = 2 * pos + 1;
        if (2 * childpos + 4 < endpos) {  /* the next level's entries, whichever child moves up */
            PyObject **arr = ((PyListObject *)heap)->ob_item;
            __builtin_prefetch(arr[2 * childpos + 1]);
            __builtin_prefetch(arr[2 * childpos + 2]);
            __builtin_prefetch(arr[2 * childpos + 3]);
            __builtin_prefetch(arr[2 * childpos + 4]);
        }
        if (childpos + 1 < endpos) {
            PyObject *a = Py_NewRef(PyList_GET_ITEM(heap, childpos)), *b = Py_NewRef(PyList_GET_ITEM(heap, childpos + 1));
            int cmp = entry_lt(a, b);
            Py_DECREF(a);
            Py_DECREF(b);
            if (cmp < 0)
                return -1;
            childpos += ((unsigned)cmp ^ 1);
            if (endpos != PyList_GET_SIZE(heap)) {
                PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
                return -1;
            }
        }
        PyObject **arr = ((PyListObject *)heap)->ob_item;
        PyObject *tmp = arr[childpos];
        arr[childpos] = arr[pos];
        arr[pos] = tmp;
        pos = childpos;
    }
    return heap_siftdown(heap, startpos, pos);
}

/* heapq.heappush(heap, item): 0 or -1 */
static int
heap_push(PyObject *heap, PyObject *item)
{
    if (!PyList_CheckExact(heap)) {
        PyObject *pargs[2] = {heap, item};
        PyObject *r = PyObject_Vectorcall(heappush, pargs, 2, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    if (PyList_Append(heap, item) < 0)
        return -1;
    return heap_siftdown(heap, 0, PyList_GET_SIZE(heap) - 1);
}

/* heapq.heappop(heap): a new reference, or NULL */
static PyObject *
heap_pop(PyObject *heap)
{
    if (!PyList_CheckExact(heap)) {
        PyObject *pargs[1] = {heap};
        return PyObject_Vectorcall(heappop, pargs, 1, NULL);
    }
    Py_ssize_t n = PyList_GET_SIZE(heap);
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return NULL;
    }
    PyObject *last = Py_NewRef(PyList_GET_ITEM(heap, n - 1));
    if (PyList_SetSlice(heap, n - 1, n, NULL) < 0) {
        Py_DECREF(last);
        return NULL;
    }
    if (n == 1)
        return last;
    PyObject *top = PyList_GET_ITEM(heap, 0);  /* the list's reference, now ours */
    PyList_SET_ITEM(heap, 0, last);
    if (heap_siftup(heap, 0) < 0) {
        Py_DECREF(top);
        return NULL;
    }
    return top;
}

/* -- Engine.schedule ------------------------------------------------------------------- */
/* engine.py's compaction (see its docstring): when the heap has more than engine._compact_at
 * entries, drop the cancelled events in place, re-heapify, and set the next size; 0 or -1 */
#define COMPACT_MIN 8192
static PyObject *s_compact_at, *heapify_fn;

static int
maybe_compact(PyObject *d, PyObject *heap)
{
    PyObject *at = dget(d, compact_at);
    if (at == NULL)
        return -1;
    Py_ssize_t limit = PyLong_AsSsize_t(at);
    Py_DECREF(at);
    if (limit == -1 && PyErr_Occurred())
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(heap);
    if (n <= limit)
        return 0;
    PyObject *kept = PyList_New(0);
    if (kept == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(heap); i++) {
        PyObject *item = Py_NewRef(PyList_GET_ITEM(heap, i));
        PyObject *ev = PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3 ? PyTuple_GET_ITEM(item, 2) : NULL;
        PyObject *c = ev == NULL ? PySequence_GetItem(item, 2) : Py_NewRef(ev);  /* item[2] */
        PyObject *v = c == NULL ? NULL
                      : PyObject_TypeCheck(c, EventType) ? slot_get(c, ev_cancelled, s_cancelled)
                                                         : PyObject_GetAttr(c, s_cancelled);
        Py_XDECREF(c);
        int cancelled = v == NULL ? -1 : PyObject_IsTrue(v);
        Py_XDECREF(v);
        if (cancelled < 0 || (!cancelled && PyList_Append(kept, item) < 0)) {
            Py_DECREF(item);
            Py_DECREF(kept);
            return -1;
        }
        Py_DECREF(item);
    }
    int rc = PyList_SetSlice(heap, 0, PY_SSIZE_T_MAX, kept);
    Py_DECREF(kept);
    if (rc < 0)
        return -1;
    if (heapify_fn == NULL) {
        PyObject *mod = PyImport_ImportModule("heapq");
        heapify_fn = mod == NULL ? NULL : PyObject_GetAttrString(mod, "heapify");
        Py_XDECREF(mod);
        if (heapify_fn == NULL)
            return -1;
    }
    PyObject *r = PyObject_CallOneArg(heapify_fn, heap);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    n = PyList_GET_SIZE(heap);
    PyObject *next = PyLong_FromSsize_t(n * 2 > COMPACT_MIN ? n * 2 : COMPACT_MIN);
    if (next == NULL)
        return -1;
    rc = dset(d, compact_at, next);
    Py_DECREF(next);
    return rc;
}

static PyObject *
schedule_impl(PyObject *self, PyObject *d, PyObject *delay, PyObject *fn, PyObject *args)
{
    PyObject *now = dget(d, now);
    if (now == NULL)
        return NULL;
    PyObject *t;
    if (PyFloat_CheckExact(delay) && PyFloat_CheckExact(now)) {
        double dl = PyFloat_AS_DOUBLE(delay);
        if (dl < 0.0)
            dl = 0.0;
        t = PyFloat_FromDouble(PyFloat_AS_DOUBLE(now) + dl);
    } else {
        int neg = PyObject_RichCompareBool(delay, f_zero, Py_LT);
        if (neg < 0) {
            Py_DECREF(now);
            return NULL;
        }
        t = PyNumber_Add(now, neg ? f_zero : delay);
    }
    Py_DECREF(now);
    if (t == NULL)
        return NULL;
    PyObject *ev = EventType->tp_alloc(EventType, 0);
    if (ev == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    slot_set(ev, ev_time, t);
    slot_set(ev, ev_fn, fn);
    slot_set(ev, ev_args, args);
    slot_set(ev, ev_cancelled, Py_False);
    PyObject *seq = NULL, *heap = NULL, *item = NULL;
    PyObject *old = dget(d, seq);
    if (old == NULL)
        goto fail;
    seq = plus_one(old, i_one);
    Py_DECREF(old);
    if (seq == NULL || dset(d, seq, seq) < 0)
        goto fail;
    heap = dget(d, heap);
    if (heap == NULL)
        goto fail;
    item = PyTuple_New(3);  /* (t, seq, ev), as PyTuple_Pack makes it */
    if (item == NULL)
        goto fail;
    PyTuple_SET_ITEM(item, 0, Py_NewRef(t));
    PyTuple_SET_ITEM(item, 1, Py_NewRef(seq));
    PyTuple_SET_ITEM(item, 2, Py_NewRef(ev));
    if (heap_push(heap, item) < 0)
        goto fail;
    if (PyList_Check(heap) && PyList_GET_SIZE(heap) > COMPACT_MIN && maybe_compact(d, heap) < 0)
        goto fail;
    Py_DECREF(item);
    Py_DECREF(heap);
    Py_DECREF(seq);
    Py_DECREF(t);
    return ev;
fail:
    Py_XDECREF(item);
    Py_XDECREF(heap);
    Py_XDECREF(seq);
    Py_DECREF(t);
    Py_DECREF(ev);
    return NULL;
}

/* whether engine.schedule is the compiled Engine.schedule (the class's, no instance attribute
   of that name), which the callers below then run directly: 1, 0, or -1 */
static PyTypeObject *ps_type;  /* the class last found with the compiled schedule (compared only), */
static unsigned int ps_version;  /* at this version tag */

static int
plain_schedule(PyObject *engine)
{
    PyTypeObject *t = Py_TYPE(engine);
    if (schedule_descr == NULL)
        return 0;
    if (t != ps_type || t->tp_version_tag != ps_version || !(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        if (_PyType_Lookup(t, s_schedule) != schedule_descr)  /* gives t a valid version tag */
            return 0;
        if (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {  /* remembered while the class is unchanged */
            ps_type = t;
            ps_version = t->tp_version_tag;
        }
    }
    PyObject *d = instance_dict(engine);
    if (d == NULL)
        return 1;
    if (dict_get(d, s_schedule) != NULL)  /* its absence remembered with the dict's version */
        return 0;
    return PyErr_Occurred() ? -1 : 1;
}

static PyObject *
engine_schedule(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "schedule() takes no keyword arguments");
        return NULL;
    }
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "schedule() missing required arguments: 'delay' and 'fn'");
        return NULL;
    }
    PyObject *d = engine_dict(self);
    if (d == NULL)
        return NULL;
    PyObject *rest = PyTuple_New(nargs - 2);
    if (rest == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    for (Py_ssize_t i = 2; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(rest, i - 2, args[i]);
    }
    PyObject *ev = schedule_impl(self, d, args[0], args[1], rest);
    Py_DECREF(rest);
    Py_DECREF(d);
    return ev;
}

/* -- Activity._finish ------------------------------------------------------------------ */
static int
wake_waiters(PyObject *waiters, PyObject *ready)
{
    /* for actor in waiters: if actor.waiting_for is not None: actor.waiting_for = None;
       ready.append(actor) */
    seq_iter it;
    if (seq_iter_init(&it, waiters) < 0)
        return -1;
    PyObject *actor;
    while ((actor = seq_iter_next(&it)) != NULL) {
        PyObject *w = get(actor, ActorType, at_waiting_for, s_waiting_for);
        if (w == NULL)
            goto fail;
        int busy = w != Py_None;
        Py_DECREF(w);
        if (busy) {
            if (set(actor, ActorType, at_waiting_for, s_waiting_for, Py_None) < 0)
                goto fail;
            PyObject *r = direct_method1(ready, s_append, actor);
            if (r == NULL)
                goto fail;
            Py_DECREF(r);
        }
        Py_DECREF(actor);
    }
    seq_iter_done(&it);
    return PyErr_Occurred() ? -1 : 0;
fail:
    Py_DECREF(actor);
    seq_iter_done(&it);
    return -1;
}

static PyObject *
activity_add_callback(PyObject *self, PyObject *fn)
{
    /* if self.state != RUNNING: fn(self); elif self.callbacks is None: self.callbacks = [fn];
     * else: self.callbacks.append(fn) */
    PyObject *state = slot_get(self, ac_state, s_state);
    if (state == NULL)
        return NULL;
    int running = int_eq(state, 0);
    Py_DECREF(state);
    if (running < 0)
        return NULL;
    if (!running) {
        PyObject *r = PyObject_CallOneArg(fn, self);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    PyObject *cbs = slot_get(self, ac_callbacks, s_callbacks);
    if (cbs == NULL)
        return NULL;
    if (cbs == Py_None) {
        Py_DECREF(cbs);
        PyObject *lst = PyList_New(1);
        if (lst == NULL)
            return NULL;
        PyList_SET_ITEM(lst, 0, Py_NewRef(fn));
        slot_set(self, ac_callbacks, lst);
        Py_DECREF(lst);
        Py_RETURN_NONE;
    }
    int err = PyList_CheckExact(cbs) ? PyList_Append(cbs, fn) : -2;
    if (err == -2) {  /* not a list: its own append, as Python calls it */
        PyObject *app = PyUnicode_InternFromString("append");
        PyObject *r = app == NULL ? NULL : call_method1(cbs, app, fn);
        Py_XDECREF(app);
        err = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    Py_DECREF(cbs);
    if (err < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
activity_finish(PyObject *self, PyObject *unused)
{
    PyObject *state = slot_get(self, ac_state, s_state);
    if (state == NULL)
        return NULL;
    int running = int_eq(state, 0);
    Py_DECREF(state);
    if (running <= 0)
        return running < 0 ? NULL : Py_NewRef(Py_None);
    slot_set(self, ac_state, i_done);
    PyObject *engine = slot_get(self, ac_engine, s_engine);
    if (engine == NULL)
        return NULL;
    PyObject *now = cached_get(engine, &c_engine_now, s_now);
    if (now == NULL)
        goto fail;
    slot_set(self, ac_finish_time, now);
    Py_DECREF(now);
    PyObject *cbs = slot_get(self, ac_callbacks, s_callbacks);
    if (cbs == NULL)
        goto fail;
    if (cbs != Py_None) {
        slot_set(self, ac_callbacks, Py_None);
        seq_iter it;
        int bad = seq_iter_init(&it, cbs);
        Py_DECREF(cbs);
        if (bad < 0)
            goto fail;
        PyObject *fn;
        while ((fn = seq_iter_next(&it)) != NULL) {
            PyObject *r = call_one_direct(fn, self);
            Py_DECREF(fn);
            if (r == NULL) {
                seq_iter_done(&it);
                goto fail;
            }
            Py_DECREF(r);
        }
        seq_iter_done(&it);
        if (PyErr_Occurred())
            goto fail;
    } else {
        Py_DECREF(cbs);
    }
    PyObject *waiters = slot_get(self, ac_waiters, s_waiters);
    if (waiters == NULL)
        goto fail;
    int any = PyObject_IsTrue(waiters);
    Py_DECREF(waiters);
    if (any < 0)
        goto fail;
    if (any) {
        PyObject *ready = cached_get(engine, &c_engine_ready, s_ready);
        if (ready == NULL)
            goto fail;
        waiters = slot_get(self, ac_waiters, s_waiters);
        if (waiters == NULL) {
            Py_DECREF(ready);
            goto fail;
        }
        int rc = wake_waiters(waiters, ready);
        Py_DECREF(waiters);
        Py_DECREF(ready);
        if (rc < 0)
            goto fail;
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL)
            goto fail;
        slot_set(self, ac_waiters, fresh);
        Py_DECREF(fresh);
    }
    Py_DECREF(engine);
    Py_RETURN_NONE;
fail:
    Py_DECREF(engine);
    return NULL;
}

/* -- Actor._resume --------------------------------------------------------------------- */
/* smpy.kernel.actors._current = v, twice per resume: on CPython 3.11 the entry's value replaced
 * in place with a fresh dict version (_cext.h's dict_batch_set, as the switch hooks store), the
 * replaced value released after; otherwise, or when the entry is not there, PyDict_SetItem */
static Py_ssize_t current_hint = -1;

static int
current_store(PyObject *v)
{
#ifdef CEXT_DICT_INPLACE
    if (PyDict_CheckExact(actors_dict)) {
        dict_batch b;
        dict_batch_init(&b);
        int r = dict_batch_set(&b, actors_dict, s_current, &current_hint, v, 1);
        dict_batch_end(&b);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
#endif
    return PyDict_SetItem(actors_dict, s_current, v);
}

static PyObject *
actor_resume(PyObject *self, PyObject *unused)
{
    PyObject *ctx = slot_get(self, at_context, s_context);
    if (ctx == NULL)
        return NULL;
    if (ctx != Py_None) {
        PyObject *r = direct_method0(ctx, s_switch_in);
        if (r == NULL) {
            Py_DECREF(ctx);
            return NULL;
        }
        Py_DECREF(r);
    }
    if (current_store(self) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    /* try: self.glet.switch() if self.started else self.glet.switch(self) (the first switch
       gives the greenlet's run, the class's _main, its actor) */
    PyObject *r = NULL;
    PyObject *glet = slot_get(self, at_glet, s_glet);
    if (glet != NULL) {
        PyObject *started = slot_get(self, at_started, s_started);
        int st = started == NULL ? -1 : PyObject_IsTrue(started);
        Py_XDECREF(started);
        if (st > 0)
            r = green_switch0(glet, s_switch);
        else if (st == 0)
            r = green_switch1(glet, s_switch, self);
        Py_DECREF(glet);
    }
    /* finally: _current = None; if ctx is not None: ctx.switch_out() */
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    int bad = current_store(Py_None) < 0;
    if (!bad && ctx != Py_None) {
        PyObject *r2 = direct_method0(ctx, s_switch_out);
        if (r2 == NULL)
            bad = 1;
        else
            Py_DECREF(r2);
    }
    Py_DECREF(ctx);
    if (bad) {  /* an exception of the finally block replaces the pending one (its context) */
        Py_XDECREF(r);
        if (et != NULL)
            _PyErr_ChainExceptions(et, ev, etb);
        return NULL;
    }
    PyErr_Restore(et, ev, etb);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* -- block_on -------------------------------------------------------------------------- */
static PyObject *
raise_killed(void)
{
    PyObject *exc = PyObject_CallNoArgs(ActorKilled);
    if (exc != NULL) {
        PyErr_SetObject(ActorKilled, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* block_on in four parts, so that the C frame that stays on the blocked actor's stack (which
 * greenlet copies out and back at each switch of the actor) is the small block_on's only:
 * the argument parsing, the steps before the switch and those after it are out of line. */

/* activity and label from block_on's arguments (borrowed); -1 with a TypeError */
CEXT_OUTLINE int
block_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **activity, PyObject **label)
{
    *activity = NULL;
    *label = Py_None;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 2 || nargs + nkw < 1 || nargs + nkw > 2)
        goto badargs;
    if (nargs >= 1)
        *activity = args[0];
    if (nargs == 2)
        *label = args[1];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(k, "label") == 0 && nargs < 2)
            *label = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(k, "activity") == 0 && nargs < 1)
            *activity = args[nargs + i];
        else
            goto badargs;
    }
    if (*activity == NULL)
        goto badargs;
    return 0;
badargs:
    PyErr_SetString(PyExc_TypeError, "block_on(activity, label=None)");
    return -1;
}

/* activity.state == RUNNING: 1, 0, or -1 */
static inline int
activity_running(PyObject *activity, int is_act)
{
    PyObject *state = is_act ? slot_get(activity, ac_state, s_state) : cached_get(activity, &c_activity_state, s_state);
    if (state == NULL)
        return -1;
    int running = int_eq(state, 0);
    Py_DECREF(state);
    return running;
}

/* the running actor (new reference) waiting for the activity, and *parent (new reference) the
 * greenlet to switch to: actor = _current (raise if None or killed); actor.waiting_for =
 * activity; actor.wait_label = label; activity.waiters.append(actor); actor.glet.parent.
 * NULL with an error set */
CEXT_OUTLINE PyObject *
block_enter(PyObject *activity, PyObject *label, int is_act, PyObject **parent)
{
    PyObject *actor = PyDict_GetItemWithError(actors_dict, s_current);
    if (actor == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_NameError, s_current);
    if (actor == NULL)
        return NULL;
    if (actor == Py_None) {
        PyErr_SetString(SmpyInternalError, "block_on called outside of an actor");
        return NULL;
    }
    Py_INCREF(actor);
    PyObject *killed = get(actor, ActorType, at_killed, s_killed);
    int k = killed == NULL ? -1 : PyObject_IsTrue(killed);
    Py_XDECREF(killed);
    if (k != 0) {
        Py_DECREF(actor);
        return k < 0 ? NULL : raise_killed();
    }
    if (set(actor, ActorType, at_waiting_for, s_waiting_for, activity) < 0 ||
        set(actor, ActorType, at_wait_label, s_wait_label, label) < 0)
        goto fail;
    PyObject *waiters = is_act ? slot_get(activity, ac_waiters, s_waiters) : cached_get(activity, &c_activity_waiters, s_waiters);
    if (waiters == NULL)
        goto fail;
    PyObject *r = direct_method1(waiters, s_append, actor);
    Py_DECREF(waiters);
    if (r == NULL)
        goto fail;
    Py_DECREF(r);
    /* actor.glet.parent */
    PyObject *glet = get(actor, ActorType, at_glet, s_glet);
    if (glet == NULL)
        goto fail;
    *parent = cached_get(glet, &c_glet_parent, s_parent);
    Py_DECREF(glet);
    if (*parent == NULL)
        goto fail;
    return actor;
fail:
    Py_DECREF(actor);
    return NULL;
}

/* after the switch back (r its result, or NULL): if actor.engine.stopping and
 * actor.waiting_for is not None: raise ActorKilled(); actor.wait_label = None. Releases r and
 * the actor; 0, or -1 with an error set */
CEXT_OUTLINE int
block_leave(PyObject *actor, PyObject *r)
{
    if (r == NULL)
        goto fail;
    Py_DECREF(r);
    PyObject *engine = get(actor, ActorType, at_engine, s_engine);
    if (engine == NULL)
        goto fail;
    PyObject *stopping = cached_get(engine, &c_engine_stopping, s_stopping);
    Py_DECREF(engine);
    if (stopping == NULL)
        goto fail;
    int st = PyObject_IsTrue(stopping);
    Py_DECREF(stopping);
    if (st < 0)
        goto fail;
    if (st) {
        PyObject *w = get(actor, ActorType, at_waiting_for, s_waiting_for);
        if (w == NULL)
            goto fail;
        int waiting = w != Py_None;
        Py_DECREF(w);
        if (waiting) {
            Py_DECREF(actor);
            raise_killed();
            return -1;
        }
    }
    if (set(actor, ActorType, at_wait_label, s_wait_label, Py_None) < 0)
        goto fail;
    Py_DECREF(actor);
    return 0;
fail:
    Py_DECREF(actor);
    return -1;
}

/* the end: raise the activity's exception if it failed; the activity (new reference) */
CEXT_OUTLINE PyObject *
block_result(PyObject *activity, int is_act)
{
    PyObject *state = is_act ? slot_get(activity, ac_state, s_state) : cached_get(activity, &c_activity_state, s_state);
    if (state == NULL)
        return NULL;
    int failed = int_eq(state, 2);  /* FAILED */
    Py_DECREF(state);
    if (failed < 0)
        return NULL;
    if (failed) {
        PyObject *exc = is_act ? slot_get(activity, ac_exception, s_exception) : cached_get(activity, &c_activity_exception, s_exception);
        if (exc == NULL)
            return NULL;
        if (exc == Py_None) {
            Py_DECREF(exc);
            PyObject *what = call_method0(activity, s_describe);
            if (what == NULL)
                return NULL;
            exc = PyObject_CallOneArg(ActivityFailed, what);
            Py_DECREF(what);
            if (exc == NULL)
                return NULL;
        }
        if (PyExceptionInstance_Check(exc))
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        else if (PyExceptionClass_Check(exc))
            PyErr_SetNone(exc);
        else
            PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
        Py_DECREF(exc);
        return NULL;
    }
    return Py_NewRef(activity);
}

static PyObject *
block_on(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *activity, *label;
    if (block_args(args, nargs, kwnames, &activity, &label) < 0)
        return NULL;
    int is_act = PyObject_TypeCheck(activity, ActivityType);
    int running = activity_running(activity, is_act);
    if (running < 0)
        return NULL;
    if (running) {
        PyObject *parent;
        PyObject *actor = block_enter(activity, label, is_act, &parent);
        if (actor == NULL)
            return NULL;
        /* actor.glet.parent.switch() */
        PyObject *r = green_switch0(parent, s_switch);
        Py_DECREF(parent);
        if (block_leave(actor, r) < 0)
            return NULL;
    }
    return block_result(activity, is_act);
}

/* -- the deallocation of the per-message objects ----------------------------------------
 * A class made by a class statement is released by CPython's subtype_dealloc, which works for
 * any class: the trashcan's three calls, the walk up the bases twice (the nearest base with
 * another deallocation, then each base's slots), the finalizer and instance-dict checks, the
 * weak-reference call, each slot's member description read. For the classes given to
 * fast_dealloc() (the requests, the flow, the byte-buffer spec, the event: about ten released
 * per message), whose every base up to ``object`` is such a class with __slots__ and no
 * __dict__, __del__ or finalizer, the same steps in the same order are made from a table of
 * the slots' offsets: the object untracked, its weak references cleared when it has any, each
 * object slot cleared (the class's own slots first, then each base's, each in its members'
 * order, as subtype_dealloc does), the memory freed by the class's tp_free, the class
 * released. The trashcan (which defers a release nested deeper than about 50 levels) is left
 * out: these objects refer to one another at most a few levels deep. A subclass made later
 * keeps subtype_dealloc, which clears its own slots and then calls this one as its base's:
 * the same order, but for an instance dict such a subclass adds, which CPython's walk would
 * release after every base's slots and is released before those of the bases here (no smpy
 * class subclasses these; tests/kernel/test_fast_dealloc.py). */
#define FD_TYPES 64
#define FD_SLOTS 64
static struct {
    PyTypeObject *type;  /* held */
    int n;
    Py_ssize_t off[FD_SLOTS];
} fd_types[FD_TYPES];
static int fd_ntypes;
static destructor subtype_dealloc_fn;  /* CPython's, read from a class made for it */

static void
fast_dealloc_fn(PyObject *self)
{
    /* the object's class, or, for a subclass made later (its subtype_dealloc cleared its own
       slots, then called this as its base's deallocation), the nearest base of ours: the rest
       of the walk subtype_dealloc would make, and the class released here, as it would be */
    PyTypeObject *type = Py_TYPE(self), *t = type;
    int i = fd_ntypes;
    for (; t != NULL && i == fd_ntypes; t = t->tp_base)
        for (i = 0; i < fd_ntypes && fd_types[i].type != t; i++)
            ;
    if (i == fd_ntypes) {  /* none of ours (cannot happen: set on those only) */
        PyErr_WriteUnraisable(self);
        return;
    }
    PyObject_GC_UnTrack(self);
    if (type->tp_weaklistoffset && *(PyObject **)((char *)self + type->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self);
    Py_ssize_t *off = fd_types[i].off;
    for (int k = 0, n = fd_types[i].n; k < n; k++) {
        PyObject **addr = (PyObject **)((char *)self + off[k]);
        PyObject *obj = *addr;
        if (obj != NULL) {
            *addr = NULL;
            Py_DECREF(obj);
        }
    }
    type->tp_free(self);
    Py_DECREF(type);
}

/* fast_dealloc(cls) -> whether cls is released by fast_dealloc_fn from now on */
static PyObject *
fast_dealloc(PyObject *module, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "fast_dealloc(cls): a class");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)arg;
    if (subtype_dealloc_fn == NULL) {
        PyObject *probe = PyObject_CallFunction((PyObject *)&PyType_Type, "s(){}", "_probe");
        if (probe == NULL)
            return NULL;
        subtype_dealloc_fn = ((PyTypeObject *)probe)->tp_dealloc;
        Py_DECREF(probe);
    }
    if (type->tp_dealloc == fast_dealloc_fn)
        Py_RETURN_TRUE;
    if (fd_ntypes == FD_TYPES || type->tp_dealloc != subtype_dealloc_fn || type->tp_itemsize != 0 ||
        !(type->tp_flags & Py_TPFLAGS_HAVE_GC) || type->tp_finalize != NULL || type->tp_del != NULL)
        Py_RETURN_FALSE;
    int n = 0;
    PyTypeObject *base = type;
    for (; base->tp_dealloc == subtype_dealloc_fn; base = base->tp_base) {
        if (!(base->tp_flags & Py_TPFLAGS_HEAPTYPE) || base->tp_finalize != NULL || base->tp_del != NULL ||
            base->tp_dictoffset != 0 || (base->tp_flags & Py_TPFLAGS_MANAGED_DICT) || base->tp_itemsize != 0)
            Py_RETURN_FALSE;
        Py_ssize_t nm = Py_SIZE(base);
        PyMemberDef *mp = (PyMemberDef *)((char *)base + Py_TYPE(base)->tp_basicsize);  /* the members after the class (PyHeapType_GET_MEMBERS) */
        for (Py_ssize_t j = 0; j < nm; j++, mp++)
            if (mp->type == T_OBJECT_EX && !(mp->flags & READONLY)) {
                if (n == FD_SLOTS)
                    Py_RETURN_FALSE;
                fd_types[fd_ntypes].off[n++] = mp->offset;
            }
    }
    /* the first base with another deallocation must be object itself (its dealloc frees) */
    if (base != &PyBaseObject_Type || type->tp_free == NULL)
        Py_RETURN_FALSE;
    fd_types[fd_ntypes].type = (PyTypeObject *)Py_NewRef(type);
    fd_types[fd_ntypes].n = n;
    fd_ntypes++;
    type->tp_dealloc = fast_dealloc_fn;
    Py_RETURN_TRUE;
}

/* -- Engine.run ------------------------------------------------------------------------ */
/* one round's events: while heap and heap[0][0] <= t: ... (returns -1 on error) */
CEXT_INLINE int
run_events(PyObject *d, PyObject *heap, PyObject *t)
{
    while (PyList_GET_SIZE(heap)) {
        PyObject *top = PyList_GET_ITEM(heap, 0);
        if (!PyTuple_CheckExact(top) || PyTuple_GET_SIZE(top) != 3) {
            PyErr_SetString(PyExc_TypeError, "engine heap entries must be (time, seq, event) tuples");
            return -1;
        }
        int le = compare(PyTuple_GET_ITEM(top, 0), t, Py_LE);
        if (le <= 0)
            return le;
        PyObject *item = heap_pop(heap);
        if (item == NULL)
            return -1;
        PyObject *ev = PyTuple_GET_ITEM(item, 2);
        Py_INCREF(ev);
        Py_DECREF(item);
        int ok = PyObject_TypeCheck(ev, EventType);
        PyObject *c = ok ? slot_get(ev, ev_cancelled, s_cancelled) : cached_get(ev, &c_ev_cancelled, s_cancelled);
        int cancelled = c == NULL ? -1 : PyObject_IsTrue(c);
        Py_XDECREF(c);
        if (cancelled) {
            Py_DECREF(ev);
            if (cancelled < 0)
                return -1;
            continue;
        }
        /* self.events_processed += 1 */
        if (engine_plain(d) && incr_in_place(SLOT(d, en_off[E_events_processed])))
            goto counted;
        PyObject *n = dget(d, events_processed);
        if (n == NULL) {
            Py_DECREF(ev);
            return -1;
        }
        PyObject *n1 = plus_one(n, i_one);
        Py_DECREF(n);
        if (n1 == NULL || dset(d, events_processed, n1) < 0) {
            Py_XDECREF(n1);
            Py_DECREF(ev);
            return -1;
        }
        Py_DECREF(n1);
    counted:;
        PyObject *fn = ok ? slot_get(ev, ev_fn, s_fn) : cached_get(ev, &c_ev_fn, s_fn);
        PyObject *a = fn == NULL ? NULL : ok ? slot_get(ev, ev_args, s_args) : cached_get(ev, &c_ev_args, s_args);
        Py_DECREF(ev);
        if (a == NULL) {
            Py_XDECREF(fn);
            return -1;
        }
        PyObject *r;
        if (PyTuple_CheckExact(a)) {
            r = call_tuple_direct(fn, a);
        } else {
            PyObject *tup = PySequence_Tuple(a);
            r = tup == NULL ? NULL : PyObject_Call(fn, tup, NULL);
            Py_XDECREF(tup);
        }
        Py_DECREF(a);
        bound_release(fn);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

CEXT_INLINE int
incr_rounds(PyObject *d)
{
    if (engine_plain(d) && incr_in_place(SLOT(d, en_off[E_rounds])))
        return 0;
    PyObject *n = dget(d, rounds);
    if (n == NULL)
        return -1;
    PyObject *n1 = plus_one(n, i_one);
    Py_DECREF(n);
    if (n1 == NULL)
        return -1;
    int rc = dset(d, rounds, n1);
    Py_DECREF(n1);
    return rc;
}

/* bool(ready): the length of an exact collections.deque (deque_len), read in place */
static PyTypeObject *DequeType;

static inline int
ready_any(PyObject *ready)
{
    if (Py_IS_TYPE(ready, DequeType))
        return Py_SIZE(ready) != 0;
    return PyObject_IsTrue(ready);
}

/* resume every ready actor; 1: the engine is stopping (run returns), 0: go on, -1: error */
static int
run_ready(PyObject *self, PyObject *d, PyObject *ready)
{
    for (;;) {
        int any = ready_any(ready);
        if (any <= 0)
            return any;
        PyObject *actor = direct_method0(ready, s_popleft);
        if (actor == NULL)
            return -1;
        PyObject *r;
        PyObject *m = _PyType_Lookup(Py_TYPE(actor), s_resume);
        if (m != NULL && m == resume_descr)
            r = actor_resume(actor, NULL);
        else
            r = call_method0(actor, s_resume);
        Py_DECREF(actor);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        int st = dtrue(d, stopping);
        if (st != 0)
            return st;
    }
}

/* update the dirty models: for m in models: if m.dirty: m.update() */
static int
update_models(PyObject *models)
{
    seq_iter it;
    if (seq_iter_init(&it, models) < 0)
        return -1;
    PyObject *m;
    unsigned i = 0;
    while ((m = seq_iter_next(&it)) != NULL) {
        /* one cache per position: the models are of different classes (cpu, network) */
        PyObject *dirty = cached_get(m, &c_m_dirty[i++ % M_DIRTY_CACHES], s_dirty);
        int yes = dirty == NULL ? -1 : PyObject_IsTrue(dirty);
        Py_XDECREF(dirty);
        if (yes > 0) {
            PyObject *r = direct_method0(m, s_update);
            if (r == NULL)
                yes = -1;
            else
                Py_DECREF(r);
        }
        Py_DECREF(m);
        if (yes < 0) {
            seq_iter_done(&it);
            return -1;
        }
    }
    seq_iter_done(&it);
    return PyErr_Occurred() ? -1 : 0;
}

/* osp is not None and osp.waits [and osp.poll(0.0)] */
static int
os_waits(PyObject *osp, int poll)
{
    if (osp == Py_None)
        return 0;
    PyObject *w = cached_get(osp, &c_osp_waits, s_waits);
    int yes = w == NULL ? -1 : PyObject_IsTrue(w);
    Py_XDECREF(w);
    if (yes <= 0 || !poll)
        return yes;
    PyObject *r = call_method1(osp, s_poll, f_zero);
    if (r == NULL)
        return -1;
    yes = PyObject_IsTrue(r);
    Py_DECREF(r);
    return yes;
}

/* the body of one iteration of ``while not self.stopping``: 0 go on, 1 return, 2 break, -1 error */
static int
run_round(PyObject *self, PyObject *d, PyObject *heap, PyObject *ready, PyObject *models,
          PyObject *until)
{
    int rc = run_ready(self, d, ready);
    if (rc != 0)
        return rc;
    if (update_models(models) < 0)
        return -1;
    rc = ready_any(ready);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    PyObject *osp = dget(d, os_poller);
    if (osp == NULL)
        return -1;
    rc = os_waits(osp, 1);
    if (rc != 0) {
        Py_DECREF(osp);
        return rc < 0 ? -1 : 0;
    }
    /* drop cancelled events at the top */
    while (PyList_GET_SIZE(heap)) {
        PyObject *top = PyList_GET_ITEM(heap, 0);
        if (!PyTuple_CheckExact(top) || PyTuple_GET_SIZE(top) != 3) {
            PyErr_SetString(PyExc_TypeError, "engine heap entries must be (time, seq, event) tuples");
            Py_DECREF(osp);
            return -1;
        }
        PyObject *ev = PyTuple_GET_ITEM(top, 2);
        PyObject *c = PyObject_TypeCheck(ev, EventType) ? slot_get(ev, ev_cancelled, s_cancelled)
                                                        : cached_get(ev, &c_ev_cancelled, s_cancelled);
        int cancelled = c == NULL ? -1 : PyObject_IsTrue(c);
        Py_XDECREF(c);
        if (cancelled <= 0) {
            if (cancelled < 0) {
                Py_DECREF(osp);
                return -1;
            }
            break;
        }
        PyObject *item = heap_pop(heap);
        if (item == NULL) {
            Py_DECREF(osp);
            return -1;
        }
        Py_DECREF(item);
    }
    if (!PyList_GET_SIZE(heap)) {
        rc = os_waits(osp, 0);
        if (rc > 0) {
            PyObject *r = call_method0(osp, s_idle);
            Py_DECREF(osp);
            if (r == NULL)
                return -1;
            Py_DECREF(r);
            return 0;
        }
        Py_DECREF(osp);
        return rc < 0 ? -1 : 2;
    }
    Py_DECREF(osp);
    PyObject *t = PyTuple_GET_ITEM(PyList_GET_ITEM(heap, 0), 0);
    Py_INCREF(t);
    rc = dtrue(d, daemon_heap);
    if (rc > 0) {
        PyObject *margs[3] = {self, t, until};
        PyObject *r = PyObject_VectorcallMethod(s_run_daemons, margs, 3, NULL);
        rc = r == NULL ? -1 : PyObject_IsTrue(r);
        Py_XDECREF(r);
        if (rc != 0) {
            Py_DECREF(t);
            return rc < 0 ? -1 : 0;
        }
    }
    if (rc < 0)
        goto fail;
    if (until != Py_None) {
        rc = compare(t, until, Py_GT);
        if (rc < 0)
            goto fail;
        if (rc) {
            PyObject *r = call_method1(self, s_advance, until);
            Py_DECREF(t);
            if (r == NULL)
                return -1;
            Py_DECREF(r);
            return 1;
        }
    }
    PyObject *now = dget(d, now);
    if (now == NULL)
        goto fail;
    rc = compare(t, now, Py_GT);
    Py_DECREF(now);
    if (rc < 0)
        goto fail;
    if (rc) {
        PyObject *sig = dget(d, on_time_advance);
        PyObject *slots = sig == NULL ? NULL : cached_get(sig, &c_sig_slots, s_slots);
        Py_XDECREF(sig);
        int listeners = slots == NULL ? -1 : PyObject_IsTrue(slots);
        Py_XDECREF(slots);
        if (listeners < 0)
            goto fail;
        if (listeners) {
            PyObject *r = call_method1(self, s_advance, t);
            if (r == NULL)
                goto fail;
            Py_DECREF(r);
        } else if (dset(d, now, t) < 0) {
            goto fail;
        }
    }
    if (incr_rounds(d) < 0 || run_events(d, heap, t) < 0)
        goto fail;
    Py_DECREF(t);
    return 0;
fail:
    Py_DECREF(t);
    return -1;
}

static PyObject *
engine_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *until = Py_None;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1 || (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "until"))) {
        PyErr_SetString(PyExc_TypeError, "run(until=None)");
        return NULL;
    }
    if (nargs + nkw == 1)
        until = args[0];
    PyObject *d = engine_dict(self);
    if (d == NULL)
        return NULL;
    PyObject *heap = dget(d, heap);
    PyObject *ready = heap == NULL ? NULL : dget(d, ready);
    PyObject *models = ready == NULL ? NULL : dget(d, models);
    PyObject *result = NULL;
    if (models == NULL)
        goto out;
    if (!PyList_CheckExact(heap)) {
        PyErr_SetString(PyExc_TypeError, "the engine's heap must be a list");
        goto out;
    }
    for (;;) {
        int st = dtrue(d, stopping);
        if (st < 0)
            goto out;
        if (st)
            break;
        int rc = run_round(self, d, heap, ready, models, until);
        if (rc < 0)
            goto out;
        if (rc == 1) {
            result = Py_NewRef(Py_None);
            goto out;
        }
        if (rc == 2)
            break;
    }
    int st = dtrue(d, stopping);
    if (st < 0)
        goto out;
    if (st)
        result = Py_NewRef(Py_None);
    else
        result = call_method0(self, s_deadlock_check);
out:
    Py_XDECREF(models);
    Py_XDECREF(ready);
    Py_XDECREF(heap);
    Py_DECREF(d);
    return result;
}

/* -- RateActivity._set_rate ------------------------------------------------------------ */
static PyTypeObject *RateType;
static Py_ssize_t ra_remaining, ra_total, ra_rate, ra_last_update, ra_done_event;
static PyObject *py_set_rate, *s_work_done;

/* a float, or an int that converts to a double exactly (Python's mixed arithmetic then gives
   the same results as the double): 1 and *out set, else 0 */
static int
exact_double(PyObject *v, double *out)
{
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (x > (1LL << 53) || x < -(1LL << 53))
            return 0;
        *out = (double)x;
        return 1;
    }
    return 0;
}

static PyObject *
rate_set(PyObject *self, PyObject *rate)
{
    /* the common case has every quantity a float; anything else: the Python method */
    PyObject *state = SLOT(self, ac_state), *engine = SLOT(self, ac_engine);
    PyObject *rem = SLOT(self, ra_remaining), *tot = SLOT(self, ra_total), *old = SLOT(self, ra_rate),
             *last = SLOT(self, ra_last_update), *ev = SLOT(self, ra_done_event);
    double remaining, total;
    if (state == NULL || engine == NULL || rem == NULL || tot == NULL || old == NULL || last == NULL ||
        ev == NULL || !PyFloat_CheckExact(rate) || !exact_double(rem, &remaining) || !exact_double(tot, &total) ||
        !PyFloat_CheckExact(old) || !PyFloat_CheckExact(last) || (ev != Py_None && !PyObject_TypeCheck(ev, EventType)))
        return PyObject_CallFunctionObjArgs(py_set_rate, self, rate, NULL);
    int running = int_eq(state, 0);
    if (running <= 0)
        return running < 0 ? NULL : Py_NewRef(Py_None);
    Py_INCREF(engine);
    PyObject *now_o = cached_get(engine, &c_engine_now, s_now);
    if (now_o == NULL || !PyFloat_CheckExact(now_o)) {
        Py_XDECREF(now_o);
        Py_DECREF(engine);
        return PyObject_CallFunctionObjArgs(py_set_rate, self, rate, NULL);
    }
    double now = PyFloat_AS_DOUBLE(now_o);
    double r_old = PyFloat_AS_DOUBLE(old), lu = PyFloat_AS_DOUBLE(last), r = PyFloat_AS_DOUBLE(rate);
    PyObject *result = NULL;
    if (r_old > 0.0 && now > lu) {
        remaining -= r_old * (now - lu);
        if (remaining < 0.0)
            remaining = 0.0;
        PyObject *v = PyFloat_FromDouble(remaining);
        if (v == NULL)
            goto out;
        slot_set(self, ra_remaining, v);
        Py_DECREF(v);
    }
    slot_set(self, ra_last_update, now_o);
    slot_set(self, ra_rate, rate);
    ev = SLOT(self, ra_done_event);
    if (ev != NULL && ev != Py_None) {
        if (PyObject_TypeCheck(ev, EventType))
            slot_set(ev, ev_cancelled, Py_True);
        else if (PyObject_SetAttr(ev, s_cancelled, Py_True) < 0)
            goto out;
        slot_set(self, ra_done_event, Py_None);
    }
    double delay;
    if (remaining <= total * 1e-9 || remaining <= 0.0)
        delay = 0.0;
    else if (r > 0.0)
        delay = remaining / r;
    else {
        result = Py_NewRef(Py_None);
        goto out;
    }
    PyObject *d = PyFloat_FromDouble(delay);
    PyObject *cb = d == NULL ? NULL : bound_get(self, &c_self_work_done, s_work_done);
    PyObject *e = NULL;
    int plain = cb == NULL ? -1 : plain_schedule(engine);
    if (plain > 0) {  /* engine.schedule(d, cb), run directly */
        e = schedule_impl(engine, engine, d, cb, empty_tuple);
    } else if (plain == 0) {
        PyObject *sargs[3] = {engine, d, cb};
        e = method_call(s_schedule, sargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    }
    Py_XDECREF(cb);
    Py_XDECREF(d);
    if (e == NULL)
        goto out;
    slot_set(self, ra_done_event, e);
    Py_DECREF(e);
    result = Py_NewRef(Py_None);
out:
    Py_DECREF(now_o);
    Py_DECREF(engine);
    return result;
}

static PyMethodDef rate_set_def = {"_set_rate", (PyCFunction)rate_set, METH_O,
                                   "RateActivity._set_rate, compiled (smpy.kernel._accel)"};

static PyObject *
setup_rate(PyObject *module, PyObject *args)
{
    PyObject *cls, *py;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &cls, &py))
        return NULL;
    if (EventType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    Py_XSETREF(RateType, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(py_set_rate, Py_NewRef(py));
#define OFF(var, name) if ((var = slot_offset(RateType, name)) < 0) return NULL
    OFF(ra_remaining, "remaining");
    OFF(ra_total, "total");
    OFF(ra_rate, "rate");
    OFF(ra_last_update, "last_update");
    OFF(ra_done_event, "_done_event");
#undef OFF
    if (s_work_done == NULL && (s_work_done = PyUnicode_InternFromString("_work_done")) == NULL)
        return NULL;
    return PyDescr_NewMethod(RateType, &rate_set_def);
}

/* -- setup and method descriptors ------------------------------------------------------ */
static PyMethodDef engine_run_def = {"run", (PyCFunction)(void (*)(void))engine_run, METH_FASTCALL | METH_KEYWORDS,
                                     "Engine.run, compiled (smpy.kernel._accel)"};
static PyMethodDef engine_schedule_def = {"schedule", (PyCFunction)(void (*)(void))engine_schedule,
                                          METH_FASTCALL | METH_KEYWORDS, "Engine.schedule, compiled (smpy.kernel._accel)"};
static PyMethodDef activity_finish_def = {"_finish", (PyCFunction)activity_finish, METH_NOARGS,
                                          "Activity._finish, compiled (smpy.kernel._accel)"};
static PyMethodDef activity_add_callback_def = {"add_callback", (PyCFunction)activity_add_callback, METH_O,
                                                "Activity.add_callback, compiled (smpy.kernel._accel)"};
static PyMethodDef actor_resume_def = {"_resume", (PyCFunction)actor_resume, METH_NOARGS,
                                       "Actor._resume, compiled (smpy.kernel._accel)"};

static int
take_type(PyObject *o, PyTypeObject **slot)
{
    if (!PyType_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "expected a class");
        return -1;
    }
    Py_INCREF(o);
    Py_XSETREF(*slot, (PyTypeObject *)o);
    return 0;
}

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *ev, *act, *actor, *adict, *killed, *internal, *failed, *push, *pop;
    if (!PyArg_ParseTuple(args, "OOOO!OOOOO", &ev, &act, &actor, &PyDict_Type, &adict, &killed, &internal,
                          &failed, &push, &pop))
        return NULL;
    if (take_type(ev, &EventType) < 0 || take_type(act, &ActivityType) < 0 || take_type(actor, &ActorType) < 0)
        return NULL;
    Py_XSETREF(actors_dict, Py_NewRef(adict));
    Py_XSETREF(ActorKilled, Py_NewRef(killed));
    Py_XSETREF(SmpyInternalError, Py_NewRef(internal));
    Py_XSETREF(ActivityFailed, Py_NewRef(failed));
    Py_XSETREF(heappush, Py_NewRef(push));
    Py_XSETREF(heappop, Py_NewRef(pop));
    if (DequeType == NULL) {  /* collections.deque: its length is its ob_size (deque_len) */
        PyObject *col = PyImport_ImportModule("collections");
        PyObject *dq = col == NULL ? NULL : PyObject_GetAttrString(col, "deque");
        Py_XDECREF(col);
        if (dq == NULL)
            return NULL;
        if (PyType_Check(dq) && ((PyTypeObject *)dq)->tp_itemsize == 0 && ((PyTypeObject *)dq)->tp_as_sequence != NULL)
            DequeType = (PyTypeObject *)dq;  /* held for good */
        else
            Py_DECREF(dq);
    }
#define OFF(var, cls, name) if ((var = slot_offset(cls, name)) < 0) return NULL
    OFF(ev_time, EventType, "time");
    OFF(ev_fn, EventType, "fn");
    OFF(ev_args, EventType, "args");
    OFF(ev_cancelled, EventType, "cancelled");
    OFF(ac_engine, ActivityType, "engine");
    OFF(ac_state, ActivityType, "state");
    OFF(ac_waiters, ActivityType, "waiters");
    OFF(ac_callbacks, ActivityType, "callbacks");
    OFF(ac_exception, ActivityType, "exception");
    OFF(ac_finish_time, ActivityType, "finish_time");
    OFF(at_context, ActorType, "context");
    OFF(at_started, ActorType, "started");
    OFF(at_glet, ActorType, "glet");
    OFF(at_waiting_for, ActorType, "waiting_for");
    OFF(at_wait_label, ActorType, "wait_label");
    OFF(at_killed, ActorType, "killed");
    OFF(at_engine, ActorType, "engine");
    OFF(at_data, ActorType, "data");
#undef OFF
    install_event_pool();
    if (green_api_load() < 0)
        return NULL;
    /* the compiled methods, as descriptors of the kernel's classes */
    PyObject *engine_cls = NULL;
    PyObject *run = NULL, *schedule = NULL, *finish = NULL, *resume = NULL;
    PyObject *engine_mod = PyImport_ImportModule("smpy.kernel.engine");
    if (engine_mod == NULL)
        return NULL;
    engine_cls = PyObject_GetAttrString(engine_mod, "Engine");
    Py_DECREF(engine_mod);
    if (engine_cls == NULL || !PyType_Check(engine_cls)) {
        Py_XDECREF(engine_cls);
        PyErr_SetString(PyExc_TypeError, "smpy.kernel.engine.Engine is not a class");
        return NULL;
    }
    Py_XSETREF(EngineType, (PyTypeObject *)Py_NewRef(engine_cls));
    en_version_ok = 0;
    for (int i = 0; i < E_N; i++) {
        if ((en_off[i] = slot_offset(EngineType, engine_slot_names[i])) < 0) {
            Py_DECREF(engine_cls);
            return NULL;
        }
        Py_XSETREF(en_name[i], PyUnicode_InternFromString(engine_slot_names[i]));
        if (en_name[i] == NULL) {
            Py_DECREF(engine_cls);
            return NULL;
        }
        Py_XSETREF(en_descr[i], Py_XNewRef(_PyType_Lookup(EngineType, en_name[i])));
    }
    run = PyDescr_NewMethod((PyTypeObject *)engine_cls, &engine_run_def);
    schedule = PyDescr_NewMethod((PyTypeObject *)engine_cls, &engine_schedule_def);
    finish = PyDescr_NewMethod(ActivityType, &activity_finish_def);
    resume = PyDescr_NewMethod(ActorType, &actor_resume_def);
    PyObject *add_cb = PyDescr_NewMethod(ActivityType, &activity_add_callback_def);
    Py_DECREF(engine_cls);
    if (run == NULL || schedule == NULL || finish == NULL || resume == NULL || add_cb == NULL) {
        Py_XDECREF(add_cb);
        Py_XDECREF(run);
        Py_XDECREF(schedule);
        Py_XDECREF(finish);
        Py_XDECREF(resume);
        return NULL;
    }
    Py_XSETREF(resume_descr, Py_NewRef(resume));
    Py_XSETREF(schedule_descr, Py_NewRef(schedule));
    return Py_BuildValue("{sNsNsNsNsN}", "run", run, "schedule", schedule, "_finish", finish, "_resume", resume,
                         "add_callback", add_cb);
}

/* the event heap's push and pop, for the tests against heapq */
static PyObject *
heap_push_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "heap_push(heap, item)");
        return NULL;
    }
    if (heappush == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    if (heap_push(args[0], args[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
heap_pop_py(PyObject *module, PyObject *heap)
{
    if (heappop == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup() first");
        return NULL;
    }
    return heap_pop(heap);
}

static PyObject *
green_api(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(green_switch_c != NULL);
}

static PyMethodDef methods[] = {
    {"heap_push", (PyCFunction)(void (*)(void))heap_push_py, METH_FASTCALL,
     "heap_push(heap, item): heapq.heappush as the compiled engine makes it"},
    {"heap_pop", heap_pop_py, METH_O, "heap_pop(heap): heapq.heappop as the compiled engine makes it"},
    {"setup", setup, METH_VARARGS, "setup(Event, Activity, Actor, actors.__dict__, ActorKilled, "
     "SmpyInternalError, ActivityFailed, heappush, heappop) -> the compiled methods by name"},
    {"setup_rate", setup_rate, METH_VARARGS, "setup_rate(RateActivity, RateActivity._set_rate) -> the "
     "compiled _set_rate descriptor (after setup())"},
    {"fast_dealloc", fast_dealloc, METH_O, "fast_dealloc(cls) -> whether cls's instances are released by the "
     "compiled deallocation (a class with __slots__ only, no finalizer, every base such a class)"},
    {"bound_api", bound_api, METH_NOARGS, "bound_api() -> a capsule of the C function that makes bound "
     "methods in kept memory (smpy/network/_netaccel.c)"},
    {"green_api", green_api, METH_NOARGS, "green_api() -> whether greenlet's C API switches the actors "
     "(after setup())"},
    {"block_on", (PyCFunction)(void (*)(void))block_on, METH_FASTCALL | METH_KEYWORDS,
     "block_on(activity, label=None): smpy.kernel.actors.block_on, compiled"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_accel", .m_doc = "smpy's compiled per-message path", .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    INTERN(s_now, "now"); INTERN(s_seq, "_seq"); INTERN(s_heap, "_heap"); INTERN(s_ready, "_ready");
    INTERN(s_models, "_models"); INTERN(s_stopping, "stopping"); INTERN(s_dirty, "dirty");
    INTERN(s_update, "update"); INTERN(s_os_poller, "os_poller"); INTERN(s_waits, "waits");
    INTERN(s_poll, "poll"); INTERN(s_idle, "idle"); INTERN(s_daemon_heap, "_daemon_heap");
    INTERN(s_run_daemons, "_run_daemons"); INTERN(s_advance, "_advance");
    INTERN(s_on_time_advance, "on_time_advance"); INTERN(s_slots, "_slots"); INTERN(s_rounds, "rounds");
    INTERN(s_events_processed, "events_processed"); INTERN(s_deadlock_check, "_deadlock_check");
    INTERN(s_resume, "_resume"); INTERN(s_switch_in, "switch_in"); INTERN(s_switch_out, "switch_out");
    INTERN(s_switch, "switch"); INTERN(s_parent, "parent"); INTERN(s_popleft, "popleft");
    INTERN(s_append, "append"); INTERN(s_current, "_current"); INTERN(s_describe, "describe");
    INTERN(s_time, "time"); INTERN(s_schedule, "schedule"); INTERN(s_fn, "fn"); INTERN(s_args, "args"); INTERN(s_cancelled, "cancelled"); INTERN(s_compact_at, "_compact_at");
    INTERN(s_engine, "engine"); INTERN(s_state, "state"); INTERN(s_waiters, "waiters");
    INTERN(s_callbacks, "callbacks"); INTERN(s_exception, "exception"); INTERN(s_finish_time, "finish_time");
    INTERN(s_context, "context"); INTERN(s_glet, "glet"); INTERN(s_waiting_for, "waiting_for");
    INTERN(s_wait_label, "wait_label"); INTERN(s_killed, "killed"); INTERN(s_data, "data");
    INTERN(s_started, "started");
    if ((f_zero = PyFloat_FromDouble(0.0)) == NULL || (i_one = PyLong_FromLong(1)) == NULL ||
        (i_zero = PyLong_FromLong(0)) == NULL || (i_done = PyLong_FromLong(1)) == NULL ||
        (i_failed = PyLong_FromLong(2)) == NULL || (empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    return PyModule_Create(&moddef);
}
