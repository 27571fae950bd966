"""Platform loading: YAML or SimGrid XML file → validated spec → hosts, links and routing.

:func:`load_platform` reads a platform (YAML, format in :mod:`smpy.platform.schema` and
``docs/platforms.md``; or SimGrid XML, read by :mod:`smpy.platform.xml` into the same data),
validates it and builds a :class:`Platform`: ``Host`` and ``Link`` objects, numbered in order
(``host.index``, ``link.index`` = position in ``platform.hosts`` / ``platform.links``), and a
:class:`~smpy.network.routing.Routing`. :func:`default_platform` loads the bundled
``data/default.yaml``: 64 hosts ``node-0`` … ``node-63`` (12 cores of 1 Gf each) on 10 Gbps /
50 µs SPLITDUPLEX private links and a 100 Gbps SHARED backbone.

Platforms with a ``zone`` or a cluster are built by :mod:`smpy.platform.builder` into a zone
tree (:mod:`smpy.network.zones`, :mod:`smpy.network.topologies`) whose root is
``platform.zone`` and ``platform.routing``; links are listed in creation order (for a
cluster: the backbone first, then for each host its loopback, limiter and private link
halves, ``_UP`` before ``_DOWN``, as SimGrid creates them). Host-and-link platforms keep
:class:`~smpy.network.routing.FullRouting` (declared routes, least-latency paths between the
other pairs), with the declared links in file order. ``__loopback__`` comes last, if some
route uses it.

Every problem is reported as a :class:`PlatformError` reading ``<file>: <where>: <what was
expected, what was found>``, ``<where>`` being a field path (YAML) or a line, element and
attribute (XML).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.routing import (
    LOOPBACK_NAME,
    FullRouting,
    Routing,
    split_duplex_twins,
)
from smpy.network.zones import Zone
from smpy.platform.cache import cache_dir, entry_path, read_entry, write_entry
from smpy.platform.errors import Locator, PlatformError, format_path
from smpy.storage.filesystem import FileSystem, spec_params
from smpy.storage.model import Disk
from smpy.support.config import declare
from smpy.support.internal import SmpyInternalError
from smpy.support.memory import MemoryLimitError, check_fits
from smpy.support.units import UnitError, parse_bandwidth, parse_time

if TYPE_CHECKING:  # the schema needs pydantic, the YAML reader PyYAML: imported when parsing
    from smpy.platform.schema import PlatformSpec

__all__ = ["Platform", "PlatformError", "load_platform", "load_platform_data", "default_platform",
           "DEFAULT_PLATFORM_SOURCE", "cache_dir"]

DEFAULT_PLATFORM_SOURCE = "<default>"

#: SimGrid's defaults for the implicit loopback link (config network/loopback-bw, -lat)
_LOOPBACK_BW_Bps = 10e9
_LOOPBACK_LAT_s = 0.0

# Read from the platform file's `config` when the platform is built (a --cfg value given on
# the command line does not change an already built platform).
declare("network/loopback-bw", _LOOPBACK_BW_Bps, "Bandwidth of the implicit __loopback__ link "
        "(FATPIPE) that carries a message from a host to itself; set in the platform's config",
        parse=parse_bandwidth)
declare("network/loopback-lat", _LOOPBACK_LAT_s, "Latency of the implicit __loopback__ link; "
        "set in the platform's config", parse=parse_time)


class Platform:
    """Hosts, links and routing of a simulated machine."""

    def __init__(self, name: str, source: str, hosts: list[Host], links: list[Link],
                 routing: Routing, config: Mapping[str, str] | None = None, *,
                 zone: Zone | None = None) -> None:
        self.name = name
        self.source = source
        self.hosts = hosts
        self.links = links
        self.routing = routing
        #: the root zone of a platform described with zones or clusters (None for the
        #: host-and-link form, whose routing is a FullRouting)
        self.zone = zone
        self.config: dict[str, str] = dict(config or {})
        #: disks of the ``storage`` section (empty: the storage model's single shared default)
        self.disks: list[Disk] = []
        #: the ``filesystems`` section (smpy.storage.filesystem)
        self.filesystems: list[FileSystem] = []
        for index, host in enumerate(hosts):
            host.index = index
        for index, link in enumerate(links):
            link.index = index
        self._hosts_by_name = {host.name: host for host in hosts}
        self._links_by_name = {link.name: link for link in links}
        if len(self._hosts_by_name) != len(hosts) or len(self._links_by_name) != len(links):
            raise SmpyInternalError(f"{source}: duplicate host or link names")

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

def _close_matches(word: str, names: Any) -> list[str]:
    """difflib's closest match (imported only when a name is wrong)."""
    import difflib

    return difflib.get_close_matches(word, names, n=1)


