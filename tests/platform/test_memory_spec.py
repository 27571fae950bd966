"""`memory: {bandwidth, core_bandwidth}` on hosts and clusters (host memory-contention model)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from smpy.platform import PlatformError, load_platform

HOSTS = """
hosts:
  - {name: a, speed: 1Gf, cores: 4, memory: {bandwidth: 40GBps, core_bandwidth: 16GBps}}
  - {name: b, speed: 1Gf}
links: [{name: l, bandwidth: 1GBps, latency: 1us}]
routes: [{src: a, dst: b, links: [l]}]
"""

CLUSTER = """
clusters:
  - {name: c, count: 2, cores: 2, speed: 1Gf, bandwidth: 1GBps, latency: 1us,
     memory: {bandwidth: %s, core_bandwidth: %s}}
"""


def test_hosts_and_clusters_carry_their_memory_bandwidths(tmp_path: Path) -> None:
    f = tmp_path / "h.yaml"
    f.write_text(HOSTS)
    a, b = load_platform(str(f)).hosts
    assert (a.memory_bandwidth, a.core_memory_bandwidth) == (40e9, 16e9)
    assert a.memory_contention(4) == pytest.approx(1.6) and a.memory_contention(2) == 1.0
    assert b.memory_bandwidth == math.inf and b.memory_contention(8) == 1.0
    f.write_text(CLUSTER % ("30GBps", "20GBps"))
    hosts = load_platform(str(f)).hosts
    assert [h.memory_contention(2) for h in hosts] == pytest.approx([4 / 3, 4 / 3])


@pytest.mark.parametrize(("bw", "core", "message"), [
    ("10GBps", "20GBps", "clusters[0].memory.core_bandwidth: one core cannot stream faster"),
    ("fast", "20GBps", "clusters[0].memory.bandwidth"),
    ("-1GBps", "1GBps", "clusters[0].memory.bandwidth"),
])
def test_bad_memory_entries_name_the_field(tmp_path: Path, bw: str, core: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(CLUSTER % (bw, core))
    with pytest.raises(PlatformError, match=message.replace(".", r"\.").replace("[", r"\[").replace("]", r"\]")):
        load_platform(str(f))


def test_platform_show_gives_the_memory_bandwidths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from smpy.cli import platform_cmd

    f = tmp_path / "h.yaml"
    f.write_text(HOSTS)
    assert platform_cmd.main(["show", str(f)]) == 0
    out = capsys.readouterr().out
    assert "hosts: 1 x 4 cores at 1 Gf, memory 40GBps (16GBps per core alone; sigma(4) = 1.6)" in out
    assert "hosts: 1 x 1 cores at 1 Gf\n" in out
