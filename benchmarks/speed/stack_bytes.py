"""Bytes of C stack greenlet copies out when a rank blocks (docs/performance.md, "The ring's last
C frames"): the ring of ``twins.py`` (compiled path, computation not simulated) under gdb, a
breakpoint on ``PyMem_Realloc`` called by greenlet's stack save (``copy_stack_to_heap``), whose
size argument is the part of the stack saved; printed as a histogram (bytes, times). On the ring
at np N and L laps, the row seen N x L times is a rank blocked in ``Recv``; 296 B is the
maestro's slice. With ``--frames``, the C frames of one blocked rank, each with its size.

    python benchmarks/speed/stack_bytes.py                 # np 64, 3 laps
    python benchmarks/speed/stack_bytes.py --frames
    python benchmarks/speed/stack_bytes.py --src /tmp/other-tree

Slow (gdb stops at every reallocation); needs gdb, and greenlet's and CPython's symbols.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the ring run, the same as instructions.py profiles
from instructions import RUN  # noqa: E402

#: the histogram of the sizes saved (PyMem_Realloc's second argument, read at its entry)
SIZES = """
set pagination off
python
import gdb, collections
seen = collections.Counter()
class Save(gdb.Breakpoint):
    def stop(self):
        f = gdb.newest_frame()
        o, names = f.older(), []
        while o is not None and len(names) < 4:
            names.append(o.name() or "?")
            o = o.older()
        if any("copy_stack" in n or "slp_save" in n for n in names):
            seen[int(f.read_register("rsi"))] += 1
        return False
def done(ev):
    for size, n in sorted(seen.items(), key=lambda kv: -kv[1]):
        print("SAVED", size, n)
gdb.events.exited.connect(done)
end
tbreak Py_BytesMain
run
python Save("*PyMem_Realloc")
continue
quit
"""

#: the frames of one rank blocked in Recv (the stack at greenlet's save, each frame's size)
FRAMES = """
set pagination off
set breakpoint pending on
python
import gdb
state = {"done": False}
class Save(gdb.Breakpoint):
    def stop(self):
        if state["done"]:
            return False
        rows, f = [], gdb.newest_frame()
        while f is not None:
            try:
                rows.append((f.name() or "?", int(f.read_register("sp"))))
            except gdb.error:
                break
            f = f.older()
        names = [r[0] for r in rows]
        if not any("comm_recv_body" in n or "Recv" in n for n in names):
            return False
        state["done"] = True
        for i in range(len(rows) - 1):
            print("FRAME", rows[i + 1][1] - rows[i][1], rows[i][0])
            if "inner_bootstrap" in rows[i][0]:
                break
        return False
Save("greenlet::StackState::copy_stack_to_heap_up_to")
end
run
quit
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=64)
    ap.add_argument("--laps", type=int, default=3)
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    ap.add_argument("--frames", action="store_true", help="the C frames of one rank blocked in Recv")
    a = ap.parse_args()
    if shutil.which("gdb") is None:
        print("skipped: gdb not found")
        return 0
    src = a.src.resolve()
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1")
    # a first run outside gdb builds what the tree's compiled parts need
    subprocess.run([sys.executable, "-c", RUN, str(src), "4", "1"], env=env, check=True, cwd=HERE.anchor)
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "s.gdb"
        script.write_text(FRAMES if a.frames else SIZES)
        done = subprocess.run(["gdb", "-q", "-batch", "-x", str(script), "--args", sys.executable, "-c", RUN,
                               str(src), str(a.np), str(a.laps)], env=env, capture_output=True, text=True,
                              cwd=HERE.anchor)
    rows = re.findall(r"^(SAVED|FRAME) (\d+) (\S+)", done.stdout, re.M)
    if not rows:
        print(f"gdb printed nothing usable: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        return 1
    if a.frames:
        for _, size, name in rows:
            print(f"{int(size):6d} B  {name}")
    else:
        print(f"ring np {a.np}, {a.laps} laps: bytes of C stack saved at a switch away, times seen")
        for _, size, n in rows:
            print(f"{int(size):6d} B  {int(n):6d}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
