"""Runs ``rank_wrapper.py`` under smpy in its own process, for the conformance harness.

Usage: ``smpy_driver.py NP LOGDIR TIMEOUT_S MAIN_PY [main.py options...]``.

Writes ``LOGDIR/rank<r>.log`` (each rank's stdout and stderr, in the order written) and
``LOGDIR/run.json`` (smpy's run status and message). The rank logs are written as the output is
captured, so that they survive a crash of the interpreter (whose Python traceback
``faulthandler`` writes on stderr). After ``TIMEOUT_S`` seconds of wall time (or on SIGTERM) a
``KeyboardInterrupt`` stops the simulation, so that smpy still returns its result; the harness
kills the process if even that does not return.
"""

from __future__ import annotations

import faulthandler
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

WRAPPER = Path(__file__).resolve().parent / "rank_wrapper.py"


def _interrupt(_signum: int, _frame: Any) -> NoReturn:
    raise KeyboardInterrupt


class StreamingCapture(list):
    """smpy's capture list, also writing each rank's text to its log file at once."""

    def __init__(self, logdir: Path, np: int) -> None:
        super().__init__()
        self.files = [open(logdir / f"rank{r}.log", "w", encoding="utf-8", errors="replace")  # noqa: SIM115
                      for r in range(np)]

    def append(self, item: tuple[int, str, str]) -> None:
        super().append(item)
        rank, _stream, text = item
        if 0 <= rank < len(self.files):
            f = self.files[rank]
            f.write(text)
            f.flush()

    def close(self) -> None:
        for f in self.files:
            f.close()


def _stream_capture(logdir: Path, np: int) -> list[StreamingCapture]:
    """Make the next smpy run capture into a :class:`StreamingCapture` (best effort: this
    relies on ``smpy.cli.launch.Session.captured``; without it the logs are written at the end)."""
    made: list[StreamingCapture] = []
    try:
        from smpy.cli import launch
    except ImportError:
        return made
    session = getattr(launch, "Session", None)
    if session is None:
        return made
    orig = session.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, *args, **kwargs)
        if getattr(self, "captured", None) is not None:
            self.captured = StreamingCapture(logdir, np)
            made.append(self.captured)

    session.__init__ = init
    return made


def main() -> int:
    np, logdir, timeout_s = int(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    args = sys.argv[4:]
    logdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    faulthandler.enable(all_threads=True)
    import smpy

    streams = _stream_capture(logdir, np)
    wall0 = time.perf_counter()
    info: dict[str, Any] = {"np": np}
    res = None
    try:
        res = smpy.run(str(WRAPPER), np=np, args=args, capture=True, echo=False)
    except KeyboardInterrupt:
        info.update(status="interrupted", message="interrupted outside the simulation")
    except BaseException as e:  # noqa: BLE001 - report whatever stopped smpy itself
        info.update(status="smpy-error", message=f"{type(e).__name__}: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    info["wall_s"] = round(time.perf_counter() - wall0, 3)
    if res is not None:
        info.update(status=res.status, exit_code=res.exit_code, message=res.message,
                    makespan_s=res.makespan_s)
        if not streams:
            for r in range(np):
                text = "".join(t for rank, _s, t in (res.output or []) if rank == r)
                (logdir / f"rank{r}.log").write_text(text)
    for s in streams:
        s.close()
    (logdir / "run.json").write_text(json.dumps(info, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
