"""Dynamic process management of the facade: ``Intracomm.Spawn``/``Spawn_multiple``,
``Comm.Get_parent`` and ``Comm.Disconnect``.

What a spawn costs in simulated time (after MPICH's ``MPIR_Comm_spawn``: the root starts
the processes through the process manager, then parents and children connect through a
port, ``MPIR_Comm_accept``/``MPIR_Comm_connect``):

1. the root resolves the commands and creates the processes (:mod:`smpy.runtime.spawn`);
   they start at once, at the root's current simulated time, on their hosts;
2. connection: the root sends the parents' group (8 bytes per process plus a 64-byte port
   header) to the children's rank 0 on the new intercommunicator, which answers with the
   children's group (same sizing);
3. each side broadcasts what its leader learnt over its own group (parents: the spawning
   communicator, with the error codes; children: their new MPI_COMM_WORLD), with smpy's
   object broadcast (MPICH broadcasts the remote group and the error codes).

The children run step 2 and 3 before their program starts (their ``MPI_Init``).
"""

from __future__ import annotations

import os
import pickle
import socket
from typing import Any

from smpy.colls import objects as ocoll
from smpy.mpi import errhandler as _eh
from smpy.mpi import registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.runtime import errors, p2p
from smpy.runtime import spawn as rspawn
from smpy.runtime.constants import ANY_SOURCE
from smpy.runtime.errors import SUCCESS

_TAG = 0x5BA7  # private tag on the collective channel of the new intercommunicator
_CHANNEL = 1
_HEADER = 64


def _str(x: Any) -> str:
    if isinstance(x, bytes):
        return os.fsdecode(x)
    return os.fspath(x) if hasattr(x, "__fspath__") else str(x)


def _argv(args: Any) -> list[str]:
    if args is None:
        return []
    if isinstance(args, (str, bytes)):
        return [_str(args)]
    return [_str(a) for a in args]


def _info(info: Any) -> dict[str, str]:
    if info is None or getattr(info, "_null", True):
        return {}
    return {k: info.Get(k) for k in info.keys()}


def _nprocs(maxprocs: Any, count: int) -> list[int]:
    if maxprocs is None or isinstance(maxprocs, int):
        return [1 if maxprocs is None else int(maxprocs)] * count
    values = [int(x) for x in maxprocs]
    if len(values) != count:
        raise ValueError(f"expecting {count} items, got {len(values)}")
    return values


def _infos(info: Any, count: int) -> list[dict[str, str]]:
    if info is None or not isinstance(info, (list, tuple)):
        return [_info(info)] * count
    if len(info) != count:
        raise ValueError(f"expecting {count} items, got {len(info)}")
    return [_info(i) for i in info]


def _argvs(args: Any, count: int) -> list[list[str]]:
    if args is None:
        return [[] for _ in range(count)]
    if isinstance(args, (str, bytes)):
        return [[_str(args)] for _ in range(count)]
    seq = list(args)
    if len(seq) != count:
        raise ValueError(f"expecting {count} items, got {len(seq)}")
    return [_argv(a) for a in seq]


def _check(comm: Any, root: int, call: str) -> tuple[Any, Any, int]:
    impl, pr = comm._impl, proc()
    if impl.remote is not None:
        errors.raise_error(errors.ERR_COMM, f"{call}: Invalid communicator (an intercommunicator)")
    if not 0 <= root < impl.size:
        errors.raise_error(errors.ERR_ROOT, f"{call}: Invalid root (value given was {root})")
    return impl, pr, impl.rank_of[pr.rank]


def _exchange(pr: Any, side: Any, peer: int, first: bool, call: str) -> None:
    """The roots' connection messages on a new intercommunicator (``peer``: remote rank)."""
    mine = _HEADER + 8 * side.size
    if first:
        p2p.send(pr, side, _CHANNEL, ("connect", side.rank_of[pr.rank]), mine, peer, _TAG, call)
        p2p.recv(pr, side, _CHANNEL, peer, _TAG, None, call)
    else:
        p2p.recv(pr, side, _CHANNEL, peer, _TAG, None, call)
        p2p.send(pr, side, _CHANNEL, ("accept",), mine, peer, _TAG, call)


