r"""Reliability over many runs (``smpy predict --failure-seed N``), and emulator processes
reused between runs (``--reuse-process``).

With failures configured (a platform's failure models, ``--cfg smpy/fail:...``), each
repetition ``r`` of a point draws its failures with ``smpy/failure-seed`` ``N + r``, and a run
that a failure ended (status ``failed``) is an outcome, not an error. Per point, of ``n`` runs
of which ``k`` succeeded:

* the success rate :math:`\hat p = k/n` and its 95 % Wilson score interval;
* the expected time to solution when a failed attempt is restarted from scratch until one
  succeeds: the attempts are independent and their number :math:`N` is geometric with mean
  :math:`1/p`, so by Wald's identity :math:`E[T] = E[N]\,E[X] = \bar X / \hat p`, :math:`X`
  the time of one attempt (a failed one counts up to the job's abort) and :math:`\bar X` its
  mean over the runs; the same for the energy (``--energy``);
* the spread of the successful runs' times (min, max) as for any point.

MERPSYS's time / energy / reliability triple. :math:`E[T]` is infinite when no run succeeded.

**Reused processes.** A fresh ``smpyrun`` process per run costs its start-up (Python, numpy,
smpy: ~0.4 s of CPU), more than a short emulation. With ``--reuse-process`` each job slot keeps
one worker process (``python -m smpy.cli.reliability``) that runs its emulations one after the
other in-process (``smpyrun``'s ``main``), each with its stdout and stderr in files of its own.
It is safe for programs that keep no state outside what smpy isolates per rank (modules,
``__main__``, random generators): the test suite runs hundreds of emulations in one process.
A worker that exceeds ``--timeout`` is killed and replaced.

**Replayed failures** (``--failure-replay``): one failure-free emulation per point, each
repetition's outcome from its failure draw (:func:`replay_outcomes`), for host failures with
the default abort. **Checkpoint/restart**: :func:`checkpointed_time` replays a checkpointed
run against a failure history; :func:`young_daly` and :func:`daly_time` are the classical
optimum interval and expected time.
"""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smpy.cli.sweep import Job, Point, Run, run_from_result, wilson, with_json


@dataclass
class Reliability:
    point: Point
    runs: int
    successes: int
    rate: float
    low: float
    high: float
    expected_time_s: float
    expected_energy_J: float


def reliability(points: Sequence[Point], runs: Sequence[Run]) -> list[Reliability]:
    """Per point: success rate, its 95 % interval, expected time and energy to solution."""
    out = []
    for pt in points:
        rs = [r for r in runs if r.point == pt and r.outcome]
        n, k = len(rs), sum(r.ok for r in rs)
        lo, hi = wilson(k, n)
        rate = k / n if n else math.nan
        mean_t = sum(r.makespan_s for r in rs) / n if n else math.nan
        es = [r.energy_J for r in rs if not math.isnan(r.energy_J)]
        mean_e = sum(es) / len(es) if es and len(es) == n else math.nan
        out.append(Reliability(pt, n, k, rate, lo, hi, mean_t / rate if k else math.inf,
                               mean_e / rate if k else (math.inf if es else math.nan)))
    return out


def table(rows: Sequence[Reliability]) -> str:
    head = ["point", "np", "success", "95% interval", "E[time to solution] s", "E[energy] J"]
    body = [[r.point.label(), str(r.point.np), f"{r.successes}/{r.runs} ({100 * r.rate:.1f}%)" if r.runs else "-",
             f"[{100 * r.low:.1f}%, {100 * r.high:.1f}%]" if r.runs else "-",
             f"{r.expected_time_s:.6g}", "-" if math.isnan(r.expected_energy_J) else f"{r.expected_energy_J:.6g}"]
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in [head, *body]]
    return "reliability (failed runs restarted from scratch until one succeeds):\n" + "\n".join(lines)


# -- failure draws replayed on one failure-free run ------------------------------------------------
REPLAY_FLAG = "--cfg=smpy/failure-models:no"


