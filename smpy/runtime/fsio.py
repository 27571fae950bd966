r"""The I/O data path: a rank's file access as network flows and server operations.

The storage side (striping, caches, disks) is :mod:`smpy.storage.filesystem`; this module
adds the network, so that I/O and MPI messages share the links in one max-min system.

An access of :math:`n` bytes at offset :math:`a` of a file of a *parallel* file system is
split by the striping function into per-server requests :math:`(j, n_j, \ell_j)`; they run
concurrently and the access ends with the last one. A request is pipelined in stripe units
(:math:`S` bytes, the last one shorter). A write request sends its units one after the other
as flows from the client's host to the server's host over the platform's route (latency +
max-min shared bandwidth, :mod:`smpy.network.model`); each unit, once arrived, is the
server's write (absorbed by its cache while there is room, else at disk speed) while the
next one travels. A read request is a 0-byte flow to the server (the request's latency),
then the server reads its units one after the other (cache hits: no disk time) and each
flows back as soon as it is read. Uncontended and with cache room, a write of
:math:`n \le S` bytes therefore lasts :math:`T_\text{net}(n)`; a read of one unit that
misses :math:`T_\text{net}(0) + \lambda_d + n/R_d + T_\text{net}(n)`; a write of :math:`u`
units without cache :math:`T_\text{net}(S) + u S / W_d` when the disk is the slower stage
(the units' disk writes overlap the transfers and share the disk).

A *local* file system, and a *virtual* one (timed as local, contents in memory:
:mod:`smpy.shim.fileio`), is the host's own server (no flows).
Metadata operations (open, create, close, delete, stat, sync's commit) are a 0-byte flow to
the metadata server, one 0-byte disk operation there, and a 0-byte flow back. ``sync``
waits until each server of the file has flushed what it had been given, then the metadata
operation.

A rank's accesses are *owned* by its actor (:class:`Owner`): the flows and server operations
they start, also later from callbacks (the next unit, the next step of a chain), are recorded;
when the actor is killed (its batch job killed at its walltime, failed or lost a host),
:func:`cancel_owned` withdraws them at that instant: its flows leave their links, its disk
operations the disk, its queued operations and cache waits are dropped, and the steps that
were to follow never start, so that the other clients' I/O speeds up then.

Paths outside every mount, when no file system is the default, keep the model of
:mod:`smpy.runtime.io` (the ``storage:`` disks): :func:`fs_of` returns None for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import Activity, Trigger
from smpy.kernel.actors import block_on, current_actor
from smpy.storage import Disk, StorageModel
from smpy.storage.filesystem import FileSystem, FileSystems, Server, done, stripe_requests

if TYPE_CHECKING:
    from smpy.runtime.world import World

__all__ = ["Owner", "cancel_owned", "report", "summary_line", "timed_wait", "storage", "filesystems", "fs_of", "access", "metadata", "sync", "chain", "join", "Stats", "stats"]


def storage(world: World) -> StorageModel:
    """The world's storage model, built on first use from the platform's disks (the
    ``storage:`` section; MPI-IO's model for paths outside the file systems)."""
    model = getattr(world, "storage", None)
    if model is None:
        disks = getattr(world.platform, "disks", None)
        model = StorageModel(world.engine, [Disk(d.name, d.read_bw, d.write_bw, d.latency, d.hosts)
                                            for d in disks] if disks else None)
        world.storage = model
    return model


def filesystems(world: World) -> FileSystems | None:
    """The world's file systems (None when the platform declares none)."""
    fss = getattr(world, "filesystems", None)
    if fss is None:
        decl = getattr(world.platform, "filesystems", None)
        if not decl:
            return None
        fss = FileSystems(storage(world), list(decl))
        world.filesystems = fss
        mem = getattr(world, "memory", None)
        if mem is not None:  # page caches in the hosts' free memory (smpy.runtime.memory)
            fss.free_ram = mem.free
            mem.on_free.append(fss.limit_cache)
    return fss


def fs_of(world: World, path: Any) -> FileSystem | None:
    """The file system of ``path`` (made absolute), or None (the legacy disk model)."""
    fss = filesystems(world)
    if fss is None:
        return None
    return fss.of_path(os.path.abspath(os.fsdecode(path)))


# -- owners: the I/O in flight of each rank's actor ------------------------------------------------
class Owner:
    """The flows and server operations started for one actor's accesses (pruned of finished
    ones when the list doubles); ``dead`` once they are cancelled."""

    __slots__ = ("live", "dead", "pruned")

    def __init__(self) -> None:
        self.live: list[tuple[Server | None, Activity]] = []
        self.dead = False
        self.pruned = 64


#: the owner of the activities being started (set while an access starts and around its callbacks)
_CURRENT: list[Owner | None] = [None]


def _enter(world: World) -> tuple[Owner | None, Owner | None]:
    """Make the calling actor's owner current; returns (it, the previous one)."""
    prev = _CURRENT[0]
    owner = prev
    if owner is None:
        actor = current_actor()
        if actor is not None:
            owners = getattr(world, "io_owners", None)
            if owners is None:
                owners = world.io_owners = {}
            owner = owners.get(actor)
            if owner is None:
                owner = owners[actor] = Owner()
    _CURRENT[0] = owner
    return owner, prev


def _own(act: Activity, server: Server | None = None) -> Activity:
    """Record ``act`` (a flow, or an operation of ``server``) as the current owner's."""
    owner = _CURRENT[0]
    if owner is not None and not act.done:
        live = owner.live
        live.append((server, act))
        if len(live) >= 2 * owner.pruned:
            live[:] = [e for e in live if not e[1].done]
            owner.pruned = max(64, len(live))
    return act


def _in(owner: Owner | None, fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` as a callback of ``owner``'s I/O: run with it current, not at all once it is dead."""
    if owner is None:
        return fn

    def run(*args: Any) -> None:
        if owner.dead:
            return
        prev = _CURRENT[0]
        _CURRENT[0] = owner
        try:
            fn(*args)
        finally:
            _CURRENT[0] = prev
    return run


def cancel_owned(world: World, actors: Sequence[Any]) -> None:
    """Withdraw the I/O in flight of ``actors`` now (they were killed; see the module text)."""
    owners = getattr(world, "io_owners", None)
    if not owners:
        return
    for actor in actors:
        owner = owners.pop(actor, None)
        if owner is None:
            continue
        owner.dead = True
        for server, act in owner.live:
            if act.done:
                continue
            if server is None:
                act.callbacks = None  # nobody is left to receive it
                act.cancel()  # leaves its links now
            else:
                server.cancel(act)
        owner.live = []


# -- composing activities ----------------------------------------------------------------------
def chain(world: World, steps: Sequence[Callable[[], Activity]], label: str = "I/O") -> Activity:
    """Run ``steps`` one after the other (each starts the next's activity); done with the last."""
    out = Trigger(world.engine, label)
    it = iter(steps)
    owner, prev = _enter(world)

    def step(_a: Activity | None = None) -> None:
        for fn in it:
            act = fn()
            if not act.done:
                act.add_callback(guarded)
                return
        out.fire()
    guarded = _in(owner, step)
    try:
        step()
    finally:
        _CURRENT[0] = prev
    return out


def join(world: World, acts: list[Activity], label: str = "I/O") -> Activity:
    """Done when every activity of ``acts`` is."""
    pending = [a for a in acts if not a.done]
    if not pending:
        return done(world.engine)
    if len(pending) == 1:
        return pending[0]
    out = Trigger(world.engine, label)
    left = [len(pending)]

    def one(_a: Activity) -> None:
        left[0] -= 1
        if left[0] == 0:
            out.fire()
    for a in pending:
        a.add_callback(one)
    return out


def flow(world: World, src: Any, dst: Any, nbytes: float) -> Activity:
    """A network flow of ``nbytes`` (I/O traffic: not counted as an MPI message)."""
    return _own(world.net.communicate(world.route(src, dst), nbytes, world.route(dst, src)))


# -- statistics (per file and per rank) for --report ---------------------------------------------
class Stats:
    __slots__ = ("files", "ranks")

    def __init__(self) -> None:
        #: path -> [bytes written, bytes read, operations, seconds]
        self.files: dict[str, list[float]] = {}
        #: rank -> [bytes written, bytes read, operations, seconds]
        self.ranks: dict[int, list[float]] = {}

    def _rows(self, path: str, rank: int) -> tuple[list[float], list[float]]:
        out = []
        for table, key in ((self.files, path), (self.ranks, rank)):
            row = table.get(key)  # type: ignore[call-overload]
            if row is None:
                row = table[key] = [0, 0, 0, 0.0]  # type: ignore[index]
            out.append(row)
        return out[0], out[1]

    def add(self, path: str, rank: int, nbytes: int, write: bool) -> None:
        """One data access of ``nbytes`` (an operation)."""
        for row in self._rows(path, rank):
            row[0 if write else 1] += nbytes
            row[2] += 1

    def timed(self, path: str, rank: int, seconds: float) -> None:
        """``seconds`` the rank was blocked in a file operation (data or metadata) on ``path``."""
        for row in self._rows(path, rank):
            row[3] += seconds


def timed_wait(proc: Any, path: str, act: Activity, label: str) -> None:
    """Block ``proc`` on ``act`` (a file operation on ``path``) and add the time to the
    file's and the rank's figures."""
    t0 = proc.world.engine.now
    block_on(act, label)
    stats(proc.world).timed(path, proc.rank, proc.world.engine.now - t0)


def report(world: World) -> dict[str, Any]:
    """Per file and per rank (bytes written, read, operations, seconds blocked in file
    operations) and per server (client bytes, cache hits, disk busy seconds) of the run, for
    ``--report``; empty without file systems."""
    fss = getattr(world, "filesystems", None)
    st = getattr(world, "io_stats", None)
    if fss is None and st is None:
        return {}
    out: dict[str, Any] = {}
    if st is not None:
        keys = ("bytes_written", "bytes_read", "operations", "time_s")
        out["files"] = {p: dict(zip(keys, row)) for p, row in sorted(st.files.items())}
        out["ranks"] = {str(r): dict(zip(keys, row)) for r, row in sorted(st.ranks.items())}
    if fss is not None:
        out["servers"] = {s.name: {"bytes_written": s.bytes_written, "bytes_read": s.bytes_read,
                                   "cache_hit_bytes": s.cache_hits, "disk_busy_s": s.busy}
                          for s in fss.all_servers()}
    return out


def summary_line(data: dict[str, Any]) -> str:
    """One line for the terminal: totals of :func:`report`."""
    files = data.get("files", {})
    servers = data.get("servers", {})
    w = sum(f["bytes_written"] for f in files.values())
    r = sum(f["bytes_read"] for f in files.values())
    busy = max((s["disk_busy_s"] for s in servers.values()), default=0.0)
    return (f"[smpy] file I/O: {len(files)} files, {w} bytes written, {r} bytes read; "
            f"{len(servers)} servers, busiest disk {busy:.6g} s (--report JSON: io)")


def stats(world: World) -> Stats:
    s = getattr(world, "io_stats", None)
    if s is None:
        s = world.io_stats = Stats()
    return s


# -- the data path ---------------------------------------------------------------------------------
def _request(world: World, host: Any, srv_host: Any, server: Server, fid: int, local: int,
             n: int, write: bool, unit: int) -> Activity:
    """One server's part of an access, pipelined in stripe units: a write sends unit after
    unit over the network and each one goes to the server as it arrives; a read asks once,
    then the server reads unit after unit and each one flows back as soon as it is read."""
    units = [(local + k, min(unit, n - k)) for k in range(0, n, unit)]
    out = Trigger(world.engine, "I/O request")
    owner = _CURRENT[0]
    left = [len(units)]

    def one(_a: Activity) -> None:
        left[0] -= 1
        if left[0] == 0:
            out.fire()

    def step(i: int) -> None:
        lo, m = units[i]
        if write:
            f = flow(world, host, srv_host, m)

            def arrived(_a: Activity) -> None:
                _own(server.write(fid, lo, m), server).add_callback(one)
                if i + 1 < len(units):
                    step(i + 1)
            f.add_callback(_in(owner, arrived))
        else:
            def got(_a: Activity) -> None:
                flow(world, srv_host, host, m).add_callback(one)
                if i + 1 < len(units):
                    step(i + 1)
            _own(server.read(fid, lo, m), server).add_callback(_in(owner, got))

    if write:
        step(0)
    else:
        flow(world, host, srv_host, 0).add_callback(_in(owner, lambda _a: step(0)))
    return out


def access(world: World, host: Any, fs: FileSystem, path: str, offset: int, nbytes: int,
           write: bool, layout: tuple[int, int, int, int] | None = None) -> Activity:
    """One contiguous access of ``nbytes`` at ``offset`` by a client on ``host``."""
    _owner, prev = _enter(world)
    try:
        return _access(world, host, fs, path, offset, nbytes, write, layout)
    finally:
        _CURRENT[0] = prev


def _access(world: World, host: Any, fs: FileSystem, path: str, offset: int, nbytes: int,
            write: bool, layout: tuple[int, int, int, int] | None) -> Activity:
    fss = filesystems(world)
    assert fss is not None
    if nbytes <= 0:
        return done(world.engine)
    fid, first, count, ssize = layout or fss.layout(fs, path)
    if fs.kind != "parallel":
        srv = fss.server(fs, host.name)
        return _own(srv.write(fid, offset, nbytes) if write else srv.read(fid, offset, nbytes), srv)
    m = len(fs.servers)
    parts = []
    plat = world.platform
    for slot, n, local in stripe_requests(offset, nbytes, ssize, count):
        name = fs.servers[(first + slot) % m]
        parts.append(_request(world, host, plat.host(name), fss.server(fs, name), fid, local, n,
                              write, ssize))
    return join(world, parts)


def metadata(world: World, host: Any, fs: FileSystem) -> Activity:
    """One metadata operation (open, create, close, stat, delete) of a client on ``host``."""
    fss = filesystems(world)
    assert fss is not None
    _owner, prev = _enter(world)
    try:
        if fs.kind != "parallel" or fs.metadata_server is None:
            srv = fss.server(fs, host.name)
            return _own(srv.metadata(), srv)
        mds = world.platform.host(fs.metadata_server)
        srv = fss.server(fs, fs.metadata_server)
        return chain(world, (lambda: flow(world, host, mds, 0), lambda: _own(srv.metadata(), srv),
                             lambda: flow(world, mds, host, 0)))
    finally:
        _CURRENT[0] = prev


def sync(world: World, host: Any, fs: FileSystem, path: str) -> Activity:
    """Done when the file's servers flushed what they were given, then a metadata op."""
    fss = filesystems(world)
    assert fss is not None
    if fs.kind != "parallel":
        servers = [fss.server(fs, host.name)]
    else:
        _fid, first, count, _s = fss.layout(fs, path)
        m = len(fs.servers)
        servers = [fss.server(fs, fs.servers[(first + j) % m]) for j in range(count)]
    _owner, prev = _enter(world)
    try:
        flushes = join(world, [_own(s.sync(), s) for s in servers])
        return chain(world, (lambda: flushes, lambda: metadata(world, host, fs)))
    finally:
        _CURRENT[0] = prev
