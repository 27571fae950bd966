"""Cost of tracing: the token ring at np 1024 without a trace, with the Chrome/Perfetto
timeline (``--trace t.json``), with the Paje one (``--trace t.paje``) and with the run report
(``--report PREFIX``: per-call times and the utilisation over time).

    python benchmarks/trace_overhead.py                 # np 1024, 20 laps, 5 rounds
    python benchmarks/trace_overhead.py --np 256 --laps 40 --rounds 3 --variants none,report

Each run is a fresh ``smpyrun`` subprocess; the three variants alternate within a round so
that a busy machine slows them alike. Reported per variant: the minimum over rounds of the
process CPU time (user + system, the least disturbed by other load) and of smpy's own
"emulation wall time", and the extra cost relative to the untraced run.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RING = HERE / "programs" / "ring.py"
_WALL = re.compile(r"emulation wall time: ([0-9.]+) s")


def one(np_: int, laps: int, trace: str | None) -> tuple[float, float]:
    """(CPU seconds, emulation wall seconds) of one run; ``trace``: a timeline file, or
    ``report:PREFIX``."""
    cmd = [sys.executable, "-m", "smpy", "-np", str(np_), "--cfg=smpy/progress:no"]
    if trace and trace.startswith("report:"):
        cmd += ["--report", trace.removeprefix("report:")]
    elif trace:
        cmd += ["--trace", trace]
    cmd += [str(RING), str(laps), "obj"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=os.environ.copy())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, float(_WALL.search(done.stderr).group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=1024)
    ap.add_argument("--laps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="none,chrome,paje,report",
                    help="comma-separated among none, chrome, paje, report (default: all)")
    opts = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        known = {"none": None, "chrome": str(Path(d) / "t.json"), "paje": str(Path(d) / "t.paje"),
                 "report": "report:" + str(Path(d) / "rep")}
        names = ["none", *(v for v in opts.variants.split(",") if v and v != "none")]
        unknown = [v for v in names if v not in known]
        if unknown:
            ap.error(f"unknown variant(s) {', '.join(unknown)} (known: {', '.join(known)})")
        variants = {v: known[v] for v in names}
        best = {v: [float("inf"), float("inf")] for v in variants}
        for _ in range(opts.rounds):
            for v, trace in variants.items():
                cpu, wall = one(opts.np, opts.laps, trace)
                best[v] = [min(best[v][0], cpu), min(best[v][1], wall)]
        sizes = {v: os.path.getsize(t) for v, t in variants.items() if t and not t.startswith("report:")}
    base_cpu, base_wall = best["none"]
    print(f"ring np {opts.np}, {opts.laps} laps ({opts.np * opts.laps} messages), min of {opts.rounds} rounds")
    print(f"{'trace':<8}{'CPU s':>9}{'extra':>9}{'emul. wall s':>14}{'extra':>9}{'file MB':>9}")
    for v, (cpu, wall) in best.items():
        size = f"{sizes[v] / 1e6:9.1f}" if v in sizes else f"{'':>9}"
        print(f"{v:<8}{cpu:9.2f}{cpu / base_cpu - 1:+9.1%}{wall:14.2f}{wall / base_wall - 1:+9.1%}{size}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
