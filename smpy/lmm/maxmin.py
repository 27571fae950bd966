r"""Weighted max-min fair sharing with bounds, solved by progressive filling.

The system
----------
Constraints :math:`c` (resources: link directions, CPUs) have capacities :math:`C_c > 0`.
Variables :math:`v` (flows, executions) have a *sharing penalty* :math:`w_v > 0` (the
inverse of their weight), an optional upper bound :math:`b_v` and coefficients
:math:`a_{c,v} > 0` on the constraints they use. We seek rates :math:`x_v \ge 0` with

.. math::

    \sum_v a_{c,v}\, x_v \le C_c \quad \forall c, \qquad x_v \le b_v,

that are *weighted max-min fair*: each :math:`x_v = \lambda_v / w_v` where the levels
:math:`\lambda` are raised together, and a variable stops rising when one of its
constraints saturates or it reaches its bound. This is SimGrid's LMM (Velho & Legrand):
a flow with twice the penalty gets half the share of a bottleneck.

Progressive filling
-------------------
With :math:`R_c` the capacity left on :math:`c` and :math:`U_c = \sum_{v\ \mathrm{free}}
a_{c,v}/w_v` its usage by the variables still free, the common level can rise to

.. math::

    \lambda^* = \min\Big( \min_c R_c / U_c,\ \min_{v\ \mathrm{free}} b_v\, w_v \Big).

If a bound is the minimum, those variables are fixed at :math:`x_v = b_v`; otherwise every
free variable of each constraint reaching :math:`\lambda^*` is fixed at
:math:`x_v = \lambda^*/w_v`. Fixed variables are subtracted from :math:`R` and :math:`U` of
all their constraints, and the loop repeats until every variable is fixed. Each iteration
fixes at least one variable, so it ends after at most :math:`|V|` iterations.

Incrementality
--------------
Adding, removing or re-bounding a variable, or changing a capacity, marks the touched
constraints *modified*. :meth:`System.solve` re-solves only the connected components
(constraints ↔ variables) that contain a modified constraint, and returns the variables
whose value changed, so models reschedule only those. Callers batch: they modify the
system many times during a simulation round and call ``solve()`` once.

Classes of identical variables
------------------------------
Variables with the same ``elements`` object (the network model gives every flow of a route
the same tuple), penalty and bound are fixed in the same round at the same value. A
component of at least ``_CLASS_MIN`` variables with at most one such class per
``_CLASS_RATIO`` of them (the 64-128 flows of an osu_bw/osu_bibw window) is filled class by
class: the levels, bounds and values are computed once per class, and only the
floating-point sums keep their per-variable order (the initial :math:`U_c` in insertion
order, kept per constraint while variables are only added; :math:`R_c` and :math:`U_c` of a
constraint still active after a round decreased
variable by variable, a run of identical terms when one class of the round crosses it), so
the values are those of the general filling bit for bit (``tests/kernel/test_lmm_classes.py``).
Each constraint counts its variables per class, so that the component is found class by class.

The compiled twin
-----------------
``_lmmaccel.c`` is :meth:`System.solve` in C (the general filling above, on one component at a
time copied into C arrays), swapped in with the rest of the optional compiled path
(``smpy/accel``, :mod:`smpy.kernel.accel`; registered through :func:`smpy.support.cext.register`,
so this package imports nothing above ``smpy.support``). It gives this module's values and
changed lists bit for bit (the same operations on doubles in the same order; the lone-value cache
and the class path are shortcuts that give the general filling's bits, so the twin has no need of
them; it takes :func:`_lone_value` itself for a variable alone on its constraints):
``tests/kernel/test_lmm_accel.py``. Without a C compiler, this Python code runs.

Only shared constraints live here. A *fat pipe* (each flow alone limited by the capacity,
no competition) is a per-variable bound, and callers express it as one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from smpy.support import cext

_EPS = 1e-12  # relative tolerance when comparing levels


class Constraint:
    __slots__ = ("id", "capacity", "vars", "data", "_rem", "_use", "_mark", "_nfree", "_keys", "_sum", "_queued")

    def __init__(self, cid: int, capacity: float, data: Any = None) -> None:
        self.id = cid
        self.capacity = capacity
        #: variable -> coefficient (insertion-ordered: deterministic iteration)
        self.vars: dict[Variable, float] = {}
        self.data = data
        self._rem = 0.0
        self._use = 0.0
        self._mark = 0
        self._nfree = 0
        #: class key (see :class:`_Key`; None: a variable of no class) -> its variables here;
        #: counted from the first class-path solve that meets the constraint until it is empty
        #: (None meanwhile: lone flows pay nothing)
        self._keys: dict[_Key | None, int] | None = None
        #: sum of coeff / penalty over ``vars`` in insertion order, as :func:`_start_filling`
        #: sums it, kept while variables are only appended; None: to be summed again
        self._sum: float | None = None
        #: in its system's list of modified constraints (until the next solve)
        self._queued = False

    def __repr__(self) -> str:
        return f"Constraint#{self.id}(C={self.capacity:g}, n={len(self.vars)})"


class Variable:
    """Hashed by identity (the C default, cheaper than a Python ``__hash__`` on the hot
    path): the dicts keyed by variables keep insertion order, so iteration stays
    deterministic; variables are never iterated from a set."""

    __slots__ = ("id", "penalty", "bound", "elements", "value", "data", "_fixed", "_mark", "_key")

    def __init__(self, vid: int, penalty: float, bound: float, data: Any = None) -> None:
        self.id = vid
        self.penalty = penalty
        self.bound = bound  # math.inf when unbounded
        self.elements: list[tuple[Constraint, float]] = []
        self.value = 0.0
        self.data = data
        self._fixed = False
        self._mark = 0
        #: what makes variables alike for the class path (:class:`_Key`); None: no class
        self._key: _Key | None = None

    def __repr__(self) -> str:
        return f"Variable#{self.id}(w={self.penalty:g}, b={self.bound:g}, x={self.value:g})"


def _queue(modified: list[Constraint], c: Constraint) -> None:
    """``c`` into a system's modified constraints, once."""
    if not c._queued:
        c._queued = True
        modified.append(c)


