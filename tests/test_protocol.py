"""SMPI's point-to-point protocol costs: send/receive overheads and polling injections.

Platform: the bundled cluster (10 Gbps = 1.25e9 B/s, 50 us private links, 100 Gbps / 0 us
backbone); ``network/model:raw`` so that a message costs exactly latency + size/bandwidth.
"""

import pickle
from pathlib import Path

import pytest

import smpy

PROG = Path(__file__).parent / "programs"
RAW = {"network/model": "raw", "smpi/simulate-computation": "no", "smpi/wtime": "0"}
LAT = 2 * 50e-6  # up + down private links, backbone latency 0
BW = 10e9 / 8  # bottleneck: a private link (the backbone is 10x wider)


def _arrival(cfg):
    res = smpy.run(str(PROG / "proto_pingpong.py"), np=2, cfg={**RAW, **cfg})
    assert res.status == "ok", res.message
    return float(res.rank_output(1).split()[1])


def test_plain_message_cost():
    # 4 payload bytes + 16 bytes of envelope
    assert _arrival({}) == pytest.approx(LAT + 20 / BW, rel=1e-9)


def test_send_and_receive_overheads_add_up():
    # os is slept before the (detached) send is posted; or after the receive completes
    t = _arrival({"smpi/os": "0:2e-6:1e-9", "smpi/or": "0:1e-6:0"})
    assert t == pytest.approx(LAT + 20 / BW + (2e-6 + 4 * 1e-9) + 1e-6, rel=1e-9)


def test_isend_overhead_not_used_by_blocking_send():
    assert _arrival({"smpi/ois": "0:5e-6:0"}) == pytest.approx(LAT + 20 / BW, rel=1e-9)


@pytest.mark.parametrize("mode", ["iprobe", "test"])
def test_polling_advances_time_linearly_growing(mode):
    # The k-th consecutive unsuccessful poll costs k x 1e-4 s (smpi/test, smpi/iprobe), so
    # after k polls the clock reads 1e-4 k (k + 1) / 2. Rank 1 posts its send at t = 1 s.
    # Iprobe sees the envelope as soon as it is posted; the transfer starts only when the
    # receive matches it. Test succeeds once the data arrived at 1 s + latency + size/bw.
    res = smpy.run(str(PROG / "proto_poll.py"), np=2, args=[mode], cfg=RAW)
    assert res.status == "ok", res.message
    words = res.rank_output(0).split()
    polls, t = int(words[1]), float(words[3])
    transfer = LAT + (len(pickle.dumps("x", pickle.HIGHEST_PROTOCOL)) + 16) / BW
    ready = 1.0 if mode == "iprobe" else 1.0 + transfer
    k = 1
    while 1e-4 * k * (k + 1) / 2 < ready:
        k += 1
    assert polls == k - 1
    polled = 1e-4 * k * (k + 1) / 2
    assert t == pytest.approx(polled + transfer if mode == "iprobe" else polled, rel=1e-9)


@pytest.mark.parametrize(("sees", "mode", "misses"), [
    ("posted", "plain", 0),   # SMPI: a probe sees every message posted so far
    ("polled", "plain", 1),   # MPICH: the message arrived while the rank computed
    ("polled", "poll", 0),    # ... unless a progress poll (a probe of another tag) came between
    ("polled", "barrier", 0),  # ... or a call that waited (the barrier), after the send
])
def test_what_a_probe_sees(sees, mode, misses):
    cfg = {**RAW, "smpy/probe-sees": sees, "smpi/iprobe": "1e-6", "smpi/grow-injected-times": "no"}
    res = smpy.run(str(PROG / "probe_seen.py"), np=2, args=[mode], cfg=cfg)
    assert res.status == "ok", res.message
    assert res.rank_output(0).split() == ["misses", str(misses)]
