r"""DVFS governors (SimGrid's ``host_dvfs`` plugin) and the host load they read.

Load
----
For each host, over the interval since the governor's last look:

.. math::

    F = \int b(t)\, s(t)\, dt, \qquad F_\mathrm{max} = \int c\, s(t)\, dt, \qquad
    \ell = c \cdot F / F_\mathrm{max}

with :math:`b` the busy cores (:math:`\sum_e r_e / s`, as reported by the CPU model), :math:`s`
the core speed at the current pstate and :math:`c` the core count. :math:`\ell` is SimGrid's
``core_count × sg_host_get_avg_load``: 1 when one core was busy all along, :math:`c` when all
were.

Governors
---------
Every ``plugin/dvfs/sampling-rate`` seconds (first look one period after the start: the run
begins in the platform's pstates), each host's governor sets its pstate, within
``[min-pstate, max-pstate]`` (pstate 0 is the fastest):

* ``performance``: the fastest allowed pstate; ``powersave``: the slowest;
* ``ondemand``: the fastest when :math:`\ell > 0.8`, otherwise
  :math:`p_\max - \lfloor\ell\rfloor (p_\max + 1)` clamped to :math:`p_\min` — which, as in
  SimGrid, is :math:`p_\max` since :math:`\ell \le 0.8`;
* ``conservative``: one pstate faster when :math:`\ell > 0.8`, one slower when
  :math:`\ell < 0.2`.

``ondemand`` and ``conservative`` reset the load after each look. A host property
``plugin/dvfs/governor`` (or ``sampling-rate``, ``min-pstate``, ``max-pstate``) overrides the
setting for that host, as in SimGrid. Governors run as daemon events: they never extend the
simulation past the end of the last rank.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.support.config import Config, Flag, checked, declare, parse_int
from smpy.support.units import parse_time

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.cpu.model import CpuModel
    from smpy.kernel.engine import Engine

GOVERNORS = ("performance", "powersave", "ondemand", "conservative")
UP_THRESHOLD = 0.8
DOWN_THRESHOLD = 0.2

GOVERNOR = declare("plugin/dvfs/governor", "performance",
                   "DVFS governor of the host_dvfs plugin (host property of the same name overrides)",
                   parse=lambda v: str(v).strip().lower(), choices=GOVERNORS)
SAMPLING_RATE = declare("plugin/dvfs/sampling-rate", 0.1,
                        "Seconds between two decisions of the DVFS governor",
                        parse=checked(parse_time, lambda v: 0 < v < math.inf,
                                      "a time greater than 0"))
MIN_PSTATE = declare("plugin/dvfs/min-pstate", 0,
                     "Fastest pstate the DVFS governor may use",
                     parse=checked(parse_int, lambda v: v >= 0, "a pstate index of 0 or more"))
MAX_PSTATE = declare("plugin/dvfs/max-pstate", -1,
                     "Slowest pstate the DVFS governor may use (-1: the host's last)",
                     parse=checked(parse_int, lambda v: v >= -1, "a pstate index, or -1"))


class HostLoad:
    """Flops computed and flops possible on one host since the last reset (see the math)."""

    __slots__ = ("host", "busy", "last", "computed", "possible")

    def __init__(self, host: Host, now: float) -> None:
        self.host = host
        self.busy = 0.0
        self.last = now
        self.computed = 0.0
        self.possible = 0.0

    def advance(self, now: float) -> None:
        dt = now - self.last
        if dt > 0.0:
            h = self.host
            speed = h.speed_flops if h.is_on else 0.0
            self.computed += self.busy * speed * dt
            self.possible += h.cores * speed * dt
            self.last = now

    def load(self, now: float) -> float:
        """:math:`\\ell`: busy cores on average since the last reset."""
        self.advance(now)
        return 0.0 if self.possible == 0.0 else self.host.cores * self.computed / self.possible

    def reset(self, now: float) -> None:
        self.advance(now)
        self.computed = self.possible = 0.0


class Governor:
    """One host's governor: reads its load, sets its pstate every ``rate`` seconds."""

    def __init__(self, name: str, host: Host, load: HostLoad, rate: float, pmin: int, pmax: int,
                 set_pstate: Callable[[Host, int], None]) -> None:
        if name not in GOVERNORS:
            raise ValueError(f"host {host.name}: unknown DVFS governor {name!r} (known: "
                             f"{', '.join(GOVERNORS)})")
        last = host.pstate_count - 1
        pmax = last if pmax < 0 else pmax
        if not 0 <= pmin <= pmax <= last:
            raise ValueError(f"host {host.name}: DVFS pstate range [{pmin}, {pmax}] is not within "
                             f"the host's pstates 0..{last}")
        if not rate > 0.0:
            raise ValueError(f"host {host.name}: plugin/dvfs/sampling-rate must be > 0, got {rate}")
        self.name, self.host, self.load, self.rate = name, host, load, rate
        self.pmin, self.pmax = pmin, pmax
        self._set = set_pstate
        self.decisions = 0

    def decide(self, now: float) -> int:
        """The pstate to use from now on."""
        p = self.host.pstate
        if self.name == "performance":
            return self.pmin
        if self.name == "powersave":
            return self.pmax
        ell = self.load.load(now)
        self.load.reset(now)
        if self.name == "ondemand":
            if ell > UP_THRESHOLD:
                return self.pmin
            return max(self.pmax - int(ell) * (self.pmax + 1), self.pmin)
        if ell > UP_THRESHOLD and p != self.pmin:  # conservative
            return p - 1
        if ell < DOWN_THRESHOLD and p != self.pmax:
            return p + 1
        return p

    def tick(self, now: float) -> None:
        self.decisions += 1
        if self.host.is_on:
            target = self.decide(now)
            if target != self.host.pstate:
                self._set(self.host, target)


class Dvfs:
    """The host_dvfs plugin: a governor per host, run as daemon events."""

    def __init__(self, engine: Engine, cpu: CpuModel, hosts: list[Host], config: Config) -> None:
        self.engine = engine
        self.loads = [HostLoad(h, engine.now) for h in hosts]
        self.governors: list[Governor] = []
        cpu.on_load_change.connect(self._load_change)
        cpu.on_host_change.connect(self._host_change)
        for h, load in zip(hosts, self.loads):
            gov = Governor(_setting(h, config, GOVERNOR), h, load,
                           _setting(h, config, SAMPLING_RATE), _setting(h, config, MIN_PSTATE),
                           _setting(h, config, MAX_PSTATE), cpu.set_pstate)
            self.governors.append(gov)
            engine.schedule_daemon(gov.rate, self._tick, gov)

    def _tick(self, gov: Governor) -> None:
        now = self.engine.now
        gov.tick(now)
        self.engine.schedule_daemon(gov.rate, self._tick, gov)

    def _load_change(self, host: Host, busy: float) -> None:
        load = self.loads[host.index]
        load.advance(self.engine.now)
        load.busy = busy

    def _host_change(self, host: Host) -> None:
        # before a pstate or on/off change: close the interval at the old speed
        self.loads[host.index].advance(self.engine.now)


def _setting(host: Host, config: Config, flag: Flag) -> Any:
    """A host property of the setting's name overrides the run's setting (as in SimGrid)."""
    if flag.name in host.properties:
        return flag.parse(host.properties[flag.name])
    return config.get(flag)
