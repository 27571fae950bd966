"""``MPI.Request``, ``MPI.Prequest``, ``MPI.Grequest``: handles on non-blocking operations.

A facade handle wraps a runtime request (``_impl``; None is ``REQUEST_NULL``). Completing
a request through Wait/Test releases the handle (it becomes null), except for persistent
requests, which go back to *inactive* (:mod:`smpy.runtime.prequest`) until freed.
Inactive persistent requests count as null in Waitany/Testany/Waitsome/Testsome.

Multiple-completion calls follow mpi4py's handling of ``statuses``: a list shorter than the
number of outputs is extended with new :class:`Status` objects, then the first
``min(len(requests), len(statuses))`` entries are written.

Generalized requests run the program's callbacks like mpi4py does: ``query_fn(status,
*args, **kwargs)`` on completion, then ``free_fn(*args, **kwargs)``; ``cancel_fn(completed,
...)`` on Cancel. An exception in a callback is printed (with its traceback) and surfaces as
an ``MPI.Exception`` of its error class (``ERR_OTHER`` for non-MPI exceptions).
"""

from __future__ import annotations

import itertools
import sys
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from smpy.mpi._call import mpicall, proc
from smpy.mpi.msgpickle import pickle
from smpy.mpi.objmodel import copy_arg
from smpy.mpi.status import Status
from smpy.runtime import errors, p2p
from smpy.runtime.constants import UNDEFINED
from smpy.runtime.prequest import GeneralizedRequest, PartitionedRequest, PersistentRequest

__all__ = ["Request", "Prequest", "Grequest", "REQUEST_NULL"]

#: MPICH's MPI_REQUEST_NULL handle value
_NULL_HANDLE = 0x2C000000
_handle_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_by_handle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_next_handle = itertools.count(0x2C000001)


def _live(impl: p2p.Request | None) -> bool:
    """Active: not null and not an inactive persistent request."""
    return impl is not None and (not impl.persistent or impl.active)  # type: ignore[attr-defined]


