r"""The platform's energy in a batch run, attributed to its jobs (``smpy batch``).

Each host's power :math:`P_h(t)` is the ``host_energy`` plugin's
(:mod:`smpy.energy.host_energy`), counted once whatever the number of jobs on the host:
:math:`E = \sum_h \int_0^T P_h\,dt` is the platform's energy. It is split at every instant
into a *static* part :math:`S_h` and a *dynamic* part :math:`D_h = P_h - S_h`:

* :math:`S_h` = :math:`P_\mathrm{idle}` when no core is busy, :math:`P_\varepsilon` when some
  are (the pstate's), :math:`P_\mathrm{off}` when the host is off, the boot or shutdown
  wattage while it boots or shuts down;
* :math:`D_h = \min(1, b/c)\,(P_\mathrm{all} - P_\varepsilon)`, :math:`b` the busy cores.

Job :math:`j` gets

.. math::

    E_j = \sum_h \int \Big( S_h \frac{k_{j,h}}{\max(c_h, \sum_i k_{i,h})}
          + D_h \frac{b_{j,h}}{b_h} \Big)\,dt

where :math:`k_{j,h}` are the cores of :math:`h` the job holds (all :math:`c_h` cores of a
node a scheduler gave it; with scheduler ``none``, one per rank it placed there) from its
start to its end, and :math:`b_{j,h}` its own busy cores there (the share of the host's
execution rate that its computations get). What no job holds (idle nodes, free cores) and
dynamic power of computations no job owns is *unattributed*:
:math:`\sum_j E_j + E_\mathrm{unattributed} = E`. A host held by one job alone gives it
exactly its energy over the job's run.

The split is integrated between the changes of each host (its power, the jobs holding it,
its computations): the plugin's energy over each such interval, at constant power, is cut in
the static and dynamic shares of that interval.
"""

from __future__ import annotations

from typing import Any

from smpy.kernel.activity import RUNNING
from smpy.kernel.actors import current_actor
from smpy.runtime.world import Process, World


class EnergyShares:
    """Per-job energies of a batch run (see the module docstring)."""

    def __init__(self, world: World, job_of_rank: dict[int, int]) -> None:
        self.world = world
        self.energy = world.energy
        self.job_of_rank = job_of_rank
        hosts = world.platform.hosts
        n = len(hosts)
        self.hosts = hosts
        #: per host: job -> cores held; job (or None) -> share of the dynamic power
        self.held: list[dict[int, float]] = [{} for _ in range(n)]
        self.dyn: list[dict[int | None, float]] = [{} for _ in range(n)]
        #: per host: the plugin's energy at the last sync, the static fraction of its power since
        self.last = [self.energy.consumed(h) for h in hosts]
        self.static_frac = [1.0] * n
        self.job_J: dict[int, float] = {}
        self.unattributed_J = 0.0
        self.energy.power_listeners.append(self._power_changed)
        world.cpu.on_exec_start.connect(self._exec_changed)
        world.cpu.on_exec_end.connect(self._exec_changed)

    # -- the split of one interval ---------------------------------------------------------
    def sync(self, i: int) -> None:
        """Attribute host ``i``'s energy since its last sync, with the shares of that time."""
        e = self.energy.consumed(self.hosts[i])
        de = e - self.last[i]
        self.last[i] = e
        if de == 0.0:
            return
        static = de * self.static_frac[i]
        held = self.held[i]
        total_held = sum(held.values())
        denom = max(float(self.hosts[i].cores), total_held)
        job_J = self.job_J
        for j, k in held.items():
            job_J[j] = job_J.get(j, 0.0) + static * k / denom
        self.unattributed_J += static * (1.0 - total_held / denom)
        dynamic = de - static
        if dynamic:
            shares = self.dyn[i]
            for j, f in shares.items():
                if j is None:
                    self.unattributed_J += dynamic * f
                else:
                    job_J[j] = job_J.get(j, 0.0) + dynamic * f
            if not shares:
                self.unattributed_J += dynamic

    def _recompute(self, i: int) -> None:
        """The static fraction and dynamic shares from now on (after the cpu's update)."""
        rec = self.energy.records[i]
        p = rec.power()
        self.static_frac[i] = rec.static_power() / p if p > 0.0 else 1.0
        rates: dict[int | None, float] = {}
        for ex in self.hosts[i].model_data.execs:
            if ex.state == RUNNING and ex.rate > 0.0:
                j = self._owner(ex)
                rates[j] = rates.get(j, 0.0) + ex.rate
        total = sum(rates.values())
        self.dyn[i] = {j: r / total for j, r in rates.items()} if total > 0.0 else {}

    def _owner(self, ex: Any) -> int | None:
        for a in ex.waiters:
            p = a.data
            if isinstance(p, Process):
                return self.job_of_rank.get(p.rank)
        return None

    # -- the changes -----------------------------------------------------------------------
    def _power_changed(self, host: Any, _time: float, _watts: float) -> None:
        i = host.index
        self.sync(i)  # the plugin integrated up to now at the old power: split it as before
        self._recompute(i)

    def _exec_changed(self, ex: Any) -> None:
        """A computation starts or ends: the jobs' dynamic shares may change (their new
        rates are known after the cpu's update of this instant: a refresh right after)."""
        i = ex.host.index
        rec = self.energy.records[i]
        if rec.ranges is None and rec.forced is None:
            return  # no power profile: 0 W whatever computes there
        if ex.state == RUNNING:  # it starts: its rank is running (it waits for it next)
            a = current_actor()
            p = a.data if a is not None else None
            j = self.job_of_rank.get(p.rank) if isinstance(p, Process) else None
        else:  # it ends: its rank still waits for it (unless killed)
            j = self._owner(ex)
        if j is not None and self.dyn[i].keys() == {j}:
            return  # the job that has all of the dynamic power computes more or less
        self.sync(i)
        self.world.engine.schedule(0.0, self._refresh, i)

    def _refresh(self, i: int) -> None:
        self.sync(i)
        self._recompute(i)

    def hold(self, job: int, cores: dict[int, float]) -> None:
        """Job ``job`` holds ``cores[host index]`` cores from now on."""
        for i, k in cores.items():
            self.sync(i)
            self.held[i][job] = self.held[i].get(job, 0.0) + k
        self.job_J.setdefault(job, 0.0)

    def drop(self, job: int, i: int) -> None:
        """Job ``job`` gives host ``i`` back (a node its spawn took): it holds nothing there."""
        self.sync(i)
        self.held[i].pop(job, None)
        self._recompute(i)

    def release(self, job: int) -> float:
        """Job ``job`` ended: it holds nothing from now on; its energy."""
        for i, held in enumerate(self.held):
            if job in held or job in self.dyn[i]:
                self.sync(i)
                held.pop(job, None)
                self._recompute(i)
        return self.job_J.get(job, 0.0)

    def finish(self) -> float:
        """Bring every host up to date (end of the run); the unattributed energy."""
        for i in range(len(self.hosts)):
            self.sync(i)
        return self.unattributed_J

