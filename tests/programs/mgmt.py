"""Communicator management, attributes, error handlers and handles: prints facts that must be
the same under smpy and real mpi4py + MPICH (one line per fact, prefixed by the rank)."""

import pickle

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = []


def say(*args):
    out.append(" ".join(str(a) for a in (rank,) + args))


# -- creation ---------------------------------------------------------------------------------
even = comm.Get_group().Incl(list(range(0, size, 2)))
c = comm.Create(even)
say("create", bool(c), c.Get_size() if c else -1, c.Get_rank() if c else -1)
if c:
    say("create_sum", c.allreduce(rank))
    c.Free()
if rank % 2 == 0:
    g = comm.Create_group(even, tag=7)
    say("create_group", g.Get_size(), g.Get_rank(), g.allreduce(1))
    g.Free()
g0 = comm.Create_group(comm.Get_group().Incl([0]))  # outside the group: COMM_NULL, local
say("create_group_outside", g0 == MPI.COMM_NULL, g0.Get_size() if g0 else None)
say("create_empty", comm.Create_group(MPI.GROUP_EMPTY) == MPI.COMM_NULL, comm.Create(MPI.GROUP_EMPTY) == MPI.COMM_NULL)
half = comm.Split(rank % 2, 0)
for what, fn in (("notsubset", lambda: half.Create(comm.Get_group())), ("null", lambda: MPI.COMM_NULL.Create(even)),
                 ("badtag", lambda: comm.Create_group(even, tag=-5))):
    try:
        fn()
    except MPI.Exception as ex:
        say("create_error", what, ex.Get_error_class())
half.Free()
d = comm.Dup_with_info(MPI.INFO_NULL)
say("dup", d.Compare(comm), d.Get_name() == "", MPI.Comm.Compare(comm, comm))
r = comm.Split(0, size - rank)
say("split_similar", comm.Compare(r))
r.Free()
n, req = comm.Idup()
req.Wait()
say("idup", n.Compare(comm), req == MPI.REQUEST_NULL)
n.Free()
s = comm.Split_type(MPI.UNDEFINED)
say("split_type_undefined", s == MPI.COMM_NULL)
info = MPI.Info.Create()
info.Set("foo", "bar")
s = comm.Split_type(MPI.COMM_TYPE_HW_GUIDED, info=info)
say("hw_guided_nokey", s == MPI.COMM_NULL)
try:
    comm.Split_type(12345)
except MPI.Exception as e:
    say("split_type_bad", e.Get_error_class() == MPI.ERR_ARG)
say("parent", MPI.Comm.Get_parent() == MPI.COMM_NULL)
hints = MPI.Info.Create({"foo": "bar", "mpi_assert_no_any_tag": "true"})
d.Set_info(hints)
say("info", d.Get_info().items())
say("info_dup", d.Dup().Get_info().items() == comm.Get_info().items(), comm.Get_info().items())
names = comm.allgather(MPI.Get_processor_name())
local = names.count(MPI.Get_processor_name())  # ranks sharing this rank's node
sh = comm.Split_type(MPI.COMM_TYPE_SHARED, key=-rank)
say("shared_by_node", sh.Get_size() == local, sh.allgather(rank) == sorted(
    (r for r in range(size) if names[r] == names[rank]), reverse=True))
sh.Free()
info.Set("mpi_hw_resource_type", "mpi_shared_memory")
hw = comm.Split_type(MPI.COMM_TYPE_HW_GUIDED, info=info)
say("hw_guided_shmem", hw.Get_size() == local, info.Get("mpi_hw_resource_type"))
hw.Free()
rg = comm.Split_type(MPI.COMM_TYPE_RESOURCE_GUIDED, info=info)
say("resource_guided_shmem", rg.Get_size() == local)
rg.Free()
hu = comm.Split_type(MPI.COMM_TYPE_HW_UNGUIDED, info=MPI.Info.Create())
say("hw_unguided", hu == MPI.COMM_NULL if local == size else hu.Get_size() == local)

