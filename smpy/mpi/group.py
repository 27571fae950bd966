"""``MPI.Group``: facade over :class:`smpy.runtime.group.GroupImpl`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smpy.mpi import registry
from smpy.mpi.args import int_list
from smpy.mpi.objmodel import (
    T_GROUP,
    HandleMixin,
    arg_type_error,
    as_int,
    builtin_handle,
    cannot_serialize,
    copy_arg,
    direct_handle,
    lookup_direct,
    null_handle,
    unorderable,
)
from smpy.runtime import errors
from smpy.runtime.group import EMPTY, GroupImpl
from smpy.runtime.world import current


class Group(HandleMixin):
    """Group of processes."""

    __slots__ = ("_impl", "_const", "__weakref__")

    def __new__(cls, group: Group | None = None) -> Group:
        copy_arg(group, Group, "group")
        self = object.__new__(cls)
        self._impl = None if group is None else group._impl
        self._const = False
        return self

    def __init__(self, group: Group | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: GroupImpl) -> Group:
        g = cls.__new__(cls)
        g._impl = EMPTY if not impl.members else impl
        g._const = False
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

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Group):
            return NotImplemented
        raise unorderable(self)

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = None  # type: ignore[assignment]  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._impl is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        impl = self._impl
        name = "GROUP_NULL" if impl is None else "GROUP_EMPTY" if impl is EMPTY else None
        if name is None:
            raise cannot_serialize(self)
        const = GROUP_NULL if impl is None else GROUP_EMPTY
        return name if self is const else (type(self), (const,))

    # -- handles --------------------------------------------------------------------------
    def _value(self) -> int:
        impl = self._impl
        if impl is None:
            return _NULL_HANDLE
        if impl is EMPTY:
            return _EMPTY_HANDLE
        return direct_handle(T_GROUP, impl)

    @classmethod
    def _from_value(cls, value: int) -> Group:
        g = cls.__new__(cls)
        g._const = False
        if value == _NULL_HANDLE:
            g._impl = None
        elif value == _EMPTY_HANDLE:
            g._impl = EMPTY
        else:
            impl = lookup_direct(value)
            if not isinstance(impl, GroupImpl):
                errors.raise_error(errors.ERR_GROUP, f"MPI_Group_f2c: Invalid group handle {as_int(value)}")
            g._impl = impl
        return g

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
        return g.translate(int_list(ranks), other)

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
        return Group._wrap(self._g().incl(int_list(ranks)))

    def Excl(self, ranks: Sequence[int]) -> Group:
        return Group._wrap(self._g().excl(int_list(ranks)))

    def Range_incl(self, ranks: Sequence[Sequence[int]]) -> Group:
        return Group._wrap(self._g().range_incl(ranks))

    def Range_excl(self, ranks: Sequence[Sequence[int]]) -> Group:
        return Group._wrap(self._g().range_excl(ranks))

    def Dup(self) -> Group:
        return Group._wrap(self._g())

    def Free(self) -> None:
        """Free a group."""
        self._g()
        if not self._const:
            self._impl = None

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        if self._impl is not None and not self._const:
            self.Free()

    @classmethod
    def Create_from_session_pset(cls, session: Any, pset_name: str) -> Group:
        """Create a new group from session and process set."""
        if not isinstance(session, registry.get("Session")):
            raise arg_type_error("session", "mpi4py.MPI.Session", session)
        return session.Create_group(pset_name)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group object at {id(self):#x}>"


_NULL_HANDLE = null_handle(T_GROUP)
_EMPTY_HANDLE = builtin_handle(T_GROUP, 0)

GROUP_NULL = Group()
GROUP_NULL._const = True
GROUP_EMPTY = Group._wrap(EMPTY)
GROUP_EMPTY._const = True
