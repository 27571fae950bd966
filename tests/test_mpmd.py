"""MPMD runs (``smpyrun -np 2 a.py x : -np 3 b.py y``): the parts share one COMM_WORLD and
``MPI.APPNUM`` is each part's index, as with MPICH's ``mpiexec ... : ...``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import smpy
from tests.realmpi import needs_mpiexec, reference_env, run_reference

DIR = Path(__file__).parent / "programs" / "mpmd"


def _smpyrun(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-q", *args], cwd=DIR,
                          capture_output=True, text=True, timeout=120, env=reference_env())


@needs_mpiexec
def test_mpmd_equals_mpich() -> None:
    real = run_reference(2, sys.executable, "part.py", "x", ":", "-n", "3", sys.executable, "other.py", "y", "z",
                         cwd=DIR, python=False)
    sim = _smpyrun("-np", "2", "part.py", "x", ":", "-np", "3", "other.py", "y", "z")
    assert sim.returncode == 0, sim.stderr
    assert sim.stdout == real.stdout
    # what MPICH printed: the facts the test is about
    assert "part.py rank 1 of 5 appnum 0 argv ['x']: part rank 1 of 2, part sum 1" in real.stdout
    assert "other.py rank 4 of 5 appnum 1 argv ['y', 'z']: part rank 2 of 3, part sum 9" in real.stdout


@needs_mpiexec
def test_mpmd_three_parts_with_n_equals_mpich() -> None:
    real = run_reference(1, sys.executable, "other.py", ":", "-n", "2", sys.executable, "part.py", "a", ":",
                         "-n", "1", sys.executable, "other.py", cwd=DIR, python=False)
    sim = _smpyrun("-n", "1", "other.py", ":", "-n", "2", "part.py", "a", ":", "-n", "1", "other.py")
    assert sim.returncode == 0, sim.stderr
    assert sim.stdout == real.stdout
    assert "other.py rank 3 of 4 appnum 2 argv []" in sim.stdout


def test_smpy_run_takes_parts() -> None:
    res = smpy.run(parts=[smpy.App(str(DIR / "part.py"), np=2, args=["x"]),
                          smpy.App(str(DIR / "other.py"), np=1)])
    assert res.status == "ok" and res.np == 3
    assert "other.py rank 2 of 3 appnum 1 argv []: part rank 0 of 1, part sum 2, world sum 31" in res.stdout
    assert "part.py rank 0 of 3 appnum 0 argv ['x']: part rank 0 of 2, part sum 1, world sum 31" in res.stdout
    assert res.script == f"-np 2 {DIR / 'part.py'} : -np 1 {DIR / 'other.py'}"


def test_single_program_has_appnum_zero() -> None:
    res = smpy.run(str(DIR / "part.py"), np=2)
    assert "part.py rank 1 of 2 appnum 0 argv []" in res.stdout


def test_one_host_file_for_the_job(tmp_path: Path) -> None:
    hf = tmp_path / "hosts"
    hf.write_text("node-5\nnode-6\n")
    res = _smpyrun("--map", "-np", "1", "part.py", ":", "-np", "2", "--hostfile", str(hf), "other.py")
    assert res.returncode == 0, res.stderr
    # Hydra places all parts' ranks round-robin over the one host list
    assert "[rank 0] -> node-5" in res.stderr and "[rank 2] -> node-5" in res.stderr
    dup = _smpyrun("--hostfile", str(hf), "-np", "1", "part.py", ":", "-np", "2", "-f", str(hf), "other.py")
    assert dup.returncode == 2
    assert "part 2: duplicate host file or host list setting" in dup.stderr


def test_one_host_list_for_the_job() -> None:
    res = _smpyrun("--map", "-hosts", "node-3,node-4:2", "part.py", ":", "-np", "2", "other.py")
    assert res.returncode == 0, res.stderr
    assert "[rank 0] -> node-3\n[rank 1] -> node-4\n[rank 2] -> node-4" in res.stderr
    later = _smpyrun("--map", "-np", "1", "part.py", ":", "-np", "2", "-hosts", "node-7", "other.py")
    assert "[rank 0] -> node-7\n[rank 1] -> node-7\n[rank 2] -> node-7" in later.stderr
    dup = _smpyrun("-hosts", "node-1", "-np", "1", "part.py", ":", "-np", "1", "-hosts", "node-2", "other.py")
    assert dup.returncode == 2 and "part 2: duplicate host file or host list setting" in dup.stderr
    both = _smpyrun("-hosts", "node-1", "-f", "nowhere", "-np", "1", "part.py")
    assert both.returncode == 2 and "duplicate host file or host list setting" in both.stderr


@pytest.mark.parametrize("tail, message", [
    ((":", "-np", "2"), "part 2: give one program"),
    ((":", "-np", "0", "other.py"), "part 2: -np must be at least 1"),
    ((":", "--bogus", "other.py"), "part 2: unknown option(s) --bogus"),
])
def test_bad_parts_give_one_line(tail: tuple[str, ...], message: str) -> None:
    res = _smpyrun("-np", "1", "part.py", *tail)
    assert res.returncode == 2
    assert message in res.stderr and "Traceback" not in res.stderr


def test_bad_app_in_smpy_run() -> None:
    with pytest.raises(ValueError, match="part 0: np must be at least 1"):
        smpy.run(parts=[smpy.App(str(DIR / "part.py"), np=0)])
