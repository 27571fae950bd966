"""Timeline traces of a batch workload (``smpy batch --trace FILE``): the single runs' tracers
(:mod:`smpy.trace.chrome`, :mod:`smpy.trace.paje`) with the ranks grouped per job.

Chrome/Perfetto JSON: one process per job (``job NAME``, pid ``1 +`` the job's index in the
workload), a thread per rank (tid its global process number, named ``rank R (HOST)`` with
``R`` its rank in the job's ``COMM_WORLD``), and the thread ``job`` with the job's phases:
``wait`` from its submit time to its start, ``run`` from its start to its end (a job that
never started: ``wait`` to the end of the simulation). The process ``nodes`` has a thread
per node with its states: with a scheduler, a job's nodes are ``allocated`` from its start
to its end and ``free`` otherwise (``off``, ``booting``, ``shutting down`` with a node
pool's lifecycle). Paje: see :class:`smpy.trace.paje.PajeTracer` (``groups``).
"""

from __future__ import annotations

from typing import Any

from smpy.trace.chrome import PHASES_TID, ChromeTracer


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
        from smpy.trace.paje import PajeTracer

        groups = JobGroups(launch)
        wl = launch.wl
        return PajeTracer(path, world.engine, world.cpu, world.platform, [], world.energy,
                          f"smpy batch {wl.source}: {len(wl.jobs)} jobs, platform {world.platform.name}",
                          procs=world.processes, jobs=[(j.name, j.submit) for j in wl.jobs],
                          job_of=groups.paje, nodes=world.nodes)
    return BatchChrome(path, world, launch)
