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
def reference_run():  # type: ignore[no-untyped-def]
    """:func:`realmpi.run_reference`, after skipping the test when there is no mpiexec."""
    realmpi.require_mpiexec()
    return realmpi.run_reference
