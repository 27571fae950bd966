"""Derived datatypes, MPI.BOTTOM, packing and MPI.buffer: smpy prints what MPICH prints.

``programs/dtypes_prog.py`` runs under the venv's real mpi4py + MPICH (``mpiexec -n 2``) and
under ``smpyrun -np 2``; the sorted output lines must be equal (layouts, envelopes, contents,
decode, pickling, pack/external32 bytes, received data through strided/struct/BOTTOM types,
partial receives, collectives on derived types, the ERR_OP MPICH raises for predefined ops on
derived types, buffers and addresses). Plus unit checks of the runtime typemaps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from realmpi import needs_mpiexec, real_env, run_reference

from smpy.runtime import datatype as RD

HERE = Path(__file__).resolve().parent
PROG = HERE / "programs" / "dtypes_prog.py"
BIN = Path(sys.executable).parent


def _run(cmd: list[str], env: dict[str, str]) -> str:
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{cmd[0]} timed out:\n{err}")
    assert p.returncode == 0, f"{cmd} failed ({p.returncode}):\n{err}"
    return out


@pytest.mark.slow
@needs_mpiexec
def test_dtypes_program_matches_mpich() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    exe = BIN / "smpyrun"
    smpy_cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    real = sorted(run_reference(2, str(PROG), env=real_env(), timeout=180).stdout.splitlines())
    sim = sorted(_run([*smpy_cmd, "-q", "-np", "2", str(PROG)], env).splitlines())
    assert len(real) > 40
    for r, s in zip(real, sim):
        assert s == r
    assert len(sim) == len(real)


def test_typemap_flattening_and_movement() -> None:
    P = RD.PREDEFINED
    t = RD.create_vector(P["INT"], 3, 2, 4)
    starts, lens = t.flat()
    assert starts.tolist() == [0, 16, 32] and lens.tolist() == [8, 8, 8]
    mem = memoryview(bytearray(np.arange(24, dtype="i").tobytes()))
    assert t.extent == 40  # (2 blocks of stride 4 + 2) ints
    assert np.frombuffer(t.pack(mem, 0, 2), "i").tolist() == [0, 1, 4, 5, 8, 9, 10, 11, 14, 15,
                                                               18, 19]
    out = memoryview(bytearray(96))
    t.unpack(np.arange(1, 8, dtype="i").tobytes(), out, 0, 2)  # 7 ints: a partial element
    assert np.frombuffer(out, "i").tolist()[:16] == [1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 7, 0, 0, 0,
                                                     0, 0]
    # a huge contiguous type costs nothing until data moves; dense children merge
    big = RD.create_contiguous(P["BYTE"], 2**31 - 1)
    assert big.size == 2**31 - 1 and big.contiguous
    s = RD.create_struct([1, 2], [0, 8], [P["INT"], P["DOUBLE"]])
    assert s.flat()[0].tolist() == [0, 8] and RD.get_elements(s, 13) is None
    assert RD.get_elements(s, 12) == 2 and RD.get_elements(s, 40) == 6
    sw = RD.external32_swap(P["INT"], np.array([1], "i").tobytes(), 1)
    assert sw == b"\x00\x00\x00\x01"
