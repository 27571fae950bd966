"""MPI semantics of smpy's ``mpi4py.MPI``, checked by small programs run with ``smpy.run``.

The programs in ``tests/programs/`` run unchanged under real ``mpiexec``; each check prints
``ok <name>`` or ``FAIL <name>: got ..., want ...``. Timing tests compute their expectations
from the platform numbers (model arithmetic, no measured time).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import smpy

PROGRAMS = Path(__file__).resolve().parent / "programs"
NO_COMPUTE = {"smpi/simulate-computation": "no"}


def run(program: str, np: int, *args: str, **kw):
    return smpy.run(str(PROGRAMS / program), np=np, args=list(args), capture=True, **kw)


def ok_names(res, rank: int) -> set[str]:
    """Names of the rank's passed checks; fails on any other output."""
    lines = res.rank_output(rank).splitlines()
    bad = [ln for ln in lines if not ln.startswith("ok ")]
    assert not bad, f"rank {rank}:\n" + "\n".join(bad)
    return {ln[3:] for ln in lines}


def assert_checks(res, expected: dict[int, set[str]]) -> None:
    assert res.status == "ok", res.message
    for r in range(res.np):
        assert ok_names(res, r) == expected.get(r, set()), f"rank {r}"


def everyone(np: int, names: set[str]) -> dict[int, set[str]]:
    return {r: names for r in range(np)}


# -- point to point ---------------------------------------------------------------------------
@pytest.mark.parametrize("np", [2, 4])
def test_non_overtaking(np: int) -> None:
    res = run("p2p.py", np, "nonovertaking")
    assert_checks(res, {0: {"same_tag", "any_tag", "any_source", "preposted"}})


@pytest.mark.parametrize("np", [2, 5])
def test_any_source_status(np: int) -> None:
    res = run("p2p.py", np, "anysource_status")
    names = {"sources"} | {f"status_{s}" for s in range(1, np)} | {f"data_{s}" for s in range(1, np)}
    assert_checks(res, {0: names})


@pytest.mark.parametrize("np", [1, 3])
def test_proc_null(np: int) -> None:
    res = run("p2p.py", np, "proc_null")
    assert_checks(res, everyone(np, {"recv", "lower_recv", "irecv", "sendrecv", "probe", "iprobe"}))


def test_probe_and_iprobe_then_recv() -> None:
    res = run("p2p.py", 2, "probe")
    assert_checks(res, {0: {"iprobe_empty", "probe_status", "probe_recv", "iprobe_status", "iprobe_recv",
                            "iprobe_after"}})


@pytest.mark.parametrize("np", [2, 4])
def test_waitany_waitall_testall_waitsome(np: int) -> None:
    res = run("p2p.py", np, "multi")
    assert_checks(res, {0: {"waitany", "waitany_null", "waitany_none", "waitall", "testall", "waitsome_nonempty",
                            "waitsome", "lower_waitall"}})
    # the senders' sleeps are simulated: the last sends happen after 1 s
    assert res.makespan_s > 1.0


def test_cancel_unmatched_irecv() -> None:
    res = run("p2p.py", 2, "cancel")
    assert_checks(res, {0: {"cancelled", "after_cancel"}})


def test_truncation_raises_err_truncate() -> None:
    res = run("p2p.py", 2, "truncate")
    assert_checks(res, {0: {"recv_truncate", "wait_truncate"}})


REUSE_CHECKS = ({f"reuse_{what}_{n}" for what in ("send", "preposted", "isend", "bytearray", "persistent")
                 for n in (1, 1024, 8191, 8192, 131072)} | {"reuse_bsend", "reuse_sendrecv_replace",
                                                           "reuse_truncate_preposted"})


EAGER_ALL = {"smpi/async-small-thresh": 1 << 30, "smpi/send-is-detached-thresh": 1 << 30, **NO_COMPUTE}


@pytest.mark.parametrize("np,cfg", [(2, None), (3, NO_COMPUTE), (2, EAGER_ALL)])
def test_send_buffer_reuse_after_send_returns(np: int, cfg: dict | None) -> None:
    """Payloads are borrowed from the sender until the send completes: a buffer overwritten
    after Send returns (or Wait on Isend) never changes what the receiver gets, whether the
    send waits for its receive (rendezvous) or completes at once (detached, eager)."""
    res = run("p2p.py", np, "reuse", cfg=cfg)
    assert_checks(res, {0: {"reuse_sendrecv_replace"}, 1: REUSE_CHECKS})


