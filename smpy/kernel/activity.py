"""Activities: things that take simulated time and that actors wait for.

An activity moves once from *running* to *done* (or *failed*). On that transition it calls
its callbacks (in registration order, from the maestro) and makes its waiting actors
ready. Models (cpu, network) subclass it; the kernel only needs this protocol.

Invariant: ``_finish``/``_fail`` take effect at most once. They may be called from the
maestro or from a running actor: waking an actor only appends it to the ready FIFO and
never switches greenlets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine, Event


class ActivityFailed(Exception):
    """Raised in an actor that waited on an activity which failed."""


RUNNING, DONE, FAILED, CANCELED = 0, 1, 2, 3


class Activity:
    __slots__ = ("engine", "state", "waiters", "callbacks", "exception", "start_time", "finish_time", "__weakref__")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.state = RUNNING
        self.waiters: list = []
        self.callbacks: list[Callable[[Activity], Any]] | None = None
        self.exception: BaseException | None = None
        self.start_time = engine.now
        self.finish_time = -1.0

    @property
    def done(self) -> bool:
        return self.state != RUNNING

    def add_callback(self, fn: Callable[[Activity], Any]) -> None:
        if self.state != RUNNING:
            fn(self)
        elif self.callbacks is None:
            self.callbacks = [fn]
        else:
            self.callbacks.append(fn)

    def _finish(self) -> None:
        if self.state != RUNNING:
            return
        self.state = DONE
        # _notify(), inlined: every message finishes two or three activities
        engine = self.engine
        self.finish_time = engine.now
        cbs = self.callbacks
        if cbs is not None:
            self.callbacks = None
            for fn in cbs:
                fn(self)
        if self.waiters:
            ready = engine._ready
            for actor in self.waiters:
                if actor.waiting_for is not None:
                    actor.waiting_for = None
                    ready.append(actor)
            self.waiters = []

    def _fail(self, exc: BaseException) -> None:
        if self.state != RUNNING:
            return
        self.state = FAILED
        self.exception = exc
        self._notify()

    def cancel(self) -> None:
        """Stop the activity; waiters wake and see ``state == CANCELED``."""
        if self.state != RUNNING:
            return
        self._on_cancel()
        self.state = CANCELED
        self._notify()

    def _on_cancel(self) -> None:
        """Release model resources (overridden by models)."""

    def _notify(self) -> None:
        engine = self.engine
        self.finish_time = engine.now
        cbs = self.callbacks
        if cbs is not None:
            self.callbacks = None
            for fn in cbs:
                fn(self)
        if self.waiters:
            ready = engine._ready
            for actor in self.waiters:
                if actor.waiting_for is not None:
                    actor.waiting_for = None
                    ready.append(actor)
            self.waiters = []

    def describe(self) -> str:
        return type(self).__name__


class Sleep(Activity):
    """Does nothing for ``duration`` seconds of simulated time."""

    __slots__ = ("_event",)

    def __init__(self, engine: Engine, duration: float) -> None:
        super().__init__(engine)
        self._event: Event | None = engine.schedule(duration, self._finish)

    def _on_cancel(self) -> None:
        if self._event is not None:
            self._event.cancelled = True

    def describe(self) -> str:
        return "sleep"


class Trigger(Activity):
    """Completes when somebody calls :meth:`fire` (used for matching-based waits)."""

    __slots__ = ("label",)

    def __init__(self, engine: Engine, label: str = "trigger") -> None:
        super().__init__(engine)
        self.label = label

    def fire(self) -> None:
        self._finish()

    def describe(self) -> str:
        return self.label


class RateActivity(Activity):
    """An activity that consumes ``remaining`` units of work at a piecewise-constant rate.

    Models own the rate: they call :meth:`_set_rate` whenever sharing changes. The
    remaining work is updated lazily, only when the rate changes:
    ``remaining -= rate × (now − last_update)``, and the completion event is rescheduled at
    ``now + remaining / rate``. Work below ``1e-9`` of the initial amount counts as done.
    """

    __slots__ = ("remaining", "total", "rate", "last_update", "_done_event")

    def __init__(self, engine: Engine, amount: float) -> None:
        super().__init__(engine)
        self.total = amount
        self.remaining = amount
        self.rate = 0.0
        self.last_update = engine.now
        self._done_event: Event | None = None

    def _sync(self) -> None:
        now = self.engine.now
        if self.rate > 0.0 and now > self.last_update:
            self.remaining -= self.rate * (now - self.last_update)
            if self.remaining < 0.0:
                self.remaining = 0.0
        self.last_update = now

    def _set_rate(self, rate: float) -> None:
        if self.state != RUNNING:
            return
        engine = self.engine
        now = engine.now
        # _sync(), inlined: this runs for every rate change of every flow and execution
        remaining = self.remaining
        if self.rate > 0.0 and now > self.last_update:
            remaining -= self.rate * (now - self.last_update)
            if remaining < 0.0:
                remaining = 0.0
            self.remaining = remaining
        self.last_update = now
        self.rate = rate
        ev = self._done_event
        if ev is not None:
            ev.cancelled = True
            self._done_event = None
        if remaining <= self.total * 1e-9 or remaining <= 0.0:
            self._done_event = engine.schedule(0.0, self._work_done)
        elif rate > 0.0:
            self._done_event = engine.schedule(remaining / rate, self._work_done)

    def _work_done(self) -> None:
        self._done_event = None
        self.remaining = 0.0
        self.last_update = self.engine.now
        self._on_work_done()

    def _on_work_done(self) -> None:
        """Called when the work is consumed; models release resources then ``_finish``."""
        self._finish()

    def _on_cancel(self) -> None:
        if self._done_event is not None:
            self._done_event.cancelled = True
            self._done_event = None

    @property
    def progress(self) -> float:
        self._sync()
        return 1.0 - self.remaining / self.total if self.total > 0 else 1.0
