r"""Flow-level network model (SimGrid's CM02 family: CM02, LV08, SMPI, raw).

A message of ``size`` bytes from host :math:`s` to host :math:`d` crosses the route
:math:`L = (l_1, …, l_k)` (loopback links when :math:`s = d`). Its transfer has two phases.

Latency phase
    :math:`T_\mathrm{lat} = f_\mathrm{lat}(\mathrm{size}) \cdot \sum_{l \in L} \lambda_l`
    seconds, where :math:`\lambda_l` is the latency of link :math:`l` and
    :math:`f_\mathrm{lat}` the latency factor (piecewise in size for the SMPI model).

Bandwidth phase
    the flow is a variable :math:`x` of the max-min system (:mod:`smpy.lmm`) with
    coefficient 1 on every shared link of the route and, with cross-traffic on (the
    default, modelling the TCP acknowledgements), coefficient 0.05 on every shared link of
    the *reverse* route. It is bounded by the slowest link of the route and by the TCP
    window: :math:`x \le \min(\min_l B_l,\ \gamma / (2 \sum_l \lambda_l))` (unfactored
    latency; fat-pipe links act through this bound only). The data progresses at
    :math:`f_\mathrm{bw}(\mathrm{size}) \cdot x` (SimGrid's *rate factor*): the bandwidth
    factor scales the throughput, not the share of the links. The sharing penalty is
    :math:`w = \sum_{l} (\lambda_l + S / B_l)` (RTT-unfair sharing, weight :math:`S`;
    :math:`w = 1` for a route without latency), so flows with longer round-trips get
    smaller shares, as TCP does. The phase lasts until ``size`` bytes went through.

Uncontended, the total time is
:math:`T = f_\mathrm{lat}\sum\lambda_l + \mathrm{size} / \big(f_\mathrm{bw} \min(\min_l B_l,\ \gamma/(2\sum\lambda_l))\big)`.
These are SimGrid's ``network_cm02.cpp`` semantics, so that smpy's predictions match SMPI's.

Models (``network/model``): ``CM02`` (factors 1, S = 0), ``LV08`` (latency factor 13.01,
bandwidth factor 0.97, S = 20537), ``SMPI`` (SimGrid's piecewise factors fitted on
Stampede, S = 8775), ``raw`` (factors 1, S = 0, no TCP bound: :math:`\lambda + s/B`).
``network/crosstraffic`` turns the reverse-route term off (``raw`` has it off).

Failures: :meth:`NetworkModel.fail_link` fails, at the current simulated time, every flow
whose (forward) route crosses the link, in its latency or its bandwidth phase, releasing its
share; a flow started over a failed link fails at once. ``fail_link`` and
``repair_link`` take the links of a route, so a SPLITDUPLEX link is failed by naming both
directions. Live flows are only tracked once a failure was armed (:meth:`track_flows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smpy.kernel import accel as _accel
from smpy.kernel.activity import RUNNING, ActivityFailed
from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharedActivity, SharingModel
from smpy.kernel.signals import Signal
from smpy.lmm import System
from smpy.lmm.maxmin import merge_uses
from smpy.network.links import Link, Sharing
from smpy.support import cext
from smpy.support.piecewise import Piecewise

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
    crosstraffic: bool = True


#: named models: (latency factor spec, bandwidth factor spec, weight S, TCP gamma)
NAMED_MODELS: dict[str, tuple[str, str, float, float]] = {
    "SMPI": (SMPI_LAT_FACTOR, SMPI_BW_FACTOR, 8775.0, 4194304.0),
    "LV08": ("13.01", "0.97", 20537.0, 4194304.0),
    "CM02": ("1", "1", 0.0, 4194304.0),
    "raw": ("1", "1", 0.0, 0.0),
}


class Flow(SharedActivity):
    """Transfer of ``total`` bytes along ``route`` (an activity; its life is
    :class:`smpy.kernel.sharing.SharedActivity`'s)."""

    __slots__ = ("route", "size", "latency")

    def __init__(self, model: NetworkModel, route: tuple[Link, ...], size: float, info: _RouteInfo,
                 bw_factor: float, lat_factor: float) -> None:
        # SharedActivity.__init__, RateActivity.__init__ and Activity.__init__, inlined: one
        # call per message instead of four (tests/kernel/test_flat_inits.py checks the fields)
        engine = self.engine = model.engine
        self.state = RUNNING
        self.waiters = []
        self.callbacks = None
        self.exception = None
        self.start_time = now = engine.now
        self.finish_time = -1.0
        self.total = size
        self.remaining = size
        self.rate = 0.0
        self.last_update = now
        self._done_event = None
        self.model = model
        self.var = None
        self.penalty = info.penalty
        self.bound = info.bound
        self.uses = info.uses
        self.rate_factor = bw_factor
        self._lat_event = None
        self.route = route
        self.size = size
        self.latency = info.lat * lat_factor

    def _on_empty(self) -> None:
        if self.model._live is not None:
            self.model._live.pop(self, None)
        self._finish()

    def _release(self) -> None:
        model = self.model
        if model._live is not None:
            model._live.pop(self, None)
        var = self.var
        if var is not None:  # SharedActivity._release, inlined (once per message)
            self.var = None
            if model.system.remove(var):  # alone on its constraints: nothing to re-solve
                model.dirty = True
        if model.on_flow_end._slots:
            model.on_flow_end.emit(self)

    def _work_done(self) -> None:
        # RateActivity._work_done with SharedActivity._on_work_done inlined (once per message)
        self._done_event = None
        self.remaining = 0.0
        self.last_update = self.engine.now
        self._release()
        self._finish()

    def describe(self) -> str:
        names = ",".join(lnk.name for lnk in self.route)
        return f"transfer of {self.total:.6g} B over [{names}]"


class _RouteInfo:
    """What :meth:`NetworkModel.communicate` needs of a route, whatever the message size."""

    __slots__ = ("lat", "penalty", "bound", "uses")

    def __init__(self, lat: float, penalty: float, bound: float, uses: tuple) -> None:
        self.lat = lat              # sum of the link latencies (s), unfactored
        self.penalty = penalty      # sharing penalty: sum of (latency + S / bandwidth), 1 without latency
        self.bound = bound          # min(slowest link, gamma / (2 lat))
        self.uses = uses            # (constraint, coefficient): forward 1, reverse 0.05


#: factor tables whose value depends on the size alone, so that it can be cached per size
_PURE_FACTORS = (Piecewise,)
_FACTOR_CACHE_MAX = 4096


class NetworkModel(SharingModel):
    # read at every message (issue 24): slots; the others stay in the instance dict
    __slots__ = ("_live", "_routes", "_factors", "on_flow_start", "on_flow_end")

    def __init__(self, engine: Engine, links: list[Link], config: NetworkConfig) -> None:
        super().__init__(engine, System())
        self.config = config
        for lnk in links:
            self.add_link(lnk)
        self.on_flow_start = Signal("flow_start")
        self.on_flow_end = Signal("flow_end")
        #: live flows (insertion ordered), only while failures may happen (track_flows)
        self._live: dict[Flow, None] | None = None
        self._down: set[Link] = set()
        #: route tuple -> _RouteInfo. Links are fixed during a run; a model that changes a
        #: link's latency or bandwidth must call :meth:`invalidate_routes`.
        self._routes: dict[tuple, _RouteInfo] = {}
        #: size -> (bandwidth factor, latency factor), when both factors are pure tables
        self._factors: dict[float, tuple[float, float]] | None = (
            {} if isinstance(config.bw_factor, _PURE_FACTORS) and isinstance(config.lat_factor, _PURE_FACTORS)
            else None)
        engine.add_model(self)

    def add_link(self, lnk: Link) -> None:
        if lnk.sharing is not Sharing.FATPIPE and lnk.model_data is None:
            lnk.model_data = self.system.constraint(lnk.bandwidth_Bps, data=lnk)

    def invalidate_routes(self) -> None:
        """Forget the per-route figures (call after changing a link's latency or bandwidth)."""
        self._routes.clear()

    def _route_info(self, route: tuple[Link, ...], back_route: tuple[Link, ...]) -> _RouteInfo:
        cfg = self.config
        S = cfg.weight_S
        lat = 0.0
        penalty = 0.0
        bound = math.inf
        uses: list[tuple] = []
        for lnk in route:
            lat += lnk.latency_s
            bw = lnk.bandwidth_Bps
            penalty += lnk.latency_s + (S / bw if S else 0.0)
            bound = min(bound, bw)
            if lnk.sharing is not Sharing.FATPIPE:
                if lnk.model_data is None:
                    self.add_link(lnk)
                uses.append((lnk.model_data, 1.0))
        if cfg.crosstraffic:
            for lnk in back_route:
                if lnk.sharing is not Sharing.FATPIPE:
                    if lnk.model_data is None:
                        self.add_link(lnk)
                    uses.append((lnk.model_data, 0.05))
        if cfg.tcp_gamma > 0.0 and lat > 0.0:
            bound = min(bound, cfg.tcp_gamma / (2.0 * lat))
        return _RouteInfo(lat, penalty if lat > 0.0 else 1.0, bound, merge_uses(uses))

    def communicate(self, route: tuple[Link, ...], size: float, back_route: tuple[Link, ...] = ()) -> Flow:
        """Start a transfer of ``size`` bytes along ``route`` (``back_route`` carries the
        cross-traffic); returns the flow activity."""
        try:
            info = self._routes[route]
        except KeyError:
            info = self._routes[route] = self._route_info(route, back_route)
        except TypeError:  # not hashable (a list): compute, do not cache
            info = self._route_info(tuple(route), tuple(back_route))
        factors = self._factors
        if factors is None:
            bwf = self.config.bw_factor(size)
            latf = self.config.lat_factor(size)
        else:
            fl = factors.get(size)
            if fl is None:
                if len(factors) >= _FACTOR_CACHE_MAX:
                    factors.clear()
                fl = factors[size] = (self.config.bw_factor(size), self.config.lat_factor(size))
            bwf, latf = fl
        f = Flow(self, route, size, info, bwf, latf)
        if self.on_flow_start._slots:
            self.on_flow_start.emit(f)
        if self._live is not None:
            self._live[f] = None
            if self._down:
                down = next((lnk for lnk in route if not lnk.is_on), None)
                if down is not None:
                    self._fail_flow(f, down)
                    return f
        if f.latency > 0.0:  # f.start(f.latency), inlined
            f._lat_event = self.engine.schedule(f.latency, f._start_bandwidth_phase)
        else:
            f._start_bandwidth_phase()
        return f

    def track_flows(self) -> None:
        """Keep the set of live flows, which :meth:`fail_link` needs (armed failures only)."""
        if self._live is None:
            self._live = {}

    def fail_link(self, lnk: Link) -> list[Flow]:
        """``lnk`` fails now: the flows crossing it fail (returned in start order)."""
        self.track_flows()
        lnk.is_on = False
        self._down.add(lnk)
        hit = [f for f in self._live if f.state == RUNNING and lnk in f.route]  # type: ignore[union-attr]
        for f in hit:
            self._fail_flow(f, lnk)
        return hit

    def repair_link(self, lnk: Link) -> None:
        lnk.is_on = True
        self._down.discard(lnk)

    def _fail_flow(self, f: Flow, lnk: Link) -> None:
        f._sync()
        f._on_cancel()  # the share, the pending events
        f._fail(ActivityFailed(f"link {lnk.name} failed"))


# -- the compiled twin (smpy.kernel.accel) ------------------------------------------------------
def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) pairs of :meth:`NetworkModel.communicate`, :meth:`Flow._release`,
    :meth:`Flow._work_done` and of the shared-activity life (:meth:`SharedActivity._start_bandwidth_phase`,
    :meth:`SharingModel.update`) from ``_netaccel.c`` (none when it cannot be built). The
    compiled ``communicate`` does the common case (a route and a size seen before, no flow
    signal, no tracked flows) and hands the rest to the Python method."""
    mod, _why = cext.load(Path(__file__).with_name("_netaccel.c"), "smpy.network._netaccel")
    if mod is None:
        return []
    py_comm = NetworkModel.__dict__["communicate"]
    kernel = _accel.load()  # its bound methods' kept memory (the events' callbacks), when built
    c = mod.setup(globals(), Flow, _RouteInfo, SharedActivity, SharingModel, NetworkModel, py_comm,
                  None if kernel is None else kernel.bound_api())
    _accel.fast_dealloc(Flow)
    return [(py_comm, c["communicate"]), (Flow.__dict__["_release"], c["_release"]),
            (Flow.__dict__["_work_done"], c["_work_done"]),
            (SharedActivity.__dict__["_start_bandwidth_phase"], c["_start_bandwidth_phase"]),
            (SharingModel.__dict__["update"], c["update"])]


_accel.register(_compiled)
