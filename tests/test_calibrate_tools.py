"""smpy calibrate compute (real-run region tracer + factors) and power (profile fit)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import needs_mpiexec, run_reference

from smpy.calibrate import compute, power

ROOT = Path(__file__).resolve().parents[1]


def test_power_fit_recovers_a_known_profile(tmp_path: Path) -> None:
    cores = 4
    truth = [(100.0, 120.0, 200.0), (90.0, 105.0, 160.0)]
    samples, phases, t = [], [], 0.0
    for p, (idle, eps, full) in enumerate(truth):
        for busy in (0, 1, cores):
            watts = idle if busy == 0 else eps + busy / cores * (full - eps)
            phases.append((t, t + 10.0, p, busy))
            samples += [(t + k * 0.5, watts + (0.3 if k % 2 else -0.3)) for k in range(21)]
            t += 10.0
    (tmp_path / "w.csv").write_text("time_s,watts\n" + "".join(f"{a},{b}\n" for a, b in samples))
    (tmp_path / "p.csv").write_text("start_s,end_s,pstate,busy\n"
                                    + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in phases))
    out = tmp_path / "power.yaml"
    assert power.main(["--samples", str(tmp_path / "w.csv"), "--phases", str(tmp_path / "p.csv"),
                       "--cores", str(cores), "--off", "10", "-o", str(out)]) == 0
    import yaml

    block = yaml.safe_load(out.read_text())["power"]
    assert block["off"] == "10W"
    got = [[float(v[k].rstrip("W")) for k in ("idle", "epsilon", "all_cores")] for v in block["pstates"]]
    for g, want in zip(got, truth):
        assert g == pytest.approx(list(want), abs=0.05)
    # the fragment is a valid platform power block
    from smpy.platform import load_platform_data

    plat = load_platform_data({"hosts": [{"name": "h", "cores": cores, "speed": ["2Gf", "1Gf"],
                                          "power": block}]})
    assert "wattage_per_state" in plat.host("h").properties


def test_power_errors_name_the_problem(tmp_path: Path) -> None:
    (tmp_path / "w.csv").write_text("time_s,watts\n0,100\n")
    (tmp_path / "p.csv").write_text("start_s,end_s,pstate,busy\n5,9,0,0\n")
    assert power.main(["--samples", str(tmp_path / "w.csv"), "--phases", str(tmp_path / "p.csv"),
                       "--cores", "2", "--margin", "0"]) == 2


def test_ratios_skip_start_short_and_unmatched_regions() -> None:
    real = {"<start>:0:a.py:3": 1.0, "a.py:3:a.py:5": 2.0, "a.py:5:a.py:3": 1e-5, "a.py:9:x:1": 1.0,
            "a.py:5:<end>:0": 0.001}
    emu = {"<start>:0:a.py:3": 0.1, "a.py:3:a.py:5": 3.0, "a.py:5:a.py:3": 1e-5, "a.py:5:<end>:0": 6e-5}
    got, skipped = compute.ratios(real, emu, 1e-4)
    assert got == {"a.py:3:a.py:5": 1.5}
    assert len(skipped) == 4


@pytest.mark.slow
@needs_mpiexec
def test_calibrate_compute_end_to_end(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(
        "import time\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\n"
        "def work(s):\n    t = time.thread_time()\n    while time.thread_time() - t < s:\n        pass\n"
        "for i in range(4):\n    work(0.01)\n    c.Barrier()\n    work(0.005)\n    c.Allreduce(1) "
        "if False else c.allreduce(1)\n")
    out = tmp_path / "factors.csv"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "smpy", "calibrate", "compute", "-np", "2", "-o", str(out),
                    str(app)], check=True, capture_output=True, text=True, env=env, timeout=300)
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["start:stop", "ratio"]
    keys = {r[0]: float(r[1]) for r in rows[1:]}
    # the busy-wait regions cost the same CPU time in both runs: ratios near 1
    assert "app.py:10:app.py:12" in keys and "app.py:12:app.py:10" in keys
    for ratio in keys.values():
        assert 0.5 < ratio < 2.0


@pytest.mark.slow
@needs_mpiexec
def test_calibrate_compute_contention_with_two_workloads_end_to_end(tmp_path: Path) -> None:
    app = tmp_path / "stream.py"
    app.write_text(
        "import sys\nimport numpy as np\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\n"
        "n, steps = int(sys.argv[1]), int(sys.argv[2])\na = np.ones(n)\nb = np.empty(n)\n"
        "for i in range(steps):\n    np.multiply(a, 1.0001, out=b)\n    a, b = b, a\n    c.Barrier()\n")
    plat = tmp_path / "node.yaml"
    plat.write_text("name: node\nhosts:\n  - {name: node, cores: 2, speed: 1Gf,\n"
                    "     memory: {bandwidth: 30GBps, core_bandwidth: 20GBps}}\n")
    out = tmp_path / "factors.csv"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "smpy", "calibrate", "compute", "-np", "2", "--platform", str(plat),
                           "--cfg", "smpi/host-speed:1Gf", "--reps", "2", "--base-args", "1000000 10",
                           "--program-wide", "--contention", "-o", str(out), str(app), "2000000", "20"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "sigma(2) = 1.333" in proc.stderr
    # the slowdown table lists the pooled region whether or not its slowdown is significant
    lines = proc.stdout.splitlines()
    table = lines[next(i for i, ln in enumerate(lines) if "slowdown" in ln) + 1:]
    pooled = next(ln for ln in table if ln.startswith("<pooled>")).split()
    assert float(pooled[1]) > 0 and float(pooled[2]) > 0 and float(pooled[3]) > 0  # real, serial, slowdown
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["start:stop", "ratio", "memory_fraction"]
    # the rows written (none when nothing was significant) hold a ratio and a fraction in [0, 1]
    assert all(0.0 <= float(r[2]) <= 1.0 and float(r[1]) > 0 for r in rows[1:])


def test_marginal_ratios_cancel_per_run_fixed_costs() -> None:
    # each real rank pays a 0.03 s warm-up that the emulator pays once: the plain ratio of the
    # small workload is biased (0.1 / 0.13), the marginal ratio between two workloads is not
    real0 = {"a.py:3:a.py:5": 0.13}
    emu0 = {"a.py:3:a.py:5": 0.10}
    real = {"a.py:3:a.py:5": 0.43}
    emu = {"a.py:3:a.py:5": 0.40}
    plain, _ = compute.ratios(real0, emu0, 1e-3)
    assert abs(plain["a.py:3:a.py:5"] - 0.10 / 0.13) < 1e-12
    got, skipped = compute.ratios(real, emu, 1e-3, base=(real0, emu0), sigmas=0.0)
    assert got == {}  # the marginal ratio is 1: nothing to correct
    assert len(skipped) == 1


def test_marginal_ratio_needs_the_plain_ratio_to_agree() -> None:
    real0, emu0 = {"k": 0.1}, {"k": 0.1}
    # larger workload: plain ratio 0.9, marginal (0.9 - 0.1) / (1.0 - 0.1) = 0.889: both < 1,
    # the smaller correction (0.9) is kept
    got, _ = compute.ratios({"k": 1.0}, {"k": 0.9}, 1e-3, base=(real0, emu0), sigmas=0.0)
    assert abs(got["k"] - 0.9) < 1e-12
    # marginal 0.2 from tiny noisy differences, plain 1.05: opposite directions, no factor
    got, skipped = compute.ratios({"k": 0.2}, {"k": 0.21}, 1e-3, base=({"k": 0.19}, {"k": 0.208}),
                                  sigmas=0.0)
    assert got == {} and "does not confirm" in skipped[0]


def test_totals_median_and_error() -> None:
    t = compute.Totals.of([{"k": 1.0}, {"k": 3.0}, {"k": 2.0, "only": 1.0}])
    assert t.median == {"k": 2.0, "only": 0.0}
    # 1.25 * stdev / sqrt(n)
    assert abs(t.error["k"] - 1.25 * 1.0 / 3 ** 0.5) < 1e-12
    one = compute.Totals.of([{"k": 1.0}])
    assert one.error == {"k": 0.0}


def test_ratios_within_noise_keep_ratio_one() -> None:
    noisy_real = compute.Totals.of([{"k": 1.0}, {"k": 1.4}, {"k": 0.7}])
    noisy_emu = compute.Totals.of([{"k": 0.9}, {"k": 1.3}, {"k": 1.2}])
    got, skipped = compute.ratios(noisy_real, noisy_emu, 1e-3)
    assert got == {}
    assert "not significant" in skipped[0]
    steady_real = compute.Totals.of([{"k": 1.0}, {"k": 1.01}, {"k": 0.99}])
    steady_emu = compute.Totals.of([{"k": 0.8}, {"k": 0.81}, {"k": 0.79}])
    got, _ = compute.ratios(steady_real, steady_emu, 1e-3)
    assert abs(got["k"] - 0.8) < 1e-12


def test_regions_with_timing_dependent_work_share_one_ratio() -> None:
    # an Iprobe succeeded more often in the real runs: region b got work that c got under smpy
    real_b = [{"a": 2.0, "b": 5.0, "c": 3.0}, {"a": 2.0, "b": 5.0, "c": 3.0}]
    emu_b = [{"a": 2.0, "b": 3.0, "c": 5.0}, {"a": 2.0, "b": 3.0, "c": 5.0}]
    unstable = compute.unstable_regions(real_b, emu_b)
    assert unstable == {"b", "c"}
    real = compute.pool({"a": 1.0, "b": 0.8, "c": 0.2}, unstable)
    emu = compute.pool({"a": 1.0, "b": 0.3, "c": 0.6}, unstable)
    assert real == {"a": 1.0, compute.POOLED: 1.0}
    got, _ = compute.ratios(real, emu, 1e-3, sigmas=0.0)
    assert abs(got[compute.POOLED] - 0.9) < 1e-12
    assert "a" not in got  # exactly 1: nothing to correct
    assert compute.expand(got, unstable) == {"b": got[compute.POOLED], "c": got[compute.POOLED]}
    # a pooled ratio left at 1 gives no line for the pooled regions
    assert compute.expand({"a": 1.2}, unstable) == {"a": 1.2}


def test_program_wide_ratio_is_also_the_default() -> None:
    got = compute.expand({compute.POOLED: 0.8}, {"a", "b"}, default=True)
    assert got == {"a": 0.8, "b": 0.8, "*": 0.8}


def test_error_floor_when_runs_agree_by_chance() -> None:
    t = compute.Totals.of([{"k": 2.0}, {"k": 2.0}], min_error=0.05)
    assert abs(t.error["k"] - 1.25 * 0.05 * 2.0 / 2 ** 0.5) < 1e-12
    # a 3 % difference between two pairs of identical runs is not significant with the floor
    real = compute.Totals.of([{"k": 1.0}, {"k": 1.0}], min_error=0.05)
    emu = compute.Totals.of([{"k": 1.03}, {"k": 1.03}], min_error=0.05)
    assert compute.ratios(real, emu, 1e-3)[0] == {}
    assert compute.ratios(compute.Totals.of([{"k": 1.0}, {"k": 1.0}]),
                          compute.Totals.of([{"k": 1.03}, {"k": 1.03}]), 1e-3)[0] == {"k": 1.03}


@pytest.mark.slow
def test_protocol_probe_finds_where_real_send_waits(tmp_path: Path) -> None:
    """The eager/rendezvous threshold of the real MPI (MPICH here), probed with a late
    receiver: every probe below the threshold returned at once, every one from it on
    waited for the receiver; MPICH's first Iprobe after a computation misses a message
    that arrived during it; and `smpy calibrate network` writes both to the platform."""
    import json

    out = run_reference(2, "-m", "smpy.calibrate.protocol_real", "16", timeout=300).stdout
    rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    threshold = next(r["threshold"] for r in rows if "threshold" in r)
    assert 0 < threshold <= 1 << 16
    polling = next(r for r in rows if "probe" in r)
    assert polling["probe"] == "polled" and min(polling["misses"]) == 1, polling
    assert 0 < polling["iprobe"] < 1e-3 and 0 < polling["test"] < 1e-3
    best: dict[int, float] = {}
    for r in rows:
        if "size" in r:
            best[r["size"]] = min(best.get(r["size"], 1.0), r["send"])
    assert all((t > 0.01) == (n >= threshold) for n, t in best.items()), (threshold, best)
    from smpy.calibrate.network import main as network

    prefix = tmp_path / "net"
    assert network(["--max-size", "14", "--reps", "1", "--inner", "1", "-o", str(prefix)]) == 0
    import yaml

    cfg = yaml.safe_load((tmp_path / "net.yaml").read_text())["config"]
    got = int(cfg["smpi/send-is-detached-thresh"])
    assert threshold - 64 <= got <= threshold + 64  # the same library probed again
    assert cfg["smpy/probe-sees"] == "polled" and cfg["smpi/grow-injected-times"] == "no"
    assert 0 < float(cfg["smpi/iprobe"]) < 1e-3


SERIAL_APP = """
import json, sys, time
from mpi4py import MPI
c = MPI.COMM_WORLD
def work(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
spans = []
for i in range(3):
    c.Barrier()
    t0 = time.time()
    work(0.05)
    spans.append((t0, time.time()))
    c.Barrier()
json.dump(spans, open(sys.argv[1] + f".{c.Get_rank()}", "w"))
"""


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("mode", ["serialize", "alternate", "none"])
def test_serialized_real_run_computes_one_rank_at_a_time(tmp_path: Path, mode: str) -> None:
    import json

    app = tmp_path / "app.py"
    app.write_text(SERIAL_APP)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SMPY_TRACE_CALLS="Barrier")
    if mode != "none":
        env["SMPY_TRACE_SERIALIZE"] = str(tmp_path / "lock")
    if mode == "alternate":
        env["SMPY_TRACE_ALTERNATE"] = "1"
    run_reference(2, "-m", "smpy.calibrate.trace_real", str(tmp_path / "out"), str(app),
                  str(tmp_path / "spans"), env=env, timeout=150)
    a, b = (json.loads((tmp_path / f"spans.{r}").read_text()) for r in (0, 1))
    overlaps = [max(0.0, min(e0, e1) - max(s0, s1)) for (s0, e0), (s1, e1) in zip(a, b)]
    # the ranks leave each Barrier together: unserialized, they compute at once (2 cores);
    # alternately serialized, the 2nd of the 3 bursts after line 11 is serialized
    expected = {"serialize": [False] * 3, "alternate": [True, False, True], "none": [True] * 3}[mode]
    assert [o > 0.0 for o in overlaps] == expected
    rows = {r[0]: r for r in csv.reader((tmp_path / "out" / "rank0.csv").open())}
    assert rows["region"] == ["region", "bursts", "measured_s", "serial_bursts", "serial_s"]
    n, serial = int(rows["app.py:11:app.py:15"][1]), int(rows["app.py:11:app.py:15"][3])
    assert (n, serial) == (3, {"serialize": 3, "alternate": 1, "none": 0}[mode])


def test_alternating_runs_split_into_contended_and_serialized_totals() -> None:
    # 4 contended bursts of 0.12 s and 4 serialized ones of 0.10 s: slowdown 1.2
    modes = {"a:1:a:2": [8, 0.88, 4, 0.40], "a:2:a:1": [1, 0.5, 0, 0.0]}
    r, s = compute.split_alternating(modes)
    assert r["a:1:a:2"] == pytest.approx(0.96) and s["a:1:a:2"] == pytest.approx(0.80)
    assert r["a:2:a:1"] == s["a:2:a:1"] == 0.5  # never serialized: kept as measured


def test_memory_fractions_from_contended_and_serialized_runs() -> None:
    contended = [{"a:1:a:2": 1.3, "a:2:a:1": 0.5, "a:3:a:4": 2.6}] * 3
    serialized = [{"a:1:a:2": 1.0, "a:2:a:1": 0.5, "a:3:a:4": 2.0}] * 3
    kept, slow, skipped = compute.memory_fractions(contended, serialized, sigma=1.5, min_seconds=1e-3,
                                                   min_error=0.02)
    # s = 1.3 -> f = 0.3 / 0.5 = 0.6; s = 1.3 for the other one too; a region not slowed keeps 0
    assert kept == {"a:1:a:2": pytest.approx(0.6), "a:3:a:4": pytest.approx(0.6)}
    assert slow["a:2:a:1"] == pytest.approx(1.0) and "a:2:a:1" not in kept
    assert any("a:2:a:1" in line and "not significant" in line for line in skipped)
    # a slowdown above sigma(P) is clipped at f = 1 and reported
    kept, _, skipped = compute.memory_fractions(contended, serialized, sigma=1.2, min_seconds=1e-3)
    assert kept["a:1:a:2"] == 1.0 and any("above sigma" in line for line in skipped)


def test_slowdown_shift_between_workloads_is_reported() -> None:
    # heat3d on this VM: 1.36 at N = 112 (two ranks overflow the L3, one does not), 1.1 beyond
    base = {"a:1:a:2": 1.36, "a:2:a:1": 1.02, "only:base": 1.5}
    main = {"a:1:a:2": 1.10, "a:2:a:1": 1.05, "only:main": 1.0}
    lines = compute.slowdown_shifts(base, main)
    assert lines == ["a:1:a:2: slowdown 1.360 with the base workload, 1.100 with the main one"]
    assert compute.slowdown_shifts(base, main, tolerance=0.3) == []


def test_memory_fractions_pair_the_runs_so_that_drift_cancels() -> None:
    # the machine slows down by 30 % from one repetition to the next: the totals of either kind
    # spread widely, but each pair of runs shows the same 15 % slowdown
    speed = [1.0, 1.3, 0.8, 1.2, 0.9]
    contended = [{"a:1:a:2": 1.15 * v} for v in speed]
    serialized = [{"a:1:a:2": 1.0 * v} for v in speed]
    kept, slow, _ = compute.memory_fractions(contended, serialized, sigma=1.5, min_seconds=1e-3, min_error=0.02)
    assert slow["a:1:a:2"] == pytest.approx(1.15) and kept["a:1:a:2"] == pytest.approx(0.3)
    # unpaired, the same runs would not show it: the medians' errors swamp it
    c, t = compute.Totals.of(contended, 0.02), compute.Totals.of(serialized, 0.02)
    u = (c.error["a:1:a:2"] ** 2 / c.median["a:1:a:2"] ** 2 + t.error["a:1:a:2"] ** 2 / t.median["a:1:a:2"] ** 2) ** 0.5
    assert 2 * u > 0.15


def test_factor_file_with_fractions_round_trips(tmp_path: Path) -> None:
    from smpy.timing.bench import read_adjustment_file

    path = tmp_path / "f.csv"
    compute.write_factors(path, {"a:1:a:2": 0.9}, {"a:1:a:2": 0.25, "a:3:a:4": 0.5})
    fractions: dict[str, float] = {}
    ratios = read_adjustment_file(str(path), fractions)
    assert ratios == {"a:1:a:2": 0.9, "a:3:a:4": 1.0}
    assert fractions == {"a:1:a:2": 0.25, "a:3:a:4": 0.5}
