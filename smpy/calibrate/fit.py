r"""Segmented linear fit of ping-pong times, with breakpoints found from the data.

Model: the one-way time of a message of :math:`s` bytes is affine on each segment
:math:`k` of sizes, :math:`t(s) = a_k + b_k s` for :math:`s \in [B_k, B_{k+1})`. Each
measured size :math:`s_j` is summarised by a low quantile :math:`t_j` of its repetitions
(``quantile``, default 0.2: on a shared machine, interference only ever adds time, so the
fast repetitions are the ones that measure the network). With :math:`C_K` the smallest
achievable sum over :math:`K` segments of relative squared errors

.. math::

    C_K = \min \sum_k \sum_{j \in k} \Big(\frac{t_j - a_k - b_k s_j}{t_j}\Big)^2

(relative, because sizes span seven orders of magnitude), found by dynamic programming
over the sorted sizes with at least ``min_points`` sizes per segment, the number of
segments minimises the Bayesian information criterion
:math:`n \ln(C_K / n) + 3K \ln n` (three parameters per segment: intercept, slope,
breakpoint), so noise does not create segments. Each segment's :math:`(a_k, b_k)` is the
weighted least-squares solution (weights :math:`1/t_j^2`) with :math:`a_k, b_k \ge 0`.

SimGrid's factors follow: against a nominal latency :math:`L` and bandwidth :math:`W`,
:math:`t(s) = f_\mathrm{lat}(s) L + s / (f_\mathrm{bw}(s) W)`, so
:math:`f_\mathrm{lat} = a_k / L` and :math:`f_\mathrm{bw} = 1 / (b_k W)` on segment :math:`k`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segment:
    start: float  # smallest size of the segment (bytes)
    a: float  # intercept (s)
    b: float  # slope (s per byte)

    @property
    def bandwidth(self) -> float:
        return 1.0 / self.b if self.b > 0 else float("inf")


def _wls(s: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares of t = a + b s with weights 1/t²; returns (a, b, cost)."""
    w = 1.0 / t
    A = np.stack([w, s * w], axis=1)
    y = t * w
    if len(s) == 1:
        a, b = float(t[0]), 0.0
    else:
        (a, b), *_ = np.linalg.lstsq(A, y, rcond=None)
        if b < 0:  # physical: time does not decrease with size; refit a constant
            a, b = float(np.sum(t * w * w) / np.sum(w * w)), 0.0
        elif a < 0:  # no negative latency: refit through the origin
            a, b = 0.0, float(np.sum(s * t * w * w) / np.sum(s * s * w * w))
    r = (t - a - b * s) / t
    return float(a), float(b), float(np.sum(r * r))


def summarise(sizes: np.ndarray, times: np.ndarray, quantile: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Unique sizes and the ``quantile`` of each size's repetitions."""
    sizes = np.asarray(sizes, dtype=float)
    times = np.asarray(times, dtype=float)
    uniq = np.unique(sizes)
    return uniq, np.array([np.quantile(times[sizes == u], quantile) for u in uniq])


def segmented_fit(sizes: np.ndarray, times: np.ndarray, min_points: int = 3, max_segments: int = 8,
                  quantile: float = 0.2) -> list[Segment]:
    """Fit segments to (size, time) samples; see the module docstring."""
    uniq, med = summarise(sizes, times, quantile)
    n = len(uniq)
    if n == 0:
        raise ValueError("no samples")
    min_points = max(1, min(min_points, n))
    cost = np.full((n + 1, n + 1), np.inf)
    fits: dict[tuple[int, int], tuple[float, float]] = {}
    for i in range(n):
        for j in range(i + min_points, n + 1):
            a, b, c = _wls(uniq[i:j], med[i:j])
            cost[i, j] = c
            fits[(i, j)] = (a, b)
    # best[k][j]: min cost of covering [0, j) with k segments
    best = np.full((max_segments + 1, n + 1), np.inf)
    prev = np.zeros((max_segments + 1, n + 1), dtype=int)
    best[0, 0] = 0.0
    for k in range(1, max_segments + 1):
        for j in range(1, n + 1):
            for i in range(0, j):
                c = best[k - 1, i] + cost[i, j]
                if c < best[k, j]:
                    best[k, j] = c
                    prev[k, j] = i
    totals = [n * np.log(max(best[k, n], 1e-300) / n) + 3 * k * np.log(n) if np.isfinite(best[k, n]) else np.inf
              for k in range(1, max_segments + 1)]
    k = int(np.argmin(totals)) + 1
    bounds = []
    j = n
    for kk in range(k, 0, -1):
        i = prev[kk, j]
        bounds.append((i, j))
        j = i
    bounds.reverse()
    return [Segment(float(uniq[i]) if idx else 0.0, *fits[(i, j)]) for idx, (i, j) in enumerate(bounds)]


def to_factors(segments: list[Segment], latency_s: float, bandwidth_Bps: float) -> tuple[str, str]:
    """SimGrid factor strings ``bound:factor;...`` against a nominal latency and bandwidth."""
    lat = ";".join(f"{int(seg.start)}:{max(seg.a, 0.0) / latency_s:.6g}" for seg in segments)
    bw = ";".join(f"{int(seg.start)}:{(seg.bandwidth / bandwidth_Bps) if seg.b > 0 else 1.0:.6g}"
                  for seg in segments)
    return lat, bw


def predict(segments: list[Segment], size: float) -> float:
    seg = segments[0]
    for s in segments:
        if size >= s.start:
            seg = s
    return seg.a + seg.b * size
