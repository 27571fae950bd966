"""``smpy predict``: sweeps over rank counts, platforms and parameters (real smpyrun processes)."""

from __future__ import annotations

import csv
import json
import math
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from realmpi import needs_mpiexec

from smpy.cli.sweep import (
    REAL,
    Job,
    Plan,
    Point,
    Run,
    SweepError,
    SweepInterrupted,
    parse_np_list,
    parse_param,
    run_sweep,
    substitute,
    summarize,
)

ROOT = Path(__file__).resolve().parents[1]

# W flops of work split evenly over the ranks, then a barrier; with --param-driven W.
# Rank counts listed in argv[2] make the program fail (to test failure reporting).
PROGRAM = """
import sys
import smpy
from mpi4py import MPI
comm = MPI.COMM_WORLD
work = float(sys.argv[1])
fail = [int(x) for x in sys.argv[2].split(',')] if len(sys.argv) > 2 and sys.argv[2] else []
if comm.size in fail and comm.rank == 0:
    raise RuntimeError('planned failure at %d ranks' % comm.size)
smpy.execute_flops(work / comm.size)
comm.Barrier()
"""


def platform(tmp: Path, name: str, speed: str) -> Path:
    p = tmp / f"{name}.yaml"
    p.write_text(f"""name: {name}
clusters:
  - name: c
    prefix: n
    radical: 0-15
    cores: 1
    speed: {speed}
    bandwidth: 10GBps
    latency: 0us
    backbone: {{bandwidth: 100GBps, latency: 0us}}
""")
    return p


