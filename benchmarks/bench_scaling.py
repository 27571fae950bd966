"""Speed and memory of the emulator itself, np = 2 ... 1024 (docs: VALIDATION.md, "Speed
of the emulator itself").

Runs small MPI programs (``benchmarks/programs/``) under smpy on the bundled platform
``examples/platforms/cluster64.yaml`` with ``smpi/simulate-computation: no``, so that only
smpy's own cost is measured (no compute burst becomes simulated time, and none is charged to
the program). Each run happens in a fresh Python subprocess, so peak RSS is per run.

Cases (``--cases``)::

    ring-obj       token ring, lowercase comm.send / comm.recv of an int (pickled)
    ring-buf       token ring, uppercase comm.Send / comm.Recv of a 1-element numpy buffer
    pingpong-obj   ranks 2k and 2k+1 ping-pong, lowercase send / recv
    pingpong-buf   ranks 2k and 2k+1 ping-pong, uppercase Send / Recv, numpy buffer

The work per run is sized so that every np sends about ``--messages`` messages (ring:
``laps = ceil(M / np)``; ping-pong: ``reps = ceil(M / np)``). Each configuration is run
``--repeat`` times (median reported: the machine is shared and noisy) plus once with no
work (0 laps), which gives the start-up cost (greenlets, per-rank ``__main__``, first MPI
calls) and the marginal cost per message ``(wall - wall_0) / messages``.

Columns::

    wall s       emulation wall time (RunResult.wall_s: engine run, rank start-up included)
    start s      wall s of the same configuration with no work (0 laps / 0 round trips)
    calls        simulated MPI calls (RunResult.mpi_calls)
    calls/s      calls / wall
    msgs         point-to-point messages (network transfers)
    us/msg       wall / msgs
    marg us      (wall - start) / msgs: the cost of one more message
    cpu us       the same with process CPU time (less sensitive to other load on the machine)
    RSS MiB      peak resident set size of the child (ru_maxrss)
    KiB/rank     (peak RSS - peak RSS of the same case at np=1) / np
    makespan s   simulated makespan

Finally ``--idle-np`` ranks that call ``Barrier`` once and end measure the memory of an
idle rank, (RSS(np) - RSS(1)) / (np - 1), from the peak RSS and from the RSS read by the
last rank just before its Barrier (every other rank then waits in its Barrier).

    python benchmarks/bench_scaling.py                 # full run (several minutes)
    python benchmarks/bench_scaling.py --quick         # np 2, 64, 1024, fewer messages
    python benchmarks/bench_scaling.py --np 1024 --cases ring-obj --repeat 5 --json out.json

Figures only, no assertion on wall time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROGRAMS = HERE / "programs"
PLATFORM = ROOT / "examples" / "platforms" / "cluster64.yaml"
CFG = {"smpi/simulate-computation": "no"}

CASES = {
    # name: (program, mode)
    "ring-obj": ("ring.py", "obj"),
    "ring-buf": ("ring.py", "buf"),
    "pingpong-obj": ("pingpong.py", "obj"),
    "pingpong-buf": ("pingpong.py", "buf"),
    "idle": ("barrier.py", "rss"),
}

SMPI_REF = "SMPI reference (VALIDATION.md): ~11 us/msg at np=64, ~19 us/msg at np=1024"


# -- child: one run, one JSON line on stdout ------------------------------------------------
def child(spec: dict) -> None:
    import resource

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import smpy
    import smpy.mpi  # noqa: F401 - warm the facade import, which rank 0 would otherwise pay

    if spec.get("numpy"):
        import numpy  # noqa: F401
    rss_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    program, mode = CASES[spec["case"]]
    args = [mode] if spec["case"] == "idle" else [str(spec["work"]), mode]
    t0 = time.perf_counter()
    c0 = time.process_time()
    r = smpy.run(str(PROGRAMS / program), np=spec["np"], platform=str(spec["platform"]),
                 cfg=dict(CFG), args=args)
    cpu = time.process_time() - c0
    total = time.perf_counter() - t0
    idle_rss = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("RSS_KIB ")]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out = {
        "case": spec["case"], "np": spec["np"], "work": spec["work"], "status": r.status,
        "wall_s": r.wall_s, "total_s": total, "cpu_s": cpu, "idle_rss_kib": idle_rss[0] if idle_rss else None, "mpi_calls": r.mpi_calls, "messages": r.messages,
        "events": r.events, "makespan_s": r.makespan_s, "maxrss_kib": rss,
        "rss_start_kib": rss0, "rss_imports_kib": rss_imports,
        "message": r.message[-500:] if r.status != "ok" else "", "smpy": smpy.__file__,
    }
    print("BENCH-RESULT " + json.dumps(out))


def run_child(case: str, np: int, work: int, platform: Path, src: Path | None = None) -> dict:
    """One run in a fresh interpreter; ``src``: the tree to import smpy from (None: installed)."""
    spec = {"case": case, "np": np, "work": work, "platform": str(platform),
            "numpy": CASES[case][1] == "buf"}
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
                          capture_output=True, text=True, cwd=str(ROOT), env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            res = json.loads(line[len("BENCH-RESULT "):])
            if res["status"] != "ok":
                raise RuntimeError(f"{case} np={np}: run ended with status {res['status']}: {res['message']}")
            return res
    raise RuntimeError(f"{case} np={np} work={work}: child failed (rc {proc.returncode}):\n"
                       f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


# -- parent -------------------------------------------------------------------------------
def work_for(case: str, np: int, messages: int) -> int:
    if case == "idle":
        return 0
    if case.startswith("ring"):
        return max(1, math.ceil(messages / np))           # np messages per lap
    pairs = max(1, np // 2)
    return max(1, math.ceil(messages / (2 * pairs)))      # 2 messages per rep and pair


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def interleaved(trees: list[Path | None], n: int, case: str, np: int, work: int, platform: Path,
                log) -> list[list[dict]]:
    """``n`` runs of each tree, alternating trees, so that the machine's load drifts hit all."""
    runs: list[list[dict]] = [[] for _ in trees]
    for i in range(n):
        for k, src in enumerate(trees):
            runs[k].append(run_child(case, np, work, platform, src))
            log(f"  {case} np={np} work={work} tree {k} run {i + 1}/{n}: wall {runs[k][-1]['wall_s']:.3f} s")
    return runs


