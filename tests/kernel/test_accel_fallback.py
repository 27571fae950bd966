"""Without a working C compiler the accelerator is not built and runs take the pure-Python
path (smpy/kernel/accel.py, smpy/support/cext.py): ``auto`` says so in the summary, ``on``
is one clear error line. Fresh processes, a fresh cache, ``CC`` a compiler that fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "benchmarks" / "speed" / "twins.py"


def _smpyrun(tmp_path: Path, *opts: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CC": "/bin/false", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("SMPY_ACCEL", None)
    return subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-np", "4", *opts,
                           "--cfg=smpi/simulate-computation:no", str(TWINS), "ring", "2"],
                          capture_output=True, text=True, env=env, timeout=300)


def test_no_compiler_runs_the_pure_path(tmp_path: Path) -> None:
    p = _smpyrun(tmp_path)
    assert p.returncode == 0, p.stderr
    assert "ring_2 " in p.stdout and "accelerator off" in p.stderr
    assert not list((tmp_path / "cache").rglob("*.so"))


def test_no_compiler_and_accel_on_is_one_clear_line(tmp_path: Path) -> None:
    p = _smpyrun(tmp_path, "--cfg=smpy/accel:on")
    assert p.returncode != 0
    assert "smpy/accel:on: the compiled accelerator is not available: the build of _accel.c failed" in p.stderr
    assert "Traceback" not in p.stderr
