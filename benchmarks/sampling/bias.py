"""Bias of smpy.sample against running every iteration (issue: a 256 x 256 matrix product,
sampled, predicted 18 % more than the full loop at np 16).

Alternates, in one process per run: the full loop, the sampled loop with smpy's default
estimator (mser) and with SMPI's (mean); prints each run and the medians, and the error of
each sampled median against the full one. The full runs' own spread is the noise floor.

    python benchmarks/sampling/bias.py [--np 16] [--items 1000] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

PROG = Path(__file__).with_name("matmul_loop.py")
VARIANTS = {"full": ("full", []), "mser": ("default", []),
            "mean (SMPI)": ("default", ["--cfg=smpy/sample-estimator:mean"])}


def run(np_: int, mode: str, cfg: list[str], items: int) -> float:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-q", "-np", str(np_), *cfg,
                          str(PROG), mode, str(items)], capture_output=True, text=True, env=env,
                         check=True).stdout
    return float(re.search(r"elapsed ([0-9.]+)", out).group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=16)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ns = ap.parse_args()
    times: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for rep in range(ns.reps):
        for name, (mode, cfg) in VARIANTS.items():
            t = run(ns.np, mode, cfg, ns.items)
            times[name].append(t)
            print(f"rep {rep} {name:12s} {t:.4f} s", flush=True)
    full = statistics.median(times["full"])
    spread = (max(times["full"]) - min(times["full"])) / full
    print(f"\nnp {ns.np}, {ns.items} iterations, {ns.reps} alternated runs each (median):")
    print(f"{'full':12s} {full:.4f} s   (range {100 * spread:.1f} % of the median: the noise floor)")
    for name in list(VARIANTS)[1:]:
        m = statistics.median(times[name])
        print(f"{name:12s} {m:.4f} s   {100 * (m - full) / full:+.1f} % against the full loop")


if __name__ == "__main__":
    main()
