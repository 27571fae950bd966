"""``smpy replay``: simulate a time-independent trace without the application.

    smpy replay --platform cluster.yaml [-np N] [--hostfile H] [--cfg NAME:VALUE] TRACE

TRACE is SMPI's format (``smpirun -trace-ti``) or smpy's (``smpyrun --trace-ti``): an index
of per-rank files or one file with every rank's lines (:mod:`smpy.replay.ti`). The ranks run
:mod:`smpy.replay.program` on the emulator with computation not simulated: only the traced
``compute`` flops, sleeps and communications cost simulated time. Prints the simulation time
(the makespan, what SMPI's replay prints) and the run summary (``--json`` as smpyrun). To
compare with ``smpirun -replay``, use the same collective selector on both sides: SMPI's
default is ``default``, smpy's ``ompi`` (``--cfg=smpi/coll-selector:default``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None, prog: str = "smpy replay") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("-np", "-n", dest="np", type=int, default=None,
                    help="ranks (default: as many as the trace has)")
    ap.add_argument("--platform", default=None)
    ap.add_argument("--hostfile", default=None)
    ap.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("trace")
    ns = ap.parse_args(argv)
    import smpy.replay  # not .program: it imports mpi4py.MPI, which must be smpy's
    from smpy.cli.launch import run
    from smpy.cli.outputs import check_file
    from smpy.platform import PlatformError
    from smpy.replay.ti import ranks_in
    from smpy.support.config import Config, ConfigError

    try:
        check_file(ns.json, "--json")
        np_ = ns.np or ranks_in(ns.trace)
        if np_ < 1:
            raise ValueError(f"{ns.trace}: no action found")
        cfg = {"smpi/simulate-computation": "no"}
        for item in ns.cfg:
            name, value = Config.parse_cfg_option(item)
            cfg[name] = value
        program = Path(smpy.replay.__file__).with_name("program.py")
        result = run(program, np=np_, platform=ns.platform, cfg=cfg,
                     args=[ns.trace], hostfile=ns.hostfile)
    except (PlatformError, ConfigError, FileNotFoundError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    # SMPI's replay prints "Simulation time" when its last rank ends: the makespan
    print(f"[smpy replay] simulation time {result.makespan_s:.9g} s")
    if not ns.quiet:
        print(result.summary(), file=sys.stderr)
    if ns.json:
        with open(ns.json, "w") as fh:
            json.dump(result.to_json(), fh, indent=2)
    return result.exit_code
