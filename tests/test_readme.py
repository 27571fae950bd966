"""Every command of the README's "Using it" block runs as written (from the repository's root,
in a scratch directory that sees ``examples/``) and succeeds: the files it names exist, the
options it shows are accepted."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from realmpi import MPIEXEC

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def readme_commands() -> list[str]:
    """The commands of the bash block after "## Using it": continuation lines joined,
    comments and comment-only lines dropped."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Using it", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands: list[str] = []
    pending = ""
    for line in block.splitlines():
        code = line.split("  #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        if not code.strip():
            continue
        if code.endswith("\\"):
            pending += code[:-1] + " "
            continue
        commands.append((pending + code).strip())
        pending = ""
    return commands


COMMANDS = readme_commands()


def test_the_block_is_found() -> None:
    assert len(COMMANDS) > 20 and COMMANDS[0].startswith("smpyrun")
    assert all(c.split()[0] in ("smpyrun", "smpy", "python", "mpiexec") for c in COMMANDS), COMMANDS


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    exe = {"smpyrun": str(BIN / "smpyrun"), "smpy": str(BIN / "smpy"), "python": sys.executable}
    if argv[0] == "mpiexec":
        if MPIEXEC is None:
            pytest.skip("no mpiexec (pip install mpich)")
        argv[0] = MPIEXEC
        argv = [sys.executable if a == "python" else a for a in argv]
    else:
        argv[0] = exe[argv[0]]
    return argv


@pytest.mark.parametrize("command", COMMANDS, ids=[c[:60] for c in COMMANDS])
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    if "calibrate network" in command or "calibrate compute" in command:
        if MPIEXEC is None:
            pytest.skip("no mpiexec (pip install mpich)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    if command.startswith("smpy replay"):  # replays the trace of the --trace-ti line before it
        subprocess.run(_argv("smpyrun -q -np 16 --trace-ti run.ti examples/heat.py"), cwd=tmp_path,
                       capture_output=True, check=True, timeout=300)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(_argv(command), cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env=env)
    assert proc.returncode == 0, f"{command}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
