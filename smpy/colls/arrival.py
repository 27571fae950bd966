"""SimGrid 3.32's arrival-pattern-aware collectives (Faraj, Patarasuk & Yuan, "Bandwidth
efficient all-to-all broadcast on switched clusters" / STAR-MPI): the root serves the ranks
in the order they *arrive* in the collective instead of a fixed tree.

Every non-root rank first sends a 1-byte "I am here" message to rank 0. Rank 0 polls with
``Iprobe`` (each failed probe burns ``k × smpi/iprobe`` seconds, as in SMPI, so polling is
what sets the pace) and, per polling round, builds a *header* (1024 ints = 4 KiB on the
wire) listing the ranks that arrived, in rank order. Then:

* bcast ``arrival_pattern_aware``: the header and the data run down the chain of the
  round's ranks (8 KiB segments, pipelined, above one segment); when nobody arrived in a
  round rank 0 serves the first rank not served yet without waiting for it;
* bcast ``arrival_pattern_aware_wait``: three probing sweeps per round (a sweep restarts
  after each arrival), never serves unannounced ranks;
* bcast ``arrival_scatter``: rank 0 sends the header to every rank of the round, scatters
  the buffer among them, and they complete it with a ring allgather;
* reduce ``arrival_pattern_aware``: the round's chain reduces the data towards rank 0
  (which combines it with its own), 8 KiB segments pipelined above one segment.

A root other than 0 first hands its buffer to rank 0 (bcast) or gets the result from it
(reduce); the ``count % segment`` tail goes through the selected bcast (SimGrid's
``colls::bcast``) or SimGrid's default reduce. SimGrid's collectives share the tag space
with user messages and probe with ``MPI_ANY_TAG``: a user message already waiting at rank 0
counts as an arrival there (it resets SMPI's probe delay); smpy's probe reproduces that
(see :func:`_probe`) without receiving the user message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls.bcast import _remainder, _root_to_zero
from smpy.colls.core import Blob
from smpy.colls.registry import algorithm
from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.runtime import p2p
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, COLL, P2P

if TYPE_CHECKING:
    from smpy.colls.core import Ctx, Reduction

SEGMENT = 8192  # bcast/reduce_arrival_pattern_aware(_wait)_segment_size_in_byte
HEADER_BYTES = 1024 * 4  # HEADER_SIZE ints
SCATTER_HEADER_BYTES = 128 * 4  # bcast-arrival-scatter.cpp's own BCAST_ARRIVAL_PATTERN_AWARE_HEADER_SIZE
REDUCE_PROBE_SLEEP = 1e-4  # the sleep_for(0.0001) after each probe of reduce's short path

# tag offsets inside one call
T_ROOT, T_HERE, T_HEADER, T_DATA, T_RING = 0, 1, 2, 16, 1 << 20


def _probe(ctx: Ctx, src: int) -> bool:
    """Rank 0's ``Iprobe(src, MPI_ANY_TAG)`` for ``src``'s 1-byte arrival message, at SMPI's
    cost. SimGrid's collectives share the tag space with user messages, so its probe also
    sees a user message ``src`` already sent to rank 0 (e.g. after leaving this bcast): the
    flag is then set and SMPI's growing probe delay starts again from one ``smpi/iprobe``
    — smpy does the same, without touching the user message."""
    proc = ctx.proc
    if p2p.iprobe(proc, ctx.comm, COLL, src, ctx.tag + T_HERE) is not None:
        return True
    if p2p.find_unexpected(proc, ctx.comm, P2P, src, ANY_TAG) is not None:
        proc.polls.iprobe = 0
        return True
    return False


def _header(order: list[int], nbytes: int = HEADER_BYTES) -> Blob:
    return Blob(tuple(order), nbytes)


def _next_in(order: tuple[int, ...], me: int) -> tuple[int, int | None]:
    k = order.index(me)
    return k, (order[k + 1] if k + 1 < len(order) else None)


def _segments(count: int, elem: int) -> tuple[int, int, int, int]:
    """SimGrid's pipelining of ``count`` elements of ``elem`` bytes in 8 KiB segments:
    (elements per segment, whole segments, elements left over, bytes per segment)."""
    seg = max(1, SEGMENT // elem)
    pipe, rem = divmod(count, seg)
    return seg, pipe, rem, seg * elem


def _sweep(ctx: Ctx, served: list[bool]) -> tuple[list[int], bool]:
    """One probing sweep of ``arrival_pattern_aware``: every rank 1..p-1 probed, then the
    unserved ones that announced themselves received in rank order and served; when none
    did, the first unserved rank is served without its 1-byte message (second value True)."""
    size = ctx.size
    found = [False] + [_probe(ctx, i) for i in range(1, size)]
    order = []
    for i in range(1, size):
        if found[i] and not served[i]:
            ctx.recv(i, T_HERE)
            order.append(i)
            served[i] = True
    if order:
        return order, False
    first = next(i for i in range(1, size) if not served[i])
    served[first] = True
    return [first], True


def _probe_rounds(ctx: Ctx, served: list[bool], arrived: list[bool], sweeps: int, restart: int) -> list[int]:
    """``sweeps`` probing sweeps over the ranks neither served nor announced; an arrival is
    received at once and restarts the sweep at rank ``restart`` (SimGrid sets ``i`` to 0 in
    the bcasts, to 1 in the reduce, before the loop's ``i++``). Returns the round's ranks."""
    size = ctx.size
    for _ in range(sweeps):
        i = 1
        while i < size:
            if not served[i] and not arrived[i] and _probe(ctx, i):
                arrived[i] = True
                ctx.recv(i, T_HERE)
                i = restart
            i += 1
    order = [i for i in range(1, size) if arrived[i] and not served[i]]
    for i in order:
        served[i] = True
    return order


# -- bcast ---------------------------------------------------------------------------------
@algorithm("bcast", "arrival_pattern_aware", source="SimGrid bcast-arrival-pattern-aware.cpp (STAR-MPI)")
def arrival_pattern_aware(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Rank 0 probes every rank once per round; the ranks that announced themselves get a
    header and the data down a chain in rank order (8 KiB segments pipelined above one
    segment); a round without arrivals serves the first unserved rank unannounced.

    ≈ polling rounds × (p−1) probes + per chain (len + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    count = nbytes // elem
    seg, pipe, rem, step = _segments(count, elem)
    data = _root_to_zero(ctx, root, data)
    if count <= seg:
        if me == 0:
            assert data is not None
            served = [False] * size
            left = size - 1
            while left:
                order, _ = _sweep(ctx, served)
                left -= len(order)
                ctx.send(_header(order), order[0], T_HEADER)
                ctx.send(data, order[0], T_DATA)
            return data
        ctx.send(b"\0", 0, T_HERE)
        head = ctx.recv(ANY_SOURCE, T_HEADER)
        data = ctx.recv(ANY_SOURCE, T_DATA)
        _, nxt = _next_in(head.obj, me)
        if nxt is not None:
            ctx.send(head, nxt, T_HEADER)
            ctx.send(data, nxt, T_DATA)
        return data  # type: ignore[return-value]
    if me == 0:
        assert data is not None
        segs = [data[j * step:(j + 1) * step] for j in range(pipe)]
        served = [False] * size
        unannounced = []
        left = size - 1
        while left:
            order, unannounced_one = _sweep(ctx, served)
            if unannounced_one:
                unannounced.append(order[0])
            left -= len(order)
            ctx.send(_header(order), order[0], T_HEADER)
            for j, s in enumerate(segs):
                ctx.send(s, order[0], T_DATA + j)
        for i in sorted(unannounced):
            ctx.recv(i, T_HERE)
        got = data
    else:
        ctx.send(b"\0", 0, T_HERE)
        head = ctx.wait(ctx.irecv(ANY_SOURCE, T_HEADER))
        _, nxt = _next_in(head.obj, me)
        if nxt is not None:
            ctx.send(head, nxt, T_HEADER)
        got = _chain_segments(ctx, ANY_SOURCE, nxt, pipe)
    if rem:
        got = got[:pipe * step] + _remainder(ctx, root, data, pipe * step, nbytes, elem)
    return data if me == root else got  # type: ignore[return-value]


def _chain_segments(ctx: Ctx, src: int, nxt: int | None, pipe: int) -> bytes:
    """A chain member's part of a round: the ``pipe`` data segments from ``src``, each
    forwarded to ``nxt`` (if any) as soon as it arrives; returns them joined."""
    reqs = [ctx.irecv(src, T_DATA + j) for j in range(pipe)]
    if nxt is not None:
        ctx.waitall([ctx.isend(ctx.wait(r), nxt, T_DATA + j) for j, r in enumerate(reqs)])
    else:
        ctx.waitall(reqs)
    return b"".join(r.payload for r in reqs)


@algorithm("bcast", "arrival_pattern_aware_wait", source="SimGrid bcast-arrival-pattern-aware-wait.cpp (STAR-MPI)")
def arrival_pattern_aware_wait(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Rank 0 makes three probing sweeps per round over the ranks not yet announced (a
    sweep restarts after each arrival) and sends the round's header and data down the
    chain of its ranks, 8 KiB segments pipelined (one segment below 8 KiB); it only serves
    ranks that announced themselves.

    ≈ polling rounds × 3 sweeps + per chain (len + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    count = nbytes // elem
    seg, pipe, rem, step = _segments(count, elem)
    if count <= seg:
        step, pipe, rem = count * elem, 1, 0
    data = _root_to_zero(ctx, root, data)
    if me == 0:
        assert data is not None
        segs = [data[j * step:(j + 1) * step] for j in range(pipe)]
        served = [False] * size
        arrived = [False] * size
        left = size - 1
        while left:
            order = _probe_rounds(ctx, served, arrived, 3, 0)
            left -= len(order)
            if order:
                ctx.send(_header(order), order[0], T_HEADER)
                ctx.waitall([ctx.isend(s, order[0], T_DATA + j) for j, s in enumerate(segs)])
        got = data
    else:
        ctx.send(b"\0", 0, T_HERE)
        head = ctx.wait(ctx.irecv(ANY_SOURCE, T_HEADER))
        k, nxt = _next_in(head.obj, me)
        frm = 0 if k == 0 else head.obj[k - 1]
        if nxt is not None:
            ctx.send(head, nxt, T_HEADER)
        got = _chain_segments(ctx, frm, nxt, pipe)
    if rem:
        got = got[:pipe * step] + _remainder(ctx, root, data, pipe * step, nbytes, elem)
    return data if me == root else got  # type: ignore[return-value]


@algorithm("bcast", "arrival_scatter", source="SimGrid bcast-arrival-scatter.cpp (STAR-MPI)")
def arrival_scatter(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Rank 0 probes as ``arrival_pattern_aware_wait``; each round's ranks get the header,
    then one n/k piece each (the last one also the remainder), and complete the buffer
    with a ring allgather among themselves. Fewer elements than ranks: the selected bcast
    (SimGrid recurses into itself when this algorithm is forced; smpy then runs the
    selector's choice).

    ≈ polling rounds + k headers + n β + (k−1)(α + nβ/k) per round of k ranks."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    count = nbytes // elem
    if count < size:
        sub = ctx.sub(0)
        if ctx.sel.override.get("bcast") == "arrival_scatter":
            ctx.sel.note("bcast", "arrival_scatter", "the vector has fewer elements than ranks", ctx.sel.selector)
            return ctx.sel.run_selector("bcast", ctx.sel.selector, sub, root, data, nbytes, elem)
        return ctx.sel.run("bcast", sub, root, data, nbytes, elem)
    data = _root_to_zero(ctx, root, data)
    if me == 0:
        assert data is not None
        served = [False] * size
        arrived = [False] * size
        left = size - 1
        while left:
            order = _probe_rounds(ctx, served, arrived, 3, 0)
            left -= len(order)
            if not order:
                continue
            head = _header(order, SCATTER_HEADER_BYTES)
            for to in order:
                ctx.send(head, to, T_HEADER)
            n = len(order)
            piece = count // n
            for i, to in enumerate(order):
                c = piece + (count % n if i == n - 1 else 0)
                ctx.send(data[i * piece * elem:(i * piece + c) * elem], to, T_DATA)
        return data
    ctx.send(b"\0", 0, T_HERE)
    head = ctx.recv(0, T_HEADER)
    order = head.obj
    n = len(order)
    k = order.index(me)
    blocks: list[Any] = [None] * n
    blocks[k] = ctx.recv(0, T_DATA)
    to = order[0] if k == n - 1 else order[k + 1]
    frm = order[n - 1] if k == 0 else order[k - 1]
    for i in range(n - 1):
        blocks[(k - i - 1) % n] = ctx.sendrecv(blocks[(k - i) % n], to, frm, T_RING + i)
    got = b"".join(blocks)
    return data if me == root else got  # type: ignore[return-value]


# -- reduce --------------------------------------------------------------------------------
@algorithm("reduce", "arrival_pattern_aware", source="SimGrid reduce-arrival-pattern-aware.cpp (STAR-MPI)",
           commutative_only=True, fallback="binomial")
def reduce_arrival_pattern_aware(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Rank 0 polls for arrivals (short vectors: one sweep per round with a 0.1 ms sleep
    after each probe; longer ones: one restarting sweep); each round's ranks reduce the
    data along their chain in rank order towards rank 0, which folds it into its own
    (8 KiB segments pipelined above one segment). Arrival order decides the operand
    order, hence commutative ops only. A root other than 0 gets the result from rank 0;
    the ``count % segment`` tail goes through SimGrid's default reduce.

    ≈ polling + per chain (len + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data
    elem = red.elem
    count = len(data) // elem
    seg, pipe, rem, step = _segments(count, elem)
    acc = data
    if count <= seg:
        if me == 0:
            served = [False] * size
            found = [False] * size
            left = size - 1
            engine = ctx.proc.world.engine
            while left:
                for i in range(1, size):
                    if not served[i]:
                        found[i] = _probe(ctx, i)
                        block_on(Sleep(engine, REDUCE_PROBE_SLEEP))
                order = []
                for i in range(1, size):
                    if found[i] and not served[i]:
                        ctx.recv(i, T_HERE)
                        order.append(i)
                        served[i] = True
                left -= len(order)
                if order:
                    ctx.send(_header(order), order[0], T_HEADER)
                    acc = red(ctx.recv(order[-1], T_DATA), acc)
        else:
            ctx.send(b"\0", 0, T_HERE)
            head = ctx.recv(ANY_SOURCE, T_HEADER)
            k, nxt = _next_in(head.obj, me)
            if nxt is not None:
                ctx.send(head, nxt, T_HEADER)
            to = 0 if nxt is None else nxt
            if k:
                acc = red(ctx.recv(head.obj[k - 1], T_DATA), acc)
            ctx.send(acc, to, T_DATA)
    else:
        segs = [data[j * step:(j + 1) * step] for j in range(pipe)]
        if me == 0:
            served = [False] * size
            arrived = [False] * size
            left = size - 1
            while left:
                order = _probe_rounds(ctx, served, arrived, 1, 1)
                left -= len(order)
                if order:
                    ctx.send(_header(order), order[0], T_HEADER)
                    frm = order[-1]
                    for j in range(pipe):
                        segs[j] = red(ctx.recv(frm, T_DATA + j), segs[j])
        else:
            ctx.send(b"\0", 0, T_HERE)
            head = ctx.wait(ctx.irecv(ANY_SOURCE, T_HEADER))
            k, nxt = _next_in(head.obj, me)
            if nxt is not None:
                ctx.send(head, nxt, T_HEADER)
            to = 0 if nxt is None else nxt
            if k == 0:
                ctx.waitall([ctx.isend(s, to, T_DATA + j) for j, s in enumerate(segs)])
            else:
                frm = head.obj[k - 1]
                reqs = [ctx.irecv(frm, T_DATA + j) for j in range(pipe)]
                sends = []
                for j, r in enumerate(reqs):
                    segs[j] = red(ctx.wait(r), segs[j])
                    sends.append(ctx.isend(segs[j], to, T_DATA + j))
                ctx.waitall(sends)
        acc = b"".join(segs) + data[pipe * step:]
    if root != 0:
        if me == 0:
            ctx.send(acc, root, T_ROOT)
        elif me == root:
            acc = ctx.recv(0, T_ROOT)
    if rem and count > seg:
        tail = ctx.sel.run_named("reduce", "default", ctx.sub(1), root, data[pipe * step:], red)
        if me == root:
            acc = acc[:pipe * step] + tail
    return acc if me == root else None
