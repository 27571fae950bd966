"""Payload copies per message (smpy.runtime.copies): a contiguous send is borrowed, not
packed; a message lands in its posted receive buffer with one copy; a small message that
arrives unexpected costs a staging copy more, as MPI's eager protocol; simulated time does
not depend on any of it (the SMPI differential tests hold it)."""

from __future__ import annotations

from pathlib import Path

import smpy
from smpy.runtime import copies

PROGRAM = '''
import time
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
SIZES = {"pre_large": 131072, "late_large": 131073, "pre_small": 1024, "late_small": 1025}
vec = MPI.DOUBLE.Create_vector(2048, 1, 2).Commit()
if comm.rank == 0:
    for name, n in SIZES.items():
        if name.startswith("pre"):
            time.sleep(0.01)                  # the receives are posted by now
        for k in range(3):
            a = np.full(n, float(k))
            comm.Send(a, dest=1, tag=k)
            a[:] = -1.0                       # the receiver must still get k
    comm.Send([np.ones(4096), 1, vec], dest=1, tag=9)
    comm.Send(b"x" * 4096, dest=1, tag=10)    # a bytes object is sent as it is
elif comm.rank == 1:
    for name, n in SIZES.items():
        got = [np.zeros(n) for _ in range(3)]
        if name.startswith("pre"):
            reqs = [comm.Irecv(g, source=0, tag=k) for k, g in enumerate(got)]
            MPI.Request.Waitall(reqs)
        else:
            time.sleep(0.01)
            for k, g in enumerate(got):
                comm.Recv(g, source=0, tag=k)
        assert all((g == k).all() for k, g in enumerate(got)), name
    v = np.zeros(2048)
    comm.Recv(v, source=0, tag=9)
    b = bytearray(4096)
    comm.Recv(b, source=0, tag=10)
    assert v.sum() == 2048.0 and b == bytearray(b"x" * 4096)
    print("received")
'''


def run_counted(tmp_path: Path, cfg: dict | None = None):
    """The program's copies; computation is not simulated, so that the sleeps alone decide
    which receives are posted before their messages."""
    prog = tmp_path / "copies_prog.py"
    prog.write_text(PROGRAM)
    led = copies.start()
    try:
        res = smpy.run(str(prog), np=2, capture=True, cfg={"smpi/simulate-computation": "no", **(cfg or {})})
    finally:
        copies.stop()
    assert res.status == "ok", res.message
    assert res.rank_output(1).strip() == "received"
    return led, res


def per_message(led: copies.Ledger, size: int) -> dict[str, float]:
    n = led.messages[size]
    return {kind: c[0] / n for (kind, s), c in led.copies.items() if s == size}


def test_copies_per_message_by_path(tmp_path: Path) -> None:
    led, _ = run_counted(tmp_path)
    assert per_message(led, 131072 * 8) == {"recv": 1.0}        # rendezvous, posted receive
    assert per_message(led, 131073 * 8) == {"recv": 1.0}        # rendezvous, late receive
    assert per_message(led, 1024 * 8) == {"recv": 1.0}          # detached, lands at the send
    assert per_message(led, 1025 * 8) == {"stage": 1.0, "recv": 1.0}  # detached, unexpected
    assert per_message(led, 2048 * 8) == {"pack": 1.0, "recv": 1.0}   # a vector type is packed
    assert per_message(led, 4096) == {"recv": 1.0}
    for (kind, size), (count, nbytes) in led.copies.items():
        assert nbytes == count * size, (kind, size)


def test_copies_per_message_when_every_send_is_eager(tmp_path: Path) -> None:
    """With every size eager and detached (the transfer starts at the send, which completes
    at once), a large message arriving before its receive is staged; one whose receive is
    posted lands at the send."""
    big = {"smpi/async-small-thresh": 1 << 30, "smpi/send-is-detached-thresh": 1 << 30}
    led, _ = run_counted(tmp_path, big)
    assert per_message(led, 131072 * 8) == {"recv": 1.0}
    assert per_message(led, 131073 * 8) == {"stage": 1.0, "recv": 1.0}
    assert per_message(led, 1025 * 8) == {"stage": 1.0, "recv": 1.0}
