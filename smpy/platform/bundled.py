"""Platforms shipped with smpy (``smpy/platform/data/*.yaml``), found by name.

``--platform taurus`` means the bundled ``taurus.yaml`` when no file of that name exists in the
working directory: a path that exists always wins, so a bundled name never hides a user's file.
Each bundled file opens with the sources of its numbers; ``smpy platform list`` prints them.
"""

from __future__ import annotations

import os
from pathlib import Path

_SUFFIXES = (".yaml", ".yml", ".xml")


def _data_dir() -> Path:
    from importlib import resources  # here: it imports zipfile and tempfile (1.5 MB)

    return Path(str(resources.files("smpy.platform").joinpath("data")))


def bundled_platforms() -> dict[str, Path]:
    """Name -> file of every bundled platform, sorted by name."""
    root = _data_dir()
    return {f.stem: f for f in sorted(root.iterdir()) if f.suffix in _SUFFIXES}


def resolve_platform(source: str | os.PathLike[str]) -> str:
    """``source`` itself when it names an existing path or is not a bare name; otherwise the
    bundled platform of that name (``taurus`` or ``taurus.yaml``), if there is one."""
    text = os.fspath(source)
    if os.path.exists(text) or os.sep in text or (os.altsep and os.altsep in text):
        return text
    stem = Path(text).stem if Path(text).suffix in _SUFFIXES else text
    found = bundled_platforms().get(stem)
    return str(found) if found is not None else text


def describe(path: Path, width: int = 90) -> str:
    """The first sentence of a bundled platform file's opening comment (what it describes)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.extend(line.lstrip("#").split())
        if line.rstrip().endswith((".", ":")):
            break
    text = " ".join(words).rstrip(":")
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."
