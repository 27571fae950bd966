"""Rank 1 sends a small message while rank 0 is busy (simulated sleep, outside MPI); rank 0
then counts the Iprobe calls that miss it. ``poll``: rank 0 first probes another tag (a
progress poll); ``barrier``: rank 1 sends before a barrier both ranks then enter."""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
mode = sys.argv[1]
if comm.rank == 1:
    comm.send("x", dest=0, tag=1)
    if mode == "barrier":
        comm.Barrier()
elif comm.rank == 0:
    if mode == "barrier":
        comm.Barrier()
    time.sleep(0.01)
    if mode == "poll":
        assert not comm.Iprobe(source=1, tag=2)
    misses = 0
    while not comm.Iprobe(source=1, tag=1):
        misses += 1
    assert comm.recv(source=1, tag=1) == "x"
    print(f"misses {misses}")
