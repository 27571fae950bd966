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

Python's garbage collections are the emulator's: their pauses leave the sampled iterations
they fall in (:mod:`smpy.timing.gcpause`), as the page faults that map folded memory leave
every timed span (:mod:`smpy.timing.folding`).

Programs that model a kernel instead of running it call :func:`execute_seconds` (seconds
on the target host at its current speed) or :func:`execute_flops`.

Untimed code (``smpy.untimed()``, SMPI's ``smpi_bench_end()`` ... ``smpi_bench_begin()``):
the bursts of a rank inside the block are not simulated (nor counted as measured), its MPI
calls still are. For the bookkeeping of an emulated program between MPI calls that the real
code does in well under ``smpi/cpu-threshold`` (loop and index arithmetic that costs tens of
microseconds in Python and nanoseconds in C), which would otherwise become a compute burst,
an event and a context switch per MPI call.

Regions
-------
A *region* is the code between two consecutive MPI calls of a rank, keyed as SMPI keys it:
``prevfile:prevline:file:line`` (file basenames unless
``smpi/trace-call-use-absolute-path``), the location of the previous MPI call and of the
current one. The location of a call is the frame ``smpy/region-depth`` levels above the
MPI call (1: its direct caller; more to attribute calls made through wrapper functions to the
application's call site). With ``smpi/comp-adjustment-file`` (SMPI's CSV: a header line, then
``"key",ratio``; the first entry of a key wins) the region's ratio is :math:`\rho` above:
its measured time is divided by it. A key ``*`` (an smpy extension) gives the ratio of the
regions the file does not list (default 1): ``smpy calibrate compute --program-wide`` writes
it, so that regions that appear only at other sizes get the program's ratio too. ``smpy/region-report:FILE`` writes, per region, the
number of bursts and their total measured and simulated seconds (the input of
``smpy calibrate compute``). Locations are computed only when one of these is set.

Memory fractions: an optional third column of the adjustment file (an smpy extension; SMPI
reads the first two fields of a line) is the region's memory-bound fraction :math:`f`. Its
bursts then execute with that fraction, and the host memory-contention model of
:mod:`smpy.cpu.model` slows them while other ranks of the host compute memory-bound code
(hosts with ``memory`` bandwidths only). ``*`` gives the fraction of unlisted regions, and of
the time :mod:`smpy.timing.sampling` injects for sampled loops, whose region is known only
at the next MPI call.
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.support.config import Config, checked, declare, parse_bool, parse_float, parse_int
from smpy.support.units import parse_speed
from smpy.timing import folding as _folding  # noqa: F401 - declares smpi/shared-malloc
from smpy.timing import gcpause as _gcpause
from smpy.timing import sampling as _sampling  # noqa: F401 - declares smpy/sample-estimator

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

_thread_time = time.thread_time


def _parse_host_speed(text: str | float) -> float:
    if isinstance(text, str) and text.strip().lower() == "auto":
        return -1.0
    v = parse_speed(text)
    if not 0 < v < math.inf:
        raise ValueError(f"expected a speed greater than 0 (or auto), found {text!r}")
    return float(v)


HOST_SPEED = declare("smpi/host-speed", "1Gf",
                     "Flop rate of the machine running the emulation (measured CPU seconds x this = "
                     "flops injected on the target host); 'auto' measures it", parse=_parse_host_speed)
CPU_THRESHOLD = declare("smpi/cpu-threshold", 1e-6,
                        "Compute bursts shorter than this (s) are not simulated (<0: none are)",
                        parse=checked(parse_float, math.isfinite, "a number of seconds"))
SIMULATE = declare("smpi/simulate-computation", True,
                   "Simulate the measured computation between MPI calls", parse=parse_bool)
ADJUST_FILE = declare("smpi/comp-adjustment-file", "",
                      "CSV of per-region speed-up ratios (header, then \"prevfile:prevline:file:line\",ratio); "
                      "a region's measured time is divided by its ratio")
ABSOLUTE_PATH = declare("smpi/trace-call-use-absolute-path", False,
                        "Region keys use absolute file paths instead of base names", parse=parse_bool)
REGION_DEPTH = declare("smpy/region-depth", 1,
                       "Frames above an MPI call that locate it (1: its caller; 2: the caller's caller, "
                       "to see through wrapper functions)",
                       parse=checked(parse_int, lambda v: 1 <= v <= 1000, "a depth from 1 to 1000"))
REGION_REPORT = declare("smpy/region-report", "",
                        "Write per-region compute statistics (CSV: key, bursts, measured s, simulated s) "
                        "to this file at the end of the run")


def read_adjustment_file(path: str, fractions: dict[str, float] | None = None) -> dict[str, float]:
    """SMPI's comp-adjustment CSV: header skipped, then ``"key",ratio``; first key wins. An
    optional third column (an smpy extension; SMPI reads two) is the region's memory-bound
    fraction, put in ``fractions`` when given."""
    import csv

    ratios: dict[str, float] = {}
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as err:
        raise ValueError(f"smpi/comp-adjustment-file: cannot read {path!r}: {err.strerror}") from None
    with fh:
        rows = csv.reader(fh, skipinitialspace=True)
        next(rows, None)
        for n, row in enumerate(rows, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 2:
                raise ValueError(f"{path}:{n}: expected '\"key\",ratio', found {','.join(row)!r}")
            try:
                ratio = float(row[1])
            except ValueError:
                raise ValueError(f"{path}:{n}: ratio {row[1]!r} is not a number") from None
            if not ratio > 0:
                raise ValueError(f"{path}:{n}: ratio must be positive, found {ratio}")
            key = row[0].strip()
            if key in ratios:
                continue
            ratios[key] = ratio
            if len(row) > 2 and row[2].strip() and fractions is not None:
                try:
                    fraction = float(row[2])
                except ValueError:
                    raise ValueError(f"{path}:{n}: memory fraction {row[2]!r} is not a number") from None
                if not 0.0 <= fraction <= 1.0:
                    raise ValueError(f"{path}:{n}: memory fraction must be within [0, 1], found {fraction}")
                fractions[key] = fraction
    return ratios


class Regions:
    """Per-rank call locations, per-region statistics and ratios (see the module docstring)."""

    def __init__(self, ratios: dict[str, float], absolute: bool, depth: int,
                 fractions: dict[str, float] | None = None) -> None:
        if depth < 1:
            raise ValueError(f"smpy/region-depth must be 1 or more, got {depth}")
        self.ratios = ratios
        #: ratio of the regions the file does not list (its "*" entry, an smpy extension; 1)
        self.default = ratios.get("*", 1.0)
        #: memory-bound fraction per region (third column, smpy extension; see smpy.cpu.model)
        self.fractions = fractions or {}
        self.default_fraction = self.fractions.get("*", 0.0)
        self.absolute = absolute
        self.depth = depth
        #: key -> [bursts, measured s, simulated s]
        self.stats: dict[str, list[float]] = {}
        self._names: dict[str, str] = {}

    def locate(self, proc: Process, frame: Any) -> None:
        """Record the location of the MPI call being entered (``frame`` is its caller)."""
        for _ in range(self.depth - 1):
            if frame.f_back is None:
                break
            frame = frame.f_back
        path = frame.f_code.co_filename
        name = self._names.get(path)
        if name is None:
            name = path if self.absolute else os.path.basename(path)
            name = self._names[path] = name.replace(" ", "_")
        b = proc.bench
        b.prev_loc = b.loc
        b.loc = f"{name}:{frame.f_lineno}"

    def key(self, proc: Process) -> str:
        b = proc.bench
        return f"{b.prev_loc}:{b.loc}"

    def write_report(self, path: str) -> None:
        import csv

        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
            w.writerow(["region", "bursts", "measured_s", "simulated_s", "ratio", "memory_fraction"])
            for key in sorted(self.stats):
                n, measured, simulated = self.stats[key]
                w.writerow([key, int(n), measured, simulated, self.ratios.get(key, self.default),
                            self.fractions.get(key, self.default_fraction)])


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
    __slots__ = ("start", "measured_s", "simulated_flops", "bursts", "injected_s", "loc", "prev_loc",
                 "sampling", "faults0", "shared0", "untimed")

    def __init__(self) -> None:
        self.start = _thread_time()
        #: the thread's minor page faults and the process's resident shared pages when the
        #: burst started (global folding only: see Folder.fault_seconds)
        self.faults0 = 0
        self.shared0 = 0
        self.measured_s = 0.0
        self.simulated_flops = 0.0
        self.bursts = 0
        self.injected_s = 0.0
        #: location of the last MPI call and of the one before (regions)
        self.loc = "<start>:0"
        self.prev_loc = "<start>:0"
        #: the key of the smpy.sample loop running, if any (no MPI call allowed inside)
        self.sampling: str | None = None
        #: depth of smpy.untimed() blocks: their bursts are dropped (see the module docstring)
        self.untimed = 0


class Timing:
    """Per-run timing settings; each process gets a :class:`RankBench` in ``proc.bench``."""

    # read at every MPI call (issue 24): slots; the others stay in the instance dict
    __slots__ = ("measure", "simulate", "__dict__", "__weakref__")

    def __init__(self, world: World, config: Config) -> None:
        self.world = world
        speed = config.get(HOST_SPEED)
        self.ref_speed = measure_host_speed() if speed < 0 else speed
        thr = config.get(CPU_THRESHOLD)
        self.threshold = math.inf if thr < 0 else thr
        self.simulate = config.get(SIMULATE)
        self.cpu = world.cpu
        adjust = str(config.get(ADJUST_FILE))
        self.report_path = str(config.get(REGION_REPORT))
        self.regions: Regions | None = None
        if adjust or self.report_path:
            fractions: dict[str, float] = {}
            self.regions = Regions(read_adjustment_file(adjust, fractions) if adjust else {},
                                   bool(config.get(ABSOLUTE_PATH)), int(config.get(REGION_DEPTH)),
                                   fractions)
        #: whether bursts are measured at all: with computation not simulated and no region
        #: statistics asked for, the two CPU-clock reads per MPI call (a system call each,
        #: 1-10 us) are skipped and ``measured_s`` stays 0
        self.measure = bool(self.simulate) or self.regions is not None
        #: smpy.sample statistics, by sample key (see smpy.timing.sampling)
        self.samples: dict[str, Any] = {}
        self._config = config
        self._folder: Any = None
        #: bursts count the thread's page faults (folded-memory trimming is on)
        self.count_faults = False
        world.timing = self
        for p in world.processes:
            p.bench = RankBench()
        # garbage collections leave the sampled iterations (smpy.timing.gcpause); not on a fake clock
        _gcpause.install(_thread_time is time.thread_time)

    @property
    def config(self) -> Config:
        """The run's settings (for the timing modules that declare their own)."""
        return self._config

    def flush(self, proc: Process, mark: bool = True) -> None:
        """End the current burst: simulate it (blocking), restart the timer. With folded
        memory's page-fault count the timer restarts through :meth:`mark_faults`, unless
        ``mark`` is false: the MPI call wrappers (``smpy.mpi._call._hooked`` and its compiled
        twin) pass False, since the call's exit marks the faults again (the mark at the entry
        was overwritten: 2.18 marks per swap message instead of 1.18); the rank switch of
        :meth:`mark_faults` (a trim when others ran while the burst blocked) still happens."""
        b = proc.bench
        mem = self.world.memory
        if mem is not None:  # the rank's resident memory now (smpy.runtime.memory)
            mem.sample(proc)
        if self.count_faults and not b.untimed:  # (an untimed burst is dropped: no count)
            start = b.start
            now = _thread_time()
            # the faults that mapped folded pages are the emulator's cost, not the program's:
            # their time (calibrated per fault) leaves the burst
            folder = self._folder
            faults, shared = folder.mark()
            dt = folder.fault_seconds(faults - b.faults0, shared - b.shared0)
            b.start = _thread_time() - max(0.0, now - start - dt)
        if b.sampling is not None:  # SMPI aborts: "Cannot do recursive benchmarks"
            raise RuntimeError(f"MPI call inside the sampled loop {b.sampling}: smpy.sample loops "
                               "and smpy.sampled functions must not call MPI")
        if not self.measure:
            return
        now = _thread_time()
        dt = now - b.start
        if dt > 0.0 and not b.untimed:
            b.measured_s += dt
            regions = self.regions
            memory = 0.0
            if regions is not None:
                key = regions.key(proc)
                ratio = regions.ratios.get(key, regions.default)
                if regions.fractions:
                    memory = regions.fractions.get(key, regions.default_fraction)
                st = regions.stats.get(key)
                if st is None:
                    st = regions.stats[key] = [0, 0.0, 0.0]
                st[0] += 1
                st[1] += dt
                dt /= ratio
                if self.simulate and dt >= self.threshold:
                    st[2] += dt
            if self.simulate and dt >= self.threshold:
                if self._burst(proc, dt, memory):
                    now = _thread_time()  # the other ranks ran meanwhile
        b.start = now
        if self.count_faults:
            if mark:
                self.mark_faults(proc)
            else:  # the exit marks; a rank switch (others ran while the burst blocked) is
                # seen here as before, so that the trims are the same
                folder = self._folder
                if folder.trim_limit and proc.rank != folder.running:
                    folder.switch(proc.rank)

    def set_untimed(self, proc: Process, on: bool) -> None:
        """Enter (``on``) or leave an ``smpy.untimed()`` block of ``proc``: the burst up to
        here ends (simulated when it was timed, dropped when it ran inside the block)."""
        b = proc.bench
        if b.sampling is not None:
            raise RuntimeError(f"smpy.untimed inside the sampled loop {b.sampling}: a sampled "
                               "loop's body is timed by the sampling")
        self.flush(proc)
        b.untimed += 1 if on else -1
        if not b.untimed and self.count_faults:  # a timed burst starts: its faults count
            self.mark_faults(proc)

    def _burst(self, proc: Process, seconds: float, memory: float = 0.0) -> bool:
        """Execute ``seconds`` of this machine's computation on the rank's host (``memory``: its
        memory-bound fraction); True when the rank blocked (other ranks ran meanwhile)."""
        b = proc.bench
        flops = seconds * self.ref_speed
        b.simulated_flops += flops
        if self.world.ti is not None:
            self.world.ti.compute(proc.rank, flops)
        b.bursts += 1
        ex = self.cpu.execute(proc.host, flops, memory=memory)
        if ex.state == 0:
            block_on(ex)
            return True
        return False

    def inject_measured(self, proc: Process, seconds: float) -> None:
        """SMPI's ``smpi_execute``: ``seconds`` of this machine's time (× ``smpi/host-speed``
        flops on the target host), dropped below ``smpi/cpu-threshold``; the timer restarts."""
        if self.simulate and seconds >= self.threshold and seconds > 0.0:
            # the region of a sampled loop is known only at the next MPI call: the program's
            # default memory fraction (the factor file's "*") applies
            self._burst(proc, seconds, self.regions.default_fraction if self.regions is not None else 0.0)
        self.restart(proc)

    def folder(self) -> Any:
        """The run's memory folder (smpy.shared_array), created on first use."""
        if self._folder is None:
            from smpy.timing.folding import BLOCKSIZE, SHARED_MALLOC, TRIM, Folder

            self._folder = Folder(self._config.get(SHARED_MALLOC), self._config.get(BLOCKSIZE),
                                  self._config.get(TRIM))
        return self._folder

    def shared_array(self, proc: Process, shape: Any, dtype: Any, site: tuple[str, int],
                     shared: list[tuple[int, int]] | None) -> Any:
        """smpy.shared_array on ``proc``: a folded array from the run's folder. Making it (the
        mappings, and the fault calibration the first time) is the emulator's time: it
        leaves the burst, and so do its page faults."""
        t0 = _thread_time()
        folder = self.folder()
        b = proc.bench
        mark = folder.mark() if folder.counting else (0, 0)
        arr = folder.array(shape, dtype, site, shared, proc.rank)
        if self.measure:
            b.start += _thread_time() - t0
        if folder.counting:
            faults, pages = folder.mark()
            if not self.count_faults:  # from now on, every burst counts its folded faults:
                # this one started before the count (all but the creation's are its own)
                self.count_faults = True
                b.faults0, b.shared0 = mark
            b.faults0 += faults - mark[0]
            b.shared0 += pages - mark[1]
        return arr

    def end_of_rank(self, proc: Process) -> None:
        """The program of ``proc`` returned: its last burst is the region ``...:<end>:0``."""
        b = proc.bench
        b.sampling = None
        if self.regions is not None:
            b.prev_loc, b.loc = b.loc, "<end>:0"
        self.flush(proc)
        if self.world.memory is not None:
            self.world.memory.release(proc)

    def finish(self) -> None:
        """End of the run: write the region report if one was asked for."""
        if self.regions is not None and self.report_path:
            self.regions.write_report(self.report_path)
        if self._folder is not None:
            self._folder.close()

    def restart(self, proc: Process) -> None:
        if self.measure:
            proc.bench.start = _thread_time()
            if self.count_faults:
                self.mark_faults(proc)

    def mark_faults(self, proc: Process) -> None:
        """A burst starts (the end of an MPI call, its timer just started): trim the other
        ranks' folded mappings if the process maps too many (:meth:`Folder.switch`), note the
        thread's page faults and the process's resident shared pages, and restart the timer:
        neither is the program's time."""
        folder = self._folder
        b = proc.bench
        if folder.trim_limit and proc.rank != folder.running:  # (switch's own first test)
            folder.switch(proc.rank)
        if not b.untimed:  # an untimed burst is dropped whole: nothing to count (see set_untimed)
            b.faults0, b.shared0 = folder.mark()
        if self.measure:
            b.start = _thread_time()

    def map_for_sample(self, proc: Process) -> None:
        """Sampled iterations of ``proc`` are about to be timed (outside any timed span): its
        folded pages get their page-table entries (:meth:`Folder.map_rank`), as a real
        rank's memory has them."""
        if self.count_faults:
            self._folder.map_rank(proc.rank)

    def faults_now(self) -> tuple[int, int]:
        """The start of a timed span for :meth:`folded_fault_seconds` ((0, 0) when bursts do
        not count faults)."""
        return self._folder.mark() if self.count_faults else (0, 0)

    def folded_fault_seconds(self, mark: tuple[int, int]) -> float:
        """CPU time of the faults that mapped folded pages since ``mark`` (to leave out of a
        timed span; see Folder.fault_seconds)."""
        if not self.count_faults:
            return 0.0
        return self._folder.fault_seconds_since(mark)

    def execute_flops(self, proc: Process, flops: float) -> None:
        self.flush(proc)
        if flops > 0:
            proc.bench.injected_s += flops / proc.host.speed_flops
            if self.world.ti is not None:
                self.world.ti.compute(proc.rank, flops)
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
            if self.world.ti is not None:
                self.world.ti.line(proc.rank, f"sleep {seconds!r}")
            block_on(Sleep(self.world.engine, seconds))
        self.restart(proc)
