"""Figure 12 of the SMPI energy paper (Heinrich et al., CLUSTER 2017, §VI-B), with smpy.

Strong scaling of HPL's LU factorisation (``--program hpl``, the default:
``examples/predict/hpl.py``, an HPL twin on a 2-D P x Q block-cyclic grid, P:Q about 1:4 by
default, HPL.dat's defaults: per-column pivot Allreduce, panel broadcast along process rows by
the modified increasing ring, swap :: U broadcast down process columns, look-ahead of depth 1;
``--program lu``: the older ``examples/predict/lu.py``, 1 x P column-cyclic
with a ring panel broadcast and look-ahead, which does not scale like HPL; both with sampled
computation and folded memory) on the paper's hypothetical machine: 256 Taurus-like 12-core nodes on a two-level fat
tree of 16-port switches (the bundled platform ``taurus-fattree``), 12 ranks per node, from 12
to 3072 ranks, for N = 20 000 and N = 65 536, time and energy per point, through
``smpy predict`` (one run per point: with sampling shared by all ranks, repetitions differ by
the few timed iterations only).

    python benchmarks/paper/fig12.py [--program hpl|lu] [--ratio 4] [--nps 12:3072]
                                     [--sizes 20000,65536] [--host-speed 55.27Gf]
                                     [--pivots uniform|diagonal] [--panels K]
                                     [-o benchmarks/paper/fig12]

writes PREFIX.csv / .runs.csv / .json and PREFIX.png (time, efficiency and energy against the
number of processes) and prints smpy predict's table, which includes each emulation's wall
time, CPU time and peak RSS. The paper's SMPI needed about 1.5 h and under 1.5 GB for 3072
ranks. The 3072-rank point alone (issue 23's target: under 15 minutes and 1.5 GB), its wall,
CPU and peak RSS in the last three columns of the table:

    python benchmarks/paper/fig12.py --nps 3072 --sizes 20000 -o /tmp/fig12-3072
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def program_args(ns: argparse.Namespace) -> list[str]:
    """The program and its arguments, with {N} for smpy predict's parameter."""
    if ns.program == "lu":
        return ["lu.py", "{N}", ns.nb, "--sample", "--fold", "--no-check"]
    extra = [f"--panels={ns.panels}"] if ns.panels else []
    return ["hpl.py", "{N}", ns.nb, f"--ratio={ns.ratio}", f"--pivots={ns.pivots}", "--sample",
            "--fold", "--no-check", *extra]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nps", default="12:3072", help="rank counts (smpy predict -np syntax)")
    ap.add_argument("--sizes", default="20000,65536", help="matrix orders N")
    ap.add_argument("--program", choices=("hpl", "lu"), default="hpl",
                    help="hpl: the 2-D HPL twin (examples/predict/hpl.py); lu: the 1 x P LU (lu.py)")
    ap.add_argument("--ratio", default="4",
                    help="hpl: grid shape, the largest P dividing the rank count with RATIO P^2 <= "
                         "ranks (4: P:Q about 1:4; 1: the squarest grid)")
    ap.add_argument("--nb", default="128", help="block size")
    ap.add_argument("--pivots", choices=("uniform", "diagonal"), default="uniform",
                    help="hpl: the folded matrix's pivots, drawn as partial pivoting on a random "
                         "matrix picks them (uniform, the default) or none moved (diagonal)")
    ap.add_argument("--panels", type=int, default=0,
                    help="hpl: factor the first K panels only (an emulation's cost per panel)")
    ap.add_argument("--reps", default="1")
    ap.add_argument("--timeout", default="3600", help="seconds per emulation")
    ap.add_argument("--host-speed", default="auto",
                    help="this machine's flop rate per core (smpy calibrate host-speed; default: "
                         "measured at the start of each run)")
    ap.add_argument("--trim", default="32MiB",
                    help="smpy/shared-malloc-trim (RSS bound of the folded pages' page-table entries)")
    ap.add_argument("-o", "--output", default=str(Path(__file__).with_name("fig12")))
    ns = ap.parse_args()
    ns.output = str(Path(ns.output).resolve())  # smpy predict runs in examples/predict
    with tempfile.TemporaryDirectory() as tmp:
        hostfile = Path(tmp) / "hosts.txt"  # 12 slots per node: ranks fill a node, then the next
        hostfile.write_text("".join(f"node-{i}:12\n" for i in range(256)))
        cmd = [sys.executable, "-m", "smpy", "predict", "-np", ns.nps, "--reps", ns.reps,
               "--platform", "taurus-fattree", "--hostfile", str(hostfile), "--energy",
               "--param", f"N={ns.sizes}", "--timeout", ns.timeout,
               "--cfg", f"smpy/shared-malloc-trim:{ns.trim}", "--cfg", f"smpi/host-speed:{ns.host_speed}",
               # one memory mapping per folded block: 1 MiB blocks exceed Linux's default
               # vm.max_map_count (65530) from 1536 ranks on
               "--cfg", "smpi/shared-malloc-blocksize:64MiB",
               "-o", ns.output, "--plot", ns.output + ".png",
               *program_args(ns)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        print("$", " ".join(cmd), flush=True)
        return subprocess.run(cmd, cwd=ROOT / "examples" / "predict", env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
