"""How much memory a run will need, estimated before anything is built, and the check that
refuses a run that cannot fit.

Model (figures measured on CPython 3.12, x86-64, ``benchmarks/fuzz_platforms.py --memory``)::

    need = BASE + RANK · np + HOST · hosts + LINK · links

with ``BASE`` = 100 MB (interpreter, numpy, smpy), ``RANK`` = 12 kB (a rank's greenlet, its
``__main__`` namespace and MPI state: the slope of the peak resident size between ``-np 1000``
and ``-np 4000`` barriers measured 13 to 24 kB), ``HOST`` = 1.5 kB and ``LINK`` = 0.1 kB (a
cluster of 20 000 hosts peaks at 1.7 kB per host, its two links included, through validation
and building). It is a floor: the program's own data come on top, so a refusal is right.

``available`` is ``MemAvailable`` of ``/proc/meminfo``, lowered to the address-space limit
(``RLIMIT_AS``) when one is set. A run whose floor exceeds it is refused with the estimate
unless :func:`insist` was called (``--cfg=smpy/force-memory:yes``). Nothing here reads the
environment.
"""

from __future__ import annotations

import resource

from smpy.support.config import declare, parse_bool

__all__ = ["MemoryLimitError", "available_bytes", "estimate_bytes", "check_fits", "insist",
           "insisting", "format_bytes"]

BASE_BYTES = 100e6
RANK_BYTES = 12e3
HOST_BYTES = 1.5e3
LINK_BYTES = 0.1e3

_INSIST = False

FORCE_MEMORY = declare("smpy/force-memory", False, "Run even when the estimated memory of the run "
                       "(ranks, hosts, links) exceeds the machine's available memory",
                       parse=parse_bool)


class MemoryLimitError(ValueError):
    """A run (or a platform) that would need more memory than the machine has."""


def insist(flag: bool = True) -> None:
    """Skip the check (``--cfg=smpy/force-memory:yes``): the user knows better."""
    global _INSIST
    _INSIST = bool(flag)


def insisting() -> bool:
    return _INSIST


def available_bytes() -> float | None:
    """Memory this process can still use: MemAvailable, capped by RLIMIT_AS; None if unknown."""
    found: float | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found = float(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        found = None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY and soft > 0:
        found = float(soft) if found is None else min(found, float(soft))
    return found


def estimate_bytes(ranks: int = 0, hosts: int = 0, links: int = 0) -> float:
    """The floor of the memory a run of ``ranks`` on ``hosts`` and ``links`` needs (bytes)."""
    return BASE_BYTES + RANK_BYTES * ranks + HOST_BYTES * hosts + LINK_BYTES * links


def format_bytes(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def check_fits(what: str, ranks: int = 0, hosts: int = 0, links: int = 0) -> None:
    """Raise :class:`MemoryLimitError` (``what: needs at least X, Y available ...``) when the
    estimate exceeds the available memory, unless :func:`insist` was called."""
    if _INSIST:
        return
    need = estimate_bytes(ranks, hosts, links)
    have = available_bytes()
    if have is None or need <= have:
        return
    parts = [f"{n} {name}" for n, name in ((ranks, "ranks"), (hosts, "hosts"), (links, "links"))
             if n]
    raise MemoryLimitError(
        f"{what}: {', '.join(parts)} need at least {format_bytes(need)} of memory, "
        f"{format_bytes(have)} available; refused (--cfg=smpy/force-memory:yes runs it anyway)")
