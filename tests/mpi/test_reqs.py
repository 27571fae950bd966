"""Requests and the operations of helper "reqs" (persistent, partitioned, buffered and ready
point-to-point; persistent collectives; generalized requests; Reduce_scatter, Alltoallw;
Status memory): ``tests/programs/reqs.py`` prints the same lines under smpy as under real
MPICH, and the lines smpy prints have the values MPI defines."""

from __future__ import annotations

from pathlib import Path

import pytest
from realmpi import needs_mpiexec, real_env, run_reference

import smpy

PROG = Path(__file__).resolve().parents[1] / "programs" / "reqs.py"


def _smpy_lines(np: int) -> list[str]:
    res = smpy.run(str(PROG), np=np, cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    return sorted(line for line in res.stdout.splitlines() if line.strip())


def _values(lines: list[str], rank: int) -> dict[str, str]:
    out = {}
    for line in lines:
        r, name, *rest = line.split(" ", 2)
        if int(r) == rank:
            key = name if name not in ("persistent", "allreduce_init", "partitioned") else f"{name} {rest[0].split()[0]}"
            out[key] = rest[0] if rest else ""
    return out


@pytest.mark.parametrize("np", [1, 2, 3])
def test_reqs_values(np: int) -> None:
    lines = _smpy_lines(np)
    for rank in range(np):
        v = _values(lines, rank)
        src = (rank - 1) % np
        assert v["types"] == "Prequest Prequest"
        assert v["persistent 2"] == f"2 [{10 * src + 2}, {10 * src + 2}, {10 * src + 2}, {10 * src + 2}] {src} 7 4"
        assert v["after_wait_not_null"] == "True True True"
        assert v["inactive_status"] == "-2 -1 0 False"
        assert v["inactive_waitany"] == "-32766 (-32766, True)"
        assert v["inactive_waitsome"] == "None True"
        assert v["freed"] == "True True"
        assert v["bsend_init"] == str([src + i for i in range(8)])
        assert v["detach_returns_buffer"] == "True"
        assert v["bsend_no_buffer"] == "True"
        assert v["isendrecv"] == str([float(src)] * 3)
        assert v["allreduce_init 1"] == "1 " + str([sum(r + 2 for r in range(np))] * 2)
        assert v["bcast_init"] == str([float(np - 1)] * 3)
        assert v["reduce_scatter_block"] == str([sum(2 * rank + k + r for r in range(np)) for k in range(2)])
        assert v["alltoall_count"] == str([100 * r + rank for r in range(np)] + [0] * np)
        assert v["alltoallw"] == str([i for i in range(np) for _ in range(2)])
        assert v["partitioned 1"] == f"1 False {[10 * src + k for k in range(6)]}"
        assert v["grequest"] == "3 4 ['cancel False', 'free'] True"
        assert v["grequest_obj"] == "obj"
        assert v["get_status"] == f"True {rank} 11 True"
        assert v["objs"] == "[None, 'x']"
        assert v["tomemory"] == "[0, 0, 1, 2, 3]"
        assert v["tomemory_write"] == "5"
        assert v["statuses_extended"] == "3 [-2, -2, -2]"


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np", [1, 2])
def test_reqs_same_as_mpich(np: int) -> None:
    real = run_reference(np, str(PROG), env=real_env())
    assert sorted(line for line in real.stdout.splitlines() if line.strip()) == _smpy_lines(np)


ERRORS_PROG = PROG.with_name("reqs_errors.py")
#: what real MPICH 4.x + mpi4py 4.1.2 print (tests/programs/reqs_errors.py, np=1)
ERRORS_EXPECTED = """\
bsend_no_buffer error 1
bsend_too_big error 1
bsend_fits ok
detach True
bsend_proc_null ok
precv_any_source error 6
pready_out_of_range error 15
message_pickle True
request_pickle True
prequest_pickle cannot serialize 'mpi4py.MPI.Prequest' instance
status_pickle 1 2 3 5 20
prequest_of_grequest TypeError
message_iprobe_none True
message_probe hi False
greq_handle True True
message_copy_pickle True True
""".splitlines()


def test_reqs_errors_as_mpich() -> None:
    res = smpy.run(str(ERRORS_PROG), np=1, cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    assert res.stdout.splitlines() == ERRORS_EXPECTED