def load_platform(path: str | os.PathLike[str]) -> Platform:
    """Read, validate and build the platform described by ``path``: YAML, or SimGrid's XML
    (version 4 or 4.1) when the name ends in ``.xml``. A bare name that is not a file names a
    bundled platform (:mod:`smpy.platform.bundled`: ``taurus``).

    A platform read once is kept, built, in a cache (:mod:`smpy.platform.cache`, checked by
    owner, mode and HMAC before it is unpickled), so later runs skip parsing, validation and
    the import of pydantic and PyYAML."""
    from smpy.platform.bundled import resolve_platform

    source = resolve_platform(path)
    try:
        raw = Path(source).read_bytes()
    except OSError as err:
        raise PlatformError(f"{source}: cannot read the platform file: {err.strerror}") from None
    return _cached(source, raw, lambda: _parse_platform(source, raw))


def _parse_platform(source: str, raw: bytes) -> Platform:
    """:func:`_parse_file`; a recursion the depth bounds of :mod:`smpy.platform.limits` did
    not foresee is still reported as one line."""
    try:
        return _parse_file(source, raw)
    except RecursionError:
        raise PlatformError(f"{source}: the platform is nested too deeply to be read") from None


def _cached(source: str, raw: bytes, parse: Any) -> Platform:
    if b"state_file" in raw or b"trace_file" in raw:  # failure traces in other files: not in the key
        return parse()
    path = entry_path(source, raw)
    if path is not None:
        cached = read_entry(path)
        if isinstance(cached, Platform) and cached.source == source:
            return cached
    platform = parse()
    if path is not None:
        write_entry(path, platform)
    return platform


def _parse_file(source: str, raw: bytes) -> Platform:
    if Path(source).suffix.lower() == ".xml":
        from smpy.platform.xml import read_xml

        imported = read_xml(source)
        return load_platform_data(imported.data, source, default_name=Path(source).stem,
                                  locate=imported.locate)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PlatformError(f"{source}: cannot read the platform file: {err}") from None
    return _load_text(text, source, default_name=Path(source).stem)


def load_platform_data(data: Any, source: str = "<data>", default_name: str = "platform", *,
                       locate: Locator | None = None) -> Platform:
    """Build a platform from already-parsed YAML data (a dict), e.g. in tests.

    ``locate`` names a field location in messages (default: its YAML path).
    """
    from smpy.platform.schema import validate_spec

    spec = validate_spec(data, source, locate)
    hosts, links = _spec_size(spec)
    try:
        check_fits(f"{source}: building the platform", 0, hosts, links)
    except MemoryLimitError as err:
        raise PlatformError(str(err)) from None
    return build_platform(spec, source, default_name=default_name, locate=locate)


def _spec_size(spec: PlatformSpec) -> tuple[int, int]:
    """Hosts and links a spec will build (links of a cluster: 3 per host, an estimate)."""
    hosts = len(spec.hosts)
    links = len(spec.links)
    clusters = list(spec.clusters)
    zones = [spec.zone] if spec.zone is not None else []
    while zones:
        zone = zones.pop()
        hosts += len(zone.hosts)
        links += len(zone.links)
        clusters.extend(zone.clusters)
        zones.extend(zone.zones)
    for cluster in clusters:
        n = cluster.count if cluster.radical is None else len(cluster.radical)
        n = n or 0
        hosts += n
        links += 3 * n
    return hosts, links


def default_platform() -> Platform:
    """The bundled 64-host cluster (``smpy/platform/data/default.yaml``)."""
    from importlib import resources  # here: it imports zipfile and tempfile

    raw = resources.files("smpy.platform").joinpath("data/default.yaml").read_bytes()
    return _cached(DEFAULT_PLATFORM_SOURCE, raw,
                   lambda: _load_text(raw.decode("utf-8"), DEFAULT_PLATFORM_SOURCE, "default"))


def _load_text(text: str, source: str, default_name: str) -> Platform:
    import yaml

    from smpy.platform.limits import load_yaml

    try:
        data = load_yaml(text, source, _unique_key_loader())
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<yaml>"
        problem = err.problem or str(err)
        context = f" ({err.context})" if err.context and err.context != problem else ""
        raise PlatformError(f"{source}: {where}: YAML syntax error: {problem}{context}") from None
    except yaml.YAMLError as err:
        raise PlatformError(f"{source}: <yaml>: YAML syntax error: {err}") from None
    return load_platform_data(data, source, default_name=default_name)


def _unique_key_loader() -> Any:
    """A yaml.SafeLoader subclass that refuses a key given twice in one mapping (PyYAML keeps
    the last); built on first use so that PyYAML is imported only when a file is parsed."""
    global _UNIQUE_KEY_LOADER
    if _UNIQUE_KEY_LOADER is not None:
        return _UNIQUE_KEY_LOADER
    import yaml

    class _UniqueKeyLoader(yaml.SafeLoader):
        pass

    def construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode,
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
                                     construct_unique_mapping)
    _UNIQUE_KEY_LOADER = _UniqueKeyLoader
    return _UniqueKeyLoader


_UNIQUE_KEY_LOADER: Any = None


# --------------------------------------------------------------------------------- building

