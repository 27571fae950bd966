"""MPI handles for facade objects, with MPICH's handle layout.

An MPICH handle is a 32-bit int: bits 30-31 the kind (``01`` builtin, ``10`` direct,
``00`` null/invalid), bits 26-29 the object type, the rest an index. So ``MPI_COMM_WORLD``
is ``0x44000000``, ``MPI_COMM_NULL`` ``0x04000000`` and the first duplicated communicator
``0x84000002``. mpi4py shows ``obj.handle`` as the C value cast to an unsigned pointer
(a direct handle reads ``0xffffffff84000002``) and ``py2f()``/``toint()`` as a signed int.

Runtime objects that are not predefined get a direct handle the first time one is asked
for, from a per-run counter per object type (deterministic for a given program); a weak
table maps handles back to the objects for ``fromhandle``/``f2py``/``fromint``.
:class:`HandleMixin` gives a class mpi4py's handle methods from two hooks, :class:`AttrMixin`
the attribute methods (``Get_attr``...) on :mod:`smpy.runtime.attributes`.
"""

from __future__ import annotations

import weakref
from typing import Any

from smpy.mpi.args import intargs
from smpy.runtime import attributes as _attributes
from smpy.runtime.world import current

T_COMM = 1
T_GROUP = 2
T_ERRHANDLER = 5
T_INFO = 7

_BUILTIN = 0x40000000
_DIRECT = 0x80000000
_FIRST_INDEX = {T_COMM: 2}


def null_handle(objtype: int) -> int:
    return objtype << 26


def builtin_handle(objtype: int, index: int) -> int:
    return _BUILTIN | (objtype << 26) | index


def as_handle(value: int) -> int:
    """The unsigned pointer-sized ``handle`` property of a 32-bit MPICH handle."""
    value &= 0xFFFFFFFF
    return value | 0xFFFFFFFF00000000 if value & 0x80000000 else value


