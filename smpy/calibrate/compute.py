"""``smpy calibrate compute``: per-region correction factors from one real run and one emulated run.

    smpy calibrate compute -np 2 -o app-factors.csv app.py --size 200

1. runs ``app.py`` for real (``mpiexec -n NP`` with the venv's MPI, real mpi4py, no
   emulator) under :mod:`smpy.calibrate.trace_real`, which records per region (SMPI's
   ``prevfile:prevline:file:line``) the thread CPU time between consecutive MPI calls;
2. runs it again under smpy, same NP and arguments, with ``smpy/region-report``;
3. aligns the two by region key and writes SMPI's comp-adjustment CSV (header, then
   ``"key",ratio``) with ``ratio = smpy's total time of the region / the real run's`` over all
   ranks: ``--cfg=smpi/comp-adjustment-file:app-factors.csv`` then divides each burst measured
   under the emulator by it, so that the region costs what it costs in a real run.

Regions seen in one run only, regions whose real total is below ``--min-seconds``, and the
first region of each rank (``<start>:0:...``: it holds the program's imports, which the
emulator has already done) keep ratio 1 (they are listed on stderr). Use a workload small enough to run quickly but large
enough for the regions to take milliseconds.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def mpi_call_names() -> list[str]:
    """The names smpy's facade times as MPI calls (the region boundaries)."""
    import smpy.mpi as M

    names: set[str] = set()
    for obj in (M.Comm, M.Intracomm, M.Request, getattr(M, "Prequest", None),
                getattr(M, "Cartcomm", None), getattr(M, "Intercomm", None), getattr(M, "Message", None)):
        if obj is None:
            continue
        names.update(n for n in dir(obj) if not n.startswith("_")
                     and hasattr(getattr(obj, n, None), "__wrapped__"))
    names.update(n for n in dir(M) if not n.startswith("_") and callable(getattr(M, n))
                 and hasattr(getattr(M, n), "__wrapped__"))
    return sorted(names)


def read_real(outdir: Path) -> dict[str, float]:
    total: dict[str, float] = {}
    files = sorted(outdir.glob("rank*.csv"))
    if not files:
        raise RuntimeError(f"the real run wrote no region file in {outdir}")
    for f in files:
        for row in list(csv.reader(f.open()))[1:]:
            total[row[0]] = total.get(row[0], 0.0) + float(row[2])
    return total


def read_smpy(report: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in list(csv.reader(report.open()))[1:]:
        out[row[0]] = out.get(row[0], 0.0) + float(row[2])
    return out


def ratios(real: dict[str, float], emulated: dict[str, float], min_seconds: float
           ) -> tuple[dict[str, float], list[str]]:
    out: dict[str, float] = {}
    skipped = []
    for key in sorted(set(real) | set(emulated)):
        r, e = real.get(key, 0.0), emulated.get(key, 0.0)
        if (key not in real or key not in emulated or r < min_seconds or e <= 0.0
                or key.startswith("<start>:")):
            skipped.append(f"{key} (real {r:.3g} s, smpy {e:.3g} s)")
            continue
        out[key] = e / r
    return out, skipped


def write_factors(path: Path, factors: dict[str, float]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(["start:stop", "ratio"])
        for key, ratio in factors.items():
            w.writerow([key, ratio])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="smpy calibrate compute",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("-np", "-n", dest="np", type=int, default=os.cpu_count() or 1,
                    help="ranks of both runs (default: the cores of this machine)")
    ap.add_argument("-o", "--output", default="comp-adjustment.csv", help="factor file to write")
    ap.add_argument("--platform", default=None, help="platform of the emulated run")
    ap.add_argument("--cfg", action="append", default=[], help="setting of the emulated run")
    ap.add_argument("--mpiexec", default=shutil.which("mpiexec", path=os.path.dirname(sys.executable))
                    or "mpiexec")
    ap.add_argument("--region-depth", type=int, default=1, help="as smpy/region-depth")
    ap.add_argument("--min-seconds", type=float, default=1e-3,
                    help="regions shorter than this in the real run keep ratio 1")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="smpy-calib-") as tmp:
        tmpdir = Path(tmp)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   SMPY_TRACE_CALLS=",".join(mpi_call_names()),
                   SMPY_REGION_DEPTH=str(ns.region_depth))
        real_cmd = [ns.mpiexec, "-n", str(ns.np), sys.executable, "-m", "smpy.calibrate.trace_real",
                    str(tmpdir / "real"), ns.script, *ns.args]
        print(f"[calibrate] real run: {' '.join(real_cmd)}", file=sys.stderr)
        done = subprocess.run(real_cmd, env=env, timeout=ns.timeout, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"smpy calibrate compute: the real run failed ({done.returncode})")
        real = read_real(tmpdir / "real")
        report = tmpdir / "smpy-regions.csv"
        emu_cmd = [sys.executable, "-m", "smpy", "-q", "-np", str(ns.np),
                   *(["--platform", ns.platform] if ns.platform else []),
                   *[f"--cfg={c}" for c in ns.cfg], f"--cfg=smpy/region-report:{report}",
                   f"--cfg=smpy/region-depth:{ns.region_depth}", ns.script, *ns.args]
        print(f"[calibrate] emulated run: {' '.join(emu_cmd)}", file=sys.stderr)
        done = subprocess.run(emu_cmd, env=env, timeout=ns.timeout, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"smpy calibrate compute: the emulated run failed ({done.returncode})")
        emulated = read_smpy(report)
    factors, skipped = ratios(real, emulated, ns.min_seconds)
    write_factors(Path(ns.output), factors)
    print(f"{'region':<48}{'real s':>12}{'smpy s':>12}{'ratio':>10}")
    for key, ratio in factors.items():
        print(f"{key:<48}{real[key]:>12.4g}{emulated[key]:>12.4g}{ratio:>10.4f}")
    for line in skipped:
        print(f"[calibrate] ratio 1 (not in both runs, or too short): {line}", file=sys.stderr)
    print(f"wrote {ns.output}: {len(factors)} regions; use "
          f"--cfg=smpi/comp-adjustment-file:{ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
