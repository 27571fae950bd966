"""smpy.sample's warm-up per visit (smpy/sample-warmup:visit) against the warm-up per site.

The loop body advances a fake thread clock by a cost that depends on the iteration's position
in its visit (a cold start: 3, 2, then 1 s per item), so every figure is exact.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from smpy.timing import sampling
from smpy.timing.sampling import SampleStats, sample_loop

COLD = (3.0, 2.0)  # the first two items of every visit; the others cost 1 s


class FakeTiming:
    count_faults = False

    def __init__(self) -> None:
        self.injected: list[float] = []

    def flush(self, proc: object) -> None:
        pass

    def faults_now(self) -> tuple[int, int]:
        return (0, 0)

    def inject_measured(self, proc: object, seconds: float) -> None:
        self.injected.append(seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [0.0]
    monkeypatch.setattr(sampling, "_thread_time", lambda: now[0])
    return now


def _stats(mode: str, warmup: int = 2, iters: int = 3, work: bool = False) -> SampleStats:
    st = SampleStats(iters, -1.0, warmup, per_work=work)
    if mode == "visit" and warmup:
        st.visit_heads()
    return st


def _visit(proc: SimpleNamespace, st: SampleStats, clock: list[float], n: int,
           work=None) -> int:
    """One visit of n items; returns how many ran."""
    ran = 0
    for pos, _ in enumerate(sample_loop(proc, list(range(n)), "site", st, work)):
        u = 1.0 if work is None else work(pos)
        clock[0] += (COLD[pos] if pos < len(COLD) else 1.0) * u
        ran += 1
    return ran


def _proc() -> SimpleNamespace:
    return SimpleNamespace(world=SimpleNamespace(timing=FakeTiming()), bench=SimpleNamespace(sampling=None))


def test_visit_warmup_keeps_every_visits_cold_start(clock: list[float]) -> None:
    proc, st = _proc(), _stats("visit")
    ran = [_visit(proc, st, clock, 10) for _ in range(5)]
    # visit 1: 2 head items + 3 steady samples; visits 2-3: the heads still need samples;
    # then nothing runs
    assert ran == [5, 2, 2, 0, 0]
    # every visit costs what it would have run in full: 3 + 2 + 8 x 1
    assert proc.world.timing.injected == [13.0] * 5


def test_site_warmup_extrapolates_the_steady_rate_to_cold_starts(clock: list[float]) -> None:
    proc, st = _proc(), _stats("site")
    ran = [_visit(proc, st, clock, 10) for _ in range(3)]
    assert ran == [5, 0, 0]  # the warm-up once, then 3 samples
    assert proc.world.timing.injected == [13.0, 10.0, 10.0]  # later cold starts are lost


def test_visit_warmup_with_short_visits_and_work(clock: list[float]) -> None:
    proc, st = _proc(), _stats("visit", work=True)
    work = lambda pos: 2.0  # noqa: E731 - 2 units per item: 6, 4, then 2 s
    assert _visit(proc, st, clock, 1, work) == 1  # only head 0
    assert proc.world.timing.injected == [6.0]
    assert _visit(proc, st, clock, 6, work) == 5  # heads 0-1 and the steady samples
    assert _visit(proc, st, clock, 6, work) == 2
    assert _visit(proc, st, clock, 6, work) == 2
    assert _visit(proc, st, clock, 6, work) == 0
    assert proc.world.timing.injected[1:] == [6.0 + 4.0 + 4 * 2.0] * 4
    assert _visit(proc, st, clock, 1, work) == 0  # a one-item visit: head 0's estimate
    assert proc.world.timing.injected[-1] == 6.0


def test_visit_left_early_injects_the_iterations_completed(clock: list[float]) -> None:
    # as with the site rule, the iteration the caller breaks out of is not timed
    proc, st = _proc(), _stats("visit")
    for pos, _ in enumerate(sample_loop(proc, list(range(10)), "site", st)):
        clock[0] += COLD[pos] if pos < len(COLD) else 1.0
        if pos == 2:
            break
    assert proc.world.timing.injected == [5.0]


def test_without_warmup_the_visit_mode_is_smpis_rule(clock: list[float]) -> None:
    for mode in ("visit", "site"):
        proc, st = _proc(), _stats(mode, warmup=0)
        assert st.heads is None
        ran = [_visit(proc, st, clock, 10) for _ in range(2)]
        # SMPI: 3 samples (3, 2, 1: mean 2) extrapolated to the whole loop, then 20 per visit
        assert ran == [3, 0]
        assert proc.world.timing.injected == [20.0, 20.0]


def test_the_setting_is_declared_with_visit_by_default() -> None:
    assert sampling.WARMUP_MODE.default == "visit"
    assert set(sampling.WARMUP_MODE.choices) == {"visit", "site"}


@pytest.mark.parametrize("mode", ["visit", "site"])
def test_stats_for_follows_the_setting(mode: str) -> None:
    values = {sampling.ESTIMATOR: "mser", sampling.WARMUP_MODE: mode}
    timing = SimpleNamespace(samples={}, config=SimpleNamespace(get=values.__getitem__))
    proc = SimpleNamespace(world=SimpleNamespace(timing=timing), rank=0)
    st = sampling.stats_for(proc, "k", 3, -1.0, 2)
    assert (st.heads is not None) == (mode == "visit")
    assert sampling.stats_for(proc, "k0", 3, -1.0, 0).heads is None  # SMPI's rule
    # a smpy.sampled function: each call is a visit of one item, the warm-up is per site
    assert sampling.stats_for(proc, "f", 3, -1.0, 2, visits=False).heads is None
