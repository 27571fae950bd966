"""Every buffer specification an MPI call accepts, parsed in one place (mpi4py's msgbuffer.pxi).

A *message* is a buffer-protocol object (numpy array, bytes, bytearray, memoryview,
array.array, ctypes array, DLPack CPU tensor; datatype deduced from its format, count from its
length) or a list/tuple::

    [buf, datatype]            [buf, count]            [buf, (count, displ)]
    [buf, count, datatype]     [buf, (count, displ), datatype]
    [buf, count, displ, datatype]

with ``datatype`` an ``MPI.Datatype`` or a type code string (``'d'``, ``'i4'``), ``displ`` in
datatype extents, and ``None``/``MPI.BOTTOM`` as an empty buffer (count 0, explicit datatype).
Vector messages (v-collectives) take ``counts``/``displs`` sequences instead::

    [buf, counts]   [buf, (counts, displs)]   [buf, counts, datatype]
    [buf, (counts, displs), datatype]   [buf, counts, displs, datatype]

``counts`` may be one integer (the same for every rank) or omitted (the buffer split evenly,
the first ``len % size`` blocks one larger); ``displs`` may be one integer (a stride) or omitted
(running sum of counts). Malformed specs raise mpi4py's exceptions with its messages
(``ValueError("message: expecting 2 to 4 items")``, ``KeyError("cannot map 'zz' to MPI
datatype")``, ``BufferError`` for a read-only receive buffer...). One check is smpy's own:
mpi4py lets ``count`` exceed the buffer (MPI then reads or writes past it); smpy raises
``ValueError("message: count 20 out of bounds, number of datatype entries 10")``.

``MPI.IN_PLACE`` parses as an empty buffer whose ``BufSpec.in_place`` is True (that is what
mpi4py passes to point-to-point calls); collectives test for it *before* parsing with
:func:`is_in_place` (which, like mpi4py, also accepts ``None``). Mpi4py does not parse
messages for ``MPI.PROC_NULL`` peers at all: callers skip parsing then (:func:`null_spec`).

Fast path: a C-contiguous numpy array costs one ``memoryview`` + ``cast`` + dict lookup
(about 1 µs per call, see ``tests/mpi/test_msgspec.py::test_fast_path_speed``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from smpy.kernel import accel as _accel
from smpy.mpi.buffer import _raw as raw_memory
from smpy.mpi.buffer import acquire
from smpy.mpi.datatype import Datatype
from smpy.mpi.sentinels import BOTTOM, BUFFER_AUTOMATIC, IN_PLACE
from smpy.runtime import errors
from smpy.runtime.datatype import (
    DATATYPE_NULL,
    DatatypeImpl,
    from_typechar,
    lookup_typecode,
)

__all__ = ["BufSpec", "VecSpec", "parse_send", "parse_recv", "parse_vector", "parse_buffer",
           "is_in_place", "null_spec", "parse_reduce", "parse_cco", "parse_alltoall", "as_datatype", "bottom_view", "data_bounds", "BOTTOM", "IN_PLACE", "BUFFER_AUTOMATIC"]


@dataclass(slots=True)
class BufSpec:
    """A parsed message: ``count`` elements of ``datatype`` at byte ``offset`` of ``mem``."""

    obj: object  #: the user's buffer object (IN_PLACE, None or BOTTOM for empty specs)
    mem: memoryview  #: the whole buffer as bytes (format 'B'), writable for receives
    offset: int  #: byte offset of the first element (displacement x extent)
    count: int
    datatype: DatatypeImpl

    @property
    def nbytes(self) -> int:
        """Packed bytes of the message (``count * datatype.size``)."""
        return self.count * self.datatype.size

    @property
    def in_place(self) -> bool:
        return self.obj is IN_PLACE


@dataclass(slots=True)
class VecSpec:
    """A parsed vector message: block ``i`` is ``counts[i]`` elements at ``displs[i]`` extents."""

    obj: object
    mem: memoryview
    counts: list[int]
    displs: list[int]  #: in datatype extents, as MPI's displs
    datatype: DatatypeImpl

    @property
    def in_place(self) -> bool:
        return self.obj is IN_PLACE

    def offset(self, i: int) -> int:
        """Byte offset of block ``i``."""
        return self.displs[i] * self.datatype.extent



def _empty_mem() -> memoryview:
    return memoryview(bytearray())


def null_spec(obj: object = None) -> BufSpec:
    """An empty message (count 0, ``MPI.BYTE``): what mpi4py uses for ``PROC_NULL`` peers."""
    from smpy.runtime.datatype import BYTE
    return BufSpec(obj, _empty_mem(), 0, 0, BYTE)


def is_in_place(obj: object) -> bool:
    """mpi4py's ``is_IN_PLACE``: ``MPI.IN_PLACE`` or ``None`` (collectives' send buffers)."""
    return obj is None or obj is IN_PLACE


def as_datatype(obj: object) -> DatatypeImpl:
    """A ``Datatype`` (or type code string) given in a spec, as a :class:`DatatypeImpl`."""
    if isinstance(obj, Datatype):
        return obj._impl
    if isinstance(obj, DatatypeImpl):
        return obj
    return lookup_typecode(obj)


# -- buffers -----------------------------------------------------------------------------------
def _memoryview(obj: object) -> memoryview:
    """``obj``'s memory as bytes (buffer protocol, DLPack or CUDA array interface)."""
    return acquire(obj, True)[0]


