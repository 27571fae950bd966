"""The import system per rank (smpy.shim.imports): module locks, finders inserted in front of
smpy's, modules that read MPI state at import."""

from __future__ import annotations

import builtins
import importlib._bootstrap as bootstrap
import sys
import threading
from pathlib import Path

import pytest

import smpy
from smpy.shim import isolation

NO_COMPUTE = {"smpi/simulate-computation": "no"}
_TEST_MODULES = ("halfdone", "sharedlock", "usermod", "rankatimport", "wrap", "calls", "dupper", "plain",
                 "byimportlib", "bydunder", "late")


@pytest.fixture(autouse=True)
def _forget_test_modules():  # type: ignore[no-untyped-def]
    """Shared modules stay imported after a run, as site-packages modules do: the next
    test must not find those of the previous one."""
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in _TEST_MODULES]:
        del sys.modules[name]


def _site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A directory that smpy treats as site-packages (its modules are shared by default)."""
    site = tmp_path / "site"
    site.mkdir()
    real = isolation._system_dirs
    monkeypatch.setattr(isolation, "_system_dirs", lambda: (*real(), str(site.resolve())))
    return site


HALF_DONE_PKG = '''\
import time
x = 0
for i in range(200000):  # some computation, then a clock read: the rank is switched out
    x += i
STAMP = time.time()
time.sleep(0.001)
VALUE = 42
'''

HALF_DONE_MAIN = '''\
import sys
sys.path.insert(0, {site!r})
from mpi4py import MPI
from halfdone import VALUE
import halfdone
print(MPI.COMM_WORLD.Get_rank(), VALUE, id(halfdone) == MPI.COMM_WORLD.bcast(id(halfdone)))
'''


@pytest.mark.parametrize("cfg", [{}, NO_COMPUTE])
def test_shared_module_mid_import_makes_other_ranks_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         cfg: dict) -> None:
    site = _site(monkeypatch, tmp_path)
    (site / "halfdone").mkdir()
    (site / "halfdone" / "__init__.py").write_text(HALF_DONE_PKG)
    script = tmp_path / "main.py"
    script.write_text(HALF_DONE_MAIN.format(site=str(site)))
    res = smpy.run(str(script), np=4, capture=True, cfg=cfg)
    assert res.status == "ok", res.message
    for r in range(4):
        # every rank gets the one shared, completely initialised module
        assert res.rank_output(r) == f"{r} 42 True\n"
    assert "halfdone" in sys.modules  # shared: stays imported, as site-packages modules do


def test_same_with_the_module_forced_shared(tmp_path: Path) -> None:
    pkgs = tmp_path / "pkgs"
    (pkgs / "halfdone").mkdir(parents=True)
    (pkgs / "halfdone" / "__init__.py").write_text(HALF_DONE_PKG)
    script = tmp_path / "main.py"
    script.write_text(HALF_DONE_MAIN.format(site=str(pkgs)))
    res = smpy.run(str(script), np=3, capture=True, cfg={"smpy/shared-modules": "halfdone"})
    assert res.status == "ok", res.message
    assert [res.rank_output(r) for r in range(3)] == [f"{r} 42 True\n" for r in range(3)]


def test_thread_identities_per_rank(tmp_path: Path) -> None:
    script = tmp_path / "ident.py"
    script.write_text('''\
import threading, _thread
from mpi4py import MPI
comm = MPI.COMM_WORLD
ids = comm.allgather(threading.get_ident())
print(len(set(ids)) == comm.size, threading.current_thread() is threading.main_thread())
lock = threading.RLock()
''')
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert res.stdout == "True True\n" * 3
    assert threading.get_ident() == threading.main_thread().ident  # restored after the run


RLOCK_MAIN = '''\
import threading, time
from mpi4py import MPI
import sharedlock
comm = MPI.COMM_WORLD
with sharedlock.LOCK:
    sharedlock.HOLDER.append(comm.rank)
    time.sleep(0.01)  # switched out while holding the lock
    print(comm.rank, sharedlock.HOLDER == [comm.rank])
    sharedlock.HOLDER.clear()
'''


def test_rlock_of_a_shared_module_excludes_other_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(monkeypatch, tmp_path)
    (site / "sharedlock.py").write_text("import threading\nLOCK = threading.RLock()\nHOLDER = []\n")
    script = tmp_path / "main.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(site)!r})\n" + RLOCK_MAIN)
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == ["0 True", "1 True", "2 True"]


FRONT_FINDER_MAIN = '''\
import sys
import importlib.machinery


class Front:
    """A finder in front of smpy's, loading with its own loader (as pytest's rewriter does)."""

    seen = []

    def find_spec(self, name, path, target=None):
        if name != "usermod":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        self.seen.append(name)
        return spec


sys.meta_path.insert(0, Front())
from mpi4py import MPI
import usermod
comm = MPI.COMM_WORLD
usermod.state.append(comm.rank)
comm.Barrier()
print(comm.rank, usermod.state, len(Front.seen))
'''


def test_finder_inserted_in_front_still_gives_per_rank_modules(tmp_path: Path) -> None:
    (tmp_path / "usermod.py").write_text("state = []\n")
    script = tmp_path / "main.py"
    script.write_text(FRONT_FINDER_MAIN)
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    for r in range(3):
        # each rank's own finder instance (the script is per rank) found its own module
        assert res.rank_output(r) == f"{r} [{r}] 1\n"


MPI_SITE = {
    "rankatimport.py": "from mpi4py import MPI\nRANK = MPI.COMM_WORLD.Get_rank()\n",
    "wrap/__init__.py": "from .core import world_rank\n",
    "wrap/core.py": "from .comm import comm\nworld_rank = comm.Get_rank()\n",
    "wrap/comm.py": "from mpi4py import MPI\ncomm = MPI.COMM_WORLD\n",
    "wrap/late.py": "from .comm import comm\nRANK = comm.Get_rank()\n",
    "wrap/plain.py": "TOKEN = object()\n",
    "plain.py": "TOKEN = object()\n",
    "calls.py": "import wrap\nRANK = wrap.comm.comm.Get_rank()\n",
    "dupper.py": "from mpi4py import MPI\nCOMM = MPI.COMM_WORLD.Dup()  # a collective at import\n",
}

MPI_MAIN = '''\
import sys
sys.path.insert(0, {site!r})
from mpi4py import MPI
import rankatimport, wrap, calls
import wrap.late, wrap.plain, plain
{extra}
comm = MPI.COMM_WORLD
assert wrap.plain.TOKEN is not None
same = comm.allgather(id(plain.TOKEN))
print(comm.rank, rankatimport.RANK, wrap.world_rank, wrap.late.RANK, calls.RANK, len(set(same)))
'''


def _mpi_site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, extra: str = "") -> Path:
    site = _site(monkeypatch, tmp_path)
    for rel, text in MPI_SITE.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    script = tmp_path / "main.py"
    script.write_text(MPI_MAIN.format(site=str(site), extra=extra))
    return script


def test_installed_modules_reading_the_rank_at_import_are_per_rank(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    script = _mpi_site(monkeypatch, tmp_path, "import dupper\nassert dupper.COMM.rank == MPI.COMM_WORLD.rank")
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    for r in range(3):
        # the module that does not touch MPI stays shared: one TOKEN
        assert res.rank_output(r) == f"{r} {r} {r} {r} {r} 1\n"
    for name in ("rankatimport", "wrap", "wrap.core", "wrap.comm", "wrap.late", "calls", "dupper"):
        assert name not in sys.modules  # per rank: gone with the run
    assert "wrap.plain" not in sys.modules  # a submodule of a per-rank package is per rank
    assert sys.modules["plain"].TOKEN is not None  # shared: stays imported


def test_mpi_modules_shared_on_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _mpi_site(monkeypatch, tmp_path)
    res = smpy.run(str(script), np=3, capture=True, cfg={**NO_COMPUTE, "smpy/mpi-modules-per-rank": "no"})
    assert res.status == "ok", res.message
    # one copy, imported by the first rank: every rank sees rank 0's values
    assert [res.rank_output(r) for r in range(3)] == [f"{r} 0 0 0 0 1\n" for r in range(3)]


def test_per_rank_on_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _mpi_site(monkeypatch, tmp_path)
    res = smpy.run(str(script), np=2, capture=True,
                   cfg={**NO_COMPUTE, "smpy/per-rank-modules": "plain", "smpy/shared-modules": "calls"})
    assert res.status == "ok", res.message
    assert res.rank_output(0) == "0 0 0 0 0 2\n"
    assert res.rank_output(1) == "1 1 1 1 0 2\n"  # calls shared (rank 0's), plain per rank


def test_import_machinery_restored_after_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _mpi_site(monkeypatch, tmp_path)
    before = (builtins.__import__, bootstrap._thread, type(bootstrap._module_locks), bootstrap.module_from_spec,
              list(sys.meta_path), bootstrap._gcd_import)
    res = smpy.run(str(script), np=2, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    after = (builtins.__import__, bootstrap._thread, type(bootstrap._module_locks), bootstrap.module_from_spec,
             list(sys.meta_path), bootstrap._gcd_import)
    assert after == before
    assert not isolation._private_names


DYNAMIC_SITE = {
    # bound before the run, called at import: must see the rank's module all the same
    "byimportlib/__init__.py": ("from importlib import import_module\n"
                                "MPI = import_module('mpi4py.MPI')\nRANK = MPI.COMM_WORLD.Get_rank()\n"),
    "bydunder.py": "RANK = __import__('mpi4py.MPI', fromlist=['MPI']).COMM_WORLD.Get_rank()\n",
    # shared (no MPI at import), importing mpi4py inside functions after the start
    "late.py": ("import importlib\n"
                "def ranks():\n"
                "    from mpi4py import MPI as a\n"
                "    b = importlib.import_module('mpi4py.MPI')\n"
                "    c = __import__('mpi4py').MPI\n"
                "    return [m.COMM_WORLD.Get_rank() for m in (a, b, c)], a is b is c\n"),
}

DYNAMIC_MAIN = '''\
import sys, importlib
sys.path.insert(0, {site!r})
from mpi4py import MPI
import byimportlib, bydunder, late
mine = importlib.import_module("mpi4py.MPI")
ranks, same = late.ranks()
print(MPI.COMM_WORLD.Get_rank(), byimportlib.RANK, bydunder.RANK, ranks, same, mine is MPI,
      byimportlib.MPI is MPI)
'''


def test_mpi_by_import_module_and_dunder_import_is_the_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``importlib.import_module("mpi4py.MPI")`` and ``__import__`` give each rank its module
    and make an installed module reading the rank at import per rank, as ``import`` does."""
    site = _site(monkeypatch, tmp_path)
    for rel, text in DYNAMIC_SITE.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    script = tmp_path / "main.py"
    script.write_text(DYNAMIC_MAIN.format(site=str(site)))
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    for r in range(3):
        assert res.rank_output(r) == f"{r} {r} {r} [{r}, {r}, {r}] True True True\n"
    assert "byimportlib" not in sys.modules and "bydunder" not in sys.modules  # per rank
    assert "late" in sys.modules  # no MPI at import: shared


