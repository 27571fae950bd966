r"""Link energy (SimGrid's ``link_energy`` plugin): power linear in a link's utilisation.

A link direction with the profile ``wattage_range = "idle:busy"`` (YAML: ``power: {idle,
busy}``) of bandwidth :math:`B` draws

.. math::

    P(t) = P_\mathrm{idle} + (P_\mathrm{busy} - P_\mathrm{idle})\, u(t) / B,
    \qquad u(t) = \sum_{f \ni l} a_{l,f}\, x_f(t)

where :math:`x_f` is the max-min share of each flow crossing the link and :math:`a_{l,f}` its
coefficient there (1 forward, 0.05 for the cross-traffic of a reverse flow): :math:`u` is the
usage of the link's constraint, SimGrid's ``Link::get_usage()``. The energy is the exact
integral

.. math::

    E_l = P_\mathrm{idle}\, T + \frac{P_\mathrm{busy} - P_\mathrm{idle}}{B}
          \int_0^T u(t)\, dt

accumulated at every advance of the clock over the flows then in their bandwidth phase.
SimGrid instead samples :math:`P` when a communication starts or ends and applies it to the
whole interval since its previous sample, which over- or under-counts when several flows
overlap; smpy integrates the piecewise-constant usage exactly. Fat-pipe links (no shared
constraint) draw their idle power.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.support.units import parse_power

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine
    from smpy.network.links import Link
    from smpy.network.model import Flow, NetworkModel


def parse_wattage_range(text: str, where: str = "") -> tuple[float, float]:
    """``"idle:busy"`` in watts (SimGrid accepts a comma-separated list and uses its entries
    in turn; only one pair means anything for a link, so one is expected)."""
    parts = [x.strip() for x in text.split(":")]
    if len(parts) != 2:
        raise ValueError(f"{where}wattage_range: expected 'idle:busy' in watts, found {text!r}")
    try:
        return parse_power(parts[0]), parse_power(parts[1])
    except ValueError as exc:
        raise ValueError(f"{where}wattage_range: {exc}") from None


class _LinkRecord:
    __slots__ = ("link", "idle", "slope", "usage_integral")

    def __init__(self, link: Link, idle: float, busy: float) -> None:
        self.link = link
        self.idle = idle
        self.slope = (busy - idle) / link.bandwidth_Bps
        self.usage_integral = 0.0  # ∫ u dt, in bytes

    def energy(self, now: float) -> float:
        return self.idle * now + self.slope * self.usage_integral


class LinkEnergy:
    """Integrates the power of every link that has a profile; attach before the run."""

    def __init__(self, engine: Engine, net: NetworkModel, links: list[Link]) -> None:
        self.engine = engine
        self.records: list[_LinkRecord] = []
        self._by_constraint: dict[int, _LinkRecord] = {}
        for lnk in links:
            text = lnk.properties.get("wattage_range") or lnk.properties.get("watt_range")
            if not text:
                continue
            idle, busy = parse_wattage_range(text, f"link {lnk.name}: ")
            rec = _LinkRecord(lnk, idle, busy)
            self.records.append(rec)
            cnst = lnk.model_data
            if cnst is not None:
                self._by_constraint[id(cnst)] = rec
        self._flows: dict[int, Flow] = {}
        if self._by_constraint:
            net.on_flow_start.connect(self._flow_start)
            net.on_flow_end.connect(self._flow_end)
            engine.on_time_advance.connect(self._advance)

    def _flow_start(self, flow: Flow) -> None:
        self._flows[id(flow)] = flow

    def _flow_end(self, flow: Flow) -> None:
        self._flows.pop(id(flow), None)

    def _advance(self, old: float, new: float) -> None:
        dt = new - old
        if dt <= 0.0:
            return
        by_c = self._by_constraint
        for flow in self._flows.values():
            var = flow.var
            if var is None or var.value <= 0.0:
                continue
            x = var.value * dt
            for cnst, coeff in var.elements:
                rec = by_c.get(id(cnst))
                if rec is not None:
                    rec.usage_integral += coeff * x

    def consumed(self, link: Link) -> float:
        now = self.engine.now
        for rec in self.records:
            if rec.link is link:
                return rec.energy(now)
        return 0.0

    def report(self) -> dict[str, object]:
        now = self.engine.now
        per_link = {r.link.name: r.energy(now) for r in self.records}
        return {"links_J": sum(per_link.values()), "per_link_J": per_link}
