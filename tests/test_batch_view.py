"""Seeing batch and dynamic runs: ``smpy batch --html`` and ``--trace`` (Chrome and Paje),
and the node states of dynamic allocation in the single runs' traces. The times are exact:
the schedule of a two-job FCFS workload, the boot and shutdown durations of the platform."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from test_trace_paje import parse

import smpy
from smpy.cli import batch, batch_plot
from smpy.cli.workload import load_workload
from smpy.trace.chrome import NODES_PID, PHASES_TID

FOUR = Path(__file__).parent / "programs" / "batch" / "four.yaml"

PROG = """\
import sys
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
c.Barrier()
smpy.sleep(float(sys.argv[1]))
c.Barrier()
"""


def _two_jobs(tmp_path: Path) -> Path:
    """a: 2 ranks for 3 s from 0; b: 4 ranks (every node) for 2 s, submitted at 1 s: under
    FCFS b waits for a's end (3 s) and runs to 5 s."""
    (tmp_path / "prog.py").write_text(PROG)
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(f"""\
        platform: {FOUR}
        scheduler: fcfs
        cfg: {{smpi/simulate-computation: 'no'}}
        jobs:
          - {{name: a, program: prog.py, args: ['3'], np: 2, walltime: 10s, submit: 0s}}
          - {{name: b, program: prog.py, args: ['2'], np: 4, walltime: 10s, submit: 1s}}
        """))
    return path


def _spans(events: list[dict], pid: int, tid: int) -> list[tuple[str, float, float]]:
    """(name, start s, duration s) of the complete events of one thread, in time order."""
    spans = sorted((e["ts"], e["name"], e["dur"]) for e in events
                   if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid)
    return [(name, ts * 1e-6, dur * 1e-6) for ts, name, dur in spans]


