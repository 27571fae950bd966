"""Internal MPI datatypes: layout, numpy views, and data movement (pack/unpack).

A :class:`DatatypeImpl` describes one element of a message in memory: ``size`` bytes of data
spread over ``extent`` bytes (from ``lb``), the data itself lying in
``[true_lb, true_lb + true_extent)``. The predefined types are MPICH's, with its names,
sizes and Fortran handles (``py2f``), and mpi4py's ``typechar``/``typestr``/``tocode``; a
test checks every one against real mpi4py on MPICH.

Two layouts
-----------
*memory* layout: ``count`` elements at ``offset + i*extent`` in the user's buffer;
*packed* layout: the ``count * size`` data bytes back to back, what goes on the wire
(``MPI_Pack``'s format: ``MPI.DOUBLE_INT`` packs to 12 bytes, not 16). For every
predefined type except the padded pairs (``SHORT_INT``, ``DOUBLE_INT``, ``LONG_INT``,
``LONG_DOUBLE_INT``) the two coincide (``contiguous`` is True) and pack/unpack are plain slice
copies.

The runtime moves any layout through four methods, predefined and derived types alike:

* ``packed_size(count)`` -> bytes on the wire (``count * size``, what the network charges),
* ``pack(mem, offset, count)`` -> those bytes,
* ``unpack(data, mem, offset, count)`` -> scatter them back into memory (a partial last
  element too, as MPI receives it),
* ``span(count)`` -> bytes of memory touched from ``offset`` (bounds checks).

Derived types
-------------
Every constructor (contiguous, vector, hvector, indexed, hindexed, (h)indexed_block, struct,
subarray, darray, resized, dup) reduces to *segments* ``(child, disps, runs)``: block ``i``
holds ``runs[i]`` copies of ``child`` spaced by ``child.extent`` from byte ``disps[i]``. Bounds
follow MPI/MPICH: ``lb = min(disp + j*ext + child.lb)``, ``ub = max(disp + j*ext + child.ub)``
over the copies (true bounds with the child's true bounds; an empty vector block still marks
its start, an empty indexed/struct block does not); struct pads the extent up to a multiple
of the largest alignment of its basic types; subarray/darray span the whole global array
(``lb = 0``, ``extent = prod(sizes) * old.extent``). Sizes, bounds and contents are computed at
construction (cheap even for ``Create_contiguous(2**31-1)``); the byte layout is flattened on
first data movement into merged runs ``(starts, lengths)`` (a dense child collapses to one run
per block). One run per element packs through a strided numpy view, otherwise through a byte
index array (``offset + i*extent + byteidx``). Dense types (contiguous, dup, resized to
themselves) keep the plain slice fast path (``contiguous``).

Reductions see elements through ``basic``/``basic_count``: an element of this type is
``basic_count`` elements of the predefined type ``basic`` once packed (``basic is self`` for
predefined types; a derived type of mixed types has ``basic = None``). External32 byte-swaps
each basic scalar of the packed bytes (a complex as two reals).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "DatatypeImpl", "DATATYPE_NULL", "PREDEFINED", "BY_NAME", "from_typechar", "lookup_typecode",
    "TYPEDICT",
]

# MPI_COMBINER_* values (MPICH)
COMBINER_NAMED = 1
COMBINER_DUP = 2

_F_INT32 = 1 << 32


def _signed32(handle: int) -> int:
    return handle - _F_INT32 if handle >= 1 << 31 else handle


class DatatypeImpl:
    """One MPI datatype (predefined or, later, derived). See the module docstring."""

    __slots__ = ("name", "size", "lb", "extent", "true_lb", "true_extent", "np_dtype",
                 "packed_dtype", "_view_dtype", "typechar", "typestr", "code", "category",
                 "is_predefined", "committed", "combiner", "base", "basic", "basic_count",
                 "handle", "contiguous", "attrs", "contents", "segments", "align", "_flat",
                 "_byteidx", "_leaves", "__weakref__")

    name: str
    size: int
    lb: int
    extent: int
    true_lb: int
    true_extent: int
    np_dtype: np.dtype[Any] | None
    packed_dtype: np.dtype[Any] | None
    typechar: str
    typestr: str
    code: str | None
    category: str
    is_predefined: bool
    committed: bool
    combiner: int
    base: DatatypeImpl | None
    basic: DatatypeImpl | None
    basic_count: int
    handle: int
    contiguous: bool

    def __init__(self, name: str, *, size: int, extent: int, true_extent: int | None = None,
                 lb: int = 0, true_lb: int = 0, np_dtype: np.dtype[Any] | None = None,
                 packed_dtype: np.dtype[Any] | None = None, typechar: str = "",
                 typestr: str = "", code: str | None = None, category: str = "none",
                 is_predefined: bool = False, committed: bool = False,
                 combiner: int = COMBINER_NAMED, handle: int = 0) -> None:
        self.name = name
        self.size = size
        self.lb = lb
        self.extent = extent
        self.true_lb = true_lb
        self.true_extent = extent if true_extent is None else true_extent
        self.np_dtype = np_dtype
        self.packed_dtype = np_dtype if packed_dtype is None else packed_dtype
        self._view_dtype = np_dtype
        self.typechar = typechar
        self.typestr = typestr
        self.code = code
        self.category = category
        self.is_predefined = is_predefined
        self.committed = committed
        self.combiner = combiner
        self.base = None
        self.basic = self
        self.basic_count = 1
        self.handle = handle
        self.contiguous = size == extent == self.true_extent and lb == 0 and true_lb == 0
        self.attrs: dict[int, Any] | None = None
        #: constructor arguments (integers, addresses, large counts, datatypes)
        self.contents: tuple[list[int], list[int], list[int], list[DatatypeImpl]] = (
            [], [], [], [])
        #: derived types: [(child, byte displacements of blocks, block lengths in children)]
        self.segments: list[tuple[DatatypeImpl, np.ndarray, np.ndarray]] | None = None
        self.align = np_dtype.alignment if np_dtype is not None else max(1, min(size, 16))
        self._flat: tuple[np.ndarray, np.ndarray] | None = None
        self._byteidx: np.ndarray | None = None
        self._leaves: tuple[np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"<DatatypeImpl {self.name or '(unnamed)'} size={self.size} extent={self.extent}>"

    @property
    def ub(self) -> int:
        return self.lb + self.extent

    @property
    def true_ub(self) -> int:
        return self.true_lb + self.true_extent

    @property
    def py2f(self) -> int:
        """The Fortran handle (``MPI_Type_c2f``), MPICH's for predefined types."""
        return _signed32(self.handle)

    # -- data movement ----------------------------------------------------------------------
    def packed_size(self, count: int) -> int:
        """Bytes of ``count`` elements on the wire (``MPI_Pack_size`` without the header)."""
        return count * self.size

    def span(self, count: int) -> int:
        """Bytes of memory from the first element's offset to the end of the last one's data."""
        if count <= 0:
            return 0
        return (count - 1) * self.extent + self.true_lb + self.true_extent

    def pack(self, mem: memoryview, offset_bytes: int, count: int) -> bytes:
        """The packed bytes of ``count`` elements starting at byte ``offset_bytes`` of ``mem``."""
        if self.contiguous:
            return mem[offset_bytes:offset_bytes + count * self.size].tobytes()
        if count <= 0:
            return b""
        if self.segments is not None:
            return _pack_derived(self, mem, offset_bytes, count)
        out = np.empty(count, self.packed_dtype)
        out[...] = self.to_numpy(mem, offset_bytes, count)
        return out.tobytes()

    def unpack(self, data: bytes | bytearray | memoryview, mem: memoryview, offset_bytes: int,
               count: int) -> None:
        """Write packed ``data`` (at most ``count`` elements) into memory at ``offset_bytes``.

        For contiguous types any byte length is accepted (a partial last element too).
        """
        if self.contiguous:
            n = len(data) if type(data) is not memoryview else data.nbytes
            n = min(n, count * self.size)
            mem[offset_bytes:offset_bytes + n] = data if n == len(data) else data[:n]
            return
        if self.segments is not None:
            _unpack_derived(self, data, mem, offset_bytes, count)
            return
        n = min(count, len(data) // self.size) if self.size else 0
        if n <= 0:
            return
        self.to_numpy(mem, offset_bytes, n)[...] = np.frombuffer(data, self.packed_dtype, n)

    def to_numpy(self, mem: Any, offset_bytes: int, count: int) -> np.ndarray:
        """A numpy view (no copy) of ``count`` elements in memory layout.

        Contiguous types give a 1-d array of ``np_dtype``; the padded pair types a strided
        structured array with fields ``value`` and ``index``. Writable if ``mem`` is.
        """
        dt = self._view_dtype
        if dt is None:
            raise TypeError(f"datatype {self.name or '(unnamed)'} has no numpy representation")
        if count <= 0:
            return np.empty(0, dt)
        if self.contiguous:
            return np.frombuffer(mem, dt, count, offset_bytes)
        return np.ndarray((count,), dt, buffer=mem, offset=offset_bytes + self.true_lb,
                          strides=(self.extent,))

    def packed_numpy(self, data: Any, count: int) -> np.ndarray:
        """A numpy view of ``count`` elements of packed ``data`` (writable if ``data`` is)."""
        dt = self.packed_dtype
        if dt is None:
            raise TypeError(f"datatype {self.name or '(unnamed)'} has no numpy representation")
        if count <= 0:
            return np.empty(0, dt)
        return np.frombuffer(data, dt, count)

    # -- constructors -------------------------------------------------------------------------
    def dup(self) -> DatatypeImpl:
        """``MPI_Type_dup``: same layout, no name, not predefined, same committed state."""
        d = DatatypeImpl.__new__(DatatypeImpl)
        for slot in DatatypeImpl.__slots__:
            if slot != "__weakref__":
                setattr(d, slot, getattr(self, slot))
        d.name = ""
        d.is_predefined = False
        d.combiner = COMBINER_DUP
        d.base = self
        d.handle = _new_handle()
        d.attrs = None
        d.contents = ([], [], [], [self])
        d.segments = [(self, np.zeros(1, np.int64), np.ones(1, np.int64))]
        d._flat = self._flat
        d._byteidx = self._byteidx
        d._leaves = self._leaves
        return d

    # -- layout -------------------------------------------------------------------------------
    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, lengths): the data bytes of one element as maximal runs, in typemap
        (packed) order, relative to the element's origin."""
        if self._flat is None:
            self._flat = _flatten(self)
        return self._flat

    def byteidx(self) -> np.ndarray:
        """Memory offset of every packed byte of one element (relative to its origin)."""
        if self._byteidx is None:
            starts, lens = self.flat()
            total = int(lens.sum())
            if total == 0:
                self._byteidx = np.zeros(0, np.int64)
            else:
                first = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
                self._byteidx = first + np.arange(total, dtype=np.int64)
        return self._byteidx

    def leaves(self) -> tuple[np.ndarray, np.ndarray]:
        """(leaf sizes, byte-swap unit sizes) of one element in packed order: the basic
        elements (``MPI_Get_elements``) and the scalars that external32 byte-swaps."""
        if self._leaves is None:
            self._leaves = _leaves(self)
        return self._leaves


