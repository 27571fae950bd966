r"""Memory folding (SMPI's ``SMPI_SHARED_MALLOC`` semantics) for numpy arrays.

Simulating 1024 ranks that each allocate 100 MB would need 100 GB; most such buffers hold
data whose values do not matter to the prediction (the matrix of a benchmark, a halo buffer).
``smpy.shared_array(shape, dtype)`` returns an array whose memory is *folded*:

``global`` (default, ``smpi/shared-malloc:global``)
    the array's virtual pages all map the same block of ``smpi/shared-malloc-blocksize``
    bytes (1 MiB) of one unlinked temporary file, like SMPI's bogus file: an array of any
    size, and every rank's array, costs about one block of physical memory.
``local``
    one ordinary array per call site (``file:line``), shared by every rank that calls that
    site with the same shape and dtype.
``no``
    a private ``numpy.empty`` array (folding off: results are exact again).

Timing: computation on folded arrays reads and writes the block, not the arrays' sizes of
memory. With SMPI's 1 MiB block that is cache-resident, and measured computation runs faster
than in a real run (LU N=3072 on 2 ranks, ``--fold`` alone: predicted time -25 %); a block
larger than the last-level cache (``--cfg=smpi/shared-malloc-blocksize:64MiB`` on a 32 MiB L3)
brings it back within the run-to-run noise (-5 %), for at most that much more memory.

``shared=[(start, stop), ...]`` (bytes, SMPI's ``SMPI_PARTIAL_SHARED_MALLOC``) folds only
those ranges; the rest stays private to the rank (page-aligned: a partially covered page is
private). Folded data is garbage by design: values written by one rank are seen, and
overwritten, by all. Outside smpyrun, :func:`smpy.shared_array` is ``numpy.zeros``.

Messages skip copies of folded bytes: the folded ranges are registered in
:mod:`smpy.support.folded`, and the runtime copies only the bytes that are private in both
the send and the receive buffer (SMPI's copy callback); simulated time is unchanged.

Memory: with ``global``, resident memory is about :math:`B + P` for :math:`B` the block and
:math:`P` the private pages, whatever the array sizes and the number of ranks; virtual
memory is the arrays' sizes (Linux ``mmap``; other systems fall back to ``local``). RSS,
though, counts a folded page once per mapping that touched it: :math:`m` mappings touching
:math:`s` bytes each show :math:`m s` of RSS for :math:`B` of memory. With
``smpy/shared-malloc-trim:SIZE`` (off by default), when a burst of another rank than the last
one starts, the folder looks at the process's resident shared pages and, past SIZE bytes,
drops the page-table entries of the other ranks' folded ranges (``madvise(DONTNEED)``: the data
stays in the block), so RSS stays near SIZE plus the running rank's folded pages (what a real
rank holds as its own memory). The running rank keeps its entries (see :meth:`Folder.switch`).

Page faults on folded memory are the emulator's, not the program's. Each time a mapping
touches a folded page it has no entry for (its first touch, or the first after a trim), the
kernel takes a minor fault that maps the page and its neighbours (fault-around: 16 pages of
4 KiB here). A real rank's matrix is private memory, touched when it was generated and mapped
by transparent huge pages since. A timed span (a burst, a sampled iteration) that mapped
:math:`p` folded pages in :math:`f` minor faults leaves out

.. math::

    n\,c, \qquad n = \min\left(f, \lceil p / k \rceil\right)

seconds, for :math:`k` the pages one such fault maps and :math:`c` its cost in thread CPU time
beyond the memory access itself, both measured when the first folded array is made: over a
64 MiB range folded like an array, 8 rounds of dropping the entries (``DONTNEED``) then reading
and writing one byte per 64 KiB (the fault-around window: each touch faults), less the same
touches with the entries present; the median (1.6-2.1 us here with a 64 MiB block, 1.1 us with
1 MiB). Back to back over block pages mapped before, as a burst takes its faults: a fault's
cost falls from 3-5 us on cold kernel data (a few faults after a cache eviction, the earlier
calibration) to 1.6 us when thousands follow each other over pages the block's other mappings
use too. :math:`p` is the change of the process's resident shared pages
(``/proc/self/statm``) over the span, :math:`f` the thread's minor faults
(``getrusage(RUSAGE_THREAD)``): faults on private memory (a fresh temporary's pages) stay in
the span, as they would in a real run. This holds with or without trimming (with it, the
faults recur after every trim; without, each page faults once per mapping).

Sampled iterations (:mod:`smpy.timing.sampling`) take no such fault: before a sampled loop's
visit (or a sampled call) times anything, every folded page of the rank gets its page-table
entry (``madvise(MADV_POPULATE_READ)``, the emulator's time, once per rank between two trims;
:meth:`Folder.map_rank`), as a real rank's memory has them. Their times set the estimate of
every iteration not run, and the estimate above is not good enough there: on 1 x 12 ranks at
N = 20000 with fig12.py's 32 MiB trim, HPL's update chunk after each probe of the panel
broadcast re-faulted the rank's whole trailing matrix (4000 faults a chunk, 1.1 M a run),
which cost 4.1 us a fault in those chunks (quartiles 3.2-4.9, from the chunks' times against
unfolded runs') where the calibration gives 2.0 us, and the folded runs predicted 11 % more
than unfolded ones (medians of 3). Mapping a rank's 267 MB matrix takes 7 ms here, where its
re-faults took 9.5 ms in one chunk. Bursts outside sampled loops keep the estimate.

Measured (``benchmarks/predict/fold_update.py``, ``fold_update.txt``): one 128-column chunk of
HPL's trailing update, ``A[:, x:x+128] -= L @ U``, on an m x n matrix (rows 8 n bytes apart),
on private memory, on folded memory with its entries present (0.88-1.02 of the private time)
and on folded memory trimmed just before, whose faults cost 0.1-1.0 times the computation:
corrected, the trimmed chunk takes 0.87-1.14 of the private time from 2 MiB to 2.7 GiB
matrices. The earlier model (every fault of a span while trimming had dropped pages, private
ones included, at the whole time of a fault after a cache eviction, 2.6-3.8 us; first
touches charged in full) gave 0.40-0.98, and HPL at N = 65536 on 12 ranks predicted 144 %
of the node's peak with the trim, 4.4 times the peak's time without. The residual: a fault's
cost in a burst varies with what the computation leaves in the caches (1.2-2.5 us here).
Files mapped with ``mmap`` count as shared pages too: their faults during a span are left out
the same way. Creating a folded array (its mappings, the calibration) is the emulator's time
too: it leaves the burst.

The block lives in anonymous shared memory (``memfd_create``): a file on a disk file system
would have its dirty pages tracked and written back.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
import weakref
from typing import Any

from smpy.support import cext
from smpy.support import folded as _folded
from smpy.support.config import checked, declare, parse_int
from smpy.support.units import parse_size

MODES = ("global", "local", "no")


def _bytes(v: Any) -> int:
    size = parse_size(v) if isinstance(v, str) else float(parse_int(v))
    if not size == size or size in (float("inf"), float("-inf")):
        raise ValueError(f"expected a size in bytes, found {v!r}")
    return int(size)


def _parse_mode(v: Any) -> str:
    s = str(v).strip().lower()
    return {"yes": "global", "on": "global", "off": "no", "false": "no", "true": "global"}.get(s, s)


SHARED_MALLOC = declare("smpi/shared-malloc", "global",
                        "Memory folding of smpy.shared_array: global (one block for everything), local "
                        "(one array per call site), no", parse=_parse_mode, choices=MODES)
BLOCKSIZE = declare("smpi/shared-malloc-blocksize", 1048576,
                    "Size of the block that global folding maps over and over (bytes); make it larger "
                    "than the last-level cache when the application computes on folded arrays",
                    parse=checked(_bytes, lambda v: 4096 <= v <= 2**36, "a size from 4 KiB to 64 GiB"))

TRIM = declare("smpy/shared-malloc-trim", 0,
              "Global folding: when another rank starts computing and the folded pages mapped by "
              "the process (counted once per mapping, as RSS counts them) exceed this many bytes, "
              "drop the page-table entries of the other ranks' folded mappings (madvise DONTNEED; "
              "the data stays in the shared block; sampled iterations get their rank's entries "
              "back first, other computation's page faults are estimated and left out of its "
              "time); 0 = never (the default)",
              parse=checked(_bytes, lambda v: 0 <= v <= 2**50, "a size of 0 or more"))

_PAGE = mmap.PAGESIZE
#: os.pread and os.open as this module found them: a run's file I/O shim
#: (smpy.shim.fileio) replaces the os module's, and the statm reads of every MPI call are the
#: emulator's, not a rank's file I/O (through the shim: 34 more bytecodes a read)
_os_pread = os.pread
_os_open = os.open
_MADV_DONTNEED = 4
_MADV_POPULATE_READ = 22
#: folded mappings unmapped so far (by _Mapping.__del__): the resident shared pages change
#: without a page fault then
_unmaps = 0
_PROT_RW = mmap.PROT_READ | mmap.PROT_WRITE
#: the range the fault cost is calibrated over, and the distance between its touches (the
#: kernel's fault-around window: each touch takes one fault)
_CAL_SPAN = 64 << 20
_CAL_STRIDE = 64 << 10
_MAP_FIXED = 0x10


def _libc() -> Any:
    import ctypes.util  # here: it imports subprocess and tempfile

    lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_long]
    lib.munmap.restype = ctypes.c_int
    lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.madvise.restype = ctypes.c_int
    lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return lib


_LIBC: Any = None



def _map_limit_hint() -> str:
    """When the process is near the kernel's limit on memory mappings (each folded block is
    one), say so and how to need fewer: larger blocks, or a higher vm.max_map_count."""
    try:
        with open("/proc/sys/vm/max_map_count", encoding="ascii") as fh:
            limit = int(fh.read())
        with open("/proc/self/maps", "rb") as fh:
            used = sum(1 for _ in fh)
    except (OSError, ValueError):
        return ""
    if used < 0.9 * limit:
        return ""
    return (f": {used} memory mappings, the kernel's limit is {limit} (vm.max_map_count); "
            "fold in larger blocks (--cfg=smpi/shared-malloc-blocksize:64MiB) or raise the limit "
            "(sysctl vm.max_map_count=262144)")

class _Mapping:
    """A folded virtual range; unmapped when the last array using it goes away."""

    __slots__ = ("addr", "size", "folded", "owner", "__weakref__")

    def __init__(self, addr: int, size: int, owner: int = -1) -> None:
        self.addr = addr
        self.size = size
        #: the rank that made it (-1: none), whose bursts are the only ones to touch it
        self.owner = owner
        #: the folded (shared) ranges, absolute addresses: the only ones trimming may drop
        self.folded: list[tuple[int, int]] = []

    def __del__(self) -> None:
        global _unmaps
        if _LIBC is not None and self.size:
            _unmaps += 1
            _folded.unregister(self.addr, self.size)
            _LIBC.munmap(self.addr, self.size)
            self.size = 0


class Folder:
    """Folded allocations of one run (the bogus file and the per-site arrays)."""

    def __init__(self, mode: str, blocksize: int, trim: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"smpi/shared-malloc: expected one of {', '.join(MODES)}, got {mode!r}")
        if mode == "global" and not sys.platform.startswith("linux"):
            mode = "local"
        self.mode = mode
        self.blocksize = max(_PAGE, (int(blocksize) + _PAGE - 1) // _PAGE * _PAGE)
        self._fd = -1
        self._sites: dict[tuple, Any] = {}
        self.folded_bytes = 0
        self.trim_limit = int(trim) if mode == "global" and sys.platform.startswith("linux") else 0
        self.trims = 0
        #: the folded mappings by owner rank (-1: made outside a rank), and the ranks whose
        #: mappings may have page-table entries (they ran since their last trim)
        self._maps: dict[int, list[weakref.ref]] = {}
        self._touched: set[int] = set()
        #: the rank whose burst runs (see :meth:`switch`)
        self.running = -1
        #: the ranks whose folded pages all have page-table entries (see :meth:`map_rank`);
        #: off where the kernel lacks MADV_POPULATE_READ
        self._whole: set[int] = set()
        self.restoring = True
        self.restored_bytes = 0
        self.switches = 0
        self._statm = -1
        self._shared0 = 0
        #: the thread's minor faults, the unmaps and the resident shared pages at the last
        #: read of statm: without a fault or an unmap since, the pages are the same
        self._seen = (-1, -1, 0)
        #: reads of /proc/self/statm, and looks at the resident size that needed none
        self.statm_reads = 0
        self.statm_saved = 0
        #: thread CPU seconds one minor fault mapping folded pages costs beyond the memory
        #: access, and the pages it maps (measured when the first folded array is made)
        self.refault_cost = -1.0
        self.refault_pages = 1
        #: faults left out of timed spans, and their seconds
        self.excluded_faults = 0
        self.excluded_s = 0.0

    @property
    def counting(self) -> bool:
        """Whether timed spans count their folded page faults (global folding on Linux)."""
        return self.mode == "global" and _RUSAGE_THREAD is not None

    def mark(self) -> tuple[int, int]:
        """(minor faults of the calling thread, resident shared pages of the process) now: the
        start of a timed span. The pages are read from ``/proc/self/statm`` only when the
        thread took a page fault or a folded mapping was unmapped since the last read
        (mappings and trims forget it): resident pages change by faults, unmaps and
        ``DONTNEED``, and only this thread runs the ranks. An MPI call between two bursts
        that took no fault reads ``getrusage`` twice and statm not at all (it read statm
        twice: 0.8 us a read on an idle machine, several on a loaded one)."""
        faults = thread_faults()
        seen = self._seen
        if seen[0] == faults and seen[1] == _unmaps:
            self.statm_saved += 1
            return faults, seen[2]
        pages = self._shared_bytes() // _PAGE
        self._seen = (faults, _unmaps, pages)
        return faults, pages

    def forget(self) -> None:
        """The resident shared pages changed without a fault (a mapping, a trim): the next
        :meth:`mark` reads them."""
        self._seen = (-1, -1, 0)

    def fault_seconds(self, faults: int, pages: int) -> float:
        """CPU time of the folded page faults of a timed span that took ``faults`` minor
        faults and mapped ``pages`` shared pages: ``min(faults, ceil(pages / k))`` faults
        that map ``k`` pages each (fault-around), at the measured cost. A real rank's memory
        is private and was mapped before (when it was generated): that time is the
        emulator's, and leaves the span."""
        if faults <= 0 or pages <= 0 or self.refault_cost <= 0.0:
            return 0.0
        n = min(faults, -(-pages // self.refault_pages))
        dt = n * self.refault_cost
        self.excluded_faults += n
        self.excluded_s += dt
        return dt

    def fault_seconds_since(self, mark: tuple[int, int]) -> float:
        """:meth:`fault_seconds` of the span that started at ``mark`` (see :meth:`mark`)."""
        faults, pages = self.mark()
        return self.fault_seconds(faults - mark[0], pages - mark[1])

    def _measure_refault(self) -> float:
        """Thread CPU seconds a minor fault on dropped folded pages adds to the access that
        takes it. Over a 64 MiB range folded like an array (the block mapped as many times
        as it takes), 8 rounds of: drop the entries (``DONTNEED``), read and write one byte
        per 64 KiB (the fault-around window: every touch faults), then the same again with
        the entries present; the cost is the median over the rounds of the difference per
        fault, and ``refault_pages`` the shared pages one fault mapped. Back to back over
        the same block pages, as a program's burst takes its faults (thousands in a row over
        pages it mapped before): ~1.6 us per fault with a 64 MiB block here, ~1.1 us with
        1 MiB, where one fault's whole time after a cache eviction is 3-5 us (the earlier
        calibration, 1.5-2.5 times what a matrix update's faults cost: see the module
        notes)."""
        import numpy as np

        span = _CAL_SPAN
        addr = _LIBC.mmap(None, span, _PROT_RW, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return 0.0
        try:
            fd = self._block_fd()
            for off in range(0, span, self.blocksize):
                if _LIBC.mmap(addr + off, min(self.blocksize, span - off), _PROT_RW,
                              mmap.MAP_SHARED | _MAP_FIXED, fd, 0) != addr + off:
                    return 0.0
            view = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(addr))
            view[::_PAGE] = 1  # the block's pages exist (a program's first touches made them)
            touches = view[::_CAL_STRIDE]
            costs, per = [], []
            for _ in range(8):
                _LIBC.madvise(addr, span, _MADV_DONTNEED)
                self.forget()  # the pages went without a fault
                f0, p0 = self.mark()
                t0 = time.thread_time()
                touches += 1
                t1 = time.thread_time()
                f1, p1 = self.mark()
                t2 = time.thread_time()
                touches += 1
                t3 = time.thread_time()
                faults = max(1, f1 - f0)
                costs.append(((t1 - t0) - (t3 - t2)) / faults)
                per.append((p1 - p0) / faults)
            self.refault_pages = max(1, round(sorted(per)[4]))
            del view, touches
            return max(0.0, sorted(costs)[4])
        finally:
            _LIBC.munmap(addr, span)  # the entries go with the range: RSS as before
            self.forget()

    # -- keeping RSS honest: page-table entries of folded mappings -----------------------
    def switch(self, rank: int) -> bool:
        """A burst of ``rank`` starts (the end of an MPI call, outside the timed span): when
        the rank differs from the last one's and the folded pages mapped by the process
        (counted once per mapping, as RSS counts them) exceed ``smpy/shared-malloc-trim``,
        drop the page-table entries of the folded mappings of the other ranks that ran
        since. RSS counts a folded page once per mapping that touched it (144 ranks
        touching their folded 20 MB matrices show 3 GB of RSS over one 1 MiB block): it
        stays near the limit plus the running rank's folded pages, which a real rank holds
        as its own memory. The running rank's entries are kept: a rank that goes on
        computing across MPI calls that do not block takes no fault again (until Nov 2026
        every other MPI call dropped every entry, the running rank's included). True when
        it trimmed."""
        if rank == self.running:
            return False
        self.switches += 1
        self.running = rank
        self._touched.add(rank)
        if not self.trim_limit or len(self._touched) < 2:
            return False
        # the resident shared pages as mark() knows them (statm is read only when the thread
        # faulted since the last read; the mark that follows a switch reuses this read)
        if self.mark()[1] * _PAGE - self._shared0 <= self.trim_limit:
            return False
        self.trim(keep=rank)
        return True

    def map_rank(self, rank: int) -> None:
        """Give every folded page of ``rank``'s mappings a page-table entry
        (``madvise(MADV_POPULATE_READ)``), unless they all have one since the last trim:
        called before a sampled iteration is timed, outside the timing. A real rank's
        matrix is private memory, mapped since it was generated; the sampled iterations
        set the estimate of every iteration not run, and an estimate of their page faults
        is not good enough there. HPL's update chunk after a probe of the panel broadcast
        (1 x 12 ranks, N = 20000, 32 MiB trim) re-faulted the rank's whole trailing matrix:
        1.1 M faults a run, whose cost was 4.1 us a fault in those chunks (3.2-4.9) where
        the calibration gives 2.0; the folded run predicted 11 % more than the unfolded one.
        Mapping a rank's 267 MB matrix takes 7 ms of the emulator's CPU here."""
        if not self.restoring or rank in self._whole:
            return
        alive = []
        for ref in self._maps.get(rank, ()):
            m = ref()
            if m is None or not m.size:
                continue
            alive.append(ref)
            for start, stop in m.folded:
                if _LIBC.madvise(start, stop - start, _MADV_POPULATE_READ) != 0:
                    self.restoring = False  # a kernel before 5.14: the faults are estimated
                    self.forget()
                    return
                self.restored_bytes += stop - start
        self._maps[rank] = alive
        self._whole.add(rank)
        self._touched.add(rank)
        self.forget()

    def _shared_bytes(self) -> int:
        """Resident file-backed/shared pages of the process (``/proc/self/statm``)."""
        if self._statm < 0:
            self._statm = _os_open("/proc/self/statm", os.O_RDONLY)
        self.statm_reads += 1
        return int(_os_pread(self._statm, 128, 0).split()[2]) * _PAGE

    def trim(self, keep: int | None = None) -> None:
        """Drop the page-table entries of the folded ranges (their data is the shared block's,
        kept by the file): with ``keep``, of every rank that ran since its last trim but
        ``keep`` (and of the mappings made outside a rank), else of every mapping; private
        ranges are left alone."""
        owners = list(self._maps) if keep is None else [r for r in self._touched | {-1} if r != keep]
        for r in owners:
            alive = []
            self._whole.discard(r)
            for ref in self._maps.get(r, ()):
                m = ref()
                if m is None or not m.size:
                    continue
                alive.append(ref)
                _dontneed(m.folded)
            if alive:
                self._maps[r] = alive
            else:
                self._maps.pop(r, None)
        self._touched = {keep} if keep is not None else set()
        self.trims += 1
        self.forget()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._statm >= 0:
            os.close(self._statm)
            self._statm = -1
        self._whole = set()
        self._maps = {}
        self._touched = set()
        self._sites.clear()

    def _block_fd(self) -> int:
        """The block's file: anonymous shared memory (``memfd_create``) where the system has
        it, else an unlinked temporary file. A file on a disk file system would have its
        dirty pages tracked (a write fault after each write-back) and written to the disk."""
        if self._fd < 0:
            memfd = getattr(os, "memfd_create", None)
            fd = -1
            if memfd is not None:
                try:
                    fd = memfd("smpy-shmalloc", getattr(os, "MFD_CLOEXEC", 0))
                except OSError:
                    fd = -1
            if fd < 0:
                import tempfile  # here: it imports shutil, random

                fd, path = tempfile.mkstemp(prefix="smpy-shmalloc-")
                os.unlink(path)
            os.ftruncate(fd, self.blocksize)
            self._fd = fd
        return self._fd

    def array(self, shape: Any, dtype: Any, site: tuple[str, int],
              shared: list[tuple[int, int]] | None, owner: int = -1) -> Any:
        import numpy as np

        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if np.ndim(shape) else int(shape)
        nbytes = count * dt.itemsize
        if self.mode == "no":
            return np.zeros(shape, dt)
        if self.mode == "local" or nbytes == 0:
            key = (site, tuple(np.atleast_1d(shape).tolist()), dt.str)
            arr = self._sites.get(key)
            if arr is None:
                arr = self._sites[key] = np.zeros(shape, dt)
                self.folded_bytes += nbytes
                if nbytes:  # folded while the array lives (whether or not the run ends cleanly)
                    addr = _folded.address(arr)
                    _folded.register(addr, nbytes)
                    weakref.finalize(arr, _folded.unregister, addr, nbytes)
            return arr
        return self._global(nbytes, dt, shape, shared, owner)

    def _global(self, nbytes: int, dt: Any, shape: Any, shared: list[tuple[int, int]] | None,
                owner: int) -> Any:
        import numpy as np

        global _LIBC
        if _LIBC is None:
            _LIBC = _libc()
        size = (nbytes + _PAGE - 1) // _PAGE * _PAGE
        # reserve the whole range with private anonymous memory (the private parts stay so)
        addr = _LIBC.mmap(None, size, _PROT_RW, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"smpy.shared_array: cannot reserve {nbytes} bytes "
                              f"({os.strerror(ctypes.get_errno())})")
        mapping = _Mapping(addr, size, owner)
        ranges = [(0, size)] if shared is None else _shared_pages(shared, nbytes)
        fd = self._block_fd()
        for start, stop in ranges:
            off = start
            while off < stop:
                n = min(self.blocksize, stop - off)
                got = _LIBC.mmap(addr + off, n, _PROT_RW, mmap.MAP_SHARED | _MAP_FIXED, fd, 0)
                if got != addr + off:
                    raise MemoryError("smpy.shared_array: folding failed "
                                      f"({os.strerror(ctypes.get_errno())}){_map_limit_hint()}; "
                                      "try --cfg=smpi/shared-malloc:local")
                off += n
            self.folded_bytes += stop - start
            _folded.register(addr + start, stop - start)
            mapping.folded.append((addr + start, addr + stop))
        if mapping.folded and self.refault_cost < 0.0 and self.counting:
            self.refault_cost = self._measure_refault()  # early, while little is mapped
        if mapping.folded:
            if not self._maps and self.trim_limit:
                self._shared0 = self._shared_bytes()
            refs = self._maps.setdefault(owner, [])
            if len(refs) >= 64 and not len(refs) & (len(refs) - 1):  # drop the dead now and then
                refs[:] = [r for r in refs if (m := r()) is not None and m.size]
            refs.append(weakref.ref(mapping))
            self._touched.add(owner)
            self._whole.discard(owner)
        self.forget()
        raw = (ctypes.c_char * nbytes).from_address(addr)
        raw._smpy_mapping = mapping  # unmapped when the last array viewing ``raw`` goes away
        return np.frombuffer(raw, dtype=dt).reshape(shape)


def _dontneed(ranges: list[tuple[int, int]]) -> None:
    """Drop the page-table entries of the folded ``(start, stop)`` ranges (``madvise``
    ``DONTNEED``; the data stays in the block). Compiled twin: ``_foldaccel.c``."""
    for start, stop in ranges:
        _LIBC.madvise(start, stop - start, _MADV_DONTNEED)


def _compiled() -> list[tuple[Any, Any]]:
    """:func:`_dontneed` with its compiled twin (the same madvise calls without ctypes: a
    trim at thousands of ranks makes one per folded range of every rank that ran), swapped in
    with the rest of the compiled path (``smpy/accel``); none when it cannot be built."""
    from pathlib import Path

    mod, _why = cext.load(Path(__file__).with_name("_foldaccel.c"), "smpy.timing._foldaccel")
    if mod is None:
        return []
    mod.setup(_dontneed)
    return [(_dontneed, mod._dontneed)]


cext.register(_compiled)


try:
    import resource
except ImportError:  # not a POSIX system: trimming (Linux only) never counts faults
    resource = None  # type: ignore[assignment]
_RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)


def thread_faults() -> int:
    """Minor page faults of the calling thread so far (Linux; 0 elsewhere)."""
    return resource.getrusage(_RUSAGE_THREAD).ru_minflt if _RUSAGE_THREAD is not None else 0


def _shared_pages(shared: list[tuple[int, int]], nbytes: int) -> list[tuple[int, int]]:
    """Byte ranges → whole pages inside them (a page only partly shared stays private)."""
    out = []
    for start, stop in shared:
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= nbytes:
            raise ValueError(f"smpy.shared_array: shared range ({start}, {stop}) is not within "
                             f"the array's {nbytes} bytes")
        lo = (start + _PAGE - 1) // _PAGE * _PAGE
        hi = stop // _PAGE * _PAGE
        if hi > lo:
            out.append((lo, hi))
    return out