def _cid(c: Constraint) -> int:
    return c.id


def merge_uses(uses: list[tuple[Constraint, float]] | tuple) -> tuple[tuple[Constraint, float], ...]:
    """``uses`` with each constraint once (coefficients summed, in first-use order) and
    non-positive coefficients dropped: what :meth:`System.variable` builds, computed ahead."""
    acc: dict[Constraint, float] = {}
    for c, coeff in uses:
        if coeff > 0.0:
            prev = acc.get(c)
            acc[c] = coeff if prev is None else prev + coeff
    return tuple(acc.items())


#: at most this many cached lone values (routes) per system
_LONE_MAX = 4096


def _lone_value(elements: Any, pen: float, bound: float) -> float:
    """The value of a variable alone in its component, with the arithmetic of
    :meth:`System._solve_component` (bit-identical): it rises to the level
    ``min_c C_c / (a_cv / w_v)`` unless its bound comes first (same relative tolerance), so
    ``x = b`` or ``level / w`` capped at ``b``."""
    if not pen > 0.0:
        return 0.0
    level = math.inf
    for c, coeff in elements:  # the component's constraints, each once
        use = coeff / pen
        if use > 0.0:
            lvl = c.capacity / use
            if lvl < level:
                level = lvl
    if bound != math.inf and bound * pen <= level * (1 + _EPS):
        return bound
    if level == math.inf:
        return math.inf
    x = level / pen
    return bound if x > bound else x


