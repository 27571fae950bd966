"""Differential benchmark: MPI-IO on SimGrid's disk model, SMPI against smpy.

Compiles ``smpi_io.c`` with ``smpicc``, runs it with ``smpirun`` and its Python twin
``smpi_io_twin.py`` with smpy on the same SimGrid XML platform, and prints, case by case, the
simulated seconds of each access (mean over the ranks) and the largest relative difference
over the ranks. Two platforms (written into a temporary directory):

* ``one``: one host whose disk (read 100 MBps, write 40 MBps) is mounted at the files'
  directory; every rank on it (the ranks share the disk);
* ``two``: two such hosts joined by a 125 MBps, 150 us link, ranks placed round robin (each
  host its own disk; the collective calls' offset exchange crosses the link).

Cases (``smpi_io.c``): ``indep`` (``write_at``/``read_at``), ``coll`` (``write_at_all``/
``read_at_all`` of disjoint contiguous blocks), ``mixed`` (even ranks write while odd ranks
read the same disk) are where the two models coincide; ``strided`` (a collective write
through a strided file view) is printed for information: SMPI's ``File::op_all`` and ROMIO's
two-phase I/O (smpy's) are different algorithms (docs/models.md).

SimGrid 3.32 needs two work-arounds, both fixed upstream in v4.0 (docs/models.md): every
disk with a ``mount`` needs a ``content`` property (without it the first write that grows a
file dereferences a null pointer: segmentation fault in ``MPI_File_open``'s first write,
``FileSystemDiskExt::content_``, SimGrid commit a8abdcb816), and the content file's name must
be relative (``surf_ifsopen`` reopens an absolute name through the search path and fails),
so ``smpirun`` runs in the directory holding an empty content file.

    python benchmarks/io/vs_smpi.py                      # np 1 2 4, 4 KiB to 16 MiB
    python benchmarks/io/vs_smpi.py --np 4 --sizes 1048576

Exits 0 when SMPI is missing (nothing to compare) unless ``--require-smpi``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from childproc import smpi_build  # noqa: E402 - benchmarks/childproc.py

#: cases where SMPI's and smpy's models coincide (the rest is printed for information)
COINCIDE = ("indep", "coll", "mixed")
SIZES = (4096, 1 << 20, 16 << 20)
#: both sides: no measured computation, the same collective selector (SMPI 3.32's default is
#: its naive ``default`` selector, smpy's ``ompi``: at np 2 their barriers differ)
_CFG = ["--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:ompi"]

_HOST = """    <host id="{name}" speed="1Gf">
      <disk id="disk" read_bw="100MBps" write_bw="40MBps">
        <prop id="mount" value="{mount}"/>
        <prop id="content" value="content.txt"/>
      </disk>
    </host>
"""


def platform(tmp: Path, name: str) -> tuple[Path, list[str]]:
    """Write platform ``name`` (``one`` or ``two``) into ``tmp``; returns it and its hosts."""
    hosts = ["bob"] if name == "one" else ["bob", "alice"]
    body = "".join(_HOST.format(name=h, mount=tmp / "mnt") for h in hosts)
    if len(hosts) == 2:
        body += ('    <link id="link" bandwidth="125MBps" latency="150us"/>\n'
                 '    <route src="bob" dst="alice"><link_ctn id="link"/></route>\n')
    xml = tmp / f"{name}.xml"
    xml.write_text("<?xml version='1.0'?>\n"
                   '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                   '<platform version="4.1">\n  <zone id="AS0" routing="Full">\n'
                   f"{body}  </zone>\n</platform>\n")
    return xml, hosts


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def _parse(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].count(".") == 3:
            out[parts[0]] = float(parts[1])
    return out


def _fresh(mnt: Path) -> None:
    shutil.rmtree(mnt, ignore_errors=True)
    mnt.mkdir()


def run_pair(tmp: Path, binary: Path, name: str, np_: int, sizes: list[int]) -> tuple[dict, dict]:
    """Both runs of one platform and process count: (SMPI's times, smpy's), by case."""
    xml, hosts = platform(tmp, name)
    placement = [hosts[i % len(hosts)] for i in range(np_)]
    (tmp / "hosts.txt").write_text("".join(h + "\n" for h in placement))
    mnt = tmp / "mnt"
    args = [str(mnt), *map(str, sizes)]
    _fresh(mnt)
    ref = _parse(_run(["smpirun", "-np", str(np_), "-platform", str(xml), "-hostfile", str(tmp / "hosts.txt"),
                       *_CFG, "--log=root.thres:critical", str(binary), *args],
                      cwd=tmp))
    _fresh(mnt)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    got = _parse(_run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(xml),
                       "--hosts", ",".join(placement), *_CFG,
                       str(HERE / "smpi_io_twin.py"), *args], cwd=tmp, env=env))
    _fresh(mnt)
    return ref, got


def compare(nps: list[int], sizes: list[int], platforms: list[str], require: bool = False) -> list[tuple]:
    """Rows ``(platform, np, case, SMPI s, smpy s, largest relative difference over the
    ranks, coincide)``, one per platform, process count and case (``mode.op.size``)."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "content.txt").write_text("")
        binary = tmp / "smpi_io"
        if not smpi_build(HERE / "smpi_io.c", binary, require):
            return []
        for name in platforms:
            for np_ in nps:
                ref, got = run_pair(tmp, binary, name, np_, sizes)
                if not ref:
                    raise RuntimeError(f"smpirun printed no times ({name}, np {np_})")
                cases: dict[str, list[str]] = {}
                for key in ref:
                    cases.setdefault(key.rsplit(".", 1)[0], []).append(key)
                for case, keys in cases.items():
                    r = [ref[k] for k in keys]
                    g = [got.get(k, float("nan")) for k in keys]
                    err = max((abs(b - a) / a if a > 0 else abs(b - a)) for a, b in zip(r, g))
                    if any(x != x for x in g):
                        err = float("inf")
                    rows.append((name, np_, case, sum(r) / len(r), sum(g) / len(g), err,
                                 case.split(".")[0] in COINCIDE))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--platforms", nargs="+", default=["one", "two"], choices=["one", "two"])
    ap.add_argument("--require-smpi", action="store_true")
    a = ap.parse_args(argv)
    rows = compare(a.np, a.sizes, a.platforms, a.require_smpi)
    if not rows:
        return 0
    print(f"{'platform':8} {'np':>3} {'case':26} {'SMPI (s)':>12} {'smpy (s)':>12} {'max |err|':>10}")
    worst = 0.0
    for name, np_, case, r, g, err, same in rows:
        note = "" if same else "  (models differ)"
        print(f"{name:8} {np_:>3} {case:26} {r:12.9f} {g:12.9f} {100 * err:9.3f}%{note}")
        if same:
            worst = max(worst, err)
    print(f"worst over the {sum(1 for r in rows if r[6])} coinciding cases: {100 * worst:.3f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
