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

**Warm-up per visit** (``--cfg=smpy/sample-warmup:visit``, the default; ``site`` gives the
earlier rule above). In an emulation every visit of a loop starts cold: the other ranks ran
since this one last did, and the visit's operands are not in cache. HPL's trailing update,
timed chunk by chunk on 3 ranks, costs 1.4, 1.2, 1.1 times its steady rate in the first three
chunks of every visit, and a rank's first visit more. With the warm-up counted once per site,
the few samples are exactly those cold chunks (the first ones of other ranks' visits) and
the estimate lies 30 % above the steady rate. With ``visit``, the first :math:`w` iterations of
*every* visit are its head: they run, cost their measured time, and feed statistics of their
own, one per position :math:`p < w` in the visit (same stopping rule, same estimator); the
samples of the steady rate are the iterations after them, timed back to back in the same
visit. A visit runs while any statistics it would use need samples; once none does, a visit
of :math:`N` items injects :math:`\sum_{p < w} \bar t_p u_p + \bar t \sum_{p \ge w} u_p`, and a
visit that ran injects what its iterations measured plus the estimates of the rest. Each
visit thus keeps its cold start, as it would have had it run in full. A rank's first visit
with a head (of any sampled loop) also pays the rank's one-off costs (HPL's first update
chunk of each rank: 3x the steady rate): when it runs, its head costs its measured time but
is not sampled. ``warmup=0`` is SMPI's rule either way.

**Work model** (``work=``, an smpy extension): when the iterations of a site do different
amounts of work (a matrix update whose height shrinks from one visit to the next, a last
chunk narrower than the others), ``work`` gives each item's amount :math:`u_i` (a number
for all items, or a function of the item), the statistics are kept per unit of work
(:math:`t_i / u_i`) and the loop injects :math:`\bar r \sum_{i \notin \text{run}} u_i` for the items
not run, :math:`\bar r` the mean time per unit. One site can then serve visits of every size
(HPL's trailing updates across panels), where SMPI would need one site per size, each paying
its own samples. The model is the user's: time proportional to the work given.

**Estimator** (``--cfg=smpy/sample-estimator``). SMPI's estimate is the plain mean
:math:`\bar t` of the samples (``mean``). The first iterations a process runs of a kernel are
slower than the rest, and not by a fixed count: a 256 × 256 matrix product timed on this
machine took 1.39, 0.89, 0.86, 0.82, 0.63, 0.60, then 0.52 ms per iteration (clock ramp,
caches, first-touch pages), so the mean of 10 samples lies +40 % above the steady state and a
sampled loop over-predicts by as much. smpy's default (``mser``) removes that start-up
transient by White's *marginal standard error rule* (MSER, the warm-up truncation of
simulation output analysis): of the :math:`k` samples :math:`x_1 \dots x_k` it drops the
first :math:`d^*`,

.. math::

    d^* = \operatorname*{arg\,min}_{0 \le d \le \lfloor k/2 \rfloor}
          \frac{1}{(k-d)^2} \sum_{i>d} \left(x_i - \bar x_{(d)}\right)^2,
    \qquad \bar x_{(d)} = \frac{1}{k-d}\sum_{i>d} x_i,

and estimates :math:`\bar x_{(d^*)}`. The dropped iterations are treated like warm-up
iterations: injected with their own measured time, not extrapolated (a loop of :math:`N`
items injects :math:`\sum_{i \le d^*} x_i + \bar x_{(d^*)}\,(N - d^*)`). With stationary samples
:math:`d^* = 0` and both estimators agree. The stopping rule (``iters``, ``threshold``) is
SMPI's for ``mean``. With ``mser``, a truncation is kept only when the dropped samples are
clearly slower (their mean more than two standard deviations of the rest above its mean:
MSER alone also truncates stationary noise in short series), and the threshold applies to
the samples kept, from the fifth sample on (or ``iters``): two cold samples that happen to
agree (0.786 and 0.787 ms in the example) no longer end the sampling.

No MPI call may happen inside a sampled loop (SMPI aborts; smpy raises ``RuntimeError``).

A sampled iteration's time leaves out what the emulator spent in it: the page faults that
mapped folded memory (:mod:`smpy.timing.folding`) and Python's garbage collections
(:mod:`smpy.timing.gcpause`; a collection scans all ranks' young objects, and a pause inside
one of the few timed iterations was multiplied by every iteration it stands for).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from smpy.support.config import declare
from smpy.timing import gcpause as _gcpause

if TYPE_CHECKING:
    from smpy.runtime.world import Process

T = TypeVar("T")
_thread_time = time.thread_time
_real_clock = time.thread_time


