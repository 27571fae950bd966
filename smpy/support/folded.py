r"""Registry of folded memory, and copies that skip it (SMPI's copy callback for
``SMPI_SHARED_MALLOC`` buffers).

:mod:`smpy.timing.folding` registers here the address ranges whose pages are *folded*
(shared by all ranks, garbage by design). The runtime asks, when it moves message data,
which bytes of a buffer are *private*; as in SMPI's ``smpi_comm_copy_buffer_callback``,
only the bytes that are private in the send buffer **and** in the receive buffer are
copied: with :math:`S` and :math:`R` the private byte ranges of the two buffers (offsets
from the start of the message), the copy moves :math:`S \cap R`; a fully folded send or
receive buffer moves nothing. The message still crosses the network model with its full
size: only the memory traffic of the emulator is saved, never simulated time.

Cost when nothing is folded: callers test the module attribute :data:`active` (``False``
until the first registration) and take their usual path.

Non-contiguous datatypes: the copy is skipped when the buffer's whole span is folded;
otherwise the data is copied as usual (folded bytes are garbage either way).
"""

from __future__ import annotations

import ctypes
from bisect import bisect_right
from typing import Any

#: True while at least one folded range is registered (the callers' fast-path test)
active = False
_starts: list[int] = []  # sorted start addresses of the folded ranges
_ends: list[int] = []  # their end addresses (ranges never overlap)
#: bytes whose copy was skipped, the sender's pack and the receiver's unpack counted apart
#: (statistics for benchmarks and tests)
skipped_bytes = 0


def register(addr: int, size: int) -> None:
    """Declare ``[addr, addr + size)`` folded."""
    global active
    if size <= 0:
        return
    i = bisect_right(_starts, addr)
    _starts.insert(i, addr)
    _ends.insert(i, addr + size)
    active = True


def unregister(addr: int, size: int) -> None:
    """Forget the folded ranges inside ``[addr, addr + size)`` (the memory was unmapped)."""
    global active
    i = bisect_right(_starts, addr - 1)
    end = addr + size
    while i < len(_starts) and _starts[i] < end:
        del _starts[i]
        del _ends[i]
    active = bool(_starts)


def private_blocks(addr: int, n: int) -> list[tuple[int, int]] | None:
    """Private byte ranges of ``[addr, addr + n)``, as offsets from ``addr``; ``None`` when
    no byte of it is folded (the usual copy applies), ``[]`` when all are."""
    i = bisect_right(_starts, addr) - 1
    if i < 0:
        i = 0
    end = addr + n
    out: list[tuple[int, int]] = []
    pos = addr
    hit = False
    while i < len(_starts) and _starts[i] < end:
        s, e = _starts[i], _ends[i]
        i += 1
        if e <= pos:
            continue
        hit = True
        if s > pos:
            out.append((pos - addr, s - addr))
        pos = e
        if pos >= end:
            break
    if not hit:
        return None
    if pos < end:
        out.append((pos - addr, n))
    return out


_char_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def address(mem: Any) -> int:
    """Address of the first byte of a buffer (memoryview, bytes, numpy array...). Every
    message's pack and unpack asks while anything is folded: a writable buffer answers
    through ctypes (0.4 us), the others (read-only, empty) through numpy (2.5 us)."""
    try:
        return _addressof(_char_from_buffer(mem))
    except (TypeError, ValueError):
        import numpy as np

        return int(np.frombuffer(mem, np.uint8).__array_interface__["data"][0])


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


class FoldedPayload:
    """A message whose send buffer is (partly) folded: ``nbytes`` long, only the private
    ``pieces`` (``(offset, bytes)``, offsets in the packed message) carry data."""

    __slots__ = ("nbytes", "pieces")

    def __init__(self, nbytes: int, pieces: list[tuple[int, bytes]]) -> None:
        self.nbytes = nbytes
        self.pieces = pieces

    def __len__(self) -> int:
        return self.nbytes

    def __bool__(self) -> bool:
        return self.nbytes > 0

    def __getitem__(self, s: slice) -> Any:
        """Truncation (``data[:cap]``) keeps the pieces' bytes below ``cap``; any other
        index or slice works on the materialised bytes."""
        if not isinstance(s, slice) or s.start not in (None, 0) or s.step not in (None, 1):
            return bytes(self)[s]
        cap = self.nbytes if s.stop is None else max(0, min(self.nbytes, s.stop))
        return FoldedPayload(cap, [(o, b[:cap - o]) for o, b in self.pieces if o < cap])

    def __bytes__(self) -> bytes:
        out = bytearray(self.nbytes)
        for o, b in self.pieces:
            out[o:o + len(b)] = b
        return bytes(out)

    def private(self) -> list[tuple[int, int]]:
        return [(o, o + len(b)) for o, b in self.pieces]


def pack(dt: Any, mem: Any, offset: int, count: int) -> FoldedPayload | None:
    """The payload of a message sent from a buffer with folded bytes, or ``None`` when the
    usual pack applies (no folded byte in the message). Call only when :data:`active`."""
    global skipped_bytes
    n = count * dt.size
    if n <= 0:
        return None
    base = address(mem)
    if dt.contiguous:
        a = base + offset
        i = bisect_right(_starts, a) - 1
        if i >= 0 and _ends[i] >= a + n:  # within one folded range (the common case): no private byte
            skipped_bytes += n
            return FoldedPayload(n, [])
        priv = private_blocks(a, n)
        if priv is None:
            return None
        skipped_bytes += n - sum(hi - lo for lo, hi in priv)
        return FoldedPayload(n, [(lo, bytes(mem[offset + lo:offset + hi])) for lo, hi in priv])
    span = dt.span(count) - dt.true_lb
    if private_blocks(base + offset + dt.true_lb, span) == []:
        skipped_bytes += n
        return FoldedPayload(n, [])
    return None


def unpack(dt: Any, data: Any, mem: Any, offset: int, count: int) -> None:
    """Deliver ``data`` (bytes or a :class:`FoldedPayload`) into ``count`` elements at
    ``offset`` of ``mem``, copying only the bytes private on both sides. Call only when
    :data:`active` (or with a :class:`FoldedPayload`)."""
    global skipped_bytes
    n = len(data)
    if n <= 0:
        return
    if type(data) is FoldedPayload and not data.pieces and dt.contiguous:  # nothing private to copy
        skipped_bytes += min(n, count * dt.size)
        return
    base = address(mem)
    if dt.contiguous:
        n = min(n, count * dt.size)
        dst = private_blocks(base + offset, n)
        if type(data) is FoldedPayload:
            blocks = data.private() if dst is None else _intersect(data.private(), dst)
            skipped_bytes += n - sum(min(hi, n) - lo for lo, hi in blocks if lo < n)
            for o, b in data.pieces:
                for lo, hi in blocks:
                    lo, hi = max(lo, o), min(hi, o + len(b), n)
                    if lo < hi:
                        mem[offset + lo:offset + hi] = b[lo - o:hi - o]
            return
        if dst is None:
            dt.unpack(data, mem, offset, count)
            return
        skipped_bytes += n - sum(hi - lo for lo, hi in dst)
        view = memoryview(data)
        for lo, hi in dst:
            mem[offset + lo:offset + hi] = view[lo:hi]
        return
    span = dt.span(count) - dt.true_lb
    if private_blocks(base + offset + dt.true_lb, span) == []:
        skipped_bytes += n
        return
    dt.unpack(bytes(data) if type(data) is FoldedPayload else data, mem, offset, count)
