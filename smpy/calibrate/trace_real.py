"""Per-region compute times of a program run under *real* mpi4py (no emulator).

``mpiexec -n P python -m smpy.calibrate.trace_real OUTDIR app.py [args]`` runs ``app.py``
as its own ``__main__`` with real MPI, and writes ``OUTDIR/rank<r>.csv``: for each region
(SMPI's key ``prevfile:prevline:file:line``, the locations of two consecutive MPI calls,
file base names), the number of bursts and their total thread CPU time, i.e. what smpy's
``smpy/region-report`` records under the emulator.

``SMPY_TRACE_SERIALIZE=FILE`` serializes the computation: a rank holds an exclusive lock on
FILE while it computes between two MPI calls, never during a call (so no deadlock), and no
two ranks compute at once; their times are then free of memory contention. A rank waits for
the lock busy (yielding its core to others that can run), as a real rank waits in MPI.
``SMPY_TRACE_ALTERNATE=1`` serializes only every other burst that starts at a given call
site: SPMD ranks, which pass the same sites in the same order, then compute alternately all
at once and one at a time, and the two conditions' totals (``measured_s`` of all bursts,
``serial_s`` of the serialized ones) give the region's slowdown from contention in one run.

How: ``MPI.COMM_WORLD``/``COMM_SELF`` are replaced by instances of subclasses of the real
communicator classes whose public methods time the burst that ends at the call, and wrap the
communicators and requests they return the same way; ``MPI.Request`` (``Waitall``...) and
``MPI.Wtime`` are wrapped too. Cost: one ``thread_time()`` pair and one frame lookup per
MPI call, nothing between calls. Communicators built from a group or otherwise not derived
from the wrapped ones are not traced (their calls extend the enclosing region).
"""

from __future__ import annotations

import csv
import fcntl
import os
import runpy
import sys
import time
from typing import Any

_thread_time = time.thread_time


class Tracer:
    """Per-region burst statistics of one rank. ``lock``: a file that every rank of the node
    locks while it computes a *serialized* burst, so that no two ranks compute at once then;
    ``alternate``: only every other burst that starts at a given call site is serialized (the
    others run as usual, all ranks at once), so that one run measures both conditions, a few
    milliseconds apart."""

    def __init__(self, depth: int = 1, lock: str | None = None, alternate: bool = False) -> None:
        self.depth = depth
        self.loc = "<start>:0"
        #: key -> [bursts, seconds, serialized bursts, their seconds]
        self.stats: dict[str, list[float]] = {}
        self.inside = 0
        self.alternate = alternate
        #: bursts started after each call site so far (alternation)
        self._starts: dict[str, int] = {}
        self._lock_fd = -1
        self._serial = False
        if lock:
            self._lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            self._begin_burst()
        self.start = _thread_time()

    def _begin_burst(self) -> None:
        """A burst starts after the call at ``self.loc``: take the lock if it is serialized."""
        if self.alternate:
            n = self._starts.get(self.loc, 0)
            self._starts[self.loc] = n + 1
            self._serial = n % 2 == 1
        else:
            self._serial = True
        if self._serial:
            # wait busy, as a real rank waits in MPI (MPICH polls): a rank sleeping in flock()
            # leaves its core idle, and the bursts that follow ran 5-10 % slower on this VM
            # (heat3d's stencil: slowdown 1.24 measured sleeping, 1.16 spinning, medians of 5)
            while True:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    os.sched_yield()

    def enter(self, frame: Any) -> None:
        if self.inside:
            self.inside += 1
            return
        now = _thread_time()
        if self._serial:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        for _ in range(self.depth - 1):
            if frame.f_back is not None:
                frame = frame.f_back
        loc = f"{os.path.basename(frame.f_code.co_filename).replace(' ', '_')}:{frame.f_lineno}"
        self._burst(loc, now - self.start)
        self.inside = 1

    def exit(self) -> None:
        self.inside -= 1
        if self.inside == 0:
            if self._lock_fd >= 0:
                self._begin_burst()
            self.start = _thread_time()

    def _burst(self, loc: str, dt: float) -> None:
        key = f"{self.loc}:{loc}"
        st = self.stats.get(key)
        if st is None:
            st = self.stats[key] = [0, 0.0, 0, 0.0]
        st[0] += 1
        st[1] += dt
        if self._serial:
            st[2] += 1
            st[3] += dt
        self.loc = loc

    def finish(self, path: str) -> None:
        self._burst("<end>:0", _thread_time() - self.start)
        if self._lock_fd >= 0:
            if self._serial:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1
            self._serial = False
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
            w.writerow(["region", "bursts", "measured_s", "serial_bursts", "serial_s"])
            for key in sorted(self.stats):
                n, t, ns, ts = self.stats[key]
                w.writerow([key, int(n), t, int(ns), ts])


