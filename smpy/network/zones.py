r"""Network zones: SimGrid's hierarchical routing (``NetZoneImpl`` and its Full, Floyd, Dijkstra,
Star and None zones), composed into host-to-host routes.

A platform is a tree of *zones*. Each zone holds *netpoints*: its hosts, its routers and one
netpoint per child zone, numbered in creation order (``NetPoint.id``). A zone answers only
*local* questions: the links from one of its netpoints to another, and, when the two are child
zones, the *gateways* (a host or router inside each child) where that route starts and ends.

Global route (``NetZoneImpl::get_global_route``) from netpoint ``s`` to netpoint ``d``::

    find the deepest zone C containing both, and the children S ∋ s, D ∋ d of C on their paths
    if S == D (s and d are direct members of C):    route = C.local(s, d)
    else:  (links, gs, gd) = C.local(S, D)
           route = global(s, gs) + links + global(gd, d)   (each part omitted when s == gs, gd == d)

Local routes of each zone kind (``routing:`` in the platform file):

``Full``
    the declared routes only (a table); a symmetric route ``s → d`` also declares ``d → s``: the
    link list reversed, each direction-tagged SPLITDUPLEX half swapped (``X_UP`` ↔ ``X_DOWN``).
``Floyd``
    declared routes are edges of cost = number of links; all-pairs shortest paths by
    Floyd–Warshall over the netpoint ids, ``cost[a][b] > cost[a][c] + cost[c][b]`` strictly, so
    among equal-cost paths the one found with the smallest intermediate ``c`` (in SimGrid's
    loop order) wins. A route is the concatenation of its edges; in a zone with child zones,
    consecutive edges whose gateways differ are joined by the global route between them.
``Dijkstra`` / ``DijkstraCache``
    declared routes are the edges of a graph whose nodes are numbered in order of first
    appearance in a route; shortest paths (cost = number of links) by Dijkstra with SimGrid's
    lazy priority queue, ties broken by node number, strict ``<`` relaxation (first found
    predecessor kept). SimGrid assembles the path backwards with ``insert_link_latency``, which
    prepends each edge's links *reversed*: a path of edges ``[a, b], [c, d]`` is the route
    ``[b, a, d, c]``. smpy reproduces that order.
``Cluster`` (SimGrid's StarZone, also every ``FLAT`` cluster)
    each netpoint has an *up* list (to the centre) and a *down* list (from the centre):
    ``local(s, d) = up(s) + down(d)``, a link already in the route skipped; a netpoint's own
    loopback list is used for ``s == d`` when it has one.
``None``
    no route at all (only useful for a zone holding one host used as a gateway).

In zones without child zones, Full, Floyd and Dijkstra give every netpoint without a declared
route to itself the platform-wide ``__loopback__`` link (FATPIPE; ``network/loopback-bw``,
default 10 GB/s, and ``network/loopback-lat``, default 0 s), as SimGrid's network model does.

The topology zones (torus, fat tree, dragonfly) live in :mod:`smpy.network.topologies`.

Every zone is a :class:`~smpy.network.routing.Routing`: ``zone.route(src_host, dst_host)``
returns the cached global route between two hosts of its subtree. Where SimGrid returns an
empty route, smpy uses the platform loopback for a host to itself and raises
:class:`~smpy.network.routing.RoutingError` otherwise (SimGrid aborts on both).
:meth:`Zone.simgrid_route` returns SimGrid's answer unchanged.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from smpy.cpu.host import Host
from smpy.network.links import Link
from smpy.network.routing import Routing, RoutingError
from smpy.support.internal import SmpyInternalError

__all__ = [
    "NetPoint",
    "Zone",
    "FullZone",
    "FloydZone",
    "DijkstraZone",
    "StarZone",
    "EmptyZone",
    "RoutedZone",
    "LocalRoute",
    "global_route",
    "ZONE_KINDS",
]

HOST = "host"
ROUTER = "router"
ZONE = "zone"

#: (links, gateway in the source child zone, gateway in the destination child zone)
LocalRoute = tuple[tuple[Link, ...], "NetPoint | None", "NetPoint | None"]

_NO_LINKS: tuple[Link, ...] = ()


class NetPoint:
    """A node of the routing: a host, a router, or a child zone seen from its parent."""

    __slots__ = ("name", "kind", "zone", "id", "host", "child", "_ancestry")

    def __init__(self, name: str, kind: str, zone: Zone | None, *, host: Host | None = None,
                 child: Zone | None = None) -> None:
        self.name = name
        self.kind = kind
        #: the zone this netpoint belongs to (None for the root zone's own netpoint)
        self.zone = zone
        #: index among ``zone.vertices`` (SimGrid's ``NetPoint::id``)
        self.id = -1
        self.host = host
        self.child = child
        self._ancestry: tuple[Zone, ...] | None = None

    @property
    def ancestry(self) -> tuple[Zone, ...]:
        """Zones from the englobing one up to the root."""
        chain = self._ancestry
        if chain is None:
            out = []
            zone = self.zone
            while zone is not None:
                out.append(zone)
                zone = zone.parent
            chain = self._ancestry = tuple(out)
        return chain

    def __repr__(self) -> str:
        return f"NetPoint({self.name!r}, {self.kind})"


class Zone(Routing):
    """Base zone: membership, hierarchy and global routes; subclasses give local routes."""

    #: the ``routing`` name of this kind of zone in platform files
    kind = "?"

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.parent: Zone | None = None
        self.children: list[Zone] = []
        self.vertices: list[NetPoint] = []
        self.netpoint = NetPoint(name, ZONE, None, child=self)
        self.properties: dict[str, str] = {}
        self.loopback: Link | None = None
        self._sealed = False
        self._host_points: dict[Host, NetPoint] | None = None

    # ---------------------------------------------------------------------- membership
    @property
    def recursive(self) -> bool:
        """SimGrid's ``RoutingMode::recursive``: the zone has child zones."""
        return bool(self.children)

    def _add_vertex(self, point: NetPoint) -> NetPoint:
        if self._sealed:
            raise RoutingError(f"zone {self.name!r} is sealed; cannot add {point.name!r}")
        point.id = len(self.vertices)
        self.vertices.append(point)
        return point

    def add_host(self, host: Host) -> NetPoint:
        """Make ``host`` a member of this zone; returns its netpoint."""
        return self._add_vertex(NetPoint(host.name, HOST, self, host=host))

    def add_router(self, name: str) -> NetPoint:
        """Create a router (a netpoint that only forwards) in this zone."""
        return self._add_vertex(NetPoint(name, ROUTER, self))

    def add_child(self, zone: Zone) -> NetPoint:
        """Make ``zone`` a child of this zone; returns its netpoint here."""
        if zone.parent is not None:
            raise RoutingError(f"zone {zone.name!r} already has a parent")
        zone.parent = self
        zone.netpoint.zone = self
        self.children.append(zone)
        return self._add_vertex(zone.netpoint)

    def hosts(self) -> Iterator[NetPoint]:
        """Host netpoints of this zone and its descendants, members before children's."""
        for point in self.vertices:
            if point.kind == HOST:
                yield point
        for child in self.children:
            yield from child.hosts()

    def zones(self) -> Iterator[Zone]:
        """This zone and its descendants, depth first."""
        yield self
        for child in self.children:
            yield from child.zones()

    # -------------------------------------------------------------------------- sealing
    def seal(self, loopback: Link | None = None) -> None:
        """Finish building: zones compute their tables (children first, then this zone)."""
        for child in self.children:
            child.seal(loopback)
        if not self._sealed:
            self.loopback = loopback
            self._seal()
            self._sealed = True
        self.clear_cache()

    def _seal(self) -> None:
        """Zone-specific sealing (SimGrid's ``do_seal``)."""

    def uses_platform_loopback(self) -> bool:
        """Whether a host member of this zone (not of its children) routes to itself through
        the platform's ``__loopback__`` link (declared, or as smpy's fallback for an empty
        self-route)."""
        return False

    # --------------------------------------------------------------------------- routes
    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        """Route between two netpoints of this zone (SimGrid's ``get_local_route``)."""
        raise NotImplementedError

    def simgrid_route(self, src: Host, dst: Host) -> tuple[Link, ...]:
        """The route SimGrid's ``Host::route_to`` gives, possibly empty; not cached."""
        src_point, dst_point = self._pair(src, dst)
        out: list[Link] = []
        global_route(src_point, dst_point, out)
        return tuple(out)

    def _pair(self, src: Host, dst: Host) -> tuple[NetPoint, NetPoint]:
        points = self._host_points
        if points is None:
            points = self._host_points = {point.host: point for point in self.hosts()
                                          if point.host is not None}
        try:
            return points[src], points[dst]
        except KeyError:
            stranger = src if src not in points else dst
            raise RoutingError(f"host {stranger.name!r} is not in zone {self.name!r}") from None

    def _compute(self, src: Host, dst: Host) -> tuple[Link, ...]:
        src_point, dst_point = self._pair(src, dst)
        zone = src_point.zone
        if zone is dst_point.zone and zone is not None:  # the common case: one cluster
            links = zone.local_route(src_point, dst_point)[0]
        else:
            out: list[Link] = []
            global_route(src_point, dst_point, out)
            links = tuple(out)
        if links:
            return links
        if src is dst and self.loopback is not None:
            return (self.loopback,)
        raise RoutingError(f"no route from {src.name!r} to {dst.name!r}: the zones between them "
                           "give no link (SimGrid aborts on such a route too)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self.vertices)} netpoints)"


def _common_ancestors(src: NetPoint, dst: NetPoint) -> tuple[Zone, Zone, Zone]:
    """(common ancestor, child of it towards src, child of it towards dst), as SimGrid's
    ``find_common_ancestors`` (the three are equal when src and dst share their zone)."""
    zone = src.zone
    if zone is dst.zone:
        assert zone is not None
        return zone, zone, zone
    path_src = list(src.ancestry)
    path_dst = list(dst.ancestry)
    parent: Zone | None = None
    while len(path_src) > 1 and len(path_dst) > 1 and path_src[-1] is path_dst[-1]:
        parent = path_src.pop()
        path_dst.pop()
    src_ancestor, dst_ancestor = path_src[-1], path_dst[-1]
    if src_ancestor is dst_ancestor:
        return src_ancestor, src_ancestor, dst_ancestor
    if parent is None:
        raise RoutingError(f"{src.name!r} and {dst.name!r} are in unrelated zones")
    return parent, src_ancestor, dst_ancestor


def global_route(src: NetPoint, dst: NetPoint, out: list[Link]) -> None:
    """Append the links from ``src`` to ``dst`` to ``out`` (``get_global_route``)."""
    common, src_ancestor, dst_ancestor = _common_ancestors(src, dst)
    if src_ancestor is dst_ancestor:
        out.extend(common.local_route(src, dst)[0])
        return
    links, gw_src, gw_dst = common.local_route(src_ancestor.netpoint, dst_ancestor.netpoint)
    if gw_src is None or gw_dst is None:
        raise RoutingError(f"no route from {src.name!r} to {dst.name!r}: zone {common.name!r} "
                           f"declares no route from {src_ancestor.name!r} to "
                           f"{dst_ancestor.name!r} (with gateways)")
    if src is not gw_src:
        global_route(src, gw_src, out)
    out.extend(links)
    if gw_dst is not dst:
        global_route(gw_dst, dst, out)


class _Entry:
    """One declared route of a routed zone."""

    __slots__ = ("links", "gw_src", "gw_dst")

    def __init__(self, links: tuple[Link, ...], gw_src: NetPoint | None,
                 gw_dst: NetPoint | None) -> None:
        self.links = links
        self.gw_src = gw_src
        self.gw_dst = gw_dst


class RoutedZone(Zone):
    """Zones whose routes are declared (Full, Floyd, Dijkstra): checks shared by all three."""

    def add_route(self, src: NetPoint, dst: NetPoint, links: Sequence[Link], *,
                  back: Sequence[Link] | None = None, gw_src: NetPoint | None = None,
                  gw_dst: NetPoint | None = None) -> None:
        """Declare ``src → dst`` over ``links``; with ``back`` (the same list with direction-
        tagged SPLITDUPLEX halves swapped), also ``dst → src`` over ``reversed(back)``.

        Routes between child zones need both gateways: ``gw_src`` inside ``src``'s subtree and
        ``gw_dst`` inside ``dst``'s.
        """
        self._check_route(src, dst, links, gw_src, gw_dst)
        forward = _Entry(tuple(links), gw_src, gw_dst)
        backward = None
        if back is not None and src is not dst:
            backward = _Entry(tuple(reversed(back)), gw_dst, gw_src)
        self._store(src, dst, forward, backward)
        self.clear_cache()

    def _check_route(self, src: NetPoint, dst: NetPoint, links: Sequence[Link],
                     gw_src: NetPoint | None, gw_dst: NetPoint | None) -> None:
        for point in (src, dst):
            if point.zone is not self:
                raise RoutingError(f"{point.name!r} is not a member of zone {self.name!r}")
        if not links:
            raise RoutingError(f"empty route from {src.name!r} to {dst.name!r}")
        if (gw_src is None) != (gw_dst is None):
            raise RoutingError(f"route {src.name!r} -> {dst.name!r}: give both gateways or none")
        if gw_src is None:
            for point in (src, dst):
                if point.kind == ZONE:
                    raise RoutingError(f"route {src.name!r} -> {dst.name!r}: {point.name!r} is a "
                                       "zone, so the route needs gateways (gw_src and gw_dst)")
            return
        assert gw_dst is not None
        for point, gateway, end in ((src, gw_src, "gw_src"), (dst, gw_dst, "gw_dst")):
            if point.kind != ZONE:
                raise RoutingError(f"route {src.name!r} -> {dst.name!r}: {point.name!r} is not a "
                                   f"zone, so the route takes no gateways")
            if gateway.kind == ZONE:
                raise RoutingError(f"route {src.name!r} -> {dst.name!r}: {end} {gateway.name!r} "
                                   "must be a host or a router, not a zone")
            assert point.child is not None
            if point.child not in gateway.ancestry:
                owner = gateway.zone.name if gateway.zone is not None else "?"
                raise RoutingError(f"route {src.name!r} -> {dst.name!r}: {end} {gateway.name!r} "
                                   f"belongs to zone {owner!r}, not to {point.name!r}")
        if gw_src is gw_dst:
            raise RoutingError(f"route {src.name!r} -> {dst.name!r}: gw_src and gw_dst are the "
                               "same node")

    def _store(self, src: NetPoint, dst: NetPoint, forward: _Entry,
               backward: _Entry | None) -> None:
        raise NotImplementedError

    @staticmethod
    def _duplicate(src: NetPoint, dst: NetPoint, by_symmetry: bool) -> RoutingError:
        if by_symmetry:
            return RoutingError(f"the route from {src.name!r} to {dst.name!r} already exists: "
                                "do not declare the reverse of a symmetric route (or declare "
                                "both with symmetric: false)")
        return RoutingError(f"the route from {src.name!r} to {dst.name!r} already exists "
                            "(routes are symmetric by default)")

    def _gateways(self, entry: _Entry) -> tuple[NetPoint | None, NetPoint | None]:
        if self.recursive:
            return entry.gw_src, entry.gw_dst
        return None, None

    def uses_platform_loopback(self) -> bool:
        return any(self._missing_self_route(point) for point in self.vertices
                   if point.kind == HOST)

    def _missing_self_route(self, point: NetPoint) -> bool:
        """Whether ``point`` has no declared route to itself (or only the platform loopback)."""
        raise NotImplementedError

    def _is_loopback(self, entry: _Entry | None) -> bool:
        return entry is None or (self.loopback is not None and entry.links == (self.loopback,))


class FullZone(RoutedZone):
    """SimGrid's ``Full`` routing: a table of declared routes."""

    kind = "Full"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._table: dict[tuple[int, int], _Entry] = {}

    def _store(self, src: NetPoint, dst: NetPoint, forward: _Entry,
               backward: _Entry | None) -> None:
        if (src.id, dst.id) in self._table:
            raise self._duplicate(src, dst, False)
        if backward is not None and (dst.id, src.id) in self._table:
            raise self._duplicate(dst, src, True)
        self._table[src.id, dst.id] = forward
        if backward is not None:
            self._table[dst.id, src.id] = backward

    def _missing_self_route(self, point: NetPoint) -> bool:
        return self._is_loopback(self._table.get((point.id, point.id)))

    def _seal(self) -> None:
        if self.loopback is not None and not self.recursive:
            for point in self.vertices:
                if (point.id, point.id) not in self._table:
                    self._table[point.id, point.id] = _Entry((self.loopback,), None, None)

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        entry = self._table.get((src.id, dst.id))
        if entry is None:
            return _NO_LINKS, None, None
        gw_src, gw_dst = self._gateways(entry)
        return entry.links, gw_src, gw_dst


class FloydZone(RoutedZone):
    """SimGrid's ``Floyd`` routing: Floyd–Warshall over declared routes (cost = link count)."""

    kind = "Floyd"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._table: dict[tuple[int, int], _Entry] = {}
        self._pred: Any = None  # numpy int64 matrix, built on first use

    def _store(self, src: NetPoint, dst: NetPoint, forward: _Entry,
               backward: _Entry | None) -> None:
        if (src.id, dst.id) in self._table:
            raise self._duplicate(src, dst, False)
        if backward is not None and (dst.id, src.id) in self._table:
            raise self._duplicate(dst, src, True)
        self._table[src.id, dst.id] = forward
        if backward is not None:
            self._table[dst.id, src.id] = backward

    def _missing_self_route(self, point: NetPoint) -> bool:
        return self._is_loopback(self._table.get((point.id, point.id)))

    def _seal(self) -> None:
        if self.loopback is not None and not self.recursive:
            for point in self.vertices:
                if (point.id, point.id) not in self._table:
                    self._table[point.id, point.id] = _Entry((self.loopback,), None, None)
        n = len(self.vertices)
        import numpy as np  # only Floyd zones need it: not imported at start-up

        infinity = np.iinfo(np.int64).max
        cost = np.full((n, n), infinity, dtype=np.int64)
        pred = np.full((n, n), -1, dtype=np.int64)
        for (a, b), entry in self._table.items():
            cost[a, b] = len(entry.links)
            pred[a, b] = a
        # SimGrid's triple loop, one intermediate node c at a time. Row c and column c cannot
        # change while c is the intermediate (every cost is positive), so updating the whole
        # matrix at once for each c gives exactly the sequential result.
        for c in range(n):
            via_a = cost[:, c]
            via_b = cost[c, :]
            reach_a = via_a < infinity
            reach_b = via_b < infinity
            if not reach_a.any() or not reach_b.any():
                continue
            both = reach_a[:, None] & reach_b[None, :]
            candidate = (np.where(reach_a, via_a, 0)[:, None]
                         + np.where(reach_b, via_b, 0)[None, :])
            better = both & ((cost == infinity) | (candidate < cost))
            if better.any():
                cost = np.where(better, candidate, cost)
                pred = np.where(better, pred[c, :][None, :], pred)
        self._pred = pred

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        pred = self._pred
        if pred is None:
            raise SmpyInternalError(f"zone {self.name!r} is not sealed")
        stack: list[_Entry] = []
        current = dst.id
        row = pred[src.id]
        while True:
            previous = int(row[current])
            if previous == -1:
                raise RoutingError(f"no route from {src.name!r} to {dst.name!r} in zone "
                                   f"{self.name!r}")
            stack.append(self._table[previous, current])
            current = previous
            if current == src.id or len(stack) > len(self.vertices):
                break
        links: list[Link] = []
        previous_gw: NetPoint | None = None
        recursive = self.recursive
        for entry in reversed(stack):
            if (recursive and previous_gw is not None and entry.gw_src is not None
                    and previous_gw.name != entry.gw_src.name):
                global_route(previous_gw, entry.gw_src, links)
            links.extend(entry.links)
            previous_gw = entry.gw_dst
        if recursive:
            return tuple(links), stack[-1].gw_src, stack[0].gw_dst
        return tuple(links), None, None


_ULONG_MAX = (1 << 64) - 1


class DijkstraZone(RoutedZone):
    """SimGrid's ``Dijkstra``/``DijkstraCache`` routing (same routes; both cache here)."""

    kind = "Dijkstra"

    def __init__(self, name: str, *, cached: bool = False) -> None:
        super().__init__(name)
        self.cached = cached
        if cached:
            self.kind = "DijkstraCache"
        #: graph node number of each netpoint id, in order of first appearance in a route
        self._node_of: dict[int, int] = {}
        #: out-edges of each graph node, in declaration order: (target node, entry)
        self._out: list[list[tuple[int, _Entry]]] = []
        self._edge: dict[tuple[int, int], _Entry] = {}
        self._pred_cache: dict[int, list[int]] = {}

    def _node(self, point_id: int) -> int:
        node = self._node_of.get(point_id)
        if node is None:
            node = self._node_of[point_id] = len(self._out)
            self._out.append([])
        return node

    def _store(self, src: NetPoint, dst: NetPoint, forward: _Entry,
               backward: _Entry | None) -> None:
        a, b = self._node(src.id), self._node(dst.id)
        if (a, b) in self._edge:
            raise self._duplicate(src, dst, False)
        self._edge[a, b] = forward
        self._out[a].append((b, forward))
        if backward is not None:
            if (b, a) in self._edge:
                raise self._duplicate(dst, src, True)
            self._edge[b, a] = backward
            self._out[b].append((a, backward))

    def _missing_self_route(self, point: NetPoint) -> bool:
        node = self._node_of.get(point.id)
        return node is None or self._is_loopback(self._edge.get((node, node)))

    def _seal(self) -> None:
        if self.loopback is not None and not self.recursive:
            for node in range(len(self._out)):
                if (node, node) not in self._edge:
                    entry = _Entry((self.loopback,), None, None)
                    self._edge[node, node] = entry
                    self._out[node].append((node, entry))
        self._pred_cache.clear()

    def _predecessors(self, source: int) -> list[int]:
        pred = self._pred_cache.get(source)
        if pred is not None:
            return pred
        n = len(self._out)
        cost = [_ULONG_MAX] * n
        cost[source] = 0
        pred = [0] * n
        queue: list[tuple[float, int]] = [(float(cost[i]), i) for i in range(n)]
        heapq.heapify(queue)
        while queue:
            _, v = heapq.heappop(queue)
            cost_v = cost[v]
            for u, entry in self._out[v]:
                # unsigned arithmetic as in SimGrid (an unreached node wraps around)
                candidate = (len(entry.links) + cost_v) & _ULONG_MAX
                if candidate < cost[u]:
                    pred[u] = v
                    cost[u] = candidate
                    heapq.heappush(queue, (float(candidate), u))
        self._pred_cache[source] = pred
        return pred

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        source = self._node_of.get(src.id)
        target = self._node_of.get(dst.id)
        if source is None or target is None:
            raise RoutingError(f"no route from {src.name!r} to {dst.name!r} in zone "
                               f"{self.name!r} (no declared route touches "
                               f"{(src if source is None else dst).name!r})")
        chunks: list[Sequence[Link]] = []  # prepended pieces, collected in reverse
        if source == target:
            entry = self._edge.get((source, target))
            if entry is None:
                raise RoutingError(f"no route from {src.name!r} to itself in zone "
                                   f"{self.name!r}")
            return tuple(reversed(entry.links)), None, None
        pred = self._predecessors(source)
        gw_src: NetPoint | None = None
        first_gw: NetPoint | None = None
        recursive = self.recursive
        v = target
        steps = 0
        while v != source:
            entry = self._edge.get((pred[v], v))
            steps += 1
            if entry is None or steps > len(self._out):
                raise RoutingError(f"no route from {src.name!r} to {dst.name!r} in zone "
                                   f"{self.name!r}")
            previous_gw_src = gw_src
            gw_src = entry.gw_src
            if v == target:
                first_gw = entry.gw_dst
            elif (recursive and entry.gw_dst is not None and previous_gw_src is not None
                  and entry.gw_dst.name != previous_gw_src.name):
                # SimGrid 3.32 dereferences null gateways here; smpy joins the two gateways
                between: list[Link] = []
                global_route(entry.gw_dst, previous_gw_src, between)
                chunks.append(between)
            chunks.append(tuple(reversed(entry.links)))
            v = pred[v]
        links = tuple(link for chunk in reversed(chunks) for link in chunk)
        if recursive:
            return links, gw_src, first_gw
        return links, None, None


class StarZone(Zone):
    """SimGrid's StarZone (``routing: Cluster`` and every FLAT cluster).

    ``set_links(point, up=..., down=..., loopback=..., gateway=...)`` gives a netpoint its
    lists; a netpoint given none gets empty lists when the zone is sealed.
    """

    kind = "Cluster"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._up: dict[int, tuple[Link, ...]] = {}
        self._down: dict[int, tuple[Link, ...]] = {}
        self._loop: dict[int, tuple[Link, ...]] = {}
        self._gateway: dict[int, NetPoint | None] = {}
        #: per netpoint id: (up, down, loopback, gateway, set of up links), built on first use
        self._records: list[tuple[tuple[Link, ...], tuple[Link, ...], tuple[Link, ...],
                                  NetPoint | None, frozenset[Link]]] | None = None

    def set_links(self, point: NetPoint, *, up: Sequence[Link] | None = None,
                  down: Sequence[Link] | None = None, loopback: Sequence[Link] | None = None,
                  gateway: NetPoint | None = None) -> None:
        if point.zone is not self:
            raise RoutingError(f"{point.name!r} is not a member of zone {self.name!r}")
        if up is not None:
            self._up[point.id] = _dedupe(tuple(up))
            self._gateway[point.id] = gateway
        if down is not None:
            self._down[point.id] = _dedupe(tuple(down))
            self._gateway[point.id] = gateway
        if loopback is not None:
            self._loop[point.id] = _dedupe(tuple(loopback))
        self._records = None
        self.clear_cache()

    def uses_platform_loopback(self) -> bool:
        return any(point.kind == HOST and not self._loop.get(point.id)
                   and not self._up.get(point.id) and not self._down.get(point.id)
                   for point in self.vertices)

    def links_up(self, point: NetPoint) -> tuple[Link, ...]:
        return self._up.get(point.id, _NO_LINKS)

    def links_down(self, point: NetPoint) -> tuple[Link, ...]:
        return self._down.get(point.id, _NO_LINKS)

    def _build_records(self) -> list[tuple[tuple[Link, ...], tuple[Link, ...],
                                           tuple[Link, ...], NetPoint | None,
                                           frozenset[Link]]]:
        records = []
        for point in self.vertices:
            up = self._up.get(point.id, _NO_LINKS)
            records.append((up, self._down.get(point.id, _NO_LINKS),
                            self._loop.get(point.id, _NO_LINKS), self._gateway.get(point.id),
                            frozenset(up)))
        self._records = records
        return records

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        records = self._records
        if records is None:
            records = self._build_records()
        source = records[src.id]
        if src is dst and source[2]:
            return source[2], None, None
        target = records[dst.id]
        down = target[1]
        if source[4].isdisjoint(down):
            return source[0] + down, source[3], target[3]
        # a link on both sides (the backbone) is crossed once
        return tuple(dict.fromkeys(source[0] + down)), source[3], target[3]


class EmptyZone(Zone):
    """SimGrid's ``None`` routing: every local route is empty."""

    kind = "None"

    def uses_platform_loopback(self) -> bool:
        return any(point.kind == HOST for point in self.vertices)

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        return _NO_LINKS, None, None


def _dedupe(links: tuple[Link, ...]) -> tuple[Link, ...]:
    """``links`` without repeats (first occurrence kept); Link hashes by identity."""
    if len(links) < 2 or len(set(links)) == len(links):
        return links
    return tuple(dict.fromkeys(links))


#: zone classes by their ``routing`` name (case-insensitive in files, as in SimGrid)
ZONE_KINDS: dict[str, type[Zone]] = {
    "Full": FullZone,
    "Floyd": FloydZone,
    "Dijkstra": DijkstraZone,
    "DijkstraCache": DijkstraZone,
    "Cluster": StarZone,
    "None": EmptyZone,
}
