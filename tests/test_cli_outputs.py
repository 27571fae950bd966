"""Output paths are checked before the run; a directory runs as ``python DIR`` does; the
plots' dependency is checked first (issues 19 and 25)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from smpy.cli import smpyrun
from smpy.cli.outputs import OutputError, check_dir, check_file

ROOT = Path(__file__).resolve().parents[1]
HELLO = str(ROOT / "examples" / "hello.py")


def test_check_file(tmp_path: Path) -> None:
    check_file(tmp_path / "new.json", "--json")
    with pytest.raises(OutputError, match="--json .*is a directory"):
        check_file(tmp_path, "--json")
    with pytest.raises(OutputError, match="does not exist"):
        check_file(tmp_path / "missing" / "x.json", "--json")
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="is not a directory"):
        check_file(tmp_path / "f" / "x.json", "--trace")


def test_check_dir(tmp_path: Path) -> None:
    check_dir(tmp_path / "a" / "b", "--plots")
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="--plots .*not a directory"):
        check_dir(tmp_path / "f", "--plots")


@pytest.mark.parametrize("option", ["--json", "--trace", "--report", "--trace-ti", "--power-trace"])
def test_bad_output_fails_before_the_run(tmp_path: Path, option: str, capsys: pytest.CaptureFixture) -> None:
    bad = str(tmp_path / "nodir" / "out")
    rc = smpyrun.main(["-np", "2", option, bad, HELLO])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "Hello" not in out  # nothing ran
    assert err.strip().count("\n") == 0 and option in err and "does not exist" in err


def test_output_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = smpyrun.main(["-np", "2", "--json", str(tmp_path), HELLO])
    assert rc == 2
    assert "is a directory" in capsys.readouterr().err


def test_plots_without_matplotlib_fail_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    rc = smpyrun.main(["-np", "2", "--plots", str(tmp_path / "p"), HELLO])
    out, err = capsys.readouterr()
    assert rc == 2 and "Hello" not in out
    assert "matplotlib" in err and "smpy[plot]" in err


def test_directory_runs_its_main(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "helper.py").write_text("WHO = 'helper'\n")
    (app / "__main__.py").write_text("import sys\nimport helper\nfrom mpi4py import MPI\n"
                                     "print(sys.argv[0], helper.WHO, MPI.COMM_WORLD.rank)\n")
    assert smpyrun.main(["-q", "-np", "2", str(app)]) == 0
    out = capsys.readouterr().out
    assert sorted(out.splitlines()) == [f"{app} helper 0", f"{app} helper 1"]


def test_directory_without_main(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert smpyrun.main(["-np", "2", str(tmp_path)]) == 2
    assert f"can't find '__main__' module in '{tmp_path}'" in capsys.readouterr().err


def test_help_cfg_has_no_empty_default(capsys: pytest.CaptureFixture) -> None:
    assert smpyrun.main(["--help-cfg"]) == 0
    out = capsys.readouterr().out
    assert "[default: ]" not in out and "smpy/report" in out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "x"])
def test_timeouts_must_be_positive(value: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as e:
        smpyrun.main(["--timeout", value, HELLO])
    assert e.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_other_commands_check_their_outputs_first(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from smpy.cli import main as smpy_main

    blocker = tmp_path / "file"
    blocker.write_text("")
    assert smpy_main.main(["predict", "-np", "1", "-o", str(blocker / "sweep"), HELLO]) == 2
    assert "-o" in capsys.readouterr().err
    (tmp_path / "s.json").mkdir()
    assert smpy_main.main(["predict", "-np", "1", "-o", str(tmp_path / "s"), HELLO]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert smpy_main.main(["plot", "--trace", str(blocker), "-o", str(blocker)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert smpy_main.main(["replay", "--json", str(tmp_path / "no" / "x.json"), str(blocker)]) == 2
    assert "--json" in capsys.readouterr().err
