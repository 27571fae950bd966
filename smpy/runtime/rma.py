"""One-sided communication (RMA): windows, remote operations, synchronisation epochs.

A :class:`WinImpl` is shared by every member of the window (the facade gives each rank its
own handle). All ranks live in one address space, so a window is just the list of every
member's memory segment (a writable byte view, its size, displacement unit and address);
moving data is a copy, but the copy happens at the *simulated* time the bytes arrive.

Cost model (one network message per transfer, ``ENVELOPE_BYTES`` = 16 bytes of header)
-----------------------------------------------------------------------------------------
* ``Put``/``Accumulate`` of ``n`` bytes: one message origin → target of ``n + 16`` bytes; the
  data lands in (is combined into) the target memory when it arrives, and the operation is
  complete then.
* ``Get``: a 16-byte request origin → target; at its arrival the target memory is read and
  ``n + 16`` bytes travel back; the origin buffer is written when they arrive.
* ``Get_accumulate``/``Fetch_and_op``/``Compare_and_swap``: ``n + 16`` bytes out (``2n + 16``
  for compare-and-swap); at the target, read-modify-write is atomic (one simulation event);
  the old contents travel back (``n + 16`` bytes).
* Locks: a 16-byte request to the target, queued there (FIFO) until compatible with the
  holders (exclusive vs shared), and a 16-byte grant back. ``MODE_NOCHECK`` skips both.
  Unlock completes the operations to that target, then sends a 16-byte release and
  returns when it has arrived (the lock passes to the next waiter at that moment).
* ``Fence``: completes all the caller's operations, then a dissemination barrier over the
  window's group (``ceil(log2 p)`` rounds of 16-byte messages).
* PSCW: ``Post`` sends a 16-byte token to each origin of its group, an access to target
  ``t`` after ``Start`` waits for ``t``'s token, ``Complete`` completes the operations and
  sends a 16-byte token to each target, which ``Wait``/``Test`` collect.

Synchronisation errors are MPICH's (``MPI_ERR_RMA_SYNC``): an operation outside any
access epoch, Unlock without Lock, Lock twice, Fence or Free inside a passive epoch,
Complete without Start, Wait/Test without Post, Flush/Sync outside a passive epoch.
One deliberate difference: MPICH does not check that the target range fits in the window
(it writes past it); smpy raises ``MPI_ERR_RMA_RANGE`` instead of corrupting memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from smpy.kernel.activity import Trigger
from smpy.kernel.actors import block_on
from smpy.runtime import errors, p2p
from smpy.runtime.comm import CommImpl
from smpy.runtime.constants import ANY_TAG, COLL, ENVELOPE_BYTES, PROC_NULL
from smpy.runtime.datatype import BY_NAME, DatatypeImpl
from smpy.runtime.op import NO_OP, REPLACE, OpImpl

if TYPE_CHECKING:
    from smpy.runtime.world import Process

# MPICH's constant values
FLAVOR_CREATE, FLAVOR_ALLOCATE, FLAVOR_DYNAMIC, FLAVOR_SHARED = 1, 2, 3, 4
SEPARATE, UNIFIED = 1, 2
MODE_NOCHECK, MODE_NOSTORE, MODE_NOPUT, MODE_NOPRECEDE, MODE_NOSUCCEED = 1024, 2048, 4096, 8192, 16384
LOCK_EXCLUSIVE, LOCK_SHARED = 234, 235
KEYVAL_WIN_BASE = 0x66000001
KEYVAL_WIN_SIZE = 0x66000003
KEYVAL_WIN_DISP_UNIT = 0x66000005
KEYVAL_WIN_CREATE_FLAVOR = 0x66000007
KEYVAL_WIN_MODEL = 0x66000009

_ALL_MODES = MODE_NOCHECK | MODE_NOSTORE | MODE_NOPUT | MODE_NOPRECEDE | MODE_NOSUCCEED
_TAG_POST, _TAG_DONE, _TAG_BARRIER = 1, 2, 16

#: MPICH's window info hints (MPI_Win_get_info on ch4)
DEFAULT_INFO: dict[str, str] = {
    "no_locks": "false",
    "accumulate_ordering": "rar,raw,war,waw",
    "accumulate_ops": "same_op_no_op",
    "alloc_shared_noncontig": "false",
    "same_size": "false",
    "same_disp_unit": "false",
    "alloc_shm": "true",
    "which_accumulate_ops": "cswap,max,min,sum,prod,land,band,lor,bor,lxor,bxor,minloc,maxloc,"
                            "replace,no_op,equal",
    "accumulate_noncontig_dtype": "true",
    "accumulate_max_bytes": "unlimited",
    "disable_shm_accumulate": "false",
    "coll_attach": "false",
    "perf_preference": "cswap,max,min,sum,prod,land,band,lor,bor,lxor,bxor,minloc,maxloc,"
                       "replace,no_op,equal",
    "optimized_mr": "false",
    "symheap_required": "false",
    "mpi_memory_alloc_kinds": "mpi,system",
}


def address_of(mem: memoryview | None) -> int:
    """The address of the first byte of ``mem`` (0 for an empty or missing buffer)."""
    if mem is None or mem.nbytes == 0:
        return 0
    return int(np.frombuffer(mem, np.uint8).ctypes.data)


def empty_mem() -> memoryview:
    return memoryview(bytearray())


class Segment:
    """One member's window memory."""

    __slots__ = ("mem", "size", "disp_unit", "base")

    def __init__(self, mem: memoryview, size: int, disp_unit: int, base: int) -> None:
        self.mem = mem
        self.size = size
        self.disp_unit = disp_unit
        self.base = base


