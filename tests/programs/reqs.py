"""Requests, persistent/partitioned/buffered point-to-point, persistent collectives,
Reduce_scatter/Alltoallw: prints one line per check (``rank name value``); the same lines
are expected under real MPICH and under smpy (any np >= 1)."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
dest, source = (rank + 1) % size, (rank - 1) % size


def out(name, *values):
    sys.stdout.write(" ".join(str(x) for x in (rank, name, *values)) + "\n")
    sys.stdout.flush()


def status_fields(s):
    return (s.Get_source(), s.Get_tag(), s.Get_count(MPI.BYTE), s.Is_cancelled())


# persistent send/receive, re-used three times, with Startall
sbuf = np.zeros(4, dtype="i")
rbuf = np.full(4, -1, dtype="i")
sreq = comm.Send_init(sbuf, dest, 7)
rreq = comm.Recv_init(rbuf, source, 7)
out("types", type(sreq).__name__, type(rreq).__name__)
for it in range(3):
    sbuf[:] = 10 * rank + it
    MPI.Prequest.Startall([rreq, sreq])
    st = MPI.Status()
    MPI.Request.Waitall([sreq, rreq], [MPI.Status(), st])
    out("persistent", it, rbuf.tolist(), st.Get_source(), st.Get_tag(), st.Get_count(MPI.INT))
out("after_wait_not_null", bool(sreq), bool(rreq), sreq != MPI.REQUEST_NULL)
st = MPI.Status()
rreq.Wait(st)  # inactive: returns at once with an empty status
out("inactive_status", *status_fields(st))
out("inactive_waitany", MPI.Request.Waitany([sreq, rreq]), MPI.Request.Testany([sreq, rreq]))
out("inactive_waitsome", MPI.Request.Waitsome([sreq, rreq]), MPI.Request.Testall([sreq, rreq]))
sreq.Free()
rreq.Free()
out("freed", sreq == MPI.REQUEST_NULL, rreq == MPI.REQUEST_NULL)

# Ssend_init / Rsend_init / Bsend_init and PROC_NULL
for make in (comm.Ssend_init, comm.Rsend_init):
    r = make(b"", MPI.PROC_NULL, 0)
    r.Start()
    r.Wait()
    r.Free()
buf = bytearray(MPI.BSEND_OVERHEAD + 64)
MPI.Attach_buffer(buf)
data = np.arange(8, dtype="b") + rank
got = np.zeros(8, dtype="b")
req = comm.Bsend_init(data, dest, 3)
for _ in range(2):
    r2 = comm.Irecv(got, source, 3)
    req.Start()
    req.Wait()
    r2.Wait()
req.Free()
out("bsend_init", got.tolist())
comm.Bsend(data, dest, 4)
comm.Recv(got, source, 4)
out("bsend", got.tolist())
detached = MPI.Detach_buffer()
out("detach_returns_buffer", detached is buf)
try:
    comm.Bsend(b"abc", dest, 5)
except MPI.Exception as e:
    out("bsend_no_buffer", e.Get_error_class() == MPI.ERR_BUFFER)
comm.Barrier()

# ready sends, Isendrecv, Isendrecv_replace, Sendrecv_replace
r = comm.Irecv(got, rank, 9)
comm.Barrier()
comm.Rsend(data, rank, 9)
r.Wait()
out("rsend", got.tolist())
a = np.full(3, rank, dtype="d")
b = np.zeros(3, dtype="d")
comm.Isendrecv(a, dest, 1, b, source, 1).Wait()  # (MPICH leaves its status unset)
out("isendrecv", b.tolist())
c = np.full(2, rank, dtype="l")
comm.Isendrecv_replace(c, dest, 2, source, 2).Wait()
out("isendrecv_replace", c.tolist())
comm.Sendrecv_replace(c, dest, 2, source, 2)
out("sendrecv_replace", c.tolist())

# persistent collectives
v = np.full(2, rank + 1, dtype="i")
w = np.zeros(2, dtype="i")
reqs = [comm.Allreduce_init(v, w, MPI.SUM), comm.Barrier_init()]
for it in range(2):
    v[:] = rank + 1 + it
    MPI.Prequest.Startall(reqs)
    MPI.Request.Waitall(reqs)
    out("allreduce_init", it, w.tolist())
for r in reqs:
    r.Free()
bb = np.full(3, rank, dtype="f")
r = comm.Bcast_init(bb, root=size - 1)
r.Start()
r.Wait()
r.Free()
out("bcast_init", bb.tolist())
sb = np.arange(size * 2, dtype="i") + 100 * rank
rb = np.zeros(size * 2, dtype="i")
r = comm.Alltoall_init(sb, rb)
r.Start()
r.Wait()
out("alltoall_init", rb.tolist())
rb[:] = 0
comm.Alltoall([sb, 1, MPI.INT], [rb, 1, MPI.INT])  # an explicit count is per rank
out("alltoall_count", rb.tolist())
r = comm.Scan_init(v, w, MPI.SUM)
r.Start()
r.Wait()
out("scan_init", w.tolist())

# blocking Reduce_scatter(_block), Alltoallw
send = np.arange(size * 2, dtype="i") + rank
recv = np.zeros(2, dtype="i")
comm.Reduce_scatter_block(send, recv, MPI.SUM)
out("reduce_scatter_block", recv.tolist())
counts = [1 + (i % 2) for i in range(size)]
send = np.arange(sum(counts), dtype="d")
recv = np.zeros(counts[rank], dtype="d")
comm.Reduce_scatter(send, recv, counts, MPI.SUM)
out("reduce_scatter", recv.tolist())
sbuf = np.full((size, 2), rank, dtype="i")
rbuf = np.full((size, 2), -1, dtype="i")
ext = MPI.INT.Get_extent()[1]
displs = [2 * ext * i for i in range(size)]
comm.Alltoallw((sbuf, ([2] * size, displs), [MPI.INT] * size), (rbuf, ([2] * size, displs), [MPI.INT] * size))
out("alltoallw", rbuf.ravel().tolist())
rbuf[:] = -1
comm.Ialltoallw((sbuf, ([1] * size, displs), [MPI.INT] * size), (rbuf, ([1] * size, displs), [MPI.INT] * size)).Wait()
out("ialltoallw", rbuf.ravel().tolist())

# partitioned communication
parts = 3
ps = np.arange(parts * 2, dtype="i") + 10 * rank
pr = np.full(parts * 2, -1, dtype="i")
preq = comm.Precv_init(pr, parts, source, 0)
sreq = comm.Psend_init(ps, parts, dest, 0)
for it in range(2):
    preq.Start()
    arrived_early = preq.Parrived(0)
    sreq.Start()
    comm.Barrier()
    sreq.Pready_range(0, 1)
    sreq.Pready_list([2])
    while not preq.Parrived(parts - 1):
        pass
    MPI.Request.Waitall([sreq, preq])
    out("partitioned", it, arrived_early, pr.tolist())
    comm.Barrier()
preq.Free()
sreq.Free()

# generalized requests
calls = []
g = MPI.Grequest.Start(lambda st: (st.Set_source(3), st.Set_tag(4)), lambda: calls.append("free"),
                       lambda done: calls.append(f"cancel {done}"))
out("grequest_test_before", g.Test())
g.Cancel()
g.Complete()
st = MPI.Status()
g.Wait(st)
out("grequest", st.Get_source(), st.Get_tag(), calls, g == MPI.REQUEST_NULL)
g = MPI.Grequest.Start()
g.complete("obj")
out("grequest_obj", g.wait())

# Get_status family, Status memory
s = comm.isend("x", rank, 11)
r = comm.irecv(source=rank, tag=11)
flag = False
while not flag:
    flag = r.Get_status()
st = MPI.Status()
out("get_status", r.Get_status(st), st.Get_source(), st.Get_tag(), bool(r))
out("get_status_all", MPI.Request.Get_status_all([s, r]), MPI.Request.Get_status_some([s, r]))
out("objs", MPI.Request.waitall([s, r]))
st = MPI.Status()
st.source, st.tag, st.error = 1, 2, 3
mem = st.tomemory()
out("tomemory", list(mem))
mem[2] = 5
out("tomemory_write", st.source)
statuses = []
MPI.Request.Waitall([MPI.REQUEST_NULL] * 3, statuses)
out("statuses_extended", len(statuses), [x.Get_source() for x in statuses])
