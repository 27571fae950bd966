"""Segmented fit: recovers known breakpoints and factors from synthetic ping-pong data."""

import numpy as np
import pytest

from smpy.calibrate.fit import predict, segmented_fit, to_factors


def _truth(s):
    # eager below 16 KiB: 2 us + s / 5 GB/s ; rendezvous above: 8 us + s / 10 GB/s
    return np.where(s < 16384, 2e-6 + s / 5e9, 8e-6 + s / 10e9)


def test_recovers_two_protocols():
    rng = np.random.default_rng(1)
    sizes = np.repeat(2.0 ** np.arange(0, 24), 5)
    times = _truth(sizes) * (1 + 0.01 * rng.standard_normal(sizes.size))
    segs = segmented_fit(sizes, times)
    assert len(segs) == 2
    assert segs[1].start == 16384
    assert segs[0].a == pytest.approx(2e-6, rel=0.05)
    assert segs[1].bandwidth == pytest.approx(10e9, rel=0.05)
    for s in (1, 1000, 100000, 1e7):
        assert predict(segs, s) == pytest.approx(float(_truth(np.array(s))), rel=0.05)


def test_factor_strings_against_nominal_link():
    segs = segmented_fit(np.array([1, 2, 4, 8, 16.0]), 1e-5 + np.array([1, 2, 4, 8, 16.0]) / 1e9)
    lat, bw = to_factors(segs, latency_s=5e-6, bandwidth_Bps=2e9)
    assert lat == "0:2" and bw == "0:0.5"
