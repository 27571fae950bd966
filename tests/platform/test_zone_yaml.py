"""The YAML platform format for zones and topologies (smpy.platform.schema, .builder): what it
builds, and errors that name the file and the field path. Also loads every YAML example of
docs/platforms.md.
"""

import re
from pathlib import Path

import pytest
import yaml

from smpy.network.links import Sharing
from smpy.platform import PlatformError, load_platform, load_platform_data

DOCS = Path(__file__).resolve().parents[2] / "docs" / "platforms.md"

TWO_CLUSTERS = """\
name: two-clusters
config: {network/model: SMPI}
zone:
  name: world
  routing: Full
  clusters:
    - {name: left, prefix: l-, radical: 0-3, speed: 1Gf, bandwidth: 10Gbps, latency: 50us,
       backbone: {bandwidth: 100Gbps, latency: 1us}}
    - {name: right, prefix: r-, count: 2, cores: 4, speed: [2Gf, 1Gf], bandwidth: 10Gbps,
       latency: 50us, router: right-gw}
  links:
    - {name: wan, bandwidth: 1Gbps, latency: 10ms}
  routes:
    - {src: left, dst: right, gw_src: l-left_router, gw_dst: right-gw, links: [wan]}
"""


def load(text, source="p.yaml"):
    return load_platform_data(yaml.safe_load(text), source)


def names(links):
    return [x.name for x in links]


def failure(data, source="p.yaml"):
    with pytest.raises(PlatformError) as info:
        load_platform_data(data, source)
    message = str(info.value)
    assert "Traceback" not in message and "pydantic" not in message.lower()
    return message


def test_two_clusters_joined_by_a_backbone_link():
    platform = load(TWO_CLUSTERS)
    assert platform.name == "two-clusters"
    assert [h.name for h in platform.hosts] == ["l-0", "l-1", "l-2", "l-3", "r-0", "r-1"]
    l0, r1 = platform.host("l-0"), platform.host("r-1")
    assert r1.cores == 4 and r1.speeds_flops == [2e9, 1e9]
    # up in the left cluster to its router, the zone route, down in the right cluster
    assert names(platform.route(l0, r1)) == ["left_link_0_UP", "left_backbone", "wan",
                                             "right_link_1_DOWN"]
    assert names(platform.route(r1, l0)) == ["right_link_1_UP", "wan", "left_backbone",
                                             "left_link_0_DOWN"]
    assert platform.routing.latency_s(l0, r1) == pytest.approx(50e-6 + 1e-6 + 10e-3 + 50e-6)
    assert "__loopback__" not in names(platform.links)


def test_a_topology_cluster_can_be_the_whole_platform():
    platform = load_platform_data({"clusters": [
        {"name": "t", "prefix": "t", "count": 8, "speed": "1Gf", "bandwidth": "1GBps",
         "latency": "1us", "topology": "torus", "topo_parameters": "2,2,2"}]})
    assert len(platform.hosts) == 8 and len(platform.links) == 8 * 3 * 2 + 1
    t0, t7 = platform.hosts[0], platform.hosts[7]
    assert names(platform.route(t0, t7)) == ["t_link_from_0_to_1_UP", "t_link_from_1_to_3_UP",
                                             "t_link_from_3_to_7_UP"]
    assert names(platform.route(t0, t0)) == ["__loopback__"]   # no loopback in the torus


def test_fatpipe_cluster_policy_gives_shared_private_links_as_simgrid():
    platform = load_platform_data({"clusters": [
        {"name": "c", "count": 2, "speed": "1Gf", "bandwidth": "1GBps", "latency": "1us",
         "sharing": "FATPIPE"}]})
    assert [x.sharing for x in platform.links] == [Sharing.SHARED, Sharing.SHARED]


def test_floyd_zone_with_order_and_host_order():
    data = {"zone": {
        "name": "z", "routing": "Floyd",
        "hosts": [{"name": "a", "speed": "1Gf"}, {"name": "b", "speed": "1Gf"}],
        "routers": ["r1", "r2"],
        "links": [{"name": n, "bandwidth": "1GBps"} for n in ("a1", "a2", "b1", "b2")],
        "routes": [{"src": "a", "dst": "r1", "links": ["a1"]},
                   {"src": "a", "dst": "r2", "links": ["a2"]},
                   {"src": "r1", "dst": "b", "links": ["b1"]},
                   {"src": "r2", "dst": "b", "links": ["b2"]}]}}
    platform = load_platform_data(data)
    a, b = platform.hosts
    assert names(platform.route(a, b)) == ["a1", "b1"]   # r1 has the smaller netpoint id
    data["zone"]["order"] = ["a", "r2", "r1", "b"]   # r2 now has the smaller netpoint id
    platform = load_platform_data(data)
    a, b = platform.hosts
    assert names(platform.route(a, b)) == ["a2", "b2"]


