"""Dynamic node allocation (smpy/runtime/nodes.py, smpy/nodes.py): node states, the free pool,
boot and shutdown times and wattages, the launch cost of MPI_Comm_spawn, and the utilisation's
allocated cores. Every expectation is computed by hand from the platform below."""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import smpy

NO_COMPUTE = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}
COSTS = {"smpy/spawn-node-cost": "0.5s", "smpy/spawn-process-cost": "0.25s", "smpy/spawn-init-cost": "1s"}
ZERO = {"smpy/spawn-node-cost": "0s", "smpy/spawn-process-cost": "0s", "smpy/spawn-init-cost": "0s"}

#: 4 nodes of 2 cores at 1 Gflop/s; the ones without an initial rank start off, boot in 150 s at
#: 120 W, shut down in 7 s at 110 W, draw 10 W off (SimGrid's energy_boot.xml figures)
PLATFORM = """\
name: dyn
clusters:
  - name: c
    prefix: n-
    suffix: ""
    radical: 0-3
    cores: 2
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 10us
    power: {{off: 10W, pstates: [[100W, 100W, 200W]]}}
    node: {{state: {state}, boot: {{time: 150s, power: 120W}}, shutdown: {{time: 7s, power: 110W}}}}
"""

CHILD = """\
from mpi4py import MPI
import smpy
p = MPI.Comm.Get_parent()
smpy.execute_flops(2e9)
p.Barrier()
p.Disconnect()
"""


def _run(tmp_path: Path, code: str, np: int = 1, state: str = "off", **cfg: str):
    (tmp_path / "child.py").write_text(CHILD)
    prog = tmp_path / "parent.py"
    prog.write_text(textwrap.dedent(code))
    plat = tmp_path / "plat.yaml"
    plat.write_text(PLATFORM.format(state=state))
    prefix = tmp_path / "rep"
    res = smpy.run(str(prog), np=np, platform=str(plat),
                   cfg={**NO_COMPUTE, "plugin": "host_energy", "smpy/report": str(prefix),
                        "smpy/utilization-bin": "1s", **cfg}, capture=True, echo=False)
    assert res.status == "ok", res.stderr
    with open(f"{prefix}.utilization.csv", encoding="utf-8") as fh:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    out = {}
    for line in res.stdout.splitlines():
        key, _, rest = line.partition(" ")
        out[key] = eval(rest)  # the program prints reprs
    return res, rows, out


def _integral(rows, col):
    return sum((r["t_end"] - r["t_start"]) * r[col] for r in rows)


def _bin(rows, t):
    return next(r for r in rows if r["t_start"] == t)


SPAWN_AND_POWER_OFF = """\
import sys
from mpi4py import MPI
import smpy, smpy.nodes
child = {child!r}
smpy.execute_flops(1e9)
print("before", smpy.nodes.state())
t0 = MPI.Wtime()
c = MPI.COMM_WORLD.Spawn(sys.executable, [child], 2)
t1 = MPI.Wtime()
print("spawn", (t0, t1, smpy.get_host_consumed_energy("n-1")))
c.Barrier()
c.Disconnect()
smpy.sleep(1)
print("freed", smpy.nodes.state())
t2 = MPI.Wtime()
e2 = smpy.get_host_consumed_energy("n-1")
print("off", smpy.nodes.power_off())
smpy.sleep(10)
print("after", (t2, e2, smpy.get_host_consumed_energy("n-1"), smpy.nodes.state()))
"""


def _spawn_run(tmp_path: Path, state: str, **cfg: str):
    return _run(tmp_path, SPAWN_AND_POWER_OFF.format(child=str(tmp_path / "child.py")), state=state, **cfg)


def test_boot_and_launch_cost_appear_exactly_in_the_timeline(tmp_path):
    res, rows, out = _spawn_run(tmp_path, "off", **COSTS)
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    _, _, base = _spawn_run(base_dir, "on", **ZERO)
    assert out["before"] == {"n-0": "allocated", "n-1": "off", "n-2": "off", "n-3": "off"}
    t0, t1, _ = out["spawn"]
    b0, b1, _ = base["spawn"]
    assert t0 == b0 == 1.0
    # one node booted (150 s), one node, two processes, one start-up: 150 + 0.5 + 2 x 0.25 + 1
    assert (t1 - t0) - (b1 - b0) == pytest.approx(152.0, rel=1e-12)
    # the booting node is allocated from the spawn on; it draws 120 W until 1 + 150 s
    assert [_bin(rows, t)["allocated"] for t in (0.0, 1.0, 150.0, 151.0)] == [2.0, 4.0, 4.0, 4.0]
    p_boot = 100 + 120 + 10 + 10  # n-0 idle (its rank waits in MPI_Comm_spawn), n-1 booting, 2 off
    assert _bin(rows, 1.0)["power_W"] == pytest.approx(p_boot, rel=1e-12)
    assert _bin(rows, 150.0)["power_W"] == pytest.approx(p_boot, rel=1e-12)
    assert _bin(rows, 151.0)["power_W"] == pytest.approx(100 + 100 + 10 + 10, rel=1e-12)
    assert res.spawned == 2 and [r.host for r in res.ranks] == ["n-0", "n-1", "n-1"]


