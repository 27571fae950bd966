"""How a batch job ends (``smpy batch``, docs/workloads.md): completed, killed at its
walltime, failed, or deadlocked, without stopping the other jobs.

A job's end at simulated time :math:`t` (other than its last rank's return):

* its live actors (ranks, their threads and non-blocking collective helpers) are killed at
  :math:`t` (:func:`smpy.kernel.actors.kill`: their stacks unwind, ``finally`` blocks run);
  their ranks are *exempt* from the failure bookkeeping (:mod:`smpy.runtime.ulfm`): their
  end is not a process failure;
* the computations they waited for are cancelled (their cores are free at :math:`t`), and so
  are the job's network transfers still in flight (:class:`FlowOwners`: each flow belongs to
  the job of the actor that started it), which leave their links at :math:`t`;
* so are their file-system operations in flight (:func:`smpy.runtime.fsio.cancel_owned`:
  flows, disk operations, queued operations and cache waits, also of ranks that died with a
  failed host), so that the other jobs' I/O speeds up at :math:`t`;
* their memory (hosts with ``ram``) is released.

The caller then frees the job's nodes and runs the scheduler, as for a completed job.

A job's failure comes through :attr:`smpy.kernel.engine.Engine.abort_handler`: a rank
raising, calling ``MPI_Abort``, ``sys.exit(n != 0)`` or ``os._exit(n != 0)``, running out of
memory, the detection of a process death (its host failed), or a message lost on a failed
link (with auto-cleanup: the job of its sender and receiver; the jobs whose messages do not
cross the link go on). :func:`failure` gives the job's
exit code, its one-line reason and the full report (the single run's message).
"""

from __future__ import annotations

from typing import Any

from smpy.cli import launch as L
from smpy.cpu.memory import OutOfMemory
from smpy.cpu.model import Exec
from smpy.kernel.actors import ActorKilled, current_actor, kill
from smpy.kernel.watchdog import Stalled
from smpy.runtime import fsio, ulfm
from smpy.runtime.lifecycle import AbortCalled
from smpy.runtime.world import Process, World
from smpy.shim.isolation import RankExit
from smpy.support.internal import SmpyInternalError

DONE, TIMEOUT, FAILED, DEADLOCK = "done", "timeout", "failed", "deadlock"
#: exit code of a job killed at its walltime (as timeout(1), and single runs' --sim-timeout)
TIMEOUT_EXIT = 124
#: exit code of a deadlocked job (as a single run's deadlock)
DEADLOCK_EXIT = 1


class FlowOwners:
    """The network transfers in flight of each running job (to cancel them when it is
    killed). A flow belongs to the job of the actor that starts it: the sender (eager), or
    the rank that matches a rendezvous; both are ranks of the job (a job's communicators are
    its own). The sets are pruned of finished flows when they double."""

    def __init__(self, world: World, job_of_rank: dict[int, int]) -> None:
        self.job_of_rank = job_of_rank
        self.flows: dict[int, dict[Any, None]] = {}
        self.pruned: dict[int, int] = {}
        world.net.on_flow_start.connect(self._started)

    def _started(self, flow: Any) -> None:
        a = current_actor()
        p = a.data if a is not None else None
        if not isinstance(p, Process):
            return
        job = self.job_of_rank.get(p.rank)
        if job is None:
            return
        live = self.flows.get(job)
        if live is None:
            live = self.flows[job] = {}
        live[flow] = None
        if len(live) >= 2 * self.pruned.get(job, 64):
            for f in [f for f in live if f.done]:
                del live[f]
            self.pruned[job] = max(64, len(live))

    def forget(self, job: int) -> list[Any]:
        """The job's flows still running (and forget them all)."""
        self.pruned.pop(job, None)
        return [f for f in self.flows.pop(job, {}) if not f.done]


def kill_job(world: World, job: int, job_of_rank: dict[int, int], flows: FlowOwners) -> None:
    """End ``job``'s actors, computations and transfers now (from the maestro; see the
    module docstring)."""
    actors = [a for a in world.engine.actors if a.alive and isinstance(a.data, Process)
              and job_of_rank.get(a.data.rank) == job]
    exempt = world.ft.exempt if world.ft is not None else set()
    for a in actors:
        exempt.add(a.data.rank)
    for a in actors:
        waited = a.waiting_for
        kill(a)
        for act in waited if isinstance(waited, list) else [waited]:
            if isinstance(act, Exec) and not act.done and not act.waiters:
                act.cancel()  # its cores are free now; no energy is drawn for it any more
    for f in flows.forget(job):
        f.callbacks = None  # nobody is left to receive it
        f.cancel()  # leaves its links now: the other flows get the bandwidth
    owners = getattr(world, "io_owners", None)
    if owners:
        fsio.cancel_owned(world, [a for a in owners if isinstance(a.data, Process)
                                  and job_of_rank.get(a.data.rank) == job])
    if world.memory is not None:
        for a in actors:
            if a.data.actor is a:
                world.memory.release(a.data)


