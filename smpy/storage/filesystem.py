r"""File systems after PIOsimHD (Kunkel, §3.1-3.4): striping, server caches, disks.

A *file system* owns the paths under its ``mount``. It is ``parallel`` (data servers,
reached over the network by :mod:`smpy.runtime.fsio`, which composes this module's server
side with network flows), ``local`` (one instance per host, no network) or ``virtual``
(timed as ``local``; contents kept in memory up to a limit or discarded, by the
shim's file interception, :mod:`smpy.shim.fileio`). ``virtual: true`` gives any file system
these contents while keeping its timing.

Striping
    A file of a parallel file system with stripe size :math:`S` and stripe count :math:`c`
    lives on :math:`c` of the :math:`m` servers, starting at server :math:`b` (files are
    placed round robin in creation order, as Lustre's allocator does when balanced). File
    byte :math:`x` is in stripe :math:`k = \lfloor x/S \rfloor`, on the file's server
    :math:`(b + k) \bmod m`'s slot :math:`j = k \bmod c`, at server-local offset
    :math:`\ell(x) = \lfloor k/c \rfloor S + (x \bmod S)`. An access :math:`[a, a+n)` becomes
    one request per slot touched, of :math:`n_j = \sum_{k \equiv j} |[kS, (k+1)S) \cap [a, a+n)|`
    bytes (:func:`stripe_requests`; :math:`\sum_j n_j = n`), contiguous in the slot's local space.

Server cache (write-back, per server, capacity :math:`C`)
    Dirty bytes :math:`D \le C`. A write of :math:`n` bytes is admitted as room frees: it
    takes :math:`\min(n, C - D)` at once and waits, FIFO behind earlier writers, for the rest,
    so a write that fits costs no disk time and, once the cache is full, writers proceed at
    the disk's write speed. A flusher writes dirty data to the disk in chunks of
    :math:`\max(B, C/16)` (:math:`B` the cache block, the stripe size) whenever :math:`D > 0`.
    With :math:`C = 0` a write goes through to the disk and lasts the disk operation.
    Written data stays cached (clean after its flush) in an LRU of blocks of :math:`B` bytes
    holding at most :math:`C` bytes; a read's bytes in cached blocks cost no disk time, the
    others are one disk read (which caches them). ``sync`` waits until every byte written to
    the server before it is flushed (counters :math:`W` written and :math:`F` flushed: it
    ends when :math:`F \ge W_\text{at sync}`).

Disks (:mod:`smpy.storage.model` max-min sharing of the bandwidth, plus per kind)
    ``simple``: an operation of :math:`n` bytes lasts :math:`\lambda + n/B_{r|w}`, any number
    at once. ``hdd`` (PIOsimHD §3.1): one operation at a time (FIFO); an access that does not
    start where the previous one ended adds :math:`t_\text{seek} + 30/\text{rpm}` (average seek
    and half a rotation) to :math:`\lambda`, so sequential and random small accesses differ.
    ``ssd``: per-operation latency :math:`\lambda`, at most ``channels`` operations at once
    (the others queue), the bandwidth shared by those running. ``read_stream``/``write_stream``
    bound one operation below the aggregate ``read``/``write`` (:mod:`smpy.storage.model`),
    except write-back: the flusher's chunks, and every client write of a ``local`` file
    system (the program writes into the host's page cache and ``fsync``/the kernel write it
    back with many requests in flight), are bounded by the aggregate only. Metadata operations are
    operations of 0 bytes (:math:`\lambda`, plus a seek on a hard disk).

Page cache (local file systems on hosts that declare ``ram``)
    The cache of a local file system on host :math:`h` is the host's free memory,
    :math:`C_h = \min(C, \max(0, R_h - M_h))` (:math:`C` the file system's ``cache`` size,
    :math:`\infty` when it gives none; :math:`R_h` the host's RAM, :math:`M_h` its ranks'
    resident memory, :mod:`smpy.cpu.memory`). When :math:`M_h` grows the cache shrinks
    (:meth:`Server.set_capacity`): clean blocks beyond :math:`C_h` are dropped and writers wait
    until the dirty data is below it.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from smpy.kernel.activity import Activity, Trigger
from smpy.kernel.engine import Engine
from smpy.storage.model import Disk, StorageModel

__all__ = ["DiskParams", "FileSystem", "Server", "FileSystems", "stripe_requests", "done"]


@dataclass
class DiskParams:
    kind: str = "simple"
    read: float = 500e6
    write: float = 400e6
    latency: float = 0.0
    seek: float = 0.0
    rpm: float = 0.0
    channels: int = 0
    #: bound of one read (write) stream; 0: the aggregate ``read`` (``write``)
    read_stream: float = 0.0
    write_stream: float = 0.0

    def queue_depth(self) -> int:
        """Operations at once (0: unlimited)."""
        if self.kind == "hdd":
            return 1
        if self.kind == "ssd":
            return self.channels or 8
        return self.channels


@dataclass
class FileSystem:
    """A file system of the platform (built from ``filesystems:`` by the loader)."""

    name: str
    kind: str
    mount: str
    default: bool = False
    servers: tuple[str, ...] = ()
    metadata_server: str | None = None
    stripe_size: int = 1 << 20
    stripe_count: int = 0
    disk: DiskParams = field(default_factory=DiskParams)
    cache: int = 0
    #: virtual file systems (``kind: virtual`` or ``virtual: true``): contents in memory,
    #: at most ``keep`` bytes in all, beyond that discarded (reads give zeros)
    keep: int = 0
    virtual: bool = False

    def contains(self, path: str) -> bool:
        m = self.mount.rstrip("/") or "/"
        return path == m or path.startswith(m if m.endswith("/") else m + "/")


def stripe_requests(offset: int, nbytes: int, stripe_size: int, count: int) -> list[tuple[int, int, int]]:
    """``(slot, bytes, first local offset)`` of each slot an access touches, by slot."""
    if nbytes <= 0:
        return []
    S, c = stripe_size, count
    k0, k1 = offset // S, (offset + nbytes - 1) // S
    out: dict[int, list[int]] = {}
    if k1 - k0 + 1 <= 2 * c:
        for k in range(k0, k1 + 1):
            lo, hi = max(offset, k * S), min(offset + nbytes, (k + 1) * S)
            j = k % c
            if j in out:
                out[j][0] += hi - lo
            else:
                out[j] = [hi - lo, (k // c) * S + lo - k * S]
        return [(j, v[0], v[1]) for j, v in sorted(out.items())]
    for j in range(c):  # many stripes: whole stripes counted, then the two partial ends fixed
        first = k0 + ((j - k0) % c)
        nk = (k1 - first) // c + 1
        size = nk * S
        start = (first // c) * S
        if first == k0:
            cut = offset - k0 * S
            size -= cut
            start += cut
        if (k1 - j) % c == 0:
            size -= (k1 + 1) * S - (offset + nbytes)
        out[j] = [size, start]
    return [(j, v[0], v[1]) for j, v in sorted(out.items())]


def done(engine: Engine) -> Activity:
    """An activity already finished."""
    t = Trigger(engine, "done")
    t.fire()
    return t


class _Waiter:
    __slots__ = ("left", "trigger")

    def __init__(self, left: int, trigger: Trigger) -> None:
        self.left = left
        self.trigger = trigger


class Server:
    """One storage server of a file system (or one host's local disk): disk, cache, flusher."""

    def __init__(self, model: StorageModel, name: str, params: DiskParams, cache: int, block: int,
                 writeback: bool = False) -> None:
        self.model = model
        self.engine = model.engine
        self.name = name
        self.params = params
        self.disk = Disk(name, params.read, params.write, params.latency, (),
                         params.read_stream, params.write_stream)
        #: clients' writes reach the disk by write-back (a host's page cache): many requests
        #: in flight, no per-stream bound
        self.writeback = writeback
        model.add_disk(self.disk, default_ok=False)
        self.capacity = int(cache)
        self.block = max(1, int(block))
        self.dirty = 0
        self.written = 0
        self.flushed = 0
        self.flushing = False
        self.waiters: deque[_Waiter] = deque()
        self.syncs: list[tuple[int, Trigger]] = []
        self.lru: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.depth = params.queue_depth()
        self.running = 0
        self.queue: deque[tuple[int, bool, int, Trigger, bool]] = deque()
        #: the running disk operation behind each pending trigger: (operation, bytes, write)
        self.ops: dict[Trigger, tuple[Activity, int, bool]] = {}
        self.head = -1  # local offset after the last disk access (hard disks)
        #: figures for reports: bytes written/read by clients, disk busy seconds
        self.bytes_written = 0
        self.bytes_read = 0
        self.cache_hits = 0
        #: seconds with at least one disk operation running (latency included)
        self.busy = 0.0
        self._busy_since = 0.0

    # -- disk operations (queued when the disk takes a limited number at once) -------------
    def disk_op(self, nbytes: int, write: bool, local: int = -1, stream: bool = True) -> Activity:
        """One disk operation (queued when the disk takes a limited number at once);
        ``stream=False``: write-back, bounded by the aggregate bandwidth only."""
        t = Trigger(self.engine, f"{'write' if write else 'read'} on {self.name}")
        if self.depth and self.running >= self.depth:
            self.queue.append((nbytes, write, local, t, stream))
        else:
            self._start(nbytes, write, local, t, stream)
        return t

    def _start(self, nbytes: int, write: bool, local: int, t: Trigger, stream: bool = True) -> None:
        p = self.params
        lat = p.latency
        if p.kind == "hdd" and (local < 0 or local != self.head):
            lat += p.seek + (30.0 / p.rpm if p.rpm > 0 else 0.0)
        self.head = (local + nbytes) if local >= 0 else -1
        if self.running == 0:
            self._busy_since = self.engine.now
        self.running += 1
        op = self.model.io(self.disk, nbytes, write, lat, stream)
        self.ops[t] = (op, nbytes, write)

        def finished(_a: Activity) -> None:
            del self.ops[t]
            self._ended()
            t.fire()
        op.add_callback(finished)

    def _ended(self) -> None:
        self.running -= 1
        if self.running == 0:
            self.busy += self.engine.now - self._busy_since
        if self.queue:
            self._start(*self.queue.popleft())

    def cancel(self, t: Activity) -> None:
        """Withdraw a client's pending operation ``t`` (a write, read, metadata operation or
        sync of a rank that was killed): a running disk operation leaves the disk now (the
        others get its bandwidth), a queued one or a write waiting for cache room is dropped
        (the room goes to the next writers). ``t`` never completes; a write's bytes that will
        never reach the disk count as flushed, so that other clients' syncs still end."""
        if t.done:
            return
        t.callbacks = None
        for i, q in enumerate(self.queue):
            if q[3] is t:
                del self.queue[i]
                if q[1] and q[0]:
                    self._flushed(q[0])
                return
        running = self.ops.pop(t, None)  # type: ignore[call-overload]
        if running is not None:
            op, nbytes, write = running
            op.callbacks = None
            op.cancel()
            self._ended()
            if write and nbytes:
                self._flushed(nbytes)
            return
        for w in self.waiters:
            if w.trigger is t:
                self.waiters.remove(w)
                self._flushed(w.left)
                self._admit()
                return
        self.syncs = [(target, s) for target, s in self.syncs if s is not t]

    # -- cache -----------------------------------------------------------------------------
    def _touch(self, fid: int, local: int, nbytes: int) -> int:
        """Mark the blocks of ``[local, local+nbytes)`` cached; returns the bytes that were."""
        if self.capacity <= 0 or nbytes <= 0:
            return 0
        B = self.block
        hit = 0
        lru = self.lru
        for b in range(local // B, (local + nbytes - 1) // B + 1):
            key = (fid, b)
            if key in lru:
                lru.move_to_end(key)
                hit += min(local + nbytes, (b + 1) * B) - max(local, b * B)
            else:
                lru[key] = None
        limit = max(1, self.capacity // B)
        while len(lru) > limit:
            lru.popitem(last=False)
        return hit

    def set_capacity(self, nbytes: float) -> None:
        """Resize the cache (a host's page cache follows its free memory): the clean blocks
        beyond the new size are dropped; dirty data above it waits for the flusher, and
        writers wait until it is below the new size."""
        self.capacity = max(0, int(nbytes))
        limit = max(1, self.capacity // self.block) if self.capacity > 0 else 0
        while len(self.lru) > limit:
            self.lru.popitem(last=False)
        self._admit()

    def write(self, fid: int, local: int, nbytes: int) -> Activity:
        """A client's write of ``nbytes`` reaching the server: done once absorbed."""
        self.bytes_written += nbytes
        self.written += nbytes
        if self.capacity <= 0:
            op = self.disk_op(nbytes, True, local, not self.writeback)
            op.add_callback(lambda _a: self._flushed(nbytes))
            return op
        self._touch(fid, local, nbytes)
        t = Trigger(self.engine, f"cache of {self.name}")
        self.waiters.append(_Waiter(nbytes, t))
        self._admit()
        return t

    def _admit(self) -> None:
        while self.waiters:
            w = self.waiters[0]
            take = min(w.left, self.capacity - self.dirty)
            if take <= 0:
                break
            self.dirty += take
            w.left -= take
            if w.left:
                break
            self.waiters.popleft()
            w.trigger.fire()
        self._flush()

    def _flush(self) -> None:
        if self.flushing or self.dirty <= 0:
            return
        chunk = min(self.dirty, max(self.block, self.capacity // 16))
        self.flushing = True

        def flushed(_a: Activity) -> None:
            self.flushing = False
            self.dirty -= chunk
            self._flushed(chunk)
            self._admit()
        self.disk_op(chunk, True, stream=False).add_callback(flushed)

    def _flushed(self, nbytes: int) -> None:
        self.flushed += nbytes
        if self.syncs:
            keep = []
            for target, t in self.syncs:
                if self.flushed >= target:
                    t.fire()
                else:
                    keep.append((target, t))
            self.syncs = keep

    def read(self, fid: int, local: int, nbytes: int) -> Activity:
        """A client's read: cached bytes cost nothing, the rest one disk read."""
        self.bytes_read += nbytes
        hit = self._touch(fid, local, nbytes)
        self.cache_hits += hit
        miss = nbytes - hit
        if miss <= 0:
            return done(self.engine)
        return self.disk_op(miss, False, local)

    def sync(self) -> Activity:
        """Done when every byte written to this server so far is on its disk."""
        if self.flushed >= self.written:
            return done(self.engine)
        t = Trigger(self.engine, f"sync of {self.name}")
        self.syncs.append((self.written, t))
        return t

    def metadata(self) -> Activity:
        """A metadata operation (open, create, close, stat, delete): 0 bytes on the disk."""
        return self.disk_op(0, True)


class FileSystems:
    """The file systems of a platform, their servers and the files they know."""

    def __init__(self, model: StorageModel, filesystems: list[FileSystem]) -> None:
        self.model = model
        self.list = sorted(filesystems, key=lambda f: -len(f.mount))  # longest mount first
        self.default = next((f for f in filesystems if f.default), None)
        self.servers: dict[tuple[str, str], Server] = {}
        self.files: dict[tuple[str, str], tuple[int, int, int, int]] = {}
        self._placed: dict[str, int] = {}
        #: bytes a virtual file system keeps in memory, per file system
        self.kept: dict[str, int] = {}
        #: free main memory of a host (its page cache's room), None: hosts declare no ``ram``
        self.free_ram: Callable[[str], float] | None = None

    def _local_cache(self, fs: FileSystem, host: str) -> float:
        """Cache of ``fs`` on ``host`` (local file systems): its ``cache`` size, limited to the
        host's free memory when the host declares ``ram`` (then, without a ``cache`` size,
        the page cache is all the free memory)."""
        free = self.free_ram(host) if self.free_ram is not None else math.inf
        if free == math.inf:
            return fs.cache
        return min(fs.cache or math.inf, free)

    def limit_cache(self, host: str, free: float) -> None:
        """The free memory of ``host`` changed: resize its local file systems' caches."""
        for fs in self.list:
            if fs.kind != "parallel":
                s = self.servers.get((fs.name, host))
                if s is not None:
                    s.set_capacity(min(fs.cache or math.inf, free))

    def of_path(self, path: str) -> FileSystem | None:
        """The file system of an absolute path (longest mount), else the default (or None)."""
        for fs in self.list:
            if fs.contains(path):
                return fs
        return self.default

    def server(self, fs: FileSystem, host: str) -> Server:
        """The server ``host`` of ``fs`` (for a local file system: the host's own disk)."""
        key = (fs.name, host)
        s = self.servers.get(key)
        if s is None:
            block = fs.stripe_size if fs.kind == "parallel" else 1 << 20
            cache = fs.cache if fs.kind == "parallel" else self._local_cache(fs, host)
            s = self.servers[key] = Server(self.model, f"{fs.name}@{host}", fs.disk, cache, block,
                                           writeback=fs.kind != "parallel")
        return s

    def layout(self, fs: FileSystem, path: str, stripe_count: int = 0,
               stripe_size: int = 0) -> tuple[int, int, int, int]:
        """``(file id, first server, stripe count, stripe size)`` of a file: fixed at its
        first use (``stripe_count``/``stripe_size`` hints apply then), placed round robin."""
        key = (fs.name, path)
        got = self.files.get(key)
        if got is None:
            m = max(1, len(fs.servers))
            first = self._placed.get(fs.name, 0)
            self._placed[fs.name] = first + 1
            count = stripe_count or fs.stripe_count or m
            got = self.files[key] = (len(self.files), first % m, min(count, m),
                                     stripe_size or fs.stripe_size)
        return got

    def all_servers(self) -> list[Server]:
        return list(self.servers.values())


def spec_params(d: Any) -> DiskParams:
    """DiskParams of a schema ``disk:`` entry (duck typed: the storage layer does not import
    the platform layer)."""
    return DiskParams(d.kind, d.read, d.write, d.latency, d.seek, d.rpm, d.channels,
                      d.read_stream or 0.0, d.write_stream or 0.0)
