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


# -- the engine's and the solver's counters (smpy/kernel/_accel.c, smpy/lmm/_lmmaccel.c) --------

def _engine_counting(rounds, events, solves, hold=False):
    """An engine that runs 3 rounds of 2 events from the given counter starts (fresh objects,
    held only by the engine and the system unless ``hold``), one solve per event."""
    from smpy.lmm.maxmin import System

    e, s = Engine(), System()
    e.rounds, e.events_processed, s.solves = int(str(rounds)), int(str(events)), int(str(solves))
    held = (e.rounds, e.events_processed, s.solves) if hold else None
    ids = (id(e.rounds), id(e.events_processed), id(s.solves))
    cons = s.constraint(1.0)

    def step():
        v = s.variable(uses=[(cons, 1.0)])
        s.solve()
        s.remove(v)

    for t in (1.0, 2.0, 3.0):
        e.schedule(t, step)
        e.schedule(t, step)
    e.run()
    same = (id(e.rounds) == ids[0], id(e.events_processed) == ids[1], id(s.solves) == ids[2])
    return (e.rounds, e.events_processed, s.solves, held, [type(x).__name__ for x in (e.rounds, e.events_processed,
                                                                                        s.solves)]), same


# counter starts: small ints, the last small int, beyond them, one digit's end, two digits, negative
COUNTER_STARTS = [(0, 0, 0), (255, 256, 250), (1000, 2000, 3000), (2**30 - 2, 2**30 - 4, 2**30 - 1),
                  (2**40, 2**62, -5), (-300, -2, 7)]


@pytest.mark.parametrize("start", COUNTER_STARTS)
@pytest.mark.parametrize("hold", [False, True])
def test_engine_and_solver_counters_match_python(start, hold):
    (py, _), (c, same) = _both(lambda: _engine_counting(*start, hold=hold))
    assert py == c
    assert py[:3] == (start[0] + 3, start[1] + 6, start[2] + 6)
    if hold:  # the values held elsewhere kept theirs
        assert py[3] == tuple(start)


def test_engine_and_solver_counters_change_in_place_when_only_they_hold_them():
    """Fresh one-digit ints beyond the small ones, held by the engine or the system alone:
    the compiled loop and solve keep the same objects (no int made per event, round or
    solve); a counter held elsewhere gets a new object as ``+=`` (one digit's end: the values of
    the test above)."""
    (_, py_same), (_, c_same) = _both(lambda: _engine_counting(1000, 2000, 3000))
    assert py_same == (False, False, False)
    assert c_same == (True, True, True)
    (_, c_held) = _both(lambda: _engine_counting(1000, 2000, 3000, hold=True))[1]
    assert c_held == (False, False, False)


def test_mpi_call_counts_match_python():
    """Each rank's ``mpi_calls`` (incremented in place by the compiled ``@mpicall`` wrapper
    when only the rank holds the count) counts past the small ints the same both ways."""
    from pathlib import Path

    import smpy

    root = Path(__file__).resolve().parent.parent
    outs = []
    for mode in ("off", "on"):
        res = smpy.run(str(root / "benchmarks" / "speed" / "twins.py"), np=3, capture=True, args=["ring", "200"],
                       platform=str(root / "examples" / "platforms" / "cluster64.yaml"),
                       cfg={"smpi/simulate-computation": "no", "smpy/accel": mode})
        assert res.status == "ok", res.message
        outs.append((res.mpi_calls, [r.mpi_calls for r in res.ranks], repr(res.makespan_s), res.stdout))
    assert outs[0] == outs[1]
    assert outs[0][1] == [402, 401, 401]  # Send and Recv per lap, Wtime twice on rank 0, Get_rank, Get_size
