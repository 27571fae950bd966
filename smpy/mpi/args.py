"""Integer arguments as mpi4py parses them.

Scalars (``dest``, ``tag``, ``root``, counts...) are Cython-typed C integers in mpi4py: any
object with ``__int__`` converts, a float truncates (:func:`cint`). Every public call
converts its ``int``-annotated parameters this way, through :func:`smpy.mpi._call.mpicall`
or :func:`intargs`. Integer arrays (mpi4py's ``getarray``/``chkarray``/``asarray_weights``)
take each item through ``operator.index`` (a float is a ``TypeError``, as in mpi4py), arrays
of the wrong length raise ``ValueError("expecting N items, got M")``; the weights sentinels
of the distributed graph constructors live here. A leaf of :mod:`smpy.mpi`.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["UNWEIGHTED", "WEIGHTS_EMPTY", "int_list", "chk_list", "weights_arg", "periods_arg", "cint",
           "int_params", "coerce_ints", "intargs"]

#: MPICH's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY are addresses of two sentinels; mpi4py
#: exposes them as plain ints and recognises them by identity
UNWEIGHTED: int = int("7f3d0000f00c", 16)
WEIGHTS_EMPTY: int = int("7f3d0000f008", 16)


def int_list(seq: Any) -> list[int]:
    """The items of ``seq`` as ints (``operator.index``: a float is a ``TypeError``)."""
    return [operator.index(seq[i]) for i in range(len(seq))]


def chk_list(seq: Any, n: int) -> list[int]:
    """:func:`int_list` of exactly ``n`` items."""
    values = int_list(seq)
    if len(values) != n:
        raise ValueError(f"expecting {n} items, got {len(values)}")
    return values


def weights_arg(weights: Any, n: int) -> list[int] | None:
    """None when unweighted, [] for WEIGHTS_EMPTY, else the n weights."""
    if weights is None or weights is UNWEIGHTED:
        return None
    if weights is WEIGHTS_EMPTY:
        if n > 0:
            raise ValueError("empty weights but nonzero degree")
        return []
    return chk_list(weights, n)


def periods_arg(periods: Any, ndims: int) -> list[int]:
    """Cartesian periods: None or one bool for every dimension, else ``ndims`` items."""
    if periods is None:
        periods = False
    if isinstance(periods, bool):
        periods = [periods] * ndims
    return chk_list(periods, ndims)


# -- scalar integer arguments (Cython's conversion to a C integer) ---------------------------------
_C_LONG_MAX = 2**63


def cint(value: Any) -> int:
    """``value`` as mpi4py's typed scalar arguments (Cython ``int``/``MPI_Aint``/``MPI_Count``)
    receive it: an ``int`` (``bool`` included) as is; another object through its type's
    ``__int__``, so ``comm.Send(buf, comm.size / 2)`` sends to rank ``size // 2`` and a numpy
    integer or float works; an object without ``__int__`` (a ``str``, ``None``, one with only
    ``__index__``) is ``TypeError: an integer is required``; NaN and infinities raise what
    ``int()`` raises, values beyond a C long ``OverflowError``."""
    if isinstance(value, int):
        return value
    conv = getattr(type(value), "__int__", None)
    if conv is None:
        raise TypeError("an integer is required")
    result = conv(value)
    if not isinstance(result, int):
        raise TypeError(f"__int__ returned non-int (type {type(result).__name__})")
    if not -_C_LONG_MAX <= result < _C_LONG_MAX:
        raise OverflowError("Python int too large to convert to C long")
    return int(result)


def int_params(fn: Callable[..., Any]) -> tuple[tuple[int, str], ...]:
    """(position, name) of the parameters of ``fn`` annotated ``int``: the scalar integer
    arguments that :func:`coerce_ints` converts (mpi4py's typed Cython parameters)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    out = []
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        if p.annotation in ("int", int):
            out.append((i, p.name))
    return tuple(out)


def coerce_ints(ints: tuple[tuple[int, str], ...], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` (and ``kwargs``, in place) with the parameters ``ints`` converted by :func:`cint`."""
    n = len(args)
    for i, name in ints:
        if i < n:
            if type(args[i]) is not int:
                args = args[:i] + (cint(args[i]),) + args[i + 1:]
        elif name in kwargs and type(kwargs[name]) is not int:
            kwargs[name] = cint(kwargs[name])
    return args


def intargs(fn: F) -> F:
    """Decorator: the ``int``-annotated parameters of ``fn`` go through :func:`cint` (for
    public calls that are not :func:`smpy.mpi._call.mpicall`, which does the same)."""
    ints = int_params(fn)
    if not ints:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*coerce_ints(ints, args, kwargs), **kwargs)

    return wrapper  # type: ignore[return-value]
