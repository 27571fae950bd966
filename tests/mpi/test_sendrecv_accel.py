"""The compiled body of ``Comm.Sendrecv`` (smpy/mpi/_callaccel.c) against the Python body, and
the compiled call wrapper on runs with folded memory (the page-fault count of the compute
bursts: Timing.flush and Timing.mark_faults around outermost calls, no ``_hooked`` frame).

Whole runs both ways (``smpy/accel`` off and on) must give the same outputs, summaries,
figures and traces. Skipped only when the accelerator cannot be built here.
"""

from __future__ import annotations

import json

import pytest

import smpy
from smpy.cli import launch
from smpy.kernel import accel

MOD = accel.load()
pytestmark = pytest.mark.skipif(MOD is None, reason=f"the accelerator cannot be built here: {accel.why()}")
EXACT = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}

SENDRECV = """
import numpy as np
from mpi4py import MPI
w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
right, left = (r + 1) % n, (r - 1) % n
X = np.arange(40.0).reshape(8, 5) + 100 * r
got = np.zeros((8, 5))
# positional, keywords, row slices of a 2-D array (hpl.py's exchange)
w.Sendrecv(X[0:2], right, 1, got[0:2], left, 1)
w.Sendrecv(X[2:5], dest=right, sendtag=2, recvbuf=got[2:5], source=left, recvtag=2)
w.Sendrecv([X[5:6], MPI.DOUBLE], right, recvbuf=[got[5:6], 5, MPI.DOUBLE], source=left)
print(r, got[:6].sum(), got[0].tolist())
# odd forms: a status, wildcards, PROC_NULL, numpy integers (the Python body, or coerced)
st = MPI.Status()
w.Sendrecv(X[6], right, 3, got[6], MPI.ANY_SOURCE, MPI.ANY_TAG, st)
print(r, "status", st.Get_source(), st.Get_tag(), st.Get_count(MPI.DOUBLE))
w.Sendrecv(X[7], dest=np.int64(right), sendtag=np.int32(4), recvbuf=got[7], source=np.int64(left), recvtag=4)
w.Sendrecv(X[0], MPI.PROC_NULL, 5, got[0], MPI.PROC_NULL, 5, st)
print(r, "null", st.Get_source(), got[7].tolist())
# a sub-communicator (its _impl is not COMM_WORLD's), a Sendrecv with no receive buffer size left
col = w.Split(r % 2, r)
cr, cn = col.Get_rank(), col.Get_size()
b = np.zeros(3)
col.Sendrecv(np.full(3, float(r)), (cr + 1) % cn, 7, b, (cr - 1) % cn, 7)
print(r, "split", b.tolist())
# errors: truncation (the receive), a bad rank, a bad tag, an unknown keyword
w.Set_errhandler(MPI.ERRORS_RETURN)
try:
    w.Sendrecv(np.ones(4), right, 8, np.zeros(2), left, 8)
except MPI.Exception as e:
    print(r, "truncated", e.Get_error_class() == MPI.ERR_TRUNCATE)
for bad in ({"dest": 99}, {"dest": right, "sendtag": -3}, {"dest": right, "source": 99}):
    try:
        w.Sendrecv(np.ones(1), recvbuf=np.zeros(1), **bad)
    except MPI.Exception as e:
        print(r, "error", e.Get_error_class())
try:
    w.Sendrecv(np.ones(1), right, colour=3)
except TypeError:
    print(r, "TypeError")
print(r, w.allreduce(float(got.sum())))
"""


def _run(tmp_path, mode, program, np_, cfg=None, trace=False, status="ok"):
    path = tmp_path / "prog.py"
    path.write_text(program)
    tr = tmp_path / f"trace-{mode}.json" if trace else None
    res = launch.run(str(path), np=np_, capture=True, echo=False, cfg={**EXACT, **(cfg or {}), "smpy/accel": mode},
                     trace=str(tr) if tr else None)
    assert res.status == status, res.message
    assert res.accelerated == (mode == "on")
    d = res.to_json()
    for k in ("wall_s", "cpu_s", "peak_rss_bytes", "accelerated", "accel_parts", "config"):
        d.pop(k)
    return {"summary": [ln for ln in res.summary().splitlines() if "emulation wall time" not in ln],
            "result": json.dumps(d, sort_keys=True, default=str), "output": res.output,
            "trace": tr.read_bytes() if tr else None}