class LockState:
    """Lock of one target: holders and FIFO queue of requests (origin, type, grant)."""

    __slots__ = ("exclusive", "shared", "queue")

    def __init__(self) -> None:
        self.exclusive = False
        self.shared = 0
        self.queue: deque[tuple[int, Callable[[], None]]] = deque()

    def compatible(self, lock_type: int) -> bool:
        if lock_type == LOCK_EXCLUSIVE:
            return not self.exclusive and self.shared == 0
        return not self.exclusive

    def take(self, lock_type: int) -> None:
        if lock_type == LOCK_EXCLUSIVE:
            self.exclusive = True
        else:
            self.shared += 1

    def request(self, lock_type: int, grant: Callable[[], None]) -> None:
        if not self.queue and self.compatible(lock_type):
            self.take(lock_type)
            grant()
        else:
            self.queue.append((lock_type, grant))

    def release(self, lock_type: int) -> None:
        if lock_type == LOCK_EXCLUSIVE:
            self.exclusive = False
        else:
            self.shared -= 1
        queue = self.queue
        while queue and self.compatible(queue[0][0]):
            lt, grant = queue.popleft()
            self.take(lt)
            grant()


class Epochs:
    """One origin's synchronisation state on a window."""

    __slots__ = ("fence", "locks", "lock_all", "lock_all_nocheck", "start", "posts", "post", "done_reqs", "pending")

    def __init__(self) -> None:
        self.fence = False  #: inside a fence epoch (a Fence without MODE_NOSUCCEED)
        self.locks: dict[int, int] = {}  #: target -> lock type (0: MODE_NOCHECK, no lock held)
        self.lock_all = False
        self.lock_all_nocheck = False
        self.start: list[int] | None = None  #: PSCW access group (window ranks)
        self.posts: set[int] = set()  #: targets whose Post token was received
        self.post: list[int] | None = None  #: PSCW exposure group
        self.done_reqs: list[p2p.Request] = []
        self.pending: list[tuple[int, p2p.Request]] = []  #: (target, operation)

    def passive(self, target: int) -> bool:
        return self.lock_all or target in self.locks

    def any_passive(self) -> bool:
        return self.lock_all or bool(self.locks)


