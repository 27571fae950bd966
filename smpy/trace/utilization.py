r"""Utilisation and efficiency over time (``--report PREFIX``: ``PREFIX.utilization.csv``).

Four piecewise-constant functions of simulated time :math:`t` are followed exactly, from the
kernel's and the CPU model's signals and the MPI facade's call hooks (no sampling):

* the **allocated cores** :math:`A(t) = \sum_{h \in H(t)} c_h`, with :math:`H(t)` the nodes
  allocated at :math:`t` and :math:`c_h` their core counts: with the node pool
  (:mod:`smpy.runtime.nodes`, every run of smpyrun) a node is allocated from the moment a
  spawn or ``smpy.nodes.allocate`` takes it (its boot and the launch cost included) until
  its last process ends or it is released (``smpy batch``: a job holds its nodes from its
  start to its end, :meth:`smpy.runtime.nodes.NodePool.hold`); without one, the hosts on which at least one
  process (an initial rank or a spawned one) is alive;
* the **busy cores** :math:`B(t) = \sum_h b_h(t)`, with :math:`b_h = \sum_e r_e / s_h` the
  CPU model's load of host :math:`h` (the rates of its executions over the core speed: a
  computing rank holding a core counts 1, time-shared or bounded ones their share; see
  :mod:`smpy.cpu.model`);
* the **cores waiting in MPI** :math:`W(t) = \sum_h \min\big(w_h(t),\ c_h - b_h(t)\big)`,
  with :math:`w_h` the processes of host :math:`h` inside an (outermost) MPI call that run
  no execution at :math:`t` (blocked on communication or synchronisation; an execution
  counts when the process, or one of its helper actors, starts it inside an MPI call:
  polling, reduction operators; the bursts between calls run outside them); a waiting process
  only counts for a core the executions leave free, so :math:`B + W \le A` on hosts that run
  ranks, and :math:`A - B - W` is the idle rest (sleeps, start-up, unused cores);
* the **power** :math:`P(t) = \sum_h P_h(t)` of the hosts (with the ``host_energy`` plugin,
  :mod:`smpy.energy.host_energy`).

Each change at :math:`t_i` closes the interval :math:`[t_{i-1}, t_i)` on which the values held;
intervals of zero length are not stored, nor are repeated values. At the end of the run the
interval :math:`[t_0, T]` (start to makespan) is cut into bins of width :math:`\Delta`
(``--cfg=smpy/utilization-bin``: a duration, default :math:`(T - t_0)/100`), bin :math:`k`
being :math:`[t_0 + k\Delta,\ \min(t_0 + (k+1)\Delta, T))`, and every quantity is averaged
over each bin exactly:

.. math::

    \bar X_k = \frac{1}{|I_k|} \sum_i X_i\,\big|[t_{i-1}, t_i) \cap I_k\big|,
    \qquad \eta_k = \frac{\bar B_k}{\bar A_k}\ (0 \text{ when } \bar A_k = 0),

so :math:`\sum_k \bar B_k |I_k| = \int_{t_0}^{T} B\,dt`, the busy core-seconds (the ranks'
computation time when each execution holds a core), and :math:`\sum_k \bar P_k |I_k|` the
hosts' energy. The efficiency :math:`\eta_k` is the ratio of the bin's integrals (busy
core-seconds over allocated core-seconds), as the DPS simulator's efficiency over time.

Cost per event: one comparison and a few additions; an MPI call costs only at the
outermost level, an execution at its start and end, a load change once per host and round.
"""

from __future__ import annotations

import csv
import math
from array import array
from typing import Any

from smpy.kernel.actors import current_actor
from smpy.support.config import declare
from smpy.support.units import parse_time


def _bin_width(value: Any) -> float:
    text = str(value).strip()
    if not text:
        return 0.0
    width = parse_time(text)
    if not width > 0.0 or math.isinf(width):
        raise ValueError(f"the bin width must be a positive duration, got {text!r}")
    return width


BIN = declare("smpy/utilization-bin", "", "Width of the time bins of the utilisation over time "
              "(--report PREFIX writes PREFIX.utilization.csv: allocated, busy and MPI-waiting cores, "
              "efficiency, power per bin): a duration such as 10ms; empty: the makespan / 100",
              parse=_bin_width)

COLUMNS = ("t_start", "t_end", "allocated", "busy", "waiting_mpi", "efficiency", "power_W")


