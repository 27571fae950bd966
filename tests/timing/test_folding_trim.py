"""Trimming folded mappings (``smpy/shared-malloc-trim``) drops the page-table entries of the
other ranks only, at a switch between ranks, so that a rank computing across MPI calls that
do not block takes no fault again on pages it mapped; and the resident shared pages are read
from /proc/self/statm only when a fault or an unmap may have changed them
(smpy/timing/folding.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from smpy.timing.folding import Folder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="global folding needs Linux mmap")

PAGE = 4096


def test_switch_trims_the_other_ranks_and_map_rank_restores_a_ranks_pages() -> None:
    f = Folder("global", 1 << 20, 1 << 20)
    a = f.array(8 << 20, np.uint8, ("t", 1), None, owner=0)
    b = f.array(8 << 20, np.uint8, ("t", 2), None, owner=1)
    assert f.switch(0) is False          # the first rank: nothing else ran
    a[::PAGE] = 1
    _, p0 = f.mark()
    assert f.switch(0) is False          # the same rank again: never a trim
    assert f.mark()[1] == p0
    assert f.switch(1) is True           # 8 MiB of rank 0's entries > 1 MiB: dropped
    _, p1 = f.mark()
    assert p0 - p1 >= (8 << 20) // PAGE - 64
    b[::PAGE] = 2
    _, p2 = f.mark()
    assert p2 - p1 >= (8 << 20) // PAGE - 64
    assert f.switch(1) is False
    assert f.switch(0) is True           # rank 1's go
    assert f.trims == 2
    _, p3 = f.mark()
    assert p2 - p3 >= (8 << 20) // PAGE - 64
    if not f.restoring:                  # Linux < 5.14
        return
    f.map_rank(0)                        # before rank 0's sampled iterations
    f0, p4 = f.mark()
    assert p4 - p3 >= (8 << 20) // PAGE - 64 and f.restored_bytes == 8 << 20
    a[::PAGE] = 3                        # the entries are there: no fault
    assert f.mark()[0] - f0 <= 4
    f.map_rank(0)                        # all there already: nothing to do
    assert f.restored_bytes == 8 << 20
    assert f.switch(1) is True
    f.map_rank(0)                        # trimmed meanwhile: mapped again
    assert f.restored_bytes == 16 << 20
    f.close()


def test_mark_reads_statm_only_after_a_fault_an_unmap_or_a_trim() -> None:
    f = Folder("global", 1 << 20, 1 << 20)
    a = f.array(4 << 20, np.uint8, ("t", 1), None, owner=0)
    # no fault since a mark: the same pages, and no statm read. The interpreter may take a
    # stray minor fault of its own between two marks (an allocation touching a fresh page):
    # then the count moved and the mark read statm, as it must; try again, a few times
    for _attempt in range(5):
        f0, p0 = f.mark()
        reads, saved = f.statm_reads, f.statm_saved
        marks = [f.mark() for _ in range(10)]
        if all(m[0] == f0 for m in marks):
            break
    assert marks == [(f0, p0)] * 10
    assert f.statm_reads == reads and f.statm_saved >= saved + 10
    a[::PAGE] = 1                        # faults: the next mark reads
    f1, p1 = f.mark()
    assert f1 > f0 and p1 >= p0 + (4 << 20) // PAGE - 64
    assert f.statm_reads == reads + 1
    f.trim()                             # the entries go without a fault: forgotten
    _, p2 = f.mark()
    assert p2 <= p1 - (4 << 20) // PAGE + 64
    a[::PAGE] = 2
    _, p3 = f.mark()
    del a                                # unmapped: the pages go without a fault
    import gc

    gc.collect()
    _, p4 = f.mark()
    assert p4 <= p3 - (4 << 20) // PAGE + 64
    f.close()


PROG = """
import smpy
from mpi4py import MPI

c = MPI.COMM_WORLD


def count():
    c.Barrier()
    n = smpy._sim().world.timing._folder.excluded_faults
    c.Barrier()
    return n


a = smpy.shared_array(32 * 2**20 // 8)     # 32 MiB of folded float64 a rank
e0 = count()
if c.rank == 0:
    for _ in range(10):                    # MPI calls that do not block: rank 0 runs on
        a[::512] += 1.0                    # every page, re-touched after each call
        c.Iprobe(source=1)
e1 = count()
a[::512] += 1.0                            # after the other rank ran: its trim re-faults mine
e2 = count()
for _ in range(4):                         # sampled loops after the other rank's trim
    for i in smpy.sample(range(4), iters=10, threshold=0.0):
        a[i::512] += 1.0
    c.Barrier()
e3 = count()
folder = smpy._sim().world.timing._folder
if c.rank == 0:
    print(repr((e1 - e0, e2 - e1, e3 - e2, folder.trims, folder.restoring)))
"""


@pytest.mark.parametrize("trim", ["1MiB"])
def test_a_running_rank_keeps_its_pages_and_sampled_iterations_find_them_mapped(tmp_path: Path, trim: str) -> None:
    import smpy

    prog = tmp_path / "keep.py"
    prog.write_text(PROG)
    res = smpy.run(str(prog), np=2, capture=True, echo=False,
                   cfg={"smpy/shared-malloc-trim": trim, "smpi/shared-malloc-blocksize": "64MiB"})
    assert res.status == "ok", res.message
    loop, after, sampled, trims, restoring = eval(res.stdout.strip().splitlines()[-1])  # noqa: S307
    first = 32 * 2**20 // PAGE // 16  # first touches of a rank's 8192 pages (fault-around: 16)
    # rank 0's ten rounds across calls that do not block fault once or twice: its first
    # touches, and once more if the other rank ran and trimmed meanwhile (trimming every
    # other call, as before, re-faulted them in every round: 5121)
    assert 0.9 * first <= loop <= 2.2 * first, (loop, after, sampled, trims)
    assert trims >= 2
    # rank 1's first touches, and rank 0's re-faults: its pages went while rank 1 ran
    assert after >= 1.8 * first, (loop, after, sampled, trims)
    if restoring:
        # sampled iterations find every folded page of their rank mapped (8 loops, each
        # after the other rank's trim): no fault to estimate (before: 8 x 512)
        assert sampled <= 64, (loop, after, sampled, trims)
    else:
        assert sampled >= 6 * first, (loop, after, sampled, trims)
