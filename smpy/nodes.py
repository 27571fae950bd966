"""Dynamic node allocation from a program: reserve, release, power nodes off and on.

Under smpyrun these act on the simulated platform's node pool (:mod:`smpy.runtime.nodes`,
``docs/dynamic-allocation.md``); under a real ``mpiexec`` (or without MPI) they do nothing and
return empty results, so a malleable program runs unchanged on a real machine::

    import smpy.nodes
    hosts = smpy.nodes.allocate(2)            # reserve two nodes (booting off ones, waiting)
    info = MPI.Info.Create(); info.Set("host", hosts[0])
    child = MPI.COMM_SELF.Spawn(sys.executable, ["worker.py"], 4, info=info)
    ...
    smpy.nodes.release(hosts, power_off=True)  # back to the pool, then shut down
    smpy.nodes.power_off()                     # shut down every free node
    smpy.nodes.power_on(count=2)               # boot two off nodes into the free pool
    smpy.nodes.state()                         # {"node-0": "allocated", "node-5": "off", ...}

``MPI_Comm_spawn`` takes its nodes from the same pool (free nodes first, then off ones,
which boot); a node returns to the pool when its last process ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _proc() -> Any:
    from smpy.kernel.actors import current_actor

    a = current_actor()
    if a is None or a.data is None or not hasattr(a.data, "world"):
        return None
    p = a.data
    p.world.timing.flush(p)
    return p


def _names(hosts: str | Iterable[str] | None) -> list[str] | None:
    if hosts is None:
        return None
    return [hosts] if isinstance(hosts, str) else [str(h) for h in hosts]


def _done(p: Any) -> None:
    p.world.timing.restart(p)


def state() -> dict[str, str]:
    """Every node's state (``allocated``, ``free``, ``off``, ``booting``,
    ``shutting_down``) by host name; ``{}`` outside smpyrun."""
    p = _proc()
    if p is None:
        return {}
    out = p.world.nodes.states()
    _done(p)
    return out


def allocate(count: int) -> list[str]:
    """Reserve ``count`` nodes from the free pool (then off nodes, which boot: the call returns
    when they are up) for the caller's spawns (``host`` info key); fewer when the pool runs
    dry. They stay allocated until :func:`release`. ``[]`` outside smpyrun."""
    p = _proc()
    if p is None:
        return []
    from smpy.runtime.nodes import wait

    hosts, delay = p.world.nodes.allocate(int(count))
    wait(p.world.engine, delay)
    _done(p)
    return hosts


def release(hosts: str | Iterable[str], power_off: bool = False) -> list[str]:
    """Return reserved nodes to the free pool (a node still running processes returns when
    they end); with ``power_off`` shut the free ones down. Returns the nodes released."""
    p = _proc()
    if p is None:
        return []
    out = p.world.nodes.release(_names(hosts) or [], bool(power_off))
    _done(p)
    return out


def power_off(hosts: str | Iterable[str] | None = None) -> list[str]:
    """Shut down free nodes (``hosts``, default every free node): each draws its shutdown
    wattage for its shutdown time, then its off wattage. Returns the nodes shut down."""
    p = _proc()
    if p is None:
        return []
    out = p.world.nodes.power_off(_names(hosts))
    _done(p)
    return out


def power_on(hosts: str | Iterable[str] | None = None, count: int | None = None) -> list[str]:
    """Boot off nodes into the free pool without waiting (``hosts``, or the first ``count``
    off nodes, default all). Returns the nodes booting."""
    p = _proc()
    if p is None:
        return []
    out = p.world.nodes.power_on(_names(hosts), count)
    _done(p)
    return out
