"""The discrete-event engine: simulated clock, event heap, rounds.

Model
-----
The simulation state changes only at event times. The engine holds

* ``now`` — the simulated clock (seconds, float), monotone non-decreasing;
* a heap of events ``(time, seq, event)``; ``seq`` is a global counter, so events at equal
  times run in the order they were scheduled (deterministic tie-breaking);
* a FIFO of ready actors (actors whose activity completed); they run in the order they
  became ready, which is itself deterministic;
* a set of *models* (cpu, network) that keep their own lazily updated state and must be
  brought up to date (``update()``) once per round, after all actors ran, before time moves.

One round at time ``t``::

    run every ready actor until it blocks or ends      (actors may schedule events, start
                                                        activities, mark models dirty)
    update dirty models                                 (re-solve sharing once per round,
                                                        schedule completion events)
    pop every event with time == next time; run them    (they finish activities → ready)

The loop ends when there is no ready actor and no pending event. Live actors left blocked
at that point form a deadlock: :class:`DeadlockError` lists what each one waits for. Actors
waiting for the operating system (:mod:`smpy.kernel.oswait`) are polled at the end of each
round; when only they are left, the loop waits for the outside in a real ``poll(2)``.

*Compaction*. A cancelled event stays in the heap until it reaches the top (cancelling does
not touch the heap); the network and CPU models cancel and reschedule an activity's
completion at every rate change, so at thousands of ranks 99 % of the heap was cancelled
entries (378 000 entries for ~3 000 live ones in HPL at 3072 ranks), each push and pop paying
for the depth and the collector for the objects. When the heap grows past twice its size
after the last compaction (at least ``COMPACT_MIN`` entries) the cancelled entries are dropped
and the rest re-heapified: O(1) amortised per event. The pop order is that of the unique keys
``(time, seq)``, so it is unchanged (the simulation cannot observe a compaction).

*Daemon* events (:meth:`Engine.schedule_daemon`: periodic samplers such as DVFS governors)
live in a heap of their own and run in time order with the others, but never keep the
simulation alive: once only daemon events are left, the loop ends (SimGrid kills its daemon
actors when the last regular actor ends), so they never move the clock past the end.

The engine never switches greenlets itself: :mod:`smpy.kernel.actors` does.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.kernel.signals import Signal

_heappush = heapq.heappush
#: the heap is never compacted below this many entries
COMPACT_MIN = 8192


def compact(heap: list[tuple[float, int, Event]]) -> int:
    """Drop the cancelled events of ``heap`` in place and re-heapify it; the size at which
    to compact next (see *Compaction* above)."""
    heap[:] = [item for item in heap if not item[2].cancelled]
    heapq.heapify(heap)
    return max(COMPACT_MIN, 2 * len(heap))

if TYPE_CHECKING:
    from smpy.kernel.actors import Actor


class Event:
    """A scheduled callback; set ``cancelled`` to drop it without touching the heap."""

    __slots__ = ("time", "fn", "args", "cancelled")

    def __init__(self, time: float, fn: Callable[..., Any], args: tuple) -> None:
        self.time = time
        self.fn = fn
        self.args = args
        self.cancelled = False


_new_event = Event.__new__


class DeadlockError(RuntimeError):
    """No actor can make progress. ``blocked`` lists ``(actor, description)`` pairs."""

    def __init__(self, now: float, blocked: list[tuple[Actor, str]]) -> None:
        self.now = now
        self.blocked = blocked
        lines = [f"deadlock at simulated time {now:.9g} s: {len(blocked)} actor(s) blocked forever"]
        lines += [f"  {actor.name}: {what}" for actor, what in blocked]
        super().__init__("\n".join(lines))


class Engine:
    # the attributes read at every event are slots (a fixed offset, no dict lookup: issue 24);
    # the others stay in the instance dict
    __slots__ = ("now", "_heap", "_daemon_heap", "_seq", "_ready", "_models", "stopping", "events_processed",
                 "rounds", "os_poller", "on_time_advance", "_compact_at", "__dict__", "__weakref__")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Event]] = []
        self._daemon_heap: list[tuple[float, int, Event]] = []
        self._compact_at = COMPACT_MIN
        self._seq = 0
        self._ready: deque[Actor] = deque()
        self.actors: list[Actor] = []
        self._models: list[Any] = []
        #: set by an actor that failed or called for an abort; the loop stops at once
        self.abort_reason: BaseException | None = None
        self.aborting_actor: Actor | None = None
        #: consulted by :meth:`abort` first: when it returns True it has dealt with the failure
        #: (``smpy batch`` ends the failing job only) and the simulation goes on
        self.abort_handler: Callable[[BaseException, Actor | None], bool] | None = None
        self.stopping = False
        #: waits for the operating system (smpy.kernel.oswait), created on first use
        self.os_poller: Any = None
        self.rounds = 0
        self.events_processed = 0
        # extension points
        self.on_actor_start = Signal("actor_start")
        self.on_actor_end = Signal("actor_end")
        self.on_time_advance = Signal("time_advance")  # (old_now, new_now)
        self.on_end = Signal("end")

    # -- scheduling ---------------------------------------------------------------------
    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Run ``fn(*args)`` from the maestro ``delay`` seconds from now."""
        if delay < 0.0:
            delay = 0.0
        t = self.now + delay
        ev = _new_event(Event)  # Event(t, fn, args) without the __init__ frame (twice per message)
        ev.time = t
        ev.fn = fn
        ev.args = args
        ev.cancelled = False
        seq = self._seq = self._seq + 1
        heap = self._heap
        _heappush(heap, (t, seq, ev))
        if len(heap) > self._compact_at:
            self._compact_at = compact(heap)
        return ev

    def schedule_at(self, time: float, fn: Callable[..., Any], *args: Any) -> Event:
        return self.schedule(time - self.now, fn, *args)

    def schedule_daemon(self, delay: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Like :meth:`schedule`, for an event that must not keep the simulation alive."""
        t = self.now + max(delay, 0.0)
        ev = Event(t, fn, args)
        seq = self._seq = self._seq + 1
        _heappush(self._daemon_heap, (t, seq, ev))
        return ev

    def add_model(self, model: Any) -> None:
        """Register a model with an ``update()`` method called once per round when dirty.

        A model marks itself dirty by setting ``model.dirty = True``.
        """
        self._models.append(model)

    # -- actors -------------------------------------------------------------------------
    def add_actor(self, actor: Actor) -> None:
        self.actors.append(actor)
        self._ready.append(actor)

    def abort(self, reason: BaseException, actor: Actor | None = None) -> None:
        """Stop the simulation after the running actor yields (first reason wins), unless
        ``abort_handler`` takes the failure upon itself."""
        if self.abort_handler is not None and self.abort_reason is None and self.abort_handler(reason, actor):
            return
        if self.abort_reason is None:
            self.abort_reason = reason
            self.aborting_actor = actor
        self.stopping = True

    # -- the loop -----------------------------------------------------------------------
    def run(self, until: float | None = None) -> None:
        """Run until nothing is left to do (or ``until``, or an abort).

        Raises :class:`DeadlockError` when live actors are blocked and nothing can wake them.
        """
        heap = self._heap
        ready = self._ready
        models = self._models
        pop = heapq.heappop
        while not self.stopping:
            while ready:
                actor = ready.popleft()
                actor._resume()
                if self.stopping:
                    return
            for m in models:
                if m.dirty:
                    m.update()
            if ready:
                continue
            osp = self.os_poller
            if osp is not None and osp.waits and osp.poll(0.0):
                continue  # an OS event seen now happened now (smpy.kernel.oswait)
            # drop cancelled events at the top
            while heap and heap[0][2].cancelled:
                pop(heap)
            if not heap:
                if osp is not None and osp.waits:
                    osp.idle()  # only the outside can wake an actor: wait for it (wall time)
                    continue
                break
            t = heap[0][0]
            if self._daemon_heap and self._run_daemons(t, until):
                continue
            if until is not None and t > until:
                self._advance(until)
                return
            if t > self.now:
                if self.on_time_advance._slots:
                    self._advance(t)
                else:
                    self.now = t
            self.rounds += 1
            while heap and heap[0][0] <= t:
                ev = pop(heap)[2]
                if ev.cancelled:
                    continue
                self.events_processed += 1
                ev.fn(*ev.args)
        if self.stopping:
            return
        self._deadlock_check()

    def _deadlock_check(self) -> None:
        """The end of :meth:`run` with nothing left to do: live actors still blocked are a
        deadlock."""
        blocked = [(a, a.describe_wait()) for a in self.actors if a.alive and a.waiting_for is not None]
        if blocked:
            raise DeadlockError(self.now, blocked)

    def _run_daemons(self, t: float, until: float | None) -> bool:
        """Run the daemon events due strictly before the next regular event at ``t`` (all of
        one date, like a round; at equal dates the regular events run first); True when some
        ran, so the caller starts a new round."""
        dheap = self._daemon_heap
        pop = heapq.heappop
        while dheap and dheap[0][2].cancelled:
            pop(dheap)
        if not dheap:
            return False
        td = dheap[0][0]
        if td >= t or (until is not None and td > until):
            return False
        if td > self.now:
            self._advance(td)
        self.rounds += 1
        while dheap and dheap[0][0] <= td:
            ev = pop(dheap)[2]
            if not ev.cancelled:
                self.events_processed += 1
                ev.fn(*ev.args)
        return True

    def _advance(self, t: float) -> None:
        old = self.now
        self.now = t
        if self.on_time_advance:
            self.on_time_advance.emit(old, t)

    @property
    def pending_events(self) -> int:
        return sum(1 for _, _, ev in self._heap if not ev.cancelled)
