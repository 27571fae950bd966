"""MPI-4 sessions in the runtime: process sets and communicators built from a group.

Process sets are MPICH's two built-in ones, in its order: ``mpi://WORLD`` (every rank of the
run) and ``mpi://SELF`` (the calling rank alone). Names are matched exactly (MPICH rejects
any other name with ``MPI_ERR_ARG``, "Invalid pset name").

``MPI_Comm_create_from_group`` has no parent communicator to agree on, so the members agree
through the world: the k-th call a rank makes with a given (group, string tag) refers to the
same new communicator on every member of the group. The first member to arrive builds the
:class:`CommImpl`; the entry is dropped when the last member took it (same scheme as
:meth:`CommImpl.agree`, keyed by the group's world ranks and the tag instead of a parent).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from smpy.runtime import errors
from smpy.runtime.comm import CommImpl

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

__all__ = ["PSET_NAMES", "pset_members", "create_from_group"]

#: MPICH's built-in process sets, in the order MPI_Session_get_nth_pset lists them
PSET_NAMES = ("mpi://WORLD", "mpi://SELF")

class _Agreements:
    __slots__ = ("pending", "seq")

    def __init__(self) -> None:
        #: (k, members, tag) -> [CommImpl, members that took it]
        self.pending: dict[tuple[Any, ...], list[Any]] = {}
        #: (world rank, members, tag) -> calls made so far
        self.seq: dict[tuple[Any, ...], int] = {}


_agreements: weakref.WeakKeyDictionary[World, _Agreements] = weakref.WeakKeyDictionary()


def pset_members(proc: Process, name: str, call: str) -> tuple[int, ...]:
    """World ranks of process set ``name`` as seen by ``proc``; ERR_ARG for unknown names."""
    if name == "mpi://WORLD":
        return tuple(range(proc.world.size))
    if name == "mpi://SELF":
        return (proc.rank,)
    errors.raise_error(errors.ERR_ARG, f"{call}(pset_name={name}) failed\nInvalid pset name")


def create_from_group(proc: Process, members: tuple[int, ...], stringtag: str) -> CommImpl:
    """The communicator every member of ``members`` gets for this (group, tag) call."""
    ag = _agreements.get(proc.world)
    if ag is None:
        ag = _agreements[proc.world] = _Agreements()
    mine = (proc.rank, members, stringtag)
    seq = ag.seq.get(mine, 0)
    ag.seq[mine] = seq + 1
    key = (seq, members, stringtag)
    entry = ag.pending.get(key)
    if entry is None:
        entry = ag.pending[key] = [CommImpl(proc.world, list(members), ""), 0]
    entry[1] += 1
    if entry[1] >= len(members):
        del ag.pending[key]
    return entry[0]