class System:
    """A max-min system; see the module docstring for the math."""

    # all slots (issue 24): the compiled solver (smpy/lmm/_lmmaccel.c) reads them at their
    # offsets, and a method call on a system looks in no instance dict first
    __slots__ = ("solves", "_mark", "_next_id", "_modified", "_lonely", "_lone", "_keyring", "__weakref__")

    def __init__(self) -> None:
        self._next_id = 0
        #: the modified constraints, each once (its ``_queued`` flag), in the order of modification
        self._modified: list[Constraint] = []
        self._lonely: list[Variable] = []  # modified variables with no constraint
        self._mark = 0
        self.solves = 0
        #: id(elements) -> (elements, penalty, bound, value) of variables solved alone: the
        #: value of a lone variable depends on these and the capacities only, and the network
        #: model gives every flow of a route the same ``uses`` tuple (the entry keeps it alive,
        #: so its id is not reused); emptied when a capacity changes
        self._lone: dict[int, tuple] = {}
        #: id(elements) -> the :class:`_Key` last made for them (checked against the elements)
        self._keyring: dict[int, _Key] = {}

    # -- building -----------------------------------------------------------------------
    def constraint(self, capacity: float, data: Any = None) -> Constraint:
        if not capacity > 0.0:
            raise ValueError(f"constraint capacity must be positive, got {capacity!r}")
        self._next_id += 1
        return Constraint(self._next_id, capacity, data)

    def variable(self, penalty: float = 1.0, bound: float = math.inf,
                 uses: list[tuple[Constraint, float]] | tuple = (), data: Any = None,
                 unique: bool = False) -> Variable:
        """A new variable using ``uses`` = [(constraint, coefficient), ...].

        A constraint named twice gets the sum of the coefficients (SimGrid's ``expand``);
        coefficients ``<= 0`` are ignored. ``unique=True`` promises that ``uses`` names
        each constraint once with a positive coefficient (see :func:`merge_uses`), which
        skips that merging (the network model merges once per route).
        """
        self._next_id += 1
        v = Variable(self._next_id, penalty, bound, data)
        modified = self._modified
        if unique:
            # the caller's tuple itself (never mutated: remove() rebinds it): the lone cache's key
            if type(uses) is tuple and penalty > 0.0:
                v.elements = uses
                key = self._keyring.get(id(uses))  # the route's key, most often
                if key is None or key.elements is not uses or key.penalty != penalty or key.bound != bound:
                    key = self._key_of(v)
                v._key = key
                for c, coeff in uses:
                    c.vars[v] = coeff
                    if not c._queued:
                        c._queued = True
                        modified.append(c)
                    keys = c._keys
                    if keys is not None:
                        keys[key] = keys.get(key, 0) + 1
                        total = c._sum
                        if total is not None:
                            c._sum = total + coeff / penalty
            else:
                v.elements = uses if type(uses) is tuple else list(uses)
                for c, coeff in uses:
                    c.vars[v] = coeff
                    _queue(modified, c)
                    _no_class(c)
        elif len(uses) == 1:
            c, coeff = uses[0]
            if coeff > 0.0:
                c.vars[v] = coeff
                v.elements.append((c, coeff))
                _queue(modified, c)
                _no_class(c)
        else:
            acc: dict[Constraint, float] = {}  # constraint -> summed coefficient, in first-use order
            for c, coeff in uses:
                if coeff > 0.0:
                    prev = acc.get(c)
                    acc[c] = coeff if prev is None else prev + coeff
            for c, coeff in acc.items():
                c.vars[v] = coeff
                _queue(modified, c)
                _no_class(c)
            v.elements = list(acc.items())
        if not v.elements:
            self._lonely.append(v)
        return v

    def remove(self, v: Variable) -> bool:
        """Take ``v`` out of the system; returns :attr:`dirty` (whether a solve is due)."""
        key = v._key
        for c, _ in v.elements:
            vars_ = c.vars
            del vars_[v]
            if vars_:  # a constraint left empty shares nothing: no component to re-solve
                _queue(self._modified, c)
                keys = c._keys
                if keys is not None:
                    n = keys[key] - 1
                    if n:
                        keys[key] = n
                    else:
                        del keys[key]
            else:
                c._keys = None
            c._sum = None
        v.elements = []
        v._key = None
        v.value = 0.0
        return bool(self._modified or self._lonely)

    def set_bound(self, v: Variable, bound: float) -> None:
        v.bound = bound
        self._rekey(v)
        self._touch(v)

    def set_penalty(self, v: Variable, penalty: float) -> None:
        v.penalty = penalty
        self._rekey(v)
        for c, _ in v.elements:
            c._sum = None
        self._touch(v)

    def _key_of(self, v: Variable) -> _Key:
        """A class key for a variable whose elements are a tuple and penalty positive: the
        one last made for its elements if it fits, else a new one (variables alike may then
        hold different keys: classes are only split, which the class path allows)."""
        elements = v.elements
        key = self._keyring.get(id(elements))
        if key is None or key.elements is not elements or key.penalty != v.penalty or key.bound != v.bound:
            if len(self._keyring) >= _LONE_MAX:
                self._keyring.clear()
            key = self._keyring[id(elements)] = _Key(elements, v.penalty, v.bound)
        return key

    def _rekey(self, v: Variable) -> None:
        """A new penalty or bound: a new class key, counted on the variable's constraints."""
        old = v._key
        new = v._key = self._key_of(v) if type(v.elements) is tuple and v.elements and v.penalty > 0.0 else None
        for c, _ in v.elements:
            keys = c._keys
            if keys is not None:
                n = keys[old] - 1
                if n:
                    keys[old] = n
                else:
                    del keys[old]
                keys[new] = keys.get(new, 0) + 1

    def set_capacity(self, c: Constraint, capacity: float) -> None:
        c.capacity = capacity
        _queue(self._modified, c)
        self._lone.clear()

    def _touch(self, v: Variable) -> None:
        if v.elements:
            for c, _ in v.elements:
                _queue(self._modified, c)
        else:
            self._lonely.append(v)

    @property
    def dirty(self) -> bool:
        return bool(self._modified or self._lonely)

    # -- solving ------------------------------------------------------------------------
    def solve(self) -> list[Variable]:
        """Re-solve the modified components; return variables whose value changed."""
        changed: list[Variable] = []
        if self._lonely:
            for v in self._lonely:
                if not v.elements:
                    new = v.bound if v.penalty > 0.0 else 0.0
                    if new != v.value:
                        v.value = new
                        changed.append(v)
            self._lonely = []
        modified = self._modified
        if not modified:
            return changed
        self.solves += 1
        self._mark += 1
        mark = self._mark
        self._modified = []
        for c in modified:
            c._queued = False
        # seeds in constraint-id order (ids are distinct)
        seeds = modified if len(modified) == 1 else sorted(modified, key=_cid)
        for seed in seeds:
            if seed._mark == mark:
                continue
            seed_vars = seed.vars
            if not seed_vars:  # an empty constraint is a component of its own: nothing to solve
                seed._mark = mark
                continue
            if len(seed_vars) == 1:  # the common case of a flow alone on its links
                v = next(iter(seed_vars))
                elements = v.elements
                for c, _ in elements:
                    if len(c.vars) != 1:
                        break
                else:  # the component is v and its constraints
                    v._mark = mark
                    for c, _ in elements:
                        c._mark = mark
                    self._solve_single(v, changed)
                    continue
            if len(seed_vars) >= _CLASS_MIN:  # maybe many flows of few routes: the class path
                comp = _component_classes(seed, mark)
                if comp is not None:
                    _solve_classes(*comp, changed)
                    continue
            cnsts, variables = self._component(seed, mark)
            if len(variables) == 1:
                self._solve_single(variables[0], changed)
            else:
                self._solve_component(cnsts, variables, changed)
        return changed

    def _solve_single(self, v: Variable, changed: list[Variable]) -> None:
        """:meth:`_solve_component` for a component of one variable (see :func:`_lone_value`);
        the value is reused while the variable's constraints, coefficients, penalty, bound and
        the capacities are those it was computed from (the same floats: bit-identical)."""
        old = v.value
        v._fixed = True
        pen = v.penalty
        bound = v.bound
        elements = v.elements
        lone = self._lone
        hit = lone.get(id(elements))
        if hit is not None and hit[0] is elements and hit[1] == pen and hit[2] == bound:
            x = hit[3]
        else:
            x = _lone_value(elements, pen, bound)
            if type(elements) is tuple and pen > 0.0 and bound > 0.0:  # (no signed zeros in keys)
                if len(lone) >= _LONE_MAX:
                    lone.clear()
                lone[id(elements)] = (elements, pen, bound, x)
        v.value = x
        if x != old:
            changed.append(v)

    @staticmethod
    def _component(seed: Constraint, mark: int) -> tuple[list[Constraint], list[Variable]]:
        seed._mark = mark
        cnsts = [seed]
        variables: list[Variable] = []
        i = 0
        while i < len(cnsts):
            c = cnsts[i]
            i += 1
            for v in c.vars:
                if v._mark != mark:
                    v._mark = mark
                    variables.append(v)
                    for c2, _ in v.elements:
                        if c2._mark != mark:
                            c2._mark = mark
                            cnsts.append(c2)
        return cnsts, variables

    @staticmethod
    def _solve_component(cnsts: list[Constraint], variables: list[Variable],
                         changed: list[Variable]) -> None:
        """Progressive filling of one connected component (the module docstring): each round
        fixes the variables of the most limiting level — a bound, or the constraints that
        saturate first — until none is free."""
        old = [v.value for v in variables]
        free = _start_filling(cnsts, variables)
        active = [c for c in cnsts if c._use > 0.0]
        bounded = sorted((v for v in free if v.bound != math.inf), key=lambda v: (v.bound * v.penalty, v.id))
        bi = 0
        nfree = len(free)
        while nfree:
            level = math.inf
            for c in active:
                lvl = c._rem / c._use
                if lvl < level:
                    level = lvl
            while bi < len(bounded) and bounded[bi]._fixed:
                bi += 1
            if bi < len(bounded) and bounded[bi].bound * bounded[bi].penalty <= level * (1 + _EPS):
                to_fix, bi = _bounded_level(bounded, bi)
            else:
                to_fix = _saturated_level(active, free, level)
            nfree -= _fix(to_fix)
            active = [c for c in active if c._nfree > 0]
        for v, x0 in zip(variables, old):
            if v.value != x0:
                changed.append(v)