class Utilization:
    """Follows allocated, busy and MPI-waiting cores and the power over simulated time.

    ``processes``: the world's process list (``.host``; spawned processes are appended to
    it), ``energy``: the host energy plugin or None. Tracer protocol (``enter``/``exit``)
    for the MPI calls; the rest through the engine's and CPU model's signals.
    """

    def __init__(self, engine: Any, cpu: Any, hosts: list[Any], processes: list[Any],
                 energy: Any = None, nodes: Any = None) -> None:
        self.engine = engine
        self.processes = processes
        self.start = engine.now
        n = len(hosts)
        self._cores = [float(h.cores) for h in hosts]
        self._alive = [0] * n        # live processes per host
        self._load = [0.0] * n       # b_h
        self._blocked = [0] * n      # w_h
        self._wait = [0.0] * n       # min(w_h, c_h - b_h)
        self._power = [0.0] * n
        # per process (spawned ones are added when they first appear, see _grow)
        self._host: list[int] = []     # host index
        self._depth: list[int] = []    # MPI call nesting
        self._running: list[int] = []  # executions running
        self._execs: dict[int, int] = {}  # id(exec) -> process
        self._ptype = type(processes[0]) if processes else None
        self.alloc = self.busy = self.waiting = self.watts = 0.0
        self._t = engine.now
        #: closed intervals, five numbers each: start time, allocated, busy, waiting, power
        #: (the values that held from that time to the next interval's start)
        self.segments = array("d")
        self._last = (-1.0, -1.0, -1.0, -1.0)
        self._grow(len(processes) - 1)
        #: the node pool decides what is allocated (smpy.runtime.nodes), else the live processes
        self._nodes = nodes
        if nodes is not None:
            self.alloc = sum(c for i, c in enumerate(self._cores) if nodes.allocated(i))
            nodes.listeners.append(self._node_allocated)
        engine.on_actor_start.connect(self._actor_start)
        engine.on_actor_end.connect(self._actor_end)
        cpu.on_load_change.connect(self._load_change)
        cpu.on_exec_start.connect(self._exec_start)
        cpu.on_exec_end.connect(self._exec_end)
        if energy is not None:
            for r in energy.records:
                self._power[r.host.index] = r.power()
            self.watts = sum(self._power)
            energy.power_listeners.append(self._power_change)

    def _grow(self, rank: int) -> None:
        """Per-process state up to ``rank`` (processes spawned since the last call)."""
        procs = self.processes
        for r in range(len(self._host), rank + 1):
            self._host.append(procs[r].host.index)
            self._depth.append(0)
            self._running.append(0)

    # -- the step functions -------------------------------------------------------------
    def _close(self) -> None:
        """Store the interval that ends now (call before a value changes)."""
        now = self.engine.now
        t = self._t
        if now <= t:
            return
        self._t = now
        vals = (self.alloc, self.busy, self.waiting, self.watts)
        if vals != self._last:  # else the previous interval extends
            self._last = vals
            self.segments.append(t)
            self.segments.extend(vals)

    def _block(self, rank: int, delta: int) -> None:
        """Process ``rank`` starts (+1) or stops (-1) waiting in MPI without computing."""
        h = self._host[rank]
        if self.engine.now > self._t:
            self._close()
        blocked = self._blocked[h] + delta
        self._blocked[h] = blocked
        free = self._cores[h] - self._load[h]
        new = blocked if blocked <= free else (free if free > 0.0 else 0.0)
        old = self._wait[h]
        if new != old:
            self._wait[h] = new
            self.waiting += new - old

    # -- signals ----------------------------------------------------------------------
    def _actor_start(self, actor: Any) -> None:
        proc = actor.data
        if proc is None or getattr(proc, "actor", None) is not actor:
            return  # not a process's main actor (helpers, threads, daemons)
        if self._ptype is None:  # the first process of a world created empty (smpy batch)
            self._ptype = type(proc)
        if proc.rank >= len(self._host):
            self._grow(proc.rank)
        h = actor.host.index
        self._alive[h] += 1
        if self._alive[h] == 1 and self._nodes is None:
            self._close()
            self.alloc += self._cores[h]

    def _actor_end(self, actor: Any) -> None:
        proc = actor.data
        if proc is None or getattr(proc, "actor", None) is not actor:
            return
        h = actor.host.index
        self._alive[h] -= 1
        if self._alive[h] == 0 and self._nodes is None:
            self._close()
            self.alloc -= self._cores[h]
        rank = proc.rank
        if self._depth[rank] and not self._running[rank]:
            self._block(rank, -1)  # killed inside an MPI call
        self._depth[rank] = 0

    def _node_allocated(self, h: int, allocated: bool) -> None:
        """The node pool allocated (True) or freed node ``h``."""
        self._close()
        self.alloc += self._cores[h] if allocated else -self._cores[h]

    def _load_change(self, host: Any, busy: float) -> None:
        h = host.index
        if self.engine.now > self._t:
            self._close()
        self.busy += busy - self._load[h]
        self._load[h] = busy
        blocked = self._blocked[h]
        if blocked:  # the waiting processes may use the cores the executions leave
            free = self._cores[h] - busy
            new = blocked if blocked <= free else (free if free > 0.0 else 0.0)
            old = self._wait[h]
            if new != old:
                self._wait[h] = new
                self.waiting += new - old

    def _power_change(self, host: Any, time: float, watts: float) -> None:
        h = host.index
        if watts != self._power[h]:
            self._close()
            self.watts += watts - self._power[h]
            self._power[h] = watts

    def _exec_start(self, ex: Any) -> None:
        # only executions inside MPI calls change the waiting processes (computation bursts
        # between calls run at depth 0): those are followed to their end
        a = current_actor()
        if a is None or type(a.data) is not self._ptype:
            return
        rank = a.data.rank
        if rank >= len(self._host) or not self._depth[rank]:
            return
        self._execs[id(ex)] = rank
        n = self._running[rank]
        self._running[rank] = n + 1
        if n == 0:
            self._block(rank, -1)

    def _exec_end(self, ex: Any) -> None:
        if not self._execs:
            return
        rank = self._execs.pop(id(ex), None)
        if rank is None:
            return
        n = self._running[rank] - 1
        self._running[rank] = n
        if n == 0 and self._depth[rank]:
            self._block(rank, +1)

    # -- tracer protocol (smpy.mpi._call) ----------------------------------------------
    def enter(self, rank: int, name: str, frame: Any = None) -> None:
        try:
            d = self._depth[rank]
        except IndexError:
            self._grow(rank)
            d = 0
        self._depth[rank] = d + 1
        if d == 0 and not self._running[rank]:
            self._block(rank, +1)

    def exit(self, rank: int) -> None:
        try:
            d = self._depth[rank]
        except IndexError:
            return
        if d == 0:
            return
        self._depth[rank] = d - 1
        if d == 1 and not self._running[rank]:
            self._block(rank, -1)

    def send(self, src: int, dst: int, tag: int, nbytes: int) -> None:
        pass

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        pass

    # -- output -------------------------------------------------------------------------
    def bins(self, width: float = 0.0, end: float | None = None) -> list[tuple[float, ...]]:
        """Rows ``COLUMNS`` over ``[start, end]`` (default: now) in bins of ``width``
        seconds (0: the span / 100)."""
        self._close()
        t0 = self.start
        t_end = self.engine.now if end is None else end
        span = t_end - t0
        if span <= 0.0:
            return []
        if width <= 0.0:
            width = span / 100.0
        ratio = span / width
        # a span that is a whole number of bins up to rounding has no sliver of a last bin
        nbins = max(1, round(ratio) if abs(ratio - round(ratio)) <= 1e-9 * ratio else math.ceil(ratio))
        acc = [[0.0] * 4 for _ in range(nbins)]
        seg = self.segments
        n = len(seg) // 5
        for i in range(n):
            a = seg[5 * i]
            b = seg[5 * i + 5] if i + 1 < n else self._t
            _spread(acc, a - t0, min(b, t_end) - t0, width, seg[5 * i + 1:5 * i + 5])
        rows = []
        for k in range(nbins):
            lo = t0 + k * width
            hi = t_end if k == nbins - 1 else t0 + (k + 1) * width
            dt = hi - lo
            s = acc[k]
            alloc, busy, wait, watts = (x / dt for x in s) if dt > 0 else (0.0, 0.0, 0.0, 0.0)
            rows.append((lo, hi, alloc, busy, wait, s[1] / s[0] if s[0] > 0 else 0.0, watts))
        return rows

    def write(self, path: str, width: float = 0.0, end: float | None = None) -> list[tuple[float, ...]]:
        rows = self.bins(width, end)
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(COLUMNS)
            for row in rows:
                w.writerow([repr(x) for x in row])
        return rows

    @staticmethod
    def summary_line(rows: list[tuple[float, ...]]) -> str:
        """One line for the report's table: the mean efficiency over the run."""
        alloc = sum((r[1] - r[0]) * r[2] for r in rows)
        busy = sum((r[1] - r[0]) * r[3] for r in rows)
        wait = sum((r[1] - r[0]) * r[4] for r in rows)
        if alloc <= 0:
            return "[smpy report] utilisation: no cores allocated"
        return (f"[smpy report] utilisation: {alloc:.6g} allocated core-s, busy {busy / alloc:.1%} "
                f"(efficiency), waiting in MPI {wait / alloc:.1%}, over {len(rows)} bins")


def _spread(acc: list[list[float]], a: float, b: float, width: float, vals: Any) -> None:
    """Add ``vals`` times the overlap of ``[a, b)`` (relative to the start) with each bin."""
    if b <= a:
        return
    last = len(acc) - 1
    k = min(int(a // width), last)
    while a < b:
        hi = b if k == last else min(b, (k + 1) * width)
        d = hi - a
        if d > 0:
            row = acc[k]
            for j in range(4):
                row[j] += vals[j] * d
        a = hi
        k += 1
        if k > last:
            break