def parse_buffer(obj: object, readonly: bool, need_format: bool = True
                 ) -> tuple[memoryview, str]:
    """``obj``'s memory as a byte view, with its element format (mpi4py's ``getbuffer``:
    any contiguous buffer, C or Fortran order; writable unless ``readonly``)."""
    mem, fmt, _ = acquire(obj, readonly, need_format)
    return mem, fmt


def _uncommitted() -> None:
    errors.raise_error(errors.ERR_TYPE, "Datatype has not been committed")


def data_bounds(dt: DatatypeImpl, count: int) -> tuple[int, int]:
    """Byte range ``[lo, hi)`` holding the data of ``count`` elements from offset 0."""
    if count <= 0:
        return 0, 0
    reach = (count - 1) * dt.extent
    return dt.true_lb + min(0, reach), dt.true_lb + dt.true_extent + max(0, reach)


def bottom_view(dt: DatatypeImpl, count: int, readonly: bool) -> tuple[memoryview, int]:
    """(memory, offset) for ``count`` elements at ``MPI.BOTTOM``: the datatype's displacements
    are absolute addresses (from ``MPI.Get_address``), valid in this process where every rank
    lives. ``ERR_BUFFER`` if the data would start at address 0 or below (no addresses)."""
    lo, hi = data_bounds(dt, count)
    if dt.size == 0 or hi <= lo:
        return memoryview(bytearray()), 0
    if lo <= 0:
        errors.raise_error(errors.ERR_BUFFER, "Null buffer pointer (MPI.BOTTOM with a datatype "
                                              "whose displacements are not addresses)")
    return raw_memory(lo, hi - lo, readonly), -lo


def _unpack_pair(seq: Any) -> tuple[Any, Any]:
    n = len(seq)
    if n == 2:
        return seq[0], seq[1]
    if n < 2:
        raise ValueError(f"need more than {n} value{'s' if n != 1 else ''} to unpack")
    raise ValueError("too many values to unpack (expected 2)")


def _is_datatype(obj: object) -> bool:
    return isinstance(obj, (Datatype, str))


def _is_integral(obj: object) -> bool:
    """mpi4py's ``is_integral``: an index-able object that is not a sequence."""
    if not hasattr(type(obj), "__index__"):
        return False
    if hasattr(type(obj), "__len__"):
        try:
            len(obj)  # type: ignore[arg-type]
        except TypeError:
            return True
        return False
    return True


def _split(msg: Any) -> tuple[Any, Any, Any, Any]:
    """(buf, count, displ, datatype) of a simple message; mpi4py's unpacking rules."""
    o_count = o_displ = o_type = None
    if isinstance(msg, (list, tuple)):
        nargs = len(msg)
        if nargs == 2:
            o_buf, o_count = msg
            if _is_datatype(o_count):
                o_count, o_type = None, o_count
            elif isinstance(o_count, (tuple, list)):
                o_count, o_displ = _unpack_pair(o_count)
        elif nargs == 3:
            o_buf, o_count, o_type = msg
            if isinstance(o_count, (tuple, list)):
                o_count, o_displ = _unpack_pair(o_count)
        elif nargs == 4:
            o_buf, o_count, o_displ, o_type = msg
        else:
            raise ValueError("message: expecting 2 to 4 items")
        return o_buf, o_count, o_displ, o_type
    if msg is None:
        raise TypeError("message: expecting buffer or list/tuple")
    if msg is IN_PLACE or msg is BOTTOM or msg is BUFFER_AUTOMATIC:
        return msg, None, None, None
    try:
        _memoryview(msg)
    except TypeError:
        raise TypeError("message: expecting buffer or list/tuple") from None
    return msg, None, None, None


