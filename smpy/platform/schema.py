"""The platform file format (YAML), as pydantic models, and its error messages.

A platform file describes the simulated machine: hosts (cores, speed per core and per
performance state), links (bandwidth, latency, sharing policy) and how hosts reach each other.
It follows SimGrid's platform vocabulary (``<cluster>``, ``<host>``, ``<link>``, ``<route>``)
with units written as strings (see :mod:`smpy.support.units`) and read into SI floats here.

Format
------
::

    name: cluster64              # optional; defaults to the file name without extension
    config:                      # optional: defaults for --cfg settings, as strings
      network/model: SMPI
    clusters:                    # star clusters (SimGrid <cluster>); one per platform for now
      - name: cluster            # the cluster id; links are named after it
        prefix: node-            # host i is named prefix + i + suffix
        suffix: ""
        radical: 0-63            # "0-63", "0-11,20-23", "5"; or `count: 64` for 0..63
        cores: 12                # cores per host (default 1)
        speed: 1Gf               # flop/s of one core; a list gives pstates: [1Gf, 800Mf]
        pstate: 0                # initial pstate (default 0)
        bandwidth: 10Gbps        # private link of each host
        latency: 50us
        sharing: SPLITDUPLEX     # private links: SPLITDUPLEX (default), SHARED or FATPIPE
        backbone: {bandwidth: 100Gbps, latency: 0us, sharing: SHARED}  # optional; or FATPIPE
        limiter: 20Gbps          # optional: a SHARED link per host bounding all its traffic
        loopback: {bandwidth: 50GBps, latency: 0.1us}  # optional: a FATPIPE link per host
        properties: {key: value} # copied to every host
    hosts:                       # individual hosts (instead of clusters)
      - {name: a, speed: 2Gf, cores: 4, pstate: 0, properties: {}}
    routers: [r1]                # nodes that only forward
    links:
      - {name: l1, bandwidth: 1GBps, latency: 10us, sharing: SHARED, properties: {}}
    routes:                      # links crossed from src to dst, in order
      - {src: a, dst: r1, links: [l1], symmetric: true}

Meaning (SimGrid's, see ``docs/research/smpi_features.md`` §2.10):

* A cluster host ``i`` gets the private link ``<name>_link_<i>``; SPLITDUPLEX (the default)
  makes it two links ``<name>_link_<i>_UP`` (host to centre) and ``..._DOWN`` (centre to host).
  The backbone is ``<name>_backbone``, limiters ``<name>_link_<i>_limiter``, loopbacks
  ``<name>_link_<i>_loopback``. A message from ``s`` to ``d`` crosses
  ``[limiter_s, link_s_UP, backbone, link_d_DOWN, limiter_d]`` (absent ones skipped); a message
  from a host to itself crosses its loopback if any, else its own private link up and down.
* ``links`` default to ``sharing: SHARED`` (SimGrid's DTD default for ``<link>``); a
  SPLITDUPLEX link ``l`` becomes ``l_UP`` and ``l_DOWN``, and routes must name one of them.
* ``routes`` are symmetric by default: the reverse route is the reversed list, with ``_UP``
  and ``_DOWN`` halves swapped. Pairs without a declared route use the least-latency path
  through declared routes (routers and hosts relay); a host with no route to itself uses the
  implicit ``__loopback__`` link (FATPIPE; ``network/loopback-bw``, default 10GBps, and
  ``network/loopback-lat``, default 0s, from ``config``).
* A platform has either ``clusters`` (exactly one in this version) or
  ``hosts``/``routers``/``links``/``routes``.

Unknown keys are errors. Every error names the file, the field path (``clusters[0].bandwidth``)
and what was expected.
"""

from __future__ import annotations

import difflib
import math
import re
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from smpy.support.units import (
    UnitError,
    parse_bandwidth,
    parse_speed,
    parse_time,
)

