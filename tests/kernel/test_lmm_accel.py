"""The compiled max-min solver (smpy/lmm/_lmmaccel.c) against the Python reference
(smpy/lmm/maxmin.py): seeded random systems played both ways must give the same values, bit
for bit, and the same changed lists, in the same order, after every solve. Whole runs both ways
are in tests/kernel/test_accel.py's twins (the solver is swapped with the rest of the compiled
path). Skipped only when the extension cannot be built here (no C compiler or headers)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from smpy.kernel import accel
from smpy.lmm import maxmin
from smpy.lmm.maxmin import Constraint, System, Variable, merge_uses

PAIRS = maxmin._compiled()
pytestmark = pytest.mark.skipif(not PAIRS, reason="the compiled solver cannot be built here")
#: method name -> compiled descriptor / Python function
C = {py.__name__: c for py, c in PAIRS}
PY = {name: System.__dict__[name] for name in ("solve", "variable", "remove")}
COMPILED = C.get("solve")
PYTHON = PY["solve"]


def _scenario(seed: int) -> tuple[list[float], list[tuple], list[tuple]]:
    """Constraints, routes (shared ``uses`` tuples, as the network model builds them) and a
    sequence of operations: variables added (route tuples, lists with repeated constraints,
    no constraint at all), removed, re-bounded, re-weighted, capacities changed, solves."""
    rng = random.Random(seed)
    ncnst = rng.randint(1, 3 if seed % 5 == 0 else 14)
    caps = [rng.choice([1.25e9, 1.25e10, 1e6, rng.uniform(1.0, 1e9)]) for _ in range(ncnst)]
    routes = []
    for _ in range(rng.randint(1, 10)):
        cs = rng.sample(range(ncnst), rng.randint(1, min(ncnst, 5)))
        coeffs = [rng.choice([1.0, 0.05, 1.05, rng.uniform(0.01, 2.0)]) for _ in cs]
        pens = [rng.choice([1.0, 1.0e-4 + 7.02e-6, rng.uniform(1e-6, 10.0), 0.0 if rng.random() < 0.1 else 1.0])
                for _ in range(rng.randint(1, 2))]
        bounds = [rng.choice([math.inf, 4.19e10, 1e6, 1e6, caps[cs[0]] / rng.randint(1, 40), rng.uniform(1e3, 1e9)])
                  for _ in range(rng.randint(1, 2))]
        routes.append((list(zip(cs, coeffs)), pens, bounds))
    ops: list[tuple] = []
    live = 0
    for _ in range(rng.randint(20, 250)):
        u = rng.random()
        r = rng.randrange(len(routes))
        if live and u < 0.30:
            ops.append(("del", rng.randrange(live)))
            live -= 1
        elif live and u < 0.36:
            what = rng.choice(["bound", "pen"])
            pick = routes[r][2] if what == "bound" else routes[r][1]
            ops.append((what, rng.randrange(live), rng.choice(pick)))
        elif u < 0.38:
            ops.append(("cap", rng.randrange(ncnst), rng.choice([1e6, 1.25e9, rng.uniform(1.0, 1e9)])))
        elif u < 0.42:  # a list of uses naming a constraint twice (merged), as the CPU model does
            ops.append(("list", r, rng.choice([1.0, 2.5])))
            live += 1
        elif u < 0.43:  # no constraint: a lonely variable, at its bound
            ops.append(("lonely", rng.choice([math.inf, 1e6]), rng.choice([1.0, 0.0])))
            live += 1
        else:
            ops.append(("add", r, rng.randrange(len(routes[r][1])), rng.randrange(len(routes[r][2]))))
            live += 1
        if rng.random() < 0.5:
            ops.append(("solve",))
    ops.append(("solve",))
    return caps, routes, ops


def _play(caps, routes, ops, solve, impl=None) -> list:
    """The operations on a fresh system, ``solve`` for the solves and ``impl`` (a dict of
    ``variable`` and ``remove``: compiled or Python; the Python methods by default) for the rest;
    the changed lists, every live value (bits and type) and the solve count after each solve."""
    impl = impl or PY
    variable, remove = impl["variable"], impl["remove"]
    s = System()
    cs = [s.constraint(c) for c in caps]
    uses = [merge_uses([(cs[i], a) for i, a in r[0]]) for r in routes]
    live: list[Variable] = []
    trace = []
    n = 0
    for op in ops:
        kind = op[0]
        if kind == "add":
            _, r, p, b = op
            n += 1
            live.append(variable(s, routes[r][1][p], routes[r][2][b], uses[r], n, True))
        elif kind == "list":
            n += 1
            twice = list(uses[op[1]]) + [(uses[op[1]][0][0], op[2])]
            live.append(variable(s, 1.0, math.inf, twice, data=n))
        elif kind == "lonely":
            n += 1
            live.append(variable(s, op[2], op[1], (), n, True))
        elif kind == "del":
            assert remove(s, live.pop(op[1])) == s.dirty
        elif kind == "bound":
            s.set_bound(live[op[1]], op[2])
        elif kind == "pen":
            s.set_penalty(live[op[1]], op[2])
        elif kind == "cap":
            s.set_capacity(cs[op[1]], op[2])
        else:
            queued = [c.id for c in s._modified]
            assert sorted(queued) == sorted(c.id for c in cs if c._queued)  # each modified constraint once
            changed = solve(s)
            assert s._modified == [] and not any(c._queued for c in cs)
            trace.append((queued, [v.data for v in changed],
                          [(v.data, type(v.value).__name__, float(v.value).hex()) for v in live], s.solves,
                          s._next_id))
    for c in cs:  # the class path's bookkeeping agrees with the variables
        if c._keys is not None:
            assert c._keys == dict(Counter(v._key for v in c.vars))
        if c._sum is not None:
            total = 0.0
            for v, coeff in c.vars.items():
                total += coeff / v.penalty
            assert c._sum == total
    return trace


@pytest.mark.parametrize("seed", range(400))
def test_compiled_solver_equals_python(seed):
    caps, routes, ops = _scenario(seed)
    assert _play(caps, routes, ops, COMPILED) == _play(caps, routes, ops, PYTHON)


@pytest.mark.parametrize("seed", range(40))
def test_compiled_solver_equals_the_general_filling(seed, monkeypatch):
    """Against the Python general filling alone (no class path, no lone-value cache)."""
    caps, routes, ops = _scenario(seed)
    compiled = _play(caps, routes, ops, COMPILED)
    monkeypatch.setattr(maxmin, "_CLASS_MIN", 1 << 30)
    monkeypatch.setattr(maxmin, "_LONE_MAX", 0)
    assert compiled == _play(caps, routes, ops, PYTHON)


@pytest.mark.parametrize("seed", range(300))
def test_compiled_variable_and_remove_equal_python(seed):
    """The compiled variable and remove, with each solver: the Python class path reads the
    bookkeeping they keep (class keys and counts, usage sums)."""
    caps, routes, ops = _scenario(seed)
    reference = _play(caps, routes, ops, PYTHON)
    assert _play(caps, routes, ops, PYTHON, C) == reference
    assert _play(caps, routes, ops, COMPILED, C) == reference


@pytest.mark.parametrize("seed", range(40))
def test_compiled_variable_with_a_churning_keyring(seed, monkeypatch):
    """A keyring of at most two keys, cleared and refilled all the time: the compiled variable
    (which remembers the keys it read while the keyring is unchanged) gives Python's keys."""
    monkeypatch.setattr(maxmin, "_LONE_MAX", 2)
    caps, routes, ops = _scenario(seed)
    reference = _play(caps, routes, ops, PYTHON)
    assert _play(caps, routes, ops, PYTHON, C) == reference
    assert _play(caps, routes, ops, COMPILED, C) == reference


