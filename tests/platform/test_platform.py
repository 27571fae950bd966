"""Platform files: the default cluster, the YAML format, its errors, hostfiles and placement."""

import copy
import textwrap
from pathlib import Path

import pytest
import yaml

from smpy.network.links import Sharing
from smpy.platform import (
    Platform,
    PlatformError,
    default_platform,
    load_platform,
    load_platform_data,
    parse_hostfile,
    parse_hostfile_text,
    place_ranks,
)

REPO = Path(__file__).resolve().parents[2]


def names(links):
    return [link.name for link in links]


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# ----------------------------------------------------------------------- default platform

@pytest.fixture(scope="module")
def default():
    return default_platform()


def test_default_platform_hosts(default):
    assert isinstance(default, Platform)
    assert default.name == "cluster64"
    assert default.source == "<default>"
    assert len(default.hosts) == 64
    assert [h.name for h in default.hosts[:3]] == ["node-0", "node-1", "node-2"]
    assert default.hosts[-1].name == "node-63"
    for i, host in enumerate(default.hosts):
        assert host.index == i
        assert host.cores == 12
        assert host.speeds_flops == [1e9]
        assert host.pstate == 0
    assert default.config == {"network/model": "SMPI"}


def test_default_platform_links(default):
    # backbone, then each host's private link as two SPLITDUPLEX halves; no __loopback__
    assert len(default.links) == 1 + 2 * 64
    for i, link in enumerate(default.links):
        assert link.index == i
    backbone = default.link("cluster_backbone")
    assert backbone.index == 0
    assert backbone.bandwidth_Bps == 12.5e9 and backbone.latency_s == 0.0
    assert backbone.sharing is Sharing.SHARED
    up = default.link("cluster_link_5_UP")
    down = default.link("cluster_link_5_DOWN")
    for link in (up, down):
        assert link.bandwidth_Bps == 1.25e9
        assert link.latency_s == 50e-6
        assert link.sharing is Sharing.SPLITDUPLEX
    assert "__loopback__" not in names(default.links)


def test_default_platform_routes(default):
    n0, n1, n63 = default.host("node-0"), default.host("node-1"), default.host("node-63")
    assert names(default.route(n0, n1)) == ["cluster_link_0_UP", "cluster_backbone",
                                            "cluster_link_1_DOWN"]
    assert names(default.route(n63, n0)) == ["cluster_link_63_UP", "cluster_backbone",
                                             "cluster_link_0_DOWN"]
    assert default.routing.latency_s(n0, n1) == pytest.approx(100e-6)
    # SimGrid star cluster without loopback: a host's messages to itself go up and down
    assert names(default.route(n0, n0)) == ["cluster_link_0_UP", "cluster_backbone",
                                            "cluster_link_0_DOWN"]


def test_example_cluster64_is_the_default(default):
    example = load_platform(REPO / "examples" / "platforms" / "cluster64.yaml")
    assert example.name == default.name
    assert [h.name for h in example.hosts] == [h.name for h in default.hosts]
    assert [(link.name, link.bandwidth_Bps, link.latency_s, link.sharing)
            for link in example.links] == [(link.name, link.bandwidth_Bps, link.latency_s,
                                            link.sharing) for link in default.links]


def test_unknown_host_is_named(default):
    with pytest.raises(PlatformError, match="unknown host 'node-64'") as info:
        default.host("node-64")
    assert "node-0" in str(info.value) and "node-63" in str(info.value)


# ----------------------------------------------------------------------- cluster features

CLUSTER = """\
name: acme
config:
  network/model: SMPI
  smpi/async-small-thresh: 65536
clusters:
  - name: c
    prefix: host
    suffix: .acme.org
    radical: 0-1,5
    cores: 4
    speed: [2Gf, 1Gf, 500Mf]
    pstate: 1
    bandwidth: 1.25GBps
    latency: 10us
    backbone: {bandwidth: 10GBps, latency: 1us, sharing: FATPIPE}
    limiter: 20Gbps
    loopback: {bandwidth: 50GBps, latency: 0.1us}
    properties: {wattage_per_state: "100.0:200.0", smpi/os: "0:1e-6:0"}
"""


