"""Timeline trace: valid trace-event JSON with MPI calls and computation per rank."""

import json
from pathlib import Path

import pytest

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


FLOW_PROG = """
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
a = np.zeros(1000)
if c.rank == 0:
    c.Send(a, 1, tag=3)
elif c.rank == 1:
    c.Recv(a, 0, tag=3)
c.Barrier()
"""


def test_trace_has_message_flows_and_call_locations(tmp_path):
    import json

    prog = tmp_path / "flow.py"
    prog.write_text(FLOW_PROG)
    out = tmp_path / "t.json"
    from smpy.cli.launch import run

    res = run(str(prog), np=2, cfg={"smpi/simulate-computation": "no"}, trace=str(out),
              capture=True, echo=False)
    assert res.status == "ok"
    events = json.loads(out.read_text())
    starts = [e for e in events if e["ph"] == "s"]
    ends = [e for e in events if e["ph"] == "f"]
    assert len(starts) == 1 and len(ends) == 1 and starts[0]["id"] == ends[0]["id"]
    assert starts[0]["tid"] == 0 and ends[0]["tid"] == 1 and starts[0]["args"]["bytes"] == 8000
    assert ends[0]["ts"] > starts[0]["ts"]
    send = [e for e in events if e["ph"] == "X" and e["name"] == "MPI_Send"]
    assert send[0]["args"]["location"] == "flow.py:7"
    for e in events:  # the trace-event format's required fields
        assert {"ph", "pid"} <= set(e)
        if e["ph"] in ("X", "s", "f"):
            assert isinstance(e["ts"], float) and "tid" in e


def test_report_sums_time_per_rank_and_call(tmp_path):
    import json

    from smpy.cli.launch import run

    prog = tmp_path / "flow.py"
    prog.write_text(FLOW_PROG)
    res = run(str(prog), np=2, cfg={"smpy/report": str(tmp_path / "rep"),
                                    "smpi/simulate-computation": "no"}, capture=True, echo=False)
    assert res.status == "ok"
    data = json.loads((tmp_path / "rep.json").read_text())
    assert data["calls"]["MPI_Barrier"]["count"] == 2
    r1 = data["ranks"][1]
    assert r1["calls"]["MPI_Recv"]["count"] == 1 and r1["calls"]["MPI_Recv"]["time_s"] > 0
    assert data["ranks"][0]["bytes_sent"] == 8000
    total = r1["mpi_s"] + r1["compute_s"] + r1["other_s"]
    assert total == __import__("pytest").approx(r1["end_s"])
    assert (tmp_path / "rep.csv").read_text().startswith("rank,call,count,time_s")


@pytest.mark.slow
def test_plots_and_html_report(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    pytest = __import__("pytest")
    pytest.importorskip("matplotlib")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "plots"
    done = subprocess.run([sys.executable, "-m", "smpy", "-np", "2", "--energy", "--plots", str(out),
                           "--platform", str(root / "examples/platforms/energy_platform.yaml"),
                           "--hostfile", str(root / "examples/energy/hosts.txt"),
                           "--cfg=smpi/simulate-computation:no", str(root / "examples/energy/dvfs.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("gantt.png", "power.png", "matrix.png", "utilization.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "report.html").read_text()
    assert "<h2>Utilisation</h2>" in page and "allocated core-seconds" in page
    assert page.count("data:image/png;base64,") == 4 and "<table>" in page and page.endswith("</html>")
