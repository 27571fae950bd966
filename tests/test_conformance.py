"""A fast subset of mpi4py's own test suite: smpy gives the same per-test outcomes as MPICH.

The modules below run at N = 1 and 2 under real MPICH (the venv's ``mpiexec``) and under smpy
(all modules in one ``main.py`` run per backend and N); every test not listed in
``conformance/exclusions.txt`` must have the same outcome under both (passed / skipped /
failed ...). The full comparison is ``python conformance/run_suite.py`` (see
``conformance/README.md``). Skipped when the mpi4py sdist cannot be downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from realmpi import require_mpiexec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance import run_suite as rs  # noqa: E402

#: modules that mostly pass under smpy; their known failures are listed in exclusions.txt
MODULES = [
    "test_status",
    "test_p2p_obj",
    "test_request",
    "test_op",
    "test_errorcode",
    "test_cco_obj",
    "test_toplevel",
    "test_environ",
    "test_info",
    "test_msgzero",
    "test_cco_obj_inter",
    "test_file",
]
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def testdir() -> Path:
    require_mpiexec()
    try:
        return rs.fetch_suite()
    except Exception as e:  # noqa: BLE001 - offline, no pip ...
        pytest.skip(f"mpi4py's test suite is not available: {e}")


def _describe(tid: str, mine: rs.TestOutcome, ref: rs.TestOutcome) -> str:
    return f"{tid}: MPICH {ref.outcome}, smpy {mine.outcome}" + (f" ({mine.message})" if mine.message else "")


@pytest.mark.slow
@pytest.mark.parametrize("np", [1, 2])
def test_same_outcomes_as_mpich(testdir: Path, np: int, tmp_path: Path) -> None:
    exclusions = rs.load_exclusions()
    mods = [m for m in MODULES if (testdir / f"{m}.py").exists()]
    mpich = rs.run_mpich(testdir, mods, np, tmp_path, TIMEOUT_S, mpiexec=Path(require_mpiexec()))
    smpy = rs.run_smpy(testdir, mods, np, tmp_path, TIMEOUT_S, exclusions)
    assert mpich.completed, f"MPICH run {mpich.status}:\n{mpich.message}"
    assert smpy.completed, f"smpy run {smpy.status}:\n{smpy.message}"
    diffs, compared = [], 0
    for mod in mods:
        universe = rs.module_universe(mpich, mod)
        assert universe, f"MPICH reported no test of {mod}"
        ref = rs.combine(mpich, mod, universe)
        mine = rs.combine(smpy, mod, universe, exclusions)
        for tid, r in ref.tests.items():
            s = mine.tests[tid]
            if s.outcome == "excluded":
                continue
            compared += 1
            if rs.normalized(s.outcome) != rs.normalized(r.outcome):
                diffs.append(_describe(tid, s, r))
    assert compared > 0
    assert not diffs, f"{len(diffs)} of {compared} tests differ from MPICH at N={np}:\n" + "\n".join(diffs)


SAMPLE = """\
[0@node] MPI 4.1 (MPICH 4.3.0)
testA (test_x.TestX.testA) ... ok
testB (test_x.TestX.testB)
First line of B's docstring ... FAIL
testC (test_x.TestX.testC) ... some output of the test
ok
testD (test_x.TestX.testD) ... skipped 'no numba'
testE (test_x.TestX.testE) ... expected failure
testF (test_x.TestX.testF) ... \n\
  testF (test_x.TestX.testF) (kind='a') ... ERROR
  testF (test_x.TestX.testF) (kind='b') ... FAIL
testG (test_x.TestX.testG) ... ERROR

======================================================================
FAIL: testB (test_x.TestX.testB)
First line of B's docstring
----------------------------------------------------------------------
Traceback (most recent call last):
  File "test_x.py", line 3, in testB
    self.assertEqual(1, 2)
AssertionError: 1 != 2

======================================================================
ERROR: testF (test_x.TestX.testF) (kind='a')
----------------------------------------------------------------------
Traceback (most recent call last):
  File "test_x.py", line 9, in testF
    raise KeyError
KeyError

======================================================================
ERROR: testG (test_x.TestX.testG)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "test_x.py", line 12, in testG
    MPI.Win
AttributeError: module 'mpi4py.MPI' has no attribute 'Win'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "test_x.py", line 14, in testG
    raise RuntimeError("second")
RuntimeError: second
multi-line message

----------------------------------------------------------------------
Ran 7 tests in 0.010s

FAILED (failures=2, errors=2, skipped=1, expected failures=1)
"""


def test_parse_verbose_output() -> None:
    from conformance.parse import banner_library, parse_rank_output

    rep = parse_rank_output(SAMPLE)
    assert rep.completed and not rep.unfinished
    assert rep.outcomes == {
        "test_x.TestX.testA": "ok", "test_x.TestX.testB": "FAIL", "test_x.TestX.testC": "ok",
        "test_x.TestX.testD": "skipped", "test_x.TestX.testE": "expected failure",
        "test_x.TestX.testF": "ERROR", "test_x.TestX.testG": "ERROR",
    }
    assert rep.details["test_x.TestX.testD"] == "no numba"
    assert rep.messages["test_x.TestX.testB"] == "AssertionError: 1 != 2"
    assert rep.messages["test_x.TestX.testF"] == "KeyError"
    assert rep.messages["test_x.TestX.testG"] == "RuntimeError: second"
    assert banner_library(SAMPLE) == "MPI 4.1 (MPICH 4.3.0)"
    # a run that died in testC: no report, testC unfinished
    died = parse_rank_output(SAMPLE.split("some output")[0])
    assert not died.completed and died.unfinished == ["test_x.TestX.testC"]


def test_crashed_module_is_crash_for_every_test() -> None:
    from conformance.parse import parse_rank_output

    died = parse_rank_output(SAMPLE.split("some output")[0])
    run = rs.ModuleRun("smpy", 1, "deadlock", 0.1, [died],
                       "[smpy] DEADLOCK at simulated time 1 s: ...\n"
                       "[smpy]   rank 0 (host node-0): blocked in MPI_Recv(source=0)")
    bm = rs.combine(run, "test_x", {"test_x.TestX.testZ"})
    assert {t.outcome for t in bm.tests.values()} == {"crash"}
    assert "test_x.TestX.testZ" in bm.tests and bm.crash_at == ["test_x.TestX.testC"]
    assert bm.tests["test_x.TestX.testA"].message.startswith("deadlock: rank 0 (host node-0): blocked in MPI_Recv")


def test_exclusion_patterns_follow_main_py() -> None:
    x = rs.Exclusion("test_p2p_obj.*.testMixed", "r")
    assert x.matches("test_p2p_obj.TestP2PObjSelf.testMixed")
    assert not x.matches("test_p2p_obj.TestP2PObjSelf.testMixedMore")
    y = rs.Exclusion("TestX.testA", "r")  # no '*': a substring, as main.py's parse_pattern
    assert y.matches("test_x.TestX.testA") and y.matches("test_x.TestX.testAB")
    assert rs.Exclusion("backend=dlpack-array", "r").backend == "dlpack-array"
    assert not rs.Exclusion("backend=dlpack-array", "r").matches("backend=dlpack-array")
