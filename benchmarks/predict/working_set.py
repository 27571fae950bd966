"""Calibrating at the working set that is predicted: heat3d's contention on this node.

    python benchmarks/predict/run.py ...          # first: writes work/node.yaml (host speed, network)
    python benchmarks/predict/working_set.py [--reps 5] [--sizes 128:50,160:40]

run.py calibrates heat3d on smaller grids than it predicts (N = 80 and 112 for N = 128 and
160), so the factor, if one is kept, is measured with another per-rank working set against
the last-level cache and the memory bus. Here each size is calibrated on its own grid with
fewer steps (``--base-args "N 10"``, then ``N 20``): the same working set, a fraction of the
run. Three predictions of the full run are compared with real runs of it in one
``smpy predict --real`` sweep (each real run just before the emulations of its repetition):
no factors, a program-wide factor from ``calibrate compute``, and a factor with a memory-bound
fraction from ``calibrate compute --contention`` on the node's measured memory bandwidths
(``calibrate memory``). Writes ``working_set.txt``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml
from run import EX, HERE, ROOT

HEAT = EX / "heat3d.py"


def sh(cmd: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cal-reps", type=int, default=5)
    ap.add_argument("--sizes", default="128:50,160:40", help="N:STEPS of the predicted runs")
    ap.add_argument("-o", "--output", default=str(HERE / "working_set.txt"))
    ns = ap.parse_args()
    work = HERE / "work"
    node = work / "node.yaml"
    if not node.exists():
        print(f"{node} is missing: run benchmarks/predict/run.py first", file=sys.stderr)
        return 2
    speed = re.search(r"speed:\s*([0-9.eE+-]+)f", node.read_text())
    assert speed is not None
    hs = f"smpi/host-speed:{speed.group(1)}f"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    smpy = [sys.executable, "-m", "smpy"]
    t0 = time.perf_counter()
    out = sh([*smpy, "calibrate", "memory", "-np", "2", "-o", str(work / "ws-memory.yaml")], env)
    sigma = re.search(r"sigma\(2\) = .* = ([0-9.]+)", out)
    plat = yaml.safe_load(node.read_text())
    plat["hosts"][0]["memory"] = yaml.safe_load((work / "ws-memory.yaml").read_text())["memory"]
    pmem = work / "node-memory.yaml"
    pmem.write_text(yaml.safe_dump(plat, sort_keys=False))
    lines = [f"# python benchmarks/predict/working_set.py --reps {ns.reps} --sizes {ns.sizes} "
             f"({time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}); "
             f"memory {plat['hosts'][0]['memory']}, sigma(2) {sigma.group(1) if sigma else '?'}"]
    (work / "ws-none.csv").write_text('"start:stop","ratio"\n')
    for size in ns.sizes.split(","):
        n, steps = size.split(":")
        factors = {"none": work / "ws-none.csv"}
        for kind in ("plain", "contention"):
            f = work / f"ws-{kind}-{n}.csv"
            cal = sh([*smpy, "calibrate", "compute", "-np", "2", "--platform", str(pmem), "--cfg", hs,
                      "--reps", str(ns.cal_reps), "--base-args", f"{n} 10", "--program-wide",
                      *(["--contention"] if kind == "contention" else []), "-o", str(f),
                      str(HEAT), n, "20"], env)
            factors[kind] = f
            rows = f.read_text().strip().splitlines()[1:]
            lines.append(f"# N={n}: calibrate compute{' --contention' if kind == 'contention' else ''} "
                         f"({n} 10 -> {n} 20): {'; '.join(rows) or 'no factor kept'}")
            print(lines[-1], flush=True)
            print(cal, file=sys.stderr)
        res = work / f"ws-predict-{n}"
        sh([*smpy, "predict", "-q", "-np", "2", "--real", "2", "--reps", str(ns.reps), "--platform", str(pmem),
            "--cfg", hs, "--cfg", f"smpi/comp-adjustment-file:{work}/ws-{{F}}.csv",
            "--param", f"F=none,plain-{n},contention-{n}", "--time-regex", r"^# elapsed ([0-9.eE+-]+) s",
            "-o", str(res), str(HEAT), n, steps], env)
        for row in csv.DictReader(res.with_suffix(".csv").open()):
            kind = row["param_F"].split("-")[0]
            lines.append(f"  heat3d {n} {steps}  {kind:10s} predicted {float(row['median_s']):.4f} s "
                         f"({float(row['min_s']):.4f}-{float(row['max_s']):.4f})  real {float(row['real_s']):.4f} s"
                         f"  error {100 * float(row['error']):+6.1f} %")
            print(lines[-1], flush=True)
    lines.append(f"# {time.perf_counter() - t0:.0f} s")
    Path(ns.output).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
