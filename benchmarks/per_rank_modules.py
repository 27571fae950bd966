"""Memory cost of smpy's rule "installed modules that import mpi4py.MPI are per rank"
(``smpy/mpi-modules-per-rank``, smpy/shim/imports.py).

    python benchmarks/per_rank_modules.py                    # mpi4py_fft, np 1 16 64 256
    python benchmarks/per_rank_modules.py --module mpipool --np 16 64

Each rank of a fresh ``smpyrun`` subprocess imports MODULE (a site-packages package whose
modules import ``mpi4py.MPI``) and waits in a barrier; the run is made with the rule on
(default: each rank executes its own copy of those modules) and off
(``--cfg smpy/mpi-modules-per-rank:no``: one copy, as before the rule). Reported: the number
of per-rank modules (those the rule made and their submodules), the process's peak RSS for both, and the extra memory per
rank (difference of the peak RSS divided by np). Computation is not simulated, so the figures
are smpy's own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = '''\
import importlib, sys
from mpi4py import MPI
importlib.import_module({module!r})
MPI.COMM_WORLD.Barrier()
'''

PROBE = '''\
import json, sys
import smpy
from smpy.shim import imports, isolation
seen = []
orig = imports.ImportPatches.uninstall
def uninstall(self):
    seen[:] = sorted(isolation._private_names)
    orig(self)
imports.ImportPatches.uninstall = uninstall
res = smpy.run(sys.argv[1], np=int(sys.argv[2]), capture=True,
               cfg={{"smpi/simulate-computation": "no", "smpy/mpi-modules-per-rank": sys.argv[3]}})
assert res.status == "ok", res.message
print(json.dumps({{"rss": res.peak_rss_bytes, "tainted": seen}}))
'''


def one(program: Path, np_: int, rule: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE.format(), str(program), str(np_), rule],
                          capture_output=True, text=True, timeout=3600, env=os.environ.copy())
    if done.returncode != 0:
        raise RuntimeError(f"np {np_} rule {rule} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default="mpi4py_fft")
    ap.add_argument("--np", type=int, nargs="+", default=[1, 16, 64, 256])
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "import_it.py"
        program.write_text(PROGRAM.format(module=ns.module))
        print(f"module {ns.module}: peak RSS of the emulating process, rule on (per rank) / off (shared)")
        print(f"{'np':>5} {'per-rank modules':>17} {'on MiB':>9} {'off MiB':>9} {'extra KiB/rank':>15}")
        for n in ns.np:
            on, off = one(program, n, "yes"), one(program, n, "no")
            extra = (on["rss"] - off["rss"]) / n / 1024
            print(f"{n:>5} {len(on['tainted']):>17} {on['rss'] / 2**20:>9.1f} {off['rss'] / 2**20:>9.1f} "
                  f"{extra:>15.0f}", flush=True)
        print("per-rank modules (rule on):", ", ".join(on["tainted"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
