r"""Storage model: file reads and writes share the bandwidth of disks (max-min fair).

A *disk* :math:`d` has a read bandwidth :math:`R_d`, a write bandwidth :math:`W_d` (bytes/s)
and an access latency :math:`\lambda_d` (s). Every host reaches exactly one disk: its own
(a node-local disk) or one that several hosts share (a file server; a parallel file system
with striping over several servers can later replace :meth:`StorageModel.disk_of` and
:meth:`StorageModel.io` without changing their callers).

An I/O operation of :math:`n` bytes on disk :math:`d` has two phases, like a network flow:

Latency phase
    :math:`\lambda_d` seconds (seek / request round trip), whatever :math:`n`.

Bandwidth phase
    the operation is a variable :math:`x` of the max-min system (:mod:`smpy.lmm`) with
    coefficient 1 on the disk's read constraint (:math:`\sum_{\text{reads on } d} x \le R_d`)
    or write constraint (:math:`\sum_{\text{writes on } d} x \le W_d`), and on its combined
    constraint :math:`\sum_{\text{all on } d} x \le \max(R_d, W_d)` (SimGrid's ``DiskS19``
    model, whose ``readwrite_bw`` defaults to that maximum). Concurrent reads (writes) of a
    disk share its read (write) bandwidth fairly; reads and writes at once share the combined
    bound (with :math:`R_d = 100`, :math:`W_d = 40` MB/s, one read and one write get 60 and
    40 MB/s). The phase lasts until the :math:`n` bytes went through.

Per-stream limit
    A device often moves more bytes with several requests in flight than with one: the
    disk may give a stream a bound :math:`r_d \le R_d` (reads) or :math:`w_d \le W_d`
    (writes), the variable's own bound :math:`x \le w_d`, while :math:`W_d` stays the
    capacity of the constraint all writes share (``smpy calibrate storage`` measures both:
    one writer, and the best aggregate of 1, 2 and 4 concurrent writers). With
    :math:`w_d = 100` and :math:`W_d = 150` MB/s one write gets 100 MB/s and two get 75 each.
    Without a per-stream figure the bound is the aggregate (:math:`w_d = W_d`). An operation
    that stands for many requests in flight (a write-back flush, :mod:`smpy.storage.filesystem`)
    is started with ``stream=False`` and bounded by the aggregate only.

Uncontended, an operation lasts :math:`T = \lambda_d + n / B_d` with :math:`B_d = R_d` or
:math:`W_d`; :math:`k` equal concurrent reads of one disk each last
:math:`\lambda_d + k\,n / R_d`. Operations of 0 bytes (metadata: open, close, sync,
delete) last :math:`\lambda_d`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharedActivity, SharingModel
from smpy.lmm import System


@dataclass
class Disk:
    """One storage device; ``hosts`` = names of the hosts that use it (empty: all others)."""

    name: str
    read_bw: float = 2.0e9
    write_bw: float = 1.0e9
    latency: float = 1.0e-4
    hosts: tuple[str, ...] = ()
    #: bound of one read (write) stream, bytes/s; 0: the aggregate ``read_bw`` (``write_bw``)
    read_stream: float = 0.0
    write_stream: float = 0.0
    #: (read, write, combined constraint) once attached to a model
    model_data: Any = field(default=None, repr=False, compare=False)


#: the disk used when the platform describes none: one storage shared by every host
DEFAULT_DISK = Disk("storage")


class IoOp(SharedActivity):
    """A read or write of ``total`` bytes on ``disk`` (an activity; its life is
    :class:`smpy.kernel.sharing.SharedActivity`'s)."""

    __slots__ = ("disk", "write")

    def __init__(self, model: StorageModel, disk: Disk, nbytes: float, write: bool,
                 stream: bool = True) -> None:
        rd, wr, rw = disk.model_data
        bound = disk.write_bw if write else disk.read_bw
        per = disk.write_stream if write else disk.read_stream
        if stream and 0 < per < bound:
            bound = per
        super().__init__(model, nbytes, bound=bound,
                         uses=((wr if write else rd, 1.0), (rw, 1.0)))
        self.disk = disk
        self.write = write

    def describe(self) -> str:
        verb = "write" if self.write else "read"
        return f"{verb} of {self.total:.6g} B on disk {self.disk.name}"


class StorageModel(SharingModel):
    """The disks of a platform and the operations running on them."""

    def __init__(self, engine: Engine, disks: list[Disk] | None = None) -> None:
        super().__init__(engine, System())
        self.disks: list[Disk] = []
        self._by_host: dict[str, Disk] = {}
        self._default: Disk | None = None
        for d in disks or [Disk(DEFAULT_DISK.name, DEFAULT_DISK.read_bw, DEFAULT_DISK.write_bw,
                                DEFAULT_DISK.latency)]:
            self.add_disk(d)
        engine.add_model(self)

    def add_disk(self, disk: Disk, default_ok: bool = True) -> None:
        """Attach ``disk``; a disk without hosts becomes the shared default unless
        ``default_ok`` is False (a file-system server's disk)."""
        disk.model_data = (self.system.constraint(disk.read_bw, data=disk),
                           self.system.constraint(disk.write_bw, data=disk),
                           self.system.constraint(max(disk.read_bw, disk.write_bw), data=disk))
        self.disks.append(disk)
        if disk.hosts:
            for h in disk.hosts:
                self._by_host[h] = disk
        elif self._default is None and default_ok:
            self._default = disk

    def disk_of(self, host_name: str) -> Disk:
        """The disk that ``host_name`` reads and writes (its own, else the shared default)."""
        d = self._by_host.get(host_name)
        if d is not None:
            return d
        if self._default is None:  # every disk is host-specific and this host has none
            self._default = Disk(DEFAULT_DISK.name, DEFAULT_DISK.read_bw, DEFAULT_DISK.write_bw,
                                 DEFAULT_DISK.latency)
            self.add_disk(self._default)
        return self._default

    def io(self, disk: Disk, nbytes: float, write: bool, latency: float | None = None,
           stream: bool = True) -> IoOp:
        """Start an operation of ``nbytes`` on ``disk``; returns the activity. ``latency``
        replaces the disk's own (a hard disk's seek, :mod:`smpy.storage.filesystem`);
        ``stream=False``: many requests in flight, no per-stream bound."""
        op = IoOp(self, disk, nbytes, write, stream)
        op.start(disk.latency if latency is None else latency)
        return op
