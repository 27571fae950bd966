"""mpi4py.futures and mpi4py.util.pool under smpy, against real mpi4py on MPICH.

``MPIPoolExecutor`` spawns its workers (MPI_Comm_spawn) from a manager thread, so this
exercises dynamic processes and the simulated threads of :mod:`smpy.shim.green`;
``python -m mpi4py.futures`` takes the workers from COMM_WORLD instead.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from realmpi import needs_mpiexec, real_env, run_reference

import smpy
from smpy.cli.launch import run

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests" / "programs" / "futures_pool.py"
NO_COMPUTE = {"smpi/simulate-computation": "no"}
need_mpich = needs_mpiexec


def _real(np: int, *argv: str) -> list[str]:
    return run_reference(np, *argv, env=real_env(), cwd=str(PROG.parent)).stdout.splitlines()


EXPECTED_1 = [  # MPICH's output (the spawned workers form a world of 2)
    "map [2000, 2001, 2004, 2009, 2016, 2025, 2036, 2049]",
    "map chunks [2000, 2001, 2004, 2009, 2016]",
    "submit 81",
    "error ValueError bad 7",
    "starmap [32, 27]",
    "commexec [1000, 1001, 1004, 1009, 1016, 1025]",
    "pool [1, 2, 3] 8",
]


def test_pool_executor_spawns_workers() -> None:
    res = smpy.run(str(PROG), np=1, cfg=NO_COMPUTE, capture=True, echo=False)
    assert res.status == "ok", res.message
    assert res.stdout.splitlines() == EXPECTED_1
    assert res.spawned == 2 + 2  # MPIPoolExecutor(max_workers=2), then Pool(2)
    assert res.makespan_s > 0


@pytest.mark.slow
@need_mpich
def test_pool_executor_matches_mpich() -> None:
    res = smpy.run(str(PROG), np=1, cfg=NO_COMPUTE, capture=True, echo=False)
    assert res.status == "ok", res.message
    assert res.stdout.splitlines() == _real(1, str(PROG))


@pytest.mark.slow
@need_mpich
@pytest.mark.parametrize("np", [2, 4])
def test_m_mpi4py_futures_matches_mpich(np: int) -> None:
    res = run(None, np=np, cfg=NO_COMPUTE, capture=True, echo=False, module="mpi4py.futures", args=[str(PROG)])
    assert res.status == "ok", res.message
    assert res.spawned == 0
    assert res.stdout.splitlines() == _real(np, "-m", "mpi4py.futures", str(PROG))


def test_simulated_threads(tmp_path: Path) -> None:
    prog = tmp_path / "threads.py"
    prog.write_text(textwrap.dedent("""\
        import queue, threading, time
        from concurrent.futures import Future
        from mpi4py import MPI
        q, f, lock = queue.Queue(), Future(), threading.Lock()
        local = threading.local()
        local.name = "main"
        def worker():
            local.name = "worker"
            x = q.get()
            time.sleep(0.5)
            with lock:
                f.set_result(x + MPI.COMM_WORLD.allreduce(1))
        t = threading.Thread(target=worker)
        t.start()
        lock.acquire()
        q.put(10 * MPI.COMM_WORLD.Get_rank())
        t0 = MPI.Wtime()
        got = lock.acquire(timeout=0.25)  # held by this thread: times out in simulated time
        waited = MPI.Wtime() - t0
        lock.release()
        print(MPI.COMM_WORLD.Get_rank(), f.result(), got, round(waited, 2), local.name,
              MPI.Wtime() >= 0.5, flush=True)
        t.join()
        print(MPI.COMM_WORLD.Get_rank(), "joined", t.is_alive(), flush=True)
        """))
    res = smpy.run(str(prog), np=2, cfg=NO_COMPUTE, capture=True, echo=False)
    assert res.status == "ok", res.message
    assert sorted(res.stdout.splitlines()) == ["0 2 False 0.25 main True", "0 joined False",
                                               "1 12 False 0.25 main True", "1 joined False"]
