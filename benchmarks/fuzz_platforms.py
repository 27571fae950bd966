"""A fuzz campaign against smpy's input handling (issue 25): how many mutated platform files,
hostfiles and command lines end in a traceback, a hang, exhausted memory, an error that does
not name the file, or are accepted although certainly wrong.

The cases come from ``tests/platform/fuzzgen.py`` (seeded mutations of the bundled and
documented platforms, and smpyrun command lines; the suite's ``test_fuzz.py`` runs 300 of
them). They run in worker processes under ``RLIMIT_AS`` (``--limit-mb``, default 6144: the
issue's 6 GB target) and a per-case time limit (``--timeout``); a worker that dies is
restarted after the case it was running, which counts as ``crash``.

    python benchmarks/fuzz_platforms.py                   # 700 cases, seed 1
    python benchmarks/fuzz_platforms.py --cases 2000 --seed 7 --show accepted
    python benchmarks/fuzz_platforms.py --memory          # the figures of smpy.support.memory

Prints the count of each outcome per kind of input, the workers' peak resident memory, the
wall time, and every case that is not ``accepted`` or ``rejected``.

``--memory`` measures the constants of the memory estimate (``smpy/support/memory.py``):
the peak resident size of ``smpyrun -np N`` barriers on the default platform (bytes per
rank = slope between two N) and the Python allocations (tracemalloc peak) of validating and
building a FLAT cluster of 20 000 hosts (bytes per host, its links included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "platform" / "fuzzgen.py"
OUTCOMES = ("accepted", "rejected", "unnamed", "silent", "traceback", "hang", "memory", "crash")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
            "SMPY_CACHE_DIR": ""}


def campaign(seed: int, cases: int, limit_mb: int, timeout_s: float) -> list[dict]:
    results: list[dict] = []
    while len(results) < cases:
        skip = len(results)
        proc = subprocess.run([sys.executable, str(WORKER), str(seed), str(cases), "--skip",
                               str(skip), "--limit-mb", str(limit_mb), "--timeout",
                               str(timeout_s)], capture_output=True, text=True, env=_env(),
                              timeout=max(600.0, 3 * timeout_s * (cases - skip)))
        started = None
        for line in proc.stdout.splitlines():
            if not line.startswith("{"):
                continue
            item = json.loads(line)
            if "start" in item:
                started = item["start"]
            else:
                results.append(item)
                started = None
        if len(results) < cases:  # the worker died in the middle of a case
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            results.append({"id": started or f"{seed}-{len(results)}", "kind": "?",
                            "mutation": "", "outcome": "crash",
                            "detail": f"exit {proc.returncode}: {tail[0][:200]}"})
    return results


def report(results: list[dict], wall_s: float, show: set[str]) -> None:
    by_kind: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        by_kind[r["kind"]][r["outcome"]] += 1
        by_kind["all"][r["outcome"]] += 1
    print(f"{'kind':6} {'cases':>6} " + " ".join(f"{o:>9}" for o in OUTCOMES))
    for kind in sorted(by_kind, key=lambda k: (k == "all", k)):
        c = by_kind[kind]
        print(f"{kind:6} {sum(c.values()):6d} " + " ".join(f"{c[o]:9d}" for o in OUTCOMES))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\nworkers' peak resident memory: {peak:.0f} MiB; wall time {wall_s:.1f} s "
          f"({1000 * wall_s / max(1, len(results)):.0f} ms per case)")
    bad = [r for r in results if r["outcome"] not in ("accepted", "rejected")
           or r["outcome"] in show]
    for r in bad:
        print(f"  {r['id']:>8} {r['outcome']:9} {r['kind']:4} {r['mutation'][:90]}"
              f"{' | ' + r['detail'][:160] if r['detail'] else ''}")


def memory_figures() -> None:
    code = "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"
    rss = {}
    for np in (1000, 4000):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np), "-c", code],
                       env=_env(), check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        rss[np] = max(after, before) * 1024.0
        print(f"smpyrun -np {np} barrier: peak resident {rss[np] / 1e6:.0f} MB")
    per_rank = (rss[4000] - rss[1000]) / 3000
    print(f"per rank: {per_rank / 1e3:.1f} kB (smpy.support.memory.RANK_BYTES = 12 kB)")
    build = ("import tracemalloc, smpy.platform.schema\n"
             "from smpy.platform import load_platform_data\n"
             "tracemalloc.start()\n"
             "p = load_platform_data({'clusters': [{'name': 'c', 'count': 20000, 'speed': '1Gf',"
             " 'bandwidth': '10Gbps', 'latency': '50us'}]}, 'x')\n"
             "print(tracemalloc.get_traced_memory()[1] / len(p.hosts), len(p.links))\n")
    out = subprocess.run([sys.executable, "-c", build], env=_env(), check=True,
                         capture_output=True, text=True).stdout.split()
    print(f"cluster of 20000 hosts ({out[1]} links): {float(out[0]) / 1e3:.2f} kB per host at "
          f"the peak (HOST_BYTES + 2 LINK_BYTES = 1.7 kB)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=700)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--limit-mb", type=int, default=6144)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    p.add_argument("--show", default="", help="also list cases with these outcomes (comma-separated)")
    p.add_argument("--memory", action="store_true", help="measure the memory-estimate figures")
    ns = p.parse_args()
    if ns.memory:
        memory_figures()
        return 0
    start = time.perf_counter()
    results = campaign(ns.seed, ns.cases, ns.limit_mb, ns.timeout)
    report(results, time.perf_counter() - start, set(filter(None, ns.show.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
