"""``multiprocessing``'s process exit, per rank.

At a process's exit, ``multiprocessing.util._exit_function`` (an ``atexit`` handler that
``multiprocessing.util`` registers when it is imported) runs the process's finalizers of
priority >= 0 (``Pool._terminate_pool``, a ``Queue``'s feeder join, ...), terminates its
daemonic children (a ``Pool``'s workers) and joins the others, then runs the remaining
finalizers. Its state is module-wide: the finalizer registry (``util._finalizer_registry``),
the children (``multiprocessing.process._children``, what ``active_children()`` lists) and
the exiting flag (``util.is_exiting()``). Under mpiexec each rank is a process of its own;
here every rank shares the one module, so the first rank to exit ended every rank's pools and
SIGTERMed every rank's pool workers, while the other ranks were still using them (a rank
blocked in ``Pool.map``, or its own ``Pool.terminate()`` waiting for a queue lock that a
worker killed mid-``recv`` held: ``tests/test_blocking.py``'s two-rank ``Pool`` program
stalled in 1 run of 5 whenever a timing change let one rank end first).

While a run is in progress this module makes that state per rank (a forked child and code
outside the ranks keep Python's behaviour):

* a ``util.Finalize`` created inside a rank (or a thread of it) belongs to that rank, and
  ``util._run_finalizers`` called inside a rank runs (and, without a minimum priority,
  forgets) that rank's finalizers only;
* a child process started inside a rank belongs to it: ``multiprocessing.active_children()``
  inside a rank lists that rank's children only;
* ``util.is_exiting()`` is true in a rank once that rank's exit has begun;
* the exit handler (the same steps on the rank's finalizers and children) is registered as
  an ``atexit`` handler of each rank when the rank creates its first finalizer or starts its
  first child (the registration ``multiprocessing.util`` made at import, in whichever rank
  imported it first, is withdrawn), so it runs at the end of every rank that used
  ``multiprocessing``, before the rank's threads are ended (smpy.shim.green).

Not covered: a finalizer that a garbage collection triggers (a ``Pool`` dropped without
``close``/``terminate``, its weak reference's callback) runs in whichever rank (or the
engine) happens to collect it, as it runs at an arbitrary point of a real process.
"""

from __future__ import annotations

import atexit
import itertools
import traceback
from typing import Any

from smpy.shim import isolation
from smpy.support.afterimport import Patches, when_imported

_OWNER = "_smpy_owner"
#: tokens of the ranks' multiprocessing state (never reused in a process: a finalizer left
#: from an earlier run never belongs to a rank of a later one)
_tokens = itertools.count(1)


class _RankState:
    """One rank's part of multiprocessing's process-wide state."""

    __slots__ = ("token", "exiting", "registered")

    def __init__(self) -> None:
        self.token = next(_tokens)
        self.exiting = False
        self.registered = False


