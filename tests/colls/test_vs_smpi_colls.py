"""Collectives against SimGrid SMPI (fast subset of benchmarks/vs_smpi/colls_run.py): the
same algorithm forced on both emulators gives the same simulated time.

Latency-bound and single-flow cases only, where smpy's network model already matches
SMPI's exactly; contention-heavy cases (large alltoall, 1 MiB allreduce) are reported by the
benchmark, not asserted. Skipped when SMPI (Debian's libsimgrid-dev) is not installed.
"""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "vs_smpi"))
import colls_run  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")

CASES = [("bcast", ["binomial_tree", "NTSB", "scatter_LR_allgather", "arrival_pattern_aware"]),
         ("allreduce", ["rdb", "lr", "rab"]), ("barrier", ["ompi_bruck", "ompi_tree"]), ("alltoall", ["pair"]),
         ("reduce", ["mvapich2", "impi", "rab", "arrival_pattern_aware"])]


@pytest.mark.slow
@pytest.mark.parametrize(("coll", "algos"), CASES, ids=[c for c, _ in CASES])
def test_forced_algorithms_match_smpi(coll, algos, monkeypatch):
    monkeypatch.setitem(colls_run.SIZES, coll, [8, 65536] if coll != "barrier" else [0])
    rows = colls_run.compare([8], [coll], algos, [], require=True, batch=True)
    assert len(rows) == len(algos) * len(colls_run.SIZES[coll])
    bad = [(case, ref, got) for case, _np, ref, got, err, *_ in rows if not abs(err) < 0.01]
    assert not bad, f"cases off by more than 1 % from SMPI: {bad}"
    wrong = [(case, note) for case, *_, note in rows if note]
    assert not wrong, f"results differ from the reference values: {wrong}"
