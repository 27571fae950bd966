"""Non-blocking collectives give the blocking results (``icolls.py``, any number of ranks).

Runs unchanged under mpiexec; prints ``ok <name>`` or ``FAIL <name>: ...`` per check.
Several requests are in flight at once, completed in reverse order, to check that
concurrent collectives on one communicator match up.
"""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def check(name, got, want):
    got = got.tolist() if isinstance(got, np.ndarray) else got
    want = want.tolist() if isinstance(want, np.ndarray) else want
    print(f"ok {name}" if got == want else f"FAIL {name}: got {got!r}, want {want!r}")


def vals(r, n=4):
    return np.array([r + 1.0 + 10 * i for i in range(n)])


total = sum(vals(r) for r in range(size))

# several collectives in flight together, waited for in reverse order
b = np.arange(6.0) if rank == 0 else np.zeros(6)
ar = np.zeros(4)
ag = np.zeros((size, 4))
reqs = [comm.Ibcast(b, root=0), comm.Iallreduce(vals(rank), ar, op=MPI.SUM), comm.Iallgather(vals(rank), ag),
        comm.Ibarrier()]
for r in reversed(reqs):
    r.Wait()
check("Ibcast", b, np.arange(6.0))
check("Iallreduce", ar, total)
check("Iallgather", ag, np.array([vals(r) for r in range(size)]))

buf = vals(rank)
comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM).Wait()
check("Iallreduce_IN_PLACE", buf, total)

for root in range(size):
    rb = np.zeros(4)
    comm.Ireduce(vals(rank), rb if rank == root else None, op=MPI.MAX, root=root).Wait()
    if rank == root:
        check(f"Ireduce_{root}", rb, vals(size - 1))
    g = np.zeros((size, 4)) if rank == root else None
    comm.Igather(vals(rank), g, root=root).Wait()
    if rank == root:
        check(f"Igather_{root}", g, np.array([vals(r) for r in range(size)]))
    s = np.zeros(4)
    comm.Iscatter(np.array([vals(r) for r in range(size)]) if rank == root else None, s, root=root).Wait()
    check(f"Iscatter_{root}", s, vals(rank))

counts = [r + 1 for r in range(size)]
displs = [sum(counts[:r]) for r in range(size)]
n = sum(counts)
gv = np.full(n, -1.0)
comm.Igatherv(np.full(rank + 1, float(rank)), [gv, counts, displs, MPI.DOUBLE] if rank == 0 else None, root=0).Wait()
if rank == 0:
    check("Igatherv", gv, [float(r) for r in range(size) for _ in range(r + 1)])
sv = np.zeros(rank + 1)
comm.Iscatterv([np.arange(float(n)), counts, displs, MPI.DOUBLE] if rank == 0 else None, sv, root=0).Wait()
check("Iscatterv", sv, np.arange(float(n))[displs[rank]:displs[rank] + counts[rank]])
agv = np.full(n, -1.0)
comm.Iallgatherv(np.full(rank + 1, float(rank)), [agv, counts, displs, MPI.DOUBLE]).Wait()
check("Iallgatherv", agv, [float(r) for r in range(size) for _ in range(r + 1)])

send = np.array([100 * rank + d for d in range(size)], dtype=np.int32)
recv = np.full(size, -1, dtype=np.int32)
comm.Ialltoall(send, recv).Wait()
check("Ialltoall", recv, [100 * s + rank for s in range(size)])
sc = [d + 1 for d in range(size)]
sd = [sum(sc[:d]) for d in range(size)]
sendv = np.array([100 * rank + d for d in range(size) for _ in range(d + 1)], dtype=np.int32)
recvv = np.full((rank + 1) * size, -1, dtype=np.int32)
comm.Ialltoallv([sendv, sc, sd, MPI.INT], [recvv, [rank + 1] * size, [(rank + 1) * s for s in range(size)], MPI.INT]).Wait()
check("Ialltoallv", recvv, [100 * s + rank for s in range(size) for _ in range(rank + 1)])

sc_ = np.zeros(4)
comm.Iscan(vals(rank), sc_, op=MPI.SUM).Wait()
check("Iscan", sc_, sum(vals(r) for r in range(rank + 1)))
ex = np.full(4, -1.0)
comm.Iexscan(vals(rank), ex, op=MPI.SUM).Wait()
if rank > 0:
    check("Iexscan", ex, sum(vals(r) for r in range(rank)))

rsb = np.zeros(2)
comm.Ireduce_scatter_block(np.arange(2.0 * size) * (rank + 1), rsb, op=MPI.SUM).Wait()
check("Ireduce_scatter_block", rsb, np.arange(2.0 * rank, 2.0 * rank + 2) * (size * (size + 1) / 2))
rs = np.zeros(rank + 1)
comm.Ireduce_scatter(np.ones(n) * (rank + 1), rs, recvcounts=counts, op=MPI.SUM).Wait()
check("Ireduce_scatter", rs, np.ones(rank + 1) * (size * (size + 1) / 2))
rs2 = np.zeros(rank + 1)
comm.Ireduce_scatter(np.ones(n) * (rank + 1), rs2, op=MPI.SUM).Wait()
check("Ireduce_scatter_counts", rs2, np.ones(rank + 1) * (size * (size + 1) / 2))

# a non-commutative user op: composition of affine maps x -> a*x + b (mod 65521), one map
# per int64 element (a in the high half, b in the low half); lower ranks' maps come first
P = 65521


def affine(inbuf, inoutbuf, datatype):
    x = np.frombuffer(inbuf, dtype=np.int64)
    y = np.frombuffer(inoutbuf, dtype=np.int64)
    a1, b1, a2, b2 = x >> 32, x & 0xFFFFFFFF, y >> 32, y & 0xFFFFFFFF
    y[...] = ((a1 * a2) % P << 32) | ((a1 * b2 + b1) % P)


def encode(a, b):
    return (a << 32) | b


def compose(maps):
    a, b = 1, 0
    for a2, b2 in maps:
        a, b = (a * a2) % P, (a * b2 + b) % P
    return encode(a, b)


op = MPI.Op.Create(affine, commute=False)
maps = [[(r + 2, 3 * r + 1), (2 * r + 3, r)] for r in range(size)]
mine = np.array([encode(*m) for m in maps[rank]], dtype=np.int64)
want = [compose([maps[r][i] for r in range(size)]) for i in range(2)]
out = np.zeros(2, dtype=np.int64)
comm.Iallreduce(mine, out, op=op).Wait()
check("Iallreduce_noncommutative", out, want)
comm.Allreduce(mine, out, op=op)
check("Allreduce_noncommutative", out, want)
out2 = np.zeros(2, dtype=np.int64)
comm.Reduce(mine, out2 if rank == size - 1 else None, op=op, root=size - 1)
if rank == size - 1:
    check("Reduce_noncommutative", out2, want)
out3 = np.zeros(2, dtype=np.int64)
comm.Scan(mine, out3, op=op)
check("Scan_noncommutative", out3, [compose([maps[r][i] for r in range(rank + 1)]) for i in range(2)])
op.Free()
check("done", True, True)
