"""Integer-array arguments as mpi4py parses them (its ``getarray``/``chkarray``/
``asarray_weights``): each item through ``operator.index``, arrays of the wrong length
``ValueError("expecting N items, got M")``; the weights sentinels of the distributed graph
constructors. A leaf: the topology constructors (:mod:`smpy.mpi.comm_topo`) and the
topology classes (:mod:`smpy.mpi.topo`) both use it.
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["UNWEIGHTED", "WEIGHTS_EMPTY", "int_list", "chk_list", "weights_arg", "periods_arg"]

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