def replay_obstacle(cfg: Sequence[str], restarts: int, energy: bool) -> str | None:
    """Why ``--failure-replay`` cannot derive this sweep's runs (None: it can)."""
    names = {item.split(":", 1)[0].split("=", 1)[0].strip() for item in cfg}
    if restarts:
        return "--restarts (an attempt's outcome changes the next one)"
    if energy:
        return "--energy (a failed run's energy is not the failure-free run's)"
    for name in ("smpy/auto-cleanup", "smpy/fail", "smpy/failure-models"):
        if name in names:
            return f"--cfg {name} (only the default abort on a host failure is replayed)"
    return None


def platform_obstacle(plat: Any) -> str | None:
    """Failure models a replay cannot account for: links (a link failure matters only to the
    flows crossing it) and file-system servers (their failure would stall the I/O)."""
    from smpy.platform.failures import PROPERTY

    if any(lnk.properties.get(PROPERTY) for lnk in plat.links):
        return f"platform {plat.name!r} has link failure models"
    servers = {name for fs in plat.filesystems for name in fs.servers}
    if any(h.properties.get(PROPERTY) and h.name in servers for h in plat.hosts):
        return f"platform {plat.name!r} has file-system servers with failure models"
    return None


def replay_outcomes(plat: Any, ranks: Sequence[dict[str, Any]], seeds: Sequence[int],
                    delay: float) -> list[tuple[float, str, int]]:
    r"""Per failure seed, (fail time, host, rank) of the run's first fatal failure, or
    (inf, "", -1) when it completes.

    A host failure changes nothing before it happens, and with the default abort (Hydra's
    auto-cleanup) the first one that kills a rank ends the job ``delay`` later. So, given a
    failure-free run in which rank :math:`k` on host :math:`h_k` ends at :math:`e_k`, the run
    with seed :math:`s` fails at :math:`f = \min\{t_s(h_k) : t_s(h_k) < e_k\}` (and is
    aborted at :math:`f + 	ext{delay}`), :math:`t_s(h)` the first failure of :math:`h`'s
    model under seed :math:`s` (the same draw the emulation makes); it completes as the
    failure-free run when no such failure exists. Exact for a deterministic emulation
    (``smpi/simulate-computation:no``); with measured computation every repetition shares the
    one run's timing."""
    from smpy.platform.failures import PROPERTY, component_rng, first_failure, parse_profile

    profiles = {h.name: parse_profile(h.properties[PROPERTY]) for h in plat.hosts if h.properties.get(PROPERTY)}
    ends: dict[str, float] = {}  # host -> the end of its last rank
    first: dict[str, int] = {}  # host -> its lowest rank
    for r in ranks:
        if r["host"] in profiles:
            ends[r["host"]] = max(ends.get(r["host"], -math.inf), float(r["end_time_s"]))
            first[r["host"]] = min(first.get(r["host"], int(r["rank"])), int(r["rank"]))
    out = []
    for seed in seeds:
        best: tuple[float, str, int] = (math.inf, "", -1)
        for host, end in ends.items():
            t = first_failure(profiles[host], component_rng(seed, "host", host))
            if t < end and t < best[0]:
                best = (t, host, first[host])
        out.append(best)
    return out


def replayed_runs(job: Job, reps: int, seed0: int, data: dict[str, Any], plat: Any, delay: float) -> list[Run]:
    """The runs of repetitions 0..reps-1 of ``job``'s point, from its failure-free run's JSON."""
    runs = []
    outcomes = replay_outcomes(plat, data["ranks"], [seed0 + r for r in range(reps)], delay)
    for rep, (t, host, rank) in enumerate(outcomes):
        if math.isinf(t):
            run = Run(job.point, rep, "ok", 0, data["makespan_s"], wall_s=0.0, mpi_calls=data["mpi_calls"],
                      hosts_used=int(data.get("hosts_used", 0)))
        else:
            run = Run(job.point, rep, "failed", 137, t + delay, wall_s=0.0, hosts_used=int(data.get("hosts_used", 0)),
                      message=f"host {host} failed at simulated time {t:.9g} s (rank {rank}); replayed on the "
                              "failure-free run")
        run.command = job.command
        runs.append(run)
    return runs


