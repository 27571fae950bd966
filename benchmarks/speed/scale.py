"""Scaling of smpy to 100 000 ranks: a 1-lap ring of 8 B tokens (``twins.py ring 1``).

For each np, two fresh processes: one runs the ring with 0 laps (every rank starts, imports
mpi4py, initialises and finalises: the start-up and teardown cost), one runs it with 1 lap.
Each process reports the wall and CPU time of ``smpy.run`` (process time: the machine is
shared) and its peak RSS; the ring's own cost is the difference of the two.

    python benchmarks/speed/scale.py                          # np 1024 ... 100 000
    python benchmarks/speed/scale.py --np 1024 16384 --profile 16384   # and a cProfile of start-up

Platform: ``examples/platforms/cluster64.yaml`` (64 hosts, ranks round robin), measured
computation off. Figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PLATFORM = ROOT / "examples" / "platforms" / "cluster64.yaml"
NPS = (1024, 4096, 16384, 65536, 100000)


def child(np_: int, laps: int, profile: bool) -> None:
    import resource

    import numpy  # noqa: F401 - the program's import, loaded once as a real process would

    import smpy
    import smpy.mpi  # noqa: F401

    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    r = smpy.run(str(HERE / "twins.py"), np=np_, platform=str(PLATFORM),
                 cfg={"smpi/simulate-computation": "no"}, args=["ring", str(laps)])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    if r.status != "ok":
        raise SystemExit(f"np {np_}: {r.status}: {r.message[-500:]}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("SCALE " + json.dumps({"np": np_, "laps": laps, "wall": wall, "cpu": cpu, "rss": rss,
                                 "makespan": r.makespan_s}))


def point(np_: int, laps: int, profile: bool = False) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, __file__, "--child", str(np_), str(laps)] + (["--profile", "1"] if profile else []),
                          capture_output=True, text=True, env=env)
    if profile:
        sys.stderr.write(proc.stderr)
    for line in proc.stdout.splitlines():
        if line.startswith("SCALE "):
            return json.loads(line[6:])
    raise RuntimeError(f"np {np_} laps {laps} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", nargs="+", type=int, default=list(NPS))
    ap.add_argument("--profile", type=int, default=0, help="np whose start-up (0 laps) is profiled")
    ap.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.child:
        child(ns.child[0], ns.child[1], bool(ns.profile))
        return 0
    if ns.profile:
        point(ns.profile, 0, profile=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; 1-lap ring, "
          f"one process per point; CPU = process time of smpy.run")
    print(f"{'np':>7}{'start wall':>12}{'start CPU':>11}{'ring wall':>11}{'ring CPU':>10}{'total CPU':>11}"
          f"{'CPU/rank':>10}{'x first':>10}{'linear':>9}{'peak RSS':>10}{'KiB/rank':>10}")  # RSS slope from the first np
    base = first = None
    for np_ in ns.np:
        s, r = point(np_, 0), point(np_, 1)
        per = r["cpu"] / np_ * 1e6
        base = base or r["cpu"]
        first = first or r
        slope = (r["rss"] - first["rss"]) * 1024 / (np_ - first["np"]) if np_ > first["np"] else float("nan")
        print(f"{np_:>7}{s['wall']:>11.2f}s{s['cpu']:>10.2f}s{r['wall'] - s['wall']:>10.2f}s"
              f"{r['cpu'] - s['cpu']:>9.2f}s{r['cpu']:>10.2f}s{per:>8.0f}us{r['cpu'] / base:>10.1f}{np_ / ns.np[0]:>9.1f}"
              f"{r['rss']:>8.0f}MB{slope:>10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