class WinImpl:
    __slots__ = ("world", "comm", "flavor", "model", "name", "info", "attrs", "errhandler",
                 "segments", "regions", "lock_states", "epochs", "shared", "freed", "__weakref__")

    def __init__(self, parent: CommImpl, flavor: int) -> None:
        self.world = parent.world
        self.comm = CommImpl(parent.world, list(parent.group), "")
        n = parent.size
        self.flavor = flavor
        self.model = UNIFIED
        self.name = ""
        self.info = dict(DEFAULT_INFO)
        self.attrs: dict[int, Any] = {}
        self.errhandler: Any = None
        self.segments: list[Segment | None] = [None] * n
        #: dynamic windows: per member, attached regions address -> (size, memory)
        self.regions: list[dict[int, tuple[int, memoryview]]] = [{} for _ in range(n)]
        self.lock_states = [LockState() for _ in range(n)]
        self.epochs = [Epochs() for _ in range(n)]
        self.shared: bytearray | None = None
        self.freed = 0

    @property
    def size(self) -> int:
        return self.comm.size

    def rank(self, proc: Process) -> int:
        return self.comm.rank_of[proc.rank]

    def segment(self, rank: int) -> Segment:
        seg = self.segments[rank]
        assert seg is not None
        return seg

    def describe(self) -> str:
        return self.name or f"win#{self.comm.context}"


# -- helpers ---------------------------------------------------------------------------------
def _sync_error(call: str, what: str = "") -> None:
    errors.raise_error(errors.ERR_RMA_SYNC, f"{call}: wrong synchronization of RMA calls{what}")


def _ctrl(proc: Process, win: WinImpl, target: int, nbytes: int, then: Callable[[], None]) -> None:
    """Send ``nbytes`` (+ header) from ``proc`` to window rank ``target``; ``then()`` on arrival."""
    flow = proc.world.transfer(proc.host, win.comm.host_of(target), nbytes + ENVELOPE_BYTES)
    flow.add_callback(lambda _f: then())


def _back(win: WinImpl, target: int, proc: Process, nbytes: int, then: Callable[[], None]) -> None:
    """Send ``nbytes`` (+ header) from window rank ``target`` back to ``proc``."""
    flow = win.world.transfer(win.comm.host_of(target), proc.host, nbytes + ENVELOPE_BYTES)
    flow.add_callback(lambda _f: then())


def _new_request(proc: Process, call: str, target: int) -> p2p.Request:
    r = p2p.Request(proc, p2p.NULL_KIND, None, 0, call, target, ANY_TAG)
    r.source = PROC_NULL
    return r


def done_request(proc: Process, call: str) -> p2p.Request:
    """An already complete RMA request (PROC_NULL targets, empty transfers)."""
    r = _new_request(proc, call, PROC_NULL)
    r._finish()
    return r


def barrier(proc: Process, win: WinImpl, call: str) -> None:
    """Dissemination barrier over the window's group (16-byte messages)."""
    comm = win.comm
    n = comm.size
    if n < 2:
        return
    me = comm.rank_of[proc.rank]
    k, rnd = 1, 0
    while k < n:
        s = p2p.isend(proc, comm, COLL, None, 0, (me + k) % n, _TAG_BARRIER + rnd, call)
        p2p.recv(proc, comm, COLL, (me - k) % n, _TAG_BARRIER + rnd, None, call)
        p2p.wait(proc, s)
        k *= 2
        rnd += 1


# -- creation and destruction -------------------------------------------------------------------
def create(proc: Process, parent: CommImpl, flavor: int, mem: memoryview | None, size: int,
           disp_unit: int, call: str) -> WinImpl:
    """Collective creation over ``parent``: every member registers its segment.

    ``mem`` is the caller's memory (Create), None to allocate ``size`` bytes (Allocate,
    Allocate_shared: contiguous across ranks, as MPICH's default) or to have none (dynamic).
    """
    if size < 0:
        errors.raise_error(errors.ERR_SIZE, f"{call}: invalid size argument in RMA call (size={size})")
    if disp_unit <= 0:
        errors.raise_error(errors.ERR_DISP, f"{call}: invalid displacement argument in RMA call "
                           f"(disp_unit={disp_unit})")
    win: WinImpl = parent.agree(proc, ("win", flavor), lambda: WinImpl(parent, flavor), parent.size)
    me = parent.rank_of[proc.rank]
    if flavor == FLAVOR_ALLOCATE:
        mem = memoryview(bytearray(size))
    elif flavor in (FLAVOR_DYNAMIC, FLAVOR_SHARED) or mem is None:
        mem = empty_mem() if flavor != FLAVOR_SHARED else None
    if mem is not None:
        win.segments[me] = Segment(mem, size, disp_unit, address_of(mem) if size else 0)
    else:
        win.segments[me] = Segment(empty_mem(), size, disp_unit, 0)
    barrier(proc, win, call)
    if flavor == FLAVOR_SHARED and win.shared is None:
        total = sum(win.segment(r).size for r in range(win.size))
        win.shared = bytearray(max(total, 1))
        whole = memoryview(win.shared)
        off = 0
        for r in range(win.size):
            seg = win.segment(r)
            seg.mem = whole[off:off + seg.size]
            seg.base = address_of(whole[off:]) if seg.size else 0
            off += seg.size
    return win


