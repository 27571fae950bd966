r"""``smpy calibrate compute``: per-region correction factors from real runs and emulated runs.

    smpy calibrate compute -np 2 --reps 3 --base-args "100" -o app-factors.csv app.py 200

1. runs ``app.py`` for real (``mpiexec -n NP`` with the venv's MPI, real mpi4py, no
   emulator) under :mod:`smpy.calibrate.trace_real`, which records per region (SMPI's
   ``prevfile:prevline:file:line``) the thread CPU time between consecutive MPI calls;
2. runs it again under smpy, same NP and arguments, with ``smpy/region-report``;
3. repeats both ``--reps`` times (interleaved, so that a change of machine load hits both) and
   keeps, per region, the median :math:`R` (real) and :math:`E` (emulated) of the per-run
   totals over all ranks, with the standard error of each median,
   :math:`\sigma \approx 1.25\, s / \sqrt{n}` (:math:`s` the sample standard deviation of the
   :math:`n` runs, at least ``--min-error`` (5 %) of the median: a few runs can agree by
   chance, and CPU times of repeated runs differ by that much on a shared machine);
4. writes SMPI's comp-adjustment CSV (header, then ``"key",ratio``) with
   :math:`\rho = E / R`: ``--cfg=smpi/comp-adjustment-file:app-factors.csv`` then divides each
   burst measured under the emulator by it, so that the region costs what it costs in a real run.

**Marginal ratios** (``--base-args``): the totals contain fixed costs that do not grow with
the workload and differ between the two runs: every real rank is a fresh process that warms
up (first calls of numpy/BLAS routines, first touch of its heap: tens of ms), whereas the
emulated ranks share one process that only the first of them warms up. A ratio of totals
measured on a small workload then mostly measures that difference (``ep.py 21``: 0.75) and,
applied to a larger run whose time is dominated by the steady state, corrupts it. With a
second, smaller workload of the same program given by ``--base-args`` (its arguments, quoted),
the ratio is the marginal one, :math:`\rho = (E - E_0) / (R - R_0)`, in which per-run fixed
costs cancel. Differences are noisier than totals (two tiny workloads can make any marginal
ratio), so a marginal ratio is kept only if the plain ratio :math:`E / R` of the larger
workload departs from 1 too (significantly, in the same direction), and the one of the two
closer to 1 is written: fixed costs bias the plain ratio, noise the marginal one, and a
correction both agree on is applied no further than either supports.

**Significance**: a region keeps ratio 1 unless :math:`|\rho - 1| > k\, u\, \rho`
(``--sigmas`` :math:`k`, default 2), :math:`u` the relative standard error of :math:`\rho`
from those of :math:`R` and :math:`E` (and :math:`R_0`, :math:`E_0`), so that run-to-run noise
is not turned into factors. It needs ``--reps`` 2 or more (with one run every measured ratio
is kept, as before).

**Timing-dependent regions**: a program whose control flow depends on timing (``lu.py`` takes
the next panel early when an ``Iprobe`` finds it) does not put the same work in a region in
the real and the emulated runs, and the ratio of that region's totals compares unlike things
(``lu.py``'s ``177:117`` came out at 0.58 at N = 1280 for that reason). Regions whose median
number of bursts differs between the real and the emulated runs are therefore pooled: they
get one ratio, that of their summed totals, which does not depend on how the work was split
between them. That does not catch every case: in ``lu.py`` both outcomes of the ``Iprobe``
end the region at the same call (``177:117``), with the same number of bursts but not the same
work. ``--program-wide`` pools every region (one ratio for the whole program, applied to all
its regions): robust to any redistribution of work, and less noisy, but blind to regions
that run at different speeds under the emulator; use it when the control flow depends on
timing (``Iprobe``, ``Test``, ``ANY_SOURCE``). It also writes the ratio as the default of the
regions the file does not list (key ``*``), which a larger run may have.

**Memory contention** (``--contention``): the real ranks of this node compute at the same
time and compete for its memory bandwidth, the emulated ones are timed one at a time. A
ratio :math:`E / R` folds that contention into the region's speed, at this node's
concurrency and working sets only. With ``--contention`` the real runs are *alternately
serialized*: every other burst starting at a call site runs under a lock on a file that lets
only one rank compute at a time (:mod:`smpy.calibrate.trace_real`, ``SMPY_TRACE_SERIALIZE``,
``SMPY_TRACE_ALTERNATE``), the others as usual, all ranks at once. The mean bursts of the two
kinds give each region's slowdown within one run, milliseconds apart (separate serialized
runs were tried first: their pairs of totals differed by ±20 % on this VM, the slowdown
sought being 10-15 %), and from it the region's totals with every burst contended,
:math:`R`, and with none, :math:`S` (:func:`split_alternating`). Then

.. math::

    \rho = E / S, \qquad s = R / S, \qquad f = \frac{s - 1}{\sigma(P) - 1}

(clipped to [0, 1]; :math:`s` is the median over the repetitions of the per-run slowdowns, kept
only when significant as above): the ratio corrects the
emulator's own error, and the memory-bound fraction :math:`f`, written as a third column,
lets the host memory-contention model (:mod:`smpy.cpu.model`, :math:`\sigma(k) = \max(1,
k b_1 / B)`, the bandwidths of the host of ``--platform``, measured by ``smpy calibrate
memory``) slow the region down by :math:`1 + f (\sigma(k) - 1)` whenever :math:`k` ranks of
its host compute memory-bound regions at once, on any platform, at any number of ranks per
host. On the calibrating node (:math:`k = P`) it gives back :math:`R`.

Regions seen in one run only, regions whose real total (or difference) is below
``--min-seconds``, the first region of each rank (``<start>:0:...``: it holds the
program's imports, which the emulator has already done) and the last one (``...:<end>:0``:
output and teardown after the last MPI call; a real rank writes its output to ``mpiexec``'s
pipe, an emulated one to a buffer: 1 ms against 0.06 ms for ``ep.py``) keep ratio 1 too (they
are listed on stderr).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from smpy.support.mpiexec import default_mpiexec, require_mpiexec


def mpi_call_names() -> list[str]:
    """The names smpy's facade times as MPI calls (the region boundaries)."""
    import smpy.mpi as M

    names: set[str] = set()
    for obj in (M.Comm, M.Intracomm, M.Request, getattr(M, "Prequest", None),
                getattr(M, "Cartcomm", None), getattr(M, "Intercomm", None), getattr(M, "Message", None)):
        if obj is None:
            continue
        names.update(n for n in dir(obj) if not n.startswith("_")
                     and hasattr(getattr(obj, n, None), "__wrapped__"))
    names.update(n for n in dir(M) if not n.startswith("_") and callable(getattr(M, n))
                 and hasattr(getattr(M, n), "__wrapped__"))
    return sorted(names)


