"""How folded memory times HPL's trailing update, and which fault correction makes it time like
private memory.

    python benchmarks/predict/fold_update.py [--shapes 2048x512,...] [--nb 128] [--reps R]

For each local matrix of m x n doubles (the shape a rank of a 1 x Q grid holds: m = N rows,
n = N / Q columns, so rows are 8 n bytes apart) one column chunk of the update,
``A[:, x:x+nb] -= L @ U[:, x:x+nb]`` (L: m x nb, U: nb x n, private), is timed in thread CPU
time, the chunks alternated over repetitions, on:

``private``  a numpy array (the real program's memory: transparent huge pages, mapped);
``mapped``   a folded array (smpy's Folder, 64 MiB block) whose page-table entries are there;
``trimmed``  the same, its entries dropped just before (``madvise(DONTNEED)``, as
             ``smpy/shared-malloc-trim`` does at MPI calls);
``first``    a fresh folded array per chunk (first touches, as without trimming).

For the folded cases it prints the minor faults of the chunk, the shared pages it mapped, the
correction the Folder takes out (``fault_seconds``: min(faults, pages / k) faults at the
calibrated extra cost per fault), the chunk's time less that correction as a ratio to the
private time, and the same with the earlier model (every fault while trimming had dropped
pages, at the calibration's whole time per fault). Last column: the cost per fault that would
make the trimmed chunk equal the private one. Medians over the repetitions.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from smpy.timing.folding import Folder  # noqa: E402

SHAPES = "1024x256,2048x512,4096x1024,8192x1024,8192x4096,16384x2048,32768x4096,65536x5462"


def earlier_calibration(folder: Folder) -> float:
    """The fault cost the earlier model calibrated (until Nov 2026): the whole thread CPU time
    per fault of reading and writing one byte per page over the block (64 MiB at most) after
    DONTNEED and a 32 MiB cache eviction, median of 5 rounds."""
    import ctypes
    import mmap

    from smpy.timing import folding

    n = min(folder.blocksize, 64 << 20)
    m = mmap.mmap(folder._block_fd(), n, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    view = np.frombuffer(m, dtype=np.uint8)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    pages = view[::mmap.PAGESIZE]
    pages[:] = 1
    evict = np.empty(32 << 17)
    times = []
    for _ in range(5):
        folding._LIBC.madvise(addr, n, folding._MADV_DONTNEED)
        evict.fill(0.0)
        f0 = folding.thread_faults()
        t0 = time.thread_time()
        pages += 1
        times.append((time.thread_time() - t0) / max(1, folding.thread_faults() - f0))
    folding._LIBC.madvise(addr, n, folding._MADV_DONTNEED)
    del view, pages
    return sorted(times)[2]


def _sys() -> float:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_stime


def chunk(folder: Folder, A: np.ndarray, L: np.ndarray, U: np.ndarray, x: int, nb: int) -> tuple[float, ...]:
    """(thread CPU seconds, minor faults, shared pages mapped, system seconds) of one chunk of
    the update."""
    f0, p0 = folder.mark()
    s0 = _sys()
    t0 = time.thread_time()
    A[:, x:x + nb] -= L @ U[:, x:x + nb]
    dt = time.thread_time() - t0
    s1 = _sys()
    f1, p1 = folder.mark()
    return dt, f1 - f0, p1 - p0, s1 - s0


def measure(m: int, n: int, nb: int, reps: int) -> dict[str, tuple[float, float, float]]:
    folder = Folder("global", 64 << 20, 32 << 20)
    rng = np.random.default_rng(0)
    L, U = rng.random((m, nb)), rng.random((nb, n))
    P = np.empty((m, n))
    P.fill(0.5)
    A = folder.array((m, n), np.float64, ("fold_update", 1), None)
    A.fill(0.5)
    runs: dict[str, list[tuple[float, int, int]]] = {k: [] for k in ("private", "mapped", "trimmed", "first")}
    for r in range(reps):
        x = (r * nb) % max(1, n - nb + 1)
        runs["private"].append(chunk(folder, P, L, U, x, nb))
        A[:, x:x + nb] += 0.0  # entries present (untimed)
        runs["mapped"].append(chunk(folder, A, L, U, x, nb))
        folder.trim()
        runs["trimmed"].append(chunk(folder, A, L, U, x, nb))
        F = folder.array((m, n), np.float64, ("fold_update", 2), None)
        runs["first"].append(chunk(folder, F, L, U, x, nb))
        del F
    med = {k: tuple(statistics.median(c[i] for c in v) for i in range(4)) for k, v in runs.items()}
    k = folder.refault_pages
    # system time per folded fault over the faulting cases (what an online estimate would see)
    nf = sum(min(c[1], -(-c[2] // k)) for case in ("trimmed", "first") for c in runs[case] if c[2] > 0)
    sy = sum(c[3] for case in ("trimmed", "first") for c in runs[case] if c[2] > 0)
    med["cal"] = (folder.refault_cost, earlier_calibration(folder), float(k), sy / nf if nf else float("nan"),
                  statistics.median(c[3] for c in runs["private"]))
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES, help="m x n local matrices, comma-separated")
    ap.add_argument("--nb", type=int, default=128, help="chunk width (HPL's NB)")
    ap.add_argument("--reps", type=int, default=0, help="chunks per case (0: ~2 Gflop, 5 to 41)")
    ns = ap.parse_args()
    print(f"# python benchmarks/predict/fold_update.py --nb {ns.nb} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load {os.getloadavg()[0]:.1f}); times in ms of thread CPU, medians")
    print(f"{'m x n':>12} {'MiB':>6} {'reps':>4} {'private':>8} {'case':>8} {'ms':>8} {'faults':>7} {'pages':>7} "
          f"{'corr':>7} {'new/priv':>8} {'old/priv':>8} {'us/fault needed':>15} {'sys/priv':>8}")
    for spec in ns.shapes.split(","):
        m, n = (int(v) for v in spec.lower().split("x"))
        reps = ns.reps or max(5, min(41, int(2e9 / (2 * m * ns.nb * ns.nb))))
        med = measure(m, n, ns.nb, reps)
        extra, whole, k, sysf, psys = med["cal"]
        tp = med["private"][0]
        for case in ("mapped", "trimmed", "first"):
            t, f, p, _ = med[case]
            nf = min(f, -(-p // k)) if p > 0 else 0
            corr = nf * extra
            old = f * whole if case == "trimmed" else 0.0  # every fault, while trimming had dropped pages
            need = (t - tp) / nf * 1e6 if nf else float("nan")
            print(f"{m:>6}x{n:<5} {m * n * 8 / 2**20:>6.0f} {reps:>4} {tp * 1e3:>8.3f} {case:>8} {t * 1e3:>8.3f} {int(f):>7} "
                  f"{int(p):>7} {corr * 1e3:>7.3f} {(t - corr) / tp:>8.3f} {(t - old) / tp:>8.3f} {need:>15.2f} "
                  f"{(t - nf * sysf) / tp:>8.3f}", flush=True)
        print(f"#   calibration: {extra * 1e6:.2f} us per fault (earlier model: {whole * 1e6:.2f} us), "
              f"{k:.0f} pages per fault; system time per folded fault {sysf * 1e6:.2f} us; private chunk's "
              f"system time {psys * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
