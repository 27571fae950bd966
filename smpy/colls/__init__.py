"""Collective operations as real MPI libraries run them (layer L4).

* :mod:`~smpy.colls.registry` — every algorithm, by collective family and SimGrid name;
* one module per family (:mod:`~smpy.colls.bcast`, :mod:`~smpy.colls.reduce`,
  :mod:`~smpy.colls.allreduce`, :mod:`~smpy.colls.allgather` (+v),
  :mod:`~smpy.colls.alltoall` (+v, w), :mod:`~smpy.colls.gather` (+v),
  :mod:`~smpy.colls.scatter` (+v), :mod:`~smpy.colls.barrier`,
  :mod:`~smpy.colls.reduce_scatter`, :mod:`~smpy.colls.scan`), each algorithm running its
  real point-to-point schedule on the runtime, so its cost is its messages';
* :mod:`~smpy.colls.selectors` — Open MPI / MPICH / MVAPICH2 / Intel MPI / SimGrid decision
  tables as data (:mod:`~smpy.colls.tables_mv2`, :mod:`~smpy.colls.tables_impi`);
  :mod:`~smpy.colls.dispatch` — ``smpi/coll-selector`` and ``smpi/<collective>``;
* :mod:`~smpy.colls.buffers` / :mod:`~smpy.colls.objects` — what the facade calls
  (uppercase and lowercase collectives), blocking or not (:mod:`~smpy.colls.nonblocking`).

Built on the internal runtime only, never on the public facade.
"""

from __future__ import annotations


def help_text() -> str:
    """The ``smpyrun --help-coll`` listing: every selector and algorithm, by collective."""
    from smpy.colls.dispatch import OVERRIDES
    from smpy.colls.registry import ALGORITHMS
    from smpy.colls.selectors import SELECTORS

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


__all__ = ["help_text"]
