"""Buffer specs to payloads and back: what a message carries, for point-to-point and collectives.

A *spec* is the facade's parsed buffer specification (duck-typed: ``mem``, ``offset``,
``count``, ``datatype`` with ``pack``/``unpack``/``size``/``extent``; a vector spec has
``counts``/``displs`` instead of one count). The functions here turn a spec into the bytes
on the wire with the datatype's own ``pack`` (:mod:`smpy.runtime.datatype`) and write
received bytes back with its ``unpack``; they add the two things a datatype does not know:

* folded memory (``smpy.shared_array``, :mod:`smpy.support.folded`): a send buffer with
  folded bytes travels as a payload of its private bytes only, and a receive buffer gets
  only its private bytes written;
* truncation: data longer than the receive buffer raises ``MPI_ERR_TRUNCATE`` naming the
  call; a partial last element is received, as MPI receives it.

Point-to-point sends (:mod:`smpy.runtime.p2p` through the facade) and the buffer
collectives (:mod:`smpy.colls.buffers`, :mod:`smpy.colls.inter`) share them.
"""

from __future__ import annotations

from typing import Any

from smpy.runtime import copies as _copies
from smpy.runtime import errors
from smpy.support import folded as _folded

__all__ = ["pack", "pack_owned", "pack_message", "unpack", "block_offset", "pack_block", "unpack_block"]


def pack(spec: Any, count: int | None = None, offset: int | None = None) -> bytes:
    """The packed bytes of ``count`` elements (default: the spec's) from byte ``offset``."""
    return spec.datatype.pack(spec.mem, spec.offset if offset is None else offset,
                              spec.count if count is None else count)


def pack_owned(spec: Any) -> bytes | bytearray:
    """:func:`pack`, as a bytearray that belongs to the caller when the datatype is
    contiguous (one copy either way): vector algorithms adopt it instead of copying it
    again (:class:`smpy.colls.core.BlockVector`)."""
    dt = spec.datatype
    if dt.contiguous:
        return bytearray(spec.mem[spec.offset:spec.offset + spec.count * dt.size])
    return pack(spec)


def pack_message(spec: Any, owned: bool = False) -> Any:
    """A point-to-point message's payload, without copying when it can: a contiguous
    message is a ``memoryview`` of the sender's bytes, *borrowed* until the send completes
    (the runtime copies it when the send detaches, straight into the receive buffer when one
    is posted; :mod:`smpy.runtime.p2p`). ``owned``: the packed bytes themselves, for sends
    whose buffer changes before the send completes (MPI_Bsend copies into the attached
    buffer, MPI_Sendrecv_replace receives into it). When the send buffer has folded bytes
    (smpy.shared_array), a :class:`~smpy.support.folded.FoldedPayload` that carries only the
    private ones (the runtime delivers it without copying folded bytes). A message of the
    whole buffer borrows ``spec.mem`` itself (the spec's own byte view, which the caller does
    not release or write through), not a slice of it."""
    if _folded.active:
        folded = _folded.pack(spec.datatype, spec.mem, spec.offset, spec.count)
        if folded is not None:
            return folded
    dt = spec.datatype
    if dt.contiguous and not owned:
        off, n, mem = spec.offset, spec.count * dt.size, spec.mem
        if type(off) is int and type(n) is int and type(mem) is memoryview and off == 0 and n == mem.nbytes:
            return mem
        return mem[off:off + n]
    if _copies.ledger is not None:
        _copies.ledger.add("pack", spec.count * dt.size, spec.count * dt.size)
    return dt.pack(spec.mem, spec.offset, spec.count)


def unpack(spec: Any, data: bytes, offset: int | None = None, capacity: int | None = None, call: str = "") -> None:
    """Write ``data`` into the spec's memory (from byte ``offset``), at most ``capacity``
    elements (default: the spec's count); longer data is ``MPI_ERR_TRUNCATE``."""
    dt = spec.datatype
    cap = (spec.count if capacity is None else capacity) * dt.size
    if len(data) > cap:
        errors.raise_error(errors.ERR_TRUNCATE, f"{call}: message of {len(data)} bytes, buffer holds {cap}")
    if data:
        off, count = spec.offset if offset is None else offset, -(-len(data) // dt.size)  # a partial last element too
        if _folded.active:  # folded bytes of the receive buffer are not written
            _folded.unpack(dt, data, spec.mem, off, count)
        else:
            dt.unpack(data, spec.mem, off, count)


def block_offset(spec: Any, i: int, per: int) -> int:
    """Byte offset of block ``i`` of ``per`` elements in a spec's memory."""
    return spec.offset + i * per * spec.datatype.extent


def pack_block(vec: Any, i: int) -> bytes:
    """The packed bytes of block ``i`` of a vector spec (``counts[i]`` elements at ``displs[i]``)."""
    return vec.datatype.pack(vec.mem, vec.displs[i] * vec.datatype.extent, vec.counts[i])


def unpack_block(vec: Any, i: int, data: bytes, call: str) -> None:
    """Write ``data`` into block ``i`` of a vector spec; longer than the block is ``MPI_ERR_TRUNCATE``."""
    dt = vec.datatype
    cap = vec.counts[i] * dt.size
    if len(data) > cap:
        errors.raise_error(errors.ERR_TRUNCATE, f"{call}: block {i} has {len(data)} bytes, room for {cap}")
    if data:
        if _folded.active:
            _folded.unpack(dt, data, vec.mem, vec.displs[i] * dt.extent, -(-len(data) // dt.size))
        else:
            dt.unpack(data, vec.mem, vec.displs[i] * dt.extent, -(-len(data) // dt.size))
