"""Payload copies and page faults per message, and the OSU demos against MPICH (issue 24 item 2,
issue 18 item 8).

Three parts, each printed as a table:

1. **Copies per message by size class** (``smpy.runtime.copies``, the runtime's copy ledger):
   ``benchmarks/programs/pingpong_sizes.py`` in three patterns (ping-pong, an osu_bw-like
   window of 16 Isend/Irecv, and receives posted late) under ``smpy.run`` in a child process;
   copies per message and bytes copied per message byte, by kind (``pack``, ``stage``,
   ``recv``). A real MPI library copies once (posted receive, rendezvous) or twice (eager
   message arriving unexpected).
2. **Page faults and CPU per message**: the ping-pong (256 MiB each way per size, 20 to 2000
   round trips) under ``smpyrun -np 2`` and ``mpiexec -n 2`` (MPICH); the program reads
   ``getrusage`` around its loop (between barriers, after a warm-up round trip): minor faults
   and CPU µs per message, start-up excluded (smpy: the one process of all ranks; MPICH: the
   sum of its two rank processes).
3. **osu_bw / osu_bibw / osu_latency** from mpi4py 4.1.2's ``demo/`` (the conformance cache,
   ``conformance/.cache``; ``--demo-dir`` otherwise), unmodified (1 B to 4 MiB), under
   ``smpyrun -np 2`` (default configuration, as a user runs them) and ``mpiexec -n 2``,
   alternately (the order flips every pair), ``--pairs`` pairs: median wall and CPU time
   (user + system of the whole process tree, from ``RUSAGE_CHILDREN``), minor faults, and
   the median of the per-pair ratios smpy / MPICH. Every run is listed first with what can
   make two runs of the same code differ: the path the smpy run took (its ``--json``:
   compiled accelerator with each extension, or pure Python), its event count, major faults,
   involuntary context switches, the machine's steal time over the run (``/proc/stat``) and
   a speed probe taken just before it (two fixed Python loops; on this KVM guest the same
   run's CPU time moves by up to 2x with what else runs, with no steal reported: compare
   runs only when their probes agree). Before the runs, the tree's bytecode is compiled and
   one unmeasured smpy run builds the compiled extensions (``warm_up``), as an installed smpy
   has them.

    python benchmarks/speed/copies.py                     # all parts, 3 pairs
    python benchmarks/speed/copies.py --parts ledger      # part 1 only
    python benchmarks/speed/copies.py --src /tmp/before   # measure another tree (PYTHONPATH)

Figures only. Quote CPU time: this machine's load moves wall time by 2x between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROGRAM = ROOT / "benchmarks" / "programs" / "pingpong_sizes.py"
DEMO = ROOT / "conformance" / ".cache" / "mpi4py-4.1.2" / "demo"
BIN = Path(sys.executable).parent
SIZES = [1, 1024, 16384, 65536, 1 << 20, 8 << 20]
PATTERNS = ("pingpong", "window", "late")

LEDGER_CHILD = r"""
import json, sys
import smpy
from smpy.runtime import copies
out = {}
for pattern in sys.argv[3:]:
    for size in json.loads(sys.argv[2]):
        led = copies.start()
        res = smpy.run(sys.argv[1], np=2, args=[str(size), "4", pattern], capture=True,
                       cfg={"smpi/simulate-computation": "no"})
        copies.stop()
        if res.status != "ok":
            raise SystemExit(res.message)
        msgs = led.messages.get(size, 0)
        kinds = {k: [c[0], c[1]] for (k, s), c in led.copies.items() if s == size}
        out[f"{pattern} {size}"] = {"messages": msgs, "kinds": kinds}
