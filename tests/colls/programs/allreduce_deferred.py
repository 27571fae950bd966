"""Blocking Allreduce on random doubles and integers, every result printed as a digest
(the bytes, not a tolerance): run with and without the deferred send-buffer copy of
Rabenseifner's allreduce, the digests must be equal. Ops: SUM and BXOR (one-ufunc
kernels: fused), MAX (copy then kernel), a commutative user op (not reduced on arrival)."""
import hashlib

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
rng = np.random.default_rng(rank + 7)


def mysum(a, b, dt):
    x = np.frombuffer(a, dtype=np.float64)
    y = np.frombuffer(b, dtype=np.float64)
    y += x


USER = MPI.Op.Create(mysum, commute=True)
for n in (size * 4 + 3, 5000):
    send = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    keep = send.copy()
    ints = rng.integers(0, 1 << 60, n)
    for name, op, s in (("sum", MPI.SUM, send), ("max", MPI.MAX, send), ("user", USER, send),
                        ("bxor", MPI.BXOR, ints)):
        recv = np.full_like(s, 3)
        comm.Allreduce(s, recv, op=op)
        print("ok", name, n, hashlib.sha1(recv.tobytes()).hexdigest())
    print("ok" if np.array_equal(send, keep) else "BAD", "send buffer untouched", n)
USER.Free()
