"""DVFS governors (host_dvfs plugin): decisions, daemon timing, and whole runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import smpy
from smpy.cpu.host import Host
from smpy.energy.dvfs import Governor, HostLoad

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = str(ROOT / "examples/platforms/energy_platform.yaml")
HOSTS = str(ROOT / "examples/energy/hosts.txt")

PROGRAM = """
from mpi4py import MPI
import smpy
smpy.execute_flops(2e8)
smpy.sleep(1.0)
smpy.execute_flops(2e8)
print(f"{MPI.Wtime():.9f} {smpy.get_pstate()}")
"""


def _host(cores: int = 4, pstates: int = 3) -> Host:
    h = Host("h", cores, [1e9 / (p + 1) for p in range(pstates)], 1, {})
    h.index = 0
    return h


def _governor(name: str, host: Host, busy: float, pmin: int = 0, pmax: int = -1) -> Governor:
    load = HostLoad(host, 0.0)
    load.busy = busy
    seen: list[int] = []

    def set_pstate(h: Host, p: int) -> None:
        seen.append(p)
        h.pstate = p

    gov = Governor(name, host, load, 0.1, pmin, pmax, set_pstate)
    gov.seen = seen  # type: ignore[attr-defined]
    return gov


@pytest.mark.parametrize(("name", "busy", "expected"), [
    ("performance", 0.0, 0), ("powersave", 4.0, 2),
    ("ondemand", 1.0, 0),     # load = cores x average load = 1 busy core > 0.8
    ("ondemand", 0.5, 2),     # below the threshold: the slowest pstate (SimGrid's formula)
    ("conservative", 1.0, 0), ("conservative", 0.1, 2), ("conservative", 0.5, 1),
])
def test_governor_decisions(name: str, busy: float, expected: int) -> None:
    gov = _governor(name, _host(), busy)
    gov.load.advance(0.1)
    assert gov.decide(0.1) == expected


def test_conservative_moves_one_step_and_resets_the_load() -> None:
    host = _host()
    gov = _governor("conservative", host, busy=4.0)
    host.pstate = 2
    gov.tick(0.1)
    assert host.pstate == 1
    gov.load.busy = 0.0
    gov.tick(0.2)  # the load since the last look is 0 (reset at 0.1): one step slower
    assert host.pstate == 2


def test_pstate_range_and_rate_are_checked() -> None:
    with pytest.raises(ValueError, match="DVFS pstate range"):
        _governor("performance", _host(), 0.0, pmin=2, pmax=1)
    with pytest.raises(ValueError, match="unknown DVFS governor 'turbo'"):
        _governor("turbo", _host(), 0.0)


def _run(tmp_path: Path, governor: str, **cfg: str) -> smpy.RunResult:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res = smpy.run(str(prog), np=1, platform=PLATFORM, hostfile=HOSTS,
                   cfg={"plugin": "host_energy,host_dvfs", "plugin/dvfs/governor": governor,
                        "smpi/simulate-computation": "no", **cfg})
    assert res.status == "ok", res.message
    return res


def test_performance_keeps_the_fastest_pstate(tmp_path: Path) -> None:
    res = _run(tmp_path, "performance")
    # 2e8 flops at 100 Mf, 1 s of sleep, 2e8 flops: 5 s
    assert res.makespan_s == pytest.approx(5.0)
    assert res.stdout.split()[1] == "0"


def test_powersave_switches_at_the_first_sampling(tmp_path: Path) -> None:
    res = _run(tmp_path, "powersave", **{"plugin/dvfs/sampling-rate": "0.5"})
    # 0.5 s at 100 Mf (5e7 flops), the remaining 1.5e8 at 20 Mf (7.5 s), 1 s, 2e8 at 20 Mf (10 s)
    assert res.makespan_s == pytest.approx(0.5 + 7.5 + 1.0 + 10.0)
    assert res.stdout.split()[1] == "2"


def test_ondemand_slows_down_when_idle_and_saves_energy(tmp_path: Path) -> None:
    fast = _run(tmp_path, "performance")
    od = _run(tmp_path, "ondemand")
    assert od.makespan_s > fast.makespan_s  # the second burst starts slow
    assert od.energy["total_J"] < fast.energy["total_J"]  # idle hosts and the sleep run slow


def test_governor_never_extends_the_run(tmp_path: Path) -> None:
    res = _run(tmp_path, "performance", **{"plugin/dvfs/sampling-rate": "7"})
    assert res.makespan_s == pytest.approx(5.0)


def test_host_property_overrides_the_governor(tmp_path: Path) -> None:
    plat = tmp_path / "p.yaml"
    plat.write_text(Path(PLATFORM).read_text().replace(
        "  - name: MyHost1\n", "  - name: MyHost1\n    properties: {plugin/dvfs/governor: powersave}\n"))
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res = smpy.run(str(prog), np=1, platform=str(plat), hostfile=HOSTS,
                   cfg={"plugin": "host_energy,host_dvfs", "plugin/dvfs/governor": "performance",
                        "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    assert res.stdout.split()[1] == "2"
