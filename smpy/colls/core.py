"""What every collective algorithm is written with: a per-call context that sends and
receives payloads on the communicator's collective channel, and payload helpers.

Payloads
--------
Algorithms move *payloads*, never user buffers:

* ``bytes`` — packed buffer data (buffer collectives) or pickled objects (the lowercase
  ones, as MPI_BYTE). Segmented algorithms slice them at element boundaries (``elem``
  bytes per element, the datatype's size), exactly where MPI would cut a segment.
* :class:`Blob` — an opaque item with an explicit wire size (e.g. the ``(color, key)``
  triples of ``Comm.Split``); block algorithms move it without looking inside.
* tuples of the above — several blocks travelling in one message (Bruck, binomial gather).

The wire size of a message is :func:`wire` of its payload; the runtime adds the 16-byte
envelope. Received payloads may be shared with the sender: they are never mutated.

Reductions
----------
A :class:`Reduction` wraps ``combine(a, b) = a op b`` where ``a`` comes from lower ranks
than ``b`` (so non-commutative ops stay exact), plus ``commutative`` and ``elem``.

Tags and concurrency
--------------------
Every collective call gets a sequence number per (communicator, rank), drawn when the
call is *issued* (so non-blocking collectives, whose schedule runs later in a helper
actor, still agree across ranks, as MPI requires collectives to be issued in the same
order). Its messages use tags ``seq * 2**40 + sub * 2**32 + t``: ``t`` is the
algorithm's own tag offset (segment number, step...), ``sub`` separates nested
collectives (``ctx.sub(k)``, e.g. the reduce and the bcast of ``redbcast``). Tags live
on the collective channel, so user traffic (even ``ANY_TAG``) never matches them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from smpy.runtime import p2p
from smpy.runtime.constants import COLL
from smpy.runtime.datatype import BYTE
from smpy.support.internal import SmpyInternalError

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.p2p import Request
    from smpy.runtime.world import Process

_SEQ_SHIFT = 40
_SUB_SHIFT = 32

Combine = Callable[[bytes, bytes], bytes]


class Blob:
    """An opaque payload item of ``nbytes`` bytes on the wire."""

    __slots__ = ("obj", "nbytes")

    def __init__(self, obj: Any, nbytes: int) -> None:
        self.obj = obj
        self.nbytes = nbytes

    def __repr__(self) -> str:
        return f"Blob({self.obj!r}, {self.nbytes})"


def wire(x: Any) -> int:
    """Bytes on the wire for payload ``x`` (envelope excluded)."""
    t = type(x)
    if t is bytes or t is bytearray:
        return len(x)
    if x is None:
        return 0
    if t is tuple or t is list:
        return sum(wire(i) for i in x)
    if t is Blob:
        return x.nbytes
    return len(x)


class Reduction:
    """``combine(a, b) = a op b`` on packed bytes (``a`` from lower ranks), ``elem`` bytes
    per element, and whether the op commutes."""

    __slots__ = ("combine", "commutative", "elem", "into", "on_arrival", "into_from")

    def __init__(self, combine: Combine, commutative: bool, elem: int,
                 into: Callable[[bytes, memoryview], None] | None = None, on_arrival: bool = False,
                 into_from: Callable[[Any, Any, memoryview], None] | None = None) -> None:
        self.combine = combine
        self.commutative = commutative
        self.elem = max(1, elem)
        #: ``into(a, out)``: ``out = a op out`` in place on a writable memoryview (optional)
        self.into = into
        #: ``into`` may run when a message arrives, outside the rank (predefined ops only:
        #: a user's function runs in its rank, where it may look at that rank's state)
        self.on_arrival = on_arrival and into is not None
        #: ``into_from(a, b, out)``: ``out = a op b`` (``b`` only read), the bytes of
        #: ``out[:] = b; into(a, out)`` (optional; needs ``into``)
        self.into_from = into_from if into is not None else None

    def __call__(self, a: bytes, b: bytes) -> bytes:
        return self.combine(a, b)


def op_reduction(op: Any, datatype: Any) -> Reduction:
    """A :class:`Reduction` for a runtime ``OpImpl`` on packed ``datatype`` elements."""
    op.check(datatype)  # at the call, on every comm size (MPICH validates op and type first)
    size = datatype.size

    def combine(a: bytes, b: bytes) -> bytes:
        out = bytearray(b)  # a new vector, nobody else's: returned as it is, not copied again
        if a:
            op.apply(a, out, len(a) // size if size else 0, datatype)
        return out  # type: ignore[return-value]

    def into(a: bytes, out: memoryview) -> None:
        if a:
            op.apply(a, out, len(a) // size if size else 0, datatype)

    def into_from(a: Any, b: Any, out: memoryview) -> None:
        if a:
            op.apply_out(a, b, out, len(a) // size if size else 0, datatype)
        else:
            out[:] = b

    return Reduction(combine, bool(op.commutative), size, into, on_arrival=bool(op.is_predefined),
                     into_from=into_from)


# -- per-call sequence numbers ------------------------------------------------------------
_seqs: weakref.WeakKeyDictionary[CommImpl, list[int]] = weakref.WeakKeyDictionary()


def next_seq(comm: CommImpl, me: int) -> int:
    seqs = _seqs.get(comm)
    if seqs is None:
        seqs = _seqs[comm] = [0] * comm.size
    s = seqs[me] = seqs[me] + 1
    return s


class Ctx:
    """One rank's view of one collective call: who it is, where to talk, which tags."""

    __slots__ = ("proc", "comm", "me", "size", "call", "tag", "sel")

    def __init__(self, proc: Process, comm: CommImpl, call: str, tag: int, sel: Any) -> None:
        self.proc = proc
        self.comm = comm
        self.me = comm.rank_of[proc.rank]
        self.size = comm.size
        self.call = call
        self.tag = tag
        #: the selection in force (dispatch.Selection), for algorithms that call other
        #: collectives "as selected" (SimGrid's colls::bcast inside an algorithm)
        self.sel = sel

    @classmethod
    def start(cls, proc: Process, comm: CommImpl, call: str, sel: Any) -> Ctx:
        """The context of a new top-level collective call (draws its sequence number)."""
        seq = next_seq(comm, comm.rank_of[proc.rank])
        return cls(proc, comm, call, seq << _SEQ_SHIFT, sel)

    def sub(self, k: int) -> Ctx:
        """A context for the ``k``-th nested collective of this call (same comm)."""
        return Ctx(self.proc, self.comm, self.call, self.tag + ((k + 1) << _SUB_SHIFT), self.sel)

    def on(self, comm: CommImpl, k: int) -> Ctx:
        """A context for a nested collective on another communicator (SMP sub-comms)."""
        return Ctx(self.proc, comm, self.call, self.tag + ((k + 1) << _SUB_SHIFT), self.sel)

    # -- point-to-point, SimGrid's Request::send/recv/isend/irecv/sendrecv -----------------
    def isend(self, data: Any, dest: int, t: int = 0) -> Request:
        return p2p.isend(self.proc, self.comm, COLL, data, wire(data), dest, self.tag + t, self.call)

    def send(self, data: Any, dest: int, t: int = 0) -> None:
        req = p2p.isend(self.proc, self.comm, COLL, data, wire(data), dest, self.tag + t, self.call,
                        blocking=True)
        if req.state == 0:
            p2p.wait(self.proc, req)

    def irecv(self, src: int, t: int = 0) -> Request:
        return p2p.irecv(self.proc, self.comm, COLL, src, self.tag + t, None, self.call)

    def recv(self, src: int, t: int = 0) -> Any:
        return p2p.recv(self.proc, self.comm, COLL, src, self.tag + t, None, self.call).payload

    def wait(self, req: Request) -> Any:
        p2p.wait(self.proc, req)
        return req.payload

    def waitall(self, reqs: Sequence[Request]) -> None:
        p2p.waitall(self.proc, list(reqs))

    def sendrecv_into(self, data: Any, dest: int, src: int, into: memoryview, st: int = 0) -> None:
        """:meth:`sendrecv` whose message lands straight in ``into`` (bytes of a vector):
        the runtime copies it there when the transfer completes, as SMPI copies from the
        sender's buffer to the receiver's. ``data`` may be a view of the sender's vector
        (see :class:`Sink`)."""
        self._exchange(data, dest, src, Sink(into), st)

    def _exchange(self, data: Any, dest: int, src: int, sink: Any, st: int) -> None:
        if dest == self.me and src == self.me:
            raise SmpyInternalError("a vector exchange with oneself")
        s = self.isend(data, dest, st)
        r = p2p.irecv(self.proc, self.comm, COLL, src, self.tag + st, sink, self.call)
        p2p.waitall(self.proc, [s, r])
        if r.nbytes != sink.nbytes:
            raise SmpyInternalError(f"{sink.nbytes} bytes expected, {r.nbytes} received")

    def sendrecv(self, data: Any, dest: int, src: int, st: int = 0, rt: int | None = None) -> Any:
        """Send ``data`` to ``dest`` while receiving from ``src``; a sendrecv with oneself
        is a local copy (free), as in SMPI."""
        if dest == self.me and src == self.me:
            return data
        s = self.isend(data, dest, st)
        r = self.irecv(src, st if rt is None else rt)
        p2p.waitall(self.proc, [s, r])
        return r.payload