def test_solve_leaves_a_held_list_of_modified_constraints_alone():
    """The compiled solve reuses the list it read as the next ``_modified`` only when nobody else
    holds it: a list held elsewhere keeps its constraints, as after the Python solve."""
    for solve in (COMPILED, PYTHON):
        s = System()
        c, d = s.constraint(1.0), s.constraint(2.0)
        s.variable(1.0, math.inf, ((c, 1.0),), None, True)
        held = s._modified
        assert solve(s) and held == [c] and s._modified == [] and s._modified is not held
        s.variable(1.0, math.inf, ((d, 1.0), (c, 1.0)), None, True)
        assert s._modified == [d, c] and solve(s) and s._modified == [] and held == [c]
        assert not c._queued and not d._queued


def test_compiled_variable_is_pythons():
    s, t = System(), System()
    for sys_, variable in ((s, C["variable"]), (t, PY["variable"])):
        c = sys_.constraint(3.0)
        uses = ((c, 1.0),)
        v = variable(sys_, 2.0, 5.0, uses, "d", True)
        assert (v.id, v.penalty, v.bound, v.elements, v.value, v.data, v._fixed, v._mark) == \
            (2, 2.0, 5.0, uses, 0.0, "d", False, 0)
        assert v._key.elements is uses and c.vars == {v: 1.0} and sys_._modified == [c] and c._queued
        w = variable(sys_, penalty=1.0, uses=[(c, 1.0), (c, 2.0)])  # keywords, a list: the Python method
        assert w.elements == [(c, 3.0)] and w._key is None
        assert variable(sys_, 1.0, 4.0, (), None, True) in sys_._lonely
    with pytest.raises(TypeError):
        C["variable"](s, 1.0, 1.0, ((1, 2),), None, True)


