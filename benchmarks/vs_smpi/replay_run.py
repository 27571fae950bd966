"""Differential benchmark of trace replay: SMPI's ``smpirun -replay`` vs ``smpy replay`` on
time-independent traces recorded by SMPI (``smpirun -trace-ti``).

    python benchmarks/vs_smpi/replay_run.py                       # ring stencil allreduce mix nbv, np 4 16 64
    python benchmarks/vs_smpi/replay_run.py --np 16 --cases ring --selector ompi

Both replays use the same platform (cluster64.xml; smpy reads the XML too), hostfile and
collective selector (``default``, SMPI's own default, unless --selector). Prints SMPI's
replay time, smpy's, the relative error and each tool's wall time. Exits 0 when SMPI is
missing unless --require-smpi.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
XML = HERE / "cluster64.xml"
CASES = ("ring", "stencil", "allreduce", "mix", "nbv")
_SMPI_TIME = re.compile(r"Simulation time ([0-9.eE+-]+)")
_SMPY_TIME = re.compile(r"simulation time ([0-9.eE+-]+) s")


def _call(cmd: list[str], cwd: Path) -> tuple[str, float]:
    t0 = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout + done.stderr, time.perf_counter() - t0


def record(binary: Path, case: str, np_: int, hostfile: Path, tmp: Path) -> Path:
    index = tmp / f"{case}_{np_}.ti"
    _call(["smpirun", "-np", str(np_), "-platform", str(XML), "-hostfile", str(hostfile),
           "-trace-ti", f"--cfg=tracing/filename:{index.name}", "--cfg=smpi/simulate-computation:no",
           str(binary), case], tmp)
    return index


def replay_smpi(index: Path, np_: int, hostfile: Path, selector: str) -> tuple[float, float]:
    out, wall = _call(["smpirun", "-np", str(np_), "-platform", str(XML), "-hostfile", str(hostfile),
                       f"--cfg=smpi/coll-selector:{selector}", "-replay", str(index)], index.parent)
    times = [float(x) for x in _SMPI_TIME.findall(out)]
    return max(times), wall


def replay_smpy(index: Path, np_: int, hostfile: Path, selector: str) -> tuple[float, float]:
    out, wall = _call([sys.executable, "-m", "smpy", "replay", "-q", "-np", str(np_), "--platform",
                       str(XML), "--hostfile", str(hostfile), f"--cfg=smpi/coll-selector:{selector}",
                       str(index)], index.parent)
    return float(_SMPY_TIME.search(out).group(1)), wall


def compare(nps: list[int], cases: list[str], selector: str = "default", require: bool = False
            ) -> list[tuple]:
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        msg = "SimGrid SMPI (smpicc/smpirun) not found: install Debian's libsimgrid-dev"
        if require:
            raise RuntimeError(msg)
        print(msg)
        return []
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        binary = tmp / "ti_cases"
        subprocess.run(["smpicc", "-O2", str(HERE / "ti" / "ti_cases.c"), "-o", str(binary)],
                       check=True, capture_output=True)
        hostfile = tmp / "hosts.txt"
        hostfile.write_text("".join(f"node-{i}\n" for i in range(64)))
        for np_ in nps:
            for case in cases:
                index = record(binary, case, np_, hostfile, tmp)
                t_ref, w_ref = replay_smpi(index, np_, hostfile, selector)
                t_got, w_got = replay_smpy(index, np_, hostfile, selector)
                err = (t_got - t_ref) / t_ref
                rows.append((case, np_, t_ref, t_got, err, w_ref, w_got))
                print(f"{case:<12}{np_:>6}{t_ref:>16.9e}{t_got:>16.9e}{err:>10.3%}"
                      f"{w_ref:>10.2f}s{w_got:>10.2f}s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", nargs="+", type=int, default=[4, 16, 64])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--selector", default="default")
    ap.add_argument("--require-smpi", action="store_true")
    opts = ap.parse_args(argv)
    print(f"{'case':<12}{'np':>6}{'SMPI replay':>16}{'smpy replay':>16}{'error':>10}"
          f"{'wall SMPI':>11}{'wall smpy':>11}")
    rows = compare(opts.np, opts.cases, opts.selector, opts.require_smpi)
    if rows:
        print(f"\n{len(rows)} cases: max |error| {max(abs(r[4]) for r in rows):.3%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
