"""Memory capacity (smpy.cpu.memory): the delay function's figures, a run that swaps, and
what counting the ranks' memory costs the emulation.

    python benchmarks/memory_capacity.py [--np 64] [--iters 300] [--reps 3]

Prints (1) the slowdown 1 + alpha(M) of a host with 1 GiB of RAM and 1 GiB of swap at
several occupancies (UniMPP's computers c1/c2, default curve); (2) the simulated time of 1 Gflop
per rank on a 4-core host of 1 GiB RAM + 512 MiB swap while its 4 ranks hold 0 to 384 MiB
each (``smpy.set_memory``), against the formula; (3) the emulation's user CPU for a ring of
``--np`` ranks allocating numpy arrays between ``Sendrecv`` calls, on a platform without
``ram`` and with ``ram`` (the rank heaps then count every block; median of ``--reps``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from smpy.cpu.memory import slowdown

GiB, MiB = 1 << 30, 1 << 20

RING = """\
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r, n = comm.rank, comm.size
buf = np.zeros(16)
for i in range(int(sys.argv[1])):
    x = np.empty(64) + i
    y = np.ones(40000)
    comm.Sendrecv(buf, (r + 1) % n, 0, buf, (r - 1) % n, 0)
"""

SWAP = """\
import sys
from mpi4py import MPI
import smpy
smpy.set_memory(float(sys.argv[1]))
MPI.COMM_WORLD.Barrier()
t0 = MPI.Wtime()
smpy.execute_flops(1e9)
t = MPI.Wtime() - t0
if MPI.COMM_WORLD.rank == 0:
    print(repr(t))
"""

CLUSTER = """\
clusters:
  - {{name: c, prefix: node-, count: {count}, cores: 4, speed: 1Gf, bandwidth: 10Gbps,
     latency: 10us{extra}}}
"""


def _smpy(args: list[str]) -> tuple[str, float]:
    """Run ``python -m smpy ARGS``; (stdout, user CPU seconds of the run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    out = subprocess.run([sys.executable, "-m", "smpy", *args], capture_output=True, text=True,
                         check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    return out.stdout, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def curve() -> None:
    print("(1) delay function, ram 1 GiB, swap 1 GiB (default curve)")
    print(f"{'occupied':>10} {'1 + alpha':>10}")
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0):
        print(f"{frac:>9.2f}R {slowdown(frac * GiB, GiB, GiB):>10.4f}")


def swapping(tmp: Path) -> None:
    print("(2) 1 Gflop per rank, 4 ranks on a host of 1 GiB + 512 MiB swap")
    plat = tmp / "swap.yaml"
    plat.write_text(CLUSTER.format(count=1, extra=", ram: 1GiB, swap: 512MiB"))
    prog = tmp / "swap.py"
    prog.write_text(SWAP)
    print(f"{'per rank':>10} {'simulated':>12} {'formula':>12}")
    for per in (0, 128, 256, 320, 352, 384):
        out, _ = _smpy(["-np", "4", "-platform", str(plat), "--cfg=smpi/simulate-computation:no",
                        "--cfg=smpi/wtime:0", str(prog), str(per * MiB)])
        want = slowdown(4 * per * MiB, GiB, 512 * MiB)
        print(f"{per:>7} MiB {float(out.split()[0]):>12.6g} {want:>12.6g}")


def overhead(tmp: Path, np_: int, iters: int, reps: int) -> None:
    print(f"(3) emulation user CPU, ring of {np_} ranks, {iters} iterations (median of {reps})")
    prog = tmp / "ring.py"
    prog.write_text(RING)
    for label, extra in (("no ram", ""), ("ram: 64GiB", ", ram: 64GiB")):
        plat = tmp / "ring.yaml"
        plat.write_text(CLUSTER.format(count=max(1, np_ // 4), extra=extra))
        cpu = sorted(_smpy(["-np", str(np_), "-platform", str(plat),
                            "--cfg=smpi/simulate-computation:no", str(prog), str(iters)])[1]
                     for _ in range(reps))
        print(f"{label:>12}: {cpu[len(cpu) // 2]:.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=64)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--reps", type=int, default=3)
    ns = ap.parse_args()
    curve()
    with tempfile.TemporaryDirectory() as d:
        swapping(Path(d))
        overhead(Path(d), ns.np, ns.iters, ns.reps)


if __name__ == "__main__":
    main()
