"""The workload file of ``smpy batch`` (docs/workloads.md): platform, scheduler, jobs, and jobs
generated from arrivals (Poisson, an empirical list of inter-arrival times, or a Standard
Workload Format file of the Parallel Workloads Archive).

Every error is one :class:`WorkloadError` line naming the file and the field
(``w.yaml: jobs[2].np: expected a whole number of 1 or more, got 'x'``).

Arrivals drawn from a distribution: job ``i`` (``i = 0 .. count-1``) is submitted at
``start + sum_{k<=i} d_k`` where the inter-arrival times ``d_k`` are i.i.d., exponential of
mean ``1/rate`` (a Poisson process of rate ``rate``) or drawn uniformly with replacement from
the ``intervals`` list (empirical), with ``random.Random(seed)``; the first job arrives after
one interval. Its template is drawn from ``mix`` (weights) with the same generator.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from typing import Any

from smpy.support.units import parse_time

SCHEDULERS = ("fcfs", "easy", "none")
JOB_KEYS = ("name", "program", "args", "np", "submit", "hosts", "nodes", "walltime", "module")
TOP_KEYS = ("platform", "scheduler", "jobs", "templates", "arrivals", "swf", "cfg", "seed", "kill_at_walltime")
ARRIVAL_KEYS = ("distribution", "rate", "intervals", "count", "seed", "mix", "start")
SWF_KEYS = ("file", "programs", "limit", "time-scale", "min-np", "max-np")


class WorkloadError(ValueError):
    """A bad workload file: one line naming the file and the field."""


@dataclass
class Job:
    """One job of a workload: its program, ranks, submit time and requested resources."""

    name: str
    program: str  #: a script path (absolute), or a module name when ``module``
    args: list[str] = field(default_factory=list)
    np: int = 1
    submit: float = 0.0
    hosts: list[str] | None = None  #: fixed hosts (hostfile semantics: round-robin)
    nodes: int | None = None  #: whole nodes requested from the scheduler
    walltime: float | None = None  #: requested run time (s)
    module: bool = False
    #: index in the workload (order of the file, then generated jobs)
    index: int = 0
    #: where the job comes from, for errors: ``jobs[3]``, ``job 'small-7'``, ``log.swf:12``
    origin: str = ""


@dataclass
class Workload:
    source: str
    platform: str | None
    scheduler: str
    jobs: list[Job]
    cfg: dict[str, Any] = field(default_factory=dict)
    #: a job still running at ``start + walltime`` is killed then (as Slurm does)
    kill_at_walltime: bool = True


class _Reader:
    """Field checks that name ``source`` and the field's path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> WorkloadError:
        return WorkloadError(f"{self.source}: {where}: {what}" if where else f"{self.source}: {what}")

    def mapping(self, value: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a mapping, got {_show(value)}")
        for k in value:
            if k not in keys:
                raise self.fail(f"{where}.{k}" if where else str(k),
                                f"unknown key (known: {', '.join(keys)})")
        return value

    def time(self, value: Any, where: str, positive: bool = False) -> float:
        try:
            t = parse_time(value)
        except Exception:  # noqa: BLE001 - any unparsable time
            raise self.fail(where, f"expected a time like 30s, 10min or 2h, got {_show(value)}") from None
        if not math.isfinite(t) or t < 0 or (positive and t == 0):
            raise self.fail(where, f"expected a {'positive' if positive else 'non-negative'} time, got {_show(value)}")
        return t

    def count(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(where, f"expected a whole number of 1 or more, got {_show(value)}")
        return value

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise self.fail(where, f"expected a positive number, got {_show(value)}")
        return float(value)

    def names(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list) or not value or not all(isinstance(x, str) and x for x in value):
            raise self.fail(where, f"expected a non-empty list of host names, got {_show(value)}")
        return list(value)

    def path(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"expected a file name, got {_show(value)}")
        return value if os.path.isabs(value) else os.path.join(os.path.dirname(os.path.abspath(self.source)), value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def job_from(r: _Reader, raw: Any, where: str, *, template: bool = False) -> Job:
    """A job (or a template: no submit time) from its mapping."""
    d = r.mapping(raw, where, JOB_KEYS)
    name = d.get("name")
    if not isinstance(name, str) or not name or any(c in name for c in "/\\ \t\n"):
        raise r.fail(f"{where}.name", f"expected a name without spaces or slashes, got {_show(name)}")
    if "program" not in d:
        raise r.fail(f"{where}.program", "missing (the script the job runs)")
    module = d.get("module", False)
    if not isinstance(module, bool):
        raise r.fail(f"{where}.module", f"expected true or false, got {_show(module)}")
    program = d["program"]
    if module:
        if not isinstance(program, str) or not program:
            raise r.fail(f"{where}.program", f"expected a module name, got {_show(program)}")
    else:
        program = r.path(program, f"{where}.program")
        if not os.path.isfile(program):
            raise r.fail(f"{where}.program", f"no such file: {program}")
    args = d.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool)
                                             for a in args):
        raise r.fail(f"{where}.args", f"expected a list of strings or numbers, got {_show(args)}")
    job = Job(name, program, [str(a) for a in args], r.count(d.get("np", 1), f"{where}.np"), module=module,
              origin=where)
    if "submit" in d:
        if template:
            raise r.fail(f"{where}.submit", "a template has no submit time (its arrivals give it)")
        job.submit = r.time(d["submit"], f"{where}.submit")
    if "hosts" in d:
        job.hosts = r.names(d["hosts"], f"{where}.hosts")
    if "nodes" in d:
        job.nodes = r.count(d["nodes"], f"{where}.nodes")
        if job.nodes > job.np:
            raise r.fail(f"{where}.nodes", f"{job.nodes} nodes for {job.np} ranks: a node would have no rank")
    if "walltime" in d:
        job.walltime = r.time(d["walltime"], f"{where}.walltime", positive=True)
    return job


def _templates(r: _Reader, data: dict[str, Any]) -> dict[str, Job]:
    raw = data.get("templates", [])
    if not isinstance(raw, list):
        raise r.fail("templates", f"expected a list of job templates, got {_show(raw)}")
    out: dict[str, Job] = {}
    for i, t in enumerate(raw):
        job = job_from(r, t, f"templates[{i}]", template=True)
        if job.name in out:
            raise r.fail(f"templates[{i}].name", f"duplicate template {job.name!r}")
        out[job.name] = job
    return out


def _template_named(r: _Reader, templates: dict[str, Job], name: Any, where: str) -> Job:
    if name not in templates:
        known = ", ".join(templates) or "none: add a templates list"
        raise r.fail(where, f"no template named {_show(name)} (templates: {known})")
    return templates[name]


def _copy(t: Job, name: str, submit: float, index: int) -> Job:
    return Job(name, t.program, list(t.args), t.np, submit, list(t.hosts) if t.hosts else None, t.nodes,
               t.walltime, t.module, index, f"job {name!r} (template {t.name!r})")


def generate_arrivals(r: _Reader, raw: Any, templates: dict[str, Job], base: int) -> list[Job]:
    """The jobs of an ``arrivals`` section (see the module docstring)."""
    d = r.mapping(raw, "arrivals", ARRIVAL_KEYS)
    kind = d.get("distribution", "poisson")
    if kind not in ("poisson", "empirical"):
        raise r.fail("arrivals.distribution", f"expected poisson or empirical, got {_show(kind)}")
    count = r.count(d.get("count"), "arrivals.count")
    seed = d.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise r.fail("arrivals.seed", f"expected a whole number, got {_show(seed)}")
    if kind == "poisson":
        if "rate" not in d:
            raise r.fail("arrivals.rate", "missing (jobs per second of the Poisson arrivals)")
        rate = r.number(d["rate"], "arrivals.rate")
        intervals: list[float] = []
    else:
        raw_iv = d.get("intervals")
        if not isinstance(raw_iv, list) or not raw_iv:
            raise r.fail("arrivals.intervals", f"expected a non-empty list of times, got {_show(raw_iv)}")
        intervals = [r.time(x, f"arrivals.intervals[{i}]") for i, x in enumerate(raw_iv)]
    mix = d.get("mix", {name: 1 for name in templates})
    if not isinstance(mix, dict) or not mix:
        raise r.fail("arrivals.mix", f"expected a mapping template: weight, got {_show(mix)}")
    names = list(mix)
    for name in names:
        _template_named(r, templates, name, f"arrivals.mix.{name}")
    weights = [r.number(mix[n], f"arrivals.mix.{n}") for n in names]
    rng = random.Random(seed)
    t = r.time(d.get("start", 0), "arrivals.start")
    jobs = []
    for i in range(count):
        t += rng.expovariate(rate) if kind == "poisson" else rng.choice(intervals)
        tpl = templates[rng.choices(names, weights)[0]]
        jobs.append(_copy(tpl, f"{tpl.name}-{i}", t, base + i))
    return jobs


def read_swf(r: _Reader, raw: Any, templates: dict[str, Job], base: int) -> list[Job]:
    """The jobs of an SWF file (Parallel Workloads Archive, 18 fields per line, ``;``
    comments): submit time (field 2) times ``time-scale``, ranks = requested processors (field
    8, else allocated, field 5), walltime = requested time (field 9, else the run time, field
    4); the program is the template ``programs[executable number]`` (field 14) or
    ``programs[default]``. In a template's args, ``{np}``, ``{runtime}`` (the record's run
    time, s, scaled) and ``{job}`` (its job number) are replaced."""
    d = r.mapping(raw, "swf", SWF_KEYS)
    path = r.path(d.get("file"), "swf.file")
    programs = d.get("programs")
    if not isinstance(programs, dict) or not programs:
        raise r.fail("swf.programs", f"expected a mapping executable-number|default: template, got {_show(programs)}")
    for k, v in programs.items():
        _template_named(r, templates, v, f"swf.programs.{k}")
    limit = r.count(d["limit"], "swf.limit") if "limit" in d else None
    scale = r.number(d.get("time-scale", 1.0), "swf.time-scale")
    lo = r.count(d.get("min-np", 1), "swf.min-np")
    hi = r.count(d["max-np"], "swf.max-np") if "max-np" in d else None
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise r.fail("swf.file", f"cannot read {path}: {exc.strerror}") from None
    jobs: list[Job] = []
    for lineno, line in enumerate(lines, start=1):
        text = line.split(";", 1)[0].strip()
        if not text:
            continue
        if limit is not None and len(jobs) >= limit:
            break
        job = _swf_record(r, text, f"{path}:{lineno}", programs, templates, scale, base + len(jobs))
        if job is not None and job.np >= lo and (hi is None or job.np <= hi):
            jobs.append(job)
    return jobs


def _swf_record(r: _Reader, text: str, where: str, programs: dict[Any, str], templates: dict[str, Job],
                scale: float, index: int) -> Job | None:
    fields = text.split()
    if len(fields) != 18:
        raise WorkloadError(f"{where}: expected the 18 fields of a Standard Workload Format record, found {len(fields)}")
    try:
        values = [float(x) for x in fields]
    except ValueError:
        raise WorkloadError(f"{where}: a field is not a number") from None
    number, submit, run_time, alloc, req = int(values[0]), values[1], values[3], int(values[4]), int(values[7])
    np = req if req > 0 else alloc
    if np < 1 or submit < 0:
        return None  # a record without a processor count or submit time: skipped
    exe = int(values[13])
    name = programs.get(exe, programs.get(str(exe), programs.get("default")))
    if name is None:
        raise WorkloadError(f"{where}: executable number {exe} has no program: add it (or default) to swf.programs")
    tpl = templates[name]
    walltime = values[8] if values[8] > 0 else run_time
    job = _copy(tpl, f"{tpl.name}-{number}", submit * scale, index)
    job.origin = where
    job.np = np
    job.nodes = None
    job.walltime = walltime * scale if walltime > 0 else tpl.walltime
    subst = {"np": str(np), "runtime": f"{max(run_time, 0.0) * scale:g}", "job": str(number)}
    job.args = [a.format(**subst) if "{" in a else a for a in tpl.args]
    return job


def load_workload(path: str) -> Workload:
    """Read and check a workload file (see docs/workloads.md)."""
    import yaml

    r = _Reader(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read the workload file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        raise WorkloadError(f"{path}: {at}not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    data = r.mapping(data, "", TOP_KEYS) if data is not None else {}
    scheduler = data.get("scheduler", "fcfs")
    if scheduler not in SCHEDULERS:
        raise r.fail("scheduler", f"expected one of {', '.join(SCHEDULERS)}, got {_show(scheduler)}")
    platform = data.get("platform")
    if platform is not None:
        platform = r.path(platform, "platform")
    cfg = data.get("cfg", {})
    if not isinstance(cfg, dict):
        raise r.fail("cfg", f"expected a mapping of configuration items, got {_show(cfg)}")
    raw_jobs = data.get("jobs", [])
    if not isinstance(raw_jobs, list):
        raise r.fail("jobs", f"expected a list of jobs, got {_show(raw_jobs)}")
    jobs = [job_from(r, j, f"jobs[{i}]") for i, j in enumerate(raw_jobs)]
    for i, job in enumerate(jobs):
        job.index = i
    templates = _templates(r, data)
    if "arrivals" in data:
        jobs += generate_arrivals(r, data["arrivals"], templates, len(jobs))
    if "swf" in data:
        jobs += read_swf(r, data["swf"], templates, len(jobs))
    if not jobs:
        raise r.fail("jobs", "the workload has no job (give jobs, arrivals or swf)")
    check_jobs(r, jobs, scheduler)
    kill = data.get("kill_at_walltime", True)
    if not isinstance(kill, bool):
        raise r.fail("kill_at_walltime", f"expected true or false, got {_show(kill)}")
    return Workload(path, platform, scheduler, jobs, {str(k): v for k, v in cfg.items()}, kill)


def check_jobs(r: _Reader, jobs: list[Job], scheduler: str) -> None:
    seen: dict[str, int] = {}
    for job in jobs:
        where = job.origin
        if job.name in seen:
            raise r.fail(f"{where}.name", f"duplicate job name {job.name!r}")
        seen[job.name] = job.index
        if scheduler == "none" and job.hosts is None:
            raise r.fail(f"{where}.hosts", "missing: with scheduler none every job names its hosts")
        if scheduler == "easy" and job.walltime is None:
            raise r.fail(f"{where}.walltime", "missing: EASY backfilling needs each job's requested run time")
        if job.hosts is not None and job.nodes is not None and job.nodes != len(set(job.hosts)):
            raise r.fail(f"{where}.nodes", f"{job.nodes} nodes but {len(set(job.hosts))} distinct hosts")

