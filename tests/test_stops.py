"""Runs that end early keep their results: SIGINT, SIGTERM, SIGHUP, a rank's ``os._exit`` or
``sys.exit(n)``, an exception before any MPI call, the wall-clock and simulated-time limits.
Each leaves a valid trace (Chrome JSON) and a valid ``--json`` summary (smpy/cli/stops.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow

LOOP = """\
import sys
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
a = np.ones(1000)
comm.Barrier()
if comm.rank == 0:
    print("started", flush=True)
while True:
    comm.Allreduce(MPI.IN_PLACE, a)
"""


def _cmd(*args: str) -> list[str]:
    exe = BIN / "smpyrun"
    return [*([str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]), *args]


def _outputs(tmp_path: Path) -> tuple[str, str]:
    return str(tmp_path / "trace.json"), str(tmp_path / "run.json")


def _check(tmp_path: Path, status: str, code: int, rc: int, ran: bool = True) -> dict:
    """The trace is a complete JSON array (with the ranks' events when ``ran``) and the
    summary records the outcome."""
    trace, summary = _outputs(tmp_path)
    events = json.loads(Path(trace).read_text())
    assert isinstance(events, list) and (any(e.get("ph") == "X" for e in events) or not ran)
    data = json.loads(Path(summary).read_text())
    assert (data["status"], data["exit_code"], rc) == (status, code, code)
    return data


@pytest.mark.parametrize(("sig", "code", "words"), [
    (signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")])
def test_signal_keeps_trace_and_json(tmp_path: Path, sig: int, code: int, words: str) -> None:
    prog = tmp_path / "loop.py"
    prog.write_text(LOOP)
    trace, summary = _outputs(tmp_path)
    proc = subprocess.Popen(_cmd("-np", "4", "--trace", trace, "--json", summary, str(prog)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n"  # the simulation is running
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "Traceback" not in err
    assert words in err and "simulated makespan" in err
    data = _check(tmp_path, "interrupted", code, proc.returncode)
    assert data["mpi_calls"] > 0 and data["makespan_s"] > 0


CATCHER = """\
import sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.rank == 0:
    print("started", flush=True)
try:
    while True:
        sum(range(200000))  # most of the run is in the ranks' own computation
        comm.Barrier()
except KeyboardInterrupt:  # as pytest does: its session ends with status 2
    sys.exit(2)
"""


def test_signal_caught_by_the_program_still_stops_the_run(tmp_path: Path) -> None:
    """A rank that catches the signal's Stop (a KeyboardInterrupt) and exits non-zero, as
    pytest does, must not leave the other ranks running into a deadlock: the run stops."""
    prog = tmp_path / "catcher.py"
    prog.write_text(CATCHER)
    trace, summary = _outputs(tmp_path)
    proc = subprocess.Popen(_cmd("-np", "3", "--trace", trace, "--json", summary, str(prog)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "DEADLOCK" not in err and "SIGTERM" in err, err
    _check(tmp_path, "interrupted", 143, proc.returncode)


@pytest.mark.parametrize(("body", "code", "words"), [
    ("import os\nos._exit(3)", 3, "rank 1 (host node-1) called os._exit(3)"),
    # the other ranks run on (as under mpiexec): they must not wait for rank 1
    ("import sys\nsys.exit(4)", 4, "rank 1 (host node-1) exited with status 4"),
])
def test_rank_exit_keeps_trace_and_json(tmp_path: Path, body: str, code: int, words: str) -> None:
    prog = tmp_path / "exit.py"
    after = "comm.Barrier()" if "os._exit" in body else "print('ran on')"
    prog.write_text("from mpi4py import MPI\ncomm = MPI.COMM_WORLD\ncomm.Barrier()\n"
                    f"if comm.rank == 1:\n    {body.replace(chr(10), chr(10) + '    ')}\n{after}\n")
    trace, summary = _outputs(tmp_path)
    proc = subprocess.run(_cmd("-np", "4", "--trace", trace, "--json", summary, str(prog)),
                          capture_output=True, text=True, timeout=60)
    assert words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    _check(tmp_path, "error", code, proc.returncode)


def test_os_exit_zero_ends_only_that_rank(tmp_path: Path) -> None:
    """``os._exit(0)`` after the last communication: the process ends early, the job is fine."""
    prog = tmp_path / "exit0.py"
    prog.write_text("import os\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"
                    "if MPI.COMM_WORLD.rank == 0:\n    os._exit(0)\nprint('done')\n")
    trace, summary = _outputs(tmp_path)
    proc = subprocess.run(_cmd("-np", "3", "--trace", trace, "--json", summary, str(prog)),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.count("done") == 2
    _check(tmp_path, "ok", 0, proc.returncode)


def test_exception_before_any_mpi_call(tmp_path: Path) -> None:
    prog = tmp_path / "early.py"
    prog.write_text("import time\ntime.sleep(0.001)\nraise RuntimeError('early')\n")
    trace, summary = _outputs(tmp_path)
    proc = subprocess.run(_cmd("-np", "2", "--trace", trace, "--json", summary, str(prog)),
                          capture_output=True, text=True, timeout=60)
    assert "RuntimeError: early" in proc.stderr
    _check(tmp_path, "error", 1, proc.returncode)


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--timeout", "1", "wall-clock limit of 1 s"), ("--sim-timeout", "0.01", "simulated-time limit of 0.01 s")])
def test_time_limits(tmp_path: Path, option: str, value: str, words: str) -> None:
    prog = tmp_path / "loop.py"
    prog.write_text(LOOP)
    trace, summary = _outputs(tmp_path)
    proc = subprocess.run(_cmd("-np", "4", option, value, "--trace", trace, "--json", summary, str(prog)),
                          capture_output=True, text=True, timeout=120)
    assert words in proc.stderr, proc.stderr
    # a wall-clock limit may expire before the simulation starts on a loaded machine: it
    # then stops at simulated time 0, outputs still complete
    data = _check(tmp_path, "timeout", 124, proc.returncode, ran=option == "--sim-timeout")
    if option == "--sim-timeout":
        assert data["makespan_s"] == pytest.approx(0.01)


def test_a_signal_before_the_handler_becomes_the_pending_stop(monkeypatch):
    import signal as _signal

    from smpy.cli import stops

    saved = {s: _signal.getsignal(s) for s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)}
    monkeypatch.setattr(stops, "_early", [])
    try:
        stops.record_early()
        _signal.raise_signal(_signal.SIGTERM)  # recorded, not fatal
        handler = stops.StopSignals().install()
        try:
            assert handler.pending is not None and handler.pending.exit_code == 143
        finally:
            handler.uninstall()
    finally:
        for s, h in saved.items():
            _signal.signal(s, h)
