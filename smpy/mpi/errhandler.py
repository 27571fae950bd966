"""``MPI.Errhandler``, the predefined error handlers, and dynamic error classes/codes.

An error handler is attached per process to a communicator, window, file or session (the
runtime object is shared by the members; the handler choice is not), see
:func:`get_errhandler`/:func:`set_errhandler`, which any handle class can use with its own
runtime object. mpi4py installs ``ERRORS_RETURN`` on every object it creates or that MPI
predefines, so that is the default here; with ``mpi4py.rc.errors`` other than ``exception``
(:func:`set_rc_errors`, when the rank imports ``mpi4py.MPI``) the default is what mpi4py then
installs (``abort``: ``ERRORS_ABORT``, ``fatal``: ``ERRORS_ARE_FATAL``) or MPI's own
(``default``: ``ERRORS_ARE_FATAL``, ``ERRORS_RETURN`` for files). When an MPI call made on such an object fails
(:func:`on_call_error`, hooked into :func:`smpy.mpi._call.mpicall`):

* ``ERRORS_RETURN``: the error reaches Python as ``MPI.Exception``;
* ``ERRORS_ARE_FATAL`` / ``ERRORS_ABORT``: MPICH prints the error and aborts the job: the
  run stops as with ``MPI_Abort`` with the error code;
* a user handler (``Create_errhandler(fn)``): ``fn(obj, code)`` runs, then the call returns
  normally (MPICH returns ``MPI_SUCCESS`` to mpi4py after a user handler: no exception).

As in mpi4py, at most 32 user-defined handlers per object kind can be created in a process
(``RuntimeError`` after that); their slots are never given back.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from smpy.mpi import _call
from smpy.mpi.args import intargs
from smpy.mpi.objmodel import (
    T_ERRHANDLER,
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
from smpy.runtime import errors, lifecycle
from smpy.runtime.world import NotInSimulation, current

__all__ = [
    "Errhandler", "ERRHANDLER_NULL", "ERRORS_RETURN", "ERRORS_ARE_FATAL", "ERRORS_ABORT",
    "Add_error_class", "Add_error_code", "Add_error_string", "Remove_error_class",
    "Remove_error_code", "Remove_error_string",
]
# ErrhandlerMixin, create_errhandler, get/set/call_errhandler: for the other handle classes

KINDS = ("Session", "Comm", "Win", "File")
MAX_USER_ERRHANDLERS = 32


class ErrhandlerImpl:
    """A predefined (``name`` set) or user-defined (``kind`` and ``fn`` set) handler."""

    __slots__ = ("name", "kind", "fn", "value", "__weakref__")

    def __init__(self, name: str | None, kind: str | None, fn: Callable[..., Any] | None, value: int = 0) -> None:
        self.name = name
        self.kind = kind
        self.fn = fn
        self.value = value

    @property
    def fatal(self) -> bool:
        return self.name in ("ERRORS_ARE_FATAL", "ERRORS_ABORT")


_FATAL = ErrhandlerImpl("ERRORS_ARE_FATAL", None, None, builtin_handle(T_ERRHANDLER, 0))
_RETURN = ErrhandlerImpl("ERRORS_RETURN", None, None, builtin_handle(T_ERRHANDLER, 1))
_ABORT = ErrhandlerImpl("ERRORS_ABORT", None, None, builtin_handle(T_ERRHANDLER, 3))
_PREDEFINED = {e.value: e for e in (_FATAL, _RETURN, _ABORT)}
_NULL_VALUE = null_handle(T_ERRHANDLER)


class Errhandler(HandleMixin):
    """Error handler."""

    __slots__ = ("_impl", "_const", "__weakref__")

    def __new__(cls, errhandler: Errhandler | None = None) -> Errhandler:
        copy_arg(errhandler, Errhandler, "errhandler")
        self = object.__new__(cls)
        self._impl = None if errhandler is None else errhandler._impl
        self._const = False
        return self

    def __init__(self, errhandler: Errhandler | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: ErrhandlerImpl | None) -> Errhandler:
        e = cls.__new__(cls)
        e._impl = impl
        e._const = False
        return e

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._impl is other._impl

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._impl is not other._impl

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Errhandler):
            return NotImplemented
        raise unorderable(self)

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        return self._impl is not None

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Errhandler object at {id(self):#x}>"

    def __reduce__(self) -> str | tuple[Any, ...]:
        impl = self._impl
        name = "ERRHANDLER_NULL" if impl is None else impl.name
        if name is None:
            raise cannot_serialize(self)
        const = globals()[name]
        return name if const is self else (type(self), (const,))

    # -- handles --------------------------------------------------------------------------
    def _value(self) -> int:
        impl = self._impl
        if impl is None:
            return _NULL_VALUE
        if impl.name is not None:
            return impl.value
        return direct_handle(T_ERRHANDLER, impl)

    @classmethod
    def _from_value(cls, value: int) -> Errhandler:
        if value == _NULL_VALUE:
            return cls._wrap(None)
        impl = _PREDEFINED.get(value) or lookup_direct(value)
        if not isinstance(impl, ErrhandlerImpl):
            errors.raise_error(errors.ERR_ERRHANDLER, f"MPI_Errhandler_f2c: Invalid errhandler handle {as_int(value)}")
        return cls._wrap(impl)

    # -- freeing --------------------------------------------------------------------------
    def Free(self) -> None:
        """Free an error handler."""
        if self._impl is None:
            errors.raise_error(errors.ERR_ARG, "MPI_Errhandler_free: Null Errhandler pointer")
        if not self._const:
            self._impl = None

    def free(self) -> None:
        """Call ``Free`` if not null."""
        if self._impl is not None and not self._const:
            self.Free()


def _const(impl: ErrhandlerImpl | None) -> Errhandler:
    e = Errhandler._wrap(impl)
    e._const = True
    return e


ERRHANDLER_NULL = _const(None)
ERRORS_ARE_FATAL = _const(_FATAL)
ERRORS_RETURN = _const(_RETURN)
ERRORS_ABORT = _const(_ABORT)


# -- per-process state: user handler slots and the handler of each object -----------------
class _State:
    __slots__ = ("slots", "handlers", "defaults", "inherit")

    def __init__(self) -> None:
        self.slots = {k: 0 for k in KINDS}
        self.handlers: weakref.WeakKeyDictionary[Any, ErrhandlerImpl] = weakref.WeakKeyDictionary()
        #: the handler of an object nobody set one on, per kind (mpi4py.rc.errors)
        self.defaults: dict[str, ErrhandlerImpl] = {}
        #: a new communicator keeps its parent's handler (rc.errors == "default": mpi4py
        #: installs none, MPI's inheritance stands)
        self.inherit = False

    def default(self, kind: str) -> ErrhandlerImpl:
        return self.defaults.get(kind, _RETURN)


def _state() -> _State:
    attrs = current().attrs
    st = attrs.get("errhandlers")
    if st is None:
        st = attrs["errhandlers"] = _State()
    return st


def create_errhandler(kind: str, fn: Callable[..., Any]) -> Errhandler:
    """``<Kind>.Create_errhandler(fn)`` for kind ``Comm``, ``Win``, ``File`` or ``Session``."""
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")
    st = _state()
    if st.slots[kind] >= MAX_USER_ERRHANDLERS:
        raise RuntimeError("cannot create too many user-defined error handlers")
    st.slots[kind] += 1
    return Errhandler._wrap(ErrhandlerImpl(None, kind, fn))


def set_rc_errors(mode: str) -> None:
    """The running process's default handlers for ``mpi4py.rc.errors`` = ``mode``
    (``exception``, ``default``, ``abort`` or ``fatal``), as mpi4py sets them at import."""
    st = _state()
    st.inherit = mode == "default"
    if mode == "exception":
        st.defaults = {}
    elif mode == "default":
        st.defaults = {k: _FATAL for k in KINDS if k != "File"}
    else:
        st.defaults = {k: (_ABORT if mode == "abort" else _FATAL) for k in KINDS}


def get_errhandler(obj: Any, kind: str = "Comm") -> Errhandler:
    """A new ``Errhandler`` object for the handler of runtime object ``obj`` in this process."""
    st = _state()
    return Errhandler._wrap(st.handlers.get(obj, st.default(kind)))


def set_errhandler(obj: Any, errhandler: Errhandler, kind: str) -> None:
    if not isinstance(errhandler, Errhandler):
        raise arg_type_error("errhandler", "mpi4py.MPI.Errhandler", errhandler)
    impl = errhandler._impl
    if impl is None:
        errors.raise_error(errors.ERR_ARG, f"MPI_{kind}_set_errhandler: Null Errhandler pointer")
    if impl.kind is not None and impl.kind != kind:
        errors.raise_error(errors.ERR_ARG, f"MPI_{kind}_set_errhandler: Error handler is not a {kind} "
                                           "error handler")
    _state().handlers[obj] = impl


def copy_errhandler(src: Any, dst: Any) -> None:
    """A new object inherits its parent's handler (as MPI); mpi4py then installs the handler
    of ``rc.errors`` (the default one), except for ``rc.errors == "default"``."""
    st = _state()
    impl = st.handlers.get(src)
    if impl is None:
        return
    if st.inherit:
        st.handlers[dst] = impl
    elif impl is not st.default("Comm"):
        st.handlers[dst] = st.default("Comm")


def call_errhandler(owner: Any, obj: Any, errorcode: int, kind: str) -> None:
    """``<obj>.Call_errhandler(errorcode)``."""
    st = _state()
    impl = st.handlers.get(obj, st.default(kind))
    _invoke(impl, owner, errorcode, kind)


def _invoke(impl: ErrhandlerImpl, owner: Any, errorcode: int, kind: str) -> None:
    if impl.fn is not None:
        try:
            impl.fn(owner, errorcode)
        except BaseException as exc:  # mpi4py: errors in user handlers are unrecoverable
            import traceback
            traceback.print_exception(exc, file=sys.stderr)
            sys.stderr.write("Fatal Python error: exception in user-defined error handler function\n")
            lifecycle.abort(current(), 1)
        return
    if impl.fatal and errorcode != errors.SUCCESS:
        _fatal(errorcode, kind)


def _fatal(errorcode: int, kind: str) -> None:
    """MPICH's message for an error under ERRORS_ARE_FATAL/ERRORS_ABORT, then the abort."""
    proc = current()
    try:
        text = errors.get_error_string(errorcode)
    except errors.MPIException:
        text = f"error code {errorcode}"
    where = kind
    stack = text.split("error stack:\n", 1)
    if len(stack) == 2 and stack[1].startswith("MPI_"):
        where = stack[1].split(":", 1)[0].split("(", 1)[0][4:]
    sys.stderr.write(f"Abort({errorcode}) on node {proc.rank} (rank {proc.rank} in comm 0): "
                     f"Fatal error in internal_{where}: {text}\n")
    lifecycle.abort(proc, errorcode)


