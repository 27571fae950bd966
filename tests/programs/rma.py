"""RMA behaviour probe: each rank writes its observations as JSON to ARGV1.<rank>.json (compared
between smpy and MPICH)."""

import array
import json
import pickle
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
out: dict = {}


def err(fn):
    try:
        fn()
    except MPI.Exception as e:
        return e.Get_error_class()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__
    return None


# constants and attributes
out["consts"] = [MPI.WIN_FLAVOR_CREATE, MPI.WIN_FLAVOR_ALLOCATE, MPI.WIN_FLAVOR_DYNAMIC,
                 MPI.WIN_FLAVOR_SHARED, MPI.WIN_SEPARATE, MPI.WIN_UNIFIED, MPI.MODE_NOCHECK,
                 MPI.MODE_NOSTORE, MPI.MODE_NOPUT, MPI.MODE_NOPRECEDE, MPI.MODE_NOSUCCEED,
                 MPI.LOCK_EXCLUSIVE, MPI.LOCK_SHARED, MPI.WIN_BASE, MPI.WIN_SIZE,
                 MPI.WIN_DISP_UNIT, MPI.WIN_CREATE_FLAVOR, MPI.WIN_MODEL]
out["null"] = [MPI.WIN_NULL.Get_name(), bool(MPI.WIN_NULL), MPI.Win() == MPI.WIN_NULL,
               MPI.WIN_NULL.py2f(), err(MPI.WIN_NULL.Free)]

# handle object model
w = MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_SELF)
out["objmodel"] = [hex(w.handle), w.py2f(), MPI.Win.fromhandle(w.handle) == w, MPI.Win(w) == w,
                   err(lambda: hash(w)), err(lambda: pickle.dumps(w)),
                   pickle.loads(pickle.dumps(MPI.WIN_NULL)) is MPI.WIN_NULL, err(lambda: MPI.Win(3))]
w.Free()
out["objmodel"].append(w == MPI.WIN_NULL)

# fence epochs: put to the right, get from the right, accumulate
mem = array.array("i", [0] * 4)
win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
out["attrs"] = [win.attrs[1:], win.flavor, win.model, win.Get_attr(MPI.WIN_SIZE),
                win.Get_attr(MPI.WIN_DISP_UNIT), win.Get_attr(MPI.WIN_CREATE_FLAVOR),
                win.group_size, win.group_rank, win.Get_name(), sorted(win.Get_info().keys())]
win.Fence()
win.Put(array.array("i", [rank + 1, rank + 2]), right, 1)
win.Fence()
out["put"] = mem.tolist()
got = array.array("i", [-1] * 3)
win.Get([got, 2, MPI.INT], right, (1, 2, MPI.INT))
win.Fence()
out["get"] = got.tolist()
for op in (MPI.SUM, MPI.MAX, MPI.REPLACE, MPI.PROD):
    win.Accumulate(array.array("i", [10 * rank + 1]), left, 0, op)
    win.Fence()
    out.setdefault("acc", []).append(mem[0])
win.Fence(MPI.MODE_NOSUCCEED)
out["errors_fence"] = [err(lambda: win.Put(array.array("i", [1]), right)),
                       err(lambda: win.Fence(12345)),
                       err(lambda: win.Unlock(0)), err(lambda: win.Flush(0)),
                       err(lambda: win.Complete()), err(lambda: win.Wait()),
                       err(lambda: win.Sync()), err(lambda: win.Lock(0, 99)),
                       err(lambda: win.Lock(size + 3))]

# passive target: exclusive locks, fetch-and-op, compare-and-swap, get-accumulate
comm.Barrier()
mem[0] = 0
comm.Barrier()
res = array.array("i", [0])
win.Lock(0)
win.Fetch_and_op(array.array("i", [1]), res, 0, 0, MPI.SUM)
win.Unlock(0)
comm.Barrier()
out["fop_total"] = mem[0] if rank == 0 else None
fetched = comm.allgather(res[0])
out["fop_perm"] = sorted(fetched)
win.Lock(right, MPI.LOCK_SHARED)
win.Compare_and_swap(array.array("i", [99]), array.array("i", [rank + 1]), res, right, 1)
win.Flush(right)
old = res[0]
g = array.array("i", [0, 0])
win.Get_accumulate(array.array("i", [5, 6]), g, right, (2, 2, MPI.INT), MPI.SUM)
win.Unlock(right)
out["cas_old"] = old
out["getacc"] = g.tolist()
comm.Barrier()
out["after_passive"] = mem.tolist()
win.Lock(rank)
out["errors_lock"] = [err(lambda: win.Lock(rank)), err(lambda: win.Fence()),
                      err(lambda: win.Lock_all()), err(lambda: win.Free())]
