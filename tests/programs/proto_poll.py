"""Rank 0 polls with Iprobe (or Test) while rank 1 sleeps 1 s then sends."""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
mode = sys.argv[1]
if comm.rank == 1:
    time.sleep(1.0)
    comm.send("x", dest=0, tag=1)
elif comm.rank == 0:
    polls = 0
    if mode == "iprobe":
        while not comm.Iprobe(source=1, tag=1):
            polls += 1
        comm.recv(source=1, tag=1)
    else:
        req = comm.irecv(source=1, tag=1)
        while not req.Test():
            polls += 1
    print(f"polls {polls} t {MPI.Wtime():.9f}")