def test_cluster_with_every_option(tmp_path):
    platform = load_platform(write(tmp_path, CLUSTER))
    assert platform.name == "acme"
    assert platform.config == {"network/model": "SMPI", "smpi/async-small-thresh": "65536"}
    assert [h.name for h in platform.hosts] == ["host0.acme.org", "host1.acme.org",
                                                "host5.acme.org"]
    host = platform.host("host5.acme.org")
    assert host.cores == 4
    assert host.speeds_flops == [2e9, 1e9, 500e6]
    assert host.pstate == 1 and host.speed_flops == 1e9
    assert host.properties == {"wattage_per_state": "100.0:200.0", "smpi/os": "0:1e-6:0"}
    assert host.properties is not platform.hosts[0].properties
    assert names(platform.links[:6]) == ["c_backbone", "c_link_0_loopback", "c_link_0_limiter",
                                         "c_link_0_UP", "c_link_0_DOWN", "c_link_1_loopback"]
    assert platform.link("c_backbone").sharing is Sharing.FATPIPE
    assert platform.link("c_link_5_loopback").sharing is Sharing.FATPIPE
    assert platform.link("c_link_5_loopback").latency_s == pytest.approx(1e-7)
    assert platform.link("c_link_5_limiter").bandwidth_Bps == 2.5e9
    assert platform.link("c_link_5_limiter").sharing is Sharing.SHARED
    h0, h5 = platform.host("host0.acme.org"), host
    assert names(platform.route(h0, h5)) == ["c_link_0_limiter", "c_link_0_UP", "c_backbone",
                                             "c_link_5_DOWN", "c_link_5_limiter"]
    assert names(platform.route(h5, h5)) == ["c_link_5_loopback"]


def test_cluster_count_and_shared_private_links():
    platform = load_platform_data({"clusters": [
        {"name": "s", "prefix": "n", "count": 3, "speed": "1Gf", "bandwidth": "1Gbps",
         "latency": "1us", "sharing": "SHARED"}]}, "<t>")
    assert [h.name for h in platform.hosts] == ["n0", "n1", "n2"]
    assert names(platform.links) == ["s_link_0", "s_link_1", "s_link_2"]
    a, b = platform.hosts[:2]
    assert names(platform.route(a, b)) == ["s_link_0", "s_link_1"]
    assert platform.name == "platform"


def test_name_defaults_to_file_stem(tmp_path):
    text = CLUSTER.replace("name: acme\n", "")
    assert load_platform(write(tmp_path, text, "bob.yaml")).name == "bob"


def test_simgrid_comma_speed_list():
    platform = load_platform_data({"clusters": [
        {"name": "s", "count": 1, "speed": "1Gf, 800Mf", "bandwidth": "1Gbps",
         "latency": "1us"}]})
    assert platform.hosts[0].speeds_flops == [1e9, 800e6]


# ------------------------------------------------------------------ hosts, links, routes

EXPLICIT = """\
name: small
config: {network/loopback-bw: 5GBps, network/loopback-lat: 1us}
hosts:
  - {name: a, speed: 2Gf, cores: 4}
  - {name: b, speed: [1Gf, 500Mf], pstate: 1, properties: {rack: 3}}
  - {name: c, speed: 1Gf}
routers: [r1]
links:
  - {name: la, bandwidth: 1GBps, latency: 10us, sharing: SPLITDUPLEX}
  - {name: lb, bandwidth: 1GBps, latency: 20us}
  - {name: lc, bandwidth: 1GBps, latency: 30us, properties: {kind: copper}}
  - {name: direct, bandwidth: 100MBps, latency: 100us, sharing: FATPIPE}
routes:
  - {src: a, dst: r1, links: [la_UP]}
  - {src: b, dst: r1, links: [lb]}
  - {src: c, dst: r1, links: [lc]}
  - {src: a, dst: c, links: [direct], symmetric: false}
"""


def test_explicit_platform(tmp_path):
    platform = load_platform(write(tmp_path, EXPLICIT))
    a, b, c = platform.hosts
    assert (a.cores, a.speeds_flops) == (4, [2e9])
    assert b.properties == {"rack": "3"} and b.speed_flops == 500e6
    assert names(platform.links) == ["la_UP", "la_DOWN", "lb", "lc", "direct", "__loopback__"]
    assert platform.link("lc").properties == {"kind": "copper"}
    assert platform.link("direct").sharing is Sharing.FATPIPE
    loopback = platform.link("__loopback__")
    assert (loopback.bandwidth_Bps, loopback.latency_s, loopback.sharing) == (
        5e9, 1e-6, Sharing.FATPIPE)
    assert names(platform.route(a, c)) == ["direct"]            # declared, one way only
    assert names(platform.route(c, a)) == ["lc", "la_DOWN"]     # through r1, reversed + swapped
    assert names(platform.route(a, b)) == ["la_UP", "lb"]
    assert names(platform.route(b, b)) == ["__loopback__"]
    assert platform.routing.latency_s(c, a) == pytest.approx(40e-6)


