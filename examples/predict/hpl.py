"""An HPL twin: LU with partial pivoting on a 2-D P x Q block-cyclic process grid (numpy).

The N x N matrix is distributed in NB x NB blocks, block (I, J) on process row I mod P and
process column J mod Q (ranks row-major on the grid, as HPL's default). The algorithm is
HPL 2.2's right-looking variant with its default HPL.dat settings (HPL_pdgesvK2):

1. panel factorisation by the process column that owns it (HPL_pdfact, recursive with two
   halves down to leaves of 8 columns): each column's pivot is found by an ``Allreduce`` over
   the process column (HPL_pdmxswp's exchange) whose user operation keeps the row of largest
   magnitude (ties: the lowest row index) and the current row of the diagonal position, so
   that every process of the column holds both after one collective; the right half of a
   split is updated with one matrix product;
2. the panel (its pivots, its top block L1 and each process row's part of L) goes along every
   process row by HPL's modified increasing ring (BCAST 1rM: the root sends to its two
   successors, the others forward to the next; point-to-point, probed with ``Iprobe``);
3. the update (HPL_pdupdateTT) of a range of local columns: the row interchanges and the
   broadcast of the row block U down the process column in one exchange (SWAP: ``binexch``,
   HPL_pdlaswp00T's binary exchange, log2 P steps; ``long``, HPL_pdlaswp01T's spread of the
   displaced rows from the diagonal process row and roll of U's pieces, P - 1 steps; ``mix``,
   HPL.dat's default: long when more than 64 local columns are swapped, binexch otherwise),
   then every process solves its copy of U with L1 and updates A22 -= L2 U by chunks of NB
   columns, probing the next panel's broadcast between chunks;
4. look-ahead of depth 1 (HPL's default DEPTH): the process column that owns panel k + 1
   updates those columns first, factors panel k + 1 and starts its broadcast, then everyone
   updates the rest of its columns with panel k while that broadcast progresses.

As in HPL, the interchanges are not applied to the columns left of a panel (HPL solves with
the augmented right-hand side instead); the residual check applies them to the gathered L.
Not modelled: HPL's equilibration in the long swap, the augmented column b, the backward
solve. The elapsed time and HPL's flop count 2/3 N^3 + 3/2 N^2 give the Gflops line, printed
like HPL's ``WR`` line.

Usage: hpl.py N [NB] [P [Q]] [--ratio=R] [--depth=1] [--swap=mix] [--swap-threshold=64]
              [--matrix=dominant|random] [--pivots=uniform|diagonal]
              [--sample] [--fold] [--no-check] [--panels=K]
  P x Q must be the number of ranks (Q defaults to ranks / P; without P: the largest divisor P
  of the rank count with R P^2 <= ranks, R = 1 by default: the squarest grid with P <= Q;
  --ratio=4 gives P:Q about 1:4, HPL's usual advice for Ethernet clusters).
  --depth   look-ahead depth, 0 or 1 (HPL.dat's DEPTHs; 1 by default, as HPL.dat)
  --swap    binexch, long or mix (HPL.dat's SWAP 0, 1, 2; mix by default, threshold 64)
  --matrix  dominant (default): uniform entries in [-0.5, 0.5) plus 2 on the diagonal (few row
            interchanges); random: HPL_pdmatgen's kind, uniform in [-0.5, 0.5), no boost
  --pivots  with --sample or --fold, where the matrix content is fake (a constant: every pivot
            would be the diagonal row and no row would move): uniform (default) draws panel
            k's pivots from a generator seeded by k, pivot j uniform among the rows k0 + j ..
            N - 1 not yet eliminated, which is the law of partial pivoting on a matrix of
            independent identically distributed entries (the remaining rows are exchangeable),
            so the swap :: U exchange moves the rows, message sizes and partners of HPL on a
            random matrix; diagonal: no interchange (the earlier folded runs)
  --sample  under smpyrun, time only a few chunks of the trailing updates, of the U solves and
            of the panels' right-half updates (smpy.sample, statistics shared by all ranks,
            per unit of work and by height class) and inject the rest; results are garbage
  --fold    allocate the matrix and the panel / U / swap buffers with smpy.shared_array
            (memory folding; the pivots and the panel's top block stay private)
  --no-check skip the residual check (it gathers the factors on rank 0; for small N)
  --panels=K factor the first K panels only (no check): an emulation's cost per panel at scale
"""
import sys
import time