def on_call_error(args: tuple[Any, ...], exc: errors.MPIException) -> bool:
    """Hook of :func:`smpy.mpi._call.mpicall`: a call on an object with a handler failed.
    Returns True when a user handler ran (the call then returns normally, as under MPICH)."""
    if not args:
        return False
    owner = args[0]
    target = getattr(owner, "_errhandler_target", None)
    if target is None:
        return False
    try:
        obj, kind = target()
    except (errors.MPIException, NotInSimulation):
        return False
    if obj is None:
        return False
    st = _state()
    impl = st.handlers.get(obj, st.default(kind))
    if impl is _RETURN:
        return False
    _invoke(impl, type(owner)._wrap(obj) if hasattr(type(owner), "_wrap") else owner, int(exc), kind)
    return impl.fn is not None


_call.error_hook = on_call_error


class ErrhandlerMixin:
    """``Create_errhandler``/``Get_errhandler``/``Set_errhandler``/``Call_errhandler`` for a
    handle class (Win, File, Session ...). The class sets ``_errhandler_kind`` (``"Win"``,
    ``"File"``, ``"Session"``) and defines ``_errhandler_obj()`` -> its weak-referenceable
    runtime object (raising the class's MPI error when null) and the classmethod
    ``_wrap(obj)``; failing ``@mpicall`` methods then go through the handler set here."""

    __slots__ = ()
    _errhandler_kind = "Comm"

    def _errhandler_obj(self) -> Any:
        raise NotImplementedError

    @classmethod
    def Create_errhandler(cls, errhandler_fn: Callable[..., Any]) -> Errhandler:
        """Create a new error handler."""
        return create_errhandler(cls._errhandler_kind, errhandler_fn)

    def Get_errhandler(self) -> Errhandler:
        """Get the error handler."""
        return get_errhandler(self._errhandler_obj(), self._errhandler_kind)

    def Set_errhandler(self, errhandler: Errhandler) -> None:
        """Set the error handler."""
        set_errhandler(self._errhandler_obj(), errhandler, self._errhandler_kind)

    @intargs
    def Call_errhandler(self, errorcode: int) -> None:
        """Call the error handler installed."""
        obj = self._errhandler_obj()
        call_errhandler(type(self)._wrap(obj), obj, int(errorcode), self._errhandler_kind)  # type: ignore[attr-defined]

    def _errhandler_target(self) -> tuple[Any, str]:
        return self._errhandler_obj(), self._errhandler_kind


# -- dynamic error classes, codes and strings ---------------------------------------------
def Add_error_class() -> int:
    """Add an error class to the known error classes."""
    return errors.add_error_class()


def Add_error_code(errorclass: int) -> int:
    """Add an error code to an error class."""
    return errors.add_error_code(errorclass)


def Add_error_string(errorcode: int, string: str) -> None:
    """Associate an error string with an error class or error code."""
    errors.add_error_string(errorcode, string)


def Remove_error_class(errorclass: int) -> None:
    """Remove an error class from the known error classes."""
    errors.remove_error_class(errorclass)


def Remove_error_code(errorcode: int) -> None:
    """Remove an error code from the known error codes."""
    errors.remove_error_code(errorcode)


def Remove_error_string(errorcode: int) -> None:
    """Remove error string association from error class or error code."""
    errors.remove_error_string(errorcode)
