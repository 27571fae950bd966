"""Attribute caching: keyvals and per-object attribute stores (MPI-4 chapter 7.7).

A *keyval* is created per process for one object kind (communicator, datatype, window) with
an optional copy callback (run when the object is duplicated) and delete callback (run when
the attribute is deleted, overwritten, or its object freed). Keyval numbers are MPICH's
handle layout: ``0xA4000000 | kind << 22 | index`` read as a signed C int, with
``kind`` = 1 (comm), 3 (datatype), 8 (win) and ``index`` taken from a per-process pool where
the most recently freed index is reused first. A freed keyval stays alive while attributes
still refer to it (their delete callbacks still run), as MPI requires.

An :class:`AttrStore` belongs to one object *in one process* (communicators are shared by
their members here, attributes are not): :func:`store_of` finds or makes it in the calling
process's table. The callbacks receive an opaque ``owner`` (the facade object), so this
module knows nothing of the public classes. Python semantics follow mpi4py: ``copy_fn`` may
be ``None``/``False`` (not copied), ``True`` (the same value), or a callable returning the
new value, ``NotImplemented`` meaning "do not copy"; an exception in a callback is printed
to stderr and becomes an ``ERR_OTHER`` error of the MPI call.
"""

from __future__ import annotations

import sys
import traceback
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.runtime import errors
from smpy.runtime.constants import KEYVAL_INVALID

if TYPE_CHECKING:
    from smpy.runtime.world import Process

KIND_COMM = 1
KIND_DATATYPE = 3
KIND_WIN = 8
_KIND_NAME = {KIND_COMM: "Comm", KIND_DATATYPE: "Type", KIND_WIN: "Win"}


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


class Keyval:
    __slots__ = ("value", "kind", "index", "copy_fn", "delete_fn", "nopython", "freed", "refs")

    def __init__(self, value: int, kind: int, index: int, copy_fn: Any, delete_fn: Any, nopython: bool) -> None:
        self.value = value
        self.kind = kind
        self.index = index
        self.copy_fn = copy_fn
        self.delete_fn = delete_fn
        self.nopython = nopython
        self.freed = False
        self.refs = 0  # attributes still attached with this keyval


class ProcessAttributes:
    """The keyvals and attribute stores of one MPI process."""

    __slots__ = ("keyvals", "_free", "_next", "stores")

    def __init__(self) -> None:
        self.keyvals: dict[int, Keyval] = {}
        self._free: list[int] = []
        self._next = 0
        #: object (shared runtime object) -> its attributes in this process
        self.stores: weakref.WeakKeyDictionary[Any, AttrStore] = weakref.WeakKeyDictionary()

    def create(self, kind: int, copy_fn: Any, delete_fn: Any, nopython: bool) -> int:
        if self._free:
            index = self._free.pop()
        else:
            index = self._next
            self._next += 1
        value = _signed32(0xA4000000 | (kind << 22) | index)
        self.keyvals[value] = Keyval(value, kind, index, copy_fn, delete_fn, nopython)
        return value

    def lookup(self, keyval: int, kind: int, call: str, lenient: bool = False) -> Keyval | None:
        kv = self.keyvals.get(keyval)
        if lenient and (kv is None or kv.freed) and (keyval & 0xFC000000) == 0xA4000000 - (1 << 32) & 0xFC000000 \
                and (keyval >> 22) & 0xF == kind:
            return None  # a freed keyval of the right kind: MPICH reports the attribute as unset
        if kv is None or kv.freed:
            errors.raise_error(errors.ERR_KEYVAL, f"{call}: Invalid keyval {keyval:#x}" if keyval >= 0
                               else f"{call}: Invalid keyval {keyval}")
        if kv.kind != kind:
            errors.raise_error(errors.ERR_KEYVAL, f"{call}: Keyval was not defined for "
                                                  f"{_KIND_NAME.get(kind, '?')} objects")
        return kv

    def free(self, keyval: int, kind: int, call: str) -> int:
        kv = self.lookup(keyval, kind, call)
        kv.freed = True
        self._release(kv)
        return KEYVAL_INVALID

    def _release(self, kv: Keyval) -> None:
        if kv.freed and kv.refs == 0 and self.keyvals.get(kv.value) is kv:
            del self.keyvals[kv.value]
            self._free.append(kv.index)


def process_attributes(proc: Process) -> ProcessAttributes:
    pa = proc.attrs.get("attributes")
    if pa is None:
        pa = proc.attrs["attributes"] = ProcessAttributes()
    return pa


