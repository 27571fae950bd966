"""``MPI.BOTTOM``, ``MPI.IN_PLACE`` and ``MPI.BUFFER_AUTOMATIC``: singleton address constants.

They behave like mpi4py's ``BottomType``/``InPlaceType``/``BufferAutomaticType``: ``repr`` is
the name, ``int()`` MPICH's address value (``MPI_BOTTOM == 0``, ``MPI_IN_PLACE == -1``,
``MPI_BUFFER_AUTOMATIC == -2``), they compare equal to their type and to that integer, and
pickle by name. Buffer parsing recognises them by identity (:mod:`smpy.mpi.msgspec`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BOTTOM", "IN_PLACE", "BUFFER_AUTOMATIC", "BottomType", "InPlaceType",
           "BufferAutomaticType"]


class _Address:
    __slots__ = ()
    _name = ""
    _value = 0

    def __new__(cls) -> Any:
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = object.__new__(cls)
            cls._instance = inst  # type: ignore[attr-defined]
        return inst

    def __bool__(self) -> bool:
        return self._value != 0

    def __int__(self) -> int:
        return self._value

    def __hash__(self) -> int:
        return hash(self._value)  # hash(-1) is -2 in CPython, as mpi4py's IN_PLACE

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return True
        if isinstance(other, int) or hasattr(type(other), "__index__"):
            try:
                return self._value == other.__index__()  # type: ignore[attr-defined]
            except TypeError:
                return NotImplemented
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


class BottomType(_Address):
    """Type of ``BOTTOM``."""

    __slots__ = ()
    _name = "BOTTOM"
    _value = 0

    def __index__(self) -> int:
        return self._value


class InPlaceType(_Address):
    """Type of ``IN_PLACE``."""

    __slots__ = ()
    _name = "IN_PLACE"
    _value = -1


class BufferAutomaticType(_Address):
    """Type of ``BUFFER_AUTOMATIC``."""

    __slots__ = ()
    _name = "BUFFER_AUTOMATIC"
    _value = -2


BOTTOM = BottomType()
IN_PLACE = InPlaceType()
BUFFER_AUTOMATIC = BufferAutomaticType()