def read_real(outdir: Path, bursts: dict[str, float] | None = None,
              modes: dict[str, list[float]] | None = None) -> dict[str, float]:
    """Per-region total seconds over the ranks of a real run (``bursts``, if given, receives
    the per-region number of bursts; ``modes``, of an alternately serialized run, the
    per-region [bursts, seconds, serialized bursts, their seconds])."""
    total: dict[str, float] = {}
    files = sorted(outdir.glob("rank*.csv"))
    if not files:
        raise RuntimeError(f"the real run wrote no region file in {outdir}")
    for f in files:
        for row in list(csv.reader(f.open()))[1:]:
            total[row[0]] = total.get(row[0], 0.0) + float(row[2])
            if bursts is not None:
                bursts[row[0]] = bursts.get(row[0], 0.0) + float(row[1])
            if modes is not None:
                m = modes.setdefault(row[0], [0.0, 0.0, 0.0, 0.0])
                for i, v in enumerate(row[1:5]):
                    m[i] += float(v)
    return total


def split_alternating(modes: dict[str, list[float]]) -> tuple[dict[str, float], dict[str, float]]:
    r"""Per-region totals of an alternately serialized real run turned into the totals the run
    would have had with every burst contended, :math:`R`, and with none, :math:`S`. With
    :math:`n_c, t_c` the contended bursts and their seconds and :math:`n_s, t_s` the serialized
    ones, the slowdown is the ratio of the mean bursts, :math:`s = (t_c / n_c) / (t_s / n_s)`,
    and :math:`R = t_c + s\, t_s`, :math:`S = t_s + t_c / s` (so :math:`R / S = s`). A region
    without bursts of both kinds keeps its measured total in both."""
    contended: dict[str, float] = {}
    serialized: dict[str, float] = {}
    for key, (n, t, ns_, ts) in modes.items():
        nc, tc = n - ns_, t - ts
        if nc >= 1 and ns_ >= 1 and tc > 0.0 and ts > 0.0:
            slow = (tc / nc) / (ts / ns_)
            contended[key] = tc + slow * ts
            serialized[key] = ts + tc / slow
        else:
            contended[key] = serialized[key] = t
    return contended, serialized


