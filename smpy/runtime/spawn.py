"""Dynamic processes: MPI_Comm_spawn / MPI_Comm_spawn_multiple inside one emulation.

A spawn adds new :class:`~smpy.runtime.world.Process` objects to the running
:class:`~smpy.runtime.world.World` (global indices after the existing ones). The new
processes form their own MPI_COMM_WORLD (a fresh :class:`CommImpl` over them, rank order =
the order of the commands, then of the copies) and are joined to the spawning
communicator's group by a new intercommunicator pair (:func:`smpy.runtime.inter.make_pair`):
the parents get the parent side, each child keeps the child side as its
``MPI_Comm_get_parent``.

Placement and launch cost (:mod:`smpy.runtime.nodes`): the ``host`` info key names the host of
every process of that command; otherwise the processes take whole nodes from the free pool
(booting off nodes when the free ones run out). The spawning root then waits for the boots and
the launch cost, and the children start after it.

Commands: smpy runs Python programs in-process, so a command must be a Python interpreter
(``sys.executable``, or any ``python*`` executable) with the arguments of a program (an
optional list of interpreter flags, then ``script.py args``, ``-m module args`` or
``-c code args``), or a Python script itself (``.py`` or a ``#!...python`` first line).
Anything else is rejected with ``MPI_ERR_SPAWN`` (MPICH would try to exec it; a non-MPI
program would never connect). :func:`resolve` turns a command into a :class:`Program`.

The runtime does not start ranks itself (it may not import the launcher): the launcher
installs ``world.spawn_hook(processes, programs)``, which builds each new rank's isolated
context and actor and starts it. The time a spawn costs (the collective over the parents
and the connection messages) is modelled by the facade (:mod:`smpy.mpi.spawn`).
"""

from __future__ import annotations

import os
import re
import sys
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import Trigger
from smpy.kernel.actors import block_on
from smpy.runtime import errors, nodes
from smpy.runtime.comm import CommImpl
from smpy.runtime.inter import InterPair, make_pair

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

#: interpreter flags taking no value, and those taking one (``-W arg``, ``-X opt``)
_FLAGS = set("bBdEhiIOPqRsSuvVx")
_FLAGS_WITH_VALUE = set("WX")
_PYTHON_NAME = re.compile(r"^python[0-9.]*[a-z]*(\.exe)?$")


@dataclass
class Program:
    """What one spawned rank runs: ``kind`` is ``script``, ``module`` or ``code``;
    ``target`` the path, module name or program text; ``argv`` its ``sys.argv``."""

    kind: str
    target: str
    argv: list[str]
    wdir: str
    appnum: int = 0


@dataclass
class App:
    """One command of a spawn (``MPI_Comm_spawn_multiple`` has several)."""

    command: str
    args: list[str]
    maxprocs: int
    info: dict[str, str] = field(default_factory=dict)


def _is_python(command: str) -> bool:
    if command == sys.executable:
        return True
    try:
        if os.path.realpath(command) == os.path.realpath(sys.executable):
            return True
    except OSError:
        pass
    return bool(_PYTHON_NAME.match(os.path.basename(command)))


