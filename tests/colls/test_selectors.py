"""Selector tables give SimGrid's decisions; settings pick algorithms; --help-coll lists them.

The expected algorithms below were read off SimGrid 3.32's decision functions
(smpi_openmpi_selector.cpp, smpi_mpich_selector.cpp, smpi_default_selector.cpp) for each
(communicator size, message size) point, e.g. Open MPI's allreduce at 16 ranks and 8 bytes:
``communicator_size < 32`` then ``total_dsize < 64`` → alg 5 (segmented ring).
"""

from __future__ import annotations

import pytest
from collharness import ctx_of, run_sizes

import smpy.colls
from smpy.colls.dispatch import selection
from smpy.colls.registry import ALGORITHMS
from smpy.colls.selectors import SELECTORS, Query, lookup
from smpy.support.config import Config, ConfigError

C, N = True, False  # commutative or not

OMPI = [
    ("allreduce", Query(4, 4, 1, C), "lr"),
    ("allreduce", Query(16, 8, 2, C), "ompi_ring_segmented"),
    ("allreduce", Query(16, 8192, 2048, C), "rab_rdb"),
    ("allreduce", Query(64, 1 << 20, 1 << 18, C), "rab_rdb"),
    ("allreduce", Query(200, 100000, 25000, C), "redbcast"),
    ("allreduce", Query(8, 100, 25, N), "rdb"),
    ("allreduce", Query(2, 200000, 50000, N), "redbcast"),
    ("bcast", Query(2, 16), "ompi_pipeline"),
    ("bcast", Query(8, 1 << 20), "NTSL"),
    ("bcast", Query(16, 100), "mvapich2_knomial_intra_node"),
    ("bcast", Query(64, 1024), "mvapich2_knomial_intra_node"),
    ("bcast", Query(600, 20000), "ompi_split_bintree"),
    ("bcast", Query(16, 1 << 22), "scatter_rdb_allgather"),
    ("reduce", Query(16, 1024, 256, C), "ompi_binary"),
    ("reduce", Query(64, 1 << 20, 1 << 18, C), "ompi_binomial"),
    ("reduce", Query(2, 4, 1, C), "ompi_basic_linear"),
    ("reduce", Query(32, 1024, 256, N), "ompi_in_order_binary"),
    ("reduce", Query(6, 1024, 256, N), "ompi_basic_linear"),
    ("alltoall", Query(16, 100), "bruck"),
    ("alltoall", Query(2, 1), "pair"),
    ("alltoall", Query(128, 1 << 20), "pair"),
    ("alltoallv", Query(2, 0), "pair"),
    ("alltoallv", Query(16, 0), "ompi_basic_linear"),
    ("barrier", Query(2, 0), "ompi_recursivedoubling"),
    ("barrier", Query(4, 0), "ompi_basic_linear"),
    ("barrier", Query(128, 0), "ompi_bruck"),
    ("barrier", Query(300, 0), "ompi_tree"),
    ("gather", Query(16, 100), "ompi_binomial"),
    ("gather", Query(2, 1), "ompi_linear_sync"),
    ("scatter", Query(8, 100000), "ompi_linear_nb"),
    ("scatter", Query(2, 100), "ompi_basic_linear"),
    ("allgather", Query(2, 8), "pair"),
    ("allgather", Query(16, 8), "rdb"),
    ("allgather", Query(40, 2000), "ompi_neighborexchange"),
    ("allgather", Query(40, 100000), "ring"),
    ("allgatherv", Query(16, 16 * 8, counts=[2] * 16), "GB"),
    ("allgatherv", Query(16, 16 * 8000, counts=[2000] * 16), "ompi_bruck"),
    ("reduce_scatter", Query(16, 64, 16, N, [1] * 16), "default"),
    ("reduce_scatter", Query(2, 400, 100, C, [50, 50]), "ompi_ring"),
    ("reduce_scatter", Query(64, 8192, 2048, C, [32] * 64), "ompi_butterfly"),
    ("reduce_scatter", Query(64, 4000, 1000, C, [16] * 64), "ompi_basic_recursivehalving"),
    ("scan", Query(8, 8), "linear"),
    ("gatherv", Query(8, 8), "nbc_linear"),
]

