/* The compiled common case of point-to-point posting (issue 24, item 1).
 *
 * Line-by-line C translations of smpy.runtime.p2p's isend, irecv and wait, and of the
 * delivery steps _pair, _start_transfer, _arrived and _deliver, which stay the
 * reference (the pure path, used when this file cannot be compiled or smpy/accel is off).
 * Each first checks that the call is the common case: no fault tolerance event, no PROC_NULL
 * peer, no sender overhead to sleep, no tracer and no time-independent trace, no deadlock
 * label; otherwise, before doing anything, it calls the Python function with the same
 * arguments. In the common case it does what the Python function does, in the same order:
 * the request is made with every field its constructor sets (SendRequest.__init__ and
 * RecvRequest.__init__, by slot offsets), matched against the peer's queue in posting order,
 * and the rest (_pair, _start_transfer, _wake_probers, _detach, finish, block_on) is called
 * by name from the p2p module's globals, as the Python code calls it.
 *
 * Built on first use by smpy/runtime/p2p.py (smpy/support/cext.py) and put in place by
 * smpy.kernel.accel with the kernel's compiled functions.
 */
#define PY_SSIZE_T_CLEAN
#include "_cext.h"

static PyObject *p2p_dict;          /* smpy.runtime.p2p.__dict__ */
static PyTypeObject *SendType, *RecvType;
static PyObject *py_isend, *py_irecv, *py_wait, *py_pair, *py_deliver, *py_arrived, *py_start_transfer;
static PyObject *LANDED, *partial_type;
static long FAILED_STATE = 2;
static long ANY_SOURCE, ANY_TAG, PROC_NULL, P2P;

/* slots set by the constructors, in their order */
enum {
    F_ENGINE, F_STATE, F_WAITERS, F_CALLBACKS, F_EXCEPTION, F_START, F_FINISH, F_KIND, F_OWNER,
    F_COMM, F_CHANNEL, F_CALL, F_PEER, F_TAG, F_SOURCE, F_NBYTES, F_ERROR, F_CANCELLED, F_PAYLOAD,
    F_BUF, F_DATATYPE, F_PERSISTENT, F_USER_DATA, F_TI,
    F_FLOW, F_ARRIVED, F_MATCH, F_DETACHED, F_SYNC, F_SRC_LOCAL, F_POSTED_AT, NFIELDS
};
static const char *field_names[NFIELDS] = {
    "engine", "state", "waiters", "callbacks", "exception", "start_time", "finish_time", "kind", "owner",
    "comm", "channel", "call", "peer", "tag", "source", "nbytes", "error", "cancelled", "payload",
    "buf", "datatype", "persistent", "user_data", "ti",
    "flow", "arrived", "match", "detached", "sync", "src_local", "posted_at",
};
static Py_ssize_t send_off[NFIELDS], recv_off[NFIELDS];

static PyObject *s_world, *s_revoked, *s_ft, *s_detected, *s_detached_thresh, *s_o_send, *s_o_isend,
    *s_engine, *s_now, *s_tracer, *s_ti, *s_rank_of, *s_rank, *s_sboxes, *s_boxes, *s_eager_thresh,
    *s_processes, *s_rgroup, *s_host, *s_posted, *s_unexpected, *s_probers, *s_peer, *s_tag,
    *s_src_local, *s_state, *s_kind, *s_o_recv, *s_finish, *s__finish, *s__pair, *s__start_transfer,
    *s__wake_probers, *s__detach, *s_block_on, *s_call, *s_sync, *s_blocking, *s_label, *s_buf,
    *s_owner, *s_match, *s_flow, *s_arrived, *s_detached, *s_nbytes, *s__arrived, *s__deliver, *s__copy_in,
    *s__transfer_failed, *s_transfer, *s_add_callback, *s_ENVELOPE_BYTES;
static PyObject *i_zero, *i_minus1, *i_send, *i_recv, *f_minus1;

/* a == b for ints (exact ints compared in C) */
/* where the attributes read by name live (smpy/support/_cext.h, cached_get) */
static slot_cache c_box_posted, c_box_unexpected, c_buf_datatype, c_buf_mem, c_buf_nbytes, c_buf_offset,
    c_comm_boxes, c_comm_rank_of, c_comm_rgroup, c_comm_sboxes, c_dp_host, c_dt_contiguous, c_dt_size,
    c_engine_now, c_flow_state, c_folded_active, c_owner_host, c_owner_world, c_proc_host, c_proc_rank,
    c_proc_world, c_req_kind, c_req_state, c_rr_peer, c_rr_tag, c_s_src_local, c_s_tag, c_spec_count,
    c_spec_datatype, c_spec_mem, c_spec_offset, c_world_detached_thresh, c_world_eager_thresh, c_world_engine,
    c_world_ft, c_world_processes, c_proc_o_send, c_proc_o_isend, c_world_tracer, c_world_ti, c_req_ti,
    c_proc_o_recv, c_comm_revoked, c_ft_detected, c_copies_ledger, c_folded_active2, c_buf_count;