def _is_python_script(path: str) -> bool:
    if path.endswith(".py"):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def resolve(app: App, appnum: int, call: str) -> Program:
    """The Python program behind ``app`` (raises MPI_ERR_SPAWN when it is not one)."""
    wdir = app.info.get("wdir") or os.getcwd()
    command = app.command
    if not command:
        errors.raise_error(errors.ERR_SPAWN, f"{call}: empty command")
    if not _is_python(command):
        path = command if os.path.isabs(command) else os.path.join(wdir, command)
        if os.path.isfile(path) and _is_python_script(path):
            return Program("script", path, [command, *app.args], wdir, appnum)
        errors.raise_error(errors.ERR_SPAWN, f"{call}: cannot spawn {command!r}: smpy runs Python "
                           "programs only (a Python interpreter with a script, -m or -c, or a "
                           "Python script)")
    args = list(app.args)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a in ("-m", "-c"):
            if i + 1 >= len(args):
                errors.raise_error(errors.ERR_SPAWN, f"{call}: Argument expected for the {a} option")
            rest = args[i + 2:]
            if a == "-m":
                return Program("module", args[i + 1], ["-m", *rest], wdir, appnum)
            return Program("code", args[i + 1], ["-c", *rest], wdir, appnum)
        if a.startswith("-m") or a.startswith("-c"):  # -mpkg / -c"code" in one word
            rest = args[i + 1:]
            kind = "module" if a[1] == "m" else "code"
            return Program(kind, a[2:], [a[:2], *rest], wdir, appnum)
        letters = a[1:]
        if letters[0] in _FLAGS_WITH_VALUE:
            i += 1 if len(letters) > 1 else 2
            continue
        if all(c in _FLAGS for c in letters):
            i += 1
            continue
        errors.raise_error(errors.ERR_SPAWN, f"{call}: unknown interpreter option {a!r}")
    if i >= len(args) or args[i] == "-":
        errors.raise_error(errors.ERR_SPAWN, f"{call}: a spawned Python interpreter needs a program "
                           "(script, -m module or -c code); smpy does not feed it standard input")
    script = args[i]
    path = script if os.path.isabs(script) else os.path.join(wdir, script)
    if not os.path.isfile(path):
        errors.raise_error(errors.ERR_SPAWN, f"{call}: can't open file {script!r}: No such file or directory")
    return Program("script", path, [script, *args[i + 1:]], wdir, appnum)


def place(world: World, apps: list[App], call: str) -> tuple[list[Any], float]:
    """Hosts of the new processes and the launch delay (:mod:`smpy.runtime.nodes`: the
    ``host`` info key names a node, else whole nodes from the free pool, booted if off)."""
    return world.nodes.place([(app.maxprocs, app.info.get("host") or None) for app in apps], call)


def launch(proc: Process, parent: CommImpl, apps: list[App], call: str) -> InterPair:
    """Create the processes of ``apps`` (at the spawn's root ``proc``), their world and the
    intercommunicator with ``parent``'s group; start them through ``world.spawn_hook``.
    Raises MPI errors (nothing is created then)."""
    world = proc.world
    hook = world.spawn_hook
    if hook is None:
        errors.raise_error(errors.ERR_SPAWN, f"{call}: this emulation cannot start processes")
    programs: list[Program] = []
    for appnum, app in enumerate(apps):
        prog = resolve(app, appnum, call)
        programs.extend([prog] * app.maxprocs)
    hosts, delay = place(world, apps, call)
    nodes.wait(world.engine, delay)  # boot of the nodes taken, then the launch cost
    procs = world.add_processes(hosts, placed=True)
    members = [p.rank for p in procs]
    child_world = CommImpl(world, members, "MPI_COMM_WORLD")
    pair = make_pair(world, list(parent.group), members, a_is_low=True)
    for p, prog in zip(procs, programs):
        p.comm_world = child_world
        p.parent = pair.b
        p.appnum = prog.appnum
    hook(procs, programs)
    return pair


# -- ports, names and joins (MPI_Open_port, MPI_Comm_accept/connect, MPI_Comm_join) -------
# The rendezvous is in the world (one emulation = one process manager): a connecting root
# queues a request on the port and sleeps until an accepting root takes it and builds the
# intercommunicator. The messages that connection costs are sent by the facade afterwards.
class _Request:
    __slots__ = ("group", "root", "trigger", "pair", "acceptor")

    def __init__(self, proc: Process, group: list[int], label: str) -> None:
        self.group = group
        self.root = proc.rank
        self.trigger = Trigger(proc.world.engine, label)
        self.pair: InterPair | None = None
        self.acceptor = -1


class _Port:
    __slots__ = ("name", "owner", "pending", "acceptor")

    def __init__(self, name: str, owner: int) -> None:
        self.name = name
        self.owner = owner
        self.pending: list[_Request] = []
        self.acceptor: Trigger | None = None