def read_smpy(report: Path, bursts: dict[str, float] | None = None) -> dict[str, float]:
    """Per-region total seconds of an emulated run (its ``smpy/region-report``)."""
    out: dict[str, float] = {}
    for row in list(csv.reader(report.open()))[1:]:
        out[row[0]] = out.get(row[0], 0.0) + float(row[2])
        if bursts is not None:
            bursts[row[0]] = bursts.get(row[0], 0.0) + float(row[1])
    return out


POOLED = "<pooled>"


def unstable_regions(real_bursts: list[dict[str, float]], emu_bursts: list[dict[str, float]]) -> set[str]:
    """Regions whose median number of bursts differs between the real and the emulated runs
    of one workload: the program's control flow depended on timing (an ``Iprobe`` or a
    ``Test`` that succeeded in one run and not in the other), so the region does not hold
    the same work in both and its own ratio compares unlike things."""
    keys = {k for b in real_bursts + emu_bursts for k in b}
    out = set()
    for k in keys:
        r = statistics.median([b.get(k, 0.0) for b in real_bursts])
        e = statistics.median([b.get(k, 0.0) for b in emu_bursts])
        if r != e:
            out.add(k)
    return out


def pool(run: dict[str, float], keys: set[str]) -> dict[str, float]:
    """``run`` with the regions ``keys`` merged into one, :data:`POOLED`."""
    out = {k: v for k, v in run.items() if k not in keys}
    merged = [v for k, v in run.items() if k in keys]
    if merged:
        out[POOLED] = sum(merged)
    return out


def expand(factors: dict[str, float], keys: set[str], default: bool = False) -> dict[str, float]:
    """Give every pooled region the pooled ratio (if it was kept); ``default``: also as the
    ratio of the regions not listed (key ``*``, see :mod:`smpy.timing.bench`)."""
    out = {k: v for k, v in factors.items() if k != POOLED}
    if POOLED in factors:
        out.update({k: factors[POOLED] for k in sorted(keys)})
        if default:
            out["*"] = factors[POOLED]
    return out


@dataclass
class Totals:
    """Per-region median over repeated runs and the standard error of that median."""

    median: dict[str, float] = field(default_factory=dict)
    error: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: list[dict[str, float]], min_error: float = 0.0) -> Totals:
        """Summarise the per-run totals (a region missing from a run counts 0 there).
        ``min_error``: floor of the relative run-to-run deviation assumed for a total (a few
        runs can agree by chance: two runs give one difference)."""
        keys = sorted({k for r in runs for k in r})
        out = cls()
        n = len(runs)
        for k in keys:
            vals = [r.get(k, 0.0) for r in runs]
            m = out.median[k] = statistics.median(vals)
            sd = max(statistics.stdev(vals), min_error * abs(m)) if n > 1 else 0.0
            out.error[k] = 1.25 * sd / math.sqrt(n)
        return out


def _as_totals(t: Totals | dict[str, float]) -> Totals:
    return t if isinstance(t, Totals) else Totals(dict(t), {k: 0.0 for k in t})