# -- the steps of a progressive filling (MaxMinSystem._solve_component) ----------------------
def _start_filling(cnsts: list[Constraint], variables: list[Variable]) -> list[Variable]:
    """Variables of penalty 0 are fixed at 0, the others free; each constraint starts with its
    whole capacity and the weighted count of its free variables. Returns the free ones."""
    free: list[Variable] = []
    for v in variables:
        if v.penalty > 0.0:
            v._fixed = False
            free.append(v)
        else:
            v._fixed = True
            v.value = 0.0
    for c in cnsts:
        c._rem = c.capacity
        use = 0.0
        n = 0
        for v, coeff in c.vars.items():
            if not v._fixed:
                use += coeff / v.penalty
                n += 1
        c._use = use
        c._nfree = n
    return free


def _bounded_level(bounded: list[Variable], bi: int) -> tuple[list[tuple[Variable, float]], int]:
    """The bound reached before any constraint saturates: every free variable at that level
    (bound × penalty) is fixed at its bound; returns them and the next index in ``bounded``."""
    to_fix: list[tuple[Variable, float]] = []
    blevel = bounded[bi].bound * bounded[bi].penalty
    while bi < len(bounded) and bounded[bi].bound * bounded[bi].penalty <= blevel * (1 + _EPS):
        v = bounded[bi]
        bi += 1
        if not v._fixed:
            to_fix.append((v, v.bound))
    return to_fix, bi


