r"""Host energy (SimGrid's ``host_energy`` plugin).

Power of a host at pstate :math:`p` with :math:`c` cores of which :math:`b` are busy
(:math:`b = \sum_e r_e / s_p`, the executions' rates over the core speed; polling counts):

.. math::

    P = \begin{cases}
        P_\mathrm{off} & \text{host off} \\
        P^{p}_\mathrm{idle} & b = 0 \\
        P^{p}_\varepsilon + \min(1, b / c)\,(P^{p}_\mathrm{all} - P^{p}_\varepsilon) & b > 0
    \end{cases}

with, per pstate, :math:`P_\mathrm{idle}` (no core busy), :math:`P_\varepsilon` (the
static power as soon as one core works) and :math:`P_\mathrm{all}` (every core busy).
Energy is the integral of :math:`P` over simulated time; it is brought up to date on every
change of load, pstate or on/off state, and at the end of the run:
:math:`E \mathrel{+}= P \cdot (t - t_\mathrm{last})`.

Power profiles come from host properties, as in SimGrid's platform files:
``wattage_per_state = "Idle:Epsilon:AllCores, ..."`` (one triple per pstate; the older
``"Idle:AllCores"`` form means :math:`P_\varepsilon = P_\mathrm{idle}`) and
``wattage_off = "10"``. A host without a profile draws 0 W (and is reported as such).
While a node boots or shuts down (:mod:`smpy.runtime.nodes`) its power is forced to the
node's boot or shutdown wattage (:meth:`HostEnergy.force`) whatever the formula gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from smpy.support.units import parse_power

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.cpu.model import CpuModel
    from smpy.kernel.engine import Engine


@dataclass(frozen=True)
class PowerRange:
    """Wattage of one pstate (W)."""

    idle: float
    epsilon: float
    all_cores: float

    def power(self, load: float) -> float:
        """Power at ``load`` = busy cores / cores, in [0, 1]."""
        if load <= 0.0:
            return self.idle
        return self.epsilon + min(load, 1.0) * (self.all_cores - self.epsilon)


def parse_wattage_per_state(text: str, pstates: int, where: str = "") -> list[PowerRange]:
    """``"Idle:Epsilon:AllCores, ..."`` (or ``"Idle:AllCores, ..."``), one entry per pstate."""
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if len(entries) != pstates:
        raise ValueError(f"{where}wattage_per_state: {len(entries)} power profile(s) for {pstates} pstate(s) "
                         f"in {text!r}")
    out = []
    for i, e in enumerate(entries):
        parts = [x.strip() for x in e.split(":")]
        if len(parts) not in (2, 3):
            raise ValueError(f"{where}wattage_per_state: pstate {i}: expected 'Idle:Epsilon:AllCores' or "
                             f"'Idle:AllCores', found {e!r}")
        try:
            vals = [parse_power(x) for x in parts]
        except ValueError as exc:
            raise ValueError(f"{where}wattage_per_state: pstate {i}: {exc}") from None
        if len(vals) == 2:
            vals = [vals[0], vals[0], vals[1]]
        out.append(PowerRange(*vals))
    return out


class _HostRecord:
    __slots__ = ("host", "ranges", "off", "energy", "last", "busy", "pstate", "on", "used", "forced")

    def __init__(self, host: Host, ranges: list[PowerRange] | None, off: float, now: float) -> None:
        self.host = host
        self.ranges = ranges
        self.off = off
        self.energy = 0.0
        self.last = now
        self.busy = 0.0
        self.pstate = host.pstate
        self.on = host.is_on
        self.used = False
        #: a fixed power (booting, shutting down: smpy.runtime.nodes), or None
        self.forced: float | None = None

    def power(self) -> float:
        if self.forced is not None:
            return self.forced
        if self.ranges is None:
            return 0.0
        if not self.on:
            return self.off
        return self.ranges[self.pstate].power(self.busy / self.host.cores)

    def static_power(self) -> float:
        """The part of :meth:`power` that does not depend on which work loads the host: all of
        it when forced, off or without a profile; the idle power when nothing computes;
        otherwise the epsilon power (one busy core's), at most the whole."""
        if self.forced is not None or self.ranges is None or not self.on:
            return self.power()
        r = self.ranges[self.pstate]
        return r.idle if self.busy <= 0.0 else min(r.epsilon, self.power())

    def integrate(self, now: float) -> None:
        if now > self.last:
            self.energy += self.power() * (now - self.last)
            self.last = now


class HostEnergy:
    """Integrates the power of every host; attach it before the simulation starts."""

    def __init__(self, engine: Engine, cpu: CpuModel, hosts: list[Host]) -> None:
        self.engine = engine
        self.records: list[_HostRecord] = []
        for h in hosts:
            text = h.properties.get("wattage_per_state")
            ranges = parse_wattage_per_state(text, h.pstate_count, f"host {h.name}: ") if text else None
            off = parse_power(h.properties["wattage_off"]) if "wattage_off" in h.properties else 0.0
            self.records.append(_HostRecord(h, ranges, off, engine.now))
        cpu.on_load_change.connect(self._load_change)
        cpu.on_host_change.connect(self._host_change)
        self.power_listeners: list = []  # f(host, time, watts) after every change (power traces)

    def _rec(self, host: Host) -> _HostRecord:
        return self.records[host.index]

    def _load_change(self, host: Host, busy: float) -> None:
        # twice per compute burst (its start and its end): the listeners called only when
        # there are some
        r = self.records[host.index]
        r.integrate(self.engine.now)
        r.busy = busy
        if busy > 0:
            r.used = True
        if self.power_listeners:
            self._notify(r)

    def _host_change(self, host: Host) -> None:
        # called before the change: close the interval, then read the new state lazily
        r = self._rec(host)
        r.integrate(self.engine.now)
        self.engine.schedule(0.0, self._refresh, r)

    def _refresh(self, r: _HostRecord) -> None:
        r.integrate(self.engine.now)
        r.pstate = r.host.pstate
        r.on = r.host.is_on
        self._notify(r)

    def _notify(self, r: _HostRecord) -> None:
        for fn in self.power_listeners:
            fn(r.host, self.engine.now, r.power())

    def force(self, host: Host, watts: float | None) -> None:
        """From now on ``host`` draws ``watts`` whatever its load and on/off state (a boot or a
        shutdown, :mod:`smpy.runtime.nodes`); None goes back to the profile's power."""
        r = self._rec(host)
        r.integrate(self.engine.now)
        r.forced = watts
        if watts is not None:
            r.used = True
        self._notify(r)

    def idle_power(self, host: Host) -> float:
        """The profile's idle power of ``host`` at its current pstate (0 W without a profile)."""
        r = self._rec(host)
        return 0.0 if r.ranges is None else r.ranges[r.host.pstate].idle

    # -- queries ---------------------------------------------------------------------------
    def consumed(self, host: Host) -> float:
        """Energy consumed by ``host`` so far (J)."""
        r = self._rec(host)
        r.integrate(self.engine.now)
        return r.energy

    def power(self, host: Host) -> float:
        """Current power of ``host`` (W)."""
        r = self._rec(host)
        r.pstate, r.on = r.host.pstate, r.host.is_on
        return r.power()

    def total(self) -> float:
        return sum(self.consumed(r.host) for r in self.records)

    def report(self) -> dict[str, object]:
        now = self.engine.now
        per_host = {}
        used = idle = 0.0
        for r in self.records:
            r.integrate(now)
            per_host[r.host.name] = r.energy
            if r.used:
                used += r.energy
            else:
                idle += r.energy
        return {"total_J": used + idle, "used_hosts_J": used, "idle_hosts_J": idle, "per_host_J": per_host}


class PowerTrace:
    """Writes every host's power over simulated time as CSV (``time_s,host,power_W``): one row
    per host at the start, then one at every change; the power holds until the next row of
    its host. A last row per host at the end of the run closes the intervals."""

    def __init__(self, path: str, energy: HostEnergy) -> None:
        import csv

        self._fh = open(path, "w", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._w = csv.writer(self._fh)
        self._w.writerow(["time_s", "host", "power_W"])
        self._energy = energy
        for r in energy.records:
            self._w.writerow([repr(energy.engine.now), r.host.name, repr(r.power())])
        energy.power_listeners.append(self._row)

    def _row(self, host: Host, time: float, watts: float) -> None:
        self._w.writerow([repr(time), host.name, repr(watts)])

    def close(self) -> None:
        if self._fh.closed:
            return
        now = self._energy.engine.now
        for r in self._energy.records:
            self._w.writerow([repr(now), r.host.name, repr(r.power())])
        self._fh.close()
