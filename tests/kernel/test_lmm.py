"""Max-min solver: small systems written out with their expected shares."""

import math

import pytest

from smpy.lmm import System


def test_single_constraint_equal_share():
    # C = 10, three flows of equal weight: each gets 10/3.
    s = System()
    c = s.constraint(10.0)
    vs = [s.variable(1.0, uses=[(c, 1.0)]) for _ in range(3)]
    s.solve()
    for v in vs:
        assert v.value == pytest.approx(10 / 3)


def test_penalty_weights_share():
    # x1 = l/1, x2 = l/2, x1 + x2 = 9  =>  l = 6, x1 = 6, x2 = 3
    s = System()
    c = s.constraint(9.0)
    v1 = s.variable(1.0, uses=[(c, 1.0)])
    v2 = s.variable(2.0, uses=[(c, 1.0)])
    s.solve()
    assert v1.value == pytest.approx(6.0)
    assert v2.value == pytest.approx(3.0)


def test_bound_frees_capacity_for_others():
    # C = 10, v1 bounded at 2  =>  v1 = 2, v2 = 8
    s = System()
    c = s.constraint(10.0)
    v1 = s.variable(1.0, bound=2.0, uses=[(c, 1.0)])
    v2 = s.variable(1.0, uses=[(c, 1.0)])
    s.solve()
    assert v1.value == pytest.approx(2.0)
    assert v2.value == pytest.approx(8.0)


def test_classic_two_links_three_flows():
    # Links L1 (cap 1) and L2 (cap 2). Flow a uses L1+L2, b uses L1, c uses L2.
    # L1 saturates first at level 1/2: a = b = 0.5. Then c takes L2's rest: 2 - 0.5 = 1.5.
    s = System()
    l1, l2 = s.constraint(1.0), s.constraint(2.0)
    a = s.variable(1.0, uses=[(l1, 1.0), (l2, 1.0)])
    b = s.variable(1.0, uses=[(l1, 1.0)])
    c = s.variable(1.0, uses=[(l2, 1.0)])
    s.solve()
    assert (a.value, b.value, c.value) == pytest.approx((0.5, 0.5, 1.5))


def test_incremental_removal_returns_changed():
    s = System()
    c = s.constraint(4.0)
    v1 = s.variable(1.0, uses=[(c, 1.0)])
    v2 = s.variable(1.0, uses=[(c, 1.0)])
    assert set(s.solve()) == {v1, v2}
    assert v1.value == pytest.approx(2.0)
    s.remove(v2)
    changed = s.solve()
    assert changed == [v1]
    assert v1.value == pytest.approx(4.0)


def test_independent_components_untouched():
    s = System()
    c1, c2 = s.constraint(1.0), s.constraint(1.0)
    v1 = s.variable(1.0, uses=[(c1, 1.0)])
    v2 = s.variable(1.0, uses=[(c2, 1.0)])
    s.solve()
    v3 = s.variable(1.0, uses=[(c1, 1.0)])
    changed = s.solve()
    assert v2 not in changed and set(changed) == {v1, v3}
    assert v2.value == pytest.approx(1.0)


def test_unconstrained_bounded_variable_and_zero_penalty():
    s = System()
    v = s.variable(1.0, bound=5.0)
    c = s.constraint(3.0)
    z = s.variable(0.0, uses=[(c, 1.0)])
    w = s.variable(1.0, uses=[(c, 1.0)])
    s.solve()
    assert v.value == 5.0
    assert z.value == 0.0 and w.value == pytest.approx(3.0)


def test_coefficients():
    # 2*x1 + x2 <= 6 with equal levels: 3 l = 6 -> l = 2
    s = System()
    c = s.constraint(6.0)
    v1 = s.variable(1.0, uses=[(c, 2.0)])
    v2 = s.variable(1.0, uses=[(c, 1.0)])
    s.solve()
    assert v1.value == pytest.approx(2.0) and v2.value == pytest.approx(2.0)
    assert 2 * v1.value + v2.value <= 6.0 + 1e-9


def test_many_flows_feasible_and_fair():
    s = System()
    bb = s.constraint(100.0)
    links = [s.constraint(10.0) for _ in range(50)]
    vs = [s.variable(1.0, uses=[(links[i], 1.0), (bb, 1.0)]) for i in range(50)]
    s.solve()
    assert all(v.value == pytest.approx(2.0) for v in vs)
    assert math.fsum(v.value for v in vs) == pytest.approx(100.0)


def test_merged_uses_give_the_same_shares_as_repeated_ones():
    """``merge_uses`` + ``unique=True`` (the network model's fast path) solves the same system
    as naming a constraint twice and letting ``variable`` merge the coefficients."""
    from smpy.lmm.maxmin import merge_uses

    results = []
    for fast in (False, True):
        s = System()
        a, b = s.constraint(10.0), s.constraint(6.0)
        raw = [(a, 1.0), (b, 0.5), (a, 1.0), (b, 0.0)]
        uses = merge_uses(raw) if fast else raw
        x = s.variable(1.0, math.inf, uses, unique=fast)
        y = s.variable(2.0, math.inf, [(b, 1.0)])
        s.solve()
        results.append((x.value, y.value, [(c is a, k) for c, k in x.elements]))
    assert merge_uses([(1, 1.0), (2, 0.0), (1, 0.5)]) == ((1, 1.5),)
    assert results[0] == results[1]
    # a alone would allow 5 (coefficient 2); b is shared with y (penalty 2)
    assert results[1][0] == pytest.approx(5.0)
    assert results[1][2] == [(True, 2.0), (False, 0.5)]


def test_lone_values_reused_until_a_capacity_changes() -> None:
    """A variable alone in its component gets the value computed for the previous one with the
    same uses tuple, penalty and bound (the network model's flows of a route), and a new one
    after set_capacity."""
    s = System()
    c1, c2 = s.constraint(100.0), s.constraint(40.0)
    uses = ((c1, 1.0), (c2, 0.05))
    v = s.variable(2.0, 1e9, uses, None, True)
    s.solve()
    first = v.value
    assert first == 100.0 / (1.0 / 2.0) / 2.0  # c1 limits: level 200, x = level / w
    s.remove(v)
    w = s.variable(2.0, 1e9, uses, None, True)
    s.solve()
    assert w.value == first and len(s._lone) == 1
    s.remove(w)
    s.set_capacity(c1, 10.0)
    x = s.variable(2.0, 1e9, uses, None, True)
    s.solve()
    assert x.value == 10.0 / (1.0 / 2.0) / 2.0
    s.remove(x)
    y = s.variable(2.0, 3.0, uses, None, True)  # another bound: not the cached value
    s.solve()
    assert y.value == 3.0
