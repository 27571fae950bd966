"""Scale demo: the LU example (examples/predict/lu.py) at N = 20000 on 144 ranks, in one process.

    python benchmarks/predict/scale_demo.py [--n 20000] [--np 144] [--nb 128] [--hosts 12]

The platform is a 12-host cluster of 12 cores each (144 cores, 10 Gbps / 50 us links); the
program runs with ``--sample`` (the trailing updates are timed on a few column chunks and the
rest injected, statistics shared by all ranks) and ``--fold`` (matrix and panel buffers are
``smpy.shared_array``: every rank's arrays map the same block, 64 MiB here: larger than the
last-level cache, or the computation on folded arrays is timed too fast). Prints the predicted
time, the emulation's wall and CPU time (user + sys of the emulating process, from the
kernel's accounting of the finished child), its peak RSS (the kernel's high-water mark,
``ru_maxrss``) and the peaks of USS and PSS (psutil, sampled every 0.2 s from this script),
and the load average before and after (the machine may be shared: wall time then measures
the other load, CPU time does not). RSS counts a folded page once per mapping that touches
it; with ``--trim SIZE`` (smpy/shared-malloc-trim, 32 MiB here, 0 = off) smpy drops those
page-table entries past SIZE so that RSS stays near what the process owns, and leaves the
page faults that follow out of the timed computation (N=20000: 167 MiB of RSS and 27.60 s
predicted, against 4.8 GiB and 27.52 s with ``--trim 0``). USS (pages
private to the process) and PSS (shared pages split between the processes mapping them)
count each page once. The per-rank numpy heaps (smpy/shim/rankheap.py) keep no free memory
here (``--heaps-total 0``: the shared allocator serves the ranks): 156 MiB of peak RSS and
28.12 s predicted; an earlier version of the heap model with smpyrun's default of 1 GiB held
718 MiB for 28.51 s (one run each; without per-rank heaps 167 MiB and 28.29 s).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
LU = ROOT / "examples" / "predict" / "lu.py"


def platform_yaml(hosts: int, cores: int, memory: str = "") -> str:
    mem = ""
    if memory:
        bandwidth, core_bandwidth = memory.split(",")
        mem = f"     memory: {{bandwidth: {bandwidth}, core_bandwidth: {core_bandwidth}}},\n"
    return (f"name: demo{hosts}x{cores}\nconfig: {{network/model: SMPI}}\nclusters:\n"
            f"  - {{name: c, prefix: node-, suffix: '', radical: 0-{hosts - 1}, cores: {cores}, speed: 1Gf,\n"
            "     bandwidth: 10Gbps, latency: 50us, sharing: SPLITDUPLEX,\n" + mem +
            "     backbone: {bandwidth: 100Gbps, latency: 0us, sharing: SHARED}}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--np", type=int, default=144)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--hosts", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--plain", action="store_true", help="without --sample/--fold (for comparison)")
    ap.add_argument("--blocksize", default="64MiB",
                    help="smpi/shared-malloc-blocksize (larger than the last-level cache: computation on "
                         "folded arrays is then timed at memory speed, not from a cache-resident block)")
    ap.add_argument("--trim", default="32MiB",
                    help="smpy/shared-malloc-trim (0: keep folded page-table entries; RSS then counts "
                         "each folded page once per mapping)")
    ap.add_argument("--heaps-total", default="0",
                    help="smpy/rank-heaps-total (0: the ranks' large arrays come from the shared allocator, as "
                         "without per-rank heaps; the sampled iterations are steady state, where that gives "
                         "warm pages as a rank's own heap would; 1GiB, smpyrun's default, lets each rank's "
                         "heap keep what glibc would: 718 MiB of peak RSS here with an earlier heap model, "
                         "predicted time +0.1 %%)")
    ap.add_argument("--memory", default="", metavar="B,b1",
                    help="host memory bandwidths for the contention model, e.g. 120GBps,20GBps")
    ap.add_argument("--memory-fraction", type=float, default=0.0,
                    help="memory-bound fraction of every region (a factor file with only '*'), "
                         "e.g. 0.48, what calibrate compute --contention measured for lu.py at N = 1792")
    ap.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE",
                    help="more smpy configuration items (repeatable)")
    ns = ap.parse_args()
    cores = (ns.np + ns.hosts - 1) // ns.hosts
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(platform_yaml(ns.hosts, cores, ns.memory))
        pfile = fh.name
    if ns.memory_fraction:
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
            fh.write(f'"start:stop","ratio","memory_fraction"\n"*",1,{ns.memory_fraction}\n')
            ns.cfg.append(f"smpi/comp-adjustment-file:{fh.name}")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    hints = [] if ns.plain else ["--sample", "--fold"]
    cmd = [sys.executable, "-m", "smpy", "-np", str(ns.np), "--platform", pfile,
           f"--cfg=smpy/shared-malloc-trim:{ns.trim}", f"--cfg=smpi/shared-malloc-blocksize:{ns.blocksize}",
           f"--cfg=smpy/rank-heaps-total:{ns.heaps_total}", *(f"--cfg={c}" for c in ns.cfg), str(LU), str(ns.n), str(ns.nb), "--no-check", *hints]
    print(f"[demo] {' '.join(cmd)}", flush=True)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    ps = psutil.Process(proc.pid)
    peak_uss = peak_pss = 0
    import threading

    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        while proc.poll() is None:
            try:
                mi = ps.memory_full_info()
                peak_uss, peak_pss = max(peak_uss, mi.uss), max(peak_pss, getattr(mi, "pss", 0))
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
            if time.perf_counter() - t0 > ns.timeout:
                proc.kill()
                print(f"[demo] timeout after {ns.timeout:.0f} s", flush=True)
                break
            time.sleep(0.2)
    finally:
        proc.wait()
        reader.join(5)
        os.unlink(pfile)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # the emulating process (waited for)
    cpu, peak_rss = ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024
    text = "".join(out)
    print(text, end="")
    m = re.search(r"^# elapsed ([0-9.eE+-]+) s", text, re.M)
    print(f"[demo] N={ns.n} NB={ns.nb} np={ns.np} on {ns.hosts}x{cores} cores, "
          f"{'plain' if ns.plain else 'sampling + folding'}, smpy/shared-malloc-trim:{ns.trim}, "
          f"smpi/shared-malloc-blocksize:{ns.blocksize}"
          + (f", memory {ns.memory}, fraction {ns.memory_fraction}" if ns.memory else ""))
    print(f"[demo] predicted time {float(m.group(1)) if m else float('nan'):.3f} s")
    print(f"[demo] wall {wall:.1f} s, CPU {cpu:.1f} s (user + sys), peak RSS {peak_rss / 2**20:.0f} MiB, "
          f"peak USS {peak_uss / 2**20:.0f} MiB, peak PSS {peak_pss / 2**20:.0f} MiB, exit {proc.returncode}")
    print(f"[demo] load average {load0[0]:.1f} before, {load1[0]:.1f} after (2 cores: nproc {os.cpu_count()})")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