# -- payload helpers ----------------------------------------------------------------------
def segment_count(segsize: int, typelng: int, count: int) -> int:
    """Elements per segment (Open MPI's COLL_TUNED_COMPUTED_SEGCOUNT): ``segsize`` bytes
    rounded to whole elements, or the whole message when it is not larger."""
    if typelng <= segsize < typelng * count:
        seg = segsize // typelng
        if segsize - seg * typelng > typelng >> 1:
            seg += 1
        return seg
    return count


def block_split(count: int, nblocks: int) -> tuple[int, int, int]:
    """Open MPI's COLL_TUNED_COMPUTE_BLOCKCOUNT: (split_index, early, late) block counts."""
    late = count // nblocks
    split = count % nblocks
    return split, late + (1 if split else 0), late


def cut(data: bytes, counts: Sequence[int], elem: int) -> list[bytes]:
    """Split ``data`` into consecutive pieces of ``counts[i]`` elements."""
    out = []
    pos = 0
    for c in counts:
        n = c * elem
        out.append(data[pos:pos + n])
        pos += n
    return out


class Sink:
    """Where a collective's receive puts its bytes (the runtime's receive-buffer protocol:
    ``mem``, ``offset``, ``nbytes``, ``datatype``). Messages sent as a ``memoryview`` are
    borrowed from the sender's vector: the runtime copies them when the send completes
    before delivery (detached) or when they reach a receive without a sink."""

    __slots__ = ("mem", "nbytes")
    datatype = BYTE
    offset = 0

    def __init__(self, mem: memoryview) -> None:
        self.mem = mem
        self.nbytes = len(mem)


