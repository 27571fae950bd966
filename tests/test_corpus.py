"""Programs and packages written by others, under smpy as under MPICH (fast subsets).

* a representative subset of mpi4py 4.1.2's ``demo/`` directory (the sdist the conformance
  suite uses): same exit status and same normalised output under ``smpyrun`` and ``mpiexec``
  (``conformance/run_demos.py`` runs all of it);
* two files of PyLops-MPI's pytest suite under ``smpyrun -np 2 -m pytest`` and
  ``mpiexec -n 2 python -m pytest``: the same outcome per test and rank
  (``conformance/run_pytest_suite.py`` runs all 519 tests).

Skipped without the venv's ``mpiexec``, or when the sdists cannot be fetched (offline).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance import run_demos as rd  # noqa: E402
from conformance import run_pytest_suite as rp  # noqa: E402
from conformance import run_suite as rs  # noqa: E402

#: one of each kind: point-to-point and collectives, RMA, spawn, threads, mpi4py.futures
#: (as a pool and as ``-m mpi4py.futures``), a unittest suite, a module-level ``-c``,
#: ``mpi4py.rc`` and its environment variables
DEMOS = [
    ".: np5 helloworld.py",
    "compute-pi: np2 cpi-cco.py",
    "compute-pi: np1 cpi-dpm.py 2",
    "futures: np1 run_cpi.py",
    "futures: np5 -m mpi4py.futures run_cpi.py",
    "futures: np2 test_futures.py",
    "nxtval: np5 nxtval-threads.py",
    "nxtval: np5 nxtval-onesided.py",
    "reductions: np2 test_reductions.py -q",
    "spawning: np1 cpi-master-py cpi-worker-py",
    "mpi-ref-v1: np2 ex-2.16.py",
    "check-mpiexec: np2 -c from mpi4py import MPI",
    "profiling: np8 ring.py",
    "init-fini: np2 test_0.py errors=default",
    "init-fini: np2 test_1.py",
    "init-fini: np2 test_3.py",
    "init-fini: np2 test_5.py",
    "init-fini: np2 test_6.py",
]
TIMEOUT_S = 120.0


def _need_mpiexec() -> None:
    if not (rs.BIN / "mpiexec").exists():
        pytest.skip(f"no mpiexec next to {sys.executable} (install the 'mpich' wheel)")


@pytest.fixture(scope="module")
def demo_work(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, rd.Demo], dict[str, Path]]:
    _need_mpiexec()
    try:
        root = rs.fetch_suite().parent / "demo"
    except Exception as e:  # noqa: BLE001 - offline, no pip ...
        pytest.skip(f"the mpi4py sdist is not available: {e}")
    base = tmp_path_factory.mktemp("demos")
    work = {b: rd._prepare(root, base / b) for b in ("mpich", "smpy")}
    return {d.id: d for d in rd.demos(root)}, work


@pytest.mark.parametrize("demo_id", DEMOS)
def test_demo_same_as_mpich(demo_work: tuple[dict[str, rd.Demo], dict[str, Path]], demo_id: str,
                            tmp_path: Path) -> None:
    demos, work = demo_work
    d = demos[demo_id]
    assert not d.skip and d.argv
    cm, cs = rd.commands(d, tmp_path / "out")
    env = rd._env(d.env)
    mpich = rd.run_one(cm, work["mpich"] / d.folder, d.stdin, env, TIMEOUT_S, tmp_path / "out")
    smpy = rd.run_one(cs, work["smpy"] / d.folder, d.stdin, env, TIMEOUT_S)
    # the reference must have worked (some demos print nothing: then the exit status is compared)
    assert mpich.status == "ok", f"MPICH run {mpich.status}: {mpich.stderr[-1000:]}"
    diff = rd.compare(mpich, smpy)
    assert not diff, f"{diff}\nsmpy stderr:\n{smpy.stderr[-2000:]}"


def test_demo_manifest_lists_every_skip_with_a_reason() -> None:
    root = Path("/nonexistent")  # the manifest needs the folder only for the osu_*/ex-* globs
    runs = rd.demos(root)
    assert all(d.skip for d in runs if not d.argv)
    reasons = {d.skip for d in runs if d.skip}
    assert reasons and all(any(w in r for w in ("compiler", "CUDA", "internet", "name service")) for r in reasons)


PYTEST_FILES = ["tests/test_blockdiag.py", "tests/test_stack.py"]


def test_pytest_suite_same_outcomes_as_mpich(tmp_path: Path) -> None:
    _need_mpiexec()
    try:
        src, site = rp.fetch()
    except Exception as e:  # noqa: BLE001 - offline, no pip ...
        pytest.skip(f"PyLops-MPI's sdist or its dependencies are not available: {e}")
    args = rp.pytest_args(PYTEST_FILES, "")
    m_ranks, m_info = rp.run_mpich(src, site, 2, args, 600.0, tmp_path)
    s_ranks, s_info = rp.run_smpy(src, site, 2, args, 600.0, tmp_path)
    mpich, smpy = rp.outcomes(m_ranks), rp.outcomes(s_ranks)
    assert len(mpich) == 40, f"MPICH: {m_info}"  # 20 tests, each on both ranks
    same, total, diff = rp.compare(mpich, smpy)
    assert not diff, f"{same}/{total} the same; {diff[:10]}; smpy: {s_info}"


def test_per_test_table_lines_up_the_ranks_of_each_test() -> None:
    m = {"tests/t.py::a[Rank 0]": "PASSED", "tests/t.py::a[Rank 1]": "PASSED",
         "tests/t.py::b[x][Rank 0]": "PASSED", "tests/t.py::b[x][Rank 1]": "FAILED", "tests/u.py::c@0": "SKIPPED"}
    s = {"tests/t.py::a[Rank 0]": "PASSED", "tests/t.py::a[Rank 1]": "PASSED",
         "tests/t.py::b[x][Rank 0]": "PASSED", "tests/t.py::b[x][Rank 1]": "PASSED"}
    assert rp.per_test_table(m, s) == [
        "same  MPICH PP    smpy PP    tests/t.py::a",
        "DIFF  MPICH PF    smpy PP    tests/t.py::b[x]",
        "DIFF  MPICH S     smpy -     tests/u.py::c",
    ]
    assert rp.test_files(rp.CACHE / "nowhere") == []


def test_verdicts_are_read_after_another_ranks_progress_marks() -> None:
    # smpy's ranks share one standard error: rank 0's last "." and rank 1's "OK" can meet
    one = ".\n----\nRan 2 tests in 0.1s\n\nOK\n"
    met = ".\n----\nRan 2 tests in 0.1s\n\n.OK\n\n----\nRan 2 tests in 0.2s\n\nOK\n"
    assert rd.verdicts(one + one) == rd.verdicts(met) == ["OK", "OK", "Ran 2 tests", "Ran 2 tests"]
    assert rd.verdicts("sF.E.FAILED (failures=1)\n") == ["FAILED (failures=1)"]
    assert rd.verdicts("NOT OK\n") == []
