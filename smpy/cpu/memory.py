r"""Memory capacity of a host: slowdown while its memory fills, out of memory beyond swap.

After UniMPP (Mello and Senger, Eq. 3 and Tables 2, 5, 6): a process whose ideal execution
time is :math:`T_E` runs in :math:`T_{EM} = T_E (1 + \alpha)`, :math:`\alpha` a *delay
function* of the memory occupied on its computer, which their ``memo`` benchmark found
linear while the main memory fills and exponential once the virtual memory (swap) is used.

A host declares its main memory :math:`R` (``ram``, bytes) and swap :math:`S` (``swap``,
bytes, default 0). With :math:`M` the resident memory of the host's ranks (the sum over
them), every computation on the host progresses :math:`1 + \alpha(M)` times slower than on
an empty host, with

.. math::

    \alpha(M) = \begin{cases}
      a\, \dfrac{M}{R} & M \le R \quad\text{(main memory: linear in the occupancy)}\\[1ex]
      a + c \left(e^{\,k (M - R)/S} - 1\right) & R < M \le R + S \quad\text{(swapping)}
    \end{cases}

continuous at :math:`M = R` and growing steeply with the swapped fraction
:math:`(M - R)/S`. Defaults (``memory_slowdown: {ram: a, swap: c, growth: k}``) are UniMPP's
computers :math:`c_1, c_2` (1 GB of memory and 1 GB of swap, Table 2, :math:`\alpha` in
percent of the occupied megabytes :math:`x`): the linear fit :math:`0.0012 x - 0.0065` gives
:math:`a = 0.0012 \cdot 1024 / 100 = 0.0123` at full memory; the exponential
:math:`0.0938 e^{0.0039 x}` gives :math:`0.0507` at :math:`x = 1024` (:math:`c \approx
0.05`) and grows :math:`e^{0.0039 \cdot 1024} = e^{4.0}` times over the swap (:math:`k = 4`):
:math:`\alpha(R + S) = 0.0123 + 0.05 (e^4 - 1) = 2.69`, close to the fit's 2.76 at
:math:`x = 2048`, i.e. a host whose swap is full computes 3.7 times slower. With :math:`S = 0` the second case is
empty.

Beyond :math:`R + S` the host is out of memory: the kernel's OOM killer ends a process, and
MPI's launcher the job (:class:`OutOfMemory`, exit status 137 = 128 + SIGKILL). A host
without ``ram`` (:math:`R = \infty`) is never slowed nor out of memory.

The *page cache* of a host's local file systems holds at most the free memory
:math:`\max(0, R - M)` (:func:`free_ram`; :mod:`smpy.storage.filesystem` shrinks a cache
that no longer fits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SwapCurve", "DEFAULT_CURVE", "alpha", "slowdown", "free_ram", "over", "OutOfMemory"]


@dataclass(frozen=True)
class SwapCurve:
    """The delay function's coefficients: ``ram`` (:math:`a`), ``swap`` (:math:`c`),
    ``growth`` (:math:`k`)."""

    ram: float = 0.0123
    swap: float = 0.05
    growth: float = 4.0


DEFAULT_CURVE = SwapCurve()


def alpha(used: float, ram: float, swap: float, curve: SwapCurve = DEFAULT_CURVE) -> float:
    r""":math:`\alpha(M)` for ``used`` = :math:`M` bytes on a host of ``ram`` and ``swap`` bytes
    (beyond :math:`R + S`: the value at :math:`R + S`; see :func:`over`)."""
    if ram == math.inf or used <= 0.0:
        return 0.0
    if used <= ram:
        return curve.ram * used / ram
    if swap <= 0.0:
        return curve.ram
    x = min(used - ram, swap) / swap
    return curve.ram + curve.swap * math.expm1(curve.growth * x)


def slowdown(used: float, ram: float, swap: float, curve: SwapCurve = DEFAULT_CURVE) -> float:
    r""":math:`1 + \alpha(M)`: how many times slower the host's computations progress."""
    return 1.0 + alpha(used, ram, swap, curve)


def free_ram(used: float, ram: float) -> float:
    """Bytes of main memory the ranks leave free (the page cache's room); inf without ``ram``."""
    return max(0.0, ram - used)


def over(used: float, ram: float, swap: float) -> bool:
    """Whether ``used`` bytes exceed the host's memory and swap (out of memory)."""
    return used > ram + swap


class OutOfMemory(BaseException):
    """A host's ranks need more than its RAM + swap: the job is killed, as by the OOM killer.

    A BaseException, so that the program's ``except Exception`` does not catch it."""

    def __init__(self, host: str, ranks: list[int], used: float, ram: float, swap: float,
                 per_rank: dict[int, float]) -> None:
        super().__init__(f"host {host} is out of memory")
        self.host = host
        self.ranks = ranks
        self.used = used
        self.ram = ram
        self.swap = swap
        self.per_rank = per_rank