def _basic(o_buf: Any, o_type: Any, readonly: bool) -> tuple[memoryview, DatatypeImpl]:
    """mpi4py's ``message_basic``: the buffer's bytes and the message datatype."""
    if o_buf is None or o_buf is BOTTOM:
        return _empty_mem(), as_datatype(o_type)
    if o_buf is IN_PLACE or o_buf is BUFFER_AUTOMATIC:  # zero-length buffers of format 'B'
        return _empty_mem(), (as_datatype(o_type) if o_type is not None else from_typechar("B"))
    if o_type is None:
        mem, fmt = parse_buffer(o_buf, readonly)
        return mem, from_typechar(fmt)
    mem, _ = parse_buffer(o_buf, readonly, False)
    return mem, as_datatype(o_type)


def _check_null_type(dt: DatatypeImpl, what: str) -> None:
    if dt is DATATYPE_NULL:
        raise ValueError(f"message: cannot {what}, datatype is null")


def _extent_for(dt: DatatypeImpl, what: str) -> int:
    _check_null_type(dt, what)
    extent = dt.extent
    if extent <= 0:
        raise ValueError(f"message: cannot {what}, datatype extent {extent} "
                         f"(lb:{dt.lb}, ub:{dt.lb + extent})")
    return extent


def _counted(o_buf: Any, count: int, dt: DatatypeImpl, readonly: bool) -> BufSpec | None:
    """The common ``[buffer, count, MPI.Datatype]`` form (the OSU benchmarks', every message):
    a C-contiguous, non-empty buffer and a committed datatype whose ``count`` elements fit.
    None for anything else, which :func:`_simple` then parses (and reports) in full; the
    result is the one :func:`_simple` gives."""
    if o_buf is BOTTOM or o_buf is IN_PLACE or o_buf is BUFFER_AUTOMATIC or dt is DATATYPE_NULL or not dt.committed:
        return None
    try:
        m = memoryview(o_buf)
    except TypeError:
        return None
    n = m.nbytes
    if not n or not m.c_contiguous or (m.readonly and not readonly):
        return None
    if count and dt.size:
        lo, hi = data_bounds(dt, count)
        if lo < 0 or hi > n:
            return None
    return BufSpec(o_buf, m if m.ndim == 1 and m.format == "B" else m.cast("B"), 0, count, dt)


def _simple(msg: Any, readonly: bool, blocks: int) -> BufSpec:
    t = type(msg)
    if (t is list or t is tuple) and blocks < 2 and len(msg) == 3:
        o_buf, o_count, o_type = msg
        if type(o_count) is int and o_count >= 0 and type(o_type) is Datatype:
            fast = _counted(o_buf, o_count, o_type._impl, readonly)
            if fast is not None:
                return fast
    o_buf, o_count, o_displ, o_type = _split(msg)
    mem, dt = _basic(o_buf, o_type, readonly)
    length = mem.nbytes
    offset = 0
    extent = 0
    if o_displ is not None:
        displ = operator.index(o_displ)
        if displ < 0:
            raise ValueError(f"message: negative displacement {displ}")
        if displ > 0:
            extent = _extent_for(dt, "handle displacement")
            if displ * extent > length:
                raise ValueError(f"message: displacement {displ} out of bounds, "
                                 f"number of datatype entries {length // extent}")
            offset = displ * extent
            length -= offset
    if o_count is not None:
        count = operator.index(o_count)
        if count < 0:
            raise ValueError(f"message: negative count {count}")
        if count > 0:
            if o_buf is None:
                raise ValueError(f"message: buffer is None but count is {count}")
            if dt is DATATYPE_NULL:
                errors.raise_error(errors.ERR_TYPE,
                                   "Datatype for argument datatype is a null datatype")
            if not dt.committed:
                _uncommitted()
            total = count * blocks if blocks > 1 else count
            lo, hi = data_bounds(dt, total)
            if o_buf is BOTTOM:
                mem, offset = bottom_view(dt, total, readonly)
                return BufSpec(o_buf, mem, offset, count, dt)
            if dt.size and (offset + lo < 0 or offset + hi > mem.nbytes):
                n = length // dt.extent if dt.extent > 0 else 0
                what = f"count {count}" if blocks < 2 else f"count {count} x {blocks} blocks"
                raise ValueError(f"message: {what} out of bounds, number of datatype entries {n}")
    elif length > 0:
        if extent == 0:
            extent = _extent_for(dt, "infer count")
        if length % extent:
            raise ValueError(f"message: cannot infer count, buffer length {length} is not a "
                             f"multiple of datatype extent {extent} (lb:{dt.lb}, "
                             f"ub:{dt.lb + extent})")
        count = length // extent
        if blocks >= 2:
            if count % blocks:
                raise ValueError(f"message: cannot infer count, number of entries {count} is "
                                 f"not a multiple of required number of blocks {blocks}")
            count //= blocks
    else:
        count = 0
    return BufSpec(o_buf, mem, offset, count, dt)


