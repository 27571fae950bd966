"""Per-rank interpreter state: each rank behaves as its own Python process.

Isolated per rank (swapped in and out by :class:`RankContext` on every switch, or
dispatched through the current context):

* ``__main__``: each rank executes the script in its own module object, so globals,
  classes and functions defined by the script are per rank, and pickles referring to
  ``__main__`` resolve in the receiving rank;
* ``sys.argv`` (a copy per rank);
* per-rank modules — the program's own modules (loaded from files outside the standard
  library and site-packages), ``mpi4py.futures``, and modules that import ``mpi4py.MPI``
  (which modules: :mod:`smpy.shim.imports`): each rank imports its own copy;
* the global generators of ``random`` and ``numpy.random`` (legacy functions), seeded per
  rank from ``smpy/seed`` so that runs are reproducible;
* ``sys.stdout``/``sys.stderr``: writes go to the real streams in simulated-time order
  (the rank's pending computation is simulated before its text is written) and can be
  captured with the rank number; a rank that rebinds ``sys.stdout``/``sys.stderr`` (to a
  ``StringIO``, to ``sys.__stderr__``, ...) does so for itself only, and ``sys.__stdout__``/
  ``sys.__stderr__`` are these rank streams during the run;
* the ``warnings`` filters (``warnings.filters``, what ``simplefilter``/``catch_warnings``
  change), ``showwarning`` and ``defaultaction``: a rank's ``catch_warnings()`` does not leak
  into another rank. When the filters swapped in differ from those in force, the warnings
  registries are invalidated (``warnings._filters_mutated``), as an "ignore" or "once" seen by
  one rank must not silence the warning for a rank with other filters;
* ``logging``'s configuration (levels, handlers, filters, ``basicConfig``, ``disable``):
  :mod:`smpy.shim.logs`, installed with these patches;
* ``atexit.register`` inside a rank registers a handler of that rank, run when its program
  ends (before the rank's MPI is finalized, as mpi4py's own atexit finalization comes last);
* ``time.sleep`` is a simulated sleep; ``time.time``, ``perf_counter``, ``monotonic`` (and
  ``_ns`` variants) return simulated time inside a rank.

Not isolated (shared by all ranks, documented in README): the standard library's and
installed packages' module state (of the modules that do not import MPI) (e.g. ``os.environ``, caches of third-party libraries),
the working directory, open files, ``numpy.random.default_rng()`` without a seed (draws
from OS entropy, as in real runs), threads started by the program.
"""

from __future__ import annotations

import atexit
import io
import operator
import os
import random
import sys
import sysconfig
import threading
import time
import types
import warnings
from pathlib import Path
from typing import Any, TextIO

from smpy.kernel import accel as _accel
from smpy.shim import aio, logs
from smpy.support import cext
from smpy.support.afterimport import AfterImport, when_imported


class _State(threading.local):
    """The running rank's context (None in the maestro). Thread-local: only the thread that
    runs the simulation has one; threads the program starts (a ``ThreadPoolExecutor``'s
    workers, ...) see None and get the real clocks, ``sleep`` and streams."""

    ctx: RankContext | None = None


state = _State()


def _forget_rank() -> None:
    """A process forked by a rank is a plain process: real clocks, sleep and streams."""
    state.ctx = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_rank)
#: smpy.shim.rankheap.Switcher of the run (per-rank numpy heaps), None when off
rank_heaps: Any = None
#: names of the per-rank modules (smpy.shim.imports decides which)
_private_names: set[str] = set()
#: (name, parent, attribute) of the per-rank modules whose parent package is shared (e.g.
#: ``mpi4py.util.pkl5``): ``from mpi4py.util import pkl5`` reads the parent's attribute, so
#: it is rebound to the running rank's copy (or removed if the rank has none) on each switch
_rebind: list[tuple[str, str, str]] = []
#: the run's ``[stdout, stderr]`` rank streams (empty outside a run)
_streams: list[Any] = []
#: installed packages whose module state is per process in real runs and must be per rank:
#: mpi4py.futures keeps its executor machinery in module globals (SharedPool, _tls, ...)
#: and mpi4py.util.pkl5 caches MPI datatypes in module globals, which one rank's Free would
#: turn into DATATYPE_NULL for the others; mpipool configures ``MPI.pickle`` (dill) when it
#: is imported, which must happen in every rank, as every real process imports it;
#: deap.creator is the registry of the classes a DEAP program creates (``creator.create``,
#: run by every process, the workers of mpi4py.futures included): shared, each rank's call
#: replaced the others' classes and warned that the class "has already been created"
_PER_RANK_PACKAGES = ("mpi4py.futures", "mpi4py.util.pkl5", "mpipool", "deap.creator")


