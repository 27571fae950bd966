r"""Activities that share resources through a max-min system, and the models that own them.

The network flows and the disk operations have the same life, written once here:

1. **latency phase**: :math:`\lambda` seconds (an event), the activity holds no share;
2. **bandwidth phase**: the activity becomes a variable :math:`x` of its model's max-min
   system (``model.system``, a :class:`smpy.lmm.System`) with sharing penalty :math:`w`,
   bound :math:`x \le b` and the coefficients ``uses`` = :math:`((c_1, a_1), …)` on the
   constraints it uses; its work progresses at :math:`f \cdot x` (``rate_factor``
   :math:`f`, 1 unless the model scales the throughput) until ``total`` units went
   through; an activity of 0 units ends when the latency phase does;
3. **end** (work done, cancelled or failed): the variable leaves the system, and the model is
   re-solved at the end of the round if that changed another activity's share.

:class:`SharingModel` is the model's side: after each round in which the system changed
(``model.dirty``), :meth:`SharingModel.update` solves it and hands each activity whose share
changed its new rate :math:`f \cdot x`. The kernel knows the system only through
``variable``, ``remove`` (which returns ``dirty``), ``dirty`` and ``solve``: models build it (:mod:`smpy.lmm`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from smpy.kernel.activity import RUNNING, RateActivity

if TYPE_CHECKING:
    from smpy.kernel.engine import Engine, Event


class SharingModel:
    """A model whose activities share its resources through one max-min ``system``."""

    # read at every message (issue 24): slots; a subclass's other attributes go to its dict
    __slots__ = ("engine", "system", "dirty", "__dict__", "__weakref__")

    def __init__(self, engine: Engine, system: Any) -> None:
        self.engine = engine
        self.system = system
        self.dirty = False

    def update(self) -> None:
        """Re-solve the system; new rates for the activities whose share changed."""
        self.dirty = False
        for v in self.system.solve():
            act = v.data
            if act is not None:
                act._set_rate(v.value * act.rate_factor)


class SharedActivity(RateActivity):
    """``total`` units of work: a latency phase, then a variable of ``model.system``
    (the module docstring): sharing penalty, bound, ``uses`` (each constraint once,
    positive coefficients) and rate factor."""

    __slots__ = ("model", "var", "penalty", "bound", "uses", "rate_factor", "_lat_event")

    def __init__(self, model: SharingModel, amount: float, penalty: float = 1.0, bound: float = math.inf,
                 uses: tuple = (), rate_factor: float = 1.0) -> None:
        super().__init__(model.engine, amount)
        self.model = model
        self.var: Any = None
        self.penalty = penalty
        self.bound = bound
        self.uses = uses
        self.rate_factor = rate_factor
        self._lat_event: Event | None = None

    def start(self, latency: float) -> None:
        """Begin the latency phase (the bandwidth phase at once when ``latency`` is 0)."""
        if latency > 0.0:
            self._lat_event = self.engine.schedule(latency, self._start_bandwidth_phase)
        else:
            self._start_bandwidth_phase()

    def _start_bandwidth_phase(self) -> None:
        self._lat_event = None
        if self.state != RUNNING:
            return
        if self.total <= 0.0:
            self._on_empty()
            return
        self.last_update = self.engine.now
        m = self.model
        self.var = m.system.variable(self.penalty, self.bound, self.uses, self, True)  # data, unique
        m.dirty = True

    def _on_empty(self) -> None:
        """An activity of 0 units: done when its latency phase is."""
        self._finish()

    def _on_work_done(self) -> None:
        self._release()
        self._finish()

    def _on_cancel(self) -> None:
        super()._on_cancel()
        if self._lat_event is not None:
            self._lat_event.cancelled = True
        self._release()

    def _release(self) -> None:
        """Leave the system (the share goes back to the others)."""
        if self.var is not None:
            dirty = self.model.system.remove(self.var)  # the system's ``dirty`` after the removal
            self.var = None
            if dirty:  # alone on its constraints: nothing to re-solve
                self.model.dirty = True
