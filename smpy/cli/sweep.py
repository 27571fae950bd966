r"""Prediction sweeps: one program emulated over rank counts, platforms and parameters.

A sweep is the cartesian product of platforms :math:`\times` parameter values
:math:`\times` rank counts; each *point* is emulated ``reps`` times, every run in a fresh
``smpyrun`` process (an emulation measures its computation, so each run starts from the same
state: no warm caches, heaps or imports from a previous point). The runs of a sweep are
ordered repetition-major (every point once, then every point again, ...) so that a slow
phase of a shared machine spreads over the points instead of landing on one.

For each point the summary gives the median predicted time :math:`\tilde T` over its
successful runs, their range, and, within each (platform, parameters) group, against the
group's smallest rank count :math:`p_0`:

.. math::

    S(p) = \frac{\tilde T(p_0)}{\tilde T(p)}, \qquad
    E(p) = \begin{cases} S(p)\, p_0 / p & \text{strong scaling (fixed problem)}\\
                         S(p) & \text{weak scaling (problem grows with } p)\end{cases}

**Against real runs** (``real_nps``): the same program also runs under ``mpiexec -n p`` with
real mpi4py for the rank counts that fit this node, interleaved with its emulations (same
repetition, same point), and each prediction is compared with the median real time:
:math:`e = (\tilde T_{pred} - \tilde T_{real}) / \tilde T_{real}`, and over the points
MERPSYS's :math:`d_{avg}` and :math:`d_{max}` (mean and maximum of :math:`|e|`). Both times are
then the program's own (``time_regex``: the elapsed time it prints, from ``MPI.Wtime``, which
is simulated time under smpy): process wall times would compare ``mpiexec``'s start-up with
smpyrun's, not the program.

Program arguments may use ``{np}`` and ``{NAME}`` for each ``--param NAME=...`` (``{{`` and
``}}`` for literal braces), and arithmetic of them (``{N * np}``, ``{round(128 * np ** (1/3))}``),
so a weak-scaling sweep can grow the problem with the ranks; so may the program's path, to
compare variants of a program.

The runs are independent jobs: :func:`run_sweep` takes any :class:`concurrent.futures.Executor`
(a thread pool here; ``dask.distributed.Client.get_executor()`` would spread a sweep over a
cluster, since :func:`run_job` and its argument are plain picklable data).
"""

from __future__ import annotations