print(json.dumps(out))
"""


def child_env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = src
    return env


def ledger_part(src: str | None, sizes: list[int]) -> None:
    print("\n## Copies per message (runtime copy ledger; 4 round trips / windows per size)\n")
    proc = subprocess.run([sys.executable, "-c", LEDGER_CHILD, str(PROGRAM), json.dumps(sizes), *PATTERNS],
                          capture_output=True, text=True, env=child_env(src), timeout=1800)
    if proc.returncode != 0:
        print(f"(no copy ledger in this tree: {proc.stderr.strip().splitlines()[-1:]})")
        return
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"| {'pattern':<9} | {'size B':>8} | {'messages':>8} | {'pack':>5} | {'stage':>5} | {'recv':>5} | "
          f"{'copies/msg':>10} | {'bytes copied/msg byte':>21} |")
    print("|" + "|".join("-" * w for w in (11, 10, 10, 7, 7, 7, 12, 23)) + "|")
    for pattern in PATTERNS:
        for size in sizes:
            row = data[f"{pattern} {size}"]
            n = row["messages"] or 1
            k = row["kinds"]
            cnt = {kind: k.get(kind, [0, 0])[0] / n for kind in ("pack", "stage", "recv")}
            total_b = sum(v[1] for v in k.values()) / n
            print(f"| {pattern:<9} | {size:>8} | {row['messages']:>8} | {cnt['pack']:>5.2f} | {cnt['stage']:>5.2f} | "
                  f"{cnt['recv']:>5.2f} | {sum(cnt.values()):>10.2f} | {total_b / max(size, 1):>21.2f} |")


def steal_ticks() -> int:
    """The machine's stolen CPU ticks so far (``/proc/stat``'s steal column, 1/100 s; 0 where
    absent): a VM whose host runs others shows it."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) if fields[0] == "cpu" and len(fields) > 8 else 0
    except (OSError, ValueError):
        return 0


_CHASE: tuple[list[int], list[list[int]]] | None = None


def speed_probe() -> tuple[float, float]:
    """CPU ms of two fixed pure-Python loops: calls, attribute and dict work in cache (as the
    emulator's per-message path), and a walk over a million objects in random order (the
    emulator's working set does not fit in the caches). A machine that got slower between
    runs (frequency, a busy hyperthread sibling, a noisy neighbour the guest does not see as
    steal, caches shared with other jobs) shows here, the same for both emulators."""
    global _CHASE

    class Box:
        __slots__ = ("v",)

        def __init__(self) -> None:
            self.v = 0

        def add(self, k: int) -> None:
            self.v += k

    t0 = time.thread_time()
    box, d = Box(), {}
    for i in range(300_000):
        box.add(i & 7)
        d[i & 255] = box.v
    loop = (time.thread_time() - t0) * 1e3
    if _CHASE is None:
        perm = list(range(1 << 20))
        random.Random(1).shuffle(perm)
        _CHASE = perm, [[i] for i in range(1 << 20)]
    perm, objs = _CHASE
    t0 = time.thread_time()
    i = s = 0
    for _ in range(100_000):
        i = perm[i]
        s += objs[i][0]
    return loop, (time.thread_time() - t0) * 1e3


def measure(cmd: list[str], env: dict[str, str], timeout: float = 1800,
            json_path: str | None = None) -> dict[str, Any]:
    """One run: wall s, CPU s, minor and major faults and involuntary switches of the whole
    process tree (RUSAGE_CHILDREN delta: runs are sequential, and mpiexec's proxies reap the
    ranks), the machine's steal over the run and the speed probe just before it; with
    ``json_path`` (an smpy run given ``--json``), the path the run took: whether the compiled
    accelerator ran, and each of its extensions."""
    probe = speed_probe()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = steal_ticks()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        raise
    wall = time.perf_counter() - t0
    steal = (steal_ticks() - s0) / 100
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode()[-1500:]}")
    got: dict[str, Any] = {
        "wall": wall, "cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
        "sys": r1.ru_stime - r0.ru_stime, "minflt": float(r1.ru_minflt - r0.ru_minflt),
        "majflt": float(r1.ru_majflt - r0.ru_majflt), "nivcsw": float(r1.ru_nivcsw - r0.ru_nivcsw),
        "steal": steal, "probe": probe, "out": out.decode()}
    if json_path:
        with open(json_path) as f:
            res = json.load(f)
        parts = res.get("accel_parts") or {}
        off = [k for k, v in parts.items() if v != "on"]
        got["path"] = ("accel" + (f"-{'-'.join(off)}" if off else "")) if res.get("accelerated") else "python"
        got["events"] = float(res.get("events", 0))
        # the share of the measured computation that became simulated bursts: the rest were
        # bursts below smpi/cpu-threshold (1 us), and a slower machine moves bursts over it
        measured = sum(r["measured_compute_s"] for r in res.get("ranks", []))
        got["simulated"] = sum(r["simulated_flops"] for r in res.get("ranks", [])) / 1e9 / measured if measured else 0.0
    return got


