"""Timeline trace: valid trace-event JSON with MPI calls and computation per rank."""

import json
from pathlib import Path

import smpy
from smpy.cli.launch import run

ROOT = Path(__file__).resolve().parent.parent


def test_chrome_trace_is_valid_and_complete(tmp_path):
    out = tmp_path / "trace.json"
    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\nimport smpy\nc = MPI.COMM_WORLD\nsmpy.execute(0.5)\n"
                    "c.Barrier()\nx = c.allreduce(c.rank)\n")
    res = run(str(prog), np=3, cfg={"smpi/simulate-computation": "no"}, trace=str(out), echo=False, capture=True)
    assert res.status == "ok"
    events = json.loads(out.read_text())
    names = {(e["tid"], e["name"]) for e in events if e["ph"] == "X"}
    for r in range(3):
        assert (r, "MPI_Barrier") in names and (r, "Comm.allreduce") in names and (r, "compute") in names
    comp = [e for e in events if e["ph"] == "X" and e["name"] == "compute"]
    assert all(abs(e["dur"] - 0.5e6) < 1e-3 for e in comp)
    barrier = [e for e in events if e["name"] == "MPI_Barrier"]
    assert all(e["ts"] >= 0.5e6 - 1e-3 for e in barrier)
    threads = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert len(threads) == 3
    assert smpy  # the public API is importable alongside
