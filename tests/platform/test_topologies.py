"""Topology zones (smpy.network.topologies) built by hand: parameters, link names and counts,
and routes worked out from the rules of SimGrid's TorusZone, FatTreeZone and DragonflyZone.
(Every route of larger instances is checked against SimGrid in test_simgrid_truth.py.)
"""

import math

import pytest

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.topologies import (
    ClusterLinks,
    DragonflyZone,
    FatTreeZone,
    TopologyCounters,
    TopologyError,
    TorusZone,
    parse_dragonfly,
    parse_fat_tree,
    parse_torus,
)

LOOPBACK = Link("__loopback__", 10e9, 0.0, Sharing.FATPIPE)


def hosts(n, prefix="n"):
    return [Host(f"{prefix}{i}", 1, [1e9], index=i) for i in range(n)]


def names(links):
    return [x.name for x in links]


def spec(sharing=Sharing.SPLITDUPLEX, loopback=False, limiter=False, name="c"):
    return ClusterLinks(
        125e6, 50e-6, sharing,
        loopback=(lambda i: Link(f"{name}_link_{i}_loopback", 1e9, 0.0, Sharing.FATPIPE))
        if loopback else None,
        limiter=(lambda i: Link(f"{name}_link_{i}_limiter", 1e9, 0.0)) if limiter else None)


# -------------------------------------------------------------------------- parameters

def test_parse_parameters():
    assert parse_torus("3,2,2") == (3, 2, 2)
    fat = parse_fat_tree("2;4,4;1,2;1,2")
    assert (fat.levels, fat.down, fat.up, fat.count, fat.hosts) == (2, (4, 4), (1, 2), (1, 2), 16)
    fly = parse_dragonfly("3,4;4,3;5,1;2")
    assert (fly.groups, fly.blue, fly.chassis, fly.black, fly.routers, fly.green, fly.nodes,
            fly.hosts) == (3, 4, 4, 3, 5, 1, 2, 120)


@pytest.mark.parametrize(("parse", "text", "expected"), [
    (parse_torus, "3,x", "expected torus dimensions like '3,2,2'"),
    (parse_torus, "3,0", "each 1 or more"),
    (parse_fat_tree, "2;4,4;1,2", "expected fat-tree parameters"),
    (parse_fat_tree, "2;4,4,4;1,2;1,2", "the down vector has 3 values for 2 levels"),
    (parse_fat_tree, "2;4,4;0,2;1,2", "every up count must be 1 or more"),
    (parse_fat_tree, "0;;;", "expected fat-tree parameters"),
    (parse_dragonfly, "3,4;4,3;5;2", "expected dragonfly parameters"),
    (parse_dragonfly, "3,4;4,3;2,1;2", "at least as many routers per chassis as groups"),
    (parse_dragonfly, "3,4;4,0;5,1;2", "every number must be 1 or more"),
])
def test_parameter_errors(parse, text, expected):
    with pytest.raises(TopologyError, match=expected):
        parse(text)


# ------------------------------------------------------------------------------- torus

def test_torus_links_one_per_node_and_dimension():
    zone = TorusZone("c", hosts(12), (3, 2, 2), spec())
    assert len(zone.links) == 12 * 3 * 2            # n × dims, UP and DOWN halves
    # node 2 is last in dimension 0 (of size 3): its link there wraps to node 0
    assert "c_link_from_2_to_0_UP" in names(zone.links)
    assert "c_link_from_0_to_3_DOWN" in names(zone.links)   # dimension 1: 0 -> 0 + 3


def test_torus_routes_on_a_ring():
    ring = hosts(4)
    zone = TorusZone("c", ring, (4,), spec())
    zone.seal(LOOPBACK)
    # 0 -> 2: ahead by 2 <= 4//2, forward over each node's own link (UP halves)
    assert names(zone.route(ring[0], ring[2])) == ["c_link_from_0_to_1_UP",
                                                   "c_link_from_1_to_2_UP"]
    # 0 -> 3: backward, over the link owned by the previous node (3), DOWN half
    assert names(zone.route(ring[0], ring[3])) == ["c_link_from_3_to_0_DOWN"]
    # 3 -> 1: 3 > 4//2 and (3 + 2) % 4 = 1 >= 1, so forward through the wrap-around
    assert names(zone.route(ring[3], ring[1])) == ["c_link_from_3_to_0_UP",
                                                   "c_link_from_0_to_1_UP"]


def test_torus_dimensions_are_corrected_in_order_with_limiters():
    grid = hosts(6)
    zone = TorusZone("c", grid, (3, 2), spec(sharing=Sharing.SHARED, limiter=True))
    zone.seal(LOOPBACK)
    # 0 = (0,0) -> 4 = (1,1): dimension 0 first (0 -> 1), then dimension 1 (1 -> 4);
    # each hop is preceded by the current node's limiter, the destination's ends the route
    assert names(zone.route(grid[0], grid[4])) == [
        "c_link_0_limiter", "c_link_from_0_to_1", "c_link_1_limiter", "c_link_from_1_to_4",
        "c_link_4_limiter"]
    assert names(zone.route(grid[2], grid[2])) == ["c_link_2_limiter"]


def test_torus_without_loopback_uses_the_platform_loopback_for_self():
    ring = hosts(3)
    zone = TorusZone("c", ring, (3,), spec())
    zone.seal(LOOPBACK)
    assert zone.simgrid_route(ring[1], ring[1]) == ()
    assert zone.route(ring[1], ring[1]) == (LOOPBACK,)
    assert zone.uses_platform_loopback()
    with_loopback = TorusZone("d", hosts(3), (3,), spec(loopback=True, name="d"))
    with_loopback.seal(LOOPBACK)
    point = with_loopback.vertices[1].host
    assert names(with_loopback.route(point, point)) == ["d_link_1_loopback"]


