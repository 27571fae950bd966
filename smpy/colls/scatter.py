"""MPI_Scatter and MPI_Scatterv algorithms (SimGrid's scatter/, ``smpi/scatter:<name>``).

Signature: ``fn(ctx, root, blocks, elem) -> block`` — ``blocks`` (one per rank, rank
order) at the root, None elsewhere; returns this rank's block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls import topo
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


@algorithm("scatter", "ompi_basic_linear", source="Open MPI coll_basic scatter_intra (SimGrid scatter-ompi.cpp)")
def ompi_basic_linear(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """The root sends each block in rank order with blocking sends.

    Cost (p−1)(α + nβ) serialised at the root."""
    if ctx.me != root:
        return ctx.recv(root)
    assert blocks is not None
    for i in range(ctx.size):
        if i != root:
            ctx.send(blocks[i], i)
    return blocks[root]


@algorithm("scatter", "ompi_linear_nb", source="Open MPI coll_tuned scatter_intra_linear_nb (SimGrid scatter-ompi.cpp)")
def ompi_linear_nb(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """The root starts all sends at once and waits for them.

    Cost ≈ α + (p−1) nβ at the root's link."""
    if ctx.me != root:
        return ctx.recv(root)
    assert blocks is not None
    ctx.waitall([ctx.isend(blocks[i], i) for i in range(ctx.size) if i != root])
    return blocks[root]


@algorithm("scatter", "ompi_binomial", source="Open MPI coll_tuned scatter_intra_binomial (SimGrid scatter-ompi.cpp; MPICH's scatter)")
def ompi_binomial(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """In-order binomial tree: each node receives its subtree's blocks from its parent and
    forwards each child's subtree.

    ⌈log2 p⌉ steps; cost ⌈log2 p⌉ α + (p−1)/p · pnβ at the root."""
    size, me = ctx.size, ctx.me
    parent, kids = topo.in_order_bmtree(size, me, root)
    vrank = (me - root) % size
    if me == root:
        assert blocks is not None
        mine = [blocks[(root + v) % size] for v in range(size)]  # vrank order
    elif vrank % 2 == 0:
        mine = list(ctx.recv(parent))
    else:
        return ctx.recv(parent)[0]
    total = 1
    for k in kids:
        vkid = (k - root) % size
        n = min(vkid - vrank, size - vkid)
        ctx.send(tuple(mine[total:total + n]), k)
        total += n
    return mine[0]


@algorithm("scatter", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp iscatter (SMPI's MPI_Iscatter/MPI_Scatterv and 'default' scatter)")
def nbc_linear(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """The root starts one send per rank at once; others post their receive.

    Same messages as ``ompi_linear_nb``."""
    return ompi_linear_nb(ctx, root, blocks, elem)


algorithm("scatterv", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp iscatterv (SMPI's only MPI_Scatterv)")(nbc_linear)
algorithm("scatterv", "ompi_basic_linear", source="Open MPI coll_basic scatterv_intra (same schedule as scatter)")(ompi_basic_linear)
algorithm("scatterv", "ompi_binomial", source="binomial scatter schedule applied to vectors (smpy)")(ompi_binomial)
