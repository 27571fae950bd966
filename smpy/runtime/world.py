"""The simulated MPI world: engine, models, processes (ranks) and their communicators.

A :class:`World` is built once per run from a platform, a configuration and a placement
(host of each rank). Each MPI process is a :class:`Process` attached to a kernel actor
(``actor.data``). Upper layers find the running process with :func:`current`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smpy.cpu.model import CpuModel
from smpy.kernel import accel as _accel
from smpy.kernel import actors as _actors
from smpy.kernel.actors import Actor, current_actor
from smpy.kernel.engine import Engine
from smpy.network.model import NAMED_MODELS, NetworkConfig, NetworkModel
from smpy.runtime import errors
from smpy.runtime.nodes import NodePool
from smpy.support import cext
from smpy.support.config import (
    Config,
    bounded_float,
    bounded_int,
    declare,
    optional,
    parse_bool,
)
from smpy.support.piecewise import Piecewise

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.runtime.comm import CommImpl



def _factors(*, zero: bool) -> Callable[[Any], Any]:
    """A factor table ``bound:factor;...`` whose factors are > 0 (>= 0 with ``zero``)."""
    def parse(text: Any) -> Piecewise:
        table = Piecewise.parse_factors(str(text))
        values = [a for _, a, _ in table.sections] or [table.default]
        for value in values:
            if value < 0 or (value == 0 and not zero):
                raise ValueError(f"factor {value:g} in {text!r}: expected factors "
                                 f"{'of 0 or more' if zero else 'greater than 0'}")
        return table
    return optional(parse)


def _overheads(text: Any) -> str:
    """An overhead table ``minsize:startup:perbyte;...`` of non-negative times."""
    table = Piecewise.parse_affine(str(text))
    for bound, a, b in table.sections or ((0.0, table.default, 0.0),):
        if a < 0 or b < 0:
            raise ValueError(f"section from {bound:g} bytes of {text!r}: expected a startup "
                             "time and a per-byte time of 0 or more")
    return str(text)


NETWORK_MODEL = declare("network/model", "SMPI", "Network model: SMPI, LV08, CM02 or raw",
                        choices=tuple(NAMED_MODELS))
LAT_FACTOR = declare("network/latency-factor", "", "Latency factors 'bound:factor;...' (default: the model's)",
                     aliases=("smpi/lat-factor",), parse=_factors(zero=True))
BW_FACTOR = declare("network/bandwidth-factor", "", "Bandwidth factors 'bound:factor;...' (default: the model's)",
                    aliases=("smpi/bw-factor",), parse=_factors(zero=False))
WEIGHT_S = declare("network/weight-S", "", "RTT-unfairness weight S (default: the model's)",
                   parse=optional(bounded_float(0.0)))
CROSSTRAFFIC = declare("network/crosstraffic", "", "Model the reverse (ACK) traffic of each flow on the reverse "
                       "route at 5 % (default: yes, except for the raw model)",
                       parse=optional(parse_bool))
TCP_GAMMA = declare("network/TCP-gamma", "", "TCP window size in bytes (default: the model's; 0 disables)",
                    parse=optional(bounded_float(0.0)))
DETACHED = declare("smpi/send-is-detached-thresh", 65536,
                   "Sends smaller than this (bytes) return at once; the transfer starts when matched",
                   parse=bounded_int(0))
EAGER = declare("smpi/async-small-thresh", 0,
                "Sends smaller than this (bytes) start their transfer before the receive is posted",
                parse=bounded_int(0))
TEST_SLEEP = declare("smpi/test", 1e-4, "Simulated time injected by each MPI_Test (s), times consecutive failures",
                     parse=bounded_float(0.0))
IPROBE_SLEEP = declare("smpi/iprobe", 1e-4, "Simulated time injected by each MPI_Iprobe (s), times consecutive failures",
                       parse=bounded_float(0.0))
WTIME_COST = declare("smpi/wtime", 1e-8, "Simulated time consumed by each MPI_Wtime/clock read (s)",
                     parse=bounded_float(0.0))
SEND_OVERHEAD = declare("smpi/os", "0:0:0:0:0",
                        "Sender overhead of MPI_Send 'minsize:startup:perbyte;...' (s), slept when the send "
                        "is detached; a host property of the same name overrides it", parse=_overheads)
ISEND_OVERHEAD = declare("smpi/ois", "0:0:0:0:0", "Sender overhead of MPI_Isend/Issend (same syntax)",
                        parse=_overheads)
RECV_OVERHEAD = declare("smpi/or", "0:0:0:0:0",
                        "Receiver overhead (same syntax), slept when a receive matched a detached send",
                        parse=_overheads)
IPROBE_CPU = declare("smpi/iprobe-cpu-usage", 1.0,
                     "Fraction of a core burnt while polling in MPI_Iprobe (counts for energy)",
                     parse=bounded_float(0.0, maximum=1.0))
GROW_INJECTED = declare("smpi/grow-injected-times", True,
                        "MPI_Test/MPI_Iprobe costs grow with consecutive unsuccessful calls", parse=parse_bool)
INIT_TIME = declare("smpi/init", 0.0, "Simulated time injected in MPI_Init (s)",
                    parse=bounded_float(0.0))
POLL_COUNTERS = declare("smpy/poll-counters", "shared",
                        "Whose unsuccessful MPI_Test/Testany/Iprobe calls make the next one cost more: "
                        "shared (one counter per call for all ranks, as SMPI's function-static counters) "
                        "or rank (each rank its own)", choices=("shared", "rank"),
                        parse=lambda v: str(v).strip().lower())
PROBE_SEES = declare("smpy/probe-sees", "posted",
                     "Which messages MPI_Iprobe/Improbe can find: posted (every message posted so far, "
                     "as SMPI) or polled (only those posted before the rank's previous progress, i.e. "
                     "the end of its last MPI call that waited or polled, as MPICH: the first Iprobe "
                     "after a computation misses what arrived during it; smpy calibrate network "
                     "detects it)", choices=("posted", "polled"),
                     parse=lambda v: str(v).strip().lower())


class PollCounters:
    """Consecutive unsuccessful polls, per polling call (SMPI's ``nsleeps``, minus one):
    ``MPI_Test`` (also each request of Testall/Testsome), ``MPI_Testany``, ``MPI_Iprobe``."""

    __slots__ = ("test", "testany", "iprobe")

    def __init__(self) -> None:
        self.test = 0
        self.testany = 0
        self.iprobe = 0


def network_config(config: Config) -> NetworkConfig:
    name = config.get(NETWORK_MODEL)
    lat, bw, S, gamma = NAMED_MODELS[name]
    lat = config.get(LAT_FACTOR) or lat
    bw = config.get(BW_FACTOR) or bw
    S = float(config.get(WEIGHT_S) or S)
    gamma = float(config.get(TCP_GAMMA) or gamma)
    cross = config.get(CROSSTRAFFIC)
    crosstraffic = (name != "raw") if cross in ("", None) else parse_bool(cross)
    return NetworkConfig(name=name, lat_factor=Piecewise.parse_factors(lat),
                         bw_factor=Piecewise.parse_factors(bw), weight_S=S, tcp_gamma=gamma,
                         crosstraffic=crosstraffic)


class Process:
    """One MPI process (rank of COMM_WORLD)."""

    __slots__ = (
        "world", "rank", "host", "actor", "_comm_self", "initialized", "finalized", "thread_level",
        "mpi_calls", "polls", "bench", "depth", "comm_seq", "attrs",
        "errors_fatal", "error_registry", "o_send", "o_isend", "o_recv",
        "comm_world", "parent", "appnum", "progressed_at",
    )

    def __init__(self, world: World, rank: int, host: Host) -> None:
        self.world = world
        self.rank = rank
        self.host = host
        self.actor: Actor | None = None
        self._comm_self: CommImpl | None = None  # built on first use (most ranks never do)
        self.initialized = False
        self.finalized = False
        self.thread_level = 0
        self.mpi_calls = 0
        #: polling counters: the world's (smpy/poll-counters:shared) or the rank's own
        self.polls = world.polls if world.polls is not None else PollCounters()
        #: timing state (owned by smpy.timing)
        self.bench: Any = None
        #: nesting depth of MPI calls (timing only at depth 0)
        self.depth = 0
        #: per-parent-communicator count of communicator creations (see CommImpl.create)
        self.comm_seq: dict[int, int] = {}
        self.attrs: dict[str, Any] = {}
        self.errors_fatal = True
        #: user-defined error classes/codes/strings are per process, as in real MPI
        self.error_registry = errors.ErrorRegistry()
        #: protocol overhead tables (s as a function of bytes); host properties override
        self.o_send = world.overhead(host, "smpi/os")
        self.o_isend = world.overhead(host, "smpi/ois")
        self.o_recv = world.overhead(host, "smpi/or")
        #: this process's MPI_COMM_WORLD (spawned processes have their own, see smpy.runtime.spawn)
        self.comm_world: CommImpl | None = None
        #: child side of the intercommunicator with the spawning processes (MPI_Comm_get_parent)
        self.parent: CommImpl | None = None
        self.appnum = 0
        #: simulated time at which this rank last made progress (smpy/probe-sees:polled)
        self.progressed_at = 0.0

    @property
    def name(self) -> str:
        return f"{self.rank}@{self.host.name}"

    @property
    def comm_self(self) -> CommImpl:
        """This rank's MPI_COMM_SELF, created on first use: an idle rank costs less memory."""
        c = self._comm_self
        if c is None:
            from smpy.runtime.comm import CommImpl

            c = self._comm_self = CommImpl(self.world, [self.rank], "MPI_COMM_SELF")
        return c


class World:
    # the attributes read once or more per message are slots (issue 24); the others stay in
    # the instance dict
    __slots__ = ("engine", "net", "timing", "ft", "_route_cache", "detached_thresh", "eager_thresh",
                 "messages", "bytes_sent", "tracer", "ti", "probe_polled", "__dict__", "__weakref__")

    def __init__(self, platform: Any, config: Config, placement: list[Host]) -> None:
        from smpy.runtime.comm import CommImpl  # runtime-internal, avoids an import cycle

        self.platform = platform
        self.config = config
        self.engine = Engine()
        self.cpu = CpuModel(self.engine, platform.hosts)
        self.net = NetworkModel(self.engine, platform.links, network_config(config))
        self.size = len(placement)
        self.detached_thresh = config.get(DETACHED)
        self.eager_thresh = config.get(EAGER)
        if self.eager_thresh > self.detached_thresh:
            from smpy.support.config import ConfigError
            raise ConfigError("smpi/async-small-thresh must not exceed smpi/send-is-detached-thresh")
        self.test_sleep = config.get(TEST_SLEEP)
        self.iprobe_sleep = config.get(IPROBE_SLEEP)
        self.wtime_cost = config.get(WTIME_COST)
        self.init_time = config.get(INIT_TIME)
        self.iprobe_cpu = config.get(IPROBE_CPU)
        self.grow_injected = config.get(GROW_INJECTED)
        self.polls = PollCounters() if config.get(POLL_COUNTERS) == "shared" else None
        #: MPICH's probe semantics (smpy/probe-sees:polled): a probe sees only what an earlier
        #: progress of the rank pulled in
        self.probe_polled = config.get(PROBE_SEES) == "polled"
        self._overhead_cache: dict[tuple[str, str | None], Piecewise | None] = {}
        self._overheads = {f.name: Piecewise.parse_affine(config.get(f)) for f in (SEND_OVERHEAD, ISEND_OVERHEAD,
                                                                                  RECV_OVERHEAD)}
        self.processes = [Process(self, r, h) for r, h in enumerate(placement)]
        #: every live communicator (smpy.runtime.ulfm fails their pending operations)
        self.comms: weakref.WeakSet[CommImpl] = weakref.WeakSet()
        self._next_context = 0
        self.initial_world = CommImpl(self, list(range(self.size)), "MPI_COMM_WORLD")
        for p in self.processes:
            p.comm_world = self.initial_world
        #: set by the launcher: ``hook(processes, programs)`` starts spawned processes
        self.spawn_hook: Callable[[list[Process], list[Any]], None] | None = None
        self._route_cache: dict[tuple[int, int], tuple] = {}
        self.messages = 0
        self.bytes_sent = 0.0
        #: plugins and layers above attach themselves here (timing, energy)
        self.timing: Any = None
        self.energy: Any = None
        self.dvfs: Any = None  # smpy.energy.dvfs.Dvfs when the host_dvfs plugin is loaded
        self.tracer: Any = None
        #: smpy.trace.ti.TIRecorder when recording a time-independent trace
        self.ti: Any = None
        #: smpy.runtime.memory.MemoryAccounting when a host declares ``ram`` (the launcher
        #: installs it)
        self.memory: Any = None
        #: smpy.runtime.ulfm.FtState once failures are handled (the launcher installs it)
        self.ft: Any = None
        #: smpy.platform.failures.Injector of the run (set by the launcher)
        self.injector: Any = None
        #: simulated time of the run's start (a restart starts later, smpy.cli.restarts)
        self.start_time = 0.0
        #: node states and the free pool (dynamic allocation: spawn, boot, shutdown)
        self.nodes = NodePool(self, placement)

    def overhead(self, host: Host, name: str) -> Piecewise | None:
        """The overhead table ``name`` for ``host`` (its property wins), None when zero."""
        text = host.properties.get(name)
        key = (name, text)
        try:
            return self._overhead_cache[key]  # per process and table at start-up: cached
        except KeyError:
            pass
        table = Piecewise.parse_affine(text) if text is not None else self._overheads[name]
        zero = all(a == 0 and b == 0 for _, a, b in table.sections) and table.default == 0
        result = self._overhead_cache[key] = None if zero else table
        return result

    @property
    def comm_world(self) -> CommImpl:
        """MPI_COMM_WORLD of the running process (spawned processes have their own); the
        initial processes' one outside a rank."""
        a = _actors._current
        if a is not None:
            p = a.data
            if isinstance(p, Process) and p.world is self and p.comm_world is not None:
                return p.comm_world
        return self.initial_world

    def add_processes(self, hosts: list[Host], placed: bool = False) -> list[Process]:
        """New processes (spawned, or a batch job's) on ``hosts``, numbered after the existing
        ones; unless ``placed`` (a spawn: the node pool counted them), their nodes are taken."""
        if not placed:
            self.nodes.occupy(hosts)
        base = len(self.processes)
        new = [Process(self, base + i, h) for i, h in enumerate(hosts)]
        self.processes.extend(new)
        return new

    def make_actors(self, procs: list[Process], fn: Callable[[Process], Any]) -> list[Actor]:
        """One (not yet started) actor per process, running ``fn(process)``."""
        actors = []
        for p in procs:
            a = Actor(self.engine, f"rank {p.rank}", fn, (p,), host=p.host, data=p, pid=p.rank)
            p.actor = a
            actors.append(a)
        return actors

    def next_context(self) -> int:
        self._next_context += 1
        return self._next_context

    def spawn(self, fn: Callable[[Process], Any]) -> list[Actor]:
        return self.make_actors(self.processes, fn)

    def route(self, src: Host, dst: Host) -> tuple:
        key = (src.index, dst.index)
        r = self._route_cache.get(key)
        if r is None:
            r = self._route_cache[key] = tuple(self.platform.route(src, dst))
        return r

    def transfer(self, src: Host, dst: Host, nbytes: float):
        """Start a network transfer; returns the flow activity."""
        self.messages += 1
        self.bytes_sent += nbytes
        cache = self._route_cache  # route(), inlined for both directions (once per message)
        si, di = src.index, dst.index
        there = cache.get((si, di))
        if there is None:
            there = self.route(src, dst)
        back = cache.get((di, si))
        if back is None:
            back = self.route(dst, src)
        return self.net.communicate(there, nbytes, back)


class NotInSimulation(RuntimeError):
    pass


def _registry_of_current() -> errors.ErrorRegistry:
    a = current_actor()
    if a is None or not isinstance(a.data, Process):
        return _global_registry
    return a.data.error_registry


_global_registry = errors.ErrorRegistry()
errors.set_registry_provider(_registry_of_current)


def current() -> Process:
    """The MPI process running now (raises when called outside a simulated rank)."""
    a = _actors._current
    if a is not None:
        p = a.data
        if isinstance(p, Process):
            return p
    raise NotInSimulation("smpy's MPI was called outside of a simulated rank; run the program with smpyrun")


def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) :meth:`World.transfer` from ``_worldaccel.c`` for
    :mod:`smpy.kernel.accel` (none when it cannot be built)."""
    mod, _why = cext.load(Path(__file__).with_name("_worldaccel.c"), "smpy.runtime._worldaccel")
    if mod is None:
        return []
    py = World.__dict__["transfer"]
    return [(py, mod.setup(World, py))]


_accel.register(_compiled)