def test_default_implicit_loopback():
    platform = load_platform_data({"hosts": [{"name": "solo", "speed": "1Gf"}]})
    (solo,) = platform.hosts
    (loopback,) = platform.route(solo, solo)
    assert loopback.name == "__loopback__"
    assert (loopback.bandwidth_Bps, loopback.latency_s) == (10e9, 0.0)
    assert platform.links == [loopback] and loopback.index == 0


# ------------------------------------------------------------------------------ errors

def base_cluster():
    return {"name": "t", "clusters": [{"name": "c", "prefix": "n", "radical": "0-3",
                                       "speed": "1Gf", "bandwidth": "10Gbps",
                                       "latency": "50us"}]}


def cluster_error(**changes):
    data = base_cluster()
    for key, value in changes.items():
        if value is None:
            data["clusters"][0].pop(key)
        else:
            data["clusters"][0][key] = value
    with pytest.raises(PlatformError) as info:
        load_platform_data(data, "f.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"bandwidth": "10 Gbs"}, "f.yaml: clusters[0].bandwidth: expected a bandwidth like "
                                  "'10Gbps' or '1.25GBps', found '10 Gbs'"),
        ({"bandwidth": 0}, "f.yaml: clusters[0].bandwidth: expected a bandwidth like '10Gbps' "
                           "or '1.25GBps' greater than zero, found 0"),
        ({"bandwidth": "-1Gbps"}, "clusters[0].bandwidth: expected a bandwidth"),
        ({"bandwidth": None}, "f.yaml: clusters[0].bandwidth: missing required key: expected "
                              "a bandwidth like '10Gbps'"),
        ({"latency": "-5us"}, "f.yaml: clusters[0].latency: expected a latency like '50us'"),
        ({"latency": "fast"}, "clusters[0].latency: expected a latency like '50us' or '0s', "
                              "found 'fast'"),
        ({"bandwdth": "1Gbps"}, "f.yaml: clusters[0].bandwdth: unknown key 'bandwdth'"),
        ({"cores": 0}, "f.yaml: clusters[0].cores: expected a whole number of cores, 1 or more, "
                       "found 0"),
        ({"cores": 2.5}, "clusters[0].cores: expected a whole number of cores"),
        ({"speed": "0f"}, "clusters[0].speed: expected a speed like '1Gf' or '2.5Gflops' "
                          "greater than zero"),
        ({"speed": ["1Gf", "fast"]}, "f.yaml: clusters[0].speed[1]: expected a speed like"),
        ({"speed": []}, "clusters[0].speed: expected a speed"),
        ({"pstate": 1}, "f.yaml: clusters[0].pstate: expected a pstate index below 1"),
        ({"pstate": -1}, "clusters[0].pstate: expected a pstate index, 0 or more, found -1"),
        ({"count": 4}, "clusters[0].radical: give either `radical`"),
        ({"radical": None}, "clusters[0].radical: give either `radical`"),
        ({"radical": "3-1"}, "clusters[0].radical: expected a radical like '0-63'"),
        ({"radical": "0-3,2"}, "clusters[0].radical: expected each host number once, found 2"),
        ({"radical": "a-b"}, "clusters[0].radical: expected a radical"),
        ({"sharing": "HALFDUPLEX"}, "clusters[0].sharing: expected one of 'SHARED', 'FATPIPE' "
                                    "or 'SPLITDUPLEX'"),
        ({"backbone": {"bandwidth": "1Gbps", "sharing": "SPLITDUPLEX"}},
         "clusters[0].backbone.sharing: expected one of 'SHARED' or 'FATPIPE'"),
        ({"backbone": {"bandwidth": "1Gbps", "lat": "1us"}},
         "clusters[0].backbone.lat: unknown key 'lat' (accepted: bandwidth, latency, sharing, power); "
         "did you mean 'latency'?"),
        ({"backbone": {"latency": "1us"}}, "clusters[0].backbone.bandwidth: missing required"),
        ({"limiter": "0bps"}, "clusters[0].limiter: expected a bandwidth"),
        ({"loopback": "fast"}, "clusters[0].loopback: expected a mapping, found 'fast'"),
        ({"properties": {"a": [1]}}, "clusters[0].properties: a: expected a string or a number"),
        ({"prefix": "node "}, "clusters[0].prefix: expected a host-name prefix"),
        ({"name": ""}, "clusters[0].name: expected a name"),
    ],
)
def test_cluster_errors_name_the_field(changes, expected):
    message = cluster_error(**changes)
    assert expected in message
    assert "pydantic" not in message.lower()
    assert "Traceback" not in message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(bogus=1), "f.yaml: bogus: unknown key 'bogus' (accepted: name, config,"),
        (lambda d: d.update(clusters=5), "f.yaml: clusters: expected a list, found 5"),
        (lambda d: d.update(clusters=[]),
         "f.yaml: hosts: a platform needs `zone`, `clusters` or `hosts`"),
        (lambda d: d["clusters"].append(copy.deepcopy(d["clusters"][0])),
         "f.yaml: clusters: a platform without `zone` is one cluster, found 2"),
        (lambda d: d.update(hosts=[{"name": "x", "speed": "1Gf"}]),
         "f.yaml: hosts: a platform has either `clusters` or hosts/routers/links/routes"),
        (lambda d: d.update(config={"a": {"b": 1}}), "f.yaml: config: a: expected a string"),
    ],
)
def test_top_level_errors(change, expected):
    data = base_cluster()
    change(data)
    with pytest.raises(PlatformError) as info:
        load_platform_data(data, "f.yaml")
    assert expected in str(info.value)


