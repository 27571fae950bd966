"""Run an unmodified mpi4py program on a simulated platform (used by ``smpyrun`` and
:func:`smpy.run`)."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import runpy
import sys
import time
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import smpy
from smpy.energy import HostEnergy
from smpy.energy.dvfs import Dvfs
from smpy.energy.host_energy import PowerTrace
from smpy.energy.link_energy import LinkEnergy
from smpy.kernel.actors import current_actor
from smpy.kernel.engine import DeadlockError
from smpy.kernel.watchdog import Stalled, Watchdog
from smpy.network.routing import RoutingError
from smpy.platform import default_platform, load_platform, parse_hostfile, place_ranks
from smpy.runtime.constants import THREAD_MULTIPLE
from smpy.runtime.lifecycle import AbortCalled
from smpy.runtime.world import World
from smpy.shim import importer
from smpy.shim.blas import single_thread_blas
from smpy.shim.coop import Cooperative
from smpy.shim.green import GreenThreads
from smpy.shim.hugepages import numpy_hugepages, resolve
from smpy.shim.isolation import Patches, RankContext
from smpy.support.config import Config, declare, parse_bool, parse_float, parse_int
from smpy.support.units import parse_size
from smpy.timing.bench import SIMULATE, RankBench, Timing
from smpy.trace.chrome import ChromeTracer
from smpy.trace.paje import PajeTracer
from smpy.trace.progress import Progress
from smpy.trace.report import Report, Tee
from smpy.trace.ti import TIRecorder


def _tristate(value: object) -> str:
    """numpy / yes / no, with the usual spellings of yes and no."""
    text = str(value).strip().lower()
    if text == "numpy":
        return text
    try:
        return "yes" if parse_bool(text) else "no"
    except ValueError:
        raise ValueError("expected numpy, yes or no") from None


SEED = declare("smpy/seed", 0, "Seed of the per-rank random generators (random, numpy.random)", parse=parse_int)
PLUGINS = ("host_energy", "host_dvfs", "link_energy")
REPORT = declare("smpy/report", "", "Write a run report (time in computation and in each MPI call "
                 "per rank, load imbalance) to PREFIX.json and PREFIX.csv and print its table")
PROGRESS = declare("smpy/progress", "auto", "Progress line on the terminal: auto (when stderr is a "
                   "terminal and output is not captured), yes, no", choices=("auto", "yes", "no"),
                   parse=lambda v: str(v).strip().lower())
TRACE_TI = declare("smpy/trace-ti", "", "Record a time-independent trace (SMPI's format) of the run: "
                   "this index file and FILE_files/rank-<r>.txt; replay with smpy replay or smpirun -replay")
TRACE_FORMAT = declare("smpy/trace-format", "auto", "Format of the timeline trace (--trace FILE): chrome "
                       "(Chrome/Perfetto JSON), paje (Paje, for ViTE, as SimGrid's -trace), auto (paje "
                       "when FILE ends in .paje or .trace, else chrome)", choices=("auto", "chrome", "paje"),
                       parse=lambda v: str(v).strip().lower())
POWER_TRACE = declare("smpy/power-trace", "", "Write each host's power over simulated time to this "
                      "CSV file (time_s,host,power_W); loads the host_energy plugin")
HUGEPAGE = declare("smpy/numpy-hugepage", "numpy", "Transparent-huge-page advice on numpy arrays of 4 MiB "
                   "or more: numpy (as numpy decides in the rank's real process, NUMPY_MADVISE_HUGEPAGE), "
                   "yes, no (faster emulation of many ranks with large arrays, less faithful; numpy means "
                   "no when smpi/simulate-computation is off; smpy/shim/hugepages.py)", parse=_tristate)
RANK_HEAPS = declare("smpy/rank-heaps", True, "Give each rank a model of its own process's heap (glibc's "
                     "rules) for numpy arrays of 128 KiB or more: a rank finds warm pages where its real "
                     "process would and pays the page faults it would (smpy/shim/rankheap.py; needs a "
                     "C compiler at first use)", parse=parse_bool)
RANK_HEAPS_TOTAL = declare("smpy/rank-heaps-total", "1GiB", "Free memory all ranks' heaps may hold together; "
                           "beyond it new arrays come from the shared allocator and freed ones give their "
                           "pages back", parse=parse_size)
STALL_TIMEOUT = declare("smpy/stall-timeout", 60.0, "End the run with a report of every rank's pending "
                        "call when this many wall seconds pass without progress: no simulation event, "
                        "no CPU used by the emulation or its child processes (a rank in a real blocking "
                        "call, a wait for an outside event that never comes); 0 waits forever",
                        parse=parse_float)
PLUGIN = declare("plugin", "", f"Plugins to load, comma-separated: {', '.join(PLUGINS)}")


@dataclass
class RankResult:
    rank: int
    host: str
    end_time_s: float
    mpi_calls: int
    #: thread CPU time of the program between MPI calls (0 when not measured: computation
    #: not simulated and no region report)
    measured_compute_s: float
    simulated_flops: float


@dataclass
class RunResult:
    """What a run produced: simulated figures, outcome and (optionally) captured output."""

    script: str
    np: int
    platform: str
    hosts_used: int
    status: str  # ok | error | abort | deadlock | stalled | interrupted
    exit_code: int
    makespan_s: float
    mpi_calls: int
    messages: int
    bytes_sent: float
    wall_s: float
    events: int
    message: str = ""
    ranks: list[RankResult] = field(default_factory=list)
    output: list[tuple[int, str, str]] | None = None
    config: dict[str, str] = field(default_factory=dict)
    energy: dict[str, Any] | None = None
    #: processes started by MPI_Comm_spawn (they follow the initial ranks in ``ranks``)
    spawned: int = 0
    #: peak resident set size of the emulating process so far (bytes; 0 where unknown)
    peak_rss_bytes: int = 0

    @property
    def stdout(self) -> str:
        return "".join(t for _, s, t in (self.output or []) if s == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(t for _, s, t in (self.output or []) if s == "stderr")

    def rank_output(self, rank: int, stream: str = "stdout") -> str:
        return "".join(t for r, s, t in (self.output or []) if r == rank and s == stream)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("output")
        return d

    def summary(self) -> str:
        lines = [
            f"[smpy] simulated makespan: {self.makespan_s:.9g} s",
            f"[smpy] {self.np} ranks{f' (+{self.spawned} spawned)' if self.spawned else ''} on {self.hosts_used} hosts of platform '{self.platform}'; "
            f"{self.mpi_calls} MPI calls, {self.messages} messages ({self.bytes_sent:.6g} bytes)",
            f"[smpy] emulation wall time: {self.wall_s:.3f} s ({self.events} events)",
        ]
        e = self.energy or {}
        if "total_J" in e:
            lines.append(f"Total energy consumption: {e['total_J']:.6f} Joules (used hosts: "
                         f"{e['used_hosts_J']:.6f} J, idle hosts: {e['idle_hosts_J']:.6f} J)")
            per = sorted(e["per_host_J"].values())
            if per:
                lines.append(f"[smpy] energy per host: min {per[0]:.6g} J, median "
                             f"{per[len(per) // 2]:.6g} J, max {per[-1]:.6g} J ({len(per)} hosts; "
                             "--json for each)")
        if "links_J" in e:
            lines.append(f"Total energy over all links: {e['links_J']:.6f}")
        if self.status != "ok":
            lines.append(f"[smpy] run ended with status '{self.status}' (exit code {self.exit_code})")
        return "\n".join(lines)


class Session:
    """One run: the world, its ranks' contexts and the process-wide patches."""

    def __init__(self, world: World, timing: Timing, echo: bool, capture: bool) -> None:
        self.world = world
        self.timing = timing
        self.echo = echo
        self.captured: list[tuple[int, str, str]] | None = [] if capture else None

    def _can_block(self, ctx: RankContext) -> bool:
        """Whether the rank may end its burst here (print, time.time, time.sleep): not inside
        an MPI call, nor inside a sampled loop (whose iteration smpy.sample is timing)."""
        proc = ctx.proc
        a = current_actor()  # the rank, or one of its threads (smpy.shim.green)
        return (proc.depth == 0 and not self.world.engine.stopping and a is not None and a.data is proc
                and proc.bench.sampling is None)

    def before_output(self, ctx: RankContext) -> None:
        if self._can_block(ctx):
            self.timing.flush(ctx.proc)

    def sleep(self, ctx: RankContext, seconds: float) -> None:
        if self._can_block(ctx):
            self.timing.sleep(ctx.proc, seconds)

    def clock(self, ctx: RankContext) -> float:
        if self._can_block(ctx):
            self.timing.flush(ctx.proc)
        return self.world.engine.now