def test_torus_needs_the_right_number_of_hosts():
    with pytest.raises(TopologyError, match="has 6 hosts, 5 were given"):
        TorusZone("c", hosts(5), (3, 2), spec())


# ---------------------------------------------------------------------------- fat tree

def test_fat_tree_sizes_and_names():
    params = parse_fat_tree("2;4,4;1,2;1,2")
    zone = FatTreeZone("c", hosts(16), params, spec(loopback=True))
    # cables: 16 hosts × 1 parent × 1 cable + 4 leaf switches × 2 parents × 2 cables = 32,
    # each an UP/DOWN pair; plus one loopback per host
    assert len(zone.links) == 32 * 2 + 16
    # switches count down from 2n - 1 = 31: leaf switches 31..28, top switches 27, 26
    assert "link_from_0_31_0_UP" in names(zone.links)
    assert "link_from_31_27_16_DOWN" in names(zone.links)


def test_fat_tree_d_mod_k_route():
    nodes = hosts(16)
    zone = FatTreeZone("c", nodes, parse_fat_tree("2;4,4;1,2;1,2"), spec())
    zone.seal(LOOPBACK)
    # same leaf switch (31): up, then down to the target
    assert names(zone.route(nodes[0], nodes[1])) == ["link_from_0_31_0_UP",
                                                     "link_from_1_31_1_DOWN"]
    # cables are numbered as created: host h to leaf 31 - h // 4 is cable h; then each leaf
    # switch's 4 cables, to top switch 27 (twice) then 26 (twice): leaf 31 has 16..19, leaf
    # 30 has 20..23. A leaf's parent port of cable j to top switch of label q is q + 2j, so
    # leaf 31's ports 0..3 hold cables 16, 18, 17, 19.
    # 0 -> 5: up to leaf 31, then port (5 // 1) % (2 × 2) = 1: cable 18, to top switch 26.
    # Down from 26: the first port (from (0 % 2) × 4 on) whose child label matches node 5's
    # digit 1: port 1, cable 22 to leaf 30; then node 5's port: cable 5.
    route = names(zone.route(nodes[0], nodes[5]))
    assert route == ["link_from_0_31_0_UP", "link_from_31_26_18_UP", "link_from_30_26_22_DOWN",
                     "link_from_5_30_5_DOWN"]


def test_fat_tree_counters_are_shared_by_the_clusters_of_a_platform():
    counters = TopologyCounters()
    params = parse_fat_tree("1;2;1;1")
    first = FatTreeZone("a", hosts(2, "a"), params, spec(), counters)
    second = FatTreeZone("b", hosts(2, "b"), params, spec(), counters)
    assert names(first.links)[::2] == ["link_from_0_3_0_UP", "link_from_1_3_1_UP"]
    assert names(second.links)[::2] == ["link_from_0_3_2_UP", "link_from_1_3_3_UP"]
    assert counters.fat_tree_position == 4


def test_fat_tree_needs_the_right_number_of_hosts():
    with pytest.raises(TopologyError, match="has 16 hosts, 8 were given"):
        FatTreeZone("c", hosts(8), parse_fat_tree("2;4,4;1,2;1,2"), spec())


# --------------------------------------------------------------------------- dragonfly

def test_dragonfly_link_counts():
    p = parse_dragonfly("3,4;4,3;5,1;2")
    zone = DragonflyZone("c", hosts(120), p, spec(loopback=True, limiter=True))
    routers = p.groups * p.chassis * p.routers
    cables = (routers * p.nodes                                       # local
              + p.groups * p.chassis * math.comb(p.routers, 2)        # green
              + p.groups * math.comb(p.chassis, 2) * p.routers        # black
              + math.comb(p.groups, 2))                               # blue
    assert len(zone.links) == 2 * cables + 120 + 120 + routers        # + loopbacks, limiters
    blue = [x for x in zone.links if x.name.startswith("blue_link_between_group_0_and_1_")]
    assert blue[0].bandwidth_Bps == 4 * 125e6                          # 4 cables


def test_dragonfly_minimal_route():
    nodes = hosts(8)
    # 2 groups of 1 chassis of 2 routers of 2 nodes; SHARED links
    zone = DragonflyZone("c", nodes, parse_dragonfly("2,1;1,1;2,1;2"), spec(Sharing.SHARED))
    zone.seal(LOOPBACK)
    # links are numbered in creation order: local ones (router r, node k: 2r + k), then green
    # (8 in group 0, 9 in group 1), then blue (10).
    # node 0 (group 0, router 0) -> node 7 (group 1, router 1): green to router 1 of group 0
    # (the one linked to group 1), blue to group 1's router 0, green to router 1, down
    assert names(zone.route(nodes[0], nodes[7])) == [
        "local_link_from_router_0_to_node_0_0",
        "green_link_in_chassis_0_between_routers_0_and_1_8",
        "blue_link_between_group_0_and_1_routers_1_and_2_10",
        "green_link_in_chassis_0_between_routers_0_and_1_9",
        "local_link_from_router_3_to_node_1_7"]
    assert names(zone.route(nodes[0], nodes[1])) == ["local_link_from_router_0_to_node_0_0",
                                                     "local_link_from_router_0_to_node_1_1"]
