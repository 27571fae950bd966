"""``smpy plot``: figures and a self-contained HTML report from a run's output files.

    smpy plot --trace run.json --power power.csv --report rep.json -o figs/

(``smpyrun --plots DIR`` records what is needed and calls this at the end of the run.)

A batch's JSON (``smpy batch --json FILE``, given as ``--report`` or ``--summary``) is
recognised by its ``jobs`` and ``scheduler``: the figures are then the batch's (as
``smpy batch --plots DIR``): ``gantt.png`` (jobs over nodes), ``utilization.png`` from
``--utilization CSV`` (``smpy batch --report PREFIX``'s ``PREFIX.utilization.csv``; default:
``X.utilization.csv`` next to ``X.json`` when it exists) and ``report.html``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None, prog: str = "smpy plot") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, help="timeline trace (smpyrun --trace): Gantt chart")
    ap.add_argument("--power", type=Path, help="power trace CSV (smpyrun --power-trace)")
    ap.add_argument("--report", type=Path, help="report JSON (smpyrun --report PREFIX: PREFIX.json), "
                    "or a batch's JSON (smpy batch --json)")
    ap.add_argument("--summary", type=Path, help="run summary JSON (smpyrun --json): the report's "
                    "headline (predicted makespan, platform)")
    ap.add_argument("--utilization", type=Path, help="a batch's utilisation CSV (smpy batch --report "
                    "PREFIX: PREFIX.utilization.csv), with a batch's JSON")
    ap.add_argument("-o", "--output", type=Path, default=Path("smpy-plots"))
    ap.add_argument("--title", default="smpy run")
    ns = ap.parse_args(argv)
    if not (ns.trace or ns.power or ns.report or ns.summary):
        ap.error("give at least one of --trace, --power, --report (or a batch's JSON as --summary)")
    from smpy.cli.outputs import check_dir
    from smpy.trace.plots import make_all

    try:
        check_dir(ns.output, "-o")
        import json
        summary = json.loads(ns.summary.read_text()) if ns.summary else None
        batch = next((p for p in (ns.report, ns.summary) if p is not None and _is_batch(p)), None)
        if batch is not None:
            files = batch_figures(batch, ns.utilization, ns.output)
        else:
            files = make_all(ns.output, ns.trace, ns.power, ns.report, ns.title, summary)
    except (RuntimeError, OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    for f in files:
        print(f)
    return 0


def _is_batch(path: Path) -> bool:
    """Whether ``path`` is a batch's JSON (``smpy batch --json``)."""
    import json

    try:
        doc = json.loads(path.read_text())
    except ValueError:
        return False
    return isinstance(doc, dict) and "jobs" in doc and "scheduler" in doc


def batch_figures(path: Path, util: Path | None, out: Path) -> list[str]:
    """The figures of ``smpy batch --plots`` from a batch's saved JSON and utilisation CSV."""
    import json

    from smpy.cli.batch import BatchResult
    from smpy.cli.batch_plot import gantt, html_report
    from smpy.trace.plots import read_utilization, require_matplotlib, utilization

    try:
        result = BatchResult.from_json(json.loads(path.read_text()))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a batch's JSON ({exc.args[0] if exc.args else exc})") from None
    if util is None and path.suffix == ".json" and path.with_suffix(".utilization.csv").is_file():
        util = path.with_suffix(".utilization.csv")
    if util is not None and not util.is_file():
        raise OSError(f"--utilization {util}: no such file")
    require_matplotlib()
    out.mkdir(parents=True, exist_ok=True)
    files = [gantt(result, str(out / "gantt.png"))]
    if util is not None and read_utilization(util):
        files.append(str(utilization(util, out / "utilization.png")))
    files.append(html_report(result, str(out / "report.html"), str(util) if util else None, str(out), drawn=True))
    return files
