r"""Flow-level network model (SimGrid's CM02 family: CM02, LV08, SMPI, raw).

A message of ``size`` bytes from host :math:`s` to host :math:`d` crosses the route
:math:`L = (l_1, …, l_k)` (loopback links when :math:`s = d`). Its transfer has two phases.

Latency phase
    :math:`T_\mathrm{lat} = f_\mathrm{lat}(\mathrm{size}) \cdot \sum_{l \in L} \lambda_l`
    seconds, where :math:`\lambda_l` is the latency of link :math:`l` and
    :math:`f_\mathrm{lat}` the latency factor (piecewise in size for the SMPI model).

Bandwidth phase
    the flow is a variable of the max-min system (:mod:`smpy.lmm`) using every shared link
    of the route with coefficient :math:`1/f_\mathrm{bw}(\mathrm{size})`, so that alone it
    reaches :math:`f_\mathrm{bw} \cdot B_l` on a link of bandwidth :math:`B_l`. Fat-pipe
    links only bound it: :math:`x \le f_\mathrm{bw} B_l`. With TCP window
    :math:`\gamma > 0`, :math:`x \le \gamma / (2 \sum_l \lambda_l)` (unfactored latency).
    Its sharing penalty is :math:`w = \sum_{l} (\lambda_l + S / B_l)` (RTT-unfair
    sharing, weight :math:`S`; :math:`w = 1` when that sum is 0), so flows with longer
    round-trips get smaller shares, as TCP does. The phase lasts until ``size`` bytes went
    through at the (piecewise-constant) max-min rate.

Uncontended, the total time is
:math:`T = f_\mathrm{lat}\sum\lambda_l + \mathrm{size} / \min(f_\mathrm{bw}\min_l B_l,\ \gamma/(2\sum\lambda_l))`.

Models (``network/model``): ``CM02`` (factors 1, S = 0), ``LV08`` (latency factor 13.01,
bandwidth factor 0.97, S = 20537), ``SMPI`` (SimGrid's piecewise factors fitted on
Stampede, S = 8775), ``raw`` (factors 1, S = 0, no TCP bound: :math:`\lambda + s/B`).
Reverse-direction cross-traffic and per-host/per-size factor callbacks are left to the
network-model issue; the interface (``communicate``) stays the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from smpy.kernel.activity import RUNNING, RateActivity
from smpy.kernel.engine import Engine, Event
from smpy.kernel.signals import Signal
from smpy.lmm import System
from smpy.network.links import Link, Sharing

SMPI_LAT_FACTOR = ("65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;"
                   "1426:1.61075;732:1.9503;257:1.95341;0:2.01467")
SMPI_BW_FACTOR = ("65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;"
                  "1426:0.608902;732:0.341987;257:0.338112;0:0.812084")


@dataclass
class NetworkConfig:
    """Parameters of the flow model (SI units)."""

    name: str = "SMPI"
    lat_factor: Callable[[float], float] = lambda size: 1.0
    bw_factor: Callable[[float], float] = lambda size: 1.0
    weight_S: float = 8775.0
    tcp_gamma: float = 4194304.0


#: named models: (latency factor spec, bandwidth factor spec, weight S, TCP gamma)
NAMED_MODELS: dict[str, tuple[str, str, float, float]] = {
    "SMPI": (SMPI_LAT_FACTOR, SMPI_BW_FACTOR, 8775.0, 4194304.0),
    "LV08": ("13.01", "0.97", 20537.0, 4194304.0),
    "CM02": ("1", "1", 0.0, 4194304.0),
    "raw": ("1", "1", 0.0, 0.0),
}


class Flow(RateActivity):
    """Transfer of ``total`` bytes along ``route`` (an activity)."""

    __slots__ = ("model", "route", "size", "var", "latency", "_lat_event", "coeff", "bound", "penalty")

    def __init__(self, model: NetworkModel, route: tuple[Link, ...], size: float) -> None:
        super().__init__(model.engine, size)
        self.model = model
        self.route = route
        self.size = size
        self.var = None
        self.latency = 0.0
        self._lat_event: Event | None = None

    def _start_bandwidth_phase(self) -> None:
        self._lat_event = None
        if self.state != RUNNING:
            return
        if self.total <= 0.0:
            self._finish()
            return
        self.last_update = self.engine.now
        m = self.model
        self.var = m.system.variable(self.penalty, self.bound,
                                     [(lnk.model_data, self.coeff) for lnk in self.route
                                      if lnk.sharing is not Sharing.FATPIPE],
                                     data=self)
        m.dirty = True

    def _on_work_done(self) -> None:
        self._release()
        self._finish()

    def _on_cancel(self) -> None:
        super()._on_cancel()
        if self._lat_event is not None:
            self._lat_event.cancelled = True
        self._release()

    def _release(self) -> None:
        if self.var is not None:
            self.model.system.remove(self.var)
            self.var = None
            self.model.dirty = True
        if self.model.on_flow_end:
            self.model.on_flow_end.emit(self)

    def describe(self) -> str:
        names = ",".join(lnk.name for lnk in self.route)
        return f"transfer of {self.total:.6g} B over [{names}]"


class NetworkModel:
    def __init__(self, engine: Engine, links: list[Link], config: NetworkConfig) -> None:
        self.engine = engine
        self.config = config
        self.system = System()
        self.dirty = False
        for lnk in links:
            self.add_link(lnk)
        self.on_flow_start = Signal("flow_start")
        self.on_flow_end = Signal("flow_end")
        engine.add_model(self)

    def add_link(self, lnk: Link) -> None:
        if lnk.sharing is not Sharing.FATPIPE and lnk.model_data is None:
            lnk.model_data = self.system.constraint(lnk.bandwidth_Bps, data=lnk)

    def communicate(self, route: tuple[Link, ...], size: float) -> Flow:
        """Start a transfer of ``size`` bytes along ``route``; returns the flow activity."""
        cfg = self.config
        f = Flow(self, route, size)
        lat = 0.0
        penalty = 0.0
        bound = math.inf
        S = cfg.weight_S
        bwf = cfg.bw_factor(size)
        for lnk in route:
            lat += lnk.latency_s
            bw = lnk.bandwidth_Bps
            penalty += lnk.latency_s + (S / bw if S else 0.0)
            if lnk.sharing is Sharing.FATPIPE:
                b = bw * bwf
                if b < bound:
                    bound = b
            elif lnk.model_data is None:
                self.add_link(lnk)
        if cfg.tcp_gamma > 0.0 and lat > 0.0:
            b = cfg.tcp_gamma / (2.0 * lat)
            if b < bound:
                bound = b
        f.coeff = 1.0 / bwf if bwf > 0 else 1.0
        f.bound = bound
        f.penalty = penalty if penalty > 0.0 else 1.0
        f.latency = lat * cfg.lat_factor(size)
        if self.on_flow_start:
            self.on_flow_start.emit(f)
        if f.latency > 0.0:
            f._lat_event = self.engine.schedule(f.latency, f._start_bandwidth_phase)
        else:
            f._start_bandwidth_phase()
        return f

    def update(self) -> None:
        self.dirty = False
        for v in self.system.solve():
            flow = v.data
            if flow is not None:
                flow._set_rate(v.value)
