r"""Cluster topologies: torus, fat tree and dragonfly zones, as SimGrid 3.32 builds and routes
them (``TorusZone.cpp``, ``FatTreeZone.cpp``, ``DragonflyZone.cpp``, ``ClusterZone.cpp``).

Each class is a :class:`~smpy.network.zones.Zone` (hence a
:class:`~smpy.network.routing.Routing`) holding the cluster's hosts as netpoints
``0 … n-1`` (in radical order) and creating its links with SimGrid's names. Every link has the
cluster's bandwidth and latency (dragonfly: bandwidth × number of cables), and is SHARED, or a
pair ``X_UP``/``X_DOWN`` when the cluster's policy is SPLITDUPLEX; a FATPIPE policy also gives
SHARED links, as in SimGrid. Optional per-host links come from callbacks given by the platform
builder: a *loopback* (used alone for a message from a host to itself) and a *limiter* (a link
crossed by everything a node sends or receives; fat-tree switches and dragonfly routers get
one too). Routes are deterministic: among equal paths, the one SimGrid picks.

Torus (``topo_parameters: "d0,d1,…"``)
    Node ``i`` has coordinates :math:`c_j(i) = \lfloor i / P_j \rfloor \bmod d_j` with
    :math:`P_j = \prod_{k<j} d_k`. For each dimension ``j`` it owns the link to its successor
    :math:`i + P_j` (or :math:`i - (d_j-1)P_j` when :math:`c_j(i) = d_j-1`), named
    ``<cluster>_link_from_<i>_to_<successor>``. Dimension-ordered routing: dimensions are
    corrected one after the other, from 0; in dimension ``j`` the message moves one hop at a
    time *forward* (over the current node's link, its ``UP`` half) when the target is ahead of
    the *source* by at most :math:`\lfloor d_j/2 \rfloor` or when the wrap-around is shorter
    (:math:`c_j(s) > \lfloor d_j/2 \rfloor` and
    :math:`(c_j(s) + \lfloor d_j/2 \rfloor) \bmod d_j \ge c_j(t)`), else *backward* (over the
    previous node's link, its ``DOWN`` half). With limiters, every hop is preceded by the
    current node's limiter, and the destination's limiter ends the route. Without loopback a
    host's route to itself is empty (smpy then uses the platform ``__loopback__``).

Fat tree (``topo_parameters: "L;m1,…,mL;w1,…,wL;p1,…,pL"``)
    ``L`` levels of switches above :math:`N = \prod_l m_l` hosts (level 0). A node at level
    ``l`` has :math:`m_{l+1}` children (down ports) and :math:`w_{l+1}` parents, joined to each
    by :math:`p_{l+1}` parallel cables. Level ``l ≥ 1`` holds
    :math:`\prod_{k\le l} w_k \prod_{k>l} m_k` switches. Labels: node ``j`` of level ``l``
    gets the mixed-radix digits of ``j`` (digit ``k`` in base :math:`m_{k+1}` for ``k ≥ l``,
    :math:`w_{k+1}` for ``k < l``, least significant first); a switch is the parent of a node
    one level down when their labels agree on every digit but digit ``l-1``. Hosts have ids
    ``0…N-1``; switches get ids counting down from ``2N-1`` (level by level, position by
    position); the cable ``c`` between child ``x`` and parent ``y`` is the link
    ``link_from_<x>_<y>_<c>`` where ``c`` counts every fat-tree cable created so far in the
    platform (a counter SimGrid keeps across clusters, like the host positions). Routing is
    d-mod-k: going up from level ``l``, take the parent port
    :math:`\lfloor \mathrm{pos}(t) / \prod_{k\le l} w_k \rfloor \bmod (w_{l+1} p_{l+1})` until
    the current switch's subtree holds the target; going down, take the first cable (from the
    port block :math:`\mathrm{pos}(s) \bmod p` on) whose child label matches the target's —
    with SimGrid's exact loop, which keeps scanning ports after stepping down a level.

Dragonfly (``topo_parameters: "G,b;C,k;R,g;n"``)
    ``G`` groups of ``C`` chassis of ``R`` routers (blades) of ``n`` hosts: host ``i`` has
    coordinates (group, chassis, blade, node) in mixed radix. Each router has one local link
    per host (``local_link_from_router_<r>_to_node_<n>_<u>``), green links to the other routers
    of its chassis (``g`` cables), black links to the same blade of the other chassis of its
    group (``k`` cables), and router ``j`` of group ``i`` a blue link to group ``j``
    (``b`` cables); ``u`` is a counter over every dragonfly link of the platform. Minimal
    routing: to another group, go (green) to the blade numbered after the target group, then
    (black) to chassis 0, cross the blue link, then (green, black) to the target router;
    routers' limiters are crossed when leaving them. SimGrid's routine is followed literally,
    including its assumption that, after a green hop, the message is in chassis 0. It needs
    ``G ≤ R`` (checked here; SimGrid reads out of bounds otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from smpy.cpu.host import Host
from smpy.network.links import Link, Sharing
from smpy.network.routing import RoutingError
from smpy.network.zones import HOST, LocalRoute, NetPoint, Zone
from smpy.support.internal import SmpyInternalError

__all__ = [
    "ClusterLinks",
    "TopologyCounters",
    "TorusZone",
    "FatTreeZone",
    "DragonflyZone",
    "parse_torus",
    "parse_fat_tree",
    "parse_dragonfly",
    "FatTreeParams",
    "DragonflyParams",
]


class TopologyError(ValueError):
    """Bad topology parameters (the message says what was expected)."""


@dataclass
class TopologyCounters:
    """Counters SimGrid keeps as C++ statics, shared by every cluster of one platform."""

    fat_tree_position: int = 0
    fat_tree_link: int = 0
    dragonfly_link: int = 0


@dataclass
class ClusterLinks:
    """What a topology zone needs to make its links.

    ``loopback(i)`` and ``limiter(i)`` make host ``i``'s optional links (``i`` = position in
    the cluster); ``limiter`` is also called with SimGrid's switch/router ids. Every link made,
    by the zone or by the callbacks, is appended to ``zone.links`` in SimGrid's creation order.
    """

    bandwidth_Bps: float
    latency_s: float
    sharing: Sharing = Sharing.SPLITDUPLEX
    loopback: Callable[[int], Link] | None = None
    limiter: Callable[[int], Link] | None = None


class _ClusterBase(Zone):
    """Hosts with optional loopback and limiter links, and link creation (``ClusterBase``)."""

    def __init__(self, name: str, hosts: Sequence[Host], spec: ClusterLinks,
                 count: int) -> None:
        super().__init__(name)
        if len(hosts) != count:
            raise TopologyError(f"the topology has {count} hosts, {len(hosts)} were given")
        self.spec = spec
        self.links: list[Link] = []
        self.node_loopback: list[Link | None] = []
        self.node_limiter: list[Link | None] = []

    def _leaf(self, host: Host, position: int) -> NetPoint:
        point = self.add_host(host)
        loopback = limiter = None
        if self.spec.loopback is not None:
            loopback = self.spec.loopback(position)
            self.links.append(loopback)
        if self.spec.limiter is not None:
            limiter = self.spec.limiter(position)
            self.links.append(limiter)
        self.node_loopback.append(loopback)
        self.node_limiter.append(limiter)
        return point

    def _extra_limiter(self, ident: int) -> Link | None:
        if self.spec.limiter is None:
            return None
        limiter = self.spec.limiter(ident)
        self.links.append(limiter)
        return limiter

    def _make(self, name: str, cables: int = 1) -> tuple[Link, Link]:
        """One cable bundle: ``(up, down)``, the same link twice unless SPLITDUPLEX."""
        bandwidth = self.spec.bandwidth_Bps * cables
        latency = self.spec.latency_s
        if self.spec.sharing is Sharing.SPLITDUPLEX:
            up = Link(f"{name}_UP", bandwidth, latency, Sharing.SPLITDUPLEX)
            down = Link(f"{name}_DOWN", bandwidth, latency, Sharing.SPLITDUPLEX)
            self.links += [up, down]
            return up, down
        link = Link(name, bandwidth, latency, Sharing.SHARED)
        self.links.append(link)
        return link, link

    @property
    def has_loopback(self) -> bool:
        return self.spec.loopback is not None

    @property
    def has_limiter(self) -> bool:
        return self.spec.limiter is not None

    def _self_loopback(self, src: NetPoint, dst: NetPoint) -> LocalRoute | None:
        if src is dst and self.has_loopback:
            loopback = self.node_loopback[src.id]
            assert loopback is not None
            return (loopback,), None, None
        return None


# ------------------------------------------------------------------------------- torus

def parse_torus(text: str) -> tuple[int, ...]:
    """``"3,2,2"`` → ``(3, 2, 2)``."""
    parts = [part.strip() for part in str(text).split(",")]
    try:
        dims = tuple(int(part) for part in parts)
    except ValueError:
        raise TopologyError(f"expected torus dimensions like '3,2,2', found {text!r}") from None
    if not dims or any(d <= 0 for d in dims):
        raise TopologyError(f"expected torus dimensions like '3,2,2' (each 1 or more), found "
                            f"{text!r}")
    return dims


class TorusZone(_ClusterBase):
    """SimGrid's TorusZone (dimension-ordered routing, see the module docstring)."""

    kind = "TORUS"

    def __init__(self, name: str, hosts: Sequence[Host], dimensions: Sequence[int],
                 spec: ClusterLinks) -> None:
        self.dimensions = tuple(dimensions)
        count = math.prod(self.dimensions)
        super().__init__(name, hosts, spec, count)
        #: per node, per dimension: (up, down) of its link to its successor
        self._dim_links: list[list[tuple[Link, Link]]] = []
        for i, host in enumerate(hosts):
            self._leaf(host, i)
            own = []
            product = 1
            for dim in self.dimensions:
                if (i // product) % dim == dim - 1:
                    neighbour = i - (dim - 1) * product
                else:
                    neighbour = i + product
                own.append(self._make(f"{name}_link_from_{i}_to_{neighbour}"))
                product *= dim
            self._dim_links.append(own)

    def uses_platform_loopback(self) -> bool:
        return bool(self.vertices) and not self.has_loopback and not self.has_limiter

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        if src.kind != HOST or dst.kind != HOST:
            return (), None, None
        own = self._self_loopback(src, dst)
        if own is not None:
            return own
        dims = self.dimensions
        target = dst.id
        mine = []
        theirs = []
        product = 1
        for dim in dims:
            mine.append((src.id // product) % dim)
            theirs.append((target // product) % dim)
            product *= dim
        limiters = self.node_limiter if self.has_limiter else None
        links: list[Link] = []
        current = src.id
        steps = 0
        while current != target:
            steps += 1
            if steps > len(self.vertices) * len(dims) + 1:
                raise SmpyInternalError(f"torus {self.name!r}: no route from {src.name!r} to {dst.name!r}")
            product = 1
            for j, dim in enumerate(dims):
                here = (current // product) % dim
                if here != (target // product) % dim:
                    half = dim // 2
                    if ((mine[j] < theirs[j] <= mine[j] + half)
                            or (mine[j] > half and (mine[j] + half) % dim >= theirs[j])):
                        nxt = current + product - product * dim if here == dim - 1 \
                            else current + product
                        link = self._dim_links[current][j][0]
                    else:
                        nxt = current - product + product * dim if here == 0 \
                            else current - product
                        link = self._dim_links[nxt][j][1]
                    break
                product *= dim
            if limiters is not None:
                links.append(limiters[current])  # type: ignore[arg-type]
            links.append(link)
            current = nxt
        if limiters is not None:
            links.append(limiters[target])  # type: ignore[arg-type]
        return tuple(links), None, None


# ---------------------------------------------------------------------------- fat tree

@dataclass(frozen=True)
class FatTreeParams:
    levels: int
    down: tuple[int, ...]
    up: tuple[int, ...]
    count: tuple[int, ...]

    @property
    def hosts(self) -> int:
        return math.prod(self.down)


def parse_fat_tree(text: str) -> FatTreeParams:
    """``"2;4,4;1,2;1,2"`` → levels, children per level, parents per level, cables per level."""
    hint = ("expected fat-tree parameters 'levels;down,...;up,...;cables,...' like "
            f"'2;4,4;1,2;1,2', found {text!r}")
    parts = str(text).split(";")
    if len(parts) != 4:
        raise TopologyError(hint)
    try:
        levels = int(parts[0])
        vectors = [tuple(int(item) for item in part.split(",")) for part in parts[1:]]
    except ValueError:
        raise TopologyError(hint) from None
    if levels <= 0:
        raise TopologyError(f"{hint} (the number of levels must be 1 or more)")
    for what, vector in zip(("down", "up", "cable"), vectors):
        if len(vector) != levels:
            raise TopologyError(f"{hint} (the {what} vector has {len(vector)} values for "
                                f"{levels} levels)")
        if any(v <= 0 for v in vector):
            raise TopologyError(f"{hint} (every {what} count must be 1 or more)")
    return FatTreeParams(levels, *vectors)


class _FTNode:
    __slots__ = ("id", "level", "position", "label", "children", "parents", "limiter",
                 "loopback")

    def __init__(self, ident: int, level: int, position: int, limiter: Link | None,
                 loopback: Link | None, levels: int) -> None:
        self.id = ident
        self.level = level
        self.position = position
        self.label = [0] * levels
        self.children: list[_FTLink | None] = []
        self.parents: list[_FTLink | None] = []
        self.limiter = limiter
        self.loopback = loopback


class _FTLink:
    __slots__ = ("up_node", "down_node", "up_link", "down_link")

    def __init__(self, child: _FTNode, parent: _FTNode, up: Link, down: Link) -> None:
        self.up_node = parent
        self.down_node = child
        self.up_link = up
        self.down_link = down


class FatTreeZone(_ClusterBase):
    """SimGrid's FatTreeZone (d-mod-k routing, see the module docstring)."""

    kind = "FAT_TREE"

    def __init__(self, name: str, hosts: Sequence[Host], params: FatTreeParams,
                 spec: ClusterLinks, counters: TopologyCounters | None = None) -> None:
        super().__init__(name, hosts, spec, params.hosts)
        self.params = params
        self.counters = counters if counters is not None else TopologyCounters()
        levels = params.levels
        self._nodes: list[_FTNode] = []
        self._leaves: list[_FTNode] = []
        for i, host in enumerate(hosts):
            self._leaf(host, i)
            node = _FTNode(i, 0, self.counters.fat_tree_position, self.node_limiter[i],
                           self.node_loopback[i], levels)
            self.counters.fat_tree_position += 1
            node.parents = [None] * (params.up[0] * params.count[0])
            self._leaves.append(node)
            self._nodes.append(node)
        self._by_level = self._switches()
        self._labels()
        k = 0
        for level in range(levels):
            for _ in range(self._by_level[level]):
                self._connect_to_parents(self._nodes[k])
                k += 1

    def _switches(self) -> list[int]:
        p = self.params
        by_level = [len(self._nodes)] + [0] * p.levels
        for i in range(p.levels):
            by_level[i + 1] = math.prod(p.up[: i + 1]) * math.prod(p.down[i + 1:])
        k = 2 * len(self._nodes)
        for i in range(p.levels):
            for j in range(by_level[i + 1]):
                k -= 1
                switch = _FTNode(k, i + 1, j, self._extra_limiter(k), None, p.levels)
                switch.children = [None] * (p.down[i] * p.count[i])
                if i != p.levels - 1:
                    switch.parents = [None] * (p.up[i + 1] * p.count[i + 1])
                self._nodes.append(switch)
        return by_level

    def _labels(self) -> None:
        p = self.params
        k = 0
        for i in range(p.levels + 1):
            current = [0] * p.levels
            maximum = [p.down[j] if j + 1 > i else p.up[j] for j in range(p.levels)]
            for _ in range(self._by_level[i]):
                self._nodes[k].label = list(current)
                pos = 0
                while pos < p.levels:
                    current[pos] += 1
                    if current[pos] >= maximum[pos]:
                        current[pos] = 0
                        pos += 1
                    else:
                        break
                k += 1

    def _connect_to_parents(self, node: _FTNode) -> None:
        p = self.params
        level = node.level
        start = sum(self._by_level[: level + 1])
        for i in range(self._by_level[level + 1]):
            parent = self._nodes[start + i]
            if self._related(parent, node):
                for j in range(p.count[level]):
                    self._add_link(parent, node.label[level] + j * p.down[level], node,
                                   parent.label[level] + j * p.up[level])

    def _related(self, parent: _FTNode, child: _FTNode) -> bool:
        if parent.level != child.level + 1:
            return False
        return all(parent.label[i] == child.label[i] or i + 1 == parent.level
                   for i in range(self.params.levels))

    def _add_link(self, parent: _FTNode, parent_port: int, child: _FTNode,
                  child_port: int) -> None:
        ident = f"link_from_{child.id}_{parent.id}_{self.counters.fat_tree_link}"
        up, down = self._make(ident)
        self.counters.fat_tree_link += 1
        link = _FTLink(child, parent, up, down)
        parent.children[parent_port] = link
        child.parents[child_port] = link

    def _in_subtree(self, root: _FTNode, node: _FTNode) -> bool:
        if root.level <= node.level:
            return False
        for i in range(node.level):
            if root.label[i] != node.label[i]:
                return False
        for i in range(root.level, self.params.levels):
            if root.label[i] != node.label[i]:
                return False
        return True

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        if src.kind != HOST or dst.kind != HOST:
            return (), None, None
        source = self._leaves[src.id]
        target = self._leaves[dst.id]
        if source is target and self.has_loopback:
            assert source.loopback is not None
            return (source.loopback,), None, None
        p = self.params
        links: list[Link] = []
        current = source
        while not self._in_subtree(current, target):
            d = target.position
            for i in range(current.level):
                d //= p.up[i]
            d %= p.up[current.level] * p.count[current.level]
            if current.limiter is not None:
                links.append(current.limiter)
            cable = current.parents[d]
            assert cable is not None
            links.append(cable.up_link)
            current = cable.up_node
        guard = 0
        while current is not target:
            guard += 1
            if guard > len(self._nodes):
                raise SmpyInternalError(f"fat tree {self.name!r}: no route from {src.name!r} to {dst.name!r}")
            # SimGrid's loop: `current` changes inside it, its bounds are re-read each turn
            i = (source.position % p.count[current.level - 1]) * p.down[current.level - 1]
            while i < len(current.children):
                if i % p.down[current.level - 1] == target.label[current.level - 1]:
                    cable = current.children[i]
                    assert cable is not None
                    links.append(cable.down_link)
                    if current.limiter is not None:
                        links.append(current.limiter)
                    current = cable.down_node
                i += 1
        if current.limiter is not None:
            links.append(current.limiter)
        return tuple(links), None, None


# --------------------------------------------------------------------------- dragonfly

@dataclass(frozen=True)
class DragonflyParams:
    groups: int
    blue: int
    chassis: int
    black: int
    routers: int
    green: int
    nodes: int

    @property
    def hosts(self) -> int:
        return self.groups * self.chassis * self.routers * self.nodes


def parse_dragonfly(text: str) -> DragonflyParams:
    """``"3,4;4,3;5,1;2"`` → groups, blue cables; chassis, black; routers, green; nodes."""
    hint = ("expected dragonfly parameters 'groups,cables;chassis,cables;routers,cables;nodes' "
            f"like '3,4;4,3;5,1;2', found {text!r}")
    parts = str(text).split(";")
    if len(parts) != 4:
        raise TopologyError(hint)
    try:
        pairs = [tuple(int(item) for item in part.split(",")) for part in parts[:3]]
        nodes = int(parts[3])
    except ValueError:
        raise TopologyError(hint) from None
    if any(len(pair) != 2 for pair in pairs):
        raise TopologyError(hint)
    values = [v for pair in pairs for v in pair] + [nodes]
    if any(v <= 0 for v in values):
        raise TopologyError(f"{hint} (every number must be 1 or more)")
    params = DragonflyParams(*values)
    if params.groups > params.routers:
        raise TopologyError(f"{hint}: SimGrid's dragonfly routing needs at least as many "
                            f"routers per chassis as groups ({params.routers} < "
                            f"{params.groups})")
    return params


class _Router:
    __slots__ = ("group", "chassis", "blade", "limiter", "nodes", "green", "black", "blue")

    def __init__(self, group: int, chassis: int, blade: int, limiter: Link | None) -> None:
        self.group = group
        self.chassis = chassis
        self.blade = blade
        self.limiter = limiter
        self.nodes: list[Link] = []
        self.green: list[Link | None] = []
        self.black: list[Link | None] = []
        self.blue: Link | None = None


class DragonflyZone(_ClusterBase):
    """SimGrid's DragonflyZone (minimal routing, see the module docstring)."""

    kind = "DRAGONFLY"

    def __init__(self, name: str, hosts: Sequence[Host], params: DragonflyParams,
                 spec: ClusterLinks, counters: TopologyCounters | None = None) -> None:
        super().__init__(name, hosts, spec, params.hosts)
        self.params = params
        self.counters = counters if counters is not None else TopologyCounters()
        for i, host in enumerate(hosts):
            self._leaf(host, i)
        p = params
        ident = 2 * p.hosts
        self._routers: list[_Router] = []
        for g in range(p.groups):
            for c in range(p.chassis):
                for b in range(p.routers):
                    limiter = None
                    if self.has_limiter:
                        ident -= 1
                        limiter = self._extra_limiter(ident)
                    self._routers.append(_Router(g, c, b, limiter))
        self._cables_per_link = 2 if spec.sharing is Sharing.SPLITDUPLEX else 1
        self._generate_links()

    def _next(self) -> int:
        value = self.counters.dragonfly_link
        self.counters.dragonfly_link += 1
        return value

    def _generate_links(self) -> None:
        p = self.params
        routers = self._routers
        per_group = p.chassis * p.routers
        for i, router in enumerate(routers):
            router.green = [None] * p.routers
            router.black = [None] * p.chassis
            for node in range(p.nodes):
                up, down = self._make(f"local_link_from_router_{i}_to_node_{node}_"
                                      f"{self._next()}")
                router.nodes.append(up)
                if self._cables_per_link == 2:
                    router.nodes.append(down)
        for i in range(p.groups * p.chassis):
            for j in range(p.routers):
                for k in range(j + 1, p.routers):
                    up, down = self._make(f"green_link_in_chassis_{i % p.chassis}_between_"
                                          f"routers_{j}_and_{k}_{self._next()}", p.green)
                    routers[i * p.routers + j].green[k] = up
                    routers[i * p.routers + k].green[j] = down
        for i in range(p.groups):
            for j in range(p.chassis):
                for k in range(j + 1, p.chassis):
                    for blade in range(p.routers):
                        up, down = self._make(f"black_link_in_group_{i}_between_chassis_{j}_"
                                              f"and_{k}_blade_{blade}_{self._next()}", p.black)
                        routers[i * per_group + j * p.routers + blade].black[k] = up
                        routers[i * per_group + k * p.routers + blade].black[j] = down
        for i in range(p.groups):
            for j in range(i + 1, p.groups):
                first = i * per_group + j
                second = j * per_group + i
                up, down = self._make(f"blue_link_between_group_{i}_and_{j}_routers_{first}_"
                                      f"and_{second}_{self._next()}", p.blue)
                routers[first].blue = up
                routers[second].blue = down

    def _coords(self, rank: int) -> tuple[int, int, int, int]:
        p = self.params
        group, rank = divmod(rank, p.chassis * p.routers * p.nodes)
        chassis, rank = divmod(rank, p.routers * p.nodes)
        blade, node = divmod(rank, p.nodes)
        return group, chassis, blade, node

    def local_route(self, src: NetPoint, dst: NetPoint) -> LocalRoute:
        if src.kind != HOST or dst.kind != HOST:
            return (), None, None
        own = self._self_loopback(src, dst)
        if own is not None:
            return own
        p = self.params
        per_group = p.chassis * p.routers
        cables = self._cables_per_link
        my_g, my_c, my_b, my_n = self._coords(src.id)
        t_g, t_c, t_b, t_n = self._coords(dst.id)
        routers = self._routers
        mine = routers[my_g * per_group + my_c * p.routers + my_b]
        target = routers[t_g * per_group + t_c * p.routers + t_b]
        current = mine
        links: list[Link] = []

        def hop(link: Link | None) -> None:
            if link is None:
                raise RoutingError(f"dragonfly {self.name!r}: no route from {src.name!r} to "
                                   f"{dst.name!r} (missing link)")
            links.append(link)

        if self.has_limiter:
            hop(self.node_limiter[src.id])
        hop(mine.nodes[my_n * cables])
        if target is not mine:
            if target.group != current.group:
                if current.blade != t_g:
                    if current.limiter is not None:
                        links.append(current.limiter)
                    hop(current.green[t_g])
                    current = routers[my_g * per_group + my_c * p.routers + t_g]
                if current.chassis != 0:
                    if current.limiter is not None:
                        links.append(current.limiter)
                    hop(current.black[0])
                    current = routers[my_g * per_group + t_g]
                hop(current.blue)
                if current.limiter is not None:
                    links.append(current.limiter)
                current = routers[t_g * per_group + my_g]
            if target.blade != current.blade:
                if current.limiter is not None:
                    links.append(current.limiter)
                hop(current.green[t_b])
                current = routers[t_g * per_group + t_b]
            if target.chassis != current.chassis:
                if current.limiter is not None:
                    links.append(current.limiter)
                hop(current.black[t_c])
        if target.limiter is not None:
            links.append(target.limiter)
        hop(target.nodes[t_n * cables + cables - 1])
        if self.has_limiter:
            hop(self.node_limiter[dst.id])
        return tuple(links), None, None
