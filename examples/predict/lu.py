"""HPL-like blocked LU factorisation with partial pivoting (numpy).

The N x N matrix is distributed by column blocks of NB, cyclically over the ranks (a 1 x P
process grid). For each panel k: its owner factors it (partial pivoting, column by column),
the panel and its pivots travel along a ring in one message (HPL's "1ring" broadcast: each
rank forwards to the next; the pivots ride at the head of the panel buffer, as in HPL); every rank swaps the pivot rows of its trailing columns, solves for its block
row of U and updates its trailing columns. Overlap as in HPL: the owner of panel k+1 updates
and factors that panel first (look-ahead of depth 1), and the others split their update in
two halves with an ``Iprobe`` in between that receives and forwards the next panel early.

Usage: lu.py N [NB] [--sample] [--fold] [--no-check]
  --sample  under smpyrun, time only a few column chunks of the updates and a few leaves
            and updates of the panel factorisations (smpy.sample, statistics shared by all
            ranks, per unit of work and by matrix-height class) and inject the rest; the
            matrix is not generated: results are garbage
  --fold    allocate the matrix and panel buffers with smpy.shared_array (memory folding;
            the first page of a panel buffer, which holds the pivots, stays private)
  --no-check skip the residual check (it gathers the factors on rank 0)
"""
import sys
import time

import numpy as np
from _hints import sample, shared_array
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
args = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(args[0]) if args else 1000
NB = int(args[1]) if len(args) > 1 else 64
SAMPLE, FOLD = "--sample" in sys.argv, "--fold" in sys.argv
CHECK = "--no-check" not in sys.argv and not (SAMPLE or FOLD)
TAG_PANEL = 10

npanels = (N + NB - 1) // NB
mycols = [j for k in range(rank, npanels, size) for j in range(k * NB, min(N, (k + 1) * NB))]
ncols = len(mycols)
# local column index of the first column of each panel >= k (columns are in panel order)
first_local = np.searchsorted(np.asarray(mycols, dtype=np.int64), np.arange(npanels) * NB)


def generate(a):
    """Deterministic, well-conditioned test matrix: column j from a generator seeded by j."""
    for lj, j in enumerate(mycols):
        a[:, lj] = np.random.default_rng(j).random(N) - 0.5
        a[j, lj] += 2.0


A = shared_array((N, max(ncols, 1)), enabled=FOLD)
# two panel buffers: panel k travels in pbufs[k % 2] (the next one can arrive early): its w
# pivots (as doubles, like HPL), then its (N - k*NB) x w block; folded but for the pivots
PBUF = NB + N * NB
pbufs = [shared_array(PBUF, enabled=FOLD, shared=[(NB * 8, PBUF * 8)]) for _ in range(2)]
if SAMPLE or FOLD:  # garbage values overflow: not worth a warning per product
    np.seterr(all="ignore")
if not (FOLD or SAMPLE):
    generate(A)
else:  # sampled or folded, the values are garbage anyway: touch the memory as generate would
    A.fill(0.5)


def height_class(m):
    """Sampling class of a block of m rows: quarter octaves (heights within 19 %), over
    which the time of a matrix product per unit of work is about constant."""
    return int(4 * np.log2(max(m, 1)))
piv_all = np.zeros(N if CHECK else 0, dtype=np.int64)  # all pivots, for the residual check
prev_rank, next_rank = (rank - 1) % size, (rank + 1) % size


def message(k):
    """Panel k's message: its pivots, then its block."""
    k0, w = k * NB, min(NB, N - k * NB)
    return pbufs[k % 2][:w + (N - k0) * w]


def panel(k):
    """Panel k's block, as a contiguous (N - k*NB) x w array."""
    k0, w = k * NB, min(NB, N - k * NB)
    return pbufs[k % 2][w:w + (N - k0) * w].reshape(N - k0, w)


def _swap(p, piv):
    """Apply the row interchanges ``piv`` (row j <-> row piv[j], in order) to ``p``."""
    for j, r in enumerate(piv):
        if r != j:
            p[[j, r]] = p[[r, j]]