def _saturated_level(active: list[Constraint], free: list[Variable], level: float
                     ) -> list[tuple[Variable, float]]:
    """The constraints that saturate at ``level`` fix their free variables at level / penalty
    (at most their bound); with no active constraint, the free variables are unbounded."""
    to_fix: list[tuple[Variable, float]] = []
    if level == math.inf:  # free variables with no active constraint and no bound
        for v in free:
            if not v._fixed:
                to_fix.append((v, math.inf))
        return to_fix
    thresh = level * (1 + _EPS)
    for c in active:
        if c._rem / c._use <= thresh:
            for v in c.vars:
                if not v._fixed:
                    x = level / v.penalty
                    if x > v.bound:
                        x = v.bound
                    to_fix.append((v, x))
    return to_fix


def _fix(to_fix: list[tuple[Variable, float]]) -> int:
    """Fix each variable at its value and take its use out of its constraints; returns how
    many were fixed (a variable may be listed twice, by two saturated constraints)."""
    fixed = 0
    for v, x in to_fix:
        if v._fixed:
            continue
        v._fixed = True
        v.value = x
        fixed += 1
        inv = 1.0 / v.penalty
        for c, coeff in v.elements:
            c._rem -= coeff * x
            if c._rem < 0.0:
                c._rem = 0.0
            c._use -= coeff * inv
            c._nfree -= 1
    return fixed



