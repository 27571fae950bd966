"""Checkpoint/restart accounting: the replay of a checkpointed run against a failure history
(smpy.cli.reliability.checkpointed_time), Young/Daly, and examples/faults/heat3d.py emulated
with a failure at a fixed time and restarted from its last checkpoint."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.cli.reliability import checkpointed_time, daly_time, young_daly

ROOT = Path(__file__).resolve().parents[1]
HEAT = ROOT / "examples/faults/heat3d.py"


def test_replay_of_a_failure_at_a_fixed_time() -> None:
    # 10 steps of 1 s, a 0.5-s checkpoint after steps 3, 6 and 9: 11.5 s without failure
    assert checkpointed_time(10, 1.0, 3, 0.5, []).time_s == pytest.approx(11.5)
    # a failure at 5.2 s: the checkpoint of step 3 ended at 3.5 s, so 1.7 s of work are lost;
    # abort at 5.201, restart 2 s later, 0.25 s to read the checkpoint, then steps 4..10 and
    # the checkpoints of steps 6 and 9: 7.451 + 7 + 1 = 15.451 s
    r = checkpointed_time(10, 1.0, 3, 0.5, [5.2], restart_s=2.0, restore_s=0.25, detect_s=0.001)
    assert r.lost_s == [pytest.approx(1.7)] and r.attempts == 2
    assert r.time_s == pytest.approx(15.451)
    # a failure during a checkpoint loses the checkpoint too (3.0 -> 3.5 s; failure at 3.4 s)
    r = checkpointed_time(10, 1.0, 3, 0.5, [3.4])
    assert r.lost_s == [pytest.approx(3.4)] and r.time_s == pytest.approx(3.4 + 11.5)
    # a failure while the job is down (between the abort and the restart) does not count;
    # two failures in the second attempt's first segment: each loses what was redone
    r = checkpointed_time(10, 1.0, 3, 0.5, [5.2, 6.0, 8.0, 9.0], restart_s=2.0)
    assert r.attempts == 3 and r.lost_s == [pytest.approx(1.7), pytest.approx(0.8)]
    assert r.time_s == pytest.approx(8.0 + 2.0 + 7 + 1.0)
    # no checkpoints: every failure restarts from the beginning
    r = checkpointed_time(4, 1.0, 0, 0.5, [2.5])
    assert r.lost_s == [pytest.approx(2.5)] and r.time_s == pytest.approx(6.5)


def test_young_daly() -> None:
    assert young_daly(2.0, 100.0) == pytest.approx(20.0)
    # without failures Daly's time is the work plus its checkpoints
    assert daly_time(200.0, 20.0, 2.0, 5.0, 1e12) == pytest.approx(220.0, rel=1e-6)
    # its minimum over the interval is near sqrt(2 C M) when C << M (Daly: sqrt(2CM) - C + ...)
    taus = [t / 10 for t in range(50, 600)]
    best = min(taus, key=lambda t: daly_time(200.0, t, 2.0, 5.0, 100.0))
    assert abs(best - young_daly(2.0, 100.0)) < 2.0


def _platform(tmp_path: Path) -> tuple[Path, Path]:
    """examples/faults/heat_pfs.yaml without its failure models, the scratch in tmp_path."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    text = (ROOT / "examples/faults/heat_pfs.yaml").read_text().replace("/tmp/smpy-heat/scratch", str(scratch))
    text = re.sub(r"\n\s*failures: .*|\n\s*failure_overrides: .*", "", text)
    plat = tmp_path / "p.yaml"
    plat.write_text(text)
    return plat, scratch


def _heat(tmp_path: Path, plat: Path, scratch: Path, name: str, *extra: str) -> tuple[str, dict]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-q", "-np", "8", "--platform", str(plat),
                           "--cfg", "smpi/simulate-computation:no", "--json", str(out), *extra, str(HEAT),
                           "--dir", str(scratch / name), "--steps", "30", "--every", "10", "--step-time", "1",
                           "--timeline"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


