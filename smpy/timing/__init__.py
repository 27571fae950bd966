"""Turning the real computation between MPI calls into simulated time."""
