"""Compute resources: hosts with cores and performance states.

A host has ``cores`` identical cores. Each performance state (pstate) ``p`` gives the speed
of one core, ``speeds_flops[p]`` in flop/s; the host computes at most
``cores × speeds_flops[pstate]`` flop/s in total and one execution uses at most one core.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Host:
    name: str
    cores: int
    speeds_flops: list[float]
    pstate: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    #: index in the platform's host list, set by the platform builder
    index: int = -1
    #: whether the host is powered on (failures / energy plugins flip it)
    is_on: bool = True
    #: model-side state owned by the CPU model; never set elsewhere
    model_data: object = None

    @property
    def speed_flops(self) -> float:
        """Speed of one core at the current pstate (flop/s)."""
        return self.speeds_flops[self.pstate]

    @property
    def pstate_count(self) -> int:
        return len(self.speeds_flops)

    def __repr__(self) -> str:
        return f"Host({self.name!r}, cores={self.cores}, speed={self.speed_flops:g} f/s)"
