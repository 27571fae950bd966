"""Communicator management, attributes, error handlers and handles, against real mpi4py+MPICH.

``tests/programs/mgmt.py`` prints one line per fact (Create/Create_group/Split_type/Idup,
keyval callbacks, error handlers, handle values, pickling ...); smpy must print exactly what
real MPICH prints. Split_type by node is also checked with several ranks per simulated host,
and ERRORS_ARE_FATAL must abort the run.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from realmpi import MPIEXEC, real_env, require_mpiexec, run_reference

import smpy

PROG = Path(__file__).resolve().parents[1] / "programs" / "mgmt.py"
CFG = {"smpi/simulate-computation": "no"}


def _smpy_lines(np: int, **kw) -> list[str]:
    res = smpy.run(str(PROG), np=np, cfg=CFG, **kw)
    assert res.status == "ok", res.message + res.stdout
    return res.stdout.splitlines()


def _real_lines(np: int) -> list[str]:
    return run_reference(np, str(PROG), env=real_env()).stdout.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("np", [1, 2, 3])
def test_same_facts_as_mpich(np: int) -> None:
    sim = _smpy_lines(np)
    assert len(sim) > 40 * np
    require_mpiexec()
    assert sim == _real_lines(np)


def test_split_type_groups_ranks_by_simulated_host(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-0:2\nnode-1:1\nnode-2:1\n")
    lines = _smpy_lines(4, hostfile=str(hostfile))
    facts = [line for line in lines if line.split()[1] in ("shared_by_node", "hw_guided_shmem", "hw_unguided",
                                                           "resource_guided_shmem")]
    assert len(facts) == 16 and all("False" not in line for line in facts), facts


def _run_source(tmp_path: Path, source: str, np: int = 2):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    return smpy.run(str(script), np=np, cfg=CFG)


def test_errors_are_fatal_aborts_the_run(tmp_path: Path) -> None:
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD.Dup()
        comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        if comm.Get_rank() == 0:
            comm.Send(b"x", dest=99)
        print("survived", comm.Get_rank())
    """)
    assert res.status == "abort", res.status
    assert "survived 0" not in res.stdout


def test_errors_return_raises_with_the_class(tmp_path: Path) -> None:
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD.Dup()
        comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        try:
            comm.Send(b"x", dest=99)
        except MPI.Exception as e:
            print("raised", e.Get_error_class() == MPI.ERR_RANK)
    """, np=1)
    assert res.status == "ok", res.message
    assert res.stdout.split() == ["raised", "True"]


def test_user_errhandlers_are_limited_to_32_per_kind(tmp_path: Path) -> None:
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        made = []
        try:
            for _ in range(40):
                made.append(MPI.Comm.Create_errhandler(lambda c, e: None))
        except RuntimeError:
            pass
        print(len(made))
    """, np=1)
    assert res.stdout.split() == ["32"]


def test_attribute_callbacks_errors_are_err_other(tmp_path: Path) -> None:
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        def bad(o, k, v):
            raise ValueError("boom")
        k = MPI.Comm.Create_keyval(copy_fn=bad, delete_fn=bad)
        c = MPI.COMM_SELF.Dup()
        c.Set_attr(k, 1)
        for what in (c.Dup, lambda: c.Delete_attr(k)):
            try:
                what()
            except MPI.Exception as e:
                print(e.Get_error_class() == MPI.ERR_OTHER)
        print(c.Get_attr(k))
        c.Free()
    """, np=1)
    assert res.status == "ok", res.message
    assert res.stdout.split() == ["True", "True", "None"]


def test_mixins_for_other_handle_classes(tmp_path: Path) -> None:
    """AttrMixin and ErrhandlerMixin give e.g. Win the attribute and error-handler API."""
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        from smpy.mpi._call import mpicall
        from smpy.mpi.errhandler import ErrhandlerMixin
        from smpy.mpi.objmodel import AttrMixin
        from smpy.runtime import attributes, errors

        class Obj:  # a runtime object
            pass

        class FakeWin(AttrMixin, ErrhandlerMixin):
            _errhandler_kind = "Win"
            def __init__(self, obj):
                self.obj = obj
            @classmethod
            def _wrap(cls, obj):
                return cls(obj)
            def _attr_obj(self):
                return self.obj
            _errhandler_obj = _attr_obj
            def _predefined_attr(self, keyval):
                return 7 if keyval == 1234 else NotImplemented
            @mpicall
            def Fail(self):
                errors.raise_error(errors.ERR_WIN, "MPI_Win_fence: boom")

        w = FakeWin(Obj())
        k = FakeWin.Create_keyval(delete_fn=lambda o, kv, v: print("deleted", v))
        print(hex(k & 0xffffffff)[:4], w.Get_attr(k), w.Get_attr(1234))
        w.Set_attr(k, "v")
        print(w.Get_attr(k))
        try:
            MPI.COMM_SELF.Get_attr(k)
        except MPI.Exception as e:
            print("kind", e.Get_error_class() == MPI.ERR_KEYVAL)
        w.Delete_attr(k)
        print(FakeWin.Free_keyval(k) == MPI.KEYVAL_INVALID)
        print(w.Get_errhandler() == MPI.ERRORS_RETURN)
        seen = []
        eh = FakeWin.Create_errhandler(lambda o, code: seen.append((type(o).__name__, MPI.Get_error_class(code))))
        try:
            MPI.COMM_SELF.Set_errhandler(eh)
        except MPI.Exception as e:
            print("wrong kind", e.Get_error_class() == MPI.ERR_ARG)
        w.Set_errhandler(eh)
        w.Fail()
        w.Call_errhandler(MPI.ERR_OTHER)
        print(seen)
    """, np=1)
    assert res.status == "ok", res.message + res.stdout
    assert res.stdout.splitlines() == [
        "0xa6 None 7", "v", "kind True", "deleted v", "True", "True", "wrong kind True",
        "[('FakeWin', 45), ('FakeWin', 15)]",
    ]


