"""The built-platform cache: a platform read once is reused, keyed by content and code."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from smpy.platform import load_platform
from smpy.platform.loader import cache_dir

YAML = """
name: tiny
hosts:
  - {{name: a, speed: 1Gf}}
  - {{name: b, speed: {speed}}}
links:
  - {{name: l, bandwidth: 1GBps, latency: 1us}}
routes:
  - {{src: a, dst: b, links: [l]}}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SMPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "platforms"


def test_second_load_comes_from_the_cache(tmp_path: Path, cache: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    first = load_platform(f)
    entries = list(cache.glob("p-*.pickle"))
    assert len(entries) == 1
    second = load_platform(f)
    assert second is not first  # a fresh copy each time: runs never share mutable state
    assert second.host("b").speed_flops == first.host("b").speed_flops == 2e9
    assert [h.name for h in second.hosts] == ["a", "b"]
    assert second.route(second.host("a"), second.host("b"))[0].name == "l"


def test_changed_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    assert load_platform(f).host("b").speed_flops == 2e9
    f.write_text(YAML.format(speed="3Gf"))
    assert load_platform(f).host("b").speed_flops == 3e9
    assert len(list(cache.glob("p-*.pickle"))) == 2


def test_corrupt_entry_is_ignored(tmp_path: Path, cache: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    load_platform(f)
    (entry,) = cache.glob("p-*.pickle")
    entry.write_bytes(b"not a pickle")
    assert load_platform(f).host("b").speed_flops == 2e9


def test_empty_cache_dir_disables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SMPY_CACHE_DIR", "")
    assert cache_dir() is None
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    assert load_platform(f).host("b").speed_flops == 2e9


@pytest.mark.slow
def test_cached_load_imports_neither_pydantic_nor_yaml(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    code = textwrap.dedent(f"""
        import sys
        from smpy.platform import load_platform
        load_platform({str(f)!r})
        print(sorted(m for m in ("pydantic", "yaml", "smpy.platform.schema") if m in sys.modules))
    """)
    env_cache = {"SMPY_CACHE_DIR": str(tmp_path / "c")}
    import os
    env = {**os.environ, **env_cache}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True)
    assert "pydantic" in first.stdout  # parsed and validated the first time
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True)
    assert second.stdout.strip() == "[]"
