"""smpy.untimed(): the rank's Python time inside the block is not simulated computation
(SMPI's smpi_bench_end ... smpi_bench_begin); its MPI calls are. Both flush paths: the
compiled one of a plain run and the Python one (folded memory present), and smpy/accel:off."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import smpy

# rank 0 spins 30 ms of CPU between two barriers, inside or outside smpy.untimed(), then sends
# 1 MB to rank 1 inside the block: the message still takes its network time
PROG = """
import sys, time
import numpy as np
import smpy
from mpi4py import MPI

c = MPI.COMM_WORLD
if sys.argv[2] == "fold":
    smpy.shared_array(1 << 20)  # folded memory present: the Python flush
buf = np.zeros(1 << 17)

def spin():
    t = time.thread_time()
    while time.thread_time() - t < 0.03:
        pass

c.Barrier()
t0 = MPI.Wtime()
if sys.argv[1] == "untimed":
    with smpy.untimed():
        with smpy.untimed():  # nests
            spin()
        spin()
        if c.rank == 0:
            c.Send(buf, dest=1)
        elif c.rank == 1:
            c.Recv(buf, source=0)
        spin()
else:
    spin()
    spin()
    if c.rank == 0:
        c.Send(buf, dest=1)
    elif c.rank == 1:
        c.Recv(buf, source=0)
    spin()
c.Barrier()
t1 = MPI.Wtime()
spin()  # timed again after the block
c.Barrier()
if c.rank == 0:
    print("block", repr(t1 - t0), "after", repr(MPI.Wtime() - t1))
"""


def _times(tmp_path: Path, mode: str, fold: str, accel: str) -> tuple[float, float]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROG))
    res = smpy.run(str(prog), np=2, args=[mode, fold],
                   cfg={"smpi/host-speed": "1Gf", "smpy/accel": accel})
    assert res.status == "ok", res.message + res.stdout
    words = next(ln for ln in res.stdout.splitlines() if ln.startswith("block")).split()
    return float(words[1]), float(words[3])


@pytest.mark.parametrize("fold,accel", [("plain", "auto"), ("fold", "auto"), ("plain", "off")])
def test_untimed_block_is_not_computation_but_its_messages_are(tmp_path: Path, fold: str, accel: str) -> None:
    timed, after_t = _times(tmp_path, "timed", fold, accel)
    untimed, after_u = _times(tmp_path, "untimed", fold, accel)
    # default platform, 1 MB: about 0.1 ms on the network at least; the spins: 3 x 30 ms
    assert untimed > 1e-5
    assert untimed < 0.005, untimed  # the 90 ms of spinning are gone, the message is not
    assert timed > 0.08, timed  # three spins of 30 ms at host-speed = target speed (1 Gf)
    assert after_u > 0.025 and after_t > 0.025  # timed again after the block


def test_untimed_outside_smpyrun_is_a_no_op_and_not_inside_a_sampled_loop(tmp_path: Path) -> None:
    with smpy.untimed():  # no simulation running: nothing to do
        pass
    prog = tmp_path / "bad.py"
    prog.write_text("import smpy\nfor i in smpy.sample(range(3), iters=2):\n    with smpy.untimed():\n"
                    "        pass\n")
    res = smpy.run(str(prog), np=1)
    assert res.status != "ok"
    assert "smpy.untimed inside the sampled loop" in res.message + res.stdout + getattr(res, "stderr", "")
