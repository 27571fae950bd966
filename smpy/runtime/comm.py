"""Communicators: groups, matching mailboxes, collective creation of new communicators.

One :class:`CommImpl` is shared by all its members (the facade gives each rank its own
handle). ``group`` maps local rank → world rank. Each (channel, local rank) has a
:class:`Mailbox` with the receives posted there and the sends not yet matched
("unexpected"), both in arrival order: matching takes the first entry that fits, which
gives MPI's non-overtaking rule.

New communicators (Dup, Split, Create...) are agreed on without any global knowledge: the
k-th creation call a rank makes on a parent communicator refers to the same new
communicator on every member, so the first member to arrive builds it and the others
find it under ``(k, key)`` in ``parent._creations``.

An intercommunicator is two :class:`CommImpl` *sides*, one per group, sharing a ``pair``.
A side's ``group``/``rank_of``/``size``/``boxes`` are its local group's (receives land
in ``boxes[channel][local rank]``); sends address the remote group: ``rgroup``,
``rsize`` and ``sboxes`` (the other side's ``boxes``). For an intracommunicator these
are ``group``, ``size`` and ``boxes`` themselves, so point-to-point code is the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.runtime.constants import ANY_SOURCE, ANY_TAG

if TYPE_CHECKING:
    from smpy.runtime.p2p import ProbeWaiter, RecvRequest, SendRequest
    from smpy.runtime.world import Process, World


class Mailbox:
    __slots__ = ("posted", "unexpected", "probers")

    def __init__(self) -> None:
        self.posted: list[RecvRequest] = []
        self.unexpected: list[SendRequest] = []
        self.probers: list[ProbeWaiter] = []


def matches(want_src: int, want_tag: int, src: int, tag: int) -> bool:
    return (want_src == src or want_src == ANY_SOURCE) and (want_tag == tag or want_tag == ANY_TAG)


class Agreement:
    """What one creation call of all members refers to, without a global registry: mixed
    into :class:`CommImpl` and into the pair of sides of an intercommunicator
    (:class:`smpy.runtime.inter.InterPair`), which provide ``context`` and ``_creations``."""

    __slots__ = ()
    context: int
    _creations: dict[tuple[int, Any], Any]

    def agree(self, proc: Process, key: Any, build: Callable[[], Any], expected: int) -> Any:
        """Return the object every member gets for its k-th agreement on this comm.

        ``key`` separates different results of one call (e.g. the color of a Split);
        ``expected`` is how many members share that key. The first caller builds the
        object; the entry is dropped when the last expected member took it.
        """
        seq = proc.comm_seq.get(self.context, 0)
        proc.comm_seq[self.context] = seq + 1
        entry = self._creations.get((seq, key))
        if entry is None:
            entry = self._creations[(seq, key)] = [build(), 0]
        entry[1] += 1
        if entry[1] >= expected:
            del self._creations[(seq, key)]
        return entry[0]


class CommImpl(Agreement):
    __slots__ = (
        "world", "group", "rank_of", "size", "name", "context", "boxes", "_creations",
        "refcount", "attrs", "topology", "errhandler", "info", "__weakref__",
        "rgroup", "rsize", "sboxes", "remote", "local", "pair", "revoked", "internal",
    )

    def __init__(self, world: World, group: list[int], name: str = "") -> None:
        self.world = world
        self.group = group
        self.rank_of = {w: i for i, w in enumerate(group)}
        self.size = len(group)
        self.name = name
        self.context = world.next_context()
        self.boxes = ([Mailbox() for _ in group], [Mailbox() for _ in group])
        self._creations: dict[tuple[int, Any], Any] = {}
        self.refcount = len(group)
        self.attrs: dict[int, Any] = {}
        self.topology: Any = None
        self.errhandler: Any = None
        self.info: Any = None
        # remote side (intercommunicators only set remote/local/pair, see smpy.runtime.inter)
        self.rgroup = group
        self.rsize = self.size
        self.sboxes = self.boxes
        self.remote: list[int] | None = None
        self.local: CommImpl | None = None
        self.pair: Any = None
        #: an MPI library's own communicator (MPI-IO's duplicate): its point-to-point
        #: messages are traced but not recorded in time-independent traces, whose replay
        #: redoes the library call that sent them
        self.internal = False
        #: MPIX_Comm_revoke was called (smpy.runtime.ulfm)
        self.revoked = False
        world.comms.add(self)

    def local_rank(self, proc: Process) -> int:
        return self.rank_of[proc.rank]

    def process(self, local_rank: int) -> Process:
        return self.world.processes[self.group[local_rank]]

    def host_of(self, local_rank: int):
        return self.world.processes[self.group[local_rank]].host

    def describe(self) -> str:
        return self.name or f"comm#{self.context}"

    def __repr__(self) -> str:
        return f"<CommImpl {self.describe()} size={self.size}>"
