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


def require_mpiexec(path: str) -> str:
    """``path`` as an executable (a name is looked up on PATH); LookupError with what to do
    when there is none (a plain ``pip install`` has no MPI launcher)."""
    found = shutil.which(path)
    if found is not None:
        return found
    if os.sep in path:
        raise LookupError(f"--mpiexec {path}: no such executable")
    raise LookupError(f"no {path!r} found (the real runs need an MPI launcher): pip install mpich, "
                      "or give --mpiexec PATH")