@pytest.mark.parametrize("trace", [False, True])
def test_sendrecv_the_same_both_ways(tmp_path, trace):
    pure = _run(tmp_path, "off", SENDRECV, 4, trace=trace)
    fast = _run(tmp_path, "on", SENDRECV, 4, trace=trace)
    assert pure == fast
    text = "".join(t for _, _, t in pure["output"])
    assert "0 9435.0 [300.0, 301.0, 302.0, 303.0, 304.0]" in text and "27120.0" in text
    assert "1 status 0 3 5" in text and "2 null -1 [135.0, 136.0, 137.0, 138.0, 139.0]" in text
    assert "0 split [2.0, 2.0, 2.0]" in text and text.count("truncated True") == 4
    assert text.count("error 6") == 8 and text.count("error 4") == 4 and text.count("TypeError") == 4


DEADLOCK = """
import numpy as np
from mpi4py import MPI
w = MPI.COMM_WORLD
big = np.zeros(1 << 20)  # rendezvous: the send waits for its receive
if w.rank == 0:
    w.Sendrecv(big, 1, 3, np.zeros(4), 1, 3)
else:
    w.Recv(big, 0, 4)
"""


def test_sendrecv_deadlock_report_the_same_both_ways(tmp_path):
    """A Sendrecv blocked in its send: the same deadlock report (the wait's label) both ways."""
    pure = _run(tmp_path, "off", DEADLOCK, 2, status="deadlock")
    fast = _run(tmp_path, "on", DEADLOCK, 2, status="deadlock")
    assert pure == fast
    assert "MPI_Wait on" in pure["result"]


def test_sendrecv_body_is_in_place_and_used(tmp_path, monkeypatch):
    """The plain Sendrecv of the compiled path neither runs the Python body nor wraps its two
    requests in Python Request objects; the odd forms still run the Python body."""
    from smpy.mpi.comm import Comm
    from smpy.mpi.request import Request

    assert accel.use(True)
    try:
        call = Comm.__dict__["Sendrecv"]
        assert type(call).__name__ == "MpiCall" and "compiled" in repr(call)
    finally:
        accel.use(False)
    counts = {"wrap": 0}
    wrap = Request.__dict__["_wrap"].__func__

    def counting_wrap(cls, *a, **kw):  # type: ignore[no-untyped-def]
        counts["wrap"] += 1
        return wrap(cls, *a, **kw)

    monkeypatch.setattr(Request, "_wrap", classmethod(counting_wrap))
    prog = ("import numpy as np\nfrom mpi4py import MPI\nw = MPI.COMM_WORLD\nb = np.zeros(4)\n"
            "for i in range(5):\n"
            "    w.Sendrecv(np.ones(4), 1 - w.rank, i, b, 1 - w.rank, i)\n"
            "w.Sendrecv(np.ones(4), 1 - w.rank, 9, b, MPI.ANY_SOURCE, 9)\n")
    path = tmp_path / "p.py"
    path.write_text(prog)
    got = {}
    for mode in ("off", "on"):
        counts.update(wrap=0)
        res = smpy.run(str(path), np=2, capture=True, echo=False, cfg={**EXACT, "smpy/accel": mode})
        assert res.status == "ok"
        got[mode] = dict(counts)
    # the Python body wraps both requests of every Sendrecv
    assert got["off"]["wrap"] == 2 * 6 * 2
    assert got["on"]["wrap"] == 2 * 1 * 2  # the ANY_SOURCE one only, through the Python body


