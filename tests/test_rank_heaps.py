"""Per-rank numpy heaps (smpy/shim/rankheap.py): a rank reuses the memory it freed, never
another rank's, so each rank pays the page faults its own process would."""

from pathlib import Path

import numpy as np
import pytest

import smpy
from smpy.shim.rankheap import load

PROG = Path(__file__).parent / "programs"
PAGES = (16 << 20) // 4096
heaps = load()
needs_heaps = pytest.mark.skipif(heaps is None, reason="no C compiler: per-rank heaps unavailable")


@needs_heaps
def test_each_rank_faults_its_own_memory_in_once():
    res = smpy.run(str(PROG / "rank_heaps.py"), np=3, cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    for r in range(3):
        words = res.rank_output(r).split()
        assert words[0] == "smpy_rank_heaps"
        first, *again = map(int, words[1:])
        # rank 1 and 2 run after rank 0 freed the same size: still fresh pages for them
        assert first >= 0.9 * PAGES, (r, words)
        assert all(n < 0.1 * PAGES for n in again), (r, words)


def test_off_leaves_numpys_allocator():
    res = smpy.run(str(PROG / "rank_heaps.py"), np=2,
                   cfg={"smpi/simulate-computation": "no", "smpy/rank-heaps": "no"})
    assert res.status == "ok", res.message
    assert res.rank_output(0).split()[0] == "default_allocator"


@needs_heaps
def test_blocks_go_back_to_the_rank_that_freed_them():
    prev = heaps.install()
    try:
        heaps.owner(0)
        a = np.empty(1 << 20)
        del a
        s0 = heaps.stats()
        heaps.owner(1)
        b = np.empty(1 << 20)  # rank 1: rank 0's free block is not its own
        s1 = heaps.stats()
        assert s1["rh_fresh"] == s0["rh_fresh"] + 1 and s1["rh_reused"] == s0["rh_reused"]
        heaps.owner(0)
        c = np.zeros(1 << 20)  # rank 0 again: its own block, zeroed
        s2 = heaps.stats()
        assert s2["rh_reused"] == s1["rh_reused"] + 1 and not c.any()
        c[:] = 7.0
        c.resize(1 << 21, refcheck=False)  # realloc: contents kept
        assert (c[: 1 << 20] == 7.0).all()
        del b, c
    finally:
        heaps.restore(prev)
        heaps.release()
    assert heaps.stats()["rh_cached"] == 0


@needs_heaps
def test_caps_bound_what_the_heaps_keep():
    prev = heaps.install()
    try:
        heaps.configure(owner_cap=4 << 20, total_cap=1 << 30, hugepage=False)
        heaps.owner(5)
        arrays = [np.empty(1 << 18) for _ in range(8)]  # 8 x 2 MiB
        del arrays
        assert heaps.stats()["rh_cached"] <= 4 << 20
        # over the total: freed blocks go to the shared list, which any rank reuses (the
        # shared allocator's behaviour, not fresh pages for everyone)
        heaps.configure(owner_cap=64 << 20, total_cap=0, hugepage=False)
        d = np.empty(3 << 17)  # 3 MiB: no block of rank 5's fits it
        del d
        heaps.owner(6)
        before = heaps.stats()
        e = np.empty(3 << 17)
        after = heaps.stats()
        assert after["rh_reused"] == before["rh_reused"] + 1 and after["rh_fresh"] == before["rh_fresh"]
        del e
    finally:
        heaps.configure(owner_cap=64 << 20, total_cap=1 << 30, hugepage=False)
        heaps.restore(prev)
        heaps.release()
