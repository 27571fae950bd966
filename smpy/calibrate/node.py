"""``smpy calibrate node -o calibration/NAME/``: every calibration this node allows, as one platform.

Steps, each run if this machine allows it and otherwise reported as skipped with the reason
(never a traceback), each writing its own files in the output directory:

1. **mpi** -- the local MPI library (``MPI.Get_library_version()`` under the real ``mpiexec``)
   and the collective selector that matches it (MPICH -> ``mpich``, Open MPI -> ``ompi``,
   Intel MPI -> ``impi``, MVAPICH2 -> ``mvapich2``);
2. **host-speed** -- the flop rate of one core (single-threaded numpy matrix products):
   the target hosts' ``speed`` and the emulation's ``smpi/host-speed``;
3. **network** -- a real ping-pong between two ranks of this node (``smpy calibrate
   network``): the intra-node latency and bandwidth (the fitted segments' first intercept and
   last bandwidth) become each host's ``loopback``; the library's protocol threshold, probe
   semantics and probe/test costs go to ``config``. One node cannot measure the network
   between nodes: ``--network BW/LAT`` (default 10Gbps/20us) gives it;
4. **memory** -- per-core and all-core memory bandwidth (``smpy calibrate memory``);
5. **storage** -- ``smpy calibrate storage --storage-path PATH`` (default ``.``): read/write
   bandwidth and latency of the file system there, a ``filesystems:`` entry of the platform;
6. **power** -- from RAPL (``/sys/class/powercap/intel-rapl:*``) when readable: package power
   idle and with every core busy.

The platform (``platform.yaml``) is a cluster of ``--nodes`` such nodes, each number commented
with the step it comes from; ``summary.md`` and ``summary.html`` list the steps with their
outcome, duration and files; ``provenance.json`` records the machine, the software and the
commands. ``--platform calibration/NAME/platform.yaml`` then predicts on it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import html
import io
import json
import math
import os
import platform as _platform
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smpy.support.mpiexec import default_mpiexec, require_mpiexec
from smpy.support.units import (
    format_bandwidth,
    format_byte_rate,
    format_speed,
    format_time,
    parse_bandwidth,
    parse_time,
)

SELECTORS = (("MVAPICH", "mvapich2"), ("Intel", "impi"), ("Open MPI", "ompi"), ("MPICH", "mpich"))


class Skipped(Exception):
    """A step this machine does not allow; the message says why."""


@dataclass
class Step:
    name: str
    status: str = "pending"  # ok | skipped | failed
    detail: str = ""
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)


@dataclass
class Node:
    """What the steps found (None: not measured)."""

    cores: int = os.cpu_count() or 1
    mpi: str | None = None
    selector: str | None = None
    speed: float | None = None
    loopback: tuple[float, float] | None = None  # (bandwidth B/s, latency s)
    config: dict[str, str] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    filesystems: list[dict[str, Any]] | None = None
    power: dict[str, float] | None = None  # idle, all_cores (W)


def detect_mpi(mpiexec: str) -> tuple[str, str]:
    """The library version string of the real MPI and the matching selector."""
    code = "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
    out = subprocess.run([mpiexec, "-n", "1", sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"{mpiexec} -n 1 python: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    version = out.stdout.strip().splitlines()[-1]
    for key, selector in SELECTORS:
        if key.lower() in version.lower():
            return version, selector
    return version, "ompi"


def _rapl_domains() -> list[Path]:
    root = Path("/sys/class/powercap")
    if not root.is_dir():
        raise Skipped("no RAPL on this machine (/sys/class/powercap is absent: a VM, or not x86)")
    doms = sorted(p for p in root.glob("intel-rapl:*") if ":" in p.name and p.name.count(":") == 1)
    if not doms:
        raise Skipped("no RAPL package domain under /sys/class/powercap")
    for d in doms:
        if not os.access(d / "energy_uj", os.R_OK):
            raise Skipped(f"{d / 'energy_uj'} is not readable (root only since Linux 5.10)")
    return doms


def measure_power(seconds: float = 2.0) -> dict[str, float]:
    """Package power idle, then with one busy process per core (RAPL, all packages)."""
    doms = _rapl_domains()

    def energy() -> float:
        return sum(int((d / "energy_uj").read_text()) for d in doms) / 1e6

    def watts() -> float:
        e0, t0 = energy(), time.monotonic()
        time.sleep(seconds)
        return (energy() - e0) / (time.monotonic() - t0)

    idle = watts()
    spin = "import time\nt = time.time()\nwhile time.time() - t < %f: pass\n" % (seconds + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        busy = watts()
    finally:
        for p in procs:
            p.wait()
    return {"idle": idle, "all_cores": max(busy, idle)}


# -- the steps ----------------------------------------------------------------------------------

def step_mpi(ns: argparse.Namespace, node: Node, out: Path) -> str:
    try:
        mpiexec = require_mpiexec(ns.mpiexec)
    except LookupError as exc:
        raise Skipped(str(exc)) from None
    node.mpi, node.selector = detect_mpi(mpiexec)
    return f"{node.mpi}; collective selector {node.selector}"


def step_host_speed(ns: argparse.Namespace, node: Node, out: Path) -> str:
    from smpy.shim.blas import single_thread_blas
    from smpy.timing.bench import measure_host_speed

    single_thread_blas()
    node.speed = float(measure_host_speed(ns.seconds))
    return f"{format_speed(node.speed)} per core"


def step_network(ns: argparse.Namespace, node: Node, out: Path) -> str:
    from smpy.calibrate import network

    if node.mpi is None:
        raise Skipped("needs the real MPI (the mpi step was skipped)")
    argv = ["-o", str(out / "network"), "--max-size", str(ns.max_size), "--reps", str(ns.reps),
            "--mpiexec", ns.mpiexec]
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        code = network.main(argv)
    (out / "network.txt").write_text(buf.getvalue(), encoding="utf-8")
    if code != 0:
        raise RuntimeError(f"smpy calibrate network exited with {code}: {buf.getvalue()[-300:]}")
    import yaml

    fragment = yaml.safe_load((out / "network.yaml").read_text(encoding="utf-8"))["config"]
    segs = _segments(buf.getvalue())
    if segs:
        node.loopback = (segs[-1][2], segs[0][1])
    for key in ("smpi/send-is-detached-thresh", "smpy/probe-sees", "smpi/iprobe", "smpi/test",
                "smpi/grow-injected-times"):
        if key in fragment:
            node.config[key] = str(fragment[key])
    lb = (f"intra-node {format_bandwidth(node.loopback[0])}, {format_time(node.loopback[1])}"
          if node.loopback else "no segments")
    return f"{lb}; eager up to {node.config.get('smpi/send-is-detached-thresh', '?')} B"


def _segments(text: str) -> list[tuple[int, float, float]]:
    """(start B, latency s, bandwidth B/s) of the segments printed by calibrate network."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("from ") and "latency" in line and "bandwidth" in line:
            start = int(line.split()[1])
            try:
                lat = parse_time(line.split("latency ")[1].split(",")[0].strip())
                bw = parse_bandwidth(line.split("bandwidth ")[1].strip())
            except ValueError:  # a flat segment (no measurable bandwidth): "inf bps"
                continue
            if math.isfinite(bw) and bw > 0:
                rows.append((start, lat, bw))
    return rows


def step_memory(ns: argparse.Namespace, node: Node, out: Path) -> str:
    from smpy.calibrate import memory

    est = memory.measure(node.cores, memory.DEFAULT_ELEMENTS, ns.seconds, None, ns.rounds)
    text = memory.yaml_fragment(est)
    (out / "memory.yaml").write_text(text, encoding="utf-8")
    import yaml

    node.memory = yaml.safe_load(text)["memory"]
    return (f"1 core {format_byte_rate(est.core_bandwidth)}, {est.nprocs} cores "
            f"{format_byte_rate(est.bandwidth)} (sigma {est.sigma:.3g})")


def step_storage(ns: argparse.Namespace, node: Node, out: Path) -> str:
    from smpy.calibrate import storage

    argv = [ns.storage_path, "-o", str(out / "storage")] + (["--quick"] if ns.storage_quick else [])
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        code = storage.main(argv)
    (out / "storage.txt").write_text(buf.getvalue(), encoding="utf-8")
    if code != 0:
        raise RuntimeError(f"smpy calibrate storage exited with {code}")
    import yaml

    frag = out / "storage.yaml"
    if frag.exists():
        node.filesystems = (yaml.safe_load(frag.read_text(encoding="utf-8")) or {}).get("filesystems")
    fs = (node.filesystems or [{}])[0].get("disk", {})
    return (f"{ns.storage_path}: read {fs.get('read', '?')}, write {fs.get('write', '?')}, "
            f"latency {fs.get('latency', '?')} (storage.txt)")


def step_power(ns: argparse.Namespace, node: Node, out: Path) -> str:
    node.power = measure_power()
    return f"idle {node.power['idle']:.1f} W, all cores {node.power['all_cores']:.1f} W (RAPL packages)"


STEPS: list[tuple[str, Callable[[argparse.Namespace, Node, Path], str]]] = [
    ("mpi", step_mpi), ("host-speed", step_host_speed), ("network", step_network),
    ("memory", step_memory), ("storage", step_storage), ("power", step_power)]


# -- the platform and the summary ---------------------------------------------------------------

def platform_yaml(node: Node, ns: argparse.Namespace, steps: list[Step]) -> str:
    bw_s, _, lat_s = ns.network.partition("/")
    lines = [f"# A cluster of {ns.nodes} nodes like {socket.gethostname()}, written by "
             f"`smpy calibrate node` on {_dt.date.today().isoformat()}.",
             "# Each number says which step measured it; numbers no step measured are marked.",
             f"# Steps: {', '.join(f'{s.name} {s.status}' for s in steps)}.",
             f"name: {ns.name}", "config:"]
    lines.append("  network/model: SMPI")
    if node.selector:
        lines.append(f"  smpi/coll-selector: {node.selector}   # mpi: {node.mpi}")
    if node.speed:
        lines.append(f"  smpi/host-speed: {node.speed:.6g}f   # host-speed (this machine's core)")
    for k, v in node.config.items():
        lines.append(f"  {k}: {json.dumps(v)}   # network (the real library's protocol)")
    lines += ["clusters:", f"  - name: {ns.name}", "    prefix: node-", f"    count: {ns.nodes}",
              f"    cores: {node.cores}   # this node's os.cpu_count()"]
    speed = f"{node.speed:.6g}f" if node.speed else "1Gf"
    lines.append(f"    speed: {speed}   # " + ("host-speed" if node.speed else "NOT measured (host-speed skipped)"))
    lines.append(f"    bandwidth: {bw_s}   # --network: between nodes, not measurable on one node")
    lines.append(f"    latency: {lat_s}   # --network")
    if node.loopback:
        lines.append(f"    loopback: {{bandwidth: {node.loopback[0]:.6g}Bps, latency: "
                     f"{node.loopback[1]:.6g}s}}   # network: intra-node ping-pong")
    if node.memory:
        mem = ", ".join(f"{k}: {v}" for k, v in node.memory.items())
        lines.append(f"    memory: {{{mem}}}   # memory (triad)")
    if node.power:
        p = node.power
        lines.append(f"    power: {{pstates: [{{idle: {p['idle']:.1f}W, epsilon: {p['idle']:.1f}W, "
                     f"all_cores: {p['all_cores']:.1f}W}}]}}   # power (RAPL: packages only)")
    if node.filesystems:
        import yaml

        lines.append(yaml.safe_dump({"filesystems": node.filesystems}, sort_keys=False).rstrip())
    return "\n".join(lines) + "\n"


def summary_md(steps: list[Step], ns: argparse.Namespace, wall: float) -> str:
    rows = ["| step | outcome | time | files | details |", "|---|---|---|---|---|"]
    for s in steps:
        rows.append(f"| {s.name} | {s.status} | {s.seconds:.1f} s | {', '.join(s.files) or '-'} | "
                    f"{s.detail.replace('|', '/')} |")
    return (f"# Calibration of {socket.gethostname()} ({_dt.datetime.now().isoformat(timespec='seconds')})\n\n"
            f"`smpy calibrate node -o {ns.output}` in {wall:.0f} s; the platform: `platform.yaml` "
            f"({ns.nodes} nodes, network {ns.network} given).\n\n" + "\n".join(rows) + "\n")


def summary_html(steps: list[Step], platform_text: str, title: str) -> str:
    rows = "".join(
        f"<tr class='{s.status}'><td>{html.escape(s.name)}</td><td>{s.status}</td>"
        f"<td>{s.seconds:.1f} s</td><td>{html.escape(s.detail)}</td><td>"
        + " ".join(f"<a href='{html.escape(f)}'>{html.escape(f)}</a>" for f in s.files)
        + "</td></tr>" for s in steps)
    imgs = "".join(f"<figure><img src='{html.escape(f)}' width='560'><figcaption>{html.escape(f)}"
                   "</figcaption></figure>" for s in steps for f in s.files if f.endswith(".png"))
    return ("<!doctype html><meta charset='utf-8'><title>" + html.escape(title) + "</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;border-bottom:1px "
            "solid #ddd}.skipped{color:#888}.failed{color:#b00}</style>"
            f"<h1>{html.escape(title)}</h1><table><tr><th>step</th><th>outcome</th><th>time</th>"
            f"<th>details</th><th>files</th></tr>{rows}</table>{imgs}"
            f"<h2>platform.yaml</h2><pre>{html.escape(platform_text)}</pre>")


def provenance(ns: argparse.Namespace, node: Node) -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    import numpy

    return {"host": socket.gethostname(), "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "cpu": cpu, "cores": node.cores, "os": _platform.platform(),
            "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "python": sys.version.split()[0], "numpy": numpy.__version__, "mpi": node.mpi,
            "command": ["smpy", "calibrate", "node", *sys.argv[3:]]}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="smpy calibrate node", description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="output directory, e.g. calibration/mynode")
    ap.add_argument("--name", default=None, help="platform name (default: the directory's name)")
    ap.add_argument("--nodes", type=int, default=16, help="nodes of the cluster written (default 16)")
    ap.add_argument("--network", default="10Gbps/20us", metavar="BW/LAT",
                    help="the network between nodes, which one node cannot measure (default 10Gbps/20us)")
    ap.add_argument("--mpiexec", default=default_mpiexec(), help="mpiexec of the real runs")
    ap.add_argument("--skip", action="append", default=[], choices=[n for n, _ in STEPS],
                    help="leave a step out (repeatable)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of each timed phase (s)")
    ap.add_argument("--rounds", type=int, default=3, help="memory: rounds (median kept)")
    ap.add_argument("--max-size", type=int, default=22, help="network: largest message, a power of two")
    ap.add_argument("--reps", type=int, default=3, help="network: repetitions per size")
    ap.add_argument("--storage-path", default=".", help="storage: where to measure")
    ap.add_argument("--storage-quick", action="store_true", help="storage: 8 MiB, about 2 s (tests)")
    return ap


def _check(ns: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    bw, sep, lat = ns.network.partition("/")
    try:
        if not sep:
            raise ValueError("expected BW/LAT")
        parse_bandwidth(bw)
        parse_time(lat)
    except ValueError as exc:
        ap.error(f"--network {ns.network!r}: {exc} (e.g. 10Gbps/20us)")
    if ns.nodes < 1:
        ap.error("--nodes must be at least 1")
    if not ns.seconds > 0 or ns.rounds < 1 or ns.reps < 1:
        ap.error("--seconds must be positive, --rounds and --reps at least 1")


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    ns = ap.parse_args(argv)
    _check(ns, ap)
    out = Path(ns.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"smpy calibrate node: error: -o {ns.output}: {exc.strerror}", file=sys.stderr)
        return 2
    ns.name = ns.name or out.resolve().name
    node, steps, t_start = Node(), [], time.monotonic()
    for name, fn in STEPS:
        step = Step(name)
        steps.append(step)
        if name in ns.skip:
            step.status, step.detail = "skipped", "--skip"
            continue
        before = set(os.listdir(out))
        t0 = time.monotonic()
        print(f"[calibrate node] {name} ...", file=sys.stderr, flush=True)
        try:
            step.detail, step.status = fn(ns, node, out), "ok"
        except Skipped as exc:
            step.status, step.detail = "skipped", str(exc)
        except Exception as exc:  # noqa: BLE001 -- a failed step is reported, the others go on
            step.status, step.detail = "failed", f"{type(exc).__name__}: {exc}"
        step.seconds = time.monotonic() - t0
        step.files = sorted(set(os.listdir(out)) - before)
        print(f"[calibrate node] {name}: {step.status}: {step.detail}", file=sys.stderr, flush=True)
    text = platform_yaml(node, ns, steps)
    (out / "platform.yaml").write_text(text, encoding="utf-8")
    wall = time.monotonic() - t_start
    (out / "summary.md").write_text(summary_md(steps, ns, wall), encoding="utf-8")
    (out / "summary.html").write_text(summary_html(steps, text, f"smpy calibrate node: {ns.name}"),
                                      encoding="utf-8")
    (out / "provenance.json").write_text(json.dumps(provenance(ns, node), indent=2) + "\n",
                                         encoding="utf-8")
    print(f"[calibrate node] wrote {out / 'platform.yaml'}, summary.md, summary.html, provenance.json "
          f"({wall:.0f} s)", file=sys.stderr)
    return 0 if all(s.status != "failed" for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