class ReduceSink:
    """A receive whose bytes are reduced straight into ``mem`` when they arrive
    (``mem := got op mem``), while the sender's send is still pending: no scratch copy, as
    if the reduction read the sender's buffer. For an elementwise op with an in-place form."""

    __slots__ = ("mem", "nbytes", "into", "local", "into_from")
    datatype = None  # the runtime calls deposit() instead of unpacking
    offset = 0

    def __init__(self, mem: memoryview, into: Callable[[Any, memoryview], None],
                 local: Any = None, into_from: Callable[[Any, Any, memoryview], None] | None = None) -> None:
        self.mem = mem
        self.nbytes = len(mem)
        self.into = into
        #: with ``local``: ``mem := got op local`` (``mem`` not read; ``into_from``)
        self.local = local
        self.into_from = into_from

    def deposit(self, data: Any) -> None:
        if len(data) != self.nbytes:
            raise SmpyInternalError(f"{self.nbytes} bytes expected, {len(data)} received")
        if self.local is None:
            self.into(data, self.mem)
        else:
            self.into_from(data, self.local, self.mem)  # type: ignore[misc]


class BlockVector:
    """A packed vector in one mutable buffer, cut into consecutive blocks of known element
    counts, for the algorithms that exchange *runs* of blocks (Rabenseifner's recursive
    halving and doubling, recursive-halving reduce-scatters).

    A run ``[lo, hi)`` of blocks is contiguous, so it travels as one ``bytes`` payload
    (:meth:`run`) and is reduced with *one* call of the op over the whole run
    (:meth:`reduce`), as MPICH's and SimGrid's Rabenseifner do: an elementwise op gives the
    same elements as one call per block, at log2 p calls per rank instead of p − 1, and
    without cutting and joining the blocks at every step.
    """

    __slots__ = ("buf", "view", "off", "scratch")

    def __init__(self, data: bytes | bytearray, counts: Sequence[int], elem: int, adopt: bool = False) -> None:
        # ``adopt``: a bytearray the caller hands over (it is not read again) becomes the
        # vector itself, saving a copy of the whole vector per rank (1 GiB at 1024 ranks
        # of 1 MiB); anything else is copied
        self.buf = data if adopt and type(data) in (bytearray, memoryview) else bytearray(data)
        self.view = memoryview(self.buf)
        off = list(accumulate(map(elem.__mul__, counts), initial=0))  # C-level: 1024 blocks x 1024 ranks
        pos = off[-1]
        if pos > len(self.buf):
            raise SmpyInternalError(f"blocks of {pos} bytes in a vector of {len(self.buf)}")
        self.off = off
        self.scratch: memoryview | None = None

    def exchange_reduce(self, ctx: Ctx, peer: int, s_lo: int, s_hi: int, r_lo: int, r_hi: int,
                        red: Reduction, src: memoryview | None = None) -> None:
        """Send run ``[s_lo, s_hi)`` to ``peer`` while receiving its run ``[r_lo, r_hi)``
        into scratch space, then blocks ``r_lo .. r_hi-1`` := received op mine (the step of
        a recursive-halving reduce-scatter: what is sent is not written by it).

        ``src``: the vector's contents are still there (a view as long as the vector, e.g.
        the send buffer of an allreduce working in its receive buffer): the run is sent
        from ``src`` and the received one reduced with ``src``'s blocks into the vector
        (``got op src``, the same elements as after copying ``src`` in); every block
        outside ``[r_lo, r_hi)`` is left unwritten, for the caller to fill later."""
        off = self.off
        a, b = off[r_lo], off[r_hi]
        sent = (self.view if src is None else src)[off[s_lo]:off[s_hi]]
        if red.on_arrival:  # reduced on arrival, straight from the sender's vector
            sink = (ReduceSink(self.view[a:b], red.into) if src is None else
                    ReduceSink(self.view[a:b], red.into, src[a:b], red.into_from))
            ctx._exchange(sent, peer, peer, sink, 0)
            return
        tmp = self.scratch
        if tmp is None or len(tmp) < b - a:
            tmp = self.scratch = memoryview(bytearray(max(b - a, (off[-1] + 1) // 2)))
        got = tmp[:b - a]
        ctx.sendrecv_into(sent, peer, peer, got)
        if src is not None:
            self.view[a:b] = src[a:b]
        self.reduce(r_lo, r_hi, got, red)

    def exchange_put(self, ctx: Ctx, peer: int, s_lo: int, s_hi: int, r_lo: int, r_hi: int) -> None:
        """Send run ``[s_lo, s_hi)`` to ``peer`` while its run ``[r_lo, r_hi)`` lands in
        place (a recursive-doubling allgather step; the two runs are disjoint)."""
        off = self.off
        ctx.sendrecv_into(self.view[off[s_lo]:off[s_hi]], peer, peer, self.view[off[r_lo]:off[r_hi]])

    def run(self, lo: int, hi: int) -> bytes:
        """A copy of blocks ``lo .. hi-1`` (a payload the sender may not mutate later)."""
        return self.view[self.off[lo]:self.off[hi]].tobytes()

    def block(self, k: int) -> bytes:
        return self.run(k, k + 1)

    def blocks(self) -> list[bytes]:
        return [self.run(k, k + 1) for k in range(len(self.off) - 1)]

    def put(self, lo: int, hi: int, data: bytes) -> None:
        """Blocks ``lo .. hi-1`` := ``data`` (their joined contents)."""
        a, b = self.off[lo], self.off[hi]
        if b - a != len(data):
            raise SmpyInternalError(f"a run of {b - a} bytes received as {len(data)}")
        self.view[a:b] = data

    def reduce(self, lo: int, hi: int, got: bytes, red: Reduction, got_first: bool = True) -> None:
        """Blocks ``lo .. hi-1`` := ``got op run`` (``run op got`` unless ``got_first``)."""
        a, b = self.off[lo], self.off[hi]
        if b - a != len(got):
            raise SmpyInternalError(f"a run of {b - a} bytes received as {len(got)}")
        into = red.into
        if into is not None and (got_first or red.commutative):
            into(got, self.view[a:b])  # in place; a commutative op may swap its operands
            return
        mine = self.view[a:b].tobytes()
        self.view[a:b] = red(got, mine) if got_first else red(mine, got)

    def tobytes(self) -> bytes:
        return self.view[:self.off[-1]].tobytes()

    def result(self) -> bytes | bytearray:
        """The whole vector as the algorithm's result: the buffer itself when the blocks
        fill it (the vector must not be changed afterwards), else a copy of the blocks."""
        if self.off[-1] == len(self.buf):
            self.view.release()  # the bytearray may be resized by whoever gets it
            self.scratch = None
            return self.buf
        return self.tobytes()


def pof2_floor(n: int) -> int:
    """Largest power of two ≤ n (n ≥ 1)."""
    return 1 << (n.bit_length() - 1)


def is_pof2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