def unit_lower_solve(L, b, full=False):
    """Solve (strict lower part of L + I) x = b (``full``: L is that matrix already). With
    --sample the factors are garbage and may make LAPACK see a singular matrix; then b is
    returned unchanged (never in a real, unsampled run: the matrix has determinant 1)."""
    try:
        return np.linalg.solve(L if full else np.tril(L, -1) + np.eye(L.shape[0]), b)
    except np.linalg.LinAlgError:
        if not SAMPLE:
            raise
        return b


def _leaf(p):
    """Unblocked LU with partial pivoting of a narrow block, column by column."""
    w = p.shape[1]
    piv = []
    for j in range(w):
        r = j + int(np.argmax(np.abs(p[j:, j])))
        piv.append(r)
        if r != j:
            p[[j, r]] = p[[r, j]]
        d = p[j, j]
        if d != 0.0:
            p[j + 1:, j] /= d
        if j + 1 < w:
            p[j + 1:, j + 1:] -= np.outer(p[j + 1:, j], p[j, j + 1:])
    return piv


def _rlu(p):
    """Recursive LU with partial pivoting of the tall block ``p`` in place (HPL's recursive
    panel factorisation: the right half is updated with one matrix product); returns the
    pivots, relative to ``p``'s rows."""
    m, w = p.shape
    if w <= 8:
        piv = list(range(w))  # no interchange if the leaf is not run (--sample)
        # --sample: leaves of about the same height (buckets of 4*NB rows) share statistics
        for _ in sample(range(1), iters=3, threshold=0.05, scope="global",
                        tag=f"leaf{m // (4 * NB)}x{w}", enabled=SAMPLE):
            piv = _leaf(p)
        return piv
    h = w // 2
    piv = _rlu(p[:, :h])
    _swap(p[:, h:], piv)
    # --sample: the right half's update, timed per unit of work (m h (w - h)) by height class;
    # the first two runs of a site are warm-up: a process's first two temporaries of a new
    # large size are fresh pages (glibc maps the first, its heap grows for the second)
    for _ in sample(range(1), iters=3, threshold=0.05, scope="global", warmup=2, tag=f"rlu{w}x{height_class(m)}",
                    work=m * h * (w - h), enabled=SAMPLE):
        p[:h, h:] = unit_lower_solve(p[:h, :h], p[:h, h:])
        p[h:, h:] -= p[h:, :h] @ p[:h, h:]
    piv2 = _rlu(p[h:, h:])
    _swap(p[h:, :h], piv2)
    return piv + [h + r for r in piv2]


def factor_panel(k):
    """Factor the local panel k in place, copy it into its buffer and return its pivots
    (global row indices)."""
    k0, w = k * NB, min(NB, N - k * NB)
    lc = first_local[k]
    p = A[k0:, lc:lc + w]
    piv = np.asarray(_rlu(p), dtype=np.int64) + k0
    panel(k)[...] = p
    message(k)[:w] = piv
    return piv


def send_panel(k):
    comm.Send(message(k), dest=next_rank, tag=TAG_PANEL)


def recv_panel(k):
    """Receive panel k from the previous rank of the ring and forward it unless the next
    rank is its owner; return its pivots."""
    msg = message(k)
    comm.Recv(msg, source=prev_rank, tag=TAG_PANEL)
    if next_rank != k % size:
        send_panel(k)
    return msg[:min(NB, N - k * NB)].astype(np.int64)


def interchanges(k, piv):
    """Panel k's row interchanges (row k0+j <-> row piv[j], in order) as one permutation of
    the rows they touch: (rows, source rows)."""
    k0, w = k * NB, piv.size
    rows = np.union1d(np.arange(k0, k0 + w), piv)  # sorted: row k0 + j is rows[j]
    src = rows.tolist()
    for j, p in enumerate(np.searchsorted(rows, piv).tolist()):
        src[j], src[p] = src[p], src[j]
    return rows, np.asarray(src, dtype=np.int64)


def swap_rows(perm, lo, hi):
    """Apply a panel's row interchanges ``perm`` (see interchanges) to local columns [lo, hi)."""
    if hi > lo:
        rows, src = perm
        A[rows, lo:hi] = A[src, lo:hi]


