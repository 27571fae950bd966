"""Figures and an HTML report from a run's outputs (``smpy plot``, ``smpyrun --plots DIR``).

* ``gantt.png`` — from the timeline trace (``--trace``): one row per rank, computation and
  MPI calls as bars over simulated time (at most 64 ranks drawn, evenly chosen);
* ``power.png`` — from the power trace (``--power-trace``): each host's power over time
  (the busiest 16 hosts when there are more);
* ``matrix.png`` — from the report (``--report``): bytes sent between ranks, as a heat map;
* ``utilization.png`` — from the report's ``PREFIX.utilization.csv``: efficiency (busy /
  allocated cores) over time above the allocated, busy and MPI-waiting cores (and the power
  when recorded), as the DPS simulator's dynamic efficiency (Schaeli et al., Fig. 11);
* ``report.html`` — one self-contained page with the figures (embedded PNG) and the
  report's tables (MPI calls, ranks, file I/O per file, rank and server, memory per host).

matplotlib is needed (``pip install matplotlib``); it runs headless (Agg backend).
"""

from __future__ import annotations

import base64
import csv
import html
import json
from pathlib import Path
from typing import Any


def require_matplotlib() -> None:
    """Raise RuntimeError (with the way to install it) when matplotlib is missing; commands
    call this before a run whose figures they will draw."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise RuntimeError("plots need matplotlib: pip install matplotlib (or pip install 'smpy[plot]')")


def _plt() -> Any:
    require_matplotlib()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: the kinds of bar in the Gantt chart, in legend order: (label, colour, test on the call name)
KINDS: list[tuple[str, str]] = [
    ("computation", "#4c72b0"), ("point-to-point", "#dd8452"), ("wait / test / probe", "#c44e52"),
    ("collective", "#55a868"), ("one-sided", "#8172b3"), ("I/O", "#937860"), ("other MPI", "#8c8c8c"),
]
_COLLECTIVES = ("bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "barrier",
                "scan", "exscan", "reduce_scatter", "neighbor_")
_P2P = ("send", "recv", "sendrecv", "bsend", "ssend", "rsend", "isend", "irecv", "issend", "ibsend",
        "irsend", "mrecv", "imrecv", "send_init", "recv_init", "start")
_WAITS = ("wait", "test", "probe", "iprobe", "mprobe", "improbe")


def call_kind(cat: str, name: str) -> str:
    """The Gantt kind of a trace event: its category ``compute`` or the MPI call's name
    (``MPI_Send``, ``Comm.bcast``, ``Win.Put``, ...)."""
    if cat == "compute":
        return "computation"
    base = name.split(".")[-1].removeprefix("MPI_").lower()
    if name.startswith(("Win.", "MPI_Win")) or base in ("put", "get", "accumulate", "rput", "rget"):
        return "one-sided"
    if name.startswith(("File.", "MPI_File", "file_")):  # file_*: the ranks' Python file I/O
        return "I/O"
    if base.startswith(_WAITS) or base.startswith("start"):
        return "wait / test / probe"
    if base.lstrip("i") in _COLLECTIVES or base in _COLLECTIVES or base.startswith(("neighbor_", "ineighbor_")):
        return "collective"
    if base in _P2P:
        return "point-to-point"
    return "other MPI"


def gantt(trace: Path, out: Path, max_ranks: int = 64) -> Path:
    plt = _plt()
    events = json.loads(trace.read_text())
    bars: dict[int, list[tuple[float, float, str]]] = {}
    for e in events:
        if e.get("ph") == "X":
            kind = call_kind(e.get("cat", ""), e.get("name", ""))
            bars.setdefault(e["tid"], []).append((e["ts"] * 1e-6, e["dur"] * 1e-6, kind))
    ranks = sorted(bars)
    if len(ranks) > max_ranks:
        step = len(ranks) / max_ranks
        ranks = [ranks[int(i * step)] for i in range(max_ranks)]
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.25 * len(ranks)))
    colors = dict(KINDS)
    present = {k for r in ranks for _, _, k in bars[r]}
    for row, r in enumerate(ranks):
        for kind in colors:
            spans = [(t, d) for t, d, k in bars[r] if k == kind and d > 0]
            if spans:
                ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=colors[kind])
    ax.set_yticks(range(len(ranks)), [str(r) for r in ranks])
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("rank")
    ax.set_title("computation and MPI calls per rank")
    shown = [k for k in colors if k in present]
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in shown]
    # outside the axes, to the right: the legend never covers a bar
    ax.legend(handles, shown, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def power(power_csv: Path, out: Path, max_hosts: int = 16) -> Path:
    plt = _plt()
    series: dict[str, list[tuple[float, float]]] = {}
    with power_csv.open(newline="") as fh:
        for row in csv.DictReader(fh):
            series.setdefault(row["host"], []).append((float(row["time_s"]), float(row["power_W"])))
    energy = {h: sum(w0 * (t1 - t0) for (t0, w0), (t1, _) in zip(v, v[1:])) for h, v in series.items()}
    hosts = sorted(series, key=lambda h: -energy[h])[:max_hosts]
    fig, ax = plt.subplots(figsize=(10, 4))
    for h in hosts:
        t, w = zip(*series[h])
        ax.step(t, w, where="post", label=h)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("power (W)")
    ax.set_title("host power" + (f" (the {max_hosts} hosts that used most energy)"
                                 if len(series) > max_hosts else ""))
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def matrix(report_json: Path, out: Path) -> Path:
    plt = _plt()
    import numpy as np

    data = json.loads(report_json.read_text())
    n = len(data["ranks"])
    m = np.zeros((n, n))
    for s, d, b in data.get("matrix", []):
        m[s, d] += b
    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(m, cmap="viridis", interpolation="nearest", origin="upper",
                   vmin=0.0, vmax=max(float(m.max()), 1.0), extent=(-0.5, n - 0.5, n - 0.5, -0.5))
    fig.colorbar(im, ax=ax, label="bytes")
    from matplotlib.ticker import MaxNLocator  # whole ranks only
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title("point-to-point bytes between ranks" if m.any()
                 else "no point-to-point messages between ranks")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def read_utilization(path: Path) -> list[dict[str, float]]:
    """The rows of a ``PREFIX.utilization.csv`` (smpy.trace.utilization.COLUMNS)."""
    with path.open(newline="") as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def utilization_path(report_json: Path) -> Path:
    """``PREFIX.utilization.csv`` next to the report's ``PREFIX.json``."""
    name = report_json.name.removesuffix(".json")
    return report_json.with_name(f"{name}.utilization.csv")


