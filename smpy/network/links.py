"""Network resources: links and their sharing policies.

A link is a resource of capacity ``bandwidth_Bps`` (bytes per second) crossed after a
propagation delay ``latency_s`` (seconds).

Sharing policies (SimGrid semantics):

* ``SHARED``: every flow crossing the link shares its capacity,
  Σ_f rate_f ≤ bandwidth.
* ``FATPIPE``: each flow alone is limited by the capacity, rate_f ≤ bandwidth, and flows do
  not compete with each other (a backbone much wider than any endpoint).
* ``SPLITDUPLEX``: the link is two ``SHARED`` links, one per direction; a route names the
  direction it crosses. Platform builders materialise it as two :class:`Link` objects
  called ``NAME_UP`` and ``NAME_DOWN``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Sharing(enum.Enum):
    SHARED = "SHARED"
    FATPIPE = "FATPIPE"
    SPLITDUPLEX = "SPLITDUPLEX"


@dataclass(eq=False)
class Link:
    """One direction of a physical link (SPLITDUPLEX links are two of these)."""

    name: str
    bandwidth_Bps: float
    latency_s: float
    sharing: Sharing = Sharing.SHARED
    properties: dict[str, str] = field(default_factory=dict)
    #: index in the platform's link list, set by the platform builder
    index: int = -1
    #: solver-side state owned by the network model (constraint handle); never set elsewhere
    model_data: object = None
    #: False while the link is failed (:meth:`smpy.network.model.NetworkModel.fail_link`)
    is_on: bool = True

    def __repr__(self) -> str:
        return f"Link({self.name!r}, {self.bandwidth_Bps:g} B/s, {self.latency_s:g} s, {self.sharing.value})"
