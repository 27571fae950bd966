"""Process topologies and neighbourhood collectives, against what mpi4py 4.1.2 + MPICH give.

* ``MPI.Compute_dims`` on 3398 inputs recorded from real MPICH (data/dims_create_mpich.json),
  including the many where MPICH's search does not return the most balanced grid;
* tests/programs/topo.py under smpyrun prints, line by line, what it printed under real
  MPICH at np 1-4 (topo_mpich_np<N>.txt): Cartesian/graph/distributed-graph queries,
  Sub/Dup/Split, maps, error classes, every neighbourhood collective (blocking,
  non-blocking, v, w, objects), including the MPI-4 matching of periodic dimensions of
  size 1 and 2 and the untouched PROC_NULL slots;
* the runtime's Cartesian arithmetic, and simulated time growing with message size.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import smpy
from smpy.runtime import errors
from smpy.runtime.constants import PROC_NULL
from smpy.runtime.topo import CartTopo, GraphTopo, dims_create

HERE = Path(__file__).parent
PROGRAMS = HERE.parent / "programs"
CFG = {"smpi/simulate-computation": "no"}


def test_dims_create_matches_mpich() -> None:
    cases = json.loads((HERE / "data" / "dims_create_mpich.json").read_text())["cases"]
    assert len(cases) > 3000
    wrong = []
    for n, dims, want in cases:
        try:
            got = dims_create(n, dims)
        except errors.MPIException as e:
            got = ["E", e.error_class]
        if got != want:
            wrong.append((n, dims, want, got))
    assert not wrong, wrong[:10]


def test_dims_create_errors() -> None:
    with pytest.raises(errors.MPIException) as ei:
        dims_create(-1, [0, 0])
    assert ei.value.error_class == errors.ERR_ARG
    with pytest.raises(errors.MPIException) as ei:
        dims_create(4, [-1, 0])
    assert ei.value.error_class == errors.ERR_DIMS
    with pytest.raises(errors.MPIException) as ei:
        dims_create(10, [3, 0])
    assert ei.value.error_class == errors.ERR_DIMS


def test_cart_arithmetic() -> None:
    t = CartTopo([3, 2, 2], [1, 0, 1])
    assert [t.coords(r) for r in (0, 1, 5, 11)] == [[0, 0, 0], [0, 0, 1], [1, 0, 1], [2, 1, 1]]
    assert all(t.rank(t.coords(r)) == r for r in range(12))
    assert t.rank([-1, 1, 3]) == t.rank([2, 1, 1])  # periodic dimensions wrap
    with pytest.raises(errors.MPIException) as ei:
        t.rank([0, 2, 0])
    assert ei.value.error_class == errors.ERR_ARG
    assert t.shift(0, 1, 1) == (PROC_NULL, 2)  # non-periodic edge
    assert t.shift(0, 0, -1) == (4, 8)
    assert t.neighbors(0)[0] == [8, 4, PROC_NULL, 2, 1, 1]
    g = GraphTopo([2, 3], [1, 1, 0])
    assert g.of(0) == [1, 1] and g.of(1) == [0] and g.count(1) == 1


def _lines(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.strip() and not line.startswith("[smpy]"))


@pytest.mark.slow
@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_program_matches_mpich(np_: int) -> None:
    res = smpy.run(str(PROGRAMS / "topo.py"), np=np_, cfg=CFG)
    assert res.status == "ok", res.message
    want = _lines((PROGRAMS / f"topo_mpich_np{np_}.txt").read_text())
    assert _lines(res.stdout) == want


@pytest.mark.slow
def test_neighbor_collectives_cost_time() -> None:
    res = smpy.run(str(PROGRAMS / "topo_time.py"), np=4, cfg=CFG)
    assert res.status == "ok", res.message
    rows = [line.split(maxsplit=5) for line in res.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == 8
    by = {(int(r[0]), int(r[1])): [float(x) for x in r[2:5]] + [r[5]] for r in rows}
    for rank in range(4):
        small, big = by[rank, 1], by[rank, 1 << 20]
        assert 0 < small[0] < big[0]  # blocking alltoall: 16 B vs 16 MiB per neighbour
        assert big[1] < big[2]  # the non-blocking call returns before its transfers end
        assert 0 < small[2] < big[2]
        assert big[3] == f"[{(rank - 1) % 4}, {(rank + 1) % 4}]"
