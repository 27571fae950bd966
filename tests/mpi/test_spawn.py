"""Dynamic processes under smpy (Spawn, Spawn_multiple, Get_parent, Disconnect, APPNUM,
ports and names, Accept/Connect, Join), against real mpi4py on MPICH where it runs.

``tests/programs/spawn_prog.py`` spawns children (a script, then ``-c`` programs with
Spawn_multiple) and prints what every process sees; smpy must print the same lines as
MPICH (sorted: the processes' lines interleave differently) at np 1, 2 and 3.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from realmpi import needs_mpiexec, real_env, run_reference

import smpy

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests" / "programs" / "spawn_prog.py"
JOIN = ROOT / "tests" / "programs" / "spawn_join.py"
NO_COMPUTE = {"smpi/simulate-computation": "no"}


def _real(np: int, prog: Path) -> list[str]:
    return sorted(run_reference(np, str(prog), env=real_env()).stdout.splitlines())


def _sim(np: int, prog: Path, **kw) -> smpy.RunResult:
    res = smpy.run(str(prog), np=np, cfg=NO_COMPUTE, capture=True, echo=False, **kw)
    assert res.status == "ok", res.message
    return res


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np", [1, 2, 3])
def test_spawn_matches_mpich(np: int) -> None:
    real = _real(np, PROG)
    assert len(real) == {1: 18, 2: 28, 3: 36}[np]  # line counts of the MPICH runs
    assert sorted(_sim(np, PROG).stdout.splitlines()) == real


def test_join() -> None:
    """Both socket ends live in one OS process here (MPICH's processes could not share the
    fd, so this is checked by hand): a 1-1 intercommunicator, the other end's data."""
    out = sorted(_sim(3, JOIN).stdout.splitlines())
    assert out == ["0 join Intercomm 1 1 0 [10]", "1 join Intercomm 1 1 0 [0]"]


def test_spawn_results_without_mpich() -> None:
    res = _sim(2, PROG)
    lines = res.stdout.splitlines()
    assert "parent0 spawn Intercomm 2 3 0 [0, 0, 0]" in lines
    assert "child1 parent Intercomm True 3 2 1 3 ['child', 'x y'] 0" in lines
    assert "child2 merged 5 4 10" in lines  # children after the parents (high=True)
    assert "parent0 multiple 3 [[0], [0, 0]] [(0, 3, 0, ['a'], 0), (1, 3, 1, ['b'], 0), (2, 3, 1, ['b'], 0)]" in lines
    assert "parent1 Lookup_name error class 33" in lines  # MPI_ERR_NAME
    assert "parent0 Spawn root error class 7" in lines  # MPI_ERR_ROOT
    assert "child0 after True True" in lines
    # 2 parents + 3 children + 3 (Spawn_multiple by each of the 2 parents)
    assert res.spawned == 3 + 2 * 3
    assert len(res.ranks) == 2 + res.spawned
    assert "(+9 spawned)" in res.summary()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_spawn_costs_time_and_takes_free_nodes(tmp_path: Path) -> None:
    child = _write(tmp_path, "child.py", """\
        from mpi4py import MPI
        p = MPI.Comm.Get_parent()
        p.Barrier()
        p.Disconnect()
        """)
    parent = _write(tmp_path, "parent.py", f"""\
        import sys
        from mpi4py import MPI
        t0 = MPI.Wtime()
        c = MPI.COMM_WORLD.Spawn(sys.executable, [{str(child)!r}], 3)
        t1 = MPI.Wtime()
        c.Barrier()
        c.Disconnect()
        info = MPI.Info.Create()
        info.Set("host", "node-7")
        c = MPI.COMM_SELF.Spawn(sys.executable, [{str(child)!r}], 2, info=info)
        c.Barrier()
        c.Disconnect()
        print(MPI.COMM_WORLD.Get_rank(), t1 > t0)
        """)
    res = _sim(2, parent)
    assert sorted(res.stdout.splitlines()) == ["0 True", "1 True"]
    hosts = [r.host for r in res.ranks]
    # initial ranks on node-0, node-1; the 3 children fill the first free node (12 cores);
    # then each parent's two children on the host the info key names
    assert hosts[:5] == ["node-0", "node-1", "node-2", "node-2", "node-2"]
    assert hosts[5:] == ["node-7"] * 4
    assert res.messages > 0


def test_spawn_rejects_non_python_commands(tmp_path: Path) -> None:
    prog = _write(tmp_path, "bad.py", """\
        import sys
        from mpi4py import MPI
        for cmd, args in (("/bin/true", []), (sys.executable, ["-c"]), (sys.executable, []),
                          (sys.executable, ["no_such_script.py"])):
            try:
                MPI.COMM_SELF.Spawn(cmd, args, 1)
            except MPI.Exception as e:
                print(e.Get_error_class() == MPI.ERR_SPAWN)
        """)
    assert _sim(1, prog).stdout.split() == ["True"] * 4


def test_spawn_module_and_shebang_script(tmp_path: Path) -> None:
    (tmp_path / "spawnmod").mkdir()
    (tmp_path / "spawnmod" / "__init__.py").write_text("")
    _write(tmp_path / "spawnmod", "__main__.py", """\
        import sys
        from mpi4py import MPI
        p = MPI.Comm.Get_parent()
        p.send(("module", sys.argv[1:], MPI.COMM_WORLD.Get_size()), dest=0)
        p.Disconnect()
        """)
    script = _write(tmp_path, "tool", f"""\
        #!{sys.executable}
        import sys
        from mpi4py import MPI
        p = MPI.Comm.Get_parent()
        p.send(("script", sys.argv[1:], MPI.COMM_WORLD.Get_size()), dest=0)
        p.Disconnect()
        """)
    prog = _write(tmp_path, "main.py", f"""\
        import sys
        from mpi4py import MPI
        info = MPI.Info.Create()
        info.Set("wdir", {str(tmp_path)!r})
        c = MPI.COMM_SELF.Spawn(sys.executable, ["-u", "-m", "spawnmod", "x"], 2, info=info)
        print(sorted(c.recv(source=r) for r in range(2)))
        c.Disconnect()
        c = MPI.COMM_SELF.Spawn({str(script)!r}, ["y"], 1)
        print(c.recv(source=0))
        c.Disconnect()
        """)
    out = _sim(1, prog).stdout.splitlines()
    assert out == ["[('module', ['x'], 2), ('module', ['x'], 2)]", "('script', ['y'], 1)"]


def test_deadlock_report_names_spawned_processes(tmp_path: Path) -> None:
    child = _write(tmp_path, "child.py", """\
        from mpi4py import MPI
        MPI.Comm.Get_parent().recv(source=0)
        """)
    prog = _write(tmp_path, "main.py", f"""\
        import sys
        from mpi4py import MPI
        c = MPI.COMM_SELF.Spawn(sys.executable, [{str(child)!r}], 1)
        c.recv(source=0)
        """)
    res = smpy.run(str(prog), np=1, cfg=NO_COMPUTE, capture=True, echo=False)
    assert res.status == "deadlock"
    assert "spawned process 1 (rank 0 of its MPI_COMM_WORLD)" in res.message
    assert "rank 0 (host node-0): blocked in" in res.message
