"""File systems (issue 20): striping, caches, disks, the data path over the network,
two-phase collective I/O and the ranks' Python file I/O, with exact relations."""

import json
import os
import random

import numpy as np
import pytest

from smpy.cli.launch import run
from smpy.kernel.actors import Actor, block_on
from smpy.kernel.engine import Engine
from smpy.platform import PlatformError
from smpy.platform.loader import load_platform
from smpy.runtime.collio import aggregators, file_domains
from smpy.storage import StorageModel
from smpy.storage.filesystem import DiskParams, Server, stripe_requests

MiB = 1 << 20
#: what the MPI_Wtime calls around a measured access add (SimGrid's smpi/wtime)
WTIME = 3e-8


# -- striping ------------------------------------------------------------------------------------
def _brute(offset, n, S, c):
    out = {}
    for x in range(offset, offset + n):
        k = x // S
        j = k % c
        local = (k // c) * S + x % S
        if j not in out:
            out[j] = [0, local]
        out[j][0] += 1
        out[j][1] = min(out[j][1], local)
    return [(j, v[0], v[1]) for j, v in sorted(out.items())]


def test_stripe_requests_match_byte_by_byte_mapping():
    rng = random.Random(5)
    for _ in range(300):
        S = rng.choice([1, 3, 8, 64])
        c = rng.randint(1, 5)
        off = rng.randint(0, 500)
        n = rng.randint(1, 700)
        got = stripe_requests(off, n, S, c)
        assert got == _brute(off, n, S, c), (off, n, S, c)
        assert sum(b for _j, b, _l in got) == n


def test_stripe_requests_examples():
    # 1 MiB stripes over 4 servers: 4 MiB from 0 is 1 MiB each at local 0
    assert stripe_requests(0, 4 * MiB, MiB, 4) == [(j, MiB, 0) for j in range(4)]
    # 10 MiB from 512 KiB: slot 0 gets the tail of stripe 0 and stripes 4 and 8
    got = dict((j, (b, lo)) for j, b, lo in stripe_requests(MiB // 2, 10 * MiB, MiB, 4))
    assert got[0] == (MiB // 2 + 2 * MiB, MiB // 2)
    assert got[2] == (2 * MiB + MiB // 2, 0)  # stripes 2, 6 and half of 10
    assert got[2][0] + got[0][0] + got[1][0] + got[3][0] == 10 * MiB


# -- servers: cache, sync, disks -------------------------------------------------------------------
def _timed(fn):
    """Run ``fn(engine, server_factory)`` as an actor; returns the engine."""
    eng = Engine()
    model = StorageModel(eng)
    out = {}
    Actor(eng, "t", lambda: out.update(fn(eng, model) or {})).start()
    eng.run()
    return eng, out


def test_cache_absorbs_write_and_read_hits_it_sync_waits_for_flush():
    def body(eng, model):
        s = Server(model, "s", DiskParams(read=100e6, write=50e6, latency=0.01), 64 * MiB, MiB)
        block_on(s.write(1, 0, 8 * MiB))
        t_write = eng.now
        block_on(s.read(1, 0, 8 * MiB))
        t_hit = eng.now - t_write
        block_on(s.sync())  # the flush done (a read beside it would share the disk)
        t0 = eng.now
        block_on(s.read(2, 0, 4 * MiB))  # never written: one disk read
        t_miss = eng.now - t0
        return {"w": t_write, "hit": t_hit, "miss": t_miss, "hits": s.cache_hits}

    eng, out = _timed(body)
    assert out["w"] == 0.0 and out["hit"] == 0.0 and out["hits"] == 8 * MiB
    assert out["miss"] == pytest.approx(0.01 + 4 * MiB / 100e6, rel=1e-12)

    def syncing(eng, model):
        s = Server(model, "s", DiskParams(read=100e6, write=50e6, latency=0.0), 64 * MiB, MiB)
        block_on(s.write(1, 0, 8 * MiB))
        block_on(s.sync())
        return {"t": eng.now}

    _eng, out = _timed(syncing)
    assert out["t"] == pytest.approx(8 * MiB / 50e6, rel=1e-12)


def test_full_cache_writes_at_disk_speed_and_no_cache_writes_through():
    def body(eng, model):
        s = Server(model, "s", DiskParams(write=50e6), 4 * MiB, MiB)
        block_on(s.write(1, 0, 20 * MiB))  # 4 MiB absorbed, 16 MiB wait for the flusher
        return {"t": eng.now}

    _eng, out = _timed(body)
    assert out["t"] == pytest.approx(16 * MiB / 50e6, rel=1e-9)

    def through(eng, model):
        s = Server(model, "s", DiskParams(write=50e6, latency=0.002), 0, MiB)
        block_on(s.write(1, 0, 5 * MiB))
        return {"t": eng.now}

    _eng, out = _timed(through)
    assert out["t"] == pytest.approx(0.002 + 5 * MiB / 50e6, rel=1e-12)


def test_per_stream_limit_beside_the_aggregate_capacity():
    """stream = 100 MB/s, aggregate = 150 MB/s: one stream gets 100, two get 75 each; a
    write-back (a local file system's writes) is bounded by the aggregate only."""
    p = DiskParams(read=150e6, write=150e6, read_stream=100e6, write_stream=100e6)
    n = 75e6

    def ends(k, write, writeback=False):
        def body(eng, model):
            s = Server(model, "d", p, 0, MiB, writeback=writeback)
            acts = [s.write(1, i * int(n), int(n)) if write else s.read(1, i * int(n), int(n))
                    for i in range(k)]
            for a in acts:
                block_on(a)
            return {"t": eng.now}
        return _timed(body)[1]["t"]
    assert ends(1, True) == pytest.approx(n / 100e6, rel=1e-12)
    assert ends(2, True) == pytest.approx(n / 75e6, rel=1e-12)
    assert ends(1, False) == pytest.approx(n / 100e6, rel=1e-12)
    assert ends(2, False) == pytest.approx(n / 75e6, rel=1e-12)
    assert ends(1, True, writeback=True) == pytest.approx(n / 150e6, rel=1e-12)
    assert ends(2, True, writeback=True) == pytest.approx(2 * n / 150e6, rel=1e-12)
    # without the keys: today's model, the aggregate bounds one stream
    agg = DiskParams(read=150e6, write=150e6)

    def plain(eng, model):
        block_on(Server(model, "d", agg, 0, MiB).write(1, 0, int(n)))
        return {"t": eng.now}
    assert _timed(plain)[1]["t"] == pytest.approx(n / 150e6, rel=1e-12)


def test_hdd_sequential_accesses_skip_the_seek_random_ones_pay_it():
    p = DiskParams(kind="hdd", read=100e6, write=100e6, latency=0.0, seek=0.008, rpm=7200)

    def body(seq):
        def f(eng, model):
            s = Server(model, "d", p, 0, MiB)
            for i in range(10):
                local = i * 4096 if seq else (9 - i) * 65536
                block_on(s.read(1, local, 4096))
            return {"t": eng.now}
        return _timed(f)[1]["t"]

    per = 4096 / 100e6
    rot = 30.0 / 7200
    assert body(True) == pytest.approx(0.008 + rot + 10 * per, rel=1e-9)  # one seek
    assert body(False) == pytest.approx(10 * (0.008 + rot + per), rel=1e-9)


def test_ssd_channels_overlap_latencies():
    def f(channels):
        def body(eng, model):
            s = Server(model, "d", DiskParams(kind="ssd", read=1e12, latency=1e-4, channels=channels), 0, MiB)
            acts = [s.read(1, i * 4096, 4096) for i in range(8)]
            for a in acts:
                block_on(a)
            return {"t": eng.now}
        return _timed(body)[1]["t"]
    assert f(1) == pytest.approx(8 * (1e-4 + 4096 / 1e12), rel=1e-9)  # one after the other
    assert f(8) == pytest.approx(1e-4 + 8 * 4096 / 1e12, rel=1e-9)  # latencies overlap


# -- collective buffering geometry ---------------------------------------------------------------
def test_file_domains_cover_the_range_aligned_to_stripes():
    d = file_domains(100, 10 * MiB + 100, 4, MiB)
    assert d[0][0] == 100 and d[-1][1] == 10 * MiB + 100
    assert all(a[1] == b[0] for a, b in zip(d, d[1:]))
    assert all(b % MiB == 0 for _a, b in d[:-1])
    assert file_domains(0, 10, 3, 1) == [(0, 4), (4, 8), (8, 10)]


# -- whole runs ------------------------------------------------------------------------------------
PLATFORM = """
name: io
config: {{network/model: raw, smpi/simulate-computation: 'no'}}
hosts:
{hosts}
links:
{links}
routes:
{routes}
filesystems:
  - name: scratch
    kind: parallel
    mount: {root}/scratch
    servers: [{servers}]
    stripe_size: 1MiB
    disk: {{read: 400MBps, write: 400MBps, latency: 0s}}
    cache: {{size: {cache}}}
  - name: local
    kind: local
    mount: {root}/local
    disk: {{read: 100MBps, write: 100MBps, latency: 0s}}
  - name: mem
    kind: virtual
    mount: {root}/mem
    keep: {keep}
    disk: {{read: 100MBps, write: 100MBps, latency: 0s}}
"""


def _platform(tmp_path, nclients=2, nservers=4, bw="1GBps", cache="0", keep="0"):
    clients = [f"c{i}" for i in range(nclients)]
    servers = [f"s{i}" for i in range(nservers)]
    hosts = "\n".join(f"  - {{name: {h}, speed: 1Gf}}" for h in clients + servers)
    links = "\n".join(f"  - {{name: l{h}, bandwidth: {bw}, latency: 0s}}" for h in clients + servers)
    everyone = clients + servers
    routes = "\n".join(f"  - {{src: {a}, dst: {b}, links: [l{a}, l{b}]}}"
                       for i, a in enumerate(everyone) for b in everyone[i + 1:])
    for d in ("scratch", "local", "mem"):
        (tmp_path / d).mkdir(exist_ok=True)
    text = PLATFORM.format(hosts=hosts, links=links, routes=routes, root=tmp_path,
                           servers=", ".join(servers), cache=cache, keep=keep)
    path = tmp_path / "io.yaml"
    path.write_text(text)
    return str(path)


WRITE = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
buf = np.full({n}, comm.rank, np.uint8)
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY)
comm.Barrier()
t0 = MPI.Wtime()
f.Write_at(comm.rank * buf.nbytes, buf)
t = MPI.Wtime() - t0
f.Close()
print(repr(t))
"""


def _times(res):
    assert res.status == "ok", res.message + res.stderr
    return [float(x) for x in res.stdout.split()]


def test_slower_link_slows_a_write_to_the_parallel_fs(tmp_path):
    prog = WRITE.format(n=4 * MiB, path=tmp_path / "scratch" / "f")
    fast = _times(run(None, np=1, platform=_platform(tmp_path, 1, 4, "1GBps", "1GiB"), command=prog,
                      capture=True, echo=False))
    slow = _times(run(None, np=1, platform=_platform(tmp_path, 1, 4, "100MBps", "1GiB"), command=prog,
                      capture=True, echo=False))
    # the cache absorbs everything: the write is the client's link (4 flows of 1 MiB share it)
    assert fast[0] == pytest.approx(4 * MiB / 1e9, abs=WTIME)
    assert slow[0] == pytest.approx(4 * MiB / 100e6, abs=WTIME)


def test_more_servers_speed_a_bandwidth_bound_write(tmp_path):
    prog = WRITE.format(n=16 * MiB, path=tmp_path / "scratch" / "f")
    t = {}
    for k in (1, 2, 4):
        res = run(None, np=1, platform=_platform(tmp_path, 1, k, "100GBps", "0"), command=prog,
                  capture=True, echo=False)
        t[k] = _times(res)[0]
    for k in (1, 2, 4):
        # no cache, pipelined in 1 MiB units: the first units reach the k servers together
        # (k flows share the client's link), then the k disks of 400 MBps are the bottleneck
        assert t[k] == pytest.approx(k * MiB / 100e9 + 16 * MiB / k / 400e6, rel=1e-6), k
    assert t[1] > t[2] > t[4]


def test_io_and_mpi_messages_share_the_links(tmp_path):
    prog = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
buf = np.zeros(8 << 20, np.uint8)
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY)
comm.Barrier()
t0 = MPI.Wtime()
if comm.rank == 0:
    {what}
    f.Write_at(0, buf)
else:
    {other}
t = MPI.Wtime() - t0
f.Close()
print(repr(t))
"""
    path = tmp_path / "scratch" / "f"
    plat = _platform(tmp_path, 2, 1, "1GBps", "1GiB")
    alone = _times(run(None, np=2, platform=plat, capture=True, echo=False,
                       command=prog.format(path=path, what="pass", other="pass")))
    shared = _times(run(None, np=2, platform=plat, capture=True, echo=False, command=prog.format(
        path=path, what="r = comm.Isend(buf, 1)", other="comm.Recv(buf, 0)")))
    # rank 0's link carries the message and the write at once: each gets half of it
    assert max(alone) == pytest.approx(8 * MiB / 1e9, abs=WTIME)
    assert max(shared) == pytest.approx(2 * 8 * MiB / 1e9, abs=WTIME)


def test_np_save_charged_and_virtual_mount_writes_no_disk(tmp_path):
    prog = f"""
import numpy as np, os
from mpi4py import MPI
a = np.arange(10_000_000 // 8, dtype=np.float64)
t0 = MPI.Wtime()
np.save("{tmp_path}/local/a.npy", a)
t1 = MPI.Wtime()
np.save("{tmp_path}/mem/a.npy", a)
t2 = MPI.Wtime()
b = np.load("{tmp_path}/mem/a.npy")
t3 = MPI.Wtime()
with open("{tmp_path}/local/a.npy", "rb") as f:
    f.read()
    os.fsync(f.fileno())
print(repr(t1 - t0), repr(t2 - t1), repr(t3 - t2), int(np.array_equal(a, b)))
"""
    res = run(None, np=1, platform=_platform(tmp_path, keep="20MB"), command=prog, capture=True,
              echo=False)
    save, vsave, vload, same = _times(res)
    assert save >= 0.1 and vsave >= 0.1 and vload >= 0.1
    assert same == 1  # kept in memory (keep: 20MB)
    assert os.path.getsize(tmp_path / "local" / "a.npy") > 10_000_000
    assert os.listdir(tmp_path / "mem") == []


def test_virtual_mount_over_its_limit_discards_and_reads_zeros(tmp_path):
    prog = f"""
with open("{tmp_path}/mem/x", "wb") as f:
    f.write(b"abc" * 1000)
with open("{tmp_path}/mem/x", "rb") as f:
    d = f.read()
print(len(d), d.count(0))
"""
    res = run(None, np=1, platform=_platform(tmp_path, keep="1kB"), command=prog, capture=True,
              echo=False)
    assert res.stdout.split() == ["3000", "3000"]


def test_two_phase_collective_write_matches_independent_contents(tmp_path):
    prog = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
n, r = comm.size, comm.rank
# each rank owns every n-th 4 KiB block: interleaved small pieces
ft = MPI.BYTE.Create_vector(64, 4096, 4096 * n).Commit()
buf = np.full(64 * 4096, r, np.uint8)
info = MPI.Info.Create()
info.Set("romio_cb_write", "{cb}")
info.Set("cb_nodes", "2")
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY, info)
f.Set_view(r * 4096, MPI.BYTE, ft)
comm.Barrier()
t0 = MPI.Wtime()
f.Write_all(buf)
t = MPI.Wtime() - t0
f.Close()
print(repr(t))
"""
    plat = _platform(tmp_path, 4, 2, "1GBps", "0")
    out = {}
    for cb in ("enable", "disable"):
        path = tmp_path / "scratch" / cb
        res = run(None, np=4, platform=plat, capture=True, echo=False,
                  command=prog.format(cb=cb, path=path))
        out[cb] = max(_times(res))
    a = (tmp_path / "scratch" / "enable").read_bytes()
    b = (tmp_path / "scratch" / "disable").read_bytes()
    assert a == b and len(a) == 4 * 64 * 4096
    assert np.array_equal(np.frombuffer(a, np.uint8)[::4096], np.tile(np.arange(4), 64))
    # enable: 2 aggregators each write one contiguous 512 KiB domain; disable: data sieving
    # (read-modify-write of 512 KiB buffers per rank) is far slower
    assert out["enable"] < out["disable"]


def test_aggregators_one_per_host_then_more(tmp_path):
    class P:
        def __init__(self, i):
            self.host = type("H", (), {"index": i})()

    class W:
        processes = [P(h) for h in (0, 0, 1, 1, 2, 2)]
    assert aggregators(W, list(range(6)), 0) == [0, 2, 4]
    assert aggregators(W, list(range(6)), 2) == [0, 2]
    assert aggregators(W, list(range(6)), 5) == [0, 2, 4, 1, 3]


def test_filesystems_schema_errors_name_the_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("hosts: [{name: a, speed: 1Gf}]\nfilesystems:\n"
                 "  - {name: x, kind: parallel, mount: /x}\n")
    with pytest.raises(PlatformError, match=r"filesystems\[0\]\.servers"):
        load_platform(p)
    p.write_text("hosts: [{name: a, speed: 1Gf}]\nfilesystems:\n"
                 "  - {name: x, kind: parallel, mount: /x, servers: [b]}\n")
    with pytest.raises(PlatformError, match=r"filesystems\[0\]\.servers: unknown host 'b'"):
        load_platform(p)
    p.write_text("hosts: [{name: a, speed: 1Gf}]\nfilesystems:\n"
                 "  - {name: x, kind: local, mount: x}\n")
    with pytest.raises(PlatformError, match=r"filesystems\[0\]\.mount"):
        load_platform(p)
    p.write_text(json.dumps({"hosts": [{"name": "a", "speed": "1Gf"}], "filesystems": [
        {"name": "x", "kind": "local", "mount": "/x", "disk": {"kind": "ssd", "seek": "1ms"}}]}))
    with pytest.raises(PlatformError, match=r"filesystems\[0\]\.disk\.seek"):
        load_platform(p)
    for disk, field in (({"write": "100MBps", "write_stream": "200MBps"}, "write_stream"),
                        ({"read_stream": "0Bps"}, "read_stream")):
        p.write_text(json.dumps({"hosts": [{"name": "a", "speed": "1Gf"}], "filesystems": [
            {"name": "x", "kind": "local", "mount": "/x", "disk": disk}]}))
        with pytest.raises(PlatformError, match=rf"filesystems\[0\]\.disk\.{field}: "):
            load_platform(p)
    p.write_text(json.dumps({"hosts": [{"name": "a", "speed": "1Gf"}], "filesystems": [
        {"name": "x", "kind": "local", "mount": "/x",
         "disk": {"write": "150MBps", "write_stream": "100MBps"}}]}))
    (fs,) = load_platform(p).filesystems
    assert (fs.disk.write, fs.disk.write_stream, fs.disk.read_stream) == (150e6, 100e6, 0.0)


def test_report_gives_per_file_rank_and_server_figures(tmp_path):
    prog = WRITE.format(n=4 * MiB, path=tmp_path / "scratch" / "f")
    prefix = tmp_path / "rep"
    res = run(None, np=2, platform=_platform(tmp_path, 2, 4, "1GBps", "0"), command=prog,
              capture=True, echo=False, cfg={"smpy/report": str(prefix)})
    assert res.status == "ok"
    io = json.loads((tmp_path / "rep.json").read_text())["io"]
    f = io["files"][str(tmp_path / "scratch" / "f")]
    t = f.pop("time_s")
    assert f == {"bytes_written": 8 * MiB, "bytes_read": 0, "operations": 2}
    assert 0 < t <= 2 * res.makespan_s  # two ranks blocked in the open, write and close
    assert io["ranks"]["1"]["bytes_written"] == 4 * MiB
    servers = io["servers"]
    assert sum(s["bytes_written"] for s in servers.values()) == 8 * MiB
    # each server: 2 MiB through a 400 MBps disk (metadata operations take no time here)
    for s in servers.values():
        assert s["disk_busy_s"] == pytest.approx(2 * MiB / 400e6, rel=1e-9)
        assert s["disk_busy_s"] <= res.makespan_s


def test_simgrid_xml_disk_mount_becomes_a_local_file_system(tmp_path):
    disk = ('<disk id="d{i}" read_bw="100MBps" write_bw="{w}"><prop id="size" value="1GiB"/>'
            '<prop id="mount" value="/scratch"/></disk>')
    xml = ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
           '<platform version="4.1"><zone id="z" routing="Full">'
           '<host id="h0" speed="1Gf">' + disk.format(i=0, w="50MBps") + '</host>'
           '<host id="h1" speed="1Gf">' + disk.format(i=1, w="{w1}") + '</host>'
           '<link id="l" bandwidth="1GBps" latency="10us"/>'
           '<route src="h0" dst="h1"><link_ctn id="l"/></route></zone></platform>\n')
    p = tmp_path / "p.xml"
    p.write_text(xml.replace("{w1}", "50MBps"))
    (fs,) = load_platform(p).filesystems
    assert (fs.kind, fs.mount, fs.disk.read, fs.disk.write, fs.disk.latency) == (
        "local", "/scratch", 100e6, 50e6, 0.0)
    p.write_text(xml.replace("{w1}", "60MBps"))
    with pytest.raises(PlatformError, match="differ in bandwidth"):
        load_platform(p)


@pytest.mark.parametrize("mode", [["-a", "posix"], ["-a", "mpiio", "-c", "-e"], ["-a", "mpiio", "-F"]])
def test_ior_example_runs_and_reports_bandwidths(tmp_path, mode):
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "examples" / "io" / "ior.py"
    res = run(str(script), np=4, platform=_platform(tmp_path, 4, 2, "1GBps", "64MiB"), capture=True,
              echo=False, args=[*mode, "-b", "1m", "-t", "256k", "-o", str(tmp_path / "scratch" / "t")])
    assert res.status == "ok", res.message + res.stderr
    lines = res.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["write", "read"]
    assert all(float(ln.split()[1]) > 0 for ln in lines)
    assert os.listdir(tmp_path / "scratch") == []  # the benchmark removes its files


def test_os_level_io_on_a_virtual_mount_stays_in_memory(tmp_path):
    prog = f"""
import os
from mpi4py import MPI
p = "{tmp_path}/mem/d.bin"
fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
t0 = MPI.Wtime()
os.pwrite(fd, b"xy" * 500_000, 0)
os.write(fd, b"z")
os.fsync(fd)
t1 = MPI.Wtime()
os.close(fd)
fd = os.open(p, os.O_RDONLY)
a = os.pread(fd, 2, 0)
os.lseek(fd, 999_999, os.SEEK_SET)
b = os.read(fd, 10)
os.close(fd)
print(repr(t1 - t0), a.decode(), b.decode())
"""
    res = run(None, np=1, platform=_platform(tmp_path, keep="2MB"), command=prog, capture=True,
              echo=False)
    assert res.status == "ok", res.message + res.stderr
    t, a, b = res.stdout.split()
    # os.write writes at position 0 (pwrite does not move it): 1 MB + 1 B at 100 MBps
    assert float(t) == pytest.approx(1_000_001 / 100e6, abs=WTIME)
    assert (a, b) == ("zy", "y")  # byte 0 overwritten by "z", the rest kept, the size 1 MB
    assert os.listdir(tmp_path / "mem") == []


def test_default_file_system_times_paths_outside_every_mount(tmp_path):
    plat = tmp_path / "d.yaml"
    plat.write_text("config: {smpi/simulate-computation: 'no'}\nhosts: [{name: a, speed: 1Gf}]\n"
                    "filesystems:\n  - {name: home, kind: local, mount: /nonexistent-mount, default: true,"
                    " disk: {read: 10MBps, write: 10MBps}}\n")
    prog = f"""
from mpi4py import MPI
t0 = MPI.Wtime()
with open("{tmp_path}/out.bin", "wb") as f:
    f.write(bytes(1_000_000))
print(repr(MPI.Wtime() - t0))
"""
    res = run(None, np=1, platform=str(plat), command=prog, capture=True, echo=False)
    assert _times(res)[0] == pytest.approx(0.1, abs=WTIME)  # 1 MB at 10 MBps


def test_the_documented_filesystems_fragment_loads(tmp_path):
    import re
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "platforms.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "\nfilesystems:" in b)
    p = tmp_path / "fs.yaml"
    p.write_text("clusters: [{name: c, prefix: io-, suffix: '', radical: 0-3, speed: 1Gf, "
                 "bandwidth: 1GBps, latency: 0s}]\n" + block)
    fss = {f.name: f for f in load_platform(p).filesystems}
    assert fss["scratch"].servers == ("io-0", "io-1", "io-2", "io-3")
    assert (fss["scratch"].stripe_size, fss["scratch"].cache) == (MiB, 2 << 30)
    assert fss["local"].disk.kind == "ssd" and fss["ckpt"].virtual


def test_collective_reads_and_nonblocking_calls_on_a_parallel_fs(tmp_path):
    prog = f"""
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
n, r = comm.size, comm.rank
ft = MPI.BYTE.Create_vector(16, 1024, 1024 * n).Create_resized(0, 16 * 1024 * n).Commit()
f = MPI.File.Open(comm, "{tmp_path}/scratch/g", MPI.MODE_CREATE | MPI.MODE_RDWR)
f.Set_view(r * 1024, MPI.BYTE, ft)
req = f.Iwrite_all(np.full(16 * 1024, r + 1, np.uint8))
req.Wait()
f.Write_all_begin(np.full(16 * 1024, r + 11, np.uint8))
f.Write_all_end(np.empty(0, np.uint8))
f.Sync()
comm.Barrier()
got = np.zeros(32 * 1024, np.uint8)
f.Read_at_all(0, got)
f.Close()
print(r, int(got[0]), int(got[16 * 1024]), int((got[:16 * 1024] == r + 1).all()),
      int((got[16 * 1024:] == r + 11).all()))
"""
    res = run(None, np=4, platform=_platform(tmp_path, 4, 2, "1GBps", "1MiB"), command=prog,
              capture=True, echo=False)
    assert res.status == "ok", res.message + res.stderr
    rows = sorted(tuple(map(int, ln.split())) for ln in res.stdout.splitlines())
    assert rows == [(r, r + 1, r + 11, 1, 1) for r in range(4)]


def test_two_phase_exchange_is_messages_between_the_ranks(tmp_path):
    # one aggregator (rank 0, host c0); rank 1 (host c1) owns every other 4 KiB block: its
    # 256 KiB travel to rank 0 as a point-to-point message of the runtime before the write,
    # and back from rank 0 after the read (trace flows), and the contents are MPICH's
    prog = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
n, r = comm.size, comm.rank
ft = MPI.BYTE.Create_vector(64, 4096, 4096 * n).Commit()
info = MPI.Info.Create()
for k in ("romio_cb_write", "romio_cb_read"):
    info.Set(k, "enable")
info.Set("cb_nodes", "1")
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_RDWR, info)
f.Set_view(r * 4096, MPI.BYTE, ft)
f.Write_all(np.full(64 * 4096, r + 1, np.uint8))
got = np.zeros(64 * 4096, np.uint8)
f.Seek(0)
f.Read_all(got)
f.Close()
print(int((got == r + 1).all()))
"""
    path = tmp_path / "scratch" / "tp"
    trace = tmp_path / "t.json"
    res = run(None, np=2, platform=_platform(tmp_path, 2, 2), capture=True, echo=False,
              command=prog.format(path=path), cfg={"smpi/simulate-computation": "no"}, trace=str(trace))
    assert _times(res) == [1.0, 1.0]
    data = np.frombuffer(path.read_bytes(), np.uint8)
    assert len(data) == 2 * 64 * 4096 and np.array_equal(data[::4096], np.tile([1, 2], 64))
    events = json.loads(trace.read_text())
    flows = [(e["tid"], e["args"]["bytes"]) for e in events if e["ph"] == "s"]
    assert flows.count((1, 64 * 4096)) == 1  # rank 1's pieces to the aggregator (write)
    assert flows.count((0, 64 * 4096)) == 1  # and back to rank 1 (read)
    # the aggregator learnt rank 1's 64 pieces: their offsets and their lengths (8 B each)
    assert flows.count((1, 64 * 8)) == 4


REMOTE_XML = ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
              '<platform version="4.1"><config><prop id="network/model" value="raw"/><prop id="smpi/simulate-computation" value="no"/></config>'
              '<zone id="z" routing="Full">'
              '<host id="c" speed="1Gf"><prop id="remote_disk" value="{value}"/></host>'
              '<host id="s" speed="1Gf"><disk id="d" read_bw="100MBps" write_bw="40MBps">'
              '<prop id="mount" value="{mount}"/></disk></host>'
              '<link id="l" bandwidth="100MBps" latency="0s"/>'
              '<route src="c" dst="s"><link_ctn id="l"/></route></zone></platform>\n')


def test_simgrid_xml_remote_disk_is_reached_over_the_network(tmp_path):
    (tmp_path / "scratch").mkdir()
    mount = f"{tmp_path}/scratch"
    p = tmp_path / "p.xml"
    p.write_text(REMOTE_XML.format(value=f"{mount}:d:s", mount=mount))
    (fs,) = load_platform(p).filesystems
    assert (fs.kind, fs.mount, fs.servers, fs.disk.write, fs.disk.latency) == (
        "parallel", mount, ("s",), 40e6, 0.0)
    n = 8 * MiB
    prog = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
buf = np.zeros({n}, np.uint8)
f = MPI.File.Open(MPI.COMM_SELF, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY)
comm.Barrier()
t0 = MPI.Wtime()
if comm.rank == 0:
    {what}
    f.Write_at(0, buf)
else:
    comm.Recv(buf, 0)
t = MPI.Wtime() - t0
f.Close()
print(repr(t))
"""
    alone = _times(run(None, np=1, platform=str(p), capture=True, echo=False,
                       command=prog.format(n=n, path=f"{mount}/f{{comm.rank}}", what="pass")))
    # SimGrid's File::write on a remote disk: the bytes cross the link, then the disk writes them
    assert alone[0] == pytest.approx(n / 100e6 + n / 40e6, abs=WTIME)
    shared = _times(run(None, np=2, platform=str(p), capture=True, echo=False,
                        command=prog.format(n=n, path=f"{mount}/f{{comm.rank}}",
                                            what="r = comm.Isend(buf, 1)")))
    # the message to s and the write's bytes share link l, then the disk alone
    recv, write = sorted(shared)
    assert write == pytest.approx(2 * n / 100e6 + n / 40e6, abs=WTIME)
    assert recv == pytest.approx(2 * n / 100e6, rel=1e-5)  # plus the receiver's overheads


@pytest.mark.parametrize("value, message", [
    ("/scratch:d", "expected 'MOUNTPOINT:DISK:HOST'"),
    ("/scratch:e:s", "host 's' has no disk 'e'"),
    ("/scratch:d:x", "no host 'x' with a <disk>"),
])
def test_simgrid_xml_remote_disk_errors_name_host_and_property(tmp_path, value, message):
    p = tmp_path / "p.xml"
    p.write_text(REMOTE_XML.format(value=value, mount="/other"))
    with pytest.raises(PlatformError) as err:
        load_platform(p)
    text = str(err.value)
    assert "\n" not in text and "host 'c' property 'remote_disk'" in text and message in text, text


def test_cancel_withdraws_running_queued_and_cache_waiting_operations():
    """A killed rank's operations (smpy.runtime.fsio.cancel_owned): on an SSD taking one
    operation at a time, a (running) and b (queued) of 1 MB each are cancelled at 5 ms, so c
    runs 5-15 ms and a sync issued at 0 ends with it; with a 1 MB cache, a 3 MB write waiting
    for room is cancelled at 5 ms and the 1 MB write behind it gets the room at the first
    flush, 10 ms (30 ms otherwise)."""
    def body(eng, model):
        s = Server(model, "s", DiskParams(kind="ssd", write=100e6, latency=0.0, channels=1), 0, MiB)
        clock = Server(model, "clock", DiskParams(write=100e6), 0, MiB)
        a, b, c = (s.write(1, k * 10**6, 10**6) for k in range(3))
        synced = s.sync()
        block_on(clock.write(1, 0, 5 * 10**5))
        s.cancel(a)
        s.cancel(b)
        block_on(c)
        t_c = eng.now
        block_on(synced)
        out = {"c": t_c, "sync": eng.now, "ab": (a.done, b.done)}
        cached = Server(model, "cached", DiskParams(write=100e6), 10**6, MiB)
        t0 = eng.now
        w1 = cached.write(1, 0, 3 * 10**6)
        w2 = cached.write(1, 3 * 10**6, 10**6)
        block_on(clock.write(1, 0, 5 * 10**5))
        cached.cancel(w1)
        block_on(w2)
        out.update(w2=eng.now - t0, w1=w1.done)
        return out

    _eng, out = _timed(body)
    assert out["c"] == pytest.approx(0.015, rel=1e-12) and out["sync"] == out["c"]
    assert out["ab"] == (False, False) and out["w1"] is False
    assert out["w2"] == pytest.approx(0.01, rel=1e-12)