def build_platform(spec: PlatformSpec, source: str, default_name: str = "platform", *,
                   locate: Locator | None = None) -> Platform:
    """Turn a validated spec into hosts, links and routing (cross-references checked here)."""
    name = spec.name or default_name
    if spec.zone is None and not spec.clusters:
        hosts, links, routing = _build_explicit(spec, source)
        platform = Platform(name, source, hosts, links, routing, spec.config)
        platform.disks = _build_disks(spec, hosts, source)
        platform.filesystems = _build_filesystems(spec, hosts, source)
        return platform
    from smpy.network.topologies import TopologyError
    from smpy.platform.builder import BuildError, build_zone_platform

    where = locate or format_path
    loopback = _loopback_from_config(spec, source)
    try:
        hosts, links, zone = build_zone_platform(spec, loopback)
    except BuildError as err:
        raise PlatformError(f"{source}: {where(err.loc)}: {err.render(where)}") from None
    except TopologyError as err:  # parameters were checked by the schema; belt and braces
        raise PlatformError(f"{source}: {where(())}: {err}") from None
    platform = Platform(name, source, hosts, links, zone, spec.config, zone=zone)
    platform.disks = _build_disks(spec, hosts, source)
    platform.filesystems = _build_filesystems(spec, hosts, source)
    return platform


def _build_disks(spec: PlatformSpec, hosts: list[Host], source: str) -> list[Disk]:
    """The disks of the ``storage`` section (empty list: the storage model's default)."""
    names = [h.name for h in hosts]
    known = set(names)
    owner: dict[str, str] = {}
    disks: list[Disk] = []
    for i, st in enumerate(spec.storage):
        for h in st.hosts:
            if h not in known:
                close = _close_matches(h, names)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise PlatformError(f"{source}: storage[{i}].hosts: unknown host {h!r}{hint}")
            if h in owner:
                raise PlatformError(f"{source}: storage[{i}].hosts: host {h!r} already uses "
                                    f"storage {owner[h]!r}")
            owner[h] = st.name
        if st.hosts:
            disks.append(Disk(st.name, st.read_bandwidth, st.write_bandwidth, st.latency, st.hosts))
    for st in spec.storage:
        if st.per_host:
            for h in names:
                if h not in owner:
                    owner[h] = st.name
                    disks.append(Disk(f"{st.name}-{h}", st.read_bandwidth, st.write_bandwidth,
                                      st.latency, (h,)))
        elif not st.hosts:
            disks.append(Disk(st.name, st.read_bandwidth, st.write_bandwidth, st.latency))
    return disks


def _build_filesystems(spec: PlatformSpec, hosts: list[Host], source: str) -> list[FileSystem]:
    """The ``filesystems`` section: servers must be hosts, names and mounts unique, at most
    one default."""
    names = [h.name for h in hosts]
    known = set(names)
    out: list[FileSystem] = []
    seen: dict[tuple[str, str], str] = {}
    for i, f in enumerate(spec.filesystems):
        where = f"{source}: filesystems[{i}]"
        for key, h in [("servers", s) for s in f.servers] + [("metadata_server", f.metadata_server)]:
            if h is not None and h not in known:
                close = _close_matches(h, names)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise PlatformError(f"{where}.{key}: unknown host {h!r}{hint}")
        mount = f.mount.rstrip("/") or "/"
        for key, value in (("name", f.name), ("mount", mount)):
            if (key, value) in seen:
                raise PlatformError(f"{where}.{key}: {value!r} is already used by file system "
                                    f"{seen[(key, value)]!r}")
            seen[(key, value)] = f.name
        if f.default and any(o.default for o in out):
            raise PlatformError(f"{where}.default: only one file system can be the default")
        out.append(FileSystem(f.name, f.kind, mount, f.default, f.servers,
                              f.metadata_server or (f.servers[0] if f.servers else None),
                              int(f.stripe_size), f.stripe_count, spec_params(f.disk),
                              int(f.cache.size), int(f.keep), f.virtual or f.kind == "virtual"))
    return out


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
    from smpy.platform.builder import host_from_spec
    from smpy.platform.schema import link_properties

    link_names = _Names(source, "link")
    hosts: list[Host] = []
    for i, host_spec in enumerate(spec.hosts):
        node_names.add(host_spec.name, f"hosts[{i}].name")
        hosts.append(host_from_spec(host_spec))
    for i, router in enumerate(spec.routers):
        node_names.add(router, f"routers[{i}]")

    links: list[Link] = []
    by_name: dict[str, Link] = {}
    split: dict[str, str] = {}  # base name of a SPLITDUPLEX link -> its field path
    for i, link_spec in enumerate(spec.links):
        for link in _new_link(link_spec.name, link_spec.bandwidth, link_spec.latency,
                              Sharing(link_spec.sharing),
                              link_properties(link_spec.properties, link_spec.power, link_spec.failures)):
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
    close = _close_matches(name, list(names.where))
    return f" (did you mean {close[0]!r}?)" if close else ""
