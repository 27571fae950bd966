"""smpy predict on Dask: the program and its files travel to the workers; the same medians as
the thread executor."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from smpy.cli.executors import PortableRunner, open_executor, pack, parse_executor
from smpy.cli.sweep import Plan, SweepError, run_sweep, summarize

PROG = """\
import sys
import helper                      # a local module: must travel with the program
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
smpy.execute_flops(helper.work(float(sys.argv[1])) / comm.size)
comm.Allreduce(MPI.IN_PLACE, [bytearray(8), MPI.BYTE], op=MPI.BOR)
"""

PLATFORM = """\
name: small
clusters:
  - {name: c, prefix: n-, count: 4, cores: 2, speed: 2Gf, bandwidth: 1Gbps, latency: 10us}
"""


def _program(d: Path) -> None:
    d.mkdir()
    (d / "prog.py").write_text(PROG)
    (d / "helper.py").write_text("def work(n):\n    return n * 1e9\n")
    (d / "small.yaml").write_text(PLATFORM)


def _plan(d: Path, **kw) -> Plan:
    # no measured computation: every run of a point predicts the same time to the last digit
    return Plan(script="prog.py", args=["{N}"], nps=[1, 2, 4], platforms=["small.yaml", "taurus"],
                params=[("N", ["1", "2"]), ("F", ["1", "2"])], cwd=str(d),
                cfg=["smpi/simulate-computation:no", "network/latency-factor:{F}"], **kw)


def test_parse_executor():
    assert parse_executor("threads") == ("threads", None)
    assert parse_executor("dask") == ("dask", None)
    assert parse_executor("dask://sched:8786") == ("dask", "tcp://sched:8786")
    with pytest.raises(SweepError, match="--executor 'ray'"):
        parse_executor("ray")


def test_bundle_runs_where_the_files_are_gone(tmp_path):
    src = tmp_path / "app"
    _program(src)
    jobs = _plan(src).jobs()[:2]
    bundle = pack(jobs)
    assert sorted(Path(m).name for m in bundle.paths.values()) == ["helper.py", "prog.py", "small.yaml"]
    assert pack(jobs).digest == bundle.digest  # same files, same bundle
    shutil.move(str(src), str(tmp_path / "elsewhere"))  # the worker does not see the originals
    run = PortableRunner(bundle)(jobs[0])
    assert run.ok, run.message
    assert run.makespan_s == pytest.approx(0.5)  # N=1: 1e9 flops at 2 Gf/s on one rank


def test_real_runs_stay_on_this_node(tmp_path):
    _program(tmp_path / "app")
    plan = _plan(tmp_path / "app", real_nps=[1], time_regex="(x)")
    with pytest.raises(SweepError, match="--real"):
        with open_executor("dask", plan.jobs(), 1):
            pass


def test_dask_local_cluster_gives_the_thread_medians(tmp_path):
    pytest.importorskip("distributed", reason="dask.distributed is not installed")
    _program(tmp_path / "app")
    plan = _plan(tmp_path / "app")
    jobs = plan.jobs()
    assert len(plan.points()) == 24
    with open_executor("threads", jobs, 2) as (pool, runner):
        threads = summarize(plan.points(), run_sweep(jobs, pool, None, runner))
    with open_executor("dask", jobs, 2) as (pool, runner):
        dask = summarize(plan.points(), run_sweep(jobs, pool, None, runner))
    assert all(s.ok == 1 for s in threads + dask), [s.failures for s in threads + dask]
    assert [s.median_s for s in dask] == [s.median_s for s in threads]
    # the points differ (np=1 sends nothing, so there the latency factor F changes nothing)
    assert len({s.median_s for s in dask}) == 24 - 4


def test_predict_command_with_dask(tmp_path):
    pytest.importorskip("distributed", reason="dask.distributed is not installed")
    import subprocess

    _program(tmp_path / "app")
    proc = subprocess.run([sys.executable, "-m", "smpy", "predict", "-np", "1,2", "--reps", "1",
                           "--executor", "dask", "-j", "2", "--platform", "small.yaml",
                           "--cfg", "smpi/simulate-computation:no", "prog.py", "2"],
                          cwd=tmp_path / "app", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "dask: local cluster of 2 worker processes" in proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("small ")]
    assert [float(r[4]) for r in rows] == pytest.approx([1.0, 0.5], rel=1e-3)
