"""smpy calibrate memory: per-core and aggregate memory bandwidth (host contention model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from smpy.calibrate import memory
from smpy.support.units import format_byte_rate, parse_bandwidth

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--elements", "200000", "--seconds", "0.3", "--rounds", "1"]


def _read_fragment(path: Path) -> tuple[float, float]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict) and set(doc) == {"memory"}
    block = doc["memory"]
    assert set(block) == {"bandwidth", "core_bandwidth"}
    assert isinstance(block["bandwidth"], str) and isinstance(block["core_bandwidth"], str)
    return parse_bandwidth(block["bandwidth"]), parse_bandwidth(block["core_bandwidth"])


@pytest.mark.slow
def test_measures_and_writes_the_yaml_fragment(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    out = tmp_path / "mem.yaml"
    assert memory.main([*SMALL, "-np", "2", "-o", str(out)]) == 0
    big, core = _read_fragment(out)
    assert core > 0.0 and big > 0.0
    # clamped to [b1, np * b1]; both printed with 4 significant digits
    assert core * (1 - 1e-3) <= big <= 2 * core * (1 + 1e-3)
    printed = capsys.readouterr().out
    assert "sigma(2)" in printed
    assert out.read_text().strip() in printed


@pytest.mark.slow
def test_cli_registration_one_process_fixed_reps(tmp_path: Path) -> None:
    out = tmp_path / "mem.yaml"
    proc = subprocess.run([sys.executable, "-m", "smpy", "calibrate", "memory", "--elements",
                           "200000", "--reps", "5", "--rounds", "1", "-np", "1", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "(5 reps)" in proc.stdout
    big, core = _read_fragment(out)
    assert big == core > 0.0  # one process: B = b1


@pytest.mark.parametrize("args, option", [
    (["-np", "0"], "-np"),
    (["-np", "two"], "-np"),
    (["--elements", "999"], "--elements"),
    (["--seconds", "0"], "--seconds"),
    (["--seconds", "-1"], "--seconds"),
    (["--seconds", "nan"], "--seconds"),
    (["--rounds", "0"], "--rounds"),
    (["--reps", "0"], "--reps"),
])
def test_bad_options(args: list[str], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        memory.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "smpy calibrate memory" in err


def test_too_much_memory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    if memory._available_memory() is None:
        pytest.skip("no /proc/meminfo")
    with pytest.raises(SystemExit) as exc:
        memory.main(["-np", "1000000", "--elements", str(10**9)])
    assert exc.value.code == 2
    assert "lower -np or --elements" in capsys.readouterr().err


def test_bandwidths_from_synthetic_times() -> None:
    nbytes = 1e9
    # round 1: alone 0.1 s (10 GB/s); two processes at 0.125 s and 0.2 s (8 + 5 = 13 GB/s)
    # round 2: alone 0.08 s (12.5 GB/s); two at 0.125 s (8 + 8 = 16 GB/s)
    # round 3: alone 0.125 s (8 GB/s); two at 0.1 s (10 + 10 = 20 GB/s)
    est = memory.bandwidths(
        [[0.1, 0.1, 0.5], [0.08, 0.07, 0.08], [0.125, 0.125, 0.2]],
        [[[0.125, 0.125, 0.3], [0.2, 0.1, 0.2]], [[0.125] * 4, [0.125] * 4], [[0.1] * 3, [0.1] * 3]],
        nbytes)
    assert est.core_bandwidth == pytest.approx(10e9)  # median of 10, 12.5, 8
    assert est.measured_bandwidth == pytest.approx(16e9)  # median of 13, 16, 20
    assert est.bandwidth == pytest.approx(16e9) and not est.clamped
    assert est.sigma == pytest.approx(2 * 10 / 16)
    assert [r[1] for r in est.rounds] == pytest.approx([13e9, 16e9, 20e9])


def test_bandwidths_clamp() -> None:
    # no contention seen (noise): each of 4 processes as fast as one alone, and more
    est = memory.bandwidths([[1.0, 1.0, 1.0]], [[[0.5, 0.5, 0.5]] * 4], 8.0)
    assert est.core_bandwidth == pytest.approx(8.0)
    assert est.measured_bandwidth == pytest.approx(64.0)
    assert est.clamped and est.bandwidth == pytest.approx(32.0)
    assert est.sigma == pytest.approx(1.0)
    # the concurrent total below one process alone: raised to b1 (sigma(1) must be 1)
    est = memory.bandwidths([[1.0]], [[[4.0], [4.0]]], 8.0)
    assert est.measured_bandwidth == pytest.approx(4.0)
    assert est.clamped and est.bandwidth == pytest.approx(8.0)
    assert est.sigma == pytest.approx(2.0)


def test_bandwidths_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        memory.bandwidths([], [], 1.0)
    with pytest.raises(ValueError):
        memory.bandwidths([[1.0]], [[[1.0]], [[1.0]]], 1.0)
    with pytest.raises(ValueError):
        memory.bandwidths([[1.0], [1.0]], [[[1.0], [1.0]], [[1.0]]], 1.0)
    with pytest.raises(ValueError):
        memory.bandwidths([[0.0]], [[[1.0]]], 1.0)


def test_byte_rate_format_round_trips() -> None:
    assert format_byte_rate(2.173e10) == "21.73GBps"
    assert format_byte_rate(999.99e9) == "1TBps"
    assert format_byte_rate(512.0) == "512Bps"
    for value in (3.3e3, 4.56e7, 2.173e10, 1.5e12):
        assert parse_bandwidth(format_byte_rate(value)) == pytest.approx(value, rel=1e-3)
    est = memory.Estimate(core_bandwidth=2.17e10, bandwidth=3.42e10, nprocs=2,
                          measured_bandwidth=3.42e10)
    assert yaml.safe_load(memory.yaml_fragment(est)) == {
        "memory": {"bandwidth": "34.2GBps", "core_bandwidth": "21.7GBps"}}
