"""``MPI.Info``: key/value hints (strings), with mpi4py's mapping interface."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from smpy.runtime import errors

MAX_INFO_KEY = 255
MAX_INFO_VAL = 1024


class Info:
    __slots__ = ("_d", "_null", "_predefined")

    def __init__(self, info: Info | None = None) -> None:
        self._d: dict[str, str] = {} if info is None or info._d is None else info._d
        self._null = info is None or info._null
        self._predefined = False

    @classmethod
    def Create(cls, items: Mapping[str, str] | Any = None) -> Info:
        i = cls.__new__(cls)
        i._d, i._null, i._predefined = {}, False, False
        if items is not None:
            pairs = items.items() if hasattr(items, "items") else items
            for k, v in pairs:
                i.Set(k, v)
        return i

    @classmethod
    def Create_env(cls, args: Any = None) -> Info:
        return cls.Create()

    def _live(self) -> dict[str, str]:
        if self._null:
            errors.raise_error(errors.ERR_INFO, "invalid info object (MPI_INFO_NULL)")
        return self._d

    def Dup(self) -> Info:
        return Info.Create(dict(self._live()))

    def Free(self) -> None:
        if self._predefined:
            errors.raise_error(errors.ERR_INFO, "MPI_Info_free: cannot free a predefined info object")
        self._live()
        self._d, self._null = {}, True

    def Get(self, key: str) -> str | None:
        self._check_key(key)
        return self._live().get(key)

    def Set(self, key: str, value: str) -> None:
        self._check_key(key)
        if len(value) > MAX_INFO_VAL:
            errors.raise_error(errors.ERR_INFO_VALUE, f"MPI_Info_set: value longer than {MAX_INFO_VAL}")
        if self._predefined:
            errors.raise_error(errors.ERR_INFO, "MPI_Info_set: predefined info objects are read-only")
        self._live()[key] = value

    def Delete(self, key: str) -> None:
        self._check_key(key)
        d = self._live()
        if key not in d:
            errors.raise_error(errors.ERR_INFO_NOKEY, f"MPI_Info_delete: no key {key!r}")
        del d[key]

    def Get_nkeys(self) -> int:
        return len(self._live())

    def Get_nthkey(self, n: int) -> str:
        keys = list(self._live())
        if not 0 <= n < len(keys):
            errors.raise_error(errors.ERR_ARG, f"MPI_Info_get_nthkey: {n} out of range")
        return keys[n]

    @staticmethod
    def _check_key(key: str) -> None:
        if not key or len(key) > MAX_INFO_KEY:
            errors.raise_error(errors.ERR_INFO_KEY, f"invalid info key {key!r}")

    # mapping interface (mpi4py)
    def __len__(self) -> int:
        return 0 if self._null else len(self._d)

    def __contains__(self, key: object) -> bool:
        return not self._null and key in self._d

    def __iter__(self) -> Iterator[str]:
        return iter([] if self._null else list(self._d))

    def __getitem__(self, key: str) -> str:
        v = self.Get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __setitem__(self, key: str, value: str) -> None:
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self.Delete(key)

    def get(self, key: str, default: Any = None) -> Any:
        v = None if self._null else self._d.get(key)
        return default if v is None else v

    def keys(self) -> list[str]:
        return list(self)

    def values(self) -> list[str]:
        return [] if self._null else list(self._d.values())

    def items(self) -> list[tuple[str, str]]:
        return [] if self._null else list(self._d.items())

    def update(self, other: Any = (), **kwds: str) -> None:
        pairs = other.items() if hasattr(other, "items") else other
        for k, v in pairs:
            self.Set(k, v)
        for k, v in kwds.items():
            self.Set(k, v)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            v = self._d[key]
            self.Delete(key)
            return v
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, str]:
        d = self._live()
        if not d:
            raise KeyError("popitem(): info is empty")
        k = next(reversed(d))
        return k, self.pop(k)

    def copy(self) -> Info:
        return self.Dup()

    def clear(self) -> None:
        self._live().clear()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Info):
            return NotImplemented
        return self is other or (self._null and other._null)

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return not self._null

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Info object at {id(self):#x}>"


INFO_NULL = Info()
INFO_ENV = Info.Create()
INFO_ENV._predefined = True
