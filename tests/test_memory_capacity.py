"""Memory capacity (issue 20 item 5, UniMPP): slowdown while a host's memory fills, the OOM
kill beyond RAM + swap, page caches in the free memory; exact relations."""

import math

import pytest

from smpy.cli.launch import run
from smpy.cpu.memory import DEFAULT_CURVE, SwapCurve, alpha, free_ram, over, slowdown
from smpy.platform import PlatformError
from smpy.platform.loader import load_platform

GiB = 1 << 30
_CFG = {"smpi/wtime": "0", "smpi/simulate-computation": "no"}
MiB = 1 << 20


def test_delay_function_linear_then_exponential():
    R, S = 1 * GiB, 512 * MiB
    a, c, k = DEFAULT_CURVE.ram, DEFAULT_CURVE.swap, DEFAULT_CURVE.growth
    assert alpha(0, R, S) == 0.0
    assert alpha(R / 4, R, S) == pytest.approx(a / 4, rel=1e-15)
    assert alpha(R, R, S) == pytest.approx(a, rel=1e-15)
    # continuous at R, then e^(k x) over the swapped fraction x
    assert alpha(R + 1, R, S) == pytest.approx(a, rel=1e-6)
    assert alpha(R + S / 2, R, S) == pytest.approx(a + c * (math.exp(k / 2) - 1), rel=1e-15)
    assert slowdown(R + S, R, S) == pytest.approx(1 + a + c * (math.exp(k) - 1), rel=1e-15)
    # UniMPP's c1/c2 (Table 2, alpha in percent of occupied MB): a full swap ~ 2.76
    assert 2.6 < alpha(R + S * 2, R, S * 2) < 2.8
    # a host without ram is never slowed nor out of memory
    assert slowdown(1e18, math.inf, 0.0) == 1.0 and not over(1e18, math.inf, 0.0)
    assert over(R + S + 1, R, S) and not over(R + S, R, S)
    assert free_ram(R / 4, R) == 3 * R / 4 and free_ram(2 * R, R) == 0.0
    assert slowdown(R / 2, R, 0, SwapCurve(ram=0.5)) == 1.25


_PLAT = """\
clusters:
  - name: c
    prefix: node-
    count: 2
    cores: 2
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 10us
    ram: 1GiB
    swap: 512MiB
{extra}
"""

_PROG = """\
import sys
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
mine = float(sys.argv[1 + comm.Get_rank()])
t0 = MPI.Wtime()
smpy.execute_flops(1e9)
t1 = MPI.Wtime()
smpy.set_memory(mine)
comm.Barrier()
t2 = MPI.Wtime()
smpy.execute_flops(1e9)
t3 = MPI.Wtime()
print(repr(t1 - t0), repr(t3 - t2))
"""


def _run(tmp_path, args, extra="", np=2, hostfile=True):
    plat = tmp_path / "p.yaml"
    plat.write_text(_PLAT.format(extra=extra))
    prog = tmp_path / "prog.py"
    prog.write_text(_PROG)
    hf = None
    if hostfile:
        hf = tmp_path / "hosts"
        hf.write_text("node-0:2\n")
        hf = str(hf)
    return run(str(prog), np=np, platform=str(plat), hostfile=hf, args=[str(a) for a in args],
               cfg={"smpi/wtime": "0", "smpi/simulate-computation": "no"}, capture=True, echo=False)


def _times(res):
    by_rank: dict[int, str] = {}
    for rank, stream, text in res.output:
        if stream == "stdout":
            by_rank[rank] = by_rank.get(rank, "") + text
    return [tuple(float(x) for x in by_rank[r].split()) for r in sorted(by_rank)]


@pytest.mark.parametrize("per_rank", [128 * MiB, 400 * MiB, 640 * MiB, 760 * MiB])
def test_computation_slows_by_the_formula(tmp_path, per_rank):
    res = _run(tmp_path, [per_rank, per_rank])
    assert res.exit_code == 0, res.message
    want = slowdown(2 * per_rank, GiB, 512 * MiB)
    for empty, full in _times(res):
        assert empty == pytest.approx(1.0, rel=1e-12)
        assert full / empty == pytest.approx(want, rel=1e-9)


