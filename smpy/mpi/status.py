"""``MPI.Status``: the status of a completed operation, laid out as MPICH's ``MPI_Status``.

The five C ints of MPICH's struct live in one ``array('i')``: ``count_lo``,
``count_hi_and_cancelled`` (bit 0 = cancelled, higher bits = count >> 32), ``MPI_SOURCE``,
``MPI_TAG``, ``MPI_ERROR``. :meth:`Status.tomemory` exposes that memory, so writes through
it change the status (as with mpi4py). The count is in bytes: ``Get_count(dt)`` is
``nbytes / dt.size`` or ``UNDEFINED`` when that is not a whole number.
"""

from __future__ import annotations

import copyreg
from array import array
from typing import Any

from smpy.mpi.args import intargs
from smpy.mpi.objmodel import copy_arg
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, UNDEFINED

_EMPTY = (0, 0, ANY_SOURCE, ANY_TAG, 0)


#: the Fortran status layout (MPICH's MPI_Status: count low, count high + cancelled, source, tag, error)
F_SOURCE = 2
F_TAG = 3
F_ERROR = 4
F_STATUS_SIZE = 5


class Status:
    """Status of a completed receive (``source``, ``tag``, ``error``, byte count, cancelled)."""

    __slots__ = ("_mem", "__weakref__")

    def __new__(cls, status: Status | None = None) -> Status:
        copy_arg(status, Status, "status")
        self = object.__new__(cls)
        self._mem = array("i", _EMPTY if status is None else status._mem)
        return self

    def __init__(self, status: Status | None = None) -> None:
        pass

    def _fill(self, source: int, tag: int, error: int, nbytes: int, cancelled: bool = False) -> None:
        m = self._mem
        m[2] = source
        m[3] = tag
        m[4] = error
        if nbytes < 0x80000000 and not cancelled:
            m[0] = nbytes
            m[1] = 0
        else:
            self._set_count(nbytes, cancelled)

    def _set_count(self, nbytes: int, cancelled: bool) -> None:
        lo = nbytes & 0xFFFFFFFF
        self._mem[0] = lo - (1 << 32) if lo >= 0x80000000 else lo
        self._mem[1] = ((nbytes >> 32) << 1) | int(bool(cancelled))

    @property
    def _nbytes(self) -> int:
        m = self._mem
        return (m[0] & 0xFFFFFFFF) | ((m[1] >> 1) << 32)

    @property
    def _cancelled(self) -> bool:
        return bool(self._mem[1] & 1)

    # fields --------------------------------------------------------------------------------
    @property
    def source(self) -> int:
        return self._mem[2]

    @source.setter
    @intargs
    def source(self, value: int) -> None:
        self._mem[2] = value

    @property
    def tag(self) -> int:
        return self._mem[3]

    @tag.setter
    @intargs
    def tag(self, value: int) -> None:
        self._mem[3] = value

    @property
    def error(self) -> int:
        return self._mem[4]

    @error.setter
    @intargs
    def error(self, value: int) -> None:
        self._mem[4] = value

    def Get_source(self) -> int:
        return self._mem[2]

    @intargs
    def Set_source(self, source: int) -> None:
        self._mem[2] = source

    def Get_tag(self) -> int:
        return self._mem[3]

    @intargs
    def Set_tag(self, tag: int) -> None:
        self._mem[3] = tag

    def Get_error(self) -> int:
        return self._mem[4]

    @intargs
    def Set_error(self, error: int) -> None:
        self._mem[4] = error

    def Get_count(self, datatype: Any = None) -> int:
        size = 1 if datatype is None else datatype.Get_size()
        n = self._nbytes
        if size == 0:
            return 0 if n == 0 else UNDEFINED
        q, r = divmod(n, size)
        return UNDEFINED if r else q

    def Get_elements(self, datatype) -> int:
        """Basic elements received (a partial element of a derived type counts its whole
        basic elements; UNDEFINED if the bytes end inside one)."""
        from smpy.runtime.datatype import get_elements

        n = get_elements(datatype._committed("MPI_Get_elements"), self._nbytes)
        return UNDEFINED if n is None else n

    @intargs
    def Set_elements(self, datatype: Any, count: int) -> None:
        self._set_count(count * (1 if datatype is None else datatype.Get_size()), self._cancelled)

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._set_count(self._nbytes, bool(flag))

    @property
    def count(self) -> int:
        return self.Get_count()

    @count.setter
    @intargs
    def count(self, value: int) -> None:
        self._set_count(value, self._cancelled)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        self.Set_cancelled(value)

    def tomemory(self) -> memoryview:
        """The status' memory (MPICH's five C ints); writes through it change the status."""
        return memoryview(self._mem)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._mem == other._mem

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (copyreg.__newobj__, (type(self),), self.__getstate__())

    def __getstate__(self) -> dict[str, int]:
        return {"source": self.Get_source(), "tag": self.Get_tag(), "error": self.Get_error(),
                "count": self._nbytes, "cancelled": self._cancelled}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.Set_source(state["source"])
        self.Set_tag(state["tag"])
        self.Set_error(state["error"])
        if "count" in state:
            self._set_count(state["count"], self._cancelled)
        if "cancelled" in state:
            self.Set_cancelled(state["cancelled"])

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} error={self.error} nbytes={self._nbytes}>"

    def py2f(self) -> list[int]:
        return list(self._mem)

    @classmethod
    def f2py(cls, arg: list[int]) -> Status:
        s = cls()
        s._mem = array("i", arg)
        return s


def _rebuild(fields: tuple[int, ...]) -> Status:
    s = Status()
    s._mem = array("i", fields)
    return s
