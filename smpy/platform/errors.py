"""What a platform problem looks like: :class:`PlatformError` and field-path formatting.

Kept apart from :mod:`smpy.platform.schema` (which needs pydantic) so that code that only
reports or catches platform errors, and a run whose platform comes from the cache, import
nothing heavy."""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable

__all__ = ["PlatformError", "Locator", "format_path", "warn"]


class PlatformError(Exception):
    """A platform that cannot be used; the message reads ``<file>: <field.path>: <problem>``."""


def warn(message: str) -> None:
    """A platform accepted with a doubt: one line on stderr, ``[smpy] warning: <file>: ...``
    (printed when the file is parsed; a platform loaded from the cache says it no more)."""
    print(f"[smpy] warning: {message}", file=sys.stderr)


def format_path(loc: typing.Sequence[str | int]) -> str:
    """``('clusters', 0, 'bandwidth')`` → ``'clusters[0].bandwidth'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<top>"


#: turns a field location into the text naming it in messages (``format_path`` for YAML; the
#: XML importer names the element and line instead)
Locator = Callable[[tuple[str | int, ...]], str]