class Request:
    """A pending operation; ``REQUEST_NULL`` once completed (unless persistent)."""

    __slots__ = ("_impl", "_obj", "__weakref__")

    def __new__(cls, request: Request | None = None) -> Request:
        # subclasses call super().__new__(cls, request), as with mpi4py's extension types
        return object.__new__(cls)

    def __init__(self, request: Request | None = None) -> None:
        copy_arg(request, Request, "request")
        impl = None if request is None else request._impl
        if impl is not None and not _fits(type(self), impl):
            raise TypeError(f"Cannot convert {_qual(type(request))} to {_qual(type(self))}")
        self._impl: p2p.Request | None = impl
        self._obj = False if request is None else request._obj

    @classmethod
    def _wrap(cls, impl: p2p.Request | None, obj: bool = False) -> Request:
        if cls is Request and impl is not None:
            if isinstance(impl, PersistentRequest):
                cls = Prequest
            elif isinstance(impl, GeneralizedRequest):
                cls = Grequest
        r = cls.__new__(cls)
        r._impl = impl
        r._obj = obj
        return r

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self._impl is other._impl

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # unhashable, like mpi4py's

    def __bool__(self) -> bool:
        return self._impl is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        if self._impl is None:  # a copy of the predefined handle
            return (type(self), (REQUEST_NULL,))
        raise ValueError(f"cannot serialize 'mpi4py.MPI.{type(self).__name__}' instance")

    # handles --------------------------------------------------------------------------------
    @property
    def handle(self) -> int:
        impl = self._impl
        if impl is None:
            return _NULL_HANDLE
        h = _handle_of.get(impl)
        if h is None:
            h = next(_next_handle)
            _handle_of[impl] = h
            _by_handle[h] = impl
        return h

    @classmethod
    def fromhandle(cls, handle: int) -> Request:
        impl = None if handle == _NULL_HANDLE else _by_handle.get(int(handle))
        if impl is None and handle != _NULL_HANDLE:
            errors.raise_error(errors.ERR_REQUEST, f"invalid request handle {handle:#x}")
        r = cls.__new__(cls)
        r._impl = impl
        r._obj = False
        return r

    def toint(self) -> int:
        return self.handle

    @classmethod
    def fromint(cls, arg: int, /) -> Request:
        return cls.fromhandle(arg)

    def py2f(self) -> int:
        return self.handle

    @classmethod
    def f2py(cls, arg: int) -> Request:
        return cls.fromhandle(arg)

    # completion -------------------------------------------------------------------------
    def _release(self, impl: p2p.Request) -> None:
        if impl.persistent:
            impl.release()  # type: ignore[attr-defined]
        else:
            self._impl = None

    def _complete(self, status: Status | None, raise_error: bool = True) -> Any:
        """Fill ``status``, release the handle, raise the request's error, return the object."""
        impl = self._impl
        if impl is None:
            if status is not None:
                status._fill(-2, -1, 0, 0)
            return None
        if impl.kind == p2p.NULL_KIND and isinstance(impl, GeneralizedRequest):
            return self._complete_greq(impl, status)
        if impl.persistent and not impl.active:  # type: ignore[attr-defined]
            if status is not None:
                status._fill(-2, -1, 0, 0)
            return None
        p2p.finish(proc(), impl.inner if impl.persistent else impl)  # type: ignore[attr-defined]
        if status is not None:
            _store(impl, status)
        error, payload, kind, cancelled = impl.error, impl.payload, impl.kind, impl.cancelled
        self._release(impl)
        if error and raise_error:
            if isinstance(payload, tuple):
                n, cap = payload
                errors.raise_error(error, f"{impl.call}: message truncated ({n} bytes received, buffer holds {cap})")
            errors.raise_error(error, payload if isinstance(payload, str) else f"{impl.call}: operation failed")
        if self._obj and kind == p2p.RECV and not cancelled and payload is not None:
            return pickle.loads(payload) if payload else None
        return None

    def _complete_greq(self, impl: GeneralizedRequest, status: Status | None) -> Any:
        query, free, cancel_fn, args, kwargs = impl.fns
        st = Status()
        first: BaseException | None = None
        if query is not None:
            try:
                query(st, *args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - reported as an MPI error, as mpi4py does
                first = exc
            if cancel_fn is None:
                st.Set_cancelled(False)
        if free is not None:
            try:
                free(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001
                first = first or exc
        self._impl = None
        if status is not None:
            status._mem[:] = st._mem
        if first is not None:
            _raise_callback_error(first, "MPI_Wait")
        result = impl.payload
        impl.payload = None
        return result

    @mpicall
    def Wait(self, status: Status | None = None) -> bool:
        impl = self._impl
        if impl is not None and impl.state == 0:
            p2p.wait(proc(), impl, "MPI_Wait")
        self._complete(status)
        return True

    @mpicall
    def Test(self, status: Status | None = None) -> bool:
        impl = self._impl
        if impl is not None and not p2p.test(proc(), impl, record=True):
            return False
        self._complete(status)
        return True

    @mpicall
    def wait(self, status: Status | None = None) -> Any:
        impl = self._impl
        if impl is not None and impl.state == 0:
            p2p.wait(proc(), impl, "MPI_Wait")
        return self._complete(status)

    @mpicall
    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        impl = self._impl
        if impl is not None and not p2p.test(proc(), impl, record=True):
            return (False, None)
        return (True, self._complete(status))

    @mpicall
    def Get_status(self, status: Status | None = None) -> bool:
        impl = self._impl
        if impl is not None and impl.state == 0 and not p2p.test(proc(), impl):  # polling costs time
            return False
        _peek(impl, status)
        return True

    def get_status(self, status: Status | None = None) -> bool:
        return self.Get_status(status)

    @mpicall
    def Cancel(self) -> None:
        impl = self._impl
        if impl is None:
            errors.raise_error(errors.ERR_REQUEST, "MPI_Cancel(request=MPI_REQUEST_NULL) failed\n"
                               "Null MPI_Request")
        if isinstance(impl, GeneralizedRequest):
            cancel_fn, args, kwargs = impl.fns[2], impl.fns[3], impl.fns[4]
            if cancel_fn is not None:
                try:
                    cancel_fn(impl.state != 0, *args, **kwargs)
                except BaseException as exc:  # noqa: BLE001
                    _raise_callback_error(exc, "MPI_Cancel")
        elif impl.persistent:
            impl.cancel_op()  # type: ignore[attr-defined]
        else:
            p2p.cancel(impl)

    def cancel(self) -> None:
        self.Cancel()

    @mpicall
    def Free(self) -> None:
        impl = self._impl
        if impl is None:
            errors.raise_error(errors.ERR_REQUEST, "MPI_Request_free: invalid request (MPI_REQUEST_NULL)")
        if isinstance(impl, GeneralizedRequest) and impl.state != 0:
            free = impl.fns[1]
            if free is not None:
                try:
                    free(*impl.fns[3], **impl.fns[4])
                except BaseException as exc:  # noqa: BLE001
                    self._impl = None
                    _raise_callback_error(exc, "MPI_Request_free")
        self._impl = None

    def free(self) -> None:
        if self._impl is not None:
            self.Free()

    # multiple completion ----------------------------------------------------------------
    @classmethod
    @mpicall
    def Waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        _block_all(requests)
        p2p.ti_waitall(proc(), [r._impl for r in requests])
        _complete_all(requests, statuses)
        return True

    @classmethod
    @mpicall
    def waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[Any]:
        _block_all(requests)
        p2p.ti_waitall(proc(), [r._impl for r in requests])
        return _complete_all(requests, statuses)

    @classmethod
    @mpicall
    def Testall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        return _testall(requests, statuses)[0]

    @classmethod
    @mpicall
    def testall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[bool, list | None]:
        return _testall(requests, statuses)

    @classmethod
    @mpicall
    def Get_status_all(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        pending = [r._impl for r in requests if r._impl is not None and r._impl.state == 0]
        if pending and not p2p.test(proc(), pending[0]) or any(x.state == 0 for x in pending):
            return False
        _out_statuses(statuses, [_peek(r._impl, Status()) for r in requests], len(requests))
        return True

    @classmethod
    def get_status_all(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        return cls.Get_status_all(requests, statuses)

    @classmethod
    @mpicall
    def Waitany(cls, requests: Sequence[Request], status: Status | None = None) -> int:
        return _waitany(requests, status)[0]

    @classmethod
    @mpicall
    def waitany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, Any]:
        return _waitany(requests, status)

    @classmethod
    @mpicall
    def Testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:
        i, flag, _ = _testany(requests, status)
        return i, flag

    @classmethod
    @mpicall
    def testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool, Any]:
        return _testany(requests, status)

    @classmethod
    @mpicall
    def Get_status_any(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:
        idx = [i for i, r in enumerate(requests) if _live(r._impl)]
        if not idx:
            if status is not None:
                status._fill(-2, -1, 0, 0)
            return UNDEFINED, True
        if all(requests[i]._impl.state == 0 for i in idx):  # type: ignore[union-attr]
            p2p.test(proc(), requests[idx[0]]._impl)  # type: ignore[arg-type]
        for i in idx:
            if requests[i]._impl.state != 0:  # type: ignore[union-attr]
                _peek(requests[i]._impl, status)
                return i, True
        return UNDEFINED, False

    @classmethod
    def get_status_any(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:
        return cls.Get_status_any(requests, status)

    @classmethod
    @mpicall
    def Waitsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        return _waitsome(requests, statuses)[0]

    @classmethod
    @mpicall
    def waitsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[list[int] | None, list | None]:
        return _waitsome(requests, statuses)

    @classmethod
    @mpicall
    def Testsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        return _testsome(requests, statuses)[0]

    @classmethod
    @mpicall
    def testsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[list[int] | None, list | None]:
        return _testsome(requests, statuses)

    @classmethod
    @mpicall
    def Get_status_some(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        active = [i for i, r in enumerate(requests) if _live(r._impl)]
        if not active:
            return None
        if all(requests[i]._impl.state == 0 for i in active):  # type: ignore[union-attr]
            p2p.test(proc(), requests[active[0]]._impl)  # type: ignore[arg-type]
        done = [i for i in active if requests[i]._impl.state != 0]  # type: ignore[union-attr]
        _out_statuses(statuses, [_peek(requests[i]._impl, Status()) for i in done], len(requests))
        return done

    @classmethod
    def get_status_some(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        return cls.Get_status_some(requests, statuses)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{type(self).__name__} object at {id(self):#x}>"


class Prequest(Request):
    """A persistent request (``*_init``): Start, complete, Start again..., Free."""

    __slots__ = ()

    def _p(self, call: str) -> PersistentRequest:
        impl = self._impl
        if impl is None:
            errors.raise_error(errors.ERR_REQUEST, f"{call}: invalid request (MPI_REQUEST_NULL)")
        if not isinstance(impl, PersistentRequest):
            errors.raise_error(errors.ERR_REQUEST, f"{call}: not a persistent request")
        return impl

    @mpicall
    def Start(self) -> None:
        self._p("MPI_Start").start("MPI_Start")

    @classmethod
    @mpicall
    def Startall(cls, requests: list[Prequest]) -> None:
        impls = [r._p("MPI_Startall") for r in requests]
        for impl in impls:
            impl.start("MPI_Startall")

    def _part(self, call: str) -> PartitionedRequest:
        impl = self._p(call)
        if not isinstance(impl, PartitionedRequest):
            errors.raise_error(errors.ERR_REQUEST, f"{call}: not a partitioned request")
        return impl

    @mpicall
    def Pready(self, partition: int) -> None:
        self._part("MPI_Pready").pready([int(partition)], "MPI_Pready")

    @mpicall
    def Pready_range(self, partition_low: int, partition_high: int) -> None:
        self._part("MPI_Pready_range").pready(list(range(int(partition_low), int(partition_high) + 1)),
                                              "MPI_Pready_range")

    @mpicall
    def Pready_list(self, partitions: Sequence[int]) -> None:
        self._part("MPI_Pready_list").pready([int(p) for p in partitions], "MPI_Pready_list")

    @mpicall
    def Parrived(self, partition: int) -> bool:
        impl = self._part("MPI_Parrived")
        if impl.arrived(int(partition)):
            return True
        inner = impl.inner
        pr = proc()
        if inner is not None:
            return p2p.test(pr, inner) or impl.arrived(int(partition))
        p2p.test(pr, impl)  # not posted yet: polling still costs time
        return False


GrequestFn = Callable[..., None] | None


class Grequest(Request):
    """A generalized request: the program completes it with :meth:`Complete`."""

    __slots__ = ()

    @classmethod
    @mpicall
    def Start(cls, query_fn: GrequestFn = None, free_fn: GrequestFn = None, cancel_fn: GrequestFn = None,
              args: tuple[Any] | None = None, kwargs: dict[str, Any] | None = None) -> Grequest:
        fns = (query_fn, free_fn, cancel_fn, tuple(args) if args is not None else (),
               dict(kwargs) if kwargs is not None else {})
        return cls._wrap(GeneralizedRequest(proc(), fns))  # type: ignore[return-value]

    @mpicall
    def Complete(self) -> None:
        impl = self._impl
        if not isinstance(impl, GeneralizedRequest):
            errors.raise_error(errors.ERR_REQUEST, "MPI_Grequest_complete: invalid request")
        impl.complete()

    def complete(self, obj: Any = None) -> None:
        impl = self._impl
        if isinstance(impl, GeneralizedRequest):
            impl.payload = obj
        self.Complete()


def _qual(cls: type) -> str:
    return f"mpi4py.MPI.{cls.__name__}"


def _fits(cls: type, impl: p2p.Request) -> bool:
    if cls is Prequest:
        return isinstance(impl, PersistentRequest)
    if cls is Grequest:
        return isinstance(impl, GeneralizedRequest)
    return True


def _raise_callback_error(exc: BaseException, call: str) -> None:
    """mpi4py prints a callback's exception and turns it into an MPI error."""
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    cls = exc.Get_error_class() if isinstance(exc, errors.MPIException) else errors.ERR_OTHER
    errors.raise_error(cls or errors.ERR_OTHER, f"{call}: error in a generalized request callback: {exc!r}")


def _peek(impl: p2p.Request | None, status: Status | None) -> Status | None:
    """Status of a completed request without releasing it (MPI_Request_get_status)."""
    if status is None:
        return None
    if impl is None or (impl.persistent and not impl.active):  # type: ignore[attr-defined]
        status._fill(-2, -1, 0, 0)
    elif isinstance(impl, GeneralizedRequest):
        query = impl.fns[0]
        status._fill(-2, -1, 0, 0)
        if query is not None:
            try:
                query(status, *impl.fns[3], **impl.fns[4])
            except BaseException as exc:  # noqa: BLE001
                _raise_callback_error(exc, "MPI_Request_get_status")
    else:
        _store(impl, status)
    return status


def _store(impl: p2p.Request, status: Status) -> None:
    """Write a completed request's status as MPICH does: receives set source, tag, count
    (and the error field only on error); sends set only count 0 and the cancelled flag;
    collective requests give source 0, tag 0, count 0."""
    kind = impl.kind
    m = status._mem
    fields = getattr(impl, "status_fields", None)
    if fields is not None:  # requests that say what their status holds (file I/O)
        source, tag, error, nbytes = fields()
        m[2], m[3] = source, tag
        if error:
            m[4] = error
        status._set_count(nbytes, False)
        return
    if kind == p2p.RECV:
        cancelled = impl.cancelled
        m[2] = 0 if cancelled else impl.source
        m[3] = 0 if cancelled else impl.tag
        if impl.error:
            m[4] = impl.error
        status._set_count(impl.nbytes, impl.cancelled)
    elif kind == p2p.SEND:
        if impl.error:
            m[4] = impl.error
        status._set_count(0, impl.cancelled)
    else:
        m[2] = 0
        m[3] = 0
        if impl.error:
            m[4] = impl.error
        status._set_count(0, impl.cancelled)


def _out_statuses(statuses: list[Status] | None, outs: list[Status | None], nreq: int) -> None:
    """Write output statuses as mpi4py does (extend a short list, fill the first entries)."""
    if statuses is None:
        return
    ns = len(statuses)
    if len(outs) > ns and isinstance(statuses, list):
        statuses += [Status() for _ in range(ns, len(outs))]
        ns = len(outs)
    for i in range(min(nreq, ns)):
        st = outs[i] if i < len(outs) else None
        dst = statuses[i]
        if st is None:
            dst._fill(-2, -1, 0, 0)
        else:
            dst._mem[:] = st._mem


def _block_all(requests: Sequence[Request]) -> None:
    p2p.block_all([r._impl for r in requests])


def _complete_all(requests: Sequence[Request], statuses: list[Status] | None) -> list[Any]:
    """Complete every request; if any failed, raise ERR_IN_STATUS (errors are in the statuses)."""
    failed = [i for i, r in enumerate(requests) if r._impl is not None and r._impl.error]
    outs = [Status() for _ in requests] if statuses is not None else [None] * len(requests)
    objs = [r._complete(outs[i], raise_error=False) for i, r in enumerate(requests)]
    _out_statuses(statuses, outs, len(requests))
    if failed:
        errors.raise_error(errors.ERR_IN_STATUS, f"request(s) {failed} failed; see their statuses")
    return objs


def _testall(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[bool, list | None]:
    active = [r._impl for r in requests if _live(r._impl)]
    p2p.poll_each(proc(), active)  # type: ignore[arg-type]
    if any(x.state == 0 for x in active):  # type: ignore[union-attr]
        return False, None
    return True, _complete_all(requests, statuses)


def _waitany(requests: Sequence[Request], status: Status | None) -> tuple[int, Any]:
    idx = [i for i, r in enumerate(requests) if _live(r._impl)]
    if not idx:
        if status is not None:
            status._fill(-2, -1, 0, 0)
        return UNDEFINED, None
    for i in idx:
        if requests[i]._impl.state != 0:  # type: ignore[union-attr]
            return i, requests[i]._complete(status)
    k = p2p.waitany(proc(), [requests[i]._impl for i in idx])  # type: ignore[misc]
    i = idx[k]
    return i, requests[i]._complete(status)


def _testany(requests: Sequence[Request], status: Status | None) -> tuple[int, bool, Any]:
    idx = [i for i, r in enumerate(requests) if _live(r._impl)]
    if not idx:
        if status is not None:
            status._fill(-2, -1, 0, 0)
        return UNDEFINED, True, None
    if not p2p.poll_any(proc(), [requests[i]._impl for i in idx]):  # type: ignore[misc]
        return UNDEFINED, False, None
    for i in idx:
        if requests[i]._impl.state != 0:  # type: ignore[union-attr]
            return i, True, requests[i]._complete(status)
    return UNDEFINED, False, None  # not reached: poll_any saw one complete


def _collect_done(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[list[int], list]:
    done = [i for i, r in enumerate(requests) if _live(r._impl) and r._impl.state != 0]  # type: ignore[union-attr]
    outs = [Status() for _ in done] if statuses is not None else [None] * len(done)
    objs = [requests[i]._complete(outs[n]) for n, i in enumerate(done)]
    _out_statuses(statuses, outs, len(requests))
    return done, objs


def _waitsome(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[list[int] | None, list | None]:
    active = [r._impl for r in requests if _live(r._impl)]
    if not active:
        return None, None
    if not any(x.state != 0 for x in active):  # type: ignore[union-attr]
        p2p.waitany(proc(), active)  # type: ignore[arg-type]
    return _collect_done(requests, statuses)


def _testsome(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[list[int] | None, list | None]:
    active = [r._impl for r in requests if _live(r._impl)]
    if not active:
        return None, None
    p2p.poll_each(proc(), active)  # type: ignore[arg-type]
    return _collect_done(requests, statuses)


REQUEST_NULL = Request()
