r"""Adaptive repetitions (``smpy predict --reps auto --ci 2%``): repeat a point until its mean
predicted time is known to the precision asked, as UniMPP's sample-size rule does (§3 of the
seed paper: as many executions as the confidence interval requires).

After each round, a point with :math:`n \ge 2` successful runs of times :math:`t_i` (mean
:math:`\bar t`, sample standard deviation :math:`s`) is *converged* when the half-width of the
95 % confidence interval of its mean, relative to the mean, is within the target :math:`c`:

.. math::

    \frac{t_{0.975,\,n-1}\; s / \sqrt{n}}{\bar t} \le c

(:math:`t_{0.975,\,n-1}`: Student's quantile). Every point runs :data:`MIN_REPS` times first;
the points not converged then run once more per round, at most ``max_reps`` times in all. A
point whose runs are identical (computation modelled, not measured) converges at once. Real
runs (``--real``) are not repeated adaptively.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import replace

from smpy.cli.sweep import Job, Plan, Point, Run, SweepError

MIN_REPS = 3
#: Student's t quantile 0.975 for 1..30 degrees of freedom (beyond: the normal 1.96)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def parse_ci(text: str) -> float:
    """``2%`` or ``0.02`` -> 0.02."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise SweepError(f"--ci {text!r}: expected a relative precision such as 2% or 0.02") from None
    if not (0.0 < value < 1.0):
        raise SweepError(f"--ci {text!r}: must lie between 0 and 100 %")
    return value


def relative_half_width(times: Sequence[float]) -> float:
    """The 95 % confidence interval's half-width of the mean, over the mean (inf below 2)."""
    n = len(times)
    if n < 2:
        return math.inf
    mean = statistics.fmean(times)
    if mean <= 0:
        return math.inf
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    return t * statistics.stdev(times) / math.sqrt(n) / mean


def next_jobs(plan: Plan, points: Sequence[Point], runs: Sequence[Run], ci: float,
              max_reps: int) -> list[Job]:
    """One more run of every point not converged and below ``max_reps`` runs."""
    done: dict[Point, int] = {}
    times: dict[Point, list[float]] = {}
    for r in runs:
        if r.point.is_real:
            continue
        done[r.point] = max(done.get(r.point, 0), r.rep + 1)
        if r.ok:
            times.setdefault(r.point, []).append(r.time_s)
    todo = {pt for pt in points
            if done.get(pt, 0) < max_reps and relative_half_width(times.get(pt, [])) > ci}
    if not todo:
        return []
    rep = max(done[pt] for pt in todo)
    jobs = replace(plan, reps=rep + 1, real_nps=[]).jobs()
    return [j for j in jobs if j.rep == rep and j.point in todo]


def converged_line(points: Sequence[Point], runs: Sequence[Run], ci: float) -> str:
    """How many points reached the precision, and with how many runs."""
    times: dict[Point, list[float]] = {}
    for r in runs:
        if r.ok and not r.point.is_real:
            times.setdefault(r.point, []).append(r.time_s)
    ok = [pt for pt in points if relative_half_width(times.get(pt, [])) <= ci]
    counts = [len(times.get(pt, [])) for pt in points]
    return (f"[smpy] --reps auto: {len(ok)}/{len(points)} points within ±{100 * ci:g} % (95 % "
            f"confidence), {min(counts, default=0)}-{max(counts, default=0)} runs per point")
