"""The max-min solves of the OSU demos, replayed: general filling against the class path.

Runs mpi4py 4.1.2's ``demo/osu_bibw.py`` (and/or ``osu_bw.py``) once under ``smpy.run`` at
np 2 (default configuration), recording every operation on the network model's max-min
system (constraints, flows added and removed, solves), then replays that sequence on a fresh
:class:`smpy.lmm.System` with the general progressive filling (``_CLASS_MIN`` out of reach)
and with the class path, ``--repeat`` times each, alternating: the CPU time of the solves
(``time.process_time``, best of the repeats) and a SHA-256 digest of every value each solve
changed. The digests must be equal (the class path is bit for bit the general filling).
Deterministic input, so unlike the end-to-end figures this one hardly depends on the load.

    python benchmarks/speed/sharing_replay.py                       # osu_bibw, 3 repeats
    python benchmarks/speed/sharing_replay.py --programs osu_bw,osu_bibw --repeat 5
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEMO = HERE.parent.parent / "conformance" / ".cache" / "mpi4py-4.1.2" / "demo"


@contextlib.contextmanager
def recording() -> Iterator[list[tuple]]:
    """The network system's operations while the block runs (every run's max-min system is
    a recording one: constraints, variables with their route, removals and solves)."""
    from smpy.lmm.maxmin import System
    from smpy.network import model

    ops: list[tuple] = []
    cids: dict[object, int] = {}
    vids: dict[object, int] = {}
    routes: dict[int, int] = {}

    class Recording(System):
        def constraint(self, capacity, data=None):
            c = super().constraint(capacity, data)
            cids[c] = len(cids)
            ops.append(("c", capacity))
            return c

        def variable(self, penalty=1.0, bound=float("inf"), uses=(), data=None, unique=False):
            v = super().variable(penalty, bound, uses, data, unique)
            vids[v] = len(vids)
            route = routes.setdefault(id(uses), len(routes))  # route tuples are cached: kept alive
            ops.append(("v", tuple((cids[c], a) for c, a in uses), route, penalty, bound, unique))
            return v

        def remove(self, v):
            ops.append(("r", vids[v]))
            return super().remove(v)

        def solve(self):
            ops.append(("s",))
            return super().solve()

    model.System = Recording
    try:
        yield ops
    finally:
        model.System = System


def record(script: Path) -> tuple[list[tuple], int]:
    """The network system's operations during one run of ``script`` at np 2."""
    import smpy

    with recording() as ops:
        res = smpy.run(str(script), np=2, capture=True)
    if res.status != "ok":
        raise SystemExit(f"{script.name}: {res.status} {res.message}")
    return ops, res.messages


def replay(ops: list[tuple], solve: Callable | None = None) -> tuple[float, str, int]:
    """CPU seconds of the solves (by ``solve``, ``System.solve`` by default), digest of the
    changed values, number of solves."""
    from smpy.lmm.maxmin import System

    s = System()
    solve = solve or type(s).solve
    cs: list = []
    vs: list = []
    uses: dict[int, tuple] = {}
    h = hashlib.sha256()
    cpu = 0.0
    solves = 0
    clock = time.process_time
    for op in ops:
        kind = op[0]
        if kind == "c":
            cs.append(s.constraint(op[1]))
        elif kind == "v":
            u = uses.get(op[2])
            if u is None:
                u = uses[op[2]] = tuple((cs[i], a) for i, a in op[1])
            vs.append(s.variable(op[3], op[4], u, None, op[5]))
        elif kind == "r":
            s.remove(vs[op[1]])
            vs[op[1]] = None
        else:
            t0 = clock()
            changed = solve(s)
            cpu += clock() - t0
            solves += 1
            for v in changed:
                h.update(v.value.hex().encode())
    return cpu, h.hexdigest()[:16], solves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default="osu_bibw")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--demo-dir", default=str(DEMO))
    a = ap.parse_args()
    from smpy.lmm import maxmin

    print(f"# max-min solves replayed: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; best of {a.repeat}, CPU s of the solves")
    print(f"| {'program':<9} | {'messages':>8} | {'solves':>7} | {'general s':>9} | {'class path s':>12} | "
          f"{'speed-up':>8} | digests equal |")
    print("|" + "|".join("-" * w for w in (11, 10, 9, 11, 14, 10, 15)) + "|")
    general_min = maxmin._CLASS_MIN
    for name in a.programs.split(","):
        ops, messages = record(Path(a.demo_dir) / f"{name}.py")
        best = {"general": (float("inf"), "", 0), "class": (float("inf"), "", 0)}
        for _ in range(a.repeat):
            for mode in ("general", "class"):
                maxmin._CLASS_MIN = 1 << 30 if mode == "general" else general_min
                got = replay(ops)
                if got[0] < best[mode][0]:
                    best[mode] = got
        maxmin._CLASS_MIN = general_min
        g, c = best["general"], best["class"]
        print(f"| {name:<9} | {messages:>8} | {g[2]:>7} | {g[0]:>9.2f} | {c[0]:>12.2f} | {g[0] / c[0]:>7.2f}x | "
              f"{'yes' if g[1] == c[1] else 'NO'} ({c[1]}) |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
