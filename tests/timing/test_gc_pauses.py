"""Python's garbage collections are the emulator's time (smpy/timing/gcpause.py): a
collection inside a sampled iteration leaves its measured time; one inside a plain burst
stays in it (measured once). Both flush paths (the compiled one of a plain run, the Python one
with folded memory) and smpy/accel:off."""

from __future__ import annotations

import gc
import time

import pytest

import smpy
from smpy.timing import gcpause

# rank 0 holds a large heap (every collection scans it); both ranks compute 20 ms in a burst
# and 2 ms per iteration of a sampled loop (5 timed, 50 in all), and rank 0 collects 4 times
# in that burst and once in each timed iteration. It prints what the collections cost by its
# own clock.
PROG = """
import gc, sys, time
import smpy
from mpi4py import MPI

c = MPI.COMM_WORLD
if sys.argv[1] == "fold":
    smpy.shared_array(1 << 20)  # folded memory present: the Python flush
t = time.thread_time()
heap = [(i, [i]) for i in range(300_000)] if c.rank == 0 else []
build = time.thread_time() - t

def spin(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass

c.Barrier()
cost = 0.0
if c.rank == 0:
    for _ in range(4):
        t = time.thread_time()
        gc.collect()
        cost += time.thread_time() - t
spin(0.02)
c.Barrier()
sampled = 0.0
for i in smpy.sample(range(50), iters=5, threshold=1e-9):
    if c.rank == 0:
        t = time.thread_time()
        gc.collect()
        sampled += time.thread_time() - t
    spin(0.002)
c.Barrier()
if c.rank == 0:
    print("cost", repr(cost), "sampled", repr(sampled), "build", repr(build))
"""


@pytest.mark.parametrize("fold", ["plain", "fold"])
@pytest.mark.parametrize("accel", ["on", "off"])
def test_collections_leave_sampled_iterations_not_bursts(tmp_path, fold, accel):
    path = tmp_path / "gcprog.py"
    path.write_text(PROG)
    res = smpy.run(str(path), np=2, args=[fold], capture=True, echo=False,
                   cfg={"smpy/accel": accel, "smpi/host-speed": "1Gf"})
    assert res.status == "ok", res.message
    words = res.stdout.split()
    cost, sampled = float(words[words.index("cost") + 1]), float(words[words.index("sampled") + 1])
    build = float(words[words.index("build") + 1])  # rank 0 made its heap: its own computation
    assert cost > 0.02 and sampled > 0.01, (cost, sampled)  # the collections were not cheap
    # simulated computation (1 Gf: flops = seconds): the bursts and the sampled loop's
    # injected estimate; rank 0's bursts hold its heap's making and its 4 collections, its
    # sampled loop none of its collections
    t0, t1 = res.ranks[0].simulated_flops / 1e9, res.ranks[1].simulated_flops / 1e9
    collections = cost + 50 * sampled / 5  # what they would have added
    assert t1 > 0.1, t1  # 20 ms + 50 x 2 ms
    assert abs(t0 - t1 - build - cost) < 0.3 * cost, (t0, t1, build, cost, collections)

def test_pauses_are_not_measured_on_a_replaced_clock(tmp_path, monkeypatch):
    """A fake clock (tests of exact timing) turns the pause accounting off: a collection then
    moves no timer, and every burst is a whole number of the clock's ticks."""
    from smpy.mpi import _call
    from smpy.timing import bench

    ticks = [0]

    def clock() -> float:
        ticks[0] += 1
        return ticks[0] * 1e-3

    monkeypatch.setattr(bench, "_thread_time", clock)
    monkeypatch.setattr(_call, "_thread_time", clock)
    path = tmp_path / "p.py"
    path.write_text("import gc\nfrom mpi4py import MPI\nheap = [[i] for i in range(200_000)]\n"
                    "MPI.COMM_WORLD.Barrier()\ngc.collect()\ngc.collect()\nMPI.COMM_WORLD.Barrier()\n")
    res = smpy.run(str(path), np=2, capture=True, echo=False, cfg={"smpi/cpu-threshold": "-1"})
    assert res.status == "ok", res.message
    assert gcpause.enabled is False
    for r in res.ranks:
        n = r.measured_compute_s / 1e-3
        assert n >= 1 and abs(n - round(n)) < 1e-6, r.measured_compute_s

def test_pause_counter_outside_ranks():
    """Outside a rank (no running actor) a collection is counted and moves nothing."""
    gcpause.install(True)
    try:
        n, s = gcpause.collections, gcpause.paused_s
        t = time.thread_time()
        gc.collect()
        assert gcpause.collections == n + 1
        assert s < gcpause.paused_s <= s + (time.thread_time() - t) + 1e-6
    finally:
        gcpause.install(False)
