"""Leaving the process quickly once an emulation is over.

An emulation of thousands of ranks ends with hundreds of thousands of objects alive (every
rank's module state, greenlets, the platform). Letting the interpreter tear them down —
module clean-up, then a last garbage collection over all of them — cost ~0.1-0.2 s of CPU
at np 1024 (15 % of a short run). The command-line entry points therefore end with
:func:`exit_now`: what a normal exit guarantees is done explicitly (``atexit`` handlers,
which include ``weakref.finalize`` clean-ups such as temporary directories; non-daemon
threads joined; every open file object flushed, since CPython flushes files at deallocation
and programs that never close theirs would otherwise lose data), then ``os._exit``.
Library callers of ``main()`` are unaffected: only the console scripts and ``python -m smpy``
use it.
"""

from __future__ import annotations

import _io
import atexit
import gc
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_now(code: int | None) -> NoReturn:
    """``sys.exit(code)`` without the interpreter's teardown (see the module docstring).

    Under a profiler or tracer (``python -m cProfile -m smpy``, debuggers, coverage's C
    tracer), which report after the program returns, this is a plain ``sys.exit``.
    """
    status = 0 if code is None else int(code)
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:  # joins non-daemon threads, as Py_FinalizeEx does first
            shutdown()
        atexit._run_exitfuncs()
        for obj in gc.get_objects():
            if isinstance(obj, _io._IOBase):  # the C base of every io class (not the ABC: slow)
                try:
                    if not obj.closed and obj.writable():
                        obj.flush()
                except (OSError, ValueError):
                    pass
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
    finally:
        os._exit(status)


def run(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's ``main`` and leave with :func:`exit_now` (``SystemExit`` honoured).

    The cyclic garbage collector stays off while the command starts (importing numpy and
    smpy allocates ~100 000 objects and triggered repeated full collections over them);
    the emulation itself turns it on (smpy.cli.launch._young_gc_only).
    """
    gc.disable()
    try:
        code = main()
    except SystemExit as exc:
        c = exc.code
        if c is not None and not isinstance(c, int):
            print(c, file=sys.stderr)
            c = 1
        code = c
    except BrokenPipeError:  # `smpy ... | head`: the reader left; say nothing, as cat does
        code = 141  # 128 + SIGPIPE, what a shell reports for a program killed by SIGPIPE
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- exit_now flushes it
        except OSError:
            pass
    exit_now(code)
