"""Host energy: SimGrid's own energy example as a golden test, plus the power rule."""

from pathlib import Path

import pytest

import smpy
from smpy.energy import PowerRange, parse_wattage_per_state

ROOT = Path(__file__).resolve().parents[2]


def test_golden_smpi_energy_example():
    # SimGrid examples/smpi/energy: two ranks on MyHost1 (4 cores) and MyHost2 (1 core),
    # 1e9 flops at pstate 0 (100 Mf), 1 (50 Mf), 2 (20 Mf); MyHost3 stays idle.
    res = smpy.run(str(ROOT / "examples/energy/dvfs.py"), np=2,
                   platform=str(ROOT / "examples/platforms/energy_platform.yaml"),
                   hostfile=str(ROOT / "examples/energy/hosts.txt"),
                   cfg={"plugin": "host_energy", "smpi/simulate-computation": "no", "smpi/wtime": "0"})
    assert res.status == "ok", res.message
    seen = {}
    for line in res.stdout.splitlines():
        words = line.split()
        seen[(int(words[2].rstrip(":")), int(words[4]))] = float(words[-2])
    assert seen == {
        (0, 0): pytest.approx(1200.0), (0, 1): pytest.approx(3400.0), (0, 2): pytest.approx(8650.0),
        (1, 0): pytest.approx(2000.0), (1, 1): pytest.approx(5400.0), (1, 2): pytest.approx(12900.0),
    }
    assert res.makespan_s == pytest.approx(80.0)
    e = res.energy
    assert e["per_host_J"]["MyHost3"] == pytest.approx(8000.0)
    assert e["total_J"] == pytest.approx(29550.0)
    assert e["idle_hosts_J"] == pytest.approx(8000.0)


def test_power_rule():
    r = PowerRange(idle=100.0, epsilon=93.0, all_cores=200.0)
    assert r.power(0.0) == 100.0
    assert r.power(0.25) == pytest.approx(93.0 + 0.25 * 107.0)
    assert r.power(1.0) == 200.0
    assert r.power(3.0) == 200.0  # clamped


def test_wattage_parsing_forms_and_errors():
    two = parse_wattage_per_state("100:200, 90:150", 2)
    assert two[0] == PowerRange(100.0, 100.0, 200.0)
    assert parse_wattage_per_state("95W:120W:200W", 1)[0].all_cores == 200.0
    with pytest.raises(ValueError, match="2 power profile"):
        parse_wattage_per_state("1:2:3, 4:5:6", 3)
    with pytest.raises(ValueError, match="pstate 0"):
        parse_wattage_per_state("1:2:3:4", 1)


def test_energy_api_needs_the_plugin(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import smpy\nsmpy.get_consumed_energy()\n")
    res = smpy.run(str(prog), np=1)
    assert res.status == "error" and "energy plugin is off" in res.message
