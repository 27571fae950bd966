r"""Compute measurement between MPI calls (SMPI's ``smpi_bench_begin/end``).

For each rank, the thread CPU time spent in the program between the return of one MPI
call and the entry of the next (a *burst*, :math:`t_\mathrm{cpu}`) is measured with
``time.thread_time()``. Time spent inside smpy is excluded: the timer restarts on every
return from an MPI call. At the next MPI call the burst becomes an execution of

.. math::

    F = \frac{t_\mathrm{cpu}}{\rho} \cdot S_\mathrm{ref}

flops on the rank's simulated host (``smpi/host-speed`` = :math:`S_\mathrm{ref}`, the flop
rate of the machine running the emulation; :math:`\rho` a per-region speed-up ratio, 1
until region factors arrive). It competes for the host's cores with co-located ranks
(:mod:`smpy.cpu.model`), so on an idle target core it lasts
:math:`t_\mathrm{cpu} S_\mathrm{ref} / (\rho\, s_\mathrm{target})`. Bursts shorter than
``smpi/cpu-threshold`` are dropped; ``smpi/simulate-computation:no`` drops all of them.

Programs that model a kernel instead of running it call :func:`execute_seconds` (seconds
on the target host at its current speed) or :func:`execute_flops`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.support.config import Config, declare, parse_bool, parse_float
from smpy.support.units import parse_speed

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

_thread_time = time.thread_time


def _parse_host_speed(text: str | float) -> float:
    if isinstance(text, str) and text.strip().lower() == "auto":
        return -1.0
    v = parse_speed(text)
    if not v > 0:
        raise ValueError("must be positive")
    return float(v)


HOST_SPEED = declare("smpi/host-speed", "1Gf",
                     "Flop rate of the machine running the emulation (measured CPU seconds x this = "
                     "flops injected on the target host); 'auto' measures it", parse=_parse_host_speed)
CPU_THRESHOLD = declare("smpi/cpu-threshold", 1e-6,
                        "Compute bursts shorter than this (s) are not simulated (<0: none are)",
                        parse=parse_float)
SIMULATE = declare("smpi/simulate-computation", True,
                   "Simulate the measured computation between MPI calls", parse=parse_bool)


def measure_host_speed(seconds: float = 0.2) -> float:
    """Flop rate of one core of this machine (numpy float64 matrix products, 1 thread)."""
    import numpy as np

    n = 128
    a = np.random.default_rng(0).random((n, n))
    b = a.copy()
    flops_per = 2.0 * n * n * n
    best = 0.0
    for _ in range(5):
        reps = 0
        t0 = _thread_time()
        while True:
            a @ b
            reps += 1
            dt = _thread_time() - t0
            if dt >= seconds / 5:
                break
        best = max(best, reps * flops_per / dt)
    return best


class RankBench:
    __slots__ = ("start", "measured_s", "simulated_flops", "bursts", "injected_s")

    def __init__(self) -> None:
        self.start = _thread_time()
        self.measured_s = 0.0
        self.simulated_flops = 0.0
        self.bursts = 0
        self.injected_s = 0.0


class Timing:
    """Per-run timing settings; each process gets a :class:`RankBench` in ``proc.bench``."""

    def __init__(self, world: World, config: Config) -> None:
        self.world = world
        speed = config.get(HOST_SPEED)
        self.ref_speed = measure_host_speed() if speed < 0 else speed
        thr = config.get(CPU_THRESHOLD)
        self.threshold = math.inf if thr < 0 else thr
        self.simulate = config.get(SIMULATE)
        self.cpu = world.cpu
        world.timing = self
        for p in world.processes:
            p.bench = RankBench()

    def flush(self, proc: Process) -> None:
        """End the current burst: simulate it (blocking), restart the timer."""
        b = proc.bench
        now = _thread_time()
        dt = now - b.start
        if dt > 0.0:
            b.measured_s += dt
            if self.simulate and dt >= self.threshold:
                flops = dt * self.ref_speed
                b.simulated_flops += flops
                b.bursts += 1
                ex = self.cpu.execute(proc.host, flops)
                if ex.state == 0:
                    block_on(ex)
                    now = _thread_time()  # the other ranks ran meanwhile
        b.start = now

    def restart(self, proc: Process) -> None:
        proc.bench.start = _thread_time()

    def execute_flops(self, proc: Process, flops: float) -> None:
        self.flush(proc)
        if flops > 0:
            proc.bench.injected_s += flops / proc.host.speed_flops
            ex = self.cpu.execute(proc.host, flops)
            if ex.state == 0:
                block_on(ex)
        self.restart(proc)

    def execute_seconds(self, proc: Process, seconds: float) -> None:
        """``seconds`` of computation on the target host at its current core speed."""
        self.execute_flops(proc, seconds * proc.host.speed_flops)

    def sleep(self, proc: Process, seconds: float) -> None:
        """Simulated sleep (the host stays idle)."""
        self.flush(proc)
        if seconds > 0:
            block_on(Sleep(self.world.engine, seconds))
        self.restart(proc)
