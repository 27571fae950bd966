"""Master–worker: rank 0 hands out tasks, workers answer in any order (ANY_SOURCE)."""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
ntasks = int(sys.argv[1]) if len(sys.argv) > 1 else 40
TASK, STOP, RESULT = 1, 2, 3


def work(n):
    # a small real computation: sum of squares below n
    return sum(i * i for i in range(n * 1000))


if size == 1:
    results = {t: work(t) for t in range(ntasks)}
elif rank == 0:
    results = {}
    next_task = 0
    status = MPI.Status()
    for w in range(1, size):
        if next_task < ntasks:
            comm.send(next_task, dest=w, tag=TASK)
            next_task += 1
        else:
            comm.send(None, dest=w, tag=STOP)
    while len(results) < ntasks:
        task, value = comm.recv(source=MPI.ANY_SOURCE, tag=RESULT, status=status)
        results[task] = value
        worker = status.Get_source()
        if next_task < ntasks:
            comm.send(next_task, dest=worker, tag=TASK)
            next_task += 1
        else:
            comm.send(None, dest=worker, tag=STOP)
else:
    status = MPI.Status()
    while True:
        task = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            break
        comm.send((task, work(task)), dest=0, tag=RESULT)
if rank == 0:
    print(f"{ntasks} tasks done by {max(size - 1, 1)} worker(s); checksum {sum(results.values()) % 1000000007}")
