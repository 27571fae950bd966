"""Configuration flags (``--cfg=name:value``), declared where they are used.

Each module that reads a setting declares it once at import time with :func:`declare`
(name, default, parser, one-line doc). A :class:`Config` holds the values of one run:
defaults, then the platform file's ``config:`` section, then ``--cfg`` options. Values are
parsed when set, so a bad value is reported at start-up naming the flag. Hot paths read
settings once into attributes; nothing below the CLI reads the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from smpy.support.internal import SmpyInternalError


class ConfigError(ValueError):
    """A bad ``--cfg`` name or value."""


def parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    t = str(text).strip().lower()
    if t in ("yes", "on", "true", "1"):
        return True
    if t in ("no", "off", "false", "0"):
        return False
    raise ValueError(f"expected yes/no, on/off, true/false or 1/0, got {text!r}")


def parse_float(text: str | float) -> float:
    return float(text)


def parse_int(text: str | int) -> int:
    return int(text)


def bounded_float(minimum: float = 0.0, *, above: bool = False,
                  maximum: float | None = None) -> Callable[[Any], float]:
    """A parser of finite numbers ``>= minimum`` (``> minimum`` with ``above``), ``<= maximum``."""
    relation = f"greater than {minimum:g}" if above else f"of {minimum:g} or more"
    if maximum is not None:
        relation = f"between {minimum:g} and {maximum:g}"

    def parse(text: Any) -> float:
        if isinstance(text, bool):
            raise ValueError(f"expected a number {relation}, found {text!r}")
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise ValueError(f"expected a number {relation}, found {text!r}") from None
        if (value != value or value in (float("inf"), float("-inf")) or value < minimum
                or (above and value == minimum) or (maximum is not None and value > maximum)):
            raise ValueError(f"expected a number {relation}, found {text!r}")
        return value
    return parse


def bounded_int(minimum: int = 0) -> Callable[[Any], int]:
    """A parser of whole numbers ``>= minimum``."""
    def parse(text: Any) -> int:
        try:
            value = int(str(text).strip()) if not isinstance(text, bool) else None
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise ValueError(f"expected a whole number of {minimum} or more, found {text!r}")
        return value
    return parse


def checked(parse: Callable[[Any], Any], test: Callable[[Any], bool],
            expected: str) -> Callable[[Any], Any]:
    """``parse``, then ``test`` on its result: ``expected ..., found <text>`` when it fails
    (NaN fails every comparison, so ``lambda v: 0 < v < inf`` refuses it too)."""
    def check(text: Any) -> Any:
        value = parse(text)
        if not test(value):
            raise ValueError(f"expected {expected}, found {text!r}")
        return value
    return check


def optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``parse`` for a setting whose empty default means "the model's": the text is checked
    with ``parse`` and kept as given ("" stays "")."""
    def check(text: Any) -> Any:
        if isinstance(text, str) and not text.strip():
            return ""
        parse(text)
        return text if isinstance(text, str) else str(text)
    return check


@dataclass(frozen=True)
class Flag:
    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str
    choices: tuple[str, ...] = ()


_FLAGS: dict[str, Flag] = {}
_ALIASES: dict[str, str] = {}


def declare(name: str, default: Any, doc: str, parse: Callable[[Any], Any] = str,
            choices: Iterable[str] = (), aliases: Iterable[str] = ()) -> Flag:
    """Declare a setting; re-declaring the same name with the same default is a no-op."""
    flag = Flag(name, default, parse, doc, tuple(choices))
    old = _FLAGS.get(name)
    if old is not None and old.default != default:
        raise SmpyInternalError(f"setting {name!r} declared twice with different defaults")
    _FLAGS[name] = flag
    for a in aliases:
        _ALIASES[a] = name
    return flag


def all_flags() -> list[Flag]:
    return [_FLAGS[k] for k in sorted(_FLAGS)]


def canonical(name: str) -> str:
    return _ALIASES.get(name, name)


class Config:
    """The settings of one run."""

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self._raw: dict[str, Any] = {}
        for k, v in (values or {}).items():
            self.set(k, v)

    def set(self, name: str, value: Any) -> None:
        name = canonical(name.strip())
        flag = _FLAGS.get(name)
        if flag is None:
            known = ", ".join(sorted(_FLAGS))
            raise ConfigError(f"unknown setting {name!r} (known settings: {known}; see smpyrun --help-cfg)")
        if flag.choices and str(value) not in flag.choices:
            raise ConfigError(f"setting {name!r}: {value!r} is not one of {', '.join(flag.choices)}")
        try:
            parsed = flag.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name!r}: bad value {value!r}: {exc}") from None
        self._values[name] = parsed
        self._raw[name] = value

    def set_default(self, name: str, value: Any) -> None:
        """Set unless already set (used for the platform's ``config:`` section)."""
        if canonical(name) not in self._values:
            self.set(name, value)

    def set_defaults_from(self, items: dict[str, Any], source: str) -> None:
        """A platform's ``config:`` section: each item checked by the same parser as ``--cfg``
        (even when ``--cfg`` overrides it), errors reading ``<source>: config.<name>: ...``."""
        for name, value in items.items():
            try:
                Config({name: value})
                self.set_default(name, value)
            except ConfigError as err:
                detail = str(err).removeprefix(f"setting {canonical(name.strip())!r}: ")
                raise ConfigError(f"{source}: config.{name}: {detail}") from None

    def get(self, flag: Flag | str) -> Any:
        name = flag.name if isinstance(flag, Flag) else canonical(flag)
        if name in self._values:
            return self._values[name]
        f = _FLAGS.get(name)
        if f is None:
            raise ConfigError(f"unknown setting {name!r}")
        return f.parse(f.default) if isinstance(f.default, str) and f.parse is not str else f.default

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def explicit(self) -> dict[str, Any]:
        """Settings given explicitly (raw text), for reports."""
        return dict(self._raw)

    @staticmethod
    def parse_cfg_option(text: str) -> tuple[str, str]:
        """``name:value`` → (name, value); the name may itself contain '/'."""
        if ":" not in text:
            raise ConfigError(f"--cfg expects name:value, got {text!r}")
        name, value = text.split(":", 1)
        return name.strip(), value.strip()
