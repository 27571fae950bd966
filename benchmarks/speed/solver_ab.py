"""Whole runs with the compiled max-min solver (smpy/lmm/_lmmaccel.c) and without it.

Each case runs ``smpyrun`` in a fresh process, everything else as usual (``smpy/accel:auto``:
the kernel's, facade's and runtime's compiled paths in place), once with the solver's twin
(``System.solve``, ``variable``, ``remove``) and once with the Python solver, alternately
(``--pairs`` pairs, the order flipped every pair); the child's CPU time (user + system, ``wait4``)
and peak RSS. Printed per case: the median CPU time of each side, the median of the per-pair
ratios, and whether the outputs (program output and smpy's summary, wall-time lines left out)
are the same bytes both ways (only for the cases that do not measure computation,
``smpi/simulate-computation:no``: the ``-nosim`` variants and the rings).

    python benchmarks/speed/solver_ab.py --cases alltoall256 osu_bibw --pairs 3
    python benchmarks/speed/solver_ab.py --cases hpl3072 --pairs 1

Cases: ``hpl3072`` (examples/predict/hpl.py, N 20000, --panels=1: the start-up and first panel
of Figure 12's 3072-rank point, on taurus-fattree with 12 ranks per node), ``alltoall256`` (16
``MPI_Alltoall`` of one int per rank at np 256 on examples/io/pfs16.yaml, docs/io.md's case),
``osu_bibw`` (mpi4py 4.1.2's demo at np 2), both in the default configuration (measured
computation: the flows start at dates of their own) and ``-nosim``, ``ring100`` / ``ring1000`` (twins.py's ring at np
1024 on cluster64.yaml, 100 and 1000 laps: their difference over 900 x 1024 messages is the
marginal cost of a message).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from childproc import run_child  # noqa: E402 - benchmarks/childproc.py

DEMO = ROOT / "conformance" / ".cache" / "mpi4py-4.1.2" / "demo"
#: cases whose simulated times depend on measured computation (not the same bytes run to run)
MEASURED = {"hpl3072", "alltoall256", "osu_bibw"}

#: the child: smpyrun, with the solver's twin withdrawn from the compiled path for "python"
CHILD = """
import sys
from smpy.lmm import maxmin
from smpy.support import cext
if sys.argv[1] == "python":
    cext.providers.remove(maxmin._compiled)
from smpy.cli.smpyrun import main
sys.exit(main(sys.argv[2:]))
"""


def cases(tmp: Path, demo: Path) -> dict[str, list[str]]:
    hosts12 = tmp / "hosts12.txt"
    hosts12.write_text("".join(f"node-{i}:12\n" for i in range(256)))
    alltoall = tmp / "alltoall_ints.py"
    alltoall.write_text(
        "import sys\nimport numpy as np\nfrom mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\nsend = np.arange(comm.size, dtype='i')\nrecv = np.empty_like(send)\n"
        "for _ in range(int(sys.argv[1])):\n    comm.Alltoall(send, recv)\n"
        "if comm.rank == 0:\n    print('alltoall', sys.argv[1], recv.sum(), MPI.Wtime())\n")
    twins = str(HERE / "twins.py")
    cluster64 = str(ROOT / "examples" / "platforms" / "cluster64.yaml")
    ring = ["-np", "1024", "--platform", cluster64, "--cfg=smpi/simulate-computation:no", twins, "ring"]
    return {
        "hpl3072": ["-np", "3072", "--platform", "taurus-fattree", "--hostfile", str(hosts12),
                    "--cfg=smpi/host-speed:55.27Gf", "--cfg=smpi/shared-malloc-blocksize:64MiB",
                    "--cfg=smpy/shared-malloc-trim:32MiB",
                    str(ROOT / "examples" / "predict" / "hpl.py"), "20000", "128", "--ratio=4", "--sample",
                    "--fold", "--no-check", "--panels=1"],
        "alltoall256": ["-np", "256", "--platform", str(ROOT / "examples" / "io" / "pfs16.yaml"),
                        "--hostfile", str(ROOT / "examples" / "io" / "compute.hosts"), str(alltoall), "16"],
        "osu_bibw": ["-np", "2", str(demo / "osu_bibw.py")],
        # the same two without measured computation: deterministic, so their outputs are compared
        "alltoall256-nosim": ["-np", "256", "--cfg=smpi/simulate-computation:no", "--platform",
                              str(ROOT / "examples" / "io" / "pfs16.yaml"), "--hostfile",
                              str(ROOT / "examples" / "io" / "compute.hosts"), str(alltoall), "16"],
        "osu_bibw-nosim": ["-np", "2", "--cfg=smpi/simulate-computation:no", str(demo / "osu_bibw.py")],
        "ring100": [*ring, "100"],
        "ring1000": [*ring, "1000"],
    }


def digest(text: str) -> str:
    keep = [line for line in text.splitlines() if "wall time" not in line and "CPU time" not in line]
    return hashlib.sha256("\n".join(keep).encode()).hexdigest()[:12]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["alltoall256", "osu_bibw"],
                    choices=["hpl3072", "alltoall256", "osu_bibw", "alltoall256-nosim", "osu_bibw-nosim",
                             "ring100", "ring1000"])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--demo-dir", default=str(DEMO))
    ap.add_argument("--timeout", type=float, default=7200)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("SMPY_ACCEL", None)
    print(f"# solver A/B: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; {a.pairs} alternating pairs, medians of the child's CPU (user + system)")
    print("| case | CPU python solver | CPU compiled solver | ratio | peak RSS py / compiled | same output |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        table = cases(Path(tmp), Path(a.demo_dir))
        for name in a.cases:
            runs: dict[str, list] = {"python": [], "compiled": []}
            for i in range(a.pairs):
                for side in (("python", "compiled") if i % 2 == 0 else ("compiled", "python")):
                    c = run_child([sys.executable, "-c", CHILD, side, *table[name]], env=env, timeout=a.timeout)
                    runs[side].append(c)
                    print(f"#   {name} {side:<8} cpu {c.cpu:8.2f} s  wall {c.wall:8.2f} s  rss {c.rss:6.0f} MiB  "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
            py, cc = runs["python"], runs["compiled"]
            same = "yes" if len({digest(c.out) for c in py + cc}) == 1 else "NO"
            if name in MEASURED:
                same = "n/a (measured computation)"
            ratio = statistics.median(p.cpu / c.cpu for p, c in zip(py, cc))
            print(f"| {name} | {statistics.median(c.cpu for c in py):.2f} s | {statistics.median(c.cpu for c in cc):.2f} s"
                  f" | {ratio:.2f}x | {max(c.rss for c in py):.0f} / {max(c.rss for c in cc):.0f} MiB | "
                  f"{same} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