def as_int(value: int) -> int:
    """The signed C int of a handle (``py2f``, ``toint``)."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


class _HandleTable:
    __slots__ = ("handles", "objects", "next")

    def __init__(self) -> None:
        self.handles: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self.objects: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self.next: dict[int, int] = {}


_tables: weakref.WeakKeyDictionary[Any, _HandleTable] = weakref.WeakKeyDictionary()


def _table() -> _HandleTable:
    world = current().world
    t = _tables.get(world)
    if t is None:
        t = _tables[world] = _HandleTable()
    return t


def direct_handle(objtype: int, obj: Any) -> int:
    """The (unsigned 32-bit) direct handle of runtime object ``obj``, allocated on first use."""
    t = _table()
    h = t.handles.get(obj)
    if h is None:
        index = t.next.get(objtype, _FIRST_INDEX.get(objtype, 0))
        t.next[objtype] = index + 1
        h = _DIRECT | (objtype << 26) | index
        t.handles[obj] = h
        t.objects[h] = obj
    return h


def lookup_direct(value: int) -> Any:
    """The runtime object of a direct handle, or None."""
    return _table().objects.get(value & 0xFFFFFFFF)


class HandleMixin:
    """``handle``, ``fromhandle``, ``toint``/``fromint`` and ``py2f``/``f2py`` for a class that
    defines ``_value()`` (its unsigned 32-bit MPICH handle) and the classmethod
    ``_from_value(value)`` (a new object for a handle, raising the MPI error if invalid)."""

    __slots__ = ()

    def _value(self) -> int:
        raise NotImplementedError

    @classmethod
    def _from_value(cls, value: int) -> Any:
        raise NotImplementedError

    @property
    def handle(self) -> int:
        """MPI handle."""
        return as_handle(self._value())

    @classmethod
    def fromhandle(cls, handle: int) -> Any:
        """Create object from MPI handle."""
        return cls._from_value(int(handle) & 0xFFFFFFFF)

    def toint(self) -> int:
        """Translate object to integer handle."""
        return as_int(self._value())

    @classmethod
    def fromint(cls, arg: int, /) -> Any:
        """Translate integer handle to object."""
        return cls._from_value(int(arg) & 0xFFFFFFFF)

    def py2f(self) -> int:
        """Fortran handle."""
        return as_int(self._value())

    @classmethod
    def f2py(cls, arg: int) -> Any:
        """Object of a Fortran handle."""
        return cls._from_value(int(arg) & 0xFFFFFFFF)


class AttrMixin:
    """``Create_keyval``/``Free_keyval``/``Get_attr``/``Set_attr``/``Delete_attr`` for a facade
    class (e.g. ``Win``): it sets ``_attr_kind`` (``KIND_WIN``...) and ``_attr_name`` (``"Win"``)
    and defines ``_attr_obj()`` -> its weak-referenceable runtime object. ``Get_attr`` calls
    ``_predefined_attr(keyval)`` first (return ``NotImplemented`` when not predefined), and
    ``Free`` should call ``smpy.runtime.attributes.delete_all(proc, obj, self, "MPI_Win_free")``."""

    __slots__ = ()
    _attr_kind = _attributes.KIND_WIN
    _attr_name = "Win"

    def _attr_obj(self) -> Any:
        raise NotImplementedError

    def _predefined_attr(self, keyval: int) -> Any:
        return NotImplemented

    @staticmethod
    def _attr_proc() -> Any:
        return current()

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:
        """Create a new attribute key."""
        return _attributes.create_keyval(cls._attr_proc(), cls._attr_kind, copy_fn, delete_fn, nopython)

    @classmethod
    @intargs
    def Free_keyval(cls, keyval: int) -> int:
        """Free an attribute key."""
        return _attributes.free_keyval(cls._attr_proc(), keyval, cls._attr_kind)

    @intargs
    def Get_attr(self, keyval: int) -> Any:
        """Retrieve attribute value by key."""
        obj = self._attr_obj()
        value = self._predefined_attr(keyval)
        if value is not NotImplemented:
            return value
        found, value = _attributes.get_attr(self._attr_proc(), obj, keyval, self._attr_kind, f"MPI_{self._attr_name}_get_attr")
        return value if found else None

    @intargs
    def Set_attr(self, keyval: int, attrval: Any) -> None:
        """Store attribute value associated with a key."""
        _attributes.set_attr(self._attr_proc(), self._attr_obj(), self, keyval, attrval, self._attr_kind,
                 f"MPI_{self._attr_name}_set_attr")

    @intargs
    def Delete_attr(self, keyval: int) -> None:
        """Delete attribute value associated with a key."""
        _attributes.delete_attr(self._attr_proc(), self._attr_obj(), self, keyval, self._attr_kind,
                    f"MPI_{self._attr_name}_delete_attr")


def arg_type_error(name: str, expected: str, value: Any) -> TypeError:
    """Cython's error for a typed argument of the wrong type, as mpi4py raises it."""
    return TypeError(f"Argument '{name}' has incorrect type (expected {expected}, got {type(value).__name__})")


def copy_arg(other: Any, base: type, name: str) -> Any:
    """The argument of a copy constructor ``Base(other=None)`` (``MPI.Comm(comm)``,
    ``MPI.Datatype(dt)``...): None or an instance of ``base``, returned as given; anything
    else is mpi4py's ``TypeError`` naming the argument and ``mpi4py.MPI.<Base>``."""
    if other is not None and not isinstance(other, base):
        raise arg_type_error(name, f"mpi4py.MPI.{base.__name__}", other)
    return other


def cannot_serialize(obj: Any) -> ValueError:
    return ValueError(f"cannot serialize 'mpi4py.MPI.{type(obj).__name__}' instance")


def unorderable(obj: Any) -> TypeError:
    return TypeError(f"unorderable type '{type(obj).__module__}.{type(obj).__name__}'")