def ratios(real: Totals | dict[str, float], emulated: Totals | dict[str, float], min_seconds: float,
           base: tuple[Totals | dict[str, float], Totals | dict[str, float]] | None = None,
           sigmas: float = 2.0) -> tuple[dict[str, float], list[str]]:
    """Per-region ratios emulated / real (see the module docstring); ``base``: the (real,
    emulated) totals of the smaller workload, for marginal ratios, kept only where the plain
    ratio of the larger workload departs from 1 significantly in the same direction (the
    smaller correction of the two is kept). Returns the ratios kept and a line per region left
    at 1, saying why."""
    real, emulated = _as_totals(real), _as_totals(emulated)
    real0, emu0 = (_as_totals(base[0]), _as_totals(base[1])) if base is not None else (Totals(), Totals())
    out: dict[str, float] = {}
    skipped = []

    def estimate(key: str, r0: Totals, e0: Totals) -> tuple[float, float, float, float]:
        """(real, emulated, ratio, its relative standard error) against the base ``r0, e0``."""
        r = real.median.get(key, 0.0) - r0.median.get(key, 0.0)
        e = emulated.median.get(key, 0.0) - e0.median.get(key, 0.0)
        if r <= 0.0 or e <= 0.0:
            return r, e, math.nan, math.inf
        ur = math.hypot(real.error.get(key, 0.0), r0.error.get(key, 0.0)) / r
        ue = math.hypot(emulated.error.get(key, 0.0), e0.error.get(key, 0.0)) / e
        return r, e, e / r, math.hypot(ur, ue)

    def significant(ratio: float, u: float) -> bool:
        return abs(ratio - 1.0) > sigmas * u * ratio

    for key in sorted(set(real.median) | set(emulated.median)):
        r, e, ratio, u = estimate(key, real0, emu0)
        what = f"{key} (real {r:.3g} s, smpy {e:.3g} s{', differences' if base is not None else ''})"
        if (key not in real.median or key not in emulated.median or r < min_seconds or e <= 0.0
                or key.startswith("<start>:") or key.endswith(":<end>:0")):
            skipped.append(f"{what}: not in both runs, or too short")
            continue
        if not significant(ratio, u):
            skipped.append(f"{what}: ratio {ratio:.3f} +- {u * ratio:.3f} not significant")
            continue
        if base is not None:
            _, _, plain, up = estimate(key, Totals(), Totals())
            if not (significant(plain, up) and (plain - 1.0) * (ratio - 1.0) > 0.0):
                skipped.append(f"{what}: marginal ratio {ratio:.3f} +- {u * ratio:.3f}, but the plain ratio "
                               f"{plain:.3f} +- {up * plain:.3f} does not confirm it")
                continue
            ratio = min(ratio, plain, key=lambda x: abs(math.log(x)))
        out[key] = ratio
    return out, skipped


def memory_fractions(contended: list[dict[str, float]], serialized: list[dict[str, float]], sigma: float,
                     min_seconds: float, sigmas: float = 2.0, min_error: float = 0.0
                     ) -> tuple[dict[str, float], dict[str, float], list[str]]:
    r"""Per region, the slowdown :math:`s` of the contended real runs over the serialized ones
    and the memory-bound fraction :math:`f = (s - 1) / (\sigma - 1)` (clipped to [0, 1]) where
    :math:`s` departs from 1 significantly. The runs are paired (``contended[i]`` and
    ``serialized[i]`` come from one repetition: an alternately serialized run, see
    :func:`split_alternating`): :math:`s` is the median of the per-pair ratios, so that a drift
    of the machine's speed between repetitions cancels; its standard error is :math:`1.25\, \mathrm{sd} / \sqrt{n}` of those
    ratios, the deviation at least ``min_error`` of :math:`s`. Returns (fractions kept,
    slowdowns of all regions compared, a line per region left out)."""
    fractions: dict[str, float] = {}
    slowdowns: dict[str, float] = {}
    skipped = []
    keys = set().union(*contended) & set().union(*serialized) if contended and serialized else set()
    for key in sorted(keys):
        pairs = [(c[key], t[key]) for c, t in zip(contended, serialized) if key in c and key in t]
        if (not pairs or statistics.median(c for c, _ in pairs) < min_seconds
                or key.startswith("<start>:") or key.endswith(":<end>:0")):
            continue
        ratios_ = [c / t for c, t in pairs if t > 0.0]
        if not ratios_:
            continue
        slow = statistics.median(ratios_)
        slowdowns[key] = slow
        n = len(ratios_)
        u = (1.25 * max(statistics.stdev(ratios_), min_error * slow) / math.sqrt(n) / slow) if n > 1 else 0.0
        if not abs(slow - 1.0) > sigmas * u * slow:
            skipped.append(f"{key}: slowdown {slow:.3f} +- {u * slow:.3f} not significant (pairs: "
                           f"{', '.join(f'{r:.3f}' for r in ratios_)})")
            continue
        if slow < 1.0:
            skipped.append(f"{key}: faster with the other ranks computing ({slow:.3f}): fraction 0")
            continue
        fractions[key] = min(1.0, (slow - 1.0) / (sigma - 1.0))
        if slow > sigma:
            skipped.append(f"{key}: slowdown {slow:.3f} above sigma(P) = {sigma:.3f}: fraction 1 "
                           "(more than bandwidth: shared cache too?)")
    return fractions, slowdowns, skipped


