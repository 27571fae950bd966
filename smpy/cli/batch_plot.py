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

    nodes = sorted({h for j in result.jobs for h in j.hosts}, key=_natural)
    row = {h: i for i, h in enumerate(nodes)}
    fig, ax = plt.subplots(figsize=(10, max(3.0, min(12.0, 0.18 * len(nodes) + 1.5))))
    cmap = plt.get_cmap("tab20")
    for k, j in enumerate(result.jobs):
        if j.start_s is None or j.end_s is None:
            continue
        width = max(j.end_s - j.start_s, 1e-12)
        for h in j.hosts:
            ax.broken_barh([(j.start_s, width)], (row[h] - 0.4, 0.8), facecolors=cmap(k % 20),
                           edgecolor="black", linewidth=0.3)
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


def _natural(name: str) -> tuple:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))
