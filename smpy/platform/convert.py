"""SimGrid XML → smpy YAML, and comparison of two loaded platforms.

:func:`xml_to_yaml` writes the YAML equivalent of a SimGrid platform file: the data read by
:mod:`smpy.platform.xml` (the very data the loader builds an XML platform from), dumped with
small items (hosts, links, routes) on one line each. Loading the YAML gives the same hosts,
links and routes as loading the XML; :func:`compare_platforms` checks it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from smpy.network.routing import RoutingError
from smpy.platform.schema import PlatformError
from smpy.platform.xml import read_xml

if TYPE_CHECKING:
    from smpy.cpu.host import Host
    from smpy.platform.loader import Platform

__all__ = ["xml_to_yaml", "dump_yaml", "compare_platforms"]


class _Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line."""


class _FlowList(list):  # type: ignore[type-arg]
    """A list written on one line."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data.items(),
                                                         flow_style=True))
_Dumper.add_representer(
    _FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data,
                                                              flow_style=True))

#: mappings with more keys than this stay in block style even when flat
_FLOW_KEYS = 7


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _flat(value: Any) -> bool:
    if _scalar(value):
        return True
    if isinstance(value, list):
        return all(_scalar(item) for item in value)
    if isinstance(value, dict):
        return all(_scalar(item) for item in value.values())
    return False


def _styled(data: Any, in_list: bool = False) -> Any:
    if isinstance(data, dict):
        if in_list and len(data) <= _FLOW_KEYS and all(_flat(v) for v in data.values()):
            return _Flow({key: _styled_leaf(value) for key, value in data.items()})
        return {key: _styled(value) for key, value in data.items()}
    if isinstance(data, list):
        if data and all(_scalar(item) for item in data):
            return _FlowList(data)
        return [_styled(item, in_list=True) for item in data]
    return data


def _styled_leaf(value: Any) -> Any:
    if isinstance(value, list):
        return _FlowList(value)
    if isinstance(value, dict):
        return _Flow(value)
    return value


def dump_yaml(data: dict[str, Any], header: str = "") -> str:
    """YAML text of platform data, small items on one line each."""
    body = yaml.dump(_styled(data), Dumper=_Dumper, sort_keys=False, width=100,
                     allow_unicode=True, default_flow_style=False)
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    return ("\n".join(lines) + "\n" if lines else "") + body


def xml_to_yaml(source: str | os.PathLike[str], target: str | os.PathLike[str] | None = None
                ) -> str:
    """Convert the SimGrid XML platform ``source``; write it to ``target`` if given.

    Returns the YAML text. Errors (unreadable file, unsupported element) are
    :class:`~smpy.platform.schema.PlatformError`; the XML is also validated, so that a
    conversion never writes a platform that does not load.
    """
    from smpy.platform.loader import load_platform_data

    path = os.fspath(source)
    imported = read_xml(path)
    load_platform_data(imported.data, path, default_name=Path(path).stem,
                       locate=imported.locate)
    data = dict(imported.data)
    if "name" not in data:
        data = {"name": Path(path).stem, **data}
    header = (f"Converted from {Path(path).name} (SimGrid platform XML) by "
              "`smpy platform convert`.\nFormat: docs/platforms.md.")
    text = dump_yaml(data, header)
    if target is not None:
        try:
            Path(target).write_text(text, encoding="utf-8")
        except OSError as err:
            raise PlatformError(f"{os.fspath(target)}: cannot write the YAML file: "
                                f"{err.strerror}") from None
    return text


def _route_names(platform: Platform, src: Host, dst: Host) -> list[str]:
    try:
        return [link.name for link in platform.route(src, dst)]
    except RoutingError as err:
        return [f"<error: {err}>"]


def compare_platforms(first: Platform, second: Platform, *, max_pairs: int | None = None
                      ) -> list[str]:
    """Differences between two platforms: hosts (name, cores, speeds, pstate, properties,
    memory bandwidths),
    links (name, bandwidth, latency, sharing, properties) and the route of every host pair
    (or of the first ``max_pairs`` pairs). An empty list means identical."""
    problems: list[str] = []

    def host_key(platform: Platform) -> list[tuple[Any, ...]]:
        return [(h.name, h.cores, tuple(h.speeds_flops), h.pstate, sorted(h.properties.items()),
                 h.memory_bandwidth, h.core_memory_bandwidth) for h in platform.hosts]

    def link_key(platform: Platform) -> list[tuple[Any, ...]]:
        return [(link.name, link.bandwidth_Bps, link.latency_s, link.sharing.value,
                 sorted(link.properties.items())) for link in platform.links]

    for what, key in (("hosts", host_key), ("links", link_key)):
        a, b = key(first), key(second)
        if a != b:
            only = [item[0] for item in a if item not in b][:5]
            other = [item[0] for item in b if item not in a][:5]
            problems.append(f"{what} differ (first only: {only}, second only: {other})")
    if problems:
        return problems
    pairs = 0
    for src_a, src_b in zip(first.hosts, second.hosts):
        for dst_a, dst_b in zip(first.hosts, second.hosts):
            if max_pairs is not None and pairs >= max_pairs:
                return problems
            pairs += 1
            route_a = _route_names(first, src_a, dst_a)
            route_b = _route_names(second, src_b, dst_b)
            if route_a != route_b:
                problems.append(f"route {src_a.name} -> {dst_a.name}: {route_a} != {route_b}")
                if len(problems) >= 10:
                    return problems
    return problems