def test_subclasses_initialise_in_new(tmp_path: Path) -> None:
    """mpi4py's classes take their argument in __new__: subclasses call super().__new__(cls, x)."""
    res = _run_source(tmp_path, """
        from mpi4py import MPI

        class MyComm(MPI.Intracomm):
            def __new__(cls, comm=None):
                if comm is not None and comm != MPI.COMM_NULL:
                    comm = comm.Dup()
                return super().__new__(cls, comm)

        class MyInfo(MPI.Info):
            pass

        c = MyComm(MPI.COMM_WORLD)
        print(type(c).__name__, c != MPI.COMM_WORLD, c.Compare(MPI.COMM_WORLD) == MPI.CONGRUENT,
              type(c.Dup()).__name__)
        c.Free()
        i = MyInfo(MPI.Info.Create())
        print(type(i.Dup()).__name__, type(MyInfo.Create()).__name__, MPI.Group(MPI.GROUP_EMPTY) == MPI.GROUP_EMPTY)
        for cls, other in ((MPI.Comm, MPI.INFO_NULL), (MPI.Info, MPI.COMM_NULL), (MPI.Group, 1)):
            try:
                cls(other)
            except TypeError:
                print("TypeError")
    """, np=1)
    assert res.status == "ok", res.message + res.stdout
    assert res.stdout.splitlines() == ["MyComm True True MyComm", "MyInfo MyInfo True"] + ["TypeError"] * 3


def test_idup_does_not_block(tmp_path: Path) -> None:
    """Rank 0 sends after its Idup, rank 1 receives before its Idup: legal, no deadlock."""
    res = _run_source(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 0:
            d, req = comm.Idup()
            comm.send("hi", dest=1)
        else:
            comm.recv(source=0)
            d, req = comm.Idup()
        req.Wait()
        print(comm.Get_rank(), d.allreduce(1), req == MPI.REQUEST_NULL)
    """)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == ["0 2 True", "1 2 True"]


@pytest.mark.slow
def test_finalize_deletes_comm_self_then_comm_world_attributes(tmp_path: Path) -> None:
    source = """
        from mpi4py import MPI
        k = MPI.Comm.Create_keyval(delete_fn=lambda o, kv, v: print("deleted", v, o == MPI.COMM_SELF, flush=True))
        MPI.COMM_SELF.Set_attr(k, "self")
        k2 = MPI.Comm.Create_keyval(delete_fn=lambda o, kv, v: print("deleted", v, flush=True))
        MPI.COMM_WORLD.Set_attr(k2, "world")
        print("end", flush=True)
        MPI.Finalize()
    """
    res = _run_source(tmp_path, source, np=1)
    assert res.status == "ok", res.message
    expected = ["end", "deleted self True", "deleted world"]
    assert res.stdout.splitlines() == expected
    if MPIEXEC is not None:
        real = run_reference(1, str(tmp_path / "prog.py"), env=real_env())
        assert real.stdout.splitlines() == expected