def update(k, lo, hi, part):
    """Trailing update of local columns [lo, hi) with panel k: U block row (triangular
    solve), then the Schur complement, by chunks of NB columns (sampled with --sample)."""
    if hi <= lo:
        return
    k0, w = k * NB, min(NB, N - k * NB)
    p = panel(k)
    L11 = np.tril(p[:w], -1) + np.eye(w)
    L21 = p[w:]
    m = N - k0
    # --sample: chunks timed per unit of work (m x chunk width), shared by the updates of every
    # panel of the same height class and by the three parts; two warm-up chunks (see _rlu)
    for c in sample(range(lo, hi, NB), iters=2, threshold=0.05, scope="global", warmup=2,
                    tag=f"upd{w}x{height_class(m)}", work=lambda c: m * (min(hi, c + NB) - c),
                    enabled=SAMPLE):
        e = min(hi, c + NB)
        u = unit_lower_solve(L11, A[k0:k0 + w, c:e], full=True)
        A[k0:k0 + w, c:e] = u
        A[k0 + w:, c:e] -= L21 @ u


comm.Barrier()
t0 = MPI.Wtime()
c0 = time.thread_time()
have = {}  # panel -> pivots, for panels already factored or received
if npanels and rank == 0:
    have[0] = factor_panel(0)
    if size > 1:
        send_panel(0)
for k in range(npanels):
    k0, w = k * NB, min(NB, N - k * NB)
    piv = have.pop(k) if k in have else recv_panel(k)
    if CHECK:
        piv_all[k0:k0 + w] = piv
    lo = first_local[k + 1] if k + 1 < npanels else ncols
    perm = interchanges(k, piv)
    if first_local[k] == lo:  # not the owner: all local columns at once
        swap_rows(perm, 0, ncols)
    else:  # the owner swapped panel k's own columns already
        swap_rows(perm, 0, first_local[k])
        swap_rows(perm, lo, ncols)
    if k + 1 < npanels and (k + 1) % size == rank:  # look-ahead: next panel first
        nhi = first_local[k + 2] if k + 2 < npanels else ncols
        update(k, lo, nhi, 0)
        have[k + 1] = factor_panel(k + 1)
        if size > 1:
            send_panel(k + 1)
        lo = nhi
    mid = lo + (ncols - lo) // 2 // NB * NB
    update(k, lo, mid, 1)
    if k + 1 < npanels and (k + 1) not in have and comm.Iprobe(source=prev_rank, tag=TAG_PANEL):
        have[k + 1] = recv_panel(k + 1)  # overlap: take (and forward) the next panel early
    update(k, mid, ncols, 2)
comm.Barrier()
t1 = MPI.Wtime()
# CPU time of the busiest rank (MPICH polls while waiting: ~ the elapsed time on idle cores)
cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)

if CHECK:
    parts = comm.gather((mycols, A[:, :ncols]), root=0)
    if rank == 0:
        LU = np.empty((N, N))
        for cols, block in parts:
            LU[:, cols] = block
        L = np.tril(LU, -1) + np.eye(N)
        U = np.triu(LU)
        A0 = np.empty((N, N))
        for j in range(N):
            A0[:, j] = np.random.default_rng(j).random(N) - 0.5
            A0[j, j] += 2.0
        perm = np.arange(N)
        for i, r in enumerate(piv_all.tolist()):
            perm[i], perm[r] = perm[r], perm[i]
        res = np.linalg.norm(A0[perm] - L @ U) / (np.linalg.norm(A0) * N * np.finfo(float).eps)
        logdet = np.log(np.abs(np.diag(U))).sum()
        print(f"lu: N={N} NB={NB} ranks={size}")
        print(f"scaled residual {'PASSED' if res < 16.0 else 'FAILED'}, log|det| {logdet:.8f}")
elif rank == 0:
    print(f"lu: N={N} NB={NB} ranks={size} (not checked)")
if rank == 0:
    print(f"# elapsed {t1 - t0:.6f} s")
    print(f"# cpu {cpu:.6f} s")
