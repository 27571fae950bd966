"""What a new user hit in the first hour (issue 19, items 9-13): each now a clear message or a
sane figure."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import smpy
from smpy.cli import main as smpy_main
from smpy.cli import predict_cmd, smpyrun
from smpy.cli.platform_cmd import host_names
from smpy.trace.plots import call_kind

ROOT = Path(__file__).resolve().parents[1]
HELLO = str(ROOT / "examples" / "hello.py")
NO_COMPUTE = {"smpi/simulate-computation": "no"}


@pytest.mark.parametrize("command", [["calibrate", "network"], ["calibrate", "compute", "-np", "2", HELLO]])
def test_calibrate_without_mpiexec(command: list[str], capsys: pytest.CaptureFixture) -> None:
    assert smpy_main.main([*command[:2], "--mpiexec", "no-such-mpiexec-here", *command[2:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install mpich" in err and "--mpiexec PATH" in err


def test_predict_real_without_mpiexec(capsys: pytest.CaptureFixture) -> None:
    rc = predict_cmd.main(["-np", "1", "--real", "1", "--mpiexec", "no-such-mpiexec-here",
                           "--time-regex", "x", HELLO])
    assert rc == 2 and "pip install mpich" in capsys.readouterr().err


def test_predict_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    rc = predict_cmd.main(["-np", "1", "--plot", str(tmp_path / "p.png"), HELLO])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "smpy[plot]" in err


def test_energy_without_power_profiles_warns(tmp_path: Path) -> None:
    import io

    err = io.StringIO()
    from smpy.cli.launch import run
    res = run(HELLO, np=2, cfg={**NO_COMPUTE, "plugin": "host_energy"}, capture=True, echo=False,
              err_stream=err)
    assert res.status == "ok"
    text = err.getvalue()
    assert "no power profile (wattage_per_state) for 2 of the 2 hosts" in text
    assert "node-0, node-1" in text


def test_energy_with_power_profiles_does_not_warn() -> None:
    import io

    err = io.StringIO()
    from smpy.cli.launch import run
    res = run(str(ROOT / "examples" / "energy" / "dvfs.py"), np=2, cfg={**NO_COMPUTE, "plugin": "host_energy"},
              platform=ROOT / "examples" / "platforms" / "energy_platform.yaml",
              hostfile=ROOT / "examples" / "energy" / "hosts.txt", capture=True, echo=False, err_stream=err)
    assert res.status == "ok" and "power profile" not in err.getvalue()


def test_host_names_are_compressed() -> None:
    assert host_names([f"node-{i}" for i in range(64)]) == "node-[0-63]"
    assert host_names(["a", "n1", "n2", "n4", "gw"]) == "a, n[1-2], n4, gw"


def test_platform_show_lists_host_names(capsys: pytest.CaptureFixture) -> None:
    assert smpy_main.main(["platform", "show", str(ROOT / "examples" / "platforms" / "cluster.xml")]) == 0
    assert "host names: node-[0-15]" in capsys.readouterr().out


def test_unknown_key_nodes_hints_count(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    plat = tmp_path / "p.yaml"
    plat.write_text("name: x\nclusters:\n  - {name: c, prefix: n-, nodes: 4, speed: 1Gf, "
                    "bandwidth: 1Gbps, latency: 1us}\n")
    assert smpy_main.main(["platform", "show", str(plat)]) != 0
    assert "did you mean 'count'?" in capsys.readouterr().err


def test_report_table_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert smpyrun.main(["-np", "2", "--cfg=smpi/simulate-computation:no", "--report",
                         str(tmp_path / "rep"), HELLO]) == 0
    out, err = capsys.readouterr()
    assert "MPI call" not in out and "[smpy report]" not in out
    assert "[smpy report]" in err and out.startswith("Hello from rank 0")


@pytest.mark.parametrize(("cat", "name", "kind"), [
    ("compute", "compute", "computation"), ("mpi", "Comm.send", "point-to-point"),
    ("mpi", "MPI_Irecv", "point-to-point"), ("mpi", "Comm.Allreduce", "collective"),
    ("mpi", "Comm.Ibcast", "collective"), ("mpi", "MPI_Wait", "wait / test / probe"),
    ("mpi", "Request.Waitall", "wait / test / probe"), ("mpi", "Win.Put", "one-sided"),
    ("mpi", "File.Write_at", "I/O"), ("mpi", "MPI_Wtime", "other MPI")])
def test_gantt_kinds(cat: str, name: str, kind: str) -> None:
    assert call_kind(cat, name) == kind


def test_plots_of_a_run_without_p2p(tmp_path: Path) -> None:
    """A run with collectives only: the matrix says so, its colour scale starts at 0, and
    the HTML report gives the makespan and the platform."""
    pytest.importorskip("matplotlib")
    prog = tmp_path / "coll.py"
    prog.write_text("from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n")
    assert smpyrun.main(["-q", "-np", "3", "--cfg=smpi/simulate-computation:no", "--plots",
                         str(tmp_path / "figs"), "--json", str(tmp_path / "run.json"), str(prog)]) == 0
    page = (tmp_path / "figs" / "report.html").read_text()
    data = json.loads((tmp_path / "run.json").read_text())
    assert f"Predicted makespan <b>{data['makespan_s']:.9g} s</b>" in page
    assert "platform <b>cluster64</b>" in page
    assert (tmp_path / "figs" / "matrix.png").stat().st_size > 0


def test_library_run_keeps_working_after_signals_module() -> None:
    res = smpy.run(HELLO, np=2, cfg=NO_COMPUTE)
    assert res.status == "ok" and res.exit_code == 0


def test_predict_energy_without_power_profiles_warns(capsys: pytest.CaptureFixture) -> None:
    assert predict_cmd.main(["-np", "1", "--reps", "1", "-q", "--energy",
                             "--cfg=smpi/simulate-computation:no", HELLO]) == 0
    err = capsys.readouterr().err
    assert "--energy: platform cluster64: no power profile (wattage_per_state) for 64 of its 64 hosts " \
           "(node-[0-63])" in err
