"""``smpy batch WORKLOAD.yaml``: several independent jobs in one simulation (docs/workloads.md).

Each job is a set of ranks with its own ``MPI_COMM_WORLD``, created when the job starts (as
spawned processes are, :mod:`smpy.runtime.spawn`); all jobs share the platform's hosts (cores
are shared when jobs are placed together), network and file systems, so that their
interference is simulated. Jobs start at their submit time on their own hosts (scheduler
``none``) or when the batch scheduler gives them whole nodes (:mod:`smpy.cli.scheduler`,
FCFS or EASY backfilling); the scheduler runs as events of the simulation kernel, at each
arrival and at each job's end: the end of its last rank, or its kill at ``start + walltime``
(unless the workload says ``kill_at_walltime: false``), or its failure or deadlock, which end
that job only (:mod:`smpy.cli.batch_jobs`).

Per job the report gives: ``wait = start - submit``, ``run = end - start``, the run time
alone ``solo`` (the same job, alone on the same hosts with the same rank placement, in an
extra simulation per distinct job) and ``slowdown = run / solo``, and its share of the
platform's energy (:mod:`smpy.cli.batch_energy`: static power by the cores it holds, dynamic
power by its own busy cores; the jobs' shares and the unattributed rest sum to the
platform's energy, each host counted once). For the platform: the makespan ``T`` (the last
end), the node utilisation
``(sum_j nodes_j * run_j + G) / (N * T)`` (``G``: the node-seconds the jobs' spawns held,
:mod:`smpy.cli.batch_nodes`) and the core utilisation ``sum_j np_j * run_j / (C * T)``
(``N`` nodes, ``C`` cores of the platform), and the energy of all hosts over ``[0, T]``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from smpy.cli import batch_jobs as J
from smpy.cli import launch as L
from smpy.cli.batch_energy import EnergyShares
from smpy.cli.batch_nodes import JobNodes
from smpy.cli.scheduler import NodeScheduler, Request
from smpy.cli.workload import Job, Workload, WorkloadError, load_workload
from smpy.energy import HostEnergy
from smpy.kernel.actors import current_actor
from smpy.kernel.engine import DeadlockError
from smpy.platform import PlatformError, default_platform, load_platform, place_ranks
from smpy.runtime import ulfm
from smpy.runtime.comm import CommImpl
from smpy.runtime.world import Process, World
from smpy.shim.isolation import RankContext
from smpy.support.config import Config
from smpy.timing.bench import RankBench, Timing
from smpy.trace.report import Tee
from smpy.trace.utilization import BIN as UTILIZATION_BIN
from smpy.trace.utilization import Utilization


@dataclass
class JobRecord:
    name: str
    program: str
    np: int
    args: list[str]
    submit_s: float
    hosts: list[str] = field(default_factory=list)  #: distinct hosts, in rank order
    start_s: float | None = None
    end_s: float | None = None
    energy_J: float | None = None
    solo_s: float | None = None
    #: waiting | running | done | timeout | failed | deadlock (smpy.cli.batch_jobs)
    status: str = "waiting"
    exit_code: int | None = None  #: 0 when done; set when the job ends
    reason: str = ""  #: why it ended, when not done (one line)
    #: nodes its spawns took from the batch's pool: [host, from, to] (smpy.cli.batch_nodes)
    grown: list[list[Any]] = field(default_factory=list)

    @property
    def wait_s(self) -> float | None:
        return None if self.start_s is None else self.start_s - self.submit_s

    @property
    def run_s(self) -> float | None:
        return None if self.end_s is None or self.start_s is None else self.end_s - self.start_s

    @property
    def slowdown(self) -> float | None:
        run, solo = self.run_s, self.solo_s
        return None if run is None or not solo else run / solo

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(wait_s=self.wait_s, run_s=self.run_s, slowdown=self.slowdown)
        return d


@dataclass
class BatchResult:
    workload: str
    platform: str
    scheduler: str
    jobs: list[JobRecord]
    makespan_s: float
    node_utilisation: float
    core_utilisation: float
    energy_J: float | None
    status: str
    exit_code: int
    message: str
    wall_s: float
    cpu_s: float
    events: int
    peak_rss_bytes: int
    nodes: int
    solo_runs: int = 0
    #: the platform's energy that no job holds (idle nodes and cores): the jobs' energies
    #: plus this make ``energy_J`` (smpy.cli.batch_energy)
    energy_unattributed_J: float | None = None
    output: list[tuple[int, str, str]] | None = None
    #: global process number -> job name (to split ``output``)
    rank_job: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("jobs", "output", "rank_job")}
        d["jobs"] = [j.to_json() for j in self.jobs]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BatchResult:
        """The result a ``--json`` file holds (:meth:`to_json`), for ``smpy plot`` to redraw
        its figures; a missing field raises KeyError naming it."""
        def build(kind: Any, doc: dict[str, Any]) -> Any:
            names = {f.name: f for f in fields(kind) if f.init}
            missing = [n for n, f in names.items() if n not in doc and f.default is MISSING and f.default_factory is MISSING]
            if missing:
                raise KeyError(f"{kind.__name__} field {missing[0]!r} missing")
            return kind(**{n: doc[n] for n in names if n in doc})

        return build(cls, {**d, "jobs": [build(JobRecord, j) for j in d.get("jobs", [])]})

    def job(self, name: str) -> JobRecord:
        return next(j for j in self.jobs if j.name == name)

    def job_output(self, name: str, stream: str = "stdout") -> str:
        return "".join(t for r, s, t in (self.output or []) if s == stream and self.rank_job.get(r) == name)

    def table(self) -> str:
        head = (f"{'job':<16} {'np':>5} {'nodes':>5} {'submit_s':>10} {'start_s':>10} {'end_s':>10} "
                f"{'wait_s':>10} {'run_s':>10} {'solo_s':>10} {'slowdown':>8} {'energy_J':>10} state")
        rows = [head]
        for j in self.jobs:
            rows.append(f"{j.name:<16} {j.np:>5} {len(j.hosts):>5} {_f(j.submit_s)} {_f(j.start_s)} "
                        f"{_f(j.end_s)} {_f(j.wait_s)} {_f(j.run_s)} {_f(j.solo_s)} "
                        f"{(f'{j.slowdown:8.3f}' if j.slowdown is not None else '       -')} {_f(j.energy_J)} "
                        f"{j.status}")
        rows += [f"{j.name}: {j.status} (exit code {j.exit_code}): {j.reason}" for j in self.jobs if j.reason]
        rows += [f"{j.name}: took node {h} from {_g(t0)} s to {_g(t1)} s (spawn)" for j in self.jobs
                 for h, t0, t1 in j.grown]
        return "\n".join(rows)

    #: the columns of ``--report PREFIX``'s ``PREFIX.jobs.csv``
    CSV_COLUMNS = ("name", "np", "nodes", "submit_s", "start_s", "end_s", "wait_s", "run_s", "solo_s",
                   "slowdown", "energy_J", "state", "exit_code", "reason", "hosts", "grown")

    def write_jobs_csv(self, path: str) -> None:
        """One row per job (empty cells where a figure does not exist; hosts space-separated;
        ``grown``: the nodes its spawns took, ``HOST@FROM-TO`` separated by ``;``, ``TO`` empty
        for a node still held at the end)."""
        import csv

        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(self.CSV_COLUMNS)
            for j in self.jobs:
                w.writerow([j.name, j.np, len(j.hosts), *("" if x is None else repr(x) for x in (
                    j.submit_s, j.start_s, j.end_s, j.wait_s, j.run_s, j.solo_s, j.slowdown, j.energy_J)),
                    j.status, "" if j.exit_code is None else j.exit_code, j.reason, " ".join(j.hosts),
                    ";".join(f"{h}@{t0!r}-{'' if t1 is None else repr(t1)}" for h, t0, t1 in j.grown)])

    def summary(self) -> str:
        energy = ""
        if self.energy_J is not None:
            energy = (f"; energy {self.energy_J:.6g} J ({self.energy_J - (self.energy_unattributed_J or 0.0):.6g} J "
                      f"to the jobs, {self.energy_unattributed_J or 0.0:.6g} J unattributed)")
        lines = [
            f"[smpy] batch {self.workload}: {len(self.jobs)} jobs on {self.nodes} nodes of platform "
            f"'{self.platform}', scheduler {self.scheduler}",
            f"[smpy] simulated makespan: {self.makespan_s:.9g} s; node utilisation "
            f"{100 * self.node_utilisation:.2f} %, core utilisation {100 * self.core_utilisation:.2f} %{energy}",
            f"[smpy] emulation wall time: {self.wall_s:.3f} s, CPU time {self.cpu_s:.3f} s ({self.events} events"
            f"{f', {self.solo_runs} solo runs' if self.solo_runs else ''}), peak RSS "
            f"{self.peak_rss_bytes / 2**20:.0f} MiB",
        ]
        states = [j.status for j in self.jobs if j.status != J.DONE]
        if states:
            counts = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states))
            lines.append(f"[smpy] {len(states)} of {len(self.jobs)} jobs did not complete: {counts}")
        if self.status != "ok":
            lines.append(f"[smpy] batch ended with status '{self.status}' (exit code {self.exit_code})")
        return "\n".join(lines)


def _g(x: float | None) -> str:
    return "the end" if x is None else f"{x:.9g}"


def _f(x: float | None) -> str:
    return f"{x:10.6g}" if x is not None else f"{'-':>10}"


class _Programs:
    """Each distinct program of the workload, loaded once (checked before the run)."""

    def __init__(self, jobs: list[Job], source: str) -> None:
        self.by_key: dict[tuple[str, bool], L.Program] = {}
        for job in jobs:
            key = (job.program, job.module)
            if key not in self.by_key:
                try:
                    self.by_key[key] = (L.load_program(None, module=job.program) if job.module
                                        else L.load_program(job.program))
                except (LookupError, OSError) as exc:
                    raise WorkloadError(f"{source}: {job.origin}.program: {exc}") from None
                except SyntaxError as exc:
                    raise WorkloadError(f"{source}: {job.origin}.program: cannot compile: {exc}") from None

    def of(self, job: Job) -> L.Program:
        return self.by_key[(job.program, job.module)]


class _BatchLaunch(L._Launch):
    """The ranks of every job, started at the job's start time."""

    def __init__(self, world: World, timing: Timing, programs: _Programs, att: L.Attached, config: Config,
                 session: L.Session, wl: Workload) -> None:
        super().__init__(world, timing, [(p, [p.argv0]) for p in programs.by_key.values()], att, config, session)
        self.wl, self.catalogue = wl, programs
        self.records = [JobRecord(j.name, j.program, j.np, list(j.args), j.submit) for j in wl.jobs]
        self.rank_program: dict[int, L.Program] = {}
        self.rank_job: dict[int, int] = {}
        self.alive: dict[int, int] = {}  #: job index -> ranks still running
        #: the jobs' shares of the platform's energy (smpy.cli.batch_energy), with energy on
        self.shares = EnergyShares(world, self.rank_job) if world.energy is not None else None
        self.failing: set[int] = set()  #: jobs whose end after a failure is scheduled
        self.nodes_of: dict[int, list[Any]] = {}  #: job index -> its nodes
        self.held: dict[int, int] = {}  #: node index -> running jobs holding it
        #: running job index -> its walltime event (while jobs are killed at their walltime)
        self.deadline: dict[int, Any] = {}
        self.reports: list[str] = []  #: how the jobs that did not complete ended, in order
        self.flows = J.FlowOwners(world, self.rank_job)
        world.engine.abort_handler = self._failed
        if world.injector is not None:
            world.injector.on_event.append(self._component)
        hosts = world.platform.hosts
        self.sched = None if wl.scheduler == "none" else NodeScheduler(len(hosts), wl.scheduler)
        for job in wl.jobs:
            if self.sched is not None:
                try:
                    self.sched.check(self._request(job))
                except ValueError as exc:
                    raise WorkloadError(f"{wl.source}: {job.origin}: {exc}") from None
            world.engine.schedule_at(job.submit, self._arrive, job)
        world.engine.on_actor_end.connect(self._actor_end)
        world.spawn_hook = _JobSpawns(world.spawn_hook, self)
        #: the nodes the jobs' spawns take from the scheduler's pool (smpy.cli.batch_nodes)
        self.grown = JobNodes(self)

    def program_of(self, proc: Any) -> L.Program:
        return self.rank_program[proc.rank]

    def nonzero_exit(self, proc: Any, e: SystemExit) -> None:
        """A job's rank that exits with a non-zero status ends its job (the job's report)."""
        raise e

    def uncaught(self, proc: Any, e: BaseException) -> None:
        """A job's rank that raises ends its job (the job's report): a scheduler's view of a
        failed job, not mpiexec's of its processes (smpy.cli.rank_end)."""
        raise e

    def _rank_main(self, proc: Any) -> None:
        """The rank's program, then (still in the rank's context, so that its arrays go back
        to its own heap) the release of its module state: a workload's thousands of finished
        ranks would otherwise keep their buffers until the end of the simulation."""
        try:
            super()._rank_main(proc)
        finally:
            ctx = proc.actor.context
            if ctx is not None:
                ctx.main.__dict__.clear()
                ctx.modules.clear()

    # -- events (from the maestro) -------------------------------------------------------
    def _arrive(self, job: Job) -> None:
        if self.sched is None:
            placement = place_ranks(self.world.platform, job.np, job.hosts)
            self._start(job, placement, list(dict.fromkeys(placement)))
            return
        self.sched.submit(self._request(job))
        self._decide()

    def _request(self, job: Job) -> Request:
        """The job's demand: its hosts' nodes, or ``nodes`` (default ``ceil(np / cores)``, the
        first host's core count) whole nodes."""
        plat = self.world.platform
        fixed = tuple(sorted({plat.host(h).index for h in job.hosts})) if job.hosts else None
        return Request(job.index, job.nodes or math.ceil(job.np / max(1, plat.hosts[0].cores)),
                       job.walltime if job.walltime is not None else math.inf, fixed)

    def _decide(self) -> None:
        assert self.sched is not None
        plat = self.world.platform
        for req, nodes in self.sched.decide(self.world.engine.now):
            job = self.wl.jobs[req.id]
            hosts = [plat.hosts[i] for i in nodes]
            if job.hosts:  # fixed hosts: the hostfile's placement
                placement = place_ranks(plat, job.np, job.hosts)
            else:  # whole nodes, ranks in blocks (rank r on node r // ceil(np / nodes))
                per = math.ceil(job.np / len(hosts))
                placement = [hosts[r // per] for r in range(job.np)]
            self._start(job, placement, hosts)

    def _start(self, job: Job, placement: list[Any], nodes: list[Any]) -> None:
        """Start ``job``'s ranks on ``placement``; ``nodes`` (the scheduler's, or the hosts
        of the placement) stay allocated to it until its end (the utilisation's allocated
        cores, smpy.trace.utilization)."""
        world, rec = self.world, self.records[job.index]
        procs = world.add_processes(placement)
        world.nodes.hold(nodes)
        self.nodes_of[job.index] = nodes
        for h in nodes:
            self.held[h.index] = self.held.get(h.index, 0) + 1
        cw = CommImpl(world, [p.rank for p in procs], "MPI_COMM_WORLD")
        program = self.catalogue.of(job)
        argv = [program.argv0, *job.args]
        for local, (p, a) in enumerate(zip(procs, world.make_actors(procs, self._rank_main))):
            p.comm_world = cw
            p.bench = RankBench()
            self.rank_program[p.rank] = program
            self.rank_job[p.rank] = job.index
            a.context = RankContext(p.rank, L._main_module(program.attrs), list(argv), self.seed, p,
                                    seed_rank=local)
            a.start()
        self.alive[job.index] = job.np
        rec.start_s, rec.status = world.engine.now, "running"
        rec.hosts = list(dict.fromkeys(h.name for h in placement))
        if self.shares is not None:  # whole nodes from a scheduler, else a core per rank
            cores = ({h.index: float(h.cores) for h in nodes} if self.sched is not None
                     else {i: float(n) for i, n in Counter(h.index for h in placement).items()})
            self.shares.hold(job.index, cores)
        if job.walltime is not None and self.wl.kill_at_walltime:
            self.deadline[job.index] = world.engine.schedule(job.walltime, self._walltime, job.index)

    def _actor_end(self, actor: Any) -> None:
        p = actor.data
        if not isinstance(p, Process) or p.actor is not actor:
            return
        index = self.rank_job.get(p.rank)
        if index is None:
            return
        self.alive[index] -= 1
        if self.alive[index] == 0:  # the job's last rank: the scheduler runs from the maestro
            self.world.engine.schedule(0.0, self._job_done, index)

    def _job_done(self, index: int) -> None:
        rec = self.records[index]
        if rec.status != "running":  # killed or failed: ended already
            return
        rec.status, rec.exit_code = J.DONE, 0
        self._release(index)

    # -- a job's other ends (smpy.cli.batch_jobs) ------------------------------------------
    def _walltime(self, index: int) -> None:
        """The walltime is reached: the job is killed once everything else of this instant
        has happened (a daemon event of now runs after the regular ones), so that a job
        ending exactly at its walltime completes."""
        self.world.engine.schedule_daemon(0.0, self._timeout, index)

    def _timeout(self, index: int) -> None:
        if self.records[index].status != "running":
            return
        job, now = self.wl.jobs[index], self.world.engine.now
        reason = f"killed at its walltime ({job.walltime:g} s) at {now:.9g} s"
        pending = [(a, a.describe_wait() if a.waiting_for is not None else "running")
                   for a in self.world.engine.actors if a.alive and isinstance(a.data, Process)
                   and self.rank_job.get(a.data.rank) == index]
        lines = J.deadlock_lines(self.world, job.name, pending, now)[1:]
        self._end(index, J.TIMEOUT, J.TIMEOUT_EXIT, reason, "\n".join(
            [f"[smpy] TIMEOUT of job '{job.name}': {reason}; its ranks were in:", *lines]))

    def _failed(self, exc: BaseException, actor: Any) -> bool:
        """The engine's abort handler: a failure of a job's rank ends that job only."""
        if not J.handled(exc):
            return False
        jobs = J.failed_jobs(actor, exc, self.rank_job)
        if not jobs:  # not a job's (or a process failure of jobs that ended already)
            ranks = exc.ranks if isinstance(exc, ulfm.ProcessFailure) and exc.cause else \
                getattr(exc, "lost", ())
            return isinstance(exc, ulfm.ProcessFailure) and bool(ranks) and all(r in self.rank_job for r in ranks)
        for index in jobs:
            if self.records[index].status == "running" and index not in self.failing:
                code, reason, message = J.failure(self.world, exc, actor, index, self.rank_job)
                self.failing.add(index)
                self.world.engine.schedule(0.0, self._end, index, J.FAILED, code, reason, message)
        return True

    def run_engine(self, sim_timeout: float | None) -> None:
        """The simulation; a deadlock of jobs ends those jobs (their ranks are the blocked
        ones) and the simulation goes on."""
        while True:
            try:
                self.world.engine.run(sim_timeout)
                return
            except DeadlockError as d:
                if not self._deadlocked(d):
                    raise

    def _deadlocked(self, d: DeadlockError) -> bool:
        by_job: dict[int, list] = {}
        for a, what in d.blocked:
            p = a.data
            index = self.rank_job.get(p.rank) if isinstance(p, Process) else None
            if index is None or self.records[index].status != "running":
                return False
            by_job.setdefault(index, []).append((a, what))
        for index, blocked in sorted(by_job.items()):
            job, start = self.wl.jobs[index], self.records[index].start_s
            if self.wl.kill_at_walltime and job.walltime is not None and d.now >= start + job.walltime:
                self._timeout(index)  # stuck until its walltime, as far as the batch can tell
                continue
            lines = J.deadlock_lines(self.world, self.wl.jobs[index].name, blocked, d.now)
            p = blocked[0][0].data
            more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
            reason = (f"deadlock at {d.now:.9g} s: rank {p.comm_world.rank_of[p.rank]} blocked forever in "
                      f"{blocked[0][1]}{more}")
            self._end(index, J.DEADLOCK, J.DEADLOCK_EXIT, reason, "\n".join(lines))
        return True

    def _end(self, index: int, state: str, code: int, reason: str, report: str) -> None:
        """End running job ``index`` now (from the maestro): kill what is left of it, then
        free its nodes as at a completion."""
        rec, job = self.records[index], self.wl.jobs[index]
        if rec.status != "running":
            return
        rec.status, rec.exit_code, rec.reason = state, code, reason
        line = (f"[smpy] job '{job.name}' ({job.origin}) {state} (exit code {code}): {reason}; its nodes are "
                "freed, the other jobs go on")
        self.reports.append(f"{report}\n{line}" if report else line)
        J.kill_job(self.world, index, self.rank_job, self.flows)
        self._release(index)

    def _component(self, rec: Any) -> None:
        """A host fails (its node leaves the scheduler's pool) or is repaired (it returns)."""
        if rec.kind != "host" or self.sched is None:
            return
        i = self.world.platform.host(rec.name).index
        if rec.on:
            self.sched.node_up(i)
            self.world.engine.schedule(0.0, self._decide)
        else:
            self.sched.node_down(i)

    def _release(self, index: int) -> None:
        """The job ended: its nodes return to the pool, the scheduler runs."""
        rec = self.records[index]
        rec.end_s = self.world.engine.now
        ev = self.deadline.pop(index, None)
        if ev is not None:
            ev.cancelled = True
        self.flows.forget(index)
        self.grown.job_ended(index)
        free = []
        for h in self.nodes_of[index]:
            self.held[h.index] -= 1
            if not self.held[h.index]:
                free.append(h.name)
        self.world.nodes.release(free, False)
        if self.shares is not None:
            rec.energy_J = self.shares.release(index)
        if self.sched is not None:
            self.sched.finish(index)
            self._decide()


class _JobSpawns:
    """The processes a job's rank spawns (``MPI_Comm_spawn``) belong to its job: the job ends
    when they have ended too (as ``mpiexec`` does), they are killed with it, and their output
    is the job's."""

    def __init__(self, hook: Any, launch: _BatchLaunch) -> None:
        self.hook, self.launch = hook, launch

    def __call__(self, procs: list[Any], programs: list[Any]) -> None:
        a = current_actor()
        p = a.data if a is not None else None
        index = self.launch.rank_job.get(p.rank) if isinstance(p, Process) else None
        if index is not None:
            for q in procs:
                self.launch.rank_job[q.rank] = index
            self.launch.alive[index] += len(procs)
        self.hook(procs, programs)

    def restore_path(self) -> None:
        self.hook.restore_path()


def _setup(wl: Workload, cfg: dict[str, Any], energy: bool) -> tuple[Any, Config, bool]:
    try:
        plat = load_platform(wl.platform) if wl.platform is not None else default_platform()
    except PlatformError as exc:
        raise WorkloadError(f"{wl.source}: platform: {exc}") from None
    config = Config({**wl.cfg, **cfg})
    config.set_defaults_from(plat.config or {}, plat.source)
    for job in wl.jobs:
        if job.hosts:
            try:
                place_ranks(plat, job.np, job.hosts, source=f"{wl.source}: {job.origin}.hosts")
            except PlatformError as exc:
                raise WorkloadError(str(exc)) from None
    plugins = L.requested_plugins(config)
    powered = any(h.properties.get("wattage_per_state") for h in plat.hosts)
    return plat, config, energy or "host_energy" in plugins or powered


def simulate(wl: Workload, cfg: dict[str, Any] | None = None, energy: bool = False, solo: bool = True,
             err: Any = None, utilization: str | None = None, trace: str | None = None) -> BatchResult:
    """Simulate the workload (and, with ``solo``, each distinct job alone); see the module
    docstring. ``utilization``: write the platform's utilisation over time to this CSV file
    (smpy.trace.utilization; bins of ``smpy/utilization-bin`` over ``[0, makespan]``);
    ``trace``: write the timeline of every job there (smpy.cli.batch_trace)."""
    err = err if err is not None else sys.stderr
    L.single_thread_blas()
    import smpy.mpi  # noqa: F401 - loads numpy before the rank contexts take their generators
    cpu0 = time.process_time()
    plat, config, with_energy = _setup(wl, cfg or {}, energy)
    programs = _Programs(wl.jobs, wl.source)
    world = World(plat, config, [])
    L.rank_memory.install(world)  # hosts with ram: memory slowdown, OOM kills (of a job)
    timing = Timing(world, config)
    att = L.Attached()
    if with_energy:
        world.energy = HostEnergy(world.engine, world.cpu, plat.hosts)
    L.arm_failures(world, plat, config)
    session = L.Session(world, timing, False, True)
    launch = _BatchLaunch(world, timing, programs, att, config, session, wl)
    if utilization:
        # follows every job's processes as they are added (world.processes grows)
        att.utilization = Utilization(world.engine, world.cpu, plat.hosts, world.processes, world.energy,
                                      world.nodes)
    if trace:
        from smpy.cli.batch_trace import open_trace
        tracer = open_trace(trace, L.trace_format(trace, str(config.get(L.TRACE_FORMAT))), world, launch)
        att.paje, att.chrome = (tracer, None) if hasattr(tracer, "rank_start") else (None, tracer)
    tracers = [t for t in (att.chrome, att.paje, att.utilization) if t is not None]
    world.tracer = Tee(*tracers) if len(tracers) > 1 else (tracers[0] if tracers else None)
    status, code, message, wall = launch.run(None)
    message += _culprit(world, launch)
    for report in launch.reports:
        err.write(report + "\n")
    if status == "ok":
        status, code = _jobs_status(launch.records)
    if message:
        err.write(message + ("\n" if not message.endswith("\n") else ""))
    result = _result(wl, world, launch, (status, code, message, wall), with_energy)
    if utilization and att.utilization is not None:
        rows = att.utilization.write(utilization, config.get(UTILIZATION_BIN), result.makespan_s)
        err.write(Utilization.summary_line(rows) + "\n")
    result.output = session.captured
    result.rank_job = {r: wl.jobs[i].name for r, i in launch.rank_job.items()}
    if solo and status in ("ok", "failed"):
        result.solo_runs = solo_times(wl, launch, cfg or {}, energy, err)
    result.cpu_s = time.process_time() - cpu0
    result.peak_rss_bytes = L._peak_rss()
    return result


def _jobs_status(recs: list[JobRecord]) -> tuple[str, int]:
    """The workload's status when the simulation itself went through: ``ok`` (exit code 0)
    when every job completed, else ``failed`` with the number of jobs that did not complete
    (timeout, failed, deadlock, or never started) as exit code (at most 100)."""
    bad = sum(1 for r in recs if r.status != J.DONE)
    return ("failed", min(bad, 100)) if bad else ("ok", 0)


def _culprit(world: World, launch: _BatchLaunch) -> str:
    """The job of the process that ended the simulation (an error, an abort), if any."""
    a = world.engine.aborting_actor
    p = a.data if a is not None else None
    if not isinstance(p, Process) or p.rank not in launch.rank_job:
        return ""
    job = launch.wl.jobs[launch.rank_job[p.rank]]
    return (f"\n[smpy] process {p.rank} is rank {p.comm_world.rank_of[p.rank]} of job '{job.name}' "
            f"({job.origin}); the whole workload stops with it (one simulation)")


def _result(wl: Workload, world: World, launch: _BatchLaunch, outcome: tuple[str, int, str, float],
            with_energy: bool) -> BatchResult:
    status, code, message, wall = outcome
    recs = launch.records
    plat = world.platform
    makespan = max([r.end_s for r in recs if r.end_s is not None] or [world.engine.now])
    node_s = sum(len(r.hosts) * r.run_s for r in recs if r.run_s is not None)
    node_s += sum((t1 if t1 is not None else makespan) - t0 for r in recs for _, t0, t1 in r.grown)
    core_s = sum(r.np * r.run_s for r in recs if r.run_s is not None)
    cores = sum(h.cores for h in plat.hosts)
    denom = makespan if makespan > 0 else math.inf
    energy = idle = None
    if with_energy and world.energy is not None:
        energy = world.energy.total()
        idle = launch.shares.finish() if launch.shares is not None else None
    return BatchResult(wl.source, plat.name, wl.scheduler, recs, makespan, node_s / (len(plat.hosts) * denom),
                       core_s / (cores * denom), energy, status, code, message, wall, 0.0,
                       world.engine.events_processed, 0, len(plat.hosts), energy_unattributed_J=idle)


def solo_times(wl: Workload, launch: _BatchLaunch, cfg: dict[str, Any], energy: bool, err: Any) -> int:
    """Each job's run time alone on its hosts with its placement (one simulation per distinct
    job: program, arguments, ranks and hosts); returns the number of simulations."""
    cache: dict[tuple, float | None] = {}
    placement: dict[int, list[str]] = {}
    for p in launch.world.processes:
        placement.setdefault(launch.rank_job[p.rank], []).append(p.host.name)
    for job, rec in zip(wl.jobs, launch.records):
        hosts = placement.get(job.index)
        if hosts is None or rec.status != J.DONE:  # alone, it would end as it did
            continue
        key = (job.program, job.module, tuple(job.args), job.np, tuple(hosts))
        if key not in cache:
            alone = Job(job.name, job.program, list(job.args), job.np, 0.0, hosts, None, None, job.module, 0,
                        job.origin)
            sub = simulate(Workload(wl.source, wl.platform, "none", [alone], wl.cfg), cfg, energy, solo=False,
                           err=err)
            cache[key] = sub.jobs[0].run_s if sub.status == "ok" else None
        rec.solo_s = cache[key]
    return len(cache)


# -- command line -------------------------------------------------------------------------
def build_parser(prog: str) -> Any:
    import argparse

    p = argparse.ArgumentParser(prog=prog, description="Simulate a workload of independent MPI jobs "
                                "sharing one platform (docs/workloads.md).", allow_abbrev=False)
    p.add_argument("workload", help="the workload file (YAML)")
    p.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="set a configuration item for every job (repeatable); wins over the file's cfg")
    p.add_argument("--energy", action="store_true", help="load the host energy plugin (on by default "
                   "when a host of the platform has a power profile)")
    p.add_argument("--no-solo", dest="solo", action="store_false",
                   help="do not simulate each job alone (no slowdown column)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the per-job report as JSON")
    p.add_argument("--report", default=None, metavar="PREFIX",
                   help="write PREFIX.jobs.csv (each job's times, energy, state, exit code and reason) and "
                   "PREFIX.utilization.csv: the platform's allocated, busy and MPI-waiting "
                   "cores, efficiency and power per time bin (--cfg=smpy/utilization-bin:DURATION)")
    p.add_argument("--plots", default=None, metavar="DIR", help="draw DIR/gantt.png (jobs over nodes) "
                   "and DIR/utilization.png (efficiency, cores and power over time)")
    p.add_argument("--html", default=None, metavar="FILE", help="write one self-contained HTML page: "
                   "totals, the per-job table, the utilisation per time bin and (with matplotlib) the "
                   "Gantt and utilisation figures (--plots DIR writes DIR/report.html too)")
    p.add_argument("--trace", default=None, metavar="FILE", help="write the timeline of every job: "
                   "Chrome/Perfetto JSON (a process per job, its wait and run phases, the node states), "
                   "or Paje when FILE ends in .paje or .trace (--cfg=smpy/trace-format:chrome|paje)")
    p.add_argument("--output", default=None, metavar="DIR",
                   help="write each job's output to DIR/JOB.out and DIR/JOB.err")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary, not the table")
    return p


def main(argv: list[str] | None = None, prog: str = "smpy batch") -> int:
    from smpy.cli.outputs import OutputError, check_dir, check_file
    from smpy.support.config import ConfigError

    ns = build_parser(prog).parse_args(argv)
    try:
        check_file(ns.json, "--json")
        check_dir(ns.plots, "--plots")
        check_dir(ns.output, "--output")
        check_file(ns.html, "--html")
        check_file(ns.trace, "--trace")
        if ns.report:
            check_file(f"{ns.report}.utilization.csv", "--report")
            check_file(f"{ns.report}.jobs.csv", "--report")
        cfg = dict(Config.parse_cfg_option(item) for item in ns.cfg)
        wl = load_workload(ns.workload)
        result = simulate(wl, cfg, ns.energy, ns.solo, utilization=_utilization_csv(ns), trace=ns.trace)
    except (WorkloadError, ConfigError, PlatformError, OutputError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    if not ns.quiet:
        print(result.table(), file=sys.stderr)
    print(result.summary(), file=sys.stderr)
    _write_outputs(ns, result, prog)
    return result.exit_code


def _utilization_csv(ns: Any) -> str | None:
    """Where the utilisation goes: PREFIX.utilization.csv, else (for the plot only)
    DIR/utilization.csv."""
    if ns.report:
        return f"{ns.report}.utilization.csv"
    if ns.plots:
        os.makedirs(ns.plots, exist_ok=True)
        return os.path.join(ns.plots, "utilization.csv")
    if ns.html:  # for the page only: next to it, removed once it is written
        return f"{ns.html}.utilization.csv"
    return None


def _write_outputs(ns: Any, result: BatchResult, prog: str) -> None:
    if ns.json:
        with open(ns.json, "w") as fh:
            json.dump(result.to_json(), fh, indent=2)
    if ns.report:
        result.write_jobs_csv(f"{ns.report}.jobs.csv")
    if ns.output:
        os.makedirs(ns.output, exist_ok=True)
        for j in result.jobs:
            for stream, suffix in (("stdout", "out"), ("stderr", "err")):
                with open(os.path.join(ns.output, f"{j.name}.{suffix}"), "w") as fh:
                    fh.write(result.job_output(j.name, stream))
    if ns.plots:
        try:
            from smpy.cli.batch_plot import gantt
            from smpy.trace.plots import read_utilization, utilization
            os.makedirs(ns.plots, exist_ok=True)
            path = gantt(result, os.path.join(ns.plots, "gantt.png"))
            print(f"[smpy] plots: {path}", file=sys.stderr)
            util = Path(_utilization_csv(ns) or "")
            if util.is_file() and read_utilization(util):
                print(f"[smpy] plots: {utilization(util, Path(ns.plots) / 'utilization.png')}", file=sys.stderr)
        except RuntimeError as exc:
            print(f"{prog}: plots: {exc}", file=sys.stderr)
    _write_html(ns, result)


def _write_html(ns: Any, result: BatchResult) -> None:
    """--html FILE and --plots DIR's DIR/report.html (smpy.cli.batch_plot.html_report)."""
    from smpy.cli.batch_plot import html_report

    util = _utilization_csv(ns)
    page = None
    if ns.plots:  # the figures --plots drew
        page = html_report(result, os.path.join(ns.plots, "report.html"), util, ns.plots, drawn=True)
        print(f"[smpy] html: {page}", file=sys.stderr)
    if ns.html:
        if page is not None:
            shutil.copyfile(page, ns.html)
        else:
            html_report(result, ns.html, util)
        print(f"[smpy] html: {ns.html}", file=sys.stderr)
    if util and not ns.report and not ns.plots:
        os.remove(util)
