"""The validation cases of run.py through ``smpy predict --real``: real runs interleaved with the predictions.

    python benchmarks/predict/run.py ...            # first: calibrates into benchmarks/predict/work/
    python benchmarks/predict/predict_vs_real.py [--reps 5] [--np 2]

For each validation case of ``run.py`` (sizes calibration did not see), one ``smpy predict``
sweep with ``--real NP``: in each repetition the real run (``mpiexec -n NP``) comes just before
the emulation, so that the two see the machine in the same state, and the times compared are
the ``# elapsed`` the program prints (``--time-regex``). The platform, host speed and region
factors are those run.py's calibration left in ``work/``. Prints each case's median predicted
and real time and error, and d_avg / d_max over the cases; ``predict_vs_real.txt``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import CASES, EX, HERE, ROOT


def sweep_case(ex: str, args: list[str], np_: int, reps: int, platform: Path, cfg: list[str],
               tmp: Path, environ: dict[str, str], hostfile: Path | None = None) -> dict:
    """One ``smpy predict --real NP`` sweep of example ``ex``: in each repetition the real run
    comes just before the emulation. Returns the medians and error of smpy predict's summary
    and every repetition's real and predicted time (the program's ``# elapsed``), in order."""
    out = tmp / "sweep"
    cmd = [sys.executable, "-m", "smpy", "predict", "-q", "-np", str(np_), "--real", str(np_),
           "--reps", str(reps), "--platform", str(platform), *cfg,
           "--time-regex", r"^# elapsed ([0-9.eE+-]+) s", "-o", str(out), "--timeout", "1800"]
    if hostfile is not None:
        cmd += ["--hostfile", str(hostfile)]
    proc = subprocess.run([*cmd, str(EX / ex), *args], env=environ, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"smpy predict failed ({proc.returncode}) for {ex} {' '.join(args)}:\n"
                           + (proc.stdout + proc.stderr)[-3000:])
    (row,) = csv.DictReader(out.with_suffix(".csv").open())
    reals, preds = [], []
    for r in csv.DictReader(out.with_suffix(".runs.csv").open()):
        if r["status"] == "ok" and r["program_s"]:
            (reals if r["platform"] == "(real)" else preds).append(float(r["program_s"]))
    return {"pred": float(row["median_s"]), "real": float(row["real_s"]), "error": float(row["error"]),
            "min": float(row["min_s"]), "max": float(row["max_s"]), "reals": reals, "preds": preds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("-o", "--output", default=str(HERE / "predict_vs_real.txt"))
    ns = ap.parse_args()
    work = HERE / "work"
    node = work / "node.yaml"
    if not node.exists():
        print(f"{node} is missing: run benchmarks/predict/run.py first (it calibrates into work/)",
              file=sys.stderr)
        return 2
    speed = re.search(r"speed:\s*([0-9.eE+-]+)f", node.read_text())
    if speed is None:
        print(f"{node}: no host speed", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    lines = [f"# python benchmarks/predict/predict_vs_real.py --reps {ns.reps} --np {ns.np} "
             f"({time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}); host speed "
             f"{float(speed.group(1)) / 1e9:.3f} Gf, work/node.yaml and work/factors-*.csv from run.py",
             f"{'case':24s} {'pred s':>8s} {'real s':>8s} {'error':>7s} {'spr_p':>6s}"]
    errors = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for ex, (_, validation) in CASES.items():
            factors = work / f"factors-{Path(ex).stem}.csv"
            for args in validation:
                name = " ".join([Path(ex).stem, *(a for a in args if not a.startswith("--"))])
                cfg = [f"--cfg=smpi/host-speed:{speed.group(1)}f"]
                if factors.exists():
                    cfg.append(f"--cfg=smpi/comp-adjustment-file:{factors}")
                try:
                    res = sweep_case(ex, args, ns.np, ns.reps, node, cfg, Path(tmp), env)
                except RuntimeError as exc:
                    print(exc, file=sys.stderr)
                    return 1
                pred, real, err = res["pred"], res["real"], res["error"]
                spread = (res["max"] - res["min"]) / pred
                errors.append(abs(err))
                lines.append(f"  {name:22s} {pred:8.4f} {real:8.4f} {100 * err:+6.1f}% {100 * spread:5.1f}%")
                print(lines[-1], flush=True)
    lines.append(f"d_avg {100 * statistics.fmean(errors):.2f} %  d_max {100 * max(errors):.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in errors)}/{len(errors)}  "
                 f"({time.perf_counter() - t0:.0f} s)")
    print(lines[-1])
    Path(ns.output).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
