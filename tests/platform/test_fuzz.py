"""Seeded fuzzing of platform files, hostfiles and command lines (``fuzzgen.py``): 300
mutants of the bundled and documented platforms, run in one worker process under a 3 GiB
address-space limit and 20 s per case. None may end in a traceback, a hang, a MemoryError,
an error that does not name the file (or setting, or option), or be accepted although it is
certainly wrong. ``benchmarks/fuzz_platforms.py`` runs a larger campaign."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from fuzzgen import generate  # noqa: E402

SEED = 2026
CASES = 300
BAD = ("traceback", "hang", "memory", "unnamed", "silent")


def test_generator_is_deterministic_and_varied() -> None:
    first, again = generate(SEED, 60), generate(SEED, 60)
    assert [(c.kind, c.content, c.argv) for c in first] == [(c.kind, c.content, c.argv)
                                                           for c in again]
    assert {c.kind for c in first} == {"yaml", "xml", "cli"}
    assert len({c.content for c in first}) > 40


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and SIGALRM per case")
def test_fuzz_cases_fail_cleanly() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
           "SMPY_CACHE_DIR": ""}
    proc = subprocess.run([sys.executable, str(HERE / "fuzzgen.py"), str(SEED), str(CASES),
                           "--limit-mb", "3072", "--timeout", "20"],
                          capture_output=True, text=True, env=env, timeout=600)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [r for r in lines if "outcome" in r]
    started = [r["start"] for r in lines if "start" in r]
    assert proc.returncode == 0 and len(results) == CASES, (
        f"the worker stopped (exit {proc.returncode}) at case {started[-1] if started else None}:"
        f" {proc.stderr[-2000:]}")
    counts = Counter(r["outcome"] for r in results)
    failures = [f"{r['id']} {r['outcome']}: {r['mutation']} | {r['detail']}" for r in results
                if r["outcome"] in BAD]
    assert not failures, "\n".join(failures)
    # the mutants are mostly wrong: most must be rejected, and some must still load
    assert counts["rejected"] > CASES // 2 and counts["accepted"] > 10, counts
