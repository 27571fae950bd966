"""What folding adds to an MPI call: the page-fault marks around each compute burst.

    python benchmarks/predict/fold_calls.py [--calls 200000] [--reps 3]

With a folded array in the run (``smpy.shared_array``, global folding), every burst between MPI
calls counts its page faults on folded memory (``smpy/timing/folding.py``): the thread's minor
faults (``getrusage``) and the process's resident shared pages (``/proc/self/statm``) at the
burst's start and end. This times 2 ranks that call ``Iprobe`` in a loop, with and without a
folded array (and with a trim limit), in the emulator's CPU time per call, alternated over
repetitions, and prints the medians and the difference per call. The same program without a
folded array is the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROG = """
import sys, time
import numpy as np
import smpy
from mpi4py import MPI

c = MPI.COMM_WORLD
fold = sys.argv[2] == "fold"
a = smpy.shared_array(1 << 20) if fold else np.zeros(1 << 20)
a[::512] = 1.0
n = int(sys.argv[1])
c.Barrier()
t0 = time.process_time()
for _ in range(n):
    c.Iprobe(source=1 - c.rank)
c.Barrier()
if c.rank == 0:
    print("CPU", time.process_time() - t0)
"""


def one(prog: Path, calls: int, mode: str, trim: str) -> float:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", "2", f"--cfg=smpy/shared-malloc-trim:{trim}",
                          str(prog), str(calls), mode], capture_output=True, text=True, env=env, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("CPU")][-1]
    # process_time inside the program is the emulator's CPU time (all ranks, one thread)
    return float(line.split()[1]) / (2 * calls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200000, help="Iprobe calls per rank")
    ap.add_argument("--reps", type=int, default=3)
    ns = ap.parse_args()
    cases = [("plain", "0"), ("fold", "0"), ("fold", "32MiB")]
    res: dict[tuple[str, str], list[float]] = {c: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "calls.py"
        prog.write_text(PROG)
        for _ in range(ns.reps):
            for mode, trim in cases:
                res[(mode, trim)].append(one(prog, ns.calls, mode, trim))
    load = os.getloadavg()[0]
    print(f"# {ns.calls} Iprobe calls per rank, 2 ranks, {ns.reps} alternated runs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.1f}; emulator CPU per call")
    base = statistics.median(res[cases[0]])
    for (mode, trim), v in res.items():
        med = statistics.median(v)
        print(f"{mode:6s} trim={trim:6s} {med * 1e6:7.2f} us/call  (+{(med - base) * 1e6:5.2f} us)  runs "
              + " ".join(f"{x * 1e6:.2f}" for x in v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