def _user_traceback(exc: BaseException) -> str:
    smpy_dir = os.path.dirname(os.path.abspath(smpy.__file__))
    te = traceback.TracebackException.from_exception(exc)
    frames = [f for f in te.stack if not os.path.abspath(f.filename).startswith(smpy_dir)]
    te.stack = traceback.StackSummary.from_list(frames)
    return "".join(te.format())


def trace_format(path: str, fmt: str = "auto") -> str:
    """``chrome`` or ``paje``: ``fmt``, or for ``auto`` the suffix of ``path``."""
    if fmt == "auto":
        return "paje" if path.lower().endswith((".paje", ".trace")) else "chrome"
    return fmt


def _hugepage(config: Config) -> bool:
    """Whether numpy's huge-page advice is given during the run. By default as numpy decides in
    a real process; but when computation is not simulated, the page size of the program's
    arrays cannot change a prediction and only costs the emulator time (twice the system time
    per byte of fault on the VMs measured), so the advice is left out."""
    setting = config.get(HUGEPAGE)
    if setting == "numpy" and not config.get(SIMULATE):
        return False
    return resolve(setting)


@contextlib.contextmanager
def _rank_heaps(config: Config):  # type: ignore[no-untyped-def]
    """Per-rank numpy heaps for the run (smpy/rank-heaps, see smpy.shim.rankheap)."""
    if not config.get(RANK_HEAPS):
        yield
        return
    from smpy.shim import isolation
    from smpy.shim.rankheap import Switcher

    switcher = Switcher(int(config.get(RANK_HEAPS_TOTAL)), _hugepage(config))
    isolation.rank_heaps = switcher
    try:
        yield
    finally:
        isolation.rank_heaps = None
        switcher.finish()


