"""Page-level fidelity of the emulator: what numpy's huge-page advice costs a fresh process, and
whether an emulated rank faults the pages its real process faults.

    python benchmarks/predict/page_faults.py [--n 4000000] [--reps 8]

Part 1 runs a merge sort of N doubles (``examples/predict/mergesort.py``'s leaf sort: numpy
temporaries of up to 8 N bytes) in fresh processes, alternately with numpy's transparent-
huge-page advice (its default on Linux) and without it (``NUMPY_MADVISE_HUGEPAGE=0``), and
prints the medians of the wall time, the system time and the minor page faults. Part 2 runs
the same kernel in every rank of ``mpiexec -n NP`` (real mpi4py) and of smpy, and prints each
rank's minor faults during it, with smpy's default settings and with
``smpy/numpy-hugepage:no``. Docs: docs/prediction.md, "Session 6".
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def example_kernel() -> str:
    """The source of ``merge`` and ``leaf_sort`` as examples/predict/mergesort.py defines them
    (the benchmark times the example's own kernel)."""
    src = (ROOT / "examples" / "predict" / "mergesort.py").read_text()
    defs = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name in ("merge", "leaf_sort")]
    return "\n\n".join(ast.get_source_segment(src, n) or "" for n in defs)


KERNEL = """
import resource, sys, time
import numpy as np

""" + example_kernel() + """


def measured(n, seed):
    x = np.random.default_rng(seed).random(n)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    leaf_sort(x)
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    return t1 - t0, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt
"""

SOLO = KERNEL + '''
print("%.6f %.6f %d" % measured(int(sys.argv[1]), 7))
'''

# no MPI call, clock or print inside the measured window (under smpy each of them may let
# another rank run, whose faults the process-wide count would then include)
RANKS = KERNEL + '''
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
x = np.random.default_rng(comm.rank).random(int(sys.argv[1]))
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
leaf_sort(x)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
print("RANK", comm.rank, faults, flush=True)
'''


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ, OPENBLAS_NUM_THREADS="1", **extra)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def run(cmd: list[str], environ: dict[str, str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, env=environ, timeout=600, check=True).stdout


def ranks(out: str) -> dict[int, int]:
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^RANK (\d+) (\d+)$", out, re.M)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--np", type=int, default=2)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        solo, prog = Path(tmp) / "solo.py", Path(tmp) / "ranks.py"
        solo.write_text(SOLO)
        prog.write_text(RANKS)
        runs: dict[str, list[tuple[float, ...]]] = {"advice": [], "no advice": []}
        for _ in range(ns.reps):  # alternated: a drift of the machine hits both
            for label, flag in (("advice", "1"), ("no advice", "0")):
                out = run([sys.executable, str(solo), str(ns.n)], env(NUMPY_MADVISE_HUGEPAGE=flag))
                runs[label].append(tuple(float(x) for x in out.split()))
        print(f"# 1. merge sort of {ns.n} doubles in a fresh process, median of {ns.reps} alternated runs")
        print(f"{'numpy':<12}{'wall s':>9}{'sys s':>9}{'faults':>9}")
        for label, rs in runs.items():
            print(f"{label:<12}" + "".join(f"{statistics.median(r[i] for r in rs):>9.3f}" for i in (0, 1))
                  + f"{statistics.median(r[2] for r in rs):>9.0f}")
        real = ranks(run([str(BIN / "mpiexec"), "-n", str(ns.np), sys.executable, str(prog), str(ns.n)], env()))
        smpy = {cfg: ranks(run([sys.executable, "-m", "smpy", "-q", "-np", str(ns.np), "--cfg=smpi/host-speed:1Gf",
                                *([f"--cfg={cfg}"] if cfg else []), str(prog), str(ns.n)], env()))
                for cfg in ("", "smpy/numpy-hugepage:no")}
        print(f"\n# 2. minor page faults of each rank during the same kernel (np {ns.np}), one run each")
        print(f"{'rank':<6}{'real':>9}{'smpy':>9}{'smpy, no advice':>17}")
        for r in sorted(real):
            print(f"{r:<6}{real[r]:>9}{smpy[''].get(r, -1):>9}{smpy['smpy/numpy-hugepage:no'].get(r, -1):>17}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
