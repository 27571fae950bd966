"""Run a benchmark's child process and keep its own CPU time and peak RSS (``wait4``); build
the SMPI side of a differential benchmark (``smpi_build``).

``resource.getrusage(RUSAGE_CHILDREN)`` sums every child waited for and keeps the largest
peak RSS of them all; ``wait4`` on the child's pid gives that child's figures alone. Used by
``benchmarks/speed/side_by_side.py`` and ``benchmarks/vs_smpi/run.py``::

    import sys; sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
    from childproc import run_child
    c = run_child(["smpirun", ...])
    c.out, c.wall, c.cpu, c.rss   # stdout, wall s, user + system s, peak RSS MiB
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


class UsagePopen(subprocess.Popen):
    """A Popen that reaps its child with ``wait4`` and keeps the child's rusage in ``rusage``
    (None until it ended, or when something else reaped it)."""

    rusage: resource.struct_rusage | None = None

    def _try_wait(self, wait_flags):  # type: ignore[no-untyped-def,override]  # subprocess's hook
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return (self.pid, 0)
        if pid == self.pid:
            self.rusage = ru
        return (pid, sts)


@dataclass
class Child:
    out: str       #: its stdout
    err: str       #: its stderr
    returncode: int
    wall: float    #: wall seconds
    cpu: float     #: user + system CPU seconds of the child alone
    rss: float     #: its peak RSS, MiB (nan when unknown)


def run_child(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 3600,
              check: bool = True) -> Child:
    """Run ``cmd`` to its end; with ``check``, a non-zero exit raises RuntimeError with the
    end of its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = UsagePopen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    wall = time.perf_counter() - t0
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    ru = proc.rusage
    if ru is None:  # reaped elsewhere: the children's totals moved by this child alone
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return Child(out, err, proc.returncode, wall, cpu, float("nan"))
    return Child(out, err, proc.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0)


def smpi_build(src: Path, out: Path, require: bool = False) -> bool:
    """Compile the C program ``src`` with SimGrid's ``smpicc`` into ``out``. Without SMPI
    (no ``smpicc``/``smpirun``): False after saying so, or SystemExit with ``require``."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        msg = "SimGrid SMPI (smpicc/smpirun) not found: install Debian's libsimgrid-dev"
        if require:
            raise SystemExit(msg)
        print(f"skipped: {msg}")
        return False
    subprocess.run(["smpicc", "-O2", str(src), "-o", str(out)], check=True, capture_output=True)
    return True
