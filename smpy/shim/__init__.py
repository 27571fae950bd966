"""What makes an unmodified mpi4py program run inside smpy: the ``mpi4py.MPI`` import
shim and the per-rank isolation of interpreter state."""
