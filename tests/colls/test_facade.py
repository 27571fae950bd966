"""Collectives through the public facade (programs run with ``smpy.run``): every selector
and a few forced algorithms give the right results (IN_PLACE, all roots, lowercase,
non-commutative user ops), non-blocking collectives match and overlap computation.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import smpy

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
COLLS = HERE.parent / "programs" / "colls.py"


def run(program: Path, np: int, *args: str, cfg: dict | None = None):
    return smpy.run(str(program), np=np, args=list(args), cfg=cfg, capture=True)


def assert_all_ok(res, last: str | None = None) -> None:
    assert res.status == "ok", res.message
    for r in range(res.np):
        lines = res.rank_output(r).splitlines()
        bad = [ln for ln in lines if not ln.startswith("ok ")]
        assert not bad, f"rank {r}:\n" + "\n".join(bad)
        assert lines, f"rank {r} checked nothing"
        if last:
            assert lines[-1] == f"ok {last}"


CONFIGS = {
    "ompi": {},
    "mpich": {"smpi/coll-selector": "mpich"},
    "default": {"smpi/coll-selector": "default"},
    "mvapich2": {"smpi/coll-selector": "mvapich2"},
    "impi": {"smpi/coll-selector": "impi"},
    "simgrid_smp": {"smpi/bcast": "SMP_binary", "smpi/allreduce": "smp_rsag_lr", "smpi/reduce": "NTSL",
                    "smpi/allgather": "SMP_NTS", "smpi/alltoall": "3dmesh", "smpi/gather": "mvapich2_two_level",
                    "smpi/scatter": "mvapich2_two_level_direct", "smpi/reduce_scatter": "mvapich2_noncomm"},
    "rings": {"smpi/bcast": "scatter_LR_allgather", "smpi/allreduce": "lr", "smpi/reduce": "ompi_chain",
              "smpi/allgather": "NTSLR", "smpi/alltoall": "ring", "smpi/gather": "ompi_linear_sync",
              "smpi/scatter": "ompi_binomial", "smpi/barrier": "ompi_doublering", "smpi/scan": "ompi_linear",
              "smpi/exscan": "ompi_linear", "smpi/allgatherv": "mpich_ring", "smpi/alltoallv": "bruck",
              "smpi/reduce_scatter": "ompi_ring"},
    "trees": {"smpi/bcast": "ompi_split_bintree", "smpi/allreduce": "rab_rdb", "smpi/reduce": "ompi_binomial",
              "smpi/allgather": "bruck", "smpi/alltoall": "bruck", "smpi/gather": "ompi_binomial",
              "smpi/scatter": "ompi_binomial", "smpi/barrier": "ompi_tree", "smpi/scan": "mpich_rdb",
              "smpi/exscan": "mpich_rdb", "smpi/allgatherv": "mpich_rdb", "smpi/alltoallv": "pair",
              "smpi/reduce_scatter": "ompi_butterfly"},
    "arrival": {"smpi/bcast": "arrival_pattern_aware_wait", "smpi/reduce": "arrival_pattern_aware",
                "smpi/allreduce": "rab", "smpi/alltoall": "pair_rma"},
}
CASES = ["barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "gatherv",
         "scatterv", "allgatherv", "alltoallv", "scan", "inplace", "lowercase", "maxloc"]


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("np", [3, 4])
def test_blocking_collectives_under_each_config(config: str, np: int) -> None:
    for case in CASES:
        assert_all_ok(run(COLLS, np, case, cfg=CONFIGS[config]))


@pytest.mark.slow
@pytest.mark.parametrize(("np", "config"), [(1, "ompi"), (2, "ompi"), (3, "ompi"), (4, "ompi"), (5, "mpich"),
                                            (6, "default"), (7, "rings"), (8, "trees")])
def test_nonblocking_collectives_match(np: int, config: str) -> None:
    assert_all_ok(run(PROGRAMS / "icolls.py", np, cfg=CONFIGS[config]), last="done")


@pytest.mark.parametrize("algo", ["arrival_pattern_aware", "arrival_pattern_aware_wait", "arrival_scatter"])
@pytest.mark.parametrize("doubles", [3, 2500])  # one message / 8 KiB segments with a remainder
def test_arrival_bcast_leaves_user_messages_alone(algo: str, doubles: int) -> None:
    res = run(PROGRAMS / "arrival_probe.py", 5, "bcast", str(doubles), cfg={"smpi/bcast": algo})
    assert_all_ok(res)
    assert "ok user messages intact" in res.rank_output(0)


@pytest.mark.parametrize("doubles", [3, 2500])
def test_arrival_reduce_leaves_user_messages_alone(doubles: int) -> None:
    res = run(PROGRAMS / "arrival_probe.py", 5, "reduce", str(doubles), cfg={"smpi/reduce": "arrival_pattern_aware"})
    assert_all_ok(res)
    assert "ok user messages intact" in res.rank_output(0)


def _elapsed(mode: str, np: int = 8, seconds: float = 0.05, doubles: int = 2_000_000) -> float:
    # computation is injected (smpy.execute); the measured CPU time of the numpy work around
    # it would make the figures depend on the machine's load
    res = run(PROGRAMS / "overlap.py", np, mode, str(seconds), str(doubles),
              cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    return float(re.search(r"elapsed (\S+)", res.rank_output(0)).group(1))


@pytest.mark.slow
def test_iallreduce_overlaps_computation() -> None:
    """Iallreduce + smpy.execute + Wait takes max(comm, compute), not their sum."""
    comm, compute = _elapsed("comm"), _elapsed("compute")
    overlap, serial = _elapsed("overlap"), _elapsed("serial")
    assert comm > 0.01 and compute == pytest.approx(0.05, rel=1e-3)
    assert overlap == pytest.approx(max(comm, compute), rel=0.02)
    assert serial == pytest.approx(comm + compute, rel=0.02)
    assert overlap < serial - 0.5 * min(comm, compute)


def test_unmatched_nonblocking_collective_is_a_deadlock(tmp_path: Path) -> None:
    prog = tmp_path / "lonely.py"
    prog.write_text("from mpi4py import MPI\n"
                    "comm = MPI.COMM_WORLD\n"
                    "if comm.rank == 0:\n"
                    "    comm.Ibarrier().Wait()\n")
    res = run(prog, 3)
    assert res.status == "deadlock"
    assert "MPI_Ibarrier" in res.message


def test_request_test_polls_until_done(tmp_path: Path) -> None:
    prog = tmp_path / "poll.py"
    prog.write_text("import numpy as np\nfrom mpi4py import MPI\n"
                    "comm = MPI.COMM_WORLD\n"
                    "x = np.zeros(100000)\n"
                    "req = comm.Ibcast(x, root=0)\n"
                    "n = 0\n"
                    "while not req.Test():\n"
                    "    n += 1\n"
                    "st = MPI.Status()\n"
                    "print('ok polled' if comm.rank == 0 or n > 0 else 'FAIL no poll', flush=True)\n")
    res = run(prog, 4)
    assert res.status == "ok", res.message
    assert all(res.rank_output(r).strip() == "ok polled" for r in range(4))


@pytest.mark.slow
@pytest.mark.parametrize("np", [1, 2, 5, 8])
@pytest.mark.parametrize("algo", ["rab_rdb", "rdb", "ompi"])
def test_allreduce_working_in_the_receive_buffer(np: int, algo: str) -> None:
    res = run(PROGRAMS / "allreduce_in_place.py", np, cfg={"smpi/allreduce": algo})
    assert_all_ok(res, "bxor 40000")
