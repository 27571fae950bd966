"""``logging``'s configuration, per rank.

Every real MPI process has its own ``logging`` tree: rank 1's
``logging.basicConfig(format=f"[rank 1] ...")`` or ``getLogger("app").setLevel(...)``
configures rank 1 only. All ranks share one interpreter here, so without this module the
first rank's ``basicConfig`` wins (the others' calls see handlers on the root logger and do
nothing) and every rank's records are written by every handler of every rank.

The loggers stay shared objects (one hierarchy by name, as in every process), but what a
rank configures on them is its own: while the patch is installed, ``level``, ``handlers``,
``filters``, ``propagate``, ``disabled`` and the level cache ``_cache`` of a ``Logger``,
and ``_disable`` of the ``Manager`` (``logging.disable``), are data descriptors on the
classes. The value set outside the ranks (before the run, or when the logger was created
there) is the *base*; a rank that sets an attribute, or reads a mutable one (the handler
list, which ``addHandler`` appends to), gets its own value from then on, a copy of the
base, as a forked process copies its parent's. A logger a rank creates has the defaults of
a new ``Logger`` for the other ranks.

What a shared module does to the loggers while it is being imported (a library's
``getLogger(__name__).addHandler(NullHandler())`` or ``setLevel`` at import) is done once
for all ranks, as each real process would do it when importing the module: it goes to the
base (the innermost module-level frame on the stack decides: a shared module's, or the
program's or a per-rank module's). Cost: one property call per attribute read inside a
rank; a walk of the stack per write and per first read of a mutable attribute.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

_KEY = "_smpy_ranks"
_MISSING = object()


def _new_list(base: Any) -> list[Any]:
    return list(base) if base is not _MISSING else []


def _new_dict(_base: Any) -> dict[Any, Any]:
    return {}  # a level cache: the rank's levels decide its entries


class _Ctx:
    """What the descriptors read: the running rank's context and the per-rank module names
    (set by :func:`install`)."""

    state: Any = None
    private: Any = frozenset()


def in_shared_import(depth: int = 2) -> bool:
    """The innermost module-level frame on the caller's stack executes a shared module (one
    imported once for all ranks), not the program or a per-rank module."""
    f: Any = sys._getframe(depth)
    private = _Ctx.private
    modules = sys.modules
    while f is not None:
        if f.f_code.co_name == "<module>":
            g = f.f_globals
            name = g.get("__name__")
            if name == "__main__" or name in private:
                return False
            m = modules.get(name) if isinstance(name, str) else None
            return m is not None and getattr(m, "__dict__", None) is g
        f = f.f_back
    return False


class RankAttr:
    """A data descriptor whose value is the base outside the ranks and the rank's own once
    the rank set it (or, for a mutable value, first read it)."""

    __slots__ = ("name", "default", "make")

    def __init__(self, name: str, default: Any, make: Callable[[Any], Any] | None = None) -> None:
        self.name = name
        self.default = default
        self.make = make

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        ctx = _Ctx.state.ctx
        if ctx is not None:
            ranks = d.get(_KEY)
            if ranks is not None:
                mine = ranks.get(ctx)
                if mine is not None:
                    v = mine.get(self.name, _MISSING)
                    if v is not _MISSING:
                        return v
            make = self.make
            if make is not None:
                if in_shared_import():
                    return self._base_value(d, make)
                v = make(d.get(self.name, _MISSING))
                _mine(d, ctx)[self.name] = v
                return v
        v = d.get(self.name, _MISSING)
        if v is _MISSING:
            make = self.make
            return make(_MISSING) if make is not None else self.default
        return v

    def _base_value(self, d: dict[str, Any], make: Callable[[Any], Any]) -> Any:
        v = d.get(self.name, _MISSING)
        if v is _MISSING:
            v = d[self.name] = make(_MISSING)
        return v

    def __set__(self, obj: Any, value: Any) -> None:
        ctx = _Ctx.state.ctx
        if ctx is None or in_shared_import():
            obj.__dict__[self.name] = value
        else:
            _mine(obj.__dict__, ctx)[self.name] = value

    def __delete__(self, obj: Any) -> None:
        ctx = _Ctx.state.ctx
        ranks = obj.__dict__.get(_KEY)
        if ctx is not None and ranks is not None and self.name in ranks.get(ctx, ()):
            del ranks[ctx][self.name]
        else:
            obj.__dict__.pop(self.name, None)


def _mine(d: dict[str, Any], ctx: Any) -> dict[str, Any]:
    ranks = d.get(_KEY)
    if ranks is None:
        ranks = d[_KEY] = {}
    mine = ranks.get(ctx)
    if mine is None:
        mine = ranks[ctx] = {}
    return mine


_LOGGER_ATTRS = (
    RankAttr("level", logging.NOTSET),
    RankAttr("propagate", True),
    RankAttr("disabled", False),
    RankAttr("handlers", None, _new_list),
    RankAttr("filters", None, _new_list),
    RankAttr("_cache", None, _new_dict),
)
#: the Manager's ``disable`` property keeps its value in ``_disable``
_MANAGER_ATTRS = (RankAttr("_disable", 0),)
#: (class, name, the class's own attribute or _MISSING) replaced by install()
_saved: list[tuple[type, str, Any]] = []


def _loggers() -> list[Any]:
    root = logging.root
    found = [root]
    found.extend(x for x in root.manager.loggerDict.values() if isinstance(x, logging.Logger))
    return found


def install(state: Any, private: Any) -> None:
    """Make the loggers' configuration per rank for a run (``state.ctx``: the running rank's
    context or None; ``private``: the names of the per-rank modules)."""
    if _saved:
        return
    _Ctx.state, _Ctx.private = state, private
    for cls, attrs in ((logging.Logger, _LOGGER_ATTRS), (logging.Manager, _MANAGER_ATTRS)):
        for attr in attrs:
            _saved.append((cls, attr.name, cls.__dict__.get(attr.name, _MISSING)))
            setattr(cls, attr.name, attr)


def uninstall() -> None:
    """Back to one configuration: the base values, with the defaults filled in for the loggers
    the ranks created, and the ranks' own values dropped."""
    if not _saved:
        return
    objs: list[Any] = _loggers() + [logging.root.manager]
    state = _Ctx.state
    ctx, state.ctx = state.ctx, None
    try:
        values = [[(a.name, getattr(o, a.name)) for a in _attrs_of(o)] for o in objs]
    finally:
        state.ctx = ctx
    for cls, name, orig in reversed(_saved):
        if orig is _MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, orig)
    _saved.clear()
    for o, vals in zip(objs, values):
        o.__dict__.pop(_KEY, None)
        o.__dict__.update(vals)
    _Ctx.state, _Ctx.private = None, frozenset()


def _attrs_of(obj: Any) -> tuple[RankAttr, ...]:
    return _MANAGER_ATTRS if isinstance(obj, logging.Manager) else _LOGGER_ATTRS