__all__ = [
    "PlatformError",
    "PlatformSpec",
    "ClusterSpec",
    "HostSpec",
    "LinkSpec",
    "RouteSpec",
    "BackboneSpec",
    "LoopbackSpec",
    "parse_radical",
    "validate_spec",
    "format_path",
]


class PlatformError(Exception):
    """A platform that cannot be used; the message reads ``<file>: <field.path>: <problem>``."""


# ------------------------------------------------------------------------- field validators
# Each validator accepts Any and returns the final value, so pydantic reports our message only.

def _unit(parse: Callable[[Any], float], expected: str, *, positive: bool) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        try:
            result = parse(value)
        except UnitError as err:
            raise ValueError(f"expected {expected}, found {value!r} (units: {err.units})"
                             ) from None
        if not math.isfinite(result):
            raise ValueError(f"expected {expected}, found {value!r} (not finite)")
        if positive and result <= 0:
            raise ValueError(f"expected {expected} greater than zero, found {value!r}")
        if result < 0:
            raise ValueError(f"expected {expected} (zero or more), found {value!r}")
        return result
    return check


_BANDWIDTH_HINT = "a bandwidth like '10Gbps' or '1.25GBps'"
_TIME_HINT = "a latency like '50us' or '0s'"
_SPEED_HINT = "a speed like '1Gf' or '2.5Gflops'"

Bandwidth = Annotated[float, BeforeValidator(_unit(parse_bandwidth, _BANDWIDTH_HINT,
                                                   positive=True))]
Latency = Annotated[float, BeforeValidator(_unit(parse_time, _TIME_HINT, positive=False))]