def predict(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smpy", "predict", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture()
def app(tmp_path: Path) -> Path:
    prog = tmp_path / "app.py"
    prog.write_text(PROGRAM)
    return prog


def test_np_list_and_params() -> None:
    assert parse_np_list("16,32,64") == [16, 32, 64]
    assert parse_np_list("4:64") == [4, 8, 16, 32, 64]
    assert parse_np_list("3:20,2,3") == [3, 6, 12, 2]
    assert parse_param("N=1000, 2000") == ("N", ["1000", "2000"])
    for bad in ("0,2", "a", "8:4", "2,,4"):
        with pytest.raises(SweepError, match="-np"):
            parse_np_list(bad)
    for bad, needle in (("N", "NAME=VALUE"), ("1x=3", "NAME=VALUE"), ("np=4", "-np"), ("N=1,", "empty")):
        with pytest.raises(SweepError, match=needle):
            parse_param(bad)


def test_substitute() -> None:
    assert substitute("--size={N}x{np}", {"N": "10", "np": "4"}) == "--size=10x4"
    assert substitute("{{N}}", {"N": "10"}) == "{N}"
    with pytest.raises(SweepError, match=r"\{M\}, which is not defined"):
        substitute("{M}", {"N": "1", "np": "2"})
    with pytest.raises(SweepError, match="unmatched"):
        substitute('{"a": 1', {})
    with pytest.raises(SweepError, match="literal braces"):
        substitute('{"a": 1}', {})
    assert substitute('{{"a": {N}}}', {"N": "1"}) == '{"a": 1}'


def test_substitute_arithmetic() -> None:
    v = {"np": "8", "N": "1e9", "L": "128", "name": "big"}
    assert substitute("{N * np}", v) == "8000000000"  # a whole number, written as one
    assert substitute("{round(L * np ** (1/3))}", v) == "256"  # weak scaling of a 3-D grid
    assert substitute("{L / 3}", v) == str(128 / 3)
    assert substitute("{max(1, np // 3) - -1}x{ceil(np / 3)}", v) == "3x3"
    assert substitute("{name}", v) == "big"  # a bare name keeps its text
    for expr, needle in (("{name * 2}", "name = 'big' is not a number"), ("{K + 1}", "K, which is not"),
                         ("{__import__('os')}", "only numbers"), ("{np.real}", "only numbers"),
                         ("{2 ** 100}", "exponent"), ("{np / (np - 8)}", "divides by zero"),
                         ("{int(x=1)}", "only numbers"), ("{N * 1e300}", "not a finite number"), ("{(N * 1e150) ** 2.5}", "(34"),
                         ("{max()}", "max expected")):
        with pytest.raises(SweepError, match=re.escape(needle)):
            substitute(expr, v)


def test_plan_order_and_placeholder_errors(tmp_path: Path) -> None:
    plan = Plan("app.py", ["{N}", "{np}"], [2, 4], [None, "b.yaml"], [("N", ["1", "2"])], reps=2)
    jobs = plan.jobs()
    assert len(jobs) == 2 * 2 * 2 * 2
    # repetition-major: every point once before any point twice
    assert [j.rep for j in jobs] == [0] * 8 + [1] * 8
    assert [j.point for j in jobs[:8]] == [j.point for j in jobs[8:]]
    j = next(j for j in jobs if j.point == Point("b.yaml", 4, (("N", "2"),)))
    assert j.command[-3:] == ("app.py", "2", "4")
    assert ("--platform", "b.yaml") == j.command[j.command.index("--platform"):][:2]
    with pytest.raises(SweepError, match=r"\{K\}"):
        Plan("app.py", ["{K}"], [2], [None]).jobs()
    # the program's path may name a variant
    variants = Plan("{V}/app.py", [], [2], [None], [("V", ["old", "new"])], real_nps=[2],
                    time_regex="(x)", mpiexec="mpiexec")
    assert variants.scripts() == ["old/app.py", "new/app.py"]
    assert [j.command[-1] for j in variants.jobs()] == ["old/app.py"] * 2 + ["new/app.py"] * 2
    with pytest.raises(SweepError, match="once"):
        Plan("app.py", [], [2], [None], [("N", ["1"]), ("N", ["2"])]).jobs()


def test_summary_speedup_efficiency_and_failures() -> None:
    pts = [Point(None, p) for p in (2, 4, 8)]
    runs = [Run(pts[0], 0, "ok", 0, 10.0), Run(pts[0], 1, "ok", 0, 12.0), Run(pts[0], 2, "ok", 0, 11.0),
            Run(pts[1], 0, "ok", 0, 6.0), Run(pts[1], 1, "deadlock", 1, 0.5, message="rank 0 in Recv"),
            Run(pts[2], 0, "timeout", -1)]
    strong = summarize(pts, runs, "strong")
    assert (strong[0].median_s, strong[0].min_s, strong[0].max_s, strong[0].ok) == (11.0, 10.0, 12.0, 3)
    assert strong[0].spread == pytest.approx(2 / 11)
    assert strong[1].speedup == pytest.approx(11 / 6) and strong[1].efficiency == pytest.approx(11 / 12)
    assert strong[1].ok == 1 and strong[1].failures == ["rep 1: deadlock: rank 0 in Recv"]
    assert strong[2].ok == 0 and math.isnan(strong[2].median_s) and math.isnan(strong[2].speedup)
    weak = summarize(pts, runs, "weak")
    assert weak[1].efficiency == pytest.approx(11 / 6)


def test_run_sweep_keeps_job_order_with_an_executor() -> None:
    jobs = [Job(Point(None, p), r, ("x",), ".", None) for r in range(2) for p in (1, 2, 4)]

    def fake(job: Job) -> Run:
        return Run(job.point, job.rep, "ok", 0, 1.0 / job.point.np + job.rep)

    seen: list[int] = []
    with ThreadPoolExecutor(3) as pool:
        runs = run_sweep(jobs, pool, lambda done, total, run: seen.append(done), runner=fake)
    assert [(r.point, r.rep) for r in runs] == [(j.point, j.rep) for j in jobs]
    assert sorted(seen) == list(range(1, 7))
    assert runs == run_sweep(jobs, None, runner=fake)


@pytest.mark.slow
def test_predict_strong_scaling_two_platforms(tmp_path: Path, app: Path) -> None:
    slow, fast = platform(tmp_path, "slow", "1Gf"), platform(tmp_path, "fast", "4Gf")
    out = tmp_path / "res" / "sweep"
    proc = predict("-np", "1:4", "--reps", "2", "--platform", str(slow), "--platform", str(fast),
                   "-o", f"{out}.csv", "-q", str(app), "8e9", cwd=tmp_path)  # -o X.csv: prefix X
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((out.parent / "sweep.csv").open()))
    assert [(Path(r["platform"]).stem, int(r["np"])) for r in rows] == [
        ("slow", 1), ("slow", 2), ("slow", 4), ("fast", 1), ("fast", 2), ("fast", 4)]
    t = {(Path(r["platform"]).stem, int(r["np"])): float(r["median_s"]) for r in rows}
    # 8 Gflop split over the ranks: 8 s / p on 1 Gf cores, 2 s / p on 4 Gf cores (+ a barrier)
    for p in (1, 2, 4):
        assert t["slow", p] == pytest.approx(8.0 / p, rel=1e-3)
        assert t["fast", p] == pytest.approx(2.0 / p, rel=1e-3)
    eff = {(Path(r["platform"]).stem, int(r["np"])): float(r["efficiency"]) for r in rows}
    assert eff["slow", 4] == pytest.approx(1.0, rel=1e-3) and eff["fast", 1] == 1.0
    assert all(int(r["runs"]) == 2 and int(r["ok"]) == 2 and int(r["peak_rss_bytes"]) > 2**20 for r in rows)
    runs = list(csv.DictReader((out.parent / "sweep.runs.csv").open()))
    assert len(runs) == 12 and {r["status"] for r in runs} == {"ok"}
    doc = json.loads((out.parent / "sweep.json").read_text())
    assert doc["reps"] == 2 and len(doc["points"]) == 6 and doc["scaling"] == "strong"
    assert "predicted s" in proc.stdout and "slow" in proc.stdout


