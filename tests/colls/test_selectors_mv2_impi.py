"""The mvapich2 and impi selectors give SimGrid 3.32's decisions; their tables name only
algorithms smpy has.

Expected algorithms were read off smpi_mvapich2_selector_stampede.hpp and
smpi_intel_mpi_selector.cpp for each point, e.g. MVAPICH2's alltoall at 16 ranks (1 rank
per node table, row ``numproc`` 16): ``{0, 64, RD}, {64, 512, bruck}, {512, -1,
scatter_dest}``; the timing of these decisions is checked against SMPI itself by
benchmarks/vs_smpi/colls_run.py (colls_results.txt).
"""

from __future__ import annotations

import pytest
from collharness import ctx_of, run_sizes

from smpy.colls.registry import ALGORITHMS
from smpy.colls.selectors import SELECTORS, Query

C, N = True, False

# (ranks per host, family, query, expected algorithm, expected MV2 pointers or None)
MV2_CASES = [
    (1, "alltoall", Query(16, 32), "rdb", None),
    (1, "alltoall", Query(16, 100), "bruck", None),
    (1, "alltoall", Query(16, 1000), "mvapich2_scatter_dest", None),
    (1, "alltoall", Query(16, 64), "rdb", None),  # bounds are inclusive: nbytes > max moves on
    (2, "alltoall", Query(16, 1000), "mvapich2_scatter_dest", None),  # conf 0 (1 ppn) always
    (1, "bcast", Query(16, 8), "mvapich2_inter_node", {"bcast_inter": "mpich", "bcast_intra": "mpich"}),
    (1, "bcast", Query(16, 10000), "mvapich2_inter_node", {"bcast_inter": "binomial_tree"}),
    (1, "reduce", Query(16, 8, 1, C), "mvapich2_two_level", {"reduce_inter": "mvapich2_knomial",
                                                             "reduce_intra": "ompi_basic_linear"}),
    (1, "reduce", Query(16, 8, 1, N), "binomial", None),
    (1, "reduce", Query(16, 300000, 75000, C), "binomial", None),
    (1, "reduce", Query(16, 1 << 21, 1 << 18, C), "scatter_gather", None),
    (1, "allreduce", Query(16, 8, 1, C), "mvapich2_two_level", {"allreduce_inter": "rdb"}),
    (1, "allreduce", Query(16, 8, 1, N), "rdb", None),
    (1, "allreduce", Query(16, 4096, 1024, C), "mvapich2_rs", None),
    (1, "allgather", Query(16, 8), "rdb", None),
    (1, "allgather", Query(16, 200000), "ring", None),
    (2, "allgather", Query(16, 20000), "mvapich2_smp", None),  # 2-ppn row 16, two-level entry
    (2, "allgather", Query(16, 8), "rdb", None),
    (1, "scatter", Query(16, 100), "ompi_basic_linear", None),
    (2, "scatter", Query(16, 100), "mvapich2_two_level_direct", {"scatter_intra": "ompi_binomial"}),
    (1, "reduce_scatter", Query(16, 32, 8, C, [2] * 16), "default", None),
    (1, "reduce_scatter", Query(16, 4096, 1024, C, [64] * 16), "ompi_basic_recursivehalving", None),
    (1, "reduce_scatter", Query(16, 128, 32, N, [2] * 16), "mvapich2_noncomm", None),
    (1, "reduce_scatter", Query(16, 128, 32, N, [1, 3] * 8), "mpich_rdb", None),
    (1, "barrier", Query(16, 0), "mvapich2_pair", None),
    (1, "alltoallv", Query(16, 0), "ring", None),
    (1, "allgatherv", Query(16, 16 * 8, counts=[1] * 16), "mpich_rdb", None),
    (1, "gatherv", Query(16, 8), "nbc_linear", None),
]

IMPI_CASES = [
    (1, "allreduce", Query(2, 5, 1, C), "ompi_ring_segmented"),  # < 6 bytes: algorithm 7
    (1, "allreduce", Query(2, 6, 1, C), "rdb"),  # ≥ 6: next entry, algorithm 1
    (1, "allreduce", Query(4, 20000, 2500, C), "ompi_ring_segmented"),
    (1, "bcast", Query(2, 0), "NTSL"),
    (1, "bcast", Query(2, 1), "mvapich2"),  # algorithm 7 (Shumilin's): the mvapich2 selector
    (1, "barrier", Query(2, 0), "ompi_recursivedoubling"),
    (1, "barrier", Query(4, 0), "ompi_basic_linear"),  # algorithm 6: barrier__default
    (1, "alltoall", Query(4, 8), "mvapich2_scatter_dest"),
    (1, "alltoall", Query(2, 8), "pair"),
]


def _decide(selector: str, per_host: int, cases: list) -> list:
    size = cases[0][2].size

    def fn(proc, comm):
        if comm.size != size:
            return None
        out = []
        for _ph, family, q, *_ in cases:
            ctx = ctx_of(proc, comm)
            ctx.sel.mv2.clear()
            out.append((SELECTORS[selector](family, q, ctx), dict(ctx.sel.mv2)))
        return out
    return run_sizes([size], fn, per_host=per_host)[size][0]


