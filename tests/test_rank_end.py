"""A rank's program that ends early (uncaught exception, KeyboardInterrupt, sys.exit), as under
``mpiexec`` with ``python app.py`` (smpy.cli.rank_end): unit tests, then differential runs of
tests/programs/rank_end.py against MPICH's mpiexec."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import app_env, mpiexec_cmd, needs_mpiexec, run_reference

import smpy
from smpy.cli import launch
from smpy.cli.rank_end import job_status

ROOT = Path(__file__).resolve().parents[1]
PROG = ROOT / "tests" / "programs" / "rank_end.py"
BIN = Path(sys.executable).parent


def run(case: str, np: int = 3, **kw):
    return smpy.run(str(PROG), np=np, args=[case], capture=True, **kw)


def smpyrun(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    exe = BIN / "smpyrun"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, env=app_env(True))


def test_job_status_is_hydras_or_of_wait_statuses() -> None:
    # measured with MPICH 5.0.2's mpiexec: statuses 1 and 4 give 5, 3 and 5 give 7; a process
    # killed by SIGINT (an uncaught KeyboardInterrupt) and one exiting 4 give 2, the signal
    assert job_status([1 << 8, 4 << 8]) == 5
    assert job_status([3 << 8, 5 << 8]) == 7
    assert job_status([int(signal.SIGINT), 4 << 8]) == 2
    assert job_status([int(signal.SIGINT)]) == 2
    assert job_status([]) == 0


def test_uncaught_exception_ends_that_rank_only() -> None:
    res = run("raise")
    assert (res.status, res.exit_code) == ("error", 1), res.message
    # the others ran on (their 0.5 s sleep, then their print and exit handler)
    for r in (0, 2):
        assert res.rank_output(r) == f"rank {r} still here\natexit {r}\n"
    assert res.makespan_s >= 0.5
    # the raising rank ran its own exit handler, and printed its traceback, tagged, on its stderr
    assert res.rank_output(1) == "atexit 1\n"
    err = res.rank_output(1, "stderr").splitlines()
    assert err[0] == "[rank 1@node-1] Traceback (most recent call last):"
    assert err[-1] == "[rank 1@node-1] ValueError: boom"
    assert f'File "{PROG}", line' in "\n".join(err) and "smpy/cli" not in "\n".join(err)
    m = re.search(r"\[smpy\] rank 1 \(host node-1\) raised ValueError: boom \(exit status 1\) at simulated "
                  r"time (\S+) s; the other ranks ran on, as under mpiexec", res.message)
    assert m, res.message
    # the time it ended: its computation (the start-up) simulated, before its exit handler
    assert 0 < float(m.group(1)) <= res.ranks[1].end_time_s < 0.5
    assert min(res.ranks[0].end_time_s, res.ranks[2].end_time_s) >= 0.5


def test_waiting_for_a_rank_that_raised_is_a_deadlock_naming_the_exception() -> None:
    """mpiexec hangs there (test_reference_hangs_when_others_need_the_dead_rank); smpy ends
    with its deadlock report: each blocked rank's call, and which rank raised what, when."""
    res = run("needed")
    assert res.status == "deadlock", res.message
    lines = res.message.splitlines()
    for r in (0, 2):
        assert any(f"rank {r} (host node-{r}): blocked in MPI_Barrier(comm=MPI_COMM_WORLD)" in ln for ln in lines)
    assert "[smpy]   finished ranks: 1" in lines
    assert any(ln.startswith("[smpy] rank 1 (host node-1) raised ValueError: boom (exit status 1) at simulated "
                             "time ") for ln in lines)
    assert res.stdout.count("before barrier") == 2 and "still here" not in res.stdout


def test_abort_on_exception_knob_keeps_the_first_exception_fatal() -> None:
    res = run("raise", cfg={"smpy/abort-on-exception": "yes"})
    assert (res.status, res.exit_code) == ("error", 1), res.message
    assert "[rank 1@node-1] ValueError: boom" in res.message
    assert "[smpy] rank 1 (host node-1) raised ValueError at simulated time " in res.message
    assert "; aborting the run (as MPI_Abort)" in res.message
    assert "still here" not in res.stdout and res.makespan_s < 0.5


def test_statuses_of_exits_and_exceptions_are_ored() -> None:
    res = run("mixed")  # rank 1 SystemExit(0), rank 2 exit 4, rank 0 raises after 0.5 s
    assert (res.status, res.exit_code) == ("error", 5), res.message
    assert res.rank_output(0) == "rank 0 still here\natexit 0\n"
    assert "rank 2 (host node-2) exited with status 4 at simulated time " in res.message
    assert "rank 0 (host node-0) raised RuntimeError: late (exit status 1) at simulated time 0.5" in res.message
    assert "rank 1 " not in res.message  # SystemExit(0) is a normal end