@pytest.mark.slow
def test_predict_params_weak_scaling_energy_and_failure(tmp_path: Path, app: Path) -> None:
    plat = tmp_path / "energy.yaml"
    plat.write_text("""name: e
clusters:
  - {name: c, prefix: n, radical: 0-7, cores: 1, speed: 1Gf, bandwidth: 10GBps, latency: 0us,
     power: {off: 5W, pstates: [{idle: 50W, epsilon: 100W, all_cores: 100W}]}}
""")
    out = tmp_path / "weak"
    # the work grows with the ranks (weak scaling): N flops per rank; 4 ranks fail on purpose
    prog = tmp_path / "weak.py"
    prog.write_text(PROGRAM.replace("work = float(sys.argv[1])",
                                    "work = float(sys.argv[1]) * comm.size"))
    proc = predict("-np", "1,2,4", "--param", "N=1e9,2e9", "--scaling", "weak", "--energy",
                   "--platform", str(plat), "--reps", "1", "-o", str(out), "-q",
                   str(prog), "{N}", "4", cwd=tmp_path)
    assert proc.returncode == 1  # a run failed; the others are still reported
    doc = json.loads(out.with_suffix(".json").read_text())
    pts = {(p["param_N"], p["np"]): p for p in doc["points"]}
    for n, secs in (("1e9", 1.0), ("2e9", 2.0)):
        for p in (1, 2):
            assert pts[n, p]["median_s"] == pytest.approx(secs, rel=1e-3)
            assert pts[n, p]["efficiency"] == pytest.approx(1.0, rel=1e-3)
            # p hosts at 100 W (busy) and 8 - p idle at 50 W for the whole run
            assert pts[n, p]["energy_J"] == pytest.approx((100.0 * p + 50.0 * (8 - p)) * secs, rel=1e-3)
            assert pts[n, p]["used_J"] == pytest.approx(100.0 * p * secs, rel=1e-3)  # the ranks' hosts
        assert pts[n, 4]["ok"] == 0 and pts[n, 4]["median_s"] is None
        assert "planned failure at 4 ranks" in pts[n, 4]["failures"][0]
    assert "planned failure" in proc.stderr
    # each failing point gives a command that runs it again, and that command fails the same way
    again = [ln.split("run again: ", 1)[1] for ln in proc.stderr.splitlines() if "run again: " in ln]
    assert len(again) == 2
    rerun = subprocess.run(shlex.split(again[0]), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert rerun.returncode != 0 and "planned failure at 4 ranks" in rerun.stderr


@pytest.mark.slow
def test_predict_bad_input_names_the_option(tmp_path: Path, app: Path) -> None:
    for args, needle in ((["-np", "0"], "-np"), (["-np", "2", "--param", "x"], "--param"),
                         (["-np", "2", "--jobs", "0"], "--jobs"), (["-np", "2", "--reps", "0"], "--reps"),
                         (["-np", "2", "--timeout", "0"], "--timeout"),
                         (["-np", "2", "--mpiexec-args=-hosts 'a"], "--mpiexec-args")):
        proc = predict(*args, str(app), "{Q}" if "--param" in args else "1", cwd=tmp_path)
        assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    proc = predict("-np", "2", str(app), "{Q}", cwd=tmp_path)
    assert proc.returncode == 2 and "{Q}" in proc.stderr
    # checked before any run: the program file, and each platform (its error names the field)
    proc = predict("-np", "2", "missing.py", cwd=tmp_path)
    assert proc.returncode == 2 and "missing.py: no such program file" in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nhosts:\n  - {name: h, speed: fast}\n")
    proc = predict("-np", "2", "--platform", str(bad), str(app), "1", cwd=tmp_path)
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr and "speed" in proc.stderr
    assert "Traceback" not in proc.stderr and "[1/" not in proc.stderr


@pytest.mark.slow
def test_predict_plot(tmp_path: Path, app: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "s.png"
    proc = predict("-np", "1,2", "--reps", "1", "--plot", str(png), "-q", "--jobs", "2",
                   "--platform", str(platform(tmp_path, "p", "1Gf")), str(app), "1e9", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


BUSY = """
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
t0 = MPI.Wtime()
end, x = time.thread_time() + 0.25, 0
while time.thread_time() < end:  # 0.25 s of CPU on every rank
    x += 1
comm.Barrier()
if comm.rank == 0:
    print(f"# elapsed {MPI.Wtime() - t0:.6f} s")
"""


def test_plan_with_real_runs() -> None:
    plan = Plan("app.py", ["{np}"], [1, 2, 4], [None, "b.yaml"], reps=2, real_nps=[1, 2],
                time_regex=r"# elapsed (\S+)", mpiexec="/x/mpiexec")
    jobs = plan.jobs()
    reals = [j for j in jobs if j.point.is_real]
    # one real run per rank count and repetition, whatever the number of platforms
    assert [(j.point.np, j.rep) for j in reals] == [(1, 0), (2, 0), (1, 1), (2, 1)]
    assert reals[0].command == ("/x/mpiexec", "-n", "1", sys.executable, "app.py", "1")
    placed = Plan("app.py", [], [4], [None], real_nps=[4], time_regex="(x)", mpiexec="mpiexec",
                  mpiexec_args=["-hosts", "a,b", "-ppn", "{np // 2}"])
    assert [j.command for j in placed.jobs() if j.point.is_real] == [
        ("mpiexec", "-n", "4", "-hosts", "a,b", "-ppn", "2", sys.executable, "app.py")]
    # each real run comes just before the first emulation of its rank count in its repetition
    first = [next(i for i, j in enumerate(jobs) if j.point == Point(None, p) and j.rep == r)
             for r in (0, 1) for p in (1, 2)]
    assert [jobs[i - 1] for i in first] == reals
    assert len(jobs) == 2 * (6 + 2) and all(j.time_regex == r"# elapsed (\S+)" for j in jobs)
    # a parameter the program does not see (only in --cfg) shares the real runs
    cfg_only = Plan("app.py", ["{N}"], [2], [None], [("N", ["1", "2"]), ("F", ["a", "b"])], reps=1,
                    cfg=["smpi/comp-adjustment-file:{F}.csv"], real_nps=[2], time_regex="(x)")
    reals = [j.point for j in cfg_only.jobs() if j.point.is_real]
    assert reals == [Point(REAL, 2, (("N", "1"),)), Point(REAL, 2, (("N", "2"),))]
    assert cfg_only.real_of(Point(None, 2, (("N", "2"), ("F", "b")))) == reals[1]
    # names inside expressions count as seen by the program
    expr = Plan("app.py", ["{round(N * np)}"], [2], [None], [("N", ["1", "2"]), ("F", ["a"])])
    assert expr.real_of(Point(None, 2, (("N", "2"), ("F", "a")))) == Point(REAL, 2, (("N", "2"),))
    for kw, needle in (({"time_regex": None}, "--time-regex"), ({"real_nps": [8]}, "--real 8"),
                       ({"time_regex": "("}, "--time-regex"), ({"time_regex": "elapsed"}, "group")):
        args = {"real_nps": [1], "time_regex": r"(\S+)", **kw}
        with pytest.raises(SweepError, match=needle):
            Plan("app.py", [], [1, 2], [None], **args).jobs()


def test_summary_against_real_runs() -> None:
    a, b = Point("a.yaml", 2), Point("b.yaml", 2)
    real = Point(REAL, 2)
    runs = [Run(real, 0, "ok", 0, program_s=1.0), Run(real, 1, "ok", 0, program_s=1.2),
            Run(real, 2, "failed", 1, message="boom"),
            Run(a, 0, "ok", 0, 9.0, program_s=1.21), Run(b, 0, "ok", 0, 9.0, program_s=0.99)]
    sa, sb = summarize([a, b], runs)
    assert (sa.real_s, sa.real_ok, sb.real_s) == (1.1, 2, 1.1)  # both platforms against one real median
    assert sa.median_s == 1.21  # the program's own time, not the makespan
    assert sa.error == pytest.approx(0.1) and sb.error == pytest.approx(-0.1)
    assert sa.runs == 1  # real runs are not the point's runs


@pytest.mark.slow
@needs_mpiexec
def test_predict_against_real_mpiexec(tmp_path: Path) -> None:
    prog = tmp_path / "busy.py"
    prog.write_text(BUSY)
    plat = platform(tmp_path, "node", "1Gf")
    out = tmp_path / "real"
    proc = predict("-np", "1,2", "--real", "1,2", "--reps", "2", "--platform", str(plat),
                   "--cfg", "smpi/host-speed:1Gf", "--time-regex", r"# elapsed ([0-9.]+)",
                   "-o", str(out), "--timeout", "120", str(prog), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {int(r["np"]): r for r in csv.DictReader(out.with_suffix(".csv").open())}
    for p in (1, 2):
        pred, real = float(rows[p]["median_s"]), float(rows[p]["real_s"])
        assert int(rows[p]["real_ok"]) == 2
        assert pred == pytest.approx(0.25, rel=0.2)  # the busy loop's CPU time, measured
        assert real >= 0.2  # at least the loop; more when the machine is busy
        assert float(rows[p]["error"]) == pytest.approx((pred - real) / real)
    runs = list(csv.DictReader(out.with_suffix(".runs.csv").open()))
    assert sorted((r["platform"], r["np"]) for r in runs if r["platform"] == "(real)") == [
        ("(real)", "1"), ("(real)", "1"), ("(real)", "2"), ("(real)", "2")]
    assert all(float(r["program_s"]) > 0 for r in runs)
    assert "real s" in proc.stdout and "d_avg" in proc.stdout
    # a regex the output does not match: every run says so, nothing is averaged
    proc = predict("-np", "1", "--real", "1", "--reps", "1", "--platform", str(plat),
                   "--time-regex", r"# took ([0-9.]+)", "--timeout", "120", str(prog), cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.count("no match for --time-regex") == 2


def test_run_sweep_interrupted_keeps_finished_runs() -> None:
    jobs = [Job(Point(None, p), 0, ("x",), ".", None) for p in (1, 2, 4, 8)]

    def runner(job: Job) -> Run:
        if job.point.np == 4:
            raise KeyboardInterrupt
        return Run(job.point, job.rep, "ok", 0, 1.0)

    with pytest.raises(SweepInterrupted) as info:
        run_sweep(jobs, None, runner=runner)
    assert [r.point.np for r in info.value.runs] == [1, 2]


@pytest.mark.slow
def test_predict_ctrl_c_writes_what_finished(tmp_path: Path) -> None:
    import signal

    prog = tmp_path / "busy.py"
    prog.write_text(BUSY)
    out = tmp_path / "part"
    cmd = [sys.executable, "-m", "smpy", "predict", "-np", "1", "--reps", "20", "--time-regex",
           r"# elapsed ([0-9.]+)", "-o", str(out), str(prog)]
    # Ctrl-C's default disposition in the child, as from a terminal: a test run started in the
    # background by a non-interactive shell (`... &`) inherits SIGINT ignored
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    for line in proc.stderr:  # wait for the first finished run, then interrupt the sweep
        if line.startswith("[1/20]"):
            assert "left" in line
            proc.send_signal(signal.SIGINT)
            break
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    runs = list(csv.DictReader(out.with_suffix(".runs.csv").open()))
    assert 1 <= len(runs) < 20 and {r["status"] for r in runs} == {"ok"}
    assert "predicted s" in stdout


def test_umbrella_help_lists_predict() -> None:
    proc = subprocess.run([sys.executable, "-m", "smpy", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "smpy predict" in proc.stdout and "smpy calibrate" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "smpy.cli.smpyrun", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "smpy predict" not in proc.stdout  # smpyrun is the run command only
