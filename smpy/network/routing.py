"""Routing: which links a message from one host to another crosses.

A route is the ordered tuple of :class:`~smpy.network.links.Link` objects crossed from ``src`` to
``dst``; its physical latency is the sum of their latencies, ``L(src, dst) = Σ_l latency_l``,
and the network model bounds the flow's rate by every link of it. Each link appears at most
once in a route. Routes are computed once per ordered pair and cached in a dict keyed by
``(src.index, dst.index)``, so ``route()`` on the hot path is one dict lookup.

Implementations
---------------
:class:`ClusterRouting` — SimGrid's flat ``<cluster>`` (a star zone, ``StarZone.cpp`` and
``sg_platf_new_cluster_flat`` in ``sg_platf.cpp``). Host ``h`` has an *up* list and a *down*
list, built from an optional limiter link, its private link and an optional backbone::

    up(h)   = [limiter_h, private_h(UP), backbone]
    down(h) = [backbone, private_h(DOWN), limiter_h]
    route(s, d) = up(s) + down(d), links seen twice kept once (the backbone)
                = [limiter_s, private_s_UP, backbone, private_d_DOWN, limiter_d]

A SPLITDUPLEX private link contributes its ``_UP`` half going up and its ``_DOWN`` half going
down; a SHARED or FATPIPE one is the same link both ways. For ``s == d`` the host's loopback
link is used if the cluster declares loopbacks; otherwise, as in SimGrid, the message goes up
and down its own private link (``[limiter_s, private_s_UP, backbone, private_s_DOWN]``, or
``[private_s, backbone]`` for a SHARED private link). Passing ``implicit_loopback`` replaces
this last case by the platform-wide loopback link.

:class:`FullRouting` — SimGrid's ``Full`` zone completed by a shortest-path search (its
``Dijkstra`` zone). Routes are declared between named nodes (hosts and routers). A symmetric
route also declares the reverse one: the link list reversed, each SPLITDUPLEX half replaced by
its twin (``l_UP`` ↔ ``l_DOWN``). A pair with no declared route gets the path of least latency
through the graph whose edges are the declared routes, ties broken by fewer hops, then by the
sequence of node names (so the choice is deterministic). ``src == dst`` without a declared
route uses the implicit loopback link (SimGrid's ``__loopback__``, FATPIPE, 10 GB/s, 0 s by
default).

SimGrid's zones (Full, Floyd, Dijkstra, Star, None), composed through gateways, are
:class:`Routing` subclasses too, in :mod:`smpy.network.zones`; the torus, fat-tree and
dragonfly clusters are in :mod:`smpy.network.topologies`. Platform files build those;
:class:`ClusterRouting` and :class:`FullRouting` remain for hand-built routings and for
smpy's host-and-link platform form. Every routing is queried with ``route(src, dst)`` only.
Nothing here knows about ranks or messages.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.support.internal import SmpyInternalError

__all__ = [
    "RoutingError",
    "Routing",
    "ClusterRouting",
    "FullRouting",
    "route_latency_s",
    "split_duplex_twins",
    "LOOPBACK_NAME",
]

#: name of SimGrid's implicit platform-wide loopback link
LOOPBACK_NAME = "__loopback__"


class RoutingError(LookupError):
    """No route between two nodes, or a routing table built inconsistently."""


def route_latency_s(links: Iterable[Link]) -> float:
    """Physical latency of a route: the sum of its links' latencies (seconds)."""
    return sum(link.latency_s for link in links)


def split_duplex_twins(links: Iterable[Link]) -> dict[Link, Link]:
    """Map each half of a SPLITDUPLEX link (``X_UP``/``X_DOWN``) to the other half."""
    halves: dict[str, Link] = {}
    for link in links:
        if link.sharing is Sharing.SPLITDUPLEX:
            halves[link.name] = link
    twins: dict[Link, Link] = {}
    for name, link in halves.items():
        if name.endswith("_UP"):
            other = halves.get(name[:-3] + "_DOWN")
            if other is not None:
                twins[link] = other
                twins[other] = link
    return twins


def _unique(links: Iterable[Link]) -> tuple[Link, ...]:
    seen: set[int] = set()
    out = []
    for link in links:
        if id(link) not in seen:
            seen.add(id(link))
            out.append(link)
    return tuple(out)


