"""The launch cost of this machine's MPICH ``mpiexec`` (the defaults of smpy's spawn costs).

Runs, interleaved, REPS times each (default 30): ``python -c pass``, ``mpiexec -n 1`` and
``-n 2 python -c pass``, ``mpiexec -n 1 python -c 'from mpi4py import MPI'``, and prints the
median and minimum wall time of each, then the three costs of smpy.runtime.nodes from the
minima (the least disturbed runs on a shared machine):

* per node    c_node = T(mpiexec -n 1, pass) - T(python, pass)   (launcher and proxy)
* per process c_proc = T(mpiexec -n 2, pass) - T(mpiexec -n 1, pass)
* start-up    c_init = T(mpiexec -n 1, mpi4py) - c_node          (interpreter, import, MPI_Init)

    python benchmarks/workloads/launch_cost.py [REPS]
"""
import os
import statistics
import subprocess
import sys
import time

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
PY = sys.executable
MPIEXEC = os.path.join(os.path.dirname(PY), "mpiexec")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
ENV["OPENBLAS_NUM_THREADS"] = "1"
CMDS = {
    "python -c pass": [PY, "-c", "pass"],
    "mpiexec -n 1 python -c pass": [MPIEXEC, "-n", "1", PY, "-c", "pass"],
    "mpiexec -n 2 python -c pass": [MPIEXEC, "-n", "2", PY, "-c", "pass"],
    "mpiexec -n 1 python -c 'from mpi4py import MPI'": [MPIEXEC, "-n", "1", PY, "-c", "from mpi4py import MPI"],
}


def main() -> None:
    times: dict[str, list[float]] = {k: [] for k in CMDS}
    for _ in range(REPS):
        for name, cmd in CMDS.items():
            t = time.perf_counter()
            subprocess.run(cmd, env=ENV, check=True, timeout=120)
            times[name].append(time.perf_counter() - t)
    print(f"{'command':52s} {'median ms':>10s} {'min ms':>8s}   ({REPS} runs each, interleaved; load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, v in times.items():
        print(f"{name:52s} {statistics.median(v) * 1e3:10.1f} {min(v) * 1e3:8.1f}")
    m = {k: min(v) for k, v in times.items()}
    names = list(CMDS)
    node = m[names[1]] - m[names[0]]
    proc = m[names[2]] - m[names[1]]
    init = m[names[3]] - node
    print(f"smpy/spawn-node-cost    {node * 1e3:.1f}ms")
    print(f"smpy/spawn-process-cost {proc * 1e3:.1f}ms")
    print(f"smpy/spawn-init-cost    {init * 1e3:.1f}ms")


if __name__ == "__main__":
    main()