import numpy as np
from _hints import sample, shared_array, untimed
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def option(name, default):
    return next((a.split("=", 1)[1] for a in sys.argv if a.startswith(f"--{name}=")), default)


args = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(args[0]) if args else 1000
NB = int(args[1]) if len(args) > 1 else 64
RATIO = float(option("ratio", 1))
DEPTH = int(option("depth", 1))
SWAP = option("swap", "mix")
SWAP_THRESHOLD = int(option("swap-threshold", 64))
MATRIX = option("matrix", "dominant")
PIVOTS = option("pivots", "uniform")
if len(args) > 2:
    P = int(args[2])
    Q = int(args[3]) if len(args) > 3 else size // max(P, 1)
else:  # the largest divisor P of the rank count with RATIO * P * P <= ranks
    P = max(p for p in range(1, size + 1) if size % p == 0 and RATIO * p * p <= size)
    Q = size // P
problem = (f"the grid {P} x {Q} needs {P * Q} ranks, not {size}" if P * Q != size else
           f"--depth={DEPTH}: 0 or 1" if DEPTH not in (0, 1) else
           f"--swap={SWAP}: binexch, long or mix" if SWAP not in ("binexch", "long", "mix") else
           f"--matrix={MATRIX}: dominant or random" if MATRIX not in ("dominant", "random") else
           f"--pivots={PIVOTS}: uniform or diagonal" if PIVOTS not in ("uniform", "diagonal") else
           "")
if problem:
    if rank == 0:
        print(f"hpl.py: {problem}", file=sys.stderr)
    comm.Barrier()  # rank 0 has said why before anyone exits
    sys.exit(2)
SAMPLE, FOLD = "--sample" in sys.argv, "--fold" in sys.argv
CHECK = "--no-check" not in sys.argv and not (SAMPLE or FOLD)
# fake content: the pivots are drawn (--pivots=uniform) instead of found in the data
DRAWN = (SAMPLE or FOLD) and PIVOTS == "uniform"
# --panels=K: stop after the first K panels (to measure an emulation's cost per panel at scale;
# the elapsed time is then that of the partial factorisation)
PANELS = int(option("panels", 0))
if PANELS:
    CHECK = False
LEAF = 8
TAG_PANEL, TAG_SWAP = 30, 40
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
# a panel message: w pivots (private), the w x w top block L1, then this process row's rows
# of the panel (folded); two of them with look-ahead (panel k in use, k + 1 arriving)
HEAD = NB + NB * NB
PBUF = HEAD + mloc * NB
pbufs = [shared_array(PBUF, enabled=FOLD, shared=[(NB * 8, PBUF * 8)]) for _ in range(1 + DEPTH)]
ubuf = shared_array(NB * max(nloc, 1), enabled=FOLD)  # my copy of the row block U
# the rows a swap moves (U's rows and the displaced ones), gathered by the exchange
xbuf = shared_array((2 * NB, max(nloc, 1)), enabled=FOLD)


def column(j):
    """Column j of the test matrix (--matrix=dominant: the same as examples/predict/lu.py's;
    random: without the diagonal boost, as HPL's generator)."""
    c = np.random.default_rng(j).random(N) - 0.5
    if MATRIX == "dominant":
        c[j] += 2.0
    return c


