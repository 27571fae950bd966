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
    "__init__": 10, "__main__": 10,
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