def test_curve_from_the_platform_and_hosts_apart(tmp_path):
    extra = "    memory_slowdown: {ram: 0.5, swap: 1.0, growth: 2.0}"
    res = _run(tmp_path, [GiB // 2, GiB // 4], extra=extra, hostfile=False)  # one rank per host
    assert res.exit_code == 0, res.message
    (e0, f0), (e1, f1) = _times(res)
    assert f0 / e0 == pytest.approx(1.25, rel=1e-9)
    assert f1 / e1 == pytest.approx(1.125, rel=1e-9)


def test_out_of_memory_beyond_ram_plus_swap_names_host_and_ranks(tmp_path):
    res = _run(tmp_path, [800 * MiB, 800 * MiB])
    assert res.status == "oom" and res.exit_code == 137
    line = res.message.strip()
    assert "\n" not in line
    assert "OUT OF MEMORY: host node-0" in line and "ranks 0-1" in line
    assert "rank 0 800 MiB, rank 1 800 MiB" in line and "ram 1 GiB + swap 512 MiB" in line


def test_numpy_arrays_count_without_hint(tmp_path):
    prog = tmp_path / "arr.py"
    prog.write_text(
        "from mpi4py import MPI\nimport numpy as np\nimport smpy\n"
        "t0 = MPI.Wtime(); smpy.execute_flops(1e9); t1 = MPI.Wtime()\n"
        "a = np.empty(256 * 2**20 // 8)\nMPI.COMM_WORLD.Barrier()\n"
        "t2 = MPI.Wtime(); smpy.execute_flops(1e9); t3 = MPI.Wtime()\n"
        "del a\nMPI.COMM_WORLD.Barrier()\n"
        "t4 = MPI.Wtime(); smpy.execute_flops(1e9); t5 = MPI.Wtime()\n"
        "print(repr(t1 - t0), repr(t3 - t2), repr(t5 - t4))\n")
    plat = tmp_path / "p.yaml"
    plat.write_text(_PLAT.format(extra=""))
    res = run(str(prog), np=1, platform=str(plat), cfg=_CFG, capture=True, echo=False)
    assert res.exit_code == 0, res.message
    empty, full, freed = _times(res)[0]
    # the array's block (header and page rounding included) is counted while it lives
    occupied = (full / empty - 1) / DEFAULT_CURVE.ram * GiB
    assert 256 * MiB <= occupied <= 256 * MiB + 8192
    assert freed == pytest.approx(empty, rel=1e-12)


_IO = """\
import os
from mpi4py import MPI
import smpy
path = os.path.join({d!r}, "f.bin")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
block = bytes(64 << 20)
t0 = MPI.Wtime(); os.write(fd, block); t1 = MPI.Wtime()
smpy.set_memory(float({used}))
t2 = MPI.Wtime(); os.write(fd, block); t3 = MPI.Wtime()
os.close(fd)
print(repr(t1 - t0), repr(t3 - t2))
"""


def test_page_cache_shrinks_when_ranks_use_ram(tmp_path):
    d = tmp_path / "local"
    d.mkdir()
    extra = (f"filesystems:\n  - name: local\n    kind: local\n    mount: {d}\n"
             "    disk: {read: 200MBps, write: 100MBps, latency: 0s}")
    plat = tmp_path / "p.yaml"
    plat.write_text(_PLAT.format(extra="") + extra + "\n")
    out = {}
    for used in (0, GiB - (32 << 20)):
        prog = tmp_path / "io.py"
        prog.write_text(_IO.format(d=str(d), used=used))
        res = run(str(prog), np=1, platform=str(plat), cfg=_CFG, capture=True, echo=False)
        assert res.exit_code == 0, res.message
        out[used] = list(_times(res)[0])
    # free RAM: both 64 MiB writes are absorbed by the page cache (no disk time)
    assert out[0] == [0.0, 0.0]
    # 32 MiB of free RAM left: the second write waits for the flusher, at disk speed
    first, second = out[GiB - (32 << 20)]
    assert first == 0.0
    assert second >= (64 << 20) / 100e6


def test_platform_errors_name_the_field(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(_PLAT.format(extra="").replace("ram: 1GiB", "ram: lots"))
    with pytest.raises(PlatformError, match=r"p.yaml: clusters\[0\].ram: expected a size"):
        load_platform(str(p))
    p.write_text(_PLAT.format(extra="").replace("    ram: 1GiB\n", ""))
    with pytest.raises(PlatformError, match=r"clusters\[0\].swap: needs `ram`"):
        load_platform(str(p))


def test_xml_host_props(tmp_path):
    x = tmp_path / "p.xml"
    x.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
                 "<host id=\"a\" speed=\"1Gf\"><prop id=\"ram\" value=\"2GiB\"/>"
                 "<prop id=\"swap\" value=\"1GiB\"/></host>\n</zone>\n</platform>\n")
    h = load_platform(str(x)).hosts[0]
    assert (h.ram, h.swap) == (2 * GiB, GiB) and "ram" not in h.properties
    x.write_text(x.read_text().replace('"1GiB"', '"bad"'))
    with pytest.raises(PlatformError, match=r"line 4, <prop id='swap'> attribute 'value'"):
        load_platform(str(x))


_XML_CLUSTER = """<?xml version='1.0'?>
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-1" speed="1Gf" core="2" bw="10Gbps" lat="10us">
    <prop id="ram" value="1GiB"/>
    <prop id="swap" value="512MiB"/>
    <prop id="rack" value="r1"/>
  </cluster>
</platform>
"""


def test_xml_cluster_props_give_every_host_its_memory(tmp_path):
    # SimGrid gives a <cluster>'s <prop>s to each of its hosts: ram and swap are the memory
    # capacity of each (as `ram:`/`swap:` on a YAML cluster), other properties stay properties
    x = tmp_path / "p.xml"
    x.write_text(_XML_CLUSTER)
    hosts = load_platform(str(x)).hosts
    assert [(h.name, h.ram, h.swap) for h in hosts] == [("node-0", GiB, 512 * MiB), ("node-1", GiB, 512 * MiB)]
    assert all(h.properties.get("rack") == "r1" and "ram" not in h.properties for h in hosts)
    # and the run is the YAML cluster's: the same slowdown, the same out-of-memory kill
    prog = tmp_path / "prog.py"
    prog.write_text(_PROG)
    hf = tmp_path / "hosts"
    hf.write_text("node-0:2\n")
    cfg = {"smpi/wtime": "0", "smpi/simulate-computation": "no"}
    res = run(str(prog), np=2, platform=str(x), hostfile=str(hf), args=[str(400 * MiB)] * 2,
              cfg=cfg, capture=True, echo=False)
    assert res.exit_code == 0, res.message
    for empty, full in _times(res):
        assert full / empty == pytest.approx(slowdown(800 * MiB, GiB, 512 * MiB), rel=1e-9)
    res = run(str(prog), np=2, platform=str(x), hostfile=str(hf), args=[str(800 * MiB)] * 2,
              cfg=cfg, capture=True, echo=False)
    assert res.status == "oom" and "ram 1 GiB + swap 512 MiB" in res.message
    x.write_text(_XML_CLUSTER.replace('"512MiB"', '"lots"'))
    with pytest.raises(PlatformError, match=r"line 5, <prop id='swap'> attribute 'value'"):
        load_platform(str(x))