def free(proc: Process, win: WinImpl, call: str = "MPI_Win_free") -> None:
    me = win.rank(proc)
    ep = win.epochs[me]
    if ep.any_passive() or ep.start is not None or ep.post is not None:
        _sync_error(call)
    _complete_pending(proc, ep, None, call)
    barrier(proc, win, call)
    win.freed += 1
    if win.freed == win.size:
        win.comm.refcount = 0


def shared_query(proc: Process, win: WinImpl, rank: int, call: str = "MPI_Win_shared_query") -> Segment:
    if win.flavor == FLAVOR_DYNAMIC:
        errors.raise_error(errors.ERR_RMA_FLAVOR, f"{call}: incorrect window flavor")
    if rank == PROC_NULL:
        for r in range(win.size):
            if win.segment(r).size:
                return win.segment(r)
        return win.segment(0)
    if not 0 <= rank < win.size:
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {rank} but must be "
                           f"nonnegative and less than {win.size}")
    return win.segment(rank)


def attach(proc: Process, win: WinImpl, mem: memoryview, call: str = "MPI_Win_attach") -> None:
    if win.flavor != FLAVOR_DYNAMIC:
        errors.raise_error(errors.ERR_RMA_FLAVOR, f"{call}: incorrect window flavor")
    win.regions[win.rank(proc)][address_of(mem)] = (mem.nbytes, mem)


def detach(proc: Process, win: WinImpl, mem: memoryview, call: str = "MPI_Win_detach") -> None:
    if win.flavor != FLAVOR_DYNAMIC:
        errors.raise_error(errors.ERR_RMA_FLAVOR, f"{call}: incorrect window flavor")
    win.regions[win.rank(proc)].pop(address_of(mem), None)  # MPICH ignores unknown regions


# -- target memory ------------------------------------------------------------------------------
def _check_target(proc: Process, win: WinImpl, target: int, call: str) -> Epochs:
    if not 0 <= target < win.size:
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {target} but must be "
                           f"nonnegative and less than {win.size}")
    ep = win.epochs[win.rank(proc)]
    if ep.fence or ep.passive(target):
        return ep
    if ep.start is not None and target in ep.start:
        if target not in ep.posts:
            _await_post(proc, win, ep, target, call)
        return ep
    _sync_error(call)
    return ep


def _locate(win: WinImpl, target: int, disp: int, nbytes: int, call: str) -> tuple[memoryview, int]:
    """Memory and byte offset of ``nbytes`` at displacement ``disp`` of ``target``'s window."""
    if disp < 0:
        errors.raise_error(errors.ERR_DISP, f"{call}: invalid displacement argument in RMA call "
                           f"(target_disp={disp})")
    if win.flavor == FLAVOR_DYNAMIC:
        for addr, (size, mem) in win.regions[target].items():
            if addr <= disp and disp + nbytes <= addr + size:
                return mem, disp - addr
        if nbytes == 0:
            return empty_mem(), 0
        errors.raise_error(errors.ERR_RMA_RANGE, f"{call}: target memory is not contained within "
                           f"the window (address {disp:#x}, {nbytes} bytes not attached)")
    seg = win.segment(target)
    off = disp * seg.disp_unit
    if off + nbytes > seg.size:
        errors.raise_error(errors.ERR_RMA_RANGE, f"{call}: target memory is not contained within "
                           f"the window (offset {off} + {nbytes} bytes > window size {seg.size})")
    return seg.mem, off