def test_program_excepthook_is_called_and_its_abort_ends_the_run() -> None:
    before = sys.excepthook
    res = run("hook")
    assert (res.status, res.exit_code) == ("abort", 7), res.message
    assert "MPI_Abort called by rank 1 (host node-1) with error code 7" in res.message
    err = res.rank_output(1, "stderr")
    # printed by the program's hook (sys.__excepthook__): untagged, the program's frames only
    assert err.startswith("Traceback (most recent call last):\n") and err.endswith("ValueError: boom\n")
    assert "smpy" not in err.replace(str(PROG), "")
    assert "still here" not in res.stdout
    assert sys.excepthook is before  # the program's hook does not outlive the run


def test_failing_excepthook_is_reported_as_python_does(tmp_path: Path) -> None:
    prog = tmp_path / "badhook.py"
    prog.write_text("import sys\nfrom mpi4py import MPI\n"
                    "def hook(*a):\n    raise KeyError('in hook')\n"
                    "sys.excepthook = hook\n"
                    "if MPI.COMM_WORLD.rank == 0:\n    raise ValueError('first')\n")
    res = smpy.run(str(prog), np=2, capture=True)
    assert (res.status, res.exit_code) == ("error", 1), res.message
    err = res.rank_output(0, "stderr")
    assert "[rank 0@node-0] Error in sys.excepthook:" in err and "KeyError: 'in hook'" in err
    assert "[rank 0@node-0] Original exception was:" in err and err.endswith("ValueError: first\n")


def test_exception_whose_str_fails(tmp_path: Path) -> None:
    prog = tmp_path / "badstr.py"
    prog.write_text("from mpi4py import MPI\n"
                    "class Odd(Exception):\n    def __str__(self):\n        raise TypeError('no')\n"
                    "if MPI.COMM_WORLD.rank == 1:\n    raise Odd()\n")
    res = smpy.run(str(prog), np=2, capture=True)
    assert (res.status, res.exit_code) == ("error", 1), res.message
    assert "rank 1 (host node-1) raised Odd: <exception str() failed> (exit status 1)" in res.message


def test_python_m_mpi4py_keeps_aborting_at_exit() -> None:
    """mpi4py's runner records an abort status that its exit hook turns into MPI_Abort, after
    the atexit handlers (mpiexec: 'atexit 1' then Abort(1); the others never print)."""
    res = launch.run(None, np=3, module="mpi4py", args=[str(PROG), "raise"], capture=True, echo=False)
    assert (res.status, res.exit_code) == ("abort", 1), res.message
    assert "MPI_Abort called by rank 1 (host node-1) with error code 1" in res.message
    assert "mpi4py's runner" in res.message
    assert res.rank_output(1) == "atexit 1\n"
    assert res.rank_output(1, "stderr").splitlines()[-1] == "[rank 1@node-1] ValueError: boom"
    assert "still here" not in res.stdout


def test_python_m_mpi4py_aborts_on_a_nonzero_exit(tmp_path: Path) -> None:
    prog = tmp_path / "ex.py"
    prog.write_text("import sys, time\nfrom mpi4py import MPI\n"
                    "if MPI.COMM_WORLD.rank == 1:\n    sys.exit(3)\n"
                    "time.sleep(1)\nprint('still here')\n")
    res = launch.run(None, np=3, module="mpi4py", args=[str(prog)], capture=True, echo=False)
    assert (res.status, res.exit_code) == ("abort", 3), res.message
    assert "still here" not in res.stdout
    plain = smpy.run(str(prog), np=3, capture=True)  # python ex.py: rank 1 ends alone
    assert (plain.status, plain.exit_code) == ("error", 3) and plain.stdout.count("still here") == 2


def test_keyboard_interrupt_under_the_library_is_the_users_ctrl_c() -> None:
    """Under smpy.run (no smpyrun signal handler) a KeyboardInterrupt cannot be told from the
    user's Ctrl-C: the run stops (under smpyrun it is the program's: test_reference_matches)."""
    res = run("kbd")
    assert (res.status, res.exit_code) == ("interrupted", 130), res.message


def test_spawned_process_that_raises_ends_alone(tmp_path: Path) -> None:
    prog = tmp_path / "spawner.py"
    prog.write_text("import sys\nfrom mpi4py import MPI\n"
                    "inter = MPI.COMM_SELF.Spawn(sys.executable, args=['-c', 'raise ValueError(\"child\")'], "
                    "maxprocs=1)\nprint('parent done')\n")
    res = smpy.run(str(prog), np=1, capture=True)
    assert (res.status, res.exit_code) == ("error", 1), res.message
    assert res.stdout == "parent done\n"
    assert ("spawned process 1 (rank 0 of its MPI_COMM_WORLD) (host node-1) raised ValueError: child "
            "(exit status 1)") in res.message


