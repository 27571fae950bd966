r"""``smpy calibrate storage PATH -o PREFIX``: this node's file system, as a ``filesystems:`` entry.

UniMPP's ``discio`` and PIOsimHD's disk calibration: the read and write bandwidth and the
per-operation latency of the storage under ``PATH``, for sequential and random accesses of
several sizes, with the page cache kept out of the figures.

Model fitted (the ``simple`` disk of :mod:`smpy.storage.filesystem`): an operation of
:math:`n` bytes lasts

.. math::

    T(n) = \lambda + n / b_{r|w}, \qquad \textstyle\sum_\text{concurrent} b \le B_{r|w}

:math:`b_r` and :math:`b_w` (``read_stream``, ``write_stream``) are the bandwidths of one
stream, the largest sequential accesses (bytes moved over the phase's time, the final
``fsync`` included); :math:`B_r` and :math:`B_w` (``read``, ``write``) the aggregate, the
best of :math:`b` and of :math:`k = 1, 2, 4` concurrent streams (threads, each its own file
of ``size/k`` bytes, written in the largest block then ``fsync``'ed, then read back; bytes of
all over the time until the last one is done) -- a device with a deep queue (an SSD, a
virtual disk) moves more with several requests in flight; :math:`\lambda` is what the
smallest random access costs beyond its transfer, :math:`\lambda_{r|w} = T_\text{rand}(n_0)
- n_0 / B_{r|w}` (:math:`n_0` the smallest size, :math:`T_\text{rand}` the mean time per
random operation; a least-squares line over all sizes would let the large, noisy ones decide
the intercept), separately for reads and writes; the fragment's ``latency`` is the mean of
the two (the ``simple`` disk has one latency), never negative. The
text output lists every measured point, so that a richer disk (``hdd``: seek + rotation when
not sequential; ``ssd``) can be written by hand from the same figures.

Keeping the page cache out: the file is opened with ``O_DIRECT`` where the file system
accepts it (buffers page-aligned, sizes and offsets multiples of 4 KiB); otherwise writes
are followed by ``fsync`` (each random write by ``fdatasync``) and, before each read phase,
``posix_fadvise(POSIX_FADV_DONTNEED)`` drops the file's cached pages (after an ``fsync``),
so reads come from the device. The mode used is printed.

Phases (each bounded by time, so that the whole run stays under ``--seconds``, default 40 s;
``--quick``: 8 MiB, about 2 s, for tests):

1. sequential write of a file of ``--size`` bytes (default 256 MiB) in blocks of each
   size of ``--sizes`` (the largest first, which gives :math:`B_w`), then ``fsync``;
2. sequential read of it, block by block, for each size (:math:`B_r` from the largest);
3. random reads and random writes of each size at aligned offsets inside the file;
4. :math:`k = 1, 2, 4` concurrent writers, then readers (the aggregate bandwidths); each
   moves the file's size once, whatever the time (outside ``--seconds``: six times
   ``--size`` in all, about 3 s for 256 MiB at 500 MB/s).

The fragment also gives the file system a write-back ``cache`` of this node's available memory
(``MemAvailable``; ``--cache SIZE`` to choose, 0 for none): a program's ``write`` lands in the
page cache at memory speed (its copy is the rank's computation) and ``fsync`` waits for the
write-back, which keeps many requests in flight and so goes at the aggregate bandwidth
(:mod:`smpy.storage.filesystem`).

Outputs: ``PREFIX.yaml`` (the ``filesystems:`` fragment, every number commented),
``PREFIX.png`` (time per operation against size, the fitted lines; matplotlib),
``PREFIX.txt`` (the table printed). The temporary file is removed.
"""

from __future__ import annotations

import argparse
import contextlib
import mmap
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smpy.support.units import format_byte_rate, format_time, parse_size

KiB, MiB = 1 << 10, 1 << 20
ALIGN = 4096
DEFAULT_SIZES = (4 * KiB, 64 * KiB, 1 * MiB, 4 * MiB)
#: concurrent streams of the aggregate-bandwidth phase
STREAMS = (1, 2, 4)


@dataclass
class Point:
    """One measured series: ``ops`` operations of ``size`` bytes in ``seconds``."""

    kind: str  # seq-write | seq-read | rand-write | rand-read | conc-write | conc-read (ops = streams)
    size: int
    ops: int
    seconds: float

    @property
    def per_op(self) -> float:
        return self.seconds / self.ops if self.ops else 0.0

    @property
    def bandwidth(self) -> float:
        return self.size * self.ops / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Result:
    path: str
    direct: bool
    file_size: int
    points: list[Point] = field(default_factory=list)
    read_bw: float = 0.0
    write_bw: float = 0.0
    read_latency: float = 0.0
    write_latency: float = 0.0
    #: aggregate bandwidths (best of one stream and the concurrent phases)
    read_agg: float = 0.0
    write_agg: float = 0.0
    seconds: float = 0.0

    @property
    def latency(self) -> float:
        return max(0.0, (self.read_latency + self.write_latency) / 2)


