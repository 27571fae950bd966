"""Run an unmodified mpi4py program on a simulated platform (used by ``smpyrun`` and
:func:`smpy.run`)."""

from __future__ import annotations

import builtins
import contextlib
import gc
import importlib.util
import os
import runpy
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from smpy.cli import stops
from smpy.cli.outputs import check_file
from smpy.cli.rank_end import ABORT_ON_EXCEPTION, RankEnds, how_ended, tagged, user_traceback
from smpy.cli.rank_end import who as _who
from smpy.colls import dispatch as _dispatch  # noqa: F401 - declares the collective settings
from smpy.cpu.memory import OutOfMemory
from smpy.energy import HostEnergy
from smpy.energy.dvfs import Dvfs
from smpy.energy.host_energy import PowerTrace
from smpy.energy.link_energy import LinkEnergy
from smpy.kernel import accel
from smpy.kernel.actors import current_actor
from smpy.kernel.engine import DeadlockError
from smpy.kernel.watchdog import Stalled, Watchdog
from smpy.network.routing import RoutingError
from smpy.platform import default_platform, load_platform, parse_hostfile, place_ranks
from smpy.platform.failures import FAIL, FAILURE_MODELS, FAILURE_SEED, Injector, down_at, parse_fail
from smpy.runtime import fsio, ulfm
from smpy.runtime import memory as rank_memory
from smpy.runtime.constants import THREAD_MULTIPLE
from smpy.runtime.lifecycle import AbortCalled
from smpy.runtime.world import World
from smpy.shim import importer
from smpy.shim.blas import single_thread_blas
from smpy.shim.coop import Cooperative
from smpy.shim.fileio import FilePatches
from smpy.shim.green import GreenThreads
from smpy.shim.hugepages import numpy_hugepages, resolve
from smpy.shim.imports import ImportPatches
from smpy.shim.isolation import Patches, RankContext, RankExit
from smpy.shim.mpexit import ProcessExit
from smpy.support import memory
from smpy.support.config import Config, declare, parse_bool, parse_float, parse_int
from smpy.support.internal import SmpyInternalError
from smpy.support.memory import FORCE_MEMORY
from smpy.support.units import parse_size
from smpy.timing.bench import SIMULATE, RankBench, Timing
from smpy.trace.chrome import ChromeTracer
from smpy.trace.paje import PajeTracer
from smpy.trace.progress import Progress
from smpy.trace.report import Report, Tee
from smpy.trace.ti import TIRecorder
from smpy.trace.utilization import BIN as UTILIZATION_BIN
from smpy.trace.utilization import Utilization


def _yes_no_or(word: str) -> Callable[[object], str]:
    """A --cfg parser of ``word`` / yes / no, with the usual spellings of yes and no."""

    def parse(value: object) -> str:
        text = str(value).strip().lower()
        if text == word:
            return text
        try:
            return "yes" if parse_bool(text) else "no"
        except ValueError:
            raise ValueError(f"expected {word}, yes or no") from None

    return parse


_tristate = _yes_no_or("numpy")
_auto_yes_no = _yes_no_or("auto")


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
PREFAULT = declare("smpy/prefault-arrays", "auto", "Fault in at once (madvise MADV_POPULATE_WRITE) a numpy "
                   "array that malloc maps fresh (at or over the rank heap's mmap threshold, 128 KiB rising "
                   "to 32 MiB; not np.zeros), instead of page by page as the program first writes it: the "
                   "same pages, less system time; auto means yes when smpi/simulate-computation is off (a "
                   "rank's computation is then not timed), else no (smpy/shim/rankheap.py)", parse=_auto_yes_no)
RANK_HEAPS = declare("smpy/rank-heaps", True, "Give each rank a model of its own process's heap (glibc's "
                     "rules) for numpy arrays of 128 KiB or more: a rank finds warm pages where its real "
                     "process would and pays the page faults it would (smpy/shim/rankheap.py; needs a "
                     "C compiler at first use)", parse=parse_bool)
RANK_HEAPS_TOTAL = declare("smpy/rank-heaps-total", "1GiB", "Free memory all ranks' heaps may hold together; "
                           "beyond it new arrays come from the shared allocator and freed ones give their "
                           "pages back", parse=parse_size)
ACCEL = declare("smpy/accel", "auto", "The compiled accelerator of the per-message path (smpy/kernel/_accel.c "
                "and its siblings, the max-min solver's smpy/lmm/_lmmaccel.c included, built on first use with the system's C compiler into ~/.cache/smpy): auto (used when it can "
                "be built), on (required), off (the pure-Python reference path); when not given, the "
                "environment variable SMPY_ACCEL; the same results either way", choices=("auto", "on", "off"),
                parse=lambda v: str(v).strip().lower())
STALL_TIMEOUT = declare("smpy/stall-timeout", 60.0, "End the run with a report of every rank's pending "
                        "call when this many wall seconds pass without progress: no simulation event, "
                        "no CPU used by the emulation or its child processes (a rank in a real blocking "
                        "call, a wait for an outside event that never comes); 0 waits forever",
                        parse=parse_float)
PER_RANK_MODULES = declare("smpy/per-rank-modules", "", "Comma-separated modules or packages that each rank "
                            "imports for itself, in addition to the program's own modules, mpi4py.futures and "
                            "the modules that import mpi4py.MPI (smpy/shim/imports.py)")
SHARED_MODULES = declare("smpy/shared-modules", "", "Comma-separated modules or packages that all ranks share "
                         "(one copy imported once), even if they are the program's own or import mpi4py.MPI; "
                         "wins over smpy/per-rank-modules")
MPI_MODULES_PER_RANK = declare("smpy/mpi-modules-per-rank", True, "Installed modules that import mpi4py.MPI "
                               "(directly or through their imports) while being imported are per rank, so that "
                               "reading the rank at import works; no: they are shared (less memory)",
                               parse=parse_bool)
