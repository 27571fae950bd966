"""Regions and comp-adjustment, sampling, memory folding: the prediction workflow's hints."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import smpy

BUSY = """
import time
def work(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
"""


def _write(tmp_path: Path, body: str, name: str = "prog.py") -> Path:
    prog = tmp_path / name
    prog.write_text(BUSY + textwrap.dedent(body))
    return prog


def _report(path: Path) -> dict[str, list[str]]:
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["region", "bursts", "measured_s", "simulated_s", "ratio", "memory_fraction"]
    return {r[0]: r[1:5] for r in rows[1:]}


REGION_PROG = """
from mpi4py import MPI
c = MPI.COMM_WORLD
for i in range(3):
    work(0.01)
    c.Barrier()          # line 12
    work(0.02)
    c.Barrier()          # line 14
"""


@pytest.mark.slow
def test_region_report_keys_are_smpi_call_locations(tmp_path: Path) -> None:
    prog = _write(tmp_path, REGION_PROG)
    report = tmp_path / "regions.csv"
    res = smpy.run(str(prog), np=2, cfg={"smpy/region-report": str(report)})
    assert res.status == "ok", res.message
    rows = _report(report)
    assert set(rows) == {"<start>:0:prog.py:12", "prog.py:12:prog.py:14", "prog.py:14:prog.py:12",
                         "prog.py:14:<end>:0"}
    assert int(rows["prog.py:12:prog.py:14"][0]) == 6  # 3 iterations x 2 ranks
    assert float(rows["prog.py:12:prog.py:14"][1]) == pytest.approx(6 * 0.02, rel=0.2)


@pytest.mark.slow
def test_comp_adjustment_divides_the_region_time(tmp_path: Path) -> None:
    prog = _write(tmp_path, REGION_PROG)
    adjust = tmp_path / "adjust.csv"
    adjust.write_text('"start:stop","ratio"\n"prog.py:12:prog.py:14",4\n"prog.py:12:prog.py:14",9\n')
    report = tmp_path / "regions.csv"
    res = smpy.run(str(prog), np=1, cfg={"smpi/comp-adjustment-file": str(adjust),
                                         "smpy/region-report": str(report)})
    assert res.status == "ok", res.message
    rows = _report(report)
    n, measured, simulated, ratio = rows["prog.py:12:prog.py:14"]
    assert float(ratio) == 4.0  # the first entry of a key wins, as in SMPI
    assert float(simulated) == pytest.approx(float(measured) / 4.0)
    other = rows["prog.py:14:prog.py:12"]
    assert float(other[2]) == pytest.approx(float(other[1]))


def test_bad_adjustment_file_names_the_line(tmp_path: Path) -> None:
    prog = _write(tmp_path, REGION_PROG)
    adjust = tmp_path / "adjust.csv"
    adjust.write_text('"start:stop","ratio"\n"a:1:b:2",fast\n')
    with pytest.raises(ValueError, match=r"adjust.csv:2: ratio 'fast' is not a number"):
        smpy.run(str(prog), np=1, cfg={"smpi/comp-adjustment-file": str(adjust)})


def test_region_depth_sees_through_a_wrapper(tmp_path: Path) -> None:
    prog = _write(tmp_path, """
from mpi4py import MPI
def sync():
    MPI.COMM_WORLD.Barrier()   # line 10
work(0.001)
sync()                         # line 12
work(0.001)
sync()                         # line 14
""")
    report = tmp_path / "r.csv"
    smpy.run(str(prog), np=1, cfg={"smpy/region-report": str(report)})
    assert "prog.py:10:prog.py:10" in _report(report)
    smpy.run(str(prog), np=1, cfg={"smpy/region-report": str(report), "smpy/region-depth": "2"})
    assert "prog.py:12:prog.py:14" in _report(report)


SAMPLE_PROG = """
from mpi4py import MPI
import smpy
ran = 0
for step in range(3):
    for i in smpy.sample(range(50), iters=4, threshold=-1, scope="{scope}"):
        work(0.01)
        ran += 1
    MPI.COMM_WORLD.Barrier()
print(MPI.COMM_WORLD.rank, ran, repr(MPI.Wtime()))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("scope", "runs"), [("local", [4, 4]), ("global", [0, 4])])
def test_sampling_runs_few_iterations_and_injects_the_mean(tmp_path: Path, scope: str,
                                                           runs: list[int]) -> None:
    prog = _write(tmp_path, SAMPLE_PROG.format(scope=scope))
    res = smpy.run(str(prog), np=2)
    assert res.status == "ok", res.message
    lines = sorted(x.split() for x in res.stdout.splitlines())
    assert sorted(int(x[1]) for x in lines) == runs  # global: whichever rank comes first
    # 3 x 50 iterations of ~10 ms are simulated although at most 4 ran
    for x in lines:
        assert float(x[2]) == pytest.approx(3 * 50 * 0.01, rel=0.25)


