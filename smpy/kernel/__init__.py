"""Discrete-event kernel: clock, event heap, actors on greenlets, activities, signals.

Knows nothing of MPI. See :mod:`smpy.kernel.engine` for the run loop and
:mod:`smpy.kernel.actors` for the only code that switches greenlets.
"""

from smpy.kernel.activity import Activity, ActivityFailed, Sleep
from smpy.kernel.actors import Actor, ActorKilled, block_on, block_on_any, current_actor
from smpy.kernel.engine import DeadlockError, Engine, Event
from smpy.kernel.signals import Signal

__all__ = [
    "Activity",
    "ActivityFailed",
    "Actor",
    "ActorKilled",
    "DeadlockError",
    "Engine",
    "Event",
    "Signal",
    "Sleep",
    "block_on",
    "block_on_any",
    "current_actor",
]