class _File:
    """The test file: O_DIRECT when accepted, else buffered with explicit syncs."""

    def __init__(self, path: Path, size: int, direct: bool | None) -> None:
        self.path = path
        self.size = size
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        self.direct = False
        if direct is not False and hasattr(os, "O_DIRECT"):
            try:
                self.fd = os.open(path, flags | os.O_DIRECT, 0o600)
                self.direct = True
            except OSError:
                if direct:
                    raise
        if not self.direct:
            self.fd = os.open(path, flags, 0o600)
        self.buf = mmap.mmap(-1, ALIGN)  # page-aligned, as O_DIRECT needs
        #: bytes of the file written so far (random accesses stay inside)
        self.extent = 0

    def ensure(self, size: int) -> None:
        """A buffer of at least ``size`` bytes of random data."""
        if len(self.buf) < size:
            self.buf.close()
            self.buf = mmap.mmap(-1, size)
            self.buf.write(os.urandom(size))

    def write(self, offset: int, size: int) -> None:
        view = memoryview(self.buf)[:size]
        try:
            done = os.pwrite(self.fd, view, offset)
        finally:
            view.release()
        if done != size:
            raise OSError(f"short write ({done} of {size} bytes)")

    def read(self, offset: int, size: int) -> None:
        view = memoryview(self.buf)[:size]
        try:
            os.preadv(self.fd, [view], offset)
        finally:
            view.release()

    def drop_cache(self) -> None:
        """Make the next reads come from the device (a no-op with O_DIRECT)."""
        os.fsync(self.fd)
        if not self.direct and hasattr(os, "posix_fadvise"):
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def close(self) -> None:
        os.close(self.fd)
        self.buf.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _timed_loop(budget: float, count: int, op: Callable[[int], None]) -> tuple[int, float]:
    """Run ``op(i)`` for i < count or until ``budget`` seconds passed; (operations, seconds)."""
    t0 = time.perf_counter()
    i = 0
    while i < count:
        op(i)
        i += 1
        if time.perf_counter() - t0 > budget:
            break
    return i, time.perf_counter() - t0


