"""Energy reports: the power trace integrates to the reported energy; link energy."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

import smpy

ROOT = Path(__file__).resolve().parents[2]


def test_power_trace_integrates_to_the_energy(tmp_path: Path) -> None:
    trace = tmp_path / "power.csv"
    res = smpy.run(str(ROOT / "examples/energy/dvfs.py"), np=2,
                   platform=str(ROOT / "examples/platforms/energy_platform.yaml"),
                   hostfile=str(ROOT / "examples/energy/hosts.txt"),
                   cfg={"smpy/power-trace": str(trace), "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    rows = list(csv.DictReader(trace.open()))
    assert {r["host"] for r in rows} == {"MyHost1", "MyHost2", "MyHost3"}
    energy: dict[str, float] = defaultdict(float)
    last: dict[str, tuple[float, float]] = {}
    for r in rows:
        t, w = float(r["time_s"]), float(r["power_W"])
        if r["host"] in last:
            t0, w0 = last[r["host"]]
            energy[r["host"]] += w0 * (t - t0)
        last[r["host"]] = (t, w)
    assert max(t for t, _ in last.values()) == pytest.approx(res.makespan_s)
    for host, joules in res.energy["per_host_J"].items():
        assert energy[host] == pytest.approx(joules, rel=1e-9)


LINK_PLATFORM = """
name: two
hosts:
  - {name: a, speed: 1Gf}
  - {name: b, speed: 1Gf}
links:
  - {name: l, bandwidth: 1MBps, latency: 0, power: {idle: 10W, busy: 30W}}
  - {name: quiet, bandwidth: 1MBps, latency: 0, properties: {wattage_range: "5:50"}}
routes:
  - {src: a, dst: b, links: [l]}
"""

LINK_PROGRAM = """
import numpy as np
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
smpy.sleep(1.0)
buf = np.zeros(1_000_000, dtype=np.uint8)
if c.rank == 0:
    c.Send(buf, dest=1)
else:
    c.Recv(buf, source=0)
smpy.sleep(1.0)
"""


def test_link_energy_is_idle_power_plus_utilisation(tmp_path: Path) -> None:
    plat, prog = tmp_path / "p.yaml", tmp_path / "prog.py"
    plat.write_text(LINK_PLATFORM)
    prog.write_text(LINK_PROGRAM)
    res = smpy.run(str(prog), np=2, platform=str(plat),
                   cfg={"plugin": "link_energy", "network/model": "raw",
                        "smpi/simulate-computation": "no", "smpi/os": "0", "smpi/or": "0"})
    assert res.status == "ok", res.message
    e = res.energy
    # 1 MB (+ the 16-byte envelope... none for raw data) at 1 MB/s: the link is busy ~1 s of ~3 s
    busy_s = 1_000_000 / 1e6
    assert res.makespan_s == pytest.approx(2.0 + busy_s, rel=1e-4)
    assert e["per_link_J"]["l"] == pytest.approx(10.0 * res.makespan_s + 20.0 * busy_s, rel=1e-4)
    assert e["per_link_J"]["quiet"] == pytest.approx(5.0 * res.makespan_s)
    assert e["links_J"] == pytest.approx(e["per_link_J"]["l"] + e["per_link_J"]["quiet"])
    assert "total_J" not in e  # host energy was not asked for


ONOFF_PROGRAM = """
from mpi4py import MPI
import smpy
smpy.set_host_on("MyHost3", False)
assert not smpy.host_is_on("MyHost3") and smpy.host_is_on()
smpy.sleep(10.0)
off = smpy.get_host_power("MyHost3")
smpy.set_host_on("MyHost3", True)
smpy.sleep(10.0)
print(off, smpy.get_host_consumed_energy("MyHost3"))
"""


def test_switching_an_idle_host_off_draws_the_off_wattage(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(ONOFF_PROGRAM)
    res = smpy.run(str(prog), np=1, platform=str(ROOT / "examples/platforms/energy_platform.yaml"),
                   hostfile=str(ROOT / "examples/energy/hosts.txt"),
                   cfg={"plugin": "host_energy", "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    lines = res.stdout.splitlines()
    off, joules = map(float, lines[0].split())
    assert off == 10.0
    # 10 s off at 10 W, then 10 s idle at 100 W
    assert joules == pytest.approx(10 * 10.0 + 10 * 100.0)


POLL_PROGRAM = """
import sys
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
if c.rank == 1:
    smpy.sleep(1.0)
    c.send(1, dest=0)
elif sys.argv[1] == "poll":
    while not c.Iprobe(source=1):
        pass
    c.recv(source=1)
else:
    c.recv(source=1)
print(c.rank, MPI.Wtime(), smpy.get_consumed_energy())
"""


def test_polling_burns_a_core_blocking_waits_idle(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(POLL_PROGRAM)
    out = {}
    for mode in ("poll", "block"):
        res = smpy.run(str(prog), np=2, args=[mode],
                       platform=str(ROOT / "examples/platforms/energy_platform.yaml"),
                       hostfile=str(ROOT / "examples/energy/hosts.txt"),
                       cfg={"plugin": "host_energy", "smpi/simulate-computation": "no"})
        assert res.status == "ok", res.message
        (line,) = [x for x in res.stdout.splitlines() if x.startswith("0 ")]
        t, joules = map(float, line.split()[1:])
        out[mode] = joules / t  # mean power of MyHost1 (4 cores) while rank 0 waits
    assert out["block"] == pytest.approx(100.0, rel=1e-3)  # idle at pstate 0
    # polling keeps one core of four busy: 93.33 + (200 - 93.33) / 4 = 120 W
    assert out["poll"] == pytest.approx(120.0, rel=2e-2)
