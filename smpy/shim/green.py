"""Threads started by a simulated rank run as simulated threads of that rank.

Every rank is a greenlet of one OS thread, so a real thread started by a rank could not
call smpy's MPI (it is not a simulated process), and a rank blocking a real lock would
block the whole emulation. While a run is in progress this module therefore patches:

* ``threading.Thread.start``/``join``/``is_alive``: a thread started inside a rank becomes
  a kernel actor of the same process (same host, same isolated context), started at the
  current simulated time; its uncaught exception is reported like Python's (``Exception in
  thread ...`` on the rank's stderr), it does not abort the run. Outside ranks the real
  methods run.
* ``threading.Lock``/``_allocate_lock`` (and so ``Condition``, ``Event``, ``Semaphore``,
  ``queue.Queue``, ``concurrent.futures.Future``, which build on them) and ``RLock``
  (Python's implementation over those locks): a contended acquire inside a rank waits
  for the release in simulated time (a trigger the release fires; a timeout is a simulated
  timeout), so the engine keeps running the other ranks and its deadlock detection sees
  the wait. Uncontended acquires cost nothing; outside ranks the real lock blocks.
* ``threading.get_ident``: each rank's main thread and each simulated thread has its own
  identity (``RLock`` owners, ``current_thread()``; the import system's module locks, see
  :mod:`smpy.shim.imports`); ``threading.current_thread()`` in a rank's main thread is
  ``threading.main_thread()``, as in the rank's real process.
* ``threading.local``: one namespace per rank and per simulated thread (module-level
  thread-locals of shared library modules, such as ``mpi4py.futures``' ``_tls``, are per
  process as they are in real runs).

The time a simulated thread computes is charged to its process (one host core shared by
its threads, as with real threads under one rank's CPU clock). That is what
``mpi4py.futures`` needs: its executors run a manager thread that talks MPI.
"""

from __future__ import annotations

import _thread
import sys
import threading
import traceback
import weakref
from typing import Any

from smpy.kernel.activity import Sleep, Trigger
from smpy.kernel.actors import Actor, block_on, block_on_any, current_actor, kill, yield_now
from smpy.shim import aio, isolation

_real_allocate = _thread.allocate_lock
_real_get_ident = threading.get_ident
_FAKE_IDENT_BASE = 1 << 48
#: a rank's main thread is ``_RANK_IDENT_BASE + its process number`` (beyond user-space
#: addresses, which real identities are, and below the simulated threads' numbers)
_RANK_IDENT_BASE = 1 << 47


def _rank_actor() -> Actor | None:
    """The running actor when it is (a thread of) a simulated process, else None."""
    a = current_actor()
    if a is None or getattr(a.data, "world", None) is None:
        return None
    return a


def _time_slice(actor: Actor) -> None:
    """End the running thread's time slice: its measured computation becomes simulated time
    (smpy.timing), or one ``sys.getswitchinterval()`` passes when computation is not
    simulated; the other threads run meanwhile."""
    proc = actor.data
    engine = actor.engine
    before = engine.now
    timing = getattr(getattr(proc, "world", None), "timing", None)
    if timing is not None and timing.measure and proc.depth == 0:
        timing.flush(proc)
        timing.restart(proc)
    if engine.now == before:  # nothing measured (or below smpi/cpu-threshold)
        block_on(Sleep(engine, sys.getswitchinterval()))
    yield_now()


