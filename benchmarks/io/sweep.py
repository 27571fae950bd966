"""File-system sweeps after PIOsimHD's figures, on simulated platforms (prints tables).

1. servers: a 256 MiB shared-file write (np 32, no cache) over 1..16 servers: bandwidth grows
   with the servers until the clients' links saturate;
2. cache: a burst of 8 MiB per rank (np 32, 4 servers) with per-server caches of 0 .. 1 GiB:
   the write returns at network speed while the cache absorbs it, sync pays the disk;
3. collective buffering: np 16 ranks writing interleaved 4 KiB pieces (hard disks), two-phase
   (romio_cb_write enable) against independent data sieving (disable).

    python benchmarks/io/sweep.py
"""

import sys
import tempfile
import time
from pathlib import Path

from smpy.cli.launch import run

PLATFORM = """
name: iosweep
config: {{network/model: SMPI, smpi/simulate-computation: 'no'}}
clusters:
  - name: c
    prefix: node-
    suffix: ""
    radical: 0-{last}
    cores: 1
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 2us
    sharing: SPLITDUPLEX
    backbone: {{bandwidth: 400Gbps, latency: 1us, sharing: SHARED}}
filesystems:
  - name: scratch
    kind: parallel
    mount: {mount}
    servers: [{servers}]
    stripe_size: 1MiB
    disk: {disk}
    cache: {{size: {cache}}}
"""

WRITE = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
buf = np.zeros({n}, np.uint8)
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY)
comm.Barrier(); t0 = MPI.Wtime()
f.Write_at(comm.rank * buf.nbytes, buf)
comm.Barrier(); t1 = MPI.Wtime()
f.Sync()
comm.Barrier(); t2 = MPI.Wtime()
f.Close()
if comm.rank == 0:
    print(t1 - t0, t2 - t1)
"""

STRIDED = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
n, r = comm.size, comm.rank
ft = MPI.BYTE.Create_vector(256, 4096, 4096 * n).Commit()
buf = np.zeros(256 * 4096, np.uint8)
info = MPI.Info.Create(); info.Set("romio_cb_write", "{cb}")
f = MPI.File.Open(comm, "{path}", MPI.MODE_CREATE | MPI.MODE_WRONLY, info)
f.Set_view(r * 4096, MPI.BYTE, ft)
comm.Barrier(); t0 = MPI.Wtime()
f.Write_all(buf)
comm.Barrier()
if r == 0:
    print(MPI.Wtime() - t0)
f.Close()
"""

SIMPLE = "{read: 500MBps, write: 400MBps, latency: 1ms}"
HDD = "{kind: hdd, read: 150MBps, write: 150MBps, latency: 0.1ms, seek: 8ms, rpm: 7200}"


def _run(tmp, np, nservers, cache, prog, disk=SIMPLE):
    mount = tmp / "scratch"
    mount.mkdir(exist_ok=True)
    servers = ", ".join(f"node-{np + i}" for i in range(nservers))
    plat = tmp / "p.yaml"
    plat.write_text(PLATFORM.format(last=np + nservers - 1, mount=mount, servers=servers,
                                    disk=disk, cache=cache))
    hosts = tmp / "hosts"
    hosts.write_text("\n".join(f"node-{i}" for i in range(np)) + "\n")
    res = run(None, np=np, platform=str(plat), hostfile=str(hosts), command=prog.replace(
        "{path}", str(mount / "f")), capture=True, echo=False)
    if res.status != "ok":
        sys.exit(f"run failed: {res.message}{res.stderr}")
    (mount / "f").unlink(missing_ok=True)
    return [float(x) for x in res.stdout.split()], res.wall_s


def main():
    MiB = 1 << 20
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("1. servers (np 32, 8 MiB per rank, no cache, 400 MBps disks, 10 Gbps links)")
        print(f"{'servers':>8} {'write s':>10} {'MiB/s':>10}")
        for k in (1, 2, 4, 8, 16):
            (t, _s), _w = _run(tmp, 32, k, "0", WRITE.replace("{n}", str(8 * MiB)))
            print(f"{k:8d} {t:10.4f} {256 / t:10.1f}")
        print("\n2. cache absorbing a burst (np 32, 4 servers, 8 MiB per rank = 64 MiB per server)")
        print(f"{'cache':>8} {'write s':>10} {'sync s':>10}")
        for cache in ("0", "16MiB", "64MiB", "1GiB"):
            (t, s), _w = _run(tmp, 32, 4, cache, WRITE.replace("{n}", str(8 * MiB)))
            print(f"{cache:>8} {t:10.4f} {s:10.4f}")
        print("\n3. interleaved 4 KiB pieces, np 16, 4 servers with hard disks, 1 MiB per rank")
        print(f"{'cb_write':>8} {'write_all s':>12}")
        for cb in ("enable", "disable"):
            (t,), _w = _run(tmp, 16, 4, "0", STRIDED.replace("{cb}", cb), HDD)
            print(f"{cb:>8} {t:12.4f}")
    print(f"\n(emulation wall time of the sweep: {time.perf_counter() - wall0:.1f} s)")


if __name__ == "__main__":
    main()
