"""Blocking system calls of ranks made cooperative, as gevent's monkey patching makes them.

Every rank (and every thread a rank starts, :mod:`smpy.shim.green`) is a greenlet of the one
OS thread that runs the emulation: a rank blocked in a real ``accept``, ``recv``, ``select``
or ``sem_wait`` would hold every other rank, including the one that would make the call
return (mpi4py's ``TestDPM.testJoin``: one rank in ``accept()``, the other about to
``connect()``; ``multiprocessing.Pool``, whose handler threads wait in ``select`` and whose
shutdown waits on a semaphore its task thread releases). While a run is in progress, and
inside a rank only (elsewhere, and in a process forked by a rank, the real calls run), the
calls below try the operation without blocking and, when it would block, wait for the OS in
simulated time (:class:`smpy.kernel.oswait.FdWait`/``CheckWait``) so the other ranks run:

* ``select.select``, ``select.poll`` objects, and the ``select`` method of every
  ``selectors`` class (``DefaultSelector``, what asyncio and ``multiprocessing.connection.wait``
  use);
* ``socket.socket``: ``accept``, ``connect``/``connect_ex``, ``recv*``, ``send*``,
  ``sendall`` of blocking sockets and sockets with a timeout (the timeout is simulated time;
  non-blocking sockets are untouched). ``ssl`` sockets are not covered;
* ``os.read``/``os.write`` on blocking descriptors that are not ready (pipes, ttys, sockets),
  and ``multiprocessing`` connections (``Pipe``, ``Queue``, ``Pool``'s queues);
* ``multiprocessing`` locks and semaphores (``acquire`` of a ``SemLock``);
* ``os.waitpid`` without ``WNOHANG`` (``subprocess.wait``, ``Process.join``);
* ``queue.SimpleQueue`` is Python's implementation (over threading's locks, which
  :mod:`smpy.shim.green` makes simulated) instead of the C one, whose ``get`` blocks the
  thread (``multiprocessing.Pool``'s task queue).

Time: a wait for the OS is idle time of the rank, not computation: its pending burst is
simulated before it waits (as before an MPI call) and its CPU timer restarts when it
resumes. See :mod:`smpy.kernel.oswait` for when such a wait completes in simulated time.
"""

from __future__ import annotations

import _socket
import errno
import os
import select
import selectors
import socket
import stat
from collections.abc import Callable
from typing import Any

from smpy.kernel.activity import FAILED, Activity, Sleep, Trigger
from smpy.kernel.actors import block_on, block_on_any, current_actor
from smpy.kernel.oswait import POLLIN, POLLOUT, CheckWait, FdWait, real_poll
from smpy.support.afterimport import Patches, when_imported

_real_select = select.select
#: os.read/os.write as found at install (other shims' file timing, smpy.shim.fileio, stays)
_next = {"read": os.read, "write": os.write}
_real_waitpid = os.waitpid
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)


def _rank_actor() -> Any:
    a = current_actor()
    if a is None or getattr(a.data, "world", None) is None:
        return None
    return a


def _ready(fd: int, events: int) -> bool:
    p = real_poll()
    p.register(fd, events)
    return bool(p.poll(0))


def wait_os(actor: Any, make: Callable[[], Activity], timeout_s: float | None, label: str) -> bool:
    """Block ``actor`` (the running rank or rank thread) until the activity ``make()`` builds
    completes, or ``timeout_s`` simulated seconds pass (False then). The rank's pending
    computation is simulated first, and its CPU timer restarts afterwards."""
    proc = actor.data
    timing = getattr(proc.world, "timing", None)
    timed = (timing is not None and timing.measure and proc.depth == 0 and not actor.engine.stopping
             and proc.bench.sampling is None)
    if timed:
        timing.flush(proc)
    w = make()
    try:
        if timeout_s is None:
            block_on(w, label)
        else:
            s = Sleep(actor.engine, max(timeout_s, 0.0))
            block_on_any([w, s], label)
            s.cancel()
            if w.state == FAILED and w.exception is not None:  # (block_on raises it itself)
                raise w.exception
        return w.done
    finally:
        w.cancel()
        if timed:
            timing.restart(proc)


