"""Messages whose buffers are folded skip the copy (SMPI's copy callback for shared-malloc'ed
buffers): only bytes private in both the send and the receive buffer are copied, and the
simulated time is the same as without folding."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

import smpy
from smpy.support import folded

PAGE = 4096

# rank 0 sends 4 pages from ``a`` to rank 1's ``b``; the folded pages of each side come from
# the command line ("-" = not folded at all): page p of the result tells what was copied
PARTIAL = """
import sys
import numpy as np
import smpy
from smpy.support import folded
from mpi4py import MPI

PAGE = 4096
c = MPI.COMM_WORLD

def make(spec):
    if spec == "-":
        return np.zeros(4 * PAGE, np.uint8), []
    pages = [int(p) for p in spec.split(",") if p]
    return smpy.shared_array(4 * PAGE, np.uint8, shared=[(p * PAGE, (p + 1) * PAGE) for p in pages]), pages

(a, _), (b, folded_pages) = make(sys.argv[1]), make(sys.argv[2])
S0 = folded.skipped_bytes  # runs share the process: count this run's bytes only
c.Barrier()
if c.rank == 0:
    a[:] = 7
    c.Send(a, dest=1)
elif c.rank == 1:
    b[:] = 1
    c.Recv(b, source=0)
    # folded pages of b hold garbage (they share memory with every folded page): "x"
    print("pages", *["x" if p in folded_pages else
                     str(int(b[p * PAGE:(p + 1) * PAGE].max()) * 10 + int(b[p * PAGE:(p + 1) * PAGE].min()))
                     for p in range(4)])
c.Barrier()
if c.rank == 0:
    print("skipped", folded.skipped_bytes - S0)
    print("time", repr(MPI.Wtime()))
"""


def _run(tmp_path: Path, body: str, *args: str, np_: int = 2, cfg: dict | None = None) -> dict[str, list[str]]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(body))
    res = smpy.run(str(prog), np=np_, args=list(args), cfg=cfg)
    assert res.status == "ok", res.message + res.stdout + getattr(res, "stderr", "")
    return {line.split()[0]: line.split()[1:] for line in res.stdout.splitlines() if line.strip()}


# ``skipped`` counts the bytes not packed by the sender plus those not unpacked by the receiver
@pytest.mark.parametrize("send,recv,pages,skipped", [
    # nothing folded: a plain copy
    ("-", "-", ["77", "77", "77", "77"], 0),
    # send buffer fully folded: nothing packed nor unpacked, the receive buffer keeps its bytes
    ("0,1,2,3", "-", ["11", "11", "11", "11"], 2 * 4 * PAGE),
    # receive buffer fully folded: nothing written (sender packs all: its buffer is private)
    ("-", "0,1,2,3", ["x", "x", "x", "x"], 4 * PAGE),
    # partial on both sides: only pages private on both sides (0 here) are copied
    ("1,2", "2,3", ["77", "11", "x", "x"], 2 * PAGE + 3 * PAGE),
    ("0,3", "1", ["11", "x", "77", "11"], 2 * PAGE + 3 * PAGE),
    # sender partly folded, receiver private: the sender's private pages arrive
    ("1", "-", ["77", "11", "77", "77"], PAGE + PAGE),
])
def test_folded_send_recv_copies_only_private_bytes(tmp_path: Path, send, recv, pages, skipped) -> None:
    out = _run(tmp_path, PARTIAL, send, recv)
    assert out["pages"] == pages
    assert int(out["skipped"][0]) == skipped


# the application's own code is timed (direct execution): leave it out to compare the
# communication alone
NOCPU = {"smpi/simulate-computation": "no"}


def test_folding_does_not_change_simulated_time(tmp_path: Path) -> None:
    plain = _run(tmp_path, PARTIAL, "-", "-", cfg=NOCPU)["time"]
    for send, recv in (("0,1,2,3", "-"), ("-", "0,1,2,3"), ("1,2", "2,3"), ("0,1,2,3", "0,1,2,3")):
        assert _run(tmp_path, PARTIAL, send, recv, cfg=NOCPU)["time"] == plain, (send, recv)


LARGE = """
import sys
import numpy as np
import smpy
from smpy.support import folded
from mpi4py import MPI

c = MPI.COMM_WORLD
n = 1 << 22   # 32 MiB of float64: rendezvous, over the network model
a = smpy.shared_array(n)
S0 = folded.skipped_bytes
c.Barrier()
r = c.Irecv(a, source=(c.rank - 1) % c.size, tag=3)
c.Send(a, dest=(c.rank + 1) % c.size, tag=3)
st = MPI.Status()
r.Wait(st)
c.Barrier()
if c.rank == 0:
    print("count", st.Get_count(MPI.DOUBLE))
    print("skipped", folded.skipped_bytes - S0)
    print("time", repr(MPI.Wtime()))
