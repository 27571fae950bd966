"""Collective results, one case per run: ``colls.py <case>`` (any number of ranks).

Runs unchanged under smpyrun and under real mpiexec. Each check prints ``ok <name>`` or
``FAIL <name>: ...``; the test compares the set of ``ok`` lines per rank.
"""
import sys
from functools import reduce as fold

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failed = False


def plain(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    return x


def check(name, got, want):
    global failed
    got, want = plain(got), plain(want)
    if got == want:
        print(f"ok {name}")
    else:
        failed = True
        print(f"FAIL {name}: got {got!r}, want {want!r}")


def vals(r, n=3):
    """Rank r's contribution: n distinct doubles."""
    return np.array([r + 1.0 + 10 * i for i in range(n)])


def barrier():
    comm.Barrier()
    comm.barrier()
    check("barrier", True, True)


def bcast():
    for root in range(size):
        buf = np.arange(4.0) + root if rank == root else np.zeros(4)
        comm.Bcast(buf, root=root)
        check(f"Bcast_{root}", buf, np.arange(4.0) + root)
        ibuf = np.full(3, rank * 7 if rank == root else -1, dtype=np.int32)
        comm.Bcast([ibuf, MPI.INT], root=root)
        check(f"Bcast_int_{root}", ibuf, [root * 7] * 3)
        big = np.arange(20000.0) if rank == root else np.zeros(20000)
        comm.Bcast(big, root=root)
        check(f"Bcast_big_{root}", float(big.sum()), float(np.arange(20000.0).sum()))


OPS = {"SUM": (MPI.SUM, np.add), "MAX": (MPI.MAX, np.maximum), "MIN": (MPI.MIN, np.minimum),
       "PROD": (MPI.PROD, np.multiply)}


def expected(fn, ranks):
    return fold(fn, [vals(r) for r in ranks])


def reduce():
    for name, (op, fn) in OPS.items():
        for root in range(size):
            rbuf = np.full(3, -1.0)
            comm.Reduce(vals(rank), rbuf if rank == root else None, op=op, root=root)
            if rank == root:
                check(f"Reduce_{name}_{root}", rbuf, expected(fn, range(size)))
    ibuf = np.zeros(2, dtype=np.int64)
    comm.Reduce(np.array([rank, 1], dtype=np.int64), ibuf, op=MPI.SUM, root=0)
    if rank == 0:
        check("Reduce_int64", ibuf, [size * (size - 1) // 2, size])


def allreduce():
    for name, (op, fn) in OPS.items():
        rbuf = np.zeros(3)
        comm.Allreduce(vals(rank), rbuf, op=op)
        check(f"Allreduce_{name}", rbuf, expected(fn, range(size)))
    ibuf = np.zeros(1, dtype=np.int32)
    comm.Allreduce(np.array([rank + 1], dtype=np.int32), ibuf, op=MPI.PROD)
    check("Allreduce_int_prod", int(ibuf[0]), fold(lambda a, b: a * b, range(1, size + 1)))


def maxloc():
    dt = np.dtype([("val", "f8"), ("loc", "i4")], align=True)
    send = np.zeros(2, dtype=dt)
    # element 0: maximum at the last rank; element 1: all equal (ties keep the smallest rank)
    send[0] = (float(rank * rank), rank)
    send[1] = (5.0, rank)
    recv = np.zeros(2, dtype=dt)
    comm.Allreduce([send, MPI.DOUBLE_INT], [recv, MPI.DOUBLE_INT], op=MPI.MAXLOC)
    check("MAXLOC_DOUBLE_INT", [(float(v), int(i)) for v, i in recv.tolist()],
          [(float((size - 1) ** 2), size - 1), (5.0, 0)])
    comm.Allreduce([send, MPI.DOUBLE_INT], [recv, MPI.DOUBLE_INT], op=MPI.MINLOC)
    check("MINLOC_DOUBLE_INT", [(float(v), int(i)) for v, i in recv.tolist()], [(0.0, 0), (5.0, 0)])
    check("maxloc_lower", comm.allreduce((float(rank % 3), rank), op=MPI.MAXLOC),
          (float(max(r % 3 for r in range(size))), min(r for r in range(size) if r % 3 == max(q % 3 for q in range(size)))))
    check("minloc_lower", comm.allreduce((float(-rank), rank), op=MPI.MINLOC), (float(-(size - 1)), size - 1))


def gather():
    for root in range(size):
        rbuf = np.full((size, 3), -1.0) if rank == root else None
        comm.Gather(vals(rank), rbuf, root=root)
        if rank == root:
            check(f"Gather_{root}", rbuf, np.array([vals(r) for r in range(size)]))


def scatter():
    for root in range(size):
        sbuf = np.array([vals(r) for r in range(size)]) if rank == root else None
        rbuf = np.zeros(3)
        comm.Scatter(sbuf, rbuf, root=root)
        check(f"Scatter_{root}", rbuf, vals(rank))


def allgather():
    rbuf = np.zeros((size, 3))
    comm.Allgather(vals(rank), rbuf)
    check("Allgather", rbuf, np.array([vals(r) for r in range(size)]))


def alltoall():
    send = np.array([100 * rank + d for d in range(size)], dtype=np.int32)
    recv = np.full(size, -1, dtype=np.int32)
    comm.Alltoall(send, recv)
    check("Alltoall", recv, [100 * s + rank for s in range(size)])
    send2 = np.array([[rank, d] for d in range(size)], dtype=np.float64)
    recv2 = np.zeros((size, 2))
    comm.Alltoall(send2, recv2)
    check("Alltoall_2", recv2, [[s, rank] for s in range(size)])


def vcounts():
    counts = [r + 1 for r in range(size)]
    displs = [sum(counts[:r]) for r in range(size)]
    return counts, displs, sum(counts)


def gatherv():
    counts, displs, total = vcounts()
    for root in range(size):
        mine = np.full(rank + 1, float(rank))
        rbuf = np.full(total, -1.0)
        comm.Gatherv(mine, [rbuf, counts, displs, MPI.DOUBLE] if rank == root else None, root=root)
        if rank == root:
            check(f"Gatherv_{root}", rbuf, [float(r) for r in range(size) for _ in range(r + 1)])
    rbuf = np.full(total, -1.0)
    comm.Gatherv(np.full(rank + 1, float(rank)), [rbuf, counts] if rank == 0 else None, root=0)
    if rank == 0:
        check("Gatherv_counts_only", rbuf, [float(r) for r in range(size) for _ in range(r + 1)])


def scatterv():
    counts, displs, total = vcounts()
    for root in range(size):
        sbuf = np.arange(float(total)) if rank == root else None
        rbuf = np.zeros(rank + 1)
        comm.Scatterv([sbuf, counts, displs, MPI.DOUBLE] if rank == root else None, rbuf, root=root)
        check(f"Scatterv_{root}", rbuf, np.arange(float(total))[displs[rank]:displs[rank] + counts[rank]])


def allgatherv():
    counts, displs, total = vcounts()
    rbuf = np.full(total, -1.0)
    comm.Allgatherv(np.full(rank + 1, float(rank)), [rbuf, counts, displs, MPI.DOUBLE])
    check("Allgatherv", rbuf, [float(r) for r in range(size) for _ in range(r + 1)])
    # reversed displacements: block r at the end for r = 0
    rdispls = [total - displs[r] - counts[r] for r in range(size)]
    rbuf = np.full(total, -1.0)
    comm.Allgatherv(np.full(rank + 1, float(rank)), [rbuf, (counts, rdispls), MPI.DOUBLE])
    check("Allgatherv_displs", rbuf, [float(r) for r in reversed(range(size)) for _ in range(r + 1)])


def alltoallv():
    # rank s sends (d + 1) copies of 100*s + d to rank d
    scounts = [d + 1 for d in range(size)]
    sdispls = [sum(scounts[:d]) for d in range(size)]
    send = np.array([100 * rank + d for d in range(size) for _ in range(d + 1)], dtype=np.int32)
    rcounts = [rank + 1] * size
    rdispls = [(rank + 1) * s for s in range(size)]
    recv = np.full((rank + 1) * size, -1, dtype=np.int32)
    comm.Alltoallv([send, scounts, sdispls, MPI.INT], [recv, rcounts, rdispls, MPI.INT])
    check("Alltoallv", recv, [100 * s + rank for s in range(size) for _ in range(rank + 1)])


def scan():
    rbuf = np.zeros(3)
    comm.Scan(vals(rank), rbuf, op=MPI.SUM)
    check("Scan_SUM", rbuf, expected(np.add, range(rank + 1)))
    comm.Scan(vals(rank), rbuf, op=MPI.MAX)
    check("Scan_MAX", rbuf, expected(np.maximum, range(rank + 1)))
    rbuf = np.full(3, -1.0)
    comm.Exscan(vals(rank), rbuf, op=MPI.SUM)
    if rank > 0:
        check("Exscan_SUM", rbuf, expected(np.add, range(rank)))
    else:
        check("Exscan_SUM", True, True)
    check("scan_lower", comm.scan(rank + 1), sum(range(1, rank + 2)))
    check("exscan_lower", comm.exscan(rank + 1), None if rank == 0 else sum(range(1, rank + 1)))


def inplace():
    buf = vals(rank)
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    check("Allreduce_IN_PLACE", buf, expected(np.add, range(size)))
    for root in range(size):
        buf = vals(rank)
        if rank == root:
            comm.Reduce(MPI.IN_PLACE, buf, op=MPI.MAX, root=root)
            check(f"Reduce_IN_PLACE_{root}", buf, expected(np.maximum, range(size)))
        else:
            comm.Reduce(buf, None, op=MPI.MAX, root=root)
        if rank == root:
            rbuf = np.full((size, 3), -1.0)
            rbuf[root] = vals(root)
            comm.Gather(MPI.IN_PLACE, rbuf, root=root)
            check(f"Gather_IN_PLACE_{root}", rbuf, np.array([vals(r) for r in range(size)]))
        else:
            comm.Gather(vals(rank), None, root=root)
        if rank == root:
            sbuf = np.array([vals(r) for r in range(size)])
            comm.Scatter(sbuf, MPI.IN_PLACE, root=root)
            check(f"Scatter_IN_PLACE_{root}", sbuf, np.array([vals(r) for r in range(size)]))
        else:
            rbuf = np.zeros(3)
            comm.Scatter(None, rbuf, root=root)
            check(f"Scatter_IN_PLACE_{root}", rbuf, vals(rank))
    rbuf = np.full((size, 3), -1.0)
    rbuf[rank] = vals(rank)
    comm.Allgather(MPI.IN_PLACE, rbuf)
    check("Allgather_IN_PLACE", rbuf, np.array([vals(r) for r in range(size)]))
    buf = np.array([100 * rank + d for d in range(size)], dtype=np.int32)
    comm.Alltoall(MPI.IN_PLACE, buf)
    check("Alltoall_IN_PLACE", buf, [100 * s + rank for s in range(size)])
    buf = vals(rank)
    comm.Scan(MPI.IN_PLACE, buf, op=MPI.SUM)
    check("Scan_IN_PLACE", buf, expected(np.add, range(rank + 1)))


def lowercase():
    for root in range(size):
        obj = {"root": root, "l": list(range(root))} if rank == root else None
        check(f"bcast_{root}", comm.bcast(obj, root=root), {"root": root, "l": list(range(root))})
        got = comm.gather(("r", rank), root=root)
        check(f"gather_{root}", got, [("r", r) for r in range(size)] if rank == root else None)
        got = comm.scatter([r * r for r in range(size)] if rank == root else None, root=root)
        check(f"scatter_{root}", got, rank * rank)
        got = comm.reduce(rank + 1, op=MPI.SUM, root=root)
        check(f"reduce_{root}", got, size * (size + 1) // 2 if rank == root else None)
    check("allreduce_sum", comm.allreduce(rank + 1), size * (size + 1) // 2)
    check("allreduce_max", comm.allreduce(rank, op=MPI.MAX), size - 1)
    check("allreduce_min", comm.allreduce(rank, op=MPI.MIN), 0)
    check("allreduce_prod", comm.allreduce(rank + 1, op=MPI.PROD), fold(lambda a, b: a * b, range(1, size + 1)))
    check("allreduce_list", comm.allreduce([rank]), list(range(size)))
    check("allreduce_array", comm.allreduce(np.array([rank, 1])), [size * (size - 1) // 2, size])
    check("allgather", comm.allgather(rank * 2), [r * 2 for r in range(size)])
    check("alltoall", comm.alltoall([(rank, d) for d in range(size)]), [(s, rank) for s in range(size)])


CASES = {f.__name__: f for f in (barrier, bcast, reduce, allreduce, maxloc, gather, scatter, allgather,
                                  alltoall, gatherv, scatterv, allgatherv, alltoallv, scan, inplace,
                                  lowercase)}
CASES[sys.argv[1]]()