def wait_fds(actor: Any, fds: list[tuple[int, int]], timeout_s: float | None, label: str) -> bool:
    """Wait until one of ``fds`` (``(fd, poll events)``) is ready; False on timeout. With no
    descriptor and no timeout this waits forever (as ``select([], [], [])``)."""
    engine = actor.engine
    if not fds:
        return wait_os(actor, lambda: Trigger(engine, label), timeout_s, label)
    return wait_os(actor, lambda: FdWait(engine, fds, label), timeout_s, label)


def empty_poll(actor: Any) -> None:
    """A poll that found nothing costs ``smpi/wtime`` of simulated time (what SMPI injects per
    clock read), so that a loop polling until a deadline of ``time.monotonic()`` ends
    (``multiprocessing.connection.wait(timeout=0)`` loops while ``deadline - monotonic()`` is
    not negative) and the other ranks run meanwhile."""
    cost = getattr(actor.data.world, "wtime_cost", 0.0) or 1e-9
    wait_os(actor, lambda: Sleep(actor.engine, cost), None, "a non-blocking poll")


def _deadline(actor: Any, timeout: float | None) -> float | None:
    return None if timeout is None else actor.engine.now + max(float(timeout), 0.0)


def _left(actor: Any, deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - actor.engine.now, 0.0)


def _fileno(obj: Any) -> int:
    return obj if isinstance(obj, int) else obj.fileno()


# -- select ---------------------------------------------------------------------------------
def _select(rlist: Any, wlist: Any, xlist: Any, timeout: float | None = None) -> Any:
    actor = _rank_actor()
    if actor is None:
        return _real_select(rlist, wlist, xlist, timeout)
    if timeout is not None and timeout <= 0:
        res = _real_select(rlist, wlist, xlist, 0)
        if not any(res):
            empty_poll(actor)
        return res
    deadline = _deadline(actor, timeout)
    fds = [(_fileno(f), POLLIN) for f in rlist] + [(_fileno(f), POLLOUT) for f in wlist]
    fds += [(_fileno(f), select.POLLPRI) for f in xlist]
    while True:
        res = _real_select(rlist, wlist, xlist, 0)
        if any(res):
            return res
        if not wait_fds(actor, fds, _left(actor, deadline), "select.select()"):
            return [], [], []


class GreenPoll:
    """``select.poll()`` whose ``poll`` waits cooperatively inside a rank."""

    __slots__ = ("_real", "_fds")

    def __init__(self) -> None:
        self._real = real_poll()
        self._fds: dict[int, int] = {}

    def register(self, fd: Any, eventmask: int = POLLIN | select.POLLPRI | POLLOUT) -> None:
        fd = _fileno(fd)
        self._real.register(fd, eventmask)
        self._fds[fd] = eventmask

    def modify(self, fd: Any, eventmask: int) -> None:
        fd = _fileno(fd)
        self._real.modify(fd, eventmask)
        self._fds[fd] = eventmask

    def unregister(self, fd: Any) -> None:
        fd = _fileno(fd)
        self._real.unregister(fd)
        del self._fds[fd]

    def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
        actor = _rank_actor()
        if actor is None:
            return self._real.poll(timeout)
        if timeout is not None and 0 <= timeout < 1:
            res = self._real.poll(0)
            if not res:
                empty_poll(actor)
            return res
        deadline = None if timeout is None or timeout < 0 else actor.engine.now + timeout / 1000.0
        while True:
            res = self._real.poll(0)
            if res:
                return res
            if not wait_fds(actor, list(self._fds.items()), _left(actor, deadline), "select.poll()"):
                return []


def _selector_events(sel: selectors.BaseSelector) -> list[tuple[int, int]]:
    out = []
    for key in sel.get_map().values():
        ev = (POLLIN if key.events & selectors.EVENT_READ else 0) | (POLLOUT if key.events & selectors.EVENT_WRITE else 0)
        out.append((key.fd, ev))
    return out


def _make_selector_select(real: Callable[..., Any]) -> Callable[..., Any]:
    def select_(self: selectors.BaseSelector, timeout: float | None = None) -> Any:
        actor = _rank_actor()
        if actor is None:
            return real(self, timeout)
        if timeout is not None and timeout <= 0:
            res = real(self, 0)
            if not res:
                empty_poll(actor)
            return res
        deadline = _deadline(actor, timeout)
        while True:
            res = real(self, 0)
            if res:
                return res
            if not wait_fds(actor, _selector_events(self), _left(actor, deadline),
                            f"{type(self).__name__}.select()"):
                return []
    select_.__doc__ = real.__doc__
    return select_


