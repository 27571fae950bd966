"""Make ``mpi4py.MPI`` resolve to smpy's MPI module.

``from mpi4py import MPI``, ``import mpi4py.MPI`` and ``importlib.import_module("mpi4py.MPI")``
all consult ``sys.modules["mpi4py.MPI"]`` after importing the parent package, so the shim
imports the real, pure-Python ``mpi4py`` package (which does not load the MPI library at
import) and registers smpy's module under that name. The compiled extension of the real
mpi4py is never loaded. Its pure-Python parts (``mpi4py.util.pkl5``, ``mpi4py.util.dtlib``,
``mpi4py.futures`` ...) import ``MPI`` from the package and so get smpy's module.
Without a real mpi4py installed, a minimal stand-in package is created.
"""

from __future__ import annotations

import sys
import types

_saved: dict[str, object] = {}


def install() -> None:
    import smpy.mpi as fake

    if sys.modules.get("mpi4py.MPI") is fake:
        return
    _saved.clear()
    for name in ("mpi4py", "mpi4py.MPI"):
        if name in sys.modules:
            _saved[name] = sys.modules[name]
    real_mpi = sys.modules.get("mpi4py.MPI")
    if real_mpi is not None and real_mpi is not fake:
        raise RuntimeError("the real mpi4py.MPI is already loaded in this interpreter; "
                           "smpy must be installed before the program imports MPI")
    try:
        import mpi4py as pkg
    except ImportError:
        pkg = types.ModuleType("mpi4py")
        pkg.__path__ = []  # type: ignore[attr-defined]
        pkg.__version__ = "4.1.2"  # type: ignore[attr-defined]
        pkg.rc = types.SimpleNamespace(initialize=True, threads=True, thread_level="multiple",  # type: ignore[attr-defined]
                                       finalize=None, fast_reduce=True, recv_mprobe=True,
                                       irecv_bufsz=32768, errors="exception")
        sys.modules["mpi4py"] = pkg
    sys.modules["mpi4py.MPI"] = fake
    pkg.MPI = fake  # type: ignore[attr-defined]


def uninstall() -> None:
    import smpy.mpi as fake

    if sys.modules.get("mpi4py.MPI") is fake:
        del sys.modules["mpi4py.MPI"]
        pkg = sys.modules.get("mpi4py")
        if pkg is not None and getattr(pkg, "MPI", None) is fake:
            delattr(pkg, "MPI")
    for name, mod in _saved.items():
        sys.modules[name] = mod  # type: ignore[assignment]
    _saved.clear()
