"""Communicator management beyond Dup/Split: Create, Create_group, Split_type, Idup,
attributes and keyvals, error handlers, info, handles (py2f/f2py/fromhandle). Mixed into
:class:`smpy.mpi.comm.Comm`; the classes and constants defined above this module
(``Intracomm``, ``COMM_NULL``...) come from :mod:`smpy.mpi.registry`.

New communicators are agreed on by the runtime (:meth:`CommImpl.agree`) and cost what they
cost in MPICH: ``Create`` and ``Split_type`` an allgather over the parent (MPICH's context id
agreement plus the split exchange), ``Create_group`` an allgather over the new group only (it
is collective over the group, not the parent: tagged point-to-point messages on the parent's
collective channel).

``Split_type``: ``COMM_TYPE_SHARED`` groups the ranks on the same simulated host;
``COMM_TYPE_HW_GUIDED`` and ``COMM_TYPE_RESOURCE_GUIDED`` do the same when the info key
``mpi_hw_resource_type`` is ``mpi_shared_memory`` and return ``COMM_NULL`` for any other or
no value (MPICH with hwloc on one node, which smpy's host is the model of);
``COMM_TYPE_HW_UNGUIDED`` splits by host only when that gives a strictly smaller group,
otherwise ``COMM_NULL`` (MPICH on a single node). Keys order ranks, ties by parent rank.
"""

from __future__ import annotations

from typing import Any

from smpy.colls.basic import barrier
from smpy.mpi import errhandler as _eh
from smpy.mpi import registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.info import Info
from smpy.mpi.objmodel import (
    T_COMM,
    HandleMixin,
    as_int,
    builtin_handle,
    cannot_serialize,
    direct_handle,
    lookup_direct,
    null_handle,
)
from smpy.mpi.request import Request
from smpy.runtime import attributes as _attrs
from smpy.runtime import constants as C
from smpy.runtime import errors, lifecycle
from smpy.runtime import session as rsession
from smpy.runtime.comm import CommImpl
from smpy.runtime.world import NotInSimulation

__all__ = [
    "COMM_TYPE_SHARED", "COMM_TYPE_HW_GUIDED", "COMM_TYPE_HW_UNGUIDED", "COMM_TYPE_RESOURCE_GUIDED",
]

COMM_TYPE_SHARED = 1
COMM_TYPE_HW_GUIDED = 2
COMM_TYPE_HW_UNGUIDED = 3
COMM_TYPE_RESOURCE_GUIDED = 4

_UNGUIDED = 1 << 24  # colors of HW_UNGUIDED hosts (above any host index)
_HW_KEY = "mpi_hw_resource_type"
_SHMEM = "mpi_shared_memory"

_WORLD_HANDLE = builtin_handle(T_COMM, 0)
_SELF_HANDLE = builtin_handle(T_COMM, 1)
_NULL_HANDLE = null_handle(T_COMM)

#: the hints MPICH 5 reports for every communicator (in its order); a duplicate starts again
#: from these (MPI_Comm_dup does not carry hints over in MPICH), unknown keys are dropped
_COMM_INFO_DEFAULTS = {
    "mpi_assert_no_any_tag": "false", "mpi_assert_no_any_source": "false",
    "mpi_assert_exact_length": "false", "mpi_assert_allow_overtaking": "false",
    "mpi_assert_strict_persistent_collective_ordering": "false", "enable_multi_nic_striping": "true",
    "enable_multi_nic_hashing": "true", "multi_nic_pref_nic": "-1", "sender_vci": "-1", "receiver_vci": "-1",
    "vci": "-1", "mpi_memory_alloc_kinds": "mpi,system",
}

#: the predefined attributes every communicator has (MPICH caches them on all of them)
_PREDEFINED_KEYVALS = (C.KEYVAL_TAG_UB, C.KEYVAL_IO, C.KEYVAL_WTIME_IS_GLOBAL, C.KEYVAL_UNIVERSE_SIZE,
                       C.KEYVAL_APPNUM, C.KEYVAL_LASTUSEDCODE)


def _info_items(info: Any) -> dict[str, str]:
    if info is None:
        return {}
    d = getattr(info, "_d", None)
    if getattr(info, "_null", False) or d is None:
        return {}
    return dict(d)