@pytest.mark.parametrize("per_host", [1, 2])
def test_mvapich2_decisions(per_host: int) -> None:
    cases = [c for c in MV2_CASES if c[0] == per_host]
    for (_ph, family, q, want, ptrs), (got, state) in zip(cases, _decide("mvapich2", per_host, cases), strict=True):
        assert got == want, (family, q)
        for k, v in (ptrs or {}).items():
            assert state.get(k) == v, (family, q, k, state)


@pytest.mark.slow
def test_mvapich2_gather_is_two_level_only_after_init_smp() -> None:
    """gather__mvapich2 reads is_blocked without init_smp: flat mpich until another
    collective (here its bcast) has built the node structure."""
    def fn(proc, comm):
        ctx = ctx_of(proc, comm)
        before = SELECTORS["mvapich2"]("gather", Query(64, 100), ctx)
        SELECTORS["mvapich2"]("bcast", Query(64, 8), ctx_of(proc, comm))
        after = SELECTORS["mvapich2"]("gather", Query(64, 100), ctx_of(proc, comm))
        return before, after
    res = run_sizes([64], fn)[64]
    assert set(res) == {("mpich", "mvapich2_two_level")}


@pytest.mark.parametrize("size", sorted({c[2].size for c in IMPI_CASES}))
def test_impi_decisions(size: int) -> None:
    cases = [c for c in IMPI_CASES if c[2].size == size]
    for (_ph, family, q, want), (got, _state) in zip(cases, _decide("impi", 1, cases), strict=True):
        assert got == want, (family, q)


def test_tables_name_known_algorithms() -> None:
    from smpy.colls.tables_impi import IMPI
    from smpy.colls.tables_mv2 import MV2

    local = {"MPIR_Allgather_RD_Allgather_Comm_MV2", "MPIR_Allreduce_reduce_shmem_MV2",
             "MPIR_Allreduce_reduce_p2p_MV2", "MPIR_Allreduce_mcst_reduce_two_level_helper_MV2",
             "MPIR_Allreduce_mcst_reduce_redscat_gather_MV2", "MPIR_Reduce_Scatter_Basic_MV2",
             "MPIR_Scatter_mcst_wrap_MV2", None}
    family_of = {"red_scat": "reduce_scatter"}
    for coll, tables in MV2.items():
        family = family_of.get(coll, coll)
        for rows in (tables.values() if isinstance(tables, dict) else [tables]):
            for row in rows:
                for key in ("algo_table", "inter_leader", "intra_node"):
                    for entry in row.get(key, []):
                        name = entry[2]
                        assert name in local or name in ALGORITHMS[family] or name in SELECTORS, (coll, name)
    special = {"intel_barrier_gather_scatter", "intel_reduce_scatter_recursivehalving",
               "intel_reduce_scatter_reduce_scatterv"}
    for family, spec in IMPI.items():
        for _ppn, procs in spec["table"]:
            for _maxp, _num, elems in procs:
                for _size, algo in elems:
                    assert 1 <= algo <= len(spec["functions"]), (family, algo)
                    name = spec["functions"][algo - 1]
                    assert name in special or name in ALGORITHMS[family] or name in SELECTORS, (family, name)


@pytest.mark.parametrize("selector", ["mvapich2", "impi"])
def test_selector_runs_every_collective_exactly(selector: str) -> None:
    """tests/programs-like smoke run: every family under the selector, exact results."""
    from collharness import MATMUL, SUM, block, folded, vector

    def fn(proc, comm):
        out = {}
        for name, args in (
            ("bcast", lambda: (0, block(0, 800) if proc.rank == 0 else None, 800, 8)),
            ("allreduce", lambda: (vector(proc.rank, 100, SUM), SUM)),
            ("allreduce", lambda: (vector(proc.rank, 3, MATMUL), MATMUL)),
            ("reduce", lambda: (1, vector(proc.rank, 100, SUM), SUM)),
            ("allgather", lambda: (block(proc.rank, 16), [16] * comm.size, 8)),
            ("gather", lambda: (2, block(proc.rank, 16), 8)),
            ("scatter", lambda: (1, [block(r, 16) for r in range(comm.size)] if proc.rank == 1 else None, 8)),
            ("alltoall", lambda: ([block(proc.rank * 100 + r, 16) for r in range(comm.size)],)),
            ("barrier", lambda: ()),
        ):
            ctx = ctx_of(proc, comm)
            out.setdefault(name, []).append(ctx.sel.run(name, ctx, *args()))
        return out

    n = 12
    res = run_sizes([n], fn, {"smpi/coll-selector": selector}, per_host=2)[n]
    for r, out in enumerate(res):
        assert out["bcast"] == [block(0, 800)]
        assert out["allreduce"][0] == folded(SUM, [vector(i, 100, SUM) for i in range(n)])
        assert out["allreduce"][1] == folded(MATMUL, [vector(i, 3, MATMUL) for i in range(n)])
        assert out["reduce"] == [folded(SUM, [vector(i, 100, SUM) for i in range(n)]) if r == 1 else None]
        assert list(out["allgather"][0]) == [block(i, 16) for i in range(n)]
        assert out["gather"] == [[block(i, 16) for i in range(n)] if r == 2 else None]
        assert out["scatter"] == [block(r, 16)]
        assert list(out["alltoall"][0]) == [block(i * 100 + r, 16) for i in range(n)]
