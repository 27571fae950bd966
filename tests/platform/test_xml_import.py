"""SimGrid XML import (smpy.platform.xml), XML → YAML conversion (smpy.platform.convert) and the
``smpy platform`` command (smpy.cli.platform_cmd).

Routes of the imported platforms are checked against SimGrid in test_simgrid_truth.py; here:
what each element and attribute becomes, the error messages (file, line, element,
attribute), and that a converted YAML file is the same platform as its XML.
"""

from pathlib import Path

import pytest
import yaml

from smpy.cli.platform_cmd import main as platform_main
from smpy.network.links import Sharing
from smpy.platform import PlatformError, load_platform, load_platform_data
from smpy.platform.convert import compare_platforms, xml_to_yaml

DATA = Path(__file__).resolve().parent / "data"

HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def write(tmp_path, body, version="4.1", name="p.xml"):
    path = tmp_path / name
    path.write_text(f"{HEAD}<platform version=\"{version}\">\n{body}\n</platform>\n")
    return path


def error(tmp_path, body, **kwargs):
    path = write(tmp_path, body, **kwargs)
    with pytest.raises(PlatformError) as info:
        load_platform(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert "Traceback" not in message
    return message.removeprefix(f"{path}: ")


# ------------------------------------------------------------------------------- mapping

def test_hosts_links_config_and_properties(tmp_path):
    path = write(tmp_path, """\
  <config id="General">
    <prop id="network/model" value="LV08"/>
    <prop id="smpi/host-speed" value="1Gf"/>
  </config>
  <zone id="world" routing="Full">
    <prop id="owner" value="lab"/>
    <host id="a" speed="2Gf,1Gf,0f" core="8" pstate="1.0">
      <prop id="wattage_per_state" value="10:20:30"/>
    </host>
    <host id="b" speed="1Gf" coordinates="1 2 3"/>
    <link id="l" bandwidth="1.25GBps" latency="10us" sharing_policy="FULLDUPLEX">
      <prop id="kind" value="optic"/>
    </link>
    <route src="a" dst="b"><link_ctn id="l" direction="UP"/></route>
  </zone>""")
    platform = load_platform(path)
    assert platform.name == "p"
    assert platform.config == {"network/model": "LV08", "smpi/host-speed": "1Gf"}
    a, b = platform.hosts
    assert (a.cores, a.speeds_flops, a.pstate, a.speed_flops) == (8, [2e9, 1e9, 0.0], 1, 1e9)
    assert a.properties == {"wattage_per_state": "10:20:30"}
    assert platform.link("l_UP").properties == {"kind": "optic"}
    assert platform.link("l_DOWN").sharing is Sharing.SPLITDUPLEX
    assert [x.name for x in platform.route(a, b)] == ["l_UP"]
    assert [x.name for x in platform.route(b, a)] == ["l_DOWN"]
    assert platform.zone is not None and platform.zone.properties == {"owner": "lab"}


def test_lone_cluster_and_cluster_properties(tmp_path):
    path = write(tmp_path, """\
  <cluster id="c" prefix="n" suffix=".x" radical="0-2" speed="1Gf" core="2" bw="1GBps" lat="1us"
           bb_bw="10GBps" bb_lat="0" router_id="gw">
    <prop id="rack" value="3"/>
  </cluster>""")
    platform = load_platform(path)
    assert [h.name for h in platform.hosts] == ["n0.x", "n1.x", "n2.x"]
    assert all(h.properties == {"rack": "3"} and h.cores == 2 for h in platform.hosts)
    assert platform.zone.name == "c" and platform.zone.properties == {"rack": "3"}
    assert [p.name for p in platform.zone.vertices][-1] == "gw"


def test_version_4_vocabulary():
    platform = load_platform(DATA / "xml" / "version4.xml")
    assert len(platform.hosts) == 5
    assert platform.link("right_backbone").sharing is Sharing.FATPIPE


def test_cabinets_are_expanded_as_simgrid_does(tmp_path):
    path = write(tmp_path, """\
  <zone id="world" routing="Cluster">
    <router id="r"/>
    <cabinet id="cab" prefix="c" suffix="" radical="1-2" speed="1Gf" bw="1GBps" lat="1us"/>
    <backbone id="bb" bandwidth="10GBps" latency="2us"/>
  </zone>""")
    platform = load_platform(path)
    c1, c2 = platform.hosts
    assert [x.name for x in platform.route(c1, c2)] == ["link_c1_UP", "bb", "link_c2_DOWN"]


# -------------------------------------------------------------------------------- errors

@pytest.mark.slow
@pytest.mark.parametrize(("body", "expected"), [
    ('<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="10 Gbs" lat="1us"/>',
     "line 4, <cluster id='c'> attribute 'bw': expected a bandwidth like '10Gbps' or "
     "'1.25GBps', found '10 Gbs'"),
    ('<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1Gbps" lat="1us" '
     'topology="TORUS" topo_parameters="2,x"/>',
     "line 4, <cluster id='c'> attribute 'topo_parameters': expected torus dimensions like "
     "'3,2,2', found '2,x'"),
    ('<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1Gbps" lat="1us" '
     'topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"/>',
     "line 4, <cluster id='c'> attribute 'radical': the FAT_TREE topology '2;4,4;1,2;1,2' has "
     "16 hosts, but only 4 host numbers are given"),
    ('<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1Gbps" lat="1us" '
     'colour="red"/>', "line 4, <cluster id='c'> attribute 'colour': unknown or unsupported "
     "attribute (accepted: bb_bw, bb_lat"),
    ('<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" lat="1us"/>',
     "line 4, <cluster id='c'>: missing required attribute 'bw'"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf" speed_file="a.txt"/></zone>',
     "line 4, <host id='a'> attribute 'speed_file': availability/state profiles are not "
     "supported"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf" state_file="no-such.states"/></zone>',
     "line 4, <host id='a'> attribute 'state_file': cannot read"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"><disk id="d" read_bw="1GBps" '
     'write_bw="1GBps"/>\n<disk id="e" read_bw="1GBps" write_bw="1GBps"/></host></zone>',
     "line 6, <disk id='e'>: smpy models one disk per host; remove the others"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"><disk id="d" read_bw="1GBps"/>'
     '</host></zone>', "line 5, <disk id='d'>: missing required attribute 'write_bw'"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
     '<link id="l" bandwidth="1GBps"/>\n<bypassRoute src="a" dst="b"><link_ctn id="l"/>'
     '</bypassRoute></zone>', "line 7, <bypassRoute src='a' dst='b'>: bypass routes are not "
     "supported"),
    ('<zone id="z" routing="Vivaldi"/>', "line 4, <zone id='z'> attribute 'routing': Vivaldi "
     "zones are not supported"),
    ('<zone id="z" routing="Star"/>', "line 4, <zone id='z'> attribute 'routing': expected one "
     "of 'Full', 'Floyd'"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
     '<link id="l" bandwidth="1GBps"/>\n<route src="a" dst="b">\n<link_ctn id="m"/></route>'
     '</zone>', "line 8, <link_ctn id='m'> attribute 'id': expected the name of a declared "
     "link, found 'm'"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/><host id="a" speed="1Gf"/></zone>',
     "line 5, <host id='a'> attribute 'id': duplicate host, router or zone name 'a' (already "
     "used by line 5, <host id='a'> attribute 'id')"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
     '<link id="l" bandwidth="1GBps" sharing_policy="SPLITDUPLEX"/>\n<route src="a" dst="b">'
     '<link_ctn id="l"/></route></zone>', "line 7, <link_ctn id='l'> attribute 'id': 'l' is "
     "SPLITDUPLEX: give a direction"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
     '<link id="l" bandwidth="1GBps"/>\n<route src="a" dst="b"><link_ctn id="l" '
     'direction="UP"/></route></zone>', "line 7, <link_ctn id='l'> attribute 'direction': 'l' "
     "is not a SPLITDUPLEX link"),
    ('<zone id="z" routing="Full">\n<host id="a" speed="1Gf"/>\n<route src="a" dst="q">'
     '<link_ctn id="l"/></route></zone>', "line 6, <route src='a' dst='q'> attribute 'dst': "
     "expected the name of a host, router or zone, found 'q'"),
    ('<zone id="a" routing="Full"/>\n<zone id="b" routing="Full"/>',
     "line 5, <zone id='b'>: a platform has one root element"),
    ('<zone id="a" routing="Full"><host id="h" speed="1Gf"/></zone>\n<config/>',
     "line 5, <config>: all <config> elements must come before"),
    ('<zone id="a" routing="Full"><host id="h" speed="1Gf" core="many"/></zone>',
     "line 4, <host id='h'> attribute 'core': expected a whole number, found 'many'"),
    ('<zone id="a" routing="Full"><host id="h" speed="fast"/></zone>',
     "line 4, <host id='h'> attribute 'speed': expected a speed like '1Gf'"),
    ('<zone id="a" routing="Full"><host id="h" speed="1Gf"/>\n<link id="l" bandwidth="1GBps" '
     'sharing_policy="WIFI"/></zone>', "line 5, <link id='l'> attribute 'sharing_policy': WIFI "
     "links are not supported"),
    ('<zone id="a" routing="Full"><host id="h" speed="1Gf"/></zone>\n<actor host="h" '
     'function="f"/>', "line 5, <actor>: deployment (<actor>) belongs to the program"),
])
def test_errors_name_the_line_element_and_attribute(tmp_path, body, expected):
    message = error(tmp_path, body)
    assert expected in message


def test_zone_with_hosts_and_zones_is_refused_with_its_location(tmp_path):
    message = error(tmp_path, '<zone id="w" routing="Full">\n<zone id="x" routing="Full">'
                    '<host id="a" speed="1Gf"/></zone>\n<host id="h" speed="1Gf"/></zone>')
    assert message.startswith("line 4, <zone id='w'>: a zone with `zones` cannot also have "
                              "`hosts`")


@pytest.mark.parametrize(("version", "expected"), [
    ("3", "version 3 is too old"), ("4.2", "comes from a newer SimGrid"),
    ("four", "expected a version number like '4.1'")])
def test_versions(tmp_path, version, expected):
    assert expected in error(tmp_path, '<zone id="a" routing="Full"/>', version=version)


def test_xml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text("<platform version='4.1'>\n<zone id='a' routing='Full'>\n</platform>\n")
    with pytest.raises(PlatformError, match=r"bad.xml: line 3, column \d+: XML syntax error: "
                                            "mismatched tag"):
        load_platform(path)


def test_not_a_platform_file(tmp_path):
    path = tmp_path / "x.xml"
    path.write_text("<html/>")
    with pytest.raises(PlatformError, match="line 1, <html>: expected a SimGrid platform file"):
        load_platform(path)


# ---------------------------------------------------------------------------- conversion

ROUND_TRIP = ["xml/multizone.xml", "xml/dijkstra.xml", "xml/version4.xml",
              "xml/torus_options.xml", "xml/fattree_options.xml", "xml/dragonfly_options.xml",
              "xml/flat_options.xml", "simgrid/cluster_multi.xml", "simgrid/small_platform.xml",
              "simgrid/routing_cluster.xml", "simgrid/cluster_and_one_host.xml",
              "simgrid/meta_cluster.xml", "simgrid/crosstraffic.xml", "simgrid/config.xml"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ROUND_TRIP)
def test_converted_yaml_is_the_same_platform(tmp_path, name):
    source = DATA / name
    target = tmp_path / (source.stem + ".yaml")
    text = xml_to_yaml(source, target)
    assert target.read_text() == text
    assert text.startswith(f"# Converted from {source.name}")
    original = load_platform(source)
    converted = load_platform(target)
    assert converted.name == original.name
    assert converted.config == original.config
    # hosts, links (name, bandwidth, latency, sharing, properties) and every route
    assert compare_platforms(original, converted) == []


def test_conversion_keeps_netpoint_order_and_one_way_halves():
    data = yaml.safe_load(xml_to_yaml(DATA / "xml" / "multizone.xml"))
    b_hosts = data["zone"]["zones"][1]["zones"][0]
    # hosts and routers interleaved in the XML: Floyd's tie-breaking depends on that order
    assert b_hosts["order"] == ["b1", "rb1", "b2", "rb2", "b3"]
    # <link_ctn id="l-b2-b3_UP"/> keeps the UP half on the way back: two one-way routes
    assert b_hosts["routes"][-2:] == [
        {"src": "b2", "dst": "b3", "links": ["l-b2-b3_UP"], "symmetric": False},
        {"src": "b3", "dst": "b2", "links": ["l-b2-b3_UP"], "symmetric": False}]


def test_compare_platforms_reports_differences():
    first = load_platform(DATA / "simgrid" / "small_platform.xml")
    data = yaml.safe_load(xml_to_yaml(DATA / "simgrid" / "small_platform.xml"))
    data["zone"]["routes"][5]["links"] = ["3"]
    second = load_platform_data(data)
    problems = compare_platforms(first, second)
    assert problems and problems[0].startswith("route ")


# ---------------------------------------------------------------------------- smpy platform

@pytest.mark.slow
def test_cli_convert_check_show_route(tmp_path, capsys):
    target = tmp_path / "out.yaml"
    assert platform_main(["convert", "--check", str(DATA / "xml" / "multizone.xml"),
                          str(target)]) == 0
    err = capsys.readouterr().err
    assert "17 hosts, 60 links and 289 routes identical" in err
    assert load_platform(target).name == "multizone"
    assert platform_main(["convert", str(DATA / "simgrid" / "two_hosts.xml"), "-"]) == 0
    assert "routing: Full" in capsys.readouterr().out
    assert platform_main(["show", str(target)]) == 0
    out = capsys.readouterr().out
    assert "b-hosts (Floyd): 3 hosts, 2 routers" in out
    assert platform_main(["route", str(target), "d1", "b1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "d1 -> b1: 5 links, latency 81.02 ms"


def test_cli_errors_are_one_line_without_traceback(tmp_path, capsys):
    bad = write(tmp_path, '<zone id="a" routing="Full"><host id="h" speed="fast"/></zone>')
    assert platform_main(["convert", str(bad), str(tmp_path / "o.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"smpy platform: {bad}: line 4, <host id='h'> attribute 'speed'")
    assert "Traceback" not in err
    assert not (tmp_path / "o.yaml").exists()
    assert platform_main(["convert", str(tmp_path / "missing.xml"), "-"]) == 1
    assert "cannot read the platform file" in capsys.readouterr().err
    assert platform_main(["route", str(DATA / "xml" / "dijkstra.xml"), "a", "zz"]) == 1
    assert "unknown host 'zz'" in capsys.readouterr().err
    assert platform_main(["convert", str(DATA / "xml" / "dijkstra.xml") + ".yaml", "-"]) == 1
    with pytest.raises(SystemExit):
        platform_main(["frobnicate"])


@pytest.mark.slow
def test_smpyrun_runs_on_an_xml_platform(tmp_path):
    import subprocess
    import sys

    hostfile = tmp_path / "hosts"
    hostfile.write_text("a1-0.a\nb2\nc-gw\nd1\nbt-1\n")   # one rank in each zone
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "smpy.cli.smpyrun", "-np", "5", "--platform",
         str(DATA / "xml" / "multizone.xml"), "--hostfile", str(hostfile),
         str(root / "examples" / "ring.py")],
        capture_output=True, text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "token = 10 (expected 10)" in proc.stdout
    assert "5 ranks on 5 hosts of platform 'multizone'" in proc.stderr + proc.stdout
