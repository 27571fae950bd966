"""The kernel alone: clock, heap order, actors, activities, deadlock detection (no MPI)."""

import math

import pytest

from smpy.cpu.host import Host
from smpy.cpu.model import CpuModel
from smpy.kernel import Actor, DeadlockError, Engine, Sleep, block_on, block_on_any
from smpy.kernel.activity import Trigger
from smpy.network.links import Link, Sharing
from smpy.network.model import NetworkConfig, NetworkModel


def test_events_run_in_time_then_fifo_order():
    eng = Engine()
    seen = []
    eng.schedule(2.0, seen.append, "b")
    eng.schedule(1.0, seen.append, "a1")
    eng.schedule(1.0, seen.append, "a2")
    eng.schedule(0.0, seen.append, "z")
    eng.run()
    assert seen == ["z", "a1", "a2", "b"]
    assert eng.now == 2.0


def test_cancelled_event_is_dropped():
    eng = Engine()
    seen = []
    ev = eng.schedule(1.0, seen.append, "x")
    eng.schedule(3.0, seen.append, "y")
    ev.cancelled = True
    eng.run()
    assert seen == ["y"] and eng.now == 3.0


def test_actors_sleep_and_interleave():
    eng = Engine()
    log = []

    def body(name, dt):
        for _ in range(2):
            block_on(Sleep(eng, dt))
            log.append((eng.now, name))

    Actor(eng, "a", body, ("a", 1.0)).start()
    Actor(eng, "b", body, ("b", 1.5)).start()
    eng.run()
    assert log == [(1.0, "a"), (1.5, "b"), (2.0, "a"), (3.0, "b")]


def test_block_on_any_returns_first_done():
    eng = Engine()
    out = []

    def body():
        acts = [Sleep(eng, 3.0), Sleep(eng, 1.0), Sleep(eng, 2.0)]
        out.append((block_on_any(acts), eng.now))

    Actor(eng, "a", body).start()
    eng.run()
    assert out == [(1, 1.0)]


def test_deadlock_is_reported_with_waits():
    eng = Engine()
    t = Trigger(eng, "waiting for godot")

    def body():
        block_on(t)

    Actor(eng, "lonely", body).start()
    with pytest.raises(DeadlockError) as ei:
        eng.run()
    assert "lonely: waiting for godot" in str(ei.value)
    assert len(ei.value.blocked) == 1


def test_actor_exception_aborts_engine():
    eng = Engine()

    def bad():
        block_on(Sleep(eng, 1.0))
        raise ValueError("boom")

    def good():
        block_on(Sleep(eng, 5.0))

    Actor(eng, "bad", bad).start()
    Actor(eng, "good", good).start()
    eng.run()
    assert isinstance(eng.abort_reason, ValueError)
    assert eng.aborting_actor.name == "bad"
    assert eng.now == 1.0


def test_cpu_sharing_on_cores():
    # Host with 2 cores at 100 flop/s. Three executions of 100 flops start together:
    # each runs at 2*100/3 flop/s, so all end at t = 1.5 s.
    eng = Engine()
    h = Host("h", cores=2, speeds_flops=[100.0], index=0)
    cpu = CpuModel(eng, [h])
    ends = []

    def body():
        block_on(cpu.execute(h, 100.0))
        ends.append(eng.now)

    for i in range(3):
        Actor(eng, f"e{i}", body).start()
    eng.run()
    assert ends == pytest.approx([1.5, 1.5, 1.5])


def test_cpu_rate_changes_when_one_finishes():
    # 1 core at 10 flop/s: A = 10 flops, B = 30 flops. Both at 5 flop/s until A ends at
    # t = 2 (B has 20 left), then B alone at 10 flop/s: ends at t = 4.
    eng = Engine()
    h = Host("h", cores=1, speeds_flops=[10.0], index=0)
    cpu = CpuModel(eng, [h])
    ends = {}

    def body(name, f):
        block_on(cpu.execute(h, f))
        ends[name] = eng.now

    Actor(eng, "A", body, ("A", 10.0)).start()
    Actor(eng, "B", body, ("B", 30.0)).start()
    eng.run()
    assert ends["A"] == pytest.approx(2.0) and ends["B"] == pytest.approx(4.0)


def _raw_net(eng, links):
    cfg = NetworkConfig(name="raw", weight_S=0.0, tcp_gamma=0.0)
    return NetworkModel(eng, links, cfg)


def test_flow_latency_plus_size_over_bandwidth():
    eng = Engine()
    link = Link("l", 1e6, 1e-3, Sharing.SHARED)
    net = _raw_net(eng, [link])
    f = net.communicate((link,), 1e6)
    eng.run()
    assert f.done and f.finish_time == pytest.approx(1e-3 + 1.0)


