"""Spawns inside batch jobs take their nodes from the batch scheduler's pool
(docs/dynamic-allocation.md, *Spawn inside a batch job*; smpy/cli/batch_nodes.py): exact
simulated times on hand-computed cases."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from test_trace_paje import parse

from smpy.cli import batch
from smpy.cli.batch_plot import gantt_bars
from smpy.cli.workload import load_workload

DIR = Path(__file__).parent / "programs" / "batch"
GROWER = DIR / "grower.py"
FREE_COSTS = {"smpy/spawn-node-cost": "0", "smpy/spawn-process-cost": "0", "smpy/spawn-init-cost": "0",
              "smpi/wtime": "0"}


def _run(tmp_path: Path, jobs: list[str], platform: str = "four.yaml", cfg: dict | None = None,
         **kw) -> tuple[batch.BatchResult, str]:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {DIR / platform}\nscheduler: fcfs\n"
                  "cfg: {smpi/simulate-computation: 'no'}\njobs:\n" + "".join(f"  - {{{j}}}\n" for j in jobs))
    err = io.StringIO()
    res = batch.simulate(load_workload(str(wl)), cfg=cfg or FREE_COSTS, err=err, solo=False, **kw)
    return res, err.getvalue()


def _times(res: batch.BatchResult) -> dict[str, tuple]:
    return {j.name: (j.start_s, j.end_s, j.status) for j in res.jobs}


#: a (1 rank on n0) spawns 2 children at 1 s, which end at 3 s; a ends at 5 s. b (3 nodes)
#: arrives at 2 s, when only n3 is free: it waits for the nodes a's children hold.
GROW = [f"name: a, program: {GROWER}, args: ['2', '1', '3', '5'], np: 1",
        f"name: b, program: {GROWER}, args: ['0', '0', '0', '1'], np: 3, submit: 2s"]


def test_a_spawn_takes_free_nodes_and_the_waiting_job_gets_them_at_their_return(tmp_path: Path) -> None:
    """n0 is a's, full with its rank: the children take the scheduler's free n1 and n2 at 1 s
    (single-core nodes, one child each) and give them back when they end at 3 s; b starts then
    (a returned node costs nothing), on n1, n2, n3. a holds n1 and n2 over [1, 3] in the
    Gantt, the node utilisation (a 1 x 5 + 2 x 2 node-s, b 3 x 1, over 4 nodes x 5 s), the
    utilisation CSV (allocated nodes per 1 s bin: 1, 3, 3, then a's and b's 4, then 1), the energy (100 W idle per node: a's n0 over 5 s and n1, n2 over 2 s) and
    the trace."""
    util, trace = tmp_path / "u.csv", tmp_path / "t.json"
    cfg = {**FREE_COSTS, "smpy/utilization-bin": "1s"}
    res, err = _run(tmp_path, GROW, cfg=cfg, energy=True, utilization=str(util), trace=str(trace))
    assert _times(res) == {"a": (0.0, 5.0, "done"), "b": (3.0, 4.0, "done")}
    assert res.job("a").grown == [["n1", 1.0, 3.0], ["n2", 1.0, 3.0]]
    assert res.job("b").hosts == ["n1", "n2", "n3"]
    assert sorted(res.job_output("a").splitlines()) == ["child 0 on n1", "child 1 on n2"]
    assert gantt_bars(res) == [(0, "n0", 0.0, 5.0), (0, "n1", 1.0, 3.0), (0, "n2", 1.0, 3.0),
                               (1, "n1", 3.0, 4.0), (1, "n2", 3.0, 4.0), (1, "n3", 3.0, 4.0)]
    assert res.node_utilisation == (5 + 2 * 2 + 3 * 1) / (4 * 5)
    rows = list(csv.DictReader(util.open()))
    assert [float(r["allocated"]) for r in rows] == [1.0, 3.0, 3.0, 4.0, 1.0]
    assert res.job("a").energy_J == 100 * 5 + 2 * 100 * 2
    assert res.job("b").energy_J == 3 * 100 * 1
    assert "a: took node n1 from 1 s to 3 s (spawn)" in res.table()
    spans = [e for e in json.loads(trace.read_text()) if e.get("name", "").startswith("node n")
             and e.get("ph") == "X" and e.get("pid") == 1]
    assert [(e["name"], e["ts"], e["dur"]) for e in spans] == [("node n1", 1e6, 2e6), ("node n2", 1e6, 2e6)]


def test_the_paje_trace_has_a_span_per_node_a_spawn_took(tmp_path: Path) -> None:
    """As Chrome's ``node n1``/``node n2`` spans of a's ``job`` thread: a container ``node n1``
    (``node n2``) of type ``JOB_NODE`` in a's ``JOB`` container, in state ``spawn`` from 1 s,
    destroyed at 3 s; valid Paje (children destroyed before the job's container)."""
    trace = tmp_path / "t.paje"
    _run(tmp_path, GROW, trace=str(trace))
    p = parse(trace)
    types = {alias: t[2] for alias, t in p.types.items()}
    jobs = {alias: c[2] for alias, c in p.containers.items() if types[c[0]] == "JOB"}
    spans = {alias: (jobs[c[1]], c[2]) for alias, c in p.containers.items() if types[c[0]] == "JOB_NODE"}
    assert sorted(spans.values()) == [("a", "node n1"), ("a", "node n2")]
    assert {spans[a]: p.set_states[a] for a in spans} == {("a", "node n1"): [(1.0, "spawn")],
                                                          ("a", "node n2"): [(1.0, "spawn")]}
    ends = {}
    for line in trace.read_text().splitlines():
        f = line.split()
        if f and f[0] == "7" and f[-1] in spans:
            ends[spans[f[-1]]] = float(f[1])
    assert ends == {("a", "node n1"): 3.0, ("a", "node n2"): 3.0}


def test_the_report_csv_has_the_nodes_a_spawn_took(tmp_path: Path) -> None:
    """``PREFIX.jobs.csv``'s ``grown`` cell: ``HOST@FROM-TO`` separated by ``;`` (a's n1 and n2
    over [1, 3]), empty for b, which took none."""
    res, _ = _run(tmp_path, GROW)
    res.write_jobs_csv(str(tmp_path / "rep.jobs.csv"))
    rows = list(csv.DictReader((tmp_path / "rep.jobs.csv").open()))
    assert [(r["name"], r["hosts"], r["grown"]) for r in rows] == [
        ("a", "n0", "n1@1.0-3.0;n2@1.0-3.0"), ("b", "n1 n2 n3", "")]


def test_the_nodes_are_taken_at_the_spawn_and_held_through_the_launch_cost(tmp_path: Path) -> None:
    """Launch costs 0.5 s per node, 0.25 s per process, 1 s start-up: the children start at
    1 + 2 x 0.5 + 2 x 0.25 + 1 = 3.5 s and end at 6 s; a holds n1 and n2 over [1, 6], b starts
    at 6."""
    cfg = {"smpy/spawn-node-cost": "0.5s", "smpy/spawn-process-cost": "0.25s", "smpy/spawn-init-cost": "1s",
           "smpi/wtime": "0"}
    jobs = [GROW[0].replace("'3', '5'", "'6', '7'"), GROW[1]]
    res, _ = _run(tmp_path, jobs, cfg=cfg)
    assert _times(res) == {"a": (0.0, 7.0, "done"), "b": (6.0, 7.0, "done")}
    assert res.job("a").grown == [["n1", 1.0, 6.0], ["n2", 1.0, 6.0]]


def test_a_spawn_fills_the_jobs_own_cores_first(tmp_path: Path) -> None:
    """On 4-core nodes, a's 3 children go to the 3 idle cores of its own node q0: no node is
    taken, and b (1 node, at 2 s) gets q1 at once."""
    jobs = [f"name: a, program: {GROWER}, args: ['3', '1', '3', '5'], np: 1",
            f"name: b, program: {GROWER}, args: ['0', '0', '0', '1'], np: 4, submit: 2s"]
    res, _ = _run(tmp_path, jobs, platform="quad.yaml")
    assert _times(res) == {"a": (0.0, 5.0, "done"), "b": (2.0, 3.0, "done")}
    assert res.job("a").grown == [] and res.job("b").hosts == ["q1"]
    assert sorted(res.job_output("a").splitlines()) == [f"child {r} on q0" for r in range(3)]


def test_a_spawn_that_does_not_fit_fails_with_err_spawn_and_takes_nothing(tmp_path: Path) -> None:
    """b holds n1 and n2 over [0, 4]: at 1 s a asks 3 children; its node n0 is full and only
    n3 is free, so the spawn raises MPI_ERR_SPAWN; n3 stays free (c, 1 node at 2 s, starts
    then) and a goes on to its end."""
    jobs = [f"name: a, program: {GROWER}, args: ['3', '1', '3', '5'], np: 1",
            f"name: b, program: {GROWER}, args: ['0', '0', '0', '4'], np: 2",
            f"name: c, program: {GROWER}, args: ['0', '0', '0', '3'], np: 1, submit: 2s"]
    res, _ = _run(tmp_path, jobs)
    assert _times(res) == {"a": (0.0, 5.0, "done"), "b": (0.0, 4.0, "done"), "c": (2.0, 5.0, "done")}
    assert res.job_output("a") == "spawn failed: MPI_ERR_SPAWN\n"
    assert res.job("a").grown == [] and res.job("c").hosts == ["n3"]


def test_a_killed_job_returns_the_nodes_its_spawn_took(tmp_path: Path) -> None:
    """a's walltime of 2 s kills it and its children at 2 s: n1 and n2 go back with n0, and b
    starts at 2 s on n0, n1, n2."""
    jobs = [GROW[0] + ", walltime: 2s", GROW[1]]
    res, _ = _run(tmp_path, jobs, trace=str(tmp_path / "t.paje"))
    p = parse(tmp_path / "t.paje")  # the spans end with the killed job, before its container
    assert sorted(c[2] for c in p.containers.values() if p.types[c[0]][2] == "JOB_NODE") == ["node n1", "node n2"]
    assert _times(res) == {"a": (0.0, 2.0, "timeout"), "b": (2.0, 3.0, "done")}
    assert res.job("a").grown == [["n1", 1.0, 2.0], ["n2", 1.0, 2.0]]
    assert res.job("b").hosts == ["n0", "n1", "n2"]


def test_a_growing_workload_is_deterministic(tmp_path: Path) -> None:
    """The same workload twice: the same table, JSON and trace, byte for byte."""
    outs = []
    for k in range(2):
        trace = tmp_path / f"t{k}.json"
        res, err = _run(tmp_path, GROW, energy=True, trace=str(trace))
        outs.append((res.table(), json.dumps({**res.to_json(), "wall_s": 0, "cpu_s": 0, "peak_rss_bytes": 0}), trace.read_bytes(), err))
    assert outs[0] == outs[1]


BOOT_PLATFORM = """name: fourboot
hosts:
  - {name: n0, speed: 1Gf, power: {off: 10W, pstates: ["100:150:200"]}}
  - {name: n1, speed: 1Gf, power: {off: 10W, pstates: ["100:150:200"]}}
  - {name: n2, speed: 1Gf, power: {off: 10W, pstates: ["100:150:200"]}, node: {state: off, boot: {time: 10s, power: 120W}}}
  - {name: n3, speed: 1Gf, power: {off: 10W, pstates: ["100:150:200"]}, node: {state: off, boot: {time: 10s, power: 120W}}}
links:
  - {name: xbar, bandwidth: 1GBps, latency: 0, sharing: FATPIPE}
routes:
  - {src: n0, dst: n1, links: [xbar]}
  - {src: n0, dst: n2, links: [xbar]}
  - {src: n0, dst: n3, links: [xbar]}
  - {src: n1, dst: n2, links: [xbar]}
  - {src: n1, dst: n3, links: [xbar]}
  - {src: n2, dst: n3, links: [xbar]}
"""


def test_a_spawn_boots_an_off_node_the_scheduler_has_free(tmp_path: Path) -> None:
    """n2 and n3 are off (10 s boot at 120 W). a's spawn at 1 s takes the free n1, then boots
    n2: its children start at 1 + 10 s and end at 13 s; a holds n1 and n2 over [1, 13] (n2's
    boot is a's time and energy: 10 s x 120 W + 2 s x 100 W), and b, waiting since 2 s, starts
    at 13 s on n1, n2 and n3 (a batch job switches its off node on without a boot)."""
    plat = tmp_path / "fourboot.yaml"
    plat.write_text(BOOT_PLATFORM)
    jobs = [f"name: a, program: {GROWER}, args: ['2', '1', '13', '15'], np: 1", GROW[1]]
    res, _ = _run(tmp_path, jobs, platform=str(plat), energy=True)
    assert _times(res) == {"a": (0.0, 15.0, "done"), "b": (13.0, 14.0, "done")}
    assert res.job("a").grown == [["n1", 1.0, 13.0], ["n2", 1.0, 13.0]]
    assert res.job("b").hosts == ["n1", "n2", "n3"]
    assert res.job("a").energy_J == 100 * 15 + 100 * 12 + (120 * 10 + 100 * 2)


def test_smpy_plot_redraws_a_batchs_figures_from_its_json_and_csv(tmp_path: Path) -> None:
    """``smpy plot --report r.json`` recognises a batch's JSON: the record it rebuilds is the
    one saved (the same JSON), and it draws the Gantt, the utilisation (r.utilization.csv
    next to r.json) and the page with the same jobs table as the run's."""
    import pytest

    pytest.importorskip("matplotlib")
    from smpy.cli import plot_cmd
    from smpy.cli.batch_plot import jobs_html

    cfg = {**FREE_COSTS, "smpy/utilization-bin": "1s"}
    res, _ = _run(tmp_path, GROW, cfg=cfg, utilization=str(tmp_path / "r.utilization.csv"))
    doc = res.to_json()
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert batch.BatchResult.from_json(json.loads(json.dumps(doc))).to_json() == doc
    assert gantt_bars(batch.BatchResult.from_json(doc))[1] == (0, "n1", 1.0, 3.0)
    out = tmp_path / "figs"
    assert plot_cmd.main(["--report", str(tmp_path / "r.json"), "-o", str(out)]) == 0
    assert (out / "gantt.png").stat().st_size > 5_000 and (out / "utilization.png").stat().st_size > 5_000
    page = (out / "report.html").read_text()
    assert jobs_html(res) in page and page.count("<img alt=") == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**doc, "jobs": [{"name": "a"}]}))
    assert plot_cmd.main(["--report", str(bad), "-o", str(out)]) == 2
