"""What sampling and folding buy on the LU example: emulation cost vs predicted time.

    python benchmarks/predict/sampling_payoff.py [--n 3072] [--nb 64] [--np 2] [--reps 1]

Runs examples/predict/lu.py under smpy plain, with ``--sample`` and with ``--sample --fold``;
prints for each the predicted time (the program's ``# elapsed``), the emulation's wall time
and its CPU time (user + system of the child; on a loaded machine the CPU time is the
meaningful cost, the wall time mostly measures the other load), and the ratios to the plain run.
It also measures smpy's start-up (Python, numpy, smpy and mpi4py imports: a program that only
imports them, on as many ranks) and gives the CPU ratio without it, the emulation proper;
and the load average before and after. ``--fold`` runs use a 64 MiB folding block (larger than
this machine's 32 MiB L3): with SMPI's 1 MiB block, every rank's arrays alias one cache-resident
megabyte and the computation on them is timed ~25 % too fast.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LU = ROOT / "examples" / "predict" / "lu.py"


STARTUP = "import numpy\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\nprint('# elapsed 0 s')\n"


def one(np_: int, args: list[str], prog: Path = LU, cfg: tuple[str, ...] = ()) -> tuple[float, float, float]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), *cfg, str(prog), *args],
                         capture_output=True, text=True, env=env, timeout=3600, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(re.search(r"^# elapsed ([0-9.eE+-]+) s", out, re.M).group(1)), wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3072)
    ap.add_argument("--nb", type=int, default=64)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--blocksize", default="64MiB",
                    help="smpi/shared-malloc-blocksize for --fold: larger than the last-level cache, or "
                         "computation on folded arrays runs from cache and is timed too fast")
    ns = ap.parse_args()
    base = [str(ns.n), str(ns.nb), "--no-check"]
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "startup.py"
        prog.write_text(STARTUP)
        floor = statistics.median(one(ns.np, [], prog)[2] for _ in range(max(1, ns.reps)))
    rows = []
    for label, extra in (("plain", []), ("sample", ["--sample"]), ("sample+fold", ["--sample", "--fold"])):
        cfg = (f"--cfg=smpi/shared-malloc-blocksize:{ns.blocksize}",)
        runs = [one(ns.np, base + extra, cfg=cfg) for _ in range(ns.reps)]
        rows.append((label, *(statistics.median(r[i] for r in runs) for i in range(3))))
    p0, w0, c0 = rows[0][1:]
    load1 = os.getloadavg()
    print(f"LU N={ns.n} NB={ns.nb} np={ns.np}, median of {ns.reps}; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after ({os.cpu_count()} cores); smpy start-up {floor:.2f} s CPU")
    print(f"{'run':<12}{'predicted s':>12}{'moved':>8}{'wall s':>9}{'wall x':>8}{'cpu s':>8}{'cpu x':>7}"
          f"{'x w/o start-up':>16}")
    for label, p, w, c in rows:
        print(f"{label:<12}{p:>12.4f}{(p - p0) / p0 * 100:>7.1f}%{w:>9.1f}{w0 / w:>8.1f}{c:>8.2f}{c0 / c:>7.1f}"
              f"{(c0 - floor) / max(c - floor, 1e-3):>16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