def test_send_buffer_reuse_under_mpich(reference_run) -> None:
    """The reuse program's checks hold under MPICH too (they test MPI, not smpy)."""
    out = reference_run(2, str(PROGRAMS / "p2p.py"), "reuse").stdout
    assert "FAIL" not in out, out
    # the two ranks' lines may interleave in mpiexec's output ("ok aok b\n\n")
    names = {t.strip() for t in out.split("ok ") if t.strip()}
    assert names == REUSE_CHECKS | {"reuse_sendrecv_replace"}, out


def test_waitall_with_a_failed_request() -> None:
    res = run("p2p.py", 2, "waitall_error")
    assert_checks(res, {0: {"waitall_in_status", "failed_status"}})


@pytest.mark.parametrize("np", [1, 2])
def test_invalid_rank_and_tag(np: int) -> None:
    res = run("p2p.py", np, "errors")
    assert_checks(res, everyone(np, {"send_rank", "send_rank_neg", "lower_send_rank", "recv_rank", "send_tag",
                                     "recv_tag", "lower_send_tag", "isinstance"}))


def test_tag_above_tag_ub_is_err_tag() -> None:
    res = run("p2p.py", 1, "tag_bound")
    assert_checks(res, {0: {"send_tag_above_ub", "recv_tag_above_ub"}})


def test_buffer_specs() -> None:
    res = run("p2p.py", 2, "bufspecs")
    assert_checks(res, {1: {"numpy", "buf_type", "buf_count_type", "bytes", "bytearray_memoryview",
                            "memoryview_slice", "typecode", "count_displ", "count_displ_tuple"}})


@pytest.mark.parametrize("np", [2, 3])
def test_lowercase_p2p(np: int) -> None:
    res = run("p2p.py", np, "lowercase")
    expected = everyone(np, {"sendrecv"})
    expected[0] = {"sendrecv", "ssend_reply"}
    expected[1] = {"sendrecv", "send_recv", "ssend", "isend_irecv", "issend_test"}
    assert_checks(res, expected)


def test_synchronous_sends_wait_for_the_receiver() -> None:
    # computation not simulated: rank 0's measured start-up would otherwise shorten the
    # 0.2 s the receiver sleeps from its own (earlier) start, as seen from rank 0's t0
    res = run("p2p.py", 3, "sync", cfg=NO_COMPUTE)
    expected = everyone(3, {"sendrecv_replace"})
    expected[0] = {"sendrecv_replace", "ssend_waits", "issend_pending", "issend_waits"}
    assert_checks(res, expected)


def test_wtime_increases_across_send_recv() -> None:
    res = run("p2p.py", 2, "wtime")
    assert_checks(res, everyone(2, {"wtime_increases"}))


# -- collectives ------------------------------------------------------------------------------
COLL_CASES = ["barrier", "bcast", "reduce", "allreduce", "maxloc", "gather", "scatter", "allgather", "alltoall",
              "gatherv", "scatterv", "allgatherv", "alltoallv", "scan", "inplace", "lowercase"]


