"""MPI.Session, Intracomm.Create_from_group, mpi4py's private helpers, MPI.Pickle and
``smpyrun -m`` / ``-c``, each compared with real mpi4py + MPICH (``mpiexec`` of the venv).

The real runs need MPICH's ``mpiexec`` next to the interpreter; without it those
comparisons are skipped, the checks against recorded MPICH facts still run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from realmpi import MPIEXEC, mpiexec_cmd, needs_mpiexec

import smpy

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
TIMEOUT_S = 120
needs_mpich = needs_mpiexec


def _env(with_smpy: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    if with_smpy:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    else:  # real mpi4py: smpy must not shadow anything
        env.pop("PYTHONPATH", None)
    return env


def _run(cmd: list[str], cwd: Path, with_smpy: bool) -> subprocess.CompletedProcess:
    p = subprocess.Popen(cmd, cwd=cwd, env=_env(with_smpy), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _smpyrun(np: int, *args: str) -> list[str]:
    return [sys.executable, "-m", "smpy", "-q", "-np", str(np), *args]


def _mpiexec(np: int, *args: str) -> list[str]:
    return mpiexec_cmd(np, *args)


# -- Session, Create_from_group, private helpers: the same lines as MPICH ---------------------
def _session_lines(np: int) -> list[str]:
    res = smpy.run(str(PROGRAMS / "session_api.py"), np=np, capture=True)
    assert res.status == "ok", res.message
    return res.stdout.splitlines()


@pytest.mark.parametrize("np", [1, 3])
def test_session_api_facts(np: int) -> None:
    """Recorded MPICH facts (hold without mpiexec)."""
    lines = _session_lines(np)
    assert f"0: pset 0 mpi://WORLD [('mpi_size', '{np}')]" in lines
    assert "0: pset 1 mpi://SELF [('mpi_size', '1')]" in lines
    assert "0: nth -1 MPI.Exception 12 Invalid argument" in lines
    assert "0: null Finalize MPI.Exception 75 Invalid MPI_Session handle" in lines
    assert "0: pickle ValueError cannot serialize 'mpi4py.MPI.Session' instance" in lines
    assert f"0: comms Intracomm {np} True 1 1 1 1 ''" in lines
    assert f"0: allreduce {np * (np + 1) // 2} {np} 5" in lines
    assert "0: group null MPI.Exception 8 Invalid group" in lines
    assert f"0: commctx True 1 0 1 {np} ''" in lines
    assert "0: pickle 5 262144 5 None 3" in lines
    assert "0: oob bytes 1 [320000] True 0 0" in lines
    last = [ln.split(": ", 1)[1] for ln in lines if ln.startswith(f"{np - 1}: ")]
    first = [ln.split(": ", 1)[1] for ln in lines if ln.startswith("0: ")]
    assert [ln for ln in first if not ln.startswith("pair")] == [ln for ln in last if not ln.startswith("pair")]


@pytest.mark.slow
@needs_mpich
@pytest.mark.parametrize("np", [2, 3])
def test_session_api_matches_mpich(np: int) -> None:
    real = _run(_mpiexec(np, str(PROGRAMS / "session_api.py")), ROOT, with_smpy=False)
    assert real.returncode == 0, real.stderr
    assert _session_lines(np) == real.stdout.splitlines()


def test_create_from_group_costs_time_and_is_per_tag() -> None:
    prog = PROGRAMS / "session_api.py"
    res = smpy.run(str(prog), np=2, capture=True)
    assert res.status == "ok"
    assert res.makespan_s > 0
    assert res.messages > 0  # the context-id agreement is a barrier among the members


# -- smpyrun -m / -c, and python -m mpi4py ---------------------------------------------------
APP = textwrap.dedent('''
    import os, sys
    from mpi4py import MPI
    import pkg
    comm = MPI.COMM_WORLD
    class Point:
        def __init__(self, x):
            self.x = x
    obj = comm.bcast(Point(42) if comm.rank == 0 else None)
    lines = comm.gather(" ".join(map(str, [comm.rank, __name__, os.path.basename(sys.argv[0]), sys.argv[1:],
                                           pkg.LOADED_BY == comm.rank, __spec__.name if __spec__ else None,
                                           obj.x, type(obj).__module__, comm.allreduce(comm.rank),
                                           sys.path[0] == os.getcwd()])))
    if comm.rank == 0:
        print("\\n".join(lines))
''')
SCRIPT = textwrap.dedent('''
    import sys
    from mpi4py import MPI
    c = MPI.COMM_WORLD
    class P:
        pass
    x = c.bcast(P() if c.rank == 0 else None)
    got = c.gather((c.rank, __name__, sys.argv, type(x).__name__, type(x).__module__, c.allreduce(c.rank)))
    if c.rank == 0:
        print(got)
''')
COMMAND = ("import sys; from mpi4py import MPI; c = MPI.COMM_WORLD; "
           "g = c.gather((c.rank, sys.argv, __name__, c.allreduce(1))); c.rank or print(g)")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from mpi4py import MPI\nLOADED_BY = MPI.COMM_WORLD.Get_rank()\n")
    (pkg / "app.py").write_text(APP)
    (pkg / "__main__.py").write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\n"
                                     "g = c.gather((c.rank, __name__))\nc.rank or print(g)\n")
    (tmp_path / "script.py").write_text(SCRIPT)
    return tmp_path


CLI_CASES = {
    "module": ["-m", "pkg.app", "a", "-v", "--x"],
    "package": ["-m", "pkg"],
    "command": ["-c", COMMAND, "x", "-np", "y"],
    "mpi4py-script": ["-m", "mpi4py", "script.py", "q"],
    "mpi4py-module": ["-m", "mpi4py", "-m", "pkg.app", "z"],
    "mpi4py-command": ["-m", "mpi4py", "-c", COMMAND, "w"],
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_program_forms(project: Path, case: str) -> None:
    sim = _run(_smpyrun(3, *CLI_CASES[case]), project, with_smpy=True)
    assert sim.returncode == 0, sim.stderr
    out = sim.stdout
    if case == "module":
        assert out.splitlines()[0] == "0 __main__ app.py ['a', '-v', '--x'] True pkg.app 42 __main__ 3 True"
        assert len(out.splitlines()) == 3
    elif case == "package":
        assert out.strip() == "[(0, '__main__'), (1, '__main__'), (2, '__main__')]"
    elif case == "command":
        assert out.strip() == str([(r, ["-c", "x", "-np", "y"], "__main__", 3) for r in range(3)])
    elif case == "mpi4py-script":
        assert out.strip() == str([(r, "__main__", ["script.py", "q"], "P", "__main__", 3) for r in range(3)])
    if MPIEXEC is not None:
        real = _run(_mpiexec(3, *CLI_CASES[case]), project, with_smpy=False)
        assert real.returncode == 0, real.stderr
        assert out == real.stdout


@pytest.mark.slow
def test_cli_missing_module(project: Path) -> None:
    sim = _run(_smpyrun(2, "-m", "no_such_module_xyz"), project, with_smpy=True)
    assert sim.returncode != 0
    assert "No module named 'no_such_module_xyz'" in sim.stderr


def test_split_program() -> None:
    from smpy.cli.smpyrun import split_program
    assert split_program(["-np", "4", "-m", "pkg.mod", "-np", "2"]) == (["-np", "4"], "pkg.mod", None, ["-np", "2"])
    assert split_program(["--cfg", "a:b", "-c", "print(1)", "x"]) == (["--cfg", "a:b"], None, "print(1)", ["x"])
    assert split_program(["-np", "2", "app.py", "-m", "x"]) == (["-np", "2", "app.py", "-m", "x"], None, None, [])
    assert split_program(["-map", "-np", "-m"]) == (["-map", "-np", "-m"], None, None, [])


# -- MPI.Pickle semantics (mpi4py 4.1.2) ---------------------------------------------------------
def test_pickle_protocol_rules() -> None:
    import pickle

    from smpy.mpi.msgpickle import Pickle

    assert Pickle().PROTOCOL == pickle.HIGHEST_PROTOCOL
    custom = Pickle(lambda o: repr(o).encode(), lambda b: eval(bytes(b)))  # noqa: S307 - test data
    assert custom.PROTOCOL is None
    assert custom.dumps([1, 2]) == b"[1, 2]"  # called without a protocol
    custom.PROTOCOL = None
    assert custom.PROTOCOL is None
    p = Pickle()
    p.PROTOCOL = None
    assert p.PROTOCOL == pickle.HIGHEST_PROTOCOL
    p.THRESHOLD = 10
    assert p.THRESHOLD == 10
    p.THRESHOLD = None
    assert p.THRESHOLD == 262144
    with pytest.raises(TypeError):
        Pickle(lambda o: b"").dumps_oob(1)  # a custom dumps without buffer_callback
