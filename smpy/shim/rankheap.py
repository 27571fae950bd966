r"""Per-rank heaps: each emulated rank's numpy arrays live in a model of its own process's heap.

A real rank is a process with its own allocator. Whether an array lands on warm pages or on
fresh ones, whose page faults (and zeroing) the rank then pays, depends on that allocator's
history: glibc maps large requests on their own and unmaps them when freed, raises that
threshold as such chunks are freed, serves smaller requests from its heap, and gives the top
of the heap back to the system once it exceeds twice the threshold. Under smpyrun all ranks
share one process and one allocator, so a rank finds warm pages that *another* rank freed,
and the history that decides what is warm is everyone's. Measured effects:
``examples/predict/mergesort.py`` (each rank sorts once, temporaries up to 16 MiB) was
predicted 20-40 % too fast; forcing every large array onto fresh pages instead (glibc's
``MALLOC_MMAP_THRESHOLD_``) over-predicted ``lu.py`` by 60 % and ``heat3d.py`` by 220 %, whose
real ranks reuse their temporaries; and a simpler per-rank cache of freed blocks, which kept
what glibc trims, made ``similarity.py`` 45 % too fast.

The model (``_rankheap.c``, a numpy memory handler) gives each rank an *arena* with glibc's
main-arena rules for requests of 128 KiB or more: mapped chunks over the rank's dynamic mmap
threshold, a contiguous heap with best fit, splitting and coalescing below it, growth by the
missing bytes plus 128 KiB of slack into untouched pages, and trimming of the top past twice
the threshold. It reproduces glibc's page faults: per iteration of ``similarity.py``'s
kernel (N=5000) 1754, 1224, 734, 944, 733, 944 faults against 1794, 1240, 752, 944, 752, 944
in a real process. Smaller requests go to ``malloc``. A chunk returns to its own arena
whoever frees it. While all arenas together hold more than ``smpy/rank-heaps-total``
(1 GiB) of free memory, new requests go to the shared ``malloc`` and freed chunks give their
pages back, so that the emulator's memory stays bounded at any number of ranks. numpy's
transparent-huge-page advice on arrays of 4 MiB or more follows ``smpy/numpy-hugepage``
(see :mod:`smpy.shim.hugepages`).

``smpy/prefault-arrays`` (default ``auto``: on when ``smpi/simulate-computation`` is off): a
block that ``malloc`` (not ``calloc``) maps fresh is faulted in at once by
``madvise(MADV_POPULATE_WRITE)`` rather than page by page as the program first writes it.
numpy writes every byte of such a block (``np.empty`` aside, whose bytes the program then
writes); the pages and the resident memory are the same once written, and one call costs less
system time than one fault per 4 KiB page: 256 arrays of 8 MiB (the side-by-side ping-pong's
buffers) took 0.54 s of system time and 0.19 s of user time instead of 0.83 s and 0.06 s. The
time a rank's computation takes is then not a real process's, so the prefault is off by
default when computation is simulated. An ``np.empty`` block never written becomes resident.

The handler is C (compiled on first use with the system's C compiler into
``~/.cache/smpy``; no Python headers needed) and installed through numpy's
``PyDataMem_SetHandler`` in every rank's greenlet and in those of the threads it starts
(numpy keeps the handler in a context variable, and each greenlet has its own context; a
real process's threads share its allocator). Without a C compiler, or with
``--cfg=smpy/rank-heaps:no``, the ranks share the process's allocator as before.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from smpy.support.digest import sha256
from smpy.support.trust import trusted_file

_SRC = Path(__file__).with_name("_rankheap.c")
_API_SET_HANDLER = 304  # PyDataMem_SetHandler's slot in numpy's C-API table (numpy >= 1.22)
_CAPSULE_NAME = b"mem_handler"


class RankHeaps:
    """The loaded handler: ``owner(rank)`` before a rank runs, ``install()`` in each rank's
    greenlet, ``release()`` at the end of a run."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        lib.rh_init(ctypes.c_size_t(os.sysconf("SC_PAGESIZE")))
        self._owner = ctypes.c_int.in_dll(lib, "rh_owner")
        #: the owner as a ctypes cell: ``owner_cell.value = rank + 1`` is :meth:`owner`
        #: without the call (the rank contexts' switch hooks)
        self.owner_cell = self._owner
        self._global_cap = ctypes.c_size_t.in_dll(lib, "rh_global_cap")
        self._hugepage = ctypes.c_int.in_dll(lib, "rh_hugepage")
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self._name = ctypes.create_string_buffer(_CAPSULE_NAME)  # must outlive the capsule
        handler = ctypes.c_void_p.in_dll(lib, "rh_numpy_handler")
        self.capsule = new(ctypes.addressof(handler), ctypes.addressof(self._name), None)
        self._set = _numpy_set_handler()
        self._used = lib.rh_used
        self._used.restype = ctypes.c_int64
        self._used.argtypes = [ctypes.c_int]

    def configure(self, total_cap: int, hugepage: bool, track: bool = False, prefault: bool = False) -> None:
        self._global_cap.value = total_cap
        self._hugepage.value = int(hugepage)
        ctypes.c_int.in_dll(self.lib, "rh_prefault").value = int(prefault)
        ctypes.c_int.in_dll(self.lib, "rh_track").value = int(track)
        self.lib.rh_reset_used()

    def used(self, rank: int) -> int:
        """Bytes of numpy data ``rank`` holds (blocks allocated while it ran, not yet freed;
        counted only after ``configure(..., track=True)``)."""
        return int(self._used(rank + 1))

    def owner(self, rank: int | None) -> None:
        """Memory allocated and freed from now on belongs to ``rank`` (None: smpy's own)."""
        self._owner.value = 0 if rank is None else rank + 1

    def install(self) -> Any:
        """Make the handler numpy's in the current context (greenlet); returns the previous one."""
        return self._set(self.capsule)

    def restore(self, previous: Any) -> None:
        self._set(previous)

    def release(self) -> None:
        """Give back every arena's free pages and reset the thresholds (end of a run; arrays
        still alive keep their memory)."""
        self.lib.rh_release()
        self.owner(None)

    def stats(self) -> dict[str, int]:
        get = {n: ctypes.c_uint64.in_dll(self.lib, n).value for n in ("rh_fresh", "rh_reused", "rh_unmapped", "rh_advised", "rh_prefaulted")}
        get["rh_cached"] = ctypes.c_size_t.in_dll(self.lib, "rh_cached").value
        return get


