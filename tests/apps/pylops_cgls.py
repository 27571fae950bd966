"""pylops-mpi (run unmodified under smpyrun and mpiexec): each rank holds one block of a
block-diagonal operator (MPIBlockDiag) and its part of the DistributedArray; CGLS solves the
least-squares problem with allreduces of the distributed dot products, then a first
derivative (MPIFirstDerivative, halo exchanges) of the solution. Seeded: the numbers are the
same in every run; rank 0 prints them."""
import numpy as np
import pylops
import pylops_mpi
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
size = MPI.COMM_WORLD.Get_size()
np.random.seed(42)  # every rank draws the same block, as in pylops-mpi's plot_cgls example
N, M = 20, 15
Mop = pylops.MatrixMult(A=np.random.normal(0, 1, (N, M)) + rank * np.eye(N, M))
BDiag = pylops_mpi.MPIBlockDiag(ops=[Mop], dtype=np.float64)
x = pylops_mpi.DistributedArray(size * M, dtype=np.float64)
x[:] = np.arange(M) + rank
y = BDiag @ x
x0 = pylops_mpi.DistributedArray(BDiag.shape[1], dtype=np.float64)
x0[:] = 0
xinv, istop, niter, r1norm, r2norm, cost = pylops_mpi.cgls(BDiag, y, x0=x0, niter=30, tol=1e-12)
full = xinv.asarray()
D = pylops_mpi.MPIFirstDerivative(dims=(size * M,), dtype=np.float64)
dx = (D @ xinv).asarray()
err = MPI.COMM_WORLD.allreduce(float(np.abs(xinv.local_array - x.local_array).max()), op=MPI.MAX)
if rank == 0:
    print("iterations", niter, "istop", istop)
    print(f"r2norm {r2norm:.6e} max error {err:.6e}")
    print("solution", np.round(full, 6).tolist())
    print("derivative", np.round(dx, 6).tolist())
