"""Actors on greenlets — the only module of smpy that switches greenlets (with its compiled
twin in ``_accel.c``: :meth:`Actor._resume` and :func:`block_on` translated line by line,
see :mod:`smpy.kernel.accel`).

Every actor runs in its own greenlet whose parent is the maestro (the greenlet that called
:meth:`Engine.run`). Exactly one greenlet runs at a time:

* the maestro resumes an actor with :meth:`Actor._resume` (``greenlet.switch`` into it);
* the actor gives control back only through :func:`block_on` / :func:`block_on_any`
  (switch to the maestro), or by returning / raising.

Invariant: an actor is in the engine's ready FIFO iff it is runnable and not running;
``waiting_for`` is not None iff the actor is blocked. An activity completing clears
``waiting_for`` and appends the actor to the FIFO — it never switches.

Killing an actor during the run (a failure of its host, :func:`kill`) unwinds its stack
from the maestro: ``ActorKilled`` is thrown into its greenlet, its ``finally`` blocks run, it
ends (``alive`` False, ``killed`` True, ``end_time`` the kill's time, ``on_actor_end`` fires)
and it leaves the waiters of the activity it waited for. A kill asked by a running actor for
another one runs from the maestro at the same simulated time (an actor never switches to
another actor); an actor killing itself raises ``ActorKilled`` at once.

Per-actor context: ``actor.context`` (optional) gets ``switch_in()`` right before the
actor runs and ``switch_out()`` right after it yields. Upper layers use it to give each
rank its own ``__main__``, module copies, random state and output streams.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import greenlet

from smpy.kernel.activity import CANCELED, FAILED, Activity, ActivityFailed, Sleep
from smpy.support.internal import SmpyInternalError

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine


class ActorKilled(BaseException):
    """Thrown into actors when the simulation is torn down (not an Exception: user
    ``except Exception`` blocks must not swallow it)."""


_current: Actor | None = None


def current_actor() -> Actor | None:
    """The running actor, or None in the maestro."""
    return _current


def _forget_actor() -> None:
    """In a process forked by an actor (``multiprocessing``'s workers, ``os.fork``) no actor
    runs: the child is a plain process whose calls must not block on this engine."""
    global _current
    _current = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_actor)


class Actor:
    __slots__ = (
        "engine", "name", "fn", "args", "host", "data", "context", "glet", "alive",
        "started", "waiting_for", "wait_label", "exception", "result", "end_time", "pid", "killed",
    )

    def __init__(self, engine: Engine, name: str, fn: Callable[..., Any], args: tuple = (),
                 host: Any = None, data: Any = None, pid: int = 0) -> None:
        self.engine = engine
        self.name = name
        self.fn = fn
        self.args = args
        self.host = host
        self.data = data
        self.pid = pid
        self.context: Any = None
        self.glet: greenlet.greenlet | None = None
        self.alive = True
        self.started = False
        self.waiting_for: Any = None
        #: human description of the pending operation, for deadlock reports
        self.wait_label: Callable[[], str] | str | None = None
        self.exception: BaseException | None = None
        self.result: Any = None
        self.end_time = -1.0
        #: ended by :func:`kill` (a failure), not by returning or raising
        self.killed = False

    def start(self) -> Actor:
        # parent = the maestro, also when a running actor starts another one
        running = _current
        parent = running.glet.parent if running is not None else greenlet.getcurrent()
        # the greenlet runs the class's _main, given the actor by the first switch (_resume):
        # with the bound method self._main as its run, CPython's method call would add a C
        # frame (method_vectorcall, 144 bytes) under the rank's stack, which greenlet copies
        # out and back at every switch of the rank (docs/performance.md, "The ring's last C
        # frames")
        self.glet = greenlet.greenlet(type(self)._main, parent=parent)
        self.engine.add_actor(self)
        return self

    def _main(self) -> None:
        engine = self.engine
        self.started = True
        if engine.on_actor_start:
            engine.on_actor_start.emit(self)
        try:
            args = self.args
            # fn(arg) for one argument, not fn(*args): CPython 3.11 runs a Python function
            # called with exact arguments in the caller's C frame, while a call with *args
            # enters a C evaluation frame of its own (about 500 bytes of C stack more, which
            # greenlet copies out and back at every switch of this actor; docs/performance.md,
            # "The C stack copied at each switch")
            self.result = self.fn(args[0]) if len(args) == 1 else self.fn(*args)
        except ActorKilled:
            pass
        except BaseException as exc:  # noqa: BLE001 - any failure aborts the simulation
            self.exception = exc
            engine.abort(exc, self)
        finally:
            self.alive = False
            self.end_time = engine.now
            if engine.on_actor_end:
                engine.on_actor_end.emit(self)

    def _resume(self) -> None:
        global _current
        ctx = self.context
        if ctx is not None:
            ctx.switch_in()
        _current = self
        try:
            if self.started:
                self.glet.switch()
            else:  # the first switch: run(self), that is type(self)._main(self)
                self.glet.switch(self)
        finally:
            _current = None
            if ctx is not None:
                ctx.switch_out()

    def kill(self) -> None:
        """Unwind the actor's stack (finally blocks run); used at teardown."""
        global _current
        if self.glet is None or self.glet.dead or not self.alive:
            self.alive = False
            return
        if not self.started:
            self.alive = False
            return
        ctx = self.context
        if ctx is not None:
            ctx.switch_in()
        _current = self
        try:
            self.glet.throw(ActorKilled())
        except ActorKilled:
            pass
        finally:
            _current = None
            self.alive = False
            if ctx is not None:
                ctx.switch_out()

    def describe_wait(self) -> str:
        label = self.wait_label
        if callable(label):
            label = label()
        if label:
            return label
        w = self.waiting_for
        if isinstance(w, list):
            return "waiting for any of: " + ", ".join(a.describe() for a in w)
        return w.describe() if w is not None else "running"

    def __repr__(self) -> str:
        return f"<Actor {self.name}>"


def _yield_to_maestro(actor: Actor) -> None:
    actor.glet.parent.switch()
    if actor.engine.stopping and actor.waiting_for is not None:
        raise ActorKilled()


def block_on(activity: Activity, label: Callable[[], str] | str | None = None) -> Activity:
    """Block the running actor until ``activity`` is done; raise if it failed.

    Returns at once when the activity is already done (no switch).
    """
    if activity.state == 0:  # RUNNING
        actor = _current
        if actor is None:
            raise SmpyInternalError("block_on called outside of an actor")
        if actor.killed:  # a finally block of a killed actor must not wait
            raise ActorKilled()
        actor.waiting_for = activity
        actor.wait_label = label
        activity.waiters.append(actor)
        # _yield_to_maestro(actor), inlined (once per blocking call)
        actor.glet.parent.switch()
        if actor.engine.stopping and actor.waiting_for is not None:
            raise ActorKilled()
        actor.wait_label = None
    if activity.state == FAILED:
        exc = activity.exception
        raise exc if exc is not None else ActivityFailed(activity.describe())
    return activity


def block_on_any(activities: list[Activity], label: Callable[[], str] | str | None = None) -> int:
    """Block until at least one of ``activities`` is done; return the lowest done index."""
    for i, a in enumerate(activities):
        if a.state != 0:
            return i
    actor = _current
    if actor is None:
        raise SmpyInternalError("block_on_any called outside of an actor")
    actor.waiting_for = activities
    actor.wait_label = label
    for a in activities:
        a.waiters.append(actor)
    _yield_to_maestro(actor)
    actor.wait_label = None
    for a in activities:
        try:
            a.waiters.remove(actor)
        except ValueError:
            pass
    for i, a in enumerate(activities):
        if a.state != 0:
            return i
    raise SmpyInternalError("woken with no activity done")


def kill(actor: Actor) -> None:
    """End ``actor`` now, in the middle of the run (its host failed): see the module notes.

    From the maestro the actor unwinds at once; from another running actor, the kill is an
    event of the current simulated time; from the actor itself, ``ActorKilled`` is raised.
    """
    if not actor.alive or actor.killed:
        return
    running = _current
    if running is actor:
        actor.killed = True
        raise ActorKilled()
    if running is not None:
        actor.engine.schedule(0.0, _kill_now, actor)
        return
    _kill_now(actor)


def _kill_now(actor: Actor) -> None:
    if not actor.alive or actor.killed:
        return
    engine = actor.engine
    actor.killed = True
    waited = actor.waiting_for
    actor.waiting_for = None
    for a in (waited if isinstance(waited, list) else [waited] if waited is not None else []):
        try:
            a.waiters.remove(actor)
        except ValueError:
            pass
        if isinstance(a, Sleep) and not a.waiters:
            a.cancel()  # nobody sleeps any more: the event must not keep the run alive
    try:
        engine._ready.remove(actor)
    except ValueError:
        pass
    if not actor.started or actor.glet is None:
        actor.alive = False
        actor.end_time = engine.now
        if engine.on_actor_end:
            engine.on_actor_end.emit(actor)
        return
    actor.kill()


def yield_now() -> None:
    """Let the other ready actors run before continuing (same simulated time)."""
    actor = _current
    if actor is None:
        return
    actor.engine._ready.append(actor)
    actor.glet.parent.switch()


def run_in_actor_context(actor: Actor, fn: Callable[[], Any]) -> Any:
    """Call ``fn`` with ``actor`` marked current (used by tooling; does not switch)."""
    global _current
    prev = _current
    _current = actor
    try:
        return fn()
    finally:
        _current = prev


__all__ = ["Actor", "ActorKilled", "CANCELED", "block_on", "block_on_any", "current_actor", "kill", "yield_now"]
