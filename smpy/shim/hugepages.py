"""numpy's transparent-huge-page advice, off while ranks are emulated.

On Linux numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on
every array of 4 MiB or more. In a real run that helps the one rank of a process. Under
smpyrun one process holds the arrays of all ranks, most of them written once and then only
copied: the emulator's cost is page faults, not TLB misses. On the machines smpy was measured
on (a VM with THP in ``madvise`` mode), faulting in 1024 arrays of 8 MiB took 15-16 s of
system time with the advice and 6.4-7.2 s without it (benchmarks/vs_smpi, ping-pong at
np 1024: 20-22 s against 8-9 s), as 4 KiB pages take that C programs under SMPI get.

``--cfg=smpy/numpy-hugepage:yes`` keeps numpy's default. Computation time measured on large
arrays can differ by the TLB effect; the region factors of ``smpy calibrate compute``
absorb it, as they absorb every other difference between the emulator's process and a rank's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def _setter():  # type: ignore[no-untyped-def]
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # numpy >= 2
    except ImportError:
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]
        except ImportError:
            return None
    return _set_madvise_hugepage


@contextlib.contextmanager
def numpy_hugepages(enabled: bool) -> Iterator[None]:
    """Set numpy's huge-page advice for the duration of the block, then restore it."""
    setter = _setter()
    if setter is None:
        yield
        return
    before = setter(enabled)
    try:
        yield
    finally:
        setter(before)
