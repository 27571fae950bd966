"""smpy hints that degrade to plain Python when smpy is not installed (real mpiexec runs).

``sample(it, ...)`` runs every item, ``shared_array(shape)`` is ``numpy.zeros``: the same
program runs in production and under smpyrun (where the hints save emulation time/memory).
``enabled=False`` turns a hint off (the examples enable them with ``--sample``/``--fold``).
"""
from __future__ import annotations

try:
    import smpy as _smpy
except ImportError:  # pragma: no cover - production machine without smpy
    _smpy = None


def sample(iterable, iters=10, threshold=0.005, scope="local", tag="", warmup=0, enabled=True, work=None):
    if _smpy is None or not enabled:
        return iter(iterable)
    return _smpy.sample(iterable, iters=iters, threshold=threshold, scope=scope, tag=tag, warmup=warmup,
                        work=work)


def untimed(enabled=True):
    """``with untimed():`` the block's Python time is not simulated computation (SMPI's
    smpi_bench_end / smpi_bench_begin); a no-op outside smpy."""
    make = getattr(_smpy, "untimed", None)  # None: no smpy, or one older than the hint
    if make is None or not enabled:
        import contextlib
        return contextlib.nullcontext()
    return make()


def shared_array(shape, dtype=float, enabled=True, shared=None):
    """``shared``: the byte ranges to fold (the rest stays private); None folds everything."""
    if _smpy is None or not enabled:
        import numpy as np
        return np.zeros(shape, dtype)
    return _smpy.shared_array(shape, dtype, shared=shared)