def slowdown_shifts(base: dict[str, float], main: dict[str, float], tolerance: float = 0.1) -> list[str]:
    """Regions whose contention slowdown differs between the two workloads by more than
    ``tolerance`` (absolute): a sign that the per-rank working set crosses a cache level
    between them, so that the fraction (the main workload's) holds only near its size."""
    return [f"{key}: slowdown {base[key]:.3f} with the base workload, {main[key]:.3f} with the main one"
            for key in sorted(set(base) & set(main)) if abs(base[key] - main[key]) > tolerance]


def write_factors(path: Path, factors: dict[str, float], fractions: dict[str, float] | None = None) -> None:
    """SMPI's comp-adjustment CSV; with ``fractions``, a third column (memory-bound fraction)
    and a row for each region that has one, at ratio 1 if it has no ratio."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        if fractions is None:
            w.writerow(["start:stop", "ratio"])
            for key, ratio in factors.items():
                w.writerow([key, ratio])
            return
        w.writerow(["start:stop", "ratio", "memory_fraction"])
        for key in [*factors, *sorted(k for k in fractions if k not in factors)]:
            w.writerow([key, factors.get(key, 1.0), fractions.get(key, 0.0)])


def platform_sigma(platform: str | None, np_: int) -> float:
    r""":math:`\sigma(P)` of the first host of ``platform`` (its memory bandwidths)."""
    if not platform:
        raise SystemExit("smpy calibrate compute: --contention needs --platform, a platform whose host "
                         "has `memory: {bandwidth, core_bandwidth}` (smpy calibrate memory measures them)")
    from smpy.platform import load_platform

    host = load_platform(platform).hosts[0]
    sigma = host.memory_contention(np_)
    if host.memory_bandwidth == math.inf:
        raise SystemExit(f"smpy calibrate compute: --contention: host {host.name} of {platform} has no "
                         "`memory` bandwidths (smpy calibrate memory measures them)")
    if not sigma > 1.0:
        raise SystemExit(f"smpy calibrate compute: --contention: the memory bandwidths of host {host.name} "
                         f"give no contention at {np_} ranks (sigma = {sigma:.3f})")
    return sigma


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="smpy calibrate compute",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("-np", "-n", dest="np", type=int, default=os.cpu_count() or 1,
                    help="ranks of both runs (default: the cores of this machine)")
    ap.add_argument("-o", "--output", default="comp-adjustment.csv", help="factor file to write")
    ap.add_argument("--platform", default=None, help="platform of the emulated run")
    ap.add_argument("--cfg", action="append", default=[], help="setting of the emulated run")
    ap.add_argument("--mpiexec", default=default_mpiexec(), help="mpiexec of the real runs (default: this "
                    "environment's, else the one on PATH)")
    ap.add_argument("--region-depth", type=int, default=1, help="as smpy/region-depth")
    ap.add_argument("--min-seconds", type=float, default=1e-3,
                    help="regions shorter than this in the real run keep ratio 1")
    ap.add_argument("--reps", type=int, default=1,
                    help="runs of each kind; per region the median total (and, with 2 or more, "
                         "a significance test)")
    ap.add_argument("--base-args", default=None,
                    help="arguments (one quoted string) of a smaller workload of the same program: "
                         "ratios become marginal, (E - E0) / (R - R0), free of per-run fixed costs")
    ap.add_argument("--program-wide", action="store_true",
                    help="one ratio for the whole program (all regions pooled), written for every region")
    ap.add_argument("--sigmas", type=float, default=2.0,
                    help="keep a ratio only when it differs from 1 by more than this many standard errors")
    ap.add_argument("--min-error", type=float, default=0.05,
                    help="smallest relative run-to-run deviation assumed for a total in the "
                         "significance test (CPU times of repeated runs differ by 5 %% or more on a "
                         "shared machine)")
    ap.add_argument("--contention", action="store_true",
                    help="serialize every other burst of the real runs (one rank computing at a time) "
                         "and write per-region memory-bound fractions for the host memory-contention model")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    return ap


Runs = dict[tuple[str, str], list[dict[str, float]]]


def _run_or_exit(cmd: list[str], env: dict[str, str], timeout: float, what: str) -> None:
    done = subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"smpy calibrate compute: the {what} run failed ({done.returncode})")


def _real_run(ns: argparse.Namespace, w: str, args: list[str], rep: int, tmpdir: Path, env: dict[str, str],
              runs: Runs, bursts: Runs) -> None:
    """One real run under mpiexec (--contention: every other burst of each call site
    serialized, smpy.calibrate.trace_real): its regions' totals into ``runs``."""
    out = tmpdir / f"real-{w}-{rep}"
    real_cmd = [ns.mpiexec, "-n", str(ns.np), sys.executable, "-m", "smpy.calibrate.trace_real",
                str(out), ns.script, *args]
    run_env = dict(env, SMPY_TRACE_SERIALIZE=str(tmpdir / "lock"), SMPY_TRACE_ALTERNATE="1") \
        if ns.contention else env
    print(f"[calibrate] real run{' (alternately serialized)' if ns.contention else ''}: "
          f"{' '.join(real_cmd)}", file=sys.stderr)
    _run_or_exit(real_cmd, run_env, ns.timeout, "real")
    bursts[w, "real"].append({})
    if ns.contention:
        modes: dict[str, list[float]] = {}
        read_real(out, bursts[w, "real"][-1], modes)
        contended, serialized = split_alternating(modes)
        runs[w, "real"].append(contended)
        runs[w, "serial"].append(serialized)
    else:
        runs[w, "real"].append(read_real(out, bursts[w, "real"][-1]))


