"""Accuracy on this node, end to end: ``smpy calibrate node`` -> ``smpy predict`` of the
prediction examples against real ``mpiexec`` runs, next to the real-against-real noise floor.

    python benchmarks/predict/validate_node.py [--calibrate] [--calibration calibration/vm-2core]
                                               [--reps 5] [--np 2] [--quick]

1. the platform: ``CALIBRATION/platform.yaml`` as ``smpy calibrate node`` wrote it (its date and
   the load during calibration are in ``provenance.json``); ``--calibrate`` runs
   ``smpy calibrate node -o CALIBRATION`` first. No per-program factors: this is the product's
   workflow (calibrate the node, predict), not run.py's per-example compute calibration;
2. for each validation case of ``run.py`` (``--quick``: its small set; plus the HPL twin,
   ``hpl.py`` on a 1 x NP grid), one ``smpy predict --real NP`` sweep
   (``predict_vs_real.sweep_case``): in each repetition the real run (``mpiexec -n NP``) comes
   just before the emulation (the interleaved method: both see the machine in about the same
   state); all NP ranks on one node of the platform (``node-0:NP``), as the real run;
3. per case: the median predicted and real times (the ``# elapsed`` the program prints) and the
   error, and two noise floors measured in the same runs: ``even/odd``, the difference between
   the median of the even-numbered real runs and that of the odd-numbered ones (run.py's
   definition; no prediction can be verified to better than that), and ``consec``, the median
   relative difference between consecutive real runs; the load average before each case.

The table goes to ``CALIBRATION/validation.txt`` (and stdout). The real times are wall-clock
times: other processes on the cores inflate them, while the emulator measures the CPU time of
the computation; on a loaded machine the error mostly measures the load (see the load column).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from predict_vs_real import sweep_case
from run import CASES, QUICK, ROOT, name_of

HPL = ("hpl.py", [["1536", "64", "1"]], [["768", "64", "1"]])  # (script, full, quick): 1 x NP grid


def noise(reals: list[float]) -> tuple[float, float]:
    """(even/odd, consecutive) relative differences between real runs of one case."""
    if len(reals) < 2:
        return float("nan"), float("nan")
    even, odd = statistics.median(reals[0::2]), statistics.median(reals[1::2])
    consec = statistics.median(abs(b - a) / ((a + b) / 2) for a, b in zip(reals, reals[1:]))
    return abs(even - odd) / odd, consec


def cases(quick: bool) -> list[tuple[str, list[str]]]:
    out = [(ex, args) for ex, (_, val) in (QUICK if quick else CASES).items() for args in val]
    return out + [(HPL[0], a) for a in (HPL[2] if quick else HPL[1])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", default=str(ROOT / "calibration" / "vm-2core"),
                    help="directory of smpy calibrate node's output")
    ap.add_argument("--calibrate", action="store_true", help="run smpy calibrate node -o CALIBRATION first")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="run.py's small validation set")
    ap.add_argument("--only", default="", help="comma-separated example names (e.g. lu,hpl)")
    ap.add_argument("-o", "--output", default=None, help="default: CALIBRATION/validation.txt")
    ns = ap.parse_args()
    cal = Path(ns.calibration)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    if ns.calibrate:
        done = subprocess.run([sys.executable, "-m", "smpy", "calibrate", "node", "-o", str(cal)], env=env)
        if done.returncode != 0:
            print(f"validate_node: smpy calibrate node failed ({done.returncode})", file=sys.stderr)
            return done.returncode
    platform = cal / "platform.yaml"
    if not platform.exists():
        print(f"validate_node: {platform} is missing: run with --calibrate (smpy calibrate node)",
              file=sys.stderr)
        return 2
    prov = json.loads((cal / "provenance.json").read_text()) if (cal / "provenance.json").exists() else {}
    cal_load = prov.get("load_average_at_end", [float("nan")])[0]
    lines = [f"# python benchmarks/predict/validate_node.py --reps {ns.reps} --np {ns.np}"
             f"{' --quick' if ns.quick else ''}{' --calibrate' if ns.calibrate else ''} "
             f"({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores)",
             f"# platform {platform.relative_to(ROOT) if platform.is_relative_to(ROOT) else platform}: "
             f"smpy calibrate node of {prov.get('date', '?')} (load {cal_load:.1f} then; "
             f"{'recalibrated now' if ns.calibrate else 'reused'}), no per-program factors; "
             f"{ns.np} ranks on node-0; interleaved real/emulated runs, medians of {ns.reps}",
             f"{'case':22s} {'load':>5s} {'pred s':>8s} {'real s':>8s} {'error':>7s} {'even/odd':>8s} "
             f"{'consec':>7s}  real runs (s)"]
    print("\n".join(lines), flush=True)
    errors, floors, consecs = [], [], []
    only = {w for w in ns.only.split(",") if w}
    with tempfile.TemporaryDirectory() as tmp:
        hostfile = Path(tmp) / "hosts.txt"
        hostfile.write_text(f"node-0:{ns.np}\n")
        for ex, args in cases(ns.quick):
            if only and ex[:-3] not in only:
                continue
            load = os.getloadavg()[0]
            try:
                res = sweep_case(ex, args, ns.np, ns.reps, platform, [], Path(tmp), env, hostfile)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            floor, consec = noise(res["reals"])
            errors.append(abs(res["error"]))
            floors.append(floor)
            consecs.append(consec)
            lines.append(f"  {name_of(ex, args):20s} {load:5.1f} {res['pred']:8.4f} {res['real']:8.4f} "
                         f"{100 * res['error']:+6.1f}% {100 * floor:7.1f}% {100 * consec:6.1f}%  "
                         + " ".join(f"{r:.3f}" for r in res["reals"]))
            print(lines[-1], flush=True)
    if not errors:
        print("validate_node: no case selected", file=sys.stderr)
        return 2
    lines.append(f"prediction: d_avg {100 * statistics.fmean(errors):.1f} %  d_max {100 * max(errors):.1f} %   "
                 f"noise floor (real vs real): even/odd d_avg {100 * statistics.fmean(floors):.1f} %, "
                 f"consecutive median {100 * statistics.median(consecs):.1f} %   "
                 f"load {os.getloadavg()[0]:.1f} at the end ({time.perf_counter() - t0:.0f} s)")
    print(lines[-1])
    out = Path(ns.output) if ns.output else cal / "validation.txt"
    out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
