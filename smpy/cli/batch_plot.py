"""The Gantt chart of a batch workload (``smpy batch --plots DIR``): each job a bar over
the nodes it ran on, from its start to its end."""

from __future__ import annotations

from typing import Any


def gantt(result: Any, path: str) -> str:
    """Draw ``result`` (a :class:`smpy.cli.batch.BatchResult`) to ``path``; returns it."""
    from smpy.trace.plots import require_matplotlib

    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = gantt_bars(result)
    nodes = sorted({h for _, h, _, _ in bars}, key=_natural)
    row = {h: i for i, h in enumerate(nodes)}
    fig, ax = plt.subplots(figsize=(10, max(3.0, min(12.0, 0.18 * len(nodes) + 1.5))))
    cmap = plt.get_cmap("tab20")
    for k, h, t0, t1 in bars:
        ax.broken_barh([(t0, max(t1 - t0, 1e-12))], (row[h] - 0.4, 0.8), facecolors=cmap(k % 20),
                       edgecolor="black", linewidth=0.3)
    for j in result.jobs:
        if j.start_s is None or j.end_s is None:
            continue
        width = max(j.end_s - j.start_s, 1e-12)
        if len(result.jobs) <= 40:
            mid = sum(row[h] for h in j.hosts) / len(j.hosts)
            ax.text(j.start_s + width / 2, mid, j.name, ha="center", va="center", fontsize=7)
    step = max(1, len(nodes) // 32)
    ax.set_yticks(range(0, len(nodes), step), [nodes[i] for i in range(0, len(nodes), step)], fontsize=7)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("node")
    ax.set_title(f"smpy batch {result.workload}: {len(result.jobs)} jobs, scheduler {result.scheduler}, "
                 f"node utilisation {100 * result.node_utilisation:.1f} %", fontsize=9)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def gantt_bars(result: Any) -> list[tuple[int, str, float, float]]:
    """The bars of the Gantt: (job number, node, from, to): each job's hosts over its run,
    then the nodes its spawns took, over the time it held them (``JobRecord.grown``)."""
    bars = []
    for k, j in enumerate(result.jobs):
        if j.start_s is None or j.end_s is None:
            continue
        bars += [(k, h, j.start_s, j.end_s) for h in j.hosts]
        bars += [(k, h, t0, t1 if t1 is not None else j.end_s) for h, t0, t1 in j.grown]
    return bars


def _natural(name: str) -> tuple:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _cell(x: float | None, fmt: str = ".6g") -> str:
    return "-" if x is None else format(x, fmt)


def jobs_html(result: Any) -> str:
    """The per-job table of ``result`` and the platform's totals, as HTML."""
    import html

    energy = ""
    if result.energy_J is not None:
        idle = getattr(result, "energy_unattributed_J", None) or 0.0
        energy = (f"; energy <b>{result.energy_J:.6g} J</b> ({result.energy_J - idle:.6g} J to the jobs, "
                  f"{idle:.6g} J unattributed)")
    status = "" if result.status == "ok" else f"; status <b>{html.escape(result.status)}</b>"
    waits = [j.wait_s for j in result.jobs if j.wait_s is not None]
    slow = [j.slowdown for j in result.jobs if j.slowdown is not None]
    means = (f"mean wait {sum(waits) / len(waits):.6g} s" if waits else "no job started") + (
        f", mean slowdown {sum(slow) / len(slow):.4g}, largest {max(slow):.4g}" if slow else "")
    out = [f"<p>{len(result.jobs)} jobs on {result.nodes} nodes of platform "
           f"<b>{html.escape(str(result.platform))}</b>, scheduler <b>{html.escape(result.scheduler)}</b>: "
           f"makespan <b>{result.makespan_s:.9g} s</b>; node utilisation {result.node_utilisation:.2%}, "
           f"core utilisation {result.core_utilisation:.2%}{energy}{status}; {means}</p>",
           "<h2>Jobs</h2><table class='jobs'><tr><th>job</th><th>np</th><th>nodes</th><th>submit (s)</th>"
           "<th>wait (s)</th><th>start (s)</th><th>end (s)</th><th>run time (s)</th><th>alone (s)</th>"
           "<th>slowdown</th><th>energy (J)</th><th>state</th></tr>"]
    for j in result.jobs:
        out.append(f"<tr><td style='text-align:left'>{html.escape(j.name)}</td><td>{j.np}</td>"
                   f"<td>{len(j.hosts)}</td><td>{_cell(j.submit_s)}</td><td>{_cell(j.wait_s)}</td>"
                   f"<td>{_cell(j.start_s)}</td><td>{_cell(j.end_s)}</td><td>{_cell(j.run_s)}</td>"
                   f"<td>{_cell(j.solo_s)}</td><td>{_cell(j.slowdown, '.4g')}</td><td>{_cell(j.energy_J)}</td>"
                   f"<td style='text-align:left'>{html.escape(str(j.status))}</td></tr>")
    out.append("</table>")
    ended = [j for j in result.jobs if getattr(j, "reason", "")]
    if ended:  # how the jobs that did not complete ended
        out.append("<ul>" + "".join(f"<li>{html.escape(j.name)}: {html.escape(j.status)}: {html.escape(j.reason)}</li>"
                                    for j in ended) + "</ul>")
    return "".join(out)


def html_report(result: Any, out: str, util_csv: str | None = None, figdir: str | None = None,
                drawn: bool = False) -> str:
    """``smpy batch --html FILE`` (and ``--plots DIR``'s ``DIR/report.html``): one
    self-contained page with the platform's totals, the per-job table, the utilisation per
    time bin (from ``util_csv``) and, with matplotlib, the Gantt of jobs over nodes and the
    utilisation figure (drawn into ``figdir``, else into a temporary directory). Without
    matplotlib the page has the tables and says why the figures are missing. ``drawn``: the
    figures are already in ``figdir`` (``--plots``), embed them as they are."""
    import tempfile
    from pathlib import Path

    from smpy.trace.plots import (
        read_utilization,
        require_matplotlib,
        utilization,
        utilization_html,
        write_page,
    )

    rows = read_utilization(Path(util_csv)) if util_csv and Path(util_csv).is_file() else []
    parts = [jobs_html(result)]
    if rows:
        parts.append(utilization_html(rows))
    title = f"smpy batch {result.workload}"
    try:
        require_matplotlib()
    except RuntimeError as exc:
        return str(write_page(Path(out), title, parts, [], note=f"No figures: {exc}"))
    with tempfile.TemporaryDirectory(prefix="smpy-batch-") as tmp:
        where = Path(figdir) if figdir else Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        if drawn:
            figs = [f for f in (where / "gantt.png", where / "utilization.png") if f.is_file()]
        else:
            figs = [Path(gantt(result, str(where / "gantt.png")))]
            if rows:
                figs.append(utilization(Path(util_csv or ""), where / "utilization.png"))
        return str(write_page(Path(out), title, parts, figs))