PROBE = '''\
import sys
g = globals()
print("file", g.get("__file__"), "argv0", sys.argv[0], "path0", sys.path[0],
      "code", sys._getframe().f_code.co_filename)
print("spec", None if __spec__ is None else (__spec__.name, __spec__.origin), "package", repr(__package__))
print("loader", type(g.get("__loader__")).__name__, "cached", repr(g.get("__cached__", "MISSING")),
      "builtins", type(g["__builtins__"]).__name__)
print("name", __name__, "main is me", sys.modules["__main__"].__dict__ is g)
'''


def _smpyrun_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "smpyrun"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]


@pytest.mark.parametrize("args", [["probe.py"], ["./probe.py"], ["sub/../probe.py"], ["-m", "pkgm"],
                                  ["-m", "probe"], ["app"], ["app.zip"]])
def test_main_module_as_python_builds_it(tmp_path: Path, args: list[str]) -> None:
    """``__file__`` (absolute, unnormalised), ``__spec__``, ``__package__``, ``__loader__``,
    ``__cached__``, ``__builtins__``, ``sys.argv[0]`` and ``sys.path[0]`` as under ``python``,
    for a script, ``-m module``, ``-m package`` (its ``__main__``), a directory and a zip file."""
    import subprocess
    import zipfile

    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "sub").mkdir()
    for d in ("pkgm", "app"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "__main__.py").write_text(PROBE)
    (tmp_path / "pkgm" / "__init__.py").write_text("")
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as z:
        z.writestr("__main__.py", PROBE)
    real = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert real.returncode == 0, real.stderr
    emu = subprocess.run([*_smpyrun_cmd(), "-np", "1", "-q", *args], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert emu.returncode == 0, emu.stderr
    assert emu.stdout == real.stdout


def test_installed_distribution_dirs_are_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory with ``*.dist-info`` entries on ``sys.path`` (``pip install --target``)
    holds installed packages: shared like site-packages, not the program's own modules."""
    target = tmp_path / "target"
    (target / "plain-1.0.dist-info").mkdir(parents=True)
    (target / "plain.py").write_text("TOKEN = object()\n")
    monkeypatch.syspath_prepend(str(target))
    script = tmp_path / "main.py"
    script.write_text("from mpi4py import MPI\nimport plain\n"
                      "print(len(set(MPI.COMM_WORLD.allgather(id(plain.TOKEN)))))\n")
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert res.stdout == "1\n" * 3


def test_compiled_extension_in_a_per_rank_package_is_shared_and_bound(tmp_path: Path) -> None:
    """A process loads a compiled extension once: inside a per-rank package it stays shared,
    and ``import pkg.ext`` binds it on every rank's copy of the package."""
    import _json
    import shutil

    pkg = tmp_path / "usermod"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("STATE = []\n")
    shutil.copy(_json.__file__, pkg / Path(_json.__file__).name)
    script = tmp_path / "main.py"
    script.write_text('''\
from mpi4py import MPI
import usermod._json
comm = MPI.COMM_WORLD
usermod.STATE.append(comm.rank)
ids = comm.allgather((id(usermod), id(usermod._json)))
print(usermod.STATE, len({a for a, _ in ids}), len({b for _, b in ids}))
''')
    res = smpy.run(str(script), np=3, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    for r in range(3):
        assert res.rank_output(r) == f"[{r}] 3 1\n"  # the package per rank, the extension shared


def test_communicating_at_import_of_a_forced_shared_module_is_a_reported_deadlock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule's escape hatch has the consequence documented: the other ranks wait for the
    import that the first rank cannot finish, and the report says so."""
    script = _mpi_site(monkeypatch, tmp_path, "import dupper")
    res = smpy.run(str(script), np=2, capture=True,
                   cfg={**NO_COMPUTE, "smpy/shared-modules": "dupper"})
    assert res.status == "deadlock"
    assert "the end of an import that another rank or thread is in the middle of" in res.message


RC_MAIN = '''\
import sys, warnings
import mpi4py
from mpi4py import rc
fresh = rc.initialize is True and rc.errors == "exception"  # each rank's own rc
for arg in sys.argv[1:]:
    name, value = arg.split("=")
    setattr(rc, name, {{"false": False, "true": True}}.get(value, value))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    {imp}
comm = None
init = MPI.Is_initialized()
if not init:
    MPI.Init()
comm = MPI.COMM_WORLD
eh = comm.Get_errhandler()
dup = comm.Dup()
f = MPI.File.Open(MPI.COMM_SELF, "/dev/null", MPI.MODE_WRONLY)


def name(e):
    return [n for n, h in (("return", MPI.ERRORS_RETURN), ("fatal", MPI.ERRORS_ARE_FATAL),
                           ("abort", MPI.ERRORS_ABORT)) if e == h][0]


print(comm.rank, fresh, init, MPI.Query_thread(), name(eh), name(dup.Get_errhandler()),
      name(f.Get_errhandler()), sorted(str(w.message) for w in caught), mpi4py.MPI is MPI)
f.Close()
'''


@pytest.mark.parametrize("imp", ["from mpi4py import MPI", "import mpi4py.MPI as MPI",
                                 "import importlib; MPI = importlib.import_module('mpi4py.MPI')"])
@pytest.mark.parametrize("args, expected", [
    ((), "True True 3 return return return []"),
    (("initialize=false",), "True False 0 return return return []"),
    (("threads=false",), "True True 0 return return return []"),
    (("thread_level=funneled",), "True True 1 return return return []"),
    (("errors=default",), "True True 3 fatal fatal return []"),
    (("errors=fatal",), "True True 3 fatal fatal fatal []"),
    (("errors=abort",), "True True 3 abort abort abort []"),
    (("errors=bogus", "thread_level=3"),
     "True True 3 return return return [\"mpi4py.rc.errors: unexpected value 'bogus'\", "
     "\"mpi4py.rc.thread_level: unexpected value '3'\"]"),
])
def test_mpi4py_rc_per_rank_at_import(tmp_path: Path, imp: str, args: tuple, expected: str) -> None:
    """mpi4py.rc as mpi4py 4.1.2 reads it when the rank imports mpi4py.MPI, in any form."""
    script = tmp_path / "rc.py"
    script.write_text(RC_MAIN.format(imp=imp))
    res = smpy.run(str(script), np=2, args=list(args), capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    for r in range(2):
        assert res.rank_output(r) == f"{r} {expected} True\n"


def test_mpi4py_rc_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPI4PY_RC_INITIALIZE", "No")
    monkeypatch.setenv("MPI4PY_RC_IRECV_BUFSZ", " 2048")
    monkeypatch.setenv("MPI4PY_PICKLE_PROTOCOL", "3")
    script = tmp_path / "env.py"
    script.write_text("from mpi4py import rc\nfrom mpi4py import MPI\n"
                      "print(MPI.Is_initialized(), rc.initialize, rc.irecv_bufsz, MPI.pickle.PROTOCOL)\n")
    res = smpy.run(str(script), np=2, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert res.stdout == "False False 2048 3\n" * 2


def test_mpi4py_rc_removed_gives_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """demo/init-fini/test_5.py: ``del mpi4py.rc`` in one rank leaves the others' alone."""
    monkeypatch.setenv("MPI4PY_RC_ERRORS", "fatal")
    script = tmp_path / "norc.py"
    script.write_text("import sys, mpi4py\ndel mpi4py.rc\ndel sys.modules['mpi4py.rc']\nfrom mpi4py import MPI\n"
                      "print(MPI.Is_initialized(), MPI.COMM_WORLD.Get_errhandler() == MPI.ERRORS_ARE_FATAL)\n")
    res = smpy.run(str(script), np=2, capture=True, cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert res.stdout == "True True\n" * 2