def _parse_plugins(text: Any) -> str:
    """``host_energy,link_energy``: every name known (one check for --cfg and a platform's
    ``config:``, whose error then names the file)."""
    names = [x.strip() for x in str(text).split(",") if x.strip()]
    unknown = sorted(set(names) - set(PLUGINS))
    if unknown:
        raise ValueError(f"unknown plugin(s) {', '.join(unknown)} (known: {', '.join(PLUGINS)})")
    return ",".join(names)


PLUGIN = declare("plugin", "", f"Plugins to load, comma-separated: {', '.join(PLUGINS)}",
                 parse=_parse_plugins)


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
    status: str  # ok | failed (a component failed, the job was aborted) | error | abort | deadlock | stalled | interrupted | timeout
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
    #: CPU time (user + system) of the emulating process, start-up included
    cpu_s: float = 0.0
    #: component failures and repairs: {time_s, kind, name, on}; ranks killed: rank -> time
    failures: list[dict[str, Any]] = field(default_factory=list)
    lost_ranks: dict[int, float] = field(default_factory=dict)
    #: simulated time at which the run started (a restart's, smpy.cli.restarts; else 0)
    start_time_s: float = 0.0
    #: the models the prediction rests on, set or default: network model, collective selector
    #: (SMPI's default selector is ``default``, smpy's ``ompi``: a comparison must pin both)
    models: dict[str, str] = field(default_factory=dict)
    #: whether the compiled accelerator of the per-message path ran (smpy/accel)
    accelerated: bool = False
    #: the compiled extensions of that path: name -> "on" or why not (empty when not asked for)
    accel_parts: dict[str, str] = field(default_factory=dict)

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
        """The lines smpyrun prints on stderr at the end of a run.

        The makespan is printed with nine significant digits, the precision of the simulation
        itself; with measured computation (the default), identical runs differ by the
        emulating machine's noise, about 4 % in makespan on a shared machine. For figures that
        repeat exactly, model the computation (``smpy.execute_flops``, ``smpy.execute``) and
        run with ``--cfg=smpi/simulate-computation:no``, or take medians over repetitions
        (``smpy predict --reps``); see ``docs/prediction.md``.
        """
        lines = [
            f"[smpy] simulated makespan: {self.makespan_s:.9g} s",
            f"[smpy] {self.np} ranks{f' (+{self.spawned} spawned)' if self.spawned else ''} on {self.hosts_used} hosts of platform '{self.platform}'; "
            f"{self.mpi_calls} MPI calls, {self.messages} messages ({self.bytes_sent:.6g} bytes)",
            f"[smpy] emulation wall time: {self.wall_s:.3f} s, CPU time {self.cpu_s:.3f} s ({self.events} events, accelerator "
            f"{'on' if self.accelerated else 'off'}{_partial(self.accel_parts) if self.accelerated else ''})",
        ]
        if self.models:
            lines.insert(2, "[smpy] models: " + ", ".join(f"{k}={v}" for k, v in self.models.items()))
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
        if self.failures:
            lines.append(f"[smpy] failures: {_failure_list(self.failures)}; lost ranks: "
                         f"{_ranges(sorted(self.lost_ranks)) if self.lost_ranks else 'none'}")
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


def _prefault(config: Config) -> bool:
    """Whether fresh malloc'ed arrays are faulted in at once (smpy/prefault-arrays): by default
    only when computation is not simulated, where the cost of a page fault cannot reach a
    prediction."""
    setting = config.get(PREFAULT)
    return not config.get(SIMULATE) if setting == "auto" else setting == "yes"


@contextlib.contextmanager
def _rank_heaps(config: Config, world: World):  # type: ignore[no-untyped-def]
    """Per-rank numpy heaps for the run (smpy/rank-heaps, see smpy.shim.rankheap); they count
    each rank's bytes when a host declares ``ram`` (smpy.runtime.memory)."""
    if not config.get(RANK_HEAPS):
        yield
        return
    from smpy.shim import isolation
    from smpy.shim.rankheap import Switcher

    switcher = Switcher(int(config.get(RANK_HEAPS_TOTAL)), _hugepage(config),
                        track=world.memory is not None, prefault=_prefault(config))
    if world.memory is not None:
        world.memory.heap_bytes = switcher.used
    isolation.rank_heaps = switcher
    try:
        yield
    finally:
        isolation.rank_heaps = None
        switcher.finish()


#: the cyclic collector's young threshold during a run (net allocations between two young
#: collections; see _young_gc_only)
YOUNG_GC_THRESHOLD = 100_000


@contextlib.contextmanager
def _young_gc_only():  # type: ignore[no-untyped-def]
    """Keep Python's cyclic garbage collector off the objects that live for the whole run.

    Every rank's module state, the platform and the suspended greenlets' frames are
    long-lived; full collections rescan all of them, and at thousands of ranks they were
    6-10 % of the emulation's time (py-spy on the ring at np 1024). Objects that exist when
    the simulation starts are frozen (never scanned, still freed by reference counting) and
    young collections run less often; cycles created during the run are still collected.
    Restored afterwards.

    The young threshold is YOUNG_GC_THRESHOLD (100 000) net allocations: it took Figure 12's
    3072-rank proxy (first 4 panels) from 493 young, 44 middle and 4 full collections (4.5 s
    of thread CPU, 5 % of the run) to 6-7 young ones (0.75-0.85 s). It was at 10 000 for a
    while: a program's ``multiprocessing.Pool`` stalled in 7 of 38 runs of
    tests/test_blocking.py with 100 000 (2 of 40 later). The cause was multiprocessing's
    exit handler, shared by the ranks (the first rank to end terminated the other's pool);
    smpy.shim.mpexit makes it per rank (docs/performance.md, the garbage collector).
    """
    threshold = gc.get_threshold()
    enabled = gc.isenabled()  # the command line starts with it off (smpy.cli._exit.run)
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_GC_THRESHOLD), *threshold[1:])
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if not enabled:
            gc.disable()


