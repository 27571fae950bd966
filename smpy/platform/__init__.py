"""Platforms: the simulated machine, read from YAML (format in :mod:`smpy.platform.schema`).

``load_platform(path)`` / ``default_platform()`` give a :class:`Platform` (hosts, links,
routing, ``config`` defaults); ``parse_hostfile`` and ``place_ranks`` map MPI ranks to hosts.
"""

from smpy.platform.hostfile import parse_hostfile, parse_hostfile_text, place_ranks
from smpy.platform.loader import (
    DEFAULT_PLATFORM_SOURCE,
    Platform,
    build_platform,
    default_platform,
    load_platform,
    load_platform_data,
)
from smpy.platform.schema import PlatformError, PlatformSpec, validate_spec

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
]