def _sequential(f: _File, sizes: list[int], budget: float, out: list[Point]) -> None:
    """Sequential write (then fsync), then read, for each size, largest first."""
    for size in sizes:
        count = max(1, f.size // size)
        t0 = time.perf_counter()
        n, _ = _timed_loop(budget, count, lambda i, s=size: f.write(i * s, s))
        os.fsync(f.fd)
        out.append(Point("seq-write", size, n, time.perf_counter() - t0))
        f.extent = max(f.extent, n * size)
    for size in sizes:
        f.drop_cache()
        count = max(1, f.extent // size)
        n, secs = _timed_loop(budget, count, lambda i, s=size: f.read(i * s, s))
        out.append(Point("seq-read", size, n, secs))


def _random(f: _File, sizes: list[int], budget: float, ops: int, seed: int, out: list[Point]) -> None:
    """Random reads then random writes (each synced unless O_DIRECT) of each size."""
    rng = random.Random(seed)
    for size in sizes:
        slots = max(1, f.extent // size)
        offs = [rng.randrange(slots) * size for _ in range(ops)]
        f.drop_cache()
        n, secs = _timed_loop(budget, ops, lambda i, s=size, o=offs: f.read(o[i], s))
        out.append(Point("rand-read", size, n, secs))

        def write(i: int, s: int = size, o: list[int] = offs) -> None:
            f.write(o[i], s)
            if not f.direct:
                os.fdatasync(f.fd)
        n, secs = _timed_loop(budget, ops, write)
        out.append(Point("rand-write", size, n, secs))


def _concurrent(d: Path, direct: bool, size: int, block: int, streams: tuple[int, ...],
                out: list[Point]) -> None:
    """For each k: k threads write their own file of size/k bytes (then fsync), then read it
    back (caches dropped); one point per phase, ``ops`` = k, bytes of all over the wall time."""
    for k in streams:
        per = max(block, (size // k) // block * block)
        files = [_File(d / f".smpy-calibrate-storage-{os.getpid()}-{k}-{i}.bin", per, direct)
                 for i in range(k)]
        try:
            for f in files:
                f.ensure(block)

            def wr(f: _File) -> None:
                for i in range(f.size // block):
                    f.write(i * block, block)
                os.fsync(f.fd)

            def rd(f: _File) -> None:
                for i in range(f.size // block):
                    f.read(i * block, block)
            out.append(Point("conc-write", per, k, _threads(wr, files)))
            for f in files:
                f.drop_cache()
            out.append(Point("conc-read", per, k, _threads(rd, files)))
        finally:
            for f in files:
                f.close()


def _threads(fn: Callable[[_File], None], files: list[_File]) -> float:
    """Run ``fn(f)`` for every file in its own thread; wall seconds until the last ends."""
    errors: list[BaseException] = []

    def run(f: _File) -> None:
        try:
            fn(f)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)
    ths = [threading.Thread(target=run, args=(f,)) for f in files]
    t0 = time.perf_counter()
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def _summarise(res: Result) -> None:
    def best(kind: str) -> Point:
        pts = [p for p in res.points if p.kind == kind and p.ops]
        return max(pts, key=lambda p: p.size)
    res.write_bw = best("seq-write").bandwidth
    res.read_bw = best("seq-read").bandwidth
    for kind, attr, one in (("conc-write", "write_agg", res.write_bw), ("conc-read", "read_agg", res.read_bw)):
        setattr(res, attr, max([one] + [p.bandwidth for p in res.points if p.kind == kind]))
    for kind, attr, bw in (("rand-read", "read_latency", res.read_bw),
                           ("rand-write", "write_latency", res.write_bw)):
        p = min((p for p in res.points if p.kind == kind and p.ops), key=lambda p: p.size)
        setattr(res, attr, max(0.0, p.per_op - (p.size / bw if bw > 0 else 0.0)))


def measure(path: str, file_size: int, sizes: list[int], seconds: float, ops: int,
            direct: bool | None = None, seed: int = 1) -> Result:
    """Run the phases in a temporary file under ``path`` (removed at the end)."""
    d = Path(path)
    if not d.is_dir():
        raise ValueError(f"{path}: not a directory")
    sizes = sorted({s for s in sizes if s > 0 and s % ALIGN == 0 and s <= file_size}, reverse=True)
    if not sizes:
        raise ValueError(f"no access size is a multiple of {ALIGN} bytes and at most --size")
    file_size -= file_size % sizes[0]
    f = _File(d / f".smpy-calibrate-storage-{os.getpid()}.bin", file_size, direct)
    res = Result(str(d.resolve()), f.direct, file_size)
    t0 = time.perf_counter()
    try:
        f.ensure(sizes[0])
        budget = seconds / (4 * len(sizes))  # 4 phases per size
        _sequential(f, sizes, budget, res.points)
        _random(f, sizes, budget, ops, seed, res.points)
    finally:
        f.close()
    _concurrent(d, res.direct, file_size, sizes[0], STREAMS, res.points)
    res.seconds = time.perf_counter() - t0
    _summarise(res)
    return res


def table(res: Result) -> str:
    mode = "O_DIRECT" if res.direct else "buffered, fsync/fdatasync + POSIX_FADV_DONTNEED"
    lines = [f"# smpy calibrate storage {res.path}: {mode}, file {res.file_size / MiB:.0f} MiB, "
             f"{res.seconds:.1f} s", f"{'access':<11} {'size':>9} {'ops':>7} {'time/op':>11} {'bandwidth':>13}"]
    for p in res.points:
        lines.append(f"{p.kind:<11} {p.size:>9} {p.ops:>7} {format_time(p.per_op):>11} "
                     f"{format_byte_rate(p.bandwidth):>13}")
    lines.append(f"aggregate (best of one stream and 1, 2, 4 concurrent ones): read "
                 f"{format_byte_rate(res.read_agg)}, write {format_byte_rate(res.write_agg)}")
    lines.append(f"one stream, sequential: read {format_byte_rate(res.read_bw)}, write {format_byte_rate(res.write_bw)}; "
                 f"latency (smallest random access less its transfer): read {format_time(res.read_latency)}, "
                 f"write {format_time(res.write_latency)}")
    return "\n".join(lines)


def page_cache() -> int:
    """This node's page cache room: ``MemAvailable`` of ``/proc/meminfo`` (0 where unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def fragment(res: Result, name: str, mount: str, cache: int | None = None) -> str:
    """The ``filesystems:`` fragment (YAML), every number commented with its origin;
    ``cache``: the page cache size (default: this node's available memory; 0: none)."""
    cache = page_cache() if cache is None else cache
    lines = [
        f"# written by `smpy calibrate storage {res.path}` "
        f"({'O_DIRECT' if res.direct else 'fsync + fadvise DONTNEED'}; every point in the .txt)",
        "filesystems:",
        f"  - name: {name}",
        "    kind: local",
        f"    mount: {mount}",
        "    disk:",
        "      kind: simple",
        f"      read: {res.read_agg:.6g}Bps    # aggregate: best of 1, 2, 4 concurrent readers",
        f"      write: {res.write_agg:.6g}Bps   # aggregate: best of 1, 2, 4 concurrent writers (+ fsync)",
        f"      read_stream: {res.read_bw:.6g}Bps    # one stream: sequential read, largest block",
        f"      write_stream: {res.write_bw:.6g}Bps   # one stream: sequential write + fsync, largest block",
        f"      latency: {res.latency:.6g}s   # mean of random read ({res.read_latency:.3g} s) and "
        f"write ({res.write_latency:.3g} s), smallest size, less the transfer"]
    if cache > 0:
        lines += ["    cache:",
                  f"      size: {cache}B   # page cache: MemAvailable when calibrated (writes land "
                  "there, fsync waits for the write-back)"]
    return "\n".join(lines + [""])


def plot(res: Result, path: str) -> bool:
    """Time per operation against size, per kind, with the fitted model; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"seq-write": "o-", "seq-read": "s-", "rand-write": "o--", "rand-read": "s--"}
    for kind, style in styles.items():
        pts = sorted((p for p in res.points if p.kind == kind and p.ops), key=lambda p: p.size)
        ax.plot([p.size for p in pts], [p.per_op for p in pts], style, label=kind)
    sizes = sorted({p.size for p in res.points})
    for bw, label in ((res.read_bw, "read"), (res.write_bw, "write")):
        if bw > 0:
            ax.plot(sizes, [res.latency + s / bw for s in sizes], ":", color="gray")
            ax.annotate(f"model {label}", (sizes[-1], res.latency + sizes[-1] / bw), fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("access size (bytes)")
    ax.set_ylabel("time per operation (s)")
    ax.set_title(f"{res.path}: read {format_byte_rate(res.read_bw)}, write "
                 f"{format_byte_rate(res.write_bw)}, latency {format_time(res.latency)}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="smpy calibrate storage", description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a directory on the file system to measure")
    ap.add_argument("-o", "--output", default="storage", help="output prefix: PREFIX.yaml, .png, .txt")
    ap.add_argument("--name", default="local", help="the file system's name in the fragment")
    ap.add_argument("--mount", default=None, help="its mount in the fragment (default: PATH, absolute)")
    ap.add_argument("--size", default=None, help="test file size (default 256MiB, --quick 8MiB)")
    ap.add_argument("--sizes", default="4KiB,64KiB,1MiB,4MiB",
                    help="access sizes, multiples of 4 KiB (default 4KiB,64KiB,1MiB,4MiB)")
    ap.add_argument("--ops", type=int, default=200, help="random operations per size (default 200)")
    ap.add_argument("--seconds", type=float, default=40.0, help="time budget of all phases (default 40)")
    ap.add_argument("--cache", default=None,
                    help="page cache size in the fragment (default: MemAvailable; 0: none)")
    ap.add_argument("--buffered", action="store_true", help="do not use O_DIRECT (fsync and fadvise instead)")
    ap.add_argument("--quick", action="store_true", help="8 MiB file, 40 operations, 2 s budget (tests)")
    return ap


def _options(ns: argparse.Namespace, ap: argparse.ArgumentParser) -> tuple[int, list[int]]:
    if ns.quick:
        ns.ops, ns.seconds = min(ns.ops, 40), min(ns.seconds, 2.0)
    ns.size = ns.size or ("8MiB" if ns.quick else "256MiB")
    try:
        size = int(parse_size(ns.size))
        sizes = [int(parse_size(s)) for s in ns.sizes.split(",") if s.strip()]
    except ValueError as exc:
        ap.error(f"--size/--sizes: {exc}")
    bad = [s for s in sizes if s <= 0 or s % ALIGN]
    if bad:
        ap.error(f"--sizes: {bad[0]} bytes is not a positive multiple of {ALIGN} (O_DIRECT's alignment)")
    if size < max(sizes) or ns.ops < 1 or not ns.seconds > 0:
        ap.error("--size must hold the largest access, --ops be at least 1 and --seconds positive")
    return size, sizes


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    ns = ap.parse_args(argv)
    size, sizes = _options(ns, ap)
    try:
        cache = None if ns.cache is None else int(parse_size(ns.cache))
    except ValueError as exc:
        print(f"smpy calibrate storage: error: --cache: {exc}", file=sys.stderr)
        return 2
    try:
        res = measure(ns.path, size, sizes, ns.seconds, ns.ops, False if ns.buffered else None)
    except OSError as exc:
        print(f"smpy calibrate storage: error: {ns.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"smpy calibrate storage: error: {exc}", file=sys.stderr)
        return 2
    text = table(res)
    print(text)
    prefix = ns.output
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    mount = ns.mount or res.path
    Path(prefix + ".yaml").write_text(fragment(res, ns.name, mount, cache), encoding="utf-8")
    Path(prefix + ".txt").write_text(text + "\n", encoding="utf-8")
    made = plot(res, prefix + ".png")
    print(f"wrote {prefix}.yaml, {prefix}.txt" + (f", {prefix}.png" if made else " (no matplotlib: no plot)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
