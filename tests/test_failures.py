"""Failures of hosts and links during a run: the platform's failure models and their seeded
draw, --fail, the Hydra-style abort, ULFM semantics (ERR_PROC_FAILED, revoke, agree, shrink)
and the reliability sampler against exp(-N T / MTBF)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import smpy
from smpy.platform import load_platform_data
from smpy.platform.errors import PlatformError
from smpy.platform.failures import (
    Profile,
    component_rng,
    first_failure,
    parse_fail,
    parse_profile,
    transitions,
)

ROOT = Path(__file__).resolve().parents[1]

LOOP = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
for it in range(20):
    smpy.sleep(0.1)
    comm.allreduce(comm.rank)
print("done", comm.rank)
"""


#: exact simulated times: the program's Python computation is not timed
EXACT = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}


def _prog(tmp_path: Path, text: str, name: str = "prog.py") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- the abort (auto-cleanup, Hydra's default) ------------------------------------------------
def test_host_failure_kills_exactly_its_ranks_and_aborts_the_job(tmp_path: Path) -> None:
    # default platform, round-robin placement: 8 ranks on node-0..7; node-3 fails at 0.55 s
    res = smpy.run(_prog(tmp_path, LOOP), np=8, capture=True, cfg={**EXACT, "smpy/fail": "node-3@0.55s"})
    assert res.status == "failed" and res.exit_code == 137
    assert res.lost_ranks == {3: 0.55}
    assert res.ranks[3].end_time_s == 0.55
    assert res.makespan_s == pytest.approx(0.55 + 1e-3)  # the detection delay
    assert res.failures == [{"time_s": 0.55, "kind": "host", "name": "node-3", "on": False}]
    assert "BAD TERMINATION" in res.message and "lost ranks 3" in res.message
    assert "done" not in res.stdout


def test_two_ranks_per_host_both_die(tmp_path: Path) -> None:
    hf = tmp_path / "hosts"
    hf.write_text("node-0:2\nnode-1:2\n")
    res = smpy.run(_prog(tmp_path, LOOP), np=4, hostfile=str(hf), capture=True,
                   cfg={**EXACT, "smpy/fail": "node-1@0.25s", "smpy/failure-detection-delay": "0.1"})
    assert res.status == "failed" and res.lost_ranks == {2: 0.25, 3: 0.25}
    assert res.makespan_s == pytest.approx(0.35)


def test_failure_after_the_end_changes_nothing(tmp_path: Path) -> None:
    res = smpy.run(_prog(tmp_path, LOOP), np=4, capture=True, cfg={**EXACT, "smpy/fail": "node-1@100s"})
    assert res.status == "ok" and res.failures == [] and res.makespan_s < 3.0


def test_cli_fail_json_records_a_failed_run(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-np", "4", "--fail", "node-2@0.3s",
                           "--json", str(out), "-q", _prog(tmp_path, LOOP)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 137, proc.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "failed" and data["lost_ranks"] == {"2": 0.3}
    assert "Traceback" not in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-np", "2", "--fail", "nohost@1s", "-q",
                          _prog(tmp_path, LOOP)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].endswith(
        "no host or link named 'nohost' on platform 'cluster64'")


def test_set_host_on_false_kills_the_ranks_there(tmp_path: Path) -> None:
    prog = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
if comm.rank == 0:
    smpy.sleep(0.5)
    smpy.set_host_on("node-1", False)
    smpy.sleep(0.5)
    print("rank 0 still here at", MPI.Wtime())
else:
    smpy.sleep(10)
"""
    res = smpy.run(_prog(tmp_path, prog), np=2, capture=True, cfg={**EXACT, "smpy/auto-cleanup": "no"})
    assert res.status == "ok", res.message
    assert res.lost_ranks == {1: 0.5} and res.ranks[1].end_time_s == 0.5
    assert "rank 0 still here" in res.stdout and res.makespan_s == pytest.approx(1.0, abs=1e-6)


def test_link_failure_fails_the_transfer_and_aborts(tmp_path: Path) -> None:
    prog = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
buf = np.zeros(10**7, dtype='u1')
if comm.rank == 0:
    comm.Send(buf, dest=1)
else:
    comm.Recv(buf, source=0)
"""
    # 10 MB over a 10 Gbps private link: ~8 ms; node-1's link fails at 2 ms
    res = smpy.run(_prog(tmp_path, prog), np=2, capture=True, cfg={**EXACT, "smpy/fail": "cluster_link_1@2ms"})
    assert res.status == "failed", res.message
    assert res.failures[0]["kind"] == "link" and res.failures[0]["name"] == "cluster_link_1"
    assert "link cluster_link_1_" in res.message and res.lost_ranks == {}


# -- ULFM (--disable-auto-cleanup) --------------------------------------------------------------
ULFM = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
r = comm.rank
out = []
if r == 2:
    smpy.sleep(10)
smpy.sleep(1.0)                      # rank 2 died at 0.5 s, detected at 0.501 s
try:
    if r == 0:
        comm.recv(source=2)
    elif r == 1:
        comm.recv(source=MPI.ANY_SOURCE)
    else:
        comm.send(1, dest=2)
except MPI.Exception as e:
    out.append(("p2p", e.Get_error_class() == MPI.ERR_PROC_FAILED))
try:
    comm.barrier()
except MPI.Exception as e:
    out.append(("coll", e.Get_error_class() == MPI.ERR_PROC_FAILED))
g = comm.Get_failed()
out.append(("failed", g.Get_size(), MPI.Group.Translate_ranks(g, [0], comm.Get_group())))
try:
    comm.Agree(1)
except MPI.Exception as e:
    out.append(("agree-unacked", e.Get_error_class() == MPI.ERR_PROC_FAILED))
out.append(("acked", comm.Ack_failed()))
t0 = MPI.Wtime()
out.append(("agree", comm.Agree(0b1111 ^ (1 << r)), round(MPI.Wtime() - t0, 9)))
s = comm.Shrink()
out.append(("shrink", s.Get_size(), s.Get_rank(), s.allreduce(r)))
print(r, out)
"""


def test_ulfm_errors_agree_and_shrink(tmp_path: Path) -> None:
    res = smpy.run(_prog(tmp_path, ULFM), np=4, capture=True,
                   cfg={**EXACT, "smpy/fail": "node-2@0.5s", "smpy/auto-cleanup": "no"})
    assert res.status == "ok", res.message
    lines = {int(line.split()[0]): line.split(" ", 1)[1] for line in res.stdout.splitlines()}
    assert sorted(lines) == [0, 1, 3]
    # one hop from node-0 to the others: 2 x 50 us latencies + 4 B at 10 Gbps; 3 survivors:
    # 2 ceil(log2 3) = 4 hops (binomial reduction, then broadcast)
    hop = 2 * 50e-6 + 4 / 1.25e9
    agree = round(4 * hop, 9)
    for r in (0, 1, 3):
        out = eval(lines[r])  # noqa: S307 - the test's own output
        assert out[0] == ("p2p", True)
        assert out[1] == ("coll", True)
        assert out[2] == ("failed", 1, [2])
        assert out[3] == ("agree-unacked", True)
        assert out[4] == ("acked", 1)
        assert out[5] == ("agree", 0b1111 ^ 0b1011, agree)  # AND over 0, 1, 3: bits 0, 1, 3 cleared
        assert out[6] == ("shrink", 3, [0, 1, 3].index(r), 0 + 1 + 3)


def test_pending_any_source_receive_fails_pending(tmp_path: Path) -> None:
    prog = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
if comm.rank == 1:
    smpy.sleep(10)
elif comm.rank == 0:
    try:
        comm.recv(source=MPI.ANY_SOURCE)
    except MPI.Exception as e:
        print(e.Get_error_class() == MPI.ERR_PROC_FAILED_PENDING, MPI.Wtime())
"""
    res = smpy.run(_prog(tmp_path, prog), np=2, capture=True,
                   cfg={**EXACT, "smpy/fail": "node-1@0.2s", "smpy/auto-cleanup": "no"})
    assert res.status == "ok", res.message
    ok, t = res.stdout.split()
    assert ok == "True" and float(t) == pytest.approx(0.201)


def test_revoke_fails_the_others_pending_operations(tmp_path: Path) -> None:
    prog = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD.Dup()
if comm.rank == 0:
    smpy.sleep(0.3)
    comm.Revoke()
    print(0, "revoked", comm.Is_revoked(), MPI.Wtime())
else:
    try:
        comm.recv(source=0)
    except MPI.Exception as e:
        print(comm.rank, e.Get_error_class() == MPI.ERR_REVOKED, comm.Is_revoked(), MPI.Wtime())
"""
    res = smpy.run(_prog(tmp_path, prog), np=3, capture=True, cfg={**EXACT, "smpy/auto-cleanup": "no"})
    assert res.status == "ok", res.message
    got = sorted(line.split() for line in res.stdout.splitlines())
    t = got[0][3]  # the others' receives fail when rank 0 revokes (0.3 s after the Dup)
    assert 0.3 < float(t) < 0.301
    assert got == [["0", "revoked", "True", t], ["1", "True", "True", t], ["2", "True", "True", t]]


def test_ulfm_example_shrinks_and_finishes(tmp_path: Path) -> None:
    ex = str(ROOT / "examples/faults/ulfm_shrink.py")
    ok = smpy.run(ex, np=4, capture=True, cfg=EXACT)
    assert ok.status == "ok" and "on 4 ranks after 0 shrink(s); last sum 32" in ok.stdout
    res = smpy.run(ex, np=4, capture=True, cfg={**EXACT, "smpy/fail": "node-2@0.35s", "smpy/auto-cleanup": "no"})
    assert res.status == "ok", res.message
    assert "finished 8 iterations on 3 ranks after 1 shrink(s); last sum 24" in res.stdout


# -- platform models and the draw ------------------------------------------------------------------
def _platform(**host_extra: object) -> object:
    return load_platform_data({"name": "p", "hosts": [{"name": "a", "speed": "1Gf", **host_extra},
                                                      {"name": "b", "speed": "1Gf"}],
                               "links": [{"name": "l", "bandwidth": "1GBps", "failures": {"mtbf": "1h"}}],
                               "routes": [{"src": "a", "dst": "b", "links": ["l"]}]})


def test_platform_failure_models_become_properties() -> None:
    p = _platform(failures={"shape": 0.7, "scale": "1000h", "mttr": "1h"})
    assert p.host("a").properties["smpy/failures"] == "weibull=0.7:3600000.0,mttr=3600.0"
    assert "smpy/failures" not in p.host("b").properties
    assert p.link("l").properties["smpy/failures"] == "mtbf=3600.0"
    assert parse_profile("trace=1.0:0;2.5:1") == Profile("trace", states=((1.0, False), (2.5, True)))


@pytest.mark.parametrize(("bad", "message"), [
    ({"mtbf": "0s"}, "mtbf: expected a time greater than zero"),
    ({"mtbf": "1h", "shape": 2}, "give exactly one of"),
    ({"shape": 2}, "needs both shape and scale"),
    ({"trace": "1 off\n0 on"}, "times must not decrease"),
    ({"trace": "1 broken"}, "state must be on or off"),
    ({"mtbf": "1h", "oops": 1}, "unknown key 'oops'"),
])
def test_bad_failure_models_are_reported_in_one_line(bad: dict, message: str) -> None:
    with pytest.raises(PlatformError) as err:
        _platform(failures=bad)
    assert "hosts[0].failures" in str(err.value) and message in str(err.value)


def test_cluster_failures_with_per_host_override() -> None:
    p = load_platform_data({"name": "c", "clusters": [{
        "name": "c", "prefix": "n", "count": 3, "speed": "1Gf", "bandwidth": "1Gbps", "latency": "1us",
        "failures": {"mtbf": "10h"}, "failure_overrides": {"n1": {"trace": [[5, "off"]]}}}]})
    assert [h.properties.get("smpy/failures") for h in p.hosts] == ["mtbf=36000.0", "trace=5.0:0", "mtbf=36000.0"]


def test_trace_profile_drives_the_run(tmp_path: Path) -> None:
    plat = tmp_path / "p.yaml"
    plat.write_text("name: t\nclusters:\n  - name: c\n    prefix: n\n    count: 2\n    speed: 1Gf\n"
                    "    bandwidth: 10Gbps\n    latency: 50us\n    failures: {trace: \"0.42 off\"}\n"
                    "    failure_overrides: {n0: {mtbf: 1e9s}}\n")
    res = smpy.run(_prog(tmp_path, LOOP), np=2, platform=str(plat), capture=True)
    assert res.status == "failed" and res.lost_ranks == {1: 0.42}


def test_draws_are_seeded_per_component() -> None:
    prof = Profile("exp", mtbf=100.0, mttr=10.0)
    a = list(transitions(prof, component_rng(7, "host", "n1"), horizon=1000.0))
    assert a == list(transitions(prof, component_rng(7, "host", "n1"), horizon=1000.0))
    assert a != list(transitions(prof, component_rng(8, "host", "n1"), horizon=1000.0))
    assert [on for _, on in a] == [False, True] * (len(a) // 2) + [False] * (len(a) % 2)


def test_same_seed_same_failures_in_a_run(tmp_path: Path) -> None:
    plat = tmp_path / "p.yaml"
    plat.write_text("name: t\nclusters:\n  - name: c\n    prefix: n\n    count: 4\n    speed: 1Gf\n"
                    "    bandwidth: 10Gbps\n    latency: 50us\n    failures: {mtbf: 1s}\n")
    runs = [smpy.run(_prog(tmp_path, LOOP), np=4, platform=str(plat), capture=True,
                     cfg={**EXACT, "smpy/failure-seed": s}) for s in (1, 1, 2)]
    assert runs[0].failures == runs[1].failures and runs[0].lost_ranks == runs[1].lost_ranks
    assert runs[0].failures != runs[2].failures
    for seed, res in ((1, runs[0]), (2, runs[2])):
        # the run's first failure is the earliest of the components' draws (the analytic sampler)
        draws = {f"n{i}": first_failure(Profile("exp", mtbf=1.0), component_rng(seed, "host", f"n{i}"))
                 for i in range(4)}
        first = min(draws, key=draws.get)  # type: ignore[arg-type]
        assert res.status == "failed"
        assert (res.failures[0]["name"], res.failures[0]["time_s"]) == (first, draws[first])


def test_parse_fail() -> None:
    assert parse_fail("node-3@0.5s, link-1@2ms") == [("node-3", 0.5), ("link-1", 0.002)]
    with pytest.raises(ValueError, match="expected NAME@TIME"):
        parse_fail("node-3")


# -- reliability: P(success) = exp(-N T / MTBF) ---------------------------------------------------
@pytest.mark.parametrize("mtbf", [50.0, 200.0, 1000.0])
def test_success_probability_converges_to_the_analytic_value(mtbf: float) -> None:
    """A run of T = 1 s on N = 64 hosts, each with an exponential MTBF: it succeeds when no host
    fails before T. The per-component draws of smpy.platform.failures, over 4000 seeds, give a
    success rate whose 99.9 % Wilson interval contains exp(-N T / MTBF)."""
    n_hosts, t_run, reps = 64, 1.0, 4000
    prof = Profile("exp", mtbf=mtbf)
    ok = sum(all(first_failure(prof, component_rng(seed, "host", f"node-{h}")) > t_run for h in range(n_hosts))
             for seed in range(reps))
    lo, hi = smpy_wilson(ok, reps, 3.29)
    assert lo <= math.exp(-n_hosts * t_run / mtbf) <= hi


def smpy_wilson(k: int, n: int, z: float) -> tuple[float, float]:
    from smpy.cli.sweep import wilson

    return wilson(k, n, z)


# -- smpy predict: failed runs as outcomes ------------------------------------------------------------
def test_reliability_summary_formulas() -> None:
    from smpy.cli.reliability import reliability
    from smpy.cli.sweep import Point, Run

    pt = Point(None, 4)
    runs = [Run(pt, 0, "ok", 0, 2.0, energy_J=20.0), Run(pt, 1, "failed", 137, 0.5, energy_J=5.0),
            Run(pt, 2, "ok", 0, 2.0, energy_J=20.0), Run(pt, 3, "failed", 137, 1.5, energy_J=15.0),
            Run(pt, 4, "error", 1, 0.1)]  # an error of the program is not an outcome
    (rel,) = reliability([pt], runs)
    assert (rel.runs, rel.successes, rel.rate) == (4, 2, 0.5)
    # Wald: E[T] = mean attempt time / p = (2 + 0.5 + 2 + 1.5) / 4 / 0.5
    assert rel.expected_time_s == pytest.approx(3.0) and rel.expected_energy_J == pytest.approx(30.0)
    assert rel.low < 0.5 < rel.high


def test_predict_with_failure_seeds_reports_reliability(tmp_path: Path) -> None:
    plat = tmp_path / "p.yaml"
    plat.write_text("name: t\nclusters:\n  - name: c\n    prefix: n\n    count: 4\n    speed: 1Gf\n"
                    "    bandwidth: 10Gbps\n    latency: 50us\n    failures: {mtbf: 4s}\n")
    out = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, "-m", "smpy", "predict", "-q", "-np", "4", "--reps", "6",
                           "--failure-seed", "0", "--reuse-process", "--platform", str(plat),
                           "--cfg", "smpi/simulate-computation:no", "-o", str(out), _prog(tmp_path, LOOP)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(out.with_suffix(".json").read_text())["runs"]
    statuses = [r["status"] for r in sorted(runs, key=lambda r: r["rep"])]
    # each repetition r draws with seed r: the same outcomes as in-process runs with that seed
    expect = [smpy.run(_prog(tmp_path, LOOP), np=4, platform=str(plat), capture=True,
                       cfg={**EXACT, "smpy/failure-seed": r}).status for r in range(6)]
    assert statuses == expect and set(statuses) == {"ok", "failed"}
    k = statuses.count("ok")
    assert f"{k}/6 ({100 * k / 6:.1f}%)" in proc.stdout and "E[time to solution]" in proc.stdout


def test_xml_state_file_is_the_failure_trace(tmp_path: Path) -> None:
    (tmp_path / "b.states").write_text("0.3 0\n")
    (tmp_path / "l.states").write_text("5 0\n6 1\n")
    xml = tmp_path / "p.xml"
    xml.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
                   "<host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\" state_file=\"b.states\"/>"
                   "<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\" state_file=\"l.states\"/>"
                   "<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route></zone></platform>\n")
    prog = _prog(tmp_path, "import smpy\nsmpy.sleep(1)\n")
    res = smpy.run(prog, np=2, platform=str(xml), capture=True, cfg=EXACT)
    assert res.status == "failed" and res.lost_ranks == {1: 0.3}
    (tmp_path / "b.states").write_text("0.3 maybe\n")
    xml.write_text(xml.read_text().replace("<host id=\"a\"", "<host id=\"a2\" speed=\"1Gf\"/><host id=\"a\""))
    with pytest.raises(PlatformError, match="state_file.*state must be on or off"):
        smpy.run(prog, np=1, platform=str(xml), capture=True)


def test_errors_are_fatal_on_comm_world_aborts_even_in_ulfm_mode(tmp_path: Path) -> None:
    prog = LOOP.replace("comm = MPI.COMM_WORLD\n", "comm = MPI.COMM_WORLD\ncomm.Set_errhandler(MPI.ERRORS_ARE_FATAL)\n")
    res = smpy.run(_prog(tmp_path, prog), np=4, capture=True,
                   cfg={**EXACT, "smpy/fail": "node-1@0.25s", "smpy/auto-cleanup": "no"})
    assert res.status == "failed" and res.lost_ranks == {1: 0.25}
    assert res.makespan_s == pytest.approx(0.251)


def test_restarts_resume_from_the_checkpoint_with_time_continuing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-np", "4", "--fail", "node-1@0.55s",
                           "--restarts", "2", "--restart-delay", "1s", "--cfg", "smpi/simulate-computation:no",
                           "--json", str(out), "-q", str(ROOT / "examples/faults/checkpoint.py"), "ckpt.txt", "10", "2"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("done: iterations 4..9 in this run")  # resumed from checkpoint 4
    d = json.loads(out.read_text())
    a1, a2 = d["attempts"]
    assert (a1["start_s"], a1["end_s"], a1["status"], a1["lost_ranks"]) == (0.0, 0.551, "failed", {"1": 0.55})
    assert a2["status"] == "ok" and a2["start_s"] == pytest.approx(1.551)
    assert "node-1" not in a2["hosts"] and len(a2["hosts"]) == 3  # the failed host is left out
    # the second attempt: 6 iterations of 0.1 s (plus the allreduces) after 1.551 s
    assert 2.151 < d["time_to_solution_s"] < 2.2 and d["time_to_solution_s"] == d["makespan_s"]
    assert d["work_lost_rank_s"] == pytest.approx(0.551 * 4)
    assert not (tmp_path / "ckpt.txt").exists()


@pytest.mark.parametrize(("example", "args"), [("ulfm_shrink.py", []), ("checkpoint.py", ["ck.txt", "4", "2"])])
def test_fault_examples_run_under_mpiexec_as_under_smpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        example: str, args: list[str]) -> None:
    """No failure is injected: both print the same line (times aside)."""
    from realmpi import run_reference

    script = str(ROOT / "examples/faults" / example)
    real = run_reference(4, script, *args, cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    sim = smpy.run(script, np=4, args=args, capture=True, cfg=EXACT)
    assert sim.status == "ok", sim.message

    def strip(text: str) -> str:
        return text.split(" ended at")[0].strip()

    assert strip(real.stdout) == strip(sim.stdout) and real.stdout.strip()
