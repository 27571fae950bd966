"""Routing (smpy.network.routing): star clusters and declared/shortest-path routes.

No MPI here: hosts and links are built by hand, indexed as a platform would.
"""

import pytest

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.routing import (
    ClusterRouting,
    FullRouting,
    RoutingError,
    route_latency_s,
    split_duplex_twins,
)
from smpy.support.internal import SmpyInternalError


def make_hosts(*names):
    hosts = [Host(name, 1, [1e9]) for name in names]
    for i, host in enumerate(hosts):
        host.index = i
    return hosts


def names(links):
    return [link.name for link in links]


def split_duplex(name, bw=1.25e9, lat=50e-6):
    return (Link(f"{name}_UP", bw, lat, Sharing.SPLITDUPLEX),
            Link(f"{name}_DOWN", bw, lat, Sharing.SPLITDUPLEX))


# ------------------------------------------------------------------------- ClusterRouting

def star(n=3, *, sharing=Sharing.SPLITDUPLEX, backbone=True, limiter=False, loopback=False,
         implicit_loopback=None):
    hosts = make_hosts(*(f"n{i}" for i in range(n)))
    if sharing is Sharing.SPLITDUPLEX:
        private = [split_duplex(f"c_link_{i}") for i in range(n)]
    else:
        private = []
        for i in range(n):
            link = Link(f"c_link_{i}", 1.25e9, 50e-6, sharing)
            private.append((link, link))
    bb = Link("c_backbone", 12.5e9, 1e-6, Sharing.SHARED) if backbone else None
    limiters = [Link(f"c_link_{i}_limiter", 2.5e9, 0.0) for i in range(n)] if limiter else None
    loopbacks = ([Link(f"c_link_{i}_loopback", 50e9, 1e-7, Sharing.FATPIPE) for i in range(n)]
                 if loopback else None)
    routing = ClusterRouting(hosts, private, backbone=bb, limiters=limiters, loopbacks=loopbacks,
                             implicit_loopback=implicit_loopback)
    return hosts, routing


def test_star_route_goes_up_backbone_down():
    hosts, routing = star()
    assert names(routing.route(hosts[0], hosts[1])) == ["c_link_0_UP", "c_backbone",
                                                        "c_link_1_DOWN"]
    assert names(routing.route(hosts[1], hosts[0])) == ["c_link_1_UP", "c_backbone",
                                                        "c_link_0_DOWN"]


def test_star_latency_is_the_sum_of_link_latencies():
    hosts, routing = star()
    # 50 us up + 1 us backbone + 50 us down
    assert routing.latency_s(hosts[0], hosts[2]) == pytest.approx(101e-6)
    assert route_latency_s(routing.route(hosts[0], hosts[2])) == pytest.approx(101e-6)


def test_star_without_backbone():
    hosts, routing = star(backbone=False)
    assert names(routing.route(hosts[0], hosts[1])) == ["c_link_0_UP", "c_link_1_DOWN"]


def test_star_limiters_wrap_the_private_links():
    # sg_platf.cpp builds up = [limiter, link UP, backbone]; the reverse for down
    hosts, routing = star(limiter=True)
    assert names(routing.route(hosts[0], hosts[1])) == [
        "c_link_0_limiter", "c_link_0_UP", "c_backbone", "c_link_1_DOWN", "c_link_1_limiter"]
    assert names(routing.links_up(hosts[0])) == ["c_link_0_limiter", "c_link_0_UP", "c_backbone"]
    assert names(routing.links_down(hosts[1])) == ["c_backbone", "c_link_1_DOWN",
                                                   "c_link_1_limiter"]


def test_star_shared_private_link_is_used_both_ways():
    hosts, routing = star(sharing=Sharing.SHARED)
    assert names(routing.route(hosts[0], hosts[1])) == ["c_link_0", "c_backbone", "c_link_1"]


def test_star_self_route_uses_the_host_loopback():
    hosts, routing = star(loopback=True, limiter=True)
    assert names(routing.route(hosts[1], hosts[1])) == ["c_link_1_loopback"]


def test_star_self_route_without_loopback_goes_up_and_down_like_simgrid():
    # StarZone::get_local_route: up(src) + down(dst) with duplicates dropped
    hosts, routing = star(limiter=True)
    assert names(routing.route(hosts[0], hosts[0])) == [
        "c_link_0_limiter", "c_link_0_UP", "c_backbone", "c_link_0_DOWN"]
    hosts, routing = star(sharing=Sharing.SHARED)
    assert names(routing.route(hosts[0], hosts[0])) == ["c_link_0", "c_backbone"]


def test_star_self_route_with_implicit_loopback():
    lo = Link("__loopback__", 10e9, 0.0, Sharing.FATPIPE)
    hosts, routing = star(implicit_loopback=lo)
    assert routing.route(hosts[2], hosts[2]) == (lo,)


def test_routes_are_cached_and_identical_objects():
    hosts, routing = star()
    first = routing.route(hosts[0], hosts[1])
    assert routing.route(hosts[0], hosts[1]) is first
    assert isinstance(first, tuple)
    assert (0, 1) in routing._routes


def test_star_rejects_foreign_host_and_bad_sizes():
    hosts, routing = star()
    stranger = Host("x", 1, [1e9], index=7)
    with pytest.raises(RoutingError, match="'x'"):
        routing.route(hosts[0], stranger)
    with pytest.raises(RoutingError, match="2 private_links for 3 hosts"):
        ClusterRouting(hosts, [split_duplex("a"), split_duplex("b")])


