"""The predicted time of a folded, sampled HPL run on a fake CPU clock, to compare two trees
bit for bit (issue 23: a change to the folded bookkeeping that is not a model change must
leave the prediction as it was).

A real run's prediction moves with the measured computation (thread CPU time): two runs of
the same tree differ. Here every clock the timing reads (``smpy.timing.bench``,
``smpy.timing.sampling``, ``smpy.mpi._call``: ``_thread_time``) returns the number of MPI calls
all ranks have made so far times 10 us, the thread's minor page faults are that count too,
and the process's resident shared pages a deterministic function of it (so that bursts
count folded faults and ``smpy/shared-malloc-trim`` trims now and then), the fault cost is
pinned: the prediction then depends on the program, the model and the folded bookkeeping's
decisions only, not on how many times the bookkeeping reads the clock or the counters.

    python benchmarks/speed/fold_identity.py [--src TREE] [--np 16] [--accel on|off]

prints one line: makespan (repr), MPI calls, trims, timed spans that left folded faults out,
measured compute (repr).
Run it with ``--src`` on the tree before a change and on the tree after: the lines must be
equal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from per_message import use_tree  # this directory (sys.path[0] when run as a script)

HERE = Path(__file__).resolve().parent
TICK = 1e-5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    ap.add_argument("--np", type=int, default=16)
    ap.add_argument("--n", type=int, default=2048, help="matrix order")
    ap.add_argument("--panels", type=int, default=4)
    ap.add_argument("--accel", choices=("auto", "on", "off"), default="auto")
    a = ap.parse_args()
    src = use_tree(a.src)
    import smpy
    from smpy.mpi import _call
    from smpy.runtime.world import current
    from smpy.timing import bench, folding, sampling

    def calls() -> int:
        try:
            world = current().world
        except Exception:  # outside a rank (set-up): no call yet
            return 0
        return sum(p.mpi_calls for p in world.processes)

    def clock() -> float:
        return calls() * TICK

    def shared_bytes(self) -> int:  # grows with the calls, wraps every 40 MiB
        return (calls() * 37 * 4096) % (40 << 20)

    for mod in (bench, sampling, _call):
        mod._thread_time = clock
    folding.thread_faults = calls
    folding.Folder._shared_bytes = shared_bytes
    folding.Folder._measure_refault = lambda self: 2e-6
    seen = {"trims": 0, "excluded": 0}
    trim, fault_seconds = folding.Folder.trim, folding.Folder.fault_seconds

    def counted_trim(self, keep=None):  # type: ignore[no-untyped-def]
        seen["trims"] += 1
        return trim(self, keep)

    def counted_faults(self, faults, pages):  # type: ignore[no-untyped-def]
        dt = fault_seconds(self, faults, pages)
        seen["excluded"] += dt > 0.0
        return dt

    folding.Folder.trim = counted_trim
    folding.Folder.fault_seconds = counted_faults
    prog = src / "examples" / "predict" / "hpl.py"
    for _ in range(2):  # the first run of a process blocks once more (lazy imports): the second counts
        seen.update(trims=0, excluded=0)
        res = run(smpy, prog, a)
    if res.status != "ok":
        print(f"run failed: {res.message}", file=sys.stderr)
        return 1
    print(f"makespan {res.makespan_s!r} calls {res.mpi_calls} trims {seen['trims']} spans with "
          f"folded faults {seen['excluded']} measured {sum(r.measured_compute_s for r in res.ranks)!r}")
    return 0


def run(smpy, prog: Path, a: argparse.Namespace):  # type: ignore[no-untyped-def]
    return smpy.run(str(prog), np=a.np, platform="taurus-fattree", capture=True, echo=False,
                    args=[str(a.n), "128", "--ratio=4", "--sample", "--fold", "--no-check",
                          f"--panels={a.panels}"],
                    cfg={"smpi/host-speed": "55.27Gf", "smpy/shared-malloc-trim": "32MiB",
                         "smpi/shared-malloc-blocksize": "64MiB", "smpy/accel": a.accel})


if __name__ == "__main__":
    sys.exit(main())
