r"""Choosing a configuration from a sweep: objectives, constraints and the Pareto front.

For each point of a sweep (its median run), with :math:`T` the predicted time (s), :math:`E`
the energy of the hosts the ranks ran on (J; all hosts' when that is all there is) and
:math:`n` the number of hosts the ranks ran on:

.. math::

    \mathrm{time} = T, \qquad \mathrm{energy} = E, \qquad \mathrm{edp} = E\,T, \qquad
    \mathrm{cost} = n\,\frac{T}{3600}\,p_\mathrm{node\text{-}hour}
                    + \frac{E}{3.6\times10^{6}}\,p_\mathrm{kWh}

(prices from ``--price node-hour=X,kWh=Y``; a missing price counts 0). ``--deadline`` keeps
the points with :math:`T \le` the deadline, ``--budget`` those whose cost is within it; the
best points minimise the objective among those kept. A point is on the **Pareto front** of
time against energy when no other point is at least as good on both and better on one
(MERPSYS's and the DPS simulator's way of showing the trade-off); with failures configured, a
third criterion, the success rate (higher is better), joins them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from smpy.cli.sweep import Run, Summary, SweepError

OBJECTIVES = ("time", "energy", "edp", "cost")


@dataclass(frozen=True)
class Prices:
    node_hour: float = 0.0
    kwh: float = 0.0


@dataclass
class Choice:
    """One point with its criteria."""

    summary: Summary
    time_s: float
    energy_J: float
    hosts: int
    cost: float
    success: float  # share of runs that succeeded

    def value(self, objective: str) -> float:
        return {"time": self.time_s, "energy": self.energy_J, "edp": self.energy_J * self.time_s,
                "cost": self.cost}[objective]

    @property
    def label(self) -> str:
        return f"{self.summary.point.label()} np={self.summary.point.np}"


def parse_prices(text: str | None) -> Prices:
    """``node-hour=2.5,kWh=0.2`` (either may be left out)."""
    if not text:
        return Prices()
    values: dict[str, float] = {}
    for item in text.split(","):
        key, sep, val = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("node-hour", "kwh"):
            raise SweepError(f"--price {text!r}: expected node-hour=X,kWh=Y, found {item!r}")
        try:
            v = float(val)
        except ValueError:
            raise SweepError(f"--price {text!r}: {val!r} is not a number") from None
        if not (v >= 0 and math.isfinite(v)):
            raise SweepError(f"--price {text!r}: {key} must be a finite price >= 0")
        values[key] = v
    return Prices(values.get("node-hour", 0.0), values.get("kwh", 0.0))


def choices(summaries: Sequence[Summary], runs: Sequence[Run], prices: Prices) -> list[Choice]:
    """The points that have a prediction, with their criteria."""
    hosts: dict[object, list[int]] = {}
    for r in runs:
        if r.ok and not r.point.is_real:
            hosts.setdefault(r.point, []).append(r.hosts_used)
    out = []
    for s in summaries:
        if s.point.is_real or not s.ok or math.isnan(s.median_s):
            continue
        energy = s.used_J if not math.isnan(s.used_J) else s.energy_J
        n = sorted(hosts.get(s.point, [0]))[len(hosts.get(s.point, [0])) // 2]
        cost = n * s.median_s / 3600.0 * prices.node_hour
        if not math.isnan(energy):
            cost += energy / 3.6e6 * prices.kwh
        out.append(Choice(s, s.median_s, energy, n, cost, s.ok / s.runs if s.runs else 0.0))
    return out


def best(cands: Sequence[Choice], objective: str, deadline: float | None = None,
         budget: float | None = None, top: int = 5) -> list[Choice]:
    """The ``top`` points minimising ``objective`` among those within the constraints."""
    if objective not in OBJECTIVES:
        raise SweepError(f"--objective {objective!r}: one of {', '.join(OBJECTIVES)}")
    kept = [c for c in cands if (deadline is None or c.time_s <= deadline)
            and (budget is None or c.cost <= budget)]
    kept = [c for c in kept if not math.isnan(c.value(objective))]
    return sorted(kept, key=lambda c: (c.value(objective), c.time_s, c.label))[:top]


def pareto(cands: Sequence[Choice], with_success: bool = False) -> list[Choice]:
    """The points no other point dominates on time and energy (and success rate), by time."""
    pts = [c for c in cands if not math.isnan(c.energy_J)]

    def key(c: Choice) -> tuple[float, ...]:
        return (c.time_s, c.energy_J, -c.success) if with_success else (c.time_s, c.energy_J)

    front = []
    for c in pts:
        kc = key(c)
        if not any(all(a <= b for a, b in zip(key(o), kc)) and key(o) != kc for o in pts):
            front.append(c)
    return sorted(front, key=lambda c: (c.time_s, c.energy_J))


def report(cands: Sequence[Choice], objective: str, deadline: float | None, budget: float | None,
           prices: Prices) -> str:
    """The lines ``smpy predict --objective`` prints."""
    lines = []
    need_energy = objective in ("energy", "edp") or (objective == "cost" and prices.kwh > 0)
    if need_energy and all(math.isnan(c.energy_J) for c in cands):
        raise SweepError(f"--objective {objective}: needs energy figures (--energy, and a platform "
                         "with power profiles)")
    chosen = best(cands, objective, deadline, budget)
    cons = [f"time <= {deadline:g} s" for _ in [0] if deadline is not None] + \
           [f"cost <= {budget:g}" for _ in [0] if budget is not None]
    lines.append(f"best points by {objective}" + (f" ({', '.join(cons)})" if cons else "") + ":")
    if not chosen:
        lines.append("  none within the constraints")
    for i, c in enumerate(chosen, 1):
        lines.append(f"  {i}. {c.label}: {_criteria(c)}")
    front = pareto(cands, with_success=any(c.success < 1.0 for c in cands))
    if front:
        lines.append("Pareto front (time against energy; no other point is better on both):")
        lines.extend(f"  {c.label}: {_criteria(c)}" for c in front)
    return "\n".join(lines)


def _criteria(c: Choice) -> str:
    parts = [f"{c.time_s:.6g} s"]
    if not math.isnan(c.energy_J):
        parts.append(f"{c.energy_J:.6g} J")
    parts.append(f"{c.hosts} hosts")
    if c.cost:
        parts.append(f"cost {c.cost:.4g}")
    if c.success < 1.0:
        parts.append(f"{100 * c.success:.0f} % of runs succeeded")
    return ", ".join(parts)


def plot_pareto(path: str, cands: Sequence[Choice], title: str) -> str:
    """Time against energy, every point and the front joined; returns ``path``."""
    from smpy.trace.plots import _plt, require_matplotlib

    require_matplotlib()
    plt = _plt()
    pts = [c for c in cands if not math.isnan(c.energy_J)]
    if not pts:
        raise RuntimeError("no energy figures to plot (use --energy)")
    front = pareto(pts)
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.scatter([c.time_s for c in pts], [c.energy_J for c in pts], color="0.6", label="points")
    ax.plot([c.time_s for c in front], [c.energy_J for c in front], "o-", color="C3",
            label="Pareto front")
    for c in front:
        ax.annotate(f"np={c.summary.point.np}", (c.time_s, c.energy_J), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("predicted time (s)")
    ax.set_ylabel("energy (J)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
