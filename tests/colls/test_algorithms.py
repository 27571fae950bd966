"""Every registered collective algorithm gives exact results.

One parametrised test per (collective, algorithm): communicators of 1–17 ranks (sizes
{1,2,3,4,5,7,8,13,16,17}, each the first n ranks of one world), every root up to 5 ranks
and first/middle/last above, small and segmented messages, a commutative op (uint32 sum)
and a non-commutative one (2×2 matrix product mod 2^32, which catches any reordering of
operands), empty and unequal blocks for the vector variants. Algorithms that need a
commutative op or a particular size run their declared fallback, which is checked too.
IN_PLACE is a buffer-level matter: tests/colls/test_facade.py covers it.
"""

from __future__ import annotations

import pytest
from collharness import MATMUL, SUM, block, ctx_of, folded, run_sizes, vector

from smpy.colls.registry import ALGORITHMS

SIZES = [1, 2, 3, 4, 5, 7, 8, 13, 16, 17]
CASES = [(f, a) for f in sorted(ALGORITHMS) for a in sorted(ALGORITHMS[f])]


def roots(n: int) -> list[int]:
    return list(range(n)) if n <= 5 else sorted({0, n // 2, n - 1})


def _run(family: str, name: str):
    def call(proc, comm, *args):
        c = ctx_of(proc, comm)
        return c.sel.run_named(family, name, c, *args)
    return call


def check_bcast(name: str) -> None:
    call = _run("bcast", name)
    for nbytes, elem in ((24, 8), (70008, 8), (0, 4)):
        def fn(proc, comm, nbytes=nbytes, elem=elem):
            return [call(proc, comm, root, block(root, nbytes) if proc.rank == root else None, nbytes, elem)
                    for root in roots(comm.size)]
        for n, res in run_sizes(SIZES, fn).items():
            for r in range(n):
                for root, got in zip(roots(n), res[r], strict=True):
                    assert got == block(root, nbytes), f"n={n} root={root} rank={r} nbytes={nbytes}"


def check_reduction(family: str, name: str) -> None:
    call = _run(family, name)
    for red, counts in ((SUM, (3, 1500)), (MATMUL, (1, 400))):
        for count in counts:
            def fn(proc, comm, count=count, red=red):
                mine = vector(proc.rank, count, red)
                if family == "reduce":
                    return [call(proc, comm, root, mine, red) for root in roots(comm.size)]
                return call(proc, comm, mine, red)
            for n, res in run_sizes(SIZES, fn).items():
                vec = [vector(r, count, red) for r in range(n)]
                for r in range(n):
                    what = f"n={n} rank={r} count={count} commutative={red.commutative}"
                    if family == "reduce":
                        for root, got in zip(roots(n), res[r], strict=True):
                            assert got == (folded(red, vec) if r == root else None), f"{what} root={root}"
                    elif family == "allreduce":
                        assert res[r] == folded(red, vec), what
                    elif family == "scan":
                        assert res[r] == folded(red, vec[:r + 1]), what
                    else:
                        assert res[r] == (folded(red, vec[:r]) if r else None), what


def check_reduce_scatter(name: str) -> None:
    call = _run("reduce_scatter", name)
    for red in (SUM, MATMUL):
        for pattern in ("equal", "uneven", "growing"):
            def counts_of(n: int, pattern: str = pattern) -> list[int]:
                return {"equal": [2] * n, "uneven": [r % 3 for r in range(n)], "growing": [5 + r for r in range(n)]}[pattern]

            def fn(proc, comm, red=red, counts_of=counts_of):
                counts = counts_of(comm.size)
                return call(proc, comm, vector(proc.rank, sum(counts), red), counts, red)
            for n, res in run_sizes(SIZES, fn).items():
                counts = counts_of(n)
                full = folded(red, [vector(r, sum(counts), red) for r in range(n)])
                off = 0
                for r in range(n):
                    assert res[r] == full[off * red.elem:(off + counts[r]) * red.elem], f"n={n} rank={r} {pattern}"
                    off += counts[r]


def check_allgather(family: str, name: str) -> None:
    call = _run(family, name)
    patterns = ("equal", "uneven") if family == "allgatherv" else ("equal", "large")
    for pattern in patterns:
        def sizes_of(n: int, pattern: str = pattern) -> list[int]:
            return {"equal": [8] * n, "large": [4000] * n, "uneven": [4 * (r % 3) for r in range(n)]}[pattern]

        def fn(proc, comm, sizes_of=sizes_of):
            sizes = sizes_of(comm.size)
            return call(proc, comm, block(proc.rank, sizes[proc.rank]), sizes, 4)
        for n, res in run_sizes(SIZES, fn).items():
            want = [block(r, s) for r, s in enumerate(sizes_of(n))]
            for r in range(n):
                assert list(res[r]) == want, f"n={n} rank={r} {pattern}"


def check_alltoall(family: str, name: str) -> None:
    call = _run(family, name)
    for uneven in ((False, True) if family != "alltoall" else (False,)):
        def nb(s: int, d: int, uneven: bool = uneven) -> int:
            return 4 * ((s + d) % 3) if uneven else 12

        def fn(proc, comm, nb=nb):
            return call(proc, comm, [block(proc.rank * 100 + d, nb(proc.rank, d)) for d in range(comm.size)])
        for n, res in run_sizes(SIZES, fn).items():
            for r in range(n):
                assert list(res[r]) == [block(s * 100 + r, nb(s, r)) for s in range(n)], f"n={n} rank={r}"


def check_gather(family: str, name: str) -> None:
    call = _run(family, name)
    patterns = ("equal", "uneven") if family == "gatherv" else ("equal", "large")
    for pattern in patterns:
        def size_of(r: int, pattern: str = pattern) -> int:
            return {"equal": 12, "large": 100000, "uneven": 4 * (r % 3)}[pattern]

        def fn(proc, comm, size_of=size_of):
            return [call(proc, comm, root, block(proc.rank, size_of(proc.rank)), 4) for root in roots(comm.size)]
        for n, res in run_sizes(SIZES, fn).items():
            want = [block(r, size_of(r)) for r in range(n)]
            for r in range(n):
                for root, got in zip(roots(n), res[r], strict=True):
                    assert (list(got) if r == root else got) == (want if r == root else None), f"n={n} root={root}"


def check_scatter(family: str, name: str) -> None:
    call = _run(family, name)

    def size_of(r: int) -> int:
        return 12 if family == "scatter" else 4 * (r % 3)

    def fn(proc, comm):
        blocks = [block(r, size_of(r)) for r in range(comm.size)]
        return [call(proc, comm, root, blocks if proc.rank == root else None, 4) for root in roots(comm.size)]
    for n, res in run_sizes(SIZES, fn).items():
        for r in range(n):
            assert res[r] == [block(r, size_of(r))] * len(roots(n)), f"n={n} rank={r}"


def check_barrier(name: str) -> None:
    call = _run("barrier", name)
    from smpy.kernel.activity import Sleep
    from smpy.kernel.actors import block_on

    def fn(proc, comm):
        block_on(Sleep(proc.world.engine, 1e-3 * (proc.rank + 1)))
        entered = proc.world.engine.now
        call(proc, comm)
        return entered, proc.world.engine.now
    for n, res in run_sizes(SIZES, fn).items():
        last_in = max(t for t, _ in res)
        assert all(out >= last_in for _, out in res), f"n={n}: a rank left before the last one entered"


@pytest.mark.slow
@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f}:{a}" for f, a in CASES])
def test_algorithm_is_exact(family: str, name: str) -> None:
    if family == "bcast":
        check_bcast(name)
    elif family in ("reduce", "allreduce", "scan", "exscan"):
        check_reduction(family, name)
    elif family == "reduce_scatter":
        check_reduce_scatter(name)
    elif family in ("allgather", "allgatherv"):
        check_allgather(family, name)
    elif family in ("alltoall", "alltoallv", "alltoallw"):
        check_alltoall(family, name)
    elif family in ("gather", "gatherv"):
        check_gather(family, name)
    elif family in ("scatter", "scatterv"):
        check_scatter(family, name)
    elif family == "barrier":
        check_barrier(name)
    else:
        pytest.fail(f"no check for collective {family}")


SMP = [("bcast", "SMP_binomial"), ("bcast", "SMP_linear"), ("allreduce", "smp_binomial"),
       ("allreduce", "smp_rsag"), ("allreduce", "mvapich2_two_level"), ("reduce", "mvapich2_two_level"),
       ("barrier", "mpich_smp"), ("bcast", "mvapich2_inter_node"), ("bcast", "mvapich2_intra_node"),
       ("allgather", "mvapich2_smp"), ("gather", "mvapich2_two_level"), ("scatter", "mvapich2_two_level_direct"),
       ("scatter", "mvapich2_two_level_binomial"), ("allreduce", "smp_rdb"), ("allgather", "smp_simple"),
       ("allgather", "loosely_lr"), ("allgather", "SMP_NTS"), ("bcast", "SMP_binary"),
       ("allreduce", "smp_binomial_pipeline"), ("allreduce", "smp_rsag_lr"),
       ("allreduce", "smp_rsag_rab")]


@pytest.mark.slow
@pytest.mark.parametrize("per_host", [2, 3, 4])
@pytest.mark.parametrize(("family", "name"), SMP, ids=[f"{f}:{a}" for f, a in SMP])
def test_smp_algorithms_with_several_ranks_per_host(family: str, name: str, per_host: int, monkeypatch) -> None:
    """Node-aware algorithms on hosts holding 2, 3 or 4 ranks (the last one partial)."""
    import collharness as h

    real = h.run_sizes
    monkeypatch.setattr(__import__(__name__, fromlist=["run_sizes"]), "run_sizes",
                        lambda sizes, fn, cfg=None, per_host_=per_host: real(sizes, fn, cfg, per_host_))
    test_algorithm_is_exact(family, name)


@pytest.mark.slow
def test_ring_segmented_runs_its_phases(monkeypatch) -> None:
    """ompi_ring_segmented only segments above p MiB; with 64-byte segments the phased
    reduce-scatter runs on the test sizes."""
    import smpy.colls.allreduce as ar

    monkeypatch.setattr(ar, "RING_SEGSIZE", 64)
    check_reduction("allreduce", "ompi_ring_segmented")