def _system_dirs() -> tuple[str, ...]:
    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(os.path.realpath(p))
    import site
    for p in site.getsitepackages() + [site.getusersitepackages()]:
        paths.add(os.path.realpath(p))
    smpy_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    paths.add(smpy_dir)
    return tuple(sorted(paths))


def _filters_mutated() -> None:
    """Invalidate the warnings registries (the filters in force changed)."""
    fn = getattr(warnings, "_filters_mutated", None)
    if fn is not None:
        fn()
        return
    lock = getattr(warnings, "_lock", None)  # Python >= 3.14
    fn = getattr(warnings, "_filters_mutated_lock_held", None)
    if fn is not None and lock is not None:
        with lock:
            fn()


def _bind(parent: types.ModuleType | None, attr: str, module: types.ModuleType | None) -> None:
    """Make ``parent.attr`` the given submodule (or unset it when ``module`` is None)."""
    if parent is None:
        return
    d = parent.__dict__
    if module is None:
        if isinstance(d.get(attr), types.ModuleType):
            del d[attr]
    else:
        d[attr] = module


class RankContext:
    """Interpreter state of one rank (see module docstring)."""

    __slots__ = ("rank", "seed_rank", "main", "argv", "modules", "seed", "_rng", "_np_rng", "proc", "mid_line",
                 "exit_funcs", "warn_filters", "warn_show", "warn_impl", "warn_default",
                 "stdout", "stderr", "aio", "heap_cell", "heap_owner", "missing", "names_seen",
                 "mine_seen")

    def __init__(self, rank: int, main: types.ModuleType, argv: list[str], seed: int, proc: Any,
                 seed_rank: int | None = None) -> None:
        self.rank = rank
        #: the rank the random generators are seeded with (a batch job's rank in its own
        #: COMM_WORLD, so that the job draws the same numbers alone and in a workload)
        self.seed_rank = rank if seed_rank is None else seed_rank
        self.main = main
        self.argv = argv
        self.modules: dict[str, types.ModuleType] = {}
        self.seed = seed
        # generators are created on first use (seeded from (seed, rank) only, so lazily
        # creating them changes no draw): an idle rank does not pay ~6 KiB for them
        self._rng: random.Random | None = None
        self._np_rng: Any = None
        self.proc = proc
        #: the rank's last write did not end a line: do not interleave another rank's text
        self.mid_line = False
        #: ``atexit.register``-ed while the rank ran: (func, args, kwargs), run at its exit
        self.exit_funcs: list[tuple[Any, tuple, dict]] = []
        #: the rank's ``warnings`` state: a copy of the filters in force when it was created
        self.warn_filters: list[Any] = list(warnings.filters)
        self.warn_show: Any = warnings.showwarning
        self.warn_impl: Any = warnings._showwarnmsg_impl  # type: ignore[attr-defined]
        self.warn_default: str = warnings.defaultaction
        #: the rank's ``sys.stdout``/``sys.stderr`` when it rebound them (None: the run's
        #: rank streams)
        self.stdout: Any = None
        self.stderr: Any = None
        #: asyncio's running loop and policy of the rank (smpy.shim.aio)
        self.aio = aio.AioState()
        #: the per-rank heaps' owner cell (ctypes int) once the rank's handler is installed,
        #: and the value that makes the rank the owner (smpy.shim.rankheap)
        self.heap_cell: Any = None
        self.heap_owner = rank + 1
        #: per-rank module names the rank has no copy of, and the sizes they were computed at
        self.missing: tuple[str, ...] = ()
        self.names_seen = -1
        self.mine_seen = -1

    def run_exit_funcs(self) -> None:
        """Run the rank's atexit handlers, last registered first, as Python does at exit:
        an exception is reported on the rank's stderr and the next handler runs."""
        import traceback
        while self.exit_funcs:
            func, args, kwargs = self.exit_funcs.pop()
            try:
                func(*args, **kwargs)
            except SystemExit:
                pass
            except Exception:  # noqa: BLE001 - reported like Python's atexit
                sys.stderr.write(f"Exception ignored in atexit callback: {func!r}\n")
                sys.stderr.write(traceback.format_exc())

    @property
    def rng(self) -> random.Random:
        r = self._rng
        if r is None:
            r = self._rng = random.Random(f"smpy:{self.seed}:{self.seed_rank}")
        return r

    @property
    def np_rng(self) -> Any:
        r = self._np_rng
        if r is None:
            np = sys.modules.get("numpy")
            if np is not None:
                r = self._np_rng = np.random.RandomState([self.seed & 0xFFFFFFFF, self.seed_rank])
        return r

    def switch_in(self) -> None:
        # every step below is cheap when the run does not use what it restores: this runs
        # twice per message (issue 24)
        cell = self.heap_cell
        if cell is not None:
            cell.value = self.heap_owner
        elif rank_heaps is not None:
            self._heaps_in()
        sys.argv = self.argv
        modules = sys.modules
        modules["__main__"] = self.main
        if _private_names:
            mine = self.modules
            if self.names_seen != len(_private_names) or self.mine_seen != len(mine):
                self._refresh_missing()
            modules.update(mine)
            for name in self.missing:
                modules.pop(name, None)
            for name, parent, attr in _rebind:
                _bind(modules.get(parent), attr, mine.get(name))
        w = warnings
        mine = self.warn_filters
        current = w.filters
        if current is not mine:
            w.filters = mine  # type: ignore[misc]
            if current != mine:
                _filters_mutated()
        # a module attribute is read several times faster than it is set: set what differs
        # (the ranks nearly always share these objects)
        if w.showwarning is not self.warn_show:
            w.showwarning = self.warn_show
        if w._showwarnmsg_impl is not self.warn_impl:  # type: ignore[attr-defined]
            w._showwarnmsg_impl = self.warn_impl  # type: ignore[attr-defined]
        if w.defaultaction is not self.warn_default:
            w.defaultaction = self.warn_default
        streams = _streams
        if streams:
            out = self.stdout or streams[0]
            if sys.stdout is not out:
                sys.stdout = out
            err = self.stderr or streams[1]
            if sys.stderr is not err:
                sys.stderr = err
        ev = modules.get("asyncio.events")
        if ev is not None:
            self.aio.switch_in(ev)
        state.ctx = self

    def _heaps_in(self) -> None:
        """First switches of the rank under per-rank heaps: load them and install the
        handler in the rank's greenlet; then keep the owner cell for the fast path."""
        heaps = rank_heaps
        actor = self.proc.actor if self.proc is not None else None
        heaps.switch_in(self.rank, actor.glet if actor is not None else None)
        if heaps.heaps is not None and self.rank in heaps.installed:
            self.heap_cell = heaps.heaps.owner_cell
            self.heap_owner = self.rank + 1

    def _refresh_missing(self) -> None:
        """The per-rank modules the rank has no copy of (removed from ``sys.modules`` while it
        runs), recomputed when a module became per rank or the rank got a new copy."""
        mine = self.modules
        self.missing = tuple(sorted(n for n in _private_names if n not in mine))
        self.names_seen = len(_private_names)
        self.mine_seen = len(mine)

    def switch_out(self) -> None:
        state.ctx = None
        modules = sys.modules
        ev = modules.get("asyncio.events")
        if ev is not None:
            self.aio.switch_out(ev)
        cell = self.heap_cell
        if cell is not None:
            cell.value = 0
        elif rank_heaps is not None:
            rank_heaps.switch_out()
        w = warnings
        self.warn_filters = w.filters
        self.warn_show = w.showwarning
        self.warn_impl = w._showwarnmsg_impl  # type: ignore[attr-defined]
        self.warn_default = w.defaultaction
        streams = _streams
        if streams:
            out, err = sys.stdout, sys.stderr
            if out is streams[0]:
                self.stdout = None
            else:
                self.stdout = out
                sys.stdout = streams[0]
            if err is streams[1]:
                self.stderr = None
            else:
                self.stderr = err
                sys.stderr = streams[1]
        # the rank may have replaced __main__ (runpy.run_module/run_path, as ``-m`` and
        # ``python -m mpi4py`` do): keep its own until it switches back in
        self.main = modules.get("__main__", self.main)  # type: ignore[assignment]
        if _private_names:
            cached = _getter_cache
            if cached[0] == len(_private_names) and len(cached[1]) > 1:
                try:  # _save_private's common case, inline
                    self.modules.update(zip(cached[1], cached[2](modules)))
                    return
                except KeyError:
                    pass
            _save_private(modules, self.modules)