# -- the same filling, one class of identical variables at a time --------------------------------
#: components of at least this many variables try the class path ...
_CLASS_MIN = 8
#: ... and take it when they have at most one class per this many variables
_CLASS_RATIO = 4


class _Key:
    """What makes variables alike in a filling: the same ``elements`` object (the network
    model's route tuple), penalty (positive) and bound. Hashed by identity: the system hands
    out one per (elements, penalty, bound)."""

    __slots__ = ("elements", "penalty", "bound")

    def __init__(self, elements: tuple, penalty: float, bound: float) -> None:
        self.elements = elements
        self.penalty = penalty
        self.bound = bound


def _no_class(c: Constraint) -> None:
    """A variable of no class (built from a list of uses) on ``c``."""
    keys = c._keys
    if keys is not None:
        keys[None] = keys.get(None, 0) + 1
    c._sum = None


class _Class:
    """The variables of one key in a component: the filling treats them alike (fixed in the
    same round, at the same value)."""

    __slots__ = ("elements", "coeffs", "penalty", "bound", "blevel", "n", "fixed", "x", "source")

    def __init__(self, key: _Key, n: int) -> None:
        self.elements = key.elements
        self.coeffs = dict(key.elements)
        self.penalty = key.penalty
        self.bound = key.bound
        self.blevel = key.bound * key.penalty
        self.n = n
        self.fixed = False
        self.x = 0.0
        #: the saturated constraint that fixed the class (None: fixed at its bound)
        self.source: Constraint | None = None


#: the class path gives up on a component with more classes than this
_CLASS_MAX = 64


def _new_keys(c: Constraint, classes: dict) -> list[_Key | None]:
    """The keys on ``c`` not in ``classes``, in the order of their first variables on ``c``
    (counting them first if nobody does yet)."""
    keys = c._keys
    if keys is None:
        keys = c._keys = {}
        for v in c.vars:
            key = v._key
            keys[key] = keys.get(key, 0) + 1
    new = [key for key in keys if key not in classes]
    if len(new) > 1:
        pending = set(new)
        new = []
        for v in c.vars:
            key = v._key
            if key in pending:
                pending.discard(key)
                new.append(key)
                if not pending:
                    break
    return new


def _component_classes(seed: Constraint, mark: int
                       ) -> tuple[list[Constraint], list[Variable], dict[_Key, _Class]] | None:
    """:meth:`System._component` (the same constraints and variables, in the same order) found
    class by class from the constraints' key counts, with the classes in first-seen order; None,
    having marked nothing, when the component does not fit the class path (a variable of no
    class, more than one class per ``_CLASS_RATIO`` variables)."""
    cnsts = [seed]
    seen = {seed}
    classes: dict[_Key, _Class] = {}
    parts: list[tuple[Constraint, list | None]] = []
    i = 0
    while i < len(cnsts):
        c = cnsts[i]
        i += 1
        new = _new_keys(c, classes)
        if not new:
            continue
        keys = c._keys
        for key in new:
            if key is None or len(classes) >= _CLASS_MAX:
                return None
            classes[key] = _Class(key, keys[key])
            for c2, _ in key.elements:
                if c2 not in seen:
                    seen.add(c2)
                    cnsts.append(c2)
        parts.append((c, new if len(new) < len(keys) else None))
    variables: list[Variable] = []
    for c, new in parts:  # the variables met first on c: those of its new classes
        if new is None:
            variables.extend(c.vars)
        else:
            some = set(new)
            variables.extend([v for v in c.vars if v._key in some])
    if _CLASS_RATIO * len(classes) > len(variables):
        return None
    for c in cnsts:
        c._mark = mark
    return cnsts, variables, classes


