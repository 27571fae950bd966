"""UltraNest's ReactiveNestedSampler over MPI (run unmodified under smpyrun and mpiexec):
ultranest finds mpi4py itself, spreads the likelihood calls and region bootstraps over the
ranks and logs on rank 0 (stderr). Seeded alike on every rank, so the result is the same in
every run; rank 0 prints it."""
import numpy as np
import ultranest
from mpi4py import MPI

np.random.seed(1)


def prior(cube):
    return cube * 20 - 10


def loglike(theta):
    return -0.5 * np.sum(((theta - 1.0) / 0.5) ** 2, axis=1)


sampler = ultranest.ReactiveNestedSampler(["a", "b"], loglike, prior, vectorized=True, log_dir=None)
res = sampler.run(min_num_live_points=100, show_status=False, viz_callback=False, frac_remain=0.5)
if MPI.COMM_WORLD.rank == 0:
    print("logz {:.10f} +- {:.10f}".format(res["logz"], res["logzerr"]))
    print("ncall", res["ncall"], "niter", res["niter"])
    print("post", [f"{m:.10f}" for m in res["posterior"]["mean"]])