static inline int
int_equal(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
        long x = PyLong_AsLong(a), y = PyLong_AsLong(b);
        if ((x == -1 || y == -1) && PyErr_Occurred()) {
            PyErr_Clear();
            return PyObject_RichCompareBool(a, b, Py_EQ);
        }
        return x == y;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* a < b: exact ints of at most one digit compared in C, anything else by the protocol */
static inline int
int_less(PyObject *a, PyObject *b)
{
    long x, y;
    if (cext_small_int(a, &x) && cext_small_int(b, &y))
        return x < y;
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* getattr(o, name) is None, at a site that remembers where the attribute lives (cached_get):
   1, 0, -1 */
static inline int
is_none_at(PyObject *o, slot_cache *c, PyObject *name)
{
    PyObject *v = cached_get(o, c, name);
    if (v == NULL)
        return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

/* comm.revoked or (world.ft is not None and world.ft.detected) */
static int
faults(PyObject *comm, PyObject *world)
{
    PyObject *rv = cached_get(comm, &c_comm_revoked, s_revoked);
    if (rv == NULL)
        return -1;
    int r = PyObject_IsTrue(rv);
    Py_DECREF(rv);
    if (r != 0)
        return r;
    PyObject *ft = cached_get(world, &c_world_ft, s_ft);
    if (ft == NULL)
        return -1;
    if (ft == Py_None) {
        r = 0;
    } else {
        PyObject *d = cached_get(ft, &c_ft_detected, s_detected);
        r = d == NULL ? -1 : PyObject_IsTrue(d);
        Py_XDECREF(d);
    }
    Py_DECREF(ft);
    return r;
}

/* a request with every field its constructor sets (the Python constructors inline
   Request.__init__ and Activity.__init__ the same way: tests/kernel/test_flat_inits.py) */
static PyObject *
new_request(PyTypeObject *tp, Py_ssize_t *off, int nfields, PyObject *owner, PyObject *world, PyObject *comm,
            PyObject *channel, PyObject *call, PyObject *peer, PyObject *tag, PyObject *kind)
{
    PyObject *engine = cached_get(world, &c_world_engine, s_engine);
    if (engine == NULL)
        return NULL;
    PyObject *now = cached_get(engine, &c_engine_now, s_now);
    PyObject *waiters = now == NULL ? NULL : PyList_New(0);
    PyObject *r = waiters == NULL ? NULL : tp->tp_alloc(tp, 0);
    if (r == NULL) {
        Py_XDECREF(waiters);
        Py_XDECREF(now);
        Py_DECREF(engine);
        return NULL;
    }
    slot_set(r, off[F_ENGINE], engine);
    slot_set(r, off[F_STATE], i_zero);
    slot_set(r, off[F_WAITERS], waiters);
    slot_set(r, off[F_CALLBACKS], Py_None);
    slot_set(r, off[F_EXCEPTION], Py_None);
    slot_set(r, off[F_START], now);
    slot_set(r, off[F_FINISH], f_minus1);
    slot_set(r, off[F_KIND], kind);
    slot_set(r, off[F_OWNER], owner);
    slot_set(r, off[F_COMM], comm);
    slot_set(r, off[F_CHANNEL], channel);
    slot_set(r, off[F_CALL], call);
    slot_set(r, off[F_PEER], peer);
    slot_set(r, off[F_TAG], tag);
    slot_set(r, off[F_SOURCE], peer);
    slot_set(r, off[F_NBYTES], i_zero);
    slot_set(r, off[F_ERROR], i_zero);
    slot_set(r, off[F_CANCELLED], Py_False);
    slot_set(r, off[F_PAYLOAD], Py_None);
    slot_set(r, off[F_BUF], Py_None);
    slot_set(r, off[F_DATATYPE], Py_None);
    slot_set(r, off[F_PERSISTENT], Py_False);
    slot_set(r, off[F_USER_DATA], Py_None);
    slot_set(r, off[F_TI], Py_None);
    if (nfields == NFIELDS) {  /* SendRequest */
        slot_set(r, off[F_FLOW], Py_None);
        slot_set(r, off[F_ARRIVED], Py_False);
        slot_set(r, off[F_MATCH], Py_None);
        slot_set(r, off[F_DETACHED], Py_False);
        slot_set(r, off[F_SYNC], Py_False);
        slot_set(r, off[F_SRC_LOCAL], i_minus1);
        /* the constructor's 0.0, which isend replaces with engine.now before anything reads it:
           now at once (no float made per message) */
        slot_set(r, off[F_POSTED_AT], now);
    } else {
        slot_set(r, off[F_MATCH], Py_None);
    }
    Py_DECREF(waiters);
    Py_DECREF(now);
    Py_DECREF(engine);
    return r;
}

/* d[key] for an exact dict and an exact int key (borrowed; NULL without an error when
 * absent): the value read last for (dict, key's value) kept in a small table with the dict's
 * version (PEP 509: while it is the version read at, the dict is unchanged, and holds the
 * value; an int's hash and comparison run no code). comm.rank_of[proc.rank], once per isend
 * and irecv, is another key at every message of a ring: a per-site memo would miss. */
#ifdef CEXT_DICT_VERSIONS
#define INT_MEMOS 2048
static struct {
    PyObject *dict;  /* compared only */
    uint64_t version;
    long key;
    PyObject *value;
} int_memos[INT_MEMOS];
#endif

static inline PyObject *
dict_int_get(PyObject *d, PyObject *key)
{
#ifdef CEXT_DICT_VERSIONS
    long k;
    if (cext_small_int(key, &k)) {
        uintptr_t h = ((uintptr_t)d >> 4) * 31u + (uintptr_t)k;
        size_t i = (h ^ (h >> 11)) & (INT_MEMOS - 1);
        if (int_memos[i].dict == d && int_memos[i].version == DICT_VERSION(d) && int_memos[i].key == k &&
            int_memos[i].value != NULL)
            return int_memos[i].value;
        PyObject *v = PyDict_GetItemWithError(d, key);
        if (v != NULL) {
            int_memos[i].dict = d;
            int_memos[i].version = DICT_VERSION(d);
            int_memos[i].key = k;
            int_memos[i].value = v;
        }
        return v;
    }
#endif
    return PyDict_GetItemWithError(d, key);
}

/* x[key] for a list/tuple/dict/sequence (new reference): an exact list or tuple and an exact
 * int index in range, an exact dict and an exact int key it holds (no code runs in the int's
 * hash and comparison), read in C; anything else (a missing key, a negative index) by the
 * protocol */
static inline PyObject *
item(PyObject *x, PyObject *key)
{
    if (PyLong_CheckExact(key)) {
        if (PyList_CheckExact(x) || PyTuple_CheckExact(x)) {
            Py_ssize_t i = PyLong_AsSsize_t(key);
            if (i >= 0 && i < Py_SIZE(x))
                return Py_NewRef(PyList_CheckExact(x) ? PyList_GET_ITEM(x, i) : PyTuple_GET_ITEM(x, i));
            if (i == -1 && PyErr_Occurred())
                PyErr_Clear();
        } else if (PyDict_CheckExact(x)) {
            PyObject *v = dict_int_get(x, key);
            if (v != NULL)
                return Py_NewRef(v);
            if (PyErr_Occurred())
                return NULL;
        }
    }
    return PyObject_GetItem(x, key);
}

/* the p2p module's global ``name`` (borrowed; NameError when absent): dict_global with the
 * value read last kept per name (dict_memo_get: while the module dict's version is the one it
 * was read at, the dict is unchanged and holds it), so that a collision in _cext.h's shared
 * tables costs no lookup. The names are this file's interned statics, a dozen: the table
 * never fills. */
#define P2P_MEMOS 64
static struct {
    PyObject *name;
    dict_memo m;
} p2p_memos[P2P_MEMOS];

static inline PyObject *
p2p_global(PyObject *name)
{
    size_t i = ((uintptr_t)name >> 4) & (P2P_MEMOS - 1);
    while (p2p_memos[i].name != name && p2p_memos[i].name != NULL)
        i = (i + 1) & (P2P_MEMOS - 1);
    p2p_memos[i].name = name;  /* held by this file's statics */
    PyObject *v = dict_memo_get(&p2p_memos[i].m, p2p_dict, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_NameError, name);
    return v;
}

static PyObject *
call2(PyObject *name, PyObject *a, PyObject *b)
{
    PyObject *fn = p2p_global(name);
    if (fn == NULL)
        return NULL;
    PyObject *args[2] = {a, b};
    return call_direct_n(fn, args, 2);  /* this file's functions called directly (_cext.h) */
}

/* -- isend ------------------------------------------------------------------------------- */
static PyObject *
isend_fallback(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return PyObject_Vectorcall(py_isend, args, nargs, kwnames);
}

static PyObject *
isend(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* isend(proc, comm, channel, payload, nbytes, dest, tag, call="MPI_Isend", sync=False,
             blocking=False) */
    PyObject *a[10] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, Py_False, Py_False};
    static const char *names[10] = {"proc", "comm", "channel", "payload", "nbytes", "dest", "tag", "call",
                                    "sync", "blocking"};
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 10)
        return isend_fallback(args, nargs, kwnames);
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = 0;
        for (int i = (int)nargs; i < 10 && !found; i++)
            if ((i == 9 && key == s_blocking) || PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {  /* interned: identity first */
                a[i] = args[nargs + k];
                found = 1;
            }
        if (!found)
            return isend_fallback(args, nargs, kwnames);
    }
    for (int i = 0; i < 7; i++)
        if (a[i] == NULL)
            return isend_fallback(args, nargs, kwnames);
    PyObject *proc = a[0], *comm = a[1], *channel = a[2], *payload = a[3], *nbytes = a[4], *dest = a[5],
             *tag = a[6], *sync_o = a[8], *blocking_o = a[9];
    int sync = PyObject_IsTrue(sync_o), blocking = PyObject_IsTrue(blocking_o);
    if (sync < 0 || blocking < 0)
        return NULL;
    PyObject *world = cached_get(proc, &c_proc_world, s_world);
    if (world == NULL)
        return NULL;
    PyObject *req = NULL, *r = NULL, *call = NULL;
    /* the rare cases, decided before anything is done: the Python function */
    int rare = faults(comm, world);
    if (rare == 0)
        rare = int_eq(dest, PROC_NULL);
    int detached = 0;
    if (rare == 0 && !sync) {
        PyObject *th = cached_get(world, &c_world_detached_thresh, s_detached_thresh);
        detached = th == NULL ? -1 : int_less(nbytes, th);
        Py_XDECREF(th);
        if (detached < 0)
            rare = -1;
    }
    if (rare == 0 && (detached || sync || !blocking)) {
        int none = (blocking ? is_none_at(proc, &c_proc_o_send, s_o_send) : is_none_at(proc, &c_proc_o_isend, s_o_isend));
        rare = none < 0 ? -1 : !none;  /* an overhead table: the sender may sleep */
    }
    if (rare == 0) {
        int none = is_none_at(world, &c_world_tracer, s_tracer);
        rare = none < 0 ? -1 : !none;
    }
    if (rare == 0) {
        int none = is_none_at(world, &c_world_ti, s_ti);
        rare = none < 0 ? -1 : !none;
    }
    if (rare != 0) {
        Py_DECREF(world);
        return rare < 0 ? NULL : isend_fallback(args, nargs, kwnames);
    }
    call = a[7] != NULL ? Py_NewRef(a[7]) : PyUnicode_FromString("MPI_Isend");
    if (call == NULL)
        goto out;
    req = new_request(SendType, send_off, NFIELDS, proc, world, comm, channel, call, dest, tag, i_send);
    if (req == NULL)
        goto out;
    slot_set(req, send_off[F_PAYLOAD], payload);
    slot_set(req, send_off[F_NBYTES], nbytes);
    slot_set(req, send_off[F_SYNC], sync ? Py_True : Py_False);
    /* req.posted_at = world.engine.now: new_request put there the value it read from the same
       slots, and no code ran since */
    /* src = req.src_local = comm.rank_of[proc.rank]; box = comm.sboxes[channel][dest] */
    PyObject *src, *box;
    {
        PyObject *rank_of = cached_get(comm, &c_comm_rank_of, s_rank_of);
        PyObject *rank = rank_of == NULL ? NULL : cached_get(proc, &c_proc_rank, s_rank);
        src = rank == NULL ? NULL : item(rank_of, rank);
        Py_XDECREF(rank);
        Py_XDECREF(rank_of);
        if (src == NULL)
            goto fail;
        slot_set(req, send_off[F_SRC_LOCAL], src);
        Py_DECREF(src);
        src = SLOT(req, send_off[F_SRC_LOCAL]);  /* borrowed from the request */
        PyObject *sboxes = cached_get(comm, &c_comm_sboxes, s_sboxes);
        PyObject *chan = sboxes == NULL ? NULL : item(sboxes, channel);
        box = chan == NULL ? NULL : item(chan, dest);
        Py_XDECREF(chan);
        Py_XDECREF(sboxes);
        if (box == NULL)
            goto fail;
    }
    /* eager: if nbytes < world.eager_thresh and not sync: _start_transfer(req, host of dest) */
    if (!sync) {
        PyObject *th = cached_get(world, &c_world_eager_thresh, s_eager_thresh);
        int eager = th == NULL ? -1 : int_less(nbytes, th);
        Py_XDECREF(th);
        if (eager > 0) {
            PyObject *procs = cached_get(world, &c_world_processes, s_processes);
            PyObject *rgroup = procs == NULL ? NULL : cached_get(comm, &c_comm_rgroup, s_rgroup);
            PyObject *wr = rgroup == NULL ? NULL : item(rgroup, dest);
            PyObject *dp = wr == NULL ? NULL : item(procs, wr);
            PyObject *host = dp == NULL ? NULL : cached_get(dp, &c_dp_host, s_host);
            Py_XDECREF(dp);
            Py_XDECREF(wr);
            Py_XDECREF(rgroup);
            Py_XDECREF(procs);
            PyObject *x = host == NULL ? NULL : call2(s__start_transfer, req, host);
            Py_XDECREF(host);
            if (x == NULL)
                eager = -1;
            else
                Py_DECREF(x);
        }
        if (eager < 0) {
            Py_DECREF(box);
            goto fail;
        }
    }
    /* first fit among the posted receives */
    {
        PyObject *posted = cached_get(box, &c_box_posted, s_posted);
        if (posted == NULL || !PyList_Check(posted)) {
            if (posted != NULL)
                PyErr_SetString(PyExc_TypeError, "a mailbox's posted queue must be a list");
            Py_XDECREF(posted);
            Py_DECREF(box);
            goto fail;
        }
        int matched = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(posted); i++) {
            PyObject *rr = Py_NewRef(PyList_GET_ITEM(posted, i));
            PyObject *peer = cached_get(rr, &c_rr_peer, s_peer);
            int ok = peer == NULL ? -1 : int_equal(peer, src);
            if (ok == 0)
                ok = int_eq(peer, ANY_SOURCE);
            Py_XDECREF(peer);
            if (ok > 0) {
                PyObject *rtag = cached_get(rr, &c_rr_tag, s_tag);
                ok = rtag == NULL ? -1 : int_equal(rtag, tag);
                if (ok == 0)
                    ok = int_eq(rtag, ANY_TAG);
                Py_XDECREF(rtag);
            }
            if (ok > 0) {
                if ((PyList_CheckExact(posted) ? PyList_SetSlice(posted, i, i + 1, NULL)
                                               : PySequence_DelItem(posted, i)) < 0)
                    ok = -1;
                else {
                    PyObject *x = call2(s__pair, req, rr);
                    if (x == NULL)
                        ok = -1;
                    else
                        Py_DECREF(x);
                }
                matched = 1;
            }
            Py_DECREF(rr);
            if (ok < 0) {
                Py_DECREF(posted);
                Py_DECREF(box);
                goto fail;
            }
            if (matched)
                break;
        }
        Py_DECREF(posted);
        if (!matched) {
            PyObject *unexpected = cached_get(box, &c_box_unexpected, s_unexpected);
            int rc = unexpected == NULL ? -1 : PyList_Check(unexpected) ? PyList_Append(unexpected, req) : -2;
            Py_XDECREF(unexpected);
            if (rc == -2) {
                PyErr_SetString(PyExc_TypeError, "a mailbox's unexpected queue must be a list");
                rc = -1;
            }
            if (rc == 0) {
                rc = attr_true(box, s_probers);
                if (rc > 0) {
                    PyObject *fn = p2p_global(s__wake_probers);
                    PyObject *pargs[3] = {box, src, tag};
                    PyObject *x = fn == NULL ? NULL : PyObject_Vectorcall(fn, pargs, 3, NULL);
                    rc = x == NULL ? -1 : 0;
                    Py_XDECREF(x);
                }
            }
            if (rc < 0) {
                Py_DECREF(box);
                goto fail;
            }
        }
    }
    Py_DECREF(box);
    if (detached) {
        if (Py_TYPE(payload) == &PyMemoryView_Type) {  /* borrowed bytes: copied now */
            PyObject *fn = p2p_global(s__detach);
            PyObject *x = fn == NULL ? NULL : call_direct_n(fn, &req, 1);
            if (x == NULL)
                goto fail;
            Py_DECREF(x);
        }
        slot_set(req, send_off[F_DETACHED], Py_True);
        PyObject *margs[1] = {req};
        PyObject *x = cmethod_call(s__finish, margs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET);
        if (x == NULL)
            goto fail;
        Py_DECREF(x);
    }
    r = req;
    req = NULL;
    goto out;
fail:
    Py_CLEAR(req);
out:
    Py_XDECREF(call);
    Py_DECREF(world);
    return r;
}

