"""``MPI.Request``: handles on non-blocking operations (facade over runtime requests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smpy.kernel.actors import block_on, block_on_any
from smpy.mpi._call import mpicall, proc
from smpy.mpi.msgpickle import pickle
from smpy.mpi.status import Status
from smpy.runtime import errors, p2p
from smpy.runtime.constants import UNDEFINED


class Request:
    """A pending operation; ``REQUEST_NULL`` once completed (unless persistent)."""

    __slots__ = ("_impl", "_obj")

    def __init__(self, request: Request | None = None) -> None:
        self._impl: p2p.Request | None = None if request is None else request._impl
        self._obj = False if request is None else request._obj

    @classmethod
    def _wrap(cls, impl: p2p.Request, obj: bool = False) -> Request:
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

    def __hash__(self) -> int:
        return id(self._impl)

    def __bool__(self) -> bool:
        return self._impl is not None

    # completion -------------------------------------------------------------------------
    def _complete(self, status: Status | None, raise_error: bool = True) -> Any:
        """Fill ``status``, release the handle, raise the request's error, return the object."""
        impl = self._impl
        if impl is None:
            if status is not None:
                status._fill(-2, -1, 0, 0)
            return None
        if not impl.persistent:
            self._impl = None
        p2p.finish(proc(), impl)
        if status is not None:
            status._fill(impl.source, impl.tag, impl.error, impl.nbytes, impl.cancelled)
        if impl.error and raise_error:
            n, cap = impl.payload if isinstance(impl.payload, tuple) else (impl.nbytes, impl.nbytes)
            errors.raise_error(impl.error, f"{impl.call}: message truncated ({n} bytes received, buffer holds {cap})")
        if self._obj and impl.kind == p2p.RECV and not impl.cancelled and impl.payload is not None:
            return pickle.loads(impl.payload)
        return None

    @mpicall
    def Wait(self, status: Status | None = None) -> bool:
        if self._impl is not None:
            p2p.wait(proc(), self._impl, "MPI_Wait")
        self._complete(status)
        return True

    @mpicall
    def Test(self, status: Status | None = None) -> bool:
        if self._impl is not None and not p2p.test(proc(), self._impl):
            return False
        self._complete(status)
        return True

    @mpicall
    def wait(self, status: Status | None = None) -> Any:
        if self._impl is not None:
            p2p.wait(proc(), self._impl, "MPI_Wait")
        return self._complete(status)

    @mpicall
    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        if self._impl is not None and not p2p.test(proc(), self._impl):
            return (False, None)
        return (True, self._complete(status))

    @mpicall
    def Get_status(self, status: Status | None = None) -> bool:
        impl = self._impl
        if impl is not None and impl.state == 0:
            return False
        if status is not None and impl is not None:
            status._fill(impl.source, impl.tag, impl.error, impl.nbytes, impl.cancelled)
        return True

    def get_status(self, status: Status | None = None) -> bool:
        return self.Get_status(status)

    @mpicall
    def Cancel(self) -> None:
        if self._impl is not None:
            p2p.cancel(self._impl)

    def cancel(self) -> None:
        self.Cancel()

    @mpicall
    def Free(self) -> None:
        self._impl = None

    def free(self) -> None:
        self.Free()

    # multiple completion ----------------------------------------------------------------
    @classmethod
    @mpicall
    def Waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        for r in requests:
            if r._impl is not None and r._impl.state == 0:
                block_on(r._impl)
        _complete_all(requests, statuses)
        return True

    @classmethod
    @mpicall
    def waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[Any]:
        for r in requests:
            if r._impl is not None and r._impl.state == 0:
                block_on(r._impl)
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
    def Waitsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        active = [r for r in requests if r._impl is not None]
        if not active:
            return None
        if not any(r._impl.state != 0 for r in active):
            block_on_any([r._impl for r in active])
        return _collect_done(requests, statuses)[0]

    @classmethod
    @mpicall
    def waitsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[list[int] | None, list | None]:
        active = [r for r in requests if r._impl is not None]
        if not active:
            return None, None
        if not any(r._impl.state != 0 for r in active):
            block_on_any([r._impl for r in active])
        return _collect_done(requests, statuses)

    @classmethod
    @mpicall
    def Testsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:
        return _testsome(requests, statuses)[0]

    @classmethod
    @mpicall
    def testsome(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[list[int] | None, list | None]:
        return _testsome(requests, statuses)

    def __repr__(self) -> str:
        return "<Request NULL>" if self._impl is None else f"<Request {self._impl.describe()}>"


def _status_at(statuses: list[Status] | None, i: int) -> Status | None:
    if statuses is None:
        return None
    while len(statuses) <= i:
        statuses.append(Status())
    return statuses[i]


def _complete_all(requests: Sequence[Request], statuses: list[Status] | None) -> list[Any]:
    """Complete every request; if any failed, raise ERR_IN_STATUS (errors are in the statuses)."""
    failed = [i for i, r in enumerate(requests) if r._impl is not None and r._impl.error]
    objs = [r._complete(_status_at(statuses, i), raise_error=False) for i, r in enumerate(requests)]
    if failed:
        errors.raise_error(errors.ERR_IN_STATUS, f"request(s) {failed} failed; see their statuses")
    return objs


def _testall(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[bool, list | None]:
    pr = proc()
    pending = [r._impl for r in requests if r._impl is not None and r._impl.state == 0]
    if pending and not p2p.test(pr, pending[0]) or any(x.state == 0 for x in pending):
        return False, None
    return True, _complete_all(requests, statuses)


def _waitany(requests: Sequence[Request], status: Status | None) -> tuple[int, Any]:
    idx = [i for i, r in enumerate(requests) if r._impl is not None]
    if not idx:
        if status is not None:
            status._fill(-2, -1, 0, 0)
        return UNDEFINED, None
    k = block_on_any([requests[i]._impl for i in idx])
    i = idx[k]
    return i, requests[i]._complete(status)


def _testany(requests: Sequence[Request], status: Status | None) -> tuple[int, bool, Any]:
    idx = [i for i, r in enumerate(requests) if r._impl is not None]
    if not idx:
        return UNDEFINED, True, None
    pr = proc()
    for i in idx:
        if requests[i]._impl.state != 0:
            pr.test_streak = 0
            return i, True, requests[i]._complete(status)
    if p2p.test(pr, requests[idx[0]]._impl):
        return idx[0], True, requests[idx[0]]._complete(status)
    for i in idx:
        if requests[i]._impl.state != 0:
            return i, True, requests[i]._complete(status)
    return UNDEFINED, False, None


def _collect_done(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[list[int], list]:
    done = [i for i, r in enumerate(requests) if r._impl is not None and r._impl.state != 0]
    objs = [requests[i]._complete(_status_at(statuses, n)) for n, i in enumerate(done)]
    return done, objs


def _testsome(requests: Sequence[Request], statuses: list[Status] | None) -> tuple[list[int] | None, list | None]:
    active = [r for r in requests if r._impl is not None]
    if not active:
        return None, None
    if not any(r._impl.state != 0 for r in active):
        p2p.test(proc(), active[0]._impl)
    return _collect_done(requests, statuses)


REQUEST_NULL = Request()
