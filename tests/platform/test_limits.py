"""Bounds of smpy.platform.limits and smpy.support.memory: what is refused, and that honest
inputs near the bounds still load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from smpy.platform import PlatformError, load_platform
from smpy.platform.limits import MAX_XML_DEPTH, MAX_YAML_DEPTH
from smpy.support import memory
from smpy.support.config import Config, ConfigError


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMPY_CACHE_DIR", "")


def test_defaults_merged_by_aliases_still_load(tmp_path: Path) -> None:
    g = tmp_path / "q.yaml"
    g.write_text("zone:\n  name: z\n  routing: Full\n  hosts:\n"
                 "    - &first {name: a, speed: 1Gf, cores: 4}\n"
                 + "".join(f"    - {{<<: *first, name: b{i}}}\n" for i in range(20)))
    assert [h.cores for h in load_platform(g).hosts] == [4] * 21


def test_a_large_file_written_out_is_not_an_amplification(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    hosts = [{"name": f"h{i}", "speed": "1Gf"} for i in range(3000)]
    f.write_text(yaml.safe_dump({"zone": {"name": "z", "routing": "Full", "hosts": hosts}}))
    assert len(load_platform(f).hosts) == 3000


def test_zones_nested_just_below_the_bounds_load(tmp_path: Path) -> None:
    zone: dict = {"name": "leaf", "routing": "Full", "hosts": [{"name": "h", "speed": "1Gf"}]}
    levels = (MAX_YAML_DEPTH - 8) // 2
    for i in range(levels):
        zone = {"name": f"z{i}", "routing": "Full", "zones": [zone]}
    f = tmp_path / "deep.yaml"
    f.write_text(yaml.safe_dump({"zone": zone}))
    assert [h.name for h in load_platform(f).hosts] == ["h"]
    n = MAX_XML_DEPTH - 2
    x = tmp_path / "deep.xml"
    x.write_text('<?xml version="1.0"?>\n<platform version="4.1">'
                 + "".join(f'<zone id="z{i}" routing="Full">' for i in range(n))
                 + '<host id="h" speed="1Gf"/>' + "</zone>" * n + "</platform>\n")
    assert [h.name for h in load_platform(x).hosts] == ["h"]
    x.write_text(x.read_text().replace('<host id="h"', '<zone id="one-more" routing="Full">'
                                       '<host id="h"').replace("</zone>", "</zone></zone>", 1))
    with pytest.raises(PlatformError, match=r"deep\.xml: line 2, <host id='h'>: elements nested"):
        load_platform(x)


def test_xml_integer_with_trailing_zero_fraction_is_silent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = tmp_path / "p.xml"
    x.write_text('<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full">'
                 '<host id="a" speed="1Gf" core="4.0"/></zone></platform>\n')
    assert load_platform(x).hosts[0].cores == 4
    assert capsys.readouterr().err == ""


def test_memory_estimate_and_insisting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert memory.estimate_bytes(1000, 64, 129) == pytest.approx(100e6 + 12e6 + 96e3 + 12.9e3)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1e9)
    memory.check_fits("small", 1000, 64, 129)
    with pytest.raises(memory.MemoryLimitError,
                       match=r"^big: 100000 ranks, 64 hosts need at least 1\.3 GB of memory, "
                             r"1 GB available; refused"):
        memory.check_fits("big", 100000, 64)
    memory.insist(True)
    try:
        memory.check_fits("big", 100000, 64)
    finally:
        memory.insist(False)


def test_platform_too_large_for_the_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "available_bytes", lambda: 150e6)
    f = tmp_path / "big.yaml"
    f.write_text("clusters:\n  - {name: c, count: 100000, speed: 1Gf, bandwidth: 10Gbps, "
                 "latency: 50us}\n")
    with pytest.raises(PlatformError, match=rf"^{f}: building the platform: 100000 hosts, "
                                            r"300000 links need at least 280 MB of memory, 150 MB available; refused"):
        load_platform(f)


def test_cfg_and_platform_config_share_one_check() -> None:
    import smpy.runtime.world  # noqa: F401 -- declares the settings
    for name, bad in (("smpi/test", "-1"), ("network/bandwidth-factor", "0:0"),
                      ("smpi/iprobe-cpu-usage", "2"), ("smpi/or", "0:0:-1e-9")):
        with pytest.raises(ConfigError, match=f"^setting {name!r}: bad value"):
            Config({name: bad})
        with pytest.raises(ConfigError, match=f"^plat.yaml: config.{name}: bad value"):
            Config({}).set_defaults_from({name: bad}, "plat.yaml")
        # a --cfg value does not hide a bad value in the platform
        with pytest.raises(ConfigError, match=f"^plat.yaml: config.{name}: bad value"):
            Config({"smpi/test": "0"}).set_defaults_from({name: bad}, "plat.yaml")
    good = Config({"network/bandwidth-factor": "0:0.9;65536:0.97", "smpi/os": "0:1e-6:1e-9"})
    assert good.get("network/bandwidth-factor") == "0:0.9;65536:0.97"
    assert good.get("network/latency-factor") == ""