class _Filling:
    """The state of one class-wise filling (:func:`_solve_classes`)."""

    __slots__ = ("classes", "variables", "users")

    def __init__(self, classes: dict[_Key, _Class], variables: list[Variable]) -> None:
        self.classes = classes
        self.variables = variables
        #: constraint -> the classes crossing it
        self.users: dict[Constraint, list[_Class]] = {}
        for k in classes.values():
            for c, _ in k.elements:
                self.users.setdefault(c, []).append(k)


def _solve_classes(cnsts: list[Constraint], variables: list[Variable], classes: dict[_Key, _Class],
                   changed: list[Variable]) -> None:
    """:meth:`System._solve_component` for a component whose variables fall into few classes of
    identical ones (the flows of one route; from :func:`_component_classes`): the same rounds,
    levels and values, bit for bit.

    Every quantity the filling reads is a function of the classes, except the order of the
    floating-point sums: the initial usage of a constraint is summed over its variables in
    insertion order as in :func:`_start_filling` (kept from solve to solve while variables are
    only added), and the capacity left and usage of a constraint still active after a round are
    decreased variable by variable in the order :func:`_fix` would use (a run of identical terms
    when one class of the round crosses it)."""
    st = _Filling(classes, variables)
    for c in cnsts:
        c._rem = c.capacity
        use = c._sum
        if use is None:
            use = c._sum = _usage_sum(c)
        c._use = use
        c._nfree = len(c.vars)
    active = [c for c in cnsts if c._use > 0.0]
    bounded = sorted((k for k in classes.values() if k.bound != math.inf), key=lambda k: k.blevel)
    bi = 0
    free = len(classes)
    while free:
        level = math.inf
        for c in active:
            lvl = c._rem / c._use
            if lvl < level:
                level = lvl
        while bi < len(bounded) and bounded[bi].fixed:
            bi += 1
        if bi < len(bounded) and bounded[bi].blevel <= level * (1 + _EPS):
            round_, bi = _class_bounded(bounded, bi)
        else:
            round_ = _class_saturated(st, active, level)
        free -= len(round_)
        active = _class_fix(st, active, round_)
    xs = {key: k.x for key, k in classes.items()}
    for v in variables:
        x = xs[v._key]
        if v.value != x:
            v.value = x
            changed.append(v)


#: (term, n) -> 0.0 + term + ... + term (n terms, left to right): the usage sum of a constraint
#: crossed by one class
_RUNS: dict[tuple[float, int], float] = {}


def _usage_sum(c: Constraint) -> float:
    """:math:`U_c` as :func:`_start_filling` sums it (every variable free): in insertion order;
    with one class on ``c``, n equal terms (memoized)."""
    keys = c._keys
    if keys is not None and len(keys) == 1:
        for key, n in keys.items():
            if key is not None:
                term = dict(key.elements)[c] / key.penalty
                use = _RUNS.get((term, n))
                if use is None:
                    use = 0.0
                    for _ in range(n):
                        use += term
                    if len(_RUNS) >= _LONE_MAX:
                        _RUNS.clear()
                    _RUNS[(term, n)] = use
                return use
    use = 0.0
    for v, coeff in c.vars.items():
        use += coeff / v.penalty
    return use