"""


@pytest.mark.slow
def test_large_folded_ring_costs_network_time_without_copies(tmp_path: Path) -> None:
    out = _run(tmp_path, LARGE, np_=3, cfg=NOCPU)
    plain = _run(tmp_path, LARGE, np_=3, cfg={**NOCPU, "smpi/shared-malloc": "no"})
    assert out["count"] == plain["count"] == [str(1 << 22)]
    assert int(out["skipped"][0]) == 3 * 2 * (8 << 22)  # sender and receiver side, 3 messages
    assert int(plain["skipped"][0]) == 0
    assert out["time"] == plain["time"]
    assert float(out["time"][0]) > (8 << 22) / 1.25e9 * 0.5  # 32 MiB cross a network model


TRUNC = """
import numpy as np
import smpy
from mpi4py import MPI
c = MPI.COMM_WORLD
a = smpy.shared_array(4 * 4096, np.uint8)
if c.rank == 0:
    c.Send(a, dest=1)
else:
    small = np.zeros(100, np.uint8)
    try:
        c.Recv(small, source=0)
        print("ok no-error")
    except MPI.Exception as e:
        print("err", e.Get_error_class() == MPI.ERR_TRUNCATE)
"""


def test_folded_message_truncation_still_raises(tmp_path: Path) -> None:
    assert _run(tmp_path, TRUNC)["err"] == ["True"]


COLL = """
import numpy as np
import smpy
from mpi4py import MPI
PAGE = 4096
c = MPI.COMM_WORLD
b = smpy.shared_array(3 * PAGE, np.uint8, shared=[(PAGE, 2 * PAGE)])  # middle page folded
b[:] = 9 if c.rank == 0 else 1
c.Barrier()
if c.rank == 0:
    b[:] = 9
c.Bcast(b, root=0)
if c.rank == 1:
    print("pages", int(b[:PAGE].min()), int(b[2 * PAGE:].min()))
"""


def test_bcast_writes_private_bytes_of_a_partly_folded_buffer(tmp_path: Path) -> None:
    assert _run(tmp_path, COLL)["pages"] == ["9", "9"]


VECTOR = """
import numpy as np
import smpy
from smpy.support import folded
from mpi4py import MPI
c = MPI.COMM_WORLD
vec = MPI.DOUBLE.Create_vector(100, 1, 4).Commit()
a = smpy.shared_array(4000)
p = np.zeros(4000)
S0 = folded.skipped_bytes
c.Barrier()
if c.rank == 0:
    c.Send([a, 1, vec], dest=1)       # folded, non-contiguous: nothing packed
    p[::4] = 5.0
    c.Send([p, 1, vec], dest=1)       # private: packed as usual
    c.Send([p, 1, vec], dest=1)
else:
    p[:] = 3.0
    c.Recv([p, 100, MPI.DOUBLE], source=0)   # from folded memory: nothing written
    c.Recv([p[200:], 100, MPI.DOUBLE], source=0)
    print("values", int(p[:100].min()), int(p[:100].max()), int(p[200:300].min()))
    c.Recv([a, 1, vec], source=0)     # into folded memory: nothing unpacked
    print("skipped", folded.skipped_bytes - S0)
"""


def test_noncontiguous_fully_folded_buffers_skip_the_copy(tmp_path: Path) -> None:
    out = _run(tmp_path, VECTOR)
    assert out["values"] == ["3", "3", "5"]
    assert out["skipped"] == [str(3 * 800)]  # the folded send (packing, unpacking), the folded receive


def test_registry_private_blocks_and_payload_truncation() -> None:
    base = 1 << 40  # addresses nothing else registers
    folded.register(base + 100, 50)
    folded.register(base + 300, 100)
    try:
        assert folded.active
        assert folded.private_blocks(base, 90) is None
        assert folded.private_blocks(base + 400, 10) is None
        assert folded.private_blocks(base + 110, 20) == []
        assert folded.private_blocks(base, 500) == [(0, 100), (150, 300), (400, 500)]
        assert folded.private_blocks(base + 120, 200) == [(30, 180)]
    finally:
        folded.unregister(base, 1000)
    assert folded.private_blocks(base, 500) is None
    p = folded.FoldedPayload(10, [(0, b"ab"), (6, b"cdef")])
    assert bytes(p) == b"ab\0\0\0\0cdef" and len(p) == 10
    t = p[:7]
    assert isinstance(t, folded.FoldedPayload) and bytes(t) == b"ab\0\0\0\0c"
    assert p[2:4] == b"\0\0"
    assert np.frombuffer(bytes(p), np.uint8).size == 10


def test_address_of_every_kind_of_buffer() -> None:
    """folded.address (ctypes for writable buffers, numpy for the rest): the first byte of
    arrays, bytearrays, bytes, read-only arrays and views at an offset, empty ones too."""

    def numpy_address(mem):  # the reference: numpy's view of the same bytes
        return int(np.frombuffer(mem, np.uint8).__array_interface__["data"][0])

    a = np.arange(64.0)
    ro = a.copy()
    ro.flags.writeable = False
    ba, b = bytearray(40), bytes(40)
    bufs = [a, a[8:], memoryview(a).cast("B")[3:], ba, memoryview(ba)[5:], b, memoryview(b)[7:],
            ro, memoryview(ro)[2:], memoryview(a)[:0], bytearray(0)]
    for m in bufs:
        assert folded.address(m) == numpy_address(m), m
    assert folded.address(a[8:]) == folded.address(a) + 64
    with pytest.raises(ValueError):
        folded.address(a[::2])  # not contiguous: as numpy