def _speeds(value: Any) -> tuple[float, ...]:
    expected = f"{_SPEED_HINT}, or a list of them (one per pstate)"
    items: list[Any]
    if isinstance(value, str) and "," in value:  # SimGrid's "1Gf,800Mf"
        items = [item.strip() for item in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    if not items:
        raise ValueError(f"expected {expected}, found an empty list")
    check = _unit(parse_speed, _SPEED_HINT, positive=True)
    speeds = []
    for i, item in enumerate(items):
        try:
            speeds.append(check(item))
        except ValueError as err:
            if len(items) == 1:
                raise
            raise _FieldError(i, str(err)) from None
    return tuple(speeds)


Speeds = Annotated[tuple[float, ...], BeforeValidator(_speeds)]


def _integer(minimum: int, what: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected {what}, found {value!r}")
        if value < minimum:
            raise ValueError(f"expected {what}, found {value!r}")
        return value
    return check


Cores = Annotated[int, BeforeValidator(_integer(1, "a whole number of cores, 1 or more"))]
Count = Annotated[int, BeforeValidator(_integer(1, "a whole number of hosts, 1 or more"))]
Pstate = Annotated[int, BeforeValidator(_integer(0, "a pstate index, 0 or more"))]

_NAME_CHARS = re.compile(r"[^\s:#,]+")


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME_CHARS.fullmatch(value):
        raise ValueError("expected a name: a non-empty string without spaces, ':', '#' or ',', "
                         f"found {value!r}")
    return value


def _affix(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        text = str(value)
        if text == "" or _NAME_CHARS.fullmatch(text):
            return text
    raise ValueError("expected a host-name prefix or suffix (a string without spaces, ':', '#' "
                     f"or ','), found {value!r}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"expected a string or a number, found {value!r}")


def _text_map(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of names to values, found {value!r}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValueError(f"expected string keys, found {key!r}")
        try:
            out[key] = _text(item)
        except ValueError as err:
            raise ValueError(f"{key}: {err}") from None
    return out


Name = Annotated[str, BeforeValidator(_name)]
Affix = Annotated[str, BeforeValidator(_affix)]
Properties = Annotated[dict[str, str], BeforeValidator(_text_map)]


def _sharing_name(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip().upper()
        if value == "FULLDUPLEX":  # SimGrid's deprecated spelling of SPLITDUPLEX
            return "SPLITDUPLEX"
    return value


SharingName = Annotated[Literal["SHARED", "FATPIPE", "SPLITDUPLEX"], BeforeValidator(_sharing_name)]
BackboneSharing = Annotated[Literal["SHARED", "FATPIPE"], BeforeValidator(_sharing_name)]


def parse_radical(text: str) -> list[int]:
    """SimGrid's radical syntax: ``"0-3,6,9-11"`` → ``[0, 1, 2, 3, 6, 9, 10, 11]``."""
    numbers: list[int] = []
    for group in str(text).split(","):
        ends = [end.strip() for end in group.split("-")]
        if len(ends) > 2 or not all(end.isdigit() for end in ends):
            raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {text!r} "
                             f"(bad group {group.strip()!r})")
        start, stop = int(ends[0]), int(ends[-1])
        if stop < start:
            raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {text!r} "
                             f"(range {group.strip()!r} runs backwards)")
        numbers.extend(range(start, stop + 1))
    return numbers


def _radical(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a radical like '0-63' or '0-11,20-23', found {value!r}")
    return tuple(parse_radical(value))


Radical = Annotated[tuple[int, ...] | None, BeforeValidator(_radical)]


# ---------------------------------------------------------------------------------- models

class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackboneSpec(_Spec):
    bandwidth: Bandwidth
    latency: Latency = 0.0
    sharing: BackboneSharing = "SHARED"


class LoopbackSpec(_Spec):
    bandwidth: Bandwidth
    latency: Latency = 0.0


class ClusterSpec(_Spec):
    name: Name
    prefix: Affix = ""
    suffix: Affix = ""
    radical: Radical = None
    count: Count | None = None
    cores: Cores = 1
    speed: Speeds
    pstate: Pstate = 0
    bandwidth: Bandwidth
    latency: Latency
    sharing: SharingName = "SPLITDUPLEX"
    backbone: BackboneSpec | None = None
    limiter: Annotated[float | None, BeforeValidator(
        lambda v: None if v is None else _unit(parse_bandwidth, _BANDWIDTH_HINT, positive=True)(v)
    )] = None
    loopback: LoopbackSpec | None = None
    properties: Properties = {}

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        if (self.radical is None) == (self.count is None):
            raise _FieldError("radical", "give either `radical` (like '0-63') or `count` "
                              "(like 64), not both and not neither")
        _check_pstate(self.pstate, self.speed)
        return self

    @property
    def radicals(self) -> tuple[int, ...]:
        return self.radical if self.radical is not None else tuple(range(self.count or 0))


class HostSpec(_Spec):
    name: Name
    speed: Speeds
    cores: Cores = 1
    pstate: Pstate = 0
    properties: Properties = {}

    @model_validator(mode="after")
    def _check(self) -> HostSpec:
        _check_pstate(self.pstate, self.speed)
        return self


class LinkSpec(_Spec):
    name: Name
    bandwidth: Bandwidth
    latency: Latency = 0.0
    sharing: SharingName = "SHARED"
    properties: Properties = {}


class RouteSpec(_Spec):
    src: Name
    dst: Name
    links: Annotated[tuple[Name, ...], BeforeValidator(lambda v: _non_empty_list(v, "link names"))]
    symmetric: bool = True


class PlatformSpec(_Spec):
    name: Name | None = None
    config: Properties = {}
    clusters: tuple[ClusterSpec, ...] = ()
    hosts: tuple[HostSpec, ...] = ()
    routers: tuple[Name, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    routes: tuple[RouteSpec, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> PlatformSpec:
        explicit = [key for key in ("hosts", "routers", "links", "routes") if getattr(self, key)]
        if self.clusters and explicit:
            raise _FieldError(explicit[0], "a platform has either `clusters` or "
                              "hosts/routers/links/routes; connecting a cluster to other hosts is "
                              "not supported yet")
        if len(self.clusters) > 1:
            raise _FieldError("clusters", f"one cluster per platform in this version, found "
                              f"{len(self.clusters)} (connecting clusters is not supported yet)")
        if not self.clusters and not self.hosts:
            raise _FieldError("hosts", "a platform needs `clusters` or `hosts`, found neither")
        return self


def _non_empty_list(value: Any, what: str) -> Any:
    if isinstance(value, (list, tuple)) and not value:
        raise ValueError(f"expected a non-empty list of {what}, found []")
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of {what}, found {value!r}")
    return value


def _check_pstate(pstate: int, speeds: tuple[float, ...]) -> None:
    if pstate >= len(speeds):
        raise _FieldError("pstate", f"expected a pstate index below {len(speeds)} (the number of "
                          f"speeds given), found {pstate}")


class _FieldError(ValueError):
    """Raised by model validators to blame one field (pydantic would blame the whole model)."""

    def __init__(self, field: str | int, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# ---------------------------------------------------------------------------- validation

def format_path(loc: typing.Sequence[str | int]) -> str:
    """``('clusters', 0, 'bandwidth')`` → ``'clusters[0].bandwidth'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<top>"


def validate_spec(data: Any, source: str) -> PlatformSpec:
    """Validate parsed YAML into a :class:`PlatformSpec`, or raise :class:`PlatformError`."""
    if not isinstance(data, dict):
        raise PlatformError(f"{source}: <top>: expected a mapping with keys like `name`, "
                            f"`clusters` or `hosts`, found {_short(data)}")
    try:
        return PlatformSpec.model_validate(data)
    except ValidationError as err:
        lines = [f"{source}: {path}: {message}" for path, message in _messages(err)]
        raise PlatformError("\n".join(lines)) from None


def _messages(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        kind = item["type"]
        found = item.get("input")
        ctx = item.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, _FieldError):
            out.append((format_path(loc + (cause.field,)), cause.message))
            continue
        if kind == "value_error":
            message = str(cause) if cause is not None else item["msg"]
        elif kind == "extra_forbidden":
            message = _unknown_key(loc)
        elif kind == "missing":
            message = f"missing required key: expected {_expected(loc)}"
        elif kind == "literal_error":
            message = f"expected one of {ctx.get('expected', '')}, found {_short(found)}"
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            message = f"expected a mapping, found {_short(found)}"
        elif kind in ("tuple_type", "list_type"):
            message = f"expected a list, found {_short(found)}"
        elif kind in ("bool_type", "bool_parsing"):
            message = f"expected true or false, found {_short(found)}"
        elif kind in ("string_type",):
            message = f"expected a string, found {_short(found)}"
        else:
            message = f"{item['msg']}, found {_short(found)}"
        out.append((format_path(loc), message))
    return out


_EXPECTED = {
    "bandwidth": _BANDWIDTH_HINT,
    "latency": _TIME_HINT,
    "speed": f"{_SPEED_HINT} (or a list, one per pstate)",
    "name": "a name",
    "src": "the name of a host or router",
    "dst": "the name of a host or router",
    "links": "a list of link names",
}


def _expected(loc: tuple[Any, ...]) -> str:
    field = loc[-1] if loc else ""
    return _EXPECTED.get(str(field), f"a value for {field!r}")


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class whose field the location ``loc`` points into."""
    model: Any = PlatformSpec
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(part)
        if field is None:
            return model
        model = _inner_model(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    """The BaseModel inside ``X``, ``X | None``, ``tuple[X, ...]``, ``Annotated[X, ...]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _unknown_key(loc: tuple[Any, ...]) -> str:
    key = str(loc[-1])
    model = _model_at(loc[:-1])
    if model is None:
        return f"unknown key {key!r}"
    accepted = list(model.model_fields)
    close = difflib.get_close_matches(key, accepted, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r} (accepted: {', '.join(accepted)}){hint}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