def _op_type(datatype: DatatypeImpl) -> DatatypeImpl:
    """The datatype an accumulate combines with: MPICH's RMA treats ``MPI_BYTE`` as
    ``unsigned char`` (SUM, MAX... are accepted on bytes, unlike in collectives)."""
    return BY_NAME["MPI_UNSIGNED_CHAR"] if datatype.name == "MPI_BYTE" else datatype


def _combine(op: OpImpl, data: bytes, cur: bytearray, count: int, dt: DatatypeImpl) -> None:
    if count > 0:
        op.apply(data, cur, count, _op_type(dt), rma=True)


def _check_op(op: OpImpl, datatype: DatatypeImpl, count: int, call: str) -> None:
    if not op.is_predefined:
        errors.raise_error(errors.ERR_OP, f"{call}: user-defined operations are not allowed in "
                           "RMA accumulate operations")
    if count > 0:  # MPICH checks the op against the datatype only when it applies it
        op.check(_op_type(datatype), rma=True)


class Target:
    """A parsed target spec: ``count`` elements of ``datatype`` at displacement ``disp``."""

    __slots__ = ("disp", "count", "datatype")

    def __init__(self, disp: int, count: int, datatype: DatatypeImpl) -> None:
        self.disp = disp
        self.count = count
        self.datatype = datatype


def _start(proc: Process, win: WinImpl, ep: Epochs, target: int, call: str) -> p2p.Request:
    req = _new_request(proc, call, target)
    ep.pending.append((target, req))
    return req


# -- operations ---------------------------------------------------------------------------------
def put(proc: Process, win: WinImpl, data: bytes, target: int, t: Target, call: str = "MPI_Put",
        op: OpImpl | None = None) -> p2p.Request:
    """Put (``op`` None) or Accumulate ``data`` (packed origin bytes) into the target."""
    ep = _check_target(proc, win, target, call)
    dt = t.datatype
    if op is not None:
        _check_op(op, dt, t.count, call)
    mem, off = _locate(win, target, t.disp, dt.span(t.count), call)
    req = _start(proc, win, ep, target, call)
    count = t.count

    def land() -> None:
        if op is None or op is REPLACE:
            dt.unpack(data, mem, off, count)
        elif op is not NO_OP:
            cur = bytearray(dt.pack(mem, off, count))
            _combine(op, data, cur, count, dt)
            dt.unpack(cur, mem, off, count)
        req._finish()

    _ctrl(proc, win, target, len(data), land)
    return req


def get(proc: Process, win: WinImpl, deliver: Callable[[bytes], None], target: int, t: Target,
        call: str = "MPI_Get") -> p2p.Request:
    """Get the target data; ``deliver(packed)`` writes it into the origin buffer on arrival."""
    ep = _check_target(proc, win, target, call)
    dt = t.datatype
    mem, off = _locate(win, target, t.disp, dt.span(t.count), call)
    req = _start(proc, win, ep, target, call)

    def at_target() -> None:
        data = dt.pack(mem, off, t.count)

        def home() -> None:
            deliver(data)
            req._finish()

        _back(win, target, proc, len(data), home)

    _ctrl(proc, win, target, 0, at_target)
    return req


def get_accumulate(proc: Process, win: WinImpl, data: bytes, deliver: Callable[[bytes], None],
                   target: int, t: Target, op: OpImpl, call: str = "MPI_Get_accumulate",
                   compare: bytes | None = None) -> p2p.Request:
    """Atomic fetch-and-combine: the old target contents go to ``deliver``. With
    ``compare`` (Compare_and_swap), ``data`` replaces the target only if it equals ``compare``."""
    ep = _check_target(proc, win, target, call)
    dt = t.datatype
    if compare is None:
        _check_op(op, dt, t.count, call)
    mem, off = _locate(win, target, t.disp, dt.span(t.count), call)
    req = _start(proc, win, ep, target, call)
    count = t.count
    outbytes = len(data) + (len(compare) if compare is not None else 0)
    if op is NO_OP and compare is None:
        outbytes = 0

    def at_target() -> None:
        old = dt.pack(mem, off, count)
        if compare is not None:
            if old == compare:
                dt.unpack(data, mem, off, count)
        elif op is REPLACE:
            dt.unpack(data, mem, off, count)
        elif op is not NO_OP:
            cur = bytearray(old)
            _combine(op, data, cur, count, dt)
            dt.unpack(cur, mem, off, count)

        def home() -> None:
            deliver(old)
            req._finish()

        _back(win, target, proc, len(old), home)

    _ctrl(proc, win, target, outbytes, at_target)
    return req


