"""Zones (smpy.network.zones): SimGrid's Full, Floyd, Dijkstra, Star and None routings and
their composition through gateways, built by hand (no platform file, no MPI).

Each test writes the routes it expects, with the rule that gives them.
"""

import pytest

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.routing import RoutingError
from smpy.network.zones import DijkstraZone, EmptyZone, FloydZone, FullZone, StarZone

LOOPBACK = Link("__loopback__", 10e9, 0.0, Sharing.FATPIPE)


def host(name, index):
    return Host(name, 1, [1e9], index=index)


def link(name, latency=1e-6, sharing=Sharing.SHARED):
    return Link(name, 1e9, latency, sharing)


def names(links):
    return [x.name for x in links]


# ------------------------------------------------------------------------------------ Full

def full_zone():
    zone = FullZone("z")
    a, b, c = host("a", 0), host("b", 1), host("c", 2)
    pa, pb, pc = zone.add_host(a), zone.add_host(b), zone.add_host(c)
    up, down = link("x_UP", sharing=Sharing.SPLITDUPLEX), link("x_DOWN", sharing=Sharing.SPLITDUPLEX)
    plain = link("p")
    # a -> b over [x_UP, p]; the reverse is reversed(back) = [p, x_DOWN]
    zone.add_route(pa, pb, [up, plain], back=[down, plain])
    zone.add_route(pb, pc, [plain], back=None)      # one way only
    zone.seal(LOOPBACK)
    return zone, (a, b, c)


def test_full_zone_declared_routes_and_symmetric_reverse():
    zone, (a, b, c) = full_zone()
    assert names(zone.route(a, b)) == ["x_UP", "p"]
    assert names(zone.route(b, a)) == ["p", "x_DOWN"]
    assert names(zone.route(b, c)) == ["p"]


def test_full_zone_has_no_path_search():
    # Full only knows declared routes: a -> c is not declared (SimGrid gives an empty route)
    zone, (a, b, c) = full_zone()
    assert zone.simgrid_route(a, c) == ()
    with pytest.raises(RoutingError, match="no route from 'a' to 'c'"):
        zone.route(a, c)
    with pytest.raises(RoutingError, match="no route from 'c' to 'b'"):
        zone.route(c, b)


def test_zone_without_children_gives_hosts_the_platform_loopback():
    zone, (a, b, c) = full_zone()
    assert zone.route(a, a) == (LOOPBACK,)
    assert zone.uses_platform_loopback()


def test_routes_are_cached():
    zone, (a, b, c) = full_zone()
    first = zone.route(a, b)
    assert zone.route(a, b) is first


def test_duplicate_route_messages():
    zone = FullZone("z")
    pa, pb = zone.add_host(host("a", 0)), zone.add_host(host("b", 1))
    zone.add_route(pa, pb, [link("l")], back=[link("l")])
    with pytest.raises(RoutingError, match="from 'a' to 'b' already exists"):
        zone.add_route(pa, pb, [link("m")])
    with pytest.raises(RoutingError, match="from 'b' to 'a' already exists"):
        zone.add_route(pb, pa, [link("m")])


# ----------------------------------------------------------------------------------- Floyd

def floyd_diamond(order):
    """a -> r1 -> b and a -> r2 -> b, one link each; netpoints created in `order`."""
    zone = FloydZone("z")
    points = {}
    hosts = {}
    for name in order:
        if name in ("a", "b"):
            hosts[name] = host(name, len(hosts))
            points[name] = zone.add_host(hosts[name])
        else:
            points[name] = zone.add_router(name)
    for src, dst in (("a", "r1"), ("a", "r2"), ("r1", "b"), ("r2", "b")):
        edge = link(f"{src}-{dst}")
        zone.add_route(points[src], points[dst], [edge], back=[edge])
    zone.seal(LOOPBACK)
    return zone, hosts["a"], hosts["b"]


def test_floyd_breaks_ties_by_the_smallest_intermediate_netpoint():
    # Floyd-Warshall with a strict '<': the first intermediate c (by netpoint id) that makes
    # a -> b finite wins; the other equal path never replaces it
    zone, a, b = floyd_diamond(["a", "r1", "r2", "b"])
    assert names(zone.route(a, b)) == ["a-r1", "r1-b"]
    assert names(zone.route(b, a)) == ["r1-b", "a-r1"]
    zone, a, b = floyd_diamond(["a", "r2", "r1", "b"])
    assert names(zone.route(a, b)) == ["a-r2", "r2-b"]


def test_floyd_cost_is_the_number_of_links_not_latency():
    zone = FloydZone("z")
    a, b = host("a", 0), host("b", 1)
    pa, pb, r = zone.add_host(a), zone.add_host(b), zone.add_router("r")
    slow = link("slow", latency=1.0)
    fast1, fast2 = link("f1", 1e-9), link("f2", 1e-9)
    zone.add_route(pa, pb, [slow], back=[slow])
    zone.add_route(pa, r, [fast1], back=[fast1])
    zone.add_route(r, pb, [fast2], back=[fast2])
    zone.seal(LOOPBACK)
    assert names(zone.route(a, b)) == ["slow"]   # 1 link < 2 links


# -------------------------------------------------------------------------------- Dijkstra

