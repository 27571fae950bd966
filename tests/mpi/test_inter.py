"""Intercommunicators and ULFM calls under smpy, against real mpi4py on MPICH.

``tests/programs/intercomm.py`` builds an intercommunicator between the two halves of
COMM_WORLD and prints, per rank, what every intercommunicator operation returns (creation,
remote groups, p2p, every collective with ROOT/PROC_NULL roots, v-variants, non-blocking
ones, Merge/Dup/Split/Create/Create_from_groups, errors, ULFM calls). smpy must print the
same lines as MPICH at np 2, 3 (uneven groups) and 4. ``tests/programs/ulfm.py`` does the
same for the ULFM calls (no process fails).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realmpi import needs_mpiexec, real_env, run_reference

import smpy

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests" / "programs" / "intercomm.py"
ULFM = ROOT / "tests" / "programs" / "ulfm.py"
NO_COMPUTE = {"smpi/simulate-computation": "no"}


def _real(np: int, prog: Path = PROG) -> list[str]:
    return run_reference(np, str(prog), env=real_env()).stdout.splitlines()


def _sim(np: int, prog: Path = PROG) -> list[str]:
    res = smpy.run(str(prog), np=np, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    return res.stdout.splitlines()


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np", [2, 3, 4])
def test_intercomm_matches_mpich(np: int) -> None:
    real = _real(np)
    assert len(real) == np
    assert _sim(np) == real


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np", [1, 2, 3])
def test_ulfm_matches_mpich(np: int) -> None:
    """Agree (bitwise AND; on an intercommunicator, the remote group's), Iagree issued
    before a Barrier the others issue first, Shrink/Ishrink, Get_failed, Ack_failed, Revoke."""
    real = _real(np, ULFM)
    assert len(real) == np
    assert _sim(np, ULFM) == real


def test_intercomm_results_without_mpich() -> None:
    """A few results checked by hand at np 3 (groups {0} and {1, 2})."""
    lines = {int(line.split(" ", 1)[0]): eval(line.split(" ", 1)[1]) for line in _sim(3)}  # noqa: S307
    r0 = dict((t[0], t[1:]) for t in lines[0])
    r2 = dict((t[0], t[1:]) for t in lines[2])
    assert r0["kind"] == ("Intercomm", True, False, 0, 1, 2)
    assert r2["kind"] == ("Intercomm", True, False, 1, 2, 1)
    assert r0["rgroup"] == ([1, 2],)
    assert r0["p2p"] == ([(0, (1, 0)), (1, (2, 0))],)  # source = rank in the remote group
    assert r0["Allgather"] == ([[1, 0], [2, 1]],)  # the remote group's blocks
    assert r2["Allreduce"] == ([0.0, 1.0, 0.0],)  # the remote group's reduction
    assert r0["reduce"] == ([6, None, None],)  # root 0 of group 0 gets (1+1)*(2+1)
    assert r0["badroot"] == (7, 7)  # MPI_ERR_ROOT
    assert r0["Merge"] == (2, 3, "Intracomm") and r2["Merge"] == (1, 3, "Intracomm")  # high group last
    assert r0["Dup"][:2] == ("Intercomm", 1)  # CONGRUENT


def test_intercomm_collectives_send_messages() -> None:
    """Inter collectives cost simulated time: a Bcast across groups moves the payload."""
    prog = Path(__file__).parent / "_inter_bcast_prog.py"
    prog.write_text(
        "import numpy as np\nfrom mpi4py import MPI\n"
        "w = MPI.COMM_WORLD\ncolor = w.rank % 2\nloc = w.Split(color, w.rank)\n"
        "ic = loc.Create_intercomm(0, w, 1 - color, 0)\n"
        "t0 = MPI.Wtime()\nbuf = np.zeros(1 << 20, dtype='b')\n"
        "ic.Bcast(buf, root=(MPI.ROOT if ic.rank == 0 else MPI.PROC_NULL) if color == 0 else 0)\n"
        "dt = MPI.Wtime() - t0\nprint(w.rank, dt > 1e-4 if color == 1 else dt < 1.0)\n"
    )
    try:
        res = smpy.run(str(prog), np=4, cfg=NO_COMPUTE)
        again = smpy.run(str(prog), np=4, cfg=NO_COMPUTE)
    finally:
        prog.unlink()
    assert res.status == "ok", res.message
    assert sorted(res.stdout.split()) == sorted("0 True 1 True 2 True 3 True".split())
    assert res.bytes_sent > 2 * (1 << 20)  # root -> remote leader, then the leader's local bcast
    assert (res.makespan_s, res.messages) == (again.makespan_s, again.messages)  # deterministic
