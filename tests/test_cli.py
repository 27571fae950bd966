"""The ``smpyrun`` command line (run as a subprocess, like a user would)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"
HELLO = str(ROOT / "examples" / "hello.py")
BIN = Path(sys.executable).parent
TIMEOUT_S = 60


def smpyrun(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    exe = BIN / "smpyrun"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smpy"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)


def map_lines(stderr: str) -> dict[int, str]:
    """``[rank i] -> host`` lines of ``--map``."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("[rank ") and "] -> " in line:
            left, host = line.split("] -> ")
            out[int(left[len("[rank "):])] = host.strip()
    return out


def assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit code 2, one line on stderr naming every needle, no Python traceback."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0]


@pytest.mark.slow
def test_json_summary(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = smpyrun("-q", "-np", "3", "--json", str(out), HELLO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == [f"Hello from rank {r} of 3" for r in range(3)]
    data = json.loads(out.read_text())
    for key in ("script", "np", "platform", "hosts_used", "status", "exit_code", "makespan_s", "mpi_calls",
                "messages", "bytes_sent", "wall_s", "events", "message", "ranks", "config"):
        assert key in data, key
    assert data["np"] == 3
    assert data["status"] == "ok" and data["exit_code"] == 0
    assert data["makespan_s"] > 0
    assert data["platform"] == "cluster64"
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2]
    assert [r["host"] for r in data["ranks"]] == ["node-0", "node-1", "node-2"]
    assert max(r["end_time_s"] for r in data["ranks"]) == pytest.approx(data["makespan_s"])
    assert data["messages"] >= 2  # the gathers of ranks 1 and 2


@pytest.mark.slow
def test_summary_on_stderr_unless_quiet() -> None:
    loud = smpyrun("-np", "2", HELLO)
    assert loud.returncode == 0
    assert "[smpy] simulated makespan:" in loud.stderr
    assert "[smpy] simulated makespan:" not in loud.stdout
    quiet = smpyrun("-q", "-np", "2", HELLO)
    assert "[smpy] simulated makespan:" not in quiet.stderr


@pytest.mark.slow
def test_map_round_robin_on_default_platform() -> None:
    proc = smpyrun("-q", "-np", "5", "--map", HELLO)
    assert proc.returncode == 0, proc.stderr
    assert map_lines(proc.stderr) == {i: f"node-{i}" for i in range(5)}


@pytest.mark.slow
def test_map_with_hostfile(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-5:2\nnode-7\n")
    proc = smpyrun("-q", "-np", "4", "--hostfile", str(hostfile), "--map", HELLO)
    assert proc.returncode == 0, proc.stderr
    assert map_lines(proc.stderr) == {0: "node-5", 1: "node-5", 2: "node-7", 3: "node-5"}
    # the program sees the same placement
    assert "# ranks run on: node-5, node-7" in proc.stdout


@pytest.mark.slow
def test_np_defaults_to_hostfile_length(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-1\nnode-2:2\n")
    proc = smpyrun("-q", "--hostfile", str(hostfile), HELLO)
    assert proc.returncode == 0, proc.stderr
    assert "Hello from rank 2 of 3" in proc.stdout


@pytest.mark.slow
def test_help_cfg() -> None:
    proc = smpyrun("--help-cfg")
    assert proc.returncode == 0
    assert "smpi/host-speed" in proc.stdout
    assert "network/model" in proc.stdout


@pytest.mark.slow
def test_python_dash_m_smpy() -> None:
    proc = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", "2", HELLO], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:2] == ["Hello from rank 0 of 2", "Hello from rank 1 of 2"]


@pytest.mark.slow
def test_program_arguments_reach_each_rank() -> None:
    # options after the script belong to the program, even ones smpyrun knows
    proc = smpyrun("-q", "-np", "3", str(PROGRAMS / "isolation.py"), "argv", "-v", "two words", "--json", "x",
                   "-np", "7")
    assert proc.returncode == 0, proc.stderr
    want = ["argv", "-v", "two words", "--json", "x", "-np", "7"]
    assert sorted(proc.stdout.splitlines()) == [f"rank {r} argv {want!r}" for r in range(3)]


@pytest.mark.slow
def test_bad_platform_field(tmp_path: Path) -> None:
    plat = tmp_path / "bad.yaml"
    plat.write_text("name: bad\nclusters:\n  - name: c\n    prefix: n-\n    radical: 0-3\n    speed: 1Gf\n"
                    "    bandwidth: fast\n    latency: 50us\n")
    proc = smpyrun("-np", "2", "--platform", str(plat), HELLO)
    assert_clean_error(proc, "clusters[0].bandwidth", str(plat), "'fast'")
    assert proc.stdout == ""


@pytest.mark.slow
def test_bad_platform_nested_field(tmp_path: Path) -> None:
    plat = tmp_path / "bad2.yaml"
    plat.write_text("hosts:\n  - {name: a, speed: 1Gf}\n  - {name: b, speed: -3Gf}\n")
    proc = smpyrun("-np", "2", "--platform", str(plat), HELLO)
    assert_clean_error(proc, "hosts[1].speed")


@pytest.mark.slow
def test_unknown_cfg_name() -> None:
    proc = smpyrun("-np", "2", "--cfg", "smpi/no-such-thing:1", HELLO)
    assert_clean_error(proc, "smpi/no-such-thing")
    assert proc.stdout == ""


@pytest.mark.slow
def test_bad_cfg_value() -> None:
    proc = smpyrun("-np", "2", "--cfg=smpi/host-speed:fast", HELLO)
    assert_clean_error(proc, "smpi/host-speed", "fast")


@pytest.mark.slow
def test_missing_script_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    proc = smpyrun("-np", "2", str(missing))
    assert_clean_error(proc, str(missing))


def test_no_script() -> None:
    proc = smpyrun("-np", "2")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "missing" in proc.stderr


@pytest.mark.slow
def test_unknown_host_in_hostfile(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-1\nnowhere\n")
    proc = smpyrun("-np", "2", "--hostfile", str(hostfile), HELLO)
    assert_clean_error(proc, "nowhere")


@pytest.mark.slow
def test_exit_code_of_failing_program() -> None:
    proc = smpyrun("-q", "-np", "2", str(PROGRAMS / "fault_abort.py"))
    assert proc.returncode == 3
    assert "MPI_Abort" in proc.stderr


@pytest.mark.slow
def test_unknown_platform_key(tmp_path: Path) -> None:
    plat = tmp_path / "extra.yaml"
    plat.write_text("clusters:\n  - name: c\n    prefix: n-\n    radical: 0-3\n    speed: 1Gf\n"
                    "    bandwidth: 1Gbps\n    latency: 50us\n    colour: red\n")
    proc = smpyrun("-np", "2", "--platform", str(plat), HELLO)
    assert_clean_error(proc, "clusters[0].colour")


@pytest.mark.slow
def test_missing_platform_file(tmp_path: Path) -> None:
    proc = smpyrun("-np", "2", "--platform", str(tmp_path / "none.yaml"), HELLO)
    assert_clean_error(proc, "none.yaml")


@pytest.mark.slow
def test_bad_cfg_choice_and_syntax() -> None:
    assert_clean_error(smpyrun("-np", "2", "--cfg", "network/model:BOGUS", HELLO), "network/model", "BOGUS")
    assert_clean_error(smpyrun("-np", "2", "--cfg", "novalue", HELLO), "novalue")


@pytest.mark.slow
def test_script_with_syntax_error(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("x = (\n")
    assert_clean_error(smpyrun("-np", "2", str(script)), "broken.py")


def test_version() -> None:
    proc = smpyrun("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("smpy ")


@pytest.mark.slow
def test_fast_exit_keeps_what_a_normal_exit_guarantees(tmp_path: Path) -> None:
    """The command leaves with os._exit (no interpreter teardown): files a rank never closed
    are still flushed, atexit handlers run, unterminated output lines are written, and the
    exit status is the program's."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import atexit, sys\n"
        "from mpi4py import MPI\n"
        "r = MPI.COMM_WORLD.Get_rank()\n"
        f"f = open(r'{tmp_path}' + f'/out{{r}}.txt', 'w')\n"
        "f.write('x' * 10000 + str(r))\n"  # buffered, never closed
        "print('tail', r, end='')\n"
        f"atexit.register(lambda: open(r'{tmp_path}/atexit.txt', 'w').write('ran'))\n"
        "MPI.COMM_WORLD.Barrier()\n"
        "sys.exit(int(sys.argv[1]))\n")
    for status in (0, 3):
        (tmp_path / "atexit.txt").unlink(missing_ok=True)
        proc = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", "2", str(prog), str(status)], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        assert proc.returncode == status, proc.stderr
        assert "tail 0" in proc.stdout and "tail 1" in proc.stdout
        assert (tmp_path / "out0.txt").read_text() == "x" * 10000 + "0"
        assert (tmp_path / "out1.txt").read_text() == "x" * 10000 + "1"
        if status == 0:  # an aborted run (first non-zero exit) kills the other ranks first
            assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_help_cfg_lists_the_collective_settings():
    # they are declared by smpy.colls.dispatch, which the launcher must import itself
    out = subprocess.run([sys.executable, "-m", "smpy", "--help-cfg"], capture_output=True,
                         text=True, check=True).stdout
    for name in ("smpi/coll-selector", "smpi/allreduce", "smpi/bcast", "smpi/alltoallw"):
        assert f"  {name}" in out, name