MPICH = [  # on SMP sub-communicators (normal ones go two-level for bcast/reduce/allreduce)
    ("bcast", Query(4, 100000, smp_comm=True), "binomial_tree"),
    ("bcast", Query(16, 100, smp_comm=True), "binomial_tree"),
    ("bcast", Query(16, 100000, smp_comm=True), "scatter_rdb_allgather"),
    ("bcast", Query(15, 100000, smp_comm=True), "scatter_LR_allgather"),
    ("allreduce", Query(16, 8192, 2048, C, smp_comm=True), "rab_rdb"),
    ("allreduce", Query(16, 1024, 256, C, smp_comm=True), "rdb"),
    ("allreduce", Query(16, 8192, 2048, C), "mvapich2_two_level"),
    ("allreduce", Query(16, 8192, 2048, N), "rdb"),
    ("reduce", Query(16, 8192, 2048, C), "mvapich2_two_level"),
    ("reduce", Query(16, 8192, 2048, C, smp_comm=True), "scatter_gather"),
    ("reduce", Query(16, 8192, 2048, N), "binomial"),
    ("alltoall", Query(8, 100), "bruck"),
    ("alltoall", Query(4, 100), "mvapich2_scatter_dest"),
    ("alltoall", Query(5, 65536), "pair"),
    ("alltoall", Query(6, 65536), "ring"),
    ("allgather", Query(8, 8), "rdb"),
    ("allgather", Query(6, 8), "bruck"),
    ("allgather", Query(6, 100000), "ring"),
    ("allgatherv", Query(8, 64, counts=[2] * 8), "mpich_rdb"),
    ("allgatherv", Query(6, 48, counts=[2] * 6), "ompi_bruck"),
    ("reduce_scatter", Query(8, 1 << 22, 1 << 20, C, [1 << 17] * 8), "mpich_pair"),
    ("reduce_scatter", Query(8, 64, 16, N, [2] * 8), "mpich_noncomm"),
    ("reduce_scatter", Query(6, 64, 16, N, [2] * 6), "mpich_rdb"),
    ("barrier", Query(8, 0), "ompi_bruck"),
    ("gather", Query(8, 8), "ompi_binomial"),
    ("scatter", Query(8, 8), "ompi_binomial"),
]

DEFAULT = [
    ("bcast", Query(8, 8), "binomial_tree"),
    ("barrier", Query(8, 0), "ompi_basic_linear"),
    ("reduce", Query(8, 8, 2, C), "nbc_linear"),
    ("reduce", Query(8, 8, 2, N), "ompi_basic_linear"),
    ("allreduce", Query(8, 8, 2, C), "redbcast"),
    ("alltoall", Query(8, 8), "ompi"),
    ("gather", Query(8, 8), "nbc_linear"),
    ("reduce_scatter", Query(8, 8, 2, C, [1] * 8), "default"),
]


@pytest.mark.parametrize(("selector", "family", "q", "want"),
                         [("ompi", *c) for c in OMPI] + [("mpich", *c) for c in MPICH]
                         + [("default", *c) for c in DEFAULT])
def test_selector_decision_matches_simgrid(selector: str, family: str, q: Query, want: str) -> None:
    assert SELECTORS[selector](family, q, None) == want


def test_every_table_entry_is_a_registered_algorithm() -> None:
    from smpy.colls.selectors import DEFAULT as D
    from smpy.colls.selectors import MPICH as M
    from smpy.colls.selectors import OMPI as O

    def names(rule):
        return [rule] if isinstance(rule, str) else [a for _, a in rule]

    for family, table in O.items():
        tables = table.values() if isinstance(table, dict) else [table]
        for t in tables:
            rows = [(0, t)] if isinstance(t, str) else t
            for _, rule in rows:
                for a in names(rule):
                    assert a in ALGORITHMS[family], (family, a)
    for family, rules in M.items():
        for _, a in rules:
            assert a in ALGORITHMS[family], (family, a)
    for family, a in D.items():
        assert a in ALGORITHMS[family] or a in SELECTORS, (family, a)


