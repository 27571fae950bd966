"""Recording time-independent (TI) traces in SimGrid SMPI's format (``--trace-ti FILE``).

``FILE`` is an index listing one file per rank (``FILE_files/rank-<r>.txt``), as
``smpirun -trace-ti`` writes; each line is ``<rank> <action> <args>`` with sizes as counts of
``MPI_BYTE`` (datatype id 6) and computation in flops, so ``smpy replay`` and
``smpirun -replay`` can both replay it:

* ``init`` / ``finalize``; ``compute <flops>`` for each simulated burst or injected
  computation; ``sleep <s>``;
* point-to-point on the application's channel: ``send|isend <dst> <tag> <bytes> 6``,
  ``recv|irecv <src> <tag> <bytes> 6`` (the source and size of a receive are those of the
  message it matched; the line keeps the place of the call), ``wait <src> <dst> <tag>`` for
  the waits of non-blocking requests, ``test <src> <dst> <tag>`` for each MPI_Test of one
  (a request a test completed has no ``wait``), ``waitall <count>`` for an MPI_Waitall that
  completes every outstanding non-blocking request of the rank (SMPI's replay waits for all
  of them; otherwise its requests get one ``wait`` each, as do those of Waitany/Waitsome and
  the Test{all,any,some} polls, which SMPI writes as actions its replay does not know);
  ranks are translated to ``MPI_COMM_WORLD`` ranks;
* blocking collectives: ``barrier``, ``bcast <bytes> <root> 6``, ``reduce <bytes> 0 <root> 6``,
  ``allreduce <bytes> 0 6``, ``alltoall``, ``gather``, ``scatter``, ``allgather`` (send and
  receive bytes per rank), ``reducescatter <bytes x size> 0 6``, ``scan``/``exscan``, and the
  v-collectives with per-rank sizes: ``gatherv <send> <recv x size> <root> 6 6`` and
  ``scatterv <send x size> <recv> <root> 6 6`` (zeros off the root),
  ``allgatherv <send> <recv x size> 6 6``,
  ``alltoallv <send total> <send x size> <recv total> <recv x size> 6 6``.

Like SMPI's, the format has no communicators: operations on other communicators are
recorded with world ranks and replayed on ``MPI_COMM_WORLD``; non-blocking collectives are
not recorded. Lines are buffered per rank and written in order once every earlier receive of
that rank has matched; everything is flushed at the end of the run.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

#: characters a path keeps in a trace line (the others percent-encoded: no spaces)
_SAFE = "/._-~+,=:@"


def path_arg(path: str) -> str:
    """A path as one argument of a trace line (``urllib.parse.unquote`` reads it back)."""
    return quote(path, safe=_SAFE)

BYTE = 6


class _Pending:
    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text: str | None = None


class TIRecorder:
    def __init__(self, path: str, ranks: int) -> None:
        self.path = path
        base = os.path.basename(path)
        self.dir = f"{path}_files"
        os.makedirs(self.dir, exist_ok=True)
        self.files = [os.path.join(self.dir, f"rank-{r}.txt") for r in range(ranks)]
        with open(path, "w", encoding="utf-8") as fh:
            for f in self.files:
                fh.write(os.path.join(f"{base}_files", os.path.basename(f)) + "\n")
        self._fh: list[Any] = [None] * ranks
        #: non-blocking requests recorded per rank whose wait or test is not recorded yet
        self._open = [0] * ranks
        self._queue: list[list[Any]] = [[] for _ in range(ranks)]

    # -- output ------------------------------------------------------------------------------
    def _emit(self, rank: int, item: Any) -> None:
        q = self._queue[rank]
        q.append(item)
        self._drain(rank)

    def _drain(self, rank: int) -> None:
        q = self._queue[rank]
        n = 0
        lines = []
        for item in q:
            text = item if isinstance(item, str) else item.text
            if text is None:
                break
            lines.append(text)
            n += 1
        if n:
            del q[:n]
            fh = self._fh[rank]
            if fh is None:
                fh = self._fh[rank] = open(self.files[rank], "w", encoding="utf-8")  # noqa: SIM115
            fh.write("".join(f"{rank} {t}\n" for t in lines))

    def close(self) -> None:
        for r in range(len(self._queue)):
            for item in self._queue[r]:  # receives that never matched: keep their place
                if not isinstance(item, str) and item.text is None:
                    item.text = "irecv -1 -1 0 6"
            self._drain(r)
            if self._fh[r] is None:
                self._fh[r] = open(self.files[r], "w", encoding="utf-8")  # noqa: SIM115
            self._fh[r].close()

    # -- actions -----------------------------------------------------------------------------
    def line(self, rank: int, text: str) -> None:
        self._emit(rank, text)

    def file(self, rank: int, action: str, path: str, *args: Any) -> None:
        """A file operation (smpy's own actions, docs/io.md): ``action path args...``."""
        self._emit(rank, " ".join([action, path_arg(path), *(str(a) for a in args)]))

    def compute(self, rank: int, flops: float) -> None:
        if flops > 0.0:
            self._emit(rank, f"compute {flops!r}")

    def send(self, rank: int, dest_world: int, tag: int, nbytes: int, blocking: bool) -> None:
        if not blocking:
            self._open[rank] += 1
        self._emit(rank, f"{'send' if blocking else 'isend'} {dest_world} {tag} {int(nbytes)} {BYTE}")

    def recv_posted(self, rank: int, blocking: bool = True) -> _Pending:
        if not blocking:
            self._open[rank] += 1
        p = _Pending()
        self._emit(rank, p)
        return p

    def recv_matched(self, rank: int, pending: _Pending, blocking: bool, src_world: int, tag: int,
                     nbytes: int) -> None:
        pending.text = f"{'recv' if blocking else 'irecv'} {src_world} {tag} {int(nbytes)} {BYTE}"
        self._drain(rank)

    def wait(self, rank: int, src_world: int, dst_world: int, tag: int) -> None:
        self._open[rank] -= 1
        self._emit(rank, f"wait {src_world} {dst_world} {tag}")

    def test(self, rank: int, src_world: int, dst_world: int, tag: int, done: bool) -> None:
        if done:
            self._open[rank] -= 1
        self._emit(rank, f"test {src_world} {dst_world} {tag}")

    def waitall(self, rank: int, count: int, recorded: int) -> bool:
        """An MPI_Waitall of ``count`` requests, ``recorded`` of them recorded non-blocking
        operations: written as ``waitall <count>`` (True) when they are all the rank's
        outstanding ones, as SMPI's replay waits for all of them."""
        if recorded != self._open[rank]:
            return False
        self._open[rank] = 0
        self._emit(rank, f"waitall {count}")
        return True

    def collective(self, rank: int, group: list[int], args: tuple) -> None:
        """A blocking collective; roots are translated to world ranks (``group``)."""
        name = args[0]
        if name == "barrier":
            text = "barrier"
        elif name == "bcast":
            text = f"bcast {args[1]} {group[args[2]]} {BYTE}"
        elif name == "reduce":
            text = f"reduce {args[1]} 0 {group[args[2]]} {BYTE}"
        elif name in ("allreduce", "scan", "exscan"):
            text = f"{name} {args[1]} 0 {BYTE}"
        elif name == "reducescatter":
            text = f"reducescatter {_join(args[1])} 0 {BYTE}"
        elif name == "gatherv":  # send, receive sizes per rank (zeros off the root), root
            text = f"gatherv {args[1]} {_join(args[2])} {group[args[3]]} {BYTE} {BYTE}"
        elif name == "scatterv":  # send sizes per rank (zeros off the root), receive, root
            text = f"scatterv {_join(args[1])} {args[2]} {group[args[3]]} {BYTE} {BYTE}"
        elif name == "allgatherv":
            text = f"allgatherv {args[1]} {_join(args[2])} {BYTE} {BYTE}"
        elif name == "alltoallv":  # total and per-rank sizes sent, then received
            text = (f"alltoallv {sum(args[1])} {_join(args[1])} {sum(args[2])} {_join(args[2])} "
                    f"{BYTE} {BYTE}")
        elif name in ("gather", "scatter"):
            text = f"{name} {args[1]} {args[2]} {group[args[3]]} {BYTE} {BYTE}"
        else:  # allgather, alltoall
            text = f"{name} {args[1]} {args[2]} {BYTE} {BYTE}"
        self._emit(rank, text)


def _join(sizes: list[int]) -> str:
    return " ".join(str(int(c)) for c in sizes)