/* -- irecv ------------------------------------------------------------------------------- */
static PyObject *
irecv(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* irecv(proc, comm, channel, source, tag, buf=None, call="MPI_Irecv") */
    PyObject *a[7] = {NULL, NULL, NULL, NULL, NULL, Py_None, NULL};
    static const char *names[7] = {"proc", "comm", "channel", "source", "tag", "buf", "call"};
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 7)
        return PyObject_Vectorcall(py_irecv, args, nargs, kwnames);
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = 0;
        for (int i = (int)nargs; i < 7 && !found; i++)
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
                a[i] = args[nargs + k];
                found = 1;
            }
        if (!found)
            return PyObject_Vectorcall(py_irecv, args, nargs, kwnames);
    }
    for (int i = 0; i < 5; i++)
        if (a[i] == NULL)
            return PyObject_Vectorcall(py_irecv, args, nargs, kwnames);
    PyObject *proc = a[0], *comm = a[1], *channel = a[2], *source = a[3], *tag = a[4], *buf = a[5];
    PyObject *world = cached_get(proc, &c_proc_world, s_world);
    if (world == NULL)
        return NULL;
    int rare = faults(comm, world);
    if (rare == 0)
        rare = int_eq(source, PROC_NULL);
    if (rare == 0) {
        int p2p = int_eq(channel, P2P);
        if (p2p != 0) {
            int none = p2p < 0 ? -1 : is_none_at(world, &c_world_ti, s_ti);
            rare = none < 0 ? -1 : !none;
        }
    }
    if (rare != 0) {
        Py_DECREF(world);
        return rare < 0 ? NULL : PyObject_Vectorcall(py_irecv, args, nargs, kwnames);
    }
    PyObject *r = NULL, *req = NULL;
    PyObject *call = a[6] != NULL ? Py_NewRef(a[6]) : PyUnicode_FromString("MPI_Irecv");
    if (call == NULL)
        goto out;
    req = new_request(RecvType, recv_off, F_TI + 1, proc, world, comm, channel, call, source, tag, i_recv);
    if (req == NULL)
        goto out;
    slot_set(req, recv_off[F_BUF], buf);
    /* me = comm.rank_of[proc.rank]; box = comm.boxes[channel][me] */
    PyObject *box;
    {
        PyObject *rank_of = cached_get(comm, &c_comm_rank_of, s_rank_of);
        PyObject *rank = rank_of == NULL ? NULL : cached_get(proc, &c_proc_rank, s_rank);
        PyObject *me = rank == NULL ? NULL : item(rank_of, rank);
        Py_XDECREF(rank);
        Py_XDECREF(rank_of);
        PyObject *boxes = me == NULL ? NULL : cached_get(comm, &c_comm_boxes, s_boxes);
        PyObject *chan = boxes == NULL ? NULL : item(boxes, channel);
        box = chan == NULL ? NULL : item(chan, me);
        Py_XDECREF(chan);
        Py_XDECREF(boxes);
        Py_XDECREF(me);
        if (box == NULL)
            goto fail;
    }
    PyObject *unexpected = cached_get(box, &c_box_unexpected, s_unexpected);
    if (unexpected == NULL || !PyList_Check(unexpected)) {
        if (unexpected != NULL)
            PyErr_SetString(PyExc_TypeError, "a mailbox's unexpected queue must be a list");
        Py_XDECREF(unexpected);
        Py_DECREF(box);
        goto fail;
    }
    int matched = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(unexpected); i++) {
        PyObject *s = Py_NewRef(PyList_GET_ITEM(unexpected, i));
        PyObject *sl = cached_get(s, &c_s_src_local, s_src_local);
        int ok = sl == NULL ? -1 : int_equal(source, sl);
        Py_XDECREF(sl);
        if (ok == 0)
            ok = int_eq(source, ANY_SOURCE);
        if (ok > 0) {
            PyObject *stag = cached_get(s, &c_s_tag, s_tag);
            ok = stag == NULL ? -1 : int_equal(tag, stag);
            Py_XDECREF(stag);
            if (ok == 0)
                ok = int_eq(tag, ANY_TAG);
        }
        if (ok > 0) {
            matched = 1;
            if ((PyList_CheckExact(unexpected) ? PyList_SetSlice(unexpected, i, i + 1, NULL)
                                               : PySequence_DelItem(unexpected, i)) < 0)
                ok = -1;
            else {
                PyObject *x = call2(s__pair, s, req);
                if (x == NULL)
                    ok = -1;
                else
                    Py_DECREF(x);
            }
        }
        Py_DECREF(s);
        if (ok < 0) {
            Py_DECREF(unexpected);
            Py_DECREF(box);
            goto fail;
        }
        if (matched)
            break;
    }
    Py_DECREF(unexpected);
    if (!matched) {
        PyObject *posted = cached_get(box, &c_box_posted, s_posted);
        int rc = posted == NULL ? -1 : PyList_Check(posted) ? PyList_Append(posted, req) : -2;
        Py_XDECREF(posted);
        if (rc == -2)
            PyErr_SetString(PyExc_TypeError, "a mailbox's posted queue must be a list");
        if (rc < 0) {
            Py_DECREF(box);
            goto fail;
        }
    }
    Py_DECREF(box);
    r = req;
    req = NULL;
    goto out;
