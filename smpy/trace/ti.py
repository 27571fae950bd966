"""Recording time-independent (TI) traces in SimGrid SMPI's format (``--trace-ti FILE``).

``FILE`` is an index listing one file per rank (``FILE_files/rank-<r>.txt``), as
``smpirun -trace-ti`` writes; each line is ``<rank> <action> <args>`` with point-to-point sizes
as counts of ``MPI_BYTE`` (datatype id 6), collective sizes as counts of the call's datatype
when it is a predefined one (SimGrid's ids, :data:`DATATYPES`; else bytes), and computation in
flops, so ``smpy replay`` and ``smpirun -replay`` can both replay it. One MPI call is one
action where the format allows it, so that a replay counts the calls the run counted:

* ``init`` / ``finalize``; ``compute <flops>`` for each simulated burst or injected
  computation; ``sleep <s>``;
* ``#smpy <rank> wtime`` for each MPI_Wtime (smpy's own action: a comment to SMPI's replay);
* ``sendRecv <send bytes> <dst> <recv bytes> <src> 6 6 <send tag> <recv tag>`` for an
  MPI_Sendrecv (SMPI's line, which has no tags: its replay ignores the last two), ``send`` or
  ``recv`` when one side is MPI_PROC_NULL, nothing when both are;
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

#: SimGrid's datatype ids (smpi_datatype.cpp)
DATATYPES = {
    0: "DOUBLE", 1: "INT", 2: "CHAR", 3: "SHORT", 4: "LONG", 5: "FLOAT", 6: "BYTE",
    7: "LONG_LONG", 8: "SIGNED_CHAR", 9: "UNSIGNED_CHAR", 10: "UNSIGNED_SHORT", 11: "UNSIGNED",
    12: "UNSIGNED_LONG", 13: "UNSIGNED_LONG_LONG", 14: "LONG_DOUBLE", 15: "WCHAR", 16: "C_BOOL",
    17: "INT8_T", 18: "INT16_T", 19: "INT32_T", 20: "INT64_T", 21: "UINT8_T", 22: "UINT16_T",
    23: "UINT32_T", 24: "UINT64_T", 25: "C_FLOAT_COMPLEX", 26: "C_DOUBLE_COMPLEX",
    27: "C_LONG_DOUBLE_COMPLEX", 28: "AINT", 29: "OFFSET", 30: "FLOAT_INT", 31: "LONG_INT",
    32: "DOUBLE_INT", 33: "SHORT_INT", 34: "2INT", 35: "2FLOAT", 36: "2DOUBLE", 37: "2LONG",
    38: "REAL", 39: "REAL4", 40: "REAL8", 41: "REAL16", 42: "COMPLEX8", 43: "COMPLEX16",
    44: "COMPLEX32", 45: "INTEGER1", 46: "INTEGER2", 47: "INTEGER4", 48: "INTEGER8",
    49: "INTEGER16", 50: "LONG_DOUBLE_INT", 57: "PACKED", 59: "COUNT",
}
#: datatype name (``MPI_DOUBLE``) -> SimGrid's id
_IDS = {f"MPI_{name}": code for code, name in DATATYPES.items()}


class _Pending:
    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text: str | None = None


class _SendRecv(_Pending):
    """One MPI_Sendrecv[_replace]: its send and receive halves, written as one line once the
    call has ended and its receive has matched."""

    __slots__ = ("send", "recv", "matched", "ended")

    def __init__(self) -> None:
        super().__init__()
        self.send: tuple[int, int, int] | None = None  # (destination, tag, bytes)
        self.recv: tuple[int, int, int] | None = None  # (source, tag, bytes) once matched
        self.matched = True  # no receive half posted (yet)
        self.ended = False

    def settle(self) -> None:
        if not (self.ended and self.matched):
            return
        s, r = self.send, self.recv
        if s is not None and r is not None:  # SMPI's line, then the tags (SMPI ignores them)
            self.text = f"sendRecv {s[2]} {s[0]} {r[2]} {r[0]} {BYTE} {BYTE} {s[1]} {r[1]}"
        elif s is not None:  # the other half was MPI_PROC_NULL
            self.text = f"send {s[0]} {s[1]} {s[2]} {BYTE}"
        elif r is not None:
            self.text = f"recv {r[0]} {r[1]} {r[2]} {BYTE}"
        else:  # both halves MPI_PROC_NULL: no traffic, nothing to replay
            self.text = ""


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
        #: the MPI_Sendrecv each rank is in, if any
        self._sendrecv: list[_SendRecv | None] = [None] * ranks

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
            if text:
                lines.append(text if text[0] == "#" else f"{rank} {text}")
            n += 1
        if n:
            del q[:n]
            fh = self._fh[rank]
            if fh is None:
                fh = self._fh[rank] = open(self.files[rank], "w", encoding="utf-8")  # noqa: SIM115
            if lines:
                fh.write("".join(f"{t}\n" for t in lines))

    def close(self) -> None:
        for r in range(len(self._queue)):
            for item in self._queue[r]:  # receives that never matched: keep their place
                if isinstance(item, _SendRecv) and item.text is None:
                    item.ended = item.matched = True
                    item.settle()
                elif not isinstance(item, str) and item.text is None:
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

    def wtime(self, rank: int) -> None:
        """An MPI_Wtime: an smpy extension line (``#smpy <rank> wtime``), a comment to SMPI's
        replay, so that smpy's replay reads the clock (and pays ``smpi/wtime``) as the run did."""
        self._emit(rank, f"#smpy {rank} wtime")

    def begin_sendrecv(self, rank: int) -> None:
        """The point-to-point actions until :meth:`end_sendrecv` are one MPI_Sendrecv."""
        item = self._sendrecv[rank] = _SendRecv()
        self._emit(rank, item)

    def end_sendrecv(self, rank: int) -> None:
        item = self._sendrecv[rank]
        self._sendrecv[rank] = None
        if item is not None:
            item.ended = True
            item.settle()
            self._drain(rank)

    def send(self, rank: int, dest_world: int, tag: int, nbytes: int, blocking: bool) -> None:
        sr = self._sendrecv[rank]
        if sr is not None:
            sr.send = (dest_world, tag, int(nbytes))
            return
        if not blocking:
            self._open[rank] += 1
        self._emit(rank, f"{'send' if blocking else 'isend'} {dest_world} {tag} {int(nbytes)} {BYTE}")

    def recv_posted(self, rank: int, blocking: bool = True) -> _Pending:
        sr = self._sendrecv[rank]
        if sr is not None:
            sr.matched = False
            return sr
        if not blocking:
            self._open[rank] += 1
        p = _Pending()
        self._emit(rank, p)
        return p

    def recv_matched(self, rank: int, pending: _Pending, blocking: bool, src_world: int, tag: int,
                     nbytes: int) -> None:
        if isinstance(pending, _SendRecv):
            pending.recv = (src_world, tag, int(nbytes))
            pending.matched = True
            pending.settle()
            self._drain(rank)
            return
        pending.text = f"{'recv' if blocking else 'irecv'} {src_world} {tag} {int(nbytes)} {BYTE}"
        self._drain(rank)

    def wait(self, rank: int, src_world: int, dst_world: int, tag: int) -> None:
        if self._sendrecv[rank] is not None:
            return
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
        """A blocking collective: ``(name, sizes in bytes..., [root], datatypes...)`` (see
        :func:`_collective_line`); roots are translated to world ranks (``group``)."""
        self._emit(rank, _collective_line(group, args))


def _in(dt: Any, *sizes: Any) -> tuple[list, int]:
    """Byte sizes as counts of ``dt`` and its SimGrid id, when ``dt`` is a predefined type
    that divides them all (so that a replay passes the counts and type the call passed,
    which the collective selectors look at); else bytes of ``MPI_BYTE``."""
    code = _IDS.get(getattr(dt, "name", None) or "") if dt is not None else None
    flat = [x for s in sizes for x in (s if isinstance(s, list) else [s])]
    if code is None or dt.size <= 0 or any(int(x) % dt.size for x in flat):
        return list(sizes), BYTE
    per = dt.size
    return [[int(x) // per for x in s] if isinstance(s, list) else int(s) // per for s in sizes], code


def _collective_line(group: list[int], args: tuple) -> str:
    name = args[0]
    if name == "barrier":
        return "barrier"
    if name in ("bcast", "reduce"):  # name, bytes, root, datatype
        (n,), code = _in(args[3], args[1])
        mid = " 0" if name == "reduce" else ""
        return f"{name} {n}{mid} {group[args[2]]} {code}"
    if name in ("allreduce", "scan", "exscan"):  # name, bytes, datatype
        (n,), code = _in(args[2], args[1])
        return f"{name} {n} 0 {code}"
    if name == "reducescatter":  # name, bytes per rank, datatype
        (sizes,), code = _in(args[2], args[1])
        return f"reducescatter {_join(sizes)} 0 {code}"
    (s,), sc = _in(args[-2], args[1])
    (r,), rc = _in(args[-1], args[2])
    if name == "gatherv":  # send, receive sizes per rank (zeros off the root), root
        return f"gatherv {s} {_join(r)} {group[args[3]]} {sc} {rc}"
    if name == "scatterv":  # send sizes per rank (zeros off the root), receive, root
        return f"scatterv {_join(s)} {r} {group[args[3]]} {sc} {rc}"
    if name == "allgatherv":
        return f"allgatherv {s} {_join(r)} {sc} {rc}"
    if name == "alltoallv":  # total and per-rank sizes sent, then received
        return f"alltoallv {sum(s)} {_join(s)} {sum(r)} {_join(r)} {sc} {rc}"
    if name in ("gather", "scatter"):
        return f"{name} {s} {r} {group[args[3]]} {sc} {rc}"
    return f"{name} {s} {r} {sc} {rc}"  # allgather, alltoall


def _join(sizes: list[int]) -> str:
    return " ".join(str(int(c)) for c in sizes)
