"""ULFM calls with no failed process: Agree/Iagree (also issued before a Barrier the other
ranks issue first), Shrink/Ishrink, Get_failed, Ack_failed, Revoke, on COMM_WORLD and on an
intercommunicator. Rank 0 prints every rank's results."""

import numpy as np
from mpi4py import MPI

w = MPI.COMM_WORLD
r, n = w.rank, w.size
color = 0 if r < n // 2 else 1
loc = w.Split(color, 0)
ic = loc.Create_intercomm(0, w, n // 2 if color == 0 else 0, 0) if n > 1 else None
out = []
for comm in (w.Dup(), MPI.COMM_SELF.Dup()) + ((ic.Dup(),) if ic is not None else ()):
    res = [comm.Agree(0b1111 ^ (1 << (r % 4))), comm.Agree(-1), comm.Is_revoked()]
    flag = np.zeros(1, dtype="i")
    for root in range(comm.Get_size() if comm.Is_intra() else 0):
        comm.Barrier()
        if comm.Get_rank() == root:
            flag[0] = 0b1011
            req = comm.Iagree(flag)
            res.append(("pending", req.Test(), int(flag[0])))
            comm.Barrier()
        else:
            flag[0] = 0b1101
            comm.Barrier()
            req = comm.Iagree(flag)
        req.Wait()
        res.append(int(flag[0]))
    try:
        comm.Revoke()
        res.append("revoked")
    except NotImplementedError:
        res.append("no revoke")
    g = comm.Get_failed()
    res.append((g.Get_size(), MPI.Group.Compare(g, MPI.GROUP_EMPTY), comm.Ack_failed(), comm.Ack_failed(0)))
    s = comm.Shrink()
    s2, req = comm.Ishrink()
    res.append((type(s).__name__, s.Get_size(), MPI.Comm.Compare(s, comm), bool(req)))
    req.Wait()
    res.append((bool(req), s2.Get_size(), s2.Get_rank() == comm.Get_rank(), s2.allreduce(1)))
    out.append(res)
lines = w.gather(repr(out), root=0)
if r == 0:
    for i, line in enumerate(lines):
        print(i, line)