def test_heat3d_restarts_from_its_last_checkpoint(tmp_path: Path) -> None:
    plat, scratch = _platform(tmp_path)
    clean, _ = _heat(tmp_path, plat, scratch, "clean")
    ck = [(int(s), float(a), float(b)) for s, a, b in re.findall(r"checkpoint (\d+): ([\d.]+) -> ([\d.]+) s", clean)]
    assert [s for s, _, _ in ck] == [10, 20]
    step = ck[0][1] / 10
    cost = ck[0][2] - ck[0][1]
    assert ck[1][2] - ck[1][1] == pytest.approx(cost, abs=1e-4)
    # the checkpoint: 8 slabs of 18 x 16 x 16 doubles (+ the .npy header) on one 150 kBps disk
    assert cost > 8 * 36_864 / 150e3

    out, d = _heat(tmp_path, plat, scratch, "failed", "--fail", "node-3@15.5s", "--restarts", "1",
                   "--restart-delay", "5s")
    a1, a2 = d["attempts"]
    assert (a1["end_s"], a1["status"], a2["status"]) == (15.501, "failed", "ok")
    assert a2["start_s"] == pytest.approx(20.501)
    # attempt 2 resumed from the checkpoint of step 10, not from the start, and computed the
    # same field as the run without failure
    resumed = re.search(r"resumed at step (\d+) at ([\d.]+) s, restored in ([\d.]+) s", out)
    assert resumed and int(resumed.group(1)) == 10
    checksum = re.search(r"checksum (\S+),", clean).group(1)
    assert f"steps 10..29 in this run, checksum {checksum}," in out
    assert not any(scratch.joinpath("failed").iterdir())  # the checkpoint files removed at the end
    # the work lost is the time since the end of the last checkpoint, exactly
    ends = [float(b) for b in re.findall(r"checkpoint 10: [\d.]+ -> ([\d.]+) s", out)]
    assert ends == [ck[0][2]]
    restore = float(resumed.group(2)) - a2["start_s"] + float(resumed.group(3))
    replay = checkpointed_time(30, step, 10, cost, [15.5], restart_s=5.0, restore_s=restore, detect_s=1e-3)
    assert replay.lost_s == [pytest.approx(15.5 - ck[0][2], abs=1e-9)]
    # and the time to solution is the replay's (the restart runs on 7 hosts, one holding two
    # ranks, so its halo exchanges differ by microseconds)
    assert d["time_to_solution_s"] == pytest.approx(replay.time_s, abs=5e-3)
    assert d["work_lost_rank_s"] == pytest.approx(15.501 * 8)


def test_heat3d_under_mpiexec_computes_what_smpy_computes(tmp_path: Path) -> None:
    from realmpi import run_reference

    plat, scratch = _platform(tmp_path)
    args = ["--steps", "12", "--every", "5"]
    real = run_reference(4, str(HEAT), *args, "--dir", str(tmp_path / "real"), cwd=tmp_path)
    proc = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "-q", "-np", "4", "--platform", str(plat),
                           str(HEAT), *args, "--dir", str(scratch / "sim")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    def head(text: str) -> str:
        return text.split(", checkpoints")[0].strip()

    assert head(real.stdout) == head(proc.stdout) and "steps 0..11 in this run, checksum" in real.stdout
    assert not any((tmp_path / "real").iterdir())


def test_predict_passes_restarts_and_the_repetition_to_each_run() -> None:
    from smpy.cli.sweep import Plan

    plan = Plan(script="heat3d.py", args=["--dir", "s/ck-{every}-{rep}", "--every", "{every}"], nps=[8],
                platforms=["p.yaml"], params=[("every", ["10", "20"])], reps=2, failure_seed=3, restarts=50,
                restart_delay="5s")
    cmds = [(j.point.params, j.rep, j.command) for j in plan.jobs()]
    assert len(cmds) == 4
    for params, rep, cmd in cmds:
        every = dict(params)["every"]
        assert cmd[cmd.index("--restarts") + 1] == "50" and cmd[cmd.index("--restart-delay") + 1] == "5s"
        assert f"--cfg=smpy/failure-seed:{3 + rep}" in cmd
        assert cmd[-4:] == ("--dir", f"s/ck-{every}-{rep}", "--every", every)
