"""Run collective algorithms directly on a simulated world (no program, no facade).

:func:`run_ranks` builds a world on the bundled platform (``per_host`` ranks per host),
runs ``fn(proc)`` in every rank and returns the results and the simulated makespan.
Payload builders and reference results for exact checks live here too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce as fold
from typing import Any

import numpy as np

from smpy.colls.core import Ctx, Reduction
from smpy.colls.dispatch import selection
from smpy.platform import default_platform
from smpy.runtime.world import World
from smpy.support.config import Config


def run_ranks(n: int, fn: Callable[[Any], Any], cfg: dict | None = None, per_host: int = 1) -> tuple[list, float]:
    plat = default_platform()  # fresh: models keep per-run state on the platform's links
    hosts = plat.hosts
    world = World(plat, Config(cfg or {}), [hosts[(i // per_host) % len(hosts)] for i in range(n)])
    out: list[Any] = [None] * n

    def main(proc: Any) -> None:
        out[proc.rank] = fn(proc)

    actors = world.spawn(main)
    for a in actors:
        a.start()
    world.engine.run()
    if world.engine.abort_reason is not None:
        raise world.engine.abort_reason
    for a in actors:
        assert not a.alive, f"{a.name} did not finish"
    return out, world.engine.now


def run_sizes(sizes: list[int], fn: Callable[[Any, Any], Any], cfg: dict | None = None,
              per_host: int = 1) -> dict[int, list]:
    """Run ``fn(proc, comm)`` on a communicator of each size (the first n ranks of one
    world), one size after the other; returns ``{n: [result of rank 0..n-1]}``."""
    nmax = max(sizes)
    comms: dict[int, Any] = {}
    out: dict[int, list] = {n: [None] * n for n in sizes}

    def main(proc: Any) -> None:
        for n in sizes:
            if proc.rank < n:
                out[n][proc.rank] = fn(proc, comms[n])

    plat = default_platform()
    hosts = plat.hosts
    world = World(plat, Config(cfg or {}), [hosts[(i // per_host) % len(hosts)] for i in range(nmax)])
    from smpy.runtime.comm import CommImpl
    for n in sizes:
        comms[n] = CommImpl(world, list(range(n)), f"first{n}")
    actors = world.spawn(main)
    for a in actors:
        a.start()
    world.engine.run()
    if world.engine.abort_reason is not None:
        raise world.engine.abort_reason
    return out


def ctx_of(proc: Any, comm: Any = None, call: str = "test") -> Ctx:
    return Ctx.start(proc, comm if comm is not None else proc.world.comm_world, call, selection(proc.world))


# -- reductions: uint32 sums (commutative) and 2x2 uint32 matrix products (not) ---------------
def _sum(a: bytes, b: bytes) -> bytes:
    return (np.frombuffer(a, "<u4") + np.frombuffer(b, "<u4")).astype("<u4").tobytes()


def _matmul(a: bytes, b: bytes) -> bytes:
    x = np.frombuffer(a, "<u4").reshape(-1, 2, 2).astype(np.uint64)
    y = np.frombuffer(b, "<u4").reshape(-1, 2, 2).astype(np.uint64)
    z = np.einsum("nij,njk->nik", x, y) % (1 << 32)
    return z.astype("<u4").tobytes()


SUM = Reduction(_sum, True, 4)
MATMUL = Reduction(_matmul, False, 16)


def vector(rank: int, count: int, red: Reduction, salt: int = 0) -> bytes:
    """Rank's contribution: ``count`` elements of ``red``, distinct per rank."""
    words = red.elem // 4 * count
    rng = np.random.default_rng(rank * 7919 + salt)
    return rng.integers(0, 1 << 32, words, dtype=np.uint64).astype("<u4").tobytes()


def folded(red: Reduction, parts: list[bytes]) -> bytes:
    return fold(red.combine, parts)


def block(rank: int, nbytes: int, salt: int = 0) -> bytes:
    rng = np.random.default_rng(rank * 104729 + salt)
    return rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
