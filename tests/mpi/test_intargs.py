"""Scalar integer arguments converted as mpi4py's Cython signatures convert them (issue 18.7):
``comm.Send(buf, comm.size / 2)`` works under real mpi4py, a float tag is truncated, a string
or ``None`` is ``TypeError: an integer is required``. Compared line by line with real mpi4py
on MPICH; integer *arrays* keep ``operator.index`` (a float there is a ``TypeError`` in both)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import smpy
from smpy.mpi.args import cint
from smpy.support.mpiexec import default_mpiexec

PROGRAM = r'''
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out = []
def t(name, f):
    try:
        r = f()
        out.append(f"{name}: ok {r!r}")
    except MPI.Exception as e:
        out.append(f"{name}: MPI.Exception class {e.Get_error_class()}")
    except Exception as e:
        out.append(f"{name}: {type(e).__name__}: {e}")
class Intish:
    def __int__(self): return 0
class Indexish:
    def __index__(self): return 0
a, b = np.arange(4.0) + rank, np.zeros(4)
st = MPI.Status()
# the osu_multi_lat idiom: a rank as a float, and a float tag truncated to 1
if rank == 0:
    comm.Send(a, size / 2, 1.9)
elif rank == size // 2:
    comm.Recv(b, 0.0, 1, st)
    out.append(f"recv: {b.tolist()} source {st.source} tag {st.tag}")
t("sendrecv", lambda: comm.Sendrecv(a, (rank + 1.0) % size, 2.0, b, (rank - 1.0) % size, 2.5) or b.tolist())
t("isend np.float64", lambda: comm.Isend(a, np.float64(rank), 3).Cancel())
t("isend Intish", lambda: comm.Isend(a, Intish(), 3).Cancel())
t("isend Indexish", lambda: comm.Isend(a, Indexish(), 3))
t("isend str", lambda: comm.Isend(a, "0", 3))
t("isend None", lambda: comm.Isend(a, None, 3))
t("isend nan", lambda: comm.Isend(a, float("nan"), 3))
t("isend 1e30", lambda: comm.Isend(a, 1e30, 3))
t("bcast root 0.0", lambda: comm.bcast(rank, 0.0))
t("gather root 0.5", lambda: comm.gather(rank, 0.5))
t("Bcast root 0.0", lambda: comm.Bcast(a, 0.0) or a.tolist())
t("Allreduce", lambda: comm.allreduce(1.0))
t("Split", lambda: comm.Split(rank % 2 * 1.0, -rank * 1.0).Get_rank())
t("Compute_dims", lambda: MPI.Compute_dims(4.0, 2))
t("Create_contiguous", lambda: MPI.DOUBLE.Create_contiguous(2.0).Get_size())
t("Create_vector", lambda: MPI.DOUBLE.Create_vector(2.0, 1.0, 3.0).Get_extent())
t("Pack_size", lambda: MPI.DOUBLE.Pack_size(2.0, comm))
t("Status.Set_source", lambda: (st.Set_source(1.0), st.Get_source())[1])
t("Status.tag = 2.7", lambda: (setattr(st, "tag", 2.7), st.tag)[1])
t("Get_error_string", lambda: MPI.Get_error_string(1.0))
t("Shift", lambda: comm.Create_cart([size], [True]).Shift(0.0, 1.0))
t("Group.Incl float", lambda: comm.Get_group().Incl([0.0]))
t("Create_cart dims float", lambda: comm.Create_cart([float(size)]))
t("Iprobe", lambda: comm.Iprobe(0.0, 99.0))
import sys
with open(f"{sys.argv[1]}.{rank}", "w") as fh:  # one file per rank: mpiexec interleaves stdout
    fh.write("".join(f"{rank}| {line}\n" for line in out))
'''


def test_cint_follows_cython():
    assert cint(3) == 3 and cint(True) is True and cint(2.9) == 2 and cint(-2.9) == -2
    with pytest.raises(TypeError, match="an integer is required"):
        cint("1")
    with pytest.raises(ValueError, match="NaN"):
        cint(float("nan"))
    with pytest.raises(OverflowError, match="C long"):
        cint(1e30)


def _lines(prefix: Path) -> list[str]:
    return sorted(ln for r in (0, 1) for ln in Path(f"{prefix}.{r}").read_text().splitlines())


def test_integer_arguments_as_real_mpi4py(tmp_path: Path) -> None:
    prog = tmp_path / "intargs.py"
    prog.write_text(PROGRAM)
    res = smpy.run(str(prog), np=2, args=[str(tmp_path / "smpy")], capture=True,
                   cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    got = _lines(tmp_path / "smpy")
    assert "0| recv: [0.0, 1.0, 2.0, 3.0] source 0 tag 1" not in got  # rank 1 receives it
    assert "1| recv: [0.0, 1.0, 2.0, 3.0] source 0 tag 1" in got
    assert "0| Compute_dims: ok [2, 2]" in got
    assert "0| isend str: TypeError: an integer is required" in got
    mpiexec = default_mpiexec()
    if shutil.which(mpiexec) is None:
        pytest.skip("no mpiexec for the real MPI reference")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    real = subprocess.run([mpiexec, "-n", "2", sys.executable, str(prog), str(tmp_path / "real")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert real.returncode == 0, f"the reference run failed: {real.stderr[-500:]}"
    assert got == _lines(tmp_path / "real")
