"""The ``mpiexec`` that real reference runs use."""

from __future__ import annotations

import os
import shutil
import sys


def default_mpiexec() -> str:
    """The mpiexec of this Python's environment (the ``mpich`` wheel's hydra, whose MPI is the
    one the environment's mpi4py was built against), else the one on PATH, else ``mpiexec``."""
    return (shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
            or "mpiexec")
