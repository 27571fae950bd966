"""``MPI.Intercomm``: remote groups, Merge, collectives across two groups."""

from __future__ import annotations

__all__: list[str] = []
