"""Build a CPython extension from one C file on first use, and load it.

smpy's optional compiled parts (``smpy/kernel/_accel.c``, ``smpy/mpi/_callaccel.c``) are not
built at ``pip install``: the first run that wants one compiles it with the system's C
compiler (``$CC``, ``cc``, ``gcc`` or ``clang``) and Python's headers into the user's cache
(``~/.cache/smpy``, keyed by the source's hash and the interpreter; the same rules as
``smpy/shim/rankheap.py``: built atomically, loaded only when owned by the user and not
writable by others). Without a compiler or headers the caller runs its pure-Python path.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from smpy.support.digest import sha256
from smpy.support.trust import trusted_file

#: floating-point operations exactly as written (no fused multiply-add): the compiled code
#: must give the Python reference's bits; without the C headers' debugging assertions
#: (NDEBUG, as CPython builds its own extensions: each was a type check and a branch at every
#: tuple, list or builtin-function access macro)
_FLAGS = "-O2 -DNDEBUG -ffp-contract=off -fno-fast-math"

#: the helpers every extension includes (``#include "_cext.h"``), part of each cache key
_HEADER = Path(__file__).with_name("_cext.h")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smpy"


def compiler() -> str | None:
    import shutil  # here: a run that loads its extensions needs no compiler

    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def build(src: Path, stem: str) -> tuple[Path | None, str]:
    """The shared object built from ``src`` (cached), or None and why not."""
    try:
        text = src.read_bytes() + _HEADER.read_bytes()
    except OSError as exc:
        return None, f"{Path(exc.filename or src).name} is not installed"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    key = sha256(text + sys.version.encode() + sys.platform.encode() + _FLAGS.encode()).hexdigest()[:16]
    out = cache_dir() / f"{stem}-{key}{suffix}"
    if out.exists() or out.is_symlink():
        if trusted_file(out):
            return out, ""
        try:  # planted by someone else, or writable by others: never load it
            out.unlink()
        except OSError:
            return None, f"{out} is not trusted"
    import subprocess  # the build's only: not imported by a run that loads a cached build
    import sysconfig
    import tempfile

    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        return None, "Python's C headers (Python.h) are not installed"
    cc = compiler()
    if cc is None:
        return None, "no C compiler (set CC, or install cc/gcc/clang)"
    try:
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            so = Path(tmp) / out.name
            done = subprocess.run([cc, *_FLAGS.split(), "-shared", "-fPIC", f"-I{include}", f"-I{_HEADER.parent}", "-o", str(so), str(src)],
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                return None, f"the build of {src.name} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
            os.replace(so, out)  # atomic: concurrent runs may build it at once
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the build of {src.name} failed: {exc}"
    return (out, "") if trusted_file(out) else (None, f"{out} is not trusted")


_loaded: dict[str, tuple[ModuleType | None, str]] = {}

#: providers of (Python object, compiled object) pairs, registered by any layer (the kernel's
#: and lmm's included) and consumed by :func:`smpy.kernel.accel.use`, which swaps them in
providers: list[Callable[[], list[tuple[Any, Any]]]] = []


def register(provider: Callable[[], list[tuple[Any, Any]]]) -> None:
    """Add a provider of pairs (Python object, compiled object): called, once, the next time
    the compiled path is put in place (it builds its own extension, and gives no pairs when
    it cannot)."""
    providers.append(provider)


def load(src: Path, name: str) -> tuple[ModuleType | None, str]:
    """The extension module ``name`` (its init function ``PyInit_<last part of name>``) built
    from ``src``, or None and why not; loaded once per process."""
    if name not in _loaded:
        _loaded[name] = _load(src, name)
    return _loaded[name]


def status() -> dict[str, str]:
    """Every extension asked for in this process: its name, and ``""`` when it loaded or why
    it did not (a run records it: a path that silently fell back to Python costs twice the CPU)."""
    return {name: ("" if mod is not None else why) for name, (mod, why) in sorted(_loaded.items())}


def _load(src: Path, name: str) -> tuple[ModuleType | None, str]:
    path, why = build(src, name.rsplit(".", 1)[-1].lstrip("_"))
    if path is None:
        return None, why
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_loader(name, loader)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        loader.exec_module(mod)
    except (ImportError, OSError) as exc:
        return None, f"{path.name} did not load: {exc}"
    return mod, ""