class Routing:
    """Base class: subclasses implement :meth:`_compute`; :meth:`route` caches its answers."""

    def __init__(self) -> None:
        self._routes: dict[tuple[int, int], tuple[Link, ...]] = {}
        self._latencies: dict[tuple[int, int], float] = {}

    def route(self, src: Host, dst: Host) -> tuple[Link, ...]:
        """Links crossed from ``src`` to ``dst``, in order (cached)."""
        key = (src.index, dst.index)
        try:
            return self._routes[key]
        except KeyError:
            pass
        if src.index < 0 or dst.index < 0:
            raise SmpyInternalError(f"route({src.name!r}, {dst.name!r}): host without an index; hosts "
                                    "must belong to a platform")
        links = self._routes[key] = self._compute(src, dst)
        return links

    def latency_s(self, src: Host, dst: Host) -> float:
        """Physical latency from ``src`` to ``dst``: Σ latency over :meth:`route` (cached)."""
        key = (src.index, dst.index)
        try:
            return self._latencies[key]
        except KeyError:
            latency = self._latencies[key] = route_latency_s(self.route(src, dst))
            return latency

    def clear_cache(self) -> None:
        """Forget cached routes (after a link or route is changed)."""
        self._routes.clear()
        self._latencies.clear()

    def _compute(self, src: Host, dst: Host) -> tuple[Link, ...]:
        raise NotImplementedError


class ClusterRouting(Routing):
    """SimGrid's star cluster: private link per host, optional limiters, backbone, loopbacks.

    ``private_links[i]`` is the ``(up, down)`` pair of ``hosts[i]`` (the same link twice unless
    SPLITDUPLEX); ``limiters`` and ``loopbacks``, if given, have one link per host.
    """

    def __init__(self, hosts: Sequence[Host], private_links: Sequence[tuple[Link, Link]], *,
                 backbone: Link | None = None, limiters: Sequence[Link] | None = None,
                 loopbacks: Sequence[Link] | None = None,
                 implicit_loopback: Link | None = None) -> None:
        super().__init__()
        count = len(hosts)
        for what, seq in (("private_links", private_links), ("limiters", limiters),
                          ("loopbacks", loopbacks)):
            if seq is not None and len(seq) != count:
                raise RoutingError(f"ClusterRouting: {len(seq)} {what} for {count} hosts")
        self.backbone = backbone
        self.implicit_loopback = implicit_loopback
        self._up: dict[Host, tuple[Link, ...]] = {}
        self._down: dict[Host, tuple[Link, ...]] = {}
        self._loopback: dict[Host, Link] = {}
        for i, host in enumerate(hosts):
            if host in self._up:
                raise RoutingError(f"ClusterRouting: host {host.name!r} given twice")
            up, down = private_links[i]
            limiter = limiters[i] if limiters is not None else None
            self._up[host] = tuple(link for link in (limiter, up, backbone) if link is not None)
            self._down[host] = tuple(link for link in (backbone, down, limiter) if link is not None)
            if loopbacks is not None:
                self._loopback[host] = loopbacks[i]

    def links_up(self, host: Host) -> tuple[Link, ...]:
        """Links from ``host`` to the cluster's centre (limiter, private UP, backbone)."""
        return self._up[self._member(host)]

    def links_down(self, host: Host) -> tuple[Link, ...]:
        """Links from the cluster's centre to ``host`` (backbone, private DOWN, limiter)."""
        return self._down[self._member(host)]

    def _member(self, host: Host) -> Host:
        if host not in self._up:
            raise RoutingError(f"host {host.name!r} is not in this cluster")
        return host

    def _compute(self, src: Host, dst: Host) -> tuple[Link, ...]:
        up = self._up[self._member(src)]
        down = self._down[self._member(dst)]
        if src is dst:
            loopback = self._loopback.get(src)
            if loopback is not None:
                return (loopback,)
            if self.implicit_loopback is not None:
                return (self.implicit_loopback,)
        return _unique(up + down)


