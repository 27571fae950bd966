"""The compiled trim of folded page-table entries (smpy/timing/_foldaccel.c, ``_dontneed``)
against its Python reference: the same ranges lose their entries (the process's resident
shared pages fall by the same amount, the data stays), bad input raises, and whole folded runs
trim the same way. Skipped only when the accelerator cannot be built here."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from smpy.kernel import accel
from smpy.timing import folding
from smpy.timing.folding import Folder

MOD = accel.load()
pytestmark = [pytest.mark.skipif(MOD is None, reason=f"the accelerator cannot be built here: {accel.why()}"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="global folding is Linux's")]


def _resident_after_dontneed() -> list[int]:
    """Resident shared pages: touched, after dropping the first array's entries, after the second's."""
    f = Folder("global", 1 << 20, trim=1)
    a = f.array((512, 1024), np.float64, ("t", 1), None, 0)   # 4 MiB over the 1 MiB block
    b = f.array((256, 1024), np.float64, ("t", 2), None, 1)
    a[::64] = 1.0
    b[::64] = 2.0
    ma, mb = f._maps[0][0](), f._maps[1][0]()
    seen = [f._shared_bytes() // 4096]
    folding._dontneed(ma.folded)
    seen.append(f._shared_bytes() // 4096)
    folding._dontneed(mb.folded)
    seen.append(f._shared_bytes() // 4096)
    seen.append(int(a[64, 0] == 2.0 or a[64, 0] == 1.0))  # the data stays in the block
    f.close()
    return seen


def test_dontneed_drops_the_same_entries_both_ways():
    py = _resident_after_dontneed()
    assert accel.use(True)
    try:
        assert type(folding._dontneed).__name__ == "builtin_function_or_method"
        c = _resident_after_dontneed()
    finally:
        accel.use(False)
    assert type(folding._dontneed).__name__ == "function"
    assert py[0] > py[1] > py[2] and py[3] == 1, py
    assert [py[0] - py[1], py[1] - py[2], py[3]] == [c[0] - c[1], c[1] - c[2], c[3]]


def test_dontneed_rejects_bad_ranges_both_ways():
    """What Python's unpacking rejects is rejected the same way (the compiled function hands
    the rest of the list to the Python one from the first range that is not plain)."""
    got = {}
    for use in (False, True):
        assert accel.use(use) == use
        try:
            kinds = []
            for bad in ([(1, 2, 3)], 5, [(0, 0), [4096]], [(0, 0), (2 ** 70, 2 ** 70)], ((0, 0),)):
                try:
                    folding._dontneed(bad)
                    kinds.append(None)
                except Exception as exc:  # noqa: BLE001 - the kind is what is compared
                    kinds.append(type(exc).__name__)
            got[use] = kinds
        finally:
            accel.use(False)
    assert got[False] == got[True]
    assert got[False][:3] == ["ValueError", "TypeError", "ValueError"] and got[False][4] is None


def test_folded_run_trims_the_same_both_ways():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    lines = [subprocess.run([sys.executable, str(root / "benchmarks" / "speed" / "fold_identity.py"),
                             "--accel", mode], capture_output=True, text=True,
                            timeout=600).stdout.strip() for mode in ("off", "on")]
    assert lines[0].startswith("makespan") and " trims " in lines[0], lines
    assert int(lines[0].split(" trims ")[1].split()[0]) > 5, lines
    assert lines[0] == lines[1]
