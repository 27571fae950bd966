"""MPI.Session, Create_from_group and mpi4py's private helpers: deterministic lines to
compare smpy with real mpi4py + MPICH (tests/mpi/test_session_extras.py)."""
import pickle
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
out = []


def show(*a):
    out.append(" ".join(str(x) for x in a))


def err(name, f):
    try:
        show(name, "->", f())
    except MPI.Exception as e:
        show(name, "MPI.Exception", e.Get_error_class(), str(e).split(",")[0])
    except Exception as e:  # noqa: BLE001
        show(name, type(e).__name__, e)


s = MPI.Session.Init()
show("bool", bool(s), bool(MPI.SESSION_NULL), s == MPI.Session(s), s != MPI.SESSION_NULL)
n = s.Get_num_psets()
show("num", n, s.Get_num_psets(MPI.INFO_NULL))
for i in range(n):
    name = s.Get_nth_pset(i)
    info = s.Get_pset_info(name)
    show("pset", i, name, sorted(info.items()))
    info.Free()
info = s.Get_info()
show("info", sorted(info.items()))
info.Free()
err("nth -1", lambda: s.Get_nth_pset(-1))
err("nth n", lambda: s.Get_nth_pset(n))
err("psetinfo bad", lambda: s.Get_pset_info("@qerty!#$"))
err("group bad", lambda: s.Create_group("@qerty!#$"))
err("group empty", lambda: s.Create_group(""))
for call in ("Get_num_psets", "Get_info", "Finalize", "Get_errhandler"):
    err("null " + call, getattr(MPI.SESSION_NULL, call))
err("null nth", lambda: MPI.SESSION_NULL.Get_nth_pset(0))
err("null group", lambda: MPI.SESSION_NULL.Create_group("mpi://SELF"))
err("pickle", lambda: pickle.loads(pickle.dumps(s)))
err("pickle null", lambda: pickle.loads(pickle.dumps(MPI.SESSION_NULL)) == MPI.SESSION_NULL)
show("limits", MPI.MAX_PSET_NAME_LEN, MPI.MAX_STRINGTAG_LEN, MPI.MAX_PROCESSOR_NAME, MPI.MAX_OBJECT_NAME)

gw = s.Create_group("mpi://WORLD")
gs = MPI.Group.Create_from_session_pset(s, "mpi://SELF")
show("groups", gw.Get_size(), gw.Get_rank() == rank, gw.Compare(comm.Get_group()), gs.Get_size(), gs.Get_rank())
cw = MPI.Intracomm.Create_from_group(gw)
cw2 = MPI.Intracomm.Create_from_group(gw, "other.tag")
cs = MPI.Intracomm.Create_from_group(gs)
show("comms", type(cw).__name__, cw.Get_size(), cw.Get_rank() == rank, cw.Compare(comm), cw2.Compare(cw),
     cs.Get_size(), cs.Compare(MPI.COMM_SELF), repr(cw.Get_name()))
show("allreduce", cw.allreduce(rank + 1), cw2.allreduce(1), cs.allreduce(5))
if comm.Get_size() > 1:
    # a subgroup: only its members call
    sub = gw.Incl([0, 1])
    if rank < 2:
        c01 = MPI.Intracomm.Create_from_group(sub, "pair")
        show("pair", c01.Get_size(), c01.Get_rank() == rank, c01.bcast(rank * 10, root=1))
        c01.Free()
    sub.Free()
err("group null", lambda: MPI.Intracomm.Create_from_group(MPI.GROUP_NULL))
for c in (cw, cw2, cs):
    c.Free()
gw.Free()
gs.Free()
s.Finalize()
show("finalized", bool(s), s == MPI.SESSION_NULL)
err("twice", s.Finalize)

# private helpers
dup, tag0 = MPI._commctx_intra(comm)
dup2, tag1 = MPI._commctx_intra(comm)
show("commctx", dup == dup2, dup.Compare(comm), tag0, tag1, dup.Get_size(), repr(dup.Get_name()))
err("commctx self", lambda: MPI._commctx_intra(MPI.COMM_SELF)[1])
err("commctx comm", lambda: MPI._commctx_intra(MPI.Comm(comm)))
lock = MPI._comm_lock(comm)
show("lock", lock is MPI._comm_lock(comm), lock is MPI._comm_lock(comm, "x"), sorted(map(str, MPI._comm_lock_table(comm))),
     hasattr(lock, "acquire"), lock.locked())
with MPI._comm_lock(comm, "y") as held:
    show("held", held, MPI._comm_lock(comm, "y").locked())
show("typedicts", sorted(MPI._typedict_c), sorted(MPI._typedict_f))
show("typedict", sorted(MPI._typedict))
show("typedict names", [MPI._typedict_c[k].Get_name() for k in ("i", "d", "b1", "i8", "u8")],
     [MPI._typedict[k].Get_name() for k in ("i", "d", "?", "f4", "c16")])
show("sizeof", MPI._sizeof(MPI.Comm), MPI._sizeof(comm), MPI._sizeof(MPI.Status()), MPI._sizeof(MPI.Session),
     MPI._sizeof(MPI.Group), MPI._sizeof(MPI.Info))
err("sizeof None", lambda: MPI._sizeof(None))
err("handleof None", lambda: MPI._handleof(None))
err("addressof None", lambda: MPI._addressof(None))
show("addressof", MPI._addressof(comm) != 0, MPI._handleof(comm) >= 0)
# Comm construction as mpi4py.util.pkl5 does it (Comm.__new__(cls, comm)), null handles
cn = MPI.Comm(MPI.COMM_NULL)
show("comm ctor", bool(cn), cn == MPI.COMM_NULL, MPI.Intracomm(comm) == comm,
     MPI.Intracomm.__new__(MPI.Intracomm, MPI.COMM_SELF) == MPI.COMM_SELF)
p = MPI.Pickle()
show("pickle", p.PROTOCOL, p.THRESHOLD, MPI.pickle.PROTOCOL, MPI.Pickle(lambda o: b"").PROTOCOL,
     MPI.Pickle(lambda o: b"", protocol=3).PROTOCOL)
p2 = MPI.Pickle(lambda o: repr(o).encode(), lambda b: eval(bytes(b)))
show("custom", p2.dumps([1, 2]), p2.loads(b"[3]"))
import numpy as np  # noqa: E402

arr = np.arange(40000.0)
data, bufs = MPI.pickle.dumps_oob(arr)
back = MPI.pickle.loads_oob(data, bufs)
show("oob", type(data).__name__, len(bufs), [len(memoryview(b).cast("B")) for b in bufs], bool((back == arr).all()),
     len(MPI.pickle.dumps_oob(np.arange(10.0))[1]), len(MPI.pickle.dumps_oob(bytearray(300000))[1]))

every = comm.gather(out, root=0)
if rank == 0:
    for r, lines in enumerate(every):
        for line in lines:
            print(f"{r}: {line}")
sys.stdout.flush()