def _gc_since(g0: float) -> float:
    """Seconds of garbage collection since ``paused_s`` was ``g0`` (smpy.timing.gcpause): the
    emulator's, they leave a sampled iteration (not with a replaced clock: tests)."""
    return _gcpause.paused_s - g0 if _thread_time is _real_clock else 0.0

#: key in ``timing.samples`` of the ranks whose first visit with a head has begun
_FIRST_VISITS = "\0first-visits"

#: with the MSER estimator, the threshold may end the sampling from this many samples on
MSER_MIN_SAMPLES = 5

ESTIMATOR = declare("smpy/sample-estimator", "mser",
                    "How smpy.sample/sampled estimate an iteration's time from the samples: mser "
                    "(drop the start-up transient by the marginal standard error rule, then the "
                    "mean) or mean (SMPI's plain mean of every sample)",
                    choices=("mser", "mean"))
WARMUP_MODE = declare("smpy/sample-warmup", "visit",
                      "What smpy.sample's warmup=w means: visit (the first w iterations of every "
                      "visit of the loop run, cost their measured time and have statistics of "
                      "their own, so that each visit keeps its cold start) or site (the first w "
                      "iterations timed at the site, once, are left out of the statistics)",
                      choices=("visit", "site"))


def _relstderr(xs: Sequence[float]) -> float:
    n = len(xs)
    mean = math.fsum(xs) / n
    var = max(math.fsum(x * x for x in xs) / n - mean * mean, 0.0)
    return math.sqrt(var / n) / mean if mean > 0.0 else 0.0


def transient(xs: Sequence[float]) -> int:
    """The leading samples to drop: MSER's truncation, kept only when the dropped samples are
    clearly slower than the rest (their mean more than two standard deviations of the rest
    above its mean). MSER alone truncates stationary noise in short series too."""
    d = mser_truncation(xs)
    if d == 0:
        return 0
    kept = xs[d:]
    n = len(kept)
    mean = math.fsum(kept) / n
    sd = math.sqrt(max(math.fsum(x * x for x in kept) / n - mean * mean, 0.0))
    return d if math.fsum(xs[:d]) / d - mean > 2.0 * sd else 0