@contextlib.contextmanager
def _young_gc_only():  # type: ignore[no-untyped-def]
    """Keep Python's cyclic garbage collector off the objects that live for the whole run.

    Every rank's module state, the platform and the suspended greenlets' frames are
    long-lived; full collections rescan all of them, and at thousands of ranks they were
    6-10 % of the emulation's time (py-spy on the ring at np 1024). Objects that exist when
    the simulation starts are frozen (never scanned, still freed by reference counting) and
    young collections run a little less often; cycles created during the run are still
    collected. Restored afterwards.
    """
    threshold = gc.get_threshold()
    enabled = gc.isenabled()  # the command line starts with it off (smpy.cli._exit.run)
    gc.freeze()
    gc.set_threshold(max(threshold[0], 10_000), *threshold[1:])
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if not enabled:
            gc.disable()


def run(script: str | os.PathLike | None, np: int = 4, platform: str | os.PathLike | None = None,
        cfg: dict[str, Any] | None = None, args: list[str] | tuple = (), hostfile: str | os.PathLike | None = None,
        capture: bool = False, echo: bool = True, err_stream: Any = None,
        trace: str | os.PathLike | None = None, module: str | None = None,
        command: str | None = None) -> RunResult:
    """Run ``script`` with ``np`` simulated ranks; see :class:`RunResult`.

    Instead of a script, ``module`` runs a module as ``python -m module`` does (each rank
    runs it with :func:`runpy.run_module`, ``sys.argv[0]`` its file, the working directory
    first on ``sys.path``) and ``command`` a program text as ``python -c command``
    (``sys.argv[0] == "-c"``).
    """
    err = err_stream if err_stream is not None else sys.stderr
    single_thread_blas()
    import smpy.mpi  # noqa: F401 - loads numpy before the rank contexts take their generators
    if np < 1:
        raise ValueError(f"np must be at least 1, got {np}")
    if (script is not None) + (module is not None) + (command is not None) != 1:
        raise ValueError("give exactly one of a script, a module (-m) or a command (-c)")
    if module is not None:
        _check_module(module)
        script_path = Path(f"-m {module}")
        code = None
        argv0, path0 = "-m", os.getcwd()
    elif command is not None:
        script_path = Path("-c")
        code = compile(command, "<string>", "exec")
        argv0, path0 = "-c", os.getcwd()
    else:
        script_path = Path(script)  # type: ignore[arg-type]
        code = compile(script_path.read_text(), str(script_path), "exec")
        argv0, path0 = str(script_path), str(script_path.parent.resolve())
    plat = load_platform(platform) if platform is not None else default_platform()
    config = Config(cfg or {})
    for k, v in (plat.config or {}).items():
        config.set_default(k, v)
    hosts = parse_hostfile(hostfile) if hostfile is not None else None
    placement = place_ranks(plat, np, hosts)
    world = World(plat, config, placement)
    timing = Timing(world, config)
    plugins = {x.strip() for x in str(config.get(PLUGIN)).split(",") if x.strip()}
    power_trace_path = str(config.get(POWER_TRACE))
    if power_trace_path:
        plugins.add("host_energy")
    unknown = plugins - set(PLUGINS)
    if unknown:
        raise ValueError(f"unknown plugin(s) {', '.join(sorted(unknown))} in --cfg=plugin "
                         f"(known: {', '.join(PLUGINS)})")
    world.energy = HostEnergy(world.engine, world.cpu, plat.hosts) if "host_energy" in plugins else None
    if "host_dvfs" in plugins:
        world.dvfs = Dvfs(world.engine, world.cpu, plat.hosts, config)
    power_trace = (PowerTrace(power_trace_path, world.energy) if power_trace_path else None)
    link_energy = (LinkEnergy(world.engine, world.net, plat.links) if "link_energy" in plugins
                   else None)
    ti_path = str(config.get(TRACE_TI))
    if ti_path:
        world.ti = TIRecorder(ti_path, np)
    chrome = paje = None
    if trace is not None:
        if trace_format(str(trace), str(config.get(TRACE_FORMAT))) == "paje":
            paje = PajeTracer(str(trace), world.engine, world.cpu, plat, placement, world.energy,
                              f"smpy: {script_path} on {np} ranks, platform {plat.name}")
        else:
            chrome = ChromeTracer(str(trace), world.engine, world.cpu, plat.hosts, placement)
    report_prefix = str(config.get(REPORT))
    report = Report(world.engine, world.cpu, np) if report_prefix else None
    tracers = [t for t in (chrome, paje, report) if t is not None]
    world.tracer = Tee(*tracers) if len(tracers) > 1 else (tracers[0] if tracers else None)
    progress = config.get(PROGRESS)
    progress_line = None
    if progress == "yes" or (progress == "auto" and not capture and err.isatty()):
        progress_line = Progress(world, err)
    session = Session(world, timing, echo, capture)
    seed = config.get(SEED)

    def rank_main(proc: Any) -> None:
        proc.initialized = True  # mpi4py initialises MPI at import; smpy at rank start
        proc.thread_level = THREAD_MULTIPLE  # mpi4py's default rc.thread_level, which MPICH provides
        ctx = proc.actor.context
        if world.ti is not None:
            world.ti.line(proc.rank, "init")
        if paje is not None:
            paje.rank_start(proc.rank)
        timing.restart(proc)
        try:
            if code is None:
                # python -m: the module replaces __main__ (and sys.argv[0]) while it runs
                runpy.run_module(module, run_name="__main__", alter_sys=True)  # type: ignore[arg-type]
            else:
                exec(code, ctx.main.__dict__)
        except SystemExit as e:
            if e.code not in (None, 0):
                raise
        ctx.run_exit_funcs()  # the program's atexit handlers, while MPI still works
        green.end_of_rank(proc)
        timing.end_of_rank(proc)
        if world.ti is not None:
            world.ti.line(proc.rank, "finalize")
        if paje is not None:
            paje.rank_end(proc.rank)
        proc.finalized = True

    actors = world.spawn(rank_main)
    green = GreenThreads()
    world.spawn_hook = _SpawnHook(world, timing, seed, __builtins__, green)
    for a in actors:
        p = a.data
        main = types.ModuleType("__main__")
        if script is not None:
            main.__file__ = str(script_path)
        main.__builtins__ = __builtins__  # type: ignore[attr-defined]
        a.context = RankContext(p.rank, main, [argv0, *map(str, args)], seed, p)

    patches = Patches(session)
    saved_main = sys.modules.get("__main__")
    importer.install()
    patches.install()
    green.install()
    coop = Cooperative()
    coop.install()
    sys.path.insert(0, path0)
    status, exit_code, message = "ok", 0, ""
    wall0 = time.perf_counter()
    engine = world.engine
    try:
        for a in actors:
            a.start()
        try:
            with _young_gc_only(), numpy_hugepages(_hugepage(config)), _rank_heaps(config), \
                    Watchdog(engine, config.get(STALL_TIMEOUT)):
                engine.run()
        except DeadlockError as d:
            status, exit_code = "deadlock", 1
            message = _deadlock_report(world, d)
        except Stalled as st:
            status, exit_code, message = "stalled", 1, _stall_report(world, st)
        except KeyboardInterrupt:
            status, exit_code, message = "interrupted", 130, "[smpy] interrupted by the user (Ctrl-C)"
        if status == "ok" and engine.abort_reason is not None:
            status, exit_code, message = _failure(world, engine.abort_reason, engine.aborting_actor)
    finally:
        wall = time.perf_counter() - wall0
        for a in list(engine.actors):  # ranks, then helper actors (non-blocking collectives)
            if a.alive:
                try:
                    a.kill()
                except BaseException:  # noqa: BLE001 - teardown must not fail
                    pass
        coop.uninstall()
        green.uninstall()
        patches.uninstall()
        importer.uninstall()
        world.spawn_hook.restore_path()
        if chrome is not None:
            chrome.close()
        if paje is not None:
            paje.close()
        if progress_line is not None:
            progress_line.close()
        if power_trace is not None:
            power_trace.close()
        if world.ti is not None:
            world.ti.close()
        timing.finish()
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if message:
        err.write(message + ("\n" if not message.endswith("\n") else ""))
    procs = world.processes
    if report is not None:
        data = report.summary([p.actor.end_time if p.actor.end_time >= 0 else engine.now for p in procs])
        report.write(report_prefix, data)
        err.write(Report.table(data) + "\n")
    result = RunResult(
        script=str(script_path), np=np, platform=plat.name,
        hosts_used=len({p.host.index for p in procs}), status=status, exit_code=exit_code,
        makespan_s=engine.now, mpi_calls=sum(p.mpi_calls for p in procs), messages=world.messages,
        bytes_sent=world.bytes_sent, wall_s=wall, events=engine.events_processed, message=message,
        ranks=[RankResult(p.rank, p.host.name, p.actor.end_time if p.actor.end_time >= 0 else engine.now,
                          p.mpi_calls, p.bench.measured_s, p.bench.simulated_flops) for p in procs],
        output=session.captured, config={k: str(v) for k, v in config.explicit().items()},
        energy=_energy_report(world.energy, link_energy), spawned=len(procs) - np,
        peak_rss_bytes=_peak_rss(),
    )
    return result