def commands(script: Path, args: list[str], mpiexec: str) -> dict[str, list[str]]:
    return {"smpy": [str(BIN / "smpyrun"), "-np", "2", str(script), *args],
            "mpich": ["timeout", "1800", mpiexec, "-n", "2", sys.executable, str(script), *args]}


def reps_for(size: int) -> int:
    """Round trips of the measured window: 256 MiB each way, 20 to 2000."""
    return max(20, min(2000, (256 << 20) // max(size, 1)))


def window_cost(out: str, emulated: bool) -> tuple[float, float]:
    """CPU s and minor faults of the measured window: smpy's process is every rank (rank 0's
    line), MPICH's ranks are processes of their own (the sum)."""
    rows = re.findall(r"rusage (\d+) ([\d.]+) (\d+)", out)  # the ranks' lines may interleave
    if emulated:
        rows = [r for r in rows if r[0] == "0"]
    return sum(float(r[1]) for r in rows), sum(float(r[2]) for r in rows)


def faults_part(src: str | None, sizes: list[int], pairs: int, mpiexec: str) -> None:
    print("\n## Cost of one message in a ping-pong window (rusage of the loop, median of "
          f"{pairs} runs alternating smpy / MPICH)\n")
    print(f"| {'size B':>8} | {'round trips':>11} | {'smpy minflt/msg':>15} | {'MPICH minflt/msg':>16} | "
          f"{'smpy CPU us/msg':>15} | {'MPICH CPU us/msg':>16} |")
    print("|" + "|".join("-" * w for w in (10, 13, 17, 18, 17, 18)) + "|")
    env = child_env(src)
    for size in sizes:
        reps = reps_for(size)
        cmds = commands(PROGRAM, [str(size), str(reps), "pingpong", "rusage"], mpiexec)
        got: dict[str, list[tuple[float, float]]] = {"smpy": [], "mpich": []}
        for i in range(pairs):
            for who in (("smpy", "mpich") if i % 2 == 0 else ("mpich", "smpy")):
                got[who].append(window_cost(measure(cmds[who], env)["out"], who == "smpy"))
        msgs = 2 * reps
        med = {w: (statistics.median(c for c, _ in v) / msgs * 1e6, statistics.median(f for _, f in v) / msgs)
               for w, v in got.items()}
        print(f"| {size:>8} | {reps:>11} | {med['smpy'][1]:>15.2f} | {med['mpich'][1]:>16.2f} | "
              f"{med['smpy'][0]:>15.1f} | {med['mpich'][0]:>16.1f} |")


def warm_up(src: str | None, demo: Path, names: list[str], env: dict[str, str], mpiexec: str) -> None:
    """What an installed smpy has before its first run: the tree's bytecode (``pip install``
    compiles it; with ``PYTHONDONTWRITEBYTECODE`` set, as on this machine, a run from a source
    tree would otherwise compile every module, about 0.3 s, each time) and the compiled
    extensions (built on first use into ``~/.cache/smpy``): one unmeasured run."""
    tree = Path(src) if src else ROOT
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "smpy")], env=env,
                   capture_output=True, timeout=600)
    script = demo / f"{names[0]}.py"
    if script.exists():
        subprocess.run(commands(script, [], mpiexec)["smpy"], env=env, capture_output=True, timeout=1800)