def test_cluster_routing_zone_with_host_links():
    data = {"zone": {
        "name": "star", "routing": "cluster",
        "hosts": [{"name": "a", "speed": "1Gf"}, {"name": "b", "speed": "1Gf"}],
        "routers": ["gw"],
        "links": [{"name": "la", "bandwidth": "1GBps", "sharing": "SPLITDUPLEX"},
                  {"name": "lb", "bandwidth": "1GBps"}],
        "backbone": {"name": "bb", "bandwidth": "10GBps", "latency": "1us"},
        "host_links": [{"host": "a", "up": "la_UP", "down": "la_DOWN"},
                       {"host": "b", "up": "lb", "down": "lb"}]}}
    platform = load_platform_data(data)
    a, b = platform.hosts
    assert names(platform.route(a, b)) == ["la_UP", "bb", "lb"]
    assert names(platform.route(b, a)) == ["lb", "bb", "la_DOWN"]


# ---------------------------------------------------------------------------------- errors

def two_clusters():
    return yaml.safe_load(TWO_CLUSTERS)


@pytest.mark.slow
@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["zone"].update(routing="Star"),
     "p.yaml: zone.routing: expected one of 'Full', 'Floyd', 'Dijkstra', 'DijkstraCache', "
     "'None' or 'Cluster', found 'Star'"),
    (lambda d: d["zone"]["routes"][0].pop("gw_dst"),
     "p.yaml: zone.routes[0].gw_dst: a route between zones needs both gateways"),
    (lambda d: d["zone"]["routes"][0].pop("gw_dst") and d["zone"]["routes"][0].pop("gw_src"),
     "p.yaml: zone.routes[0]: route 'left' -> 'right': 'left' is a zone, so the route needs "
     "gateways"),
    (lambda d: d["zone"]["routes"][0].update(gw_dst="l-0"),
     "p.yaml: zone.routes[0]: route 'left' -> 'right': gw_dst 'l-0' belongs to zone 'left', "
     "not to 'right'"),
    (lambda d: d["zone"]["routes"][0].update(gw_src="nowhere"),
     "p.yaml: zone.routes[0].gw_src: expected the name of a host or router, found 'nowhere'"),
    (lambda d: d["zone"]["routes"][0].update(src="l-0"),
     "p.yaml: zone.routes[0].src: 'l-0' belongs to zone 'left', not to zone 'world' where the "
     "route is declared"),
    (lambda d: d["zone"]["routes"][0].update(links=["wann"]),
     "p.yaml: zone.routes[0].links[0]: expected the name of a declared link, found 'wann' "
     "(did you mean 'wan'?)"),
    (lambda d: d["zone"]["routes"][0].update(links=["left_link_0"]),
     "p.yaml: zone.routes[0].links[0]: 'left_link_0' is SPLITDUPLEX (zone.clusters[0]): name a "
     "direction"),
    (lambda d: d["zone"].update(hosts=[{"name": "h", "speed": "1Gf"}]),
     "p.yaml: zone.hosts: a zone with `clusters` cannot also have `hosts`"),
    (lambda d: d["zone"]["clusters"][1].update(name="left"),
     "p.yaml: zone.clusters[1].name: duplicate host, router or zone name 'left' (already used "
     "by zone.clusters[0].name)"),
    (lambda d: d["zone"]["clusters"][1].update(prefix="l-"),
     "p.yaml: zone.clusters[1].count: duplicate host, router or zone name 'l-0'"),
    (lambda d: d["zone"]["links"].append({"name": "left_backbone", "bandwidth": "1Gbps"}),
     "p.yaml: zone.clusters[0].backbone: duplicate link name 'left_backbone' (already used "
     "by zone.links[1].name)"),
    (lambda d: d["zone"]["clusters"][0].update(topology="TORUS"),
     "p.yaml: zone.clusters[0].backbone: only for FLAT clusters"),
    (lambda d: d["zone"]["clusters"][1].update(topology="DRAGONFLY"),
     "p.yaml: zone.clusters[1].router: only for FLAT clusters"),
    (lambda d: d["zone"]["clusters"][0].update(topology="FAT_TREE", backbone=None),
     "p.yaml: zone.clusters[0].topo_parameters: missing: a FAT_TREE cluster needs "
     "`topo_parameters`"),
    (lambda d: d["zone"]["clusters"][0].update(topo_parameters="2,2"),
     "p.yaml: zone.clusters[0].topo_parameters: only for `topology: TORUS`"),
    (lambda d: d["zone"]["clusters"][0].update(topology="MESH"),
     "p.yaml: zone.clusters[0].topology: expected one of 'FLAT', 'TORUS', 'FAT_TREE' or "
     "'DRAGONFLY'"),
    (lambda d: d["zone"].update(order=["left"]),
     "p.yaml: zone.order: `order` must list every host, router, cluster and zone of the zone; "
     "missing 'right'"),
    (lambda d: d["zone"].update(order=["left", "right", "x"]),
     "p.yaml: zone.order[2]: 'x' is not a host, router, cluster or zone of this zone"),
    (lambda d: d.update(hosts=[{"name": "h", "speed": "1Gf"}]),
     "p.yaml: hosts: a platform with a `zone` describes everything inside it"),
    (lambda d: d["zone"].update(routing="None"),
     "p.yaml: zone.routes: a zone with `routing: None` takes no routes"),
    (lambda d: d["zone"].update(host_links=[{"host": "l-0", "up": "wan", "down": "wan"}]),
     "p.yaml: zone.host_links: only for zones with `routing: Cluster`"),
    (lambda d: d["zone"]["clusters"][0].update(spead="1Gf"),
     "p.yaml: zone.clusters[0].spead: unknown key 'spead'"),
    (lambda d: d["zone"]["clusters"][1].update(speed=["0f", "1Gf"]),
     "p.yaml: zone.clusters[1].speed: the speed of the initial pstate (0) must be greater than "
     "zero"),
])
def test_zone_errors_name_the_field(mutate, expected):
    data = two_clusters()
    mutate(data)
    assert expected in failure(data)