def test_boot_and_shutdown_energy_is_wattage_times_duration(tmp_path):
    res, rows, out = _run(tmp_path, """\
        import smpy, smpy.nodes
        smpy.execute_flops(1e9)
        print("on", smpy.nodes.power_on("n-1"))
        smpy.sleep(200)
        e1 = smpy.get_host_consumed_energy("n-1")
        print("off", (e1, smpy.nodes.state()["n-1"], smpy.nodes.power_off("n-1")))
        smpy.sleep(10)
        print("after", (smpy.get_host_consumed_energy("n-1"), smpy.nodes.state()["n-1"]))
        """, state="off")
    assert out["on"] == ["n-1"]
    e1, state1, off = out["off"]
    # n-1: off (10 W) for 1 s, boots 150 s at 120 W, then idle (100 W) until 201 s
    assert (state1, off) == ("free", ["n-1"])
    assert e1 == pytest.approx(10 * 1 + 120 * 150 + 100 * 50, rel=1e-12)
    # then shuts down: 7 s at 110 W, and 3 s off at 10 W
    e2, state2 = out["after"]
    assert state2 == "off"
    assert e2 - e1 == pytest.approx(110 * 7 + 10 * 3, rel=1e-12)
    # n-0: its rank computes 1 s on one core of two (100 + 0.5 x (200 - 100) W), then sleeps (idle)
    p_n0 = [150.0] + [100.0] * 210
    p_n1 = [10.0] + [120.0] * 150 + [100.0] * 50 + [110.0] * 7 + [10.0] * 3
    assert [r["power_W"] for r in rows] == pytest.approx([a + b + 20 for a, b in zip(p_n0, p_n1)], rel=1e-12)
    # a node that boots into the free pool is not allocated: the rank's 2 cores only
    assert all(r["allocated"] == 2.0 for r in rows)
    assert _integral(rows, "power_W") == pytest.approx(res.energy["total_J"], rel=1e-12)


def test_energy_at_the_end_of_a_spawn_on_a_booted_node(tmp_path):
    res, rows, out = _spawn_run(tmp_path, "off", **COSTS)
    t0, t1, e1 = out["spawn"]
    # n-1: off (10 W) until the spawn at t0, boots 150 s at 120 W, then idle (100 W) until the
    # children start (t0 + 152) and connect (their polling counts as load: a few microseconds)
    assert e1 == pytest.approx(10 * t0 + 120 * 150 + 100 * (t1 - (t0 + 150)), abs=0.01)
    t2, e2, e3, states = out["after"]
    assert out["freed"]["n-1"] == "free" and out["off"] == ["n-1"]
    assert e3 - e2 == pytest.approx(110 * 7 + 10 * 3, rel=1e-12)
    assert states == {"n-0": "allocated", "n-1": "off", "n-2": "off", "n-3": "off"}
    assert _integral(rows, "power_W") == pytest.approx(res.energy["total_J"], rel=1e-9)


def test_utilisation_integrates_to_busy_core_seconds_and_follows_allocation(tmp_path):
    res, rows, out = _spawn_run(tmp_path, "off", **COSTS)
    # the parent computes 1 s, each of the two children 2 s
    assert _integral(rows, "busy") == pytest.approx(5.0, rel=1e-9)
    t2 = out["after"][0]
    # n-1 (2 cores) is allocated from 1 s (its boot) until its two children end, before t2
    assert _bin(rows, 0.0)["allocated"] == 2.0
    assert all(r["allocated"] == 4.0 for r in rows if 1.0 <= r["t_start"] and r["t_end"] <= t2 - 2)
    assert all(r["allocated"] == 2.0 for r in rows if r["t_start"] >= t2)
    # 2 cores allocated for the whole run, 2 more from the spawn to the children's end
    ends = [r.end_time_s for r in res.ranks[1:]]
    assert _integral(rows, "allocated") == pytest.approx(2 * res.makespan_s + 2 * (max(ends) - 1.0), rel=1e-9)