# -- sockets --------------------------------------------------------------------------------
def _make_sock_op(name: str, events: int) -> Callable[..., Any]:
    real = getattr(_socket.socket, name)
    what = "accept" if name == "_accept" else name

    def op(self: socket.socket, *args: Any) -> Any:
        t = self.gettimeout()
        actor = _rank_actor() if t != 0.0 else None
        if actor is None:
            return real(self, *args)
        deadline = _deadline(actor, t)
        while True:
            self.settimeout(0.0)
            try:
                return real(self, *args)
            except (BlockingIOError, InterruptedError):
                pass
            finally:
                self.settimeout(t)
            fd = self.fileno()
            if not wait_fds(actor, [(fd, events)], _left(actor, deadline), f"socket.{what}() on fd {fd}"):
                raise TimeoutError("timed out")
    op.__name__ = op.__qualname__ = name
    op.__doc__ = real.__doc__
    return op


def _sendall(self: socket.socket, data: Any, flags: int = 0) -> None:
    t = self.gettimeout()
    actor = _rank_actor() if t != 0.0 else None
    if actor is None:
        return _socket.socket.sendall(self, data, flags)
    send = _make_sock_op("send", POLLOUT)
    view = memoryview(data).cast("B")
    deadline = _deadline(actor, t)
    sent = 0
    while sent < len(view):
        if deadline is not None:
            self.settimeout(_left(actor, deadline))
        try:
            sent += send(self, view[sent:], flags)
        finally:
            self.settimeout(t)
    return None


def _connect_ex(self: socket.socket, address: Any) -> int:
    t = self.gettimeout()
    actor = _rank_actor() if t != 0.0 else None
    if actor is None:
        return _socket.socket.connect_ex(self, address)
    self.settimeout(0.0)
    try:
        err = _socket.socket.connect_ex(self, address)
    finally:
        self.settimeout(t)
    if err not in (errno.EINPROGRESS, errno.EAGAIN):
        return err
    fd = self.fileno()
    if not wait_fds(actor, [(fd, POLLOUT)], t, f"socket.connect() on fd {fd}"):
        return errno.EWOULDBLOCK  # what CPython's connect_ex reports on a timeout
    return self.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)


def _connect(self: socket.socket, address: Any) -> None:
    if _rank_actor() is None or self.gettimeout() == 0.0:
        return _socket.socket.connect(self, address)
    err = _connect_ex(self, address)
    if err == errno.EWOULDBLOCK and self.gettimeout() is not None:
        raise TimeoutError("timed out")
    if err:
        raise OSError(err, os.strerror(err))
    return None


# -- file descriptors ------------------------------------------------------------------------
def _os_read(fd: int, n: int) -> bytes:
    actor = _rank_actor()
    if actor is not None and not _ready(fd, POLLIN) and os.get_blocking(fd):
        wait_fds(actor, [(fd, POLLIN)], None, f"os.read() on fd {fd}")
    return _next["read"](fd, n)


def _os_write(fd: int, data: Any) -> int:
    actor = _rank_actor()
    write = _next["write"]
    if actor is None or not os.get_blocking(fd):
        return write(fd, data)
    view = memoryview(data).cast("B")
    if _ready(fd, POLLOUT) and (len(view) <= _PIPE_BUF or stat.S_ISREG(os.fstat(fd).st_mode)):
        return write(fd, view)
    done = 0
    while done < len(view):
        if not _ready(fd, POLLOUT):
            wait_fds(actor, [(fd, POLLOUT)], None, f"os.write() on fd {fd}")
        done += write(fd, view[done:done + _PIPE_BUF])
    return done


def _conn_recv(self: Any, size: int, read: Any = None) -> Any:
    import io
    buf = io.BytesIO()
    handle = self._handle
    remaining = size
    while remaining > 0:
        chunk = _os_read(handle, remaining)
        n = len(chunk)
        if n == 0:
            if remaining == size:
                raise EOFError
            raise OSError("got end of file during message")
        buf.write(chunk)
        remaining -= n
    return buf


def _conn_send(self: Any, buf: Any, write: Any = None) -> None:
    _os_write(self._handle, buf)


