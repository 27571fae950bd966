"""comp-adjustment files: the ``*`` entry is the ratio of the regions the file does not list."""

from __future__ import annotations

import csv
import textwrap
from pathlib import Path

import pytest

import smpy

PROG = """
import time
from mpi4py import MPI
def work(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
c = MPI.COMM_WORLD
for i in range(3):
    work(0.01)
    c.Barrier()          # line 11
    work(0.02)
    c.Barrier()          # line 13
"""


def _regions(tmp_path: Path, adjust_text: str) -> dict[str, list[str]]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROG))
    adjust = tmp_path / "adjust.csv"
    adjust.write_text(adjust_text)
    report = tmp_path / "regions.csv"
    res = smpy.run(str(prog), np=1, cfg={"smpi/comp-adjustment-file": str(adjust),
                                         "smpy/region-report": str(report)})
    assert res.status == "ok", res.message
    rows = list(csv.reader(report.open()))
    return {r[0]: r[1:5] for r in rows[1:]}


@pytest.mark.slow
def test_star_is_the_ratio_of_unlisted_regions(tmp_path: Path) -> None:
    rows = _regions(tmp_path, '"start:stop","ratio"\n"prog.py:11:prog.py:13",4\n"*",2\n')
    n, measured, simulated, ratio = rows["prog.py:11:prog.py:13"]
    assert float(ratio) == 4.0 and float(simulated) == pytest.approx(float(measured) / 4.0)
    n, measured, simulated, ratio = rows["prog.py:13:prog.py:11"]  # not listed: the "*" ratio
    assert float(ratio) == 2.0 and float(simulated) == pytest.approx(float(measured) / 2.0)


@pytest.mark.slow
def test_without_star_unlisted_regions_keep_ratio_one(tmp_path: Path) -> None:
    rows = _regions(tmp_path, '"start:stop","ratio"\n"prog.py:11:prog.py:13",4\n')
    n, measured, simulated, ratio = rows["prog.py:13:prog.py:11"]
    assert float(ratio) == 1.0 and float(simulated) == pytest.approx(float(measured))
