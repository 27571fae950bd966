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
import re
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
    """The actions of ``rank``: ``(line number, action, arguments)``."""
    if not is_index(path):
        yield from _one_file_actions(path, rank)
        return
    want = str(rank)
    with open(rank_file(path, rank), encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            words = line.split()
            if words and words[0] == EXTENSION:  # smpy's own action, a comment to SMPI
                words = words[1:]
            if len(words) < 2 or words[0] != want:
                continue
            yield n, words[1], words[2:]


#: characters of a one-file trace read at a time by each rank
_CHUNK = 1 << 16


def _one_file_actions(path: str, rank: int) -> Iterator[tuple[int, str, list[str]]]:
    """The actions of ``rank`` in a trace holding every rank's lines. Every rank reads the
    whole file, so the lines that may be the rank's are found by a regular expression over
    a chunk of lines, in C (a superset: the lines that start with the rank's number and a
    blank, with ``#smpy`` or with a blank), and only those are split; a rank keeps its own
    actions of one chunk at a time."""
    want = str(rank)
    # a newline before each line start: the search skips from newline to newline
    maybe = re.compile(rf"\n(?:[^\S\n]|{re.escape(EXTENSION)}|{want}[^\S\n])")
    n = 1  # the number of the line starting at ``pos``
    with open(path, encoding="utf-8") as fh:
        while chunk := fh.read(_CHUNK):
            if not chunk.endswith("\n"):
                chunk += fh.readline()
            text = "\n" + chunk
            mine = []
            pos = 1
            for m in maybe.finditer(text):
                start = m.start() + 1
                n += text.count("\n", pos, start)
                pos = start
                end = text.find("\n", start)
                words = text[start:end if end >= 0 else len(text)].split()
                if words and words[0] == EXTENSION:  # smpy's own action, a comment to SMPI
                    words = words[1:]
                if len(words) >= 2 and words[0] == want:
                    mine.append((n, words[1], words[2:]))
            n += text.count("\n", pos)
            del chunk, text
            yield from mine


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
