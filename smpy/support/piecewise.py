"""Piecewise-affine functions of a message size: the one table type of smpy (house rule 9).

It serves network latency and bandwidth factors (``network/latency-factor``,
``network/bandwidth-factor``), the send/receive software overheads (``smpi/os``, ``smpi/or``,
``smpi/ois``) and region factors.

Math
----
A table is a default value ``d`` and sections ``(bound_i, a_i, b_i)`` sorted by bound,
``bound_0 < bound_1 < … < bound_{n-1}``. For a size ``s`` (bytes)::

    f(s) = d                     if n == 0 or s <= bound_0
    f(s) = a_i + b_i · s         where i is the largest index with bound_i < s

so section ``i`` covers the half-open interval ``(bound_i, bound_{i+1}]``. This is what
SimGrid's code does (``FactorSet::operator()`` in ``src/kernel/resource/FactorSet.cpp``: it
walks the sorted sections and, at the first ``size <= bound``, returns the previous section, or
the default before the first). ⚠ SimGrid's documentation describes the intervals as
``[bound_i, bound_{i+1})``; the two differ only at sizes exactly equal to a bound, and we follow
the code, which is what produces SimGrid's numbers. A consequence: with a section at bound 0,
size 0 still gets the default.

Syntax (SimGrid strings)
------------------------
* factors, ``"65472:11.6436;15424:3.48845;0:2.01467"``: ``bound:factor`` sections separated by
  ``;`` in any order, giving ``a_i = factor``, ``b_i = 0``. The default (below the first bound)
  is 1.0 unless told otherwise. A string without ``:`` or ``;`` is a constant (``"13.01"``).
* affine overheads, ``"0:1e-6:1e-9;65536:5us:2e-10"``: ``minsize:startup:perbyte`` sections
  giving ``a_i = startup`` (seconds; a unit such as ``us`` is allowed) and ``b_i = perbyte``
  (seconds per byte). The default is 0. Like SimGrid, further fields in a section are accepted
  and ignored (SimGrid's default ``smpi/os`` is ``"0:0:0:0:0"``).

Bounds are sizes: plain integers, or with a unit (``64KiB``). Whitespace around fields is
ignored. Lookup is a ``bisect`` over the bounds, O(log n).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable

from smpy.support.units import UnitError, parse_size, parse_time

__all__ = ["Piecewise"]


class Piecewise:
    """``f(size) = a_i + b_i·size`` on ``(bound_i, bound_{i+1}]``, ``default`` up to ``bound_0``."""

    __slots__ = ("sections", "default", "_bounds", "_ab")

    sections: tuple[tuple[float, float, float], ...]
    default: float

    def __init__(self, sections: Iterable[tuple[float, float, float]] = (), default: float = 0.0,
                 *, text: str | None = None) -> None:
        """``sections``: ``(bound, a, b)`` in any order; ``text`` only names the table in errors."""
        ordered = tuple(sorted((float(bound), float(a), float(b)) for bound, a, b in sections))
        where = f"table {text!r}" if text is not None else "piecewise table"
        for (low, *_), (high, *_) in zip(ordered, ordered[1:]):
            if low == high:
                raise ValueError(f"{where}: bound {_int_or_float(low)} appears twice")
        self.sections = ordered
        self.default = float(default)
        self._bounds = [bound for bound, _, _ in ordered]
        # _ab[k] is the (a, b) used when k bounds are below the size; k == 0 is the default
        self._ab = [(self.default, 0.0)] + [(a, b) for _, a, b in ordered]

    # ------------------------------------------------------------------------ constructors
    @classmethod
    def constant(cls, value: float) -> Piecewise:
        """The function that is ``value`` everywhere."""
        return cls((), value)

    @classmethod
    def parse_factors(cls, text: str, default: float = 1.0) -> Piecewise:
        """``"bound:factor;…"`` (or a single number, a constant)."""
        if not isinstance(text, str):
            raise ValueError(f"factor table: expected a string like '0:2.01;257:1.95', found {text!r}")
        if not any(sep in text for sep in ":;"):
            return cls.constant(_number(text, text, text))
        sections = []
        for chunk in _chunks(text):
            fields = [field.strip() for field in chunk.split(":")]
            if len(fields) != 2:
                raise ValueError(f"factor table {text!r}: section {chunk.strip()!r} is not "
                                 "'bound:factor'")
            bound = _bound(fields[0], text, chunk)
            sections.append((bound, _number(fields[1], text, chunk), 0.0))
        return cls(sections, default, text=text)

    @classmethod
    def parse_affine(cls, text: str, default: float = 0.0) -> Piecewise:
        """``"minsize:startup:perbyte;…"`` (or a single duration, a constant)."""
        if not isinstance(text, str):
            raise ValueError("overhead table: expected a string like '0:1e-6:1e-9;65536:2e-6:0', "
                             f"found {text!r}")
        if not any(sep in text for sep in ":;"):
            return cls.constant(_duration(text, text, text))
        sections = []
        for chunk in _chunks(text):
            fields = [field.strip() for field in chunk.split(":")]
            if len(fields) < 3:
                raise ValueError(f"overhead table {text!r}: section {chunk.strip()!r} is not "
                                 "'minsize:startup:perbyte'")
            for extra in fields[3:]:  # SimGrid ignores them; still refuse garbage
                _duration(extra, text, chunk)
            sections.append((_bound(fields[0], text, chunk), _duration(fields[1], text, chunk),
                             _duration(fields[2], text, chunk)))
        return cls(sections, default, text=text)

    # ---------------------------------------------------------------------------- lookup
    def __call__(self, size: float) -> float:
        a, b = self._ab[bisect_left(self._bounds, size)]
        return a + b * size

    @property
    def is_constant(self) -> bool:
        return not self.sections

    # ------------------------------------------------------------------------ comparison
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Piecewise):
            return NotImplemented
        return self.sections == other.sections and self.default == other.default

    def __hash__(self) -> int:
        return hash((self.sections, self.default))

    def to_string(self) -> str:
        """SimGrid syntax: ``bound:factor`` if every slope is 0, else ``minsize:startup:perbyte``."""
        if not self.sections:
            return f"{self.default!r}"
        if all(b == 0.0 for _, _, b in self.sections):
            return ";".join(f"{_int_or_float(bound)}:{a!r}" for bound, a, _ in self.sections)
        return ";".join(f"{_int_or_float(bound)}:{a!r}:{b!r}" for bound, a, b in self.sections)

    def __repr__(self) -> str:
        if not self.sections:
            return f"Piecewise.constant({self.default!r})"
        return f"Piecewise({self.to_string()!r}, default={self.default!r})"


# ------------------------------------------------------------------------------- helpers

def _chunks(text: str) -> list[str]:
    chunks = text.split(";")
    # a trailing ';' is harmless; an empty section in the middle is a typo
    if chunks and not chunks[-1].strip():
        chunks.pop()
    for chunk in chunks:
        if not chunk.strip():
            raise ValueError(f"table {text!r}: empty section")
    if not chunks:
        raise ValueError(f"table {text!r}: no section")
    return chunks


def _bound(field: str, text: str, chunk: str) -> float:
    try:
        bound = parse_size(field)
    except UnitError:
        raise ValueError(f"table {text!r}: section {chunk.strip()!r}: bound {field!r} is not a "
                         "size in bytes (like 1024 or 64KiB)") from None
    if bound < 0:
        raise ValueError(f"table {text!r}: section {chunk.strip()!r}: bound {field!r} is negative")
    return bound


def _number(field: str, text: str, chunk: str) -> float:
    try:
        value = float(field)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"table {text!r}: section {chunk.strip()!r}: {field.strip()!r} is not a "
                         "number")
    return value


def _duration(field: str, text: str, chunk: str) -> float:
    try:
        value = parse_time(field)
    except UnitError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"table {text!r}: section {chunk.strip()!r}: {field.strip()!r} is not a "
                         "number (seconds, or with a time unit like 1.5us)")
    return value


def _int_or_float(x: float) -> str:
    return str(int(x)) if x.is_integer() else repr(x)
