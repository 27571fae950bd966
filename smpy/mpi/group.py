"""``MPI.Group``: facade over :class:`smpy.runtime.group.GroupImpl`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smpy.runtime import errors
from smpy.runtime.group import EMPTY, GroupImpl
from smpy.runtime.world import current


class Group:
    __slots__ = ("_impl",)

    def __init__(self, group: Group | None = None) -> None:
        self._impl: GroupImpl | None = None if group is None else group._impl

    @classmethod
    def _wrap(cls, impl: GroupImpl) -> Group:
        if not impl.members:
            return GROUP_EMPTY
        g = cls.__new__(cls)
        g._impl = impl
        return g

    def _g(self) -> GroupImpl:
        if self._impl is None:
            errors.raise_error(errors.ERR_GROUP, "invalid group (MPI_GROUP_NULL)")
        return self._impl

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Group):
            return NotImplemented
        a, b = self._impl, other._impl
        return a is b or (a is not None and b is not None and a.members == b.members and
                          (a is EMPTY) == (b is EMPTY))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(None if self._impl is None else self._impl.members)

    def __bool__(self) -> bool:
        return self._impl is not None

    def Get_size(self) -> int:
        return self._g().size

    def Get_rank(self) -> int:
        return self._g().rank_of(current().rank)

    @property
    def size(self) -> int:
        return self.Get_size()

    @property
    def rank(self) -> int:
        return self.Get_rank()

    def Translate_ranks(self, ranks: Sequence[int] | None = None, group: Group | None = None) -> list[int]:
        g = self._g()
        if ranks is None:
            ranks = range(g.size)
        other = g if group is None else group._g()
        return g.translate(list(ranks), other)

    def Compare(self, group: Group) -> int:
        return self._g().compare(group._g())

    def Union(self, group: Group) -> Group:
        return Group._wrap(self._g().union(group._g()))

    def Intersection(self, group: Group) -> Group:
        return Group._wrap(self._g().intersection(group._g()))

    Intersect = Intersection

    def Difference(self, group: Group) -> Group:
        return Group._wrap(self._g().difference(group._g()))

    def Incl(self, ranks: Sequence[int]) -> Group:
        return Group._wrap(self._g().incl(list(ranks)))

    def Excl(self, ranks: Sequence[int]) -> Group:
        return Group._wrap(self._g().excl(list(ranks)))

    def Range_incl(self, ranks: Sequence[Sequence[int]]) -> Group:
        return Group._wrap(self._g().range_incl(ranks))

    def Range_excl(self, ranks: Sequence[Sequence[int]]) -> Group:
        return Group._wrap(self._g().range_excl(ranks))

    def Dup(self) -> Group:
        return Group._wrap(self._g())

    def Free(self) -> None:
        if self is GROUP_EMPTY:
            errors.raise_error(errors.ERR_GROUP, "MPI_Group_free: cannot free a predefined group")
        self._g()
        self._impl = None

    @classmethod
    def Create_from_session_pset(cls, session: Any, pset_name: str) -> Group:
        from smpy.mpi.session import Group_from_session_pset  # session.py imports us
        return Group_from_session_pset(session, pset_name)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group object at {id(self):#x}>"


GROUP_NULL = Group()
GROUP_EMPTY = Group.__new__(Group)
GROUP_EMPTY._impl = EMPTY
