"""``smpy batch``: several jobs in one simulation (docs/workloads.md). The schedules and the
shared-link times are computed by hand in each test."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.cli import batch
from smpy.cli.scheduler import NodeScheduler, Request
from smpy.cli.workload import WorkloadError, load_workload

DIR = Path(__file__).parent / "programs" / "batch"
SLEEPER = DIR / "sleeper.py"

#: (name, np, sleep s, walltime s, submit s) on four single-core nodes
HAND = [("j1", 2, 10, 10, 0), ("j2", 4, 5, 5, 1), ("j3", 1, 4, 4, 2), ("j4", 2, 5, 20, 3), ("j5", 1, 3, 3, 3)]


def _workload(tmp_path: Path, scheduler: str, jobs: list[tuple] = HAND) -> Path:
    lines = [f"platform: {DIR / 'four.yaml'}", f"scheduler: {scheduler}",
             "cfg: {smpi/simulate-computation: 'no'}", "jobs:"]
    for name, np, sleep, wall, submit in jobs:
        lines.append(f"  - {{name: {name}, program: {SLEEPER}, args: ['{sleep}'], np: {np}, "
                     f"walltime: {wall}s, submit: {submit}s}}")
    path = tmp_path / "w.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _schedule(result: batch.BatchResult) -> dict[str, tuple[float, float, list[str]]]:
    return {j.name: (j.start_s, j.end_s, j.hosts) for j in result.jobs}


def test_fcfs_schedule_equals_the_hand_computed_one(tmp_path: Path) -> None:
    res = batch.simulate(load_workload(str(_workload(tmp_path, "fcfs"))), solo=False)
    assert res.status == "ok"
    # j1 runs 0-10 on n0,n1; j2 (4 nodes) waits for it and blocks every later job
    assert _schedule(res) == {
        "j1": (0.0, 10.0, ["n0", "n1"]), "j2": (10.0, 15.0, ["n0", "n1", "n2", "n3"]),
        "j3": (15.0, 19.0, ["n0"]), "j4": (15.0, 20.0, ["n1", "n2"]), "j5": (15.0, 18.0, ["n3"])}
    assert res.makespan_s == 20.0
    assert res.node_utilisation == pytest.approx((2 * 10 + 4 * 5 + 4 + 2 * 5 + 3) / (4 * 20.0), rel=1e-12)
    assert [j.wait_s for j in res.jobs] == [0.0, 9.0, 13.0, 12.0, 12.0]


def test_easy_schedule_equals_the_hand_computed_one(tmp_path: Path) -> None:
    res = batch.simulate(load_workload(str(_workload(tmp_path, "easy"))), solo=False)
    # j2's reservation: all four nodes at 10 (j1's walltime end). j3 (2+4 <= 10) and j5
    # (3+3 <= 10) backfill on the free nodes; j4 (3+20 > 10) would delay j2: it waits
    assert _schedule(res) == {
        "j1": (0.0, 10.0, ["n0", "n1"]), "j2": (10.0, 15.0, ["n0", "n1", "n2", "n3"]),
        "j3": (2.0, 6.0, ["n2"]), "j4": (15.0, 20.0, ["n0", "n1"]), "j5": (3.0, 6.0, ["n3"])}


def test_easy_backfills_outside_the_reservation_past_the_shadow_time() -> None:
    s = NodeScheduler(4, "easy")
    s.submit(Request(0, 2, 10.0))
    assert s.decide(0.0) == [(Request(0, 2, 10.0), (0, 1))]
    s.submit(Request(1, 3, 5.0))  # head: reserved n0,n1,n2 at 10
    s.submit(Request(2, 1, 100.0))  # ends after 10 but n3 is outside the reservation
    s.submit(Request(3, 1, 1.0))  # ends at 2 <= 10: may take reserved n2
    s.submit(Request(4, 1, 1.0))  # no node left
    assert s.reservation(1.0) == (10.0, {0, 1, 2})
    assert [(r.id, n) for r, n in s.decide(1.0)] == [(2, (3,)), (3, (2,))]
    s.finish(3)
    assert [(r.id, n) for r, n in s.decide(2.0)] == [(4, (2,))]  # again before the shadow time
    s.finish(4)
    s.finish(0)
    assert [(r.id, n) for r, n in s.decide(7.0)] == [(1, (0, 1, 2))]


def test_energy_and_solo_runs(tmp_path: Path) -> None:
    res = batch.simulate(load_workload(str(_workload(tmp_path, "easy"))))
    # hosts idle at 100 W while their ranks sleep: energy = nodes x 100 W x run time
    assert [j.energy_J for j in res.jobs] == pytest.approx([2000.0, 2000.0, 400.0, 1000.0, 300.0], rel=1e-12)
    assert res.energy_J == pytest.approx(4 * 100.0 * 20.0, rel=1e-12)
    assert [j.solo_s for j in res.jobs] == [10.0, 5.0, 4.0, 5.0, 3.0]
    assert all(j.slowdown == 1.0 for j in res.jobs)
    assert res.solo_runs == 5
    assert res.job_output("j2") == "4 ranks slept 5 s\n"


def test_two_jobs_crossing_one_link_each_get_half_its_bandwidth(tmp_path: Path) -> None:
    size, bw, env = 10_000_000, 10e6, 16  # bytes, B/s of the backbone, envelope bytes
    wl = tmp_path / "x.yaml"
    wl.write_text(f"platform: {DIR / 'shared.yaml'}\nscheduler: none\n"
                  "cfg: {network/model: raw, smpi/simulate-computation: 'no', smpi/wtime: 0}\njobs:\n"
                  f"  - {{name: a, program: {DIR / 'xfer.py'}, args: ['{size}'], np: 2, hosts: [a1, a2]}}\n"
                  f"  - {{name: b, program: {DIR / 'xfer.py'}, args: ['{size}'], np: 2, hosts: [b1, b2], "
                  "submit: 0.5s}\n")
    res = batch.simulate(load_workload(str(wl)))
    a, b = res.job("a"), res.job("b")
    alone = (size + env) / bw
    assert a.solo_s == pytest.approx(alone, rel=1e-12) and b.solo_s == pytest.approx(alone, rel=1e-12)
    # a alone for 0.5 s (5 MB), then both at bw/2 until a's last (5 MB + 16 B), then b alone
    a_end = 0.5 + (size + env - 0.5 * bw) / (bw / 2)
    b_end = a_end + (size + env - (a_end - 0.5) * bw / 2) / bw
    assert a.end_s == pytest.approx(a_end, rel=1e-12)
    assert b.end_s == pytest.approx(b_end, rel=1e-12)
    assert a.slowdown == pytest.approx(a_end / alone, rel=1e-12)
    assert b.slowdown == pytest.approx((b_end - 0.5) / alone, rel=1e-12)


def test_poisson_and_empirical_arrivals_follow_the_seed(tmp_path: Path) -> None:
    wl = tmp_path / "p.yaml"
    wl.write_text(f"platform: {DIR / 'four.yaml'}\nscheduler: fcfs\ntemplates:\n"
                  f"  - {{name: s, program: {SLEEPER}, args: ['1'], np: 1}}\n"
                  f"  - {{name: t, program: {SLEEPER}, args: ['2'], np: 2}}\n"
                  "arrivals: {distribution: poisson, rate: 0.5, count: 5, seed: 7, mix: {s: 3, t: 1}}\n")
    jobs = load_workload(str(wl)).jobs
    rng = random.Random(7)
    t, expected = 0.0, []
    for i in range(5):
        t += rng.expovariate(0.5)
        name = rng.choices(["s", "t"], [3.0, 1.0])[0]
        expected.append((f"{name}-{i}", t))
    assert [(j.name, j.submit) for j in jobs] == expected
    wl.write_text(wl.read_text().replace("distribution: poisson, rate: 0.5",
                                         "distribution: empirical, intervals: [1s, 1s]"))
    assert [j.submit for j in load_workload(str(wl)).jobs] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_swf_records_become_jobs(tmp_path: Path) -> None:
    swf = tmp_path / "log.swf"
    swf.write_text("; Version: 2.2\n; a comment\n"
                   "1 0 5 30 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
                   "2 10 0 20 2 -1 -1 -1 -1 -1 1 1 1 2 1 -1 -1 -1\n"
                   "3 15 0 20 -1 -1 -1 -1 -1 -1 0 1 1 2 1 -1 -1 -1\n")
    wl = tmp_path / "s.yaml"
    wl.write_text(f"platform: {DIR / 'four.yaml'}\nscheduler: easy\ntemplates:\n"
                  f"  - {{name: app, program: {SLEEPER}, args: ['{{runtime}}'], np: 1}}\n"
                  f"  - {{name: other, program: {SLEEPER}, args: ['{{runtime}}', '{{np}}'], np: 1}}\n"
                  "swf: {file: log.swf, time-scale: 0.1, programs: {1: app, default: other}}\n")
    jobs = load_workload(str(wl)).jobs
    # record 3 has no processor count: skipped; record 2 has no requested time: its run time
    assert [(j.name, j.np, j.submit, j.walltime, j.args) for j in jobs] == [
        ("app-1", 4, 0.0, 6.0, ["3"]), ("other-2", 2, 1.0, 2.0, ["2", "2"])]


BAD = [
    ("scheduler: sjf\n", "w.yaml: scheduler: expected one of fcfs, easy, none, got 'sjf'"),
    ("kill_at_walltime: maybe\njobs: [{name: a, program: PROG}]\n",
     "w.yaml: kill_at_walltime: expected true or false, got 'maybe'"),
    ("jobs: [{name: a, program: PROG, np: 0}]\n", "w.yaml: jobs[0].np: expected a whole number of 1 or more, got 0"),
    ("jobs: [{name: a, program: PROG, npp: 2}]\n", "w.yaml: jobs[0].npp: unknown key"),
    ("jobs: [{name: a, program: nothere.py}]\n", "w.yaml: jobs[0].program: no such file"),
    ("jobs: [{name: a, program: PROG, submit: soon}]\n", "w.yaml: jobs[0].submit: expected a time like 30s"),
    ("jobs: [{name: a, program: PROG, walltime: -1}]\n", "w.yaml: jobs[0].walltime: expected a positive time"),
    ("scheduler: easy\njobs: [{name: a, program: PROG}]\n", "w.yaml: jobs[0].walltime: missing: EASY"),
    ("scheduler: none\njobs: [{name: a, program: PROG}]\n", "w.yaml: jobs[0].hosts: missing: with scheduler none"),
    ("jobs: [{name: a, program: PROG, hosts: [zz]}]\n", "w.yaml: jobs[0].hosts: entry 1: host 'zz' is not in platform"),
    ("jobs: [{name: a, program: PROG, nodes: 65, np: 65}]\n", "w.yaml: jobs[0]: asks for 65 nodes; the platform has 64"),
    ("jobs: [{name: a, program: PROG}, {name: a, program: PROG}]\n", "w.yaml: jobs[1].name: duplicate job name 'a'"),
    ("arrivals: {count: 3, rate: 1}\n", "w.yaml: arrivals.mix: expected a mapping template: weight"),
    ("templates: [{name: t, program: PROG}]\narrivals: {count: 3}\n", "w.yaml: arrivals.rate: missing"),
    ("templates: [{name: t, program: PROG}]\narrivals: {count: 3, rate: 1, mix: {u: 1}}\n",
     "w.yaml: arrivals.mix.u: no template named 'u' (templates: t)"),
    ("swf: {file: none.swf, programs: {default: t}}\n", "w.yaml: swf.programs.default: no template named 't'"),
    ("platform: nothere.xml\njobs: [{name: a, program: PROG}]\n", "w.yaml: platform:"),
    ("jobs: [{name: a, program: PROG\n", "w.yaml: line 2: not valid YAML"),
    ("- 1\n", "w.yaml: expected a mapping, got [1]"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_each_bad_key_gives_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                     message: str) -> None:
    (tmp_path / "w.yaml").write_text(text.replace("PROG", str(SLEEPER)))
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = batch.main(["w.yaml"])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_swf_bad_record_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "log.swf").write_text("1 0 5 30 4\n")
    wl = tmp_path / "w.yaml"
    wl.write_text(f"templates: [{{name: t, program: {SLEEPER}}}]\nswf: {{file: log.swf, programs: {{default: t}}}}\n")
    with pytest.raises(WorkloadError, match=r"log.swf:1: expected the 18 fields .* found 5"):
        load_workload(str(wl))


def test_command_line_json_plots_and_outputs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    wl = _workload(tmp_path, "easy", HAND[:3])
    proc = subprocess.run([sys.executable, "-m", "smpy", "batch", str(wl), "--json", str(tmp_path / "r.json"),
                           "--plots", str(tmp_path / "plots"), "--output", str(tmp_path / "out"),
                           "--report", str(tmp_path / "rep"), "--cfg=smpy/utilization-bin:1s"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(j["name"], j["start_s"], j["end_s"], j["wait_s"], j["slowdown"]) for j in doc["jobs"]] == [
        ("j1", 0.0, 10.0, 0.0, 1.0), ("j2", 10.0, 15.0, 9.0, 1.0), ("j3", 2.0, 6.0, 0.0, 1.0)]
    assert doc["scheduler"] == "easy" and doc["makespan_s"] == 15.0
    assert (tmp_path / "plots" / "gantt.png").stat().st_size > 0
    assert (tmp_path / "out" / "j3.out").read_text() == "1 ranks slept 4 s\n"
    assert "node utilisation" in proc.stderr and "j2" in proc.stderr
    # sleeping ranks hold their nodes but compute nothing: 2*10 + 4*5 + 4 allocated core-s, 0 busy
    rows = (tmp_path / "rep.utilization.csv").read_text().splitlines()
    assert rows[0] == "t_start,t_end,allocated,busy,waiting_mpi,efficiency,power_W" and len(rows) == 1 + 15
    assert sum(float(r.split(",")[2]) for r in rows[1:]) == 2 * 10 + 4 * 5 + 4
    assert sum(float(r.split(",")[3]) for r in rows[1:]) == 0.0
    assert (tmp_path / "plots" / "utilization.png").stat().st_size > 0
    assert "[smpy report] utilisation: 44 allocated core-s, busy 0.0%" in proc.stderr


def test_interference_example_slowdowns_as_predicted() -> None:
    """examples/workloads/README.md: stencil 4.0 s alone, 4.4 s with the mover; mover 2.0 s
    alone, 3.6 s with the stencil (to the messages' 16-byte envelopes)."""
    example = Path(__file__).parent.parent / "examples" / "workloads" / "interference.yaml"
    res = batch.simulate(load_workload(str(example)))
    stencil, mover = res.job("stencil"), res.job("mover")
    assert (stencil.solo_s, stencil.run_s) == (pytest.approx(4.0, rel=1e-5), pytest.approx(4.4, rel=1e-5))
    assert (mover.solo_s, mover.run_s) == (pytest.approx(2.0, rel=1e-5), pytest.approx(3.6, rel=1e-5))
    assert stencil.slowdown == pytest.approx(1.1, rel=1e-5) and mover.slowdown == pytest.approx(1.8, rel=1e-5)


def test_a_job_with_fixed_hosts_waits_for_those_nodes(tmp_path: Path) -> None:
    wl = tmp_path / "h.yaml"
    wl.write_text(f"platform: {DIR / 'four.yaml'}\nscheduler: fcfs\n"
                  "cfg: {smpi/simulate-computation: 'no'}\njobs:\n"
                  f"  - {{name: a, program: {SLEEPER}, args: ['5'], np: 3}}\n"
                  f"  - {{name: b, program: {SLEEPER}, args: ['2'], np: 2, hosts: [n2, n3], submit: 1s}}\n"
                  f"  - {{name: c, program: {SLEEPER}, args: ['1'], np: 1, submit: 2s}}\n")
    res = batch.simulate(load_workload(str(wl)), solo=False)
    # a takes n0-n2; b needs n2 and n3: it waits for a; FCFS keeps c (1 node, n3 free) behind b
    assert _schedule(res) == {"a": (0.0, 5.0, ["n0", "n1", "n2"]), "b": (5.0, 7.0, ["n2", "n3"]),
                              "c": (5.0, 6.0, ["n0"])}


def test_a_failing_job_is_named_and_ends_alone(tmp_path: Path) -> None:
    import io
    wl = tmp_path / "f.yaml"
    wl.write_text("cfg: {smpi/simulate-computation: 'no'}\njobs:\n"
                  f"  - {{name: fine, program: {SLEEPER}, args: ['3'], np: 2}}\n"
                  f"  - {{name: broken, program: {DIR / 'fails.py'}, np: 2}}\n")
    err = io.StringIO()
    res = batch.simulate(load_workload(str(wl)), err=err)
    assert (res.status, res.exit_code, res.makespan_s) == ("failed", 1, 3.0)
    assert "RuntimeError: boom" in err.getvalue()
    assert "job 'broken' (jobs[1]) failed (exit code 1): rank 1 (host node-1) raised RuntimeError: boom at 1 s" \
        in err.getvalue()
    assert (res.job("fine").end_s, res.job("fine").status) == (3.0, "done") and res.solo_runs == 1


def test_utilisation_over_the_workload_integrates_to_the_jobs(tmp_path: Path) -> None:
    """computer.py: rank r computes (r + 1) * ARG s, then a barrier. FCFS on four single-core
    nodes: a (ARG 2) on n0, n1 from 0 to 4, b (ARG 1, no barrier) on n2, n3 from 1 to 3.
    Busy core-s: a 2 + 4, b 1 + 2; waiting in MPI: a's rank 0 from 2 to 4 (plus the
    barrier); allocated: each job's two nodes over its whole run, n2 although b's rank 0
    ends at 2."""
    prog = DIR / "computer.py"
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {DIR / 'four.yaml'}\nscheduler: fcfs\n"
                  "cfg: {smpi/simulate-computation: 'no', smpy/utilization-bin: 0.5s}\njobs:\n"
                  f"  - {{name: a, program: {prog}, args: ['2'], np: 2, walltime: 10s, submit: 0s}}\n"
                  f"  - {{name: b, program: {prog}, args: ['1', alone], np: 2, walltime: 10s, submit: 1s}}\n")
    csv_path = tmp_path / "u.csv"
    res = batch.simulate(load_workload(str(wl)), solo=False, utilization=str(csv_path))
    assert res.status == "ok"
    assert [(j.start_s, j.hosts) for j in res.jobs] == [(0.0, ["n0", "n1"]), (1.0, ["n2", "n3"])]
    rows = [[float(x) for x in r.split(",")] for r in csv_path.read_text().splitlines()[1:]]
    # bins of 0.5 s over [0, makespan]: the makespan is 4 s plus the barriers' few ns
    assert len(rows) == 9 and rows[0][:2] == [0.0, 0.5] and rows[-1][1] == res.makespan_s

    def integral(col: int) -> float:
        return sum((r[1] - r[0]) * r[col] for r in rows)

    assert integral(3) == pytest.approx((2 + 4) + (1 + 2), rel=1e-12)
    assert integral(2) == pytest.approx(sum(2 * 1 * j.run_s for j in res.jobs), rel=1e-12)
    assert res.jobs[0].run_s == pytest.approx(4.0, abs=1e-6) and res.jobs[1].run_s == 2.0
    assert integral(4) == pytest.approx(2, abs=1e-6)
    assert integral(6) == pytest.approx(res.energy_J, rel=1e-12)  # the hosts' power over [0, T]
    # from 1 to 2 s every core computes; from 2 to 3, a's and b's rank 1 (b's rank 0 has
    # ended, a's waits in the barrier)
    assert [r[2:6] for r in rows[2:6]] == [[4.0, 4.0, 0.0, 1.0]] * 2 + [[4.0, 2.0, 1.0, 0.5]] * 2


