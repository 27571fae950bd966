"""The import system as each rank's own process would see it.

All ranks share one interpreter, so three pieces of Python's import machinery need help to
give every rank what a separate process would give it.

**Which modules are per rank** (each rank executes its own copy, swapped in and out of
``sys.modules`` by :class:`smpy.shim.isolation.RankContext`). A module is per rank when

1. it is loaded from a file outside the standard library, site-packages, directories holding
   installed distributions (``*.dist-info``) and smpy (the program's own modules), or is a
   submodule of a per-rank package, or
2. it belongs to a package listed in ``_PER_RANK_PACKAGES`` or in ``smpy/per-rank-modules``,
   or
3. (``smpy/mpi-modules-per-rank``, on by default) it imports ``mpi4py.MPI`` or another per-rank
   module while it is being imported: directly (``from mpi4py import MPI`` at module
   level) or through the modules it imports (``pkg/__init__.py`` importing ``pkg.comm``
   which imports ``mpi4py``), or by calling, at import, code that does. Every module whose
   import is in progress on the importing rank's stack becomes per rank at that moment
   (the rank that imported first keeps the copy it was executing, the others import their
   own), so that ``rank = MPI.COMM_WORLD.Get_rank()`` at import gives each rank its rank;
   the package's submodules imported so far follow it.

and it is not listed in ``smpy/shared-modules`` (which wins) nor a compiled extension (a
process loads an extension module once; one inside a per-rank package is shared and bound on
each rank's copy of the package). Rules 1 and 2 are decided when
the module object is created (``importlib._bootstrap.module_from_spec``, which every loader
goes through), not by a finder at a fixed place in ``sys.meta_path``: finders inserted
later in front of smpy's (pytest's assertion rewriter, typeguard, lazy importers) load
modules that are per rank all the same. Rule 3 watches ``builtins.__import__`` (the
``import`` statement, ``__import__``) and ``importlib._bootstrap._gcd_import`` (what
``importlib.import_module`` calls, also when bound before the run as
``from importlib import import_module``).

**Module locks per rank.** Python's per-module import locks (``_ModuleLock``) tell threads
apart by ``_thread.get_ident()``. Every rank runs in the same OS thread, so
``importlib._bootstrap`` is given a ``_thread`` whose ``get_ident`` names the running rank
(or simulated thread, :mod:`smpy.shim.green`) and whose locks wait in simulated time. A rank
that imports a shared module while another rank is in the middle of importing it (switched
out by a clock read, an output, a sleep) then waits until that import ends, as a thread of
a real process would, instead of receiving the half-initialised module. The wait costs the
waiting rank no computation; its clock moves to the simulated time at which the import
ends. The locks of per-rank modules are per rank (``_module_locks`` keys them by rank), so
a rank blocked in MPI at the import of its own copy holds no other rank back.

Memory: a module per rank costs its objects once per rank (``benchmarks/per_rank_modules.py``
measures it).
"""

from __future__ import annotations

import _thread
import builtins
import importlib._bootstrap as _bootstrap
import importlib.util
import os
import sys
import threading
from typing import Any

from smpy.shim import atimport, green, isolation

_TAINT = "mpi4py.MPI"


def _listed(name: str, prefixes: tuple[str, ...]) -> bool:
    """``name`` is one of ``prefixes`` or a submodule of one."""
    for p in prefixes:
        if name == p or name.startswith(p + "."):
            return True
    return False


def _nothing() -> None:
    pass


def _compiled(spec: Any) -> bool:
    """A compiled extension module: a process loads it once, so it is never per rank."""
    import importlib.machinery

    return spec is not None and isinstance(getattr(spec, "loader", None), importlib.machinery.ExtensionFileLoader)


def _install_dirs() -> tuple[str, ...]:
    """The directories of ``sys.path`` that hold installed distributions (a ``*.dist-info``
    entry: ``pip install --target``, a user base, an HPC module's tree on PYTHONPATH): their
    modules are installed packages, not the program's own."""
    out = []
    for entry in sys.path:
        try:
            d = os.path.realpath(entry or os.getcwd())
            if os.path.isdir(d) and any(n.endswith(".dist-info") for n in os.listdir(d)):
                out.append(d + os.sep)
        except OSError:
            continue
    return tuple(out)


class _ImportLock(green.GreenLock):
    """A lock of Python's import system (a module lock) that waits in simulated time."""

    __slots__ = ()
    WAITING_FOR = "the end of an import that another rank or thread is in the middle of (a module lock)"