def utilization(util_csv: Path, out: Path) -> Path:
    plt = _plt()
    rows = read_utilization(util_csv)
    has_power = any(r["power_W"] for r in rows)
    fig, axes = plt.subplots(3 if has_power else 2, 1, figsize=(10, 7.5 if has_power else 5.5), sharex=True)
    edges = [r["t_start"] for r in rows] + [rows[-1]["t_end"]] if rows else [0.0, 0.0]

    def steps(col: str, scale: float = 1.0) -> list[float]:
        vals = [r[col] * scale for r in rows]
        return vals + vals[-1:] if vals else [0.0, 0.0]

    ax = axes[0]
    ax.step(edges, steps("efficiency", 100.0), where="post", color="#4c72b0")
    ax.set_ylim(0, 105)
    ax.set_ylabel("efficiency (%)")
    alloc = sum((r["t_end"] - r["t_start"]) * r["allocated"] for r in rows)
    busy = sum((r["t_end"] - r["t_start"]) * r["busy"] for r in rows)
    mean = f" (over the run: {busy / alloc:.1%})" if alloc > 0 else ""
    ax.set_title(f"efficiency over time: busy / allocated cores{mean}")
    ax = axes[1]
    ax.step(edges, steps("allocated"), where="post", color="#333333", label="allocated")
    ax.fill_between(edges, steps("busy"), step="post", color="#4c72b0", alpha=0.6, label="busy (computing)")
    busy_wait = [b + w for b, w in zip(steps("busy"), steps("waiting_mpi"))]
    ax.fill_between(edges, steps("busy"), busy_wait, step="post", color="#c44e52", alpha=0.5,
                    label="waiting in MPI")
    ax.set_ylabel("cores")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if has_power:
        axes[2].step(edges, steps("power_W"), where="post", color="#55a868")
        axes[2].set_ylabel("power (W)")
    axes[-1].set_xlabel("simulated time (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def utilization_html(rows: list[dict[str, float]], max_rows: int = 1000) -> str:
    """The utilisation over time as HTML: the totals over the run, then (folded) the table of
    its time bins, so that the page shows the bins without the figure (no matplotlib)."""
    alloc = sum((r["t_end"] - r["t_start"]) * r["allocated"] for r in rows)
    if alloc <= 0:
        return ""
    busy = sum((r["t_end"] - r["t_start"]) * r["busy"] for r in rows)
    wait = sum((r["t_end"] - r["t_start"]) * r["waiting_mpi"] for r in rows)
    low = min(rows, key=lambda r: (r["efficiency"] if r["allocated"] > 0 else 2.0, r["t_start"]))
    out = [f"<h2>Utilisation</h2><p>{alloc:.6g} allocated core-seconds: busy {busy / alloc:.1%} "
           f"(efficiency), waiting in MPI {wait / alloc:.1%}, idle {1 - (busy + wait) / alloc:.1%}; "
           f"lowest efficiency {low['efficiency']:.1%} in [{low['t_start']:.6g}, {low['t_end']:.6g}] s "
           f"({len(rows)} bins)</p>",
           "<details><summary>utilisation per time bin</summary><table class='bins'><tr><th>start (s)</th>"
           "<th>end (s)</th><th>allocated cores</th><th>busy cores</th><th>waiting in MPI</th>"
           "<th>efficiency</th><th>power (W)</th></tr>"]
    for r in rows[:max_rows]:
        out.append(f"<tr><td>{r['t_start']:.6g}</td><td>{r['t_end']:.6g}</td><td>{r['allocated']:.6g}</td>"
                   f"<td>{r['busy']:.6g}</td><td>{r['waiting_mpi']:.6g}</td><td>{r['efficiency']:.1%}</td>"
                   f"<td>{r['power_W']:.6g}</td></tr>")
    more = f"<p>(the first {max_rows} of {len(rows)} bins)</p>" if len(rows) > max_rows else ""
    out.append(f"</table>{more}</details>")
    return "".join(out)


def _io_html(io: dict[str, Any], top: int = 64) -> str:
    """The report's file I/O: per file, per rank, per server (the busiest first)."""
    out = ["<h2>File I/O</h2>"]
    head = "<th>bytes written</th><th>bytes read</th><th>operations</th><th>time (s)</th></tr>"
    for title, key in (("files", "files"), ("ranks", "ranks")):
        rows = sorted(io.get(key, {}).items(), key=lambda kv: -kv[1].get("time_s", 0.0))[:top]
        if not rows:
            continue
        out.append(f"<h3>{title}</h3><table><tr><th>{title[:-1]}</th>{head}")
        for name, v in rows:
            out.append(f"<tr><td style='text-align:left'>{html.escape(str(name))}</td>"
                       f"<td>{v['bytes_written']}</td><td>{v['bytes_read']}</td>"
                       f"<td>{v['operations']}</td><td>{v.get('time_s', 0.0):.6g}</td></tr>")
        out.append("</table>")
    servers = sorted(io.get("servers", {}).items(), key=lambda kv: -kv[1]["disk_busy_s"])[:top]
    if servers:
        out.append("<h3>servers</h3><table><tr><th>server</th><th>bytes written</th><th>bytes read</th>"
                   "<th>cache hits (bytes)</th><th>disk busy (s)</th></tr>")
        for name, v in servers:
            out.append(f"<tr><td style='text-align:left'>{html.escape(name)}</td><td>{v['bytes_written']}</td>"
                       f"<td>{v['bytes_read']}</td><td>{v['cache_hit_bytes']}</td>"
                       f"<td>{v['disk_busy_s']:.6g}</td></tr>")
        out.append("</table>")
    return "".join(out)


def _memory_html(mem: dict[str, Any]) -> str:
    """The report's memory capacity: each host's peak occupancy and slowdown there."""
    hosts = mem.get("hosts", {})
    if not hosts:
        return ""
    out = ["<h2>Memory</h2><table><tr><th>host</th><th>ram (bytes)</th><th>swap (bytes)</th>"
           "<th>peak (bytes)</th><th>slowdown at the peak</th></tr>"]
    for name, v in sorted(hosts.items(), key=lambda kv: -kv[1]["peak_bytes"]):
        out.append(f"<tr><td style='text-align:left'>{html.escape(name)}</td><td>{v['ram']:.6g}</td>"
                   f"<td>{v['swap']:.6g}</td><td>{v['peak_bytes']:.6g}</td>"
                   f"<td>{v['peak_slowdown']:.6g}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _summary_html(summary: Any) -> str:
    """The run's headline: predicted makespan, platform, ranks and outcome (a RunResult, or
    the dict of its --json file)."""
    d = summary if isinstance(summary, dict) else summary.to_json()
    status = "" if d.get("status", "ok") == "ok" else f"; status <b>{html.escape(str(d['status']))}</b>"
    energy = d.get("energy") or {}
    joules = f"; energy {energy['total_J']:.6g} J" if "total_J" in energy else ""
    return (f"<p>Predicted makespan <b>{d['makespan_s']:.9g} s</b> on platform "
            f"<b>{html.escape(str(d['platform']))}</b>: {d['np']} ranks on {d['hosts_used']} hosts; "
            f"{d['mpi_calls']} MPI calls, {d['messages']} messages{joules}{status}</p>")


def html_report(figures: list[Path], report_json: Path | None, out: Path, title: str,
                summary: Any = None) -> Path:
    parts = []
    if summary is not None:
        parts.append(_summary_html(summary))
    if report_json is not None:
        data = json.loads(report_json.read_text())
        tot = data["total"]
        parts.append(f"<p>computation {tot['compute_s']:.6g} s, MPI {tot['mpi_s']:.6g} s (all ranks); "
                     f"load imbalance {tot['load_imbalance']:.1%}; "
                     f"{tot['bytes_sent']:.6g} bytes sent point-to-point</p>")
        parts.append("<h2>MPI calls</h2><table><tr><th>call</th><th>calls</th><th>time (s)</th></tr>")
        for name, v in sorted(data["calls"].items(), key=lambda kv: -kv[1]["time_s"]):
            parts.append(f"<tr><td style='text-align:left'>{html.escape(name)}</td>"
                         f"<td>{v['count']}</td><td>{v['time_s']:.6g}</td></tr>")
        parts.append("</table><h2>Ranks</h2><table><tr><th>rank</th><th>end (s)</th>"
                     "<th>computation (s)</th><th>MPI (s)</th><th>bytes sent</th></tr>")
        for r in data["ranks"][:256]:
            parts.append(f"<tr><td>{r['rank']}</td><td>{r['end_s']:.6g}</td><td>{r['compute_s']:.6g}</td>"
                         f"<td>{r['mpi_s']:.6g}</td><td>{r['bytes_sent']:.6g}</td></tr>")
        parts.append("</table>")
        if data.get("io"):
            parts.append(_io_html(data["io"]))
        if data.get("memory"):
            parts.append(_memory_html(data["memory"]))
        util = utilization_path(report_json)
        if util.exists():
            parts.append(utilization_html(read_utilization(util)))
    return write_page(out, title, parts, figures)


def write_page(out: Path, title: str, parts: list[str], figures: list[Path], note: str = "") -> Path:
    """One self-contained HTML page (the single runs' report.html and ``smpy batch --html``):
    ``title``, the HTML ``parts`` in order, then each figure as an embedded PNG under a
    heading of its file's stem; ``note`` (escaped) after the parts, such as why there are no
    figures. The same inputs give the same bytes."""
    page = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
            "th{background:#eee}img{max-width:100%}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>", *parts]
    if note:
        page.append(f"<p class='note'>{html.escape(note)}</p>")
    for fig in figures:
        b64 = base64.b64encode(fig.read_bytes()).decode()
        page.append(f"<h2>{html.escape(fig.stem)}</h2><img alt='{html.escape(fig.stem)}' "
                    f"src='data:image/png;base64,{b64}'>")
    page.append("</body></html>")
    out.write_text("\n".join(page), encoding="utf-8")
    return out


def make_all(outdir: Path, trace: Path | None = None, power_csv: Path | None = None,
             report_json: Path | None = None, title: str = "smpy run", summary: Any = None) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    figs = []
    if trace is not None and trace.exists():
        figs.append(gantt(trace, outdir / "gantt.png"))
    if power_csv is not None and power_csv.exists():
        figs.append(power(power_csv, outdir / "power.png"))
    if report_json is not None and report_json.exists():
        figs.append(matrix(report_json, outdir / "matrix.png"))
        util = utilization_path(report_json)
        if util.exists() and read_utilization(util):
            figs.append(utilization(util, outdir / "utilization.png"))
    page = html_report(figs, report_json if report_json is not None and report_json.exists() else None,
                       outdir / "report.html", title, summary)
    return [*figs, page]