def test_a_reduction_operator_computing_inside_mpi_is_busy_not_waiting(tmp_path: Path) -> None:
    """The batch world starts with no process: the utilisation still tells the jobs' ranks'
    executions inside MPI calls (a user operator computing 1 s in Allreduce, on each of two
    2-core nodes) from waiting: busy 2 core-s, waiting only the messages' few ns."""
    (tmp_path / "two.yaml").write_text(
        "name: two\nhosts:\n  - {name: n0, speed: 1Gf, cores: 2}\n  - {name: n1, speed: 1Gf, cores: 2}\n"
        "links:\n  - {name: x, bandwidth: 1GBps, latency: 0, sharing: FATPIPE}\n"
        "routes:\n  - {src: n0, dst: n1, links: [x]}\n")
    (tmp_path / "op.py").write_text(
        "import numpy as np\nfrom mpi4py import MPI\nimport smpy\n\n\n"
        "def add(a, b, dt):\n    smpy.execute(1.0)\n    np.frombuffer(b, 'd')[0] += np.frombuffer(a, 'd')[0]\n\n\n"
        "y = np.zeros(1)\nMPI.COMM_WORLD.Allreduce(np.ones(1), y, op=MPI.Op.Create(add, commute=True))\n"
        "assert y[0] == 2.0\n")
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {tmp_path / 'two.yaml'}\nscheduler: none\n"
                  "cfg: {smpi/simulate-computation: 'no', smpy/utilization-bin: 0.5s}\n"
                  f"jobs:\n  - {{name: a, program: {tmp_path / 'op.py'}, np: 2, hosts: [n0, n1]}}\n")
    res = batch.simulate(load_workload(str(wl)), solo=False, utilization=str(tmp_path / "u.csv"))
    assert res.status == "ok" and res.jobs[0].run_s == pytest.approx(1.0, abs=1e-6)
    rows = [[float(x) for x in r.split(",")] for r in (tmp_path / "u.csv").read_text().splitlines()[1:]]
    assert sum((r[1] - r[0]) * r[2] for r in rows) == pytest.approx(4 * res.jobs[0].run_s, rel=1e-12)
    assert sum((r[1] - r[0]) * r[3] for r in rows) == pytest.approx(2.0, rel=1e-12)
    assert sum((r[1] - r[0]) * r[4] for r in rows) < 1e-6