def drawn_pivots(k0, w):
    """--pivots=uniform: panel k0 / NB's w pivots, pivot j uniform among the rows k0 + j ..
    N - 1 (partial pivoting on i.i.d. entries: the rows not yet eliminated are exchangeable,
    so the largest of a column is at any of them alike), from a generator seeded by the
    panel (the same on every process and in every run)."""
    j = np.arange(w)
    left = N - k0 - j
    u = np.random.default_rng((2017, k0 // NB)).random(w)
    return k0 + j + np.minimum((u * left).astype(np.int64), left - 1)


# --fold: no generation at all. The values are the shared block's garbage, and writing the
# whole matrix would only fault in page-table entries: at N = 65536 and 192 ranks, 8.4 M minor
# faults and the emulation's largest start-up cost, before the timed factorisation
if SAMPLE and not FOLD:  # the values are garbage anyway: touch the memory as generating would
    A.fill(0.5)
elif not FOLD:
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
    """Allreduce operation of the pivot search (HPL_pdmxswp's buffer): [|value|, global row,
    that row's w entries, has-current-row flag, the current row's w entries]. The larger
    |value| wins, then the lower row index (a total order: the result does not depend on the
    reduction's order); the current row (the diagonal position's, held by one process only)
    is carried along."""
    a = np.frombuffer(inbuf, dtype=np.float64)
    b = np.frombuffer(inoutbuf, dtype=np.float64)
    h = (a.size + 1) // 2
    if a[h] > 0.0:
        b[h:] = a[h:]
    if a[0] > b[0] or (a[0] == b[0] and 0 <= a[1] < b[1]):
        b[:h] = a[:h]


MAXROW = MPI.Op.Create(_maxrow, commute=True)
_rowtypes = {}


def rowtype(n):
    """One pivot-search buffer of n doubles as a single element, so that no Allreduce
    algorithm splits it (the operation needs it whole)."""
    if n not in _rowtypes:
        _rowtypes[n] = MPI.DOUBLE.Create_contiguous(n).Commit()
    return _rowtypes[n]


class Panel:
    """Factorisation of panel k by the process column that owns it, into a panel buffer."""

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
        w = self.w
        self.cand = np.empty(3 + 2 * w)  # see _maxrow
        self.best = np.empty(3 + 2 * w)
        self.drawn = drawn_pivots(self.k0, w) if DRAWN else None

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
        # --sample: timed per unit of work (m h (b - h)) by height class; a visit is one
        # product, its own warm-up (smpy/sample-warmup:visit: 3 samples of the cold product)
        for _ in sample(range(1), iters=3, threshold=0.05, scope="global", warmup=2,
                        tag=f"rlu{b - a}x{height_class(m)}", work=m * (h - a) * (b - h),
                        enabled=SAMPLE):
            self.W[s:, h:b] -= self.W[s:, a:h] @ u
        self.factor(h, b)

    def pivot(self, j, b):
        """Column j: find the pivot over the process column, swap, scale, update the leaf."""
        W, s, w = self.W, self.below(j), self.w
        cand = self.cand
        if W.shape[0] > s:
            i = s + int(np.argmax(np.abs(W[s:, j])))
            v = abs(W[i, j])
            # a garbage NaN (--fold) must still beat "no candidate" (-1)
            cand[0], cand[1], cand[2:2 + w] = v if v == v else 0.0, self.g[i], W[i]
        else:
            cand[0], cand[1], cand[2:2 + w] = -1.0, -1.0, 0.0
        if myrow == self.pr:  # the current row k0 + j rides along (HPL_pdmxswp)
            cand[2 + w], cand[3 + w:] = 1.0, W[j]
        else:
            cand[2 + w:] = 0.0
        if P > 1:
            t = rowtype(cand.size)
            colcomm.Allreduce([cand, 1, t], [self.best, 1, t], op=MAXROW)
        else:
            self.best[:] = cand
        g, row = int(self.best[1]), self.best[2:2 + w]
        if self.drawn is not None:  # fake content: the pivot a random matrix would give
            g = int(self.drawn[j])
        self.piv[j] = g
        gj = self.k0 + j
        if g != gj and (g // NB) % P == myrow:  # the current row goes where the pivot was
            W[local_row(g) - row0[self.k0 // NB]] = self.best[3 + w:]
        if myrow == self.pr:
            W[j] = row
        self.top[j] = row
        s1 = self.below(j + 1)
        d = row[j]
        if d != 0.0:
            W[s1:, j] /= d
        if j + 1 < b:
            W[s1:, j + 1:b] -= np.outer(W[s1:, j], row[j + 1:b])


class PanelData:
    """A factored panel as every process of a process row holds it (in a panel buffer)."""

    def __init__(self, k, buf):
        self.k, self.k0, self.w = k, k * NB, min(NB, N - k * NB)
        self.pc, self.pr = k % Q, k % P
        self.r0 = row0[k]
        self.mk = mloc - self.r0  # my rows >= k0
        w, mk = self.w, self.mk
        self.msg = buf[:HEAD + mk * w]
        self.pivbuf = buf[:w]
        self.top = buf[NB:NB + w * w].reshape(w, w)
        self.L = buf[HEAD:HEAD + mk * w].reshape(mk, w)
        self.plans = {}

    def fill(self, pan):
        """Copy a just-factored Panel into the buffer (the owner column)."""
        pan.view[...] = pan.W
        self.pivbuf[:] = pan.piv
        self.top[...] = pan.top
        self.L[...] = pan.W

    def pivots(self):
        return self.pivbuf.astype(np.int64)


class RowBcast:
    """HPL's modified increasing ring (BCAST 1rM) of a panel along my process row: the root
    sends to its successor and the one after; every other process receives from its
    predecessor (the one after the root from the root) and forwards to its successor, except
    the one after the root and the last one. ``probe`` (HPL_bcast) receives and forwards if
    the panel is there; ``wait`` enforces it (HPL spins on HPL_bcast: here a blocking Recv,
    the same simulated time up to the probes' granularity)."""

    def __init__(self, pd):
        self.pd, self.tag = pd, TAG_PANEL + pd.k % 2
        root = pd.pc
        self.done = Q == 1
        nxt, prev = (mycol + 1) % Q, (mycol - 1) % Q
        self.partner = root if Q > 2 and (prev - 1) % Q == root else prev
        self.forward = prev != root and nxt != root
        if mycol == root and Q > 1:
            rowcomm.Send(pd.msg, dest=nxt, tag=self.tag)
            if Q > 2:
                rowcomm.Send(pd.msg, dest=(nxt + 1) % Q, tag=self.tag)
            self.done = True

    def probe(self):
        if not self.done and rowcomm.Iprobe(source=self.partner, tag=self.tag):
            self.receive()
        return self.done

    def wait(self):
        if not self.done:
            self.receive()

    def receive(self):
        # the Python between the Recv and the forwarding Send is not computation (HPL's C
        # does it in nanoseconds, below SMPI's cpu-threshold): untimed, as in exchange
        with untimed():
            rowcomm.Recv(self.pd.msg, source=self.partner, tag=self.tag)
            if self.forward:
                rowcomm.Send(self.pd.msg, dest=(mycol + 1) % Q, tag=self.tag)
        self.done = True


def interchanges(k0, piv):
    """A panel's row interchanges (row k0+j <-> row piv[j], in order) as one permutation of
    the rows they touch: (rows, source rows); rows[:w] are k0 .. k0 + w - 1."""
    rows = np.union1d(np.arange(k0, k0 + piv.size), piv)
    src = rows.tolist()
    for j, p in enumerate(np.searchsorted(rows, piv).tolist()):
        src[j], src[p] = src[p], src[j]
    return rows, np.asarray(src, dtype=np.int64)


class SwapPlan:
    """Who holds what in a panel's swap :: U broadcast, the same on every process of the
    column. The rows moved are U's w rows (row k0 + j's new content, from wherever the pivot
    was) and the displaced ones (the old contents of the top block, all on the diagonal
    process row, going where the pivots were). They travel in one array X: the displaced rows
    first (ordered by their destination), then U's rows ordered by the key of their holder,
    so that what a process holds at every step of the exchange is one slice of X.
    Distances are process rows counted from the diagonal one. ``steps``: my part of the
    exchange, worked out once per panel and algorithm (the panel's updates reuse it)."""

    def __init__(self, pd, algo):
        w, pr = pd.w, pd.pr
        rows, src = interchanges(pd.k0, pd.pivots())
        self.ip2 = 1 << (P.bit_length() - 1)  # the largest power of 2 <= P

        def dist(g):
            return ((g // NB) % P - pr) % P

        ddst, dsrc = rows[w:], src[w:]
        dd = dist(ddst)
        o = np.lexsort((ddst, dd))
        self.ddst, self.dsrc, self.ddist = ddst[o], dsrc[o], dd[o]
        self.nd = nd = ddst.size
        usrc = src[:w]
        e = dist(usrc)
        key = 2 * (e % self.ip2) + e // self.ip2 if algo == "binexch" else e
        o = np.argsort(key, kind="stable")
        self.usrc, self.ukey = usrc[o], key[o]
        self.upos = np.empty(w, dtype=np.int64)  # X row of U's row j
        self.upos[o] = nd + np.arange(w)
        self.mydist = (myrow - pr) % P
        mine = self.key_of(self.mydist, algo)
        sel = self.ukey == mine
        self.own = (nd + int(np.argmax(sel)) if sel.any() else nd, int(sel.sum()))
        self.dmine = self.ddist == self.mydist
        # the local rows I gather into X and scatter back (global -> local indices once)
        a, cnt = self.own
        self.gather_u = local_row(self.usrc[a - nd:a - nd + cnt]) if cnt else None
        self.gather_d = local_row(self.dsrc) if self.mydist == 0 and nd else None
        self.scatter = (local_row(self.ddst[self.dmine]), np.flatnonzero(self.dmine)) \
            if self.dmine.any() else None
        self.steps = (binexch if algo == "binexch" else spread_roll)(self, pr)

    def key_of(self, e, algo):
        return 2 * (e % self.ip2) + e // self.ip2 if algo == "binexch" else e

    def lo(self, key):
        """First X row of the U rows of key >= key (the displaced rows count as key 0)."""
        return 0 if key <= 0 else self.nd + int(np.searchsorted(self.ukey, key))


def exchange(steps, X):
    """My steps of an exchange, in order: (X rows sent, X rows received, process row of the
    partner); empty parts are not sent (HPL posts no message of length 0). Under smpy the
    loop's own Python time between the messages is not computation (``untimed``): HPL's C
    does that bookkeeping in nanoseconds, below SMPI's cpu-threshold."""
    with untimed():
        for sa, sb, ra, rb, partner in steps:
            if sb > sa and rb > ra:
                colcomm.Sendrecv(X[sa:sb], dest=partner, sendtag=TAG_SWAP, recvbuf=X[ra:rb],
                                 source=partner, recvtag=TAG_SWAP)
            elif sb > sa:
                colcomm.Send(X[sa:sb], dest=partner, tag=TAG_SWAP)
            elif rb > ra:
                colcomm.Recv(X[ra:rb], source=partner, tag=TAG_SWAP)


def binexch(plan, pr):
    """HPL_pdlaswp00T's pattern: the processes beyond the largest power of two ip2 hand their
    rows to their partner d - ip2, the ip2 first ones exchange all they hold with d ^ 2^s for
    s < log2 ip2 (then everyone of them holds X), and hand X back to d + ip2. Returns my
    steps for :func:`exchange` (X rows as ``(start, stop)``; ``None`` stop: all of X)."""
    d, ip2, nx = plan.mydist, plan.ip2, plan.nd + int(plan.ukey.size)
    rank_of = lambda e: (pr + e) % P  # noqa: E731
    v = d % ip2
    if d >= ip2:
        a, n = plan.own
        return [(a, a + n, 0, 0, rank_of(v)), (0, 0, 0, nx, rank_of(v))]
    steps = []
    if d + ip2 < P:  # my partner's rows (key 2 d + 1)
        steps.append((0, 0, plan.lo(2 * d + 1), plan.lo(2 * d + 2), rank_of(d + ip2)))
    s = 1
    while s < ip2:
        base = v & ~(s - 1)
        pbase = base ^ s
        steps.append((plan.lo(2 * base), plan.lo(2 * (base + s)), plan.lo(2 * pbase),
                      plan.lo(2 * (pbase + s)), rank_of(v ^ s)))
        s <<= 1
    if d + ip2 < P:
        steps.append((0, nx, 0, 0, rank_of(d + ip2)))
    return steps


def spread_roll(plan, pr):
    """HPL_pdlaswp01T's pattern: the diagonal process row spreads the displaced rows to their
    destinations down a binomial tree (HPL_spreadT), then the pieces of U roll around the
    column (HPL_rollT: P - 1 steps, alternately with the previous and the next process).
    Returns my steps for :func:`exchange`."""
    d, nd = plan.mydist, plan.nd
    rank_of = lambda e: (pr + e) % P  # noqa: E731
    dlo = lambda e: int(np.searchsorted(plan.ddist, e))  # noqa: E731
    steps = []
    m = 1 << ((P - 1).bit_length() - 1)
    while m >= 1:
        if d % (2 * m) == 0 and d + m < P:
            steps.append((dlo(d + m), dlo(min(d + 2 * m, P)), 0, 0, rank_of(d + m)))
        elif d % (2 * m) == m:
            steps.append((0, 0, dlo(d), dlo(min(d + m, P)), rank_of(d - m)))
        m //= 2
    # piece e of U: X rows [bounds[e], bounds[e + 1])
    bounds = (nd + np.searchsorted(plan.ukey, np.arange(P + 1))).tolist()

    def piece(e):
        e %= P
        return bounds[e], bounds[e + 1]

    for k in range(P - 1):
        step = k >> 1
        if (d + k) & 1:
            steps.append((*piece(d + step), *piece(d - step - 1), rank_of(d - 1)))
        else:
            steps.append((*piece(d - step), *piece(d + step + 1), rank_of(d + 1)))
    return steps


def swap(pd, ca, cb, U):
    """The interchanges of panel pd on my local columns ca..cb, and U (its w rows, before the
    solve) in every process of the column (HPL_pdlaswp00T / 01T)."""
    n = cb - ca
    if P == 1:
        rows, src = interchanges(pd.k0, pd.pivots())
        U[...] = A[local_row(src[:pd.w]), ca:cb]
        keep = rows[pd.w:] != src[pd.w:]
        A[local_row(rows[pd.w:][keep]), ca:cb] = A[local_row(src[pd.w:][keep]), ca:cb]
        return
    algo = SWAP if SWAP != "mix" else ("long" if n > SWAP_THRESHOLD else "binexch")
    plan = pd.plans.get(algo) or pd.plans.setdefault(algo, SwapPlan(pd, algo))
    X = xbuf.reshape(-1)[:(plan.nd + pd.w) * n].reshape(-1, n)  # contiguous rows
    if plan.gather_u is not None:  # my rows of U
        a, cnt = plan.own
        X[a:a + cnt] = A[plan.gather_u, ca:cb]
    if plan.gather_d is not None:  # the displaced ones, if I am the diagonal row
        X[:plan.nd] = A[plan.gather_d, ca:cb]
    exchange(plan.steps, X)
    if plan.scatter is not None:
        A[plan.scatter[0], ca:cb] = X[plan.scatter[1]]
    U[...] = X[plan.upos]


def update(pd, ca, cb, bc=None):
    """HPL_pdupdateTT: apply panel pd to my local columns ca..cb: the swap :: U broadcast,
    then by chunks of NB columns U = L1^-1 U (every process, redundantly) and A22 -= L2 U
    (below the top block), probing the broadcast bc after each chunk until it is done; the
    diagonal process row stores U in A."""
    nt = cb - ca
    if nt <= 0:
        if bc is not None:
            bc.wait()
        return
    w = pd.w
    U = ubuf[:w * nt].reshape(w, nt)
    swap(pd, ca, cb, U)
    busy = bc is not None and not bc.probe()
    diag = myrow == pd.pr
    s = w if diag else 0
    m = pd.mk - s
    L21 = pd.L[s:]
    T = A[pd.r0 + s:mloc, ca:cb]
    c = 0
    while c < nt:
        e = min(nt, c + NB) if busy else nt  # once the panel is there: the rest in one go
        # --sample: chunks timed per unit of work (HPL's dtrsm and dgemm of a chunk: 2 w
        # (m + w / 2) flops per column), by height class. The first two chunks of every
        # visit are its warm-up (cold: 1.4 and 1.2 times the steady rate on 3 ranks), with
        # statistics of their own; the steady samples follow them back to back. Six samples
        # each: with two, a class's head was the first, coldest visits of one or two ranks
        for x in sample(range(c, e, NB), iters=6, threshold=0.05, scope="global", warmup=2,
                        tag=f"upd{w}x{height_class(m)}", enabled=SAMPLE,
                        work=lambda x, e=e: (m + w / 2) * (min(e, x + NB) - x)):
            y = min(e, x + NB)
            U[:, x:y] = unit_lower_solve(pd.top, U[:, x:y])
            if m > 0:
                T[:, x:y] -= L21 @ U[:, x:y]
        c = e
        busy = busy and not bc.probe()
    if diag:
        A[pd.r0:pd.r0 + w, ca:cb] = U
    if bc is not None:
        bc.wait()


def factor(k):
    """Panel k: factored by its process column into a panel buffer, its broadcast started."""
    pd = PanelData(k, pbufs[k % len(pbufs)])
    if mycol == pd.pc:
        pan = Panel(k)
        pan.factor()
        pd.fill(pan)
    return pd, RowBcast(pd)


def trailing(k):
    """My local columns right of panel k (and of panel k + 1 if I own it and look ahead)."""
    t0 = col0[k + 1] if k + 1 < npanels else nloc
    if DEPTH and k + 1 < npanels and mycol == (k + 1) % Q:
        t0 += min(NB, N - (k + 1) * NB)
    return t0


def factorise(npan, piv_all):
    """HPL_pdgesvK2 (depth 1) or HPL_pdgesv0 (depth 0) on the first npan panels."""
    pd, bc = factor(0)
    bc.wait()
    for k in range(npan):
        if CHECK:
            piv_all[pd.k0:pd.k0 + pd.w] = pd.pivots()
        nxt = None
        if DEPTH and k + 1 < npan:
            if mycol == (k + 1) % Q:  # update the next panel's columns first, factor it
                c1 = col0[k + 1]
                update(pd, c1, c1 + min(NB, N - (k + 1) * NB))
            nxt = factor(k + 1)
        update(pd, trailing(k), nloc, nxt[1] if nxt else None)
        if not DEPTH and k + 1 < npan:
            nxt = factor(k + 1)
            nxt[1].wait()
        if nxt:
            pd = nxt[0]


def check(piv_all):
    """Gather the factors on rank 0: scaled residual ||PA - LU|| / (||A|| N eps), after
    applying each panel's interchanges to the columns left of it (which HPL never swaps)."""
    parts = comm.gather((myrows, mycols, A[:mloc, :nloc]), root=0)
    if rank != 0:
        return
    LU = np.empty((N, N))
    for r, c, blk in parts:
        LU[np.ix_(r, c)] = blk
    for k in range(1, npanels):
        k0 = k * NB
        rows, src = interchanges(k0, piv_all[k0:k0 + min(NB, N - k0)])
        LU[rows, :k0] = LU[src, :k0]
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
    npan = min(npanels, PANELS) if PANELS else npanels
    comm.Barrier()
    t0 = MPI.Wtime()
    c0 = time.thread_time()
    factorise(npan, piv_all)
    comm.Barrier()
    t1 = MPI.Wtime()
    cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
    if rank == 0:
        t = t1 - t0
        gflops = (2.0 / 3.0 * N ** 3 + 1.5 * N ** 2) / t / 1e9
        print(f"hpl: N={N} NB={NB} P={P} Q={Q} ranks={size} depth={DEPTH} swap={SWAP}"
              + ("" if CHECK else " (not checked)")
              + (f" first {npan} of {npanels} panels only" if PANELS else ""))
        print(f"{'T/V':<10}{'N':>8}{'NB':>6}{'P':>6}{'Q':>6}{'Time':>14}{'Gflops':>14}")
        print(f"{'WR00C2R8':<10}{N:>8}{NB:>6}{P:>6}{Q:>6}{t:>14.2f}{gflops:>14.4e}")
    if CHECK:
        check(piv_all)
    if rank == 0:
        print(f"# elapsed {t1 - t0:.6f} s")
        print(f"# cpu {cpu:.6f} s")


main()
