"""Side by side: smpy against SimGrid SMPI on the patterns of issue 24, CPU time, wall time, peak RSS.

Each case runs the C program ``twins.c`` (compiled with ``smpicc``) under ``smpirun`` and its
mpi4py twin ``twins.py`` under smpy, on the same platform (``benchmarks/vs_smpi/cluster64.xml``
and ``examples/platforms/cluster64.yaml``: 64 hosts, ranks placed round robin), with the same
collective selector pinned on both sides (``smpi/coll-selector``, ``ompi`` unless ``--selector``)
and measured computation switched off (flops are injected). The two emulators run alternately,
``--pairs`` A/B pairs per case (the order flips every pair), each in a fresh process; the child's
CPU time (user + system) and peak RSS come from ``wait4``. Printed per case: both simulated
times and their relative difference, the median CPU and wall time of each side, the median of
the per-pair ratios smpy / SMPI, and the peak RSS.

    python benchmarks/speed/side_by_side.py                       # the issue's table, 3 pairs
    python benchmarks/speed/side_by_side.py --cases ring100 --pairs 5
    python benchmarks/speed/side_by_side.py --quick               # np / 16: a smoke run

Quote CPU time: on a loaded machine wall time moves by 2x between runs. Figures only; exits 0
without SMPI unless ``--require-smpi``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from childproc import run_child  # noqa: E402 - benchmarks/childproc.py, shared with vs_smpi/run.py

XML = ROOT / "benchmarks" / "vs_smpi" / "cluster64.xml"
YAML = ROOT / "examples" / "platforms" / "cluster64.yaml"
NHOSTS = 64
#: case -> (np, pattern, argument, description)
CASES = {
    "ring100": (1024, "ring", 100, "ring, 8 B token, 100 laps"),
    "ring1000": (1024, "ring", 1000, "ring, 8 B token, 1000 laps"),
    "pingpong": (256, "pingpong", 10, "ping-pong 1 B - 8 MiB, 10 round trips per size"),
    # the first SMP-aware collective on a communicator (ompi selector, 16 ranks per host) builds
    # its node map with a ring allgather, ~1 M messages at np 1024 on both emulators
    "stencil": (1024, "stencil", 20, "1-D stencil, 2 Sendrecv (8 KiB) + Allreduce (8 B) per step, 20 steps"),
    "allreduce": (1024, "allreduce", 10, "Allreduce 1 MiB x 10"),
}


def measure(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 3600) -> dict:
    """Run ``cmd`` once; its stdout, wall s, CPU s (user + system) and peak RSS MiB, the
    child's own (``wait4``, benchmarks/childproc.py)."""
    c = run_child(cmd, env=env, timeout=timeout)
    return {"out": c.out, "wall": c.wall, "cpu": c.cpu, "rss": c.rss}


def sim_time(out: str) -> float:
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                return float(parts[1])
            except ValueError:
                continue
    return float("nan")


def smpi_cmd(binary: Path, hostfile: Path, np_: int, pattern: str, arg: int, selector: str) -> list[str]:
    return ["smpirun", "-np", str(np_), "-platform", str(XML), "-hostfile", str(hostfile),
            "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no",
            f"--cfg=smpi/coll-selector:{selector}", "--log=root.thres:critical",
            str(binary), pattern, str(arg)]


def smpy_cmd(np_: int, pattern: str, arg: int, selector: str, accel: str = "auto") -> list[str]:
    return [sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(YAML),
            "--cfg=smpi/simulate-computation:no", f"--cfg=smpi/coll-selector:{selector}",
            f"--cfg=smpy/accel:{accel}", str(HERE / "twins.py"), pattern, str(arg)]


