"""Reading time-independent traces (SimGrid SMPI's format).

A TI trace is a sequence of actions per rank, one per line: ``<rank> <action> <args...>``
(``0 send 1 7 10 0``, ``0 compute 1e+06``, ``0 allreduce 1000 0 0``). It comes either as

* an *index* file (what ``smpirun -trace-ti`` and ``smpy run --trace-ti`` write): one path
  per line, the file of rank ``i`` on line ``i``; relative paths are tried from the current
  directory, then from the index file's directory;
* or a single file holding the lines of every rank (SimGrid's ``examples/smpi/replay`` and
  its ``ti-one-file`` option): each rank keeps the lines that start with its number.

Blank lines and lines starting with ``#`` are ignored, except smpy's own actions, which
SMPI's replay reads as comments: ``#smpy <rank> wtime`` (an MPI_Wtime of the recorded run). Reading is lazy: a rank holds one line
at a time, whatever the length of its trace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

#: the prefix of smpy's own actions (:mod:`smpy.trace.ti`)
EXTENSION = "#smpy"


def _first_line(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            words = line.split()
            if words and not words[0].startswith("#"):
                return words
    return []


def is_index(path: str) -> bool:
    """True when ``path`` lists per-rank files rather than holding actions."""
    words = _first_line(path)
    return not (len(words) >= 2 and words[0].lstrip("-").isdigit())


def rank_files(index: str) -> list[str]:
    base = os.path.dirname(os.path.abspath(index))
    out = []
    with open(index, encoding="utf-8") as fh:
        for line in fh:
            name = line.strip()
            if not name or name.startswith("#"):
                continue
            if not os.path.isabs(name) and not os.path.exists(name):
                name = os.path.join(base, name)
            out.append(name)
    return out


def rank_file(index: str, rank: int) -> str:
    """The file of ``rank`` in the index ``index`` (:func:`rank_files`, resolving that name only)."""
    base = os.path.dirname(os.path.abspath(index))
    i = 0
    with open(index, encoding="utf-8") as fh:
        for line in fh:
            name = line.strip()
            if not name or name.startswith("#"):
                continue
            if i == rank:
                if not os.path.isabs(name) and not os.path.exists(name):
                    name = os.path.join(base, name)
                return name
            i += 1
    raise ValueError(f"{index}: lists {i} rank files, no file for rank {rank}")


def actions_of(path: str, rank: int) -> Iterator[tuple[int, str, list[str]]]:
    """The actions of ``rank``: ``(line number, action, arguments)``.

    In a one-file trace, every rank reads every line: a line that cannot be the rank's (it
    starts with another word than the rank's number, ``#smpy`` or blanks) is skipped before
    it is split."""
    source = rank_file(path, rank) if is_index(path) else path
    want = str(rank)
    k = len(want)
    with open(source, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.startswith(want):
                if not line[k:k + 1].isspace():  # "12 ..." is not rank 1's
                    continue
            elif not (line[:1].isspace() or line.startswith(EXTENSION)):
                continue
            words = line.split()
            if words and words[0] == EXTENSION:  # smpy's own action, a comment to SMPI
                words = words[1:]
            if len(words) < 2 or words[0] != want:
                continue
            yield n, words[1], words[2:]


def ranks_in(path: str) -> int:
    """How many ranks the trace describes."""
    if is_index(path):
        return len(rank_files(path))
    ranks = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            words = line.split()
            if len(words) >= 2 and words[0].isdigit():
                ranks.add(int(words[0]))
    return max(ranks) + 1 if ranks else 0