#: [number of per-rank names, their sorted tuple, itemgetter of them]
_getter_cache: list[Any] = [0, (), None]


def _save_private(modules: dict[str, Any], mine: dict[str, Any]) -> None:
    """Keep the running rank's per-rank modules (it may have imported or replaced some):
    one itemgetter call reads them all (KeyError when one is missing), cached until a module
    becomes per rank."""
    cached = _getter_cache
    if cached[0] != len(_private_names):
        names = tuple(sorted(_private_names))
        cached[:] = [len(names), names, operator.itemgetter(*names)]
    names = cached[1]
    try:
        found = cached[2](modules)
    except KeyError:  # the rank has no copy of some of them: one by one
        for name in names:
            m = modules.get(name)
            if m is not None:
                mine[name] = m
        return
    if len(names) == 1:
        mine[names[0]] = found
    else:
        mine.update(zip(names, found))


# -- random ----------------------------------------------------------------------------
_RANDOM_NAMES = [n for n in dir(random) if not n.startswith("_")
                 and getattr(getattr(random, n), "__self__", None) is random._inst]  # type: ignore[attr-defined]


def _current_rng() -> random.Random:
    ctx = state.ctx
    return ctx.rng if ctx is not None else random._inst  # type: ignore[attr-defined]


def _make_random_dispatch(name: str):
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        return getattr(_current_rng(), name)(*args, **kwargs)
    dispatch.__name__ = name
    dispatch.__qualname__ = name
    dispatch.__doc__ = getattr(random.Random, name).__doc__
    return dispatch


