"""More of SimGrid 3.32's own collective algorithms (STAR-MPI, Faraj & Yuan): the
pipelined chain reduce ``NTSL`` and the 3-D mesh alltoall ``3dmesh``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls.allgather import _mesh3
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx, Reduction

NTSL_SEGMENT = 8192  # reduce_NTSL_segment_size_in_byte


@algorithm("reduce", "NTSL", source="SimGrid reduce-NTSL.cpp (non-topology-specific pipelined linear reduce)",
           commutative_only=True, fallback="binomial")
def NTSL(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Chain root−1 → root−2 → … → root+1 → root, in 8 KiB segments pipelined with
    non-blocking sends and receives (one tag per segment); the ``count % segment`` last
    elements go through the default reduce. Folds higher ranks first, hence commutative
    ops only. Cost ≈ (p−1 + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data
    elem = red.elem
    count = len(data) // elem
    to, frm = (me - 1) % size, (me + 1) % size
    last = (root - 1) % size
    seg = max(1, NTSL_SEGMENT // elem)
    if count <= seg:
        if me == root:
            return red(ctx.recv(frm), data)
        if me == last:
            ctx.send(data, to)
        else:
            ctx.send(red(ctx.recv(frm), data), to)
        return None
    pipe, rem = divmod(count, seg)
    step = seg * elem
    segs = [data[i * step:(i + 1) * step] for i in range(pipe)]
    if me == last:
        ctx.waitall([ctx.isend(s, to, i) for i, s in enumerate(segs)])
    else:
        reqs = [ctx.irecv(frm, i) for i in range(pipe)]
        sends = []
        for i, r in enumerate(reqs):
            segs[i] = red(ctx.wait(r), segs[i])
            if me != root:
                sends.append(ctx.isend(segs[i], to, i))
        ctx.waitall(sends)
    tail = b""
    if rem:
        tail = ctx.sel.run_named("reduce", "default", ctx.sub(1), root, data[pipe * step:], red)
    return b"".join(segs) + (tail or b"") if me == root else None


@algorithm("alltoall", "3dmesh", source="Faraj & Yuan, ICS 2005 (SimGrid alltoall-3dmesh.cpp)",
           requires=lambda p: _mesh3(p) is not None, requirement="at least 3 ranks", fallback="ring")
def mesh3d(ctx: Ctx, blocks: list) -> list:
    """Ranks on an X×X×Z mesh: each sends its whole buffer to its row, then each row's
    buffers to its column (so a plane holds its X² buffers), then to each rank of the
    other planes the X² blocks meant for it. Cost (2X + Z − 3) α + (X + X² + X²)·pnβ-ish."""
    size, me = ctx.size, ctx.me
    X, Y, Z = _mesh3(size)  # type: ignore[misc]
    plane = X * Y
    my_z = me // plane
    row_base = (me // X) * X
    col_base = me % Y + my_z * plane
    z_base = my_z * plane
    # the full send buffers of the ranks of my plane, by rank
    have: dict[int, Any] = {me: tuple(blocks)}
    reqs = {row_base + i: ctx.irecv(row_base + i) for i in range(Y) if row_base + i != me}
    for i in range(Y):
        if row_base + i != me:
            ctx.send(tuple(blocks), row_base + i)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        have[s] = r.payload
    srcs = [i * Y + col_base for i in range(X) if i * Y + col_base != me]
    reqs = {s: ctx.irecv(s) for s in srcs}
    mine = tuple(have[row_base + j] for j in range(Y))
    for i in range(X):
        dst = i * Y + col_base
        if dst != me:
            ctx.send(mine, dst)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        base = (s // X) * X
        for j, buf in enumerate(r.payload):
            have[base + j] = buf
    out: list[Any] = [None] * size
    for j in range(plane):
        out[z_base + j] = have[z_base + j][me]
    zreqs = {}
    for i in range(1, Z):
        src = (me + i * plane) % size
        zreqs[(src // plane) * plane] = ctx.irecv(src)
    for i in range(1, Z):
        dst = (me + i * plane) % size
        ctx.send(tuple(have[z_base + j][dst] for j in range(plane)), dst)
    ctx.waitall(list(zreqs.values()))
    for base, r in zreqs.items():
        for j, b in enumerate(r.payload):
            out[base + j] = b
    return out