def test_legacy_routes_take_no_gateways():
    data = {"hosts": [{"name": "a", "speed": "1Gf"}, {"name": "b", "speed": "1Gf"}],
            "links": [{"name": "l", "bandwidth": "1GBps"}],
            "routes": [{"src": "a", "dst": "b", "links": ["l"], "gw_src": "a", "gw_dst": "b"}]}
    assert "p.yaml: routes[0].gw_src: gateways are only for routes between zones" in failure(data)


def test_unreachable_host_pair_is_a_routing_error_at_use():
    data = two_clusters()
    data["zone"]["routes"] = []
    platform = load_platform_data(data)
    from smpy.network.routing import RoutingError

    with pytest.raises(RoutingError, match="zone 'world' declares no route from 'left' to "
                                           "'right'"):
        platform.route(platform.hosts[0], platform.hosts[-1])


def test_fat_tree_limiter_names_collide_like_in_simgrid():
    # switch ids count down from 2n - 1 and reach the hosts' ids: SimGrid refuses the
    # platform ("declared several times"), so does smpy
    data = {"clusters": [{"name": "f", "count": 8, "speed": "1Gf", "bandwidth": "1GBps",
                          "latency": "1us", "topology": "FAT_TREE",
                          "topo_parameters": "3;2,2,2;1,2,2;1,1,2", "limiter": "2GBps"}]}
    assert "duplicate link name 'f_link_7_limiter'" in failure(data)


# ------------------------------------------------------------------------------------ docs

def doc_examples():
    text = DOCS.read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


def test_docs_exist_and_have_examples():
    assert len(doc_examples()) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(doc_examples()) if DOCS.exists() else 0))
def test_every_yaml_example_of_the_docs_loads(tmp_path, index):
    text = doc_examples()[index]
    if text.lstrip().startswith("# fragment"):
        return
    path = tmp_path / "example.yaml"
    path.write_text(text)
    platform = load_platform(path)
    assert platform.hosts
    first, last = platform.hosts[0], platform.hosts[-1]
    platform.route(first, last)
    platform.route(last, first)
