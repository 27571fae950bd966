"""Differential check against SimGrid SMPI (fast subset of benchmarks/vs_smpi/run.py).

Skipped when SMPI (Debian's libsimgrid-dev) is not installed; CI installs it.
"""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "vs_smpi"))
import run as vs_smpi  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")


EXACT = [p for p in vs_smpi.PATTERNS if p != "polling"]


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [[], ["network/model:CM02"]], ids=["SMPI-factors", "factors-1"])
def test_simulated_times_match_smpi(cfg):
    rows = vs_smpi.compare([4], EXACT, cfg, require=True)
    assert len(rows) == 15
    bad = [(case, ref, got) for case, _np, ref, got, err, *_ in rows if not abs(err) < 0.01]
    assert not bad, f"cases off by more than 1 % from SMPI: {bad}"


@pytest.mark.slow
def test_polling_costs_match_smpi():
    # MPI_Testall/Testany/Iprobe loops on every rank at once: SMPI's polling counters are
    # shared by all ranks (function statics), and so are smpy's by default. Each kind of
    # loop alone, or any two of them, give SMPI's times exactly on two ranks; ranks waking
    # at the same simulated time update the shared counters in an order that SimGrid's timer
    # heap decides (ties), which moves the result by a few polls of 0.1 ms (docs/models.md)
    rows = vs_smpi.compare([2, 4], ["polling"], [], require=True)
    assert len(rows) == 2
    assert abs(rows[0][4]) < 0.005, rows[0]
    assert abs(rows[1][4]) < 0.03, rows[1]


@pytest.mark.slow
def test_fat_tree_matches_smpi():
    rows = vs_smpi.compare([8], ["ring", "all_pairs", "many_to_one"], [], require=True, platform="fattree")
    assert len(rows) == 3
    assert all(abs(row[4]) < 0.01 for row in rows), rows


@pytest.mark.slow
def test_energy_matches_smpi_host_energy_plugin(tmp_path):
    import subprocess

    import energy_run

    binary = tmp_path / "energy_cases"
    subprocess.run(["smpicc", "-O2", str(energy_run.HERE / "energy_cases.c"), "-o", str(binary)],
                   check=True, capture_output=True)
    hostfile = vs_smpi.smpi_hosts(tmp_path, 64)
    for pstate, gov in [(1, None), (-1, "powersave")]:
        t_ref, e_ref, _ = energy_run.run_smpi(binary, hostfile, 16, pstate, gov)
        t_got, e_got, _ = energy_run.run_smpy(16, pstate, gov, tmp_path)
        assert t_got == pytest.approx(t_ref, rel=1e-6)
        assert e_got == pytest.approx(e_ref, rel=1e-6)