class CommMgmtMixin(HandleMixin):
    __slots__ = ()

    # -- handles --------------------------------------------------------------------------
    def _handle_value(self) -> int:
        raw = self._raw()  # type: ignore[attr-defined]
        if raw is None:
            return _NULL_HANDLE
        try:
            p = proc()
        except NotInSimulation:
            return _NULL_HANDLE
        if raw is p.world.comm_world:
            return _WORLD_HANDLE
        if raw is p.comm_self:
            return _SELF_HANDLE
        return direct_handle(T_COMM, raw)

    _value = _handle_value

    @classmethod
    def _from_value(cls, value: int) -> Any:
        if value == _NULL_HANDLE:
            return cls._wrap(None)  # type: ignore[attr-defined]
        p = proc()
        if value == _WORLD_HANDLE:
            impl = p.world.comm_world
        elif value == _SELF_HANDLE:
            impl = p.comm_self
        else:
            impl = lookup_direct(value)
            if not isinstance(impl, CommImpl):
                errors.raise_error(errors.ERR_COMM, f"MPI_Comm_f2c: Invalid communicator handle {as_int(value)}")
        kind = registry.comm_class(impl)  # mpi4py gives the most derived class
        if issubclass(kind, cls):
            cls = kind
        return cls._wrap(impl)  # type: ignore[attr-defined]

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        raw = self._raw()  # type: ignore[attr-defined]
        if raw is None or self._is_const():
            return
        p = proc()
        if raw is p.world.comm_world or raw is p.comm_self:
            self._set_raw(None)  # type: ignore[attr-defined]
            return
        self.Free()  # type: ignore[attr-defined]

    def _is_const(self) -> bool:
        return any(self is registry.get(name) for name in ("COMM_NULL", "COMM_WORLD", "COMM_SELF"))

    def __reduce__(self) -> str | tuple[Any, ...]:
        value = self._handle_value()
        name = {_NULL_HANDLE: "COMM_NULL", _WORLD_HANDLE: "COMM_WORLD", _SELF_HANDLE: "COMM_SELF"}.get(value)
        if name is None:
            raise cannot_serialize(self)
        const = registry.get(name)
        if self is const:
            return name
        return (type(self), (const,))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, CommMgmtMixin):
            return NotImplemented
        raise TypeError(f"unorderable type 'mpi4py.MPI.{type(self).__name__}'")

    __le__ = __gt__ = __ge__ = __lt__

    # -- attributes -----------------------------------------------------------------------
    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:
        """Create a new attribute key for communicators."""
        return _attrs.create_keyval(proc(), _attrs.KIND_COMM, copy_fn, delete_fn, nopython)

    @classmethod
    @intargs
    def Free_keyval(cls, keyval: int) -> int:
        """Free an attribute key for communicators."""
        if keyval in _PREDEFINED_KEYVALS:
            errors.raise_error(errors.ERR_KEYVAL, "MPI_Comm_free_keyval: Cannot free permanent keyval")
        return _attrs.free_keyval(proc(), keyval, _attrs.KIND_COMM)

    @intargs
    def Get_attr(self, keyval: int) -> Any:
        """Retrieve attribute value by key."""
        impl = self._impl  # type: ignore[attr-defined]
        if keyval == C.KEYVAL_TAG_UB:
            return C.TAG_UB
        if keyval == C.KEYVAL_IO:
            return C.ANY_SOURCE
        if keyval == C.KEYVAL_WTIME_IS_GLOBAL:
            return 0  # MPICH's value (although smpy's ranks share one simulated clock)
        if keyval == C.KEYVAL_UNIVERSE_SIZE:
            return None  # MPICH under mpiexec (hydra) without a universe size: not set
        if keyval == C.KEYVAL_APPNUM:
            return proc().appnum  # index of the command in MPI_Comm_spawn_multiple
        if keyval == C.KEYVAL_LASTUSEDCODE:
            return errors.last_used_code()
        found, value = _attrs.get_attr(proc(), impl, keyval, _attrs.KIND_COMM, "MPI_Comm_get_attr")
        return value if found else None

    @intargs
    def Set_attr(self, keyval: int, attrval: Any) -> None:
        """Store attribute value associated with a key."""
        impl = self._impl  # type: ignore[attr-defined]
        if keyval in _PREDEFINED_KEYVALS:
            errors.raise_error(errors.ERR_KEYVAL, "MPI_Comm_set_attr: Cannot set permanent attribute")
        _attrs.set_attr(proc(), impl, self, keyval, attrval, _attrs.KIND_COMM, "MPI_Comm_set_attr")

    @intargs
    def Delete_attr(self, keyval: int) -> None:
        """Delete attribute value associated with a key."""
        impl = self._impl  # type: ignore[attr-defined]
        if keyval in _PREDEFINED_KEYVALS:
            errors.raise_error(errors.ERR_KEYVAL, "MPI_Comm_delete_attr: Cannot delete permanent attribute")
        _attrs.delete_attr(proc(), impl, self, keyval, _attrs.KIND_COMM, "MPI_Comm_delete_attr")

    # -- error handlers -------------------------------------------------------------------
    @classmethod
    def Create_errhandler(cls, errhandler_fn: Any) -> _eh.Errhandler:
        """Create a new error handler for communicators."""
        return _eh.create_errhandler("Comm", errhandler_fn)

    def Get_errhandler(self) -> _eh.Errhandler:
        """Get the error handler for a communicator."""
        return _eh.get_errhandler(self._impl)  # type: ignore[attr-defined]

    def Set_errhandler(self, errhandler: _eh.Errhandler) -> None:
        """Set the error handler for a communicator."""
        _eh.set_errhandler(self._impl, errhandler, "Comm")  # type: ignore[attr-defined]

    @intargs
    def Call_errhandler(self, errorcode: int) -> None:
        """Call the error handler installed on a communicator."""
        impl = self._impl  # type: ignore[attr-defined]
        _eh.call_errhandler(type(self)._wrap(impl), impl, int(errorcode), "Comm")  # type: ignore[attr-defined]

    def _errhandler_target(self) -> tuple[Any, str]:
        return self._raw(), "Comm"  # type: ignore[attr-defined]

    # -- info -----------------------------------------------------------------------------
    def Set_info(self, info: Any) -> None:
        """Set new values for the hints associated with a communicator (MPICH keeps only the
        hints it knows, see ``_COMM_INFO_DEFAULTS``)."""
        impl = self._impl  # type: ignore[attr-defined]
        store = dict(impl.info or {})
        store.update((k, v) for k, v in _info_items(info).items() if k in _COMM_INFO_DEFAULTS)
        impl.info = store

    def Get_info(self) -> Any:
        """Return the current hints for a communicator: MPICH's defaults, as set."""
        impl = self._impl  # type: ignore[attr-defined]
        hints = dict(_COMM_INFO_DEFAULTS)
        hints.update(impl.info or {})
        return Info.Create(hints)

    @property
    def info(self) -> Any:
        """Info hints."""
        return self.Get_info()

    @info.setter
    def info(self, info: Any) -> None:
        self.Set_info(info)

    # -- creation -------------------------------------------------------------------------
    @mpicall
    def Dup_with_info(self, info: Any) -> Any:
        """Duplicate a communicator with hints."""
        return self.Dup(info)  # type: ignore[attr-defined]

    @mpicall
    def Idup(self, info: Any = None) -> tuple[Any, Any]:
        """Nonblocking duplicate a communicator: the agreement is an Ibarrier (the request)."""
        from smpy.colls import buffers
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        req = buffers.barrier(pr, impl, nb=True)
        return self._dup(pr, impl, info), Request._wrap(req)  # type: ignore[attr-defined]

    @mpicall
    def Idup_with_info(self, info: Any) -> tuple[Any, Any]:
        """Nonblocking duplicate a communicator with hints."""
        return self.Idup(info)

    @classmethod
    def Get_parent(cls) -> Any:
        """Return the parent intercommunicator for this process (COMM_NULL unless spawned)."""
        return registry.get("Intercomm")._wrap(proc().parent)

    def _new_comm(self, group: list[int]) -> Any:
        return CommImpl(self._impl.world, group, "")  # type: ignore[attr-defined]

    def _after_create(self, new: Any) -> Any:
        if new is None:
            return registry.get("COMM_NULL")
        _eh.copy_errhandler(self._impl, new)  # type: ignore[attr-defined]
        return registry.get("Intracomm")._wrap(new)

    @mpicall
    def Create(self, group: Any) -> Any:
        """Create communicator from group (collective over the parent)."""
        from smpy.colls.basic import allgather
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        members = list(group._g().members)
        for w in members:
            if w not in impl.rank_of:
                errors.raise_error(errors.ERR_GROUP, "MPI_Comm_create: Invalid group (not a subset of the "
                                                     "communicator's group)")
        allgather(pr, impl, (len(members),), 4, "MPI_Comm_create")  # context id agreement
        inside = pr.rank in members
        key = tuple(members) if inside else None
        expected = len(members) if inside else impl.size - len(members)
        new = impl.agree(pr, key, (lambda: self._new_comm(members)) if inside else (lambda: None), expected)
        return self._after_create(new)

    @mpicall
    def Create_group(self, group: Any, tag: int = 0) -> Any:
        """Create communicator from group (collective over the group only)."""
        from smpy.runtime import p2p
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        members = list(group._g().members)
        p2p.check_send_tag(tag, "MPI_Comm_create_group")
        if pr.rank not in members:
            return registry.get("COMM_NULL")  # a local call for a process outside the group (MPI)
        for w in members:
            if w not in impl.rank_of:
                errors.raise_error(errors.ERR_GROUP, "MPI_Comm_create_group: Invalid group (not a subset of "
                                                     "the communicator's group)")
        # context id agreement: an allgather among the group's members (ring), tagged with tag
        local = [impl.rank_of[w] for w in members]
        me = local.index(impl.rank_of[pr.rank])
        n = len(local)
        if n > 1:
            right, left = local[(me + 1) % n], local[(me - 1) % n]
            for _ in range(n - 1):
                r = p2p.irecv(pr, impl, C.COLL, left, -10000 - tag, None, "MPI_Comm_create_group")
                s = p2p.isend(pr, impl, C.COLL, b"\0" * 4, 4, right, -10000 - tag, "MPI_Comm_create_group")
                p2p.wait(pr, s)
                p2p.wait(pr, r)
        key = ("group", tuple(members), tag)
        st = pr.attrs.setdefault("create_group_seq", {})
        seq = st.get((impl.context, key), 0)
        st[(impl.context, key)] = seq + 1
        table = impl._creations
        entry = table.get((key, seq))
        if entry is None:
            entry = table[(key, seq)] = [self._new_comm(members), 0]
        entry[1] += 1
        if entry[1] >= n:
            del table[(key, seq)]
        return self._after_create(entry[0])

    @mpicall
    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> Any:
        """Split communicator by split type."""
        from smpy.colls.basic import allgather
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        me = impl.rank_of[pr.rank]
        if split_type not in (C.UNDEFINED, COMM_TYPE_SHARED, COMM_TYPE_HW_GUIDED, COMM_TYPE_HW_UNGUIDED,
                              COMM_TYPE_RESOURCE_GUIDED):
            errors.raise_error(errors.ERR_ARG, f"MPI_Comm_split_type: Invalid split_type argument ({split_type})")
        items = _info_items(info)
        color: Any = C.UNDEFINED
        host = pr.host.index
        if split_type == COMM_TYPE_SHARED:
            color = host
        elif split_type in (COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED):
            if items.get(_HW_KEY) == _SHMEM:
                color = host
        elif split_type == COMM_TYPE_HW_UNGUIDED:
            color = _UNGUIDED + host
        triples = allgather(pr, impl, (color, key, me), 12, "MPI_Comm_split_type")
        counts: dict[Any, int] = {}
        for c, _, _ in triples:
            counts[c] = counts.get(c, 0) + 1

        def final(c: Any) -> Any:  # HW_UNGUIDED: a level as large as the parent does not count
            return C.UNDEFINED if c >= _UNGUIDED and counts[c] == impl.size else c

        color = final(color)
        if color == C.UNDEFINED:
            impl.agree(pr, ("split_type", C.UNDEFINED), lambda: None,
                       sum(1 for c, _, _ in triples if final(c) == C.UNDEFINED))
            return registry.get("COMM_NULL")
        if split_type == COMM_TYPE_HW_UNGUIDED and info is not None and not getattr(info, "_null", True):
            info.Set(_HW_KEY, _SHMEM)
        members = sorted((k, r) for c, k, r in triples if c == color)
        group = [impl.group[r] for _, r in members]
        new = impl.agree(pr, ("split_type", color), lambda: self._new_comm(group), len(group))
        return self._after_create(new)


