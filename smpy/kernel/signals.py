"""Signals: the kernel's extension points (energy, tracing and progress listen to them).

A signal is a list of callbacks called synchronously, in connection order, from the
maestro or from an actor. Callbacks must not block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Signal:
    __slots__ = ("name", "_slots")

    def __init__(self, name: str) -> None:
        self.name = name
        self._slots: list[Callable[..., Any]] = []

    def connect(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self._slots.append(fn)
        return fn

    def disconnect(self, fn: Callable[..., Any]) -> None:
        self._slots.remove(fn)

    def __bool__(self) -> bool:
        return bool(self._slots)

    def emit(self, *args: Any) -> None:
        for fn in self._slots:
            fn(*args)
