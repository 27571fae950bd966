"""Emulation cost of collective MPI-IO at scale: the IOR-like example (examples/io/ior.py) with
two-phase collective buffering forced (``romio_cb_write``/``romio_cb_read`` = ``enable``) on
the 16-server file system of examples/io/pfs16.yaml (64 compute nodes of 16 ranks), 1 MiB per
rank in 256 KiB transfers, shared file, fsync, for each process count.

Prints the simulated write and read times and, for each emulation, its CPU time (user +
system, the child's rusage: the machine's load does not inflate it), wall time and peak RSS.

    python benchmarks/io/twophase_scale.py                 # np 64 256 1024
    python benchmarks/io/twophase_scale.py --np 64 --independent   # without the hints
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IOR = ROOT / "examples" / "io" / "ior.py"
PLATFORM = ROOT / "examples" / "io" / "pfs16.yaml"
HOSTS = ROOT / "examples" / "io" / "compute.hosts"
SCRATCH = Path("/tmp/smpy-ior/scratch")


def run(np_: int, hints: bool, timeout: float) -> dict[str, float]:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(PLATFORM),
           "--hostfile", str(HOSTS), str(IOR), "-a", "mpiio", "-c", "-e", "-b", "1m", "-t", "256k",
           "-o", str(SCRATCH / f"tp{np_}.dat")]
    if hints:
        cmd += ["-H", "romio_cb_write=enable", "-H", "romio_cb_read=enable"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    wall = time.perf_counter() - t0
    _pid, _status, ru = os.wait4(proc.pid, 0) if proc.returncode is None else (0, 0, None)
    if proc.returncode != 0:
        raise SystemExit(f"np {np_} failed ({proc.returncode}):\n{err[-2000:]}")
    times = dict(re.findall(r"^(write|read)\s+\S+ MiB/s\s+(\S+) s", out, re.M))
    return {"write": float(times["write"]), "read": float(times["read"]), "wall": wall,
            **(_usage(ru) if ru is not None else _LAST)}


_LAST: dict[str, float] = {}


class _Popen(subprocess.Popen):
    """Record the child's own rusage (CPU, peak RSS) when it is waited for."""

    def _try_wait(self, wait_flags):  # type: ignore[override]
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return (self.pid, 0)
        if pid == self.pid:
            _LAST.clear()
            _LAST.update(_usage(ru))
        return (pid, sts)


def _usage(ru) -> dict[str, float]:
    return {"cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024.0}


subprocess.Popen = _Popen  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--independent", action="store_true", help="no hints (ROMIO's automatic choice)")
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {'automatic' if a.independent else 'two-phase forced'}")
    print(f"{'np':>5} {'write s':>10} {'read s':>10} {'CPU s':>8} {'wall s':>8} {'RSS MiB':>8}")
    for np_ in a.np:
        r = run(np_, not a.independent, a.timeout)
        print(f"{np_:>5} {r['write']:10.6f} {r['read']:10.6f} {r['cpu']:8.1f} {r['wall']:8.1f} {r['rss']:8.0f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