class _Dpm:
    def __init__(self) -> None:
        self.ports: dict[str, _Port] = {}
        self.names: dict[str, str] = {}
        self.joins: dict[tuple[Any, Any], _Request] = {}
        self.count = 0


_dpm: weakref.WeakKeyDictionary[World, _Dpm] = weakref.WeakKeyDictionary()


def _state(world: World) -> _Dpm:
    st = _dpm.get(world)
    if st is None:
        st = _dpm[world] = _Dpm()
    return st


def open_port(proc: Process) -> str:
    st = _state(proc.world)
    st.count += 1
    name = f"smpy-port#{st.count}$rank#{proc.rank}$"
    st.ports[name] = _Port(name, proc.rank)
    return name


def close_port(proc: Process, name: str, call: str = "MPI_Close_port") -> None:
    st = _state(proc.world)
    if st.ports.pop(name, None) is None:
        errors.raise_error(errors.ERR_PORT, f"{call}: Invalid port name {name!r}")


def publish(proc: Process, service: str, port: str, call: str = "MPI_Publish_name") -> None:
    st = _state(proc.world)
    if service in st.names:
        errors.raise_error(errors.ERR_SERVICE, f"{call}: service {service!r} is already published")
    st.names[service] = port


def unpublish(proc: Process, service: str, port: str, call: str = "MPI_Unpublish_name") -> None:
    st = _state(proc.world)
    if st.names.get(service) is None:
        errors.raise_error(errors.ERR_SERVICE, f"{call}: service {service!r} is not published")
    del st.names[service]


def lookup(proc: Process, service: str, call: str = "MPI_Lookup_name") -> str:
    port = _state(proc.world).names.get(service)
    if port is None:
        errors.raise_error(errors.ERR_NAME, f"{call}: service {service!r} is not published")
    return port


def accept(proc: Process, comm: CommImpl, name: str, call: str = "MPI_Comm_accept") -> tuple[InterPair, int]:
    """At the accepting root: wait for a connection on port ``name``; the pair's side
    ``a`` is the accepting group's; also returns the connecting root (world number)."""
    port = _state(proc.world).ports.get(name)
    if port is None:
        errors.raise_error(errors.ERR_PORT, f"{call}: Invalid port name {name!r}")
    while not port.pending:
        t = port.acceptor = Trigger(proc.world.engine, f"{call}(port={name}): waiting for a connection")
        block_on(t)
        port.acceptor = None
    req = port.pending.pop(0)
    mine = list(comm.group)
    req.pair = make_pair(proc.world, mine, req.group, a_is_low=proc.rank < req.root)
    req.acceptor = proc.rank
    req.trigger.fire()
    return req.pair, req.root


def connect(proc: Process, comm: CommImpl, name: str, call: str = "MPI_Comm_connect") -> tuple[InterPair, int]:
    """At the connecting root: queue on port ``name`` and wait for the acceptor; the
    connecting group's side is ``b``; also returns the accepting root (world number)."""
    port = _state(proc.world).ports.get(name)
    if port is None:
        errors.raise_error(errors.ERR_PORT, f"{call}: Invalid port name {name!r}")
    req = _Request(proc, list(comm.group), f"{call}(port={name}): waiting for the acceptor")
    port.pending.append(req)
    if port.acceptor is not None:
        port.acceptor.fire()
    block_on(req.trigger)
    assert req.pair is not None
    return req.pair, req.acceptor


def join(proc: Process, local: Any, peer: Any, call: str = "MPI_Comm_join") -> CommImpl:
    """MPI_Comm_join between the two ends of a socket (``local``/``peer`` addresses):
    the side of this process of a new two-process intercommunicator."""
    st = _state(proc.world)
    other = st.joins.pop((peer, local), None)
    if other is not None:
        pair = make_pair(proc.world, [other.root], [proc.rank], a_is_low=other.root < proc.rank)
        other.pair = pair
        other.trigger.fire()
        return pair.b
    req = _Request(proc, [proc.rank], f"{call}: waiting for the other end of the socket")
    st.joins[(local, peer)] = req
    block_on(req.trigger)
    assert req.pair is not None
    return req.pair.a
