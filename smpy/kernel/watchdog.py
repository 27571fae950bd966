"""Turn a stall into a report: wall time passing while nothing makes progress.

A real blocking call that smpy does not make cooperative (a C extension waiting on a
socket, ``input()``), or a wait for the outside that never completes, holds the engine
forever. A thread of its own watches the engine while it runs; a *stall* is ``limit_s``
wall seconds during which

* the engine processed no event and started no round,
* the engine's thread used no CPU (a rank computing for minutes is progress; the engine
  polling the OS for waiting ranks is not), and
* no descendant process of the emulation used CPU (``multiprocessing`` workers computing).

It then records what every actor waits for, and for the actor holding the thread the
innermost frames of its Python stack (the real call it is in), and sends ``SIGUSR2`` to the
engine's thread, whose handler raises :class:`Stalled` there: the blocking call is
interrupted (``EINTR``), the exception ends the run and the caller reports. If the thread is
in code that ignores signals, the report is written to stderr and the process exits with
status 3 after another ``limit_s`` (capped at 30 s) without progress.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine

_real_poll = select.poll


class Stalled(BaseException):
    """Raised in the engine's thread when it stalled (a BaseException: user code's ``except
    Exception`` must not swallow it). ``blocked``: ``(actor, what)`` pairs; ``running``: the
    actor that held the thread (or None: the engine itself waited for the outside)."""

    def __init__(self, now: float, seconds: float, blocked: list[tuple[Any, str]], running: Any) -> None:
        super().__init__(f"no progress for {seconds:g} s of wall time at simulated time {now:.9g} s")
        self.now = now
        self.seconds = seconds
        self.blocked = blocked
        self.running = running


def _stat_cpu(pid: str) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _kids(task_dir: str) -> list[str]:
    try:
        tids = os.listdir(f"{task_dir}/task")
    except OSError:
        return []
    out: list[str] = []
    for tid in tids:
        try:
            with open(f"{task_dir}/task/{tid}/children") as f:
                out += f.read().split()
        except OSError:
            continue
    return out


def _children_cpu() -> float:
    """CPU seconds used by the emulation's descendant processes (children, and theirs: an
    ``mpiexec`` a rank runs works in its grandchildren); Linux /proc, 0 elsewhere."""
    total = 0.0
    todo = _kids("/proc/self")
    seen: set[str] = set()
    while todo and len(seen) < 4096:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _stat_cpu(pid)
        todo += _kids(f"/proc/{pid}")
    return total


class Watchdog:
    """Watches ``engine`` while it runs in the calling (main) thread; a context manager.

    ``limit_s <= 0`` disables it; so does running outside the main thread (only the main
    thread receives Python signal handlers)."""

    def __init__(self, engine: Engine, limit_s: float) -> None:
        self.engine = engine
        self.limit_s = float(limit_s)
        self.report: Stalled | None = None
        # no threading.Event: the shim may have patched threading's locks for the run
        self._wake_r, self._wake_w = -1, -1
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._ident = threading.main_thread().ident
        self._old_handler: Any = None
        self._clock: int | None = None

    def __enter__(self) -> Watchdog:
        if self.limit_s <= 0 or threading.current_thread() is not threading.main_thread():
            return self
        try:
            self._clock = time.pthread_getcpuclockid(self._ident)  # type: ignore[arg-type]
        except (AttributeError, OSError):
            self._clock = None
        self._old_handler = signal.signal(signal.SIGUSR2, self._on_signal)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._watch, name="smpy-watchdog", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._thread is None:
            return
        self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join()
        self._thread = None
        os.close(self._wake_r)
        os.close(self._wake_w)
        signal.signal(signal.SIGUSR2, self._old_handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        report = self.report
        if report is not None and not self._stopped:
            raise report

    def _progress(self) -> tuple[int, int, float, float]:
        e = self.engine
        osp = e.os_poller
        if osp is not None and osp.idling:
            cpu = -1.0  # the engine polling the OS for its waiting ranks is not progress
        else:
            cpu = time.clock_gettime(self._clock) if self._clock is not None else 0.0
        return e.rounds, e.events_processed, round(cpu, 2), round(_children_cpu(), 2)

    def _watch(self) -> None:
        period = min(1.0, self.limit_s / 4)
        last = self._progress()
        since = time.monotonic()
        wake = _real_poll()
        wake.register(self._wake_r, select.POLLIN)
        while not wake.poll(int(period * 1000)) and not self._stopped:
            now = self._progress()
            if now != last:
                last, since = now, time.monotonic()
                continue
            idle = time.monotonic() - since
            if self.report is None and idle >= self.limit_s:
                self.report = self._build(idle)
                signal.pthread_kill(self._ident, signal.SIGUSR2)  # type: ignore[arg-type]
                since = time.monotonic()
            elif self.report is not None and idle >= min(self.limit_s, 30.0):
                sys.stderr.write(format_plain(self.report) + "\n[smpy] the stalled call ignores "
                                 "signals: exiting with status 3\n")
                sys.stderr.flush()
                os._exit(3)

    def _build(self, idle: float) -> Stalled:
        from smpy.kernel.actors import current_actor

        engine = self.engine
        running = current_actor()
        blocked = []
        for a in engine.actors:
            if not a.alive or a is running:
                continue
            if a.waiting_for is not None:
                blocked.append((a, a.describe_wait()))
        if running is not None:
            frame = sys._current_frames().get(self._ident)  # type: ignore[arg-type]
            blocked.insert(0, (running, "a real blocking call, " + _where(frame)))
        return Stalled(engine.now, idle, blocked, running)


def _where(frame: Any) -> str:
    """The innermost frames of a stack, innermost last: ``file:line in func <- ...``."""
    if frame is None:
        return "at an unknown place"
    stack = traceback.extract_stack(frame)
    smpy_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outside = [f for f in stack if not os.path.abspath(f.filename).startswith(smpy_dir)]
    frames = (outside or stack)[-3:]
    return "at " + " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}()"
                               for f in reversed(frames))


def format_plain(stall: Stalled) -> str:
    lines = [f"[smpy] STALL: {stall}; what each actor waits for:"]
    lines += [f"[smpy]   {a.name}: {what}" for a, what in stall.blocked]
    return "\n".join(lines)
