"""What one message costs smpy: CPU time, Python calls and bytecodes per message (issue 24, item 1).

Runs ``twins.py <pattern> n`` in this process (np ranks, computation not simulated) and takes
the difference between two runs of different lengths, so that start-up is not counted:

* ``cpu``: process CPU time per message (``time.process_time``), ``--repeat`` times;
* ``frames``: Python frames (function calls of Python code) and bytecodes executed per message,
  counted with ``sys.settrace`` (opcode events, every greenlet): figures that do not depend on
  the machine's load, to compare two trees exactly; ``--top N`` lists the N functions with the
  most bytecodes.

    python benchmarks/speed/per_message.py                        # ring, np 256, 75 laps
    python benchmarks/speed/per_message.py --mode frames --np 32 --top 20
    python benchmarks/speed/per_message.py --src /tmp/other-tree  # another smpy tree

Alternate two trees (``--src``) in separate processes to compare CPU times on a loaded machine.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _runner(src: Path, np: int, pattern: str, accel: str | None = None):
    import smpy

    prog = str(src / "benchmarks" / "speed" / "twins.py")
    plat = str(src / "examples" / "platforms" / "cluster64.yaml")

    def run(n: int):
        cfg = {"smpi/simulate-computation": "no"}
        if accel is not None:  # smpy/accel (the compiled per-message path); else $SMPY_ACCEL
            cfg["smpy/accel"] = accel
        return smpy.run(prog, np=np, platform=plat, cfg=cfg, args=[pattern, str(n)])
    return run


def cpu(run, short: int, long: int, repeat: int) -> None:
    run(short)  # warm up (imports)
    for i in range(repeat):
        c0 = time.process_time()
        r0 = run(short)
        c1 = time.process_time()
        r1 = run(long)
        c2 = time.process_time()
        m = r1.messages - r0.messages
        print(f"run {i + 1}: {m} messages, {((c2 - c1) - (c1 - c0)) / m * 1e6:.2f} us CPU per message "
              f"(accelerator {'on' if r1.accelerated else 'off'})")


def frames(run, short: int, long: int, top: int, label: str = "") -> None:
    """Python frames and bytecodes per message between a run of ``short`` and one of ``long``
    laps (``sys.settrace`` in every greenlet), and the ``top`` functions by bytecodes; a
    figure the machine's load does not move. ``label`` heads the line (a case's name)."""
    import greenlet

    run(short)

    def counted(n: int):
        ops: collections.Counter = collections.Counter()
        calls: collections.Counter = collections.Counter()

        def tracer(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace protocol
            if event == "call":
                frame.f_trace_opcodes = True
                calls[frame.f_code] += 1
            elif event == "opcode":
                ops[frame.f_code] += 1
            return tracer
        sys.settrace(tracer)
        old = greenlet.settrace(lambda _ev, _args: sys.settrace(tracer))
        try:
            r = run(n)
        finally:
            sys.settrace(None)
            greenlet.settrace(old)
        return r, ops, calls

    r0, o0, c0 = counted(short)
    r1, o1, c1 = counted(long)
    m = r1.messages - r0.messages
    o1.subtract(o0)
    c1.subtract(c0)
    head = f"{label:15s} " if label else ""
    print(f"{head}{m} messages: {sum(c1.values()) / m:.1f} Python frames and {sum(o1.values()) / m:.0f} "
          f"bytecodes per message", flush=True)
    for code, n in o1.most_common(top):
        where = code.co_filename.split("/smpy/")[-1] if "/smpy/" in code.co_filename else Path(code.co_filename).name
        print(f"{n / m:8.1f} bytecodes {c1[code] / m:5.2f} calls  {where}:{code.co_firstlineno}({code.co_name})")


def use_tree(src: Path) -> Path:
    """Import smpy from the source tree ``src`` here and in every child process (a
    benchmark's ``--src``); single-threaded BLAS as in reference runs. The resolved path."""
    src = src.resolve()
    sys.path.insert(0, str(src))
    os.environ["PYTHONPATH"] = str(src)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return src


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("cpu", "frames"), default="cpu")
    ap.add_argument("--pattern", default="ring", choices=("ring", "stencil", "pingpong", "allreduce"))
    ap.add_argument("--np", type=int, default=None, help="ranks (default 256 for cpu, 32 for frames)")
    ap.add_argument("--short", type=int, default=None, help="laps/steps of the run subtracted")
    ap.add_argument("--long", type=int, default=None, help="laps/steps of the measured run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--accel", choices=("auto", "on", "off"), default=None,
                    help="smpy/accel for the runs (default: $SMPY_ACCEL, else auto)")
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    a = ap.parse_args()
    src = use_tree(a.src)
    if a.mode == "cpu":
        run = _runner(src, a.np or 256, a.pattern, a.accel)
        cpu(run, a.short if a.short is not None else 0, a.long or 75, a.repeat)
    else:
        run = _runner(src, a.np or 32, a.pattern, a.accel)
        frames(run, a.short if a.short is not None else 10, a.long or 30, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
