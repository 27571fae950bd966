"""Every hostile or careless input of issue 25 (``data/hostile/corpus.yaml``): one line naming
the file (or the setting, or -np) and the problem, never a traceback, a hang or a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from smpy.cli.smpyrun import main as smpyrun
from smpy.platform import PlatformError, load_platform, parse_hostfile

CORPUS = Path(__file__).parent / "data" / "hostile" / "corpus.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text())["cases"]


def generate(name: str) -> str | bytes:
    if name == "alias-bomb":  # nine levels of nine aliases: 9^9 nodes once expanded
        lines = ["a: &a [x,x,x,x,x,x,x,x,x]"]
        for prev, cur in zip("abcdefgh", "bcdefghi"):
            lines.append(f"{cur}: &{cur} [{','.join(['*' + prev] * 9)}]")
        return "\n".join(lines) + "\nclusters: *i\n"
    if name == "deep-yaml-lists":
        return "clusters: " + "[" * 5000 + "]" * 5000 + "\n"
    if name == "deep-yaml-maps":
        return "clusters: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n"
    if name == "deep-xml-zones":
        return ('<?xml version="1.0"?>\n<platform version="4.1">'
                + "".join(f'<zone id="z{i}" routing="Full">' for i in range(5000))
                + "</zone>" * 5000 + "</platform>\n")
    if name == "binary-hostfile":
        return bytes(range(256)) * 4
    raise KeyError(name)


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMPY_CACHE_DIR", "")


def _write(tmp_path: Path, case: dict[str, Any], suffix: str) -> Path:
    path = tmp_path / f"{case['name']}{suffix}"
    content = generate(case["generate"]) if "generate" in case else case["text"]
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _one_line(text: str) -> str:
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_the_bomb_is_364_bytes_or_less() -> None:
    assert len(generate("alias-bomb")) <= 364


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind = case["kind"]
    if kind in ("yaml", "xml"):
        path = _write(tmp_path, case, f".{kind}")
        if "warning" in case:
            platform = load_platform(path)
            assert platform.hosts
            err = _one_line(capsys.readouterr().err)
            assert err.startswith(f"[smpy] warning: {path}: ")
            assert case["warning"] in err
            return
        with pytest.raises(PlatformError) as info:
            load_platform(path)
        message = _one_line(str(info.value))
        assert message.startswith(f"{path}: ")
        assert case["error"] in message
    elif kind == "hostfile":
        path = _write(tmp_path, case, ".txt")
        with pytest.raises(PlatformError) as info:
            parse_hostfile(path)
        message = _one_line(str(info.value))
        assert message.startswith(f"{path}: ") and case["error"] in message
    elif kind == "cfg":
        assert smpyrun(["-np", "1", f"--cfg={case['text']}", "-c", "pass"]) == 2
        err = _one_line(capsys.readouterr().err)
        name = case["text"].split(":", 1)[0]
        assert err.startswith(f"smpyrun: error: setting {name!r}: ")
        assert case["error"] in err
    elif kind == "platform-config":
        name, value = case["text"].split(":", 1)
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump({"hosts": [{"name": "a", "speed": "1Gf"}],
                                        "config": {name: value}}))
        assert smpyrun(["-np", "1", "--platform", str(path), "-c", "pass"]) == 2
        err = _one_line(capsys.readouterr().err)
        assert err.startswith(f"smpyrun: error: {path}: config.{name}: ")
        assert case["error"] in err
    elif kind == "np":
        assert smpyrun(["-np", case["text"], "-c", "pass"]) == 2
        err = _one_line(capsys.readouterr().err)
        assert err.startswith(f"smpyrun: error: -np {case['text']} on platform ")
        assert case["error"] in err
    else:
        raise AssertionError(f"unknown kind {kind!r}")
