"""Invariants of the code base that a reader relies on, checked on the source (as Trio and
mpi4py check theirs): one greenlet module, no blocking from the facade, internal errors as a
class, and the public surface of ``smpy.mpi`` against the installed mpi4py's ``MPI.pyi``."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import smpy.mpi as M
from smpy.mpi import registry
from smpy.support.internal import SmpyInternalError

ROOT = Path(__file__).resolve().parent.parent / "smpy"
SOURCES = sorted(ROOT.rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


def _trees():
    for path in SOURCES:
        yield path, ast.parse(path.read_text())


def test_only_kernel_actors_imports_greenlet():
    """Only smpy/kernel/actors.py switches greenlets (design.md, "One switch module")."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "greenlet" or n.startswith("greenlet.") for n in names):
                found.append(_rel(path))
    assert sorted(set(found)) == ["smpy/kernel/actors.py"]


BLOCKING_LAYERS = {"kernel", "runtime", "timing", "colls", "shim"}


def test_block_on_is_not_called_from_the_facade():
    """Waiting in simulated time is the runtime's business: the facade (smpy.mpi) and the
    front ends call runtime functions that block, never ``block_on`` itself."""
    found = []
    for path, tree in _trees():
        pkg = path.relative_to(ROOT).parts[0]
        if pkg in BLOCKING_LAYERS:
            continue
        for node in ast.walk(tree):
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else None)
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name in ("block_on", "block_on_any"):
                        found.append(f"{_rel(path)}:{node.lineno}")
            elif name in ("block_on", "block_on_any"):
                found.append(f"{_rel(path)}:{node.lineno}")
    assert not found, f"block_on used outside {sorted(BLOCKING_LAYERS)}: {found}"


def test_internal_errors_are_smpy_internal_error():
    """A broken invariant of smpy raises SmpyInternalError, not another class with the words
    "internal error" in its message (the front end reports the class, with smpy's frames)."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            func = node.exc.func
            cls = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            text = " ".join(c.value for arg in node.exc.args for c in ast.walk(arg)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str))
            if "internal error" in text.lower() and cls != "SmpyInternalError":
                found.append(f"{_rel(path)}:{node.lineno} raises {cls}")
    assert not found, found


def test_a_missing_registry_entry_is_an_internal_error():
    with pytest.raises(SmpyInternalError, match="nothing registered as 'NoSuchClass'"):
        registry.get("NoSuchClass")
    assert registry.get("Intercomm") is M.Intercomm
    assert registry.comm_class(None) is M.Intracomm


# -- the public surface of smpy.mpi against mpi4py's stub ------------------------------------------
#: names of MPI.pyi that smpy.mpi deliberately does not have, with the reason
ABSENT = {
    "__pyx_capi__": "Cython's C-API capsule table of the compiled module; nothing in Python reads it",
}


def _stub() -> dict[str, set[str] | None]:
    """Top-level names of the installed mpi4py's MPI.pyi; for a class, its member names."""
    spec = importlib.util.find_spec("mpi4py")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("mpi4py is not installed")
    pyi = Path(next(iter(spec.submodule_search_locations))) / "MPI.pyi"
    out: dict[str, set[str] | None] = {}
    for node in ast.parse(pyi.read_text()).body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    members.add(sub.name)
                elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
                    members.add(sub.target.id)
            out[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
        elif isinstance(node, ast.Assign):
            out.update((t.id, None) for t in node.targets if isinstance(t, ast.Name))
    return out


def test_public_surface_matches_mpi4py_stub():
    stub = _stub()
    assert len(stub) > 300  # the stub was read (386 names in mpi4py 4.1.2)
    missing = [name for name in stub if name not in ABSENT and not hasattr(M, name)]
    assert not missing, f"in mpi4py's MPI.pyi, not in smpy.mpi: {missing}"
    members = [f"{cls}.{m}" for cls, ms in stub.items() if ms and isinstance(getattr(M, cls, None), type)
               for m in sorted(ms) if not (m.startswith("__") and m.endswith("__"))
               and f"{cls}.{m}" not in ABSENT and not hasattr(getattr(M, cls), m)]
    assert not members, f"class members in MPI.pyi, not in smpy.mpi: {members}"
    stale = [name for name in ABSENT if name not in stub]
    assert not stale, f"ABSENT lists names the stub no longer has: {stale}"


def _public_callables():
    for name in dir(M):
        obj = getattr(M, name)
        if name.startswith("_"):
            continue
        if isinstance(obj, type) and obj.__module__.startswith("smpy."):
            for klass in obj.__mro__:
                if not klass.__module__.startswith("smpy."):
                    continue
                for member, value in vars(klass).items():
                    if member.startswith("_"):
                        continue
                    raw = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
                    if isinstance(raw, property) or callable(raw):
                        yield f"{klass.__name__}.{member}", raw
        elif callable(obj) and getattr(obj, "__module__", "").startswith("smpy."):
            yield name, obj


def test_every_public_facade_callable_has_a_docstring():
    """help(MPI.Comm.Bcast) says what the call does (smpy.mpi.docstrings fills the thin ones)."""
    missing = sorted({name for name, obj in _public_callables() if not (obj.__doc__ or "").strip()})
    assert not missing, f"{len(missing)} public callables of smpy.mpi without a docstring: {missing[:20]}"
    assert "Broadcast" in M.Comm.Bcast.__doc__ and "Nonblocking" in M.Comm.Ibcast.__doc__
    assert "remote group" in M.Intercomm.Gather.__doc__ or "other group" in M.Intercomm.Bcast.__doc__
    assert M.File.Read_at_all.__doc__ == "Collective read at an explicit offset."
