"""``MPI.Info``: key/value hints (strings), with mpi4py's mapping interface."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from smpy.mpi.args import intargs
from smpy.mpi.objmodel import (
    T_INFO,
    HandleMixin,
    as_int,
    builtin_handle,
    copy_arg,
    direct_handle,
    lookup_direct,
    null_handle,
    unorderable,
)
from smpy.runtime import errors

MAX_INFO_KEY = 255
MAX_INFO_VAL = 1024


class _InfoDict(dict):
    """The key/value store of one info object; identity is the MPI handle."""

    __slots__ = ("__weakref__",)
    __hash__ = object.__hash__  # type: ignore[assignment]


class Info(HandleMixin):
    """Info object."""

    __slots__ = ("_d", "_null", "_predefined", "__weakref__")

    def __new__(cls, info: Info | None = None) -> Info:
        copy_arg(info, Info, "info")
        self = object.__new__(cls)
        self._d = _InfoDict() if info is None or info._d is None else info._d
        self._null = info is None or info._null
        self._predefined = False
        return self

    def __init__(self, info: Info | None = None) -> None:
        pass

    @classmethod
    def Create(cls, items: Mapping[str, str] | Any = None) -> Info:
        i = cls.__new__(cls)
        i._d, i._null, i._predefined = _InfoDict(), False, False
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
        return type(self).Create(dict(self._live()))

    def Free(self) -> None:
        self._live()
        if self is INFO_ENV:
            return  # the module constant keeps its handle (mpi4py)
        self._d, self._null = _InfoDict(), True

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        if not self._null and self is not INFO_ENV and self is not INFO_NULL:
            self.Free()

    # -- handles (MPICH layout, see smpy.mpi.objmodel) ------------------------------------------
    def _value(self) -> int:
        if self._null:
            return _NULL_HANDLE
        if self._d is INFO_ENV._d:
            return _ENV_HANDLE
        return direct_handle(T_INFO, self._d)

    @classmethod
    def _from_value(cls, value: int) -> Info:
        i = cls.__new__(cls)
        i._predefined = False
        if value == _NULL_HANDLE:
            i._d, i._null = _InfoDict(), True
        elif value == _ENV_HANDLE:
            i._d, i._null = INFO_ENV._d, False
        else:
            d = lookup_direct(value)
            if not isinstance(d, _InfoDict):
                errors.raise_error(errors.ERR_INFO, f"MPI_Info_f2c: Invalid info handle {as_int(value)}")
            i._d, i._null = d, False
        return i

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self._null or self._d is INFO_ENV._d:
            const = INFO_NULL if self._null else INFO_ENV
            name = "INFO_NULL" if self._null else "INFO_ENV"
            return name if self is const else (type(self), (const,))
        return (type(self).Create, (self.items(),))

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

    @intargs
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
        if self._null:
            raise KeyError(key)
        v = self.Get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __setitem__(self, key: str, value: str) -> None:
        if self._null:
            raise KeyError(key)
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
        if self._null:
            raise KeyError
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
        if self._null:
            raise KeyError
        d = self._live()
        if not d:
            raise KeyError("popitem(): info is empty")
        k = next(reversed(d))
        return k, self.pop(k)

    def copy(self) -> Info:
        if self._null:
            return type(self)()
        return self.Dup()

    def clear(self) -> None:
        if self._null:
            return
        self._live().clear()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Info):
            return NotImplemented
        return self._null == other._null and (self._null or self._d is other._d)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Info):
            return NotImplemented
        raise unorderable(self)

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = None  # type: ignore[assignment]  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return not self._null

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Info object at {id(self):#x}>"


_NULL_HANDLE = null_handle(T_INFO)
_ENV_HANDLE = builtin_handle(T_INFO, 1)

INFO_NULL = Info()
INFO_ENV = Info.Create()
INFO_ENV._predefined = True
