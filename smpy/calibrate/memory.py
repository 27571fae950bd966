r"""``smpy calibrate memory``: this machine's memory bandwidth, one core alone and all at once.

The model it feeds: a host's cores share one memory system. Streaming alone, a core gets
:math:`b_1` bytes/s (the per-core bandwidth); with every core streaming, the host as a whole
moves at most :math:`B` bytes/s (the aggregate bandwidth). When :math:`k` cores of the host
run memory-bound code at the same time, they ask for :math:`k b_1` and get at most :math:`B`,
so the memory-bound part of each of them takes longer by

.. math::

    \sigma(k) = \max\left(1, \frac{k\, b_1}{B}\right)

(no slowdown while :math:`k b_1 \le B`; beyond that the :math:`k` cores split :math:`B`).
In a platform YAML, on a host or cluster::

    memory: {bandwidth: 34.2GBps, core_bandwidth: 21.7GBps}

(``GBps`` = 10\ :sup:`9` bytes per second.)

Measurement: a STREAM-like triad ``a = b + s*c`` on float64 arrays of ``--elements``
elements (default 8 Mi elements = 64 MiB per array, so the three arrays are far larger than
a last-level cache), done with numpy ufuncs writing in place (no temporaries)::

    np.multiply(c, s, out=a)   # reads c, writes a: 2 arrays
    np.add(a, b, out=a)        # reads a and b, writes a: 3 arrays

so one repetition is counted as moving ``5 * 8 * elements`` bytes. This counts what the
program reads and writes; the hardware moves more (a write miss usually first reads the
line: write-allocate), so :math:`b_1` and :math:`B` are both "program bytes" rates. The
same counting is used alone and concurrently, and the model only uses the ratio
:math:`k b_1 / B`, so the convention cancels out.

Phases: first one process streams alone (:math:`b_1` = bandwidth from its median
repetition time); then ``-np`` processes stream at once, each an OS process of its own
(multiprocessing, spawn start method, single-threaded BLAS), meeting at a barrier before
every repetition so that they stream together (:math:`B` = sum over the processes of the
bandwidth from each one's median repetition time). Each phase lasts ``--seconds`` (or
``--reps`` repetitions); the pair of phases is repeated ``--rounds`` times and the median
over rounds is kept, because a shared machine is noisy. If noise makes :math:`B` come out
above ``np`` × :math:`b_1` (no contention seen) or below :math:`b_1`, it is clamped to that
range, and the command says so. Processes are not pinned; ``-np`` should be the number of
cores of the host (the default, ``os.cpu_count()``, counts hardware threads).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from smpy.support.units import format_byte_rate

#: float64
ITEM_BYTES = 8
#: arrays' worth of bytes one triad repetition reads and writes (see the module docstring)
ARRAYS_MOVED = 5
#: repetitions per phase at least, in --seconds mode (a median needs a few)
MIN_REPS = 3
DEFAULT_ELEMENTS = 8 * 1024 * 1024
MIN_ELEMENTS = 1000
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# -- pure helpers ---------------------------------------------------------------------------

def triad_bytes(elements: int) -> int:
    """Bytes counted for one triad repetition on arrays of ``elements`` float64."""
    return ARRAYS_MOVED * ITEM_BYTES * elements


@dataclass(frozen=True)
class Estimate:
    """The result: ``core_bandwidth`` :math:`b_1` and ``bandwidth`` :math:`B` in bytes/s."""

    core_bandwidth: float
    bandwidth: float
    nprocs: int
    #: :math:`B` as measured (median over rounds), before clamping to [b1, nprocs * b1]
    measured_bandwidth: float
    #: per round: (b1, B unclamped)
    rounds: tuple[tuple[float, float], ...] = ()

    @property
    def clamped(self) -> bool:
        return self.bandwidth != self.measured_bandwidth

    @property
    def sigma(self) -> float:
        """Slowdown of the memory-bound part with all ``nprocs`` cores streaming."""
        return max(1.0, self.nprocs * self.core_bandwidth / self.bandwidth)


def bandwidths(single_times: Sequence[Sequence[float]],
               multi_times: Sequence[Sequence[Sequence[float]]], nbytes: float) -> Estimate:
    """(b1, B) from repetition times in seconds, ``nbytes`` moved per repetition.

    ``single_times[r]``: the times of the lone process in round ``r``;
    ``multi_times[r][p]``: the times of process ``p`` of the concurrent phase of round ``r``.
    Per round, b1 = nbytes / median(single) and B = sum over p of nbytes / median(times of p);
    the result is the median over rounds of each, then B clamped to [b1, P * b1].
    """
    if not single_times or len(single_times) != len(multi_times):
        raise ValueError("need the same number (>= 1) of single and concurrent rounds")
    nprocs = len(multi_times[0])
    if nprocs < 1 or any(len(m) != nprocs for m in multi_times):
        raise ValueError("every concurrent round needs the same number (>= 1) of processes")
    per_round = []
    for single, multi in zip(single_times, multi_times):
        times = [single, *multi]
        if any(not t or min(t) <= 0.0 for t in times):
            raise ValueError("repetition times must be non-empty and positive")
        b1 = nbytes / statistics.median(single)
        total = sum(nbytes / statistics.median(t) for t in multi)
        per_round.append((b1, total))
    b1 = statistics.median(r[0] for r in per_round)
    measured = statistics.median(r[1] for r in per_round)
    return Estimate(core_bandwidth=b1, bandwidth=min(max(measured, b1), nprocs * b1),
                    nprocs=nprocs, measured_bandwidth=measured, rounds=tuple(per_round))


def yaml_fragment(est: Estimate) -> str:
    return (f"memory: {{bandwidth: {format_byte_rate(est.bandwidth)}, "
            f"core_bandwidth: {format_byte_rate(est.core_bandwidth)}}}\n")


# -- the streaming processes ----------------------------------------------------------------

def _stream(np: Any, a: Any, b: Any, c: Any, seconds: float, reps: int | None,
            barrier: Any, stop: Any, leader: bool) -> list[float]:
    """Triad repetitions; with a ``barrier``, every repetition starts together in all the
    processes, and the ``leader`` decides for all when to stop (``stop`` is written between
    two barriers, so every process reads the same value)."""
    scalar = 3.0
    times: list[float] = []
    start = time.perf_counter()
    while True:
        if barrier is not None:
            barrier.wait()
        t0 = time.perf_counter()
        np.multiply(c, scalar, out=a)
        np.add(a, b, out=a)
        times.append(time.perf_counter() - t0)
        if reps is not None:
            done = len(times) >= reps
        else:
            done = len(times) >= MIN_REPS and time.perf_counter() - start >= seconds
        if barrier is None:
            if done:
                return times
            continue
        if leader:
            stop.value = 1 if done else 0
        barrier.wait()
        if stop.value:
            return times


def _worker(index: int, elements: int, conn: Connection, barrier: Any, stop: Any) -> None:
    """One streaming process: allocate and touch its arrays, then run the phases it is sent
    (``(seconds, reps, concurrent)``; ``None`` ends it), answering with its repetition times."""
    try:
        for var in _BLAS_VARS:
            os.environ[var] = "1"
        import numpy as np

        a = np.zeros(elements)
        b = np.full(elements, 1.0)
        c = np.full(elements, 2.0)
        np.multiply(c, 3.0, out=a)  # touches a: no page faults while timing
        np.add(a, b, out=a)
        conn.send(("ready", None))
        while True:
            cmd = conn.recv()
            if cmd is None:
                return
            seconds, reps, concurrent = cmd
            times = _stream(np, a, b, c, seconds, reps, barrier if concurrent else None, stop,
                            index == 0)
            conn.send(("times", times))
    except BaseException as exc:  # reported to the parent, which stops the run
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class WorkerError(RuntimeError):
    pass


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    """The BLAS thread-count variables at 1 while child processes start (they inherit it),
    without changing this process for good."""
    saved = {v: os.environ.get(v) for v in _BLAS_VARS}
    os.environ.update(dict.fromkeys(_BLAS_VARS, "1"))
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


class _Pool:
    """``nprocs`` streaming processes, started once and reused by every phase."""

    def __init__(self, nprocs: int, elements: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.barrier = ctx.Barrier(nprocs)
        self.stop = ctx.RawValue("b", 0)
        self.procs: list[Any] = []
        self.conns: list[Connection] = []
        with _single_thread_env():
            for i in range(nprocs):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker, args=(i, elements, child, self.barrier, self.stop),
                                   name=f"smpy-memory-{i}", daemon=True)
                proc.start()
                child.close()  # so that a dead worker's pipe reads as EOF here
                self.procs.append(proc)
                self.conns.append(parent)
        try:
            self._collect(range(nprocs), "ready")
        except BaseException:
            self.close(abort=True)
            raise

    def _collect(self, indices: Sequence[int] | range, expect: str) -> list[Any]:
        pending = {self.conns[i]: i for i in indices}
        out: dict[int, Any] = {}
        while pending:
            for conn in wait(list(pending)):
                i = pending.pop(conn)
                try:
                    kind, payload = conn.recv()
                except EOFError:
                    raise WorkerError(f"streaming process {i} died (out of memory?)") from None
                if kind == "error":
                    raise WorkerError(f"streaming process {i}: {payload}")
                if kind != expect:
                    raise WorkerError(f"streaming process {i}: sent {kind!r}, expected {expect!r}")
                out[i] = payload
        return [out[i] for i in indices]

    def phase(self, nprocs: int, seconds: float, reps: int | None) -> list[list[float]]:
        """Repetition times of processes 0..nprocs-1 streaming at once (1: alone)."""
        for conn in self.conns[:nprocs]:
            conn.send((seconds, reps, nprocs > 1))
        return self._collect(range(nprocs), "times")

    def close(self, abort: bool = False) -> None:
        if abort:
            with contextlib.suppress(Exception):
                self.barrier.abort()
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=None if not abort else 5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        for conn in self.conns:
            conn.close()


def measure(nprocs: int, elements: int, seconds: float, reps: int | None, rounds: int,
            log: Any = None) -> Estimate:
    """Run the rounds of (1 process, ``nprocs`` processes) and estimate (b1, B)."""
    nbytes = triad_bytes(elements)
    pool = _Pool(nprocs, elements)
    ok = False
    try:
        singles: list[list[float]] = []
        multis: list[list[list[float]]] = []
        for r in range(rounds):
            singles.append(pool.phase(1, seconds, reps)[0])
            multis.append(pool.phase(nprocs, seconds, reps) if nprocs > 1 else [singles[-1]])
            if log is not None:
                b1, total = bandwidths([singles[-1]], [multis[-1]], nbytes).rounds[0]
                log(f"round {r + 1}/{rounds}: 1 process {format_byte_rate(b1)} "
                    f"({len(singles[-1])} reps), {nprocs} processes {format_byte_rate(total)} "
                    f"in total ({min(len(m) for m in multis[-1])} reps)")
        ok = True
    finally:
        pool.close(abort=not ok)
    return bandwidths(singles, multis, nbytes)


# -- command line ---------------------------------------------------------------------------

def _int_at_least(low: int) -> Any:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, found {value}")
        return value
    return convert


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not value > 0.0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0, found {text}")
    return value


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _last_level_cache() -> int | None:
    """Size in bytes of cpu0's largest cache (Linux sysfs: '32768K'), or None."""
    sizes = []
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        with contextlib.suppress(OSError, ValueError):
            text = (d / "size").read_text().strip()
            scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
            sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes) if sizes else None


