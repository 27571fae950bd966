"""Sizing demo: ``smpy predict`` compares two candidate clusters for the LU example at scale.

    python benchmarks/predict/sweep_demo.py [--n 20000] [--np 36,72,144] [--reps 3]

Two platforms of 144 cores at 1 Gflop/s per core: ``thin`` (12 hosts x 12 cores, 10 Gbps /
50 us links) and ``fat`` (6 hosts x 24 cores, 25 Gbps / 20 us links). LU (examples/predict/lu.py)
runs with ``--sample --fold`` as in scale_demo.py, so each run simulates N = 20000 in one
process. The sweep prints, per platform and rank count, the median predicted time over the
runs and their range, the strong-scaling efficiency against the smallest rank count, and the
emulation's own wall time and peak RSS; results go to ``sweep_demo.txt`` / ``.csv`` / ``.png``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LU = ROOT / "examples" / "predict" / "lu.py"

PLATFORMS = {
    "thin": (12, 12, "10Gbps", "50us"),
    "fat": (6, 24, "25Gbps", "20us"),
}


def platform_yaml(name: str, hosts: int, cores: int, bandwidth: str, latency: str) -> str:
    return (f"name: {name}\nconfig: {{network/model: SMPI}}\nclusters:\n"
            f"  - {{name: c, prefix: node-, suffix: '', radical: 0-{hosts - 1}, cores: {cores}, speed: 1Gf,\n"
            f"     bandwidth: {bandwidth}, latency: {latency}, sharing: SPLITDUPLEX,\n"
            "     backbone: {bandwidth: 100Gbps, latency: 0us, sharing: SHARED}}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--np", default="36,72,144")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-o", "--output", default=str((HERE / "sweep_demo").relative_to(ROOT)),
                    help="output prefix, relative to the repository root")
    ns = ap.parse_args()
    work = HERE / "work"
    work.mkdir(exist_ok=True)
    plats = []
    for name, spec in PLATFORMS.items():
        p = work / f"{name}.yaml"
        p.write_text(platform_yaml(name, *spec))
        plats += ["--platform", str(p.relative_to(ROOT))]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # as scale_demo.py: folded blocks larger than the L3, page-table trimming, shared allocator
    cfg = ["smpy/shared-malloc-trim:32MiB", "smpi/shared-malloc-blocksize:64MiB", "smpy/rank-heaps-total:0"]
    cmd = [sys.executable, "-m", "smpy", "predict", "-np", ns.np, "--reps", str(ns.reps), *plats,
           *(f"--cfg={c}" for c in cfg), "-o", ns.output, "--plot", ns.output + ".png",
           str(LU.relative_to(ROOT)), str(ns.n), str(ns.nb), "--no-check", "--sample", "--fold"]
    print(f"[demo] {' '.join(cmd)}", flush=True)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    sys.stderr.write(proc.stderr)
    header = (f"# python benchmarks/predict/sweep_demo.py --n {ns.n} --np {ns.np} --reps {ns.reps} "
              f"({time.strftime('%Y-%m-%d')}; load {load0:.1f} -> {os.getloadavg()[0]:.1f}; "
              f"sweep wall time {wall:.0f} s)\n"
              + "".join(f"# {k}: {h} hosts x {c} cores, 1 Gf/core, {bw} / {lat} links\n"
                        for k, (h, c, bw, lat) in PLATFORMS.items()))
    text = header + proc.stdout
    print(text, end="")
    (ROOT / (ns.output + ".txt")).write_text(text)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
