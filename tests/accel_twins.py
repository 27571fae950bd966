"""What the twin tests share: each compiled part (``smpy/**/_*.c``) is run against its Python
reference, and the tests are skipped only when the accelerator cannot be built here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from smpy.kernel import accel

MOD = accel.load()
needs_accel = pytest.mark.skipif(MOD is None, reason=f"the accelerator cannot be built here: {accel.why()}")


def both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """``fn()`` with the Python objects, then with the compiled ones (the Python ones again after)."""
    assert not accel.active()
    a = fn()
    assert accel.use(True)
    try:
        b = fn()
    finally:
        accel.use(False)
    return a, b
