"""Failures at the kernel level (no MPI): a failed host kills exactly its actors at the failure
time, fails its executions and draws its off wattage; a failed link fails exactly the flows
crossing it."""

from __future__ import annotations

import pytest

from smpy.cpu.host import Host
from smpy.cpu.model import CpuModel
from smpy.energy import HostEnergy
from smpy.kernel import ActivityFailed, Engine, Sleep, block_on
from smpy.kernel.activity import DONE, FAILED
from smpy.kernel.actors import Actor, kill
from smpy.network.links import Link
from smpy.network.model import NetworkConfig, NetworkModel


def _hosts(n: int) -> list[Host]:
    return [Host(f"h{i}", 1, [1e9], index=i, properties={"wattage_per_state": "100:200",
                                                         "wattage_off": "10"}) for i in range(n)]


def test_host_failure_kills_exactly_its_actors_at_the_failure_time() -> None:
    eng = Engine()
    hosts = _hosts(3)
    cpu = CpuModel(eng, hosts)
    log: list[tuple[str, str, float]] = []

    def work(name: str, host: Host, flops: float) -> None:
        try:
            block_on(cpu.execute(host, flops))
            log.append((name, "done", eng.now))
        finally:
            log.append((name, "finally", eng.now))

    # h0 runs two actors (sharing its core), h1 one computing, h2 one sleeping
    actors = [Actor(eng, "a", work, ("a", hosts[0], 4e9), host=hosts[0]),
              Actor(eng, "b", work, ("b", hosts[0], 1e9), host=hosts[0]),
              Actor(eng, "c", work, ("c", hosts[1], 3e9), host=hosts[1])]
    for a in actors:
        a.start()
    eng.schedule(1.5, cpu.fail_host, hosts[0])
    eng.run()
    # a and b share h0's core: 0.5 Gf/s each; b's 1 Gf would finish at 2.0 s, after the failure
    assert [(a.name, a.killed, a.end_time) for a in actors] == [("a", True, 1.5), ("b", True, 1.5),
                                                                 ("c", False, 3.0)]
    assert sorted(log) == [("a", "finally", 1.5), ("b", "finally", 1.5), ("c", "done", 3.0), ("c", "finally", 3.0)]
    assert not hosts[0].is_on and hosts[1].is_on
    assert eng.now == 3.0


def test_failed_host_draws_its_off_wattage_and_kill_of_a_sleeper_does_not_prolong_the_run() -> None:
    eng = Engine()
    hosts = _hosts(2)
    cpu = CpuModel(eng, hosts)
    energy = HostEnergy(eng, cpu, hosts)
    sleeper = Actor(eng, "s", lambda: block_on(Sleep(eng, 100.0)), host=hosts[0]).start()
    other = Actor(eng, "o", lambda: block_on(Sleep(eng, 4.0)), host=hosts[1]).start()
    eng.schedule(2.0, cpu.fail_host, hosts[0])
    eng.run()
    assert sleeper.killed and sleeper.end_time == 2.0 and not other.killed
    assert eng.now == 4.0  # the killed actor's 100-s sleep was cancelled
    # h0: 2 s idle at 100 W then 2 s off at 10 W; h1: 4 s idle at 100 W
    assert energy.consumed(hosts[0]) == pytest.approx(2 * 100.0 + 2 * 10.0)
    assert energy.consumed(hosts[1]) == pytest.approx(4 * 100.0)


def test_kill_asked_by_another_actor_happens_at_the_same_time() -> None:
    eng = Engine()
    victim = Actor(eng, "v", lambda: block_on(Sleep(eng, 10.0)))

    def killer() -> None:
        block_on(Sleep(eng, 1.0))
        kill(victim)
        block_on(Sleep(eng, 1.0))

    victim.start()
    Actor(eng, "k", killer).start()
    eng.run()
    assert victim.killed and victim.end_time == 1.0 and eng.now == 2.0


def _net(eng: Engine) -> tuple[NetworkModel, dict[str, Link]]:
    links = {n: Link(n, 1e6, 0.0) for n in ("l1", "l2", "l3")}
    return NetworkModel(eng, list(links.values()), NetworkConfig(name="raw", weight_S=0.0, tcp_gamma=0.0,
                                                                 crosstraffic=False)), links


def test_link_failure_stops_exactly_the_flows_crossing_it() -> None:
    eng = Engine()
    net, ln = _net(eng)
    net.track_flows()
    # f1 over l1,l2 and f2 over l2,l3 share l2 (0.5 MB/s each); f3 over l3 alone until f2 fails
    routes = {"f1": (ln["l1"], ln["l2"]), "f2": (ln["l2"], ln["l3"]), "f3": (ln["l3"],), "f4": (ln["l1"],)}
    flows = {name: net.communicate(r, 2e6) for name, r in routes.items()}
    eng.schedule(1.0, net.fail_link, ln["l2"])
    late: list = []
    eng.schedule(1.5, lambda: late.append(net.communicate((ln["l1"], ln["l2"]), 1e3)))
    eng.run()
    assert {n: f.state for n, f in flows.items()} == {"f1": FAILED, "f2": FAILED, "f3": DONE, "f4": DONE}
    assert flows["f1"].finish_time == 1.0 and flows["f2"].finish_time == 1.0
    assert isinstance(flows["f1"].exception, ActivityFailed) and "l2" in str(flows["f1"].exception)
    # l1: f1 and f4 at 0.5 MB/s until 1 s (0.5 MB done), then f4 alone: 1.5 MB at 1 MB/s -> 2.5 s
    assert flows["f4"].finish_time == pytest.approx(2.5)
    # l3: f2 and f3 at 0.5 MB/s (f2 limited by l2) until 1 s, then f3 alone -> 2.5 s
    assert flows["f3"].finish_time == pytest.approx(2.5)
    assert late[0].state == FAILED and late[0].finish_time == 1.5  # a new flow over a failed link


def test_flow_in_its_latency_phase_fails_with_the_link() -> None:
    eng = Engine()
    slow = Link("slow", 1e6, 2.0)
    net = NetworkModel(eng, [slow], NetworkConfig(name="raw", weight_S=0.0, tcp_gamma=0.0, crosstraffic=False))
    net.track_flows()
    f = net.communicate((slow,), 1e3)
    eng.schedule(1.0, net.fail_link, slow)
    eng.run()
    assert f.state == FAILED and f.finish_time == 1.0 and eng.now == 1.0
