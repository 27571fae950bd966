"""Every bundled example prints the same lines under smpyrun as under real MPI (MPICH).

Lines starting with ``#`` report timings and host names; they are expected to differ and are
dropped. The rest is compared after sorting (ranks of a real run print in any order).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import mpiexec_cmd, needs_mpiexec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
TIMEOUT_S = 120

CASES = [
    *[("hello", n) for n in (1, 2, 4)],
    # ring at np=1 sends to itself before receiving: MPICH blocks in that MPI_Send (legal MPI
    # behaviour for an unsafe program), so np=1 is not meaningful for it
    *[("ring", n) for n in (2, 4)],
    *[("heat", n) for n in (1, 2, 4)],
    *[("master_worker", n) for n in (1, 2, 4)],
    ("pingpong", 2),
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def _smpyrun_cmd() -> list[str]:
    exe = BIN / "smpyrun"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]


def _comparable(stdout: str) -> list[str]:
    return sorted(line for line in stdout.splitlines() if not line.startswith("#"))


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize(("example", "np"), CASES, ids=[f"{e}-np{n}" for e, n in CASES])
def test_example_matches_mpich(example: str, np: int) -> None:
    script = str(EXAMPLES / f"{example}.py")
    real_cmd = mpiexec_cmd(np, script)
    sim_cmd = [*_smpyrun_cmd(), "-q", "-np", str(np), script]
    # both runs at once: the real one dominates the wall time
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True) for cmd in (real_cmd, sim_cmd)]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=TIMEOUT_S))
    finally:
        for p in procs:
            if p.poll() is None:  # timed out: kill the whole group (mpiexec's proxies and ranks)
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
    (real_out, real_err), (sim_out, sim_err) = outs
    assert procs[0].returncode == 0, f"mpiexec failed ({procs[0].returncode}):\n{real_err}"
    assert procs[1].returncode == 0, f"smpyrun failed ({procs[1].returncode}):\n{sim_err}"
    real, sim = _comparable(real_out), _comparable(sim_out)
    assert real, f"the real run printed nothing comparable:\n{real_out}"
    assert sim == real
