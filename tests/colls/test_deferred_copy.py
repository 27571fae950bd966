"""The allreduce that never copies its send buffer (``deferred`` algorithms, Rabenseifner's
``rab_rdb``): the same result bytes and simulated times as copying the send buffer into the
receive buffer first, and ``OpImpl.apply_out`` (``out = in op local``) gives the bytes of a
copy followed by ``OpImpl.apply``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import smpy
import smpy.colls.allreduce  # noqa: F401 - registers rab_rdb
from smpy.colls import registry
from smpy.runtime import errors
from smpy.runtime import op as ops
from smpy.runtime.datatype import BY_NAME

PROGRAM = Path(__file__).resolve().parent / "programs" / "allreduce_deferred.py"


def _dt(name: str):
    return BY_NAME[name]


CASES = [("MPI_DOUBLE", np.float64), ("MPI_FLOAT", np.float32), ("MPI_INT", np.int32),
         ("MPI_LONG", np.int64), ("MPI_UNSIGNED_CHAR", np.uint8), ("MPI_C_DOUBLE_COMPLEX", np.complex128)]


@pytest.mark.parametrize("opname", ["SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR", "LAND"])
@pytest.mark.parametrize("dtname,npt", CASES)
def test_apply_out_is_copy_then_apply(opname: str, dtname: str, npt) -> None:
    op = getattr(ops, opname)
    dt = _dt(dtname)
    rng = np.random.default_rng(3)
    n = 1001
    if np.issubdtype(npt, np.complexfloating):
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(npt)
        b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(npt)
    elif np.issubdtype(npt, np.floating):
        a = (rng.standard_normal(n) * 1e6).astype(npt)
        b = (rng.standard_normal(n) * 1e-3).astype(npt)
        a[:3], b[:3] = np.nan, [np.inf, -np.inf, 0.0]
    else:
        a = rng.integers(np.iinfo(npt).min, np.iinfo(npt).max, n, dtype=npt)
        b = rng.integers(np.iinfo(npt).min, np.iinfo(npt).max, n, dtype=npt)
    try:
        op.check(dt)
    except errors.MPIException:
        with pytest.raises(errors.MPIException):
            op.apply_out(a.tobytes(), b.tobytes(), memoryview(bytearray(b.nbytes)), n, dt)
        return
    want = bytearray(b.tobytes())
    op.apply(a.tobytes(), want, n, dt)
    local = b.tobytes()
    out = bytearray(b"\xab" * b.nbytes)
    op.apply_out(a.tobytes(), local, memoryview(out), n, dt)
    assert bytes(out) == bytes(want)
    assert local == b.tobytes()
    # in place (out is local's memory) too
    same = bytearray(b.tobytes())
    op.apply_out(a.tobytes(), memoryview(same), memoryview(same), n, dt)
    assert bytes(same) == bytes(want)


def _digests(np_: int, monkeypatch: pytest.MonkeyPatch | None) -> tuple[list[str], float]:
    res = smpy.run(str(PROGRAM), np=np_, capture=True,
                   cfg={"smpi/allreduce": "rab_rdb", "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    lines = [res.rank_output(r) for r in range(np_)]
    for text in lines:
        assert text and all(ln.startswith("ok ") for ln in text.splitlines()), text
    return lines, res.makespan_s


@pytest.mark.parametrize("np_", [4, 6, 16])
def test_deferred_copy_gives_the_bytes_of_the_copy(np_: int, monkeypatch: pytest.MonkeyPatch) -> None:
    algo = registry.ALGORITHMS["allreduce"]["rab_rdb"]
    assert algo.deferred and algo.in_place
    new, t_new = _digests(np_, None)
    monkeypatch.setitem(registry.ALGORITHMS["allreduce"], "rab_rdb", dataclasses.replace(algo, deferred=False))
    old, t_old = _digests(np_, None)
    assert new == old
    assert t_new == t_old
    # every rank printed the same digests (it is an allreduce)
    assert len(set(new)) == 1
