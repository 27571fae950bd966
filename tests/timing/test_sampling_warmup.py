"""smpy.sample / smpy.sampled ``warmup``: one-off first-iteration costs are not extrapolated."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import smpy
from smpy.timing.sampling import SampleStats

BUSY = """
import time
def work(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
"""

LOOP = """
from mpi4py import MPI
import smpy
ran = 0
for i in smpy.sample(range(50), iters=3, threshold=-1, warmup={warmup}):
    work(0.1 if ran == 0 else 0.01)     # the first iteration pays a one-off cost
    ran += 1
print(ran, repr(MPI.Wtime()))
"""


def _run(tmp_path: Path, body: str, estimator: str = "mser") -> list[str]:
    prog = tmp_path / "prog.py"
    prog.write_text(BUSY + textwrap.dedent(body))
    res = smpy.run(str(prog), np=1, cfg={"smpy/sample-estimator": estimator})
    assert res.status == "ok", res.message
    return res.stdout.split()


@pytest.mark.slow
def test_warmup_iteration_is_injected_once_not_extrapolated(tmp_path: Path) -> None:
    ran, t = _run(tmp_path, LOOP.format(warmup=1))
    assert int(ran) == 4  # 1 warm-up + 3 samples
    assert float(t) == pytest.approx(0.1 + 49 * 0.01, rel=0.25)


@pytest.mark.slow
def test_smpi_mean_without_warmup_the_first_iteration_inflates_the_mean(tmp_path: Path) -> None:
    ran, t = _run(tmp_path, LOOP.format(warmup=0), estimator="mean")
    assert int(ran) == 3
    assert float(t) == pytest.approx((0.1 + 2 * 0.01) / 3 * 50, rel=0.25)


@pytest.mark.slow
def test_mser_drops_the_cold_first_iteration_without_warmup(tmp_path: Path) -> None:
    # samples 0.1, 0.01, 0.01: MSER drops the first; it is injected once, as it ran
    ran, t = _run(tmp_path, LOOP.format(warmup=0))
    assert int(ran) == 3
    assert float(t) == pytest.approx(0.1 + 49 * 0.01, rel=0.25)


TRANSIENT = """
from mpi4py import MPI
import smpy
cost = [0.05, 0.04, 0.03, 0.02] + [0.01] * 100   # a start-up transient over 4 iterations
ran = 0
for i in smpy.sample(range(100), iters=12, threshold=0.02):
    work(cost[ran])
    ran += 1
print(ran, repr(MPI.Wtime()))
"""


@pytest.mark.slow
def test_mser_removes_a_transient_smpi_mean_extrapolates_it(tmp_path: Path) -> None:
    exact = 0.05 + 0.04 + 0.03 + 0.02 + 96 * 0.01  # 1.10 s: every iteration run
    ran, t = _run(tmp_path, TRANSIENT)
    assert float(t) == pytest.approx(exact, rel=0.1)
    assert int(ran) >= 6  # the transient alone never stops the sampling
    ran_mean, t_mean = _run(tmp_path, TRANSIENT, estimator="mean")
    assert float(t_mean) > 1.3 * exact  # SMPI's estimate keeps the cold iterations


@pytest.mark.slow
def test_sampled_function_with_warmup(tmp_path: Path) -> None:
    out = _run(tmp_path, """
from mpi4py import MPI
import smpy
calls = []
@smpy.sampled(iters=2, threshold=-1, warmup=1)
def kernel(x):
    work(0.08 if not calls else 0.01)
    calls.append(x)
    return x
res = [kernel(i) for i in range(20)]
print(len(calls), res[-1], repr(MPI.Wtime()))
""")
    assert out[:2] == ["3", "2"]  # 1 warm-up + 2 samples ran; later calls return the last result
    assert float(out[2]) == pytest.approx(0.08 + 19 * 0.01, rel=0.25)


def test_stats_warmup_bookkeeping_and_errors() -> None:
    st = SampleStats(iters=2, threshold=-1, warmup=2)
    assert st.warming() and st.need_more()
    st.warmed = 2
    assert not st.warming() and st.need_more()
    st.add(1.0)
    st.add(1.0)
    assert not st.need_more()
    with pytest.raises(ValueError, match="warmup"):
        SampleStats(iters=2, threshold=-1, warmup=-1)


def test_site_settings_must_not_change(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
    import smpy
    for w in (0, 1):
        for i in smpy.sample(range(5), iters=2, warmup=w):
            pass
    """))
    res = smpy.run(str(prog), np=1)
    assert res.status != "ok"
    assert "warmup" in res.message


def test_mser_truncation_rule() -> None:
    from smpy.timing.sampling import mser_truncation, transient

    assert mser_truncation([1.0, 1.0, 1.0, 1.0]) == 0  # stationary: nothing dropped
    assert mser_truncation([1.0, 1.1, 0.9, 1.05, 0.95, 1.0]) == 3  # MSER truncates noise...
    assert transient([1.0, 1.1, 0.9, 1.05, 0.95, 1.0]) == 0  # ...which is not a transient
    assert transient([5.0, 3.0, 2.0, 1.0, 1.0, 1.01, 0.99, 1.0, 1.0, 1.0]) == 3
    assert transient([9.0, 1.0]) == 1  # at most half
    st = SampleStats(iters=10, threshold=0.05, mser=True)
    st.add(0.786)
    st.add(0.787)  # two cold samples that agree: not enough with MSER
    assert st.need_more()
    smpi = SampleStats(iters=10, threshold=0.05)
    smpi.add(0.786)
    smpi.add(0.787)
    assert not smpi.need_more()  # SMPI stops here
