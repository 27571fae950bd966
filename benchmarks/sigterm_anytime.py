"""SIGTERM at any moment of an ``smpyrun`` run: are the trace and the ``--json`` summary valid?

Runs ``smpyrun -np 8 --trace T --json J examples/heat.py 4096 2000`` once to time it (wall T),
then N more times, each sent SIGTERM at a moment drawn uniformly in [0, T) (seeded), and checks
each time that the trace parses as JSON (a Chrome trace: a list of events) and that the summary
parses and records status ``interrupted``, exit code 143 (or ``ok`` when the run ended first).
Prints one line per run and the count; what smpy cannot cover is the interpreter's own start
before smpyrun's handler is installed (reported as "before the handler").

    python benchmarks/sigterm_anytime.py            # 10 moments, seed 1
    python benchmarks/sigterm_anytime.py --runs 20 --seed 2
    python benchmarks/sigterm_anytime.py --within 0.5    # the first half second only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(tmp: Path) -> list[str]:
    exe = Path(sys.executable).parent / "smpyrun"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    return [*base, "-q", "-np", "8", "--trace", str(tmp / "trace.json"), "--json", str(tmp / "run.json"),
            str(ROOT / "examples" / "heat.py"), "4096", "2000"]


def check(tmp: Path) -> tuple[bool, str]:
    try:
        events = json.loads((tmp / "trace.json").read_text())
        assert isinstance(events, list)
    except (OSError, ValueError, AssertionError) as exc:
        return False, f"trace invalid ({type(exc).__name__})"
    try:
        data = json.loads((tmp / "run.json").read_text())
    except (OSError, ValueError) as exc:
        return False, f"json invalid ({type(exc).__name__})"
    return True, f"status {data['status']}, exit code {data['exit_code']}, makespan {data['makespan_s']:.4g} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--within", type=float, default=None, metavar="SECONDS",
                    help="draw the moments in [0, SECONDS) instead of the whole run (the start-up)")
    ns = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.perf_counter()
        subprocess.run(command(tmp), env=env, check=True, capture_output=True)
        full = time.perf_counter() - t0
    print(f"uninterrupted run: {full:.2f} s wall")
    rng = random.Random(ns.seed)
    good = 0
    for i in range(ns.runs):
        at = rng.uniform(0.0, ns.within if ns.within else full)
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            p = subprocess.Popen(command(tmp), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            time.sleep(at)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=120)
            ok, what = check(tmp)
            if p.returncode == -signal.SIGTERM:
                what += " (killed before the handler was installed)"
            elif ok and p.returncode not in (0, 143):
                ok, what = False, f"{what}; unexpected exit code {p.returncode}"
            good += ok
            print(f"run {i + 1:2d}: SIGTERM at {at:6.3f} s -> exit {p.returncode:4d}: "
                  f"{'valid' if ok else 'INVALID'}: {what}")
    print(f"trace and JSON valid in {good}/{ns.runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
