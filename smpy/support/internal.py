"""``SmpyInternalError``: a broken invariant of smpy itself, never a user's mistake.

User errors are reported in one line naming the file, field or call at fault (MPI errors
as ``MPI.Exception`` with MPICH's error class, configuration and platform errors by their
own classes). An ``SmpyInternalError`` instead says that smpy's own code contradicts
itself (a registry asked for a class nobody registered, a schedule receiving more bytes
than it sent): the front ends report it as a bug of smpy, with its traceback.
"""

from __future__ import annotations

__all__ = ["SmpyInternalError"]


class SmpyInternalError(RuntimeError):
    """An invariant of smpy's own code does not hold (a bug of smpy, not of the program)."""