def _emulated_run(ns: argparse.Namespace, w: str, args: list[str], rep: int, tmpdir: Path,
                  env: dict[str, str], runs: Runs, bursts: Runs) -> None:
    report = tmpdir / f"smpy-{w}-{rep}.csv"
    emu_cmd = [sys.executable, "-m", "smpy", "-q", "-np", str(ns.np),
               *(["--platform", ns.platform] if ns.platform else []),
               *[f"--cfg={c}" for c in ns.cfg], f"--cfg=smpy/region-report:{report}",
               f"--cfg=smpy/region-depth:{ns.region_depth}", ns.script, *args]
    print(f"[calibrate] emulated run: {' '.join(emu_cmd)}", file=sys.stderr)
    _run_or_exit(emu_cmd, env, ns.timeout, "emulated")
    bursts[w, "smpy"].append({})
    runs[w, "smpy"].append(read_smpy(report, bursts[w, "smpy"][-1]))


def collect_runs(ns: argparse.Namespace, workloads: dict[str, list[str]]) -> tuple[Runs, Runs]:
    """``--reps`` real and emulated runs of each workload: per (workload, kind) the regions'
    totals of each run, and their burst counts."""
    kinds = ("real", "smpy", "serial") if ns.contention else ("real", "smpy")
    runs: Runs = {(w, k): [] for w in workloads for k in kinds}
    bursts: Runs = {(w, k): [] for w in workloads for k in ("real", "smpy")}
    with tempfile.TemporaryDirectory(prefix="smpy-calib-") as tmp:
        tmpdir = Path(tmp)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   SMPY_TRACE_CALLS=",".join(mpi_call_names()),
                   SMPY_REGION_DEPTH=str(ns.region_depth))
        for rep in range(ns.reps):
            for w, args in workloads.items():
                _real_run(ns, w, args, rep, tmpdir, env, runs, bursts)
                _emulated_run(ns, w, args, rep, tmpdir, env, runs, bursts)
    return runs, bursts


def pool_regions(ns: argparse.Namespace, workloads: dict[str, list[str]], runs: Runs,
                 bursts: Runs) -> tuple[Runs, set[str]]:
    """Regions whose work depends on timing (or all of them, --program-wide) share one ratio."""
    edges = {k for r in runs.values() for run in r for k in run if k.startswith("<start>:") or k.endswith(":<end>:0")}
    if ns.program_wide:
        pooled = {k for r in runs.values() for run in r for k in run} - edges
    else:
        pooled = set().union(*(unstable_regions(bursts[w, "real"], bursts[w, "smpy"]) for w in workloads)) - edges
    if pooled:
        print(f"[calibrate] one ratio for {len(pooled)} region(s) "
              f"({'--program-wide' if ns.program_wide else 'numbers of bursts differ between the runs'}): "
              f"{', '.join(sorted(pooled))}", file=sys.stderr)
        runs = {wk: [pool(run, pooled) for run in r] for wk, r in runs.items()}
    return runs, pooled


