"""Foundations used by every layer: configuration flags, units, piecewise tables, mpiexec discovery."""
