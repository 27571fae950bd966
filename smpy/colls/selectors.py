"""Collective selectors as data: which algorithm a real MPI library runs, by communicator
size and message size (``--cfg=smpi/coll-selector:<name>``).

* ``ompi`` — Open MPI 4.1's ``coll_tuned_decision_fixed`` as SimGrid 3.32 transcribes it
  (smpi_openmpi_selector.cpp, "updated 02/2022"): :data:`OMPI`, one table per collective.
  A table is a list of rows ``(comm_bound, rule)`` tried in order: the first row whose
  bound exceeds the communicator size (``EQ(n)``: equals n) applies; ``rule`` is an
  algorithm name or a list ``[(bytes_bound, algorithm), ...]`` tried the same way on the
  message size. The message size is SimGrid's ``total_dsize``: datatype size × count of
  the whole vector (bcast, reduce, allreduce), of one rank's block (gather, scatter,
  allgather, alltoall), the sum of the counts (reduce_scatter), or that sum divided by
  the size (allgatherv). Reductions have separate tables for non-commutative ops.
* ``mpich`` — MPICH 3.3b's decisions (smpi_mpich_selector.cpp): :data:`MPICH`, ordered
  rules ``(condition, algorithm)`` on a :class:`Query`; on a communicator that is not one
  of the SMP sub-communicators, bcast/reduce/allreduce go SMP-aware (two-level), as in
  SimGrid.
* ``default`` — SimGrid's naive selector (smpi_default_selector.cpp): :data:`DEFAULT`.
* ``mvapich2`` — MVAPICH2 1.9's tuning tables for TACC Stampede
  (smpi_mvapich2_selector.cpp + smpi_mvapich2_selector_stampede.hpp; the tables,
  extracted mechanically, are :data:`smpy.colls.tables_mv2.MV2`): rows by communicator
  size, entries ``(min, max, algorithm)`` by message size, per ranks-per-node
  configuration for alltoall/allgather/scatter; two-level rows go node-aware, and the
  selector records MVAPICH2's inner function pointers in ``ctx.sel.mv2`` for them.
* ``impi`` — Intel MPI 4.1 ``I_MPI_ADJUST_*`` tables measured on Stampede
  (smpi_intel_mpi_selector.cpp; :data:`smpy.colls.tables_impi.IMPI`): per ranks-per-node,
  rows ``(max_num_proc, num_elems, [(max_size, algo), ...])``, algorithm numbers mapped
  to SimGrid's function tables.

Collectives SMPI implements once (gatherv, scatterv, alltoallw, scan, exscan) use that
implementation under every selector, as in SimGrid; ``smpi/<coll>:<algorithm>`` still
picks any registered one. smpy's default selector is ``ompi`` (SimGrid's is ``default``,
whose documentation warns against performance studies).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from smpy.colls.core import is_pof2, pof2_floor
from smpy.colls.smp import smp_of, smp_ready
from smpy.support.internal import SmpyInternalError

if TYPE_CHECKING:
    from smpy.colls.core import Ctx

INF = float("inf")


class EQ(int):
    """A row bound matching one communicator size exactly (Open MPI's ``size == 2``)."""


Rule = Union[str, list[tuple[float, str]]]
Table = list[tuple[float, Rule]]


@dataclass
class Query:
    """What a decision function looks at."""

    size: int  #: communicator size
    nbytes: int  #: SimGrid's total_dsize for this collective (see the module doc)
    count: int = 0  #: elements of the vector (reductions, bcast)
    commutative: bool = True
    counts: list[int] = field(default_factory=list)  #: per-rank elements (v-variants, reduce_scatter)
    smp_comm: bool = False  #: the communicator is an SMP sub-communicator


def lookup(table: Table, size: int, nbytes: float) -> str:
    for bound, rule in table:
        if (size == bound) if isinstance(bound, EQ) else (size < bound):
            if isinstance(rule, str):
                return rule
            for mbound, algo in rule:
                if nbytes < mbound:
                    return algo
    raise SmpyInternalError(f"no row for communicator size {size}")


# -- Open MPI (coll_tuned_decision_fixed, via SimGrid smpi_openmpi_selector.cpp) ---------------
OMPI: dict[str, Any] = {
    "allreduce": {
        "noncommutative": [
            (4, [(131072, "rdb"), (INF, "redbcast")]),
            (8, "rdb"),
            (16, [(1048576, "rdb"), (INF, "redbcast")]),
            (128, "rdb"),
            (256, [(131072, "redbcast"), (524288, "rdb"), (INF, "redbcast")]),
            (512, [(4096, "redbcast"), (524288, "rdb"), (INF, "redbcast")]),
            (INF, [(2048, "redbcast"), (INF, "rdb")]),
        ],
        "commutative": [
            (4, [(8, "lr"), (4096, "rdb"), (8192, "lr"), (16384, "rdb"), (65536, "lr"), (262144, "ompi_ring_segmented"), (INF, "rab_rdb")]),
            (8, [(16, "lr"), (8192, "rdb"), (INF, "rab_rdb")]),
            (16, [(8192, "rdb"), (INF, "rab_rdb")]),
            (32, [(64, "ompi_ring_segmented"), (4096, "rdb"), (INF, "rab_rdb")]),
            (64, [(128, "ompi_ring_segmented"), (INF, "rab_rdb")]),
            (128, [(262144, "rdb"), (INF, "rab_rdb")]),
            (256, [(131072, "redbcast"), (262144, "rdb"), (INF, "rab_rdb")]),
            (512, [(4096, "redbcast"), (INF, "rab_rdb")]),
            (2048, [(2048, "redbcast"), (16384, "rdb"), (INF, "rab_rdb")]),
            (4096, [(2048, "redbcast"), (4096, "ompi_ring_segmented"), (16384, "rdb"), (INF, "rab_rdb")]),
            (INF, [(2048, "redbcast"), (16384, "ompi_ring_segmented"), (32768, "rdb"), (INF, "rab_rdb")]),
        ],
    },
    "alltoall": [
        (EQ(2), [(2, "pair"), (4, "basic_linear"), (16, "pair"), (64, "basic_linear"), (256, "pair"), (4096, "basic_linear"), (32768, "pair"), (262144, "basic_linear"), (1048576, "basic_linear"), (INF, "pair")]),
        (8, [(8192, "basic_linear"), (16384, "basic_linear"), (65536, "basic_linear"), (524288, "basic_linear"), (1048576, "pair"), (INF, "basic_linear")]),
        (16, [(262144, "basic_linear"), (INF, "basic_linear")]),
        (32, [(4, "basic_linear"), (512, "bruck"), (8192, "basic_linear"), (32768, "basic_linear"), (262144, "basic_linear"), (524288, "basic_linear"), (INF, "basic_linear")]),
        (64, [(512, "bruck"), (524288, "basic_linear"), (INF, "basic_linear")]),
        (128, [(1024, "bruck"), (2048, "basic_linear"), (4096, "basic_linear"), (262144, "basic_linear"), (INF, "pair")]),
        (256, [(1024, "bruck"), (2048, "basic_linear"), (262144, "basic_linear"), (INF, "pair")]),
        (512, [(1024, "bruck"), (8192, "basic_linear"), (32768, "basic_linear"), (INF, "pair")]),
        (1024, [(512, "bruck"), (8192, "basic_linear"), (16384, "basic_linear"), (131072, "basic_linear"), (262144, "basic_linear"), (INF, "pair")]),
        (2048, [(512, "bruck"), (1024, "basic_linear"), (2048, "basic_linear"), (16384, "basic_linear"), (262144, "basic_linear"), (INF, "basic_linear")]),
        (4096, [(1024, "bruck"), (4096, "basic_linear"), (8192, "basic_linear"), (131072, "basic_linear"), (INF, "basic_linear")]),
        (INF, [(2048, "bruck"), (8192, "basic_linear"), (16384, "basic_linear"), (32768, "basic_linear"), (65536, "basic_linear"), (INF, "basic_linear")]),
    ],
    "alltoallv": [
        (4, "pair"),
        (64, "ompi_basic_linear"),
        (128, "pair"),
        (256, "ompi_basic_linear"),
        (1024, "pair"),
        (INF, "ompi_basic_linear"),
    ],
    "barrier": [
        (4, "ompi_recursivedoubling"),
        (8, "ompi_basic_linear"),
        (64, "ompi_recursivedoubling"),
        (256, "ompi_bruck"),
        (512, "ompi_tree"),
        (1024, "ompi_bruck"),
        (4096, "ompi_tree"),
        (INF, "ompi_bruck"),
    ],
    "bcast": [
        (4, [(32, "ompi_pipeline"), (256, "NTSB"), (512, "ompi_pipeline"), (1024, "mvapich2_knomial_intra_node"), (32768, "NTSL"), (131072, "NTSB"), (262144, "ompi_pipeline"), (524288, "NTSL"), (1048576, "binomial_tree"), (INF, "NTSB")]),
        (8, [(64, "NTSB"), (128, "binomial_tree"), (2048, "NTSB"), (8192, "binomial_tree"), (1048576, "NTSL"), (INF, "ompi_pipeline")]),
        (16, [(8, "mvapich2_knomial_intra_node"), (64, "NTSB"), (4096, "mvapich2_knomial_intra_node"), (16384, "NTSB"), (32768, "binomial_tree"), (INF, "NTSL")]),
        (32, [(4096, "mvapich2_knomial_intra_node"), (1048576, "binomial_tree"), (INF, "scatter_rdb_allgather")]),
        (64, [(2048, "binomial_tree"), (INF, "mvapich2_knomial_intra_node")]),
        (128, "mvapich2_knomial_intra_node"),
        (256, [(2, "binomial_tree"), (16384, "NTSB"), (32768, "NTSL"), (65536, "NTSB"), (INF, "mvapich2_knomial_intra_node")]),
        (1024, [(16384, "mvapich2_knomial_intra_node"), (32768, "ompi_split_bintree"), (INF, "mvapich2_knomial_intra_node")]),
        (2048, [(524288, "mvapich2_knomial_intra_node"), (INF, "scatter_rdb_allgather")]),
        (4096, [(262144, "mvapich2_knomial_intra_node"), (INF, "scatter_rdb_allgather")]),
        (INF, [(8192, "mvapich2_knomial_intra_node"), (16384, "NTSB"), (262144, "mvapich2_knomial_intra_node"), (INF, "scatter_rdb_allgather")]),
    ],
    "reduce": {
        "noncommutative": [
            (4, [(8, "ompi_in_order_binary"), (INF, "ompi_basic_linear")]),
            (8, "ompi_basic_linear"),
            (16, [(1024, "ompi_in_order_binary"), (8192, "ompi_basic_linear"), (16384, "ompi_in_order_binary"), (262144, "ompi_basic_linear"), (INF, "ompi_in_order_binary")]),
            (128, "ompi_in_order_binary"),
            (256, [(512, "ompi_in_order_binary"), (1024, "ompi_basic_linear"), (INF, "ompi_in_order_binary")]),
            (INF, "ompi_in_order_binary"),
        ],
        "commutative": [
            (4, [(8, "ompi_basic_linear"), (16, "ompi_binary"), (32, "ompi_pipeline"), (262144, "ompi_basic_linear"), (524288, "ompi_pipeline"), (1048576, "ompi_chain"), (INF, "ompi_pipeline")]),
            (8, [(4096, "ompi_binary"), (65536, "ompi_chain"), (262144, "ompi_binomial"), (524288, "ompi_basic_linear"), (1048576, "ompi_binomial"), (INF, "ompi_basic_linear")]),
            (16, [(8192, "ompi_binary"), (INF, "ompi_binomial")]),
            (32, [(4096, "ompi_binary"), (INF, "ompi_binomial")]),
            (256, "ompi_binomial"),
            (512, [(8192, "ompi_binomial"), (16384, "ompi_in_order_binary"), (INF, "ompi_binomial")]),
            (2048, "ompi_binomial"),
            (4096, [(512, "ompi_binomial"), (1024, "ompi_in_order_binary"), (8192, "ompi_binomial"), (16384, "ompi_in_order_binary"), (INF, "ompi_binomial")]),
            (INF, [(16, "ompi_binomial"), (32, "ompi_in_order_binary"), (1024, "ompi_binomial"), (2048, "ompi_in_order_binary"), (8192, "ompi_binomial"), (16384, "ompi_in_order_binary"), (INF, "ompi_binomial")]),
        ],
    },
    "reduce_scatter": {
        "noncommutative": "default",
        "commutative": [
            (4, [(65536, "ompi_ring"), (131072, "ompi_butterfly"), (INF, "ompi_ring")]),
            (8, [(8, "default"), (262144, "ompi_basic_recursivehalving"), (INF, "ompi_ring")]),
            (32, [(262144, "ompi_basic_recursivehalving"), (INF, "ompi_ring")]),
            (64, [(64, "default"), (2048, "ompi_basic_recursivehalving"), (524288, "ompi_butterfly"), (INF, "ompi_ring")]),
            (128, [(256, "default"), (512, "ompi_basic_recursivehalving"), (2048, "ompi_butterfly"), (4096, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (256, [(256, "default"), (512, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (512, [(256, "default"), (1024, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (1024, [(512, "default"), (2048, "ompi_basic_recursivehalving"), (8192, "ompi_butterfly"), (16384, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (2048, [(512, "default"), (4096, "ompi_basic_recursivehalving"), (16384, "ompi_butterfly"), (32768, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (4096, [(512, "default"), (4096, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
            (INF, [(1024, "default"), (8192, "ompi_basic_recursivehalving"), (INF, "ompi_butterfly")]),
        ],
    },
    "allgather": [
        (EQ(2), "pair"),
        (32, "rdb"),
        (64, [(1024, "rdb"), (65536, "ompi_neighborexchange"), (INF, "ring")]),
        (128, [(512, "rdb"), (65536, "ompi_neighborexchange"), (INF, "ring")]),
        (256, [(512, "rdb"), (131072, "ompi_neighborexchange"), (524288, "ring"), (1048576, "ompi_neighborexchange"), (INF, "ring")]),
        (512, [(32, "rdb"), (128, "bruck"), (1024, "rdb"), (131072, "ompi_neighborexchange"), (524288, "ring"), (1048576, "ompi_neighborexchange"), (INF, "ring")]),
        (1024, [(64, "rdb"), (256, "bruck"), (2048, "rdb"), (INF, "ompi_neighborexchange")]),
        (2048, [(4, "rdb"), (8, "bruck"), (16, "rdb"), (32, "bruck"), (256, "rdb"), (512, "bruck"), (4096, "rdb"), (INF, "ompi_neighborexchange")]),
        (4096, [(32, "bruck"), (128, "rdb"), (512, "bruck"), (4096, "rdb"), (INF, "ompi_neighborexchange")]),
        (INF, [(2, "rdb"), (8, "bruck"), (16, "rdb"), (512, "bruck"), (4096, "rdb"), (INF, "ompi_neighborexchange")]),
    ],
    "allgatherv": [
        (EQ(2), [(2048, "mpich_ring"), (4096, "pair"), (8192, "mpich_ring"), (INF, "pair")]),
        (8, [(256, "GB"), (4096, "ompi_neighborexchange"), (8192, "mpich_ring"), (16384, "ompi_neighborexchange"), (262144, "ompi_bruck"), (INF, "ompi_neighborexchange")]),
        (16, [(1024, "GB"), (INF, "ompi_bruck")]),
        (32, [(128, "GB"), (262144, "ompi_bruck"), (INF, "mpich_ring")]),
        (64, [(256, "GB"), (8192, "ompi_bruck"), (INF, "mpich_ring")]),
        (128, [(256, "GB"), (4096, "ompi_bruck"), (INF, "mpich_ring")]),
        (256, [(1024, "ompi_bruck"), (65536, "ompi_neighborexchange"), (INF, "mpich_ring")]),
        (512, [(1024, "ompi_bruck"), (INF, "mpich_ring")]),
        (1024, [(512, "ompi_bruck"), (1024, "GB"), (4096, "ompi_bruck"), (1048576, "ompi_neighborexchange"), (INF, "mpich_ring")]),
        (INF, [(4096, "ompi_bruck"), (INF, "ompi_neighborexchange")]),
    ],
    "gather": [
        (4, [(2, "ompi_linear_sync"), (4, "ompi_basic_linear"), (32768, "ompi_binomial"), (65536, "ompi_basic_linear"), (131072, "ompi_binomial"), (INF, "ompi_linear_sync")]),
        (8, [(1024, "ompi_binomial"), (8192, "ompi_basic_linear"), (32768, "ompi_binomial"), (262144, "ompi_basic_linear"), (INF, "ompi_linear_sync")]),
        (256, "ompi_binomial"),
        (512, [(2048, "ompi_binomial"), (8192, "ompi_basic_linear"), (INF, "ompi_binomial")]),
        (INF, "ompi_binomial"),
    ],
    "scatter": [
        (4, [(2, "ompi_linear_nb"), (131072, "ompi_basic_linear"), (262144, "ompi_linear_nb"), (INF, "ompi_basic_linear")]),
        (8, [(2048, "ompi_binomial"), (4096, "ompi_basic_linear"), (8192, "ompi_binomial"), (32768, "ompi_basic_linear"), (1048576, "ompi_linear_nb"), (INF, "ompi_basic_linear")]),
        (16, [(16384, "ompi_binomial"), (1048576, "ompi_linear_nb"), (INF, "ompi_basic_linear")]),
        (32, [(16384, "ompi_binomial"), (32768, "ompi_basic_linear"), (INF, "ompi_linear_nb")]),
        (64, [(512, "ompi_binomial"), (8192, "ompi_linear_nb"), (16384, "ompi_binomial"), (INF, "ompi_linear_nb")]),
        (INF, [(512, "ompi_binomial"), (INF, "ompi_linear_nb")]),
    ],

}
SINGLE = {"gatherv": "nbc_linear", "scatterv": "nbc_linear", "alltoallw": "nbc_linear", "scan": "linear",
          "exscan": "linear"}


def ompi(family: str, q: Query, ctx: Ctx) -> str:
    if family in SINGLE:
        return SINGLE[family]
    table = OMPI[family]
    if isinstance(table, dict):
        table = table["commutative" if q.commutative else "noncommutative"]
        if isinstance(table, str):
            return table
    nbytes = q.nbytes // q.size if family == "allgatherv" else q.nbytes
    return lookup(table, q.size, nbytes)


# -- MPICH 3.3b (via SimGrid smpi_mpich_selector.cpp) ----------------------------------------
Cond = Callable[[Query], bool]


def _smp(q: Query) -> bool:
    return not q.smp_comm


MPICH: dict[str, list[tuple[Cond, str]]] = {
    "allreduce": [
        (lambda q: _smp(q) and q.commutative, "mvapich2_two_level"),
        (lambda q: q.nbytes > 2048 and q.count >= pof2_floor(q.size) and q.commutative, "rab_rdb"),
        (lambda q: True, "rdb"),
    ],
    "alltoall": [
        (lambda q: q.nbytes < 256 and q.size >= 8, "bruck"),
        (lambda q: q.nbytes < 32768, "mvapich2_scatter_dest"),
        (lambda q: q.size % 2 == 1, "pair"),  # sic: SimGrid picks pair for odd sizes
        (lambda q: True, "ring"),
    ],
    "alltoallv": [(lambda q: True, "bruck")],
    "barrier": [(lambda q: True, "ompi_bruck")],
    "bcast": [
        (lambda q: _smp(q), "SMP_binomial"),  # only when nodes are uniform, see mpich()
        (lambda q: q.nbytes < 12288 or q.size <= 8, "binomial_tree"),
        (lambda q: q.nbytes < 524288 and q.size % 2 == 0, "scatter_rdb_allgather"),
        (lambda q: True, "scatter_LR_allgather"),
    ],
    "reduce": [
        (lambda q: _smp(q) and q.commutative, "mvapich2_two_level"),
        (lambda q: q.count < pof2_floor(q.size) or q.nbytes < 2048 or not q.commutative, "binomial"),
        (lambda q: True, "scatter_gather"),
    ],
    "reduce_scatter": [
        (lambda q: q.commutative and sum(q.counts) > 524288, "mpich_pair"),
        (lambda q: not q.commutative and is_pof2(q.size) and len(set(q.counts)) <= 1, "mpich_noncomm"),
        (lambda q: True, "mpich_rdb"),
    ],
    "allgather": [
        (lambda q: is_pof2(q.size) and q.nbytes * q.size < 524288, "rdb"),
        (lambda q: q.nbytes * q.size <= 81920, "bruck"),
        (lambda q: True, "ring"),
    ],
    "allgatherv": [
        (lambda q: is_pof2(q.size) and sum(q.counts) < 524288, "mpich_rdb"),
        (lambda q: sum(q.counts) <= 81920, "ompi_bruck"),
        (lambda q: True, "mpich_ring"),
    ],
    "gather": [(lambda q: True, "ompi_binomial")],
    "scatter": [(lambda q: True, "ompi_binomial")],
}


def mpich(family: str, q: Query, ctx: Ctx) -> str:
    if family in SINGLE:
        return SINGLE[family]
    if family == "bcast" and not q.smp_comm:
        if smp_of(ctx).uniform:
            return "SMP_binomial"
        q = Query(q.size, q.nbytes, q.count, q.commutative, q.counts, True)
    for cond, algo in MPICH[family]:
        if cond(q):
            return algo
    raise SmpyInternalError(f"no MPICH rule for {family}")


# -- SimGrid's naive selector (smpi_default_selector.cpp) -------------------------------------
DEFAULT: dict[str, str] = {
    "bcast": "binomial_tree", "barrier": "ompi_basic_linear", "gather": "nbc_linear",
    "scatter": "nbc_linear", "allgather": "nbc_linear", "allgatherv": "nbc_linear",
    "alltoallv": "nbc_linear", "allreduce": "redbcast", "alltoall": "ompi",
    "reduce_scatter": "default", **SINGLE,
}


def default(family: str, q: Query, ctx: Ctx) -> str:
    if family == "reduce":
        return "nbc_linear" if q.commutative else "ompi_basic_linear"
    return DEFAULT[family]


#: selector name -> decision function ``(family, query, ctx) -> algorithm or selector name``
SELECTORS: dict[str, Callable[[str, Query, Any], str]] = {"ompi": ompi, "mpich": mpich, "default": default}


# -- MVAPICH2 1.9 on Stampede (via SimGrid smpi_mvapich2_selector.cpp) ------------------------
def _mv2_row(rows: list[dict], size: int) -> dict:
    """The row for a communicator of ``size``: the first whose ``numproc`` ≥ size, else
    the last (``while range < n-1 && size > numproc: range++``)."""
    r = 0
    while r < len(rows) - 1 and size > rows[r]["numproc"]:
        r += 1
    return rows[r]


def _mv2_pick(entries: list[tuple], nbytes: float, scale: int = 1) -> int:
    """Index of the threshold entry for ``nbytes`` (``max`` −1 = unbounded)."""
    t = 0
    while t < len(entries) - 1 and nbytes > scale * entries[t][1] and entries[t][1] != -1:
        t += 1
    return t


def _mv2_conf(tables: dict[int, list[dict]], ctx: Ctx) -> tuple[list[dict], bool]:
    """The per-ranks-per-node table matching the node size (uniform nodes only), and
    whether one matched (MVAPICH2's ``partial_sub_ok``); else the first one."""
    info = smp_of(ctx)
    if info.uniform:
        local = info.intra_of[ctx.me].size
        if local in tables:
            return tables[local], True
    return next(iter(tables.values())), False


_MV2_ALLREDUCE_MCAST = ("MPIR_Allreduce_mcst_reduce_redscat_gather_MV2", "MPIR_Allreduce_mcst_reduce_two_level_helper_MV2")


def _mv2_smp(ctx: Ctx) -> Any:
    """The communicator's SMP layout (SimGrid's ``init_smp``, done by most MV2 decisions)."""
    return smp_of(ctx)


def _mv2_two_level(row: dict, key: str, t: int) -> bool:
    return t < len(row[key]) and bool(row[key][t])


def _mv2_alltoall(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    row = _mv2_row(tables[1], q.size)  # conf_index stays 0 in SimGrid: the 1-ppn table only
    return row["algo_table"][_mv2_pick(row["algo_table"], q.nbytes)][2]


def _mv2_allgather(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    _mv2_smp(ctx)
    rows, partial_ok = _mv2_conf(tables, ctx)
    row = _mv2_row(rows, q.size)
    t = _mv2_pick(row["inter_leader"], q.nbytes)
    fn = row["inter_leader"][t][2]
    if _mv2_two_level(row, "two_level", t):
        if partial_ok:
            return "mvapich2_smp" if _mv2_smp(ctx).blocked else "mpich"
        return "rdb"
    if fn in ("bruck", "rdb", "ring"):
        return fn
    # MPIR_Allgather_RD_Allgather_Comm_MV2: SimGrid's stub moves no data and returns
    # MPI_ERR_OTHER, which MPI_Allgather ignores; smpy runs MVAPICH2's recursive doubling
    return "rdb"


def _mv2_gather(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    row = _mv2_row(tables, q.size)
    inter = row["inter_leader"][_mv2_pick(row["inter_leader"], q.nbytes)][2]
    intra = row["intra_node"][_mv2_pick(row["intra_node"], q.nbytes)][2]
    info = smp_ready(ctx)  # gather__mvapich2 does not init_smp: is_blocked is false until then
    if info is not None and info.blocked:
        state["gather_intra"] = intra
        return inter
    return "mpich"


def _mv2_allgatherv(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    row = _mv2_row(tables, q.size)
    fn = row["inter_leader"][_mv2_pick(row["inter_leader"], q.nbytes, q.size)][2]
    if fn == "mpich_rdb" and not is_pof2(q.size):
        return "ompi_bruck"
    return fn


def _mv2_allreduce(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    row = _mv2_row(tables, q.size)
    inter = row["inter_leader"]
    t = 0
    if not row["mcast_enabled"]:
        while t < len(inter) - 1 and inter[t][2] in _MV2_ALLREDUCE_MCAST:
            t += 1
    while t < len(inter) - 1 and q.nbytes > inter[t][1] and inter[t][1] != -1:
        t += 1
    fn = inter[t][2]
    if fn in _MV2_ALLREDUCE_MCAST:
        fn = "rdb"
    state["allreduce_inter"] = fn
    state["allreduce_intra"] = row["intra_node"][_mv2_pick(row["intra_node"], q.nbytes)][2]
    if _mv2_two_level(row, "is_two_level", t):
        if q.commutative:
            _mv2_smp(ctx)
            return "mvapich2_two_level"
        return "rdb"
    return fn


def _mv2_bcast(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    _mv2_smp(ctx)
    row = _mv2_row(tables, q.size)
    t = _mv2_pick(row["inter_leader"], q.nbytes)
    fn = row["inter_leader"][t][2]
    intra = row["intra_node"][_mv2_pick(row["intra_node"], q.nbytes)][2] or "mpich"  # MPIR_Shmem_Bcast_MV2
    state["bcast_inter"] = fn
    if _mv2_two_level(row, "is_two_level", t):
        state["bcast_intra"] = intra
        return "mvapich2_inter_node"  # + MV2_Bcast_intra_node_function, see the algorithm
    state["bcast_intra"] = "mvapich2_knomial_intra_node"
    return fn


def _mv2_reduce(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    row = _mv2_row(tables, q.size)
    t = _mv2_pick(row["inter_leader"], q.nbytes)
    fn = row["inter_leader"][t][2]
    state["reduce_intra"] = row["intra_node"][_mv2_pick(row["intra_node"], q.nbytes)][2]
    state["reduce_inter"] = fn
    if _mv2_two_level(row, "is_two_level", t):
        if q.commutative:
            _mv2_smp(ctx)
            return "mvapich2_two_level"
        return "binomial"
    if fn == "mvapich2_knomial":
        return fn if q.commutative else "binomial"
    if fn == "scatter_gather":
        return fn if q.count >= pof2_floor(q.size) else "binomial"
    return fn


def _mv2_reduce_scatter(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    if q.commutative:
        row = _mv2_row(tables, q.size)
        fn = row["inter_leader"][_mv2_pick(row["inter_leader"], q.nbytes)][2]
        return "default" if fn == "MPIR_Reduce_Scatter_Basic_MV2" else fn
    if is_pof2(q.size) and len(set(q.counts)) <= 1:
        return "mvapich2_noncomm"
    return "mpich_rdb"


def _mv2_scatter(q: Query, ctx: Ctx, state: dict[str, str], tables: dict) -> str:
    _mv2_smp(ctx)
    rows, _ = _mv2_conf(tables, ctx)
    row = _mv2_row(rows, q.size)
    inter = row["inter_leader"]
    t = _mv2_pick(inter, q.nbytes)
    fn = inter[t][2]
    if fn == "MPIR_Scatter_mcst_wrap_MV2":  # no multicast: the next entry, else binomial
        fn = inter[t + 1][2] if t + 1 < len(inter) and inter[t + 1][2] else "ompi_binomial"
    if fn in ("mvapich2_two_level_direct", "mvapich2_two_level_binomial"):
        if _mv2_smp(ctx).blocked:
            state["scatter_intra"] = row["intra_node"][_mv2_pick(row["intra_node"], q.nbytes)][2]
            return fn
        return "ompi_binomial"
    return fn


#: MVAPICH2's fixed choices (no table), then per collective: (its table in
#: :data:`smpy.colls.tables_mv2.MV2`, the function reading it)
MV2_FIXED: dict[str, str] = {"barrier": "mvapich2_pair", "alltoallv": "ring", **SINGLE}
MV2_RULES: dict[str, tuple[str, Callable[[Query, Any, dict[str, str], Any], str]]] = {
    "alltoall": ("alltoall", _mv2_alltoall),
    "allgather": ("allgather", _mv2_allgather),
    "gather": ("gather", _mv2_gather),
    "allgatherv": ("allgatherv", _mv2_allgatherv),
    "allreduce": ("allreduce", _mv2_allreduce),
    "bcast": ("bcast", _mv2_bcast),
    "reduce": ("reduce", _mv2_reduce),
    "reduce_scatter": ("red_scat", _mv2_reduce_scatter),
    "scatter": ("scatter", _mv2_scatter),
}


def mvapich2(family: str, q: Query, ctx: Ctx) -> str:
    """MVAPICH2's decision for ``family`` (SimGrid's ``<coll>__mvapich2``), setting the
    MV2 function pointers the two-level algorithms read (``ctx.sel.mv2``)."""
    # not at the top: 40 kB of literals, loaded by the first mvapich2 decision only
    from smpy.colls.tables_mv2 import MV2

    if family in MV2_FIXED:
        return MV2_FIXED[family]
    if family not in MV2_RULES:
        raise SmpyInternalError(f"no MVAPICH2 rule for {family}")
    table, rule = MV2_RULES[family]
    return rule(q, ctx, ctx.sel.mv2, MV2[table])


# -- Intel MPI 4.1 on Stampede (via SimGrid smpi_intel_mpi_selector.cpp) -----------------------
_IMPI_SIZE_ONE = ("barrier", "alltoallv")  # SIZECOMP_<coll> = 1


def impi(family: str, q: Query, ctx: Ctx) -> str:
    """Intel MPI's ``I_MPI_ADJUST_<coll>`` decision (SimGrid's ``<coll>__impi``): the table
    for the ranks-per-node count (uniform nodes; else the 1-ppn one), the first row whose
    ``max_num_proc`` ≥ size, the first entry with ``nbytes < max_size`` (at most
    ``num_elems`` entries skipped, as SimGrid's loop does)."""
    # not at the top: 38 kB of literals, loaded by the first impi decision only
    from smpy.colls.tables_impi import IMPI

    if family in SINGLE:
        return SINGLE[family]
    info = smp_of(ctx)
    local = info.intra_of[ctx.me].size if info.uniform else 1
    spec = IMPI[family]
    tables = spec["table"]
    conf = next((procs for ppn, procs in tables if ppn == local), tables[0][1])
    j = 0
    while j < len(conf) - 1 and q.size > conf[j][0]:
        j += 1
    _maxp, num, elems = conf[j]
    dsize = 1 if family in _IMPI_SIZE_ONE else q.nbytes
    k = 0
    while k < num and k < len(elems) - 1 and dsize >= elems[k][0]:
        k += 1
    fn = spec["functions"][elems[k][1] - 1]
    if fn == "intel_barrier_gather_scatter":
        return "ompi_basic_linear"  # barrier__default
    if fn == "intel_reduce_scatter_recursivehalving":
        return "ompi_basic_recursivehalving" if q.commutative else "mvapich2"
    if fn == "intel_reduce_scatter_reduce_scatterv":
        return "default"
    return fn


SELECTORS["mvapich2"] = mvapich2
SELECTORS["impi"] = impi
