"""Entry points the facade uses outside the buffer/object collectives: the barrier, and
the allgather of small integer tuples that agrees on ``Comm.Split`` (MPICH allgathers the
(color, key) ints with its selected allgather; so does smpy).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from smpy.colls.nonblocking import start

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process


def barrier(proc: Process, comm: CommImpl) -> None:
    start(proc, comm, "MPI_Barrier", lambda ctx: ctx.sel.run("barrier", ctx))


def allgather(proc: Process, comm: CommImpl, value: tuple[int, ...], nbytes: int,
              call: str = "MPI_Allgather") -> list[tuple[int, ...]]:
    """Allgather a tuple of ints packed in ``nbytes`` bytes (C ints when 4 bytes each)."""
    fmt = _format(len(value), nbytes)
    blocks = allgather_blocks(proc, comm, struct.pack(fmt, *value), call)
    return list(struct.iter_unpack(fmt, b"".join(blocks)))


def allgather_blocks(proc: Process, comm: CommImpl, data: bytes, call: str) -> list[bytes]:
    """Allgather ``data`` (the same size on every rank): every rank's bytes, in rank order
    (the same list on every rank, for a caller that reduces it once for all)."""
    size = comm.size

    def work(ctx: Any) -> list:
        return ctx.sel.run("allgather", ctx, data, [len(data)] * size, 4)

    return start(proc, comm, call, work)


def pack_ints(value: tuple[int, ...], nbytes: int) -> bytes:
    """``value`` packed as :func:`allgather` sends it (struct.error beyond C ints, as mpi4py)."""
    return struct.pack(_format(len(value), nbytes), *value)


def unpack_ints(blocks: list[bytes], n: int, nbytes: int) -> list[tuple[int, ...]]:
    """The tuples of n ints that :func:`allgather_blocks` gathered from :func:`pack_ints`."""
    return list(struct.iter_unpack(_format(n, nbytes), b"".join(blocks)))


def _format(n: int, nbytes: int) -> str:
    return f"<{n}i" if nbytes == 4 * n else f"<{n}q"
