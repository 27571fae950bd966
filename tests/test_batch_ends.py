"""How batch jobs end (docs/workloads.md, smpy/cli/batch_jobs.py): killed at their
walltime, failed, deadlocked, each without stopping the others; the times are hand-computed."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.cli import batch
from smpy.cli.workload import load_workload

DIR = Path(__file__).parent / "programs" / "batch"
SLEEPER, ENDER, XFER, SPAWNER = DIR / "sleeper.py", DIR / "ender.py", DIR / "xfer.py", DIR / "spawner.py"


def _run(tmp_path: Path, jobs: list[str], scheduler: str = "fcfs", extra: str = "", platform: str = "four.yaml",
         **kw) -> tuple[batch.BatchResult, str]:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {DIR / platform}\nscheduler: {scheduler}\n{extra}"
                  "cfg: {smpi/simulate-computation: 'no'}\njobs:\n" + "".join(f"  - {{{j}}}\n" for j in jobs))
    err = io.StringIO()
    res = batch.simulate(load_workload(str(wl)), err=err, **kw)
    return res, err.getvalue()


def _times(res: batch.BatchResult) -> dict[str, tuple]:
    return {j.name: (j.start_s, j.end_s, j.status, j.exit_code) for j in res.jobs}


def test_a_job_past_its_walltime_is_killed_then_and_the_next_starts(tmp_path: Path) -> None:
    """a (4 nodes) would sleep 10 s but asks for 4 s: killed at 4; b, waiting for the nodes
    since 1, starts at 4 and sleeps its 2 s. Alone on a node at 100 W idle, a used 4 x 4 s."""
    jobs = [f"name: a, program: {SLEEPER}, args: ['10'], np: 4, walltime: 4s",
            f"name: b, program: {SLEEPER}, args: ['2'], np: 4, walltime: 3s, submit: 1s"]
    res, err = _run(tmp_path, jobs, solo=False)
    assert _times(res) == {"a": (0.0, 4.0, "timeout", 124), "b": (4.0, 6.0, "done", 0)}
    assert res.job("a").reason == "killed at its walltime (4 s) at 4 s"
    assert (res.status, res.exit_code, res.makespan_s) == ("failed", 1, 6.0)
    assert res.job("a").energy_J == pytest.approx(4 * 100.0 * 4.0, rel=1e-12)
    assert res.job_output("a") == ""  # rank 0 never got to its print
    assert "TIMEOUT of job 'a'" in err and "rank 0 (process 0, host n0): blocked in" in err
    assert "1 of 2 jobs did not complete: 1 timeout" in res.summary()
    # the opt-out: a runs its 10 s, b waits for it
    res, _ = _run(tmp_path, jobs, extra="kill_at_walltime: false\n", solo=False)
    assert _times(res) == {"a": (0.0, 10.0, "done", 0), "b": (10.0, 12.0, "done", 0)}
    assert (res.status, res.exit_code) == ("ok", 0)


def test_a_job_ending_exactly_at_its_walltime_completes(tmp_path: Path) -> None:
    res, _ = _run(tmp_path, [f"name: a, program: {SLEEPER}, args: ['3'], np: 2, walltime: 3s"], solo=False)
    assert _times(res) == {"a": (0.0, 3.0, "done", 0)} and res.job_output("a") == "2 ranks slept 3 s\n"


def test_easy_reservations_hold_with_killed_jobs(tmp_path: Path) -> None:
    """j1 (2 nodes, walltime 5, would run 20) is killed at 5; j2 (4 nodes) reserved at 5
    starts then; j3 (1 node, walltime 2) backfills at 1 on a free node."""
    jobs = [f"name: j1, program: {SLEEPER}, args: ['20'], np: 2, walltime: 5s",
            f"name: j2, program: {SLEEPER}, args: ['1'], np: 4, walltime: 1s, submit: 1s",
            f"name: j3, program: {SLEEPER}, args: ['2'], np: 1, walltime: 2s, submit: 1s"]
    res, _ = _run(tmp_path, jobs, scheduler="easy", solo=False)
    assert _times(res) == {"j1": (0.0, 5.0, "timeout", 124), "j2": (5.0, 6.0, "done", 0),
                           "j3": (1.0, 3.0, "done", 0)}


def test_a_killed_job_transfer_leaves_the_shared_link(tmp_path: Path) -> None:
    """a and b each send 10 MB (+16 B envelope) over the 10 MB/s backbone from 0: half the
    bandwidth each until a is killed at 0.5 s, then b alone: b ends at 0.5 + (10e6 + 16 -
    2.5e6) / 10e6."""
    size, bw = 10_000_000, 10e6
    jobs = [f"name: a, program: {XFER}, args: ['{size}'], np: 2, hosts: [a1, a2], walltime: 0.5s",
            f"name: b, program: {XFER}, args: ['{size}'], np: 2, hosts: [b1, b2]"]
    res, _ = _run(tmp_path, jobs, scheduler="none", platform="shared.yaml", solo=False,
                  cfg={"network/model": "raw", "smpi/wtime": "0"})
    assert _times(res)["a"] == (0.0, 0.5, "timeout", 124)
    assert res.job("b").end_s == pytest.approx(0.5 + (size + 16 - 0.5 * bw / 2) / bw, rel=1e-12)


HOW = [("raise", 1, "rank 1 (host n2) raised ValueError: bad input at 1 s"),
       ("abort", 7, "MPI_Abort(7) called by rank 1 (host n2) at 1 s"),
       ("exit", 3, "rank 1 (host n2) exited with status 3 at 1 s")]


@pytest.mark.parametrize("how, code, reason", HOW)
def test_a_failing_job_ends_alone_and_the_others_keep_their_times(tmp_path: Path, how: str, code: int,
                                                                  reason: str) -> None:
    """a (n0) sleeps 5 s, c (n3) 3 s; the middle job (n1, n2) fails at 1 s; d (2 nodes,
    submitted at 0.5 s) waits for its nodes and gets them at 1 s. a and c end as without it."""
    jobs = [f"name: a, program: {SLEEPER}, args: ['5'], np: 1",
            f"name: mid, program: {ENDER}, args: [{how}, '1'], np: 2",
            f"name: c, program: {SLEEPER}, args: ['3'], np: 1",
            f"name: d, program: {SLEEPER}, args: ['2'], np: 2, submit: 0.5s"]
    res, err = _run(tmp_path, jobs, solo=False)
    assert _times(res) == {"a": (0.0, 5.0, "done", 0), "mid": (0.0, 1.0, "failed", code),
                           "c": (0.0, 3.0, "done", 0), "d": (1.0, 3.0, "done", 0)}
    assert res.job("mid").reason == reason
    assert (res.status, res.exit_code) == ("failed", 1)
    assert f"job 'mid' (jobs[1]) failed (exit code {code}): {reason}; its nodes are freed" in err
    assert "aborting the run" not in err and "the run ends" not in err
    assert res.job_output("a") == "1 ranks slept 5 s\n" and res.job_output("c") == "1 ranks slept 3 s\n"
    without, _ = _run(tmp_path, [jobs[0], jobs[2]], solo=False)
    assert [(j.start_s, j.end_s) for j in without.jobs] == [(0.0, 5.0), (0.0, 3.0)]


def test_an_out_of_memory_job_is_killed_alone(tmp_path: Path) -> None:
    """mid's rank 1 asks for 2 GiB on a 1 GiB host at 1 s: the OOM killer ends mid (137);
    a and c keep their times."""
    jobs = [f"name: a, program: {SLEEPER}, args: ['5'], np: 1",
            f"name: mid, program: {ENDER}, args: [oom, '1'], np: 2",
            f"name: c, program: {SLEEPER}, args: ['3'], np: 1"]
    res, err = _run(tmp_path, jobs, platform="fourram.yaml", solo=False)
    assert _times(res) == {"a": (0.0, 5.0, "done", 0), "mid": (0.0, 1.0, "failed", 137),
                           "c": (0.0, 3.0, "done", 0)}
    assert res.job("mid").reason == "out of memory on host n2 at 1 s (killed by the OOM killer)"
    assert "OUT OF MEMORY: host n2" in err


def test_a_host_failure_ends_the_jobs_on_it_and_the_node_stays_down(tmp_path: Path) -> None:
    """n1 fails at 1 s: job a (n0, n1) is aborted when the loss is detected (1 ms later);
    b (n2) goes on; c (4 nodes) never starts (n1 is down)."""
    jobs = [f"name: a, program: {SLEEPER}, args: ['5'], np: 2",
            f"name: b, program: {SLEEPER}, args: ['3'], np: 1",
            f"name: c, program: {SLEEPER}, args: ['1'], np: 4, submit: 2s"]
    res, _ = _run(tmp_path, jobs, extra="", solo=False, cfg={"smpy/fail": "n1@1s"})
    assert _times(res) == {"a": (0.0, 1.001, "failed", 137), "b": (0.0, 3.0, "done", 0),
                           "c": (None, None, "waiting", None)}
    assert res.job("a").reason == ("host n1 failed at 1 s (processes 1 lost); the job was aborted at 1.001 s")
    assert (res.status, res.exit_code) == ("failed", 2)


def test_a_deadlocked_job_is_reported_and_the_others_go_on(tmp_path: Path) -> None:
    """stuck (n0, n1) blocks at 1 s, a (n2) sleeps 4 s: the deadlock shows when nothing else
    can happen (4 s); then b, waiting for 3 nodes, runs 4 to 5."""
    jobs = [f"name: stuck, program: {ENDER}, args: [deadlock, '1'], np: 2",
            f"name: a, program: {SLEEPER}, args: ['4'], np: 1",
            f"name: b, program: {SLEEPER}, args: ['1'], np: 3, submit: 2s"]
    res, err = _run(tmp_path, jobs, solo=False)
    assert _times(res) == {"stuck": (0.0, 4.0, "deadlock", 1), "a": (0.0, 4.0, "done", 0),
                           "b": (4.0, 5.0, "done", 0)}
    assert res.job("stuck").reason == ("deadlock at 4 s: rank 0 blocked forever in MPI_Recv(source=1, "
                                       "tag=MPI_ANY_TAG, comm=MPI_COMM_WORLD) (and 1 more)")
    assert "DEADLOCK of job 'stuck'" in err and "rank 1 (process 1, host n1): blocked in MPI_Recv" in err
    # with a walltime, the stuck job is killed at it instead
    jobs[0] += ", walltime: 2s"
    res, _ = _run(tmp_path, jobs, solo=False)
    assert _times(res)["stuck"] == (0.0, 2.0, "timeout", 124) and _times(res)["b"] == (2.0, 3.0, "done", 0)


def test_killed_ranks_stop_computing_and_their_energy_stops(tmp_path: Path) -> None:
    """Two ranks computing 10 s on single-core nodes (200 W busy, 100 W idle) killed at 3 s:
    3 s at 200 W each, then the four idle nodes at 100 W until b ends at 5 s."""
    jobs = [f"name: a, program: {ENDER}, args: [compute, '10'], np: 2, walltime: 3s",
            f"name: b, program: {SLEEPER}, args: ['5'], np: 1"]
    res, _ = _run(tmp_path, jobs, solo=False)
    assert _times(res) == {"a": (0.0, 3.0, "timeout", 124), "b": (0.0, 5.0, "done", 0)}
    assert res.job("a").energy_J == pytest.approx(2 * 200.0 * 3.0, rel=1e-12)
    assert res.energy_J == pytest.approx(2 * 200.0 * 3.0 + 2 * 100.0 * 2.0 + 2 * 100.0 * 5.0, rel=1e-12)


def test_the_report_csv_and_json_give_each_job_state(tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"platform: {DIR / 'four.yaml'}\nscheduler: fcfs\ncfg: {{smpi/simulate-computation: 'no'}}\n"
                  f"jobs:\n  - {{name: a, program: {SLEEPER}, args: ['10'], np: 1, walltime: 2s}}\n"
                  f"  - {{name: m, program: {ENDER}, args: [raise, '1'], np: 2}}\n"
                  f"  - {{name: c, program: {SLEEPER}, args: ['1'], np: 1}}\n")
    proc = subprocess.run([sys.executable, "-m", "smpy", "batch", str(wl), "--json", str(tmp_path / "r.json"),
                           "--report", str(tmp_path / "rep")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr  # two jobs did not complete
    rows = list(csv.DictReader((tmp_path / "rep.jobs.csv").open()))
    assert [(r["name"], r["state"], r["exit_code"], r["end_s"]) for r in rows] == [
        ("a", "timeout", "124", "2.0"), ("m", "failed", "1", "1.0"), ("c", "done", "0", "1.0")]
    assert rows[1]["reason"] == "rank 1 (host n2) raised ValueError: bad input at 1 s"
    import json
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(j["status"], j["exit_code"]) for j in doc["jobs"]] == [("timeout", 124), ("failed", 1), ("done", 0)]
    assert doc["status"] == "failed" and doc["exit_code"] == 2
    assert "a: timeout (exit code 124): killed at its walltime (2 s) at 2 s" in proc.stderr


def test_a_job_stuck_alone_until_its_walltime_times_out(tmp_path: Path) -> None:
    """Nothing else runs: the deadlock shows at the walltime, which kills the job."""
    res, err = _run(tmp_path, [f"name: s, program: {ENDER}, args: [deadlock, '1'], np: 2, walltime: 3s"],
                    solo=False)
    assert _times(res) == {"s": (0.0, 3.0, "timeout", 124)}
    assert "TIMEOUT of job 's'" in err and "blocked in MPI_Recv" in err


def test_two_host_failures_end_two_jobs_each_with_its_own_lost_rank(tmp_path: Path) -> None:
    jobs = [f"name: a, program: {SLEEPER}, args: ['5'], np: 2", f"name: b, program: {SLEEPER}, args: ['5'], np: 2"]
    res, err = _run(tmp_path, jobs, solo=False, cfg={"smpy/fail": "n1@1s,n2@2s"})
    assert _times(res) == {"a": (0.0, 1.001, "failed", 137), "b": (0.0, 2.001, "failed", 137)}
    assert res.job("b").reason == "host n2 failed at 2 s (processes 2 lost); the job was aborted at 2.001 s"
    assert "RANKS 2 RUNNING AT n2" in err


def test_spawned_processes_belong_to_their_job(tmp_path: Path) -> None:
    """p's rank 0 spawns two children sleeping 3 s (spawn costs set to 0; their connection to
    the parent takes a few hundred ns): the job ends with them at 3 s, their output is its;
    with a 2 s walltime they die with it."""
    cfg = {"smpy/spawn-node-cost": "0", "smpy/spawn-process-cost": "0", "smpy/spawn-init-cost": "0"}
    job = f"name: p, program: {SPAWNER}, args: ['2', '3'], np: 1, hosts: [n0]"
    res, _ = _run(tmp_path, [job], scheduler="none", solo=False, cfg=cfg)
    assert _times(res)["p"][2:] == ("done", 0) and res.job("p").end_s == pytest.approx(3.0, abs=1e-6)
    assert sorted(res.job_output("p").splitlines()) == ["child 0 slept 3 s", "child 1 slept 3 s"]
    res, _ = _run(tmp_path, [job + ", walltime: 2s"], scheduler="none", solo=False, cfg=cfg)
    assert _times(res)["p"] == (0.0, 2.0, "timeout", 124) and res.job_output("p") == ""
    assert res.makespan_s == 2.0


def test_a_link_failure_ends_only_the_job_whose_message_it_breaks(tmp_path: Path) -> None:
    """l01 fails at 1 s under job a's message (n0 -> n1, 2 MB at 1 MB/s): a is aborted at the
    detection (1 ms later) with the link named; b's message crosses l23 only, so b ends exactly
    as without the failure; c (submitted at 2 s on n0 and n1, no message) runs there: only the
    link failed, the nodes are up."""
    jobs = [f"name: a, program: {XFER}, args: ['2000000'], np: 2, hosts: [n0, n1]",
            f"name: b, program: {XFER}, args: ['3000000'], np: 2, hosts: [n2, n3]",
            f"name: c, program: {SLEEPER}, args: ['1'], np: 2, submit: 2s, hosts: [n0, n1]"]
    alone, _ = _run(tmp_path, jobs[1:2], scheduler="none", platform="pairs.yaml", solo=False)
    res, err = _run(tmp_path, jobs, scheduler="none", platform="pairs.yaml", solo=False,
                    cfg={"smpy/fail": "l01@1s"})
    b_end = alone.job("b").end_s
    assert b_end > 3.0
    assert _times(res) == {"a": (0.0, 1.001, "failed", 137), "b": (0.0, b_end, "done", 0),
                           "c": (2.0, 3.0, "done", 0)}
    assert res.job("a").reason == ("link l01 failed at simulated time 1 s; a message crossing it was lost; "
                                   "the job was aborted at 1.001 s")
    assert res.job_output("b") == alone.job_output("b") and res.job_output("a") == ""
    assert "[smpy] job 'a' (jobs[0]) failed (exit code 137): link l01 failed" in err
    assert (res.status, res.exit_code) == ("failed", 1)


WRITER = '''"""Write argv[2] bytes to the file argv[1] (Python file I/O, timed by its file system)."""
import sys
from mpi4py import MPI
with open(sys.argv[1], "wb") as f:
    f.write(bytes(int(sys.argv[2])))
print(f"wrote at {MPI.Wtime():.9f}", flush=True)
'''

PFS = """name: pfs
hosts: [{{name: a, speed: 1Gf}}, {{name: b, speed: 1Gf}}, {{name: io, speed: 1Gf}}]
links:
  - {{name: la, bandwidth: 1000GBps, latency: 0}}
  - {{name: lb, bandwidth: 1000GBps, latency: 0}}
  - {{name: lio, bandwidth: 1000GBps, latency: 0}}