def install(MPI: Any, tracer: Tracer, calls: set[str] | None = None) -> None:  # noqa: N803
    """Wrap the communicators and requests of the real ``mpi4py.MPI``. ``calls``: the method
    and function names that end a region (smpy's are those its facade times, passed by
    ``smpy calibrate compute`` in ``SMPY_TRACE_CALLS``, so that both runs cut the program
    at the same places); default every public method."""
    wrapped: dict[type, type] = {}

    def wrap_value(value: Any) -> Any:
        cls = type(value)
        if cls in wrapped.values():
            return value
        if isinstance(value, (MPI.Comm, MPI.Request)) and cls in wrapped:
            return wrapped[cls](value)
        if isinstance(value, list) and value and isinstance(value[0], MPI.Request):
            return [wrap_value(v) for v in value]
        return value

    def timed(name: str, fn: Any, static: bool = False) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            tracer.enter(sys._getframe(1))
            try:
                return wrap_value(fn(*args, **kwargs))
            finally:
                tracer.exit()

        method.__name__ = name
        return staticmethod(method) if static else method

    def subclass(base: type) -> type:
        ns: dict[str, Any] = {}
        for name in dir(base):
            if name.startswith("_") or name in ("f2py", "fromhandle", "fromint"):
                continue
            if calls is not None and name not in calls:
                continue
            attr = getattr(base, name)
            if not callable(attr) or isinstance(attr, type):
                continue
            raw = base.__dict__.get(name)
            if isinstance(raw, (classmethod, staticmethod)) or getattr(attr, "__self__", None) is base:
                ns[name] = timed(name, attr, static=True)
            else:
                ns[name] = timed(name, attr)
        cls = type(base.__name__, (base,), ns)
        wrapped[base] = cls
        return cls

    for base in (MPI.Intracomm, MPI.Comm, MPI.Request, MPI.Prequest, MPI.Grequest):
        subclass(base)
    for name in ("Cartcomm", "Graphcomm", "Distgraphcomm", "Intercomm"):
        base = getattr(MPI, name, None)
        if base is not None:
            subclass(base)
    MPI.COMM_WORLD = wrapped[MPI.Intracomm](MPI.COMM_WORLD)
    MPI.COMM_SELF = wrapped[MPI.Intracomm](MPI.COMM_SELF)
    MPI.Request = wrapped[MPI.Request]
    real_wtime = MPI.Wtime

    def wtime() -> float:
        tracer.enter(sys._getframe(1))
        try:
            return real_wtime()
        finally:
            tracer.exit()

    if calls is None or "Wtime" in calls:
        MPI.Wtime = wtime


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python -m smpy.calibrate.trace_real OUTDIR app.py [args]", file=sys.stderr)
        return 2
    outdir, script, rest = args[0], args[1], args[2:]
    depth = int(os.environ.get("SMPY_REGION_DEPTH", "1"))
    from mpi4py import MPI

    tracer = Tracer(depth, os.environ.get("SMPY_TRACE_SERIALIZE") or None,
                    os.environ.get("SMPY_TRACE_ALTERNATE", "") not in ("", "0"))
    names = os.environ.get("SMPY_TRACE_CALLS")
    install(MPI, tracer, set(names.split(",")) if names else None)
    rank = MPI.COMM_WORLD.Get_rank()
    sys.argv = [script, *rest]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    os.makedirs(outdir, exist_ok=True)
    tracer.finish(os.path.join(outdir, f"rank{rank}.csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
