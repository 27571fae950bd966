"""The progress line of long emulations (on a terminal only).

Every half second of wall time (checked when the simulated clock advances), one line is
rewritten in place: simulated time reached, MPI calls made, wall time, events per second.
The line is erased at the end of the run.
"""

from __future__ import annotations

import time
from typing import IO, Any


class Progress:
    def __init__(self, world: Any, stream: IO[str], period: float = 0.5) -> None:
        self.world = world
        self.stream = stream
        self.period = period
        self.t0 = time.monotonic()
        self.next = self.t0 + period
        self.shown = False
        world.engine.on_time_advance.connect(self._tick)

    def _tick(self, old: float, new: float) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.period
        w = self.world
        calls = sum(p.mpi_calls for p in w.processes)
        wall = now - self.t0
        eps = w.engine.events_processed / wall if wall > 0 else 0.0
        self.stream.write(f"\r[smpy] simulated {new:.6g} s | {calls} MPI calls | wall {wall:.1f} s | "
                          f"{eps:,.0f} events/s   ")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
