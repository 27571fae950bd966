r"""Python's cyclic garbage collections are the emulator's time, not the program's.

The collector runs when allocations outnumber deallocations by a threshold, wherever that
happens: often inside a rank's compute burst or a sampled iteration
(:mod:`smpy.timing.sampling`). Its pause is proportional to the young objects it scans,
which in an emulation are the whole simulation's (pending events, flows, requests of all
ranks; 3072 ranks of HPL: 5 ms per young collection, 0.2-0.3 s per full one), not the
rank's: a real rank's process has a heap of its own, a few hundred times smaller. A pause
inside a sampled iteration was multiplied by every iteration the sample stands for: the
first panel of Figure 12's 3072-rank point predicted 0.60 s in one run and 2.01 s in the next
(same tree; the second with a collection tally attached).

A collection of :math:`d` seconds of thread CPU time (``gc.callbacks``) leaves a sampled
iteration it falls in: :mod:`smpy.timing.sampling` subtracts the pauses between its clock reads
(:data:`paused_s`, the total so far). A collection inside a plain burst stays in it (measured
once, as a real process's own collections are): moving the running rank's timer start by the
pause made ``tests/test_blocking.py``'s two ranks, each mapping over a
``multiprocessing.Pool``, stall now and then (9 of about 40 runs; none in 24 without that
move), so that part was withdrawn. The stall's cause was elsewhere (multiprocessing's exit
handler, shared by the ranks, ended the other rank's pool: :mod:`smpy.shim.mpexit`); the
move only changed which rank ended first, and it stays withdrawn as a model choice.

Collections of another thread than the simulation's are not counted. Only with the real
thread clock: a test that replaces the timing's clock (``smpy.timing.bench._thread_time``)
turns this off (:data:`enabled`), so that a fake clock's iterations stay exact.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

_clock = time.thread_time
#: thread CPU seconds spent in cyclic garbage collections so far (while enabled)
paused_s = 0.0
#: collections counted so far
collections = 0
#: whether pauses are measured and left out (set by each run's Timing)
enabled = False
_t0 = -1.0
#: the thread that runs the simulation (a collection in a thread the program started is not
#: in the ranks' thread CPU time)
_thread = -1
_get_ident = threading.get_ident


def _callback(phase: str, info: dict[str, Any]) -> None:
    global paused_s, collections, _t0
    if not enabled or _get_ident() != _thread:
        _t0 = -1.0
        return
    if phase == "start":
        _t0 = _clock()
        return
    if _t0 < 0.0:
        return
    paused_s += _clock() - _t0
    _t0 = -1.0
    collections += 1


def install(on: bool) -> None:
    """Measure the collections' pauses from now on (``on``) or not; the callback is put in
    ``gc.callbacks`` once per process."""
    global enabled, _thread
    enabled = on
    _thread = _get_ident()
    if _callback not in gc.callbacks:
        gc.callbacks.append(_callback)
