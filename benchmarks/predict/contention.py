"""Validation of the host memory-contention model: calibrate on one schedule, predict another.

    python benchmarks/predict/contention.py [--reps 7] [--n 128] [--steps 40]

``contention_app.py`` runs heat3d's stencil on each rank's own grid, with the ranks computing
all at once (``together``) or one after another (``turns``). The regions and their work are
the same in both; only how many ranks of the node compute at once differs, which is what the
node's shared memory bandwidth sees.

1. ``smpy calibrate host-speed`` and ``smpy calibrate memory`` (STREAM-like: one process, then
   one per core) give a one-host platform of this node with its memory bandwidths
   (``work/contention-node.yaml``);
2. ``smpy calibrate compute --contention`` on ``together`` (real runs, serialized real runs in
   which one rank computes at a time, emulated runs): per-region ratios against the
   serialized runs and memory-bound fractions (``work/factors-contention.csv``); and, as smpy
   did before the model, plain ``smpy calibrate compute`` on ``together``
   (``work/factors-plain.csv``: ratios against the contended real runs, no fractions);
3. for each schedule, alternated: the real run (``mpiexec``, the time the program prints) and
   the predictions with each factor file; per schedule the median real time, the predictions
   and their errors.

Without the model, a ratio calibrated on ``together`` carries that schedule's contention into
``turns``, where the ranks do not contend. Results go to ``contention.txt``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import MPIEXEC, elapsed, env, real_env, sh  # noqa: E402

APP = HERE / "contention_app.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--n", type=int, default=128, help="grid edge per rank")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--cal-reps", type=int, default=7, help="runs of each kind in calibration")
    ap.add_argument("--reps", type=int, default=7, help="real runs and predictions per schedule")
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("-o", "--output", default=str(HERE / "contention.txt"))
    ns = ap.parse_args()
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    smpy = [sys.executable, "-m", "smpy", "calibrate"]
    out = sh([*smpy, "host-speed", "--seconds", "2"])
    speed = float(re.search(r"smpi/host-speed:([0-9.eE+-]+)f", out).group(1))
    mem_file = work / "memory.yaml"
    mem_out = sh([*smpy, "memory", "-np", str(ns.np), "-o", str(mem_file)])
    print(mem_out.rstrip(), flush=True)
    import yaml

    memory = yaml.safe_load(mem_file.read_text())["memory"]
    platform = {"name": "this-node-memory",
                "hosts": [{"name": "node", "cores": ns.np, "speed": f"{speed:.6g}f", "memory": memory}]}
    pfile = work / "contention-node.yaml"
    pfile.write_text("# one-node platform with memory bandwidths, written by benchmarks/predict/contention.py\n"
                     + yaml.safe_dump(platform, sort_keys=False))
    cfg = [f"--cfg=smpi/host-speed:{speed}f"]
    args = [str(ns.n), str(ns.steps)]
    factors = {"model": work / "factors-contention.csv", "plain": work / "factors-plain.csv"}
    cal = {}
    for kind, f in factors.items():
        cal[kind] = sh([*smpy, "compute", "-np", str(ns.np), "--platform", str(pfile), *cfg, "--reps",
                        str(ns.cal_reps), *(["--contention"] if kind == "model" else []), "-o", str(f),
                        str(APP), *args, "together"])
        print(f"[contention] {kind} calibration -> {f}\n{cal[kind].rstrip()}", flush=True)
    rows = []
    for schedule in ("together", "turns"):
        reals: list[float] = []
        preds: dict[str, list[float]] = {k: [] for k in factors}
        for _ in range(ns.reps):
            reals.append(elapsed(sh([MPIEXEC, "-n", str(ns.np), sys.executable, str(APP), *args, schedule],
                                    environ=real_env())))
            for kind, f in factors.items():
                preds[kind].append(elapsed(sh([sys.executable, "-m", "smpy", "-q", "-np", str(ns.np),
                                               "--platform", str(pfile), *cfg,
                                               f"--cfg=smpi/comp-adjustment-file:{f}", str(APP), *args,
                                               schedule], environ=env())))
        real = statistics.median(reals)
        spread = (max(reals) - min(reals)) / real
        med = {k: statistics.median(v) for k, v in preds.items()}
        rows.append((schedule, real, spread, med["model"], med["plain"]))
        print(f"[contention] {schedule:<9} real {real:.4f} s (spread {spread * 100:.0f} %)  model "
              f"{med['model']:.4f} s ({(med['model'] - real) / real * 100:+.1f} %)  plain {med['plain']:.4f} s "
              f"({(med['plain'] - real) / real * 100:+.1f} %)", flush=True)
    lines = [
        f"# host memory-contention model: contention_app.py {ns.n} {ns.steps}, np {ns.np}, this node "
        f"(host speed {speed / 1e9:.3f} Gflop/s)",
        *[f"# {line.strip()}" for line in mem_out.splitlines() if line.startswith(("per-core", "aggregate",
                                                                                  "slowdown"))],
        "# calibrated on 'together'; median of "
        f"{ns.reps} alternated real runs and predictions per schedule; spread = (max - min) / median of the real runs",
        "# model: ratios against serialized real runs + memory-bound fractions (--contention);",
        "# plain: ratios against the contended real runs (no contention model, as before)",
        "# calibration (--contention):",
        *[f"#   {line}" for line in cal["model"].strip().splitlines()],
        f"# {'schedule':<10}{'real s':>9}{'spread':>8}{'model s':>9}{'err':>8}{'plain s':>9}{'err':>8}",
    ]
    for schedule, real, spread, model, plain in rows:
        lines.append(f"  {schedule:<10}{real:>9.4f}{spread * 100:>7.1f}%{model:>9.4f}"
                     f"{(model - real) / real * 100:>7.1f}%{plain:>9.4f}{(plain - real) / real * 100:>7.1f}%")
    lines.append(f"# total {time.time() - t_start:.0f} s")
    text = "\n".join(lines) + "\n"
    Path(ns.output).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
