"""Platforms: the simulated machine, read from YAML or SimGrid XML (``docs/platforms.md``).

``load_platform(path)`` / ``default_platform()`` give a :class:`Platform` (hosts, links,
routing, root ``zone``, ``config`` defaults); ``xml_to_yaml`` converts a SimGrid platform
file; ``parse_hostfile`` and ``place_ranks`` map MPI ranks to hosts.
"""

from typing import Any

from smpy.platform.errors import PlatformError
from smpy.platform.hostfile import parse_hostfile, parse_hostfile_text, place_ranks
from smpy.platform.loader import (
    DEFAULT_PLATFORM_SOURCE,
    Platform,
    build_platform,
    default_platform,
    load_platform,
    load_platform_data,
)


def __getattr__(name: str) -> Any:
    """The schema (pydantic) and the XML converter are imported on first use only."""
    if name in ("PlatformSpec", "validate_spec"):
        from smpy.platform import schema
        return getattr(schema, name)
    if name == "xml_to_yaml":
        from smpy.platform.convert import xml_to_yaml
        return xml_to_yaml
    raise AttributeError(f"module 'smpy.platform' has no attribute {name!r}")

__all__ = [
    "DEFAULT_PLATFORM_SOURCE",
    "Platform",
    "PlatformError",
    "PlatformSpec",
    "build_platform",
    "default_platform",
    "load_platform",
    "load_platform_data",
    "parse_hostfile",
    "parse_hostfile_text",
    "place_ranks",
    "validate_spec",
    "xml_to_yaml",
]
