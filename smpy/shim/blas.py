"""Keep numerical libraries to one thread per rank.

Under smpyrun every rank runs in one OS thread; the compute time of a rank is measured
with that thread's CPU clock. BLAS worker threads would compute part of a rank's work on
other cores, invisible to that clock, and would fight each other. A real run places one
rank per core with single-threaded BLAS, so smpy does the same: it sets the usual
thread-count variables before numpy is first imported, and limits already-loaded pools
through threadpoolctl when it is installed.
"""

from __future__ import annotations

import os
import sys

VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def single_thread_blas() -> None:
    for v in VARS:
        os.environ[v] = "1"
    if "numpy" in sys.modules:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return
        threadpool_limits(1)