def _share(comm: Any, impl: Any, pr: Any, root: int, side: Any, extra: Any,
           local_exc: errors.MPIException | None, call: str) -> tuple[Any, Any]:
    """Broadcast the root's outcome over ``impl``; every member gets its handle on ``side``
    (built at the root) or the root's error."""
    outcome: tuple[Any, ...] | None = None
    if impl.rank_of[pr.rank] == root:
        if local_exc is not None:
            outcome = ("error", local_exc.error_class)
        else:
            key = (side.context, id(side))
            _pending[key] = [side, impl.size]
            outcome = ("ok", key, extra)
    outcome = ocoll.bcast(pr, impl, outcome, root, pickle.dumps, pickle.loads)
    if outcome[0] == "error":
        if local_exc is not None:
            raise local_exc
        errors.raise_error(outcome[1], f"{call}: the operation failed at the root (rank {root})")
    entry = _pending[outcome[1]]
    side = entry[0]
    entry[1] -= 1
    if entry[1] <= 0:
        del _pending[outcome[1]]
    _eh.copy_errhandler(impl, side)
    return registry.get("Intercomm")._wrap(side), outcome[2]


def _spawn(comm: Any, apps: list[rspawn.App] | None, root: int, call: str) -> Any:
    """The collective part of a spawn on intracommunicator ``comm``; ``apps`` matter at the root."""
    impl, pr, me = _check(comm, root, call)
    local_exc: errors.MPIException | None = None
    side = None
    total = 0
    if me == root:
        assert apps is not None
        total = sum(a.maxprocs for a in apps)
        try:
            if any(a.maxprocs < 0 for a in apps) or total == 0:
                errors.raise_error(errors.ERR_ARG, f"{call}: Invalid argument: maxprocs must be positive")
            pair = rspawn.launch(pr, impl, apps, call)
        except errors.MPIException as exc:
            local_exc = exc
        else:
            side = pair.a
            _exchange(pr, side, 0, True, call)  # to the children's leader (their MPI_Init)
    return _share(comm, impl, pr, root, side, total, local_exc, call)


def _connect_accept(comm: Any, port_name: Any, root: int, accepting: bool) -> Any:
    call = "MPI_Comm_accept" if accepting else "MPI_Comm_connect"
    impl, pr, me = _check(comm, root, call)
    local_exc: errors.MPIException | None = None
    side = None
    if me == root:
        try:
            if port_name is None:
                errors.raise_error(errors.ERR_PORT, f"{call}: Invalid port name (null)")
            name = _str(port_name)
            if accepting:
                pair, other = rspawn.accept(pr, impl, name, call)
                side = pair.a
            else:
                pair, other = rspawn.connect(pr, impl, name, call)
                side = pair.b
        except errors.MPIException as exc:
            local_exc = exc
        else:
            _exchange(pr, side, side.rgroup.index(other), accepting, call)
    return _share(comm, impl, pr, root, side, None, local_exc, call)[0]


#: new intercommunicator sides not every member has picked up yet: key -> [side, count]
_pending: dict[tuple[int, int], list[Any]] = {}


def child_connect(pr: Any) -> None:
    """The MPI_Init of a spawned process: the connection to its parents (see the module
    docstring); run by the launcher before the program starts."""
    side = pr.parent
    if side is None:
        return
    world = pr.comm_world
    info = None
    if world.rank_of[pr.rank] == 0:
        req = p2p.recv(pr, side, _CHANNEL, ANY_SOURCE, _TAG, None, "MPI_Init")
        root = req.payload[1]
        p2p.send(pr, side, _CHANNEL, ("accept",), _HEADER + 8 * side.size, root, _TAG, "MPI_Init")
        info = side.rsize
    ocoll.bcast(pr, world, info, 0, pickle.dumps, pickle.loads)