routes:
  - {{src: a, dst: io, links: [la, lio]}}
  - {{src: b, dst: io, links: [lb, lio]}}
  - {{src: a, dst: b, links: [la, lb]}}
filesystems:
  - {{name: pfs, kind: parallel, mount: {mount}, servers: [io], stripe_size: 1GiB,
     disk: {{read: 100MBps, write: 100MBps, latency: 0s}}}}
"""


def test_a_killed_job_io_leaves_the_shared_disk(tmp_path: Path) -> None:
    """a and b each write 100 MB to one file-system server (one 100 MB/s disk, no cache):
    both transfers share its 1000 GB/s link until 2e-4 s, then the disk gives each 50 MB/s
    until a is killed at its walltime, 1 s; b alone then writes the rest at 100 MB/s: it
    ends at 1 + (100e6 - (1 - 2e-4) 50e6) / 100e6 = 1.5001 s (2.0002 s if a's write went on)."""
    (tmp_path / "pfs").mkdir()
    (tmp_path / "pfs.yaml").write_text(PFS.format(mount=tmp_path / "pfs"))
    (tmp_path / "writer.py").write_text(WRITER)
    size = 100_000_000
    jobs = [f"name: {j}, program: {tmp_path / 'writer.py'}, args: ['{tmp_path / 'pfs' / j}', '{size}'], "
            f"np: 1, hosts: [{j}]" + (", walltime: 1s" if j == "a" else "") for j in "ab"]
    res, _ = _run(tmp_path, jobs, scheduler="none", platform=str(tmp_path / "pfs.yaml"), solo=False,
                  cfg={"network/model": "raw", "smpi/wtime": "0"})
    assert _times(res)["a"] == (0.0, 1.0, "timeout", 124)
    net = 2 * size / 1000e9
    expected = 1.0 + (size - (1.0 - net) * size / 2 / 100e6 * 100e6) / 100e6
    assert res.job("b").end_s == pytest.approx(expected, rel=1e-12)
    assert res.job_output("b") == f"wrote at {expected:.9f}\n"
