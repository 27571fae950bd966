"""Failures of the simulated program: exceptions, MPI_Abort, deadlocks, sys.exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import smpy

PROGRAMS = Path(__file__).resolve().parent / "programs"


def run(program: str, np: int, *args: str, **kw):
    return smpy.run(str(PROGRAMS / program), np=np, args=list(args), capture=True, **kw)


def line_of(program: str, text: str) -> int:
    """1-based line number of the first line of ``program`` containing ``text``."""
    for i, line in enumerate((PROGRAMS / program).read_text().splitlines(), start=1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {program}")


def test_exception_in_one_rank() -> None:
    """As under mpiexec with python app.py: rank 2 prints its traceback and ends (status 1),
    the others wait for it in the barrier: mpiexec hangs, smpy reports the deadlock and the
    exception (tests/test_rank_end.py compares with MPICH). Before, the run was aborted."""
    res = run("fault_exception.py", 4)
    assert res.status == "deadlock", res.message
    assert res.exit_code == 1
    path = str(PROGRAMS / "fault_exception.py")
    tagged = res.rank_output(2, "stderr").splitlines()
    assert tagged and all(ln.startswith("[rank 2@node-2] ") for ln in tagged), tagged
    assert tagged[0] == "[rank 2@node-2] Traceback (most recent call last):"
    body = "\n".join(tagged)
    # the user's frames, with file and line, and no frame of smpy itself
    assert f'File "{path}", line {line_of("fault_exception.py", "compute(0)")}, in <module>' in body
    assert f'File "{path}", line {line_of("fault_exception.py", "return 1 / x")}, in compute' in body
    assert tagged[-1] == "[rank 2@node-2] ZeroDivisionError: division by zero"
    assert "smpy/" not in body.replace(path, "")
    last = res.message.splitlines()[-1]
    assert last.startswith("[smpy] rank 2 (host node-2) raised ZeroDivisionError: division by zero (exit status 1) "
                           "at simulated time 0.25"), last
    assert sum("blocked in MPI_Barrier" in ln for ln in res.message.splitlines()) == 3
    # the others waited in the barrier from 0.25 s on: their 100 s sleep never happened
    assert 0.25 <= res.makespan_s < 1.0
    assert "went on" not in res.stdout


def test_exception_in_one_rank_aborts_with_the_knob() -> None:
    """smpy/abort-on-exception:yes: the first uncaught exception aborts the run (as MPI_Abort)."""
    res = run("fault_exception.py", 4, cfg={"smpy/abort-on-exception": "yes"})
    assert (res.status, res.exit_code) == ("error", 1), res.message
    tagged = [ln for ln in res.message.splitlines() if ln.startswith("[rank 2@node-2] ")]
    assert tagged[0] == "[rank 2@node-2] Traceback (most recent call last):"
    assert tagged[-1] == "[rank 2@node-2] ZeroDivisionError: division by zero"
    assert "rank 2" in res.message.splitlines()[-1] and "aborting the run" in res.message
    assert 0.25 <= res.makespan_s < 1.0
    assert "went on" not in res.stdout


def test_failure_unwinds_other_ranks_finally_blocks(tmp_path: Path) -> None:
    prog = tmp_path / "finally.py"
    prog.write_text(
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "try:\n"
        "    if comm.rank == 0:\n"
        "        raise ValueError('boom')\n"
        "    comm.recv(source=0)\n"
        "finally:\n"
        "    print(f'finally {comm.rank}')\n")
    # the abort (smpy/abort-on-exception) unwinds the others: their finally blocks run
    res = smpy.run(str(prog), np=3, capture=True, cfg={"smpy/abort-on-exception": "yes"})
    assert res.status == "error", res.message
    assert "ValueError: boom" in res.message
    assert sorted(res.stdout.splitlines()) == ["finally 0", "finally 1", "finally 2"]
    # by default rank 0 ends alone (its finally block runs) and the others wait for it forever
    # (mpiexec hangs): a deadlock, whose ranks are not unwound into the output
    res = smpy.run(str(prog), np=3, capture=True)
    assert res.status == "deadlock", res.message
    assert "rank 0 (host node-0) raised ValueError: boom" in res.message
    assert res.stdout == "finally 0\n"


def test_abort() -> None:
    res = run("fault_abort.py", 4)
    assert res.status == "abort"
    assert res.exit_code == 3
    assert "MPI_Abort" in res.message and "rank 1" in res.message
    assert "not reached" not in res.stdout


def test_deadlock_both_receive_first() -> None:
    res = run("deadlock_recv.py", 2)
    assert res.status == "deadlock"
    assert res.exit_code != 0
    msg = res.message
    assert "DEADLOCK" in msg
    assert f"simulated time {res.makespan_s:.9g} s" in msg
    lines = msg.splitlines()
    r0 = [ln for ln in lines if "rank 0 (" in ln]
    r1 = [ln for ln in lines if "rank 1 (" in ln]
    assert len(r0) == 1 and "MPI_Recv(source=1, tag=0, comm=MPI_COMM_WORLD)" in r0[0]
    assert len(r1) == 1 and "MPI_Recv(source=0, tag=0, comm=MPI_COMM_WORLD)" in r1[0]


def test_deadlock_on_a_rank_that_exited() -> None:
    res = run("deadlock_exited.py", 4)
    assert res.status == "deadlock"
    assert res.exit_code != 0
    lines = res.message.splitlines()
    blocked = [ln for ln in lines if "blocked in" in ln]
    assert len(blocked) == 1
    assert "rank 0 (" in blocked[0]
    assert "MPI_Recv(source=1, tag=5, comm=MPI_COMM_WORLD)" in blocked[0]
    # rank 0 slept 0.125 s before receiving
    assert res.makespan_s >= 0.125
    assert f"simulated time {res.makespan_s:.9g} s" in res.message
    assert any("finished ranks: 1-3" in ln for ln in lines)


def test_sys_exit_zero_is_a_normal_end() -> None:
    res = run("sys_exit.py", 4)
    assert res.status == "ok", res.message
    assert res.exit_code == 0
    assert res.rank_output(1) == "rank 1 exits\n"
    for r in (0, 2, 3):
        assert res.rank_output(r) == f"rank {r} total 6\n"


def test_sys_exit_nonzero_ends_that_rank_only() -> None:
    """As under mpiexec (MPICH: the others print, the job's status is the rank's): pytest run
    by every rank exits 1 on the ranks where a test failed, and the other ranks' sessions
    must end. Before, the first non-zero exit aborted the run and killed the others."""
    res = run("sys_exit_nonzero.py", 3, "alone", cfg={"smpi/simulate-computation": "no"})
    assert (res.status, res.exit_code) == ("error", 3), res.message
    assert res.rank_output(0) == "rank 0 done\n" and res.rank_output(2) == "rank 2 done\n"
    assert "rank 1 (host node-1) exited with status 3 at simulated time" in res.message
    assert "the other ranks ran on" in res.message
    assert res.makespan_s >= 0.5  # the others slept after rank 1 had exited


def test_sys_exit_statuses_are_ored_as_by_hydra() -> None:
    res = run("sys_exit_nonzero.py", 3, "two")
    assert (res.status, res.exit_code) == ("error", 7), res.message  # 3 | 5, mpiexec's 7
    assert res.rank_output(0) == "rank 0 done\n"


def test_sys_exit_message_is_printed_with_status_1() -> None:
    res = run("sys_exit_nonzero.py", 2, "message")
    assert (res.status, res.exit_code) == ("error", 1), res.message
    assert res.rank_output(1, "stderr") == "bad input\n"
    assert res.rank_output(0) == "rank 0 done\n"


def test_waiting_for_a_rank_that_exited_is_a_deadlock() -> None:
    """MPICH's mpiexec hangs there; smpy reports the deadlock and the rank that had exited."""
    res = run("sys_exit_nonzero.py", 3, "needed")
    assert res.status == "deadlock", res.message
    assert "blocked in MPI_Barrier" in res.message
    assert "rank 1 (host node-1) exited with status 3" in res.message


@pytest.mark.slow
def test_smpyrun_exits_on_deadlock() -> None:
    exe = Path(sys.executable).parent / "smpyrun"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    proc = subprocess.run([*cmd, "-np", "2", str(PROGRAMS / "deadlock_recv.py")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert "DEADLOCK" in proc.stderr
    assert "MPI_Recv(source=1, tag=0, comm=MPI_COMM_WORLD)" in proc.stderr
