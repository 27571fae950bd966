"""What ``smpy replay`` costs: CPU time of replaying a ring trace, both trace layouts, the
compiled accelerator off and on, one or more smpy trees (issue 24; replay speed).

The trace is SMPI's time-independent format, written here: a ring of ``--np`` ranks passing
an 8-byte token (``send``/``recv`` of 1 MPI_DOUBLE) ``--laps`` times (no collective: the first
one on a multi-host platform builds the SMP node map, a whole-communicator allgather), either as one file holding every rank's lines (``one``) or as an index of per-rank files
(``index``, what ``smpirun -trace-ti`` writes). Every run is ``python -m smpy replay`` in a
fresh process; CPU is user + system of that child (``wait4``); the cases (tree × layout ×
accelerator) run in an order rotated every round, and the table gives the median of the
rounds. The simulated time printed by each run must be the same in every case.

    python benchmarks/speed/replay_speed.py --np 256 --laps 40 --rounds 3
    python benchmarks/speed/replay_speed.py --src /tmp/old-tree --src .     # before / after
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def ring_lines(np_: int, laps: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {r: [f"{r} init 1"] for r in range(np_)}
    for _ in range(laps):
        for r in range(np_):
            send, recv = f"{r} send {(r + 1) % np_} 0 1 0", f"{r} recv {(r - 1) % np_} 0 1 0"
            out[r] += [send, recv] if r == 0 else [recv, send]
    for r in range(np_):
        out[r].append(f"{r} finalize")
    return out


def write_traces(tmp: Path, np_: int, laps: int) -> dict[str, Path]:
    lines = ring_lines(np_, laps)
    one = tmp / "ring-one.txt"
    with open(one, "w") as fh:  # interleaved by lap, as a merged trace would be
        width = max(len(v) for v in lines.values())
        for i in range(width):
            for r in range(np_):
                if i < len(lines[r]):
                    fh.write(lines[r][i] + "\n")
    files = tmp / "ring_files"
    files.mkdir(exist_ok=True)
    for r, ls in lines.items():
        (files / f"rank-{r}.txt").write_text("\n".join(ls) + "\n")
    index = tmp / "ring.ti"
    index.write_text("".join(f"ring_files/rank-{r}.txt\n" for r in range(np_)))
    return {"one": one, "index": index}


def run_once(src: Path, trace: Path, accel: str) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "smpy", "replay", "-q", f"--cfg=smpy/accel:{accel}", str(trace)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=trace.parent)
    _, status, ru = os.wait4(p.pid, 0)
    out, err = p.stdout.read().decode(), p.stderr.read().decode()  # type: ignore[union-attr]
    p.stdout.close()  # type: ignore[union-attr]
    p.stderr.close()  # type: ignore[union-attr]
    if status != 0 or "simulation time" not in out:
        raise SystemExit(f"replay failed ({src}, {trace.name}, accel {accel}):\n{err[-2000:]}")
    return ru.ru_utime + ru.ru_stime, out.split("simulation time")[1].split()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=256)
    ap.add_argument("--laps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", action="append", type=Path, help="smpy tree (repeatable; default: this one)")
    ap.add_argument("--layouts", default="one,index")
    ap.add_argument("--accel", nargs="+", default=["off", "on"])
    ns = ap.parse_args()
    srcs = [s.resolve() for s in (ns.src or [ROOT])]
    with tempfile.TemporaryDirectory() as tmpd:
        traces = write_traces(Path(tmpd), ns.np, ns.laps)
        cases = [(s, lay, a) for s in srcs for lay in ns.layouts.split(",") for a in ns.accel]
        cpu: dict[tuple, list[float]] = {c: [] for c in cases}
        sim: set[str] = set()
        print(f"ring trace: np {ns.np}, {ns.laps} laps, {ns.np * ns.laps} messages; "
              f"load average at start {os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        for rnd in range(ns.rounds):
            k = rnd % len(cases)
            for case in cases[k:] + cases[:k]:
                s, lay, a = case
                c, t = run_once(s, traces[lay], a)
                cpu[case].append(c)
                sim.add(t)
                print(f"  round {rnd + 1}: {s.name or s} {lay:5s} accel {a:3s}: {c:.2f} s CPU, simulated {t} s", flush=True)
        print(f"load average at end {os.getloadavg()[0]:.2f}; simulated times: {sorted(sim)}")
        print("| tree | layout | accelerator | CPU (median) | min–max |")
        print("|---|---|---|---|---|")
        for case in cases:
            s, lay, a = case
            v = cpu[case]
            print(f"| {s} | {lay} | {a} | {statistics.median(v):.2f} s | {min(v):.2f}–{max(v):.2f} s |")


if __name__ == "__main__":
    main()
