r"""Dynamic node allocation: node states, the free pool, boot, shutdown and launch costs.

Every host (node) of the platform is in one state at simulated time :math:`t`::

    free ──spawn / allocate──▶ allocated ──last process ends / release──▶ free
    off ──spawn / allocate──▶ booting ──t_boot──▶ allocated
    off ──power_on──▶ booting ──t_boot──▶ free
    free ──power_off──▶ shutting_down ──t_down──▶ off

At the start the hosts of the initial ranks are *allocated*, the others *free*, or *off* when
the platform declares ``node.state: off`` for them (``initial_state`` property). A node is
allocated while it runs at least one live process (initial or spawned) or is reserved with
:func:`allocate`; it returns to the free pool when its last process ends (a spawned worker's
``Disconnect`` is normally followed by its end) and, for reserved nodes, on :func:`release`.

**Spawn.** ``MPI_Comm_spawn`` of :math:`n` processes (without a ``host`` info key) takes whole
nodes: free ones first (in platform order), then off ones, which boot; each node takes up to
:math:`q` processes (``smpy/spawn-ppn``, 0: its core count). Processes left when no free or
off node remains are placed round-robin over the allocated nodes (oversubscription, as mpiexec
does); with no allocated node the spawn fails with ``MPI_ERR_SPAWN``. In a batch job
(``smpy batch``: :attr:`NodePool.broker` set) the job's own idle cores come first, then only
the nodes the batch scheduler has free, and the spawn fails with ``MPI_ERR_SPAWN`` instead of
oversubscribing (:meth:`NodePool._fill_job`). With the nodes
:math:`N` of the spawn (:math:`k = |N|`), :math:`B \subseteq N` those that boot, the spawning
root waits

.. math::

    D = \max_{h \in B} t_\mathrm{boot}(h) + k\,c_\mathrm{node} + n\,c_\mathrm{proc} + c_\mathrm{init}

(:math:`\max \emptyset = 0`; a node already booting counts its remaining boot time) and the
children start at :math:`t_0 + D`: :math:`c_\mathrm{node}` (``smpy/spawn-node-cost``) is the
launcher's cost per node, :math:`c_\mathrm{proc}` (``smpy/spawn-process-cost``) its cost per
process, :math:`c_\mathrm{init}` (``smpy/spawn-init-cost``) the start of a child (interpreter,
``import mpi4py``, ``MPI_Init``; the children start in parallel, so once per spawn). The
defaults were measured on the development machine with the venv's MPICH ``mpiexec``
(``docs/dynamic-allocation.md``). The nodes are taken at :math:`t_0`.

**Energy** (with the ``host_energy`` plugin): a node draws :math:`P_\mathrm{boot}` while
booting, :math:`P_\mathrm{down}` while shutting down, :math:`P_\mathrm{off}` while off and
otherwise the plugin's load-dependent power, so a boot costs
:math:`E = P_\mathrm{boot}\,t_\mathrm{boot}` and a shutdown :math:`P_\mathrm{down}\,t_\mathrm{down}`
(SimGrid's energy-boot example encodes the same as pstates of speed 0: 150 s at 120 W to boot,
7 s at 110 W to shut down, 10 W off).

**Utilisation.** A node counts as allocated (:mod:`smpy.trace.utilization`) while it is
allocated or booting for a spawn or :func:`allocate`; the listeners
``listeners: f(host_index, allocated)`` hear every change.

Boot and shutdown timers are daemon events: a shutdown does not prolong the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.runtime import errors
from smpy.support.config import bounded_int, declare, parse_bool
from smpy.support.units import UnitError, parse_power, parse_time

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.runtime.world import World

FREE, ALLOCATED, OFF, BOOTING, SHUTTING_DOWN = "free", "allocated", "off", "booting", "shutting_down"
STATES = (ALLOCATED, FREE, OFF, BOOTING, SHUTTING_DOWN)


def _duration(value: Any) -> float:
    t = parse_time(str(value).strip())
    if not t >= 0.0 or t == float("inf"):
        raise ValueError(f"expected a duration of 0 or more, like 25ms, got {value!r}")
    return t


#: launch costs measured with the venv's MPICH mpiexec (Hydra 5.0.2) on the development machine
#: (benchmarks/workloads/launch_cost.py: minimum wall time of 15 interleaved runs each;
#: docs/dynamic-allocation.md)
NODE_COST = declare("smpy/spawn-node-cost", "11.1ms", "Launch cost of MPI_Comm_spawn per node it "
                    "uses (the launcher and its proxy): a duration; measured as mpiexec -n 1 "
                    "python -c pass minus python -c pass", parse=_duration)
PROCESS_COST = declare("smpy/spawn-process-cost", "1.5ms", "Launch cost of MPI_Comm_spawn per "
                       "process: a duration; measured as mpiexec -n 2 minus mpiexec -n 1 python -c pass",
                       parse=_duration)
INIT_COST = declare("smpy/spawn-init-cost", "258ms", "Start-up of the spawned processes, once per "
                    "MPI_Comm_spawn (interpreter start, import mpi4py, MPI_Init; the children start "
                    "in parallel): a duration; measured as mpiexec -n 1 python -c 'from mpi4py import "
                    "MPI' minus the launcher's cost", parse=_duration)
PPN = declare("smpy/spawn-ppn", 0, "Processes per node of an MPI_Comm_spawn taking nodes from the "
              "free pool (0: the node's core count)", parse=bounded_int(0))
IDLE_OFF = declare("smpy/node-idle-off", False, "Power a node off (shutdown) as soon as it returns "
                   "to the free pool", parse=parse_bool)


@dataclass(frozen=True)
class NodeProfile:
    """The lifecycle of a node, from its properties (seconds, watts; None: the idle power)."""

    initial: str = "on"
    boot_time: float = 0.0
    boot_power: float | None = None
    shutdown_time: float = 0.0
    shutdown_power: float | None = None


#: host properties of the node lifecycle (the YAML ``node:`` block writes them)
PROPERTIES = ("initial_state", "boot_time", "boot_wattage", "shutdown_time", "shutdown_wattage")


def node_profile(host: Host, platform: str = "") -> NodeProfile:
    """The :class:`NodeProfile` of ``host`` (ValueError naming the platform, host and property)."""
    props = host.properties
    where = f"platform {platform}: host {host.name}: property" if platform else f"host {host.name}: property"

    def value(name: str, parse: Any, default: Any) -> Any:
        text = props.get(name)
        if text is None:
            return default
        try:
            v = parse(text)
        except (UnitError, ValueError):
            v = None
        if v is None or not v >= 0.0 or v == float("inf"):
            raise ValueError(f"{where} {name}: expected a {'duration like 150s' if 'time' in name else 'power like 120W'}"
                             f" of 0 or more, found {text!r}")
        return v

    initial = props.get("initial_state", "on").strip().lower()
    if initial not in ("on", "off"):
        raise ValueError(f"{where} initial_state: expected 'on' or 'off', found {props['initial_state']!r}")
    return NodeProfile(initial, value("boot_time", parse_time, 0.0), value("boot_wattage", parse_power, None),
                       value("shutdown_time", parse_time, 0.0), value("shutdown_wattage", parse_power, None))


class NodePool:
    """The state of every node of ``world`` (see the module docstring)."""

    def __init__(self, world: World, placement: list[Host]) -> None:
        self.world = world
        self.engine = world.engine
        self.hosts = list(world.platform.hosts)
        n = len(self.hosts)
        name = getattr(world.platform, "name", "")
        self.profiles = [node_profile(h, name) for h in self.hosts]
        self.state = [FREE] * n
        self.procs = [0] * n            # live processes per node (and those being launched)
        self.reserved = [False] * n     # allocated by allocate() until release()
        self.after_boot = [FREE] * n    # what a booting node becomes
        self.ready_at = [0.0] * n       # end of the boot or shutdown under way
        self.ppn = int(world.config.get(PPN))
        self.idle_off = bool(world.config.get(IDLE_OFF))
        self.costs = (world.config.get(NODE_COST), world.config.get(PROCESS_COST), world.config.get(INIT_COST))
        self.listeners: list[Any] = []
        #: ``smpy batch``: the batch scheduler's view of the nodes (:class:`Broker`); None: the
        #: whole pool belongs to this run
        self.broker: Any = None
        #: ``f(host_index, state)`` at every state change (the traces draw the node states)
        self.state_listeners: list[Any] = []
        #: every state change: (time, host name, state)
        self.log: list[tuple[float, str, str]] = []
        for h in placement:
            self.procs[h.index] += 1
            self.state[h.index] = ALLOCATED
        for i, prof in enumerate(self.profiles):
            if self.state[i] == FREE and prof.initial == "off":
                self.state[i] = OFF
                world.cpu.set_on(self.hosts[i], False)
        self.engine.on_actor_end.connect(self._actor_end)

    # -- queries ----------------------------------------------------------------------------
    def allocated(self, i: int) -> bool:
        s = self.state[i]
        return s == ALLOCATED or (s == BOOTING and self.after_boot[i] == ALLOCATED)

    def states(self) -> dict[str, str]:
        return {h.name: s for h, s in zip(self.hosts, self.state)}

    # -- transitions --------------------------------------------------------------------------
    def _set(self, i: int, state: str) -> None:
        before = self.allocated(i)
        self.state[i] = state
        self.log.append((self.engine.now, self.hosts[i].name, state))
        for fn in self.state_listeners:
            fn(i, state)
        after = self.allocated(i)
        if after != before:
            for fn in self.listeners:
                fn(i, after)

    def _force_power(self, i: int, watts: float | None, idle: bool) -> None:
        energy = self.world.energy
        if energy is not None:
            energy.force(self.hosts[i], watts if watts is not None or not idle else energy.idle_power(self.hosts[i]))

    def _boot(self, i: int, then: str) -> None:
        self.after_boot[i] = then
        prof = self.profiles[i]
        self._transit(i, BOOTING, prof.boot_time, prof.boot_power, self._booted)

    def _booted(self, i: int) -> None:
        if self._settled(i, BOOTING, True):
            self._set(i, self.after_boot[i])
            if self.after_boot[i] == FREE and self.idle_off:
                self._shutdown(i)

    def _shutdown(self, i: int) -> None:
        prof = self.profiles[i]
        self._transit(i, SHUTTING_DOWN, prof.shutdown_time, prof.shutdown_power, self._halted)

    def _halted(self, i: int) -> None:
        if self._settled(i, SHUTTING_DOWN, False):
            self._set(i, OFF)

    def _transit(self, i: int, state: str, duration: float, watts: float | None,
                 done: Callable[[int], None]) -> None:
        """Node ``i`` enters a timed state (booting, shutting down) drawing ``watts``;
        ``done(i)`` runs when ``duration`` has passed."""
        self._set(i, state)
        self.ready_at[i] = self.engine.now + duration
        self._force_power(i, watts, True)
        self.engine.schedule_daemon(duration, done, i)

    def _settled(self, i: int, state: str, on: bool) -> bool:
        """The end of timed ``state`` (False: the node left it meanwhile): its wattage ends and
        the host is switched ``on`` or off."""
        if self.state[i] != state:
            return False
        self._force_power(i, None, False)
        self.world.cpu.set_on(self.hosts[i], on)
        return True

    def _to_free(self, i: int) -> None:
        if not self.hosts[i].is_on:  # failed (smpy.platform.failures): back as an off node
            self._set(i, OFF)
            return
        self._set(i, FREE)
        if self.idle_off:
            self._shutdown(i)

    def _actor_end(self, actor: Any) -> None:
        proc = actor.data
        if proc is None or getattr(proc, "actor", None) is not actor or getattr(proc, "world", None) is not self.world:
            return
        i = proc.host.index
        self.procs[i] -= 1
        if self.procs[i] <= 0 and not self.reserved[i] and self.state[i] == ALLOCATED:
            self.procs[i] = 0
            self._to_free(i)

    def occupy(self, hosts: list[Host]) -> None:
        """Processes placed on ``hosts`` without a spawn (the jobs of ``smpy batch``): their
        nodes are allocated at once (a node off, booting or shutting down is switched on
        without a boot: the batch scheduler owns the nodes' time)."""
        for h in hosts:
            self.procs[h.index] += 1
            self._allocate_now(h)

    def hold(self, hosts: list[Host]) -> None:
        """The nodes a batch job was given (``smpy batch``): allocated now and until
        :meth:`release`, whether or not its ranks still run there (the scheduler gave the
        job whole nodes for its whole run)."""
        for h in hosts:
            self.reserved[h.index] = True
            self._allocate_now(h)

    def _allocate_now(self, h: Host) -> None:
        """Node ``h`` allocated at once: one off, booting or shutting down is switched on
        without a boot (the batch scheduler owns the nodes' time)."""
        i = h.index
        if self.state[i] == ALLOCATED:
            return
        if self.state[i] != FREE:
            self._force_power(i, None, False)
            self.world.cpu.set_on(h, True)
        self._set(i, ALLOCATED)

    def _take(self, i: int) -> float:
        """Make node ``i`` allocated now or after its boot; returns the wait (its boot left)."""
        s = self.state[i]
        if s == FREE:
            self._set(i, ALLOCATED)
            return 0.0
        if s == OFF:
            self._boot(i, ALLOCATED)
            return self.profiles[i].boot_time
        if s == BOOTING:
            if self.after_boot[i] != ALLOCATED:
                before = self.allocated(i)
                self.after_boot[i] = ALLOCATED
                if not before:
                    for fn in self.listeners:
                        fn(i, True)
            return self.ready_at[i] - self.engine.now
        return 0.0  # allocated: shared

    # -- what a spawn takes ----------------------------------------------------------------------
    def place(self, counts: list[tuple[int, str | None]], call: str) -> tuple[list[Host], float]:
        """Hosts for the processes of a spawn: ``counts`` gives, per command, its number of
        processes and its ``host`` info key (or None). Returns one host per process and the
        launch delay :math:`D` the spawning root waits (module docstring)."""
        out: list[Host] = []
        nodes: dict[int, None] = {}
        wait = 0.0
        for n, name in counts:
            if name is not None:
                i = self._named(name, call)
                wait = max(wait, self._take(i))
                self.procs[i] += n
                nodes[i] = None
                out.extend([self.hosts[i]] * n)
                continue
            wait = max(wait, self._fill(n, out, nodes, call))
        c_node, c_proc, c_init = self.costs
        total = len(out)
        return out, wait + len(nodes) * c_node + total * c_proc + c_init

    def _named(self, name: str, call: str) -> int:
        plat = self.world.platform
        if not plat.has_host(name):
            errors.raise_error(errors.ERR_SPAWN, f"{call}: host {name!r} is not in platform {plat.name!r}")
        i = plat.host(name).index
        if self.state[i] == SHUTTING_DOWN:
            errors.raise_error(errors.ERR_SPAWN, f"{call}: host {name!r} is shutting down")
        job = self.broker.owner() if self.broker is not None else None
        if job is not None and i not in self.broker.own(job):
            if i not in self.broker.free():
                errors.raise_error(errors.ERR_SPAWN, f"{call}: host {name!r} is not free in the batch's node "
                                   "pool (another job holds it, or it is down)")
            self.broker.take(job, i)
        return i

    def _fill(self, n: int, out: list[Host], nodes: dict[int, None], call: str) -> float:
        """``n`` processes on whole free nodes, then booted ones, then oversubscribed (in a
        batch job: :meth:`_fill_job`)."""
        job = self.broker.owner() if self.broker is not None else None
        if job is not None:
            return self._fill_job(job, n, out, nodes, call)
        wait = 0.0
        for want in (FREE, OFF):
            for i, s in enumerate(self.state):
                if n <= 0:
                    return wait
                if s != want:
                    continue
                k = min(n, self.ppn or self.hosts[i].cores)
                wait = max(wait, self._take(i))
                self.procs[i] += k
                nodes[i] = None
                out.extend([self.hosts[i]] * k)
                n -= k
        if n <= 0:
            return wait
        busy = [i for i in range(len(self.hosts)) if self.allocated(i)]
        if not busy:
            errors.raise_error(errors.ERR_SPAWN, f"{call}: no node is free, off or allocated to place "
                               f"{n} process(es) on")
        start = len(self.world.processes) + len(out)
        for j in range(n):
            i = busy[(start + j) % len(busy)]
            self.procs[i] += 1
            nodes[i] = None
            out.append(self.hosts[i])
        return wait

    def _fill_job(self, job: Any, n: int, out: list[Host], nodes: dict[int, None], call: str) -> float:
        """``n`` processes of a batch job's spawn: the idle cores of the job's own nodes
        first (cores minus live processes, in the job's node order), then whole nodes the
        batch scheduler has free (free ones, then off ones, which boot), which join the job's
        allocation; with none left, ``MPI_ERR_SPAWN`` (nothing is taken)."""
        plan: list[tuple[int, int]] = []
        for i in self.broker.own(job):
            k = min(n, self.hosts[i].cores - self.procs[i])
            if k > 0:
                plan.append((i, k))
                n -= k
        pool = self.broker.free()
        fresh = [i for want in (FREE, OFF) for i, s in enumerate(self.state) if s == want and i in pool]
        for i in fresh:
            if n <= 0:
                break
            k = min(n, self.ppn or self.hosts[i].cores)
            plan.append((i, -k))  # a node taken from the scheduler
            n -= k
        if n > 0:
            errors.raise_error(errors.ERR_SPAWN, f"{call}: {n} process(es) cannot be placed: the job's nodes "
                               "have no idle core and the batch scheduler has no free node "
                               "(docs/dynamic-allocation.md, Spawn inside a batch job)")
        wait = 0.0
        for i, k in plan:
            if k < 0:
                k = -k
                self.broker.take(job, i)
                wait = max(wait, self._take(i))
            self.procs[i] += k
            nodes[i] = None
            out.extend([self.hosts[i]] * k)
        return wait

    # -- the program's API (smpy.nodes) ------------------------------------------------------------
    def allocate(self, count: int) -> tuple[list[str], float]:
        """Reserve ``count`` nodes (free ones, then off ones that boot; in a batch job, only
        those the batch scheduler has free, which join the job's allocation); returns their
        names and the wait until the last is up. Fewer when the pool runs dry."""
        taken: list[str] = []
        wait = 0.0
        job = self.broker.owner() if self.broker is not None else None
        pool = self.broker.free() if job is not None else None
        for want in (FREE, OFF):
            for i, s in enumerate(self.state):
                if len(taken) >= count:
                    break
                if s == want and (pool is None or i in pool):
                    if job is not None:
                        self.broker.take(job, i)
                    wait = max(wait, self._take(i))
                    self.reserved[i] = True
                    taken.append(self.hosts[i].name)
        return taken, wait

    def release(self, names: list[str], power_off: bool) -> list[str]:
        """Return reserved nodes to the pool (those still running processes when these end);
        with ``power_off``, shut the free ones down. Returns the nodes now free or going off."""
        done = []
        for name in names:
            i = self._index(name)
            self.reserved[i] = False
            if self.state[i] == ALLOCATED and self.procs[i] <= 0:
                self._to_free(i)
            if power_off and self.state[i] == FREE:
                self._shutdown(i)
            if self.state[i] in (FREE, SHUTTING_DOWN, OFF):
                done.append(name)
        return done

    def power_off(self, names: list[str] | None) -> list[str]:
        """Shut down the free nodes ``names`` (None: every free node); returns those shut down."""
        idx = range(len(self.hosts)) if names is None else [self._index(n) for n in names]
        done = []
        for i in idx:
            if self.state[i] == FREE:
                self._shutdown(i)
                done.append(self.hosts[i].name)
        return done

    def power_on(self, names: list[str] | None, count: int | None) -> list[str]:
        """Boot off nodes into the free pool (``names``, or the first ``count`` off ones)."""
        idx = [self._index(n) for n in names] if names is not None else \
            [i for i, s in enumerate(self.state) if s == OFF][:count]
        done = []
        for i in idx:
            if self.state[i] == OFF:
                self._boot(i, FREE)
                done.append(self.hosts[i].name)
        return done

    def _index(self, name: str) -> int:
        plat = self.world.platform
        if not plat.has_host(name):
            raise ValueError(f"smpy.nodes: no host {name!r} in platform {plat.name!r}")
        return plat.host(name).index


def wait(engine: Any, seconds: float) -> None:
    """Block the running actor ``seconds`` of simulated time (the launch delay)."""
    if seconds > 0.0:
        block_on(Sleep(engine, seconds))
