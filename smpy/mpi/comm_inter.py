"""Intercommunicator constructors (Intracomm.Create_intercomm; the engine of
Intercomm.Create_from_groups), and ULFM's fault-tolerance calls (Revoke, Agree, Shrink...) shared by
intra- and intercommunicators. The :class:`Intercomm` class lives in
:mod:`smpy.mpi.intercomm`.

ULFM's semantics and costs are smpy.runtime.ulfm's (docs/failures.md); without failures,
Get_failed is the empty group, Ack_failed acknowledges 0 failures, Agree is the bitwise AND of
the flags (on an intercommunicator, of the remote group's), Shrink is a copy. Revoke exists in
ULFM mode only (``--disable-auto-cleanup``): by default it is missing (NotImplementedError), as
with the MPICH smpy is compared with, so that mpi4py's testRevoke skips under both.

The facade classes these return (``Intercomm``, ``Intracomm``) are defined above this module;
they come from :mod:`smpy.mpi.registry`.
"""

from __future__ import annotations

import zlib
from typing import Any

from smpy.colls import buffers as bcoll
from smpy.colls import inter as icoll
from smpy.colls.basic import barrier
from smpy.mpi import registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.errhandler import copy_errhandler
from smpy.mpi.group import Group
from smpy.mpi.request import Request
from smpy.runtime import errors, ulfm
from smpy.runtime.comm import CommImpl
from smpy.runtime.group import GroupImpl
from smpy.runtime.inter import from_group

__all__: list[str] = []


def inherit(parent: Any, new: Any) -> Any:
    """``new`` inherits ``parent``'s error handler as MPI says; returns ``new``."""
    copy_errhandler(parent, new)
    return new


class CommFtMixin:
    """ULFM (MPI 5 fault tolerance) on any communicator."""

    __slots__ = ()

    @mpicall
    def Revoke(self) -> None:
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        if not ulfm.enabled(pr.world):  # MPICH built without ULFM: mpi4py reports it missing
            raise NotImplementedError
        ulfm.revoke(pr, impl)

    def Is_revoked(self) -> bool:
        return bool(self._impl.revoked)  # type: ignore[attr-defined]  # MPI_ERR_COMM on COMM_NULL

    def Get_failed(self) -> Any:
        return Group._wrap(GroupImpl(ulfm.get_failed(proc(), self._impl)))  # type: ignore[attr-defined]

    def Ack_failed(self, num_to_ack: int | None = None) -> int:
        return ulfm.ack_failed(proc(), self._impl, num_to_ack)  # type: ignore[attr-defined]

    @mpicall
    def Agree(self, flag: int) -> int:
        flag = int(flag)
        if not -(2**31) <= flag < 2**31:
            raise OverflowError("value too large to convert to int")
        return ulfm.agree(proc(), self._impl, flag)  # type: ignore[attr-defined]

    @mpicall
    def Iagree(self, flag: Any) -> Any:
        mem = _int_buffer(flag)

        def store(value: int) -> None:
            mem[0] = value

        return Request._wrap(ulfm.iagree(proc(), self._impl, int(mem[0]), store))  # type: ignore[attr-defined]

    @mpicall
    def Shrink(self) -> Any:
        impl = self._impl  # type: ignore[attr-defined]
        return registry.wrap_comm(inherit(impl, ulfm.shrink(proc(), impl)))

    @mpicall
    def Ishrink(self) -> tuple[Any, Any]:
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        if ulfm.failed_members(impl) or impl.revoked:  # the survivors' communicator, then a done request
            new = ulfm.shrink(pr, impl)
            return registry.wrap_comm(inherit(impl, new)), Request._wrap(bcoll.barrier(pr, pr.comm_self, nb=True))
        if impl.remote is not None:
            req = icoll.barrier(pr, impl, nb=True)
            new = icoll.dup_agree(pr, impl)
        else:
            req = bcoll.barrier(pr, impl, nb=True)
            new = _intra_agree(pr, impl)
        return registry.wrap_comm(inherit(impl, new)), Request._wrap(req)


def _int_buffer(flag: Any) -> memoryview:
    """The one-int buffer of Iagree (mpi4py: format 'i', length one)."""
    try:
        mem = memoryview(flag)
    except TypeError:
        raise TypeError(f"memoryview: a bytes-like object is required, not '{type(flag).__name__}'") from None
    fmt = mem.format
    if fmt not in ("i", "@i", "=i", "<i") and not (fmt in ("l", "q") and mem.itemsize == 4):
        raise ValueError(f"expecting buffer with format 'i', got '{fmt}'")
    if mem.nbytes // max(mem.itemsize, 1) != 1:
        raise ValueError("flag: expecting int buffer of length one")
    if mem.readonly:
        raise BufferError("Object is not writable.")
    return mem.cast("B").cast("i")


def _intra_agree(pr: Any, impl: Any) -> Any:
    return impl.agree(pr, None, lambda: CommImpl(impl.world, list(impl.group), ""), impl.size)


class IntraInterMixin(CommFtMixin):
    """Intracomm methods that make intercommunicators or communicators from groups."""

    __slots__ = ()

    @mpicall
    def Create_intercomm(self, local_leader: int, peer_comm: Any, remote_leader: int, tag: int = 0) -> Any:
        local, pr = self._impl, proc()  # type: ignore[attr-defined]
        call = "MPI_Intercomm_create"
        if not 0 <= local_leader < local.size:
            errors.raise_error(errors.ERR_RANK, f"{call}: invalid local leader {local_leader} "
                               f"(communicator size {local.size})")
        peer = None
        if local.rank_of[pr.rank] == local_leader:
            peer = peer_comm._impl
            if not 0 <= remote_leader < peer.size:
                errors.raise_error(errors.ERR_RANK, f"{call}: invalid remote leader {remote_leader} "
                                   f"(peer communicator size {peer.size})")
            if peer.group[remote_leader] in local.rank_of:
                errors.raise_error(errors.ERR_RANK, f"{call}: the remote leader belongs to the local group")
            if tag < 0:
                errors.raise_error(errors.ERR_TAG, f"{call}: invalid tag {tag}")
        side = icoll.create_intercomm(pr, local, local_leader, peer, remote_leader, tag, call)
        return registry.get("Intercomm")._wrap(inherit(local, side))


@mpicall
def _from_group(group: Any, stringtag: str, call: str) -> Any:
    pr = proc()
    members = group._g().members
    if pr.rank not in members:
        errors.raise_error(errors.ERR_GROUP, f"{call}: the calling process is not in the group")
    impl = from_group(pr, tuple(members), str(stringtag))
    barrier(pr, impl)  # context-id agreement over the group
    return impl


@mpicall
def create_from_groups(local_group: Any, local_leader: int, remote_group: Any, remote_leader: int,
                       stringtag: str) -> Any:
    """MPI_Intercomm_create_from_groups: a local communicator from ``local_group``, then
    the leaders' exchange through MPI_COMM_WORLD (tag derived from ``stringtag``)."""
    call = "MPI_Intercomm_create_from_groups"
    pr = proc()
    local = _from_group(local_group, stringtag, call)
    rmembers = remote_group._g().members
    if not 0 <= local_leader < local.size:
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid local leader {local_leader}")
    if not 0 <= remote_leader < len(rmembers):
        errors.raise_error(errors.ERR_RANK, f"{call}: invalid remote leader {remote_leader}")
    world = pr.world.comm_world
    tag = zlib.crc32(str(stringtag).encode()) & 0x3FFFFFFF
    return icoll.create_intercomm(pr, local, local_leader, world, rmembers[remote_leader], tag, call)