def test_unindexed_host_is_an_internal_error():
    a, b = Host("a", 1, [1e9]), Host("b", 1, [1e9])
    routing = ClusterRouting([a, b], [split_duplex("a"), split_duplex("b")])
    with pytest.raises(SmpyInternalError, match="index"):
        routing.route(a, b)


# ---------------------------------------------------------------------------- FullRouting

@pytest.fixture
def graph():
    """a, b, c hosts; r1, r2 routers.

        a --la(10us, SPLITDUPLEX)-- r1 --lr(5us)-- r2 --lc(30us)-- c
        b --lb(20us)-- r1
        b --slow(500us)-- c
    """
    hosts = make_hosts("a", "b", "c")
    la_up, la_down = split_duplex("la", lat=10e-6)
    lb = Link("lb", 1e9, 20e-6)
    lr = Link("lr", 1e9, 5e-6)
    lc = Link("lc", 1e9, 30e-6)
    slow = Link("slow", 1e9, 500e-6)
    loopback = Link("__loopback__", 10e9, 0.0, Sharing.FATPIPE)
    links = [la_up, la_down, lb, lr, lc, slow, loopback]
    routing = FullRouting(["a", "b", "c", "r1", "r2"], loopback=loopback,
                          twins=split_duplex_twins(links))
    routing.add_route("a", "r1", [la_up])
    routing.add_route("b", "r1", [lb])
    routing.add_route("r1", "r2", [lr])
    routing.add_route("r2", "c", [lc])
    routing.add_route("b", "c", [slow])
    return hosts, routing


def test_split_duplex_twins():
    up, down = split_duplex("x")
    shared = Link("y", 1.0, 0.0)
    assert split_duplex_twins([up, down, shared]) == {up: down, down: up}


def test_symmetric_route_reverses_and_swaps_directions(graph):
    hosts, routing = graph
    assert names(routing.route_between("a", "r1")) == ["la_UP"]
    assert names(routing.route_between("r1", "a")) == ["la_DOWN"]


def test_declared_route_wins_over_shorter_paths(graph):
    hosts, routing = graph
    a, b, c = hosts
    # b -> r1 -> r2 -> c has 55 us, but b -> c is declared (500 us)
    assert names(routing.route(b, c)) == ["slow"]
    assert names(routing.route(c, b)) == ["slow"]


def test_undeclared_pairs_use_the_least_latency_path(graph):
    hosts, routing = graph
    a, b, c = hosts
    assert names(routing.route(a, c)) == ["la_UP", "lr", "lc"]
    assert names(routing.route(c, a)) == ["lc", "lr", "la_DOWN"]
    assert names(routing.route(a, b)) == ["la_UP", "lb"]
    assert names(routing.route(b, a)) == ["lb", "la_DOWN"]
    assert routing.latency_s(a, c) == pytest.approx(45e-6)


def test_self_route_uses_implicit_loopback(graph):
    hosts, routing = graph
    assert names(routing.route(hosts[0], hosts[0])) == ["__loopback__"]


def test_declared_self_route():
    (a,) = make_hosts("a")
    own = Link("a_lo", 1e9, 1e-7, Sharing.FATPIPE)
    routing = FullRouting(["a"])
    routing.add_route("a", "a", [own])
    assert routing.route(a, a) == (own,)


def test_ties_are_broken_by_hops_then_names():
    a, b = make_hosts("a", "b")
    zero = [Link(f"l{i}", 1e9, 0.0) for i in range(6)]
    routing = FullRouting(["a", "b", "r1", "r2", "r3"])
    # three zero-latency paths a -> b: via r2 (2 hops), via r1 (2 hops), via r3 -> r1 (3 hops)
    routing.add_route("a", "r2", [zero[0]])
    routing.add_route("r2", "b", [zero[1]])
    routing.add_route("a", "r1", [zero[2]])
    routing.add_route("r1", "b", [zero[3]])
    routing.add_route("a", "r3", [zero[4]])
    routing.add_route("r3", "r1", [zero[5]])
    assert names(routing.route(a, b)) == ["l2", "l3"]     # r1 < r2, both 2 hops


def test_asymmetric_route_has_no_reverse():
    a, b = make_hosts("a", "b")
    link = Link("l", 1e9, 1e-6)
    routing = FullRouting(["a", "b"])
    routing.add_route("a", "b", [link], symmetric=False)
    assert routing.route(a, b) == (link,)
    with pytest.raises(RoutingError, match="no route from 'b' to 'a'"):
        routing.route(b, a)
    assert routing.reachable("b") == {"b"}


def test_duplicate_routes_are_rejected_and_leave_the_table_unchanged():
    a, b = make_hosts("a", "b")
    l1, l2 = Link("l1", 1e9, 1e-6), Link("l2", 1e9, 1e-6)
    routing = FullRouting(["a", "b"])
    routing.add_route("a", "b", [l1])
    with pytest.raises(RoutingError, match="reverse of the symmetric route 'a' -> 'b'"):
        routing.add_route("b", "a", [l2])
    with pytest.raises(RoutingError, match="declared twice"):
        routing.add_route("a", "b", [l2], symmetric=False)
    assert routing.route(b, a) == (l1,)


def test_unknown_nodes_and_empty_routes():
    routing = FullRouting(["a", "b"])
    with pytest.raises(RoutingError, match="unknown node 'z'"):
        routing.add_route("a", "z", [Link("l", 1.0, 0.0)])
    with pytest.raises(RoutingError, match="empty"):
        routing.add_route("a", "b", [])