def _parse_message(spec: Any, blocks: int = 1, readonly: bool = True) -> BufSpec:
    """:func:`parse_send` (``readonly``) and :func:`parse_recv`, with the two fast paths
    inline: a whole C-contiguous numpy array, as ``[array, datatype]`` with an explicit
    ``MPI.Datatype`` or alone (datatype from its dtype); anything else, and every error,
    goes through :func:`_simple`."""
    t = type(spec)
    if t is list or t is tuple:
        if blocks < 2 and len(spec) == 2:
            buf, dtype = spec
            if type(buf) is np.ndarray and type(dtype) is Datatype:
                m = memoryview(buf)
                n = m.nbytes
                if m.c_contiguous and n and (readonly or not m.readonly):
                    dt = dtype._impl
                    extent = dt.extent
                    if dt is not DATATYPE_NULL and extent > 0 and not n % extent:
                        return BufSpec(buf, m.cast("B") if m.ndim != 1 or m.format != "B" else m, 0,
                                       n // extent, dt)
    elif t is np.ndarray:  # whole numpy array, datatype from its dtype
        m = memoryview(spec)
        # (empty arrays: _simple, cast fails on 0 in shape)
        if m.c_contiguous and m.nbytes and (readonly or not m.readonly):
            fmt = m.format
            mem = m.cast("B") if m.ndim != 1 or fmt != "B" else m
            dt = from_typechar(fmt)
            n = mem.nbytes
            size = dt.size
            if blocks < 2 and size and n % size == 0:
                return BufSpec(spec, mem, 0, n // size, dt)
    return _simple(spec, readonly, blocks)


# the entry points: one Python frame per message (functools.partial is C), same signatures as
# ``parse_send(spec, blocks=1)`` and ``parse_recv(spec, blocks=1)``
parse_send = partial(_parse_message, readonly=True)
parse_send.__doc__ = """A send-side (read-only) message. ``blocks`` > 1 (scatter/alltoall send buffers) makes
an inferred count the per-block count, as mpi4py does."""
parse_recv = partial(_parse_message, readonly=False)
parse_recv.__doc__ = """A receive-side (writable) message; ``BufferError`` for read-only buffers."""


def parse_cco(spec: Any, blocks: int, readonly: bool) -> BufSpec:
    """A collective's whole buffer of ``blocks`` equal blocks (gather/allgather receive,
    scatter send, alltoall both): as mpi4py, an explicit count is per block and an inferred
    one the buffer split in ``blocks``; the spec's ``count`` is the total (``blocks`` x per
    block), what the collectives take."""
    s = _simple(spec, readonly, blocks) if blocks > 1 else (
        parse_send(spec) if readonly else parse_recv(spec))
    if blocks > 1:
        s.count *= blocks
    return s


def parse_alltoall(sendbuf: Any, recvbuf: Any, blocks: int) -> tuple[BufSpec | None, BufSpec]:
    """(send, receive) specs of an alltoall (send None for ``IN_PLACE``/``None``)."""
    sspec = None if is_in_place(sendbuf) else parse_cco(sendbuf, blocks, True)
    return sspec, parse_cco(recvbuf, blocks, False)


def parse_reduce(sendbuf: Any, recvbuf: Any) -> tuple[BufSpec | None, BufSpec]:
    """The (send, receive) specs of a reduction (mpi4py's ``for_allreduce``/``for_reduce`` at
    the root): receive first; send None for ``IN_PLACE``/``None``; else the same datatype and
    count on both sides (``ValueError`` otherwise, as mpi4py's ``chk_cro_args``)."""
    rspec = parse_recv(recvbuf)
    if is_in_place(sendbuf):
        return None, rspec
    sspec = parse_send(sendbuf)
    if sspec.datatype is not rspec.datatype:
        raise ValueError("mismatch in send and receive MPI datatypes")
    if sspec.count != rspec.count:
        raise ValueError(f"mismatch in send count {sspec.count} and receive count {rspec.count}")
    return sspec, rspec


# -- vector messages ---------------------------------------------------------------------------
def _int_list(seq: Any, n: int) -> list[int]:
    size = len(seq)
    values = [operator.index(seq[i]) for i in range(size)]
    if size != n:
        raise ValueError(f"expecting {n} items, got {size}")
    return values


def parse_vector(spec: Any, size: int, readonly: bool) -> VecSpec:
    """A v-collective message for ``size`` peers (mpi4py's ``message_vector``)."""
    o_counts = o_displs = o_type = None
    if isinstance(spec, (list, tuple)):
        nargs = len(spec)
        if nargs == 2:
            o_buf, o_counts = spec
            if _is_datatype(o_counts):
                o_counts, o_type = None, o_counts
            elif isinstance(o_counts, tuple):
                o_counts, o_displs = _unpack_pair(o_counts)
        elif nargs == 3:
            o_buf, o_counts, o_type = spec
            if isinstance(o_counts, tuple):
                o_counts, o_displs = _unpack_pair(o_counts)
        elif nargs == 4:
            o_buf, o_counts, o_displs, o_type = spec
        else:
            raise ValueError("message: expecting 2 to 4 items")
    else:
        o_buf, _, _, _ = _split(spec)
    mem, dt = _basic(o_buf, o_type, readonly)
    bsize = mem.nbytes
    if o_counts is None:
        csize = 0
        if bsize > 0:
            extent = _extent_for(dt, "infer count")
            if bsize % extent:
                raise ValueError(f"message: cannot infer count, buffer length {bsize} is not a "
                                 f"multiple of datatype extent {extent} (lb:{dt.lb}, "
                                 f"ub:{dt.lb + extent})")
            csize = bsize // extent
        counts = [csize // size + (csize % size > i) for i in range(size)]
    elif _is_integral(o_counts):
        counts = [operator.index(o_counts)] * size
    else:
        counts = _int_list(o_counts, size)
    if o_displs is None:
        displs, run = [], 0
        for c in counts:
            displs.append(run)
            run += c
    elif _is_integral(o_displs):
        stride = operator.index(o_displs)
        displs = [stride * i for i in range(size)]
    else:
        displs = _int_list(o_displs, size)
    _check_blocks(o_buf, dt, bsize, counts, displs)
    return VecSpec(o_buf, mem, counts, displs, dt)


def _check_blocks(o_buf: Any, dt: DatatypeImpl, length: int, counts: list[int],
                  displs: list[int]) -> None:
    for i, c in enumerate(counts):
        if c < 0:
            errors.raise_error(errors.ERR_COUNT, f"Negative count, value is {c}")
        if c == 0:
            continue
        if o_buf is None or o_buf is BOTTOM:
            errors.raise_error(errors.ERR_BUFFER, "Null buffer pointer (MPI.BOTTOM/None with "
                               "nonzero counts; absolute addresses are not supported)")
        if dt is DATATYPE_NULL:
            errors.raise_error(errors.ERR_TYPE, "Datatype for argument datatype is a null datatype")
        if not dt.committed:
            _uncommitted()
        start = displs[i] * dt.extent
        if start + dt.true_lb < 0 or start + dt.span(c) > length:
            n = length // dt.extent if dt.extent > 0 else 0
            raise ValueError(f"message: block {i} (count {c}, displacement {displs[i]}) out of "
                             f"bounds, number of datatype entries {n}")


# -- the compiled fast paths (smpy.kernel.accel) --------------------------------------------
def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) pairs of :func:`parse_send` and :func:`parse_recv` from
    ``_callaccel.c`` (none when it cannot be built): the two fast paths of
    :func:`_parse_message` in C, the rest through :func:`_simple`."""
    from pathlib import Path

    from smpy.support import cext

    mod, _why = cext.load(Path(__file__).with_name("_callaccel.c"), "smpy.mpi._callaccel")
    if mod is None:
        return []
    mod.setup_parse(np.ndarray, Datatype, DATATYPE_NULL, from_typechar, _simple, parse_send, parse_recv, BufSpec)
    _accel.fast_dealloc(BufSpec)
    from smpy.runtime import p2p

    p2p.compiled_spec_nbytes(BufSpec.__dict__["nbytes"].fget)
    return [(parse_send, mod.parse_send), (parse_recv, mod.parse_recv)]


_accel.register(_compiled)