def run_with_json(job: Job) -> tuple[Run, dict[str, Any] | None]:
    """Run an emulation job in a fresh smpyrun process; its Run and its JSON summary."""
    with tempfile.TemporaryDirectory(prefix="smpy-replay-") as tmp:
        out = Path(tmp) / "run.json"
        proc = subprocess.run(with_json(job.command, out), cwd=job.cwd, capture_output=True, text=True,
                              timeout=job.timeout, stdin=subprocess.DEVNULL)
        data = json.loads(out.read_text()) if out.exists() else None
    run = run_from_result(job, proc.returncode, proc.stdout, proc.stderr, data)
    run.command = job.command
    return run, data


def replay_sweep(jobs: Sequence[Job], reps: int, seed0: int, delay: float, platform_of: Callable[[Point], Any],
                 workers: int = 1) -> list[Run]:
    """``smpy predict --failure-replay``: per point, one emulation without the failure models
    (``smpy/failure-models:no``), then each repetition's outcome from its failure draw
    (:func:`replay_outcomes`). A point whose failure-free run does not succeed gets that run's
    outcome for every repetition."""
    from concurrent.futures import ThreadPoolExecutor

    base = []
    for j in jobs:
        if j.rep == 0:
            cmd = tuple(REPLAY_FLAG if c.startswith("--cfg=smpy/failure-seed:") else c for c in j.command)
            base.append(Job(j.point, 0, cmd, j.cwd, j.timeout, j.time_regex))
    with ThreadPoolExecutor(max(1, workers)) as pool:
        results = list(pool.map(run_with_json, base))
    runs: list[Run] = []
    for job, (run, data) in zip(base, results):
        if run.status != "ok" or data is None:
            for rep in range(reps):
                runs.append(Run(job.point, rep, run.status, run.exit_code, run.makespan_s, message=run.message,
                                command=job.command))
            continue
        runs += replayed_runs(job, reps, seed0, data, platform_of(job.point), delay)
    return runs


# -- checkpoint/restart: the time to solution of a given failure history, Young/Daly -----------
@dataclass
class Checkpointed:
    """The outcome of :func:`checkpointed_time`: time to solution, and per failure the work it
    destroyed (the time since the end of the last checkpoint of its attempt)."""

    time_s: float
    lost_s: list[float]
    attempts: int


