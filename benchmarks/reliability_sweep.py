"""Reliability sweep: a 64-rank, 1-second (simulated) program on a 64-host cluster whose hosts
fail with an exponential MTBF; 200 runs per MTBF with ``smpy predict --failure-seed 0``,
either every run emulated (``--mode emulate``: ``--reuse-process``, ``--jobs`` workers) or
each run derived from one failure-free emulation (``--mode replay``: ``--failure-replay``).
Prints, per MTBF, the sweep's wall time and CPU time, the load average, the success rate with
its 95 % interval, and the analytic exp(-N T / MTBF) with T the makespan of a successful run.

    python benchmarks/reliability_sweep.py [--reps 200] [--jobs 2] [--mtbf 300,100,40] [--mode replay]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLATFORM = """name: rel{mtbf}
clusters:
  - name: c
    prefix: node-
    count: 64
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 50us
    backbone: {{bandwidth: 100Gbps, latency: 0us}}
    failures: {{mtbf: {mtbf}s}}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--mtbf", default="300,100,40")
    ap.add_argument("--mode", choices=("emulate", "replay"), default="replay")
    ns = ap.parse_args()
    how = ["--jobs", str(ns.jobs), "--reuse-process"] if ns.mode == "emulate" else ["--failure-replay"]
    print(f"# {ns.reps} runs per MTBF, 64 ranks on 64 hosts, {' '.join(how)}")
    print(f"{'MTBF s':>7} {'wall s':>7} {'CPU s':>7} {'load':>5} {'success':>9} {'95% interval':>16} {'analytic':>9} "
          f"{'inside':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for mtbf in [float(x) for x in ns.mtbf.split(",")]:
            plat = Path(tmp) / f"p{mtbf:g}.yaml"
            plat.write_text(PLATFORM.format(mtbf=f"{mtbf:g}"))
            out = Path(tmp) / f"sweep{mtbf:g}"
            cmd = [sys.executable, "-m", "smpy", "predict", "-q", "-np", "64", "--reps", str(ns.reps),
                   "--failure-seed", "0", *how, "--platform", str(plat),
                   "--cfg", "smpi/simulate-computation:no", "-o", str(out), str(HERE / "reliability_app.py")]
            load = os.getloadavg()[0]
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
            if proc.returncode != 0:
                print(proc.stderr[-2000:])
                raise SystemExit(f"predict failed ({proc.returncode})")
            runs = json.loads(out.with_suffix(".json").read_text())["runs"]
            ok = [r for r in runs if r["status"] == "ok"]
            n, k = len(runs), len(ok)
            t_run = max(r["makespan_s"] for r in ok) if ok else 1.0
            analytic = math.exp(-64 * t_run / mtbf)
            lo, hi = _wilson(k, n)
            print(f"{mtbf:7g} {wall:7.1f} {cpu:7.1f} {load:5.1f} {k:4d}/{n:<4d} [{lo:.3f}, {hi:.3f}]   {analytic:9.3f} "
                  f"{'yes' if lo <= analytic <= hi else 'NO':>6}", flush=True)


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (c - h) / d, (c + h) / d


if __name__ == "__main__":
    main()
