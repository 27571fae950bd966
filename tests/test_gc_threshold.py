"""The cyclic collector during a run (smpy.cli.launch._young_gc_only): young collections every
YOUNG_GC_THRESHOLD (100 000) net allocations, objects of the set-up frozen, everything as it
was afterwards."""

from __future__ import annotations

import gc

import smpy
from smpy.cli import launch


def test_young_threshold_during_a_run_and_restored(tmp_path):
    prog = tmp_path / "gc_probe.py"
    prog.write_text("import gc\nprint(gc.get_threshold()[0], gc.isenabled(), gc.get_freeze_count() > 0)\n")
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    res = smpy.run(str(prog), np=2, capture=True, echo=False)
    assert res.status == "ok", res.message
    assert launch.YOUNG_GC_THRESHOLD == 100_000
    per_rank: dict[int, str] = {}
    for rank, stream, text in res.output:
        if stream == "stdout":
            per_rank[rank] = per_rank.get(rank, "") + text
    lines = [" ".join(per_rank[r].split()) for r in sorted(per_rank)]
    assert lines == [f"{max(before[0][0], 100_000)} True True"] * 2, lines
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before
