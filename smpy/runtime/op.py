"""Internal reduction operations: MPI semantics on packed buffers, and on Python objects.

``op.apply(inbuf, inoutbuf, count, datatype)`` computes ``inoutbuf[i] = inbuf[i] op
inoutbuf[i]`` for ``count`` elements of ``datatype`` in *packed* layout (the bytes
``DatatypeImpl.pack`` produces, i.e. what travels between ranks; identical to the memory layout
for every predefined type but the padded pairs). Predefined ops run as numpy kernels that
reproduce MPICH's C loops (``inout = MACRO(inout, in)``), including its corner cases:

* ``MAX``/``MIN``: ``inout = inout > in ? inout : in`` (so NaN handling follows MPICH, not
  ``np.maximum``);
* ``MAXLOC``/``MINLOC`` on value-index pairs: the better value wins, ties keep the smaller
  index;
* ``LAND``/``LOR``/``LXOR`` give 0/1 (Fortran ``LOGICAL`` too: MPICH tests ``!= .FALSE.``);
* complex ``PROD`` is C99's product (Annex G infinity recovery, unlike numpy);
* integer overflow wraps, as the C loops do.

``MPI_REAL16``/``MPI_COMPLEX32`` are IEEE binary128 in MPICH (gfortran's ``REAL*16``), which
numpy cannot compute with: arithmetic on them raises ``NotImplementedError`` (moving them works).

An op not defined for a datatype raises ``MPI.Exception(ERR_OP)``, with MPICH's table
(``MAX`` on complex, ``SUM`` on ``C_BOOL``, ``BAND`` on floats, ``REPLACE`` outside RMA...).
``OP_NULL`` raises ``ERR_OP`` too.

``op.apply_object(a, b)`` is mpi4py's ``Op.__call__`` (``comm.reduce(obj, op=...)``): ``SUM``
is ``a + b``, ``MAX`` is ``b if b > a else a``, ``MAXLOC`` compares ``(value, index)`` pairs, a
user op calls ``function(a, b, None)``.

User-defined ops (``OpImpl.user``) call ``function(invec, inoutvec, datatype)`` as mpi4py
does: two writable byte buffers (``memoryview``, format ``'B'``) of ``count * extent`` bytes in
memory layout, and the facade ``MPI.Datatype`` built by the ``facade_datatype`` callback
given at creation (the runtime never imports the facade).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from smpy.runtime import errors
from smpy.runtime.datatype import DatatypeImpl

__all__ = ["OpImpl", "PREDEFINED", "OP_NULL", "MAX", "MIN", "SUM", "PROD", "LAND", "BAND",
           "LOR", "BOR", "LXOR", "BXOR", "MAXLOC", "MINLOC", "REPLACE", "NO_OP"]

Kernel = Callable[[np.ndarray, np.ndarray, DatatypeImpl], None]

_ARITH = frozenset({"cint", "fint", "float"})
_ALL_CATEGORIES = frozenset({"cint", "fint", "float", "complex", "bool", "flogical", "byte",
                             "pair", "none"})


# -- numpy kernels: (in, inout, basic datatype) -> inout updated in place ------------------------
def _k_max(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.copyto(b, a, where=~(b > a))


def _k_min(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.copyto(b, a, where=~(b < a))


def _k_sum(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.add(b, a, out=b)


def _k_prod(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    if dt.category == "complex":
        _cmul(b, a)
    else:
        np.multiply(b, a, out=b)


def _cmul(z: np.ndarray, w: np.ndarray) -> None:
    """``z *= w`` as C99 does it (Annex G, libgcc's ``__mul?c3``): the textbook product in
    the component type, then infinities recovered where both parts came out NaN (numpy leaves
    ``(inf+infj)*(inf+0j)`` as ``nan+nanj``; MPICH gives ``inf+infj``)."""
    a, b, c, d = z.real.copy(), z.imag.copy(), w.real.copy(), w.imag.copy()
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    bad = np.isnan(x) & np.isnan(y)
    if bad.any():
        a, b, c, d = a[bad], b[bad], c[bad], d[bad]
        ac, bd, ad, bc = ac[bad], bd[bad], ad[bad], bc[bad]
        one, zero = np.ones_like(a), np.zeros_like(a)
        z_inf = np.isinf(a) | np.isinf(b)
        w_inf = np.isinf(c) | np.isinf(d)
        # z infinite: box its parts to +-1/+-0, NaNs of w to +-0
        a = np.where(z_inf, np.copysign(np.where(np.isinf(a), one, zero), a), a)
        b = np.where(z_inf, np.copysign(np.where(np.isinf(b), one, zero), b), b)
        c = np.where(z_inf & np.isnan(c), np.copysign(zero, c), c)
        d = np.where(z_inf & np.isnan(d), np.copysign(zero, d), d)
        # w infinite: the same the other way round
        c = np.where(w_inf, np.copysign(np.where(np.isinf(c), one, zero), c), c)
        d = np.where(w_inf, np.copysign(np.where(np.isinf(d), one, zero), d), d)
        a = np.where(w_inf & np.isnan(a), np.copysign(zero, a), a)
        b = np.where(w_inf & np.isnan(b), np.copysign(zero, b), b)
        # neither infinite but a partial product overflowed: NaNs to +-0
        over = ~z_inf & ~w_inf & (np.isinf(ac) | np.isinf(bd) | np.isinf(ad) | np.isinf(bc))
        a = np.where(over & np.isnan(a), np.copysign(zero, a), a)
        b = np.where(over & np.isnan(b), np.copysign(zero, b), b)
        c = np.where(over & np.isnan(c), np.copysign(zero, c), c)
        d = np.where(over & np.isnan(d), np.copysign(zero, d), d)
        recalc = z_inf | w_inf | over
        inf = np.full_like(a, np.inf)
        xb, yb = x[bad], y[bad]
        x[bad] = np.where(recalc, inf * (a * c - b * d), xb)
        y[bad] = np.where(recalc, inf * (a * d + b * c), yb)
    z.real = x
    z.imag = y


def _logical(fn: Callable[..., np.ndarray]) -> Kernel:
    # MPICH: C's && || on "!= 0"; Fortran LOGICAL converts with (x != .FALSE.) and back to
    # 1/0, which is the same thing with gfortran's .TRUE. == 1
    def kernel(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
        b[...] = fn(b.astype(bool, copy=False), a.astype(bool, copy=False))
    return kernel


def _k_band(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.bitwise_and(b, a, out=b)


def _k_bor(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.bitwise_or(b, a, out=b)


def _k_bxor(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    np.bitwise_xor(b, a, out=b)


def _k_maxloc(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    av, ai, bv, bi = a["value"], a["index"], b["value"], b["index"]
    eq, take = bv == av, bv < av
    bi[...] = np.where(eq, np.minimum(bi, ai), np.where(take, ai, bi))
    bv[...] = np.where(take, av, bv)


def _k_minloc(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    av, ai, bv, bi = a["value"], a["index"], b["value"], b["index"]
    eq, take = bv == av, bv > av
    bi[...] = np.where(eq, np.minimum(bi, ai), np.where(take, ai, bi))
    bv[...] = np.where(take, av, bv)


def _k_replace(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    b[...] = a


def _k_no_op(a: np.ndarray, b: np.ndarray, dt: DatatypeImpl) -> None:
    return None


#: kernels that are one ufunc ``f(inout, in, out=inout)``: :meth:`OpImpl.apply_out` calls
#: ``f(local, in, out=out)`` instead of copying ``local`` into ``out`` first
_FUSED: dict[Kernel, Any] = {_k_sum: np.add, _k_band: np.bitwise_and, _k_bor: np.bitwise_or,
                             _k_bxor: np.bitwise_xor}


# -- Python-object semantics (mpi4py's opimpl.pxi) ------------------------------------------------
def _o_max(x: Any, y: Any) -> Any:
    return y if y > x else x


def _o_min(x: Any, y: Any) -> Any:
    return y if y < x else x


def _unpack2(x: Any) -> tuple[Any, Any]:
    """``a, b = x`` with Cython's error messages (mpi4py's opimpl is Cython)."""
    try:
        items = tuple(x)
    except TypeError:
        raise TypeError(f"'{type(x).__name__}' object is not iterable") from None
    if len(items) == 2:
        return items[0], items[1]
    if len(items) < 2:
        n = len(items)
        raise ValueError(f"need more than {n} value{'s' if n != 1 else ''} to unpack")
    raise ValueError("too many values to unpack (expected 2)")


def _o_maxloc(x: Any, y: Any) -> Any:
    u, i = _unpack2(x)
    v, j = _unpack2(y)
    if u > v:
        return u, i
    if v > u:
        return v, j
    if j < i:
        return v, j
    return u, i


def _o_minloc(x: Any, y: Any) -> Any:
    u, i = _unpack2(x)
    v, j = _unpack2(y)
    if u < v:
        return u, i
    if v < u:
        return v, j
    if j < i:
        return v, j
    return u, i


def _o_null(x: Any, y: Any) -> Any:
    raise ValueError("cannot call user-defined operation")


class OpImpl:
    """One reduction operation (predefined or user-defined)."""

    __slots__ = ("name", "attr", "commutative", "is_predefined", "handle", "function",
                 "facade_datatype", "facade_buffer", "_kernel", "_pyfn", "_allowed", "__weakref__")

    def __init__(self, name: str, attr: str, *, commutative: bool, kernel: Kernel | None,
                 pyfn: Callable[[Any, Any], Any], allowed: frozenset[str], handle: int,
                 is_predefined: bool = True) -> None:
        self.name = name  # MPI name: 'MPI_SUM'
        self.attr = attr  # mpi4py attribute name: 'SUM'
        self.commutative = commutative
        self.is_predefined = is_predefined
        self.handle = handle
        self.function: Callable[..., Any] | None = None
        self.facade_datatype: Callable[[DatatypeImpl], Any] | None = None
        self.facade_buffer: Callable[[memoryview], Any] | None = None
        self._kernel = kernel
        self._pyfn = pyfn
        self._allowed = allowed

    def __repr__(self) -> str:
        return f"<OpImpl {self.name}>"

    @property
    def is_null(self) -> bool:
        return self is OP_NULL

    @property
    def py2f(self) -> int:
        return self.handle - (1 << 32) if self.handle >= 1 << 31 else self.handle

    # -- user-defined -----------------------------------------------------------------------
    @classmethod
    def user(cls, function: Callable[..., Any], commute: bool = False,
             facade_datatype: Callable[[DatatypeImpl], Any] | None = None,
             facade_buffer: Callable[[memoryview], Any] | None = None) -> OpImpl:
        """``MPI_Op_create``: ``function(invec, inoutvec, datatype)`` does ``inoutvec = invec op
        inoutvec``; ``facade_datatype(impl)`` builds the ``MPI.Datatype`` it receives and
        ``facade_buffer(mem)`` the ``MPI.buffer`` objects wrapping ``invec``/``inoutvec``."""
        function.__call__  # noqa: B018 - mpi4py's check: AttributeError if not callable
        global _next_user
        _next_user += 1
        op = cls(f"user-op-{_next_user}", "", commutative=bool(commute), kernel=None,
                 pyfn=_o_null, allowed=_ALL_CATEGORIES, handle=0x98000000 + _next_user,
                 is_predefined=False)
        op.function = function
        op.facade_datatype = facade_datatype
        op.facade_buffer = facade_buffer
        op._pyfn = op._call_user_object
        return op

    def _call_user_object(self, x: Any, y: Any) -> Any:
        fn = self.function
        if fn is None:
            raise ValueError("cannot call user-defined operation")
        return fn(x, y, None)

    def free(self) -> None:
        """Forget a user op's function (its facade handles become unusable)."""
        self.function = None
        self._pyfn = _o_null

    # -- semantics --------------------------------------------------------------------------
    def apply_object(self, a: Any, b: Any) -> Any:
        """mpi4py's ``op(a, b)`` on Python objects (lowercase reductions combine this way)."""
        return self._pyfn(a, b)

    def check(self, datatype: DatatypeImpl, rma: bool = False) -> None:
        """Raise ``ERR_OP`` unless this op is defined for ``datatype`` (MPICH's table)."""
        if self is OP_NULL:
            errors.raise_error(errors.ERR_OP, "Null MPI_Op")
        if not self.is_predefined:
            if self.function is None:
                errors.raise_error(errors.ERR_OP, "Invalid MPI_Op (freed user-defined operation)")
            return
        basic = datatype.basic
        allowed = _ALL_CATEGORIES if rma and self in (REPLACE, NO_OP) else self._allowed
        # MPICH's collectives take predefined ops on predefined types only (a Dup or a
        # contiguous type of DOUBLE is refused too); accumulates take derived types of one
        # basic type
        if basic is None or basic.category not in allowed or not (rma or datatype.is_predefined):
            errors.raise_error(errors.ERR_OP, f"MPI_Op {self.name} operation not defined for "
                                              f"this datatype ({datatype.name or 'derived'})")

    def apply(self, inbuf: bytes | bytearray | memoryview, inoutbuf: bytearray | memoryview,
              count: int, datatype: DatatypeImpl, rma: bool = False) -> None:
        """``inoutbuf = inbuf op inoutbuf`` on ``count`` packed elements of ``datatype``.

        ``inoutbuf`` must be writable. ``rma=True`` also admits ``REPLACE``/``NO_OP`` (they
        are defined only for accumulate operations). Raises ``ERR_OP`` as MPICH does.
        """
        self.check(datatype, rma)
        if count <= 0:
            return
        kernel = self._kernel
        if kernel is None:
            self._apply_user(inbuf, inoutbuf, count, datatype)
            return
        basic = datatype.basic
        assert basic is not None
        if basic.packed_dtype is None:
            raise NotImplementedError(
                f"reductions on {basic.name} (IEEE binary128, which numpy lacks) are not "
                "supported by smpy")
        n = count * datatype.basic_count
        a = basic.packed_numpy(inbuf, n)
        b = basic.packed_numpy(inoutbuf, n)
        with np.errstate(all="ignore"):
            kernel(a, b, basic)

    def apply_out(self, inbuf: bytes | bytearray | memoryview, localbuf: bytes | bytearray | memoryview,
                  outbuf: memoryview, count: int, datatype: DatatypeImpl) -> None:
        """``outbuf = inbuf op localbuf`` on ``count`` packed elements (``localbuf`` is only
        read; ``outbuf`` is a writable byte view as long as ``localbuf``): the same bytes as
        ``outbuf[:] = localbuf`` then :meth:`apply`, in one pass without the copy for the
        ops whose kernel is one numpy ufunc (SUM and the bitwise ops)."""
        fused = _FUSED.get(self._kernel)  # type: ignore[arg-type]
        basic = datatype.basic
        if fused is None or basic is None or basic.packed_dtype is None or count <= 0:
            outbuf[:] = localbuf
            self.apply(inbuf, outbuf, count, datatype)
            return
        self.check(datatype)
        n = count * datatype.basic_count
        out = basic.packed_numpy(outbuf, n)
        with np.errstate(all="ignore"):  # inout = inout op in, with inout read from localbuf
            fused(basic.packed_numpy(localbuf, n), basic.packed_numpy(inbuf, n), out=out)

    def _apply_user(self, inbuf: bytes | bytearray | memoryview,
                    inoutbuf: bytearray | memoryview, count: int, datatype: DatatypeImpl) -> None:
        fn = self.function
        assert fn is not None
        dt_obj = self.facade_datatype(datatype) if self.facade_datatype is not None else datatype
        nbytes = count * datatype.extent
        if datatype.contiguous:
            invec = memoryview(inbuf).cast("B")[:nbytes]
            if invec.readonly:  # mpi4py hands the function writable buffers
                invec = memoryview(bytearray(invec))
            self._call_fn(fn, invec, memoryview(inoutbuf).cast("B")[:nbytes], dt_obj)
            return
        # padded/derived types: the function sees memory layout; convert around the call
        room = max(nbytes, datatype.span(count))
        mem_in, mem_io = memoryview(bytearray(room)), memoryview(bytearray(room))
        datatype.unpack(inbuf, mem_in, 0, count)
        datatype.unpack(inoutbuf, mem_io, 0, count)
        self._call_fn(fn, mem_in[:nbytes], mem_io[:nbytes], dt_obj)
        packed = datatype.pack(mem_io, 0, count)
        memoryview(inoutbuf).cast("B")[:len(packed)] = packed

    def _call_fn(self, fn: Callable[..., Any], invec: memoryview, inoutvec: memoryview,
                 dt_obj: Any) -> None:
        wrap = self.facade_buffer
        if wrap is not None:  # mpi4py passes MPI.buffer objects (byte views over the memory)
            invec, inoutvec = wrap(invec), wrap(inoutvec)
        fn(invec, inoutvec, dt_obj)

    def reduce_local(self, inmem: memoryview, inoffset: int, inoutmem: memoryview,
                     inoutoffset: int, count: int, datatype: DatatypeImpl) -> None:
        """``MPI_Reduce_local`` on memory layout (user buffers) rather than packed bytes."""
        if datatype.contiguous:
            n = count * datatype.size
            self.apply(inmem[inoffset:inoffset + n], inoutmem[inoutoffset:inoutoffset + n],
                       count, datatype)
            return
        self.check(datatype)
        packed = bytearray(datatype.pack(inoutmem, inoutoffset, count))
        self.apply(datatype.pack(inmem, inoffset, count), packed, count, datatype)
        datatype.unpack(packed, inoutmem, inoutoffset, count)