class FullRouting(Routing):
    """Declared routes between named nodes, shortest paths (by latency) for the other pairs."""

    def __init__(self, nodes: Iterable[str], *, loopback: Link | None = None,
                 twins: Mapping[Link, Link] | None = None) -> None:
        super().__init__()
        self.nodes: tuple[str, ...] = tuple(nodes)
        if len(set(self.nodes)) != len(self.nodes):
            raise RoutingError("FullRouting: a node name is given twice")
        self._known = frozenset(self.nodes)
        self.loopback = loopback
        self._twins: Mapping[Link, Link] = twins if twins is not None else {}
        #: declared routes: (src name, dst name) -> links
        self._table: dict[tuple[str, str], tuple[Link, ...]] = {}
        #: routes declared by symmetry: (src, dst) -> the route they reverse
        self._reverse_of: dict[tuple[str, str], tuple[str, str]] = {}
        #: adjacency for the path search, filled from the table: src -> [(dst, links, latency)]
        self._edges: dict[str, list[tuple[str, tuple[Link, ...], float]]] = {}
        #: per source node: best path to each reachable node (filled lazily)
        self._trees: dict[str, dict[str, tuple[Link, ...]]] = {}

    def add_route(self, src: str, dst: str, links: Sequence[Link], *,
                  symmetric: bool = True) -> None:
        """Declare the route ``src → dst`` (and ``dst → src`` if ``symmetric``)."""
        for node in (src, dst):
            if node not in self._known:
                raise RoutingError(f"route {src!r} -> {dst!r}: unknown node {node!r}")
        if not links:
            raise RoutingError(f"route {src!r} -> {dst!r}: empty link list")
        entries = [(src, dst, tuple(links), None)]
        if symmetric and src != dst:
            back = tuple(self._twins.get(link, link) for link in reversed(links))
            entries.append((dst, src, back, (src, dst)))
        for entry in entries:  # check both before changing anything
            self._check_free(*entry)
        for entry in entries:
            self._declare(*entry)
        self.clear_cache()
        self._trees.clear()

    def _check_free(self, src: str, dst: str, links: tuple[Link, ...],
                    reverse_of: tuple[str, str] | None) -> None:
        if (src, dst) not in self._table:
            return
        earlier = self._reverse_of.get((src, dst))
        if earlier is not None:
            why = (f" (first as the reverse of the symmetric route {earlier[0]!r} -> "
                   f"{earlier[1]!r}; declare that one with symmetric: false)")
        elif reverse_of is not None:
            why = (f" (again as the reverse of the symmetric route {reverse_of[0]!r} -> "
                   f"{reverse_of[1]!r}; declare that one with symmetric: false)")
        else:
            why = ""
        raise RoutingError(f"route {src!r} -> {dst!r} is declared twice{why}")

    def _declare(self, src: str, dst: str, links: tuple[Link, ...],
                 reverse_of: tuple[str, str] | None) -> None:
        self._table[src, dst] = links
        if reverse_of is not None:
            self._reverse_of[src, dst] = reverse_of
        if src != dst:
            self._edges.setdefault(src, []).append((dst, links, route_latency_s(links)))

    def declared(self, src: str, dst: str) -> tuple[Link, ...] | None:
        """The route declared for ``src → dst`` (directly or by symmetry), if any."""
        return self._table.get((src, dst))

    def _compute(self, src: Host, dst: Host) -> tuple[Link, ...]:
        return self.route_between(src.name, dst.name)

    def route_between(self, src: str, dst: str) -> tuple[Link, ...]:
        """Route between two nodes (hosts or routers), by name; not cached."""
        for node in (src, dst):
            if node not in self._known:
                raise RoutingError(f"unknown node {node!r}")
        declared = self._table.get((src, dst))
        if declared is not None:
            return declared
        if src == dst:
            if self.loopback is None:
                raise RoutingError(f"no route from {src!r} to itself and no loopback link")
            return (self.loopback,)
        path = self._tree(src).get(dst)
        if path is None:
            raise RoutingError(f"no route from {src!r} to {dst!r}")
        return _unique(path)

    def reachable(self, src: str) -> frozenset[str]:
        """Nodes that a message from ``src`` can reach (``src`` included); a plain search."""
        seen = {src}
        stack = [src]
        while stack:
            for nxt, _, _ in self._edges.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    def _tree(self, src: str) -> dict[str, tuple[Link, ...]]:
        tree = self._trees.get(src)
        if tree is None:
            tree = self._trees[src] = self._shortest_paths(src)
        return tree

    def _shortest_paths(self, src: str) -> dict[str, tuple[Link, ...]]:
        """Dijkstra from ``src``; key (latency, hops, node names along the path)."""
        best: dict[str, tuple[Link, ...]] = {}
        heap: list[tuple[float, int, tuple[str, ...], tuple[Link, ...]]] = [(0.0, 0, (src,), ())]
        while heap:
            latency, hops, names, links = heapq.heappop(heap)
            node = names[-1]
            if node in best or (node == src and hops):
                continue
            best[node] = links
            for nxt, edge_links, edge_latency in self._edges.get(node, ()):
                if nxt not in best and nxt != src:
                    heapq.heappush(heap, (latency + edge_latency, hops + 1, names + (nxt,),
                                          links + edge_links))
        del best[src]
        return best
