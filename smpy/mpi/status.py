"""``MPI.Status``."""

from __future__ import annotations

from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, UNDEFINED


class Status:
    """Status of a completed receive (``source``, ``tag``, ``error``, byte count)."""

    __slots__ = ("source", "tag", "error", "_nbytes", "_cancelled")

    def __init__(self, status: Status | None = None) -> None:
        if status is None:
            self.source, self.tag, self.error, self._nbytes, self._cancelled = ANY_SOURCE, ANY_TAG, 0, 0, False
        else:
            self.source, self.tag, self.error = status.source, status.tag, status.error
            self._nbytes, self._cancelled = status._nbytes, status._cancelled

    def _fill(self, source: int, tag: int, error: int, nbytes: int, cancelled: bool = False) -> None:
        self.source, self.tag, self.error, self._nbytes, self._cancelled = source, tag, error, nbytes, cancelled

    def Get_source(self) -> int:
        return self.source

    def Set_source(self, source: int) -> None:
        self.source = source

    def Get_tag(self) -> int:
        return self.tag

    def Set_tag(self, tag: int) -> None:
        self.tag = tag

    def Get_error(self) -> int:
        return self.error

    def Set_error(self, error: int) -> None:
        self.error = error

    def Get_count(self, datatype=None) -> int:
        size = 1 if datatype is None else datatype.Get_size()
        if size == 0:
            return 0 if self._nbytes == 0 else UNDEFINED
        q, r = divmod(self._nbytes, size)
        return UNDEFINED if r else q

    def Get_elements(self, datatype) -> int:
        """Basic elements received (a partial element of a derived type counts its whole
        basic elements; UNDEFINED if the bytes end inside one)."""
        from smpy.runtime.datatype import get_elements

        n = get_elements(datatype._committed("MPI_Get_elements"), self._nbytes)
        return UNDEFINED if n is None else n

    def Set_elements(self, datatype, count: int) -> None:
        self._nbytes = count * (1 if datatype is None else datatype.Get_size())

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._cancelled = bool(flag)

    @property
    def count(self) -> int:
        return self.Get_count()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.source, self.tag, self.error, self._nbytes, self._cancelled) == (
            other.source, other.tag, other.error, other._nbytes, other._cancelled)

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} error={self.error} nbytes={self._nbytes}>"

    def py2f(self) -> list[int]:
        return [self.source, self.tag, self.error, self._nbytes, int(self._cancelled)]
