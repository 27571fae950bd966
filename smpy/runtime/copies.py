"""Payload copy accounting, for benchmarks (``benchmarks/speed/copies.py``).

Off by default (:data:`ledger` is None: the runtime pays one module-global test per copy
site). :func:`start` installs a :class:`Ledger`; the point-to-point runtime
(:mod:`smpy.runtime.p2p`) and the facade's packing (:mod:`smpy.runtime.packing`) then report
every payload copy they make, with the size of the message it belongs to:

* ``pack``: the sender's buffer packed into new bytes at the call (non-contiguous datatypes,
  MPI_Bsend, MPI_Sendrecv_replace);
* ``stage``: a detached send's bytes kept until its receive is posted (MPI's eager copy to
  an unexpected-message buffer);
* ``recv``: bytes written into the receive buffer (or into the bytes a buffer-less receive
  returns).

Contiguous sends borrow the sender's memory (no ``pack``), so a message costs one copy
(``recv``) when its receive is posted before it arrives or when it is large enough to wait
for its receive (rendezvous), and two (``stage`` + ``recv``) when a small message arrives
unexpected, as in a real MPI library.
"""

from __future__ import annotations

__all__ = ["Ledger", "ledger", "start", "stop"]


class Ledger:
    """Copies per kind and message size: ``copies[(kind, size)] = [count, bytes]``, and
    ``messages[size]`` the messages delivered."""

    __slots__ = ("copies", "messages")

    def __init__(self) -> None:
        self.copies: dict[tuple[str, int], list[int]] = {}
        self.messages: dict[int, int] = {}

    def add(self, kind: str, nbytes: int, size: int) -> None:
        """``nbytes`` copied for a message of ``size`` bytes."""
        slot = self.copies.get((kind, size))
        if slot is None:
            slot = self.copies[(kind, size)] = [0, 0]
        slot[0] += 1
        slot[1] += nbytes

    def message(self, size: int) -> None:
        self.messages[size] = self.messages.get(size, 0) + 1


#: the active ledger, or None (no accounting)
ledger: Ledger | None = None


def start() -> Ledger:
    """Install a fresh ledger and return it."""
    global ledger
    ledger = Ledger()
    return ledger


def stop() -> Ledger | None:
    """Uninstall the ledger; returns it."""
    global ledger
    old, ledger = ledger, None
    return old
