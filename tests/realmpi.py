"""The real-MPI reference of the differential tests, with one policy for all of them.

* The reference is the ``mpiexec`` of this Python's environment (the ``mpich`` wheel, whose
  MPI is the one its mpi4py was built against), else the one on ``PATH``
  (:func:`smpy.support.mpiexec.default_mpiexec`).
* A test that needs it is **skipped only when no mpiexec exists** (``needs_mpiexec``,
  :func:`require_mpiexec`).
* A reference run that fails, or does not finish in time, **fails the test**
  (:func:`run_reference`): a broken harness must read red, never green-by-skipping.

Use the ``reference_run`` fixture (tests/conftest.py) or these helpers directly.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.support.mpiexec import default_mpiexec

_found = default_mpiexec()
#: the reference mpiexec, or None when there is none (then the differential tests skip)
MPIEXEC: str | None = _found if os.path.isabs(_found) or shutil.which(_found) else None
REASON = "no mpiexec (pip install mpich, or put MPICH's mpiexec on PATH)"
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason=REASON)
#: SimGrid's smpirun, the second reference of a few differential tests
SMPIRUN: str | None = shutil.which("smpirun")
needs_smpirun = pytest.mark.skipif(SMPIRUN is None, reason="SimGrid SMPI (smpirun) is not installed")


def require_mpiexec() -> str:
    """The mpiexec path; skips the calling test when there is none."""
    if MPIEXEC is None:
        pytest.skip(REASON)
    return MPIEXEC


def mpiexec_cmd(np: int, *args: str, python: bool = True) -> list[str]:
    """``mpiexec -n NP [python] ARGS``."""
    return [require_mpiexec(), "-n", str(np), *([sys.executable] if python else []), *args]


def reference_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def run_reference(np: int, *args: str, timeout: float = 120, cwd: str | Path | None = None,
                  env: dict[str, str] | None = None, check: bool = True, attempts: int = 1,
                  python: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``mpiexec -n NP python ARGS`` (text output captured). The test fails when the run
    times out, or (``check``) exits non-zero in each of ``attempts`` tries; ``check=False``
    is for references that are expected to fail (an MPI_Abort, an error class)."""
    cmd = mpiexec_cmd(np, *args, python=python)
    last = ""
    for _ in range(max(1, attempts)):
        p = subprocess.Popen(cmd, cwd=cwd, env=env if env is not None else reference_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # mpiexec's proxies and ranks with it
            out, err = p.communicate()
            last = f"timed out after {timeout:g} s\n{err[-2000:]}"
            continue
        proc = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        if not check or p.returncode == 0:
            return proc
        last = f"exit code {p.returncode}\n{err[-2000:]}"
    pytest.fail(f"the MPICH reference run failed ({' '.join(cmd)}): {last}")


def real_env() -> dict[str, str]:
    """:func:`reference_env` without ``PYTHONPATH``: the real mpi4py, never smpy's shim."""
    env = reference_env()
    env.pop("PYTHONPATH", None)
    return env


def app_env(with_smpy: bool) -> dict[str, str]:
    """The environment of a program run under smpy (this checkout first on ``PYTHONPATH``) or,
    ``with_smpy`` false, under the real MPI (:func:`real_env`)."""
    if not with_smpy:
        return real_env()
    env = reference_env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return env


_singleton_checked = False


def require_real_mpi4py() -> None:
    """For references run as a plain ``python`` (an MPI singleton): skip when there is no MPI
    (no mpiexec), fail when the real mpi4py cannot initialise it."""
    global _singleton_checked
    require_mpiexec()
    if _singleton_checked:
        return
    try:
        proc = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"],
                              capture_output=True, text=True, timeout=60, env=real_env())
    except subprocess.TimeoutExpired:
        pytest.fail("the real mpi4py timed out initialising MPI")
    if proc.returncode != 0:
        pytest.fail(f"the real mpi4py cannot initialise MPI: {proc.stderr.strip()[-1000:]}")
    _singleton_checked = True