def test_several_errors_are_reported_together():
    data = base_cluster()
    data["clusters"][0].update(bandwidth="x", latency="y")
    with pytest.raises(PlatformError) as info:
        load_platform_data(data, "f.yaml")
    lines = str(info.value).splitlines()
    assert [line.split(": ")[1] for line in lines] == ["clusters[0].bandwidth",
                                                       "clusters[0].latency"]


def explicit_error(mutate):
    data = yaml.safe_load(EXPLICIT)
    mutate(data)
    with pytest.raises(PlatformError) as info:
        load_platform_data(data, "s.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["hosts"].append({"name": "a", "speed": "1Gf"}),
         "s.yaml: hosts[3].name: duplicate host or router name 'a' (already used by "
         "hosts[0].name)"),
        (lambda d: d["routers"].append("b"), "s.yaml: routers[1]: duplicate host or router "
                                             "name 'b'"),
        (lambda d: d["links"].append({"name": "lb", "bandwidth": "1Gbps"}),
         "s.yaml: links[4].name: duplicate link name 'lb' (already used by links[1].name)"),
        (lambda d: d["links"].append({"name": "la_UP", "bandwidth": "1Gbps"}),
         "s.yaml: links[4].name: duplicate link name 'la_UP' (already used by links[0].name)"),
        (lambda d: d["links"].append({"name": "__loopback__", "bandwidth": "1Gbps"}),
         "reserved for the implicit loopback link"),
        (lambda d: d["routes"].append({"src": "a", "dst": "b", "links": ["lbb"]}),
         "s.yaml: routes[4].links[0]: expected the name of a declared link, found 'lbb' (did "
         "you mean 'lb'?)"),
        (lambda d: d["routes"].append({"src": "a", "dst": "b", "links": ["la"]}),
         "s.yaml: routes[4].links[0]: 'la' is SPLITDUPLEX (links[0]): name a direction, 'la_UP' "
         "or 'la_DOWN'"),
        (lambda d: d["routes"].append({"src": "a", "dst": "zz", "links": ["lb"]}),
         "s.yaml: routes[4].dst: expected the name of a host or router, found 'zz'"),
        (lambda d: d["routes"].append({"src": "r1", "dst": "a", "links": ["la_DOWN"]}),
         "s.yaml: routes[4]: route 'r1' -> 'a' is declared twice (first as the reverse of the "
         "symmetric route 'a' -> 'r1'"),
        (lambda d: d["routes"].append({"src": "a", "dst": "b", "links": []}),
         "s.yaml: routes[4].links: expected a non-empty list of link names, found []"),
        (lambda d: d["routes"].append({"src": "a", "dst": "b", "links": ["lb", "lb"]}),
         "s.yaml: routes[4].links: a link appears twice"),
        (lambda d: d["routes"].append({"src": "a", "dst": "b", "links": ["lb"],
                                       "symmetric": "maybe"}),
         "s.yaml: routes[4].symmetric: expected true or false"),
        (lambda d: d["links"][1].update(name="lx"),
         "s.yaml: routes[1].links[0]: expected the name of a declared link, found 'lb'"),
        (lambda d: d["hosts"][1].update(pstate=2), "s.yaml: hosts[1].pstate: expected a pstate "
                                                   "index below 2"),
        (lambda d: d.update(routes=d["routes"][:2]),
         "s.yaml: routes: some hosts cannot reach each other ('a' -> 'c'"),
        (lambda d: d["config"].update({"network/loopback-bw": "fast"}),
         "s.yaml: config.network/loopback-bw: expected a bandwidth"),
        (lambda d: d["config"].update({"network/loopback-bw": "0Bps"}),
         "s.yaml: config.network/loopback-bw: expected a value greater than zero"),
    ],
)
def test_explicit_platform_errors(mutate, expected):
    assert expected in explicit_error(mutate)


