"""``MPI.File``: MPI-IO on real files in a per-run directory, with modelled time."""

from __future__ import annotations

__all__: list[str] = []
