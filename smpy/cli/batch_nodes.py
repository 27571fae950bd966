"""One pool of nodes for the batch scheduler and the jobs' spawns (``smpy batch``,
docs/dynamic-allocation.md, *Spawn inside a batch job*).

A batch job's ``MPI_Comm_spawn`` (or ``smpy.nodes.allocate``) places its processes on the
idle cores of the job's own nodes first, then takes whole nodes **only from those the batch
scheduler has free** (:mod:`smpy.runtime.nodes`, ``NodePool._fill_job``): such a node leaves
the scheduler's free set at the spawn's time :math:`t_0` and joins the job's allocation, so
the EASY reservations, the Gantt (``JobRecord.grown``), the node utilisation, the job's share
of the energy (its cores, :mod:`smpy.cli.batch_energy`) and the trace count it as the job's
from :math:`t_0`; when its last process ends (a worker's ``Disconnect`` and return), or the
reservation is released, the pool frees it and it goes back to the scheduler at that instant
:math:`t_1` (no cost: a node returns free; with ``smpy/node-idle-off`` it then shuts down,
and a job it is given to switches it on without a boot, as any batch node), and the scheduler
runs, so that a waiting job may start at :math:`t_1`. When the job ends first, the nodes go
back with its others.
"""

from __future__ import annotations

from typing import Any

from smpy.kernel.actors import current_actor
from smpy.runtime.world import Process


class JobNodes:
    """The broker between the node pool (``world.nodes.broker``) and the batch launch."""

    def __init__(self, launch: Any) -> None:
        self.launch = launch
        self.world = launch.world
        #: node index -> (job index, index of its span in the job's record ``grown``)
        self.extra: dict[int, tuple[int, int]] = {}
        self.world.nodes.broker = self
        self.world.nodes.listeners.append(self._allocated)
        #: called with (job index, index of the span in its ``grown``) when a node is taken
        #: and when it goes back (the span's end set): the Paje trace's per-job spans
        self.span_listeners: list[Any] = []

    def _changed(self, job: int, k: int) -> None:
        for f in self.span_listeners:
            f(job, k)

    def owner(self) -> int | None:
        """The running job of the running actor (None: not a job's process)."""
        a = current_actor()
        p = a.data if a is not None else None
        index = self.launch.rank_job.get(p.rank) if isinstance(p, Process) else None
        if index is None or self.launch.records[index].status != "running":
            return None
        return index

    def own(self, job: int) -> list[int]:
        """The nodes job ``job`` holds: those it started with, then those it took."""
        first = [h.index for h in self.launch.nodes_of[job]]
        return first + [i for i, (j, _) in self.extra.items() if j == job and i not in first]

    def free(self) -> set[int]:
        """The nodes no job holds (the scheduler's free set; without a scheduler, the nodes
        of no running job whose host is on)."""
        launch = self.launch
        if launch.sched is not None:
            return set(launch.sched.free)
        hosts = self.world.platform.hosts
        return {i for i in range(len(hosts)) if not launch.held.get(i) and i not in self.extra
                and hosts[i].is_on}

    def take(self, job: int, i: int) -> None:
        """Node ``i`` joins job ``job``'s allocation now."""
        launch = self.launch
        if launch.sched is not None:
            launch.sched.grow(job, i)
        host = self.world.platform.hosts[i]
        rec = launch.records[job]
        rec.grown.append([host.name, self.world.engine.now, None])
        self.extra[i] = (job, len(rec.grown) - 1)
        self._changed(job, len(rec.grown) - 1)
        if launch.shares is not None:
            launch.shares.hold(job, {i: float(host.cores)})

    def _allocated(self, i: int, allocated: bool) -> None:
        """The pool's change of node ``i``: freed, it goes back to the scheduler."""
        if allocated or i not in self.extra:
            return
        self.give_back(i)
        if self.launch.sched is not None:
            self.world.engine.schedule(0.0, self.launch._decide)

    def give_back(self, i: int) -> None:
        job, k = self.extra.pop(i)
        launch = self.launch
        span = launch.records[job].grown[k]
        if span[2] is None:
            span[2] = self.world.engine.now
            self._changed(job, k)
        if launch.shares is not None:
            launch.shares.drop(job, i)
        if launch.sched is not None and job in launch.sched.running:
            launch.sched.shrink(job, i)

    def job_ended(self, job: int) -> None:
        """Job ``job`` ends: the nodes it took end with it (the scheduler frees them with its
        others)."""
        for i in [i for i, (j, _) in self.extra.items() if j == job]:
            job_, k = self.extra.pop(i)
            span = self.launch.records[job_].grown[k]
            if span[2] is None:
                span[2] = self.world.engine.now
                self._changed(job_, k)