# -- the steps of a run -----------------------------------------------------------------------
@dataclass
class Program:
    """What every rank runs: a script's or a command's code, or a module (``python -m``)."""

    label: str  #: the program as the summary and the traces name it
    argv0: str  #: ``sys.argv[0]``
    path0: str  #: the first entry of ``sys.path``
    code: types.CodeType | None = None
    module: str | None = None
    #: what Python puts in ``__main__`` before the code runs (``__file__``, ``__spec__`` ...)
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class App:
    """One part of an MPMD run, as ``smpyrun -np 2 a.py x : -np 3 b.py y`` (and
    ``mpiexec -n 2 python a.py x : -n 3 python b.py y``): a program (a script, ``module`` as
    ``python -m`` or ``command`` as ``python -c``), its rank count and its arguments. The parts
    share one ``MPI_COMM_WORLD``, ranks numbered in the order of the parts; ``MPI.APPNUM`` of a
    rank is its part's index."""

    script: str | os.PathLike | None = None
    np: int = 1
    args: list[str] | tuple = ()
    module: str | None = None
    command: str | None = None


def load_parts(parts: list[App]) -> list[tuple[Program, list[str]]]:
    """Each part's program and ``sys.argv`` (checked before the run)."""
    if not parts:
        raise ValueError("an MPMD run needs at least one part")
    out = []
    for i, app in enumerate(parts):
        if not isinstance(app, App):
            raise ValueError(f"part {i}: expected smpy.App(script, np, args), got {type(app).__name__}")
        if not isinstance(app.np, int) or app.np < 1:
            raise ValueError(f"part {i}: np must be at least 1, got {app.np!r}")
        program = load_program(app.script, app.module, app.command)
        out.append((program, [program.argv0, *map(str, app.args)]))
    return out


def parts_label(parts: list[App], programs: list[tuple[Program, list[str]]]) -> str:
    """``a.py : b.py`` for an MPMD run, the program's label for one part."""
    if len(programs) == 1:
        return programs[0][0].label
    return " : ".join(f"-np {app.np} {prog.label}" for app, (prog, _) in zip(parts, programs))


def load_program(script: str | os.PathLike | None, module: str | None = None,
                 command: str | None = None) -> Program:
    """The program, as ``python script``, ``python -m module``, ``python -c command`` or
    ``python DIR`` (which runs ``DIR/__main__.py`` with ``DIR`` first on ``sys.path``)."""
    if (script is not None) + (module is not None) + (command is not None) != 1:
        raise ValueError("give exactly one of a script, a module (-m) or a command (-c)")
    if module is not None:
        _check_module(module)
        return Program(f"-m {module}", "-m", os.getcwd(), module=module)
    if command is not None:
        return Program("-c", "-c", os.getcwd(), code=compile(command, "<string>", "exec"))
    given = os.fspath(script)  # type: ignore[arg-type]
    code, attrs = _script(given)
    path0 = (attrs["__file__"].rpartition(os.sep)[0] if attrs["__spec__"] is not None
             else os.path.dirname(os.path.realpath(given)))
    return Program(given, given, path0, code=code, attrs=attrs)


def _script_attrs(path: str) -> dict[str, Any]:
    """What Python puts in ``__main__`` for ``python FILE``: ``__file__`` absolute (since
    Python 3.9) but not normalised, a source loader, no ``__spec__``, no package, no
    ``__cached__``."""
    import importlib.machinery

    file = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    return {"__file__": file, "__loader__": importlib.machinery.SourceFileLoader("__main__", file),
            "__spec__": None, "__package__": None, "__cached__": None}


