"""smpy.support.digest (SHA-256 and HMAC-SHA256 without OpenSSL) and smpy.support.afterimport."""

import hashlib
import hmac
import subprocess
import sys

import pytest

from smpy.support.afterimport import when_imported
from smpy.support.digest import compare_digest, hmac_sha256, sha256


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 100])
def test_sha256_is_hashlibs(data: bytes) -> None:
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = sha256()
    h.update(data)
    assert h.digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("key", [b"", b"k", bytes(range(32)), bytes(range(64)), bytes(range(65)), b"x" * 200])
def test_hmac_sha256_is_hmacs(key: bytes) -> None:
    for msg in (b"", b"name\0payload", bytes(range(256)) * 3):
        assert hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).digest()
    assert compare_digest(b"ab", b"ab") and not compare_digest(b"ab", b"ac")


def test_a_run_loads_no_openssl() -> None:
    # the caches' keys need no libcrypto (3.3 MB resident): nothing on the run's path imports hashlib
    code = "import sys, numpy, smpy.cli.launch; print(sorted(m for m in ('_hashlib', 'hmac') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_when_imported_runs_after_the_first_import_only() -> None:
    code = (
        "import sys\n"
        "from smpy.support.afterimport import when_imported\n"
        "seen = []\n"
        "hook = when_imported('colorsys', lambda m: seen.append(m.rgb_to_hsv(1, 0, 0)))\n"
        "print('colorsys' in sys.modules, seen)\n"
        "import colorsys\n"
        "import colorsys\n"
        "print(seen, hook in sys.meta_path)\n"
        "hook2 = when_imported('wave', seen.append)\n"
        "hook2.remove()\n"
        "import wave\n"
        "print(len(seen))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["False []", "[(0.0, 1.0, 1)] False", "1"]


def test_when_imported_runs_at_once_for_an_imported_module() -> None:
    seen = []
    assert when_imported("hashlib", seen.append) is None
    assert seen == [hashlib]
