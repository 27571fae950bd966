"""The cache of built platforms: a platform read once is kept, pickled, so that later runs
skip parsing and validation (and the import of pydantic and PyYAML).

Unpickling runs code named in the file, so an entry is only unpickled when

* it is a regular file owned by the user, writable by nobody else (mode ``& 0o022 == 0``),
  opened without following a symbolic link; and
* its HMAC-SHA256, keyed with a per-user secret, matches. The entry is
  ``MAGIC + HMAC(key, name + NUL + payload) + payload``. The key (32 random bytes) lives
  apart from the cache, in ``$XDG_CONFIG_HOME/smpy/cache-key`` (default
  ``~/.config/smpy/cache-key``; ``$SMPY_CACHE_KEY`` names another file), created with mode
  0600 in a 0700 directory; a key file owned by someone else or readable by others turns
  the cache off.

Anything else is ignored (and rebuilt). Entries are named by a hash of the code version, the
file's path and its content; a hit refreshes the entry's mtime, and after each write the
least recently used entries are removed beyond :data:`MAX_ENTRIES` entries or
:data:`MAX_BYTES` bytes in all.
"""

from __future__ import annotations

import os
import pickle
import stat
import time
from pathlib import Path
from typing import Any

from smpy.support.digest import compare_digest, hmac_sha256, sha256
from smpy.support.trust import trusted_stat

__all__ = ["cache_dir", "key_path", "entry_path", "read_entry", "write_entry", "prune",
           "PLATFORM_CACHE_FORMAT", "MAX_ENTRIES", "MAX_BYTES"]

PLATFORM_CACHE_FORMAT = "smpy-platform-cache-2"
MAGIC = b"smpy-platform-cache-2\n"
MAX_ENTRIES = 64
MAX_BYTES = 256 * 2**20
_DIGEST = 32
_STALE_TMP_s = 3600.0


def cache_dir() -> Path | None:
    """Where built platforms are kept: ``$SMPY_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/smpy`` or ``~/.cache/smpy``; ``platforms/`` below it."""
    env = os.environ.get("SMPY_CACHE_DIR")
    if env is not None:
        return Path(env) / "platforms" if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smpy" / "platforms"


def key_path() -> Path:
    """The file holding the cache's HMAC key (see the module's doc)."""
    env = os.environ.get("SMPY_CACHE_KEY")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "smpy" / "cache-key"


def _code_fingerprint() -> bytes:
    """Sizes and mtimes of the modules whose classes a cached platform pickles, so that a
    cache entry written by another version of smpy is never read."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parent.parent
        h = sha256(PLATFORM_CACHE_FORMAT.encode())
        for sub in ("platform", "network", "cpu", "support", "energy", "storage"):
            for f in sorted((root / sub).glob("*.py")):
                st = f.stat()
                h.update(f"{sub}/{f.name}:{st.st_size}:{st.st_mtime_ns};".encode())
        _FINGERPRINT = h.digest()
    return _FINGERPRINT


_FINGERPRINT: bytes | None = None


def entry_path(source: str, raw: bytes) -> Path | None:
    """The entry of the platform file ``source`` whose content is ``raw`` (None: no cache)."""
    root = cache_dir()
    if root is None:
        return None
    h = sha256(_code_fingerprint())
    h.update(source.encode() + b"\0" + os.path.abspath(source).encode() + b"\0" + raw)
    return root / f"{Path(source).stem}-{h.hexdigest()[:32]}.pickle"


def _key(create: bool) -> bytes | None:
    """The user's key; created when missing and ``create``; None when unusable."""
    path = key_path()
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            if not create:
                return None
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                continue  # created meanwhile by another run: read it
            except OSError:
                return None
            try:
                key = os.urandom(32)  # what secrets.token_bytes(32) is
                os.write(fd, key)
            finally:
                os.close(fd)
            return key
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()
                    or st.st_mode & 0o077):
                return None
            key = os.read(fd, 64)
        finally:
            os.close(fd)
        return key if len(key) >= 32 else None
    return None


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac_sha256(key, name.encode() + b"\0" + payload)


def _trusted_bytes(path: Path) -> bytes | None:
    """The content of ``path`` if it is our own regular file that nobody else may write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not trusted_stat(os.fstat(fd)):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def read_entry(path: Path) -> Any:
    """The object stored in ``path``, or None if absent, foreign, tampered with or stale."""
    data = _trusted_bytes(path)
    if data is None or not data.startswith(MAGIC):
        return None
    key = _key(create=False)
    if key is None:
        return None
    start = len(MAGIC) + _DIGEST
    digest, payload = data[len(MAGIC):start], data[start:]
    if not compare_digest(digest, _mac(key, path.name, payload)):
        return None
    try:
        obj = pickle.loads(payload)  # noqa: S301 -- our own file: owner, mode and HMAC checked
    except (pickle.PickleError, EOFError, AttributeError, ImportError, TypeError, ValueError,
            IndexError, RecursionError):
        return None
    try:
        os.utime(path)  # least recently used goes first when pruning
    except OSError:
        pass
    return obj


def write_entry(path: Path, obj: Any) -> None:
    """Write atomically (mode 0600), then prune; a cache that cannot be written is no error."""
    key = _key(create=True)
    if key is None:
        return
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(MAGIC + _mac(key, path.name, payload) + payload)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        try:
            tmp.unlink()
        except OSError:
            pass
        return
    prune(path.parent)


def prune(root: Path, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> int:
    """Remove the least recently used entries of ``root`` beyond ``max_entries`` or
    ``max_bytes`` in all, and temporary files left for an hour; returns how many went."""
    entries: list[tuple[float, int, Path]] = []
    removed = 0
    now = time.time()
    try:
        names = list(os.scandir(root))
    except OSError:
        return 0
    for item in names:
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            continue
        if item.name.endswith(".tmp") and now - st.st_mtime > _STALE_TMP_s:
            removed += _unlink(Path(item.path))
        elif item.name.endswith(".pickle"):
            entries.append((st.st_mtime, st.st_size, Path(item.path)))
    entries.sort(reverse=True)  # newest first
    total = 0
    for k, (_, size, path) in enumerate(entries):
        total += size
        if k >= max_entries or total > max_bytes:
            removed += _unlink(path)
    return removed


def _unlink(path: Path) -> int:
    try:
        path.unlink()
        return 1
    except OSError:
        return 0
