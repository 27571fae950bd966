"""The side-by-side speed benchmark's twins (benchmarks/speed/twins.c and twins.py) simulate the
same times under SimGrid SMPI and smpy, so that its CPU and memory ratios compare equal work.

Skipped when SMPI (Debian's libsimgrid-dev) is not installed; CI installs it.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "speed"))
import side_by_side as sbs  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")


@pytest.fixture(scope="module")
def smpi_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("twins")
    binary = d / "twins"
    subprocess.run(["smpicc", "-O2", str(sbs.HERE / "twins.c"), "-o", str(binary)], check=True,
                   capture_output=True)
    hostfile = d / "hosts.txt"
    hostfile.write_text("".join(f"node-{i}\n" for i in range(sbs.NHOSTS)))
    return binary, hostfile


@pytest.mark.slow
@pytest.mark.parametrize("pattern,arg", [("ring", 3), ("pingpong", 1), ("stencil", 3), ("allreduce", 2)])
def test_twins_simulate_the_same_times(smpi_env, pattern, arg):
    binary, hostfile = smpi_env
    ref = sbs.measure(sbs.smpi_cmd(binary, hostfile, 6, pattern, arg, "ompi"))
    got = sbs.measure(sbs.smpy_cmd(6, pattern, arg, "ompi"))
    t_ref, t_got = sbs.sim_time(ref["out"]), sbs.sim_time(got["out"])
    assert t_ref > 0, ref["out"]
    assert got["out"].split()[0] == f"{pattern}_{arg}"
    assert abs(t_got - t_ref) <= 1e-9 * t_ref, (pattern, t_ref, t_got)
    assert ref["cpu"] > 0 and got["cpu"] > 0 and got["rss"] > 1