import ast
import csv
import itertools
import json
import math
import operator
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]+)\}|\{|\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


#: ``Point.platform`` of a real run (mpiexec on this node: no platform)
REAL = "(real)"
_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class SweepError(ValueError):
    """A sweep that cannot be planned (bad rank list, parameter or placeholder)."""


def parse_np_list(text: str, option: str = "-np") -> list[int]:
    """``"16,32,64"`` -> [16, 32, 64]; ``"4:64"`` doubles from 4 up to 64 (4, 8, 16, 32, 64)."""
    out: list[int] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            raise SweepError(f"{option} {text!r}: empty entry")
        try:
            if ":" in item:
                lo_s, hi_s = item.split(":", 1)
                lo, hi = int(lo_s), int(hi_s)
                if lo < 1 or hi < lo:
                    raise SweepError(f"{option} {text!r}: range {item!r} must be LOW:HIGH with 1 <= LOW <= HIGH")
                p = lo
                while p <= hi:
                    out.append(p)
                    p *= 2
            else:
                out.append(int(item))
        except ValueError as exc:
            if isinstance(exc, SweepError):
                raise
            raise SweepError(f"{option} {text!r}: {item!r} is not a rank count") from None
    if any(p < 1 for p in out):
        raise SweepError(f"{option} {text!r}: rank counts must be at least 1")
    return list(dict.fromkeys(out))  # keep the order, drop repeats


def parse_param(text: str) -> tuple[str, list[str]]:
    """``"N=1000,2000"`` -> ("N", ["1000", "2000"])."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise SweepError(f"--param {text!r}: expected NAME=VALUE[,VALUE...] with NAME an identifier")
    if name == "np":
        raise SweepError("--param np=...: the rank counts are given with -np")
    vals = [v.strip() for v in values.split(",")]
    if not vals or any(not v for v in vals):
        raise SweepError(f"--param {text!r}: empty value")
    return name, list(dict.fromkeys(vals))


_FUNCS: dict[str, Callable[..., Any]] = {"int": int, "round": round, "min": min, "max": max, "abs": abs,
                                         "floor": math.floor, "ceil": math.ceil}
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def _number(name: str, text: str, where: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise SweepError(f"{where}: {name} = {text!r} is not a number") from None


def _evaluate(expr: str, values: dict[str, str], where: str) -> str:
    """``{expr}``: a name gives its value as written; an arithmetic expression of the names
    (+ - * / // % **, parentheses, int round min max abs floor ceil) gives its result, a whole
    number written without a decimal point."""
    text = expr.strip()
    if _NAME.match(text):
        if text not in values:
            known = ", ".join("{" + k + "}" for k in values)
            raise SweepError(f"{where} uses {{{text}}}, which is not defined (known: {known})")
        return values[text]
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise SweepError(f"{where}: {{{expr}}} is neither a name nor an arithmetic expression "
                         "(write {{ and }} for literal braces)") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise SweepError(f"{where}: {{{expr}}} uses {node.id}, which is not defined")
            return _number(node.id, values[node.id], where)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(b) > 64:
                raise SweepError(f"{where}: {{{expr}}}: exponent {b} is too large")
            return _BINOPS[type(node.op)](a, b)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise SweepError(f"{where}: {{{expr}}}: only numbers, names, + - * / // % **, parentheses and "
                         f"{', '.join(_FUNCS)} are allowed")

    try:
        v = ev(tree)
    except SweepError:
        raise
    except ZeroDivisionError:
        raise SweepError(f"{where}: {{{expr}}} divides by zero") from None
    except (ArithmeticError, TypeError, ValueError) as exc:  # overflow, max(), int(inf), ...
        raise SweepError(f"{where}: {{{expr}}}: {exc}") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise SweepError(f"{where}: {{{expr}}} is {v}, not a finite number")
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        v = int(v)
    return str(v)


def _names_in(template: str) -> set[str]:
    """The names a template's placeholders use."""
    out: set[str] = set()
    for m in _PLACEHOLDER.finditer(template):
        expr = m.group(1)
        if expr is None:
            continue
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError:
            continue
        out |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS}
    return out


def substitute(template: str, values: dict[str, str]) -> str:
    """Replace each ``{name}`` by ``values[name]`` and each ``{expression}`` of the names by its
    value (see :func:`_evaluate`); ``{{``/``}}`` are literal braces."""
    where = f"argument {template!r}"

    def repl(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        expr = m.group(1)
        if expr is None:
            raise SweepError(f"{where}: unmatched {tok!r} (write {tok * 2} for a literal brace)")
        return _evaluate(expr, values, where)

    return _PLACEHOLDER.sub(repl, template)


@dataclass(frozen=True)
class Point:
    """One configuration of the sweep."""

    platform: str | None  # platform file; None: smpyrun's default platform
    np: int
    params: tuple[tuple[str, str], ...] = ()

    @property
    def group(self) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        return self.platform, self.params

    @property
    def is_real(self) -> bool:
        """A point of real runs (mpiexec on this node), not an emulation."""
        return self.platform == REAL

    def label(self) -> str:
        parts = [self.platform if self.is_real else
                 Path(self.platform).stem if self.platform else "default"]
        parts += [f"{k}={v}" for k, v in self.params]
        return " ".join(parts)


@dataclass(frozen=True)
class Job:
    """Everything one run needs (plain data: it may run in another process or machine)."""

    point: Point
    rep: int
    command: tuple[str, ...]  # smpyrun argv without --json, or the mpiexec command of a real run
    cwd: str
    timeout: float | None
    #: regular expression whose first group is the program's elapsed time in its output
    time_regex: str | None = None


@dataclass
class Run:
    """The outcome of one job."""

    point: Point
    rep: int
    status: str  # smpyrun's status (ok, failed: a component failed, error, abort, deadlock, ...), or crashed / timeout
    exit_code: int
    makespan_s: float = math.nan
    energy_J: float = math.nan  # all hosts of the platform (SimGrid's total)
    used_J: float = math.nan  # the hosts the ranks ran on
    wall_s: float = math.nan
    peak_rss_bytes: int = 0
    mpi_calls: int = 0
    message: str = ""
    #: the time the program printed (time_regex), nan without one
    program_s: float = math.nan
    #: the command that ran (to run it again by hand)
    command: tuple[str, ...] = ()
    #: the hosts the ranks ran on (for node-hour costs)
    hosts_used: int = 0
    #: attempts of a run with --restarts (1 + the failures it was restarted after)
    attempts: int = 1
    #: the emulation's CPU time (user + system of its smpyrun process)
    cpu_s: float = math.nan

    @property
    def time_s(self) -> float:
        """The run's time: what the program printed when a time_regex is given, else the
        simulated makespan (real runs always have a time_regex)."""
        return self.makespan_s if math.isnan(self.program_s) else self.program_s

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.exit_code == 0

    @property
    def outcome(self) -> bool:
        """A run that ended as the simulated machine made it end: ok, or ``failed`` (a host or
        link failed and the job was aborted, docs/failures.md), not an error."""
        return self.ok or (self.status == "failed" and not self.point.is_real)


@dataclass
class Summary:
    """The runs of one point, reduced."""

    point: Point
    runs: int
    ok: int
    median_s: float = math.nan
    min_s: float = math.nan
    max_s: float = math.nan
    speedup: float = math.nan
    efficiency: float = math.nan
    energy_J: float = math.nan
    used_J: float = math.nan
    wall_s: float = math.nan
    peak_rss_bytes: int = 0
    cpu_s: float = math.nan
    failures: list[str] = field(default_factory=list)
    #: median time of the real runs of this rank count (nan: none) and their number
    real_s: float = math.nan
    real_ok: int = 0

    @property
    def error(self) -> float:
        """(predicted - real) / real, nan without real runs."""
        return (self.median_s - self.real_s) / self.real_s if self.real_s > 0 else math.nan

    @property
    def spread(self) -> float:
        """(max - min) / median of the predicted times."""
        return (self.max_s - self.min_s) / self.median_s if self.median_s > 0 else math.nan


@dataclass
class Plan:
    """A sweep: the program, its argument templates and the points."""

    script: str
    args: list[str]
    nps: list[int]
    platforms: list[str | None]
    params: list[tuple[str, list[str]]] = field(default_factory=list)
    reps: int = 1
    cfg: list[str] = field(default_factory=list)
    hostfile: str | None = None
    energy: bool = False
    timeout: float | None = None
    python: str = sys.executable
    cwd: str = field(default_factory=os.getcwd)
    #: rank counts also run for real (mpiexec on this node), and how to read the times
    real_nps: list[int] = field(default_factory=list)
    time_regex: str | None = None
    mpiexec: str = "mpiexec"
    #: more mpiexec arguments for the real runs (placement on the nodes one has, e.g. -hosts a,b)
    mpiexec_args: list[str] = field(default_factory=list)
    #: give repetition r the failure draws of --cfg=smpy/failure-seed:FIRST+r (reliability)
    failure_seed: int | None = None
    #: smpyrun --restarts K --restart-delay T for every emulation (a run's time is then the
    #: time to solution over its attempts)
    restarts: int = 0
    restart_delay: str | None = None

    def points(self) -> list[Point]:
        names = [n for n, _ in self.params]
        if len(set(names)) != len(names):
            raise SweepError("--param: each name may be given once")
        combos = list(itertools.product(*[vals for _, vals in self.params]))
        return [Point(plat, p, tuple(zip(names, combo)))
                for plat in self.platforms for combo in combos for p in self.nps]

    def command(self, point: Point, rep: int = 0) -> tuple[str, ...]:
        """The emulation's smpyrun command; ``{rep}`` in the templates is the repetition (so
        that concurrent runs of a point may use files of their own)."""
        values = {"np": str(point.np), "rep": str(rep), **dict(point.params)}
        cmd = [self.python, "-m", "smpy.cli.smpyrun", "-q", "-np", str(point.np)]
        if self.restarts:
            cmd += ["--restarts", str(self.restarts)]
            if self.restart_delay is not None:
                cmd += ["--restart-delay", self.restart_delay]
        if point.platform:
            cmd += ["--platform", point.platform]
        if self.hostfile:
            cmd += ["--hostfile", substitute(self.hostfile, values)]
        if self.energy:
            cmd.append("--energy")
        for item in self.cfg:
            cmd.append(f"--cfg={substitute(item, values)}")
        cmd.append(substitute(self.script, values))
        cmd += [substitute(a, values) for a in self.args]
        return tuple(cmd)

    def scripts(self) -> list[str]:
        """The program files of the sweep (the script may use {NAME} to compare variants)."""
        return list(dict.fromkeys(
            substitute(self.script, {"np": str(pt.np), **dict(pt.params)}) for pt in self.points()))

    def real_command(self, point: Point, rep: int = 0) -> tuple[str, ...]:
        values = {"np": str(point.np), "rep": str(rep), **dict(point.params)}
        return (self.mpiexec, "-n", str(point.np), *(substitute(a, values) for a in self.mpiexec_args),
                self.python, substitute(self.script, values),
                *(substitute(a, values) for a in self.args))

    def real_of(self, point: Point) -> Point:
        """The real-run point ``point``'s prediction is compared with: same rank count and
        same values of the parameters the program sees (in its path or arguments). Platforms,
        ``--cfg`` and ``--hostfile`` change only the emulation, so their variants share the
        real runs."""
        seen = set().union(*(_names_in(t) for t in (self.script, *self.args)))
        return Point(REAL, point.np, tuple((k, v) for k, v in point.params if k in seen))

    def jobs(self) -> list[Job]:
        """All runs, repetition-major; within a repetition, a point's real run (if any) just
        before its first emulation, so that the two see the machine in the same state."""
        if self.reps < 1:
            raise SweepError("--reps must be at least 1")
        if self.real_nps:
            if not self.time_regex:
                raise SweepError("--real needs --time-regex: the program must print its own elapsed "
                                 "time (MPI.Wtime), since process wall times would include start-up "
                                 "costs that differ between mpiexec and smpyrun")
            missing = sorted(set(self.real_nps) - set(self.nps))
            if missing:
                raise SweepError(f"--real {','.join(map(str, missing))}: not among the -np rank counts")
        if self.time_regex:
            try:
                rx = re.compile(self.time_regex)
            except re.error as exc:
                raise SweepError(f"--time-regex {self.time_regex!r}: {exc}") from None
            if rx.groups < 1:
                raise SweepError(f"--time-regex {self.time_regex!r}: needs a group around the seconds")
        points = self.points()
        commands = {pt: self.command(pt) for pt in points}  # placeholder errors before any run
        real_of = {pt: self.real_of(pt) for pt in points}
        reals = {rp: self.real_command(rp) for pt, rp in real_of.items() if pt.np in self.real_nps}
        jobs: list[Job] = []
        for r in range(self.reps):
            done: set[Point] = set()
            for pt in points:
                rp = real_of[pt]
                if rp in reals and rp not in done:
                    done.add(rp)
                    jobs.append(Job(rp, r, self.real_command(rp, r) if r else reals[rp], self.cwd,
                                    self.timeout, self.time_regex))
                cmd = self.command(pt, r) if r else commands[pt]
                if self.failure_seed is not None:
                    q = cmd.index("-q") + 1
                    cmd = (*cmd[:q], f"--cfg=smpy/failure-seed:{self.failure_seed + r}", *cmd[q:])
                jobs.append(Job(pt, r, cmd, self.cwd, self.timeout, self.time_regex))
        return jobs


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _program_time(job: Job, stdout: str) -> tuple[float, str]:
    """The time the program printed (nan and a message when it printed none)."""
    if not job.time_regex:
        return math.nan, ""
    m = re.search(job.time_regex, stdout, re.M)
    if m is None:
        return math.nan, f"no match for --time-regex {job.time_regex!r} in the program's output"
    try:
        return float(m.group(1)), ""
    except ValueError:
        return math.nan, f"--time-regex matched {m.group(1)!r}, not a number"


def run_real(job: Job) -> Run:
    """Run the program for real (``mpiexec``, real mpi4py, one BLAS thread per rank)."""
    env = dict(os.environ, **_BLAS)
    try:
        proc = subprocess.run(list(job.command), cwd=job.cwd, capture_output=True, text=True,
                              timeout=job.timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        return Run(job.point, job.rep, "timeout", -1, message=f"no result after {job.timeout:g} s (--timeout)")
    t, msg = _program_time(job, proc.stdout)
    if proc.returncode != 0:
        return Run(job.point, job.rep, "failed", proc.returncode,
                   message=_tail(proc.stderr) or f"mpiexec exited with code {proc.returncode}")
    if msg:
        return Run(job.point, job.rep, "no-time", 0, message=msg)
    return Run(job.point, job.rep, "ok", 0, program_s=t)


def run_job(job: Job) -> Run:
    """Run one emulation (a fresh smpyrun process) and read its JSON summary; or, for a real
    point, the program under mpiexec."""
    run = run_real(job) if job.point.is_real else _emulate(job)
    run.command = job.command
    return run


def _emulate(job: Job) -> Run:
    with tempfile.TemporaryDirectory(prefix="smpy-sweep-") as tmp:
        out = Path(tmp) / "run.json"
        cmd = with_json(job.command, out)
        try:
            proc = subprocess.run(cmd, cwd=job.cwd, capture_output=True, text=True, timeout=job.timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Run(job.point, job.rep, "timeout", -1,
                       message=f"no result after {job.timeout:g} s (--timeout)")
        data = json.loads(out.read_text()) if out.exists() else None
    return run_from_result(job, proc.returncode, proc.stdout, proc.stderr, data)


def with_json(command: Sequence[str], out: Path) -> list[str]:
    """The smpyrun command of a job, writing its JSON summary to ``out``."""
    cmd = list(command)
    cmd[cmd.index("-q") + 1:cmd.index("-q") + 1] = ["--json", str(out)]
    return cmd


def run_from_result(job: Job, returncode: int, stdout: str, stderr: str, data: dict[str, Any] | None) -> Run:
    """The :class:`Run` of an emulation from its exit code, output and JSON summary (None: it
    wrote none, status ``crashed``). Status ``failed``: a component failed (docs/failures.md)."""
    if data is None:
        return Run(job.point, job.rep, "crashed", returncode,
                   message=_tail(stderr) or f"smpyrun exited with code {returncode}")
    energy = (data.get("energy") or {}).get("total_J", math.nan)
    used = (data.get("energy") or {}).get("used_hosts_J", math.nan)
    msg = data.get("message", "")
    status = data["status"]
    if status != "ok" or returncode != 0:
        msg = msg or _tail(stderr)
    t, no_time = _program_time(job, stdout)
    if status == "ok" and returncode == 0 and no_time:
        status, msg = "no-time", no_time
    return Run(job.point, job.rep, status, returncode, data["makespan_s"], energy, used,
               data["wall_s"], int(data.get("peak_rss_bytes", 0)), data["mpi_calls"], msg, t,
               hosts_used=int(data.get("hosts_used", 0)), attempts=len(data.get("attempts") or [None]),
               cpu_s=float(data.get("cpu_s", math.nan)))


def run_sweep(jobs: Sequence[Job], executor: Executor | None = None,
              progress: Callable[[int, int, Run], None] | None = None,
              runner: Callable[[Job], Run] = run_job) -> list[Run]:
    """Run ``jobs`` (one after the other, or on ``executor``); the runs come back in job order.
    On KeyboardInterrupt, the jobs not started are dropped and :class:`SweepInterrupted`
    carries the runs that finished."""
    runs: list[Run | None] = [None] * len(jobs)
    futures: dict[Any, int] = {}
    try:
        if executor is None:
            for i, job in enumerate(jobs):
                runs[i] = runner(job)
                if progress:
                    progress(i + 1, len(jobs), runs[i])  # type: ignore[arg-type]
        else:
            futures = {executor.submit(runner, job): i for i, job in enumerate(jobs)}
            for done, fut in enumerate(as_completed(futures), 1):
                i = futures[fut]
                runs[i] = fut.result()
                if progress:
                    progress(done, len(jobs), runs[i])  # type: ignore[arg-type]
    except KeyboardInterrupt:
        for fut in futures:
            fut.cancel()
        raise SweepInterrupted([r for r in runs if r is not None]) from None
    return [r for r in runs if r is not None]


class SweepInterrupted(Exception):
    """The sweep was interrupted; ``runs``: those that finished before, in job order."""

    def __init__(self, runs: list[Run]) -> None:
        super().__init__(f"interrupted after {len(runs)} runs")
        self.runs = runs


def summarize(points: Sequence[Point], runs: Sequence[Run], scaling: str = "strong",
              real_of: Callable[[Point], Point] | None = None) -> list[Summary]:
    """One summary per point (in ``points`` order), with speedup and efficiency in each group;
    ``real_of``: the real point of a point (:meth:`Plan.real_of`; default: same parameters)."""
    real_of = real_of or (lambda pt: Point(REAL, pt.np, pt.params))
    if scaling not in ("strong", "weak"):
        raise SweepError(f"scaling must be 'strong' or 'weak', got {scaling!r}")
    by_point: dict[Point, list[Run]] = {pt: [] for pt in points}
    real: dict[Point, list[float]] = {}
    for r in runs:
        if r.point.is_real:
            if r.ok:
                real.setdefault(r.point, []).append(r.time_s)
            continue
        by_point[r.point].append(r)
    out: list[Summary] = []
    for pt in points:
        rs = sorted(by_point[pt], key=lambda r: r.rep)
        good = [r for r in rs if r.ok]
        s = Summary(pt, len(rs), len(good),
                    failures=[f"rep {r.rep}: {r.status}: {r.message}".strip() for r in rs
                              if not r.ok and not r.outcome])
        rp = real_of(pt)
        if rp in real:
            s.real_s, s.real_ok = statistics.median(real[rp]), len(real[rp])
        if good:
            times = [r.time_s for r in good]
            s.median_s, s.min_s, s.max_s = statistics.median(times), min(times), max(times)
            s.wall_s = statistics.median(r.wall_s for r in good)
            s.peak_rss_bytes = max(r.peak_rss_bytes for r in good)
            s.cpu_s = statistics.median(r.cpu_s for r in good)
            energies = [r.energy_J for r in good if not math.isnan(r.energy_J)]
            if energies:
                s.energy_J = statistics.median(energies)
                s.used_J = statistics.median(r.used_J for r in good if not math.isnan(r.used_J))
        out.append(s)
    base: dict[Any, Summary] = {}
    for s in sorted(out, key=lambda s: s.point.np):
        if s.ok and s.point.group not in base:
            base[s.point.group] = s
    for s in out:
        b = base.get(s.point.group)
        if b is None or not s.ok or s.median_s <= 0:
            continue
        s.speedup = b.median_s / s.median_s
        s.efficiency = s.speedup * b.point.np / s.point.np if scaling == "strong" else s.speedup
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    r"""Wilson's score interval of a success rate :math:`k/n` (``z`` = 1.96: 95 %):
    :math:`\frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}`."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (c - h) / d), min(1.0, (c + h) / d)


def real_failures(runs: Sequence[Run]) -> list[str]:
    """The failed real runs, one line each."""
    return [f"{r.point.label()} np={r.point.np} rep {r.rep}: {r.status}: {r.message}".strip()
            for r in runs if r.point.is_real and not r.ok]


def accuracy(summaries: Sequence[Summary]) -> tuple[float, float, int] | None:
    """MERPSYS's d_avg and d_max over the points compared with real runs, and their number."""
    errs = [abs(s.error) for s in summaries if not math.isnan(s.error)]
    if not errs:
        return None
    return statistics.fmean(errs), max(errs), len(errs)


# -- output ------------------------------------------------------------------------------------

def _fmt(x: float, spec: str) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else format(x, spec)


def table(summaries: Sequence[Summary]) -> str:
    """The summary as an aligned text table."""
    energy = any(not math.isnan(s.energy_J) for s in summaries)
    real = any(s.real_ok for s in summaries)
    head = ["point", "np", "ok", "predicted s", "min s", "max s", "spread", "speedup", "effic."]
    head += ["real s", "error"] if real else []
    head += ["energy J", "used J"] if energy else []
    head += ["emul s", "CPU s", "RSS MiB"]
    rows = []
    for s in summaries:
        row = [s.point.label(), str(s.point.np), f"{s.ok}/{s.runs}", _fmt(s.median_s, ".6g"),
               _fmt(s.min_s, ".6g"), _fmt(s.max_s, ".6g"),
               "-" if not s.ok else f"{100 * s.spread:.1f}%",
               _fmt(s.speedup, ".3f"), _fmt(s.efficiency, ".3f")]
        row += [_fmt(s.real_s, ".6g"), "-" if math.isnan(s.error) else f"{100 * s.error:+.1f}%"] if real else []
        row += [_fmt(s.energy_J, ".6g"), _fmt(s.used_J, ".6g")] if energy else []
        row += [_fmt(s.wall_s, ".2f"), _fmt(s.cpu_s, ".2f"),
                f"{s.peak_rss_bytes / 2**20:.0f}" if s.peak_rss_bytes else "-"]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    acc = accuracy(summaries)
    if acc is not None:
        lines.append(f"against real runs: d_avg {100 * acc[0]:.2f} %  d_max {100 * acc[1]:.2f} %  "
                     f"({acc[2]} point{'s' if acc[2] != 1 else ''}; error = (predicted - real) / real, medians)")
    return "\n".join(lines)


def _point_fields(pt: Point) -> dict[str, Any]:
    return {"platform": pt.platform or "", "np": pt.np, **{f"param_{k}": v for k, v in pt.params}}


def write_outputs(prefix: str | Path, plan: Plan, summaries: Sequence[Summary], runs: Sequence[Run],
                  scaling: str) -> list[Path]:
    """``PREFIX.csv`` (a row per point), ``PREFIX.runs.csv`` (a row per run), ``PREFIX.json``."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    files = [prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".runs.csv"),
             prefix.with_name(prefix.name + ".json")]
    cols = ["runs", "ok", "median_s", "min_s", "max_s", "speedup", "efficiency", "energy_J", "used_J", "wall_s",
            "cpu_s", "peak_rss_bytes"]
    if any(s.real_ok for s in summaries):
        cols += ["real_s", "real_ok", "error"]
    rows = [{**_point_fields(s.point), **{c: getattr(s, c) for c in cols}} for s in summaries]
    _write_csv(files[0], rows)
    run_cols = ["rep", "status", "exit_code", "makespan_s", "program_s", "energy_J", "used_J", "wall_s", "cpu_s",
                "peak_rss_bytes", "mpi_calls"]
    _write_csv(files[1], [{**_point_fields(r.point), **{c: getattr(r, c) for c in run_cols}} for r in runs])
    doc = {
        "script": plan.script, "args": plan.args, "reps": plan.reps, "cfg": plan.cfg,
        "hostfile": plan.hostfile, "energy": plan.energy, "scaling": scaling,
        "real_nps": plan.real_nps, "time_regex": plan.time_regex,
        "points": [{**_point_fields(s.point), **{c: _json_num(getattr(s, c)) for c in cols},
                    "failures": s.failures} for s in summaries],
        "runs": [{**_point_fields(r.point), **{k: _json_num(v) for k, v in asdict(r).items()
                                               if k not in ("point", "command")},
                  "command": list(r.command)} for r in runs],
    }
    files[2].write_text(json.dumps(doc, indent=2) + "\n")
    return files


def _json_num(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})


def plot(path: str | Path, summaries: Sequence[Summary], scaling: str, title: str) -> Path:
    """Predicted time (range over the runs as error bars), efficiency and (when measured)
    energy against the rank count, one line per platform and parameter set."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("the plot needs matplotlib (pip install matplotlib)") from exc
    energy = any(not math.isnan(s.energy_J) for s in summaries)
    fig, axes = plt.subplots(1, 3 if energy else 2, figsize=(13 if energy else 9, 3.8))
    groups: dict[Any, list[Summary]] = {}
    for s in summaries:
        if s.ok:
            groups.setdefault(s.point.group, []).append(s)
    for ss in groups.values():
        ss.sort(key=lambda s: s.point.np)
        x = [s.point.np for s in ss]
        label = ss[0].point.label()
        y = [s.median_s for s in ss]
        err = [[s.median_s - s.min_s for s in ss], [s.max_s - s.median_s for s in ss]]
        line = axes[0].errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
        reals = [(s.point.np, s.real_s) for s in ss if s.real_ok]
        if reals:
            axes[0].plot(*zip(*reals), linestyle="none", marker="x", markersize=9,
                         color=line[0].get_color(), label=f"{label}: real (mpiexec)")
        axes[1].plot(x, [s.efficiency for s in ss], marker="o", label=label)
        if energy and any(s.energy_J > 0 for s in ss):  # 0 J: no power model on that platform
            axes[2].plot(x, [s.energy_J for s in ss], marker="o", label=label)
    axes[0].set_ylabel("predicted time (s)")
    axes[1].set_ylabel(f"{scaling}-scaling efficiency")
    axes[1].set_ylim(bottom=0)
    if energy:
        axes[2].set_ylabel("energy (J)")
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    nps = sorted({s.point.np for s in summaries})
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(nps)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("MPI ranks")
        ax.grid(True, which="both", alpha=0.3)
    times = [s.median_s for s in summaries if s.ok] + [s.real_s for s in summaries if s.real_ok]
    if times and max(times) > 10 * min(times):  # log scale only when the times span a decade
        axes[0].set_yscale("log")
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