def create_keyval(proc: Process, kind: int, copy_fn: Any = None, delete_fn: Any = None,
                  nopython: bool = False) -> int:
    return process_attributes(proc).create(kind, copy_fn, delete_fn, bool(nopython))


def free_keyval(proc: Process, keyval: int, kind: int) -> int:
    return process_attributes(proc).free(keyval, kind, f"MPI_{_KIND_NAME[kind]}_free_keyval")


class AttrStore:
    """Attributes of one object in one process: keyval number -> (Keyval, value)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[int, tuple[Keyval, Any]] = {}


def store_of(proc: Process, obj: Any, create: bool = True) -> AttrStore | None:
    """The attribute store of runtime object ``obj`` (weak-referenceable) in ``proc``."""
    stores = process_attributes(proc).stores
    st = stores.get(obj)
    if st is None and create:
        st = stores[obj] = AttrStore()
    return st


def _callback_failed(call: str) -> None:
    traceback.print_exc(file=sys.stderr)
    errors.raise_error(errors.ERR_OTHER, f"{call}: error in a user attribute callback")


def _run_delete(kv: Keyval, owner: Any, value: Any, call: str) -> None:
    fn = kv.delete_fn
    if fn is None or fn is False:
        return
    try:
        fn(owner, kv.value, value)
    except Exception:
        _callback_failed(call)


def get_attr(proc: Process, obj: Any, keyval: int, kind: int, call: str) -> tuple[bool, Any]:
    """(found, value) of a user keyval on ``obj``."""
    kv = process_attributes(proc).lookup(keyval, kind, call, lenient=True)
    st = store_of(proc, obj, create=False)
    if st is None or kv is None:
        return False, None
    entry = st.items.get(kv.value)
    if entry is None or entry[0] is not kv:
        return False, None
    return True, entry[1]


def set_attr(proc: Process, obj: Any, owner: Any, keyval: int, value: Any, kind: int, call: str) -> None:
    pa = process_attributes(proc)
    kv = pa.lookup(keyval, kind, call)
    if kv.nopython:
        value = int(value)
    st = store_of(proc, obj)
    assert st is not None
    old = st.items.get(kv.value)
    if old is not None:
        st.items[kv.value] = (kv, value)
        _run_delete(old[0], owner, old[1], call)
        return
    st.items[kv.value] = (kv, value)
    kv.refs += 1


def delete_attr(proc: Process, obj: Any, owner: Any, keyval: int, kind: int, call: str) -> None:
    pa = process_attributes(proc)
    kv = pa.lookup(keyval, kind, call)
    st = store_of(proc, obj, create=False)
    entry = None if st is None else st.items.get(kv.value)
    if entry is None:
        return  # MPICH accepts deleting an attribute that is not set
    del st.items[kv.value]  # type: ignore[union-attr]
    kv.refs -= 1
    try:
        _run_delete(kv, owner, entry[1], call)  # MPICH drops the attribute even if this fails
    finally:
        pa._release(kv)


def delete_all(proc: Process, obj: Any, owner: Any, call: str) -> None:
    """Run the delete callbacks of every attribute of ``obj`` (object being freed), most
    recently set first as MPICH does; the first failing callback raises after the rest ran."""
    pa = process_attributes(proc)
    st = pa.stores.pop(obj, None)
    if st is None:
        return
    failed: BaseException | None = None
    for kv, value in reversed(list(st.items.values())):
        try:
            _run_delete(kv, owner, value, call)
        except errors.MPIException as e:
            failed = failed or e
        kv.refs -= 1
        pa._release(kv)
    if failed is not None:
        raise failed


def copy_all(proc: Process, src: Any, owner: Any, dst: Any, call: str) -> None:
    """Run the copy callbacks of ``src``'s attributes into ``dst``'s store (duplication)."""
    st = store_of(proc, src, create=False)
    if st is None or not st.items:
        return
    new = store_of(proc, dst)
    assert new is not None
    for kv, value in list(st.items.values()):
        fn: Callable[..., Any] | bool | None = kv.copy_fn
        if fn is None or fn is False:
            continue
        if fn is True:
            newval = value
        else:
            try:
                newval = fn(owner, kv.value, value)  # type: ignore[operator]
            except Exception:
                delete_all(proc, dst, None, call)
                _callback_failed(call)
            if newval is NotImplemented:
                continue
        if kv.nopython:
            newval = int(newval)
        new.items[kv.value] = (kv, newval)
        kv.refs += 1