def osu_part(src: str | None, demo: Path, names: list[str], pairs: int, mpiexec: str) -> None:
    print(f"\n## mpi4py demo/ OSU benchmarks at np 2, {pairs} alternating pairs (medians)\n")
    print("Every run, in order (path: the smpy run's --json, `accel` = the compiled accelerator with "
          "every extension, `python` = the pure-Python path; steal: the machine's stolen CPU s over the "
          "run, /proc/stat; probe: CPU ms of two fixed Python loops just before the run, in cache / "
          "over a million objects; simulated share: the part of the measured computation at or above "
          "smpi/cpu-threshold, which became simulated bursts (at 1 Gf, the default host speed)):\n")
    print("| program | who | path | events | simulated share | wall s | CPU s | minflt | majflt | invol. switches | steal s | probe ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    env = child_env(src)
    table = []
    warm_up(src, demo, names, env, mpiexec)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            script = demo / f"{name}.py"
            if not script.exists():
                print(f"| {name} | (missing: {script}) |")
                continue
            cmds = commands(script, [], mpiexec)
            jpath = os.path.join(tmp, "run.json")
            cmds["smpy"][1:1] = ["--json", jpath]
            runs: dict[str, list[dict[str, Any]]] = {"smpy": [], "mpich": []}
            for i in range(pairs):
                for who in (("smpy", "mpich") if i % 2 == 0 else ("mpich", "smpy")):
                    r = measure(cmds[who], env, json_path=jpath if who == "smpy" else None)
                    runs[who].append(r)
                    print(f"| {name} | {who} | {r.get('path', 'mpich')} | {r.get('events', 0):.0f} | {r.get('simulated', 0):.3f} | "
                          f"{r['wall']:.2f} | "
                          f"{r['cpu']:.2f} | {r['minflt']:.0f} | {r['majflt']:.0f} | {r['nivcsw']:.0f} | "
                          f"{r['steal']:.2f} | {r['probe'][0]:.1f} / {r['probe'][1]:.1f} |", flush=True)
            table.append((name, runs))
    print(f"\n| {'program':<11} | {'smpy wall s':>11} | {'MPICH wall s':>12} | {'wall ratio':>10} | {'smpy CPU s':>10} | "
          f"{'MPICH CPU s':>11} | {'CPU ratio':>9} | {'smpy minflt':>11} | {'MPICH minflt':>12} | smpy path |")
    print("|" + "|".join("-" * w for w in (13, 13, 14, 12, 12, 13, 11, 13, 14, 11)) + "|")
    for name, runs in table:
        med = {w: {k: statistics.median(r[k] for r in runs[w]) for k in ("wall", "cpu", "minflt")} for w in runs}
        wr = statistics.median(a["wall"] / b["wall"] for a, b in zip(runs["smpy"], runs["mpich"]))
        cr = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(runs["smpy"], runs["mpich"]))
        s, m = med["smpy"], med["mpich"]
        paths = ",".join(sorted({r["path"] for r in runs["smpy"]}))
        print(f"| {name:<11} | {s['wall']:>11.2f} | {m['wall']:>12.2f} | {wr:>9.2f}x | {s['cpu']:>10.2f} | "
              f"{m['cpu']:>11.2f} | {cr:>8.2f}x | {s['minflt']:>11.0f} | {m['minflt']:>12.0f} | {paths} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="ledger,faults,osu", help="comma list of ledger, faults, osu")
    ap.add_argument("--src", default=None, help="import smpy from this tree (PYTHONPATH of the children)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--osu", default="osu_bw,osu_bibw,osu_latency")
    ap.add_argument("--demo-dir", default=str(DEMO))
    ap.add_argument("--mpiexec", default=str(BIN / "mpiexec") if (BIN / "mpiexec").exists() else "mpiexec")
    a = ap.parse_args()
    parts = a.parts.split(",")
    print(f"# payload copies: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, smpy from {a.src or 'PYTHONPATH/installed'}")
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(("SMPY_", "PYTHON", "XDG_CACHE", "MPI4PY_"))}
    print(f"# environment that changes the path or speed: {env or 'none'}; python {sys.version.split()[0]}")
    if "ledger" in parts:
        ledger_part(a.src, SIZES)
    if "faults" in parts:
        faults_part(a.src, SIZES, a.pairs, a.mpiexec)
    if "osu" in parts:
        osu_part(a.src, Path(a.demo_dir), a.osu.split(","), a.pairs, a.mpiexec)


if __name__ == "__main__":
    main()