@pytest.mark.slow
@pytest.mark.parametrize("np", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("case", COLL_CASES)
def test_collectives(case: str, np: int) -> None:
    res = run("colls.py", np, case)
    assert res.status == "ok", res.message
    for r in range(np):
        assert ok_names(res, r), f"rank {r} checked nothing"


def test_collectives_every_root_is_checked() -> None:
    res = run("colls.py", 4, "bcast")
    names = set().union(*(ok_names(res, r) for r in range(4)))
    assert names == {f"{k}_{root}" for k in ("Bcast", "Bcast_int", "Bcast_big") for root in range(4)}
    res = run("colls.py", 3, "reduce")
    roots = {name for name in ok_names(res, 2) if name.startswith("Reduce_")}
    assert roots == {f"Reduce_{op}_2" for op in ("SUM", "MAX", "MIN", "PROD")}


@pytest.mark.parametrize("np", [1, 2, 5])
def test_dup_and_split(np: int) -> None:
    res = run("comms.py", np)
    common = {"dup_rank_size", "dup_compare", "dup_is_not_world", "dup_allreduce", "dup_of_dup", "split_size",
              "split_rank", "split_allreduce", "split_allgather", "split_Allreduce", "done"}
    expected = {}
    for r in range(np):
        names = set(common)
        color_size = len([q for q in range(np) if q % 2 == r % 2])
        if color_size >= 2:
            names.add("split_p2p")
        names.add("split_undefined" if r == 0 else "split_rest")
        if np >= 2 and r == 1:
            names |= {"world_first", "dup_second", "world_iprobe_sees_nothing", "dup_buffer"}
        expected[r] = names
    assert_checks(res, expected)


# -- simulated time ---------------------------------------------------------------------------
def test_sleep_is_simulated() -> None:
    res = run("timing.py", 2, "sleep")
    assert res.status == "ok", res.message
    assert res.makespan_s >= 0.5
    exact = run("timing.py", 2, "sleep", cfg=NO_COMPUTE)
    assert exact.makespan_s == pytest.approx(0.5, rel=1e-12)


def test_wtime_sees_the_sleep() -> None:
    res = run("timing.py", 2, "wtime_sleep", cfg={**NO_COMPUTE, "smpi/wtime": "0"})
    assert res.status == "ok", res.message
    for r in range(2):
        rank, dt = res.rank_output(r).split()
        assert int(rank) == r
        assert float(dt) == pytest.approx(0.5, rel=1e-12)


def test_execute_seconds_on_idle_host() -> None:
    res = run("timing.py", 1, "execute", cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert res.makespan_s == pytest.approx(1.0, rel=1e-12)
    with_compute = run("timing.py", 1, "execute")
    assert with_compute.makespan_s >= 1.0


SPEED_F = 2e9  # flop/s of one core of every host of the platform below
PLATFORM = f"""\
name: tiny
hosts:
  - {{name: solo, speed: {SPEED_F:g}f, cores: 1}}
  - {{name: other, speed: {SPEED_F:g}f, cores: 1}}
  - {{name: duo, speed: {SPEED_F:g}f, cores: 2}}
links:
  - {{name: l1, bandwidth: 1GBps, latency: 10us}}
routes:
  - {{src: solo, dst: other, links: [l1]}}
  - {{src: solo, dst: duo, links: [l1]}}
"""


def _flops_run(tmp_path: Path, hosts: list[str], flops: float):
    plat = tmp_path / "tiny.yaml"
    plat.write_text(PLATFORM)
    hostfile = tmp_path / f"hosts-{'-'.join(hosts)}"
    hostfile.write_text("\n".join(hosts) + "\n")
    res = run("timing.py", len(hosts), "flops", repr(flops), platform=str(plat), hostfile=str(hostfile),
              cfg=NO_COMPUTE)
    assert res.status == "ok", res.message
    assert [r.host for r in res.ranks] == hosts
    return res


def test_ranks_share_a_core(tmp_path: Path) -> None:
    flops = 1e9
    alone = _flops_run(tmp_path, ["solo"], flops)
    assert alone.makespan_s == pytest.approx(flops / SPEED_F, rel=1e-12)
    # two ranks on one 1-core host: each runs at SPEED_F / 2
    shared = _flops_run(tmp_path, ["solo", "solo"], flops)
    assert shared.makespan_s == pytest.approx(2 * flops / SPEED_F, rel=1e-12)
    assert [r.end_time_s for r in shared.ranks] == pytest.approx([2 * flops / SPEED_F] * 2, rel=1e-12)
    # on two hosts they do not interfere
    apart = _flops_run(tmp_path, ["solo", "other"], flops)
    assert apart.makespan_s == pytest.approx(flops / SPEED_F, rel=1e-12)
    # a 2-core host runs two at full speed; three share 2 cores: rate 2 * SPEED_F / 3 each
    duo2 = _flops_run(tmp_path, ["duo", "duo"], flops)
    assert duo2.makespan_s == pytest.approx(flops / SPEED_F, rel=1e-12)
    duo3 = _flops_run(tmp_path, ["duo", "duo", "duo"], flops)
    assert duo3.makespan_s == pytest.approx(flops / (2 * SPEED_F / 3), rel=1e-12)