def test_two_flows_share_then_speed_up():
    # 1 MB/s link, no latency: flows of 1 MB and 3 MB. Shared 0.5 MB/s each until the
    # small one ends at t = 2 (big has 2 MB left), then 1 MB/s: ends at t = 4.
    eng = Engine()
    link = Link("l", 1e6, 0.0, Sharing.SHARED)
    net = _raw_net(eng, [link])
    a = net.communicate((link,), 1e6)
    b = net.communicate((link,), 3e6)
    eng.run()
    assert a.finish_time == pytest.approx(2.0) and b.finish_time == pytest.approx(4.0)


def test_fatpipe_does_not_share():
    eng = Engine()
    link = Link("bb", 1e6, 0.0, Sharing.FATPIPE)
    net = _raw_net(eng, [link])
    flows = [net.communicate((link,), 1e6) for _ in range(4)]
    eng.run()
    assert all(f.finish_time == pytest.approx(1.0) for f in flows)


def test_bandwidth_factor_and_tcp_gamma():
    eng = Engine()
    link = Link("l", 1e6, 0.5, Sharing.SHARED)
    cfg = NetworkConfig(name="t", bw_factor=lambda s: 0.5, lat_factor=lambda s: 2.0, weight_S=0.0,
                        tcp_gamma=0.0)
    net = NetworkModel(eng, [link], cfg)
    f = net.communicate((link,), 1e6)
    eng.run()
    # latency 2 x 0.5 s, then 1e6 B at 0.5 x 1e6 B/s
    assert f.finish_time == pytest.approx(1.0 + 2.0)
    eng2 = Engine()
    link2 = Link("l", 1e9, 0.5, Sharing.SHARED)
    net2 = NetworkModel(eng2, [link2], NetworkConfig(name="g", weight_S=0.0, tcp_gamma=1e6))
    g = net2.communicate((link2,), 1e6)
    eng2.run()
    # window bound: 1e6 / (2 x 0.5) = 1e6 B/s
    assert g.finish_time == pytest.approx(0.5 + 1.0)


def test_daemon_events_never_keep_the_simulation_alive():
    eng = Engine()
    ticks = []

    def tick():
        ticks.append(eng.now)
        eng.schedule_daemon(0.3, tick)

    eng.schedule_daemon(0.3, tick)
    eng.schedule(1.0, lambda: None)
    eng.run()
    assert eng.now == 1.0  # the clock stops with the last regular event
    assert ticks == pytest.approx([0.3, 0.6, 0.9])


def test_daemon_events_alone_do_not_run():
    eng = Engine()
    seen = []
    eng.schedule_daemon(0.5, seen.append, "x")
    eng.run()
    assert seen == [] and eng.now == 0.0


def test_daemon_events_run_after_the_regular_events_of_their_date():
    eng = Engine()
    seen = []
    eng.schedule(1.0, seen.append, "r1")
    eng.schedule_daemon(1.0, seen.append, "d")
    eng.schedule(1.0, seen.append, "r2")
    eng.schedule(2.0, seen.append, "end")
    eng.run()
    assert seen == ["r1", "r2", "d", "end"]


def _cpu_ends(force_general: bool, bounded: bool) -> tuple[list[tuple[str, float]], list[tuple[float, float]]]:
    """End times and load reports of staggered executions on a 3-core host (more executions
    than cores part of the time), with the equal-share path or the general one."""
    eng = Engine()
    h = Host("h", cores=3, speeds_flops=[100.0], index=0)
    cpu = CpuModel(eng, [h])
    if force_general:  # the general sharing: as if an execution had a memory-bound part
        h.model_data.special += 1
        h.model_data.memory += 1
    ends, loads = [], []
    cpu.on_load_change.connect(lambda host, busy: loads.append((eng.now, busy)))

    def body(name, start, flops, bound):
        block_on(Sleep(eng, start))
        block_on(cpu.execute(h, flops, bound=bound))
        ends.append((name, eng.now))

    jobs = [(0.0, 100.0), (0.1, 70.0), (0.1, 250.0), (0.3, 40.0), (0.35, 90.0), (0.5, 10.0)]
    for i, (start, flops) in enumerate(jobs):
        bound = 30.0 if bounded and i == 2 else math.inf
        Actor(eng, f"e{i}", body, (f"e{i}", start, flops, bound)).start()
    eng.run()
    assert h.model_data.special == (1 if force_general else 0)
    return ends, loads


def test_cpu_equal_shares_path_gives_the_general_sharing_bit_for_bit(monkeypatch):
    # no bound and no memory-bound part: CpuModel._equal, exactly the general water-filling's
    # values (the same end times and load reports, compared exactly)
    calls = []
    orig = CpuModel._equal
    monkeypatch.setattr(CpuModel, "_equal", staticmethod(lambda *a: calls.append(1) or orig(*a)))
    fast = _cpu_ends(False, False)
    assert len(calls) > 5  # the equal-share path ran (two or more executions at a time)
    n = len(calls)
    general = _cpu_ends(True, False)
    assert len(calls) == n  # and the general one did not take it
    assert fast == general
    assert [n for n, _ in fast[0]] != sorted(n for n, _ in fast[0])  # the sharing changed the order
    # a bounded execution counts (and leaves) as special: the general path then, same results
    assert _cpu_ends(False, True)[0] != fast[0]
