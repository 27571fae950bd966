"""Point-to-point protocol: matching, detached/eager/rendezvous transfers, probes.

Protocol (SMPI's, see docs/research: smpi_request.cpp)
------------------------------------------------------
A send of ``n`` payload bytes puts ``n + 16`` bytes (envelope) on the wire.

* The envelope is matched at once against the receiver's posted receives (first fit in
  posting order); if none fits, it waits in the receiver's *unexpected* list.
* *Eager* sends (``n < smpi/async-small-thresh``, default 0 = off) start the network
  transfer immediately; otherwise the transfer starts when send and receive are matched
  (rendezvous).
* *Detached* sends (``n < smpi/send-is-detached-thresh``, default 65536, never for
  synchronous sends) complete for the sender at once (the buffer was copied); others
  complete when the transfer ends. The receive completes when the transfer ends.
* ``Test`` and ``Iprobe`` inject ``k × smpi/test`` (resp. ``smpi/iprobe``) seconds, ``k``
  counting consecutive unsuccessful calls (reset on success), so that polling loops
  advance simulated time instead of spinning forever.

Payloads are opaque to this module: ``bytes`` for buffer messages (unpacked into the
receive buffer on delivery, checking truncation), a ``memoryview`` borrowed from the
sender's memory until the send completes (the facade's contiguous sends,
:func:`smpy.runtime.packing.pack_message`), a ``FoldedPayload`` for messages sent from
folded memory (smpy.support.folded: only bytes private in both buffers are copied), or any
object for pickled messages.

Copies (issue 24 item 2: none that a real MPI library would not make; counted by
:mod:`smpy.runtime.copies` when a ledger is installed). A borrowed payload is copied once:

* a send that completes only at delivery (rendezvous, synchronous): at delivery, from the
  sender's memory straight into the receive buffer;
* a detached send whose receive is already posted: at the send, straight into the receive
  buffer (the receive still completes when the transfer ends; MPI lets a receive buffer
  change before its completion);
* a detached send that arrives unexpected: at the send, into staging bytes (immutable
  ``bytes`` objects are kept as they are), then into the receive buffer at delivery.

The compiled path (``_p2paccel.c``) skips a large P2P copy whose bytes are already in
place: same source, destination and length as an earlier copy, with the send and the receive
both posted before it (MPI forbids touching either buffer meanwhile; docs/performance.md,
"Payload already in place"). This module, the reference, copies every time.

Simulated time never depends on where or when the bytes are copied.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smpy.kernel import accel as _accel
from smpy.kernel.activity import FAILED, Activity, Sleep, Trigger
from smpy.kernel.actors import block_on, block_on_any
from smpy.runtime import copies as _copies
from smpy.runtime import errors
from smpy.runtime.comm import CommImpl, matches
from smpy.runtime.constants import (
    ANY_SOURCE,
    ANY_TAG,
    COLL,
    ENVELOPE_BYTES,
    P2P,
    PROC_NULL,
    ROOT,
    TAG_UB,
)
from smpy.support import cext
from smpy.support import folded as _folded
from smpy.support.folded import FoldedPayload

if TYPE_CHECKING:
    from smpy.runtime.world import Process

SEND, RECV, NULL_KIND = 0, 1, 2
#: a detached send's payload once copied into its matched receive's buffer
_LANDED: Any = object()


class Request(Activity):
    """A non-blocking operation; an activity that completes with the operation.

    Status fields follow MPI: ``source``/``tag`` of the matched message, ``nbytes``
    received, ``error`` class, ``cancelled``.
    """

    __slots__ = ("kind", "comm", "channel", "owner", "call", "peer", "tag", "source", "nbytes",
                 "error", "cancelled", "payload", "buf", "datatype", "persistent", "user_data", "ti",
                 "polled")

    def __init__(self, owner: Process, kind: int, comm: CommImpl | None, channel: int, call: str,
                 peer: int, tag: int) -> None:
        super().__init__(owner.world.engine)
        self.kind = kind
        self.owner = owner
        self.comm = comm
        self.channel = channel
        self.call = call
        self.peer = peer
        self.tag = tag
        self.source = peer
        self.nbytes = 0
        self.error = 0
        self.cancelled = False
        self.payload: Any = None
        self.buf: Any = None
        self.datatype: Any = None
        self.persistent = False
        self.user_data: Any = None
        #: time-independent trace bookkeeping (smpy.trace.ti), when recording
        self.ti: Any = None

    def describe(self) -> str:
        comm = self.comm.describe() if self.comm is not None else "?"
        if self.channel == COLL:
            verb = "sending to" if self.kind == SEND else "waiting for data from"
            return f"{self.call}(comm={comm}): {verb} rank {self.peer}"
        who = "dest" if self.kind == SEND else "source"
        peer = "MPI_ANY_SOURCE" if self.peer == ANY_SOURCE else str(self.peer)
        tag = "MPI_ANY_TAG" if self.tag == ANY_TAG else str(self.tag)
        return f"{self.call}({who}={peer}, tag={tag}, comm={comm})"


class SendRequest(Request):
    __slots__ = ("dest_box", "flow", "arrived", "match", "detached", "sync", "src_local", "posted_at")

    def __init__(self, owner: Process, comm: CommImpl, channel: int, call: str, dest: int, tag: int) -> None:
        # Request.__init__ and Activity.__init__, inlined (one call per request instead of three)
        engine = self.engine = owner.world.engine
        self.state = 0  # RUNNING
        self.waiters = []
        self.callbacks = None
        self.exception = None
        self.start_time = engine.now
        self.finish_time = -1.0
        self.kind = SEND
        self.owner = owner
        self.comm = comm
        self.channel = channel
        self.call = call
        self.peer = dest
        self.tag = tag
        self.source = dest
        self.nbytes = 0
        self.error = 0
        self.cancelled = False
        self.payload = None
        self.buf = None
        self.datatype = None
        self.persistent = False
        self.user_data = None
        self.ti = None
        self.flow: Activity | None = None
        self.arrived = False
        self.match: RecvRequest | None = None
        self.detached = False
        self.sync = False
        self.src_local = -1
        self.posted_at = 0.0


class RecvRequest(Request):
    __slots__ = ("match",)

    def __init__(self, owner: Process, comm: CommImpl, channel: int, call: str, source: int, tag: int) -> None:
        # Request.__init__ and Activity.__init__, inlined (as SendRequest's)
        engine = self.engine = owner.world.engine
        self.state = 0  # RUNNING
        self.waiters = []
        self.callbacks = None
        self.exception = None
        self.start_time = engine.now
        self.finish_time = -1.0
        self.kind = RECV
        self.owner = owner
        self.comm = comm
        self.channel = channel
        self.call = call
        self.peer = source
        self.tag = tag
        self.source = source
        self.nbytes = 0
        self.error = 0
        self.cancelled = False
        self.payload = None
        self.buf = None
        self.datatype = None
        self.persistent = False
        self.user_data = None
        self.ti = None
        self.match: SendRequest | None = None


class ProbeWaiter(Trigger):
    __slots__ = ("source", "tag")

    def __init__(self, engine, source: int, tag: int, label: str) -> None:
        super().__init__(engine, label)
        self.source = source
        self.tag = tag


def completed_null(owner: Process, call: str, kind: int) -> Request:
    """A request on PROC_NULL: already complete, source PROC_NULL, tag ANY_TAG, 0 bytes."""
    r = Request(owner, kind, None, 0, call, PROC_NULL, ANY_TAG)
    r.source = PROC_NULL
    r._finish()
    return r


# -- sending ------------------------------------------------------------------------------
def isend(proc: Process, comm: CommImpl, channel: int, payload: Any, nbytes: int, dest: int, tag: int,
          call: str = "MPI_Isend", sync: bool = False, blocking: bool = False) -> Request:
    """Post a send of ``payload`` (``nbytes`` on the wire, envelope excluded).

    ``blocking`` tells that the caller waits for it at once (MPI_Send/Ssend), which selects
    the ``smpi/os`` overhead instead of ``smpi/ois``.
    """
    world = proc.world
    if comm.revoked or (world.ft is not None and world.ft.detected):
        err = world.ft.check_peer(proc, comm, dest, call, channel)  # smpy.runtime.ulfm
        if err is not None:
            return _failed(SendRequest(proc, comm, channel, call, dest, tag), err)
    if dest == PROC_NULL:
        return completed_null(proc, call, SEND)
    detached = not sync and nbytes < world.detached_thresh
    # SMPI sleeps the sender overhead before posting, when control returns before the
    # transfer completes: detached sends, Isend, Issend, Ssend
    if detached or sync or not blocking:
        table = proc.o_send if blocking else proc.o_isend
        if table is not None:
            delay = table(nbytes)
            if delay > 0.0:
                block_on(Sleep(world.engine, delay))
    req = SendRequest(proc, comm, channel, call, dest, tag)
    req.payload = payload
    req.nbytes = nbytes
    req.sync = sync
    req.posted_at = world.engine.now
    if world.tracer is not None:
        if channel == P2P:
            world.tracer.send(proc.rank, comm.rgroup[dest], tag, nbytes)
    if world.ti is not None and channel == P2P and not comm.internal:
        world.ti.send(proc.rank, comm.rgroup[dest], tag, nbytes, blocking)
        if not blocking:
            req.ti = _TI_WAIT
    src = req.src_local = comm.rank_of[proc.rank]
    box = comm.sboxes[channel][dest]
    if nbytes < world.eager_thresh and not sync:
        _start_transfer(req, world.processes[comm.rgroup[dest]].host)
    posted = box.posted
    for i, r in enumerate(posted):
        if (r.peer == src or r.peer == ANY_SOURCE) and (r.tag == tag or r.tag == ANY_TAG):
            del posted[i]
            _pair(req, r)
            break
    else:
        box.unexpected.append(req)
        if box.probers:
            _wake_probers(box, src, tag)
    if detached:
        if type(payload) is memoryview:  # borrowed bytes: the sender may reuse them now
            _detach(req)
        req.detached = True
        req._finish()
    return req


def _detach(send: SendRequest) -> None:
    """Copy a borrowed payload before its send completes early (detached): straight into
    the matched receive's buffer when there is one (delivery then copies nothing: the
    receive completes as before, when the transfer ends), else into bytes that wait in the
    unexpected queue (no copy of an immutable ``bytes`` object). At most one copy, as MPI's
    eager protocol makes."""
    recv = send.match
    if recv is not None and _lands(recv):
        _copy_in(send, recv)
        send.payload = _LANDED
    elif type(send.payload.obj) is not bytes:  # bytes cannot change: they wait as they are
        if _copies.ledger is not None:
            _copies.ledger.add("stage", send.nbytes, send.nbytes)
        send.payload = send.payload.tobytes()


def _lands(recv: RecvRequest) -> bool:
    """Whether a receive takes its bytes before it completes: a buffer, not a reduction
    sink (whose deposits keep delivery order)."""
    buf = recv.buf
    return buf is not None and buf.datatype is not None


def _failed(req: Request, err: BaseException) -> Request:
    req._fail(err)
    return req


def _wake_probers(box, src: int, tag: int) -> None:
    keep = []
    for w in box.probers:
        if matches(w.source, w.tag, src, tag):
            w.fire()
        else:
            keep.append(w)
    box.probers = keep


def _start_transfer(send: SendRequest, dst_host) -> None:
    proc = send.owner
    flow = proc.world.transfer(proc.host, dst_host, send.nbytes + ENVELOPE_BYTES)
    send.flow = flow
    flow.add_callback(partial(_arrived, send))  # a C partial: no Python frame of its own


def _arrived(send: SendRequest, _flow: Any = None) -> None:
    send.arrived = True
    recv = send.match
    if send.flow.state == FAILED:  # type: ignore[union-attr]  # a link of the route failed
        _transfer_failed(send, recv)
    elif recv is not None:
        _deliver(send, recv)


def _transfer_failed(send: SendRequest, recv: RecvRequest | None) -> None:
    world = send.owner.world
    ranks = (send.owner.rank,) if recv is None else (send.owner.rank, recv.owner.rank)
    err = (world.ft.transfer_failed(send.call, send.flow.exception, ranks) if world.ft is not None  # type: ignore[union-attr]
           else errors.make_error(errors.ERR_OTHER, f"{send.call}: communication failure: {send.flow.exception}"))  # type: ignore[union-attr]
    if err is None:  # the job is being aborted (smpy.runtime.ulfm.transfer_failed)
        return
    if send.state == 0:
        send._fail(err)
    if recv is not None:
        recv._fail(err)


def _pair(send: SendRequest, recv: RecvRequest) -> None:
    send.match = recv
    recv.match = send
    recv.source = send.src_local
    recv.tag = send.tag
    if send.flow is None:
        _start_transfer(send, recv.owner.host)
    elif send.arrived:
        if send.flow.state == FAILED:
            _transfer_failed(send, recv)
        else:
            _deliver(send, recv)


def _copy_in(send: SendRequest, recv: RecvRequest) -> None:
    """Put the send's payload where the receive wants it (its buffer, a sink, or its
    ``payload``), with MPI's truncation rule; sets the received byte count."""
    n = send.nbytes
    recv.nbytes = n
    buf = recv.buf
    ledger = _copies.ledger
    if ledger is not None:
        ledger.message(n)
    if buf is None:
        data = send.payload
        t = type(data)
        # borrowed (memoryview) or folded payloads become bytes the receiver owns
        if t is FoldedPayload or t is memoryview:
            data = bytes(data)
            if ledger is not None:
                ledger.add("recv", n, n)
        recv.payload = data
        return
    cap = buf.nbytes
    data = send.payload
    if n > cap:
        recv.error = errors.ERR_TRUNCATE
        recv.nbytes = cap
        data = data[:cap]
        recv.payload = (n, cap)
    if not data:
        return
    dt = buf.datatype
    if ledger is not None:
        ledger.add("recv", len(data), n)
    if dt is None:  # a sink that consumes the bytes itself (collectives' reductions)
        buf.deposit(data)
        return
    count = -(-len(data) // dt.size) if dt.size else 0  # a partial last element too
    if _folded.active or type(data) is FoldedPayload:  # copy only the private bytes
        _folded.unpack(dt, data, buf.mem, buf.offset, count)
    else:
        dt.unpack(data, buf.mem, buf.offset, count)


def _deliver(send: SendRequest, recv: RecvRequest) -> None:
    n = send.nbytes
    if send.payload is not _LANDED:
        _copy_in(send, recv)
    send.payload = None
    if recv.ti is not None:
        _ti_matched(send, recv)
    tracer = recv.owner.world.tracer
    if tracer is not None and send.channel == P2P:
        tracer.message(send.owner.rank, recv.owner.rank, send.posted_at, n, send.tag)
    recv._finish()
    if not send.detached:
        send._finish()
    # the receive keeps its link to the send (finish() reads it); the send drops its own, so
    # the pair is freed by reference counting instead of waiting for the cyclic GC
    send.match = None


# -- time-independent traces (smpy.trace.ti) -------------------------------------------------
_TI_WAIT = "wait"
_BLOCKING_RECV = frozenset({"MPI_Recv", "recv", "MPI_Mrecv", "MPI_Sendrecv_replace"})


def _ti_matched(send: SendRequest, recv: RecvRequest) -> None:
    pending, blocking = recv.ti
    comm = recv.comm
    recv.ti = None if blocking else _TI_WAIT
    recv.owner.world.ti.recv_matched(recv.owner.rank, pending, blocking, comm.rgroup[send.src_local],
                                     send.tag, send.nbytes)


def _ti_ends(proc: Process, req: Request) -> tuple[int, int] | None:
    """The (source, destination) world ranks that name a non-blocking request in a TI trace
    (``wait``/``test``), or None when it has none (yet: a receive from ANY_SOURCE that has
    not matched)."""
    comm = req.comm
    me = proc.rank
    if req.kind == SEND:
        return me, comm.rgroup[req.peer]
    if req.source < 0:
        return None
    return comm.rgroup[req.source], me


def _ti_wait(proc: Process, req: Request) -> None:
    if req.ti is _TI_WAIT:
        ends = _ti_ends(proc, req)
        if ends is not None:
            proc.world.ti.wait(proc.rank, ends[0], ends[1], req.tag)
    if not isinstance(req.ti, tuple):  # a receive that has not matched keeps its pending line
        req.ti = None


def _ti_nonblocking(req: Request) -> bool:
    """A request recorded as ``isend``/``irecv`` whose completion is not recorded yet."""
    ti = req.ti
    return ti is _TI_WAIT or (isinstance(ti, tuple) and not ti[1])


def ti_test(proc: Process, req: Request, done: bool) -> None:
    """Record an MPI_Test of ``req`` (SMPI: ``test <src> <dst> <tag>``, whatever its
    outcome; a request a test completed gets no ``wait`` line)."""
    ti = proc.world.ti
    if ti is None:
        return
    if req.persistent:
        req = getattr(req, "inner", None)
        if req is None:
            return
    if not _ti_nonblocking(req):
        return
    ends = _ti_ends(proc, req)
    if ends is not None:
        ti.test(proc.rank, ends[0], ends[1], req.tag, done)
    if done and req.ti is _TI_WAIT:
        req.ti = None


def ti_waitall(proc: Process, reqs: list[Any]) -> None:
    """Record an MPI_Waitall of ``reqs`` (completed, not finished yet) as SMPI does,
    ``waitall <count>``, when it completes every outstanding non-blocking request of the
    rank: SMPI's replay of ``waitall`` waits for all of them. Otherwise each request keeps
    its own ``wait`` line (written by :func:`finish`)."""
    ti = proc.world.ti
    if ti is None:
        return
    mine = []
    for r in reqs:
        if r is not None and getattr(r, "persistent", False):
            r = getattr(r, "inner", None)
        if r is not None and r.ti is _TI_WAIT:
            mine.append(r)
    if ti.waitall(proc.rank, len(reqs), len(mine)):
        for r in mine:
            r.ti = None


# -- receiving ----------------------------------------------------------------------------
def irecv(proc: Process, comm: CommImpl, channel: int, source: int, tag: int, buf: Any = None,
          call: str = "MPI_Irecv") -> Request:
    """Post a receive; ``buf`` (a BufSpec) gets the bytes, otherwise ``payload`` does."""
    world = proc.world
    if comm.revoked or (world.ft is not None and world.ft.detected):
        err = world.ft.check_peer(proc, comm, source, call, channel)  # smpy.runtime.ulfm
        if err is not None:
            return _failed(RecvRequest(proc, comm, channel, call, source, tag), err)
    if source == PROC_NULL:
        return completed_null(proc, call, RECV)
    req = RecvRequest(proc, comm, channel, call, source, tag)
    req.buf = buf
    if channel == P2P and proc.world.ti is not None and not comm.internal:
        blocking = call in _BLOCKING_RECV
        req.ti = (proc.world.ti.recv_posted(proc.rank, blocking), blocking)
    me = comm.rank_of[proc.rank]
    box = comm.boxes[channel][me]
    unexpected = box.unexpected
    for i, s in enumerate(unexpected):
        if (source == s.src_local or source == ANY_SOURCE) and (tag == s.tag or tag == ANY_TAG):
            del unexpected[i]
            _pair(s, req)
            break
    else:
        box.posted.append(req)
    return req


def wait(proc: Process, req: Request, label: str | None = None) -> Request:
    """Block until ``req`` completes; ``label`` names the blocking call (deadlock reports)."""
    if req.state == 0:
        block_on(req, None if label is None else (lambda: f"{label} on {req.describe()}"))
    # finish() has nothing to do for most requests: its conditions, checked inline
    if req.state == FAILED or req.ti is not None or (req.kind == RECV and proc.o_recv is not None):
        finish(proc, req)
    return req


def finish(proc: Process, req: Request) -> None:
    """Completion-side costs (SMPI's finish_wait): the receiver overhead ``smpi/or`` when
    the receive matched a detached send. Called once per completed request."""
    if req.state == FAILED:
        raise req.exception  # type: ignore[misc]  # ULFM: a failed peer, a revoked communicator
    if req.ti is not None:
        _ti_wait(proc, req)
    if req.kind == RECV and proc.o_recv is not None and not req.persistent:
        send = getattr(req, "match", None)
        if send is not None and send.detached and req.user_data is None:
            req.user_data = True  # charged
            delay = proc.o_recv(req.nbytes)
            if delay > 0.0:
                block_on(Sleep(proc.world.engine, delay))


def test(proc: Process, req: Request, record: bool = False) -> bool:
    """MPI_Test: inject the polling cost, then report completion. ``record``: an MPI_Test
    of the application, to write in a time-independent trace (not the polls of
    MPI_Testall/any/some, which SMPI's format cannot replay)."""
    world = proc.world
    polls = proc.polls
    if world.test_sleep > 0.0:
        block_on(Sleep(world.engine, world.test_sleep * (polls.test + 1)))
    proc.progressed_at = world.engine.now
    if req.state != 0:
        polls.test = 0
        if record:
            ti_test(proc, req, True)
        finish(proc, req)
        return True
    if record:
        ti_test(proc, req, False)
    if world.grow_injected:
        polls.test += 1
    return False


def poll_each(proc: Process, reqs: list[Request]) -> None:
    """The polling cost of MPI_Testall/MPI_Testsome over active requests: SMPI tests each
    one in turn (MPI_Test's cost, counter and all, completed requests included), before
    the caller looks at which are complete."""
    world = proc.world
    proc.progressed_at = world.engine.now
    if world.test_sleep <= 0.0:
        return
    polls = proc.polls
    for req in reqs:
        if getattr(req, "polled", False):
            continue  # SMPI freed it (MPI_REQUEST_NULL) when an earlier poll found it complete
        block_on(Sleep(world.engine, world.test_sleep * (polls.test + 1)))
        if req.state != 0:
            polls.test = 0
            if not req.persistent:
                req.polled = True
        elif world.grow_injected:
            polls.test += 1


def poll_any(proc: Process, reqs: list[Request]) -> bool:
    """The polling cost of MPI_Testany over active requests (SMPI: its own counter, which
    grows with every unsuccessful call whatever smpi/grow-injected-times says); whether one
    of them is complete."""
    world = proc.world
    polls = proc.polls
    if world.test_sleep > 0.0:
        block_on(Sleep(world.engine, world.test_sleep * (polls.testany + 1)))
    proc.progressed_at = world.engine.now
    if any(r.state != 0 for r in reqs):
        polls.testany = 0
        return True
    polls.testany += 1
    return False


def waitany(proc: Process, reqs: list[Request]) -> int:
    return block_on_any(reqs)


def cancel(req: Request) -> None:
    """Cancel a request that has not been matched yet (otherwise a no-op, as in MPI). A
    detached send is complete for its sender but still cancellable until it is matched."""
    if req.state != 0 and not getattr(req, "detached", False):
        return
    comm = req.comm
    if isinstance(req, RecvRequest) and req.match is None:
        box = comm.boxes[req.channel][comm.rank_of[req.owner.rank]]
        if req in box.posted:
            box.posted.remove(req)
            req.cancelled = True
            req.source = ANY_SOURCE
            req._finish()
    elif isinstance(req, SendRequest) and req.match is None and req.flow is None:
        box = comm.sboxes[req.channel][req.peer]
        if req in box.unexpected:
            box.unexpected.remove(req)
            req.cancelled = True
            req.payload = None
            req._finish()


# -- probing ------------------------------------------------------------------------------
def find_unexpected(proc: Process, comm: CommImpl, channel: int, source: int, tag: int) -> SendRequest | None:
    box = comm.boxes[channel][comm.rank_of[proc.rank]]
    for s in box.unexpected:
        if (source == s.src_local or source == ANY_SOURCE) and (tag == s.tag or tag == ANY_TAG):
            return s
    return None


def iprobe(proc: Process, comm: CommImpl, channel: int, source: int, tag: int) -> SendRequest | None:
    """MPI_Iprobe: the polling cost, then the first matching unexpected send. Under
    ``smpy/probe-sees:polled`` (MPICH), only a send posted strictly before the rank's previous
    progress counts: MPICH's probe looks at the queue its progress engine filled, then
    polls, so a message that arrived while the rank computed is found by the next probe."""
    if source == PROC_NULL:
        return None
    world = proc.world
    seen_until = proc.progressed_at
    if world.iprobe_sleep > 0.0:
        # SMPI burns the polling time on the CPU (it counts for energy): k x smpi/iprobe
        # seconds at smpi/iprobe-cpu-usage of one core
        speed = proc.host.speed_flops * world.iprobe_cpu
        if speed > 0.0:
            flops = (proc.polls.iprobe + 1) * world.iprobe_sleep * speed
            block_on(world.cpu.execute(proc.host, flops, bound=speed, label="iprobe"))
        else:
            block_on(Sleep(world.engine, world.iprobe_sleep * (proc.polls.iprobe + 1)))
    s = find_unexpected(proc, comm, channel, source, tag)
    if world.probe_polled and s is not None and s.posted_at >= seen_until:
        s = None  # sends are queued in posting order: no later match was seen either
    proc.progressed_at = world.engine.now  # a poll, as MPI_Test's
    if s is None:
        if world.grow_injected:
            proc.polls.iprobe += 1
    else:
        proc.polls.iprobe = 0
    return s


def probe(proc: Process, comm: CommImpl, channel: int, source: int, tag: int, call: str = "MPI_Probe") -> SendRequest | None:
    if source == PROC_NULL:
        return None
    while True:
        s = find_unexpected(proc, comm, channel, source, tag)
        if s is not None:
            return s
        box = comm.boxes[channel][comm.rank_of[proc.rank]]
        src = "MPI_ANY_SOURCE" if source == ANY_SOURCE else str(source)
        tg = "MPI_ANY_TAG" if tag == ANY_TAG else str(tag)
        w = ProbeWaiter(proc.world.engine, source, tag, f"{call}(source={src}, tag={tg}, comm={comm.describe()})")
        box.probers.append(w)
        block_on(w)


# -- convenience for collectives ----------------------------------------------------------
def send(proc: Process, comm: CommImpl, channel: int, payload: Any, nbytes: int, dest: int, tag: int,
         call: str = "MPI_Send") -> None:
    req = isend(proc, comm, channel, payload, nbytes, dest, tag, call, blocking=True)
    if req.state == 0:
        block_on(req)


def recv(proc: Process, comm: CommImpl, channel: int, source: int, tag: int, buf: Any = None,
         call: str = "MPI_Recv") -> Request:
    req = irecv(proc, comm, channel, source, tag, buf, call)
    if req.state == 0:
        block_on(req)
    if req.state == FAILED or req.ti is not None or proc.o_recv is not None:  # (wait's check)
        finish(proc, req)
    return req


def block_all(reqs: list[Any], call: str = "MPI_Waitall") -> None:
    """Block until every request of ``reqs`` (None entries skipped) is complete, without
    finishing them (the facade completes them in order afterwards)."""
    for r in reqs:
        if r is not None and r.state == 0:
            block_on(r, lambda r=r: f"{call} on {r.describe()}")


def wait_transfer(send: Any, label: str) -> None:
    """Block until the network transfer of ``send`` (a matched send request) has ended;
    nothing to wait for when its transfer has not started."""
    flow = getattr(send, "flow", None)
    if flow is not None and flow.state == 0:
        block_on(flow, label)


def waitall(proc: Process, reqs: list[Request]) -> None:
    for r in reqs:
        if r.state == 0:
            block_on(r)
    o_recv = proc.o_recv
    for r in reqs:  # finish() when it has work (wait's check)
        if r.state == FAILED or r.ti is not None or (o_recv is not None and r.kind == RECV):
            finish(proc, r)


# -- argument checks (MPI error classes as MPICH reports them) ----------------------------
def check_dest(comm: CommImpl, rank: int, call: str) -> None:
    if not (0 <= rank < comm.rsize or rank == PROC_NULL):
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {rank} but must be "
                           f"nonnegative and less than {comm.rsize}")


