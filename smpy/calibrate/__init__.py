"""Calibration on a real node with real mpi4py: host speed, network factors (and, later,
per-region compute factors and power)."""
