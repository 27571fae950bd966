"""The network's max-min solves of one run, recorded, then replayed: Python solver against the
compiled one (smpy/lmm/_lmmaccel.c).

``record`` runs a program once under ``smpy.run`` and writes every operation on the network
model's max-min system (constraints, flows added and removed, solves) to a file; ``replay``
plays that sequence on fresh :class:`smpy.lmm.System` objects with ``System.solve`` in Python
and compiled, alternately, ``--repeat`` times each: the CPU time of the solves
(``time.process_time``; median of the repeats) and a SHA-256 digest of every value each solve
changed, which must be equal (the compiled solver is the Python one bit for bit). The input is
deterministic, so this figure hardly depends on anything but the machine's load.

    python benchmarks/speed/solver_replay.py record -o /tmp/bibw.ops --np 2 \\
        conformance/.cache/mpi4py-4.1.2/demo/osu_bibw.py
    python benchmarks/speed/solver_replay.py record -o /tmp/hpl3072.ops --np 3072 \\
        --platform taurus-fattree --slots 12 --cfg smpi/host-speed:55.27Gf \\
        examples/predict/hpl.py 20000 128 --ratio=4 --sample --fold --no-check --panels=1
    python benchmarks/speed/solver_replay.py replay /tmp/hpl3072.ops --repeat 3
    PYTHONPATH=/other/tree python benchmarks/speed/solver_replay.py replay /tmp/hpl3072.ops --compiled-only
"""

from __future__ import annotations

import argparse
import gzip
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sharing_replay import recording  # noqa: E402
from sharing_replay import replay as replay_with  # noqa: E402


def record(script: str, args: list[str], np_: int, platform: str | None, slots: int,
           cfg: dict[str, str], hostfile: str | None = None) -> tuple[list[tuple], object]:
    """The network system's operations during one run of ``script``."""
    import smpy

    with recording() as ops, tempfile.TemporaryDirectory() as tmp:
        if slots:
            hostfile = str(Path(tmp) / "hosts.txt")
            Path(hostfile).write_text("".join(f"node-{i}:{slots}\n" for i in range(256)))
        res = smpy.run(script, np=np_, platform=platform, cfg=cfg, args=args, hostfile=hostfile,
                       capture=True)
    if res.status != "ok":
        raise SystemExit(f"{script}: {res.status} {res.message}")
    return ops, res


def replay(ops: list[tuple], compiled: bool) -> tuple[float, str, int]:
    """CPU seconds of the solves (the compiled twin's or the Python one's), digest of the
    changed values, number of solves."""
    from smpy.lmm import maxmin
    from smpy.lmm.maxmin import System

    return replay_with(ops, maxmin._compiled()[0][1] if compiled else System.__dict__["solve"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("-o", "--output", required=True)
    rec.add_argument("--np", type=int, required=True)
    rec.add_argument("--platform")
    rec.add_argument("--slots", type=int, default=0, help="a hostfile of 256 nodes with this many slots each")
    rec.add_argument("--hostfile")
    rec.add_argument("--cfg", action="append", default=[], help="key:value")
    rec.add_argument("script")
    rec.add_argument("args", nargs=argparse.REMAINDER)
    rep = sub.add_parser("replay")
    rep.add_argument("ops")
    rep.add_argument("--repeat", type=int, default=3)
    rep.add_argument("--compiled-only", action="store_true",
                     help="the compiled solver alone (an A/B of two trees: run each with its PYTHONPATH)")
    a = ap.parse_args()
    if a.cmd == "record":
        cfg = dict(kv.split(":", 1) for kv in a.cfg)
        t0 = time.process_time()
        ops, res = record(a.script, a.args, a.np, a.platform, a.slots, cfg, a.hostfile)
        with gzip.open(a.output, "wb") as f:
            pickle.dump(ops, f, protocol=pickle.HIGHEST_PROTOCOL)
        print(f"# recorded {sum(op[0] == 's' for op in ops)} solves, {sum(op[0] == 'v' for op in ops)} flows "
              f"({getattr(res, 'messages', '?')} messages) in {time.process_time() - t0:.1f} s CPU -> {a.output}")
        return
    with gzip.open(a.ops, "rb") as f:
        ops = pickle.load(f)
    print(f"# max-min solves of {a.ops} replayed: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {a.repeat} alternating repeats, "
          f"CPU s of the solves (median)")
    if a.compiled_only:
        got = [replay(ops, True) for _ in range(a.repeat)]
        import smpy
        print(f"| solves | compiled s (median of {a.repeat}) | digest | tree |")
        print(f"| {got[0][2]} | {statistics.median(r[0] for r in got):.2f} | "
              f"{'/'.join(sorted({r[1] for r in got}))} | {Path(smpy.__file__).parent.parent} |")
        return
    runs: dict[bool, list[tuple[float, str, int]]] = {False: [], True: []}
    for i in range(a.repeat):
        for compiled in ((False, True) if i % 2 == 0 else (True, False)):
            runs[compiled].append(replay(ops, compiled))
            print(f"#   {'compiled' if compiled else 'python  '} {runs[compiled][-1][0]:8.2f} s", flush=True)
    py = statistics.median(r[0] for r in runs[False])
    cc = statistics.median(r[0] for r in runs[True])
    digests = {r[1] for r in runs[False] + runs[True]}
    n = runs[False][0][2]
    print("| solves | python s | compiled s | speed-up | per solve py / compiled | digests equal |")
    print(f"| {n} | {py:.2f} | {cc:.2f} | {py / cc:.1f}x | {py / n * 1e6:.0f} / {cc / n * 1e6:.0f} us | "
          f"{'yes' if len(digests) == 1 else 'NO'} ({min(digests)}) |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
