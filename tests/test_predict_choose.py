"""smpy predict --objective / --price / --deadline / --budget / --pareto."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from smpy.cli.choose import Prices, best, choices, pareto, parse_prices, report
from smpy.cli.sweep import Point, Run, Summary, SweepError


def _point(np_: int, t: float, e: float, hosts: int) -> tuple[Summary, Run]:
    pt = Point("p", np_, ())
    s = Summary(pt, 1, 1, median_s=t, min_s=t, max_s=t, energy_J=e * 2, used_J=e)
    return s, Run(pt, 0, "ok", 0, t, e * 2, e, hosts_used=hosts)


def _cands(prices: Prices | None = None):
    rows = [_point(1, 8.0, 100.0, 1), _point(2, 4.0, 110.0, 2), _point(4, 2.5, 150.0, 4),
            _point(8, 2.6, 300.0, 8)]  # np=8 is dominated by np=4 (slower and dearer)
    return choices([s for s, _ in rows], [r for _, r in rows], prices or Prices())


def test_cost_is_node_hours_and_kwh():
    c = {x.summary.point.np: x for x in _cands(Prices(node_hour=3.6, kwh=36.0))}
    # np=2: 2 hosts x 4 s = 8/3600 node-hours at 3.6 -> 0.008; 110 J = 110/3.6e6 kWh at 36 -> 0.0011
    assert c[2].cost == pytest.approx(0.008 + 0.0011)
    assert c[2].energy_J == 110.0  # the used hosts' energy, not the platform's


def test_best_by_each_objective_and_constraints():
    cands = _cands(Prices(node_hour=1.0))
    assert [c.summary.point.np for c in best(cands, "time")] == [4, 8, 2, 1]
    assert [c.summary.point.np for c in best(cands, "energy")][:2] == [1, 2]
    assert best(cands, "edp")[0].summary.point.np == 4  # 375 J s against 440, 780, 800
    assert [c.summary.point.np for c in best(cands, "energy", deadline=5.0)][0] == 2
    assert [c.summary.point.np for c in best(cands, "time", budget=0.0025)] == [2, 1]
    assert best(cands, "time", deadline=1.0) == []
    with pytest.raises(SweepError, match="--objective"):
        best(cands, "speed")


def test_pareto_front_leaves_out_dominated_points():
    assert [c.summary.point.np for c in pareto(_cands())] == [4, 2, 1]


def test_report_names_best_and_front_and_needs_energy():
    text = report(_cands(), "edp", None, None, Prices())
    assert "1. p np=4" in text and "Pareto front" in text and "p np=8" not in text.split("Pareto")[1]
    no_energy = [_point(1, 1.0, math.nan, 1)]
    with pytest.raises(SweepError, match="--energy"):
        report(choices([no_energy[0][0]], [no_energy[0][1]], Prices()), "energy", None, None, Prices())


@pytest.mark.parametrize("bad", ["node-hour", "cpu=1", "kWh=x", "kWh=-1", "node-hour=inf"])
def test_bad_prices_are_named(bad):
    with pytest.raises(SweepError, match="--price"):
        parse_prices(bad)
    assert parse_prices("node-hour=2,kWh=0.5") == Prices(2.0, 0.5)


@pytest.mark.slow
def test_predict_objective_end_to_end(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import smpy\nfrom mpi4py import MPI\nsmpy.execute_flops(36.8e9 / MPI.COMM_WORLD.size)\n")
    proc = subprocess.run([sys.executable, "-m", "smpy", "predict", "-q", "-np", "1,2,4", "--reps", "1",
                           "--platform", "taurus", "--energy", "--cfg", "smpi/simulate-computation:no",
                           "--objective", "time", "--deadline", "1.5", "p.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    best_lines = proc.stdout.split("best points by time (time <= 1.5 s):")[1].splitlines()
    assert best_lines[1].startswith("  1. taurus np=4: 0.5")  # 36.8 Gflop over 4 x 18.4 Gf/s
    assert best_lines[2].startswith("  2. taurus np=2: 1 s")
    assert "np=1:" not in proc.stdout.split("Pareto")[0].split("best points")[1]  # 2 s > deadline
    bad = subprocess.run([sys.executable, "-m", "smpy", "predict", "-np", "1", "--price", "gpu=3",
                          "--objective", "cost", "p.py"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "--price" in bad.stderr and "Traceback" not in bad.stderr