fail:
    Py_CLEAR(req);
out:
    Py_XDECREF(call);
    Py_DECREF(world);
    return r;
}

/* -- wait -------------------------------------------------------------------------------- */
/* p2p_global in a function of its own, for the frames that stay on a blocked rank's stack */
CEXT_OUTLINE PyObject *
p2p_global_outline(PyObject *name)
{
    return p2p_global(name);
}

/* wait's steps after the blocking (out of line: its frame is not on the rank's stack while
 * the rank blocks): finish() when it has work, req.state == FAILED or req.ti is not None or
 * (req.kind == RECV and proc.o_recv is not None); req (new reference), or NULL */
CEXT_OUTLINE PyObject *
wait_done(PyObject *proc, PyObject *req)
{
    PyObject *state = cached_get(req, &c_req_state, s_state);
    if (state == NULL)
        return NULL;
    int work = int_eq(state, 2);
    Py_DECREF(state);
    if (work == 0) {
        int none = is_none_at(req, &c_req_ti, s_ti);
        work = none < 0 ? -1 : !none;
    }
    if (work == 0) {
        PyObject *kind = cached_get(req, &c_req_kind, s_kind);
        work = kind == NULL ? -1 : int_eq(kind, 1);
        Py_XDECREF(kind);
        if (work > 0) {
            int none = is_none_at(proc, &c_proc_o_recv, s_o_recv);
            work = none < 0 ? -1 : !none;
        }
    }
    if (work < 0)
        return NULL;
    if (work) {
        PyObject *x = call2(s_finish, proc, req);
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
    }
    return Py_NewRef(req);
}

static PyObject *
wait(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* wait(proc, req, label=None): a label (a deadlock description made by a lambda): Python */
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)))
        return PyObject_Vectorcall(py_wait, args, nargs, kwnames);
    PyObject *req = args[1];
    PyObject *state = cached_get(req, &c_req_state, s_state);
    if (state == NULL)
        return NULL;
    int running = int_eq(state, 0);
    Py_DECREF(state);
    if (running < 0)
        return NULL;
    if (running) {
        PyObject *fn = p2p_global_outline(s_block_on);  /* out of line: wait's frame stays small */
        if (fn == NULL)
            return NULL;
        PyObject *bargs[2] = {req, Py_None};
        PyObject *x = call_direct(fn, bargs, 2, NULL);
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
    }
    return wait_done(args[0], req);
}

/* -- delivery: _pair, _start_transfer, _arrived, _deliver ------------------------------- */
static inline int
is_send(PyObject *o)
{
    return PyObject_TypeCheck(o, SendType);
}

static inline int
is_recv(PyObject *o)
{
    return PyObject_TypeCheck(o, RecvType);
}

static PyObject *
call_global2(PyObject *name, PyObject *a, PyObject *b)
{
    return call2(name, a, b);
}

/* flow.state == FAILED */
static int
flow_failed(PyObject *flow)
{
    PyObject *st = cached_get(flow, &c_flow_state, s_state);
    if (st == NULL)
        return -1;
    int r = int_eq(st, FAILED_STATE);
    Py_DECREF(st);
    return r;
}

