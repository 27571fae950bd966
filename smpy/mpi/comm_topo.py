"""Topology constructors on intracommunicators (Create_cart, Create_graph,
Create_dist_graph...). The topology communicator classes live in :mod:`smpy.mpi.topo`."""

from __future__ import annotations

__all__: list[str] = []


class IntraTopoMixin:
    __slots__ = ()