def test_two_job_chrome_trace_has_each_job_at_its_offsets(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    res = batch.simulate(load_workload(str(_two_jobs(tmp_path))), solo=False, trace=str(out))
    assert res.status == "ok"
    a, b = res.jobs
    assert (a.start_s, b.submit_s) == (0.0, 1.0) and b.start_s == pytest.approx(3.0, abs=1e-6)
    events = json.loads(out.read_text())
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {1: "job a", 2: "job b", NODES_PID: "nodes"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    # global process numbers: a's ranks 0-1, b's 2-5, each named by its rank in its job
    assert {k: v for k, v in threads.items() if k[0] == 2} == {
        (2, 2): "rank 0 (n0)", (2, 3): "rank 1 (n1)", (2, 4): "rank 2 (n2)", (2, 5): "rank 3 (n3)",
        (2, PHASES_TID): "job"}
    # the phases: b waits from its submit time to a's end, then runs to its own end
    us = 1e-9  # the trace's times are microseconds with 3 decimals
    phases_b = _spans(events, 2, PHASES_TID)
    assert [p[0] for p in phases_b] == ["wait", "run"]
    assert phases_b[0][1] == pytest.approx(1.0, abs=us) and phases_b[0][2] == pytest.approx(b.start_s - 1.0, abs=us)
    assert phases_b[1][1] == pytest.approx(b.start_s, abs=us)
    assert phases_b[1][2] == pytest.approx(b.end_s - b.start_s, abs=us)
    assert _spans(events, 1, PHASES_TID) == [("run", 0.0, pytest.approx(a.end_s, abs=us))]
    # each rank's first barrier at its job's start, the second 3 s (a) or 2 s (b) later
    for pid, job, ranks, sleep in ((1, a, (0, 1), 3.0), (2, b, (2, 3, 4, 5), 2.0)):
        for r in ranks:
            barriers = [s for s in _spans(events, pid, r) if s[0] == "MPI_Barrier"]
            assert len(barriers) == 2
            assert barriers[0][1] == pytest.approx(job.start_s, abs=us)
            assert barriers[1][1] - job.start_s == pytest.approx(sleep, abs=1e-6)
    # node states: a holds n0, n1 until its end, then b holds all four
    assert _spans(events, NODES_PID, 0) == [("allocated", 0.0, pytest.approx(a.end_s, abs=us)),
                                            ("allocated", pytest.approx(b.start_s, abs=us),
                                             pytest.approx(b.end_s - b.start_s, abs=us))]
    assert [s[0] for s in _spans(events, NODES_PID, 3)] == ["free", "allocated"]
    # the same workload gives the same bytes
    again = tmp_path / "again.json"
    batch.simulate(load_workload(str(_two_jobs(tmp_path))), solo=False, trace=str(again))
    assert again.read_bytes() == out.read_bytes()


def test_two_job_paje_trace_has_a_container_per_job(tmp_path: Path) -> None:
    out = tmp_path / "t.paje"
    res = batch.simulate(load_workload(str(_two_jobs(tmp_path))), solo=False, trace=str(out))
    assert res.status == "ok"
    b = res.jobs[1]
    p = parse(out)  # valid Paje: every container created before use, destroyed, time ordered
    jobs = {alias: c[2] for alias, c in p.containers.items() if p.types[c[0]][2] == "JOB"}
    assert sorted(jobs.values()) == ["a", "b"]
    ranks = {}
    for c in p.containers.values():
        if p.types[c[0]][2] == "MPI":
            ranks.setdefault(jobs[c[1]], []).append(c[2])
    assert {k: sorted(v) for k, v in ranks.items()} == {"a": ["rank-0", "rank-1"],
                                                        "b": ["rank-0", "rank-1", "rank-2", "rank-3"]}
    b_alias = next(k for k, v in jobs.items() if v == "b")
    assert p.set_states[b_alias] == [(1.0, "waiting"), (pytest.approx(b.start_s, abs=1e-9), "running")]
    hosts = {alias: c[2] for alias, c in p.containers.items() if p.types[c[0]][2] == "HOST"}
    n3 = next(k for k, v in hosts.items() if v == "n3")
    assert [s for _, s in p.set_states[n3]] == ["free", "allocated", "free"]
    assert p.set_states[n3][1][0] == pytest.approx(b.start_s, abs=1e-9)


PLATFORM = """\
name: dyn
clusters:
  - name: c
    prefix: n-
    suffix: ""
    radical: 0-2
    cores: 2
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 10us
    node: {state: off, boot: {time: 150s, power: 120W}, shutdown: {time: 7s, power: 110W}}
"""

CHILD = """\
from mpi4py import MPI
import smpy
p = MPI.Comm.Get_parent()
smpy.execute_flops(2e9)
p.Barrier()
p.Disconnect()
"""

PARENT = """\
import sys
from mpi4py import MPI
import smpy, smpy.nodes
smpy.execute_flops(1e9)
c = MPI.COMM_WORLD.Spawn(sys.executable, [{child!r}], 2)
c.Barrier()
c.Disconnect()
smpy.sleep(1)
smpy.nodes.power_off()
smpy.sleep(10)
"""


def _dynamic(tmp_path: Path, trace: str) -> smpy.RunResult:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT.format(child=str(tmp_path / "child.py")))
    (tmp_path / "plat.yaml").write_text(PLATFORM)
    from smpy.cli.launch import run

    res = run(str(tmp_path / "parent.py"), np=1, platform=str(tmp_path / "plat.yaml"), trace=trace,
              cfg={"smpi/simulate-computation": "no", "smpy/spawn-node-cost": "0s",
                   "smpy/spawn-process-cost": "0s", "smpy/spawn-init-cost": "0s"}, capture=True, echo=False)
    assert res.status == "ok", res.stderr
    return res


def test_boot_and_shutdown_spans_last_exactly_the_platforms_durations(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    res = _dynamic(tmp_path, str(out))
    events = json.loads(out.read_text())
    # n-1 is off until the spawn at 1 s, boots 150 s, runs the two children (2 s of
    # computation), is free when they end, shuts down in 7 s at the power_off 1 s later
    n1 = _spans(events, NODES_PID, 1)
    assert [s[0] for s in n1] == ["off", "booting", "allocated", "free", "shutting down", "off"]
    assert n1[0][1:] == (0.0, 1.0)
    assert n1[1][1:] == (1.0, 150.0)
    assert n1[2][1] == 151.0 and 2.0 < n1[2][2] < 2.001  # and the Barrier and Disconnect
    assert n1[3][2] == pytest.approx(1.0, abs=1e-3)
    assert n1[4][2] == 7.0
    assert n1[5][1] + n1[5][2] == pytest.approx(res.makespan_s, abs=1e-9)
    # n-2 was never used: off from start to end; n-0 runs the parent
    assert [s[0] for s in _spans(events, NODES_PID, 2)] == ["off"]
    assert _spans(events, NODES_PID, 0)[0][:2] == ("allocated", 0.0)
    # the spawned processes are threads of their host's process, with their computation
    computes = [s for s in _spans(events, 1, 1) + _spans(events, 1, 2) if s[0] == "compute"]
    assert [d for _, _, d in computes] == [2.0, 2.0]  # started after connecting to the parent
    assert all(151.0 < t < 151.001 for _, t, _ in computes)


def test_paje_node_states_of_a_dynamic_run(tmp_path: Path) -> None:
    out = tmp_path / "t.paje"
    _dynamic(tmp_path, str(out))
    p = parse(out)
    hosts = {c[2]: alias for alias, c in p.containers.items() if p.types[c[0]][2] == "HOST"}
    assert sorted(hosts) == ["n-0", "n-1", "n-2"]  # the lifecycle platform: every node, from 0
    n1 = p.set_states[hosts["n-1"]]
    assert [s for _, s in n1] == ["off", "booting", "allocated", "free", "shutting down", "off"]
    assert [t for t, _ in n1][:3] == [0.0, 1.0, 151.0]
    assert n1[5][0] - n1[4][0] == pytest.approx(7.0, abs=1e-9)
    spawned = sorted(c[2] for c in p.containers.values()
                     if p.types[c[0]][2] == "MPI" and c[1] == hosts["n-1"])
    assert spawned == ["rank-1", "rank-2"]


def _html(tmp_path: Path, page: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = batch.main([str(_two_jobs(tmp_path)), "--no-solo", "-q", "--html", str(page)])
    assert code == 0, capsys.readouterr().err
    return page.read_text()


def test_batch_html_has_the_jobs_the_gantt_and_the_utilisation(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    text = _html(tmp_path, tmp_path / "r.html", capsys)
    assert "<title>smpy batch " in text
    assert "<tr><td style='text-align:left'>a</td><td>2</td><td>2</td><td>0</td><td>0</td><td>0</td><td>3" in text
    assert "<tr><td style='text-align:left'>b</td><td>4</td><td>4</td><td>1</td><td>2</td><td>3" in text
    assert text.count("<td style='text-align:left'>done</td>") == 2
    assert "makespan <b>5.0000001" in text and "node utilisation 70.00%" in text
    assert "<img alt='gantt' src='data:image/png;base64," in text
    assert "<img alt='utilization' src='data:image/png;base64," in text
    assert "<h2>Utilisation</h2>" in text and text.count("<tr>", text.index("class='bins'")) == 101
    assert not (tmp_path / "r.html.utilization.csv").exists()  # the page's data file is removed
    assert _html(tmp_path, tmp_path / "again.html", capsys) == text  # byte for byte


def test_batch_html_without_matplotlib_still_has_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import smpy.trace.plots as plots

    def missing() -> None:
        raise RuntimeError("plots need matplotlib: pip install matplotlib (or pip install 'smpy[plot]')")

    monkeypatch.setattr(plots, "require_matplotlib", missing)
    text = _html(tmp_path, tmp_path / "r.html", capsys)
    assert "<img" not in text
    assert "No figures: plots need matplotlib" in text
    assert "<td style='text-align:left'>a</td>" in text and "<td style='text-align:left'>b</td>" in text
    assert "class='bins'" in text


MPMD = """\
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
smpy.execute_flops(1e9 * (c.rank + 1))
c.Barrier()
"""


@pytest.mark.parametrize("kind", ["mpmd", "dynamic", "batch"])
def test_every_kind_of_run_has_utilisation_per_bin_in_csv_plots_and_html(tmp_path: Path, kind: str,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Utilisation over time for MPMD, dynamic (spawns, boots) and batch runs: the CSV, the
    figure and the page's table of bins (single runs: tests/test_trace_html.py)."""
    pytest.importorskip("matplotlib")
    from smpy.cli import smpyrun

    out = tmp_path / "plots"
    if kind == "mpmd":
        (tmp_path / "a.py").write_text(MPMD)
        code = smpyrun.main(["-q", "--plots", str(out), "--cfg=smpi/simulate-computation:no",
                             "-np", "2", str(tmp_path / "a.py"), ":", "-np", "1", str(tmp_path / "a.py")])
        csv_file, want = out / "report.utilization.csv", 6.0  # three ranks computing 1 + 2 + 3 s
    elif kind == "dynamic":
        (tmp_path / "child.py").write_text(CHILD)
        (tmp_path / "parent.py").write_text(PARENT.format(child=str(tmp_path / "child.py")))
        (tmp_path / "plat.yaml").write_text(PLATFORM)
        code = smpyrun.main(["-q", "-np", "1", "--plots", str(out), "--platform", str(tmp_path / "plat.yaml"),
                             "--cfg=smpi/simulate-computation:no", str(tmp_path / "parent.py")])
        csv_file, want = out / "report.utilization.csv", 5.0  # the parent's 1 s, the children's 2 x 2 s
    else:
        code = batch.main([str(_two_jobs(tmp_path)), "--no-solo", "-q", "--plots", str(out),
                           "--report", str(tmp_path / "rep")])
        csv_file, want = tmp_path / "rep.utilization.csv", 0.0  # the jobs only sleep
    assert code == 0, capsys.readouterr().err
    from smpy.trace.plots import read_utilization

    rows = read_utilization(csv_file)
    assert len(rows) == 100
    assert sum((r["t_end"] - r["t_start"]) * r["busy"] for r in rows) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert (out / "utilization.png").stat().st_size > 10_000
    page = (out / "report.html").read_text()
    assert "<img alt='utilization'" in page and page.count("<tr>", page.index("class='bins'")) == 101


def test_traces_of_jobs_killed_at_their_walltime_stay_valid(tmp_path: Path) -> None:
    """Killed ranks end their containers (Paje) and the run span says why (Chrome)."""
    wl = _two_jobs(tmp_path)
    wl.write_text(wl.read_text().replace("walltime: 10s, submit: 0s", "walltime: 2s, submit: 0s"))
    res = batch.simulate(load_workload(str(wl)), solo=False, trace=str(tmp_path / "t.paje"))
    a, b = res.jobs
    assert (a.status, a.end_s) == ("timeout", 2.0) and b.status == "done"
    p = parse(tmp_path / "t.paje")  # complete: every container destroyed, no state left pushed
    jobs = {c[2]: alias for alias, c in p.containers.items() if p.types[c[0]][2] == "JOB"}
    assert p.set_states[jobs["b"]] == [(1.0, "waiting"), (pytest.approx(2.0, abs=1e-9), "running")]
    batch.simulate(load_workload(str(wl)), solo=False, trace=str(tmp_path / "t.json"))
    events = json.loads((tmp_path / "t.json").read_text())
    run = next(e for e in events if e["ph"] == "X" and e["pid"] == 1 and e["name"] == "run")
    assert (run["ts"], run["dur"], run["args"]["state"]) == (0.0, 2e6, "timeout")
    assert "walltime" in run["args"]["reason"]
    page = Path(batch_plot.html_report(res, str(tmp_path / "r.html")))
    assert "<li>a: timeout: killed at its walltime (2 s) at 2 s</li>" in page.read_text()