static PyObject *
deliver(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _deliver(send, recv); a traced or TI-recorded delivery: the Python function */
    if (nargs != 2 || !is_send(args[0]) || !is_recv(args[1]))
        return PyObject_Vectorcall(py_deliver, args, nargs, NULL);
    PyObject *send = args[0], *recv = args[1];
    PyObject *ti = SLOT(recv, recv_off[F_TI]);
    if (ti == NULL || ti != Py_None)
        return PyObject_Vectorcall(py_deliver, args, nargs, NULL);
    PyObject *owner = slot_get(recv, recv_off[F_OWNER], s_owner);
    PyObject *world = owner == NULL ? NULL : cached_get(owner, &c_owner_world, s_world);
    Py_XDECREF(owner);
    int traced = world == NULL ? -1 : !is_none_at(world, &c_world_tracer, s_tracer);
    Py_XDECREF(world);
    if (traced < 0)
        return NULL;
    if (traced)
        return PyObject_Vectorcall(py_deliver, args, nargs, NULL);
    /* if send.payload is not _LANDED: _copy_in(send, recv) */
    PyObject *payload = SLOT(send, send_off[F_PAYLOAD]);
    if (payload != LANDED) {
        PyObject *x = call_global2(s__copy_in, send, recv);
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
    }
    slot_set(send, send_off[F_PAYLOAD], Py_None);
    /* recv._finish(); if not send.detached: send._finish() */
    PyObject *margs[1] = {recv};
    PyObject *x = cmethod_call(s__finish, margs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    PyObject *det = slot_get(send, send_off[F_DETACHED], s_detached);
    int detached = det == NULL ? -1 : PyObject_IsTrue(det);
    Py_XDECREF(det);
    if (detached < 0)
        return NULL;
    if (!detached) {
        margs[0] = send;
        x = cmethod_call(s__finish, margs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET);
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
    }
    slot_set(send, send_off[F_MATCH], Py_None);
    Py_RETURN_NONE;
}

static PyObject *
arrived(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _arrived(send, _flow=None) */
    if (nargs < 1 || nargs > 2 || !is_send(args[0]))
        return PyObject_Vectorcall(py_arrived, args, nargs, NULL);
    PyObject *send = args[0];
    slot_set(send, send_off[F_ARRIVED], Py_True);
    PyObject *recv = slot_get(send, send_off[F_MATCH], s_match);
    if (recv == NULL)
        return NULL;
    PyObject *flow = slot_get(send, send_off[F_FLOW], s_flow);
    int failed = flow == NULL ? -1 : flow_failed(flow);
    Py_XDECREF(flow);
    PyObject *x = NULL;
    if (failed > 0)
        x = call_global2(s__transfer_failed, send, recv);
    else if (failed == 0)
        x = recv == Py_None ? Py_NewRef(Py_None) : call_global2(s__deliver, send, recv);
    Py_DECREF(recv);
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    Py_RETURN_NONE;
}

/* -- the arrival callback --------------------------------------------------------------
 * partial(_arrived, send) when the p2p module's _arrived is this file's: a small callable
 * holding ``send`` that calls arrived(send, flow) directly (a partial object costs a call
 * tuple, its own argument tuple and an empty keyword dict per message); the same calls with
 * the same arguments. */
typedef struct {
    PyObject_HEAD
    PyObject *send;
    vectorcallfunc vectorcall;
} ArrivedCb;

static PyObject *
arrived_cb_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || n > 1) {
        PyErr_SetString(PyExc_TypeError, "_arrived() takes the send and at most the flow");
        return NULL;
    }
    PyObject *all[2] = {((ArrivedCb *)self)->send, n ? args[0] : NULL};
    return arrived(NULL, all, 1 + n);
}

static int
arrived_cb_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((ArrivedCb *)self)->send);
    return 0;
}

static int
arrived_cb_clear(PyObject *self)
{
    Py_CLEAR(((ArrivedCb *)self)->send);
    return 0;
}

static void
arrived_cb_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((ArrivedCb *)self)->send);
    PyObject_GC_Del(self);
}

static PyObject *
arrived_cb_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<_arrived of %R>", ((ArrivedCb *)self)->send);
}

static PyTypeObject ArrivedCbType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "smpy.runtime._p2paccel.arrived_callback",
    .tp_basicsize = sizeof(ArrivedCb),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ArrivedCb, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = arrived_cb_traverse,
    .tp_clear = arrived_cb_clear,
    .tp_dealloc = arrived_cb_dealloc,
    .tp_repr = arrived_cb_repr,
    .tp_doc = "partial(_arrived, send), compiled (smpy.runtime._p2paccel)",
};

/* partial(fn, send), or the compiled callback when fn is this file's _arrived */
static PyObject *
arrival_callback(PyObject *fn, PyObject *send)
{
    if (PyCFunction_Check(fn) && PyCFunction_GET_FUNCTION(fn) == (PyCFunction)(void (*)(void))arrived) {
        ArrivedCb *cb = PyObject_GC_New(ArrivedCb, &ArrivedCbType);
        if (cb == NULL)
            return NULL;
        cb->send = Py_NewRef(send);
        cb->vectorcall = arrived_cb_call;
        PyObject_GC_Track(cb);
        return (PyObject *)cb;
    }
    return PyObject_CallFunctionObjArgs(partial_type, fn, send, NULL);
}

