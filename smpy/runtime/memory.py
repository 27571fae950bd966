r"""The resident memory of the ranks, per host, for the memory-capacity model.

The model is :mod:`smpy.cpu.memory` (UniMPP: a host whose ranks occupy :math:`M` bytes
computes :math:`1 + \alpha(M)` times slower; beyond RAM + swap the job is killed). This
module keeps :math:`M` for every host that declares ``ram``:

.. math::

    M_h = \sum_{r \text{ on } h} (H_r + D_r + F_r)

with :math:`H_r` the bytes of numpy data rank :math:`r` holds in its per-rank heap
(:mod:`smpy.shim.rankheap` counts each block's size, header included, under the rank that
allocated it, until it is freed), :math:`D_r` the bytes it declared with
``smpy.set_memory(nbytes)`` (what smpy cannot see: Python objects, C extensions' buffers) and
:math:`F_r` its folded arrays (``smpy.shared_array``: garbage shared by all ranks in the
emulator, but a real rank holds its own copy). :math:`H_r` is read when the rank's
computation burst ends (at each MPI call, file access, ``smpy.execute``), so the slowdown is
piecewise constant between a rank's calls. A rank that ends releases its memory.

When :math:`M_h` changes, the host's ``memory_slowdown`` is updated (the CPU model divides
the rates of its executions by it), the page caches of the host's local file systems are
limited to the free memory :math:`\max(0, R_h - M_h)` (:func:`smpy.cpu.memory.free_ram`),
and when :math:`M_h > R_h + S_h` the rank whose growth went over raises
:class:`smpy.cpu.memory.OutOfMemory`, which ends the run (exit status 137).

Nothing is kept, and nothing costs, when no host declares ``ram``: ``world.memory`` is None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.cpu.memory import OutOfMemory, free_ram, over, slowdown

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

__all__ = ["MemoryAccounting", "install", "report"]

_HEAP, _DECLARED, _FOLDED = 0, 1, 2


class MemoryAccounting:
    """Per-rank resident bytes (heap, declared, folded) and per-host totals of a run."""

    def __init__(self, world: World) -> None:
        self.world = world
        #: rank -> [heap, declared, folded] bytes
        self.ranks: dict[int, list[float]] = {}
        #: host name -> bytes occupied by its ranks, and the peak
        self.used: dict[str, float] = {}
        self.peak: dict[str, float] = {}
        #: numpy bytes a rank holds (set by the launcher when per-rank heaps count them)
        self.heap_bytes: Callable[[int], int] | None = None
        #: called with (host name, free RAM) when a host's free memory changes (page caches)
        self.on_free: list[Callable[[str, float], None]] = []

    def sample(self, proc: Process) -> None:
        """Read the rank's heap (end of a computation burst)."""
        fn = self.heap_bytes
        if fn is not None and proc.host.ram != math.inf:
            self._set(proc, _HEAP, float(fn(proc.rank)))

    def declare(self, proc: Process, nbytes: float) -> None:
        """``smpy.set_memory(nbytes)``: the rank holds ``nbytes`` smpy does not see."""
        if not (nbytes >= 0 and math.isfinite(nbytes)):
            raise ValueError(f"smpy.set_memory: expected a number of bytes, zero or more, got {nbytes!r}")
        self._set(proc, _DECLARED, float(nbytes))

    def folded(self, proc: Process, nbytes: float) -> None:
        """A folded array of ``nbytes`` was made by the rank (``smpy.shared_array``)."""
        row = self.ranks.get(proc.rank)
        self._set(proc, _FOLDED, (row[_FOLDED] if row else 0.0) + nbytes)

    def release(self, proc: Process) -> None:
        """The rank ended: its memory is free again."""
        row = self.ranks.get(proc.rank)
        if row is not None and proc.host.ram != math.inf:
            self._apply(proc, -sum(row))
            row[:] = [0.0, 0.0, 0.0]

    def free(self, host_name: str) -> float:
        """Free main memory of a host (inf when it declares no ``ram``)."""
        return free_ram(self.used.get(host_name, 0.0), self.world.platform.host(host_name).ram)

    def rank_bytes(self, rank: int) -> float:
        row = self.ranks.get(rank)
        return sum(row) if row else 0.0

    def _set(self, proc: Process, kind: int, value: float) -> None:
        if proc.host.ram == math.inf:
            return
        row = self.ranks.get(proc.rank)
        if row is None:
            row = self.ranks[proc.rank] = [0.0, 0.0, 0.0]
        delta = value - row[kind]
        if delta == 0.0:
            return
        row[kind] = value
        self._apply(proc, delta)
        if delta > 0 and over(self.used[proc.host.name], proc.host.ram, proc.host.swap):
            raise self._oom(proc.host)

    def _apply(self, proc: Process, delta: float) -> None:
        host = proc.host
        used = self.used[host.name] = max(0.0, self.used.get(host.name, 0.0) + delta)
        if used > self.peak.get(host.name, 0.0):
            self.peak[host.name] = used
        factor = slowdown(used, host.ram, host.swap, host.swap_curve)
        if factor != host.memory_slowdown:
            host.memory_slowdown = factor
            self.world.cpu.host_changed(host)
        for fn in self.on_free:
            fn(host.name, free_ram(used, host.ram))

    def _oom(self, host: Any) -> OutOfMemory:
        procs = [p for p in self.world.processes if p.host is host and p.rank in self.ranks]
        per_rank = {p.rank: self.rank_bytes(p.rank) for p in procs if self.rank_bytes(p.rank) > 0}
        return OutOfMemory(host.name, sorted(per_rank), self.used[host.name], host.ram, host.swap,
                           per_rank)


def install(world: World) -> MemoryAccounting | None:
    """``world.memory`` for a platform where some host declares ``ram`` (else None)."""
    if not any(h.ram != math.inf for h in world.platform.hosts):
        world.memory = None
        return None
    acc = world.memory = MemoryAccounting(world)
    return acc


def report(world: World) -> dict[str, Any]:
    """For ``--report``: per host with ``ram`` (that ranks used), its RAM, swap, peak
    occupancy and the slowdown at that peak (bytes; empty when no host declares ``ram``)."""
    acc = getattr(world, "memory", None)
    if acc is None:
        return {}
    hosts = {}
    for h in world.platform.hosts:
        if h.ram != math.inf and h.name in acc.peak:
            peak = acc.peak[h.name]
            hosts[h.name] = {"ram": h.ram, "swap": h.swap, "peak_bytes": peak,
                             "peak_slowdown": slowdown(peak, h.ram, h.swap, h.swap_curve)}
    return {"hosts": hosts}


def summary_line(data: dict[str, Any]) -> str:
    """One line for the terminal: the host whose memory filled most (:func:`report`)."""
    hosts = data.get("hosts", {})
    if not hosts:
        return "[smpy] memory: no rank memory on the hosts with ram"
    name, h = max(hosts.items(), key=lambda kv: kv[1]["peak_bytes"] / kv[1]["ram"])
    return (f"[smpy] memory: fullest host {name}, peak {h['peak_bytes'] / 2**20:.6g} MiB of "
            f"{h['ram'] / 2**20:.6g} MiB RAM + {h['swap'] / 2**20:.6g} MiB swap, computing "
            f"{h['peak_slowdown']:.6g} times slower there (--report JSON: memory)")
