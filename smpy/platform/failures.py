r"""Failure models of hosts and links, the seeded draw of failure times, and their injection.

A component (a host, or a link: both directions of a SPLITDUPLEX link fail together) has one
failure model, given in the platform as ``failures:``:

* **exponential**, ``{mtbf: 5000h}``: the time to failure :math:`T` has
  :math:`P(T > t) = e^{-t/\mathrm{MTBF}}`;
* **Weibull**, ``{shape: k, scale: 1000h}``: :math:`P(T > t) = e^{-(t/\lambda)^k}`
  (:math:`k < 1`: infant mortality, :math:`k = 1`: exponential, :math:`k > 1`: wear-out);
* an **availability trace** (SimGrid's state profile), ``{trace: "10 off\n25 on"}``, a list
  ``[[10, off], [25, on]]`` or ``{trace_file: states.txt}``: ``time state`` lines, the state
  ``on``/``off`` or SimGrid's ``1``/``0``, times in seconds (or with a unit) from the start.

With ``mttr: 1h`` (exponential or Weibull only), a failed component is repaired after an
exponential time of mean MTTR and may fail again; without it, it stays failed for the rest of
the run. Of N independent exponential hosts, a run of length :math:`T` completes with
probability :math:`e^{-N T/\mathrm{MTBF}}`.

The draw
--------
Each component has its own generator, ``random.Random`` seeded with the first 8 bytes of
``sha256("<seed>/<host|link>/<name>")``, ``seed`` being ``--cfg=smpy/failure-seed:N``
(default 0). The i-th time to failure is ``rng.expovariate(1/MTBF)`` (resp.
``rng.weibullvariate(scale, shape)``), each repair ``rng.expovariate(1/MTTR)``. So a run is
reproducible, and adding a component or changing another's model leaves a component's draws
unchanged. Failures are daemon events of the kernel: a failure drawn after the program ended
does not prolong the run.

In the platform, a component's model travels as its property ``smpy/failures`` (canonical
text: ``mtbf=S[,mttr=S]``, ``weibull=K:S[,mttr=S]`` or ``trace=T:0|1;...``), so that hosts,
cluster hosts (``failures`` with per-host ``failure_overrides``), links and XML platforms
(``state_file``) share one path.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smpy.support.config import declare, parse_bool, parse_float, parse_int
from smpy.support.digest import sha256
from smpy.support.units import UnitError, parse_time

PROPERTY = "smpy/failures"
FAILURE_SEED = declare("smpy/failure-seed", 0, "Seed of the failure-time draws of the platform's "
                       "failure models (see docs/failures.md)", parse=parse_int)
FAIL = declare("smpy/fail", "", "Fail components at given simulated times: 'NAME@TIME,...' "
               "(a host or a link; smpyrun --fail)")
FAILURE_MODELS = declare("smpy/failure-models", True, "Draw the failures of the platform's failure "
                         "models (no: a run without them; --fail still applies)", parse=parse_bool)
DETECTION_DELAY = declare("smpy/failure-detection-delay", 1e-3, "Simulated time between a process "
                          "failure and its detection by the others (the job's abort, or ULFM errors), s",
                          parse=parse_float)


@dataclass(frozen=True)
class Profile:
    """One component's failure model: ``kind`` exp | weibull | trace."""

    kind: str
    mtbf: float = 0.0
    shape: float = 1.0
    scale: float = 0.0
    mttr: float = 0.0
    #: (time, on) pairs, times increasing
    states: tuple[tuple[float, bool], ...] = ()

    def text(self) -> str:
        if self.kind == "trace":
            return "trace=" + ";".join(f"{t!r}:{int(on)}" for t, on in self.states)
        head = f"mtbf={self.mtbf!r}" if self.kind == "exp" else f"weibull={self.shape!r}:{self.scale!r}"
        return head + (f",mttr={self.mttr!r}" if self.mttr > 0 else "")