def test_lookup_uses_strict_bounds_and_equality_rows() -> None:
    from smpy.colls.selectors import EQ, INF
    table = [(EQ(2), "two"), (8, [(100, "small"), (INF, "big")]), (INF, "many")]
    assert lookup(table, 2, 0) == "two"
    assert lookup(table, 3, 99) == "small"
    assert lookup(table, 7, 100) == "big"
    assert lookup(table, 8, 0) == "many"


def test_settings_override_the_selector() -> None:
    sel = selection_for({"smpi/coll-selector": "mpich", "smpi/bcast": "flattree", "smpi/barrier": "ompi"})
    assert sel.name_for("bcast") == "flattree"
    assert sel.name_for("barrier") == "ompi"
    assert sel.name_for("allreduce") == "mpich"
    assert selection_for({}).name_for("bcast") == "ompi"


def selection_for(cfg: dict):
    from smpy.colls.dispatch import Selection
    return Selection(Config(cfg))


@pytest.mark.parametrize(("name", "value"), [("smpi/bcast", "no_such_algo"), ("smpi/coll-selector", "lam"),
                                             ("smpi/allreduce", "binomial_tree")])
def test_bad_names_are_reported_at_startup(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match="no algorithm|unknown selector"):
        Config({name: value})


def test_forced_algorithm_and_fallbacks_run() -> None:
    """smpi/allgather:pair on 6 ranks (not a power of two) runs ring; smpi/allreduce:lr
    with a non-commutative op runs rdb; both exact."""
    from collharness import MATMUL, block, folded, vector

    def fn(proc, comm):
        ctx = ctx_of(proc, comm)
        got = ctx.sel.run("allgather", ctx, block(proc.rank, 8), [8] * comm.size, 4)
        ctx2 = ctx_of(proc, comm)
        red = ctx2.sel.run("allreduce", ctx2, vector(proc.rank, 3, MATMUL), MATMUL)
        return got, red

    res = run_sizes([6], fn, {"smpi/allgather": "pair", "smpi/allreduce": "lr"})[6]
    for got, red in res:
        assert list(got) == [block(r, 8) for r in range(6)]
        assert red == folded(MATMUL, [vector(r, 3, MATMUL) for r in range(6)])


def test_mpich_bcast_goes_smp_on_uniform_nodes() -> None:
    """MPICH's bcast on COMM_WORLD-like communicators: SMP_binomial when every host holds
    the same number of ranks (and SMPI's init_smp traffic is paid once)."""
    seen = []

    def fn(proc, comm):
        ctx = ctx_of(proc, comm)
        algo = ctx.sel.resolve("bcast", "mpich", ctx, (0, b"x" * 8, 8, 8))
        seen.append(algo.name)
        ctx2 = ctx_of(proc, comm)
        return ctx2.sel.run_selector("bcast", "mpich", ctx2, 0, b"y" * 8 if proc.rank == 0 else None, 8, 8)

    res = run_sizes([8], fn, per_host=2)[8]
    assert res == [b"y" * 8] * 8
    assert set(seen) == {"SMP_binomial"}


def test_help_coll_lists_every_algorithm_and_selector() -> None:
    text = smpy.colls.dispatch.help_text()
    for family, algos in ALGORITHMS.items():
        assert f"\n{family}:" in text
        for name in algos:
            assert f"  {name} " in text, (family, name)
    for s in SELECTORS:
        assert s in text


def test_selection_is_per_world() -> None:
    def fn(proc, comm):
        return selection(proc.world).name_for("bcast")
    assert run_sizes([2], fn, {"smpi/bcast": "NTSB"})[2] == ["NTSB", "NTSB"]
    assert run_sizes([2], fn)[2] == ["ompi", "ompi"]
