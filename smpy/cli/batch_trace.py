"""Timeline traces of a batch workload (``smpy batch --trace FILE``): the single runs' tracers
(:mod:`smpy.trace.chrome`, :mod:`smpy.trace.paje`) with the ranks grouped per job.

Chrome/Perfetto JSON: one process per job (``job NAME``, pid ``1 +`` the job's index in the
workload), a thread per rank (tid its global process number, named ``rank R (HOST)`` with
``R`` its rank in the job's ``COMM_WORLD``), and the thread ``job`` with the job's phases:
``wait`` from its submit time to its start, ``run`` from its start to its end (a job that
never started: ``wait`` to the end of the simulation). The process ``nodes`` has a thread
per node with its states: with a scheduler, a job's nodes are ``allocated`` from its start
to its end and ``free`` otherwise (``off``, ``booting``, ``shutting down`` with a node
pool's lifecycle). The nodes a job's spawns took (``JobRecord.grown``) are spans
``node HOST`` of the job's ``job`` thread, from the spawn to their return.

Paje: see :class:`smpy.trace.paje.PajeTracer` (``jobs``), and the same spans of the nodes a
job's spawns took: a container ``node HOST`` of type ``JOB_NODE`` in the job's ``JOB``
container, in state ``spawn`` (``JOB_NODE_STATE``), created when the spawn takes the node and
destroyed when it goes back (with the job's end at the latest).
"""

from __future__ import annotations

from typing import Any

from smpy.trace.chrome import PHASES_TID, ChromeTracer
from smpy.trace.paje import PajeTracer, _quote


class JobGroups:
    """Which job each process belongs to (the batch launch's ``rank_job``) and the names."""

    def __init__(self, launch: Any) -> None:
        self.launch = launch

    def job_of(self, proc: Any) -> Any:
        return self.launch.wl.jobs[self.launch.rank_job[proc.rank]]

    def chrome(self, proc: Any) -> tuple[int, str, str]:
        job = self.job_of(proc)
        local = proc.comm_world.rank_of[proc.rank]
        return 1 + job.index, f"job {job.name}", f"rank {local} ({proc.host.name})"

    def paje(self, proc: Any) -> tuple[int, str]:
        """(job index, container name) of a process."""
        job = self.job_of(proc)
        return job.index, f"rank-{proc.comm_world.rank_of[proc.rank]}"


class BatchChrome(ChromeTracer):
    """The Chrome tracer of a workload: ranks per job, and at its close the jobs' phases."""

    def __init__(self, path: str, world: Any, launch: Any) -> None:
        self.groups = JobGroups(launch)
        self.launch = launch
        super().__init__(path, world.engine, world.cpu, world.platform.hosts, [], world.processes,
                         self.groups.chrome)
        self.watch_nodes(world.nodes)

    def close(self) -> None:
        if not self.fh.closed:
            end = self.engine.now
            for job, rec in zip(self.launch.wl.jobs, self.launch.records):
                pid = 1 + job.index
                self.name_process(pid, f"job {job.name}")
                self.name_thread(pid, PHASES_TID, "job")
                self._emit({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": PHASES_TID,
                            "args": {"sort_index": -1}})
                start = rec.start_s if rec.start_s is not None else end
                if start > rec.submit_s:
                    self.span(pid, PHASES_TID, "job", "wait", rec.submit_s, start)
                if rec.start_s is not None:
                    stop = rec.end_s if rec.end_s is not None else end
                    args = {"np": rec.np, "hosts": len(rec.hosts), "state": rec.status}
                    if getattr(rec, "reason", ""):  # how a job that did not complete ended
                        args["reason"] = rec.reason
                    self.span(pid, PHASES_TID, "job", "run", rec.start_s, stop, args)
                for host, t0, t1 in getattr(rec, "grown", ()):  # the nodes its spawns took
                    self.span(pid, PHASES_TID, "job", f"node {host}", t0, t1 if t1 is not None else stop,
                              {"host": host})
        super().close()


def open_trace(path: str, fmt: str, world: Any, launch: Any) -> Any:
    """The tracer of ``smpy batch --trace``: Chrome, or Paje (``fmt`` as smpyrun's)."""
    if fmt == "paje":
        return BatchPaje(path, world, launch)
    return BatchChrome(path, world, launch)


class BatchPaje(PajeTracer):
    """The Paje tracer of a workload: a ``JOB`` container per job, and in it a ``JOB_NODE``
    container per node its spawns took, over the time it held it (module docstring)."""

    def __init__(self, path: str, world: Any, launch: Any) -> None:
        groups = JobGroups(launch)
        wl = launch.wl
        self.launch = launch
        self._spans: dict[tuple[int, int], int] = {}  # (job, span index) -> open container
        super().__init__(path, world.engine, world.cpu, world.platform, [], world.energy,
                         f"smpy batch {wl.source}: {len(wl.jobs)} jobs, platform {world.platform.name}",
                         procs=world.processes, jobs=[(j.name, j.submit) for j in wl.jobs],
                         job_of=groups.paje, nodes=world.nodes)
        launch.grown.span_listeners.append(self._grown)

    def _grown(self, job: int, k: int) -> None:
        """A span of ``JobRecord.grown`` opened (a node taken) or closed (it went back)."""
        if self.fh.closed:
            return
        host, _t0, t1 = self.launch.records[job].grown[k]
        if t1 is None:
            ntype = self._type(0, self._job_type, "JOB_NODE")
            alias = self._spans[(job, k)] = self._alias()
            self._line(f"6 {self._now()} {alias} {ntype} {self._submit(job)} {_quote(f'node {host}')}")
            self._set_state(self._type(2, ntype, "JOB_NODE_STATE"), alias, "spawn", "0.4 0.8 0.4")
        else:
            self._end_span(job, k)

    def _end_span(self, job: int, k: int) -> None:
        alias = self._spans.pop((job, k), None)
        if alias is not None:
            self._line(f"7 {self._now()} {self._type(0, self._job_type, 'JOB_NODE')} {alias}")

    def _rank_ended(self, rank: int) -> None:
        """Before a job's container ends (its last rank), the spans it still has open."""
        if self._job_of is not None and rank < len(self._procs or []):
            k, _ = self._job_of(self._procs[rank])  # type: ignore[index]
            if self._job_left.get(k, 0) == 1:
                for job, i in [key for key in self._spans if key[0] == k]:
                    self._end_span(job, i)
        super()._rank_ended(rank)

    def close(self) -> None:
        if not self.fh.closed:
            for job, k in list(self._spans):  # nodes still held when the simulation stopped
                self._end_span(job, k)
        super().close()