static PyObject *
start_transfer(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _start_transfer(send, dst_host) */
    if (nargs != 2 || !is_send(args[0]))
        return PyObject_Vectorcall(py_start_transfer, args, nargs, NULL);
    PyObject *send = args[0], *dst = args[1];
    PyObject *proc = slot_get(send, send_off[F_OWNER], s_owner);
    if (proc == NULL)
        return NULL;
    PyObject *world = cached_get(proc, &c_proc_world, s_world);
    PyObject *src = world == NULL ? NULL : cached_get(proc, &c_proc_host, s_host);
    PyObject *env = src == NULL ? NULL : p2p_global(s_ENVELOPE_BYTES);
    PyObject *nb = env == NULL ? NULL : slot_get(send, send_off[F_NBYTES], s_nbytes);
    PyObject *total = nb == NULL ? NULL : int_add(nb, env);
    PyObject *flow = NULL;
    if (total != NULL) {
        PyObject *targs[4] = {world, src, dst, total};
        flow = cmethod_call(s_transfer, targs, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    }
    Py_XDECREF(total);
    Py_XDECREF(nb);
    Py_XDECREF(src);
    Py_XDECREF(world);
    Py_DECREF(proc);
    if (flow == NULL)
        return NULL;
    slot_set(send, send_off[F_FLOW], flow);
    /* flow.add_callback(partial(_arrived, send)) */
    PyObject *fn = p2p_global(s__arrived);
    PyObject *cb = fn == NULL ? NULL : arrival_callback(fn, send);
    PyObject *cargs[2] = {flow, cb};
    PyObject *x = cb == NULL ? NULL : cmethod_call(s_add_callback, cargs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET);
    Py_XDECREF(cb);
    Py_DECREF(flow);
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    Py_RETURN_NONE;
}

static PyObject *
pair(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _pair(send, recv) */
    if (nargs != 2 || !is_send(args[0]) || !is_recv(args[1]))
        return PyObject_Vectorcall(py_pair, args, nargs, NULL);
    PyObject *send = args[0], *recv = args[1];
    slot_set(send, send_off[F_MATCH], recv);
    slot_set(recv, recv_off[F_MATCH], send);
    PyObject *v = slot_get(send, send_off[F_SRC_LOCAL], s_src_local);
    if (v == NULL)
        return NULL;
    slot_set(recv, recv_off[F_SOURCE], v);
    Py_DECREF(v);
    v = slot_get(send, send_off[F_TAG], s_tag);
    if (v == NULL)
        return NULL;
    slot_set(recv, recv_off[F_TAG], v);
    Py_DECREF(v);
    PyObject *flow = slot_get(send, send_off[F_FLOW], s_flow);
    if (flow == NULL)
        return NULL;
    PyObject *x;
    if (flow == Py_None) {
        Py_DECREF(flow);
        PyObject *owner = slot_get(recv, recv_off[F_OWNER], s_owner);
        PyObject *host = owner == NULL ? NULL : cached_get(owner, &c_owner_host, s_host);
        Py_XDECREF(owner);
        if (host == NULL)
            return NULL;
        x = call_global2(s__start_transfer, send, host);
        Py_DECREF(host);
    } else {
        PyObject *arr = slot_get(send, send_off[F_ARRIVED], s_arrived);
        int yes = arr == NULL ? -1 : PyObject_IsTrue(arr);
        Py_XDECREF(arr);
        if (yes <= 0) {
            Py_DECREF(flow);
            if (yes < 0)
                return NULL;
            Py_RETURN_NONE;
        }
        int failed = flow_failed(flow);
        Py_DECREF(flow);
        if (failed < 0)
            return NULL;
        x = call_global2(failed ? s__transfer_failed : s__deliver, send, recv);
    }
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    Py_RETURN_NONE;
}

/* -- the receive-buffer copy: _copy_in and _detach -------------------------------------- */
static PyObject *py_copy_in, *py_detach, *DatatypeType;
static PyObject *s__copies, *s__folded, *s_ledger, *s_active, *s_datatype, *s_contiguous, *s_size, *s_mem,
    *s_offset, *s_payload;

/* a 1-d byte buffer ('B', item size 1, contiguous) of the memoryview: its view, or NULL */
static Py_buffer *
byte_view(PyObject *mv)
{
    if (!PyMemoryView_Check(mv))
        return NULL;
    PyMemoryViewObject *m = (PyMemoryViewObject *)mv;
    if ((m->flags & _Py_MEMORYVIEW_RELEASED) || (m->mbuf->flags & _Py_MANAGED_BUFFER_RELEASED))
        return NULL;  /* released: the Python code raises */
    Py_buffer *v = PyMemoryView_GET_BUFFER(mv);
    if (v->buf == NULL || v->ndim != 1 || v->itemsize != 1 || v->shape == NULL || v->shape[0] != v->len ||
        (v->strides != NULL && v->strides[0] != 1) || v->suboffsets != NULL ||
        (v->format != NULL && strcmp(v->format, "B") != 0))
        return NULL;
    return v;
}

/* getattr(obj, name) is None for a module global obj; 1 yes, 0 no, -1 error */
static int
global_attr_is(PyObject *global, slot_cache *c, PyObject *name, PyObject *value)
{
    PyObject *g = p2p_global(global);
    if (g == NULL)
        return -1;
    PyObject *v = cached_get(g, c, name);  /* a site per attribute: a module's is read at once */
    if (v == NULL)
        return -1;
    int r = v == value;
    Py_DECREF(v);
    return r;
}

/* -- copies already made (docs/performance.md, "Payload already in place") ---------------
 * A borrowed (memoryview) payload of a P2P message of at least ELIDE_MIN bytes, copied from
 * src to dst at simulated time t, is remembered as (src, dst, len, t). A later copy of the
 * same len bytes from the same src to the same dst is skipped when both its send and its
 * receive were posted strictly before t: from t on, src was the buffer of a pending send and
 * dst the buffer of a pending receive, which a correct MPI program does not modify, so dst
 * already holds those bytes. Any other compiled copy forgets the entries whose src or dst it
 * overwrites; a copy made by the Python function forgets them all; a new engine (run) too. */
#define ELIDE_MIN 16384
#define NMEMO 8
typedef struct {
    const char *src;
    const char *dst;
    Py_ssize_t len;
    double t;
} copy_memo;
static copy_memo memo[NMEMO];
static int memo_next;
static PyObject *memo_engine;       /* weak reference to the engine the entries belong to */
static unsigned long long n_elided, n_elided_bytes;

static void
memo_clear(void)
{
    memset(memo, 0, sizeof memo);
    memo_next = 0;
}

static inline int
ranges_meet(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb)
{
    return a < b + nb && b < a + na;
}

/* forget the entries whose src or dst the copy to [dst, dst + len) overwrites */
static void
memo_forget(const char *dst, Py_ssize_t len)
{
    for (int i = 0; i < NMEMO; i++)
        if (memo[i].len && (ranges_meet(memo[i].dst, memo[i].len, dst, len) ||
                            ranges_meet(memo[i].src, memo[i].len, dst, len)))
            memo[i].len = 0;
}

/* 1: the len bytes at src are already at dst (skip the copy), 0: copy them, -1: error */
static int
already_there(PyObject *send, PyObject *recv, PyObject *data, const char *src, const char *dst, Py_ssize_t len)
{
    PyObject *ch = SLOT(send, send_off[F_CHANNEL]);
    PyObject *eng = SLOT(recv, recv_off[F_ENGINE]);
    PyObject *ts = SLOT(send, send_off[F_START]), *tr = SLOT(recv, recv_off[F_START]);
    if (len < ELIDE_MIN || !PyMemoryView_Check(data) || ch == NULL || !int_eq(ch, P2P) || eng == NULL ||
        ts == NULL || tr == NULL || !PyFloat_CheckExact(ts) || !PyFloat_CheckExact(tr) ||
        ranges_meet(src, len, dst, len)) {
        memo_forget(dst, len);
        return 0;
    }
    PyObject *now_o = cached_get(eng, &c_engine_now, s_now);
    if (now_o == NULL)
        return -1;
    double now = PyFloat_AsDouble(now_o);
    Py_DECREF(now_o);
    if (now == -1.0 && PyErr_Occurred())
        return -1;
    if (memo_engine == NULL || PyWeakref_GetObject(memo_engine) != eng) {
        memo_clear();
        Py_CLEAR(memo_engine);
        memo_engine = PyWeakref_NewRef(eng, NULL);
        if (memo_engine == NULL) {  /* an engine without weak references: remember nothing */
            PyErr_Clear();
            return 0;
        }
    }
    double s0 = PyFloat_AS_DOUBLE(ts), r0 = PyFloat_AS_DOUBLE(tr);
    for (int i = 0; i < NMEMO; i++) {
        copy_memo *m = &memo[i];
        if (m->len == len && m->src == src && m->dst == dst) {
            if (s0 < m->t && r0 < m->t) {
                m->t = now;
                n_elided++;
                n_elided_bytes += (unsigned long long)len;
                return 1;
            }
            break;
        }
    }
    memo_forget(dst, len);
    memo[memo_next] = (copy_memo){src, dst, len, now};
    memo_next = (memo_next + 1) % NMEMO;
    return 0;
}

static PyObject *
copies_elided(PyObject *module, PyObject *args)
{
    /* (copies skipped, bytes not copied) since the module was loaded */
    return Py_BuildValue("(KK)", n_elided, n_elided_bytes);
}

/* buf.nbytes. While the site finds the property of smpy.mpi.msgspec.BufSpec given to
 * setup_nbytes, its getter unchanged (the same function, the same code), the getter's
 * ``self.count * self.datatype.size`` is computed here: the same reads, the same product (in C
 * for exact ints of one digit, whose product a C long holds; else the number protocol). Any
 * other class, property, getter or code: the attribute read. */
static PyObject *nbytes_fget, *nbytes_code, *s_count;

static PyObject *
spec_nbytes(PyObject *buf)
{
    slot_cache *c = &c_buf_nbytes;
    PyTypeObject *t = Py_TYPE(buf);
    if (nbytes_fget != NULL && t == c->type && c->off == CACHE_PROPERTY && t->tp_version_tag == c->version &&
        (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && SLOT(c->getset, prop_fget_off) == nbytes_fget &&
        PyFunction_GET_CODE(nbytes_fget) == nbytes_code) {
        PyObject *count = cached_get(buf, &c_buf_count, s_count);
        if (count == NULL)
            return NULL;
        PyObject *dt = cached_get(buf, &c_buf_datatype, s_datatype);
        PyObject *size = dt == NULL ? NULL : cached_get(dt, &c_dt_size, s_size);
        PyObject *r = NULL;
        if (size != NULL) {
            r = int_mul(count, size);
        }
        Py_XDECREF(size);
        Py_XDECREF(dt);
        Py_DECREF(count);
        return r;
    }
    return cached_get(buf, c, s_nbytes);
}

static PyObject *
setup_nbytes(PyObject *module, PyObject *fget)
{
    /* setup_nbytes(BufSpec.nbytes.fget): a Python function */
    if (!PyFunction_Check(fget)) {
        PyErr_SetString(PyExc_TypeError, "setup_nbytes: a Python function");
        return NULL;
    }
    if (s_count == NULL && (s_count = PyUnicode_InternFromString("count")) == NULL)
        return NULL;
    Py_XSETREF(nbytes_code, Py_NewRef(PyFunction_GET_CODE(fget)));
    Py_XSETREF(nbytes_fget, Py_NewRef(fget));
    Py_RETURN_NONE;
}

/* the common case of _copy_in: a bytes or byte-memoryview payload that fits a contiguous
 * datatype's buffer (a byte memoryview), no copy ledger, no folded bytes. 1: copied, 0: not
 * the common case (nothing changed), -1: error */
static int
copy_in_fast(PyObject *send, PyObject *recv)
{
    PyObject *n = SLOT(send, send_off[F_NBYTES]), *buf = SLOT(recv, recv_off[F_BUF]);
    PyObject *data = SLOT(send, send_off[F_PAYLOAD]);
    if (n == NULL || !PyLong_CheckExact(n) || buf == NULL || buf == Py_None || data == NULL)
        return 0;
    int r = global_attr_is(s__copies, &c_copies_ledger, s_ledger, Py_None);
    if (r <= 0)
        return r;
    r = global_attr_is(s__folded, &c_folded_active2, s_active, Py_False);
    if (r <= 0)
        return r;
    const char *src;
    Py_ssize_t len;
    if (PyBytes_CheckExact(data)) {
        src = PyBytes_AS_STRING(data);
        len = PyBytes_GET_SIZE(data);
    } else {
        Py_buffer *v = byte_view(data);
        if (v == NULL)
            return 0;
        src = v->buf;
        len = v->len;
    }
    if (len == 0)
        return 0;
    r = 0;
    PyObject *cap = spec_nbytes(buf);
    PyObject *dt = cap == NULL ? NULL : cached_get(buf, &c_buf_datatype, s_datatype);
    PyObject *mem = dt == NULL ? NULL : cached_get(buf, &c_buf_mem, s_mem);
    PyObject *off = mem == NULL ? NULL : cached_get(buf, &c_buf_offset, s_offset);
    PyObject *contig = NULL, *size = NULL;
    if (off == NULL)
        goto fail;
    if (!PyLong_CheckExact(cap) || (PyObject *)Py_TYPE(dt) != DatatypeType || !PyLong_CheckExact(off))
        goto done;
    contig = cached_get(dt, &c_dt_contiguous, s_contiguous);
    size = contig == NULL ? NULL : cached_get(dt, &c_dt_size, s_size);
    if (size == NULL)
        goto fail;
    if (contig != Py_True || !PyLong_CheckExact(size))
        goto done;
    long long nn = PyLong_AsLongLong(n), cc = PyLong_AsLongLong(cap), sz = PyLong_AsLongLong(size),
        o = PyLong_AsLongLong(off);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        goto done;
    }
    Py_buffer *dst = byte_view(mem);
    /* n <= cap (no truncation); count * size >= len, so unpack writes all len bytes */
    if (dst == NULL || dst->readonly || nn > cc || sz <= 0 || o < 0 || o > dst->len - len)
        goto done;
    /* recv.nbytes = n; dt.unpack(data, buf.mem, buf.offset, count): mem[o:o + len] = data */
    slot_set(recv, recv_off[F_NBYTES], n);
    char *to = (char *)dst->buf + o;
    r = already_there(send, recv, data, src, to, len);
    if (r < 0)
        goto fail;
    if (r == 0)
        memmove(to, src, (size_t)len);
    r = 1;
    goto done;
fail:
    r = -1;
done:
    Py_XDECREF(size);
    Py_XDECREF(contig);
    Py_XDECREF(off);
    Py_XDECREF(mem);
    Py_XDECREF(dt);
    Py_XDECREF(cap);
    return r;
}

static PyObject *
copy_in(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _copy_in(send, recv); every other case: the Python function */
    if (nargs == 2 && is_send(args[0]) && is_recv(args[1])) {
        int r = copy_in_fast(args[0], args[1]);
        if (r < 0)
            return NULL;
        if (r > 0)
            Py_RETURN_NONE;
    }
    memo_clear();  /* the Python function may write anywhere */
    return PyObject_Vectorcall(py_copy_in, args, nargs, NULL);
}

static PyObject *
detach(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* _detach(send): recv = send.match; if recv is not None and _lands(recv): _copy_in(send,
     * recv); send.payload = _LANDED. Else (a copy into bytes): the Python function */
    if (nargs != 1 || !is_send(args[0]))
        return PyObject_Vectorcall(py_detach, args, nargs, NULL);
    PyObject *send = args[0];
    PyObject *recv = SLOT(send, send_off[F_MATCH]);
    if (recv == NULL || !is_recv(recv))
        return PyObject_Vectorcall(py_detach, args, nargs, NULL);
    PyObject *buf = SLOT(recv, recv_off[F_BUF]);
    if (buf == NULL || buf == Py_None)
        return PyObject_Vectorcall(py_detach, args, nargs, NULL);
    PyObject *dt = cached_get(buf, &c_buf_datatype, s_datatype);
    if (dt == NULL)
        return NULL;
    int lands = dt != Py_None;
    Py_DECREF(dt);
    if (!lands)
        return PyObject_Vectorcall(py_detach, args, nargs, NULL);
    Py_INCREF(recv);
    PyObject *x = call_global2(s__copy_in, send, recv);
    Py_DECREF(recv);
    if (x == NULL)
        return NULL;
    Py_DECREF(x);
    slot_set(send, send_off[F_PAYLOAD], LANDED);
    Py_RETURN_NONE;
}

static PyObject *
setup_copy(PyObject *module, PyObject *args)
{
    PyObject *pc, *pd, *dtt;
    if (!PyArg_ParseTuple(args, "OOO!", &pc, &pd, &PyType_Type, &dtt))
        return NULL;
    Py_XSETREF(py_copy_in, Py_NewRef(pc));
    Py_XSETREF(py_detach, Py_NewRef(pd));
    Py_XSETREF(DatatypeType, Py_NewRef(dtt));
    Py_RETURN_NONE;
}

/* -- the send side: pack_message (smpy.runtime.packing) ---------------------------------- */
static PyObject *packing_dict, *py_pack_message, *s_count;

static PyObject *
pack_message(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* pack_message(spec, owned=False): if _folded.active: ...; dt = spec.datatype; if
     * dt.contiguous and not owned: return spec.mem when the message is all of it, else
     * spec.mem[off:off + spec.count * dt.size]. Folded
     * bytes, owned copies, other datatypes: the Python function */
    if (nargs < 1 || nargs > 2 || (nargs == 2 && args[1] != Py_False))
        return PyObject_Vectorcall(py_pack_message, args, nargs, NULL);
    static dict_memo m_folded;  /* packing._folded, read per call (unchanged while the dict is) */
    PyObject *folded = dict_memo_get(&m_folded, packing_dict, s__folded);
    if (folded == NULL)
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(py_pack_message, args, nargs, NULL);
    PyObject *active = cached_get(folded, &c_folded_active, s_active);
    if (active == NULL)
        return NULL;
    Py_DECREF(active);
    if (active != Py_False)
        return PyObject_Vectorcall(py_pack_message, args, nargs, NULL);
    PyObject *spec = args[0];
    PyObject *dt = cached_get(spec, &c_spec_datatype, s_datatype);
    if (dt == NULL)
        return NULL;
    PyObject *contig = cached_get(dt, &c_dt_contiguous, s_contiguous);
    if (contig == NULL) {
        Py_DECREF(dt);
        return NULL;
    }
    Py_DECREF(contig);
    if (contig != Py_True) {
        Py_DECREF(dt);
        return PyObject_Vectorcall(py_pack_message, args, nargs, NULL);
    }
    PyObject *r = NULL, *off = NULL, *mem = NULL, *count = NULL, *size = NULL, *len = NULL, *stop = NULL;
    PyObject *sl = NULL;
    off = cached_get(spec, &c_spec_offset, s_offset);
    mem = off == NULL ? NULL : cached_get(spec, &c_spec_mem, s_mem);
    count = mem == NULL ? NULL : cached_get(spec, &c_spec_count, s_count);
    size = count == NULL ? NULL : cached_get(dt, &c_dt_size, s_size);
    len = size == NULL ? NULL : int_mul(count, size);
    if (len != NULL && PyLong_CheckExact(off) && PyLong_CheckExact(len) && PyMemoryView_Check(mem) &&
        _PyLong_Sign(off) == 0) {
        /* the whole buffer: mem itself (a released one: the slice below raises what nbytes would) */
        PyMemoryViewObject *m = (PyMemoryViewObject *)mem;
        Py_ssize_t n = PyLong_AsSsize_t(len);
        if (n == -1 && PyErr_Occurred())
            PyErr_Clear();
        else if (!(m->flags & _Py_MEMORYVIEW_RELEASED) && !(m->mbuf->flags & _Py_MANAGED_BUFFER_RELEASED) &&
                 n == m->view.len)
            r = Py_NewRef(mem);
    }
    stop = len == NULL || r != NULL ? NULL : PyNumber_Add(off, len);
    sl = stop == NULL ? NULL : PySlice_New(off, stop, NULL);
    r = sl == NULL ? r : PyObject_GetItem(mem, sl);
    Py_XDECREF(sl);
    Py_XDECREF(stop);
    Py_XDECREF(len);
    Py_XDECREF(size);
    Py_XDECREF(count);
    Py_XDECREF(mem);
    Py_XDECREF(off);
    Py_DECREF(dt);
    return r;
}

static PyObject *
setup_pack(PyObject *module, PyObject *args)
{
    PyObject *d, *pm;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &d, &pm))
        return NULL;
    if (s_count == NULL && (s_count = PyUnicode_InternFromString("count")) == NULL)
        return NULL;
    Py_XSETREF(packing_dict, Py_NewRef(d));
    Py_XSETREF(py_pack_message, Py_NewRef(pm));
    Py_RETURN_NONE;
}

