"""Bounds on what a platform file may ask for, checked before the work they would cost.

* **Nesting**: YAML collections deeper than :data:`MAX_YAML_DEPTH` and XML elements deeper
  than :data:`MAX_XML_DEPTH` are refused (the readers and validators recurse; a real platform
  nests zones a handful of levels).
* **Aliases**: YAML aliases share one node; validation walks every path through them, so
  nine levels of nine aliases (364 bytes) stand for 9⁹ nodes. The document's *expanded*
  size ``E(n) = 1 + Σ E(child)`` (aliases counted as often as they are used, memoised per
  node) may not exceed ``max(MAX_EXPANDED, EXPANSION · distinct nodes)``: a large file written
  out by hand passes, an amplification does not. An alias to an enclosing node (a cycle) is
  refused.
* **Sizes**: a cluster or cabinet may not have more than :data:`MAX_HOSTS` hosts, a host
  more than :data:`MAX_CORES` cores, a hostfile more than :data:`MAX_SLOTS` slots; the
  memory the build needs is then compared to the machine's by :mod:`smpy.support.memory`.
"""

from __future__ import annotations

from typing import Any

from smpy.platform.errors import PlatformError

__all__ = ["MAX_YAML_DEPTH", "MAX_XML_DEPTH", "MAX_EXPANDED", "MAX_HOSTS", "MAX_SLOTS",
           "MAX_CORES", "load_yaml"]

MAX_YAML_DEPTH = 200
MAX_XML_DEPTH = 100
MAX_EXPANDED = 2_000_000
EXPANSION = 10
#: hosts of one cluster or cabinet (a host costs about 2 KB built, its links included)
MAX_HOSTS = 1_000_000
#: slots of one hostfile (one per rank; ``-np`` is then bounded by the memory check)
MAX_SLOTS = 10_000_000
#: cores of one host
MAX_CORES = 1_000_000


def load_yaml(text: str, source: str, loader_class: Any) -> Any:
    """``yaml.load`` with ``loader_class`` (a SafeLoader), refusing deep nesting, alias
    amplification and cycles before anything is constructed."""
    loader = _bounded(loader_class)(text)
    loader.smpy_source = source
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, source)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _bounded(base: Any) -> Any:
    """``base`` with a composer that counts its nesting depth."""
    cached = _BOUNDED.get(base)
    if cached is not None:
        return cached

    class Bounded(base):  # type: ignore[misc,valid-type]
        _depth = 0
        smpy_source = "<yaml>"

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    mark = self.peek_event().start_mark
                    raise PlatformError(f"{self.smpy_source}: line {mark.line + 1}, column "
                                        f"{mark.column + 1}: lists and mappings nested more "
                                        f"than {MAX_YAML_DEPTH} levels deep; refused")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    _BOUNDED[base] = Bounded
    return Bounded


_BOUNDED: dict[Any, Any] = {}


def _check_expansion(root: Any, source: str) -> None:
    """Expanded size of the node graph (iterative post-order, memoised by node identity)."""
    import yaml

    size: dict[int, int] = {}
    on_path: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node, yaml)
            size[key] = 1 + sum(size[id(c)] for c in children)
            continue
        if key in size:
            continue
        if key in on_path:
            mark = node.start_mark
            raise PlatformError(f"{source}: line {mark.line + 1}, column {mark.column + 1}: "
                                "YAML alias to an enclosing node (a recursive structure)")
        distinct += 1
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) in on_path:
                mark = child.start_mark
                raise PlatformError(f"{source}: line {mark.line + 1}, column {mark.column + 1}: "
                                    "YAML alias to an enclosing node (a recursive structure)")
            if id(child) not in size:
                stack.append((child, False))
    total = size[id(root)]
    limit = max(MAX_EXPANDED, EXPANSION * distinct)
    if total > limit:
        raise PlatformError(f"{source}: YAML aliases expand {distinct} nodes into {total} "
                            f"(more than {limit}); refused (write the repeated parts out, or "
                            "use fewer levels of aliases)")


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []
