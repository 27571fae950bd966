"""Paje traces (``--trace FILE.paje``): a parser built from the file's own ``%EventDef``
header checks every event line against its definition (field count and types), then the
semantics ViTE relies on: types and entity values defined before use, containers created
before use and not used after their destruction, balanced push/pop states per container,
time order, every link end paired with an earlier start. SMPI's own output
(``smpirun -trace``) goes through the same parser, and smpy's has the same event kinds and
state names for the same program."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from smpy.cli.launch import run

ROOT = Path(__file__).resolve().parents[1]
XML = ROOT / "benchmarks" / "vs_smpi" / "cluster64.xml"


@dataclass
class Paje:
    defs: dict[str, tuple[str, list[tuple[str, str]]]] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)  # event name -> lines
    types: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # alias -> (kind, parent, name)
    link_ends: dict[str, tuple[str, str]] = field(default_factory=dict)  # link type -> container types
    values: dict[str, tuple[str, str]] = field(default_factory=dict)  # alias -> (type, name)
    containers: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # alias -> (type, parent, name)
    destroyed: set[str] = field(default_factory=set)
    states: dict[str, list[str]] = field(default_factory=dict)  # container -> stack of value names
    state_names: set[str] = field(default_factory=set)
    set_states: dict[str, list[tuple[float, str]]] = field(default_factory=dict)  # container -> (time, state)
    links: dict[str, tuple[float, str]] = field(default_factory=dict)
    ended: int = 0
    variables: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)
    end: float = 0.0


def _header(p: Paje, lines: list[str]) -> int:
    """%EventDef <name> <number> / %  <field> <type> / %EndEventDef; returns the first event line."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") or not line.strip():
            i += 1
            continue
        if not line.startswith("%"):
            break
        words = line[1:].split()
        assert words[0] == "EventDef" and len(words) == 3, f"line {i + 1}: {line!r}"
        name, num = words[1], words[2]
        assert num not in p.defs, f"event number {num} defined twice"
        fields = []
        i += 1
        while not lines[i].startswith("%EndEventDef"):
            f = lines[i][1:].split()
            assert len(f) == 2 and f[1] in ("date", "double", "int", "hex", "string", "color"), lines[i]
            fields.append((f[0], f[1]))
            i += 1
        p.defs[num] = (name, fields)
        i += 1
    return i


def _event(p: Paje, line: str, where: str) -> tuple[str, dict]:
    """The event's name and its fields, typed as the header declares them."""
    tok = shlex.split(line)
    assert tok[0] in p.defs, f"{where}: undefined event {tok[0]}"
    name, fields = p.defs[tok[0]]
    assert len(tok) - 1 == len(fields), f"{where}: {name} has {len(fields)} fields"
    ev: dict = {}
    for (fname, ftype), value in zip(fields, tok[1:]):
        if ftype in ("date", "double"):
            ev[fname] = float(value)
        elif ftype == "int":
            ev[fname] = int(value)
        elif ftype == "color":
            rgb = [float(x) for x in value.split()]
            assert len(rgb) == 3 and all(0 <= x <= 1 for x in rgb), f"{where}: color"
            ev[fname] = value
        else:
            ev[fname] = value
    return name, ev


class _Checker:
    """The rules of each kind of Paje event, checked against what came before."""

    TYPE_KINDS = {"DefineContainerType": "container", "DefineVariableType": "variable",
                  "DefineStateType": "state", "DefineEventType": "event", "DefineLinkType": "link"}

    def __init__(self, p: Paje) -> None:
        self.p = p

    def container(self, alias: str, where: str) -> tuple[str, str, str]:
        p = self.p
        assert alias in p.containers, f"{where}: container {alias} used before its creation"
        assert alias not in p.destroyed, f"{where}: container {alias} used after its destruction"
        return p.containers[alias]

    def typed(self, alias: str, kind: str, cont: str | None, where: str) -> tuple[str, str, str]:
        p = self.p
        assert alias in p.types, f"{where}: type {alias} used before its definition"
        t = p.types[alias]
        assert t[0] == kind, f"{where}: type {alias} is a {t[0]} type, not {kind}"
        if cont is not None:  # the type belongs to the container's type
            assert t[1] == p.containers[cont][0], f"{where}: type {alias} not in container {cont}'s type"
        return t

    def define(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        assert ev["Alias"] not in p.types and ev["Alias"] not in p.values, f"{where}: alias reused"
        if kind == "DefineEntityValue":
            self.typed(ev["Type"], "state", None, where)
            p.values[ev["Alias"]] = (ev["Type"], ev["Name"])
            return
        self.typed(ev["Type"], "container", None, where)
        if kind == "DefineLinkType":
            self.typed(ev["StartContainerType"], "container", None, where)
            self.typed(ev["EndContainerType"], "container", None, where)
            p.link_ends[ev["Alias"]] = (ev["StartContainerType"], ev["EndContainerType"])
        p.types[ev["Alias"]] = (self.TYPE_KINDS[kind], ev["Type"], ev["Name"])

    def create(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        assert ev["Alias"] not in p.containers, f"{where}: container alias reused"
        parent = self.container(ev["Container"], where)
        t = self.typed(ev["Type"], "container", None, where)
        assert t[1] == parent[0], f"{where}: a {t[2]} container cannot be in a {parent[0]} one"
        p.containers[ev["Alias"]] = (ev["Type"], ev["Container"], ev["Name"])

    def destroy(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        c = self.container(ev["Name"], where)
        assert c[0] == ev["Type"], f"{where}: wrong type"
        assert not p.states.get(ev["Name"]), f"{where}: destroyed with states pushed"
        assert all(p.containers[a][1] != ev["Name"] or a in p.destroyed for a in p.containers), \
            f"{where}: destroyed before its children"
        p.destroyed.add(ev["Name"])

    def variable(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        self.container(ev["Container"], where)
        self.typed(ev["Type"], "variable", ev["Container"], where)
        p.variables.setdefault((ev["Container"], p.types[ev["Type"]][2]), []).append(
            (ev["Time"], ev["Value"]))

    def state(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        self.container(ev["Container"], where)
        self.typed(ev["Type"], "state", ev["Container"], where)
        stack = p.states.setdefault(ev["Container"], [])
        if kind in ("PushState", "SetState"):
            assert ev["Value"] in p.values, f"{where}: undefined entity value"
            assert p.values[ev["Value"]][0] == ev["Type"], f"{where}: value of another type"
            vname = p.values[ev["Value"]][1]
            p.state_names.add(vname)
            if kind == "SetState":  # replaces the state: nothing pushed (a container may end in it)
                stack.clear()
                p.set_states.setdefault(ev["Container"], []).append((ev["Time"], vname))
            else:
                stack.append(vname)
        elif kind == "PopState":
            assert stack, f"{where}: pop without push"
            stack.pop()
        else:
            stack.clear()

    def link(self, kind: str, ev: dict, where: str) -> None:
        p = self.p
        self.container(ev["Container"], where)
        self.typed(ev["Type"], "link", ev["Container"], where)
        end = ev["StartContainer"] if kind == "StartLink" else ev["EndContainer"]
        c = self.container(end, where)
        assert c[0] == p.link_ends[ev["Type"]][0 if kind == "StartLink" else 1], \
            f"{where}: the link type does not join containers of this type"
        if kind == "StartLink":
            assert ev["Key"] not in p.links, f"{where}: link key reused"
            p.links[ev["Key"]] = (ev["Time"], ev["Value"])
        else:
            assert ev["Key"] in p.links, f"{where}: link end without a start"
            assert p.links[ev["Key"]][1] == ev["Value"]
            p.ended += 1

    def new_event(self, kind: str, ev: dict, where: str) -> None:
        self.container(ev["Container"], where)

    def handler(self, kind: str):  # type: ignore[no-untyped-def]
        if kind.startswith("Define"):
            return self.define
        return {"CreateContainer": self.create, "DestroyContainer": self.destroy,
                "SetVariable": self.variable, "AddVariable": self.variable, "SubVariable": self.variable,
                "PushState": self.state, "SetState": self.state, "PopState": self.state,
                "ResetState": self.state, "StartLink": self.link, "EndLink": self.link,
                "NewEvent": self.new_event}.get(kind)


def parse(path: Path, complete: bool = True) -> Paje:
    """Parse and validate a Paje file; ``complete``: it was closed (every container destroyed,
    every state popped)."""
    p = Paje()
    lines = path.read_text().splitlines()
    i = _header(p, lines)
    assert len(p.defs) >= 17, "the header defines the Paje events"
    p.containers["0"] = ("0", "", "root")
    p.types["0"] = ("container", "", "0")
    last = 0.0
    check = _Checker(p)
    for n in range(i, len(lines)):
        line = lines[n]
        if not line.strip() or line.startswith("#"):
            continue
        where = f"line {n + 1} {line!r}"
        name, ev = _event(p, line, where)
        p.kinds[name] = p.kinds.get(name, 0) + 1
        if "Time" in ev:
            assert ev["Time"] >= last, f"{where}: time goes backwards"
            last = ev["Time"]
        kind = name[len("Paje"):]
        handle = check.handler(kind)
        if handle is not None:
            handle(kind, ev, where)
    p.end = last
    if complete:
        open_states = {c: s for c, s in p.states.items() if s}
        assert not open_states, f"states left pushed: {open_states}"
        assert set(p.containers) - {"0"} <= p.destroyed, "containers left alive"
    return p


def _names(p: Paje, type_name: str) -> list[str]:
    return sorted(c[2] for c in p.containers.values() if p.types.get(c[0], ("", "", ""))[2] == type_name)


RING = ROOT / "benchmarks" / "vs_smpi" / "cases.py"


def test_ring_trace_is_valid_paje(tmp_path: Path) -> None:
    out = tmp_path / "ring.paje"
    res = run(str(RING), np=4, platform=str(XML), args=["ring"], trace=str(out), echo=False,
                   capture=True)
    assert res.status == "ok", res.message
    p = parse(out)
    assert _names(p, "MPI") == ["rank-0", "rank-1", "rank-2", "rank-3"]
    assert _names(p, "HOST") == ["node-0", "node-1", "node-2", "node-3"]
    for alias, (t, parent, cname) in p.containers.items():  # each rank inside its host
        if p.types[t][2] == "MPI":
            assert p.containers[parent][2] == f"node-{cname.split('-')[1]}", alias
    assert {"PMPI_Init", "PMPI_Send", "PMPI_Recv", "PMPI_Finalize", "computing"} == p.state_names
    # ring of 4, then a p2p barrier and a p2p max: every message a link, all of them ended
    assert p.kinds["PajeStartLink"] == p.kinds["PajeEndLink"] == p.ended == len(p.links) > 0
    assert p.end == pytest.approx(res.makespan_s, abs=1e-9)
    speeds = [v for (c, name), v in p.variables.items() if name == "speed"]
    assert len(speeds) == 4 and all(v == [(0.0, 1e9)] for v in speeds)


NESTED = """\
name: nested
zone:
  name: world
  routing: Full
  clusters:
    - {name: left, prefix: l-, radical: 0-1, speed: 1Gf, bandwidth: 10Gbps, latency: 50us,
       properties: {wattage_per_state: "100.0:200.0"}}
    - {name: right, prefix: r-, radical: 0-1, speed: 2Gf, bandwidth: 10Gbps, latency: 50us,
       properties: {wattage_per_state: "100.0:200.0"}}
  links:
    - {name: wan, bandwidth: 1Gbps, latency: 10ms}
  routes:
    - {src: left, dst: right, gw_src: l-left_router, gw_dst: r-right_router, links: [wan]}
"""

PROG = """
import numpy as np
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
smpy.execute_flops(1e8 * (c.rank + 1))
a = np.zeros(1000)
r = c.Irecv(a, (c.rank - 1) % c.size, 1)
c.Isend(np.ones(1000), (c.rank + 1) % c.size, 1).Wait()
r.Wait()
c.Barrier()
x = c.allreduce(c.rank)
if c.rank == 0:
    raise RuntimeError("boom")
c.Barrier()
"""


def test_zones_hosts_ranks_power_and_a_crashed_run(tmp_path: Path) -> None:
    plat = tmp_path / "nested.yaml"
    plat.write_text(NESTED)
    prog = tmp_path / "prog.py"
    prog.write_text(PROG)
    hosts = tmp_path / "hosts"
    hosts.write_text("l-0\nr-0\nr-1\n")
    out = tmp_path / "t.trace"  # the suffix chooses the format
    res = run(str(prog), np=3, platform=str(plat), hostfile=str(hosts), trace=str(out),
                   cfg={"plugin": "host_energy", "smpi/simulate-computation": "no"},
                   echo=False, capture=True)
    assert res.status != "ok"  # rank 0 raised: the trace is still complete and valid
    p = parse(out)
    zones = {c[2]: (p.types[c[0]][2], c[1]) for c in p.containers.values() if p.types[c[0]][2] == "L1"}
    assert set(zones) == {"left", "right"} and all(parent == "0" for _, parent in zones.values())
    hosts_in = {c[2]: p.containers[c[1]][2] for c in p.containers.values() if p.types[c[0]][2] == "HOST"}
    assert hosts_in == {"l-0": "left", "r-0": "right", "r-1": "right"}
    assert {"PMPI_Irecv", "PMPI_Isend", "PMPI_Wait", "PMPI_Barrier", "Comm.allreduce",
            "computing"} <= p.state_names
    power = {p.containers[c][2]: v for (c, name), v in p.variables.items() if name == "power"}
    assert set(power) == {"l-0", "r-0", "r-1"}
    assert any(len({w for _, w in v}) > 1 for v in power.values())  # computing raised the power


@pytest.mark.slow
def test_interrupted_run_keeps_whole_lines(tmp_path: Path) -> None:
    """Written in batches as the run goes: without close(), the file holds the header and
    whole event lines up to the last batch (what a killed run leaves)."""
    from smpy.trace.paje import PajeTracer

    class Engine:
        now = 0.0

    class Signal:
        def connect(self, fn):  # noqa: ANN001, ANN202
            pass

    class Cpu:
        on_exec_start = on_exec_end = Signal()

    class Host:
        index, name, speed_flops, cores = 0, "h", 1e9, 1

    from types import SimpleNamespace

    eng = Engine()
    out = tmp_path / "cut.paje"
    t = PajeTracer(str(out), eng, Cpu(), SimpleNamespace(zone=None), [Host(), Host()])
    t.rank_start(0)
    t.rank_start(1)
    for i in range(5000):
        eng.now = i * 1e-6
        t.enter(0, "MPI_Send")
        t.send(0, 1, 7, 8)
        t.exit(0)
        t.enter(1, "MPI_Recv")
        t.message(0, 1, 0.0, 8, 7)
        t.exit(1)
    text = out.read_text()  # not closed
    assert text.endswith("\n") and text.count("\n15 ") > 1000
    parse(out, complete=False)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("smpirun") is None or shutil.which("smpicc") is None,
                    reason="SimGrid SMPI (smpicc/smpirun) not installed")
def test_same_event_kinds_and_state_names_as_smpi(tmp_path: Path) -> None:
    binary = tmp_path / "cases"
    subprocess.run(["smpicc", "-O2", str(ROOT / "benchmarks" / "vs_smpi" / "cases.c"), "-o", str(binary)],
                   check=True, capture_output=True, timeout=300)
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"node-{i}\n" for i in range(4)))
    subprocess.run(["smpirun", "-np", "4", "-platform", str(XML), "-hostfile", str(hosts), "-trace",
                    "--cfg=tracing/filename:smpi.paje", "--cfg=tracing/smpi/computing:yes",
                    str(binary), "ring"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    ref = parse(tmp_path / "smpi.paje")  # SMPI's own file passes the same parser
    out = tmp_path / "smpy.paje"
    res = run(str(RING), np=4, platform=str(XML), args=["ring"], trace=str(out), echo=False,
                   capture=True)
    assert res.status == "ok"
    got = parse(out)
    # SMPI (without tracing/platform) has no host containers nor variables; the rest matches
    assert set(ref.kinds) <= set(got.kinds)
    assert set(got.kinds) - set(ref.kinds) <= {"PajeDefineVariableType", "PajeSetVariable"}
    assert ref.state_names == got.state_names
    assert ref.kinds["PajeStartLink"] == got.kinds["PajeStartLink"]
    assert ref.kinds["PajePushState"] == ref.kinds["PajePopState"]
    assert set(ref.defs) == set(got.defs) and all(ref.defs[k] == got.defs[k] for k in ref.defs)


@pytest.mark.slow
def test_cli_trace_format_option(tmp_path: Path) -> None:
    import sys

    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n")
    out = tmp_path / "t.json"
    done = subprocess.run([sys.executable, "-m", "smpy", "-np", "2", "-q", "--trace", str(out),
                           "--trace-format", "paje", str(prog)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "PMPI_Barrier" in parse(out).state_names  # Paje despite the suffix
    done = subprocess.run([sys.executable, "-m", "smpy", "-np", "2", "-q", "--trace", str(tmp_path / "t.paje"),
                           "--plots", str(tmp_path / "plots"), str(prog)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "--plots draws the Chrome trace" in done.stderr