def summarize(case: str, np: int, work: int, runs: list[dict], zero: list[dict], baseline_kib: float) -> dict:
    wall = median_of(runs, "wall_s")
    wall0 = median_of(zero, "wall_s")
    r0 = runs[0]
    rss = median_of(runs, "maxrss_kib")
    msgs = r0["messages"]
    calls = r0["mpi_calls"]
    return {
        "case": case, "np": np, "work": work, "wall_s": wall, "wall_all": [r["wall_s"] for r in runs],
        "wall0_s": wall0, "mpi_calls": calls, "calls_per_s": calls / wall if wall > 0 else math.inf,
        "messages": msgs, "us_per_msg": wall / msgs * 1e6 if msgs else math.nan,
        "marg_us_per_msg": (wall - wall0) / msgs * 1e6 if msgs else math.nan,
        "cpu_marg_us_per_msg": (median_of(runs, "cpu_s") - median_of(zero, "cpu_s")) / msgs * 1e6 if msgs else math.nan,
        "maxrss_kib": rss, "kib_per_rank": (rss - baseline_kib) / np if np > 1 else math.nan,
        "makespan_s": r0["makespan_s"], "events": r0["events"],
    }


HEADER = (f"{'case':<13} {'tree':<6} {'wall s':>8} {'start s':>8} {'calls':>8} {'calls/s':>9} {'msgs':>7} "
          f"{'us/msg':>8} {'marg us':>8} {'cpu us':>7} {'RSS MiB':>8} {'KiB/rank':>9} {'makespan s':>11}")


