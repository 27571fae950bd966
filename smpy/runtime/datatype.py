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

The runtime moves any layout through four methods, which derived datatypes (vector, indexed,
struct, subarray, ... in a later issue) implement the same way:

* ``packed_size(count)`` -> bytes on the wire,
* ``pack(mem, offset, count)`` -> those bytes,
* ``unpack(data, mem, offset, count)`` -> scatter them back into memory,
* ``span(count)`` -> bytes of memory touched from ``offset`` (bounds checks).

Reductions see elements through ``basic``/``basic_count``: an element of this type is
``basic_count`` elements of the predefined type ``basic`` once packed (``basic is self`` for
predefined types; a derived type of mixed types has ``basic = None``).
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
                 "handle", "contiguous", "attrs", "__weakref__")

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
        return d


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
