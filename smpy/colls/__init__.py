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
