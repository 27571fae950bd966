"""smpy's platforms against SimGrid 3.32: hosts, links and routes, for SimGrid's own example
platforms (``data/simgrid``, copied from SimGrid 3.32) and smpy's test platforms
(``data/xml``: every zone routing, every topology option, nested zones).

The expected values in ``data/truth`` were computed once by SimGrid itself:
``python tests/platform/simgrid_truth/make_truth.py`` compiles ``sg_routes.cpp`` against
SimGrid 3.32 (``g++ sg_routes.cpp -lsimgrid``), which prints every host, every link and the
route (``simgrid::s4u::Host::route_to``) of every host pair (a regular sample of pairs for
the platforms of more than 150 hosts). Each truth file keeps the count and a SHA-256 of all
those lines, and a sample of them in clear.
"""

import sys
from pathlib import Path

import pytest

from smpy.network.links import Sharing
from smpy.platform import load_platform

sys.path.insert(0, str(Path(__file__).resolve().parent / "simgrid_truth"))

from truth import (  # noqa: E402
    DATA,
    TRUTH,
    digest,
    host_line,
    link_line,
    read_truth,
    route_line,
    stride,
)

TRUTH_FILES = sorted(TRUTH.glob("*.txt"))


def smpy_lines(platform, skipped):
    """smpy's platform written as the truth files write SimGrid's."""
    hosts = sorted(platform.hosts, key=lambda h: h.name)
    lines = {
        "host": [host_line(h.name, h.cores, h.speeds_flops[0], h.pstate_count) for h in hosts],
        # the halves of a SPLITDUPLEX link are SHARED links in SimGrid
        "link": [link_line(link.name, link.bandwidth_Bps, link.latency_s,
                           "SHARED" if link.sharing is Sharing.SPLITDUPLEX else link.sharing.value)
                 for link in platform.links if link.name != "__loopback__"],
        "route": [],
    }
    step = stride(len(hosts))
    for src in hosts[::step]:
        for dst in hosts[::step]:
            if (src.name, dst.name) not in skipped:
                links = platform.routing.simgrid_route(src, dst)
                lines["route"].append(route_line(src.name, dst.name, [x.name for x in links]))
                if links:  # what the simulation uses: the same route, cached
                    assert platform.route(src, dst) == links
    return lines


def test_there_is_ground_truth():
    assert len(TRUTH_FILES) >= 25


@pytest.mark.slow
@pytest.mark.parametrize("path", TRUTH_FILES, ids=[p.stem for p in TRUTH_FILES])
def test_hosts_links_and_routes_are_simgrids(path):
    truth = read_truth(path)
    platform = load_platform(DATA / truth.platform)
    lines = smpy_lines(platform, truth.skipped)
    for kind in ("host", "link", "route"):
        ours = set(lines[kind])
        wrong = [line for line in truth.samples.get(kind, []) if line not in ours]
        assert not wrong, f"{kind} lines of SimGrid that smpy does not give: {wrong[:5]}"
        assert len(lines[kind]) == truth.counts[kind], kind
        assert digest(lines[kind]) == truth.digests[kind], f"some {kind} lines differ"