def test_dijkstra_reverses_each_edge_of_a_multi_hop_path():
    # SimGrid's insert_link_latency prepends each edge's links reversed:
    # edges a->r [l1, l2] and r->b [l3, l4] give [l2, l1, l4, l3]
    zone = DijkstraZone("z")
    a, b = host("a", 0), host("b", 1)
    pa, pb, r = zone.add_host(a), zone.add_host(b), zone.add_router("r")
    l1, l2, l3, l4 = (link(f"l{i}") for i in range(1, 5))
    zone.add_route(pa, r, [l1, l2], back=[l1, l2])
    zone.add_route(r, pb, [l3, l4], back=[l3, l4])
    zone.seal(LOOPBACK)
    assert names(zone.route(a, b)) == ["l2", "l1", "l4", "l3"]
    # b -> r is stored as reversed([l3, l4]) = [l4, l3], then reversed again on assembly
    assert names(zone.route(b, a)) == ["l3", "l4", "l1", "l2"]
    assert zone.route(a, a) == (LOOPBACK,)


def test_dijkstra_ties_go_to_the_node_seen_first_in_the_routes():
    zone = DijkstraZone("z")
    a, b = host("a", 0), host("b", 1)
    pa, pb = zone.add_host(a), zone.add_host(b)
    r1, r2 = zone.add_router("r1"), zone.add_router("r2")
    for src, dst in ((pa, r2), (pa, r1), (r1, pb), (r2, pb)):
        edge = link(f"{src.name}-{dst.name}")
        zone.add_route(src, dst, [edge], back=[edge])
    zone.seal(LOOPBACK)
    # graph nodes: a=0, r2=1, r1=2, b=3; r2 is popped first and relaxes b first
    assert names(zone.route(a, b)) == ["a-r2", "r2-b"]


# ------------------------------------------------------------------------------------ Star

def test_star_zone_goes_up_then_down_without_repeating_links():
    zone = StarZone("c")
    a, b = host("a", 0), host("b", 1)
    pa, pb = zone.add_host(a), zone.add_host(b)
    bb = link("bb")
    la, lb, lo = link("la"), link("lb"), link("lo", sharing=Sharing.FATPIPE)
    zone.set_links(pa, up=[la, bb], down=[bb, la], loopback=[lo])
    zone.set_links(pb, up=[lb, bb], down=[bb, lb])
    zone.seal(LOOPBACK)
    assert names(zone.route(a, b)) == ["la", "bb", "lb"]
    assert names(zone.route(a, a)) == ["lo"]
    assert names(zone.route(b, b)) == ["lb", "bb"]   # up + down, duplicates dropped
    assert not zone.uses_platform_loopback()


# ------------------------------------------------------------------------------ hierarchy

def two_sites():
    """world (Full) holds two star clusters whose routers are joined by `wan`."""
    world = FullZone("world")
    sites = []
    hosts = []
    for s in range(2):
        star = StarZone(f"site{s}")
        world.add_child(star)
        h = host(f"h{s}", s)
        point = star.add_host(h)
        private = link(f"l{s}")
        star.set_links(point, up=[private], down=[private])
        router = star.add_router(f"r{s}")
        star.set_links(router, up=[], down=[])
        sites.append((star, router))
        hosts.append(h)
    return world, sites, hosts


def test_zone_route_goes_through_the_gateways():
    world, sites, (h0, h1) = two_sites()
    wan = link("wan")
    world.add_route(sites[0][0].netpoint, sites[1][0].netpoint, [wan], back=[wan],
                    gw_src=sites[0][1], gw_dst=sites[1][1])
    world.seal(LOOPBACK)
    # h0 -> r0 inside site0, then the zone route, then r1 -> h1 inside site1
    assert names(world.route(h0, h1)) == ["l0", "wan", "l1"]
    assert names(world.route(h1, h0)) == ["l1", "wan", "l0"]
    assert names(world.route(h0, h0)) == ["l0"]      # a star cluster without loopback
    assert [h.name for h in (p.host for p in world.hosts())] == ["h0", "h1"]


def test_missing_zone_route_is_reported():
    world, sites, (h0, h1) = two_sites()
    world.seal(LOOPBACK)
    with pytest.raises(RoutingError, match="zone 'world' declares no route from 'site0' to "
                                           "'site1'"):
        world.route(h0, h1)


def test_gateway_checks():
    world, sites, _ = two_sites()
    (s0, r0), (s1, r1) = sites
    wan = [link("wan")]
    with pytest.raises(RoutingError, match="needs gateways"):
        world.add_route(s0.netpoint, s1.netpoint, wan)
    with pytest.raises(RoutingError, match="gw_src 'r1' belongs to zone 'site1', not to 'site0'"):
        world.add_route(s0.netpoint, s1.netpoint, wan, gw_src=r1, gw_dst=r0)
    with pytest.raises(RoutingError, match="give both gateways or none"):
        world.add_route(s0.netpoint, s1.netpoint, wan, gw_src=r0)
    with pytest.raises(RoutingError, match="'r0' is not a member of zone 'world'"):
        world.add_route(r0, s1.netpoint, wan)
    with pytest.raises(RoutingError, match="empty route"):
        world.add_route(s0.netpoint, s1.netpoint, [], gw_src=r0, gw_dst=r1)


def test_empty_zone_routes_nothing_but_a_host_reaches_itself():
    zone = EmptyZone("none")
    a, b = host("a", 0), host("b", 1)
    zone.add_host(a)
    zone.add_host(b)
    zone.seal(LOOPBACK)
    assert zone.simgrid_route(a, a) == ()
    assert zone.route(a, a) == (LOOPBACK,)   # smpy's fallback where SimGrid aborts
    with pytest.raises(RoutingError, match="the zones between them give no link"):
        zone.route(a, b)