def _is_zipfile(path: str) -> bool:
    """zipfile.is_zipfile, importing zipfile (and with it shutil, bz2, lzma: 1.3 MB) only for
    a file that holds the signature of a zip file's end record in its last 64 KiB."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - (1 << 16) - 22))
            if b"PK\x05\x06" not in fh.read():
                return False
    except OSError:
        return False
    import zipfile

    return zipfile.is_zipfile(path)


def _script(path: str) -> tuple[types.CodeType, dict[str, Any]]:
    """The code and ``__main__`` attributes of ``python PATH``: a source file, or a directory
    or zip file holding a ``__main__`` module, run as Python runs it (``__spec__`` named
    ``__main__``, ``__file__`` inside the directory, which is ``sys.path[0]``)."""
    import importlib.machinery

    if os.path.isdir(path) or (os.path.isfile(path) and _is_zipfile(path)):
        where = os.path.abspath(path)
        spec = importlib.machinery.PathFinder.find_spec("__main__", [where])
        if spec is None or spec.loader is None:
            raise FileNotFoundError(f"can't find '__main__' module in '{path}'")
        code = spec.loader.get_code("__main__")  # type: ignore[attr-defined]
        return code, {"__file__": spec.origin, "__loader__": spec.loader, "__spec__": spec, "__package__": "",
                      "__cached__": spec.cached}
    with open(path, encoding="utf-8") as f:
        source = f.read()
    attrs = _script_attrs(path)
    return compile(source, attrs["__file__"], "exec"), attrs


def _main_module(attrs: dict[str, Any] | None) -> types.ModuleType:
    """A rank's ``__main__`` module, with ``attrs`` and the ``builtins`` module as its
    ``__builtins__`` (as in a real ``__main__``)."""
    main = types.ModuleType("__main__")
    if attrs:
        main.__dict__.update(attrs)
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    return main


def _run_module_as_main(name: str) -> None:
    """``python -m name``: runpy's own entry for it (the module's code runs in the rank's
    ``__main__``, a package runs its ``__main__`` submodule), or run_module where missing."""
    run = getattr(runpy, "_run_module_as_main", None)
    if run is not None:
        run(name, alter_argv=True)
    else:  # pragma: no cover - every CPython 3 has it
        runpy.run_module(name, run_name="__main__", alter_sys=True)


def check_outputs(trace: str | os.PathLike | None, config: Config) -> None:
    """Every file the run will write can be written (before the run, not after it)."""
    check_file(trace, "--trace")
    check_file(str(config.get(TRACE_TI)), "--trace-ti")
    check_file(str(config.get(POWER_TRACE)), "--power-trace")
    prefix = str(config.get(REPORT))
    if prefix:
        check_file(prefix + ".json", "--report")


def load_setup(platform: str | os.PathLike | None, cfg: dict[str, Any] | None,
               hostfile: str | os.PathLike | list[str] | None, np: int) -> tuple[Any, Config, list[Any]]:
    """The platform, the configuration (the command line's, then the platform's ``config:``)
    and the host of each rank."""
    config = Config(cfg or {})
    memory.insist(config.get(FORCE_MEMORY))
    plat = load_platform(platform) if platform is not None else default_platform()
    memory.check_fits(f"-np {np} on platform {plat.name!r}", np, len(plat.hosts), len(plat.links))
    config.set_defaults_from(plat.config or {}, plat.source)
    if isinstance(hostfile, (list, tuple)):  # a host list (smpyrun -hosts), as a hostfile's entries
        return plat, config, place_ranks(plat, np, list(hostfile), source="-hosts")
    hosts = parse_hostfile(hostfile) if hostfile is not None else None
    return plat, config, place_ranks(plat, np, hosts, source=os.fspath(hostfile or "hostfile"))


@dataclass
class Attached:
    """The plugins and tracers of a run, closed after it."""

    link_energy: LinkEnergy | None = None
    power_trace: PowerTrace | None = None
    chrome: ChromeTracer | None = None
    paje: PajeTracer | None = None
    report: Report | None = None
    report_prefix: str = ""
    utilization: Utilization | None = None
    progress: Progress | None = None

    def close(self) -> None:
        for item in (self.chrome, self.paje, self.progress, self.power_trace):
            if item is not None:
                item.close()


def _host_energy(world: World, plat: Any, config: Config, att: Attached) -> None:
    world.energy = HostEnergy(world.engine, world.cpu, plat.hosts)


def _host_dvfs(world: World, plat: Any, config: Config, att: Attached) -> None:
    world.dvfs = Dvfs(world.engine, world.cpu, plat.hosts, config)


def _link_energy(world: World, plat: Any, config: Config, att: Attached) -> None:
    att.link_energy = LinkEnergy(world.engine, world.net, plat.links)


#: ``--cfg=plugin:NAME`` -> what loading the plugin attaches to the run (as SimGrid's plugin
#: table; loaded in this order)
PLUGIN_TABLE: dict[str, Callable[[World, Any, Config, Attached], None]] = {
    "host_energy": _host_energy, "host_dvfs": _host_dvfs, "link_energy": _link_energy}
assert tuple(PLUGIN_TABLE) == PLUGINS


def requested_plugins(config: Config) -> set[str]:
    plugins = {x.strip() for x in str(config.get(PLUGIN)).split(",") if x.strip()}
    if str(config.get(POWER_TRACE)):
        plugins.add("host_energy")
    unknown = plugins - set(PLUGIN_TABLE)
    if unknown:
        raise ValueError(f"unknown plugin(s) {', '.join(sorted(unknown))} in --cfg=plugin "
                         f"(known: {', '.join(PLUGIN_TABLE)})")
    return plugins


def attach_plugins(world: World, plat: Any, config: Config, placement: list[Any], err: Any) -> Attached:
    att = Attached()
    plugins = requested_plugins(config)
    for name, attach in PLUGIN_TABLE.items():
        if name in plugins:
            attach(world, plat, config, att)
    if "host_energy" in plugins:
        _warn_no_power(placement, err)
    power_trace_path = str(config.get(POWER_TRACE))
    if power_trace_path:
        att.power_trace = PowerTrace(power_trace_path, world.energy)
    return att


def _warn_no_power(placement: list[Any], err: Any) -> None:
    """The energy of a host without a power profile is 0 J: say which hosts those are."""
    used = list(dict.fromkeys(placement))
    missing = [h.name for h in used if not h.properties.get("wattage_per_state")]
    if not missing:
        return
    names = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    err.write(f"[smpy] warning: energy: no power profile (wattage_per_state) for {len(missing)} of "
              f"the {len(used)} hosts the ranks use ({names}); their energy counts as 0 J\n")


def attach_tracers(world: World, config: Config, att: Attached, trace: str | os.PathLike | None,
                   label: str, placement: list[Any], capture: bool, err: Any) -> None:
    """The timeline trace (Chrome or Paje), the time-independent trace, the report and the
    progress line."""
    plat, np = world.platform, len(placement)
    ti_path = str(config.get(TRACE_TI))
    if ti_path:
        world.ti = TIRecorder(ti_path, np)
    if trace is not None:
        if trace_format(str(trace), str(config.get(TRACE_FORMAT))) == "paje":
            lifecycle = any(p.initial == "off" or p.boot_time or p.shutdown_time for p in world.nodes.profiles)
            att.paje = PajeTracer(str(trace), world.engine, world.cpu, plat, placement, world.energy,
                                  f"smpy: {label} on {np} ranks, platform {plat.name}", procs=world.processes,
                                  nodes=world.nodes, nodes_from_start=lifecycle)
        else:
            att.chrome = ChromeTracer(str(trace), world.engine, world.cpu, plat.hosts, placement, world.processes)
            att.chrome.watch_nodes(world.nodes)
    att.report_prefix = str(config.get(REPORT))
    if att.report_prefix:
        att.report = Report(world.engine, world.cpu, np)
        att.report.follower = att.utilization = Utilization(world.engine, world.cpu, plat.hosts,
                                                            world.processes, world.energy, world.nodes)
    tracers = [t for t in (att.chrome, att.paje, att.report) if t is not None]
    world.tracer = Tee(*tracers) if len(tracers) > 1 else (tracers[0] if tracers else None)
    progress = config.get(PROGRESS)
    if progress == "yes" or (progress == "auto" and not capture and err.isatty()):
        att.progress = Progress(world, err)


class _Launch:
    """The ranks of one run, the process-wide patches while they run, and the outcome."""

    def __init__(self, world: World, timing: Timing, programs: list[tuple[Program, list[str]]],
                 att: Attached, config: Config, session: Session) -> None:
        self.world, self.timing, self.att = world, timing, att
        #: the program of each part (MPMD) and its sys.argv; a rank runs its part's
        #: (``proc.appnum``), or the one :meth:`program_of` gives
        self.programs = programs
        self.config = config
        self.session = session
        self.accel_mode = accel_mode(config)
        self.accelerated = False
        self.green = GreenThreads()
        #: the ranks that ended early (sys.exit(n != 0), an uncaught exception)
        self.ends = RankEnds(world, bool(config.get(ABORT_ON_EXCEPTION)))
        self.seed = seed = config.get(SEED)
        self.actors = world.spawn(self._rank_main)
        world.spawn_hook = _SpawnHook(world, timing, seed, self.green, self)
        for a in self.actors:
            p = a.data
            program, argv = programs[p.appnum]
            a.context = RankContext(p.rank, _main_module(program.attrs), list(argv), seed, p)

    def program_of(self, proc: Any) -> Program:
        """The program ``proc`` runs."""
        return self.programs[proc.appnum][0]

    def _rank_main(self, proc: Any) -> None:
        world, timing, paje = self.world, self.timing, self.att.paje
        program = self.program_of(proc)
        proc.initialized = True  # mpi4py initialises MPI at import; smpy at rank start
        proc.thread_level = THREAD_MULTIPLE  # mpi4py's default rc.thread_level, which MPICH provides
        ctx = proc.actor.context
        if world.ti is not None:
            world.ti.line(proc.rank, "init")
        if paje is not None:
            paje.rank_start(proc.rank)
        timing.restart(proc)
        exit_funcs = True
        try:
            if program.code is None:
                # python -m: the module runs in the rank's __main__, sys.argv[0] its file
                _run_module_as_main(program.module)  # type: ignore[arg-type]
            else:
                # exec(program.code, ctx.main.__dict__), as a call of a function made of the
                # module's code: CPython (3.11 on) runs its frame in this one's C frame (its
                # locals are the globals, as exec's; exec adds __builtins__ when absent, so
                # does this), while exec enters a C evaluation frame of its own, about 500
                # bytes of C stack more below every blocking call of the rank, which greenlet
                # copies out and back at each of the rank's switches (docs/performance.md,
                # "The C stack copied at each switch")
                g = ctx.main.__dict__
                if "__builtins__" not in g:
                    g["__builtins__"] = builtins.__dict__
                types.FunctionType(program.code, g)()
        except BaseException as e:  # noqa: BLE001 - sorted out (the run's own are re-raised)
            exit_funcs = how_ended(self, proc, e)
        if exit_funcs:
            ctx.run_exit_funcs()  # the program's atexit handlers, while MPI still works
            self.ends.abort_at_exit(proc)  # python -m mpi4py after an uncaught exception
        self.green.end_of_rank(proc)
        timing.end_of_rank(proc)
        if world.ti is not None:
            world.ti.line(proc.rank, "finalize")
        if paje is not None:
            paje.rank_end(proc.rank)
        proc.finalized = exit_funcs

    def nonzero_exit(self, proc: Any, e: SystemExit) -> None:
        """``sys.exit(n)`` with ``n`` not 0 (pytest's exit when a test failed): the rank ends
        here, after its exit handlers (mpi4py finalizes MPI at exit), and the other ranks run
        on, as under mpiexec, which reports the statuses when every process has ended (a
        rank that then waits for this one is in a deadlock; smpy.cli.rank_end). The rank's
        computation up to the exit is simulated first: the report gives the time it ended."""
        self.timing.flush(proc)
        self.ends.exited(proc, e)

    def uncaught(self, proc: Any, e: BaseException) -> None:
        """An uncaught exception of the program: the rank prints its traceback and ends with
        status 1, the others run on, as under mpiexec (smpy.cli.rank_end)."""
        self.timing.flush(proc)
        self.ends.uncaught(proc, e)

    def simulate(self, sim_timeout: float | None) -> tuple[str, int, str]:
        """Start the ranks and run the simulation; (status, exit code, message)."""
        world, engine, config = self.world, self.world.engine, self.config
        try:
            for a in self.actors:
                a.start()
            with _young_gc_only(), numpy_hugepages(_hugepage(config)), _rank_heaps(config, world), \
                    stops.simulating(), Watchdog(engine, config.get(STALL_TIMEOUT)), self._accelerated():
                self.run_engine(sim_timeout)
        except DeadlockError as d:
            exited = "\n" + self.ends.report()[2] if self.ends.ended else ""
            return "deadlock", 1, _deadlock_report(world, d) + exited
        except Stalled as st:
            return "stalled", 1, _stall_report(world, st)
        except KeyboardInterrupt as k:
            return _stopped(k)
        if engine.abort_reason is not None:
            return _failure(world, engine.abort_reason, engine.aborting_actor)
        alive = [p.rank for p in world.processes if p.actor.alive]
        if sim_timeout is not None and alive:
            return "timeout", 124, (f"[smpy] simulated-time limit of {sim_timeout:g} s reached "
                                    f"(--sim-timeout); ranks {_ranges(alive)} had not finished")
        if self.ends.ended:
            return self.ends.report()
        return "ok", 0, ""

    @contextlib.contextmanager
    def _accelerated(self):  # type: ignore[no-untyped-def]
        """The compiled per-message path in place for the run when smpy/accel allows it."""
        before = accel.active()
        self.accelerated = accel.use(self.accel_mode != "off")
        try:
            yield
        finally:
            accel.use(before)

    def run_engine(self, sim_timeout: float | None) -> None:
        """The simulation loop (``smpy batch`` resumes it after a job's deadlock)."""
        self.world.engine.run(sim_timeout)

    def run(self, sim_timeout: float | None) -> tuple[str, int, str, float]:
        """:meth:`simulate` with the patches installed, then the teardown; adds the wall time."""
        config = self.config
        patches = Patches(self.session, defer_numpy_random=not config.get(SIMULATE))
        import_patches = ImportPatches(_names(config.get(PER_RANK_MODULES)), _names(config.get(SHARED_MODULES)),
                                       bool(config.get(MPI_MODULES_PER_RANK)))
        saved_main = sys.modules.get("__main__")
        importer.install()
        patches.install()
        import_patches.install()
        files = FilePatches(self.session)
        files.install()
        self.green.install()
        coop = Cooperative()
        coop.install()
        mp_exit = ProcessExit()
        mp_exit.install()
        for path in reversed(list(dict.fromkeys(prog.path0 for prog, _ in self.programs))):
            sys.path.insert(0, path)  # each part's directory (the first part's first)
        wall0 = time.perf_counter()
        try:
            status, exit_code, message = self.simulate(sim_timeout)
        finally:
            wall = time.perf_counter() - wall0
            for a in list(self.world.engine.actors):  # ranks, then helper actors (non-blocking collectives)
                if a.alive:
                    try:
                        a.kill()
                    except BaseException:  # noqa: BLE001 - teardown must not fail
                        pass
            self.ends.restore()
            mp_exit.uninstall()
            coop.uninstall()
            self.green.uninstall()
            files.uninstall()
            import_patches.uninstall()
            patches.uninstall()
            importer.uninstall()
            self.world.spawn_hook.restore_path()
            self.att.close()
            if self.world.ti is not None:
                self.world.ti.close()
            self.timing.finish()
            if saved_main is not None:
                sys.modules["__main__"] = saved_main
        return status, exit_code, message, wall


def arm_failures(world: World, plat: Any, config: Config) -> Injector:
    """The failure step: ULFM bookkeeping, the platform's failure models and ``--fail``
    (docs/failures.md)."""
    ulfm.install(world, float(config.get(ulfm.DETECTION_DELAY)), bool(config.get(ulfm.AUTO_CLEANUP)))
    injector = Injector(world.engine, world.cpu, world.net, plat, int(config.get(FAILURE_SEED)))
    forced = parse_fail(str(config.get(FAIL)))
    if config.get(FAILURE_MODELS):
        injector.arm()
    for name, t in forced:
        injector.force(name, t)
    world.injector = injector  # smpy.set_host_on records through it
    return injector


def place_survivors(plat: Any, config: Config, placement: list[Any], np: int, start_time: float) -> list[Any]:
    """The ranks of a restart at ``start_time``, round-robin over the hosts of ``placement``
    that are up then (smpy.platform.failures.down_at)."""
    down = down_at(plat, int(config.get(FAILURE_SEED)), parse_fail(str(config.get(FAIL))), start_time)
    hosts = [h for h in dict.fromkeys(placement) if h.name not in down]
    if not hosts:
        raise ValueError(f"no host left to restart on at simulated time {start_time:.9g} s "
                         f"(down: {', '.join(sorted(down))})")
    return [hosts[r % len(hosts)] for r in range(np)]


def _failure_list(failures: list[dict[str, Any]]) -> str:
    shown = [f"{f['kind']} {f['name']} {'repaired' if f['on'] else 'failed'} at {f['time_s']:.9g} s"
             for f in failures[:5]]
    return ", ".join(shown) + (f" (+{len(failures) - 5} more)" if len(failures) > 5 else "")


def accel_mode(config: Config) -> str:
    """The run's smpy/accel mode (given, else ``$SMPY_ACCEL``, else auto); ``on`` when the
    compiled path cannot be built is an error naming why."""
    mode = accel.resolve(config.explicit().get(ACCEL.name) and str(config.get(ACCEL)))
    if mode == "on" and accel.load() is None:
        raise ValueError(f"smpy/accel:on: the compiled accelerator is not available: {accel.why()}")
    return mode


def build_result(world: World, np: int, label: str, outcome: tuple[str, int, str, float],
                 att: Attached, session: Session, config: Config, accelerated: bool = False) -> RunResult:
    status, exit_code, message, wall = outcome
    procs, engine = world.processes, world.engine
    ends = [p.actor.end_time if p.actor.end_time >= 0 else engine.now for p in procs]
    return RunResult(
        script=label, np=np, platform=world.platform.name,
        hosts_used=len({p.host.index for p in procs}), status=status, exit_code=exit_code,
        makespan_s=engine.now, mpi_calls=sum(p.mpi_calls for p in procs), messages=world.messages,
        bytes_sent=world.bytes_sent, wall_s=wall, events=engine.events_processed, message=message,
        ranks=[RankResult(p.rank, p.host.name, end, p.mpi_calls, p.bench.measured_s,
                          p.bench.simulated_flops) for p, end in zip(procs, ends)],
        output=session.captured, config={k: str(v) for k, v in config.explicit().items()},
        energy=_energy_report(world.energy, att.link_energy), spawned=len(procs) - np,
        peak_rss_bytes=_peak_rss(), cpu_s=_cpu_s(),
        failures=[{"time_s": f.time, "kind": f.kind, "name": f.name, "on": f.on} for f in world.injector.log],
        lost_ranks=dict(sorted(world.ft.dead.items())), start_time_s=world.start_time,
        models={name: str(config.get(name)) for name in MODEL_SETTINGS}, accelerated=accelerated,
        accel_parts=accel.parts() if accelerated else {},
    )


def _partial(parts: dict[str, str]) -> str:
    """``", but X off: why"`` for the compiled extensions that did not load (a partial path)."""
    off = [f"{name} off: {why}" for name, why in parts.items() if why != "on"]
    return f", but {'; '.join(off)}" if off else ""


#: the settings every summary names (the models a prediction rests on)
MODEL_SETTINGS = ("network/model", "smpi/coll-selector")


def run(script: str | os.PathLike | None, np: int = 4, platform: str | os.PathLike | None = None,
        cfg: dict[str, Any] | None = None, args: list[str] | tuple = (), hostfile: str | os.PathLike | None = None,
        capture: bool = False, echo: bool = True, err_stream: Any = None,
        trace: str | os.PathLike | None = None, module: str | None = None,
        command: str | None = None, sim_timeout: float | None = None, start_time: float = 0.0,
        parts: list[App] | None = None) -> RunResult:
    """Run ``script`` with ``np`` simulated ranks; see :class:`RunResult`.

    Instead of a script, ``module`` runs a module as ``python -m module`` does (each rank
    runs it with :func:`runpy.run_module`, ``sys.argv[0]`` its file, the working directory
    first on ``sys.path``) and ``command`` a program text as ``python -c command``
    (``sys.argv[0] == "-c"``); a script that is a directory runs its ``__main__.py``.
    ``sim_timeout`` stops the run at that simulated time (status ``timeout``, exit code 124).
    ``parts`` (a list of :class:`App`) runs several programs in one ``MPI_COMM_WORLD`` (MPMD, as
    ``mpiexec -n 2 python a.py : -n 3 python b.py``); ``np`` is then their sum and ``script``,
    ``module``, ``command`` and ``args`` are not given.

    The steps: load the program, the platform and configuration; attach the plugins and
    tracers; start the ranks and simulate; classify how it ended; build the result.
    """
    err = err_stream if err_stream is not None else sys.stderr
    single_thread_blas()
    import smpy.mpi  # noqa: F401 - loads numpy before the rank contexts take their generators
    if parts is not None:
        if script is not None or module is not None or command is not None or args:
            raise ValueError("give either parts (MPMD) or one program with its arguments, not both")
        programs = load_parts(parts)
        np = sum(app.np for app in parts)
        appnums = [i for i, app in enumerate(parts) for _ in range(app.np)]
        label = parts_label(parts, programs)
    if np < 1:
        raise ValueError(f"np must be at least 1, got {np}")
    if sim_timeout is not None and not sim_timeout > 0:
        raise ValueError(f"the simulated-time limit must be positive, got {sim_timeout}")
    if parts is None:
        program = load_program(script, module, command)
        programs = [(program, [program.argv0, *map(str, args)])]
        label = program.label
    plat, config, placement = load_setup(platform, cfg, hostfile, np)
    if parts is None:  # after load_setup, which refuses an np the platform cannot place
        appnums = [0] * np
    if start_time > 0.0:  # a restart (smpy.cli.restarts): on the hosts up at that time
        placement = place_survivors(plat, config, placement, np, start_time)
    check_outputs(trace, config)
    world = World(plat, config, placement)
    world.engine.now = world.start_time = start_time
    rank_memory.install(world)
    timing = Timing(world, config)
    att = attach_plugins(world, plat, config, placement, err)
    attach_tracers(world, config, att, trace, label, placement, capture, err)
    arm_failures(world, plat, config)
    session = Session(world, timing, echo, capture)
    for p, appnum in zip(world.processes, appnums):
        p.appnum = appnum
    launch = _Launch(world, timing, programs, att, config, session)
    outcome = launch.run(sim_timeout)
    message = outcome[2]
    if message:
        err.write(message + ("\n" if not message.endswith("\n") else ""))
    if att.report is not None:
        data = att.report.summary([p.actor.end_time if p.actor.end_time >= 0 else world.engine.now
                                   for p in world.processes])
        io_data = fsio.report(world)
        if io_data:
            data["io"] = io_data
        mem_data = rank_memory.report(world)
        if mem_data:
            data["memory"] = mem_data
        att.report.write(att.report_prefix, data)
        err.write(Report.table(data) + "\n")
        if att.utilization is not None:
            rows = att.utilization.write(f"{att.report_prefix}.utilization.csv", config.get(UTILIZATION_BIN))
            err.write(Utilization.summary_line(rows) + "\n")
        if io_data:
            err.write(fsio.summary_line(io_data) + "\n")
        if mem_data:
            err.write(rank_memory.summary_line(mem_data) + "\n")
    return build_result(world, np, label, outcome, att, session, config, launch.accelerated)


def _names(text: object) -> tuple[str, ...]:
    """The module names of a comma-separated setting."""
    return tuple(x.strip() for x in str(text).split(",") if x.strip())


def _cpu_s() -> float:
    """This process's CPU time so far (user + system), in seconds (process_time where the
    resource module is missing)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return time.process_time()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


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

    def __init__(self, world: World, timing: Timing, seed: int, green: GreenThreads, launch: _Launch) -> None:
        self.green = green
        self.launch = launch
        self.world = world
        self.timing = timing
        self.seed = seed
        self.programs: dict[int, Any] = {}
        self.paths: list[str] = []

    def __call__(self, procs: list[Any], programs: list[Any]) -> None:
        for a, prog in zip(self.world.make_actors(procs, self._main), programs):
            p = a.data
            p.bench = RankBench()
            if prog.kind == "script":
                main = _main_module(_script_attrs(prog.target))
                path = os.path.dirname(os.path.realpath(prog.target))
            else:
                main = _main_module(None)
                path = prog.wdir
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
        exit_funcs = True
        try:
            if prog.kind == "module":
                runpy.run_module(prog.target, run_name="__main__", alter_sys=True)
            elif prog.kind == "code":
                exec(compile(prog.target, "<string>", "exec"), ctx.main.__dict__)
            else:
                with open(prog.target, encoding="utf-8") as f:
                    source = f.read()
                exec(compile(source, prog.target, "exec"), ctx.main.__dict__)
        except BaseException as e:  # noqa: BLE001 - as for the initial ranks
            exit_funcs = how_ended(self.launch, proc, e)
        if exit_funcs:
            ctx.run_exit_funcs()
            self.launch.ends.abort_at_exit(proc)
        self.green.end_of_rank(proc)
        timing.end_of_rank(proc)
        proc.finalized = exit_funcs

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
    if isinstance(exc, OutOfMemory):
        return "oom", OOM_EXIT, _oom_message(world, exc)
    if isinstance(exc, AbortCalled):
        why = f" ({exc.reason})" if exc.reason else ""
        return "abort", exc.errorcode, (f"[smpy] MPI_Abort called by {who} with error code {exc.errorcode} at "
                                        f"simulated time {t:.9g} s{why}")
    if isinstance(exc, Stalled):
        return "stalled", 1, _stall_report(world, exc)
    if isinstance(exc, KeyboardInterrupt):
        return _stopped(exc)
    if isinstance(exc, ulfm.ProcessFailure):
        return "failed", FAILED_EXIT, _process_failure(world, exc)
    if isinstance(exc, RankExit):
        return "error", exc.status or 1, (f"[smpy] {who} called os._exit({exc.status}) at simulated time "
                                          f"{t:.9g} s; the run ends (mpiexec ends the job when a process exits)")
    if isinstance(exc, RoutingError):
        return "error", 2, f"[smpy] platform error while {who} communicated at simulated time {t:.9g} s: {exc}"
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else 1
        return "error", code, f"[smpy] {who} exited with status {exc.code} at simulated time {t:.9g} s; aborting the run"
    if isinstance(exc, SmpyInternalError):  # smpy's own frames are the point here: keep them
        tb = "".join(traceback.format_exception(exc))
        return "error", 1, (f"{tb}[smpy] internal error of smpy (a bug of smpy, not of the program; please "
                            f"report it with this traceback) while running {who} at simulated time {t:.9g} s")
    tb = user_traceback(exc)
    text = tagged(p, tb) if p is not None else tb
    return "error", 1, (f"{text}[smpy] {who} raised {type(exc).__name__} at simulated time {t:.9g} s; aborting the "
                        "run (as MPI_Abort)")


#: exit status of a job whose process the kernel's OOM killer ended (128 + SIGKILL)
OOM_EXIT = 137


def _oom_message(world: World, exc: OutOfMemory) -> str:
    """One line: the host, its memory, the ranks and what each held."""
    def size(b: float) -> str:
        for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20)):
            if b >= scale:
                return f"{b / scale:.4g} {unit}"
        return f"{b / 1024:.4g} KiB"
    held = ", ".join(f"rank {r} {size(b)}" for r, b in sorted(exc.per_rank.items()))
    return (f"[smpy] OUT OF MEMORY: host {exc.host} (ram {size(exc.ram)} + swap {size(exc.swap)}) "
            f"ran out of memory at simulated time {world.engine.now:.9g} s: its ranks "
            f"{_ranges(exc.ranks)} held {size(exc.used)} ({held}); the job was killed as by the "
            f"kernel's OOM killer (exit status {OOM_EXIT})")


def _stopped(exc: KeyboardInterrupt) -> tuple[str, int, str]:
    """A :class:`smpy.cli.stops.Stop` (a signal or the wall-clock limit), or Ctrl-C."""
    if isinstance(exc, stops.Stop):
        return exc.status, exc.exit_code, exc.message
    return "interrupted", 130, "[smpy] interrupted by the user (Ctrl-C)"


#: exit status of a job aborted because a process died (Hydra reports the dead process's
#: status; a process killed by SIGKILL exits with 128 + 9)
FAILED_EXIT = 137


def _process_failure(world: World, exc: ulfm.ProcessFailure) -> str:
    """Hydra's report of a job whose process died, with the simulated facts."""
    if exc.cause:
        return (f"[smpy] FAILURE: {exc.cause}; the job was aborted at {exc.time:.9g} s (detection delay "
                f"{world.ft.delay:.3g} s), the simulated time reached; lost ranks: "
                f"{_ranges(sorted(exc.lost)) if exc.lost else 'none'}")
    lost = sorted(exc.lost)
    first = min(exc.lost.values())
    hosts = sorted({world.processes[r].host.name for r in lost})
    bar = "=" * 83
    return "\n".join([
        bar, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
        f"=   RANKS {_ranges(lost)} RUNNING AT {', '.join(hosts)}",
        "=   EXIT CODE: 9 (killed: their host failed)", "=   CLEANING UP REMAINING PROCESSES", bar,
        f"[smpy] FAILURE: host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)} failed at simulated time "
        f"{first:.9g} s; lost ranks {_ranges(lost)}; the job was aborted at {exc.time:.9g} s "
        f"(detection delay {world.ft.delay:.3g} s), the simulated time reached",
    ])


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
        if " thread " in actor.name:
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
