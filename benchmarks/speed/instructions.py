"""Instructions per message on the ring, counted by callgrind: a figure the machine's load does
not move (issue 24, item 1; docs/performance.md, "Lookups per message").

Runs the ring of ``twins.py`` (np ranks, computation not simulated, compiled path) twice under
``valgrind --tool=callgrind``, ``--short`` and ``--long`` laps, and prints the difference of
the instruction counts divided by the messages in between, so that start-up cancels; with
``--calls``, the calls per message of a few CPython functions (allocations, dict lookups,
attribute and method lookups by name). Slow: valgrind runs the program about 50 times slower.

    python benchmarks/speed/instructions.py                 # ring np 256, 25 - 5 laps
    python benchmarks/speed/instructions.py --calls
    python benchmarks/speed/instructions.py --src /tmp/other-tree
    python benchmarks/speed/instructions.py --cache --np 1024 --short 2 --long 4

With ``--cache``, callgrind also simulates the caches (``--cache-sim=yes``, the first level
as the machine's, the last level given as this machine's 4 MiB per-core L2, since its "L3" is
a VM's shared 480 MiB) and the script prints the first- and last-level data misses per
message, in all and under the greenlet stack copies (docs/performance.md, "The C stack copied
at each switch").
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: CPython functions whose calls per message --calls prints
COUNTED = ("_PyObject_Malloc", "_Py_dict_lookup", "PyObject_GetAttr", "PyObject_SetAttr", "_PyObject_GetMethod")
#: functions whose inclusive instructions per message --switching prints: the rank switch
#: hooks, the greenlet switch and the engine's per-event work (docs/performance.md, "Switching
#: per message")
SWITCHING = ("switch_in", "switch_out", "private_in", "set_state_ctx", "actor_resume", "engine_run",
             "schedule_impl", "activity_finish", "green_switch", "slp_save_state_trampoline",
             "slp_restore_state_trampoline", "subtype_dealloc", "PyType_GenericAlloc")

RUN = """
import sys, smpy
src, np_, laps = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = smpy.run(src + "/benchmarks/speed/twins.py", np=np_, platform=src + "/examples/platforms/cluster64.yaml",
             cfg={"smpi/simulate-computation": "no", "smpy/accel": "on"}, args=["ring", laps])
if not r.accelerated:
    raise SystemExit("the compiled path is not in place: " + repr(r.accel_parts))
"""


#: the last-level cache simulated by --cache: size, associativity, line (the machine's L2)
LL = "--LL=4194304,16,64"
#: functions whose inclusive data misses --cache prints: the greenlet stack copies (save and
#: restore, with their allocation), the engine's loop and the rank switch hooks
CACHE_FUNCS = ("slp_save_state_trampoline", "slp_restore_state_trampoline", "switch_in", "switch_out",
               "engine_run", "_PyEval_EvalFrameDefault", "__memcpy_avx_unaligned_erms")


def count(src: Path, np_: int, laps: int, out: Path, cache: bool = False) -> int:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    extra = ["--cache-sim=yes", LL] if cache else []
    done = subprocess.run(["valgrind", "--tool=callgrind", *extra, f"--callgrind-out-file={out}", sys.executable,
                           "-c", RUN, str(src), str(np_), str(laps)], env=env, capture_output=True, text=True,
                          cwd=out.parent)  # not the current directory's smpy (sys.path[0] of -c)
    if done.returncode != 0:
        raise SystemExit(f"the run under valgrind failed: {done.stderr.strip().splitlines()[-1:]}")
    m = re.search(r"Collected : (\d+)", done.stderr)
    if m is None:
        raise SystemExit("callgrind printed no instruction count")
    return int(m.group(1))


def calls(profile: Path) -> collections.Counter:
    """Calls of each function (summed over its callers) in a callgrind profile."""
    text = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", str(profile)],
                          capture_output=True, text=True).stdout
    res: collections.Counter = collections.Counter()
    pending: list[int] = []
    for line in text.splitlines():
        m = re.match(r"\s*[\d,]+ \([^)]*\)\s+<\s+\S+ \(([\d,]+)x\)", line)
        if m:
            pending.append(int(m.group(1).replace(",", "")))
            continue
        m = re.match(r"\s*[\d,]+ \([^)]*\)\s+\*\s+(?:\S+?:)?(\S+)", line)
        if m:
            res[re.sub(r"'\d+$", "", m.group(1))] += sum(pending)
        if m or not line.strip():
            pending = []
    return res


def inclusive(profile: Path) -> collections.Counter:
    """Inclusive instructions of each function in a callgrind profile (its outermost calls:
    a recursive call is inside them; a compiler's specialised copies, ``.constprop``/``.part``,
    and C++ signatures folded into the name)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(profile)],
                          capture_output=True, text=True).stdout
    res: collections.Counter = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S+?:(\S+)", line)
        if m and not re.search(r"'\d+$", m.group(2)):  # a recursion level is inside the first one
            res[m.group(2).split("(")[0].split(".constprop")[0].split(".part")[0]] += int(m.group(1).replace(",", ""))
    return res