def test_threshold_stops_sampling_early(tmp_path: Path) -> None:
    prog = _write(tmp_path, """
import smpy
ran = sum(1 for _ in smpy.sample(range(1000), iters=100, threshold=0.5))
print(ran)
""")
    res = smpy.run(str(prog), np=1)
    assert 2 <= int(res.stdout) < 100


def test_mpi_inside_a_sampled_loop_is_an_error(tmp_path: Path) -> None:
    prog = _write(tmp_path, """
from mpi4py import MPI
import smpy
for i in smpy.sample(range(10), iters=3):
    MPI.COMM_WORLD.Barrier()
""")
    res = smpy.run(str(prog), np=1)
    assert res.status != "ok"
    assert "MPI call inside the sampled loop" in res.message


def test_sampled_function_returns_last_result_and_costs_the_mean(tmp_path: Path) -> None:
    prog = _write(tmp_path, """
from mpi4py import MPI
import smpy
calls = []
@smpy.sampled(iters=3, threshold=-1)
def kernel(x):
    calls.append(x)
    work(0.01)
    return x * 10
out = [kernel(i) for i in range(20)]
print(len(calls), out[:4], out[-1], repr(MPI.Wtime()))
""")
    res = smpy.run(str(prog), np=1)
    assert res.status == "ok", res.message
    words = res.stdout.split(" ", 1)
    assert words[0] == "3"
    assert "[0, 10, 20, 20] 20" in res.stdout
    assert float(res.stdout.split()[-1]) == pytest.approx(20 * 0.01, rel=0.25)


def test_hints_pass_through_outside_smpyrun() -> None:
    assert list(smpy.sample(range(5), iters=2)) == [0, 1, 2, 3, 4]
    f = smpy.sampled(iters=1)(lambda x: x + 1)
    assert [f(1), f(2)] == [2, 3]
    a = smpy.shared_array((3, 4), np.int32)
    assert a.shape == (3, 4) and a.dtype == np.int32 and not a.any()


FOLD_PROG = """
import numpy as np
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD
a = smpy.shared_array((2048, 2048))          # 32 MiB per rank
a[c.rank] = c.rank + 1
c.Barrier()
b = smpy.shared_array((8192,), np.uint8, shared=[(4096, 8192)])
b[:] = c.rank + 1
c.Barrier()
print(c.rank, a.flags["C_CONTIGUOUS"], int(b[0]), int(b[5000]))
"""


def test_global_folding_shares_memory_between_ranks(tmp_path: Path) -> None:
    prog = _write(tmp_path, FOLD_PROG)
    res = smpy.run(str(prog), np=4)
    assert res.status == "ok", res.message
    rows = sorted(x.split() for x in res.stdout.splitlines())
    for r, contiguous, private, shared in rows:
        assert contiguous == "True"
        assert int(private) == int(r) + 1   # first page private to each rank
        assert int(shared) == 4             # folded page: the last writer's value, for all


def test_local_and_no_folding(tmp_path: Path) -> None:
    prog = _write(tmp_path, FOLD_PROG)
    res = smpy.run(str(prog), np=2, cfg={"smpi/shared-malloc": "no"})
    rows = sorted(x.split() for x in res.stdout.splitlines())
    assert [(x[2], x[3]) for x in rows] == [("1", "1"), ("2", "2")]
    res = smpy.run(str(prog), np=2, cfg={"smpi/shared-malloc": "local"})
    rows = sorted(x.split() for x in res.stdout.splitlines())
    # one array per call site, shared: both ranks see the last writer's values everywhere
    assert rows[0][2:] == rows[1][2:] and rows[0][2] == rows[0][3] and rows[0][2] in ("1", "2")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="global folding needs Linux mmap")
def test_folding_keeps_physical_memory_flat(tmp_path: Path) -> None:
    prog = _write(tmp_path, """
import numpy as np, psutil, smpy
from mpi4py import MPI
arrs = [smpy.shared_array((4096, 4096)) for _ in range(8)]   # 8 x 128 MiB per rank
for a in arrs:
    a[::512, :] = 1.0                                        # touch a few rows
MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.rank == 0:
    print(psutil.Process().memory_full_info().uss)
""")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", "8", str(prog)],
                         capture_output=True, text=True, env=env, check=True).stdout
    uss = int(out.split()[-1])
    assert uss < 400 * 2**20  # 8 ranks x 1 GiB of arrays fold into ~1 MiB of private memory
