"""``smpy predict``: emulate one program over rank counts, platforms and problem sizes.

    smpy predict -np 16,32,64,128 --platform a.yaml --platform b.yaml --reps 3 \\
        --cfg smpi/comp-adjustment-file:app-factors.csv -o sweep --plot sweep.png app.py N

prints, per point, the median predicted time over the runs and their range, the speedup and
efficiency against the smallest rank count, energy with ``--energy``, and the emulation's
own cost (wall time, peak RSS); writes ``sweep.csv``, ``sweep.runs.csv`` and ``sweep.json``.
See :mod:`smpy.cli.sweep` for the definitions.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smpy.cli.adaptive import MIN_REPS, converged_line, next_jobs, parse_ci
from smpy.cli.choose import OBJECTIVES, choices, parse_prices, plot_pareto, report
from smpy.cli.executors import open_executor
from smpy.cli.outputs import OutputError, check_dir, check_file
from smpy.cli.reliability import ReusedRunner, reliability
from smpy.cli.reliability import table as reliability_table
from smpy.cli.sweep import (
    REAL,
    Plan,
    Point,
    Run,
    SweepError,
    SweepInterrupted,
    parse_np_list,
    parse_param,
    plot,
    real_failures,
    run_sweep,
    summarize,
    table,
    write_outputs,
)
from smpy.support.mpiexec import default_mpiexec, require_mpiexec


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Predict a program's run time (and energy) over rank counts, platforms and "
                    "parameters: each point is emulated --reps times, each run in a fresh "
                    "smpyrun process; program arguments may use {np} and {NAME} of --param.")
    p.add_argument("-np", "-n", "--np", dest="np", required=True, metavar="LIST",
                   help="rank counts: 16,32,64 or LOW:HIGH (doubling from LOW up to HIGH)")
    p.add_argument("--platform", "-platform", action="append", default=[], metavar="FILE",
                   help="platform file (repeatable: compare platforms); default: smpyrun's default")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                   help="a parameter swept with the others; {NAME} in the program arguments "
                        "takes each value (repeatable: all combinations)")
    p.add_argument("--reps", type=_reps, default=3,
                   help="runs per point (default 3), or auto: repeat each point until the 95 %% "
                        "confidence interval of its mean time is within --ci (at least 3, at most "
                        "--max-reps runs); the median is reported: computation is measured, so "
                        "runs differ by this machine's noise")
    p.add_argument("--ci", default="2%", metavar="PRECISION",
                   help="with --reps auto: the relative half-width of the 95 %% confidence interval "
                        "to reach (default 2%%)")
    p.add_argument("--max-reps", type=int, default=20, metavar="N",
                   help="with --reps auto: at most this many runs per point (default 20)")
    p.add_argument("--jobs", "-j", type=int, default=1,
                   help="runs at once (default 1). Concurrent emulations share this machine's "
                        "cores, memory bandwidth and caches, which inflates the computation they "
                        "measure: use more than 1 only when the program's computation is modelled "
                        "(smpy.execute) or when the cores outnumber the jobs")
    p.add_argument("--executor", default="threads", metavar="SPEC",
                   help="where the runs execute: threads (this machine, --jobs at once), dask (a "
                        "local Dask cluster, one worker process per core or --jobs), or "
                        "dask://HOST:PORT (an existing Dask scheduler; the program and its files "
                        "are sent to the workers)")
    p.add_argument("--scaling", choices=("strong", "weak"), default="strong",
                   help="efficiency as speedup x p0/p (strong, default) or as speedup (weak: the "
                        "problem grows with the ranks)")
    p.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="configuration item for every run (repeatable; may use {np}, {NAME})")
    p.add_argument("--hostfile", default=None, help="smpyrun --hostfile for every run (may use {np})")
    p.add_argument("--energy", action="store_true",
                   help="load the host energy plugin; report joules of all the platform's hosts "
                        "(SimGrid's total) and of the hosts the ranks ran on")
    p.add_argument("--real", default=None, metavar="LIST",
                   help="also run these rank counts (among -np) for real on this node (mpiexec, real "
                        "mpi4py, one BLAS thread per rank), interleaved with the emulations, and give "
                        "each prediction's error and d_avg / d_max; needs --time-regex")
    p.add_argument("--time-regex", default=None, metavar="REGEX",
                   help="read each run's time from the program's output: the first group of REGEX "
                        "(e.g. '# elapsed ([0-9.eE+-]+)', a time the program measures with MPI.Wtime, "
                        "simulated under smpy); default: the simulated makespan")
    p.add_argument("--mpiexec", default=None,
                   help="mpiexec for --real (default: the one next to this Python, else on PATH)")
    p.add_argument("--mpiexec-args", default="", metavar="ARGS",
                   help="more mpiexec arguments for --real, e.g. --mpiexec-args='-hosts node1,node2 -ppn {np // 2}' "
                        "to check inter-node predictions on the nodes one has")
    p.add_argument("--failure-seed", dest="failure_seed", type=int, default=None, metavar="N",
                   help="reliability: repetition r draws the platform's failures with "
                        "smpy/failure-seed N+r; failed runs are outcomes, and each point gets its "
                        "success rate (95%% interval) and expected time/energy to solution")
    p.add_argument("--failure-replay", dest="failure_replay", action="store_true",
                   help="with --failure-seed: emulate each point once without its failure models and derive "
                        "every repetition's outcome from its failure draw (exact for host failures and "
                        "the default abort on a deterministic emulation; see smpy.cli.reliability)")
    p.add_argument("--restarts", type=int, default=0, metavar="K",
                   help="smpyrun --restarts K for every emulation: a failed attempt is run again (the "
                        "program resumes from its checkpoints); a run's time is its time to solution")
    p.add_argument("--restart-delay", dest="restart_delay", default=None, metavar="TIME",
                   help="smpyrun --restart-delay for every emulation (default 60s)")
    p.add_argument("--reuse-process", dest="reuse", action="store_true",
                   help="run the emulations of each job slot in one reused smpyrun process instead of "
                        "a fresh one per run (faster for many short runs; see smpy.cli.reliability)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="give up a run after this wall time")
    p.add_argument("-o", "--output", default=None, metavar="PREFIX",
                   help="write PREFIX.csv (per point), PREFIX.runs.csv (per run), PREFIX.json")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw time, efficiency (and energy) against the rank count (matplotlib)")
    p.add_argument("--objective", choices=OBJECTIVES, default=None,
                   help="print the best points by time, energy (needs --energy), edp (energy x "
                        "time) or cost (--price), and the Pareto front of time against energy")
    p.add_argument("--price", default=None, metavar="node-hour=X,kWh=Y",
                   help="prices for --objective cost: per node-hour used and per kWh")
    p.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                   help="with --objective: keep the points whose predicted time is within it")
    p.add_argument("--budget", type=float, default=None, metavar="COST",
                   help="with --objective: keep the points whose cost (--price) is within it")
    p.add_argument("--pareto", default=None, metavar="FILE.png",
                   help="plot time against energy with the Pareto front (needs --energy)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("script", help="the Python program (may use {NAME} of --param: program variants)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments (templates)")
    return p


def _reps(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of runs or auto, not {text!r}") from None


def make_plan(ns: argparse.Namespace) -> Plan:
    """The sweep of the command line, checked before the first run (SweepError otherwise)."""
    if ns.jobs < 1:
        raise SweepError("--jobs must be at least 1")
    ns.ci_value = parse_ci(ns.ci)
    if ns.reps == "auto" and ns.max_reps < MIN_REPS:
        raise SweepError(f"--max-reps must be at least {MIN_REPS}")
    if ns.timeout is not None and not ns.timeout > 0:
        raise SweepError(f"--timeout {ns.timeout:g}: must be positive (seconds)")
    try:
        mpiexec_args = shlex.split(ns.mpiexec_args)
    except ValueError as exc:
        raise SweepError(f"--mpiexec-args {ns.mpiexec_args!r}: {exc}") from None
    mpiexec = ns.mpiexec or default_mpiexec()
    if ns.real:
        try:
            mpiexec = require_mpiexec(mpiexec)
        except LookupError as exc:
            raise SweepError(f"--real: {exc}") from None
    parse_prices(ns.price)  # a bad --price fails before the first run
    for opt, val in (("--deadline", ns.deadline), ("--budget", ns.budget)):
        if val is not None and not val > 0:
            raise SweepError(f"{opt} {val:g}: must be positive")
    if ns.plot:
        from smpy.trace.plots import require_matplotlib
        try:
            require_matplotlib()
        except RuntimeError as exc:
            raise SweepError(f"--plot: {exc}") from None
    return Plan(script=ns.script, args=list(ns.args), nps=parse_np_list(ns.np),
                platforms=list(ns.platform) or [None], params=[parse_param(t) for t in ns.param],
                reps=MIN_REPS if ns.reps == "auto" else ns.reps, cfg=list(ns.cfg), hostfile=ns.hostfile, energy=ns.energy,
                timeout=ns.timeout, real_nps=parse_np_list(ns.real, "--real") if ns.real else [],
                time_regex=ns.time_regex, mpiexec=mpiexec, mpiexec_args=mpiexec_args,
                failure_seed=ns.failure_seed, restarts=_restarts(ns), restart_delay=ns.restart_delay)


def _restarts(ns: argparse.Namespace) -> int:
    if ns.restarts < 0:
        raise SweepError(f"--restarts {ns.restarts}: must be 0 or more")
    if ns.restart_delay is not None:
        from smpy.support.units import UnitError, parse_time

        try:
            ok = parse_time(ns.restart_delay) >= 0
        except UnitError:
            ok = False
        if not ok:
            raise SweepError(f"--restart-delay {ns.restart_delay!r}: expected a time of zero or more, like 60s or 1h")
    return ns.restarts


def _warn(plan: Plan, ns: argparse.Namespace, prog: str) -> None:
    cores = os.cpu_count() or 1
    over = [p for p in plan.real_nps if p > cores]
    if over and not plan.mpiexec_args:  # with placement arguments the ranks may be on other nodes
        print(f"{prog}: warning: --real {','.join(map(str, over))}: more ranks than this node's {cores} "
              "cores; the real runs time-share the cores (MPICH polls while it waits)", file=sys.stderr)
    if ns.jobs > 1 and plan.real_nps:
        print(f"{prog}: warning: --jobs {ns.jobs} with --real: real runs and emulations running at "
              "once slow each other down", file=sys.stderr)


def _progress(quiet: bool) -> Callable[[int, int, Run], None]:
    start = time.monotonic()

    def progress(done: int, total: int, run: Run) -> None:
        if quiet:
            return
        if not run.ok:
            what = f"{run.status} (exit code {run.exit_code})"
        elif run.point.platform == REAL:
            what = f"{run.time_s:.6g} s real"
        else:
            what = f"{run.time_s:.6g} s predicted, {run.wall_s:.2f} s wall"
        left = (time.monotonic() - start) / done * (total - done)
        eta = f", about {_duration(left)} left" if done < total else ""
        print(f"[{done}/{total}] {run.point.label()} np={run.point.np} rep {run.rep}: {what}{eta}",
              file=sys.stderr, flush=True)

    return progress


def _execute(jobs: list, ns: argparse.Namespace, prog: str) -> tuple[list[Run], bool]:
    """The runs (those that finished, after Ctrl-C) and whether the sweep was interrupted."""
    progress = _progress(ns.quiet)
    try:
        with open_executor(ns.executor, jobs, ns.jobs,
                           log=lambda m: ns.quiet or print(m, file=sys.stderr)) as (pool, runner):
            reused = ReusedRunner(runner) if ns.reuse else None
            try:
                return run_sweep(jobs, pool, progress, reused or runner), False
            finally:
                if reused is not None:
                    reused.close()
    except SweepInterrupted as exc:  # Ctrl-C: report and write what finished
        print(f"{prog}: interrupted: {len(exc.runs)} of {len(jobs)} runs finished; the summary is theirs",
              file=sys.stderr)
        return exc.runs, True


def _print_failures(summaries: list, runs: list[Run]) -> None:
    for s in summaries:
        for f in s.failures:
            print(f"# {s.point.label()} np={s.point.np}: {f}", file=sys.stderr)
    for f in real_failures(runs):
        print(f"# {f}", file=sys.stderr)
    failed: dict[Point, tuple[str, ...]] = {}
    for r in runs:
        if not r.outcome and r.command:
            failed.setdefault(r.point, r.command)
    for cmd in failed.values():  # one command per failing point, to run it again by hand
        print(f"#   run again: {shlex.join(cmd)}", file=sys.stderr)


def _write(ns: argparse.Namespace, plan: Plan, summaries: list, runs: list[Run], prog: str) -> bool:
    """-o and --plot; False when -o could not be written."""
    if ns.output:
        prefix = ns.output
        for suffix in (".runs.csv", ".csv", ".json"):  # -o sweep.csv means the prefix sweep
            if prefix.endswith(suffix):
                prefix = prefix[: -len(suffix)]
                break
        try:
            files = write_outputs(prefix, plan, summaries, runs, ns.scaling)
        except OSError as exc:  # the table above still holds the results
            print(f"{prog}: error: -o {ns.output}: {exc}", file=sys.stderr)
            return False
        print(f"[smpy] wrote {', '.join(str(f) for f in files)}", file=sys.stderr)
    if ns.plot:
        try:
            print(f"[smpy] plot: {plot(ns.plot, summaries, ns.scaling, f'smpy predict: {ns.script}')}",
                  file=sys.stderr)
        except RuntimeError as exc:
            print(f"{prog}: plot: {exc}", file=sys.stderr)
    return True


def _replay(plan: Plan, jobs: list, ns: argparse.Namespace) -> list[Run]:
    """--failure-replay (smpy.cli.reliability.replay_sweep), after checking that it applies."""
    from smpy.cli import reliability as rel
    from smpy.platform import PlatformError, default_platform, load_platform
    from smpy.support.config import parse_float

    why = ("needs --failure-seed" if plan.failure_seed is None else "not with --reps auto" if ns.reps == "auto"
           else "not with --real" if plan.real_nps else rel.replay_obstacle(plan.cfg, plan.restarts, plan.energy))
    if why:
        raise SweepError(f"--failure-replay: {why}")
    platforms: dict[str | None, Any] = {}
    for name in plan.platforms:
        try:
            platforms[name] = load_platform(name) if name else default_platform()
        except PlatformError as exc:
            raise SweepError(f"--failure-replay: {exc}") from None
        why = rel.platform_obstacle(platforms[name])
        if why:
            raise SweepError(f"--failure-replay: {why}")
    delay = 1e-3
    for item in plan.cfg:
        name, _, value = item.partition(":")
        if name.strip() == "smpy/failure-detection-delay":
            delay = parse_float(value)
    return rel.replay_sweep(jobs, plan.reps, plan.failure_seed or 0, delay, lambda pt: platforms[pt.platform],
                            ns.jobs)


def main(argv: list[str] | None = None, prog: str = "smpy predict") -> int:
    parser = build_parser(prog)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        plan = make_plan(ns)
        jobs = plan.jobs()
        points = plan.points()
        _check_inputs(plan)
        check_file(ns.plot, "--plot")
        if ns.output:  # PREFIX.csv, .runs.csv, .json (write_outputs creates the directory)
            check_dir(Path(ns.output).parent, "-o")
            if Path(ns.output).parent.is_dir():
                check_file(f"{ns.output}.json", "-o")
    except (SweepError, OutputError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    _warn(plan, ns, prog)
    if ns.energy:
        _warn_no_power(plan, prog)
    try:
        if ns.failure_replay:
            runs, interrupted = _replay(plan, jobs, ns), False
        else:
            runs, interrupted = _execute(jobs, ns, prog)
        while ns.reps == "auto" and not interrupted:  # one more round for the points not converged
            more = next_jobs(plan, points, runs, ns.ci_value, ns.max_reps)
            if not more:
                break
            new, interrupted = _execute(more, ns, prog)
            runs += new
    except SweepError as exc:  # the executor could not start, or --failure-replay cannot apply
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if ns.reps == "auto":
        print(converged_line(points, runs, ns.ci_value), file=sys.stderr)
    summaries = summarize(points, runs, ns.scaling, plan.real_of)
    print(table(summaries))
    if plan.failure_seed is not None or any(r.status == "failed" for r in runs):
        print(reliability_table(reliability(points, runs)))
    _print_failures(summaries, runs)
    if not _choose(ns, summaries, runs, prog):
        return 2
    if not _write(ns, plan, summaries, runs, prog):
        return 1
    if interrupted:
        return 130
    return 0 if all(r.outcome if plan.failure_seed is not None else r.ok for r in runs) else 1


def _choose(ns: argparse.Namespace, summaries: list, runs: list[Run], prog: str) -> bool:
    """--objective (best points, Pareto front) and --pareto; False on a usage error."""
    if not (ns.objective or ns.pareto):
        return True
    try:
        cands = choices(summaries, runs, parse_prices(ns.price))
        if ns.objective:
            print(report(cands, ns.objective, ns.deadline, ns.budget, parse_prices(ns.price)))
        if ns.pareto:
            print(f"[smpy] Pareto plot: {plot_pareto(ns.pareto, cands, f'smpy predict: {ns.script}')}",
                  file=sys.stderr)
    except SweepError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return False
    except RuntimeError as exc:
        print(f"{prog}: --pareto: {exc}", file=sys.stderr)
    return True


def _warn_no_power(plan: Plan, prog: str) -> None:
    """--energy on hosts without a power profile: their energy is 0 J; say which (as smpyrun)."""
    from smpy.cli.platform_cmd import host_names
    from smpy.platform import default_platform, load_platform

    for plat in plan.platforms:
        path = Path(plan.cwd) / plat if plat is not None else None
        platform = default_platform() if plat is None else load_platform(path if path.exists() else plat)
        missing = [h.name for h in platform.hosts if not h.properties.get("wattage_per_state")]
        if missing:
            print(f"{prog}: warning: --energy: platform {platform.name}: no power profile "
                  f"(wattage_per_state) for {len(missing)} of its {len(platform.hosts)} hosts "
                  f"({host_names(missing, limit=8)}); their energy counts as 0 J", file=sys.stderr)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _check_inputs(plan: Plan) -> None:
    """Fail before the first run, not once per run: the program must exist and each platform
    must load (its error names the file and the field)."""
    from pathlib import Path

    from smpy.platform import PlatformError, load_platform

    for script in plan.scripts():
        if not (Path(plan.cwd) / script).is_file():
            raise SweepError(f"{script}: no such program file")
    for plat in plan.platforms:
        if plat is None:
            continue
        path = Path(plan.cwd) / plat
        try:
            load_platform(path if path.exists() else plat)  # else a bundled platform's name
        except (PlatformError, OSError) as exc:
            raise SweepError(f"--platform {plat}: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
