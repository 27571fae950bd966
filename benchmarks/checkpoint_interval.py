"""Checkpoint interval under failures: the sweep of examples/faults/heat3d.py's interval with
``smpy predict`` against Young/Daly's optimum.

The platform is examples/faults/heat_pfs.yaml (8 compute hosts, each failing with an
exponential MTBF of 800 s and repaired after ~1 s: a job MTBF M = 100 s; a parallel scratch
on a ninth host), its mount moved to a temporary directory. The program: 200 steps of 1 s of
simulated computation on 8 ranks, a checkpoint every K steps. Per K, ``--reps`` runs with
failure seeds 0, 1, ... (the same failure histories for every K: common random numbers), each
restarted after its failures (``--restarts``, ``--restart-delay 5s``) until it completes; the
time to solution's mean and 95 % interval per K, Daly's expected time for comparison, and
Young/Daly's interval sqrt(2 C M) with C the checkpoint cost as simulated (a failure-free run
first). "Within one sweep step": the best K is the sweep point nearest to Young/Daly's
interval or one of its two neighbours.

    python benchmarks/checkpoint_interval.py [--reps 40] [--jobs 2] [--plot FILE.png]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from smpy.cli.reliability import daly_time, young_daly  # noqa: E402

PROGRAM = ROOT / "examples/faults/heat3d.py"
PLATFORM = ROOT / "examples/faults/heat_pfs.yaml"
MOUNT = "/tmp/smpy-heat/scratch"
HOST_MTBF, HOSTS, STEPS, STEP_TIME, DELAY = 800.0, 8, 200, 1.0, 5.0
EXACT = ["--cfg", "smpi/simulate-computation:no"]


def platform(tmp: Path, failures: bool) -> tuple[Path, Path]:
    scratch = tmp / "scratch"
    scratch.mkdir(exist_ok=True)
    text = PLATFORM.read_text().replace(MOUNT, str(scratch))
    if not failures:
        text = re.sub(r"\n\s*failures: .*|\n\s*failure_overrides: .*", "", text)
    out = tmp / ("p.yaml" if failures else "p-nofail.yaml")
    out.write_text(text)
    return out, scratch


def calibrate(tmp: Path) -> tuple[float, float, float]:
    """Checkpoint cost C, time per step and restore time (a run failing at 15.5 s, restarted)."""
    plat, scratch = platform(tmp, False)
    base = [sys.executable, "-m", "smpy.cli.smpyrun", "-q", "-np", str(HOSTS), "--platform", str(plat), *EXACT]
    prog = [str(PROGRAM), "--steps", "30", "--every", "10", "--step-time", str(STEP_TIME), "--timeline"]
    out = subprocess.run([*base, *prog, "--dir", str(scratch / "cal")], capture_output=True, text=True, check=True).stdout
    ck = [(float(a), float(b)) for a, b in re.findall(r"checkpoint \d+: ([\d.]+) -> ([\d.]+) s", out)]
    cost = statistics.mean(b - a for a, b in ck)
    step = ck[0][0] / 10
    out = subprocess.run([*base, "--fail", "node-3@15.5s", "--restarts", "1", "--restart-delay", f"{DELAY}s", *prog,
                          "--dir", str(scratch / "cal2")], capture_output=True, text=True, check=True).stdout
    restore = float(re.search(r"restored in ([\d.]+) s", out).group(1))
    return cost, step, restore


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--every", default="5,10,15,20,25,30,40,60")
    ap.add_argument("--plot", default=str(ROOT / "benchmarks/checkpoint_interval.png"))
    ns = ap.parse_args()
    ks = [int(k) for k in ns.every.split(",")]
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cost, step, restore = calibrate(tmp)
        mtbf = HOST_MTBF / HOSTS
        tau = young_daly(cost, mtbf)
        print(f"# checkpoint cost C = {cost:.6f} s (simulated: 8 x 37 kB np.save to a 150 kBps scratch, "
              f"an allreduce), step {step:.7f} s, restore {restore:.6f} s; job MTBF M = {mtbf:g} s")
        print(f"# Young/Daly: sqrt(2 C M) = {tau:.2f} s = {tau / step:.2f} steps")
        plat, scratch = platform(tmp, True)
        out = tmp / "sweep"
        cmd = [sys.executable, "-m", "smpy", "predict", "-q", "-np", str(HOSTS), "--platform", str(plat),
               "--param", "every=" + ",".join(map(str, ks)), "--reps", str(ns.reps), "--jobs", str(ns.jobs),
               "--failure-seed", "0", "--restarts", "100", "--restart-delay", f"{DELAY:g}s", "--reuse-process",
               *EXACT, "-o", str(out), str(PROGRAM), "--dir", f"{scratch}/ck-{{every}}-{{rep}}",
               "--steps", str(STEPS), "--every", "{every}", "--step-time", str(STEP_TIME)]
        load0 = os.getloadavg()[0]
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            raise SystemExit(f"predict failed ({proc.returncode})")
        runs = json.loads(out.with_suffix(".json").read_text())["runs"]
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    rows = table(runs, ks, cost, step, restore, mtbf)
    best = min(rows, key=lambda r: r[1])[0]
    nearest = min(range(len(ks)), key=lambda i: abs(ks[i] * step - tau))
    near = ks[max(0, nearest - 1): nearest + 2]
    print(f"# best interval: every {best} steps ({best * step:.1f} s); Young/Daly {tau:.1f} s, nearest sweep point "
          f"{ks[nearest]}; within one sweep step ({', '.join(map(str, near))}): {'yes' if best in near else 'NO'}")
    print(f"# {len(runs)} runs: wall {wall:.0f} s, CPU {cpu:.0f} s (--jobs {ns.jobs} --reuse-process), "
          f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    if ns.plot:
        plot(ns.plot, rows, step, cost, mtbf, tau)


def table(runs: list[dict], ks: list[int], cost: float, step: float, restore: float, mtbf: float) -> list[tuple]:
    print(f"{'every':>5} {'tau s':>6} {'runs':>5} {'ok':>4} {'E[T] s':>8} {'95% CI':>17} {'failures':>8} "
          f"{'Daly s':>7}")
    rows = []
    for k in ks:
        rs = [r for r in runs if r["param_every"] == str(k)]
        ts = [r["makespan_s"] for r in rs if r["status"] == "ok"]
        mean = statistics.mean(ts)
        half = 1.96 * statistics.stdev(ts) / math.sqrt(len(ts)) if len(ts) > 1 else math.nan
        att = statistics.mean(r["attempts"] for r in rs)
        daly = daly_time(STEPS * step, k * step, cost, DELAY + 1e-3 + restore, mtbf)
        rows.append((k, mean, half, daly))
        print(f"{k:5d} {k * step:6.1f} {len(rs):5d} {len(ts):4d} {mean:8.2f} [{mean - half:7.2f}, {mean + half:7.2f}] "
              f"{att - 1:8.2f} {daly:7.2f}")
    return rows


def plot(path: str, rows: list[tuple], step: float, cost: float, mtbf: float, tau: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [k * step for k, *_ in rows]
    ax.errorbar(xs, [m for _, m, _, _ in rows], yerr=[h for _, _, h, _ in rows], fmt="o-", capsize=3,
                label="smpy predict: mean time to solution (95 % CI)")
    ax.plot(xs, [d for *_, d in rows], "s--", label="Daly's expected time")
    ax.axvline(tau, color="grey", linestyle=":", label=f"Young/Daly sqrt(2CM) = {tau:.1f} s")
    ax.set_xlabel("checkpoint interval (s of work)")
    ax.set_ylabel("time to solution (s)")
    ax.set_title(f"heat3d, 8 ranks, {STEPS} s of work, C = {cost:.2f} s, M = {mtbf:g} s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"# plot: {path}")


if __name__ == "__main__":
    main()