def handled(exc: BaseException) -> bool:
    """Whether a failure of a job's rank ends that job only (a failure of the program, not a
    stop of the whole emulation: Ctrl-C, a stall, a bug of smpy)."""
    return not isinstance(exc, (KeyboardInterrupt, Stalled, SmpyInternalError, ActorKilled))


def failure(world: World, exc: BaseException, actor: Any, job: int, job_of_rank: dict[int, int]) -> tuple[int, str, str]:
    """(exit code, one-line reason, full report as for a single run) of job ``job`` ended by
    ``exc`` (raised by ``actor``, or a process failure: its own lost ranks only)."""
    if isinstance(exc, ulfm.ProcessFailure):
        exc = ulfm.ProcessFailure(exc.time, {r: t for r, t in exc.lost.items() if job_of_rank.get(r) == job},
                                  exc.cause, exc.ranks)
    _, code, message = L._failure(world, exc, actor)
    t = world.engine.now
    p = actor.data if actor is not None else None
    who = (f"rank {p.comm_world.rank_of[p.rank]} (host {p.host.name})"
           if isinstance(p, Process) and p.comm_world is not None else "a process")
    if isinstance(exc, ulfm.ProcessFailure):
        if exc.cause:
            reason = f"{exc.cause}; the job was aborted at {exc.time:.9g} s"
        else:
            lost = sorted(exc.lost)
            hosts = sorted({world.processes[r].host.name for r in lost})
            reason = (f"host {', '.join(hosts)} failed at {min(exc.lost.values()):.9g} s (processes "
                      f"{L._ranges(lost)} lost); the job was aborted at {exc.time:.9g} s")
    elif isinstance(exc, AbortCalled):
        reason = f"MPI_Abort({exc.errorcode}) called by {who} at {t:.9g} s"
    elif isinstance(exc, OutOfMemory):
        reason = f"out of memory on host {exc.host} at {t:.9g} s (killed by the OOM killer)"
    elif isinstance(exc, RankExit):
        reason = f"{who} called os._exit({exc.status}) at {t:.9g} s"
    elif isinstance(exc, SystemExit):
        reason = f"{who} exited with status {exc.code} at {t:.9g} s"
    else:
        text = str(exc).split("\n", 1)[0]
        reason = f"{who} raised {type(exc).__name__}{': ' + text if text else ''} at {t:.9g} s"
    if not isinstance(exc, (ulfm.ProcessFailure, OutOfMemory)):  # the run-wide last line: the reason says it
        message = "\n".join(line for line in message.rstrip("\n").split("\n")[:-1])
    return code, reason, message


def failed_jobs(actor: Any, exc: BaseException, job_of_rank: dict[int, int]) -> list[int]:
    """The jobs a failure ends: the failing actor's, or those of the lost ranks."""
    if isinstance(exc, ulfm.ProcessFailure):  # a link's failure (a cause): the jobs of the lost message
        ranks = exc.ranks if exc.cause else exc.lost
        return sorted({job_of_rank[r] for r in ranks if r in job_of_rank})
    p = actor.data if actor is not None else None
    if isinstance(p, Process) and p.rank in job_of_rank:
        return [job_of_rank[p.rank]]
    return []


def deadlock_lines(world: World, name: str, blocked: list[tuple[Any, str]], now: float) -> list[str]:
    """The report of a deadlocked job: what each of its blocked ranks waits for."""
    lines = [f"[smpy] DEADLOCK of job '{name}' at simulated time {now:.9g} s: its live ranks are "
             "blocked and nothing can wake them; the job ends, its nodes are freed"]
    for actor, what in blocked:
        p = actor.data
        lines.append(f"[smpy]   rank {p.comm_world.rank_of[p.rank]} (process {p.rank}, host {p.host.name}): "
                     f"blocked in {what}")
    return lines