@pytest.mark.parametrize("seed", range(60))
def test_paths_alternate_on_one_system(seed):
    """The compiled and the Python solve take turns on one system: the marks and the class
    bookkeeping stay consistent (the same values as the Python solve alone)."""
    caps, routes, ops = _scenario(seed)
    turn = iter(range(1 << 30))
    alternate = _play(caps, routes, ops, lambda s: (COMPILED if next(turn) % 2 else PYTHON)(s))
    assert alternate == _play(caps, routes, ops, PYTHON)


def _lone_trace(solve) -> list:
    """Variables alone on their constraints (the compiled solve's shortcut; Python's
    _solve_single) of every shape: the bound reached first, the level first, the level equal to
    the bound, no bound, a reverse coefficient; each then joined by a second variable (the
    general filling) that leaves again, and removed."""
    s = System()
    a, b = s.constraint(1.25e9), s.constraint(1e6)
    cases = [(1.0, math.inf, ((a, 1.0), (b, 0.05))), (2.5, 1e6, ((a, 1.0),)), (1.0, 1e6, ((b, 1.0),)),
             (1e-4 + 7.02e-6, 4.19e10, ((a, 1.05), (b, 1.0))), (0.3, 2e7, ((b, 0.05), (a, 1.0))),
             (3.0, math.inf, ((a, 0.7),))]
    trace = []
    for i, (pen, bound, uses) in enumerate(cases):
        v = s.variable(pen, bound, uses, data=i, unique=True)
        for step in range(4):
            if step == 1:
                w = s.variable(1.0, math.inf, ((a, 1.0), (b, 1.0)), data="w", unique=True)
            elif step == 2:
                s.remove(w)
            elif step == 3:
                s.remove(v)
            changed = solve(s)
            trace.append(([x.data for x in changed], type(v.value).__name__, float(v.value).hex(), v._mark,
                          a._mark, b._mark, s.solves))
    return trace


def test_lone_variables_the_same():
    trace = _lone_trace(COMPILED)
    assert trace == _lone_trace(PYTHON)
    assert trace[0][0] == [0] and trace[8][2] == 1e6.hex()  # values were set: the cases ran


