"""Whether a file smpy wrote earlier may be trusted now: code is loaded from two caches (the
built platforms, unpickled, and the rank-heap handler, a shared library), so a file planted
there by another user must never be used.

A file is trusted when it is a regular file (not a symbolic link) owned by the user, that
nobody else may write, in a directory owned by the user (or root) that nobody else may write
unless it is sticky (as ``/tmp``: others cannot replace a file they do not own there).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["trusted_file", "trusted_stat"]


def trusted_stat(st: os.stat_result) -> bool:
    """A regular file of the user's that only the user may write."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def trusted_file(path: str | os.PathLike[str]) -> bool:
    """See the module's doc; False when the file is missing or cannot be examined."""
    p = Path(path)
    try:
        st = os.lstat(p)
        parent = os.stat(p.parent)
    except OSError:
        return False
    if not trusted_stat(st):
        return False
    if parent.st_uid not in (os.getuid(), 0):
        return False
    return not parent.st_mode & 0o022 or bool(parent.st_mode & stat.S_ISVTX)