/* -- setup ------------------------------------------------------------------------------- */
static int
offsets(PyTypeObject *tp, Py_ssize_t *off, int n)
{
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)tp, field_names[i]);
        if (d == NULL)
            return -1;
        if (Py_TYPE(d) != &PyMemberDescr_Type || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", tp->tp_name, field_names[i]);
            Py_DECREF(d);
            return -1;
        }
        off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
    }
    return 0;
}

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *d, *send_t, *recv_t, *pi, *pr, *pw, *pp, *pd, *pa, *ps, *landed, *part;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOllllOOOOOOl", &PyDict_Type, &d, &PyType_Type, &send_t, &PyType_Type,
                          &recv_t, &pi, &pr, &pw, &ANY_SOURCE, &ANY_TAG, &PROC_NULL, &P2P, &pp, &pd, &pa, &ps,
                          &landed, &part, &FAILED_STATE))
        return NULL;
    Py_XSETREF(py_pair, Py_NewRef(pp));
    Py_XSETREF(py_deliver, Py_NewRef(pd));
    Py_XSETREF(py_arrived, Py_NewRef(pa));
    Py_XSETREF(py_start_transfer, Py_NewRef(ps));
    Py_XSETREF(LANDED, Py_NewRef(landed));
    Py_XSETREF(partial_type, Py_NewRef(part));
    if (offsets((PyTypeObject *)send_t, send_off, NFIELDS) < 0)
        return NULL;
    if (offsets((PyTypeObject *)recv_t, recv_off, F_TI + 1) < 0)
        return NULL;
    PyObject *m = PyObject_GetAttrString(recv_t, "match");
    if (m == NULL)
        return NULL;
    if (Py_TYPE(m) != &PyMemberDescr_Type) {
        Py_DECREF(m);
        PyErr_SetString(PyExc_TypeError, "RecvRequest.match is not a slot");
        return NULL;
    }
    recv_off[F_MATCH] = ((PyMemberDescrObject *)m)->d_member->offset;
    Py_DECREF(m);
    Py_XSETREF(p2p_dict, Py_NewRef(d));
    Py_XSETREF(SendType, (PyTypeObject *)Py_NewRef(send_t));
    Py_XSETREF(RecvType, (PyTypeObject *)Py_NewRef(recv_t));
    Py_XSETREF(py_isend, Py_NewRef(pi));
    Py_XSETREF(py_irecv, Py_NewRef(pr));
    Py_XSETREF(py_wait, Py_NewRef(pw));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(p2p.__dict__, SendRequest, RecvRequest, isend, irecv, wait, "
     "ANY_SOURCE, ANY_TAG, PROC_NULL, P2P, _pair, _deliver, _arrived, _start_transfer, _LANDED, partial, FAILED)"},
    {"setup_copy", setup_copy, METH_VARARGS, "setup_copy(_copy_in, _detach, DatatypeImpl)"},
    {"setup_pack", setup_pack, METH_VARARGS, "setup_pack(packing.__dict__, pack_message)"},
    {"setup_nbytes", setup_nbytes, METH_O, "setup_nbytes(BufSpec.nbytes.fget): its product computed in C"},
    {"pack_message", (PyCFunction)(void (*)(void))pack_message, METH_FASTCALL,
     "smpy.runtime.packing.pack_message, compiled"},
    {"_copy_in", (PyCFunction)(void (*)(void))copy_in, METH_FASTCALL, "smpy.runtime.p2p._copy_in, compiled"},
    {"copies_elided", copies_elided, METH_NOARGS, "(copies skipped, bytes not copied) so far: payloads already in place"},
    {"_detach", (PyCFunction)(void (*)(void))detach, METH_FASTCALL, "smpy.runtime.p2p._detach, compiled"},
    {"_pair", (PyCFunction)(void (*)(void))pair, METH_FASTCALL, "smpy.runtime.p2p._pair, compiled"},
    {"_deliver", (PyCFunction)(void (*)(void))deliver, METH_FASTCALL, "smpy.runtime.p2p._deliver, compiled"},
    {"_arrived", (PyCFunction)(void (*)(void))arrived, METH_FASTCALL, "smpy.runtime.p2p._arrived, compiled"},
    {"_start_transfer", (PyCFunction)(void (*)(void))start_transfer, METH_FASTCALL,
     "smpy.runtime.p2p._start_transfer, compiled"},
    {"isend", (PyCFunction)(void (*)(void))isend, METH_FASTCALL | METH_KEYWORDS, "smpy.runtime.p2p.isend, compiled"},
    {"irecv", (PyCFunction)(void (*)(void))irecv, METH_FASTCALL | METH_KEYWORDS, "smpy.runtime.p2p.irecv, compiled"},
    {"wait", (PyCFunction)(void (*)(void))wait, METH_FASTCALL | METH_KEYWORDS, "smpy.runtime.p2p.wait, compiled"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_p2paccel", .m_doc = "smpy's compiled point-to-point posting",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__p2paccel(void)
{
    INTERN(s_world, "world"); INTERN(s_revoked, "revoked"); INTERN(s_ft, "ft"); INTERN(s_detected, "detected");
    INTERN(s_detached_thresh, "detached_thresh"); INTERN(s_o_send, "o_send"); INTERN(s_o_isend, "o_isend");
    INTERN(s_engine, "engine"); INTERN(s_now, "now"); INTERN(s_tracer, "tracer"); INTERN(s_ti, "ti");
    INTERN(s_rank_of, "rank_of"); INTERN(s_rank, "rank"); INTERN(s_sboxes, "sboxes"); INTERN(s_boxes, "boxes");
    INTERN(s_eager_thresh, "eager_thresh"); INTERN(s_processes, "processes"); INTERN(s_rgroup, "rgroup");
    INTERN(s_host, "host"); INTERN(s_posted, "posted"); INTERN(s_unexpected, "unexpected");
    INTERN(s_probers, "probers"); INTERN(s_peer, "peer"); INTERN(s_tag, "tag"); INTERN(s_src_local, "src_local");
    INTERN(s_state, "state"); INTERN(s_kind, "kind"); INTERN(s_o_recv, "o_recv"); INTERN(s_finish, "finish");
    INTERN(s__finish, "_finish"); INTERN(s__pair, "_pair"); INTERN(s__start_transfer, "_start_transfer");
    INTERN(s__wake_probers, "_wake_probers"); INTERN(s__detach, "_detach"); INTERN(s_block_on, "block_on");
    INTERN(s_owner, "owner"); INTERN(s_match, "match"); INTERN(s_flow, "flow"); INTERN(s_arrived, "arrived");
    INTERN(s_detached, "detached"); INTERN(s_nbytes, "nbytes"); INTERN(s_call, "call"); INTERN(s_sync, "sync"); INTERN(s_blocking, "blocking"); INTERN(s_label, "label");
    INTERN(s_buf, "buf"); INTERN(s__arrived, "_arrived"); INTERN(s__deliver, "_deliver");
    INTERN(s__copy_in, "_copy_in"); INTERN(s__transfer_failed, "_transfer_failed"); INTERN(s_transfer, "transfer");
    INTERN(s_add_callback, "add_callback");
    INTERN(s__copies, "_copies"); INTERN(s__folded, "_folded"); INTERN(s_ledger, "ledger"); INTERN(s_active, "active");
    INTERN(s_datatype, "datatype"); INTERN(s_contiguous, "contiguous"); INTERN(s_size, "size"); INTERN(s_mem, "mem");
    INTERN(s_offset, "offset"); INTERN(s_payload, "payload"); INTERN(s_ENVELOPE_BYTES, "ENVELOPE_BYTES");
    if ((i_zero = PyLong_FromLong(0)) == NULL || (i_minus1 = PyLong_FromLong(-1)) == NULL ||
        (i_send = PyLong_FromLong(0)) == NULL || (i_recv = PyLong_FromLong(1)) == NULL ||
        (f_minus1 = PyFloat_FromDouble(-1.0)) == NULL || PyType_Ready(&ArrivedCbType) < 0)
        return NULL;
    return PyModule_Create(&moddef);
}
