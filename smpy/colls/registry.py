"""The algorithm registry: every collective algorithm, by family and SimGrid name.

An algorithm is a function registered with :func:`algorithm`::

    @algorithm("bcast", "binomial_tree", source="SimGrid bcast-binomial-tree.cpp (MPICH)")
    def binomial_tree(ctx, root, data, nbytes, elem): ...

Its docstring says what it does and what it costs (α = latency, β = time per byte, p =
ranks, n = bytes). ``commutative_only`` marks schedules that reorder operands (Open
MPI and MPICH never select them for non-commutative ops); ``requires`` is a predicate on
the communicator size (``pair`` needs a power of two...). When the op or the size does
not fit, the dispatcher runs ``fallback`` instead and says so once — SimGrid would
silently compute a wrong result or abort.

Families and the call signature of their algorithms (payloads: see :mod:`smpy.colls.core`):

==================  ==========================================================
barrier             ``fn(ctx)``
bcast               ``fn(ctx, root, data, nbytes, elem) -> bytes``
reduce              ``fn(ctx, root, data, red) -> bytes | None``
allreduce           ``fn(ctx, data, red) -> bytes``
reduce_scatter      ``fn(ctx, data, counts, red) -> bytes`` (``counts`` in elements)
scan, exscan        ``fn(ctx, data, red) -> bytes | None``
gather              ``fn(ctx, root, block) -> list | None``
scatter             ``fn(ctx, root, blocks) -> block``
allgather(v)        ``fn(ctx, block) -> list``
alltoall(v,w)       ``fn(ctx, blocks) -> list``
gatherv, scatterv   as gather, scatter
==================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smpy.support.internal import SmpyInternalError

FAMILIES = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier",
            "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter", "scan", "scatter",
            "scatterv")


@dataclass(frozen=True)
class Algorithm:
    family: str
    name: str
    fn: Callable[..., Any]
    source: str
    doc: str
    commutative_only: bool = False
    requires: Callable[[int], bool] | None = None
    requirement: str = ""
    fallback: str = ""
    #: the algorithm works in the vector it is given (a writable buffer it owns) and returns
    #: it when it holds the result: a blocking call hands it the receive buffer itself
    in_place: bool = False
    #: an ``in_place`` algorithm that takes ``src=``: the buffer it is given is not filled
    #: yet and ``src`` (as long) holds the vector, read at most until it returns
    deferred: bool = False

    def summary(self) -> str:
        """The first sentence of the docstring."""
        para = " ".join(self.doc.strip().split("\n\n")[0].split()) if self.doc else ""
        cut = para.find(". ")
        return para if cut < 0 else para[:cut + 1]

    def cost(self) -> str:
        """The docstring's cost formula (the text from "Cost" or "≈" on), if any."""
        para = " ".join(self.doc.split())
        for key in ("Cost ", "≈ "):
            i = para.find(key)
            if i >= 0:
                return para[i:]
        return ""


ALGORITHMS: dict[str, dict[str, Algorithm]] = {f: {} for f in FAMILIES}


def algorithm(family: str, name: str, *, source: str, commutative_only: bool = False,
              requires: Callable[[int], bool] | None = None, requirement: str = "",
              fallback: str = "", in_place: bool = False, deferred: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as algorithm ``name`` of ``family``."""
    if family not in ALGORITHMS:
        raise SmpyInternalError(f"unknown collective family {family!r}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in ALGORITHMS[family]:
            raise SmpyInternalError(f"{family} algorithm {name!r} registered twice")
        ALGORITHMS[family][name] = Algorithm(family, name, fn, source, fn.__doc__ or "", commutative_only,
                                             requires, requirement, fallback, in_place, deferred)
        return fn

    return deco


def get(family: str, name: str) -> Algorithm:
    algo = ALGORITHMS[family].get(name)
    if algo is None:
        known = ", ".join(sorted(ALGORITHMS[family]))
        raise KeyError(f"collective {family!r} has no algorithm {name!r}; known: {known}")
    return algo
