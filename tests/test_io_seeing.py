"""Seeing file I/O (issue 20 item 7): the timeline, --report (per file, rank, server, with
time), the HTML report, and time-independent traces that record file operations with smpy's
own actions and replay to the same simulated time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.cli.launch import run

MiB = 1 << 20

PLATFORM = """\
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
    servers: [s0, s1]
    metadata_server: s0
    stripe_size: 64KiB
    disk: {{kind: hdd, read: 200MBps, write: 150MBps, latency: 1ms, seek: 4ms, rpm: 7200}}
    cache: {{size: 1MiB}}
  - name: local
    kind: local
    mount: {root}/local
    disk: {{read: 100MBps, write: 80MBps, latency: 100us}}
"""

PROG = """\
import os
import sys
import numpy as np
from mpi4py import MPI
root = sys.argv[1]
comm = MPI.COMM_WORLD
r = comm.rank
a = np.arange(20000, dtype=np.float64) + r
np.save(f"{root}/local/a{r}.npy", a)
b = np.load(f"{root}/local/a{r}.npy")
fd = os.open(f"{root}/local/raw{r}", os.O_CREAT | os.O_WRONLY)
os.write(fd, b"x" * 300000)
os.fsync(fd)
os.close(fd)
info = MPI.Info.Create()
info.Set("cb_nodes", "1")
f = MPI.File.Open(comm, f"{root}/scratch/shared", MPI.MODE_CREATE | MPI.MODE_RDWR, info)
f.Write_at(r * 100000, np.full(100000, r, np.uint8))
ft = MPI.BYTE.Create_vector(50, 1000, 1000 * comm.size).Commit()
f.Set_view(200000 * comm.size + 1000 * r, MPI.BYTE, ft)
f.Write_all(np.full(50000, r, np.uint8))
f.Sync()
got = np.empty(50000, np.uint8)
f.Read_at_all(0, got)
f.Set_view(0, MPI.BYTE, MPI.BYTE)
f.Read_at(r * 100000, np.empty(100000, np.uint8))
f.Close()
comm.Barrier()
print(r, int(got.sum()), float(b.sum()))
"""


def _platform(tmp_path: Path, clients: int = 3) -> str:
    names = [f"c{i}" for i in range(clients)] + ["s0", "s1"]
    hosts = "\n".join(f"  - {{name: {h}, speed: 1Gf}}" for h in names)
    links = "\n".join(f"  - {{name: l{h}, bandwidth: 500MBps, latency: 20us}}" for h in names)
    routes = "\n".join(f"  - {{src: {a}, dst: {b}, links: [l{a}, l{b}]}}"
                       for i, a in enumerate(names) for b in names[i + 1:])
    for d in ("scratch", "local"):
        (tmp_path / d).mkdir(exist_ok=True)
    p = tmp_path / "io.yaml"
    p.write_text(PLATFORM.format(hosts=hosts, links=links, routes=routes, root=tmp_path))
    return str(p)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seeing")
    plat = _platform(tmp)
    prog = tmp / "prog.py"
    prog.write_text(PROG)
    res = run(str(prog), np=3, platform=plat, args=[str(tmp)], capture=True, echo=False,
              trace=str(tmp / "trace.json"),
              cfg={"smpy/trace-ti": str(tmp / "run.ti"), "smpy/report": str(tmp / "rep"),
                   "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message + res.stderr
    return tmp, plat, res


def test_report_has_per_file_rank_and_server_time(recorded):
    tmp, _plat, res = recorded
    io = json.loads((tmp / "rep.json").read_text())["io"]
    shared = io["files"][str(tmp / "scratch" / "shared")]
    assert shared["bytes_written"] == 3 * 100000 + 3 * 50000
    assert shared["bytes_read"] == 3 * 100000 + 3 * 50000
    assert 0 < shared["time_s"] <= 3 * res.makespan_s
    raw = io["files"][str(tmp / "local" / "raw1")]
    assert raw["bytes_written"] == 300000 and raw["operations"] == 1
    # the write (absorbed: no cache? 80 MBps disk, no cache -> 300000/80e6) + open + fsync
    assert raw["time_s"] >= 300000 / 80e6
    for r in ("0", "1", "2"):
        row = io["ranks"][r]
        assert row["time_s"] > 0 and row["bytes_written"] > 450000
    # the rank's I/O time is the sum over its files
    files_of_1 = [v["time_s"] for k, v in io["files"].items() if k.endswith(("a1.npy", "raw1"))]
    assert sum(files_of_1) < io["ranks"]["1"]["time_s"]
    assert {"s0", "s1"} <= {k.split("@")[1] for k in io["servers"]}
    assert all(s["disk_busy_s"] >= 0 for s in io["servers"].values())


def test_timeline_shows_python_and_mpi_file_operations(recorded):
    tmp, _plat, _res = recorded
    events = json.loads((tmp / "trace.json").read_text())
    names = {e.get("name") for e in (events["traceEvents"] if isinstance(events, dict) else events)}
    assert {"file_open", "file_write", "file_read", "file_sync"} <= names
    assert any(n and "File" in n and "write" in n.lower() for n in names)
    from smpy.trace.plots import call_kind
    assert call_kind("mpi", "file_write") == "I/O" and call_kind("mpi", "MPI_File_write_all") == "I/O"


def test_html_report_lists_files(recorded, tmp_path):
    pytest.importorskip("matplotlib")
    tmp, _plat, _res = recorded
    from smpy.trace.plots import html_report
    page = html_report([], tmp / "rep.json", tmp_path / "r.html", "io").read_text()
    assert "<h2>File I/O</h2>" in page and "scratch/shared" in page and "servers" in page


def test_ti_trace_records_file_actions(recorded):
    tmp, _plat, _res = recorded
    lines = (tmp / "run.ti_files" / "rank-1.txt").read_text().splitlines()
    actions = [ln.split()[1] for ln in lines]
    for a in ("file_open", "file_write", "file_read", "file_sync", "mpi_file_open", "mpi_file_write",
              "barrier", "mpi_file_write_all", "mpi_file_sync", "mpi_file_read_all",
              "mpi_file_read", "mpi_file_close"):
        assert a in actions, a
    w = next(ln for ln in lines if " mpi_file_write_all " in ln).split()
    assert int(w[3]) == 50 and int(w[4]) == 200000 * 3 + 1000 and int(w[5]) == 1000
    assert f"1 mpi_file_write {tmp}/scratch/shared 1 100000 100000" in lines
    assert any(ln.startswith(f"1 file_write {tmp}/local/raw1 0 300000") for ln in lines)


def test_replay_takes_the_recorded_time(recorded):
    tmp, plat, res = recorded
    out = subprocess.run([sys.executable, "-m", "smpy", "replay", "-np", "3", "--platform", plat,
                          str(tmp / "run.ti")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    t = float(out.stdout.split("simulation time")[1].split()[0])
    assert t == pytest.approx(res.makespan_s, rel=1e-8)  # printed with 9 significant digits
