"""Merge Figure 12 sweeps run point by point (benchmarks/paper/fig12.py -o PREFIX per point)
into one set of smpy predict outputs, and draw the figure of both matrix sizes.

A long sweep is safer one point at a time (each point's files are written when it ends);
this rebuilds what one ``smpy predict`` over all the points would have written:

    python benchmarks/paper/fig12_merge.py -o benchmarks/paper/fig12_n65536 /tmp/p12.json ...
    python benchmarks/paper/fig12_merge.py --plot benchmarks/paper/fig12_both.png \\
        benchmarks/paper/fig12.json benchmarks/paper/fig12_np1536.json ... fig12_n65536.json

writes PREFIX.csv / .runs.csv / .json and PREFIX.png (speed-up and efficiency against the
smallest rank count of each matrix size); ``--plot FILE`` draws every input's points, one line
per matrix size (the paper's Figure 12 shows both sizes in one figure).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from smpy.cli.sweep import Plan, Point, Run, plot, summarize, write_outputs  # noqa: E402

RUN_FIELDS = ("rep", "status", "exit_code", "makespan_s", "energy_J", "used_J", "wall_s",
              "peak_rss_bytes", "mpi_calls", "message", "program_s", "hosts_used", "attempts",
              "cpu_s")


def load(paths: list[str]) -> tuple[dict, list[Run]]:
    """The first file's sweep description and every file's runs (a later file's run of the
    same point and repetition replaces an earlier one)."""
    doc: dict = {}
    runs: dict[tuple, Run] = {}
    for path in paths:
        d = json.loads(Path(path).read_text())
        doc = doc or d
        for r in d["runs"]:
            params = tuple(sorted((k[6:], str(v)) for k, v in r.items() if k.startswith("param_")))
            pt = Point(r["platform"] or None, int(r["np"]), params)
            vals = {k: (math.nan if r.get(k) is None else r[k]) for k in RUN_FIELDS if k in r}
            runs[(pt.group, pt.np, vals["rep"])] = Run(pt, command=tuple(r.get("command", ())),
                                                       **vals)
    return doc, sorted(runs.values(), key=lambda r: (r.point.params, r.point.np, r.rep))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="smpy predict JSON files (-o PREFIX: PREFIX.json)")
    ap.add_argument("-o", "--output", help="prefix of the merged outputs")
    ap.add_argument("--plot", help="figure of every input's points")
    ap.add_argument("--title", default="Figure 12: HPL twin on taurus-fattree")
    ns = ap.parse_args()
    doc, runs = load(ns.inputs)
    points = list(dict.fromkeys(r.point for r in runs))
    summaries = summarize(points, runs, doc.get("scaling", "strong"))
    if ns.output:
        plan = Plan(doc["script"], doc["args"], sorted({p.np for p in points}),
                    sorted({p.platform for p in points}, key=str), reps=doc.get("reps", 1),
                    cfg=doc.get("cfg", []), hostfile=doc.get("hostfile"),
                    energy=doc.get("energy", False))
        files = write_outputs(ns.output, plan, summaries, runs, doc.get("scaling", "strong"))
        files.append(plot(ns.output + ".png", summaries, doc.get("scaling", "strong"), ns.title))
        print("wrote", ", ".join(str(f) for f in files))
    if ns.plot:
        print("wrote", plot(ns.plot, summaries, doc.get("scaling", "strong"), ns.title))
    for s in summaries:
        print(f"{s.point.label():<24} {s.point.np:>5} {s.median_s:>10.4g} s  {s.used_J:>11.4g} J used"
              f"  {s.cpu_s:>8.1f} s CPU  {s.peak_rss_bytes / 2**20:>6.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
