"""Node structure of a communicator for SMP-aware algorithms (SimGrid's ``Comm::init_smp``).

A *node* is a host: the ranks of the communicator placed on the same host form its intra-
node communicator; the lowest-ranked member of each node is its leader, and the leaders
form the leaders communicator. ``uniform`` tells whether every node holds the same number
of ranks; SimGrid's SMP algorithms then use ``num_core`` = ranks per node and *assume*
ranks are laid out node by node (rank // num_core is the node), as we do.

The first time a rank needs this structure on a communicator it pays what SMPI pays in
``init_smp``: a ring allgather of one int on the communicator, a ring allgather of one
int among the leaders, a scatter-ring-allgather bcast of one int in the node and a
default allreduce (linear reduce + binomial bcast) of one int on the communicator.
The sub-communicators are built once, deterministically, by the first rank to arrive.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from smpy.colls.core import Reduction
from smpy.colls.registry import get
from smpy.runtime.comm import CommImpl

if TYPE_CHECKING:
    from smpy.colls.core import Ctx

INT = 4


class Smp:
    __slots__ = ("intra_of", "leaders", "leader_of", "uniform", "num_core", "paid", "blocked")

    def __init__(self, comm: CommImpl) -> None:
        nodes: dict[int, list[int]] = {}
        for r in range(comm.size):
            nodes.setdefault(comm.host_of(r).index, []).append(r)
        groups = sorted(nodes.values())
        #: local rank -> the intra-node communicator of its node
        self.intra_of: list[CommImpl] = [None] * comm.size  # type: ignore[list-item]
        self.leader_of = [0] * comm.size
        for members in groups:
            intra = CommImpl(comm.world, [comm.group[r] for r in members], f"{comm.describe()}/node")
            SMP_COMMS.add(intra)
            for r in members:
                self.intra_of[r] = intra
                self.leader_of[r] = members[0]
        self.leaders = CommImpl(comm.world, [comm.group[m[0]] for m in groups], f"{comm.describe()}/leaders")
        SMP_COMMS.add(self.leaders)
        sizes = {len(m) for m in groups}
        self.uniform = len(sizes) == 1
        self.num_core = len(groups[0]) if self.uniform else 1
        #: every node's ranks are contiguous (SimGrid's ``is_blocked``)
        self.blocked = all(m == list(range(m[0], m[0] + len(m))) for m in groups)
        self.paid: set[int] = set()


_cache: weakref.WeakKeyDictionary[CommImpl, Smp] = weakref.WeakKeyDictionary()
#: the sub-communicators built here (SimGrid's ``is_smp_comm()``): selectors that go
#: SMP-aware on a normal communicator stay flat on these
SMP_COMMS: weakref.WeakSet[CommImpl] = weakref.WeakSet()


def is_smp_comm(comm: CommImpl) -> bool:
    return comm in SMP_COMMS
INIT_SUB = 200  # sub-context number of the init_smp traffic (distinct from algorithm subs)


def smp_ready(ctx: Ctx) -> Smp | None:
    """The node structure if this rank already paid ``init_smp`` on ``ctx.comm`` (SimGrid's
    ``get_leaders_comm() != MPI_COMM_NULL``), else None — without paying it."""
    info = _cache.get(ctx.comm)
    return info if info is not None and ctx.me in info.paid else None


def smp_of(ctx: Ctx) -> Smp:
    """The node structure of ``ctx.comm``; the first call of each rank pays ``init_smp``."""
    comm = ctx.comm
    info = _cache.get(comm)
    if info is None:
        info = _cache[comm] = Smp(comm)
    if ctx.me not in info.paid:
        info.paid.add(ctx.me)
        _init_cost(ctx, info)
    return info


def _init_cost(ctx: Ctx, info: Smp) -> None:
    # the algorithms SMPI's init_smp calls; taken from the registry because their modules
    # use this one (the SMP-aware bcast and reduce need the node structure)
    ring = get("allgather", "ring").fn
    me = ctx.me
    sub = ctx.sub(INIT_SUB)
    ring(sub, b"\0" * INT)
    intra = info.intra_of[me]
    ictx = sub.on(intra, 1)
    if ictx.me == 0:
        ring(sub.on(info.leaders, 2), b"\0" * INT)
    get("bcast", "scatter_LR_allgather").fn(ictx, 0, b"\0" * INT if ictx.me == 0 else None, INT, INT)
    land = Reduction(lambda a, b: b, True, INT)
    get("reduce", "nbc_linear").fn(sub.sub(3), 0, b"\0" * INT, land)
    get("bcast", "binomial_tree").fn(sub.sub(4), 0, b"\0" * INT if me == 0 else None, INT, INT)