# -- attributes -------------------------------------------------------------------------------
log = []
k = MPI.Comm.Create_keyval(copy_fn=lambda o, kv, v: v + [rank], delete_fn=lambda o, kv, v: log.append(tuple(v)))
say("keyval_valid", k != MPI.KEYVAL_INVALID, d.Get_attr(k))
d.Set_attr(k, [1])
e = d.Dup()
say("attr_copied", e.Get_attr(k), d.Get_attr(k))
d.Set_attr(k, [2])  # overwrite: delete callback on the old value
e.Free()            # free: delete callback
d.Delete_attr(k)
say("attr_deleted", d.Get_attr(k), log)
say("free_keyval", MPI.Comm.Free_keyval(k) == MPI.KEYVAL_INVALID)
kn = MPI.Comm.Create_keyval(nopython=True)
d.Set_attr(kn, 42)
say("nopython", d.Get_attr(kn), d.Dup().Get_attr(kn))
say("predefined", [c.Get_attr(k) for c in (comm, d, MPI.COMM_SELF) for k in (
    MPI.TAG_UB, MPI.IO, MPI.WTIME_IS_GLOBAL, MPI.UNIVERSE_SIZE, MPI.APPNUM, MPI.LASTUSEDCODE)])
try:
    comm.Set_attr(MPI.TAG_UB, 1)
except MPI.Exception as ex:
    say("set_tag_ub", ex.Get_error_class() == MPI.ERR_KEYVAL)
kt = MPI.Datatype.Create_keyval(copy_fn=True)
t = MPI.INT.Dup()
t.Set_attr(kt, "x")
t2 = t.Dup()
say("type_attr", t2.Get_attr(kt), t.Get_attr(kt))
try:
    comm.Get_attr(kt)
except MPI.Exception as ex:
    say("wrong_kind", ex.Get_error_class() == MPI.ERR_KEYVAL)
t2.Free()
t.Free()

# -- error handlers ---------------------------------------------------------------------------
say("default_errhandler", comm.Get_errhandler() == MPI.ERRORS_RETURN, d.Get_errhandler() == MPI.ERRORS_RETURN)
seen = []
eh = MPI.Comm.Create_errhandler(lambda cm, code: seen.append(MPI.Get_error_class(code)))
d.Set_errhandler(eh)
d.Send(b"", dest=size + 5)  # the handler runs, then the call returns (no exception)
say("user_handler", seen)
d.Call_errhandler(MPI.ERR_OTHER)
say("call_errhandler", seen)
d.Set_errhandler(MPI.ERRORS_RETURN)
eh.Free()
say("eh_freed", eh == MPI.ERRHANDLER_NULL)
c1 = MPI.Add_error_class()
c2 = MPI.Add_error_code(c1)
MPI.Add_error_string(c2, "mine")
say("error_class", MPI.Get_error_class(c2) == c1, MPI.Get_error_string(c2))
d.Free()

# -- handles and object model -----------------------------------------------------------------
for name in ("COMM_NULL", "COMM_SELF", "COMM_WORLD", "GROUP_NULL", "GROUP_EMPTY", "ERRHANDLER_NULL",
             "ERRORS_RETURN", "ERRORS_ARE_FATAL", "ERRORS_ABORT", "INFO_NULL", "INFO_ENV"):
    obj = getattr(MPI, name)
    back = type(obj).fromhandle(obj.handle)
    say("handle", name, hex(obj.handle), obj.py2f(), obj.toint(), back == obj, pickle.loads(pickle.dumps(obj)) is obj)
x = comm.Dup()
say("dup_handle", x.handle > 0x7FFFFFFF, MPI.Comm.f2py(x.py2f()) == x, MPI.Intracomm.fromhandle(x.handle) == x)
try:
    pickle.dumps(x)
except ValueError as ex:
    say("pickle_dup", ex)
x.Free()
try:
    hash(comm)
except TypeError:
    say("hash", "unhashable")
grp = MPI.Group.Difference(comm.Get_group(), comm.Get_group())
say("empty_result", grp == MPI.GROUP_EMPTY, grp is MPI.GROUP_EMPTY)
grp.Free()
say("empty_freed", grp == MPI.GROUP_NULL, bool(MPI.GROUP_EMPTY))

lines = comm.gather("\n".join(out), root=0)
if rank == 0:
    print("\n".join(lines))