def fmt_row(m: dict) -> str:
    kpr = "-" if math.isnan(m["kib_per_rank"]) else f"{m['kib_per_rank']:.1f}"
    return (f"{m['case']:<13} {m['tree']:<6} {m['wall_s']:8.3f} {m['wall0_s']:8.3f} {m['mpi_calls']:8d} "
            f"{m['calls_per_s']:9.0f} {m['messages']:7d} {m['us_per_msg']:8.1f} {m['marg_us_per_msg']:8.1f} "
            f"{m['cpu_marg_us_per_msg']:7.1f} "
            f"{m['maxrss_kib'] / 1024:8.1f} {kpr:>9} {m['makespan_s']:11.6g}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, nargs="+", default=None,
                    help="process counts (default 2 4 16 64 256 1024; --quick: 2 64 1024)")
    ap.add_argument("--cases", nargs="+", default=None, choices=[c for c in CASES if c != "idle"],
                    help="patterns to run (default: all four)")
    ap.add_argument("--messages", type=int, default=None,
                    help="approximate messages per run (default 20480; --quick: 4096)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per configuration, median reported (default 3)")
    ap.add_argument("--idle-np", type=int, default=1024, help="ranks of the idle-memory run (0: skip)")
    ap.add_argument("--platform", type=Path, default=PLATFORM)
    ap.add_argument("--quick", action="store_true", help="short run: np 2 64 1024, 4096 messages, ring cases")
    ap.add_argument("--json", type=Path, default=None, help="also write every figure to this JSON file")
    ap.add_argument("--src", type=Path, nargs="+", default=None, metavar="DIR",
                    help="import smpy from these source trees (snapshots), runs alternating between them")
    ap.add_argument("--label", nargs="+", default=None, help="names of the --src trees in the tables")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every run on stderr")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child is not None:
        child(json.loads(a.child))
        return 0
    trees: list[Path | None] = [p.resolve() for p in a.src] if a.src else [None]
    labels = a.label or ([p.name for p in a.src] if a.src else ["-"])
    if len(labels) != len(trees):
        ap.error("--label needs one name per --src tree")
    nps = a.np or ([2, 64, 1024] if a.quick else [2, 4, 16, 64, 256, 1024])
    cases = a.cases or (["ring-obj", "ring-buf", "pingpong-obj"] if a.quick else
                        ["ring-obj", "ring-buf", "pingpong-obj", "pingpong-buf"])
    messages = a.messages or (4096 if a.quick else 20480)
    repeat = a.repeat or 3

    def log(msg: str) -> None:
        if a.verbose:
            print(msg, file=sys.stderr, flush=True)

    print(f"# smpy emulator speed: platform {a.platform.name}, cfg {CFG}, ~{messages} messages/run, "
          f"median of {repeat}; python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)")
    for label, src in zip(labels, trees):
        print(f"# tree {label}: smpy imported from {src or 'the installed package'}")
    print(f"# {SMPI_REF}")
    baselines: dict[tuple[str, int], float] = {}
    for case in cases:
        base = interleaved(trees, repeat, case, 1, 1, a.platform, log)
        for k in range(len(trees)):
            baselines[(case, k)] = median_of(base[k], "maxrss_kib")
    results = []
    for np in nps:
        print(f"\nnp = {np}")
        print(HEADER)
        for case in cases:
            work = work_for(case, np, messages)
            runs = interleaved(trees, repeat, case, np, work, a.platform, log)
            zero = interleaved(trees, max(1, repeat // 2), case, np, 0, a.platform, log)
            for k, label in enumerate(labels):
                m = summarize(case, np, work, runs[k], zero[k], baselines[(case, k)])
                m["tree"] = label
                results.append(m)
                print(fmt_row(m), flush=True)
    idle = []
    if a.idle_np > 1:
        one = interleaved(trees, repeat, "idle", 1, 0, a.platform, log)
        many = interleaved(trees, repeat, "idle", a.idle_np, 0, a.platform, log)
        print(f"\nidle ranks (Barrier once), np=1 vs np={a.idle_np}:")
        for k, label in enumerate(labels):
            r1, rn = median_of(one[k], "maxrss_kib"), median_of(many[k], "maxrss_kib")
            b1, bn = median_of(one[k], "idle_rss_kib"), median_of(many[k], "idle_rss_kib")
            w = median_of(many[k], "wall_s")
            setup = median_of(many[k], "total_s") - w
            d = {"tree": label, "np": a.idle_np, "rss1_kib": r1, "rssn_kib": rn,
                 "kib_per_idle_rank": (rn - r1) / (a.idle_np - 1), "barrier_rss1_kib": b1,
                 "barrier_rssn_kib": bn, "kib_per_idle_rank_at_barrier": (bn - b1) / (a.idle_np - 1),
                 "wall_s": w, "setup_s": setup}
            idle.append(d)
            print(f"  [{label}] peak RSS       {r1 / 1024:7.1f} MiB -> {rn / 1024:7.1f} MiB: "
                  f"{d['kib_per_idle_rank']:5.1f} KiB per idle rank")
            print(f"  [{label}] RSS at Barrier {b1 / 1024:7.1f} MiB -> {bn / 1024:7.1f} MiB: "
                  f"{d['kib_per_idle_rank_at_barrier']:5.1f} KiB per idle rank")
            print(f"  [{label}] set-up {setup:.3f} s ({setup / a.idle_np * 1e6:.0f} us per rank), "
                  f"run {w:.3f} s ({w / a.idle_np * 1e6:.0f} us per rank)")
    if a.json:
        a.json.write_text(json.dumps({"messages": messages, "repeat": repeat, "results": results,
                                      "idle": idle}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