class _ThreadForImports:
    """The ``_thread`` module as ``importlib._bootstrap`` sees it during a run: rank-aware
    identities, locks that wait in simulated time; everything else is the real module."""

    get_ident = staticmethod(green._get_ident)
    allocate_lock = staticmethod(_ImportLock)

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name == "RLock":  # Python >= 3.12 builds _ModuleLock.lock from it
            return threading._PyRLock  # type: ignore[attr-defined]
        return getattr(self._real, name)


class _RankModuleLocks(dict):
    """``importlib._bootstrap._module_locks`` during a run: the lock of a per-rank module is
    the running rank's own (key ``(rank, name)``), the lock of a shared module is shared."""

    @staticmethod
    def _key(name: Any) -> Any:
        ctx = isolation.state.ctx
        if ctx is not None and name in isolation._private_names:
            return (ctx.rank, name)
        return name

    def __getitem__(self, name: Any) -> Any:
        return dict.__getitem__(self, self._key(name))

    def __setitem__(self, name: Any, value: Any) -> None:
        dict.__setitem__(self, self._key(name), value)

    def __delitem__(self, name: Any) -> None:
        dict.__delitem__(self, self._key(name))

    def get(self, name: Any, default: Any = None) -> Any:
        return dict.get(self, self._key(name), default)