def misses(profile: Path) -> dict[str, collections.Counter]:
    """Data misses (first level D1mr + D1mw, last level DLmr + DLmw) in all (key ``""``) and
    inclusive per function, from a profile made with --cache-sim=yes."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no",
                           "--show=D1mr,D1mw,DLmr,DLmw", str(profile)], capture_output=True, text=True).stdout
    res: dict[str, collections.Counter] = {"D1": collections.Counter(), "LL": collections.Counter()}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+|\.)(?: \([^)]*\))?\s+([\d,]+|\.)(?: \([^)]*\))?\s+([\d,]+|\.)"
                     r"(?: \([^)]*\))?\s+([\d,]+|\.)(?: \([^)]*\))?\s+(.*)$", line)
        if not m:
            continue
        v = [int(g.replace(",", "").replace(".", "0")) for g in m.groups()[:4]]
        where = m.group(5)
        if where.startswith("PROGRAM TOTALS"):
            name = ""
        elif ":" in where and where.endswith("]") and not re.search(r"'\d+ \[", where):
            # a function's whole line ends with its object file; the lines without it are the
            # parts of an inlined function per source file, and 'N a recursion level
            name = where.split(":", 1)[1].split(" ")[0].split("(")[0].split(".constprop")[0].split(".part")[0]
            if not name:  # "(below main)", which holds the whole program
                continue
        else:
            continue
        res["D1"][name] += v[0] + v[1]
        res["LL"][name] += v[2] + v[3]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=256)
    ap.add_argument("--short", type=int, default=5)
    ap.add_argument("--long", type=int, default=25)
    ap.add_argument("--calls", action="store_true", help="also the calls per message of a few CPython functions")
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    ap.add_argument("--switching", action="store_true",
                    help="also the inclusive instructions per message of the switch hooks, the greenlet switch and "
                         "the engine's per-event functions")
    ap.add_argument("--cache", action="store_true",
                    help="simulate the caches too: data misses per message, in all and under the greenlet stack copies")
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep the two profiles (short.out, long.out) in this directory, for callgrind_annotate")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("skipped: valgrind not found")
        return 0
    src = a.src.resolve()
    messages = (a.long - a.short) * a.np
    # a first run outside valgrind builds what the tree's compiled parts need and its .pyc
    # files, which would otherwise be counted in the short run only
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1")
    subprocess.run([sys.executable, "-c", RUN, str(src), "4", "1"], env=env, check=True, cwd=HERE.anchor)
    with tempfile.TemporaryDirectory() as d:
        if a.keep is not None:
            a.keep.mkdir(parents=True, exist_ok=True)
        where = a.keep.resolve() if a.keep is not None else Path(d)
        p0, p1 = where / "short.out", where / "long.out"
        n0, n1 = count(src, a.np, a.short, p0, a.cache), count(src, a.np, a.long, p1, a.cache)
        print(f"ring np {a.np}, {a.long} - {a.short} laps = {messages} messages: "
              f"{(n1 - n0) / messages:.0f} instructions per message")
        if a.calls and shutil.which("callgrind_annotate"):
            c0, c1 = calls(p0), calls(p1)
            for name in COUNTED:
                print(f"{(c1[name] - c0[name]) / messages:8.1f} calls per message of {name}")
        if a.switching and shutil.which("callgrind_annotate"):
            i0, i1 = inclusive(p0), inclusive(p1)
            for name in SWITCHING:
                print(f"{(i1[name] - i0[name]) / messages:8.0f} instructions per message in {name} (inclusive)")
        if a.cache and shutil.which("callgrind_annotate"):
            m0, m1 = misses(p0), misses(p1)
            for level in ("D1", "LL"):
                for name in ("", *CACHE_FUNCS):
                    what = name + " (inclusive)" if name else "all"
                    print(f"{(m1[level][name] - m0[level][name]) / messages:8.1f} {level} data misses per message: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
