"""Intercommunicator constructors on intracommunicators (Create_intercomm,
Create_from_groups). The :class:`Intercomm` class lives in :mod:`smpy.mpi.intercomm`."""

from __future__ import annotations

__all__: list[str] = []


class IntraInterMixin:
    __slots__ = ()
