"""``smpy platform``: convert, inspect and query platform files.

    smpy platform convert cluster.xml cluster.yaml   # SimGrid XML -> smpy YAML (- for stdout)
    smpy platform convert --check cluster.xml cluster.yaml   # ... and compare every route
    smpy platform show cluster.yaml                  # hosts, links, zones
    smpy platform route cluster.xml node-0 node-5    # links from one host to another

Platform errors are printed as ``smpy platform: <file>: <where>: <problem>`` (exit status 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from smpy.network.routing import RoutingError
from smpy.network.zones import Zone
from smpy.platform import Platform, PlatformError, load_platform
from smpy.support.units import format_bandwidth, format_byte_rate, format_speed, format_time

__all__ = ["main", "build_parser"]


def build_parser(prog: str = "smpy platform") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Convert and inspect platform files "
                                     "(smpy YAML, SimGrid XML).", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    convert = commands.add_parser("convert", help="write the YAML equivalent of a SimGrid XML "
                                  "platform", description="Write the YAML equivalent of a "
                                  "SimGrid XML platform (version 4 or 4.1).")
    convert.add_argument("source", help="SimGrid platform file (.xml)")
    convert.add_argument("target", help="YAML file to write, or - for standard output")
    convert.add_argument("--check", action="store_true", help="load both files and check that "
                         "their hosts, links and routes (every host pair) are identical")
    show = commands.add_parser("show", help="summarise a platform (hosts, links, zones)")
    show.add_argument("platform", help="platform file (.yaml or .xml)")
    commands.add_parser("list", help="the platforms bundled with smpy (--platform NAME finds them)")
    route = commands.add_parser("route", help="print the links from one host to another")
    route.add_argument("platform", help="platform file (.yaml or .xml)")
    route.add_argument("src", help="source host")
    route.add_argument("dst", help="destination host")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "smpy platform") -> int:
    """Entry point: ``main(["convert", "in.xml", "out.yaml"])``; returns the exit status."""
    args = build_parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "convert":
            return _convert(args.source, args.target, check=args.check, prog=prog)
        if args.command == "list":
            print(_bundled_list())
            return 0
        if args.command == "show":
            print(_summary(load_platform(args.platform)))
            return 0
        return _route(args.platform, args.src, args.dst)
    except PlatformError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1


def _bundled_list() -> str:
    from smpy.platform.bundled import bundled_platforms, describe

    lines = []
    for name, path in bundled_platforms().items():
        platform = load_platform(path)
        lines.append(f"{name:16s} {len(platform.hosts):5d} hosts  {describe(path)}")
    lines.append("(--platform NAME uses one; the file, with the source of every number: "
                 "smpy/platform/data/NAME.yaml)")
    return "\n".join(lines)


def _convert(source: str, target: str, *, check: bool, prog: str) -> int:
    from smpy.platform.convert import compare_platforms, xml_to_yaml

    if not source.lower().endswith(".xml"):
        raise PlatformError(f"{source}: expected a SimGrid XML platform (a .xml file)")
    text = xml_to_yaml(source, None if target == "-" else target)
    if target == "-":
        sys.stdout.write(text)
    if check:
        import yaml

        from smpy.platform.loader import load_platform_data

        original = load_platform(source)
        converted = load_platform_data(yaml.safe_load(text), target,
                                       default_name=original.name)
        problems = compare_platforms(original, converted)
        if problems:
            for problem in problems:
                print(f"{prog}: check: {problem}", file=sys.stderr)
            return 1
        print(f"{prog}: check: {len(original.hosts)} hosts, {len(original.links)} links and "
              f"{len(original.hosts) ** 2} routes identical", file=sys.stderr)
    return 0


def _route(path: str, src: str, dst: str) -> int:
    platform = load_platform(path)
    source, target = platform.host(src), platform.host(dst)
    try:
        links = platform.route(source, target)
    except RoutingError as err:
        raise PlatformError(f"{path}: {err}") from None
    latency = sum(link.latency_s for link in links)
    print(f"{src} -> {dst}: {len(links)} links, latency {format_time(latency)}")
    for link in links:
        print(f"  {link.name:40s} {format_bandwidth(link.bandwidth_Bps):>12s} "
              f"{format_time(link.latency_s):>10s}  {link.sharing.value}")
    return 0


def host_names(names: list[str], limit: int = 40) -> str:
    """The names in order, runs of numbered names compressed: ``node-[0-63], gw``."""
    import re

    parts: list[str] = []
    run: tuple[str, str, int, int] | None = None  # prefix, suffix, first, last

    def flush() -> None:
        if run is not None:
            pre, suf, a, b = run
            parts.append(f"{pre}{a}{suf}" if a == b else f"{pre}[{a}-{b}]{suf}")

    for name in names:
        m = re.fullmatch(r"(.*?)(0|[1-9][0-9]*)(\D*)", name)
        if m is None:
            flush()
            run = None
            parts.append(name)
            continue
        pre, num, suf = m.group(1), int(m.group(2)), m.group(3)
        if run is not None and run[0] == pre and run[1] == suf and run[3] + 1 == num:
            run = (pre, suf, run[2], num)
            continue
        flush()
        run = (pre, suf, num, num)
    flush()
    text = ", ".join(parts[:limit])
    return text + (f", ... ({len(parts) - limit} more groups)" if len(parts) > limit else "")


def _summary(platform: Platform) -> str:
    lines = [f"platform {platform.name!r} ({platform.source}): {len(platform.hosts)} hosts, "
             f"{len(platform.links)} links"]
    if platform.config:
        lines.append("config: " + ", ".join(f"{k}={v}" for k, v in platform.config.items()))
    kinds: dict[tuple, list] = {}  # hosts alike -> [count, one of them]
    for host in platform.hosts:
        kind = (host.cores, host.speed_flops, host.memory_bandwidth, host.core_memory_bandwidth)
        kinds.setdefault(kind, [0, host])[0] += 1
    for count, host in kinds.values():
        text = f"hosts: {count} x {host.cores} cores at {format_speed(host.speed_flops)}"
        if host.memory_bandwidth != float("inf"):
            text += (f", memory {format_byte_rate(host.memory_bandwidth)} "
                     f"({format_byte_rate(host.core_memory_bandwidth)} per core alone; "
                     f"sigma({host.cores}) = {host.memory_contention(host.cores):.3g})")
        lines.append(text)
    lines.append(f"host names: {host_names([h.name for h in platform.hosts])}")
    if platform.zone is not None:
        lines.append("zones:")
        _zone_lines(platform.zone, 1, lines)
    else:
        lines.append("routing: declared routes, least-latency paths between the others")
    return "\n".join(lines)


def _zone_lines(zone: Zone, depth: int, lines: list[str]) -> None:
    hosts = sum(1 for point in zone.vertices if point.host is not None)
    routers = sum(1 for point in zone.vertices if point.kind == "router")
    parts = [f"{hosts} hosts"] + ([f"{routers} routers"] if routers else [])
    lines.append(f"{'  ' * depth}{zone.name} ({zone.kind}): {', '.join(parts)}")
    for child in zone.children:
        _zone_lines(child, depth + 1, lines)