def checkpointed_time(steps: int, step_s: float, every: int, ckpt_s: float, failures: Sequence[float],
                      restart_s: float = 0.0, restore_s: float = 0.0, detect_s: float = 0.0,
                      start_s: float = 0.0) -> Checkpointed:
    r"""Replay a checkpointed run against the failures at the absolute times ``failures``.

    The run is ``steps`` steps of ``step_s`` seconds, with a checkpoint of ``ckpt_s`` seconds
    after every ``every`` steps (none after the last step; ``every`` 0: never). A failure at
    :math:`f` during an attempt aborts it at :math:`f + d` (``detect_s``); the next attempt
    starts ``restart_s`` later, reads the last complete checkpoint (``restore_s``, when there
    is one) and redoes the steps since it: the failure destroyed exactly :math:`f - t_c`,
    :math:`t_c` the end of the attempt's last checkpoint (or of its start and restore).
    A failure while no attempt runs (between an abort and the next start) does not count: the
    hosts are repaired or replaced by then (smpyrun places a restart on the hosts up). As
    ``smpyrun --restarts`` with a program like ``examples/faults/heat3d.py``."""
    fails = sorted(failures)
    t, done, i, attempts, lost = start_s, 0, 0, 0, []
    while True:
        attempts += 1
        t += restore_s if done else 0.0
        while i < len(fails) and fails[i] < t:  # before this attempt started: no effect
            i += 1
        saved_at, d = t, done
        while d < steps:
            nxt = min((d // every + 1) * every, steps) if every else steps
            end = t + (nxt - d) * step_s + (ckpt_s if nxt < steps else 0.0)
            if i < len(fails) and fails[i] < end:
                break
            t, d = end, nxt
            saved_at = t
        else:
            return Checkpointed(t, lost, attempts)
        f = fails[i]
        i += 1
        lost.append(f - saved_at)
        done = d
        t = f + detect_s + restart_s


def young_daly(ckpt_s: float, mtbf_s: float) -> float:
    r"""Young's first-order optimal checkpoint interval :math:`\sqrt{2 C M}` (Daly's
    first-order result too), :math:`C` the checkpoint cost and :math:`M` the job's MTBF."""
    return math.sqrt(2.0 * ckpt_s * mtbf_s)


def daly_time(work_s: float, tau_s: float, ckpt_s: float, restart_s: float, mtbf_s: float) -> float:
    r"""Daly's (2006) expected wall time of ``work_s`` seconds of work checkpointed every
    ``tau_s`` seconds of work, for exponential failures of mean :math:`M`:
    :math:`T = M e^{R/M} \left(e^{(\tau + C)/M} - 1\right) W / \tau` (every segment, the
    last one included, ends with a checkpoint; a failure costs the restart :math:`R`)."""
    m = mtbf_s
    return m * math.exp(restart_s / m) * math.expm1((tau_s + ckpt_s) / m) * work_s / tau_s


# -- reused emulator processes -------------------------------------------------------------------
class _Worker:
    """One long-lived emulator process; jobs go as JSON lines on its stdin, replies come back
    on its stdout (the emulations' own output goes to files)."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen([python, "-m", "smpy.cli.reliability"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.replies: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(line)
        self.replies.put("")

    def run(self, argv: list[str], cwd: str, tmp: str, timeout: float | None) -> dict[str, Any] | None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": cwd, "tmp": tmp}) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.replies.get(timeout=timeout)
        except queue.Empty:
            self.close()
            return None
        return json.loads(line) if line else {"rc": -9, "crashed": True}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class ReusedRunner:
    """A job runner (for :func:`smpy.cli.sweep.run_sweep`) that emulates in reused worker
    processes, one per thread; real runs and anything else go to ``fallback``."""

    def __init__(self, fallback: Callable[[Job], Run], python: str = sys.executable) -> None:
        self.fallback = fallback
        self.python = python
        self._local = threading.local()
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()

    def _worker(self) -> _Worker:
        w = getattr(self._local, "worker", None)
        if w is None or w.proc.poll() is not None:
            w = self._local.worker = _Worker(self.python)
            with self._lock:
                self._workers.append(w)
        return w

    def __call__(self, job: Job) -> Run:
        cmd = list(job.command)
        if job.point.is_real or cmd[1:3] != ["-m", "smpy.cli.smpyrun"]:
            return self.fallback(job)
        with tempfile.TemporaryDirectory(prefix="smpy-sweep-") as tmp:
            out = Path(tmp) / "run.json"
            reply = self._worker().run(with_json(cmd, out)[3:], job.cwd, tmp, job.timeout)
            if reply is None:
                run = Run(job.point, job.rep, "timeout", -1, message=f"no result after {job.timeout:g} s (--timeout)")
            else:
                data = json.loads(out.read_text()) if out.exists() else None
                stdout = (Path(tmp) / "stdout").read_text(errors="replace") if (Path(tmp) / "stdout").exists() else ""
                stderr = (Path(tmp) / "stderr").read_text(errors="replace") if (Path(tmp) / "stderr").exists() else ""
                run = run_from_result(job, int(reply["rc"]), stdout, stderr, data)
        run.command = job.command
        return run

    def close(self) -> None:
        for w in self._workers:
            if w.proc.stdin is not None:
                w.proc.stdin.close()
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.close()


def _serve() -> None:
    """The worker's loop: run each job's smpyrun argv with fds 1 and 2 in its files."""
    from smpy.cli import smpyrun

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    home = os.getcwd()
    for line in sys.stdin:
        job = json.loads(line)
        saved = os.dup(1), os.dup(2)
        with open(Path(job["tmp"]) / "stdout", "w") as out, open(Path(job["tmp"]) / "stderr", "w") as err:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                os.chdir(job["cwd"])
                rc = smpyrun.main(job["argv"])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException as exc:  # noqa: BLE001 - report, keep serving
                print(f"smpyrun: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
                rc = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
                os.chdir(home)
        proto.write(json.dumps({"rc": rc}) + "\n")


if __name__ == "__main__":
    _serve()
