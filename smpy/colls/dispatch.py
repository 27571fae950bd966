"""Which algorithm runs a collective call, and running it.

Settings (declared here, listed by ``smpyrun --help-cfg``):

* ``smpi/coll-selector`` — ``ompi`` (default), ``mpich``, ``mvapich2``, ``impi`` or ``default`` (SimGrid's naive
  one): the decision tables of :mod:`smpy.colls.selectors`;
* ``smpi/<collective>`` — an algorithm name (or a selector name) for one collective,
  overriding the selector, as in SimGrid (``--cfg=smpi/bcast:binomial_tree``).

A :class:`Selection` holds them for one world. ``run(family, ctx, *args)`` resolves the
name (override, else selector; a selector may answer with another selector, as SimGrid's
``default`` does for alltoall), then substitutes the algorithm's declared ``fallback``
when the op does not commute and the algorithm needs it to, or when the communicator
size does not fit (``pair`` needs a power of two...), and calls it. Algorithms call
nested collectives through ``ctx.sel`` too, so ``redbcast`` runs the *selected* reduce
and bcast, like SimGrid's ``colls::reduce`` inside an algorithm.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from smpy.colls import (  # noqa: F401 - importing registers the algorithms
    allgather,
    allreduce,
    alltoall,
    arrival,
    barrier,
    bcast,
    gather,
    mvapich2,
    reduce,
    reduce_scatter,
    scan,
    scatter,
    simgrid_misc,
    simgrid_smp,
)
from smpy.colls.core import Reduction, wire
from smpy.colls.registry import ALGORITHMS, FAMILIES, Algorithm, get
from smpy.colls.selectors import SELECTORS, Query
from smpy.colls.smp import is_smp_comm
from smpy.support.config import Config, declare
from smpy.support.internal import SmpyInternalError

if TYPE_CHECKING:
    from smpy.colls.core import Ctx
    from smpy.runtime.world import World

log = logging.getLogger("smpy.colls")


#: SimGrid selectors smpy does not reproduce
NOT_YET = {"automatic": "SimGrid's benchmarking selector"}


def _selector(text: str) -> str:
    text = str(text).strip()
    if text in NOT_YET:
        raise ValueError(f"the {NOT_YET[text]} selector is not implemented in smpy yet; "
                         f"use one of {', '.join(sorted(SELECTORS))}")
    if text not in SELECTORS:
        raise ValueError(f"unknown selector (known: {', '.join(sorted(SELECTORS))})")
    return text


def _algorithm_parser(family: str):
    def parse(text: str) -> str:
        text = str(text).strip()
        if text in NOT_YET:
            return _selector(text)
        if text and text not in SELECTORS and text not in ALGORITHMS[family]:
            known = ", ".join(sorted(ALGORITHMS[family]) + sorted(SELECTORS))
            raise ValueError(f"collective {family!r} has no algorithm {text!r} (known: {known})")
        return text
    return parse


SELECTOR = declare("smpi/coll-selector", "ompi",
                   "Decision logic for every collective: ompi (Open MPI 4.1), mpich (MPICH 3.3), "
                   "mvapich2 (MVAPICH2 1.9), impi (Intel MPI 4.1), default (SimGrid's naive one); "
                   "see smpyrun --help-coll", parse=_selector)
OVERRIDES = {f: declare(f"smpi/{f}", "", f"Algorithm (or selector) for MPI_{f.capitalize()}, overriding "
                                         f"smpi/coll-selector; see smpyrun --help-coll", parse=_algorithm_parser(f))
             for f in FAMILIES}

_REDUCTIONS = {"reduce": 2, "allreduce": 1, "reduce_scatter": 2, "scan": 1, "exscan": 1}


def query(family: str, ctx: Ctx, args: tuple) -> Query:
    """The decision inputs SimGrid's selectors see, from an algorithm call's arguments."""
    size = ctx.size
    smp = is_smp_comm(ctx.comm)
    if family == "bcast":
        _root, _data, nbytes, elem = args
        return Query(size, nbytes, nbytes // elem, True, smp_comm=smp)
    if family in ("reduce", "allreduce", "scan", "exscan"):
        data, red = args[-2], args[-1]
        return Query(size, len(data), len(data) // red.elem, red.commutative, smp_comm=smp)
    if family == "reduce_scatter":
        data, counts, red = args
        return Query(size, len(data), len(data) // red.elem, red.commutative, list(counts), smp_comm=smp)
    if family in ("allgather", "allgatherv"):
        block, sizes, elem = args
        n = sum(sizes) if family == "allgatherv" else wire(block)
        return Query(size, n, counts=[s // elem for s in sizes], smp_comm=smp)
    if family in ("gather", "gatherv"):
        return Query(size, wire(args[1]), smp_comm=smp)
    if family in ("alltoall", "alltoallv", "alltoallw"):
        blocks = args[0]
        return Query(size, wire(blocks[0]) if blocks else 0, smp_comm=smp)
    return Query(size, 0, smp_comm=smp)


class Selection:
    """The collective settings of one world."""

    def __init__(self, config: Config) -> None:
        self.selector = config.get(SELECTOR)
        self.override = {f: config.get(flag) for f, flag in OVERRIDES.items()}
        self._warned: set[tuple[str, str, str]] = set()
        #: MVAPICH2's function pointers (MV2_Bcast_intra_node_function...) as the mvapich2
        #: selector last set them; SimGrid keeps them in process-wide globals
        self.mv2: dict[str, str] = {}

    def note(self, family: str, algo: str, why: str, instead: str) -> None:
        """Log once that ``algo`` cannot run (``why``) and ``instead`` runs."""
        key = (family, algo, why)
        if key not in self._warned:
            self._warned.add(key)
            log.info("%s: %s cannot run because %s; running %s instead", family, algo, why, instead)

    def name_for(self, family: str) -> str:
        return self.override[family] or self.selector

    def resolve(self, family: str, name: str, ctx: Ctx, args: tuple, q: Query | None = None) -> Algorithm:
        """The algorithm ``name`` (an algorithm or a selector) designates for this call."""
        hops = 0
        while name in SELECTORS and name not in ALGORITHMS[family]:
            if q is None:
                q = query(family, ctx, args)
            name = SELECTORS[name](family, q, ctx)
            hops += 1
            if hops > 4:
                raise SmpyInternalError(f"selector loop for {family}")
        algo = get(family, name)
        red = args[_REDUCTIONS[family]] if family in _REDUCTIONS else None
        for _ in range(4):
            why = ""
            if algo.commutative_only and isinstance(red, Reduction) and not red.commutative:
                why = "the op is not commutative"
            elif algo.requires is not None and not algo.requires(ctx.size):
                why = f"it needs {algo.requirement} (communicator of {ctx.size})"
            if not why:
                return algo
            fb = get(family, algo.fallback)
            self.note(family, algo.name, why, fb.name)
            algo = fb
        raise SmpyInternalError(f"no usable fallback for {family} {name}")

    def run(self, family: str, ctx: Ctx, *args: Any, q: Query | None = None) -> Any:
        """Run ``family`` as configured (override, else selector)."""
        return self.resolve(family, self.name_for(family), ctx, args, q).fn(ctx, *args)

    def run_selector(self, family: str, selector: str, ctx: Ctx, *args: Any) -> Any:
        """Run ``family`` as ``selector`` decides (SimGrid's ``bcast__mpich(...)`` calls)."""
        return self.resolve(family, selector, ctx, args).fn(ctx, *args)

    def run_named(self, family: str, name: str, ctx: Ctx, *args: Any) -> Any:
        """Run the algorithm ``name`` (with its fallbacks)."""
        return self.resolve(family, name, ctx, args).fn(ctx, *args)


_selections: weakref.WeakKeyDictionary[World, Selection] = weakref.WeakKeyDictionary()


def selection(world: World) -> Selection:
    sel = _selections.get(world)
    if sel is None:
        sel = _selections[world] = Selection(world.config)
    return sel


def help_text() -> str:
    """The ``smpyrun --help-coll`` listing: every selector and algorithm, by collective."""
    lines = [
        "Collective algorithms (choose with --cfg=smpi/<collective>:<name>; the selector with",
        f"--cfg=smpi/coll-selector:<{'|'.join(sorted(SELECTORS))}>, default ompi).",
        "Selectors: ompi = Open MPI 4.1 tuned decisions, mpich = MPICH 3.3, mvapich2 = MVAPICH2 1.9",
        "(Stampede tables), impi = Intel MPI 4.1 (Stampede tables), default = SimGrid's naive one;",
        "a selector name is also accepted per collective (--cfg=smpi/bcast:mpich).",
        "Marks: [c] commutative ops only, [r] restricted communicator sizes (fallback shown).",
    ]
    for family in sorted(ALGORITHMS):
        if family not in OVERRIDES:
            continue
        lines.append("")
        lines.append(f"{family}:")
        for name in sorted(ALGORITHMS[family], key=str.lower):
            a = ALGORITHMS[family][name]
            marks = []
            if a.commutative_only:
                marks.append(f"[c→{a.fallback}]")
            if a.requires is not None:
                marks.append(f"[r: {a.requirement}→{a.fallback}]")
            mark = " ".join(marks)
            lines.append(f"  {name:<28} {a.summary()}")
            extra = " ".join(x for x in (a.cost(), mark) if x)
            if extra:
                lines.append(f"  {'':<28} {extra}")
            lines.append(f"  {'':<28} from {a.source}")
    return "\n".join(lines)
