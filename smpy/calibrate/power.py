r"""``smpy calibrate power``: fit a host's power profile (idle / epsilon / all cores per pstate).

From wattmeter samples::

    smpy calibrate power --samples watts.csv --phases phases.csv --cores 12 -o power.yaml

``watts.csv`` has columns ``time_s,watts`` (one wattmeter sample per row); ``phases.csv``
has ``start_s,end_s,pstate,busy`` with ``busy`` = 0 (idle), 1 (one core busy) or the core
count (all busy), one row per phase of the calibration workload (run it at one core and at
all cores for each frequency, with idle periods). Samples within ``--margin`` seconds of a
phase boundary are dropped (the wattmeter lags). For each pstate :math:`p`, with
:math:`\bar P_0, \bar P_1, \bar P_c` the mean power of its idle, one-core and all-core
phases and :math:`c` cores, the model :math:`P(b) = \varepsilon + (b/c)(P_c - \varepsilon)`
for :math:`b \ge 1` busy cores gives

.. math::

    P_\mathrm{idle} = \bar P_0, \qquad P_\mathrm{all} = \bar P_c, \qquad
    \varepsilon = \frac{\bar P_1 - \bar P_c / c}{1 - 1/c}

(one core: :math:`\varepsilon = \bar P_1 = \bar P_c`). With ``--rapl`` instead, the
package-energy counters of ``/sys/class/powercap/intel-rapl:*`` are read while smpy itself
runs the three phases at the current frequency (one pstate); it needs read access to
``energy_uj`` (often root only) and measures the CPU packages only, not the whole node.
Output: the ``power:`` block of a platform YAML host or cluster.
"""

from __future__ import annotations

import argparse
import csv
import glob
import multiprocessing
import os
import sys
import time
from pathlib import Path


def read_csv(path: str, columns: list[str]) -> list[list[float]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows or [c.strip() for c in rows[0][:len(columns)]] != columns:
        raise ValueError(f"{path}: expected a header {','.join(columns)}")
    out = []
    for n, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            out.append([float(x) for x in row[:len(columns)]])
        except ValueError:
            raise ValueError(f"{path}:{n}: expected numbers, found {','.join(row)!r}") from None
    return out


def phase_means(samples: list[list[float]], phases: list[list[float]], margin: float
                ) -> dict[tuple[int, int], float]:
    """Mean watts per (pstate, busy cores), over the samples inside each phase."""
    acc: dict[tuple[int, int], list[float]] = {}
    for start, end, pstate, busy in phases:
        lo, hi = start + margin, end - margin
        vals = [w for t, w in samples if lo <= t <= hi]
        if not vals:
            raise ValueError(f"phase {start}-{end} s (pstate {int(pstate)}, {int(busy)} busy): no "
                             "wattmeter sample inside it (after the margin)")
        acc.setdefault((int(pstate), int(busy)), []).extend(vals)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def fit(means: dict[tuple[int, int], float], cores: int) -> list[tuple[float, float, float]]:
    pstates = sorted({p for p, _ in means})
    if pstates != list(range(len(pstates))):
        raise ValueError(f"pstates must be 0..n-1, found {pstates}")
    out = []
    for p in pstates:
        missing = [b for b in (0, 1, cores) if (p, b) not in means]
        if missing:
            raise ValueError(f"pstate {p}: no phase with {missing} busy core(s)")
        idle, one, full = means[(p, 0)], means[(p, 1)], means[(p, cores)]
        eps = one if cores == 1 else (one - full / cores) / (1.0 - 1.0 / cores)
        out.append((idle, eps, full))
    return out


def to_yaml(profile: list[tuple[float, float, float]], off: float) -> str:
    lines = ["power:", f"  \"off\": {off:g}W", "  pstates:"]  # quoted: YAML 1.1 reads off as false
    for idle, eps, full in profile:
        lines.append(f"    - {{idle: {idle:.6g}W, epsilon: {eps:.6g}W, all_cores: {full:.6g}W}}")
    return "\n".join(lines) + "\n"


# -- RAPL --------------------------------------------------------------------------------------

def _rapl_files() -> list[str]:
    return sorted(f for f in glob.glob("/sys/class/powercap/intel-rapl:*/energy_uj")
                  if f.count(":") == 1)


def _rapl_read(files: list[str]) -> float:
    total = 0.0
    for f in files:
        with open(f) as fh:
            total += int(fh.read()) * 1e-6
    return total


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def rapl_phases(cores: int, seconds: float) -> dict[tuple[int, int], float]:
    files = _rapl_files()
    if not files:
        raise RuntimeError("no RAPL counters under /sys/class/powercap (not an Intel/AMD RAPL "
                           "machine, or not exposed here); give --samples and --phases instead")
    try:
        _rapl_read(files)
    except PermissionError:
        raise RuntimeError("RAPL counters are not readable (energy_uj is often root-only); "
                           "give --samples and --phases instead") from None
    means = {}
    for busy in (0, 1, cores):
        e0, t0 = _rapl_read(files), time.perf_counter()
        if busy:
            with multiprocessing.Pool(busy) as pool:
                pool.map(_spin, [seconds] * busy)
        else:
            time.sleep(seconds)
        means[(0, busy)] = (_rapl_read(files) - e0) / (time.perf_counter() - t0)
    return means


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="smpy calibrate power", description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", help="wattmeter CSV: time_s,watts")
    ap.add_argument("--phases", help="phases CSV: start_s,end_s,pstate,busy")
    ap.add_argument("--rapl", action="store_true", help="measure with the RAPL counters instead")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--margin", type=float, default=1.0, help="seconds dropped at each phase edge")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each RAPL phase")
    ap.add_argument("--off", type=float, default=0.0, help="wattage of the node switched off")
    ap.add_argument("-o", "--output", default="-", help="YAML fragment to write (- = stdout)")
    ns = ap.parse_args(argv)
    try:
        if ns.rapl:
            means = rapl_phases(ns.cores, ns.seconds)
        elif ns.samples and ns.phases:
            means = phase_means(read_csv(ns.samples, ["time_s", "watts"]),
                                read_csv(ns.phases, ["start_s", "end_s", "pstate", "busy"]), ns.margin)
        else:
            ap.error("give --samples and --phases, or --rapl")
        text = to_yaml(fit(means, ns.cores), ns.off)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"smpy calibrate power: error: {exc}", file=sys.stderr)
        return 2
    if ns.output == "-":
        sys.stdout.write(text)
    else:
        Path(ns.output).write_text(text)
        print(f"wrote {ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
