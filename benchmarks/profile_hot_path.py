"""Where the wall time of one message goes (ring at np = 1024 by default).

Two views, each in this process (run it alone: the machine's other load shows up here):

* ``--phases`` (default): wall time per message split between the ranks' own code (the
  resume of an actor: facade, runtime, timing, greenlet switch), the models' ``update()``
  (max-min solve, rate changes) and the maestro's event callbacks (flow phases, request
  completion), measured by wrapping those methods with ``perf_counter``;
* ``--cprofile N``: the N functions with the largest own time (cProfile ``tottime``), in us
  per message, with calls per message. cProfile slows everything down about 2x; read the
  figures as shares, not as absolute costs.

    python benchmarks/profile_hot_path.py                          # ring-obj, np 1024, 10 laps
    python benchmarks/profile_hot_path.py --case ring-buf --cprofile 40
    python benchmarks/profile_hot_path.py --src /tmp/other-tree    # another smpy tree
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLATFORM = HERE.parent / "examples" / "platforms" / "cluster64.yaml"
CASES = {"ring-obj": ("ring.py", "obj"), "ring-buf": ("ring.py", "buf"),
         "pingpong-obj": ("pingpong.py", "obj"), "pingpong-buf": ("pingpong.py", "buf")}
CFG = {"smpi/simulate-computation": "no"}


def run_once(case: str, np: int, work: int):
    import smpy

    program, mode = CASES[case]
    return smpy.run(str(HERE / "programs" / program), np=np, platform=str(PLATFORM), cfg=dict(CFG),
                    args=[str(work), mode])


def phases(case: str, np: int, work: int, repeat: int) -> None:
    from smpy.cpu.model import CpuModel
    from smpy.kernel.actors import Actor
    from smpy.network.model import NetworkModel

    pc = time.perf_counter
    acc = {"resume": 0.0, "update": 0.0}

    def timed(cls, name, key):
        orig = getattr(cls, name)

        def wrapper(*args, **kwargs):
            t0 = pc()
            try:
                return orig(*args, **kwargs)
            finally:
                acc[key] += pc() - t0
        setattr(cls, name, wrapper)

    timed(Actor, "_resume", "resume")
    timed(NetworkModel, "update", "update")
    timed(CpuModel, "update", "update")
    print(f"{case} np={np} work={work}: us per message")
    print(f"{'run':>4} {'total':>8} {'ranks':>8} {'update':>8} {'events+loop':>12}")
    for i in range(repeat):
        acc["resume"] = acc["update"] = 0.0
        r = run_once(case, np, work)
        m = r.messages
        tot, res, upd = r.wall_s / m * 1e6, acc["resume"] / m * 1e6, acc["update"] / m * 1e6
        print(f"{i + 1:>4} {tot:8.1f} {res:8.1f} {upd:8.1f} {tot - res - upd:12.1f}")


def cprofile(case: str, np: int, work: int, top: int) -> None:
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    r = run_once(case, np, work)
    pr.disable()
    m = r.messages
    st = pstats.Stats(pr)
    total = sum(v[2] for v in st.stats.values())
    print(f"{case} np={np} work={work}: {m} messages, profiled wall {r.wall_s / m * 1e6:.1f} us/msg, "
          f"own time of all functions {total / m * 1e6:.1f} us/msg (set-up included)")
    print(f"{'us/msg':>8} {'calls/msg':>9}  function")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (fname, line, func), (_cc, nc, tt, _ct, _callers) in rows:
        where = fname.split("/smpy/")[-1] if "/smpy/" in fname else Path(fname).name
        print(f"{tt / m * 1e6:8.2f} {nc / m:9.2f}  {where}:{line}({func})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="ring-obj", choices=list(CASES))
    ap.add_argument("--np", type=int, default=1024)
    ap.add_argument("--work", type=int, default=10, help="laps (ring) or round trips (ping-pong)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="show the top N functions")
    ap.add_argument("--src", type=Path, default=None, help="import smpy from this source tree")
    a = ap.parse_args()
    if a.src is not None:
        sys.path.insert(0, str(a.src.resolve()))
    import smpy.mpi  # noqa: F401 - import the facade (and numpy) before measuring

    run_once(a.case, 4, 1)  # warm up
    if a.cprofile:
        cprofile(a.case, a.np, a.work, a.cprofile)
    else:
        phases(a.case, a.np, a.work, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