def _waitpid(pid: int, options: int) -> tuple[int, int]:
    actor = _rank_actor()
    if actor is None or options & os.WNOHANG:
        return _real_waitpid(pid, options)
    got: list[tuple[int, int]] = []

    def check() -> bool:
        r = _real_waitpid(pid, options | os.WNOHANG)
        if r != (0, 0):
            got.append(r)
            return True
        return False

    if check():
        return got[0]
    engine = actor.engine
    wait_os(actor, lambda: CheckWait(engine, check, f"os.waitpid({pid})"), None, f"os.waitpid({pid})")
    return got[0]


def _semlock_acquire(real: Any) -> Callable[..., bool]:
    def acquire(block: bool = True, timeout: float | None = None) -> bool:
        actor = _rank_actor()
        if actor is None or not block:
            return real.acquire(block, timeout)
        if real.acquire(False):
            return True
        engine = actor.engine
        label = "a multiprocessing lock or semaphore held by another thread or process"
        return wait_os(actor, lambda: CheckWait(engine, lambda: real.acquire(False), label), timeout, label)
    return acquire


def _plain_child() -> None:
    """A process forked by a rank (a ``multiprocessing`` worker) is a plain Python process:
    the handlers smpy installed for the run (SIGTERM, SIGINT, SIGHUP, SIGALRM, SIGUSR2) go
    back to Python's defaults, so that ``Pool.terminate()`` ends its workers as it does."""
    import signal
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGUSR2"):
        num = getattr(signal, name, None)
        if num is None:
            continue
        handler = signal.getsignal(num)
        if str(getattr(handler, "__module__", "")).startswith("smpy."):
            signal.signal(num, signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_plain_child)


class Cooperative(Patches):
    """Installs and removes the patches (see the module docstring)."""

    def install(self) -> None:
        self._patch(select, "select", _select)
        self._patch(select, "poll", GreenPoll)
        for cls in (selectors.SelectSelector, getattr(selectors, "_PollLikeSelector", None),
                    getattr(selectors, "EpollSelector", None)):
            if cls is not None and "select" in cls.__dict__:
                self._patch(cls, "select", _make_selector_select(cls.__dict__["select"]))
        S = socket.socket
        for name, ev in (("_accept", POLLIN), ("recv", POLLIN), ("recv_into", POLLIN), ("recvfrom", POLLIN),
                         ("recvfrom_into", POLLIN), ("recvmsg", POLLIN), ("recvmsg_into", POLLIN),
                         ("send", POLLOUT), ("sendto", POLLOUT), ("sendmsg", POLLOUT)):
            if hasattr(_socket.socket, name):
                self._patch(S, name, _make_sock_op(name, ev))
        self._patch(S, "sendall", _sendall)
        self._patch(S, "connect", _connect)
        self._patch(S, "connect_ex", _connect_ex)
        _next["read"], _next["write"] = os.read, os.write
        self._patch(os, "read", _os_read)
        self._patch(os, "write", _os_write)
        self._patch(os, "waitpid", _waitpid)
        import queue
        # the C SimpleQueue waits on a lock of its own; Python's waits on threading's
        self._patch(queue, "SimpleQueue", queue._PySimpleQueue)  # type: ignore[attr-defined]
        # multiprocessing's connections and locks: now, or when (if) the program imports them
        self._hooks = [h for h in (when_imported("multiprocessing.connection", self._patch_connection),
                                   when_imported("multiprocessing.synchronize", self._patch_semlock))
                       if h is not None]

    def _patch_connection(self, mpc: Any) -> None:
        if hasattr(mpc, "Connection") and "_recv" in mpc.Connection.__dict__:
            self._patch(mpc.Connection, "_recv", _conn_recv)
            self._patch(mpc.Connection, "_send", _conn_send)

    def _patch_semlock(self, mps: Any) -> None:
        real_make = mps.SemLock._make_methods

        def _make_methods(self: Any) -> None:
            real_make(self)
            self.acquire = _semlock_acquire(self._semlock)

        def __enter__(self: Any) -> bool:
            return self.acquire()

        self._patch(mps.SemLock, "_make_methods", _make_methods)
        self._patch(mps.SemLock, "__enter__", __enter__)

    def uninstall(self) -> None:
        self._undo()
