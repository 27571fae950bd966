"""Dynamic processes: MPI_Comm_spawn / MPI_Comm_spawn_multiple inside one emulation.

A spawn adds new :class:`~smpy.runtime.world.Process` objects to the running
:class:`~smpy.runtime.world.World` (global indices after the existing ones). The new
processes form their own MPI_COMM_WORLD (a fresh :class:`CommImpl` over them, rank order =
the order of the commands, then of the copies) and are joined to the spawning
communicator's group by a new intercommunicator pair (:func:`smpy.runtime.inter.make_pair`):
the parents get the parent side, each child keeps the child side as its
``MPI_Comm_get_parent``.

Placement: the ``host`` info key names the host of every process of that command;
otherwise the processes continue the round-robin over the platform's hosts after the
processes already placed (process ``i`` on ``hosts[i % len(hosts)]``, as ``smpyrun``
places the initial ranks).

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smpy.runtime import errors
from smpy.runtime.comm import CommImpl
from smpy.runtime.inter import InterPair, make_pair

if TYPE_CHECKING:
    from smpy.runtime.world import Process, World

#: interpreter flags taking no value, and those taking one (``-W arg``, ``-X opt``)
_FLAGS = set("bBdEhiIOPqsSuvVx")
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


def place(world: World, apps: list[App], call: str) -> list[Any]:
    """Hosts of the new processes (``host`` info key, else round-robin after the placed ones)."""
    plat = world.platform
    hosts = list(plat.hosts)
    out = []
    i = len(world.processes)
    for app in apps:
        name = app.info.get("host")
        if name:
            if not plat.has_host(name):
                errors.raise_error(errors.ERR_SPAWN, f"{call}: host {name!r} is not in platform {plat.name!r}")
            out.extend([plat.host(name)] * app.maxprocs)
            i += app.maxprocs
            continue
        for _ in range(app.maxprocs):
            out.append(hosts[i % len(hosts)])
            i += 1
    return out


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
    hosts = place(world, apps, call)
    procs = world.add_processes(hosts)
    members = [p.rank for p in procs]
    child_world = CommImpl(world, members, "MPI_COMM_WORLD")
    pair = make_pair(world, list(parent.group), members, a_is_low=True)
    for p, prog in zip(procs, programs):
        p.comm_world = child_world
        p.parent = pair.b
        p.appnum = prog.appnum
    hook(procs, programs)
    return pair
