"""dask-mpi's batch mode (issue 18 item 5): asyncio and tornado loops in several ranks at once,
talking through loopback sockets, give the result they give under mpiexec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import MPIEXEC, REASON

pytest.importorskip("dask_mpi")
pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "programs" / "dask_batch.py"
EXPECTED = "result 5050 workers 2"


def _result(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("result")]


def test_dask_mpi_batch_mode_np4() -> None:
    exe = Path(sys.executable).parent / "smpyrun"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    r = subprocess.run([*cmd, "-np", "4", "--cfg=smpy/stall-timeout:60", str(PROGRAM)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert _result(r.stdout) == [EXPECTED]
    assert "Exception in callback" not in r.stderr  # nothing of the program failed on the way
    if MPIEXEC is None:
        pytest.skip(REASON)
    real = subprocess.run([MPIEXEC, "-n", "4", sys.executable, str(PROGRAM)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert real.returncode == 0, real.stderr[-3000:]
    assert _result(real.stdout) == [EXPECTED]