class GreenLock:
    """A lock whose contended acquire waits in simulated time inside a rank."""

    __slots__ = ("_real", "_waiters", "__weakref__")
    #: what a rank waiting for the lock waits for (deadlock reports)
    WAITING_FOR = "a threading lock (Lock/Condition/Event/queue) held by another thread"

    def __init__(self) -> None:
        self._real = _real_allocate()
        self._waiters: list[Trigger] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._real.acquire(False):
            return True
        if not blocking:
            return False
        actor = _rank_actor()
        if actor is None:
            return self._real.acquire(True, timeout)
        engine = actor.engine
        deadline = engine.now + timeout if timeout is not None and timeout >= 0 else None
        while True:
            t = Trigger(engine, self.WAITING_FOR)
            self._waiters.append(t)
            if deadline is None:
                block_on(t, t.label)
            else:
                left = deadline - engine.now
                if left <= 0:
                    self._waiters.remove(t)
                    return False
                s = Sleep(engine, left)
                block_on_any([t, s], t.label)
                s.cancel()
            if t in self._waiters:
                self._waiters.remove(t)
            if self._real.acquire(False):
                return True
            if deadline is not None and engine.now >= deadline:
                return False

    def release(self) -> None:
        self._real.release()
        if self._waiters:
            self._waiters.pop(0).fire()

    def locked(self) -> bool:
        return self._real.locked()

    def _at_fork_reinit(self) -> None:
        self._real = _real_allocate()
        self._waiters = []

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<smpy green lock {'locked' if self.locked() else 'unlocked'}>"


def _get_ident() -> int:
    a = current_actor()
    if a is None:
        return _real_get_ident()
    ident = getattr(a, "_green_ident", None)
    if ident is not None:
        return ident
    if getattr(a.data, "world", None) is not None:
        return _RANK_IDENT_BASE + a.pid
    return _real_get_ident()


def _is_rank_main(a: Actor | None) -> bool:
    return a is not None and getattr(a, "_green_ident", None) is None and getattr(a.data, "world", None) is not None


def _local_key() -> Any:
    a = current_actor()
    if a is None or getattr(a.data, "world", None) is None:
        return _real_get_ident()
    return ("smpy", id(a.data), getattr(a, "_green_ident", 0))


def _local_dict(self: Any) -> None:
    """Point ``self.__dict__`` at the running thread's namespace (created, and ``__init__``
    run again with the construction arguments, on the thread's first access)."""
    dicts = object.__getattribute__(self, "_gl_dicts")
    key = _local_key()
    d = dicts.get(key)
    if d is not None:
        object.__setattr__(self, "__dict__", d)
        return
    d = dicts[key] = {}
    object.__setattr__(self, "__dict__", d)
    args, kwargs = object.__getattribute__(self, "_gl_args")
    init = type(self).__init__
    if init is not object.__init__:
        init(self, *args, **kwargs)


