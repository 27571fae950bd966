r"""Process failures as MPI sees them: Hydra's job abort, or ULFM's errors, revoke, agree, shrink.

A rank dies when its host fails (its actor is killed, :func:`smpy.kernel.actors.kill`). Its
death is *detected* ``smpy/failure-detection-delay`` seconds later (default 1 ms: MPICH's
Hydra sees the process exit at once, a ULFM heartbeat detector within milliseconds). Then:

* **auto-cleanup** (``smpy/auto-cleanup:yes``, Hydra's default; ``smpyrun
  --disable-auto-cleanup`` as ``mpiexec -disable-auto-cleanup``), or a survivor whose
  MPI_COMM_WORLD has ``ERRORS_ARE_FATAL``: the job is aborted
  (:class:`ProcessFailure`), the run ends with status ``failed``;
* otherwise (ULFM): every pending operation that involves the dead rank fails with
  ``MPI.ERR_PROC_FAILED``: receives from it, non-detached sends to it, probes of it, and
  every pending collective receive on a communicator that contains it; a pending receive
  from ``MPI_ANY_SOURCE`` on such a communicator fails with ``ERR_PROC_FAILED_PENDING``
  unless the failure was acknowledged (``Ack_failed``). Later operations naming a dead peer
  fail at once, as do collectives on a communicator with a dead member. Messages whose
  transfer began before the death are delivered; those not started are lost.

``revoke(comm)`` marks the communicator (both sides of an intercommunicator) revoked: its
pending operations fail with ``ERR_REVOKED``, as does every later one except the ULFM calls.

**Agreement** (``Agree``/``Iagree``, and ``Shrink``) over the survivors: each live member
contributes its flag; when the last live member has arrived at time :math:`t_a`, everyone
gets the bitwise AND at :math:`t_a + 2 \lceil \log_2 n \rceil\, h`, :math:`n` the number of
survivors and :math:`h` the time of one 4-byte message on the slowest route from the lowest
surviving rank (sum of its link latencies plus 4 bytes over its narrowest link): a binomial
reduction then a broadcast, the cost of an agreement without further failures (ERA's
failure-free path). Contention is not modelled. ``Shrink`` is an agreement on the set of
failed processes followed by the creation of the survivors' communicator (same cost). A
member that dies before the agreement completes is left out when its death is detected. An
agreement raises ``ERR_PROC_FAILED`` on a process that has not acknowledged every failure of
the communicator (the AND is still computed), as MPIX_Comm_agree does.
Error classes are mpi4py's on MPICH (``MPI.ERR_PROC_FAILED`` etc. are ``ERR_UNKNOWN`` there).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import Trigger
from smpy.kernel.actors import block_on
from smpy.runtime import errors
from smpy.runtime.constants import ANY_SOURCE, COLL
from smpy.runtime.p2p import NULL_KIND, Request
from smpy.support.config import declare, parse_bool, parse_float

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process, World

DETECTION_DELAY = declare("smpy/failure-detection-delay", 1e-3, "Simulated time between a process "
                          "failure and its detection by the others (the job's abort, or ULFM errors), s",
                          parse=parse_float)
AUTO_CLEANUP = declare("smpy/auto-cleanup", True, "Abort the whole job when a process fails, as Hydra "
                       "does by default (no: ULFM semantics, as mpiexec -disable-auto-cleanup)",
                       parse=parse_bool)

PROC_FAILED_TEXT = "Process failed"
PENDING_TEXT = "Operation pending due to process failure"
REVOKED_TEXT = "Communication object revoked"


class ProcessFailure(Exception):
    """The job is aborted because processes failed (Hydra's cleanup after a process death),
    or a transfer failed (``cause``: a link failed)."""

    def __init__(self, time: float, lost: dict[int, float], cause: str = "", ranks: tuple[int, ...] = ()) -> None:
        self.time = time
        self.lost = dict(lost)
        self.cause = cause
        #: with ``cause``: the world ranks whose message was lost (``smpy batch`` ends their jobs)
        self.ranks = ranks
        super().__init__(cause or f"{len(lost)} process(es) failed")


class FtState:
    """A world's failure bookkeeping (``world.ft``)."""

    # read at every message (issue 24): a slot; the others stay in the instance dict
    __slots__ = ("detected", "__dict__", "__weakref__")

    def __init__(self, world: World, delay: float, auto_cleanup: bool) -> None:
        self.world = world
        self.delay = delay
        self.auto_cleanup = auto_cleanup
        #: world rank -> simulated time of death, and those detected so far (in detection order)
        self.dead: dict[int, float] = {}
        self.detected: dict[int, float] = {}
        #: (comm context, world rank of the acknowledging process) -> failures acknowledged
        self.acked: dict[tuple[int, int], int] = {}
        #: (comm id, sequence, key) -> pending agreement
        self.agreements: dict[tuple[int, int, Any], _Agreement] = {}
        self.seq: dict[tuple[int, int], int] = {}
        #: world ranks ended on purpose, not failures (``smpy batch``: a job killed at its
        #: walltime, or after another of its ranks failed)
        self.exempt: set[int] = set()

    # called by smpy.runtime.p2p (which cannot import this module: it is imported by it)
    def check_peer(self, proc: Process, comm: CommImpl, peer: int, call: str,
                   channel: int = 0) -> errors.MPIException | None:
        return check_peer(proc, comm, peer, call, channel)

    def transfer_failed(self, call: str, cause: Any, ranks: tuple[int, ...] = ()) -> errors.MPIException | None:
        return transfer_failed(self.world, call, cause, ranks)


def install(world: World, delay: float, auto_cleanup: bool) -> FtState:
    st = world.ft = FtState(world, delay, auto_cleanup)
    world.engine.on_actor_end.connect(lambda actor: _ended(world, actor))
    return st


def _ended(world: World, actor: Any) -> None:
    p = actor.data
    if not actor.killed or getattr(p, "actor", None) is not actor or getattr(p, "world", None) is not world:
        return
    st = world.ft
    if p.rank in st.exempt:
        return
    st.dead[p.rank] = world.engine.now
    world.engine.schedule(st.delay, _detect, world, p.rank)


def _fatal_world(world: World) -> bool:
    """Whether a live process set ERRORS_ARE_FATAL on its MPI_COMM_WORLD (mpi4py's default is
    ERRORS_RETURN; the handlers are the facade's, found by duck typing)."""
    for p in world.processes:
        if p.rank in world.ft.dead or p.actor is None or not p.actor.alive:
            continue
        st = p.attrs.get("errhandlers")
        h = st.handlers.get(p.comm_world) if st is not None else None
        if getattr(h, "fatal", False):
            return True
    return False


def _detect(world: World, rank: int) -> None:
    st = world.ft
    if rank in st.detected:
        return
    st.detected[rank] = st.dead[rank]
    if st.auto_cleanup or _fatal_world(world):
        world.engine.abort(ProcessFailure(world.engine.now, st.dead))
        return
    for comm in list(world.comms):
        if rank in comm.rank_of or rank in _remote_ranks(comm):
            _fail_pending(world, comm, rank)
    for ag in list(st.agreements.values()):
        ag.check()


def transfer_failed(world: World, call: str, cause: Any, ranks: tuple[int, ...] = ()) -> errors.MPIException | None:
    """A message's transfer failed (a link of its route failed). With auto-cleanup the job is
    aborted after the detection delay, as MPICH's fatal network error ends it, and the requests
    stay pending (None); otherwise their error (ERR_OTHER: a communication failure).
    ``ranks``: the world ranks of the message's sender and receiver (the abort names them, so
    that ``smpy batch`` ends their job only)."""
    st = world.ft
    if st is not None and st.auto_cleanup:
        when = world.engine.now
        world.engine.schedule(st.delay, lambda: world.engine.abort(
            ProcessFailure(world.engine.now, st.dead, f"{cause} at simulated time {when:.9g} s; "
                           "a message crossing it was lost", ranks)))
        return None
    return errors.make_error(errors.ERR_OTHER, f"{call}: communication failure: {cause}")


def _remote_ranks(comm: CommImpl) -> Any:
    return comm.rgroup if comm.remote is not None else ()


def proc_failed(detail: str, cls: int = errors.ERR_PROC_FAILED, text: str = PROC_FAILED_TEXT) -> errors.MPIException:
    """An MPI error of class ``cls`` with MPICH's text for it. The text is given apart: with
    MPICH, mpi4py's ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING and ERR_REVOKED are one class."""
    return errors.make_error(cls, f"{detail}: {text}")


def revoked_error(detail: str) -> errors.MPIException:
    return proc_failed(detail, errors.ERR_REVOKED, REVOKED_TEXT)


def _fail_pending(world: World, comm: CommImpl, rank: int) -> None:
    """Fail the pending operations of ``comm`` that involve dead world rank ``rank``."""
    st = world.ft
    dead_src = comm.rgroup.index(rank) if rank in comm.rgroup else -1
    for channel in (0, 1):
        for i, box in enumerate(comm.boxes[channel]):
            owner = comm.group[i]
            if owner in st.dead:
                continue
            keep = []
            for r in box.posted:
                if channel == COLL:
                    r._fail(proc_failed(f"{r.call} on {comm.describe()}: a member failed"))
                elif r.peer == dead_src:
                    r._fail(proc_failed(f"{r.call}: peer {r.peer} of {comm.describe()} failed"))
                elif r.peer == ANY_SOURCE and not _acked_all(comm, owner):
                    r._fail(proc_failed(f"{r.call}(MPI_ANY_SOURCE) on {comm.describe()}",
                                        errors.ERR_PROC_FAILED_PENDING, PENDING_TEXT))
                else:
                    keep.append(r)
            box.posted = keep
            box.unexpected = [s for s in box.unexpected if not (s.src_local == dead_src and s.owner.rank == rank
                                                                  and not s.arrived)]
            for w in list(box.probers):
                if w.source in (dead_src, ANY_SOURCE):
                    box.probers.remove(w)
                    w._fail(proc_failed(f"MPI_Probe on {comm.describe()}"))
        if rank in comm.rank_of and comm.remote is None:
            box = comm.boxes[channel][comm.rank_of[rank]]
            for s in box.unexpected:
                if s.state == 0:
                    s._fail(proc_failed(f"{s.call}: destination {s.peer} of {comm.describe()} failed"))
            box.unexpected = []
    _fail_collective_sends(comm)


def _fail_collective_sends(comm: CommImpl) -> None:
    """A collective's messages not yet delivered on a communicator with a failed member: no
    survivor will receive them (its schedule failed, or will at its next step, see
    :func:`check_peer`), so their senders fail instead of waiting for ever (ULFM: no call
    blocks indefinitely after a failure)."""
    for box in comm.boxes[COLL]:
        for s in box.unexpected:
            if s.state == 0 and not s.arrived:
                s._fail(proc_failed(f"{s.call} on {comm.describe()}: a member failed"))
        box.unexpected = []


def _acked_all(comm: CommImpl, owner: int) -> bool:
    return comm.world.ft.acked.get((comm.context, owner), 0) >= len(failed_members(comm))


# ------------------------------------------------------------------ checks on new operations
def check_peer(proc: Process, comm: CommImpl, peer: int, call: str, channel: int = 0) -> errors.MPIException | None:
    """The error of a new point-to-point operation with local ``peer`` (None: go ahead).
    Called only when the communicator is revoked or some process died. On the collective
    channel (a step of a collective's schedule, blocking or not) any detected failed member
    fails the step: the failed member's part is missing, and a survivor whose schedule failed
    will not send its part either."""
    if comm.revoked:
        return revoked_error(f"{call} on {comm.describe()}")
    st = proc.world.ft
    if channel == COLL and st is not None and st.detected and failed_members(comm):
        return proc_failed(f"{call} on {comm.describe()}: a member failed")
    if st is None or not st.detected or peer < 0:
        if peer == ANY_SOURCE and st is not None and st.detected and not _acked_all(comm, proc.rank) \
                and failed_members(comm):
            return proc_failed(f"{call}(MPI_ANY_SOURCE) on {comm.describe()}", errors.ERR_PROC_FAILED_PENDING,
                               PENDING_TEXT)
        return None
    if peer < len(comm.rgroup) and comm.rgroup[peer] in st.detected:
        return proc_failed(f"{call}: peer {peer} of {comm.describe()} failed")
    return None


def check_coll(proc: Process, comm: CommImpl, call: str) -> None:
    """Raise the error of a new collective on ``comm`` (revoked, or with a dead member)."""
    if comm.revoked:
        raise revoked_error(f"{call} on {comm.describe()}")
    if failed_members(comm):
        raise proc_failed(f"{call} on {comm.describe()}: a member failed")


def failed_members(comm: CommImpl) -> list[int]:
    """World ranks of the detected failed members of ``comm`` (both groups), detection order."""
    st = comm.world.ft
    if st is None or not st.detected:
        return []
    members = set(comm.group) | set(comm.rgroup)
    return [r for r in st.detected if r in members]


# --------------------------------------------------------------------------- ULFM calls
def enabled(world: World) -> bool:
    """ULFM mode: failures do not end the job (``smpy/auto-cleanup:no``)."""
    return world.ft is not None and not world.ft.auto_cleanup


def revoke(proc: Process, comm: CommImpl) -> None:
    if proc.world.ft is None:
        install(proc.world, 0.0, True)
    sides = [comm] if comm.pair is None else [comm.pair.a, comm.pair.b]
    for c in sides:
        c.revoked = True
    for c in sides:
        for channel in (0, 1):
            for box in c.boxes[channel]:
                for r in box.posted:
                    r._fail(revoked_error(f"{r.call} on {c.describe()}"))
                box.posted = []
                for s in box.unexpected:
                    if s.state == 0:
                        s._fail(revoked_error(f"{s.call} on {c.describe()}"))
                box.unexpected = []
                for w in box.probers:
                    w._fail(revoked_error(f"MPI_Probe on {c.describe()}"))
                box.probers = []
    st = proc.world.ft
    if st is not None:
        for ag in list(st.agreements.values()):
            ag.check()


def get_failed(proc: Process, comm: CommImpl) -> list[int]:
    """World ranks of the failed processes of ``comm`` this process knows of."""
    return failed_members(comm)


def ack_failed(proc: Process, comm: CommImpl, num_to_ack: int | None) -> int:
    """Acknowledge the first ``num_to_ack`` known failures (all: None); the number acknowledged."""
    known = len(failed_members(comm))
    key = (comm.context, proc.rank)
    acked = comm.world.ft.acked if comm.world.ft is not None else {}
    n = known if num_to_ack is None else min(known, max(acked.get(key, 0), int(num_to_ack)))
    if comm.world.ft is not None:
        acked[key] = n
    return n


class _Agreement:
    """One fault-tolerant agreement on a communicator (see the module notes for the cost)."""

    def __init__(self, world: World, comm: CommImpl, key: tuple) -> None:
        self.world = world
        self.comm = comm
        self.key = key
        self.flags: dict[int, int] = {}
        self.trigger = Trigger(world.engine, f"MPIX_Comm_agree(comm={comm.describe()})")
        #: world rank -> its result (an intercommunicator's side gets the remote group's AND)
        self.values: dict[int, int] = {}
        self.survivors: list[int] = []
        self.done = False
        self.newcomm: Any = None  # Shrink's result, built by the first member to finish

    def groups(self) -> tuple[list[int], list[int]]:
        c = self.comm
        if c.pair is None:
            return list(c.group), []
        return list(c.pair.a.group), list(c.pair.b.group)

    def check(self) -> None:
        if self.done:
            return
        dead = self.world.ft.detected
        a, b = self.groups()
        alive_a = [r for r in a if r not in dead]
        alive_b = [r for r in b if r not in dead]
        alive = alive_a + alive_b
        if any(r not in self.flags for r in alive):
            return
        self.done = True
        del self.world.ft.agreements[self.key]
        and_a = _and(self.flags[r] for r in alive_a)
        and_b = _and(self.flags[r] for r in alive_b)
        for r in alive_a:
            self.values[r] = and_b if b else and_a
        for r in alive_b:
            self.values[r] = and_a
        self.survivors = alive
        self.world.engine.schedule(agreement_cost(self.world, sorted(alive)), self.trigger.fire)


def _and(flags: Any) -> int:
    v = -1
    for f in flags:
        v &= f
    return v


def agreement_cost(world: World, ranks: list[int]) -> float:
    r""":math:`2 \lceil \log_2 n \rceil h` (module notes); 0 for a single survivor."""
    n = len(ranks)
    if n <= 1:
        return 0.0
    root = world.processes[ranks[0]].host
    h = 0.0
    for r in ranks[1:]:
        route = world.route(root, world.processes[r].host)
        lat = sum(lnk.latency_s for lnk in route)
        bw = min((lnk.bandwidth_Bps for lnk in route), default=math.inf)
        h = max(h, lat + (4.0 / bw if bw > 0 else 0.0))
    return 2 * math.ceil(math.log2(n)) * h


def start_agreement(proc: Process, comm: CommImpl, flag: int, key: Any = None) -> _Agreement:
    """Contribute ``flag`` to this process's next agreement on ``comm`` (``key`` None: Agree;
    ``"shrink"``: Shrink's)."""
    st = proc.world.ft
    if st is None:
        st = install(proc.world, 0.0, True)
    sk = (id(comm.pair) if comm.pair is not None else comm.context, proc.rank)
    seq = st.seq.get(sk, 0)
    st.seq[sk] = seq + 1
    k = (sk[0], seq, key)
    ag = st.agreements.get(k)
    if ag is None:
        ag = st.agreements[k] = _Agreement(proc.world, comm, k)
    ag.flags[proc.rank] = int(flag)
    ag.check()
    return ag


def agreement_error(proc: Process, comm: CommImpl, ag: _Agreement) -> errors.MPIException | None:
    """ERR_PROC_FAILED for a plain agreement seen by a process with unacknowledged failures."""
    if ag.key[2] is None and comm.world.ft.acked.get((comm.context, proc.rank), 0) < len(failed_members(comm)):
        return proc_failed(f"MPIX_Comm_agree on {comm.describe()}: unacknowledged failures")
    return None


def agree(proc: Process, comm: CommImpl, flag: int) -> int:
    """MPIX_Comm_agree: the AND of the survivors' flags (see the module notes)."""
    ag = start_agreement(proc, comm, flag)
    block_on(ag.trigger, lambda: f"MPIX_Comm_agree on {comm.describe()}")
    err = agreement_error(proc, comm, ag)
    if err is not None:
        raise err
    return ag.values[proc.rank]


def iagree(proc: Process, comm: CommImpl, flag: int, store: Any) -> Request:
    """MPIX_Comm_iagree: a request that stores the agreed value (``store(value)``) when done."""
    ag = start_agreement(proc, comm, flag)
    req = Request(proc, NULL_KIND, comm, COLL, "MPIX_Comm_iagree", ANY_SOURCE, -1)

    def done(_t: Any) -> None:
        store(ag.values[proc.rank])
        err = agreement_error(proc, comm, ag)
        if err is not None:
            req._fail(err)
        else:
            req._finish()

    ag.trigger.add_callback(done)
    return req


def shrink(proc: Process, comm: CommImpl) -> CommImpl:
    """MPIX_Comm_shrink: agree on the failed processes, then the survivors' communicator
    (ranks in the old order; an intercommunicator keeps its two groups)."""
    ag = start_agreement(proc, comm, 0, "shrink")
    block_on(ag.trigger, lambda: f"MPIX_Comm_shrink on {comm.describe()}")
    if ag.newcomm is None:
        keep = set(ag.survivors)
        a, b = ag.groups()
        if comm.pair is None:
            from smpy.runtime.comm import CommImpl

            ag.newcomm = CommImpl(proc.world, [r for r in a if r in keep], "")
        else:
            from smpy.runtime.inter import make_pair

            pair = comm.pair
            ag.newcomm = make_pair(proc.world, [r for r in a if r in keep], [r for r in b if r in keep],
                                   pair.low is pair.a)
    new = ag.newcomm
    if comm.pair is None:
        return new
    return new.a if proc.rank in new.a.rank_of else new.b
