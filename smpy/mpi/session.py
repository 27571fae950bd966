"""``MPI.Session`` and the private helpers mpi4py's pure-Python modules import
(``_comm_lock``, ``_commctx_intra``, ...)."""

from __future__ import annotations

__all__: list[str] = []
