"""Communicator management beyond Dup/Split: Create, Create_group, Split_type, Idup,
attributes and keyvals, error handlers, info, handles (py2f/f2py/fromhandle). Mixed into
:class:`smpy.mpi.comm.Comm`; imports of comm.py happen inside methods (it imports us)."""

from __future__ import annotations

__all__: list[str] = []


class CommMgmtMixin:
    __slots__ = ()
