"""The engine's event heap: heapq's push and pop against the compiled engine's (issue 24).

The heap holds ``(time, seq, event)`` tuples. ``heapq`` compares two of them with tuple
comparison (an equality test of the times, then ``<``: two rich comparisons of floats per
step); the compiled engine (``smpy/kernel/_accel.c``, ``heap_push``/``heap_pop``) moves the same
entries by the same algorithm and compares exact float times and int seqs in C. At thousands
of ranks the heap holds thousands of entries (HPL at 3072 ranks, docs/performance.md, "The
event heap's cancelled entries"), and each push or pop makes about log2(n) comparisons.

For each heap size, the heap is filled with random times, then ``--ops`` pushes and pops
alternate (a pop, then a push of a later time: a steady heap of that size); CPU time per
operation, median of ``--repeat`` rounds, both ways in turn. The two heaps are checked to
hold the same objects in the same order at the end.

    python benchmarks/speed/event_heap.py
    python benchmarks/speed/event_heap.py --sizes 10 100000 --ops 200000
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _round(push, pop, size: int, ops: int, seed: int) -> tuple[float, list]:
    rnd = random.Random(seed)
    heap: list = []
    seq = 0
    for _ in range(size):
        seq += 1
        push(heap, (rnd.random(), seq, None))
    now = 0.0
    t0 = time.process_time()
    for _ in range(ops):
        now = pop(heap)[0]
        seq += 1
        push(heap, (now + rnd.random(), seq, None))
    return (time.process_time() - t0) / (2 * ops), heap


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 100, 3000, 100000])
    ap.add_argument("--ops", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    a = ap.parse_args()
    sys.path.insert(0, str(a.src))
    from smpy.kernel import accel

    mod = accel.load()
    if mod is None:
        print(f"skipped: the accelerator cannot be built here: {accel.why()}")
        return 0
    print(f"{'entries':>8} {'heapq ns/op':>12} {'compiled ns/op':>15} {'ratio':>6}")
    for size in a.sizes:
        py, c = [], []
        for r in range(a.repeat):
            tp, hp = _round(heapq.heappush, heapq.heappop, size, a.ops, r)
            tc, hc = _round(mod.heap_push, mod.heap_pop, size, a.ops, r)
            if hp != hc:
                raise SystemExit(f"the heaps differ at {size} entries")
            py.append(tp)
            c.append(tc)
        p, q = statistics.median(py) * 1e9, statistics.median(c) * 1e9
        print(f"{size:>8} {p:>12.1f} {q:>15.1f} {q / p:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
