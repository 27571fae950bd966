"""Each rank behaves as its own Python process: ``__main__``, user modules, generators, argv."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import numpy  # the in-process runs below see numpy already imported, as in a notebook
import pytest

import smpy

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"
NO_COMPUTE = {"smpi/simulate-computation": "no"}


def run(program: str | Path, np: int, *args: str, **kw):
    return smpy.run(str(PROGRAMS / program), np=np, args=list(args), capture=True, **kw)


def smpyrun(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "smpyrun"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_main_globals_per_rank() -> None:
    res = run("isolation.py", 3, "globals")
    assert res.status == "ok", res.message
    assert res.rank_output(0) == "rank 0 COUNTER 5 main 5 case globals\n"
    assert res.rank_output(1) == "rank 1 COUNTER 100 main 100 case globals\n"
    assert res.rank_output(2) == "rank 2 COUNTER 0 main 0 case globals\n"


USERMOD = '''\
print("usermod imported")
state = []
counter = 0


class Thing:
    def __init__(self, v):
        self.v = v


def add(x):
    global counter
    counter += 1
    state.append(x)
    return list(state)
'''

USER_MAIN = '''\
from mpi4py import MPI
import usermod

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
for i in range(rank + 1):
    usermod.add((rank, i))
    MPI.Wtime()  # an MPI call: other ranks run in between
comm.Barrier()


def late_import():
    import usermod as again
    return again


again = late_import()
if rank == 0:
    comm.send(usermod.Thing(42), dest=1)
elif rank == 1:
    t = comm.recv(source=0)
    print(f"thing {type(t) is usermod.Thing} {t.v}")
print(f"rank {rank} state {usermod.state!r} counter {usermod.counter} same {again is usermod}")
'''


def test_user_module_state_per_rank(tmp_path: Path) -> None:
    (tmp_path / "usermod.py").write_text(USERMOD)
    script = tmp_path / "main.py"
    script.write_text(USER_MAIN)
    res = smpy.run(str(script), np=3, capture=True)
    assert res.status == "ok", res.message
    for r in range(3):
        lines = res.rank_output(r).splitlines()
        assert lines[0] == "usermod imported"  # each rank imports its own copy
        state = [(r, i) for i in range(r + 1)]
        assert lines[-1] == f"rank {r} state {state!r} counter {r + 1} same True"
    assert "thing True 42" in res.rank_output(1)
    # a second run starts from fresh modules
    again = smpy.run(str(script), np=3, capture=True)
    assert [again.rank_output(r) for r in range(3)] == [res.rank_output(r) for r in range(3)]


def _draws(res) -> dict[int, tuple[list, list]]:
    out = {}
    for r in range(res.np):
        line = res.rank_output(r).strip()
        head, _, rest = line.partition(" random ")
        rnd, _, nump = rest.partition(" numpy ")
        out[int(head.split()[1])] = (ast.literal_eval(rnd), ast.literal_eval(nump))
    return out


def test_random_generators_per_rank_and_reproducible() -> None:
    a = _draws(run("isolation.py", 3, "random"))
    b = _draws(run("isolation.py", 3, "random"))
    assert a == b
    for kind in (0, 1):  # random, numpy.random
        seqs = [tuple(a[r][kind]) for r in range(3)]
        assert len(set(seqs)) == 3, f"ranks share a sequence: {seqs}"
    # rank 0 reseeding its generators does not change rank 1's or rank 2's draws
    c = _draws(run("isolation.py", 3, "random", "5"))
    assert c[1] == a[1] and c[2] == a[2]
    assert c[0] != a[0]


def test_seed_setting_changes_the_draws() -> None:
    a = _draws(run("isolation.py", 2, "random"))
    b = _draws(run("isolation.py", 2, "random", cfg={"smpy/seed": "7"}))
    assert a[0][0] != b[0][0]


@pytest.mark.slow
def test_random_module_reproducible_across_processes() -> None:
    outs = []
    for _ in range(2):
        proc = smpyrun("-q", "-np", "2", str(PROGRAMS / "isolation.py"), "random")
        assert proc.returncode == 0, proc.stderr
        outs.append({ln.split(" numpy ")[0] for ln in proc.stdout.splitlines()})
    assert outs[0] == outs[1]
    assert len(outs[0]) == 2


@pytest.mark.slow
def test_numpy_random_per_rank_and_reproducible_across_processes() -> None:
    def draws(*extra: str) -> dict[int, str]:
        proc = smpyrun("-q", "-np", "2", str(PROGRAMS / "isolation.py"), "random", *extra)
        assert proc.returncode == 0, proc.stderr
        return {int(ln.split()[1]): ln.split(" numpy ")[1] for ln in proc.stdout.splitlines()}

    first, second = draws(), draws()
    assert first == second
    # rank 0 calling numpy.random.seed must not change rank 1's draws
    assert draws("5")[1] == first[1]


def test_argv_per_rank() -> None:
    res = run("isolation.py", 3, "argv", "a", "b c", "--flag")
    assert res.status == "ok", res.message
    for r in range(3):
        assert res.rank_output(r) == f"rank {r} argv {['argv', 'a', 'b c', '--flag']!r}\n"
    saved = list(sys.argv)
    run("isolation.py", 1, "argv", "x")
    assert sys.argv == saved  # the caller's argv is restored


def test_main_classes_arrive_as_the_receivers_class() -> None:
    res = run("isolation.py", 2, "pickle_class")
    assert res.status == "ok", res.message
    assert res.rank_output(1) == "rank 1 got __main__.Point own_class True norm2 25 2 4\n"


def _signature(res) -> tuple:
    return (res.status, res.stdout, repr(res.makespan_s), res.messages, res.bytes_sent, res.mpi_calls, res.events,
            [(r.rank, r.host, repr(r.end_time_s), r.mpi_calls, r.simulated_flops) for r in res.ranks])


@pytest.mark.slow
@pytest.mark.parametrize(("program", "np", "args"), [
    ("nonovertaking", 4, ["nonovertaking"]),
    ("multi", 4, ["multi"]),
    ("master_worker", 5, ["30"]),
    ("heat", 3, ["512", "40"]),
])
def test_determinism(program: str, np: int, args: list[str]) -> None:
    path = ROOT / "examples" / f"{program}.py" if program in ("master_worker", "heat") else PROGRAMS / "p2p.py"
    runs = [smpy.run(str(path), np=np, args=args, cfg=NO_COMPUTE, capture=True) for _ in range(2)]
    assert runs[0].status == "ok", runs[0].message
    assert runs[0].makespan_s > 0
    assert _signature(runs[0]) == _signature(runs[1])
    assert runs[0].output == runs[1].output


def test_mpi4py_import_forms_give_smpy() -> None:
    res = run("isolation.py", 2, "imports")
    assert res.status == "ok", res.message
    for r in range(2):
        assert res.rank_output(r) == f"rank {r} same True vendor smpy module smpy.mpi\n"


def test_real_mpi4py_package_untouched_after_a_run() -> None:
    run("isolation.py", 1, "imports")
    assert "mpi4py.MPI" not in sys.modules or sys.modules["mpi4py.MPI"].__name__ != "smpy.mpi"


PKL5_IMPORT = '''\
from mpi4py import MPI
from mpi4py.util import pkl5
print("imported", pkl5.__name__)
'''

PKL5_USE = '''\
from mpi4py import MPI
from mpi4py.util import pkl5
comm = pkl5.Intracomm(MPI.COMM_WORLD)
if comm.Get_rank() == 0:
    comm.send({"big": list(range(10))}, dest=1, tag=3)
else:
    print("got", comm.recv(source=0, tag=3))
'''


def test_pkl5_import(tmp_path: Path) -> None:
    prog = tmp_path / "pkl5_import.py"
    prog.write_text(PKL5_IMPORT)
    res = smpy.run(str(prog), np=1, capture=True)
    assert res.status == "ok", res.message
    assert res.stdout == "imported mpi4py.util.pkl5\n"


def test_pkl5_send_recv(tmp_path: Path) -> None:
    prog = tmp_path / "pkl5_use.py"
    prog.write_text(PKL5_USE)
    res = smpy.run(str(prog), np=2, capture=True)
    assert res.status == "ok", res.message
    assert res.rank_output(1) == "got {'big': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"


def test_process_state_restored_after_run(tmp_path: Path) -> None:
    import random
    import time

    (tmp_path / "usermod.py").write_text(USERMOD)
    script = tmp_path / "main.py"
    script.write_text(USER_MAIN)
    before = (time.sleep, time.time, time.perf_counter, random.random, numpy.random.rand, sys.stdout, sys.stderr,
              list(sys.path), list(sys.argv), sys.modules.get("__main__"), list(sys.meta_path))
    res = smpy.run(str(script), np=2, capture=True)
    assert res.status == "ok", res.message
    after = (time.sleep, time.time, time.perf_counter, random.random, numpy.random.rand, sys.stdout, sys.stderr,
             list(sys.path), list(sys.argv), sys.modules.get("__main__"), list(sys.meta_path))
    assert after == before
    assert "usermod" not in sys.modules


def test_atexit_handlers_are_per_rank_and_run_with_mpi(tmp_path: Path) -> None:
    prog = tmp_path / "atexit_prog.py"
    prog.write_text(
        "import atexit, sys\n"
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "def bye(tag):\n"
        "    total = comm.allreduce(comm.rank)  # MPI still works at the rank's exit\n"
        "    print('bye', tag, comm.rank, total)\n"
        "def dropped():\n"
        "    print('never')\n"
        "atexit.register(bye, 'first')\n"
        "atexit.register(dropped)\n"
        "atexit.register(lambda: print('last registered runs first', comm.rank))\n"
        "atexit.unregister(dropped)\n"
        "if comm.rank == 1:\n"
        "    atexit.register(lambda: 1 / 0)  # reported, the other handlers still run\n"
        "    sys.exit(0)\n")
    res = smpy.run(str(prog), np=3, capture=True)
    assert res.status == "ok", res.message
    for r in range(3):
        out = res.rank_output(r).splitlines()
        assert out == [f"last registered runs first {r}", f"bye first {r} 3"]
    assert "ZeroDivisionError" in res.rank_output(1, "stderr")
    assert "Exception ignored in atexit callback" in res.rank_output(1, "stderr")
    assert res.rank_output(0, "stderr") == ""


def test_program_threads_get_real_clocks(tmp_path: Path) -> None:
    prog = tmp_path / "threads_prog.py"
    prog.write_text(
        "import time, threading\n"
        "from mpi4py import MPI\n"
        "seen = {}\n"
        "def work():\n"
        "    t0 = time.monotonic(); time.sleep(0.05); seen['dt'] = time.monotonic() - t0\n"
        "t = threading.Thread(target=work); t.start(); t.join()\n"
        "print(MPI.COMM_WORLD.rank, seen['dt'] >= 0.05, MPI.Query_thread() == MPI.THREAD_MULTIPLE)\n")
    res = smpy.run(str(prog), np=2, capture=True)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == ["0 True True", "1 True True"]


def test_mpi_pickle_is_per_rank(tmp_path: Path) -> None:
    """A rank that reconfigures MPI.pickle changes only its own (as a real process would)."""
    prog = tmp_path / "pickle_prog.py"
    prog.write_text(
        "import json\n"
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "if comm.rank == 0:\n"
        "    MPI.pickle.__init__(lambda o, *a: json.dumps(o).encode(), lambda b: json.loads(bytes(b)))\n"
        "comm.Barrier()\n"
        "echo = MPI.COMM_SELF.sendrecv({'a': comm.rank}, 0, 0, None, 0, 0)\n"
        "print(comm.rank, MPI.pickle.PROTOCOL, echo)\n")
    res = smpy.run(str(prog), np=3, capture=True)
    assert res.status == "ok", res.message
    assert res.rank_output(0) == "0 None {'a': 0}\n"
    assert res.rank_output(1) == "1 5 {'a': 1}\n"
    assert res.rank_output(2) == "2 5 {'a': 2}\n"


HUGEPAGE_PROG = """
from mpi4py import MPI
from smpy.shim.hugepages import _setter
s = _setter()
v = s(False)
s(v)
print(MPI.COMM_WORLD.rank, v)
"""


@pytest.mark.slow
@pytest.mark.parametrize("setting, compute, expected", [
    (None, True, True), ("numpy", True, True), ("yes", True, True), ("no", True, False), ("off", True, False),
    # computation not simulated: the page size cannot change a prediction, numpy's advice is left out
    (None, False, False), ("yes", False, True)])
def test_numpy_hugepage_advice_during_the_run(tmp_path: Path, setting: str | None, compute: bool,
                                              expected: bool) -> None:
    from smpy.shim.hugepages import _setter

    s = _setter()
    before = s(True)  # numpy's own decision, as on a Linux kernel >= 4.6 without NUMPY_MADVISE_HUGEPAGE
    try:
        prog = tmp_path / "h.py"
        prog.write_text(HUGEPAGE_PROG)
        cfg = {**NO_COMPUTE} if not compute else {"smpi/host-speed": "1Gf"}
        if setting is not None:
            cfg["smpy/numpy-hugepage"] = setting
        res = smpy.run(str(prog), np=2, cfg=cfg, capture=True, echo=False)
        assert res.status == "ok"
        assert sorted(res.stdout.split("\n")[:2]) == [f"0 {expected}", f"1 {expected}"]
        assert s(True) is True  # the process's own setting is back after the run
    finally:
        s(before)


def test_numpy_hugepage_default_follows_numpys_own_decision(tmp_path: Path) -> None:
    # NUMPY_MADVISE_HUGEPAGE=0 (or an old kernel) makes numpy decide against the advice at
    # import: the rank's real process would run without it, so the emulated ranks do too
    from smpy.shim.hugepages import _setter

    s = _setter()
    before = s(False)
    try:
        prog = tmp_path / "h.py"
        prog.write_text(HUGEPAGE_PROG)
        res = smpy.run(str(prog), np=2, cfg={"smpi/host-speed": "1Gf"}, capture=True, echo=False)
        assert res.status == "ok"
        assert sorted(res.stdout.split("\n")[:2]) == ["0 False", "1 False"]
    finally:
        s(before)


def test_switch_hooks_swap_per_rank_modules_a_rank_may_lack() -> None:
    """RankContext.switch_in/out (cheap per switch, issue 24): a rank sees its own copies of
    the per-rank modules, none of those it has no copy of, keeps those it imports or replaces
    while it runs, and follows modules made per rank between its switches."""
    import types

    from smpy.shim import isolation as iso

    saved, argv, filters = dict(sys.modules), sys.argv, warnings.filters
    a1, a2, b1, b1_new, c2 = (types.ModuleType(n) for n in ("pa", "pa", "pb", "pb", "pc"))
    main = types.ModuleType("__main__")
    r1, r2 = iso.RankContext(1, main, ["x"], 0, None), iso.RankContext(2, main, ["x"], 0, None)
    r1.modules.update(pa=a1, pb=b1)
    r2.modules.update(pa=a2)
    try:
        iso._private_names.update(("pa", "pb"))
        r1.switch_in()
        assert sys.modules["pa"] is a1 and sys.modules["pb"] is b1
        sys.modules["pb"] = b1_new  # the rank re-imports pb
        r1.switch_out()
        r2.switch_in()
        assert sys.modules["pa"] is a2 and "pb" not in sys.modules
        iso._private_names.add("pc")  # rank 2 imports a module that becomes per rank
        sys.modules["pc"] = c2
        r2.switch_out()
        assert r2.modules == {"pa": a2, "pc": c2}
        r1.switch_in()
        assert sys.modules["pa"] is a1 and sys.modules["pb"] is b1_new and "pc" not in sys.modules
        r1.switch_out()
        r2.switch_in()
        assert sys.modules["pc"] is c2 and "pb" not in sys.modules
        r2.switch_out()
        assert iso.state.ctx is None
        # nothing changed while the rank ran: its modules saved as they are
        r1.switch_in()
        r1.switch_out()
        assert r1.modules == {"pa": a1, "pb": b1_new}
        # the rank's own dict changed while it ran (not sys.modules): saved from sys.modules
        r1.switch_in()
        r1.modules["pa"] = a2
        r1.switch_out()
        assert r1.modules["pa"] is a1
        # the rank replaced a module of its own while it ran: kept
        r1.switch_in()
        a1_new = types.ModuleType("pa")
        sys.modules["pa"] = a1_new
        r1.switch_out()
        assert r1.modules == {"pa": a1_new, "pb": b1_new}
        # sys.modules changed and changed back while it ran: saved from it
        r2.switch_in()
        sys.modules["pa"] = a1
        sys.modules["pa"] = a2
        r2.modules["pc"] = a1
        r2.switch_out()
        assert r2.modules == {"pa": a2, "pc": c2}
    finally:
        iso._private_names.clear()
        iso._getter_cache[:] = [0, (), None]
        sys.modules.clear()
        sys.modules.update(saved)
        sys.argv, warnings.filters = argv, filters


@pytest.mark.slow
def test_numpy_random_patched_when_first_imported_if_computation_is_not_simulated() -> None:
    # smpi/simulate-computation:no: numpy.random is not imported for the run (start-up time
    # and 2.5 MB); the first rank that imports it finds its legacy functions per rank, with the
    # draws of the run that imported it up front, and they are restored after the run
    script = (
        "import sys, numpy, smpy\n"
        "legacy = None\n"
        f"res = smpy.run({str(PROGRAMS / 'isolation.py')!r}, np=3, args=['random', '5'], capture=True,\n"
        "              echo=False, cfg={'smpi/simulate-computation': 'no'})\n"
        "import numpy.random as npr\n"
        "print('restored', getattr(npr.rand, '__self__', None) is npr.mtrand._rand)\n"
        "print(res.stdout)\n"
    )
    proc = subprocess.run([sys.executable, "-c", "import sys, numpy; print('before', 'numpy.random' in sys.modules)"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["before", "False"]  # numpy does not import it: the case under test
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "restored True" in proc.stdout
    deferred = {ln.split(" numpy ")[0].split()[1]: ln.split(" numpy ")[1]
                for ln in proc.stdout.splitlines() if ln.startswith("rank ")}
    eager = run("isolation.py", 3, "random", "5", cfg=NO_COMPUTE)  # numpy.random imported here
    assert eager.status == "ok", eager.message
    assert deferred == {str(r): eager.rank_output(r).strip().split(" numpy ")[1] for r in range(3)}
    assert len(set(deferred.values())) == 3  # per rank


LOGGING_EXPECTED = sorted([  # what MPICH's mpiexec -n 3 prints (checked below when it is installed)
    "[rank 0] INFO app: starting", "[rank 0] WARNING app: value 0", "[rank 1] WARNING app: value 10",
    "[rank 2] WARNING app: value 20", "[rank 0] WARNING app: after disable",
    "[rank 0] ERROR app: an error", "[rank 1] ERROR app: an error", "[rank 2] ERROR app: an error", "an error",
    "[rank 0] ERROR libmod: libmod error from rank 0", "[rank 1] ERROR libmod: libmod error from rank 1",
    "[rank 2] ERROR libmod: libmod error from rank 2",
    "rank 0 root handlers 1 level INFO app handlers 0 libmod handlers 1",
    "rank 1 root handlers 1 level WARNING app handlers 0 libmod handlers 1",
    "rank 2 root handlers 1 level WARNING app handlers 1 libmod handlers 1"])


@pytest.mark.parametrize("shared", [True, False])
def test_logging_configuration_is_per_rank(shared: bool) -> None:
    """Each rank's basicConfig, levels, handlers and logging.disable are its own
    (smpy.shim.logs); a shared library's import-time setup holds for every rank. Before,
    rank 0's basicConfig format tagged every rank's records and each record was written once
    per rank."""
    cfg = ["--cfg=smpy/shared-modules:logging_libmod"] if shared else []
    p = smpyrun("-q", "-np", "3", *cfg, str(PROGRAMS / "logging_ranks.py"))
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == LOGGING_EXPECTED


def test_logging_per_rank_matches_mpich(tmp_path: Path) -> None:
    from realmpi import run_reference
    run_reference(3, str(PROGRAMS / "logging_ranks.py"), str(tmp_path), cwd=PROGRAMS)
    lines = [ln for r in range(3) for ln in (tmp_path / f"rank{r}.txt").read_text().splitlines()]
    assert sorted(lines) == LOGGING_EXPECTED


def test_logging_restored_after_run(tmp_path: Path) -> None:
    import logging
    prog = tmp_path / "log_prog.py"
    prog.write_text(
        "import logging\n"
        "from mpi4py import MPI\n"
        "r = MPI.COMM_WORLD.rank\n"
        "lg = logging.getLogger(f'smpy_test_made_by_rank_{r}')\n"
        "lg.setLevel(logging.DEBUG)\n"
        "logging.getLogger('smpy_test_shared').setLevel(10 + r)\n"
        "logging.disable(logging.CRITICAL)\n"
        "print(r, logging.getLogger('smpy_test_shared').level, logging.root.manager.disable)\n")
    shared = logging.getLogger("smpy_test_shared")
    before = (shared.level, list(logging.root.handlers), logging.root.level, logging.root.manager.disable)
    res = smpy.run(str(prog), np=2, capture=True)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == ["0 10 50", "1 11 50"]
    assert "level" not in vars(logging.Logger) and "_disable" not in vars(logging.Manager)
    assert (shared.level, list(logging.root.handlers), logging.root.level, logging.root.manager.disable) == before
    made = logging.getLogger("smpy_test_made_by_rank_1")
    assert (made.level, made.handlers, made.propagate, made.disabled) == (logging.NOTSET, [], True, False)
    assert "_smpy_ranks" not in vars(made)
