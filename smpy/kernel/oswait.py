"""Waiting for the operating system without holding the simulation.

Every actor runs on the one OS thread of the engine, so an actor blocked in a real system
call (``accept``, ``recv``, ``select``, ``sem_wait``, ``waitpid`` ...) would hold every other
actor, including the one that would have made the call return. Upper layers therefore turn
such a call into an activity of this module and wait on it with :func:`block_on`:

* :class:`FdWait` — done when one of its file descriptors is ready (``poll(2)`` events);
* :class:`CheckWait` — done when its ``check()`` (a non-blocking attempt, e.g.
  ``sem.acquire(False)`` or ``waitpid(pid, WNOHANG)``) succeeds.

Time model
----------
An OS wait completes in the first round whose poll sees it satisfied. The engine polls
without blocking (:meth:`OsPoller.poll` with timeout 0) at the end of every round while OS
waits exist, before simulated time moves on; so an event caused by another actor (one rank
writes to a socket another rank reads: loopback delivery is synchronous in the kernel) is
seen at the simulated time it was caused, deterministically. Only when nothing else can
happen (no ready actor, no regular event) does the engine wait in a real ``poll(2)``
(:meth:`OsPoller.idle`): wall time passes, simulated time does not. Waiting for the outside
(a child process, a server) is not computation of any simulated host, and the outside's
work is not on the simulated platform: its wall time appears in the emulation's wall time
only. ``CheckWait`` conditions are re-checked every :data:`CHECK_PERIOD_S` of wall time
while the engine is idle.
"""

from __future__ import annotations

import select as _select
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from smpy.kernel.activity import Activity

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine

#: the real poll(2), kept before upper layers patch the select module
real_poll = _select.poll
POLLIN, POLLOUT = _select.POLLIN, _select.POLLOUT
_FAILED = _select.POLLERR | _select.POLLHUP | _select.POLLNVAL
#: how often an idle engine re-checks CheckWait conditions (wall seconds)
CHECK_PERIOD_S = 0.002


class FdWait(Activity):
    """Done when one of ``fds`` (``(fd, poll events)`` pairs) is ready, or in error.

    ``revents`` maps each ready descriptor to the events poll returned."""

    __slots__ = ("fds", "label", "revents")

    def __init__(self, engine: Engine, fds: list[tuple[int, int]], label: str) -> None:
        super().__init__(engine)
        self.fds = fds
        self.label = label
        self.revents: dict[int, int] = {}
        poller(engine).add(self)

    def _on_cancel(self) -> None:
        poller(self.engine).remove(self)

    def describe(self) -> str:
        return self.label


class CheckWait(Activity):
    """Done when ``check()`` returns true (it is called from the maestro; it must not block).
    When ``check()`` raises, the wait fails with that exception, for the waiting actor's call
    to raise as the real call would (a child reaped by another thread: ``os.waitpid``'s
    ``ChildProcessError``), instead of ending the run."""

    __slots__ = ("check", "label")

    def __init__(self, engine: Engine, check: Callable[[], bool], label: str) -> None:
        super().__init__(engine)
        self.check = check
        self.label = label
        poller(engine).add(self)

    def _on_cancel(self) -> None:
        poller(self.engine).remove(self)

    def describe(self) -> str:
        return self.label


class OsPoller:
    """The OS waits of one engine (``engine.os_poller``), polled by the engine's loop."""

    __slots__ = ("waits", "_poll", "_masks", "wall_idle_s", "idling")

    def __init__(self) -> None:
        #: pending waits in the order they started (the order they complete in one round)
        self.waits: list[FdWait | CheckWait] = []
        self._poll = None
        self._masks: dict[int, int] = {}
        #: wall time the engine spent waiting in a real poll (nothing else could run)
        self.wall_idle_s = 0.0
        #: the engine is in :meth:`idle` (its polling is not progress: smpy.kernel.watchdog)
        self.idling = False

    def add(self, w: FdWait | CheckWait) -> None:
        self.waits.append(w)
        self._poll = None

    def remove(self, w: FdWait | CheckWait) -> None:
        try:
            self.waits.remove(w)
        except ValueError:
            return
        self._poll = None

    def _poller(self):  # type: ignore[no-untyped-def]
        p = self._poll
        if p is None:
            masks: dict[int, int] = {}
            for w in self.waits:
                if isinstance(w, FdWait):
                    for fd, ev in w.fds:
                        masks[fd] = masks.get(fd, 0) | ev
            p = self._poll = real_poll()
            for fd, ev in masks.items():
                p.register(fd, ev)
            self._masks = masks
        return p

    def poll(self, timeout_s: float = 0.0) -> bool:
        """Poll every wait once (a real poll of at most ``timeout_s``); complete the
        satisfied ones (their actors become ready); True when some did."""
        waits = self.waits
        if not waits:
            return False
        has_checks = any(isinstance(w, CheckWait) for w in waits)
        if has_checks:
            timeout_s = min(timeout_s, CHECK_PERIOD_S)
        p = self._poller()
        ready: dict[int, int] = {}
        if self._masks or timeout_s > 0:
            ready = dict(p.poll(int(timeout_s * 1000) if timeout_s > 0 else 0))
        done: list[tuple[FdWait | CheckWait, Exception | None]] = []
        for w in waits:
            if isinstance(w, FdWait):
                hit = {fd: ready[fd] for fd, ev in w.fds if fd in ready and ready[fd] & (ev | _FAILED)}
                if hit:
                    w.revents = hit
                    done.append((w, None))
                continue
            try:
                if w.check():
                    done.append((w, None))
            except Exception as exc:  # noqa: BLE001 - the waiting actor's call raises it
                done.append((w, exc))
        for w, exc in done:
            self.remove(w)
            if exc is None:
                w._finish()
            else:
                w._fail(exc)
        return bool(done)

    def idle(self, chunk_s: float = 0.5) -> None:
        """Nothing else can happen: wait in a real poll until some wait completes (simulated
        time stands still). Returns after at most ``chunk_s`` wall seconds even when none
        did, so that the caller's loop (and a watchdog's signal) gets control back."""
        t0 = time.perf_counter()
        self.idling = True
        try:
            while True:
                if self.poll(chunk_s):
                    break
                if time.perf_counter() - t0 >= chunk_s:
                    break
        finally:
            self.idling = False
        self.wall_idle_s += time.perf_counter() - t0

    def describe(self) -> list[str]:
        return [w.label for w in self.waits]


def poller(engine: Engine) -> OsPoller:
    """The engine's poller (created on first use)."""
    p = engine.os_poller
    if p is None:
        p = engine.os_poller = OsPoller()
    return p