def _delete_predefined_attrs(pr: Any) -> None:
    """MPI_Finalize first deletes COMM_SELF's attributes, then COMM_WORLD's (MPI-4 11.2.5)."""
    _attrs.delete_all(pr, pr.comm_self, registry.get("COMM_SELF"), "MPI_Finalize")
    _attrs.delete_all(pr, pr.world.comm_world, registry.get("COMM_WORLD"), "MPI_Finalize")


lifecycle.finalize_hooks.append(_delete_predefined_attrs)


@mpicall
def Comm_create_from_group(group: Any, stringtag: str, errhandler: Any, cls: Any) -> Any:
    """``MPI_Comm_create_from_group`` (``Intracomm.Create_from_group``): collective over the
    members of ``group``; the context-id agreement costs a barrier among them, as in MPICH.
    The new communicator's error handler is ``errhandler``, else ``ERRORS_RETURN`` (mpi4py's
    default for communicators it did not inherit from a parent)."""
    impl = group._impl
    if impl is None:
        errors.raise_error(errors.ERR_GROUP, f"MPI_Comm_create_from_group(MPI_GROUP_NULL, "
                           f"stringtag={stringtag}) failed\nNull group")
    pr = proc()
    if impl.rank_of(pr.rank) < 0:
        errors.raise_error(errors.ERR_GROUP, "MPI_Comm_create_from_group: the calling process "
                           "is not in the group")
    new = rsession.create_from_group(pr, impl.members, str(stringtag))
    barrier(pr, new)
    comm = cls._wrap(new)
    new.errhandler = _eh.ERRORS_RETURN if errhandler is None else errhandler
    return comm