_next_handle = 0x8C000004  # MPICH's derived-datatype handle space (after the 5 pair types)


def _new_handle() -> int:
    global _next_handle
    _next_handle += 1
    return _next_handle


# -- the predefined types ----------------------------------------------------------------------
#: every predefined datatype by its MPI name ('MPI_DOUBLE')
BY_NAME: dict[str, DatatypeImpl] = {}
#: by mpi4py attribute name ('DOUBLE', 'FLOAT64_T', ... aliases share one object);
#: the names MPICH leaves null (``MPI.REAL2`` ...) map to :data:`DATATYPE_NULL`
PREDEFINED: dict[str, DatatypeImpl] = {}

DATATYPE_NULL = DatatypeImpl("MPI_DATATYPE_NULL", size=0, extent=0, handle=0x0C000000,
                             is_predefined=True, committed=True)
DATATYPE_NULL.basic = None
PREDEFINED["DATATYPE_NULL"] = DATATYPE_NULL

# (mpi4py names, MPI name, numpy type (native C type), typechar, typestr, tocode,
#  op category, MPICH handle). MPI_REAL16/MPI_COMPLEX32 are IEEE binary128 (gfortran's
#  REAL*16), not x87 long double: numpy has no such type ('V16' only sizes them).
# categories (which reduction ops apply, MPICH's rules): cint = C integer, fint = Fortran
# integer, float, complex, bool (C/C++ bool), flogical (Fortran LOGICAL), byte, none.
_SIMPLE: list[tuple[tuple[str, ...], str, str, str, str, str | None, str, int]] = [
    (("PACKED",), "MPI_PACKED", "B", "B", "u1", "B", "none", 0x4C00010F),
    (("BYTE",), "MPI_BYTE", "B", "B", "u1", "B", "byte", 0x4C00010D),
    (("AINT",), "MPI_AINT", "p", "p", "i8", "p", "cint", 0x4C000843),
    (("OFFSET",), "MPI_OFFSET", "q", "p", "i8", "p", "cint", 0x4C000844),
    (("COUNT",), "MPI_COUNT", "q", "p", "i8", "p", "cint", 0x4C000845),
    (("CHAR",), "MPI_CHAR", "b", "c", "S1", "c", "cint", 0x4C000101),
    (("WCHAR",), "MPI_WCHAR", "U1", "U", "U1", "U", "none", 0x4C00040E),
    (("SIGNED_CHAR",), "MPI_SIGNED_CHAR", "b", "b", "i1", "b", "cint", 0x4C000118),
    (("SHORT", "SIGNED_SHORT"), "MPI_SHORT", "h", "h", "i2", "h", "cint", 0x4C000203),
    (("INT", "SIGNED_INT"), "MPI_INT", "i", "i", "i4", "i", "cint", 0x4C000405),
    (("LONG", "SIGNED_LONG"), "MPI_LONG", "l", "l", "i8", "l", "cint", 0x4C000807),
    (("LONG_LONG", "SIGNED_LONG_LONG"), "MPI_LONG_LONG_INT", "q", "q", "i8", "q", "cint",
     0x4C000809),
    (("UNSIGNED_CHAR",), "MPI_UNSIGNED_CHAR", "B", "B", "u1", "B", "cint", 0x4C000102),
    (("UNSIGNED_SHORT",), "MPI_UNSIGNED_SHORT", "H", "H", "u2", "H", "cint", 0x4C000204),
    (("UNSIGNED", "UNSIGNED_INT"), "MPI_UNSIGNED", "I", "I", "u4", "I", "cint", 0x4C000406),
    (("UNSIGNED_LONG",), "MPI_UNSIGNED_LONG", "L", "L", "u8", "L", "cint", 0x4C000808),
    (("UNSIGNED_LONG_LONG",), "MPI_UNSIGNED_LONG_LONG", "Q", "Q", "u8", "Q", "cint",
     0x4C000819),
    (("FLOAT", "FLOAT32_T"), "MPI_FLOAT", "f", "f", "f4", "f", "float", 0x4C00040A),
    (("DOUBLE", "FLOAT64_T"), "MPI_DOUBLE", "d", "d", "f8", "d", "float", 0x4C00080B),
    (("LONG_DOUBLE",), "MPI_LONG_DOUBLE", "g", "g", "f16", "g", "float", 0x4C00100C),
    (("C_BOOL", "BOOL"), "MPI_C_BOOL", "?", "?", "b1", "b1", "bool", 0x4C00013F),
    (("INT8_T", "SINT8_T"), "MPI_INT8_T", "b", "b", "i1", "i1", "cint", 0x4C000137),
    (("INT16_T", "SINT16_T"), "MPI_INT16_T", "h", "h", "i2", "i2", "cint", 0x4C000238),
    (("INT32_T", "SINT32_T"), "MPI_INT32_T", "i", "i", "i4", "i4", "cint", 0x4C000439),
    (("INT64_T", "SINT64_T"), "MPI_INT64_T", "l", "l", "i8", "i8", "cint", 0x4C00083A),
    (("UINT8_T",), "MPI_UINT8_T", "B", "B", "u1", "u1", "cint", 0x4C00013B),
    (("UINT16_T",), "MPI_UINT16_T", "H", "H", "u2", "u2", "cint", 0x4C00023C),
    (("UINT32_T",), "MPI_UINT32_T", "I", "I", "u4", "u4", "cint", 0x4C00043D),
    (("UINT64_T",), "MPI_UINT64_T", "L", "L", "u8", "u8", "cint", 0x4C00083E),
    (("FLOAT16_T",), "MPIX_C_FLOAT16", "e", "e", "f2", "e", "float", 0x4C000246),
    (("C_COMPLEX", "C_FLOAT_COMPLEX"), "MPI_C_COMPLEX", "F", "F", "c8", "F", "complex",
     0x4C000840),
    (("C_DOUBLE_COMPLEX",), "MPI_C_DOUBLE_COMPLEX", "D", "D", "c16", "D", "complex", 0x4C001041),
    (("C_LONG_DOUBLE_COMPLEX",), "MPI_C_LONG_DOUBLE_COMPLEX", "G", "G", "c32", "G", "complex",
     0x4C002042),
    (("CXX_BOOL",), "MPI_CXX_BOOL", "?", "?", "b1", "?", "bool", 0x4C000133),
    (("CXX_FLOAT_COMPLEX",), "MPI_CXX_FLOAT_COMPLEX", "F", "F", "c8", "F", "complex", 0x4C000834),
    (("CXX_DOUBLE_COMPLEX",), "MPI_CXX_DOUBLE_COMPLEX", "D", "D", "c16", "D", "complex",
     0x4C001035),
    (("CXX_LONG_DOUBLE_COMPLEX",), "MPI_CXX_LONG_DOUBLE_COMPLEX", "G", "G", "c32", "G",
     "complex", 0x4C002036),
    (("CHARACTER",), "MPI_CHARACTER", "S1", "c", "S1", "c", "none", 0x4C00011A),
    (("LOGICAL", "F_BOOL"), "MPI_LOGICAL", "i", "i", "i4", "i", "flogical", 0x4C00041D),
    (("INTEGER", "F_INT"), "MPI_INTEGER", "i", "i", "i4", "i", "fint", 0x4C00041B),
    (("REAL", "F_FLOAT"), "MPI_REAL", "f", "f", "f4", "f", "float", 0x4C00041C),
    (("DOUBLE_PRECISION", "F_DOUBLE"), "MPI_DOUBLE_PRECISION", "d", "d", "f8", "d", "float",
     0x4C00081F),
    (("COMPLEX", "F_COMPLEX", "F_FLOAT_COMPLEX"), "MPI_COMPLEX", "F", "F", "c8", "F", "complex",
     0x4C00081E),
    (("DOUBLE_COMPLEX", "F_DOUBLE_COMPLEX"), "MPI_DOUBLE_COMPLEX", "D", "D", "c16", "D",
     "complex", 0x4C001022),
    (("INTEGER1",), "MPI_INTEGER1", "b", "b", "i1", "i1", "fint", 0x4C00012D),
    (("INTEGER2",), "MPI_INTEGER2", "h", "h", "i2", "i2", "fint", 0x4C00022F),
    (("INTEGER4",), "MPI_INTEGER4", "i", "i", "i4", "i4", "fint", 0x4C000430),
    (("INTEGER8",), "MPI_INTEGER8", "l", "l", "i8", "i8", "fint", 0x4C000831),
    (("REAL4",), "MPI_REAL4", "f", "f", "f4", "f4", "float", 0x4C000427),
    (("REAL8",), "MPI_REAL8", "d", "d", "f8", "f8", "float", 0x4C000829),
    (("REAL16",), "MPI_REAL16", "V16", "g", "f16", "f16", "float", 0x4C00102B),
    (("COMPLEX8",), "MPI_COMPLEX8", "F", "F", "c8", "c8", "complex", 0x4C000828),
    (("COMPLEX16",), "MPI_COMPLEX16", "D", "D", "c16", "c16", "complex", 0x4C00102A),
    (("COMPLEX32",), "MPI_COMPLEX32", "V32", "G", "c32", "c32", "complex", 0x4C00202C),
]