# ------------------------------------------------------------------------ parsing (platform)
def _time(value: Any, what: str, positive: bool = True) -> float:
    try:
        t = parse_time(value)
    except (UnitError, ValueError, TypeError):
        raise ValueError(f"{what}: expected a time like '5000h' or '30s', found {value!r}") from None
    if not math.isfinite(t) or t < 0 or (positive and t <= 0):
        raise ValueError(f"{what}: expected a time greater than zero, found {value!r}")
    return t


def _state(value: Any, where: str) -> bool:
    text = str(value).strip().lower()
    if text in ("on", "1", "1.0", "up"):
        return True
    if text in ("off", "0", "0.0", "down"):
        return False
    raise ValueError(f"{where}: state must be on or off (or SimGrid's 1 or 0), found {value!r}")


def parse_states(lines: Any, where: str = "trace") -> tuple[tuple[float, bool], ...]:
    """``time state`` lines (a text or a list of pairs) -> increasing (time, on) pairs."""
    if isinstance(lines, str):
        rows = []
        for n, line in enumerate(lines.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.upper().startswith("LOOPAFTER"):
                raise ValueError(f"{where} line {n}: LOOPAFTER (periodic profiles) is not supported")
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{where} line {n}: expected 'time state', found {line!r}")
            rows.append((parts[0], parts[1], f"{where} line {n}"))
    elif isinstance(lines, (list, tuple)):
        rows = []
        for n, item in enumerate(lines):
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ValueError(f"{where}[{n}]: expected a pair [time, on|off], found {item!r}")
            rows.append((item[0], item[1], f"{where}[{n}]"))
    else:
        raise ValueError(f"{where}: expected 'time state' lines or a list of [time, state] pairs")
    out: list[tuple[float, bool]] = []
    for t, s, here in rows:
        tt = _time(t, here, positive=False)
        if out and tt < out[-1][0]:
            raise ValueError(f"{here}: times must not decrease ({tt:g} s after {out[-1][0]:g} s)")
        out.append((tt, _state(s, here)))
    return tuple(out)


_KEYS = {"mtbf", "mttr", "shape", "scale", "trace", "trace_file"}


def failure_profile(value: Any, base: Path | None = None) -> str | None:
    """Validate a platform's ``failures:`` mapping; return the canonical property text."""
    if value is None:
        return None
    if isinstance(value, str) and value.split("=", 1)[0] in ("mtbf", "weibull", "trace"):
        return parse_profile(value).text()  # canonical text (an XML property, a rebuilt spec)
    if not isinstance(value, dict):
        raise ValueError("expected a mapping like {mtbf: 5000h}, {shape: 0.7, scale: 1000h} or "
                         "{trace: '10 off'}")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (accepted: {', '.join(sorted(_KEYS))})")
    forms = [k for k in ("mtbf", "shape", "trace", "trace_file") if k in value]
    if "scale" in value and "shape" not in value:
        forms.append("scale")
    if len(forms) != 1:
        raise ValueError("give exactly one of mtbf, shape+scale (Weibull), trace or trace_file")
    mttr = _time(value["mttr"], "mttr") if "mttr" in value else 0.0
    form = forms[0]
    if form in ("trace", "trace_file"):
        if "mttr" in value:
            raise ValueError("mttr applies to mtbf and Weibull models, not to traces")
        if form == "trace_file":
            path = Path(str(value["trace_file"]))
            if base is not None and not path.is_absolute():
                path = base / path
            try:
                text = path.read_text()
            except OSError as err:
                raise ValueError(f"trace_file: cannot read {str(path)!r}: {err.strerror}") from None
            return Profile("trace", states=parse_states(text, str(path))).text()
        return Profile("trace", states=parse_states(value["trace"])).text()
    if form == "mtbf":
        return Profile("exp", mtbf=_time(value["mtbf"], "mtbf"), mttr=mttr).text()
    if "scale" not in value:
        raise ValueError("a Weibull model needs both shape and scale")
    try:
        shape = float(value["shape"])
    except (TypeError, ValueError):
        raise ValueError(f"shape: expected a number, found {value['shape']!r}") from None
    if not shape > 0 or not math.isfinite(shape):
        raise ValueError(f"shape: expected a number greater than zero, found {value['shape']!r}")
    return Profile("weibull", shape=shape, scale=_time(value["scale"], "scale"), mttr=mttr).text()


def parse_profile(text: str) -> Profile:
    """The canonical property text back to a :class:`Profile` (ValueError if malformed)."""
    head, _, rest = text.partition(",")
    key, _, val = head.partition("=")
    mttr = 0.0
    if rest:
        k2, _, v2 = rest.partition("=")
        if k2 != "mttr":
            raise ValueError(f"unknown failure setting {rest!r}")
        mttr = _time(v2, "mttr")
    if key == "mtbf":
        return Profile("exp", mtbf=_time(val, "mtbf"), mttr=mttr)
    if key == "weibull":
        shape, _, scale = val.partition(":")
        return Profile("weibull", shape=float(shape), scale=_time(scale, "scale"), mttr=mttr)
    if key == "trace":
        pairs = [p.split(":") for p in val.split(";") if p]
        return Profile("trace", states=parse_states([(t, s) for t, s in pairs]))
    raise ValueError(f"unknown failure model {text!r}")


# ------------------------------------------------------------------------------- the draw
def component_rng(seed: int, kind: str, name: str) -> random.Random:
    digest = sha256(f"{seed}/{kind}/{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def transitions(profile: Profile, rng: random.Random, horizon: float = math.inf):  # type: ignore[no-untyped-def]
    """Yield (time, on) changes of state of one component, in time order, up to ``horizon``."""
    if profile.kind == "trace":
        on = True
        for t, state in profile.states:
            if t > horizon:
                return
            if state != on:
                on = state
                yield t, state
        return
    t = 0.0
    while True:
        t += (rng.expovariate(1.0 / profile.mtbf) if profile.kind == "exp"
              else rng.weibullvariate(profile.scale, profile.shape))
        if t > horizon:
            return
        yield t, False
        if profile.mttr <= 0:
            return
        t += rng.expovariate(1.0 / profile.mttr)
        if t > horizon:
            return
        yield t, True


def first_failure(profile: Profile, rng: random.Random) -> float:
    """Time of the first failure (inf if none): the analytic sampler of reliability checks."""
    for t, on in transitions(profile, rng):
        if not on:
            return t
    return math.inf


# -------------------------------------------------------------------------- the injection
@dataclass
class FailureRecord:
    time: float
    kind: str  # host | link
    name: str
    on: bool  # False: failed, True: repaired


@dataclass
class Injector:
    """Schedules a platform's failures on a run's engine (daemon events) and logs them.

    ``fail_host(host)`` / ``repair_host(host)`` / ``fail_link(links)`` / ``repair_link(links)``
    are the models' operations (cpu and network); ``on_event(record)`` runs after each.
    """

    engine: Any
    cpu: Any
    net: Any
    platform: Any
    seed: int = 0
    log: list[FailureRecord] = field(default_factory=list)
    on_event: list[Callable[[FailureRecord], None]] = field(default_factory=list)

    def components(self) -> list[tuple[str, str, list[Any], Profile]]:
        """(kind, name, members, profile) of every component with a failure model."""
        out: list[tuple[str, str, list[Any], Profile]] = []
        for h in self.platform.hosts:
            text = h.properties.get(PROPERTY)
            if text:
                out.append(("host", h.name, [h], parse_profile(text)))
        seen: set[str] = set()
        for lnk in self.platform.links:
            text = lnk.properties.get(PROPERTY)
            if not text:
                continue
            name, members = self.physical_link(lnk.name)
            if name not in seen:
                seen.add(name)
                out.append(("link", name, members, parse_profile(text)))
        return out

    def physical_link(self, name: str) -> tuple[str, list[Any]]:
        by = {lnk.name: lnk for lnk in self.platform.links}
        for suffix in ("_UP", "_DOWN"):
            if name.endswith(suffix):
                base = name[: -len(suffix)]
                if base + "_UP" in by and base + "_DOWN" in by:
                    return base, [by[base + "_UP"], by[base + "_DOWN"]]
        if name in by:
            return name, [by[name]]
        if name + "_UP" in by and name + "_DOWN" in by:
            return name, [by[name + "_UP"], by[name + "_DOWN"]]
        raise KeyError(name)

    def arm(self) -> int:
        """Schedule every drawn or traced change of state; the number of components."""
        comps = self.components()
        if comps:
            self.net.track_flows()
        for kind, name, members, profile in comps:
            rng = component_rng(self.seed, kind, name)
            self._next(transitions(profile, rng), kind, name, members)
        return len(comps)

    def _next(self, changes: Any, kind: str, name: str, members: list[Any]) -> None:
        for t, on in changes:
            if t < self.engine.now:  # before a restart's start: the state it starts in
                self.set_state(kind, members, on)
                continue
            self.engine.schedule_daemon(max(t - self.engine.now, 0.0), self._change, changes, kind, name,
                                        members, on)
            return

    def _change(self, changes: Any, kind: str, name: str, members: list[Any], on: bool) -> None:
        self.apply(kind, name, members, on)
        self._next(changes, kind, name, members)

    def force(self, name: str, time: float) -> None:
        """Fail component ``name`` (a host or a link) at simulated ``time`` (``--fail``)."""
        if self.platform.has_host(name):
            kind, members = "host", [self.platform.host(name)]
        else:
            try:
                name, members = self.physical_link(name)
            except KeyError:
                raise ValueError(f"--fail {name}@...: no host or link named {name!r} on platform "
                                 f"{self.platform.name!r}") from None
            kind = "link"
            self.net.track_flows()
        if time < self.engine.now:
            self.set_state(kind, members, False)
            return
        self.engine.schedule_daemon(time - self.engine.now, self.apply, kind, name, members, False)

    def set_state(self, kind: str, members: list[Any], on: bool) -> None:
        """A state reached before the run started (a restart): no actor to kill, not logged."""
        for m in members:
            if kind == "host":
                self.cpu.set_on(m, on)
            else:
                (self.net.repair_link if on else self.net.fail_link)(m)

    def apply(self, kind: str, name: str, members: list[Any], on: bool) -> None:
        if kind == "host":
            h = members[0]
            if on == h.is_on:
                return
            (self.cpu.repair_host if on else self.cpu.fail_host)(h)
        else:
            if all(lnk.is_on == on for lnk in members):
                return
            for lnk in members:
                (self.net.repair_link if on else self.net.fail_link)(lnk)
        rec = FailureRecord(self.engine.now, kind, name, on)
        self.log.append(rec)
        for fn in self.on_event:
            fn(rec)


def down_at(platform: Any, seed: int, forced: list[tuple[str, float]], time: float) -> set[str]:
    """Names of the hosts down at simulated ``time`` (their models' draws and ``forced``)."""
    down: set[str] = set()
    for h in platform.hosts:
        text = h.properties.get(PROPERTY)
        if not text:
            continue
        on = True
        for t, state in transitions(parse_profile(text), component_rng(seed, "host", h.name), time):
            if t < time:
                on = state
        if not on:
            down.add(h.name)
    down.update(name for name, t in forced if t < time and platform.has_host(name))
    return down


def parse_fail(text: str) -> list[tuple[str, float]]:
    """``NAME@TIME[,NAME@TIME...]`` -> [(name, seconds)] (ValueError naming the bad item)."""
    out = []
    for item in (x.strip() for x in str(text).split(",")):
        if not item:
            continue
        name, sep, when = item.rpartition("@")
        if not sep or not name:
            raise ValueError(f"--fail {item!r}: expected NAME@TIME, e.g. node-3@0.5s")
        try:
            t = parse_time(when)
        except (UnitError, ValueError):
            raise ValueError(f"--fail {item!r}: bad time {when!r} (e.g. 0.5s, 10ms, 2h)") from None
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"--fail {item!r}: the time must be zero or more")
        out.append((name, t))
    return out