def _class_bounded(bounded: list[_Class], bi: int) -> tuple[list[_Class], int]:
    """:func:`_bounded_level` for classes: those at the first bound level, fixed at their bound."""
    round_: list[_Class] = []
    blevel = bounded[bi].blevel
    while bi < len(bounded) and bounded[bi].blevel <= blevel * (1 + _EPS):
        k = bounded[bi]
        bi += 1
        if not k.fixed:
            k.fixed = True
            k.x = k.bound
            round_.append(k)
    return round_, bi


def _class_saturated(st: _Filling, active: list[Constraint], level: float) -> list[_Class]:
    """:func:`_saturated_level` for classes: the free classes of the constraints saturating at
    ``level`` (all, at infinity, when none is active)."""
    round_: list[_Class] = []
    if level == math.inf:
        for k in st.classes.values():
            if not k.fixed:
                k.fixed = True
                k.x = math.inf
                round_.append(k)
        return round_
    thresh = level * (1 + _EPS)
    for c in active:
        if c._rem / c._use <= thresh:
            for k in st.users[c]:
                if not k.fixed:
                    k.fixed = True
                    k.source = c
                    x = level / k.penalty
                    k.x = k.bound if x > k.bound else x
                    round_.append(k)
    return round_


def _fix_order(st: _Filling, round_: list[_Class]) -> list[_Class]:
    """The class of each variable of ``round_`` in the order :func:`_fix` fixes them: by
    (bound level, id) for bounds, else along the saturated constraints' variables."""
    where = st.classes
    fixed = set(map(id, round_))
    if round_[0].source is None:
        vs = sorted((v for v in st.variables if id(where[v._key]) in fixed),
                    key=lambda v: (v.bound * v.penalty, v.id))
        return [where[v._key] for v in vs]
    order: list[_Class] = []
    seen: set[int] = set()
    for k in round_:
        c = k.source
        if id(c) in seen:
            continue
        seen.add(id(c))
        for v in c.vars:
            kv = where[v._key]
            if kv.source is c and id(kv) in fixed:
                order.append(kv)
    return order


def _class_fix(st: _Filling, active: list[Constraint], round_: list[_Class]) -> list[Constraint]:
    """:func:`_fix` for the classes of a round, on the constraints that stay active (the others
    are never read again); returns those."""
    order: list[_Class] | None = None
    still: list[Constraint] = []
    for c in active:
        crossing = [k for k in st.users[c] if k in round_]
        if not crossing:
            still.append(c)
            continue
        c._nfree -= sum(k.n for k in crossing)
        if c._nfree <= 0:
            continue
        still.append(c)
        rem = c._rem
        use = c._use
        if len(crossing) == 1:
            k = crossing[0]
            coeff = k.coeffs[c]
            d = coeff * k.x
            du = coeff * (1.0 / k.penalty)
            for _ in range(k.n):
                rem -= d
                if rem < 0.0:
                    rem = 0.0
                use -= du
        else:
            if order is None:
                order = _fix_order(st, round_)
            for k in order:
                coeff = k.coeffs.get(c)
                if coeff is not None:
                    rem -= coeff * k.x
                    if rem < 0.0:
                        rem = 0.0
                    use -= coeff * (1.0 / k.penalty)
        c._rem = rem
        c._use = use
    return still


# -- the compiled twin (smpy/lmm/_lmmaccel.c) -------------------------------------------------
def _compiled() -> list[tuple[Any, Any]]:
    """``System.solve``, ``variable`` and ``remove`` with their compiled twins, swapped in with the rest of the compiled path
    (``smpy/accel``, :mod:`smpy.kernel.accel`); none when ``_lmmaccel.c`` cannot be built."""
    mod, _why = cext.load(Path(__file__).with_name("_lmmaccel.c"), "smpy.lmm._lmmaccel")
    if mod is None:
        return []
    py = System.__dict__
    methods = mod.setup(System, Constraint, Variable, _Key, py["variable"], py["remove"])
    return [(py[name], methods[name]) for name in ("solve", "variable", "remove")]


cext.register(_compiled)