# -- completion ---------------------------------------------------------------------------------
def _complete_pending(proc: Process, ep: Epochs, targets: set[int] | None, call: str) -> None:
    keep = []
    for tgt, req in ep.pending:
        if targets is None or tgt in targets:
            if req.state == 0:
                block_on(req, lambda c=call, r=req: f"{c}: waiting for an RMA operation to rank {r.peer}")
        else:
            keep.append((tgt, req))
    ep.pending = keep


def flush(proc: Process, win: WinImpl, target: int | None, call: str) -> None:
    """Flush/Flush_local (``target``) or Flush_all/Flush_local_all (None)."""
    ep = win.epochs[win.rank(proc)]
    if target is not None:
        if not 0 <= target < win.size:
            errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {target} but must "
                               f"be nonnegative and less than {win.size}")
        if not ep.passive(target):
            _sync_error(call)
        _complete_pending(proc, ep, {target}, call)
    else:
        if not ep.any_passive():
            _sync_error(call)
        _complete_pending(proc, ep, None, call)


def sync(proc: Process, win: WinImpl, call: str = "MPI_Win_sync") -> None:
    if not win.epochs[win.rank(proc)].any_passive():
        _sync_error(call)


# -- fence --------------------------------------------------------------------------------------
def fence(proc: Process, win: WinImpl, assertion: int, call: str = "MPI_Win_fence") -> None:
    if assertion & ~_ALL_MODES:
        errors.raise_error(errors.ERR_ARG, f"{call}: invalid assert argument ({assertion})")
    ep = win.epochs[win.rank(proc)]
    if ep.any_passive() or ep.start is not None or ep.post is not None:
        _sync_error(call)
    _complete_pending(proc, ep, None, call)
    barrier(proc, win, call)
    ep.fence = not assertion & MODE_NOSUCCEED


# -- passive target -----------------------------------------------------------------------------
def _acquire(proc: Process, win: WinImpl, target: int, lock_type: int) -> Trigger:
    granted = Trigger(proc.world.engine, f"MPI_Win_lock(rank={target}, win={win.describe()})")
    state = win.lock_states[target]
    _ctrl(proc, win, target, 0,
          lambda: state.request(lock_type, lambda: _back(win, target, proc, 0, granted.fire)))
    return granted


def _release(proc: Process, win: WinImpl, target: int, lock_type: int) -> Trigger:
    arrived = Trigger(proc.world.engine, f"MPI_Win_unlock(rank={target}, win={win.describe()})")
    state = win.lock_states[target]

    def at_target() -> None:
        state.release(lock_type)
        arrived.fire()

    _ctrl(proc, win, target, 0, at_target)
    return arrived


def lock(proc: Process, win: WinImpl, lock_type: int, target: int, assertion: int,
         call: str = "MPI_Win_lock") -> None:
    if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
        errors.raise_error(errors.ERR_ARG, f"{call}: invalid lock_type ({lock_type})")
    if not 0 <= target < win.size:
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {target} but must be "
                           f"nonnegative and less than {win.size}")
    if assertion & ~_ALL_MODES:
        errors.raise_error(errors.ERR_ARG, f"{call}: invalid assert argument ({assertion})")
    ep = win.epochs[win.rank(proc)]
    if ep.passive(target) or ep.fence and ep.pending or ep.start is not None:
        _sync_error(call)
    ep.fence = False
    if assertion & MODE_NOCHECK:
        ep.locks[target] = 0
        return
    block_on(_acquire(proc, win, target, lock_type))
    ep.locks[target] = lock_type


def unlock(proc: Process, win: WinImpl, target: int, call: str = "MPI_Win_unlock") -> None:
    if not 0 <= target < win.size:
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank has value {target} but must be "
                           f"nonnegative and less than {win.size}")
    ep = win.epochs[win.rank(proc)]
    if target not in ep.locks:
        _sync_error(call)
    _complete_pending(proc, ep, {target}, call)
    lock_type = ep.locks.pop(target)
    if lock_type:
        block_on(_release(proc, win, target, lock_type))


