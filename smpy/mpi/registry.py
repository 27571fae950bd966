"""The facade's classes and predefined objects by name, filled in by the classes themselves.

Inside :mod:`smpy.mpi` imports go one way: leaves (handles, buffers, requests, the mixins
that make up ``Comm``, spawn and argument parsing) → :mod:`~smpy.mpi.comm` →
:mod:`~smpy.mpi.intercomm`, :mod:`~smpy.mpi.topo` → :mod:`~smpy.mpi.session`,
:mod:`~smpy.mpi.win`, :mod:`~smpy.mpi.file`. Yet a mixin below ``comm`` must hand back
objects of classes defined above it: ``Create_cart`` returns a ``Cartcomm``, ``Spawn`` an
``Intercomm``, ``Create`` ``COMM_NULL`` outside the group, ``fromhandle`` the most derived
class of the handle. Those look the class (or object) up here, by name, when they run;
each class registers itself where it is defined (:func:`provides`), each predefined
object likewise (:func:`register`). ``import smpy.mpi`` imports every module of the
package, so the table is complete before any MPI call runs; a name missing at call
time is a bug of smpy (:class:`~smpy.support.internal.SmpyInternalError`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from smpy.runtime import topo as _rtopo
from smpy.support.internal import SmpyInternalError

__all__ = ["provides", "register", "get", "comm_class", "wrap_comm"]

_T = TypeVar("_T", bound=type)
_TABLE: dict[str, Any] = {}

#: topology kind of a runtime communicator -> name of its facade class
_TOPO_CLASS = {_rtopo.CART: "Cartcomm", _rtopo.GRAPH: "Graphcomm", _rtopo.DIST_GRAPH: "Distgraphcomm"}


def register(name: str, obj: Any) -> Any:
    """Record ``obj`` (a class or a predefined object) under ``name``; returns it."""
    old = _TABLE.get(name)
    if old is not None and old is not obj:
        raise SmpyInternalError(f"smpy.mpi.registry: {name!r} registered twice")
    _TABLE[name] = obj
    return obj


def provides(name: str) -> Callable[[_T], _T]:
    """Class decorator: the decorated class is the facade's ``name``."""
    def deco(cls: _T) -> _T:
        return register(name, cls)  # type: ignore[no-any-return]
    return deco


def get(name: str) -> Any:
    """The class or object registered as ``name``."""
    try:
        return _TABLE[name]
    except KeyError:
        raise SmpyInternalError(f"smpy.mpi.registry: nothing registered as {name!r} "
                                "(its module was not imported)") from None


def comm_class(impl: Any) -> type:
    """The class mpi4py gives a handle to the runtime communicator ``impl``: ``Intercomm``
    for an intercommunicator, ``Cartcomm``/``Graphcomm``/``Distgraphcomm`` by its topology,
    else ``Intracomm`` (``Intracomm`` for ``None`` too)."""
    if impl is None:
        return get("Intracomm")  # type: ignore[no-any-return]
    if impl.remote is not None:
        return get("Intercomm")  # type: ignore[no-any-return]
    topo = impl.topology
    return get("Intracomm" if topo is None else _TOPO_CLASS[topo.kind])  # type: ignore[no-any-return]


def wrap_comm(impl: Any) -> Any:
    """A new facade handle on ``impl``, of :func:`comm_class`."""
    return comm_class(impl)._wrap(impl)  # type: ignore[attr-defined]
