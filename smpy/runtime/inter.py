"""Intercommunicators: the two sides of a pair and their agreements.

An intercommunicator joins two disjoint groups A and B. Each group sees it through its own
:class:`~smpy.runtime.comm.CommImpl` *side*: local ``group``/``size``/``boxes`` (where its
members receive), remote ``rgroup``/``rsize`` and ``sboxes`` = the other side's
``boxes`` (where its sends go), so a message sent by A's rank i to rank j lands in B's
mailbox j with source i, as MPI numbers ranks on intercommunicators. Each side also has
``local``, a private intracommunicator over its group for the intra-group steps of the
collectives (MPICH's ``local_comm``).

Both sides share an :class:`InterPair`, which agrees on communicators made from the
intercommunicator (Dup, Split, Create, Merge) the way :meth:`CommImpl.agree` does for one
group: the k-th creation call of every member of either group refers to the same result.
``low`` is MPICH's *low group*: the one whose leader has the lower world rank at creation,
placed first by Merge when both groups pass the same ``high``.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from smpy.runtime.comm import Agreement, CommImpl

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World


class InterPair(Agreement):
    """The two sides of an intercommunicator; agrees (:meth:`Agreement.agree`) on the
    communicators made from it, counting the members of both groups."""

    __slots__ = ("a", "b", "low", "context", "_creations", "__weakref__")

    def __init__(self, world: World, a: CommImpl, b: CommImpl, low: CommImpl) -> None:
        self.a = a
        self.b = b
        self.low = low
        self.context = world.next_context()
        self._creations: dict[tuple[int, Any], list[Any]] = {}

    def side_of(self, world_rank: int) -> CommImpl:
        return self.a if world_rank in self.a.rank_of else self.b

    def other(self, side: CommImpl) -> CommImpl:
        return self.b if side is self.a else self.a


def make_pair(world: World, group_a: list[int], group_b: list[int], a_is_low: bool = True,
              name: str = "") -> InterPair:
    """Build both sides of a new intercommunicator between two disjoint groups."""
    a = CommImpl(world, list(group_a), name)
    b = CommImpl(world, list(group_b), name)
    for side, other in ((a, b), (b, a)):
        side.remote = side.rgroup = other.group
        side.rsize = other.size
        side.sboxes = other.boxes
        side.local = CommImpl(world, side.group, "")
    pair = InterPair(world, a, b, a if a_is_low else b)
    a.pair = b.pair = pair
    return pair


def is_inter(comm: CommImpl) -> bool:
    return comm.remote is not None


# -- communicators made from a group, without a parent (MPI_Comm_create_from_group) ------------
_from_group: weakref.WeakKeyDictionary[World, dict[tuple, list[Any]]] = weakref.WeakKeyDictionary()


def from_group(proc: Process, members: tuple[int, ...], stringtag: str) -> CommImpl:
    """The communicator every member of ``members`` gets for its k-th
    MPI_Comm_create_from_group call with ``stringtag`` on that group."""
    world = proc.world
    store = _from_group.get(world)
    if store is None:
        store = _from_group[world] = {}
    skey = ("from_group", stringtag, members)
    seq = proc.comm_seq.get(skey, 0)  # type: ignore[call-overload]
    proc.comm_seq[skey] = seq + 1  # type: ignore[index]
    key = (seq, skey)
    entry = store.get(key)
    if entry is None:
        entry = store[key] = [CommImpl(world, list(members), ""), 0]
    entry[1] += 1
    if entry[1] >= len(members):
        del store[key]
    return entry[0]


def compare(a: CommImpl, b: CommImpl) -> int:
    """MPI_Comm_compare when either is an intercommunicator: UNEQUAL against an
    intracommunicator, else the weaker of the local-group and remote-group comparisons
    (CONGRUENT: same members in the same order; SIMILAR: same members)."""
    from smpy.runtime.constants import CONGRUENT, IDENT, SIMILAR, UNEQUAL

    if a is b:
        return IDENT
    if a.remote is None or b.remote is None:
        return UNEQUAL

    def groups(x: list[int], y: list[int]) -> int:
        if list(x) == list(y):
            return CONGRUENT
        return SIMILAR if sorted(x) == sorted(y) else UNEQUAL

    return max(groups(a.group, b.group), groups(a.remote, b.remote))