def test_launch_cost_without_boot_and_free_nodes_first(tmp_path):
    code = """\
        import sys
        from mpi4py import MPI
        import smpy.nodes
        child = {child!r}
        t0 = MPI.Wtime()
        c = MPI.COMM_WORLD.Spawn(sys.executable, [child], 5)
        print("spawn", MPI.Wtime() - t0)
        c.Barrier()
        c.Disconnect()
        """
    res, _, out = _run(tmp_path, code.format(child=str(tmp_path / "child.py")), state="on", **COSTS)
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    _, _, base = _run(base_dir, code.format(child=str(base_dir / "child.py")), state="on", **ZERO)
    # 5 processes on 2-core free nodes: 3 nodes, no boot: 3 x 0.5 + 5 x 0.25 + 1
    assert out["spawn"] - base["spawn"] == pytest.approx(3.75, rel=1e-12)
    assert [r.host for r in res.ranks] == ["n-0", "n-1", "n-1", "n-2", "n-2", "n-3"]


def test_spawn_boots_off_nodes_only_when_no_node_is_free_and_oversubscribes_last(tmp_path):
    code = f"""\
        import sys
        from mpi4py import MPI
        import smpy, smpy.nodes
        child = {str(tmp_path / "child.py")!r}
        print("on", smpy.nodes.power_on(count=1))
        smpy.sleep(200)
        print("up", smpy.nodes.state())
        t0 = MPI.Wtime()
        c = MPI.COMM_WORLD.Spawn(sys.executable, [child], 9)
        print("spawn", MPI.Wtime() - t0)
        c.Barrier()
        c.Disconnect()
        """
    res, _, out = _run(tmp_path, code, state="off", **ZERO)
    assert out["on"] == ["n-1"]
    assert out["up"] == {"n-0": "allocated", "n-1": "free", "n-2": "off", "n-3": "off"}
    hosts = [r.host for r in res.ranks[1:]]
    # n-1 is free (2 processes), n-2 and n-3 boot (2 each), 3 left round-robin over the
    # allocated nodes n-0..n-3 after the 7 processes already placed
    assert hosts == ["n-1"] * 2 + ["n-2"] * 2 + ["n-3"] * 2 + ["n-3", "n-0", "n-1"]
    assert out["spawn"] >= 150.0


def test_allocate_release_and_idle_power_off(tmp_path):
    code = f"""\
        import sys
        from mpi4py import MPI
        import smpy, smpy.nodes
        child = {str(tmp_path / "child.py")!r}
        hosts = smpy.nodes.allocate(2)
        print("alloc", (hosts, MPI.Wtime(), smpy.nodes.state()))
        info = MPI.Info.Create()
        info.Set("host", hosts[1])
        c = MPI.COMM_SELF.Spawn(sys.executable, [child], 2, info=info)
        c.Barrier()
        c.Disconnect()
        smpy.sleep(1)
        print("held", smpy.nodes.state())
        print("released", smpy.nodes.release(hosts))
        print("end", smpy.nodes.state())
        smpy.sleep(10)
        print("later", smpy.nodes.state())
        """
    res, _, out = _run(tmp_path, code, state="on", **ZERO, **{"smpy/node-idle-off": "yes"})
    hosts, t, states = out["alloc"]
    assert hosts == ["n-1", "n-2"] and t == 0.0
    assert states == {"n-0": "allocated", "n-1": "allocated", "n-2": "allocated", "n-3": "free"}
    assert [r.host for r in res.ranks[1:]] == ["n-2", "n-2"]
    # reserved nodes stay allocated after their processes end, until released
    assert out["held"]["n-2"] == "allocated"
    assert out["released"] == ["n-1", "n-2"]
    # smpy/node-idle-off: a node returning to the pool shuts down (7 s), n-3 too is never used
    assert out["end"] == {"n-0": "allocated", "n-1": "shutting_down", "n-2": "shutting_down", "n-3": "free"}
    assert out["later"] == {"n-0": "allocated", "n-1": "off", "n-2": "off", "n-3": "free"}


