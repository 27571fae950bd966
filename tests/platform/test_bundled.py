"""The platforms bundled with smpy: found by name, each built as its header says."""

from __future__ import annotations

import subprocess
import sys

import pytest

import smpy
from smpy.platform import load_platform
from smpy.platform.bundled import bundled_platforms, resolve_platform


def test_every_bundled_platform_loads_and_says_what_it_is():
    found = bundled_platforms()
    assert {"default", "taurus", "taurus-fattree", "graphene"} <= set(found)
    for path in found.values():
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("#"), f"{path.name} must open with its description and sources"
        assert load_platform(path).hosts


def test_taurus_as_the_paper_describes_it():
    plat = load_platform("taurus")
    assert [h.name for h in plat.hosts] == [f"taurus-{i}" for i in range(1, 17)]
    assert {h.cores for h in plat.hosts} == {12}
    assert {tuple(h.speeds_flops) for h in plat.hosts} == {(18.4e9,)}  # 2.3 GHz x 8 flop/cycle


def test_fat_tree_leaving_a_switch_costs_two_more_links():
    plat = load_platform("taurus-fattree")
    assert len(plat.hosts) == 256
    a, same_switch, other_switch = plat.host("node-0"), plat.host("node-15"), plat.host("node-16")
    assert len(plat.route(a, same_switch)) == 2  # up to the level-1 switch and down
    assert len(plat.route(a, other_switch)) == 4  # through a level-2 switch


def test_a_file_of_that_name_wins_over_the_bundled_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_platform("taurus").endswith("taurus.yaml")
    assert resolve_platform("taurus") != "taurus"
    (tmp_path / "taurus").write_text("name: mine\nhosts: [{name: h, speed: 1Gf}]\n")
    assert resolve_platform("taurus") == "taurus"
    assert resolve_platform("./nothing-here") == "./nothing-here"  # a path is never looked up


def test_taurus_node_power_idle_and_all_cores(tmp_path):
    prog = tmp_path / "busy.py"
    prog.write_text("import smpy\nfrom mpi4py import MPI\nsmpy.execute_flops(18.4e9)\n")
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text("taurus-1:12\n")
    res = smpy.run(str(prog), np=12, platform="taurus", hostfile=str(hostfile),
                   cfg={"plugin": "host_energy", "smpi/simulate-computation": "no"})
    assert res.status == "ok"
    t = res.makespan_s  # 1 s of computation, plus start-up and the final barrier
    assert t == pytest.approx(1.0, abs=1e-3)
    # taurus-1 with its 12 cores busy for 1 s: 214 J, idle the rest; the 15 others idle: 110 W
    assert res.energy["total_J"] == pytest.approx(214.0 + 110.0 * (t - 1.0) + 15 * 110.0 * t,
                                                  rel=1e-9)


@pytest.mark.slow
def test_platform_list_command():
    out = subprocess.run([sys.executable, "-m", "smpy", "platform", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert "taurus" in out and "taurus-fattree" in out and "256 hosts" in out
