"""The built-platform cache: a platform read once is reused, keyed by content and code."""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from smpy.platform import load_platform
from smpy.platform.cache import MAGIC, key_path, prune, read_entry
from smpy.platform.loader import cache_dir
from smpy.support.trust import trusted_file

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
    monkeypatch.setenv("SMPY_CACHE_KEY", str(tmp_path / "config" / "cache-key"))
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
    env_cache = {"SMPY_CACHE_DIR": str(tmp_path / "c"), "SMPY_CACHE_KEY": str(tmp_path / "k")}
    import os
    env = {**os.environ, **env_cache}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True)
    assert "pydantic" in first.stdout  # parsed and validated the first time
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True)
    assert second.stdout.strip() == "[]"


class _Planted:
    """A pickle that, when loaded, creates the file named ``marker`` (code execution)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def _entry(tmp_path: Path, cache: Path) -> tuple[Path, Path]:
    f = tmp_path / "p.yaml"
    f.write_text(YAML.format(speed="2Gf"))
    load_platform(f)
    (entry,) = cache.glob("p-*.pickle")
    return f, entry


def test_entries_and_key_are_private(tmp_path: Path, cache: Path) -> None:
    _, entry = _entry(tmp_path, cache)
    assert entry.stat().st_mode & 0o777 == 0o600
    assert entry.read_bytes().startswith(MAGIC)
    assert key_path().stat().st_mode & 0o777 == 0o600
    assert key_path().parent.stat().st_mode & 0o777 == 0o700
    assert not key_path().is_relative_to(cache.parent)  # the key is kept apart


def test_planted_pickle_never_runs(tmp_path: Path, cache: Path) -> None:
    f, entry = _entry(tmp_path, cache)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Planted(marker))
    for planted in (payload, MAGIC + b"0" * 32 + payload):  # no HMAC, a wrong HMAC
        entry.write_bytes(planted)
        assert load_platform(f).host("b").speed_flops == 2e9
        assert not marker.exists()


def test_entry_signed_with_another_key_is_refused(tmp_path: Path, cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    f, entry = _entry(tmp_path, cache)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Planted(marker))
    other = hmac.new(b"x" * 32, entry.name.encode() + b"\0" + payload, hashlib.sha256).digest()
    entry.write_bytes(MAGIC + other + payload)
    assert load_platform(f).host("b").speed_flops == 2e9
    assert not marker.exists()


def test_group_writable_entry_is_not_read(tmp_path: Path, cache: Path) -> None:
    f, entry = _entry(tmp_path, cache)
    entry.chmod(0o620)
    assert read_entry(entry) is None
    entry.chmod(0o600)
    assert read_entry(entry) is not None


def test_key_readable_by_others_turns_the_cache_off(tmp_path: Path, cache: Path) -> None:
    f, entry = _entry(tmp_path, cache)
    key_path().chmod(0o644)
    assert read_entry(entry) is None
    entry.unlink()
    load_platform(f)
    assert not list(cache.glob("p-*.pickle"))


def test_prune_keeps_the_most_recently_used(tmp_path: Path) -> None:
    root = tmp_path / "platforms"
    root.mkdir()
    for i in range(10):
        (root / f"e{i}.pickle").write_bytes(b"x" * 100)
        os.utime(root / f"e{i}.pickle", (1000 + i, 1000 + i))
    os.utime(root / "e0.pickle", (5000, 5000))  # used last
    stale = root / "e.123.tmp"
    stale.write_bytes(b"")
    os.utime(stale, (1000, 1000))
    assert prune(root, max_entries=4) == 7
    assert sorted(p.name for p in root.iterdir()) == ["e0.pickle", "e7.pickle", "e8.pickle",
                                                     "e9.pickle"]
    assert prune(root, max_entries=10, max_bytes=250) == 2
    assert sorted(p.name for p in root.iterdir()) == ["e0.pickle", "e9.pickle"]


def test_cache_is_bounded(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("smpy.platform.cache.MAX_ENTRIES", 3)
    monkeypatch.setattr("smpy.platform.cache.prune.__defaults__", (3, 2**30))
    for i in range(6):
        f = tmp_path / f"p{i}.yaml"
        f.write_text(YAML.format(speed=f"{i + 1}Gf"))
        load_platform(f)
    assert len(list(cache.glob("*.pickle"))) == 3


def test_trusted_file_rules(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    f.chmod(0o600)
    assert trusted_file(f)
    f.chmod(0o602)
    assert not trusted_file(f)
    f.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(f)
    assert not trusted_file(link)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "g").write_bytes(b"x")
    shared.chmod(0o777)
    assert not trusted_file(shared / "g")
    shared.chmod(0o1777)  # sticky, as /tmp: others cannot replace the user's file
    assert trusted_file(shared / "g")
    assert not trusted_file(tmp_path / "missing")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rank heaps are Linux-only")
def test_planted_rank_heap_library_is_replaced(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from smpy.shim import rankheap

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = rankheap.build()
    if first is None:
        pytest.skip("no C compiler")
    assert first.is_relative_to(tmp_path) and trusted_file(first)
    first.write_bytes(b"planted")
    first.chmod(0o666)
    again = rankheap.build()
    assert again == first and trusted_file(again)
    assert again.read_bytes() != b"planted"
