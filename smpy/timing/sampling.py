r"""Sampling of repeated computation (SMPI's ``SMPI_SAMPLE_LOCAL/GLOBAL`` semantics).

A sampled loop of :math:`N` iterations at a *site* (file and line of the loop, plus a tag)
runs its iterations while timing each one (thread CPU time :math:`t_i`), as long as more
samples are needed:

.. math::

    \text{more} \iff k < \mathit{iters} \ \wedge\
    \big(\theta < 0 \ \vee\ k < 2 \ \vee\ \epsilon \ge \theta\big), \qquad
    \epsilon = \frac{\sqrt{(\overline{t^2} - \bar t^2)/k}}{\bar t}

(:math:`k` samples so far, :math:`\bar t` their mean, :math:`\epsilon` the relative standard
error, :math:`\theta` the threshold). As soon as no more are needed the loop stops, and
:math:`\bar t \cdot N` seconds of this machine's time are injected at once (like a measured
burst: × ``smpi/host-speed`` flops on the target host). The iterations that ran are part of
that estimate and are not injected separately; the ones that did not run are never executed,
so their results are garbage, exactly as in SMPI. The statistics of a site persist for the
whole run: once a site has enough samples, later visits inject :math:`\bar t \cdot N` without
running anything. ``scope="local"`` keeps one set of statistics per rank (SMPI's LOCAL),
``"global"`` shares them between all ranks (GLOBAL).

**Warm-up** (``warmup=w``, an smpy extension, default 0 as in SMPI): the first :math:`w`
iterations timed at a site run and are injected with their own measured time, but are left
out of the statistics. The first executions of a kernel in a process pay one-off costs (first
calls of numpy/BLAS routines, first touch of fresh memory: ``examples/predict/ep.py``'s first
batch costs 10x the next ones); counted as samples they would be extrapolated to every
iteration not executed. A loop of :math:`N` items whose :math:`w` warm-up iterations ran
(measured :math:`W` seconds) injects :math:`W + \bar t\,(N - w)`.

No MPI call may happen inside a sampled loop (SMPI aborts; smpy raises ``RuntimeError``).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from smpy.runtime.world import Process

T = TypeVar("T")
_thread_time = time.thread_time


class SampleStats:
    """Running statistics of one sample site (SMPI's ``LocalData``)."""

    __slots__ = ("iters", "threshold", "warmup", "warmed", "count", "total", "total_sq", "mean", "relstderr",
                 "last")

    def __init__(self, iters: int, threshold: float, warmup: int = 0) -> None:
        if not (iters > 0 or threshold > 0):
            raise ValueError("smpy.sample: give a positive number of iterations to time, or a "
                             "positive relative standard error threshold (or both)")
        if warmup < 0:
            raise ValueError(f"smpy.sample: warmup must be 0 or more, not {warmup}")
        self.iters = iters
        self.threshold = threshold
        #: iterations to run and leave out of the statistics, and how many did so far
        self.warmup = warmup
        self.warmed = 0
        self.count = 0
        self.total = 0.0
        self.total_sq = 0.0
        self.mean = 0.0
        self.relstderr = 0.0
        self.last: Any = None  # last result of a sampled function

    def warming(self) -> bool:
        return self.warmed < self.warmup

    def need_more(self) -> bool:
        if self.warming():
            return True
        return self.count < self.iters and (self.threshold < 0.0 or self.count < 2
                                            or self.relstderr >= self.threshold)

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.total_sq += seconds * seconds
        n = float(self.count)
        self.mean = self.total / n
        var = max(self.total_sq / n - self.mean * self.mean, 0.0)
        self.relstderr = math.sqrt(var / n) / self.mean if self.mean > 0.0 else 0.0


def site_key(proc: Process, file: str, line: int, tag: str, scope: str) -> str:
    if scope not in ("local", "global"):
        raise ValueError(f"smpy.sample: scope must be 'local' or 'global', not {scope!r}")
    key = f"{file}:{tag}{line}"
    return key if scope == "global" else f"{key}:{proc.rank}"


def stats_for(proc: Process, key: str, iters: int, threshold: float, warmup: int = 0) -> SampleStats:
    samples = proc.world.timing.samples
    st = samples.get(key)
    if st is None:
        st = samples[key] = SampleStats(iters, threshold, warmup)
    elif st.iters != iters or st.threshold != threshold or st.warmup != warmup:
        raise ValueError(f"smpy.sample: site {key} sampled with different settings "
                         f"({iters}, {threshold}, warmup {warmup}) than before "
                         f"({st.iters}, {st.threshold}, warmup {st.warmup})")
    return st


def sample_loop(proc: Process, items: Iterable[T], n: int, key: str, st: SampleStats) -> Iterator[T]:
    """The body of :func:`smpy.sample` under smpyrun (see the module docstring)."""
    timing = proc.world.timing
    timing.flush(proc)  # computation before the loop is its own burst
    b = proc.bench
    done = 0
    warm_n, warm_s = 0, 0.0  # warm-up iterations run here and their measured time
    try:
        for item in items:
            if not st.need_more():
                break
            b.sampling = key
            t0 = _thread_time()
            yield item
            dt = _thread_time() - t0
            if st.warming():
                st.warmed += 1
                warm_n += 1
                warm_s += dt
            else:
                st.add(dt)
            b.sampling = None
            done += 1
    except GeneratorExit:  # the caller left the loop early: only what ran is accounted
        b.sampling = None
        timing.inject_measured(proc, warm_s + st.mean * (done - warm_n))
        raise
    b.sampling = None
    timing.inject_measured(proc, warm_s + st.mean * (n - warm_n))


def sampled_call(proc: Process, fn: Callable[..., T], key: str, st: SampleStats,
                 args: tuple, kwargs: dict) -> T:
    """One call of a :func:`smpy.sampled` function: timed while samples are needed, then
    replaced by the mean time (returning the last computed result)."""
    timing = proc.world.timing
    if not st.need_more():
        timing.flush(proc)
        timing.inject_measured(proc, st.mean)
        return st.last
    timing.flush(proc)
    b = proc.bench
    b.sampling = key
    t0 = _thread_time()
    try:
        result = fn(*args, **kwargs)
    finally:
        dt = _thread_time() - t0
        b.sampling = None
    if st.warming():
        st.warmed += 1
    else:
        st.add(dt)
    st.last = result
    timing.inject_measured(proc, dt)
    return result


def caller_site(depth: int = 2) -> tuple[str, int]:
    f = sys._getframe(depth)
    return f.f_code.co_filename, f.f_lineno


def wraps(fn: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return functools.wraps(fn)
