"""Replays one rank's part of a time-independent (TI) trace: an ordinary mpi4py program.

``smpy replay`` runs it on every rank under the emulator (computation not simulated: the
interpreter's own work costs nothing; ``compute`` actions inject their flops); it also runs
under a real ``mpiexec``, which replays the trace on a real machine. Arguments: the trace
(an index file listing one file per rank, or one file holding every rank's lines).

Actions and their arguments follow SimGrid 3.32's replay (``smpi_replay.cpp``): counts are
in elements of the trailing datatype ids (SMPI's numbering, :data:`DATATYPES`); without a
datatype the default is ``MPI_BYTE``, or ``MPI_DOUBLE`` when ``init`` has an argument. Send
and receive buffers hold zeros; results are meaningless, only the traffic and its timing
matter. Requests of ``isend``/``irecv`` are kept by (source, destination, tag) for ``wait``,
``test`` and ``waitall``. smpy's own file actions (``file_*``, ``mpi_file_*``) are
replayed by :mod:`smpy.replay.files`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:  # pragma: no cover - under a real mpiexec without smpy installed
    smpy = None

from smpy.replay.files import FileActions
from smpy.replay.ti import actions_of
from smpy.trace.ti import DATATYPES


class Replayer(FileActions):
    def __init__(self, comm: MPI.Intracomm) -> None:
        self.comm = comm
        #: MPI-IO files opened by the trace, by path (smpy.replay.files)
        self.files: dict[str, list] = {}
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.default = MPI.BYTE
        self.requests: dict[tuple[int, int, int], list[MPI.Request]] = defaultdict(list)
        self._buf = np.zeros(0, dtype=np.uint8)
        #: datatype by its id in the trace, and (size, extent == size) by datatype
        self._types: dict[str, MPI.Datatype] = {}
        self._sizes: list[tuple[MPI.Datatype, int, bool]] = []
        #: the method of each action met, by its name
        self._actions: dict[str, Callable[[list[str]], None]] = {}

    # -- helpers ---------------------------------------------------------------------------
    def dtype(self, args: list[str], i: int) -> MPI.Datatype:
        if i >= len(args) or args[i] == "":
            return self.default
        dt = self._types.get(args[i])
        if dt is None:
            code = int(args[i])
            name = DATATYPES.get(code)
            dt = getattr(MPI, name, None) if name else None
            if dt is None or dt == MPI.DATATYPE_NULL:
                raise ValueError(f"rank {self.rank}: unknown datatype id {code} in the trace")
            self._types[args[i]] = dt
        return dt

    def _size(self, dt: MPI.Datatype) -> tuple[int, bool]:
        """(size, whether extent == size) of a datatype, asked once per datatype object
        (datatypes are not hashable: a short list searched by identity)."""
        for known, size, dense in self._sizes:
            if known is dt:
                return size, dense
        size = dt.Get_size()
        dense = dt.Get_extent()[1] == size > 0
        self._sizes.append((dt, size, dense))
        return size, dense

    def buf(self, count: int, dt: MPI.Datatype, parts: int = 1) -> list:
        """The shared zero buffer as the message of ``count`` × ``parts`` elements. A message
        of whole elements of a dense type is ``[view, type]``, the count given by the
        view's length (the form the compiled message parsing takes; the same message as
        ``[view, count, type]``)."""
        count = int(count)
        size, dense = self._size(dt)
        nbytes = count * size * parts
        if self._buf.nbytes < max(nbytes, 1):
            self._buf = np.zeros(max(nbytes, 1), dtype=np.uint8)
        if nbytes > 0 and dense:
            return [self._buf[:nbytes], dt]
        return [self._buf[:max(nbytes, 1)], count * parts, dt]

    def scratch(self, count: int, dt: MPI.Datatype, parts: int = 1) -> list:
        """A zeroed buffer of ``count`` × ``parts`` elements; the spec's count is per part
        (mpi4py: the count of ``[buf, count, type]`` in Gather/Alltoall... is per rank);
        ``[buffer, type]`` for one part of whole elements of a dense type (as :meth:`buf`)."""
        count = int(count)
        size, dense = self._size(dt)
        nbytes = count * size * parts
        if nbytes > 0 and dense and parts == 1:
            return [np.zeros(nbytes, dtype=np.uint8), dt]
        return [np.zeros(max(nbytes, 1), dtype=np.uint8), count, dt]

    def compute(self, flops: float) -> None:
        if flops > 0 and smpy is not None:
            smpy.execute_flops(flops)

    # -- actions ---------------------------------------------------------------------------
    def run(self, action: str, a: list[str]) -> None:
        fn = self._actions.get(action)
        if fn is None:
            fn = getattr(self, "do_" + action, None)
            if fn is None:
                raise ValueError(f"rank {self.rank}: unknown TI action {action!r}")
            self._actions[action] = fn
        fn(a)

    def do_init(self, a: list[str]) -> None:
        self.default = MPI.DOUBLE if a else MPI.BYTE

    def do_finalize(self, a: list[str]) -> None:
        pass

    do_comm_size = do_comm_split = do_comm_dup = do_location = do_finalize

    def do_wtime(self, a: list[str]) -> None:
        MPI.Wtime()

    def do_compute(self, a: list[str]) -> None:
        self.compute(float(a[0]))

    def do_sleep(self, a: list[str]) -> None:
        if smpy is not None:
            smpy.sleep(float(a[0]))
        else:  # pragma: no cover
            import time
            time.sleep(float(a[0]))

    def do_send(self, a: list[str]) -> None:
        dst, tag, count = int(a[0]), int(a[1]), int(float(a[2]))
        self.comm.Send(self.buf(count, self.dtype(a, 3)), dst, tag)

    def do_isend(self, a: list[str]) -> None:
        dst, tag, count = int(a[0]), int(a[1]), int(float(a[2]))
        req = self.comm.Isend(self.scratch(count, self.dtype(a, 3)), dst, tag)
        self.requests[(self.rank, dst, tag)].append(req)

    def do_recv(self, a: list[str]) -> None:
        src, tag, count = int(a[0]), int(a[1]), int(float(a[2]))
        self.comm.Recv(self.buf(count, self.dtype(a, 3)), src, tag)

    def do_irecv(self, a: list[str]) -> None:
        src, tag, count = int(a[0]), int(a[1]), int(float(a[2]))
        req = self.comm.Irecv(self.scratch(count, self.dtype(a, 3)), src, tag)
        self.requests[(src, self.rank, tag)].append(req)

    def _pop(self, a: list[str]) -> MPI.Request | None:
        key = (int(a[0]), int(a[1]), int(a[2]))
        reqs = self.requests.get(key)
        if not reqs:
            return None
        req = reqs.pop(0)
        if not reqs:
            del self.requests[key]
        return req

    def do_wait(self, a: list[str]) -> None:
        req = self._pop(a)
        if req is not None:
            req.Wait()

    def do_test(self, a: list[str]) -> None:
        req = self._pop(a)
        if req is not None and not req.Test():
            self.requests[(int(a[0]), int(a[1]), int(a[2]))].insert(0, req)

    def do_waitall(self, a: list[str]) -> None:
        reqs = [r for lst in self.requests.values() for r in lst]
        self.requests.clear()
        if reqs:
            MPI.Request.Waitall(reqs)

    def do_sendRecv(self, a: list[str]) -> None:  # noqa: N802 - SMPI's action name
        scount, dst, rcount, src = int(float(a[0])), int(a[1]), int(float(a[2])), int(a[3])
        sdt, rdt = self.dtype(a, 4), self.dtype(a, 5)
        stag, rtag = (int(a[6]), int(a[7])) if len(a) >= 8 else (0, 0)  # smpy writes the tags
        self.comm.Sendrecv(self.scratch(scount, sdt), dst, stag, self.scratch(rcount, rdt), src, rtag)

    def do_barrier(self, a: list[str]) -> None:
        self.comm.Barrier()

    def do_bcast(self, a: list[str]) -> None:
        count = int(float(a[0]))
        root = int(a[1]) if len(a) > 1 and a[1] != "" else 0
        self.comm.Bcast(self.buf(count, self.dtype(a, 2)), root)

    def do_reduce(self, a: list[str]) -> None:
        count, comp = int(float(a[0])), float(a[1])
        root = int(a[2]) if len(a) > 2 and a[2] != "" else 0
        dt = self.dtype(a, 3)
        recv = self.scratch(count, dt) if self.rank == root else None
        self.comm.Reduce(self.scratch(count, dt), recv, op=MPI.BXOR if _integral(dt) else MPI.SUM,
                         root=root)
        self.compute(comp)

    def do_allreduce(self, a: list[str]) -> None:
        count, comp = int(float(a[0])), float(a[1])
        dt = self.dtype(a, 2)
        self.comm.Allreduce(self.scratch(count, dt), self.scratch(count, dt),
                            op=MPI.BXOR if _integral(dt) else MPI.SUM)
        self.compute(comp)

    def do_alltoall(self, a: list[str]) -> None:
        s, r = int(float(a[0])), int(float(a[1]))
        sdt, rdt = self.dtype(a, 2), self.dtype(a, 3)
        self.comm.Alltoall(self.scratch(s, sdt, self.size), self.scratch(r, rdt, self.size))

    def do_gather(self, a: list[str]) -> None:
        s, r = int(float(a[0])), int(float(a[1]))
        root = int(a[2]) if len(a) > 2 and a[2] != "" else 0
        sdt, rdt = self.dtype(a, 3), self.dtype(a, 4)
        recv = self.scratch(r, rdt, self.size) if self.rank == root else None
        self.comm.Gather(self.scratch(s, sdt), recv, root)

    def do_allgather(self, a: list[str]) -> None:
        s, r = int(float(a[0])), int(float(a[1]))
        sdt, rdt = self.dtype(a, 2), self.dtype(a, 3)
        self.comm.Allgather(self.scratch(s, sdt), self.scratch(r, rdt, self.size))

    def do_scatter(self, a: list[str]) -> None:
        s, r = int(float(a[0])), int(float(a[1]))
        root = int(a[2]) if len(a) > 2 and a[2] != "" else 0
        sdt, rdt = self.dtype(a, 3), self.dtype(a, 4)
        send = self.scratch(s, sdt, self.size) if self.rank == root else None
        self.comm.Scatter(send, self.scratch(r, rdt), root)

    def _counts(self, a: list[str], start: int) -> list[int]:
        return [int(float(x)) for x in a[start:start + self.size]]

    def do_gatherv(self, a: list[str]) -> None:
        # gatherv <send> <recvcounts x size> <root> [<sdt> <rdt>]
        s = int(float(a[0]))
        counts = self._counts(a, 1)
        rest = a[1 + self.size:]
        root = int(rest[0]) if rest and rest[0] != "" else 0
        sdt, rdt = self.dtype(rest, 1), self.dtype(rest, 2)
        recv = None
        if self.rank == root:
            recv = [np.zeros(max(sum(counts) * rdt.Get_size(), 1), np.uint8), counts, rdt]
        self.comm.Gatherv(self.scratch(s, sdt), recv, root)

    def do_allgatherv(self, a: list[str]) -> None:
        # allgatherv <send> <recvcounts x size> [<sdt> <rdt>] [<displs x size>]; with exactly
        # the displacements (no datatypes), the default type (SMPI's parser)
        s = int(float(a[0]))
        counts = self._counts(a, 1)
        rest = a[1 + self.size:]
        if len(rest) == self.size and self.size > 2:
            sdt = rdt = self.default
        else:
            sdt, rdt = self.dtype(rest, 0), self.dtype(rest, 1)
        recv = [np.zeros(max(sum(counts) * rdt.Get_size(), 1), np.uint8), counts, rdt]
        self.comm.Allgatherv(self.scratch(s, sdt), recv)

    def do_scatterv(self, a: list[str]) -> None:
        # scatterv <sendcounts x size> <recv> <root> [<sdt> <rdt>]
        counts = self._counts(a, 0)
        rest = a[self.size:]
        r = int(float(rest[0]))
        root = int(rest[1]) if len(rest) > 1 and rest[1] != "" else 0
        sdt, rdt = self.dtype(rest, 2), self.dtype(rest, 3)
        send = None
        if self.rank == root:
            send = [np.zeros(max(sum(counts) * sdt.Get_size(), 1), np.uint8), counts, sdt]
        self.comm.Scatterv(send, self.scratch(r, rdt), root)

    def do_reducescatter(self, a: list[str]) -> None:
        # reducescatter <recvcounts x size> <comp> [<dt>]
        counts = self._counts(a, 0)
        rest = a[self.size:]
        comp = float(rest[0]) if rest else 0.0
        dt = self.dtype(rest, 1)
        self.comm.Reduce_scatter(self.scratch(sum(counts), dt), self.scratch(counts[self.rank], dt),
                                 counts, op=MPI.BXOR if _integral(dt) else MPI.SUM)
        self.compute(comp)

    def do_alltoallv(self, a: list[str]) -> None:
        # alltoallv <sendbuf size> <sendcounts x size> <recvbuf size> <recvcounts x size> [<sdt> <rdt>]
        scounts = self._counts(a, 1)
        rcounts = self._counts(a, 2 + self.size)
        rest = a[2 + 2 * self.size:]
        sdt, rdt = self.dtype(rest, 0), self.dtype(rest, 1)
        send = [np.zeros(max(sum(scounts) * sdt.Get_size(), 1), np.uint8), scounts, sdt]
        recv = [np.zeros(max(sum(rcounts) * rdt.Get_size(), 1), np.uint8), rcounts, rdt]
        self.comm.Alltoallv(send, recv)

    def do_scan(self, a: list[str]) -> None:
        count, comp = int(float(a[0])), float(a[1])
        dt = self.dtype(a, 2)
        self.comm.Scan(self.scratch(count, dt), self.scratch(count, dt),
                       op=MPI.BXOR if _integral(dt) else MPI.SUM)
        self.compute(comp)

    def do_exscan(self, a: list[str]) -> None:
        count, comp = int(float(a[0])), float(a[1])
        dt = self.dtype(a, 2)
        self.comm.Exscan(self.scratch(count, dt), self.scratch(count, dt),
                         op=MPI.BXOR if _integral(dt) else MPI.SUM)
        self.compute(comp)


def _integral(dt: MPI.Datatype) -> bool:
    """Zeros reduce to zeros whatever the op; BXOR is defined on integers and bytes, SUM on
    numbers: pick one the datatype supports."""
    return dt in (MPI.BYTE, MPI.CHAR, MPI.SIGNED_CHAR, MPI.UNSIGNED_CHAR, MPI.PACKED) or \
        dt.Get_name().startswith(("MPI_INT", "MPI_UINT", "MPI_LONG", "MPI_SHORT", "MPI_UNSIGNED"))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: replay program TRACE", file=sys.stderr)
        return 2
    comm = MPI.COMM_WORLD
    rep = Replayer(comm)
    for lineno, action, rest in actions_of(args[0], rep.rank):
        try:
            rep.run(action, rest)
        except (ValueError, IndexError) as exc:
            raise SystemExit(f"{args[0]}: rank {rep.rank}, action {lineno}: {action} "
                             f"{' '.join(rest)}: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
