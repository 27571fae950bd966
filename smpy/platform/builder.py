"""Zones and clusters of a validated spec → hosts, links and a zone tree, as SimGrid builds them.

:func:`build_zone_platform` turns a :class:`~smpy.platform.schema.PlatformSpec` that has a
``zone`` (or a single cluster) into hosts, links and a root
:class:`~smpy.network.zones.Zone`. Cross-references (route ends, gateways, link names,
duplicate names) are checked here; each problem is a :class:`BuildError` carrying the field
location, turned into a :class:`~smpy.platform.schema.PlatformError` by the loader.

Names follow SimGrid (``sg_platf.cpp``): a FLAT cluster ``c`` with prefix ``p`` and suffix
``s`` has hosts ``p<radical>s``, private links ``c_link_<radical>`` (``_UP``/``_DOWN`` when
SPLITDUPLEX, one SHARED link otherwise — SimGrid 3.32 ignores FATPIPE for private links),
loopbacks ``c_link_<radical>_loopback`` (FATPIPE), limiters ``c_link_<radical>_limiter``
(SHARED, latency 0), the backbone ``c_backbone`` and the router ``p c _router s`` (or
``router``). TORUS, FAT_TREE and DRAGONFLY clusters name their limiters by position
(``c_link_<i>_limiter``, switches and routers included) and build the rest in
:mod:`smpy.network.topologies`.

Order: netpoints of a zone are numbered hosts, routers, clusters, zones (or as ``order``
lists them); ``platform.hosts`` walks the tree depth first in that order; links are listed
in creation order, zone by zone in the same walk.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from smpy.cpu.host import Host
from smpy.cpu.memory import SwapCurve
from smpy.network.links import Link, Sharing
from smpy.network.routing import RoutingError
from smpy.network.topologies import (
    ClusterLinks,
    DragonflyZone,
    FatTreeZone,
    TopologyCounters,
    TorusZone,
    parse_dragonfly,
    parse_fat_tree,
    parse_torus,
)
from smpy.network.zones import ZONE_KINDS, DijkstraZone, NetPoint, RoutedZone, StarZone, Zone
from smpy.platform.schema import (
    ClusterSpec,
    HostSpec,
    LinkSpec,
    PlatformSpec,
    ZoneSpec,
    host_properties,
    link_properties,
)

__all__ = ["BuildError", "build_zone_platform", "Loc"]

Loc = tuple[str | int, ...]


class BuildError(Exception):
    """A problem in a validated spec, at the field location ``loc``.

    ``message`` may contain ``{other}``, to be replaced by the text naming the location
    ``other`` (where a duplicate name was first used).
    """

    def __init__(self, loc: Loc, message: str, other: Loc | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.other = other

    def render(self, locate: Callable[[Loc], str]) -> str:
        if self.other is None:
            return self.message
        return self.message.replace("{other}", locate(self.other))


class _Builder:
    def __init__(self) -> None:
        self.links: list[Link] = []
        self.link_by_name: dict[str, Link] = {}
        self.link_where: dict[str, Loc] = {}
        #: SPLITDUPLEX links: base name -> (UP half, DOWN half)
        self.split: dict[str, tuple[Link, Link]] = {}
        self.twin: dict[int, Link] = {}
        self.points: dict[str, NetPoint] = {}
        self.point_where: dict[str, Loc] = {}
        self.counters = TopologyCounters()
        self.deferred: list[Callable[[], None]] = []

    # ----------------------------------------------------------------------- registries
    def add_link(self, link: Link, loc: Loc) -> Link:
        first = self.link_where.get(link.name)
        if first is not None:
            raise BuildError(loc, f"duplicate link name {link.name!r} (already used by "
                             "{other})", first)
        if link.name == "__loopback__":
            raise BuildError(loc, "the link name '__loopback__' is reserved for the implicit "
                             "loopback link")
        self.link_where[link.name] = loc
        self.link_by_name[link.name] = link
        self.links.append(link)
        return link

    def declare_link(self, spec: LinkSpec, loc: Loc) -> None:
        sharing = Sharing(spec.sharing)
        if sharing is Sharing.SPLITDUPLEX:
            props = link_properties(spec.properties, spec.power, spec.failures)
            up = Link(f"{spec.name}_UP", spec.bandwidth, spec.latency, sharing, dict(props))
            down = Link(f"{spec.name}_DOWN", spec.bandwidth, spec.latency, sharing, dict(props))
            if spec.name in self.link_where:
                raise BuildError(loc + ("name",), f"duplicate link name {spec.name!r} (already "
                                 "used by {other})", self.link_where[spec.name])
            self.add_link(up, loc + ("name",))
            self.add_link(down, loc + ("name",))
            self.split[spec.name] = (up, down)
            self.twin[id(up)] = down
            self.twin[id(down)] = up
            return
        self.add_link(Link(spec.name, spec.bandwidth, spec.latency, sharing,
                           link_properties(spec.properties, spec.power, spec.failures)), loc + ("name",))

    def add_point(self, point: NetPoint, loc: Loc) -> NetPoint:
        first = self.point_where.get(point.name)
        if first is not None:
            raise BuildError(loc, f"duplicate host, router or zone name {point.name!r} (already "
                             "used by {other})", first)
        self.point_where[point.name] = loc
        self.points[point.name] = point
        return point

    def point(self, name: str, loc: Loc, what: str) -> NetPoint:
        found = self.points.get(name)
        if found is None:
            raise BuildError(loc, f"expected {what}, found {name!r}"
                             f"{_did_you_mean(name, self.points)}")
        return found

    def route_link(self, name: str, loc: Loc) -> tuple[Link, Link]:
        """A link named in a route: (forward link, link used by the symmetric reverse)."""
        link = self.link_by_name.get(name)
        if link is not None:
            return link, self.twin.get(id(link), link)
        if name in self.split:
            raise BuildError(loc, f"{name!r} is SPLITDUPLEX ({{other}}): name a direction, "
                             f"{name + '_UP'!r} or {name + '_DOWN'!r}",
                             self.link_where[name + "_UP"][:-1])
        raise BuildError(loc, f"expected the name of a declared link, found {name!r}"
                         f"{_did_you_mean(name, self.link_by_name)}")

    def plain_link(self, name: str, loc: Loc) -> Link:
        return self.route_link(name, loc)[0]

    # ---------------------------------------------------------------------------- zones
    def zone(self, spec: ZoneSpec, loc: Loc) -> Zone:
        if spec.routing in ("Dijkstra", "DijkstraCache"):
            zone: Zone = DijkstraZone(spec.name, cached=spec.routing == "DijkstraCache")
        else:
            zone = ZONE_KINDS[spec.routing](spec.name)
        zone.properties = dict(spec.properties)
        self.add_point(zone.netpoint, loc + ("name",))
        for i, link_spec in enumerate(spec.links):
            self.declare_link(link_spec, loc + ("links", i))
        backbone = None
        if spec.backbone is not None:
            bb = spec.backbone
            backbone = self.add_link(Link(bb.name, bb.bandwidth, bb.latency, Sharing(bb.sharing),
                                          link_properties({}, bb.power)),
                                     loc + ("backbone", "name"))
        for kind, i, item in self._members(spec, loc):
            if kind == "hosts":
                host = host_from_spec(item)
                self.add_point(zone.add_host(host), loc + ("hosts", i, "name"))
            elif kind == "routers":
                self.add_point(zone.add_router(item), loc + ("routers", i))
            elif kind == "clusters":
                zone.add_child(self.cluster(item, loc + ("clusters", i)))
            else:
                zone.add_child(self.zone(item, loc + ("zones", i)))
        if spec.routes:
            self.deferred.append(lambda: self._routes(zone, spec, loc))
        if spec.host_links:
            assert isinstance(zone, StarZone)
            self.deferred.append(lambda: self._host_links(zone, spec, backbone, loc))
        return zone

    def _members(self, spec: ZoneSpec, loc: Loc) -> list[tuple[str, int, Any]]:
        members: list[tuple[str, int, Any]] = []
        for key in ("hosts", "routers", "clusters", "zones"):
            for i, item in enumerate(getattr(spec, key)):
                members.append((key, i, item))
        if spec.order is None:
            return members
        by_name = {(item if isinstance(item, str) else item.name): (key, i, item)
                   for key, i, item in members}
        ordered = []
        for j, name in enumerate(spec.order):
            member = by_name.pop(name, None)
            if member is None:
                why = ("is listed twice" if any(name == m[2] if isinstance(m[2], str)
                                                else name == m[2].name for m in ordered)
                       else "is not a host, router, cluster or zone of this zone")
                raise BuildError(loc + ("order", j), f"{name!r} {why}")
            ordered.append(member)
        if by_name:
            missing = ", ".join(repr(name) for name in by_name)
            raise BuildError(loc + ("order",), f"`order` must list every host, router, cluster "
                             f"and zone of the zone; missing {missing}")
        return ordered

    def _routes(self, zone: Zone, spec: ZoneSpec, loc: Loc) -> None:
        assert isinstance(zone, RoutedZone)
        for j, route in enumerate(spec.routes):
            where = loc + ("routes", j)
            ends = []
            for end in ("src", "dst"):
                point = self.point(getattr(route, end), where + (end,),
                                   "the name of a host, router or zone")
                if point.zone is not zone:
                    owner = point.zone.name if point.zone is not None else "the platform"
                    raise BuildError(where + (end,), f"{point.name!r} belongs to zone "
                                     f"{owner!r}, not to zone {zone.name!r} where the route "
                                     "is declared")
                ends.append(point)
            gateways: list[NetPoint | None] = [None, None]
            if route.gw_src is not None:
                for k, end in enumerate(("gw_src", "gw_dst")):
                    gateways[k] = self.point(getattr(route, end), where + (end,),
                                             "the name of a host or router")
            forward: list[Link] = []
            back: list[Link] = []
            for k, name in enumerate(route.links):
                there, again = self.route_link(name, where + ("links", k))
                forward.append(there)
                back.append(again)
            try:
                zone.add_route(ends[0], ends[1], forward,
                               back=back if route.symmetric else None,
                               gw_src=gateways[0], gw_dst=gateways[1])
            except RoutingError as err:
                raise BuildError(where, str(err)) from None

    def _host_links(self, zone: StarZone, spec: ZoneSpec, backbone: Link | None,
                    loc: Loc) -> None:
        for j, item in enumerate(spec.host_links):
            where = loc + ("host_links", j)
            point = self.point(item.host, where + ("host",), "the name of a host")
            if point.zone is not zone or point.host is None:
                raise BuildError(where + ("host",), f"{item.host!r} is not a host of zone "
                                 f"{zone.name!r}")
            up = self.plain_link(item.up, where + ("up",))
            down = self.plain_link(item.down, where + ("down",))
            if backbone is not None:
                zone.set_links(point, up=[up, backbone], down=[backbone, down])
            else:
                zone.set_links(point, up=[up], down=[down])

    # ------------------------------------------------------------------------- clusters
    def cluster(self, spec: ClusterSpec, loc: Loc) -> Zone:
        radicals = spec.radicals
        radical_loc = loc + ("radical" if spec.radical is not None else "count",)
        if len(set(radicals)) != len(radicals):
            twice = sorted({r for r in radicals if radicals.count(r) > 1})
            raise BuildError(loc + ("radical",), "expected each host number once, found "
                             f"{', '.join(map(str, twice))} more than once")
        if spec.topology != "FLAT":
            return self._hierarchical(spec, loc, radicals, radical_loc)
        zone = StarZone(spec.name)
        zone.properties = dict(spec.properties)
        self.add_point(zone.netpoint, loc + ("name",))
        backbone = None
        if spec.backbone is not None:
            bb = spec.backbone
            backbone = self.add_link(Link(f"{spec.name}_backbone", bb.bandwidth, bb.latency,
                                          Sharing(bb.sharing), link_properties({}, bb.power)),
                                     loc + ("backbone",))
        for radical in radicals:
            host = self._cluster_host(spec, radical)
            point = self.add_point(zone.add_host(host), radical_loc)
            link_id = f"{spec.name}_link_{radical}"
            loopback = None
            if spec.loopback is not None:
                loopback = self.add_link(Link(f"{link_id}_loopback", spec.loopback.bandwidth,
                                              spec.loopback.latency, Sharing.FATPIPE),
                                         loc + ("loopback",))
            limiter = None
            if spec.limiter is not None:
                limiter = self.add_link(Link(f"{link_id}_limiter", spec.limiter, 0.0,
                                             Sharing.SHARED, link_properties({}, spec.link_power)),
                                        loc + ("limiter",))
            if spec.sharing == "SPLITDUPLEX":
                up = self.add_link(Link(f"{link_id}_UP", spec.bandwidth, spec.latency,
                                        Sharing.SPLITDUPLEX, link_properties({}, spec.link_power)),
                                   radical_loc)
                down = self.add_link(Link(f"{link_id}_DOWN", spec.bandwidth, spec.latency,
                                          Sharing.SPLITDUPLEX, link_properties({}, spec.link_power)),
                                     radical_loc)
                self.split[link_id] = (up, down)
                self.twin[id(up)] = down
                self.twin[id(down)] = up
            else:
                up = down = self.add_link(Link(link_id, spec.bandwidth, spec.latency,
                                               Sharing.SHARED, link_properties({}, spec.link_power)),
                                          radical_loc)
            zone.set_links(point,
                           up=[link for link in (limiter, up, backbone) if link is not None],
                           down=[link for link in (backbone, down, limiter) if link is not None],
                           loopback=[loopback] if loopback is not None else None)
        router = spec.router or f"{spec.prefix}{spec.name}_router{spec.suffix}"
        point = self.add_point(zone.add_router(router),
                               loc + ("router" if spec.router else "name",))
        zone.set_links(point, up=[], down=[])
        return zone

    def _cluster_host(self, spec: ClusterSpec, radical: int) -> Host:
        name = f"{spec.prefix}{radical}{spec.suffix}"
        return Host(name, spec.cores, list(spec.speed), spec.pstate, host_properties(spec, name),
                    **_memory(spec))

    def _hierarchical(self, spec: ClusterSpec, loc: Loc, radicals: Sequence[int],
                      radical_loc: Loc) -> Zone:
        name = spec.name
        make_loopback: Callable[[int], Link] | None = None
        make_limiter: Callable[[int], Link] | None = None
        if spec.loopback is not None:
            lb = spec.loopback

            def _loopback(i: int) -> Link:
                return Link(f"{name}_link_{radicals[i]}_loopback", lb.bandwidth, lb.latency,
                            Sharing.FATPIPE)
            make_loopback = _loopback
        if spec.limiter is not None:
            bandwidth = spec.limiter

            def _limiter(i: int) -> Link:
                return Link(f"{name}_link_{i}_limiter", bandwidth, 0.0, Sharing.SHARED)
            make_limiter = _limiter
        links = ClusterLinks(spec.bandwidth, spec.latency, Sharing(spec.sharing),
                             loopback=make_loopback, limiter=make_limiter)
        assert spec.topo_parameters is not None
        zone: TorusZone | FatTreeZone | DragonflyZone
        if spec.topology == "TORUS":
            dims = parse_torus(spec.topo_parameters)
            hosts = self._topology_hosts(spec, radicals, _product(dims))
            zone = TorusZone(name, hosts, dims, links)
        elif spec.topology == "FAT_TREE":
            params = parse_fat_tree(spec.topo_parameters)
            hosts = self._topology_hosts(spec, radicals, params.hosts)
            zone = FatTreeZone(name, hosts, params, links, self.counters)
        else:
            dragonfly = parse_dragonfly(spec.topo_parameters)
            hosts = self._topology_hosts(spec, radicals, dragonfly.hosts)
            zone = DragonflyZone(name, hosts, dragonfly, links, self.counters)
        self.add_point(zone.netpoint, loc + ("name",))
        for point in zone.vertices:
            self.add_point(point, radical_loc)
        for link in zone.links:
            self.add_link(link, loc + ("name",))
        return zone

    def _topology_hosts(self, spec: ClusterSpec, radicals: Sequence[int],
                        count: int) -> list[Host]:
        # SimGrid uses the first `count` radicals and ignores the others
        return [self._cluster_host(spec, radical) for radical in radicals[:count]]


def _product(values: Sequence[int]) -> int:
    out = 1
    for value in values:
        out *= value
    return out


def host_from_spec(spec: HostSpec) -> Host:
    """The Host of a `hosts:` entry (its power profile and memory bandwidths included)."""
    return Host(spec.name, spec.cores, list(spec.speed), spec.pstate, host_properties(spec, spec.name),
                **_memory(spec))


def _memory(spec: HostSpec | ClusterSpec) -> dict[str, Any]:
    """The Host fields of a spec's ``memory`` entry (none: memory not modelled) and of its
    ``ram``, ``swap`` and ``memory_slowdown`` (smpy.cpu.memory)."""
    out: dict[str, Any] = {}
    if spec.memory is not None:
        out.update(memory_bandwidth=spec.memory.bandwidth, core_memory_bandwidth=spec.memory.core_bandwidth)
    if spec.ram is not None:
        out.update(ram=spec.ram, swap=spec.swap)
        c = spec.memory_slowdown
        if c is not None:
            out["swap_curve"] = SwapCurve(c.ram, c.swap, c.growth)
    return out


def _did_you_mean(name: str, names: Any) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _walk_hosts(zone: Zone, out: list[Host]) -> None:
    for point in zone.vertices:
        if point.host is not None:
            out.append(point.host)
        elif point.child is not None:
            _walk_hosts(point.child, out)


def build_zone_platform(spec: PlatformSpec, loopback: Link
                        ) -> tuple[list[Host], list[Link], Zone]:
    """Hosts (depth-first order), links (creation order) and the sealed root zone.

    ``loopback`` is the platform-wide ``__loopback__`` link; it is appended to the links when
    some route uses it.
    """
    builder = _Builder()
    if spec.zone is not None:
        root = builder.zone(spec.zone, ("zone",))
    else:
        root = builder.cluster(spec.clusters[0], ("clusters", 0))
    for step in builder.deferred:
        step()
    root.seal(loopback)
    hosts: list[Host] = []
    _walk_hosts(root, hosts)
    links = list(builder.links)
    if any(zone.uses_platform_loopback() for zone in root.zones()):
        links.append(loopback)
    return hosts, links, root