def test_trace_and_json_of_a_run_where_a_rank_raised(tmp_path: Path) -> None:
    """The run says it failed (status error, exit code 1: smpy predict counts the rep failed),
    and the survivors' timelines are complete."""
    out, trace = tmp_path / "run.json", tmp_path / "trace.json"
    proc = smpyrun("-np", "3", "--json", str(out), "--trace", str(trace), str(PROG), "raise")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(out.read_text())
    assert (data["status"], data["exit_code"]) == ("error", 1)
    assert "rank 1 (host node-1) raised ValueError: boom" in data["message"]
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert events
    ends = [r["end_time_s"] for r in data["ranks"]]
    assert ends[1] < 0.5 <= min(ends[0], ends[2])


def test_energy_and_trace_of_the_others_as_for_sys_exit(tmp_path: Path) -> None:
    """A rank ending by an exception or by sys.exit(1) leaves the same run behind: makespan,
    per-rank end times, energy and timeline (computation not simulated: deterministic)."""
    runs = {}
    for case in ("raise", "exit"):
        trace = tmp_path / f"{case}.json"
        res = launch.run(str(PROG), np=3, platform=str(ROOT / "examples" / "platforms" / "energy_platform.yaml"),
                         args=[case], capture=True, echo=False, trace=str(trace),
                         cfg={"smpi/simulate-computation": "no", "plugin": "host_energy"})
        assert (res.status, res.exit_code) == ("error", 1), res.message
        runs[case] = (res, json.loads(trace.read_text()))
    (a, ta), (b, tb) = runs["raise"], runs["exit"]
    assert a.energy and a.energy["total_J"] > 0
    assert (a.makespan_s, a.energy, a.ranks, a.stdout) == (b.makespan_s, b.energy, b.ranks, b.stdout)
    assert ta == tb
    assert a.makespan_s >= 0.5


@pytest.mark.slow
def test_predict_counts_the_point_failed(tmp_path: Path) -> None:
    exe = BIN / "smpy"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    proc = subprocess.run([*cmd, "predict", "-np", "3", "--reps", "1", "-o", str(tmp_path / "sw"), str(PROG),
                           "raise"], capture_output=True, text=True, timeout=300, env=app_env(True))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "raised ValueError: boom" in proc.stdout + proc.stderr


# -- differential: the same program under MPICH's mpiexec --------------------------------------

_MARKS = re.compile(r"rank \d still here|atexit \d")


def _reference(np: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The mpiexec run; MPICH 5.0.2 itself crashes now and then (signal 11 in a surviving
    rank's MPI_Finalize, 1 run in 4 of the kbd case), and an MPI_Abort made in an excepthook
    may kill the rank while Python is still writing the traceback (seen once in CI: the
    stderr ended at its first frame): such a run is tried again."""
    for _ in range(3):
        proc = run_reference(np, *args, check=False, timeout=60, env=app_env(False))
        cut = proc.stderr.rstrip().endswith("in <module>")
        if "signal 11" not in proc.stdout + proc.stderr and not cut:
            return proc
    pytest.fail(f"the MPICH reference crashed three times: {(proc.stdout + proc.stderr)[-2000:]}")


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("args", [("raise",), ("kbd",), ("mixed",), ("hook",), ("-m", "mpi4py", "raise")],
                         ids=["raise", "kbd", "mixed", "hook", "m-mpi4py"])
def test_reference_matches(args: tuple[str, ...]) -> None:
    """Exit status, which ranks printed (still here, atexit) and the exception's last line."""
    argv = [*args[:-1], str(PROG), args[-1]]
    real = _reference(3, *argv)
    sim = smpyrun("-q", "-np", "3", *argv)
    assert sim.returncode == real.returncode, (real.stdout + real.stderr, sim.stderr)
    case = args[-1]
    if case != "hook":  # MPICH's MPI_Abort returns in an excepthook and the atexit handlers may run
        assert sorted(_MARKS.findall(sim.stdout)) == sorted(_MARKS.findall(real.stdout)), (real.stdout, sim.stdout)
    else:
        assert "still here" not in real.stdout and "still here" not in sim.stdout
    last = "KeyboardInterrupt" if case == "kbd" else ("RuntimeError: late" if case == "mixed" else "ValueError: boom")
    assert last in real.stderr and last in sim.stderr


@pytest.mark.slow
@needs_mpiexec
def test_reference_hangs_when_others_need_the_dead_rank() -> None:
    """mpiexec does not end a job whose rank raised while the others wait for it in a
    collective (smpy reports the deadlock instead): within 20 s, far more than the 0.5 s the
    program needs, the survivors reached the barrier and nobody passed it."""
    p = subprocess.Popen(mpiexec_cmd(3, str(PROG), "needed"), env=app_env(False), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=20)
        pytest.fail(f"mpiexec ended (exit code {p.returncode}) although ranks wait for a dead one:\n{out}{err}")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    assert sorted(re.findall(r"rank \d before barrier", out)) == ["rank 0 before barrier", "rank 2 before barrier"]
    assert "still here" not in out and "ValueError: boom" in err
    sim = smpyrun("-q", "-np", "3", str(PROG), "needed")
    assert sim.returncode == 1 and "DEADLOCK" in sim.stderr and "raised ValueError: boom" in sim.stderr
