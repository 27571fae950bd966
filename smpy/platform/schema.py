"""The platform file format (YAML), as pydantic models, and its error messages.

A platform file describes the simulated machine: hosts (cores, speed per core and per
performance state), links (bandwidth, latency, sharing policy) and how hosts reach each other.
It follows SimGrid's platform vocabulary (``<zone>``, ``<cluster>``, ``<host>``, ``<link>``,
``<route>``, ``<zoneRoute>``) with units written as strings (see :mod:`smpy.support.units`)
and read into SI floats here. The reference, with an example of each construct, is
``docs/platforms.md``; SimGrid XML files are read into the same data by
:mod:`smpy.platform.xml`.

Format (summary)
----------------
::

    name: cluster64              # optional; defaults to the file name without extension
    config: {network/model: SMPI}   # optional: defaults for --cfg settings, as strings
    storage: [StorageSpec]       # optional: disks for MPI-IO (default: one shared disk)
    filesystems: [FileSystemSpec]  # optional: parallel/local/virtual file systems by mount
    # then one of:
    clusters: [ClusterSpec]      # exactly one cluster: the whole platform
    zone: ZoneSpec               # a SimGrid zone tree (clusters, zones, routes with gateways)
    hosts/routers/links/routes   # hosts and declared routes, least-latency paths between others

    ClusterSpec: name, prefix, suffix, radical | count, cores, speed (list = pstates), pstate,
                 bandwidth, latency, sharing (SPLITDUPLEX|SHARED|FATPIPE),
                 topology (FLAT|TORUS|FAT_TREE|DRAGONFLY), topo_parameters,
                 backbone {bandwidth, latency, sharing}, router, limiter,
                 loopback {bandwidth, latency}, properties, memory, ram, swap,
                 memory_slowdown {ram, swap, growth}, power, node
    ZoneSpec:    name, routing (Full|Floyd|Dijkstra|DijkstraCache|None|Cluster), properties,
                 hosts, routers, links, clusters, zones, routes, backbone, host_links, order
    HostSpec:    name, speed, cores, pstate, properties, memory, ram, swap, memory_slowdown, power,
                 node
    NodeSpec:    state (on|off), boot {time, power}, shutdown {time, power}  (dynamic allocation)
    MemorySpec:  bandwidth, core_bandwidth (all cores streaming / one core alone)
    LinkSpec:    name, bandwidth, latency, sharing (SHARED|FATPIPE|SPLITDUPLEX), properties
    RouteSpec:   src, dst, links, symmetric, gw_src, gw_dst
    StorageSpec: name, read_bandwidth, write_bandwidth, latency, hosts | per_host
    FileSystemSpec: name, kind (parallel|local|virtual), mount, default, servers,
                 metadata_server, stripe_size, stripe_count, disk {kind (simple|hdd|ssd),
                 read, write, read_stream, write_stream, latency, seek, rpm, channels}, cache {size}, keep

Meaning (SimGrid's, see ``docs/research/smpi_features.md`` §2.10 and ``docs/platforms.md``):
a SPLITDUPLEX link ``l`` is two links ``l_UP`` and ``l_DOWN``, and a symmetric route's reverse
swaps them; cluster links are named ``<cluster>_link_<i>[_UP|_DOWN|_limiter|_loopback]`` and
``<cluster>_backbone``; the platform-wide ``__loopback__`` link (``network/loopback-bw``,
``network/loopback-lat``) carries messages from a host to itself when nothing else does.

Unknown keys are errors. Every error names the file, the field path (``clusters[0].bandwidth``)
and what was expected; the XML importer names the line, element and attribute instead.
"""

from __future__ import annotations

import difflib
import math
import re
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from smpy.platform.errors import Locator, PlatformError, format_path
from smpy.platform.failures import PROPERTY as _FAILURES_PROPERTY
from smpy.platform.failures import failure_profile
from smpy.platform.limits import MAX_CORES, MAX_HOSTS
from smpy.support.units import (
    UnitError,
    parse_bandwidth,
    parse_power,
    parse_size,
    parse_speed,
    parse_time,
)

__all__ = [
    "PlatformError",
    "PlatformSpec",
    "ZoneSpec",
    "ClusterSpec",
    "HostSpec",
    "LinkSpec",
    "RouteSpec",
    "BackboneSpec",
    "LoopbackSpec",
    "ZoneBackboneSpec",
    "HostLinkSpec",
    "StorageSpec",
    "FileSystemSpec",
    "Locator",
    "topology_size",
    "parse_radical",
    "validate_spec",
    "format_path",
]


# ------------------------------------------------------------------------- field validators
# Each validator accepts Any and returns the final value, so pydantic reports our message only.

