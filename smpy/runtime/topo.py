"""Process topologies attached to communicators, as MPICH keeps them (``MPIR_Topology``).

A topology is shared by every member of its communicator (``CommImpl.topology``); what is
per-rank (Cartesian coordinates, neighbour lists) is computed from the rank:

* :class:`CartTopo` — ``dims``/``periods``; row-major coordinates (the last dimension
  varies fastest): ``coords(r)_i = (r // prod(dims[i+1:])) % dims[i]``; ``rank(c)`` wraps
  periodic coordinates (``c mod dims_i``). The neighbours of a rank, in the order MPICH's
  neighbourhood collectives use, are for each dimension the ``-1`` then the ``+1``
  neighbour (``MPI_Cart_shift(d, 1)``'s source, then dest), ``PROC_NULL`` past the edge of
  a non-periodic dimension.
* :class:`GraphTopo` — MPI-1 graphs: ``index`` (cumulative degrees) and ``edges``; every
  rank knows the whole graph; in- and out-neighbours are the same list.
* :class:`DistGraphTopo` — each rank knows only its own sources/destinations (+ weights).

:func:`dims_create` is MPICH's ``MPI_Dims_create``: factor ``n / prod(fixed dims)``, give
every prime larger than the square root of what is left a dimension of its own, then take
the trivial decompositions (few primes, one prime power, equal powers) or else search the
divisors for the decomposition with the smallest spread ``max - min`` (Träff & Lübbe,
EuroMPI'15), keeping the last one found among equals as MPICH does; free dimensions get
the values in non-increasing order.
"""

from __future__ import annotations

from collections.abc import Sequence

from smpy.runtime import errors
from smpy.runtime.constants import PROC_NULL

CART = 2
GRAPH = 1
DIST_GRAPH = 3