def test_fullduplex_is_simgrid_spelling_of_splitduplex():
    data = yaml.safe_load(EXPLICIT)
    data["links"][1]["sharing"] = "FULLDUPLEX"
    data["routes"][1]["links"] = ["lb_UP"]
    platform = load_platform_data(data)
    assert platform.link("lb_DOWN").sharing is Sharing.SPLITDUPLEX


# -------------------------------------------------------------------------------- files

def test_yaml_syntax_error_names_line(tmp_path):
    path = write(tmp_path, "name: x\nclusters: [\n  - {name: c\n")
    with pytest.raises(PlatformError) as info:
        load_platform(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line ")
    assert "YAML syntax error" in message


def test_duplicate_yaml_key_is_an_error(tmp_path):
    path = write(tmp_path, CLUSTER.replace("    cores: 4\n", "    cores: 4\n    cores: 8\n"))
    with pytest.raises(PlatformError, match="key 'cores' appears twice"):
        load_platform(path)


def test_yaml_merge_keys_may_be_overridden(tmp_path):
    path = write(tmp_path, """\
        hosts:
          - &base {name: a, speed: 1Gf, cores: 2}
          - <<: *base
            name: b
            cores: 8
        links: [{name: l, bandwidth: 1Gbps}]
        routes: [{src: a, dst: b, links: [l]}]
        """)
    platform = load_platform(path)
    assert [(h.name, h.cores) for h in platform.hosts] == [("a", 2), ("b", 8)]


def test_top_level_must_be_a_mapping(tmp_path):
    with pytest.raises(PlatformError, match=r"<top>: expected a mapping"):
        load_platform(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(PlatformError, match=r"<top>: expected a mapping"):
        load_platform(write(tmp_path, ""))


def test_missing_file_and_xml(tmp_path):
    with pytest.raises(PlatformError, match="cannot read the platform file"):
        load_platform(tmp_path / "nope.yaml")
    with pytest.raises(PlatformError, match="cannot read the platform file"):
        load_platform(tmp_path / "platform.xml")  # XML import: tests/platform/test_xml_import.py


# ---------------------------------------------------------------------- hostfile, ranks

def test_parse_hostfile(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_text("# two on node-0\nnode-0:2\n\n  node-5   # trailing comment\nnode-1 slots=3\n")
    assert parse_hostfile(path) == ["node-0", "node-0", "node-5", "node-1", "node-1", "node-1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("node-0\nnode-1:x\n", "hf: line 2: expected a count of 1 or more after the host name, "
                               "found 'x'"),
        ("node-0:0\n", "hf: line 1: expected a count of 1 or more after the host name, "
                        "found '0'"),
        ("node-0 node-1\n", "hf: line 1: expected 'host' or 'host:count', found 'node-0 node-1'"),
        ("# nothing\n\n", "hf: the hostfile names no host"),
    ],
)
def test_hostfile_errors_name_file_and_line(text, expected):
    with pytest.raises(PlatformError) as info:
        parse_hostfile_text(text, "hf")
    assert str(info.value) == expected


def test_missing_hostfile(tmp_path):
    with pytest.raises(PlatformError, match="cannot read the hostfile"):
        parse_hostfile(tmp_path / "none")


def test_place_ranks_round_robin_over_platform_hosts(default):
    placed = place_ranks(default, 130)
    assert [h.name for h in placed[:3]] == ["node-0", "node-1", "node-2"]
    assert placed[63].name == "node-63"
    assert placed[64].name == "node-0" and placed[129].name == "node-1"
    assert placed[0] is default.hosts[0]


def test_place_ranks_with_hostfile(default):
    hosts = parse_hostfile_text("node-3:2\nnode-7\n")
    placed = place_ranks(default, 5, hosts)
    assert [h.name for h in placed] == ["node-3", "node-3", "node-7", "node-3", "node-3"]


def test_place_ranks_errors(default):
    with pytest.raises(PlatformError, match="my.hosts: entry 2: host 'node-99' is not in "
                                            "platform 'cluster64'"):
        place_ranks(default, 4, ["node-1", "node-99"], source="my.hosts")
    with pytest.raises(PlatformError, match="-np: expected a number of processes of 1 or more"):
        place_ranks(default, 0)
