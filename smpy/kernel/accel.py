"""The optional compiled accelerator of the per-message path (issue 24, item 1).

``_accel.c`` translates, line by line, the few Python functions every message goes
through: the engine's loop (:meth:`Engine.run`) and :meth:`Engine.schedule`,
:meth:`Activity._finish`, :meth:`Activity.add_callback`, :meth:`RateActivity._set_rate`, :meth:`Actor._resume`,
:func:`block_on`, and the fast path of the
MPI facade's call wrapper (:func:`smpy.mpi._call.mpicall`). The Python functions stay the
reference: a run gives the same bytes either way (``tests/kernel/test_accel.py``).

It is a CPython extension built on first use (:mod:`smpy.support.cext`), like
``smpy/shim/_rankheap.c``: with the system's C compiler and Python's headers, into
``~/.cache/smpy`` (keyed by the source's hash and the interpreter), loaded from there.
Without a compiler or headers, smpy runs the pure-Python path; nothing is compiled at
``pip install``. The facade's wrapper is in an extension of its own
(``smpy/mpi/_callaccel.c``), registered here by :mod:`smpy.mpi._call`.

Which path a run takes is chosen per run (``smpy/accel``: ``auto``, the default, uses the
compiled path when it can be built; ``on`` requires it; ``off`` never uses it; the
environment variable ``SMPY_ACCEL`` gives the mode when the setting is not given):
:func:`use` swaps the compiled objects in for the Python ones, in the kernel's classes and
in every ``smpy`` module and class that refers to them (``from ... import block_on``), and
back. Upper layers add their own pairs with :func:`register` (the facade does, for its
wrappers).
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from smpy.support import cext

_SRC = Path(__file__).with_name("_accel.c")
MODES = ("auto", "on", "off")
ENV = "SMPY_ACCEL"

_module: ModuleType | None = None
_tried = False
_why = ""
#: (python object, compiled object) pairs, once loaded
_pairs: list[tuple[Any, Any]] = []
#: other modules' providers of more pairs (called once, when the compiled path is first used):
#: the list lives in smpy.support.cext, so that a package of the kernel's layer (smpy.lmm) can
#: register without importing the kernel
_providers = cext.providers
_active = False


def load() -> ModuleType | None:
    """The compiled module, built and imported once; None when it cannot be."""
    global _module, _tried, _why
    if _tried:
        return _module
    _tried = True
    mod, _why = cext.load(_SRC, "smpy.kernel._accel")
    if mod is not None:
        try:
            _pairs[:] = _kernel_pairs(mod)
        except (TypeError, AttributeError) as exc:
            _why = f"the compiled module does not fit: {exc}"
            mod = None
    _module = mod
    return _module


def why() -> str:
    """Why the compiled path is not available (empty when it is, or was not tried)."""
    return _why


def _kernel_pairs(mod: ModuleType) -> list[tuple[Any, Any]]:
    from smpy.kernel import actors, engine
    from smpy.kernel.activity import Activity, ActivityFailed, RateActivity
    from smpy.support.internal import SmpyInternalError

    methods = mod.setup(engine.Event, Activity, actors.Actor, vars(actors), actors.ActorKilled,
                        SmpyInternalError, ActivityFailed, heapq.heappush, heapq.heappop)
    py_rate = RateActivity.__dict__["_set_rate"]
    rate = mod.setup_rate(RateActivity, py_rate)
    mod.fast_dealloc(engine.Event)
    return [(py_rate, rate), (engine.Engine.__dict__["run"], methods["run"]),
            (engine.Engine.__dict__["schedule"], methods["schedule"]),
            (Activity.__dict__["_finish"], methods["_finish"]),
            (Activity.__dict__["add_callback"], methods["add_callback"]),
            (actors.Actor.__dict__["_resume"], methods["_resume"]),
            (actors.__dict__["block_on"], mod.block_on)]


def fast_dealloc(*classes: type) -> None:
    """Release the instances of ``classes`` (per-message objects: classes with ``__slots__``
    only, no finalizer) by the compiled deallocation of ``_accel.c`` (the same steps as
    CPython's, from a table of their slots); a class that does not fit, or no compiled module,
    keeps CPython's. Once set, for the life of the process: the steps and their order are
    CPython's, so nothing a program can see depends on it."""
    mod = load()
    if mod is not None:
        for cls in classes:
            mod.fast_dealloc(cls)


def parts() -> dict[str, str]:
    """The compiled extensions asked for so far (kernel, facade, p2p, switches): name ->
    ``"on"``, or why it is not in use (a build that failed leaves the rest in place)."""
    return {name.rsplit(".", 1)[-1].lstrip("_"): (why or "on") for name, why in cext.status().items()}


def register(provider: Callable[[], list[tuple[Any, Any]]]) -> None:
    """Add pairs (Python object, compiled object) from an upper layer: ``provider`` (which
    builds its own extension, and gives no pairs when it cannot) is called the next time the
    compiled path is put in place (:func:`smpy.support.cext.register`)."""
    cext.register(provider)


def active() -> bool:
    """Whether the compiled objects are in place now."""
    return _active


def use(on: bool) -> bool:
    """Put the compiled objects in place (``on``) or the Python ones; returns whether the
    compiled path is now in use (False when asked for but not available)."""
    global _active
    fresh: list[tuple[Any, Any]] = []
    if on:
        mod = load()
        if mod is None:
            on = False
        else:
            while _providers:
                fresh += _providers.pop(0)()
            _pairs.extend(fresh)
    if on and _active and fresh:  # registered while in place (a module imported late)
        _rebind({id(a): b for a, b in fresh})
    if on == _active:
        return _active
    swap = {id(a): b for a, b in _pairs} if on else {id(b): a for a, b in _pairs}
    _rebind(swap)
    _active = on
    return on


def _rebind(swap: dict[int, Any]) -> None:
    """Replace every reference to a key of ``swap`` found in the globals of smpy's modules
    and in the dicts of the classes they define."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "smpy" or name.startswith("smpy.")):
            continue
        ns = getattr(mod, "__dict__", None)
        if not isinstance(ns, dict):
            continue
        for key, value in list(ns.items()):
            new = swap.get(id(value))
            if new is not None:
                ns[key] = new
            elif isinstance(value, type) and value.__module__ == name:
                for attr, member in list(value.__dict__.items()):
                    new = swap.get(id(member))
                    if new is not None:
                        setattr(value, attr, new)


def resolve(mode: str | None) -> str:
    """The mode of a run: ``mode`` when given, else ``$SMPY_ACCEL``, else ``auto``."""
    if mode is None:
        mode = os.environ.get(ENV, "").strip().lower() or "auto"
        if mode not in MODES:
            raise ValueError(f"{ENV}={os.environ.get(ENV)!r}: expected one of {', '.join(MODES)}")
    return mode