def mser_truncation(xs: Sequence[float]) -> int:
    """White's MSER: the number of leading samples whose removal minimises the marginal
    standard error of the mean of the rest (at most half of them)."""
    k = len(xs)
    best_d, best = 0, math.inf
    suffix_sum = suffix_sq = 0.0
    stats = [(0.0, 0.0)] * (k + 1)
    for i in range(k - 1, -1, -1):  # sums of x[i:], x[i:]**2
        suffix_sum += xs[i]
        suffix_sq += xs[i] * xs[i]
        stats[i] = (suffix_sum, suffix_sq)
    for d in range(k // 2 + 1):
        n = k - d
        total, sq = stats[d]
        sse = max(sq - total * total / n, 0.0)
        value = sse / (n * n)
        if value < best * (1.0 - 1e-12):  # ties: fewer dropped
            best_d, best = d, value
    return best_d


class SampleStats:
    """Running statistics of one sample site (SMPI's ``LocalData``)."""

    __slots__ = ("iters", "threshold", "warmup", "warmed", "count", "total", "total_sq", "mean", "relstderr",
                 "last", "per_work", "mser", "samples", "units", "heads")

    def __init__(self, iters: int, threshold: float, warmup: int = 0, per_work: bool = False,
                 mser: bool = False) -> None:
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
        #: samples are seconds per unit of work (``work=``), not seconds per iteration
        self.per_work = per_work
        #: estimate with the MSER truncation (smpy/sample-estimator:mser); then the samples
        #: and their units of work are kept (at most ``iters`` of each)
        self.mser = mser
        self.samples: list[float] = []
        self.units: list[float] = []
        #: smpy/sample-warmup:visit: the statistics of positions 0 .. warmup - 1 of a visit
        #: (None: the warm-up is counted once per site)
        self.heads: list[SampleStats] | None = None

    def visit_heads(self) -> list[SampleStats]:
        """Per-visit warm-up: the statistics of each head position (made on first use)."""
        if self.heads is None:
            self.warmed = self.warmup  # the heads take the warm-up's place
            self.heads = [SampleStats(self.iters, self.threshold, 0, self.per_work, self.mser)
                          for _ in range(self.warmup)]
        return self.heads

    def warming(self) -> bool:
        return self.warmed < self.warmup

    def need_more(self) -> bool:
        if self.warming():
            return True
        if self.count >= self.iters:
            return False
        if self.threshold < 0.0 or self.count < 2:
            return True
        if not self.mser:
            return self.relstderr >= self.threshold
        # two cold samples that happen to agree must not end the sampling: the threshold
        # applies from MSER_MIN_SAMPLES samples on, to the samples after the transient
        if self.count < min(self.iters, MSER_MIN_SAMPLES):
            return True
        return _relstderr(self.samples[transient(self.samples):]) >= self.threshold

    def add(self, seconds: float, units: float = 1.0) -> None:
        if self.mser:
            self.samples.append(seconds)
            self.units.append(units)
        self.count += 1
        self.total += seconds
        self.total_sq += seconds * seconds
        n = float(self.count)
        self.mean = self.total / n
        var = max(self.total_sq / n - self.mean * self.mean, 0.0)
        self.relstderr = math.sqrt(var / n) / self.mean if self.mean > 0.0 else 0.0

    def estimate(self) -> tuple[float, float, float]:
        """``(mean, dropped_s, dropped_units)``: the time per iteration (or unit of work) to
        extrapolate, and the measured time and work of the leading samples MSER dropped
        (injected as they ran, like warm-up iterations). SMPI's estimator drops none."""
        if not self.mser or self.count < 3:
            return self.mean, 0.0, 0.0
        d = transient(self.samples)
        if d == 0:
            return self.mean, 0.0, 0.0
        kept = self.samples[d:]
        return (math.fsum(kept) / len(kept),
                math.fsum(x * u for x, u in zip(self.samples[:d], self.units[:d])),
                math.fsum(self.units[:d]))


def site_key(proc: Process, file: str, line: int, tag: str, scope: str) -> str:
    if scope not in ("local", "global"):
        raise ValueError(f"smpy.sample: scope must be 'local' or 'global', not {scope!r}")
    key = f"{file}:{tag}{line}"
    return key if scope == "global" else f"{key}:{proc.rank}"


def stats_for(proc: Process, key: str, iters: int, threshold: float, warmup: int = 0,
              per_work: bool = False, visits: bool = True) -> SampleStats:
    """The statistics of site ``key``, made on first use. ``visits``: the site is a loop
    (smpy.sample), whose warm-up follows smpy/sample-warmup; a smpy.sampled function's
    warm-up is always counted once per site (each call is a visit of one item)."""
    timing = proc.world.timing
    samples = timing.samples
    st = samples.get(key)
    if st is None:
        mser = timing.config.get(ESTIMATOR) == "mser"
        st = samples[key] = SampleStats(iters, threshold, warmup, per_work, mser)
        if warmup and visits and timing.config.get(WARMUP_MODE) == "visit":
            st.visit_heads()
    elif st.iters != iters or st.threshold != threshold or st.warmup != warmup or st.per_work != per_work:
        raise ValueError(f"smpy.sample: site {key} sampled with different settings "
                         f"({iters}, {threshold}, warmup {warmup}, work {'yes' if per_work else 'no'}) "
                         f"than before ({st.iters}, {st.threshold}, warmup {st.warmup}, "
                         f"work {'yes' if st.per_work else 'no'})")
    return st


def work_function(work: Any) -> Callable[[Any], float] | None:
    """``work=`` as a function of the item (None: one unit per iteration)."""
    if work is None:
        return None
    if callable(work):
        return work
    u = float(work)
    if not u > 0.0:
        raise ValueError(f"smpy.sample: work must be positive, not {work!r}")
    return lambda _item: u


def sample_loop(proc: Process, items: Sequence[T], key: str, st: SampleStats,
                work: Callable[[T], float] | None = None) -> Iterator[T]:
    """The body of :func:`smpy.sample` under smpyrun (see the module docstring)."""
    if st.heads is not None:
        yield from _visit_loop(proc, items, key, st, work)
        return
    timing = proc.world.timing
    timing.flush(proc)  # computation before the loop is its own burst
    b = proc.bench
    done = 0.0  # work (or iterations) of the items run as samples
    warm_s, warm_u = 0.0, 0.0  # warm-up iterations run here: their measured time and work
    total = float(len(items)) if work is None else math.fsum(_units(work, x) for x in items)
    first = len(st.samples)  # the samples this visit adds start here
    if timing.count_faults and st.need_more():  # folded pages mapped, as a real rank's are
        timing.map_for_sample(proc)
    try:
        for item in items:
            if not st.need_more():
                break
            u = 1.0 if work is None else _units(work, item)
            b.sampling = key
            f0 = timing.faults_now()
            t0 = _thread_time()
            g0 = _gcpause.paused_s
            yield item
            dt = _thread_time() - t0 - _gc_since(g0)
            if timing.count_faults:  # faults that mapped folded pages: not the kernel's time
                dt = max(0.0, dt - timing.folded_fault_seconds(f0))
            if st.warming():
                st.warmed += 1
                warm_s += dt
                warm_u += u
            elif u > 0.0:
                st.add(dt / u, u)
            b.sampling = None
            done += u
    except GeneratorExit:  # the caller left the loop early: only what ran is accounted
        b.sampling = None
        timing.inject_measured(proc, _injected(st, warm_s, warm_u, done, first))
        raise
    b.sampling = None
    timing.inject_measured(proc, _injected(st, warm_s, warm_u, total, first))


def _visit_loop(proc: Process, items: Sequence[T], key: str, st: SampleStats,
                work: Callable[[T], float] | None) -> Iterator[T]:
    """:func:`sample_loop` with the warm-up per visit (smpy/sample-warmup:visit): the head
    (first ``st.warmup`` items) runs whenever the visit runs; the steady samples follow it
    back to back. Items run cost their measured time, the others their position's estimate.
    A rank's first visit with a head (of any loop) pays the rank's one-off costs: that head
    is not sampled."""
    timing = proc.world.timing
    timing.flush(proc)
    heads = st.heads or []
    b = proc.bench
    units = [1.0 if work is None else _units(work, x) for x in items]
    w = min(len(heads), len(units))
    stats = [heads[p] if p < w else st for p in range(len(units))]
    seen = timing.samples.setdefault(_FIRST_VISITS, set())
    first = proc.rank not in seen
    seen.add(proc.rank)
    run = any(s.need_more() for s in heads[:w]) or (len(units) > w and st.need_more())
    if run and timing.count_faults:  # folded pages mapped, as a real rank's are
        timing.map_for_sample(proc)
    measured, ran = 0.0, 0
    try:
        for p, item in enumerate(items):
            if not run or (p >= w and not st.need_more()):
                break
            b.sampling = key
            f0 = timing.faults_now()
            t0 = _thread_time()
            g0 = _gcpause.paused_s
            yield item
            dt = _thread_time() - t0 - _gc_since(g0)
            b.sampling = None
            if timing.count_faults:  # faults that mapped folded pages: not the kernel's time
                dt = max(0.0, dt - timing.folded_fault_seconds(f0))
            measured += dt
            ran = p + 1
            if units[p] > 0.0 and not (first and p < w):
                stats[p].add(dt / units[p], units[p])
    except GeneratorExit:  # the caller left the loop early: only what ran is accounted
        b.sampling = None
        timing.inject_measured(proc, measured)
        raise
    b.sampling = None
    rest = math.fsum(_estimate(stats[p], st, heads) * units[p] for p in range(ran, len(units)))
    timing.inject_measured(proc, measured + rest)


def _estimate(s: SampleStats, st: SampleStats, heads: list[SampleStats]) -> float:
    """A position's estimate; a head without samples yet (only its ranks' first visits ran,
    which are not sampled) borrows the estimate of the first head that has samples, else the
    steady one."""
    if s.count:
        return s.estimate()[0]
    for h in heads:
        if h.count:
            return h.estimate()[0]
    return st.estimate()[0]


def _injected(st: SampleStats, warm_s: float, warm_u: float, total: float, first: int) -> float:
    """Seconds for a visit of ``total`` units whose warm-up part (``warm_u`` units) took
    ``warm_s``: the samples this visit ran from index ``first`` on that MSER drops are
    injected as they ran, like warm-up iterations; every other unit at the estimate."""
    mean, _, _ = st.estimate()
    if st.mser and st.count >= 3:
        d = transient(st.samples)
        for x, u in zip(st.samples[first:d], st.units[first:d]):
            warm_s += x * u
            warm_u += u
    return warm_s + mean * max(total - warm_u, 0.0)


def _units(work: Callable[[Any], float], item: Any) -> float:
    u = float(work(item))
    if u < 0.0 or u != u:
        raise ValueError(f"smpy.sample: the work of item {item!r} is {u}; it must be 0 or more")
    return u


def sampled_call(proc: Process, fn: Callable[..., T], key: str, st: SampleStats,
                 args: tuple, kwargs: dict) -> T:
    """One call of a :func:`smpy.sampled` function: timed while samples are needed, then
    replaced by the mean time (returning the last computed result)."""
    timing = proc.world.timing
    if not st.need_more():
        timing.flush(proc)
        timing.inject_measured(proc, st.estimate()[0])
        return st.last
    timing.flush(proc)
    if timing.count_faults:
        timing.map_for_sample(proc)
    b = proc.bench
    b.sampling = key
    f0 = timing.faults_now()
    t0 = _thread_time()
    g0 = _gcpause.paused_s
    try:
        result = fn(*args, **kwargs)
    finally:
        dt = _thread_time() - t0 - _gc_since(g0)
        b.sampling = None
    if timing.count_faults:
        dt = max(0.0, dt - timing.folded_fault_seconds(f0))
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