def _peak_rss() -> int:
    """The process's peak resident set size in bytes (ru_maxrss is KiB on Linux, bytes on
    macOS); 0 where the resource module is missing."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class _SpawnHook:
    """Starts the processes of an MPI_Comm_spawn (``world.spawn_hook``, called by
    :func:`smpy.runtime.spawn.launch`): each gets its own isolated context like the initial
    ranks, connects to its parents (its MPI_Init, see :mod:`smpy.mpi.spawn`), then runs its
    Python program (a script, ``-m module`` or ``-c code``) in-process."""

    def __init__(self, world: World, timing: Timing, seed: int, builtins: Any, green: GreenThreads) -> None:
        self.green = green
        self.world = world
        self.timing = timing
        self.seed = seed
        self.builtins = builtins
        self.programs: dict[int, Any] = {}
        self.paths: list[str] = []

    def __call__(self, procs: list[Any], programs: list[Any]) -> None:
        for a, prog in zip(self.world.make_actors(procs, self._main), programs):
            p = a.data
            p.bench = RankBench()
            main = types.ModuleType("__main__")
            if prog.kind == "script":
                main.__file__ = prog.target
                path = os.path.dirname(os.path.abspath(prog.target))
            else:
                path = prog.wdir
            main.__builtins__ = self.builtins
            if path not in sys.path:
                sys.path.insert(1, path)
                self.paths.append(path)
            a.context = RankContext(p.rank, main, list(prog.argv), self.seed, p)
            self.programs[p.rank] = prog
            a.start()

    def _main(self, proc: Any) -> None:
        from smpy.mpi.spawn import child_connect

        proc.initialized = True
        timing = self.timing
        timing.restart(proc)
        child_connect(proc)
        prog = self.programs.pop(proc.rank)
        ctx = proc.actor.context
        try:
            if prog.kind == "module":
                runpy.run_module(prog.target, run_name="__main__", alter_sys=True)
            elif prog.kind == "code":
                exec(compile(prog.target, "<string>", "exec"), ctx.main.__dict__)
            else:
                with open(prog.target, encoding="utf-8") as f:
                    source = f.read()
                exec(compile(source, prog.target, "exec"), ctx.main.__dict__)
        except SystemExit as e:
            if e.code not in (None, 0):
                raise
        ctx.run_exit_funcs()
        self.green.end_of_rank(proc)
        timing.end_of_rank(proc)
        proc.finalized = True

    def restore_path(self) -> None:
        for path in self.paths:
            if path in sys.path:
                sys.path.remove(path)
        self.paths.clear()


def _energy_report(hosts: Any, links: Any) -> dict[str, Any] | None:
    if hosts is None and links is None:
        return None
    out: dict[str, Any] = {}
    if hosts is not None:
        out.update(hosts.report())
    if links is not None:
        out.update(links.report())
    return out


def _check_module(name: str) -> None:
    """Fail before the run, as ``python -m`` does, when the top-level package is missing
    (dotted names are resolved in each rank, whose imports of user packages are private)."""
    top = name.split(".")[0]
    if not name or any(not part.isidentifier() for part in name.split(".")):
        raise LookupError(f"No module named {name!r}")
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(top) is not None
    finally:
        sys.path[:] = saved
    if not found:
        raise LookupError(f"No module named {top!r}")


def _failure(world: World, exc: BaseException, actor: Any) -> tuple[str, int, str]:
    p = actor.data if actor is not None else None
    who = f"{_who(world, p)} (host {p.host.name})" if p is not None else "the simulation"
    t = world.engine.now
    if isinstance(exc, AbortCalled):
        return "abort", exc.errorcode, f"[smpy] MPI_Abort called by {who} with error code {exc.errorcode} at simulated time {t:.9g} s"
    if isinstance(exc, Stalled):
        return "stalled", 1, _stall_report(world, exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", 130, "[smpy] interrupted by the user (Ctrl-C)"
    if isinstance(exc, RoutingError):
        return "error", 2, f"[smpy] platform error while {who} communicated at simulated time {t:.9g} s: {exc}"
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else 1
        return "error", code, f"[smpy] {who} exited with status {exc.code} at simulated time {t:.9g} s; aborting the run"
    tb = _user_traceback(exc)
    tagged = "".join(f"[rank {p.rank}@{p.host.name}] {line}\n" if p else line + "\n" for line in tb.rstrip("\n").split("\n"))
    return "error", 1, f"{tagged}[smpy] {who} raised {type(exc).__name__} at simulated time {t:.9g} s; aborting the run (as MPI_Abort)"


def _deadlock_report(world: World, d: DeadlockError) -> str:
    lines = [f"[smpy] DEADLOCK at simulated time {d.now:.9g} s: every live rank is blocked and nothing can wake them."]
    for actor, what in d.blocked:
        p = actor.data
        lines.append(f"[smpy]   {_who(world, p)} (host {p.host.name}): blocked in {what}")
    done = [p.rank for p in world.processes if not p.actor.alive]
    if done:
        lines.append(f"[smpy]   finished ranks: {_ranges(done)}")
    return "\n".join(lines)


def _stall_report(world: World, st: Stalled) -> str:
    lines = [f"[smpy] STALL at simulated time {st.now:.9g} s: no progress for {st.seconds:.3g} s of wall "
             "time (no simulation event, no CPU used by the emulation or its child processes)."]
    for actor, what in st.blocked:
        p = actor.data
        name = f"{_who(world, p)} (host {p.host.name})" if p is not None and hasattr(p, "host") else actor.name
        if actor.name.startswith("rank ") and " thread " in actor.name:
            name += f", thread {actor.name.split(' thread ', 1)[1]}"
        lines.append(f"[smpy]   {name}: {'in' if actor is st.running else 'blocked in'} {what}")
    stuck = {id(a.data) for a, _ in st.blocked}
    waiting = [p.rank for p in world.processes if not p.actor.started and id(p) not in stuck]
    if waiting:
        lines.append(f"[smpy]   not started yet (the stalled call holds the emulation): ranks {_ranges(waiting)}")
    done = [p.rank for p in world.processes if p.actor.started and not p.actor.alive and id(p) not in stuck]
    if done:
        lines.append(f"[smpy]   finished ranks: {_ranges(done)}")
    lines.append("[smpy] (--cfg=smpy/stall-timeout:SECONDS sets the limit; 0 waits forever)")
    return "\n".join(lines)


def _who(world: World, p: Any) -> str:
    """``rank N``; spawned processes: their global number and their rank in their world."""
    cw = p.comm_world
    if cw is None or cw is world.initial_world:
        return f"rank {p.rank}"
    return f"spawned process {p.rank} (rank {cw.rank_of[p.rank]} of its MPI_COMM_WORLD)"


def _ranges(ranks: list[int]) -> str:
    out = []
    start = prev = ranks[0]
    for r in ranks[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(out)
