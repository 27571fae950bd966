"""The prediction examples (examples/predict/) print the same results under smpy as under real
mpiexec (MPICH) at small sizes; ``#`` lines (times) are dropped. Also: the smpy hints of the
examples (``--sample``, ``--fold``) run under smpy and leave the plain run's output alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import needs_mpiexec, run_reference

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "predict"

CASES = [
    ("similarity.py", ["300", "4", "40"]),
    ("heat3d.py", ["16", "20"]),
    ("mergesort.py", ["100000"]),
    ("lu.py", ["200", "32"]),
    ("ep.py", ["17"]),
]


def _env(with_smpy: bool) -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) if with_smpy else ""
    return env


def _results(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]


def _smpy(np_: int, script: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), str(EX / script), *args],
                          capture_output=True, text=True, timeout=120, env=_env(True))


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np_", [1, 2])
@pytest.mark.parametrize("script,args", CASES, ids=[c[0] for c in CASES])
def test_same_results_as_mpich(script: str, args: list[str], np_: int) -> None:
    real = run_reference(np_, str(EX / script), *args, env=_env(False))
    emu = _smpy(np_, script, args)
    assert emu.returncode == 0, emu.stderr[-2000:]
    assert _results(real.stdout), real.stdout
    assert _results(emu.stdout) == _results(real.stdout)
    assert "# elapsed" in emu.stdout and "# cpu" in emu.stdout


@pytest.mark.slow
def test_lu_residual_check_passes() -> None:
    out = _smpy(3, "lu.py", ["160", "16"])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "scaled residual PASSED" in out.stdout


@pytest.mark.slow
def test_sampling_and_folding_hints_run() -> None:
    plain = _smpy(2, "lu.py", ["512", "32", "--no-check"])
    hinted = _smpy(2, "lu.py", ["512", "32", "--sample", "--fold"])
    assert plain.returncode == 0 and hinted.returncode == 0, plain.stderr[-1000:] + hinted.stderr[-1000:]
    t_plain = float(plain.stdout.split("# elapsed ")[1].split()[0])
    t_hint = float(hinted.stdout.split("# elapsed ")[1].split()[0])
    assert "(not checked)" in hinted.stdout
    # the sampled, folded run predicts about the same time (loose: CPU timing noise)
    assert 0.5 * t_plain < t_hint < 2.0 * t_plain, (t_plain, t_hint)
    ep = _smpy(2, "ep.py", ["18", "--sample"])
    assert ep.returncode == 0, ep.stderr[-1000:]