class SpawnMixin:
    """``Intracomm.Spawn`` and ``Intracomm.Spawn_multiple``."""

    __slots__ = ()

    @mpicall
    def Spawn(self, command: Any, args: Any = None, maxprocs: int = 1, info: Any = None,
              root: int = 0, errcodes: list[int] | None = None) -> Any:
        """Spawn instances of a single MPI application."""
        maxprocs = int(maxprocs)
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        apps = None
        if impl.rank_of.get(pr.rank) == root:
            apps = [rspawn.App(_str(command), _argv(args), maxprocs, _info(info))]
        comm, _ = _spawn(self, apps, root, "MPI_Comm_spawn")
        if errcodes is not None:
            errcodes[:] = [SUCCESS] * max(maxprocs, 0)
        return comm

    @mpicall
    def Spawn_multiple(self, command: Any, args: Any = None, maxprocs: Any = None, info: Any = None,
                       root: int = 0, errcodes: list[list[int]] | None = None) -> Any:
        """Spawn instances of multiple MPI applications."""
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        apps = None
        counts: list[int] = []
        if impl.rank_of.get(pr.rank) == root:
            if isinstance(command, (str, bytes)) or hasattr(command, "__fspath__"):
                raise ValueError("expecting a sequence of path-like")
            cmds = [_str(c) for c in command]
            n = len(cmds)
            argvs = _argvs(args, n)
            counts = _nprocs(maxprocs, n)
            infos = _infos(info, n)
            apps = [rspawn.App(c, a, m, i) for c, a, m, i in zip(cmds, argvs, counts, infos)]
        elif errcodes is not None:
            counts = _nprocs(maxprocs, len(maxprocs))
        comm, _ = _spawn(self, apps, root, "MPI_Comm_spawn_multiple")
        if errcodes is not None:
            errcodes[:] = [[SUCCESS] * m for m in counts]
        return comm


class DisconnectMixin:
    """``Comm.Disconnect`` (any communicator; spawned processes use it on their parent)."""

    __slots__ = ()

    @mpicall
    def Disconnect(self) -> None:
        """Disconnect from a communicator: wait for its pending traffic (a barrier over
        it, collective), then free it; the parent intercommunicator becomes COMM_NULL."""
        impl = self._raw()  # type: ignore[attr-defined]
        if impl is None:
            errors.raise_error(errors.ERR_COMM, "MPI_Comm_disconnect: Null communicator")
        pr = proc()
        if impl is pr.world.comm_world or impl is pr.comm_self:
            errors.raise_error(errors.ERR_COMM, "MPI_Comm_disconnect: Cannot free permanent communicator")
        self.Barrier()  # type: ignore[attr-defined]
        self.Free()  # type: ignore[attr-defined]
        if pr.parent is impl:
            pr.parent = None

    @classmethod
    @intargs
    def Join(cls, fd: int) -> Any:
        """Interconnect two processes connected by a socket."""
        return join(fd)


class DpmMixin:
    """``Intracomm.Accept`` / ``Intracomm.Connect`` and ``Comm.Join``."""

    __slots__ = ()

    @mpicall
    def Accept(self, port_name: str, info: Any = None, root: int = 0) -> Any:
        """Accept a request to form a new intercommunicator."""
        return _connect_accept(self, port_name, root, True)

    @mpicall
    def Connect(self, port_name: str, info: Any = None, root: int = 0) -> Any:
        """Make a request to form a new intercommunicator."""
        return _connect_accept(self, port_name, root, False)


@mpicall
def join(fd: int) -> Any:
    """MPI_Comm_join: an intercommunicator with the process at the other end of socket ``fd``
    (both ends must be in this emulation); the roots exchange their connection messages."""
    pr = proc()
    try:
        sock = socket.socket(fileno=os.dup(int(fd)))
    except (OSError, ValueError) as exc:
        errors.raise_error(errors.ERR_ARG, f"MPI_Comm_join: Invalid file descriptor {fd}: {exc}")
    try:
        local, peer = sock.getsockname(), sock.getpeername()
    except OSError as exc:
        errors.raise_error(errors.ERR_ARG, f"MPI_Comm_join: socket {fd} is not connected: {exc}")
    finally:
        sock.close()
    side = rspawn.join(pr, local, peer)
    _exchange(pr, side, 0, side is side.pair.a, "MPI_Comm_join")
    return registry.get("Intercomm")._wrap(side)


@mpicall
def Open_port(info: Any = None) -> str:
    """Return an address to connect to (a port of this process)."""
    return rspawn.open_port(proc())


@mpicall
def Close_port(port_name: str) -> None:
    """Close a port."""
    rspawn.close_port(proc(), _str(port_name))


@mpicall
def Publish_name(service_name: str, port_name: str, info: Any = None) -> None:
    """Publish a service name (in the emulation's name service, as hydra's)."""
    rspawn.publish(proc(), _str(service_name), _str(port_name))


@mpicall
def Unpublish_name(service_name: str, port_name: str, info: Any = None) -> None:
    """Unpublish a service name."""
    rspawn.unpublish(proc(), _str(service_name), _str(port_name))


@mpicall
def Lookup_name(service_name: str, info: Any = None) -> str:
    """Lookup a port name given a service name."""
    return rspawn.lookup(proc(), _str(service_name))