def lock_all(proc: Process, win: WinImpl, assertion: int, call: str = "MPI_Win_lock_all") -> None:
    if assertion & ~_ALL_MODES:
        errors.raise_error(errors.ERR_ARG, f"{call}: invalid assert argument ({assertion})")
    ep = win.epochs[win.rank(proc)]
    if ep.any_passive() or ep.start is not None:
        _sync_error(call)
    ep.fence = False
    if not assertion & MODE_NOCHECK:
        for g in [_acquire(proc, win, t, LOCK_SHARED) for t in range(win.size)]:
            block_on(g)
    ep.lock_all = True
    ep.lock_all_nocheck = bool(assertion & MODE_NOCHECK)


def unlock_all(proc: Process, win: WinImpl, call: str = "MPI_Win_unlock_all") -> None:
    ep = win.epochs[win.rank(proc)]
    if not ep.lock_all:
        _sync_error(call)
    _complete_pending(proc, ep, None, call)
    ep.lock_all = False
    if not ep.lock_all_nocheck:
        for a in [_release(proc, win, t, LOCK_SHARED) for t in range(win.size)]:
            block_on(a)


# -- general active target (PSCW) ---------------------------------------------------------------
def _group_ranks(win: WinImpl, members: tuple[int, ...], call: str) -> list[int]:
    out = []
    for w in members:
        r = win.comm.rank_of.get(w)
        if r is None:
            errors.raise_error(errors.ERR_GROUP, f"{call}: group member (world rank {w}) is not in "
                               "the window's group")
        out.append(r)
    return out


def post(proc: Process, win: WinImpl, members: tuple[int, ...], assertion: int,
         call: str = "MPI_Win_post") -> None:
    ep = win.epochs[win.rank(proc)]
    if ep.post is not None or ep.fence and ep.pending:
        _sync_error(call)
    ranks = _group_ranks(win, members, call)
    ep.post = ranks
    comm = win.comm
    for o in ranks:
        p2p.isend(proc, comm, COLL, None, 0, o, _TAG_POST, call)
    ep.done_reqs = [p2p.irecv(proc, comm, COLL, o, _TAG_DONE, None, call) for o in ranks]


def start(proc: Process, win: WinImpl, members: tuple[int, ...], assertion: int,
          call: str = "MPI_Win_start") -> None:
    ep = win.epochs[win.rank(proc)]
    if ep.start is not None or ep.any_passive():
        _sync_error(call)
    ep.start = _group_ranks(win, members, call)
    ep.posts = set()
    ep.fence = False


def _await_post(proc: Process, win: WinImpl, ep: Epochs, target: int, call: str) -> None:
    p2p.recv(proc, win.comm, COLL, target, _TAG_POST, None, call)
    ep.posts.add(target)


def complete(proc: Process, win: WinImpl, call: str = "MPI_Win_complete") -> None:
    ep = win.epochs[win.rank(proc)]
    group = ep.start
    if group is None:
        _sync_error(call)
        return
    for t in group:
        if t not in ep.posts:
            _await_post(proc, win, ep, t, call)
    _complete_pending(proc, ep, set(group), call)
    for t in group:
        p2p.isend(proc, win.comm, COLL, None, 0, t, _TAG_DONE, call)
    ep.start = None
    ep.posts = set()


def wait(proc: Process, win: WinImpl, call: str = "MPI_Win_wait") -> None:
    ep = win.epochs[win.rank(proc)]
    if ep.post is None:
        _sync_error(call)
    p2p.waitall(proc, ep.done_reqs)
    ep.post = None
    ep.done_reqs = []


def test(proc: Process, win: WinImpl, call: str = "MPI_Win_test") -> bool:
    ep = win.epochs[win.rank(proc)]
    if ep.post is None:
        _sync_error(call)
    pending = [r for r in ep.done_reqs if r.state == 0]
    if pending and not p2p.test(proc, pending[0]):
        return False
    if any(r.state == 0 for r in ep.done_reqs):
        return False
    ep.post = None
    ep.done_reqs = []
    return True
