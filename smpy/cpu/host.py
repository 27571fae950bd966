r"""Compute resources: hosts with cores and performance states.

A host has ``cores`` identical cores. Each performance state (pstate) ``p`` gives the speed
of one core, ``speeds_flops[p]`` in flop/s; the host computes at most
``cores × speeds_flops[pstate]`` flop/s in total and one execution uses at most one core.

The memory-bound part of a computation (:mod:`smpy.cpu.model`) does not speed up or slow down
with the pstate: it runs at ``top_speed``, the fastest pstate's speed, whatever the pstate.
Memory capacity: ``ram`` and ``swap`` (bytes) and ``memory_slowdown``, the factor
:math:`1 + \alpha(M)` of :mod:`smpy.cpu.memory` by which every computation of the host is
slowed while its ranks occupy :math:`M` bytes.
Memory: ``memory_bandwidth`` (:math:`B`, bytes/s, every core streaming) and
``core_memory_bandwidth`` (:math:`b_1`, one core streaming alone) give the contention factor
:math:`\sigma(k) = \max(1, k b_1 / B)` of :mod:`smpy.cpu.model`; both infinite (the default)
mean no contention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from smpy.cpu.memory import DEFAULT_CURVE, SwapCurve


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
    #: aggregate memory bandwidth (bytes/s) and that of one core alone; inf: not modelled
    memory_bandwidth: float = math.inf
    core_memory_bandwidth: float = math.inf
    #: main memory and swap (bytes; ram inf: capacity not modelled) and the delay function's
    #: coefficients (smpy.cpu.memory)
    ram: float = math.inf
    swap: float = 0.0
    swap_curve: SwapCurve = DEFAULT_CURVE
    #: 1 + alpha(M): how many times slower computations progress because of the memory its
    #: ranks occupy (set by the runtime's memory accounting, then CpuModel.host_changed)
    memory_slowdown: float = 1.0
    #: model-side state owned by the CPU model; never set elsewhere
    model_data: object = None
    #: speed of one core at the fastest pstate (the memory-bound part of a computation runs at
    #: the memory's pace whatever the pstate, see smpy.cpu.model)
    top_speed: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.top_speed = max(self.speeds_flops) if self.speeds_flops else 0.0

    @property
    def speed_flops(self) -> float:
        """Speed of one core at the current pstate (flop/s)."""
        return self.speeds_flops[self.pstate]

    def memory_contention(self, k: float) -> float:
        r""":math:`\sigma(k)`: how much slower the memory-bound part of a computation runs while
        ``k`` cores of this host run memory-bound code (1 when memory is not modelled)."""
        b, b1 = self.memory_bandwidth, self.core_memory_bandwidth
        if b == math.inf or b1 == math.inf:
            return 1.0
        return max(1.0, k * b1 / b)

    @property
    def pstate_count(self) -> int:
        return len(self.speeds_flops)

    def __repr__(self) -> str:
        return f"Host({self.name!r}, cores={self.cores}, speed={self.speed_flops:g} f/s)"
