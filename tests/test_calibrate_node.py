"""smpy calibrate node: every calibration this node allows, written as one platform."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from realmpi import MPIEXEC, REASON

from smpy.platform import load_platform
from smpy.support.units import parse_speed


def _run(tmp_path, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "smpy", "calibrate", "node", "-o", str(tmp_path / "cal"),
                           *args], capture_output=True, text=True, timeout=timeout)


def test_missing_tools_are_skipped_steps_not_tracebacks(tmp_path):
    proc = _run(tmp_path, "--mpiexec", str(tmp_path / "no-mpiexec"), "--skip", "memory",
                "--seconds", "0.2", "--nodes", "3", "--network", "1Gbps/50us",
                "--storage-path", str(tmp_path), "--storage-quick")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = (tmp_path / "cal" / "summary.md").read_text()
    assert "| mpi | skipped |" in summary and "no-mpiexec" in summary
    assert "| network | skipped |" in summary and "needs the real MPI" in summary
    assert "| host-speed | ok |" in summary
    plat = load_platform(tmp_path / "cal" / "platform.yaml")
    assert [h.name for h in plat.hosts] == ["node-0", "node-1", "node-2"]
    assert "| storage | ok |" in summary
    (fs,) = plat.filesystems
    assert fs.kind == "local" and fs.mount == str(tmp_path.resolve()) and fs.disk.write > 0
    speed = plat.hosts[0].speeds_flops[0]
    assert speed > 1e8  # this machine's measured core speed
    assert parse_speed(plat.config["smpi/host-speed"]) == pytest.approx(speed, rel=1e-5)
    prov = json.loads((tmp_path / "cal" / "provenance.json").read_text())
    assert prov["cores"] >= 1 and prov["mpi"] is None
    assert "<table>" in (tmp_path / "cal" / "summary.html").read_text()


def test_bad_network_option_is_one_line(tmp_path):
    proc = _run(tmp_path, "--network", "fast")
    assert proc.returncode == 2
    assert "--network 'fast'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason=REASON)
def test_full_calibration_with_the_real_mpi(tmp_path):
    proc = _run(tmp_path, "--seconds", "0.2", "--rounds", "1", "--max-size", "16", "--reps", "2",
                "--skip", "memory", "--skip", "storage")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "cal" / "platform.yaml").read_text()
    assert "smpi/coll-selector: mpich" in text  # the mpich wheel's library
    assert "loopback:" in text and "smpi/send-is-detached-thresh" in text
    plat = load_platform(tmp_path / "cal" / "platform.yaml")
    assert plat.config["smpi/coll-selector"] == "mpich"
    for f in ("network.csv", "network.yaml", "summary.md", "summary.html", "provenance.json"):
        assert (tmp_path / "cal" / f).exists(), f
