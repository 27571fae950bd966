"""smpy.sample ``work=``: statistics per unit of work, shared by loops of different sizes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import smpy

BUSY = """
import time
def work(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
"""


def _run(tmp_path: Path, body: str) -> list[str]:
    prog = tmp_path / "prog.py"
    prog.write_text(BUSY + textwrap.dedent(body))
    res = smpy.run(str(prog), np=1, capture=True, echo=False)
    assert res.status == "ok", res.message
    return res.stdout.split()


def test_work_scales_the_injected_time_across_loop_sizes(tmp_path: Path) -> None:
    # an iteration of size u costs 10 ms x u; the site samples 3 iterations of the first
    # loop (sizes 1, 2, 3), then the second loop (sizes 4..9) runs nothing
    ran, t = _run(tmp_path, """
        from mpi4py import MPI
        import smpy
        ran = 0
        for lo, hi in ((1, 4), (4, 10)):
            for u in smpy.sample(range(lo, hi), iters=3, threshold=-1, scope="global", work=lambda u: u):
                work(0.01 * u)
                ran += 1
        print(ran, repr(MPI.Wtime()))
    """)
    assert int(ran) == 3
    assert float(t) == pytest.approx(0.01 * sum(range(1, 10)), rel=0.2)


def test_constant_work_and_the_plain_mean_differ(tmp_path: Path) -> None:
    # same loops without a work model: the mean iteration (20 ms) is extrapolated to all 9
    ran, t = _run(tmp_path, """
        from mpi4py import MPI
        import smpy
        ran = 0
        for lo, hi in ((1, 4), (4, 10)):
            for u in smpy.sample(range(lo, hi), iters=3, threshold=-1, scope="global"):
                work(0.01 * u)
                ran += 1
        print(ran, repr(MPI.Wtime()))
    """)
    assert int(ran) == 3
    assert float(t) == pytest.approx(0.02 * 9, rel=0.2)


def test_scalar_work_per_visit(tmp_path: Path) -> None:
    # one iteration per visit whose work is given as a number (a kernel of size m)
    ran, t = _run(tmp_path, """
        from mpi4py import MPI
        import smpy
        ran = 0
        for m in (1, 2, 4, 8):
            for _ in smpy.sample(range(1), iters=2, threshold=-1, scope="global", work=m):
                work(0.01 * m)
                ran += 1
        print(ran, repr(MPI.Wtime()))
    """)
    assert int(ran) == 2
    assert float(t) == pytest.approx(0.01 * 15, rel=0.2)


def test_site_used_with_and_without_work_is_an_error(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import smpy
        for w in (None, 2.0):
            for _ in smpy.sample(range(3), iters=1, threshold=-1, scope="global", tag="x", work=w):
                pass
    """))
    res = smpy.run(str(prog), np=1, capture=True, echo=False)
    assert res.status != "ok" and "different settings" in res.message


def test_bad_work_is_an_error(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text("import smpy\nfor _ in smpy.sample(range(3), work=-1.0):\n    pass\n")
    res = smpy.run(str(prog), np=1, capture=True, echo=False)
    assert res.status != "ok" and "work must be positive" in res.message


def test_printing_inside_a_sampled_loop(tmp_path: Path) -> None:
    # output (a numpy warning, a debugging print) is not an MPI call: the loop goes on
    out = _run(tmp_path, """
        import smpy
        for i in smpy.sample(range(5), iters=2, threshold=-1):
            print("it", i)
    """)
    assert out == ["it", "0", "it", "1"]


def test_work_outside_smpyrun_runs_everything() -> None:
    assert list(smpy.sample(range(4), iters=1, work=lambda i: i + 1)) == [0, 1, 2, 3]
