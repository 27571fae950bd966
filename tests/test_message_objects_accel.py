"""The per-message objects of the compiled path (issue 24, item 1; docs/performance.md,
"Objects per message") against the Python reference: World.transfer's counters incremented
in place when their slot holds the only reference (smpy/runtime/_worldaccel.c), the same values
and types as Python's ``+=``, and a counter someone else holds never changed under them.

Skipped only when the accelerator cannot be built here.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from smpy.kernel.engine import Engine
from smpy.network.links import Link
from smpy.network.model import NAMED_MODELS, NetworkConfig, NetworkModel
from smpy.support.piecewise import Piecewise
from tests.accel_twins import both as _both
from tests.accel_twins import needs_accel

pytestmark = needs_accel



def _config() -> NetworkConfig:
    lat, bw, S, gamma = NAMED_MODELS["SMPI"]
    return NetworkConfig(name="SMPI", lat_factor=Piecewise.parse_factors(lat), bw_factor=Piecewise.parse_factors(bw),
                         weight_S=S, tcp_gamma=gamma)


def _world(e, messages, bytes_sent):
    """A World with just what transfer reads (as tests/kernel/test_netaccel.py's)."""
    from smpy.runtime.world import World

    links = [Link(f"l{i}", 1e9, 1e-6) for i in range(2)]
    hosts = [SimpleNamespace(index=i, name=f"h{i}") for i in range(2)]
    w = World.__new__(World)
    w.messages, w.bytes_sent, w._route_cache = messages, bytes_sent, {}
    w.platform = SimpleNamespace(route=lambda a, b: [links[a.index], links[b.index]])
    w.net = NetworkModel(e, links, _config())
    return w, hosts


# start values: small ints, a fresh int beyond the small ones, one digit's end (2**30 - 1 is
# the last one-digit int), two digits, negative, floats (a fresh one and a shared constant)
STARTS = [(0, 0.0), (250, 1.5), (int("1000"), float("2.5")), (2**30 - 3, 2.0**53 - 2), (2**40, -7.25),
          (-300, 1e308), (int("-5"), 0.1)]
SIZES = [1, 8, 100000, 2**31, 0.5, 3, 2**1100]


@pytest.mark.parametrize("start", STARTS)
def test_transfer_counters_match_python(start):
    def go():
        e = Engine()
        w, hosts = _world(e, int(str(start[0])), float(repr(start[1])))  # fresh objects, held only by w
        seen = []
        for n in SIZES:
            try:
                w.transfer(hosts[0], hosts[1], n)
            except OverflowError as exc:  # float + 2**1100
                seen.append(("OverflowError", str(exc)))
            seen.append((w.messages, type(w.messages).__name__, repr(w.bytes_sent), type(w.bytes_sent).__name__))
        e.run()
        return seen

    py, c = _both(go)
    assert py == c
    assert py[0][0] == start[0] + 1


def test_a_held_counter_is_not_changed():
    """A counter value someone else holds (a reference taken before the message) keeps its
    value; the World's counter moves on as Python's ``+=`` moves it."""
    def go():
        e = Engine()
        w, hosts = _world(e, int("1000"), float("10.5"))
        w.transfer(hosts[0], hosts[1], 8)
        m0, b0 = w.messages, w.bytes_sent  # held here
        w.transfer(hosts[0], hosts[1], 8)
        w.transfer(hosts[0], hosts[1], 8)
        held = (m0, b0)
        out = (held, w.messages, w.bytes_sent, w.messages is m0, w.bytes_sent is b0)
        e.run()
        return out

    py, c = _both(go)
    assert py == c == (((1001, 18.5), 1003, 34.5, False, False))


def test_counters_are_changed_in_place_when_only_the_world_holds_them():
    """The compiled transfer keeps the same counter objects (no new int or float per message)
    once they are fresh objects beyond the small ints; the Python one makes new ones."""
    def go():
        e = Engine()
        w, hosts = _world(e, int("1000"), float("10.5"))
        w.transfer(hosts[0], hosts[1], 8)
        ids = (id(w.messages), id(w.bytes_sent))
        refs = (sys.getrefcount(w.messages), sys.getrefcount(w.bytes_sent))
        w.transfer(hosts[0], hosts[1], 8)
        same = (id(w.messages) == ids[0], id(w.bytes_sent) == ids[1])
        e.run()
        return refs, same, w.messages, w.bytes_sent

    py, c = _both(go)
    assert py[2:] == c[2:] == (1002, 26.5)
    assert c[0] == (2, 2) and c[1] == (True, True)  # the slot's reference and getrefcount's


def test_counters_through_a_property_take_the_protocol():
    """A World subclass whose counter is a property: its setter sees every value, both ways."""
    from smpy.runtime.world import World

    class Counted(World):
        __slots__ = ("log",)

        @property
        def messages(self):
            return self.log[-1]

        @messages.setter
        def messages(self, v):
            self.log.append(v)

    def go():
        e = Engine()
        links = [Link("l0", 1e9, 1e-6)]
        hosts = [SimpleNamespace(index=0, name="h0"), SimpleNamespace(index=1, name="h1")]
        w = Counted.__new__(Counted)
        w.log = [int("999")]
        w.bytes_sent, w._route_cache = float("1.0"), {}
        w.platform = SimpleNamespace(route=lambda a, b: [links[0]])
        w.net = NetworkModel(e, links, _config())
        for _ in range(3):
            w.transfer(hosts[0], hosts[1], 4)
        e.run()
        return w.log, w.bytes_sent

    py, c = _both(go)
    assert py == c == ([999, 1000, 1001, 1002], 13.0)
