"""asyncio's per-thread and per-process state, per rank.

asyncio keeps the running event loop per OS thread (``_asyncio._set_running_loop``, in the
thread state) and the event-loop policy per process (``asyncio.events._event_loop_policy``,
whose default policy keeps the thread's current loop). All ranks share one OS thread, so
rank 1's ``asyncio.run()`` would see rank 0's running loop ("cannot be called from a running
event loop") and every rank would share one policy and one current loop. The rank contexts
(and those of the threads a rank starts) therefore swap both on every switch: each simulated
thread has its own running loop, each rank its own policy (created on first use, as in a
fresh process). A loop waiting in ``select`` lets the other ranks run through
:mod:`smpy.shim.coop`. Nothing is done until a rank imports asyncio.
"""

from __future__ import annotations

import sys
from typing import Any

#: the policy of the process outside the ranks (restored at every switch out)
_outside: list[Any] = [None]
_UNSET = object()


def events() -> Any:
    """``asyncio.events`` once imported, else None."""
    return sys.modules.get("asyncio.events")


def install() -> None:
    ev = events()
    _outside[0] = ev._event_loop_policy if ev is not None else None


def uninstall() -> None:
    ev = events()
    if ev is not None:
        ev._set_running_loop(None)
        ev._event_loop_policy = _outside[0]
    _outside[0] = None


class AioState:
    """One simulated thread's running loop and, for a rank's main thread, the rank's policy."""

    __slots__ = ("loop", "policy")

    def __init__(self) -> None:
        self.loop: Any = None
        self.policy: Any = _UNSET

    def switch_in(self, ev: Any) -> None:
        ev._set_running_loop(self.loop)
        if self.policy is not _UNSET:
            ev._event_loop_policy = self.policy
        else:
            ev._event_loop_policy = None  # a fresh process: the default policy on first use

    def switch_out(self, ev: Any) -> None:
        self.loop = ev._get_running_loop()
        self.policy = ev._event_loop_policy
        ev._set_running_loop(None)
        ev._event_loop_policy = _outside[0]

    def thread_in(self, ev: Any) -> None:
        """A thread of the rank switches in (after the rank's state): its own running loop."""
        ev._set_running_loop(self.loop)

    def thread_out(self, ev: Any, rank: AioState | None) -> None:
        """A thread switches out (before the rank's state is saved): give the rank's running
        loop back so that saving it keeps the rank's own."""
        self.loop = ev._get_running_loop()
        ev._set_running_loop(rank.loop if rank is not None else None)
