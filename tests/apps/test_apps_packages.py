"""PyPI packages built on mpi4py, run unmodified under ``smpyrun`` and under MPICH's
``mpiexec`` (docs/compatibility.md, "Packages tried"): what they print must be the same
(all these programs are seeded, so the numbers match to the last digit).

* emcee's EnsembleSampler over schwimmbad's MPIPool, zeus's ChainManager (ranks split in
  two chains with a pool each), UltraNest's MPI nested sampling;
* DEAP's genetic algorithm with mpi4py.futures' MPIPoolExecutor as its map, under
  ``-m mpi4py.futures`` and spawning its workers (deap.creator is per rank);
* mpi-master-slave's WorkQueue (Iprobe polling master);
* a pytest-mpi suite over mpipartition (pytest_mpi_suite/), run by every rank as
  ``mpiexec -n N python -m pytest --with-mpi``: each rank's per-test outcomes, a test that
  fails on rank 1 only included (its pytest exits 1, the others run on);
* pylops-mpi: a distributed least-squares solve (cgls of a block-diagonal operator).

A test skips only when its package (or mpiexec) is absent; a failed reference run fails it.
Under MPICH, schwimmbad's and mpi-master-slave's runs sometimes end with exit code 9 after
printing everything (messages left unreceived at exit): their output up to the last line is
compared, as in test_apps_pools.py.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import MPIEXEC, app_env, run_reference

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


_env = app_env


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def _needs(*modules: str):
    return pytest.mark.skipif(not _have(*modules), reason=f"{', '.join(modules)} not installed")


def _smpy(np: int, *args: str, cwd: Path = HERE, env: dict[str, str] | None = None,
          timeout: float = 300) -> tuple[int | None, str, str]:
    e = _env(True)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np), *args], cwd=cwd, env=e,
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def _reference(np: int, *args: str, last: str | None = None, cwd: Path = HERE,
               env: dict[str, str] | None = None) -> str:
    """MPICH's output; with ``last``, the output up to the line starting with it, tried 3
    times (runs that end with Hydra's exit-9 banner after the program's output count)."""
    e = _env(False)
    e.update(env or {})
    if last is None:
        return run_reference(np, *args, cwd=cwd, env=e, timeout=300).stdout
    out = ""
    for _attempt in range(3):
        out = run_reference(np, *args, cwd=cwd, env=e, timeout=300, check=False).stdout
        lines = out.splitlines(keepends=True)
        ends = [i for i, ln in enumerate(lines) if ln.startswith(last)]
        if ends:
            return "".join(lines[:ends[-1] + 1])
    raise AssertionError(f"the MPICH reference run did not print {last!r} in 3 attempts: {out[-300:]}")


@_needs("emcee", "schwimmbad")
def test_emcee_with_schwimmbad_pool() -> None:
    code, out, err = _smpy(4, "emcee_pool.py")
    assert code == 0, err
    assert out.splitlines()[0] == "shape (50, 16, 3)" and out.endswith("done\n")
    if MPIEXEC is not None:
        assert out == _reference(4, "emcee_pool.py", last="done")


@_needs("zeus")
def test_zeus_chain_manager() -> None:
    code, out, err = _smpy(4, "zeus_chains.py")
    assert code == 0, err
    assert out.splitlines()[0] == "chains 2 [(360, 3), (360, 3)]"
    if MPIEXEC is not None:
        assert out == _reference(4, "zeus_chains.py")


@_needs("ultranest")
def test_ultranest_mpi() -> None:
    code, out, err = _smpy(4, "ultranest_fit.py")
    assert code == 0, err
    lines = out.splitlines()
    assert any(ln.startswith("logz -5.4") for ln in lines) and lines[-1].startswith("post ")
    assert lines.count("[ultranest] done iterating.") == 1  # rank 0 logs (on stdout), once
    if MPIEXEC is not None:
        assert out == _reference(4, "ultranest_fit.py")


@_needs("deap")
@pytest.mark.parametrize("np", [1, 4])
def test_deap_with_mpi4py_futures(np: int) -> None:
    args = ["deap_onemax.py"] if np == 1 else ["-m", "mpi4py.futures", "deap_onemax.py"]
    code, out, err = _smpy(np, *args)
    assert code == 0, err
    assert "RuntimeWarning" not in err  # each process creates its own deap.creator classes
    assert out.startswith("best ") and out.endswith(f"workers {max(1, np - 1)}\n")
    if MPIEXEC is not None:
        assert out == _reference(np, *args)


@_needs("mpi_master_slave")
def test_mpi_master_slave_work_queue() -> None:
    code, out, err = _smpy(4, "mms_queue.py")
    assert code == 0, err
    assert out.splitlines()[0] == "results " + str([((i + 100) ** 2, True) for i in range(30)])
    if MPIEXEC is not None:
        assert out == _reference(4, "mms_queue.py", last="done")


def _suite_outcomes(np: int, tmp_path: Path, smpy: bool, runner: tuple[str, ...] = ()
                    ) -> tuple[int | None, dict[int, str]]:
    suite = HERE / "pytest_mpi_suite"
    where = tmp_path / ("smpy" if smpy else "mpich")
    where.mkdir()
    env = {"RANKREPORT_DIR": str(where)}
    args = [*runner, "-m", "pytest", "--with-mpi", "-p", "rankreport", "-q"]
    if smpy:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(suite)])
        code, _, err = _smpy(np, *args, cwd=suite, env=env)
    else:
        env["PYTHONPATH"] = str(suite)
        e = _env(False)
        e.update(env)
        p = run_reference(np, *args, cwd=suite, env=e, timeout=300, check=False)
        code, err = p.returncode, p.stderr
    files = {r: where / f"results-{np}-{r}.txt" for r in range(np)}
    assert all(f.exists() for f in files.values()), err[-2000:]
    return code, {r: f.read_text() for r, f in files.items()}


@_needs("pytest_mpi", "mpipartition")
@pytest.mark.parametrize("runner", [(), ("-m", "mpi4py")], ids=["python", "mpi4py-runner"])
def test_pytest_mpi_suite_over_mpipartition(runner: tuple[str, ...], tmp_path: Path) -> None:
    """python -m pytest: rank 1's session fails (pytest's sys.exit(1)), the others end theirs.
    python -m mpi4py -m pytest: mpi4py's runner turns rank 1's exit into MPI_Abort(1) after
    its exit handlers, so the ranks still in their session then are killed (smpy.cli.rank_end):
    under mpiexec the kill reaches them 8-15 ms after rank 1's exit (measured: 3 runs of a
    loop printing the time, loaded 2-core VM), when they have usually ended; under smpy at
    that simulated moment, so a rank whose last test ends later is cut short."""
    np = 4
    code, outcomes = _suite_outcomes(np, tmp_path, smpy=True, runner=runner)
    assert code == 1  # rank 1's session failed
    for r, text in outcomes.items():
        lines = text.splitlines()
        if not runner or r == 1:
            assert lines[-1] == f"exitstatus {1 if r == 1 else 0}", text
        assert "suite_decomp.py::test_exchange_by_key call passed" in lines
        assert "suite_decomp.py::test_needs_64_ranks setup skipped" in lines
    if MPIEXEC is not None:
        rcode, ref = _suite_outcomes(np, tmp_path, smpy=False, runner=runner)
        assert rcode == code
        if not runner:
            assert outcomes == ref
            return
        assert outcomes[1] == ref[1]
        for r in (0, 2, 3):  # the tests a killed rank completed are the reference's first ones
            done = outcomes[r].splitlines()[:-1]
            assert done == ref[r].splitlines()[:len(done)], (outcomes[r], ref[r])


@_needs("pylops_mpi")
def test_pylops_mpi_cgls() -> None:
    """The distributed dot products are allreduces whose summation order is the algorithm's:
    MPICH's order (smpi/coll-selector:mpich) gives MPICH's digits; the default (ompi, as
    SMPI) sums in another order, and 30 CGLS iterations on this ill-conditioned problem
    carry the difference into the 6th digit (docs/compatibility.md)."""
    code, out, err = _smpy(4, "--cfg=smpi/coll-selector:mpich", "pylops_cgls.py")
    assert code == 0, err
    assert out.startswith("iterations 30 istop 2\n")
    code, default, err = _smpy(4, "pylops_cgls.py")
    assert code == 0, err
    r2 = [float(o.splitlines()[1].split()[1]) for o in (out, default)]
    assert abs(r2[0] - r2[1]) < 1e-5 * r2[0]
    if MPIEXEC is not None:
        assert out == _reference(4, "pylops_cgls.py")
