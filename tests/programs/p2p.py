"""Point-to-point semantics, one case per run: ``p2p.py <case>``.

Runs unchanged under smpyrun and under real mpiexec. Each check prints ``ok <name>`` or
``FAIL <name>: ...``; the test compares the set of ``ok`` lines per rank.
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def plain(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    return x


def check(name, got, want):
    got = plain(got)
    if got == want:
        print(f"ok {name}")
    else:
        print(f"FAIL {name}: got {got!r}, want {want!r}")


def error_class(fn):
    try:
        fn()
    except MPI.Exception as e:
        return e.Get_error_class()
    return None


def nonovertaking():
    sizes = [1, 100_000, 3, 70_000, 2, 5]  # float64 elements: detached and rendezvous mixed
    if rank == 1:
        reqs = [comm.Isend(np.full(s, float(i)), dest=0, tag=3) for i, s in enumerate(sizes)]
        MPI.Request.Waitall(reqs)
        for i in range(6):
            comm.send(("b", i), dest=0, tag=4 + i % 2)
    if rank > 0:
        for i in range(4):
            comm.send((rank, i), dest=0, tag=9)
    if rank == 0:
        got = []
        for _ in sizes:
            buf = np.empty(100_000)
            st = MPI.Status()
            comm.Recv(buf, source=1, tag=3, status=st)
            got.append((buf[0], st.Get_count(MPI.DOUBLE)))
        check("same_tag", got, [(float(i), s) for i, s in enumerate(sizes)])
        got = [comm.recv(source=1, tag=MPI.ANY_TAG) for _ in range(6)]
        check("any_tag", got, [("b", i) for i in range(6)])
        per_src = {}
        for _ in range((size - 1) * 4):
            src, i = comm.recv(source=MPI.ANY_SOURCE, tag=9)
            per_src.setdefault(src, []).append(i)
        check("any_source", per_src, {r: [0, 1, 2, 3] for r in range(1, size)})
    # receives posted before the sends, ANY_SOURCE + ANY_TAG
    if rank == 0:
        bufs = [np.zeros(1) for _ in range(5)]
        reqs = [comm.Irecv(b, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) for b in bufs]
    comm.Barrier()
    if rank == 1:
        for i in range(5):
            comm.Send(np.array([float(i)]), dest=0, tag=20 + (i % 3))
    if rank == 0:
        sts = [MPI.Status() for _ in range(5)]
        MPI.Request.Waitall(reqs, sts)
        check("preposted", [(b[0], s.Get_tag()) for b, s in zip(bufs, sts)],
              [(float(i), 20 + i % 3) for i in range(5)])


def anysource_status():
    if rank > 0:
        comm.Send(np.full(rank + 1, float(rank)), dest=0, tag=10 + rank)
    else:
        seen = set()
        for _ in range(size - 1):
            buf = np.zeros(size + 1)
            st = MPI.Status()
            comm.Recv(buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
            s = st.Get_source()
            seen.add(s)
            check(f"status_{s}", (st.Get_tag(), st.tag, st.source, st.Get_count(MPI.DOUBLE),
                                  st.Get_count(MPI.INT), st.Get_count(), st.Get_error()),
                  (10 + s, 10 + s, s, s + 1, 2 * (s + 1), 8 * (s + 1), MPI.SUCCESS))
            check(f"data_{s}", buf[: s + 2], [float(s)] * (s + 1) + [0.0])
        check("sources", sorted(seen), list(range(1, size)))


def proc_null():
    st = MPI.Status()
    comm.Send(np.ones(3), dest=MPI.PROC_NULL, tag=1)
    buf = np.full(3, 7.0)
    comm.Recv(buf, source=MPI.PROC_NULL, tag=1, status=st)
    check("recv", (st.Get_source(), st.Get_tag(), st.Get_count(MPI.DOUBLE), buf),
          (MPI.PROC_NULL, MPI.ANY_TAG, 0, [7.0] * 3))
    comm.send("x", dest=MPI.PROC_NULL)
    st = MPI.Status()
    check("lower_recv", (comm.recv(source=MPI.PROC_NULL, status=st), st.Get_source()),
          (None, MPI.PROC_NULL))
    st = MPI.Status()
    comm.Irecv(buf, source=MPI.PROC_NULL, tag=4).Wait(st)
    check("irecv", (st.Get_source(), st.Get_tag()), (MPI.PROC_NULL, MPI.ANY_TAG))
    st = MPI.Status()
    comm.Sendrecv(np.ones(3), dest=MPI.PROC_NULL, recvbuf=buf, source=MPI.PROC_NULL, status=st)
    check("sendrecv", (st.Get_source(), buf), (MPI.PROC_NULL, [7.0] * 3))
    st = MPI.Status()
    comm.Probe(source=MPI.PROC_NULL, status=st)
    check("probe", (st.Get_source(), st.Get_tag(), st.Get_count()), (MPI.PROC_NULL, MPI.ANY_TAG, 0))
    check("iprobe", comm.Iprobe(source=MPI.PROC_NULL), True)


def probe():
    if rank == 0:
        check("iprobe_empty", comm.Iprobe(source=MPI.ANY_SOURCE, tag=77), False)
    comm.Barrier()
    if rank == 1:
        comm.Send(np.arange(7, dtype=np.int32), dest=0, tag=5)
        comm.send({"k": 1}, dest=0, tag=6)
    elif rank == 0:
        st = MPI.Status()
        comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        st2 = MPI.Status()
        comm.Probe(source=1, tag=5, status=st2)  # probing does not consume
        n = st.Get_count(MPI.INT)
        check("probe_status", (st.Get_source(), st.Get_tag(), n, st2.Get_count(MPI.INT)), (1, 5, 7, 7))
        buf = np.zeros(n, dtype=np.int32)
        comm.Recv(buf, source=st.Get_source(), tag=st.Get_tag())
        check("probe_recv", buf, list(range(7)))
        st = MPI.Status()
        polls = 0
        while not comm.Iprobe(source=1, tag=6, status=st):
            polls += 1
        check("iprobe_status", (st.Get_source(), st.Get_tag()), (1, 6))
        check("iprobe_recv", comm.recv(source=1, tag=6), {"k": 1})
        check("iprobe_after", comm.Iprobe(source=1, tag=MPI.ANY_TAG), False)


def multi():
    # ranks 1..size-1 send after a delay decreasing with rank: the last rank's message first
    if rank > 0:
        time.sleep(0.01 * (size - rank))
        comm.Send(np.array([float(rank)]), dest=0, tag=rank)
        time.sleep(0.01 * (size - rank))
        comm.Send(np.array([10.0 * rank]), dest=0, tag=rank)
        time.sleep(1.0)
        comm.Send(np.array([100.0 * rank]), dest=0, tag=rank)
        comm.Send(np.array([1000.0 * rank]), dest=0, tag=rank)
    else:
        n = size - 1
        bufs = [np.zeros(1) for _ in range(n)]
        reqs = [comm.Irecv(bufs[i], source=i + 1, tag=i + 1) for i in range(n)]
        order = []
        for _ in range(n):
            st = MPI.Status()
            i = MPI.Request.Waitany(reqs, st)
            order.append((i, st.Get_source(), bufs[i][0]))
        check("waitany", order, [(r - 1, r, float(r)) for r in range(n, 0, -1)])
        check("waitany_null", all(r == MPI.REQUEST_NULL for r in reqs), True)
        check("waitany_none", MPI.Request.Waitany(reqs), MPI.UNDEFINED)
        reqs = [comm.Irecv(bufs[i], source=i + 1, tag=i + 1) for i in range(n)]
        sts = [MPI.Status() for _ in range(n)]
        MPI.Request.Waitall(reqs, sts)
        check("waitall", ([b[0] for b in bufs], [s.Get_source() for s in sts]),
              ([10.0 * r for r in range(1, n + 1)], list(range(1, n + 1))))
        reqs = [comm.Irecv(bufs[i], source=i + 1, tag=i + 1) for i in range(n)]
        first = MPI.Request.Testall(reqs)
        loops = 0
        while not MPI.Request.Testall(reqs):
            loops += 1
        check("testall", (first or n == 0, [b[0] for b in bufs]), (n == 0, [100.0 * r for r in range(1, n + 1)]))
        reqs = [comm.Irecv(bufs[i], source=i + 1, tag=i + 1) for i in range(n)]
        done = []
        while True:
            idx = MPI.Request.Waitsome(reqs)
            if idx is None:
                break
            check("waitsome_nonempty", len(idx) > 0, True)
            done += idx
        check("waitsome", (sorted(done), [b[0] for b in bufs]),
              (list(range(n)), [1000.0 * r for r in range(1, n + 1)]))
        # lowercase: objects through irecv + waitall / waitany
        reqs = [comm.irecv(source=i + 1, tag=50) for i in range(n)]
        objs = MPI.Request.waitall(reqs)
        check("lower_waitall", objs, [("obj", r) for r in range(1, n + 1)])
    if rank > 0:
        comm.send(("obj", rank), dest=0, tag=50)


def cancel():
    if rank == 0:
        buf = np.zeros(2)
        r = comm.Irecv(buf, source=MPI.ANY_SOURCE, tag=99)
        r.Cancel()
        st = MPI.Status()
        r.Wait(st)
        check("cancelled", (st.Is_cancelled(), r == MPI.REQUEST_NULL), (True, True))
    comm.Barrier()
    if rank == 1:
        comm.Send(np.array([1.0, 2.0]), dest=0, tag=99)
    elif rank == 0:
        buf = np.zeros(2)
        st = MPI.Status()
        r = comm.Irecv(buf, source=1, tag=99)
        r.Wait(st)
        check("after_cancel", (buf, st.Is_cancelled()), ([1.0, 2.0], False))


def truncate():
    if rank == 1:
        comm.Send(np.arange(10.0), dest=0, tag=2)
        comm.Send(np.arange(10.0), dest=0, tag=3)
    elif rank == 0:
        small = np.zeros(5)
        check("recv_truncate", error_class(lambda: comm.Recv(small, source=1, tag=2)), MPI.ERR_TRUNCATE)
        req = comm.Irecv(np.zeros(4), source=1, tag=3)
        check("wait_truncate", error_class(req.Wait), MPI.ERR_TRUNCATE)


def waitall_error():
    """A failed request in Waitall: MPI_ERR_IN_STATUS, the failure in its status."""
    if rank == 1:
        comm.Send(np.zeros(5), dest=0, tag=2)
        comm.Send(np.zeros(2), dest=0, tag=3)
    elif rank == 0:
        reqs = [comm.Irecv(np.zeros(2), source=1, tag=2), comm.Irecv(np.zeros(2), source=1, tag=3)]
        sts = [MPI.Status(), MPI.Status()]
        check("waitall_in_status", error_class(lambda: MPI.Request.Waitall(reqs, sts)), MPI.ERR_IN_STATUS)
        # the second request's status may be SUCCESS or ERR_PENDING, depending on the library
        check("failed_status", MPI.Get_error_class(sts[0].Get_error()), MPI.ERR_TRUNCATE)


def errors():
    buf = np.zeros(1)
    check("send_rank", error_class(lambda: comm.Send(buf, dest=size, tag=0)), MPI.ERR_RANK)
    check("send_rank_neg", error_class(lambda: comm.Send(buf, dest=-7, tag=0)), MPI.ERR_RANK)
    check("lower_send_rank", error_class(lambda: comm.send(1, dest=size + 3)), MPI.ERR_RANK)
    check("recv_rank", error_class(lambda: comm.Recv(buf, source=size, tag=0)), MPI.ERR_RANK)
    check("send_tag", error_class(lambda: comm.Send(buf, dest=rank, tag=-5)), MPI.ERR_TAG)
    check("recv_tag", error_class(lambda: comm.Recv(buf, source=rank, tag=-9)), MPI.ERR_TAG)
    check("lower_send_tag", error_class(lambda: comm.send(1, dest=rank, tag=-3)), MPI.ERR_TAG)
    check("isinstance", issubclass(MPI.Exception, RuntimeError), True)


def tag_bound():
    """Tags above the MPI_TAG_UB of MPICH (2**29 - 1) are invalid."""
    buf = np.zeros(1)
    check("send_tag_above_ub", error_class(lambda: comm.Send(buf, dest=rank, tag=2**29)), MPI.ERR_TAG)
    check("recv_tag_above_ub", error_class(lambda: comm.Recv(buf, source=rank, tag=2**31 - 1)), MPI.ERR_TAG)


def bufspecs():
    if rank == 0:
        comm.Send(np.arange(4.0), dest=1, tag=1)
        comm.Send([np.arange(4.0) * 2, MPI.DOUBLE], dest=1, tag=2)
        comm.Send([np.arange(6, dtype=np.int32), 3, MPI.INT], dest=1, tag=3)
        comm.Send(b"hello", dest=1, tag=4)
        comm.Send(bytearray(b"world!"), dest=1, tag=5)
        comm.Send(memoryview(np.arange(5, dtype=np.int64))[1:4], dest=1, tag=6)
        comm.Send([np.arange(3.0) + 0.5, "d"], dest=1, tag=7)
        comm.Send([np.arange(10, dtype=np.int32), 2, 4, MPI.INT], dest=1, tag=8)
        comm.Send([np.arange(10, dtype=np.int32), (3, 5), MPI.INT], dest=1, tag=9)
    elif rank == 1:
        a = np.zeros(4)
        comm.Recv(a, source=0, tag=1)
        check("numpy", a, [0.0, 1.0, 2.0, 3.0])
        comm.Recv([a, MPI.DOUBLE], source=0, tag=2)
        check("buf_type", a, [0.0, 2.0, 4.0, 6.0])
        b = np.full(6, -1, dtype=np.int32)
        st = MPI.Status()
        comm.Recv([b, 3, MPI.INT], source=0, tag=3, status=st)
        check("buf_count_type", (b, st.Get_count(MPI.INT)), ([0, 1, 2, -1, -1, -1], 3))
        c = bytearray(5)
        comm.Recv(c, source=0, tag=4)
        check("bytes", bytes(c), b"hello")
        d = bytearray(6)
        comm.Recv(memoryview(d), source=0, tag=5)
        check("bytearray_memoryview", bytes(d), b"world!")
        e = np.zeros(3, dtype=np.int64)
        comm.Recv([e, MPI.INT64_T], source=0, tag=6)
        check("memoryview_slice", e, [1, 2, 3])
        f = np.zeros(3)
        comm.Recv([f, "d"], source=0, tag=7)
        check("typecode", f, [0.5, 1.5, 2.5])
        g = np.full(4, -1, dtype=np.int32)
        comm.Recv([g, 2, 1, MPI.INT], source=0, tag=8)
        check("count_displ", g, [-1, 4, 5, -1])
        comm.Recv([g, (3, 1), MPI.INT], source=0, tag=9)
        check("count_displ_tuple", g, [-1, 5, 6, 7])


def lowercase():
    if size < 2:
        return
    right, left = (rank + 1) % size, (rank - 1) % size
    if rank == 0:
        comm.send({"a": [1, 2], "n": np.arange(3)}, dest=1, tag=1)
        comm.ssend("sync", dest=1, tag=2)
        r = comm.isend([1, "two", 3.0], dest=1, tag=3)
        r.wait()
        r = comm.issend(("t", None), dest=1, tag=4)
        r.wait()
        check("ssend_reply", comm.recv(source=1, tag=5), "done")
    elif rank == 1:
        obj = comm.recv(source=0, tag=1)
        check("send_recv", (obj["a"], obj["n"].tolist()), ([1, 2], [0, 1, 2]))
        check("ssend", comm.recv(source=0, tag=2), "sync")
        r = comm.irecv(source=0, tag=3)
        check("isend_irecv", r.wait(), [1, "two", 3.0])
        r = comm.irecv(source=MPI.ANY_SOURCE, tag=4)
        st = MPI.Status()
        while True:
            flag, obj = r.test(st)
            if flag:
                break
        check("issend_test", (obj, st.Get_source(), st.Get_tag()), (("t", None), 0, 4))
        comm.send("done", dest=0, tag=5)
    got = comm.sendrecv(("tok", rank), dest=right, sendtag=7, source=left, recvtag=7)
    check("sendrecv", got, ("tok", left))


def wtime():
    if size < 2:
        return
    t0 = MPI.Wtime()
    if rank == 0:
        comm.Send(np.zeros(1 << 17), dest=1, tag=0)
        comm.Recv(np.zeros(1), source=1, tag=1)
    elif rank == 1:
        comm.Recv(np.zeros(1 << 17), source=0, tag=0)
        comm.Send(np.zeros(1), dest=0, tag=1)
    t1 = MPI.Wtime()
    if rank < 2:
        check("wtime_increases", t1 > t0, True)


def sync():
    """Synchronous sends complete only once the receive is matched; Sendrecv_replace."""
    if size < 2:
        return
    if rank == 0:
        t0 = MPI.Wtime()
        comm.Ssend(np.ones(2), dest=1, tag=1)
        t1 = MPI.Wtime()
        check("ssend_waits", t1 - t0 >= 0.2, True)
        r = comm.Issend(np.ones(2), dest=1, tag=2)
        check("issend_pending", r.Test(), False)
        r.Wait()
        check("issend_waits", MPI.Wtime() - t1 >= 0.2, True)
    elif rank == 1:
        time.sleep(0.2)
        comm.Recv(np.zeros(2), source=0, tag=1)
        time.sleep(0.2)
        comm.Recv(np.zeros(2), source=0, tag=2)
    right, left = (rank + 1) % size, (rank - 1) % size
    buf = np.full(3, float(rank))
    st = MPI.Status()
    comm.Sendrecv_replace(buf, dest=right, sendtag=8, source=left, recvtag=8, status=st)
    check("sendrecv_replace", (buf, st.Get_source()), ([float(left)] * 3, left))


REUSE_SIZES = (1, 1024, 8191, 8192, 131072)  # doubles: 8 B to 1 MiB, both sides of 64 KiB
LATER = 0.01  # s: a receive posted this much later than the send is unexpected


def _fill(n, k):
    return np.arange(n, dtype=np.float64) + 1000.0 * k


def _reuse_sender(n, k):
    """Rank 0's sends of message family ``k``; each buffer is overwritten as soon as MPI
    allows it (the send returned / its Wait returned)."""
    a = _fill(n, k)
    comm.Send(a, dest=1, tag=10)                       # unexpected at rank 1
    a[:] = -1.0
    time.sleep(LATER)
    comm.Send([a.data, MPI.DOUBLE], dest=1, tag=11)    # preposted at rank 1
    a[:] = -2.0
    r = comm.Isend(a, dest=1, tag=12)
    r.Wait()
    a[:] = -3.0
    b = bytearray(_fill(n, k).tobytes())
    r = comm.Isend([b, MPI.BYTE], dest=1, tag=13)
    r.Wait()
    b[:] = bytes(len(b))
    p = comm.Send_init(a, dest=1, tag=14)
    for v in (7.0, 8.0):
        a[:] = v
        p.Start()
        p.Wait()
        a[:] = -v
    p.Free()


def _reuse_receiver(n, k):
    got = {t: np.zeros(n) for t in range(10, 15)}
    pre = comm.Irecv(got[11], source=0, tag=11)
    time.sleep(LATER)
    comm.Recv(got[10], source=0, tag=10)
    pre.Wait()
    time.sleep(LATER)
    comm.Recv(got[12], source=0, tag=12)
    raw = bytearray(8 * n)
    time.sleep(LATER)
    comm.Recv([raw, MPI.BYTE], source=0, tag=13)
    seen = []
    for _ in range(2):
        time.sleep(LATER)
        comm.Recv(got[14], source=0, tag=14)
        seen.append(float(got[14][0]) if np.all(got[14] == got[14][0]) else None)
    check(f"reuse_send_{n}", bool(np.array_equal(got[10], _fill(n, k))), True)
    check(f"reuse_preposted_{n}", bool(np.all(got[11] == -1.0)), True)
    check(f"reuse_isend_{n}", bool(np.all(got[12] == -2.0)), True)
    check(f"reuse_bytearray_{n}", raw == bytearray(_fill(n, k).tobytes()), True)
    check(f"reuse_persistent_{n}", seen, [7.0, 8.0])


def _reuse_copying_calls():
    """Bsend copies into the attached buffer; Sendrecv_replace sends what the buffer held;
    a preposted receive too small for a message gets MPI_ERR_TRUNCATE."""
    n = 65536
    if rank == 0:
        MPI.Attach_buffer(bytearray(8 * n + MPI.BSEND_OVERHEAD))
        a = _fill(n, 9)
        comm.Bsend(a, dest=1, tag=20)
        a[:] = 0.0
        MPI.Detach_buffer()
    elif rank == 1:
        time.sleep(LATER)
        got = np.zeros(n)
        comm.Recv(got, source=0, tag=20)
        check("reuse_bsend", bool(np.array_equal(got, _fill(n, 9))), True)
    if rank < 2:
        other = 1 - rank
        buf = _fill(n, rank)
        comm.Sendrecv_replace(buf, dest=other, sendtag=21, source=other, recvtag=21)
        check("reuse_sendrecv_replace", bool(np.array_equal(buf, _fill(n, other))), True)
    if rank == 0:
        time.sleep(LATER)
        comm.Send(np.arange(10.0), dest=1, tag=22)
    elif rank == 1:
        req = comm.Irecv(np.zeros(4), source=0, tag=22)
        check("reuse_truncate_preposted", error_class(req.Wait), MPI.ERR_TRUNCATE)


def reuse():
    """A sender may reuse its buffer once Send returns or its Wait does: the receiver sees
    the data as of the send, whether its receive was posted before or after, for messages
    below and above the detached/eager size."""
    if size < 2:
        return
    for k, n in enumerate(REUSE_SIZES):
        if rank == 0:
            _reuse_sender(n, k)
        elif rank == 1:
            _reuse_receiver(n, k)
    _reuse_copying_calls()

CASES = {f.__name__: f for f in (nonovertaking, anysource_status, proc_null, probe, multi, cancel,
                                  truncate, waitall_error, errors, tag_bound, bufspecs, lowercase, wtime, sync,
                                  reuse)}
CASES[sys.argv[1]]()
