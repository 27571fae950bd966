"""Process groups: ordered sets of world ranks, and MPI's group algebra.

A group is an immutable tuple of distinct world ranks; the rank of a process in a group
is its position. Set operations follow MPI's ordering rules: ``union`` keeps the first
group's order then appends the second group's new members in their order;
``intersection`` and ``difference`` keep the first group's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from smpy.runtime import errors
from smpy.runtime.constants import CONGRUENT, IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL


class GroupImpl:
    __slots__ = ("members", "index", "__weakref__")

    def __init__(self, members: Iterable[int]) -> None:
        self.members = tuple(members)
        self.index = {w: i for i, w in enumerate(self.members)}
        if len(self.index) != len(self.members):
            errors.raise_error(errors.ERR_GROUP, "a group cannot contain a process twice")

    @property
    def size(self) -> int:
        return len(self.members)

    def rank_of(self, world_rank: int) -> int:
        return self.index.get(world_rank, UNDEFINED)

    def translate(self, ranks: Sequence[int], other: GroupImpl) -> list[int]:
        out = []
        for r in ranks:
            if r == PROC_NULL:
                out.append(PROC_NULL)
                continue
            if not 0 <= r < self.size:
                errors.raise_error(errors.ERR_RANK, f"MPI_Group_translate_ranks: rank {r} out of range "
                                   f"0..{self.size - 1}")
            out.append(other.rank_of(self.members[r]))
        return out

    def compare(self, other: GroupImpl) -> int:
        if self.members == other.members:
            return IDENT
        if set(self.members) == set(other.members):
            return SIMILAR
        return UNEQUAL

    def union(self, other: GroupImpl) -> GroupImpl:
        return GroupImpl(self.members + tuple(w for w in other.members if w not in self.index))

    def intersection(self, other: GroupImpl) -> GroupImpl:
        return GroupImpl(w for w in self.members if w in other.index)

    def difference(self, other: GroupImpl) -> GroupImpl:
        return GroupImpl(w for w in self.members if w not in other.index)

    def _check(self, ranks: Sequence[int], call: str) -> None:
        seen = set()
        for r in ranks:
            if not 0 <= r < self.size:
                errors.raise_error(errors.ERR_RANK, f"{call}: rank {r} out of range 0..{self.size - 1}")
            if r in seen:
                errors.raise_error(errors.ERR_RANK, f"{call}: rank {r} given twice")
            seen.add(r)

    def incl(self, ranks: Sequence[int]) -> GroupImpl:
        self._check(ranks, "MPI_Group_incl")
        return GroupImpl(self.members[r] for r in ranks)

    def excl(self, ranks: Sequence[int]) -> GroupImpl:
        self._check(ranks, "MPI_Group_excl")
        drop = set(ranks)
        return GroupImpl(w for i, w in enumerate(self.members) if i not in drop)

    @staticmethod
    def _expand(ranges: Sequence[Sequence[int]], call: str) -> list[int]:
        out: list[int] = []
        for rng in ranges:
            first, last, *rest = rng
            stride = rest[0] if rest else 1
            if stride == 0:
                errors.raise_error(errors.ERR_ARG, f"{call}: stride 0")
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return out

    def range_incl(self, ranges: Sequence[Sequence[int]]) -> GroupImpl:
        return self.incl(self._expand(ranges, "MPI_Group_range_incl"))

    def range_excl(self, ranges: Sequence[Sequence[int]]) -> GroupImpl:
        return self.excl(self._expand(ranges, "MPI_Group_range_excl"))


def compare_comm_groups(a: Sequence[int], b: Sequence[int], same_context: bool) -> int:
    """MPI_Comm_compare on the groups of two communicators."""
    if same_context:
        return IDENT
    if tuple(a) == tuple(b):
        return CONGRUENT
    if set(a) == set(b):
        return SIMILAR
    return UNEQUAL


EMPTY = GroupImpl(())
