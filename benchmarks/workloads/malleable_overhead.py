"""CPU cost of emulating the malleable example (examples/workloads/malleable.py).

Three commands, alternating, REPS times each (default 3), CPU time (user + sys of the child
processes, from getrusage) and wall time, medians:

* ``compute``: the example's tasks computed in one plain Python process (the real work);
* ``smpyrun``: the example emulated (1 master + 10 spawned workers on malleable.yaml);
* ``mpiexec``: the example under the venv's MPICH mpiexec (11 real processes).

The emulator's overhead is smpyrun's CPU minus the computation's.

    python benchmarks/workloads/malleable_overhead.py [REPS]
"""
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "workloads" / "malleable.py"
PLAT = EX.with_name("malleable.yaml")
REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
PHASES = "2,8,12,4,0,6"
BIN = os.path.dirname(sys.executable)
#: the example's work() alone (without importing mpi4py), over every task
COMPUTE = (f"import ast; src = open({str(EX)!r}).read(); "
           "fn = [d for d in ast.parse(src).body if getattr(d, 'name', '') == 'work']; ns = {}; "
           "exec(compile(ast.Module(fn, []), 'work', 'exec'), ns); "
           f"n = sum(int(x) for x in {PHASES!r}.split(',')); print(sum(ns['work'](t) for t in range(n)) % 7)")
CMDS = {
    "compute": [sys.executable, "-c", COMPUTE],
    "smpyrun": [os.path.join(BIN, "smpyrun"), "-np", "1", "--platform", str(PLAT), str(EX), PHASES],
    "mpiexec": [os.path.join(BIN, "mpiexec"), "-n", "1", sys.executable, str(EX), PHASES],
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    real_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    cpu: dict[str, list[float]] = {k: [] for k in CMDS}
    wall: dict[str, list[float]] = {k: [] for k in CMDS}
    for _ in range(REPS):
        for name, cmd in CMDS.items():
            c0, t0 = _cpu(), time.perf_counter()
            subprocess.run(cmd, env=real_env if name == "mpiexec" else env, check=True, timeout=600,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu() - c0)
    print(f"malleable example, phases {PHASES}, {REPS} runs each (load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores): median CPU s, median wall s")
    for name in CMDS:
        print(f"{name:8s} CPU {statistics.median(cpu[name]):7.3f} s   wall {statistics.median(wall[name]):7.3f} s")
    over = statistics.median(cpu["smpyrun"]) - statistics.median(cpu["compute"])
    print(f"emulation overhead (smpyrun CPU - compute CPU): {over:.3f} s for 11 processes, 10 spawned")


if __name__ == "__main__":
    main()
