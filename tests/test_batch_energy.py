"""The platform's energy in a batch, counted once per host and attributed to the jobs
(smpy/cli/batch_energy.py, docs/workloads.md); the figures are computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

import smpy
from smpy.cli import batch
from smpy.cli.workload import load_workload

DIR = Path(__file__).parent / "programs" / "batch"
BURST = DIR / "burst.py"


def _run(tmp_path: Path, jobs: list[str], scheduler: str = "none") -> batch.BatchResult:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {DIR / 'quad.yaml'}\nscheduler: {scheduler}\n"
                  "cfg: {smpi/simulate-computation: 'no'}\njobs:\n" + "".join(f"  - {{{j}}}\n" for j in jobs))
    return batch.simulate(load_workload(str(wl)), solo=False)


def test_two_jobs_on_one_host_share_its_power_and_sum_to_it(tmp_path: Path) -> None:
    """q0 (4 cores): a's two ranks compute 2 s then sleep 2 s, b's two compute 4 s. 0-2 s:
    4 busy cores, 300 W = 150 static (75 each: 2 cores held of 4) + 150 dynamic (75 each:
    2 busy cores each); 2-4 s: 225 W = 150 static (75 each) + 75 dynamic, all b's.
    a = 2 x 150 + 2 x 75 = 450 J, b = 2 x 150 + 2 x 150 = 600 J; q1 idle (100 W x 4 s),
    held by no job."""
    res = _run(tmp_path, [f"name: a, program: {BURST}, args: ['2', '2'], np: 2, hosts: [q0]",
                          f"name: b, program: {BURST}, args: ['4', '0'], np: 2, hosts: [q0]"])
    a, b = res.job("a"), res.job("b")
    assert (a.end_s, b.end_s) == (4.0, 4.0)
    assert a.energy_J == pytest.approx(450.0, rel=1e-12) and b.energy_J == pytest.approx(600.0, rel=1e-12)
    assert res.energy_J == pytest.approx(300 * 2 + 225 * 2 + 100 * 4, rel=1e-12)
    assert res.energy_unattributed_J == pytest.approx(100 * 4, rel=1e-12)
    assert a.energy_J + b.energy_J + res.energy_unattributed_J == pytest.approx(res.energy_J, rel=1e-12)
    # the same load pattern as one MPMD run (all four ranks on q0): the same platform energy
    (tmp_path / "hosts").write_text("q0:4\n")
    single = smpy.run(None, parts=[smpy.App(str(BURST), np=2, args=["2", "2"]), smpy.App(str(BURST), np=2,
                      args=["4", "0"])], platform=str(DIR / "quad.yaml"), hostfile=str(tmp_path / "hosts"),
                      cfg={"smpi/simulate-computation": "no", "plugin": "host_energy"}, capture=True, echo=False)
    assert single.status == "ok" and single.makespan_s == 4.0 and {r.host for r in single.ranks} == {"q0"}
    assert single.energy["total_J"] == pytest.approx(res.energy_J, rel=1e-12)


def test_a_job_holding_one_core_gets_a_quarter_of_the_static_power(tmp_path: Path) -> None:
    """c's one rank computes 2 s on q0: 150 + 37.5 W; c gets 150/4 static + 37.5 dynamic."""
    res = _run(tmp_path, [f"name: c, program: {BURST}, args: ['2', '0'], np: 1, hosts: [q0]"])
    assert res.job("c").energy_J == pytest.approx(2 * (150 / 4 + 37.5), rel=1e-12)
    assert res.energy_J == pytest.approx(2 * (150 + 37.5) + 2 * 100, rel=1e-12)
    assert res.energy_unattributed_J == pytest.approx(2 * 150 * 3 / 4 + 2 * 100, rel=1e-12)


def test_oversubscribed_host_static_power_splits_by_ranks(tmp_path: Path) -> None:
    """Four ranks of d and four of e compute 1 s each on q0's four cores: each gets half a
    core, so both end at 2 s; 300 W all along, half each; q1 idle unattributed."""
    res = _run(tmp_path, [f"name: d, program: {BURST}, args: ['1', '0'], np: 4, hosts: [q0]",
                          f"name: e, program: {BURST}, args: ['1', '0'], np: 4, hosts: [q0]"])
    assert (res.job("d").end_s, res.job("e").end_s) == (2.0, 2.0)
    assert res.job("d").energy_J == pytest.approx(300.0, rel=1e-12)
    assert res.job("e").energy_J == pytest.approx(300.0, rel=1e-12)


def test_whole_nodes_of_a_scheduler_give_their_jobs_all_of_their_energy(tmp_path: Path) -> None:
    """FCFS: f (1 rank) gets all of q0 although it uses one core: 2 s at 187.5 W; g then q0
    and q1 for 1 s, all 8 cores computing (300 W each); the idle q1 during f's run is nobody's."""
    res = _run(tmp_path, [f"name: f, program: {BURST}, args: ['2', '0'], np: 1, nodes: 1",
                          f"name: g, program: {BURST}, args: ['1', '0'], np: 8, nodes: 2, submit: 1s"],
               scheduler="fcfs")
    assert [(j.start_s, j.end_s) for j in res.jobs] == [(0.0, 2.0), (2.0, 3.0)]
    assert res.job("f").energy_J == pytest.approx(2 * 187.5, rel=1e-12)
    assert res.job("g").energy_J == pytest.approx(2 * 300.0, rel=1e-12)
    assert res.energy_unattributed_J == pytest.approx(2 * 100.0, rel=1e-12)
    assert res.energy_J == pytest.approx(2 * 187.5 + 2 * 300 + 2 * 100, rel=1e-12)