def _unit(parse: Callable[[Any], float], expected: str, *, positive: bool) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        try:
            result = parse(value)
        except UnitError as err:
            raise ValueError(f"expected {expected}, found {value!r} (units: {err.units})"
                             ) from None
        if not math.isfinite(result):
            raise ValueError(f"expected {expected}, found {value!r} (not finite)")
        if positive and result <= 0:
            raise ValueError(f"expected {expected} greater than zero, found {value!r}")
        if result < 0:
            raise ValueError(f"expected {expected} (zero or more), found {value!r}")
        return result
    return check


_BANDWIDTH_HINT = "a bandwidth like '10Gbps' or '1.25GBps'"
_TIME_HINT = "a latency like '50us' or '0s'"
_SPEED_HINT = "a speed like '1Gf' or '2.5Gflops'"

Bandwidth = Annotated[float, BeforeValidator(_unit(parse_bandwidth, _BANDWIDTH_HINT,
                                                   positive=True))]
Latency = Annotated[float, BeforeValidator(_unit(parse_time, _TIME_HINT, positive=False))]


def _speeds(value: Any) -> tuple[float, ...]:
    expected = f"{_SPEED_HINT}, or a list of them (one per pstate)"
    items: list[Any]
    if isinstance(value, str) and "," in value:  # SimGrid's "1Gf,800Mf"
        items = [item.strip() for item in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    if not items:
        raise ValueError(f"expected {expected}, found an empty list")
    # a pstate may have speed 0 (a host switched off, as in SimGrid's energy examples); the
    # initial pstate's speed is checked by _check_pstate
    check = _unit(parse_speed, _SPEED_HINT, positive=len(items) == 1)
    speeds = []
    for i, item in enumerate(items):
        try:
            speeds.append(check(item))
        except ValueError as err:
            if len(items) == 1:
                raise
            raise _FieldError(i, str(err)) from None
    return tuple(speeds)


Speeds = Annotated[tuple[float, ...], BeforeValidator(_speeds)]


def _integer(minimum: int, what: str, maximum: int | None = None) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            value = float(value)  # YAML 1.1 reads 1e+30 (no dot) as a string
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            if maximum is not None and value > maximum:
                raise ValueError(f"expected {what}, found {value!r} (more than {maximum})")
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected {what}, found {value!r}")
        if value < minimum:
            raise ValueError(f"expected {what}, found {value!r}")
        if maximum is not None and value > maximum:
            raise ValueError(f"expected {what}, found {value!r} (more than {maximum})")
        return value
    return check


_NUMBER = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+")

Cores = Annotated[int, BeforeValidator(_integer(1, "a whole number of cores, 1 or more",
                                                MAX_CORES))]
Count = Annotated[int, BeforeValidator(_integer(1, "a whole number of hosts, 1 or more",
                                                MAX_HOSTS))]
Pstate = Annotated[int, BeforeValidator(_integer(0, "a pstate index, 0 or more", 1_000_000))]

_NAME_CHARS = re.compile(r"[^\s:#,]+")


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME_CHARS.fullmatch(value):
        raise ValueError("expected a name: a non-empty string without spaces, ':', '#' or ',', "
                         f"found {value!r}")
    return value


def _affix(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        text = str(value)
        if text == "" or _NAME_CHARS.fullmatch(text):
            return text
    raise ValueError("expected a host-name prefix or suffix (a string without spaces, ':', '#' "
                     f"or ','), found {value!r}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"expected a string or a number, found {value!r}")


def _text_map(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of names to values, found {value!r}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValueError(f"expected string keys, found {key!r}")
        try:
            out[key] = _text(item)
        except ValueError as err:
            raise ValueError(f"{key}: {err}") from None
    return out


Name = Annotated[str, BeforeValidator(_name)]
Affix = Annotated[str, BeforeValidator(_affix)]
Properties = Annotated[dict[str, str], BeforeValidator(_text_map)]


def _sharing_name(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip().upper()
        if value == "FULLDUPLEX":  # SimGrid's deprecated spelling of SPLITDUPLEX
            return "SPLITDUPLEX"
    return value


SharingName = Annotated[Literal["SHARED", "FATPIPE", "SPLITDUPLEX"], BeforeValidator(_sharing_name)]
BackboneSharing = Annotated[Literal["SHARED", "FATPIPE"], BeforeValidator(_sharing_name)]


def parse_radical(text: str) -> list[int]:
    """SimGrid's radical syntax: ``"0-3,6,9-11"`` → ``[0, 1, 2, 3, 6, 9, 10, 11]``."""
    ranges: list[range] = []
    for group in str(text).split(","):
        ends = [end.strip() for end in group.split("-")]
        if len(ends) > 2 or not all(end.isascii() and end.isdigit() for end in ends):
            raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {text!r} "
                             f"(bad group {group.strip()!r})")
        start, stop = int(ends[0]), int(ends[-1])
        if stop < start:
            raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {text!r} "
                             f"(range {group.strip()!r} runs backwards)")
        ranges.append(range(start, stop + 1))
    total = sum(r.stop - r.start for r in ranges)
    if total > MAX_HOSTS:
        raise ValueError(f"the radical {_short(text)} names {total} hosts, more than {MAX_HOSTS}")
    return [n for r in ranges for n in r]


def _radical(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {value!r}")
    return tuple(parse_radical(value))


Radical = Annotated[tuple[int, ...] | None, BeforeValidator(_radical)]


# ---------------------------------------------------------------------------------- models

class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_Watts = Annotated[float, BeforeValidator(lambda v: _unit(parse_power, "a power like '10W'",
                                                          positive=False)(v))]


class LinkPowerSpec(_Spec):
    """Power of one link direction (SimGrid's link_energy plugin): ``idle`` when nothing
    flows, ``busy`` at full bandwidth, linear in between."""

    idle: _Watts
    busy: _Watts

    def properties(self) -> dict[str, str]:
        return {"wattage_range": f"{self.idle!r}:{self.busy!r}"}


#: a failure model (smpy.platform.failures): kept as its canonical property text
Failures = Annotated[str | None, BeforeValidator(failure_profile)]


def link_properties(properties: dict[str, str], power: LinkPowerSpec | None,
                    failures: str | None = None) -> dict[str, str]:
    props = dict(properties)
    if power is not None:
        props.update(power.properties())
    if failures:
        props[_FAILURES_PROPERTY] = failures
    return props


class BackboneSpec(_Spec):
    bandwidth: Bandwidth
    latency: Latency = 0.0
    sharing: BackboneSharing = "SHARED"
    power: LinkPowerSpec | None = None


class LoopbackSpec(_Spec):
    bandwidth: Bandwidth
    latency: Latency = 0.0


class MemorySpec(_Spec):
    """A host's memory bandwidth, for the contention model of :mod:`smpy.cpu.model`:
    ``bandwidth`` with every core streaming at once, ``core_bandwidth`` with one core alone
    (``smpy calibrate memory`` measures both)."""

    bandwidth: Bandwidth
    core_bandwidth: Bandwidth

    @model_validator(mode="after")
    def _check(self) -> MemorySpec:
        if self.core_bandwidth > self.bandwidth:
            raise _FieldError("core_bandwidth", f"one core cannot stream faster than the whole host: "
                              f"core_bandwidth {self.core_bandwidth:g} B/s is above bandwidth "
                              f"{self.bandwidth:g} B/s")
        return self


#: a host's ``ram`` / ``swap`` (a size like '16GiB'; _size_field is defined further down)
MemSize = Annotated[float, BeforeValidator(lambda v: _size_field(v))]


class MemorySlowdownSpec(_Spec):
    """The delay function of :mod:`smpy.cpu.memory` (UniMPP): ``ram`` = slowdown at full
    memory, ``swap`` and ``growth`` = the exponential once swapping."""

    ram: float = 0.0123
    swap: float = 0.05
    growth: float = 4.0

    @model_validator(mode="after")
    def _check(self) -> MemorySlowdownSpec:
        for key in ("ram", "swap", "growth"):
            v = getattr(self, key)
            if not (math.isfinite(v) and v >= 0):
                raise _FieldError(key, f"expected a finite number, zero or more, found {v!r}")
        return self


def _check_ram(spec: Any) -> None:
    """``swap`` and ``memory_slowdown`` need ``ram``; ``ram`` is positive."""
    if spec.ram is None:
        for key in ("swap", "memory_slowdown"):
            if getattr(spec, key):
                raise _FieldError(key, "needs `ram` (the host's main memory, like '16GiB')")
    elif spec.ram <= 0:
        raise _FieldError("ram", f"expected a positive size like '16GiB', found {spec.ram:g}")


_TOPOLOGIES = ("FLAT", "TORUS", "FAT_TREE", "DRAGONFLY")


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


Topology = Annotated[Literal["FLAT", "TORUS", "FAT_TREE", "DRAGONFLY"], BeforeValidator(_upper)]

_ROUTINGS = {name.lower(): name for name in
             ("Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Cluster")}


def _routing(value: Any) -> Any:
    if isinstance(value, str):
        return _ROUTINGS.get(value.strip().lower(), value)
    if value is None:  # YAML's `None` is a null; SimGrid's routing="None" is a name
        return "None"
    return value


RoutingName = Annotated[Literal["Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Cluster"],
                        BeforeValidator(_routing)]


def _topo_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _optional_bandwidth(value: Any) -> float | None:
    if value is None:
        return None
    return _unit(parse_bandwidth, _BANDWIDTH_HINT, positive=True)(value)


_POWER_HINT = "a power like '100W' or '1.2kW'"


def _power_triple(value: Any) -> tuple[float, float, float]:
    """One pstate's wattage: ``{idle, epsilon, all_cores}``, ``[idle, epsilon, all_cores]``,
    ``[idle, all_cores]`` or SimGrid's ``"idle:epsilon:all_cores"`` (bare numbers are watts)."""
    expected = ("`{idle: 100W, epsilon: 93W, all_cores: 200W}`, a list `[100W, 93W, 200W]` or "
                "SimGrid's '100:93:200'")
    if isinstance(value, dict):
        unknown = set(value) - {"idle", "epsilon", "all_cores"}
        if unknown or "idle" not in value or "all_cores" not in value:
            raise ValueError(f"expected {expected} (`epsilon` defaults to `idle`), found "
                             f"{_short(value)}")
        items = [value["idle"], value.get("epsilon", value["idle"]), value["all_cores"]]
    elif isinstance(value, str):
        items = [x.strip() for x in value.split(":")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError(f"expected {expected}, found {_short(value)}")
    if len(items) == 2:
        items = [items[0], items[0], items[1]]
    if len(items) != 3:
        raise ValueError(f"expected {expected}, found {_short(value)}")
    check = _unit(parse_power, _POWER_HINT, positive=False)
    idle, eps, full = (check(x) for x in items)
    if idle > full:
        raise ValueError(f"the idle wattage ({idle:g} W) is above the all-cores wattage "
                         f"({full:g} W) in {_short(value)}: expected idle <= all_cores")
    return (idle, eps, full)


PowerTriple = Annotated[tuple[float, float, float], BeforeValidator(_power_triple)]


class PowerSpec(_Spec):
    """Power profile of a host (SimGrid's host_energy plugin): the wattage when off and, for
    each pstate, when idle, with one core busy (epsilon) and with every core busy."""

    off: Annotated[float, BeforeValidator(_unit(parse_power, _POWER_HINT, positive=False))] = 0.0
    pstates: Annotated[tuple[PowerTriple, ...], BeforeValidator(
        lambda v: _non_empty_list(v, "power profiles, one per pstate"))]

    @model_validator(mode="before")
    @classmethod
    def _yaml_off(cls, data: Any) -> Any:
        # YAML 1.1 (PyYAML) reads a bare `off` key as the boolean false
        if isinstance(data, dict) and False in data and "off" not in data:
            data = {("off" if k is False else k): v for k, v in data.items()}
        return data

    def properties(self) -> dict[str, str]:
        """The same profile as SimGrid's host properties (what the energy plugin reads)."""
        return {"wattage_per_state": ", ".join(f"{i!r}:{e!r}:{a!r}" for i, e, a in self.pstates),
                "wattage_off": repr(self.off)}


class PhaseSpec(_Spec):
    """A boot or a shutdown: how long it takes and the power drawn meanwhile (default: the
    idle power of the current pstate)."""

    time: Latency = 0.0
    power: Annotated[float | None, BeforeValidator(
        lambda v: None if v is None else _unit(parse_power, _POWER_HINT, positive=False)(v))] = None


def _node_state(value: Any) -> str:
    # YAML 1.1 reads bare on/off as booleans
    text = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
    if not isinstance(text, str) or text.strip().lower() not in ("on", "off"):
        raise ValueError(f"expected 'on' (free at the start) or 'off', found {_short(value)}")
    return text.strip().lower()


class NodeSpec(_Spec):
    """Lifecycle of a node for dynamic allocation (smpy.runtime.nodes): its state at the
    start when no initial rank runs there, and its boot and shutdown."""

    state: Annotated[str, BeforeValidator(_node_state)] = "on"
    boot: PhaseSpec = PhaseSpec()
    shutdown: PhaseSpec = PhaseSpec()

    def properties(self) -> dict[str, str]:
        """The host properties smpy.runtime.nodes reads (XML platforms give them as props)."""
        props = {"initial_state": self.state, "boot_time": repr(self.boot.time),
                 "shutdown_time": repr(self.shutdown.time)}
        if self.boot.power is not None:
            props["boot_wattage"] = repr(self.boot.power)
        if self.shutdown.power is not None:
            props["shutdown_wattage"] = repr(self.shutdown.power)
        return props


_NODE_PROPERTIES = ("initial_state", "boot_time", "boot_wattage", "shutdown_time", "shutdown_wattage")


def _check_node(node: NodeSpec | None, properties: dict[str, str]) -> None:
    if node is None:
        return
    clash = sorted(set(_NODE_PROPERTIES) & set(properties))
    if clash:
        raise _FieldError("node", f"give the node lifecycle either here or as the properties "
                          f"{', '.join(clash)}, not both")


def _check_power(power: PowerSpec | None, speeds: tuple[float, ...],
                 properties: dict[str, str], field: str | tuple[str | int, ...] = "power") -> None:
    if power is None:
        return
    if len(power.pstates) != len(speeds):
        loc = (field if isinstance(field, tuple) else (field,)) + ("pstates",)
        raise _FieldError(loc, f"expected {len(speeds)} power profile(s), one per pstate (speed), "
                          f"found {len(power.pstates)}")
    clash = sorted({"wattage_per_state", "wattage_off"} & set(properties))
    if clash:
        raise _FieldError(field, f"give the power profile either here or as the propert"
                          f"{'ies' if len(clash) > 1 else 'y'} {', '.join(clash)}, not both")


def host_properties(spec: HostSpec | ClusterSpec, host_name: str) -> dict[str, str]:
    """The properties of one host, its power profile included (per-host override first)."""
    props = dict(spec.properties)
    power = spec.power
    if isinstance(spec, ClusterSpec):
        power = spec.power_overrides.get(host_name, power)
    if power is not None:
        props.update(power.properties())
    if spec.node is not None:
        props.update(spec.node.properties())
    failures = spec.failures
    if isinstance(spec, ClusterSpec):
        failures = spec.failure_overrides.get(host_name, failures)
    if failures:
        props[_FAILURES_PROPERTY] = failures
    return props


class ClusterSpec(_Spec):
    name: Name
    prefix: Affix = ""
    suffix: Affix = ""
    radical: Radical = None
    count: Count | None = None
    cores: Cores = 1
    speed: Speeds
    pstate: Pstate = 0
    bandwidth: Bandwidth
    latency: Latency
    sharing: SharingName = "SPLITDUPLEX"
    topology: Topology = "FLAT"
    topo_parameters: Annotated[str | None, BeforeValidator(_topo_text)] = None
    backbone: BackboneSpec | None = None
    router: Name | None = None
    limiter: Annotated[float | None, BeforeValidator(_optional_bandwidth)] = None
    loopback: LoopbackSpec | None = None
    properties: Properties = {}
    memory: MemorySpec | None = None
    ram: MemSize | None = None
    swap: MemSize = 0.0
    memory_slowdown: MemorySlowdownSpec | None = None
    power: PowerSpec | None = None
    #: per-host power profiles that replace ``power`` (host name → profile)
    power_overrides: dict[Name, PowerSpec] = {}
    #: power of each private link direction (and limiter) of the cluster
    link_power: LinkPowerSpec | None = None
    #: failure model of every host of the cluster, and per-host ones that replace it
    failures: Failures = None
    failure_overrides: dict[Name, Failures] = {}
    #: node lifecycle of every host of the cluster (dynamic allocation)
    node: NodeSpec | None = None

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        if (self.radical is None) == (self.count is None):
            raise _FieldError("radical", "give either `radical` (like '0-63') or `count` "
                              "(like 64), not both and not neither")
        _check_pstate(self.pstate, self.speed)
        _check_power(self.power, self.speed, self.properties)
        _check_node(self.node, self.properties)
        _check_ram(self)
        if self.power_overrides:
            names = {f"{self.prefix}{r}{self.suffix}" for r in self.radicals}
            for host, power in self.power_overrides.items():
                if host not in names:
                    close = difflib.get_close_matches(host, sorted(names), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise _FieldError(("power_overrides", host),
                                      f"no host {host!r} in this cluster{hint}")
                _check_power(power, self.speed, self.properties, ("power_overrides", host))
        for host in self.failure_overrides:
            if host not in {f"{self.prefix}{r}{self.suffix}" for r in self.radicals}:
                raise _FieldError(("failure_overrides", host), f"no host {host!r} in this cluster")
        if self.topology == "FLAT":
            if self.topo_parameters is not None:
                raise _FieldError("topo_parameters", "only for `topology: TORUS`, `FAT_TREE` or "
                                  "`DRAGONFLY`; this cluster is FLAT")
            return self
        for key in ("backbone", "router"):
            if getattr(self, key) is not None:
                raise _FieldError(key, f"only for FLAT clusters (SimGrid builds no {key} for a "
                                  f"{self.topology} cluster)")
        if self.topo_parameters is None:
            raise _FieldError("topo_parameters", f"missing: a {self.topology} cluster needs "
                              f"`topo_parameters` ({_TOPO_HINTS[self.topology]})")
        try:
            needed = topology_size(self.topology, self.topo_parameters)
        except ValueError as err:
            raise _FieldError("topo_parameters", str(err)) from None
        if len(self.radicals) < needed:
            raise _FieldError("radical" if self.radical is not None else "count",
                              f"the {self.topology} topology {self.topo_parameters!r} has "
                              f"{needed} hosts, but only {len(self.radicals)} host numbers are "
                              "given")
        return self

    @property
    def radicals(self) -> tuple[int, ...]:
        return self.radical if self.radical is not None else tuple(range(self.count or 0))


_TOPO_HINTS = {
    "TORUS": "dimensions like '3,2,2'",
    "FAT_TREE": "'levels;down,...;up,...;cables,...' like '2;4,4;1,2;1,2'",
    "DRAGONFLY": "'groups,cables;chassis,cables;routers,cables;nodes' like '3,4;4,3;5,1;2'",
}


def topology_size(topology: str, parameters: str) -> int:
    """Number of hosts of a TORUS, FAT_TREE or DRAGONFLY cluster (ValueError if malformed)."""
    from smpy.network.topologies import parse_dragonfly, parse_fat_tree, parse_torus

    if topology == "TORUS":
        return math.prod(parse_torus(parameters))
    if topology == "FAT_TREE":
        return parse_fat_tree(parameters).hosts
    if topology == "DRAGONFLY":
        return parse_dragonfly(parameters).hosts
    raise ValueError(f"unknown topology {topology!r}")


class HostSpec(_Spec):
    name: Name
    speed: Speeds
    cores: Cores = 1
    pstate: Pstate = 0
    properties: Properties = {}
    memory: MemorySpec | None = None
    ram: MemSize | None = None
    swap: MemSize = 0.0
    memory_slowdown: MemorySlowdownSpec | None = None
    power: PowerSpec | None = None
    failures: Failures = None
    node: NodeSpec | None = None

    @model_validator(mode="after")
    def _check(self) -> HostSpec:
        _check_pstate(self.pstate, self.speed)
        _check_power(self.power, self.speed, self.properties)
        _check_node(self.node, self.properties)
        _check_ram(self)
        return self


class LinkSpec(_Spec):
    name: Name
    bandwidth: Bandwidth
    latency: Latency = 0.0
    sharing: SharingName = "SHARED"
    properties: Properties = {}
    power: LinkPowerSpec | None = None
    failures: Failures = None

    @model_validator(mode="after")
    def _check(self) -> LinkSpec:
        if self.power is not None and "wattage_range" in self.properties:
            raise _FieldError("power", "give the link's power either here or as the property "
                              "wattage_range, not both")
        return self


class RouteSpec(_Spec):
    src: Name
    dst: Name
    links: Annotated[tuple[Name, ...], BeforeValidator(lambda v: _non_empty_list(v, "link names"))]
    symmetric: bool = True
    gw_src: Name | None = None
    gw_dst: Name | None = None

    @model_validator(mode="after")
    def _check(self) -> RouteSpec:
        if (self.gw_src is None) != (self.gw_dst is None):
            missing = "gw_dst" if self.gw_dst is None else "gw_src"
            raise _FieldError(missing, "a route between zones needs both gateways, `gw_src` "
                              "and `gw_dst`")
        return self


class ZoneBackboneSpec(_Spec):
    name: Name
    bandwidth: Bandwidth
    latency: Latency = 0.0
    sharing: BackboneSharing = "SHARED"
    power: LinkPowerSpec | None = None


class HostLinkSpec(_Spec):
    host: Name
    up: Name
    down: Name


class ZoneSpec(_Spec):
    name: Name
    routing: RoutingName
    properties: Properties = {}
    hosts: tuple[HostSpec, ...] = ()
    routers: tuple[Name, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    clusters: tuple[ClusterSpec, ...] = ()
    zones: tuple[ZoneSpec, ...] = ()
    routes: tuple[RouteSpec, ...] = ()
    backbone: ZoneBackboneSpec | None = None
    host_links: tuple[HostLinkSpec, ...] = ()
    order: tuple[Name, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> ZoneSpec:
        children = [key for key in ("clusters", "zones") if getattr(self, key)]
        if children:
            for key in ("hosts", "routers"):
                if getattr(self, key):
                    raise _FieldError(key, f"a zone with `{children[0]}` cannot also have "
                                      f"`{key}` (SimGrid's rule: put them in a zone of their own)")
        if self.routing in ("None", "Cluster") and self.routes:
            raise _FieldError("routes", f"a zone with `routing: {self.routing}` takes no routes"
                              + (" (use `host_links` and `backbone`)"
                                 if self.routing == "Cluster" else ""))
        if self.routing == "Cluster" and children:
            raise _FieldError(children[0], "a zone with `routing: Cluster` cannot contain zones "
                              "or clusters in this version")
        if self.routing != "Cluster":
            for key in ("backbone", "host_links"):
                if getattr(self, key):
                    raise _FieldError(key, f"only for zones with `routing: Cluster`, this one "
                                      f"has `routing: {self.routing}`")
        return self


class StorageSpec(_Spec):
    """A disk (see :mod:`smpy.storage.model`): ``hosts`` names the hosts that use it;
    none = shared by every host without a disk of its own; ``per_host`` = one such disk
    for each of those hosts instead of one shared."""

    name: Name
    read_bandwidth: Bandwidth = 2.0e9
    write_bandwidth: Bandwidth = 1.0e9
    latency: Latency = 1.0e-4
    hosts: tuple[Name, ...] = ()
    per_host: bool = False

    @model_validator(mode="after")
    def _check(self) -> StorageSpec:
        if self.per_host and self.hosts:
            raise _FieldError("per_host", "a storage is either for the listed `hosts` or "
                              "`per_host` (one disk for every other host), not both")
        return self


# ---------------------------------------------------------------- file systems (issue 20)
# Their own block: the storage model of smpy.storage.filesystem reads them.

def _size_field(value: Any) -> float:
    try:
        result = parse_size(value)
    except UnitError as err:
        raise ValueError(f"expected a size like '1MiB' or '4GB', found {value!r} (units: {err.units})"
                         ) from None
    if not math.isfinite(result) or result < 0:
        raise ValueError(f"expected a size (zero or more), found {value!r}")
    return result


Size = Annotated[float, BeforeValidator(_size_field)]


class FsDiskSpec(_Spec):
    """A file-system disk: ``simple`` (latency + n/bandwidth), ``hdd`` (+ seek and half a
    rotation when an access does not continue the previous one; one operation at a time),
    ``ssd`` (per-operation latency, ``channels`` operations at once)."""

    kind: Literal["simple", "hdd", "ssd"] = "simple"
    read: Bandwidth = 500e6
    write: Bandwidth = 400e6
    latency: Latency = 0.0
    seek: Latency = 0.0
    rpm: float = 0.0
    channels: int = 0
    #: one stream's bound (below the aggregate ``read``/``write``); None: the aggregate
    read_stream: Bandwidth | None = None
    write_stream: Bandwidth | None = None

    @model_validator(mode="after")
    def _check(self) -> FsDiskSpec:
        for key, agg in (("read_stream", self.read), ("write_stream", self.write)):
            v = getattr(self, key)
            if v is not None and not 0 < v <= agg:
                raise _FieldError(key, f"one stream's bandwidth must be positive and at most the "
                                  f"aggregate `{key.split('_')[0]}` ({agg:g} B/s), found {v:g} B/s")
        if self.rpm < 0 or self.channels < 0:
            raise _FieldError("rpm" if self.rpm < 0 else "channels", "expected zero or more")
        if self.kind != "hdd" and (self.seek or self.rpm):
            raise _FieldError("seek" if self.seek else "rpm", f"only for `kind: hdd`, this disk "
                              f"is `kind: {self.kind}`")
        return self


class FsCacheSpec(_Spec):
    size: Size = 0.0


class FileSystemSpec(_Spec):
    """One file system: where paths under ``mount`` are stored (docs/platforms.md)."""

    name: Name
    kind: Literal["parallel", "local", "virtual"]
    mount: str
    default: bool = False
    servers: tuple[Name, ...] = ()
    metadata_server: Name | None = None
    stripe_size: Size = float(1 << 20)
    stripe_count: int = 0
    disk: FsDiskSpec = FsDiskSpec()
    cache: FsCacheSpec = FsCacheSpec()
    keep: Size = 0.0
    virtual: bool = False

    @model_validator(mode="after")
    def _check(self) -> FileSystemSpec:
        if not self.mount.startswith("/"):
            raise _FieldError("mount", f"expected an absolute path, found {self.mount!r}")
        if self.kind == "parallel":
            if not self.servers:
                raise _FieldError("servers", "a parallel file system needs its data servers "
                                  "(hosts of the platform)")
            if self.stripe_size < 1:
                raise _FieldError("stripe_size", "expected at least one byte")
            if self.stripe_count < 0 or self.stripe_count > len(self.servers):
                raise _FieldError("stripe_count", f"expected 1..{len(self.servers)} (the "
                                  f"number of servers), found {self.stripe_count}")
        else:
            for key in ("servers", "metadata_server"):
                if getattr(self, key):
                    raise _FieldError(key, f"only for `kind: parallel`, this file system is "
                                      f"`kind: {self.kind}`")
        if self.kind != "virtual" and self.keep and not self.virtual:
            raise _FieldError("keep", "only for virtual file systems (`kind: virtual` or "
                              "`virtual: true`)")
        return self


class PlatformSpec(_Spec):
    name: Name | None = None
    config: Properties = {}
    storage: tuple[StorageSpec, ...] = ()
    filesystems: tuple[FileSystemSpec, ...] = ()
    zone: ZoneSpec | None = None
    clusters: tuple[ClusterSpec, ...] = ()
    hosts: tuple[HostSpec, ...] = ()
    routers: tuple[Name, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    routes: tuple[RouteSpec, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> PlatformSpec:
        explicit = [key for key in ("hosts", "routers", "links", "routes") if getattr(self, key)]
        if self.zone is not None:
            other = (["clusters"] if self.clusters else []) + explicit
            if other:
                raise _FieldError(other[0], "a platform with a `zone` describes everything "
                                  "inside it; move this into the zone")
            return self
        if self.clusters and explicit:
            raise _FieldError(explicit[0], "a platform has either `clusters` or "
                              "hosts/routers/links/routes; to connect clusters to other hosts, "
                              "describe the platform as a `zone`")
        if len(self.clusters) > 1:
            raise _FieldError("clusters", f"a platform without `zone` is one cluster, found "
                              f"{len(self.clusters)}; to connect several clusters, put them in "
                              "a `zone` with routes between them")
        for i, route in enumerate(self.routes):
            if route.gw_src is not None:
                raise _FieldError(("routes", i, "gw_src"), "gateways are only for routes between "
                                  "zones (describe the platform as a `zone`)")
        if not self.clusters and not self.hosts:
            raise _FieldError("hosts", "a platform needs `zone`, `clusters` or `hosts`, found "
                              "none of them")
        return self


def _non_empty_list(value: Any, what: str) -> Any:
    if isinstance(value, (list, tuple)) and not value:
        raise ValueError(f"expected a non-empty list of {what}, found []")
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of {what}, found {value!r}")
    return value


def _check_pstate(pstate: int, speeds: tuple[float, ...]) -> None:
    if pstate >= len(speeds):
        raise _FieldError("pstate", f"expected a pstate index below {len(speeds)} (the number of "
                          f"speeds given), found {pstate}")
    if speeds[pstate] <= 0:
        raise _FieldError("speed", f"the speed of the initial pstate ({pstate}) must be greater "
                          "than zero")


class _FieldError(ValueError):
    """Raised by model validators to blame one field (pydantic would blame the whole model)."""

    def __init__(self, field: str | int | tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# ---------------------------------------------------------------------------- validation

def validate_spec(data: Any, source: str, locate: Locator | None = None) -> PlatformSpec:
    """Validate parsed YAML into a :class:`PlatformSpec`, or raise :class:`PlatformError`."""
    where = locate or format_path
    if not isinstance(data, dict):
        raise PlatformError(f"{source}: {where(())}: expected a mapping with keys like `name`, "
                            f"`zone`, `clusters` or `hosts`, found {_short(data)}")
    try:
        return PlatformSpec.model_validate(data)
    except ValidationError as err:
        lines = [f"{source}: {where(loc)}: {message}" for loc, message in _messages(err)]
        raise PlatformError("\n".join(lines)) from None


def _messages(err: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    out = []
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        kind = item["type"]
        found = item.get("input")
        ctx = item.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, _FieldError):
            field = cause.field if isinstance(cause.field, tuple) else (cause.field,)
            out.append((loc + field, cause.message))
            continue
        if kind == "value_error":
            message = str(cause) if cause is not None else item["msg"]
        elif kind == "extra_forbidden":
            message = _unknown_key(loc)
        elif kind == "missing":
            message = f"missing required key: expected {_expected(loc)}"
        elif kind == "literal_error":
            message = f"expected one of {ctx.get('expected', '')}, found {_short(found)}"
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            message = f"expected a mapping, found {_short(found)}"
        elif kind in ("tuple_type", "list_type"):
            message = f"expected a list, found {_short(found)}"
        elif kind in ("bool_type", "bool_parsing"):
            message = f"expected true or false, found {_short(found)}"
        elif kind in ("string_type",):
            message = f"expected a string, found {_short(found)}"
        else:
            message = f"{item['msg']}, found {_short(found)}"
        out.append((loc, message))
    return out


_EXPECTED = {
    "bandwidth": _BANDWIDTH_HINT,
    "latency": _TIME_HINT,
    "speed": f"{_SPEED_HINT} (or a list, one per pstate)",
    "name": "a name",
    "src": "the name of a host or router",
    "dst": "the name of a host or router",
    "links": "a list of link names",
    "routing": "one of Full, Floyd, Dijkstra, DijkstraCache, None or Cluster",
    "gw_src": "the name of a host or router inside the source zone",
    "gw_dst": "the name of a host or router inside the destination zone",
    "topo_parameters": "topology parameters",
    "host": "the name of a host",
    "up": "the name of a link",
    "down": "the name of a link",
}


def _expected(loc: tuple[Any, ...]) -> str:
    field = loc[-1] if loc else ""
    return _EXPECTED.get(str(field), f"a value for {field!r}")


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class whose field the location ``loc`` points into."""
    model: Any = PlatformSpec
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(part)
        if field is None:
            return model
        model = _inner_model(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    """The BaseModel inside ``X``, ``X | None``, ``tuple[X, ...]``, ``Annotated[X, ...]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


#: words other tools use for a key, to the key they mean here (spelling alone would suggest
#: another: 'nodes' is closest to 'cores')
_SYNONYMS = {"nodes": "count", "num_nodes": "count", "node_count": "count", "size": "count",
             "hosts": "count", "bw": "bandwidth", "lat": "latency", "core": "cores",
             "flops": "speed", "power_profile": "power"}


def _unknown_key(loc: tuple[Any, ...]) -> str:
    key = str(loc[-1])
    model = _model_at(loc[:-1])
    if model is None:
        return f"unknown key {key!r}"
    accepted = list(model.model_fields)
    meant = _SYNONYMS.get(key.lower())
    close = [meant] if meant in accepted else difflib.get_close_matches(key, accepted, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r} (accepted: {', '.join(accepted)}){hint}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