def main(argv: list[str] | None = None) -> int:
    from smpy.support.units import format_size

    ap = argparse.ArgumentParser(prog="smpy calibrate memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("-np", dest="np", type=_int_at_least(1), default=os.cpu_count() or 1,
                    help="processes streaming at once: the host's cores (default: os.cpu_count())")
    ap.add_argument("--elements", type=_int_at_least(MIN_ELEMENTS), default=DEFAULT_ELEMENTS,
                    help=f"float64 elements per array, 3 arrays per process (default: "
                         f"{DEFAULT_ELEMENTS} = 64 MiB per array); well beyond the last-level cache")
    ap.add_argument("--seconds", type=_positive_float, default=3.0,
                    help="length of each phase (default: 3)")
    ap.add_argument("--reps", type=_int_at_least(1), default=None,
                    help="repetitions per phase, instead of --seconds")
    ap.add_argument("--rounds", type=_int_at_least(1), default=3,
                    help="rounds of (1 process, -np processes); the median is kept (default: 3)")
    ap.add_argument("-o", "--output", help="also write the YAML fragment (memory: ...) to this file")
    ns = ap.parse_args(argv)

    array_bytes = ITEM_BYTES * ns.elements
    need = ns.np * 3 * array_bytes
    avail = _available_memory()
    if avail is not None and need > 0.8 * avail:
        ap.error(f"-np {ns.np} with --elements {ns.elements} needs {format_size(need)} of memory "
                 f"(3 arrays of {format_size(array_bytes)} per process), more than 80% of the "
                 f"{format_size(avail)} available: lower -np or --elements")
    llc = _last_level_cache()
    if llc is not None and 3 * array_bytes < 4 * llc:
        print(f"smpy calibrate memory: warning: 3 arrays of {format_size(array_bytes)} are not "
              f"well beyond the {format_size(llc)} last-level cache: the cache is measured too "
              "(raise --elements)", file=sys.stderr)

    length = f"{ns.reps} repetitions" if ns.reps is not None else f"{ns.seconds:g} s"
    print(f"triad a = b + s*c on 3 float64 arrays of {format_size(array_bytes)} per process, "
          f"{format_size(triad_bytes(ns.elements))} counted per repetition; "
          f"{ns.rounds} round(s) of {length} with 1 process then {ns.np}", flush=True)
    try:
        est = measure(ns.np, ns.elements, ns.seconds, ns.reps, ns.rounds,
                      log=lambda line: print(line, flush=True))
    except (WorkerError, OSError) as exc:
        print(f"smpy calibrate memory: error: {exc}", file=sys.stderr)
        return 1

    print(f"per-core bandwidth b1 (1 process alone):    {format_byte_rate(est.core_bandwidth)}")
    print(f"aggregate bandwidth B ({est.nprocs} processes at once): "
          f"{format_byte_rate(est.measured_bandwidth)}")
    if est.clamped:
        print(f"  clamped to {format_byte_rate(est.bandwidth)}: B must lie between b1 and "
              f"{est.nprocs} x b1 (noise, or no contention measured at {est.nprocs} processes)")
    print(f"slowdown sigma({est.nprocs}) = {est.nprocs} b1 / B = {est.sigma:.3g}")
    text = yaml_fragment(est)
    print("platform YAML (host or cluster):")
    print("  " + text, end="")
    if ns.output:
        Path(ns.output).write_text(text, encoding="utf-8")
        print(f"wrote {ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
