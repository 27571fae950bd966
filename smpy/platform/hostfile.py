"""Hostfiles and the placement of ranks on hosts, as ``smpirun`` does it.

Hostfile format (``smpirun -hostfile``, MPICH ``-f``, Open MPI ``--hostfile``):

* one host name per line; ``host:n`` stands for ``n`` lines ``host`` (smpirun and MPICH);
  ``host slots=n`` is accepted too (Open MPI);
* ``#`` starts a comment; blank lines are ignored; surrounding spaces are ignored.

Placement: with the host list ``H`` (the hostfile entries, or all platform hosts in platform
order when there is no hostfile), rank ``i`` runs on ``H[i mod len(H)]`` — round-robin, so a
hostfile shorter than ``-np`` wraps around, like smpirun.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from smpy.platform.errors import PlatformError
from smpy.platform.limits import MAX_SLOTS

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.platform.loader import Platform

__all__ = ["parse_hostfile", "parse_hostfile_text", "place_ranks"]

_LINE = re.compile(r"(?P<host>[^\s:#]+)\s*(?::\s*(?P<count>\S+)|\s+slots\s*=\s*(?P<slots>\S+))?")


def parse_hostfile(path: str | os.PathLike[str]) -> list[str]:
    """Host names of a hostfile, one per rank slot, ``host:n`` expanded; errors name the line."""
    source = os.fspath(path)
    try:
        raw = Path(source).read_bytes()
    except OSError as err:
        raise PlatformError(f"{source}: cannot read the hostfile: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise PlatformError(f"{source}: line {line}: not a text hostfile (byte "
                            f"{raw[err.start]:#04x} is not UTF-8)") from None
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise PlatformError(f"{source}: line {line}: not a text hostfile (a NUL byte)")
    return parse_hostfile_text(text, source)


def parse_hostfile_text(text: str, source: str = "<hostfile>") -> list[str]:
    """:func:`parse_hostfile` on the content of a file."""
    hosts: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise PlatformError(f"{source}: line {lineno}: expected 'host' or 'host:count', "
                                f"found {line!r}")
        count_text = match["count"] or match["slots"]
        count = 1
        if count_text is not None:
            if not (count_text.isascii() and count_text.isdigit()) or int(count_text) < 1:
                raise PlatformError(f"{source}: line {lineno}: expected a count of 1 or more "
                                    f"after the host name, found {count_text!r}")
            count = int(count_text)
        if len(hosts) + count > MAX_SLOTS:
            raise PlatformError(f"{source}: line {lineno}: the hostfile names more than "
                                f"{MAX_SLOTS} slots (found {_short(count_text)} on this line)")
        hosts.extend([match["host"]] * count)
    if not hosts:
        raise PlatformError(f"{source}: the hostfile names no host")
    return hosts


def place_ranks(platform: Platform, np: int, hostfile_hosts: Sequence[str] | None = None, *,
                source: str = "hostfile") -> list[Host]:
    """Host of each rank: ``hosts[i % len(hosts)]`` for rank ``i``, as smpirun places them.

    ``hostfile_hosts`` (from :func:`parse_hostfile`) are checked against the platform; without
    them the platform hosts are used in order. ``source`` names the hostfile in errors.
    """
    if isinstance(np, bool) or not isinstance(np, int) or np < 1:
        raise PlatformError(f"-np: expected a number of processes of 1 or more, found {np!r}")
    if hostfile_hosts is None:
        hosts = list(platform.hosts)
    else:
        if not hostfile_hosts:
            raise PlatformError(f"{source}: the hostfile names no host")
        hosts = []
        for i, name in enumerate(hostfile_hosts):
            if not platform.has_host(name):
                raise PlatformError(f"{source}: entry {i + 1}: host {name!r} is not in platform "
                                    f"{platform.name!r} ({platform.source})")
            hosts.append(platform.host(name))
    if not hosts:
        raise PlatformError(f"{platform.source}: the platform has no host")
    return [hosts[rank % len(hosts)] for rank in range(np)]


def _short(text: str | None) -> str:
    text = str(text)
    return text if len(text) <= 20 else text[:17] + "..."
