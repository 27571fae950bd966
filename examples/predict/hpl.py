"""An HPL twin: LU with partial pivoting on a 2-D P x Q block-cyclic process grid (numpy).

The N x N matrix is distributed in NB x NB blocks, block (I, J) on process row I mod P and
process column J mod Q (ranks row-major on the grid, as HPL's default). For each panel k
(global columns k*NB .. k*NB+w):

1. the process column that owns it factors it (HPL's recursive panel factorisation): the
   columns are split in halves down to leaves of 8 columns; in a leaf, each column's pivot is
   found by an ``Allreduce`` over the process column with a user operation that keeps the row
   of largest magnitude (ties: the lowest row index) and carries that whole panel row, so that
   every process of the column holds the panel's top w x w block; the old row at the pivot
   position goes to the pivot row's owner by one message (HPL_pdmxswp); the right half of a
   split is updated with one matrix product;
2. the panel (its pivots, its top block and each process row's part of L) is broadcast along
   every process row (``Bcast`` on a row communicator from ``Split``);
3. the pivots' row interchanges are applied to the other columns by point-to-point exchanges
   within each process column (each process sends the rows another one needs, one message per
   pair);
4. the process row that owns the diagonal block solves for its block row of U and broadcasts
   it down its process column (``Bcast`` on a column communicator);
5. every process updates its trailing block, A22 -= L21 @ U12, by chunks of NB columns.

No look-ahead (HPL's depth 0). The elapsed time and HPL's flop count 2/3 N^3 + 3/2 N^2 give
the Gflops line, printed like HPL's ``WR`` line.

Usage: hpl.py N [NB] [P [Q]] [--ratio=R] [--sample] [--fold] [--no-check] [--panels=K]
  P x Q must be the number of ranks (Q defaults to ranks / P; without P: the largest divisor P
  of the rank count with R P^2 <= ranks, R = 1 by default: the squarest grid with P <= Q;
  --ratio=4 gives P:Q about 1:4, HPL's usual advice for Ethernet clusters).
  --sample  under smpyrun, time only a few chunks of the trailing updates, of the U solves and
            of the panels' right-half updates (smpy.sample, statistics shared by all ranks,
            per unit of work and by height class) and inject the rest; results are garbage
  --fold    allocate the matrix and the panel / U buffers with smpy.shared_array (memory
            folding; the pivots and the panel's top block stay private)
  --no-check skip the residual check (it gathers the factors on rank 0; for small N)
  --panels=K factor the first K panels only (no check): an emulation's cost per panel at scale
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
RATIO = float(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--ratio=")), 1))
if len(args) > 2:
    P = int(args[2])
    Q = int(args[3]) if len(args) > 3 else size // max(P, 1)
else:  # the largest divisor P of the rank count with RATIO * P * P <= ranks
    P = max(p for p in range(1, size + 1) if size % p == 0 and RATIO * p * p <= size)
    Q = size // P
if P * Q != size:
    if rank == 0:
        print(f"hpl.py: the grid {P} x {Q} needs {P * Q} ranks, not {size}", file=sys.stderr)
    comm.Barrier()  # rank 0 has said why before anyone exits
    sys.exit(2)
SAMPLE, FOLD = "--sample" in sys.argv, "--fold" in sys.argv
CHECK = "--no-check" not in sys.argv and not (SAMPLE or FOLD)
# --panels=K: stop after the first K panels (to measure an emulation's cost per panel at scale;
# the elapsed time is then that of the partial factorisation)
PANELS = int(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--panels=")), 0))
if PANELS:
    CHECK = False
LEAF = 8
TAG_SWAP, TAG_PIVROW = 20, 21
if SAMPLE or FOLD:  # garbage values overflow: not worth a warning per product
    np.seterr(all="ignore")

myrow, mycol = divmod(rank, Q)
rowcomm = comm.Split(myrow, mycol)  # rank mycol: the process row
colcomm = comm.Split(mycol, myrow)  # rank myrow: the process column
npanels = (N + NB - 1) // NB


def owned(me, nprocs):
    """Global indices (rows or columns) of the blocks I mod nprocs == me, in order."""
    return np.asarray([g for b in range(me, npanels, nprocs)
                       for g in range(b * NB, min(N, (b + 1) * NB))], dtype=np.int64)


myrows, mycols = owned(myrow, P), owned(mycol, Q)
mloc, nloc = myrows.size, mycols.size
# local index of the first row / column >= each panel's start (and N at the end)
starts = np.append(np.arange(npanels) * NB, N)
row0, col0 = np.searchsorted(myrows, starts), np.searchsorted(mycols, starts)


def local_row(g):
    """Local index of global row g on its owner (process row (g // NB) mod P)."""
    return (g // NB // P) * NB + g % NB


A = shared_array((max(mloc, 1), max(nloc, 1)), enabled=FOLD)
# the panel message: w pivots, the w x w top block (both private), then this process row's
# rows of the panel (folded)
HEAD = NB + NB * NB
PBUF = HEAD + mloc * NB
pbuf = shared_array(PBUF, enabled=FOLD, shared=[(HEAD * 8, PBUF * 8)])
ubuf = shared_array(NB * max(nloc, 1), enabled=FOLD)  # the U block row, for the column Bcast


def column(j):
    """Column j of the test matrix (the same as examples/predict/lu.py's)."""
    c = np.random.default_rng(j).random(N) - 0.5
    c[j] += 2.0
    return c


if FOLD or SAMPLE:  # the values are garbage anyway: touch the memory as generating would
    A.fill(0.5)
else:
    for lj, j in enumerate(mycols.tolist()):
        A[:mloc, lj] = column(j)[myrows]


def height_class(m):
    """Sampling class of a block of m rows: quarter octaves (heights within 19 %)."""
    return int(4 * np.log2(max(m, 1)))


def unit_lower_solve(L, b):
    """Solve (strict lower part of L + I) x = b. With --sample/--fold the factors are garbage
    and LAPACK may see a singular matrix: b is returned unchanged then (never in a checked run:
    the matrix has determinant 1)."""
    try:
        return np.linalg.solve(np.tril(L, -1) + np.eye(L.shape[0]), b)
    except np.linalg.LinAlgError:
        if CHECK:
            raise
        return b


def _maxrow(inbuf, inoutbuf, datatype):
    """Allreduce operation of the pivot search: [|value|, global row, the row's w entries]; the
    larger |value| wins, then the lower row index (a total order: the result does not depend
    on the reduction's order)."""
    a = np.frombuffer(inbuf, dtype=np.float64)
    b = np.frombuffer(inoutbuf, dtype=np.float64)
    if a[0] > b[0] or (a[0] == b[0] and 0 <= a[1] < b[1]):
        b[:] = a


MAXROW = MPI.Op.Create(_maxrow, commute=True)


class Panel:
    """Factorisation of panel k by the process column that owns it."""

    def __init__(self, k):
        self.k0, self.w = k * NB, min(NB, N - k * NB)
        self.pr = k % P  # process row of the diagonal block
        lc = col0[k]
        # my rows >= k0 of the panel, in a private copy while it is factored (HPL's work
        # array: contiguous, and never folded)
        self.view = A[row0[k]:mloc, lc:lc + self.w]
        self.W = np.array(self.view)
        self.g = myrows[row0[k]:]
        self.top = np.zeros((self.w, self.w))
        self.piv = np.zeros(self.w, dtype=np.int64)
        self.cand = np.empty(2 + self.w)
        self.best = np.empty(2 + self.w)

    def below(self, x):
        """Offset in W of my first row at position >= k0 + x (x <= w: only the diagonal
        block's process row holds rows k0 .. k0 + w - 1)."""
        return x if myrow == self.pr else 0

    def factor(self, a=0, b=None):
        b = self.w if b is None else b
        if b - a <= LEAF:
            for j in range(a, b):
                self.pivot(j, b)
            return
        h = (a + b) // 2
        self.factor(a, h)
        u = unit_lower_solve(self.top[a:h, a:h], self.top[a:h, h:b])
        self.top[a:h, h:b] = u
        if myrow == self.pr:
            self.W[a:h, h:b] = u
        s = self.below(h)
        m = self.W.shape[0] - s
        if m <= 0:
            self.factor(h, b)
            return
        # --sample: timed per unit of work (m h (b - h)) by height class; two warm-up runs
        for _ in sample(range(1), iters=3, threshold=0.05, scope="global", warmup=2,
                        tag=f"rlu{b - a}x{height_class(m)}", work=m * (h - a) * (b - h),
                        enabled=SAMPLE):
            self.W[s:, h:b] -= self.W[s:, a:h] @ u
        self.factor(h, b)

    def pivot(self, j, b):
        """Column j: find the pivot over the process column, swap, scale, update the leaf."""
        W, s = self.W, self.below(j)
        cand = self.cand
        if W.shape[0] > s:
            i = s + int(np.argmax(np.abs(W[s:, j])))
            v = abs(W[i, j])
            # a garbage NaN (--fold) must still beat "no candidate" (-1)
            cand[0], cand[1], cand[2:] = v if v == v else 0.0, self.g[i], W[i]
        else:
            cand[0], cand[1], cand[2:] = -1.0, -1.0, 0.0
        colcomm.Allreduce(cand, self.best, op=MAXROW)
        g, row = int(self.best[1]), self.best[2:]
        self.piv[j] = g
        gj = self.k0 + j
        og = (g // NB) % P
        if g != gj:
            if myrow == self.pr and og == myrow:
                i = local_row(g) - row0[self.k0 // NB]
                W[i] = W[j]
            elif myrow == self.pr:
                colcomm.Send(np.ascontiguousarray(W[j]), dest=og, tag=TAG_PIVROW)
            elif og == myrow:
                i = local_row(g) - row0[self.k0 // NB]
                tmp = np.empty(self.w)
                colcomm.Recv(tmp, source=self.pr, tag=TAG_PIVROW)
                W[i] = tmp
        if myrow == self.pr:
            W[j] = row
        self.top[j] = row
        s1 = self.below(j + 1)
        d = row[j]
        if d != 0.0:
            W[s1:, j] /= d
        if j + 1 < b:
            W[s1:, j + 1:b] -= np.outer(W[s1:, j], row[j + 1:b])


def interchanges(k0, piv):
    """A panel's row interchanges (row k0+j <-> row piv[j], in order) as one permutation of
    the rows they touch: (rows, source rows)."""
    rows = np.union1d(np.arange(k0, k0 + piv.size), piv)
    src = rows.tolist()
    for j, p in enumerate(np.searchsorted(rows, piv).tolist()):
        src[j], src[p] = src[p], src[j]
    return rows, np.asarray(src, dtype=np.int64)


def swap_rows(k0, piv, cols):
    """Apply the interchanges to my local columns ``cols`` (an index array): every process
    of the column sends the rows another one needs, one message per pair."""
    rows, src = interchanges(k0, piv)
    keep = rows != src
    rows, src = rows[keep], src[keep]
    if not rows.size or not cols.size:
        return
    odst, osrc = (rows // NB) % P, (src // NB) % P
    reqs, outs = [], []
    mine, theirs = osrc == myrow, odst == myrow
    for q in np.unique(odst[mine]).tolist():  # peers that need rows I hold, in rank order
        if q != myrow:
            sel = mine & (odst == q)
            out = A[np.ix_(local_row(src[sel]), cols)]
            outs.append(out)
            reqs.append(colcomm.Isend(out, dest=q, tag=TAG_SWAP))
    local = mine & theirs
    if local.any():
        A[np.ix_(local_row(rows[local]), cols)] = A[np.ix_(local_row(src[local]), cols)]
    for q in np.unique(osrc[theirs]).tolist():
        if q != myrow:
            sel = theirs & (osrc == q)
            inc = np.empty((int(sel.sum()), cols.size))
            colcomm.Recv(inc, source=q, tag=TAG_SWAP)
            A[np.ix_(local_row(rows[sel]), cols)] = inc
    MPI.Request.Waitall(reqs)


def step(k, piv_all):
    k0, w = k * NB, min(NB, N - k * NB)
    pc, pr = k % Q, k % P
    r0 = row0[k]
    mk = mloc - r0  # my rows >= k0
    piv = pbuf[:w]
    top = pbuf[NB:NB + w * w].reshape(w, w)
    L = pbuf[HEAD:HEAD + mk * w].reshape(mk, w)
    if mycol == pc:
        pan = Panel(k)
        pan.factor()
        pan.view[...] = pan.W
        piv[:] = pan.piv
        top[...] = pan.top
        L[...] = pan.W
    if Q > 1:
        rowcomm.Bcast(pbuf[:HEAD + mk * w], root=pc)
    ipiv = piv.astype(np.int64)
    if CHECK:
        piv_all[k0:k0 + w] = ipiv
    # row interchanges on every local column but the panel's (already swapped)
    lc = col0[k]
    if mycol == pc:
        others = np.concatenate([np.arange(lc), np.arange(lc + w, nloc)]).astype(np.int64)
    else:
        others = np.arange(nloc, dtype=np.int64)
    if P > 1:
        swap_rows(k0, ipiv, others)
    else:
        rows, src = interchanges(k0, ipiv)
        A[np.ix_(local_row(rows), others)] = A[np.ix_(local_row(src), others)]
    # U block row: solved by the diagonal block's process row, broadcast down the column
    t0 = col0[k + 1] if k + 1 < npanels else nloc
    nt = nloc - t0
    if nt <= 0:  # the same for the whole process column: no Bcast either
        return
    U = ubuf[:w * nt].reshape(w, nt)
    if myrow == pr:
        blk = A[r0:r0 + w, t0:nloc]
        for c in sample(range(0, nt, NB), iters=2, threshold=0.05, scope="global", warmup=2,
                        tag=f"trsm{w}", work=lambda c: min(nt, c + NB) - c, enabled=SAMPLE):
            e = min(nt, c + NB)
            blk[:, c:e] = unit_lower_solve(top, blk[:, c:e])
        U[...] = blk
    if P > 1:
        colcomm.Bcast(U, root=pr)
    s = w if myrow == pr else 0
    m = mk - s
    if m <= 0:
        return
    L21 = L[s:]
    T = A[r0 + s:mloc, t0:nloc]
    # --sample: chunks timed per unit of work (m x chunk width), by height class
    for c in sample(range(0, nt, NB), iters=2, threshold=0.05, scope="global", warmup=2,
                    tag=f"upd{w}x{height_class(m)}", work=lambda c: m * (min(nt, c + NB) - c),
                    enabled=SAMPLE):
        e = min(nt, c + NB)
        T[:, c:e] -= L21 @ U[:, c:e]


def check(piv_all):
    """Gather the factors on rank 0: scaled residual ||PA - LU|| / (||A|| N eps)."""
    parts = comm.gather((myrows, mycols, A[:mloc, :nloc]), root=0)
    if rank != 0:
        return
    LU = np.empty((N, N))
    for r, c, blk in parts:
        LU[np.ix_(r, c)] = blk
    L = np.tril(LU, -1) + np.eye(N)
    U = np.triu(LU)
    A0 = np.empty((N, N))
    for j in range(N):
        A0[:, j] = column(j)
    perm = np.arange(N)
    for i, r in enumerate(piv_all.tolist()):
        perm[i], perm[r] = perm[r], perm[i]
    res = np.linalg.norm(A0[perm] - L @ U) / (np.linalg.norm(A0) * N * np.finfo(float).eps)
    logdet = np.log(np.abs(np.diag(U))).sum()
    print(f"||PA-LU||/(||A|| N eps) = {res:.4f} ...... {'PASSED' if res < 16.0 else 'FAILED'}")
    print(f"log|det| {logdet:.10f}")


def main():
    piv_all = np.zeros(N if CHECK else 0, dtype=np.int64)
    comm.Barrier()
    t0 = MPI.Wtime()
    c0 = time.thread_time()
    for k in range(min(npanels, PANELS) if PANELS else npanels):
        step(k, piv_all)
    comm.Barrier()
    t1 = MPI.Wtime()
    cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
    if rank == 0:
        t = t1 - t0
        gflops = (2.0 / 3.0 * N ** 3 + 1.5 * N ** 2) / t / 1e9
        print(f"hpl: N={N} NB={NB} P={P} Q={Q} ranks={size}"
              + ("" if CHECK else " (not checked)")
              + (f" first {min(PANELS, npanels)} of {npanels} panels only" if PANELS else ""))
        print(f"{'T/V':<10}{'N':>8}{'NB':>6}{'P':>6}{'Q':>6}{'Time':>14}{'Gflops':>14}")
        print(f"{'WR00C2R8':<10}{N:>8}{NB:>6}{P:>6}{Q:>6}{t:>14.2f}{gflops:>14.4e}")
    if CHECK:
        check(piv_all)
    if rank == 0:
        print(f"# elapsed {t1 - t0:.6f} s")
        print(f"# cpu {cpu:.6f} s")


main()