def check_source(comm: CommImpl, rank: int, call: str) -> None:
    if not (0 <= rank < comm.rsize or rank == PROC_NULL or rank == ANY_SOURCE):
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {rank} but must be "
                           f"nonnegative and less than {comm.rsize}")


def check_send_tag(tag: int, call: str) -> None:
    if not (0 <= tag <= TAG_UB):
        errors.raise_error(errors.ERR_TAG, f"{call}: invalid tag, value is {tag} (MPI_TAG_UB is {TAG_UB})")


def check_recv_tag(tag: int, call: str) -> None:
    if not (0 <= tag <= TAG_UB or tag == ANY_TAG):
        errors.raise_error(errors.ERR_TAG, f"{call}: invalid tag, value is {tag} (MPI_TAG_UB is {TAG_UB})")


def check_root(comm: CommImpl, root: int, call: str) -> None:
    """Intracommunicators: 0 <= root < size. Intercommunicators: ROOT, PROC_NULL (the root's
    group) or a rank of the remote group."""
    if not 0 <= root < comm.rsize and (comm.remote is None or (root != ROOT and root != PROC_NULL)):
        errors.raise_error(errors.ERR_ROOT, f"{call}: invalid root (value {root}, communicator size {comm.rsize})")


# -- matched probes (MPI_Mprobe / MPI_Mrecv) ----------------------------------------------
def take_matched(proc: Process, comm: CommImpl, channel: int, source: int, tag: int,
                 blocking: bool, call: str = "MPI_Mprobe") -> SendRequest | None:
    """Find a matching unexpected send and remove it from the queue (a *message*)."""
    s = probe(proc, comm, channel, source, tag, call) if blocking else iprobe(proc, comm, channel, source, tag)
    if s is not None:
        comm.boxes[channel][comm.rank_of[proc.rank]].unexpected.remove(s)
    return s