def run_case(name: str, np_: int, pattern: str, arg: int, pairs: int, binary: Path, hostfile: Path,
             selector: str, log, modes: tuple[str, ...] = ("auto",)) -> list[dict]:
    """``pairs`` rounds of SMPI and smpy under each ``smpy/accel`` mode of ``modes``, the
    order rotated every round; one result per mode, its ratios taken against the SMPI run of
    the same round."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    sides = ["smpi", *modes]
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    for i in range(pairs):
        order = sides[i % len(sides):] + sides[:i % len(sides)]
        if i % 2:
            order.reverse()
        for side in order:
            if side == "smpi":
                runs[side].append(measure(smpi_cmd(binary, hostfile, np_, pattern, arg, selector)))
            else:
                runs[side].append(measure(smpy_cmd(np_, pattern, arg, selector, side), env=env))
        log(f"  {name} round {i + 1}/{pairs}: " + ", ".join(
            f"{'SMPI' if side == 'smpi' else 'smpy accel ' + side} cpu {runs[side][-1]['cpu']:.2f} s" for side in sides))
    med = statistics.median
    a_runs = runs["smpi"]
    out = []
    for mode in modes:
        b_runs = runs[mode]
        out.append({
            "case": name if len(modes) == 1 else f"{name}[{mode}]", "np": np_,
            "sim_smpi": sim_time(a_runs[0]["out"]), "sim_smpy": sim_time(b_runs[0]["out"]),
            "cpu_smpi": med(r["cpu"] for r in a_runs), "cpu_smpy": med(r["cpu"] for r in b_runs),
            "wall_smpi": med(r["wall"] for r in a_runs), "wall_smpy": med(r["wall"] for r in b_runs),
            "cpu_ratio": med(b["cpu"] / a["cpu"] for a, b in zip(a_runs, b_runs)),
            "wall_ratio": med(b["wall"] / a["wall"] for a, b in zip(a_runs, b_runs)),
            "rss_smpi": max(r["rss"] for r in a_runs), "rss_smpy": max(r["rss"] for r in b_runs),
        })
    return out


HEAD = (f"{'case':<16}{'np':>6}{'sim SMPI s':>14}{'sim smpy s':>14}{'diff':>9}"
        f"{'CPU SMPI':>10}{'CPU smpy':>10}{'CPU x':>7}{'wall SMPI':>11}{'wall smpy':>11}{'wall x':>8}"
        f"{'RSS SMPI':>10}{'RSS smpy':>10}{'RSS x':>7}")


def row(r: dict) -> str:
    diff = (r["sim_smpy"] - r["sim_smpi"]) / r["sim_smpi"]
    return (f"{r['case']:<16}{r['np']:>6}{r['sim_smpi']:>14.6e}{r['sim_smpy']:>14.6e}{diff * 100:>8.3f}%"
            f"{r['cpu_smpi']:>9.2f}s{r['cpu_smpy']:>9.2f}s{r['cpu_ratio']:>6.2f}x"
            f"{r['wall_smpi']:>10.2f}s{r['wall_smpy']:>10.2f}s{r['wall_ratio']:>7.2f}x"
            f"{r['rss_smpi']:>8.0f}MB{r['rss_smpy']:>8.0f}MB{r['rss_smpy'] / r['rss_smpi']:>6.2f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--pairs", type=int, default=3, help="alternating A/B pairs per case (default 3)")
    ap.add_argument("--selector", default="ompi", help="smpi/coll-selector pinned on both sides")
    ap.add_argument("--quick", action="store_true", help="np / 16 and a tenth of the work (smoke run)")
    ap.add_argument("--require-smpi", action="store_true")
    ap.add_argument("--accel", nargs="+", default=["auto"], choices=("auto", "on", "off"),
                    help="smpy/accel of the smpy runs; several: each is a side of every round "
                         "(e.g. --accel off on: the pure-Python and the compiled path)")
    ns = ap.parse_args(argv)
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        if ns.require_smpi:
            raise SystemExit("SimGrid SMPI (smpicc/smpirun) not found: install Debian's libsimgrid-dev")
        print("skipped: SimGrid SMPI (smpicc/smpirun) not found")
        return 0
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f}; {ns.pairs} alternating rounds per case, medians; selector "
          f"{ns.selector} on both sides; smpy/accel {', '.join(ns.accel)}")
    for name in ns.cases:
        print(f"  {name}: {CASES[name][3]}")
    print(HEAD, flush=True)
    if any(m != "off" for m in ns.accel):  # build the accelerator now, not in the first measured run
        subprocess.run([sys.executable, "-c", "from smpy.kernel import accel; accel.load()"], check=True)
    # one small run per mode first: it builds what accel.load() does not (the switch hooks',
    # ...) and writes the .pyc files, whose compilation would otherwise be counted in the
    # first measured run's CPU and peak RSS (+11 MB on the 100-lap ring at np 1024)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for mode in dict.fromkeys(ns.accel):
        measure(smpy_cmd(2, "ring", 1, ns.selector, mode), env=env)
    with tempfile.TemporaryDirectory() as d:
        binary = Path(d) / "twins"
        subprocess.run(["smpicc", "-O2", str(HERE / "twins.c"), "-o", str(binary)], check=True,
                       capture_output=True)
        hostfile = Path(d) / "hosts.txt"
        hostfile.write_text("".join(f"node-{i}\n" for i in range(NHOSTS)))
        for name in ns.cases:
            np_, pattern, arg, _ = CASES[name]
            if ns.quick:
                np_, arg = max(2, np_ // 16), max(1, arg // 10)
            for r in run_case(name, np_, pattern, arg, ns.pairs, binary, hostfile, ns.selector,
                              lambda m: print(m, file=sys.stderr, flush=True), tuple(dict.fromkeys(ns.accel))):
                print(row(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
