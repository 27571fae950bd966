"""SHA-256 and HMAC-SHA256 without OpenSSL: the digests smpy keys its caches with.

``hashlib`` and ``hmac`` load ``_hashlib`` at import, and with it ``libcrypto`` (3.3 MB of
resident memory in every run on the machine measured, 6 ms of start-up). The cache keys
(compiled extensions, per-rank heaps, built platforms) and the platform cache's HMAC need
nothing of OpenSSL: CPython's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` from 3.12) gives
the same bytes, and HMAC (RFC 2104) is two hashes. Falls back to ``hashlib`` where neither
module is built.
"""

from __future__ import annotations

from typing import Any

try:
    from _sha256 import sha256 as _new  # CPython <= 3.11
except ImportError:  # pragma: no cover - depends on the Python version
    try:
        from _sha2 import sha256 as _new  # type: ignore[no-redef]  # CPython >= 3.12
    except ImportError:
        from hashlib import sha256 as _new  # type: ignore[no-redef]

from _operator import _compare_digest as compare_digest  # what hmac.compare_digest is

__all__ = ["sha256", "hmac_sha256", "compare_digest"]

_BLOCK = 64  # SHA-256's block size, bytes
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object (``update``, ``digest``, ``hexdigest``), as ``hashlib.sha256``."""
    return _new(data)


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 of ``msg`` under ``key`` (RFC 2104), as ``hmac.new(key, msg, sha256).digest()``."""
    if len(key) > _BLOCK:
        key = _new(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = _new(key.translate(_IPAD) + msg).digest()
    return _new(key.translate(_OPAD) + inner).digest()
