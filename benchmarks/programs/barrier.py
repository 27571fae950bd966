"""Idle ranks for the memory benchmark: every rank calls Barrier once and ends."""
from mpi4py import MPI

MPI.COMM_WORLD.Barrier()
