"""What importing ``mpi4py.MPI`` does in a rank, as mpi4py 4.1.2 does it in a process.

Each rank has its own ``mpi4py`` package and ``mpi4py.rc`` (per-rank modules, see
:mod:`smpy.shim.imports`; :class:`PackageLoader` copies the package loaded before the run),
and its own first import of ``mpi4py.MPI`` — in any form:
``from mpi4py import MPI``, ``import mpi4py.MPI``, ``importlib.import_module`` — goes through
:class:`MPIFinder`, whose loader hands out smpy's module and then applies the options as
mpi4py's ``bootstrap()``/``initialize()`` do:

* each option is read from ``MPI4PY_RC_<NAME>`` when set (an unsigned integer for an integer
  option, a boolean spelled ``true/yes/on/y/1`` or ``false/no/off/n/0``, else the lower-cased
  text; the value is stored back into ``mpi4py.rc``), else from ``mpi4py.rc``;
* a value mpi4py does not accept gives its warning, ``RuntimeWarning: mpi4py.rc.NAME:
  unexpected value VALUE``, and the option keeps its default;
* ``initialize`` false: MPI is not initialised (``MPI.Is_initialized()`` is false until
  ``MPI.Init()``/``Init_thread()``); else MPI_Init_thread(``thread_level``) (``threads``
  false: MPI_Init, ``THREAD_SINGLE``);
* ``errors``: the handler mpi4py installs on ``COMM_SELF``, ``COMM_WORLD`` and every object
  it creates (:func:`smpy.mpi.errhandler.set_rc_errors`);
* ``MPI4PY_PICKLE_PROTOCOL`` / ``MPI4PY_PICKLE_THRESHOLD``: the rank's ``MPI.pickle``.

``finalize``, ``fast_reduce``, ``recv_mprobe`` and ``irecv_bufsz`` are validated (and their
environment variables read) but change nothing in smpy.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import warnings
from typing import Any

_NAMES = ("initialize", "threads", "thread_level", "finalize", "fast_reduce", "recv_mprobe",
          "irecv_bufsz", "errors")
_DEFAULTS: dict[str, Any] = {"initialize": True, "threads": True, "thread_level": "multiple", "finalize": None,
                             "fast_reduce": True, "recv_mprobe": True, "irecv_bufsz": 32768,
                             "errors": "exception"}
_TRUE = ("true", "yes", "on", "y", "1")
_FALSE = ("false", "no", "off", "n", "0")
_LEVELS = ("single", "funneled", "serialized", "multiple")


def _env_value(text: str, default: Any) -> Any:
    stripped = text.strip(" \t")
    if stripped.isdigit() and text.lstrip(" \t").isdigit() and type(default) is int:
        return int(stripped)
    low = text.lower()
    if low in _TRUE or low in _FALSE:
        return low in _TRUE
    return low


def _get(rc: Any, name: str) -> Any:
    default = _DEFAULTS[name]
    env = os.environ.get(f"MPI4PY_RC_{name.upper()}")
    if env is None:
        return getattr(rc, name, default)
    value = _env_value(env, default)
    try:
        setattr(rc, name, value)
    except Exception:  # noqa: BLE001 - as mpi4py: a read-only rc keeps its value
        pass
    return value


def _warn(name: str, value: Any) -> None:
    warnings.warn(f"mpi4py.rc.{name}: unexpected value {value!r}", RuntimeWarning, stacklevel=4)


def _flag(name: str, value: Any, default: bool) -> bool:
    if value in (True, "yes"):
        return True
    if value in (False, "no"):
        return False
    _warn(name, value)
    return default


def options(rc: Any) -> dict[str, Any]:
    """mpi4py's ``getOptions``: the options in force, with its warnings."""
    v = {n: _get(rc, n) for n in _NAMES}
    out: dict[str, Any] = {
        "initialize": _flag("initialize", v["initialize"], True),
        "threads": _flag("threads", v["threads"], True),
    }
    if v["thread_level"] in _LEVELS:
        out["thread_level"] = v["thread_level"]
    else:
        _warn("thread_level", v["thread_level"])
        out["thread_level"] = "multiple"
    out["finalize"] = out["initialize"] if v["finalize"] is None else _flag("finalize", v["finalize"], True)
    for n in ("fast_reduce", "recv_mprobe"):
        out[n] = _flag(n, v[n], True)
    bufsz = v["irecv_bufsz"]
    if not (type(bufsz) is int and bufsz >= 0):
        _warn("irecv_bufsz", bufsz)
    if v["errors"] in ("default", "exception", "abort", "fatal"):
        out["errors"] = v["errors"]
    else:
        _warn("errors", v["errors"])
        out["errors"] = "exception"
    return out


