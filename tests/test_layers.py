"""The house rule: a module imports only from its own package or from lower layers.

Imports under ``if TYPE_CHECKING:`` are annotations only and do not count. Importing the
top-level ``smpy`` package (for ``__version__``) is allowed everywhere.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "smpy"

# ARCHITECTURE.md's layers, with the order inside a layer made explicit where modules of
# one layer use each other (models use kernel activities; routing names hosts; the CLI
# installs the shim).
LAYER = {
    "support": 0,
    "kernel": 1, "lmm": 1,
    "cpu": 2,
    "network": 3, "storage": 3,
    "platform": 4, "energy": 4, "trace": 4,
    "runtime": 5, "timing": 5,
    "colls": 6,
    "mpi": 7,
    "shim": 8, "replay": 8,
    "cli": 9, "calibrate": 9,
    "__init__": 10, "__main__": 10, "nodes": 10,
}


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "smpy":
        return None
    if len(parts) == 1:
        return "smpy"
    return parts[1]


def _imports(tree: ast.AST, modname: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for n in ast.walk(sub):
                    skip.add(id(n))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = modname.split(".")[: -node.level]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
    return out


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        yield path, ".".join(rel.parts)


@pytest.mark.slow
@pytest.mark.parametrize("path,modname", list(_modules()), ids=lambda x: str(x).split("smpy/")[-1])
def test_module_imports_only_lower_layers(path, modname):
    pkg = _package(modname) if modname.count(".") >= 1 else "__init__"
    if modname in ("smpy.__init__", "smpy.__main__"):
        pkg = modname.split(".")[1]
    assert pkg in LAYER, f"{modname}: package {pkg!r} has no layer; add it to LAYER"
    mine = LAYER[pkg]
    tree = ast.parse(path.read_text())
    bad = []
    for line, target in _imports(tree, modname):
        tpkg = _package(target)
        if tpkg is None or tpkg == "smpy" or tpkg == pkg:
            continue
        if tpkg not in LAYER or LAYER[tpkg] >= mine:
            bad.append(f"line {line}: imports {target} (layer {LAYER.get(tpkg)}) from layer {mine}")
    assert not bad, f"{modname} breaks the layering:\n" + "\n".join(bad)


def test_kernel_knows_no_mpi_words():
    words = ("rank", "communicator", "MPI_", "tag")
    for pkg in ("kernel", "lmm"):
        for path in (ROOT / pkg).glob("*.py"):
            code = "\n".join(line for line in path.read_text().splitlines()
                             if not line.lstrip().startswith("#"))
            tree = ast.parse(code)
            names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            leaked = [w for w in words for n in names if w.lower() in n.lower() and n != "storage"]
            assert not leaked, f"{path.name} uses MPI vocabulary in identifiers: {leaked}"


def _module_graph(pkg: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, imports inside functions
    included (``TYPE_CHECKING`` blocks excluded). ``from smpy.pkg import name`` counts as
    an import of module ``name`` when there is one, else of the package's ``__init__``."""
    prefix = f"smpy.{pkg}"
    mods = {modname: path for path, modname in _modules() if modname.startswith(prefix + ".")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for modname, path in mods.items():
        tree = ast.parse(path.read_text())
        froms = 0
        targets = []
        for node in ast.walk(tree):  # `from smpy.pkg import module` names modules, not the package
            if isinstance(node, ast.ImportFrom):
                base = (".".join(modname.split(".")[: -node.level] + ([node.module] if node.module else []))
                        if node.level else node.module or "")
                if base == prefix:
                    froms += 1
                    targets += [f"{prefix}.{a.name}" for a in node.names]
        for t in [t for _, t in _imports(tree, modname)]:
            if t == prefix and froms:
                froms -= 1  # counted above, name by name
            else:
                targets.append(t)
        for t in targets:
            if t == prefix:
                t = f"{prefix}.__init__"
            while t not in mods and t.count(".") > 1:  # smpy.pkg.mod.attr -> smpy.pkg.mod
                t = t.rsplit(".", 1)[0]
            if t in mods and t != modname:
                graph[modname].add(t)
            elif t.startswith(prefix + ".") and t not in mods:
                graph[modname].add(f"{prefix}.__init__")
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


PACKAGES = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists())


@pytest.mark.parametrize("pkg", PACKAGES)
def test_imports_inside_a_package_are_acyclic(pkg):
    """One import direction inside every package, deferred (function-level) imports
    included: a cycle hidden in a function is still a cycle (smpy.mpi's mixins once
    imported the classes built on them; smpy.mpi.registry is the way down)."""
    cycle = _find_cycle(_module_graph(pkg))
    assert cycle is None, f"smpy.{pkg} has an import cycle: " + " -> ".join(m.split(".", 2)[2] for m in cycle)


def test_the_cycle_check_sees_deferred_imports():
    tree = ast.parse("def f():\n    from smpy.mpi.comm import Comm\n")
    assert ("smpy.mpi.comm" in [t for _, t in _imports(tree, "smpy.mpi.group")])
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
