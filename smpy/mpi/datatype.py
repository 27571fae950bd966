"""``MPI.Datatype`` and the predefined datatype constants (facade over ``DatatypeImpl``).

A ``Datatype`` holds one :class:`~smpy.runtime.datatype.DatatypeImpl` in ``_impl``; equality
is identity of impls (``MPI.FLOAT32_T is MPI.FLOAT``; ``MPI.DOUBLE.Dup() != MPI.DOUBLE``), and,
as in mpi4py, datatypes are unhashable. The names MPICH leaves null in this build
(``MPI.REAL2``, ``MPI.LOGICAL1`` ...) are distinct objects equal to ``MPI.DATATYPE_NULL``.
Derived datatypes are built by :mod:`smpy.runtime.datatype` (typemaps as blocks of a child
type); this module parses arguments as mpi4py does, decodes envelopes/contents, and pickles
derived types by their constructor (mpi4py's ``decode``/``_datatype_create``).
"""

from __future__ import annotations

import copyreg
import operator
import weakref
from typing import Any

from smpy.mpi.args import intargs
from smpy.mpi.buffer import acquire
from smpy.mpi.objmodel import copy_arg
from smpy.runtime import attributes as _attributes
from smpy.runtime import datatype as _rt
from smpy.runtime import errors
from smpy.runtime.datatype import (
    BY_NAME,
    COMBINER_CONTIGUOUS,
    COMBINER_DARRAY,
    COMBINER_DUP,
    COMBINER_F90_COMPLEX,
    COMBINER_F90_INTEGER,
    COMBINER_F90_REAL,
    COMBINER_HINDEXED,
    COMBINER_HINDEXED_BLOCK,
    COMBINER_HVECTOR,
    COMBINER_INDEXED,
    COMBINER_INDEXED_BLOCK,
    COMBINER_NAMED,
    COMBINER_RESIZED,
    COMBINER_STRUCT,
    COMBINER_SUBARRAY,
    COMBINER_VALUE_INDEX,
    COMBINER_VECTOR,
    DISTRIBUTE_BLOCK,
    DISTRIBUTE_CYCLIC,
    DISTRIBUTE_DFLT_DARG,
    DISTRIBUTE_NONE,
    ORDER_C,
    ORDER_F,
    TYPEDICT,
    DatatypeImpl,
    get_value_index,
)
from smpy.runtime.datatype import DATATYPE_NULL as _NULL_IMPL
from smpy.runtime.datatype import PREDEFINED as _IMPLS
from smpy.runtime.world import NotInSimulation
from smpy.runtime.world import current as _proc

# MPI_TYPECLASS_* (MPICH)
TYPECLASS_INTEGER = 2
TYPECLASS_REAL = 1
TYPECLASS_COMPLEX = 3
TYPECLASS_LOGICAL = 4
ORDER_FORTRAN = ORDER_F

_COMBINER_NAMES = {
    COMBINER_NAMED: "NAMED", COMBINER_DUP: "DUP", COMBINER_CONTIGUOUS: "CONTIGUOUS",
    COMBINER_VECTOR: "VECTOR", COMBINER_HVECTOR: "HVECTOR", COMBINER_INDEXED: "INDEXED",
    COMBINER_HINDEXED: "HINDEXED", COMBINER_INDEXED_BLOCK: "INDEXED_BLOCK",
    COMBINER_HINDEXED_BLOCK: "HINDEXED_BLOCK", COMBINER_STRUCT: "STRUCT",
    COMBINER_SUBARRAY: "SUBARRAY", COMBINER_DARRAY: "DARRAY", COMBINER_RESIZED: "RESIZED",
    COMBINER_VALUE_INDEX: "VALUE_INDEX", COMBINER_F90_INTEGER: "F90_INTEGER",
    COMBINER_F90_REAL: "F90_REAL", COMBINER_F90_COMPLEX: "F90_COMPLEX",
}
_PREDEF_COMBINERS = (COMBINER_NAMED, COMBINER_VALUE_INDEX, COMBINER_F90_INTEGER,
                     COMBINER_F90_REAL, COMBINER_F90_COMPLEX)


def _ints(seq: Any) -> list[int]:
    """mpi4py's ``getarray``: a sequence of integers (``operator.index`` on each item)."""
    return [operator.index(seq[i]) for i in range(len(seq))]


def _chk_ints(seq: Any, n: int) -> list[int]:
    """mpi4py's ``chkarray``: ``getarray`` with a length check."""
    values = _ints(seq)
    if len(values) != n:
        raise ValueError(f"expecting {n} items, got {len(values)}")
    return values

_MATCH_SIZE = {
    (TYPECLASS_INTEGER, 1): "INTEGER1", (TYPECLASS_INTEGER, 2): "INTEGER2",
    (TYPECLASS_INTEGER, 4): "INTEGER4", (TYPECLASS_INTEGER, 8): "INTEGER8",
    (TYPECLASS_REAL, 4): "REAL4", (TYPECLASS_REAL, 8): "REAL8", (TYPECLASS_REAL, 16): "REAL16",
    (TYPECLASS_COMPLEX, 8): "COMPLEX8", (TYPECLASS_COMPLEX, 16): "COMPLEX16",
    (TYPECLASS_COMPLEX, 32): "COMPLEX32",
}


def _null_type(call: str) -> None:
    errors.raise_error(errors.ERR_TYPE, f"{call}: Datatype for argument datatype is a null "
                                        "datatype")


class Datatype:
    """Datatype object."""

    __slots__ = ("_impl", "__weakref__")

    _impl: DatatypeImpl

    def __new__(cls, datatype: Datatype | None = None) -> Datatype:
        copy_arg(datatype, Datatype, "datatype")
        self = object.__new__(cls)
        self._impl = _NULL_IMPL if datatype is None else datatype._impl
        return self

    def __init__(self, datatype: Datatype | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: DatatypeImpl) -> Datatype:
        """The facade object for an internal datatype (the predefined constant if any)."""
        obj = _BY_IMPL.get(id(impl))
        if obj is not None and obj._impl is impl:
            return obj
        new = cls.__new__(cls)
        new._impl = impl
        return new

    def _live(self, call: str) -> DatatypeImpl:
        impl = self._impl
        if impl is _NULL_IMPL:
            _null_type(call)
        return impl

    def _committed(self, call: str) -> DatatypeImpl:
        impl = self._live(call)
        if not impl.committed:
            errors.raise_error(errors.ERR_TYPE, f"{call}: Datatype has not been committed")
        return impl

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._impl is other._impl

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._impl is not other._impl

    __hash__ = None  # type: ignore[assignment]  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._impl is not _NULL_IMPL

    def __reduce__(self) -> str | tuple[Any, ...]:
        name = _CONST_NAME.get(id(self))
        if name is not None and _CONSTANTS.get(name) is self:
            return name
        impl = self._impl
        if impl.combiner == COMBINER_NAMED:
            name = _IMPL_NAME.get(id(impl))
            if name is not None:  # a copy of a constant: unpickles to another copy
                return (copyreg.__newobj__, (type(self), _CONSTANTS[name]))
        basetype, combiner, params = self.decode()
        return (_datatype_create, (basetype, combiner, params, True))

    # -- sizes and bounds -----------------------------------------------------------------
    def Get_size(self) -> int:
        """Return the number of bytes occupied by entries in the datatype."""
        return self._live("MPI_Type_size").size

    @property
    def size(self) -> int:
        """Size (in bytes)."""
        return self.Get_size()

    def Get_extent(self) -> tuple[int, int]:
        """Return lower bound and extent of datatype."""
        impl = self._live("MPI_Type_get_extent")
        return impl.lb, impl.extent

    @property
    def extent(self) -> int:
        """Extent."""
        return self.Get_extent()[1]

    @property
    def lb(self) -> int:
        """Lower bound."""
        return self.Get_extent()[0]

    @property
    def ub(self) -> int:
        """Upper bound."""
        lb, extent = self.Get_extent()
        return lb + extent

    def Get_true_extent(self) -> tuple[int, int]:
        """Return the true lower bound and extent of a datatype."""
        impl = self._live("MPI_Type_get_true_extent")
        return impl.true_lb, impl.true_extent

    @property
    def true_extent(self) -> int:
        """True extent."""
        return self.Get_true_extent()[1]

    @property
    def true_lb(self) -> int:
        """True lower bound."""
        return self.Get_true_extent()[0]

    @property
    def true_ub(self) -> int:
        """True upper bound."""
        lb, extent = self.Get_true_extent()
        return lb + extent

    # -- names and codes ----------------------------------------------------------------------
    def Get_name(self) -> str:
        """Get the print name for this datatype."""
        return self._impl.name

    def Set_name(self, name: str) -> None:
        """Set the print name for this datatype."""
        self._live("MPI_Type_set_name").name = str(name)

    @property
    def name(self) -> str:
        """Print name."""
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    @property
    def typechar(self) -> str:
        """Character code."""
        return self._impl.typechar

    @property
    def typestr(self) -> str:
        """Type string."""
        return self._impl.typestr

    def tocode(self) -> str:
        """Get character code or type string from predefined MPI datatype."""
        impl = self._impl
        while impl.combiner == COMBINER_DUP and impl.base is not None:
            impl = impl.base
        if impl.code is None or impl is _NULL_IMPL:
            raise ValueError("cannot map to character code or type string")
        return impl.code

    @classmethod
    def fromcode(cls, code: str) -> Datatype:
        """Get predefined MPI datatype from character code or type string."""
        impl = TYPEDICT.get(code)
        if impl is None:
            raise ValueError(f"cannot map code {code!r} to MPI datatype")
        return cls._wrap(impl)

    # -- envelope -----------------------------------------------------------------------------
    @property
    def is_predefined(self) -> bool:
        """Is a predefined datatype."""
        impl = self._impl
        return impl is _NULL_IMPL or impl.combiner in _PREDEF_COMBINERS

    @property
    def combiner(self) -> int:
        """Combiner."""
        return self._live("MPI_Type_get_envelope").combiner

    @property
    def is_named(self) -> bool:
        """Is a named datatype."""
        return self.combiner == COMBINER_NAMED

    def Get_envelope(self) -> tuple[int, int, int, int, int]:
        """Return the number of input arguments used to create a datatype:
        ``(integers, addresses, large counts, datatypes, combiner)``."""
        impl = self._live("MPI_Type_get_envelope")
        if impl.combiner == COMBINER_NAMED:
            return 0, 0, 0, 0, COMBINER_NAMED
        i, a, c, d = impl.contents
        return len(i), len(a), len(c), len(d), impl.combiner

    @property
    def envelope(self) -> tuple[int, int, int, int, int]:
        """Envelope."""
        return self.Get_envelope()

    def Get_contents(self) -> tuple[list[int], list[int], list[int], list[Datatype]]:
        """Return the input arguments used to create a datatype."""
        impl = self._live("MPI_Type_get_contents")
        if impl.combiner == COMBINER_NAMED:
            errors.raise_error(errors.ERR_TYPE, "MPI_Type_get_contents: Invalid datatype "
                                                "(predefined types have no contents)")
        i, a, c, d = impl.contents
        return list(i), list(a), list(c), [Datatype._wrap(t) for t in d]

    @property
    def contents(self) -> tuple[list[int], list[int], list[int], list[Datatype]]:
        """Contents."""
        return self.Get_contents()

    def decode(self) -> tuple[Datatype, str, dict[str, Any]]:
        """Convenience method for decoding a datatype."""
        impl = self._live("MPI_Type_get_envelope")
        comb = impl.combiner
        if comb == COMBINER_NAMED:
            return self, "NAMED", {}
        i, _, c, d = impl.contents
        types = [Datatype._wrap(t) for t in d]
        old = types[0] if len(types) == 1 else Datatype()
        params: dict[str, Any]
        if comb == COMBINER_DUP:
            params = {}
        elif comb == COMBINER_CONTIGUOUS:
            params = {"count": c[0]}
        elif comb in (COMBINER_VECTOR, COMBINER_HVECTOR):
            params = {"count": c[0], "blocklength": c[1], "stride": c[2]}
        elif comb in (COMBINER_INDEXED, COMBINER_HINDEXED):
            n = c[0]
            params = {"blocklengths": list(c[1:n + 1]), "displacements": list(c[n + 1:2 * n + 1])}
        elif comb in (COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK):
            n = c[0]
            params = {"blocklength": c[1], "displacements": list(c[2:n + 2])}
        elif comb == COMBINER_STRUCT:
            n = c[0]
            params = {"blocklengths": list(c[1:n + 1]), "displacements": list(c[n + 1:2 * n + 1]),
                      "datatypes": types}
        elif comb == COMBINER_SUBARRAY:
            n = i[0]
            params = {"sizes": list(c[:n]), "subsizes": list(c[n:2 * n]),
                      "starts": list(c[2 * n:3 * n]), "order": i[1]}
        elif comb == COMBINER_DARRAY:
            n = i[2]
            params = {"size": i[0], "rank": i[1], "gsizes": list(c[:n]),
                      "distribs": list(i[3:3 + n]), "dargs": list(i[3 + n:3 + 2 * n]),
                      "psizes": list(i[3 + 2 * n:3 + 3 * n]), "order": i[3 + 3 * n]}
        elif comb == COMBINER_RESIZED:
            params = {"lb": c[0], "extent": c[1]}
        elif comb == COMBINER_VALUE_INDEX:
            params = {"value": types[0], "index": types[1]}
        elif comb == COMBINER_F90_INTEGER:
            params = {"r": i[0]}
        else:  # F90_REAL, F90_COMPLEX
            params = {"p": i[0], "r": i[1]}
        return old, _COMBINER_NAMES[comb], params

    # -- life cycle ---------------------------------------------------------------------------
    def Dup(self) -> Datatype:
        """Duplicate a datatype."""
        base = self._live("MPI_Type_dup")
        impl = base.dup()
        _DERIVED_HANDLES[impl.handle] = impl
        new = type(self)._wrap(impl)
        pr = _proc_or_none()
        if pr is not None:
            _attributes.copy_all(pr, base, self, impl, "MPI_Type_dup")
        return new

    Create_dup = Dup

    def Commit(self) -> Datatype:
        """Commit the datatype."""
        self._live("MPI_Type_commit").committed = True
        return self

    def Free(self) -> None:
        """Free the datatype."""
        impl = self._live("MPI_Type_free")
        if impl.is_predefined:
            errors.raise_error(errors.ERR_TYPE, "MPI_Type_free: Cannot free permanent data type")
        _free_attributes(self, impl)
        _DERIVED_HANDLES.pop(impl.handle, None)
        if _CONST_NAME.get(id(self)) is None:  # constants keep their handle (mpi4py)
            self._impl = _NULL_IMPL

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        impl = self._impl
        if impl is _NULL_IMPL:
            return
        name = _CONST_NAME.get(id(self))
        if name is not None and _CONSTANTS.get(name) is self:
            return  # module constants are never freed
        if impl.is_predefined:
            self._impl = _NULL_IMPL  # a copy of a predefined datatype: nullified (mpi4py)
            return
        self.Free()

    # -- packing ------------------------------------------------------------------------------
    @intargs
    def Pack_size(self, count: int, comm: Any) -> int:
        """Determine the amount of space needed to pack a message."""
        impl = self._committed("MPI_Pack_size")
        count = operator.index(count)
        if count < 0:
            errors.raise_error(errors.ERR_COUNT, f"MPI_Pack_size: Negative count, value is {count}")
        return impl.packed_size(count)

    def _pack(self, call: str, inbuf: Any, outbuf: Any, position: int, ext32: bool) -> int:

        impl = self._committed(call)
        position = operator.index(position)
        src, _, _ = acquire(inbuf, True)
        dst, _, _ = acquire(outbuf, False)
        if not 0 <= position <= dst.nbytes:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid position {position}")
        count = src.nbytes // impl.extent if impl.extent > 0 else 0
        if impl.size:  # MPICH packs the whole elements that fit
            count = min(count, (dst.nbytes - position) // impl.size)
        data = impl.pack(src, 0, count)
        if ext32:
            data = _rt.external32_swap(impl, data, count)
        dst[position:position + len(data)] = data
        return position + len(data)

    def _unpack(self, call: str, inbuf: Any, position: int, outbuf: Any, ext32: bool) -> int:

        impl = self._committed(call)
        position = operator.index(position)
        src, _, _ = acquire(inbuf, True)
        dst, _, _ = acquire(outbuf, False)
        if not 0 <= position <= src.nbytes:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid position {position}")
        count = dst.nbytes // impl.extent if impl.extent > 0 else 0
        if impl.size:
            count = min(count, (src.nbytes - position) // impl.size)
        n = impl.packed_size(count)
        data = src[position:position + n]
        if ext32:
            data = memoryview(_rt.external32_swap(impl, data, count))
        impl.unpack(data, dst, 0, count)
        return position + n

    @intargs
    def Pack(self, inbuf: Any, outbuf: Any, position: int, comm: Any) -> int:
        """Pack into contiguous memory according to datatype; return the new position."""
        return self._pack("MPI_Pack", inbuf, outbuf, position, False)

    @intargs
    def Unpack(self, inbuf: Any, position: int, outbuf: Any, comm: Any) -> int:
        """Unpack from contiguous memory according to datatype; return the new position."""
        return self._unpack("MPI_Unpack", inbuf, position, outbuf, False)

    @staticmethod
    def _datarep(datarep: str, call: str) -> None:
        if str(datarep) != "external32":
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid data representation "
                                               f"'{datarep}' (only 'external32')")

    @intargs
    def Pack_external_size(self, datarep: str, count: int) -> int:
        """Determine the amount of space needed to pack a message (external32)."""
        self._datarep(datarep, "MPI_Pack_external_size")
        impl = self._committed("MPI_Pack_external_size")
        count = operator.index(count)
        if count < 0:
            errors.raise_error(errors.ERR_COUNT,
                               f"MPI_Pack_external_size: Negative count, value is {count}")
        return impl.packed_size(count)

    @intargs
    def Pack_external(self, datarep: str, inbuf: Any, outbuf: Any, position: int) -> int:
        """Pack into contiguous memory in the portable representation external32."""
        self._datarep(datarep, "MPI_Pack_external")
        return self._pack("MPI_Pack_external", inbuf, outbuf, position, True)

    @intargs
    def Unpack_external(self, datarep: str, inbuf: Any, position: int, outbuf: Any) -> int:
        """Unpack from contiguous memory in the portable representation external32."""
        self._datarep(datarep, "MPI_Unpack_external")
        return self._unpack("MPI_Unpack_external", inbuf, position, outbuf, True)

    # -- static helpers -----------------------------------------------------------------------
    @classmethod
    def Get_value_index(cls, value: Datatype, index: Datatype) -> Datatype:
        """Return a datatype for a value-index pair (``MPI.DOUBLE_INT`` ...), or NULL."""
        value._live("MPI_Type_get_value_index")
        index._live("MPI_Type_get_value_index")
        return cls._wrap(get_value_index(value._impl, index._impl))

    @classmethod
    @intargs
    def Match_size(cls, typeclass: int, size: int) -> Datatype:
        """Find a datatype matching a specified size in bytes."""
        name = _MATCH_SIZE.get((typeclass, size))
        if name is None:
            errors.raise_error(errors.ERR_ARG, f"MPI_Type_match_size: no datatype of class "
                                               f"{typeclass} and size {size}")
        return cls._wrap(_IMPLS[name])

    # -- handles ------------------------------------------------------------------------------
    def py2f(self) -> int:
        """Fortran handle (MPICH's values for predefined datatypes)."""
        return self._impl.py2f

    @classmethod
    def f2py(cls, arg: int) -> Datatype:
        impl = _HANDLES.get(arg & 0xFFFFFFFF) or _DERIVED_HANDLES.get(arg & 0xFFFFFFFF)
        if impl is None:
            errors.raise_error(errors.ERR_TYPE, f"MPI_Type_f2c: Invalid datatype handle {arg}")
        return cls._wrap(impl)

    def toint(self) -> int:
        return self._impl.handle

    @classmethod
    def fromint(cls, arg: int) -> Datatype:
        return cls.f2py(arg)

    @property
    def handle(self) -> int:
        """MPI handle."""
        return self._impl.handle

    @classmethod
    def fromhandle(cls, handle: int) -> Datatype:
        return cls.f2py(handle)

    # -- derived datatypes ------------------------------------------------------------------
    def _new(self, impl: DatatypeImpl) -> Datatype:
        _DERIVED_HANDLES[impl.handle] = impl
        new = type(self).__new__(type(self))
        new._impl = impl
        return new

    @intargs
    def Create_contiguous(self, count: int) -> Datatype:
        """Create a contiguous datatype."""
        old = self._live("MPI_Type_contiguous_c")
        return self._new(_rt.create_contiguous(old, operator.index(count)))

    @intargs
    def Create_vector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Create a vector (strided) datatype."""
        old = self._live("MPI_Type_vector_c")
        return self._new(_rt.create_vector(old, operator.index(count),
                                           operator.index(blocklength), operator.index(stride)))

    @intargs
    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Create a vector (strided) datatype with stride in bytes."""
        old = self._live("MPI_Type_create_hvector_c")
        return self._new(_rt.create_vector(old, operator.index(count),
                                           operator.index(blocklength), operator.index(stride),
                                           bytes_stride=True))

    def Create_indexed(self, blocklengths: Any, displacements: Any) -> Datatype:
        """Create an indexed datatype."""
        bl = _ints(blocklengths)
        dp = _chk_ints(displacements, len(bl))
        old = self._live("MPI_Type_indexed_c")
        return self._new(_rt.create_indexed(old, bl, dp))

    def Create_hindexed(self, blocklengths: Any, displacements: Any) -> Datatype:
        """Create an indexed datatype (displacements in bytes)."""
        bl = _ints(blocklengths)
        dp = _chk_ints(displacements, len(bl))
        old = self._live("MPI_Type_create_hindexed_c")
        return self._new(_rt.create_indexed(old, bl, dp, bytes_disp=True))

    @intargs
    def Create_indexed_block(self, blocklength: int, displacements: Any) -> Datatype:
        """Create an indexed datatype with constant-sized blocks."""
        dp = _ints(displacements)
        old = self._live("MPI_Type_create_indexed_block_c")
        return self._new(_rt.create_indexed_block(old, operator.index(blocklength), dp))

    @intargs
    def Create_hindexed_block(self, blocklength: int, displacements: Any) -> Datatype:
        """Create an indexed datatype with constant-sized blocks (displacements in bytes)."""
        dp = _ints(displacements)
        old = self._live("MPI_Type_create_hindexed_block_c")
        return self._new(_rt.create_indexed_block(old, operator.index(blocklength), dp,
                                                  bytes_disp=True))

    @classmethod
    def Create_struct(cls, blocklengths: Any, displacements: Any, datatypes: Any) -> Datatype:
        """Create a general composite (struct) datatype (displacements in bytes)."""
        bl = _ints(blocklengths)
        dp = _chk_ints(displacements, len(bl))
        if len(bl) != len(datatypes):
            raise ValueError(f"expecting {len(bl)} items, got {len(datatypes)}")
        impls = []
        for i in range(len(bl)):
            t = datatypes[i]
            if not isinstance(t, Datatype):
                raise TypeError(f"Cannot convert {type(t).__name__} to mpi4py.MPI.Datatype")
            impls.append(t._live("MPI_Type_create_struct_c"))
        impl = _rt.create_struct(bl, dp, impls)
        _DERIVED_HANDLES[impl.handle] = impl
        new = cls.__new__(cls)
        new._impl = impl
        return new

    @intargs
    def Create_subarray(self, sizes: Any, subsizes: Any, starts: Any,
                        order: int = ORDER_C) -> Datatype:
        """Create a datatype for a subarray of a multidimensional array."""
        sz = _ints(sizes)
        sub = _chk_ints(subsizes, len(sz))
        st = _chk_ints(starts, len(sz))
        old = self._live("MPI_Type_create_subarray_c")
        return self._new(_rt.create_subarray(old, sz, sub, st, operator.index(order)))

    @intargs
    def Create_darray(self, size: int, rank: int, gsizes: Any, distribs: Any, dargs: Any,
                      psizes: Any, order: int = ORDER_C) -> Datatype:
        """Create a datatype for a distributed array on Cartesian process grids."""
        gs = _ints(gsizes)
        nd = len(gs)
        di = _chk_ints(distribs, nd)
        da = _chk_ints(dargs, nd)
        ps = _chk_ints(psizes, nd)
        old = self._live("MPI_Type_create_darray_c")
        return self._new(_rt.create_darray(old, operator.index(size), operator.index(rank), gs,
                                           di, da, ps, operator.index(order)))

    @intargs
    def Create_resized(self, lb: int, extent: int) -> Datatype:
        """Create a datatype with a new lower bound and extent."""
        old = self._live("MPI_Type_create_resized_c")
        return self._new(_rt.create_resized(old, operator.index(lb), operator.index(extent)))

    Resized = Create_resized

    @classmethod
    def _f90(cls, combiner: int, params: tuple[int, ...], name: str | None,
             call: str, what: str) -> Datatype:
        if name is None:
            errors.raise_error(errors.ERR_OTHER, f"{call}: {what}")
        impl = _rt.create_f90(combiner, params, _IMPLS[name])  # type: ignore[index]
        _DERIVED_HANDLES[impl.handle] = impl
        new = cls.__new__(cls)
        new._impl = impl
        return new

    @classmethod
    @intargs
    def Create_f90_integer(cls, r: int) -> Datatype:
        """Return a bounded integer datatype."""
        r = int(r)
        name = next((n for digits, n in ((2, "INTEGER1"), (4, "INTEGER2"), (9, "INTEGER4"),
                                         (18, "INTEGER8")) if r <= digits), None)
        return cls._f90(COMBINER_F90_INTEGER, (r,), name, "MPI_Type_create_f90_integer",
                        f"No integer type with a range of {r} is available")

    @staticmethod
    def _real_name(p: int, r: int) -> str | None:
        for prec, rng, n in ((6, 37, "REAL4"), (15, 307, "REAL8"), (33, 4931, "REAL16")):
            if p <= prec and r <= rng:
                return n
        return None

    @classmethod
    @intargs
    def Create_f90_real(cls, p: int, r: int) -> Datatype:
        """Return a bounded real datatype."""
        p, r = int(p), int(r)
        return cls._f90(COMBINER_F90_REAL, (p, r), cls._real_name(p, r),
                        "MPI_Type_create_f90_real", f"No real type with both {p} digits of "
                        f"precision and an exponent range of {r} is available")

    @classmethod
    @intargs
    def Create_f90_complex(cls, p: int, r: int) -> Datatype:
        """Return a bounded complex datatype."""
        p, r = int(p), int(r)
        name = cls._real_name(p, r)
        if name is not None:
            name = {"REAL4": "COMPLEX8", "REAL8": "COMPLEX16", "REAL16": "COMPLEX32"}[name]
        return cls._f90(COMBINER_F90_COMPLEX, (p, r), name, "MPI_Type_create_f90_complex",
                        f"No complex type with both {p} digits of precision and an exponent "
                        f"range of {r} is available")

    # -- attributes (smpy.runtime.attributes) ----------------------------------------------
    @intargs
    def Get_attr(self, keyval: int) -> Any:
        """Retrieve attribute value by key."""
        impl = self._live("MPI_Type_get_attr")
        found, value = _attributes.get_attr(_proc(), impl, keyval, _attributes.KIND_DATATYPE, "MPI_Type_get_attr")
        return value if found else None

    @intargs
    def Set_attr(self, keyval: int, attrval: Any) -> None:
        """Store attribute value associated with a key."""
        impl = self._live("MPI_Type_set_attr")
        _attributes.set_attr(_proc(), impl, self, keyval, attrval, _attributes.KIND_DATATYPE, "MPI_Type_set_attr")

    @intargs
    def Delete_attr(self, keyval: int) -> None:
        """Delete attribute value associated with a key."""
        impl = self._live("MPI_Type_delete_attr")
        _attributes.delete_attr(_proc(), impl, self, keyval, _attributes.KIND_DATATYPE, "MPI_Type_delete_attr")

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:
        """Create a new attribute key for datatypes."""
        return _attributes.create_keyval(_proc(), _attributes.KIND_DATATYPE, copy_fn, delete_fn, nopython)

    @classmethod
    @intargs
    def Free_keyval(cls, keyval: int) -> int:
        """Free an attribute key for datatypes."""
        return _attributes.free_keyval(_proc(), keyval, _attributes.KIND_DATATYPE)


def _free_attributes(obj: Datatype, impl: DatatypeImpl) -> None:
    """Delete callbacks of a datatype's attributes (MPI_Type_free)."""
    pr = _proc_or_none()
    if pr is not None:
        _attributes.delete_all(pr, impl, obj, "MPI_Type_free")


def _proc_or_none() -> Any:
    """The calling rank, or None outside a simulation (attributes need a rank)."""
    try:
        return _proc()
    except NotInSimulation:
        return None


def _datatype_create(datatype: Datatype, combiner: str, params: dict[str, Any],
                     free: bool = False) -> Datatype:
    """Create a datatype from base datatype, combiner name and parameters (mpi4py's
    ``_datatype_create``, what derived datatypes pickle to)."""
    if "datatypes" in params:
        types = list(params["datatypes"])
    elif "value" in params and "index" in params:
        types = list(params.values())
    else:
        types = [datatype]
    try:
        name = combiner.lower()
        if name == "value_index":
            newtype = Datatype.Get_value_index(**params)
        elif name.startswith("f90_") or name == "struct":
            newtype = getattr(Datatype, f"Create_{name}")(**params)
        else:
            newtype = getattr(datatype, f"Create_{name}")(**params)
        newtype.Commit()
    finally:
        if free:
            for t in types:
                if isinstance(t, Datatype) and t and not t.is_predefined:
                    t.Free()
    return newtype


def _datatype_decode(datatype: Datatype, mark: bool = False) -> tuple[Datatype, str,
                                                                     dict[str, Any]]:
    """mpi4py's ``_datatype_decode``."""
    return datatype.decode()


# -- predefined constants -----------------------------------------------------------------------
_BY_IMPL: dict[int, Datatype] = {}  # id(impl) -> the canonical constant
_CONSTANTS: dict[str, Datatype] = {}
_CONST_NAME: dict[int, str] = {}  # id(constant) -> its (first) mpi4py name
_IMPL_NAME: dict[int, str] = {}  # id(impl) -> canonical mpi4py name (pickling)
_HANDLES: dict[int, DatatypeImpl] = {impl.handle: impl for impl in BY_NAME.values()}
_HANDLES[_NULL_IMPL.handle] = _NULL_IMPL
_DERIVED_HANDLES: weakref.WeakValueDictionary[int, DatatypeImpl] = weakref.WeakValueDictionary()


def _named(attr: str) -> Datatype:
    impl = _IMPLS[attr]
    if impl is _NULL_IMPL and attr != "DATATYPE_NULL":
        obj = Datatype.__new__(Datatype)  # a distinct object equal to DATATYPE_NULL
        obj._impl = impl
    else:
        obj = _BY_IMPL.get(id(impl))  # type: ignore[assignment]
        if obj is None:
            obj = Datatype.__new__(Datatype)
            obj._impl = impl
            _BY_IMPL[id(impl)] = obj
            _IMPL_NAME[id(impl)] = attr
    _CONSTANTS[attr] = obj
    _CONST_NAME.setdefault(id(obj), attr)
    return obj


DATATYPE_NULL = _named("DATATYPE_NULL")
# MPI-specific
PACKED = _named("PACKED")
BYTE = _named("BYTE")
AINT = _named("AINT")
OFFSET = _named("OFFSET")
COUNT = _named("COUNT")
# C
CHAR = _named("CHAR")
WCHAR = _named("WCHAR")
SIGNED_CHAR = _named("SIGNED_CHAR")
SHORT = _named("SHORT")
INT = _named("INT")
LONG = _named("LONG")
LONG_LONG = _named("LONG_LONG")
UNSIGNED_CHAR = _named("UNSIGNED_CHAR")
UNSIGNED_SHORT = _named("UNSIGNED_SHORT")
UNSIGNED = _named("UNSIGNED")
UNSIGNED_LONG = _named("UNSIGNED_LONG")
UNSIGNED_LONG_LONG = _named("UNSIGNED_LONG_LONG")
FLOAT = _named("FLOAT")
DOUBLE = _named("DOUBLE")
LONG_DOUBLE = _named("LONG_DOUBLE")
# C99
C_BOOL = _named("C_BOOL")
INT8_T = _named("INT8_T")
INT16_T = _named("INT16_T")
INT32_T = _named("INT32_T")
INT64_T = _named("INT64_T")
UINT8_T = _named("UINT8_T")
UINT16_T = _named("UINT16_T")
UINT32_T = _named("UINT32_T")
UINT64_T = _named("UINT64_T")
FLOAT16_T = _named("FLOAT16_T")
FLOAT32_T = _named("FLOAT32_T")
FLOAT64_T = _named("FLOAT64_T")
BFLOAT16_T = _named("BFLOAT16_T")
C_COMPLEX = _named("C_COMPLEX")
C_FLOAT_COMPLEX = _named("C_FLOAT_COMPLEX")
C_DOUBLE_COMPLEX = _named("C_DOUBLE_COMPLEX")
C_LONG_DOUBLE_COMPLEX = _named("C_LONG_DOUBLE_COMPLEX")
# C++
CXX_BOOL = _named("CXX_BOOL")
CXX_FLOAT_COMPLEX = _named("CXX_FLOAT_COMPLEX")
CXX_DOUBLE_COMPLEX = _named("CXX_DOUBLE_COMPLEX")
CXX_LONG_DOUBLE_COMPLEX = _named("CXX_LONG_DOUBLE_COMPLEX")
# value-index pairs
SHORT_INT = _named("SHORT_INT")
INT_INT = _named("INT_INT")
TWOINT = _named("TWOINT")
LONG_INT = _named("LONG_INT")
FLOAT_INT = _named("FLOAT_INT")
DOUBLE_INT = _named("DOUBLE_INT")
LONG_DOUBLE_INT = _named("LONG_DOUBLE_INT")
# Fortran
CHARACTER = _named("CHARACTER")
LOGICAL = _named("LOGICAL")
INTEGER = _named("INTEGER")
REAL = _named("REAL")
DOUBLE_PRECISION = _named("DOUBLE_PRECISION")
COMPLEX = _named("COMPLEX")
DOUBLE_COMPLEX = _named("DOUBLE_COMPLEX")
LOGICAL1 = _named("LOGICAL1")
LOGICAL2 = _named("LOGICAL2")
LOGICAL4 = _named("LOGICAL4")
LOGICAL8 = _named("LOGICAL8")
LOGICAL16 = _named("LOGICAL16")
INTEGER1 = _named("INTEGER1")
INTEGER2 = _named("INTEGER2")
INTEGER4 = _named("INTEGER4")
INTEGER8 = _named("INTEGER8")
INTEGER16 = _named("INTEGER16")
REAL2 = _named("REAL2")
REAL4 = _named("REAL4")
REAL8 = _named("REAL8")
REAL16 = _named("REAL16")
COMPLEX4 = _named("COMPLEX4")
COMPLEX8 = _named("COMPLEX8")
COMPLEX16 = _named("COMPLEX16")
COMPLEX32 = _named("COMPLEX32")
# convenience aliases
UNSIGNED_INT = _named("UNSIGNED_INT")
SIGNED_SHORT = _named("SIGNED_SHORT")
SIGNED_INT = _named("SIGNED_INT")
SIGNED_LONG = _named("SIGNED_LONG")
SIGNED_LONG_LONG = _named("SIGNED_LONG_LONG")
BOOL = _named("BOOL")
SINT8_T = _named("SINT8_T")
SINT16_T = _named("SINT16_T")
SINT32_T = _named("SINT32_T")
SINT64_T = _named("SINT64_T")
F_BOOL = _named("F_BOOL")
F_INT = _named("F_INT")
F_FLOAT = _named("F_FLOAT")
F_DOUBLE = _named("F_DOUBLE")
F_COMPLEX = _named("F_COMPLEX")
F_FLOAT_COMPLEX = _named("F_FLOAT_COMPLEX")
F_DOUBLE_COMPLEX = _named("F_DOUBLE_COMPLEX")

#: every predefined datatype constant by mpi4py attribute name (DATATYPE_NULL included)
PREDEFINED_DATATYPES: dict[str, Datatype] = dict(_CONSTANTS)

__all__ = ["Datatype", "TYPECLASS_INTEGER", "TYPECLASS_REAL", "TYPECLASS_COMPLEX",
           "DATATYPE_NULL", "PACKED", "BYTE", "AINT", "OFFSET", "COUNT", "CHAR", "WCHAR",
           "SIGNED_CHAR", "SHORT", "INT", "LONG", "LONG_LONG", "UNSIGNED_CHAR", "UNSIGNED_SHORT",
           "UNSIGNED", "UNSIGNED_LONG", "UNSIGNED_LONG_LONG", "FLOAT", "DOUBLE", "LONG_DOUBLE",
           "C_BOOL", "INT8_T", "INT16_T", "INT32_T", "INT64_T", "UINT8_T", "UINT16_T",
           "UINT32_T", "UINT64_T", "FLOAT16_T", "FLOAT32_T", "FLOAT64_T", "BFLOAT16_T",
           "C_COMPLEX", "C_FLOAT_COMPLEX", "C_DOUBLE_COMPLEX", "C_LONG_DOUBLE_COMPLEX",
           "CXX_BOOL", "CXX_FLOAT_COMPLEX", "CXX_DOUBLE_COMPLEX", "CXX_LONG_DOUBLE_COMPLEX",
           "SHORT_INT", "INT_INT", "TWOINT", "LONG_INT", "FLOAT_INT", "DOUBLE_INT",
           "LONG_DOUBLE_INT", "CHARACTER", "LOGICAL", "INTEGER", "REAL", "DOUBLE_PRECISION",
           "COMPLEX", "DOUBLE_COMPLEX", "LOGICAL1", "LOGICAL2", "LOGICAL4", "LOGICAL8",
           "LOGICAL16", "INTEGER1", "INTEGER2", "INTEGER4", "INTEGER8", "INTEGER16", "REAL2",
           "REAL4", "REAL8", "REAL16", "COMPLEX4", "COMPLEX8", "COMPLEX16", "COMPLEX32",
           "UNSIGNED_INT", "SIGNED_SHORT", "SIGNED_INT", "SIGNED_LONG", "SIGNED_LONG_LONG",
           "BOOL", "SINT8_T", "SINT16_T", "SINT32_T", "SINT64_T", "F_BOOL", "F_INT", "F_FLOAT",
           "F_DOUBLE", "F_COMPLEX", "F_FLOAT_COMPLEX", "F_DOUBLE_COMPLEX",
           "COMBINER_NAMED", "COMBINER_DUP", "COMBINER_CONTIGUOUS", "COMBINER_VECTOR",
           "COMBINER_HVECTOR", "COMBINER_INDEXED", "COMBINER_HINDEXED", "COMBINER_INDEXED_BLOCK",
           "COMBINER_HINDEXED_BLOCK", "COMBINER_STRUCT", "COMBINER_SUBARRAY", "COMBINER_DARRAY",
           "COMBINER_RESIZED", "COMBINER_VALUE_INDEX", "COMBINER_F90_INTEGER",
           "COMBINER_F90_REAL", "COMBINER_F90_COMPLEX", "DISTRIBUTE_BLOCK", "DISTRIBUTE_CYCLIC",
           "DISTRIBUTE_NONE", "DISTRIBUTE_DFLT_DARG", "ORDER_C", "ORDER_F", "ORDER_FORTRAN",
           "TYPECLASS_LOGICAL"]


def _typecode(datatype: Datatype) -> str | None:
    """mpi4py's private helper (used by mpi4py.util.dtlib): the type's character code."""
    return datatype._impl.code


_CHAR_ALIGN = {"?": 1, "b": 1, "B": 1, "c": 1, "S": 1, "h": 2, "H": 2, "i": 4, "I": 4,
               "l": 8, "L": 8, "q": 8, "Q": 8, "e": 2, "f": 4, "d": 8, "g": 16, "E": 2, "F": 4,
               "D": 8, "G": 16, "U": 4, "p": 8, "P": 8}


def _typealign(datatype: Datatype) -> int | None:
    """mpi4py's private helper (used by mpi4py.util.dtlib): the type's alignment (from its
    character code; the pairs' and 16-byte Fortran types' by handle), None if unknown."""
    impl = datatype._impl
    if impl is _NULL_IMPL:
        return None
    if impl is _IMPLS["REAL16"] or impl is _IMPLS["COMPLEX32"]:
        return 16
    align = _CHAR_ALIGN.get(impl.typechar[:1])
    if align:
        return align
    if impl.category == "pair" and impl.is_predefined and impl.combiner == COMBINER_NAMED:
        return impl.align
    return None