_next_user = 0

_PREDEF_TABLE: list[tuple[str, Kernel, Callable[[Any, Any], Any], frozenset[str], bool, int]] = [
    ("MAX", _k_max, _o_max, _ARITH, True, 0x58000001),
    ("MIN", _k_min, _o_min, _ARITH, True, 0x58000002),
    ("SUM", _k_sum, lambda x, y: x + y, _ARITH | {"complex"}, True, 0x58000003),
    ("PROD", _k_prod, lambda x, y: x * y, _ARITH | {"complex"}, True, 0x58000004),
    ("LAND", _logical(np.logical_and), lambda x, y: bool(x) & bool(y),
     frozenset({"cint", "bool", "flogical"}), True, 0x58000005),
    ("BAND", _k_band, lambda x, y: x & y, frozenset({"cint", "fint", "byte"}), True, 0x58000006),
    ("LOR", _logical(np.logical_or), lambda x, y: bool(x) | bool(y),
     frozenset({"cint", "bool", "flogical"}), True, 0x58000007),
    ("BOR", _k_bor, lambda x, y: x | y, frozenset({"cint", "fint", "byte"}), True, 0x58000008),
    ("LXOR", _logical(np.logical_xor), lambda x, y: bool(x) ^ bool(y),
     frozenset({"cint", "bool", "flogical"}), True, 0x58000009),
    ("BXOR", _k_bxor, lambda x, y: x ^ y, frozenset({"cint", "fint", "byte"}), True, 0x5800000A),
    ("MINLOC", _k_minloc, _o_minloc, frozenset({"pair"}), True, 0x5800000B),
    ("MAXLOC", _k_maxloc, _o_maxloc, frozenset({"pair"}), True, 0x5800000C),
    ("REPLACE", _k_replace, lambda x, y: y, frozenset(), False, 0x5800000D),
    ("NO_OP", _k_no_op, lambda x, y: x, frozenset(), False, 0x5800000E),
]

