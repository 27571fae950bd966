"""Validation of the host memory-contention model: calibrate on one schedule, predict another.

    python benchmarks/predict/contention.py [--reps 7] [--n 128] [--steps 40]

``contention_app.py`` runs heat3d's stencil on each rank's own grid, with the ranks computing
all at once (``together``) or one after another (``turns``). The regions and their work are
the same in both; only how many ranks of the node compute at once differs, which is what the
node's shared memory bandwidth sees.

1. ``smpy calibrate host-speed`` and ``smpy calibrate memory`` (STREAM-like: one process, then
   one per core) give a one-host platform of this node with its memory bandwidths
   (``work/contention-node.yaml``);
2. ``smpy calibrate compute --contention`` on ``together`` (real runs in which every other
   burst is computed one rank at a time, emulated runs): per-region ratios against the
   serialized bursts and memory-bound fractions (``work/factors-contention.csv``); and, as smpy
   did before the model, plain ``smpy calibrate compute`` on ``together``
   (``work/factors-plain.csv``: ratios against the contended real runs, no fractions);
3. for each schedule, alternated: the real run (``mpiexec``, the time the program prints) and
   the predictions with each factor file; per schedule the median real time, the predictions
   and their errors.

Without the model, a ratio calibrated on ``together`` carries that schedule's contention into
``turns``, where the ranks do not contend. Results go to ``contention.txt``.

``--interleaved`` (``contention-interleaved.txt``): on this VM the contended runs drift by
up to 17 % between a calibration and a validation minutes apart (the memory bandwidth left by
the host's other tenants varies), so each repetition instead calibrates (``--reps 1``, both
kinds), then runs the two schedules for real and predicts them with that repetition's
factors: calibration and validation see the same machine. Per schedule it prints the error
of the medians and the median of the per-repetition errors.
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


def interleaved(ns: argparse.Namespace, smpy: list[str], pfile: Path, cfg: list[str], args: list[str],
                work: Path) -> list[str]:
    """Each repetition: calibrate both ways on ``together`` (one run of each kind), then the
    real runs and predictions of both schedules with those factors."""
    import csv

    schedules = ("together", "turns")
    runs: dict[str, dict[str, list[float]]] = {s: {"real": [], "model": [], "plain": []} for s in schedules}
    fractions: list[float] = []
    ratios: dict[str, list[float]] = {"model": [], "plain": []}
    key = ""
    for rep in range(ns.reps):
        files = {}
        for kind in ("model", "plain"):
            f = work / f"factors-{kind}-rep.csv"
            sh([*smpy, "compute", "-np", str(ns.np), "--platform", str(pfile), *cfg, "--reps", "1",
                *(["--contention"] if kind == "model" else []), "-o", str(f), str(APP), *args, "together"])
            files[kind] = f
            rows = [r for r in list(csv.reader(f.open()))[1:] if r and r[0] != "*"]
            # the stencil's region: the one with the largest correction or fraction written
            best = max(rows, key=lambda r: float(r[2]) if kind == "model" and len(r) > 2 else abs(float(r[1]) - 1),
                       default=None)
            if best is not None:
                key = best[0] if kind == "model" else key
                ratios[kind].append(float(best[1]))
                if kind == "model" and len(best) > 2:
                    fractions.append(float(best[2]))
        for schedule in schedules:
            runs[schedule]["real"].append(elapsed(sh([MPIEXEC, "-n", str(ns.np), sys.executable, str(APP), *args,
                                                      schedule], environ=real_env())))
            for kind, f in files.items():
                runs[schedule][kind].append(elapsed(sh([sys.executable, "-m", "smpy", "-q", "-np", str(ns.np),
                                                        "--platform", str(pfile), *cfg,
                                                        f"--cfg=smpi/comp-adjustment-file:{f}", str(APP), *args,
                                                        schedule], environ=env())))
        r = {s: runs[s]["real"][-1] for s in schedules}
        print(f"[contention] rep {rep + 1}: real together {r['together']:.4f} s, turns {r['turns']:.4f} s; "
              f"model {runs['together']['model'][-1]:.4f} / {runs['turns']['model'][-1]:.4f} s; plain "
              f"{runs['together']['plain'][-1]:.4f} / {runs['turns']['plain'][-1]:.4f} s", flush=True)
    med = statistics.median
    lines = [f"# host memory-contention model, interleaved: contention_app.py {ns.n} {ns.steps}, np {ns.np}; "
             f"{ns.reps} repetitions, each: calibrate on 'together' (one run of each kind), then real runs and "
             "predictions of both schedules with that repetition's factors",
             f"# stencil region {key}: fraction median {med(fractions) if fractions else float('nan'):.3f} "
             f"(range {min(fractions, default=float('nan')):.3f}-{max(fractions, default=float('nan')):.3f}); "
             f"ratio with the model {med(ratios['model']) if ratios['model'] else 1.0:.3f}, plain "
             f"{med(ratios['plain']) if ratios['plain'] else 1.0:.3f}",
             "# err: of the medians; paired: median over the repetitions of (pred - real) / real",
             f"# {'schedule':<10}{'real s':>9}{'spread':>8}{'model s':>9}{'err':>8}{'paired':>8}"
             f"{'plain s':>9}{'err':>8}{'paired':>8}"]
    for schedule in schedules:
        d = runs[schedule]
        real = med(d["real"])
        cols = [f"  {schedule:<10}{real:>9.4f}{(max(d['real']) - min(d['real'])) / real * 100:>7.1f}%"]
        for kind in ("model", "plain"):
            pred = med(d[kind])
            paired = med((p - q) / q for p, q in zip(d[kind], d["real"]))
            cols.append(f"{pred:>9.4f}{(pred - real) / real * 100:>7.1f}%{paired * 100:>7.1f}%")
        lines.append("".join(cols))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--n", type=int, default=128, help="grid edge per rank")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--cal-reps", type=int, default=7, help="runs of each kind in calibration")
    ap.add_argument("--reps", type=int, default=7, help="real runs and predictions per schedule")
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("-o", "--output", default=None,
                    help="results file (default contention.txt, or contention-interleaved.txt)")
    ap.add_argument("--interleaved", action="store_true",
                    help="calibrate and validate within each repetition (see the module docstring)")
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
    if ns.interleaved:
        lines = interleaved(ns, smpy, pfile, cfg, args, work)
        lines.insert(1, f"# host speed {speed / 1e9:.3f} Gflop/s; "
                     + "; ".join(line.strip() for line in mem_out.splitlines()
                                 if line.startswith(("per-core", "aggregate", "slowdown"))))
        lines.append(f"# total {time.time() - t_start:.0f} s")
        text = "\n".join(lines) + "\n"
        Path(ns.output or HERE / "contention-interleaved.txt").write_text(text)
        print(text)
        return 0
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
        "# model: ratios against serialized bursts + memory-bound fractions (--contention);",
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
    Path(ns.output or HERE / "contention.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