def at_import(fake: Any) -> None:
    """Apply the running rank's ``mpi4py.rc`` (see the module docstring)."""
    from smpy.mpi import errhandler
    from smpy.runtime.constants import THREAD_SINGLE
    from smpy.runtime.world import NotInSimulation, current

    try:
        proc = current()
    except NotInSimulation:
        return
    pkg = sys.modules.get("mpi4py")
    rc = getattr(pkg, "rc", None) if pkg is not None else None
    opts = options(rc)
    if not opts["initialize"]:
        proc.initialized = False
    elif proc.initialized and not proc.finalized:
        level = opts["thread_level"] if opts["threads"] else "single"
        proc.thread_level = THREAD_SINGLE + _LEVELS.index(level)
    errhandler.set_rc_errors(opts["errors"])
    for var, attr in (("MPI4PY_PICKLE_PROTOCOL", "PROTOCOL"), ("MPI4PY_PICKLE_THRESHOLD", "THRESHOLD")):
        text = os.environ.get(var)
        if text is not None and text.strip().lstrip("-").isdigit():
            setattr(fake.pickle, attr, int(text))


class MPILoader:
    """Hands out smpy's module for ``mpi4py.MPI`` and applies the rank's options."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self._spec = fake.__spec__

    def create_module(self, spec: Any) -> Any:
        return self.fake

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self._spec  # the import system set it to ours: smpy.mpi keeps its own
        at_import(module)


class PackageLoader:
    """A rank's own ``mpi4py`` package: a copy of the one loaded before the run (its
    functions and submodule attributes) with a fresh ``mpi4py.rc``, the state a process
    starts with. Copying costs a dictionary copy, not the package's execution."""

    def __init__(self, pkg: Any) -> None:
        self.pkg = pkg

    def create_module(self, spec: Any) -> Any:
        import types

        mod = types.ModuleType(self.pkg.__name__)
        mod.__dict__.update(self.pkg.__dict__)
        rc_type = type(getattr(self.pkg, "rc", None))
        if rc_type.__module__ == "mpi4py":  # the real package's Rc: a fresh one
            mod.rc = rc_type()  # type: ignore[attr-defined]
        elif hasattr(self.pkg, "rc"):  # smpy's stand-in: a SimpleNamespace of the defaults
            mod.rc = type(self.pkg.rc)(**vars(self.pkg.rc))  # type: ignore[attr-defined]
        mod.__dict__.pop("MPI", None)  # bound again when the rank imports it
        return mod

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self.pkg.__spec__
        if hasattr(module, "rc"):
            sys.modules["mpi4py.rc"] = module.rc


class MPIFinder:
    """A meta-path finder for ``mpi4py`` and ``mpi4py.MPI`` (the real extension is never
    loaded)."""

    def __init__(self, pkg: Any, fake: Any) -> None:
        self.mpi = MPILoader(fake)
        self.pkg = PackageLoader(pkg)
        self.search = list(getattr(pkg, "__path__", []))

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "mpi4py.MPI":
            return importlib.machinery.ModuleSpec(name, self.mpi, origin="smpy")  # type: ignore[arg-type]
        if name == "mpi4py":
            return importlib.machinery.ModuleSpec(name, self.pkg, origin="smpy",  # type: ignore[arg-type]
                                                  is_package=True)
        return None
