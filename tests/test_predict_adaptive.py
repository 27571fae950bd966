"""smpy predict --reps auto --ci: repeat a point until its mean is known to the precision."""

from __future__ import annotations

import subprocess
import sys

import pytest

from smpy.cli.adaptive import next_jobs, parse_ci, relative_half_width
from smpy.cli.sweep import Plan, Run, SweepError


def test_half_width_formula():
    # n = 4, mean 10, s = 2: t(0.975, 3) = 3.182 -> 3.182 * 2 / 2 / 10
    times = [8.0, 10.0, 10.0, 12.0]
    s = (sum((t - 10.0) ** 2 for t in times) / 3) ** 0.5
    assert relative_half_width(times) == pytest.approx(3.182 * s / 2 / 10)
    assert relative_half_width([5.0, 5.0, 5.0]) == 0.0
    assert relative_half_width([5.0]) == float("inf")


def test_only_unconverged_points_run_again(tmp_path):
    plan = Plan(script="p.py", args=[], nps=[1, 2], platforms=[None], reps=3, cwd=str(tmp_path),
                failure_seed=7)
    a, b = plan.points()
    runs = [Run(a, r, "ok", 0, 1.0) for r in range(3)]  # identical: converged
    runs += [Run(b, r, "ok", 0, t) for r, t in enumerate([1.0, 1.5, 0.7])]
    more = next_jobs(plan, plan.points(), runs, 0.02, 10)
    assert [(j.point, j.rep) for j in more] == [(b, 3)]
    assert "--cfg=smpy/failure-seed:10" in more[0].command  # the repetition's own seed
    assert next_jobs(plan, plan.points(), runs, 0.02, 3) == []  # --max-reps reached


@pytest.mark.parametrize("bad", ["0", "100%", "x", "-1%"])
def test_bad_ci(bad):
    with pytest.raises(SweepError, match="--ci"):
        parse_ci(bad)
    assert parse_ci("2%") == pytest.approx(0.02) and parse_ci("0.05") == 0.05


@pytest.mark.slow
def test_noisy_points_run_to_the_cap_exact_ones_stop_at_three(tmp_path):
    (tmp_path / "p.py").write_text(
        "import os, sys, smpy\nfrom mpi4py import MPI\n"
        "noisy = sys.argv[1] == 'noisy'\n"
        "n = os.path.getsize('count') if os.path.exists('count') else 0\n"
        "with open('count', 'a') as f:\n    f.write('x')  # the runs are sequential: 0, 1, 2, ...\n"
        "smpy.execute_flops((1 + (n % 3) / 10 if noisy else 1) * 1e9)\n")
    out = {}
    for kind in ("noisy", "exact"):
        proc = subprocess.run([sys.executable, "-m", "smpy", "predict", "-q", "-np", "1", "--reps", "auto",
                               "--ci", "0.5%", "--max-reps", "5", "--cfg", "smpi/simulate-computation:no",
                               "-o", str(tmp_path / kind), "p.py", kind], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        out[kind] = proc.stderr
    assert "0/1 points within ±0.5 %" in out["noisy"] and "5-5 runs per point" in out["noisy"]
    assert "1/1 points within ±0.5 %" in out["exact"] and "3-3 runs per point" in out["exact"]