def test_nodes_api_is_a_no_op_without_smpyrun():
    code = ("import smpy.nodes as n; print(n.state(), n.allocate(2), n.release(['x']), "
            "n.power_off(), n.power_on(count=1))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "{} [] [] [] []"


def test_node_block_is_validated_with_file_and_field(tmp_path):
    from smpy.platform import PlatformError, load_platform

    plat = tmp_path / "bad.yaml"
    plat.write_text(PLATFORM.format(state="sleeping"))
    with pytest.raises(PlatformError) as err:
        load_platform(str(plat))
    assert str(err.value).startswith(f"{plat}: clusters[0].node.state: expected 'on'")
    plat.write_text(PLATFORM.format(state="off").replace("time: 150s", "time: soon"))
    with pytest.raises(PlatformError) as err:
        load_platform(str(plat))
    assert f"{plat}: clusters[0].node.boot.time: expected" in str(err.value)


def test_xml_properties_declare_the_lifecycle(tmp_path):
    from smpy.platform import load_platform
    from smpy.runtime.nodes import node_profile

    xml = tmp_path / "p.xml"
    xml.write_text("""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <host id="a" speed="1Gf"><prop id="initial_state" value="off"/><prop id="boot_time" value="150s"/>
    <prop id="boot_wattage" value="120W"/><prop id="shutdown_time" value="7"/></host>
  <host id="b" speed="1Gf"><prop id="boot_time" value="later"/></host>
</zone></platform>""")
    plat = load_platform(str(xml))
    prof = node_profile(plat.host("a"), plat.name)
    assert (prof.initial, prof.boot_time, prof.boot_power, prof.shutdown_time, prof.shutdown_power) == \
        ("off", 150.0, 120.0, 7.0, None)
    with pytest.raises(ValueError, match="host b: property boot_time: expected a duration"):
        node_profile(plat.host("b"), plat.name)


MALLEABLE = Path(__file__).resolve().parents[1] / "examples" / "workloads" / "malleable.py"
MALLEABLE_PLATFORM = MALLEABLE.with_name("malleable.yaml")


def test_malleable_example_grows_and_shrinks_its_allocation(tmp_path):
    prefix = tmp_path / "rep"
    res = smpy.run(str(MALLEABLE), np=1, platform=str(MALLEABLE_PLATFORM), args=["2,8,12,4,0,6"],
                   cfg={**NO_COMPUTE, "plugin": "host_energy", "smpy/report": str(prefix),
                        "smpy/utilization-bin": "1ms"},
                   capture=True, echo=False)
    assert res.status == "ok", res.stderr
    assert [line.split(",")[0] for line in res.stdout.splitlines()] == [
        "phase 0: 2 tasks on 2 workers", "phase 1: 8 tasks on 4 workers", "phase 2: 12 tasks on 6 workers",
        "phase 3: 4 tasks on 2 workers", "phase 4: 0 tasks on 0 workers", "phase 5: 6 tasks on 4 workers"]
    # 1 + 1 + 1 groups of 2 grow to phase 2, then 2 more for phase 5
    assert res.spawned == 10
    with open(f"{prefix}.utilization.csv", encoding="utf-8") as fh:
        alloc = [float(r["allocated"]) for r in csv.DictReader(fh)]
    # the master's node (2 cores), plus one node of 2 cores per group alive (bins that hold
    # one value): 1, 2, 3, 1, (0: a short phase), 2 groups
    steps = [a for i, a in enumerate(alloc) if a.is_integer() and (i == 0 or a != alloc[i - 1])]
    assert [a for a in steps if a != 2.0] == [4.0, 6.0, 8.0, 4.0, 6.0]


@pytest.mark.slow
def test_malleable_example_prints_what_it_prints_under_mpich():
    from realmpi import real_env, run_reference

    ref = run_reference(1, str(MALLEABLE), env=real_env(), timeout=300)
    res = smpy.run(str(MALLEABLE), np=1, platform=str(MALLEABLE_PLATFORM), capture=True, echo=False)
    assert res.status == "ok", res.stderr
    assert res.stdout == ref.stdout
    assert len(ref.stdout.splitlines()) == 6


def test_default_launch_cost_is_the_measured_one(tmp_path):
    code = """\
        import sys
        from mpi4py import MPI
        child = {child!r}
        t0 = MPI.Wtime()
        c = MPI.COMM_WORLD.Spawn(sys.executable, [child], 3)
        print("spawn", MPI.Wtime() - t0)
        c.Barrier()
        c.Disconnect()
        """
    _, _, out = _run(tmp_path, code.format(child=str(tmp_path / "child.py")), state="on")
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    _, _, base = _run(base_dir, code.format(child=str(base_dir / "child.py")), state="on", **ZERO)
    # docs/dynamic-allocation.md: 11.1 ms per node, 1.5 ms per process, 258 ms start-up;
    # 3 processes on 2-core nodes: 2 nodes
    assert out["spawn"] - base["spawn"] == pytest.approx(2 * 0.0111 + 3 * 0.0015 + 0.258, rel=1e-9)


def test_processes_placed_without_a_spawn_take_their_nodes_at_once(tmp_path):
    # smpy batch starts a job's ranks with World.add_processes: no boot, the nodes are allocated
    from smpy.platform import load_platform
    from smpy.runtime.world import World
    from smpy.support.config import Config

    plat_file = tmp_path / "plat.yaml"
    plat_file.write_text(PLATFORM.format(state="off"))
    plat = load_platform(str(plat_file))
    world = World(plat, Config({}), [])
    assert world.nodes.states() == {"n-0": "off", "n-1": "off", "n-2": "off", "n-3": "off"}
    assert not plat.host("n-1").is_on
    procs = world.add_processes([plat.host("n-1"), plat.host("n-1")])
    assert world.nodes.states()["n-1"] == "allocated" and plat.host("n-1").is_on
    assert world.nodes.procs[1] == 2 and len(procs) == 2
