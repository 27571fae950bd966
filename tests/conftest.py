"""Test-suite policy shared by every directory.

Real-MPI reference runs (tests/realmpi.py): skipped only when no ``mpiexec`` exists; a reference
run that fails or times out fails the test. Tiers: ``@pytest.mark.slow`` marks the long ones
(the collective matrix, CLI subprocesses, differential runs against MPICH and SMPI);
``pytest -m "not slow"`` is the quick tier, CI runs everything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/realmpi.py for every directory

import realmpi  # noqa: E402


@pytest.fixture
def class_path_taken(monkeypatch):  # type: ignore[no-untyped-def]
    """A list that gets, for every component the max-min solver fills from here on, whether
    it took the class path (``smpy.lmm.maxmin._component_classes`` found classes)."""
    from smpy.lmm import maxmin

    taken: list[bool] = []
    orig = maxmin._component_classes

    def spy(*a):  # type: ignore[no-untyped-def]
        r = orig(*a)
        taken.append(r is not None)
        return r
    monkeypatch.setattr(maxmin, "_component_classes", spy)
    return taken


@pytest.fixture
def reference_run():  # type: ignore[no-untyped-def]
    """:func:`realmpi.run_reference`, after skipping the test when there is no mpiexec."""
    realmpi.require_mpiexec()
    return realmpi.run_reference


#: tests added by parallel work before they carried their own marker, in the long tier: whole
#: files (a site build, subprocess-per-case and differential suites), or single tests (nodeid
#: prefixes). New long tests mark themselves with ``@pytest.mark.slow`` instead.
SLOW_FILES = {"test_docs_build.py", "test_predict_dask.py", "test_corpus.py", "test_fuzz.py",
              "test_blocking.py", "test_imports.py", "test_calibrate_node.py", "test_hostile_corpus.py"}
SLOW_TESTS = ("tests/test_failures.py::test_success_probability_converges_to_the_analytic_value",
              "tests/test_failures.py::test_predict_with_failure_seeds_reports_reliability",
              "tests/test_failures.py::test_cli_fail_json_records_a_failed_run",
              "tests/platform/test_limits.py::test_a_large_file_written_out_is_not_an_amplification")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if item.path.name in SLOW_FILES or item.nodeid.startswith(SLOW_TESTS):
            item.add_marker(slow)