def _fat_tree(nflows: int, seed: int):
    """Many flows with distinct routes over a two-level tree (node up/down links, switch
    uplinks): one large component, as an allgather puts on a fat tree."""
    rng = random.Random(seed)
    s = System()
    nodes, switches = 64, 8
    up = [s.constraint(1.25e9) for _ in range(nodes)]
    down = [s.constraint(1.25e9) for _ in range(nodes)]
    sw_up = [s.constraint(1.25e9 * rng.choice([1, 2])) for _ in range(switches)]
    sw_down = [s.constraint(1.25e9) for _ in range(switches)]
    flows = []
    for _ in range(nflows):
        a, b = rng.sample(range(nodes), 2)
        path = [(up[a], 1.0), (down[b], 1.0)]
        if a // 8 != b // 8:
            path += [(sw_up[a // 8], 1.0), (sw_down[b // 8], 1.0), (down[a], 0.05)]
        flows.append(merge_uses(path))
    return s, flows, rng


def test_large_component_the_same_with_churn():
    traces = []
    for solve in (COMPILED, PYTHON):
        s, flows, rng = _fat_tree(600, 1)
        live = []
        trace = []
        for i, uses in enumerate(flows):
            live.append(s.variable(1.0, rng.choice([math.inf, 3e8]), uses, data=i, unique=True))
            if i % 3 == 0:
                trace.append([(v.data, v.value.hex()) for v in solve(s)])
            if i % 7 == 0 and len(live) > 50:
                s.remove(live.pop(rng.randrange(len(live))))
        while live:
            s.remove(live.pop(rng.randrange(len(live))))
            trace.append([(v.data, v.value.hex()) for v in solve(s)])
        traces.append(trace)
    assert traces[0] == traces[1]
    assert sum(map(len, traces[0])) > 10_000  # the churn did move shares


def _shared_routes_trace(solve) -> list:
    """A large component whose flows share few route tuples (as the network model's flows of a
    route do: the compiled solve reads a route's tuple once per component), with churn, and
    between solves a coefficient changed in a constraint's ``vars`` in place (the same keys, the
    same size: the compiled solve's copy of the dict's entries must be read again)."""
    s, flows, rng = _fat_tree(40, 7)
    routes = flows[:12]
    live: list[Variable] = []
    trace = []
    for i in range(900):
        uses = routes[rng.randrange(len(routes))]
        live.append(s.variable(rng.choice([1.0, 2.5]), rng.choice([math.inf, 3e8, 6e8]), uses, data=i, unique=True))
        if live and rng.random() < 0.4:
            s.remove(live.pop(rng.randrange(len(live))))
        if i % 50 == 49:
            v = live[rng.randrange(len(live))]
            c, coeff = v.elements[0]
            c.vars[v] = coeff * 1.5  # the dict alone: what the solves read of c
            s._modified.append(c) if not c._queued else None
            c._queued = True
        if i % 2:
            trace.append([(v.data, v.value.hex()) for v in solve(s)])
    trace.append([(v.data, v.value.hex()) for v in solve(s)])
    return trace


def test_shared_routes_and_a_dict_changed_in_place_the_same():
    trace = _shared_routes_trace(COMPILED)
    assert trace == _shared_routes_trace(PYTHON)
    assert sum(map(len, trace)) > 2000


def test_a_coefficient_that_changes_the_dict_is_an_error():
    """A coefficient read through ``__float__`` that changes the constraint's dict: a clear
    RuntimeError (no crash, nothing remembered of the half-read dict)."""
    s = System()
    c = s.constraint(1.0)
    v = s.variable(1.0, math.inf, [(c, 1.0)])
    w = s.variable(1.0, math.inf, [(c, 1.0)])

    class Sneaky:
        def __float__(self):
            c.vars.pop(w, None)
            return 1.0

    c.vars[v] = Sneaky()
    s._modified.append(c)
    with pytest.raises(RuntimeError, match="changed while read"):
        COMPILED(s)


def test_errors_are_pythons():
    s = System()
    c = s.constraint(1.0)
    s.variable(1.0, math.inf, [(c, 1.0)])
    c.vars = []  # not a dict: one clear TypeError, no crash
    s._modified.append(c)
    with pytest.raises(TypeError, match="vars must be a dict"):
        COMPILED(s)


def test_accel_use_swaps_the_solver():
    assert System.__dict__["solve"] is PYTHON
    if not accel.use(True):
        pytest.skip(f"the kernel's accelerator cannot be built here: {accel.why()}")
    try:
        assert type(System.__dict__["solve"]).__name__ == "method_descriptor"
        s = System()
        c = s.constraint(2.0)
        v = s.variable(1.0, math.inf, [(c, 1.0)])
        w = s.variable(1.0, math.inf, [(c, 1.0)])
        assert s.solve() == [v, w] and v.value == w.value == 1.0
    finally:
        accel.use(False)
    assert System.__dict__["solve"] is PYTHON
    assert isinstance(Constraint(1, 1.0), Constraint)


def test_class_path_reached_with_the_compiled_bookkeeping(class_path_taken):
    """The scenarios do take the Python class path on variables made by the compiled
    ``variable`` (else the equality above says nothing about its bookkeeping)."""
    taken = class_path_taken
    for seed in range(100):
        _play(*_scenario(seed), PYTHON, C)
    assert sum(taken) > 50
