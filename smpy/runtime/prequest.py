"""Persistent, partitioned and generalized requests.

* **Persistent** (``MPI_Send_init``..., ``MPI_Bcast_init``...): one :class:`PersistentRequest`
  lives across Start/complete cycles. ``start`` runs its *starter*, which posts an ordinary
  operation (an isend, an irecv, a non-blocking collective) — so a started persistent
  operation costs exactly what that operation costs — and the persistent request completes
  with it, copying its status fields. Between cycles the request is *inactive*: waiting on
  it returns at once with an empty status (source ANY_SOURCE, tag ANY_TAG, 0 bytes).
* **Partitioned** (``MPI_Psend_init``/``MPI_Precv_init``): the receive posts its whole
  receive at Start; the send posts one message of the whole buffer once every partition
  has been marked ready (``Pready``). ``Parrived`` is true once that message has arrived
  (MPI allows a partition to be reported later than it physically arrived). The messages
  travel on the collective channel under tag ``-2 - tag``, so that no ordinary receive,
  even with ``ANY_TAG``, can match them, as in MPI where partitioned and ordinary
  point-to-point never match each other.
* **Generalized** (``MPI_Grequest_start``): completes when the program calls ``complete``;
  ``fns`` holds the program's query/free/cancel callbacks (run by the facade).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import DONE, RUNNING
from smpy.runtime import errors
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, COLL, P2P
from smpy.runtime.p2p import NULL_KIND, Request, cancel

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

Starter = Callable[[], Request]


class PersistentRequest(Request):
    """A persistent operation; ``active`` from ``start`` until its completion is reported."""

    __slots__ = ("starter", "inner", "active")

    def __init__(self, owner: Process, kind: int, comm: CommImpl | None, call: str, starter: Starter | None,
                 peer: int = ANY_SOURCE, tag: int = ANY_TAG) -> None:
        super().__init__(owner, kind, comm, P2P, call, peer, tag)
        self.persistent = True
        self.starter = starter
        self.inner: Request | None = None
        self.active = False
        self.state = DONE
        self.source = ANY_SOURCE
        self.tag = ANY_TAG

    def describe(self) -> str:
        inner = self.inner
        return inner.describe() if inner is not None else f"{self.call} (inactive)"

    def _begin(self, call: str) -> None:
        if self.active and self.state == RUNNING:  # (MPICH restarts a completed one silently)
            errors.raise_error(errors.ERR_REQUEST, f"{call}: persistent request is already active")
        self.state = RUNNING
        self.waiters = []
        self.callbacks = None
        self.active = True
        self.error = 0
        self.cancelled = False
        self.payload = None
        self.nbytes = 0

    def start(self, call: str = "MPI_Start") -> None:
        self._begin(call)
        self._attach(self.starter())  # type: ignore[misc]

    def _attach(self, inner: Request) -> None:
        self.inner = inner
        inner.add_callback(self._inner_done)

    def _inner_done(self, inner: Any) -> None:
        self.source = inner.source
        self.tag = inner.tag
        self.nbytes = inner.nbytes
        self.error = inner.error
        self.cancelled = inner.cancelled
        self.payload = inner.payload
        self._finish()

    def release(self) -> None:
        """The completion was reported: back to inactive, with an empty status."""
        self.active = False
        self.inner = None
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.nbytes = 0
        self.error = 0
        self.cancelled = False
        self.payload = None

    def cancel_op(self) -> None:
        inner = self.inner
        if inner is not None:
            cancel(inner)
            self.cancelled = inner.cancelled  # (a detached send may be cancelled after completing)


class PartitionedRequest(PersistentRequest):
    """``MPI_Psend_init`` (``send`` posts the whole message) or ``MPI_Precv_init``."""

    __slots__ = ("partitions", "ready", "sender")

    def __init__(self, owner: Process, kind: int, comm: CommImpl, call: str, partitions: int,
                 starter: Starter | None, sender: Starter | None, peer: int, tag: int) -> None:
        super().__init__(owner, kind, comm, call, starter, peer, tag)
        self.partitions = partitions
        self.ready: set[int] = set()
        self.sender = sender

    def start(self, call: str = "MPI_Start") -> None:
        self._begin(call)
        self.ready = set()
        if self.starter is not None:
            self._attach(self.starter())

    def _check(self, partition: int, call: str) -> None:
        if not 0 <= partition < self.partitions:
            errors.raise_error(errors.ERR_OTHER, f"{call}: invalid partition {partition} "
                               f"(the request has {self.partitions} partitions)")

    def pready(self, partitions: list[int], call: str) -> None:
        if self.sender is None:
            errors.raise_error(errors.ERR_REQUEST, f"{call}: not a partitioned send request")
        if not self.active:
            errors.raise_error(errors.ERR_REQUEST, f"{call}: partitioned request is not active")
        for p in partitions:
            self._check(p, call)
        self.ready.update(partitions)
        if self.inner is None and len(self.ready) == self.partitions:
            self._attach(self.sender())  # type: ignore[misc]

    def arrived(self, partition: int, call: str = "MPI_Parrived") -> bool:
        self._check(partition, call)
        inner = self.inner
        return inner is not None and inner.state != RUNNING


def partition_tag(tag: int) -> int:
    return -2 - tag


PARTITION_CHANNEL = COLL


class GeneralizedRequest(Request):
    """``MPI_Grequest_start``: done when the program calls :meth:`complete`."""

    __slots__ = ("fns",)

    def __init__(self, owner: Process, fns: Any) -> None:
        super().__init__(owner, NULL_KIND, None, P2P, "MPI_Grequest_start", ANY_SOURCE, ANY_TAG)
        self.source = ANY_SOURCE
        self.fns = fns

    def complete(self) -> None:
        self._finish()

    def describe(self) -> str:
        return "generalized request (MPI_Grequest_start), not completed with MPI_Grequest_complete"


class JoinRequest(Request):
    """Completes when all its parts have (MPI_Isendrecv); the status is the receive's."""

    __slots__ = ("parts", "status_of", "left")

    def __init__(self, owner: Process, parts: list[Request], status_of: Request, call: str) -> None:
        super().__init__(owner, status_of.kind, status_of.comm, P2P, call, status_of.peer, status_of.tag)
        self.parts = parts
        self.status_of = status_of
        self.left = len(parts)
        for p in parts:
            p.add_callback(self._part_done)

    def _part_done(self, _part: Any) -> None:
        self.left -= 1
        if self.left == 0:
            r = self.status_of
            self.source, self.tag, self.nbytes = r.source, r.tag, r.nbytes
            self.error, self.cancelled, self.payload = r.error, r.cancelled, r.payload
            self._finish()

    def describe(self) -> str:
        pending = [p.describe() for p in self.parts if p.state == RUNNING]
        return f"{self.call}: " + "; ".join(pending)


def join(owner: Process, send: Request, recv: Request, call: str) -> JoinRequest:
    return JoinRequest(owner, [send, recv], recv, call)