win.Unlock(rank)
out["fetch_errors"] = [err(lambda: win.Fetch_and_op(bytearray(4), bytearray(1), 0)),
                       err(lambda: win.Fetch_and_op(bytearray(1), [bytearray(4), MPI.INT], 0)),
                       err(lambda: win.Put(array.array("i", [1]), 0, (0, 1, MPI.INT, None))),
                       err(lambda: win.Put(array.array("i", [1]), 0, {1: 2}))]

# request-based operations inside lock_all
win.Lock_all()
r = win.Rput(array.array("i", [7 * (rank + 1)]), right, 3)
r.Wait()
win.Flush_all()
rg = array.array("i", [0])
win.Rget(rg, right, 3).Wait()
racc = win.Raccumulate(array.array("i", [1]), right, 3, MPI.SUM)
racc.Wait()
win.Flush_local_all()
rga = array.array("i", [0])
win.Rget_accumulate(array.array("i", [0]), rga, right, 3, MPI.NO_OP).Wait()
win.Sync()
win.Unlock_all()
out["reqs"] = [rg[0], rga[0]]
comm.Barrier()

# PSCW ring: each rank exposes to its left neighbour, accesses its right neighbour
grp = win.Get_group()
win.Post(grp.Incl([left]))
win.Start(grp.Incl([right]))
win.Put(array.array("i", [100 + rank]), right, 0)
win.Complete()
win.Wait()
out["pscw"] = mem[0]
grp.Free()
win.Free()

# allocated, shared, dynamic windows
w = MPI.Win.Allocate(8 + 4 * rank, 4, comm=comm)
out["alloc"] = [w.attrs[1:], w.flavor, len(memoryview(w)), memoryview(w).format]
w.Free()
w = MPI.Win.Allocate_shared(4 * (rank + 1), 4, comm=comm)
sq = [w.Shared_query(i) for i in range(size)] + [w.Shared_query(MPI.PROC_NULL)]
out["shared"] = [w.flavor, [(len(m), d) for m, d in sq], err(lambda: w.Shared_query(size + 1))]
memoryview(w).cast("i")[0] = 1000 + rank
comm.Barrier()
out["shared_read"] = memoryview(sq[right][0]).cast("i")[0]
comm.Barrier()
w.Free()
w = MPI.Win.Create_dynamic(comm=comm)
out["dyn"] = [w.attrs[:2], w.flavor, err(lambda: w.Shared_query(0))]
region = np.zeros(2, "i")
w.Attach(region)
addrs = comm.allgather(region.ctypes.data)
comm.Barrier()
w.Lock(right)
w.Put(array.array("i", [rank + 5]), right, addrs[right] + 4)
w.Unlock(right)
comm.Barrier()
out["dyn_put"] = region.tolist()
w.Detach(region)
w.Free()
w = MPI.Win.Create(None, comm=comm)
out["create_none"] = [w.attrs, err(lambda: w.Attach(bytearray(4)))]
w.Free()
out["create_errors"] = [err(lambda: MPI.Win.Allocate(-1)), err(lambda: MPI.Win.Allocate(8, 0)),
                        err(lambda: MPI.Win.Create(b"abc"))]

# mpi4py.util.sync on RMA
from mpi4py.util.sync import Counter, Mutex  # noqa: E402

ctr = Counter(comm=comm)
vals = [ctr.next() for _ in range(3)]
out["counter"] = sorted(sum(comm.allgather(vals), []))
ctr.free()
mutex = Mutex(comm=comm)
shared = MPI.Win.Allocate(4 if rank == 0 else 0, 4, comm=comm)
for _ in range(2):
    with mutex:
        v = array.array("i", [0])
        shared.Lock(0)
        shared.Get(v, 0)
        shared.Unlock(0)
        shared.Lock(0)
        shared.Put(array.array("i", [v[0] + 1]), 0)
        shared.Unlock(0)
comm.Barrier()
out["mutex_count"] = memoryview(shared).cast("i")[0] if rank == 0 else None
shared.Free()
mutex.free()

with open(f"{sys.argv[1]}.{rank}.json", "w") as f:
    json.dump(out, f, sort_keys=True)
