"""``smpy plot``: figures and a self-contained HTML report from a run's output files.

    smpy plot --trace run.json --power power.csv --report rep.json -o figs/

(``smpyrun --plots DIR`` records what is needed and calls this at the end of the run.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None, prog: str = "smpy plot") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, help="timeline trace (smpyrun --trace): Gantt chart")
    ap.add_argument("--power", type=Path, help="power trace CSV (smpyrun --power-trace)")
    ap.add_argument("--report", type=Path, help="report JSON (smpyrun --report PREFIX: PREFIX.json)")
    ap.add_argument("--summary", type=Path, help="run summary JSON (smpyrun --json): the report's "
                    "headline (predicted makespan, platform)")
    ap.add_argument("-o", "--output", type=Path, default=Path("smpy-plots"))
    ap.add_argument("--title", default="smpy run")
    ns = ap.parse_args(argv)
    if not (ns.trace or ns.power or ns.report):
        ap.error("give at least one of --trace, --power, --report")
    from smpy.cli.outputs import check_dir
    from smpy.trace.plots import make_all

    try:
        check_dir(ns.output, "-o")
        import json
        summary = json.loads(ns.summary.read_text()) if ns.summary else None
        files = make_all(ns.output, ns.trace, ns.power, ns.report, ns.title, summary)
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    for f in files:
        print(f)
    return 0