# value-index pairs (C structs ``{value; int index}``): (names, MPI name, value type, handle)
_PAIRS: list[tuple[tuple[str, ...], str, str, int]] = [
    (("FLOAT_INT",), "MPI_FLOAT_INT", "f", 0x8C000000),
    (("DOUBLE_INT",), "MPI_DOUBLE_INT", "d", 0x8C000001),
    (("LONG_INT",), "MPI_LONG_INT", "l", 0x8C000002),
    (("SHORT_INT",), "MPI_SHORT_INT", "h", 0x8C000003),
    (("INT_INT", "TWOINT"), "MPI_2INT", "i", 0x4C000816),
    (("LONG_DOUBLE_INT",), "MPI_LONG_DOUBLE_INT", "g", 0x8C000004),
]

#: mpi4py names whose MPICH handle is MPI_DATATYPE_NULL in this build
_NULL_NAMES = ("BFLOAT16_T", "COMPLEX4", "INTEGER16", "LOGICAL1", "LOGICAL2", "LOGICAL4",
               "LOGICAL8", "LOGICAL16", "REAL2")


def _round_up(n: int, a: int) -> int:
    return -(-n // a) * a


def _register(names: tuple[str, ...], impl: DatatypeImpl) -> None:
    BY_NAME[impl.name] = impl
    for n in names:
        PREDEFINED[n] = impl


for _names, _mpi, _np, _tc, _ts, _code, _cat, _h in _SIMPLE:
    _dt = np.dtype(_np)
    _register(_names, DatatypeImpl(_mpi, size=_dt.itemsize, extent=_dt.itemsize,
                                   np_dtype=None if _dt.kind == "V" else _dt,
                                   typechar=_tc, typestr=_ts, code=_code, category=_cat,
                                   is_predefined=True, committed=True, handle=_h))

_INT = np.dtype("i")
for _names, _mpi, _vt, _h in _PAIRS:
    _v = np.dtype(_vt)
    _off = _round_up(_v.itemsize, _INT.alignment)
    _true_ext = _off + _INT.itemsize
    _ext = _round_up(_true_ext, max(_v.alignment, _INT.alignment))
    _fields = {"names": ["value", "index"], "formats": [_v, _INT]}
    _impl = DatatypeImpl(
        _mpi, size=_v.itemsize + _INT.itemsize, extent=_ext, true_extent=_true_ext,
        np_dtype=np.dtype({**_fields, "offsets": [0, _off], "itemsize": _ext}),
        packed_dtype=np.dtype({**_fields, "offsets": [0, _v.itemsize],
                               "itemsize": _v.itemsize + _INT.itemsize}),
        typechar="V", typestr=f"V{_ext}", code=None, category="pair", is_predefined=True,
        committed=True, handle=_h)
    _impl._view_dtype = np.dtype({**_fields, "offsets": [0, _off], "itemsize": _true_ext})
    _impl.contiguous = _impl.size == _ext and _off == _v.itemsize
    if _impl.contiguous:  # FLOAT_INT, 2INT: no padding, one dtype serves both layouts
        _impl.packed_dtype = _impl._view_dtype = _impl.np_dtype
    _impl.align = max(_v.alignment, _INT.alignment)
    _register(_names, _impl)

for _n in _NULL_NAMES:
    PREDEFINED[_n] = DATATYPE_NULL

BYTE = PREDEFINED["BYTE"]

# -- buffer formats and type codes -> datatypes (mpi4py's typemap.pxi) -----------------------
#: mpi4py's ``MPI._typedict``: type code -> datatype (explicit strings in buffer specs)
TYPEDICT: dict[str, DatatypeImpl] = {k: PREDEFINED[v] for k, v in {
    "?": "C_BOOL", "b": "SIGNED_CHAR", "h": "SHORT", "i": "INT", "l": "LONG", "q": "LONG_LONG",
    "B": "UNSIGNED_CHAR", "H": "UNSIGNED_SHORT", "I": "UNSIGNED", "L": "UNSIGNED_LONG",
    "Q": "UNSIGNED_LONG_LONG", "e": "FLOAT16_T", "f": "FLOAT", "d": "DOUBLE", "g": "LONG_DOUBLE",
    "Zf": "C_COMPLEX", "Zd": "C_DOUBLE_COMPLEX", "F": "C_COMPLEX", "D": "C_DOUBLE_COMPLEX",
    "Zg": "C_LONG_DOUBLE_COMPLEX", "G": "C_LONG_DOUBLE_COMPLEX",
    "i1": "INT8_T", "i2": "INT16_T", "i4": "INT32_T", "i8": "INT64_T",
    "f4": "FLOAT", "f8": "DOUBLE", "f16": "LONG_DOUBLE",
    "c8": "C_COMPLEX", "c16": "C_DOUBLE_COMPLEX", "c32": "C_LONG_DOUBLE_COMPLEX",
    "b1": "C_BOOL", "u1": "UINT8_T", "u2": "UINT16_T", "u4": "UINT32_T", "u8": "UINT64_T",
    "f2": "FLOAT16_T", "n": "COUNT", "N": "UNSIGNED_LONG", "p": "AINT", "P": "UNSIGNED_LONG",
    "c": "CHAR", "a": "CHAR", "S": "CHAR", "S1": "CHAR", "s": "CHAR", "1s": "CHAR",
    "U": "WCHAR", "U1": "WCHAR", "u": "UINT16_T", "1u": "UINT16_T", "w": "WCHAR", "1w": "WCHAR",
    "M": "INT64_T", "M8": "INT64_T", "m": "INT64_T", "m8": "INT64_T",
}.items()}

_LITTLE = sys.byteorder == "little"
_FORMATS: dict[str, DatatypeImpl] = {}  # buffer format -> datatype, filled lazily


def lookup_typecode(key: object) -> DatatypeImpl:
    """An explicit type code given in place of a datatype (``[buf, 'd']``): mpi4py's lookup,
    no byte-order handling. KeyError like mpi4py otherwise."""
    dt = TYPEDICT.get(key)  # type: ignore[call-overload]  # unhashable keys raise TypeError
    if dt is None:
        raise KeyError(f"cannot map {key!r} to MPI datatype")
    return dt


def from_typechar(fmt: str) -> DatatypeImpl:
    """The datatype mpi4py deduces from a buffer's format string (``memoryview.format``).

    ``'B'`` (bytes, bytearray, uint8 arrays) is ``MPI.UNSIGNED_CHAR``, not ``MPI.BYTE`` (mpi4py
    only picks ``BYTE`` for DLPack/CAI buffers of unknown type); a leading ``'@'`` or native
    ``'<'`` is dropped; a non-native byte order raises ``BufferError``; unknown formats
    (``'T{...}'`` structured dtypes, ``'3s'``, ``'O'``, and ``'='``-prefixed ones, which
    mpi4py does not strip either) raise ``KeyError("cannot map '...' to MPI datatype")``.
    """
    dt = _FORMATS.get(fmt)
    if dt is not None:
        return dt
    key = fmt
    if fmt[:1] == "@":
        key = fmt[1:]
    elif fmt[:1] in "<>" and fmt:
        if (fmt[0] == "<") != _LITTLE:
            raise BufferError(f"format string {fmt!r} with non-native byte order")
        key = fmt[1:]
    dt = lookup_typecode(key)
    _FORMATS[fmt] = dt
    return dt


def get_value_index(value: DatatypeImpl, index: DatatypeImpl) -> DatatypeImpl:
    """``MPI_Type_get_value_index``: the predefined pair type of (value, index), or NULL."""
    if index is not PREDEFINED["INT"]:
        return DATATYPE_NULL
    for vname, pname in (("FLOAT", "FLOAT_INT"), ("DOUBLE", "DOUBLE_INT"), ("LONG", "LONG_INT"),
                         ("SHORT", "SHORT_INT"), ("INT", "INT_INT"),
                         ("LONG_DOUBLE", "LONG_DOUBLE_INT")):
        if value is PREDEFINED[vname]:
            return PREDEFINED[pname]
    return DATATYPE_NULL


del _names, _mpi, _np, _tc, _ts, _code, _cat, _h, _dt, _vt, _v, _off, _true_ext, _ext
del _fields, _impl, _n


# == derived datatypes ===========================================================================
# A derived type is a list of *segments* ``(child, disps, runs)``: block ``i`` holds
# ``runs[i]`` consecutive copies of ``child`` (``child.extent`` apart) starting at byte
# ``disps[i]``. Every constructor reduces to this (hindexed) form; bounds follow MPI:
#   lb = min(disp + j*ext + child.lb), ub = max(disp + j*ext + child.ub) over the copies,
#   true bounds likewise with the child's true bounds; struct pads the extent to a multiple
#   of the largest alignment of its constituents (MPICH's epsilon).
COMBINER_CONTIGUOUS = 3
COMBINER_VECTOR = 4
COMBINER_HVECTOR = 6
COMBINER_INDEXED = 7
COMBINER_HINDEXED = 9
COMBINER_INDEXED_BLOCK = 10
COMBINER_STRUCT = 12
COMBINER_SUBARRAY = 13
COMBINER_DARRAY = 14
COMBINER_F90_REAL = 15
COMBINER_F90_COMPLEX = 16
COMBINER_F90_INTEGER = 17
COMBINER_RESIZED = 18
COMBINER_HINDEXED_BLOCK = 19
COMBINER_VALUE_INDEX = 20

DISTRIBUTE_BLOCK = 121
DISTRIBUTE_CYCLIC = 122
DISTRIBUTE_NONE = 123
DISTRIBUTE_DFLT_DARG = -49767
ORDER_C = 56
ORDER_F = 57

def _i64(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _flatten(t: DatatypeImpl) -> tuple[np.ndarray, np.ndarray]:
    if t.segments is None:  # predefined
        if t.contiguous or t.packed_dtype is None or t.packed_dtype.names is None:
            return _i64([0]), _i64([t.size])
        vsize = t.packed_dtype.fields["value"][0].itemsize  # type: ignore[index]
        off = t._view_dtype.fields["index"][1]  # type: ignore[union-attr,index]
        return _i64([0, off]), _i64([vsize, t.size - vsize])
    starts: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    for child, disps, runs in t.segments:
        cs, cl = child.flat()
        keep = runs > 0
        d, r = disps[keep], runs[keep]
        if len(d) == 0 or len(cs) == 0:
            continue
        ext = child.extent
        if len(cs) == 1 and int(cl[0]) == ext and ext > 0:  # dense child: one run per block
            starts.append(d + cs[0])
            lens.append(r * cl[0])
            continue
        total = int(r.sum())
        first = np.repeat(np.cumsum(r) - r, r)
        origins = np.repeat(d, r) + (np.arange(total, dtype=np.int64) - first) * ext
        starts.append((origins[:, None] + cs[None, :]).reshape(-1))
        lens.append(np.tile(cl, total))
    if not starts:
        return _i64([]), _i64([])
    s = np.concatenate(starts)
    ln = np.concatenate(lens)
    nz = ln > 0
    s, ln = s[nz], ln[nz]
    if len(s) > 1:  # merge runs that continue each other
        brk = np.empty(len(s), bool)
        brk[0] = True
        brk[1:] = s[1:] != (s + ln)[:-1]
        idx = np.flatnonzero(brk)
        ln = np.add.reduceat(ln, idx)
        s = s[idx]
    return s, ln


def _leaves(t: DatatypeImpl) -> tuple[np.ndarray, np.ndarray]:
    if t.segments is None:
        starts, lens = t.flat()
        if len(lens) == 2:  # value-index pair
            return lens.copy(), lens.copy()
        size = t.size
        if t.category == "complex":
            return _i64([size]), _i64([size // 2, size // 2])
        if t.typechar in ("c", "S") or t.category in ("byte", "none") and t.typechar != "U":
            return _i64([size]), _i64([1] * size)
        return _i64([size]), _i64([size])
    leaf: list[np.ndarray] = []
    unit: list[np.ndarray] = []
    for child, _, runs in t.segments:
        n = int(runs[runs > 0].sum())
        if n:
            cl, cu = child.leaves()
            leaf.append(np.tile(cl, n))
            unit.append(np.tile(cu, n))
    if not leaf:
        return _i64([]), _i64([])
    return np.concatenate(leaf), np.concatenate(unit)


def _element_index(t: DatatypeImpl, offset: int, count: int) -> np.ndarray:
    bidx = t.byteidx()
    return (offset + np.arange(count, dtype=np.int64)[:, None] * t.extent
            + bidx[None, :]).reshape(-1)


def _pack_derived(t: DatatypeImpl, mem: Any, offset: int, count: int) -> bytes:
    if t.size == 0:
        return b""
    base = np.frombuffer(mem, np.uint8)
    starts, lens = t.flat()
    if len(starts) == 1:  # one run per element: a strided 2-d view
        first = offset + int(starts[0])
        if count == 1:
            return base[first:first + int(lens[0])].tobytes()
        view = np.lib.stride_tricks.as_strided(base[first:], (count, int(lens[0])),
                                               (t.extent, 1), writeable=False)
        return view.tobytes()
    return base[_element_index(t, offset, count)].tobytes()


def _unpack_derived(t: DatatypeImpl, data: Any, mem: Any, offset: int, count: int) -> None:
    nbytes = min(memoryview(data).nbytes, count * t.size)
    if nbytes <= 0 or t.size == 0:
        return
    base = np.frombuffer(mem, np.uint8)
    src = np.frombuffer(data, np.uint8, nbytes)
    n = -(-nbytes // t.size)
    starts, lens = t.flat()
    if len(starts) == 1 and nbytes == n * t.size and t.extent >= int(lens[0]) > 0:
        first = offset + int(starts[0])
        view = np.lib.stride_tricks.as_strided(base[first:], (n, int(lens[0])), (t.extent, 1))
        view[...] = src.reshape(n, int(lens[0]))
        return
    base[_element_index(t, offset, n)[:nbytes]] = src


def _bounds(segs: list[tuple[DatatypeImpl, np.ndarray, np.ndarray]], keep_empty: bool = False
            ) -> tuple[int, int, int, int] | None:
    """(lb, ub, true_lb, true_ub) over the segments' copies, None if there are none."""
    lo = hi = tlo = thi = None
    for child, disps, runs in segs:
        ext = child.extent
        if len(disps) <= 64:  # small: plain integers are faster than numpy
            pairs = zip(disps.tolist(), runs.tolist())
            dmin = dmax = tdmax = None
            for d, r in pairs:
                if r == 0:
                    if not keep_empty:
                        continue
                    a = d
                    b = d + child.lb - child.ub
                    tb = d + child.true_lb - child.true_ub
                else:
                    span = (r - 1) * ext
                    a, b = d + min(0, span), d + max(0, span)
                    tb = b
                dmin = a if dmin is None else min(dmin, a)
                dmax = b if dmax is None else max(dmax, b)
                tdmax = tb if tdmax is None else max(tdmax, tb)
            if dmin is None:
                continue
            assert dmax is not None and tdmax is not None
        else:
            if keep_empty:
                d, r = disps, runs
            else:
                keep = runs > 0
                d, r = disps[keep], runs[keep]
            if len(d) == 0:
                continue
            span = np.maximum(r - 1, 0) * ext
            jmin = np.minimum(0, span)
            jmax = np.maximum(0, span)
            empty = r == 0
            tjmax = jmax
            if keep_empty and empty.any():  # MPICH: an empty vector block marks its start
                jmax = np.where(empty, child.lb - child.ub, jmax)
                tjmax = np.where(empty, child.true_lb - child.true_ub, tjmax)
            dmin, dmax, tdmax = int((d + jmin).min()), int((d + jmax).max()), int((d + tjmax).max())
        cand = (dmin + child.lb, dmax + child.ub, dmin + child.true_lb, tdmax + child.true_ub)
        lo = cand[0] if lo is None else min(lo, cand[0])
        hi = cand[1] if hi is None else max(hi, cand[1])
        tlo = cand[2] if tlo is None else min(tlo, cand[2])
        thi = cand[3] if thi is None else max(thi, cand[3])
    if lo is None:
        return None
    return lo, hi, tlo, thi  # type: ignore[return-value]


def _derived(combiner: int, contents: tuple[list[int], list[int], list[int],
                                            list[DatatypeImpl]],
             segs: list[tuple[DatatypeImpl, np.ndarray, np.ndarray]], *,
             bounds: tuple[int, int, int, int] | None = None, keep_empty: bool = False,
             pad: bool = False) -> DatatypeImpl:
    size = 0
    nchild: list[int] = []
    for child, _, runs in segs:
        n = sum(r for r in runs.tolist() if r > 0) if len(runs) <= 64 else int(runs[runs > 0].sum())
        nchild.append(n)
        size += n * child.size
    b = bounds if bounds is not None else _bounds(segs, keep_empty)
    if b is None:
        b = (0, 0, 0, 0)
    lb, ub, tlb, tub = b
    children = [c for (c, _, _), n in zip(segs, nchild) if n > 0]
    align = max((c.align for c in children), default=1)
    if pad and align > 1:
        ub = lb + -(-(ub - lb) // align) * align
    t = DatatypeImpl("", size=size, extent=ub - lb, true_extent=tub - tlb, lb=lb, true_lb=tlb,
                     typechar="V", typestr=f"V{ub - lb}", code=None, combiner=combiner,
                     handle=_new_handle())
    t.contents = contents
    t.segments = segs
    t.align = align
    t.contiguous = False
    bases = {id(c.basic) for c in children}
    if children and len(bases) == 1 and children[0].basic is not None:
        t.basic = children[0].basic
        t.basic_count = sum(n * c.basic_count for (c, _, _), n in zip(segs, nchild))
        t.category = t.basic.category  # type: ignore[union-attr]
    elif not children:
        t.basic = None
        t.basic_count = 0
    else:
        t.basic = None
        t.basic_count = 0
    t.base = children[0] if len(children) == 1 else None
    # the common dense case (contiguous, dup, one-block struct/resized of a contiguous type)
    # takes the slice fast path; other layouts are flattened on first data movement
    if len(segs) == 1:
        child, disps, runs = segs[0]
        t.contiguous = (len(disps) == 1 and int(disps[0]) == 0 and child.contiguous
                        and lb == 0 and tlb == 0 and size == ub - lb)
    return t


def _count(n: int, call: str, what: str = "count") -> int:
    if n < 0:
        from smpy.runtime import errors
        errors.raise_error(errors.ERR_COUNT if what == "count" else errors.ERR_ARG,
                           f"{call}: Negative {what}, value is {n}")
    return n


def create_contiguous(old: DatatypeImpl, count: int) -> DatatypeImpl:
    _count(count, "MPI_Type_contiguous_c")
    return _derived(COMBINER_CONTIGUOUS, ([], [], [count], [old]),
                    [(old, _i64([0]), _i64([count]))])


def create_vector(old: DatatypeImpl, count: int, blocklength: int, stride: int,
                  bytes_stride: bool = False) -> DatatypeImpl:
    call = "MPI_Type_create_hvector_c" if bytes_stride else "MPI_Type_vector_c"
    _count(count, call)
    _count(blocklength, call, "blocklength")
    step = stride if bytes_stride else stride * old.extent
    segs = [(old, np.arange(count, dtype=np.int64) * step, np.full(count, blocklength, np.int64))]
    comb = COMBINER_HVECTOR if bytes_stride else COMBINER_VECTOR
    return _derived(comb, ([], [], [count, blocklength, stride], [old]), segs, keep_empty=True)


def create_indexed(old: DatatypeImpl, blocklengths: list[int], displacements: list[int],
                   bytes_disp: bool = False) -> DatatypeImpl:
    call = "MPI_Type_create_hindexed_c" if bytes_disp else "MPI_Type_indexed_c"
    for b in blocklengths:
        _count(b, call, "blocklength")
    scale = 1 if bytes_disp else old.extent
    segs = [(old, _i64(displacements) * scale, _i64(blocklengths))]
    comb = COMBINER_HINDEXED if bytes_disp else COMBINER_INDEXED
    return _derived(comb, ([], [], [len(blocklengths), *blocklengths, *displacements], [old]),
                    segs)


def create_indexed_block(old: DatatypeImpl, blocklength: int, displacements: list[int],
                         bytes_disp: bool = False) -> DatatypeImpl:
    call = "MPI_Type_create_hindexed_block_c" if bytes_disp else "MPI_Type_create_indexed_block_c"
    _count(blocklength, call, "blocklength")
    scale = 1 if bytes_disp else old.extent
    n = len(displacements)
    segs = [(old, _i64(displacements) * scale, np.full(n, blocklength, np.int64))]
    comb = COMBINER_HINDEXED_BLOCK if bytes_disp else COMBINER_INDEXED_BLOCK
    return _derived(comb, ([], [], [n, blocklength, *displacements], [old]), segs)


def create_struct(blocklengths: list[int], displacements: list[int],
                  types: list[DatatypeImpl]) -> DatatypeImpl:
    for b in blocklengths:
        _count(b, "MPI_Type_create_struct_c", "blocklength")
    segs = [(t, _i64([d]), _i64([b])) for b, d, t in zip(blocklengths, displacements, types)]
    n = len(blocklengths)
    return _derived(COMBINER_STRUCT, ([], [], [n, *blocklengths, *displacements], list(types)),
                    segs, pad=True)


def create_resized(old: DatatypeImpl, lb: int, extent: int) -> DatatypeImpl:
    segs = [(old, _i64([0]), _i64([1]))]
    b = (lb, lb + extent, old.true_lb, old.true_ub)
    t = _derived(COMBINER_RESIZED, ([], [], [lb, extent], [old]), segs, bounds=b)
    t.align = old.align
    return t


def create_subarray(old: DatatypeImpl, sizes: list[int], subsizes: list[int],
                    starts: list[int], order: int) -> DatatypeImpl:
    from smpy.runtime import errors
    call = "MPI_Type_create_subarray_c"
    nd = len(sizes)
    if nd <= 0:
        errors.raise_error(errors.ERR_ARG, f"{call}: Invalid argument ndims={nd}")
    for k in range(nd):
        if sizes[k] <= 0 or subsizes[k] <= 0 or subsizes[k] > sizes[k] or starts[k] < 0 \
                or starts[k] + subsizes[k] > sizes[k]:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid argument for dimension {k}")
    if order not in (ORDER_C, ORDER_F):
        errors.raise_error(errors.ERR_ARG, f"{call}: Invalid order argument {order}")
    dims = list(range(nd)) if order == ORDER_C else list(range(nd - 1, -1, -1))
    # element strides (in old extents) of each dimension, slowest first
    strides = [0] * nd
    acc = 1
    for k in reversed(dims):
        strides[k] = acc
        acc *= sizes[k]
    inner = dims[-1]
    disp = np.zeros(1, np.int64)
    for k in dims[:-1]:
        idx = (starts[k] + np.arange(subsizes[k], dtype=np.int64)) * strides[k]
        disp = (disp[:, None] + idx[None, :]).reshape(-1)
    disp = (disp + starts[inner] * strides[inner]) * old.extent
    segs = [(old, disp, np.full(len(disp), subsizes[inner], np.int64))]
    total = 1
    for n in sizes:
        total *= n
    inner_b = _bounds(segs)
    assert inner_b is not None
    b = (0, total * old.extent, inner_b[2], inner_b[3])
    return _derived(COMBINER_SUBARRAY, ([nd, order], [], [*sizes, *subsizes, *starts], [old]),
                    segs, bounds=b)


def create_darray(old: DatatypeImpl, size: int, rank: int, gsizes: list[int],
                  distribs: list[int], dargs: list[int], psizes: list[int],
                  order: int) -> DatatypeImpl:
    from smpy.runtime import errors
    call = "MPI_Type_create_darray_c"
    nd = len(gsizes)
    nprocs = 1
    for p in psizes:
        nprocs *= p
    if nprocs != size or not 0 <= rank < size:
        errors.raise_error(errors.ERR_ARG, f"{call}: Invalid argument (size={size}, "
                                           f"rank={rank}, psizes={list(psizes)})")
    coords = []
    r = rank
    for k in range(nd - 1, -1, -1):  # process grid is row-major
        coords.append(r % psizes[k])
        r //= psizes[k]
    coords.reverse()
    owned: list[np.ndarray] = []
    for k in range(nd):
        n, p, c, dist, darg = gsizes[k], psizes[k], coords[k], distribs[k], dargs[k]
        if dist == DISTRIBUTE_NONE:
            idx = np.arange(n, dtype=np.int64)
        elif dist == DISTRIBUTE_BLOCK:
            b = -(-n // p) if darg == DISTRIBUTE_DFLT_DARG else darg
            if b * p < n:
                errors.raise_error(errors.ERR_ARG, f"{call}: block size {b} too small")
            idx = np.arange(c * b, min((c + 1) * b, n), dtype=np.int64)
        elif dist == DISTRIBUTE_CYCLIC:
            b = 1 if darg == DISTRIBUTE_DFLT_DARG else darg
            allidx = np.arange(n, dtype=np.int64)
            idx = allidx[(allidx // b) % p == c]
        else:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid distribution {dist}")
        owned.append(idx)
    dims = list(range(nd)) if order == ORDER_C else list(range(nd - 1, -1, -1))
    strides = [0] * nd
    acc = 1
    for k in reversed(dims):
        strides[k] = acc
        acc *= gsizes[k]
    disp = np.zeros(1, np.int64)
    for k in dims:
        disp = (disp[:, None] + (owned[k] * strides[k])[None, :]).reshape(-1)
    disp = disp * old.extent
    segs = [(old, disp, np.ones(len(disp), np.int64))]
    inner_b = _bounds(segs)
    b = (0, acc * old.extent, inner_b[2] if inner_b else 0, inner_b[3] if inner_b else 0)
    ints = [size, rank, nd, *distribs, *dargs, *psizes, order]
    return _derived(COMBINER_DARRAY, (ints, [], list(gsizes), [old]), segs, bounds=b)


_F90_CACHE: dict[tuple[int, tuple[int, ...]], DatatypeImpl] = {}


def create_f90(combiner: int, params: tuple[int, ...], base: DatatypeImpl) -> DatatypeImpl:
    """``MPI_Type_create_f90_*``: a predefined (cached) copy of ``base``."""
    key = (combiner, params)
    t = _F90_CACHE.get(key)
    if t is None:
        t = base.dup()
        t.combiner = combiner
        t.is_predefined = True
        t.committed = True
        t.contents = (list(params), [], [], [])
        t.segments = None
        t.contiguous = base.contiguous
        t.basic = base
        t.base = base
        _F90_CACHE[key] = t
    return t


def get_elements(t: DatatypeImpl, nbytes: int) -> int | None:
    """Basic elements in ``nbytes`` packed bytes of ``t`` (None: not a whole number)."""
    if t.size == 0:
        return 0
    full, rest = divmod(nbytes, t.size)
    leaf, _ = t.leaves()
    n = full * len(leaf)
    if rest:
        ends = np.cumsum(leaf)
        k = int(np.searchsorted(ends, rest, side="right"))
        if k == 0 or int(ends[k - 1]) != rest:
            return None
        n += k
    return n


def external32_swap(t: DatatypeImpl, data: bytes, count: int) -> bytes:
    """Packed native bytes <-> external32 (big-endian) bytes of ``count`` elements."""
    if not _LITTLE or count <= 0 or t.size == 0:
        return bytes(data)
    _, units = t.leaves()
    ends = np.cumsum(units)
    starts = ends - units
    pos = np.arange(t.size, dtype=np.int64)
    s = np.repeat(starts, units)
    ln = np.repeat(units, units)
    perm = s + ln - 1 - (pos - s)
    arr = np.frombuffer(data, np.uint8, count * t.size).reshape(count, t.size)
    return arr[:, perm].tobytes()
