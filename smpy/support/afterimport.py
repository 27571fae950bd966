"""A post-import hook: call a function on a module once it has been executed, the first time
it is imported, without importing it before. The emulator patches some modules for the run
(``numpy.random``'s legacy functions, ``multiprocessing``'s connections and locks); importing
them up front costs every run their start-up time and memory (2.5 MB for ``numpy.random``),
used or not."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["AfterImport", "Patches", "when_imported"]


class AfterImport:
    """A meta-path finder that calls ``then(module)`` once the module ``name`` has been
    executed, the first time it is imported; it steps aside after that (``remove`` takes it
    out if that never happened)."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        self.remove()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec
        then = self.then

        def exec_module(module: Any) -> None:
            run(module)
            then(module)

        spec.loader.exec_module = exec_module  # this spec's own loader instance
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def when_imported(name: str, then: Callable[[Any], None]) -> AfterImport | None:
    """``then(module)`` now if ``name`` is imported, else once it is; the hook to ``remove``
    (None when called at once)."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return None
    hook = AfterImport(name, then)
    sys.meta_path.insert(0, hook)
    return hook


class Patches:
    """Attributes a shim replaces for a run, and its post-import hooks, both undone by
    ``_undo`` (the attributes in reverse order, so that one patched twice gets its first
    value back)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []
        self._hooks: list[AfterImport] = []

    def _patch(self, obj: Any, name: str, value: Any) -> None:
        # a class's own entry as stored (a staticmethod stays one), else the attribute
        own = obj.__dict__ if isinstance(obj, type) and name in obj.__dict__ else None
        self._saved.append((obj, name, own[name] if own is not None else getattr(obj, name)))
        setattr(obj, name, value)

    def _undo(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        while self._saved:
            obj, name, value = self._saved.pop()
            setattr(obj, name, value)