def _numpy_set_handler() -> Any:
    try:
        from numpy._core import _multiarray_umath as mu  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import _multiarray_umath as mu  # type: ignore[no-redef]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = ctypes.cast(get(mu._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p))
    return ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[_API_SET_HANDLER])


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smpy"


def build() -> Path | None:
    """The compiled handler (built on first use, keyed by the source's hash); None when no
    C compiler is available or the build fails."""
    try:
        src = _SRC.read_bytes()
    except OSError:  # an installation without the C source
        return None
    tag = sha256(src + sys.platform.encode()).hexdigest()[:16]
    out = _cache_dir() / f"rankheap-{tag}.so"
    if out.exists() or out.is_symlink():
        if trusted_file(out):
            return out
        try:  # planted by someone else, or writable by others: never load it
            out.unlink()
        except OSError:
            return None
    import shutil  # the build's only

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    import subprocess  # the build's only: not imported by a run that loads a cached build
    import tempfile

    try:
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            so = Path(tmp) / out.name
            done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(_SRC), "-lpthread"],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                return None
            os.replace(so, out)  # atomic: concurrent runs may build it at once
    except (OSError, subprocess.SubprocessError):
        return None
    return out if trusted_file(out) else None


_loaded: RankHeaps | None = None
_tried = False


def load() -> RankHeaps | None:
    """The process's handler, built and loaded once; None when it cannot be (no compiler,
    numpy without the handler API, not Linux)."""
    global _loaded, _tried
    if _tried:
        return _loaded
    _tried = True
    if not sys.platform.startswith("linux"):
        return None
    try:
        import numpy  # noqa: F401
    except ImportError:
        return None
    path = build()
    if path is None:
        return None
    try:
        _loaded = RankHeaps(ctypes.CDLL(str(path)))
    except (OSError, AttributeError, ValueError):
        return None
    return _loaded


def _install_in(heaps: RankHeaps, glet: Any) -> None:
    import contextvars

    ctx = glet.gr_context
    if ctx is None:
        ctx = glet.gr_context = contextvars.Context()
    try:
        ctx.run(heaps.install)
    except RuntimeError:  # the greenlet is suspended inside its own Context.run (asyncio):
        pass              # its arrays stay with the shared allocator


class Switcher:
    """What the rank contexts call at each switch (``smpy.shim.isolation.rank_heaps``): the
    running rank owns the memory allocated and freed, and the first time a rank runs after
    numpy was imported, the handler is installed in the rank's greenlet's context (and, through
    ``install_thread``, in those of the threads the rank starts)."""

    def __init__(self, total_cap: int, hugepage: bool, track: bool = False, prefault: bool = False) -> None:
        self.caps = (total_cap, hugepage, track, prefault)
        self.heaps: RankHeaps | None = None
        self.unavailable = False
        self.installed: set[int] = set()

    def switch_in(self, rank: int, glet: Any) -> None:
        heaps = self.heaps
        if heaps is None:
            if self.unavailable or "numpy" not in sys.modules:
                return
            heaps = self.heaps = load()
            if heaps is None:
                self.unavailable = True
                return
            heaps.configure(*self.caps)
        heaps.owner(rank)
        if rank not in self.installed and glet is not None:
            self.installed.add(rank)
            _install_in(heaps, glet)

    def install_thread(self, glet: Any) -> bool:
        """Install the handler in a thread's greenlet of the running rank (call after
        ``switch_in``); False while the heaps are not loaded yet (numpy not imported)."""
        if self.heaps is None:
            return self.unavailable
        _install_in(self.heaps, glet)
        return True

    def used(self, rank: int) -> int:
        """Bytes of numpy data ``rank`` holds (0 before numpy is imported or without heaps)."""
        return self.heaps.used(rank) if self.heaps is not None else 0

    def switch_out(self) -> None:
        if self.heaps is not None:
            self.heaps.owner(None)

    def finish(self) -> None:
        """End of the run: give the arenas' free pages back."""
        if self.heaps is not None:
            self.heaps.release()
