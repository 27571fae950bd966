"""numpy's transparent-huge-page advice under smpyrun: as in the rank's real process.

On Linux numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on
every array of 4 MiB or more it mallocs or callocs, unless ``NUMPY_MADVISE_HUGEPAGE=0`` or the
kernel is older than 4.6 (numpy decides at import). A real rank runs with that advice, and
what it costs shows in the rank's computation: on the VM smpy is measured on (THP in
``madvise`` mode), a fresh process sorting 4 Mi doubles (``examples/predict/mergesort.py``'s
leaf sort, temporaries of 16-32 MiB) took 1.56 s with the advice and 1.33 s without it
(median of 8 alternated runs each; system time 0.33 s against 0.19 s); with the emulator
faulting 4 KiB pages, ``mergesort 8000000`` was predicted 8-18 % too fast.

``smpy/numpy-hugepage``: ``numpy`` (the default) keeps numpy's own decision, i.e. the one
the rank's real process makes in the same environment; ``yes``/``no`` force it. With
per-rank heaps the advice is given by the heaps' handler exactly where numpy's default
handler gives it (smpy/shim/_rankheap.c); without them it is numpy's own flag, set for the
duration of the run. When computation is not simulated (``smpi/simulate-computation:no``)
the page size cannot change a prediction and ``numpy`` leaves the advice out. ``no`` makes
emulations of many ranks with large arrays faster (the emulator faults every rank's arrays in
one process: 1024 arrays of 8 MiB took 15-16 s of system time with the advice, 6.4-7.2 s
without) at the price of that fidelity.
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


def numpy_default() -> bool:
    """numpy's current advice setting (what it decided at import), False without numpy."""
    setter = _setter()
    if setter is None:
        return False
    before = setter(True)
    setter(before)
    return bool(before)


def resolve(setting: str) -> bool:
    """``smpy/numpy-hugepage`` (numpy, yes, no) as a boolean."""
    return numpy_default() if setting == "numpy" else setting == "yes"


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