class ProcessExit(Patches):
    """Installs and removes the patches (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        #: id(RankContext) -> the rank's state (contexts live as long as the run)
        self._ranks: dict[int, _RankState] = {}
        self._util: Any = None
        #: the functions replaced, called outside ranks
        self._real: dict[str, Any] = {}

    # -- state of the running rank ------------------------------------------------------------
    def _rank(self, register: bool = False) -> _RankState | None:
        """The running rank's state (None outside ranks and in forked children); with
        ``register``, its exit handler is registered first."""
        ctx = isolation.state.ctx
        if ctx is None:
            return None
        st = self._ranks.get(id(ctx))
        if st is None:
            st = self._ranks[id(ctx)] = _RankState()
        if register and not st.registered:
            st.registered = True
            atexit.register(self._exit_function)  # the rank's handler (smpy.shim.isolation)
        return st

    def _mine(self, obj: Any, st: _RankState) -> bool:
        return getattr(obj, _OWNER, 0) == st.token

    # -- the patched functions ---------------------------------------------------------------
    def _run_finalizers(self, minpriority: int | None = None) -> None:
        st = self._rank()
        if st is None:
            return self._real["run"](minpriority)
        reg = self._util._finalizer_registry
        if reg is None:
            return None
        # as Python's: list(reg) is atomic, a collection may drop entries meanwhile
        keys = [k for k in list(reg) if k[0] is not None and (minpriority is None or k[0] >= minpriority)]
        keys.sort(reverse=True)
        for key in keys:
            finalizer = reg.get(key)
            if finalizer is not None and self._mine(finalizer, st):
                try:
                    finalizer()
                except Exception:  # noqa: BLE001 - printed and the next one runs, as Python's
                    traceback.print_exc()
        if minpriority is None:
            for key in list(reg):
                finalizer = reg.get(key)
                if finalizer is not None and self._mine(finalizer, st):
                    reg.pop(key, None)
        return None

    def _active_children(self) -> list[Any]:
        children = self._real["active"]()
        st = self._rank()
        if st is None:
            return children
        return [p for p in children if self._mine(p, st)]

    def _is_exiting(self) -> bool:
        st = self._rank()
        return self._real["exiting"]() if st is None else st.exiting

    def _exit_function(self, *args: Any, **kwargs: Any) -> None:
        st = self._rank()
        if st is None:  # a forked child's exit (BaseProcess._bootstrap), or outside ranks
            return self._real["exit"](*args, **kwargs)
        if st.exiting:
            return None
        st.exiting = True
        self._run_finalizers(0)
        for p in self._active_children():
            if p.daemon:
                p._popen.terminate()
        for p in self._active_children():
            p.join()
        self._run_finalizers()
        return None

    # -- installation ------------------------------------------------------------------------
    def _patch_util(self, util: Any) -> None:
        self._util = util
        self._real.update(run=util._run_finalizers, exiting=util.is_exiting, exit=util._exit_function)
        real_init = util.Finalize.__init__
        owner = self

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            real_init(self, *args, **kwargs)
            st = owner._rank(register=True)
            if st is not None:
                setattr(self, _OWNER, st.token)

        __init__.__doc__ = real_init.__doc__
        self._patch(util.Finalize, "__init__", __init__)
        self._patch(util, "_run_finalizers", self._run_finalizers)
        self._patch(util, "is_exiting", self._is_exiting)
        self._patch(util, "_exit_function", self._exit_function)
        if isolation.state.ctx is not None:  # imported by a rank: its handler comes with its first use
            atexit.unregister(self._real["exit"])
        hook = when_imported("multiprocessing.queues", self._patch_queues)
        if hook is not None:
            self._hooks.append(hook)

    def _patch_package(self, mp: Any) -> None:
        process, context = mp.process, mp.context
        self._real["active"] = process.active_children
        real_start = process.BaseProcess.start
        owner = self

        def start(self: Any) -> None:
            st = owner._rank(register=True)
            if st is not None:
                setattr(self, _OWNER, st.token)
            return real_start(self)

        start.__doc__ = real_start.__doc__
        self._patch(process.BaseProcess, "start", start)
        # active_children is bound at import: in the module, the contexts and the package
        self._patch(process, "active_children", self._active_children)
        self._patch(context.BaseContext, "active_children", staticmethod(self._active_children))
        if mp.__dict__.get("active_children") is self._real["active"]:
            self._patch(mp, "active_children", self._active_children)

    def _patch_queues(self, queues: Any) -> None:
        if "is_exiting" in queues.__dict__:  # (bound by its ``from .util import``)
            self._patch(queues, "is_exiting", self._is_exiting)

    def install(self) -> None:
        # (the package imports its context and process modules; util comes later, with the
        # first pool, queue, lock or finalizer)
        self._hooks = [h for h in (when_imported("multiprocessing", self._patch_package),
                                   when_imported("multiprocessing.util", self._patch_util)) if h is not None]

    def uninstall(self) -> None:
        self._undo()
        self._ranks.clear()
