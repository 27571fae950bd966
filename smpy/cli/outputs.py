"""Checking where a command will write, before it runs: a results file that cannot be
written must fail in the first second with one line, not after an hour-long emulation."""

from __future__ import annotations

import os
from pathlib import Path


class OutputError(ValueError):
    """An output path that cannot be written; the message names the option and the path."""


def check_file(path: str | os.PathLike | None, option: str) -> None:
    """``path`` can be created or overwritten as a file: its directory exists and is
    writable, and it is not itself a directory."""
    if path is None or str(path) == "":
        return
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{option} {path}: is a directory (give a file name)")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise OutputError(f"{option} {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: {parent} is not a directory")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {path}: file is not writable")
    if not p.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: directory {parent} is not writable")


def check_dir(path: str | os.PathLike | None, option: str) -> None:
    """``path`` is a writable directory or can be created as one."""
    if path is None or str(path) == "":
        return
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise OutputError(f"{option} {path}: exists and is not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise OutputError(f"{option} {path}: directory is not writable")
        return
    existing = p.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{option} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: cannot create it, {existing} is not writable")
