"""Page faults on folded memory are the emulator's time: every fault that maps folded pages in
a timed span (a burst, a sampled iteration), first touch or after a trim, leaves the span at
the calibrated cost per fault; faults on private memory stay (smpy/timing/folding.py)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from smpy.timing.folding import Folder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="global folding needs Linux mmap")


def test_only_faults_that_mapped_folded_pages_are_left_out() -> None:
    f = Folder("global", 1 << 20)
    f.refault_cost, f.refault_pages = 2e-6, 16
    assert f.fault_seconds(100, 0) == 0.0          # private faults only (a fresh temporary)
    assert f.fault_seconds(100, -40) == 0.0        # an array unmapped meanwhile
    assert f.fault_seconds(100, 1600) == pytest.approx(100 * 2e-6)
    assert f.fault_seconds(100, 160) == pytest.approx(10 * 2e-6)   # 90 private among 100
    assert f.fault_seconds(5, 1600) == pytest.approx(5 * 2e-6)     # never more than the faults
    assert f.fault_seconds(3, 17) == pytest.approx(2 * 2e-6)       # 17 pages: two fault-arounds
    assert f.excluded_faults == 117
    assert f.excluded_s == pytest.approx(117 * 2e-6)
    assert Folder("local", 1 << 20).counting is False
    assert Folder("no", 1 << 20).counting is False


PROG = """
import numpy as np
import smpy
from mpi4py import MPI

c = MPI.COMM_WORLD


def count():
    # the run's folder counts for every rank: read it while no rank is computing
    c.Barrier()
    n = smpy._sim().world.timing._folder.excluded_faults
    c.Barrier()
    return n


a = smpy.shared_array(64 * 2**20 // 8)     # 64 MiB of folded float64
e0 = count()
a[::8192] += 1.0                           # one element per 64 KiB: 1024 first touches
e1 = count()
b = np.ones(2**24)                         # 128 MiB of private memory, touched
b[::512] += 1.0
e2 = count()
s = smpy.shared_array(64 * 2**20 // 8)
e3 = count()
for i in smpy.sample(range(4), iters=10, threshold=0.0):
    s[i * 2**21:(i + 1) * 2**21:8192] += 1.0   # 256 first touches per iteration
e4 = count()
folder = smpy._sim().world.timing._folder
if c.rank == 0:
    print(repr((e1 - e0, e2 - e1, e4 - e3, folder.refault_pages, folder.refault_cost, folder.restoring)))
"""


@pytest.mark.parametrize("trim", ["0", "32MiB"])
def test_first_touches_and_sampled_iterations_count_their_folded_faults(tmp_path: Path, trim: str) -> None:
    import smpy

    prog = tmp_path / "touch.py"
    prog.write_text(PROG)
    res = smpy.run(str(prog), np=2, capture=True, echo=False,
                   cfg={"smpy/shared-malloc-trim": trim, "smpi/shared-malloc-blocksize": "64MiB"})
    assert res.status == "ok", res.message
    out = eval(res.stdout.strip().splitlines()[-1])  # noqa: S307 - our own program's repr
    burst, private, sampled, pages, cost, restoring = out
    assert pages >= 1 and cost > 0.0
    # each rank's burst touched 1024 windows of its array: 1024 folded faults a rank (both
    # ranks' arrays map the same block; page-table entries are per mapping). The earlier
    # model left first touches in (none left out here without a trim)
    assert 2048 <= burst <= 2200, out
    assert private <= 32, out      # faults on private memory stay in the burst
    if restoring:  # the rank's folded pages were mapped before its sampled iterations ran
        assert sampled <= 16, out
    else:          # Linux < 5.14: their first touches are estimated and left out
        assert 2048 <= sampled <= 2200, out


def _chunk(folder: Folder, A: np.ndarray, L: np.ndarray, U: np.ndarray, x: int) -> tuple[float, float]:
    """(thread CPU seconds, the folder's correction) of one column chunk of HPL's update."""
    mark = folder.mark()
    t0 = time.thread_time()
    A[:, x:x + 128] -= L @ U[:, x:x + 128]
    dt = time.thread_time() - t0
    return dt, folder.fault_seconds_since(mark)


def _trimmed_chunks() -> tuple[list[float], list[float], list[float], list[int]]:
    """Seven chunks of HPL's update, each timed on mapped memory, then again after a trim:
    (mapped, raw, corrected times, faults left out)."""
    folder = Folder("global", 64 << 20, 32 << 20)
    m, n = 16384, 4096
    rng = np.random.default_rng(0)
    L, U = rng.random((m, 128)), rng.random((128, n))
    A = folder.array((m, n), np.float64, ("test", 1), None)
    A.fill(0.5)
    mapped, raw, corrected, faulted = [], [], [], []
    for r in range(7):
        x = r * 128
        A[:, x:x + 128] += 0.0
        mapped.append(_chunk(folder, A, L, U, x)[0])
        folder.trim()
        before = folder.excluded_faults
        dt, corr = _chunk(folder, A, L, U, x)
        raw.append(dt)
        corrected.append(dt - corr)
        faulted.append(folder.excluded_faults - before)
    return mapped, raw, corrected, faulted


@pytest.mark.slow
def test_corrected_chunk_on_trimmed_folded_memory_times_like_mapped_memory() -> None:
    # the shape of a rank's matrix at N = 16384 on a 1 x 4 grid: rows 32 KiB apart, one
    # fault per two rows of a 128-column chunk after a trim: the faults cost about as much
    # as the chunk's computation. Ratios of medians, generous bounds: the earlier model
    # (the whole time of a fault after a cache eviction, 1.5-2.5 times the cost in such a
    # burst) brought the chunk to 0.2-0.6 of its time on mapped memory. These are real CPU
    # times on a shared machine: another process on the same core moves the chunks and the
    # calibrated fault cost apart (0.57 of the mapped time seen once, with a benchmark on the
    # other core), so the whole measurement is made up to three times and one must fall
    # within the bounds; a model off by the earlier one's factor misses them all three times
    tries = []
    for _ in range(3):
        mapped, raw, corrected, faulted = _trimmed_chunks()
        base = statistics.median(mapped)
        assert min(faulted) >= 16384 // 4  # the trim made it fault (one fault per two rows)
        ratios = (statistics.median(raw) / base, statistics.median(corrected) / base)
        tries.append(ratios)
        if ratios[0] > 1.25 and 0.65 < ratios[1] < 1.5:
            return
    pytest.fail(f"(raw, corrected) / mapped medians out of bounds in three tries: {tries}")
