"""Max-min solver: the class path (components of many identical variables) gives the general
progressive filling's values and changed lists bit for bit, on seeded random flow sets."""

import math
import random
from collections import Counter

import pytest

from smpy.lmm import maxmin
from smpy.lmm.maxmin import System, merge_uses


def _scenario(seed: int):
    """A list of operations on a system: constraints, routes (shared ``uses`` tuples, as the
    network model builds them), then variables added and removed over time."""
    rng = random.Random(seed)
    ncnst = rng.randint(1, 6)
    caps = [rng.choice([1.25e9, 1.25e10, 1e6, rng.uniform(1.0, 1e9)]) for _ in range(ncnst)]
    nroutes = rng.randint(1, 4)
    routes = []
    for _ in range(nroutes):
        k = rng.randint(1, ncnst)
        cs = rng.sample(range(ncnst), k)
        coeffs = [rng.choice([1.0, 0.05, 1.05, rng.uniform(0.01, 2.0)]) for _ in cs]
        pens = [rng.choice([1.0, 1.0e-4 + 7.02e-6, rng.uniform(1e-6, 10.0)]) for _ in range(rng.randint(1, 2))]
        bounds = [rng.choice([math.inf, 4.19e10, 1e6, 1e6, caps[cs[0]] / rng.randint(1, 40), rng.uniform(1e3, 1e9)])
                  for _ in range(rng.randint(1, 2))]
        routes.append((list(zip(cs, coeffs)), pens, bounds))
    ops = []
    live = 0
    for _ in range(rng.randint(20, 160)):
        u = rng.random()
        if live and u < 0.35:
            ops.append(("del", rng.randrange(live)))
            live -= 1
        elif live and u < 0.40:  # a new bound or penalty: the variable changes class
            r = rng.randrange(nroutes)
            what = rng.choice(["bound", "pen"])
            pick = routes[r][2] if what == "bound" else routes[r][1]
            ops.append((what, rng.randrange(live), rng.choice(pick)))
        elif u < 0.43:  # a variable of no class (a list of uses), as the CPU model builds them
            ops.append(("list", rng.randrange(nroutes)))
            live += 1
        else:
            r = rng.randrange(nroutes)
            ops.append(("add", r, rng.randrange(len(routes[r][1])), rng.randrange(len(routes[r][2]))))
            live += 1
        if rng.random() < 0.6:
            ops.append(("solve",))
    ops.append(("solve",))
    return caps, routes, ops


def _play(caps, routes, ops):
    s = System()
    cs = [s.constraint(c) for c in caps]
    uses = [merge_uses([(cs[i], a) for i, a in r[0]]) for r in routes]
    live = []
    trace = []
    n = 0
    for op in ops:
        if op[0] == "add":
            _, r, p, b = op
            n += 1
            live.append(s.variable(routes[r][1][p], routes[r][2][b], uses[r], data=n, unique=True))
        elif op[0] == "list":
            n += 1
            live.append(s.variable(1.0, math.inf, list(uses[op[1]]), data=n))
        elif op[0] == "del":
            s.remove(live.pop(op[1]))
        elif op[0] == "bound":
            s.set_bound(live[op[1]], op[2])
        elif op[0] == "pen":
            s.set_penalty(live[op[1]], op[2])
        else:
            changed = s.solve()
            trace.append(([v.data for v in changed], [(v.data, v.value.hex()) for v in live]))
    for c in cs:  # the bookkeeping the class path reads agrees with the variables
        if c._keys is not None:
            assert c._keys == dict(Counter(v._key for v in c.vars))
        if c._sum is not None:
            assert c._keys is not None
            total = 0.0
            for v, coeff in c.vars.items():
                total += coeff / v.penalty
            assert c._sum == total
    return trace


@pytest.mark.parametrize("seed", range(300))
def test_class_path_equals_general_filling(seed, monkeypatch):
    caps, routes, ops = _scenario(seed)
    fast = _play(caps, routes, ops)
    monkeypatch.setattr(maxmin, "_CLASS_MIN", 1 << 30)
    general = _play(caps, routes, ops)
    assert fast == general


def test_class_path_is_taken(class_path_taken):
    """The scenarios above do reach the class path (else the equality says nothing)."""
    taken = class_path_taken
    for seed in range(300):
        _play(*_scenario(seed))
    assert sum(taken) > 300


def test_two_routes_with_cross_traffic_share_as_expected():
    # 40 flows each way on two links with 0.05 reverse coefficients: equal split per direction
    s = System()
    up, down = s.constraint(1.25e9), s.constraint(1.25e9)
    fwd = merge_uses([(up, 1.0), (down, 0.05)])
    back = merge_uses([(down, 1.0), (up, 0.05)])
    vs = [s.variable(1.0, math.inf, fwd if i % 2 else back, unique=True) for i in range(80)]
    s.solve()
    x = 1.25e9 / (40 * 1.05)
    for v in vs:
        assert v.value == pytest.approx(x, rel=1e-12)
