"""``MPI.Win``: one-sided communication (RMA)."""

from __future__ import annotations

__all__: list[str] = []
