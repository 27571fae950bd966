"""smpy predict --failure-replay: one failure-free emulation per point, each repetition's
outcome from its failure draw; identical, run by run, to emulating every repetition."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.cli.reliability import platform_obstacle, replay_obstacle, replay_outcomes
from smpy.platform import load_platform_data

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "benchmarks/reliability_app.py"
PLATFORM = """name: rel
clusters:
  - name: c
    prefix: node-
    count: 8
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 50us
    backbone: {bandwidth: 100Gbps, latency: 0us}
    failures: {mtbf: 20s}
"""


def _predict(tmp_path: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    plat = tmp_path / "p.yaml"
    plat.write_text(PLATFORM)
    return subprocess.run([sys.executable, "-m", "smpy", "predict", "-q", "-np", "8", "--reps", "24",
                           "--failure-seed", "5", "--platform", str(plat), "--cfg", "smpi/simulate-computation:no",
                           "-o", str(tmp_path / name), *extra, str(APP)], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)


def test_replayed_runs_equal_the_emulated_ones(tmp_path: Path) -> None:
    full = _predict(tmp_path, "full", "--reuse-process", "--jobs", "2")
    fast = _predict(tmp_path, "fast", "--failure-replay")
    assert full.returncode == 0, full.stderr
    assert fast.returncode == 0, fast.stderr

    def runs(name: str) -> dict[int, tuple[str, float]]:
        return {r["rep"]: (r["status"], r["makespan_s"]) for r in json.loads((tmp_path / f"{name}.json").read_text())["runs"]}

    a, b = runs("full"), runs("fast")
    assert sorted(a) == sorted(b) == list(range(24))
    for rep in a:
        assert a[rep][0] == b[rep][0] and a[rep][1] == pytest.approx(b[rep][1], abs=1e-12), rep
    statuses = [s for s, _ in a.values()]
    assert 0 < statuses.count("failed") < 24  # both outcomes occur (8 hosts, MTBF 20 s, ~1.02 s)
    # the same reliability table
    assert full.stdout.split("reliability")[1] == fast.stdout.split("reliability")[1]


def test_replay_outcome_of_a_traced_failure() -> None:
    plat = load_platform_data({"name": "t", "hosts": [
        {"name": "a", "speed": "1Gf"},
        {"name": "b", "speed": "1Gf", "failures": {"trace": "0.5 off"}},
        {"name": "c", "speed": "1Gf", "failures": {"trace": "0.3 off"}}],
        "links": [{"name": "l", "bandwidth": "1GBps", "latency": "0s"}],
        "routes": [{"src": "a", "dst": "b", "links": ["l"]}, {"src": "a", "dst": "c", "links": ["l"]},
                   {"src": "b", "dst": "c", "links": ["l"]}]})
    ranks = [{"rank": 0, "host": "a", "end_time_s": 1.0}, {"rank": 1, "host": "b", "end_time_s": 1.0},
             {"rank": 2, "host": "c", "end_time_s": 0.25}]
    # c fails at 0.3 s, after its rank ended at 0.25 s: no effect; b fails at 0.5 s, killing rank 1
    assert replay_outcomes(plat, ranks, [0, 1], 1e-3) == [(0.5, "b", 1), (0.5, "b", 1)]
    ranks[1]["end_time_s"] = 0.5  # a failure at the very end of the rank changes nothing
    assert replay_outcomes(plat, ranks, [0], 1e-3) == [(float("inf"), "", -1)]


def test_what_the_replay_cannot_derive() -> None:
    assert "restarts" in replay_obstacle([], 2, False)
    assert "energy" in replay_obstacle([], 0, True)
    assert "auto-cleanup" in replay_obstacle(["smpy/auto-cleanup:no"], 0, False)
    assert replay_obstacle(["smpi/simulate-computation:no"], 0, False) is None
    links = load_platform_data({"name": "t", "hosts": [{"name": "a", "speed": "1Gf"}, {"name": "b", "speed": "1Gf"}],
                                "links": [{"name": "l", "bandwidth": "1GBps", "latency": "0s",
                                           "failures": {"mtbf": "10s"}}],
                                "routes": [{"src": "a", "dst": "b", "links": ["l"]}]})
    assert "link failure models" in platform_obstacle(links)


def test_predict_refuses_replay_with_restarts(tmp_path: Path) -> None:
    proc = _predict(tmp_path, "x", "--failure-replay", "--restarts", "1")
    assert proc.returncode == 2 and "--failure-replay: --restarts" in proc.stderr
