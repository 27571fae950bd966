"""Starting collective calls, blocking or not.

A collective call is a *schedule* ``work(ctx)``: run the selected algorithm, then store the
result (unpack into the receive buffer, or return an object). :func:`start` draws the
call's sequence number (its tags) in the calling rank, in program order, then

* blocking (MPI_Bcast…): runs ``work`` right away in the calling rank;
* non-blocking (MPI_Ibcast…): runs ``work`` in a helper kernel actor on the rank's host,
  sharing the rank's context (its ``__main__``, modules, pickle), and returns a
  :class:`CollRequest` that completes when the schedule ends. The rank keeps computing
  meanwhile, so communication and computation overlap in simulated time — as with MPI
  progress threads or SMPI's asynchronous NBC requests.

MPI errors raised by the schedule (truncation when unpacking) are stored in the request
and raised by ``Wait``, like any request error; anything else aborts the simulation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.colls.core import Ctx
from smpy.colls.dispatch import selection
from smpy.kernel.actors import Actor
from smpy.runtime import errors, ulfm
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, COLL
from smpy.runtime.p2p import NULL_KIND, Request

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

Work = Callable[[Ctx], Any]


class CollRequest(Request):
    """The request of a non-blocking collective: completes with its schedule.

    Status fields are those of an MPI collective request: source ANY_SOURCE, tag ANY_TAG,
    error 0 (or the error class the schedule hit), 0 bytes. ``result`` holds what the
    schedule returned (e.g. the object of a lowercase collective).
    """

    __slots__ = ("result", "helper")

    def __init__(self, owner: Process, comm: CommImpl, call: str) -> None:
        super().__init__(owner, NULL_KIND, comm, COLL, call, ANY_SOURCE, ANY_TAG)
        self.source = ANY_SOURCE
        self.result: Any = None
        self.helper: Actor | None = None

    def describe(self) -> str:
        comm = self.comm.describe() if self.comm is not None else "?"
        h = self.helper
        inner = ""
        if h is not None and h.alive and h.waiting_for is not None:
            inner = f", in progress: {h.describe_wait()}"
        return f"{self.call}(comm={comm}){inner}"


def _run_helper(req: CollRequest, work: Work, ctx: Ctx) -> None:
    try:
        req.result = work(ctx)
    except errors.MPIException as exc:
        req.error = getattr(exc, "error_class", errors.ERR_OTHER) or errors.ERR_OTHER
        req.payload = str(exc)
    req._finish()


def start(proc: Process, comm: CommImpl, call: str, work: Work, nonblocking: bool = False,
          ti: tuple | None = None) -> Any:
    """Run collective ``work`` now (blocking), or in a helper actor (returns a request).

    ``ti``: the action and its arguments for a time-independent trace (smpy.trace.ti), when
    one is recorded (blocking collectives on intracommunicators only, as SMPI's format has no
    others)."""
    if (not nonblocking and proc.world.ti is not None and (ti is not None or call == "MPI_Barrier")
            and comm.remote is None):
        proc.world.ti.collective(proc.rank, comm.group, ti or ("barrier",))
    if comm.revoked or (proc.world.ft is not None and proc.world.ft.detected):
        ulfm.check_coll(proc, comm, call)  # ERR_REVOKED, or ERR_PROC_FAILED with a dead member
    ctx = Ctx.start(proc, comm, call, selection(proc.world))
    if not nonblocking:
        return work(ctx)
    req = CollRequest(proc, comm, call)
    helper = Actor(proc.world.engine, f"rank {proc.rank} ({call})", _run_helper, (req, work, ctx),
                   host=proc.host, data=proc, pid=proc.rank)
    if proc.actor is not None:
        helper.context = proc.actor.context
    req.helper = helper
    helper.start()
    return req