def recv_matched(proc: Process, send: SendRequest, buf: Any, call: str = "MPI_Mrecv") -> Request:
    """Receive the message taken by :func:`take_matched` (no more matching)."""
    req = RecvRequest(proc, send.comm, send.channel, call, send.src_local, send.tag)
    req.buf = buf
    _pair(send, req)
    return req


# -- the compiled common case (smpy.kernel.accel) -----------------------------------------
def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) pairs of :func:`isend`, :func:`irecv`, :func:`wait`, the delivery
    steps (:func:`_pair`, :func:`_start_transfer`, :func:`_arrived`, :func:`_deliver`) and the
    receive-buffer copy (:func:`_copy_in`, :func:`_detach`), and the send side's
    :func:`smpy.runtime.packing.pack_message` from
    ``_p2paccel.c`` (none when it cannot be built). The compiled functions do the common
    case and call these Python ones for the rest (fault tolerance, PROC_NULL, sender
    overheads, tracers, time-independent traces, deadlock labels)."""
    mod, _why = cext.load(Path(__file__).with_name("_p2paccel.c"), "smpy.runtime._p2paccel")
    if mod is None:
        return []
    mod.setup(globals(), SendRequest, RecvRequest, isend, irecv, wait, ANY_SOURCE, ANY_TAG, PROC_NULL, P2P,
              _pair, _deliver, _arrived, _start_transfer, _LANDED, partial, FAILED)
    from smpy.runtime import packing
    from smpy.runtime.datatype import DatatypeImpl

    mod.setup_copy(_copy_in, _detach, DatatypeImpl)
    mod.setup_pack(vars(packing), packing.pack_message)
    _accel.fast_dealloc(SendRequest, RecvRequest)
    return [(isend, mod.isend), (irecv, mod.irecv), (wait, mod.wait), (_pair, mod._pair),
            (_deliver, mod._deliver), (_arrived, mod._arrived), (_start_transfer, mod._start_transfer),
            (_copy_in, mod._copy_in), (_detach, mod._detach), (packing.pack_message, mod.pack_message)]


def compiled_spec_nbytes(fget: Any) -> None:
    """Give the compiled :func:`_copy_in` the getter of the buffer specs' ``nbytes`` property
    (:class:`smpy.mpi.msgspec.BufSpec`, ``count * datatype.size``): while a receive's buffer has
    that property with that getter, unchanged, the product is made in C (the same reads, the
    same value); nothing when ``_p2paccel.c`` cannot be built."""
    mod, _why = cext.load(Path(__file__).with_name("_p2paccel.c"), "smpy.runtime._p2paccel")
    if mod is not None:
        mod.setup_nbytes(fget)


_accel.register(_compiled)
