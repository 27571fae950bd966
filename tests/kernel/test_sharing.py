"""The shared-activity life (kernel/sharing.py): latency, share of a max-min system, release."""

import pytest

from smpy.kernel.activity import CANCELED
from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharedActivity, SharingModel
from smpy.lmm import System


class _Model(SharingModel):
    def __init__(self, engine: Engine, capacity: float) -> None:
        super().__init__(engine, System())
        self.c = self.system.constraint(capacity)
        engine.add_model(self)

    def start(self, amount: float, latency: float, rate_factor: float = 1.0) -> SharedActivity:
        a = SharedActivity(self, amount, uses=((self.c, 1.0),), rate_factor=rate_factor)
        a.start(latency)
        return a


def _ends(acts: list[SharedActivity]) -> list[float]:
    return [a.finish_time for a in acts]


def test_two_activities_share_then_the_survivor_speeds_up():
    # C = 100 units/s. a: 100 units, latency 0; b: 300 units, latency 1 s.
    # [0, 1): a alone at 100/s -> a done at t = 1 (its 100 units), b's bandwidth phase starts at 1
    # [1, 4): b alone at 100/s -> b done at 1 + 300/100 = 4
    e = Engine()
    m = _Model(e, 100.0)
    a, b = m.start(100.0, 0.0), m.start(300.0, 1.0)
    e.run()
    assert _ends([a, b]) == pytest.approx([1.0, 4.0])
    assert a.var is None and b.var is None and not m.c.vars  # released


def test_concurrent_shares_and_rate_factor():
    # C = 100. a: 100 units, b: 200 units, both at t = 0: x_a = x_b = 50.
    # a (rate factor 0.5) progresses at 25/s, b at 50/s. b done at 200/50 = 4 (a has 100 left
    # - 4*25 = 0 left too): both end at t = 4.
    # c: 100 units at factor 1 with a 0-unit twin d: d ends when its latency (0.5 s) does.
    e = Engine()
    m = _Model(e, 100.0)
    a, b = m.start(100.0, 0.0, rate_factor=0.5), m.start(200.0, 0.0)
    d = m.start(0.0, 0.5)
    e.run()
    assert _ends([a, b, d]) == pytest.approx([4.0, 4.0, 0.5])


def test_cancel_in_latency_and_bandwidth_phase_releases_the_share():
    # C = 100, a: 200 units, b: 200 units, both from t = 0: 50 each.
    # b is cancelled at t = 1 (150 left): a has 150 left, alone at 100/s -> ends at 2.5.
    # c is cancelled in its latency phase: never takes a share.
    e = Engine()
    m = _Model(e, 100.0)
    a, b = m.start(200.0, 0.0), m.start(200.0, 0.0)
    c = m.start(1000.0, 5.0)
    e.schedule(1.0, b.cancel)
    e.schedule(1.0, c.cancel)
    e.run()
    assert a.finish_time == pytest.approx(2.5)
    assert b.var is None and c.var is None and c.rate == 0.0
    assert b.state == CANCELED and b.finish_time == pytest.approx(1.0)
