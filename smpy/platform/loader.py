"""Platform loading: YAML file → validated spec → hosts, links and routing.

:func:`load_platform` reads a YAML platform (format in :mod:`smpy.platform.schema`), validates
it and builds a :class:`Platform`: ``Host`` and ``Link`` objects, numbered in order
(``host.index``, ``link.index`` = position in ``platform.hosts`` / ``platform.links``), and a
:class:`~smpy.network.routing.Routing`. :func:`default_platform` loads the bundled
``data/default.yaml``: 64 hosts ``node-0`` … ``node-63`` (12 cores of 1 Gf each) on 10 Gbps /
50 µs SPLITDUPLEX private links and a 100 Gbps SHARED backbone.

Link order in ``platform.links`` (clusters): the backbone first, then for each host its
loopback, limiter and private link halves (``_UP`` before ``_DOWN``), as SimGrid creates them;
for host-and-link platforms, the declared links in file order; ``__loopback__`` last, if some
host needs it.

Every problem is reported as a :class:`PlatformError` reading ``<file>: <field.path>: <what was
expected, what was found>``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.routing import (
    LOOPBACK_NAME,
    ClusterRouting,
    FullRouting,
    Routing,
    split_duplex_twins,
)
from smpy.platform.schema import ClusterSpec, PlatformError, PlatformSpec, validate_spec
from smpy.support.units import UnitError, parse_bandwidth, parse_time

__all__ = ["Platform", "PlatformError", "load_platform", "load_platform_data", "default_platform",
           "DEFAULT_PLATFORM_SOURCE"]

DEFAULT_PLATFORM_SOURCE = "<default>"

#: SimGrid's defaults for the implicit loopback link (config network/loopback-bw, -lat)
_LOOPBACK_BW_Bps = 10e9
_LOOPBACK_LAT_s = 0.0


class Platform:
    """Hosts, links and routing of a simulated machine."""

    def __init__(self, name: str, source: str, hosts: list[Host], links: list[Link],
                 routing: Routing, config: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.source = source
        self.hosts = hosts
        self.links = links
        self.routing = routing
        self.config: dict[str, str] = dict(config or {})
        for index, host in enumerate(hosts):
            host.index = index
        for index, link in enumerate(links):
            link.index = index
        self._hosts_by_name = {host.name: host for host in hosts}
        self._links_by_name = {link.name: link for link in links}
        if len(self._hosts_by_name) != len(hosts) or len(self._links_by_name) != len(links):
            raise PlatformError(f"{source}: duplicate host or link names (internal error)")

    def host(self, name: str) -> Host:
        """The host called ``name``; :class:`PlatformError` naming it if there is none."""
        try:
            return self._hosts_by_name[name]
        except KeyError:
            raise PlatformError(f"{self.source}: unknown host {name!r} (platform {self.name!r} "
                                f"has {self._host_summary()})") from None

    def link(self, name: str) -> Link:
        """The link called ``name`` (``X_UP``/``X_DOWN`` for the halves of a SPLITDUPLEX link)."""
        try:
            return self._links_by_name[name]
        except KeyError:
            raise PlatformError(f"{self.source}: unknown link {name!r} in platform "
                                f"{self.name!r}") from None

    def has_host(self, name: str) -> bool:
        return name in self._hosts_by_name

    def route(self, src: Host, dst: Host) -> tuple[Link, ...]:
        """Links crossed from ``src`` to ``dst``, in order (cached by the routing)."""
        return self.routing.route(src, dst)

    def _host_summary(self) -> str:
        names = [host.name for host in self.hosts]
        if len(names) <= 4:
            return "hosts " + ", ".join(names)
        return f"{len(names)} hosts: {names[0]}, {names[1]}, ..., {names[-1]}"

    def __repr__(self) -> str:
        return (f"Platform({self.name!r}, {len(self.hosts)} hosts, {len(self.links)} links, "
                f"source={self.source!r})")


# ---------------------------------------------------------------------------------- loading

def load_platform(path: str | os.PathLike[str]) -> Platform:
    """Read, validate and build the platform described by the YAML file ``path``."""
    source = os.fspath(path)
    suffix = Path(source).suffix.lower()
    if suffix == ".xml":
        raise PlatformError(f"{source}: SimGrid XML import is not supported yet; describe the "
                            "platform in YAML (see smpy/platform/schema.py)")
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as err:
        raise PlatformError(f"{source}: cannot read the platform file: {err.strerror}") from None
    return _load_text(text, source, default_name=Path(source).stem)


def load_platform_data(data: Any, source: str = "<data>", default_name: str = "platform"
                       ) -> Platform:
    """Build a platform from already-parsed YAML data (a dict), e.g. in tests."""
    spec = validate_spec(data, source)
    return build_platform(spec, source, default_name=default_name)


def default_platform() -> Platform:
    """The bundled 64-host cluster (``smpy/platform/data/default.yaml``)."""
    text = resources.files("smpy.platform").joinpath("data/default.yaml").read_text("utf-8")
    return _load_text(text, DEFAULT_PLATFORM_SOURCE, default_name="default")


def _load_text(text: str, source: str, default_name: str) -> Platform:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<yaml>"
        problem = err.problem or str(err)
        context = f" ({err.context})" if err.context and err.context != problem else ""
        raise PlatformError(f"{source}: {where}: YAML syntax error: {problem}{context}") from None
    except yaml.YAMLError as err:
        raise PlatformError(f"{source}: <yaml>: YAML syntax error: {err}") from None
    return load_platform_data(data, source, default_name=default_name)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode,
                              deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *defaults' may be overridden
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"key {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique_mapping)


# --------------------------------------------------------------------------------- building

def build_platform(spec: PlatformSpec, source: str, default_name: str = "platform") -> Platform:
    """Turn a validated spec into hosts, links and routing (cross-references checked here)."""
    name = spec.name or default_name
    if spec.clusters:
        hosts, links, routing = _build_cluster(spec.clusters[0], "clusters[0]", source)
    else:
        hosts, links, routing = _build_explicit(spec, source)
    return Platform(name, source, hosts, links, routing, spec.config)


class _Names:
    """Name registry that blames the field path of a duplicate."""

    def __init__(self, source: str, kind: str) -> None:
        self.source = source
        self.kind = kind
        self.where: dict[str, str] = {}

    def add(self, name: str, path: str) -> None:
        first = self.where.get(name)
        if first is not None:
            raise PlatformError(f"{self.source}: {path}: duplicate {self.kind} name {name!r} "
                                f"(already used by {first})")
        self.where[name] = path


def _new_link(name: str, bandwidth: float, latency: float, sharing: Sharing,
              properties: Mapping[str, str] | None = None) -> list[Link]:
    """One Link, or the ``_UP``/``_DOWN`` pair of a SPLITDUPLEX link."""
    props = dict(properties or {})
    if sharing is Sharing.SPLITDUPLEX:
        return [Link(f"{name}_UP", bandwidth, latency, Sharing.SPLITDUPLEX, dict(props)),
                Link(f"{name}_DOWN", bandwidth, latency, Sharing.SPLITDUPLEX, dict(props))]
    return [Link(name, bandwidth, latency, sharing, props)]


def _build_cluster(cluster: ClusterSpec, path: str, source: str
                   ) -> tuple[list[Host], list[Link], Routing]:
    hosts: list[Host] = []
    links: list[Link] = []
    backbone = None
    if cluster.backbone is not None:
        bb = cluster.backbone
        backbone = _new_link(f"{cluster.name}_backbone", bb.bandwidth, bb.latency,
                             Sharing(bb.sharing))[0]
        links.append(backbone)
    private: list[tuple[Link, Link]] = []
    limiters: list[Link] = []
    loopbacks: list[Link] = []
    sharing = Sharing(cluster.sharing)
    radicals = cluster.radicals
    if len(set(radicals)) != len(radicals):
        twice = sorted({r for r in radicals if radicals.count(r) > 1})
        raise PlatformError(f"{source}: {path}.radical: expected each host number once, found "
                            f"{', '.join(map(str, twice))} more than once")
    for radical in radicals:
        host_name = f"{cluster.prefix}{radical}{cluster.suffix}"
        hosts.append(Host(host_name, cluster.cores, list(cluster.speed), cluster.pstate,
                          dict(cluster.properties)))
        link_id = f"{cluster.name}_link_{radical}"
        if cluster.loopback is not None:
            lb = cluster.loopback
            loopback = _new_link(f"{link_id}_loopback", lb.bandwidth, lb.latency,
                                 Sharing.FATPIPE)[0]
            loopbacks.append(loopback)
            links.append(loopback)
        if cluster.limiter is not None:
            limiter = _new_link(f"{link_id}_limiter", cluster.limiter, 0.0, Sharing.SHARED)[0]
            limiters.append(limiter)
            links.append(limiter)
        halves = _new_link(link_id, cluster.bandwidth, cluster.latency, sharing)
        links.extend(halves)
        private.append((halves[0], halves[-1]))
    routing = ClusterRouting(hosts, private, backbone=backbone,
                             limiters=limiters if cluster.limiter is not None else None,
                             loopbacks=loopbacks if cluster.loopback is not None else None)
    return hosts, links, routing


def _loopback_from_config(spec: PlatformSpec, source: str) -> Link:
    values = {"network/loopback-bw": _LOOPBACK_BW_Bps, "network/loopback-lat": _LOOPBACK_LAT_s}
    for key, parse, minimum in (("network/loopback-bw", parse_bandwidth, "greater than zero"),
                                ("network/loopback-lat", parse_time, "zero or more")):
        if key not in spec.config:
            continue
        try:
            values[key] = parse(spec.config[key])
        except UnitError as err:
            raise PlatformError(f"{source}: config.{key}: {err}") from None
        if values[key] < 0 or (values[key] == 0 and key.endswith("-bw")):
            raise PlatformError(f"{source}: config.{key}: expected a value {minimum}, found "
                                f"{spec.config[key]!r}")
    bandwidth, latency = values["network/loopback-bw"], values["network/loopback-lat"]
    return Link(LOOPBACK_NAME, bandwidth, latency, Sharing.FATPIPE)


def _build_explicit(spec: PlatformSpec, source: str) -> tuple[list[Host], list[Link], Routing]:
    node_names = _Names(source, "host or router")
    link_names = _Names(source, "link")
    hosts: list[Host] = []
    for i, host_spec in enumerate(spec.hosts):
        node_names.add(host_spec.name, f"hosts[{i}].name")
        hosts.append(Host(host_spec.name, host_spec.cores, list(host_spec.speed),
                          host_spec.pstate, dict(host_spec.properties)))
    for i, router in enumerate(spec.routers):
        node_names.add(router, f"routers[{i}]")

    links: list[Link] = []
    by_name: dict[str, Link] = {}
    split: dict[str, str] = {}  # base name of a SPLITDUPLEX link -> its field path
    for i, link_spec in enumerate(spec.links):
        for link in _new_link(link_spec.name, link_spec.bandwidth, link_spec.latency,
                              Sharing(link_spec.sharing), link_spec.properties):
            link_names.add(link.name, f"links[{i}].name")
            links.append(link)
            by_name[link.name] = link
        if link_spec.sharing == "SPLITDUPLEX":
            split[link_spec.name] = f"links[{i}]"
    if LOOPBACK_NAME in by_name:
        raise PlatformError(f"{source}: {link_names.where[LOOPBACK_NAME]}: the name "
                            f"{LOOPBACK_NAME!r} is reserved for the implicit loopback link")

    loopback = _loopback_from_config(spec, source)
    routing = FullRouting([spec_host.name for spec_host in spec.hosts] + list(spec.routers),
                          loopback=loopback, twins=split_duplex_twins(links))
    for i, route in enumerate(spec.routes):
        path = f"routes[{i}]"
        for end in ("src", "dst"):
            node = getattr(route, end)
            if node not in node_names.where:
                raise PlatformError(f"{source}: {path}.{end}: expected the name of a host or "
                                    f"router, found {node!r}{_did_you_mean(node, node_names)}")
        route_links = []
        for j, link_name in enumerate(route.links):
            link = by_name.get(link_name)
            if link is None:
                if link_name in split:
                    why = (f"{link_name!r} is SPLITDUPLEX ({split[link_name]}): name a direction, "
                           f"{link_name + '_UP'!r} or {link_name + '_DOWN'!r}")
                else:
                    why = (f"expected the name of a declared link, found {link_name!r}"
                           f"{_did_you_mean(link_name, link_names)}")
                raise PlatformError(f"{source}: {path}.links[{j}]: {why}")
            route_links.append(link)
        if len({id(link) for link in route_links}) != len(route_links):
            raise PlatformError(f"{source}: {path}.links: a link appears twice in the route")
        try:
            routing.add_route(route.src, route.dst, route_links, symmetric=route.symmetric)
        except LookupError as err:
            raise PlatformError(f"{source}: {path}: {err}") from None

    _check_connected(routing, hosts, source)
    if any(routing.declared(host.name, host.name) is None for host in hosts):
        links.append(loopback)
    return hosts, links, routing


def _check_connected(routing: FullRouting, hosts: list[Host], source: str) -> None:
    names = [host.name for host in hosts]
    missing: list[str] = []
    for name in names:
        reachable = routing.reachable(name)
        missing.extend(f"{name!r} -> {other!r}" for other in names if other not in reachable)
        if len(missing) >= 3:
            break
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise PlatformError(f"{source}: routes: some hosts cannot reach each other ({shown}); "
                            "declare routes between them, directly or through routers")


def _did_you_mean(name: str, names: _Names) -> str:
    close = difflib.get_close_matches(name, list(names.where), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
