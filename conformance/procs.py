"""Running a launcher (mpiexec or smpyrun) with a time limit, for the conformance scripts.

The command runs in a session of its own, so that on a timeout, and after it ends, the whole
process group is killed: a rank that hangs under real MPI cannot outlive its run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def run_group(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
              stdin: str | None = None, merge_stderr: bool = False
              ) -> tuple[int | None, float, str, str]:
    """``(exit code or None on timeout, wall seconds, stdout, stderr)``; with ``merge_stderr``
    stderr is folded into stdout (and returned empty)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            start_new_session=True)
    data = stdin.encode() if stdin is not None else None
    try:
        out, err = proc.communicate(data, timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if code is None:
        out, err = proc.communicate()
    return (code, time.perf_counter() - t0, out.decode(errors="replace"),
            (err or b"").decode(errors="replace"))
