"""Intercommunicators and ULFM calls: one line of results per rank (compared with MPICH).

Group 0 = the lower half of COMM_WORLD, group 1 = the upper half (uneven sizes at odd np).
"""

import numpy as np
from mpi4py import MPI

w = MPI.COMM_WORLD
r, n = w.rank, w.size
color = 0 if r < n // 2 else 1
loc = w.Split(color, 0)
ic = loc.Create_intercomm(0, w, n // 2 if color == 0 else 0, 7)
me, lsize, rsize = ic.rank, ic.size, ic.remote_size
out: list = [("kind", type(ic).__name__, ic.Is_inter(), ic.is_intra, me, lsize, rsize)]
out.append(("rgroup", ic.Get_remote_group().Translate_ranks(list(range(rsize)), w.Get_group())))


def err(fn):
    try:
        fn()
    except MPI.Exception as e:
        return e.Get_error_class()
    except (TypeError, ValueError, AttributeError, NotImplementedError) as e:
        return type(e).__name__
    return "no error"


# constructors, comparisons
out.append(("ctor", err(lambda: MPI.Intercomm(loc)), err(lambda: MPI.Intracomm(ic)), err(lambda: ic.Scan)))
out.append(("cmp", MPI.Comm.Compare(ic, ic), MPI.Comm.Compare(ic, loc)))

# point-to-point: every rank sends its world rank to every remote rank
reqs = [ic.isend((r, j), dest=j, tag=3) for j in range(rsize)]
got = []
for _ in range(rsize):
    st = MPI.Status()
    obj = ic.recv(source=MPI.ANY_SOURCE, tag=3, status=st)
    got.append((st.Get_source(), obj))
MPI.Request.Waitall(reqs)
out.append(("p2p", sorted(got)))
buf = np.zeros(3, dtype="i")
if me == 0:
    ic.Send(np.arange(3, dtype="i") + 10 * color, dest=rsize - 1, tag=4)
if me == lsize - 1:
    st = MPI.Status()
    ic.Recv(buf, source=0, tag=4, status=st)
    out.append(("Recv", buf.tolist(), st.Get_source(), st.Get_count(MPI.INT)))
out.append(("badrank", err(lambda: ic.send(1, dest=rsize)), err(lambda: ic.Iprobe(source=rsize))))


def each_root(fn):
    """Run a rooted collective once for every root of each group; collect what it returns."""
    res = []
    for g in (0, 1):
        for root in range(lsize if g == color else rsize):
            if g == color:
                res.append(fn(MPI.ROOT if root == me else MPI.PROC_NULL))
            else:
                res.append(fn(root))
    return res


# rooted collectives, lowercase
out.append(("bcast", each_root(lambda root: ic.bcast({"from": r} if root == MPI.ROOT else None, root=root))))
out.append(("gather", each_root(lambda root: ic.gather(r * 10, root=root))))
out.append(("scatter", each_root(lambda root: ic.scatter([(r, j) for j in range(rsize)]
                                                          if root == MPI.ROOT else None, root=root))))
out.append(("reduce", each_root(lambda root: ic.reduce(r + 1, op=MPI.PROD, root=root))))
out.append(("badroot", err(lambda: ic.reduce(None, root=rsize)), err(lambda: ic.Bcast(buf, root=-2))))


# rooted collectives, buffers
def bcast_buf(root):
    b = np.full(4, r, dtype="d") if root == MPI.ROOT else np.full(4, -1.0)
    ic.Bcast(b if root != MPI.PROC_NULL else None, root=root)
    return b.tolist()


def reduce_buf(root):
    rb = np.zeros(2, dtype="l")
    ic.Reduce(np.array([r, 1], dtype="l"), rb if root == MPI.ROOT else None, op=MPI.SUM, root=root)
    return rb.tolist()


def gather_buf(root):
    rb = np.zeros((rsize, 2), dtype="i")
    ic.Gather(np.array([r, me], dtype="i"), rb if root == MPI.ROOT else None, root=root)
    return rb.tolist()


def gatherv_buf(root):
    counts = [j + 1 for j in range(rsize)]
    rb = np.zeros(sum(counts), dtype="i")
    ic.Gatherv(np.full(me + 1, r, dtype="i"), [rb, counts] if root == MPI.ROOT else None, root=root)
    return rb.tolist()


def scatter_buf(root):
    rb = np.zeros(2, dtype="i")
    sb = np.arange(2 * rsize, dtype="i") + 100 * r
    ic.Scatter(sb if root == MPI.ROOT else None, rb if root >= 0 else None, root=root)
    return rb.tolist()


def scatterv_buf(root):
    counts = [j + 1 for j in range(rsize)]
    rb = np.zeros(me + 1, dtype="i")
    sb = np.arange(sum(counts), dtype="i") + 100 * r
    ic.Scatterv([sb, counts] if root == MPI.ROOT else None, rb if root >= 0 else None, root=root)
    return rb.tolist()


for name, fn in [("Bcast", bcast_buf), ("Reduce", reduce_buf), ("Gather", gather_buf),
                 ("Gatherv", gatherv_buf), ("Scatter", scatter_buf), ("Scatterv", scatterv_buf)]:
    out.append((name, each_root(fn)))

# all-to-all collectives
out.append(("allgather", ic.allgather((r, me)), "allreduce", ic.allreduce(r), "alltoall",
            ic.alltoall([(r, j) for j in range(rsize)])))
rb = np.zeros((rsize, 2), dtype="i")
ic.Allgather(np.array([r, me], dtype="i"), rb)
out.append(("Allgather", rb.tolist()))
rb = np.zeros((rsize, 0), dtype="i")  # empty blocks: zero-sized arrays with a 0 in their shape
ic.Allgather(np.zeros((1, 0), dtype="i"), rb)
out.append(("Allgather-empty", rb.shape))
counts = [j + 1 for j in range(rsize)]
rb = np.zeros(sum(counts), dtype="i")
ic.Allgatherv(np.full(me + 1, r, dtype="i"), [rb, counts])
out.append(("Allgatherv", rb.tolist()))
rb = np.zeros(3, dtype="d")
ic.Allreduce(np.array([r, 1, me], dtype="d"), rb, op=MPI.MAX)
out.append(("Allreduce", rb.tolist()))
rb = np.zeros(rsize, dtype="i")
ic.Alltoall(np.arange(rsize, dtype="i") + 10 * r, rb)
out.append(("Alltoall", rb.tolist()))
sc = [j + 1 for j in range(rsize)]
rc = [me + 1] * rsize
rb = np.zeros(sum(rc), dtype="i")
ic.Alltoallv([np.full(sum(sc), r, dtype="i"), sc], [rb, rc])
out.append(("Alltoallv", rb.tolist()))
if lsize == rsize:  # MPICH reduces lsize * recvcount elements of the remote group: equal sizes only
    rb = np.zeros(2, dtype="i")
    ic.Reduce_scatter_block(np.arange(2 * lsize, dtype="i") + r, rb, op=MPI.SUM)
    out.append(("Reduce_scatter_block", rb.tolist()))
    rb = np.zeros(me + 1, dtype="i")
    ic.Reduce_scatter(np.arange(sum(range(1, lsize + 1)), dtype="i") + r, rb, [j + 1 for j in range(lsize)])
    out.append(("Reduce_scatter", rb.tolist()))

# non-blocking
rb1 = np.zeros(rsize, dtype="i")
rb2 = np.zeros(2, dtype="i")
sb2 = np.array([r, 1], dtype="i")
ic.Iallreduce(sb2, rb2).Wait()  # alone: MPICH mixes it up with other pending intercomm collectives
reqs = [ic.Ibarrier(), ic.Iallgather(np.array([r], dtype="i"), rb1)]
b3 = np.zeros(2, dtype="i")
if color == 0:
    reqs.append(ic.Ibcast(np.array([5, r], dtype="i") if me == 0 else None,
                          root=MPI.ROOT if me == 0 else MPI.PROC_NULL))
else:
    reqs.append(ic.Ibcast(b3, root=0))
MPI.Request.Waitall(reqs)
out.append(("nonblocking", rb1.tolist(), rb2.tolist(), b3.tolist()))
ic.Barrier()
ic.barrier()

# new communicators
m = ic.Merge(high=color == 0)
out.append(("Merge", m.rank, m.size, type(m).__name__))
m2 = ic.Merge(high=False)
out.append(("Merge-same", m2.rank))
d = ic.Dup()
out.append(("Dup", type(d).__name__, MPI.Comm.Compare(ic, d), d.rank, d.remote_size, d.allreduce(r)))
s = ic.Split(me % 2, -me)
out.append(("Split", s == MPI.COMM_NULL or (s.rank, s.size, s.remote_size, s.allgather(r))))
g = ic.Get_group().Incl([0])
c = ic.Create(g)
out.append(("Create", c == MPI.COMM_NULL or (c.size, c.remote_size, c.allgather(r))))
rg = ic.Get_remote_group()
fg = MPI.Intercomm.Create_from_groups(ic.Get_group(), 0, rg, 0)
out.append(("Create_from_groups", type(fg).__name__, MPI.Comm.Compare(ic, fg), fg.allgather(r)))

# ULFM with no failure
for comm in (w.Dup(), ic.Dup()):  # fresh copies (MPICH 4 can hang in Iagree on a busy intercomm)
    f = np.zeros(1, dtype="i")
    f[0] = 6 if r % 2 else 3
    q = comm.Iagree(f)
    q.Wait()
    sh = comm.Shrink()
    sh2, qs = comm.Ishrink()
    pending = bool(qs)
    qs.Wait()
    out.append(("ulfm", comm.Agree(5 if r % 2 else 12), int(f[0]), comm.Is_revoked(), err(comm.Revoke),
                comm.Get_failed().Get_size(), comm.Ack_failed(), comm.Ack_failed(0),
                type(sh).__name__, MPI.Comm.Compare(sh, comm), sh.Get_rank(), pending, bool(qs),
                type(sh2).__name__, sh2.Get_size(), err(lambda c=comm: c.Iagree(bytearray(8)))))

lines = w.gather(repr(out), root=0)  # one writer: real MPI would interleave long lines
if r == 0:
    for i, line in enumerate(lines):
        print(i, line)
