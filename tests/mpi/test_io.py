"""MPI-IO (``MPI.File``): behaviour against real mpi4py on MPICH, real files, modelled time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from realmpi import real_env, run_reference

import smpy
from smpy.kernel.engine import Engine
from smpy.platform.loader import load_platform_data
from smpy.runtime import io as rio
from smpy.runtime.datatype import BY_NAME
from smpy.storage import Disk, StorageModel

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
VENV_BIN = Path(sys.executable).parent


def _results(d: Path, np_: int) -> dict[int, list]:
    out = {}
    for r in range(np_):
        j = json.loads((d / f"out{r}.json").read_text())
        out[j["rank"]] = j["results"]
    return out


def _run_smpy(tmp: Path, np_: int) -> dict[int, list]:
    d = tmp / f"smpy{np_}"
    d.mkdir()
    res = smpy.run(str(PROGRAMS / "mpiio.py"), np=np_, args=[str(d)], capture=True)
    assert res.status == "ok", res.message
    return _results(d, np_)


def _run_mpich(tmp: Path, np_: int) -> dict[int, list]:
    d = tmp / f"mpich{np_}"
    d.mkdir()
    run_reference(np_, str(PROGRAMS / "mpiio.py"), str(d), env=real_env(), timeout=180)
    return _results(d, np_)


@pytest.mark.slow
@pytest.mark.parametrize("np_", [1, 2])
def test_file_operations_match_mpich(tmp_path: Path, np_: int) -> None:
    ours = _run_smpy(tmp_path, np_)
    real = _run_mpich(tmp_path, np_)
    for r in range(np_):
        assert dict((k[0], k[1:]) for k in ours[r]) == dict((k[0], k[1:]) for k in real[r]), f"rank {r}"
        assert [k[0] for k in ours[r]] == [k[0] for k in real[r]]


def test_file_operations_known_values(tmp_path: Path) -> None:
    """What MPICH answers (checked by the test above), without needing MPICH here."""
    res = _run_smpy(tmp_path, 2)
    r0 = {k[0]: k[1:] for k in res[0]}
    r1 = {k[0]: k[1:] for k in res[1]}
    assert r0["open-missing"] == ["ERR", 37]  # ERR_NO_SUCH_FILE
    assert r0["open-no-access-mode"] == ["ERR", 21]  # ERR_AMODE
    assert r0["excl"] == ["ERR", 25]  # ERR_FILE_EXISTS
    assert r0["write-rdonly"] == ["ERR", 40] and r0["read-wronly"] == ["ERR", 20]
    assert r0["close-again"] == ["ERR", 27] and r0["seek-neg"] == ["ERR", 12]
    assert r0["set-view-datarep"] == ["ERR", 43]
    assert r0["delete-again"] == ["ERR", 37]
    assert r1["read_at-past-eof"] == [[0, 1, 2, 3, 10, 11, 12, 13, -1, -1]]
    assert r1["read_at-count"] == [8]
    assert r0["read_ordered"] == [[100]] and r1["read_ordered"] == [[101, 101]]
    assert r0["pos-shared1"] == [3] and r1["pos-shared-end"] == [8] and r1["pos-shared2"] == [10]
    assert r0["read_all"] == [[1, 1, 1, 2, 2, 2, 50, 51]]
    assert r1["read_at_all_end"] == [[[2, 2, 2], 3]]
    assert r0["dint-byte-offset"] == [[0, 11, 16, 17, 33]]
    assert r0["preallocate-big"] == [1000]
    assert r0["deleted-on-close"] == [False]
    # the real file holds the bytes the program wrote (holes blanked)
    assert r0["contents"] == [(b"\0\0\0\1\0\0\0\2\0\0\0\3" + bytes.fromhex("3ff8000000000000")).hex()]  # ext32
    assert r0["dint-contents"] == [bytes(range(1, 13)).hex() + b"....".hex()
                              + bytes(range(13, 25)).hex() + b"....".hex()
                              + bytes(range(25, 31)).hex()]


def test_typemap_offsets_of_padded_pair() -> None:
    dint = BY_NAME["MPI_DOUBLE_INT"]
    m = rio.typemap_offsets(dint)
    assert m is not None and m.tolist() == list(range(12))
    assert rio.typemap_offsets(BY_NAME["MPI_INT"]) is None
    v = rio.View(4, BY_NAME["MPI_BYTE"], dint, "native")
    assert v.segments(0, 30) == [(4, 12), (20, 12), (36, 6)]
    assert v.segments(10, 4) == [(14, 2), (20, 2)]
    assert v.eof_offset(4) == 0 and v.eof_offset(20) == 12 and v.eof_offset(22) == 14


def _ops(model: StorageModel, engine: Engine, specs: list[tuple[Disk, float, bool]]) -> list[float]:
    ops = [model.io(d, n, w) for d, n, w in specs]
    engine.run()
    assert all(op.done for op in ops)
    return [op.finish_time for op in ops]


def test_storage_model_times() -> None:
    engine = Engine()
    disk = Disk("d", read_bw=2e9, write_bw=1e9, latency=1e-4)
    model = StorageModel(engine, [disk])
    # alone: latency + n / bandwidth
    assert _ops(model, engine, [(disk, 1e8, True)]) == pytest.approx([1e-4 + 0.1])
    t0 = engine.now
    # two writes share the write bandwidth; a read beside them gets what the combined bound
    # max(R, W) = 2 GB/s leaves (SimGrid's DiskS19): 1 GB/s while they run, 2 GB/s after
    t = _ops(model, engine, [(disk, 1e8, True), (disk, 1e8, True), (disk, 3e8, False)])
    assert [x - t0 for x in t] == pytest.approx([1e-4 + 0.2, 1e-4 + 0.2, 1e-4 + 0.25])
    t0 = engine.now
    # unequal sizes: max-min sharing, the short one leaves the whole bandwidth to the other
    t = _ops(model, engine, [(disk, 1e8, True), (disk, 3e8, True)])
    assert [x - t0 for x in t] == pytest.approx([1e-4 + 0.2, 1e-4 + 0.4])
    t0 = engine.now
    assert [x - t0 for x in _ops(model, engine, [(disk, 0, True)])] == pytest.approx([1e-4])


def test_storage_section_of_platforms() -> None:
    hosts = [{"name": n, "speed": "1Gf"} for n in ("a", "b", "c")]
    links = [{"name": "l", "bandwidth": "1GBps"}]
    routes = [{"src": s, "dst": d, "links": ["l"]} for s, d in (("a", "b"), ("a", "c"), ("b", "c"))]
    p = load_platform_data({"hosts": hosts, "links": links, "routes": routes, "storage": [
        {"name": "nfs", "hosts": ["a"], "read_bandwidth": "500MBps", "write_bandwidth": "250MBps",
         "latency": "1ms"},
        {"name": "ssd", "per_host": True}]})
    assert [(d.name, d.hosts, d.read_bw, d.write_bw, d.latency) for d in p.disks] == [
        ("nfs", ("a",), 5e8, 2.5e8, 1e-3), ("ssd-b", ("b",), 2e9, 1e9, 1e-4), ("ssd-c", ("c",), 2e9, 1e9, 1e-4)]
    model = StorageModel(Engine(), p.disks)
    assert model.disk_of("a").name == "nfs" and model.disk_of("c").name == "ssd-c"
    from smpy.platform.schema import PlatformError
    with pytest.raises(PlatformError, match=r"storage\[0\]\.hosts: unknown host 'q'"):
        load_platform_data({"hosts": hosts[:1], "storage": [{"name": "x", "hosts": ["q"]}]})


IO_TIME = """
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
n = int(sys.argv[2])
fh = MPI.File.Open(comm, sys.argv[1], MPI.MODE_WRONLY | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
buf = np.zeros(n, dtype="B")
comm.Barrier()
t0 = MPI.Wtime()
fh.Write_at_all(comm.rank * n, buf)
t1 = MPI.Wtime()
if comm.rank == 0:
    t2 = MPI.Wtime()
    fh.Write_at(0, buf)
    print(f"solo {MPI.Wtime() - t2:.6f}")
print(f"all {comm.rank} {t1 - t0:.6f}")
fh.Close()
"""


def test_io_time_follows_the_storage_model(tmp_path: Path) -> None:
    prog = tmp_path / "iotime.py"
    prog.write_text(IO_TIME)
    n = 10_000_000
    # no simulated computation: the times are those of the model alone (deterministic)
    res = smpy.run(str(prog), np=2, args=[str(tmp_path / "f.bin"), str(n)], capture=True,
                   cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    lines = dict(line.rsplit(" ", 1) for line in res.stdout.splitlines())
    # alone: 100 us + 10 MB / 1 GB/s; both ranks at once share the shared disk
    assert float(lines["solo"]) == pytest.approx(1e-4 + n / 1e9, rel=1e-4)
    for r in (0, 1):
        assert float(lines[f"all {r}"]) >= 1e-4 + 2 * n / 1e9
        assert float(lines[f"all {r}"]) == pytest.approx(1e-4 + 2 * n / 1e9, rel=0.05)
    assert (tmp_path / "f.bin").exists() is False


def test_real_file_written_is_readable_outside(tmp_path: Path) -> None:
    prog = tmp_path / "out.py"
    target = tmp_path / "result.dat"
    prog.write_text(
        "import sys\nimport numpy as np\nfrom mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "fh = MPI.File.Open(c, sys.argv[1], MPI.MODE_WRONLY | MPI.MODE_CREATE)\n"
        "fh.Set_view(0, MPI.DOUBLE)\n"
        "fh.Write_ordered(np.arange(c.rank + 1, dtype='d') + 10 * c.rank)\n"
        "fh.Close()\n")
    res = smpy.run(str(prog), np=3, args=[str(target)], capture=True)
    assert res.status == "ok", res.message
    assert np.fromfile(target, dtype="d").tolist() == [0.0, 10.0, 11.0, 20.0, 21.0, 22.0]


ERRHANDLERS = """
import os, sys
from mpi4py import MPI
d = sys.argv[1]
r = MPI.COMM_WORLD.rank
fn = os.path.join(d, f"eh-{r}.bin")
log = []
eh = MPI.File.Create_errhandler(lambda f, code: log.append((type(f).__name__, f == MPI.FILE_NULL,
                                                            MPI.Get_error_class(code))))
f = MPI.File.Open(MPI.COMM_SELF, fn, MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
f.Set_errhandler(eh)
out = [f.Get_errhandler() == eh, f.Seek(-1)]
f.Call_errhandler(MPI.ERR_OTHER)
f.Set_errhandler(MPI.ERRORS_RETURN)
f.Close()
MPI.FILE_NULL.Set_errhandler(eh)
g = MPI.File.Open(MPI.COMM_SELF, fn + ".missing", MPI.MODE_RDONLY)
out += [type(g).__name__, g == MPI.FILE_NULL]
g = MPI.File.Open(MPI.COMM_SELF, fn, MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
out += [g.Get_errhandler() == eh, g.Get_errhandler() == MPI.ERRORS_RETURN]
MPI.FILE_NULL.Set_errhandler(MPI.ERRORS_RETURN)
g.Set_errhandler(MPI.ERRORS_ARE_FATAL)
print(repr([out, log]), flush=True)
MPI.COMM_WORLD.Barrier()
if r == 1:
    g.Seek(-1)
MPI.COMM_WORLD.Barrier()
print("not reached")
"""


def test_file_error_handlers(tmp_path: Path) -> None:
    """What MPICH does (seen with mpiexec): a user handler runs and the call returns; errors
    of Open go to FILE_NULL's handler, Open then returns a null File; new files get
    ERRORS_RETURN whatever FILE_NULL has; ERRORS_ARE_FATAL aborts."""
    prog = tmp_path / "eh.py"
    prog.write_text(ERRHANDLERS)
    res = smpy.run(str(prog), np=2, args=[str(tmp_path)], capture=True)
    assert res.status == "abort"
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("[[")]
    assert lines == [repr([[True, None, "File", True, False, True],
                           [("File", False, 12), ("File", False, 15), ("File", True, 37)]])] * 2
    assert "not reached" not in res.stdout


def test_info_aggregators_follow_the_placement(tmp_path: Path) -> None:
    """ROMIO's default hints: one aggregator (the first rank) per node of the group."""
    prog = tmp_path / "info.py"
    prog.write_text(
        "import sys\nfrom mpi4py import MPI\n"
        "f = MPI.File.Open(MPI.COMM_WORLD, sys.argv[1], MPI.MODE_RDWR | MPI.MODE_CREATE"
        " | MPI.MODE_DELETE_ON_CLOSE)\n"
        "i = f.Get_info()\n"
        "print(MPI.COMM_WORLD.rank, i.Get('cb_nodes'), repr(i.Get('romio_aggregator_list')),"
        " i.Get('cb_buffer_size'))\n"
        "f.Close()\n")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-0\nnode-0\nnode-1\n")
    res = smpy.run(str(prog), np=3, args=[str(tmp_path / "x.bin")], hostfile=str(hostfile), capture=True)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == [f"{r} 2 '0 2 ' 16777216" for r in range(3)]


DISK_XML = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Full">
    <host id="bob" speed="1Gf">
      <disk id="Disk1" read_bw="100MBps" write_bw="40MBps"><prop id="mount" value="/scratch"/></disk>
    </host>
    <host id="alice" speed="1Gf"/>
    <link id="l" bandwidth="125MBps" latency="50us"/>
    <route src="bob" dst="alice"><link_ctn id="l"/></route>
  </zone>
</platform>
"""


def test_simgrid_disks_become_storage(tmp_path: Path) -> None:
    from smpy.platform.loader import load_platform
    from smpy.platform.schema import PlatformError
    xml = tmp_path / "disk.xml"
    xml.write_text(DISK_XML)
    p = load_platform(xml)
    assert [(d.name, d.hosts, d.read_bw, d.write_bw) for d in p.disks] == [("Disk1", ("bob",), 1e8, 4e7)]
    xml.write_text(DISK_XML.replace("</disk>", "</disk><disk id='D2' read_bw='1GBps' write_bw='1GBps'/>"))
    with pytest.raises(PlatformError, match="one disk per host"):
        load_platform(xml)


class _Scattered:
    """A stand-in derived datatype: data bytes at ``disps`` (typemap order), given extent."""

    def __init__(self, disps: list[int], extent: int) -> None:
        self.disps = disps
        self.size = len(disps)
        self.lb, self.extent = 0, extent
        self.true_lb = min(disps)
        self.true_extent = max(disps) + 1 - self.true_lb
        self.contiguous = False
        self.committed = True

    def pack(self, mem: memoryview, offset: int, count: int) -> bytes:
        assert count == 1
        return bytes(mem[offset + d] for d in self.disps)


def _reference_segments(view: rio.View, start: int, n: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for k in range(start, start + n):
        off = view.byte_offset(k)
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((off, 1))
    return out


@pytest.mark.parametrize("disps,extent", [
    ([0, 1, 2, 3, 8, 9, 10, 11], 16),     # two blocks
    ([3, 4, 5, 6, 7, 10, 11], 12),        # offset start, contiguous with the next instance's?
    ([1, 3, 5, 7], 8),                    # every other byte: many runs
    ([0, 1, 2, 3], 4),                    # contiguous after all
    ([0, 1, 300, 301, 302], 1024),        # sparse: the per-run path
])
def test_views_read_and_write_like_a_byte_by_byte_model(tmp_path: Path, disps: list[int], extent: int) -> None:
    ft = _Scattered(disps, extent)
    m = rio.typemap_offsets(ft)  # type: ignore[arg-type]
    view = rio.View(5, BY_NAME["MPI_BYTE"], ft, "native")  # type: ignore[arg-type]
    assert (m.tolist() if m is not None else list(range(len(disps)))) == disps
    for start, n in ((0, 1), (0, 100), (3, 250), (7, 1000)):
        assert view.segments(start, n) == _reference_segments(view, start, n)
    # real I/O through a FileHandle: the covering-buffer path and the per-run path agree
    # with a byte-by-byte model of the file
    path = tmp_path / "v.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        shared = rio.FileShared(str(path), fd, rio.MODE_RDWR, _FakeComm(), {})  # type: ignore[arg-type]
        fh = rio.FileHandle(shared, view, 1)
        model = bytearray(400_000)  # holes read as zeros
        model[:3000] = b"\xee" * 3000
        os.pwrite(fd, bytes(model[:3000]), 0)
        rng = np.random.default_rng(len(disps) * 7 + extent)
        for start, n in ((0, 700), (11, 5), (40, 1500), (0, 3)):
            data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            assert fh.write_bytes(start, data) == n
            for k in range(n):
                model[view.byte_offset(start + k)] = data[k]
            size = os.fstat(fd).st_size
            assert size == max(3000, max(view.byte_offset(start + k) for k in range(n)) + 1, size)
            assert os.pread(fd, size, 0) == bytes(model[:size])
            assert fh.read_bytes(start, n) == data
        # a read past the end of the file stops there
        size = os.fstat(fd).st_size
        total = sum(1 for k in range(5000) if view.byte_offset(k) < size)
        got = fh.read_bytes(0, 5000)
        assert len(got) == total and got == bytes(model[view.byte_offset(k)] for k in range(total))
    finally:
        os.close(fd)


class _FakeComm:
    group = [0]
    size = 1
