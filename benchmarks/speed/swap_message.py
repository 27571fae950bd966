"""What one message of HPL's swap roll costs smpy: CPU time per ``Sendrecv`` message (issue 23).

Runs ``swap_roll.py`` (the roll of hpl.py's long swap: ``colcomm.Sendrecv`` of row slices of
a buffer inside ``smpy.untimed()``, computation simulated as in a Figure 12 run) in this
process on the Figure 12 machine (``taurus-fattree``, 12 ranks per node), twice with
different lap counts, and prints the CPU time per message of the difference (start-up
cancels), for each case asked:

* ``sendrecv``: the messages as hpl.py sends them (one ``Sendrecv`` per step);
* ``send-recv``: the same messages as ``Send`` + ``Recv`` (even process rows first);

each with the buffer folded (``--fold``, ``smpy.shared_array`` as hpl.py --fold) or not.
``--mode frames`` prints instead the Python frames and bytecodes per message (``sys.settrace``,
every greenlet; np 48 by default), figures the machine's load does not move.

    python benchmarks/speed/swap_message.py                     # np 768, P 12, 4 columns, all 4 cases
    python benchmarks/speed/swap_message.py --cases sendrecv-fold --repeat 5
    python benchmarks/speed/swap_message.py --src /tmp/other-tree   # that tree's smpy
    python benchmarks/speed/swap_message.py --mode frames --cases sendrecv-fold --top 15

CPU time is the process's (``time.process_time``); quote the machine's load with it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from per_message import frames, use_tree  # this directory (sys.path[0] when run as a script)

HERE = Path(__file__).resolve().parent
CASES = ("sendrecv-fold", "sendrecv", "send-recv-fold", "send-recv")


def runner(src: Path, np: int, p: int, case: str, hostfile: str, accel: str | None, active: int):
    import smpy

    prog = str(HERE / "swap_roll.py")  # this tree's program, with the smpy of ``src``
    flags = (["--fold"] if case.endswith("-fold") else []) + (["--send-recv"] if case.startswith("send-recv") else [])
    cfg = {"smpi/host-speed": "55.27Gf", "smpy/shared-malloc-trim": "32MiB",
           "smpi/shared-malloc-blocksize": "64MiB"}
    if accel is not None:
        cfg["smpy/accel"] = accel

    def run(laps: int):
        r = smpy.run(prog, np=np, platform="taurus-fattree", hostfile=hostfile, cfg=cfg,
                     args=[str(p), str(laps), *flags, f"--active={active}"])
        if r.exit_code != 0:
            raise SystemExit(f"swap_roll.py failed ({case}): {r.stderr.strip().splitlines()[-1:]}")
        return r
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("cpu", "frames"), default="cpu")
    ap.add_argument("--top", type=int, default=0, help="frames: list the N functions with the most bytecodes")
    ap.add_argument("--np", type=int, default=None, help="ranks (default 768 for cpu, 48 for frames)")
    ap.add_argument("--p", type=int, default=12, help="process rows (hpl.py --ratio=4 at 768 ranks: 12)")
    ap.add_argument("--active", type=int, default=4,
                    help="process columns that roll (the others wait): 4 by default, few messages in flight "
                         "at once; np / p: all columns at once (the network model's share grows)")
    ap.add_argument("--short", type=int, default=2)
    ap.add_argument("--long", type=int, default=22)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, among {', '.join(CASES)}")
    ap.add_argument("--accel", choices=("auto", "on", "off"), default=None,
                    help="smpy/accel (default: $SMPY_ACCEL, else auto)")
    ap.add_argument("--src", type=Path, default=HERE.parent.parent, help="smpy source tree")
    a = ap.parse_args()
    src = use_tree(a.src)
    cases = [c for c in a.cases.split(",") if c]
    bad = [c for c in cases if c not in CASES]
    if bad:
        raise SystemExit(f"--cases: unknown {', '.join(bad)} (expected some of {', '.join(CASES)})")
    a.np = a.np or (768 if a.mode == "cpu" else 48)
    if a.np % a.p or (a.p % 2 and any(c.startswith("send-recv") for c in cases)):
        raise SystemExit(f"--p {a.p} must divide --np {a.np} (and be even for the send-recv cases)")
    if len(cases) > 1:  # one process per case: a folded run leaves folded ranges registered
        for case in cases:
            argv = [x for i, x in enumerate(sys.argv[1:]) if not (x.startswith("--cases") or
                                                               (i and sys.argv[i] == "--cases"))]
            subprocess.run([sys.executable, __file__, *argv, "--cases", case], check=True)
        return 0
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as hosts:
        hosts.write("".join(f"node-{i}:12\n" for i in range(256)))
        hosts.flush()
        for case in cases:
            run = runner(src, a.np, a.p, case, hosts.name, a.accel, a.active)
            if a.mode == "frames":
                frames(run, a.short, min(a.long, 6), a.top, case)
                continue
            run(a.short)  # warm up (imports, compilation)
            for i in range(a.repeat):
                c0 = time.process_time()
                r0 = run(a.short)
                c1 = time.process_time()
                r1 = run(a.long)
                c2 = time.process_time()
                m = r1.messages - r0.messages
                print(f"{case:15s} run {i + 1}: {m} messages, {((c2 - c1) - (c1 - c0)) / m * 1e6:7.2f} us CPU "
                      f"per message (accelerator {'on' if r1.accelerated else 'off'}), simulated "
                      f"{r1.stdout.split()[-1]} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