class ImportPatches:
    """Installs and removes the import patches of one run (see the module docstring)."""

    def __init__(self, per_rank: tuple[str, ...] = (), shared: tuple[str, ...] = (),
                 mpi_per_rank: bool = True) -> None:
        self.per_rank = tuple(isolation._PER_RANK_PACKAGES) + tuple(per_rank)
        self.shared = tuple(shared)
        self.mpi_per_rank = mpi_per_rank
        self.system_dirs = isolation._system_dirs() + _install_dirs()
        #: shared modules whose parent package is per rank: name -> (parent, attribute),
        #: bound on each rank's copy of the parent when the rank imports them
        self.shared_children: dict[str, tuple[str, str]] = {}
        self._saved: list[tuple[Any, str, Any]] = []
        self._finder: Any = None
        #: modules made per rank by rule 3, in order (for reports and tests)
        self.tainted: list[str] = []

    # -- classification ------------------------------------------------------------------
    def _per_rank_spec(self, spec: Any) -> bool:
        name = spec.name
        if name == "__main__" or _listed(name, self.shared) or _compiled(spec):
            return False
        if name in isolation._private_names or _listed(name, self.per_rank):
            return True
        if name.rpartition(".")[0] in isolation._private_names:
            return True  # a submodule of a per-rank package
        origin = spec.origin
        if not origin or origin in ("built-in", "frozen") or not getattr(spec, "has_location", False):
            return False
        return not os.path.realpath(origin).startswith(self.system_dirs)

    def _make_private(self, name: str) -> None:
        if name in isolation._private_names:
            return
        isolation._private_names.add(name)
        parent, _, attr = name.rpartition(".")
        if parent and parent not in isolation._private_names:
            isolation._rebind.append((name, parent, attr))

    def _taint_stack(self) -> None:
        """Rule 3: every shared module being imported on the running stack becomes per rank
        (outermost first, so that a package precedes its submodules)."""
        found: list[str] = []
        f = sys._getframe(2)
        modules = sys.modules
        while f is not None:
            if f.f_code.co_name == "<module>":
                g = f.f_globals
                n = g.get("__name__")
                if (isinstance(n, str) and n != "__main__" and n not in isolation._private_names
                        and not _listed(n, self.shared)):
                    m = modules.get(n)
                    spec = g.get("__spec__")
                    if (m is not None and getattr(m, "__dict__", None) is g and spec is not None
                            and getattr(spec, "_initializing", False)):
                        found.append(n)
            f = f.f_back
        for n in reversed(found):
            self._make_private(n)
            self.tainted.append(n)
            # the package's submodules loaded so far (by this rank, during this import)
            # follow it: ``import pkg.sub`` binds ``sub`` on the importing rank's package only
            prefix = n + "."
            for sub in [k for k in modules if k.startswith(prefix)]:
                if _listed(sub, self.shared) or _compiled(getattr(modules[sub], "__spec__", None)):
                    self._shared_child(sub)
                else:
                    self._make_private(sub)

    def _shared_child(self, name: str) -> None:
        parent, _, attr = name.rpartition(".")
        if parent:
            self.shared_children[name] = (parent, attr)

    def _bind_shared(self, name: str) -> None:
        """Bind the shared module ``name`` on the running rank's copy of its parent package
        (``import pkg.ext`` binds ``ext`` only on the package of the rank that loaded it)."""
        parent, attr = self.shared_children[name]
        modules = sys.modules
        p, m = modules.get(parent), modules.get(name)
        if p is not None and m is not None and p.__dict__.get(attr) is not m:
            setattr(p, attr, m)

    # -- install -------------------------------------------------------------------------
    def _patch(self, obj: Any, name: str, value: Any) -> None:
        self._saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def install(self) -> None:
        owner = self
        real_from_spec = _bootstrap.module_from_spec

        def module_from_spec(spec: Any) -> Any:
            if spec.name == "mpi4py.MPI" and owner._finder is not None:
                spec.loader = owner._finder.mpi  # whichever finder found it: never the real one
            if isolation.state.ctx is not None:
                if owner._per_rank_spec(spec):
                    owner._make_private(spec.name)
                elif spec.name.rpartition(".")[0] in isolation._private_names:
                    owner._shared_child(spec.name)
            return real_from_spec(spec)

        module_from_spec.__doc__ = real_from_spec.__doc__
        self._per_rank_mpi4py()
        self._patch(_bootstrap, "module_from_spec", module_from_spec)
        self._patch(importlib.util, "module_from_spec", module_from_spec)
        self._patch(_bootstrap, "_thread", _ThreadForImports(_thread))
        self._patch(_bootstrap, "_module_locks", _RankModuleLocks(_bootstrap._module_locks))
        self._patch(builtins, "__import__", self._make_import(builtins.__import__))
        self._patch(_bootstrap, "_gcd_import", self._make_gcd_import(_bootstrap._gcd_import))

    def _per_rank_mpi4py(self) -> None:
        """The ``mpi4py`` package, ``mpi4py.rc`` and the import of ``mpi4py.MPI`` per rank
        (smpy.shim.atimport), when smpy's module is installed as ``mpi4py.MPI``."""
        import smpy.mpi as fake

        pkg = sys.modules.get("mpi4py")
        if pkg is None or sys.modules.get("mpi4py.MPI") is not fake or _listed("mpi4py", self.shared):
            return
        self._finder = atimport.MPIFinder(pkg, fake)
        sys.meta_path.insert(0, self._finder)
        for name in ("mpi4py", "mpi4py.rc", "mpi4py.MPI"):
            self._make_private(name)

    def _make_import(self, real_import: Any) -> Any:
        import smpy.mpi as fake

        private = isolation._private_names
        state = isolation.state
        taint = self._taint_stack if self.mpi_per_rank else _nothing
        children = self.shared_children
        bind = self._bind_shared

        def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                       level: int = 0) -> Any:
            module = real_import(name, globals, locals, fromlist, level)
            if state.ctx is None:
                return module
            if fromlist:
                absolute = getattr(module, "__name__", name)
                if module is fake or absolute in private:
                    taint()
                elif absolute == "mpi4py" and "MPI" in fromlist:
                    taint()
                if private:
                    for x in fromlist:
                        if isinstance(x, str):
                            sub = f"{absolute}.{x}"
                            if sub in children:
                                bind(sub)
                            elif sub in private:
                                taint()
            else:
                if name == _TAINT or name in private:
                    taint()
                if name in children:
                    bind(name)
            return module

        __import__.__doc__ = real_import.__doc__
        return __import__

    def _make_gcd_import(self, real_gcd: Any) -> Any:
        """``importlib.import_module(name)`` (which does not go through ``__import__``) taints
        as ``import name`` does."""
        import smpy.mpi as fake

        private = isolation._private_names
        state = isolation.state
        taint = self._taint_stack if self.mpi_per_rank else _nothing
        children = self.shared_children
        bind = self._bind_shared

        def _gcd_import(name: str, package: Any = None, level: int = 0) -> Any:
            module = real_gcd(name, package, level)
            if state.ctx is None:
                return module
            absolute = getattr(module, "__name__", name)  # smpy's module is named smpy.mpi
            if module is fake or absolute in private:
                taint()
            if absolute in children:
                bind(absolute)
            return module

        _gcd_import.__doc__ = real_gcd.__doc__
        return _gcd_import

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        locks = _bootstrap._module_locks
        while self._saved:
            obj, name, value = self._saved.pop()
            setattr(obj, name, value)
        # locks of shared modules still alive go back to the real table
        for key, ref in dict.items(locks):
            if isinstance(key, str) and key not in _bootstrap._module_locks:
                _bootstrap._module_locks[key] = ref