FOLDED = """
import numpy as np
import smpy
from mpi4py import MPI
w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
X = smpy.shared_array((64, 512))
mine = np.zeros(8)
for i in range(4):
    X[8 * r:8 * r + 8] += 1.0                        # a burst that touches folded pages
    with smpy.untimed():
        w.Sendrecv(X[8 * r:8 * r + 4], (r + 1) % n, i, X[32:36], (r - 1) % n, i)
    w.Sendrecv(mine, (r + 1) % n, 10 + i, np.zeros(8), (r - 1) % n, 10 + i)
    q = w.Isend(mine, (r + 1) % n, 20 + i)
    w.Recv(np.zeros(8), (r - 1) % n, 20 + i)
    q.Wait()
print(r, w.allreduce(1.0))
"""


def test_folded_runs_skip_hooked_and_time_as_python(tmp_path, monkeypatch):
    """With folded memory (the page faults of every burst counted), the compiled wrapper
    flushes with Timing.flush and restarts with Timing.mark_faults, as _call._hooked does:
    on a fake CPU clock and a fake page-fault count, the same calls, clock reads, marks,
    outputs and simulated end both ways, and no _hooked frame when compiled."""
    from smpy.mpi import _call
    from smpy.timing import bench, folding
    from smpy.timing.bench import Timing

    counts = {"hooked": 0, "clock": 0, "marks": 0, "flush": 0}
    hooked, mark_faults, flush = _call._hooked, Timing.mark_faults, Timing.flush

    def counting_hooked(*a, **kw):  # type: ignore[no-untyped-def]
        counts["hooked"] += 1
        return hooked(*a, **kw)

    def counting_marks(self, proc):  # type: ignore[no-untyped-def]
        counts["marks"] += 1
        return mark_faults(self, proc)

    def counting_flush(self, proc, mark=True):  # type: ignore[no-untyped-def]
        counts["flush"] += 1
        return flush(self, proc, mark)

    def clock() -> float:
        counts["clock"] += 1
        return counts["clock"] * 2e-6

    monkeypatch.setattr(_call, "_hooked", counting_hooked)
    monkeypatch.setattr(Timing, "mark_faults", counting_marks)
    monkeypatch.setattr(Timing, "flush", counting_flush)
    monkeypatch.setattr(bench, "_thread_time", clock)
    monkeypatch.setattr(_call, "_thread_time", clock)
    # no real page-fault figures: the same marks both ways (one more fault per look)
    monkeypatch.setattr(folding, "thread_faults", lambda: counts["clock"])
    monkeypatch.setattr(folding.Folder, "_shared_bytes", lambda self: 0)
    path = tmp_path / "folded.py"
    path.write_text(FOLDED)
    got = {}
    # the first run of a process blocks once more before its first MPI call (a lazy import):
    # a warm-up run, then the two compared
    for mode in ("off", "off", "on"):
        counts.update(hooked=0, clock=0, marks=0, flush=0)
        res = smpy.run(str(path), np=4, capture=True, echo=False,
                       cfg={"smpy/accel": mode, "smpy/shared-malloc-trim": "1MiB"})
        assert res.status == "ok" and res.accelerated == (mode == "on"), res.message
        got[mode] = (res.mpi_calls, counts["clock"], counts["marks"], counts["flush"], res.output, res.makespan_s,
                     [rk.measured_compute_s for rk in res.ranks])
        assert (counts["hooked"] == 0) == (mode == "on")
    assert got["off"] == got["on"]
    calls, marks, flushes = got["on"][0], got["on"][2], got["on"][3]
    # every outermost call marked the faults once, at its exit (its flush at the entry does
    # not: the exit's mark replaced that one, 2 marks a call until Nov 2026); the other
    # flushes (smpy.untimed()'s entries and exits, the ranks' ends) mark, each exit of an
    # smpy.untimed() block marks the timed burst's start (4 per rank), and a few restarts
    assert calls >= 4 * 20
    assert calls <= marks - (flushes - calls) <= calls + 4 * 4 + 4, (calls, marks, flushes)
