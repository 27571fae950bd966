"""dask-mpi's batch mode: the scheduler on rank 0, the client on rank 1, workers on the rest."""

from dask_mpi import initialize

initialize(nthreads=1, memory_limit=None, dashboard=False)

from distributed import Client  # noqa: E402


def inc(x):
    return x + 1


with Client() as client:
    futures = client.map(inc, range(100))
    total = client.submit(sum, futures)
    print("result", total.result(), "workers", len(client.scheduler_info()["workers"]), flush=True)
