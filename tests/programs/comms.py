"""Communicator management: Dup and Split (runs under smpyrun and mpiexec)."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def check(name, got, want):
    print(f"ok {name}" if got == want else f"FAIL {name}: got {got!r}, want {want!r}")


dup = comm.Dup()
check("dup_rank_size", (dup.Get_rank(), dup.Get_size()), (rank, size))
check("dup_compare", MPI.Comm.Compare(comm, dup), MPI.CONGRUENT)
check("dup_is_not_world", dup == comm, False)
check("dup_allreduce", dup.allreduce(rank), size * (size - 1) // 2)
if size >= 2:
    # a message on the duplicate must not match a receive on the parent, even with ANY_TAG
    if rank == 0:
        dup.send("on dup", dest=1, tag=1)
        comm.send("on world", dest=1, tag=1)
        dup.Send(np.array([2.0]), dest=1, tag=2)
    elif rank == 1:
        check("world_first", comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG), "on world")
        check("dup_second", dup.recv(source=0, tag=1), "on dup")
        check("world_iprobe_sees_nothing", comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG), False)
        buf = np.zeros(1)
        dup.Recv(buf, source=0, tag=2)
        check("dup_buffer", buf[0], 2.0)
dup2 = dup.Dup()
check("dup_of_dup", dup2.allreduce(1), size)
dup2.Free()
dup.Free()

# Split: even/odd world ranks, key reverses the order inside each colour
color = rank % 2
sub = comm.Split(color=color, key=-rank)
members = [r for r in range(size) if r % 2 == color]
check("split_size", sub.Get_size(), len(members))
check("split_rank", sub.Get_rank(), sorted(members, reverse=True).index(rank))
check("split_allreduce", sub.allreduce(rank), sum(members))
check("split_allgather", sub.allgather(rank), sorted(members, reverse=True))
rbuf = np.zeros(1)
sub.Allreduce(np.array([float(rank)]), rbuf, op=MPI.MAX)
check("split_Allreduce", rbuf[0], float(max(members)))
if sub.Get_size() >= 2:
    me, n = sub.Get_rank(), sub.Get_size()
    got = sub.sendrecv(rank, dest=(me + 1) % n, source=(me - 1) % n)
    check("split_p2p", got, sorted(members, reverse=True)[(me - 1) % n])
sub.Free()
# UNDEFINED colour gives COMM_NULL; others get a communicator of the rest
sub = comm.Split(color=MPI.UNDEFINED if rank == 0 else 1, key=rank)
if rank == 0:
    check("split_undefined", sub == MPI.COMM_NULL, True)
else:
    check("split_rest", (sub.Get_size(), sub.Get_rank(), sub.allreduce(1)), (size - 1, rank - 1, size - 1))
    sub.Free()
comm.Barrier()
check("done", True, True)