class CartTopo:
    __slots__ = ("dims", "periods", "nnodes")
    kind = CART

    def __init__(self, dims: Sequence[int], periods: Sequence[int]) -> None:
        self.dims = [int(d) for d in dims]
        self.periods = [1 if p else 0 for p in periods]
        n = 1
        for d in self.dims:
            n *= d
        self.nnodes = n

    @property
    def ndims(self) -> int:
        return len(self.dims)

    def coords(self, rank: int) -> list[int]:
        out = []
        n = self.nnodes
        for d in self.dims:
            n //= d
            out.append(rank // n)
            rank %= n
        return out

    def rank(self, coords: Sequence[int], call: str = "MPI_Cart_rank") -> int:
        r, mult = 0, 1
        for i in range(len(self.dims) - 1, -1, -1):
            c, d = coords[i], self.dims[i]
            if self.periods[i]:
                c %= d
            elif c < 0 or c >= d:
                errors.raise_error(errors.ERR_ARG, f"{call}: coordinate {c} of dimension {i} out of "
                                   f"range [0,{d - 1}] (non-periodic)")
            r += mult * c
            mult *= d
        return r

    def shift(self, rank: int, direction: int, disp: int) -> tuple[int, int]:
        if not self.dims:
            errors.raise_error(errors.ERR_TOPOLOGY, "MPI_Cart_shift: zero-dimensional Cartesian topology")
        if direction < 0 or direction >= len(self.dims):
            errors.raise_error(errors.ERR_ARG, f"MPI_Cart_shift: direction {direction} is not in "
                               f"[0,{len(self.dims) - 1}]")
        if disp == 0:
            return rank, rank
        pos = self.coords(rank)
        here = pos[direction]
        d, periodic = self.dims[direction], self.periods[direction]

        def at(c: int) -> int:
            if not periodic and (c < 0 or c >= d):
                return PROC_NULL
            pos[direction] = c
            return self.rank(pos)

        dest = at(here + disp)
        source = at(here - disp)
        return source, dest

    def neighbors(self, rank: int) -> tuple[list[int], list[int]]:
        nb: list[int] = []
        for i in range(len(self.dims)):
            nb.extend(self.shift(rank, i, 1))
        return nb, nb


class GraphTopo:
    __slots__ = ("index", "edges")
    kind = GRAPH

    def __init__(self, index: Sequence[int], edges: Sequence[int]) -> None:
        self.index = [int(i) for i in index]
        self.edges = [int(e) for e in edges]

    @property
    def nnodes(self) -> int:
        return len(self.index)

    def _check(self, rank: int, call: str) -> None:
        if rank < 0 or rank >= len(self.index):
            errors.raise_error(errors.ERR_RANK, f"{call}: invalid rank {rank} (graph of {len(self.index)} nodes)")

    def count(self, rank: int, call: str = "MPI_Graph_neighbors_count") -> int:
        self._check(rank, call)
        return self.index[rank] - (self.index[rank - 1] if rank else 0)

    def of(self, rank: int, call: str = "MPI_Graph_neighbors") -> list[int]:
        self._check(rank, call)
        return self.edges[(self.index[rank - 1] if rank else 0):self.index[rank]]

    def neighbors(self, rank: int) -> tuple[list[int], list[int]]:
        nb = self.of(rank)
        return nb, nb


class DistGraphTopo:
    """Per-rank adjacency: ``by_rank[r] = (sources, sourceweights, destinations,
    destweights, weighted)`` (weightedness is each rank's own, as in MPICH)."""

    __slots__ = ("by_rank",)
    kind = DIST_GRAPH

    def __init__(self) -> None:
        self.by_rank: dict[int, tuple[list[int], list[int], list[int], list[int], bool]] = {}

    def neighbors(self, rank: int) -> tuple[list[int], list[int]]:
        src, _, dst, _, _ = self.by_rank[rank]
        return list(src), list(dst)


# -- MPI_Dims_create -----------------------------------------------------------------------------
def _factor(n: int) -> list[list[int]]:
    """Prime factors of ``n`` as [prime, multiplicity], increasing primes."""
    out: list[list[int]] = []
    p = 2
    while p * p <= n:
        if n % p == 0:
            c = 0
            while n % p == 0:
                n //= p
                c += 1
            out.append([p, c])
        p += 1 if p == 2 else 2
    if n > 1:
        out.append([n, 1])
    return out


def _divisors(factors: list[list[int]]) -> list[int]:
    divs = [1]
    for p, c in factors:
        divs = [d * p ** k for d in divs for k in range(c + 1)]
    divs.sort()
    return divs[1:-1]  # neither 1 nor n


def _round_robin(factors: list[list[int]], nd: int) -> list[int]:
    """MPICH's first guess: one factor per dimension (largest first), then each further
    factor onto the last dimension that stays no larger than its predecessor."""
    dims = [1] * nd
    k = 0
    for p, c in reversed(factors):
        for _ in range(c):
            if k < nd:
                dims[k] = p
                k += 1
                continue
            kk = nd - 1
            while kk > 0 and dims[kk] * p > dims[kk - 1]:
                kk -= 1
            dims[kk] *= p
    return dims


class _Search:
    """The divisor search for the most balanced decomposition (MPICH's ``optbalance``):
    ``trial[i]`` for i = nd-1 down to 2 take non-decreasing divisors, the last two are the
    most balanced pair of what is left; a candidate replaces the best so far when its
    spread is not larger."""

    def __init__(self, nd: int, best: list[int], bal: int) -> None:
        self.nd = nd
        self.best = best
        self.bal = bal
        self.trial = [0] * nd

    def run(self, n: int, idx: int, divs: list[int]) -> None:
        nd, trial = self.nd, self.trial
        low = trial[nd - 1]
        if idx > 1:
            for k, f in enumerate(divs):
                if idx < nd - 1 and f - low > self.bal:
                    break
                q = n // f
                nxt: list[int] = []
                if q % f == 0:
                    nxt.append(f)
                    sf = f
                elif k + 1 < len(divs):
                    sf = divs[k + 1]
                else:
                    break
                if idx < nd - 1 and sf - low > self.bal:
                    break
                ff, ii = sf * sf, idx - 1
                while ii > 0 and ff <= q:
                    ff *= sf
                    ii -= 1
                if ii > 0:
                    break
                trial[idx] = f
                for g in divs[k + 1:]:
                    if g * g > q:
                        break
                    if q % g == 0:
                        nxt.append(g)
                if nxt:
                    self.run(q, idx - 1, nxt)
        elif idx == 1:
            k, qprev = 1, -1
            while k < len(divs):
                q = n // divs[k]
                if q < divs[k]:
                    break
                qprev = q
                k += 1
            f = divs[k - 1]
            q = qprev if qprev > 0 else n // f
            if q < f:
                return
            test = q - f if nd == 2 else q - low
            if test <= self.bal:
                self.best[2:] = trial[2:]
                self.best[0], self.best[1] = q, f
                self.bal = q - low
        else:
            if n - low <= self.bal:
                self.best[1:] = trial[1:]
                self.best[0] = n
                self.bal = n - low


def _balanced(n: int, nd: int) -> list[int]:
    """``nd`` factors of ``n`` (nd ≥ 2), non-increasing, as MPICH chooses them."""
    factors = _factor(n) if n > 1 else []
    nprimes = sum(c for _, c in factors)
    chosen: list[int] = []
    # primes above sqrt(what is left) get a dimension each (never the smallest prime)
    while len(factors) > 1 and len(chosen) < nd - 1:
        p, c = factors[-1]
        if c == 1 and p * p > n:
            chosen.append(p)
            factors.pop()
            n //= p
            nprimes -= 1
        else:
            break
    left = nd - len(chosen)
    if nprimes + len(chosen) <= nd:
        primes = [p for p, c in reversed(factors) for _ in range(c)]
        return chosen + primes + [1] * (left - len(primes))
    if left == 1:
        return chosen + [n]
    if len(factors) == 1:
        p, c = factors[0]
        rest = [1] * left
        for i in range(c):
            rest[i % left] *= p
        return chosen + rest
    if all(c % left == 0 for _, c in factors):
        v = 1
        for p, c in factors:
            v *= p ** (c // left)
        return chosen + [v] * left
    divs = _divisors(factors)
    first = _round_robin(factors, left)
    full = chosen + first
    search = _Search(left, first, full[0] - full[nd - 1])
    search.trial[left - 1] = divs[0]
    search.run(n, left - 1, divs)
    return chosen + search.best


def dims_create(nnodes: int, dims: Sequence[int]) -> list[int]:
    """MPI_Dims_create: fill the zero entries of ``dims`` for ``nnodes`` processes."""
    dims = [int(d) for d in dims]
    if nnodes < 0:
        errors.raise_error(errors.ERR_ARG, f"MPI_Dims_create: invalid argument nnodes={nnodes} (negative)")
    if not dims:
        return dims
    product, needed = 1, 0
    for i, d in enumerate(dims):
        if d < 0:
            errors.raise_error(errors.ERR_DIMS, f"MPI_Dims_create: negative value dims[{i}]={d}")
        if d == 0:
            needed += 1
        else:
            product *= d
    if (nnodes // product) * product != nnodes:
        errors.raise_error(errors.ERR_DIMS, "MPI_Dims_create: cannot partition nodes as requested")
    if not needed:
        return dims
    n = nnodes // product
    values = [n] if needed == 1 else _balanced(n, needed)
    it = iter(values)
    return [next(it) if d == 0 else d for d in dims]