class GreenLocal:
    """``threading.local`` with one namespace per simulated thread (see the module docstring)."""

    __slots__ = ("_gl_dicts", "_gl_args", "__dict__", "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> GreenLocal:
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        d: dict[str, Any] = {}
        object.__setattr__(self, "_gl_args", (args, kwargs))
        object.__setattr__(self, "_gl_dicts", {_local_key(): d})
        object.__setattr__(self, "__dict__", d)
        return self

    def __getattribute__(self, name: str) -> Any:
        if name not in ("_gl_dicts", "_gl_args"):
            _local_dict(self)
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "__dict__":
            raise AttributeError(f"{type(self).__name__!r} object attribute '__dict__' is read-only")
        _local_dict(self)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name == "__dict__":
            raise AttributeError(f"{type(self).__name__!r} object attribute '__dict__' is read-only")
        _local_dict(self)
        object.__delattr__(self, name)


class _ThreadContext:
    """A simulated thread's switch hooks: the rank's context, plus its own MPI-call depth
    (``proc.depth``, which ``@mpicall`` saves and restores) so that a thread calling MPI
    while the rank's main thread waits inside an MPI call does not corrupt the other's."""

    __slots__ = ("rank_ctx", "proc", "depth", "outer", "actor", "heaps_done", "aio")

    def __init__(self, rank_ctx: Any, proc: Any, actor: Any) -> None:
        self.rank_ctx = rank_ctx
        self.proc = proc
        self.depth = 0
        self.outer = 0
        self.actor = actor
        self.heaps_done = False  # the rank's heap handler is installed in this thread
        self.aio = aio.AioState()  # the thread's own asyncio running loop

    def switch_in(self) -> None:
        if self.rank_ctx is not None:
            self.rank_ctx.switch_in()
        if not self.heaps_done:
            heaps = isolation.rank_heaps
            self.heaps_done = heaps is None or heaps.install_thread(self.actor.glet)
        self.outer = self.proc.depth
        self.proc.depth = self.depth
        ev = aio.events()
        if ev is not None:
            self.aio.thread_in(ev)

    def switch_out(self) -> None:
        self.depth = self.proc.depth
        self.proc.depth = self.outer
        ev = aio.events()
        if ev is not None:
            self.aio.thread_out(ev, getattr(self.rank_ctx, "aio", None))
        if self.rank_ctx is not None:
            self.rank_ctx.switch_out()


class _GreenActor(Actor):
    __slots__ = ("_green_ident", "thread", "joiners")


def _run(thread: threading.Thread) -> None:
    actor = current_actor()
    ident = actor._green_ident  # type: ignore[union-attr]
    thread._ident = ident  # type: ignore[attr-defined]
    threading._active[ident] = thread  # type: ignore[attr-defined]
    try:
        thread.run()
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - reported as Python reports thread errors
        from smpy.kernel.actors import ActorKilled
        from smpy.kernel.watchdog import Stalled
        if isinstance(exc, (ActorKilled, Stalled)):
            raise
        sys.stderr.write(f"Exception in thread {thread.name}:\n")
        sys.stderr.write("".join(traceback.format_exception(exc)))
    finally:
        threading._active.pop(ident, None)  # type: ignore[attr-defined]
        thread._green_done = True  # type: ignore[attr-defined]
        for t in actor.joiners:  # type: ignore[union-attr]
            t.fire()
        actor.joiners.clear()  # type: ignore[union-attr]


class GreenThreads:
    """Installs and removes the patches (see the module docstring)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []
        self._count = 0
        self._threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        #: threading._register_atexit callbacks of each process (id(proc) -> callbacks)
        self._atexit: dict[int, list[tuple[Any, tuple, dict]]] = {}

    def end_of_rank(self, proc: Any) -> None:
        """What Python does at a process's exit, for a rank's program end: run the
        ``threading._register_atexit`` callbacks (mpi4py.futures shuts its executors down
        there), join the rank's non-daemon threads, and end its daemon threads."""
        for func, args, kwargs in reversed(self._atexit.pop(id(proc), [])):
            func(*args, **kwargs)
        for t in list(self._threads) if self._threads else ():
            a = getattr(t, "_green_actor", None)
            if a is not None and a.data is proc and not t.daemon and not t._green_done:  # type: ignore[attr-defined]
                t.join()
        # then the process exits, which ends its daemon threads where they wait (an event
        # loop's thread waiting in select for a message that will never come must not hold
        # the run: distributed's client IO loop)
        for t in list(self._threads) if self._threads else ():
            a = getattr(t, "_green_actor", None)
            if a is not None and a.data is proc and t.daemon and not t._green_done:  # type: ignore[attr-defined]
                kill(a)

    def _patch(self, obj: Any, name: str, value: Any) -> None:
        self._saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def install(self) -> None:
        T = threading.Thread
        real_start, real_join, real_alive = T.start, T.join, T.is_alive
        owner = self

        def start(self: threading.Thread) -> None:
            parent = _rank_actor()
            if parent is None:
                return real_start(self)
            if getattr(self, "_green_actor", None) is not None or self._started.is_set():  # type: ignore[attr-defined]
                raise RuntimeError("threads can only be started once")
            p = parent.data
            owner._count += 1
            a = _GreenActor(parent.engine, f"rank {p.rank} thread {self.name}", _run, (self,), host=parent.host,
                            data=p, pid=parent.pid)
            a._green_ident = _FAKE_IDENT_BASE + owner._count
            a.thread = self
            a.joiners = []
            rank_ctx = parent.context.rank_ctx if isinstance(parent.context, _ThreadContext) else parent.context
            a.context = _ThreadContext(rank_ctx, p, a)
            self._green_actor = a  # type: ignore[attr-defined]
            owner._threads.add(self)
            self._green_done = False  # type: ignore[attr-defined]
            a.start()
            self._started.set()  # type: ignore[attr-defined]
            return None

        def join(self: threading.Thread, timeout: float | None = None) -> None:
            a = getattr(self, "_green_actor", None)
            if a is None:
                return real_join(self, timeout)
            if current_actor() is a:
                raise RuntimeError("cannot join current thread")
            me = _rank_actor()
            if self._green_done or me is None:  # type: ignore[attr-defined]
                return None
            t = Trigger(a.engine, f"Thread.join({self.name})")
            a.joiners.append(t)
            if timeout is None:
                block_on(t, t.label)
            else:
                s = Sleep(a.engine, max(timeout, 0.0))
                block_on_any([t, s], t.label)
                s.cancel()
            return None

        def is_alive(self: threading.Thread) -> bool:
            if getattr(self, "_green_actor", None) is None:
                return real_alive(self)
            return not self._green_done  # type: ignore[attr-defined]

        self._patch(T, "start", start)
        self._patch(T, "join", join)
        self._patch(T, "is_alive", is_alive)
        self._patch(threading, "Lock", GreenLock)
        self._patch(threading, "_allocate_lock", GreenLock)
        self._patch(threading, "RLock", threading._PyRLock)  # type: ignore[attr-defined]
        self._patch(threading, "get_ident", _get_ident)
        real_current = threading.current_thread

        def current_thread() -> threading.Thread:
            if _is_rank_main(current_actor()):
                return threading.main_thread()
            return real_current()

        current_thread.__doc__ = real_current.__doc__
        self._patch(threading, "current_thread", current_thread)
        self._patch(threading, "local", GreenLocal)
        real_register = threading._register_atexit  # type: ignore[attr-defined]

        def register_atexit(func: Any, *args: Any, **kwargs: Any) -> None:
            a = _rank_actor()
            if a is None:
                return real_register(func, *args, **kwargs)
            owner._atexit.setdefault(id(a.data), []).append((func, args, kwargs))
            return None

        self._patch(threading, "_register_atexit", register_atexit)
        real_frames = sys._current_frames

        def current_frames() -> dict[int, Any]:
            """``sys._current_frames()`` with the suspended frames of the simulated threads
            (under their ``threading.get_ident()``), as profilers (distributed's) expect."""
            frames = real_frames()
            if _rank_actor() is not None:
                for t in list(owner._threads):
                    a = getattr(t, "_green_actor", None)
                    frame = a.glet.gr_frame if a is not None and a.glet is not None else None
                    if frame is not None:
                        frames[a._green_ident] = frame
            return frames

        self._patch(sys, "_current_frames", current_frames)

        # Real threads are preemptive, simulated ones run only when the running one blocks: a
        # thread polling concurrent.futures.wait() until another thread completes a future
        # (mpipool's Batch.ordered loops on FIRST_COMPLETED) would spin forever at one
        # simulated instant. Each such call is a point where the others get the CPU, as the
        # interpreter's switch interval gives it to them: the poller's measured computation
        # is injected (or, when computation is not simulated, one switch interval passes).
        import concurrent.futures as cf
        import concurrent.futures._base as cf_base
        real_wait = cf_base.wait

        def wait(fs: Any, timeout: Any = None, return_when: str = cf_base.ALL_COMPLETED) -> Any:
            a = _rank_actor()
            if a is not None and owner._threads:
                _time_slice(a)
            return real_wait(fs, timeout, return_when)

        wait.__doc__ = real_wait.__doc__
        self._patch(cf_base, "wait", wait)
        self._patch(cf, "wait", wait)

    def uninstall(self) -> None:
        # simulated threads end with the run: the real join/is_alive see them stopped
        # (mpi4py.futures joins its threads again at interpreter exit)
        for t in list(self._threads):
            t._is_stopped = True  # type: ignore[attr-defined]
            t._tstate_lock = None  # type: ignore[attr-defined]
        self._threads.clear()
        while self._saved:
            obj, name, value = self._saved.pop()
            setattr(obj, name, value)
