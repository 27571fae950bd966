"""The network's fast paths for many concurrent flows (issue 18) leave every simulated date
unchanged: tests/programs/windows.py (osu_bw/osu_bibw-like windows, flows starting and
ending at distinct dates) prints the same completion dates, bit for bit, with them on and off,
and with the compiled solver (smpy/lmm/_lmmaccel.c, which has no class path)."""

from pathlib import Path

import pytest

import smpy
from smpy.lmm import maxmin

PROGRAM = Path(__file__).parent / "programs" / "windows.py"
CFG = {"smpi/simulate-computation": "no", "smpy/accel": "off"}  # the Python solver's paths


def _run(np_: int, accel: str = "off") -> tuple[float, str]:
    res = smpy.run(str(PROGRAM), np=np_, args=["24"], capture=True, cfg={**CFG, "smpy/accel": accel})
    assert res.status == "ok", res.message
    return res.makespan_s, "".join(text for _, _, text in res.output)


@pytest.mark.parametrize("np_", [2, 4, 8])
def test_class_path_keeps_every_date(np_, monkeypatch, class_path_taken):
    taken = class_path_taken
    fast = _run(np_)
    assert sum(taken) > 100  # the windows do go through the class path
    monkeypatch.setattr(maxmin, "_CLASS_MIN", 1 << 30)
    general = _run(np_)
    assert fast == general
    assert len(fast[1].splitlines()) == 4 * np_


@pytest.mark.parametrize("np_", [2, 8])
def test_compiled_solver_keeps_every_date(np_):
    assert _run(np_, "auto") == _run(np_, "off")
