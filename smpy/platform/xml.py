"""SimGrid platform XML (versions 4 and 4.1) → the YAML data model of :mod:`smpy.platform.schema`.

:func:`read_xml` parses a SimGrid platform file into the same plain data (dicts, lists,
strings) that a YAML platform file gives, plus a *locator* that names the XML element, its line
and attribute for any field of that data. The loader then validates and builds it exactly as
YAML, so an XML file and its YAML conversion (``smpy platform convert``) are one platform, and
every error names the file, the line and the element.

Element → YAML mapping (attribute → key):

* ``<platform version>`` → the top level; ``<config><prop id value/>`` → ``config``; the
  single ``<zone>`` (or ``<AS>``) → ``zone``, or a lone ``<cluster>`` → ``clusters``.
* ``<zone id routing>`` → ``{name, routing}``; ``<prop>`` → ``properties``; children go to
  ``hosts``, ``routers``, ``links``, ``clusters``, ``zones``, ``routes``; ``<backbone>`` and
  ``<host_link>`` (``routing="Cluster"``) → ``backbone`` and ``host_links``; a ``<cabinet>``
  is expanded into its hosts, their links ``link_<host>_UP``/``_DOWN`` and host links (created
  last, as SimGrid does).
* ``<host id speed core pstate>`` + ``<prop>`` → ``{name, speed, cores, pstate, properties}``
  (``<prop id="ram"/"swap">`` → the host's ``ram`` / ``swap``, smpy's memory capacity)
  (``coordinates`` is ignored: it only matters in Vivaldi zones).
* ``<link id bandwidth latency sharing_policy>`` + ``<prop>`` →
  ``{name, bandwidth, latency, sharing, properties}`` (FULLDUPLEX is SPLITDUPLEX).
* ``<cluster id prefix suffix radical speed core bw lat sharing_policy topology
  topo_parameters bb_bw bb_lat bb_sharing_policy router_id limiter_link loopback_bw
  loopback_lat>`` + ``<prop>`` → ``{name, prefix, suffix, radical, speed, cores, bandwidth,
  latency, sharing, topology, topo_parameters, backbone: {bandwidth, latency, sharing}, router,
  limiter, loopback: {bandwidth, latency}, properties}``. For TORUS, FAT_TREE and DRAGONFLY
  clusters SimGrid 3.32 ignores the backbone and router attributes; so does the import.
* ``<route src dst symmetrical>`` and ``<zoneRoute src dst gw_src gw_dst symmetrical>``
  (``<ASroute>``) → ``{src, dst, links, symmetric, gw_src, gw_dst}``. ``<link_ctn id="X"
  direction="UP"/>`` on a SPLITDUPLEX link is ``X_UP`` (its reverse is ``X_DOWN``).
  ``<link_ctn id="X_UP"/>`` without direction names the half itself, which SimGrid keeps
  as is in the reverse of a symmetric route; such a route becomes two one-way routes.

Netpoints are numbered in document order in SimGrid; when that order is not YAML's (hosts,
routers, clusters, zones) the zone gets an ``order`` list.

Not supported (a :class:`~smpy.platform.schema.PlatformError` names the element and line):
``<peer>``, ``<trace>``, ``<trace_connect>``, ``<bypassRoute>``, ``<bypassZoneRoute>``,
``<actor>``/``<process>``, ``<include>``, Vivaldi and Wifi zones, WIFI links,
multiple bandwidths, and ``*_file`` profiles (speed, state, bandwidth, latency).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

from smpy.platform.errors import warn
from smpy.platform.failures import PROPERTY as FAILURES_PROPERTY
from smpy.platform.failures import Profile, parse_states
from smpy.platform.limits import MAX_XML_DEPTH
from smpy.platform.schema import PlatformError, format_path, parse_radical

__all__ = ["ImportedXml", "read_xml", "parse_xml_text"]

Loc = tuple[str | int, ...]

#: what may follow an integer without a warning: "0.0", "1." (SimGrid's own files write them)
_ZERO_FRACTION = re.compile(r"\.0*")


#: host ``<prop id=... value=...>`` read as the host's memory capacity (docs/platforms.md)
_HOST_MEMORY = ("ram", "swap")


def _take_memory(props: dict[str, str], target: dict[str, Any]) -> dict[str, str]:
    """Move the memory-capacity properties (``ram``, ``swap``: smpy.cpu.memory) from
    ``props`` to keys of ``target`` (a host or cluster); returns the other properties."""
    for key in _HOST_MEMORY:
        if key in props:
            target[key] = props.pop(key)
    return props


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)

    def describe(self) -> str:
        ident = self.attrs.get("id")
        if ident is None and "src" in self.attrs:
            return f"<{self.tag} src={self.attrs['src']!r} dst={self.attrs.get('dst', '')!r}>"
        return f"<{self.tag} id={ident!r}>" if ident is not None else f"<{self.tag}>"


@dataclass
class ImportedXml:
    """The YAML-equivalent ``data`` of an XML platform and the ``locate`` function naming the
    XML element (and attribute) behind a field location."""

    data: dict[str, Any]
    source: str
    where: dict[Loc, tuple[_Element, str | None]]

    def locate(self, loc: Loc) -> str:
        loc = tuple(loc)
        for end in range(len(loc), -1, -1):
            found = self.where.get(loc[:end])
            if found is not None:
                element, attribute = found
                text = f"line {element.line}, {element.describe()}"
                if attribute is not None:
                    text += f" attribute {attribute!r}"
                return text
        return format_path(loc)


def read_xml(path: str | os.PathLike[str]) -> ImportedXml:
    """Parse the SimGrid XML platform file ``path``."""
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except OSError as err:
        raise PlatformError(f"{source}: cannot read the platform file: {err.strerror}") from None
    return parse_xml_text(data, source)


def parse_xml_text(text: str | bytes, source: str = "<xml>") -> ImportedXml:
    """:func:`read_xml` on the content of a file."""
    root = _parse_tree(text, source)
    converter = _Converter(source)
    data = converter.platform(root)
    return ImportedXml(data, source, converter.where)


# ------------------------------------------------------------------------------- parsing

def _parse_tree(text: str | bytes, source: str) -> _Element:
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    roots: list[_Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = _Element(tag, dict(attrs), parser.CurrentLineNumber)
        if len(stack) >= MAX_XML_DEPTH:
            raise PlatformError(f"{source}: line {element.line}, {element.describe()}: elements "
                                f"nested more than {MAX_XML_DEPTH} levels deep; refused")
        if stack:
            stack[-1].children.append(element)
        else:
            roots.append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as err:
        message = expat.ErrorString(err.code)
        raise PlatformError(f"{source}: line {err.lineno}, column {err.offset + 1}: XML syntax "
                            f"error: {message}") from None
    if not roots:
        raise PlatformError(f"{source}: <top>: no XML element found")
    return roots[0]


# ---------------------------------------------------------------------------- conversion

_UNSUPPORTED = {
    "peer": "peers (Vivaldi zones) are not supported",
    "trace": "availability and state profiles (<trace>) are not supported",
    "trace_connect": "availability and state profiles (<trace_connect>) are not supported",
    "bypassRoute": "bypass routes are not supported",
    "bypassZoneRoute": "bypass routes are not supported",
    "bypassASroute": "bypass routes are not supported",
    "actor": "deployment (<actor>) belongs to the program, not to the platform; remove it",
    "process": "deployment (<process>) belongs to the program, not to the platform; remove it",
    "include": "<include> was removed in SimGrid 3.18",
    "storage": "<storage> was removed in SimGrid 3.27",
    "storage_type": "<storage_type> was removed in SimGrid 3.27",
    "mount": "<mount> was removed in SimGrid 3.27",
    "random": "<random> is not supported",
    "model_prop": "<model_prop> is not supported",
}

_FILE_ATTRIBUTES = ("speed_file", "availability_file", "state_file", "bandwidth_file",
                    "latency_file")


class _Converter:
    def __init__(self, source: str) -> None:
        self.source = source
        self.where: dict[Loc, tuple[_Element, str | None]] = {}
        #: SPLITDUPLEX links that have directions (base names), as SimGrid registers them
        self.split: set[str] = set()
        #: ``<disk>`` of the hosts, as entries of the ``storage`` section
        self.disks: list[dict[str, Any]] = []
        #: ``mount`` properties of the disks, as entries of the ``filesystems`` section
        self.filesystems: list[dict[str, Any]] = []
        #: mount -> the (host, disk) pairs whose ``mount`` property made that local file system
        self.mounted: dict[str, set[tuple[str, str]]] = {}
        #: the hosts' ``remote_disk`` properties: (host, its <prop> element), in document order
        self.remote: list[tuple[str, _Element]] = []

    # ---------------------------------------------------------------------- utilities
    def error(self, element: _Element, message: str, attribute: str | None = None) -> PlatformError:
        where = f"line {element.line}, {element.describe()}"
        if attribute is not None:
            where += f" attribute {attribute!r}"
        return PlatformError(f"{self.source}: {where}: {message}")

    def attrs(self, element: _Element, accepted: Iterable[str], required: Iterable[str] = (),
              defaults: dict[str, str] | None = None) -> dict[str, str]:
        allowed = set(accepted) | set(required)
        for name in element.attrs:
            if name not in allowed:
                if name in _FILE_ATTRIBUTES and element.attrs[name] == "":
                    continue
                if name in _FILE_ATTRIBUTES:
                    raise self.error(element, "availability/state profiles are not supported; "
                                     "remove this attribute", name)
                raise self.error(element, f"unknown or unsupported attribute (accepted: "
                                 f"{', '.join(sorted(allowed))})", name)
        for name in required:
            if name not in element.attrs:
                raise self.error(element, f"missing required attribute {name!r}")
        values = dict(defaults or {})
        values.update(element.attrs)
        return values

    def mark(self, loc: Loc, element: _Element, attribute: str | None = None) -> None:
        self.where[loc] = (element, attribute)

    def unsupported(self, element: _Element, context: str) -> PlatformError:
        why = _UNSUPPORTED.get(element.tag)
        if why is not None:
            return self.error(element, why)
        return self.error(element, f"unexpected element <{element.tag}> in {context}")

    def properties(self, element: _Element, loc: Loc) -> dict[str, str]:
        props: dict[str, str] = {}
        for child in element.children:
            if child.tag != "prop":
                continue
            values = self.attrs(child, (), ("id", "value"))
            props.setdefault(values["id"], values["value"])  # SimGrid keeps the first
            self.mark(loc + ("properties", values["id"]), child, "value")
            if values["id"] in _HOST_MEMORY:
                self.mark(loc + (values["id"],), child, "value")
        if props:
            self.mark(loc + ("properties",), element)
        return props

    # ------------------------------------------------------------------------ platform
    def platform(self, root: _Element) -> dict[str, Any]:
        if root.tag != "platform":
            raise self.error(root, "expected a SimGrid platform file (root element <platform>)")
        self.mark((), root)
        values = self.attrs(root, ("version",), defaults={"version": "0.0"})
        self._check_version(root, values["version"])
        data: dict[str, Any] = {}
        config: dict[str, str] = {}
        top: list[_Element] = []
        for child in root.children:
            if child.tag == "config":
                if top:
                    raise self.error(child, "all <config> elements must come before the "
                                     "platform elements")
                self.attrs(child, ("id",))
                for prop in child.children:
                    if prop.tag != "prop":
                        raise self.unsupported(prop, "<config>")
                    item = self.attrs(prop, (), ("id", "value"))
                    if item["id"] in config:
                        first = self.where[("config", item["id"])][0].line
                        raise self.error(prop, f"config item {item['id']!r} is already set at "
                                         f"line {first}", "id")
                    config[item["id"]] = item["value"]
                    self.mark(("config", item["id"]), prop, "value")
                    self.mark(("config",), child)
            elif child.tag in ("zone", "AS", "cluster"):
                top.append(child)
            else:
                raise self.unsupported(child, "<platform>")
        if config:
            data["config"] = config
        if len(top) != 1:
            if not top:
                raise self.error(root, "the platform has no <zone> nor <cluster>")
            raise self.error(top[1], "a platform has one root element (one <zone> or one "
                             "<cluster>); put them all in a <zone>")
        element = top[0]
        if element.tag == "cluster":
            data["clusters"] = [self.cluster(element, ("clusters", 0))]
        else:
            data["zone"] = self.zone(element, ("zone",))
        for host, prop in self.remote:
            self.remote_disk(host, prop)
        if self.disks:
            data["storage"] = self.disks
        if self.filesystems:
            data["filesystems"] = self.filesystems
        return data

    def _check_version(self, root: _Element, text: str) -> None:
        try:
            version = round(100 * float(text))
        except ValueError:
            raise self.error(root, f"expected a version number like '4.1', found {text!r}",
                             "version") from None
        if version < 400:
            raise self.error(root, f"platform version {text} is too old for SimGrid 3.32 "
                             "(versions 4 and 4.1 are read); update it with simgrid_update_xml",
                             "version")
        if version > 410:
            raise self.error(root, f"platform version {text} comes from a newer SimGrid "
                             "(versions 4 and 4.1 are read)", "version")

    # ---------------------------------------------------------------------------- zone
    def zone(self, element: _Element, loc: Loc) -> dict[str, Any]:
        values = self.attrs(element, (), ("id", "routing"))
        self.mark(loc, element)
        self.mark(loc + ("name",), element, "id")
        self.mark(loc + ("routing",), element, "routing")
        routing = values["routing"]
        if routing.lower() in ("vivaldi", "wifi"):
            raise self.error(element, f"{routing} zones are not supported", "routing")
        zone: dict[str, Any] = {"name": values["id"], "routing": routing}
        props = self.properties(element, loc)
        if props:
            zone["properties"] = props
        hosts: list[Any] = []
        routers: list[str] = []
        links: list[Any] = []
        clusters: list[Any] = []
        zones: list[Any] = []
        routes: list[Any] = []
        host_links: list[Any] = []
        cabinets: list[_Element] = []
        document: list[str] = []  # member names in document order
        for child in element.children:
            tag = child.tag
            if tag == "prop":
                continue
            if tag == "host":
                hosts.append(self.host(child, loc + ("hosts", len(hosts))))
                document.append(hosts[-1]["name"])
            elif tag == "router":
                item = self.attrs(child, ("coordinates",), ("id",))
                self.mark(loc + ("routers", len(routers)), child, "id")
                routers.append(item["id"])
                document.append(item["id"])
            elif tag == "link":
                links.append(self.link(child, loc + ("links", len(links))))
            elif tag == "cluster":
                clusters.append(self.cluster(child, loc + ("clusters", len(clusters))))
                document.append(clusters[-1]["name"])
            elif tag in ("zone", "AS"):
                zones.append(self.zone(child, loc + ("zones", len(zones))))
                document.append(zones[-1]["name"])
            elif tag == "route":
                routes.extend(self.route(child, loc + ("routes", len(routes)), gateways=False))
            elif tag in ("zoneRoute", "ASroute"):
                routes.extend(self.route(child, loc + ("routes", len(routes)), gateways=True))
            elif tag == "backbone":
                item = self.attrs(child, (), ("id", "bandwidth", "latency"))
                self.mark(loc + ("backbone",), child)
                for key, attribute in (("name", "id"), ("bandwidth", "bandwidth"),
                                       ("latency", "latency")):
                    self.mark(loc + ("backbone", key), child, attribute)
                zone["backbone"] = {"name": item["id"], "bandwidth": item["bandwidth"],
                                    "latency": item["latency"]}
            elif tag == "host_link":
                item = self.attrs(child, (), ("id", "up", "down"))
                where = loc + ("host_links", len(host_links))
                self.mark(where, child)
                for key, attribute in (("host", "id"), ("up", "up"), ("down", "down")):
                    self.mark(where + (key,), child, attribute)
                host_links.append({"host": item["id"], "up": item["up"], "down": item["down"]})
            elif tag == "cabinet":
                cabinets.append(child)
            else:
                raise self.unsupported(child, element.describe())
        for cabinet in cabinets:  # SimGrid builds them when the zone ends
            for host, link_pair, host_link in self.cabinet(cabinet, loc, len(hosts),
                                                           len(links), len(host_links)):
                hosts.append(host)
                document.append(host["name"])
                links.extend(link_pair)
                host_links.append(host_link)
        for key, items in (("hosts", hosts), ("routers", routers), ("links", links),
                           ("clusters", clusters), ("zones", zones), ("routes", routes),
                           ("host_links", host_links)):
            if items:
                zone[key] = items
        canonical = ([h["name"] for h in hosts] + routers + [c["name"] for c in clusters]
                     + [z["name"] for z in zones])
        if document != canonical:
            zone["order"] = document
            self.mark(loc + ("order",), element)
        return zone

    def host(self, element: _Element, loc: Loc) -> dict[str, Any]:
        values = self.attrs(element, ("core", "pstate", "coordinates", "state_file"), ("id", "speed"),
                            {"core": "1", "pstate": "0"})
        self.mark(loc, element)
        host: dict[str, Any] = {"name": values["id"], "speed": values["speed"]}
        for key, attribute in (("name", "id"), ("speed", "speed"), ("cores", "core"),
                               ("pstate", "pstate")):
            self.mark(loc + (key,), element, attribute)
        cores = self.integer(element, "core", values["core"])
        if cores != 1:
            host["cores"] = cores
        pstate = self.integer(element, "pstate", values["pstate"])
        if pstate != 0:
            host["pstate"] = pstate
        disk_seen = False
        for child in element.children:
            if child.tag == "disk":
                if disk_seen:
                    raise self.error(child, "smpy models one disk per host; remove the others")
                disk_seen = True
                self.disk(child, values["id"])
            elif child.tag != "prop":
                raise self.unsupported(child, element.describe())
        props = _take_memory(self.state_file(element, values, self.properties(element, loc)), host)
        remote = [c for c in element.children if c.tag == "prop" and c.attrs.get("id") == "remote_disk"]
        if remote:
            self.remote.append((values["id"], remote[0]))
        if props:
            host["properties"] = props
        return host

    def state_file(self, element: _Element, values: dict[str, str], props: dict[str, str]) -> dict[str, str]:
        """SimGrid's ``state_file`` (a state profile, relative to the platform file): the
        component's failure trace (smpy.platform.failures), as its property ``smpy/failures``."""
        name = values.get("state_file", "")
        if not name:
            return props
        path = Path(name) if os.path.isabs(name) else Path(self.source).parent / name
        try:
            text = path.read_text()
        except OSError as err:
            raise self.error(element, f"cannot read {str(path)!r}: {err.strerror}", "state_file") from None
        try:
            states = parse_states(text, str(path))
        except ValueError as err:
            raise self.error(element, str(err), "state_file") from None
        return {**props, FAILURES_PROPERTY: Profile("trace", states=states).text()}

    def disk(self, element: _Element, host: str) -> None:
        """SimGrid's ``<disk id read_bw write_bw>`` of a host: a storage entry for that host
        (latency: the storage model's default); its ``mount`` property also declares a local
        file system there (:meth:`_mount`); other ``<prop>`` children are ignored."""
        values = self.attrs(element, (), ("id", "read_bw", "write_bw"))
        loc: Loc = ("storage", len(self.disks))
        self.mark(loc, element)
        for key, attribute in (("name", "id"), ("read_bandwidth", "read_bw"),
                               ("write_bandwidth", "write_bw"), ("hosts", None)):
            self.mark(loc + (key,), element, attribute)
        mount = None
        for child in element.children:
            if child.tag != "prop":
                raise self.unsupported(child, element.describe())
            prop = self.attrs(child, (), ("id", "value"))
            if prop["id"] == "mount" and mount is None:
                mount = (prop["value"], child)
        self.disks.append({"name": values["id"], "read_bandwidth": values["read_bw"],
                           "write_bandwidth": values["write_bw"], "hosts": [host]})
        if mount is not None:
            self._mount(mount[0], mount[1], values)
            self.mounted.setdefault(mount[0], set()).add((host, values["id"]))

    def _mount(self, mount: str, prop: _Element, values: dict[str, str]) -> None:
        """A disk's ``mount`` property: a ``local`` file system at that path (one for all the
        hosts whose disks name it, which must then have the same bandwidths; SimGrid's disks
        have no latency)."""
        for fs in self.filesystems:
            if fs["mount"] == mount:
                if (fs["disk"]["read"], fs["disk"]["write"]) != (values["read_bw"], values["write_bw"]):
                    raise self.error(prop, f"the disks mounted at {mount!r} differ in bandwidth; "
                                     "smpy's local file system has one disk model for every host")
                return
        loc: Loc = ("filesystems", len(self.filesystems))
        self.mark(loc, prop)
        self.mark(loc + ("mount",), prop, "value")
        self.filesystems.append({"name": mount.strip("/").replace("/", "-") or "root", "kind": "local", "mount": mount,
                                 "disk": {"read": values["read_bw"], "write": values["write_bw"],
                                          "latency": "0s"}})

    def remote_disk(self, host: str, prop: _Element) -> None:
        """A host's ``remote_disk`` property ``MOUNT:DISK:HOST`` (SimGrid's file system
        plugin): paths under MOUNT are on disk DISK of host HOST, their bytes crossing the
        route between the hosts. smpy's file systems are global by mount, so this is a
        ``parallel`` file system at MOUNT with HOST as its only server, DISK's bandwidths, no
        latency nor cache, and one stripe (a write is one transfer then one disk write, as
        SimGrid's ``File::write`` does); it replaces the local file system that DISK's own
        ``mount`` property declared at MOUNT (HOST then reaches it over its loopback)."""
        value = prop.attrs.get("value", "")
        where = f"host {host!r} property 'remote_disk'"
        parts = value.split(":")
        if len(parts) != 3 or not all(parts) or not parts[0].startswith("/"):
            raise self.error(prop, f"{where}: expected 'MOUNTPOINT:DISK:HOST' (an absolute "
                             f"path, a disk id, a host id), found {value!r}", "value")
        mount, disk_name, server = parts[0].rstrip("/") or "/", parts[1], parts[2]
        disk = next((d for d in self.disks if d["name"] == disk_name and d["hosts"] == [server]), None)
        if disk is None:
            hosts = {d["hosts"][0] for d in self.disks}
            what = f"host {server!r} has no disk {disk_name!r}" if server in hosts or any(
                h == server for h, _p in self.remote) else f"no host {server!r} with a <disk>"
            raise self.error(prop, f"{where}: {what} (value {value!r})", "value")
        fs = {"name": mount.strip("/").replace("/", "-") or "root", "kind": "parallel", "mount": mount,
              "servers": [server], "stripe_count": 1, "stripe_size": float(1 << 62),
              "disk": {"read": disk["read_bandwidth"], "write": disk["write_bandwidth"], "latency": "0s"}}
        for i, other in enumerate(self.filesystems):
            if (other.get("mount", "").rstrip("/") or "/") != mount:
                continue
            if other == fs:
                return
            if other["kind"] == "local" and self.mounted.get(mount, set()) <= {(server, disk_name)}:
                self.filesystems[i] = fs
                return
            raise self.error(prop, f"{where}: {mount!r} is already the mount of other disks; "
                             "smpy's file systems are global by mount, one file system per "
                             "mount", "value")
        loc: Loc = ("filesystems", len(self.filesystems))
        self.mark(loc, prop, "value")
        self.filesystems.append(fs)

    def integer(self, element: _Element, attribute: str, text: str) -> int:
        """SimGrid's ``std::stoi``: the leading integer of the text (``"0.0"`` is 0)."""
        digits = text.strip()
        end = 1 if digits[:1] in "+-" else 0
        while end < len(digits) and digits[end] in "0123456789":
            end += 1
        try:
            value = int(digits[:end])
        except ValueError:
            raise self.error(element, f"expected a whole number, found {text!r}",
                             attribute) from None
        if digits[end:] and not _ZERO_FRACTION.fullmatch(digits[end:]):
            note = (f"{text!r} read as {value}, as SimGrid does (std::stoi stops at the first "
                    "character that is not a digit)")
            warn(str(self.error(element, note, attribute)))
        return value

    def link(self, element: _Element, loc: Loc) -> dict[str, Any]:
        values = self.attrs(element, ("latency", "sharing_policy", "state_file"), ("id", "bandwidth"),
                            {"latency": "0", "sharing_policy": "SHARED"})
        self.mark(loc, element)
        for key, attribute in (("name", "id"), ("bandwidth", "bandwidth"),
                               ("latency", "latency"), ("sharing", "sharing_policy")):
            self.mark(loc + (key,), element, attribute)
        policy = values["sharing_policy"]
        if policy == "WIFI":
            raise self.error(element, "WIFI links are not supported", "sharing_policy")
        if policy in ("SPLITDUPLEX", "FULLDUPLEX"):
            self.split.add(values["id"])
        if "," in values["bandwidth"]:
            raise self.error(element, "several bandwidths are only for WIFI links, which are "
                             "not supported", "bandwidth")
        link: dict[str, Any] = {"name": values["id"], "bandwidth": values["bandwidth"]}
        if values["latency"] not in ("0", ""):
            link["latency"] = values["latency"]
        if policy != "SHARED":
            link["sharing"] = "SPLITDUPLEX" if policy == "FULLDUPLEX" else policy
        for child in element.children:
            if child.tag != "prop":
                raise self.unsupported(child, element.describe())
        props = self.state_file(element, values, self.properties(element, loc))
        if props:
            link["properties"] = props
        return link

    def route(self, element: _Element, loc: Loc, *, gateways: bool) -> list[dict[str, Any]]:
        names = ("src", "dst", "gw_src", "gw_dst") if gateways else ("src", "dst")
        values = self.attrs(element, ("symmetrical",), names, {"symmetrical": "YES"})
        symmetric_text = values["symmetrical"]
        if symmetric_text not in ("YES", "NO", "yes", "no"):
            raise self.error(element, f"expected YES or NO, found {symmetric_text!r}",
                             "symmetrical")
        symmetric = symmetric_text.upper() == "YES"
        forward: list[str] = []
        reverse: list[str] = []  # the reverse route's links, in forward order
        needs_split = False
        for k, child in enumerate(element.children):
            if child.tag != "link_ctn":
                raise self.unsupported(child, element.describe())
            item = self.attrs(child, ("direction",), ("id",), {"direction": "NONE"})
            for grandchild in child.children:
                raise self.unsupported(grandchild, child.describe())
            name, direction = item["id"], item["direction"]
            if direction not in ("UP", "DOWN", "NONE"):
                raise self.error(child, f"expected UP, DOWN or NONE, found {direction!r}",
                                 "direction")
            if direction != "NONE":
                if name not in self.split:
                    raise self.error(child, f"{name!r} is not a SPLITDUPLEX link declared "
                                     "before this route; a direction is only for those",
                                     "direction")
                other = "DOWN" if direction == "UP" else "UP"
                forward.append(f"{name}_{direction}")
                reverse.append(f"{name}_{other}")
            else:
                if name in self.split:
                    raise self.error(child, f"{name!r} is SPLITDUPLEX: give a direction "
                                     "(direction=\"UP\" or \"DOWN\")", "id")
                if name.endswith(("_UP", "_DOWN")) and name.rsplit("_", 1)[0] in self.split:
                    needs_split = True  # SimGrid uses this very half on the way back
                forward.append(name)
                reverse.append(name)
            self.mark(loc + ("links", k), child, "id")
        self.mark(loc, element)
        for key in names + ("symmetric",):
            self.mark(loc + (key,), element, "symmetrical" if key == "symmetric" else key)
        route: dict[str, Any] = {"src": values["src"], "dst": values["dst"]}
        if gateways:
            route["gw_src"] = values["gw_src"]
            route["gw_dst"] = values["gw_dst"]
        route["links"] = forward
        if not symmetric:
            route["symmetric"] = False
            return [route]
        if not needs_split or values["src"] == values["dst"]:
            return [route]
        route["symmetric"] = False
        back: dict[str, Any] = {"src": values["dst"], "dst": values["src"]}
        if gateways:
            back["gw_src"] = values["gw_dst"]
            back["gw_dst"] = values["gw_src"]
        back["links"] = list(reversed(reverse))
        back["symmetric"] = False
        after = loc[:-1] + (int(loc[-1]) + 1,)
        for key, found in list(self.where.items()):
            if key[: len(loc)] == loc:
                self.where[after + key[len(loc):]] = found
        return [route, back]

    def cabinet(self, element: _Element, loc: Loc, first_host: int, first_link: int,
                first_host_link: int) -> Iterable[tuple[dict[str, Any], list[dict[str, Any]],
                                                        dict[str, Any]]]:
        values = self.attrs(element, (), ("id", "prefix", "suffix", "radical", "speed", "bw",
                                          "lat"))
        try:
            radicals = parse_radical(values["radical"])
        except ValueError as err:
            raise self.error(element, str(err), "radical") from None
        for k, radical in enumerate(radicals):
            name = f"{values['prefix']}{radical}{values['suffix']}"
            host_loc = loc + ("hosts", first_host + k)
            self.mark(host_loc, element, "radical")
            self.mark(host_loc + ("speed",), element, "speed")
            pair = []
            for j, half in enumerate(("UP", "DOWN")):
                link_loc = loc + ("links", first_link + 2 * k + j)
                self.mark(link_loc, element, "radical")
                self.mark(link_loc + ("bandwidth",), element, "bw")
                self.mark(link_loc + ("latency",), element, "lat")
                pair.append({"name": f"link_{name}_{half}", "bandwidth": values["bw"],
                             "latency": values["lat"]})
            self.mark(loc + ("host_links", first_host_link + k), element, "radical")
            yield ({"name": name, "speed": values["speed"]}, pair,
                   {"host": name, "up": f"link_{name}_UP", "down": f"link_{name}_DOWN"})

    # ------------------------------------------------------------------------- cluster
    _CLUSTER_KEYS = {
        "id": "name", "prefix": "prefix", "suffix": "suffix", "radical": "radical",
        "speed": "speed", "core": "cores", "bw": "bandwidth", "lat": "latency",
        "sharing_policy": "sharing", "topology": "topology",
        "topo_parameters": "topo_parameters", "router_id": "router",
        "limiter_link": "limiter",
    }

    def cluster(self, element: _Element, loc: Loc) -> dict[str, Any]:
        accepted = ("prefix", "suffix", "core", "sharing_policy", "topology", "topo_parameters",
                    "bb_bw", "bb_lat", "bb_sharing_policy", "router_id", "limiter_link",
                    "loopback_bw", "loopback_lat")
        values = self.attrs(element, accepted, ("id", "radical", "speed", "bw", "lat"),
                            {"prefix": "", "suffix": "", "core": "1",
                             "sharing_policy": "SPLITDUPLEX", "topology": "FLAT"})
        self.mark(loc, element)
        for attribute, key in self._CLUSTER_KEYS.items():
            self.mark(loc + (key,), element, attribute)
        for key, attribute in (("bandwidth", "bb_bw"), ("latency", "bb_lat"),
                               ("sharing", "bb_sharing_policy")):
            self.mark(loc + ("backbone", key), element, attribute)
        for key, attribute in (("bandwidth", "loopback_bw"), ("latency", "loopback_lat")):
            self.mark(loc + ("loopback", key), element, attribute)
        self.mark(loc + ("backbone",), element, "bb_bw")
        self.mark(loc + ("loopback",), element, "loopback_bw")
        for child in element.children:
            if child.tag != "prop":
                raise self.unsupported(child, element.describe())
        topology = values["topology"]
        cluster: dict[str, Any] = {"name": values["id"]}
        for key in ("prefix", "suffix"):
            if values[key]:
                cluster[key] = values[key]
        cluster["radical"] = values["radical"]
        cluster["speed"] = values["speed"]
        cores = self.integer(element, "core", values["core"])
        if cores != 1:
            cluster["cores"] = cores
        cluster["bandwidth"] = values["bw"]
        cluster["latency"] = values["lat"]
        policy = values["sharing_policy"]
        if policy == "FULLDUPLEX":
            policy = "SPLITDUPLEX"
        if policy != "SPLITDUPLEX":
            cluster["sharing"] = policy
        if topology != "FLAT":
            cluster["topology"] = topology
            cluster["topo_parameters"] = values.get("topo_parameters", "")
        else:
            bb_bw = values.get("bb_bw", "")
            bb_lat = values.get("bb_lat", "")
            if bb_bw:
                backbone: dict[str, Any] = {"bandwidth": bb_bw}
                if bb_lat not in ("", "0", "0s"):
                    backbone["latency"] = bb_lat
                if values.get("bb_sharing_policy", "SHARED") != "SHARED":
                    backbone["sharing"] = values["bb_sharing_policy"]
                cluster["backbone"] = backbone
            elif bb_lat not in ("", "0", "0s"):
                raise self.error(element, "a backbone latency needs a backbone bandwidth "
                                 "(bb_bw)", "bb_lat")
            if values.get("router_id"):
                cluster["router"] = values["router_id"]
            if policy == "SPLITDUPLEX":  # SimGrid registers the private links as split links
                try:
                    radicals = parse_radical(values["radical"])
                except ValueError:
                    radicals = []
                self.split.update(f"{values['id']}_link_{r}" for r in radicals)
        if values.get("limiter_link"):
            cluster["limiter"] = values["limiter_link"]
        lb_bw, lb_lat = values.get("loopback_bw", ""), values.get("loopback_lat", "")
        if lb_bw or lb_lat:
            if not lb_bw:
                raise self.error(element, "a loopback latency needs a loopback bandwidth "
                                 "(loopback_bw)", "loopback_lat")
            loopback: dict[str, Any] = {"bandwidth": lb_bw}
            if lb_lat not in ("", "0", "0s"):
                loopback["latency"] = lb_lat
            cluster["loopback"] = loopback
        # SimGrid gives a cluster's properties to each of its hosts
        props = _take_memory(self.properties(element, loc), cluster)
        if props:
            cluster["properties"] = props
        return cluster
