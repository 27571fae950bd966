"""Persistent, partitioned, buffered and ready point-to-point; persistent collectives
(``*_init``); Isendrecv; the blocking collectives not in comm.py (Reduce_scatter,
Alltoallw...). Mixed into :class:`smpy.mpi.comm.Comm`."""

from __future__ import annotations

__all__: list[str] = []


class CommPersistMixin:
    __slots__ = ()