def contention_fractions(ns: argparse.Namespace, runs: Runs, real: Totals, sigma: float,
                         has_base: bool) -> dict[str, float]:
    """--contention: the memory-bound fraction of each region, from its slowdown when the
    ranks compute together (printed as a table), with warnings when it changes with size."""
    f = ns.min_error
    contended = Totals.of(runs["main", "real"], f)
    kept, slowdowns, fskipped = memory_fractions(runs["main", "real"], runs["main", "serial"], sigma,
                                                 ns.min_seconds, ns.sigmas, f)
    print(f"[calibrate] sigma({ns.np}) = {sigma:.3f} (the platform's memory bandwidths)", file=sys.stderr)
    print(f"{'region':<48}{'real s':>12}{'serial s':>12}{'slowdown':>10}{'fraction':>10}")
    for key, slow in slowdowns.items():
        print(f"{key:<48}{contended.median[key]:>12.4g}{real.median[key]:>12.4g}{slow:>10.4f}"
              f"{kept.get(key, 0.0):>10.3f}")
    for line in fskipped:
        print(f"[calibrate] memory fraction: {line}", file=sys.stderr)
    if has_base:
        _, base_slow, _ = memory_fractions(runs["base", "real"], runs["base", "serial"], sigma,
                                           ns.min_seconds, ns.sigmas, f)
        shifts = slowdown_shifts(base_slow, slowdowns)
        for line in shifts:
            print(f"[calibrate] warning: {line}", file=sys.stderr)
        if shifts:
            print("[calibrate] warning: the contention changes with the problem size (a working set "
                  "crossing a cache level?): the fractions are the main workload's; predict sizes "
                  "near it, or calibrate at the per-rank size you predict", file=sys.stderr)
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    ns = ap.parse_args(argv)
    if ns.reps < 1:
        ap.error("--reps must be 1 or more")
    try:
        ns.mpiexec = require_mpiexec(ns.mpiexec)
    except LookupError as exc:
        print(f"smpy calibrate compute: error: {exc}", file=sys.stderr)
        return 2
    workloads = {"main": list(ns.args)}
    if ns.base_args is not None:
        workloads["base"] = shlex.split(ns.base_args)
    sigma = platform_sigma(ns.platform, ns.np) if ns.contention else 1.0
    runs, bursts = collect_runs(ns, workloads)
    runs, pooled = pool_regions(ns, workloads, runs, bursts)
    f = ns.min_error
    # with --contention the ratios compare the emulator with the contention-free real runs
    ref = "serial" if ns.contention else "real"
    real, emulated = Totals.of(runs["main", ref], f), Totals.of(runs["main", "smpy"], f)
    base = (Totals.of(runs["base", ref], f), Totals.of(runs["base", "smpy"], f)) if "base" in workloads else None
    factors, skipped = ratios(real, emulated, ns.min_seconds, base=base, sigmas=ns.sigmas)
    written = expand(factors, pooled, default=ns.program_wide)
    fractions: dict[str, float] | None = None
    if ns.contention:
        kept = contention_fractions(ns, runs, real, sigma, "base" in workloads)
        fractions = expand(kept, pooled, default=ns.program_wide)
    write_factors(Path(ns.output), written, fractions)
    print(f"{'region':<48}{'serial s' if ns.contention else 'real s':>12}{'smpy s':>12}{'ratio':>10}"
          + ("   (totals of the main workload; ratios of the differences)" if base else ""))
    for key, ratio in factors.items():
        print(f"{key:<48}{real.median[key]:>12.4g}{emulated.median[key]:>12.4g}{ratio:>10.4f}")
    for line in skipped:
        # the pooled ratio left at 1 goes to stdout too: with --program-wide it is the result
        print(f"[calibrate] ratio 1: {line}", file=sys.stdout if line.startswith(POOLED) else sys.stderr)
    listed = len(set(written) | set(fractions or {}))
    print(f"wrote {ns.output}: {listed} regions"
          f"{f' ({len(written)} ratios, {len(fractions or {})} memory fractions)' if ns.contention else ''}; use "
          f"--cfg=smpi/comp-adjustment-file:{ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
