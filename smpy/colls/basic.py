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
    n = len(value)
    fmt = f"<{n}i" if nbytes == 4 * n else f"<{n}q"  # struct.error beyond C ints, as mpi4py
    data = struct.pack(fmt, *value)
    size = comm.size

    def work(ctx: Any) -> list:
        return ctx.sel.run("allgather", ctx, data, [len(data)] * size, 4)

    blocks = start(proc, comm, call, work)
    return [struct.unpack(fmt, b) for b in blocks]