def _np_names(npr: Any) -> list[str]:
    """The legacy functions of ``numpy.random`` (the module ``npr``) that draw from its global
    generator."""
    legacy = npr.mtrand._rand
    names = []
    for n in dir(npr):
        if n.startswith("_"):
            continue
        obj = getattr(npr, n)
        if getattr(obj, "__self__", None) is legacy or n in ("seed", "get_state", "set_state"):
            if hasattr(legacy, n):
                names.append(n)
    return names


def _make_np_dispatch(npr: Any, name: str):
    legacy = npr.mtrand._rand

    def dispatch(*args: Any, **kwargs: Any) -> Any:
        ctx = state.ctx
        target = ctx.np_rng if ctx is not None and ctx.np_rng is not None else legacy
        return getattr(target, name)(*args, **kwargs)
    dispatch.__name__ = name
    dispatch.__doc__ = getattr(legacy, name).__doc__
    return dispatch


# -- output ----------------------------------------------------------------------------
class RankStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` replacement: simulated-time ordered, capturable."""

    def __init__(self, real: TextIO, name: str, session: Any) -> None:
        self.real = real
        self.stream_name = name
        self.session = session

    def write(self, text: str) -> int:
        ctx = state.ctx
        if ctx is not None and text:
            if not ctx.mid_line:
                self.session.before_output(ctx)
            ctx.mid_line = not text.endswith("\n")
        if self.session.echo:
            self.real.write(text)
        cap = self.session.captured
        if cap is not None:
            cap.append((ctx.rank if ctx is not None else -1, self.stream_name, text))
        return len(text)

    def flush(self) -> None:
        self.real.flush()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.real, "encoding", "utf-8")

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.real.fileno()


class RankExit(BaseException):
    """A rank called ``os._exit(status)``: its process ends at once, and with it the job (mpiexec
    reports the bad termination and kills the others). Raised instead of leaving the emulator,
    so that the summary, the trace and the JSON of the run are still written."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Patches:
    """Install/uninstall the process-wide patches of one run (idempotent pair)."""

    def __init__(self, session: Any, defer_numpy_random: bool = False) -> None:
        """``defer_numpy_random``: patch ``numpy.random`` when it is first imported rather than
        import it now (a rank that imports it then pays for the import in its computation,
        which is only left out when computation is not simulated)."""
        self.session = session
        self.defer_numpy_random = defer_numpy_random
        self._saved: list[tuple[Any, str, Any]] = []
        self._np_hook: AfterImport | None = None

    def _patch_np_random(self, npr: Any) -> None:
        for n in _np_names(npr):
            self._patch(npr, n, _make_np_dispatch(npr, n))

    def _patch(self, obj: Any, name: str, value: Any) -> None:
        self._saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def install(self) -> None:
        session = self.session
        for n in _RANDOM_NAMES:
            self._patch(random, n, _make_random_dispatch(n))
        np = sys.modules.get("numpy")
        if "numpy.random" in sys.modules or (np is not None and not self.defer_numpy_random):
            self._patch_np_random(np.random)  # type: ignore[union-attr]  # imports it if need be
        elif np is not None:  # when (if) a rank imports it (2.5 MB and 15 ms of start-up)
            self._np_hook = when_imported("numpy.random", self._patch_np_random)
        orig = {n: getattr(time, n) for n in ("sleep", "time", "perf_counter", "monotonic",
                                              "time_ns", "perf_counter_ns", "monotonic_ns")}
        epoch = orig["time"]()

        def sleep(seconds: float) -> None:
            ctx = state.ctx
            if ctx is None:
                return orig["sleep"](seconds)
            session.sleep(ctx, seconds)

        def make_clock(name: str, offset: float, ns: bool):
            def clock() -> Any:
                ctx = state.ctx
                if ctx is None:
                    return orig[name]()
                t = session.clock(ctx) + offset
                return int(t * 1e9) if ns else t
            clock.__name__ = clock.__qualname__ = name
            clock.__module__ = "time"
            return clock

        sleep.__module__, sleep.__qualname__ = "time", "sleep"  # pickles by name, as time.sleep
        self._patch(time, "sleep", sleep)
        self._patch(time, "time", make_clock("time", epoch, False))
        self._patch(time, "time_ns", make_clock("time_ns", epoch, True))
        for n in ("perf_counter", "monotonic"):
            self._patch(time, n, make_clock(n, 0.0, False))
            self._patch(time, n + "_ns", make_clock(n + "_ns", 0.0, True))
        real_register, real_unregister = atexit.register, atexit.unregister

        def register(func: Any, *args: Any, **kwargs: Any) -> Any:
            ctx = state.ctx
            if ctx is None:
                return real_register(func, *args, **kwargs)
            ctx.exit_funcs.append((func, args, kwargs))  # the rank's exit, not the interpreter's
            return func

        def unregister(func: Any) -> None:
            ctx = state.ctx
            if ctx is None:
                return real_unregister(func)
            ctx.exit_funcs[:] = [e for e in ctx.exit_funcs if e[0] != func]
            return None

        real_exit, pid = os._exit, os.getpid()

        def _exit(status: int) -> None:
            if state.ctx is None or os.getpid() != pid:  # not a rank, or a child it forked
                real_exit(status)
            raise RankExit(int(status))

        _exit.__module__, _exit.__qualname__ = "os", "_exit"
        self._patch(os, "_exit", _exit)
        self._patch(atexit, "register", register)
        self._patch(atexit, "unregister", unregister)
        out = RankStream(sys.stdout, "stdout", session)
        err = RankStream(sys.stderr, "stderr", session)
        self._patch(sys, "stdout", out)
        self._patch(sys, "stderr", err)
        self._patch(sys, "__stdout__", out)
        self._patch(sys, "__stderr__", err)
        _streams[:] = [out, err]
        for n in ("filters", "showwarning", "_showwarnmsg_impl", "defaultaction"):
            self._saved.append((warnings, n, getattr(warnings, n)))
        self._saved.append((sys, "argv", list(sys.argv)))
        self._saved.append((sys, "path", list(sys.path)))
        aio.install()
        logs.install(state, _private_names)

    def uninstall(self) -> None:
        logs.uninstall()
        aio.uninstall()
        if self._np_hook is not None:
            self._np_hook.remove()
            self._np_hook = None
        for obj, name, value in reversed(self._saved):
            setattr(obj, name, value)
        _filters_mutated()
        self._saved.clear()
        _streams.clear()
        for _name, parent, attr in _rebind:
            _bind(sys.modules.get(parent), attr, None)
        _rebind.clear()
        for name in list(_private_names):
            sys.modules.pop(name, None)
        _private_names.clear()
        _getter_cache[:] = [0, (), None]
        state.ctx = None


# -- the compiled switch hooks (smpy.kernel.accel) ------------------------------------------
def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) pairs of :meth:`RankContext.switch_in` and
    :meth:`RankContext.switch_out` from ``_switchaccel.c`` (none when it cannot be built)."""
    mod, _why = cext.load(Path(__file__).with_name("_switchaccel.c"), "smpy.shim._switchaccel")
    if mod is None:
        return []
    sw_in, sw_out = mod.setup(globals(), RankContext, sys, warnings)
    return [(RankContext.__dict__["switch_in"], sw_in), (RankContext.__dict__["switch_out"], sw_out)]


_accel.register(_compiled)
