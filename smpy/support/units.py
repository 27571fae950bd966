"""Unit strings at the platform edge, SI floats inside.

Every quantity inside smpy is a float in SI units: seconds, bytes, bytes per second, flop per
second, watts. Strings with units (``'10Gbps'``, ``'50us'``, ``'1.2Gf'``, ``'95W'``) are turned
into those floats here, once, when a platform or a setting is read (house rule 8).

Grammar: ``<number><optional spaces><unit>``, where ``<number>`` is a decimal literal with an
optional exponent (``1``, ``1.5``, ``.5``, ``2e-3``). A ``int``/``float`` value, or a string
holding a bare number, is already SI and passes through unchanged (``bool`` and ``None`` are
rejected). Units are case-sensitive, because ``MBps`` (megabytes/s) and ``Mbps`` (megabits/s)
differ by 8 and ``m`` (milli, minute) is not ``M`` (mega).

Prefixes (the SimGrid tables of ``xbt_parse_units.cpp``):

* decimal ``k``/``K``, ``M``, ``G``, ``T``, ``P``, ``E``, ``Z``, ``Y`` = 10^3, 10^6, … 10^24;
* binary ``Ki``, ``Mi``, ``Gi``, ``Ti``, ``Pi``, ``Ei``, ``Zi``, ``Yi`` = 2^10, 2^20, … 2^80.

Quantities:

* bandwidth (B/s): ``Bps`` = 1 byte/s, ``bps`` = 1 bit/s = 1/8 B/s, each with decimal or binary
  prefixes: ``10Gbps`` = 10·10^9/8 = 1.25e9 B/s, ``1KiBps`` = 1024 B/s;
* time (s): ``ps`` 1e-12, ``ns`` 1e-9, ``us``/``µs`` 1e-6, ``ms`` 1e-3, ``s`` 1, ``m`` 60,
  ``h`` 3600, ``d`` 86400, ``w`` 604800;
* speed (flop/s): ``f`` or ``flops`` with decimal prefixes (``Gf``, ``Gflops``), and SimGrid's
  long forms (``gigaflops``);
* size (B): ``B`` = 1 byte, ``b`` = 1 bit = 1/8 B, with decimal or binary prefixes
  (``kB`` = 1000 B, ``KiB`` = 1024 B);
* power (W): ``mW`` 1e-3, ``W`` 1, ``kW`` 1e3, ``MW`` 1e6.

Each parser raises :class:`UnitError` (a ``ValueError``) naming the bad value and the accepted
units. The ``format_*`` functions go the other way, for humans: four significant digits and the
prefix that puts the mantissa in [1, 1000) (``format_time(2.015e-4) == '201.5 us'``,
``format_bandwidth(1.25e9) == '10 Gbps'``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal

__all__ = [
    "UnitError",
    "parse_bandwidth",
    "parse_time",
    "parse_speed",
    "parse_size",
    "parse_power",
    "format_time",
    "format_bandwidth",
    "format_size",
    "format_speed",
    "format_power",
]


class UnitError(ValueError):
    """A value that is not a number followed by one of the accepted units.

    ``kind`` is 'bandwidth', 'time', 'speed', 'size' or 'power'; ``value`` the rejected value;
    ``units`` the accepted units, as text.
    """

    def __init__(self, kind: str, value: object, detail: str = "") -> None:
        example, units = _KINDS[kind]
        self.kind = kind
        self.value = value
        self.units = units
        extra = f"{detail}; " if detail else ""
        super().__init__(f"expected {example}, found {value!r} ({extra}units: {units})")


_DECIMAL = ("k", "M", "G", "T", "P", "E", "Z", "Y")
_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi")
_LONG = ("kilo", "mega", "giga", "tera", "peta", "exa", "zetta", "yotta")


def _scaled(unit: str, value: Decimal, *, decimal: bool = True, binary: bool = False,
            long: bool = False) -> dict[str, Decimal]:
    """``unit`` and its prefixed forms, each mapped to its size in SI units.

    Scales are exact decimals so that ``'50us'`` gives the double nearest to 5e-05 (the same as
    the literal ``50e-6``), not ``50 * 1e-6`` which is one ulp below.
    """
    table = {unit: value}
    if decimal:
        for power, prefix in enumerate(_DECIMAL, start=1):
            table[prefix + unit] = value * 1000**power
        table["K" + unit] = table["k" + unit]  # SimGrid docs and users write both
    if binary:
        for power, prefix in enumerate(_BINARY, start=1):
            table[prefix + unit] = value * 1024**power
    if long:
        for power, prefix in enumerate(_LONG, start=1):
            table[prefix + unit] = value * 1000**power
    return table


_ONE = Decimal(1)
_EIGHTH = Decimal("0.125")
_BANDWIDTH = {**_scaled("Bps", _ONE, binary=True), **_scaled("bps", _EIGHTH, binary=True)}
_TIME = {
    unit: Decimal(scale)
    for unit, scale in [("ps", "1e-12"), ("ns", "1e-9"), ("us", "1e-6"), ("\u00b5s", "1e-6"),
                        ("\u03bcs", "1e-6"), ("ms", "1e-3"), ("s", "1"), ("m", "60"),
                        ("h", "3600"), ("d", "86400"), ("w", "604800")]
}
_SPEED = {**_scaled("f", _ONE), **_scaled("flops", _ONE, long=True)}
_SIZE = {**_scaled("B", _ONE, binary=True), **_scaled("b", _EIGHTH, binary=True)}
_POWER = {unit: Decimal(scale) for unit, scale in
          [("mW", "1e-3"), ("W", "1"), ("kW", "1e3"), ("KW", "1e3"), ("MW", "1e6")]}

#: kind -> (example, accepted units), for messages
_KINDS = {
    "bandwidth": ("a bandwidth like '10Gbps' or '1.25GBps'",
                  "Bps kBps MBps GBps TBps KiBps MiBps GiBps TiBps (bytes/s), "
                  "bps kbps Mbps Gbps Tbps Kibps Mibps Gibps Tibps (bits/s)"),
    "time": ("a duration like '50us' or '1.5ms'", "ps ns us µs ms s m h d w"),
    "speed": ("a speed like '1Gf' or '2.5Gflops'",
              "f kf Mf Gf Tf Pf Ef Zf, flops kflops Mflops Gflops Tflops Pflops"),
    "size": ("a size like '64KiB' or '1MB'", "B kB MB GB TB KiB MiB GiB TiB (b for bits)"),
    "power": ("a power like '95W' or '1.2kW'", "mW W kW MW"),
}


_NUMBER_UNIT = re.compile(
    r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(\S*)\s*"
)


def _parse(value: object, table: dict[str, Decimal], kind: str) -> float:
    if isinstance(value, bool) or value is None:
        raise UnitError(kind, value)
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise UnitError(kind, value)
    match = _NUMBER_UNIT.fullmatch(value)
    if match is None:
        raise UnitError(kind, value, "not a number followed by a unit")
    number, unit = match.groups()
    if not unit:
        return float(number)
    scale = table.get(unit)
    if scale is None:
        raise UnitError(kind, value, f"unknown unit {unit!r}")
    return float(Decimal(number) * scale)


def parse_bandwidth(value: str | float) -> float:
    """Bandwidth in bytes per second: ``parse_bandwidth('10Gbps') == 1.25e9``."""
    return _parse(value, _BANDWIDTH, "bandwidth")


def parse_time(value: str | float) -> float:
    """Duration in seconds: ``parse_time('50us') == 5e-05``."""
    return _parse(value, _TIME, "time")


def parse_speed(value: str | float) -> float:
    """Computing speed in flop per second: ``parse_speed('1Gf') == 1e9``."""
    return _parse(value, _SPEED, "speed")


def parse_size(value: str | float) -> float:
    """Size in bytes: ``parse_size('64KiB') == 65536.0``."""
    return _parse(value, _SIZE, "size")


def parse_power(value: str | float) -> float:
    """Power in watts: ``parse_power('1.2kW') == 1200.0``."""
    return _parse(value, _POWER, "power")


#: the parser of each kind of quantity, by name
PARSERS: dict[str, Callable[[str | float], float]] = {
    "bandwidth": parse_bandwidth,
    "time": parse_time,
    "speed": parse_speed,
    "size": parse_size,
    "power": parse_power,
}


# --------------------------------------------------------------------------------- formatting

def _mantissa(x: float) -> str:
    text = f"{x:.4g}"
    if "e" in text:  # only for |x| >= 1e4 in the largest unit, or tiny values in the smallest
        text = f"{x:.0f}" if abs(x) >= 1 else f"{x:.3e}"
    return text


def _format(value: float, units: list[tuple[float, str]], zero: str) -> str:
    """``units``: (scale, name) from the largest scale down; below the last, the last is used."""
    if value == 0.0 or not math.isfinite(value):
        return f"{value:g} {zero}"
    magnitude = abs(value)
    for scale, name in units:
        if magnitude >= scale * 0.99995:  # 999.99 us would print '1000 us'; prefer '1 ms'
            return f"{_mantissa(value / scale)} {name}"
    scale, name = units[-1]
    return f"{_mantissa(value / scale)} {name}"


_TIME_OUT = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"), (1e-12, "ps")]
_BW_OUT = [(1.25e14, "Pbps"), (1.25e11, "Tbps"), (1.25e8, "Gbps"), (1.25e5, "Mbps"),
           (125.0, "kbps"), (0.125, "bps")]
_SIZE_OUT = [(1024.0**5, "PiB"), (1024.0**4, "TiB"), (1024.0**3, "GiB"), (1024.0**2, "MiB"),
             (1024.0, "KiB"), (1.0, "B")]
_SPEED_OUT = [(1e18, "Ef"), (1e15, "Pf"), (1e12, "Tf"), (1e9, "Gf"), (1e6, "Mf"), (1e3, "kf"),
              (1.0, "f")]
_POWER_OUT = [(1e6, "MW"), (1e3, "kW"), (1.0, "W"), (1e-3, "mW")]


def format_time(seconds: float) -> str:
    """``format_time(2.015e-4) == '201.5 us'``; seconds stay seconds above 1 s."""
    return _format(seconds, _TIME_OUT, "s")


def format_bandwidth(bytes_per_s: float) -> str:
    """In bits per second with decimal prefixes, as networks are sold: ``'10 Gbps'``."""
    return _format(bytes_per_s, _BW_OUT, "bps")


_BYTE_RATE_OUT = [(1e15, "PBps"), (1e12, "TBps"), (1e9, "GBps"), (1e6, "MBps"), (1e3, "kBps")]


def format_byte_rate(bytes_per_s: float) -> str:
    """Bytes per second with a decimal prefix and no space, as the platform YAML takes them:
    ``format_byte_rate(2.173e10) == '21.73GBps'`` (parse_bandwidth reads it back);
    format_bandwidth prints bits per second, as networks are sold."""
    for scale, unit in _BYTE_RATE_OUT:
        if bytes_per_s >= scale * 0.99995:
            return f"{bytes_per_s / scale:.4g}{unit}"
    return f"{bytes_per_s:.4g}Bps"


def format_size(nbytes: float) -> str:
    """With binary prefixes, as messages are sized: ``format_size(65536) == '64 KiB'``."""
    return _format(nbytes, _SIZE_OUT, "B")


def format_speed(flops: float) -> str:
    """``format_speed(1e9) == '1 Gf'``."""
    return _format(flops, _SPEED_OUT, "f")


def format_power(watts: float) -> str:
    """``format_power(95.0) == '95 W'``."""
    return _format(watts, _POWER_OUT, "W")