#: predefined ops by mpi4py attribute name ('SUM'), OP_NULL included
PREDEFINED: dict[str, OpImpl] = {
    "OP_NULL": OpImpl("MPI_OP_NULL", "OP_NULL", commutative=False, kernel=None, pyfn=_o_null,
                      allowed=frozenset(), handle=0x18000000),
}
for _attr, _k, _py, _allowed, _comm, _handle in _PREDEF_TABLE:
    PREDEFINED[_attr] = OpImpl(f"MPI_{_attr}", _attr, commutative=_comm, kernel=_k, pyfn=_py,
                               allowed=_allowed, handle=_handle)
del _attr, _k, _py, _allowed, _comm, _handle

OP_NULL = PREDEFINED["OP_NULL"]
MAX = PREDEFINED["MAX"]
MIN = PREDEFINED["MIN"]
SUM = PREDEFINED["SUM"]
PROD = PREDEFINED["PROD"]
LAND = PREDEFINED["LAND"]
BAND = PREDEFINED["BAND"]
LOR = PREDEFINED["LOR"]
BOR = PREDEFINED["BOR"]
LXOR = PREDEFINED["LXOR"]
BXOR = PREDEFINED["BXOR"]
MAXLOC = PREDEFINED["MAXLOC"]
MINLOC = PREDEFINED["MINLOC"]
REPLACE = PREDEFINED["REPLACE"]
NO_OP = PREDEFINED["NO_OP"]
